//! The CNN variant switch's inference benchmark (`showdown bench infer`): the lab CNN with
//! ReLU, GELU or Swish after each convolution, trained on the CPU backend, then run forward on
//! the GPU (rung-4 tensor-core convolutions + the fused bias/activation/pool and dense kernels of
//! the `cnn_infer` family) at several batch sizes, its logits held against the CPU's. Pure data
//! and arithmetic: the GPU side lives in `cuda::infer`, the table in the CLI.

use serde::{Deserialize, Serialize};

use crate::model::{lab, Activation};

/// Batch sizes of the benchmark unless told otherwise (the "JLR" seed's).
pub const DEFAULT_BATCHES: [usize; 5] = [1, 32, 128, 1024, 10_000];

/// One timed configuration: an implementation, a variant and a batch size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyRow {
    /// What ran (`showdown_fp16_launches`, `showdown_fp16_graph`, `pytorch_eager_fp16`, ...).
    pub implementation: String,
    /// The CNN variant.
    pub activation: Activation,
    /// Images per forward pass.
    pub batch: usize,
    /// Timed passes.
    pub reps: usize,
    /// Median latency of one forward pass, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Images per second at the median.
    pub images_per_s: f64,
}

impl LatencyRow {
    /// A row from timed passes (ms each).
    pub fn from_times(
        implementation: &str,
        activation: Activation,
        batch: usize,
        times: Vec<f64>,
    ) -> Self {
        let reps = times.len();
        let (p50, p90, p99) = percentiles(times);
        LatencyRow {
            implementation: implementation.into(),
            activation,
            batch,
            reps,
            p50_ms: p50,
            p90_ms: p90,
            p99_ms: p99,
            images_per_s: batch as f64 / (p50 * 1e-3),
        }
    }
}

/// Median, 90th and 99th percentile (nearest rank); NaN for no samples.
pub fn percentiles(mut t: Vec<f64>) -> (f64, f64, f64) {
    if t.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    t.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| t[((t.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9), at(0.99))
}

/// How the GPU's FP16 logits compare with the CPU's FP32 logits of the same weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogitCheck {
    /// Test images compared.
    pub images: usize,
    /// Largest |GPU − CPU| over every logit.
    pub max_abs_diff: f64,
    /// Largest logit magnitude (the scale of the difference).
    pub max_abs_logit: f64,
    /// Fraction of images whose predicted class agrees.
    pub argmax_agreement: f64,
    /// Non-finite GPU logits.
    pub non_finite: usize,
    /// Test accuracy of the GPU path.
    pub gpu_accuracy: f64,
    /// Test accuracy of the CPU path.
    pub cpu_accuracy: f64,
    /// Within the bounds: no non-finite logit, agreement ≥ 99 %, max difference ≤ 2 % of the
    /// largest logit (FP16 storage of three activations between FP32 accumulations).
    pub ok: bool,
}

fn argmax(z: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in z.iter().enumerate() {
        if *v > z[best] {
            best = i;
        }
    }
    best
}

/// Compares logits `[n, 10]` of the GPU with the CPU's, and both with the labels.
pub fn compare_logits(gpu: &[f32], cpu: &[f32], labels: &[u8]) -> LogitCheck {
    let n = labels
        .len()
        .min(gpu.len() / lab::CLASSES)
        .min(cpu.len() / lab::CLASSES);
    let (mut max_abs, mut scale, mut agree, mut non_finite, mut gc, mut cc) =
        (0f64, 0f64, 0, 0, 0, 0);
    for i in 0..n {
        let g = &gpu[i * lab::CLASSES..(i + 1) * lab::CLASSES];
        let c = &cpu[i * lab::CLASSES..(i + 1) * lab::CLASSES];
        for (a, b) in g.iter().zip(c) {
            if !a.is_finite() {
                non_finite += 1;
            } else {
                max_abs = max_abs.max((*a as f64 - *b as f64).abs());
            }
            scale = scale.max((*b as f64).abs());
        }
        let (ga, ca) = (argmax(g), argmax(c));
        agree += (ga == ca) as usize;
        gc += (ga == labels[i] as usize) as usize;
        cc += (ca == labels[i] as usize) as usize;
    }
    let frac = |k: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    let agreement = frac(agree);
    LogitCheck {
        images: n,
        max_abs_diff: max_abs,
        max_abs_logit: scale,
        argmax_agreement: agreement,
        non_finite,
        gpu_accuracy: frac(gc),
        cpu_accuracy: frac(cc),
        ok: n > 0 && non_finite == 0 && agreement >= 0.99 && max_abs <= 0.02 * scale.max(1.0),
    }
}

/// One CNN variant: how it was trained, how its GPU inference agrees, how fast it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantReport {
    /// The activation.
    pub activation: Activation,
    /// Training images and epochs (CPU backend, FP32).
    pub train_images: usize,
    /// Epochs trained.
    pub epochs: usize,
    /// Wall-clock seconds of the training.
    pub train_s: f64,
    /// GPU logits against the CPU's on the test split.
    pub check: LogitCheck,
    /// The peer's test accuracy with the same weights (FP16), when it ran.
    pub peer_accuracy: Option<f64>,
    /// Our latency rows, batch by batch.
    pub rows: Vec<LatencyRow>,
}

/// Everything `showdown bench infer` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InferenceReport {
    /// The GPU in words.
    pub device: String,
    /// Data set (test images feed the passes).
    pub dataset: String,
    /// Batch sizes timed.
    pub batches: Vec<usize>,
    /// One entry per variant.
    pub variants: Vec<VariantReport>,
    /// Peer rows (PyTorch, same weights, same call), if any.
    pub peers: Vec<LatencyRow>,
    /// Why the peers are missing, if they are.
    pub peer_failure: Option<String>,
    /// Notes (batches capped to the test split, ...).
    pub notes: Vec<String>,
}

/// Parses `--batches 1,32,...`: each at least 1.
pub fn parse_batches(list: &[usize]) -> Result<Vec<usize>, String> {
    if list.is_empty() {
        return Ok(DEFAULT_BATCHES.to_vec());
    }
    if let Some(b) = list.iter().find(|&&b| b == 0) {
        return Err(format!("batch {b}: every batch must be at least 1"));
    }
    Ok(list.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logits_that_agree_pass_and_a_flipped_image_or_nan_fails() {
        let labels = [3u8, 7];
        let mut cpu = vec![0f32; 20];
        cpu[3] = 5.0;
        cpu[10 + 7] = 4.0;
        let gpu: Vec<f32> = cpu.iter().map(|v| v + 0.01).collect();
        let c = compare_logits(&gpu, &cpu, &labels);
        assert!(c.ok, "{c:?}");
        assert_eq!((c.images, c.gpu_accuracy, c.cpu_accuracy), (2, 1.0, 1.0));
        assert!((c.max_abs_diff - 0.01).abs() < 1e-6);
        let mut flipped = gpu.clone();
        flipped[10] = 9.0;
        let c = compare_logits(&flipped, &cpu, &labels);
        assert!(!c.ok && c.argmax_agreement == 0.5 && c.gpu_accuracy == 0.5);
        let mut nan = gpu;
        nan[4] = f32::NAN;
        let c = compare_logits(&nan, &cpu, &labels);
        assert!(!c.ok && c.non_finite == 1);
        assert!(
            !compare_logits(&[], &[], &[]).ok,
            "nothing compared is not a pass"
        );
    }

    #[test]
    fn rows_take_percentiles_and_throughput() {
        let r = LatencyRow::from_times(
            "x",
            Activation::Gelu,
            100,
            (1..=100).map(|v| v as f64 / 100.0).collect(),
        );
        assert_eq!(
            (r.reps, r.p50_ms, r.p90_ms, r.p99_ms),
            (100, 0.51, 0.9, 0.99)
        );
        assert!((r.images_per_s - 100.0 / 0.51e-3).abs() < 1e-6);
        assert_eq!(parse_batches(&[]).unwrap(), DEFAULT_BATCHES.to_vec());
        assert!(parse_batches(&[4, 0]).unwrap_err().contains("batch 0"));
    }
}
