//! Act II's form (`#duel-form`): the contestants, the settings, the "with PyTorch" option,
//! Run and Cancel.

use super::*;
use showdown_core::fp8::Fp8Scaling;

/// A PyTorch run's progress in words: `PyTorch AMP fp16 + GradScaler, eager: epoch 2/5,
/// 190 ms` (and its accuracy), or that it started.
pub(super) fn peer_progress(run: &PeerDuelRun, epochs: usize) -> String {
    match run.epochs.last() {
        None => format!("{}: started ({epochs} epoch(s))", run.label),
        Some(e) => format!(
            "{}: epoch {}/{epochs}, {:.0} ms, test accuracy {:.2} %",
            run.label,
            e.epoch,
            e.ms,
            e.test_accuracy * 100.0
        ),
    }
}

/// What the "with PyTorch" box says of the peer: `PyTorch 2.11.0 (GPU)`.
pub(super) fn peer_label(s: &PeerStatus) -> Option<String> {
    let torch = s.torch.as_ref()?;
    Some(format!(
        "with PyTorch {torch} ({})",
        if s.cuda { "GPU" } else { "CPU" }
    ))
}

/// The "with PyTorch" box's title: what it runs, and with which interpreter.
pub(super) fn peer_title(s: &PeerStatus) -> String {
    let device = match (s.cuda, &s.device) {
        (true, Some(d)) => format!("on {d} when our duel runs on the GPU, else on the CPU"),
        (true, None) => "on the GPU when our duel runs there, else on the CPU".into(),
        (false, _) => "on the CPU (this PyTorch sees no CUDA GPU)".into(),
    };
    format!(
        "After our contestants, trains the same CNN in PyTorch with the repo's PyTorch duel \
         (bench/duel_peer.py): FP32 (TF32 off), AMP fp16 + GradScaler, AMP bf16, TF32 and FP8 \
         (im2col + torch._scaled_mm, the same per-tensor scaling) — one variant per precision \
         ticked — eager, plus each as a CUDA graph on a GPU; on the same \
         data, batch, epochs, seed policy, learning rate, dropout and activation, {device}. \
         Python: {} (from {}).",
        s.python, s.source
    )
}

/// The "with PyTorch" option (`#with-pytorch`): enabled when the peer interpreter imports
/// torch, else disabled with the status's note (`#with-pytorch-note`) and where to choose
/// another interpreter.
pub(super) fn pytorch_option(
    status: RwSignal<Option<Result<PeerStatus, String>>>,
    with_pytorch: RwSignal<bool>,
) -> impl IntoView {
    move || {
        let status = status.get();
        let (label, title, note) = match &status {
            None => (
                "with PyTorch".to_string(),
                "asking the compute service whether PyTorch is installed".to_string(),
                Some("Asking the compute service whether PyTorch is installed…".to_string()),
            ),
            Some(Ok(s)) => match peer_label(s) {
                Some(label) => (label, peer_title(s), None),
                None => (
                    "with PyTorch (not installed)".to_string(),
                    format!(
                        "Python {} (from {}) does not import torch",
                        s.python, s.source
                    ),
                    Some(s.note.clone()),
                ),
            },
            Some(Err(e)) => (
                "with PyTorch (status unknown)".to_string(),
                e.clone(),
                Some(format!("PyTorch status unknown: {e}.")),
            ),
        };
        let usable = note.is_none();
        let pending = status.is_none();
        let note = note.map(|n| {
            let pointer = (!pending).then(|| {
                view! {
                    " For the duel a CPU build of PyTorch is enough; choose the interpreter in "
                    <a href="#/kernels" id="with-pytorch-setting">"Act III's PyTorch setting"</a>
                    " (“PyTorch beside our kernels”)."
                }
            });
            let end = if n.trim_end().ends_with(['.', '!', '?', '…']) {
                ""
            } else {
                "."
            };
            view! { <span id="with-pytorch-note" class="muted">{n}{end}{pointer}</span> }
        });
        let box_title = title.clone();
        view! {
            <p class="pytorch-option">
                <label class="check" title=title>
                    <input type="checkbox" id="with-pytorch" title=box_title
                        disabled=!usable
                        prop:checked=move || usable && with_pytorch.get()
                        on:change=move |ev| with_pytorch.set(event_target_checked(&ev))/>
                    {label}
                </label>
                " "
                {note}
            </p>
        }
    }
}

/// The duel's form (`#duel-form`): the contestants, the settings, PyTorch, Run and Cancel.
#[component]
pub(super) fn DuelForm(d: Duel, cancel_action: Acting<(), bool>) -> impl IntoView {
    let run = move |_| start_duel(d);
    let cancel = move |_| {
        cancel_action.dispatch(());
    };
    let Duel {
        precisions,
        datasets,
        dataset,
        epochs,
        batch,
        train_limit,
        backend,
        activation,
        fp8_scaling,
        running,
        progress,
        reload_note,
        peer_status,
        with_pytorch,
        ..
    } = d;
    let checkboxes = Precision::ALL
        .into_iter()
        .map(|p| {
            view! {
                <label class="check">
                    <input type="checkbox" id=format!("prec-{p}")
                        prop:checked=move || precisions.get().contains(&p)
                        on:change=move |ev| {
                            let on = event_target_checked(&ev);
                            precisions.update(|v| {
                                v.retain(|q| *q != p);
                                if on {
                                    v.push(p);
                                    v.sort_by_key(|q| Precision::ALL.iter().position(|a| a == q));
                                }
                            });
                        }/>
                    {p.as_str()}
                </label>
            }
        })
        .collect_view();
    let dataset_options = move || {
        let list = datasets.get();
        if list.is_empty() {
            return view! { <option value="mnist-sample">"mnist-sample"</option> }.into_any();
        }
        list.into_iter()
            .map(|d| {
                let label = format!(
                    "{} ({} train / {} test{})",
                    d.name,
                    d.train,
                    d.test,
                    if d.available { "" } else { ", not available" }
                );
                let selected = d.name == dataset.get_untracked();
                view! { <option value=d.name.clone() selected=selected disabled=!d.available>{label}</option> }
            })
            .collect_view()
            .into_any()
    };
    let text_input = |id: &'static str, sig: RwSignal<String>| {
        view! {
            <input type="text" id=id size="6" prop:value=move || sig.get()
                on:input=move |ev| sig.set(event_target_value(&ev))/>
        }
    };
    view! {
        <form id="duel-form" class="card" on:submit=|ev| ev.prevent_default()>
            <fieldset>
                <legend>"contestants"</legend>
                {checkboxes}
                <span class="muted">" (tf32 and bf16 need a GPU that has them; fp8 is emulated in this build: over FP32 on the CPU, on the FP16 tensor cores of a GPU)"</span>
            </fieldset>
            <div class="controls">
                <label for="dataset">"data set "
                    <select id="dataset" on:change=move |ev| dataset.set(event_target_value(&ev))>{dataset_options}</select>
                </label>
                <label for="epochs">"epochs " {text_input("epochs", epochs)}</label>
                <label for="batch">"batch " {text_input("batch", batch)}</label>
                <label for="train-limit" title="empty: the whole training set">"train limit "
                    <input type="text" id="train-limit" size="6" placeholder="all"
                        prop:value=move || train_limit.get()
                        on:input=move |ev| train_limit.set(event_target_value(&ev))/>
                </label>
                <label for="activation">"activation "
                    <select id="activation" title="the CNN variant: ReLU, GELU or Swish after each convolution (CPU and GPU)"
                        on:change=move |ev| activation.set(event_target_value(&ev).parse().unwrap_or_default())>
                        {Activation::ALL.map(|a| view! { <option value=a.name() selected=move || activation.get_untracked() == a>{a.label()}</option> })}
                    </select>
                </label>
                <label for="fp8-scaling" title="how FP8's per-tensor scales are chosen: from each tensor's amax history (Transformer Engine's default) or from its own amax">"fp8 scaling "
                    <select id="fp8-scaling" on:change=move |ev| fp8_scaling.set(event_target_value(&ev).parse().unwrap_or_default())>
                        <option value="delayed" selected=move || fp8_scaling.get_untracked() == Fp8Scaling::Delayed>"delayed (amax history)"</option>
                        <option value="current" selected=move || fp8_scaling.get_untracked() == Fp8Scaling::Current>"current (own amax)"</option>
                    </select>
                </label>
                <label for="backend">"backend "
                    <select id="backend" on:change=move |ev| backend.set(event_target_value(&ev))>
                        {["auto", "cpu", "cuda"].map(|b| view! { <option value=b selected=move || backend.get_untracked() == b>{b}</option> })}
                    </select>
                </label>
            </div>
            {pytorch_option(peer_status, with_pytorch)}
            <p class="muted" id="duel-defaults" style="font-size:0.85em">"Train limit empty: the whole training set. "
                "Epoch 1 is the warm-up — module loading, every step timed and synchronised, gradient histograms — "
                "and is reported apart; the epoch time is the median of epochs 2 on."</p>
            <crate::pages::get_mnist::GetMnist datasets=datasets/>
            <button type="button" id="run-duel" on:click=run disabled=move || running.get()>"Run duel"</button>
            <button type="button" id="cancel-duel" on:click=cancel
                disabled=move || !running.get() && !reload_note.with(|n| matches!(n, Some((AfterReload::StillRunning, _))))>"Cancel"</button>
            <span id="duel-progress" class="muted">{move || progress.get()}</span>
        </form>
    }
}
