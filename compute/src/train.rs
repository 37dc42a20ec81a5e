//! Training the lab CNN, written once over any [`Backend`]: parameters, a training step,
//! evaluation, epochs, and the loss-scaled mixed-precision recipe.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::anatomy;
use crate::backend::{
    AdamParams, AdamTensor, Backend, DType, HeadDropout, HeadStep, LossSums, ScalerState,
    CURSOR_WORDS,
};
use crate::bench::anatomy::{median, ContestantAnatomy};
use crate::bounds;
use crate::data::Split;
use crate::error::{ComputeError, Result};
use crate::explain::ModelWeights;
use crate::fp8::{
    Fp8Recipe, Fp8Report, Fp8ScalePoint, Fp8State, Fp8Tensor, Fp8TensorReport, Fp8TensorSample,
};
use crate::grads::{GradSample, LayerGrads, Log2Histogram, ScalePoint};
use crate::memory::MemoryCategory;
use crate::model::{lab, Activation};
use crate::trace;
use crate::types::{CurvePoint, DuelEvent, EpochReport, Precision, RunReport};

/// Normalisation applied to every image: `(p/255 − MEAN) / STD` (MNIST's statistics, as the
/// PyTorch peers use for every data set).
pub const MEAN: f32 = 0.1307;
/// See [`MEAN`].
pub const STD: f32 = 0.3081;

/// A mean batch loss above this (100 × ln 10: the true class given probability e⁻²³⁰) means
/// training has diverged; so does a non-finite loss. Precisions with a loss scaler skip the
/// step instead (see [`crate::backend::ScalerState`]).
pub const DIVERGED_LOSS: f64 = 230.26;

/// What one training run needs besides the data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainOptions {
    /// Precision to train in.
    pub precision: Precision,
    /// Epochs.
    pub epochs: usize,
    /// Batch size.
    pub batch: usize,
    /// Adam hyper-parameters.
    pub adam: AdamParams,
    /// Seed of weights, shuffles and dropout.
    pub seed: u64,
    /// Dropout probability.
    pub dropout: f32,
    /// The activation after each convolution (the CNN variant).
    pub activation: Activation,
}

/// Initial parameters with PyTorch's default initialisation
/// (`U(−1/√fan_in, 1/√fan_in)` for weights and biases), from `seed`.
/// Returns `[w1, b1, w2, b2, w3, b3]`.
pub fn init_params(seed: u64) -> [Vec<f32>; 6] {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut u = |len: usize, fan_in: usize| -> Vec<f32> {
        let bound = 1.0 / (fan_in as f32).sqrt();
        (0..len).map(|_| rng.random_range(-bound..bound)).collect()
    };
    let (c1, c2) = (lab::CONV1, lab::CONV2);
    let w1 = u(c1.weight_len(), c1.patch_len());
    let b1 = u(c1.c_out, c1.patch_len());
    let w2 = u(c2.weight_len(), c2.patch_len());
    let b2 = u(c2.c_out, c2.patch_len());
    let w3 = u(lab::FEATURES * lab::CLASSES, lab::FEATURES);
    let b3 = u(lab::CLASSES, lab::FEATURES);
    [w1, b1, w2, b2, w3, b3]
}

/// One parameter tensor: master weights, Adam moments, gradient, low-precision copy.
struct Param<B: Backend> {
    master: B::Buf,
    m: B::Buf,
    v: B::Buf,
    grad: B::Buf,
    /// Low-precision copy used by forward/backward (weights only, mixed precision only).
    copy: Option<B::Buf>,
}

impl<B: Backend> Param<B> {
    fn new(be: &B, init: &[f32], act: DType, with_copy: bool) -> Result<Self> {
        be.set_memory_category(MemoryCategory::MasterWeights);
        let mut master = be.alloc(DType::F32, init.len())?;
        be.upload(&mut master, init)?;
        let copy = if with_copy {
            be.set_memory_category(MemoryCategory::LowPrecisionCopies);
            let mut c = be.alloc(act, init.len())?;
            be.upload(&mut c, init)?;
            Some(c)
        } else {
            None
        };
        be.set_memory_category(MemoryCategory::OptimizerState);
        let (m, v) = (
            be.alloc(DType::F32, init.len())?,
            be.alloc(DType::F32, init.len())?,
        );
        be.set_memory_category(MemoryCategory::Gradients);
        let grad = be.alloc(act, init.len())?;
        Ok(Param {
            m,
            v,
            grad,
            master,
            copy,
        })
    }
    /// The tensor forward/backward use.
    fn used(&self) -> &B::Buf {
        self.copy.as_ref().unwrap_or(&self.master)
    }
}

/// Activation and gradient buffers for one batch size.
struct Workspace<B: Backend> {
    x: B::Buf,
    labels: B::Buf,
    a1: B::Buf,
    m1: B::Buf,
    a2: B::Buf,
    m2: B::Buf,
    drop: B::Buf,
    drop_mask: B::Buf,
    logits: B::Buf,
    dlogits: B::Buf,
    dfeat: B::Buf,
    da2: B::Buf,
    da1: B::Buf,
}

const A1: usize = 32 * lab::POOL1 * lab::POOL1;

impl<B: Backend> Workspace<B> {
    fn new(be: &B, batch: usize, act: DType) -> Result<Self> {
        let img = lab::IMAGE * lab::IMAGE;
        Ok(Workspace {
            x: be.alloc(act, batch * img)?,
            labels: be.alloc(DType::U8, batch)?,
            a1: be.alloc(act, batch * A1)?,
            m1: be.alloc(DType::U8, batch * A1)?,
            a2: be.alloc(act, batch * lab::FEATURES)?,
            m2: be.alloc(DType::U8, batch * lab::FEATURES)?,
            drop: be.alloc(act, batch * lab::FEATURES)?,
            drop_mask: be.alloc(DType::U8, batch * lab::FEATURES)?,
            logits: be.alloc(act, batch * lab::CLASSES)?,
            dlogits: be.alloc(act, batch * lab::CLASSES)?,
            dfeat: be.alloc(act, batch * lab::FEATURES)?,
            da2: be.alloc(act, batch * lab::FEATURES)?,
            da1: be.alloc(act, batch * A1)?,
        })
    }
}

/// The lab CNN being trained on a backend.
pub struct Trainer<'b, B: Backend> {
    /// A full-batch training step recorded once and replayed (GPU backends); declared first so
    /// that it is dropped before the buffers it refers to.
    graph: Option<B::Graph>,
    /// Whether recording the step was tried (once per trainer).
    graph_tried: bool,
    be: &'b B,
    opts: TrainOptions,
    params: [Param<B>; 6],
    ws: Workspace<B>,
    scaler: B::Buf,
    sums: B::Buf,
    train: B::Data,
    test: B::Data,
    order: B::Buf,
    test_order: B::Buf,
    /// Training position read on the device: step within the epoch, dropout counter.
    cursor: B::Buf,
    /// Evaluation position (its step walks the test batches).
    eval_cursor: B::Buf,
    n_train: usize,
    n_test: usize,
    step_counter: u64,
    /// Checked between a step's primitives while [`Trainer::anatomy`] runs (its cancel flag).
    stop: Option<&'b AtomicBool>,
    /// Whether a dynamic loss scaler runs (FP16, and FP8 over FP16 storage).
    loss_scaled: bool,
    /// The storage type of activations, gradients and weight copies.
    act: DType,
    /// FP8's scaling state (FP8 runs only).
    fp8: Option<B::Buf>,
    /// Whether FP8 casts record their amax (training steps; evaluation does not).
    fp8_record: bool,
    /// While a sampled step runs (FP8): each cast tensor's values before its cast, unscaled by
    /// the loss scale (the units of the gradient histograms and of FP8's scales).
    fp8_capture: Option<Vec<Captured>>,
}

/// [`ComputeError::Cancelled`] once `flag` (the cancel flag of a running
/// [`Trainer::anatomy`]) is set: checked between a step's primitives, since one step on a large
/// batch may take seconds.
fn stopped(flag: Option<&AtomicBool>) -> Result<()> {
    match flag {
        Some(f) if f.load(Ordering::Relaxed) => Err(ComputeError::Cancelled),
        _ => Ok(()),
    }
}

/// Activation storage dtype of a precision.
pub fn activation_dtype(p: Precision) -> DType {
    match p {
        Precision::Fp32 | Precision::Tf32 => DType::F32,
        Precision::Fp16 => DType::F16,
        Precision::Bf16 => DType::Bf16,
        // FP8 is emulated over FP32 storage: the cast operands hold values of the FP8 grid.
        Precision::Fp8 => DType::F32,
    }
}

/// Refuses `precision` when backend `be` does not train in it, naming the precision and why.
pub fn check_supported<B: Backend>(be: &B, precision: Precision) -> Result<()> {
    if be.supports(precision) {
        return Ok(());
    }
    let why = if precision == Precision::Fp8 {
        "this build has no FP8 kernels for it; FP8 trains emulated on the CPU backend"
    } else {
        "it needs GPU tensor cores"
    };
    Err(ComputeError::bad_arg(
        "--precisions",
        precision,
        format!(
            "the {} backend does not train in {precision} ({why})",
            be.name()
        ),
    ))
}

impl<'b, B: Backend> Trainer<'b, B> {
    /// Uploads the data and allocates every buffer (all allocation happens here).
    pub fn new(
        be: &'b B,
        opts: TrainOptions,
        train: &Split,
        test: &Split,
        init: &[Vec<f32>; 6],
    ) -> Result<Self> {
        check_supported(be, opts.precision)?;
        if train.is_empty() || test.is_empty() {
            return Err(ComputeError::bad_arg(
                "dataset",
                "",
                "the training and test splits must not be empty",
            ));
        }
        if !(0.0..1.0).contains(&opts.dropout) {
            return Err(ComputeError::bad_arg(
                "--dropout",
                opts.dropout,
                "must be in [0, 1)",
            ));
        }
        // Every allocation below is counted in its memory category; whatever the backend
        // allocates later (kernel scratch) is workspace.
        let allocated = Self::allocate(be, opts, train, test, init);
        be.set_memory_category(MemoryCategory::Workspace);
        allocated
    }

    fn allocate(
        be: &'b B,
        opts: TrainOptions,
        train: &Split,
        test: &Split,
        init: &[Vec<f32>; 6],
    ) -> Result<Self> {
        let fp8 = opts.precision == Precision::Fp8;
        let act = if fp8 {
            be.fp8_storage()
        } else {
            activation_dtype(opts.precision)
        };
        let mixed = act != DType::F32;
        // FP16 storage needs FP16's loss scaler, FP8's casts or not.
        let loss_scaled = opts.precision.uses_loss_scaler() || (fp8 && act == DType::F16);
        let px = lab::IMAGE * lab::IMAGE;
        // FP8 casts the convolutions' weights into copies on the E4M3 grid.
        let params = [
            Param::new(be, &init[0], act, mixed || fp8)?,
            Param::new(be, &init[1], act, false)?,
            Param::new(be, &init[2], act, mixed || fp8)?,
            Param::new(be, &init[3], act, false)?,
            Param::new(be, &init[4], act, mixed)?,
            Param::new(be, &init[5], act, false)?,
        ];
        let batch = opts.batch.min(train.len().max(test.len()));
        be.set_memory_category(MemoryCategory::Dataset);
        let train_data = be.upload_data(&train.images, &train.labels, px)?;
        let test_data = be.upload_data(&test.images, &test.labels, px)?;
        let mut order = be.alloc(DType::U32, train.len())?;
        be.upload(
            &mut order,
            &(0..train.len()).map(|i| i as f32).collect::<Vec<_>>(),
        )?;
        let mut test_order = be.alloc(DType::U32, test.len())?;
        be.upload(
            &mut test_order,
            &(0..test.len()).map(|i| i as f32).collect::<Vec<_>>(),
        )?;
        be.set_memory_category(MemoryCategory::Activations);
        let ws = Workspace::new(be, batch, act)?;
        be.set_memory_category(MemoryCategory::Workspace);
        let fp8_state = if fp8 {
            Some(be.fp8_new(Fp8State::new(Fp8Recipe::default()))?)
        } else {
            None
        };
        let mut t = Trainer {
            graph: None,
            graph_tried: false,
            cursor: be.alloc(DType::U32, CURSOR_WORDS)?,
            eval_cursor: be.alloc(DType::U32, CURSOR_WORDS)?,
            be,
            opts,
            params,
            ws,
            scaler: be.scaler_new(ScalerState::new(loss_scaled))?,
            loss_scaled,
            act,
            sums: be.sums_new()?,
            train: train_data,
            test: test_data,
            order,
            test_order,
            n_train: train.len(),
            n_test: test.len(),
            step_counter: 0,
            stop: None,
            fp8: fp8_state,
            fp8_record: true,
            fp8_capture: None,
        };
        t.cast_fp8_weights_unrecorded()?;
        Ok(t)
    }

    /// Casts the weight copies onto their grids without counting them in a step (at the
    /// start: step 1's optimizer casts them again, counted).
    fn cast_fp8_weights_unrecorded(&mut self) -> Result<()> {
        let record = std::mem::replace(&mut self.fp8_record, false);
        let cast = self.cast_fp8_weights();
        self.fp8_record = record;
        cast
    }

    /// Sets FP8's recipe (before training: the scaling state starts afresh, and the weight
    /// copies are cast again). Nothing for other precisions. A recorded step graph refers to
    /// the old state: it is dropped (recorded again on the next full step).
    pub fn set_fp8_recipe(&mut self, recipe: Fp8Recipe) -> Result<()> {
        if self.fp8.is_some() {
            self.graph = None;
            self.graph_tried = false;
            self.fp8 = Some(self.be.fp8_new(Fp8State::new(recipe))?);
            self.upload_weight_copies()?;
            self.cast_fp8_weights_unrecorded()?;
        }
        Ok(())
    }

    /// Refreshes the weight copies from the master weights.
    fn upload_weight_copies(&mut self) -> Result<()> {
        for p in &mut self.params {
            if let Some(c) = p.copy.as_mut() {
                let v = self.be.download(&p.master)?;
                self.be.upload(c, &v)?;
            }
        }
        Ok(())
    }

    /// Casts `buf`'s first `len` values as FP8 tensor `t` (FP8 runs only).
    fn fp8_cast(&mut self, t: Fp8Tensor, which: Fp8Buf, len: usize) -> Result<()> {
        let Some(state) = self.fp8.as_mut() else {
            return Ok(());
        };
        let capture = self.fp8_record && self.fp8_capture.is_some();
        let buf = match which {
            Fp8Buf::X => &mut self.ws.x,
            Fp8Buf::A1 => &mut self.ws.a1,
            Fp8Buf::Da2 => &mut self.ws.da2,
            Fp8Buf::Da1 => &mut self.ws.da1,
            Fp8Buf::W1 => match self.params[0].copy.as_mut() {
                Some(c) => c,
                None => return Ok(()),
            },
            Fp8Buf::W2 => match self.params[2].copy.as_mut() {
                Some(c) => c,
                None => return Ok(()),
            },
        };
        if capture {
            let values = self.be.download(buf)?;
            let values = &values[..len.min(values.len())];
            // Gradients are stored times the loss scale (FP16 storage, FP16's scaler); the
            // histograms and FP8's scaling state are in unscaled units.
            let loss_scale = if t.is_gradient() {
                f64::from(self.be.scaler_read(&self.scaler)?.scale)
            } else {
                1.0
            };
            if let Some(c) = self.fp8_capture.as_mut() {
                c.push(Captured {
                    tensor: t,
                    unscaled: Log2Histogram::of(values, loss_scale),
                });
            }
        }
        // The gradients' casts divide the loss scale out of their amax and scale (on the
        // device, where the scaler lives): a loss-scale change moves no FP8 scale.
        let loss_scaler = t.is_gradient().then_some(&self.scaler);
        self.be
            .fp8_cast(buf, len, t, state, self.fp8_record, loss_scaler)
    }

    /// Casts the convolutions' weight copies onto the E4M3 grid (after every optimizer step,
    /// so that the next forward pass multiplies FP8 weights).
    fn cast_fp8_weights(&mut self) -> Result<()> {
        self.fp8_cast(Fp8Tensor::Conv1Weight, Fp8Buf::W1, lab::CONV1.weight_len())?;
        self.fp8_cast(Fp8Tensor::Conv2Weight, Fp8Buf::W2, lab::CONV2.weight_len())
    }

    /// FP8's state as the backend holds it (FP8 runs only).
    pub fn fp8_state(&self) -> Result<Option<Fp8State>> {
        self.fp8.as_ref().map(|s| self.be.fp8_read(s)).transpose()
    }

    /// Steps per epoch: every training image is seen once, the last batch holding the
    /// remainder (PyTorch's `DataLoader` default, `drop_last=False`).
    pub fn steps_per_epoch(&self) -> usize {
        self.n_train.div_ceil(self.opts.batch)
    }

    /// Images of step `s` (0-based) of an epoch.
    fn step_len(&self, s: usize) -> usize {
        self.opts.batch.min(self.n_train - s * self.opts.batch)
    }

    /// The convolutions of the forward pass: `n` images already in `ws.x` to the pooled
    /// features `ws.a2`.
    fn features(&mut self, n: usize) -> Result<()> {
        let be = self.be;
        self.fp8_cast(
            Fp8Tensor::Conv1Input,
            Fp8Buf::X,
            n * lab::IMAGE * lab::IMAGE,
        )?;
        let [w1, b1, _, _, _, _] = &self.params;
        let ws = &mut self.ws;
        be.conv_block_fwd(
            &ws.x,
            w1.used(),
            &b1.master,
            &mut ws.a1,
            &mut ws.m1,
            n,
            lab::CONV1,
            self.opts.activation,
        )?;
        stopped(self.stop)?;
        self.fp8_cast(Fp8Tensor::Conv2Input, Fp8Buf::A1, n * A1)?;
        let [_, _, w2, b2, _, _] = &self.params;
        let ws = &mut self.ws;
        be.conv_block_fwd(
            &ws.a1,
            w2.used(),
            &b2.master,
            &mut ws.a2,
            &mut ws.m2,
            n,
            lab::CONV2,
            self.opts.activation,
        )
    }

    /// Inference forward pass of `n` images already in `ws.x` (no dropout) into `ws.logits`.
    fn forward(&mut self, n: usize) -> Result<()> {
        self.features(n)?;
        let [_, _, _, _, w3, b3] = &self.params;
        let ws = &mut self.ws;
        self.be.dense_fwd(
            &ws.a2,
            w3.used(),
            &b3.master,
            &mut ws.logits,
            n,
            lab::FEATURES,
            lab::CLASSES,
        )
    }

    /// Training step `index` of the epoch: images `order[index * batch..][..n]`.
    pub fn step(&mut self, index: usize, n: usize) -> Result<()> {
        self.seek(index)?;
        self.step_launches(n)
    }

    /// Points the step cursor at step `index` of the epoch (and the backend at this run's
    /// precision), for a step or pass launched on its own.
    fn seek(&mut self, index: usize) -> Result<()> {
        self.be.set_precision(self.opts.precision);
        self.be
            .cursor_set(&mut self.cursor, as_u32(index)?, self.step_counter)
    }

    /// The launches of one step from the cursor's position (which the step advances).
    fn step_launches(&mut self, n: usize) -> Result<()> {
        let _step = trace::range("step");
        {
            let _fb = trace::range("forward+backward");
            self.forward_backward_launches(n)?;
        }
        let _opt = trace::range("optimizer");
        self.apply()
    }

    /// A full-batch step through the recorded graph: recorded on the first call after the
    /// first step (which allocated every lazily-sized scratch buffer), replayed afterwards.
    /// `Ok(false)` where the backend records no graphs: run [`Trainer::step_launches`].
    fn step_graph(&mut self) -> Result<bool> {
        if self.graph.is_none() {
            if self.graph_tried || !self.be.capture_begin()? {
                self.graph_tried = true;
                return Ok(false);
            }
            self.graph_tried = true;
            let counter = self.step_counter;
            let recorded = self.step_launches(self.opts.batch);
            // Always end the capture, even after an error, so the stream is usable again.
            let graph = self.be.capture_end();
            recorded?;
            self.graph = Some(graph?);
            // Recording ran nothing: the step is still to do.
            self.step_counter = counter;
        }
        let Some(graph) = &self.graph else {
            return Ok(false);
        };
        let _step = trace::range("step (graph)");
        self.be.replay(graph)?;
        self.step_counter += 1;
        Ok(true)
    }

    /// Forward and backward pass on step `index`'s images (see [`Trainer::step`]): fills every
    /// parameter's gradient (scaled by the loss scale) and adds the loss to the sums.
    pub fn forward_backward(&mut self, index: usize, n: usize) -> Result<()> {
        self.seek(index)?;
        self.forward_backward_launches(n)
    }

    fn forward_backward_launches(&mut self, n: usize) -> Result<()> {
        let be = self.be;
        crate::probe::set_phase("forward");
        be.gather(
            &self.train,
            &self.order,
            &self.cursor,
            self.opts.batch,
            n,
            MEAN,
            STD,
            &mut self.ws.x,
            &mut self.ws.labels,
        )?;
        stopped(self.stop)?;
        self.features(n)?;
        stopped(self.stop)?;
        let ws = &mut self.ws;
        let [_, _, _, _, w3, b3] = &mut self.params;
        let w3u = w3.copy.as_ref().unwrap_or(&w3.master);
        // The head's forward, loss and backward are one call (one fused launch and the weight
        // gradient on a GPU); the step anatomy counts its weight gradient as backward.
        let dropout = (self.opts.dropout > 0.0).then_some(HeadDropout {
            out: &mut ws.drop,
            mask: &mut ws.drop_mask,
            p: self.opts.dropout,
            seed: self.opts.seed,
        });
        be.head_train(HeadStep {
            feat: &ws.a2,
            w: w3u,
            b: &b3.master,
            dropout,
            cursor: &self.cursor,
            labels: &ws.labels,
            logits: &mut ws.logits,
            dlogits: &mut ws.dlogits,
            dfeat: &mut ws.dfeat,
            dx: &mut ws.da2,
            dw: &mut w3.grad,
            db: &mut b3.grad,
            n,
            fin: lab::FEATURES,
            fout: lab::CLASSES,
            scaler: &self.scaler,
            sums: &mut self.sums,
        })?;
        stopped(self.stop)?;
        crate::probe::set_phase("backward");
        self.fp8_cast(Fp8Tensor::Conv2GradOutput, Fp8Buf::Da2, n * lab::FEATURES)?;
        let ws = &mut self.ws;
        let [_, _, w2, b2, _, _] = &mut self.params;
        let w2u = w2.copy.as_ref().unwrap_or(&w2.master);
        let da2 = &ws.da2;
        let act = self.opts.activation;
        be.conv_block_bwd(
            &ws.a1,
            w2u,
            &b2.master,
            &ws.m2,
            da2,
            &mut w2.grad,
            &mut b2.grad,
            Some(&mut ws.da1),
            n,
            lab::CONV2,
            act,
        )?;
        stopped(self.stop)?;
        self.fp8_cast(Fp8Tensor::Conv1GradOutput, Fp8Buf::Da1, n * A1)?;
        let ws = &mut self.ws;
        let [w1, b1, _, _, _, _] = &mut self.params;
        let w1u = w1.copy.as_ref().unwrap_or(&w1.master);
        be.conv_block_bwd(
            &ws.x,
            w1u,
            &b1.master,
            &ws.m1,
            &ws.da1,
            &mut w1.grad,
            &mut b1.grad,
            None,
            n,
            lab::CONV1,
            act,
        )?;
        Ok(())
    }

    /// The optimizer half of a step: inf/NaN check (mixed precision), Adam on every
    /// parameter unless the check failed, loss-scale update.
    pub fn apply(&mut self) -> Result<()> {
        let be = self.be;
        crate::probe::set_phase("optimizer");
        if self.loss_scaled {
            let grads: Vec<&B::Buf> = self.params.iter().map(|p| &p.grad).collect();
            be.check_finite(&grads, &mut self.scaler)?;
        }
        stopped(self.stop)?;
        let mut tensors: Vec<AdamTensor<'_, B::Buf>> = self
            .params
            .iter_mut()
            .map(|p| AdamTensor {
                param: &mut p.master,
                grad: &p.grad,
                m: &mut p.m,
                v: &mut p.v,
                copy: p.copy.as_mut(),
            })
            .collect();
        be.adam_all(&mut tensors, self.opts.adam, &self.scaler)?;
        if self.fp8.is_some() {
            if self.fp8_capture.is_some() {
                // A sampled step keeps the weights' values before their casts too.
                self.cast_fp8_weights()?;
                if let Some(state) = self.fp8.as_mut() {
                    be.fp8_end_step(state)?;
                }
            } else if let (Some(state), [w1, _, w2, _, _, _]) =
                (self.fp8.as_mut(), &mut self.params)
            {
                let (Some(c1), Some(c2)) = (w1.copy.as_mut(), w2.copy.as_mut()) else {
                    return Err(ComputeError::Backend {
                        backend: be.name().into(),
                        reason: "an FP8 trainer lost its convolutions' weight copies".into(),
                    });
                };
                be.fp8_weights_end_step(
                    c1,
                    lab::CONV1.weight_len(),
                    c2,
                    lab::CONV2.weight_len(),
                    state,
                )?;
            }
        }
        be.step_finish(&mut self.scaler, &mut self.cursor)?;
        self.step_counter += 1;
        Ok(())
    }

    /// Shuffles the training order for `epoch` (deterministic from the seed).
    pub fn shuffle(&mut self, epoch: usize) -> Result<()> {
        let mut idx: Vec<u32> = (0..self.n_train as u32).collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
            self.opts.seed ^ 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(epoch as u64 + 1),
        );
        idx.shuffle(&mut rng);
        let as_f32: Vec<f32> = idx.iter().map(|&i| i as f32).collect();
        self.be.upload(&mut self.order, &as_f32)
    }

    /// Walks the whole test split in workspace-sized batches (no dropout): gathers each batch,
    /// runs the forward pass, then hands the batch size to `per_batch` (logits in `ws.logits`).
    fn each_test_batch(
        &mut self,
        mut per_batch: impl FnMut(&mut Self, usize) -> Result<()>,
    ) -> Result<()> {
        let be = self.be;
        be.set_precision(self.opts.precision);
        // Evaluation casts as training does but records nothing.
        let record = std::mem::replace(&mut self.fp8_record, false);
        let walked = self.each_test_batch_inner(&mut per_batch);
        self.fp8_record = record;
        walked
    }

    fn each_test_batch_inner(
        &mut self,
        per_batch: &mut impl FnMut(&mut Self, usize) -> Result<()>,
    ) -> Result<()> {
        let be = self.be;
        let cap = self.ws_capacity().min(self.n_test).max(1);
        be.cursor_set(&mut self.eval_cursor, 0, 0)?;
        let mut off = 0;
        while off < self.n_test {
            let n = cap.min(self.n_test - off);
            be.gather(
                &self.test,
                &self.test_order,
                &self.eval_cursor,
                cap,
                n,
                MEAN,
                STD,
                &mut self.ws.x,
                &mut self.ws.labels,
            )?;
            self.forward(n)?;
            per_batch(self, n)?;
            be.cursor_advance(&mut self.eval_cursor)?;
            off += n;
        }
        Ok(())
    }

    /// The forward pass (no dropout) of the whole test split as the backend's kernels compute
    /// it: the normalised input `[n, 28, 28]` as gathered, pool1 `[n, 32, 13, 13]`, pool2
    /// `[n, 1600]` and the logits `[n, 10]`, in test order.
    pub fn forward_layers(&mut self) -> Result<[Vec<f32>; 4]> {
        let be = self.be;
        let mut out: [Vec<f32>; 4] = Default::default();
        self.each_test_batch(|t, n| {
            for (o, (buf, per_image)) in out.iter_mut().zip([
                (&t.ws.x, lab::IMAGE * lab::IMAGE),
                (&t.ws.a1, A1),
                (&t.ws.a2, lab::FEATURES),
                (&t.ws.logits, lab::CLASSES),
            ]) {
                let all = be.download(buf)?;
                o.extend_from_slice(&all[..n * per_image]);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Test loss and accuracy over the whole test split (no dropout).
    pub fn evaluate(&mut self) -> Result<LossSums> {
        let be = self.be;
        be.sums_take(&mut self.sums)?;
        self.each_test_batch(|t, n| {
            be.softmax_xent(
                &t.ws.logits,
                &t.ws.labels,
                None,
                n,
                lab::CLASSES,
                &t.scaler,
                &mut t.sums,
            )
        })?;
        be.sums_take(&mut self.sums)
    }

    /// The logits `[n_test, 10]` of the whole test split (no dropout), in test order: what an
    /// inference path of the same weights is held against.
    pub fn test_logits(&mut self) -> Result<Vec<f32>> {
        let be = self.be;
        let mut out = Vec::with_capacity(self.n_test * lab::CLASSES);
        self.each_test_batch(|t, n| {
            let all = be.download(&t.ws.logits)?;
            out.extend_from_slice(&all[..n * lab::CLASSES]);
            Ok(())
        })?;
        Ok(out)
    }

    /// Images the workspace holds (the evaluation batch).
    fn ws_capacity(&self) -> usize {
        self.opts.batch.min(self.n_train.max(self.n_test))
    }

    /// Trains all epochs, reporting progress through `on_event` at most every 50 ms, and
    /// stopping within one step when `cancel` is set.
    pub fn run(
        &mut self,
        on_event: &mut dyn FnMut(DuelEvent),
        cancel: &AtomicBool,
    ) -> Result<RunReport> {
        let be = self.be;
        let precision = self.opts.precision;
        let steps = self.steps_per_epoch();
        let batch = self.opts.batch;
        on_event(DuelEvent::RunStarted {
            precision,
            steps_per_epoch: steps,
            epochs: self.opts.epochs,
        });
        be.set_precision(precision);
        let recorder = be.start_telemetry();
        let mut epochs = Vec::new();
        let mut last_emit = Instant::now();
        let mut step_ms = Vec::new();
        let mut grad_samples = Vec::new();
        let mut scale_history = Vec::new();
        let mut last_state = be.scaler_read(&self.scaler)?;
        let mut fp8_points: Vec<Vec<Fp8ScalePoint>> = vec![Vec::new(); Fp8Tensor::ALL.len()];
        // The loss curve's steps: the same for every contestant (they share steps per epoch),
        // and on a GPU only where the loss is read anyway (each read waits for the device).
        let every = if be.host_reads_are_cheap() { 1 } else { 50 };
        let curve_at = crate::types::curve_steps_read_every(steps, self.opts.epochs, every);
        let mut curve = Vec::with_capacity(curve_at.len() * self.opts.epochs);
        for epoch in 1..=self.opts.epochs {
            let _epoch = trace::range(&format!("epoch {epoch} ({precision})"));
            self.shuffle(epoch)?;
            be.cursor_set(&mut self.cursor, 0, self.step_counter)?;
            be.synchronize()?;
            let start_skipped = be.scaler_read(&self.scaler)?.skipped;
            // Device time from CUDA events where there are any, host time otherwise.
            let m0 = be.mark()?;
            let t0 = Instant::now();
            let (mut loss_sum, mut loss_count) = (0.0f64, 0u64);
            // On a GPU, reading the loss back drains the queue: read it every `every` steps only.
            // Epoch 1 (left out of the median when there are more) times every step alone.
            let instrument = epoch == 1 && self.opts.epochs >= 2;
            // The next curve step, and the loss summed since the previous curve point.
            let mut next_point = 0usize;
            let curve_epoch =
                bounds::sampled_epoch(epoch, self.opts.epochs, bounds::CURVE_POINTS_MAX);
            let (mut window_sum, mut window_count) = (0.0f64, 0u64);
            for s in 0..steps {
                if cancel.load(Ordering::Relaxed) {
                    return Err(ComputeError::Cancelled);
                }
                let ts = Instant::now();
                let ms0 = if instrument { be.mark()? } else { None };
                let n = self.step_len(s);
                // FP8: a sampled step of the instrumented epoch keeps each tensor's values
                // before its cast, launch by launch; reading them back costs milliseconds on a
                // GPU, which the timed epochs must not carry (their samples keep scales and
                // counts, not histograms). A one-epoch run keeps its last step's (its only
                // epoch is both, so that one step's reading is in its time). Such a step is
                // left out of the step times.
                let sampled = (instrument && ((s + 1).is_power_of_two() || s + 1 == steps))
                    || (self.opts.epochs == 1 && s + 1 == steps);
                self.fp8_capture = (self.fp8.is_some() && sampled).then(Vec::new);
                let captured = self.fp8_capture.is_some();
                // Step 0 runs launch by launch (and sizes every scratch buffer); full batches
                // after it replay the recorded step where the backend records graphs.
                if s == 0 || n != batch || self.fp8_capture.is_some() || !self.step_graph()? {
                    self.step_launches(n)?;
                }
                if instrument {
                    let ms1 = be.mark()?;
                    be.synchronize()?;
                    if !captured {
                        step_ms.push(match (&ms0, &ms1) {
                            (Some(a), Some(b)) => be.elapsed_ms(a, b)?,
                            _ => ts.elapsed().as_secs_f64() * 1e3,
                        });
                    }
                    // The step is done and timed: record how the scale moved, and the
                    // gradients of steps 1, 2, 4, 8, … (outside the timing).
                    let state = be.scaler_read(&self.scaler)?;
                    let global = (epoch - 1) * steps + s + 1;
                    if global == 1
                        || state.scale != last_state.scale
                        || state.skipped != last_state.skipped
                    {
                        scale_history.push(ScalePoint {
                            step: global,
                            loss_scale: state.scale as f64,
                            skipped: state.skipped != last_state.skipped,
                        });
                    }
                    last_state = state;
                    // FP8: every step of the first epoch where a tensor's scale moved.
                    if let Some(fp8) = self.fp8_state()? {
                        push_fp8_points(&mut fp8_points, &fp8, global, global == 1);
                    }
                    if (s + 1).is_power_of_two() && s + 1 != steps {
                        grad_samples.push(self.grad_sample(epoch, s + 1, n)?);
                        self.fp8_capture = None;
                    }
                }
                // A run longer than CURVE_POINTS_MAX epochs keeps points on that many epochs,
                // evenly spread (the last always): its curve does not grow with its epochs.
                let at_point = curve_epoch && curve_at.get(next_point) == Some(&(s + 1));
                if (s + 1) % every != 0 && s + 1 != steps && !at_point {
                    continue;
                }
                let sums = be.sums_take(&mut self.sums)?;
                let mean = sums.loss / sums.count.max(1) as f64;
                if !self.loss_scaled && (mean.is_nan() || mean > DIVERGED_LOSS) {
                    return Err(ComputeError::Diverged {
                        precision: precision.to_string(),
                        epoch,
                        step: s + 1,
                        loss: format!("{mean:.4e} (mean over the last {} image(s))", sums.count),
                    });
                }
                if sums.loss.is_finite() {
                    loss_sum += sums.loss;
                    loss_count += sums.count;
                    window_sum += sums.loss;
                    window_count += sums.count;
                }
                let emit = last_emit.elapsed().as_millis() >= 50 || s + 1 == steps;
                let state = if at_point || emit {
                    Some(be.scaler_read(&self.scaler)?)
                } else {
                    None
                };
                if let (true, Some(state)) = (at_point, state) {
                    next_point += 1;
                    if let Some(fp8) = self.fp8_state()? {
                        push_fp8_points(&mut fp8_points, &fp8, (epoch - 1) * steps + s + 1, true);
                    }
                    let point = CurvePoint {
                        epoch,
                        step: s + 1,
                        global_step: (epoch - 1) * steps + s + 1,
                        x: (epoch - 1) as f64 + (s + 1) as f64 / steps as f64,
                        loss: if window_count > 0 {
                            window_sum / window_count as f64
                        } else {
                            f64::NAN
                        },
                        loss_scale: state.scale as f64,
                        skipped: state.skipped as usize,
                    };
                    (window_sum, window_count) = (0.0, 0);
                    on_event(DuelEvent::Curve {
                        precision,
                        point: point.clone(),
                    });
                    curve.push(point);
                }
                if let (true, Some(state)) = (emit, state) {
                    last_emit = Instant::now();
                    on_event(DuelEvent::Step {
                        precision,
                        epoch,
                        step: s + 1,
                        steps,
                        loss: sums.last_loss,
                        loss_scale: state.scale as f64,
                        skipped: state.skipped as usize,
                    });
                }
            }
            let m1 = be.mark()?;
            be.synchronize()?;
            let ms = match (&m0, &m1) {
                (Some(a), Some(b)) => be.elapsed_ms(a, b)?,
                _ => t0.elapsed().as_secs_f64() * 1e3,
            };
            // The epoch's last step, sampled after the timing (evaluation leaves the
            // gradient buffers alone), on at most GRAD_SAMPLE_EPOCHS epochs evenly spread (the
            // last always): a run's size does not grow with its epochs.
            if bounds::sampled_epoch(epoch, self.opts.epochs, bounds::GRAD_SAMPLE_EPOCHS) {
                grad_samples.push(self.grad_sample(epoch, steps, self.step_len(steps - 1))?);
            }
            self.fp8_capture = None;
            let eval = {
                let _eval = trace::range("evaluate");
                self.evaluate()?
            };
            let state = be.scaler_read(&self.scaler)?;
            scale_history.push(ScalePoint {
                step: epoch * steps,
                loss_scale: state.scale as f64,
                skipped: false,
            });
            last_state = state;
            let report = EpochReport {
                epoch,
                ms,
                train_loss: if loss_count > 0 {
                    loss_sum / loss_count as f64
                } else {
                    f64::NAN
                },
                test_accuracy: eval.correct as f64 / eval.count.max(1) as f64,
                test_loss: eval.loss / eval.count.max(1) as f64,
                skipped_steps: (state.skipped - start_skipped) as usize,
                loss_scale: state.scale as f64,
            };
            on_event(DuelEvent::Epoch {
                precision,
                report: report.clone(),
            });
            epochs.push(report);
        }
        let state = be.scaler_read(&self.scaler)?;
        let median = median_epoch_ms(&epochs);
        let report = RunReport {
            precision,
            epoch_ms_median: median,
            samples_per_s: self.n_train as f64 / (median / 1e3),
            peak_memory_bytes: be.peak_bytes(),
            test_accuracy: epochs.last().map(|e| e.test_accuracy).unwrap_or(0.0),
            skipped_steps: state.skipped as usize,
            final_loss_scale: state.scale as f64,
            steps: state.step as usize,
            epochs,
            telemetry: recorder.map(|r| r.stop()).map(|mut t| {
                t.samples = bounds::thin_evenly(t.samples, bounds::TELEMETRY_SAMPLES_MAX);
                t
            }),
            fp8: self.fp8_report(
                fp8_points
                    .into_iter()
                    .map(|p| bounds::thin_evenly(p, bounds::FP8_POINTS_MAX))
                    .collect(),
            )?,
            step_times: crate::types::StepTimes::from_samples(1, &step_ms),
            model: Some(self.model()?),
            grad_samples,
            scale_history: bounds::thin_evenly(scale_history, bounds::SCALE_POINTS_MAX),
            memory: be.peak_split(),
            curve,
        };
        on_event(DuelEvent::RunFinished {
            report: Box::new(report.clone()),
        });
        Ok(report)
    }

    /// One full-batch training step taken apart (the step anatomy): `warmup` steps launched one
    /// by one (at least one: it sizes every scratch buffer), then, where the backend records
    /// graphs, `warmup` and `steps` replays of the recorded step, each timed between two marks
    /// (median); then `steps` steps launched one by one with the [`anatomy`] recorder on, each
    /// launch timed on its own (CUPTI's kernel records where CUPTI can be used, else CUDA events
    /// around each kernel; the host clock around each CPU primitive). Per launch index: the median start (from the step's first launch) and
    /// duration; the median sum of the durations and the median first-start-to-last-end span.
    ///
    /// The steps walk the training split in order, batch after batch (wrapping around), and
    /// train the weights as any step does.
    ///
    /// Stops with [`ComputeError::Cancelled`] once `cancel` is set, checked before each step
    /// and between a step's primitives (one step on a large CPU batch takes seconds).
    pub fn anatomy(
        &mut self,
        steps: usize,
        warmup: usize,
        cancel: &'b AtomicBool,
    ) -> Result<ContestantAnatomy> {
        self.stop = Some(cancel);
        let timed = self.anatomy_steps(steps, warmup);
        self.stop = None;
        timed
    }

    /// [`Trainer::anatomy`]'s steps, its cancel flag set.
    fn anatomy_steps(&mut self, steps: usize, warmup: usize) -> Result<ContestantAnatomy> {
        let be = self.be;
        let batch = self.opts.batch;
        if steps == 0 {
            return Err(ComputeError::bad_arg(
                "steps",
                steps,
                "time at least one step",
            ));
        }
        let full = self.n_train / batch.max(1);
        if full == 0 {
            return Err(ComputeError::bad_arg(
                "batch",
                batch,
                format!(
                    "the training split holds {} image(s), not one full batch",
                    self.n_train
                ),
            ));
        }
        let mut next = 0usize;
        let mut index = || {
            let i = next % full;
            next += 1;
            i
        };
        for _ in 0..warmup.max(1) {
            stopped(self.stop)?;
            self.step(index(), batch)?;
        }
        let mut graph_ms = Vec::new();
        stopped(self.stop)?;
        self.seek(index())?;
        // Records the step on the first call (and replays it once).
        if self.step_graph()? {
            for _ in 0..warmup {
                stopped(self.stop)?;
                self.seek(index())?;
                self.step_graph()?;
            }
            let mut marks = Vec::with_capacity(steps);
            for _ in 0..steps {
                stopped(self.stop)?;
                self.seek(index())?;
                let m0 = be.mark()?;
                self.step_graph()?;
                marks.push((m0, be.mark()?));
            }
            be.synchronize()?;
            for (m0, m1) in &marks {
                if let (Some(a), Some(b)) = (m0, m1) {
                    graph_ms.push(be.elapsed_ms(a, b)?);
                }
            }
        }
        let mut recorded = Vec::with_capacity(steps);
        for _ in 0..steps {
            stopped(self.stop)?;
            self.seek(index())?;
            // Each step starts on an idle device, as its own.
            be.synchronize()?;
            let session = if be.name() == "cuda" {
                anatomy::start_on_gpu()
            } else {
                anatomy::start()
            };
            let launched = self.step_launches(batch);
            let recording = session.finish();
            launched?;
            recorded.push(recording.resolve()?);
        }
        ContestantAnatomy::from_steps(self.opts.precision, &recorded, median(graph_ms)).ok_or_else(
            || ComputeError::Backend {
                backend: be.name().into(),
                reason: "the step anatomy recorded no launch: this backend's primitives are not \
                         instrumented"
                    .into(),
            },
        )
    }

    /// Replaces the parameters (`[w1, b1, w2, b2, w3, b3]`), refreshing the low-precision copies.
    pub fn set_params(&mut self, values: &[Vec<f32>; 6]) -> Result<()> {
        for (p, v) in self.params.iter_mut().zip(values) {
            self.be.upload(&mut p.master, v)?;
            if let Some(c) = p.copy.as_mut() {
                self.be.upload(c, v)?;
            }
        }
        let record = std::mem::replace(&mut self.fp8_record, false);
        let cast = self.cast_fp8_weights();
        self.fp8_record = record;
        cast
    }

    /// The gradients of the last [`Trainer::forward_backward`], downloaded and unscaled.
    pub fn grads(&self) -> Result<Vec<Vec<f32>>> {
        let scale = self.be.scaler_read(&self.scaler)?.scale;
        self.params
            .iter()
            .map(|p| {
                Ok(self
                    .be
                    .download(&p.grad)?
                    .into_iter()
                    .map(|g| g / scale)
                    .collect())
            })
            .collect()
    }

    /// Mean loss of the latest training step (reads the backend's sums; synchronises a GPU).
    pub fn last_loss(&mut self) -> Result<f64> {
        Ok(self.be.sums_take(&mut self.sums)?.last_loss)
    }

    /// The trained model: the master parameters with the precision and activation.
    pub fn model(&self) -> Result<ModelWeights> {
        let params: [Vec<f32>; 6] =
            self.params()?
                .try_into()
                .map_err(|_| ComputeError::Backend {
                    backend: self.be.name().into(),
                    reason: "the trainer holds other than six parameter tensors".into(),
                })?;
        ModelWeights::new(self.opts.precision, self.opts.activation, params)
            .map_err(|e| ComputeError::BadRequest(e.to_string()))
    }

    /// Histograms of the latest step's gradients: each layer's activation gradient (the
    /// gradient of the loss with respect to its output, `n` images) and weight gradient,
    /// unscaled by the loss scale the step computed them with. A step whose gradients hold
    /// an inf or NaN was skipped by the scaler (which then halved the scale).
    pub fn grad_sample(&self, epoch: usize, step: usize, n: usize) -> Result<GradSample> {
        let be = self.be;
        let state = be.scaler_read(&self.scaler)?;
        let grads: Vec<Vec<f32>> = self
            .params
            .iter()
            .map(|p| be.download(&p.grad))
            .collect::<Result<_>>()?;
        let skipped = grads.iter().flatten().any(|g| !g.is_finite());
        let scale = scale_before_update(&state, skipped) as f64;
        let ws = &self.ws;
        let conv2_out = if self.opts.dropout > 0.0 {
            &ws.da2
        } else {
            &ws.dfeat
        };
        let outputs = [
            ("conv1", &ws.da1, A1, 0),
            ("conv2", conv2_out, lab::FEATURES, 2),
            ("dense", &ws.dlogits, lab::CLASSES, 4),
        ];
        let mut layers = Vec::new();
        // FP8 cast the activation gradients in place: their histograms are the values before
        // the cast, as the step kept them.
        let captured = self.fp8_captured();
        let before_cast = |t: Fp8Tensor| captured.iter().rev().find(|c| c.tensor == t);
        for (layer, buf, per_image, w) in outputs {
            let kept = match layer {
                "conv1" => before_cast(Fp8Tensor::Conv1GradOutput),
                "conv2" => before_cast(Fp8Tensor::Conv2GradOutput),
                _ => None,
            }
            .map(|c| c.unscaled.clone());
            let activations = match kept {
                Some(h) => h,
                None => {
                    let values = be.download(buf)?;
                    let upto = (n * per_image).min(values.len());
                    Log2Histogram::of(&values[..upto], scale)
                }
            };
            layers.push(LayerGrads {
                layer: layer.into(),
                activations,
                weights: Log2Histogram::of(&grads[w], scale),
            });
        }
        Ok(GradSample {
            epoch,
            step,
            loss_scale: scale,
            skipped,
            layers,
            fp8: self
                .fp8_state()?
                .map(|s| {
                    s.tensors
                        .iter()
                        .map(|t| Fp8TensorSample {
                            histogram: before_cast(t.tensor).map(|c| c.unscaled.clone()),
                            ..Fp8TensorSample::of(t)
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// The FP8 side of the run's report: the recipe, the engine, and each tensor's scale
    /// points and counts (FP8 runs only).
    fn fp8_report(&self, points: Vec<Vec<Fp8ScalePoint>>) -> Result<Option<Fp8Report>> {
        let Some(state) = self.fp8_state()? else {
            return Ok(None);
        };
        let (engine, emulated) = self.be.fp8_engine().unwrap_or_else(|| {
            (
                format!("the {} backend's FP8 (not described)", self.be.name()),
                true,
            )
        });
        let batch = self.ws_capacity() as u64;
        let mut tensors = Vec::new();
        let mut elements = 0u64;
        for (s, points) in state.tensors.iter().zip(points) {
            let (per_image, fixed) = fp8_elements(s.tensor);
            elements += batch * per_image as u64 + fixed as u64;
            tensors.push(Fp8TensorReport {
                tensor: s.tensor,
                format: s.tensor.format(),
                points,
                total: s.total,
                elements_per_image: per_image,
                elements_fixed: fixed,
            });
        }
        Ok(Some(Fp8Report {
            recipe: state.recipe,
            engine,
            emulated,
            device: self.be.device(),
            tensors,
            steps: state.steps,
            fp8_bytes: elements,
            stored_bytes: elements * self.act.size() as u64,
        }))
    }

    /// The histograms an FP8 step kept of its tensors before their casts (empty when the step
    /// kept none).
    fn fp8_captured(&self) -> Vec<Captured> {
        self.fp8_capture.clone().unwrap_or_default()
    }

    /// The master parameters, downloaded (`[w1, b1, w2, b2, w3, b3]`).
    pub fn params(&self) -> Result<Vec<Vec<f32>>> {
        self.params
            .iter()
            .map(|p| self.be.download(&p.master))
            .collect()
    }
}

/// The loss scale a step computed its gradients with, from the scaler's state after the step:
/// a skipped step halved it, the step that completed a growth interval doubled it. (At the
/// scaler's floor a skipped step leaves the scale as it was; this then says twice the floor.)
fn scale_before_update(s: &ScalerState, skipped: bool) -> f32 {
    if !s.enabled {
        s.scale
    } else if skipped {
        s.scale * 2.0
    } else if s.growth_tracker == 0 && s.step > 0 {
        s.scale * 0.5
    } else {
        s.scale
    }
}

fn as_u32(index: usize) -> Result<u32> {
    u32::try_from(index)
        .map_err(|_| ComputeError::bad_arg("step", index, "more steps than 2^32 in an epoch"))
}

/// Median of epochs 2.. (epoch 1 carries warm-up), or of all when there is one
/// ([`crate::types::median_after_warmup`]).
pub fn median_epoch_ms(epochs: &[EpochReport]) -> f64 {
    let ms: Vec<f64> = epochs.iter().map(|e| e.ms).collect();
    crate::types::median_after_warmup(&ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::CpuBackend;
    use crate::fp8::Fp8Format;

    #[test]
    fn scaler_grows_after_2000_clean_steps_and_backs_off_on_inf() {
        let mut s = ScalerState::new(true);
        assert_eq!(s.scale, 65536.0);
        for _ in 0..1999 {
            s.update();
        }
        assert_eq!(s.scale, 65536.0);
        s.update();
        assert_eq!(s.scale, 131072.0);
        assert_eq!(s.growth_tracker, 0);
        s.found_inf = true;
        s.update();
        assert_eq!(
            (s.scale, s.skipped, s.step, s.found_inf),
            (65536.0, 1, 2000, false)
        );
        // A back-off resets the growth count.
        for _ in 0..1999 {
            s.update();
        }
        s.found_inf = true;
        s.update();
        for _ in 0..1999 {
            s.update();
        }
        assert_eq!(s.scale, 32768.0);
        // Backing off stops at the floor instead of reaching 0 (grad / 0 would poison the weights).
        let mut low = ScalerState::new(true);
        for _ in 0..200 {
            low.found_inf = true;
            low.update();
        }
        assert_eq!(low.scale, crate::backend::SCALER_MIN);
        assert_eq!(low.skipped, 200);
        let mut off = ScalerState::new(false);
        off.found_inf = true;
        off.update();
        assert_eq!((off.scale, off.skipped), (1.0, 1));
    }

    #[test]
    fn an_overflowing_fp16_step_is_skipped_and_the_scale_halves() {
        let be = CpuBackend::new(Some(1)).unwrap();
        let d = crate::data::mnist_sample().unwrap();
        let mut train = d.train.clone();
        train.truncate(64, 784);
        let mut test = d.test.clone();
        test.truncate(16, 784);
        let opts = TrainOptions {
            precision: Precision::Fp16,
            epochs: 1,
            batch: 32,
            adam: AdamParams::default(),
            seed: 1,
            dropout: 0.5,
            activation: Activation::Relu,
        };
        let init = init_params(1);
        let mut t = Trainer::new(&be, opts, &train, &test, &init).unwrap();
        // A scale of 2^40 overflows FP16 gradients: the step must be skipped, the weights kept.
        let mut st = be.scaler_read(&t.scaler).unwrap();
        st.scale = (1u64 << 40) as f32;
        t.scaler = be.scaler_new(st).unwrap();
        let before = t.params().unwrap();
        t.step(0, 32).unwrap();
        let after_state = be.scaler_read(&t.scaler).unwrap();
        assert_eq!(after_state.skipped, 1);
        assert_eq!(after_state.scale, (1u64 << 39) as f32);
        assert_eq!(
            t.params().unwrap(),
            before,
            "a skipped step must not touch the weights"
        );
        // At the normal scale the step applies.
        let mut st = after_state;
        st.scale = 65536.0;
        t.scaler = be.scaler_new(st).unwrap();
        t.step(0, 32).unwrap();
        assert_eq!(be.scaler_read(&t.scaler).unwrap().step, 1);
        assert_ne!(t.params().unwrap(), before);
    }

    fn smoke(precision: Precision) -> RunReport {
        smoke_epochs(precision, 1)
    }

    fn smoke_epochs(precision: Precision, epochs: usize) -> RunReport {
        let be = CpuBackend::new(None).unwrap();
        let d = crate::data::mnist_sample().unwrap();
        let mut train = d.train.clone();
        train.truncate(2048, 784);
        let mut test = d.test.clone();
        test.truncate(500, 784);
        let opts = TrainOptions {
            precision,
            epochs,
            batch: 64,
            adam: AdamParams::default(),
            seed: 7,
            dropout: 0.5,
            activation: Activation::Relu,
        };
        let mut t = Trainer::new(&be, opts, &train, &test, &init_params(7)).unwrap();
        let mut events = 0;
        let r = t
            .run(&mut |_| events += 1, &AtomicBool::new(false))
            .unwrap();
        assert!(events >= 3);
        r
    }

    #[test]
    fn contestants_sample_their_loss_curves_at_the_same_steps() {
        // Issue 26: the live curves came from whichever steps the 50 ms clock let through
        // (fp16 0.125–0.875 of the epoch, fp32 0.25–1.0).
        let be = CpuBackend::new(Some(1)).unwrap();
        let d = crate::data::mnist_sample().unwrap();
        let mut train = d.train.clone();
        train.truncate(640, 784);
        let mut test = d.test.clone();
        test.truncate(64, 784);
        let mut curves = Vec::new();
        for precision in [Precision::Fp32, Precision::Fp16] {
            let opts = TrainOptions {
                precision,
                epochs: 1,
                batch: 8,
                adam: AdamParams::default(),
                seed: 3,
                dropout: 0.5,
                activation: Activation::Relu,
            };
            let mut t = Trainer::new(&be, opts, &train, &test, &init_params(3)).unwrap();
            let mut live = Vec::new();
            let r = t
                .run(
                    &mut |e| {
                        if let DuelEvent::Curve { point, .. } = e {
                            live.push(point);
                        }
                    },
                    &AtomicBool::new(false),
                )
                .unwrap();
            assert_eq!(
                crate::runs::examples::json_of(&live),
                crate::runs::examples::json_of(&r.curve),
                "{precision}: the live points are the report's"
            );
            curves.push(r.curve);
        }
        let steps = |c: &[CurvePoint]| c.iter().map(|p| p.step).collect::<Vec<_>>();
        assert_eq!(steps(&curves[0]), crate::types::curve_steps(80, 1));
        assert_eq!(steps(&curves[0]), steps(&curves[1]));
        let last = curves[0].last().unwrap();
        assert_eq!((last.step, last.global_step, last.x), (80, 80, 1.0));
        assert!(curves[0].iter().all(|p| p.loss.is_finite() && p.loss > 0.0));
        // The loss falls over the epoch.
        assert!(last.loss < curves[0][0].loss, "{curves:?}");
    }

    #[test]
    fn one_epoch_smoke_fp8_learns_and_reports_every_tensors_scale() {
        let r = smoke(Precision::Fp8);
        let fp32 = smoke(Precision::Fp32);
        assert_eq!(r.steps, 32);
        assert!(
            r.test_accuracy > 0.75 && (r.test_accuracy - fp32.test_accuracy).abs() < 0.08,
            "fp8 accuracy {} against fp32 {}",
            r.test_accuracy,
            fp32.test_accuracy
        );
        let f = r.fp8.as_ref().expect("an FP8 run reports its scaling");
        assert!(f.emulated && f.engine.contains("CPU"), "{}", f.engine);
        assert_eq!(f.steps, 32);
        assert_eq!(f.tensors.len(), 6);
        for t in &f.tensors {
            assert!(!t.points.is_empty(), "{:?} has no scale points", t.tensor);
            assert!(t.total.nonzero > 0, "{:?} cast nothing", t.tensor);
            assert_eq!(
                t.points[0].scale, 1.0,
                "step 1 casts at scale 1 (no history)"
            );
        }
        // Gradients are small: after step 1 their E5M2 scales rise far above 1, and at scale 1
        // (step 1) some of them flushed to zero.
        let g = f
            .tensors
            .iter()
            .find(|t| t.tensor == Fp8Tensor::Conv1GradOutput)
            .unwrap();
        assert!(g.points.last().unwrap().scale >= 1024.0, "{:?}", g.points);
        assert!(g.total.underflow > 0);
        // Each sampled step carries the six tensors (the histograms' scales) and their values
        // before the cast.
        assert!(r.grad_samples.iter().all(|s| s.fp8.len() == 6));
        for s in &r.grad_samples {
            for t in &s.fp8 {
                let h = t
                    .histogram
                    .as_ref()
                    .expect("a sampled step keeps its histograms");
                assert!(h.nonzero() > 0, "{:?} at step {}", t.tensor, s.step);
            }
        }
        // The activation gradients' histograms are the values before the cast: at step 1
        // (scale 1) some lie below E5M2's smallest subnormal.
        let first = &r.grad_samples[0];
        let conv1 = &first.layers[0].activations;
        assert!(conv1.against(&crate::fp8::E5M2, 1.0).flush_to_zero > 0);
        assert_eq!(f.stored_bytes, 4 * f.fp8_bytes);
        assert!(smoke(Precision::Fp32).fp8.is_none());
    }

    #[test]
    fn fp8_operands_lie_on_their_grids_at_their_scales() {
        let be = CpuBackend::new(Some(1)).unwrap();
        let d = crate::data::mnist_sample().unwrap();
        let mut train = d.train.clone();
        train.truncate(64, 784);
        let mut test = d.test.clone();
        test.truncate(16, 784);
        let opts = TrainOptions {
            precision: Precision::Fp8,
            epochs: 1,
            batch: 32,
            adam: AdamParams::default(),
            seed: 1,
            dropout: 0.0,
            activation: Activation::Relu,
        };
        let mut t = Trainer::new(&be, opts, &train, &test, &init_params(1)).unwrap();
        for i in 0..3 {
            t.step(i % 2, 32).unwrap();
        }
        let st = t.fp8_state().unwrap().unwrap();
        assert_eq!(st.steps, 3);
        let on_grid = |values: &[f32], tensor: Fp8Tensor| {
            let s = st.tensor(tensor).last_scale;
            let f = tensor.format();
            let off = values
                .iter()
                .filter(|&&v| f.quantize(v * s) != v * s)
                .count();
            assert_eq!(off, 0, "{tensor:?}: {off} values off the grid at scale {s}");
        };
        on_grid(
            &be.download(t.params[0].copy.as_ref().unwrap()).unwrap(),
            Fp8Tensor::Conv1Weight,
        );
        on_grid(
            &be.download(t.params[2].copy.as_ref().unwrap()).unwrap(),
            Fp8Tensor::Conv2Weight,
        );
        on_grid(&be.download(&t.ws.x).unwrap(), Fp8Tensor::Conv1Input);
        on_grid(&be.download(&t.ws.a1).unwrap(), Fp8Tensor::Conv2Input);
        on_grid(&be.download(&t.ws.da2).unwrap(), Fp8Tensor::Conv2GradOutput);
        on_grid(&be.download(&t.ws.da1).unwrap(), Fp8Tensor::Conv1GradOutput);
        // The master weights stay FP32 (off the grid).
        let master = be.download(&t.params[0].master).unwrap();
        let s = st.tensor(Fp8Tensor::Conv1Weight).last_scale;
        assert!(master
            .iter()
            .any(|&v| Fp8Format::E4m3.quantize(v * s) != v * s));
        // Evaluation casts but records nothing.
        let before = t.fp8_state().unwrap();
        t.evaluate().unwrap();
        assert_eq!(t.fp8_state().unwrap(), before);
    }

    #[test]
    fn one_epoch_smoke_fp32_learns() {
        let r = smoke(Precision::Fp32);
        assert_eq!(r.steps, 32);
        assert_eq!(r.epochs.len(), 1);
        assert!(r.test_accuracy > 0.8, "fp32 accuracy {}", r.test_accuracy);
        assert!(r.epochs[0].train_loss < 1.5, "{}", r.epochs[0].train_loss);
        assert!(r.peak_memory_bytes > 2048 * 784);
    }

    #[test]
    fn the_first_of_several_epochs_times_every_step() {
        assert_eq!(smoke(Precision::Fp32).step_times, None);
        let r = smoke_epochs(Precision::Fp32, 2);
        let st = r.step_times.expect("a two-epoch run is instrumented");
        assert_eq!((st.epoch, st.steps), (1, 32));
        assert!(0.0 < st.p50_ms && st.p50_ms <= st.p90_ms, "{st:?}");
        assert!(st.p90_ms <= st.p99_ms && st.p99_ms <= st.max_ms, "{st:?}");
        // The steps of epoch 1 add up to no more than the epoch.
        assert!(
            st.p50_ms * 16.0 <= r.epochs[0].ms,
            "{st:?} vs {} ms",
            r.epochs[0].ms
        );
    }

    #[test]
    fn one_epoch_smoke_fp16_learns_with_the_scaler() {
        let r = smoke(Precision::Fp16);
        assert!(r.test_accuracy > 0.8, "fp16 accuracy {}", r.test_accuracy);
        assert!(r.final_loss_scale > 0.0 && r.final_loss_scale <= 65536.0);
        assert_eq!(r.steps + r.skipped_steps, 32);
    }

    #[test]
    fn training_is_reproducible_from_the_seed() {
        let a = smoke(Precision::Fp32);
        let b = smoke(Precision::Fp32);
        let strip = |r: &RunReport| {
            r.epochs
                .iter()
                .map(|e| (e.train_loss, e.test_accuracy))
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&a), strip(&b));
    }

    /// The head of the network (dense layer + softmax cross-entropy) against central finite
    /// differences of the whole network's loss. The loss is smooth in these parameters; in the
    /// conv parameters ReLU and max-pool switches make finite differences unreliable, so the
    /// conv blocks are held against the direct reference in `backend::reference` instead.
    #[test]
    fn dense_and_loss_gradients_match_finite_differences() {
        let be = CpuBackend::new(Some(1)).unwrap();
        let d = crate::data::mnist_sample().unwrap();
        let mut train = d.train.clone();
        train.truncate(6, 784);
        let opts = TrainOptions {
            precision: Precision::Fp32,
            epochs: 1,
            batch: 6,
            adam: AdamParams::default(),
            seed: 3,
            dropout: 0.0,
            activation: Activation::Relu,
        };
        let init = init_params(3);
        let mut t = Trainer::new(&be, opts, &train, &d.test, &init).unwrap();
        t.forward_backward(0, 6).unwrap();
        be.sums_take(&mut t.sums).unwrap();
        let grads = t.grads().unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rand::random());
        let h = 1e-2f32;
        for pi in [4, 5] {
            let g = &grads[pi];
            for _ in 0..20 {
                let i = rng.random_range(0..g.len());
                let mut loss_at = |delta: f32| {
                    let mut p = init.clone();
                    p[pi][i] += delta;
                    t.set_params(&p).unwrap();
                    t.forward_backward(0, 6).unwrap();
                    be.sums_take(&mut t.sums).unwrap().last_loss
                };
                let fd = ((loss_at(h) - loss_at(-h)) / (2.0 * h as f64)) as f32;
                assert!(
                    (fd - g[i]).abs() < 0.01 * g[i].abs() + 5e-5,
                    "param {pi}[{i}]: finite difference {fd} vs backward {}",
                    g[i]
                );
            }
        }
    }

    /// The CNN variants train on the CPU backend: GELU and Swish learn as ReLU does, and the
    /// logits of the test split agree with the evaluation's accuracy.
    #[test]
    fn gelu_and_swish_variants_learn() {
        let be = CpuBackend::new(None).unwrap();
        let d = crate::data::mnist_sample().unwrap();
        let (mut train, mut test) = (d.train.clone(), d.test.clone());
        train.truncate(3000, 784);
        test.truncate(500, 784);
        for activation in [Activation::Gelu, Activation::Swish] {
            let opts = TrainOptions {
                precision: Precision::Fp32,
                epochs: 1,
                batch: 64,
                adam: AdamParams::default(),
                seed: 2,
                dropout: 0.5,
                activation,
            };
            let mut t = Trainer::new(&be, opts, &train, &test, &init_params(2)).unwrap();
            let r = t.run(&mut |_| {}, &AtomicBool::new(false)).unwrap();
            assert!(r.test_accuracy > 0.8, "{activation}: {}", r.test_accuracy);
            let logits = t.test_logits().unwrap();
            assert_eq!(logits.len(), 500 * lab::CLASSES);
            let correct = logits
                .chunks(lab::CLASSES)
                .zip(&test.labels)
                .filter(|(z, &y)| {
                    let best = (0..lab::CLASSES)
                        .max_by(|&a, &b| z[a].total_cmp(&z[b]))
                        .unwrap_or(0);
                    best == y as usize
                })
                .count();
            let acc = correct as f64 / 500.0;
            assert!(
                (acc - r.test_accuracy).abs() < 1e-9,
                "{acc} vs {}",
                r.test_accuracy
            );
        }
    }

    #[test]
    fn cancel_stops_the_run() {
        let be = CpuBackend::new(Some(1)).unwrap();
        let d = crate::data::mnist_sample().unwrap();
        let opts = TrainOptions {
            precision: Precision::Fp32,
            epochs: 1,
            batch: 32,
            adam: AdamParams::default(),
            seed: 1,
            dropout: 0.5,
            activation: Activation::Relu,
        };
        let mut t = Trainer::new(&be, opts, &d.train, &d.test, &init_params(1)).unwrap();
        let e = t.run(&mut |_| {}, &AtomicBool::new(true)).unwrap_err();
        assert!(matches!(e, ComputeError::Cancelled));
    }

    #[test]
    fn fp32_divergence_names_epoch_and_step() {
        let be = CpuBackend::new(None).unwrap();
        let d = crate::data::mnist_sample().unwrap();
        let adam = AdamParams {
            lr: 10.0,
            ..AdamParams::default()
        };
        let opts = TrainOptions {
            precision: Precision::Fp32,
            epochs: 1,
            batch: 128,
            adam,
            seed: 1,
            dropout: 0.5,
            activation: Activation::Relu,
        };
        let mut t = Trainer::new(&be, opts, &d.train, &d.test, &init_params(1)).unwrap();
        match t.run(&mut |_| {}, &AtomicBool::new(false)) {
            Err(ComputeError::Diverged { epoch, step, .. }) => assert!(epoch == 1 && step >= 1),
            other => panic!("expected divergence, got {other:?}"),
        }
    }

    /// `(zeros, non-finite, counts per bucket)` of `values / scale`, counted directly: each
    /// magnitude's bucket found by comparing it with powers of two.
    fn direct_count(values: &[f32], scale: f64) -> (u64, u64, Vec<u64>) {
        use crate::grads::{BUCKETS, MAX_EXP, MIN_EXP};
        let (mut zeros, mut bad, mut counts) = (0, 0, vec![0u64; BUCKETS]);
        for &v in values {
            let a = (v as f64 / scale).abs();
            if a == 0.0 {
                zeros += 1;
            } else if !a.is_finite() {
                bad += 1;
            } else {
                let mut e = MIN_EXP;
                while e < MAX_EXP && 2f64.powi(e + 1) <= a {
                    e += 1;
                }
                counts[(e - MIN_EXP) as usize] += 1;
            }
        }
        (zeros, bad, counts)
    }

    fn small_trainer(
        be: &CpuBackend,
        precision: Precision,
        epochs: usize,
    ) -> Trainer<'_, CpuBackend> {
        let d = crate::data::mnist_sample().unwrap();
        let (mut train, mut test) = (d.train.clone(), d.test.clone());
        train.truncate(1000, 784);
        test.truncate(300, 784);
        let opts = TrainOptions {
            precision,
            epochs,
            batch: 64,
            adam: AdamParams::default(),
            seed: 3,
            dropout: 0.5,
            activation: Activation::Relu,
        };
        Trainer::new(be, opts, &train, &test, &init_params(3)).unwrap()
    }

    #[test]
    fn the_gradient_histograms_equal_a_direct_count_over_the_same_gradients() {
        let be = CpuBackend::new(Some(2)).unwrap();
        for precision in [Precision::Fp32, Precision::Fp16] {
            let mut t = small_trainer(&be, precision, 2);
            let r = t.run(&mut |_| {}, &AtomicBool::new(false)).unwrap();
            // 16 steps an epoch (1000 / 64): steps 1, 2, 4, 8 of the instrumented epoch, and
            // each epoch's last.
            let at: Vec<(usize, usize)> =
                r.grad_samples.iter().map(|g| (g.epoch, g.step)).collect();
            assert_eq!(
                at,
                [(1, 1), (1, 2), (1, 4), (1, 8), (1, 16), (2, 16)],
                "{precision}"
            );
            let last = r.grad_samples.last().unwrap();
            let state = be.scaler_read(&t.scaler).unwrap();
            assert_eq!(
                last.loss_scale, state.scale as f64,
                "no growth or skip at the last step"
            );
            let n = t.step_len(15);
            assert_eq!(n, 1000 - 15 * 64);
            let wanted: [(&str, &Vec<f32>, usize, usize); 3] = [
                ("conv1", &be.download(&t.ws.da1).unwrap(), n * A1, 0),
                (
                    "conv2",
                    &be.download(&t.ws.da2).unwrap(),
                    n * lab::FEATURES,
                    2,
                ),
                (
                    "dense",
                    &be.download(&t.ws.dlogits).unwrap(),
                    n * lab::CLASSES,
                    4,
                ),
            ];
            for ((name, acts, len, w), got) in wanted.iter().zip(&last.layers) {
                assert_eq!(&got.layer, name);
                let (z, bad, counts) = direct_count(&acts[..*len], last.loss_scale);
                assert_eq!(
                    (got.activations.zeros, got.activations.non_finite),
                    (z, bad)
                );
                assert_eq!(
                    got.activations.counts, counts,
                    "{precision} {name} activations"
                );
                if *name != "dense" {
                    assert!(
                        z > 0,
                        "ReLU and the pool leave exact zeros in {name}'s gradient"
                    );
                }
                let grads = be.download(&t.params[*w].grad).unwrap();
                let (z, bad, counts) = direct_count(&grads, last.loss_scale);
                assert_eq!((got.weights.zeros, got.weights.non_finite), (z, bad));
                assert_eq!(got.weights.counts, counts, "{precision} {name} weights");
                assert_eq!(got.weights.total(), grads.len() as u64);
            }
            assert_eq!(r.scale_history.first().map(|p| p.step), Some(1));
            let expected_scale = if precision == Precision::Fp16 {
                65536.0
            } else {
                1.0
            };
            assert_eq!(r.grad_samples[0].loss_scale, expected_scale, "{precision}");
            assert_eq!(r.scale_history.last().map(|p| p.step), Some(32));
        }
    }

    #[test]
    fn the_memory_split_sums_to_the_peak_and_matches_the_model_specification() {
        let be = CpuBackend::new(Some(2)).unwrap();
        for precision in [Precision::Fp32, Precision::Fp16, Precision::Bf16] {
            be.reset_peak();
            let r = {
                let mut t = small_trainer(&be, precision, 1);
                t.run(&mut |_| {}, &AtomicBool::new(false)).unwrap()
            };
            let split = r.memory.expect("the CPU backend keeps the split");
            assert_eq!(split.total(), r.peak_memory_bytes, "{precision}: {split:?}");
            let want = crate::memory::estimate(precision, 64, 1000, 300, split.workspace);
            assert_eq!(split, want, "{precision}");
            assert!(split.workspace > 0 && split.workspace < 1024, "{split:?}");
            let m = r.model.expect("the model is kept");
            assert_eq!(m.precision, precision);
            m.check().unwrap();
        }
        assert_eq!(
            be.meter_current_for_tests(),
            0,
            "every trainer's bytes were given back"
        );
    }
}

/// A tensor's values before its FP8 cast at a sampled step.
#[derive(Debug, Clone)]
struct Captured {
    tensor: Fp8Tensor,
    /// Divided by the loss scale (gradients on FP16 storage): the units of the gradient
    /// histograms and of the tensor's FP8 scale.
    unscaled: Log2Histogram,
}

/// The buffers FP8 casts.
#[derive(Debug, Clone, Copy)]
enum Fp8Buf {
    X,
    A1,
    Da2,
    Da1,
    W1,
    W2,
}

/// Adds each tensor's scale after step `step` to its points: always with `always`, else only
/// where the scale moved since the tensor's last point.
fn push_fp8_points(points: &mut [Vec<Fp8ScalePoint>], state: &Fp8State, step: usize, always: bool) {
    for (p, t) in points.iter_mut().zip(&state.tensors) {
        let last = p.last().copied();
        if last.map(|l| l.step) == Some(step) {
            continue;
        }
        if always || last.map(|l| l.scale) != Some(t.last_scale) {
            p.push(Fp8ScalePoint {
                step,
                scale: t.last_scale,
                amax: t.last.amax,
            });
        }
    }
}

/// Elements of an FP8 tensor: per image, and fixed (weights).
fn fp8_elements(t: Fp8Tensor) -> (usize, usize) {
    match t {
        Fp8Tensor::Conv1Input => (lab::IMAGE * lab::IMAGE, 0),
        Fp8Tensor::Conv1Weight => (0, lab::CONV1.weight_len()),
        Fp8Tensor::Conv2Input | Fp8Tensor::Conv1GradOutput => (A1, 0),
        Fp8Tensor::Conv2Weight => (0, lab::CONV2.weight_len()),
        Fp8Tensor::Conv2GradOutput => (lab::FEATURES, 0),
    }
}
