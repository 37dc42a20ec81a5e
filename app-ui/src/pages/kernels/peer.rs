//! The PyTorch peer's setting: what the service found (the interpreter and where it came from,
//! PyTorch's version, whether it sees CUDA, the note on how to enable it), a list of the
//! interpreters the service found (`PeerPythonsRequest`) to choose from, and, where the door
//! takes any path (the desktop app; never over HTTP), a field for one of the user's own
//! (`PeerSetPythonRequest`); or back to the default.

use leptos::prelude::*;
use showdown_core::peer_pythons::PeerPythons;
use showdown_core::protocol::{PeerPythonsRequest, PeerSetPythonRequest};

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

/// The interpreters the service found as a picker's options (`python3 (PATH)`), each option's
/// value the interpreter as `peer_set_python` takes it.
fn known_options(p: &PeerPythons) -> impl IntoView {
    p.pythons
        .iter()
        .map(|k| {
            let label = format!("{} ({})", k.python, k.source);
            view! { <option value=k.python.clone()>{label}</option> }
        })
        .collect_view()
}

/// The list of interpreters the service found (`#peer-known`, `#peer-use-known`) and, where the
/// door takes any path, the field for one of the user's own (`#peer-python`, `#peer-set`); over
/// HTTP a sentence saying how to add one instead (`#peer-only-known`).
fn choices(
    pythons: LocalResource<Result<PeerPythons, String>>,
    set: impl Fn(Option<String>) + Copy + Send + Sync + 'static,
    error: RwSignal<String>,
) -> impl IntoView {
    let use_known = move || {
        use wasm_bindgen::JsCast;
        let chosen = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id("peer-known"))
            .and_then(|e| e.dyn_into::<web_sys::HtmlSelectElement>().ok())
            .map(|s| s.value())
            .filter(|p| !p.is_empty());
        match chosen {
            Some(p) => set(Some(p)),
            None => error.set("No interpreter was found to choose.".into()),
        }
    };
    let use_field = move || match input("peer-python")
        .map(|i| i.value().trim().to_string())
        .filter(|p| !p.is_empty())
    {
        Some(p) => set(Some(p)),
        None => error.set("Give the interpreter's path or name first.".into()),
    };
    move || match pythons.get() {
        None => view! { <p class="muted">"looking for interpreters…"</p> }.into_any(),
        Some(Err(e)) => {
            view! { <p class="error">{format!("the interpreters found are unknown: {e}")}</p> }
                .into_any()
        }
        Some(Ok(p)) => {
            let found = p.pythons.len();
            let own = if p.any_path {
                view! {
                    <p>
                        <label for="peer-python">"or another interpreter "
                            <input type="text" id="peer-python" placeholder="/path/to/python3"/>
                        </label>
                        " "
                        <button type="button" id="peer-set" on:click=move |_| use_field()>"Use it"</button>
                    </p>
                }
                .into_any()
            } else {
                view! {
                    <p class="muted" id="peer-only-known">
                        "Through the web server only the interpreters it found can be chosen; \
                         to add another, start it with "<code>"--python PATH"</code>" (or \
                         SHOWDOWN_PYTHON=PATH), or choose it in the desktop app."
                    </p>
                }
                .into_any()
            };
            view! {
                <p>
                    <label for="peer-known">{format!("Python interpreter ({found} found) ")}
                        <select id="peer-known">{known_options(&p)}</select>
                    </label>
                    " "
                    <button type="button" id="peer-use-known" disabled=found == 0
                        on:click=move |_| use_known()>"Use it"</button>
                    " "
                    <button type="button" id="peer-reset" on:click=move |_| set(None)>"Reset"</button>
                </p>
                {own}
            }
            .into_any()
        }
    }
}

/// The panel (`#peer-panel`: `.peer-status`, the interpreters found `#peer-known`, and where
/// the door takes any path `#peer-python`, `#peer-set`; `#peer-reset`).
pub fn panel(lab: Lab) -> impl IntoView {
    let pythons =
        LocalResource::new(|| async { call(PeerPythonsRequest {}).await.map_err(|e| e.message) });
    // Why the field cannot be used (checked here, before asking the service).
    let error = RwSignal::new(String::new());
    // Sets the interpreter (`None`: back to the default), then reads the peer's status again.
    let set_python = act(move |python: &Option<String>| {
        let python = python.clone();
        async move {
            let s = call(PeerSetPythonRequest { python }).await?;
            lab.peer.refetch();
            pythons.refetch();
            Ok(s)
        }
    });
    // `Some`: that interpreter; `None`: back to the default.
    let set = move |python: Option<String>| {
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
            {choices(pythons, set, error)}
            <p class="error">{error_text}</p>
        </section>
    }
}
