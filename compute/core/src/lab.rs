//! Act III's live lab: the jobs that measure this machine (the kernel benchmark, the
//! convolution ladder, inference latency, a training step's anatomy, an Nsight Compute
//! profile), their progress events, the lab runs kept in the run history, the PyTorch peer's
//! status and the GPU's state at rest. The reports themselves are the [`bench`](crate::bench)
//! modules'; this module holds what the jobs share.

use serde::{Deserialize, Serialize};

use crate::bench::anatomy::StepAnatomy;
use crate::bench::conv::ConvBench;
use crate::bench::crossover::CrossoverReport;
use crate::bench::kernels::KernelsBench;
use crate::inference::InferenceReport;
use crate::types::TelemetrySample;

/// Progress of a lab job: `{"type":"stage","job":"kernel_bench","stage":"timing gelu_erf f16",
/// "done":3,"total":14}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LabProgress {
    /// The job moved on to `stage`, item `done` of `total` finished before it.
    Stage {
        /// The job's wire name (`kernel_bench`, `conv_ladder`, ...).
        job: String,
        /// What it does now, in words.
        stage: String,
        /// Items finished.
        done: usize,
        /// Items in all.
        total: usize,
    },
    /// A line the job wants the user to read (a peer skipped, a row left out and why).
    Note {
        /// The job's wire name.
        job: String,
        /// The sentence.
        text: String,
    },
}

/// A lab job's report as kept in the run history: one variant per job, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LabReport {
    /// The activation and norm kernels' checks and timings.
    Kernels {
        /// The report.
        report: KernelsBench,
    },
    /// The convolution ladder.
    Ladder {
        /// The report.
        report: ConvBench,
    },
    /// Inference latency of the CNN variants.
    Inference {
        /// The report.
        report: InferenceReport,
    },
    /// A training step's anatomy.
    Anatomy {
        /// The report.
        report: StepAnatomy,
    },
    /// The precision crossover.
    Crossover {
        /// The report.
        report: CrossoverReport,
    },
}

impl LabReport {
    /// The kind's wire name (`kernels`, `ladder`, `inference`, `anatomy`).
    pub fn kind(&self) -> &'static str {
        match self {
            LabReport::Kernels { .. } => "kernels",
            LabReport::Ladder { .. } => "ladder",
            LabReport::Inference { .. } => "inference",
            LabReport::Anatomy { .. } => "anatomy",
            LabReport::Crossover { .. } => "crossover",
        }
    }

    /// The kind in words, for lists (`kernel benchmark`, `convolution ladder`, ...).
    pub fn title(&self) -> &'static str {
        match self {
            LabReport::Kernels { .. } => "kernel benchmark",
            LabReport::Ladder { .. } => "convolution ladder",
            LabReport::Inference { .. } => "inference latency",
            LabReport::Anatomy { .. } => "step anatomy",
            LabReport::Crossover { .. } => "precision crossover",
        }
    }

    /// Whether the report measured a GPU: the kernel benchmark and inference latency always
    /// do, the convolution ladder when it has a row that is not the CPU's, the step anatomy
    /// when it ran on the CUDA backend.
    pub fn on_gpu(&self) -> bool {
        match self {
            LabReport::Kernels { .. } | LabReport::Inference { .. } => true,
            LabReport::Ladder { report } => report
                .ours
                .rows
                .iter()
                .any(|r| !crate::bench::conv::is_cpu_row(&r.implementation)),
            LabReport::Anatomy { report } => report.backend == "cuda",
            LabReport::Crossover { report } => report.backend == "cuda",
        }
    }

    /// The device the report was measured on, in words.
    pub fn device(&self) -> String {
        match self {
            LabReport::Kernels { report } => report.ours.device.clone(),
            LabReport::Ladder { report } => report.ours.device.clone(),
            LabReport::Inference { report } => report.device.clone(),
            LabReport::Anatomy { report } => report.device.clone(),
            LabReport::Crossover { report } => report.device.clone(),
        }
    }

    /// One line that sums the report up for the run list.
    pub fn headline(&self) -> String {
        match self {
            LabReport::Kernels { report } => {
                let (ok, all) = report.checks_passed();
                let best = report
                    .ours
                    .bench
                    .iter()
                    .filter(|r| r.op != crate::bench::kernels::COPY_OP)
                    .map(|r| r.of_copy)
                    .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
                match best {
                    Some(b) => format!(
                        "{ok}/{all} checks pass; best kernel at {:.0} % of the copy ceiling",
                        b * 100.0
                    ),
                    None => format!("{ok}/{all} checks pass"),
                }
            }
            LabReport::Ladder { report } => {
                let (ok, all, _) = report.check_totals();
                format!(
                    "{} rows on {} layer(s); {ok}/{all} checks pass",
                    report.ours.rows.len(),
                    report.layers().len()
                )
            }
            LabReport::Inference { report } => format!(
                "{} variant(s) at batch sizes {:?}",
                report.variants.len(),
                report.batches
            ),
            LabReport::Anatomy { report } => report.headline(),
            LabReport::Crossover { report } => report.headline(),
        }
    }
}

/// A lab run as kept in the run history (`lab-<id>.json` in the data folder).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabRun {
    /// The run's ID (`lab-…`).
    pub id: String,
    /// When it was saved, seconds since the Unix epoch.
    pub saved_at: u64,
    /// What was measured.
    #[serde(flatten)]
    pub report: LabReport,
    /// Where it was measured (machine, build, driver), stamped by the engine; absent in runs
    /// saved before results were stamped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<crate::origin::Stamp>,
}

impl LabRun {
    /// Where the run was made ([`Origin`](crate::origin::Origin)).
    pub fn origin(&self) -> crate::origin::Origin {
        let backend = if self.report.on_gpu() { "cuda" } else { "cpu" };
        crate::origin::Origin::of(
            self.stamp.as_ref(),
            backend,
            &self.report.device(),
            self.saved_at,
        )
    }
}

/// A lab run in the run list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabRunSummary {
    /// The run's ID.
    pub id: String,
    /// When it was saved, seconds since the Unix epoch.
    pub saved_at: u64,
    /// The kind's wire name ([`LabReport::kind`]).
    pub kind: String,
    /// The kind in words ([`LabReport::title`]).
    pub title: String,
    /// The device, in words.
    pub device: String,
    /// [`LabReport::headline`].
    pub headline: String,
    /// Whether the run measured a GPU ([`LabReport::on_gpu`]).
    #[serde(default)]
    pub gpu: bool,
    /// Where it was measured ([`LabRun::origin`]).
    #[serde(default)]
    pub origin: crate::origin::Origin,
}

impl LabRunSummary {
    /// The summary of `run`.
    pub fn of(run: &LabRun) -> Self {
        LabRunSummary {
            id: run.id.clone(),
            saved_at: run.saved_at,
            kind: run.report.kind().to_string(),
            title: run.report.title().to_string(),
            device: run.report.device(),
            headline: run.report.headline(),
            gpu: run.report.on_gpu(),
            origin: run.origin(),
        }
    }
}

/// The newest saved GPU run of `kind` (a [`LabReport::kind`]) in `runs`, if any: what Act III
/// shows, labelled with its device and date, on a machine without a GPU.
pub fn newest_gpu_run<'a>(runs: &'a [LabRunSummary], kind: &str) -> Option<&'a LabRunSummary> {
    runs.iter()
        .filter(|r| r.gpu && r.kind == kind)
        .max_by(|a, b| a.saved_at.cmp(&b.saved_at).then_with(|| a.id.cmp(&b.id)))
}

/// Where a lab report shown on Act III comes from: a job that just ran on the compute
/// service's machine, or a run saved in the run history (another machine's GPU, or this one's
/// earlier).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOrigin {
    /// A job that just ran here.
    Live,
    /// A run of the history, shown because this machine has no GPU.
    Saved {
        /// Its ID.
        id: String,
        /// When it was saved, seconds since the Unix epoch.
        saved_at: u64,
    },
}

impl RunOrigin {
    /// "Measured on DEVICE, this machine" for a live job; for a saved run, its device, date and
    /// ID, and that it is not this machine's measurement.
    pub fn measured_on(&self, device: &str) -> String {
        match self {
            RunOrigin::Live => format!("Measured on {device}, this machine"),
            RunOrigin::Saved { id, saved_at } => format!(
                "Measured on {device}, saved {} as {id} in the run history: not this machine",
                crate::runs::utc_date_time(*saved_at)
            ),
        }
    }
}

/// What a kernel family's facts need (NVRTC compiles the family for the chosen architecture):
/// the sentence both the service's refusal and Act III's disabled button say.
pub const FACTS_NEED_NVRTC: &str = "Compiling a kernel family and reading its facts needs NVRTC (libnvrtc, the CUDA runtime compiler: the CUDA toolkit, or `pip install nvidia-cuda-nvrtc-cu12` with its folder on LD_LIBRARY_PATH)";

/// Why Act III's "Compile and read the facts" cannot work on the compute service's machine as
/// the doctor describes it (a build without CUDA, NVRTC missing); `None` when it can.
pub fn facts_unavailable(doctor: &crate::types::DoctorReport) -> Option<String> {
    if !doctor.cuda_built {
        Some(format!(
            "{FACTS_NEED_NVRTC}, and this build of the compute service has no CUDA support."
        ))
    } else if !doctor.nvrtc.ok {
        // The doctor's detail up to its explanation: `libnvrtc.so not found`.
        let found = doctor
            .nvrtc
            .detail
            .split(':')
            .next()
            .unwrap_or_default()
            .trim();
        Some(format!(
            "{FACTS_NEED_NVRTC}; the compute service's machine has none ({found})."
        ))
    } else {
        None
    }
}

/// The saved lab runs, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LabRunList {
    /// The runs.
    pub runs: Vec<LabRunSummary>,
    /// Files of the history that could not be read, with why.
    #[serde(default)]
    pub skipped: Vec<String>,
}

/// Whether `id` has the shape of a lab run's ID (`lab-` then letters, digits, `-`, `_`).
pub fn is_lab_run_id(id: &str) -> bool {
    id.strip_prefix("lab-").is_some_and(|rest| {
        !rest.is_empty()
            && rest.len() <= 64
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// A lab job's reply: its report and where it was kept in the run history. On the wire the
/// report's own fields, plus `saved_run` and (when saving failed) `save_note`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saved<T> {
    /// The report.
    #[serde(flatten)]
    pub report: T,
    /// The run history's ID of this run; `None` when it could not be saved.
    #[serde(default)]
    pub saved_run: Option<String>,
    /// Why the run was not saved (the result is answered all the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_note: Option<String>,
}

/// Whether PyTorch can run beside our jobs, and how to make it so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerStatus {
    /// The Python interpreter the service uses (the setting, else `$SHOWDOWN_PYTHON`, else
    /// `python3` on PATH).
    pub python: String,
    /// Where that choice came from: `setting`, `SHOWDOWN_PYTHON` or `PATH`.
    pub source: String,
    /// PyTorch's version, when the interpreter imports it.
    pub torch: Option<String>,
    /// Whether that PyTorch sees a CUDA GPU.
    pub cuda: bool,
    /// The GPU PyTorch sees, in words.
    pub device: Option<String>,
    /// Whether the lab jobs can run PyTorch's rows (a CUDA-enabled torch was found).
    pub ready: bool,
    /// One sentence: what was found, or how to enable the peer.
    pub note: String,
}

/// The GPU's state at rest (Home), or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuState {
    /// The GPU, in words.
    pub device: Option<String>,
    /// One NVML reading now.
    pub sample: Option<TelemetrySample>,
    /// Why there is no reading, when there is none.
    pub note: Option<String>,
}

/// What an Nsight Compute profile measures: one kernel of the kernel lab, one rung of the
/// convolution ladder, or a training step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "target", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProfileTarget {
    /// An activation or norm kernel of the kernel lab.
    Kernel {
        /// The op.
        op: crate::bench::kernels::Op,
        /// The dtype.
        dtype: crate::bench::kernels::LabDtype,
        /// Rows of the matrix.
        rows: usize,
        /// Columns of the matrix.
        cols: usize,
    },
    /// A rung of the convolution ladder on one layer.
    Rung {
        /// The layer (`conv1`, `conv2`, `c1`, `c3`...).
        layer: String,
        /// The rung, 1–5.
        rung: u8,
        /// Images per pass.
        batch: usize,
    },
    /// One training step of the lab CNN.
    Step {
        /// The precision.
        precision: crate::types::Precision,
        /// Images per step.
        batch: usize,
    },
}

impl ProfileTarget {
    /// The target in words (`gelu_erf f16 8192×4096`, `conv2 rung 4 at batch 1024`,
    /// `a fp16 training step at batch 128`).
    pub fn describe(&self) -> String {
        match self {
            ProfileTarget::Kernel {
                op,
                dtype,
                rows,
                cols,
            } => format!("{} {} {rows}×{cols}", op.name(), dtype.suffix()),
            ProfileTarget::Rung { layer, rung, batch } => {
                format!("{layer} rung {rung} at batch {batch}")
            }
            ProfileTarget::Step { precision, batch } => {
                format!("a {precision} training step at batch {batch}")
            }
        }
    }
}

/// The ncu sections a profile collects when the request names none: every one Act IV's seven
/// panels read (the warp-state and instruction panels included), so none of them is empty.
pub const DEFAULT_SECTIONS: [&str; 8] = [
    "SpeedOfLight",
    "MemoryWorkloadAnalysis",
    "ComputeWorkloadAnalysis",
    "Occupancy",
    "LaunchStats",
    "SchedulerStats",
    "WarpStateStats",
    "InstructionStats",
];

/// The metrics a profile collects beside its sections: the warp stall reasons, in cycles per
/// issued instruction, which the warp-state panel ranks (the details page's sections carry
/// only their total).
pub const STALL_METRICS: &str =
    r"regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$";

#[cfg(test)]
mod tests {
    use super::*;

    fn doctor(cuda_built: bool, nvrtc: bool) -> crate::types::DoctorReport {
        let probe = |ok: bool, detail: &str| crate::types::Probe {
            ok,
            detail: detail.into(),
        };
        crate::types::DoctorReport {
            version: "0".into(),
            cpu: "Test CPU".into(),
            cores: 2,
            cpu_features: Vec::new(),
            cuda_built,
            driver: probe(false, "libcuda not found"),
            nvrtc: probe(nvrtc, if nvrtc { "12.8" } else { "libnvrtc not found" }),
            nvml: probe(false, "libnvidia-ml not found"),
            kernels: probe(false, "no GPU"),
            gpus: Vec::new(),
            auto_backend: "cpu".into(),
            auto_reason: "no GPU".into(),
            machine: None,
        }
    }

    /// Issue 26: without NVRTC, "Compile and read the facts" was enabled and answered a 500
    /// blaming cuobjdump. The doctor's report says why it cannot work, naming NVRTC.
    #[test]
    fn facts_are_unavailable_without_nvrtc_and_say_why() {
        let why = facts_unavailable(&doctor(true, false)).expect("unavailable");
        assert!(
            why.contains("NVRTC") && why.contains("libnvrtc not found"),
            "{why}"
        );
        assert!(!why.contains("cuobjdump"), "{why}");
        let why = facts_unavailable(&doctor(false, false)).expect("unavailable");
        assert!(why.contains("no CUDA support"), "{why}");
        assert_eq!(facts_unavailable(&doctor(true, true)), None);
    }

    fn summary(id: &str, kind: &str, saved_at: u64, gpu: bool) -> LabRunSummary {
        LabRunSummary {
            id: id.into(),
            saved_at,
            kind: kind.into(),
            title: kind.into(),
            device: if gpu { "NVIDIA H100" } else { "Test CPU" }.into(),
            headline: String::new(),
            gpu,
            origin: Default::default(),
        }
    }

    /// Issue 26: Act III on a machine without a GPU hid the GPU runs of the history. The newest
    /// saved GPU run of each kind is found (CPU runs and other kinds left out), and labelled with
    /// its device and date as not this machine's.
    #[test]
    fn the_newest_saved_gpu_run_of_a_kind_is_found_and_labelled() {
        let runs = vec![
            summary("lab-c", "ladder", 300, false),
            summary("lab-b", "ladder", 200, true),
            summary("lab-a", "ladder", 100, true),
            summary("lab-d", "anatomy", 400, true),
        ];
        assert_eq!(
            newest_gpu_run(&runs, "ladder").map(|r| r.id.as_str()),
            Some("lab-b")
        );
        assert_eq!(
            newest_gpu_run(&runs, "anatomy").map(|r| r.id.as_str()),
            Some("lab-d")
        );
        assert_eq!(newest_gpu_run(&runs, "kernels"), None);
        let saved = RunOrigin::Saved {
            id: "lab-b".into(),
            saved_at: 1_795_000_000,
        };
        let said = saved.measured_on("NVIDIA H100 80GB HBM3");
        assert!(
            said.contains("NVIDIA H100 80GB HBM3") && said.contains("2026-"),
            "{said}"
        );
        assert!(
            said.contains("not this machine") && said.contains("lab-b"),
            "{said}"
        );
        assert_eq!(
            RunOrigin::Live.measured_on("Test CPU"),
            "Measured on Test CPU, this machine"
        );
    }

    /// A report knows whether it measured a GPU: the committed H100 ladder does, a ladder of
    /// CPU rows does not; an old summary without the field reads as not a GPU run.
    #[test]
    fn a_report_knows_whether_it_ran_on_a_gpu() {
        let ladder = crate::bench::conv::ConvBench::parse(include_str!(
            "../../../docs/results/conv-ladder-h100-2026-11-23.json"
        ))
        .expect("the committed ladder");
        let mut report = LabReport::Ladder { report: ladder };
        assert!(report.on_gpu());
        if let LabReport::Ladder { report } = &mut report {
            report
                .ours
                .rows
                .retain(|r| crate::bench::conv::is_cpu_row(&r.implementation));
        }
        assert!(!report.on_gpu());
        let old: LabRunSummary = serde_json::from_str(
            r#"{"id":"lab-x","saved_at":1,"kind":"ladder","title":"t","device":"d","headline":"h"}"#,
        )
        .expect("an old summary");
        assert!(!old.gpu);
    }

    #[test]
    fn lab_run_ids_are_checked() {
        assert!(is_lab_run_id("lab-20261124-101500-kernels"));
        assert!(!is_lab_run_id("lab-"));
        assert!(!is_lab_run_id("lab-../x"));
        assert!(!is_lab_run_id("20261124-duel"));
    }

    #[test]
    fn a_profile_target_reads_its_tag_and_refuses_unknown_fields() {
        let t: ProfileTarget = serde_json::from_str(
            r#"{"target":"kernel","op":"gelu_erf","dtype":"f16","rows":8,"cols":64}"#,
        )
        .unwrap();
        assert_eq!(t.describe(), "gelu_erf f16 8×64");
        let e = serde_json::from_str::<ProfileTarget>(
            r#"{"target":"step","precision":"fp16","batch":128,"bogus":1}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
    }
}
