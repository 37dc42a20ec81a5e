//! Act III's live lab: the jobs that measure this machine — the kernel benchmark
//! ([`kernels`]), the convolution ladder ([`ladder`]), inference latency ([`infer`]), a
//! training step's anatomy ([`anatomy`]), the precision crossover ([`crossover`]), Nsight Compute profiles ([`profile`]) — and the
//! PyTorch peer they run beside ours ([`peers`]). Each is a plain function over a [`LabJob`]
//! (progress, cancel, live telemetry); the service, the CLI's `bench` commands and the tests
//! call the same functions, so a job's numbers and the CLI's come from one code path.

pub mod anatomy;
pub mod crossover;
pub mod gemm_sweep;
pub mod infer;
pub mod kernels;
pub mod ladder;
pub mod peers;
pub mod profile;

pub use showdown_core::lab::*;

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{ComputeError, Result};
use crate::protocol::Event;

/// A running lab job: where its progress goes, its cancel flag and (on a GPU) its live NVML
/// readings, passed on as [`Event::Telemetry`] whenever the job reports progress.
pub struct LabJob<'a> {
    name: &'static str,
    on_event: &'a mut dyn FnMut(Event),
    cancel: &'a AtomicBool,
    telemetry: crate::telemetry::TelemetryForward,
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
            telemetry: crate::telemetry::TelemetryForward::default(),
        }
    }

    /// The job's wire name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Starts sampling GPU `ordinal` with NVML (5 Hz) for the rest of the job; the readings go
    /// out with each progress event.
    #[cfg(feature = "cuda")]
    pub fn watch_gpu(&mut self, ordinal: usize) {
        if !self.telemetry.is_running() {
            self.telemetry = crate::telemetry::TelemetryForward::new(Some(
                crate::cuda::telemetry::start(ordinal),
            ));
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

/// The error of a lab job that needs a GPU on a machine (or a build) without one, saying what
/// the GPU would add ([`ComputeError::Unavailable`]: HTTP 409, not a failure).
pub fn needs_gpu(what: &str, why: impl std::fmt::Display) -> ComputeError {
    ComputeError::Unavailable {
        backend: "cuda".into(),
        reason: format!("{what} needs a CUDA GPU: {why}"),
    }
}
