//! A running lab job ([`LabJob`]): where its progress goes, its cancel flag and its live
//! telemetry. A leaf below every lab job and every backend's sweep, so a GPU benchmark can report
//! progress without importing the job that calls it.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{ComputeError, Result};
use crate::protocol::Event;
use crate::telemetry::{TelemetryForward, TelemetryRecorder};
use showdown_core::lab::LabProgress;

/// A running lab job: where its progress goes, its cancel flag and (on a GPU) its live NVML
/// readings, passed on as [`Event::Telemetry`] whenever the job reports progress.
pub struct LabJob<'a> {
    name: &'static str,
    on_event: &'a mut dyn FnMut(Event),
    cancel: &'a AtomicBool,
    telemetry: TelemetryForward,
}

impl<'a> LabJob<'a> {
    /// A job named `name` (its wire name, `kernel_bench`) reporting to `on_event`.
    pub fn new(
        name: &'static str,
        on_event: &'a mut dyn FnMut(Event),
        cancel: &'a AtomicBool,
    ) -> Self {
        LabJob {
            name,
            on_event,
            cancel,
            telemetry: TelemetryForward::default(),
        }
    }

    /// The job's wire name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Starts the telemetry `start` returns (a GPU's NVML sampling) for the rest of the job,
    /// unless one runs already; the readings go out with each progress event.
    pub fn watch(&mut self, start: impl FnOnce() -> TelemetryRecorder) {
        if !self.telemetry.is_running() {
            self.telemetry = TelemetryForward::new(Some(start()));
        }
    }

    /// Sends the NVML readings taken since the last call.
    fn flush_telemetry(&mut self) {
        self.telemetry.flush(self.on_event);
    }

    /// The cancel flag, for work that polls it itself (a training run).
    pub fn cancel_flag(&self) -> &'a AtomicBool {
        self.cancel
    }

    /// Whether the user asked the job to stop.
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// [`ComputeError::Cancelled`] once the user asked the job to stop.
    pub fn check_cancel(&self) -> Result<()> {
        if self.cancelled() {
            Err(ComputeError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// Reports that the job moved on to `stage` with `done` of `total` items finished, passes
    /// on the telemetry taken meanwhile, and stops the job if it was cancelled.
    pub fn stage(&mut self, stage: impl Into<String>, done: usize, total: usize) -> Result<()> {
        self.flush_telemetry();
        (self.on_event)(Event::Lab {
            event: LabProgress::Stage {
                job: self.name.to_string(),
                stage: stage.into(),
                done,
                total,
            },
        });
        self.check_cancel()
    }

    /// A sentence for the user (a peer left out, a row missing and why).
    pub fn note(&mut self, text: impl Into<String>) {
        (self.on_event)(Event::Lab {
            event: LabProgress::Note {
                job: self.name.to_string(),
                text: text.into(),
            },
        });
    }
}
