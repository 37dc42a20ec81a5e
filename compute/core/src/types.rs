//! Types shared by the engine, every door and the UI: precisions, duel configuration and
//! the reports a duel produces.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use crate::error::ComputeError;
pub use crate::precision::{BackendChoice, Precision};
pub use crate::stats::{epoch_spread, median_after_warmup, timed_epoch_count};

/// Everything that defines a duel. Every field has a default; an unknown one is refused, so
/// that a misspelled limit (`train_limt`) is named instead of starting a full default duel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DuelConfig {
    /// Backend selection.
    pub backend: BackendChoice,
    /// Data set name (`mnist-sample`, `fashion-mnist`, `mnist`) or `dir` with `data_dir`.
    pub dataset: String,
    /// Folder holding the four standard IDX files (overrides the data set's own location).
    pub data_dir: Option<String>,
    /// Contestants, run one after another (each once).
    #[serde(deserialize_with = "crate::validate::unique")]
    pub precisions: Vec<Precision>,
    /// Epochs per contestant (≥ 1).
    pub epochs: usize,
    /// Mini-batch size (≥ 1).
    pub batch: usize,
    /// Adam learning rate (a positive finite number).
    #[serde(deserialize_with = "crate::validate::positive_f32")]
    pub lr: f32,
    /// Seed of the initial weights, shuffles and dropout masks.
    pub seed: u64,
    /// Train on the first N training images only.
    pub train_limit: Option<usize>,
    /// Evaluate on the first N test images only.
    pub test_limit: Option<usize>,
    /// Dropout probability (0.5 in the lab CNN; 0 turns it off for exact comparisons).
    #[serde(deserialize_with = "crate::validate::finite_f32")]
    pub dropout: f32,
    /// The activation after each convolution (the CNN variant; both backends train all three).
    pub activation: crate::model::Activation,
    /// CPU threads (None: all cores).
    pub threads: Option<usize>,
    /// GPU ordinal for the CUDA backend.
    pub device: usize,
    /// Also train the same network in PyTorch (the peer interpreter's `torch`), on the same
    /// images and settings, after our contestants: its rows join the report
    /// ([`DuelReport::peer`]). On the GPU when ours ran there and PyTorch sees CUDA, else on
    /// the CPU.
    pub pytorch: bool,
    /// How FP8's per-tensor scales are chosen (the `fp8` contestant): `delayed` (from each
    /// tensor's amax history, Transformer Engine's default) or `current` (its own amax).
    pub fp8_scaling: crate::fp8::Fp8Scaling,
}

impl Default for DuelConfig {
    fn default() -> Self {
        DuelConfig {
            backend: BackendChoice::Auto,
            dataset: "mnist-sample".into(),
            data_dir: None,
            precisions: vec![Precision::Fp32, Precision::Fp16],
            epochs: 1,
            batch: 128,
            lr: 1e-3,
            seed: 0,
            train_limit: None,
            test_limit: None,
            dropout: 0.5,
            activation: crate::model::Activation::Relu,
            threads: None,
            device: 0,
            pytorch: false,
            fp8_scaling: crate::fp8::Fp8Scaling::Delayed,
        }
    }
}

impl DuelConfig {
    /// Checks every field, naming the first bad one.
    pub fn validate(&self) -> Result<(), ComputeError> {
        if self.precisions.is_empty() {
            return Err(ComputeError::bad_arg(
                "--precisions",
                "",
                "name at least one precision",
            ));
        }
        crate::validate::check_unique("--precisions", &self.precisions)?;
        if self.epochs == 0 || self.epochs > crate::bounds::MAX_EPOCHS {
            return Err(ComputeError::bad_arg(
                "--epochs",
                self.epochs,
                format!("must be between 1 and {}", crate::bounds::MAX_EPOCHS),
            ));
        }
        if self.batch == 0 || self.batch > 1 << 24 {
            return Err(ComputeError::bad_arg(
                "--batch",
                self.batch,
                "must be between 1 and 16777216",
            ));
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(ComputeError::bad_arg(
                "--lr",
                self.lr,
                "must be a positive finite number",
            ));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(ComputeError::bad_arg(
                "--dropout",
                self.dropout,
                "must be in [0, 1)",
            ));
        }
        if self.train_limit == Some(0) {
            return Err(ComputeError::bad_arg(
                "--train-limit",
                0,
                "must be at least 1",
            ));
        }
        if self.test_limit == Some(0) {
            return Err(ComputeError::bad_arg(
                "--test-limit",
                0,
                "must be at least 1",
            ));
        }
        if self.threads == Some(0) {
            return Err(ComputeError::bad_arg("--threads", 0, "must be at least 1"));
        }
        Ok(())
    }
}

/// A data set as the UI lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetSummary {
    /// Name used in `--dataset`.
    pub name: String,
    /// Training images.
    pub train: usize,
    /// Test images.
    pub test: usize,
    /// Image height × width.
    pub image: [usize; 2],
    /// Where it comes from (`embedded`, a folder path, ...): for a downloaded data set, the
    /// folder it is read from, or the one a download would write to while it is missing.
    pub source: String,
    /// Whether it can be used now.
    pub available: bool,
    /// Provenance, licence, or how to get it.
    pub note: String,
    /// The folder its files are read from, when it is available from one (a downloaded data
    /// set is looked for where the CLI and the desktop app each put it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// One of a data set's two splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataSplit {
    /// The training images.
    Train,
    /// The test images (the default: what the duel evaluates on).
    #[default]
    Test,
}

impl DataSplit {
    /// `train` or `test`, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            DataSplit::Train => "train",
            DataSplit::Test => "test",
        }
    }
}

impl fmt::Display for DataSplit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DataSplit {
    type Err = ComputeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "train" => Ok(DataSplit::Train),
            "test" | "t10k" => Ok(DataSplit::Test),
            _ => Err(ComputeError::bad_arg("split", s, "expected train or test")),
        }
    }
}

/// The most images one [`DatasetSamples`] page holds.
pub const MAX_SAMPLES_PER_PAGE: usize = 256;

/// Fashion-MNIST's ten classes, by label.
pub const FASHION_MNIST_CLASSES: [&str; 10] = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
];

/// MNIST's ten classes, by label: the digits.
pub const DIGIT_CLASSES: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

/// The names of labels 0–9 in data set `dataset`: Fashion-MNIST's garments, digits otherwise.
pub fn class_names(dataset: &str) -> [&'static str; 10] {
    if dataset == "fashion-mnist" {
        FASHION_MNIST_CLASSES
    } else {
        DIGIT_CLASSES
    }
}

/// A page of real images from a data set with their labels: what Act I draws as a grid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetSamples {
    /// The data set's name.
    pub dataset: String,
    /// The split the images come from.
    pub split: DataSplit,
    /// Image width, pixels.
    pub width: usize,
    /// Image height, pixels.
    pub height: usize,
    /// Images in the split.
    pub total: usize,
    /// Index of the first image of the page in the split.
    pub offset: usize,
    /// The label (0–9) of each image on the page.
    pub labels: Vec<u8>,
    /// The names of labels 0–9 (digits, or Fashion-MNIST's garments).
    pub class_names: Vec<String>,
    /// `labels.len() × height × width` grey bytes (0 background, 255 ink), row-major, in
    /// standard padded base64.
    pub pixels_base64: String,
}

impl DatasetSamples {
    /// Images on the page.
    pub fn count(&self) -> usize {
        self.labels.len()
    }

    /// The grey bytes of the page, checked to hold exactly `count × height × width` bytes.
    pub fn pixels(&self) -> Result<Vec<u8>, ComputeError> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(self.pixels_base64.trim())
            .map_err(|e| ComputeError::bad_arg("pixels_base64", "…", format!("not base64: {e}")))?;
        let want = self.count() * self.height * self.width;
        if bytes.len() != want {
            return Err(ComputeError::bad_arg(
                "pixels_base64",
                "…",
                format!(
                    "holds {} bytes, {} images of {}×{} need {want}",
                    bytes.len(),
                    self.count(),
                    self.height,
                    self.width
                ),
            ));
        }
        Ok(bytes)
    }

    /// The name of image `i`'s class (`?` past the page or for an unnamed label).
    pub fn class_of(&self, i: usize) -> &str {
        self.labels
            .get(i)
            .and_then(|&l| self.class_names.get(l as usize))
            .map(String::as_str)
            .unwrap_or("?")
    }
}

/// One epoch of one contestant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochReport {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Training time of the epoch (evaluation excluded), milliseconds.
    pub ms: f64,
    /// Mean training loss over the epoch's applied steps (NaN, `null` in JSON, when the loss
    /// scaler skipped every step).
    #[serde(with = "nan_as_null")]
    pub train_loss: f64,
    /// Test accuracy after the epoch.
    pub test_accuracy: f64,
    /// Test loss after the epoch (NaN, `null` in JSON, when the weights diverged).
    #[serde(with = "nan_as_null")]
    pub test_loss: f64,
    /// Steps skipped by the loss scaler in this epoch.
    pub skipped_steps: usize,
    /// Loss scale at the end of the epoch (1 without a scaler).
    pub loss_scale: f64,
}

/// An `f64` that may be NaN or infinite: JSON has no such numbers, so they travel as `null`
/// and come back as NaN (serde_json would write `null` and then refuse to read it).
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

/// One contestant's whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// The precision trained.
    pub precision: Precision,
    /// Per-epoch results.
    pub epochs: Vec<EpochReport>,
    /// Median epoch time of epochs 2.. (all epochs when there is only one), ms.
    pub epoch_ms_median: f64,
    /// Training images per second at the median epoch time.
    pub samples_per_s: f64,
    /// Peak bytes held by the trainer (data set, parameters, optimizer state, activations,
    /// gradients, workspaces), from the backend's own allocation accounting.
    pub peak_memory_bytes: u64,
    /// Test accuracy after the last epoch.
    pub test_accuracy: f64,
    /// Steps skipped by the loss scaler over the whole run.
    pub skipped_steps: usize,
    /// Loss scale at the end (1 without a scaler).
    pub final_loss_scale: f64,
    /// Optimizer steps taken (skipped ones excluded).
    pub steps: usize,
    /// GPU telemetry sampled during the run (empty on the CPU backend).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    /// FP8 runs: the recipe, which engine ran it, and every cast tensor's scales and counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp8: Option<crate::fp8::Fp8Report>,
    /// Per-step times from the instrumented pass (epoch 1, synchronised after every step;
    /// `None` for one-epoch runs, whose only epoch is the timed one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_times: Option<StepTimes>,
    /// The trained model (master weights at the end of the run), for Act I; absent in reports
    /// from before models were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::model::ModelWeights>,
    /// Gradient histograms of sampled steps (each epoch's last step; in the instrumented first
    /// epoch, a few more), for Act II's mixed-precision figure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grad_samples: Vec<crate::grads::GradSample>,
    /// The loss scale over the run: every step of the instrumented epoch where the scale
    /// changed or the step was skipped, and each epoch's end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scale_history: Vec<crate::grads::ScalePoint>,
    /// [`RunReport::peak_memory_bytes`] split by what held it at the peak (sums to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<crate::memory::MemorySplit>,
    /// The training-loss curve: a point at each of [`curve_steps`]' steps of every epoch (of
    /// [`CURVE_POINTS_MAX`] epochs evenly spread in a longer run; the
    /// same steps for every contestant of a duel); absent in reports from before curves were
    /// kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve: Vec<CurvePoint>,
}

impl RunReport {
    /// The epochs the median epoch time is taken over: epochs 2.. when there are several
    /// (epoch 1 is the warm-up), the only one otherwise.
    pub fn timed_epochs(&self) -> &[EpochReport] {
        if self.epochs.len() > 1 {
            &self.epochs[1..]
        } else {
            &self.epochs
        }
    }

    /// The slowest timed epoch over the fastest (see [`RunReport::timed_epochs`]); `None` with
    /// fewer than two timed epochs or a time that is not positive and finite.
    pub fn epoch_spread(&self) -> Option<f64> {
        epoch_spread(self.timed_epochs().iter().map(|e| e.ms))
    }
}

pub use crate::bounds::{CURVE_POINTS_MAX, CURVE_POINTS_PER_EPOCH};

/// The steps (1-based, within each epoch) at which a contestant records a point of its loss
/// curve: evenly spread over the epoch, the last one its last step. It depends only on the
/// steps per epoch and the epochs, which every contestant of a duel shares (same data, same
/// batch), so every contestant's curve has its points at the same steps.
pub fn curve_steps(steps_per_epoch: usize, epochs: usize) -> Vec<usize> {
    if steps_per_epoch == 0 {
        return Vec::new();
    }
    let per_epoch = (CURVE_POINTS_MAX / epochs.max(1))
        .clamp(1, CURVE_POINTS_PER_EPOCH)
        .min(steps_per_epoch);
    (1..=per_epoch)
        .map(|k| (k * steps_per_epoch).div_ceil(per_epoch))
        .collect()
}

/// [`curve_steps`] for a trainer that reads the loss from its device every `read_every` steps
/// (a GPU: every read waits for the device, so the curve adds none): the steps it reads at
/// (multiples of `read_every`, and the epoch's last), thinned evenly to the same number of
/// points [`curve_steps`] would give. The same for every contestant of a duel, as they share
/// steps per epoch; `read_every` of 1 is [`curve_steps`] itself.
pub fn curve_steps_read_every(
    steps_per_epoch: usize,
    epochs: usize,
    read_every: usize,
) -> Vec<usize> {
    if read_every <= 1 {
        return curve_steps(steps_per_epoch, epochs);
    }
    let mut reads: Vec<usize> = (1..=steps_per_epoch)
        .filter(|s| s % read_every == 0 || *s == steps_per_epoch)
        .collect();
    let want = curve_steps(steps_per_epoch, epochs).len().max(1);
    if reads.len() > want {
        let n = reads.len();
        reads = (1..=want)
            .map(|k| reads[(k * n).div_ceil(want) - 1])
            .collect();
    }
    reads
}

/// One point of a contestant's training-loss curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// 1-based epoch.
    pub epoch: usize,
    /// 1-based step within the epoch (one of [`curve_steps`]).
    pub step: usize,
    /// 1-based step over the whole run.
    pub global_step: usize,
    /// Where on the epoch axis: `epoch - 1 + step / steps per epoch`.
    pub x: f64,
    /// Mean training loss of the applied steps since the previous point (NaN, `null` in JSON,
    /// when the loss scaler skipped them all).
    #[serde(with = "nan_as_null")]
    pub loss: f64,
    /// Loss scale after the step (1 without a scaler).
    pub loss_scale: f64,
    /// Steps the loss scaler skipped so far in the run.
    pub skipped: usize,
}

/// The batch a step really holds: `batch`, or all `train_images` when the batch is larger
/// (the trainer never pads a batch).
pub fn effective_batch(batch: usize, train_images: usize) -> usize {
    batch.min(train_images).max(1)
}

/// `batch 128`, or `batch 60000 (8000 images: the most a batch holds with 8000 training and
/// 2000 test images)`: the batch the trainer's buffers (and [`crate::memory::estimate`]) are
/// sized for, which is at most the larger split.
pub fn memory_batch_label(batch: usize, n_train: usize, n_test: usize) -> String {
    let most = n_train.max(n_test);
    if batch > most {
        format!(
            "batch {batch} ({most} images: the most a batch holds with {n_train} training and \
             {n_test} test images)"
        )
    } else {
        format!("batch {batch}")
    }
}

/// What a batch larger than the training set means, in words; `None` when it fits.
pub fn batch_note(batch: usize, train_images: usize) -> Option<String> {
    (batch > train_images).then(|| {
        format!(
            "batch {batch} is larger than the {train_images} training images: each epoch is one \
             step of {} images (the effective batch)",
            effective_batch(batch, train_images)
        )
    })
}

/// Wall time of single training steps, each followed by a device synchronisation, from the
/// instrumented (first) epoch. The epoch times exclude this epoch from their median, so the
/// synchronisations cost nothing there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTimes {
    /// The epoch instrumented (1-based).
    pub epoch: usize,
    /// Steps timed.
    pub steps: usize,
    /// Median step time, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// The slowest step (the first one carries module loading and warm-up), ms.
    pub max_ms: f64,
}

impl StepTimes {
    /// Percentiles (nearest rank) of `ms`; `None` when empty.
    pub fn from_samples(epoch: usize, ms: &[f64]) -> Option<Self> {
        if ms.is_empty() {
            return None;
        }
        let mut v = ms.to_vec();
        v.sort_by(f64::total_cmp);
        let rank = |p: f64| v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Some(StepTimes {
            epoch,
            steps: v.len(),
            p50_ms: rank(50.0),
            p90_ms: rank(90.0),
            p99_ms: rank(99.0),
            max_ms: v[v.len() - 1],
        })
    }
}

/// The data set a duel used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetUsed {
    /// Data set name.
    pub name: String,
    /// Training images used.
    pub train: usize,
    /// Test images used.
    pub test: usize,
}

/// The configuration echoed in a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigUsed {
    /// Epochs per contestant.
    pub epochs: usize,
    /// Batch size.
    pub batch: usize,
    /// Seed.
    pub seed: u64,
    /// Learning rate.
    pub lr: f32,
    /// Dropout probability.
    pub dropout: f32,
    /// The activation after each convolution (absent in reports from before the switch: ReLU).
    #[serde(default)]
    pub activation: crate::model::Activation,
    /// Threads (CPU backend).
    pub threads: usize,
}

/// A finished duel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuelReport {
    /// `cpu` or `cuda`.
    pub backend: String,
    /// The device in words (CPU model or GPU name).
    pub device: String,
    /// Why this backend was chosen (e.g. why `auto` fell back to the CPU).
    pub backend_reason: String,
    /// Data set used.
    pub dataset: DatasetUsed,
    /// Configuration used.
    pub config: ConfigUsed,
    /// One run per contestant, in the order asked.
    pub runs: Vec<RunReport>,
    /// PyTorch's runs beside ours, when the duel asked for them ([`DuelConfig::pytorch`]);
    /// absent from reports of duels without PyTorch and from before it could run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<crate::pytorch_duel::PeerDuel>,
    /// Where the duel ran (the machine, its build and driver), stamped by the engine; absent
    /// in reports from before results were stamped ([`Origin`](crate::origin::Origin) then
    /// has no machine and is never this machine's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<crate::origin::Stamp>,
}

impl DuelReport {
    /// The images a training step held: the batch, or the whole training set when the batch
    /// is larger.
    pub fn effective_batch(&self) -> usize {
        effective_batch(self.config.batch, self.dataset.train)
    }

    /// `batch 128`, or `batch 100000 (effective 1024: the whole training set per step)`.
    pub fn batch_label(&self) -> String {
        batch_label(self.config.batch, self.dataset.train)
    }

    /// The settings the duel ran with, in words: `mnist-sample: 1024 training / 500 test
    /// images; ReLU, 2 epoch(s), batch 128, 2 thread(s), seed 0` (the effective batch when it
    /// differs): what the result, the history and the verdict say of a run.
    pub fn settings_line(&self) -> String {
        format!(
            "{}: {} training / {} test images; {}, {} epoch(s), {}, {} thread(s), seed {}",
            self.dataset.name,
            self.dataset.train,
            self.dataset.test,
            self.config.activation.label(),
            self.config.epochs,
            self.batch_label(),
            self.config.threads,
            self.config.seed
        )
    }
}

/// `batch 128`, or `batch 100000 (effective 1024: the whole training set per step)` when the
/// batch is larger than the `train_images`.
pub fn batch_label(batch: usize, train_images: usize) -> String {
    if batch > train_images {
        format!(
            "batch {batch} (effective {}: the whole training set per step)",
            effective_batch(batch, train_images)
        )
    } else {
        format!("batch {batch}")
    }
}

/// Progress of a running duel, streamed to the UI at a bounded rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DuelEvent {
    /// A contestant starts.
    RunStarted {
        /// The contestant.
        precision: Precision,
        /// Steps per epoch.
        steps_per_epoch: usize,
        /// Epochs.
        epochs: usize,
    },
    /// Training steps progressed.
    Step {
        /// The contestant.
        precision: Precision,
        /// 1-based epoch.
        epoch: usize,
        /// Steps done in this epoch.
        step: usize,
        /// Steps per epoch.
        steps: usize,
        /// Loss of the latest step.
        loss: f64,
        /// Current loss scale.
        loss_scale: f64,
        /// Steps the loss scaler skipped so far in this run (absent from older streams).
        #[serde(default)]
        skipped: usize,
    },
    /// An epoch ended (after evaluation).
    Epoch {
        /// The contestant.
        precision: Precision,
        /// The epoch's report.
        report: EpochReport,
    },
    /// A point of a contestant's loss curve (at one of [`curve_steps`], the same steps for
    /// every contestant): never thinned, unlike [`DuelEvent::Step`].
    Curve {
        /// The contestant.
        precision: Precision,
        /// The point.
        point: CurvePoint,
    },
    /// A contestant finished.
    RunFinished {
        /// The run's report (boxed: with its model and histograms it is the largest event).
        report: Box<RunReport>,
    },
    /// PyTorch's side ([`DuelConfig::pytorch`]): a variant started, ended an epoch or
    /// finished; `run` is the variant so far (its epochs, and at the end its memory).
    Peer {
        /// The variant so far.
        run: crate::pytorch_duel::PeerDuelRun,
        /// Epochs it trains.
        epochs: usize,
    },
    /// PyTorch's side: where it runs (the first line of the script) or a sentence about it
    /// (a variant skipped, the script failed).
    PeerNote {
        /// The sentence.
        text: String,
    },
}

/// Whether a piece of GPU software is usable, and what was found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// Usable.
    pub ok: bool,
    /// Version or the reason it is not usable.
    pub detail: String,
}

/// One GPU as the doctor sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// Device ordinal.
    pub index: usize,
    /// Marketing name.
    pub name: String,
    /// Compute capability, e.g. "9.0".
    pub compute_capability: String,
    /// Total memory in bytes.
    pub memory_bytes: u64,
    /// Streaming multiprocessors.
    pub sms: u32,
}

/// The machine as the doctor sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorReport {
    /// Program version.
    pub version: String,
    /// CPU model.
    pub cpu: String,
    /// Logical cores available.
    pub cores: usize,
    /// SIMD features the CPU backend benefits from (avx2, fma, f16c, ...).
    pub cpu_features: Vec<String>,
    /// Whether this build contains the CUDA backend.
    pub cuda_built: bool,
    /// The CUDA driver (libcuda).
    pub driver: Probe,
    /// NVRTC (runtime compiler: the Kernel Reveal's facts, rebuilding a kernel family; not
    /// needed to train where the embedded kernels fit the GPU).
    pub nvrtc: Probe,
    /// NVML (telemetry).
    pub nvml: Probe,
    /// Where the training kernels come from on GPU 0: `embedded cubin sm_90`, `embedded PTX
    /// compute_90 (JIT)` or `NVRTC compute_75`, and why; not `ok` when none can be had.
    pub kernels: Probe,
    /// GPUs found.
    pub gpus: Vec<GpuInfo>,
    /// The backend `auto` picks: `cpu` or `cuda`.
    pub auto_backend: String,
    /// Why.
    pub auto_reason: String,
    /// This machine (its host name and hashed ID), absent from a service too old to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::origin::MachineId>,
}

impl DoctorReport {
    /// The machine the service runs on, for [`Origin::is_here`](crate::origin::Origin::is_here).
    pub fn here(&self) -> crate::origin::Here {
        crate::origin::Here {
            machine: self.machine.clone(),
            gpus: self.gpus.iter().map(|g| g.name.clone()).collect(),
        }
    }
}

/// One NVML reading of the GPU during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySample {
    /// Milliseconds since the run started.
    pub t_ms: f64,
    /// Percent of the last sample period in which a kernel ran.
    pub gpu_util_pct: u32,
    /// Percent of the last sample period in which device memory was read or written.
    pub mem_util_pct: u32,
    /// SM clock, MHz.
    pub sm_clock_mhz: u32,
    /// Device memory used by all processes, bytes.
    pub memory_used_bytes: u64,
    /// Board power, watts.
    pub power_w: f64,
    /// GPU temperature, °C.
    pub temperature_c: u32,
}

/// What NVML saw during a run, returned with the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Telemetry {
    /// Samples, at about 5 Hz.
    pub samples: Vec<TelemetrySample>,
    /// The largest device memory NVML attributed to this process (includes the CUDA context
    /// and the driver's own allocations, unlike `peak_memory_bytes`).
    pub process_memory_peak_bytes: Option<u64>,
    /// Why there are no samples, when there are none.
    pub note: Option<String>,
}

impl Telemetry {
    /// What a saved GPU run's samples say, in words with units and their count: `SM clock
    /// 1.98 GHz (median), power 148.9 W median / 160.2 W max, temperature 44 °C max, over 5
    /// samples`; `None` without samples.
    pub fn summary(&self) -> Option<String> {
        let s = &self.samples;
        if s.is_empty() {
            return None;
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            let n = v.len();
            if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            }
        };
        let clock = median(s.iter().map(|x| f64::from(x.sm_clock_mhz) / 1e3).collect());
        let power: Vec<f64> = s
            .iter()
            .map(|x| x.power_w)
            .filter(|p| p.is_finite())
            .collect();
        let power_max = power.iter().copied().fold(f64::NAN, f64::max);
        let power = if power.is_empty() {
            f64::NAN
        } else {
            median(power)
        };
        let temp = s.iter().map(|x| x.temperature_c).max().unwrap_or(0);
        Some(format!(
            "SM clock {clock:.2} GHz (median), power {power:.1} W median / {power_max:.1} W max, \
             temperature {temp} °C max, over {} sample{}",
            s.len(),
            if s.len() == 1 { "" } else { "s" }
        ))
    }
}

#[cfg(test)]
mod tests;
