//! Issue 38's bounds measured from outside: the memory of the server and its compute process
//! while three `ncu_panels` calls page through a 60,000-kernel import (and what the server
//! keeps afterwards), and the interpreters each door lets a client choose (`peer_pythons`).
//! Loopback only; each figure read from `/proc` (Linux).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails by panicking

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const LONG: Duration = Duration::from_secs(120);

fn showdown(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_showdown"));
    c.env("SHOWDOWN_DATA_HOME", home)
        .env_remove("SHOWDOWN_PYTHON");
    c
}

/// `showdown serve --http 127.0.0.1:0 …`, stopped when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(mut command: Command) -> Server {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("showdown starts");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .expect("the server prints its address");
        let addr = first
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("first stdout line: {first}"))
            .parse()
            .unwrap();
        Server { child, addr }
    }

    /// `method path` with `body` on a connection of its own: (status, body).
    fn exchange(&self, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        exchange(self.addr, method, path, body)
    }

    /// `POST /api/call` with `body`: (status, the reply's JSON).
    fn call(&self, body: &Value) -> (u16, Value) {
        let (status, reply) = self.exchange("POST", "/api/call", body.to_string().as_bytes());
        let v = serde_json::from_slice(&reply).unwrap_or_else(|e| {
            panic!(
                "{e}: {}",
                String::from_utf8_lossy(&reply[..reply.len().min(300)])
            )
        });
        (status, v)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 exchange with the server at `addr`: (status, body).
fn exchange(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(LONG)).unwrap();
    s.set_write_timeout(Some(LONG)).unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    s.write_all(&request).expect("send");
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    let split = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP reply: {}", String::from_utf8_lossy(&reply)));
    let head = String::from_utf8_lossy(&reply[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status: {head}"));
    let mut body = reply[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = unchunk(&body);
    }
    (status, body)
}

/// A chunked body's bytes.
fn unchunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&rest[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
        rest = &rest[eol + 2 + size + 2..];
    }
}

/// A figure of `/proc/PID/status` (`VmRSS`, `VmHWM`), in KiB.
fn vm_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// Starts `pid`'s peak resident set (`VmHWM`) again from its resident set now.
fn reset_peak(pid: u32) {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("clear_refs");
}

/// One CSV line's fields (quoted fields hold commas; `""` is a quote).
fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// The metrics the 60,000-kernel import keeps (as `bench/make_big_ncu_raw.py --narrow`).
const PANEL_METRICS: [&str; 14] = [
    "gpu__time_duration.sum",
    "launch__block_size",
    "launch__grid_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__waves_per_multiprocessor",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_warps",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
];

/// A raw-page export of `kernels` kernels: the real export `ours_raw.csv`'s rows repeated
/// under fresh IDs, with its identity columns and the key metrics of the panels (about
/// 18 MiB for 60,000, as `bench/make_big_ncu_raw.py /tmp/raw60k.csv --kernels 60000 --narrow`).
fn big_raw_export(kernels: usize) -> String {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../compute/core/tests/data/ncu/ours_raw.csv");
    let text = std::fs::read_to_string(src).unwrap();
    let rows: Vec<Vec<String>> = text.lines().map(fields).collect();
    let keep: Vec<usize> = rows[0]
        .iter()
        .enumerate()
        .filter(|(i, name)| *i < 11 || PANEL_METRICS.contains(&name.as_str()))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(keep.len(), 11 + PANEL_METRICS.len(), "the columns kept");
    let line = |r: &[String], id: Option<usize>| {
        keep.iter()
            .map(|&c| match (c, id) {
                (0, Some(id)) => format!("\"{id}\""),
                _ => format!("\"{}\"", r[c].replace('"', "\"\"")),
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut out = String::new();
    for r in &rows[..2] {
        out.push_str(&line(r, None));
        out.push('\n');
    }
    let body = &rows[2..];
    for i in 0..kernels {
        out.push_str(&line(&body[i % body.len()], Some(i)));
        out.push('\n');
    }
    out
}

const MIB: u64 = 1024;

/// Issue 38, defect 3 ("Done when"): one `ncu_panels` call on a 60,000-kernel import (a
/// 20 MiB request) answered 109 MB; the compute process peaked at 911 MiB and the server at
/// 675 MiB, three at once at 2.7 GB and 1.0 GB, and the server kept about 600 MiB afterwards.
/// Now three concurrent calls, each for the largest page a reply carries, keep the compute
/// process under 512 MiB and the server under 256 MiB at their peaks, and the server gives
/// the memory of the replies back. The figures are printed (and written as JSON to
/// `$SHOWDOWN_BOUNDS_JSON` when set: docs/results/).
#[test]
fn http_three_concurrent_ncu_panels_on_a_60000_kernel_import_stay_under_512_and_256_mib() {
    let home = tempfile::tempdir().unwrap();
    let mut command = showdown(home.path());
    command.args(["serve", "--http", "127.0.0.1:0"]);
    let s = Server::start(command);
    let kernels = 60_000;
    let csv = big_raw_export(kernels);
    let import = json!({"op": "ncu_import", "file_name": "raw60k.csv", "text": csv}).to_string();
    drop(csv);
    let request_mib = import.len() as f64 / (1 << 20) as f64;
    let t0 = Instant::now();
    let (status, reply) = s.exchange("POST", "/api/call", import.as_bytes());
    drop(import);
    let import_s = t0.elapsed().as_secs_f64();
    let summary: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(status, 200, "{summary}");
    assert_eq!(summary["kernels"], kernels, "{summary}");
    let id = summary["id"].as_str().unwrap().to_string();

    let (status, compute) = s.exchange("GET", "/api/compute", b"");
    assert_eq!(status, 200);
    let compute: Value = serde_json::from_slice(&compute).unwrap();
    let compute_pid = compute["pid"].as_u64().expect("the compute process's pid") as u32;
    let server_pid = s.child.id();
    // Settled after the import: what each holds before the three calls.
    std::thread::sleep(Duration::from_millis(300));
    let server_before = vm_kib(server_pid, "VmRSS");
    let compute_before = vm_kib(compute_pid, "VmRSS");
    reset_peak(server_pid);
    reset_peak(compute_pid);

    // The resident sets sampled while the calls run (beside the kernel's own peak, VmHWM).
    let done = Arc::new(AtomicBool::new(false));
    let sampled = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let sampler = {
        let (done, sampled) = (Arc::clone(&done), Arc::clone(&sampled));
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                sampled[0].fetch_max(vm_kib(server_pid, "VmRSS"), Ordering::SeqCst);
                sampled[1].fetch_max(vm_kib(compute_pid, "VmRSS"), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let page = compute::protocol::MAX_PANELS_PAGE;
    let t0 = Instant::now();
    let calls: Vec<_> = (0..3)
        .map(|k| {
            let (addr, id) = (s.addr, id.clone());
            std::thread::spawn(move || {
                let body = json!({"op": "ncu_panels", "import": id, "offset": k * 20_000,
                    "limit": page});
                let (status, reply) =
                    exchange(addr, "POST", "/api/call", body.to_string().as_bytes());
                (status, reply)
            })
        })
        .collect();
    let mut reply_bytes = Vec::new();
    for (k, call) in calls.into_iter().enumerate() {
        let (status, reply) = call.join().unwrap();
        assert_eq!(
            status,
            200,
            "{}",
            String::from_utf8_lossy(&reply[..reply.len().min(300)])
        );
        let panels: Value = serde_json::from_slice(&reply).unwrap();
        let panels = panels.as_array().expect("a page of kernels");
        assert_eq!(panels.len(), page);
        assert_eq!(panels[0]["id"], k * 20_000, "the page starts at its offset");
        reply_bytes.push(reply.len());
    }
    let calls_s = t0.elapsed().as_secs_f64();
    done.store(true, Ordering::SeqCst);
    sampler.join().unwrap();
    let server_peak = vm_kib(server_pid, "VmHWM").max(sampled[0].load(Ordering::SeqCst));
    let compute_peak = vm_kib(compute_pid, "VmHWM").max(sampled[1].load(Ordering::SeqCst));

    // The whole import in one reply is refused before it is built.
    let (status, refused) = s.call(&json!({"op": "ncu_panels", "import": id}));
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("a page at a time"),
        "{refused}"
    );

    // Given back: the server's resident set returns near where it was before the replies.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut server_after = vm_kib(server_pid, "VmRSS");
    while server_after > server_before + 32 * MIB && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        server_after = vm_kib(server_pid, "VmRSS");
    }
    let compute_after = vm_kib(compute_pid, "VmRSS");
    let figures = json!({
        "test": "http_three_concurrent_ncu_panels_on_a_60000_kernel_import_stay_under_512_and_256_mib",
        "kernels": kernels,
        "import_request_mib": (request_mib * 10.0).round() / 10.0,
        "import_seconds": (import_s * 100.0).round() / 100.0,
        "calls": 3,
        "kernels_per_call": page,
        "reply_bytes": reply_bytes,
        "calls_seconds": (calls_s * 100.0).round() / 100.0,
        "server_kib": {"before": server_before, "peak": server_peak, "after": server_after},
        "compute_kib": {"before": compute_before, "peak": compute_peak, "after": compute_after},
        "bounds_kib": {"server": 256 * MIB, "compute": 512 * MIB},
    });
    eprintln!("{figures:#}");
    if let Some(path) = std::env::var_os("SHOWDOWN_BOUNDS_JSON") {
        std::fs::write(path, format!("{figures:#}\n")).unwrap();
    }
    assert!(
        compute_peak < 512 * MIB,
        "the compute process peaked at {compute_peak} KiB"
    );
    assert!(
        server_peak < 256 * MIB,
        "the server peaked at {server_peak} KiB"
    );
    assert!(
        server_after <= server_before + 32 * MIB,
        "the server kept {server_after} KiB after the replies ({server_before} KiB before)"
    );
}

/// A fake interpreter named `name` in `dir`.
fn fake_python(dir: &Path, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(
        &path,
        "#!/bin/sh\necho '{\"torch\": null, \"cuda\": false, \"device\": null}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Issue 38, defect 5 ("the UI lists those"): over HTTP `peer_set_python` accepts only the
/// interpreters the server found, and `peer_pythons` lists exactly those, with where each
/// was found, saying no other path is taken (`any_path: false`); the stdio door (the CLI's,
/// the desktop app's) lists what it found and takes any path.
#[test]
fn http_peer_pythons_lists_the_interpreters_the_server_accepts_and_no_other_path() {
    let bin = tempfile::tempdir().unwrap();
    let flagged = fake_python(bin.path(), "flagged-python");
    let other = fake_python(bin.path(), "other-python");
    let home = tempfile::tempdir().unwrap();
    let mut command = showdown(home.path());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--python"])
        .arg(&flagged);
    let s = Server::start(command);

    for door in ["/api/call", "/api/job"] {
        let (status, reply) = s.exchange("POST", door, br#"{"op":"peer_pythons"}"#);
        assert_eq!(status, 200, "{door}");
        let text = String::from_utf8_lossy(&reply).into_owned();
        let listed: Value = if door == "/api/call" {
            serde_json::from_str(&text).unwrap()
        } else {
            let data = text
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .unwrap_or_else(|| panic!("no event: {text}"));
            serde_json::from_str::<Value>(data.trim()).unwrap()["ok"].clone()
        };
        assert_eq!(listed["any_path"], false, "{door}: {listed}");
        let pythons = listed["pythons"].as_array().unwrap();
        assert!(
            pythons.contains(&json!({"python": flagged.display().to_string(),
                "source": "--python"})),
            "{door}: {listed}"
        );
        assert!(
            !listed.to_string().contains("other-python"),
            "{door}: {listed}"
        );
        // Every one listed is accepted; a path not listed is refused.
        for p in pythons {
            let (status, set) = s.call(&json!({"op": "peer_set_python", "python": p["python"]}));
            assert_eq!(status, 200, "{p}: {set}");
        }
    }
    let (status, refused) =
        s.call(&json!({"op": "peer_set_python", "python": other.display().to_string()}));
    assert_eq!(status, 403, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("is not one of the interpreters this server found"),
        "{refused}"
    );

    // The stdio door (the CLI's and the desktop app's compute process) takes any path, and
    // lists the interpreter chosen there.
    let mut stdio = showdown(home.path())
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = stdio.stdin.take().unwrap();
    let mut lines = BufReader::new(stdio.stdout.take().unwrap()).lines();
    let mut ask = |id: u64, request: Value| -> Value {
        writeln!(stdin, "{}", json!({"id": id, "request": request})).unwrap();
        stdin.flush().unwrap();
        loop {
            let v: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            if v["id"] == id && v.get("event").is_none() {
                return v;
            }
        }
    };
    let set = ask(
        1,
        json!({"op": "peer_set_python", "python": other.display().to_string()}),
    );
    assert!(set.get("ok").is_some(), "{set}");
    let listed = ask(2, json!({"op": "peer_pythons"}));
    assert_eq!(listed["ok"]["any_path"], true, "{listed}");
    assert!(
        listed["ok"]["pythons"]
            .as_array()
            .unwrap()
            .contains(&json!({"python": other.display().to_string(), "source": "setting"})),
        "{listed}"
    );
    drop(stdin);
    let _ = stdio.kill();
    let _ = stdio.wait();
}
