//! The CUDA backend: our own kernels (`kernels/cuda/*.cu`), compiled at run time by NVRTC for
//! the device's architecture, launched through `cudarc` with dynamic loading (building needs no
//! CUDA installation; a missing driver, device or NVRTC is an ordinary error).
//!
//! One concern per module:
//! - `nvrtc`: NVRTC compiles ([`compile_ptx`]) and the on-disk PTX cache ([`ptx_cached`]: keyed
//!   by architecture, options, NVRTC version and source; written atomically);
//! - `device`: opening a GPU (context, architecture, SM count, shared-memory limits) and
//!   loading kernel families into it;
//! - `buffers`: device buffers ([`CudaBuf`], [`CudaData`]) and their memory accounting;
//! - `launch`: every kernel's signature, stated once next to its SAFETY contract as a typed
//!   launch wrapper (checked `int` conversions), and the launch plans;
//! - `backend`: [`CudaBackend`], the training primitives of [`crate::backend::Backend`];
//! - `bench`: what the GPU benchmarks share (CUDA-event timing, the ladder's options);
//! - [`conv_ladder`] (and `library`, its cuBLAS/cuDNN peers), [`infer`], [`lab`]: the
//!   benchmarks; [`facts`]: kernel facts without a GPU; [`telemetry`]: NVML sampling.

mod backend;
mod bench;
mod buffers;
pub mod conv_ladder;
mod conv_mma;
mod device;
pub mod facts;
#[cfg(test)]
mod gpu_tests;
pub mod infer;
pub mod lab;
mod launch;
mod library;
mod nvrtc;
pub mod telemetry;

pub use backend::CudaBackend;
pub use buffers::{CudaBuf, CudaData, Storage};
pub use nvrtc::{compile_ptx, ptx_cached, NVRTC_OPTIONS};
// The kernel lab opens its device through these paths.
pub(crate) use device::{load_families, open_device, OpenDevice};

use crate::error::ComputeError;

/// The error of a CUDA operation: [`ComputeError::Backend`] of backend `cuda`.
pub(crate) fn err(reason: impl std::fmt::Display) -> ComputeError {
    ComputeError::Backend {
        backend: "cuda".into(),
        reason: reason.to_string(),
    }
}
