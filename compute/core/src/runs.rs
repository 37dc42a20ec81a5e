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
use crate::origin::Origin;
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
    /// Where the run was made ([`Origin`]); from before runs were stamped, only its device
    /// and date (never this machine).
    #[serde(default)]
    pub origin: Origin,
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
                        crate::origin::saved_words(&f.engine)
                    )
                })
            }),
            origin: Origin::of(
                report.stamp.as_ref(),
                &report.backend,
                &report.device,
                saved_at,
            ),
        }
    }

    /// The run's whole configuration ([`RunConfig`]).
    pub fn config(&self) -> RunConfig {
        RunConfig {
            dataset: self.dataset.clone(),
            train_images: self.train_images,
            test_images: self.test_images,
            backend: self.backend.clone(),
            device: self.device.clone(),
            precisions: self.precisions.clone(),
            activation: self.activation,
            batch: self.batch,
            effective_batch: self.effective_batch,
            epochs: self.epochs,
            threads: self.threads,
            seed: self.seed,
            lr: self.lr,
            dropout: self.dropout,
            fp8_scaling: self.fp8_scaling,
            pytorch: self.pytorch,
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
            && self.origin.group_key() == other.origin.group_key()
            && self.fp8_scaling == other.fp8_scaling
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

/// A duel's whole configuration: every setting it ran with, for the history, the verdict
/// and the CSV ([`RunConfig::settings`] is the one list all three print).
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// The data set's name.
    pub dataset: String,
    /// Training images used (the train limit, when one was set).
    pub train_images: usize,
    /// Test images used.
    pub test_images: usize,
    /// `cpu` or `cuda`.
    pub backend: String,
    /// The device in words.
    pub device: String,
    /// The contestants, in order.
    pub precisions: Vec<Precision>,
    /// The activation.
    pub activation: Activation,
    /// The batch asked for.
    pub batch: usize,
    /// The images a step held.
    pub effective_batch: usize,
    /// Epochs per contestant.
    pub epochs: usize,
    /// CPU threads.
    pub threads: usize,
    /// The seed.
    pub seed: u64,
    /// Adam's learning rate.
    pub lr: f32,
    /// Dropout probability.
    pub dropout: f32,
    /// FP8's scaling recipe, when FP8 ran.
    pub fp8_scaling: Option<crate::fp8::Fp8Scaling>,
    /// Whether PyTorch ran beside it.
    pub pytorch: bool,
}

impl RunConfig {
    /// Every setting as (CSV column, value in words), in one order: what the history, the
    /// verdict and the CSV show.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("dataset", self.dataset.clone()),
            ("train_images", self.train_images.to_string()),
            ("test_images", self.test_images.to_string()),
            ("backend", self.backend.clone()),
            ("device", self.device.clone()),
            ("activation", self.activation.name().to_string()),
            ("batch", self.batch.to_string()),
            ("effective_batch", self.effective_batch.to_string()),
            ("epochs", self.epochs.to_string()),
            ("threads", self.threads.to_string()),
            ("seed", self.seed.to_string()),
            ("lr", self.lr.to_string()),
            ("dropout", self.dropout.to_string()),
            (
                "precisions",
                self.precisions
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            (
                "fp8_recipe",
                self.fp8_scaling
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_default(),
            ),
            (
                "pytorch",
                if self.pytorch { "yes" } else { "no" }.to_string(),
            ),
        ]
    }

    /// The configuration in one line (the effective batch, when smaller, in brackets:
    /// `batch 100000 (effective 256)`): `mnist-sample, 4,000 train / 2,000 test images · ReLU ·
    /// batch 128 · 3 epochs · 1 thread · seed 0 · lr 0.001 · dropout 0.5 · FP8 delayed
    /// scaling · with PyTorch` (the FP8 recipe only when FP8 ran).
    pub fn summary(&self) -> String {
        let mut parts = vec![
            format!(
                "{}, {} train / {} test images",
                self.dataset,
                crate::format::thousands(self.train_images as u64),
                crate::format::thousands(self.test_images as u64)
            ),
            self.activation.label().to_string(),
            if self.effective_batch > 0 && self.effective_batch < self.batch {
                format!("batch {} (effective {})", self.batch, self.effective_batch)
            } else {
                format!("batch {}", self.batch)
            },
            format!(
                "{} epoch{}",
                self.epochs,
                if self.epochs == 1 { "" } else { "s" }
            ),
            format!(
                "{} thread{}",
                self.threads,
                if self.threads == 1 { "" } else { "s" }
            ),
            format!("seed {}", self.seed),
            format!("lr {}", self.lr),
            format!("dropout {}", self.dropout),
        ];
        if let Some(s) = self.fp8_scaling {
            parts.push(format!("FP8 {} scaling", s.as_str()));
        }
        if self.pytorch {
            parts.push("with PyTorch".into());
        }
        parts.join(" · ")
    }

    /// The CSV columns of [`RunConfig::settings`].
    pub fn csv_columns(&self) -> Vec<&'static str> {
        self.settings().into_iter().map(|(k, _)| k).collect()
    }

    /// The CSV values of [`RunConfig::settings`], in [`RunConfig::csv_columns`]' order.
    pub fn csv_values(&self) -> Vec<String> {
        self.settings().into_iter().map(|(_, v)| v).collect()
    }
}

/// The caption line an exported chart of saved run `id` carries: `Run ID · DEVICE ·
/// DATA SET (N train images) · batch B · DATE UTC`.
pub fn chart_caption(id: &str, saved_at: u64, report: &DuelReport) -> String {
    format!(
        "Run {id} · {} · {} ({} train images) · {} · {}",
        report.device,
        report.dataset.name,
        crate::format::thousands(report.dataset.train as u64),
        report.batch_label(),
        crate::format::utc_date_time(saved_at)
    )
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

/// The first columns of [`duel_csv`]: the epoch's figures, then the run's configuration as
/// it was before the whole configuration was exported (the same on each of its rows); the
/// rest of the header follows ([`csv_header`]).
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

/// The columns after the configuration: who trained the row (`ours` or `pytorch`), the
/// variant in words, the device it ran on, and the run's origin.
pub const CSV_ORIGIN: [&str; 9] = [
    "source",
    "variant",
    "ran_on",
    "run_id",
    "date",
    "machine",
    "compute_capability",
    "driver",
    "build",
];

/// The epoch's figures: the columns before the configuration.
const CSV_FIGURES: usize = 10;

/// The whole header of [`duel_csv`]: the epoch's figures, the configuration
/// ([`RunConfig::csv_columns`]), then [`CSV_ORIGIN`].
pub fn csv_header(config: &RunConfig) -> Vec<&'static str> {
    let mut h: Vec<&'static str> = CSV_HEADER[..CSV_FIGURES].to_vec();
    h.extend(config.csv_columns());
    h.extend(CSV_ORIGIN);
    h
}

/// `report` as CSV, with no run ID or date: [`run_csv`] of an unsaved report.
pub fn duel_csv(report: &DuelReport) -> String {
    run_csv("", None, report)
}

/// Saved run `id` (saved at `saved_at`, Unix seconds) as CSV: a header ([`csv_header`]), then
/// one row per contestant per epoch, then PyTorch's rows when it ran beside the duel (source
/// `pytorch`, its variant in words, the device it ran on). The samples per second are the
/// epoch's own (training images over its time); the peak memory is the contestant's and the
/// configuration and origin the duel's (the same on each of its rows); a figure that is not
/// a number or not measured (a skipped step's loss, PyTorch's loss scale) is an empty cell.
pub fn run_csv(id: &str, saved_at: Option<u64>, report: &DuelReport) -> String {
    // Writing to memory cannot fail; should the csv crate ever report an error, the text
    // says so instead of panicking.
    write_csv(id, saved_at, report)
        .unwrap_or_else(|e| format!("# the CSV could not be written: {e}\n"))
}

fn write_csv(id: &str, saved_at: Option<u64>, report: &DuelReport) -> Result<String, csv::Error> {
    let num = |v: f64| {
        if v.is_finite() {
            v.to_string()
        } else {
            String::new()
        }
    };
    let summary = RunSummary::of(id, saved_at.unwrap_or_default(), report);
    let config = summary.config();
    let origin = &summary.origin;
    let train = report.dataset.train;
    let samples = |ms: f64| {
        if ms > 0.0 {
            train as f64 / (ms / 1e3)
        } else {
            f64::NAN
        }
    };
    let origin_cells = |source: &str, variant: &str, ran_on: &str| {
        vec![
            source.to_string(),
            variant.to_string(),
            ran_on.to_string(),
            id.to_string(),
            saved_at
                .map(crate::format::utc_date_time)
                .unwrap_or_default(),
            origin
                .machine
                .as_ref()
                .map(|m| m.host.clone())
                .unwrap_or_default(),
            origin.compute_capability.clone().unwrap_or_default(),
            origin.driver.clone().unwrap_or_default(),
            origin.build.as_ref().map(|b| b.words()).unwrap_or_default(),
        ]
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(csv_header(&config))?;
    for run in &report.runs {
        for e in &run.epochs {
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
                num(samples(e.ms)),
            ];
            row.extend(config.csv_values());
            row.extend(origin_cells("ours", "", &report.device));
            w.write_record(&row)?;
        }
    }
    if let Some(peer) = &report.peer {
        let ran_on = peer.device.clone().unwrap_or_default();
        for run in &peer.runs {
            for e in &run.epochs {
                let mut row = vec![
                    run.precision.as_str().to_string(),
                    e.epoch.to_string(),
                    num(e.train_loss),
                    String::new(),
                    num(e.test_accuracy),
                    num(e.ms),
                    run.peak_memory_bytes
                        .map(|b| b.to_string())
                        .unwrap_or_default(),
                    String::new(),
                    String::new(),
                    num(samples(e.ms)),
                ];
                row.extend(config.csv_values());
                row.extend(origin_cells("pytorch", &run.label, &ran_on));
                w.write_record(&row)?;
            }
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

pub use crate::format::{utc_date, utc_date_time, utc_parts};

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
            stamp: None,
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
/// [`crate::stats::MIN_RUNS`] runs of the same duel.
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
        crate::stats::MIN_RUNS
    )
}

#[cfg(test)]
mod tests;
