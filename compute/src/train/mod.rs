//! Training the lab CNN, written once over any [`Backend`]: parameters, the workspace, a
//! training step and the optimizer. The rest of a [`Trainer`] lives beside it, one concern a
//! file: the epochs and evaluation (`epochs`), FP8's casts and what they capture
//! (`fp8_casts`), the gradient samples (`grad_sample`) and the step anatomy (`step_anatomy`).

mod epochs;
mod fp8_casts;
mod grad_sample;
mod step_anatomy;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::backend::{
    AdamParams, AdamTensor, Backend, DType, HeadDropout, HeadStep, ScalerState, CURSOR_WORDS,
};
use crate::data::Split;
use crate::error::{ComputeError, Result};
use crate::explain::ModelWeights;
use crate::fp8::{Fp8Recipe, Fp8State, Fp8Tensor};
use crate::grads::Log2Histogram;
use crate::memory::MemoryCategory;
use crate::model::{lab, Activation};
use crate::trace;
use crate::types::{EpochReport, Precision};

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

    /// The master parameters, downloaded (`[w1, b1, w2, b2, w3, b3]`).
    pub fn params(&self) -> Result<Vec<Vec<f32>>> {
        self.params
            .iter()
            .map(|p| self.be.download(&p.master))
            .collect()
    }
}

fn as_u32(index: usize) -> Result<u32> {
    u32::try_from(index)
        .map_err(|_| ComputeError::bad_arg("step", index, "more steps than 2^32 in an epoch"))
}

/// A tensor's values before its FP8 cast at a sampled step.
#[derive(Debug, Clone)]
pub(super) struct Captured {
    pub(super) tensor: Fp8Tensor,
    /// Divided by the loss scale (gradients on FP16 storage): the units of the gradient
    /// histograms and of the tensor's FP8 scale.
    pub(super) unscaled: Log2Histogram,
}

/// The buffers FP8 casts.
#[derive(Debug, Clone, Copy)]
pub(super) enum Fp8Buf {
    X,
    A1,
    Da2,
    Da1,
    W1,
    W2,
}

/// Median of epochs 2.. (epoch 1 carries warm-up), or of all when there is one
/// ([`crate::types::median_after_warmup`]).
pub fn median_epoch_ms(epochs: &[EpochReport]) -> f64 {
    let ms: Vec<f64> = epochs.iter().map(|e| e.ms).collect();
    crate::types::median_after_warmup(&ms)
}
