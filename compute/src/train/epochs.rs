//! The epochs of a [`Trainer`] and its evaluation: the whole run ([`Trainer::run`]: shuffles,
//! steps, progress events, the loss curve, test accuracy after each epoch, the report), and the
//! passes over the test split (loss and accuracy, the logits, every layer's output).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::fp8_casts::push_fp8_points;
use super::{median_epoch_ms, Trainer, A1, DIVERGED_LOSS, MEAN, STD};
use crate::backend::{Backend, LossSums};
use crate::bounds;
use crate::error::{ComputeError, Result};
use crate::fp8::{Fp8ScalePoint, Fp8Tensor};
use crate::grads::ScalePoint;
use crate::model::lab;
use crate::trace;
use crate::types::{CurvePoint, DuelEvent, EpochReport, RunReport};

impl<'b, B: Backend> Trainer<'b, B> {
    /// Walks the whole test split in workspace-sized batches (no dropout): gathers each batch,
    /// runs the forward pass, then hands the batch size to `per_batch` (logits in `ws.logits`).
    pub(super) fn each_test_batch(
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

    pub(super) fn each_test_batch_inner(
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
    pub(super) fn ws_capacity(&self) -> usize {
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
}
