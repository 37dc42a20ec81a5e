//! Precision Showdown's pure core: every type that crosses a process or a door, and the pure
//! logic over them. It builds for `wasm32-unknown-unknown` with no features, so the web UI,
//! the desktop shell, the CLI and the engine all speak the same types:
//!
//! - [`protocol`]: requests, replies, job events and [`ApiError`](protocol::ApiError), the
//!   messages every door (stdio, HTTP, Tauri) carries;
//! - leaves, imported by everything and importing no feature back: [`precision`] (the
//!   precisions and the backend choice), [`stats`] (epoch-time statistics), [`format`]
//!   (numbers, speed-ups and HTML text), [`histogram`] (log2 histograms and float ranges),
//!   [`validate`] (the request fields' rules);
//! - [`types`]: the duel's configuration and report, doctor and data-set reports (the reports
//!   import the features they carry, never the reverse);
//! - [`model`]: the lab CNN's specification and introspection, and a trained model's weights;
//! - [`pages`]: the app's pages (the acts and the Docs), their URL fragments and titles;
//! - [`ncu`]: the Nsight Compute CSV importer and its analysis panels;
//! - [`occupancy`]: the exact occupancy calculator;
//! - [`pytorch_duel`]: PyTorch beside our duel (Act II's "with PyTorch");
//! - [`runs`]: the run history's summaries and CSV export; [`bounds`]: what one saved run
//!   holds at most, and the store's read limit, in one place;
//! - [`verdict`]: Act V's summary and its HTML export;
//! - [`inference`], [`kernel_panel`]: Act III's reports;
//! - [`bench`]: the reports of `showdown bench …` (kernels, convolution ladder, inference,
//!   duel), their tables and labels;
//! - [`explain`], [`grads`], [`memory`]: the visual explainer's models and activations,
//!   gradient histograms against FP16/BF16, and the memory split;
//! - [`fp8`]: FP8's formats and per-tensor scaling (the reference of every backend's cast);
//! - [`error`]: the engine's error type and its classes;
//! - [`sync`]: the one way shared state is locked.
//!
//! Feature `fs` adds reading exports from disk and running `ncu --import` (native builds).
#![deny(missing_docs)]

pub mod bench;
pub mod bounds;
pub mod chart_data;
pub mod docs_figures;
pub mod error;
pub mod explain;
pub mod format;
pub mod fp8;
pub mod grads;
pub mod histogram;
pub mod inference;
pub mod kernel_panel;
pub mod lab;
pub mod lab_csv;
pub mod memory;
pub mod model;
pub mod ncu;
pub mod occupancy;
pub mod origin;
pub mod pages;
pub mod peer_pythons;
pub mod png_text;
pub mod precision;
pub mod protocol;
pub mod pytorch_duel;
pub mod runs;
pub mod speedup_basis;
pub mod stats;
pub mod sync;
pub mod types;
pub mod validate;
pub mod verdict;
pub mod verdict_groups;
pub mod walk;

pub use error::{ComputeError, ErrorKind};
