//! `showdown serve`: the stdio sidecar and the HTTP door, as real processes on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails by panicking

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const LONG: Duration = Duration::from_secs(60);

fn showdown() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_showdown"));
    c.env(
        "SHOWDOWN_DATA_HOME",
        std::env::temp_dir().join("showdown-serve-test-home"),
    );
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

fn wait_exit(child: &mut Child, within: Duration) -> ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("showdown did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A tiny CPU duel; `train_limit: None` trains on all 8,000 images (seconds per epoch).
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

struct Sidecar {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Sidecar {
    fn start() -> Sidecar {
        Sidecar::start_with(showdown())
    }

    /// A sidecar whose library of imports lives in `home`.
    fn start_in(home: &Path) -> Sidecar {
        let mut c = showdown();
        c.env("SHOWDOWN_DATA_HOME", home);
        Sidecar::start_with(c)
    }

    fn start_with(mut command: Command) -> Sidecar {
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

    /// The next reply line, parsed; every line must be a reply.
    fn next(&self, within: Duration) -> Value {
        let line = self
            .lines
            .recv_timeout(within)
            .unwrap_or_else(|e| panic!("no reply within {within:?}: {e}"));
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert!(v["id"].is_u64(), "reply without id: {line}");
        let keys = ["ok", "error", "event"]
            .iter()
            .filter(|k| v.get(**k).is_some())
            .count();
        assert_eq!(keys, 1, "a reply carries one of ok/error/event: {line}");
        v
    }

    /// Replies until the final one for `id`; returns (events for `id`, final reply).
    fn finish(&self, id: u64, within: Duration) -> (Vec<Value>, Value) {
        let deadline = Instant::now() + within;
        let mut events = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.next(left);
            if v["id"] != id {
                continue;
            }
            if v.get("event").is_some() {
                events.push(v);
            } else {
                return (events, v);
            }
        }
    }

    /// Waits for the first event of request `id`.
    fn first_event(&self, id: u64) -> Value {
        let v = self.next(LONG);
        assert_eq!(v["id"], id, "{v}");
        assert!(v.get("event").is_some(), "expected an event: {v}");
        v
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn stdio_answers_doctor_model_and_occupancy() {
    let mut s = Sidecar::start();
    s.send(1, json!({"op": "doctor"}));
    s.send(2, json!({"op": "model_summary"}));
    s.send(
        3,
        json!({"op": "occupancy", "cc": "9.0", "input":
            {"threads_per_block": 256, "registers_per_thread": 64, "shared_mem_per_block": 0}}),
    );
    // Each request is answered on a worker of its own: the replies come in any order.
    let mut replies: Vec<Value> = (0..3).map(|_| s.next(LONG)).collect();
    replies.sort_by_key(|r| r["id"].as_u64());
    let [doctor, model, occ] = &replies[..] else {
        panic!("three replies: {replies:?}")
    };
    assert_eq!(doctor["id"], 1);
    assert!(doctor["ok"]["cpu"].is_string(), "{doctor}");
    assert!(doctor["ok"]["auto_backend"].is_string(), "{doctor}");
    assert_eq!(model["id"], 2);
    assert!(model["ok"].is_object(), "{model}");
    assert_eq!(occ["id"], 3);
    assert!(occ["ok"]["occupancy_pct"].as_f64().is_some(), "{occ}");
    s.close_stdin();
    assert_eq!(wait_exit(&mut s.child, LONG).code(), Some(0));
}

#[test]
fn stdio_duel_streams_events_then_the_report() {
    let mut s = Sidecar::start();
    s.send(
        7,
        json!({"op": "duel", "config": duel_config(Some(256), 1)}),
    );
    let (events, last) = s.finish(7, LONG);
    let report = &last["ok"];
    assert!(report.is_object(), "{last}");
    assert_eq!(report["backend"], "cpu");
    assert_eq!(report["dataset"]["train"], 256);
    assert_eq!(report["runs"].as_array().map(Vec::len), Some(2), "{report}");
    let types: Vec<&str> = events
        .iter()
        .map(|e| {
            assert_eq!(e["event"]["stream"], "duel", "{e}");
            e["event"]["event"]["type"].as_str().unwrap_or("?")
        })
        .collect();
    assert_eq!(types.first(), Some(&"run_started"), "{types:?}");
    assert_eq!(types.last(), Some(&"run_finished"), "{types:?}");
    assert_eq!(types.iter().filter(|t| **t == "epoch").count(), 2);
    assert_eq!(types.iter().filter(|t| **t == "run_finished").count(), 2);
}

#[test]
fn stdio_cancel_stops_a_running_duel_within_a_second() {
    let mut s = Sidecar::start();
    s.send(1, json!({"op": "duel", "config": duel_config(None, 5)}));
    s.first_event(1);
    let sent = Instant::now();
    s.send(2, json!({"op": "cancel"}));
    let mut cancel_reply = None;
    let (_, last) = loop {
        let v = s.next(LONG);
        if v["id"] == 2 {
            cancel_reply = Some(v);
        } else if v["id"] == 1 && v.get("event").is_none() {
            break ((), v);
        }
    };
    let took = sent.elapsed();
    assert_eq!(last["error"]["code"], "cancelled", "{last}");
    assert!(took < Duration::from_secs(1), "cancel took {took:?}");
    let cancel_reply = cancel_reply.unwrap_or_else(|| s.next(LONG));
    assert_eq!(cancel_reply["id"], 2);
    assert_eq!(cancel_reply["ok"]["cancelled"], true, "{cancel_reply}");
    // Nothing runs now: a second cancel says so, and a new duel may start.
    s.send(3, json!({"op": "cancel"}));
    let (_, again) = s.finish(3, LONG);
    assert_eq!(again["ok"]["cancelled"], false, "{again}");
}

#[test]
fn stdio_second_duel_while_one_runs_is_busy() {
    let mut s = Sidecar::start();
    s.send(1, json!({"op": "duel", "config": duel_config(None, 5)}));
    s.first_event(1);
    s.send(
        2,
        json!({"op": "duel", "config": duel_config(Some(256), 1)}),
    );
    let (events, busy) = s.finish(2, LONG);
    assert!(events.is_empty());
    assert_eq!(busy["error"]["code"], "busy", "{busy}");
    assert!(
        busy["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("already running")),
        "{busy}"
    );
    // EOF cancels the running duel, which still answers, and the process exits 0.
    s.close_stdin();
    let (_, last) = s.finish(1, LONG);
    assert_eq!(last["error"]["code"], "cancelled", "{last}");
    assert_eq!(
        wait_exit(&mut s.child, Duration::from_secs(10)).code(),
        Some(0)
    );
}

#[test]
fn stdio_bad_lines_get_bad_input_replies_and_the_server_carries_on() {
    let mut s = Sidecar::start();
    s.send_raw("this is not json");
    let v = s.next(LONG);
    assert_eq!(v["id"], 0);
    assert_eq!(v["error"]["code"], "bad_input", "{v}");
    let m = v["error"]["message"].as_str().unwrap_or("");
    // No internal line number (issue 30).
    assert!(!m.contains("line 1") && m.contains("not JSON"), "{m}");

    s.send(5, json!({"op": "make_coffee"}));
    let v = s.next(LONG);
    assert_eq!(v["id"], 5);
    assert_eq!(v["error"]["code"], "bad_input", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("make_coffee")),
        "{v}"
    );

    s.send_raw(r#"{"request":{"op":"doctor"}}"#);
    let v = s.next(LONG);
    assert_eq!(v["id"], 0);
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("id")),
        "{v}"
    );

    s.send(6, json!({"op": "duel", "config": {"batch": 0}}));
    let v = s.next(LONG);
    assert_eq!(v["error"]["code"], "bad_input", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("--batch")),
        "{v}"
    );

    s.send_raw("");
    s.send(7, json!({"op": "list_datasets"}));
    let v = s.next(LONG);
    assert_eq!(v["id"], 7);
    assert!(v["ok"].is_array(), "{v}");
    s.close_stdin();
    assert_eq!(wait_exit(&mut s.child, LONG).code(), Some(0));
}

// ---------------------------------------------------------------------------------------------
// HTTP

struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let mut command = showdown();
        command.args(["serve", "--http", "127.0.0.1:0"]).args(extra);
        Server::start_with(command)
    }

    /// Starts `command`, which must run `showdown serve --http 127.0.0.1:0 …`.
    fn start_with(mut command: Command) -> Server {
        let mut child = command
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
        assert!(base.starts_with("http://127.0.0.1:"), "{base}");
        Server { child, base }
    }

    fn addr(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    fn post(&self, path: &str, body: &str, token: Option<&str>) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(LONG))
            .build()
            .into();
        let mut req = agent
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/json");
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let mut resp = req.send(body).expect("the request completes");
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().expect("a text body");
        (status, text)
    }

    /// A hand-written request (paths as given, no client normalisation): (status, whole reply).
    fn raw(&self, head: &str) -> (u16, String) {
        let mut s = TcpStream::connect(self.addr()).expect("connect");
        s.set_read_timeout(Some(LONG)).expect("timeout");
        s.write_all(head.as_bytes()).expect("send");
        let mut reply = Vec::new();
        let _ = s.read_to_end(&mut reply);
        let reply = String::from_utf8_lossy(&reply).into_owned();
        let status = reply
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP reply: {reply}"));
        (status, reply)
    }

    fn get(&self, path: &str) -> (u16, String) {
        self.raw(&format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr()
        ))
    }

    fn port(&self) -> u16 {
        self.addr()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port")
    }

    /// `method path` with exactly these headers (plus `Content-Length` when there is a body and
    /// `Connection: close`): (status, whole reply).
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("Connection: close\r\n\r\n");
        self.raw(&(head + body))
    }

    /// The compute process's state (`GET /api/compute`).
    fn compute(&self) -> Value {
        let (code, reply) = self.get("/api/compute");
        assert_eq!(code, 200, "{reply}");
        serde_json::from_str(body_of(&reply)).unwrap_or_else(|e| panic!("{e}: {reply}"))
    }
}

/// The body of a whole HTTP reply (not chunked).
fn body_of(reply: &str) -> &str {
    reply.split_once("\r\n\r\n").map_or("", |(_, body)| body)
}

/// A whole reply's [`ApiError`] body, checking that it is served as JSON.
fn api_error_of(reply: &str) -> Value {
    let head = reply
        .split_once("\r\n\r\n")
        .map_or(reply, |(head, _)| head)
        .to_ascii_lowercase();
    assert!(
        head.contains("\r\ncontent-type: application/json"),
        "not served as JSON: {reply}"
    );
    let v: Value = serde_json::from_str(body_of(reply)).unwrap_or_else(|e| panic!("{e}: {reply}"));
    assert_eq!(v["code"], "bad_input", "{reply}");
    assert!(v["message"].is_string(), "{reply}");
    v
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn http_call_answers_doctor_and_bad_requests() {
    let s = Server::start(&[]);
    let (status, body) = s.post("/api/call", r#"{"op":"doctor"}"#, None);
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON");
    assert!(v["cpu"].is_string(), "{v}");

    let (status, body) = s.post("/api/call", r#"{"op":"nope"}"#, None);
    assert_eq!(status, 400, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(v["code"], "bad_input");
    assert!(
        v["message"].as_str().is_some_and(|m| m.contains("nope")),
        "{v}"
    );

    let (status, body) = s.post("/api/call", r#"{"op":"cancel"}"#, None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, r#"{"cancelled":false}"#);
}

#[test]
fn http_job_streams_any_request_with_the_same_framing() {
    let s = Server::start(&[]);
    // A quick request through the streaming route: no events, then its result.
    let (status, body) = s.post("/api/job", r#"{"op":"model_summary"}"#, None);
    assert_eq!(status, 200, "{body}");
    let replies = sse_replies(&body);
    assert_eq!(replies.len(), 1, "{body}");
    assert!(replies[0]["ok"].is_object(), "{body}");
    // A bad request is refused before any stream starts.
    let (status, body) = s.post("/api/job", r#"{"op":"nope"}"#, None);
    assert_eq!(status, 400, "{body}");
    // The old per-operation routes are gone: no door names an operation.
    let (status, _) = s.post("/api/duel", &duel_config(Some(256), 1).to_string(), None);
    assert_eq!(status, 404);
}

/// The `data:` payloads of a Server-Sent Events body, parsed.
fn sse_replies(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("each event is JSON"))
        .collect()
}

/// Browser mode's compute runs in a supervised child process: killing it mid-duel fails that
/// duel with a clear error, and the next request gets a fresh process.
#[test]
fn http_survives_its_compute_process_killed_mid_duel() {
    let s = Server::start(&[]);
    let status = |s: &Server| -> Value {
        let (code, reply) = s.get("/api/compute");
        assert_eq!(code, 200, "{reply}");
        let body = reply.split("\r\n\r\n").nth(1).unwrap_or("");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {reply}"))
    };
    assert_eq!(status(&s)["running"], false, "started on the first request");

    let body = json!({"op": "duel", "config": duel_config(None, 20)}).to_string();
    let mut stream = TcpStream::connect(s.addr()).expect("connect");
    stream.set_read_timeout(Some(LONG)).expect("timeout");
    write!(
        stream,
        "POST /api/job HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        s.addr(),
        body.len()
    )
    .expect("send");
    let mut lines = BufReader::new(stream).lines();
    // Wait for the duel's first event: the compute process is running it.
    loop {
        let line = lines.next().expect("the stream goes on").expect("read");
        if line.starts_with("data: ") && line.contains("\"event\"") {
            break;
        }
    }
    let before = status(&s);
    assert_eq!(before["running"], true, "{before}");
    let pid = before["pid"].as_u64().expect("a pid");
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    // The duel's stream ends with an error naming what happened.
    let last = loop {
        let line = lines
            .next()
            .expect("the stream ends with a reply")
            .expect("read");
        if let Some(data) = line.strip_prefix("data: ") {
            let v: Value = serde_json::from_str(data).expect("JSON");
            if v.get("event").is_none() {
                break v;
            }
        }
    };
    assert_eq!(last["error"]["code"], "runtime", "{last}");
    let message = last["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("ended"), "{message}");

    // The next request succeeds, on a new compute process.
    let (code, body) = s.post("/api/call", r#"{"op":"model_summary"}"#, None);
    assert_eq!(code, 200, "{body}");
    let after = status(&s);
    assert_eq!(after["running"], true, "{after}");
    assert_ne!(after["pid"].as_u64(), Some(pid), "{after}");
    assert_eq!(after["crashes"], 1, "{after}");
}

#[test]
fn http_duel_streams_server_sent_events() {
    let s = Server::start(&[]);
    let request = json!({"op": "duel", "config": duel_config(Some(256), 1)});
    let (status, body) = s.post("/api/job", &request.to_string(), None);
    assert_eq!(status, 200, "{body}");
    let replies = sse_replies(&body);
    let (last, events) = replies.split_last().expect("some events");
    assert!(!events.is_empty());
    assert!(events
        .iter()
        .all(|e| e.get("event").is_some() && e["id"] == last["id"]));
    assert_eq!(events[0]["event"]["event"]["type"], "run_started");
    assert_eq!(last["ok"]["dataset"]["train"], 256, "{last}");
    assert_eq!(last["ok"]["runs"].as_array().map(Vec::len), Some(2));
    // The duel's reply says where the history keeps it.
    assert!(last["ok"]["saved_run"].is_string(), "{last}");
}

#[test]
fn http_with_a_token_refuses_requests_without_it() {
    let s = Server::start(&["--token", "s3cret"]);
    let (status, body) = s.post("/api/call", r#"{"op":"model_summary"}"#, None);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Bearer"), "{body}");
    let (status, _) = s.post("/api/call", r#"{"op":"model_summary"}"#, Some("wrong"));
    assert_eq!(status, 401);
    let (status, body) = s.post("/api/call", r#"{"op":"model_summary"}"#, Some("s3cret"));
    assert_eq!(status, 200, "{body}");
}

#[test]
fn http_off_loopback_without_a_token_exits_2() {
    let mut child = showdown()
        .args(["serve", "--http", "0.0.0.0:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("showdown starts");
    let status = wait_exit(&mut child, LONG);
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let mut stdout = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut stdout);
    }
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--token"), "{stderr}");
    assert!(!stdout.contains("listening"), "{stdout}");
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write a test file");
}

#[test]
fn http_static_files_refuse_path_traversal() {
    let t = tempfile::tempdir().expect("tempdir");
    let ui = t.path().join("ui");
    std::fs::create_dir(&ui).expect("mkdir");
    write(&ui.join("index.html"), "hello from the ui");
    write(&t.path().join("secret.txt"), "TOP SECRET");
    let ui_arg = ui.display().to_string();
    let s = Server::start(&["--ui-dir", &ui_arg]);

    let (status, body) = s.get("/");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("hello from the ui"));
    let (status, body) = s.get("/missing.js");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("not found: /missing.js"), "{body}");
    for path in [
        "/../secret.txt",
        "/../../Cargo.toml",
        "/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/%2e%2e%2fsecret.txt",
        "/ui/../../secret.txt",
    ] {
        let (status, body) = s.get(path);
        assert!(
            status == 404 || status == 400,
            "{path} answered {status}: {body}"
        );
        assert!(!body.contains("TOP SECRET"), "{path} leaked: {body}");
    }
}

#[test]
fn http_oversized_bodies_get_413() {
    let s = Server::start(&[]);
    // Headers only: the server must refuse from the announced length without reading the body.
    let (status, reply) = s.raw(&format!(
        "POST /api/call HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        s.addr(),
        40 << 20
    ));
    assert_eq!(status, 413, "{reply}");
    // A body within the limit but not a request is a 400 naming the problem.
    let (status, body) = s.post("/api/call", "[1,2]", None);
    assert_eq!(status, 400, "{body}");
}

#[test]
fn stdio_ncu_library_imports_attaches_and_removes() {
    use base64::Engine;
    let home = tempfile::tempdir().unwrap();
    let mut sc = Sidecar::start_in(home.path());
    let csv = std::fs::read_to_string(format!(
        "{}/../compute/core/tests/data/ncu/details_legacy_human.csv",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    sc.send(
        1,
        json!({"op": "ncu_import", "file_name": "C:\\profiles\\<b>run<i>.csv", "text": csv}),
    );
    let (_, r) = sc.finish(1, LONG);
    let import = r["ok"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    assert_eq!(
        r["ok"]["source_name"], "<b>run<i>.csv",
        "folders dropped, text kept as text"
    );
    let png = std::fs::read(format!(
        "{}/tests/data/shot.png",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
    sc.send(
        2,
        json!({"op": "ncu_attach", "import": import, "panel": "throughput", "file_name": "sol.png",
               "image_base64": b64, "caption": "before the fix"}),
    );
    let (_, r) = sc.finish(2, LONG);
    assert_eq!(
        (r["ok"]["width"].as_u64(), r["ok"]["height"].as_u64()),
        (Some(24), Some(16)),
        "{r}"
    );
    let shot = r["ok"]["id"].as_str().unwrap().to_string();
    sc.send(3, json!({"op": "ncu_panels", "import": import}));
    let (_, r) = sc.finish(3, LONG);
    let panels = r["ok"][0]["panels"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(panels.len(), 7);
    let sol = panels.iter().find(|p| p["id"] == "throughput").unwrap();
    assert_eq!(sol["screenshots"][0]["caption"], "before the fix");
    // Bad input: not base64, not an image, unknown panel, unknown import; the server goes on.
    for (id, req, needle) in [
        (
            4,
            json!({"op": "ncu_attach", "import": import, "panel": "launch", "file_name": "a.png", "image_base64": "***"}),
            "not base64",
        ),
        (
            5,
            json!({"op": "ncu_attach", "import": import, "panel": "launch", "file_name": "a.png", "image_base64": "aGVsbG8="}),
            "not a PNG or JPEG",
        ),
        (
            6,
            json!({"op": "ncu_attach", "import": import, "panel": "sol", "file_name": "a.png", "image_base64": b64}),
            "unknown panel 'sol'",
        ),
        (
            7,
            json!({"op": "ncu_panels", "import": "0123456789abcdef"}),
            "no import '0123456789abcdef'",
        ),
        (
            8,
            json!({"op": "ncu_import", "file_name": "x.csv", "text": "a,b\n1,2\n"}),
            "x.csv",
        ),
    ] {
        sc.send(id, req);
        let (_, r) = sc.finish(id, LONG);
        assert_eq!(r["error"]["code"], "bad_input", "{r}");
        let msg = r["error"]["message"].as_str().unwrap();
        assert!(msg.contains(needle), "{needle:?} not in {msg}");
    }
    sc.send(9, json!({"op": "ncu_imports"}));
    let (_, r) = sc.finish(9, LONG);
    assert_eq!(
        r["ok"]["imports"][0]["screenshots"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "{r}"
    );
    sc.send(
        10,
        json!({"op": "ncu_detach", "import": import, "screenshot": shot}),
    );
    assert_eq!(sc.finish(10, LONG).1["ok"]["removed"], true);
    sc.send(11, json!({"op": "ncu_remove", "import": import}));
    assert_eq!(sc.finish(11, LONG).1["ok"]["removed"], true);
    sc.send(12, json!({"op": "ncu_imports"}));
    assert_eq!(
        sc.finish(12, LONG).1["ok"],
        json!({"imports": [], "skipped": []})
    );
}

#[test]
fn stdio_a_line_over_the_limit_is_refused_and_the_server_goes_on() {
    let mut sc = Sidecar::start();
    // 33 MiB of text in one request line: over the 32 MiB limit.
    let big = "x".repeat(33 << 20);
    sc.send(
        1,
        json!({"op": "ncu_import", "file_name": "big.csv", "text": big}),
    );
    let r = sc.next(LONG);
    assert_eq!(r["error"]["code"], "bad_input", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than"),
        "{r}"
    );
    sc.send(2, json!({"op": "model_summary"}));
    let (_, r) = sc.finish(2, LONG);
    assert!(r.get("ok").is_some(), "{r}");
}

// ---------------------------------------------------------------------------------------------
// Hardening (issue 19): each test is named after the bug it pins.

/// A process's thread count (Linux), `None` elsewhere.
fn threads_of(pid: u64) -> Option<usize> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
}

#[test]
fn http_threads_100000_is_refused_without_a_thread_storm() {
    let s = Server::start(&[]);
    let (status, body) = s.post("/api/call", r#"{"op":"model_summary"}"#, None);
    assert_eq!(status, 200, "{body}");
    let pid = s.compute()["pid"]
        .as_u64()
        .expect("the compute process runs");
    let before = threads_of(pid);
    let mut config = duel_config(Some(256), 1);
    config["threads"] = json!(100_000);
    let (status, body) = s.post(
        "/api/call",
        &json!({"op": "duel", "config": config}).to_string(),
        None,
    );
    assert_eq!(status, 400, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(v["code"], "bad_input", "{v}");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let message = v["message"].as_str().unwrap_or("");
    assert!(
        message.contains("--threads") && message.contains(&format!("at most {cores}")),
        "{message}"
    );
    match (before, threads_of(pid)) {
        (Some(before), Some(after)) => {
            assert!(
                after < before + 16,
                "{before} threads before, {after} after"
            )
        }
        _ => eprintln!("no /proc/{pid}/status here: thread count not checked"),
    }
    assert_eq!(
        s.compute()["pid"].as_u64(),
        Some(pid),
        "the compute process lives on"
    );
}

#[test]
fn http_unknown_duel_field_is_refused_naming_it() {
    let s = Server::start(&[]);
    let misspelled = r#"{"op":"duel","config":{"train_limt":5}}"#;
    for path in ["/api/call", "/api/job"] {
        let (status, body) = s.post(path, misspelled, None);
        assert_eq!(status, 400, "{path}: {body}");
        let v: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(v["code"], "bad_input", "{v}");
        assert!(
            v["message"]
                .as_str()
                .is_some_and(|m| m.contains("unknown field `train_limt`")),
            "{v}"
        );
    }
    let (status, body) = s.post("/api/call", r#"{"op":"model_summary","verbose":1}"#, None);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("`verbose`"), "{body}");
    // Nothing was started.
    let (status, body) = s.post("/api/call", r#"{"op":"cancel"}"#, None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, r#"{"cancelled":false}"#);
}

#[test]
fn http_foreign_origin_is_403_json() {
    let s = Server::start(&[]);
    let host = s.addr().to_string();
    let port = s.port();
    let request = r#"{"op":"model_summary"}"#;
    let json = ("Content-Type", "application/json");
    for origin in [
        "http://evil.example".to_string(),
        "null".to_string(),
        "http://127.0.0.1:1".to_string(),
        format!("https://127.0.0.1:{port}"),
        format!("http://localhost:{port}.evil.example"),
    ] {
        let (status, reply) = s.request(
            "POST",
            "/api/call",
            &[("Host", &host), json, ("Origin", &origin)],
            request,
        );
        assert_eq!(status, 403, "{origin}: {reply}");
        let v = api_error_of(&reply);
        assert!(
            v["message"]
                .as_str()
                .is_some_and(|m| m.contains(&origin.to_ascii_lowercase())),
            "{v}"
        );
        let (status, reply) = s.request(
            "GET",
            "/api/compute",
            &[("Host", &host), ("Origin", &origin)],
            "",
        );
        assert_eq!(status, 403, "{origin}: {reply}");
        api_error_of(&reply);
    }
    // The server's own pages, under any of its names.
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ] {
        let (status, reply) = s.request(
            "POST",
            "/api/call",
            &[("Host", &host), json, ("Origin", &origin)],
            request,
        );
        assert_eq!(status, 200, "{origin}: {reply}");
    }

    // --allow-origin: that origin gets through, with CORS headers and a preflight.
    let dev = "http://localhost:5173";
    let s = Server::start(&["--allow-origin", dev]);
    let host = s.addr().to_string();
    let (status, reply) = s.request(
        "POST",
        "/api/call",
        &[("Host", &host), json, ("Origin", dev)],
        request,
    );
    assert_eq!(status, 200, "{reply}");
    let lower = reply.to_ascii_lowercase();
    assert!(
        lower.contains(&format!("access-control-allow-origin: {dev}")),
        "{reply}"
    );
    let (status, reply) = s.request(
        "OPTIONS",
        "/api/call",
        &[
            ("Host", &host),
            ("Origin", dev),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "content-type"),
        ],
        "",
    );
    assert_eq!(status, 204, "{reply}");
    assert!(
        reply
            .to_ascii_lowercase()
            .contains("access-control-allow-headers: content-type"),
        "{reply}"
    );
    let (status, reply) = s.request(
        "POST",
        "/api/call",
        &[("Host", &host), json, ("Origin", "http://localhost:5174")],
        request,
    );
    assert_eq!(status, 403, "{reply}");
    api_error_of(&reply);

    // An --allow-origin that is not an origin is a usage error.
    let mut child = showdown()
        .args(["serve", "--http", "127.0.0.1:0", "--allow-origin", "*"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("showdown starts");
    let status = wait_exit(&mut child, LONG);
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--allow-origin"), "{stderr}");
}

#[test]
fn http_foreign_host_is_403_json() {
    let t = tempfile::tempdir().expect("tempdir");
    write(&t.path().join("index.html"), "hello from the ui");
    let ui_arg = t.path().display().to_string();
    let s = Server::start(&["--ui-dir", &ui_arg]);
    let port = s.port();
    let json = ("Content-Type", "application/json");
    // A page of evil.example whose name now resolves to 127.0.0.1 (DNS rebinding) sends its
    // own name as Host.
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        "127.0.0.1:1".to_string(),
        format!("localhost.evil.example:{port}"),
    ] {
        for (method, path, body) in [
            ("GET", "/api/compute", ""),
            ("GET", "/", ""),
            ("GET", "/index.html", ""),
            ("POST", "/api/call", r#"{"op":"model_summary"}"#),
        ] {
            let (status, reply) = s.request(method, path, &[("Host", &host), json], body);
            assert_eq!(status, 403, "{host} {method} {path}: {reply}");
            assert!(!reply.contains("hello from the ui"), "{reply}");
            let v = api_error_of(&reply);
            assert!(
                v["message"].as_str().is_some_and(|m| m.contains(&host)),
                "{v}"
            );
        }
    }
    // An absolute URI naming another host, and a request with no Host at all.
    let (status, reply) = s.raw(&format!(
        "GET http://evil.example:{port}/api/compute HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Connection: close\r\n\r\n"
    ));
    assert_eq!(status, 403, "{reply}");
    let (status, reply) = s.raw("GET /api/compute HTTP/1.0\r\n\r\n");
    assert_eq!(status, 403, "{reply}");
    api_error_of(&reply);
    // The server's own names.
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let (status, reply) = s.request("GET", "/api/compute", &[("Host", &host)], "");
        assert_eq!(status, 200, "{host}: {reply}");
        let (status, reply) = s.request("GET", "/", &[("Host", &host)], "");
        assert_eq!(status, 200, "{host}: {reply}");
        assert!(reply.contains("hello from the ui"), "{reply}");
    }
}

#[test]
fn http_text_plain_is_415_json() {
    let s = Server::start(&[]);
    let host = s.addr().to_string();
    let request = r#"{"op":"model_summary"}"#;
    // A form or a text/plain fetch from another page needs no CORS preflight: refused.
    for content_type in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        for path in ["/api/call", "/api/job"] {
            let mut headers = vec![("Host", host.as_str())];
            if let Some(t) = content_type {
                headers.push(("Content-Type", t));
            }
            let (status, reply) = s.request("POST", path, &headers, request);
            assert_eq!(status, 415, "{content_type:?} {path}: {reply}");
            let v = api_error_of(&reply);
            assert!(
                v["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("application/json")),
                "{v}"
            );
        }
    }
    let (status, reply) = s.request(
        "POST",
        "/api/call",
        &[
            ("Host", &host),
            ("Content-Type", "Application/JSON; charset=utf-8"),
        ],
        request,
    );
    assert_eq!(status, 200, "{reply}");
    // Other refusals on /api are JSON too: a GET of a POST route.
    let (status, reply) = s.get("/api/call");
    assert_eq!(status, 405, "{reply}");
    api_error_of(&reply);
}

#[test]
fn http_413_is_json() {
    let s = Server::start(&[]);
    for path in ["/api/call", "/api/job"] {
        // Headers only: refused from the announced length, without reading a body.
        let (status, reply) = s.raw(&format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            s.addr(),
            40 << 20
        ));
        assert_eq!(status, 413, "{reply}");
        let v = api_error_of(&reply);
        assert!(
            v["message"]
                .as_str()
                .is_some_and(|m| m.contains("larger than")),
            "{v}"
        );
    }
}

#[test]
fn http_half_sent_requests_do_not_block_an_authorised_call() {
    // 128 open files at most (so the old server ran out of descriptors), a half-second header
    // timeout (so the test is short).
    let mut command = Command::new("sh");
    command
        .env(
            "SHOWDOWN_DATA_HOME",
            std::env::temp_dir().join("showdown-serve-test-home"),
        )
        .env("SHOWDOWN_HTTP_HEADER_TIMEOUT_MS", "500")
        .args([
            "-c",
            "ulimit -n 128 && exec \"$0\" serve --http 127.0.0.1:0 --token s3cret",
            env!("CARGO_BIN_EXE_showdown"),
        ]);
    let s = Server::start_with(command);
    // More half-sent requests than the server may have files open.
    let mut half_open = Vec::new();
    for _ in 0..150 {
        let mut c = TcpStream::connect(s.addr()).expect("connect");
        c.write_all(
            format!(
                "POST /api/call HTTP/1.1\r\nHost: {}\r\nContent-Le",
                s.addr()
            )
            .as_bytes(),
        )
        .expect("send half a request");
        half_open.push(c);
    }
    let started = Instant::now();
    let body = r#"{"op":"model_summary"}"#;
    let mut c = TcpStream::connect(s.addr()).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        c,
        "POST /api/call HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer s3cret\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        s.addr(),
        body.len()
    )
    .expect("send");
    let mut reply = Vec::new();
    let _ = c.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    let took = started.elapsed();
    assert!(
        reply.starts_with("HTTP/1.1 200"),
        "no answer after {took:?} behind 150 half-sent requests: {reply:?}"
    );
    assert!(took < Duration::from_secs(8), "answered after {took:?}");
    drop(half_open);
}

#[test]
fn http_dropped_call_cancels_its_duel() {
    let s = Server::start(&[]);
    // A duel that would run for minutes, through /api/call, on a connection we then drop.
    let body = json!({"op": "duel", "config": duel_config(None, 20)}).to_string();
    let send_duel = || {
        let mut stream = TcpStream::connect(s.addr()).expect("connect");
        write!(
            stream,
            "POST /api/call HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            s.addr(),
            body.len()
        )
        .expect("send");
        stream
            .set_read_timeout(Some(Duration::from_millis(20)))
            .expect("timeout");
        stream
    };
    let mut stream = send_duel();
    // A probe that never runs: `busy` while a job holds the slot, else refused as bad input.
    // (The probe is a job too: one that reaches the service first holds the slot for the
    // moment of its refusal, and the duel arriving then is answered `busy` at once — seen
    // as a reply on the duel's connection, and the duel is sent again.)
    let probe = r#"{"op":"duel","config":{"batch":0}}"#;
    let slot_taken = |s: &Server| -> bool {
        let (status, body) = s.post("/api/call", probe, None);
        assert!(status == 409 || status == 400, "{status}: {body}");
        status == 409
    };
    let deadline = Instant::now() + LONG;
    while !slot_taken(&s) {
        assert!(Instant::now() < deadline, "the duel never started");
        let mut early = [0u8; 64];
        if matches!(stream.read(&mut early), Ok(n) if n > 0) {
            let head = String::from_utf8_lossy(&early);
            assert!(
                head.starts_with("HTTP/1.1 409"),
                "the duel was refused: {head}"
            );
            stream = send_duel();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = s.compute()["pid"].as_u64();
    // Let it run a moment, then the client goes away.
    std::thread::sleep(Duration::from_millis(500));
    assert!(slot_taken(&s), "the duel is still running");
    drop(stream);
    let dropped = Instant::now();
    while slot_taken(&s) {
        assert!(
            dropped.elapsed() < Duration::from_secs(10),
            "the abandoned duel still holds the job slot"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Cancelled, not killed: the same compute process answers.
    assert_eq!(s.compute()["pid"].as_u64(), pid);
    assert_eq!(s.compute()["crashes"], 0);
}

/// Runs of two spaces or more in a message: a line continuation written wrong.
fn assert_no_space_runs(what: &str, message: &str) {
    assert!(
        !message.contains("  "),
        "{what} has a run of spaces: {message:?}"
    );
    assert!(!message.is_empty(), "{what} is empty");
}

#[test]
fn serve_messages_have_no_runs_of_spaces() {
    // The refusal to bind off loopback without a token.
    let o = showdown()
        .args(["serve", "--http", "0.0.0.0:0"])
        .output()
        .expect("showdown runs");
    assert_eq!(o.status.code(), Some(2));
    assert_no_space_runs(
        "the off-loopback refusal",
        &String::from_utf8_lossy(&o.stderr),
    );
    // 401 without the token, 403 from a foreign page, 404 without a web UI folder.
    let s = Server::start(&["--token", "s3cret"]);
    let (status, body) = s.post("/api/call", r#"{"op":"model_summary"}"#, None);
    assert_eq!(status, 401, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_no_space_runs("the 401 message", v["message"].as_str().unwrap());
    let host = s.addr().to_string();
    let (status, reply) = s.request(
        "POST",
        "/api/call",
        &[
            ("Host", &host),
            ("Content-Type", "application/json"),
            ("Origin", "http://evil.example"),
        ],
        r#"{"op":"model_summary"}"#,
    );
    assert_eq!(status, 403, "{reply}");
    let v = api_error_of(&reply);
    assert_no_space_runs("the 403 origin message", v["message"].as_str().unwrap());
    // Tests run in cli/, where app-ui/dist does not exist: no web UI folder.
    let (status, reply) = s.get("/index.html");
    assert_eq!(status, 404, "{reply}");
    assert_no_space_runs("the no-UI 404", body_of(&reply));
}

#[cfg(unix)]
#[test]
fn stdio_exits_1_by_itself_when_its_readers_go_away_mid_duel() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = showdown()
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("showdown starts");
    // Nobody reads its diagnostics.
    drop(child.stderr.take());
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
    // A duel that would run for minutes.
    let duel = json!({"id": 1, "request": {"op": "duel", "config": duel_config(None, 20)}});
    writeln!(stdin, "{duel}").expect("send");
    stdin.flush().expect("flush");
    let mut first = String::new();
    stdout.read_line(&mut first).expect("a reply line");
    let v: Value = serde_json::from_str(&first).expect("JSON");
    assert!(v.get("event").is_some(), "{first}");
    // The client stops reading replies but keeps stdin open: the process must cancel the duel
    // and exit by itself, not die of SIGPIPE.
    drop(stdout);
    let status = wait_exit(&mut child, Duration::from_secs(30));
    assert_eq!(status.signal(), None, "killed by a signal: {status}");
    assert_eq!(status.code(), Some(1), "{status}");
    drop(stdin);
}

#[test]
fn http_keeps_serving_with_its_stderr_closed() {
    let mut child = showdown()
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("showdown starts");
    // Closed before the server says where it serves the UI from (its first stderr line); its
    // compute process inherits the closed pipe.
    drop(child.stderr.take());
    let lines = lines_of(&mut child);
    let first = lines
        .recv_timeout(LONG)
        .expect("the server prints its address");
    let base = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first stdout line: {first}"))
        .to_string();
    let s = Server { child, base };
    let (status, body) = s.post("/api/call", r#"{"op":"doctor"}"#, None);
    assert_eq!(status, 200, "{body}");
    let duel = json!({"op": "duel", "config": duel_config(Some(256), 1)}).to_string();
    let (status, body) = s.post("/api/call", &duel, None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(s.compute()["crashes"], 0);
}

#[cfg(unix)]
#[test]
fn http_static_files_do_not_follow_symlinks_out_of_the_ui_dir() {
    use std::os::unix::fs::symlink;
    let t = tempfile::tempdir().expect("tempdir");
    let ui = t.path().join("ui");
    let outside = t.path().join("outside");
    for d in [&ui, &outside, &ui.join("sub")] {
        std::fs::create_dir(d).expect("mkdir");
    }
    write(&ui.join("index.html"), "hello from the ui");
    write(&outside.join("secret.txt"), "TOP SECRET");
    write(&outside.join("index.html"), "TOP SECRET index");
    // Out of the folder: a file, a folder, a folder's index.html, and through a link in the path.
    symlink(outside.join("secret.txt"), ui.join("leak.txt")).expect("symlink");
    symlink(&outside, ui.join("out")).expect("symlink");
    symlink(outside.join("index.html"), ui.join("sub/index.html")).expect("symlink");
    symlink("../outside/secret.txt", ui.join("relative.txt")).expect("symlink");
    // Inside the folder: served.
    symlink(ui.join("index.html"), ui.join("alias.html")).expect("symlink");
    symlink("index.html", ui.join("relative-alias.html")).expect("symlink");
    // A gzip copy (what a browser that accepts gzip is sent) linked out of the folder.
    write(&ui.join("page.html"), "a page");
    write(&outside.join("secret.html.gz"), "TOP SECRET gz");
    symlink(outside.join("secret.html.gz"), ui.join("page.html.gz")).expect("symlink");
    let ui_arg = ui.display().to_string();
    let s = Server::start(&["--ui-dir", &ui_arg]);

    for path in ["/", "/alias.html", "/relative-alias.html"] {
        let (status, reply) = s.get(path);
        assert_eq!(status, 200, "{path}: {reply}");
        assert!(reply.contains("hello from the ui"), "{path}: {reply}");
    }
    for path in [
        "/leak.txt",
        "/%6ceak.txt",
        "/relative.txt",
        "/out",
        "/out/",
        "/out/index.html",
        "/out/secret.txt",
        "/out/%73ecret.txt",
        "/sub/",
        "/sub/index.html",
        "/./leak.txt",
    ] {
        let (status, reply) = s.get(path);
        assert_eq!(status, 404, "{path}: {reply}");
        assert!(!reply.contains("TOP SECRET"), "{path} leaked: {reply}");
    }
    let (status, reply) = s.raw(&format!(
        "GET /page.html HTTP/1.1\r\nHost: {}\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n",
        s.addr()
    ));
    assert_eq!(status, 404, "{reply}");
    assert!(
        !reply.contains("TOP SECRET"),
        "the gzip copy leaked: {reply}"
    );
    // Path traversal is still refused.
    let (status, reply) = s.get("/../outside/secret.txt");
    assert!(status == 404 || status == 400, "{status}: {reply}");
    assert!(!reply.contains("TOP SECRET"), "{reply}");
}

// ---------------------------------------------------------------------------------------------
// Issue 18: full MNIST from the app

/// The four standard MNIST file names, served with the embedded sample's bytes (valid IDX
/// that the loader accepts as MNIST: 8,000 train / 2,000 test digits).
fn sample_as_mnist() -> Vec<(String, Vec<u8>)> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../compute/data");
    [
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ]
    .into_iter()
    .map(|name| {
        let bytes = std::fs::read(data.join(format!("mnist10k-{name}"))).expect("the sample");
        (name.to_string(), bytes)
    })
    .collect()
}

/// A loopback mirror serving `files` at `/NAME` (404 otherwise), for as long as the test
/// runs; the paths it was asked for go to the returned receiver.
fn loopback_mirror(files: Vec<(String, Vec<u8>)>) -> (String, Receiver<String>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/", l.local_addr().expect("address"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let Ok(read) = s.try_clone() else { continue };
            let mut r = BufReader::new(read);
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            let mut h = String::new();
            while r.read_line(&mut h).map(|n| n > 2).unwrap_or(false) {
                h.clear();
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            let _ = tx.send(path.clone());
            match files.iter().find(|(n, _)| path == format!("/{n}")) {
                Some((_, b)) => {
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        b.len()
                    );
                    let _ = s.write_all(b);
                }
                None => {
                    let _ = s.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                }
            }
        }
    });
    (base, rx)
}

/// Issue 18: "Get full MNIST" runs the `data_fetch` job over `POST /api/job` against the
/// mirror the server's environment names (with the test hook's manifest), with progress
/// events; the data set is then available to a duel in the same session, and the CLI — reading
/// its own default data folder — sees what the desktop app's folder got.
#[test]
fn http_data_fetch_job_makes_mnist_available_to_a_duel() {
    let files = sample_as_mnist();
    let t = tempfile::tempdir().expect("tempdir");
    let manifest = t.path().join("manifest.json");
    let listed: Vec<Value> = files
        .iter()
        .map(|(name, b)| json!({"name": name, "sha256": compute::data::fetch::sha256_hex(b)}))
        .collect();
    std::fs::write(&manifest, Value::from(listed).to_string()).expect("manifest");
    let (mirror, asked) = loopback_mirror(files.clone());
    // The user data folder is the test's own; the server's data home is the desktop app's
    // folder in it, as the desktop shell sets it.
    let xdg = t.path().join("share");
    let app_home = xdg.join("dev.precision-showdown.app");
    let mut command = showdown();
    command
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("SHOWDOWN_DATA_HOME", &app_home)
        .env("XDG_DATA_HOME", &xdg)
        .env("SHOWDOWN_MNIST_MIRRORS", &mirror)
        .env("SHOWDOWN_MNIST_MANIFEST", &manifest);
    let s = Server::start_with(command);
    let mnist_of = |s: &Server| -> Value {
        let (status, body) = s.post("/api/call", r#"{"op":"list_datasets"}"#, None);
        assert_eq!(status, 200, "{body}");
        let list: Value = serde_json::from_str(&body).expect("JSON");
        list.as_array()
            .and_then(|l| l.iter().find(|d| d["name"] == "mnist"))
            .cloned()
            .unwrap_or_else(|| panic!("no mnist in {body}"))
    };
    let mut duel = duel_config(Some(256), 1);
    duel["dataset"] = json!("mnist");
    duel["precisions"] = json!(["fp32"]);
    let duel = json!({"op": "duel", "config": duel}).to_string();

    // Before: not available, and a duel on it is refused saying where it was looked for.
    let before = mnist_of(&s);
    assert_eq!(before["available"], false, "{before}");
    assert!(before.get("location").is_none(), "{before}");
    let (status, body) = s.post("/api/call", &duel, None);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Get full MNIST"), "{body}");
    // A request cannot name a mirror.
    let (status, body) = s.post(
        "/api/job",
        &json!({"op": "data_fetch", "dataset": "mnist", "mirror": "http://example.com/"})
            .to_string(),
        None,
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("mirror"), "{body}");

    let (status, body) = s.post("/api/job", r#"{"op":"data_fetch","dataset":"mnist"}"#, None);
    assert_eq!(status, 200, "{body}");
    let replies = sse_replies(&body);
    let (last, events) = replies.split_last().expect("some replies");
    let fetched = &last["ok"];
    assert!(fetched.is_object(), "{last}");
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| {
            assert_eq!(e["event"]["stream"], "data_fetch", "{e}");
            e["event"]["event"]["type"].as_str().unwrap_or("?")
        })
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "started").count(),
        4,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "done").count(),
        4,
        "{kinds:?}"
    );
    assert!(kinds.contains(&"bytes"), "{kinds:?}");
    let first_bytes = events
        .iter()
        .find(|e| e["event"]["event"]["type"] == "bytes")
        .expect("a bytes event");
    assert_eq!(
        first_bytes["event"]["event"]["total"],
        files[0].1.len(),
        "{first_bytes}"
    );
    let mnist_dir = app_home.join("mnist");
    assert_eq!(fetched["dataset"]["available"], true, "{fetched}");
    assert_eq!(
        fetched["dataset"]["location"],
        mnist_dir.display().to_string(),
        "{fetched}"
    );
    let got = fetched["files"].as_array().expect("files");
    assert_eq!(got.len(), 4, "{fetched}");
    for (f, (name, bytes)) in got.iter().zip(&files) {
        assert_eq!(f["name"], name.as_str());
        assert_eq!(f["bytes"], bytes.len());
        assert_eq!(f["from"], mirror.as_str());
        assert_eq!(
            std::fs::read(mnist_dir.join(name)).expect("the file"),
            *bytes
        );
    }
    let paths: Vec<String> = asked.try_iter().collect();
    assert_eq!(paths.len(), 4, "only the manifest's files: {paths:?}");
    assert!(std::fs::read_dir(&mnist_dir)
        .expect("the folder")
        .all(|e| !e
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .ends_with(".part")));

    // Same session: listed as available and a duel on it runs.
    assert_eq!(mnist_of(&s)["available"], true);
    let (status, body) = s.post("/api/call", &duel, None);
    assert_eq!(status, 200, "{body}");
    let report: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(report["dataset"]["name"], "mnist", "{body}");
    assert_eq!(report["dataset"]["train"], 256, "{body}");
    assert_eq!(report["runs"].as_array().map(Vec::len), Some(1), "{body}");

    // A second fetch finds every file in place (verified, not downloaded again).
    let (status, body) = s.post("/api/job", r#"{"op":"data_fetch","dataset":"mnist"}"#, None);
    assert_eq!(status, 200, "{body}");
    let again = sse_replies(&body);
    let files_again = again.last().expect("a reply")["ok"]["files"].clone();
    assert!(
        files_again
            .as_array()
            .is_some_and(|f| f.iter().all(|f| f["from"] == "cached")),
        "{files_again}"
    );
    assert_eq!(asked.try_iter().count(), 0);

    // The CLI, with no SHOWDOWN_DATA_HOME (its own default folder), finds the app's download.
    let out = Command::new(env!("CARGO_BIN_EXE_showdown"))
        .args(["data", "list", "--json"])
        .env_remove("SHOWDOWN_DATA_HOME")
        .env("XDG_DATA_HOME", &xdg)
        .output()
        .expect("showdown data list");
    assert!(out.status.success(), "{out:?}");
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let cli_mnist = list
        .as_array()
        .and_then(|l| l.iter().find(|d| d["name"] == "mnist"))
        .expect("mnist listed");
    assert_eq!(cli_mnist["available"], true, "{cli_mnist}");
    assert_eq!(
        cli_mnist["location"],
        mnist_dir.display().to_string(),
        "{cli_mnist}"
    );
}
