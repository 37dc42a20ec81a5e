//! NVIDIA's libraries as labelled peers, never as our default path: cuBLAS for the GEMM
//! ceilings and cuDNN for the convolution ladder's reference rows. Both are loaded dynamically;
//! a missing library is an ordinary error (the row is reported as skipped, with why).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::cudnn::sys::{
    cudnnConvolutionMode_t, cudnnDataType_t, cudnnMathType_t, cudnnTensorFormat_t,
};
use cudarc::cudnn::{ConvForward, Cudnn, CudnnDataType};
use cudarc::driver::{CudaSlice, DeviceRepr};
use half::f16;
use rand::{Rng, SeedableRng};

use super::bench::{BenchStream, LadderOptions, Outputs};
use super::err;
use crate::conv_ladder::{
    compare, finish_row, percentiles, ConvCheck, ConvRow, LadderInput, LadderLayer,
};
use crate::error::Result;

/// `v` as a 32-bit library argument (`what` names it).
fn int(what: &str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| err(format!("{what} = {v} does not fit a 32-bit argument")))
}

/// Runs `f`, turning a panic inside the library bindings into an error.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(err(format!("{what} panicked"))))
}

/// cuBLAS GEMM ceilings, 8192³: FP16 in and out with FP32 accumulation, and strict FP32
/// (the handle's default math: no TF32). TFLOP/s from the median of `reps` timed calls.
pub(super) fn gemm_ceilings(bench: &BenchStream, reps: usize) -> Result<(f64, f64)> {
    let stream = &bench.stream;
    // SAFETY: only checks whether the shared library can be opened.
    if !unsafe { cudarc::cublas::sys::is_culib_present() } {
        return Err(err(
            "libcublas.so not found (add the CUDA toolkit's lib folder to LD_LIBRARY_PATH)",
        ));
    }
    guarded("cuBLAS", || {
        let blas = CudaBlas::new(stream.clone()).map_err(err)?;
        let n = 8192usize;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let host: Vec<f32> = (0..n * n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let ni = int("n", n)?;
        let flops = 2.0 * (n as f64).powi(3);
        let h: Vec<f16> = host.iter().map(|&v| f16::from_f32(v)).collect();
        let (a, b) = (
            stream.clone_htod(&h).map_err(err)?,
            stream.clone_htod(&h).map_err(err)?,
        );
        let mut c = stream.alloc_zeros::<f16>(n * n).map_err(err)?;
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: ni,
            n: ni,
            k: ni,
            alpha: f16::ONE,
            lda: ni,
            ldb: ni,
            beta: f16::ZERO,
            ldc: ni,
        };
        // SAFETY: a, b, c hold n·n elements each, column-major n × n.
        let t = bench.time_events(3, reps, |_| {
            unsafe { blas.gemm(cfg, &a, &b, &mut c) }.map_err(err)
        })?;
        let f16_tflops = flops / (percentiles(t).0 * 1e-3) / 1e12;
        drop((a, b, c));
        let (a, b) = (
            stream.clone_htod(&host).map_err(err)?,
            stream.clone_htod(&host).map_err(err)?,
        );
        let mut c = stream.alloc_zeros::<f32>(n * n).map_err(err)?;
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: ni,
            n: ni,
            k: ni,
            alpha: 1.0f32,
            lda: ni,
            ldb: ni,
            beta: 0.0f32,
            ldc: ni,
        };
        // SAFETY: as above, f32.
        let t = bench.time_events(2, reps.min(10), |_| {
            unsafe { blas.gemm(cfg, &a, &b, &mut c) }.map_err(err)
        })?;
        Ok((f16_tflops, flops / (percentiles(t).0 * 1e-3) / 1e12))
    })
}

/// One cuDNN configuration of the ladder.
struct CudnnCase {
    name: &'static str,
    math: cudnnMathType_t,
    bound: f64,
}

/// cuDNN's forward convolution on the layer at the ladder's batch, NCHW, the algorithm cuDNN's
/// heuristics rank first (`cudnnGetConvolutionForwardAlgorithm_v7`): FP32 with the default math
/// (TF32 tensor cores allowed), FP32 with FMA math only (strict), and FP16 in and out with FP32
/// compute on tensor cores. Each checked like our rungs, then timed.
pub(super) fn cudnn_rows(
    bench: &BenchStream,
    layer: LadderLayer,
    input: &LadderInput,
    opts: &LadderOptions,
    imgs: &[usize],
    want32: &[f64],
    want16: &[f64],
) -> Result<(Vec<ConvRow>, Vec<ConvCheck>)> {
    // SAFETY: only checks whether the shared library can be opened.
    if !unsafe { cudarc::cudnn::sys::is_culib_present() } {
        return Err(err(
            "libcudnn.so not found (pip nvidia-cudnn-cu13's lib folder or a cuDNN install on LD_LIBRARY_PATH)",
        ));
    }
    guarded("cuDNN", || {
        let cudnn = Cudnn::new(bench.stream.clone()).map_err(err)?;
        let (mut rows, mut checks) = (Vec::new(), Vec::new());
        let x = bench.stream.clone_htod(&input.x).map_err(err)?;
        let w = bench.stream.clone_htod(&input.w).map_err(err)?;
        let s = layer.shape();
        let mut y = bench
            .stream
            .alloc_zeros::<f32>(opts.batch * s.out_len())
            .map_err(err)?;
        for case in [
            CudnnCase {
                name: "cudnn_f32_default_math",
                math: cudnnMathType_t::CUDNN_DEFAULT_MATH,
                bound: 5e-3,
            },
            CudnnCase {
                name: "cudnn_f32_fma_math",
                math: cudnnMathType_t::CUDNN_FMA_MATH,
                bound: 1e-4,
            },
        ] {
            let (r, c) = one_case::<f32, f32>(
                &cudnn, bench, layer, opts, imgs, &case, &x, &w, &mut y, want32,
            )?;
            rows.push(r);
            checks.push(c);
        }
        drop((x, w, y));
        let xh: Vec<f16> = input.x.iter().map(|&v| f16::from_f32(v)).collect();
        let wh: Vec<f16> = input.w.iter().map(|&v| f16::from_f32(v)).collect();
        let x = bench.stream.clone_htod(&xh).map_err(err)?;
        let w = bench.stream.clone_htod(&wh).map_err(err)?;
        let mut y = bench
            .stream
            .alloc_zeros::<f16>(opts.batch * s.out_len())
            .map_err(err)?;
        let case = CudnnCase {
            name: "cudnn_f16",
            math: cudnnMathType_t::CUDNN_TENSOR_OP_MATH,
            bound: 2e-3,
        };
        let (r, c) = one_case::<f16, f32>(
            &cudnn, bench, layer, opts, imgs, &case, &x, &w, &mut y, want16,
        )?;
        rows.push(r);
        checks.push(c);
        Ok((rows, checks))
    })
}

/// The scaling parameters 1 and 0 in a cuDNN data type.
trait Unit: CudnnDataType + DeviceRepr + Copy {
    const ONE: Self;
    const ZERO: Self;
    fn outputs(y: &CudaSlice<Self>) -> Outputs<'_>;
}
impl Unit for f32 {
    const ONE: Self = 1.0;
    const ZERO: Self = 0.0;
    fn outputs(y: &CudaSlice<Self>) -> Outputs<'_> {
        Outputs::F32(y)
    }
}
impl Unit for f16 {
    const ONE: Self = f16::ONE;
    const ZERO: Self = f16::ZERO;
    fn outputs(y: &CudaSlice<Self>) -> Outputs<'_> {
        Outputs::Half(y)
    }
}

#[allow(clippy::too_many_arguments)]
fn one_case<T: Unit, C: CudnnDataType>(
    cudnn: &Arc<Cudnn>,
    bench: &BenchStream,
    layer: LadderLayer,
    opts: &LadderOptions,
    imgs: &[usize],
    case: &CudnnCase,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    y: &mut CudaSlice<T>,
    want: &[f64],
) -> Result<(ConvRow, ConvCheck)> {
    let s = layer.shape();
    let nchw = cudnnTensorFormat_t::CUDNN_TENSOR_NCHW;
    let (batch, c_in, c_out) = (
        int("batch", opts.batch)?,
        int("c_in", s.c_in)?,
        int("c_out", s.c_out)?,
    );
    let (h, wd, k) = (int("h", s.h)?, int("w", s.w)?, int("k", s.k)?);
    let (h_out, w_out) = (int("h_out", s.h_out())?, int("w_out", s.w_out())?);
    let xd = cudnn
        .create_4d_tensor::<T>(nchw, [batch, c_in, h, wd])
        .map_err(err)?;
    let wd = cudnn
        .create_4d_filter::<T>(nchw, [c_out, c_in, k, k])
        .map_err(err)?;
    let yd = cudnn
        .create_4d_tensor::<T>(nchw, [batch, c_out, h_out, w_out])
        .map_err(err)?;
    let mut conv = cudnn
        .create_conv2d::<C>(
            [0, 0],
            [1, 1],
            [1, 1],
            cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
        )
        .map_err(err)?;
    conv.set_math_type(case.math).map_err(err)?;
    let op = ConvForward {
        conv: &conv,
        x: &xd,
        w: &wd,
        y: &yd,
    };
    let algo = op.pick_algorithm().map_err(err)?;
    let ws_bytes = op.get_workspace_size(algo).map_err(err)?;
    let mut ws = bench
        .stream
        .alloc_zeros::<u8>(ws_bytes.max(16))
        .map_err(err)?;
    let mut run = |y: &mut CudaSlice<T>| -> Result<()> {
        // SAFETY: x, w, y match the descriptors (NCHW, the layer's shape, the ladder's batch).
        unsafe { op.launch(algo, Some(&mut ws), (T::ONE, T::ZERO), x, w, y) }.map_err(err)
    };
    bench.poison(y)?;
    run(y)?;
    let check = compare(
        layer,
        case.name,
        opts.batch,
        imgs.len(),
        &bench.outputs(&s, T::outputs(y), imgs)?,
        want,
        case.bound,
    );
    let t = bench.time(opts, |_| run(y))?;
    let bytes = if T::DATA_TYPE == cudnnDataType_t::CUDNN_DATA_HALF {
        2
    } else {
        4
    };
    let mut row = finish_row(layer, case.name, None, opts.batch, (bytes, bytes), t);
    row.note = Some(format!(
        "cuDNN through cudarc, {algo:?} (heuristic first choice), workspace {:.1} MB",
        ws_bytes as f64 / 1e6
    ));
    Ok((row, check))
}
