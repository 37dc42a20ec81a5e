//! The lab's pages, one module each.

pub mod duel;
pub mod home;
pub mod profiling;
pub mod setup;
