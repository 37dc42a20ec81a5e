//! Precision Showdown's engine.
//!
//! The **pure core** is the crate `showdown-core` (`compute/core`), re-exported here module by
//! module: [`types`], [`model`], [`protocol`], [`ncu`], [`occupancy`], [`runs`], [`verdict`],
//! [`inference`], [`kernel_panel`], [`bench`], [`explain`], [`grads`], [`memory`] and
//! [`error`]. The UI depends on the core alone.
//!
//! The **native** feature adds what needs an operating system: [`data`] (IDX files, the
//! embedded MNIST sample, Fashion-MNIST, downloads), [`backend`] (the `Backend` trait and the CPU
//! backend), [`train`] (training written once over any backend) and [`service`] (the
//! operations the CLI, the stdio sidecar and the HTTP server expose).
#![deny(missing_docs)]

pub use showdown_core::{
    bench, bounds, error, explain, fp8, grads, inference, kernel_panel, memory, model, ncu,
    occupancy, protocol, sync, types, verdict,
};

#[cfg(feature = "native")]
pub mod runs;
#[cfg(not(feature = "native"))]
pub use showdown_core::runs;

#[cfg(feature = "native")]
pub mod anatomy;
#[cfg(feature = "native")]
pub mod backend;
#[cfg(feature = "native")]
pub mod child;
#[cfg(feature = "native")]
pub mod conv_ladder;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "native")]
pub mod data;
#[cfg(feature = "native")]
pub mod device;
#[cfg(feature = "native")]
pub mod doctor;
#[cfg(feature = "native")]
pub mod duel;
/// PyTorch beside our duel: the core's lines and runs and, natively, the run of the script.
#[cfg(feature = "native")]
pub mod origin;
#[cfg(feature = "native")]
pub mod probe;
#[cfg(feature = "native")]
pub mod pytorch_duel;
#[cfg(not(feature = "native"))]
pub use showdown_core::pytorch_duel;
#[cfg(feature = "native")]
pub mod explainer;
#[cfg(feature = "native")]
pub mod gemm_sweep;
#[cfg(feature = "native")]
pub mod gpu_probe;
#[cfg(feature = "native")]
pub mod host;
#[cfg(feature = "native")]
pub mod lab;
#[cfg(feature = "native")]
pub mod lab_job;
#[cfg(feature = "native")]
pub mod ncu_library;
#[cfg(feature = "native")]
pub mod ncu_runner;
#[cfg(feature = "native")]
pub mod service;
#[cfg(feature = "native")]
pub mod telemetry;
#[cfg(feature = "native")]
pub mod trace;
#[cfg(feature = "native")]
pub mod train;

pub use error::{ComputeError, ErrorKind};
