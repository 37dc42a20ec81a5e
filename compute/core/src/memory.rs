//! Memory, explained: a contestant's peak memory split by what holds it, measured by the
//! backend's allocation accounting, and the same split computed from the model's specification
//! for any batch size (Act II's slider).

use serde::{Deserialize, Serialize};

use crate::model::lab;
use crate::precision::Precision;

/// What an allocation holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryCategory {
    /// The training and test images and labels on the device, and their shuffle order.
    Dataset,
    /// The FP32 master weights.
    MasterWeights,
    /// FP16/BF16 copies of the weights that forward and backward read (mixed precision).
    LowPrecisionCopies,
    /// The parameters' gradients.
    Gradients,
    /// Adam's two moments per parameter (FP32).
    OptimizerState,
    /// One batch's activations, masks and activation gradients.
    Activations,
    /// Everything else: the kernels' scratch (split-K partial sums, …), the loss scaler,
    /// the loss sums and the step cursors.
    Workspace,
}

impl MemoryCategory {
    /// Every category, in the order of a stacked bar.
    pub const ALL: [MemoryCategory; 7] = [
        MemoryCategory::Dataset,
        MemoryCategory::MasterWeights,
        MemoryCategory::LowPrecisionCopies,
        MemoryCategory::Gradients,
        MemoryCategory::OptimizerState,
        MemoryCategory::Activations,
        MemoryCategory::Workspace,
    ];

    /// In words, for a legend.
    pub fn label(self) -> &'static str {
        match self {
            MemoryCategory::Dataset => "data set",
            MemoryCategory::MasterWeights => "master weights (FP32)",
            MemoryCategory::LowPrecisionCopies => "low-precision weight copies",
            MemoryCategory::Gradients => "gradients",
            MemoryCategory::OptimizerState => "optimizer state (Adam m, v)",
            MemoryCategory::Activations => "activations",
            MemoryCategory::Workspace => "workspace",
        }
    }

    /// Index in [`MemoryCategory::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Bytes per [`MemoryCategory`] (at the moment of the peak, for a measured split).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemorySplit {
    /// See [`MemoryCategory::Dataset`].
    pub dataset: u64,
    /// See [`MemoryCategory::MasterWeights`].
    pub master_weights: u64,
    /// See [`MemoryCategory::LowPrecisionCopies`].
    pub low_precision_copies: u64,
    /// See [`MemoryCategory::Gradients`].
    pub gradients: u64,
    /// See [`MemoryCategory::OptimizerState`].
    pub optimizer_state: u64,
    /// See [`MemoryCategory::Activations`].
    pub activations: u64,
    /// See [`MemoryCategory::Workspace`].
    pub workspace: u64,
}

impl MemorySplit {
    /// The bytes of `c`.
    pub fn get(&self, c: MemoryCategory) -> u64 {
        match c {
            MemoryCategory::Dataset => self.dataset,
            MemoryCategory::MasterWeights => self.master_weights,
            MemoryCategory::LowPrecisionCopies => self.low_precision_copies,
            MemoryCategory::Gradients => self.gradients,
            MemoryCategory::OptimizerState => self.optimizer_state,
            MemoryCategory::Activations => self.activations,
            MemoryCategory::Workspace => self.workspace,
        }
    }

    /// The bytes of `c`, to change.
    pub fn get_mut(&mut self, c: MemoryCategory) -> &mut u64 {
        match c {
            MemoryCategory::Dataset => &mut self.dataset,
            MemoryCategory::MasterWeights => &mut self.master_weights,
            MemoryCategory::LowPrecisionCopies => &mut self.low_precision_copies,
            MemoryCategory::Gradients => &mut self.gradients,
            MemoryCategory::OptimizerState => &mut self.optimizer_state,
            MemoryCategory::Activations => &mut self.activations,
            MemoryCategory::Workspace => &mut self.workspace,
        }
    }

    /// All categories together.
    pub fn total(&self) -> u64 {
        MemoryCategory::ALL.iter().map(|&c| self.get(c)).sum()
    }

    /// The largest category.
    pub fn largest(&self) -> MemoryCategory {
        let mut best = MemoryCategory::Dataset;
        for c in MemoryCategory::ALL {
            if self.get(c) > self.get(best) {
                best = c;
            }
        }
        best
    }
}

/// Bytes of the activation storage type of `precision` as the CPU's trainer allocates it. FP8
/// is emulated there over FP32 storage (the cast operands hold FP8 values in FP32; a GPU
/// stores them in FP16; the run's [`crate::fp8::Fp8Report`] says what one byte per element
/// would hold).
pub fn activation_bytes(precision: Precision) -> u64 {
    match precision {
        Precision::Fp32 | Precision::Tf32 | Precision::Fp8 => 4,
        Precision::Fp16 | Precision::Bf16 => 2,
    }
}

/// The split the trainer allocates for `precision` at batch `batch` with `n_train` and `n_test`
/// images, from the model's specification: everything but the kernels' scratch, which depends
/// on the backend (`workspace` is `workspace` as given: pass a measured run's to compare).
pub fn estimate(
    precision: Precision,
    batch: usize,
    n_train: usize,
    n_test: usize,
    workspace: u64,
) -> MemorySplit {
    let a = activation_bytes(precision);
    // Low-precision weight copies: FP16/BF16's, and FP8's weights on the E4M3 grid.
    let mixed = precision.is_reduced();
    let px = (lab::IMAGE * lab::IMAGE) as u64;
    let (c1, c2) = (lab::CONV1, lab::CONV2);
    let weights = (c1.weight_len() + c2.weight_len() + lab::FEATURES * lab::CLASSES) as u64;
    let params = weights + (c1.c_out + c2.c_out + lab::CLASSES) as u64;
    let b = batch.min(n_train.max(n_test)) as u64;
    let a1 = (c1.c_out * lab::POOL1 * lab::POOL1) as u64;
    let f = lab::FEATURES as u64;
    let k = lab::CLASSES as u64;
    // x, a1, a2, dropout output, logits, their gradients (dlogits, dfeat, da2, da1) in the
    // activation type; the masks (m1, m2, dropout) and the labels in bytes.
    let act_values = b * (px + a1 + f + f + k + k + f + f + a1);
    let byte_values = b * (a1 + f + f + 1);
    let (train, test) = (n_train as u64, n_test as u64);
    MemorySplit {
        dataset: (train + test) * (px + 1) + 4 * (train + test),
        master_weights: 4 * params,
        low_precision_copies: if mixed { a * weights } else { 0 },
        gradients: a * params,
        optimizer_state: 8 * params,
        activations: a * act_values + byte_values,
        workspace,
    }
}

/// Megabytes (10⁶ bytes), as the duel table prints them.
pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// Sentences on measured splits (one per contestant, same batch): what dominates, and what
/// FP16 (or BF16) saved against FP32 and why.
pub fn sentences(batch: usize, splits: &[(Precision, MemorySplit)]) -> Vec<String> {
    let mut out = Vec::new();
    for (p, s) in splits {
        let big = s.largest();
        out.push(format!(
            "{p} at batch {batch}: {:.1} MB at the peak, {:.0} % of it the {} ({:.1} MB); \
             activations {:.1} MB.",
            mb(s.total()),
            100.0 * s.get(big) as f64 / s.total().max(1) as f64,
            big.label(),
            mb(s.get(big)),
            mb(s.activations),
        ));
    }
    let fp32 = splits.iter().find(|(p, _)| *p == Precision::Fp32);
    for (p, s) in splits {
        let (Some((_, base)), true) = (fp32, p.stores_16_bit()) else {
            continue;
        };
        let saved = base.total() as f64 - s.total() as f64;
        out.push(format!(
            "{p} against fp32: {:+.1} MB ({:+.1} %). Activations {:.1} → {:.1} MB, but the \
             {:.1} MB of low-precision weight copies are added and the data set is the same \
             {:.1} MB.",
            -saved / 1e6,
            -100.0 * saved / base.total().max(1) as f64,
            mb(base.activations),
            mb(s.activations),
            mb(s.low_precision_copies),
            mb(s.dataset),
        ));
    }
    out
}

/// The smallest batch at which activations take more memory than the data set, for
/// `precision` (`None` beyond `max_batch`).
pub fn activations_take_over(
    precision: Precision,
    n_train: usize,
    n_test: usize,
    max_batch: usize,
) -> Option<usize> {
    (1..=max_batch).find(|&b| {
        let s = estimate(precision, b, n_train, n_test, 0);
        s.activations > s.dataset
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_batch_128_the_data_set_dominates_and_fp16_adds_copies() {
        let s32 = estimate(Precision::Fp32, 128, 60_000, 10_000, 0);
        let s16 = estimate(Precision::Fp16, 128, 60_000, 10_000, 0);
        assert_eq!(s32.largest(), MemoryCategory::Dataset);
        assert_eq!(s32.dataset, 70_000 * 785 + 4 * 70_000);
        assert_eq!(s32.master_weights, 4 * 34_826);
        assert_eq!(s32.optimizer_state, 8 * 34_826);
        assert_eq!(s16.low_precision_copies, 2 * 34_720);
        assert_eq!(s32.low_precision_copies, 0);
        assert!(s16.activations < s32.activations);
        assert!(s16.activations * 2 > s32.activations);
        let text = sentences(128, &[(Precision::Fp32, s32), (Precision::Fp16, s16)]);
        assert!(text[0].contains("data set"), "{text:?}");
        assert!(text[2].starts_with("fp16 against fp32: -"), "{text:?}");
    }

    #[test]
    fn activations_take_over_at_a_few_thousand_images_and_fp16_halves_them() {
        let b32 = activations_take_over(Precision::Fp32, 60_000, 10_000, 100_000).unwrap();
        let b16 = activations_take_over(Precision::Fp16, 60_000, 10_000, 100_000).unwrap();
        assert!(b32 > 128 && b32 < 10_000, "{b32}");
        assert!(b16 > b32, "{b16} vs {b32}");
        let big32 = estimate(Precision::Fp32, 60_000, 60_000, 10_000, 0);
        let big16 = estimate(Precision::Fp16, 60_000, 60_000, 10_000, 0);
        let ratio = big16.total() as f64 / big32.total() as f64;
        assert!(ratio < 0.7, "at batch 60,000 fp16 needs {ratio:.2} of fp32");
    }
}
