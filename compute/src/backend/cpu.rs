//! The CPU backend: im2col + GEMM (`matrixmultiply`) convolutions, threads over the batch
//! (`rayon`), FP16/BF16 storage through `half` with FP32 arithmetic.
//!
//! Every primitive reads its inputs into per-thread FP32 scratch (a copy for FP32 buffers, a
//! conversion for FP16), computes in FP32 and rounds its outputs to the output buffer's dtype,
//! which is exactly "FP16 storage, FP32 accumulation".

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use half::{bf16, f16, slice::HalfFloatSliceExt};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use super::gemm16::{self, Elem, Kernel, Mat, Packed};
use super::{AdamParams, Backend, DType, LossSums, ScalerState, CURSOR_WORDS};
use crate::error::{ComputeError, Result};
use crate::fp8::{Fp8State, Fp8Tensor};
use crate::memory::{MemoryCategory, MemorySplit};
use crate::model::{Activation, ConvShape};
use crate::types::Precision;

/// Bytes allocated through a backend: current and peak, split by what the allocations hold
/// ([`MemoryCategory`], set by the trainer before it allocates; kernel scratch allocated
/// later counts as workspace).
#[derive(Debug, Default)]
pub struct MemoryMeter {
    state: Mutex<MeterState>,
}

#[derive(Debug)]
struct MeterState {
    current: u64,
    peak: u64,
    category: MemoryCategory,
    by: MemorySplit,
    at_peak: MemorySplit,
}

impl Default for MeterState {
    fn default() -> Self {
        MeterState {
            current: 0,
            peak: 0,
            category: MemoryCategory::Workspace,
            by: MemorySplit::default(),
            at_peak: MemorySplit::default(),
        }
    }
}

impl MemoryMeter {
    fn state(&self) -> std::sync::MutexGuard<'_, MeterState> {
        // The state is plain numbers: a panic elsewhere cannot leave it half-written.
        crate::sync::lock(&self.state)
    }
    /// Counts `bytes` in the current category; returns the category, to give them back to.
    pub(crate) fn add(&self, bytes: u64) -> MemoryCategory {
        let mut s = self.state();
        let c = s.category;
        s.current += bytes;
        *s.by.get_mut(c) += bytes;
        if s.current > s.peak {
            s.peak = s.current;
            s.at_peak = s.by;
        }
        c
    }
    pub(crate) fn sub(&self, bytes: u64, category: MemoryCategory) {
        let mut s = self.state();
        s.current = s.current.saturating_sub(bytes);
        let by = s.by.get_mut(category);
        *by = by.saturating_sub(bytes);
    }
    /// Bytes allocated now.
    pub fn current(&self) -> u64 {
        self.state().current
    }
    /// Highest `current` since the last reset.
    pub fn peak(&self) -> u64 {
        self.state().peak
    }
    /// The split of [`MemoryMeter::peak`] by category (sums to it).
    pub fn peak_split(&self) -> MemorySplit {
        self.state().at_peak
    }
    /// What the next allocations hold.
    pub(crate) fn set_category(&self, c: MemoryCategory) {
        self.state().category = c;
    }
    pub(crate) fn reset(&self) {
        let mut s = self.state();
        s.peak = s.current;
        s.at_peak = s.by;
    }
}

/// Accounting ticket: returns its bytes to the meter when dropped.
#[derive(Debug)]
pub(crate) struct Ticket {
    bytes: u64,
    category: MemoryCategory,
    meter: Arc<MemoryMeter>,
}

impl Ticket {
    /// Counts `bytes` on `meter` until the ticket is dropped.
    pub(crate) fn new(meter: &Arc<MemoryMeter>, bytes: u64) -> Ticket {
        let category = meter.add(bytes);
        Ticket {
            bytes,
            category,
            meter: meter.clone(),
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.meter.sub(self.bytes, self.category);
    }
}

/// Storage of a CPU buffer.
#[derive(Debug, Clone, PartialEq)]
pub enum Storage {
    /// f32 values.
    F32(Vec<f32>),
    /// IEEE half values.
    F16(Vec<f16>),
    /// bfloat16 values.
    Bf16(Vec<bf16>),
    /// Bytes.
    U8(Vec<u8>),
    /// 32-bit indices.
    U32(Vec<u32>),
    /// Loss scaler state.
    Scaler(ScalerState),
    /// Loss/accuracy sums.
    Sums(LossSums),
    /// FP8 scaling state.
    Fp8(Box<Fp8State>),
}

/// A CPU buffer with its memory accounting.
#[derive(Debug)]
pub struct CpuBuf {
    /// The values.
    pub storage: Storage,
    _ticket: Ticket,
}

/// A data split held in host memory.
#[derive(Debug)]
pub struct CpuData {
    images: Vec<u8>,
    labels: Vec<u8>,
    pixels: usize,
    _ticket: Ticket,
}

/// The CPU backend.
pub struct CpuBackend {
    pool: rayon::ThreadPool,
    meter: Arc<MemoryMeter>,
    threads: usize,
    device: String,
    /// Once set, the convolutions stop within an image (see [`CpuBackend::stop_flag`]).
    stop: Arc<AtomicBool>,
    /// The 16-bit GEMM of the BF16 convolutions (None: widen to f32 and `sgemm`); chosen at
    /// start from the CPU's features.
    gemm_bf16: Option<Kernel>,
    /// The 16-bit GEMM of the FP16 convolutions (None: widen to f32 and `sgemm`).
    gemm_f16: Option<Kernel>,
}

impl std::fmt::Debug for CpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuBackend")
            .field("threads", &self.threads)
            .field("device", &self.device)
            .field("gemm_bf16", &self.gemm_bf16)
            .field("gemm_f16", &self.gemm_f16)
            .finish()
    }
}

impl CpuBackend {
    /// A backend using `threads` worker threads (None: one per core).
    pub fn new(threads: Option<usize>) -> Result<Self> {
        let threads = threads
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            })
            .max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("showdown-cpu-{i}"))
            .build()
            .map_err(|e| ComputeError::Backend {
                backend: "cpu".into(),
                reason: format!("cannot start {threads} threads: {e}"),
            })?;
        Ok(CpuBackend {
            pool,
            meter: Arc::new(MemoryMeter::default()),
            threads,
            device: crate::host::cpu_model(),
            stop: Arc::new(AtomicBool::new(false)),
            // Measured on a 2-core EPYC (AVX512-BF16): bf16 pairs beat widening + `sgemm`; the
            // widening 16-bit GEMM (f32 panels) did not beat it, so FP16 (no FP16 dot product
            // there) and BF16 without AVX512-BF16 keep the widening path.
            gemm_bf16: gemm16::bf16_dot_available().then_some(Kernel::Bf16Dot),
            gemm_f16: None,
        })
    }

    /// Test-only: which GEMM the 16-bit convolutions use (None: the widen-then-`sgemm` path).
    #[cfg(test)]
    pub(crate) fn set_gemm16_for_tests(&mut self, bf16: Option<Kernel>, f16: Option<Kernel>) {
        self.gemm_bf16 = bf16;
        self.gemm_f16 = f16;
    }

    /// The 16-bit GEMM for a convolution on `x` and `w` (None: the f32 path).
    fn gemm16_for(&self, x: &FloatRef<'_>, w: &FloatRef<'_>) -> Option<Kernel> {
        match (x, w) {
            (FloatRef::Bf16(_), FloatRef::Bf16(_)) => self.gemm_bf16,
            (FloatRef::F16(_), FloatRef::F16(_)) => self.gemm_f16,
            _ => None,
        }
    }

    /// This backend's stop flag: once set, the convolutions (the primitives that take seconds
    /// on a large batch) stop within an image with [`ComputeError::Cancelled`], so that a
    /// cancelled job does not wait for the primitive it is in. It stays set.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// [`ComputeError::Cancelled`] once the stop flag is set.
    fn check_stop(&self) -> Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            Err(ComputeError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// Bytes allocated through this backend now (for tests of the accounting).
    pub fn meter_current_for_tests(&self) -> u64 {
        self.meter.current()
    }

    fn ticket(&self, bytes: u64) -> Ticket {
        Ticket::new(&self.meter, bytes)
    }

    /// Wraps host storage in an accounted buffer.
    pub fn buf(&self, storage: Storage) -> CpuBuf {
        let bytes = match &storage {
            Storage::F32(v) => 4 * v.len(),
            Storage::F16(v) => 2 * v.len(),
            Storage::Bf16(v) => 2 * v.len(),
            Storage::U8(v) => v.len(),
            Storage::U32(v) => 4 * v.len(),
            Storage::Scaler(_) => std::mem::size_of::<ScalerState>(),
            Storage::Sums(_) => std::mem::size_of::<LossSums>(),
            Storage::Fp8(s) => {
                std::mem::size_of::<Fp8State>()
                    + s.tensors.len() * s.recipe.history_len * std::mem::size_of::<f32>()
            }
        } as u64;
        CpuBuf {
            storage,
            _ticket: self.ticket(bytes),
        }
    }

    /// Splits `0..n` into at most `threads` contiguous chunks.
    fn chunks(&self, n: usize) -> Vec<std::ops::Range<usize>> {
        let t = self.threads.min(n).max(1);
        let per = n.div_ceil(t);
        (0..t)
            .map(|i| (i * per).min(n)..((i + 1) * per).min(n))
            .filter(|r| !r.is_empty())
            .collect()
    }
}

fn bad(what: &str) -> ComputeError {
    ComputeError::Backend {
        backend: "cpu".into(),
        reason: what.into(),
    }
}

/// Read-only float view of a buffer.
#[derive(Clone, Copy)]
enum FloatRef<'a> {
    F32(&'a [f32]),
    F16(&'a [f16]),
    Bf16(&'a [bf16]),
}

impl<'a> FloatRef<'a> {
    fn of(b: &'a CpuBuf, need: usize, what: &str) -> Result<Self> {
        let (r, len) = match &b.storage {
            Storage::F32(v) => (FloatRef::F32(v), v.len()),
            Storage::F16(v) => (FloatRef::F16(v), v.len()),
            Storage::Bf16(v) => (FloatRef::Bf16(v), v.len()),
            _ => return Err(bad(&format!("{what}: expected a float buffer"))),
        };
        if len < need {
            return Err(bad(&format!(
                "{what}: buffer holds {len} elements, {need} needed"
            )));
        }
        Ok(r)
    }
    /// Copies/converts `[start, start + dst.len())` into `dst`.
    fn load(&self, start: usize, dst: &mut [f32]) {
        let end = start + dst.len();
        match self {
            FloatRef::F32(v) => dst.copy_from_slice(&v[start..end]),
            FloatRef::F16(v) => v[start..end].convert_to_f32_slice(dst),
            FloatRef::Bf16(v) => v[start..end].convert_to_f32_slice(dst),
        }
    }
    fn to_vec(self, start: usize, len: usize) -> Vec<f32> {
        let mut v = vec![0.0; len];
        self.load(start, &mut v);
        v
    }
    fn all_finite(&self) -> bool {
        match self {
            FloatRef::F32(v) => v.iter().all(|x| x.is_finite()),
            FloatRef::F16(v) => v.iter().all(|x| x.is_finite()),
            FloatRef::Bf16(v) => v.iter().all(|x| x.is_finite()),
        }
    }
}

/// Mutable float view of a buffer.
enum FloatMut<'a> {
    F32(&'a mut [f32]),
    F16(&'a mut [f16]),
    Bf16(&'a mut [bf16]),
}

impl<'a> FloatMut<'a> {
    fn of(b: &'a mut CpuBuf, need: usize, what: &str) -> Result<Self> {
        let (r, len): (FloatMut<'a>, usize) = match &mut b.storage {
            Storage::F32(v) => {
                let l = v.len();
                (FloatMut::F32(&mut v[..]), l)
            }
            Storage::F16(v) => {
                let l = v.len();
                (FloatMut::F16(&mut v[..]), l)
            }
            Storage::Bf16(v) => {
                let l = v.len();
                (FloatMut::Bf16(&mut v[..]), l)
            }
            _ => return Err(bad(&format!("{what}: expected a float buffer"))),
        };
        if len < need {
            return Err(bad(&format!(
                "{what}: buffer holds {len} elements, {need} needed"
            )));
        }
        Ok(r)
    }
    /// Stores `src` at `start`, rounding to the buffer's dtype.
    fn store(&mut self, start: usize, src: &[f32]) {
        let end = start + src.len();
        match self {
            FloatMut::F32(v) => v[start..end].copy_from_slice(src),
            FloatMut::F16(v) => v[start..end].convert_from_f32_slice(src),
            FloatMut::Bf16(v) => v[start..end].convert_from_f32_slice(src),
        }
    }
    /// Splits the first `n · len` elements into `n` chunks of `len`.
    fn split(self, len: usize, ranges: &[std::ops::Range<usize>]) -> Vec<FloatMut<'a>> {
        fn go<'b, T>(
            mut v: &'b mut [T],
            len: usize,
            ranges: &[std::ops::Range<usize>],
            wrap: fn(&'b mut [T]) -> FloatMut<'b>,
        ) -> Vec<FloatMut<'b>> {
            let mut out = Vec::new();
            let mut at = 0;
            for r in ranges {
                let skip = r.start * len - at;
                let (_, rest) = std::mem::take(&mut v).split_at_mut(skip);
                let (mine, rest) = rest.split_at_mut(r.len() * len);
                out.push(wrap(mine));
                v = rest;
                at = r.end * len;
            }
            out
        }
        match self {
            FloatMut::F32(v) => go(v, len, ranges, FloatMut::F32),
            FloatMut::F16(v) => go(v, len, ranges, FloatMut::F16),
            FloatMut::Bf16(v) => go(v, len, ranges, FloatMut::Bf16),
        }
    }
}

fn cursor_words(b: &CpuBuf) -> Result<[u32; CURSOR_WORDS]> {
    match &b.storage {
        Storage::U32(v) if v.len() >= CURSOR_WORDS => Ok([v[0], v[1], v[2]]),
        _ => Err(bad("a step cursor is a U32 buffer of 3 words")),
    }
}

fn u8_of<'a>(b: &'a CpuBuf, need: usize, what: &str) -> Result<&'a [u8]> {
    match &b.storage {
        Storage::U8(v) if v.len() >= need => Ok(v),
        _ => Err(bad(&format!(
            "{what}: expected a byte buffer of at least {need}"
        ))),
    }
}

fn u8_mut<'a>(b: &'a mut CpuBuf, need: usize, what: &str) -> Result<&'a mut [u8]> {
    match &mut b.storage {
        Storage::U8(v) if v.len() >= need => Ok(v),
        _ => Err(bad(&format!(
            "{what}: expected a byte buffer of at least {need}"
        ))),
    }
}

fn scaler_of(b: &CpuBuf) -> Result<ScalerState> {
    match &b.storage {
        Storage::Scaler(s) => Ok(*s),
        _ => Err(bad("expected a scaler state buffer")),
    }
}

/// `c[m×n] = alpha · a[m×k] · b[k×n] + beta · c` with explicit row/column strides.
#[allow(clippy::too_many_arguments)]
fn sgemm(
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    rsa: usize,
    csa: usize,
    b: &[f32],
    rsb: usize,
    csb: usize,
    beta: f32,
    c: &mut [f32],
) {
    debug_assert!(c.len() >= m * n);
    // SAFETY: the strides describe matrices inside `a`, `b` and `c` (checked by the callers'
    // lengths: a holds m·k, b holds k·n, c holds m·n elements), c is row-major m×n.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            rsa as isize,
            csa as isize,
            b.as_ptr(),
            rsb as isize,
            csb as isize,
            beta,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// Unrolls one image `x[c_in, h, w]` into `col[c_in·k·k, h_out·w_out]`.
pub fn im2col(x: &[f32], s: &ConvShape, col: &mut [f32]) {
    im2col_any(x, s, col)
}

/// Folds `col[c_in·k·k, h_out·w_out]` back into `dx[c_in, h, w]` (adding overlaps).
pub fn col2im(col: &[f32], s: &ConvShape, dx: &mut [f32]) {
    let (ho, wo, k) = (s.h_out(), s.w_out(), s.k);
    let p = ho * wo;
    dx.iter_mut().for_each(|v| *v = 0.0);
    for ci in 0..s.c_in {
        for ky in 0..k {
            for kx in 0..k {
                let row = (ci * k + ky) * k + kx;
                let src = &col[row * p..(row + 1) * p];
                for oy in 0..ho {
                    let dst = &mut dx[(ci * s.h + oy + ky) * s.w + kx..][..wo];
                    for (d, s) in dst.iter_mut().zip(&src[oy * wo..(oy + 1) * wo]) {
                        *d += s;
                    }
                }
            }
        }
    }
}

/// Convolution forward of one image by im2col + GEMM: `y[c_out, P] = w · col + b`.
pub fn conv2d_im2col_fwd(
    x: &[f32],
    w: &[f32],
    b: &[f32],
    s: &ConvShape,
    col: &mut [f32],
    y: &mut [f32],
) {
    im2col(x, s, col);
    let p = s.out_pixels();
    for (c, row) in y.chunks_mut(p).enumerate().take(s.c_out) {
        row.iter_mut().for_each(|v| *v = b[c]);
    }
    sgemm(
        s.c_out,
        s.patch_len(),
        p,
        w,
        s.patch_len(),
        1,
        col,
        p,
        1,
        1.0,
        y,
    );
}

/// [`im2col`] for any element type: a 16-bit image unrolls into a 16-bit matrix.
fn im2col_any<T: Copy>(x: &[T], s: &ConvShape, col: &mut [T]) {
    let (ho, wo, k) = (s.h_out(), s.w_out(), s.k);
    let p = ho * wo;
    for ci in 0..s.c_in {
        for ky in 0..k {
            for kx in 0..k {
                let row = (ci * k + ky) * k + kx;
                let dst = &mut col[row * p..(row + 1) * p];
                for oy in 0..ho {
                    let src = &x[(ci * s.h + oy + ky) * s.w + kx..][..wo];
                    dst[oy * wo..(oy + 1) * wo].copy_from_slice(src);
                }
            }
        }
    }
}

/// Packs a weight matrix `w[rows × cols]` (or its transpose) as the `A` operand: bf16 pairs
/// straight from a bf16 buffer, else widened to f32 first (vectorised slice conversion).
fn pack_operand(
    dst: &mut Packed,
    kernel: Kernel,
    w: FloatRef<'_>,
    rows: usize,
    cols: usize,
    transpose: bool,
) -> Result<()> {
    fn view<T: Copy>(m: Mat<'_, T>, transpose: bool) -> Mat<'_, T> {
        if transpose {
            m.t()
        } else {
            m
        }
    }
    match (kernel, w) {
        (Kernel::Bf16Dot, FloatRef::Bf16(v)) => dst.pack_a(
            kernel,
            view(Mat::row_major(&v[..rows * cols], rows, cols), transpose),
        ),
        (Kernel::Bf16Dot, _) => Err(bad("gemm16: bf16 pairs need bf16 weights")),
        (Kernel::Wide, w) => {
            let v = w.to_vec(0, rows * cols);
            dst.pack_a(kernel, view(Mat::row_major(&v, rows, cols), transpose))
        }
    }
}

/// One image unrolled (im2col) for the 16-bit GEMM: bf16 for bf16 pairs (no conversion), f32
/// for the widening kernel (the image widened once with the vectorised slice conversion).
enum Col {
    Bf16(Vec<bf16>),
    Wide { xi: Vec<f32>, col: Vec<f32> },
}

impl Col {
    fn new(kernel: Kernel, x: FloatRef<'_>, s: &ConvShape) -> Col {
        let len = s.patch_len() * s.out_pixels();
        match (kernel, x) {
            (Kernel::Bf16Dot, FloatRef::Bf16(_)) => Col::Bf16(vec![bf16::ZERO; len]),
            _ => Col::Wide {
                xi: vec![0.0; s.in_len()],
                col: vec![0.0; len],
            },
        }
    }

    /// Unrolls the image at `x[start..]`.
    fn unroll(&mut self, x: FloatRef<'_>, start: usize, s: &ConvShape) {
        match (self, x) {
            (Col::Bf16(col), FloatRef::Bf16(v)) => {
                im2col_any(&v[start..start + s.in_len()], s, col)
            }
            (Col::Wide { xi, col }, x) => {
                x.load(start, xi);
                im2col(xi, s, col);
            }
            // `new` chose Bf16 only for a bf16 image.
            (Col::Bf16(col), x) => {
                let mut xi = vec![0.0; s.in_len()];
                x.load(start, &mut xi);
                let xb: Vec<bf16> = xi.iter().map(|&v| bf16::from_f32(v)).collect();
                im2col_any(&xb, s, col);
            }
        }
    }

    /// Packs the unrolled `[rows × cols]` matrix as `B` (`as_b`) or as `A`.
    fn pack(
        &self,
        dst: &mut Packed,
        kernel: Kernel,
        rows: usize,
        cols: usize,
        as_b: bool,
    ) -> Result<()> {
        fn go<T: Elem>(dst: &mut Packed, kernel: Kernel, m: Mat<'_, T>, as_b: bool) -> Result<()> {
            if as_b {
                dst.pack_b(kernel, m)
            } else {
                dst.pack_a(kernel, m)
            }
        }
        match self {
            Col::Bf16(c) => go(dst, kernel, Mat::row_major(c, rows, cols), as_b),
            Col::Wide { col, .. } => go(dst, kernel, Mat::row_major(col, rows, cols), as_b),
        }
    }
}

/// Per-thread outputs of a 16-bit conv backward: `gwᵀ[kk × co]` and `gb[co]`.
type Partial = Result<(Vec<f32>, Vec<f32>)>;

impl CpuBackend {
    /// [`Backend::conv_block_fwd`] with the 16-bit GEMM: each image is unrolled in its own
    /// dtype, packed (bf16 pairs, or widened to f32, once per image), multiplied by the weight
    /// panels packed once per call; f32 accumulation, bias, activation and pool as the f32 path.
    #[allow(clippy::too_many_arguments)]
    fn conv_block_fwd16(
        &self,
        kernel: Kernel,
        x: FloatRef<'_>,
        w: FloatRef<'_>,
        bv: &[f32],
        ranges: &[std::ops::Range<usize>],
        outs: Vec<FloatMut<'_>>,
        mask_chunks: Vec<&mut [u8]>,
        s: ConvShape,
        act: Activation,
    ) -> Result<()> {
        let (ho, wo) = (s.h_out(), s.w_out());
        let pooled_len = s.c_out * pooled(ho) * pooled(wo);
        let (kk, p, co, il) = (s.patch_len(), s.out_pixels(), s.c_out, s.in_len());
        let mut pw = Packed::default();
        pack_operand(&mut pw, kernel, w, co, kk, false)?;
        let pw = &pw;
        let stop = &*self.stop;
        let done: Vec<Result<()>> = self.pool.install(|| {
            ranges
                .par_iter()
                .zip(outs)
                .zip(mask_chunks)
                .map(|((r, mut o), m)| {
                    let mut col = Col::new(kernel, x, &s);
                    let mut pcol = Packed::default();
                    let mut y = vec![0f32; s.out_len()];
                    let mut po = vec![0f32; pooled_len];
                    for (k, img) in r.clone().enumerate() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        col.unroll(x, img * il, &s);
                        col.pack(&mut pcol, kernel, kk, p, true)?;
                        for (c, row) in y.chunks_mut(p).enumerate().take(co) {
                            row.fill(bv[c]);
                        }
                        gemm16::gemm_packed(pw, &pcol, true, &mut y, p)?;
                        act_pool(
                            &y,
                            act,
                            co,
                            ho,
                            wo,
                            &mut po,
                            &mut m[k * pooled_len..(k + 1) * pooled_len],
                        );
                        o.store(k * pooled_len, &po);
                    }
                    Ok(())
                })
                .collect()
        });
        done.into_iter().collect::<Result<()>>()?;
        self.check_stop()
    }

    /// [`Backend::conv_block_bwd`] (ReLU) with the 16-bit GEMM: `gwᵀ += col · dzᵀ` and
    /// `dcol = wᵀ · dz` per image. Under ReLU `dz` holds the upstream gradient's own values, so
    /// packing it as bf16 is exact. Returns `gw[co × kk]` and `gb`.
    #[allow(clippy::too_many_arguments)]
    fn conv_block_bwd16(
        &self,
        kernel: Kernel,
        x: FloatRef<'_>,
        w: FloatRef<'_>,
        masks: &[u8],
        dout: FloatRef<'_>,
        dxs: Vec<Option<FloatMut<'_>>>,
        ranges: &[std::ops::Range<usize>],
        s: ConvShape,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        let (ho, wo) = (s.h_out(), s.w_out());
        let pooled_len = s.c_out * pooled(ho) * pooled(wo);
        let (kk, p, co, il) = (s.patch_len(), s.out_pixels(), s.c_out, s.in_len());
        let mut pwt = Packed::default();
        if dxs.iter().any(Option::is_some) {
            pack_operand(&mut pwt, kernel, w, co, kk, true)?;
        }
        let pwt = &pwt;
        let stop = &*self.stop;
        let partials: Vec<Partial> = self.pool.install(|| {
            ranges
                .par_iter()
                .zip(dxs)
                .map(|(r, mut dxc)| {
                    let mut gwt = vec![0f32; kk * co];
                    let mut gb = vec![0f32; co];
                    let mut col = Col::new(kernel, x, &s);
                    let mut dz = vec![0f32; co * p];
                    let mut dpool = vec![0f32; pooled_len];
                    let mut dcol = vec![0f32; if dxc.is_some() { kk * p } else { 0 }];
                    let mut dxi = vec![0f32; if dxc.is_some() { il } else { 0 }];
                    let (mut pcol, mut pdzt, mut pdz) =
                        (Packed::default(), Packed::default(), Packed::default());
                    for (k, img) in r.clone().enumerate() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        dout.load(img * pooled_len, &mut dpool);
                        act_pool_bwd(
                            &dpool,
                            &masks[img * pooled_len..(img + 1) * pooled_len],
                            None,
                            co,
                            ho,
                            wo,
                            &mut dz,
                        );
                        col.unroll(x, img * il, &s);
                        // gwᵀ[kk × co] += col[kk × p] · dzᵀ[p × co]
                        col.pack(&mut pcol, kernel, kk, p, false)?;
                        pdzt.pack_b(kernel, Mat::row_major(&dz, co, p).t())?;
                        gemm16::gemm_packed(&pcol, &pdzt, true, &mut gwt, co)?;
                        for (c, row) in dz.chunks(p).enumerate() {
                            gb[c] += row.iter().sum::<f32>();
                        }
                        if let Some(d) = dxc.as_mut() {
                            // dcol[kk × p] = wᵀ[kk × co] · dz[co × p]
                            pdz.pack_b(kernel, Mat::row_major(&dz, co, p))?;
                            gemm16::gemm_packed(pwt, &pdz, false, &mut dcol, p)?;
                            col2im(&dcol, &s, &mut dxi);
                            d.store(k * il, &dxi);
                        }
                    }
                    Ok((gwt, gb))
                })
                .collect()
        });
        let mut gwt = vec![0f32; kk * co];
        let mut gb = vec![0f32; co];
        for part in partials {
            let (pw, pb) = part?;
            gwt.iter_mut().zip(pw).for_each(|(a, b)| *a += b);
            gb.iter_mut().zip(pb).for_each(|(a, b)| *a += b);
        }
        let mut gw = vec![0f32; co * kk];
        for (i, row) in gwt.chunks(co).enumerate() {
            for (c, &v) in row.iter().enumerate() {
                gw[c * kk + i] = v;
            }
        }
        Ok((gw, gb))
    }
}

/// Pooled side of a conv output side (floor division, as PyTorch's MaxPool2d(2)).
fn pooled(side: usize) -> usize {
    side / 2
}

/// Fused activation + 2×2 max-pool of one image `y[c, ho, wo]` (pre-activations): writes the
/// pooled values and the mask (index 0–3 of the window maximum; for ReLU 4 when it is ≤ 0).
/// GELU and Swish are not monotonic, so the maximum is taken after the activation.
fn act_pool(
    y: &[f32],
    act: Activation,
    c: usize,
    ho: usize,
    wo: usize,
    out: &mut [f32],
    mask: &mut [u8],
) {
    let (ph, pw) = (pooled(ho), pooled(wo));
    if act == Activation::Relu {
        // Branch-free (the window maxima are data-dependent): the same first-maximum and
        // ReLU rules as the general loop below.
        for ch in 0..c {
            let plane = &y[ch * ho * wo..(ch + 1) * ho * wo];
            for py in 0..ph {
                let r0 = &plane[(2 * py) * wo..][..2 * pw];
                let r1 = &plane[(2 * py + 1) * wo..][..2 * pw];
                let o = (ch * ph + py) * pw;
                let (out, mask) = (&mut out[o..o + pw], &mut mask[o..o + pw]);
                for (((o, m), a), b) in out
                    .iter_mut()
                    .zip(mask.iter_mut())
                    .zip(r0.chunks_exact(2))
                    .zip(r1.chunks_exact(2))
                {
                    let (mut best, mut v) = (0u8, a[0]);
                    let gt = a[1] > v;
                    best = if gt { 1 } else { best };
                    v = if gt { a[1] } else { v };
                    let gt = b[0] > v;
                    best = if gt { 2 } else { best };
                    v = if gt { b[0] } else { v };
                    let gt = b[1] > v;
                    best = if gt { 3 } else { best };
                    v = if gt { b[1] } else { v };
                    let keep = v > 0.0;
                    *o = if keep { v } else { 0.0 };
                    *m = if keep { best } else { 4 };
                }
            }
        }
        return;
    }
    for ch in 0..c {
        let plane = &y[ch * ho * wo..(ch + 1) * ho * wo];
        for py in 0..ph {
            let r0 = &plane[(2 * py) * wo..];
            let r1 = &plane[(2 * py + 1) * wo..];
            for px in 0..pw {
                let mut v = [r0[2 * px], r0[2 * px + 1], r1[2 * px], r1[2 * px + 1]];
                if act != Activation::Relu {
                    v.iter_mut().for_each(|z| *z = act.apply(*z as f64) as f32);
                }
                let mut best = 0;
                for i in 1..4 {
                    if v[i] > v[best] {
                        best = i;
                    }
                }
                let o = (ch * ph + py) * pw + px;
                if act != Activation::Relu || v[best] > 0.0 {
                    out[o] = v[best];
                    mask[o] = best as u8;
                } else {
                    out[o] = 0.0;
                    mask[o] = 4;
                }
            }
        }
    }
}

/// Routes pooled gradients back to the window maxima: `dz[c, ho, wo]` from `dout[c, ph, pw]`,
/// times the activation's derivative at the pre-activation `y` (`None` for ReLU, whose mask
/// already says where the derivative is 1).
fn act_pool_bwd(
    dout: &[f32],
    mask: &[u8],
    pre: Option<(&[f32], Activation)>,
    c: usize,
    ho: usize,
    wo: usize,
    dz: &mut [f32],
) {
    let (ph, pw) = (pooled(ho), pooled(wo));
    dz.iter_mut().for_each(|v| *v = 0.0);
    for ch in 0..c {
        for py in 0..ph {
            for px in 0..pw {
                let o = (ch * ph + py) * pw + px;
                let m = mask[o];
                if m < 4 {
                    let (dy, dx) = ((m / 2) as usize, (m % 2) as usize);
                    let at = ch * ho * wo + (2 * py + dy) * wo + 2 * px + dx;
                    dz[at] = match pre {
                        Some((y, act)) => dout[o] * act.derivative(y[at] as f64) as f32,
                        None => dout[o],
                    };
                }
            }
        }
    }
}

/// Counter-based dropout mask: keep element `i` iff its random word ≥ p·2³².
fn dropout_mask(mask: &mut [u8], p: f32, seed: u64, counter: u64) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(counter);
    let threshold = (p as f64 * 4294967296.0) as u64;
    for m in mask.iter_mut() {
        *m = ((rng.random::<u32>() as u64) >= threshold) as u8;
    }
}

/// The lab CNN's name of a convolution shape (`conv1`, `conv2`), or the shape in words.
fn conv_layer(s: ConvShape) -> String {
    if s == crate::model::lab::CONV1 {
        "conv1".into()
    } else if s == crate::model::lab::CONV2 {
        "conv2".into()
    } else {
        format!("{}x{}x{}x{} k{}", s.c_in, s.h, s.w, s.c_out, s.k)
    }
}

impl Backend for CpuBackend {
    type Buf = CpuBuf;
    type Data = CpuData;
    type Graph = ();
    type Mark = ();

    fn name(&self) -> &'static str {
        "cpu"
    }
    fn device(&self) -> String {
        self.device.clone()
    }
    fn threads(&self) -> usize {
        self.threads
    }
    fn supports(&self, precision: Precision) -> bool {
        matches!(
            precision,
            Precision::Fp32 | Precision::Fp16 | Precision::Bf16 | Precision::Fp8
        )
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<CpuBuf> {
        let storage = match dtype {
            DType::F32 => Storage::F32(vec![0.0; len]),
            DType::F16 => Storage::F16(vec![f16::ZERO; len]),
            DType::Bf16 => Storage::Bf16(vec![bf16::ZERO; len]),
            DType::U8 => Storage::U8(vec![0; len]),
            DType::U32 => Storage::U32(vec![0; len]),
        };
        Ok(self.buf(storage))
    }

    fn upload(&self, buf: &mut CpuBuf, data: &[f32]) -> Result<()> {
        match &mut buf.storage {
            Storage::U32(v) if v.len() >= data.len() => {
                v.iter_mut().zip(data).for_each(|(d, s)| *d = *s as u32);
                Ok(())
            }
            Storage::U8(v) if v.len() >= data.len() => {
                v.iter_mut().zip(data).for_each(|(d, s)| *d = *s as u8);
                Ok(())
            }
            _ => FloatMut::of(buf, data.len(), "upload").map(|mut m| m.store(0, data)),
        }
    }

    fn download(&self, buf: &CpuBuf) -> Result<Vec<f32>> {
        match &buf.storage {
            Storage::U8(v) => Ok(v.iter().map(|&x| x as f32).collect()),
            Storage::U32(v) => Ok(v.iter().map(|&x| x as f32).collect()),
            Storage::F32(v) => Ok(v.clone()),
            Storage::F16(v) => Ok(FloatRef::F16(v).to_vec(0, v.len())),
            Storage::Bf16(v) => Ok(FloatRef::Bf16(v).to_vec(0, v.len())),
            _ => Err(bad("download: not a tensor buffer")),
        }
    }

    fn upload_data(&self, images: &[u8], labels: &[u8], pixels: usize) -> Result<CpuData> {
        if images.len() != labels.len() * pixels {
            return Err(bad("upload_data: images and labels disagree"));
        }
        Ok(CpuData {
            images: images.to_vec(),
            labels: labels.to_vec(),
            pixels,
            _ticket: self.ticket((images.len() + labels.len()) as u64),
        })
    }

    fn peak_bytes(&self) -> u64 {
        self.meter.peak()
    }
    fn peak_split(&self) -> Option<MemorySplit> {
        Some(self.meter.peak_split())
    }
    fn set_memory_category(&self, c: MemoryCategory) {
        self.meter.set_category(c);
    }
    fn reset_peak(&self) {
        self.meter.reset()
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn gather(
        &self,
        data: &CpuData,
        order: &CpuBuf,
        cursor: &CpuBuf,
        stride: usize,
        n: usize,
        mean: f32,
        std: f32,
        x: &mut CpuBuf,
        labels: &mut CpuBuf,
    ) -> Result<()> {
        let _span = crate::probe::span("gather");
        let offset = cursor_words(cursor)?[0] as usize * stride;
        let order = match &order.storage {
            Storage::U32(v) if v.len() >= offset + n => &v[offset..offset + n],
            _ => return Err(bad("gather: order must be a U32 buffer covering the batch")),
        };
        let px = data.pixels;
        let lab = u8_mut(labels, n, "gather labels")?;
        let mut xs = FloatMut::of(x, n * px, "gather x")?;
        let scale = 1.0 / (255.0 * std);
        let shift = mean / std;
        let mut row = vec![0f32; px];
        for (i, &j) in order.iter().enumerate() {
            let j = j as usize;
            if j >= data.labels.len() {
                return Err(bad("gather: index outside the data set"));
            }
            for (r, &p) in row.iter_mut().zip(&data.images[j * px..(j + 1) * px]) {
                *r = p as f32 * scale - shift;
            }
            xs.store(i * px, &row);
            lab[i] = data.labels[j];
        }
        Ok(())
    }

    fn conv_block_fwd(
        &self,
        x: &CpuBuf,
        w: &CpuBuf,
        b: &CpuBuf,
        out: &mut CpuBuf,
        mask: &mut CpuBuf,
        n: usize,
        s: ConvShape,
        act: Activation,
    ) -> Result<()> {
        let _span = crate::probe::span_with(|| format!("conv_block_fwd {}", conv_layer(s)));
        let (ho, wo) = (s.h_out(), s.w_out());
        let pooled_len = s.c_out * pooled(ho) * pooled(wo);
        let x = FloatRef::of(x, n * s.in_len(), "conv x")?;
        let wr = FloatRef::of(w, s.weight_len(), "conv w")?;
        let bv = FloatRef::of(b, s.c_out, "conv b")?.to_vec(0, s.c_out);
        let ranges = self.chunks(n);
        let outs = FloatMut::of(out, n * pooled_len, "conv out")?.split(pooled_len, &ranges);
        let masks = u8_mut(mask, n * pooled_len, "conv mask")?;
        let mut mask_chunks = Vec::new();
        let mut rest = &mut masks[..n * pooled_len];
        for r in &ranges {
            let (a, b2) = rest.split_at_mut(r.len() * pooled_len);
            mask_chunks.push(a);
            rest = b2;
        }
        if let Some(k) = self.gemm16_for(&x, &wr) {
            return self.conv_block_fwd16(k, x, wr, &bv, &ranges, outs, mask_chunks, s, act);
        }
        let wv = wr.to_vec(0, s.weight_len());
        let stop = &*self.stop;
        self.pool.install(|| {
            ranges
                .par_iter()
                .zip(outs)
                .zip(mask_chunks)
                .for_each(|((r, mut o), m)| {
                    let mut xi = vec![0f32; s.in_len()];
                    let mut col = vec![0f32; s.patch_len() * s.out_pixels()];
                    let mut y = vec![0f32; s.out_len()];
                    let mut po = vec![0f32; pooled_len];
                    for (k, img) in r.clone().enumerate() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        x.load(img * s.in_len(), &mut xi);
                        conv2d_im2col_fwd(&xi, &wv, &bv, &s, &mut col, &mut y);
                        act_pool(
                            &y,
                            act,
                            s.c_out,
                            ho,
                            wo,
                            &mut po,
                            &mut m[k * pooled_len..(k + 1) * pooled_len],
                        );
                        o.store(k * pooled_len, &po);
                    }
                })
        });
        self.check_stop()
    }

    fn conv_block_bwd(
        &self,
        x: &CpuBuf,
        w: &CpuBuf,
        b: &CpuBuf,
        mask: &CpuBuf,
        dout: &CpuBuf,
        dw: &mut CpuBuf,
        db: &mut CpuBuf,
        dx: Option<&mut CpuBuf>,
        n: usize,
        s: ConvShape,
        act: Activation,
    ) -> Result<()> {
        let _span = crate::probe::span_with(|| format!("conv_block_bwd {}", conv_layer(s)));
        let (ho, wo) = (s.h_out(), s.w_out());
        let pooled_len = s.c_out * pooled(ho) * pooled(wo);
        let p = s.out_pixels();
        let (kk, co) = (s.patch_len(), s.c_out);
        let x = FloatRef::of(x, n * s.in_len(), "conv_bwd x")?;
        let wr = FloatRef::of(w, s.weight_len(), "conv_bwd w")?;
        let bv = FloatRef::of(b, s.c_out, "conv_bwd b")?.to_vec(0, s.c_out);
        let masks = u8_of(mask, n * pooled_len, "conv_bwd mask")?;
        let dout = FloatRef::of(dout, n * pooled_len, "conv_bwd dout")?;
        let ranges = self.chunks(n);
        let dxs: Vec<Option<FloatMut>> = match dx {
            Some(d) => FloatMut::of(d, n * s.in_len(), "conv_bwd dx")?
                .split(s.in_len(), &ranges)
                .into_iter()
                .map(Some)
                .collect(),
            None => ranges.iter().map(|_| None).collect(),
        };
        // The 16-bit GEMM only under ReLU (dz is then the upstream gradient's own values; other
        // activations multiply in act'(z), an f32), and for bf16 pairs only from a bf16 dout.
        let kernel = match (self.gemm16_for(&x, &wr), dout) {
            (Some(Kernel::Bf16Dot), FloatRef::Bf16(_)) => Some(Kernel::Bf16Dot),
            (Some(Kernel::Wide), _) => Some(Kernel::Wide),
            _ => None,
        }
        .filter(|_| act == Activation::Relu);
        let store = |done: Result<(Vec<f32>, Vec<f32>)>, dw: &mut CpuBuf, db: &mut CpuBuf| {
            let (gw, gb) = done?;
            self.check_stop()?;
            FloatMut::of(dw, co * kk, "conv_bwd dw")?.store(0, &gw);
            FloatMut::of(db, co, "conv_bwd db")?.store(0, &gb);
            Ok(())
        };
        if let Some(k) = kernel {
            let done = self.conv_block_bwd16(k, x, wr, masks, dout, dxs, &ranges, s);
            return store(done, dw, db);
        }
        let wv = wr.to_vec(0, s.weight_len());
        let stop = &*self.stop;
        let partials: Vec<(Vec<f32>, Vec<f32>)> = self.pool.install(|| {
            ranges
                .par_iter()
                .zip(dxs)
                .map(|(r, mut dxc)| {
                    let mut gw = vec![0f32; co * kk];
                    let mut gb = vec![0f32; co];
                    let mut xi = vec![0f32; s.in_len()];
                    let mut col = vec![0f32; kk * p];
                    let mut dz = vec![0f32; co * p];
                    let mut dpool = vec![0f32; pooled_len];
                    let mut dxi = vec![0f32; s.in_len()];
                    let mut y = vec![
                        0f32;
                        if act == Activation::Relu {
                            0
                        } else {
                            s.out_len()
                        }
                    ];
                    for (k, img) in r.clone().enumerate() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        dout.load(img * pooled_len, &mut dpool);
                        x.load(img * s.in_len(), &mut xi);
                        let pre = if act == Activation::Relu {
                            None
                        } else {
                            // The pre-activations again (one GEMM), for act'(z) at each maximum.
                            conv2d_im2col_fwd(&xi, &wv, &bv, &s, &mut col, &mut y);
                            Some((&y[..], act))
                        };
                        act_pool_bwd(
                            &dpool,
                            &masks[img * pooled_len..(img + 1) * pooled_len],
                            pre,
                            co,
                            ho,
                            wo,
                            &mut dz,
                        );
                        if act == Activation::Relu {
                            im2col(&xi, &s, &mut col); // the non-ReLU path did it above
                        }
                        // gw[co × kk] += dz[co × p] · colᵀ[p × kk]
                        sgemm(co, p, kk, &dz, p, 1, &col, 1, p, 1.0, &mut gw);
                        for (c, row) in dz.chunks(p).enumerate() {
                            gb[c] += row.iter().sum::<f32>();
                        }
                        if let Some(d) = dxc.as_mut() {
                            // dcol[kk × p] = wᵀ[kk × co] · dz[co × p]
                            sgemm(kk, co, p, &wv, 1, kk, &dz, p, 1, 0.0, &mut col);
                            col2im(&col, &s, &mut dxi);
                            d.store(k * s.in_len(), &dxi);
                        }
                    }
                    (gw, gb)
                })
                .collect()
        });
        self.check_stop()?;
        let mut gw = vec![0f32; co * kk];
        let mut gb = vec![0f32; co];
        for (pw, pb) in partials {
            gw.iter_mut().zip(pw).for_each(|(a, b)| *a += b);
            gb.iter_mut().zip(pb).for_each(|(a, b)| *a += b);
        }
        FloatMut::of(dw, co * kk, "conv_bwd dw")?.store(0, &gw);
        FloatMut::of(db, co, "conv_bwd db")?.store(0, &gb);
        Ok(())
    }

    fn dropout_fwd(
        &self,
        x: &CpuBuf,
        out: &mut CpuBuf,
        mask: &mut CpuBuf,
        len: usize,
        p: f32,
        seed: u64,
        cursor: &CpuBuf,
    ) -> Result<()> {
        let _span = crate::probe::span("dropout_fwd");
        let c = cursor_words(cursor)?;
        let counter = c[1] as u64 | (c[2] as u64) << 32;
        let m = u8_mut(mask, len, "dropout mask")?;
        dropout_mask(&mut m[..len], p, seed, counter);
        let mut v = FloatRef::of(x, len, "dropout x")?.to_vec(0, len);
        let keep = 1.0 / (1.0 - p);
        v.iter_mut()
            .zip(m.iter())
            .for_each(|(a, &k)| *a *= k as f32 * keep);
        FloatMut::of(out, len, "dropout out")?.store(0, &v);
        Ok(())
    }

    fn cursor_set(&self, cursor: &mut CpuBuf, step: u32, counter: u64) -> Result<()> {
        match &mut cursor.storage {
            Storage::U32(v) if v.len() >= CURSOR_WORDS => {
                v[..CURSOR_WORDS].copy_from_slice(&[step, counter as u32, (counter >> 32) as u32]);
                Ok(())
            }
            _ => Err(bad("cursor_set: a cursor is a U32 buffer of 3 words")),
        }
    }

    fn cursor_advance(&self, cursor: &mut CpuBuf) -> Result<()> {
        let _span = crate::probe::span("cursor_advance");
        let c = cursor_words(cursor)?;
        let counter = (c[1] as u64 | (c[2] as u64) << 32).wrapping_add(1);
        self.cursor_set(cursor, c[0].wrapping_add(1), counter)
    }

    fn elapsed_ms(&self, _start: &(), _end: &()) -> Result<f64> {
        Err(bad("the CPU backend keeps no device clock"))
    }

    fn capture_end(&self) -> Result<()> {
        Err(bad("the CPU backend records no graphs"))
    }

    fn replay(&self, _graph: &()) -> Result<()> {
        Err(bad("the CPU backend records no graphs"))
    }

    fn dropout_bwd(
        &self,
        dout: &CpuBuf,
        mask: &CpuBuf,
        dx: &mut CpuBuf,
        len: usize,
        p: f32,
    ) -> Result<()> {
        let _span = crate::probe::span("dropout_bwd");
        let m = u8_of(mask, len, "dropout mask")?;
        let mut v = FloatRef::of(dout, len, "dropout dout")?.to_vec(0, len);
        let keep = 1.0 / (1.0 - p);
        v.iter_mut()
            .zip(m.iter())
            .for_each(|(a, &k)| *a *= k as f32 * keep);
        FloatMut::of(dx, len, "dropout dx")?.store(0, &v);
        Ok(())
    }

    fn dense_fwd(
        &self,
        x: &CpuBuf,
        w: &CpuBuf,
        b: &CpuBuf,
        y: &mut CpuBuf,
        n: usize,
        fin: usize,
        fout: usize,
    ) -> Result<()> {
        let _span = crate::probe::span("dense_fwd");
        let xv = FloatRef::of(x, n * fin, "dense x")?.to_vec(0, n * fin);
        let wv = FloatRef::of(w, fin * fout, "dense w")?.to_vec(0, fin * fout);
        let bv = FloatRef::of(b, fout, "dense b")?.to_vec(0, fout);
        let mut yv = vec![0f32; n * fout];
        for row in yv.chunks_mut(fout) {
            row.copy_from_slice(&bv);
        }
        sgemm(n, fin, fout, &xv, fin, 1, &wv, 1, fin, 1.0, &mut yv);
        FloatMut::of(y, n * fout, "dense y")?.store(0, &yv);
        Ok(())
    }

    fn dense_bwd(
        &self,
        x: &CpuBuf,
        w: &CpuBuf,
        dy: &CpuBuf,
        dx: &mut CpuBuf,
        dw: &mut CpuBuf,
        db: &mut CpuBuf,
        n: usize,
        fin: usize,
        fout: usize,
    ) -> Result<()> {
        let _span = crate::probe::span("dense_bwd");
        let xv = FloatRef::of(x, n * fin, "dense_bwd x")?.to_vec(0, n * fin);
        let wv = FloatRef::of(w, fin * fout, "dense_bwd w")?.to_vec(0, fin * fout);
        let dyv = FloatRef::of(dy, n * fout, "dense_bwd dy")?.to_vec(0, n * fout);
        let mut gw = vec![0f32; fout * fin];
        sgemm(fout, n, fin, &dyv, 1, fout, &xv, fin, 1, 0.0, &mut gw);
        let mut gb = vec![0f32; fout];
        for row in dyv.chunks(fout) {
            gb.iter_mut().zip(row).for_each(|(a, b)| *a += b);
        }
        let mut gx = vec![0f32; n * fin];
        sgemm(n, fout, fin, &dyv, fout, 1, &wv, fin, 1, 0.0, &mut gx);
        FloatMut::of(dw, fout * fin, "dense_bwd dw")?.store(0, &gw);
        FloatMut::of(db, fout, "dense_bwd db")?.store(0, &gb);
        FloatMut::of(dx, n * fin, "dense_bwd dx")?.store(0, &gx);
        Ok(())
    }

    fn softmax_xent(
        &self,
        logits: &CpuBuf,
        labels: &CpuBuf,
        dlogits: Option<&mut CpuBuf>,
        n: usize,
        classes: usize,
        scaler: &CpuBuf,
        sums: &mut CpuBuf,
    ) -> Result<()> {
        let _span = crate::probe::span("softmax_xent");
        let z = FloatRef::of(logits, n * classes, "xent logits")?.to_vec(0, n * classes);
        let y = u8_of(labels, n, "xent labels")?;
        let scale = scaler_of(scaler)?.scale;
        let mut g = vec![0f32; n * classes];
        let mut loss = 0f64;
        let mut correct = 0u64;
        for i in 0..n {
            let row = &z[i * classes..(i + 1) * classes];
            let label = y[i] as usize;
            let (mut arg, mut max) = (0, f32::NEG_INFINITY);
            for (j, &v) in row.iter().enumerate() {
                if v > max {
                    max = v;
                    arg = j;
                }
            }
            let sum: f32 = row.iter().map(|&v| (v - max).exp()).sum();
            let lse = max + sum.ln();
            loss += (lse - row.get(label).copied().unwrap_or(f32::NAN)) as f64;
            correct += (arg == label) as u64;
            for j in 0..classes {
                let p = (row[j] - lse).exp();
                g[i * classes + j] = (p - (j == label) as u8 as f32) / n as f32 * scale;
            }
        }
        if let Some(d) = dlogits {
            FloatMut::of(d, n * classes, "xent dlogits")?.store(0, &g);
        }
        match &mut sums.storage {
            Storage::Sums(s) => {
                s.loss += loss;
                s.correct += correct;
                s.count += n as u64;
                s.last_loss = loss / n as f64;
                Ok(())
            }
            _ => Err(bad("xent: expected a sums buffer")),
        }
    }

    fn check_finite(&self, grads: &[&CpuBuf], scaler: &mut CpuBuf) -> Result<()> {
        let _span = crate::probe::span("check_finite");
        let mut finite = true;
        for g in grads {
            let len = match &g.storage {
                Storage::F32(v) => v.len(),
                Storage::F16(v) => v.len(),
                Storage::Bf16(v) => v.len(),
                _ => 0,
            };
            finite &= FloatRef::of(g, len, "check_finite")?.all_finite();
        }
        match &mut scaler.storage {
            Storage::Scaler(s) => {
                s.found_inf |= !finite;
                Ok(())
            }
            _ => Err(bad("check_finite: expected a scaler state buffer")),
        }
    }

    fn adam(
        &self,
        param: &mut CpuBuf,
        grad: &CpuBuf,
        m: &mut CpuBuf,
        v: &mut CpuBuf,
        copy: Option<&mut CpuBuf>,
        hp: AdamParams,
        scaler: &CpuBuf,
    ) -> Result<()> {
        let _span = crate::probe::span("adam");
        let st = scaler_of(scaler)?;
        if st.found_inf {
            return Ok(());
        }
        let t = (st.step + 1) as i32;
        let inv = 1.0 / st.scale;
        let bc1 = 1.0 - hp.beta1.powi(t);
        let bc2_sqrt = (1.0 - hp.beta2.powi(t)).sqrt();
        let step_size = hp.lr / bc1;
        let (Storage::F32(p), Storage::F32(mv), Storage::F32(vv)) =
            (&mut param.storage, &mut m.storage, &mut v.storage)
        else {
            return Err(bad("adam: param, m and v must be F32"));
        };
        let g = FloatRef::of(grad, p.len(), "adam grad")?.to_vec(0, p.len());
        for i in 0..p.len() {
            let gi = g[i] * inv;
            mv[i] = hp.beta1 * mv[i] + (1.0 - hp.beta1) * gi;
            vv[i] = hp.beta2 * vv[i] + (1.0 - hp.beta2) * gi * gi;
            let denom = vv[i].sqrt() / bc2_sqrt + hp.eps;
            p[i] -= step_size * mv[i] / denom;
        }
        if let Some(c) = copy {
            let pv = p.clone();
            FloatMut::of(c, pv.len(), "adam copy")?.store(0, &pv);
        }
        Ok(())
    }

    fn scaler_update(&self, scaler: &mut CpuBuf) -> Result<()> {
        let _span = crate::probe::span("scaler_update");
        match &mut scaler.storage {
            Storage::Scaler(s) => {
                s.update();
                Ok(())
            }
            _ => Err(bad("scaler_update: expected a scaler state buffer")),
        }
    }

    fn cast(&self, src: &CpuBuf, dst: &mut CpuBuf) -> Result<()> {
        let _span = crate::probe::span("cast");
        let len = match &dst.storage {
            Storage::F32(v) => v.len(),
            Storage::F16(v) => v.len(),
            Storage::Bf16(v) => v.len(),
            _ => return Err(bad("cast: expected float buffers")),
        };
        let v = FloatRef::of(src, len, "cast src")?.to_vec(0, len);
        FloatMut::of(dst, len, "cast dst")?.store(0, &v);
        Ok(())
    }

    fn scaler_new(&self, state: ScalerState) -> Result<CpuBuf> {
        Ok(self.buf(Storage::Scaler(state)))
    }
    fn scaler_read(&self, scaler: &CpuBuf) -> Result<ScalerState> {
        scaler_of(scaler)
    }
    fn sums_new(&self) -> Result<CpuBuf> {
        Ok(self.buf(Storage::Sums(LossSums::default())))
    }
    fn sums_take(&self, sums: &mut CpuBuf) -> Result<LossSums> {
        match &mut sums.storage {
            Storage::Sums(s) => Ok(std::mem::take(s)),
            _ => Err(bad("sums_take: expected a sums buffer")),
        }
    }

    fn fp8_engine(&self) -> Option<(String, bool)> {
        Some((
            "emulated on the CPU: each operand rounded to E4M3/E5M2 with its tensor's scale, \
             the products and sums in FP32"
                .into(),
            true,
        ))
    }
    fn fp8_new(&self, state: Fp8State) -> Result<CpuBuf> {
        Ok(self.buf(Storage::Fp8(Box::new(state))))
    }
    fn fp8_cast(
        &self,
        buf: &mut CpuBuf,
        len: usize,
        t: Fp8Tensor,
        state: &mut CpuBuf,
        record: bool,
        loss_scaler: Option<&CpuBuf>,
    ) -> Result<()> {
        let _span = crate::probe::span("fp8_cast");
        let loss_scale = match loss_scaler {
            Some(s) => self.scaler_read(s)?.scale,
            None => 1.0,
        };
        let Storage::Fp8(st) = &mut state.storage else {
            return Err(bad("fp8_cast: expected an FP8 state buffer"));
        };
        match &mut buf.storage {
            Storage::F32(v) if v.len() >= len => {
                st.cast_loss_scaled(t, &mut v[..len], record, loss_scale);
                Ok(())
            }
            _ => Err(bad(&format!(
                "fp8_cast: expected an f32 buffer of at least {len} values"
            ))),
        }
    }
    fn fp8_end_step(&self, state: &mut CpuBuf) -> Result<()> {
        match &mut state.storage {
            Storage::Fp8(st) => {
                st.end_step();
                Ok(())
            }
            _ => Err(bad("fp8_end_step: expected an FP8 state buffer")),
        }
    }
    fn fp8_read(&self, state: &CpuBuf) -> Result<Fp8State> {
        match &state.storage {
            Storage::Fp8(st) => Ok((**st).clone()),
            _ => Err(bad("fp8_read: expected an FP8 state buffer")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::lab;
    use crate::train::{init_params, TrainOptions, Trainer};

    /// The widen-then-`sgemm` path, and the 16-bit GEMM paths this CPU runs.
    fn backends() -> (CpuBackend, Vec<(Kernel, CpuBackend)>) {
        let mut old = CpuBackend::new(Some(2)).unwrap();
        old.set_gemm16_for_tests(None, None);
        let mut kernels = vec![Kernel::Wide];
        if gemm16::bf16_dot_available() {
            kernels.push(Kernel::Bf16Dot);
        } else {
            eprintln!("no AVX512-BF16 on this CPU: only the widening GEMM is compared");
        }
        let news = kernels
            .into_iter()
            .map(|k| {
                let mut be = CpuBackend::new(Some(2)).unwrap();
                be.set_gemm16_for_tests(Some(k), Some(Kernel::Wide));
                (k, be)
            })
            .collect();
        (old, news)
    }

    /// max |a − b| / max |b|.
    fn rel(a: &[f32], b: &[f32]) -> f64 {
        assert_eq!(a.len(), b.len());
        let scale = b.iter().fold(0f64, |m, v| m.max(v.abs() as f64)).max(1e-30);
        a.iter()
            .zip(b)
            .map(|(x, y)| (*x as f64 - *y as f64).abs())
            .fold(0f64, f64::max)
            / scale
    }

    #[test]
    fn gemm16_conv_blocks_equal_the_widening_path_in_bf16_and_fp16() {
        let (old, news) = backends();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(27);
        let n = 5; // more images than threads, and an odd split
        for s in [lab::CONV1, lab::CONV2] {
            let (ph, pw) = (s.h_out() / 2, s.w_out() / 2);
            let plen = s.c_out * ph * pw;
            let mut rv = |len: usize| -> Vec<f32> {
                (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
            };
            let (x, w, b, g) = (
                rv(n * s.in_len()),
                rv(s.weight_len()),
                rv(s.c_out),
                rv(n * plen),
            );
            for dtype in [DType::Bf16, DType::F16] {
                for act in Activation::ALL {
                    let up = |be: &CpuBackend, v: &[f32], dt: DType| {
                        let mut buf = be.alloc(dt, v.len()).unwrap();
                        be.upload(&mut buf, v).unwrap();
                        buf
                    };
                    // The old path: forward, then backward from its own mask.
                    let mut out0 = old.alloc(dtype, n * plen).unwrap();
                    let mut mask0 = old.alloc(DType::U8, n * plen).unwrap();
                    let (xb, wb, bb) = (
                        up(&old, &x, dtype),
                        up(&old, &w, dtype),
                        up(&old, &b, DType::F32),
                    );
                    let gb = up(&old, &g, dtype);
                    old.conv_block_fwd(&xb, &wb, &bb, &mut out0, &mut mask0, n, s, act)
                        .unwrap();
                    let bwd = |be: &CpuBackend| {
                        let mut dw = be.alloc(dtype, s.weight_len()).unwrap();
                        let mut db = be.alloc(dtype, s.c_out).unwrap();
                        let mut dx = be.alloc(dtype, n * s.in_len()).unwrap();
                        be.upload(&mut dx, &vec![f32::NAN; n * s.in_len()]).unwrap();
                        be.conv_block_bwd(
                            &xb,
                            &wb,
                            &bb,
                            &mask0,
                            &gb,
                            &mut dw,
                            &mut db,
                            Some(&mut dx),
                            n,
                            s,
                            act,
                        )
                        .unwrap();
                        [dw, db, dx].map(|v| be.download(&v).unwrap())
                    };
                    let want_out = old.download(&out0).unwrap();
                    let want = bwd(&old);
                    for (kernel, be) in &news {
                        if dtype == DType::F16 && *kernel == Kernel::Bf16Dot {
                            continue; // fp16 always widens
                        }
                        let mut out = be.alloc(dtype, n * plen).unwrap();
                        be.upload(&mut out, &vec![f32::NAN; n * plen]).unwrap();
                        let mut mask = be.alloc(DType::U8, n * plen).unwrap();
                        be.conv_block_fwd(&xb, &wb, &bb, &mut out, &mut mask, n, s, act)
                            .unwrap();
                        let got = be.download(&out).unwrap();
                        // Only the f32 summation order differs: at most one rounding step of
                        // the storage dtype apart.
                        let tol = if dtype == DType::Bf16 { 1e-2 } else { 2e-3 };
                        let r = rel(&got, &want_out);
                        assert!(r < tol, "{kernel:?} {dtype:?} {act} {s:?} fwd {r}");
                        let got = bwd(be);
                        for (name, g, w) in [("dw", 0, 0), ("db", 1, 1), ("dx", 2, 2)]
                            .map(|(nm, i, j)| (nm, &got[i], &want[j]))
                        {
                            let r = rel(g, w);
                            assert!(r < tol, "{kernel:?} {dtype:?} {act} {s:?} {name} {r}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn gemm16_training_step_gradients_equal_the_widening_path_in_bf16() {
        let (old, news) = backends();
        let d = crate::data::mnist_sample().unwrap();
        let (mut train, mut test) = (d.train.clone(), d.test.clone());
        train.truncate(24, 784);
        test.truncate(8, 784);
        let opts = TrainOptions {
            precision: Precision::Bf16,
            epochs: 1,
            batch: 12,
            adam: AdamParams::default(),
            seed: 5,
            dropout: 0.0,
            activation: Activation::Relu,
        };
        let grads = |be: &CpuBackend| {
            let mut t = Trainer::new(be, opts, &train, &test, &init_params(5)).unwrap();
            t.forward_backward(0, 12).unwrap();
            t.grads().unwrap()
        };
        let want = grads(&old);
        for (kernel, be) in &news {
            let got = grads(be);
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(w.iter().any(|v| *v != 0.0), "parameter {i} has a gradient");
                let r = rel(g, w);
                assert!(r < 2e-2, "{kernel:?} parameter {i}: {r}");
            }
        }
    }
}
