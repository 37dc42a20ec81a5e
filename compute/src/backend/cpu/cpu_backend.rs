//! The CPU backend's value ([`CpuBackend`]): its thread pool, memory meter, stop flag and
//! the 16-bit GEMM its convolutions use, with what every primitive shares (scratch chunks, the
//! stop check, buffers with their memory tickets).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::buffers::{CpuBuf, FloatRef, Storage};
use super::memory::{MemoryMeter, Ticket};
use crate::backend::gemm16::{self, Kernel};
use crate::backend::{LossSums, ScalerState};
use crate::error::{ComputeError, Result};
use crate::fp8::Fp8State;

/// The CPU backend.
pub struct CpuBackend {
    pub(super) pool: rayon::ThreadPool,
    pub(super) meter: Arc<MemoryMeter>,
    pub(super) threads: usize,
    pub(super) device: String,
    /// Once set, the convolutions stop within an image (see [`CpuBackend::stop_flag`]).
    pub(super) stop: Arc<AtomicBool>,
    /// The 16-bit GEMM of the BF16 convolutions (None: widen to f32 and `sgemm`); chosen at
    /// start from the CPU's features.
    pub(super) gemm_bf16: Option<Kernel>,
    /// The 16-bit GEMM of the FP16 convolutions (None: widen to f32 and `sgemm`).
    pub(super) gemm_f16: Option<Kernel>,
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
    pub(super) fn gemm16_for(&self, x: &FloatRef<'_>, w: &FloatRef<'_>) -> Option<Kernel> {
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
    pub(super) fn check_stop(&self) -> Result<()> {
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

    pub(super) fn ticket(&self, bytes: u64) -> Ticket {
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
    pub(super) fn chunks(&self, n: usize) -> Vec<std::ops::Range<usize>> {
        let t = self.threads.min(n).max(1);
        let per = n.div_ceil(t);
        (0..t)
            .map(|i| (i * per).min(n)..((i + 1) * per).min(n))
            .filter(|r| !r.is_empty())
            .collect()
    }
}
