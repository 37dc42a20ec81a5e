//! The lab's pages, one module each.

pub mod docs;
pub mod duel;
pub mod duel_story;
pub mod duel_table;
pub mod get_mnist;
pub mod home;
pub mod inside;
pub mod kernels;
pub mod profiling;
pub mod run_history;
pub mod setup;
pub mod telemetry;
pub mod verdict;
