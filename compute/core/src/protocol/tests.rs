//! Tests of `protocol`.

use super::*;
use crate::error::ErrorKind;
use crate::occupancy::OccupancyInput;
use crate::types::{DuelConfig, DuelEvent, DuelReport};

#[test]
fn requests_round_trip_as_tagged_json() {
    let r = Request::from(DuelRequest {
        config: DuelConfig::default(),
    });
    let s = serde_json::to_string(&r).unwrap();
    assert!(s.starts_with("{\"op\":\"duel\""), "{s}");
    let back: Request = serde_json::from_str(&s).unwrap();
    assert_eq!(back, r);
    let d: Request = serde_json::from_str("{\"op\":\"doctor\"}").unwrap();
    assert_eq!(d, Request::Doctor(DoctorRequest {}));
}

#[test]
fn envelopes_and_replies_round_trip() {
    let env: Envelope = serde_json::from_str(
            r#"{"id":3,"request":{"op":"occupancy","cc":"9.0",
                "input":{"threads_per_block":256,"registers_per_thread":64,"shared_mem_per_block":0}}}"#,
        )
        .unwrap();
    assert_eq!(env.id, 3);
    assert!(
        matches!(env.request, Request::Occupancy(OccupancyRequest { ref cc, input })
            if cc == "9.0" && input.threads_per_block == 256 && input.carveout_pct.is_none())
    );
    let back: Envelope = serde_json::from_str(&serde_json::to_string(&env).unwrap()).unwrap();
    assert_eq!(back, env);

    let replies = [
        Reply::ok(1, serde_json::json!({"a": [1, 2]})),
        Reply::ok(2, serde_json::Value::Null),
        Reply::error(
            0,
            ApiError {
                code: ErrorKind::Busy,
                message: "busy".into(),
            },
        ),
        Reply::event(
            4,
            Event::Duel {
                event: DuelEvent::Step {
                    precision: crate::types::Precision::Fp16,
                    epoch: 1,
                    step: 2,
                    steps: 3,
                    loss: 0.5,
                    loss_scale: 65536.0,
                    skipped: 1,
                },
            },
        ),
    ];
    let lines: Vec<String> = replies
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    assert_eq!(lines[0], r#"{"id":1,"ok":{"a":[1,2]}}"#);
    assert_eq!(lines[1], r#"{"id":2,"ok":null}"#);
    assert_eq!(
        lines[2],
        r#"{"id":0,"error":{"code":"busy","message":"busy"}}"#
    );
    assert!(
        lines[3].starts_with(r#"{"id":4,"event":{"stream":"duel","event":{"type":"step""#),
        "{}",
        lines[3]
    );
    for (line, r) in lines.iter().zip(&replies) {
        let back: Reply = serde_json::from_str(line).unwrap();
        assert_eq!(&back, r);
        assert_eq!(back.is_final(), !line.contains("\"event\""));
    }
    assert!(serde_json::from_str::<Reply>(r#"{"id":1}"#).is_err());
}

#[test]
fn run_history_and_verdict_requests_round_trip() {
    let cases = [
        (RunsRequest {}.into(), r#"{"op":"runs"}"#),
        (
            RunRequest {
                id: "20250314-093015-123-00k3".into(),
            }
            .into(),
            r#"{"op":"run","id":"20250314-093015-123-00k3"}"#,
        ),
        (
            RunRemoveRequest { id: "a".into() }.into(),
            r#"{"op":"run_remove","id":"a"}"#,
        ),
        (
            RunCsvRequest { id: "a".into() }.into(),
            r#"{"op":"run_csv","id":"a"}"#,
        ),
        (VerdictRequest {}.into(), r#"{"op":"verdict"}"#),
        (VerdictHtmlRequest {}.into(), r#"{"op":"verdict_html"}"#),
    ];
    for (request, json) in cases {
        let request: Request = request;
        assert_eq!(serde_json::to_string(&request).unwrap(), json);
        assert_eq!(serde_json::from_str::<Request>(json).unwrap(), request);
    }
    assert!(serde_json::from_str::<Request>(r#"{"op":"run"}"#).is_err());
}

#[test]
fn every_request_names_itself_as_on_the_wire_and_only_the_duel_and_fetch_are_jobs() {
    let requests: Vec<Request> = vec![
        DoctorRequest {}.into(),
        ListDatasetsRequest {}.into(),
        ModelSummaryRequest {}.into(),
        DatasetSamplesRequest {
            dataset: "mnist-sample".into(),
            split: crate::types::DataSplit::Test,
            offset: 0,
            count: 1,
        }
        .into(),
        DuelRequest {
            config: DuelConfig::default(),
        }
        .into(),
        OccupancyRequest {
            cc: "9.0".into(),
            input: OccupancyInput {
                threads_per_block: 128,
                registers_per_thread: 32,
                shared_mem_per_block: 0,
                carveout_pct: None,
            },
        }
        .into(),
        KernelFactsRequest {
            name: "train".into(),
            arch: "sm_90".into(),
            threads: 256,
        }
        .into(),
        CancelRequest {}.into(),
        NcuImportsRequest {}.into(),
        NcuExampleRequest {}.into(),
        NcuImportRequest {
            file_name: "a.csv".into(),
            text: String::new(),
        }
        .into(),
        NcuPanelsRequest {
            import: "i".into(),
            kernel: None,
            offset: 0,
            limit: None,
        }
        .into(),
        NcuAttachRequest {
            import: "i".into(),
            panel: "launch".into(),
            kernel: None,
            file_name: "a.png".into(),
            image_base64: String::new(),
            caption: None,
        }
        .into(),
        NcuDetachRequest {
            import: "i".into(),
            screenshot: "s".into(),
        }
        .into(),
        NcuRemoveRequest { import: "i".into() }.into(),
        NcuScreenshotRequest {
            import: "i".into(),
            screenshot: "s".into(),
        }
        .into(),
        RunsRequest {}.into(),
        RunRequest { id: "a".into() }.into(),
        RunRemoveRequest { id: "a".into() }.into(),
        RunCsvRequest { id: "a".into() }.into(),
        VerdictRequest {}.into(),
        VerdictHtmlRequest {}.into(),
        DataFetchRequest {
            dataset: "mnist".into(),
        }
        .into(),
    ];
    for r in &requests {
        let v = serde_json::to_value(r).unwrap();
        assert_eq!(v["op"], r.name(), "{v}");
        assert_eq!(
            r.is_job(),
            matches!(r.name(), "duel" | "data_fetch"),
            "{}",
            r.name()
        );
        let back: Request = serde_json::from_value(v).unwrap();
        assert_eq!(&back, r);
    }
    let names: std::collections::BTreeSet<&str> = requests.iter().map(Request::name).collect();
    assert_eq!(names.len(), requests.len(), "two requests share a name");
}

/// Regression (issue 19): `{"config":{"train_limt":5}}` started a full default duel.
#[test]
fn unknown_fields_are_refused_naming_them_and_the_op_tag_is_not_one() {
    let refused = [
        (r#"{"op":"duel","config":{"train_limt":5}}"#, "train_limt"),
        (
            r#"{"op":"duel","config":{"train_limit":5},"configs":{}}"#,
            "configs",
        ),
        (r#"{"op":"doctor","verbose":true}"#, "verbose"),
        (r#"{"op":"cancel","job":3}"#, "job"),
        (r#"{"op":"run","id":"a","format":"csv"}"#, "format"),
        (
            r#"{"op":"kernel_facts","name":"train","thread_count":128}"#,
            "thread_count",
        ),
        (
            r#"{"op":"dataset_samples","dataset":"mnist","page":2}"#,
            "page",
        ),
    ];
    for (json, field) in refused {
        let e = serde_json::from_str::<Request>(json)
            .err()
            .unwrap_or_else(|| panic!("{json} was accepted"));
        assert!(
            e.to_string().contains(&format!("unknown field `{field}`")),
            "{json}: {e}"
        );
    }
    // Every valid request still parses, defaults included, the `op` tag not counted.
    let accepted = [
        r#"{"op":"doctor"}"#,
        r#"{"op":"cancel"}"#,
        r#"{"op":"duel","config":{}}"#,
        r#"{"op":"duel","config":{"backend":"cpu","dataset":"mnist-sample","epochs":1,
                "train_limit":256,"test_limit":null,"threads":1,"precisions":["fp32"]}}"#,
        r#"{"op":"dataset_samples","dataset":"mnist-sample"}"#,
        r#"{"op":"kernel_facts","name":"train"}"#,
        r#"{"op":"ncu_panels","import":"i","kernel":null}"#,
        r#"{"op":"ncu_attach","import":"i","panel":"launch","file_name":"a.png",
                "image_base64":"","caption":"c"}"#,
    ];
    for json in accepted {
        let r: Request = serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        let back: Request = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
    // Inside an envelope too.
    let e = serde_json::from_str::<Envelope>(
        r#"{"id":1,"request":{"op":"duel","config":{"epohcs":2}}}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("`epohcs`"), "{e}");
}

/// Issue 18: full MNIST is fetched through the job service, with byte progress as ticks
/// and file boundaries kept; the request carries no URL.
#[test]
fn data_fetch_requests_and_progress_events_round_trip() {
    let r: Request = serde_json::from_str(r#"{"op":"data_fetch","dataset":"mnist"}"#).unwrap();
    assert!(r.is_job());
    assert_eq!(
        r,
        Request::DataFetch(DataFetchRequest {
            dataset: "mnist".into()
        })
    );
    let e = serde_json::from_str::<Request>(
        r#"{"op":"data_fetch","dataset":"mnist","mirror":"http://evil/"}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("unknown field `mirror`"), "{e}");

    let tick = Event::DataFetch {
        event: FetchProgress::Bytes {
            file: "t10k-labels-idx1-ubyte.gz".into(),
            bytes: 4096,
            total: Some(4542),
        },
    };
    let text = serde_json::to_string(&Reply::event(7, tick.clone())).unwrap();
    assert_eq!(
        text,
        r#"{"id":7,"event":{"stream":"data_fetch","event":{"type":"bytes","file":"t10k-labels-idx1-ubyte.gz","bytes":4096,"total":4542}}}"#
    );
    assert_eq!(
        serde_json::from_str::<Reply>(&text).unwrap(),
        Reply::event(7, tick.clone())
    );
    assert!(tick.is_tick());
    let boundaries = [
        FetchProgress::Started {
            file: "a".into(),
            index: 1,
            files: 4,
            mirror: "http://127.0.0.1:1/".into(),
        },
        FetchProgress::MirrorFailed {
            file: "a".into(),
            mirror: "http://127.0.0.1:1/".into(),
            reason: "404".into(),
        },
        FetchProgress::Done {
            file: "a".into(),
            index: 1,
            files: 4,
            bytes: 10,
            from: "cached".into(),
        },
    ];
    for b in boundaries {
        let e = Event::DataFetch { event: b };
        assert!(!e.is_tick(), "{e:?}");
        let back: Event = serde_json::from_value(serde_json::to_value(&e).unwrap()).unwrap();
        assert_eq!(back, e);
    }
}

#[test]
fn a_duel_outcome_reads_as_a_report_and_keeps_its_save_result() {
    let report = crate::runs::examples::report("cpu", 2.0, 1.0);
    let saved = DuelOutcome {
        report: report.clone(),
        saved_run: Some("20250314-093015-123-00k3".into()),
        save_note: None,
    };
    let v = serde_json::to_value(&saved).unwrap();
    assert_eq!(v["saved_run"], "20250314-093015-123-00k3");
    assert!(v.get("save_note").is_none());
    // Readers of a plain report (older clients, the run history) still read it.
    let as_report: DuelReport = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(
        crate::runs::examples::json(&as_report),
        crate::runs::examples::json(&report)
    );
    let back: DuelOutcome = serde_json::from_value(v).unwrap();
    assert_eq!(back.saved_run, saved.saved_run);
    let failed = DuelOutcome {
        report,
        saved_run: None,
        save_note: Some("the run was not saved: disk full".into()),
    };
    let text = serde_json::to_string(&failed).unwrap();
    let back: DuelOutcome = serde_json::from_str(&text).unwrap();
    assert_eq!(back.saved_run, None);
    assert_eq!(back.save_note.as_deref(), failed.save_note.as_deref());
}

#[test]
fn api_errors_display_their_message_and_name_their_class() {
    let e = ApiError::runtime("the compute process ended");
    assert_eq!(e.to_string(), "the compute process ended");
    assert_eq!(e.code, ErrorKind::Runtime);
    assert_eq!(ApiError::busy("b").code, ErrorKind::Busy);
    assert_eq!(ApiError::cancelled("c").code, ErrorKind::Cancelled);
    assert_eq!(ApiError::bad_input("d").code, ErrorKind::BadInput);
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert_eq!(boxed.to_string(), "the compute process ended");
}
