//! The precision crossover's pieces that every backend's sweep shares (the CPU's in
//! [`crate::lab::crossover`], the GPU's in `crate::cuda::crossover`): the plan of points, the
//! operands and their rounding (TF32, FP8 E4M3 with a per-tensor scale, the padding Hopper's FP8
//! GEMMs need), the f64 check, the median and the report's finishing. A leaf: it imports
//! neither sweep, so the GPU sweep does not reach back into the job that calls it.

use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::bench::crossover::{
    cnn_gemms, CrossoverCeilings, CrossoverReport, GemmCheck, GemmPoint, GemmShape, PrecisionPeak,
    SkippedPrecision, CNN_BATCH, ORDER,
};
use crate::types::Precision;

/// Entries of the f64 check at most per point (all of them for a smaller product).
pub const CHECK_ENTRIES: usize = 512;

/// The points to measure, in order: every precision's square sweep, then the CNN's GEMMs.
pub fn plan(sizes: &[usize], include_cnn: bool) -> Vec<(Option<String>, GemmShape)> {
    let mut v: Vec<(Option<String>, GemmShape)> = sizes
        .iter()
        .map(|&n| (None, GemmShape::square(n)))
        .collect();
    if include_cnn {
        v.extend(cnn_gemms(CNN_BATCH).into_iter().map(|(l, s)| (Some(l), s)));
    }
    v
}

/// The median of `samples` (sorted in place); 0 for none.
pub fn median(samples: &mut [f64]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    if n % 2 == 1 {
        samples[n / 2]
    } else {
        0.5 * (samples[n / 2 - 1] + samples[n / 2])
    }
}

/// A sweep's report on `device` (`backend`, `library`: what computed the products) from its
/// measured `points` and the precisions it `skipped`, finished ([`finish`]): the ceilings, the
/// crossovers and the sentences. Both sweeps end here; PyTorch's rows and the training steps are
/// added by the job afterwards.
pub fn report(
    device: String,
    backend: &str,
    library: String,
    points: Vec<GemmPoint>,
    skipped: Vec<SkippedPrecision>,
    copy_gbps: f64,
) -> CrossoverReport {
    let mut report = CrossoverReport {
        device,
        backend: backend.into(),
        library,
        ceilings: CrossoverCeilings::default(),
        points,
        skipped,
        crossovers: Vec::new(),
        sentences: Vec::new(),
        peers: Vec::new(),
        peer_failure: None,
        steps: Vec::new(),
        step_note: None,
    };
    finish(&mut report, copy_gbps);
    report
}

/// The ceilings and derived fields of a report whose points are in: each precision's best
/// rate over the square sweep, a call's fixed cost (the fastest median at the smallest size),
/// then [`CrossoverReport::finish`].
pub fn finish(report: &mut CrossoverReport, copy_gbps: f64) {
    let sizes = report.sizes();
    let launch_ms = sizes.first().map_or(0.0, |&n0| {
        report
            .points
            .iter()
            .filter(|p| p.label.is_none() && p.shape.n == n0)
            .map(|p| p.ms_p50)
            .fold(f64::INFINITY, f64::min)
    });
    let peaks = ORDER
        .iter()
        .filter_map(|&pr| {
            report
                .sweep(pr)
                .into_iter()
                .max_by(|a, b| a.tflops.total_cmp(&b.tflops))
                .map(|p| PrecisionPeak {
                    precision: pr,
                    tflops: p.tflops,
                    n: p.shape.n,
                })
        })
        .collect();
    report.ceilings = CrossoverCeilings {
        copy_gbps,
        launch_ms: if launch_ms.is_finite() {
            launch_ms
        } else {
            0.0
        },
        peaks,
    };
    report.finish();
}

/// The f64 check of `c` (`m×n`, row-major) against `get_a(i, k)·get_b(k, j)` summed in f64:
/// every entry of a small product, else [`CHECK_ENTRIES`] spread over it. Each error is
/// relative to `Σ|a·b|` of its entry; `tol` is the tolerance.
pub fn check(
    shape: GemmShape,
    get_a: &(dyn Fn(usize, usize) -> f64 + Sync),
    get_b: &(dyn Fn(usize, usize) -> f64 + Sync),
    c: &(dyn Fn(usize, usize) -> f64 + Sync),
    tol: f64,
) -> GemmCheck {
    let GemmShape { m, n, k } = shape;
    let total = m * n;
    let entries: Vec<(usize, usize)> = if total <= CHECK_ENTRIES {
        (0..total).map(|e| (e / n, e % n)).collect()
    } else {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x39);
        let mut v: Vec<(usize, usize)> = (0..CHECK_ENTRIES)
            .map(|_| (rng.random_range(0..m), rng.random_range(0..n)))
            .collect();
        // The corners too: the edges of a tiled kernel.
        v.extend([(0, 0), (m - 1, n - 1), (0, n - 1), (m - 1, 0)]);
        v
    };
    let worst = entries
        .par_iter()
        .map(|&(i, j)| {
            let (mut s, mut mag) = (0.0f64, 0.0f64);
            for kk in 0..k {
                let p = get_a(i, kk) * get_b(kk, j);
                s += p;
                mag += p.abs();
            }
            let got = c(i, j);
            if !got.is_finite() {
                return f64::INFINITY;
            }
            (got - s).abs() / mag.max(f64::MIN_POSITIVE)
        })
        .reduce(|| 0.0, f64::max);
    GemmCheck::new(worst, tol, entries.len())
}

/// Uniform operands in [-1, 1), `len` of them, from `seed`.
pub fn operands(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// `x` rounded to TF32 (10 mantissa bits, to nearest, ties to even), as an f32: the operands
/// the GPU's TF32 product multiplies exactly.
pub fn round_tf32(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let b = x.to_bits();
    let lsb = (b >> 13) & 1;
    f32::from_bits(b.wrapping_add(0x0FFF + lsb) & !0x1FFF)
}

/// The E4M3 byte of `q`, a value on E4M3's grid (what
/// [`Fp8Format::quantize`](crate::fp8::Fp8Format::quantize) returns): sign, 4 exponent bits
/// (bias 7), 3 mantissa bits; NaN is `0x7F`.
pub fn e4m3_bits(q: f32) -> u8 {
    let sign = if q.is_sign_negative() { 0x80 } else { 0 };
    let a = q.abs();
    if a.is_nan() {
        return sign | 0x7F;
    }
    if a == 0.0 {
        return sign;
    }
    let e = ((a.to_bits() >> 23) & 0xff) as i32 - 127;
    if e < -6 {
        // Subnormal: a = m · 2⁻⁹, m < 8.
        sign | ((a * 512.0) as u8 & 0x7)
    } else {
        let mant = ((a.to_bits() >> 20) & 0x7) as u8;
        sign | ((((e + 7) as u8) & 0xF) << 3) | mant
    }
}

/// `values` cast to E4M3 with one per-tensor scale (`448 / amax`): the bytes the GPU gets,
/// the values they stand for (`q / scale`, the f64 check's operands) and the inverse scale
/// (the scale pointer cuBLASLt multiplies the product by).
pub fn e4m3_tensor(values: &[f32]) -> (Vec<u8>, Vec<f32>, f32) {
    use crate::fp8::Fp8Format;
    let amax = values.iter().fold(0f32, |m, v| m.max(v.abs()));
    let scale = if amax > 0.0 && amax.is_finite() {
        Fp8Format::E4m3.max() / amax
    } else {
        1.0
    };
    let mut bytes = Vec::with_capacity(values.len());
    let mut dequant = Vec::with_capacity(values.len());
    for &v in values {
        let q = Fp8Format::E4m3.quantize(v * scale);
        bytes.push(e4m3_bits(q));
        dequant.push(q / scale);
    }
    (bytes, dequant, 1.0 / scale)
}

/// The shape a precision runs on cuBLASLt: FP8 rounds every dimension up to a multiple of 16
/// (Hopper's FP8 GEMMs want them so); the others run as asked.
pub fn run_shape(p: Precision, s: GemmShape) -> GemmShape {
    if p == Precision::Fp8 {
        GemmShape {
            m: s.m.div_ceil(16) * 16,
            n: s.n.div_ceil(16) * 16,
            k: s.k.div_ceil(16) * 16,
        }
    } else {
        s
    }
}

/// `src` (`rows × k`, row-major) padded with zeros to `rows_p × k_p` (`rows_p ≥ rows`,
/// `k_p ≥ k`).
pub fn pad_rows(src: &[f32], rows: usize, k: usize, rows_p: usize, k_p: usize) -> Vec<f32> {
    if rows == rows_p && k == k_p {
        return src[..rows * k].to_vec();
    }
    let mut v = vec![0.0; rows_p * k_p];
    for r in 0..rows {
        v[r * k_p..r * k_p + k].copy_from_slice(&src[r * k..(r + 1) * k]);
    }
    v
}

/// The first `rows` rows of `v` (rows of `k_p`, padded) cut back to their first `k` values.
pub fn unpad_rows(v: &[f32], rows: usize, k: usize, k_p: usize) -> Vec<f32> {
    if k == k_p {
        v[..rows * k].to_vec()
    } else {
        (0..rows)
            .flat_map(|r| v[r * k_p..r * k_p + k].iter().copied())
            .collect()
    }
}
