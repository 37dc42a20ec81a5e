//! Act II – The Duel: pick contestants and data, run a real training duel on the compute
//! service, watch the loss and accuracy curves and each contestant's telemetry (epoch time,
//! throughput, memory, loss scaler) live (Server-Sent Events), the GPU's NVML readings live
//! while the duel runs on it, cancel, and read the result table with the speed-up; then the
//! mixed-precision story under it (`duel_story`): the warm-up epoch and step times apart, the
//! loss scale over the steps with skipped steps marked, the gradients against FP16's range,
//! and memory split by what holds it. By default a duel trains the whole data set for two
//! epochs: the first is the warm-up (and the instrumented epoch), the second is timed.
//!
//! "with PyTorch" (`#with-pytorch`) also trains the same CNN in PyTorch after our contestants
//! (the repo's `bench/duel_peer.py`, run by the peer interpreter): its epochs join the epoch
//! table, the accuracy chart (dashed) and a per-epoch loss chart live, its notes the
//! `#pytorch-notes` list, and its runs the result table.

use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::prelude::SeriesLabelPosition;
use showdown_core::lab::PeerStatus;
use showdown_core::model::Activation;
use showdown_core::protocol::{Event, JobStatusRequest, PeerStatusRequest, RunsRequest};
use showdown_core::pytorch_duel::PeerDuelRun;
use showdown_core::runs::{after_reload, AfterReload, DuelInFlight, DUEL_IN_FLIGHT_KEY};
use showdown_core::types::{
    batch_note, BackendChoice, DatasetSummary, DuelConfig, DuelEvent, DuelReport, EpochReport,
    Precision, RunReport, Telemetry, TelemetrySample,
};
use showdown_core::ErrorKind;

use crate::bridge;
use crate::charts::{self, EpochLines, Series, Stroke, StyledSeries, COLORS};
use crate::loading::{cancel_job, failure, load, Acting};
use crate::pages::duel_story::{
    self, Fp8Story, GradHistograms, LossScaleChart, MemoryPanel, StepPoint, Trace,
};
use crate::pages::duel_table;
use crate::pages::telemetry::TelemetryStrip;

mod form;
mod live;
mod settings;

use form::{peer_progress, DuelForm};
use live::DuelLive;

fn color_of(p: Precision) -> plotters::style::RGBColor {
    let i = Precision::ALL.iter().position(|q| *q == p).unwrap_or(0);
    COLORS[i % COLORS.len()]
}

/// What the telemetry strip shows of one contestant, updated as its events arrive.
#[derive(Clone, Debug, PartialEq)]
struct ContestantStats {
    /// The contestant.
    precision: Precision,
    /// Epochs it will train.
    epochs: usize,
    /// Its latest finished epoch.
    last_epoch: Option<EpochReport>,
    /// Loss scale of the latest step or epoch.
    loss_scale: f64,
    /// Steps the loss scaler skipped so far.
    skipped_steps: usize,
    /// Steps skipped in its finished epochs (from their reports).
    epoch_skips: usize,
    /// Its report, once it finished.
    finished: Option<RunReport>,
}

fn result_table(r: DuelReport) -> impl IntoView {
    view! {
        <section id="duel-result">
            <h3>"Result"</h3>
            <p>{format!("{} backend on {} — {}", r.backend, r.device, r.backend_reason)}</p>
            <p id="duel-settings">{r.settings_line()}</p>
            {duel_table::duel_table("result-table", &r)}
        </section>
    }
}

/// The page's `sessionStorage`, where one exists.
fn session() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

/// Remembers that a duel runs (so that a reload can say what became of it), or forgets it.
fn remember_duel(duel: Option<&DuelInFlight>) {
    let Some(store) = session() else { return };
    match duel.and_then(|d| serde_json::to_string(d).ok()) {
        Some(text) => {
            let _ = store.set_item(DUEL_IN_FLIGHT_KEY, &text);
        }
        None => {
            let _ = store.remove_item(DUEL_IN_FLIGHT_KEY);
        }
    }
}

/// The duel a page before a reload left running, if it remembered one.
fn remembered_duel() -> Option<DuelInFlight> {
    let text = session()?.get_item(DUEL_IN_FLIGHT_KEY).ok()??;
    serde_json::from_str(&text).ok()
}

/// Waits `ms` milliseconds.
async fn sleep_ms(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let set = web_sys::window().map(|w| {
            w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms)
                .is_ok()
        });
        if set != Some(true) {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// How long a reloaded page follows a duel that still runs on the service, in seconds.
const FOLLOW_S: u32 = 3600;

/// After a reload: asks the service whether the remembered duel still runs (and, while it
/// does, asks again every second), then whether the run history kept it; the sentence goes to
/// `note`, and `refresh` is bumped once it ended.
fn check_after_reload(note: RwSignal<Option<(AfterReload, String)>>, refresh: RwSignal<u32>) {
    let Some(duel) = remembered_duel() else {
        return;
    };
    // Follows a streaming job started before the reload: asked again every second while it
    // runs.
    leptos::task::spawn_local(async move {
        for _ in 0..FOLLOW_S {
            let status = match bridge::call(JobStatusRequest {}).await {
                Ok(s) => s,
                Err(e) => {
                    note.set(Some((
                        AfterReload::Cancelled,
                        format!(
                            "A duel was running when the page was reloaded; the service cannot \
                             say what became of it: {}",
                            e.message
                        ),
                    )));
                    remember_duel(None);
                    return;
                }
            };
            let history = if status.running.is_some() {
                Default::default()
            } else {
                bridge::call(RunsRequest {}).await.unwrap_or_default()
            };
            let outcome = after_reload(&duel, &status, &history);
            let sentence = outcome.sentence(&duel);
            let done = outcome != AfterReload::StillRunning;
            note.set(Some((outcome, sentence)));
            if done {
                remember_duel(None);
                refresh.update(|n| *n = n.wrapping_add(1));
                return;
            }
            sleep_ms(1000).await;
        }
    });
}

/// The state of the duel page: the form's fields, the running duel's progress and results.
#[derive(Clone, Copy)]
struct Duel {
    precisions: RwSignal<Vec<Precision>>,
    datasets: RwSignal<Vec<DatasetSummary>>,
    dataset: RwSignal<String>,
    epochs: RwSignal<String>,
    batch: RwSignal<String>,
    train_limit: RwSignal<String>,
    backend: RwSignal<String>,
    activation: RwSignal<Activation>,
    fp8_scaling: RwSignal<showdown_core::fp8::Fp8Scaling>,
    running: RwSignal<bool>,
    progress: RwSignal<String>,
    error: RwSignal<Option<String>>,
    report: RwSignal<Option<DuelReport>>,
    saved: RwSignal<Option<Result<String, String>>>,
    curves: RwSignal<Vec<Trace>>,
    finished_runs: RwSignal<Vec<RunReport>>,
    runs: Memo<Vec<RunReport>>,
    epoch_rows: RwSignal<Vec<(Precision, EpochReport)>>,
    history_refresh: RwSignal<u32>,
    stats: RwSignal<Vec<ContestantStats>>,
    train_images: RwSignal<Option<usize>>,
    cpu_chosen: RwSignal<bool>,
    live: RwSignal<Option<TelemetrySample>>,
    batch_info: RwSignal<Option<String>>,
    asked_batch: RwSignal<usize>,
    reload_note: RwSignal<Option<(AfterReload, String)>>,
    peer_status: RwSignal<Option<Result<PeerStatus, String>>>,
    with_pytorch: RwSignal<bool>,
    peer_runs: RwSignal<Vec<(PeerDuelRun, usize)>>,
    peer_notes: RwSignal<Vec<String>>,
}

impl Duel {
    /// The duel's state, created once for the whole app ([`provide_duel_state`]): a duel goes
    /// on in the compute process when the user visits another act, its events keep arriving
    /// into these signals, and the page shows them again on return. The form's settings are
    /// restored from the last visit or session ([`settings`]); a duel a reload interrupted is
    /// asked after once ([`check_after_reload`]).
    fn new() -> Duel {
        let report = RwSignal::new(None::<DuelReport>);
        // The runs finished so far in the running duel (the story's panels fill from them).
        let finished_runs: RwSignal<Vec<RunReport>> = RwSignal::new(Vec::new());
        let d = Duel {
            precisions: RwSignal::new(vec![Precision::Fp32, Precision::Fp16]),
            datasets: RwSignal::new(Vec::new()),
            dataset: RwSignal::new("mnist-sample".to_string()),
            // The whole training set, two epochs: epoch 1 is the warm-up (module loading, the
            // instrumented and synchronised steps, the gradient histograms), epoch 2 is timed.
            epochs: RwSignal::new("2".to_string()),
            batch: RwSignal::new("128".to_string()),
            train_limit: RwSignal::new(String::new()),
            backend: RwSignal::new("auto".to_string()),
            activation: RwSignal::new(Activation::Relu),
            fp8_scaling: RwSignal::new(showdown_core::fp8::Fp8Scaling::Delayed),
            running: RwSignal::new(false),
            progress: RwSignal::new(String::new()),
            error: RwSignal::new(None),
            report,
            // Where the run history keeps the finished duel: its ID, or why it could not be
            // saved.
            saved: RwSignal::new(None),
            // Each contestant's step events: its loss curve and loss scale.
            curves: RwSignal::new(Vec::new()),
            finished_runs,
            runs: Memo::new(move |_| {
                report.with(|r| match r {
                    Some(r) => r.runs.clone(),
                    None => finished_runs.get(),
                })
            }),
            epoch_rows: RwSignal::new(Vec::new()),
            // Bumped after each finished duel (the service saved it): the run history reads
            // again.
            history_refresh: RwSignal::new(0),
            stats: RwSignal::new(Vec::new()),
            // Training images per epoch of the running duel (for samples/s before a run's
            // report).
            train_images: RwSignal::new(None),
            cpu_chosen: RwSignal::new(false),
            // The latest NVML reading of the running duel (`Event::Telemetry`, about 5 Hz on a
            // GPU).
            live: RwSignal::new(None),
            // What a batch larger than the training set means, said when the duel starts.
            batch_info: RwSignal::new(None),
            // The asked batch of the running duel.
            asked_batch: RwSignal::new(0),
            // What became of a duel a reload interrupted.
            reload_note: RwSignal::new(None),
            // The PyTorch peer as the service finds it (the page asks each time it opens), the
            // option, and the running duel's PyTorch runs (each with the epochs it trains) and
            // notes.
            peer_status: RwSignal::new(None),
            with_pytorch: RwSignal::new(false),
            peer_runs: RwSignal::new(Vec::new()),
            peer_notes: RwSignal::new(Vec::new()),
        };
        check_after_reload(d.reload_note, d.history_refresh);
        settings::restore(d);
        settings::keep(d);
        d
    }

    /// Updates the stats of the newest contestant of precision `p`.
    fn with_stats(self, p: Precision, f: &mut dyn FnMut(&mut ContestantStats)) {
        self.stats.update(|v| {
            if let Some(c) = v.iter_mut().rev().find(|c| c.precision == p) {
                f(c);
            }
        });
    }
}

/// What one of the running duel's events changes on the page.
fn duel_event(d: Duel, ev: Event) {
    let Duel {
        progress,
        curves,
        finished_runs,
        epoch_rows,
        stats,
        train_images,
        live,
        batch_info,
        asked_batch,
        peer_runs,
        peer_notes,
        ..
    } = d;

    let event = match ev {
        Event::Duel { event } => event,
        Event::Telemetry { sample } => {
            live.set(Some(sample));
            return;
        }
        _ => return,
    };
    match event {
        DuelEvent::RunStarted {
            precision,
            steps_per_epoch,
            epochs,
        } => {
            curves.update(|c| {
                c.push(Trace {
                    precision,
                    steps_per_epoch,
                    points: Vec::new(),
                    label: None,
                    dashed: false,
                })
            });
            if let Some(n) = train_images.get_untracked() {
                batch_info.set(batch_note(asked_batch.get_untracked(), n));
            }
            stats.update(|v| {
                v.push(ContestantStats {
                    precision,
                    epochs,
                    last_epoch: None,
                    // FP8 runs FP16's scaler where its storage is FP16 (a GPU).
                    loss_scale: if precision.may_use_loss_scaler() {
                        f64::NAN
                    } else {
                        1.0
                    },
                    skipped_steps: 0,
                    epoch_skips: 0,
                    finished: None,
                })
            });
            progress.set(format!(
                "{precision}: started ({epochs} epoch(s) of {steps_per_epoch} steps)"
            ));
        }
        DuelEvent::Step {
            precision,
            epoch,
            step,
            steps,
            loss,
            loss_scale,
            skipped,
        } => {
            d.with_stats(precision, &mut |c| {
                c.loss_scale = loss_scale;
                c.skipped_steps = c.skipped_steps.max(skipped);
            });
            progress.set(format!(
                    "{precision}: epoch {epoch}, step {step}/{steps}, loss {loss:.4}, loss scale {loss_scale}"
                ));
        }
        DuelEvent::Curve { precision, point } => {
            // The curve's points: the same steps for every contestant, never thinned.
            curves.update(|c| {
                if let Some(t) = c.iter_mut().rev().find(|t| t.precision == precision) {
                    t.points.push(StepPoint {
                        step: point.global_step,
                        x: point.x,
                        loss: point.loss,
                        loss_scale: point.loss_scale,
                        skipped: point.skipped,
                    });
                }
            });
        }
        DuelEvent::Epoch { precision, report } => {
            progress.set(format!(
                "{precision}: epoch {} done in {:.0} ms, test accuracy {:.2} %",
                report.epoch,
                report.ms,
                report.test_accuracy * 100.0
            ));
            d.with_stats(precision, &mut |c| {
                c.loss_scale = report.loss_scale;
                c.epoch_skips += report.skipped_steps;
                c.skipped_steps = c.skipped_steps.max(c.epoch_skips);
                c.last_epoch = Some(report.clone());
            });
            epoch_rows.update(|r| r.push((precision, report)));
        }
        DuelEvent::RunFinished { report } => {
            progress.set(format!("{}: finished", report.precision));
            d.with_stats(report.precision, &mut |c| {
                c.skipped_steps = report.skipped_steps;
                c.loss_scale = report.final_loss_scale;
                c.finished = Some((*report).clone());
            });
            finished_runs.update(|v| v.push(*report));
        }
        DuelEvent::Peer { run, epochs } => {
            progress.set(peer_progress(&run, epochs));
            peer_runs.update(
                |v| match v.iter_mut().find(|(r, _)| r.variant == run.variant) {
                    Some(slot) => *slot = (run, epochs),
                    None => v.push((run, epochs)),
                },
            );
        }
        DuelEvent::PeerNote { text } => {
            peer_notes.update(|n| n.push(text));
        }
    }
}

/// Starts the duel the form describes (or says why it cannot).
fn start_duel(d: Duel) {
    let parse = |name: &str, s: String| -> Result<usize, String> {
        s.trim()
            .parse::<usize>()
            .map_err(|_| format!("{name} must be a whole number, not {s:?}"))
    };
    let config = (|| -> Result<DuelConfig, String> {
        let limit = d.train_limit.get();
        Ok(DuelConfig {
            backend: match d.backend.get().as_str() {
                "cpu" => BackendChoice::Cpu,
                "cuda" => BackendChoice::Cuda,
                _ => BackendChoice::Auto,
            },
            dataset: d.dataset.get(),
            precisions: d.precisions.get(),
            epochs: parse("epochs", d.epochs.get())?,
            batch: parse("batch", d.batch.get())?,
            train_limit: if limit.trim().is_empty() {
                None
            } else {
                Some(parse("train limit", limit)?)
            },
            activation: d.activation.get(),
            fp8_scaling: d.fp8_scaling.get(),
            pytorch: d.with_pytorch.get()
                && d.peer_status
                    .with(|s| matches!(s, Some(Ok(s)) if s.torch.is_some())),
            ..DuelConfig::default()
        })
    })();
    let config = match config {
        Ok(c) => c,
        Err(e) => {
            d.error.set(Some(e));
            return;
        }
    };
    d.running.set(true);
    d.error.set(None);
    d.reload_note.set(None);
    d.batch_info.set(None);
    d.asked_batch.set(config.batch);
    remember_duel(Some(&DuelInFlight {
        started_ms: js_sys::Date::now() as u64,
        what: format!(
            "{} on {}, {}, batch {}, {} epoch(s)",
            config
                .precisions
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            config.dataset,
            config.activation.label(),
            config.batch,
            config.epochs
        ),
    }));
    d.report.set(None);
    d.saved.set(None);
    d.curves.set(Vec::new());
    d.finished_runs.set(Vec::new());
    d.epoch_rows.set(Vec::new());
    d.peer_runs.set(Vec::new());
    d.peer_notes.set(Vec::new());
    d.stats.set(Vec::new());
    d.live.set(None);
    d.cpu_chosen.set(config.backend == BackendChoice::Cpu);
    let in_set = d
        .datasets
        .with_untracked(|l| l.iter().find(|s| s.name == config.dataset).map(|s| s.train));
    d.train_images
        .set(in_set.map(|n| config.train_limit.map_or(n, |l| l.min(n))));
    d.progress.set("starting…".into());
    // A streaming job: the duel's step, epoch and PyTorch events arrive while it runs.
    leptos::task::spawn_local(async move {
        match bridge::duel(&config, move |ev| duel_event(d, ev)).await {
            Ok(outcome) => {
                d.progress.set("done".into());
                d.saved
                    .set(Some(match (&outcome.saved_run, &outcome.save_note) {
                        (Some(id), _) => Ok(id.clone()),
                        (None, note) => Err(note
                            .clone()
                            .unwrap_or_else(|| "the run was not saved to the run history".into())),
                    }));
                d.report.set(Some(outcome.report));
                d.history_refresh.update(|n| *n = n.wrapping_add(1));
            }
            Err(e) => {
                d.progress.set(String::new());
                d.error.set(Some(if e.code == ErrorKind::Cancelled {
                    "Duel cancelled: the run stopped before its result.".to_string()
                } else {
                    format!(
                        "The duel failed: {}",
                        showdown_core::error::plain_words(e.code, &e.message)
                    )
                }));
            }
        }
        remember_duel(None);
        d.running.set(false);
    });
}

/// The epoch table (`#epoch-table`): every contestant's epochs, then PyTorch's.
fn epoch_table(d: Duel) -> impl IntoView {
    let Duel {
        epoch_rows,
        peer_runs,
        ..
    } = d;
    move || {
        let rows = epoch_rows.get();
        let peers = peer_runs.get();
        (!rows.is_empty() || !peers.is_empty()).then(|| {
            let peer_rows = peers
                .into_iter()
                .flat_map(|(run, _)| {
                    let scaling = run.scaling.clone().unwrap_or_else(|| "—".into());
                    let variant = run.variant.clone();
                    let label = run.label.clone();
                    run.epochs.into_iter().map(move |e| {
                        view! {
                            <tr class="peer-row" data-variant=variant.clone()>
                                <td>{label.clone()}</td><td class="num">{e.epoch}</td>
                                <td class="num">{format!("{:.1}", e.ms)}</td>
                                <td class="num">{format!("{:.4}", e.train_loss)}</td>
                                <td class="num">{format!("{:.2} %", e.test_accuracy * 100.0)}</td>
                                <td class="num">"—"</td>
                                <td class="num">{scaling.clone()}</td>
                            </tr>
                        }
                    })
                })
                .collect_view();
            let rows = rows
                .into_iter()
                .map(|(p, e)| {
                    view! {
                        <tr>
                            <td>{p.as_str()}</td><td class="num">{e.epoch}</td>
                            <td class="num">{format!("{:.1}", e.ms)}</td>
                            <td class="num">{format!("{:.4}", e.train_loss)}</td>
                            <td class="num">{format!("{:.2} %", e.test_accuracy * 100.0)}</td>
                            <td class="num">{e.skipped_steps}</td>
                            <td class="num">{e.loss_scale}</td>
                        </tr>
                    }
                })
                .collect_view();
            view! {
                <table id="epoch-table">
                    <thead><tr><th>"precision"</th><th>"epoch"</th><th>"ms"</th><th>"train loss"</th><th>"test accuracy"</th><th>"skipped steps"</th><th>"loss scale"</th></tr></thead>
                    <tbody>{rows}{peer_rows}</tbody>
                </table>
            }
        })
    }
}

/// The caption of the exported loss chart: the saved run's (its ID, device, data set, batch
/// and date, as a reopened run's), or while the duel runs what it trains, on which data and
/// batch, and when.
fn live_caption(d: Duel) -> String {
    let now = (js_sys::Date::now() / 1000.0) as u64;
    let saved = d.saved.get_untracked().and_then(Result::ok);
    match d.report.get_untracked() {
        Some(r) => {
            showdown_core::runs::chart_caption(saved.as_deref().unwrap_or("(not saved)"), now, &r)
        }
        None => format!(
            "Live duel in progress · {} · {} · batch {} · {}",
            d.precisions
                .get_untracked()
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            d.dataset.get_untracked(),
            d.asked_batch.get_untracked(),
            showdown_core::format::utc_date_time(now)
        ),
    }
}

/// Creates the duel's state for the app (called once by the shell, above the pages).
pub fn provide_duel_state() {
    provide_context(Duel::new());
}

/// The Act II page.
#[component]
pub fn DuelPage() -> impl IntoView {
    let d = use_context::<Duel>().unwrap_or_else(Duel::new);
    let Duel {
        datasets,
        error,
        report,
        saved,
        curves,
        runs,
        history_refresh,
        batch_info,
        reload_note,
        peer_status,
        peer_notes,
        ..
    } = d;
    let export_error = RwSignal::new(None::<String>);
    // The PyTorch peer as the service finds it, asked each time the page opens.
    let peer = LocalResource::new(|| async {
        bridge::call(PeerStatusRequest {})
            .await
            .map_err(|e| e.message)
    });
    Effect::new(move |_| {
        if let Some(status) = peer.get() {
            peer_status.set(Some(status));
        }
    });

    // The data sets, asked when the page opens (GetMnist updates the list after a download).
    let dataset_list = load(bridge::list_datasets);
    Effect::new(move |_| {
        if let Some(Ok(list)) = dataset_list.get() {
            datasets.set(list);
        }
    });
    let cancel_action = cancel_job();

    view! {
        <h2>"Act II · The Duel"</h2>
        <p>"Train the lab CNN once per contestant on the same data, seed and batches, and compare time, memory and accuracy."</p>
        <DuelForm d=d cancel_action=cancel_action/>
        {move || reload_note.get().map(|(outcome, text)| {
            let class = match outcome {
                AfterReload::Cancelled => "error",
                _ => "note",
            };
            view! { <p id="duel-reload-note" class=class>{text}</p> }
        })}
        {move || batch_info.get().map(|t| view! { <p id="duel-batch-note" class="note">{t}</p> })}
        {move || error.get().map(|e| view! { <p class="error" id="duel-error">{e}</p> })}
        {move || dataset_list.get().and_then(Result::err).map(|e| view! { <p class="error" id="duel-error">{format!("cannot list the data sets: {}", e.message)}</p> })}
        {move || failure(cancel_action).map(|e| view! { <p class="error" id="duel-error">{format!("cancel failed: {}", e.message)}</p> })}
        <DuelLive d=d/>
        {move || {
            let notes = peer_notes.get();
            (!notes.is_empty()).then(|| {
                let items = notes.into_iter().map(|n| view! { <li>{n}</li> }).collect_view();
                view! {
                    <div id="pytorch-notes-box">
                        <strong>"PyTorch beside the duel"</strong>
                        <ul id="pytorch-notes">{items}</ul>
                    </div>
                }
            })
        }}
        {epoch_table(d)}
        {move || report.get().map(result_table)}
        {move || saved.get().map(|s| match s {
            Ok(id) => view! { <p id="duel-saved" class="muted">{format!("Saved to the run history as {id}.")}</p> }.into_any(),
            Err(note) => view! { <p id="duel-saved" class="error">{note}</p> }.into_any(),
        })}
        {move || report.with(|r| r.as_ref().map(duel_story::timing_notes))}
        <Show when=move || !curves.with(Vec::is_empty) || !runs.with(Vec::is_empty)>
            <GradHistograms prefix="" runs=runs/>
        </Show>
        <Fp8Story prefix="" runs=runs/>
        <MemoryPanel prefix="" report=report/>
        <p id="duel-exports">
            <button type="button" id="export-png" disabled=move || curves.get().is_empty()
                on:click=move |_| export_error.set(
                    crate::download::download_canvas_png_captioned(
                        "loss-chart",
                        "precision-showdown-loss.png",
                        &live_caption(d),
                    )
                    .err()
                    .map(|e| format!("PNG export failed: {}", e.message)),
                )>"Export PNG"</button>
            <span class="muted">" the loss chart as an image"</span>
        </p>
        {move || export_error.get().map(|e| view! { <p class="error">{e}</p> })}
        {crate::pages::kernels::crossover_section(history_refresh)}
        <crate::pages::run_history::RunHistory refresh=history_refresh/>
    }
}
