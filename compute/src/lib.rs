//! Precision Showdown's engine.
//!
//! The **pure core** (always compiled, also for `wasm32-unknown-unknown` with default features
//! off) holds the types shared with the UI: [`types`] (precisions, duel configuration and
//! reports), [`model`] (the lab CNN's specification and introspection), [`protocol`] (the
//! request/response/event messages every door speaks), [`ncu`] (the Nsight Compute CSV
//! importer and its analysis panels), [`runs`] (the run history's summaries and CSV export) and
//! [`verdict`] (Act V's summary and its HTML export).
//!
//! The **native** feature adds what needs an operating system: [`data`] (IDX files, the
//! embedded MNIST sample, Fashion-MNIST, downloads), [`backend`] (the `Backend` trait and the CPU
//! backend), [`train`] (training written once over any backend) and [`service`] (the
//! operations the CLI, the stdio sidecar and the HTTP server expose).
#![deny(missing_docs)]

pub mod error;
pub mod inference;
pub mod kernel_panel;
pub mod model;
pub mod ncu;
pub mod occupancy;
pub mod protocol;
pub mod runs;
pub mod types;
pub mod verdict;

#[cfg(feature = "native")]
pub mod backend;
#[cfg(feature = "native")]
pub mod conv_ladder;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "native")]
pub mod data;
#[cfg(feature = "native")]
pub mod doctor;
#[cfg(feature = "native")]
pub mod service;
#[cfg(feature = "native")]
pub mod store;
#[cfg(feature = "native")]
pub mod trace;
#[cfg(feature = "native")]
pub mod train;

pub use error::{ComputeError, ErrorKind};
