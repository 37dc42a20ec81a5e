//! The run history's summaries, CSV export and PyTorch sentence, tested.

use super::examples::report;
use super::*;
use crate::pytorch_duel::script_lines::built;
use crate::pytorch_duel::PeerDuel;

#[test]
fn a_summary_has_the_headline_numbers_and_the_speedup() {
    let s = RunSummary::of(
        "20250314-093015-123-00k3",
        7,
        &report("cpu x", 200.0, 100.0),
    );
    assert_eq!(s.precisions, vec![Precision::Fp32, Precision::Fp16]);
    assert_eq!(
        (s.dataset.as_str(), s.epochs, s.train_images),
        ("mnist-sample", 2, 1024)
    );
    assert_eq!(
        s.result(Precision::Fp16).map(|r| r.test_accuracy),
        Some(0.9075)
    );
    assert_eq!(s.speedup_fp16_vs_fp32, Some(2.0));
    let mut only32 = report("cpu", 200.0, 100.0);
    only32.runs.truncate(1);
    assert_eq!(speedup_fp16_vs_fp32(&only32), None);
    assert_eq!(speedup_fp16_vs_fp32(&report("cpu", 200.0, 0.0)), None);
}

#[test]
fn the_csv_has_a_row_per_contestant_and_epoch() {
    let csv = duel_csv(&report("cpu", 200.0, 100.5));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 2 * 2, "{csv}");
    // The first columns are the ones before issue 37, in the same order.
    assert!(lines[0].starts_with(&CSV_HEADER.join(",")), "{}", lines[0]);
    let header = csv_header(&RunSummary::of("", 0, &report("cpu", 200.0, 100.5)).config());
    assert_eq!(lines[0], header.join(","));
    assert_eq!(
        lines[1],
        "fp32,1,,0.3,0.9125,200,12500000,1,1,5120,mnist-sample,1024,500,cpu,cpu,relu,128,128,2,2,0,0.001,\
0.5,fp32 fp16,,no,ours,,cpu,,,,,,"
    );
    assert!(
        lines[4].starts_with("fp16,2,0.25,0.3,0.9075,100.5,12500000,32768,0,"),
        "{}",
        lines[4]
    );
    // Read back with the same crate: every row has every column.
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    assert_eq!(
        r.records()
            .filter(|x| x.as_ref().is_ok_and(|x| x.len() == header.len()))
            .count(),
        4
    );
}

#[test]
fn csv_samples_per_s_is_each_epochs_own_not_the_median() {
    // Issue 26: epoch 1's row repeated the median epoch's samples/s.
    let mut r = report("cpu", 200.0, 100.0);
    r.runs[0].epochs[0].ms = 400.0; // the warm-up epoch: half as fast
    r.runs[0].samples_per_s = 5120.0; // the median epoch's (200 ms)
    let csv = duel_csv(&r);
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let col = CSV_HEADER
        .iter()
        .position(|h| *h == "samples_per_s")
        .unwrap();
    let fp32: Vec<String> = rows
        .records()
        .map(|x| x.unwrap())
        .filter(|x| &x[0] == "fp32")
        .map(|x| x[col].to_string())
        .collect();
    assert_eq!(fp32, ["2560", "5120"]);
}

#[test]
fn csv_rows_carry_the_activation_and_batch() {
    // Issue 26: a ReLU run and a GELU run exported identical configuration-free CSVs.
    let relu = report("cpu", 200.0, 100.0);
    let mut gelu = report("cpu", 200.0, 100.0);
    gelu.config.activation = Activation::Gelu;
    gelu.config.batch = 100_000;
    let (a, b) = (duel_csv(&relu), duel_csv(&gelu));
    assert_ne!(a, b);
    let mut rows = csv::Reader::from_reader(b.as_bytes());
    let head = rows.headers().unwrap().clone();
    let row = rows.records().next().unwrap().unwrap();
    let get = |k: &str| row[head.iter().position(|h| h == k).unwrap()].to_string();
    assert_eq!(
        (
            get("activation"),
            get("batch"),
            get("effective_batch"),
            get("threads")
        ),
        ("gelu".into(), "100000".into(), "1024".into(), "2".into())
    );
}

#[test]
fn history_summaries_keep_the_whole_configuration() {
    // Issue 26: history rows of a ReLU and a GELU run looked identical.
    let mut gelu = report("cpu", 200.0, 100.0);
    gelu.config.activation = Activation::Gelu;
    let a = RunSummary::of("a", 1, &report("cpu", 200.0, 100.0));
    let b = RunSummary::of("b", 1, &gelu);
    assert_eq!(
        (b.activation, b.batch, b.threads),
        (Activation::Gelu, 128, 2)
    );
    assert_ne!(a.settings(), b.settings());
    assert_eq!(a.settings(), "ReLU, batch 128, 2 epochs, 2 threads, seed 0");
    assert_eq!(
        b.setup(),
        "mnist-sample (1024 train / 500 test images) on cpu (cpu)"
    );
    assert!(!a.same_setup(&b));
    assert!(a.same_setup(&RunSummary::of("c", 2, &report("cpu", 300.0, 90.0))));
    assert!(a.has_curves);
    // A batch larger than the training set is labelled with the batch it really was.
    let mut big = report("cpu", 200.0, 100.0);
    big.config.batch = 100_000;
    let s = RunSummary::of("d", 1, &big);
    assert_eq!(s.effective_batch, 1024);
    assert!(
        s.settings()
            .contains("batch 100000 (effective 1024: the whole training set per step)"),
        "{}",
        s.settings()
    );
    // A summary from an older program (no configuration fields) still reads.
    let mut old = serde_json::to_value(&a).unwrap();
    for k in [
        "activation",
        "batch",
        "effective_batch",
        "threads",
        "has_curves",
        "pytorch",
    ] {
        old.as_object_mut().unwrap().remove(k);
    }
    let back: RunSummary = serde_json::from_value(old).unwrap();
    assert_eq!(back.activation, Activation::Relu);
}

#[test]
fn a_repeat_runs_the_same_duel() {
    let mut r = report("cpu", 200.0, 100.0);
    r.config.activation = Activation::Swish;
    r.config.seed = 7;
    let s = RunSummary::of("a", 1, &r);
    let c = s.repeat_config();
    c.validate().unwrap();
    assert_eq!(c.backend, BackendChoice::Cpu);
    assert_eq!(
        (c.dataset.as_str(), c.train_limit, c.test_limit),
        ("mnist-sample", Some(1024), Some(500))
    );
    assert_eq!(
        (c.activation, c.batch, c.epochs, c.seed, c.threads),
        (Activation::Swish, 128, 2, 7, Some(2))
    );
    assert_eq!(c.precisions, vec![Precision::Fp32, Precision::Fp16]);
}

/// Issue 30: a duel naming FP32 twice trained and saved it twice; such a saved run's
/// repeat names each contestant once (a repeated one is now refused, and the verdict that
/// carries the repeat must still read back).
#[test]
fn a_repeat_of_a_run_that_trained_a_precision_twice_names_it_once() {
    let mut r = report("cpu", 200.0, 100.0);
    r.runs.push(r.runs[0].clone());
    let s = RunSummary::of("a", 1, &r);
    let c = s.repeat_config();
    c.validate().unwrap();
    assert_eq!(c.precisions, vec![Precision::Fp32, Precision::Fp16]);
    let back: DuelConfig = serde_json::from_value(serde_json::to_value(&c).unwrap()).unwrap();
    assert_eq!(back, c);
}

#[test]
fn epochs_that_vary_by_more_than_the_limit_are_flagged() {
    let mut r = report("cpu", 200.0, 100.0);
    for (i, ms) in [900.0, 100.0, 130.0].into_iter().enumerate() {
        let mut e = r.runs[1].epochs[0].clone();
        e.epoch = i + 1;
        e.ms = ms;
        if i >= 2 {
            r.runs[1].epochs.push(e);
        } else {
            r.runs[1].epochs[i] = e;
        }
    }
    let s = RunSummary::of("a", 1, &r);
    // fp16's timed epochs (2 and 3): 130 / 100 = 1.3 > 1.25; epoch 1 (the warm-up) is
    // left out. fp32 has one timed epoch: nothing to judge.
    let flagged = s.unsteady();
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert_eq!(flagged[0].0, Precision::Fp16);
    assert!((flagged[0].1 - 1.3).abs() < 1e-9);
    assert_eq!(s.result(Precision::Fp32).unwrap().epoch_spread(), None);
}

#[test]
fn a_reload_says_what_became_of_the_duel() {
    // Issue 26: a reload mid-duel cancelled it and never said so.
    let duel = DuelInFlight {
        started_ms: 1_741_944_615_500,
        what: "fp32, fp16 on mnist-sample".into(),
    };
    let running = JobStatus {
        running: Some("duel".into()),
    };
    let idle = JobStatus::default();
    let before = RunList {
        runs: vec![RunSummary::of("old", 1_741_944_000, &report("c", 2.0, 1.0))],
        skipped: vec![],
    };
    assert_eq!(
        after_reload(&duel, &running, &before),
        AfterReload::StillRunning
    );
    let out = after_reload(&duel, &idle, &before);
    assert_eq!(out, AfterReload::Cancelled);
    assert!(
        out.sentence(&duel).contains("was cancelled by the reload"),
        "{}",
        out.sentence(&duel)
    );
    let mut after = before.clone();
    after.runs.insert(
        0,
        RunSummary::of("new", 1_741_944_700, &report("c", 2.0, 1.0)),
    );
    assert_eq!(
        after_reload(&duel, &idle, &after),
        AfterReload::Saved("new".into())
    );
}

#[test]
fn ids_allow_only_digits_lower_case_letters_and_dashes() {
    assert!(is_run_id("20250314-093015-123-00k3"));
    for bad in [
        "",
        "../x",
        "a/b",
        "A1",
        "x.json",
        "a b",
        "a\\b",
        &"a".repeat(65),
    ] {
        assert!(!is_run_id(bad), "{bad:?}");
    }
}

#[test]
fn dates_are_utc_civil_dates() {
    assert_eq!(utc_date_time(0), "1970-01-01 00:00 UTC");
    assert_eq!(utc_date_time(951_782_400), "2000-02-29 00:00 UTC");
    assert_eq!(utc_parts(1_741_944_615), (2025, 3, 14, 9, 30, 15));
}

#[test]
fn the_sentence_says_faster_or_slower_and_where() {
    let mut report = report("cpu", 100.0, 48.75);
    assert_eq!(comparison_sentence(&report), None);
    let mut d = built();
    report.peer = Some(d.clone());
    let s = comparison_sentence(&report).unwrap();
    assert!(
        s.contains("our fp16 (48.8 ms per epoch) ran 4.00× faster than PyTorch's fastest fp16 (eager, 195.0 ms)")
            && s.contains("(mnist-sample, batch 128; times are epoch 2 of 2)"),
        "{s}"
    );
    assert!(s.contains("PyTorch 2.11.0 on NVIDIA H100 80GB HBM3"), "{s}");
    assert!(!s.contains("our fp32"), "no PyTorch fp32 ran: {s}");
    report.runs[1].epoch_ms_median = 390.0;
    d.note = Some("bf16 was cancelled".into());
    report.peer = Some(d);
    let s = comparison_sentence(&report).unwrap();
    assert!(s.contains("2.00× slower than"), "{s}");
    assert!(
        s.contains("(bf16 was cancelled). These ratios rest on one duel"),
        "{s}"
    );
}

#[test]
fn times_on_different_devices_are_shown_not_compared() {
    let mut report = report("NVIDIA H100", 100.0, 48.75);
    let mut d = built();
    d.comparable = false;
    assert!(d.compare(Precision::Fp16, 48.75).is_empty());
    report.peer = Some(d);
    let s = comparison_sentence(&report).unwrap();
    assert!(s.contains("its times are shown, not compared"), "{s}");
    assert!(!s.contains("faster"), "{s}");
}

#[test]
fn an_old_report_without_pytorch_still_reads() {
    let report = report("cpu", 100.0, 48.75);
    let mut v = serde_json::to_value(&report).unwrap();
    v.as_object_mut().unwrap().remove("peer");
    let back: DuelReport = serde_json::from_value(v).unwrap();
    assert!(back.peer.is_none());
    assert_eq!(back.runs.len(), 2);
    let mut p = serde_json::to_value(built()).unwrap();
    p.as_object_mut().unwrap().remove("comparable");
    let p: PeerDuel = serde_json::from_value(p).unwrap();
    assert!(p.comparable);
}

/// Issue 37: "ours 46.52× faster" rested on one run with no spread, below the verdict's own
/// rule, and FP8's comparison did not say that ours and PyTorch's compute on different engines.
#[test]
fn the_pytorch_sentence_states_what_its_ratios_rest_on_and_fp8s_engines() {
    let mut report = report("cpu", 100.0, 48.75);
    report.peer = Some(built());
    let s = comparison_sentence(&report).unwrap();
    assert!(
        s.contains("These ratios rest on one duel (our fp16 median of 1 epoch, no spread; PyTorch's eager-amp-fp16 median of 2 epochs, spread 1.05×)"),
        "{s}"
    );
    assert!(
        s.ends_with("the verdict states a speed-up from 3 runs of the same duel."),
        "{s}"
    );
    assert!(!s.contains("FP8"), "no FP8 row: {s}");

    // An fp8 contestant against PyTorch's FP8.
    report.runs[1].precision = Precision::Fp8;
    let mut peer = built();
    peer.runs[0].precision = Precision::Fp8;
    peer.runs[0].label = "PyTorch FP8 (im2col + torch._scaled_mm, delayed scaling), eager".into();
    report.peer = Some(peer);
    let s = comparison_sentence(&report).unwrap();
    assert!(
        s.contains("our fp8 rounds its convolutions' operands to E4M3/E5M2 with a scale per tensor and multiplies them in FP32 on the CPU; PyTorch's runs PyTorch FP8 (im2col + torch._scaled_mm"),
        "{s}"
    );
    report.backend = "cuda".into();
    let s = comparison_sentence(&report).unwrap();
    assert!(s.contains("on the FP16 tensor cores"), "{s}");
}

/// The value of column `name` in each data row of `csv`.
fn column(csv: &str, name: &str) -> Vec<String> {
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let head = rows.headers().unwrap().clone();
    let i = head
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    rows.records().map(|r| r.unwrap()[i].to_string()).collect()
}

/// Regression (issue 37): a PyTorch run's CSV lost all of PyTorch's rows.
#[test]
fn the_csv_of_a_run_with_pytorch_has_its_pytorch_rows() {
    let mut r = report("cpu", 200.0, 100.0);
    r.peer = Some(built());
    let peer_epochs: usize = built().runs.iter().map(|x| x.epochs.len()).sum();
    assert!(peer_epochs > 0);
    let csv = run_csv("20261128-130411-950-05ht", Some(1_795_871_051), &r);
    let source = column(&csv, "source");
    assert_eq!(
        source.iter().filter(|s| *s == "pytorch").count(),
        peer_epochs
    );
    assert_eq!(source.iter().filter(|s| *s == "ours").count(), 4);
    let variant = column(&csv, "variant");
    assert!(variant.contains(&"PyTorch AMP fp16 + GradScaler, eager".to_string()));
    let ran_on = column(&csv, "ran_on");
    assert!(ran_on.contains(&"NVIDIA H100 80GB HBM3".to_string()));
    assert!(column(&csv, "date")
        .iter()
        .all(|d| d == "2026-11-28 13:04 UTC"));
    assert!(column(&csv, "run_id")
        .iter()
        .all(|d| d == "20261128-130411-950-05ht"));
    assert!(column(&csv, "pytorch").iter().all(|d| d == "yes"));
}

/// Regression (issue 37): runs on 4,000 and 8,000 images, or with FP8's delayed and current
/// recipes, read the same in the history, the verdict and the CSV.
#[test]
fn the_train_limit_and_the_fp8_recipe_are_in_the_summary_and_the_csv() {
    use crate::fp8::Fp8Scaling;
    let mut a = RunSummary::of("a", 0, &report("cpu", 200.0, 100.0));
    a.train_images = 4000;
    a.fp8_scaling = Some(Fp8Scaling::Delayed);
    let mut b = a.clone();
    b.train_images = 8000;
    let mut c = a.clone();
    c.fp8_scaling = Some(Fp8Scaling::Current);
    let (sa, sb, sc) = (
        a.config().summary(),
        b.config().summary(),
        c.config().summary(),
    );
    assert!(sa.contains("4,000 train / 500 test images"), "{sa}");
    assert!(sb.contains("8,000 train"), "{sb}");
    assert!(
        sa.contains("FP8 delayed scaling") && sc.contains("FP8 current scaling"),
        "{sc}"
    );
    assert_ne!(sa, sb);
    // A batch larger than the training set: the batch a step really held, as the history
    // always said it.
    let mut big = a.clone();
    (big.batch, big.effective_batch) = (100_000, 4000);
    assert!(big
        .config()
        .summary()
        .contains("batch 100000 (effective 4000)"));
    assert!(!a.same_setup(&c), "another FP8 recipe is another duel");
    let cols = a.config().csv_columns();
    for k in [
        "train_images",
        "fp8_recipe",
        "pytorch",
        "dropout",
        "precisions",
        "batch",
    ] {
        assert!(cols.contains(&k), "{k}");
    }
    let v = a.config().csv_values();
    let at = |k: &str| v[cols.iter().position(|c| *c == k).unwrap()].clone();
    assert_eq!(
        (at("train_images"), at("fp8_recipe")),
        ("4000".into(), "delayed".into())
    );
    // A duel's CSV takes its configuration from the same function.
    let mut r = report("cpu", 200.0, 100.0);
    r.dataset.train = 4000;
    assert!(column(&duel_csv(&r), "train_images")
        .iter()
        .all(|x| x == "4000"));
}

/// Issue 37: a run saved before origins were recorded still loads, with its device and date
/// from the report, and no machine (never this machine's).
#[test]
fn a_run_saved_before_origins_has_its_device_and_date_and_no_machine() {
    let s = RunSummary::of(
        "20261128-130103-019-00hn",
        1_795_870_863,
        &report("NVIDIA H200 (sm_90)", 2.0, 1.0),
    );
    assert_eq!(s.origin.machine, None);
    assert_eq!(s.origin.device, "NVIDIA H200");
    assert_eq!(s.origin.compute_capability.as_deref(), Some("9.0"));
    assert_eq!(s.origin.date(), "2026-11-28");
    // A summary from before the field reads too.
    let mut v = serde_json::to_value(&s).unwrap();
    v.as_object_mut().unwrap().remove("origin");
    let back: RunSummary = serde_json::from_value(v).unwrap();
    assert_eq!(back.origin, crate::origin::Origin::default());
}

/// Issue 37: the exported loss PNG's caption names the run, device, data set, batch and date.
#[test]
fn a_charts_caption_names_run_device_data_batch_and_date() {
    let c = chart_caption(
        "20261128-130411-950-05ht",
        1_795_871_051,
        &report("NVIDIA H200 (sm_90)", 2.0, 1.0),
    );
    assert_eq!(
        c,
        "Run 20261128-130411-950-05ht · NVIDIA H200 (sm_90) · mnist-sample (1,024 train images) · batch 128 · 2026-11-28 13:04 UTC"
    );
}
