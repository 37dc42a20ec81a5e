//! The CUDA backend: our own kernels (`kernels/cuda/*.cu`), shipped compiled (cubins for
//! sm_80/86/89/90, PTX for newer GPUs, embedded by the `kernels` crate) or compiled at run time
//! by NVRTC where nothing embedded fits, launched through `cudarc` with dynamic loading
//! (building needs no CUDA installation, training needs the driver only; a missing driver,
//! device or kernel is an ordinary error).
//!
//! One concern per module:
//! - `shipped`: the embedded kernels: which file a GPU loads (`SHOWDOWN_KERNELS` overrides),
//!   doctor's line on it, the check that they match their sources, and [`write_compiled`], which
//!   `cargo xtask kernels` runs to make them;
//! - `nvrtc`: NVRTC compiles ([`compile_ptx`]) and the on-disk PTX cache ([`ptx_cached`]: keyed
//!   by architecture, options, NVRTC version and source; written atomically);
//! - `device`: opening a GPU (context, architecture, SM count, shared-memory limits) and
//!   loading kernel families into it (embedded file, else NVRTC);
//! - `buffers`: device buffers ([`CudaBuf`], [`CudaData`]) and their memory accounting;
//! - `launch`: every kernel's signature, stated once next to its SAFETY contract as a typed
//!   launch wrapper (checked `int` conversions), and the launch plans;
//! - `backend`: [`CudaBackend`], the training primitives of [`crate::backend::Backend`];
//! - `fp8`: FP8's scaling state on the device and its conversion from and to the core's;
//! - `bench`: what the GPU benchmarks share (CUDA-event timing, the ladder's options);
//! - [`crossover`]: the precision crossover's cuBLASLt sweep;
//! - [`conv_ladder`] (and `library`, its cuBLAS/cuDNN peers), [`infer`], [`lab`]: the
//!   benchmarks; [`facts`]: kernel facts without a GPU; [`telemetry`]: NVML sampling.

mod backend;
mod bench;
mod buffers;
pub mod conv_ladder;
mod conv_mma;
pub mod crossover;
pub(crate) mod cupti;
mod device;
pub mod facts;
mod fp8;
#[cfg(test)]
mod gpu_tests;
pub mod infer;
pub mod lab;
mod launch;
mod library;
mod nvrtc;
mod shipped;
pub mod telemetry;

pub use backend::CudaBackend;
pub use buffers::{CudaBuf, CudaData, Storage};
pub use nvrtc::{compile_ptx, ptx_cached, NVRTC_OPTIONS};
// The kernel lab opens its device through these paths.
pub(crate) use device::{load_families, open_device, OpenDevice};
pub(crate) use shipped::kernels_probe;
pub use shipped::write_compiled;

use crate::error::ComputeError;

/// The error of a CUDA operation: [`ComputeError::Backend`] of backend `cuda`.
pub(crate) fn err(reason: impl std::fmt::Display) -> ComputeError {
    ComputeError::Backend {
        backend: "cuda".into(),
        reason: reason.to_string(),
    }
}
