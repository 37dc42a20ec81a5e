//! Strict requests at the doors (issue 30): a config must be an object, a number out of its
//! type's range names its field, a repeated precision is refused, and every parse error is a
//! JSON `{code, message}` naming the field by its path, with no internal line number and no
//! Rust debug text. `showdown serve --stdio` and `--http`, as real processes on loopback.
//!
//! Tests marked "needs the doors wired" pass once `cli/src/serve/{stdio,http}.rs` parse
//! through `showdown_core::protocol::{parse_envelope, parse_request}` (the one parser that
//! names paths); the others pass on the request types' own rules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails by panicking

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

const LONG: Duration = Duration::from_secs(30);

fn showdown() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_showdown"));
    c.env(
        "SHOWDOWN_DATA_HOME",
        std::env::temp_dir().join("showdown-strict-requests-test-home"),
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

/// A message for a person: no internal line number, no Rust debug text.
fn assert_clean(message: &str) {
    for bad in [
        "line 1:", "line 2:", "line 3:", "Some(", "None", "Error {", "\\\"",
    ] {
        assert!(!message.contains(bad), "{bad:?} in: {message}");
    }
}

struct Sidecar {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Sidecar {
    fn start() -> Sidecar {
        let mut child = showdown()
            .args(["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("showdown starts");
        let stdin = child.stdin.take().expect("stdin is piped");
        let lines = lines_of(&mut child);
        Sidecar {
            child,
            stdin,
            lines,
        }
    }

    fn send_raw(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to the sidecar");
        self.stdin.flush().expect("flush");
    }

    /// The first reply about `id` (an event counts: a refused request has none).
    fn first_reply(&self, id: u64) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(LONG)
                .unwrap_or_else(|e| panic!("no reply within {LONG:?}: {e}"));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            if v["id"] == id {
                return v;
            }
        }
    }

    /// Sends `request` as line `id` and returns the error of its first reply, checking that
    /// it is a `bad_input` error and nothing ran (no event came first).
    fn refused(&mut self, id: u64, request: &str) -> String {
        self.send_raw(&format!(r#"{{"id":{id},"request":{request}}}"#));
        let v = self.first_reply(id);
        assert!(v.get("event").is_none(), "{request} started a job: {v}");
        assert_eq!(v["error"]["code"], "bad_input", "{request}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or("").to_string();
        assert_clean(&message);
        message
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Regression (issue 30): `"lr": 1e300` was answered `line 16: not a request envelope …:
/// invalid type: null, expected f32`. Needs the doors wired (the path `request.config.lr`).
#[test]
fn stdio_lr_1e300_is_refused_naming_config_lr() {
    let mut s = Sidecar::start();
    let m = s.refused(1, r#"{"op":"duel","config":{"backend":"cpu","lr":1e300}}"#);
    assert!(
        m.starts_with("request.config.lr: must be a positive finite number"),
        "{m}"
    );
    let m = s.refused(2, r#"{"op":"duel","config":{"lr":-1}}"#);
    assert!(m.starts_with("request.config.lr: "), "{m}");
    // The sidecar carries on.
    s.send_raw(r#"{"id":3,"request":{"op":"list_datasets"}}"#);
    assert!(s.first_reply(3)["ok"].is_array());
}

/// Regression (issue 30): `{"op":"duel","config":[]}` ran and saved a duel with every
/// default. Needs the doors wired (before it, the duel starts: the test fails at once).
#[test]
fn stdio_duel_config_array_is_refused() {
    let mut s = Sidecar::start();
    let m = s.refused(1, r#"{"op":"duel","config":[]}"#);
    assert_eq!(
        m,
        "request.config: must be a JSON object {...}, not an array"
    );
    let m = s.refused(
        2,
        r#"{"op":"occupancy","cc":"9.0","input":[256,64,0,null]}"#,
    );
    assert!(m.starts_with("request.input: must be a JSON object"), "{m}");
    let m = s.refused(3, r#"["duel",{}]"#);
    assert!(m.starts_with("request: must be a JSON object"), "{m}");
}

/// Regression (issue 30): `"precisions": ["fp32","fp16","fp32"]` trained FP32 twice and
/// saved it twice. Refused by the types on any door; the field's path needs the doors wired.
#[test]
fn stdio_duplicate_precisions_are_refused_naming_field_and_value() {
    let mut s = Sidecar::start();
    let m = s.refused(
        1,
        r#"{"op":"duel","config":{"backend":"cpu","precisions":["fp32","fp16","fp32"]}}"#,
    );
    assert_eq!(
        m,
        "request.config.precisions: 'fp32' is listed twice; name each once"
    );
    let m = s.refused(
        2,
        r#"{"op":"step_anatomy","backend":"cpu","precisions":["fp16","fp16"]}"#,
    );
    assert_eq!(
        m,
        "request.precisions: 'fp16' is listed twice; name each once"
    );
}

/// Issue 39: the crossover's bad input (a repeated size, a size out of range, no precision)
/// is refused on the stdio door naming the field, before the job starts.
#[test]
fn stdio_crossover_bad_input_is_refused_naming_the_field() {
    let mut s = Sidecar::start();
    let m = s.refused(
        1,
        r#"{"op":"crossover","backend":"cpu","sizes":[64,128,64]}"#,
    );
    assert_eq!(m, "request.sizes: '64' is listed twice; name each once");
    let m = s.refused(2, r#"{"op":"crossover","sizes":[8,64]}"#);
    assert_eq!(
        m,
        "request.sizes: 8 is out of range: each size must be 16 to 16384"
    );
    let m = s.refused(3, r#"{"op":"crossover","precisions":[]}"#);
    assert!(
        m.starts_with("request.precisions: name at least one precision"),
        "{m}"
    );
    // The CPU's own ceiling comes from the job's validation.
    let m = s.refused(4, r#"{"op":"crossover","backend":"cpu","sizes":[8192]}"#);
    assert_eq!(
        m,
        "invalid sizes '8192': 8192 is out of range: each size must be 16 to 4096 on the CPU"
    );
}

/// Regression (issue 30): `infer_bench` with `train_limit: 0` said `'Some(0)'`. Passes on
/// the job's own validation (no wiring needed).
#[test]
fn stdio_infer_train_limit_0_names_the_field_without_debug_text() {
    let mut s = Sidecar::start();
    let m = s.refused(1, r#"{"op":"infer_bench","train_limit":0}"#);
    assert_eq!(
        m,
        "invalid train_limit '0': must be at least 1 (or null for the whole training split)"
    );
}

/// Every parse error on the stdio door names its field by its path, without the door's line
/// count. Needs the doors wired.
#[test]
fn stdio_parse_errors_name_the_field_by_its_path() {
    let mut s = Sidecar::start();
    let cases = [
        (
            r#"{"op":"duel","config":{"epochs":"two"}}"#,
            "request.config.epochs: invalid type: string",
        ),
        (
            r#"{"op":"duel","config":{"train_limt":5}}"#,
            "request.config.train_limt: unknown field `train_limt`",
        ),
        (
            r#"{"op":"make_coffee"}"#,
            "request.op: unknown operation `make_coffee`",
        ),
        (
            r#"{"op":"profile","what":["step","fp16",8]}"#,
            "request.what: must be a JSON object",
        ),
    ];
    for (i, (request, want)) in cases.into_iter().enumerate() {
        let m = s.refused(i as u64 + 1, request);
        assert!(m.starts_with(want), "{request}: {m}");
    }
    // An unreadable line is answered as id 0, saying why.
    s.send_raw("this is not json");
    let v = s.first_reply(0);
    let m = v["error"]["message"].as_str().unwrap_or("");
    assert!(m.contains("not JSON"), "{v}");
}

// ---------------------------------------------------------------------------------------------
// HTTP

struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start() -> Server {
        let mut child = showdown()
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
        assert!(base.starts_with("http://127.0.0.1:"), "{base}");
        Server { child, base }
    }

    fn post(&self, path: &str, body: &str) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(LONG))
            .build()
            .into();
        let mut resp = agent
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/json")
            .send(body)
            .expect("the request completes");
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().expect("a text body");
        (status, text)
    }

    /// `body` posted to `/api/call` and `/api/job`: both answer 400 with the same JSON
    /// `bad_input` error; returns its message.
    fn refused(&self, body: &str) -> String {
        let mut messages = Vec::new();
        for path in ["/api/call", "/api/job"] {
            let (status, reply) = self.post(path, body);
            let clipped: String = reply.chars().take(300).collect();
            assert_eq!(status, 400, "{path} {body}: {clipped}");
            let v: Value = serde_json::from_str(&reply)
                .unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {reply}"));
            assert_eq!(v["code"], "bad_input", "{path}: {v}");
            let m = v["message"].as_str().unwrap_or("").to_string();
            assert_clean(&m);
            messages.push(m);
        }
        assert_eq!(messages[0], messages[1], "the two doors disagree");
        messages.remove(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Regression (issue 30): over HTTP, `"lr": 1e300` became an `f32` infinity, was passed on as
/// `null`, and the compute process answered `line 16: not a request envelope …: invalid
/// type: null, expected f32`. Needs the doors wired (the path `config.lr`).
#[test]
fn http_lr_1e300_is_refused_naming_config_lr() {
    let s = Server::start();
    let m = s.refused(r#"{"op":"duel","config":{"backend":"cpu","lr":1e300}}"#);
    assert_eq!(
        m,
        "config.lr: must be a positive finite number: 1e300 is beyond the range of a 32-bit \
         float (±3.4e38)"
    );
    let m = s.refused(r#"{"op":"duel","config":{"dropout":1e39}}"#);
    assert!(
        m.starts_with("config.dropout: must be a finite number"),
        "{m}"
    );
    let m = s.refused(r#"{"op":"infer_bench","budget_ms":0}"#);
    assert!(
        m.starts_with("budget_ms: must be a positive finite number"),
        "{m}"
    );
}

/// Regression (issue 30): `{"op":"duel","config":[]}` ran a duel with every default; over
/// HTTP too every struct must be an object. Needs the doors wired.
#[test]
fn http_duel_config_array_is_refused_and_nothing_runs() {
    let s = Server::start();
    let m = s.refused(r#"{"op":"duel","config":[]}"#);
    assert_eq!(m, "config: must be a JSON object {...}, not an array");
    let m = s.refused(r#"{"op":"explain","digit":["dataset","mnist-sample",0]}"#);
    assert!(m.starts_with("digit: must be a JSON object"), "{m}");
    let m = s.refused(r#"{"op":"duel","config":{"precisions":["fp32","fp16","fp32"]}}"#);
    assert_eq!(
        m,
        "config.precisions: 'fp32' is listed twice; name each once"
    );
    // Nothing was started.
    let (status, body) = s.post("/api/call", r#"{"op":"cancel"}"#);
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(v["cancelled"], json!(false), "{v}");
}
