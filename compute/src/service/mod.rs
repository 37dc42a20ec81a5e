//! The compute service: one [`Service`] value owns the state (the job slot, the data set Act I
//! pages through, the data folder) and answers every [`Request`]; every door (the CLI, the
//! stdio sidecar, the HTTP server through its supervised sidecar, the desktop shell) holds one
//! and calls [`Service::handle`], or [`Service::call`] with a typed request.
//!
//! Each request's reply type is stated once, in the core ([`Op::Reply`]); the service answers
//! it through [`Serves`], so a handler returning another type does not compile. Jobs
//! ([`Op::JOB`]: the duel today) take the service's one job slot, stream progress events and
//! stop when [`Request::Cancel`] arrives.

mod jobs;
mod lab;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use crate::data::{self, Dataset};
use crate::error::{ComputeError, Result};
use crate::occupancy::{occupancy, parse_cc, GpuLimits};
use crate::protocol::*;
use crate::types::DuelEvent;

pub use crate::duel::{load_dataset, run_duel};
pub use crate::host::CUDA_BACKEND_READY;
use crate::sync::lock;
pub use jobs::{CancelOutcome, EventThrottle, JobSlot, SlotGuard};
pub use lab::{found_pythons, PEER_VENV_PYTHON};
pub use showdown_core::peer_pythons::{KnownPython, PeerPythons};

/// Most progress events per second a job passes on (boundaries always pass).
pub const EVENTS_PER_SECOND: u32 = 20;

/// Longest a `cancel` waits for the cancelled job to free the job slot before answering.
pub const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// What a handler gets besides its request: where progress goes and the cancel flag.
pub struct JobContext<'a> {
    /// Receives the job's progress events (already thinned to [`EVENTS_PER_SECOND`]).
    pub on_event: &'a mut dyn FnMut(Event),
    /// Set when the job should stop.
    pub cancel: &'a Arc<AtomicBool>,
}

impl JobContext<'_> {
    /// [`ComputeError::Cancelled`] once the job was asked to stop. A job checks it before it
    /// keeps or answers its result, so a cancelled job never answers `ok` nor saves a run.
    pub fn check_cancel(&self) -> Result<()> {
        if self.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            Err(ComputeError::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// Answers requests of type `O` with `O`'s reply type: one implementation per operation.
pub trait Serves<O: Op> {
    /// Runs `op`.
    fn serve(&self, op: O, job: &mut JobContext<'_>) -> Result<O::Reply>;
}

/// The compute service. Holds no process-global state: two services (two tests) never share a
/// job slot or a cache.
#[derive(Debug)]
pub struct Service {
    data_home: Option<PathBuf>,
    jobs: JobSlot,
    /// The data set [`Request::DatasetSamples`] read last: paging through it reads it once.
    sampled: Mutex<Option<Arc<Dataset>>>,
    /// The PyTorch interpreter's probes: one at a time per interpreter, results kept.
    probes: crate::lab::peers::ProbeCache,
}

impl Service {
    /// A service keeping its run history and imports in `data_home`.
    pub fn new(data_home: impl Into<PathBuf>) -> Self {
        Service {
            data_home: Some(data_home.into()),
            jobs: JobSlot::default(),
            sampled: Mutex::new(None),
            probes: Default::default(),
        }
    }

    /// A service with the data folder from the environment: `$SHOWDOWN_DATA_HOME`, else the
    /// user's data folder (the desktop shell points its sidecar's `SHOWDOWN_DATA_HOME` at the
    /// app's data folder). Without either, requests that need it answer an error saying so.
    pub fn from_env() -> Self {
        Service {
            data_home: crate::ncu_library::ImportStore::default_root(),
            jobs: JobSlot::default(),
            sampled: Mutex::new(None),
            probes: Default::default(),
        }
    }

    /// The job running now (`"duel"`), if any.
    pub fn running_job(&self) -> Option<&'static str> {
        self.jobs.running()
    }

    /// Asks the running job to stop; `false` when none is running.
    pub fn cancel_running(&self) -> bool {
        self.jobs.cancel()
    }

    /// Answers one request as JSON: the dispatcher every door calls. A job streams its
    /// progress through `on_event` (at most [`EVENTS_PER_SECOND`] ticks a second, boundaries
    /// always) and stops with [`ComputeError::Cancelled`] within one step once `cancel` is set
    /// or a [`Request::Cancel`] arrives from another thread.
    pub fn handle(
        &self,
        request: Request,
        on_event: &mut dyn FnMut(Event),
        cancel: &Arc<AtomicBool>,
    ) -> Result<serde_json::Value> {
        match request {
            Request::Doctor(op) => self.answer(op, on_event, cancel),
            Request::ListDatasets(op) => self.answer(op, on_event, cancel),
            Request::ModelSummary(op) => self.answer(op, on_event, cancel),
            Request::DatasetSamples(op) => self.answer(op, on_event, cancel),
            Request::Duel(op) => self.answer(op, on_event, cancel),
            Request::Occupancy(op) => self.answer(op, on_event, cancel),
            Request::KernelFacts(op) => self.answer(op, on_event, cancel),
            Request::Cancel(op) => self.answer(op, on_event, cancel),
            Request::NcuImports(op) => self.answer(op, on_event, cancel),
            Request::NcuImport(op) => self.answer(op, on_event, cancel),
            Request::NcuExample(op) => self.answer(op, on_event, cancel),
            Request::NcuPanels(op) => self.answer(op, on_event, cancel),
            Request::NcuAttach(op) => self.answer(op, on_event, cancel),
            Request::NcuDetach(op) => self.answer(op, on_event, cancel),
            Request::NcuRemove(op) => self.answer(op, on_event, cancel),
            Request::NcuScreenshot(op) => self.answer(op, on_event, cancel),
            Request::Runs(op) => self.answer(op, on_event, cancel),
            Request::Run(op) => self.answer(op, on_event, cancel),
            Request::RunRemove(op) => self.answer(op, on_event, cancel),
            Request::RunCsv(op) => self.answer(op, on_event, cancel),
            Request::Verdict(op) => self.answer(op, on_event, cancel),
            Request::VerdictHtml(op) => self.answer(op, on_event, cancel),
            Request::DataFetch(op) => self.answer(op, on_event, cancel),
            Request::KernelBench(op) => self.answer(op, on_event, cancel),
            Request::ConvLadder(op) => self.answer(op, on_event, cancel),
            Request::InferBench(op) => self.answer(op, on_event, cancel),
            Request::StepAnatomy(op) => self.answer(op, on_event, cancel),
            Request::Crossover(op) => self.answer(op, on_event, cancel),
            Request::Profile(op) => self.answer(op, on_event, cancel),
            Request::NcuRepImport(op) => self.answer(op, on_event, cancel),
            Request::LabRuns(op) => self.answer(op, on_event, cancel),
            Request::LabRun(op) => self.answer(op, on_event, cancel),
            Request::Explain(op) => self.answer(op, on_event, cancel),
            Request::LabRunRemove(op) => self.answer(op, on_event, cancel),
            Request::LabRunCsv(op) => self.answer(op, on_event, cancel),
            Request::PeerStatus(op) => self.answer(op, on_event, cancel),
            Request::PeerSetPython(op) => self.answer(op, on_event, cancel),
            Request::PeerPythons(op) => self.answer(op, on_event, cancel),
            Request::GpuState(op) => self.answer(op, on_event, cancel),
            Request::JobStatus(op) => self.answer(op, on_event, cancel),
        }
    }

    /// Runs a typed request: its reply as its own type (the CLI's door).
    pub fn call<O: Op>(
        &self,
        op: O,
        on_event: &mut dyn FnMut(Event),
        cancel: &Arc<AtomicBool>,
    ) -> Result<O::Reply>
    where
        Self: Serves<O>,
    {
        // A job holds the slot until it ends, however it ends.
        let _slot = if O::JOB {
            Some(self.jobs.take(O::NAME, cancel)?)
        } else {
            None
        };
        let mut throttle = EventThrottle::new(EVENTS_PER_SECOND);
        let mut thinned = |e: Event| {
            if throttle.pass(&e) {
                on_event(e);
            }
        };
        let mut job = JobContext {
            on_event: &mut thinned,
            cancel,
        };
        self.serve(op, &mut job)
    }

    fn answer<O: Op>(
        &self,
        op: O,
        on_event: &mut dyn FnMut(Event),
        cancel: &Arc<AtomicBool>,
    ) -> Result<serde_json::Value>
    where
        Self: Serves<O>,
    {
        to_json(&self.call(op, on_event, cancel)?)
    }

    /// The data folder, or the error saying how to set one.
    fn data_root(&self) -> Result<PathBuf> {
        self.data_home.clone().ok_or_else(|| {
            ComputeError::BadRequest(
                "this system has no user data folder: set SHOWDOWN_DATA_HOME".into(),
            )
        })
    }

    /// The library of saved imports, in the data folder.
    fn library(&self) -> Result<crate::ncu_library::ImportStore> {
        Ok(crate::ncu_library::ImportStore::open(self.data_root()?)?)
    }

    /// The run history, in the data folder beside the imports.
    fn run_store(&self) -> Result<crate::runs::RunStore> {
        Ok(crate::runs::RunStore::open(self.data_root()?)?)
    }

    /// A page of real images of data set `name` (one of [`data::DATASET_NAMES`]): what Act I
    /// draws. The data set read last is kept, so turning pages does not read it again.
    pub fn dataset_samples(
        &self,
        name: &str,
        split: crate::types::DataSplit,
        offset: usize,
        count: usize,
    ) -> Result<crate::types::DatasetSamples> {
        data::check_page(count)?;
        if !data::DATASET_NAMES.contains(&name) {
            return Err(ComputeError::bad_arg(
                "dataset",
                name,
                format!("expected one of {}", data::DATASET_NAMES.join(", ")),
            ));
        }
        let d = self.dataset(name)?;
        data::samples(&d, split, offset, count)
    }

    /// Data set `name`, read once and kept until another is asked for.
    fn dataset(&self, name: &str) -> Result<Arc<Dataset>> {
        if !data::DATASET_NAMES.contains(&name) {
            return Err(ComputeError::bad_arg(
                "dataset",
                name,
                format!("expected one of {}", data::DATASET_NAMES.join(", ")),
            ));
        }
        let cached = lock(&self.sampled).clone().filter(|d| d.name == name);
        Ok(match cached {
            Some(d) => d,
            None => {
                let d = Arc::new(data::load(name, None)?);
                *lock(&self.sampled) = Some(Arc::clone(&d));
                d
            }
        })
    }

    /// Act V's verdict: the doctor's report and the run history (a history that cannot be
    /// read becomes a note of the verdict, not an error).
    fn verdict(&self) -> crate::verdict::Verdict {
        let history = self
            .run_store()
            .and_then(|store| Ok(store.list()?))
            .unwrap_or_else(|e| crate::runs::RunList {
                runs: Vec::new(),
                skipped: vec![format!("the run history could not be read: {e}")],
            });
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        crate::verdict::Verdict::build(&crate::doctor::doctor(), history, now)
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<serde_json::Value> {
    serde_json::to_value(v).map_err(|e| ComputeError::Backend {
        backend: "service".into(),
        reason: format!("could not encode the reply as JSON: {e}"),
    })
}

/// A duel's report with where it was kept: its run ID, or why saving failed (the result is
/// answered all the same).
fn outcome(
    report: crate::types::DuelReport,
    saved: Result<crate::runs::RunSummary>,
) -> DuelOutcome {
    match saved {
        Ok(summary) => DuelOutcome {
            report,
            saved_run: Some(summary.id),
            save_note: None,
        },
        Err(e) => DuelOutcome {
            report,
            saved_run: None,
            save_note: Some(format!("the run was not saved to the run history: {e}")),
        },
    }
}

/// The facts of entry point or family `name` compiled for `arch` with the occupancy at
/// `threads` per block (NVRTC and cuobjdump, no GPU needed): what `showdown kernels show` prints
/// and the Kernel Reveal page shows.
pub fn kernel_facts(
    name: &str,
    arch: &str,
    threads: u32,
) -> Result<Vec<crate::kernel_panel::KernelFacts>> {
    let fam = kernels::FAMILIES
        .iter()
        .find(|f| f.name == name || f.entry_points().iter().any(|e| e == name))
        .ok_or_else(|| {
            ComputeError::bad_arg(
                "kernel",
                name,
                "not in the registry (see `showdown kernels list`)",
            )
        })?;
    #[cfg(feature = "cuda")]
    {
        Ok(crate::cuda::facts::family_facts(fam, arch, threads)?
            .into_iter()
            .filter(|f| f.entry == name || fam.name == name)
            .collect())
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (fam, arch, threads);
        // Refused, not failed: what is asked cannot be done by this build (a 4xx).
        Err(ComputeError::BadRequest(format!(
            "{}, and this build of the compute service has no CUDA support.",
            crate::lab::FACTS_NEED_NVRTC
        )))
    }
}

/// Screenshot `screenshot` of import `import` in `store`, ready for a `data:` URL.
pub fn screenshot_image(
    store: &crate::ncu_library::ImportStore,
    import: &str,
    screenshot: &str,
) -> Result<crate::ncu::ScreenshotImage> {
    use base64::Engine;
    let (shot, bytes) = store.screenshot(import, screenshot)?;
    Ok(crate::ncu::ScreenshotImage {
        mime: shot.format.media_type().to_string(),
        base64: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

// ---------------------------------------------------------------------------------------------
// One handler per request; each returns its request's reply type (`Op::Reply`).

impl Serves<DoctorRequest> for Service {
    fn serve(
        &self,
        _: DoctorRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::types::DoctorReport> {
        Ok(crate::doctor::doctor())
    }
}

impl Serves<ListDatasetsRequest> for Service {
    fn serve(
        &self,
        _: ListDatasetsRequest,
        _: &mut JobContext<'_>,
    ) -> Result<Vec<crate::types::DatasetSummary>> {
        Ok(data::list())
    }
}

impl Serves<ModelSummaryRequest> for Service {
    fn serve(
        &self,
        _: ModelSummaryRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::model::ModelSummary> {
        Ok(crate::model::lab_summary())
    }
}

impl Serves<DatasetSamplesRequest> for Service {
    fn serve(
        &self,
        op: DatasetSamplesRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::types::DatasetSamples> {
        self.dataset_samples(&op.dataset, op.split, op.offset, op.count)
    }
}

impl Serves<ExplainRequest> for Service {
    fn serve(&self, op: ExplainRequest, _: &mut JobContext<'_>) -> Result<ExplainReport> {
        crate::explainer::explain(&op, &self.run_store()?, &|name| self.dataset(name))
    }
}

impl Serves<DuelRequest> for Service {
    fn serve(&self, op: DuelRequest, job: &mut JobContext<'_>) -> Result<DuelOutcome> {
        let on_event = &mut *job.on_event;
        // Live NVML readings beside the duel's own (which come with each contestant's report),
        // passed on with the duel's progress.
        #[cfg(feature = "cuda")]
        let recorder = (op.config.backend != crate::types::BackendChoice::Cpu)
            .then(|| crate::cuda::telemetry::start(op.config.device));
        #[cfg(not(feature = "cuda"))]
        let recorder = None;
        let mut live = crate::telemetry::TelemetryForward::new(recorder);
        let mut forward = |e: DuelEvent| {
            live.flush(&mut *on_event);
            on_event(Event::Duel { event: e })
        };
        // The peer interpreter's probe (up to its timeout) only when PyTorch is asked for.
        // A cancel stops the probe (or the wait for another request's probe) at once.
        let peer = op.config.pytorch.then(|| self.peer_status_for(job.cancel));
        if job.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(ComputeError::Cancelled);
        }
        let report =
            crate::duel::run_duel_with_peer(&op.config, peer.as_ref(), &mut forward, job.cancel)?;
        // A cancel during PyTorch's side keeps our finished contestants (and says so); any
        // other cancel ends the duel without a result.
        if !report.peer.as_ref().is_some_and(|p| p.cancelled) {
            job.check_cancel()?;
        }
        let saved = self.run_store().and_then(|store| Ok(store.save(&report)?));
        Ok(outcome(report, saved))
    }
}

impl Serves<DataFetchRequest> for Service {
    /// Downloads full MNIST into `<data folder>/mnist` from the mirrors of this process's
    /// environment (see [`data::fetch`]), never from anywhere the request names.
    fn serve(&self, op: DataFetchRequest, job: &mut JobContext<'_>) -> Result<DataFetched> {
        if op.dataset != "mnist" {
            return Err(ComputeError::bad_arg(
                "dataset",
                &op.dataset,
                "only `mnist` is downloadable (fashion-mnist: apt install dataset-fashion-mnist)",
            ));
        }
        let dest = self.data_root()?.join("mnist");
        let files = data::fetch::manifest_from_env()?;
        let mirrors = data::fetch::mirrors_from_env();
        let on_event = &mut *job.on_event;
        let got = data::fetch::fetch(
            &mirrors,
            &files,
            &dest,
            &mut |p| on_event(Event::DataFetch { event: p }),
            job.cancel,
        )?;
        job.check_cancel()?;
        let dataset = data::list()
            .into_iter()
            .find(|d| d.name == op.dataset)
            .ok_or_else(|| ComputeError::BadRequest("mnist is not a known data set".into()))?;
        let files = got
            .into_iter()
            .zip(&files)
            .map(|(g, f)| FetchedFile {
                name: f.name.clone(),
                path: g.path.display().to_string(),
                bytes: g.bytes,
                from: g.from,
            })
            .collect();
        Ok(DataFetched { dataset, files })
    }
}

impl Serves<OccupancyRequest> for Service {
    fn serve(
        &self,
        op: OccupancyRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::occupancy::OccupancyOutput> {
        let (major, minor) = parse_cc(&op.cc)?;
        let limits = GpuLimits::for_cc(major, minor)?;
        Ok(occupancy(&limits, &op.input)?)
    }
}

impl Serves<KernelFactsRequest> for Service {
    fn serve(
        &self,
        op: KernelFactsRequest,
        _: &mut JobContext<'_>,
    ) -> Result<Vec<crate::kernel_panel::KernelFacts>> {
        kernel_facts(&op.name, &op.arch, op.threads)
    }
}

impl Serves<CancelRequest> for Service {
    /// Asks the running job to stop and answers once it has freed the job slot (or after
    /// [`CANCEL_WAIT`], saying it has not).
    fn serve(&self, _: CancelRequest, _: &mut JobContext<'_>) -> Result<Cancelled> {
        Ok(match self.jobs.cancel_and_wait(CANCEL_WAIT) {
            CancelOutcome::NoneRunning => Cancelled {
                cancelled: false,
                freed: None,
            },
            CancelOutcome::Freed => Cancelled {
                cancelled: true,
                freed: Some(true),
            },
            CancelOutcome::StillRunning => Cancelled {
                cancelled: true,
                freed: Some(false),
            },
        })
    }
}

impl Serves<NcuImportsRequest> for Service {
    fn serve(
        &self,
        _: NcuImportsRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::ncu::ImportList> {
        // What was left out (a damaged import or screenshot) is named in the reply.
        Ok(self.library()?.list_checked()?)
    }
}

impl Serves<NcuExampleRequest> for Service {
    fn serve(
        &self,
        _: NcuExampleRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::ncu::ImportSummary> {
        Ok(self.library()?.add_example()?)
    }
}

impl Serves<NcuImportRequest> for Service {
    fn serve(
        &self,
        op: NcuImportRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::ncu::ImportSummary> {
        crate::lab::profile::import_csv(&op.file_name, op.text.as_bytes(), &self.library()?)
    }
}

impl Serves<NcuPanelsRequest> for Service {
    fn serve(
        &self,
        op: NcuPanelsRequest,
        _: &mut JobContext<'_>,
    ) -> Result<Vec<crate::ncu::KernelPanels>> {
        let (summary, report) = self.library()?.load(&op.import)?;
        let kernels: Vec<&crate::ncu::Kernel> = report
            .kernels
            .iter()
            .filter(|k| op.kernel.is_none_or(|id| k.id == id))
            .collect();
        if let (Some(id), true) = (op.kernel, kernels.is_empty()) {
            return Err(ComputeError::BadRequest(format!(
                "import {} has no kernel with ID {id}",
                op.import
            )));
        }
        // The reply's budget is checked before any panel is built.
        let left = kernels.len().saturating_sub(op.offset);
        let limit = match op.limit {
            Some(n) if n == 0 || n > MAX_PANELS_PAGE => {
                return Err(ComputeError::bad_arg(
                    "limit",
                    n,
                    format!("must be 1 to {MAX_PANELS_PAGE} (the kernels one reply carries)"),
                ))
            }
            Some(n) => n,
            None if left > MAX_PANELS_PAGE => {
                return Err(ComputeError::BadRequest(format!(
                    "import {} has {left} kernels from offset {}, more than the \
                     {MAX_PANELS_PAGE} whose panels one reply carries: ask for them a page at \
                     a time (`offset`, `limit` up to {MAX_PANELS_PAGE}) or for one `kernel`",
                    op.import, op.offset
                )))
            }
            None => left,
        };
        Ok(kernels
            .iter()
            .skip(op.offset)
            .take(limit)
            .map(|k| crate::ncu::KernelPanels::of(k, &summary.screenshots))
            .collect())
    }
}

impl Serves<NcuAttachRequest> for Service {
    fn serve(
        &self,
        op: NcuAttachRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::ncu::Screenshot> {
        use base64::Engine;
        // A 20 MiB image is 28 MiB of base64: refuse longer text before decoding it.
        let max_b64 = (crate::ncu::MAX_SCREENSHOT_BYTES as usize).div_ceil(3) * 4;
        if op.image_base64.len() > max_b64 {
            return Err(ComputeError::bad_file(
                op.file_name.clone(),
                format!(
                    "over the {} MiB limit for a screenshot",
                    crate::ncu::MAX_SCREENSHOT_BYTES >> 20
                ),
            ));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(op.image_base64.trim())
            .map_err(|e| {
                ComputeError::bad_file(
                    op.file_name.clone(),
                    format!("image_base64 is not base64: {e}"),
                )
            })?;
        Ok(self.library()?.attach(
            &op.import,
            op.kernel,
            &op.panel,
            &op.file_name,
            &bytes,
            op.caption.as_deref(),
        )?)
    }
}

impl Serves<NcuDetachRequest> for Service {
    fn serve(&self, op: NcuDetachRequest, _: &mut JobContext<'_>) -> Result<Removed> {
        self.library()?.detach(&op.import, &op.screenshot)?;
        Ok(Removed { removed: true })
    }
}

impl Serves<NcuRemoveRequest> for Service {
    fn serve(&self, op: NcuRemoveRequest, _: &mut JobContext<'_>) -> Result<Removed> {
        self.library()?.remove(&op.import)?;
        Ok(Removed { removed: true })
    }
}

impl Serves<NcuScreenshotRequest> for Service {
    fn serve(
        &self,
        op: NcuScreenshotRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::ncu::ScreenshotImage> {
        screenshot_image(&self.library()?, &op.import, &op.screenshot)
    }
}

impl Serves<RunsRequest> for Service {
    fn serve(&self, _: RunsRequest, _: &mut JobContext<'_>) -> Result<crate::runs::RunList> {
        Ok(self.run_store()?.list()?)
    }
}

impl Serves<RunRequest> for Service {
    fn serve(&self, op: RunRequest, _: &mut JobContext<'_>) -> Result<crate::types::DuelReport> {
        Ok(self.run_store()?.load(&op.id)?)
    }
}

impl Serves<RunRemoveRequest> for Service {
    fn serve(&self, op: RunRemoveRequest, _: &mut JobContext<'_>) -> Result<Removed> {
        self.run_store()?.remove(&op.id)?;
        Ok(Removed { removed: true })
    }
}

impl Serves<RunCsvRequest> for Service {
    fn serve(&self, op: RunCsvRequest, _: &mut JobContext<'_>) -> Result<crate::runs::CsvExport> {
        let saved = self.run_store()?.load_file(&op.id)?;
        Ok(crate::runs::CsvExport {
            file_name: crate::runs::csv_file_name(&op.id),
            csv: crate::runs::run_csv(&op.id, Some(saved.saved_at), &saved.report),
        })
    }
}

impl Serves<JobStatusRequest> for Service {
    fn serve(&self, _: JobStatusRequest, _: &mut JobContext<'_>) -> Result<crate::runs::JobStatus> {
        Ok(crate::runs::JobStatus {
            running: self.running_job().map(str::to_string),
        })
    }
}

impl Serves<VerdictRequest> for Service {
    fn serve(&self, _: VerdictRequest, _: &mut JobContext<'_>) -> Result<crate::verdict::Verdict> {
        Ok(self.verdict())
    }
}

impl Serves<VerdictHtmlRequest> for Service {
    fn serve(
        &self,
        _: VerdictHtmlRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::verdict::HtmlExport> {
        Ok(crate::verdict::HtmlExport {
            file_name: crate::verdict::HTML_FILE_NAME.into(),
            html: crate::verdict::render_html(&self.verdict()),
        })
    }
}

#[cfg(test)]
mod tests;
