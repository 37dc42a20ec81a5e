//! The PyTorch peer's setting: what the service found (the interpreter and where it came from,
//! PyTorch's version, whether it sees CUDA, the note on how to enable it) and a field to choose
//! the interpreter (`PeerSetPythonRequest`), or go back to the default.

use leptos::prelude::*;
use showdown_core::protocol::PeerSetPythonRequest;

use super::section::{call, input, Lab};
use crate::loading::{act, failure};

/// The peer's status in one line.
fn status(lab: Lab) -> String {
    lab.peer.with(|p| match p {
        None => "asking the compute service…".into(),
        Some(Err(e)) => format!("PyTorch status unknown: {e}"),
        Some(Ok(p)) => format!(
            "Python {} (from {}) · PyTorch {} · CUDA {} · with PyTorch: {}. {}",
            p.python,
            p.source,
            p.torch.as_deref().unwrap_or("not found"),
            match (p.cuda, &p.device) {
                (true, Some(d)) => format!("yes, {d}"),
                (true, None) => "yes".into(),
                (false, _) => "no".into(),
            },
            if p.ready { "available" } else { "off" },
            p.note
        ),
    })
}

/// The panel (`#peer-panel`: `.peer-status`, `#peer-python`, `#peer-set`, `#peer-reset`).
pub fn panel(lab: Lab) -> impl IntoView {
    // Why the field cannot be used (checked here, before asking the service).
    let error = RwSignal::new(String::new());
    // Sets the interpreter (`None`: back to the default), then reads the peer's status again.
    let set_python = act(move |python: &Option<String>| {
        let python = python.clone();
        async move {
            let s = call(PeerSetPythonRequest { python }).await?;
            lab.peer.refetch();
            Ok(s)
        }
    });
    // `true`: the interpreter in the field; `false`: back to the default.
    let set = move |use_field: bool| {
        let python = use_field
            .then(|| input("peer-python").map(|i| i.value().trim().to_string()))
            .flatten()
            .filter(|p| !p.is_empty());
        if use_field && python.is_none() {
            error.set("Give the interpreter's path or name first.".into());
            return;
        }
        error.set(String::new());
        set_python.dispatch(python);
    };
    let error_text = move || match failure(set_python) {
        Some(e) => format!("cannot set the interpreter: {}", e.message),
        None => error.get(),
    };
    view! {
        <section id="peer-panel" class="card">
            <h4>"PyTorch beside our kernels"</h4>
            <p class="peer-status">{move || status(lab)}</p>
            <p>
                <label for="peer-python">"Python interpreter "
                    <input type="text" id="peer-python" placeholder="/path/to/python3"/>
                </label>
                " "
                <button type="button" id="peer-set" on:click=move |_| set(true)>"Use it"</button>
                <button type="button" id="peer-reset" on:click=move |_| set(false)>"Reset"</button>
            </p>
            <p class="error">{error_text}</p>
        </section>
    }
}
