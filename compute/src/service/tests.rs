//! Tests of `service`.

use super::*;
use crate::types::{BackendChoice, DuelConfig, Precision};

fn service() -> (tempfile::TempDir, Service) {
    let t = tempfile::tempdir().unwrap();
    let s = Service::new(t.path());
    (t, s)
}

fn quick(s: &Service, r: impl Into<Request>) -> Result<serde_json::Value> {
    s.handle(r.into(), &mut |_| {}, &Arc::new(AtomicBool::new(false)))
}

#[test]
fn handle_answers_quick_requests_as_json() {
    let (_t, s) = service();
    let m = quick(&s, ModelSummaryRequest {}).unwrap();
    assert!(m.is_object());
    let input = crate::occupancy::OccupancyInput {
        threads_per_block: 256,
        registers_per_thread: 64,
        shared_mem_per_block: 0,
        carveout_pct: None,
    };
    let o = quick(
        &s,
        OccupancyRequest {
            cc: "9.0".into(),
            input,
        },
    )
    .unwrap();
    assert!(o["occupancy_pct"].as_f64().is_some(), "{o}");
    let e = quick(
        &s,
        OccupancyRequest {
            cc: "sm_13".into(),
            input,
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::BadInput);
    let c = quick(&s, CancelRequest {}).unwrap();
    assert_eq!(c, serde_json::json!({"cancelled": false}));
}

#[test]
fn typed_calls_answer_their_reply_type() {
    let (_t, s) = service();
    let flag = Arc::new(AtomicBool::new(false));
    let summary: crate::model::ModelSummary =
        s.call(ModelSummaryRequest {}, &mut |_| {}, &flag).unwrap();
    assert_eq!(summary, crate::model::lab_summary());
    let runs: crate::runs::RunList = s.call(RunsRequest {}, &mut |_| {}, &flag).unwrap();
    assert!(runs.runs.is_empty() && runs.skipped.is_empty());
}

#[test]
fn dataset_samples_requests_answer_a_page_or_name_the_field() {
    let (_t, s) = service();
    let req: Request =
        serde_json::from_str(r#"{"op":"dataset_samples","dataset":"mnist-sample"}"#).unwrap();
    let page = quick(&s, req).unwrap();
    let page: crate::types::DatasetSamples = serde_json::from_value(page).unwrap();
    assert_eq!((page.count(), page.offset, page.total), (64, 0, 2000));
    assert_eq!(page.split, crate::types::DataSplit::Test);
    assert_eq!(page.pixels().unwrap().len(), 64 * 784);
    let ask = |dataset: &str, offset: usize, count: usize| {
        quick(
            &s,
            DatasetSamplesRequest {
                dataset: dataset.into(),
                split: crate::types::DataSplit::Train,
                offset,
                count,
            },
        )
    };
    let e = ask("mnist-sample", 0, 300).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::BadInput);
    assert!(e.to_string().contains("count"), "{e}");
    let e = ask("mnist-sample", 8000, 64).unwrap_err();
    assert!(e.to_string().contains("offset"), "{e}");
    let e = ask("cifar", 0, 64).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::BadInput);
    assert!(e.to_string().contains("dataset 'cifar'"), "{e}");
    assert_eq!(
        ask("mnist-sample", 7990, 64).unwrap()["labels"]
            .as_array()
            .map(Vec::len),
        Some(10)
    );
}

#[test]
fn a_screenshot_comes_back_as_base64_and_unknown_ids_are_named() {
    use base64::Engine;
    let t = tempfile::tempdir().unwrap();
    let store = crate::ncu_library::ImportStore::open(t.path()).unwrap();
    let text = include_str!("../../core/tests/data/ncu/ours_details.csv");
    let report = crate::ncu::import_str(text).unwrap();
    let imp = store
        .save_bytes("ours.csv", text.as_bytes(), &report)
        .unwrap();
    let img = image::RgbImage::from_fn(3, 2, |x, y| image::Rgb([x as u8, y as u8, 9]));
    let mut png = std::io::Cursor::new(Vec::new());
    img.write_to(&mut png, image::ImageFormat::Png).unwrap();
    let png = png.into_inner();
    let shot = store
        .attach(&imp.id, None, "launch", "l.png", &png, None)
        .unwrap();
    let out = screenshot_image(&store, &imp.id, &shot.id).unwrap();
    assert_eq!(out.mime, "image/png");
    let back = base64::engine::general_purpose::STANDARD
        .decode(&out.base64)
        .unwrap();
    assert_eq!(back, png);
    assert!(out.data_url().starts_with("data:image/png;base64,iVBOR"));
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(json["mime"], "image/png");

    let e = screenshot_image(&store, &imp.id, "fedcba9876543210").unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::BadInput);
    assert!(e.to_string().contains("'fedcba9876543210'"), "{e}");
    let e = screenshot_image(&store, "../../etc", &shot.id).unwrap_err();
    assert!(e.to_string().contains("no import '../../etc'"), "{e}");
    let req: Request = serde_json::from_str(
        r#"{"op":"ncu_screenshot","import":"0123456789abcdef","screenshot":"x"}"#,
    )
    .unwrap();
    assert!(matches!(req, Request::NcuScreenshot(_)));
}

/// Regression (issue 38, defect 3): one `ncu_panels` call on a 60,000-kernel import built
/// a 109 MB reply. It answers a page of at most `MAX_PANELS_PAGE` kernels now, and a call
/// for more is refused before any panel is built.
#[test]
fn ncu_panels_of_a_large_import_is_paged_and_an_over_budget_reply_refused() {
    let (t, s) = service();
    let store = crate::ncu_library::ImportStore::open(t.path()).unwrap();
    // A raw page export of n kernels, one metric each.
    let n = MAX_PANELS_PAGE + 5;
    let mut text = String::from(
        "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\
         \"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\
         \"gpu__time_duration.sum\"\n\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"usecond\"\n",
    );
    for id in 0..n {
        text.push_str(&format!(
            "\"{id}\",\"1\",\"p\",\"h\",\"k{id}(int)\",\"1\",\"7\",\"(64, 1, 1)\",\
             \"(64, 1, 1)\",\"0\",\"9.0\",\"3.5\"\n"
        ));
    }
    let report = crate::ncu::import_str(&text).unwrap();
    assert_eq!(report.kernels.len(), n);
    let imp = store
        .save_bytes("big.csv", text.as_bytes(), &report)
        .unwrap();
    let ask = |offset, limit| {
        quick(
            &s,
            NcuPanelsRequest {
                import: imp.id.clone(),
                kernel: None,
                offset,
                limit,
            },
        )
    };
    let e = ask(0, None).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::BadInput, "{e}");
    assert!(e.to_string().contains("a page at a time"), "{e}");
    let first = ask(0, Some(MAX_PANELS_PAGE)).unwrap();
    assert_eq!(first.as_array().unwrap().len(), MAX_PANELS_PAGE);
    let rest = ask(MAX_PANELS_PAGE, None).unwrap();
    assert_eq!(rest.as_array().unwrap().len(), 5);
    assert!(ask(0, Some(MAX_PANELS_PAGE + 1)).is_err());
    let summary = store.list().unwrap();
    assert_eq!(summary[0].kernels, n);
}

/// Regression (issue 38, smaller items): error messages carried the server's absolute
/// paths (the run history's folder), and a duel's `data_dir` told a client whether a
/// folder existed ("is not a directory" against "holds no …"). Paths now appear only as
/// the client gave them, and a missing folder, a file and an empty folder answer alike.
#[test]
fn errors_carry_paths_only_as_the_client_gave_them_and_data_dir_does_not_reveal_folders() {
    let (t, s) = service();
    let home = t.path().display().to_string();
    for r in [
        Request::from(RunRequest {
            id: "0-nope".into(),
        }),
        Request::from(LabRunRequest {
            id: "lab-0-nope".into(),
        }),
        Request::from(NcuPanelsRequest {
            import: "0123456789abcdef".into(),
            kernel: None,
            offset: 0,
            limit: None,
        }),
    ] {
        let e = quick(&s, r).unwrap_err();
        assert!(!e.to_string().contains(&home), "{e}");
    }
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let file = t.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let missing = t.path().join("missing");
    let answer = |dir: &std::path::Path| {
        let e = quick(
            &s,
            DuelRequest {
                config: DuelConfig {
                    data_dir: Some(dir.display().to_string()),
                    dataset: "dir".into(),
                    ..small_duel()
                },
            },
        )
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput, "{e}");
        e.to_string().replace(&dir.display().to_string(), "DIR")
    };
    let said = answer(&empty);
    assert_eq!(answer(&file), said);
    assert_eq!(answer(&missing), said);
}

/// Regression (issue 38, defect 4): `epochs: 10000` with a one-image train limit and four
/// precisions wrote a 642 MB pretty-printed run (mostly gradient samples) that the store's
/// 64 MiB read limit then refused: listed as damaged, refused by `run`, `run_csv` and
/// `explain`. The largest duel the service accepts on this machine (every precision the
/// CPU trains, the most epochs) at the smallest data now writes a compact run well under
/// the limit, and every reader reopens it.
#[test]
fn the_longest_duel_accepted_writes_a_run_its_store_reads_back() {
    let (t, s) = service();
    let cancel = Arc::new(AtomicBool::new(false));
    let config = DuelConfig {
        precisions: vec![
            Precision::Fp32,
            Precision::Fp16,
            Precision::Bf16,
            Precision::Fp8,
        ],
        epochs: crate::bounds::MAX_EPOCHS,
        batch: 1,
        train_limit: Some(1),
        test_limit: Some(1),
        ..small_duel()
    };
    let out = s
        .call(DuelRequest { config }, &mut |_| {}, &cancel)
        .unwrap();
    let id = out.saved_run.clone().expect("the run was saved");
    for run in &out.report.runs {
        assert_eq!(run.epochs.len(), crate::bounds::MAX_EPOCHS);
        assert!(run.grad_samples.len() <= crate::bounds::GRAD_SAMPLE_EPOCHS + 32);
        assert!(run.scale_history.len() <= crate::bounds::SCALE_POINTS_MAX);
        assert!(run.curve.len() <= crate::bounds::CURVE_POINTS_MAX);
    }
    let file = t.path().join("runs").join(format!("{id}.json"));
    let bytes = std::fs::metadata(&file).unwrap().len();
    assert!(
        bytes < crate::bounds::MAX_RUN_BYTES / 4,
        "{bytes} bytes written for the longest duel"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("\n  "), "the run is written compact");
    let listed = s.call(RunsRequest {}, &mut |_| {}, &cancel).unwrap();
    assert!(listed.skipped.is_empty(), "{:?}", listed.skipped);
    assert_eq!(listed.runs.len(), 1);
    let back = s
        .call(RunRequest { id: id.clone() }, &mut |_| {}, &cancel)
        .unwrap();
    assert_eq!(back.runs.len(), 4);
    let csv = s
        .call(RunCsvRequest { id: id.clone() }, &mut |_| {}, &cancel)
        .unwrap();
    assert!(csv.csv.lines().count() > 4 * crate::bounds::MAX_EPOCHS);
    let explained = s
        .call(
            ExplainRequest {
                run: Some(id.clone()),
                precisions: Vec::new(),
                digit: DigitSource::Dataset {
                    dataset: "mnist-sample".into(),
                    split: crate::types::DataSplit::Test,
                    index: 0,
                },
                backend: BackendChoice::Cpu,
            },
            &mut |_| {},
            &cancel,
        )
        .unwrap();
    assert_eq!(explained.run.as_deref(), Some(id.as_str()));
}

fn small_duel() -> DuelConfig {
    DuelConfig {
        backend: BackendChoice::Cpu,
        precisions: vec![Precision::Fp32],
        train_limit: Some(256),
        test_limit: Some(64),
        epochs: 1,
        threads: Some(1),
        ..DuelConfig::default()
    }
}

/// The regression of the `BUSY` static: two services are two job slots, so a duel
/// running in one never makes the other answer "busy".
#[test]
fn two_services_never_share_a_job_slot() {
    let (_a, one) = service();
    let (_b, two) = service();
    let flag = Arc::new(AtomicBool::new(false));
    let _held = one.jobs.take("duel", &flag).unwrap();
    assert_eq!(one.running_job(), Some("duel"));
    assert_eq!(two.running_job(), None);
    let busy = one
        .call(
            DuelRequest {
                config: small_duel(),
            },
            &mut |_| {},
            &Arc::new(AtomicBool::new(false)),
        )
        .unwrap_err();
    assert_eq!(busy.kind(), crate::ErrorKind::Busy, "{busy}");
    let outcome = two
        .call(
            DuelRequest {
                config: small_duel(),
            },
            &mut |_| {},
            &Arc::new(AtomicBool::new(false)),
        )
        .unwrap();
    assert_eq!(outcome.report.runs.len(), 1);
    assert!(outcome.saved_run.is_some(), "{:?}", outcome.save_note);
    assert_eq!(
        two.running_job(),
        None,
        "the slot is freed when the job ends"
    );
}

#[test]
fn job_status_says_whether_a_duel_runs_after_a_reload() {
    // Issue 26: a reloaded Act II could not ask whether its duel still ran.
    let (_t, s) = service();
    let idle = quick(&s, JobStatusRequest {}).unwrap();
    assert_eq!(idle, serde_json::json!({ "running": null }));
    let flag = Arc::new(AtomicBool::new(false));
    let held = s.jobs.take("duel", &flag).unwrap();
    let busy = quick(&s, JobStatusRequest {}).unwrap();
    assert_eq!(busy, serde_json::json!({ "running": "duel" }));
    drop(held);
    assert_eq!(
        quick(&s, JobStatusRequest {}).unwrap()["running"],
        serde_json::Value::Null
    );
}

#[test]
fn cancel_from_another_thread_stops_the_running_duel() {
    let (_t, s) = service();
    let s = Arc::new(s);
    let mut cfg = small_duel();
    cfg.train_limit = None;
    cfg.epochs = 50;
    let runner = {
        let s = Arc::clone(&s);
        std::thread::spawn(move || {
            let mut events = 0usize;
            let r = s.call(
                DuelRequest { config: cfg },
                &mut |_| events += 1,
                &Arc::new(AtomicBool::new(false)),
            );
            (r.map(|o| o.report.runs.len()), events)
        })
    };
    let t0 = std::time::Instant::now();
    while s.running_job().is_none() && t0.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let answer = quick(&s, CancelRequest {}).unwrap();
    assert_eq!(answer["cancelled"], true);
    let (r, events) = runner.join().unwrap();
    let e = r.unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Cancelled, "{e}");
    assert!(events >= 1, "the duel had started");
    assert_eq!(s.running_job(), None);
}

/// A duel "with PyTorch" cancelled during PyTorch's side keeps our finished contestants:
/// it answers them (saved in the history) with PyTorch's epochs up to the cancel and says
/// it was cancelled; the peer interpreter is the one chosen in the settings.
/// Regression (issue 38, defect 1): with an interpreter whose probe hangs, a duel "with
/// PyTorch" cancelled 1 s in answered `freed: false` after 2 s and ended 7–9 s later. The
/// probe now checks the job's cancel: the slot is free when `cancel` answers, within 1 s.
#[cfg(unix)]
#[test]
fn a_cancel_during_a_hanging_interpreter_probe_frees_the_slot_within_a_second() {
    let (t, s) = service();
    let s = Arc::new(s);
    let (_py_dir, python) = crate::lab::peers::tests::fake_python("trap '' TERM\nsleep 30");
    crate::lab::peers::set_python_setting(t.path(), Some(&python)).unwrap();
    let runner = {
        let s = Arc::clone(&s);
        std::thread::spawn(move || {
            let config = DuelConfig {
                pytorch: true,
                ..small_duel()
            };
            s.call(
                DuelRequest { config },
                &mut |_| {},
                &Arc::new(AtomicBool::new(false)),
            )
        })
    };
    let t0 = std::time::Instant::now();
    while s.running_job().is_none() && t0.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    let asked = std::time::Instant::now();
    let answer = quick(&s, CancelRequest {}).unwrap();
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(answer["freed"], true, "{answer}");
    let e = runner.join().unwrap().unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Cancelled, "{e}");
    assert_eq!(s.running_job(), None);
}

#[cfg(unix)]
#[test]
fn a_cancel_during_pytorchs_side_keeps_our_finished_runs() {
    let (_t, s) = service();
    let s = Arc::new(s);
    let (_py_dir, python) = crate::lab::peers::tests::fake_python(
        r#"if [ "$1" = "-c" ]; then echo '{"torch": "2.11.0", "cuda": false, "device": null}'; exit 0; fi
echo '{"kind":"env","torch":"2.11.0","device":"CPU"}'
echo '{"kind":"started","variant":"eager-fp32","label":"PyTorch FP32","precision":"fp32","mode":"eager","epochs":1}'
echo '{"kind":"epoch","variant":"eager-fp32","epoch":1,"ms":20.0,"train_loss":1.0,"test_accuracy":0.5}'
sleep 30"#,
    );
    quick(
        &s,
        crate::protocol::PeerSetPythonRequest {
            python: Some(python),
        },
    )
    .unwrap();
    let cancel = Arc::new(AtomicBool::new(false));
    let runner = {
        let (s, cancel) = (Arc::clone(&s), Arc::clone(&cancel));
        std::thread::spawn(move || {
            let cfg = DuelConfig {
                pytorch: true,
                ..small_duel()
            };
            s.call(
                DuelRequest { config: cfg },
                &mut |e| {
                    // Cancel once PyTorch's first epoch is in.
                    if let Event::Duel {
                        event: DuelEvent::Peer { run, .. },
                    } = e
                    {
                        if !run.epochs.is_empty() {
                            cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                },
                &cancel,
            )
        })
    };
    let out = runner.join().unwrap().unwrap();
    assert_eq!(out.report.runs.len(), 1, "our fp32 is kept");
    let peer = out.report.peer.as_ref().unwrap();
    assert!(peer.cancelled);
    assert_eq!(peer.runs.len(), 1);
    assert!(peer.note.as_deref().unwrap().contains("cancelled"));
    assert!(out.saved_run.is_some(), "saved: {:?}", out.save_note);
    assert_eq!(s.running_job(), None);
}

#[test]
fn bad_configs_are_refused_before_any_work() {
    let cfg = DuelConfig {
        batch: 0,
        ..DuelConfig::default()
    };
    let e = run_duel(&cfg, &mut |_| {}, &AtomicBool::new(false)).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::BadInput);
    assert!(e.to_string().contains("--batch"));
}

/// Regression (issue 38, smaller items): a GPU-only request on a machine without a GPU
/// was a runtime failure (HTTP 500); it is now "unavailable" (409), naming what is missing.
#[test]
fn gpu_only_ops_without_a_gpu_are_unavailable_naming_what_is_missing() {
    if crate::gpu_probe::probe_stack().has_gpu().is_ok() {
        eprintln!("skipped: this machine has a GPU, so --backend cuda is not refused here");
        return;
    }
    let cfg = DuelConfig {
        backend: BackendChoice::Cuda,
        ..DuelConfig::default()
    };
    let e = run_duel(&cfg, &mut |_| {}, &AtomicBool::new(false)).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().starts_with("cuda backend:"), "{e}");
    let home = tempfile::tempdir().unwrap();
    let service = Service::new(home.path());
    let e = service
        .call(
            KernelBenchRequest::default(),
            &mut |_| {},
            &Arc::new(AtomicBool::new(false)),
        )
        .unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains("cuda"), "{e}");
}

#[test]
fn tf32_on_the_cpu_is_refused_as_bad_input() {
    let cfg = DuelConfig {
        backend: BackendChoice::Cpu,
        precisions: vec![Precision::Tf32],
        train_limit: Some(64),
        ..DuelConfig::default()
    };
    let e = run_duel(&cfg, &mut |_| {}, &AtomicBool::new(false)).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::BadInput, "{e}");
}

#[test]
fn a_duel_reply_names_its_saved_run_or_why_it_was_not_saved() {
    let t = tempfile::tempdir().unwrap();
    use crate::runs::examples::json;
    let report = crate::runs::examples::report("cpu", 2.0, 1.0);
    let store = crate::runs::RunStore::open(t.path()).unwrap();
    let reply = outcome(report.clone(), Ok(store.save(&report).unwrap()));
    let id = reply.saved_run.clone().unwrap();
    assert_eq!(json(&store.load(&id).unwrap()), json(&report));
    // A history that cannot be written: the result is answered all the same, with a note.
    let blocked = t.path().join("file");
    std::fs::write(&blocked, "x").unwrap();
    let failed = crate::runs::RunStore::open(&blocked).unwrap_err();
    let reply = outcome(report.clone(), Err(failed.into()));
    assert!(reply.saved_run.is_none());
    assert!(
        reply.save_note.as_deref().unwrap().contains("not saved"),
        "{reply:?}"
    );
    let wire = to_json(&reply).unwrap();
    let back: crate::types::DuelReport = serde_json::from_value(wire).unwrap();
    assert_eq!(json(&back), json(&report));
    // Through a service whose data folder is a file: the duel answers, with the note.
    let s = Service::new(&blocked);
    let outcome = s
        .call(
            DuelRequest {
                config: small_duel(),
            },
            &mut |_| {},
            &Arc::new(AtomicBool::new(false)),
        )
        .unwrap();
    assert!(outcome.saved_run.is_none());
    assert!(outcome.save_note.is_some());
}

/// Issue 18: a data fetch is a job (one at a time with a duel) and fetches only `mnist`;
/// its mirrors are never the request's.
#[test]
fn a_data_fetch_is_a_job_for_mnist_only() {
    let (_t, s) = service();
    let flag = Arc::new(AtomicBool::new(false));
    let e = s
        .call(
            DataFetchRequest {
                dataset: "fashion-mnist".into(),
            },
            &mut |_| {},
            &flag,
        )
        .unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::BadInput);
    assert!(e.to_string().contains("only `mnist`"), "{e}");
    let _duel = s.jobs.take("duel", &flag).unwrap();
    let e = quick(
        &s,
        DataFetchRequest {
            dataset: "mnist".into(),
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Busy, "{e}");
}
