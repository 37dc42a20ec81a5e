//! Tests of `walk`.

use super::*;
use crate::ncu::{Format, ImportSummary};
use crate::runs::examples::report;
use crate::types::{Telemetry, TelemetrySample};
use crate::verdict::Machine;

fn joined(lines: &[String]) -> String {
    lines.join("\n")
}

fn dataset(name: &str, train: usize, available: bool) -> DatasetSummary {
    DatasetSummary {
        name: name.into(),
        train,
        test: train / 4,
        image: [28, 28],
        source: if name == "mnist-sample" {
            "embedded".into()
        } else {
            format!("/data/{name}")
        },
        available,
        note: format!("note of {name}"),
        location: (available && name != "mnist-sample").then(|| format!("/data/{name}")),
    }
}

fn lab(kind: &str, title: &str, saved_at: u64, headline: &str) -> LabRunSummary {
    LabRunSummary {
        id: format!("lab-{saved_at}-{kind}"),
        saved_at,
        kind: kind.into(),
        title: title.into(),
        device: "NVIDIA H100 80GB HBM3".into(),
        headline: headline.into(),
        gpu: true,
        origin: Default::default(),
    }
}

fn import(name: &str, kernels: usize, at: u64, example: bool) -> ImportSummary {
    ImportSummary {
        id: format!("{at:016x}"),
        source_name: name.into(),
        source_bytes: 1000,
        format: Format::Details,
        kernels,
        imported_at: at,
        screenshots: Vec::new(),
        example,
        profiled_on: None,
    }
}

fn gpu() -> GpuInfo {
    GpuInfo {
        index: 0,
        name: "NVIDIA H100 80GB HBM3".into(),
        compute_capability: "9.0".into(),
        memory_bytes: 85_000_000_000,
        sms: 132,
    }
}

#[test]
fn the_walk_goes_home_then_acts_one_to_five() {
    assert_eq!(next(Page::Home), Some(Page::Setup));
    assert_eq!(next(Page::Profiling), Some(Page::Verdict));
    assert_eq!(next(Page::Verdict), None);
    assert_eq!(previous(Page::Setup), Some(Page::Home));
    assert_eq!(previous(Page::Home), None);
    assert_eq!(next(Page::Docs), None);
    assert_eq!(step_index(Page::Kernels), Some(3));
    let labels: Vec<&str> = STEPS.iter().map(|p| step_label(*p)).collect();
    assert_eq!(labels, ["Home", "I", "II", "III", "IV", "V"]);
    for p in STEPS {
        assert_eq!(intro(p).is_some(), p != Page::Home, "{p:?}");
    }
}

#[test]
fn the_duel_outro_carries_the_reports_numbers() {
    let r = report("Ryzen 7 7840U", 200.0, 125.0);
    let text = joined(&duel_outro(&r));
    for needle in [
        "fp32 and fp16 trained 2 epoch(s) each on mnist-sample",
        "1024 training / 500 test images, batch 128",
        "cpu backend on Ryzen 7 7840U",
        "fp32: median epoch 200.0 ms (1000 images/s), test accuracy 91.25 %, peak memory 12.5 MB",
        "fp16: median epoch 125.0 ms",
        "test accuracy 90.75 %",
        "FP16 mixed precision trained 1.60× faster per epoch than FP32 (125.0 ms against 200.0 ms)",
        "FP16's test accuracy is -0.50 points from FP32's",
        "FP16 held 1.00× FP32's peak memory",
        "skipped 1 step of 11 and ended at a scale of 32768",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
    assert!(!text.contains("GPU was up to"), "{text}");
}

#[test]
fn the_duel_outro_and_the_verdict_say_what_pytorch_showed() {
    let mut r = report("NVIDIA H100 80GB HBM3", 100.0, 50.0);
    r.peer = Some(crate::pytorch_duel::examples::peer_duel(400.0, 200.0));
    let text = joined(&duel_outro(&r));
    let needle = "Beside PyTorch 2.11.0 on NVIDIA H100 80GB HBM3 on the same data and \
                  settings (mnist-sample, batch 128; times are epoch 2 of 2), our fp32 (100.0 ms per epoch) ran 4.00× faster than PyTorch's \
                  fastest fp32 (eager, 400.0 ms); our fp16 (50.0 ms per epoch) ran 4.00× \
                  faster than PyTorch's fastest fp16 (eager, 200.0 ms).";
    assert!(text.contains(needle), "{text}");
    let summary = RunSummary::of("run-p", 1_741_944_615, &r);
    assert!(summary.pytorch);
    let v = verdict_of(Some(summary));
    let outro = joined(&verdict_outro(&v, &[], &ImportList::default()));
    assert!(outro.contains(needle), "{outro}");
    assert!(crate::verdict::render_html(&v).contains("<p id=\"pytorch\">Beside PyTorch 2.11.0"));
    // Without PyTorch, nothing is said of it.
    assert!(!joined(&duel_outro(&report("x", 100.0, 50.0))).contains("PyTorch"));
}

#[test]
fn a_slower_fp16_says_so_and_why_on_the_cpu() {
    let text = joined(&duel_outro(&report("cpu x", 100.0, 250.0)));
    assert!(
        text.contains(
            "FP16 mixed precision was 2.50× slower per epoch than FP32 (250.0 ms against 100.0 ms)"
        ),
        "{text}"
    );
    assert!(text.contains("no FP16 tensor cores"), "{text}");
    assert!(!text.contains("faster per epoch"), "{text}");
}

#[test]
fn a_duel_without_fp16_says_what_to_tick() {
    let mut r = report("cpu x", 100.0, 50.0);
    r.runs.truncate(1);
    let text = joined(&duel_outro(&r));
    assert!(text.starts_with("fp32 trained 2 epoch(s)"), "{text}");
    assert!(text.contains("tick both in Act II"), "{text}");
    assert!(!text.contains("loss scaler"), "{text}");
}

#[test]
fn telemetry_gives_the_gpus_busiest_moment() {
    let mut r = report("NVIDIA H100", 20.0, 10.0);
    r.backend = "cuda".into();
    let sample = |u: u32, mem: u64, w: f64| TelemetrySample {
        t_ms: 0.0,
        gpu_util_pct: u,
        mem_util_pct: 0,
        sm_clock_mhz: 1980,
        memory_used_bytes: mem,
        power_w: w,
        temperature_c: 50,
    };
    r.runs[1].telemetry = Some(Telemetry {
        samples: vec![
            sample(40, 900_000_000, 120.0),
            sample(87, 1_250_000_000, 310.4),
        ],
        process_memory_peak_bytes: None,
        note: None,
    });
    let text = joined(&duel_outro(&r));
    assert!(
        text.contains("During fp16 the GPU was up to 87 % busy, held up to 1250.0 MB and drew up to 310 W (2 readings)"),
        "{text}"
    );
    assert!(text.contains("2.00× faster"), "{text}");
}

#[test]
fn the_newest_duel_line_names_the_run_and_its_date() {
    let s = RunSummary::of(
        "20250314-093015-123-00k3",
        1_741_944_615,
        &report("x", 2.0, 1.0),
    );
    assert_eq!(
        newest_duel_line(&s, 3),
        "From the newest of 3 saved duels (20250314-093015-123-00k3), saved 2025-03-14 09:30 UTC."
    );
    assert!(newest_duel_line(&s, 1).contains("newest of 1 saved duel ("));
}

#[test]
fn act_one_lists_the_data_and_the_trained_models() {
    let sets = [
        dataset("mnist-sample", 8000, true),
        dataset("fashion-mnist", 60000, false),
        dataset("mnist", 60000, false),
    ];
    let s = RunSummary::of("r1", 1_741_944_615, &report("cpu x", 200.0, 100.0));
    let text = joined(&setup_outro(&sets, Some(&s)));
    assert!(
        text.contains("Data on this machine: mnist-sample (8000 training / 2000 test images of 28×28 pixels, embedded in the program)."),
        "{text}"
    );
    assert!(
        text.contains("fashion-mnist (60000 training / 15000 test images) is not on this machine (note of fashion-mnist)"),
        "{text}"
    );
    assert!(
        text.contains("Full MNIST (60000 training / 15000 test images)"),
        "{text}"
    );
    assert!(text.contains("press “Get full MNIST”"), "{text}");
    assert!(
        text.contains("trained fp32 to 91.25 % and fp16 to 90.75 % test accuracy on mnist-sample, 2 epoch(s) each"),
        "{text}"
    );
    assert!(
        text.contains("2025-03-14 09:30 UTC, cpu on cpu x"),
        "{text}"
    );
    assert!(!text.contains(NO_MODEL), "{text}");

    let sets = [
        dataset("mnist-sample", 8000, true),
        dataset("mnist", 60000, true),
    ];
    let text = joined(&setup_outro(&sets, None));
    assert!(
        text.contains(
            "and mnist (60000 training / 15000 test images of 28×28 pixels, read from /data/mnist)"
        ),
        "{text}"
    );
    assert!(!text.contains("Get full MNIST"), "{text}");
    assert!(text.contains(NO_MODEL), "{text}");
}

#[test]
fn act_three_gives_the_newest_run_of_each_kind_and_says_what_to_run() {
    let runs = [
        lab(
            "ladder",
            "convolution ladder",
            2_000,
            "15 rows on 2 layer(s); 8/8 checks pass",
        ),
        lab("ladder", "convolution ladder", 1_000, "OLD ladder"),
        lab(
            "anatomy",
            "step anatomy",
            1_500,
            "batch 128 on cuda: fp32 41 launches 1.234 ms",
        ),
    ];
    let text = joined(&lab_outro(&runs, Some(true)));
    assert!(
        text.contains("Convolution ladder (1970-01-01 00:33 UTC, NVIDIA H100 80GB HBM3, newest of 2 kept): 15 rows on 2 layer(s); 8/8 checks pass."),
        "{text}"
    );
    assert!(!text.contains("OLD ladder"), "{text}");
    assert!(text.contains("Step anatomy (1970-01-01 00:25 UTC, NVIDIA H100 80GB HBM3): batch 128 on cuda: fp32 41 launches 1.234 ms."), "{text}");
    assert!(
        text.contains("No kernel benchmark yet: press Run under “Kernels on the GPU” in Act III."),
        "{text}"
    );
    assert!(
        text.contains("No inference latency yet: press Run under “Inference latency”"),
        "{text}"
    );

    let text = joined(&lab_outro(&[], Some(false)));
    assert!(
        text.contains("No kernel benchmark: it needs a GPU"),
        "{text}"
    );
    assert!(
        text.contains("No convolution ladder yet: press Run under “The convolution ladder”"),
        "{text}"
    );
}

#[test]
fn act_four_counts_the_users_reports_apart_from_the_example() {
    let list = ImportList {
        imports: vec![
            import("ours_details.csv", 14, 10, true),
            import("mine.csv", 3, 20, false),
            import("step.ncu-rep", 41, 1_741_944_615, false),
        ],
        skipped: vec!["imports/bad: damaged".into()],
    };
    let text = joined(&profiling_outro(&list, &[gpu()]));
    assert!(
        text.contains("The library holds 2 Nsight Compute reports of your own with 44 kernels; the newest is step.ncu-rep (41 kernels, 2025-03-14 09:30 UTC)."),
        "{text}"
    );
    assert!(
        text.contains("example report (ours_details.csv, 14 kernels)"),
        "{text}"
    );
    assert!(
        text.contains("NVIDIA H100 80GB HBM3 (compute capability 9.0, 132 SMs)"),
        "{text}"
    );
    assert!(
        text.contains("1 part of the library could not be read"),
        "{text}"
    );

    let only_example = ImportList {
        imports: vec![import("ours_details.csv", 14, 10, true)],
        skipped: vec![],
    };
    let text = joined(&profiling_outro(&only_example, &[]));
    assert!(
        text.contains("No Nsight Compute report of your own yet: drop a .ncu-rep"),
        "{text}"
    );
    assert!(text.contains("No GPU on this machine"), "{text}");
}

fn verdict_of(latest: Option<RunSummary>) -> Verdict {
    let headline = match &latest {
        Some(_) => "FP16 mixed precision trained 1.60× faster than FP32 on cpu (cpu x).".into(),
        None => crate::verdict::NO_RUN_YET.into(),
    };
    Verdict {
        generated_at: 0,
        machine: Machine {
            version: "0.1.0".into(),
            cpu: "AMD EPYC 7B13".into(),
            cores: 2,
            gpus: vec![],
            auto_backend: "cpu".into(),
            auto_reason: "no CUDA driver".into(),
            here: Default::default(),
        },
        latest,
        earlier: vec![],
        headline,
        notes: vec![],
        basis: None,
        repeat: None,
        flags: vec![],
        groups: vec![],
        repeat_blocked: None,
        latest_origin: None,
    }
}

#[test]
fn act_five_ties_the_acts_together() {
    let s = RunSummary::of("r1", 7, &report("cpu x", 200.0, 125.0));
    let runs = [
        lab("ladder", "convolution ladder", 2, "h"),
        lab("anatomy", "step anatomy", 3, "h"),
        lab("anatomy", "step anatomy", 4, "h"),
    ];
    let list = ImportList {
        imports: vec![import("mine.csv", 3, 20, false)],
        skipped: vec![],
    };
    let text = joined(&verdict_outro(&verdict_of(Some(s)), &runs, &list));
    assert!(
        text.contains(
            "This machine: AMD EPYC 7B13 (2 cores), no GPU; the lab picks the cpu backend."
        ),
        "{text}"
    );
    assert!(
        text.contains("Act II: FP16 mixed precision trained 1.60× faster"),
        "{text}"
    );
    assert!(
        text.contains("Tying it together: on cpu (cpu x) FP16 ran 1.60× faster than FP32 and held 1.00× FP32's peak memory; the CPU backend has no tensor cores"),
        "{text}"
    );
    assert!(
        text.contains("Act III: 3 lab runs kept (1 convolution ladder and 2 step anatomy)."),
        "{text}"
    );
    assert!(
        text.contains("Act IV: 1 Nsight Compute report of your own"),
        "{text}"
    );
    assert!(
        text.contains("Every act has results from this machine"),
        "{text}"
    );

    let mut slow = RunSummary::of("r2", 7, &report("NVIDIA L4", 100.0, 250.0));
    slow.backend = "cuda".into();
    let text = joined(&verdict_outro(&verdict_of(Some(slow)), &[], &list));
    assert!(
        text.contains("on cuda (NVIDIA L4) FP16 ran 2.50× slower than FP32 and held 1.00× FP32's peak memory; Act III's ladder"),
        "{text}"
    );
    assert!(
        text.contains("Still to run for a full verdict: a lab job in Act III"),
        "{text}"
    );

    let text = joined(&verdict_outro(
        &verdict_of(None),
        &[],
        &ImportList::default(),
    ));
    assert!(text.contains(crate::verdict::NO_RUN_YET), "{text}");
    assert!(
        text.contains("Still to run for a full verdict: a duel in Act II (“Run duel”), a lab job in Act III (Run under any of its four sections) and a profile or an ncu import in Act IV."),
        "{text}"
    );
}

#[test]
fn the_duel_outro_covers_fp8_where_it_ran_and_says_when_it_ran_elsewhere() {
    let mut r = report("cpu", 100.0, 50.0);
    assert!(fp8_outro(&r).is_empty(), "no FP8, no sentence");
    let mut fp8 = r.runs[0].clone();
    fp8.precision = Precision::Fp8;
    fp8.test_accuracy = r.runs[0].test_accuracy - 0.005;
    fp8.fp8 = Some(crate::fp8::examples::report(&r.device, 32));
    r.runs.push(fp8.clone());
    let text = duel_outro(&r).join(" ");
    assert!(text.contains("FP8 ran emulated on the CPU"), "{text}");
    assert!(
        text.contains("FP8's test accuracy is -0.50 points from FP32's"),
        "{text}"
    );
    assert!(
        text.contains("32 step(s), 6 saturated and 2,040 flushed to zero of 6,000,000"),
        "{text}"
    );
    assert!(
        text.contains("conv2.grad_output at 2^25 and conv1.grad_output at 2^25"),
        "{text}"
    );
    assert!(!text.contains("not compared"), "{text}");
    // FP8 trained on the CPU beside a GPU duel: said, and not compared.
    r.device = "NVIDIA H100 80GB HBM3".into();
    let text = fp8_outro(&r).join(" ");
    assert!(
        text.contains("It ran on cpu, not on NVIDIA H100 80GB HBM3: its epoch time and memory are not compared"),
        "{text}"
    );
}
