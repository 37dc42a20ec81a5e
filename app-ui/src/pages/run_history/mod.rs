//! Act II's run history: the duels the service saved (they survive restarts of the app and of
//! the sidecar), each listed with its whole configuration (data set, backend and device,
//! activation, batch, epochs, threads), reopened with its loss and accuracy curves (other saved
//! runs can be overlaid on them, and the loss chart exported as PNG), its result table and the
//! mixed-precision story; JSON and CSV downloads; removal after a confirmation in the page. And
//! the lab runs (Act III's kernel benchmark, convolution ladder, inference latency and step
//! anatomy) the same way, each reopened with the tables and charts its live section draws.

use leptos::html::{Canvas, Div};
use leptos::prelude::*;
use plotters::style::RGBColor;
use showdown_core::format::percent;
use showdown_core::lab::{LabReport, LabRun, LabRunList};
use showdown_core::origin::{Here, Origin};
use showdown_core::protocol::{
    ApiError, LabRunCsvRequest, LabRunRemoveRequest, LabRunRequest, LabRunsRequest,
};
use showdown_core::runs::{chart_caption, json_file_name, utc_date_time, RunList, RunSummary};
use showdown_core::types::DuelReport;
use showdown_core::ErrorKind;

use super::duel_story::scale::{draw_loss_chart, saved_traces};
use super::duel_story::{Fp8Story, GradHistograms, LossScaleChart, MemoryPanel, Trace};
use crate::bridge;
use crate::charts::{self, precision_color, EpochLines, Series, Stroke, StyledSeries};
use crate::download::download_text;
use crate::loading::{act, failure, load, Loaded};

mod lab_runs;

use lab_runs::*;

/// The prefix of the saved duel's story panels' element ids (`#history-grad-histograms`,
/// `#history-loss-scale-chart`, `#history-memory-split`…), apart from the live duel's.
const STORY_PREFIX: &str = "history-";

/// What of Act II's story a saved duel's report lacks (reports saved before the gradient
/// samples, the loss-scale history, the memory split or the per-step curves were recorded have
/// none of it).
fn missing_story(r: &DuelReport) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if r.runs.iter().all(|x| x.curve.is_empty()) {
        missing.push("per-step loss curves");
    }
    if r.runs.iter().all(|x| x.grad_samples.is_empty()) {
        missing.push("gradient histograms");
    }
    if r.runs.iter().all(|x| x.scale_history.is_empty()) {
        missing.push("loss-scale history");
    }
    if r.runs.iter().all(|x| x.memory.is_none()) {
        missing.push("memory split");
    }
    missing
}

/// `This duel was saved before its a, b and c were recorded.`
fn missing_sentence(missing: &[&str]) -> String {
    let what = match missing {
        [] => return String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    let verb = if missing.len() == 1 { "was" } else { "were" };
    format!("This duel was saved before its {what} {verb} recorded.")
}

/// A saved duel's gradient histograms, loss scale over the steps (from its curve and its
/// `scale_history`) and memory split, as the live duel shows them, under ids prefixed with
/// `history-`; a line in place of what its report does not hold.
fn saved_run_story(r: &DuelReport) -> impl IntoView {
    let missing = missing_story(r);
    let has = |what: &'static str| !missing.contains(&what);
    let runs = Signal::stored(r.runs.clone());
    let (curves, per_step) = saved_traces(&r.runs);
    let traces = Signal::stored(if per_step { curves } else { Vec::new() });
    let report = Signal::stored(Some(r.clone()));
    let note = (!missing.is_empty()).then(|| {
        view! { <p id="history-story-missing" class="muted">{missing_sentence(&missing)}</p> }
    });
    let histograms = has("gradient histograms")
        .then(|| view! { <GradHistograms prefix=STORY_PREFIX runs=runs/> <Fp8Story prefix=STORY_PREFIX runs=runs/> });
    let scale = has("loss-scale history").then(|| {
        view! {
            <h4>"Loss scale over the steps"</h4>
            <LossScaleChart prefix=STORY_PREFIX traces=traces runs=runs/>
        }
    });
    let memory =
        has("memory split").then(|| view! { <MemoryPanel prefix=STORY_PREFIX report=report/> });
    view! {
        <div id="history-story">
            {note}
            {histograms}
            {scale}
            {memory}
        </div>
    }
}

/// A saved run overlaid on the one shown: its ID, its label and its report.
#[derive(Clone, Debug, PartialEq)]
struct Overlay {
    id: String,
    label: String,
    report: DuelReport,
}

/// `c` halfway to white: an overlaid run's accuracy line, beside the shown run's.
fn lighter(c: RGBColor) -> RGBColor {
    let mix = |v: u8| ((v as u16 + 255) / 2) as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// The label of a saved run in a legend: `GELU, batch 128 (2025-03-14 09:30 UTC)`.
fn overlay_label(run: &RunSummary) -> String {
    format!(
        "{}, batch {} ({})",
        run.activation.label(),
        run.batch,
        utc_date_time(run.saved_at)
    )
}

/// The loss curve of each contestant of `shown` (solid) and of each overlaid run (dashed,
/// labelled with the run).
fn curve_traces(shown: &DuelReport, overlays: &[Overlay]) -> Vec<Trace> {
    let (mut traces, _) = saved_traces(&shown.runs);
    for o in overlays {
        let (more, _) = saved_traces(&o.report.runs);
        traces.extend(more.into_iter().map(|mut t| {
            t.label = Some(format!("{} · {}", t.precision, o.label));
            t.dashed = true;
            t
        }));
    }
    traces
}

/// Test accuracy after each epoch, per contestant of `shown` and of each overlaid run.
fn accuracy_series(shown: &DuelReport, overlays: &[Overlay]) -> Vec<Series> {
    let one = |r: &DuelReport, label: Option<&str>| -> Vec<Series> {
        r.runs
            .iter()
            .map(|run| Series {
                name: match label {
                    Some(l) => format!("{} · {l}", run.precision),
                    None => run.precision.to_string(),
                },
                color: match label {
                    Some(_) => lighter(precision_color(run.precision)),
                    None => precision_color(run.precision),
                },
                points: run
                    .epochs
                    .iter()
                    .map(|e| (e.epoch as f64, e.test_accuracy * 100.0))
                    .collect(),
            })
            .collect()
    };
    let mut all = one(shown, None);
    for o in overlays {
        all.extend(one(&o.report, Some(&o.label)));
    }
    all
}

/// The test accuracy after each epoch of the PyTorch runs beside `shown` (when the duel ran
/// PyTorch): `PyTorch fp16 eager`, drawn dashed (a CUDA graph's dotted) in its precision's
/// colour, as the live duel draws them.
fn peer_accuracy_lines(shown: &DuelReport) -> Vec<StyledSeries> {
    shown.peer.as_ref().map_or_else(Vec::new, |peer| {
        super::duel_table::peer_lines(&peer.runs, |e| e.test_accuracy * 100.0)
    })
}

/// A Delete button that asks first, in the page (`{kind}-delete`, then "`question`" with
/// `{kind}-delete-confirm` and `{kind}-delete-keep`): `confirm` holds the ID being asked about,
/// `delete` is called with it once confirmed.
fn delete_button(
    kind: &'static str,
    question: &'static str,
    id: String,
    confirm: RwSignal<Option<String>>,
    delete: impl Fn(String) + Copy + 'static,
) -> AnyView {
    if confirm.with(|c| c.as_deref() == Some(id.as_str())) {
        view! {
            <span class="confirm-delete" role="alert">
                {question}
                <button type="button" class=format!("{kind}-delete-confirm danger")
                    on:click=move |_| delete(id.clone())>"Delete"</button>
                <button type="button" class=format!("{kind}-delete-keep")
                    on:click=move |_| confirm.set(None)>"Keep"</button>
            </span>
        }
        .into_any()
    } else {
        view! {
            <button type="button" class=format!("{kind}-delete")
                on:click=move |_| confirm.set(Some(id.clone()))>"Delete"</button>
        }
        .into_any()
    }
}

/// A saved run's curves as the live duel draws them: the training loss over the steps
/// (`#history-loss-chart`, the overlaid runs dashed) and the test accuracy after each epoch
/// (`#history-accuracy-chart`), with an Export PNG button (`#history-export-png`).
fn saved_run_curves(
    id: String,
    r: DuelReport,
    overlays: Signal<Vec<Overlay>>,
    caption: String,
) -> impl IntoView {
    let loss_canvas = NodeRef::<Canvas>::new();
    let accuracy_canvas = NodeRef::<Canvas>::new();
    let error = RwSignal::new(None::<String>);
    let export_error = RwSignal::new(None::<String>);
    let per_step = r.runs.iter().any(|x| !x.curve.is_empty());
    let shown = StoredValue::new(r);
    Effect::new(move |_| {
        let o = overlays.get();
        let (Some(lc), Some(ac)) = (loss_canvas.get(), accuracy_canvas.get()) else {
            return;
        };
        let drawn =
            shown.with_value(|r| {
                let traces = curve_traces(r, &o);
                draw_loss_chart(lc, &traces, &r.runs)?;
                let series = accuracy_series(r, &o);
                let epochs = std::iter::once(r)
                    .chain(o.iter().map(|x| &x.report))
                    .map(|r| r.config.epochs)
                    .max()
                    .unwrap_or(1);
                let peers = peer_accuracy_lines(r);
                if peers.is_empty() {
                    let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
                    let _ = ac.set_attribute("data-series", &names.join(";"));
                    ac.set_height(260);
                    return charts::accuracy_chart(ac, &series, epochs);
                }
                let mut lines: Vec<StyledSeries> = series
                    .into_iter()
                    .map(|series| StyledSeries {
                        series,
                        stroke: Stroke::Solid,
                    })
                    .collect();
                lines.extend(peers);
                ac.set_height((170 + 20 * lines.len()).max(260) as u32);
                charts::epoch_lines(
                ac,
                &EpochLines {
                    title:
                        "Test accuracy after each epoch (PyTorch: eager dashed, CUDA graph dotted)",
                    y_desc: "accuracy (%)",
                    lines: &lines,
                    epochs,
                    y_range: Some(showdown_core::chart_data::accuracy_axis(
                        lines.iter().flat_map(|l| l.series.points.iter().map(|p| p.1)),
                    )),
                    legend: plotters::chart::SeriesLabelPosition::LowerRight,
                },
            )
            });
        error.set(drawn.err());
    });
    let note = if per_step {
        "Training loss at the same steps for every contestant (the mean over the steps since the \
         previous point), as the live duel drew it."
    } else {
        "This run was saved before per-step curves were kept: the loss is each epoch's mean."
    };
    let overlaid = move || {
        overlays.with(|o| {
            (!o.is_empty()).then(|| {
                let names = o.iter().map(|x| x.label.clone()).collect::<Vec<_>>().join("; ");
                view! { <p id="history-overlays" class="muted">{format!("Overlaid (dashed): {names}.")}</p> }
            })
        })
    };
    let file = format!("precision-showdown-run-{id}-loss.png");
    let shown_caption = caption.clone();
    view! {
        <div id="history-curves">
            <p id="history-curves-note" class="muted">{note}</p>
            {overlaid}
            <canvas id="history-loss-chart" node_ref=loss_canvas width="760" height="320"></canvas>
            <canvas id="history-accuracy-chart" node_ref=accuracy_canvas width="760" height="260"></canvas>
            {move || error.get().map(|e| view! { <p class="error">{e}</p> })}
            <p>
                <button type="button" id="history-export-png"
                    on:click=move |_| export_error.set(
                        crate::download::download_canvas_png_captioned("history-loss-chart", &file, &caption)
                            .err()
                            .map(|e| format!("PNG export failed: {}", e.message)),
                    )>"Export PNG"</button>
                <span class="muted">" this run's loss chart (with its overlays) as an image, captioned: "</span>
                <span id="history-png-caption" class="muted">{shown_caption}</span>
            </p>
            {move || export_error.get().map(|e| view! { <p class="error">{e}</p> })}
        </div>
    }
}

/// The settings a saved duel (saved as `id` at `saved_at`) ran with, in words: its backend and
/// device, then its whole configuration ([`RunConfig::summary`](showdown_core::runs::RunConfig::summary)).
fn saved_settings(id: &str, saved_at: u64, r: &DuelReport) -> String {
    format!(
        "{} backend on {}; {}",
        r.backend,
        r.device,
        RunSummary::of(id, saved_at, r).config().summary()
    )
}

/// A saved run: its settings, its curves (with any overlaid runs), its result table (the same
/// columns as the duel's own) and under it its gradient histograms, loss scale and memory
/// split.
fn saved_run_table(
    id: String,
    r: DuelReport,
    overlays: Signal<Vec<Overlay>>,
    origin: String,
    saved_at: u64,
) -> impl IntoView {
    let telemetry: Vec<String> = r
        .runs
        .iter()
        .filter_map(|x| {
            x.telemetry
                .as_ref()
                .and_then(|t| t.summary())
                .map(|t| format!("{}: {t}", x.precision))
        })
        .collect();
    view! {
        <div id="history-run" data-run=id.clone()>
            <h4>{format!("Run {id}")}</h4>
            <p id="history-run-origin">{format!("Made on {origin}.")}</p>
            <p id="history-run-settings">{saved_settings(&id, saved_at, &r)}</p>
            {(!telemetry.is_empty()).then(|| {
                let items = telemetry.into_iter().map(|t| view! { <li>{t}</li> }).collect_view();
                view! {
                    <div id="history-run-telemetry">
                        <p class="muted">"GPU telemetry the run saved (NVML, about 5 samples a second):"</p>
                        <ul>{items}</ul>
                    </div>
                }
            })}
            {saved_run_curves(id.clone(), r.clone(), overlays, chart_caption(&id, saved_at, &r))}
            {super::duel_table::duel_table("history-run-table", &r)}
            {saved_run_story(&r)}
        </div>
    }
}

/// `fp32 91.25 %, fp16 90.75 %`.
fn accuracies(run: &RunSummary) -> String {
    run.results
        .iter()
        .map(|r| format!("{} {}", r.precision, percent(r.test_accuracy)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The settings cell of a history row: the run's whole configuration
/// ([`RunConfig::summary`](showdown_core::runs::RunConfig::summary)).
fn settings_cell(run: &RunSummary) -> String {
    run.config().summary()
}

/// One list of the run history (the duels, the lab runs): the notes on the files it skipped,
/// then its table, or the sentence saying it is empty.
struct HistoryListing {
    /// The notes on the files skipped (`p.error.skipped` each).
    skipped: Vec<String>,
    /// When the list is empty: the id and text of the sentence saying so.
    empty: Option<(&'static str, &'static str)>,
    /// The table's id.
    table_id: &'static str,
    /// The table's head.
    head: AnyView,
    /// The table's rows.
    rows: AnyView,
}

impl HistoryListing {
    /// The list on the page.
    fn view(self) -> AnyView {
        let skipped = self
            .skipped
            .into_iter()
            .map(|n| view! { <p class="error skipped">{n}</p> })
            .collect_view();
        match self.empty {
            Some((id, text)) => view! { {skipped} <p id=id class="muted">{text}</p> }.into_any(),
            None => view! {
                {skipped}
                <table id=self.table_id>
                    {self.head}
                    <tbody>{self.rows}</tbody>
                </table>
            }
            .into_any(),
        }
    }
}

/// What a row of the run history asks of the service.
#[derive(Clone)]
enum RunOp {
    /// Show the run's curves, table and story (its ID and when it was saved).
    Show(String, u64),
    /// Draw the run's curves over the run shown.
    Overlay(Box<RunSummary>),
    /// Download the run's report as JSON.
    Json(String),
    /// Download the run's results as CSV.
    Csv(String),
    /// Remove the run for good.
    Delete(String),
}

/// Does `op`; its error says which run and what failed.
async fn run_op(
    op: RunOp,
    selected: RwSignal<Option<(String, DuelReport)>>,
    shown_at: RwSignal<u64>,
    overlays: RwSignal<Vec<Overlay>>,
    refresh: RwSignal<u32>,
) -> Result<(), ApiError> {
    let say = |what: String| {
        move |e: ApiError| ApiError {
            code: e.code,
            message: format!("{what}: {}", e.message),
        }
    };
    match op {
        RunOp::Show(id, saved_at) => {
            let r = bridge::run(&id)
                .await
                .map_err(say(format!("cannot read run {id}")))?;
            overlays.set(Vec::new());
            shown_at.set(saved_at);
            selected.set(Some((id, r)));
        }
        RunOp::Overlay(run) => {
            let r = bridge::run(&run.id)
                .await
                .map_err(say(format!("cannot overlay run {}", run.id)))?;
            let label = overlay_label(&run);
            overlays.update(|o| {
                o.push(Overlay {
                    id: run.id.clone(),
                    label,
                    report: r,
                })
            });
        }
        RunOp::Json(id) => {
            let r = bridge::run(&id).await;
            r.and_then(|r| {
                serde_json::to_string_pretty(&r).map_err(|e| ApiError {
                    code: ErrorKind::Runtime,
                    message: format!("cannot write the report as JSON: {e}"),
                })
            })
            .and_then(|text| download_text(&json_file_name(&id), "application/json", &text))
            .map_err(say("JSON export failed".into()))?;
        }
        RunOp::Csv(id) => {
            bridge::run_csv(&id)
                .await
                .and_then(|x| download_text(&x.file_name, "text/csv;charset=utf-8", &x.csv))
                .map_err(say("CSV export failed".into()))?;
        }
        RunOp::Delete(id) => {
            bridge::run_remove(&id)
                .await
                .map_err(say(format!("cannot delete run {id}")))?;
            if selected.with_untracked(|s| s.as_ref().is_some_and(|(x, _)| *x == id)) {
                selected.set(None);
                overlays.set(Vec::new());
            }
            overlays.update(|o| o.retain(|x| x.id != id));
            refresh.update(|n| *n = n.wrapping_add(1));
        }
    }
    Ok(())
}

/// This machine as the service's doctor describes it, for the one decision of whether a run
/// was made here ([`Origin::is_here`]); unknown until the doctor answers.
fn this_machine() -> Signal<Here> {
    let doctor = load(bridge::doctor);
    Signal::derive(move || {
        doctor
            .get()
            .and_then(|d| d.ok())
            .map(|d| d.here())
            .unwrap_or_default()
    })
}

/// The run history section (`#run-history`). `refresh` is bumped by the page after each
/// finished duel; the list is read again then.
#[component]
pub fn RunHistory(refresh: RwSignal<u32>) -> impl IntoView {
    let list = load(move || {
        refresh.track();
        bridge::runs()
    });
    let selected = RwSignal::new(None::<(String, DuelReport)>);
    let shown_at = RwSignal::new(0u64);
    let overlays = RwSignal::new(Vec::<Overlay>::new());
    // This machine, for the one decision of whether a run was made here.
    let here = this_machine();
    // The run whose Delete was pressed: its row asks to confirm.
    let confirm = RwSignal::new(None::<String>);
    // What a row's buttons do; a failure names the run and what was asked.
    let op = act(move |op: &RunOp| run_op(op.clone(), selected, shown_at, overlays, refresh));

    let show = move |id: String, saved_at: u64| {
        op.dispatch(RunOp::Show(id, saved_at));
    };
    let toggle_overlay = move |run: RunSummary| {
        if overlays.with_untracked(|o| o.iter().any(|x| x.id == run.id)) {
            overlays.update(|o| o.retain(|x| x.id != run.id));
            return;
        }
        op.dispatch(RunOp::Overlay(Box::new(run)));
    };
    let save_json = move |id: String| {
        op.dispatch(RunOp::Json(id));
    };
    let save_csv = move |id: String| {
        op.dispatch(RunOp::Csv(id));
    };
    let delete = move |id: String| {
        confirm.set(None);
        op.dispatch(RunOp::Delete(id));
    };

    let rows = move |l: RunList| {
        let empty = l.runs.is_empty();
        let rows = l
            .runs
            .into_iter()
            .map(|run| {
                let id = run.id.clone();
                let (a, b, c) = (id.clone(), id.clone(), id.clone());
                let (saved_at, origin) = (run.saved_at, run.origin.clone());
                let speedup = run
                    .speedup_fp16_vs_fp32
                    .map(|x| format!("{x:.2}×"))
                    .unwrap_or_else(|| "—".into());
                let precisions = run
                    .precisions
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                let is_selected = {
                    let id = id.clone();
                    move || selected.with(|s| s.as_ref().is_some_and(|(x, _)| *x == id))
                };
                // Overlay: offered on every other run once a run is shown.
                let overlay = {
                    let (id, run) = (id.clone(), run.clone());
                    move || {
                        let shown = selected.with(|s| s.as_ref().map(|(x, _)| x.clone()));
                        let other = shown.is_some_and(|x| x != id);
                        let on = overlays.with(|o| o.iter().any(|x| x.id == id));
                        let run = run.clone();
                        other.then(|| {
                            view! {
                                <button type="button" class="run-overlay" aria-pressed=on.to_string()
                                    title="draw this run's curves (dashed) over the run shown"
                                    on:click=move |_| toggle_overlay(run.clone())>
                                    {if on { "Remove overlay" } else { "Overlay" }}
                                </button>
                            }
                        })
                    }
                };
                let remove = {
                    let id = id.clone();
                    move || delete_button("run", "Delete this run for good? ", id.clone(), confirm, delete)
                };
                view! {
                    <tr data-run=run.id.clone() class:selected=is_selected>
                        <td><button type="button" class="run-show" title="show this run's curves, result table, gradients, loss scale and memory"
                            on:click=move |_| show(a.clone(), saved_at)>{utc_date_time(run.saved_at)}</button></td>
                        <td>{run.dataset.clone()}</td>
                        <td>
                            {format!("{} ({})", run.backend, run.device)}
                            <br/>
                            <span class="run-origin muted">{move || origin.words(&here.get())}</span>
                        </td>
                        <td class="settings">{settings_cell(&run)}</td>
                        <td class="precisions">
                            {precisions}
                            {run.pytorch.then(|| view! {
                                <span class="with-pytorch-mark"
                                    title=run.pytorch_sentence.clone().unwrap_or_else(|| "PyTorch was asked to run beside this duel".into())>
                                    " + PyTorch"
                                </span>
                            })}
                        </td>
                        <td class="acc">{accuracies(&run)}</td>
                        <td class="num">{speedup}</td>
                        <td>
                            <button type="button" class="run-json" on:click=move |_| save_json(b.clone())>"JSON"</button>
                            <button type="button" class="run-csv" on:click=move |_| save_csv(c.clone())>"CSV"</button>
                            {overlay}
                            {remove}
                        </td>
                    </tr>
                }
            })
            .collect_view();
        HistoryListing {
            skipped: l.skipped,
            empty: empty.then_some(("history-empty", "No saved runs yet: every finished duel is kept here.")),
            table_id: "history-table",
            head: view! { <thead><tr>
                    <th>"Date (UTC)"</th><th>"Data set"</th><th>"Backend"</th><th>"Settings"</th><th>"Precisions"</th>
                    <th>"Test accuracy"</th><th>"Speed-up fp16 vs fp32"</th><th>"Export"</th>
                </tr></thead> }.into_any(),
            rows: rows.into_any(),
        }
        .view()
    };

    view! {
        <section id="run-history">
            <h3>"Run history"</h3>
            <p class="muted">"Every finished duel is saved in this data folder and kept across restarts, with its settings, curves and the machine it ran on. Click a date to see that run's curves, table, gradient histograms, loss scale and memory; Overlay draws another run's curves over it."</p>
            {move || failure(op).map(|e| view! { <p class="error" id="history-error">{e.message}</p> })}
            <Loaded resource=list what="cannot read the run history"
                pending=|| view! { <p class="muted">"Reading the run history…"</p> }
                children=rows/>
            {move || selected.get().map(|(id, r)| {
                let origin = Origin::of(r.stamp.as_ref(), &r.backend, &r.device, shown_at.get());
                let words = origin.words(&here.get());
                saved_run_table(id, r, overlays.into(), words, shown_at.get())
            })}
            <LabRuns refresh=refresh/>
        </section>
    }
}
