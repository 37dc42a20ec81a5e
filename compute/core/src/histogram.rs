//! Magnitudes by power of two: the log2 histogram of a tensor's values, a floating-point
//! format's range in powers of two (FP16, BF16; FP8's E4M3 and E5M2 in [`crate::fp8`]), and
//! how many values of a histogram fall below, inside or above a range. A leaf: the gradient
//! samples and FP8's per-tensor samples both use it.

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
}
