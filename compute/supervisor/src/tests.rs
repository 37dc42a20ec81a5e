//! The supervisor against a stand-in sidecar (a Python script speaking the same protocol), so
//! crashes can be staged: `doctor` answers, `list_datasets` streams two events first,
//! `model_summary` makes the process exit mid-request.

use super::*;
use showdown_core::protocol::{
    CancelRequest, DoctorRequest, ListDatasetsRequest, ModelSummaryRequest,
};
use showdown_core::ErrorKind;

const FAKE: &str = r#"
import json, sys, os
for line in sys.stdin:
    env = json.loads(line)
    i, op = env["id"], env["request"]["op"]
    if op == "model_summary":
        os._exit(3)
    if op == "list_datasets":
        for step in (1, 2):
            ev = {"stream": "duel", "event": {"type": "step", "precision": "fp32", "epoch": 1,
                  "step": step, "steps": 2, "loss": 1.0, "loss_scale": 1.0}}
            print(json.dumps({"id": i, "event": ev}), flush=True)
    if op == "cancel":
        print(json.dumps({"id": i, "error": {"code": "bad_input", "message": "nothing to cancel"}}), flush=True)
        continue
    print(json.dumps({"id": i, "ok": {"op": op, "pid": os.getpid(), "home": os.environ.get("SHOWDOWN_DATA_HOME")}}), flush=True)
"#;

fn fake() -> Option<(tempfile::TempDir, Sidecar)> {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: python3 (the stand-in sidecar) is not installed");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fake_sidecar.py");
    std::fs::write(&script, FAKE).unwrap();
    let sc = Sidecar::new("python3", &[script.to_str().unwrap()])
        .with_env("SHOWDOWN_DATA_HOME", "/tmp/lab-home");
    Some((dir, sc))
}

fn pid(v: &serde_json::Value) -> u64 {
    v["pid"].as_u64().unwrap()
}

#[test]
fn requests_get_their_replies_and_events() {
    let Some((_dir, sc)) = fake() else { return };
    let v = sc
        .call(Request::from(DoctorRequest {}), &mut |_| {})
        .unwrap();
    assert_eq!(v["op"], "doctor");
    assert_eq!(
        v["home"], "/tmp/lab-home",
        "the sidecar gets its environment"
    );
    let mut events = 0;
    let v = sc
        .call(Request::from(ListDatasetsRequest {}), &mut |_| events += 1)
        .unwrap();
    assert_eq!((v["op"].as_str(), events), (Some("list_datasets"), 2));
    let e = sc
        .call(Request::from(CancelRequest {}), &mut |_| {})
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (ErrorKind::BadInput, "nothing to cancel")
    );
    assert!(sc.status().running);
    assert_eq!(sc.status().crashes, 0);
}

#[test]
fn a_crash_fails_the_request_in_flight_and_the_next_one_gets_a_new_sidecar() {
    let Some((_dir, sc)) = fake() else { return };
    let first = pid(&sc
        .call(Request::from(DoctorRequest {}), &mut |_| {})
        .unwrap());
    let e = sc
        .call(Request::from(ModelSummaryRequest {}), &mut |_| {})
        .unwrap_err();
    assert_eq!(e.code, ErrorKind::Runtime);
    assert!(e.message.contains("compute sidecar ended"), "{}", e.message);
    assert!(e.message.contains("restarted"), "{}", e.message);
    let second = pid(&sc
        .call(Request::from(DoctorRequest {}), &mut |_| {})
        .unwrap());
    assert_ne!(first, second, "a new process answers");
    assert_eq!(sc.status().crashes, 1);
    // Killed from outside (the app's "restart the engine", or the OOM killer): same recovery.
    sc.kill();
    let third = pid(&sc
        .call(Request::from(DoctorRequest {}), &mut |_| {})
        .unwrap());
    assert_ne!(third, second);
}

#[test]
fn concurrent_callers_each_get_their_own_reply() {
    let Some((_dir, sc)) = fake() else { return };
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let sc = sc.clone();
            std::thread::spawn(move || {
                sc.call(Request::from(DoctorRequest {}), &mut |_| {})
                    .map(|v| v["op"].clone())
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap().unwrap(), "doctor");
    }
}

#[test]
fn a_sidecar_that_cannot_start_is_a_clear_error() {
    let sc = Sidecar::new("/nonexistent/showdown", &["serve", "--stdio"]);
    let e = sc
        .call(Request::from(DoctorRequest {}), &mut |_| {})
        .unwrap_err();
    assert_eq!(e.code, ErrorKind::Runtime);
    assert!(
        e.message
            .starts_with("cannot start the compute sidecar /nonexistent/showdown"),
        "{}",
        e.message
    );
}

#[test]
fn a_sidecar_dying_at_once_every_time_is_given_up_on() {
    let Some((dir, _)) = fake() else { return };
    let script = dir.path().join("dies.py");
    std::fs::write(&script, "import sys\nsys.exit(1)\n").unwrap();
    let sc = Sidecar::new("python3", &[script.to_str().unwrap()]);
    let mut last = None;
    for _ in 0..=MAX_RESTARTS + 1 {
        last = Some(
            sc.call(Request::from(DoctorRequest {}), &mut |_| {})
                .unwrap_err(),
        );
    }
    let e = last.unwrap();
    assert!(e.message.contains("not starting it again"), "{}", e.message);
}
