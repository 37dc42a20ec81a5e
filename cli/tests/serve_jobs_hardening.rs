//! Issue 30, the compute process's share: quick requests and `cancel` answered while another
//! request works, every job stopped by `cancel` with its slot free when `cancelled` is
//! answered, child-process output bounded, and the stdio door's own refusals. Each test is
//! named after the defect it pins; loopback only, bounded times.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails by panicking

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The tests of this file one at a time: each starts a server and a compute process, and
/// the timing ones (200 concurrent `doctor` calls within 1 s at the 99th percentile) measure the
/// door, not a sibling test's servers competing for the same two cores.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ALONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

const LONG: Duration = Duration::from_secs(60);

/// How long the compute process's interpreter probe may take in these tests (it is stopped
/// then); the fake interpreters take 20 s.
const PROBE_MS: u64 = 4000;

fn showdown(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_showdown"));
    c.env("SHOWDOWN_DATA_HOME", home)
        .env("SHOWDOWN_PEER_PROBE_TIMEOUT_MS", PROBE_MS.to_string())
        .env_remove("SHOWDOWN_PYTHON");
    c
}

/// Each stdout line of `child`, as it comes.
fn lines_of(child: &mut Child) -> Receiver<String> {
    let out = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// A CPU duel; `train_limit: None` trains on all 8,000 images (seconds per epoch).
fn duel_config(train_limit: Option<usize>, epochs: usize) -> Value {
    json!({
        "backend": "cpu",
        "dataset": "mnist-sample",
        "epochs": epochs,
        "train_limit": train_limit,
        "test_limit": 256,
        "threads": 1,
    })
}

/// A fake interpreter in `dir`: a shell script running `body`.
fn fake_python(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("fake-python");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write the script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// A data folder whose saved peer setting is `python` (as `peer_set_python` leaves it).
fn home_choosing(python: &Path) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        home.path().join("settings.json"),
        json!({ "python": python }).to_string(),
    )
    .expect("settings");
    home
}

/// A process's resident set in KiB (Linux).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

// ---------------------------------------------------------------------------------------------
// The stdio door

struct Sidecar {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Sidecar {
    fn start(mut command: Command) -> Sidecar {
        let mut child = command
            .args(["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("showdown starts");
        let stdin = child.stdin.take();
        let lines = lines_of(&mut child);
        Sidecar {
            child,
            stdin,
            lines,
        }
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").expect("write to the sidecar");
        stdin.flush().expect("flush");
    }

    fn send(&mut self, id: u64, request: Value) {
        self.send_raw(&json!({"id": id, "request": request}).to_string());
    }

    /// The next reply line, parsed.
    fn next(&self, within: Duration) -> Value {
        let line = self
            .lines
            .recv_timeout(within)
            .unwrap_or_else(|e| panic!("no reply within {within:?}: {e}"));
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
    }

    /// The final replies of `ids` (events are skipped), in the order of `ids`; panics when
    /// they do not all come within `within`.
    fn finals(&self, ids: &[u64], within: Duration) -> Vec<Value> {
        let deadline = Instant::now() + within;
        let mut got: Vec<Option<Value>> = vec![None; ids.len()];
        while got.iter().any(Option::is_none) {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!("not every final reply of {ids:?} came within {within:?}: {got:?}")
            });
            let v: Value = serde_json::from_str(&line).expect("JSON");
            if v.get("event").is_some() {
                continue;
            }
            if let Some(i) = ids.iter().position(|id| v["id"] == *id) {
                got[i] = Some(v);
            }
        }
        got.into_iter().flatten().collect()
    }

    /// Waits for an event of request `id` that `wanted` accepts.
    fn event_where(&self, id: u64, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + LONG;
        loop {
            let v = self.next(deadline.saturating_duration_since(Instant::now()));
            assert!(
                v["id"] != id || v.get("event").is_some(),
                "request {id} ended before the awaited event: {v}"
            );
            if v["id"] == id && wanted(&v) {
                return v;
            }
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `cancel` as request `cancel_id` and waits for its reply and the final reply of the
/// job `job_id`: both must come within a second, the job `cancelled` and the slot free.
fn cancel_frees_the_slot_within_a_second(s: &mut Sidecar, job_id: u64, cancel_id: u64) {
    let sent = Instant::now();
    s.send(cancel_id, json!({"op": "cancel"}));
    let replies = s.finals(&[job_id, cancel_id], Duration::from_secs(10));
    let took = sent.elapsed();
    eprintln!("request {job_id} cancelled in {took:?}");
    assert_eq!(replies[0]["error"]["code"], "cancelled", "{}", replies[0]);
    assert_eq!(
        replies[1]["ok"],
        json!({"cancelled": true, "freed": true}),
        "{}",
        replies[1]
    );
    assert!(took < Duration::from_secs(1), "cancel took {took:?}");
}

/// The next job starts at once: a small duel is not refused as busy, and runs.
fn the_next_duel_starts(s: &mut Sidecar, id: u64) {
    s.send(
        id,
        json!({"op": "duel", "config": duel_config(Some(256), 1)}),
    );
    let v = s.next(LONG);
    assert_eq!(v["id"], id, "{v}");
    assert!(v.get("error").is_none(), "the next duel was refused: {v}");
    let last = s.finals(&[id], LONG).remove(0);
    assert!(last["ok"]["runs"].is_array(), "{last}");
}

/// Issue 30 (2): a peer probe that takes 20 s (the saved interpreter hangs) used to hold up
/// every request behind it: `doctor` took 19 s and `cancel` of a running duel 19.1 s.
#[test]
fn stdio_a_slow_peer_probe_does_not_hold_up_doctor_or_cancel() {
    let _alone = one_at_a_time();
    let bin = tempfile::tempdir().expect("tempdir");
    let python = fake_python(bin.path(), "sleep 20");
    let home = home_choosing(&python);
    let mut s = Sidecar::start(showdown(home.path()));
    s.send(1, json!({"op": "duel", "config": duel_config(None, 5)}));
    s.event_where(1, |_| true);
    s.send(2, json!({"op": "peer_status"}));
    std::thread::sleep(Duration::from_millis(300));

    let sent = Instant::now();
    s.send(3, json!({"op": "doctor"}));
    let doctor = s.finals(&[3], Duration::from_secs(5)).remove(0);
    let took = sent.elapsed();
    assert!(doctor["ok"]["cpu"].is_string(), "{doctor}");
    assert!(took < Duration::from_secs(1), "doctor took {took:?}");

    cancel_frees_the_slot_within_a_second(&mut s, 1, 4);

    // The probe is stopped at its limit, and its status says so.
    let status = s.finals(&[2], Duration::from_secs(10)).remove(0);
    let note = status["ok"]["note"].as_str().unwrap_or("");
    assert!(
        note.contains(&format!(
            "did not answer within {} s and was stopped",
            PROBE_MS / 1000
        )),
        "{status}"
    );
    assert_eq!(status["ok"]["ready"], false, "{status}");
}

/// Issue 30 (3): a `data_fetch` from a mirror that stalls answered `{"cancelled":true}` but
/// held the job slot until the mirror hung up (duels were refused as busy for ~395 s).
#[test]
fn stdio_cancel_of_a_stalled_data_fetch_frees_the_slot() {
    let _alone = one_at_a_time();
    let mirror = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/", mirror.local_addr().expect("address"));
    std::thread::spawn(move || {
        for conn in mirror.incoming().take(8) {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().expect("clone"));
                let mut h = String::new();
                while r.read_line(&mut h).map(|n| n > 2).unwrap_or(false) {
                    h.clear();
                }
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\n",
                );
                let _ = conn.write_all(&[7u8; 100]);
                let _ = conn.flush();
                // Then nothing, the connection held open.
                std::thread::sleep(Duration::from_secs(40));
            });
        }
    });
    let home = tempfile::tempdir().expect("tempdir");
    let manifest = home.path().join("manifest.json");
    std::fs::write(
        &manifest,
        json!([{"name": "train-images-idx3-ubyte.gz", "sha256": "0".repeat(64)}]).to_string(),
    )
    .expect("manifest");
    let mut command = showdown(&home.path().join("data"));
    command
        .env("SHOWDOWN_MNIST_MIRRORS", &base)
        .env("SHOWDOWN_MNIST_MANIFEST", &manifest);
    let mut s = Sidecar::start(command);
    s.send(1, json!({"op": "data_fetch", "dataset": "mnist"}));
    s.event_where(1, |e| e["event"]["event"]["type"] == "bytes");
    cancel_frees_the_slot_within_a_second(&mut s, 1, 2);
    let part = home
        .path()
        .join("data/mnist/train-images-idx3-ubyte.gz.part");
    assert!(!part.exists(), "the partial download is removed");
    the_next_duel_starts(&mut s, 3);
}

/// Issue 30 (3): a CPU `step_anatomy` at batch 8000 answered its cancel after its whole run
/// (70 s); with `steps: 1000` it still ran a minute after the cancel.
#[test]
fn stdio_cancel_of_a_cpu_step_anatomy_frees_the_slot() {
    let _alone = one_at_a_time();
    let home = tempfile::tempdir().expect("tempdir");
    let mut s = Sidecar::start(showdown(home.path()));
    s.send(
        1,
        json!({"op": "step_anatomy", "backend": "cpu", "batch": 8000, "steps": 1000}),
    );
    // The first contestant's steps have begun.
    s.event_where(1, |e| {
        e["event"]["event"]["stage"]
            .as_str()
            .is_some_and(|st| st.starts_with("fp32"))
    });
    std::thread::sleep(Duration::from_millis(700));
    cancel_frees_the_slot_within_a_second(&mut s, 1, 2);
    the_next_duel_starts(&mut s, 3);
}

/// Issue 30 (3, 8): a `conv_ladder` cancelled during its last layer answered `ok` and saved
/// its run; one cancelled during a long layer ran that layer to its end.
#[test]
fn stdio_cancel_of_a_conv_ladder_frees_the_slot_and_keeps_no_run() {
    let _alone = one_at_a_time();
    let home = tempfile::tempdir().expect("tempdir");
    let mut s = Sidecar::start(showdown(home.path()));
    // During a long layer (the f64 reference of lab_conv2 on 256 images takes seconds).
    s.send(
        1,
        json!({"op": "conv_ladder", "backend": "cpu", "cpu_batch": 256,
               "layers": ["lab_conv2", "lenet_c3"]}),
    );
    s.event_where(1, |e| {
        e["event"]["event"]["stage"] == "CPU rows of lab_conv2"
    });
    std::thread::sleep(Duration::from_millis(300));
    cancel_frees_the_slot_within_a_second(&mut s, 1, 2);
    // During its last (and only) layer.
    s.send(
        3,
        json!({"op": "conv_ladder", "backend": "cpu", "cpu_batch": 256,
               "layers": ["lenet_c3"]}),
    );
    s.event_where(3, |e| {
        e["event"]["event"]["stage"] == "CPU rows of lenet_c3"
    });
    cancel_frees_the_slot_within_a_second(&mut s, 3, 4);
    s.send(5, json!({"op": "lab_runs"}));
    let runs = s.finals(&[5], LONG).remove(0);
    assert_eq!(
        runs["ok"]["runs"],
        json!([]),
        "a cancelled job keeps no run: {runs}"
    );
    the_next_duel_starts(&mut s, 6);
}

/// Issue 30 (4): an interpreter printing without end made the compute process abort
/// (`memory allocation of 1500000000 bytes failed`), again at every `peer_status` since the
/// choice is saved. Its output is read up to a cap, the status names the cap, the process
/// lives with a bounded resident set, and the choice can be cleared.
#[test]
fn stdio_a_peer_printing_without_end_is_stopped_and_the_service_lives() {
    let _alone = one_at_a_time();
    let bin = tempfile::tempdir().expect("tempdir");
    let python = fake_python(
        bin.path(),
        "exec yes 0123456789abcdef0123456789abcdef0123456789abcdef",
    );
    let home = home_choosing(&python);
    let mut s = Sidecar::start(showdown(home.path()));
    for id in [1, 2] {
        s.send(id, json!({"op": "peer_status"}));
        let status = s.finals(&[id], Duration::from_secs(10)).remove(0);
        let note = status["ok"]["note"].as_str().unwrap_or("");
        assert!(
            note.contains("printed more than 64 KiB on its standard output and was stopped"),
            "{status}"
        );
        assert_eq!(status["ok"]["source"], "setting", "{status}");
    }
    let rss = rss_kib(s.pid());
    assert!(rss < 300 << 10, "resident set {rss} KiB");
    s.send(3, json!({"op": "doctor"}));
    let doctor = s.finals(&[3], LONG).remove(0);
    assert!(doctor["ok"].is_object(), "{doctor}");
    // The user clears the choice: the next status no longer runs it.
    s.send(4, json!({"op": "peer_set_python", "python": null}));
    let cleared = s.finals(&[4], Duration::from_secs(20)).remove(0);
    assert!(cleared["ok"].is_object(), "{cleared}");
    assert_ne!(cleared["ok"]["source"], "setting", "{cleared}");
    assert_ne!(cleared["ok"]["python"], json!(python), "{cleared}");
}

/// Issue 30 (8): the stdio door accepted a second request with the id of one still running.
#[test]
fn stdio_a_second_request_with_a_running_id_is_refused() {
    let _alone = one_at_a_time();
    let home = tempfile::tempdir().expect("tempdir");
    let mut s = Sidecar::start(showdown(home.path()));
    s.send(1, json!({"op": "duel", "config": duel_config(None, 5)}));
    s.event_where(1, |_| true);
    s.send(1, json!({"op": "doctor"}));
    let refused = s.finals(&[0], Duration::from_secs(5)).remove(0);
    assert_eq!(refused["error"]["code"], "bad_input", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("request id 1 is already in use"),
        "{message}"
    );
    // The running duel is untouched: it is still the one a cancel stops.
    cancel_frees_the_slot_within_a_second(&mut s, 1, 2);
    // Its id is free again once answered.
    s.send(1, json!({"op": "model_summary"}));
    let again = s.finals(&[1], LONG).remove(0);
    assert!(again["ok"].is_object(), "{again}");
}

/// Whether `message` carries an internal line number (`line 3: …`, `line 12 is …`).
fn has_line_number(message: &str) -> bool {
    message.match_indices("line ").any(|(i, m)| {
        message[i + m.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// Issue 30 (8): error messages carried the door's internal line numbers (`line 16: not a
/// request envelope …`).
#[test]
fn stdio_errors_carry_no_line_numbers() {
    let _alone = one_at_a_time();
    let home = tempfile::tempdir().expect("tempdir");
    let mut s = Sidecar::start(showdown(home.path()));
    s.send(1, json!({"op": "model_summary"}));
    s.finals(&[1], LONG);
    s.send_raw("this is not json");
    s.send_raw(r#"{"id": 7, "request": {"op": "make_coffee"}}"#);
    s.send_raw(&"x".repeat(33 << 20));
    let mut messages = Vec::new();
    for _ in 0..3 {
        let v = s.next(LONG);
        assert_eq!(v["error"]["code"], "bad_input", "{v}");
        messages.push(v["error"]["message"].as_str().unwrap_or("").to_string());
    }
    assert!(messages[0].contains("not JSON"), "{messages:?}");
    assert!(messages[1].contains("make_coffee"), "{messages:?}");
    assert!(messages[2].contains("longer than"), "{messages:?}");
    for m in &messages {
        assert!(!has_line_number(m), "a line number: {m}");
    }
}

// ---------------------------------------------------------------------------------------------
// The HTTP door (its compute process is `serve --stdio` under the supervisor)

struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(mut command: Command) -> Server {
        let mut child = command
            .args(["serve", "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("showdown starts");
        let lines = lines_of(&mut child);
        let first = lines
            .recv_timeout(LONG)
            .expect("the server prints its address");
        let base = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first stdout line: {first}"))
            .to_string();
        Server { child, base }
    }

    fn addr(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// `POST /api/call` with `body`: (status, reply body).
    fn call(&self, body: &str) -> (u16, String) {
        call_at(self.addr(), body)
    }

    /// `POST /api/job` with `body`: each reply of its event stream, as it comes.
    fn job(&self, body: &str) -> Receiver<Value> {
        let stream = open_post(self.addr(), "/api/job", body);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if let Some(data) = line.strip_prefix("data: ") {
                    let v: Value = serde_json::from_str(data).expect("JSON");
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        rx
    }
}

/// Sends `POST path` with a JSON `body` to the server at `addr`, on a connection of its own.
fn open_post(addr: &str, path: &str, body: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(LONG)).expect("timeout");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    stream
}

/// `GET path` from the server at `addr`: (status, reply body).
fn get_at(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(LONG)).expect("timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("a reply");
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP reply: {reply}"));
    let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_string())
}

/// `POST /api/call` with `body` to the server at `addr`: (status, reply body).
fn call_at(addr: &str, body: &str) -> (u16, String) {
    let mut reply = String::new();
    open_post(addr, "/api/call", body)
        .read_to_string(&mut reply)
        .expect("a reply");
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP reply: {reply}"));
    let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_string())
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Issue 30 (2), through `serve --http`: with the 20 s probe running, `doctor` answers in
/// under a second and `cancel` stops the running duel in under a second.
#[test]
fn http_a_slow_peer_probe_does_not_hold_up_doctor_or_cancel() {
    let _alone = one_at_a_time();
    let bin = tempfile::tempdir().expect("tempdir");
    let python = fake_python(bin.path(), "sleep 20");
    let home = home_choosing(&python);
    // A web UI folder where `serve` looks by default (app-ui/dist under its working folder).
    let cwd = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(cwd.path().join("app-ui/dist")).expect("ui folder");
    std::fs::write(cwd.path().join("app-ui/dist/index.html"), "<p>lab</p>").expect("index");
    let mut command = showdown(home.path());
    command.current_dir(cwd.path());
    let s = Server::start(command);
    let duel = s.job(&json!({"op": "duel", "config": duel_config(None, 5)}).to_string());
    let first = duel.recv_timeout(LONG).expect("the duel starts");
    assert!(first.get("event").is_some(), "{first}");
    let probe = {
        let addr = s.addr().to_string();
        std::thread::spawn(move || call_at(&addr, r#"{"op":"peer_status"}"#))
    };
    std::thread::sleep(Duration::from_millis(300));

    // While the probe hangs and the duel trains: the compute process's state and the static
    // files answer at once, throughout.
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        for path in ["/api/compute", "/index.html"] {
            let sent = Instant::now();
            let (status, body) = get_at(s.addr(), path);
            slowest = slowest.max(sent.elapsed());
            assert_eq!(status, 200, "{path}: {body}");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    eprintln!("slowest /api/compute or static file during the probe and the duel: {slowest:?}");
    assert!(
        slowest < Duration::from_millis(100),
        "a status or static-file request took {slowest:?}"
    );

    let sent = Instant::now();
    let (status, body) = s.call(r#"{"op":"doctor"}"#);
    let took = sent.elapsed();
    assert_eq!(status, 200, "{body}");
    assert!(took < Duration::from_secs(1), "doctor took {took:?}");

    let sent = Instant::now();
    let (status, body) = s.call(r#"{"op":"cancel"}"#);
    assert_eq!(status, 200, "{body}");
    let cancelled: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(cancelled, json!({"cancelled": true, "freed": true}));
    let last = loop {
        let v = duel
            .recv_timeout(Duration::from_secs(5))
            .expect("the duel's stream ends");
        if v.get("event").is_none() {
            break v;
        }
    };
    let took = sent.elapsed();
    assert_eq!(last["error"]["code"], "cancelled", "{last}");
    assert!(took < Duration::from_secs(1), "cancel took {took:?}");

    let (status, body) = probe.join().expect("the probe's call");
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(&format!("did not answer within {} s", PROBE_MS / 1000)),
        "{body}"
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 38

/// Regression (issue 38, defect 7): 200 concurrent `doctor` calls got 17–48 % `409 busy`: the
/// compute process's 64-worker cap reached HTTP clients. Control requests now queue at the door
/// for their turn, so all of them get 200 while a CPU duel runs, the slowest but two within 1 s.
#[test]
fn http_200_concurrent_doctor_calls_during_a_cpu_duel_all_get_200() {
    let _alone = one_at_a_time();
    let home = tempfile::tempdir().unwrap();
    let s = Server::start(showdown(home.path()));
    let events = s.job(&json!({"op": "duel", "config": duel_config(None, 50)}).to_string());
    let first = events.recv_timeout(LONG).expect("the duel starts");
    assert!(first.get("event").is_some(), "{first}");
    let addr = s.addr().to_string();
    let n = 200;
    let start = std::sync::Arc::new(std::sync::Barrier::new(n));
    let (tx, rx) = mpsc::channel();
    for _ in 0..n {
        let (addr, start, tx) = (addr.clone(), std::sync::Arc::clone(&start), tx.clone());
        std::thread::spawn(move || {
            start.wait();
            let t0 = Instant::now();
            let (status, body) = call_at(&addr, r#"{"op":"doctor"}"#);
            let _ = tx.send((status, body, t0.elapsed()));
        });
    }
    drop(tx);
    let mut took = Vec::new();
    for (status, body, t) in rx.iter() {
        assert_eq!(status, 200, "{body}");
        took.push(t);
    }
    assert_eq!(took.len(), n);
    took.sort();
    let p99 = took[n * 99 / 100 - 1];
    assert!(
        p99 < Duration::from_secs(1),
        "p99 {p99:?}, slowest {:?}",
        took[n - 1]
    );
    let (status, body) = s.call(r#"{"op":"cancel"}"#);
    assert_eq!(status, 200, "{body}");
}

/// The live processes whose command line holds `token` (zombies left out).
fn alive_with(token: &str) -> usize {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let zombie = stat
                .rfind(')')
                .and_then(|i| stat.get(i + 2..i + 3))
                .is_some_and(|s| s == "Z");
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            !zombie && String::from_utf8_lossy(&cmdline).contains(token)
        })
        .count()
}

/// Regression (issue 38, defect 2): kill -9 of the compute process during PyTorch's side left
/// the peer script running, reparented to init, and its temporary folder (425 KB) behind. The
/// script now dies with the compute process (a parent-death signal), and the next compute
/// process sweeps the folder of the one that is gone.
#[test]
fn stdio_kill_9_during_the_peer_leaves_no_script_and_no_folder() {
    let _alone = one_at_a_time();
    let bin = tempfile::tempdir().unwrap();
    let python = fake_python(
        bin.path(),
        r#"if [ "$1" = "-c" ]; then echo '{"torch": "2.11.0", "cuda": false, "device": null}'; exit 0; fi
echo '{"kind":"env","torch":"2.11.0","device":"CPU"}'
sleep 300 &
while :; do sleep 1; done"#,
    );
    let token = python.display().to_string();
    let home = home_choosing(&python);
    let tmp = tempfile::tempdir().unwrap();
    let folders = || {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("showdown-child-")
            })
            .count()
    };
    let mut command = showdown(home.path());
    command.env("TMPDIR", tmp.path());
    let mut s = Sidecar::start(command);
    let mut config = duel_config(Some(64), 1);
    config["pytorch"] = json!(true);
    s.send(1, json!({"op": "duel", "config": config}));
    let owner = s.child.id();
    // Until the script has started its `sleep 300` too: killed before that (CI's load once
    // delayed it), it would leave nothing for the next start to sweep.
    let deadline = Instant::now() + LONG;
    while !(alive_with(&token) > 0 && folders() > 0 && sleeping_for(owner) > 0) {
        assert!(Instant::now() < deadline, "the peer script never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    while alive_with(&token) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        alive_with(&token),
        0,
        "the script outlived the compute process"
    );
    assert_eq!(folders(), 1, "its folder is left until the next start");
    assert!(
        owned_by(owner) >= 1,
        "what the script started is left until the next start"
    );
    let mut next = showdown(home.path());
    next.env("TMPDIR", tmp.path());
    let mut s2 = Sidecar::start(next);
    s2.send(2, json!({"op": "doctor"}));
    s2.finals(&[2], LONG);
    assert_eq!(folders(), 0, "the next compute process swept it");
    let deadline = Instant::now() + Duration::from_secs(2);
    while owned_by(owner) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(owned_by(owner), 0, "and what the script started");
}

/// The `sleep 300` processes (what the fake peer script starts) carrying `owner`'s mark.
fn sleeping_for(owner: u32) -> usize {
    owned_where(owner, |cmdline| cmdline == b"sleep\x00300\x00")
}

/// The live processes whose environment names `owner` as the process that started their
/// family (`SHOWDOWN_CHILD_OF`).
fn owned_by(owner: u32) -> usize {
    owned_where(owner, |_| true)
}

/// The live processes (zombies left out) carrying `owner`'s mark whose command line (its
/// NUL-separated words) passes `cmdline_matches`.
fn owned_where(owner: u32, cmdline_matches: impl Fn(&[u8]) -> bool) -> usize {
    let marker = format!("SHOWDOWN_CHILD_OF={owner}");
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let zombie = stat
                .rfind(')')
                .and_then(|i| stat.get(i + 2..i + 3))
                .is_some_and(|s| s == "Z");
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let environ = std::fs::read(e.path().join("environ")).unwrap_or_default();
            !zombie
                && cmdline_matches(&cmdline)
                && environ
                    .split(|b| *b == 0)
                    .any(|var| var == marker.as_bytes())
        })
        .count()
}
