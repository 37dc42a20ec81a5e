//! The kernel lab: our activation and normalisation kernels checked against an f64 reference
//! and timed with CUDA events against the device-to-device copy ceiling measured in the same
//! run (`showdown bench kernels`).

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream};

use super::launch::{self, blocks_of, Kernel};
use half::f16;
use rand::{Rng, SeedableRng};

use crate::error::{ComputeError, Result};

/// The lab's data (ops, dtypes, check and timing rows) live in the core.
pub use showdown_core::bench::kernels::{BenchRow, CheckRow, LabDtype, Op};

fn err(reason: impl std::fmt::Display) -> ComputeError {
    ComputeError::Backend {
        backend: "cuda".into(),
        reason: reason.to_string(),
    }
}

const EPS: f32 = 1e-5;

fn gelu(v: f64) -> f64 {
    crate::model::Activation::Gelu.apply(v)
}

/// The f64 reference of `op` on a `rows × cols` matrix.
pub fn reference(
    op: Op,
    x: &[f64],
    gamma: &[f64],
    beta: &[f64],
    rows: usize,
    cols: usize,
) -> Vec<f64> {
    match op {
        Op::Relu => x.iter().map(|&v| v.max(0.0)).collect(),
        Op::GeluErf => x.iter().map(|&v| gelu(v)).collect(),
        Op::GeluTanh => x
            .iter()
            .map(|&v| {
                0.5 * v
                    * (1.0
                        + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh())
            })
            .collect(),
        Op::Swish => x.iter().map(|&v| v / (1.0 + (-v).exp())).collect(),
        Op::Layernorm | Op::LayernormGelu => {
            let mut out = vec![0.0; x.len()];
            for r in 0..rows {
                let row = &x[r * cols..(r + 1) * cols];
                let mean = row.iter().sum::<f64>() / cols as f64;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / cols as f64;
                let rstd = 1.0 / (var + EPS as f64).sqrt();
                for c in 0..cols {
                    let o = (row[c] - mean) * rstd * gamma[c] + beta[c];
                    out[r * cols + c] = if op == Op::LayernormGelu { gelu(o) } else { o };
                }
            }
            out
        }
    }
}

/// The kernel lab on one GPU.
pub struct KernelLab {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    funcs: HashMap<String, CudaFunction>,
    sms: u32,
    /// The device in words.
    pub device: String,
}

impl KernelLab {
    /// Opens GPU `ordinal` and compiles the activation and norm families for it.
    pub fn new(ordinal: usize) -> Result<Self> {
        let super::OpenDevice {
            ctx,
            arch,
            device,
            sms,
        } = super::open_device(ordinal)?;
        let funcs = super::load_families(&ctx, &[kernels::ACTIVATIONS, kernels::NORM], &arch)?;
        Ok(KernelLab {
            stream: ctx.default_stream(),
            device,
            ctx,
            funcs,
            sms,
        })
    }

    fn launch(
        &self,
        op: Op,
        dt: LabDtype,
        x: &CudaSlice<u8>,
        y: &mut CudaSlice<u8>,
        gb: &(CudaSlice<f32>, CudaSlice<f32>),
        rows: usize,
        cols: usize,
    ) -> Result<()> {
        let k = Kernel::find(&self.funcs, &format!("{}_{}", op.name(), dt.suffix()))?;
        if op.is_norm() {
            // 128 threads hold a 4096-wide row in registers (8 float4 or 4 × 8 halves each).
            // One block per row (the kernels stride over rows, so any grid is lossless): on an
            // H100 it was worth 1–1.5 points of the copy for FP16 against a grid capped at
            // sms · 32 (bench/ln_variants.cu, rows S and S').
            let cfg = blocks_of(rows.clamp(1, 1 << 30) as u32, 128);
            // SAFETY: x and y hold rows·cols elements of the dtype (the callers' buffers),
            // gamma and beta cols floats.
            unsafe { launch::layernorm(&self.stream, k, cfg, x, y, &gb.0, &gb.1, rows, cols, EPS) }
        } else {
            let vec = 16 / dt.size();
            // Clamped to sms · 32: lossless.
            let blocks = (rows * cols)
                .div_ceil(vec)
                .div_ceil(256)
                .clamp(1, self.sms as usize * 32) as u32;
            // SAFETY: x and y hold rows·cols elements of the dtype, 16-byte aligned (cudaMalloc).
            unsafe {
                launch::activation(&self.stream, k, blocks_of(blocks, 256), x, y, rows * cols)
            }
        }
    }

    fn upload(&self, v: &[f32], dt: LabDtype) -> Result<CudaSlice<u8>> {
        let bytes: Vec<u8> = match dt {
            LabDtype::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            LabDtype::F16 => v
                .iter()
                .flat_map(|x| f16::from_f32(*x).to_le_bytes())
                .collect(),
        };
        self.stream.clone_htod(&bytes).map_err(err)
    }

    fn download(&self, s: &CudaSlice<u8>, dt: LabDtype) -> Result<Vec<f32>> {
        let b = self.stream.clone_dtoh(s).map_err(err)?;
        Ok(match dt {
            LabDtype::F32 => b
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            LabDtype::F16 => b
                .chunks_exact(2)
                .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
        })
    }

    /// Checks `op` in `dt` on a `rows × cols` input of fresh random values against the f64
    /// reference (computed from the inputs as stored, i.e. rounded to the dtype).
    pub fn check(&self, op: Op, dt: LabDtype, rows: usize, cols: usize) -> Result<CheckRow> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rand::random());
        let x: Vec<f32> = (0..rows * cols)
            .map(|_| rng.random_range(-4.0f32..4.0) + if op.is_norm() { 3.0 } else { 0.0 })
            .collect();
        let g: Vec<f32> = (0..cols).map(|_| rng.random_range(0.5f32..1.5)).collect();
        let bt: Vec<f32> = (0..cols).map(|_| rng.random_range(-0.5f32..0.5)).collect();
        let xd = self.upload(&x, dt)?;
        let stored = self.download(&xd, dt)?;
        let mut yd = self.upload(&vec![f32::NAN; rows * cols], dt)?; // poisoned
        let gb = (
            self.stream.clone_htod(&g).map_err(err)?,
            self.stream.clone_htod(&bt).map_err(err)?,
        );
        self.launch(op, dt, &xd, &mut yd, &gb, rows, cols)?;
        let y = self.download(&yd, dt)?;
        let to64 = |v: &[f32]| v.iter().map(|&a| a as f64).collect::<Vec<_>>();
        let want = reference(op, &to64(&stored), &to64(&g), &to64(&bt), rows, cols);
        let (mut max_abs, mut max_rel) = (0.0f64, 0.0f64);
        for (a, b) in y.iter().zip(&want) {
            let d = if a.is_finite() {
                (*a as f64 - b).abs()
            } else {
                f64::INFINITY
            };
            max_abs = max_abs.max(d);
            max_rel = max_rel.max(d / b.abs().max(1.0));
        }
        let bound = match dt {
            LabDtype::F32 => 2e-5,
            LabDtype::F16 => 2e-3,
        };
        Ok(CheckRow {
            op,
            dtype: dt,
            shape: [rows, cols],
            max_abs,
            max_rel,
            bound,
            ok: max_rel <= bound,
        })
    }

    fn time(&self, reps: usize, f: impl FnMut(usize) -> Result<()>) -> Result<(f64, f64, f64)> {
        let t = super::bench::time_events(&self.ctx, &self.stream, 5, reps, f)?;
        Ok(crate::conv_ladder::percentiles(t))
    }

    /// Times every op in both dtypes on `rows × cols` (inputs alternate between two buffers,
    /// each larger than L2 at the default size), plus each dtype's device-to-device copy
    /// ceiling (a copy of the bytes its kernels move).
    pub fn bench(&self, rows: usize, cols: usize, reps: usize) -> Result<Vec<BenchRow>> {
        self.bench_some(
            rows,
            cols,
            reps,
            &Op::ALL,
            &[LabDtype::F32, LabDtype::F16],
            &mut |_| Ok(()),
        )
    }

    /// [`KernelLab::bench`] of `ops` in `dtypes` only (their copy ceilings always); `progress` is
    /// told each row before it is timed (`gelu_erf f16`) and stops the bench with its error.
    pub fn bench_some(
        &self,
        rows: usize,
        cols: usize,
        reps: usize,
        ops: &[Op],
        dtypes: &[LabDtype],
        progress: &mut dyn FnMut(&str) -> Result<()>,
    ) -> Result<Vec<BenchRow>> {
        let n = rows * cols;
        progress("copy ceiling")?;
        let mut out = Vec::new();
        // The copy ceiling of each dtype: a device-to-device copy of the same bytes its kernels
        // read and write (an FP16 kernel moves half an FP32 kernel's bytes, and a shorter copy
        // pays its ramp-up and drain on fewer bytes: the fair ceiling is the copy of its size).
        let mut copy_gbps = Vec::new();
        for &dt in dtypes {
            let bytes = n * dt.size();
            let src = self.stream.alloc_zeros::<u8>(bytes).map_err(err)?;
            let mut dst = self.stream.alloc_zeros::<u8>(bytes).map_err(err)?;
            let (p50, p90, p99) = self.time(reps, |_| {
                self.stream.memcpy_dtod(&src, &mut dst).map_err(err)
            })?;
            let row = bench_row("copy", dt, [rows, cols], (p50, p90, p99), None);
            copy_gbps.push((dt, row.gbps));
            out.push(row);
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let host: Vec<f32> = (0..n).map(|_| rng.random_range(-3.0f32..3.0)).collect();
        let gb = (
            self.stream.clone_htod(&vec![1.0f32; cols]).map_err(err)?,
            self.stream.clone_htod(&vec![0.0f32; cols]).map_err(err)?,
        );
        for &(dt, ceiling) in &copy_gbps {
            let xs = [self.upload(&host, dt)?, self.upload(&host, dt)?];
            let mut y = self.stream.alloc_zeros::<u8>(n * dt.size()).map_err(err)?;
            for &op in ops {
                progress(&format!("{} {}", op.name(), dt.suffix()))?;
                let (p50, p90, p99) = self.time(reps, |i| {
                    self.launch(op, dt, &xs[i % 2], &mut y, &gb, rows, cols)
                })?;
                out.push(bench_row(
                    op.name(),
                    dt,
                    [rows, cols],
                    (p50, p90, p99),
                    Some(ceiling),
                ));
            }
        }
        Ok(out)
    }
}

/// A bench row of `op` over a `shape` of `dt` values read once and written once, from its
/// (p50, p90, p99) milliseconds: GB/s counting both, and the fraction of `ceiling` (the copy of
/// the same bytes, GB/s; the copy itself is its own ceiling, `None`).
fn bench_row(
    op: &str,
    dt: LabDtype,
    shape: [usize; 2],
    (p50, p90, p99): (f64, f64, f64),
    ceiling: Option<f64>,
) -> BenchRow {
    let gbps = 2.0 * (shape[0] * shape[1] * dt.size()) as f64 / (p50 * 1e-3) / 1e9;
    BenchRow {
        op: op.into(),
        dtype: dt.suffix().into(),
        shape,
        ms_p50: p50,
        ms_p90: p90,
        ms_p99: p99,
        gbps,
        of_copy: ceiling.map_or(1.0, |c| gbps / c),
    }
}

impl KernelLab {
    /// For a profiler (`showdown profile-target`): `warmups` launches of `op` in `dt` on a
    /// `rows × cols` input, then one inside the NVTX range `range` (what ncu filters on), the
    /// stream drained before the range closes. Nothing is checked or timed.
    pub fn profile_launch(
        &self,
        op: Op,
        dt: LabDtype,
        rows: usize,
        cols: usize,
        warmups: usize,
        range: &str,
    ) -> Result<()> {
        let n = rows
            .checked_mul(cols)
            .ok_or_else(|| ComputeError::bad_arg("rows × cols", rows, "overflows"))?;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let host: Vec<f32> = (0..n).map(|_| rng.random_range(-3.0f32..3.0)).collect();
        let x = self.upload(&host, dt)?;
        drop(host);
        let mut y = self.stream.alloc_zeros::<u8>(n * dt.size()).map_err(err)?;
        let gb = (
            self.stream.clone_htod(&vec![1.0f32; cols]).map_err(err)?,
            self.stream.clone_htod(&vec![0.0f32; cols]).map_err(err)?,
        );
        for _ in 0..warmups {
            self.launch(op, dt, &x, &mut y, &gb, rows, cols)?;
        }
        self.stream.synchronize().map_err(err)?;
        let _range = crate::trace::range(range);
        self.launch(op, dt, &x, &mut y, &gb, rows, cols)?;
        self.stream.synchronize().map_err(err)
    }
}

/// The awkward shapes every op is checked on: one row, odd widths, widths that are not a
/// multiple of the vector size, and a wide row.
pub const CHECK_SHAPES: [[usize; 2]; 5] = [[1, 4096], [3, 1001], [7, 33], [64, 4096], [2, 7]];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bench_row_counts_the_bytes_read_and_written_against_its_ceiling() {
        // 1024 × 1024 FP16 values: 2 MiB read + 2 MiB written in 0.002 ms.
        let r = bench_row(
            "relu",
            LabDtype::F16,
            [1024, 1024],
            (0.002, 0.003, 0.004),
            Some(2000.0),
        );
        let gbps = 2.0 * (1024.0 * 1024.0 * 2.0) / 2e-6 / 1e9;
        assert!((r.gbps - gbps).abs() < 1e-6 * gbps, "{r:?}");
        assert!((r.of_copy - gbps / 2000.0).abs() < 1e-9, "{r:?}");
        assert_eq!(
            (r.op.as_str(), r.dtype.as_str(), r.shape),
            ("relu", "f16", [1024, 1024])
        );
        assert_eq!((r.ms_p50, r.ms_p90, r.ms_p99), (0.002, 0.003, 0.004));
        // The copy is its own ceiling.
        let c = bench_row("copy", LabDtype::F32, [8, 8], (0.001, 0.001, 0.001), None);
        assert_eq!(c.of_copy, 1.0);
        assert!((c.gbps - 2.0 * 256.0 / 1e-6 / 1e9).abs() < 1e-9, "{c:?}");
    }
}
