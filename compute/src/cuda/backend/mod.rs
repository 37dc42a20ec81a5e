//! [`CudaBackend`]: the training primitives of [`Backend`] on our own kernels (`train.cu`,
//! `conv_mma.cu`), each launched through its typed wrapper in [`super::launch`].
//!
//! One concern a file: `cuda_backend` holds the backend's value (the opened device, its
//! stream, kernels and scratch); this one its [`Backend`] implementation (buffers, marks,
//! graphs), which hands each primitive to its layer family: the convolution blocks and their weight gradients (`conv`), dropout, the dense layer,
//! the fused head and the loss (`dense`), and the optimizer with its loss scaler and FP8's
//! casts (`optim`).

mod conv;
mod cuda_backend;
mod dense;
mod optim;

use cudarc::driver::CudaGraph;
use half::{bf16, f16};

use super::buffers::{CudaBuf, CudaData, Storage};
use super::launch::{self, one_block};
use super::{err, telemetry};
use crate::backend::{AdamParams, Backend, DType, HeadStep, LossSums, ScalerState, CURSOR_WORDS};
use crate::error::Result;
use crate::model::{Activation, ConvShape};
use crate::types::Precision;
pub use cuda_backend::CudaBackend;

impl Backend for CudaBackend {
    type Buf = CudaBuf;
    type Data = CudaData;
    type Graph = CudaGraph;
    type Mark = cudarc::driver::CudaEvent;

    fn name(&self) -> &'static str {
        "cuda"
    }
    fn device(&self) -> String {
        self.device.clone()
    }
    fn threads(&self) -> usize {
        1
    }
    fn supports(&self, precision: Precision) -> bool {
        match precision {
            Precision::Fp32 | Precision::Fp16 => true,
            // BF16 and TF32 tensor-core math needs sm_80 or newer.
            Precision::Bf16 | Precision::Tf32 => self.cc_major >= 8,
            // Emulated on every GPU: cast kernels round the FP16 operands onto the FP8 grids.
            Precision::Fp8 => true,
        }
    }
    fn set_precision(&self, precision: Precision) {
        self.tf32.store(
            precision == Precision::Tf32,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
    fn host_reads_are_cheap(&self) -> bool {
        false
    }
    fn start_telemetry(&self) -> Option<crate::backend::TelemetryRecorder> {
        Some(telemetry::start(self.ordinal))
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<CudaBuf> {
        let s = &self.stream;
        let n = len.max(1);
        let storage = match dtype {
            DType::F32 => Storage::F32(s.alloc_zeros::<f32>(n).map_err(err)?),
            DType::F16 => Storage::F16(s.alloc_zeros::<u16>(n).map_err(err)?),
            DType::Bf16 => Storage::Bf16(s.alloc_zeros::<u16>(n).map_err(err)?),
            DType::U8 => Storage::U8(s.alloc_zeros::<u8>(n).map_err(err)?),
            DType::U32 => Storage::U32(s.alloc_zeros::<u32>(n).map_err(err)?),
        };
        Ok(CudaBuf::new(storage, len, dtype.size(), &self.meter))
    }

    fn upload(&self, buf: &mut CudaBuf, data: &[f32]) -> Result<()> {
        buf.need(data.len(), "upload")?;
        let s = &self.stream;
        match &mut buf.storage {
            Storage::F32(d) => s.memcpy_htod(data, &mut d.slice_mut(..data.len())),
            Storage::F16(d) => s.memcpy_htod(
                &data
                    .iter()
                    .map(|&v| f16::from_f32(v).to_bits())
                    .collect::<Vec<_>>(),
                &mut d.slice_mut(..data.len()),
            ),
            Storage::Bf16(d) => s.memcpy_htod(
                &data
                    .iter()
                    .map(|&v| bf16::from_f32(v).to_bits())
                    .collect::<Vec<_>>(),
                &mut d.slice_mut(..data.len()),
            ),
            Storage::U32(d) => s.memcpy_htod(
                &data.iter().map(|&v| v as u32).collect::<Vec<_>>(),
                &mut d.slice_mut(..data.len()),
            ),
            Storage::U8(d) => s.memcpy_htod(
                &data.iter().map(|&v| v as u8).collect::<Vec<_>>(),
                &mut d.slice_mut(..data.len()),
            ),
            _ => return Err(err("upload: not a tensor buffer")),
        }
        .map_err(err)
    }

    fn download(&self, buf: &CudaBuf) -> Result<Vec<f32>> {
        let s = &self.stream;
        let len = buf.len;
        Ok(match &buf.storage {
            Storage::F32(d) => s.clone_dtoh(&d.slice(..len)).map_err(err)?,
            Storage::F16(d) => s
                .clone_dtoh(&d.slice(..len))
                .map_err(err)?
                .into_iter()
                .map(|b| f16::from_bits(b).to_f32())
                .collect(),
            Storage::Bf16(d) => s
                .clone_dtoh(&d.slice(..len))
                .map_err(err)?
                .into_iter()
                .map(|b| bf16::from_bits(b).to_f32())
                .collect(),
            Storage::U8(d) => s
                .clone_dtoh(&d.slice(..len))
                .map_err(err)?
                .into_iter()
                .map(|b| b as f32)
                .collect(),
            Storage::U32(d) => s
                .clone_dtoh(&d.slice(..len))
                .map_err(err)?
                .into_iter()
                .map(|b| b as f32)
                .collect(),
            _ => return Err(err("download: not a tensor buffer")),
        })
    }

    fn upload_data(&self, images: &[u8], labels: &[u8], pixels: usize) -> Result<CudaData> {
        if images.len() != labels.len() * pixels {
            return Err(err("upload_data: images and labels disagree"));
        }
        Ok(CudaData::new(
            self.stream.clone_htod(images).map_err(err)?,
            self.stream.clone_htod(labels).map_err(err)?,
            pixels,
            &self.meter,
        ))
    }

    fn peak_bytes(&self) -> u64 {
        self.meter.peak()
    }
    fn reset_peak(&self) {
        self.meter.reset()
    }
    fn release_scratch(&self) {
        // A poisoned lock keeps its buffer: freeing scratch is an economy, never required.
        if let Ok(mut part) = self.wgrad_part.lock() {
            *part = None;
        }
        if let Ok(mut g) = self.act_grad.lock() {
            *g = None;
        }
        if let Ok(mut h) = self.head_scratch.lock() {
            *h = None;
        }
    }
    fn peak_split(&self) -> Option<crate::memory::MemorySplit> {
        Some(self.meter.peak_split())
    }
    fn set_memory_category(&self, c: crate::memory::MemoryCategory) {
        self.meter.set_category(c);
    }
    fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(err)
    }

    fn gather(
        &self,
        data: &CudaData,
        order: &CudaBuf,
        cursor: &CudaBuf,
        stride: usize,
        n: usize,
        mean: f32,
        std: f32,
        x: &mut CudaBuf,
        labels: &mut CudaBuf,
    ) -> Result<()> {
        // The start (cursor step x stride) is only known on the device; the kernel checks it
        // against the order's length.
        order.need(n, "gather order")?;
        cursor.cursor()?;
        x.need(n * data.pixels, "gather x")?;
        labels.need(n, "gather labels")?;
        if data.n == 0 {
            return Err(err("gather: empty data set"));
        }
        let k = self.kernel(&format!("gather_{}", x.suffix()?))?;
        let (scale, shift) = (1.0f32 / (255.0 * std), mean / std);
        // SAFETY: x and labels sized above; the kernel reads order[] only below its length, and
        // every index in `order` is < data.n (the trainer's permutation of the split).
        unsafe {
            launch::gather(
                &self.stream,
                k,
                self.cfg(n * data.pixels),
                &data.images,
                &data.labels,
                order,
                order.len,
                cursor,
                stride,
                n,
                data.pixels,
                scale,
                shift,
                x,
                labels,
            )
        }
    }

    fn conv_block_fwd(
        &self,
        x: &CudaBuf,
        w: &CudaBuf,
        bias: &CudaBuf,
        out: &mut CudaBuf,
        mask: &mut CudaBuf,
        n: usize,
        s: ConvShape,
        act: Activation,
    ) -> Result<()> {
        conv::block_fwd(self, x, w, bias, out, mask, n, s, act)
    }

    fn conv_block_bwd(
        &self,
        x: &CudaBuf,
        w: &CudaBuf,
        bias: &CudaBuf,
        mask: &CudaBuf,
        dout: &CudaBuf,
        dw: &mut CudaBuf,
        db: &mut CudaBuf,
        dx: Option<&mut CudaBuf>,
        n: usize,
        s: ConvShape,
        act: Activation,
    ) -> Result<()> {
        conv::block_bwd(self, x, w, bias, mask, dout, dw, db, dx, n, s, act)
    }

    fn dropout_fwd(
        &self,
        x: &CudaBuf,
        out: &mut CudaBuf,
        mask: &mut CudaBuf,
        len: usize,
        p: f32,
        seed: u64,
        cursor: &CudaBuf,
    ) -> Result<()> {
        dense::dropout_fwd(self, x, out, mask, len, p, seed, cursor)
    }

    fn cursor_set(&self, cursor: &mut CudaBuf, step: u32, counter: u64) -> Result<()> {
        let words = [step, counter as u32, (counter >> 32) as u32];
        let Storage::U32(c) = &mut cursor.storage else {
            return Err(err("a step cursor is a U32 buffer"));
        };
        if c.len() < CURSOR_WORDS {
            return Err(err("a step cursor needs 3 words"));
        }
        self.stream
            .memcpy_htod(&words, &mut c.slice_mut(..CURSOR_WORDS))
            .map_err(err)
    }

    fn cursor_advance(&self, cursor: &mut CudaBuf) -> Result<()> {
        cursor.cursor()?;
        let k = self.kernel("cursor_advance")?;
        // SAFETY: one thread updates the 3 words checked above.
        unsafe { launch::cursor_advance(&self.stream, k, one_block(1), cursor) }
    }

    fn mark(&self) -> Result<Option<cudarc::driver::CudaEvent>> {
        let e = self
            ._ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)?;
        e.record(&self.stream).map_err(err)?;
        Ok(Some(e))
    }

    fn elapsed_ms(
        &self,
        start: &cudarc::driver::CudaEvent,
        end: &cudarc::driver::CudaEvent,
    ) -> Result<f64> {
        Ok(start.elapsed_ms(end).map_err(err)? as f64)
    }

    fn capture_begin(&self) -> Result<bool> {
        if !self.graphs {
            return Ok(false);
        }
        self.stream
            .begin_capture(
                cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
            .map_err(|e| err(format!("starting a graph capture: {e}")))?;
        Ok(true)
    }

    fn capture_end(&self) -> Result<CudaGraph> {
        self.stream
            .end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))
            .map_err(|e| err(format!("ending a graph capture: {e}")))?
            .ok_or_else(|| err("the graph capture recorded nothing"))
    }

    fn replay(&self, graph: &CudaGraph) -> Result<()> {
        graph.launch().map_err(err)
    }

    fn dropout_bwd(
        &self,
        dout: &CudaBuf,
        mask: &CudaBuf,
        dx: &mut CudaBuf,
        len: usize,
        p: f32,
    ) -> Result<()> {
        dense::dropout_bwd(self, dout, mask, dx, len, p)
    }

    fn dense_fwd(
        &self,
        x: &CudaBuf,
        w: &CudaBuf,
        bias: &CudaBuf,
        y: &mut CudaBuf,
        n: usize,
        fin: usize,
        fout: usize,
    ) -> Result<()> {
        dense::forward(self, x, w, bias, y, n, fin, fout)
    }

    fn dense_bwd(
        &self,
        x: &CudaBuf,
        w: &CudaBuf,
        dy: &CudaBuf,
        dx: &mut CudaBuf,
        dw: &mut CudaBuf,
        db: &mut CudaBuf,
        n: usize,
        fin: usize,
        fout: usize,
    ) -> Result<()> {
        dense::backward(self, x, w, dy, dx, dw, db, n, fin, fout)
    }

    fn head_train(&self, h: HeadStep<'_, CudaBuf>) -> Result<()> {
        dense::head_train(self, h)
    }

    fn softmax_xent(
        &self,
        logits: &CudaBuf,
        labels: &CudaBuf,
        dlogits: Option<&mut CudaBuf>,
        n: usize,
        classes: usize,
        scaler: &CudaBuf,
        sums: &mut CudaBuf,
    ) -> Result<()> {
        dense::softmax_xent(self, logits, labels, dlogits, n, classes, scaler, sums)
    }

    fn check_finite(&self, grads: &[&CudaBuf], scaler: &mut CudaBuf) -> Result<()> {
        optim::check_finite(self, grads, scaler)
    }

    fn adam_all(
        &self,
        tensors: &mut [crate::backend::AdamTensor<'_, CudaBuf>],
        hp: AdamParams,
        scaler: &CudaBuf,
    ) -> Result<()> {
        optim::adam_all(self, tensors, hp, scaler)
    }

    fn adam(
        &self,
        param: &mut CudaBuf,
        grad: &CudaBuf,
        m: &mut CudaBuf,
        v: &mut CudaBuf,
        copy: Option<&mut CudaBuf>,
        hp: AdamParams,
        scaler: &CudaBuf,
    ) -> Result<()> {
        optim::adam(self, param, grad, m, v, copy, hp, scaler)
    }

    fn scaler_update(&self, scaler: &mut CudaBuf) -> Result<()> {
        optim::scaler_update(self, scaler)
    }

    fn step_finish(&self, scaler: &mut CudaBuf, cursor: &mut CudaBuf) -> Result<()> {
        optim::step_finish(self, scaler, cursor)
    }

    fn cast(&self, src: &CudaBuf, dst: &mut CudaBuf) -> Result<()> {
        optim::cast(self, src, dst)
    }

    fn scaler_new(&self, st: ScalerState) -> Result<CudaBuf> {
        let words = [
            st.scale.to_bits(),
            st.growth_tracker,
            st.found_inf as u32,
            st.skipped,
            st.step,
            st.enabled as u32,
        ];
        let s = self.stream.clone_htod(&words).map_err(err)?;
        Ok(CudaBuf::new(Storage::Scaler(s), 6, 4, &self.meter))
    }
    fn scaler_read(&self, scaler: &CudaBuf) -> Result<ScalerState> {
        let Storage::Scaler(s) = &scaler.storage else {
            return Err(err("expected a scaler buffer"));
        };
        let w = self.stream.clone_dtoh(s).map_err(err)?;
        if w.len() < 6 {
            return Err(err("scaler buffer too short"));
        }
        Ok(ScalerState {
            scale: f32::from_bits(w[0]),
            growth_tracker: w[1],
            found_inf: w[2] != 0,
            skipped: w[3],
            step: w[4],
            enabled: w[5] != 0,
        })
    }
    fn fp8_storage(&self) -> DType {
        DType::F16
    }
    fn fp8_engine(&self) -> Option<(String, bool)> {
        // `compute_90` is NVRTC's name of the architecture; users know it as sm_90.
        let sm = self.arch.replace("compute_", "sm_");
        let hardware = if self.fp8_tensor_cores {
            format!("this GPU ({sm}) has FP8 tensor cores, which this build does not use yet")
        } else {
            format!("this GPU ({sm}) has no FP8 tensor cores")
        };
        Some((
            format!(
                "emulated on {}'s FP16 tensor cores: cast kernels round each operand onto \
                 E4M3/E5M2 with its tensor's scale, the FP16 products of FP8 values are exact and \
                 the sums FP32; FP16's loss scaler runs, and the gradients' casts divide its \
                 scale out of their amaxes and scales ({hardware})",
                self.device
            ),
            true,
        ))
    }
    fn fp8_new(&self, state: crate::fp8::Fp8State) -> Result<CudaBuf> {
        let words = super::fp8::to_words(&state)?;
        let current = state.recipe.scaling == crate::fp8::Fp8Scaling::Current;
        let s = self.stream.clone_htod(&words).map_err(err)?;
        Ok(CudaBuf::new(
            Storage::Fp8(s, current),
            words.len(),
            8,
            &self.meter,
        ))
    }
    fn fp8_cast(
        &self,
        buf: &mut CudaBuf,
        len: usize,
        t: crate::fp8::Fp8Tensor,
        state: &mut CudaBuf,
        record: bool,
        loss_scaler: Option<&CudaBuf>,
    ) -> Result<()> {
        optim::fp8_cast(self, buf, len, t, state, record, loss_scaler)
    }
    fn fp8_end_step(&self, state: &mut CudaBuf) -> Result<()> {
        let k = self.kernel("fp8_end_step")?;
        // SAFETY: an FP8 state buffer (checked by the wrapper); one block of a warp per tensor.
        unsafe { launch::fp8_end_step(&self.stream, k, one_block(32 * 6), state) }
    }
    fn fp8_weights_end_step(
        &self,
        w1: &mut CudaBuf,
        n1: usize,
        w2: &mut CudaBuf,
        n2: usize,
        state: &mut CudaBuf,
    ) -> Result<()> {
        optim::fp8_weights_end_step(self, w1, n1, w2, n2, state)
    }
    fn fp8_read(&self, state: &CudaBuf) -> Result<crate::fp8::Fp8State> {
        let Storage::Fp8(s, _) = &state.storage else {
            return Err(err("expected an FP8 state buffer"));
        };
        let w = self.stream.clone_dtoh(s).map_err(err)?;
        super::fp8::from_words(&w)
    }
    fn sums_new(&self) -> Result<CudaBuf> {
        let s = self.stream.alloc_zeros::<f64>(4).map_err(err)?;
        Ok(CudaBuf::new(Storage::Sums(s), 4, 8, &self.meter))
    }
    fn sums_take(&self, sums: &mut CudaBuf) -> Result<LossSums> {
        let Storage::Sums(s) = &mut sums.storage else {
            return Err(err("expected a sums buffer"));
        };
        let v = self.stream.clone_dtoh(s).map_err(err)?;
        self.stream.memset_zeros(s).map_err(err)?;
        if v.len() < 4 {
            return Err(err("sums buffer too short"));
        }
        Ok(LossSums {
            loss: v[0],
            correct: v[1] as u64,
            count: v[2] as u64,
            last_loss: v[3],
        })
    }
}
