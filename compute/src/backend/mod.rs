//! The training primitives every backend implements, and the CPU backend.
//!
//! Composite steps (a whole training step, evaluation) are written once in
//! [`crate::train`] on top of these primitives. Shapes are given per call; buffers are the
//! backend's own ([`Backend::Buf`]), so a GPU backend keeps everything on the device. All
//! tensors are row-major NCHW; `n` is the number of images in the call (≤ the capacity the
//! buffers were allocated for).

pub mod cpu;
pub(crate) mod gemm16;
pub mod reference;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::fp8::{Fp8State, Fp8Tensor};
use crate::model::{Activation, ConvShape};

pub use crate::telemetry::TelemetryRecorder;

/// Element type of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// 32-bit float.
    F32,
    /// IEEE half.
    F16,
    /// bfloat16.
    Bf16,
    /// Unsigned byte (masks, labels, images).
    U8,
    /// 32-bit unsigned integer (indices).
    U32,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::U32 => 4,
            DType::F16 | DType::Bf16 => 2,
            DType::U8 => 1,
        }
    }
}

/// Adam hyper-parameters (PyTorch semantics, no weight decay).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdamParams {
    /// Learning rate.
    pub lr: f32,
    /// β₁.
    pub beta1: f32,
    /// β₂.
    pub beta2: f32,
    /// ε.
    pub eps: f32,
}

impl Default for AdamParams {
    fn default() -> Self {
        AdamParams {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
        }
    }
}

/// The dynamic loss scaler's state (PyTorch `GradScaler` semantics), kept by the backend
/// (on the device for a GPU) so that no host synchronisation is needed inside an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScalerState {
    /// Current loss scale (1 and fixed when scaling is off).
    pub scale: f32,
    /// Clean steps since the last growth or back-off.
    pub growth_tracker: u32,
    /// Whether the current step's gradients hold an inf or NaN.
    pub found_inf: bool,
    /// Steps skipped so far.
    pub skipped: u32,
    /// Optimizer steps applied so far (Adam's `t`).
    pub step: u32,
    /// Whether dynamic scaling is on.
    pub enabled: bool,
}

/// GradScaler's defaults.
pub const SCALER_INIT: f32 = 65536.0;
/// Clean steps before the scale doubles.
pub const SCALER_GROWTH_INTERVAL: u32 = 2000;
/// The scale never backs off below 2⁻²⁴: PyTorch's would reach 0 after enough overflows, and
/// `grad / 0` would then poison the weights with NaN; at the floor the steps keep being skipped.
pub const SCALER_MIN: f32 = 1.0 / 16_777_216.0;

impl ScalerState {
    /// A scaler starting at 65536 (enabled) or fixed at 1 (disabled).
    pub fn new(enabled: bool) -> Self {
        ScalerState {
            scale: if enabled { SCALER_INIT } else { 1.0 },
            growth_tracker: 0,
            found_inf: false,
            skipped: 0,
            step: 0,
            enabled,
        }
    }

    /// Ends a step: with non-finite gradients the step was skipped and the scale halves;
    /// otherwise the step counts and, after [`SCALER_GROWTH_INTERVAL`] clean steps, the scale
    /// doubles. Clears `found_inf`.
    pub fn update(&mut self) {
        if self.found_inf {
            self.skipped += 1;
            if self.enabled {
                self.scale = (self.scale * 0.5).max(SCALER_MIN);
                self.growth_tracker = 0;
            }
        } else {
            self.step += 1;
            if self.enabled {
                self.growth_tracker += 1;
                if self.growth_tracker == SCALER_GROWTH_INTERVAL {
                    self.scale *= 2.0;
                    self.growth_tracker = 0;
                }
            }
        }
        self.found_inf = false;
    }
}

/// Running sums of a loss/accuracy pass.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LossSums {
    /// Sum of per-image cross-entropy.
    pub loss: f64,
    /// Images classified correctly.
    pub correct: u64,
    /// Images counted.
    pub count: u64,
    /// Loss of the most recent batch (mean over its images).
    pub last_loss: f64,
}

/// One tensor of a fused Adam update ([`Backend::adam_all`]): the arguments of [`Backend::adam`].
pub struct AdamTensor<'a, B> {
    /// F32 master values.
    pub param: &'a mut B,
    /// Gradient (scaled by the loss scale).
    pub grad: &'a B,
    /// First moment.
    pub m: &'a mut B,
    /// Second moment.
    pub v: &'a mut B,
    /// Low-precision copy to refresh, if any.
    pub copy: Option<&'a mut B>,
}

/// The dropout of a [`HeadStep`]: inverted dropout as [`Backend::dropout_fwd`] draws it.
pub struct HeadDropout<'a, B> {
    /// The dropped features `[n, fin]` (the dense layer's input).
    pub out: &'a mut B,
    /// The kept (1) / dropped (0) mask, U8 `[n, fin]`.
    pub mask: &'a mut B,
    /// Drop probability.
    pub p: f32,
    /// Seed of the mask (with the cursor's counter).
    pub seed: u64,
}

/// The classifier head of one training step ([`Backend::head_train`]): the features through
/// dropout, the dense layer, softmax cross-entropy, and every gradient of the head.
pub struct HeadStep<'a, B> {
    /// The pooled features `[n, fin]` (the last convolution's output).
    pub feat: &'a B,
    /// Dense weights `[fout, fin]` in the features' dtype, and the F32 bias `[fout]`.
    pub w: &'a B,
    /// F32 bias `[fout]`.
    pub b: &'a B,
    /// Dropout on the features (training with p > 0), else none.
    pub dropout: Option<HeadDropout<'a, B>>,
    /// The step cursor (its counter draws the dropout mask).
    pub cursor: &'a B,
    /// Labels, U8 `[n]`.
    pub labels: &'a B,
    /// Logits `[n, fout]`.
    pub logits: &'a mut B,
    /// The loss gradient with respect to the logits, scaled by the loss scale.
    pub dlogits: &'a mut B,
    /// Scratch `[n, fin]`: the dense input gradient before the dropout mask (where the
    /// backend computes the two apart).
    pub dfeat: &'a mut B,
    /// The gradient with respect to `feat` (through the dropout mask) `[n, fin]`.
    pub dx: &'a mut B,
    /// Dense weight gradient `[fout, fin]` and bias gradient `[fout]` (overwritten).
    pub dw: &'a mut B,
    /// Dense bias gradient `[fout]` (overwritten).
    pub db: &'a mut B,
    /// Images in the batch.
    pub n: usize,
    /// Features per image.
    pub fin: usize,
    /// Classes.
    pub fout: usize,
    /// The loss scaler state (its scale multiplies the gradients).
    pub scaler: &'a B,
    /// The running loss sums the loss is added to.
    pub sums: &'a mut B,
}

/// Words of a step cursor: step within the epoch, dropout counter (low, high).
pub const CURSOR_WORDS: usize = 3;

/// Training primitives. Each takes its buffers explicitly; nothing is hidden in the backend but
/// its device, compiled kernels, memory accounting and the scratch space of its kernels.
pub trait Backend {
    /// A buffer on the backend's device.
    type Buf;
    /// A data set resident on the device (uint8 images and labels).
    type Data;
    /// A recorded step (see [`Backend::capture_begin`]).
    type Graph;
    /// A point in the device's work queue, for timing (a CUDA event).
    type Mark;

    /// `cpu` or `cuda`.
    fn name(&self) -> &'static str;
    /// The device in words.
    fn device(&self) -> String;
    /// Worker threads (CPU) or 1.
    fn threads(&self) -> usize;
    /// Whether the backend can train in `precision`.
    fn supports(&self, precision: crate::types::Precision) -> bool;

    /// Allocates `len` zeroed elements.
    fn alloc(&self, dtype: DType, len: usize) -> Result<Self::Buf>;
    /// Copies host values into a buffer (converted to its dtype).
    fn upload(&self, buf: &mut Self::Buf, data: &[f32]) -> Result<()>;
    /// Copies a buffer to the host as f32.
    fn download(&self, buf: &Self::Buf) -> Result<Vec<f32>>;
    /// Moves a data split onto the device.
    fn upload_data(&self, images: &[u8], labels: &[u8], pixels: usize) -> Result<Self::Data>;
    /// Peak bytes allocated through this backend since the last reset.
    fn peak_bytes(&self) -> u64;
    /// Resets the peak to the bytes allocated now.
    fn reset_peak(&self);
    /// Frees the kernels' scratch buffers the backend keeps between launches (sized for the
    /// last trainer's batch and dtype), so that the next contestant's peak counts only its own.
    /// Call it only while no recorded step graph is alive: a graph refers to the scratch.
    fn release_scratch(&self) {}
    /// [`Backend::peak_bytes`] split by what the allocations held at the peak (sums to it);
    /// `None` where the backend does not keep the split.
    fn peak_split(&self) -> Option<crate::memory::MemorySplit> {
        None
    }
    /// What the next allocations hold (the trainer says so before it allocates; kernel scratch
    /// allocated later counts as [`Workspace`](crate::memory::MemoryCategory::Workspace) once
    /// the trainer has set that back).
    fn set_memory_category(&self, _c: crate::memory::MemoryCategory) {}
    /// Waits for queued work (no-op on the CPU).
    fn synchronize(&self) -> Result<()>;
    /// Starts sampling device telemetry (GPU backends); `None` where there is nothing to sample.
    fn start_telemetry(&self) -> Option<TelemetryRecorder> {
        None
    }
    /// Whether reading results back to the host is cheap (true on the CPU). When false, the
    /// trainer reads losses only every few dozen steps, so the device queue never drains.
    fn host_reads_are_cheap(&self) -> bool {
        true
    }

    /// Gathers images `order[start..start+n]` of `data`, where `start` is the step of `cursor`
    /// (see [`Backend::cursor_set`]) times `stride`, normalised as `(p/255 − mean)/std`, into `x`
    /// `[n, pixels]`, and their labels into `labels` `[n]` (U8). The position is read on the
    /// device, so a captured step graph gathers a new batch each time it is replayed.
    #[allow(clippy::too_many_arguments)]
    fn gather(
        &self,
        data: &Self::Data,
        order: &Self::Buf,
        cursor: &Self::Buf,
        stride: usize,
        n: usize,
        mean: f32,
        std: f32,
        x: &mut Self::Buf,
        labels: &mut Self::Buf,
    ) -> Result<()>;

    /// Convolution block forward: `out = maxpool2(act(conv(x, w) + b))`.
    /// x `[n, c_in, h, w]`, w `[c_out, c_in, k, k]`, b `[c_out]` (F32 master bias),
    /// out `[n, c_out, ⌊h_out/2⌋, ⌊w_out/2⌋]`, mask (U8, same shape as out): index 0–3 of the
    /// window's maximum, or (ReLU only) 4 when the maximum is ≤ 0 (no gradient flows). GELU and
    /// Swish are not monotonic: the maximum is taken after the activation.
    #[allow(clippy::too_many_arguments)]
    fn conv_block_fwd(
        &self,
        x: &Self::Buf,
        w: &Self::Buf,
        b: &Self::Buf,
        out: &mut Self::Buf,
        mask: &mut Self::Buf,
        n: usize,
        shape: ConvShape,
        act: Activation,
    ) -> Result<()>;

    /// Convolution block backward from `dout` (gradient of the pooled output): weight and
    /// bias gradients (overwritten) and, when `dx` is given, the input gradient. `b` is the
    /// bias of the forward pass: activations other than ReLU need the pre-activation at each
    /// window's maximum, which a backend may recompute from `x`, `w` and `b`.
    #[allow(clippy::too_many_arguments)]
    fn conv_block_bwd(
        &self,
        x: &Self::Buf,
        w: &Self::Buf,
        b: &Self::Buf,
        mask: &Self::Buf,
        dout: &Self::Buf,
        dw: &mut Self::Buf,
        db: &mut Self::Buf,
        dx: Option<&mut Self::Buf>,
        n: usize,
        shape: ConvShape,
        act: Activation,
    ) -> Result<()>;

    /// Inverted dropout: `out = x · mask / (1 − p)` with a fresh mask from `seed` and the
    /// counter of `cursor` (read on the device, like [`Backend::gather`]'s position).
    #[allow(clippy::too_many_arguments)]
    fn dropout_fwd(
        &self,
        x: &Self::Buf,
        out: &mut Self::Buf,
        mask: &mut Self::Buf,
        len: usize,
        p: f32,
        seed: u64,
        cursor: &Self::Buf,
    ) -> Result<()>;

    /// Sets a step cursor (a U32 buffer of [`CURSOR_WORDS`]): the step within the epoch that
    /// [`Backend::gather`] starts from and the dropout counter.
    fn cursor_set(&self, cursor: &mut Self::Buf, step: u32, counter: u64) -> Result<()>;
    /// Advances a step cursor by one step (on the device: part of a captured step).
    fn cursor_advance(&self, cursor: &mut Self::Buf) -> Result<()>;

    /// Marks the device's work queue after everything queued so far (CUDA event); `None`
    /// where the backend runs on the host, whose clock is then the measure.
    fn mark(&self) -> Result<Option<Self::Mark>> {
        Ok(None)
    }
    /// Device milliseconds between two marks (waits for the later one).
    fn elapsed_ms(&self, start: &Self::Mark, end: &Self::Mark) -> Result<f64>;

    /// The precision the next launches train in, for backends whose kernels differ by more than
    /// the buffers' dtype (TF32 runs FP32 buffers on tensor cores); a no-op by default.
    fn set_precision(&self, _precision: crate::types::Precision) {}

    /// Starts recording the launches that follow into a replayable graph (CUDA graphs);
    /// `false` where the backend has none, and nothing is recorded.
    fn capture_begin(&self) -> Result<bool> {
        Ok(false)
    }
    /// Ends a recording started by [`Backend::capture_begin`] and returns the graph. The
    /// recorded work has not run: replay it.
    fn capture_end(&self) -> Result<Self::Graph>;
    /// Runs a recorded graph once (asynchronously, in order with other work).
    fn replay(&self, graph: &Self::Graph) -> Result<()>;
    /// Dropout backward: `dx = dout · mask / (1 − p)`.
    fn dropout_bwd(
        &self,
        dout: &Self::Buf,
        mask: &Self::Buf,
        dx: &mut Self::Buf,
        len: usize,
        p: f32,
    ) -> Result<()>;

    /// Dense forward: `y[n, fout] = x[n, fin] · wᵀ + b`, w `[fout, fin]`.
    #[allow(clippy::too_many_arguments)]
    fn dense_fwd(
        &self,
        x: &Self::Buf,
        w: &Self::Buf,
        b: &Self::Buf,
        y: &mut Self::Buf,
        n: usize,
        fin: usize,
        fout: usize,
    ) -> Result<()>;
    /// Dense backward: dw `[fout, fin]`, db `[fout]` (overwritten), dx `[n, fin]`.
    #[allow(clippy::too_many_arguments)]
    fn dense_bwd(
        &self,
        x: &Self::Buf,
        w: &Self::Buf,
        dy: &Self::Buf,
        dx: &mut Self::Buf,
        dw: &mut Self::Buf,
        db: &mut Self::Buf,
        n: usize,
        fin: usize,
        fout: usize,
    ) -> Result<()>;

    /// Softmax cross-entropy over `[n, classes]` logits: adds to the running sums, and when
    /// `dlogits` is given writes `(softmax − onehot) / n · scale` (scale from the scaler state).
    #[allow(clippy::too_many_arguments)]
    fn softmax_xent(
        &self,
        logits: &Self::Buf,
        labels: &Self::Buf,
        dlogits: Option<&mut Self::Buf>,
        n: usize,
        classes: usize,
        scaler: &Self::Buf,
        sums: &mut Self::Buf,
    ) -> Result<()>;

    /// The classifier head of a training step: [`Backend::dropout_fwd`] (when given),
    /// [`Backend::dense_fwd`], [`Backend::softmax_xent`] with its gradient,
    /// [`Backend::dense_bwd`] and [`Backend::dropout_bwd`], in that order (the default; the
    /// step anatomy counts the last two as backward). A GPU backend fuses them into fewer
    /// launches with the same results.
    fn head_train(&self, h: HeadStep<'_, Self::Buf>) -> Result<()> {
        let HeadStep {
            feat,
            w,
            b,
            dropout,
            cursor,
            labels,
            logits,
            dlogits,
            dfeat,
            dx,
            dw,
            db,
            n,
            fin,
            fout,
            scaler,
            sums,
        } = h;
        let dropped = match dropout {
            Some(HeadDropout { out, mask, p, seed }) => {
                self.dropout_fwd(feat, &mut *out, &mut *mask, n * fin, p, seed, cursor)?;
                let (out, mask): (&Self::Buf, &Self::Buf) = (out, mask);
                Some((out, mask, p))
            }
            None => None,
        };
        let x = dropped.map_or(feat, |(out, _, _)| out);
        self.dense_fwd(x, w, b, &mut *logits, n, fin, fout)?;
        self.softmax_xent(logits, labels, Some(&mut *dlogits), n, fout, scaler, sums)?;
        crate::probe::set_phase("backward");
        match dropped {
            Some((_, mask, p)) => {
                self.dense_bwd(x, w, dlogits, &mut *dfeat, dw, db, n, fin, fout)?;
                self.dropout_bwd(dfeat, mask, dx, n * fin, p)
            }
            None => self.dense_bwd(x, w, dlogits, dx, dw, db, n, fin, fout),
        }
    }

    /// Sets the scaler's `found_inf` when any gradient element is inf or NaN.
    fn check_finite(&self, grads: &[&Self::Buf], scaler: &mut Self::Buf) -> Result<()>;
    /// One Adam update of `param` (F32 master) from `grad / scale`, skipped when the scaler
    /// found an inf; refreshes `copy` (the low-precision weight copy) when given.
    #[allow(clippy::too_many_arguments)]
    fn adam(
        &self,
        param: &mut Self::Buf,
        grad: &Self::Buf,
        m: &mut Self::Buf,
        v: &mut Self::Buf,
        copy: Option<&mut Self::Buf>,
        hp: AdamParams,
        scaler: &Self::Buf,
    ) -> Result<()>;
    /// [`Backend::adam`] on every tensor of `tensors` (one launch on a GPU, which is the point:
    /// the default runs them one by one).
    fn adam_all(
        &self,
        tensors: &mut [AdamTensor<'_, Self::Buf>],
        hp: AdamParams,
        scaler: &Self::Buf,
    ) -> Result<()> {
        for t in tensors.iter_mut() {
            self.adam(t.param, t.grad, t.m, t.v, t.copy.as_deref_mut(), hp, scaler)?;
        }
        Ok(())
    }
    /// Ends a step in the scaler (see [`ScalerState::update`]).
    fn scaler_update(&self, scaler: &mut Self::Buf) -> Result<()>;
    /// The end of a training step: [`Backend::scaler_update`], then
    /// [`Backend::cursor_advance`] (one launch on a GPU).
    fn step_finish(&self, scaler: &mut Self::Buf, cursor: &mut Self::Buf) -> Result<()> {
        self.scaler_update(scaler)?;
        self.cursor_advance(cursor)
    }
    /// Converts `src` into `dst`'s dtype.
    fn cast(&self, src: &Self::Buf, dst: &mut Self::Buf) -> Result<()>;

    /// Creates a scaler state buffer.
    fn scaler_new(&self, state: ScalerState) -> Result<Self::Buf>;
    /// Reads the scaler state.
    fn scaler_read(&self, scaler: &Self::Buf) -> Result<ScalerState>;
    /// Creates a zeroed loss-sums buffer.
    fn sums_new(&self) -> Result<Self::Buf>;
    /// Reads and zeroes the loss sums.
    fn sums_take(&self, sums: &mut Self::Buf) -> Result<LossSums>;

    /// The storage type of an FP8 run's tensors between the casts: FP32 on the CPU (the
    /// emulation computes in FP32), FP16 on a GPU (FP16 tensor cores multiply FP8 values
    /// exactly).
    fn fp8_storage(&self) -> DType {
        DType::F32
    }
    /// How this backend runs FP8 ([`Precision::Fp8`](crate::types::Precision::Fp8)), in
    /// words, and whether that is an emulation (operands rounded to the FP8 grid, arithmetic
    /// in a wider type) rather than FP8 tensor cores; `None` where it does not train in FP8.
    fn fp8_engine(&self) -> Option<(String, bool)> {
        None
    }
    /// Creates FP8 training's scaling state ([`crate::fp8::Fp8State`]) on the backend.
    fn fp8_new(&self, _state: Fp8State) -> Result<Self::Buf> {
        Err(no_fp8(self.name()))
    }
    /// Casts the first `len` values of `buf` (tensor `t`) onto `t`'s FP8 grid in place, with
    /// the scale the state's recipe gives; with `record`, the values' amax and counts join the
    /// step's. With `loss_scaler` (gradients stored times its scale), the state stays in
    /// unscaled units: [`Fp8State::cast_loss_scaled`] is the reference, [`Fp8State::cast`]
    /// without one.
    fn fp8_cast(
        &self,
        _buf: &mut Self::Buf,
        _len: usize,
        _t: Fp8Tensor,
        _state: &mut Self::Buf,
        _record: bool,
        _loss_scaler: Option<&Self::Buf>,
    ) -> Result<()> {
        Err(no_fp8(self.name()))
    }
    /// Ends a step in the FP8 state ([`Fp8State::end_step`]: amax histories, next scales).
    fn fp8_end_step(&self, _state: &mut Self::Buf) -> Result<()> {
        Err(no_fp8(self.name()))
    }
    /// The optimizer's FP8 tail: the convolutions' weight copies `w1` (`n1` values) and `w2`
    /// (`n2`) cast as [`Fp8Tensor::Conv1Weight`] and [`Fp8Tensor::Conv2Weight`] (recorded),
    /// then [`Backend::fp8_end_step`]; one launch on a GPU.
    fn fp8_weights_end_step(
        &self,
        w1: &mut Self::Buf,
        n1: usize,
        w2: &mut Self::Buf,
        n2: usize,
        state: &mut Self::Buf,
    ) -> Result<()> {
        self.fp8_cast(w1, n1, Fp8Tensor::Conv1Weight, state, true, None)?;
        self.fp8_cast(w2, n2, Fp8Tensor::Conv2Weight, state, true, None)?;
        self.fp8_end_step(state)
    }
    /// Reads the FP8 state.
    fn fp8_read(&self, _state: &Self::Buf) -> Result<Fp8State> {
        Err(no_fp8(self.name()))
    }
}

/// The error of an FP8 primitive on a backend without FP8.
fn no_fp8(backend: &str) -> crate::error::ComputeError {
    crate::error::ComputeError::Backend {
        backend: backend.into(),
        reason: "this backend does not train in FP8".into(),
    }
}
