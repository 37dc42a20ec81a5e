//! `showdown serve --http` as a person runs it (issue 26): the web UI's files sent
//! gzip-compressed to a browser that accepts it, and Ctrl-C stopping the server in one line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails by panicking

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(30);

/// `showdown serve --http 127.0.0.1:0 --ui-dir ui`, its stdout and stderr piped; the child,
/// its address and its stderr lines as they come.
fn serve(ui: &Path, home: &Path) -> (Child, String, Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_showdown"))
        .args(["serve", "--http", "127.0.0.1:0", "--ui-dir"])
        .arg(ui)
        .env("SHOWDOWN_DATA_HOME", home)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("showdown starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout is piped"))
        .read_line(&mut first)
        .expect("a first line");
    let addr = first
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("not the listening line: {first:?}"))
        .to_string();
    let err = child.stderr.take().expect("stderr is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, addr, rx)
}

/// A GET of `path` with `headers`: the response head (lower-cased) and body.
fn get(addr: &str, path: &str, headers: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(LONG)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).expect("a response");
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&all[..split]).to_ascii_lowercase();
    (head, all[split + 4..].to_vec())
}

/// A UI folder with a page and a "WASM" file, and that file's gzip copy beside it, as the UI
/// build writes them (the server sends the copy as it is: its bytes stand for the gzip here);
/// the file's bytes and the copy's.
fn ui_folder(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let wasm: Vec<u8> = (0..20_000u32).flat_map(|i| (i % 7).to_le_bytes()).collect();
    let gz = b"\x1f\x8b stands for the gzip copy".to_vec();
    std::fs::write(dir.join("index.html"), "<!doctype html><title>t</title>").unwrap();
    std::fs::write(dir.join("app_ui_bg.wasm"), &wasm).unwrap();
    std::fs::write(dir.join("app_ui_bg.wasm.gz"), &gz).unwrap();
    (wasm, gz)
}

/// Issue 26: the front end (2.6 MB) was sent uncompressed. A browser that accepts gzip gets
/// the file's gzip copy with `Content-Encoding: gzip`; one that does not gets the file itself;
/// both responses say `Vary: Accept-Encoding`.
#[test]
fn http_static_files_are_sent_gzip_to_a_browser_that_accepts_it() {
    let t = tempfile::tempdir().unwrap();
    let ui = t.path().join("ui");
    std::fs::create_dir_all(&ui).unwrap();
    let (wasm, gz) = ui_folder(&ui);
    let (mut child, addr, _err) = serve(&ui, &t.path().join("home"));

    let (head, body) = get(&addr, "/app_ui_bg.wasm", "Accept-Encoding: gzip, br\r\n");
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-encoding: gzip"), "{head}");
    assert!(head.contains("vary: accept-encoding"), "{head}");
    assert!(head.contains("content-type: application/wasm"), "{head}");
    assert_eq!(body, gz);

    let (head, body) = get(&addr, "/app_ui_bg.wasm", "");
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains("content-encoding"), "{head}");
    assert!(head.contains("vary: accept-encoding"), "{head}");
    assert_eq!(body, wasm);

    let _ = child.kill();
    let _ = child.wait();
}

/// Issue 26: Ctrl-C printed an error and a 20-frame backtrace. SIGINT stops the server with
/// exit code 130 and one line, even with RUST_BACKTRACE set.
#[test]
fn http_ctrl_c_stops_the_server_in_one_line() {
    let t = tempfile::tempdir().unwrap();
    let ui = t.path().join("ui");
    std::fs::create_dir_all(&ui).unwrap();
    ui_folder(&ui);
    let (mut child, addr, err) = serve(&ui, &t.path().join("home"));
    // It answers before it is stopped.
    let (head, _) = get(&addr, "/", "");
    assert!(head.starts_with("http/1.1 200"), "{head}");
    // What it said at start-up (where it serves from) is not part of the stop.
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(300) {
        if err.recv_timeout(Duration::from_millis(50)).is_err() {
            continue;
        }
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let deadline = Instant::now() + LONG;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not stop within {LONG:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut said = Vec::new();
    while let Ok(line) = err.recv_timeout(Duration::from_secs(2)) {
        said.push(line);
    }
    assert_eq!(status.code(), Some(130), "{status}; stderr: {said:?}");
    assert_eq!(said, ["showdown serve: stopped (Ctrl-C)"], "{said:?}");
}
