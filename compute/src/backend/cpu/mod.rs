//! The CPU backend: im2col + GEMM (`matrixmultiply`) convolutions, threads over the batch
//! (`rayon`), FP16/BF16 storage through `half` with FP32 arithmetic.
//!
//! Every primitive reads its inputs into per-thread FP32 scratch (a copy for FP32 buffers, a
//! conversion for FP16), computes in FP32 and rounds its outputs to the output buffer's dtype,
//! which is exactly "FP16 storage, FP32 accumulation".
//!
//! One concern a file: the backend's value (`cpu_backend`: threads, memory meter, stop flag),
//! the memory accounting (`memory`), the buffers and their float views (`buffers`), and the
//! primitives by layer family: the convolution blocks (`conv`), the activation, pooling and
//! dropout (`pool`), the dense layer and the loss (`dense`), and the optimizer with its loss
//! scaler and casts (`optim`). This file holds the [`Backend`] implementation, which hands
//! each primitive to its family.

mod buffers;
mod conv;
mod cpu_backend;
mod dense;
mod memory;
mod optim;
mod pool;
#[cfg(test)]
mod tests;

use half::{bf16, f16};

use super::{AdamParams, Backend, DType, LossSums, ScalerState, CURSOR_WORDS};
use crate::error::Result;
use crate::fp8::{Fp8State, Fp8Tensor};
use crate::memory::{MemoryCategory, MemorySplit};
use crate::model::{Activation, ConvShape};
use crate::types::Precision;

use buffers::{bad, cursor_words, scaler_of, u8_mut, FloatMut, FloatRef};
pub use buffers::{CpuBuf, CpuData, Storage};
pub use conv::{col2im, conv2d_im2col_fwd, im2col};
pub use cpu_backend::CpuBackend;
pub use memory::MemoryMeter;
/// The CUDA backend accounts its buffers with the same tickets.
#[cfg(feature = "cuda")]
pub(crate) use memory::Ticket;

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
        conv::block_fwd(self, x, w, b, out, mask, n, s, act)
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
        conv::block_bwd(self, x, w, b, mask, dout, dw, db, dx, n, s, act)
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
        pool::dropout_fwd(x, out, mask, len, p, seed, cursor)
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
        pool::dropout_bwd(dout, mask, dx, len, p)
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
        dense::forward(x, w, b, y, n, fin, fout)
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
        dense::backward(x, w, dy, dx, dw, db, n, fin, fout)
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
        dense::softmax_xent(logits, labels, dlogits, n, classes, scaler, sums)
    }

    fn check_finite(&self, grads: &[&CpuBuf], scaler: &mut CpuBuf) -> Result<()> {
        optim::check_finite(grads, scaler)
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
        optim::adam(param, grad, m, v, copy, hp, scaler)
    }

    fn scaler_update(&self, scaler: &mut CpuBuf) -> Result<()> {
        optim::scaler_update(scaler)
    }

    fn cast(&self, src: &CpuBuf, dst: &mut CpuBuf) -> Result<()> {
        optim::cast(src, dst)
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
        optim::fp8_cast(buf, len, t, state, record, loss_scaler)
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
