//! A [`Trainer`]'s gradients: downloaded and unscaled ([`Trainer::grads`]), and sampled as
//! histograms per layer ([`Trainer::grad_sample`], Act II's gradient view).

use super::{Trainer, A1};
use crate::backend::{Backend, ScalerState};
use crate::error::Result;
use crate::fp8::{Fp8Tensor, Fp8TensorSample};
use crate::grads::{GradSample, LayerGrads, Log2Histogram};
use crate::model::lab;

impl<'b, B: Backend> Trainer<'b, B> {
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
}

/// The loss scale a step computed its gradients with, from the scaler's state after the step:
/// a skipped step halved it, the step that completed a growth interval doubled it. (At the
/// scaler's floor a skipped step leaves the scale as it was; this then says twice the floor.)
pub(super) fn scale_before_update(s: &ScalerState, skipped: bool) -> f32 {
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
