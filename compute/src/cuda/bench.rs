//! What the GPU benchmarks share — the convolution ladder ([`super::conv_ladder`]), its
//! library peers ([`super::library`]), the kernel lab and inference: CUDA-event timing, the
//! ladder's options, and a [`BenchStream`] that poisons, downloads and times on one stream.
//! Both the ladder and the library peers import this module; neither imports the other's
//! internals through it.

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtrMut};
use half::f16;

use super::err;
use crate::conv_ladder::{percentiles, LadderLayer};
use crate::error::Result;
use crate::model::ConvShape;

/// Timing with CUDA events on `stream`: `warmup` untimed calls, then `reps` timed ones (ms each).
pub(crate) fn time_events(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    warmup: usize,
    reps: usize,
    mut f: impl FnMut(usize) -> Result<()>,
) -> Result<Vec<f64>> {
    for i in 0..warmup {
        f(i)?;
    }
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let mut events = Vec::with_capacity(reps);
    for i in 0..reps {
        let (a, b) = (
            ctx.new_event(flags).map_err(err)?,
            ctx.new_event(flags).map_err(err)?,
        );
        a.record(stream).map_err(err)?;
        f(warmup + i)?;
        b.record(stream).map_err(err)?;
        events.push((a, b));
    }
    stream.synchronize().map_err(err)?;
    events
        .iter()
        .map(|(a, b)| a.elapsed_ms(b).map(|t| t as f64).map_err(err))
        .collect()
}

/// Options of a ladder run.
#[derive(Debug, Clone)]
pub struct LadderOptions {
    /// Images per pass.
    pub batch: usize,
    /// Timed passes at most (fewer for slow rows: about `budget_ms` per row).
    pub reps: usize,
    /// Time budget per row, ms.
    pub budget_ms: f64,
    /// Layers to run.
    pub layers: Vec<LadderLayer>,
    /// Images checked against the CPU reference per rung at the full batch.
    pub check_images: usize,
}

/// Outputs to download.
#[derive(Clone, Copy)]
pub(crate) enum Outputs<'a> {
    /// FP32.
    F32(&'a CudaSlice<f32>),
    /// FP16 bits.
    F16(&'a CudaSlice<u16>),
    /// FP16 (cuDNN's buffers).
    Half(&'a CudaSlice<f16>),
}

/// A context and the stream a benchmark queues, checks and times its work on.
pub(crate) struct BenchStream {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
}

impl BenchStream {
    /// Fills `y` with 0xFF bytes (NaN in FP32 and FP16), so that an unwritten output fails its
    /// check.
    pub(crate) fn poison<T>(&self, y: &mut CudaSlice<T>) -> Result<()>
    where
        T: cudarc::driver::DeviceRepr,
    {
        let bytes = y.num_bytes();
        let (ptr, _rec) = y.device_ptr_mut(&self.stream);
        // SAFETY: ptr addresses `bytes` bytes of y; 0xFF bytes are NaN in FP32 and FP16.
        unsafe {
            cudarc::driver::result::memset_d8_async(ptr, 0xFF, bytes, self.stream.cu_stream())
        }
        .map_err(err)
    }

    /// Downloads the outputs of `images` (as f32).
    pub(crate) fn outputs(
        &self,
        s: &ConvShape,
        y: Outputs<'_>,
        images: &[usize],
    ) -> Result<Vec<f32>> {
        let n = s.out_len();
        let mut v = Vec::with_capacity(images.len() * n);
        for &i in images {
            match y {
                Outputs::F32(y) => v.extend(
                    self.stream
                        .clone_dtoh(&y.slice(i * n..(i + 1) * n))
                        .map_err(err)?,
                ),
                Outputs::F16(y) => v.extend(
                    self.stream
                        .clone_dtoh(&y.slice(i * n..(i + 1) * n))
                        .map_err(err)?
                        .into_iter()
                        .map(|h| f16::from_bits(h).to_f32()),
                ),
                Outputs::Half(y) => v.extend(
                    self.stream
                        .clone_dtoh(&y.slice(i * n..(i + 1) * n))
                        .map_err(err)?
                        .into_iter()
                        .map(f16::to_f32),
                ),
            }
        }
        Ok(v)
    }

    /// `v` rounded to FP16, on the device.
    pub(crate) fn upload_f16(&self, v: &[f32]) -> Result<CudaSlice<u16>> {
        let bits: Vec<u16> = v.iter().map(|&a| f16::from_f32(a).to_bits()).collect();
        self.stream.clone_htod(&bits).map_err(err)
    }

    /// Timing with CUDA events on this stream (see [`time_events`]).
    pub(crate) fn time_events(
        &self,
        warmup: usize,
        reps: usize,
        f: impl FnMut(usize) -> Result<()>,
    ) -> Result<Vec<f64>> {
        time_events(&self.ctx, &self.stream, warmup, reps, f)
    }

    /// Times `f` (warm-up 2, then as many passes as fit `budget_ms`, at least 5, at most `reps`).
    pub(crate) fn time(
        &self,
        opts: &LadderOptions,
        mut f: impl FnMut(usize) -> Result<()>,
    ) -> Result<(f64, f64, f64, usize)> {
        let first = self.time_events(1, 1, &mut f)?;
        let one = first.first().copied().unwrap_or(1.0).max(1e-3);
        let reps = ((opts.budget_ms / one) as usize).clamp(5, opts.reps.max(5));
        let t = self.time_events(1, reps, &mut f)?;
        let (a, b, c) = percentiles(t);
        Ok((a, b, c, reps))
    }
}
