//! An importer for Nsight Compute (`ncu`) CSV exports, and the lab's seven analysis panels.
//!
//! Three CSV layouts are recognised from their header line, wherever it is (lines before it
//! that are not the header, such as `==PROF==` lines or the profiled program's own output,
//! are skipped, as are `==PROF==`/`==WARNING==`/`==ERROR==` lines after it):
//!
//! * the **details** page (`ncu --csv --page details`, the default), one row per metric or
//!   rule result, with or without the newer `Body Item Label` column and with either unit
//!   style (`--print-units auto` or `base`);
//! * the **raw** page (`--page raw`): a row of metric names, a row of units, one row per
//!   kernel launch;
//! * the **per-kernel summary** (`--print-summary per-kernel`): one row per metric of each
//!   distinct kernel (name, block, grid), with `Minimum`, `Maximum` and `Average` over its
//!   `Invocations`.
//!
//! Binary `.ncu-rep` reports are recognised by their magic and refused with the command that
//! exports them ([`export_command`]); the engine's ncu runner (compute's `ncu_runner`) runs that
//! command: the core starts no process.
//!
//! Input is read row by row from any [`BufRead`]; no more than one row is held in memory
//! besides the report being built. Every value is kept as printed ([`MetricValue`]) and, when
//! numeric, also converted to base SI units ([`Metric::si_value`], see [`units`]), so the same
//! report exported with and without `--print-units base` gives the same SI values. A value
//! printed as a number that is not a finite one (`1e400`, `inf`, or overflowing in SI units)
//! does not stop the import: it is kept as printed, without an SI value, marked
//! [`Metric::unreadable`] (the panels show "unreadable value"), and the report warns once.
//!
//! Pure `std` + `serde`: this module (except the functions marked native) compiles for
//! `wasm32-unknown-unknown`. Names and descriptions are data: nothing here escapes HTML.

mod compare;
mod error;
mod import;
mod layout;
mod model;
mod names;
mod panel;
pub mod panels;
mod reader;
mod stored;
pub mod units;

pub use compare::{compare, compare_panels, MetricDelta, PanelDelta};
pub use names::short_name;
pub use panels::{
    boundness, boundness_sentence, build_panels, build_panels_with, Bar, Boundness,
    CalculatorLaunch, ChartKind, ChartSpec, KernelPanels, Panel, PanelRow,
};

pub use stored::{
    is_panel_id, ImageFormat, ImportList, ImportSummary, ProfiledOn, Screenshot, ScreenshotImage,
    MAX_CAPTION_CHARS, MAX_SCREENSHOT_BYTES, MAX_SCREENSHOT_SIDE, PANEL_IDS,
};

pub use error::*;
pub use import::*;
pub use layout::*;
pub use model::*;

#[cfg(test)]
mod tests;
