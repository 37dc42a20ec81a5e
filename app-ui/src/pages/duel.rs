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
use showdown_core::peer_duel::PeerDuelRun;
use showdown_core::protocol::{Event, JobStatusRequest, PeerStatusRequest, RunsRequest};
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

fn color_of(p: Precision) -> plotters::style::RGBColor {
    let i = Precision::ALL.iter().position(|q| *q == p).unwrap_or(0);
    COLORS[i % COLORS.len()]
}

/// A PyTorch run's progress in words: `PyTorch AMP fp16 + GradScaler, eager: epoch 2/5,
/// 190 ms` (and its accuracy), or that it started.
fn peer_progress(run: &PeerDuelRun, epochs: usize) -> String {
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
fn peer_label(s: &PeerStatus) -> Option<String> {
    let torch = s.torch.as_ref()?;
    Some(format!(
        "with PyTorch {torch} ({})",
        if s.cuda { "GPU" } else { "CPU" }
    ))
}

/// The "with PyTorch" box's title: what it runs, and with which interpreter.
fn peer_title(s: &PeerStatus) -> String {
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
fn pytorch_option(
    status: LocalResource<Result<PeerStatus, String>>,
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

/// Smallest, mean and largest of `values`; `None` when there are none.
fn min_mean_max(values: impl Iterator<Item = f64>) -> Option<(f64, f64, f64)> {
    let (mut lo, mut hi, mut sum, mut n) = (f64::MAX, f64::MIN, 0.0, 0usize);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
        sum += v;
        n += 1;
    }
    (n > 0).then(|| (lo, sum / n as f64, hi))
}

/// The GPU readings of a finished run: min/mean/max per quantity and a utilisation sparkline.
fn gpu_telemetry(t: &Telemetry) -> AnyView {
    let s = &t.samples;
    if s.is_empty() {
        let why = t
            .note
            .clone()
            .unwrap_or_else(|| "NVML took no samples".into());
        return view! { <p class="gpu-telemetry">{format!("GPU telemetry: none — {why}")}</p> }
            .into_any();
    }
    let line = |name: &str, unit: &str, v: Option<(f64, f64, f64)>| {
        v.map(|(lo, mean, hi)| {
            format!(
                "{name} {} / {} / {} {unit}",
                charts::fmt(lo),
                charts::fmt(mean),
                charts::fmt(hi)
            )
        })
        .unwrap_or_default()
    };
    let util = line(
        "utilisation",
        "%",
        min_mean_max(s.iter().map(|x| x.gpu_util_pct as f64)),
    );
    let memory = line(
        "memory used",
        "MB",
        min_mean_max(s.iter().map(|x| x.memory_used_bytes as f64 / 1e6)),
    );
    let power = line("power", "W", min_mean_max(s.iter().map(|x| x.power_w)));
    let temperature = line(
        "temperature",
        "°C",
        min_mean_max(s.iter().map(|x| x.temperature_c as f64)),
    );
    let process = t
        .process_memory_peak_bytes
        .map(|b| format!("; process peak {:.1} MB (NVML)", b as f64 / 1e6))
        .unwrap_or_default();
    let last = s.len().saturating_sub(1).max(1) as f64;
    let points = s
        .iter()
        .enumerate()
        .map(|(i, x)| {
            format!(
                "{:.1},{:.1}",
                i as f64 / last * 100.0,
                20.0 - x.gpu_util_pct.min(100) as f64 / 5.0
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    view! {
        <p class="gpu-telemetry">
            {format!("GPU telemetry ({} samples, min / mean / max): {util}; {memory}{process}; {power}; {temperature}", s.len())}
            " "
            <svg class="spark" viewBox="0 0 100 20" preserveAspectRatio="none" width="120" height="22">
                <title>"GPU utilisation over the run"</title>
                <polyline points=points fill="none" stroke="#1f77b4" stroke-width="1.5"/>
            </svg>
        </p>
    }
    .into_any()
}

/// One contestant's card in the telemetry strip. `cpu_chosen`: the user picked the CPU
/// backend, so no GPU readings will come.
fn contestant_card(
    c: ContestantStats,
    train_images: Option<usize>,
    cpu_chosen: bool,
) -> impl IntoView {
    let epoch = c
        .last_epoch
        .as_ref()
        .map(|e| format!("{} / {}", e.epoch, c.epochs))
        .unwrap_or_else(|| format!("0 / {}", c.epochs));
    let epoch_time = c
        .last_epoch
        .as_ref()
        .map(|e| format!("{:.1} ms", e.ms))
        .unwrap_or_else(|| "—".into());
    let samples_per_s = match (&c.finished, &c.last_epoch, train_images) {
        (Some(r), _, _) => format!("{:.0} (median epoch)", r.samples_per_s),
        (None, Some(e), Some(n)) if e.ms > 0.0 => format!("{:.0}", n as f64 / (e.ms / 1e3)),
        _ => "—".into(),
    };
    let peak = c
        .finished
        .as_ref()
        .map(|r| format!("{:.1} MB", r.peak_memory_bytes as f64 / 1e6))
        .unwrap_or_else(|| "— (at the end of the run)".into());
    let loss_scale = if c.loss_scale.is_finite() {
        c.loss_scale.to_string()
    } else {
        "—".into()
    };
    let gpu = match &c.finished {
        Some(RunReport {
            telemetry: Some(t), ..
        }) => gpu_telemetry(t),
        Some(_) => view! { <p class="gpu-telemetry">"GPU telemetry: none (CPU backend)"</p> }.into_any(),
        None if cpu_chosen => view! { <p class="gpu-telemetry">"GPU telemetry: none (CPU backend)"</p> }.into_any(),
        None => view! { <p class="gpu-telemetry muted">"GPU telemetry: live above; the summary comes with the run's report"</p> }.into_any(),
    };
    view! {
        <article class="contestant" data-precision=c.precision.as_str()
            style:border-top-color=format!("rgb({},{},{})", color_of(c.precision).0, color_of(c.precision).1, color_of(c.precision).2)>
            <h4>{c.precision.as_str()}</h4>
            <dl>
                <dt>"epoch"</dt><dd class="epoch">{epoch}</dd>
                <dt>"epoch time"</dt><dd class="epoch-time">{epoch_time}</dd>
                <dt>"samples/s"</dt><dd class="samples-per-s">{samples_per_s}</dd>
                <dt>"peak memory"</dt><dd class="peak-memory">{peak}</dd>
                <dt>"loss scale"</dt><dd class="loss-scale">{loss_scale}</dd>
                <dt>"skipped steps"</dt><dd class="skipped-steps">{c.skipped_steps}</dd>
            </dl>
            {gpu}
        </article>
    }
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
    peer_status: LocalResource<Result<PeerStatus, String>>,
    with_pytorch: RwSignal<bool>,
    peer_runs: RwSignal<Vec<(PeerDuelRun, usize)>>,
    peer_notes: RwSignal<Vec<String>>,
}

impl Duel {
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
        error,
        report,
        saved,
        curves,
        finished_runs,
        epoch_rows,
        history_refresh,
        stats,
        train_images,
        cpu_chosen,
        live,
        batch_info,
        asked_batch,
        reload_note,
        peer_status,
        with_pytorch,
        peer_runs,
        peer_notes,
        ..
    } = d;

    let parse = |name: &str, s: String| -> Result<usize, String> {
        s.trim()
            .parse::<usize>()
            .map_err(|_| format!("{name} must be a whole number, not {s:?}"))
    };
    let config = (|| -> Result<DuelConfig, String> {
        let limit = train_limit.get();
        Ok(DuelConfig {
            backend: match backend.get().as_str() {
                "cpu" => BackendChoice::Cpu,
                "cuda" => BackendChoice::Cuda,
                _ => BackendChoice::Auto,
            },
            dataset: dataset.get(),
            precisions: precisions.get(),
            epochs: parse("epochs", epochs.get())?,
            batch: parse("batch", batch.get())?,
            train_limit: if limit.trim().is_empty() {
                None
            } else {
                Some(parse("train limit", limit)?)
            },
            activation: activation.get(),
            fp8_scaling: fp8_scaling.get(),
            pytorch: with_pytorch.get()
                && peer_status.with(|s| matches!(s, Some(Ok(s)) if s.torch.is_some())),
            ..DuelConfig::default()
        })
    })();
    let config = match config {
        Ok(c) => c,
        Err(e) => {
            error.set(Some(e));
            return;
        }
    };
    running.set(true);
    error.set(None);
    reload_note.set(None);
    batch_info.set(None);
    asked_batch.set(config.batch);
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
    report.set(None);
    saved.set(None);
    curves.set(Vec::new());
    finished_runs.set(Vec::new());
    epoch_rows.set(Vec::new());
    peer_runs.set(Vec::new());
    peer_notes.set(Vec::new());
    stats.set(Vec::new());
    live.set(None);
    cpu_chosen.set(config.backend == BackendChoice::Cpu);
    let in_set =
        datasets.with_untracked(|l| l.iter().find(|d| d.name == config.dataset).map(|d| d.train));
    train_images.set(in_set.map(|n| config.train_limit.map_or(n, |l| l.min(n))));
    progress.set("starting…".into());
    // A streaming job: the duel's step, epoch and PyTorch events arrive while it runs.
    leptos::task::spawn_local(async move {
        match bridge::duel(&config, move |ev| duel_event(d, ev)).await {
            Ok(outcome) => {
                progress.set("done".into());
                saved.set(Some(match (&outcome.saved_run, &outcome.save_note) {
                    (Some(id), _) => Ok(id.clone()),
                    (None, note) => Err(note
                        .clone()
                        .unwrap_or_else(|| "the run was not saved to the run history".into())),
                }));
                report.set(Some(outcome.report));
                history_refresh.update(|n| *n = n.wrapping_add(1));
            }
            Err(e) => {
                progress.set(String::new());
                error.set(Some(if e.code == ErrorKind::Cancelled {
                    "Duel cancelled: the run stopped before its result.".to_string()
                } else {
                    format!("duel failed ({:?}): {}", e.code, e.message)
                }));
            }
        }
        remember_duel(None);
        running.set(false);
    });
}

/// The duel's form (`#duel-form`): the contestants, the settings, PyTorch, Run and Cancel.
#[component]
fn DuelForm(d: Duel, cancel_action: Acting<(), bool>) -> impl IntoView {
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
                        {Activation::ALL.map(|a| view! { <option value=a.name() selected=a == Activation::Relu>{a.label()}</option> })}
                    </select>
                </label>
                <label for="fp8-scaling" title="how FP8's per-tensor scales are chosen: from each tensor's amax history (Transformer Engine's default) or from its own amax">"fp8 scaling "
                    <select id="fp8-scaling" on:change=move |ev| fp8_scaling.set(event_target_value(&ev).parse().unwrap_or_default())>
                        <option value="delayed" selected>"delayed (amax history)"</option>
                        <option value="current">"current (own amax)"</option>
                    </select>
                </label>
                <label for="backend">"backend "
                    <select id="backend" on:change=move |ev| backend.set(event_target_value(&ev))>
                        <option value="auto" selected>"auto"</option>
                        <option value="cpu">"cpu"</option>
                        <option value="cuda">"cuda"</option>
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

/// The running duel's live panels: the loss chart, the loss scale, the GPU's readings, each
/// contestant's card, the accuracy chart and, with PyTorch, its loss per epoch.
#[component]
fn DuelLive(d: Duel) -> impl IntoView {
    let Duel {
        curves,
        runs,
        epoch_rows,
        stats,
        train_images,
        cpu_chosen,
        live,
        peer_runs,
        ..
    } = d;
    let canvas = NodeRef::<Canvas>::new();
    let chart_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let Some(c) = canvas.get() else { return };
        let r = curves.with(|t| runs.with(|r| duel_story::scale::draw_loss_chart(c, t, r)));
        chart_error.set(r.err());
    });

    let accuracy_canvas = NodeRef::<Canvas>::new();
    let accuracy_error = RwSignal::new(None::<String>);
    // Changes once per run, not with every step's loss scale.
    let most_epochs =
        Memo::new(move |_| stats.with(|v| v.iter().map(|c| c.epochs).max().unwrap_or(1)));
    Effect::new(move |_| {
        let rows = epoch_rows.get();
        let epochs = most_epochs.get();
        let Some(c) = accuracy_canvas.get() else {
            return;
        };
        let peers = peer_runs.get();
        let mut series: Vec<Series> = Vec::new();
        for (p, e) in rows {
            let point = (e.epoch as f64, e.test_accuracy * 100.0);
            match series.iter_mut().find(|s| s.name == p.as_str()) {
                Some(s) => s.points.push(point),
                None => series.push(Series {
                    name: p.as_str().into(),
                    color: color_of(p),
                    points: vec![point],
                }),
            }
        }
        if peers.is_empty() {
            // Without PyTorch the chart is drawn as before (and as a reopened run draws it).
            let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
            let _ = c.set_attribute("data-series", &names.join(";"));
            c.set_height(260);
            accuracy_error.set(charts::accuracy_chart(c, &series, epochs).err());
            return;
        }
        let mut lines: Vec<StyledSeries> = series
            .into_iter()
            .map(|series| StyledSeries {
                series,
                stroke: Stroke::Solid,
            })
            .collect();
        let epochs = peers.iter().map(|(_, n)| *n).fold(epochs, usize::max);
        lines.extend(duel_table::peer_lines(
            peers.iter().map(|(run, _)| run),
            |e| e.test_accuracy * 100.0,
        ));
        // Room for the legend's lines (one row each, low in the chart: the accuracies are high).
        c.set_height((170 + 20 * lines.len()).max(260) as u32);
        let chart = EpochLines {
            title: "Test accuracy after each epoch (PyTorch: eager dashed, CUDA graph dotted)",
            y_desc: "accuracy (%)",
            lines: &lines,
            epochs,
            y_range: Some((0.0, 100.0)),
            legend: SeriesLabelPosition::LowerRight,
        };
        accuracy_error.set(charts::epoch_lines(c, &chart).err());
    });
    // With PyTorch: the training loss per epoch, ours solid and PyTorch's dashed (PyTorch
    // reports each epoch's mean loss, not the per-step curve the loss chart draws).
    let peer_loss_canvas = NodeRef::<Canvas>::new();
    let peer_loss_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let rows = epoch_rows.get();
        let peers = peer_runs.get();
        let Some(c) = peer_loss_canvas.get() else {
            return;
        };
        if peers.is_empty() {
            peer_loss_error.set(None);
            return;
        }
        let mut lines: Vec<StyledSeries> = Vec::new();
        for (p, e) in rows {
            let point = (e.epoch as f64, e.train_loss);
            match lines.iter_mut().find(|l| l.series.name == p.as_str()) {
                Some(l) => l.series.points.push(point),
                None => lines.push(StyledSeries {
                    series: Series {
                        name: p.as_str().into(),
                        color: color_of(p),
                        points: vec![point],
                    },
                    stroke: Stroke::Solid,
                }),
            }
        }
        let epochs = peers
            .iter()
            .map(|(_, n)| *n)
            .fold(most_epochs.get_untracked(), usize::max);
        lines.extend(duel_table::peer_lines(
            peers.iter().map(|(run, _)| run),
            |e| e.train_loss,
        ));
        c.set_height((200 + 20 * lines.len()).max(300) as u32);
        // Headroom over the highest loss for the legend (upper right: the losses fall).
        let hi = lines
            .iter()
            .flat_map(|l| l.series.points.iter().map(|p| p.1))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let y_range = (hi > 0.0).then_some((0.0, hi * (1.3 + 0.12 * lines.len() as f64)));
        let chart = EpochLines {
            title: "Training loss, mean of each epoch (PyTorch: eager dashed, CUDA graph dotted)",
            y_desc: "loss",
            lines: &lines,
            epochs,
            y_range,
            legend: SeriesLabelPosition::UpperRight,
        };
        peer_loss_error.set(charts::epoch_lines(c, &chart).err());
    });
    let telemetry_strip = move || {
        let list = stats.get();
        (!list.is_empty()).then(|| {
            let (n, cpu) = (train_images.get(), cpu_chosen.get());
            let cards = list
                .into_iter()
                .map(|c| contestant_card(c, n, cpu))
                .collect_view();
            view! { <section id="telemetry-strip">{cards}</section> }
        })
    };

    view! {
        <canvas id="loss-chart" node_ref=canvas width="760" height="320"
            style:display=move || if curves.get().is_empty() { "none" } else { "block" }></canvas>
        {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
        <LossScaleChart prefix="" traces=curves runs=runs/>
        <Show when=move || live.with(Option::is_some)>
            <TelemetryStrip sample=live id="live-telemetry"/>
        </Show>
        {telemetry_strip}
        <canvas id="accuracy-chart" node_ref=accuracy_canvas width="760" height="260"
            style:display=move || if epoch_rows.with(Vec::is_empty) { "none" } else { "block" }></canvas>
        {move || accuracy_error.get().map(|e| view! { <p class="error">{e}</p> })}
        <canvas id="pytorch-loss-chart" node_ref=peer_loss_canvas width="760" height="300"
            style:display=move || if peer_runs.with(Vec::is_empty) { "none" } else { "block" }></canvas>
        {move || peer_loss_error.get().map(|e| view! { <p class="error">{e}</p> })}
    }
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

/// The Act II page.
#[component]
pub fn DuelPage() -> impl IntoView {
    let precisions = RwSignal::new(vec![Precision::Fp32, Precision::Fp16]);
    let datasets: RwSignal<Vec<DatasetSummary>> = RwSignal::new(Vec::new());
    let dataset = RwSignal::new("mnist-sample".to_string());
    // The whole training set, two epochs: epoch 1 is the warm-up (module loading, the
    // instrumented and synchronised steps, the gradient histograms), epoch 2 is timed.
    let epochs = RwSignal::new("2".to_string());
    let batch = RwSignal::new("128".to_string());
    let train_limit = RwSignal::new(String::new());
    let backend = RwSignal::new("auto".to_string());
    let activation = RwSignal::new(Activation::Relu);
    let fp8_scaling = RwSignal::new(showdown_core::fp8::Fp8Scaling::Delayed);
    let running = RwSignal::new(false);
    let progress = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let report = RwSignal::new(None::<DuelReport>);
    // Where the run history keeps the finished duel: its ID, or why it could not be saved.
    let saved = RwSignal::new(None::<Result<String, String>>);
    // Each contestant's step events: its loss curve and loss scale.
    let curves: RwSignal<Vec<Trace>> = RwSignal::new(Vec::new());
    // The runs finished so far in the running duel (the story's panels fill from them).
    let finished_runs: RwSignal<Vec<RunReport>> = RwSignal::new(Vec::new());
    let runs = Memo::new(move |_| {
        report.with(|r| match r {
            Some(r) => r.runs.clone(),
            None => finished_runs.get(),
        })
    });
    let epoch_rows: RwSignal<Vec<(Precision, EpochReport)>> = RwSignal::new(Vec::new());
    // Bumped after each finished duel (the service saved it): the run history reads again.
    let history_refresh = RwSignal::new(0u32);
    let export_error = RwSignal::new(None::<String>);
    let stats: RwSignal<Vec<ContestantStats>> = RwSignal::new(Vec::new());
    // Training images per epoch of the running duel (for samples/s before a run's report).
    let train_images = RwSignal::new(None::<usize>);
    let cpu_chosen = RwSignal::new(false);
    // The latest NVML reading of the running duel (`Event::Telemetry`, about 5 Hz on a GPU).
    let live = RwSignal::new(None::<TelemetrySample>);
    // What a batch larger than the training set means, said when the duel starts.
    let batch_info = RwSignal::new(None::<String>);
    // The asked batch of the running duel.
    let asked_batch = RwSignal::new(0usize);
    // What became of a duel a reload interrupted.
    let reload_note = RwSignal::new(None::<(AfterReload, String)>);
    check_after_reload(reload_note, history_refresh);
    // The PyTorch peer as the service finds it (asked when the page opens), the option, and
    // the running duel's PyTorch runs (each with the epochs it trains) and notes.
    let peer_status = LocalResource::new(|| async {
        bridge::call(PeerStatusRequest {})
            .await
            .map_err(|e| e.message)
    });
    let with_pytorch = RwSignal::new(false);
    let peer_runs: RwSignal<Vec<(PeerDuelRun, usize)>> = RwSignal::new(Vec::new());
    let peer_notes: RwSignal<Vec<String>> = RwSignal::new(Vec::new());
    let d = Duel {
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
        error,
        report,
        saved,
        curves,
        finished_runs,
        runs,
        epoch_rows,
        history_refresh,
        stats,
        train_images,
        cpu_chosen,
        live,
        batch_info,
        asked_batch,
        reload_note,
        peer_status,
        with_pytorch,
        peer_runs,
        peer_notes,
    };

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
                    crate::download::download_canvas_png("loss-chart", "precision-showdown-loss.png")
                        .err()
                        .map(|e| format!("PNG export failed: {}", e.message)),
                )>"Export PNG"</button>
            <span class="muted">" the loss chart as an image"</span>
        </p>
        {move || export_error.get().map(|e| view! { <p class="error">{e}</p> })}
        <crate::pages::run_history::RunHistory refresh=history_refresh/>
    }
}
