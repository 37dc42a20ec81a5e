//! The convolution ladder of the Kernel Reveal (Act III, `showdown bench conv`): its inputs
//! (real images where the layer reads images) and the CPU rows (the naive f64 reference every
//! rung is checked against, and im2col + GEMM). The layers and the report's types live in the
//! core ([`showdown_core::bench::conv`]), re-exported here; the GPU rungs live in
//! `cuda::conv_ladder`.

use std::time::Instant;

use rand::{Rng, SeedableRng};

use crate::backend::cpu::conv2d_im2col_fwd;
use crate::backend::reference::conv2d_fwd;
use crate::data::Dataset;
use crate::error::{ComputeError, Result};
use crate::model::ConvShape;

pub use crate::inference::percentiles;
pub use showdown_core::bench::conv::{
    conv_flops, fill_speedups, finish_row, Ceilings, ConvCheck, ConvLadderReport, ConvRow,
    LadderLayer,
};

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
    let mut out = Vec::with_capacity(images.len() * s.out_len());
    // Never stopped: always `Ok`.
    let _ = reference_into(x, w, s, images, &mut out, &|| false);
    out
}

/// [`reference_outputs`] appended to `out`, image by image, stopping with
/// [`ComputeError::Cancelled`] before an image once `should_stop` says so.
fn reference_into(
    x: &[f32],
    w: &[f32],
    s: &ConvShape,
    images: &[usize],
    out: &mut Vec<f64>,
    should_stop: &dyn Fn() -> bool,
) -> Result<()> {
    let w64: Vec<f64> = w.iter().map(|&v| v as f64).collect();
    let zero = vec![0.0; s.c_out];
    for &i in images {
        if should_stop() {
            return Err(ComputeError::Cancelled);
        }
        let xi: Vec<f64> = x[i * s.in_len()..(i + 1) * s.in_len()]
            .iter()
            .map(|&v| v as f64)
            .collect();
        out.extend(conv2d_fwd(&xi, &w64, &zero, 1, s));
    }
    Ok(())
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

/// The CPU rows on `batch` images (small: these are for correctness and scale): the naive f64
/// reference and im2col + GEMM (f32), timed `reps` times each, and im2col checked against the
/// reference. Stops with [`ComputeError::Cancelled`] once `should_stop` says so, checked
/// before each image (a cancelled job stops within one image's convolution).
pub fn cpu_rows(
    layer: LadderLayer,
    input: &LadderInput,
    batch: usize,
    reps: usize,
    should_stop: &dyn Fn() -> bool,
) -> Result<(Vec<ConvRow>, ConvCheck)> {
    let s = layer.shape();
    let images: Vec<usize> = (0..batch).collect();
    let mut t = Vec::new();
    let mut want = Vec::new();
    for _ in 0..reps.max(1) {
        let t0 = Instant::now();
        want = Vec::with_capacity(images.len() * s.out_len());
        reference_into(&input.x, &input.w, &s, &images, &mut want, should_stop)?;
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
            if should_stop() {
                return Err(ComputeError::Cancelled);
            }
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
    Ok((vec![naive, im2col], check))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Dataset {
        crate::data::mnist_sample().expect("the embedded sample")
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
            let (rows, check) = cpu_rows(l, &inp, 2, 1, &|| false).expect("rows");
            assert!(check.ok, "{check:?}");
            assert!(
                check.max_abs > 0.0 || l == LadderLayer::LabConv1,
                "{check:?}"
            );
            assert_eq!(rows.len(), 2);
            assert!(rows.iter().all(|r| r.ms_p50 > 0.0 && r.tflops > 0.0));
        }
    }

    /// Issue 30: the CPU rows stop within an image once asked to, instead of finishing the
    /// layer (a cancelled ladder answered `ok` after its last layer).
    #[test]
    fn cpu_rows_stop_when_asked() {
        let d = sample();
        let inp = ladder_input(LadderLayer::LabConv2, 8, &d, 1).expect("input");
        let calls = std::cell::Cell::new(0usize);
        let stop_after_three = || {
            calls.set(calls.get() + 1);
            calls.get() > 3
        };
        let e = cpu_rows(LadderLayer::LabConv2, &inp, 8, 3, &stop_after_three).unwrap_err();
        assert!(matches!(e, ComputeError::Cancelled), "{e}");
        assert_eq!(calls.get(), 4, "checked before each image, stopped at once");
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
}
