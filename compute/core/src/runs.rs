//! Run history: the duels the service finished, kept so that they survive restarts of the app
//! and of the compute sidecar, and exported as JSON or CSV.
//!
//! The pure part (always compiled, also for the UI) holds what the history looks like on the
//! wire: [`RunSummary`] (one line of the history), [`RunList`] and the CSV export
//! [`duel_csv`]. The engine (`compute::runs::RunStore`) keeps one JSON file per run:
//!
//! ```text
//! ROOT/runs/20250314-093015-123-00k3.json   {"saved_at": 1741944615, "report": DuelReport}
//! ```
//!
//! `ROOT` is the same data folder as the Nsight Compute imports' library
//! (`$SHOWDOWN_DATA_HOME`, else the user's data folder).

use serde::{Deserialize, Serialize};

use crate::model::Activation;
use crate::types::{batch_label, epoch_spread, BackendChoice, DuelConfig, DuelReport, Precision};

/// The longest run identifier accepted, in characters.
pub const MAX_ID_CHARS: usize = 64;

/// One contestant's headline numbers in a saved run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrecisionResult {
    /// The precision trained.
    pub precision: Precision,
    /// Test accuracy after the last epoch (0..1).
    pub test_accuracy: f64,
    /// Median epoch time, milliseconds (see [`RunReport::epoch_ms_median`](crate::types::RunReport::epoch_ms_median)).
    pub epoch_ms_median: f64,
    /// Peak bytes held by the trainer.
    pub peak_memory_bytes: u64,
    /// The fastest timed epoch (epochs 2.., or the only one), ms.
    #[serde(default)]
    pub epoch_ms_min: f64,
    /// The slowest timed epoch, ms.
    #[serde(default)]
    pub epoch_ms_max: f64,
    /// How many epochs were timed (the median's count).
    #[serde(default)]
    pub timed_epochs: usize,
}

impl PrecisionResult {
    /// The slowest timed epoch over the fastest; `None` with fewer than two timed epochs.
    pub fn epoch_spread(&self) -> Option<f64> {
        if self.timed_epochs < 2 {
            return None;
        }
        epoch_spread([self.epoch_ms_min, self.epoch_ms_max].into_iter())
    }
}

/// One saved duel as the history lists it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run's identifier: a sortable UTC timestamp and a short suffix
    /// (`20250314-093015-123-00k3`).
    pub id: String,
    /// When the run was saved, Unix seconds.
    pub saved_at: u64,
    /// The data set's name.
    pub dataset: String,
    /// Training images used.
    pub train_images: usize,
    /// Test images used.
    pub test_images: usize,
    /// `cpu` or `cuda`.
    pub backend: String,
    /// The device in words (CPU model or GPU name).
    pub device: String,
    /// The contestants, in the order they ran.
    pub precisions: Vec<Precision>,
    /// Epochs per contestant.
    pub epochs: usize,
    /// Each contestant's headline numbers, in the order they ran.
    pub results: Vec<PrecisionResult>,
    /// FP32's median epoch time over FP16's (above 1: FP16 was faster), when both ran and
    /// both times are positive.
    pub speedup_fp16_vs_fp32: Option<f64>,
    /// The contestants whose trained model was kept with the run (Act I can open them).
    #[serde(default)]
    pub models: Vec<Precision>,
    /// The activation after each convolution (the CNN variant).
    #[serde(default)]
    pub activation: Activation,
    /// The batch size asked for.
    #[serde(default)]
    pub batch: usize,
    /// The images a training step held: [`RunSummary::batch`], or the whole training set
    /// when the batch is larger.
    #[serde(default)]
    pub effective_batch: usize,
    /// CPU threads.
    #[serde(default)]
    pub threads: usize,
    /// The seed.
    #[serde(default)]
    pub seed: u64,
    /// Adam's learning rate.
    #[serde(default)]
    pub lr: f32,
    /// The dropout probability.
    #[serde(default)]
    pub dropout: f32,
    /// Whether the run kept its per-step loss curves.
    #[serde(default)]
    pub has_curves: bool,
    /// Whether PyTorch was asked to run beside it ([`DuelConfig::pytorch`]).
    #[serde(default)]
    pub pytorch: bool,
    /// What the comparison with PyTorch showed, in words
    /// ([`comparison_sentence`]), when PyTorch ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pytorch_sentence: Option<String>,
    /// FP8's scaling, when FP8 ran ([`DuelConfig::fp8_scaling`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp8_scaling: Option<crate::fp8::Fp8Scaling>,
    /// What FP8 did, in words, when it ran: how it ran and its saturated and flushed values
    /// ([`fp8_sentence`](crate::fp8::fp8_sentence)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp8_sentence: Option<String>,
}

impl RunSummary {
    /// The summary of `report`, saved as `id` at `saved_at` (Unix seconds).
    pub fn of(id: &str, saved_at: u64, report: &DuelReport) -> Self {
        RunSummary {
            id: id.to_string(),
            saved_at,
            dataset: report.dataset.name.clone(),
            train_images: report.dataset.train,
            test_images: report.dataset.test,
            backend: report.backend.clone(),
            device: report.device.clone(),
            precisions: report.runs.iter().map(|r| r.precision).collect(),
            epochs: report.config.epochs,
            results: report
                .runs
                .iter()
                .map(|r| {
                    let timed = r.timed_epochs();
                    let ms = timed.iter().map(|e| e.ms).filter(|m| m.is_finite());
                    PrecisionResult {
                        precision: r.precision,
                        test_accuracy: r.test_accuracy,
                        epoch_ms_median: r.epoch_ms_median,
                        peak_memory_bytes: r.peak_memory_bytes,
                        epoch_ms_min: finite_or_zero(ms.clone().fold(f64::NAN, f64::min)),
                        epoch_ms_max: finite_or_zero(ms.fold(f64::NAN, f64::max)),
                        timed_epochs: timed.len(),
                    }
                })
                .collect(),
            speedup_fp16_vs_fp32: speedup_fp16_vs_fp32(report),
            models: report
                .runs
                .iter()
                .filter(|r| r.model.is_some())
                .map(|r| r.precision)
                .collect(),
            activation: report.config.activation,
            batch: report.config.batch,
            effective_batch: report.effective_batch(),
            threads: report.config.threads,
            seed: report.config.seed,
            lr: report.config.lr,
            dropout: report.config.dropout,
            has_curves: report.runs.iter().any(|r| !r.curve.is_empty()),
            pytorch: report.peer.is_some(),
            pytorch_sentence: comparison_sentence(report),
            fp8_scaling: report
                .runs
                .iter()
                .find_map(|r| r.fp8.as_ref().map(|f| f.recipe.scaling)),
            fp8_sentence: report.runs.iter().find_map(|r| {
                r.fp8.as_ref().map(|f| {
                    let elsewhere = if f.device != report.device {
                        format!(" It ran on {}, not compared with the others.", f.device)
                    } else {
                        String::new()
                    };
                    format!(
                        "{} It ran {}.{elsewhere}",
                        crate::fp8::fp8_sentence(f),
                        f.engine
                    )
                })
            }),
        }
    }

    /// The training settings in words: `GELU, batch 128, 2 epochs, 4 threads, seed 0`
    /// (`batch 100000 (effective 1024: …)` when the batch is larger than the training set).
    pub fn settings(&self) -> String {
        format!(
            "{}, {}, {} epoch{}, {} thread{}, seed {}",
            self.activation.label(),
            batch_label(self.batch, self.train_images),
            self.epochs,
            if self.epochs == 1 { "" } else { "s" },
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.seed
        )
    }

    /// The data and the machine in words: `mnist-sample (1024 train / 500 test images) on cpu
    /// (AMD EPYC)`.
    pub fn setup(&self) -> String {
        format!(
            "{} ({} train / {} test images) on {} ({})",
            self.dataset, self.train_images, self.test_images, self.backend, self.device
        )
    }

    /// Whether `other` ran the same duel: same data (and sizes), backend, device,
    /// contestants and every training setting; only then are their times comparable.
    pub fn same_setup(&self, other: &RunSummary) -> bool {
        self.dataset == other.dataset
            && self.train_images == other.train_images
            && self.test_images == other.test_images
            && self.backend == other.backend
            && self.device == other.device
            && self.precisions == other.precisions
            && self.epochs == other.epochs
            && self.activation == other.activation
            && self.batch == other.batch
            && self.threads == other.threads
            && self.seed == other.seed
            && self.lr.to_bits() == other.lr.to_bits()
            && self.dropout.to_bits() == other.dropout.to_bits()
    }

    /// The duel configuration that runs this duel again: the same contestants, data set and
    /// image counts, backend, activation, batch, epochs, threads, seed, learning rate and
    /// dropout.
    pub fn repeat_config(&self) -> DuelConfig {
        DuelConfig {
            backend: match self.backend.as_str() {
                "cuda" => BackendChoice::Cuda,
                "cpu" => BackendChoice::Cpu,
                _ => BackendChoice::Auto,
            },
            dataset: self.dataset.clone(),
            data_dir: None,
            // Each once (a run saved before repeats were refused may name one twice).
            precisions: self.precisions.iter().fold(Vec::new(), |mut once, p| {
                if !once.contains(p) {
                    once.push(*p);
                }
                once
            }),
            epochs: self.epochs.max(1),
            batch: self.batch.max(1),
            lr: if self.lr.is_finite() && self.lr > 0.0 {
                self.lr
            } else {
                DuelConfig::default().lr
            },
            seed: self.seed,
            train_limit: Some(self.train_images.max(1)),
            test_limit: Some(self.test_images.max(1)),
            dropout: if (0.0..1.0).contains(&self.dropout) {
                self.dropout
            } else {
                DuelConfig::default().dropout
            },
            activation: self.activation,
            threads: (self.backend == "cpu" && self.threads > 0).then_some(self.threads),
            device: 0,
            pytorch: self.pytorch,
            fp8_scaling: self.fp8_scaling.unwrap_or_default(),
        }
    }

    /// The contestants whose timed epochs vary by more than [`EPOCH_SPREAD_LIMIT`] (slowest
    /// over fastest), with that ratio.
    pub fn unsteady(&self) -> Vec<(Precision, f64)> {
        self.results
            .iter()
            .filter_map(|r| {
                r.epoch_spread()
                    .filter(|x| *x > EPOCH_SPREAD_LIMIT)
                    .map(|x| (r.precision, x))
            })
            .collect()
    }

    /// The contestant's results, if it ran.
    pub fn result(&self, precision: Precision) -> Option<&PrecisionResult> {
        self.results.iter().find(|r| r.precision == precision)
    }
}

/// `v`, or 0 when it is not finite (JSON has no NaN: a summary must travel).
fn finite_or_zero(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// A run is flagged as unsteady when its slowest timed epoch took more than this many times
/// its fastest (another program's load, thermal throttling, a clock change).
pub const EPOCH_SPREAD_LIMIT: f64 = 1.25;

/// FP32's median epoch time over FP16's in `report` (above 1: FP16 was faster); `None` unless
/// both ran with positive, finite times.
pub fn speedup_fp16_vs_fp32(report: &DuelReport) -> Option<f64> {
    let ms = |p: Precision| {
        report
            .runs
            .iter()
            .find(|r| r.precision == p)
            .map(|r| r.epoch_ms_median)
            .filter(|ms| ms.is_finite() && *ms > 0.0)
    };
    Some(ms(Precision::Fp32)? / ms(Precision::Fp16)?)
}

/// The run history, newest first.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunList {
    /// The saved runs that could be read, newest first.
    pub runs: Vec<RunSummary>,
    /// One note per history file that could not be read (damaged or unreadable), naming it;
    /// the other runs are listed all the same.
    pub skipped: Vec<String>,
}

/// Whether `id` can name a saved run: 1 to [`MAX_ID_CHARS`] characters, each a digit, a
/// lower-case ASCII letter or `-` (an identifier becomes a file name, so no `.`, `/` or `\`).
pub fn is_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || b == b'-')
}

/// The file name a CSV export of run `id` gets.
pub fn csv_file_name(id: &str) -> String {
    format!("precision-showdown-run-{id}.csv")
}

/// The file name a JSON export of run `id` gets.
pub fn json_file_name(id: &str) -> String {
    format!("precision-showdown-run-{id}.json")
}

/// A saved run exported as CSV: the answer to
/// [`Request::RunCsv`](crate::protocol::Request::RunCsv).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CsvExport {
    /// The name the file gets ([`csv_file_name`]).
    pub file_name: String,
    /// The CSV text ([`duel_csv`]).
    pub csv: String,
}

/// The header of [`duel_csv`]: the epoch's figures, then the run's configuration (the same on
/// each of its rows).
pub const CSV_HEADER: [&str; 22] = [
    "precision",
    "epoch",
    "train_loss",
    "test_loss",
    "test_accuracy",
    "epoch_ms",
    "peak_memory_bytes",
    "loss_scale",
    "skipped_steps",
    "samples_per_s",
    "dataset",
    "train_images",
    "test_images",
    "backend",
    "device",
    "activation",
    "batch",
    "effective_batch",
    "epochs",
    "threads",
    "seed",
    "lr",
];

/// `report` as CSV: a header ([`CSV_HEADER`]), then one row per contestant per epoch. The
/// samples per second are the epoch's own (training images over its time); the peak memory
/// is the contestant's and the configuration the duel's (the same on each of its rows); a
/// loss that is not a number (every step skipped, or diverged weights) is an empty cell.
pub fn duel_csv(report: &DuelReport) -> String {
    // Writing to memory cannot fail; should the csv crate ever report an error, the text
    // says so instead of panicking.
    write_csv(report).unwrap_or_else(|e| format!("# the CSV could not be written: {e}\n"))
}

fn write_csv(report: &DuelReport) -> Result<String, csv::Error> {
    let num = |v: f64| {
        if v.is_finite() {
            v.to_string()
        } else {
            String::new()
        }
    };
    let c = &report.config;
    let train = report.dataset.train;
    let config = [
        report.dataset.name.clone(),
        train.to_string(),
        report.dataset.test.to_string(),
        report.backend.clone(),
        report.device.clone(),
        c.activation.name().to_string(),
        c.batch.to_string(),
        report.effective_batch().to_string(),
        c.epochs.to_string(),
        c.threads.to_string(),
        c.seed.to_string(),
        c.lr.to_string(),
    ];
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_HEADER)?;
    for run in &report.runs {
        for e in &run.epochs {
            let samples_per_s = if e.ms > 0.0 {
                train as f64 / (e.ms / 1e3)
            } else {
                f64::NAN
            };
            let mut row = vec![
                run.precision.as_str().to_string(),
                e.epoch.to_string(),
                num(e.train_loss),
                num(e.test_loss),
                num(e.test_accuracy),
                num(e.ms),
                run.peak_memory_bytes.to_string(),
                num(e.loss_scale),
                e.skipped_steps.to_string(),
                num(samples_per_s),
            ];
            row.extend(config.iter().cloned());
            w.write_record(&row)?;
        }
    }
    let bytes = w
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Whether a job runs on the service: the answer to
/// [`Request::JobStatus`](crate::protocol::Request::JobStatus).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct JobStatus {
    /// The running job's operation (`"duel"`), if one runs.
    pub running: Option<String>,
}

/// The `sessionStorage` key under which Act II remembers that it started a duel (a
/// [`DuelInFlight`] as JSON), so that a reload can say what became of it.
pub const DUEL_IN_FLIGHT_KEY: &str = "showdown.duel_in_flight";

/// What Act II remembers of the duel it started, until the duel's reply arrives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuelInFlight {
    /// When it was started, Unix milliseconds (the page's clock).
    pub started_ms: u64,
    /// The duel in words (`fp32, fp16 on mnist-sample, ReLU, batch 128, 2 epochs`).
    pub what: String,
}

/// What became of a duel that was running when the page was reloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterReload {
    /// A duel still runs on the service: ask again shortly.
    StillRunning,
    /// It finished before the reload and the history kept it (its ID).
    Saved(String),
    /// It stopped without a saved run: the reload cancelled it.
    Cancelled,
}

/// What became of `duel` after a reload, given the service's [`JobStatus`] and its run
/// history: still running while a duel runs; saved when the history holds a run saved since
/// it started (a second of clock slack); else cancelled.
pub fn after_reload(duel: &DuelInFlight, status: &JobStatus, history: &RunList) -> AfterReload {
    if status.running.as_deref() == Some("duel") {
        return AfterReload::StillRunning;
    }
    let since = (duel.started_ms / 1000).saturating_sub(1);
    match history.runs.iter().find(|r| r.saved_at >= since) {
        Some(r) => AfterReload::Saved(r.id.clone()),
        None => AfterReload::Cancelled,
    }
}

impl AfterReload {
    /// The sentence Act II shows about `duel`.
    pub fn sentence(&self, duel: &DuelInFlight) -> String {
        match self {
            AfterReload::StillRunning => format!(
                "The duel started before the reload ({}) is still running on the service; its \
                 live curves cannot be followed from this page. It is saved to the run history \
                 when it finishes — waiting for it…",
                duel.what
            ),
            AfterReload::Saved(id) => format!(
                "The duel started before the reload ({}) finished and was saved to the run \
                 history as {id}.",
                duel.what
            ),
            AfterReload::Cancelled => format!(
                "Your duel ({}) was cancelled by the reload: a duel runs only while the page \
                 that started it is open, and a cancelled duel is not saved. Run it again.",
                duel.what
            ),
        }
    }
}

/// `unix_secs` as a UTC date and time, `2025-03-14 09:30 UTC`.
pub fn utc_date_time(unix_secs: u64) -> String {
    let (y, mo, d, h, mi, _) = utc_parts(unix_secs);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02} UTC")
}

/// `unix_secs` split into UTC (year, month, day, hour, minute, second).
pub fn utc_parts(unix_secs: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    // Howard Hinnant's civil_from_days (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        month,
        day,
        (rem / 3600) as u32,
        (rem / 60 % 60) as u32,
        (rem % 60) as u32,
    )
}

/// Example reports, for tests of every crate that handles reports (and nothing else).
pub mod examples {
    use super::*;
    use crate::types::{curve_steps, ConfigUsed, CurvePoint, DatasetUsed, EpochReport, RunReport};

    /// `r` as JSON text: reports hold NaN losses (never equal to themselves), so tests compare
    /// reports by their JSON.
    pub fn json(r: &DuelReport) -> String {
        serde_json::to_string(r).unwrap_or_default()
    }

    /// `v` as JSON text (for values holding NaN, which is never equal to itself).
    pub fn json_of<T: Serialize>(v: &T) -> String {
        serde_json::to_string(v).unwrap_or_default()
    }

    /// A loss curve at [`curve_steps`] of `epochs` epochs of `steps` steps, the loss falling.
    pub fn curve(steps: usize, epochs: usize, loss_scale: f64) -> Vec<CurvePoint> {
        (1..=epochs)
            .flat_map(|epoch| {
                curve_steps(steps, epochs)
                    .into_iter()
                    .map(move |step| CurvePoint {
                        epoch,
                        step,
                        global_step: (epoch - 1) * steps + step,
                        x: (epoch - 1) as f64 + step as f64 / steps as f64,
                        loss: 2.0 / ((epoch - 1) * steps + step) as f64,
                        loss_scale,
                        skipped: 0,
                    })
            })
            .collect()
    }

    /// A two-contestant report on `device`: fp32 at `fp32_ms`, fp16 at `fp16_ms` per epoch.
    pub fn report(device: &str, fp32_ms: f64, fp16_ms: f64) -> DuelReport {
        let run = |precision, ms: f64, acc: f64, scale: f64| RunReport {
            precision,
            epochs: (1..=2)
                .map(|epoch| EpochReport {
                    epoch,
                    ms,
                    train_loss: if epoch == 1 { f64::NAN } else { 0.25 },
                    test_accuracy: acc,
                    test_loss: 0.3,
                    skipped_steps: 2 - epoch,
                    loss_scale: scale,
                })
                .collect(),
            epoch_ms_median: ms,
            samples_per_s: 1000.0,
            peak_memory_bytes: 12_500_000,
            test_accuracy: acc,
            skipped_steps: 1,
            final_loss_scale: scale,
            steps: 10,
            telemetry: None,
            fp8: None,
            step_times: None,
            model: None,
            grad_samples: Vec::new(),
            scale_history: Vec::new(),
            memory: None,
            curve: curve(5, 2, scale),
        };
        DuelReport {
            backend: "cpu".into(),
            device: device.into(),
            backend_reason: "asked for --backend cpu".into(),
            dataset: DatasetUsed {
                name: "mnist-sample".into(),
                train: 1024,
                test: 500,
            },
            config: ConfigUsed {
                epochs: 2,
                batch: 128,
                seed: 0,
                lr: 1e-3,
                dropout: 0.5,
                activation: crate::model::Activation::Relu,
                threads: 2,
            },
            runs: vec![
                run(Precision::Fp32, fp32_ms, 0.9125, 1.0),
                run(Precision::Fp16, fp16_ms, 0.9075, 32768.0),
            ],
            peer: None,
        }
    }
}

/// What the comparison showed, in one or two sentences (the verdict and the walk say it):
/// per precision our median epoch against PyTorch's fastest variant of that precision, or why
/// PyTorch's rows are missing. `None` when the duel ran without PyTorch.
pub fn comparison_sentence(report: &DuelReport) -> Option<String> {
    let peer = report.peer.as_ref()?;
    if !peer.comparable {
        return Some(format!(
            "{} ran beside this duel, but not where ours ran ({} backend on {}): its times are \
             shown, not compared.",
            peer.where_label(),
            report.backend,
            report.device
        ));
    }
    let mut parts = Vec::new();
    let mut engines = Vec::new();
    for ours in &report.runs {
        if let Some(c) = peer.fastest(ours.precision, ours.epoch_ms_median) {
            if ours.precision.casts_to_fp8() {
                engines.push(fp8_engines(&report.backend, c.peer));
            }
            let how = match c.words().as_str() {
                w if w.starts_with("at the same pace") => format!("{w} as"),
                w => format!("{w} than"),
            };
            parts.push(format!(
                "our {} ({:.1} ms per epoch) ran {how} PyTorch's fastest {} ({}, {:.1} ms)",
                ours.precision,
                ours.epoch_ms_median,
                ours.precision,
                c.peer.mode.label(),
                c.peer.epoch_ms_median()
            ));
        }
    }
    let epochs = report.config.epochs;
    let timed = match epochs {
        0 | 1 => "the only epoch".to_string(),
        2 => "epoch 2 of 2".to_string(),
        n => format!("the median of epochs 2–{n}"),
    };
    let rests_on = format!(
        "{}, {}; times are {timed}",
        report.dataset.name,
        report.batch_label()
    );
    let mut text = if parts.is_empty() {
        format!(
            "PyTorch ran beside this duel ({}) but gave no row to compare",
            peer.where_label()
        )
    } else {
        format!(
            "Beside {} on the same data and settings ({rests_on}), {}",
            peer.where_label(),
            parts.join("; ")
        )
    };
    if let Some(note) = &peer.note {
        text.push_str(&format!(" ({note})"));
    }
    text.push('.');
    for e in engines {
        text.push(' ');
        text.push_str(&e);
    }
    if !parts.is_empty() {
        text.push(' ');
        text.push_str(&one_duel_rule(report, peer));
    }
    Some(text)
}

/// What each side's FP8 computes on, in a sentence: ours rounds to E4M3/E5M2 with a scale per
/// tensor and multiplies on the FP16 tensor cores (a GPU) or in FP32 (the CPU); PyTorch's
/// variant is named by its label (`torch._scaled_mm` on a GPU's FP8 tensor cores).
fn fp8_engines(backend: &str, peer: &crate::pytorch_duel::PeerDuelRun) -> String {
    let ours = if backend.eq_ignore_ascii_case("cpu") {
        "multiplies them in FP32 on the CPU"
    } else {
        "multiplies them on the FP16 tensor cores"
    };
    format!(
        "The FP8 rows compare different engines: our fp8 rounds its convolutions' operands to \
         E4M3/E5M2 with a scale per tensor and {ours}; PyTorch's runs {}.",
        peer.label
    )
}

/// The statistical rule the verdict applies, said of this one duel: each side's median rests
/// on its timed epochs (with their spread), and a speed-up is stated only from
/// [`crate::verdict::MIN_RUNS`] runs of the same duel.
fn one_duel_rule(report: &DuelReport, peer: &crate::pytorch_duel::PeerDuel) -> String {
    let ours: Vec<String> = report
        .runs
        .iter()
        .filter(|r| peer.fastest(r.precision, r.epoch_ms_median).is_some())
        .map(|r| {
            let n = crate::stats::timed_epoch_count(r.epochs.len());
            let spread = crate::stats::epoch_spread(
                r.epochs
                    .iter()
                    .skip(usize::from(r.epochs.len() > 1))
                    .map(|e| e.ms),
            );
            format!(
                "our {} median of {n} epoch{}{}",
                r.precision,
                if n == 1 { "" } else { "s" },
                spread.map_or_else(
                    || ", no spread".to_string(),
                    |x| format!(", spread {x:.2}×")
                )
            )
        })
        .collect();
    let theirs: Vec<String> = peer
        .runs
        .iter()
        .map(|r| format!("PyTorch's {} {}", r.variant, r.rests_on()))
        .collect();
    format!(
        "These ratios rest on one duel ({}; {}); the verdict states a speed-up from {} runs of \
         the same duel.",
        ours.join(", "),
        theirs.join(", "),
        crate::verdict::MIN_RUNS
    )
}

#[cfg(test)]
mod tests;
