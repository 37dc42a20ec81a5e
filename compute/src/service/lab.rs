//! The service's lab jobs (Act III): each runs its [`crate::lab`] function with the job's
//! progress and cancel, keeps the report in the run history's lab runs and answers it with
//! where it was kept; and the lab's small requests (lab runs, the PyTorch peer, the GPU at
//! rest, Nsight Compute profiles and `.ncu-rep` imports).

use crate::error::{ComputeError, Result};
use crate::lab::{self, peers, GpuState, LabJob, LabReport, LabRun, Saved};
use crate::protocol::*;
use crate::runs::LabStore;
use showdown_core::peer_pythons::{KnownPython, PeerPythons};

use super::{JobContext, Serves, Service};

/// The GPU the lab jobs use.
const ORDINAL: usize = 0;

impl Service {
    /// The lab runs, in the data folder beside the duels.
    fn lab_store(&self) -> Result<LabStore> {
        LabStore::open(self.data_root()?)
    }

    /// Keeps `report` in the lab runs; the reply says where, or why it was not kept. A job
    /// cancelled by now keeps nothing and answers [`ComputeError::Cancelled`].
    fn keep<T: Clone>(
        &self,
        job: &JobContext<'_>,
        report: T,
        wrap: impl FnOnce(T) -> LabReport,
    ) -> Result<Saved<T>> {
        job.check_cancel()?;
        Ok(
            match self.lab_store().and_then(|s| s.save(&wrap(report.clone()))) {
                Ok(summary) => Saved {
                    report,
                    saved_run: Some(summary.id),
                    save_note: None,
                },
                Err(e) => Saved {
                    report,
                    saved_run: None,
                    save_note: Some(format!("not kept in the run history: {e}")),
                },
            },
        )
    }

    /// The peer's status under the chosen Python.
    pub(super) fn peer_status(&self) -> lab::PeerStatus {
        self.peer_status_for(&std::sync::atomic::AtomicBool::new(false))
    }

    /// [`Service::peer_status`] for a job: one probe per interpreter at a time, its result
    /// kept while the interpreter is unchanged ([`peers::ProbeCache`]); a cancel of the job
    /// stops the probe (or the wait for another caller's) at once.
    pub(super) fn peer_status_for(
        &self,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> lab::PeerStatus {
        let setting = peers::python_setting(self.data_home.as_deref());
        let (python, source) = peers::choose_python(setting);
        self.probes.status(&python, source, cancel)
    }

    /// The Python to run the peer with when `wanted`, if it has a CUDA-enabled torch; else
    /// `None` (the job's report says why).
    fn peer_python(&self, wanted: bool, job: &mut LabJob<'_>) -> Option<String> {
        if !wanted {
            return None;
        }
        let status = self.peer_status_for(job.cancel_flag());
        if status.ready {
            Some(status.python)
        } else {
            job.note(status.note);
            None
        }
    }
}

/// A [`LabJob`] over a service job's context.
fn lab_job<'a>(name: &'static str, job: &'a mut JobContext<'_>) -> LabJob<'a> {
    LabJob::new(name, &mut *job.on_event, job.cancel)
}

impl Serves<KernelBenchRequest> for Service {
    fn serve(
        &self,
        op: KernelBenchRequest,
        job: &mut JobContext<'_>,
    ) -> Result<Saved<crate::bench::kernels::KernelsBench>> {
        let report = {
            let mut lab = lab_job(KernelBenchRequest::NAME, job);
            let python = self.peer_python(op.peers, &mut lab);
            lab::kernels::run_kernel_bench(&op, ORDINAL, python.as_deref(), &mut lab)?
        };
        self.keep(job, report, |report| LabReport::Kernels { report })
    }
}

impl Serves<ConvLadderRequest> for Service {
    fn serve(
        &self,
        op: ConvLadderRequest,
        job: &mut JobContext<'_>,
    ) -> Result<Saved<crate::bench::conv::ConvBench>> {
        let report = {
            let mut lab = lab_job(ConvLadderRequest::NAME, job);
            let python = self.peer_python(op.peers, &mut lab);
            lab::ladder::run_ladder(&op, ORDINAL, python.as_deref(), &mut lab)?
        };
        self.keep(job, report, |report| LabReport::Ladder { report })
    }
}

impl Serves<InferBenchRequest> for Service {
    fn serve(
        &self,
        op: InferBenchRequest,
        job: &mut JobContext<'_>,
    ) -> Result<Saved<crate::inference::InferenceReport>> {
        let report = {
            let mut lab = lab_job(InferBenchRequest::NAME, job);
            let python = self.peer_python(op.peers, &mut lab);
            let data = crate::data::load(&op.dataset, None)?;
            lab::infer::run_infer_bench(&op, data, ORDINAL, python.as_deref(), None, &mut lab)?
        };
        self.keep(job, report, |report| LabReport::Inference { report })
    }
}

impl Serves<StepAnatomyRequest> for Service {
    fn serve(
        &self,
        op: StepAnatomyRequest,
        job: &mut JobContext<'_>,
    ) -> Result<Saved<crate::bench::anatomy::StepAnatomy>> {
        let report = {
            let mut lab = lab_job(StepAnatomyRequest::NAME, job);
            lab::anatomy::run_step_anatomy(&op, &mut lab)?
        };
        self.keep(job, report, |report| LabReport::Anatomy { report })
    }
}

impl Serves<CrossoverRequest> for Service {
    fn serve(
        &self,
        op: CrossoverRequest,
        job: &mut JobContext<'_>,
    ) -> Result<Saved<crate::bench::crossover::CrossoverReport>> {
        let report = {
            let mut lab = lab_job(CrossoverRequest::NAME, job);
            let python = self.peer_python(op.include_peer, &mut lab);
            lab::crossover::run_crossover(&op, ORDINAL, python.as_deref(), &mut lab)?
        };
        self.keep(job, report, |report| LabReport::Crossover { report })
    }
}

impl Serves<ProfileRequest> for Service {
    /// Profiles this process's own program (`showdown profile-target …`).
    fn serve(&self, op: ProfileRequest, job: &mut JobContext<'_>) -> Result<ProfileOutcome> {
        let exe = std::env::current_exe().map_err(|source| ComputeError::Io {
            path: "the running program".into(),
            source,
        })?;
        let store = self.library()?;
        let mut lab = lab_job(ProfileRequest::NAME, job);
        lab::profile::profile(&op, &exe, &store, &mut lab)
    }
}

impl Serves<NcuRepImportRequest> for Service {
    fn serve(
        &self,
        op: NcuRepImportRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::ncu::ImportSummary> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(op.base64.as_bytes())
            .map_err(|e| ComputeError::bad_arg("base64", "…", format!("not base64: {e}")))?;
        lab::profile::import_ncu_rep(&op.file_name, &bytes, &self.library()?)
    }
}

impl Serves<LabRunsRequest> for Service {
    fn serve(&self, _: LabRunsRequest, _: &mut JobContext<'_>) -> Result<lab::LabRunList> {
        self.lab_store()?.list()
    }
}

impl Serves<LabRunRequest> for Service {
    fn serve(&self, op: LabRunRequest, _: &mut JobContext<'_>) -> Result<LabRun> {
        self.lab_store()?.load(&op.id)
    }
}

impl Serves<LabRunRemoveRequest> for Service {
    fn serve(&self, op: LabRunRemoveRequest, _: &mut JobContext<'_>) -> Result<Removed> {
        self.lab_store()?.remove(&op.id)?;
        Ok(Removed { removed: true })
    }
}

impl Serves<LabRunCsvRequest> for Service {
    fn serve(
        &self,
        op: LabRunCsvRequest,
        _: &mut JobContext<'_>,
    ) -> Result<crate::runs::CsvExport> {
        let run = self.lab_store()?.load(&op.id)?;
        Ok(crate::runs::CsvExport {
            file_name: format!("{}.csv", run.id),
            csv: showdown_core::lab_csv::lab_run_csv(&run),
        })
    }
}

impl Serves<PeerStatusRequest> for Service {
    fn serve(&self, _: PeerStatusRequest, _: &mut JobContext<'_>) -> Result<lab::PeerStatus> {
        Ok(self.peer_status())
    }
}

impl Serves<PeerSetPythonRequest> for Service {
    /// Keeps the choice in the data folder's settings; answers the status under it. A path that
    /// names no file is refused (a bare name is looked up on PATH when the peer runs).
    fn serve(&self, op: PeerSetPythonRequest, _: &mut JobContext<'_>) -> Result<lab::PeerStatus> {
        let python = op
            .python
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty());
        if let Some(p) = &python {
            if p.contains('/') && !std::path::Path::new(p).is_file() {
                return Err(ComputeError::bad_arg("python", p, "no such file"));
            }
        }
        peers::set_python_setting(&self.data_root()?, python.as_deref())?;
        Ok(self.peer_status())
    }
}

/// The project's peer venv's interpreter (`cargo xtask` makes it), relative to the folder the
/// service runs in.
pub const PEER_VENV_PYTHON: &str = "target/peer-venv/bin/python";

/// The interpreters found on this machine for the PyTorch peer, without repeats (by the file
/// each resolves to): `python3` on PATH, the project's peer venv, `$SHOWDOWN_PYTHON`, then
/// `extra` (each with its source, e.g. the HTTP server's `--python` flags). Only names that
/// resolve to a file are kept.
pub fn found_pythons(extra: &[(String, &str)]) -> Vec<KnownPython> {
    let mut names: Vec<(String, &str)> = vec![
        ("python3".into(), "PATH"),
        (PEER_VENV_PYTHON.into(), "peer venv"),
    ];
    if let Some(p) = std::env::var_os("SHOWDOWN_PYTHON") {
        names.push((p.to_string_lossy().into_owned(), "SHOWDOWN_PYTHON"));
    }
    names.extend(extra.iter().cloned());
    let mut files = Vec::new();
    let mut found = Vec::new();
    for (name, source) in names {
        let name = name.trim().to_string();
        let Some(file) = peers::resolve_python(&name).and_then(|f| f.canonicalize().ok()) else {
            continue;
        };
        if !files.contains(&file) {
            files.push(file);
            found.push(KnownPython {
                python: name,
                source: source.into(),
            });
        }
    }
    found
}

impl Serves<PeerPythonsRequest> for Service {
    /// The interpreters found, with the one chosen now (the setting) among them; this door
    /// (the CLI, stdio, the desktop app) also takes any other path.
    fn serve(&self, _: PeerPythonsRequest, _: &mut JobContext<'_>) -> Result<PeerPythons> {
        let setting = peers::python_setting(self.data_home.as_deref());
        let extra: Vec<(String, &str)> = setting.into_iter().map(|p| (p, "setting")).collect();
        Ok(PeerPythons {
            pythons: found_pythons(&extra),
            any_path: true,
        })
    }
}

impl Serves<GpuStateRequest> for Service {
    fn serve(&self, _: GpuStateRequest, _: &mut JobContext<'_>) -> Result<GpuState> {
        Ok(gpu_state())
    }
}

#[cfg(feature = "cuda")]
fn gpu_state() -> GpuState {
    match crate::cuda::telemetry::read_now(ORDINAL) {
        Ok((name, sample)) => GpuState {
            device: Some(name),
            sample: Some(sample),
            note: None,
        },
        Err(note) => GpuState {
            device: None,
            sample: None,
            note: Some(note),
        },
    }
}

#[cfg(not(feature = "cuda"))]
fn gpu_state() -> GpuState {
    GpuState {
        device: None,
        sample: None,
        note: Some("this build has no CUDA backend: the CPU runs every job".into()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::*;
    use crate::types::{BackendChoice, Precision};

    #[test]
    fn a_cpu_step_anatomy_is_kept_and_survives_a_restart() {
        let home = tempfile::tempdir().unwrap();
        let cancel = Arc::new(AtomicBool::new(false));
        let mut stages = 0;
        let saved = {
            let service = Service::new(home.path());
            let req = StepAnatomyRequest {
                precisions: vec![Precision::Fp32, Precision::Fp16],
                backend: BackendChoice::Cpu,
                batch: 16,
                steps: 2,
                ..StepAnatomyRequest::default()
            };
            service
                .call(
                    req,
                    &mut |e| stages += matches!(e, Event::Lab { .. }) as usize,
                    &cancel,
                )
                .unwrap()
        };
        assert!(stages >= 2, "a stage per contestant");
        let id = saved.saved_run.clone().expect("kept in the run history");
        assert_eq!(saved.report.contestants.len(), 2);
        // A new service on the same data folder: the app restarted.
        let service = Service::new(home.path());
        let list = service
            .call(LabRunsRequest {}, &mut |_| {}, &cancel)
            .unwrap();
        assert_eq!(list.runs.len(), 1);
        assert_eq!(list.runs[0].id, id);
        assert_eq!(list.runs[0].kind, "anatomy");
        let run = service
            .call(LabRunRequest { id: id.clone() }, &mut |_| {}, &cancel)
            .unwrap();
        assert_eq!(
            run.report,
            LabReport::Anatomy {
                report: saved.report
            }
        );
        let csv = service
            .call(LabRunCsvRequest { id: id.clone() }, &mut |_| {}, &cancel)
            .unwrap();
        assert!(csv.csv.lines().count() > 2, "{}", csv.csv);
        service
            .call(LabRunRemoveRequest { id }, &mut |_| {}, &cancel)
            .unwrap();
        assert!(service
            .call(LabRunsRequest {}, &mut |_| {}, &cancel)
            .unwrap()
            .runs
            .is_empty());
    }

    /// Issue 39: a CPU crossover is kept in the run history and reopens as it ran; a request
    /// with a repeated size is refused naming the field, before anything runs.
    #[test]
    fn a_cpu_crossover_is_kept_and_reopens() {
        let home = tempfile::tempdir().unwrap();
        let cancel = Arc::new(AtomicBool::new(false));
        let service = Service::new(home.path());
        let req = CrossoverRequest {
            sizes: vec![16, 32],
            precisions: vec![Precision::Fp32, Precision::Bf16, Precision::Fp8],
            backend: BackendChoice::Cpu,
            include_cnn: false,
            include_peer: true,
            include_steps: true,
        };
        let saved = service.call(req, &mut |_| {}, &cancel).unwrap();
        let id = saved.saved_run.clone().expect("kept in the run history");
        assert_eq!(saved.report.points.len(), 4);
        assert_eq!(
            saved.report.peer_failure.as_deref(),
            Some("the PyTorch rows need a GPU")
        );
        let list = service
            .call(LabRunsRequest {}, &mut |_| {}, &cancel)
            .unwrap();
        assert_eq!(list.runs[0].kind, "crossover");
        assert!(
            list.runs[0].headline.contains("4/4 checks pass"),
            "{:?}",
            list.runs[0]
        );
        let run = service
            .call(LabRunRequest { id: id.clone() }, &mut |_| {}, &cancel)
            .unwrap();
        assert_eq!(
            run.report,
            LabReport::Crossover {
                report: saved.report
            }
        );
        let csv = service
            .call(LabRunCsvRequest { id }, &mut |_| {}, &cancel)
            .unwrap();
        assert_eq!(csv.csv.lines().count(), 5, "{}", csv.csv);
        let bad = crate::protocol::parse_request(
            br#"{"op":"crossover","backend":"cpu","sizes":[32,32]}"#,
        )
        .unwrap_err();
        assert_eq!(bad.message, "sizes: '32' is listed twice; name each once");
    }

    #[test]
    #[cfg(not(feature = "cuda"))]
    fn without_a_gpu_build_the_kernel_bench_says_what_a_gpu_adds() {
        let home = tempfile::tempdir().unwrap();
        let service = Service::new(home.path());
        let e = service
            .call(
                KernelBenchRequest::default(),
                &mut |_| {},
                &Arc::new(AtomicBool::new(false)),
            )
            .unwrap_err();
        assert!(e.to_string().contains("needs a CUDA GPU"), "{e}");
    }
}
