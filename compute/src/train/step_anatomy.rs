//! A [`Trainer`]'s step anatomy ([`Trainer::anatomy`]): full-batch steps timed whole and taken
//! apart launch by launch with the [`anatomy`](crate::anatomy) recorder on.

use std::sync::atomic::AtomicBool;

use super::{stopped, Trainer};
use crate::anatomy;
use crate::backend::Backend;
use crate::bench::anatomy::{median, ContestantAnatomy};
use crate::error::{ComputeError, Result};

impl<'b, B: Backend> Trainer<'b, B> {
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
    pub(super) fn anatomy_steps(
        &mut self,
        steps: usize,
        warmup: usize,
    ) -> Result<ContestantAnatomy> {
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
}
