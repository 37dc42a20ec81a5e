//! Act II's mixed-precision story: histograms of gradient magnitudes in log2 buckets, sampled
//! during a duel, against the ranges FP16 and BF16 can represent — the figure of Micikevicius
//! et al., "Mixed Precision Training" (ICLR 2018), live on this model — and how many values
//! would flush to zero or overflow with and without the loss scale.

use serde::{Deserialize, Serialize};

pub use crate::histogram::{
    exponent, FloatRange, Log2Histogram, RangeCounts, BF16, BUCKETS, FP16, MAX_EXP, MIN_EXP,
};

/// Gradients of one layer at one sampled step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerGrads {
    /// `conv1`, `conv2`, `dense`.
    pub layer: String,
    /// The gradient of the loss with respect to the layer's output (its activation gradient),
    /// unscaled.
    pub activations: Log2Histogram,
    /// The gradient with respect to the layer's weights, unscaled.
    pub weights: Log2Histogram,
}

/// The gradients of one sampled training step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GradSample {
    /// 1-based epoch.
    pub epoch: usize,
    /// 1-based step within the epoch.
    pub step: usize,
    /// The loss scale the step's gradients were computed with (1 without a scaler).
    pub loss_scale: f64,
    /// Whether the scaler found an inf or NaN and skipped the step.
    pub skipped: bool,
    /// One entry per layer, input to output.
    pub layers: Vec<LayerGrads>,
    /// FP8 runs: every cast tensor's scale, amax and counts at this step (the histograms'
    /// E4M3/E5M2 ranges are drawn at these scales).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fp8: Vec<crate::fp8::Fp8TensorSample>,
}

/// The loss scale after a step, and whether the step was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScalePoint {
    /// 1-based step counted over the whole run.
    pub step: usize,
    /// The loss scale after the step.
    pub loss_scale: f64,
    /// Whether this step was skipped (its gradients held an inf or NaN).
    pub skipped: bool,
}

/// One sentence on a histogram against FP16 without and with `scale`, from its counts.
pub fn fp16_sentence(layer: &str, what: &str, h: &Log2Histogram, scale: f64) -> String {
    let n = h.nonzero();
    if n == 0 {
        return format!("{layer}: every {what} gradient was zero at this step.");
    }
    let pct = |c: u64| 100.0 * c as f64 / n as f64;
    let raw = h.against(&FP16, 1.0);
    let scaled = h.against(&FP16, scale);
    format!(
        "{layer}, {what} gradients: of {n} nonzero values, {} ({:.1} %) would flush to zero in \
         FP16 without scaling and {} ({:.1} %) would be subnormal; with the loss scale {scale} \
         {} ({:.1} %) flush and {} overflow.",
        raw.flush_to_zero,
        pct(raw.flush_to_zero),
        raw.subnormal,
        pct(raw.subnormal),
        scaled.flush_to_zero,
        pct(scaled.flush_to_zero),
        scaled.overflow,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loss_scale_moves_small_gradients_out_of_the_flush_zone() {
        let mut h = Log2Histogram::default();
        for e in [-30, -27, -20, -10, -2, 6] {
            h.add(2f64.powi(e));
        }
        let raw = h.against(&FP16, 1.0);
        assert_eq!(
            raw,
            RangeCounts {
                flush_to_zero: 2,
                subnormal: 1,
                normal: 3,
                overflow: 0
            }
        );
        let scaled = h.against(&FP16, 2f64.powi(8));
        assert_eq!(scaled.flush_to_zero, 0);
        assert_eq!(scaled.subnormal, 2);
        assert_eq!(scaled.overflow, 0);
        let too_much = h.against(&FP16, 65536.0);
        assert_eq!(too_much.overflow, 1, "2^6 × 2^16 overflows FP16");
        assert_eq!(h.against(&BF16, 1.0).flush_to_zero, 0);
        let s = fp16_sentence("conv1", "activation", &h, 256.0);
        assert!(
            s.contains("of 6 nonzero values, 2 (33.3 %) would flush"),
            "{s}"
        );
    }
}
