//! The precision crossover's GPU sweep: cuBLASLt (the vendor library, as the ceiling) through
//! cudarc, square products and the lab CNN's GEMMs in FP32 strict, TF32, FP16, BF16 and FP8
//! E4M3, all in the TN layout FP8 requires on Hopper (`D[m×n] = Aᵀ·B`, `A` stored `k×m`,
//! `B` stored `k×n`, column-major), FP8 with per-tensor scale pointers and every dimension a
//! multiple of 16 (the CNN's shapes padded with zeros). Timed with CUDA events over operand
//! sets rotated so that one pass spills the L2, median of many; each result checked against
//! an f64 product of the same rounded operands (on sampled columns for big products); the
//! copy bandwidth measured in the same run. A GPU below sm_89, or a cuBLASLt without an FP8
//! algorithm, gives a skipped FP8 row with the reason.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cudarc::cublaslt::result as lt;
use cudarc::cublaslt::sys;
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use half::{bf16, f16};
use rand::{Rng, SeedableRng};

use super::err;
use crate::bench::crossover::{
    tolerance, CrossoverReport, GemmCheck, GemmPoint, GemmShape, Regime, SkippedPrecision, ORDER,
};
use crate::error::{ComputeError, Result};
use crate::gemm_sweep::{
    e4m3_tensor, median, operands, pad_rows, plan, report, round_tf32, run_shape, unpad_rows,
    CHECK_ENTRIES,
};
use crate::lab_job::LabJob;
use crate::protocol::CrossoverRequest;
use crate::types::Precision;

/// Time budget of one point, ms (the reps are as many as fit, 10 to 200).
const BUDGET_MS: f64 = 200.0;
/// cuBLASLt's workspace: 32 MiB, NVIDIA's advice for Hopper.
const WORKSPACE: usize = 32 << 20;
/// Columns of `D` downloaded for the check of a big product.
const CHECK_COLUMNS: usize = 16;

/// Runs `f`, turning a panic inside the library bindings (a symbol missing from an old
/// cuBLASLt) into an error.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(err(format!("{what} panicked"))))
}

fn lt_err(what: &str) -> impl Fn(lt::CublasError) -> ComputeError + '_ {
    move |e| err(format!("cuBLASLt {what}: {e}"))
}

/// A cuBLASLt handle, destroyed on drop.
struct Handle(sys::cublasLtHandle_t);
impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cublasLtCreate and is destroyed once.
        let _ = unsafe { lt::destroy_handle(self.0) };
    }
}

/// A matrix layout, destroyed on drop.
struct Layout(sys::cublasLtMatrixLayout_t);
impl Drop for Layout {
    fn drop(&mut self) {
        // SAFETY: created by cublasLtMatrixLayoutCreate, destroyed once.
        let _ = unsafe { lt::destroy_matrix_layout(self.0) };
    }
}

/// A matmul descriptor, destroyed on drop.
struct Desc(sys::cublasLtMatmulDesc_t);
impl Drop for Desc {
    fn drop(&mut self) {
        // SAFETY: created by cublasLtMatmulDescCreate, destroyed once.
        let _ = unsafe { lt::destroy_matmul_desc(self.0) };
    }
}

/// A heuristic preference, destroyed on drop.
struct Pref(sys::cublasLtMatmulPreference_t);
impl Drop for Pref {
    fn drop(&mut self) {
        // SAFETY: created by cublasLtMatmulPreferenceCreate, destroyed once.
        let _ = unsafe { lt::destroy_matmul_pref(self.0) };
    }
}

/// Sets one attribute of a descriptor from `value`.
fn set_desc<T>(d: &Desc, attr: sys::cublasLtMatmulDescAttributes_t, value: &T) -> Result<()> {
    // SAFETY: `value` is a live `T` of the size given, the attribute's documented type.
    unsafe {
        lt::set_matmul_desc_attribute(
            d.0,
            attr,
            (value as *const T).cast(),
            std::mem::size_of::<T>(),
        )
    }
    .map_err(lt_err("descriptor attribute"))
}

/// The cuBLASLt types of a precision: operands, output, compute.
fn types(
    p: Precision,
) -> (
    sys::cudaDataType,
    sys::cudaDataType,
    sys::cublasComputeType_t,
) {
    use sys::cublasComputeType_t as C;
    use sys::cudaDataType_t as T;
    match p {
        Precision::Fp32 => (T::CUDA_R_32F, T::CUDA_R_32F, C::CUBLAS_COMPUTE_32F),
        Precision::Tf32 => (
            T::CUDA_R_32F,
            T::CUDA_R_32F,
            C::CUBLAS_COMPUTE_32F_FAST_TF32,
        ),
        Precision::Fp16 => (T::CUDA_R_16F, T::CUDA_R_16F, C::CUBLAS_COMPUTE_32F),
        Precision::Bf16 => (T::CUDA_R_16BF, T::CUDA_R_16BF, C::CUBLAS_COMPUTE_32F),
        Precision::Fp8 => (T::CUDA_R_8F_E4M3, T::CUDA_R_16BF, C::CUBLAS_COMPUTE_32F),
    }
}

/// Bytes of one operand element and one output element.
fn widths(p: Precision) -> (usize, usize) {
    match p {
        Precision::Fp32 | Precision::Tf32 => (4, 4),
        Precision::Fp16 | Precision::Bf16 => (2, 2),
        Precision::Fp8 => (1, 2),
    }
}

/// The unit round-off of the output.
fn out_unit(p: Precision) -> f64 {
    match p {
        Precision::Fp32 | Precision::Tf32 => 2f64.powi(-24),
        Precision::Fp16 => 2f64.powi(-11),
        Precision::Bf16 | Precision::Fp8 => 2f64.powi(-8),
    }
}

/// One planned product of one precision: descriptor, layouts and the algorithm chosen.
struct Plan {
    desc: Desc,
    a: Layout,
    b: Layout,
    d: Layout,
    algo: sys::cublasLtMatmulAlgo_t,
}

/// Operands on the device as raw bytes, `sets` copies of `A` and `B` to rotate through.
struct Operands {
    a: Vec<CudaSlice<u8>>,
    b: Vec<CudaSlice<u8>>,
    d: CudaSlice<u8>,
}

/// The GPU, its stream and cuBLASLt.
struct Lab {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    handle: Handle,
    workspace: CudaSlice<u8>,
    l2_bytes: usize,
    cc: (i32, i32),
    device: String,
    version: usize,
}

fn int(what: &str, v: usize) -> Result<u64> {
    u64::try_from(v).map_err(|_| err(format!("{what} = {v} does not fit")))
}

impl Lab {
    fn new(ordinal: usize) -> Result<Self> {
        let open = super::open_device(ordinal)?;
        // SAFETY: only checks whether the shared library can be opened.
        if !unsafe { sys::is_culib_present() } {
            return Err(err(
                "libcublasLt.so not found (add the CUDA toolkit's lib folder to LD_LIBRARY_PATH)",
            ));
        }
        let ctx = open.ctx.clone();
        let stream = ctx.default_stream();
        let (handle, version) = guarded("cuBLASLt", || {
            let h = lt::create_handle().map_err(lt_err("create"))?;
            // SAFETY: a plain query of the loaded library.
            let v = unsafe { sys::cublasLtGetVersion() };
            Ok((Handle(h), v))
        })?;
        let workspace = stream.alloc_zeros::<u8>(WORKSPACE).map_err(err)?;
        let l2 = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .map_err(err)?;
        let cc = ctx.compute_capability().map_err(err)?;
        Ok(Lab {
            ctx,
            stream,
            handle,
            workspace,
            l2_bytes: usize::try_from(l2).unwrap_or(50 << 20).max(1 << 20),
            cc,
            device: open.device,
            version,
        })
    }

    /// Why this GPU or this cuBLASLt cannot run `p`, if it cannot.
    fn cannot(&self, p: Precision) -> Option<String> {
        match p {
            Precision::Fp8 if self.cc < (8, 9) => Some(format!(
                "FP8 tensor cores need sm_89 or newer (Ada, Hopper); this GPU is sm_{}{}",
                self.cc.0, self.cc.1
            )),
            Precision::Fp8 if self.version < 110_800 => Some(format!(
                "this cuBLASLt ({}) predates FP8 (CUDA 11.8)",
                self.version
            )),
            Precision::Tf32 | Precision::Bf16 if self.cc < (8, 0) => Some(format!(
                "{} tensor cores need sm_80 or newer; this GPU is sm_{}{}",
                p.as_str(),
                self.cc.0,
                self.cc.1
            )),
            _ => None,
        }
    }

    /// The descriptor, layouts and algorithm of `D[m×n] = Aᵀ·B` in `p`.
    fn plan(&self, p: Precision, s: GemmShape, scales: Option<(u64, u64)>) -> Result<Plan> {
        let (ty, out, compute) = types(p);
        let (m, n, k) = (int("m", s.m)?, int("n", s.n)?, int("k", s.k)?);
        let ld = |v: u64| i64::try_from(v).map_err(|_| err("leading dimension too large"));
        let layout = |ty, rows, cols, ld| {
            lt::create_matrix_layout(ty, rows, cols, ld)
                .map(Layout)
                .map_err(lt_err("layout"))
        };
        // A stored k×m (op T), B stored k×n (op N), D m×n; column-major.
        let a = layout(ty, k, m, ld(k)?)?;
        let b = layout(ty, k, n, ld(k)?)?;
        let d = layout(out, m, n, ld(m)?)?;
        let desc = Desc(
            lt::create_matmul_desc(compute, sys::cudaDataType_t::CUDA_R_32F)
                .map_err(lt_err("descriptor"))?,
        );
        let t: i32 = cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_T as i32;
        let nn: i32 = cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N as i32;
        set_desc(
            &desc,
            sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
            &t,
        )?;
        set_desc(
            &desc,
            sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB,
            &nn,
        )?;
        if let Some((sa, sb)) = scales {
            set_desc(
                &desc,
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                &sa,
            )?;
            set_desc(
                &desc,
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                &sb,
            )?;
        }
        let pref = Pref(lt::create_matmul_pref().map_err(lt_err("preference"))?);
        let ws = WORKSPACE;
        // SAFETY: `ws` is a live usize, the attribute's type.
        unsafe {
            lt::set_matmul_pref_attribute(
                pref.0,
                sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&ws as *const usize).cast(),
                std::mem::size_of::<usize>(),
            )
        }
        .map_err(lt_err("preference attribute"))?;
        // SAFETY: every handle is live; C and D share D's layout.
        let heur = unsafe {
            lt::get_matmul_algo_heuristic(self.handle.0, desc.0, a.0, b.0, d.0, d.0, pref.0)
        }
        .map_err(|e| {
            err(format!(
                "cuBLASLt has no {} algorithm for {} on this GPU: {e}",
                p.as_str(),
                s.text()
            ))
        })?;
        Ok(Plan {
            desc,
            a,
            b,
            d,
            algo: heur.algo,
        })
    }

    /// Queues one product on the stream with operand set `i`.
    fn run(&self, plan: &Plan, ops: &Operands, i: usize) -> Result<()> {
        let set = i % ops.a.len().max(1);
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (Some(a), Some(b)) = (ops.a.get(set), ops.b.get(set)) else {
            return Err(err("no operand set"));
        };
        let (ap, _ra) = a.device_ptr(&self.stream);
        let (bp, _rb) = b.device_ptr(&self.stream);
        let (dp, _rd) = ops.d.device_ptr(&self.stream);
        let (wp, _rw) = self.workspace.device_ptr(&self.stream);
        // SAFETY: the layouts describe the buffers (A k·m, B k·n, D m·n elements of the
        // plan's types, allocated by `upload`); alpha and beta are f32 (scale type 32F); the
        // workspace holds WORKSPACE bytes; C aliases D with beta 0.
        unsafe {
            lt::matmul(
                self.handle.0,
                plan.desc.0,
                (&alpha as *const f32).cast(),
                (&beta as *const f32).cast(),
                ap as *const _,
                plan.a.0,
                bp as *const _,
                plan.b.0,
                dp as *const _,
                plan.d.0,
                dp as *mut _,
                plan.d.0,
                &plan.algo,
                wp as *mut _,
                WORKSPACE,
                self.stream.cu_stream() as *mut _,
            )
        }
        .map_err(lt_err("matmul"))
    }

    /// Uploads `a` and `b` (bytes) and copies them on the device until a pass over the sets
    /// spills the L2 twice (2 to 256 sets, within half the free memory); a zeroed `D`.
    fn upload(&self, a: &[u8], b: &[u8], d_bytes: usize) -> Result<Operands> {
        let per_set = a.len() + b.len();
        let (free, _) = self.ctx.mem_get_info().map_err(err)?;
        let want = (2 * self.l2_bytes).div_ceil(per_set.max(1)).clamp(2, 256);
        let fit = (free / 2).saturating_sub(d_bytes) / per_set.max(1);
        let sets = want.min(fit.max(1));
        let a0 = self.stream.clone_htod(a).map_err(err)?;
        let b0 = self.stream.clone_htod(b).map_err(err)?;
        let mut ops = Operands {
            a: vec![],
            b: vec![],
            d: self.stream.alloc_zeros::<u8>(d_bytes.max(1)).map_err(err)?,
        };
        for _ in 1..sets {
            ops.a.push(self.stream.clone_dtod(&a0).map_err(err)?);
            ops.b.push(self.stream.clone_dtod(&b0).map_err(err)?);
        }
        ops.a.push(a0);
        ops.b.push(b0);
        Ok(ops)
    }

    /// Times `plan` over the rotating sets: one warm-up call, one timed alone to size the run,
    /// then as many as fit [`BUDGET_MS`] (10 to 200), each between two CUDA events; the
    /// stream is drained and the cancel flag read at least every ~100 ms of queued work.
    fn time(&self, plan: &Plan, ops: &Operands, cancel: &AtomicBool) -> Result<(f64, usize)> {
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let ev = || self.ctx.new_event(flags).map_err(err);
        self.run(plan, ops, 0)?;
        let (s, e) = (ev()?, ev()?);
        s.record(&self.stream).map_err(err)?;
        self.run(plan, ops, 1)?;
        e.record(&self.stream).map_err(err)?;
        self.stream.synchronize().map_err(err)?;
        let first = f64::from(s.elapsed_ms(&e).map_err(err)?).max(1e-4);
        let reps = ((BUDGET_MS / first) as usize).clamp(10, 200);
        let per_sync = ((100.0 / first) as usize).max(1);
        let mut pending = Vec::with_capacity(per_sync);
        let mut times = Vec::with_capacity(reps);
        for r in 0..reps {
            let (s, e) = (ev()?, ev()?);
            s.record(&self.stream).map_err(err)?;
            self.run(plan, ops, r + 2)?;
            e.record(&self.stream).map_err(err)?;
            pending.push((s, e));
            if pending.len() >= per_sync || r + 1 == reps {
                self.stream.synchronize().map_err(err)?;
                for (s, e) in pending.drain(..) {
                    times.push(f64::from(s.elapsed_ms(&e).map_err(err)?));
                }
                if cancel.load(Ordering::Relaxed) {
                    return Err(ComputeError::Cancelled);
                }
            }
        }
        Ok((median(&mut times), reps))
    }

    /// The copy bandwidth: a 1 GiB device-to-device copy (read and written), best of 10, GB/s.
    fn copy_gbps(&self) -> Result<f64> {
        let bytes = 1usize << 30;
        let src = self.stream.alloc_zeros::<u8>(bytes).map_err(err)?;
        let mut dst = self.stream.alloc_zeros::<u8>(bytes).map_err(err)?;
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let mut best = f64::INFINITY;
        for _ in 0..10 {
            let s = self.ctx.new_event(flags).map_err(err)?;
            let e = self.ctx.new_event(flags).map_err(err)?;
            s.record(&self.stream).map_err(err)?;
            self.stream.memcpy_dtod(&src, &mut dst).map_err(err)?;
            e.record(&self.stream).map_err(err)?;
            self.stream.synchronize().map_err(err)?;
            best = best.min(f64::from(s.elapsed_ms(&e).map_err(err)?));
        }
        Ok((2 * bytes) as f64 / (best.max(1e-6) * 1e-3) / 1e9)
    }

    /// Columns `cols` of `D` (`m` rows, column-major, `out` bytes an element) as f64.
    fn columns(
        &self,
        d: &CudaSlice<u8>,
        p: Precision,
        m: usize,
        cols: &[usize],
    ) -> Result<Vec<Vec<f64>>> {
        let (_, out) = widths(p);
        let mut v = Vec::with_capacity(cols.len());
        for &j in cols {
            let bytes = self
                .stream
                .clone_dtoh(&d.slice(j * m * out..(j + 1) * m * out))
                .map_err(err)?;
            v.push(decode(p, &bytes));
        }
        Ok(v)
    }
}

/// Output bytes as f64.
fn decode(p: Precision, bytes: &[u8]) -> Vec<f64> {
    match widths(p).1 {
        4 => bytes
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        _ => bytes
            .chunks_exact(2)
            .map(|c| {
                let bits = u16::from_le_bytes([c[0], c[1]]);
                if p == Precision::Fp16 {
                    f64::from(f16::from_bits(bits).to_f32())
                } else {
                    f64::from(bf16::from_bits(bits).to_f32())
                }
            })
            .collect(),
    }
}

/// Values as little-endian bytes (`to` gives one value's).
fn bytes_of<T: Copy, const N: usize>(v: &[T], to: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * N);
    for &x in v {
        out.extend_from_slice(&to(x));
    }
    out
}

/// The operands of one point in `p`, in the TN layout (`A` as `k×m` column-major, i.e. `m`
/// rows of `k`; `B` as `k×n` column-major, `n` rows of `k`), zero-padded to `run` (FP8's
/// multiples of 16): the bytes, the values they stand for (the check's operands, unpadded
/// index `row·k + kk`) and, for FP8, the inverse scales.
struct Rounded {
    a: Vec<u8>,
    b: Vec<u8>,
    av: Vec<f32>,
    bv: Vec<f32>,
    scales: Option<(f32, f32)>,
}

fn round_operands(
    p: Precision,
    s: GemmShape,
    run: GemmShape,
    a32: &[f32],
    bt32: &[f32],
) -> Rounded {
    let a = pad_rows(a32, s.m, s.k, run.m, run.k);
    let b = pad_rows(bt32, s.n, s.k, run.n, run.k);
    let unpad = |v: &[f32], rows: usize| unpad_rows(v, rows, s.k, run.k);
    match p {
        Precision::Fp32 | Precision::Tf32 => {
            let r = |v: &[f32]| -> Vec<f32> {
                if p == Precision::Tf32 {
                    v.iter().map(|&x| round_tf32(x)).collect()
                } else {
                    v.to_vec()
                }
            };
            let (ar, br) = (r(&a), r(&b));
            Rounded {
                a: bytes_of(&ar, f32::to_le_bytes),
                b: bytes_of(&br, f32::to_le_bytes),
                av: unpad(&ar, s.m),
                bv: unpad(&br, s.n),
                scales: None,
            }
        }
        Precision::Fp16 => {
            let ar: Vec<f16> = a.iter().map(|&x| f16::from_f32(x)).collect();
            let br: Vec<f16> = b.iter().map(|&x| f16::from_f32(x)).collect();
            let af: Vec<f32> = ar.iter().map(|x| x.to_f32()).collect();
            let bf: Vec<f32> = br.iter().map(|x| x.to_f32()).collect();
            Rounded {
                a: bytes_of(&ar, |x: f16| x.to_bits().to_le_bytes()),
                b: bytes_of(&br, |x: f16| x.to_bits().to_le_bytes()),
                av: unpad(&af, s.m),
                bv: unpad(&bf, s.n),
                scales: None,
            }
        }
        Precision::Bf16 => {
            let ar: Vec<bf16> = a.iter().map(|&x| bf16::from_f32(x)).collect();
            let br: Vec<bf16> = b.iter().map(|&x| bf16::from_f32(x)).collect();
            let af: Vec<f32> = ar.iter().map(|x| x.to_f32()).collect();
            let bf: Vec<f32> = br.iter().map(|x| x.to_f32()).collect();
            Rounded {
                a: bytes_of(&ar, |x: bf16| x.to_bits().to_le_bytes()),
                b: bytes_of(&br, |x: bf16| x.to_bits().to_le_bytes()),
                av: unpad(&af, s.m),
                bv: unpad(&bf, s.n),
                scales: None,
            }
        }
        Precision::Fp8 => {
            let (ab, ad, sa) = e4m3_tensor(&a);
            let (bb, bd, sb) = e4m3_tensor(&b);
            Rounded {
                a: ab,
                b: bb,
                av: unpad(&ad, s.m),
                bv: unpad(&bd, s.n),
                scales: Some((sa, sb)),
            }
        }
    }
}

/// One point: operands rounded and uploaded, the plan, one checked product, then the timing.
fn point(
    lab: &Lab,
    p: Precision,
    s: GemmShape,
    label: Option<String>,
    a32: &[f32],
    bt32: &[f32],
    cancel: &AtomicBool,
) -> Result<GemmPoint> {
    let run = run_shape(p, s);
    let r = round_operands(p, s, run, a32, bt32);
    let (_, out) = widths(p);
    let mut ops = lab.upload(&r.a, &r.b, run.m * run.n * out)?;
    let scale_bufs = match r.scales {
        Some((sa, sb)) => Some((
            lab.stream.clone_htod(&[sa][..]).map_err(err)?,
            lab.stream.clone_htod(&[sb][..]).map_err(err)?,
        )),
        None => None,
    };
    let scale_ptrs = scale_bufs.as_ref().map(|(a, b)| {
        let (pa, _ra) = a.device_ptr(&lab.stream);
        let (pb, _rb) = b.device_ptr(&lab.stream);
        (pa, pb)
    });
    let plan = lab.plan(p, run, scale_ptrs)?;
    // The checked product: D poisoned with NaN bytes first, so an unwritten entry fails.
    {
        let bytes = ops.d.num_bytes();
        let (dp, _rd) = ops.d.device_ptr_mut(&lab.stream);
        // SAFETY: dp addresses d's bytes; 0xFF bytes are NaN in f32, f16 and bf16.
        unsafe { cudarc::driver::result::memset_d8_async(dp, 0xFF, bytes, lab.stream.cu_stream()) }
            .map_err(err)?;
    }
    lab.run(&plan, &ops, 0)?;
    lab.stream.synchronize().map_err(err)?;
    let cols: Vec<usize> = if s.m * s.n <= CHECK_ENTRIES * 4 {
        (0..s.n).collect()
    } else {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x39);
        let mut c: Vec<usize> = (0..CHECK_COLUMNS)
            .map(|_| rng.random_range(0..s.n))
            .collect();
        c.push(s.n - 1);
        c.sort_unstable();
        c.dedup();
        c
    };
    let got = lab.columns(&ops.d, p, run.m, &cols)?;
    let rows: Vec<usize> = if s.m <= 256 {
        (0..s.m).collect()
    } else {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x93);
        let mut v: Vec<usize> = (0..(CHECK_ENTRIES / cols.len().max(1)).max(8))
            .map(|_| rng.random_range(0..s.m))
            .collect();
        v.extend([0, s.m - 1]);
        v
    };
    let tol = tolerance(p, s.k, out_unit(p));
    let mut worst = 0.0f64;
    let mut entries = 0;
    for (ci, &j) in cols.iter().enumerate() {
        for &i in &rows {
            let (mut sum, mut mag) = (0.0f64, 0.0f64);
            for kk in 0..s.k {
                let x = f64::from(r.av[i * s.k + kk]) * f64::from(r.bv[j * s.k + kk]);
                sum += x;
                mag += x.abs();
            }
            let g = got[ci][i];
            let e = if g.is_finite() {
                (g - sum).abs() / mag.max(f64::MIN_POSITIVE)
            } else {
                f64::INFINITY
            };
            worst = worst.max(e);
            entries += 1;
        }
    }
    let check = GemmCheck::new(worst, tol, entries);
    let (ms, reps) = lab.time(&plan, &ops, cancel)?;
    drop(plan);
    ops.a.clear();
    ops.b.clear();
    let (inb, outb) = widths(p);
    Ok(GemmPoint {
        precision: p,
        shape: s,
        label,
        padded: (run != s).then_some(run),
        ms_p50: ms,
        reps,
        tflops: if ms > 0.0 {
            s.flops() / (ms * 1e-3) / 1e12
        } else {
            0.0
        },
        bytes: run.bytes(inb as f64, outb as f64),
        speedup_vs_fp32: None,
        speedup_vs_bf16: None,
        regime: Regime::Launch,
        check,
    })
}

/// The GPU sweep on GPU `ordinal`.
pub fn sweep(
    req: &CrossoverRequest,
    ordinal: usize,
    job: &mut LabJob<'_>,
) -> Result<CrossoverReport> {
    let lab = Lab::new(ordinal)?;
    job.watch(|| super::telemetry::start(ordinal));
    let sizes = req.sizes_for(false);
    let plan_list = plan(&sizes, req.include_cnn);
    let mut skipped: Vec<SkippedPrecision> = Vec::new();
    let mut run: Vec<Precision> = Vec::new();
    for p in ORDER.iter().copied().filter(|p| req.precisions.contains(p)) {
        match lab.cannot(p) {
            Some(why) => {
                job.note(format!("{} skipped: {why}", p.as_str()));
                skipped.push(SkippedPrecision {
                    precision: p,
                    reason: why,
                });
            }
            None => run.push(p),
        }
    }
    job.stage("measuring the copy bandwidth", 0, 1)?;
    let copy_gbps = lab.copy_gbps()?;
    let total = run.len() * plan_list.len();
    let mut points = Vec::with_capacity(total);
    let mut failed: Vec<(Precision, String)> = Vec::new();
    let cancel = job.cancel_flag();
    for (i, (label, shape)) in plan_list.iter().enumerate() {
        let a32 = operands(shape.m * shape.k, 1 + i as u64);
        let bt32 = operands(shape.n * shape.k, 1000 + i as u64);
        for &p in &run {
            let what = match label {
                Some(l) => format!("{} {l} {}", p.as_str(), shape.text()),
                None => format!("{} N = {}", p.as_str(), shape.n),
            };
            job.stage(what.clone(), points.len() + failed.len(), total)?;
            match point(&lab, p, *shape, label.clone(), &a32, &bt32, cancel) {
                Ok(pt) => points.push(pt),
                Err(ComputeError::Cancelled) => return Err(ComputeError::Cancelled),
                Err(e) => {
                    job.note(format!("{what} left out: {e}"));
                    failed.push((p, e.to_string()));
                }
            }
        }
    }
    // A precision with no point at all is a skipped row with its first reason.
    for &p in &run {
        if !points.iter().any(|x: &GemmPoint| x.precision == p) {
            if let Some((_, why)) = failed.iter().find(|(q, _)| *q == p) {
                skipped.push(SkippedPrecision {
                    precision: p,
                    reason: why.clone(),
                });
            }
        }
    }
    let v = lab.version;
    let library = format!(
        "cuBLASLt {}.{}.{} (TN layout; FP8 E4M3 with per-tensor scales, bf16 out)",
        v / 10_000,
        (v / 100) % 100,
        v % 100
    );
    let report = report(
        lab.device.clone(),
        "cuda",
        library,
        points,
        skipped,
        copy_gbps,
    );
    job.stage("done", total, total)?;
    Ok(report)
}
