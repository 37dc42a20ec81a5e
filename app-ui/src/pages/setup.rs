//! Act I – The Setup, inside the network: choose a trained model (the newest duel's by default,
//! the initial weights when none was kept) and the precisions to set side by side, choose a
//! digit from the data-set grid (a canvas of real images, 64 a page, read by the compute
//! service) or draw one, and follow it through the lab CNN layer by layer
//! ([`inside::InsideNetwork`]). Lower on the page, the lab CNN's layers computed in the browser
//! by compute's pure core: click a layer for its shapes, parameters, FLOPs and activation
//! memory.

use std::sync::Arc;

use leptos::html::Canvas;
use leptos::prelude::*;
use showdown_core::explain::matching;
use showdown_core::model::{lab_summary, LayerInfo};
use showdown_core::protocol::{ApiError, DigitSource, Event, ExplainRequest};
use showdown_core::runs::RunSummary;
use showdown_core::types::{
    BackendChoice, DataSplit, DatasetSamples, DatasetSummary, DuelEvent, Precision,
};
use showdown_core::ErrorKind;

use crate::bridge;
use crate::loading::{cancel_job, failure, load};
use crate::pages::inside::{self, draw::DrawPad, Chosen, Explained, InsideNetwork};

/// Images on a page of the grid.
const PAGE: usize = 64;
/// Images per row of the grid.
const GRID_COLUMNS: usize = 16;
/// Each image pixel is drawn as a `ZOOM × ZOOM` square.
const ZOOM: usize = 2;
/// Space between images, canvas pixels.
const GAP: usize = 8;
/// Height of the caption under each image, canvas pixels.
const CAPTION: usize = 14;
/// The model picker's value for the newest duel that kept its models.
const NEWEST: &str = "";
/// The model picker's value (and the request's `run`) for the untrained initial weights.
const INITIAL: &str = showdown_core::protocol::INITIAL_WEIGHTS;

mod digits;

use digits::{digit_key, DigitGrid};

/// The saved duel `choice` names for an image of `image` (`None`: a drawing): the newest one
/// trained on the image's data set for [`NEWEST`], `None` for the initial weights (or when no
/// saved duel fits the image).
fn run_of<'a>(choice: &str, image: Option<&str>, runs: &'a [RunSummary]) -> Option<&'a RunSummary> {
    match choice {
        NEWEST => matching::newest_model_for(runs, image),
        INITIAL => None,
        id => runs.iter().find(|r| r.id == id),
    }
}

/// The precisions the model choice offers: the run's kept models, or all four for the
/// initial weights.
fn offered(choice: &str, image: Option<&str>, runs: &[RunSummary]) -> Vec<Precision> {
    match run_of(choice, image, runs) {
        Some(r) => Precision::ALL
            .into_iter()
            .filter(|p| r.models.contains(p))
            .collect(),
        None => Precision::ALL.to_vec(),
    }
}

/// The precisions to ask for: those checked that the choice offers; its defaults where none
/// is, or where the offer cut a comparison down to one model (checked fp32 + fp16, a run that
/// kept fp32 + fp8: fp32 beside fp8, not fp32 alone). One precision checked by hand stays one.
fn precisions_for(wanted: &[Precision], offered: &[Precision]) -> Vec<Precision> {
    let kept: Vec<Precision> = wanted
        .iter()
        .copied()
        .filter(|p| offered.contains(p))
        .collect();
    let cut_to_one = kept.len() < wanted.len() && kept.len() < 2 && offered.len() >= 2;
    if kept.is_empty() || cut_to_one {
        default_precisions(offered)
    } else {
        kept
    }
}

/// FP32 and FP16 when both are offered, else everything offered.
fn default_precisions(offered: &[Precision]) -> Vec<Precision> {
    if offered.contains(&Precision::Fp32) && offered.contains(&Precision::Fp16) {
        vec![Precision::Fp32, Precision::Fp16]
    } else {
        offered.to_vec()
    }
}

/// The data set of the chosen image (`None`: a drawing, or nothing chosen).
fn image_of(chosen: &Chosen) -> Option<String> {
    match chosen {
        Some((_, DigitSource::Dataset { dataset, .. })) => Some(dataset.clone()),
        _ => None,
    }
}

/// A saved duel in the model picker: its id, data set and kept models with their accuracies.
fn describe(r: &RunSummary) -> String {
    let models: Vec<String> = r
        .models
        .iter()
        .map(|p| match r.results.iter().find(|x| x.precision == *p) {
            Some(x) => format!("{p} {:.1} %", x.test_accuracy * 100.0),
            None => p.to_string(),
        })
        .collect();
    format!(
        "{} · trained on {} · {} epoch{} · {}",
        r.id,
        r.dataset,
        r.epochs,
        if r.epochs == 1 { "" } else { "s" },
        models.join(", ")
    )
}

/// The 28×28 digit the models saw (`digit_base64`), white ink on black like the pad.
fn paint_digit(canvas: &web_sys::HtmlCanvasElement, base64: &str) -> Result<(), String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(base64.trim())
        .map_err(|e| format!("the digit the service returned is unreadable: {e}"))?;
    let side = 28usize;
    if bytes.len() != side * side {
        return Err(format!(
            "the digit the service returned holds {} pixels, not 28 × 28",
            bytes.len()
        ));
    }
    canvas.set_width(side as u32);
    canvas.set_height(side as u32);
    let rgba: Vec<u8> = bytes.iter().flat_map(|&v| [v, v, v, 255]).collect();
    inside::maps::put_rgba(&inside::maps::context(canvas)?, &rgba, side, side)
}

fn shape(s: &[usize]) -> String {
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(" × ")
}

fn kib(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

fn details(l: LayerInfo) -> impl IntoView {
    view! {
        <div id="layer-details" class="card">
            <h3>{l.name.clone()} " — " {l.kind.clone()}</h3>
            <dl>
                <dt>"input (per image)"</dt><dd>{shape(&l.input)}</dd>
                <dt>"output (per image)"</dt><dd>{shape(&l.output)}</dd>
                <dt>"trainable parameters"</dt><dd>{l.params.to_string()}</dd>
                <dt>"forward FLOPs (per image)"</dt><dd>{format!("{} ({:.3} MFLOP)", l.flops_fwd, l.flops_fwd as f64 / 1e6)}</dd>
                <dt>"output activations (per image)"</dt>
                <dd>{format!("{} in FP32, {} in FP16/BF16", kib(l.activation_bytes_fp32), kib(l.activation_bytes_fp32 / 2))}</dd>
                <dt>"documentation"</dt>
                <dd><a class="doc-link" href=format!("#/docs/{}", l.doc.trim_end_matches(".md"))>{format!("docs-content/{}", l.doc)}</a></dd>
            </dl>
        </div>
    }
}

/// The lab CNN layer by layer: a clickable diagram, the chosen layer's details, the table.
#[component]
fn LayerTable() -> impl IntoView {
    let summary = lab_summary();
    let layers = StoredValue::new(summary.layers.clone());
    let selected = RwSignal::new(0usize);
    let diagram = summary
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let name = l.name.clone();
            let out = shape(&l.output);
            view! {
                <button class="layer" class:selected=move || selected.get() == i
                    on:click=move |_| selected.set(i)>
                    <span class="lname">{name}</span>
                    <span class="lshape">{out}</span>
                </button>
            }
        })
        .collect_view();
    let rows = summary
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| {
            view! {
                <tr class:selected=move || selected.get() == i on:click=move |_| selected.set(i)>
                    <td>{l.name.clone()}</td>
                    <td>{l.kind.clone()}</td>
                    <td>{shape(&l.output)}</td>
                    <td class="num">{l.params}</td>
                    <td class="num">{format!("{:.3}", l.flops_fwd as f64 / 1e6)}</td>
                    <td class="num">{format!("{:.1}", l.activation_bytes_fp32 as f64 / 1024.0)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section id="lab-cnn">
            <h3>"The lab CNN, layer by layer"</h3>
            <p>"Computed in your browser from the same specification the trainer uses. Click a layer."</p>
            <div id="diagram">{diagram}</div>
            {move || layers.with_value(|ls| ls.get(selected.get()).cloned()).map(details)}
            <table id="model-table">
                <thead>
                    <tr><th>"layer"</th><th>"kind"</th><th>"output"</th><th>"params"</th><th>"MFLOP fwd"</th><th>"activations FP32 (KiB)"</th></tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            <p id="model-total">
                {format!(
                    "{} parameters · {:.2} MFLOP forward, {:.2} MFLOP training per image",
                    summary.params,
                    summary.flops_fwd as f64 / 1e6,
                    summary.flops_train as f64 / 1e6
                )}
            </p>
        </section>
    }
}

/// This page's own styles (the app's stylesheet belongs to the shell).
const CSS: &str = r#"
#act1-top { display: flex; flex-wrap: wrap; gap: 0.8rem; align-items: stretch; }
#act1-top > .card { margin: 0; flex: 1 1 16rem; }
#act1-top #draw-card { flex: 0 1 auto; }
#inside-controls fieldset { margin: 0.5rem 0; }
#inside-controls select { max-width: 22rem; }
#digits .grid-wrap { position: relative; max-width: 100%; margin: 0.6rem 0; line-height: 0; }
#digits #digit-grid { margin: 0; cursor: pointer; max-width: 100%; height: auto; }
#digits .grid-pick { position: absolute; pointer-events: none; box-sizing: border-box; border: 3px solid #cf222e; border-radius: 3px; }
#digits .grid-cursor { position: absolute; pointer-events: none; box-sizing: border-box; border: 3px dashed var(--focus); border-radius: 3px; }
#digits #digit-grid:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.visually-hidden { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
#inside-digit { width: 112px; height: 112px; image-rendering: pixelated; background: #000; margin: 0.3rem 0; }
#inside-train-offer { border-left: 4px solid var(--warn); }
#inside-train-offer .ok-note { color: var(--ok); }
#inside-trained-on { margin: 0.4rem 0 0; }
#inside-trained-on .unlike, #inside-trained-on.mismatch { color: var(--warn); }
"#;

/// `n` with a comma between thousands (`10,000`).
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// What a model trained for an image of `image` is trained on, in words (`None`: a drawing).
fn image_words(image: Option<&str>) -> String {
    match image {
        Some(d) => d.to_string(),
        None => "handwritten digits".to_string(),
    }
}

/// Act I's offer to train a model when no saved duel kept one trained on the image's data set
/// (`#inside-train-offer`): a short duel ([`matching::short_duel`]) started from here, its
/// progress, Cancel, and where it was saved. When it is saved, `reload` asks the page to read
/// the run history again, and the page runs the image through the new model.
#[component]
fn TrainOffer(shown: RwSignal<Option<Arc<Explained>>>, reload: RwSignal<u64>) -> impl IntoView {
    let training = RwSignal::new(None::<String>);
    let progress = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let done = RwSignal::new(None::<String>);
    let offer = move || {
        shown.with(|s| {
            s.as_ref()
                .and_then(|s| s.report.no_model_for.clone())
                .map(|d| (d, s.as_ref().map(|s| s.key.clone()).unwrap_or_default()))
        })
    };
    let train = move |dataset: String| {
        if training.get_untracked().is_some() {
            return;
        }
        let config = matching::short_duel(&dataset);
        training.set(Some(dataset.clone()));
        error.set(None);
        done.set(None);
        progress.set("starting…".into());
        let on_event = {
            let dataset = dataset.clone();
            move |ev: Event| {
                let Event::Duel { event } = ev else { return };
                match event {
                    DuelEvent::Step {
                        precision,
                        step,
                        steps,
                        loss,
                        ..
                    } => progress.set(format!(
                        "training the {precision} model on {dataset}: step {step} of {steps}, \
                         loss {loss:.3}"
                    )),
                    DuelEvent::RunFinished { report } => progress.set(format!(
                        "the {} model is trained: {:.1} % test accuracy",
                        report.precision,
                        report.test_accuracy * 100.0
                    )),
                    _ => {}
                }
            }
        };
        // A streaming job: the short duel's events move the progress line while it runs.
        leptos::task::spawn_local(async move {
            match bridge::duel(&config, on_event).await {
                Ok(outcome) => {
                    let accuracies: Vec<String> = outcome
                        .report
                        .runs
                        .iter()
                        .map(|r| format!("{} {:.1} %", r.precision, r.test_accuracy * 100.0))
                        .collect();
                    let scored = format!(
                        "{} on {} {} test images",
                        accuracies.join(", "),
                        outcome.report.dataset.test,
                        outcome.report.dataset.name
                    );
                    match (outcome.saved_run, outcome.save_note) {
                        (Some(id), _) => {
                            done.set(Some(format!(
                                "Trained on {dataset} and saved to the run history as {id} \
                                 ({scored}): the image now goes through it."
                            )));
                            reload.update(|n| *n = n.wrapping_add(1));
                        }
                        (None, note) => error.set(Some(format!(
                            "The duel ran ({scored}) but was not saved, so Act I cannot open its \
                             models: {}",
                            note.unwrap_or_else(|| "no reason was given".into())
                        ))),
                    }
                }
                Err(e) => error.set(Some(if e.code == ErrorKind::Cancelled {
                    "Training cancelled: no model was saved.".to_string()
                } else {
                    format!("the short duel failed: {}", e.message)
                })),
            }
            progress.set(String::new());
            training.set(None);
        });
    };
    let cancel_action = cancel_job();
    // A failed cancel says so where the training's errors go.
    Effect::new(move |_| {
        if let Some(e) = failure(cancel_action) {
            error.set(Some(format!("cancel failed: {}", e.message)));
        }
    });
    let cancel = move |_| {
        cancel_action.dispatch(());
    };
    let body = move || {
        if let Some(d) = training.get() {
            return view! {
                <p><b>{format!("Training a model on {d}…")}</b></p>
                <p id="inside-train-progress" class="muted" aria-live="polite">{move || progress.get()}</p>
                <button type="button" id="inside-train-cancel" on:click=cancel>"Cancel"</button>
            }
            .into_any();
        }
        let Some((d, _)) = offer() else {
            return ().into_any();
        };
        let c = matching::short_duel(&d);
        let what = format!(
            "{}, {} epoch on the first {} training images of {d} (a minute or less on a CPU, \
             seconds on a GPU); it is saved to the run history like any duel.",
            c.precisions
                .iter()
                .map(|p| p.as_str().to_uppercase())
                .collect::<Vec<_>>()
                .join(" and "),
            c.epochs,
            thousands(c.train_limit.unwrap_or_default())
        );
        let label = format!("Train one: a short duel on {d}");
        view! {
            <p id="inside-no-model">
                <b>{format!("No saved model was trained on {d}.")}</b>
                {format!(
                    " A model only knows the images it was trained on: one trained on other \
                     images would only guess. Below, the untrained initial weights show the \
                     network's shape; train a model on {d} to see what it learns."
                )}
            </p>
            <button type="button" class="primary" id="inside-train" data-dataset=d.clone()
                on:click=move |_| train(d.clone())>{label}</button>
            <span class="muted">{what}</span>
        }
        .into_any()
    };
    let shown_at_all = move || {
        training.with(Option::is_some)
            || offer().is_some()
            || done.with(Option::is_some)
            || error.with(Option::is_some)
    };
    view! {
        <section id="inside-train-offer" class="card" style:display=move || if shown_at_all() { "block" } else { "none" }>
            {body}
            {move || done.get().map(|t| view! { <p id="inside-train-done" class="ok-note">{t}</p> })}
            {move || error.get().map(|e| view! { <p class="error" id="inside-train-error">{e}</p> })}
        </section>
    }
}

/// The Act I page.
#[component]
pub fn SetupPage() -> impl IntoView {
    let chosen: RwSignal<Chosen> = RwSignal::new(Some((
        digit_key("mnist-sample", DataSplit::Test, 0),
        DigitSource::Dataset {
            dataset: "mnist-sample".into(),
            split: DataSplit::Test,
            index: 0,
        },
    )));
    // The chosen image's data set (`None`: a drawing): the models offered are trained on it.
    let image = Memo::new(move |_| chosen.with(image_of));
    let runs: RwSignal<Vec<RunSummary>> = RwSignal::new(Vec::new());
    let runs_ready = RwSignal::new(false);
    let reload = RwSignal::new(0u64);
    let choice = RwSignal::new(NEWEST.to_string());
    let precisions = RwSignal::new(vec![Precision::Fp32, Precision::Fp16]);
    let shown: RwSignal<Option<Arc<Explained>>> = RwSignal::new(None);
    let busy = RwSignal::new(false);

    // The saved duels whose models were kept (again after a duel trained from here).
    let saved_runs = load(move || {
        reload.track();
        bridge::runs()
    });
    Effect::new(move |_| {
        match saved_runs.get() {
            Some(Ok(list)) => runs.set(
                list.runs
                    .into_iter()
                    .filter(|r| !r.models.is_empty())
                    .collect(),
            ),
            Some(Err(_)) => {}
            None => return,
        }
        runs_ready.set(true);
    });
    let runs_error = move || {
        saved_runs.with(|r| {
            r.as_ref().and_then(|r| r.as_ref().err()).map(|e| {
                format!(
                    "cannot list the saved duels: {} (the service picks the newest one trained \
                     on the image's data set)",
                    e.message
                )
            })
        })
    };

    // The forward pass of the chosen models on the chosen digit; only the latest answer shows.
    let explained = LocalResource::new(move || {
        let asked = if runs_ready.get() { chosen.get() } else { None };
        let current = choice.get();
        let run = match current.as_str() {
            NEWEST => None,
            c => Some(c.to_string()),
        };
        // Only precisions the chosen model kept (the newest for one data set may keep fewer
        // than the one for another).
        let on_offer = runs.with(|rs| image.with(|i| offered(&current, i.as_deref(), rs)));
        let precisions = precisions_for(&precisions.get(), &on_offer);
        if asked.is_some() {
            busy.set(true);
        }
        async move {
            let (key, digit) = asked?;
            let answer = bridge::call(ExplainRequest {
                run,
                precisions,
                digit,
                backend: BackendChoice::Auto,
            })
            .await;
            busy.set(false);
            Some(
                answer
                    .map(|report| Arc::new(Explained { key, report }))
                    .map_err(|e| format!("the forward pass failed: {}", e.message)),
            )
        }
    });
    Effect::new(move |_| {
        if let Some(Some(Ok(e))) = explained.get() {
            shown.set(Some(e));
        }
    });
    let explain_error = move || {
        explained.with(|x| {
            x.as_ref()
                .and_then(Option::as_ref)
                .and_then(|r| r.as_ref().err().cloned())
        })
    };

    let run_options = move || {
        let current = choice.get();
        let img = image.get();
        let words = image_words(img.as_deref());
        let newest = runs.with(|rs| match matching::newest_model_for(rs, img.as_deref()) {
            Some(r) => format!("newest model trained on {words} ({})", describe(r)),
            None => format!("newest model trained on {words} (none yet: the initial weights)"),
        });
        let saved = runs
            .get()
            .into_iter()
            .map(|r| {
                let selected = r.id == current;
                let mut text = describe(&r);
                if matching::fit(&r.dataset, img.as_deref()) == matching::Fit::Other {
                    text.push_str(&format!(" — never saw {words}"));
                }
                view! { <option value=r.id selected=selected>{text}</option> }
            })
            .collect_view();
        view! {
            <option value=NEWEST selected=current == NEWEST>{newest}</option>
            {saved}
            <option value=INITIAL selected=current == INITIAL>"initial weights (untrained, seed 0)"</option>
        }
    };
    let order = |p: &Precision| Precision::ALL.iter().position(|q| q == p).unwrap_or(9);
    let precision_boxes = move || {
        let list = runs.with(|rs| image.with(|i| offered(&choice.get(), i.as_deref(), rs)));
        list.clone()
            .into_iter()
            .map(|p| {
                let id = format!("inside-prec-{p}");
                let label_for = id.clone();
                // The boxes show what is asked for (`precisions_for`), and a click starts there.
                let offer = list.clone();
                let offer2 = list.clone();
                view! {
                    <label class="check" for=label_for>
                        <input type="checkbox" id=id
                            prop:checked=move || precisions.with(|ps| precisions_for(ps, &offer).contains(&p))
                            on:change=move |ev| {
                                let on = event_target_checked(&ev);
                                let mut ps = precisions.with_untracked(|ps| precisions_for(ps, &offer2));
                                if on && !ps.contains(&p) {
                                    ps.push(p);
                                    ps.sort_by_key(order);
                                } else if !on && ps.len() > 1 {
                                    ps.retain(|q| *q != p);
                                }
                                precisions.set(ps);
                            }/>
                        {format!(" {p}")}
                    </label>
                }
            })
            .collect_view()
    };
    let seen = NodeRef::<Canvas>::new();
    let seen_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let Some(c) = seen.get() else { return };
        shown.with(|s| {
            if let Some(s) = s {
                seen_error.set(paint_digit(&c, &s.report.digit_base64).err());
            }
        });
    });
    let seen_text = move || {
        shown.with(|s| {
            s.as_ref().map(|s| match s.report.label {
                Some(l) => format!("{} · label {}", s.key, s.class_name(l as usize)),
                None => "your drawing, centred as MNIST's digits are: its ink scaled into 20 × 20 \
                         and centred by mass in 28 × 28"
                    .to_string(),
            })
        })
    };
    let source = move || shown.with(|s| s.as_ref().map(|s| s.report.model_source.clone()));
    let trained_on = move || {
        shown.with(|s| {
            s.as_ref().map(|s| {
                let r = &s.report;
                let text = match &r.trained_on {
                    Some(d) => format!("Trained on: {d}"),
                    None => "Trained on: nothing (the untrained initial weights)".to_string(),
                };
                view! {
                    <p id="inside-trained-on" class:mismatch=s.mismatched()
                        data-dataset=r.trained_on.clone().unwrap_or_default()>
                        <b>{text}</b>
                        {s.mismatched().then(|| view! { <span class="unlike">{format!(" — {}", r.fit_note)}</span> })}
                    </p>
                }
            })
        })
    };

    view! {
        <style>{CSS}</style>
        <h2>"Act I · The Setup: inside the network"</h2>
        <p>
            "Choose an image from a data set or draw a digit, and follow it through the lab CNN: \
             every layer's output as heat maps, the FP32-trained and the FP16-trained models side \
             by side, trained on the image's own data set. Click a map to enlarge it beside its \
             inputs and filters; hover one of its pixels for the convolution there, with the real \
             numbers."
        </p>
        <div id="act1-top">
            <section id="inside-controls" class="card">
                <h3>"The models"</h3>
                <label for="model-run">"model "
                    <select id="model-run" on:change=move |ev| {
                        let v = event_target_value(&ev);
                        let list = runs.with(|rs| image.with_untracked(|i| offered(&v, i.as_deref(), rs)));
                        precisions.set(default_precisions(&list));
                        choice.set(v);
                    }>{run_options}</select>
                </label>
                <fieldset id="inside-precisions">
                    <legend>"precisions, side by side"</legend>
                    {precision_boxes}
                </fieldset>
                {trained_on}
                <p id="inside-model-source" class="muted">{source}</p>
                {move || runs_error().map(|e| view! { <p class="error" id="inside-runs-error">{e}</p> })}
                {move || busy.get().then(|| view! { <p id="inside-busy" class="muted">"Computing the forward pass…"</p> })}
                {move || explain_error().map(|e| view! { <p class="error" id="inside-error">{e}</p> })}
            </section>
            <section id="draw-card" class="card">
                <h3>"Or draw a digit"</h3>
                <DrawPad chosen=chosen/>
            </section>
            <section id="seen-card" class="card">
                <h3>"What the models see"</h3>
                <canvas id="inside-digit" node_ref=seen width="28" height="28"></canvas>
                <p class="muted" id="inside-digit-text">{seen_text}</p>
                {move || seen_error.get().map(|e| view! { <p class="error">{e}</p> })}
            </section>
        </div>
        <DigitGrid chosen=chosen/>
        <TrainOffer shown=shown reload=reload/>
        <InsideNetwork shown=shown/>
        <LayerTable/>
    }
}
