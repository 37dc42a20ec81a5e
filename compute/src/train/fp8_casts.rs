//! FP8's side of a [`Trainer`]: the casts of its tensors onto their grids (the weight copies
//! after each optimizer step, the activations and gradients within a step), what a sampled
//! step keeps of each tensor before its cast, and the FP8 part of the run's report.

use super::{Captured, Fp8Buf, Trainer, A1};
use crate::backend::Backend;
use crate::error::Result;
use crate::fp8::{Fp8Recipe, Fp8Report, Fp8ScalePoint, Fp8State, Fp8Tensor, Fp8TensorReport};
use crate::grads::Log2Histogram;
use crate::model::lab;

impl<'b, B: Backend> Trainer<'b, B> {
    /// Casts the weight copies onto their grids without counting them in a step (at the
    /// start: step 1's optimizer casts them again, counted).
    pub(super) fn cast_fp8_weights_unrecorded(&mut self) -> Result<()> {
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
    pub(super) fn upload_weight_copies(&mut self) -> Result<()> {
        for p in &mut self.params {
            if let Some(c) = p.copy.as_mut() {
                let v = self.be.download(&p.master)?;
                self.be.upload(c, &v)?;
            }
        }
        Ok(())
    }

    /// Casts `buf`'s first `len` values as FP8 tensor `t` (FP8 runs only).
    pub(super) fn fp8_cast(&mut self, t: Fp8Tensor, which: Fp8Buf, len: usize) -> Result<()> {
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
    pub(super) fn cast_fp8_weights(&mut self) -> Result<()> {
        self.fp8_cast(Fp8Tensor::Conv1Weight, Fp8Buf::W1, lab::CONV1.weight_len())?;
        self.fp8_cast(Fp8Tensor::Conv2Weight, Fp8Buf::W2, lab::CONV2.weight_len())
    }

    /// FP8's state as the backend holds it (FP8 runs only).
    pub fn fp8_state(&self) -> Result<Option<Fp8State>> {
        self.fp8.as_ref().map(|s| self.be.fp8_read(s)).transpose()
    }

    /// The FP8 side of the run's report: the recipe, the engine, and each tensor's scale
    /// points and counts (FP8 runs only).
    pub(super) fn fp8_report(&self, points: Vec<Vec<Fp8ScalePoint>>) -> Result<Option<Fp8Report>> {
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
    pub(super) fn fp8_captured(&self) -> Vec<Captured> {
        self.fp8_capture.clone().unwrap_or_default()
    }
}

/// Adds each tensor's scale after step `step` to its points: always with `always`, else only
/// where the scale moved since the tensor's last point.
pub(super) fn push_fp8_points(
    points: &mut [Vec<Fp8ScalePoint>],
    state: &Fp8State,
    step: usize,
    always: bool,
) {
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
