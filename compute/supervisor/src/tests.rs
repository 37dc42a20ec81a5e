//! The supervisor against a stand-in sidecar (a Python script speaking the same protocol), so
//! crashes can be staged: `doctor` answers, `list_datasets` streams two events first,
//! `model_summary` makes the process exit mid-request.

use super::*;
use showdown_core::protocol::{
    CancelRequest, DoctorRequest, ListDatasetsRequest, ModelSummaryRequest, NcuImportRequest,
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

/// A stand-in that reads nothing until `gate` (its first argument) exists, or 5 s have passed:
/// a compute process busy elsewhere, its stdin pipe full.
const SLOW_READER: &str = r#"
import json, sys, os, time
gate, deadline = sys.argv[1], time.time() + 5
while not os.path.exists(gate) and time.time() < deadline:
    time.sleep(0.01)
for line in sys.stdin:
    env = json.loads(line)
    print(json.dumps({"id": env["id"], "ok": {"op": env["request"]["op"]}}), flush=True)
"#;

/// A stand-in with the stdio door's line limit (its first argument): a longer line is answered
/// for id 0, as `showdown serve --stdio` does.
const LINE_LIMITED: &str = r#"
import json, sys
limit = int(sys.argv[1])
for raw in sys.stdin.buffer:
    body = raw.rstrip(b"\n")
    if len(body) > limit:
        print(json.dumps({"id": 0, "error": {"code": "bad_input", "message": "line too long"}}), flush=True)
        continue
    env = json.loads(body)
    print(json.dumps({"id": env["id"], "ok": {"op": env["request"]["op"], "bytes": len(body)}}), flush=True)
"#;

fn script(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn ncu_import(text_bytes: usize) -> Request {
    Request::from(NcuImportRequest {
        file_name: "x.csv".into(),
        text: "a".repeat(text_bytes),
    })
}

/// Runs `call` on a thread of its own, so a test can bound how long it waits for it.
fn in_thread(
    sc: &Sidecar,
    request: Request,
) -> std::sync::mpsc::Receiver<Result<serde_json::Value, ApiError>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let sc = sc.clone();
    std::thread::spawn(move || {
        let _ = tx.send(sc.call(request, &mut |_| {}));
    });
    rx
}

#[test]
fn status_does_not_wait_for_a_write_blocked_on_a_full_pipe() {
    let Some((dir, _)) = fake() else { return };
    let gate = dir.path().join("gate");
    let sc = Sidecar::new(
        "python3",
        &[
            &script(&dir, "slow_reader.py", SLOW_READER),
            gate.to_str().unwrap(),
        ],
    );
    // 4 MiB: far more than a pipe holds, so its write blocks until the process reads.
    let big = in_thread(&sc, ncu_import(4 << 20));
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let status = sc.status();
    let took = started.elapsed();
    // Another caller's request is handed over while the first one's write is blocked.
    let small = in_thread(&sc, Request::from(DoctorRequest {}));
    std::fs::write(&gate, "").unwrap();
    assert!(
        took < Duration::from_millis(100),
        "status() took {took:?} behind a blocked write"
    );
    assert!(status.running && status.pid.is_some(), "{status:?}");
    let wait = Duration::from_secs(20);
    assert_eq!(big.recv_timeout(wait).unwrap().unwrap()["op"], "ncu_import");
    assert_eq!(small.recv_timeout(wait).unwrap().unwrap()["op"], "doctor");
}

#[test]
fn a_line_is_refused_from_one_byte_over_the_line_limit() {
    let empty = encode_line(7, ncu_import(0)).unwrap();
    // The line's newline is not counted.
    let fits = MAX_LINE_BYTES - (empty.len() - 1);
    let line = encode_line(7, ncu_import(fits)).unwrap();
    assert_eq!(line.len(), MAX_LINE_BYTES + 1);
    let e = encode_line(7, ncu_import(fits + 1)).unwrap_err();
    assert_eq!(e.code, ErrorKind::BadInput);
    assert!(
        e.message
            .contains(&format!("longer than {MAX_LINE_BYTES} bytes")),
        "{}",
        e.message
    );
    // A body of the largest size a door accepts fits in a line, envelope included.
    assert!(encode_line(u64::MAX, ncu_import(MAX_REQUEST_BYTES - 64)).is_ok());
}

#[test]
fn a_request_over_the_line_limit_gets_an_error_not_silence() {
    let Some((dir, _)) = fake() else { return };
    let limit = MAX_LINE_BYTES.to_string();
    let sc = Sidecar::new(
        "python3",
        &[&script(&dir, "line_limited.py", LINE_LIMITED), &limit],
    );
    let wait = Duration::from_secs(20);
    let e = in_thread(&sc, ncu_import(MAX_LINE_BYTES))
        .recv_timeout(wait)
        .expect("an answer, not silence")
        .unwrap_err();
    assert_eq!(e.code, ErrorKind::BadInput);
    assert!(e.message.contains("too large"), "{}", e.message);
    // Just under the limit: delivered and answered.
    let v = in_thread(&sc, ncu_import(MAX_LINE_BYTES - 1000))
        .recv_timeout(wait)
        .expect("an answer")
        .unwrap();
    assert!(v["bytes"].as_u64().unwrap() <= MAX_LINE_BYTES as u64, "{v}");
}
