//! The lab's requests: the kernel bench, the convolution ladder, inference, the crossover, the
//! step anatomy, saved lab runs and the PyTorch peer's interpreter.

use serde::{Deserialize, Serialize};

use super::strict;

// Named in the doc links only.
#[cfg(doc)]
use super::{Removed, Request};

fn default_lab_rows() -> usize {
    8192
}

fn default_lab_cols() -> usize {
    4096
}

fn default_kernel_reps() -> usize {
    100
}

fn default_kernel_ops() -> Vec<crate::bench::kernels::Op> {
    crate::bench::kernels::Op::ALL.to_vec()
}

fn default_kernel_dtypes() -> Vec<crate::bench::kernels::LabDtype> {
    vec![
        crate::bench::kernels::LabDtype::F32,
        crate::bench::kernels::LabDtype::F16,
    ]
}

fn default_ladder_batch() -> usize {
    1024
}

fn default_ladder_reps() -> usize {
    20
}

fn default_cpu_batch() -> usize {
    8
}

fn default_dataset() -> String {
    "mnist-sample".into()
}

fn default_infer_activations() -> Vec<crate::model::Activation> {
    vec![
        crate::model::Activation::Relu,
        crate::model::Activation::Gelu,
        crate::model::Activation::Swish,
    ]
}

fn default_infer_batches() -> Vec<usize> {
    vec![1, 32, 128, 1024]
}

fn default_one() -> usize {
    1
}

fn default_infer_train_limit() -> Option<usize> {
    Some(2048)
}

fn default_budget_ms() -> f64 {
    300.0
}

fn default_max_reps() -> usize {
    2000
}

fn default_anatomy_precisions() -> Vec<crate::types::Precision> {
    vec![crate::types::Precision::Fp32, crate::types::Precision::Fp16]
}

fn default_batch() -> usize {
    128
}

fn default_anatomy_steps() -> usize {
    20
}

/// [`Request::KernelBench`]: the activation and norm kernels on this GPU; answers a
/// [`Saved`](crate::lab::Saved) [`KernelsBench`](crate::bench::kernels::KernelsBench).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelBenchRequest {
    /// Rows of the timed matrix (default 8192).
    #[serde(default = "default_lab_rows")]
    pub rows: usize,
    /// Columns of the timed matrix (default 4096).
    #[serde(default = "default_lab_cols")]
    pub cols: usize,
    /// The ops (default all; each once).
    #[serde(default = "default_kernel_ops", deserialize_with = "strict::unique")]
    pub ops: Vec<crate::bench::kernels::Op>,
    /// The dtypes (default f32 and f16; each once).
    #[serde(default = "default_kernel_dtypes", deserialize_with = "strict::unique")]
    pub dtypes: Vec<crate::bench::kernels::LabDtype>,
    /// Timed repetitions per kernel (default 100).
    #[serde(default = "default_kernel_reps")]
    pub reps: usize,
    /// Run PyTorch eager and torch.compile beside ours when a CUDA-enabled torch is found.
    #[serde(default)]
    pub peers: bool,
}

impl Default for KernelBenchRequest {
    fn default() -> Self {
        KernelBenchRequest {
            rows: default_lab_rows(),
            cols: default_lab_cols(),
            ops: default_kernel_ops(),
            dtypes: default_kernel_dtypes(),
            reps: default_kernel_reps(),
            peers: false,
        }
    }
}

/// [`Request::ConvLadder`]: the convolution ladder; answers a [`Saved`](crate::lab::Saved)
/// [`ConvBench`](crate::bench::conv::ConvBench).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConvLadderRequest {
    /// Images per GPU pass (default 1024).
    #[serde(default = "default_ladder_batch")]
    pub batch: usize,
    /// Layers (`lab_conv1`, `lab_conv2`, `lenet_c1`, `lenet_c3`; default all; each once).
    #[serde(default, deserialize_with = "strict::unique")]
    pub layers: Vec<String>,
    /// Timed passes at most per GPU row (default 20).
    #[serde(default = "default_ladder_reps")]
    pub reps: usize,
    /// Images for the CPU rows (default 8).
    #[serde(default = "default_cpu_batch")]
    pub cpu_batch: usize,
    /// `auto` (the GPU rows where there is a GPU, always the CPU rows), `cpu` (the CPU rows
    /// only) or `cuda` (an error without a GPU).
    #[serde(default)]
    pub backend: crate::types::BackendChoice,
    /// Data set whose test images feed the image layers (default `mnist-sample`).
    #[serde(default = "default_dataset")]
    pub dataset: String,
    /// Folder holding the data set's four standard IDX files (overrides the data set's own
    /// location, as [`DuelConfig::data_dir`](crate::types::DuelConfig::data_dir) does).
    #[serde(default)]
    pub data_dir: Option<String>,
    /// Run cuDNN through PyTorch beside ours when a CUDA-enabled torch is found.
    #[serde(default)]
    pub peers: bool,
}

impl Default for ConvLadderRequest {
    fn default() -> Self {
        ConvLadderRequest {
            batch: default_ladder_batch(),
            layers: Vec::new(),
            reps: default_ladder_reps(),
            cpu_batch: default_cpu_batch(),
            backend: crate::types::BackendChoice::Auto,
            dataset: default_dataset(),
            data_dir: None,
            peers: false,
        }
    }
}

/// [`Request::InferBench`]: inference latency of the CNN variants on this GPU; answers a
/// [`Saved`](crate::lab::Saved) [`InferenceReport`](crate::inference::InferenceReport).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferBenchRequest {
    /// Variants (default relu, gelu, swish; each once).
    #[serde(
        default = "default_infer_activations",
        deserialize_with = "strict::unique"
    )]
    pub activations: Vec<crate::model::Activation>,
    /// Batch sizes (default 1, 32, 128, 1024; each once; capped to the test split).
    #[serde(default = "default_infer_batches", deserialize_with = "strict::unique")]
    pub batches: Vec<usize>,
    /// Data set (default `mnist-sample`).
    #[serde(default = "default_dataset")]
    pub dataset: String,
    /// Epochs of the quick CPU train (default 1).
    #[serde(default = "default_one")]
    pub epochs: usize,
    /// Training images of the quick CPU train (default 2048; `null` for the whole split).
    #[serde(default = "default_infer_train_limit")]
    pub train_limit: Option<usize>,
    /// Time budget per row, ms (default 300; positive, at most 60,000).
    #[serde(
        default = "default_budget_ms",
        deserialize_with = "strict::positive_f64"
    )]
    pub budget_ms: f64,
    /// Timed passes at most per row (default 2000).
    #[serde(default = "default_max_reps")]
    pub max_reps: usize,
    /// Run PyTorch on the same weights beside ours when a CUDA-enabled torch is found.
    #[serde(default)]
    pub peers: bool,
    /// Batches at which the peer also times `torch.compile` (slow to compile; each once).
    #[serde(default, deserialize_with = "strict::unique")]
    pub compile_batches: Vec<usize>,
    /// Seed of the weights, shuffles and dropout of the quick train (default 0).
    #[serde(default)]
    pub seed: u64,
}

impl Default for InferBenchRequest {
    fn default() -> Self {
        InferBenchRequest {
            activations: default_infer_activations(),
            batches: default_infer_batches(),
            dataset: default_dataset(),
            epochs: 1,
            train_limit: default_infer_train_limit(),
            budget_ms: default_budget_ms(),
            max_reps: default_max_reps(),
            peers: false,
            compile_batches: Vec::new(),
            seed: 0,
        }
    }
}

fn default_crossover_precisions() -> Vec<crate::types::Precision> {
    crate::bench::crossover::ORDER.to_vec()
}

fn default_true() -> bool {
    true
}

/// The crossover's sizes: each once ([`strict::unique`]) and each within
/// [`MIN_SIZE`](crate::bench::crossover::MIN_SIZE)..=[`MAX_SIZE`](crate::bench::crossover::MAX_SIZE).
fn crossover_sizes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<usize>, D::Error> {
    let sizes: Vec<usize> = strict::unique(d)?;
    match CrossoverRequest::size_out_of_range(&sizes, crate::bench::crossover::MAX_SIZE) {
        Some(why) => Err(serde::de::Error::custom(why)),
        None => Ok(sizes),
    }
}

/// The crossover's precisions: each once and at least one.
fn crossover_precisions<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<crate::types::Precision>, D::Error> {
    let list: Vec<crate::types::Precision> = strict::unique(d)?;
    if list.is_empty() {
        return Err(serde::de::Error::custom(CROSSOVER_NO_PRECISION));
    }
    Ok(list)
}

/// Why an empty precision list is refused.
const CROSSOVER_NO_PRECISION: &str = "name at least one precision (fp32, tf32, bf16, fp16, fp8)";

/// [`Request::Crossover`]: the precision crossover; answers a [`Saved`](crate::lab::Saved)
/// [`CrossoverReport`](crate::bench::crossover::CrossoverReport).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossoverRequest {
    /// Square sizes `N` (each once, 16 to 16384, at most 4096 on the CPU); empty for the
    /// backend's defaults ([`GPU_SIZES`](crate::bench::crossover::GPU_SIZES),
    /// [`CPU_SIZES`](crate::bench::crossover::CPU_SIZES)).
    #[serde(default, deserialize_with = "crossover_sizes")]
    pub sizes: Vec<usize>,
    /// The precisions (default all five; each once; at least one). A precision the device
    /// cannot run is reported skipped with the reason.
    #[serde(
        default = "default_crossover_precisions",
        deserialize_with = "crossover_precisions"
    )]
    pub precisions: Vec<crate::types::Precision>,
    /// `auto` (the GPU when usable, else the CPU, saying why), `cpu` or `cuda`.
    #[serde(default)]
    pub backend: crate::types::BackendChoice,
    /// Run PyTorch (`torch.matmul`, `torch._scaled_mm`) at the same sizes when a
    /// CUDA-enabled torch is found.
    #[serde(default)]
    pub include_peer: bool,
    /// Time the lab CNN's own GEMMs at batch 128 too (default true).
    #[serde(default = "default_true")]
    pub include_cnn: bool,
    /// On a GPU, time the lab CNN's whole training step per precision at batches 128, 512,
    /// 2048 and 8192 too, from the step anatomy (default true; the CPU leaves it out, saying
    /// why).
    #[serde(default = "default_true")]
    pub include_steps: bool,
}

impl Default for CrossoverRequest {
    fn default() -> Self {
        CrossoverRequest {
            sizes: Vec::new(),
            precisions: default_crossover_precisions(),
            backend: crate::types::BackendChoice::Auto,
            include_peer: false,
            include_cnn: true,
            include_steps: true,
        }
    }
}

impl CrossoverRequest {
    /// Why a size of `sizes` is refused (below the minimum or above `max`), or `None`.
    pub fn size_out_of_range(sizes: &[usize], max: usize) -> Option<String> {
        use crate::bench::crossover::MIN_SIZE;
        sizes
            .iter()
            .find(|&&n| !(MIN_SIZE..=max).contains(&n))
            .map(|n| format!("{n} is out of range: each size must be {MIN_SIZE} to {max}"))
    }

    /// Checks the fields for a sweep on the CPU (`cpu`, sizes at most
    /// [`MAX_CPU_SIZE`](crate::bench::crossover::MAX_CPU_SIZE)) or a GPU, naming the first
    /// that is wrong: a request built in code (the CLI) meets the parser's rules here.
    pub fn validate(&self, cpu: bool) -> Result<(), crate::error::ComputeError> {
        use crate::bench::crossover::{MAX_CPU_SIZE, MAX_SIZE};
        use crate::error::ComputeError;
        strict::check_unique("sizes", &self.sizes)?;
        strict::check_unique("precisions", &self.precisions)?;
        if self.precisions.is_empty() {
            return Err(ComputeError::bad_arg(
                "precisions",
                "[]",
                CROSSOVER_NO_PRECISION,
            ));
        }
        let max = if cpu { MAX_CPU_SIZE } else { MAX_SIZE };
        if let Some(why) = Self::size_out_of_range(&self.sizes, max) {
            let on = if cpu { " on the CPU" } else { "" };
            let bad = self
                .sizes
                .iter()
                .find(|&&n| !(crate::bench::crossover::MIN_SIZE..=max).contains(&n))
                .map_or(String::new(), |n| n.to_string());
            return Err(ComputeError::bad_arg("sizes", bad, format!("{why}{on}")));
        }
        Ok(())
    }

    /// The sizes to run: the request's, ascending, or the backend's defaults.
    pub fn sizes_for(&self, cpu: bool) -> Vec<usize> {
        let mut v = if self.sizes.is_empty() {
            if cpu {
                crate::bench::crossover::CPU_SIZES.to_vec()
            } else {
                crate::bench::crossover::GPU_SIZES.to_vec()
            }
        } else {
            self.sizes.clone()
        };
        v.sort_unstable();
        v
    }
}

/// [`Request::StepAnatomy`]: one training step replayed with every launch timed on its own,
/// per precision; answers a [`Saved`](crate::lab::Saved)
/// [`StepAnatomy`](crate::bench::anatomy::StepAnatomy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepAnatomyRequest {
    /// The contestants (default fp32 and fp16; each once; the CPU backend runs fp32 and
    /// fp16).
    #[serde(
        default = "default_anatomy_precisions",
        deserialize_with = "strict::unique"
    )]
    pub precisions: Vec<crate::types::Precision>,
    /// `auto`, `cpu` or `cuda`.
    #[serde(default)]
    pub backend: crate::types::BackendChoice,
    /// Data set the batches come from (default `mnist-sample`).
    #[serde(default = "default_dataset")]
    pub dataset: String,
    /// Folder holding the data set's four standard IDX files (overrides the data set's own
    /// location, as [`DuelConfig::data_dir`](crate::types::DuelConfig::data_dir) does).
    #[serde(default)]
    pub data_dir: Option<String>,
    /// Images per step (default 128).
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// Steps timed per contestant; each launch's figures are medians over them (default 20).
    #[serde(default = "default_anatomy_steps")]
    pub steps: usize,
    /// The CNN variant (default relu).
    #[serde(default)]
    pub activation: crate::model::Activation,
}

impl Default for StepAnatomyRequest {
    fn default() -> Self {
        StepAnatomyRequest {
            precisions: default_anatomy_precisions(),
            backend: crate::types::BackendChoice::Auto,
            dataset: default_dataset(),
            data_dir: None,
            batch: default_batch(),
            steps: default_anatomy_steps(),
            activation: crate::model::Activation::default(),
        }
    }
}

/// [`Request::LabRun`]: a saved lab run; answers its [`LabRun`](crate::lab::LabRun).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabRunRequest {
    /// The run's ID.
    pub id: String,
}

/// [`Request::LabRunRemove`]: removes a saved lab run; answers [`Removed`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabRunRemoveRequest {
    /// The run's ID.
    pub id: String,
}

/// [`Request::LabRunCsv`]: a saved lab run as CSV; answers a
/// [`CsvExport`](crate::runs::CsvExport).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabRunCsvRequest {
    /// The run's ID.
    pub id: String,
}

/// [`Request::PeerSetPython`]: the Python interpreter for the PyTorch peer (a path or a name
/// on PATH); `null` goes back to `$SHOWDOWN_PYTHON` or `python3`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerSetPythonRequest {
    /// The interpreter, or `None`.
    pub python: Option<String>,
}
