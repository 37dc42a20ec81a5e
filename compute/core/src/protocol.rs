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

pub mod strict;

pub use strict::{parse_envelope, parse_request, parse_request_value};

use crate::error::ErrorKind;
use crate::occupancy::OccupancyInput;
use crate::types::{DuelConfig, DuelEvent, DuelReport};

fn default_arch() -> String {
    "sm_90".into()
}

fn default_threads() -> u32 {
    256
}

fn default_sample_count() -> usize {
    64
}

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

/// [`Request::DatasetSamples`]: a page of real images of a data set with their labels;
/// answers [`DatasetSamples`](crate::types::DatasetSamples).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSamplesRequest {
    /// The data set's name (`mnist-sample`, `fashion-mnist`, `mnist`).
    pub dataset: String,
    /// The split (default `test`).
    #[serde(default)]
    pub split: crate::types::DataSplit,
    /// Index of the first image in the split (default 0).
    #[serde(default)]
    pub offset: usize,
    /// Images on the page (default 64, at most
    /// [`MAX_SAMPLES_PER_PAGE`](crate::types::MAX_SAMPLES_PER_PAGE)).
    #[serde(default = "default_sample_count")]
    pub count: usize,
}

/// [`Request::Duel`]: runs a duel (a job); answers a [`DuelOutcome`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DuelRequest {
    /// What to run.
    pub config: DuelConfig,
}

/// [`Request::Occupancy`]: theoretical occupancy of one kernel launch; answers an
/// [`OccupancyOutput`](crate::occupancy::OccupancyOutput).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OccupancyRequest {
    /// Compute capability: `9.0`, `90` or `sm_90`.
    pub cc: String,
    /// What the launch asks of an SM.
    pub input: OccupancyInput,
}

/// [`Request::KernelFacts`]: facts of our kernels compiled for `arch` (registers, shared and
/// local memory, occupancy at `threads` per block, PTX `mma` and SASS `HMMA` counts) of one
/// entry point or of a whole family (`name`); answers a list of
/// [`KernelFacts`](crate::kernel_panel::KernelFacts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelFactsRequest {
    /// Entry point (`conv_mma_fwd_f16`) or family (`train`).
    pub name: String,
    /// Architecture to compile for (default `sm_90`).
    #[serde(default = "default_arch")]
    pub arch: String,
    /// Threads per block for the occupancy (default 256).
    #[serde(default = "default_threads")]
    pub threads: u32,
}

/// [`Request::NcuImport`]: imports an ncu CSV export (details, raw or summary page) into the
/// library; answers its [`ImportSummary`](crate::ncu::ImportSummary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuImportRequest {
    /// The file's name, as the user chose it (folders are dropped).
    pub file_name: String,
    /// The file's text.
    pub text: String,
}

/// [`Request::NcuPanels`]: the seven panels of a saved import's kernels, each with its
/// screenshots, a page at a time; answers a list of [`KernelPanels`](crate::ncu::KernelPanels).
/// The import's summary says how many kernels there are in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuPanelsRequest {
    /// The import's ID.
    pub import: String,
    /// Only this kernel (default: every kernel).
    #[serde(default)]
    pub kernel: Option<u64>,
    /// The page's first kernel, counted from 0 in the import's order (default 0).
    #[serde(default)]
    pub offset: usize,
    /// Kernels on the page: 1 to [`MAX_PANELS_PAGE`]. Without it, every kernel from `offset`
    /// on, refused when they are more than [`MAX_PANELS_PAGE`] (a reply is never built over
    /// its budget).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The most kernels whose panels one [`NcuPanelsRequest`] answers (about 2 KiB of JSON each):
/// the reply's budget (issue 38: one call on a 60,000-kernel import answered 109 MB).
pub const MAX_PANELS_PAGE: usize = 2000;

/// [`Request::NcuAttach`]: attaches a screenshot (PNG or JPEG, decoded in full to check it) to
/// a panel of a saved import; answers the [`Screenshot`](crate::ncu::Screenshot).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuAttachRequest {
    /// The import's ID.
    pub import: String,
    /// One of [`PANEL_IDS`](crate::ncu::PANEL_IDS).
    pub panel: String,
    /// Only on this kernel's panel (default: every kernel's).
    #[serde(default)]
    pub kernel: Option<u64>,
    /// The image's file name.
    pub file_name: String,
    /// The image's bytes, base64 (standard alphabet, padded).
    pub image_base64: String,
    /// A caption.
    #[serde(default)]
    pub caption: Option<String>,
}

/// [`Request::NcuDetach`]: removes a screenshot from a saved import; answers [`Removed`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuDetachRequest {
    /// The import's ID.
    pub import: String,
    /// The screenshot's ID.
    pub screenshot: String,
}

/// [`Request::NcuRemove`]: removes a saved import and its screenshots; answers [`Removed`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuRemoveRequest {
    /// The import's ID.
    pub import: String,
}

/// [`Request::NcuScreenshot`]: a screenshot's image, to show it; answers a
/// [`ScreenshotImage`](crate::ncu::ScreenshotImage) (`{"mime": "image/png", "base64": ..}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuScreenshotRequest {
    /// The import's ID.
    pub import: String,
    /// The screenshot's ID.
    pub screenshot: String,
}

/// [`Request::Run`]: a saved duel's full report; answers its
/// [`DuelReport`](crate::types::DuelReport).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The run's ID.
    pub id: String,
}

/// [`Request::RunRemove`]: removes a saved duel; answers [`Removed`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRemoveRequest {
    /// The run's ID.
    pub id: String,
}

/// [`Request::RunCsv`]: a saved duel as CSV, one row per contestant per epoch; answers a
/// [`CsvExport`](crate::runs::CsvExport) (`{"file_name": .., "csv": ..}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCsvRequest {
    /// The run's ID.
    pub id: String,
}

/// The reply to [`Request::Cancel`]: `{"cancelled": true, "freed": true}` when a job was
/// running and has stopped, freeing the job slot, by the time of the reply (the service waits
/// a bounded time for it); `{"cancelled": false}` when none was running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cancelled {
    /// Whether a job was running (and was asked to stop).
    pub cancelled: bool,
    /// Whether the cancelled job had stopped and freed the job slot when the reply was sent
    /// (`false`: it is still stopping; the next job may be refused as busy for a moment).
    /// Absent when no job was running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freed: Option<bool>,
}

/// The reply to a removal (`ncu_detach`, `ncu_remove`, `run_remove`): `{"removed": true}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removed {
    /// Always `true` (a removal that fails answers an error).
    pub removed: bool,
}

/// The reply to [`Request::Duel`]: the report, and where it was kept in the run history. On the
/// wire the report's own fields, plus `saved_run` and (when saving failed) `save_note`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuelOutcome {
    /// The duel's report.
    #[serde(flatten)]
    pub report: DuelReport,
    /// The run history's ID of this duel; `None` when it could not be saved.
    #[serde(default)]
    pub saved_run: Option<String>,
    /// Why the duel was not saved (the result is answered all the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_note: Option<String>,
}

/// [`Request::DataFetch`]: downloads data set `dataset` (only `mnist` is downloadable) into
/// the service's data folder (a job); answers [`DataFetched`]. The mirrors and the files'
/// SHA-256 digests are the service's own (built in, or from its environment), never the
/// request's: a remote page cannot make the server fetch an address of its choosing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataFetchRequest {
    /// The data set's name (`mnist`).
    pub dataset: String,
}

fn default_lab_rows() -> usize {
    8192
}

fn default_lab_cols() -> usize {
    4096
}

fn default_kernel_reps() -> usize {
    100
}

fn default_kernel_ops() -> Vec<crate::bench::kernels::Op> {
    crate::bench::kernels::Op::ALL.to_vec()
}

fn default_kernel_dtypes() -> Vec<crate::bench::kernels::LabDtype> {
    vec![
        crate::bench::kernels::LabDtype::F32,
        crate::bench::kernels::LabDtype::F16,
    ]
}

fn default_ladder_batch() -> usize {
    1024
}

fn default_ladder_reps() -> usize {
    20
}

fn default_cpu_batch() -> usize {
    8
}

fn default_dataset() -> String {
    "mnist-sample".into()
}

fn default_infer_activations() -> Vec<crate::model::Activation> {
    vec![
        crate::model::Activation::Relu,
        crate::model::Activation::Gelu,
        crate::model::Activation::Swish,
    ]
}

fn default_infer_batches() -> Vec<usize> {
    vec![1, 32, 128, 1024]
}

fn default_one() -> usize {
    1
}

fn default_infer_train_limit() -> Option<usize> {
    Some(2048)
}

fn default_budget_ms() -> f64 {
    300.0
}

fn default_max_reps() -> usize {
    2000
}

fn default_anatomy_precisions() -> Vec<crate::types::Precision> {
    vec![crate::types::Precision::Fp32, crate::types::Precision::Fp16]
}

fn default_batch() -> usize {
    128
}

fn default_anatomy_steps() -> usize {
    20
}

/// [`Request::KernelBench`]: the activation and norm kernels on this GPU; answers a
/// [`Saved`](crate::lab::Saved) [`KernelsBench`](crate::bench::kernels::KernelsBench).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelBenchRequest {
    /// Rows of the timed matrix (default 8192).
    #[serde(default = "default_lab_rows")]
    pub rows: usize,
    /// Columns of the timed matrix (default 4096).
    #[serde(default = "default_lab_cols")]
    pub cols: usize,
    /// The ops (default all; each once).
    #[serde(default = "default_kernel_ops", deserialize_with = "strict::unique")]
    pub ops: Vec<crate::bench::kernels::Op>,
    /// The dtypes (default f32 and f16; each once).
    #[serde(default = "default_kernel_dtypes", deserialize_with = "strict::unique")]
    pub dtypes: Vec<crate::bench::kernels::LabDtype>,
    /// Timed repetitions per kernel (default 100).
    #[serde(default = "default_kernel_reps")]
    pub reps: usize,
    /// Run PyTorch eager and torch.compile beside ours when a CUDA-enabled torch is found.
    #[serde(default)]
    pub peers: bool,
}

impl Default for KernelBenchRequest {
    fn default() -> Self {
        KernelBenchRequest {
            rows: default_lab_rows(),
            cols: default_lab_cols(),
            ops: default_kernel_ops(),
            dtypes: default_kernel_dtypes(),
            reps: default_kernel_reps(),
            peers: false,
        }
    }
}

/// [`Request::ConvLadder`]: the convolution ladder; answers a [`Saved`](crate::lab::Saved)
/// [`ConvBench`](crate::bench::conv::ConvBench).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConvLadderRequest {
    /// Images per GPU pass (default 1024).
    #[serde(default = "default_ladder_batch")]
    pub batch: usize,
    /// Layers (`lab_conv1`, `lab_conv2`, `lenet_c1`, `lenet_c3`; default all; each once).
    #[serde(default, deserialize_with = "strict::unique")]
    pub layers: Vec<String>,
    /// Timed passes at most per GPU row (default 20).
    #[serde(default = "default_ladder_reps")]
    pub reps: usize,
    /// Images for the CPU rows (default 8).
    #[serde(default = "default_cpu_batch")]
    pub cpu_batch: usize,
    /// `auto` (the GPU rows where there is a GPU, always the CPU rows), `cpu` (the CPU rows
    /// only) or `cuda` (an error without a GPU).
    #[serde(default)]
    pub backend: crate::types::BackendChoice,
    /// Data set whose test images feed the image layers (default `mnist-sample`).
    #[serde(default = "default_dataset")]
    pub dataset: String,
    /// Folder holding the data set's four standard IDX files (overrides the data set's own
    /// location, as [`DuelConfig::data_dir`](crate::types::DuelConfig::data_dir) does).
    #[serde(default)]
    pub data_dir: Option<String>,
    /// Run cuDNN through PyTorch beside ours when a CUDA-enabled torch is found.
    #[serde(default)]
    pub peers: bool,
}

impl Default for ConvLadderRequest {
    fn default() -> Self {
        ConvLadderRequest {
            batch: default_ladder_batch(),
            layers: Vec::new(),
            reps: default_ladder_reps(),
            cpu_batch: default_cpu_batch(),
            backend: crate::types::BackendChoice::Auto,
            dataset: default_dataset(),
            data_dir: None,
            peers: false,
        }
    }
}

/// [`Request::InferBench`]: inference latency of the CNN variants on this GPU; answers a
/// [`Saved`](crate::lab::Saved) [`InferenceReport`](crate::inference::InferenceReport).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferBenchRequest {
    /// Variants (default relu, gelu, swish; each once).
    #[serde(
        default = "default_infer_activations",
        deserialize_with = "strict::unique"
    )]
    pub activations: Vec<crate::model::Activation>,
    /// Batch sizes (default 1, 32, 128, 1024; each once; capped to the test split).
    #[serde(default = "default_infer_batches", deserialize_with = "strict::unique")]
    pub batches: Vec<usize>,
    /// Data set (default `mnist-sample`).
    #[serde(default = "default_dataset")]
    pub dataset: String,
    /// Epochs of the quick CPU train (default 1).
    #[serde(default = "default_one")]
    pub epochs: usize,
    /// Training images of the quick CPU train (default 2048; `null` for the whole split).
    #[serde(default = "default_infer_train_limit")]
    pub train_limit: Option<usize>,
    /// Time budget per row, ms (default 300; positive, at most 60,000).
    #[serde(
        default = "default_budget_ms",
        deserialize_with = "strict::positive_f64"
    )]
    pub budget_ms: f64,
    /// Timed passes at most per row (default 2000).
    #[serde(default = "default_max_reps")]
    pub max_reps: usize,
    /// Run PyTorch on the same weights beside ours when a CUDA-enabled torch is found.
    #[serde(default)]
    pub peers: bool,
    /// Batches at which the peer also times `torch.compile` (slow to compile; each once).
    #[serde(default, deserialize_with = "strict::unique")]
    pub compile_batches: Vec<usize>,
    /// Seed of the weights, shuffles and dropout of the quick train (default 0).
    #[serde(default)]
    pub seed: u64,
}

impl Default for InferBenchRequest {
    fn default() -> Self {
        InferBenchRequest {
            activations: default_infer_activations(),
            batches: default_infer_batches(),
            dataset: default_dataset(),
            epochs: 1,
            train_limit: default_infer_train_limit(),
            budget_ms: default_budget_ms(),
            max_reps: default_max_reps(),
            peers: false,
            compile_batches: Vec::new(),
            seed: 0,
        }
    }
}

fn default_crossover_precisions() -> Vec<crate::types::Precision> {
    crate::bench::crossover::ORDER.to_vec()
}

fn default_true() -> bool {
    true
}

/// The crossover's sizes: each once ([`strict::unique`]) and each within
/// [`MIN_SIZE`](crate::bench::crossover::MIN_SIZE)..=[`MAX_SIZE`](crate::bench::crossover::MAX_SIZE).
fn crossover_sizes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<usize>, D::Error> {
    let sizes: Vec<usize> = strict::unique(d)?;
    match CrossoverRequest::size_out_of_range(&sizes, crate::bench::crossover::MAX_SIZE) {
        Some(why) => Err(serde::de::Error::custom(why)),
        None => Ok(sizes),
    }
}

/// The crossover's precisions: each once and at least one.
fn crossover_precisions<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<crate::types::Precision>, D::Error> {
    let list: Vec<crate::types::Precision> = strict::unique(d)?;
    if list.is_empty() {
        return Err(serde::de::Error::custom(CROSSOVER_NO_PRECISION));
    }
    Ok(list)
}

/// Why an empty precision list is refused.
const CROSSOVER_NO_PRECISION: &str = "name at least one precision (fp32, tf32, bf16, fp16, fp8)";

/// [`Request::Crossover`]: the precision crossover; answers a [`Saved`](crate::lab::Saved)
/// [`CrossoverReport`](crate::bench::crossover::CrossoverReport).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossoverRequest {
    /// Square sizes `N` (each once, 16 to 16384, at most 4096 on the CPU); empty for the
    /// backend's defaults ([`GPU_SIZES`](crate::bench::crossover::GPU_SIZES),
    /// [`CPU_SIZES`](crate::bench::crossover::CPU_SIZES)).
    #[serde(default, deserialize_with = "crossover_sizes")]
    pub sizes: Vec<usize>,
    /// The precisions (default all five; each once; at least one). A precision the device
    /// cannot run is reported skipped with the reason.
    #[serde(
        default = "default_crossover_precisions",
        deserialize_with = "crossover_precisions"
    )]
    pub precisions: Vec<crate::types::Precision>,
    /// `auto` (the GPU when usable, else the CPU, saying why), `cpu` or `cuda`.
    #[serde(default)]
    pub backend: crate::types::BackendChoice,
    /// Run PyTorch (`torch.matmul`, `torch._scaled_mm`) at the same sizes when a
    /// CUDA-enabled torch is found.
    #[serde(default)]
    pub include_peer: bool,
    /// Time the lab CNN's own GEMMs at batch 128 too (default true).
    #[serde(default = "default_true")]
    pub include_cnn: bool,
    /// On a GPU, time the lab CNN's whole training step per precision at batches 128, 512,
    /// 2048 and 8192 too, from the step anatomy (default true; the CPU leaves it out, saying
    /// why).
    #[serde(default = "default_true")]
    pub include_steps: bool,
}

impl Default for CrossoverRequest {
    fn default() -> Self {
        CrossoverRequest {
            sizes: Vec::new(),
            precisions: default_crossover_precisions(),
            backend: crate::types::BackendChoice::Auto,
            include_peer: false,
            include_cnn: true,
            include_steps: true,
        }
    }
}

impl CrossoverRequest {
    /// Why a size of `sizes` is refused (below the minimum or above `max`), or `None`.
    pub fn size_out_of_range(sizes: &[usize], max: usize) -> Option<String> {
        use crate::bench::crossover::MIN_SIZE;
        sizes
            .iter()
            .find(|&&n| !(MIN_SIZE..=max).contains(&n))
            .map(|n| format!("{n} is out of range: each size must be {MIN_SIZE} to {max}"))
    }

    /// Checks the fields for a sweep on the CPU (`cpu`, sizes at most
    /// [`MAX_CPU_SIZE`](crate::bench::crossover::MAX_CPU_SIZE)) or a GPU, naming the first
    /// that is wrong: a request built in code (the CLI) meets the parser's rules here.
    pub fn validate(&self, cpu: bool) -> Result<(), crate::error::ComputeError> {
        use crate::bench::crossover::{MAX_CPU_SIZE, MAX_SIZE};
        use crate::error::ComputeError;
        strict::check_unique("sizes", &self.sizes)?;
        strict::check_unique("precisions", &self.precisions)?;
        if self.precisions.is_empty() {
            return Err(ComputeError::bad_arg(
                "precisions",
                "[]",
                CROSSOVER_NO_PRECISION,
            ));
        }
        let max = if cpu { MAX_CPU_SIZE } else { MAX_SIZE };
        if let Some(why) = Self::size_out_of_range(&self.sizes, max) {
            let on = if cpu { " on the CPU" } else { "" };
            let bad = self
                .sizes
                .iter()
                .find(|&&n| !(crate::bench::crossover::MIN_SIZE..=max).contains(&n))
                .map_or(String::new(), |n| n.to_string());
            return Err(ComputeError::bad_arg("sizes", bad, format!("{why}{on}")));
        }
        Ok(())
    }

    /// The sizes to run: the request's, ascending, or the backend's defaults.
    pub fn sizes_for(&self, cpu: bool) -> Vec<usize> {
        let mut v = if self.sizes.is_empty() {
            if cpu {
                crate::bench::crossover::CPU_SIZES.to_vec()
            } else {
                crate::bench::crossover::GPU_SIZES.to_vec()
            }
        } else {
            self.sizes.clone()
        };
        v.sort_unstable();
        v
    }
}

/// [`Request::StepAnatomy`]: one training step replayed with every launch timed on its own,
/// per precision; answers a [`Saved`](crate::lab::Saved)
/// [`StepAnatomy`](crate::bench::anatomy::StepAnatomy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepAnatomyRequest {
    /// The contestants (default fp32 and fp16; each once; the CPU backend runs fp32 and
    /// fp16).
    #[serde(
        default = "default_anatomy_precisions",
        deserialize_with = "strict::unique"
    )]
    pub precisions: Vec<crate::types::Precision>,
    /// `auto`, `cpu` or `cuda`.
    #[serde(default)]
    pub backend: crate::types::BackendChoice,
    /// Data set the batches come from (default `mnist-sample`).
    #[serde(default = "default_dataset")]
    pub dataset: String,
    /// Folder holding the data set's four standard IDX files (overrides the data set's own
    /// location, as [`DuelConfig::data_dir`](crate::types::DuelConfig::data_dir) does).
    #[serde(default)]
    pub data_dir: Option<String>,
    /// Images per step (default 128).
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// Steps timed per contestant; each launch's figures are medians over them (default 20).
    #[serde(default = "default_anatomy_steps")]
    pub steps: usize,
    /// The CNN variant (default relu).
    #[serde(default)]
    pub activation: crate::model::Activation,
}

impl Default for StepAnatomyRequest {
    fn default() -> Self {
        StepAnatomyRequest {
            precisions: default_anatomy_precisions(),
            backend: crate::types::BackendChoice::Auto,
            dataset: default_dataset(),
            data_dir: None,
            batch: default_batch(),
            steps: default_anatomy_steps(),
            activation: crate::model::Activation::default(),
        }
    }
}

/// [`Request::Profile`]: Nsight Compute on one target of this service's own program; answers
/// a [`ProfileOutcome`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileRequest {
    /// What to profile (an object, `{"target":"kernel",...}`).
    #[serde(deserialize_with = "strict::object")]
    pub what: crate::lab::ProfileTarget,
    /// ncu sections (default [`DEFAULT_SECTIONS`](crate::lab::DEFAULT_SECTIONS); each once).
    #[serde(default, deserialize_with = "strict::unique")]
    pub sections: Vec<String>,
}

/// The reply to [`Request::Profile`]: the import it made and the command that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileOutcome {
    /// The new import in the library (open its panels in Act IV).
    pub import: crate::ncu::ImportSummary,
    /// The ncu command line that ran, for the user to repeat.
    pub command: String,
}

/// [`Request::NcuRepImport`]: a `.ncu-rep` report, exported through `ncu --import` and kept in
/// the library; answers its [`ImportSummary`](crate::ncu::ImportSummary). Without ncu the
/// error names the exact command to run elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuRepImportRequest {
    /// The file's name, as the user chose it.
    pub file_name: String,
    /// The report's bytes, base64 (standard alphabet, padded).
    pub base64: String,
}

/// [`Request::LabRun`]: a saved lab run; answers its [`LabRun`](crate::lab::LabRun).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabRunRequest {
    /// The run's ID.
    pub id: String,
}

/// [`Request::LabRunRemove`]: removes a saved lab run; answers [`Removed`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabRunRemoveRequest {
    /// The run's ID.
    pub id: String,
}

/// [`Request::LabRunCsv`]: a saved lab run as CSV; answers a
/// [`CsvExport`](crate::runs::CsvExport).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabRunCsvRequest {
    /// The run's ID.
    pub id: String,
}

/// [`Request::PeerSetPython`]: the Python interpreter for the PyTorch peer (a path or a name
/// on PATH); `null` goes back to `$SHOWDOWN_PYTHON` or `python3`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerSetPythonRequest {
    /// The interpreter, or `None`.
    pub python: Option<String>,
}

/// One file of a [`DataFetched`] reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchedFile {
    /// The file's name (`train-images-idx3-ubyte.gz`).
    pub name: String,
    /// Where it is on the service's machine.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The mirror it came from, or `cached` when it was already there with the right SHA-256.
    pub from: String,
}

/// The reply to [`Request::DataFetch`]: the data set as [`ListDatasets`](Request::ListDatasets)
/// now lists it (available, and where it is read from) and its files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataFetched {
    /// The data set after the download.
    pub dataset: crate::types::DatasetSummary,
    /// Each file, verified.
    pub files: Vec<FetchedFile>,
}

/// Progress of a [`Request::DataFetch`] job: `{"type":"bytes","file":..,"bytes":..}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FetchProgress {
    /// File `index` of `files` (1-based) starts downloading from `mirror`.
    Started {
        /// The file's name.
        file: String,
        /// Its place in the list, from 1.
        index: usize,
        /// Files in the list.
        files: usize,
        /// The mirror's base URL.
        mirror: String,
    },
    /// `bytes` of the file received so far (a tick: a door may thin these out).
    Bytes {
        /// The file's name.
        file: String,
        /// Bytes received so far.
        bytes: u64,
        /// The file's size, when the mirror says it.
        total: Option<u64>,
    },
    /// A mirror failed for the file (unreachable, an HTTP error, a wrong SHA-256): nothing of
    /// it was kept and the next mirror is tried.
    MirrorFailed {
        /// The file's name.
        file: String,
        /// The mirror's base URL.
        mirror: String,
        /// What went wrong.
        reason: String,
    },
    /// File `index` of `files` is in place with the right SHA-256.
    Done {
        /// The file's name.
        file: String,
        /// Its place in the list, from 1.
        index: usize,
        /// Files in the list.
        files: usize,
        /// Its size in bytes.
        bytes: u64,
        /// The mirror it came from, or `cached` when it was already there.
        from: String,
    },
}

/// The largest request a door accepts, in bytes of its JSON: the body of an HTTP `/api` call
/// (413 above it). Room for the largest screenshot an `ncu_attach` may carry (20 MiB, 26.7 MiB
/// in base64) and an ncu CSV of that size.
pub const MAX_REQUEST_BYTES: usize = 32 << 20;

/// What a stdio line holds beyond its request: the [`Envelope`] around it
/// (`{"id":18446744073709551615,"request":` and `}`) and the fields its encoding spells out
/// that the client left to their defaults.
pub const ENVELOPE_ROOM_BYTES: usize = 64 << 10;

/// The longest line the stdio door reads, its newline not counted: a request of
/// [`MAX_REQUEST_BYTES`] in its [`Envelope`]. A longer line is answered with an error for id
/// 0 (its id unread), so a client that wraps requests (the supervisor of `serve --http` and of
/// the desktop shell) refuses a request whose line would be longer before sending it.
pub const MAX_LINE_BYTES: usize = MAX_REQUEST_BYTES + ENVELOPE_ROOM_BYTES;

/// One request with the client's id, echoed in every [`Reply`] about it: a line of the stdio
/// sidecar, `{"id":7,"request":{"op":"model_summary"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// Chosen by the client; 0 is what the server uses when a line's id cannot be read.
    pub id: u64,
    /// What to do.
    pub request: Request,
}

/// One message from the server about request `id`: `{"id":N,"ok":RESULT}`,
/// `{"id":N,"error":{"code":..,"message":..}}` or `{"id":N,"event":EVENT}`. A request gets any
/// number of events, then exactly one `ok` or `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// The request's id (0 for a line whose id could not be read).
    pub id: u64,
    /// The message; its variant name is the JSON key next to `id`.
    #[serde(flatten)]
    pub body: ReplyBody,
}

/// What a [`Reply`] carries, serialized as one key: `ok`, `error` or `event`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyBody {
    /// The request succeeded; the result is the operation's report as JSON.
    Ok(serde_json::Value),
    /// The request failed.
    Error(ApiError),
    /// Progress of a long job; more messages follow.
    Event(Event),
}

impl Reply {
    /// A success.
    pub fn ok(id: u64, value: serde_json::Value) -> Self {
        Reply {
            id,
            body: ReplyBody::Ok(value),
        }
    }

    /// A failure.
    pub fn error(id: u64, error: ApiError) -> Self {
        Reply {
            id,
            body: ReplyBody::Error(error),
        }
    }

    /// A progress event.
    pub fn event(id: u64, event: Event) -> Self {
        Reply {
            id,
            body: ReplyBody::Event(event),
        }
    }

    /// Whether this is the last message about its request (`ok` or `error`).
    pub fn is_final(&self) -> bool {
        !matches!(self.body, ReplyBody::Event(_))
    }
}

/// An error as the doors carry it: a machine-readable code and a sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiError {
    /// Error class.
    pub code: ErrorKind,
    /// What went wrong, naming the file, flag or field.
    pub message: String,
}

impl ApiError {
    /// An error of class `code`.
    pub fn new(code: ErrorKind, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }

    /// A [`ErrorKind::BadInput`] error: what the user gave is wrong.
    pub fn bad_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadInput, message)
    }

    /// A [`ErrorKind::Runtime`] error: the machine, a device or a process failed.
    pub fn runtime(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Runtime, message)
    }

    /// A [`ErrorKind::Busy`] error: another job is running.
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Busy, message)
    }

    /// A [`ErrorKind::Cancelled`] error: the user stopped the job.
    pub fn cancelled(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Cancelled, message)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

impl From<&crate::error::ComputeError> for ApiError {
    fn from(e: &crate::error::ComputeError) -> Self {
        ApiError {
            code: e.kind(),
            message: e.message_for_service(),
        }
    }
}

/// An event of a job, tagged by the job's stream: `{"stream":"duel","event":{...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stream", rename_all = "snake_case")]
pub enum Event {
    /// Duel progress.
    Duel {
        /// The progress.
        event: DuelEvent,
    },
    /// Data-set download progress.
    DataFetch {
        /// The progress.
        event: FetchProgress,
    },
    /// Progress of a lab job (kernel bench, ladder, inference, step anatomy, profile).
    Lab {
        /// The progress.
        event: crate::lab::LabProgress,
    },
    /// An NVML reading of the GPU while a GPU job runs (a tick).
    Telemetry {
        /// The reading (`t_ms` from the job's start).
        sample: crate::types::TelemetrySample,
    },
}

impl Event {
    /// Whether this is a frequent progress tick (a training step) that a door may thin out;
    /// boundaries (a contestant or an epoch starting or ending) are never dropped.
    pub fn is_tick(&self) -> bool {
        match self {
            Event::Duel { event } => matches!(event, DuelEvent::Step { .. }),
            Event::DataFetch { event } => matches!(event, FetchProgress::Bytes { .. }),
            // Stages are boundaries; telemetry is already paced by its sampler (5 Hz) and
            // must not compete with a duel's steps for the tick budget.
            Event::Lab { .. } | Event::Telemetry { .. } => false,
        }
    }
}

#[cfg(test)]
mod tests;

/// Where Act I's digit comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case", deny_unknown_fields)]
pub enum DigitSource {
    /// An image of a data set.
    Dataset {
        /// The data set's name (`mnist-sample`, `fashion-mnist`, `mnist`).
        dataset: String,
        /// The split (default `test`).
        #[serde(default)]
        split: crate::types::DataSplit,
        /// The image's index in the split.
        index: usize,
    },
    /// A drawing: `side × side` grey bytes (0 background, 255 ink), row-major, in standard
    /// padded base64; centred and scaled as MNIST's digits are
    /// ([`centre_digit`](crate::explain::centre_digit)) before the forward pass.
    Drawn {
        /// The drawing's side in pixels (at most [`MAX_DRAWING_SIDE`]).
        side: usize,
        /// The grey bytes.
        pixels_base64: String,
    },
}

/// [`ExplainRequest::run`] naming the initial weights (seed 0) instead of a saved duel.
pub const INITIAL_WEIGHTS: &str = "initial";

/// The largest drawing [`DigitSource::Drawn`] takes.
pub const MAX_DRAWING_SIDE: usize = 512;

/// [`Request::Explain`]: the forward pass of a saved duel's models on one digit; answers an
/// [`ExplainReport`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainRequest {
    /// The saved duel whose models to use, or [`INITIAL_WEIGHTS`] for the untrained initial
    /// weights (seed 0); by default the newest duel that kept a model trained on the image's
    /// data set ([`newest_model_for`](crate::explain::matching::newest_model_for)), and the
    /// initial weights, with [`ExplainReport::no_model_for`] set, when there is none.
    #[serde(default)]
    pub run: Option<String>,
    /// The contestants to show (default: every model the run kept; each once).
    #[serde(default, deserialize_with = "strict::unique")]
    pub precisions: Vec<crate::types::Precision>,
    /// The digit (an object, `{"from":"dataset",...}`).
    #[serde(deserialize_with = "strict::object")]
    pub digit: DigitSource,
    /// The backend whose kernels check the forward pass (default `auto`: the GPU when there
    /// is one and it runs the precision, else the CPU).
    #[serde(default)]
    pub backend: crate::types::BackendChoice,
}

/// [`Request::Explain`]'s answer: every layer of each chosen model on the digit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplainReport {
    /// The saved duel the models come from (`None`: the initial weights).
    pub run: Option<String>,
    /// Where the models come from, in words.
    pub model_source: String,
    /// The image's data set, whose class names [`ExplainReport::class_names`] are (a drawing:
    /// the digits it imitates, `mnist-sample`, or `mnist` when the models were trained on it).
    pub dataset: String,
    /// The class names of the image's data set (Fashion-MNIST's garments for a Fashion image).
    pub class_names: Vec<String>,
    /// The data set the models were trained on (`None`: the untrained initial weights).
    #[serde(default)]
    pub trained_on: Option<String>,
    /// How the models fit the image (`None`: untrained).
    #[serde(default)]
    pub fit: Option<crate::explain::matching::Fit>,
    /// The models' data set against the image's, in words
    /// ([`fit_note`](crate::explain::matching::fit_note)): a warning when they were trained on
    /// other images.
    #[serde(default)]
    pub fit_note: String,
    /// Set when no saved duel kept a model trained on the image's data set (the models shown
    /// are then the untrained initial weights): the data set a short duel would train on
    /// ([`short_duel`](crate::explain::matching::short_duel)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_model_for: Option<String>,
    /// The names of the models' output classes where they are not the image's (a model chosen
    /// by hand that was trained on another data set); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_class_names: Vec<String>,
    /// The digit's label, for a data-set image.
    pub label: Option<u8>,
    /// The 28×28 grey digit the models saw (a drawing after centring), base64.
    pub digit_base64: String,
    /// The normalisation applied: `(p/255 − mean) / std`.
    pub mean: f32,
    /// See [`ExplainReport::mean`].
    pub std: f32,
    /// One entry per model, in the order asked.
    pub models: Vec<crate::explain::ModelActivations>,
    /// The models' weights (same order), for the filters and the convolution at a pixel.
    pub weights: Vec<crate::explain::ModelWeights>,
}
