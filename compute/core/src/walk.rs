//! The guided walk through the lab's acts: the order of its steps (Home, then Acts I to V),
//! what each act will show (its intro), and what it showed *on this machine* (its outro),
//! built here from the service's own reports so that every sentence carries this machine's
//! numbers and can be tested without a browser.
//!
//! Each `*_outro` function turns the reports an act reads into sentences. When a result is
//! missing the sentence says exactly what to press or run to get it; nothing is canned
//! besides the [`STORY`] and the intros.

use crate::lab::LabRunSummary;
use crate::ncu::ImportList;
use crate::pages::Page;
use crate::runs::{utc_date_time, RunSummary};
use crate::types::{DatasetSummary, DuelReport, GpuInfo, Precision, RunReport};
use crate::verdict::{percent, Verdict};

/// The steps of the walk, in order: Home, then the five acts.
pub const STEPS: [Page; 6] = [
    Page::Home,
    Page::Setup,
    Page::Duel,
    Page::Kernels,
    Page::Profiling,
    Page::Verdict,
];

/// The lab's story, told on Home above "Start the walkthrough": one sentence a line.
pub const STORY: [&str; 3] = [
    "Precision Showdown trains one small CNN on handwritten digits twice, in FP32 and in FP16 \
     mixed precision, on this machine, and shows what changes: time per epoch, memory and \
     accuracy.",
    "Five acts take it apart: I, the network and the data it sees; II, the duel itself, live; \
     III, the CUDA kernels underneath, measured here; IV, occupancy and Nsight Compute \
     profiles that explain them; V, the verdict.",
    "Every number comes from a run on this machine or a file you import; a result from \
     another machine is only ever shown as a labelled reference.",
];

/// The sentence an act says when the history holds no duel.
pub const NO_DUEL: &str = "No duel on this machine yet: in Act II, tick the contestants \
                           (FP32 and FP16 to get a speed-up) and press “Run duel”; its numbers \
                           appear here when it finishes.";

/// The sentence Act I says when no duel has trained a model yet.
pub const NO_MODEL: &str = "No trained model yet: run a duel in Act II (press “Run duel”) \
                            and the models it trains are summed up here.";

/// The step's place in the walk (0 for Home, 1–5 for Acts I–V); `None` for a page outside
/// the walk (the Docs).
pub fn step_index(page: Page) -> Option<usize> {
    STEPS.iter().position(|p| *p == page)
}

/// The act's Roman numeral (`I`–`V`); `None` for Home and the Docs.
pub fn act_numeral(page: Page) -> Option<&'static str> {
    match page {
        Page::Setup => Some("I"),
        Page::Duel => Some("II"),
        Page::Kernels => Some("III"),
        Page::Profiling => Some("IV"),
        Page::Verdict => Some("V"),
        Page::Home | Page::Docs => None,
    }
}

/// The step's label in the walk's progress indicator: `Home`, or the act's numeral.
pub fn step_label(page: Page) -> &'static str {
    act_numeral(page).unwrap_or(match page {
        Page::Docs => "Docs",
        _ => "Home",
    })
}

/// The step after `page` in the walk; `None` after Act V and outside the walk.
pub fn next(page: Page) -> Option<Page> {
    step_index(page).and_then(|i| STEPS.get(i + 1).copied())
}

/// The step before `page` in the walk; `None` at Home and outside the walk.
pub fn previous(page: Page) -> Option<Page> {
    step_index(page)
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| STEPS.get(i).copied())
}

/// What an act will show, said before it (`None` for Home and the Docs).
pub fn intro(page: Page) -> Option<&'static str> {
    Some(match page {
        Page::Setup => {
            "real digits from the data set and the lab CNN layer by layer (shapes, parameters, \
             FLOPs and activation memory): the network both contestants will train."
        }
        Page::Duel => {
            "the same CNN trained once per contestant (FP32 and FP16 mixed precision; TF32 and \
             BF16 on a GPU that has them) on the same data, seed and batches: loss, accuracy, \
             epoch times, memory and the loss scaler, live. Press “Run duel” to start one. \
             The act ends on “When does each precision pay?”: the same matrix product at growing \
             sizes in every precision, and where each starts to pay on this machine."
        }
        Page::Kernels => {
            "the CUDA kernels under the duel (their source, PTX and SASS with the tensor-core \
             instructions marked, registers) and, measured on this machine, the kernel checks \
             and timings, the convolution ladder, inference latency and a training step's \
             anatomy."
        }
        Page::Profiling => {
            "why the kernels run as fast as they do: the occupancy calculator for one launch, \
             and Nsight Compute reports (imported, or profiled here from Act III) in seven \
             panels with their narratives."
        }
        Page::Verdict => {
            "what your runs showed across the acts (each naming the machine it ran on), in one place, exportable as one HTML \
             file."
        }
        Page::Home | Page::Docs => return None,
    })
}

/// `bytes` in megabytes (10⁶), one decimal: `12.5 MB`.
fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// `n` with its noun, plural unless one: `1 kernel`, `3 kernels`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `["a", "b", "c"]` as `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Act I: the data sets this machine has (and how to get the missing ones), and the models
/// the newest duel (`newest`) trained, or [`NO_MODEL`].
pub fn setup_outro(datasets: &[DatasetSummary], newest: Option<&RunSummary>) -> Vec<String> {
    let mut out = Vec::new();
    let here: Vec<String> = datasets
        .iter()
        .filter(|d| d.available)
        .map(|d| {
            let from = d.location.as_deref().unwrap_or(&d.source);
            format!(
                "{} ({} training / {} test images of {}×{} pixels, {})",
                d.name,
                d.train,
                d.test,
                d.image[0],
                d.image[1],
                if from == "embedded" {
                    "embedded in the program".to_string()
                } else {
                    format!("read from {from}")
                }
            )
        })
        .collect();
    if here.is_empty() {
        out.push(
            "No data set is available on this machine: press “Get full MNIST” on the data-set \
             picker to download MNIST."
                .into(),
        );
    } else {
        out.push(format!("Data on this machine: {}.", and_list(&here)));
    }
    for d in datasets.iter().filter(|d| !d.available) {
        if d.name == "mnist" {
            out.push(format!(
                "Full MNIST ({} training / {} test images) is not on this machine yet: press \
                 “Get full MNIST” beside the data-set picker (Act I or Act II) to download it.",
                d.train, d.test
            ));
        } else {
            out.push(format!(
                "{} ({} training / {} test images) is not on this machine ({}).",
                d.name, d.train, d.test, d.note
            ));
        }
    }
    match newest {
        Some(run) => {
            let each: Vec<String> = run
                .results
                .iter()
                .map(|r| format!("{} to {}", r.precision, percent(r.test_accuracy)))
                .collect();
            out.push(format!(
                "Trained models on this machine: the newest duel ({}, {} on {}) trained {} test \
                 accuracy on {}, {} epoch(s) each.",
                utc_date_time(run.saved_at),
                run.backend,
                run.device,
                and_list(&each),
                run.dataset,
                run.epochs
            ));
        }
        None => out.push(NO_MODEL.into()),
    }
    out
}

/// Act II: where the newest duel comes from: `From the newest of 3 saved duels (…), saved
/// 2025-03-14 09:30 UTC.`; `count` is how many the history holds.
pub fn newest_duel_line(run: &RunSummary, count_saved: usize) -> String {
    format!(
        "From the newest of {} ({}), saved {}.",
        count(count_saved, "saved duel"),
        run.id,
        utc_date_time(run.saved_at)
    )
}

fn run_of(report: &DuelReport, p: Precision) -> Option<&RunReport> {
    report.runs.iter().find(|r| r.precision == p)
}

/// Act II's closing sentences on FP8, when it ran: where it ran (an emulation says so, and a
/// run on another device than the duel's is not compared), its accuracy against FP32's, how
/// many values its casts saturated or flushed, and the scales its gradients ended at.
pub fn fp8_outro(report: &DuelReport) -> Vec<String> {
    let Some((r, f)) = report
        .runs
        .iter()
        .find_map(|r| r.fp8.as_ref().map(|f| (r, f)))
    else {
        return Vec::new();
    };
    let mut out = vec![format!("FP8 ran {}.", f.engine)];
    if f.device != report.device {
        out.push(format!(
            "It ran on {}, not on {}: its epoch time and memory are not compared with the other \
             contestants'.",
            f.device, report.device
        ));
    }
    if let Some(a) = run_of(report, Precision::Fp32) {
        out.push(format!(
            "FP8's test accuracy is {:+.2} points from FP32's ({} against {}).",
            (r.test_accuracy - a.test_accuracy) * 100.0,
            percent(r.test_accuracy),
            percent(a.test_accuracy)
        ));
    }
    out.push(crate::fp8::fp8_sentence(f));
    let grads: Vec<String> = f
        .tensors
        .iter()
        .filter(|t| t.tensor.is_gradient())
        .filter_map(|t| {
            t.points.last().map(|p| {
                format!(
                    "{} at 2^{}",
                    t.tensor.name(),
                    crate::histogram::exponent(p.scale as f64)
                )
            })
        })
        .collect();
    if !grads.is_empty() {
        out.push(format!(
            "Its E5M2 gradients ended at scales {}: each tensor lifted by its own scale, where \
             FP16 has one loss scale for all (on a GPU, FP8's FP16 storage keeps that loss scale \
             too; the casts divide it out, so these scales are the tensors' own).",
            and_list(&grads)
        ));
    }
    out
}

/// Act II: what the duel `report` showed: the set-up, each contestant's median epoch time,
/// throughput, test accuracy and peak memory, FP16's speed-up over FP32, the accuracy and
/// memory gaps, the loss scaler, and the GPU's busiest moment when telemetry was sampled.
pub fn duel_outro(report: &DuelReport) -> Vec<String> {
    let mut out = Vec::new();
    let names: Vec<String> = report
        .runs
        .iter()
        .map(|r| r.precision.as_str().to_string())
        .collect();
    out.push(format!(
        "{} trained {} epoch(s) each on {} ({} training / {} test images, batch {}, seed {}) \
         with the {} backend on {}.",
        and_list(&names),
        report.config.epochs,
        report.dataset.name,
        report.dataset.train,
        report.dataset.test,
        report.config.batch,
        report.config.seed,
        report.backend,
        report.device
    ));
    for r in &report.runs {
        out.push(format!(
            "{}: median epoch {:.1} ms ({:.0} images/s), test accuracy {}, peak memory {}.",
            r.precision,
            r.epoch_ms_median,
            r.samples_per_s,
            percent(r.test_accuracy),
            mb(r.peak_memory_bytes)
        ));
    }
    if let Some(t) = crate::runs::comparison_sentence(report) {
        out.push(t);
    }
    let fp32 = run_of(report, Precision::Fp32);
    let fp16 = run_of(report, Precision::Fp16);
    match (fp32, fp16, crate::runs::speedup_fp16_vs_fp32(report)) {
        (Some(a), Some(b), Some(x)) => {
            if x >= 1.0 {
                out.push(format!(
                    "FP16 mixed precision trained {x:.2}× faster per epoch than FP32 \
                     ({:.1} ms against {:.1} ms).",
                    b.epoch_ms_median, a.epoch_ms_median
                ));
            } else {
                let why = if report.backend == "cpu" {
                    " the CPU has no FP16 tensor cores, so the conversions cost time and the \
                     multiplies are no faster"
                } else {
                    " at this size the conversions cost more than the faster multiplies save"
                };
                out.push(format!(
                    "FP16 mixed precision was {:.2}× slower per epoch than FP32 ({:.1} ms \
                     against {:.1} ms):{why}.",
                    1.0 / x.max(f64::MIN_POSITIVE),
                    b.epoch_ms_median,
                    a.epoch_ms_median
                ));
            }
            let gap = (b.test_accuracy - a.test_accuracy) * 100.0;
            out.push(format!(
                "FP16's test accuracy is {gap:+.2} points from FP32's ({} against {}).",
                percent(b.test_accuracy),
                percent(a.test_accuracy)
            ));
            if a.peak_memory_bytes > 0 {
                out.push(format!(
                    "FP16 held {:.2}× FP32's peak memory ({} against {}).",
                    b.peak_memory_bytes as f64 / a.peak_memory_bytes as f64,
                    mb(b.peak_memory_bytes),
                    mb(a.peak_memory_bytes)
                ));
            }
        }
        _ => out.push(
            "This duel did not run both FP32 and FP16: tick both in Act II and press “Run \
             duel” to get the speed-up."
                .into(),
        ),
    }
    if let Some(b) = fp16 {
        let steps = b.steps + b.skipped_steps;
        out.push(format!(
            "FP16's loss scaler skipped {} of {steps} and ended at a scale of {}.",
            count(b.skipped_steps, "step"),
            b.final_loss_scale
        ));
    }
    out.extend(fp8_outro(report));
    for r in &report.runs {
        let Some(t) = r.telemetry.as_ref() else {
            continue;
        };
        let util = t.samples.iter().map(|s| s.gpu_util_pct).max();
        let used = t.samples.iter().map(|s| s.memory_used_bytes).max();
        let power = t
            .samples
            .iter()
            .map(|s| s.power_w)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        if let (Some(u), Some(m), Some(w)) = (util, used, power) {
            out.push(format!(
                "During {} the GPU was up to {u} % busy, held up to {} and drew up to {w:.0} W \
                 ({}).",
                r.precision,
                mb(m),
                count(t.samples.len(), "reading")
            ));
        }
    }
    out
}

/// The lab jobs, in Act III's order: the kind's wire name, its words, the section to press
/// Run in, and whether it needs a GPU.
const LAB_JOBS: [(&str, &str, &str, bool); 4] = [
    ("kernels", "kernel benchmark", "Kernels on the GPU", true),
    (
        "ladder",
        "convolution ladder",
        "The convolution ladder",
        false,
    ),
    ("inference", "inference latency", "Inference latency", true),
    (
        "anatomy",
        "step anatomy",
        "A training step's anatomy",
        false,
    ),
];

/// Act III: the newest lab run of each kind (its date, device and headline numbers), and for
/// each kind not run yet where to press Run; `gpu` is whether this machine has a GPU
/// (`None`: unknown).
pub fn lab_outro(runs: &[LabRunSummary], gpu: Option<bool>) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, words, section, gpu_only) in LAB_JOBS {
        let mut of_kind: Vec<&LabRunSummary> = runs.iter().filter(|r| r.kind == kind).collect();
        of_kind.sort_by_key(|r| std::cmp::Reverse(r.saved_at));
        match of_kind.first() {
            Some(r) => {
                let kept = if of_kind.len() > 1 {
                    format!(", newest of {} kept", of_kind.len())
                } else {
                    String::new()
                };
                let mut title = r.title.clone();
                if let Some(first) = title.get(..1) {
                    title = format!("{}{}", first.to_uppercase(), &title[1..]);
                }
                out.push(format!(
                    "{title} ({}, {}{kept}): {}.",
                    utc_date_time(r.saved_at),
                    r.device,
                    r.headline
                ));
            }
            None if gpu_only && gpu == Some(false) => out.push(format!(
                "No {words}: it needs a GPU and this machine has none (Home's doctor says why)."
            )),
            None => out.push(format!(
                "No {words} yet: press Run under “{section}” in Act III."
            )),
        }
    }
    out
}

/// Act IV: the Nsight Compute reports in the library (the user's own and the lab's example),
/// their kernels and screenshots, and the GPU the occupancy calculator can use (`gpus`, from
/// the doctor).
pub fn profiling_outro(imports: &ImportList, gpus: &[GpuInfo]) -> Vec<String> {
    let mut out = Vec::new();
    let own: Vec<_> = imports.imports.iter().filter(|i| !i.example).collect();
    let example: Vec<_> = imports.imports.iter().filter(|i| i.example).collect();
    match own.iter().max_by_key(|i| i.imported_at) {
        Some(newest) => {
            let kernels: usize = own.iter().map(|i| i.kernels).sum();
            let shots: usize = own.iter().map(|i| i.screenshots.len()).sum();
            out.push(format!(
                "The library holds {} of your own with {}; the newest is {} ({}, {}).",
                count(own.len(), "Nsight Compute report"),
                count(kernels, "kernel"),
                newest.source_name,
                count(newest.kernels, "kernel"),
                utc_date_time(newest.imported_at)
            ));
            if shots > 0 {
                out.push(format!(
                    "{} attached to their panels.",
                    if shots == 1 {
                        "1 screenshot is".to_string()
                    } else {
                        format!("{shots} screenshots are")
                    }
                ));
            }
        }
        None => out.push(
            "No Nsight Compute report of your own yet: drop a .ncu-rep report or an ncu CSV \
             export on “Nsight Compute reports” in Act IV, or press Profile beside a kernel in \
             Act III."
                .into(),
        ),
    }
    if let Some(e) = example.first() {
        out.push(format!(
            "The lab's example report ({}, {}) is in the library too: measured on another \
             machine, a reference rather than this machine's result.",
            e.source_name,
            count(e.kernels, "kernel")
        ));
    }
    match gpus {
        [] => out.push(
            "No GPU on this machine: the occupancy calculator works on the architecture you \
             pick, and profiling here needs a GPU."
                .into(),
        ),
        gpus => {
            let names: Vec<String> = gpus
                .iter()
                .map(|g| {
                    format!(
                        "{} (compute capability {}, {} SMs)",
                        g.name, g.compute_capability, g.sms
                    )
                })
                .collect();
            out.push(format!(
                "This machine's GPU for the occupancy calculator and profiles: {}.",
                and_list(&names)
            ));
        }
    }
    if !imports.skipped.is_empty() {
        out.push(format!(
            "{} of the library could not be read (Act IV lists them).",
            count(imports.skipped.len(), "part")
        ));
    }
    out
}

/// Act V: the acts tied together from the verdict (the machine and the newest duel), the lab
/// runs and the Nsight Compute library, and what is still to run.
pub fn verdict_outro(
    verdict: &Verdict,
    lab: &[LabRunSummary],
    imports: &ImportList,
) -> Vec<String> {
    let mut out = Vec::new();
    let m = &verdict.machine;
    let gpus = if m.gpus.is_empty() {
        "no GPU".to_string()
    } else {
        and_list(&m.gpus)
    };
    out.push(format!(
        "This machine: {} ({}), {gpus}; the lab picks the {} backend.",
        m.cpu,
        count(m.cores, "core"),
        m.auto_backend
    ));
    let mut todo: Vec<&str> = Vec::new();
    match &verdict.latest {
        Some(run) => {
            out.push(format!("Act II: {}", verdict.headline));
            if let Some(t) = &run.pytorch_sentence {
                out.push(t.clone());
            }
            let fp32 = run.result(Precision::Fp32);
            let fp16 = run.result(Precision::Fp16);
            if let (Some(a), Some(b), Some(x)) = (fp32, fp16, run.speedup_fp16_vs_fp32) {
                let mem = if a.peak_memory_bytes > 0 {
                    format!(
                        " and held {:.2}× FP32's peak memory",
                        b.peak_memory_bytes as f64 / a.peak_memory_bytes as f64
                    )
                } else {
                    String::new()
                };
                let pace = if x >= 1.05 {
                    format!("ran {x:.2}× faster than FP32")
                } else if x <= 0.95 {
                    format!(
                        "ran {:.2}× slower than FP32",
                        1.0 / x.max(f64::MIN_POSITIVE)
                    )
                } else {
                    format!("ran at FP32's pace ({x:.2}×)")
                };
                let next = if run.backend == "cpu" {
                    "the CPU backend has no tensor cores, so Act III's tensor-core rungs and step \
                     anatomy show what a GPU adds to this"
                } else {
                    "Act III's ladder and step anatomy show which kernels make that difference, \
                     and Act IV's profiles why"
                };
                let tie = format!(
                    "Tying it together: on {} ({}) FP16 {pace}{mem}; {next}.",
                    run.backend, run.device
                );
                out.push(tie);
            }
        }
        None => {
            out.push(format!("Act II: {}", crate::verdict::NO_RUN_YET));
            todo.push("a duel in Act II (“Run duel”)");
        }
    }
    if lab.is_empty() {
        todo.push("a lab job in Act III (Run under any of its four sections)");
    } else {
        let kinds: Vec<String> = LAB_JOBS
            .iter()
            .filter_map(|(kind, words, _, _)| {
                let n = lab.iter().filter(|r| r.kind == *kind).count();
                (n > 0).then(|| format!("{n} {words}"))
            })
            .collect();
        out.push(format!(
            "Act III: {} kept ({}).",
            count(lab.len(), "lab run"),
            and_list(&kinds)
        ));
    }
    let own = imports.imports.iter().filter(|i| !i.example).count();
    if own == 0 {
        todo.push("a profile or an ncu import in Act IV");
    } else {
        out.push(format!(
            "Act IV: {} of your own in the library.",
            count(own, "Nsight Compute report")
        ));
    }
    if todo.is_empty() {
        out.push("Every act has results from this machine: export them with “Export HTML”.".into());
    } else {
        out.push(format!(
            "Still to run for a full verdict: {}.",
            and_list(&todo.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        ));
    }
    out
}

#[cfg(test)]
mod tests;
