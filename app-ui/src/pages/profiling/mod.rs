//! Act IV – Occupancy & Profiling: the occupancy calculator (compute's pure core, in WASM)
//! with its sweep chart, and the Nsight Compute library: CSV exports and `.ncu-rep` reports
//! imported through the compute service (kept on disk, so they survive restarts), the seven
//! panels per kernel with screenshots attached to them, and the comparison of two reports.
//! Another page opens an import here by leaving its ID in `sessionStorage`
//! ([`OPEN_IMPORT_KEY`]) before it navigates to this page.
//! File names, kernel names, metric names, rule messages and captions come from the user's
//! files and are shown as text only (never as markup).

use leptos::html::Canvas;
use leptos::prelude::*;
use showdown_core::ncu::{
    compare_panels, panels::shown_text, CalculatorLaunch, ImportSummary, KernelPanels, MetricValue,
    Panel, PanelDelta, Screenshot, MAX_SCREENSHOT_BYTES,
};
use showdown_core::occupancy::{
    carveout_explanation, occupancy, parse_cc, parse_field, sweep_block_size, GpuLimits,
    OccupancyInput, OccupancyOutput, SUPPORTED_COMPUTE_CAPABILITIES,
};
use showdown_core::protocol::NcuRepImportRequest;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::bridge;
use crate::charts::{self, LineChart, Series, COLORS};

mod calculator;
mod compare;
mod library;
mod panels;
mod shot_viewer;

use calculator::*;
use compare::*;
use library::*;
use panels::*;
use shot_viewer::*;

/// The Act IV page.
#[component]
pub fn ProfilingPage() -> impl IntoView {
    provide_context(CalculatorRequest(RwSignal::new(None)));
    view! {
        <h2>"Act IV · Occupancy & Profiling"</h2>
        <Calculator/>
        <NcuLibrary/>
    }
}
