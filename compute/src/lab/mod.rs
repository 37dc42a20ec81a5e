//! Act III's live lab: the jobs that measure this machine — the kernel benchmark
//! ([`kernels`]), the convolution ladder ([`ladder`]), inference latency ([`infer`]), a
//! training step's anatomy ([`anatomy`]), the precision crossover ([`crossover`]), Nsight Compute profiles ([`profile`]) — and the
//! PyTorch peer they run beside ours ([`peers`]). Each is a plain function over a [`LabJob`]
//! (progress, cancel, live telemetry); the service, the CLI's `bench` commands and the tests
//! call the same functions, so a job's numbers and the CLI's come from one code path.

pub mod anatomy;
pub mod crossover;
pub mod infer;
pub mod kernels;
pub mod ladder;
pub mod peers;
pub mod profile;

pub use showdown_core::lab::*;

pub use crate::lab_job::LabJob;

use crate::error::ComputeError;

/// Lab jobs on a GPU.
#[cfg(feature = "cuda")]
impl LabJob<'_> {
    /// Starts sampling GPU `ordinal` with NVML (5 Hz) for the rest of the job; the readings go
    /// out with each progress event.
    pub fn watch_gpu(&mut self, ordinal: usize) {
        self.watch(|| crate::cuda::telemetry::start(ordinal));
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
