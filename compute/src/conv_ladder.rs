//! The convolution ladder of the Kernel Reveal (Act III, `showdown bench conv`): the layers it
//! runs, its result rows, its inputs (real images where the layer reads images), and the CPU
//! rows (the naive f64 reference every rung is checked against, and im2col + GEMM). The GPU
//! rungs live in `cuda::conv_ladder`.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::backend::cpu::conv2d_im2col_fwd;
use crate::backend::reference::conv2d_fwd;
use crate::data::Dataset;
use crate::error::{ComputeError, Result};
use crate::model::ConvShape;

pub use crate::inference::percentiles;

/// A layer of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LadderLayer {
    /// The lab CNN's first convolution: 1→32, 28×28, k3.
    LabConv1,
    /// The lab CNN's second convolution: 32→64, 13×13, k3.
    LabConv2,
    /// The LeNet variant's C1 ("GPU Kernel Optimization" seed): 1→4, 86×86, k7.
    LenetC1,
    /// The LeNet variant's C3: 4→16, 40×40, k7.
    LenetC3,
}

impl LadderLayer {
    /// Every layer, in table order.
    pub const ALL: [LadderLayer; 4] = [
        LadderLayer::LabConv1,
        LadderLayer::LabConv2,
        LadderLayer::LenetC1,
        LadderLayer::LenetC3,
    ];
    /// The name used in tables, JSON and kernel entry points (`conv_tc_opt_{name}`).
    pub fn name(self) -> &'static str {
        match self {
            LadderLayer::LabConv1 => "lab_conv1",
            LadderLayer::LabConv2 => "lab_conv2",
            LadderLayer::LenetC1 => "lenet_c1",
            LadderLayer::LenetC3 => "lenet_c3",
        }
    }
    /// Looks a layer up by [`LadderLayer::name`].
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                ComputeError::bad_arg(
                    "--layers",
                    s,
                    "expected lab_conv1, lab_conv2, lenet_c1 or lenet_c3",
                )
            })
    }
    /// Its shape.
    pub fn shape(self) -> ConvShape {
        let (c_in, c_out, h, k) = match self {
            LadderLayer::LabConv1 => (1, 32, 28, 3),
            LadderLayer::LabConv2 => (32, 64, 13, 3),
            LadderLayer::LenetC1 => (1, 4, 86, 7),
            LadderLayer::LenetC3 => (4, 16, 40, 7),
        };
        ConvShape {
            c_in,
            c_out,
            h,
            w: h,
            k,
        }
    }
    /// Whether the layer reads images (its input is the data set, not a hidden activation).
    pub fn reads_images(self) -> bool {
        matches!(self, LadderLayer::LabConv1 | LadderLayer::LenetC1)
    }
}

/// Multiply-adds ×2 of one forward pass over `batch` images.
pub fn conv_flops(s: &ConvShape, batch: usize) -> f64 {
    2.0 * batch as f64 * s.out_len() as f64 * s.patch_len() as f64
}

/// One implementation's timing on one layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvRow {
    /// The layer ([`LadderLayer::name`]).
    pub layer: String,
    /// The implementation (`rung1_unroll_gemm_permute`, `cudnn_f16`, `cpu_im2col`, ...).
    pub implementation: String,
    /// The rung of the ladder (1–5), none for reference rows.
    pub rung: Option<u8>,
    /// Images per pass.
    pub batch: usize,
    /// Input and weight storage (`f32`, `f16`).
    pub input_dtype: String,
    /// Output storage.
    pub output_dtype: String,
    /// Median ms per pass.
    pub ms_p50: f64,
    /// 90th percentile.
    pub ms_p90: f64,
    /// 99th percentile.
    pub ms_p99: f64,
    /// Timed passes.
    pub reps: usize,
    /// 2·MACs / median time, TFLOP/s.
    pub tflops: f64,
    /// (input + weights + output bytes) / median time, GB/s: the compulsory traffic.
    pub gbps: f64,
    /// FLOPs per compulsory byte.
    pub intensity: f64,
    /// Baseline (rung 1) median / this median, on the same layer.
    pub speedup_vs_rung1: Option<f64>,
    /// How the row was measured where it differs from the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One correctness check of an implementation against the f64 reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvCheck {
    /// The layer.
    pub layer: String,
    /// The implementation.
    pub implementation: String,
    /// Images in the pass that was checked.
    pub batch: usize,
    /// Images compared with the reference (spread over the batch, first and last included).
    pub images_checked: usize,
    /// max |ours − reference|.
    pub max_abs: f64,
    /// max |ours − reference| / max(|reference|, 1).
    pub max_rel: f64,
    /// The bound on max_rel for this implementation's dtypes.
    pub bound: f64,
    /// Outputs that are NaN or infinite (unwritten outputs stay NaN: they are poisoned first).
    pub non_finite: usize,
    /// max_rel ≤ bound, and every output finite.
    pub ok: bool,
}

/// Ceilings measured in the same run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// Device-to-device copy, (read + write) GB/s.
    pub copy_gbps: f64,
    /// cuBLAS FP16 GEMM 8192³ (FP32 accumulation), TFLOP/s, when cuBLAS loads.
    pub gemm_f16_tflops: Option<f64>,
    /// cuBLAS FP32 GEMM 8192³ (no TF32), TFLOP/s, when cuBLAS loads.
    pub gemm_f32_tflops: Option<f64>,
    /// Why a GEMM ceiling is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemm_note: Option<String>,
}

/// What `showdown bench conv` measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvLadderReport {
    /// The GPU in words.
    pub device: String,
    /// Images per pass on the GPU.
    pub batch: usize,
    /// Where the image layers' inputs came from.
    pub input_source: String,
    /// Ceilings from the same run.
    pub ceilings: Ceilings,
    /// Every timing.
    pub rows: Vec<ConvRow>,
    /// Every correctness check.
    pub checks: Vec<ConvCheck>,
    /// Reference rows that could not run (cuDNN missing, ...), with why.
    pub skipped: Vec<String>,
}

/// Layer inputs and weights in FP32, deterministic for a seed.
#[derive(Debug, Clone)]
pub struct LadderInput {
    /// `batch × c_in × h × w`.
    pub x: Vec<f32>,
    /// `c_out × c_in × k × k`.
    pub w: Vec<f32>,
}

/// Resizes one `rows × cols` u8 image to `side × side` by bilinear interpolation (align
/// corners), scaled to [0, 1].
pub fn resize_bilinear(img: &[u8], rows: usize, cols: usize, side: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; side * side];
    let scale = |n: usize| {
        if side > 1 {
            (n as f32 - 1.0) / (side as f32 - 1.0)
        } else {
            0.0
        }
    };
    let (sy, sx) = (scale(rows), scale(cols));
    for oy in 0..side {
        let fy = oy as f32 * sy;
        let y0 = (fy.floor() as usize).min(rows - 1);
        let y1 = (y0 + 1).min(rows - 1);
        let dy = fy - y0 as f32;
        for ox in 0..side {
            let fx = ox as f32 * sx;
            let x0 = (fx.floor() as usize).min(cols - 1);
            let x1 = (x0 + 1).min(cols - 1);
            let dx = fx - x0 as f32;
            let p = |y: usize, x: usize| img[y * cols + x] as f32 / 255.0;
            out[oy * side + ox] = (1.0 - dy) * ((1.0 - dx) * p(y0, x0) + dx * p(y0, x1))
                + dy * ((1.0 - dx) * p(y1, x0) + dx * p(y1, x1));
        }
    }
    out
}

/// The inputs of `layer` for `batch` images: the data set's test images (cycled, resized to the
/// layer's side) for the image layers, uniform [-1, 1) activations for the others; weights
/// uniform in ±1/√fan_in. Deterministic for `seed`.
pub fn ladder_input(
    layer: LadderLayer,
    batch: usize,
    data: &Dataset,
    seed: u64,
) -> Result<LadderInput> {
    let s = layer.shape();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ ((layer as u64 + 1) * 0x9e37));
    let x = if layer.reads_images() {
        let split = if data.test.is_empty() {
            &data.train
        } else {
            &data.test
        };
        if split.is_empty() {
            return Err(ComputeError::bad_arg(
                "--dataset",
                &data.name,
                "has no images",
            ));
        }
        let px = data.pixels();
        let mut x = Vec::with_capacity(batch * s.in_len());
        for b in 0..batch {
            let i = b % split.len();
            let img = &split.images[i * px..(i + 1) * px];
            if s.h == data.rows && s.w == data.cols {
                x.extend(img.iter().map(|&v| v as f32 / 255.0));
            } else {
                x.extend(resize_bilinear(img, data.rows, data.cols, s.h));
            }
        }
        x
    } else {
        (0..batch * s.in_len())
            .map(|_| rng.random_range(-1.0f32..1.0))
            .collect()
    };
    let bound = 1.0 / (s.patch_len() as f32).sqrt();
    let w = (0..s.weight_len())
        .map(|_| rng.random_range(-bound..bound))
        .collect();
    Ok(LadderInput { x, w })
}

/// Rounds every value to FP16 and back (what the tensor-core rungs see).
pub fn round_f16(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&a| half::f16::from_f32(a).to_f32()).collect()
}

/// The images a full-batch check compares: first, last, and `n − 2` spread between (at least
/// the first and the last).
pub fn check_images(batch: usize, n: usize) -> Vec<usize> {
    let n = n.max(2);
    if batch <= n {
        return (0..batch).collect();
    }
    let mut v: Vec<usize> = (0..n).map(|i| i * (batch - 1) / (n - 1)).collect();
    v.dedup();
    v
}

/// The f64 reference output of the listed images: `images.len() × out_len`.
pub fn reference_outputs(x: &[f32], w: &[f32], s: &ConvShape, images: &[usize]) -> Vec<f64> {
    let w64: Vec<f64> = w.iter().map(|&v| v as f64).collect();
    let zero = vec![0.0; s.c_out];
    let mut out = Vec::with_capacity(images.len() * s.out_len());
    for &i in images {
        let xi: Vec<f64> = x[i * s.in_len()..(i + 1) * s.in_len()]
            .iter()
            .map(|&v| v as f64)
            .collect();
        out.extend(conv2d_fwd(&xi, &w64, &zero, 1, s));
    }
    out
}

/// Compares `got` (the outputs of `images`, in order) with `want`.
pub fn compare(
    layer: LadderLayer,
    implementation: &str,
    batch: usize,
    images: usize,
    got: &[f32],
    want: &[f64],
    bound: f64,
) -> ConvCheck {
    let (mut max_abs, mut max_rel, mut non_finite) = (0.0f64, 0.0f64, 0usize);
    for (a, b) in got.iter().zip(want) {
        if !a.is_finite() {
            non_finite += 1;
            continue;
        }
        let d = (*a as f64 - b).abs();
        max_abs = max_abs.max(d);
        max_rel = max_rel.max(d / b.abs().max(1.0));
    }
    ConvCheck {
        layer: layer.name().into(),
        implementation: implementation.into(),
        batch,
        images_checked: images,
        max_abs,
        max_rel,
        bound,
        non_finite,
        ok: got.len() == want.len() && non_finite == 0 && max_rel <= bound,
    }
}

/// Fills in `tflops`, `gbps`, `intensity` of a row from its median time.
pub fn finish_row(
    layer: LadderLayer,
    implementation: &str,
    rung: Option<u8>,
    batch: usize,
    (in_bytes, out_bytes): (usize, usize),
    (p50, p90, p99, reps): (f64, f64, f64, usize),
) -> ConvRow {
    let s = layer.shape();
    let bytes = (batch * s.in_len() + s.weight_len()) * in_bytes + batch * s.out_len() * out_bytes;
    let flops = conv_flops(&s, batch);
    let dt = |b: usize| if b == 2 { "f16" } else { "f32" };
    ConvRow {
        layer: layer.name().into(),
        implementation: implementation.into(),
        rung,
        batch,
        input_dtype: dt(in_bytes).into(),
        output_dtype: dt(out_bytes).into(),
        ms_p50: p50,
        ms_p90: p90,
        ms_p99: p99,
        reps,
        tflops: flops / (p50 * 1e-3) / 1e12,
        gbps: bytes as f64 / (p50 * 1e-3) / 1e9,
        intensity: flops / bytes as f64,
        speedup_vs_rung1: None,
        note: None,
    }
}

/// Sets every row's `speedup_vs_rung1` from the rung-1 row of its layer.
pub fn fill_speedups(rows: &mut [ConvRow]) {
    let base: Vec<(String, f64, usize)> = rows
        .iter()
        .filter(|r| r.rung == Some(1))
        .map(|r| (r.layer.clone(), r.ms_p50, r.batch))
        .collect();
    for r in rows.iter_mut() {
        r.speedup_vs_rung1 = base
            .iter()
            .find(|(l, _, b)| *l == r.layer && *b == r.batch)
            .map(|(_, ms, _)| ms / r.ms_p50);
    }
}

/// The CPU rows on `batch` images (small: these are for correctness and scale): the naive f64
/// reference and im2col + GEMM (f32), timed `reps` times each, and im2col checked against the
/// reference.
pub fn cpu_rows(
    layer: LadderLayer,
    input: &LadderInput,
    batch: usize,
    reps: usize,
) -> (Vec<ConvRow>, ConvCheck) {
    let s = layer.shape();
    let images: Vec<usize> = (0..batch).collect();
    let mut t = Vec::new();
    let mut want = Vec::new();
    for _ in 0..reps.max(1) {
        let t0 = Instant::now();
        want = reference_outputs(&input.x, &input.w, &s, &images);
        t.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let (a, b, c) = percentiles(t);
    let naive = finish_row(layer, "cpu_naive_f64", None, batch, (4, 4), (a, b, c, reps));
    let zero = vec![0.0f32; s.c_out];
    let mut col = vec![0.0f32; s.patch_len() * s.out_pixels()];
    let mut y = vec![0.0f32; batch * s.out_len()];
    let mut t = Vec::new();
    for _ in 0..reps.max(1) {
        let t0 = Instant::now();
        for i in 0..batch {
            conv2d_im2col_fwd(
                &input.x[i * s.in_len()..(i + 1) * s.in_len()],
                &input.w,
                &zero,
                &s,
                &mut col,
                &mut y[i * s.out_len()..(i + 1) * s.out_len()],
            );
        }
        t.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let (a, b, c) = percentiles(t);
    let im2col = finish_row(
        layer,
        "cpu_im2col_gemm",
        None,
        batch,
        (4, 4),
        (a, b, c, reps),
    );
    let check = compare(layer, "cpu_im2col_gemm", batch, batch, &y, &want, 1e-4);
    (vec![naive, im2col], check)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Dataset {
        crate::data::mnist_sample().expect("the embedded sample")
    }

    #[test]
    fn layers_have_the_issue_shapes_and_round_trip_their_names() {
        let s = LadderLayer::LabConv1.shape();
        assert_eq!((s.c_in, s.c_out, s.h_out(), s.k), (1, 32, 26, 3));
        // conv1 at batch 10,000 writes 433 MB of FP16 (the issue's floor).
        assert_eq!(10_000 * s.out_len() * 2, 432_640_000);
        assert_eq!(LadderLayer::LenetC1.shape().h_out(), 80);
        assert_eq!(LadderLayer::LenetC3.shape().h_out(), 34);
        for l in LadderLayer::ALL {
            assert_eq!(LadderLayer::parse(l.name()).ok(), Some(l));
        }
        assert!(LadderLayer::parse("conv3").is_err());
    }

    #[test]
    fn image_layers_read_real_digits_resized() {
        let d = sample();
        let inp = ladder_input(LadderLayer::LenetC1, 3, &d, 7).expect("input");
        assert_eq!(inp.x.len(), 3 * 86 * 86);
        // Corners map onto the source corners; the digit's ink is somewhere in the middle.
        let first = &d.test.images[..784];
        assert!((inp.x[0] - first[0] as f32 / 255.0).abs() < 1e-6);
        assert!((inp.x[86 * 86 - 1] - first[783] as f32 / 255.0).abs() < 1e-6);
        assert!(inp.x[..86 * 86].iter().any(|&v| v > 0.5));
        let same = ladder_input(LadderLayer::LenetC1, 3, &d, 7).expect("input");
        assert_eq!(inp.w, same.w);
        let conv1 = ladder_input(LadderLayer::LabConv1, 2, &d, 7).expect("input");
        assert_eq!(
            conv1.x[..784],
            first.iter().map(|&v| v as f32 / 255.0).collect::<Vec<_>>()[..]
        );
    }

    #[test]
    fn cpu_im2col_matches_the_naive_reference_on_every_layer() {
        let d = sample();
        for l in LadderLayer::ALL {
            let inp = ladder_input(l, 2, &d, 1).expect("input");
            let (rows, check) = cpu_rows(l, &inp, 2, 1);
            assert!(check.ok, "{check:?}");
            assert!(
                check.max_abs > 0.0 || l == LadderLayer::LabConv1,
                "{check:?}"
            );
            assert_eq!(rows.len(), 2);
            assert!(rows.iter().all(|r| r.ms_p50 > 0.0 && r.tflops > 0.0));
        }
    }

    #[test]
    fn compare_catches_wrong_and_unwritten_outputs() {
        let want = vec![1.0, -2.0, 0.5];
        let c = compare(
            LadderLayer::LabConv1,
            "x",
            1,
            1,
            &[1.0, -2.0, 0.5],
            &want,
            1e-6,
        );
        assert!(c.ok);
        let c = compare(
            LadderLayer::LabConv1,
            "x",
            1,
            1,
            &[1.0, -2.01, 0.5],
            &want,
            1e-3,
        );
        assert!(!c.ok && (c.max_abs - 0.01).abs() < 1e-6);
        let c = compare(
            LadderLayer::LabConv1,
            "x",
            1,
            1,
            &[1.0, f32::NAN, 0.5],
            &want,
            1.0,
        );
        assert!(!c.ok && c.non_finite == 1);
        let c = compare(LadderLayer::LabConv1, "x", 1, 1, &[1.0, -2.0], &want, 1.0);
        assert!(!c.ok, "a short output fails");
    }

    #[test]
    fn check_images_spread_over_the_batch() {
        assert_eq!(check_images(10_000, 5), vec![0, 2499, 4999, 7499, 9999]);
        assert_eq!(check_images(3, 5), vec![0, 1, 2]);
        assert_eq!(
            check_images(100, 1),
            vec![0, 99],
            "never fewer than first and last"
        );
    }

    #[test]
    fn speedups_are_relative_to_rung1_of_the_same_layer() {
        let mk = |layer: LadderLayer, rung, ms| {
            finish_row(layer, "r", rung, 100, (4, 4), (ms, ms, ms, 1))
        };
        let mut rows = vec![
            mk(LadderLayer::LabConv1, Some(1), 10.0),
            mk(LadderLayer::LabConv1, Some(4), 2.0),
            mk(LadderLayer::LabConv2, Some(4), 1.0),
        ];
        fill_speedups(&mut rows);
        assert_eq!(rows[0].speedup_vs_rung1, Some(1.0));
        assert_eq!(rows[1].speedup_vs_rung1, Some(5.0));
        assert_eq!(rows[2].speedup_vs_rung1, None);
        // conv1, 100 images: 2·100·21632·9 FLOPs over (100·784 + 288)·4 + 100·21632·4 bytes.
        let r = &rows[0];
        let want =
            2.0 * 100.0 * 21632.0 * 9.0 / ((100.0 * 784.0 + 288.0) * 4.0 + 100.0 * 21632.0 * 4.0);
        assert!((r.intensity - want).abs() < 1e-9, "{}", r.intensity);
    }
}
