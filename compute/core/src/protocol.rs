//! Messages spoken by every door (stdio sidecar, HTTP, Tauri): one request, one reply, and
//! events for long jobs. Defined once here and shared with the UI.
//!
//! On the stdio sidecar every line from the client is an [`Envelope`] and every line from the
//! server is a [`Reply`]:
//!
//! ```text
//! -> {"id":1,"request":{"op":"doctor"}}
//! <- {"id":1,"ok":{ ...DoctorReport... }}
//! -> {"id":2,"request":{"op":"duel","config":{"backend":"cpu","train_limit":256}}}
//! <- {"id":2,"event":{"stream":"duel","event":{"type":"run_started", ...}}}
//! <- {"id":2,"error":{"code":"busy","message":"busy: a duel is already running; ..."}}
//! ```
//!
//! Over HTTP, `POST /api/call` takes a bare [`Request`] and answers the `ok` payload (or the
//! [`ApiError`] with a 4xx/5xx status); `POST /api/job` takes any [`Request`] too and streams
//! its [`Reply`]s (events, then the final `ok` or `error`) as Server-Sent Events. Through the
//! desktop shell, the `call` command takes the request and a channel for its events. No door
//! knows which operations stream: a [job](Op::JOB) simply sends events before its reply.
//!
//! Every door reads what it receives with one strict parser, [`parse_request`] (a bare
//! request) or [`parse_envelope`] (a stdio line): every struct must be a JSON object, every
//! number within its type's range and rule, no list may name an item twice, no object a key
//! twice; its errors name the field by its path (`config.lr: must be a positive finite
//! number...`). See [`strict`].

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

mod data;
mod duel;
mod explain;
mod lab;
mod profiling;
pub mod strict;
mod wire;

pub use data::*;
pub use duel::*;
pub use explain::*;
pub use lab::*;
pub use profiling::*;
pub use strict::{parse_envelope, parse_request, parse_request_value};
pub use wire::*;

#[cfg(doc)]
use crate::types::DuelConfig;

/// One operation of the compute service, typed by what it answers: the request struct is the
/// payload of a [`Request`] variant and [`Op::Reply`] is its reply, so a caller of a typed door
/// (the UI's bridge, the CLI) gets the right type at compile time.
pub trait Op: Serialize + DeserializeOwned + Into<Request> {
    /// What the service answers.
    type Reply: Serialize + DeserializeOwned;
    /// The operation's wire name (`"duel"`), the `op` tag of its [`Request`].
    const NAME: &'static str;
    /// Whether this operation is a *job*: long-running, one at a time, with progress
    /// [`Event`]s and [`Request::Cancel`].
    const JOB: bool = false;
}

/// Declares the requests: each line names the [`Request`] variant, its payload struct and its
/// reply type (and `job` for a long-running one).
macro_rules! ops {
    ($( $(#[$doc:meta])* $variant:ident($op:ident) -> $reply:ty $(, $job:ident)?; )*) => {
        /// A request to the compute service; its payload states its reply type through [`Op`].
        /// On the wire: `{"op":"snake_case_name", ...payload fields}`; a field its payload
        /// does not have is refused, naming it (payloads and [`DuelConfig`] are strict).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "op", rename_all = "snake_case")]
        pub enum Request {
            $( $(#[$doc])* $variant($op), )*
        }

        $(
            impl Op for $op {
                type Reply = $reply;
                const NAME: &'static str = ops!(@name $variant);
                $(const JOB: bool = ops!(@job $job);)?
            }

            impl From<$op> for Request {
                fn from(op: $op) -> Request {
                    Request::$variant(op)
                }
            }
        )*

        impl Request {
            /// Every operation's wire name, in the order declared.
            pub const NAMES: &'static [&'static str] = &[ $( ops!(@name $variant), )* ];

            /// The strict parser of operation `op`'s payload ([`strict`]), or `None` when no
            /// operation has that name.
            #[allow(clippy::type_complexity)]
            fn payload_parser(
                op: &str,
            ) -> Option<fn(&str, serde_json::Value) -> std::result::Result<Request, String>> {
                match op {
                    $( ops!(@name $variant) => Some(Request::parse_payload::<$op>), )*
                    _ => None,
                }
            }

            /// The operation's wire name (`"duel"`, `"doctor"`…).
            pub fn name(&self) -> &'static str {
                match self {
                    $( Request::$variant(_) => <$op as Op>::NAME, )*
                }
            }

            /// Whether this request is a job (see [`Op::JOB`]).
            pub fn is_job(&self) -> bool {
                match self {
                    $( Request::$variant(_) => <$op as Op>::JOB, )*
                }
            }
        }
    };
    (@job job) => { true };
    (@name Doctor) => { "doctor" };
    (@name ListDatasets) => { "list_datasets" };
    (@name ModelSummary) => { "model_summary" };
    (@name DatasetSamples) => { "dataset_samples" };
    (@name Duel) => { "duel" };
    (@name Occupancy) => { "occupancy" };
    (@name KernelFacts) => { "kernel_facts" };
    (@name Cancel) => { "cancel" };
    (@name NcuImports) => { "ncu_imports" };
    (@name NcuExample) => { "ncu_example" };
    (@name NcuImport) => { "ncu_import" };
    (@name NcuPanels) => { "ncu_panels" };
    (@name NcuAttach) => { "ncu_attach" };
    (@name NcuDetach) => { "ncu_detach" };
    (@name NcuRemove) => { "ncu_remove" };
    (@name NcuScreenshot) => { "ncu_screenshot" };
    (@name Runs) => { "runs" };
    (@name Run) => { "run" };
    (@name RunRemove) => { "run_remove" };
    (@name RunCsv) => { "run_csv" };
    (@name Verdict) => { "verdict" };
    (@name VerdictHtml) => { "verdict_html" };
    (@name DataFetch) => { "data_fetch" };
    (@name KernelBench) => { "kernel_bench" };
    (@name ConvLadder) => { "conv_ladder" };
    (@name InferBench) => { "infer_bench" };
    (@name StepAnatomy) => { "step_anatomy" };
    (@name Crossover) => { "crossover" };
    (@name Profile) => { "profile" };
    (@name NcuRepImport) => { "ncu_rep_import" };
    (@name LabRuns) => { "lab_runs" };
    (@name LabRun) => { "lab_run" };
    (@name LabRunRemove) => { "lab_run_remove" };
    (@name LabRunCsv) => { "lab_run_csv" };
    (@name PeerStatus) => { "peer_status" };
    (@name PeerSetPython) => { "peer_set_python" };
    (@name PeerPythons) => { "peer_pythons" };
    (@name GpuState) => { "gpu_state" };
    (@name Explain) => { "explain" };
    (@name JobStatus) => { "job_status" };
}

ops! {
    /// Machine, GPU and backend status.
    Doctor(DoctorRequest) -> crate::types::DoctorReport;
    /// The data sets and whether each is available.
    ListDatasets(ListDatasetsRequest) -> Vec<crate::types::DatasetSummary>;
    /// The lab CNN layer by layer.
    ModelSummary(ModelSummaryRequest) -> crate::model::ModelSummary;
    /// A page of real images of a data set with their labels.
    DatasetSamples(DatasetSamplesRequest) -> crate::types::DatasetSamples;
    /// Run a duel: a job; progress comes as [`Event::Duel`]s.
    Duel(DuelRequest) -> DuelOutcome, job;
    /// Theoretical occupancy of one kernel launch.
    Occupancy(OccupancyRequest) -> crate::occupancy::OccupancyOutput;
    /// Facts of our kernels compiled for an architecture (needs NVRTC and cuobjdump where the
    /// service runs, not a GPU).
    KernelFacts(KernelFactsRequest) -> Vec<crate::kernel_panel::KernelFacts>;
    /// Cancel the running job, if any.
    Cancel(CancelRequest) -> Cancelled;
    /// The saved Nsight Compute imports with their screenshots (damaged parts left out are
    /// named in `skipped`).
    NcuImports(NcuImportsRequest) -> crate::ncu::ImportList;
    /// Imports an ncu CSV export and keeps it in the library.
    NcuImport(NcuImportRequest) -> crate::ncu::ImportSummary;
    /// Adds the example report to the library: a real Nsight Compute export of our activation
    /// kernels on an H100, so Act IV's panels are there before the user has profiled anything.
    NcuExample(NcuExampleRequest) -> crate::ncu::ImportSummary;
    /// The seven panels of a saved import's kernels, each with its screenshots.
    NcuPanels(NcuPanelsRequest) -> Vec<crate::ncu::KernelPanels>;
    /// Attaches a screenshot to a panel of a saved import.
    NcuAttach(NcuAttachRequest) -> crate::ncu::Screenshot;
    /// Removes a screenshot from a saved import.
    NcuDetach(NcuDetachRequest) -> Removed;
    /// Removes a saved import and its screenshots.
    NcuRemove(NcuRemoveRequest) -> Removed;
    /// A screenshot's image, to show it.
    NcuScreenshot(NcuScreenshotRequest) -> crate::ncu::ScreenshotImage;
    /// The saved duels, newest first (files that cannot be read are named in `skipped`).
    Runs(RunsRequest) -> crate::runs::RunList;
    /// A saved duel's full report.
    Run(RunRequest) -> crate::types::DuelReport;
    /// Removes a saved duel.
    RunRemove(RunRemoveRequest) -> Removed;
    /// A saved duel as CSV, one row per contestant per epoch.
    RunCsv(RunCsvRequest) -> crate::runs::CsvExport;
    /// Act V's summary of the machine and the newest duels.
    Verdict(VerdictRequest) -> crate::verdict::Verdict;
    /// The verdict as a self-contained HTML document.
    VerdictHtml(VerdictHtmlRequest) -> crate::verdict::HtmlExport;
    /// Download a data set (full MNIST) into the service's data folder from the mirrors the
    /// service's environment names, SHA-256-checked: a job; progress comes as
    /// [`Event::DataFetch`]s.
    DataFetch(DataFetchRequest) -> DataFetched, job;
    /// The activation and norm kernels on this GPU: checked against f64 on awkward shapes,
    /// then timed against the copy ceiling measured in the same job (a job; progress comes as
    /// [`Event::Lab`] and [`Event::Telemetry`]); PyTorch's rows beside them when asked and
    /// found. Kept in the run history.
    KernelBench(KernelBenchRequest) -> crate::lab::Saved<crate::bench::kernels::KernelsBench>, job;
    /// The convolution ladder on this GPU (rungs 1–5, cuDNN where found, this GPU's ceilings)
    /// and the CPU rows; on a machine without a GPU the CPU rows alone (a job).
    ConvLadder(ConvLadderRequest) -> crate::lab::Saved<crate::bench::conv::ConvBench>, job;
    /// Inference latency of the CNN variants on this GPU, launches and CUDA graph, per batch
    /// size, each variant's weights from a quick CPU train (a job).
    InferBench(InferBenchRequest) -> crate::lab::Saved<crate::inference::InferenceReport>, job;
    /// One training step replayed with every launch timed on its own, per precision (a job).
    StepAnatomy(StepAnatomyRequest) -> crate::lab::Saved<crate::bench::anatomy::StepAnatomy>, job;
    /// The precision crossover: the same GEMM at growing sizes in every precision (cuBLASLt
    /// on a GPU, the CPU backend's GEMMs without one) and the lab CNN's own GEMMs, each
    /// checked against f64, with where each precision starts to pay (a job).
    Crossover(CrossoverRequest) -> crate::lab::Saved<crate::bench::crossover::CrossoverReport>, job;
    /// Nsight Compute on one kernel, ladder rung or training step of this service's own
    /// program; the result imported into the library (a job).
    Profile(ProfileRequest) -> ProfileOutcome, job;
    /// Imports a `.ncu-rep` report through `ncu --import` (when ncu is installed).
    NcuRepImport(NcuRepImportRequest) -> crate::ncu::ImportSummary;
    /// The saved lab runs, newest first.
    LabRuns(LabRunsRequest) -> crate::lab::LabRunList;
    /// A saved lab run.
    LabRun(LabRunRequest) -> crate::lab::LabRun;
    /// Removes a saved lab run.
    LabRunRemove(LabRunRemoveRequest) -> Removed;
    /// A saved lab run as CSV.
    LabRunCsv(LabRunCsvRequest) -> crate::runs::CsvExport;
    /// Whether PyTorch can run beside the lab jobs, and how to enable it.
    PeerStatus(PeerStatusRequest) -> crate::lab::PeerStatus;
    /// Sets (or with `null` clears) the Python interpreter the peer runs with; answers the new
    /// status.
    PeerSetPython(PeerSetPythonRequest) -> crate::lab::PeerStatus;
    /// The interpreters this door lets a client choose for the peer, and whether it takes any
    /// other path (over HTTP it does not).
    PeerPythons(PeerPythonsRequest) -> crate::peer_pythons::PeerPythons;
    /// The GPU's state at rest: one NVML reading, or why there is none.
    GpuState(GpuStateRequest) -> crate::lab::GpuState;
    /// Act I: a saved model's forward pass on one digit (chosen from a data set or drawn),
    /// every layer's output, checked against the backend's own kernels.
    Explain(ExplainRequest) -> ExplainReport;
    /// Whether a job runs on the service now (Act II asks after a reload).
    JobStatus(JobStatusRequest) -> crate::runs::JobStatus;
}

/// Declares request payloads that carry no field (`{"op":"doctor"}`).
macro_rules! empty_requests {
    ($( $(#[$doc:meta])* $name:ident; )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
            #[serde(deny_unknown_fields)]
            pub struct $name {}
        )*
    };
}

empty_requests! {
    /// [`Request::Doctor`]: answers a [`DoctorReport`](crate::types::DoctorReport).
    DoctorRequest;
    /// [`Request::ListDatasets`]: answers a list of
    /// [`DatasetSummary`](crate::types::DatasetSummary).
    ListDatasetsRequest;
    /// [`Request::ModelSummary`]: answers the [`ModelSummary`](crate::model::ModelSummary).
    ModelSummaryRequest;
    /// [`Request::Cancel`]: cancels the running job, if any; answers [`Cancelled`].
    CancelRequest;
    /// [`Request::NcuImports`]: answers an [`ImportList`](crate::ncu::ImportList).
    NcuImportsRequest;
    /// [`Request::NcuExample`]: answers the example's
    /// [`ImportSummary`](crate::ncu::ImportSummary) (`example: true`).
    NcuExampleRequest;
    /// [`Request::Runs`]: answers a [`RunList`](crate::runs::RunList).
    RunsRequest;
    /// [`Request::Verdict`]: answers a [`Verdict`](crate::verdict::Verdict).
    VerdictRequest;
    /// [`Request::VerdictHtml`]: answers an [`HtmlExport`](crate::verdict::HtmlExport).
    VerdictHtmlRequest;
    /// [`Request::LabRuns`]: answers a [`LabRunList`](crate::lab::LabRunList).
    LabRunsRequest;
    /// [`Request::PeerStatus`]: answers a [`PeerStatus`](crate::lab::PeerStatus).
    PeerStatusRequest;
    /// [`Request::PeerPythons`]: answers [`PeerPythons`](crate::peer_pythons::PeerPythons).
    PeerPythonsRequest;
    /// [`Request::GpuState`]: answers a [`GpuState`](crate::lab::GpuState).
    GpuStateRequest;
    /// [`Request::JobStatus`]: answers a [`JobStatus`](crate::runs::JobStatus).
    JobStatusRequest;
}

#[cfg(test)]
mod tests;
