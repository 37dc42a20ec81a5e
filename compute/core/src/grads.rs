//! Act II's mixed-precision story: histograms of gradient magnitudes in log2 buckets, sampled
//! during a duel, against the ranges FP16 and BF16 can represent — the figure of Micikevicius
//! et al., "Mixed Precision Training" (ICLR 2018), live on this model — and how many values
//! would flush to zero or overflow with and without the loss scale.

use serde::{Deserialize, Serialize};

/// Exponent of the lowest bucket: values below 2^`MIN_EXP` are counted in bucket 0.
pub const MIN_EXP: i32 = -64;
/// Exponent of the highest bucket: values of 2^`MAX_EXP` or more are counted in it.
pub const MAX_EXP: i32 = 31;
/// Buckets of a [`Log2Histogram`].
pub const BUCKETS: usize = (MAX_EXP - MIN_EXP + 1) as usize;

/// Magnitudes of a tensor's values by power of two: bucket `i` counts the nonzero finite
/// values with `2^(MIN_EXP+i) ≤ |v| < 2^(MIN_EXP+i+1)` (the end buckets also take everything
/// beyond them); zeros and non-finite values are counted apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Log2Histogram {
    /// [`BUCKETS`] counts, from 2^[`MIN_EXP`] up.
    pub counts: Vec<u64>,
    /// Exact zeros (ReLU's mask and the pool's unchosen pixels make many).
    pub zeros: u64,
    /// Infinities and NaNs.
    pub non_finite: u64,
}

impl Default for Log2Histogram {
    fn default() -> Self {
        Log2Histogram {
            counts: vec![0; BUCKETS],
            zeros: 0,
            non_finite: 0,
        }
    }
}

/// `floor(log2 |v|)` of a nonzero finite f64, exactly (from its bits).
pub fn exponent(v: f64) -> i32 {
    let bits = v.abs().to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32;
    if e == 0 {
        // Subnormal: the leading one's position in the mantissa.
        let m = bits & ((1u64 << 52) - 1);
        -1074 + 63 - m.leading_zeros() as i32
    } else {
        e - 1023
    }
}

impl Log2Histogram {
    /// The histogram of `values / scale` (the gradients as stored, unscaled by the loss
    /// scale they were computed with).
    pub fn of(values: &[f32], scale: f64) -> Self {
        let mut h = Log2Histogram::default();
        for &v in values {
            h.add(v as f64 / scale);
        }
        h
    }

    /// Counts one value.
    pub fn add(&mut self, v: f64) {
        if v == 0.0 {
            self.zeros += 1;
        } else if !v.is_finite() {
            self.non_finite += 1;
        } else {
            let i = (exponent(v).clamp(MIN_EXP, MAX_EXP) - MIN_EXP) as usize;
            self.counts[i] += 1;
        }
    }

    /// Values counted, zeros and non-finite ones included.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum::<u64>() + self.zeros + self.non_finite
    }

    /// Nonzero finite values.
    pub fn nonzero(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The bucket's lower exponent.
    pub fn bucket_exp(i: usize) -> i32 {
        MIN_EXP + i as i32
    }

    /// How the nonzero values fall against `range` once multiplied by `scale` (a power of
    /// two, as every loss scale is): counted per bucket, so a bucket straddling a limit counts
    /// wholly on the side of its lower edge.
    pub fn against(&self, range: &FloatRange, scale: f64) -> RangeCounts {
        let shift = if scale > 0.0 && scale.is_finite() {
            exponent(scale)
        } else {
            0
        };
        let mut out = RangeCounts::default();
        for (i, &c) in self.counts.iter().enumerate() {
            let e = Self::bucket_exp(i) + shift;
            if e < range.min_subnormal_exp {
                out.flush_to_zero += c;
            } else if e < range.min_normal_exp {
                out.subnormal += c;
            } else if e > range.max_exp {
                out.overflow += c;
            } else {
                out.normal += c;
            }
        }
        out
    }
}

/// A floating-point format's range by powers of two.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatRange {
    /// `fp16`, `bf16`, `e4m3` or `e5m2`.
    pub name: &'static str,
    /// Exponent of the smallest subnormal (values below it flush to zero).
    pub min_subnormal_exp: i32,
    /// Exponent of the smallest normal (below it, precision is lost bit by bit).
    pub min_normal_exp: i32,
    /// Exponent of the largest finite value's bucket (values of 2^(max_exp+1) or more
    /// overflow to infinity).
    pub max_exp: i32,
    /// The largest finite value.
    pub max: f64,
}

/// IEEE half: smallest subnormal 2⁻²⁴, smallest normal 2⁻¹⁴, largest 65504.
pub const FP16: FloatRange = FloatRange {
    name: "fp16",
    min_subnormal_exp: -24,
    min_normal_exp: -14,
    max_exp: 15,
    max: 65504.0,
};

/// bfloat16: FP32's exponent range with 8 mantissa bits (smallest subnormal 2⁻¹³³, smallest
/// normal 2⁻¹²⁶, largest about 3.39 × 10³⁸).
pub const BF16: FloatRange = FloatRange {
    name: "bf16",
    min_subnormal_exp: -133,
    min_normal_exp: -126,
    max_exp: 127,
    max: 3.389_531_389_251_535_5e38,
};

/// Nonzero values against a format's range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeCounts {
    /// Below the smallest subnormal: they become zero.
    pub flush_to_zero: u64,
    /// Subnormal: kept with fewer significant bits.
    pub subnormal: u64,
    /// Normal: kept with full precision.
    pub normal: u64,
    /// Above the largest finite value: they become infinity (and the scaler skips the step).
    pub overflow: u64,
}

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
    fn exponents_are_exact_for_normal_subnormal_and_negative_values() {
        assert_eq!(exponent(1.0), 0);
        assert_eq!(exponent(1.999), 0);
        assert_eq!(exponent(2.0), 1);
        assert_eq!(exponent(-0.75), -1);
        assert_eq!(exponent(2f64.powi(-24)), -24);
        assert_eq!(exponent(f64::from_bits(1)), -1074);
        assert_eq!(exponent(f64::from_bits(3)), -1073);
        assert_eq!(exponent(65504.0), 15);
    }

    #[test]
    fn the_histogram_equals_a_direct_count() {
        let mut seed = 7u64;
        let values: Vec<f32> = (0..5000)
            .map(|i| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                let e = ((seed >> 33) % 70) as i32 - 50;
                let sign = if seed >> 63 == 1 { -1.0 } else { 1.0 };
                match i % 97 {
                    0 => 0.0,
                    1 => f32::INFINITY,
                    _ => sign * 1.37 * 2f32.powi(e),
                }
            })
            .collect();
        let scale = 1024.0;
        let h = Log2Histogram::of(&values, scale);
        assert_eq!(h.total(), values.len() as u64);
        for i in 0..BUCKETS {
            let e = Log2Histogram::bucket_exp(i);
            let direct = values
                .iter()
                .map(|&v| (v as f64 / scale).abs())
                .filter(|&a| a != 0.0 && a.is_finite())
                .filter(|&a| {
                    let lo = 2f64.powi(e);
                    let hi = 2f64.powi(e + 1);
                    (i == 0 || a >= lo) && (i == BUCKETS - 1 || a < hi)
                })
                .count() as u64;
            assert_eq!(h.counts[i], direct, "bucket 2^{e}");
        }
        assert_eq!(h.zeros, values.iter().filter(|v| **v == 0.0).count() as u64);
        assert_eq!(
            h.non_finite,
            values.iter().filter(|v| !v.is_finite()).count() as u64
        );
    }

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
