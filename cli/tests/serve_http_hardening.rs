//! Issue 30, the HTTP door's share: a server that answers while its compute process is busy,
//! slow clients that cannot hold every slot, a reply at the 32 MiB edge, bounded body memory,
//! and the door's own refusals (duplicate `Host`/`Origin`, over-long file names). Each test is
//! named after the defect it pins; loopback only, bounded times.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails by panicking

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::Value;

const LONG: Duration = Duration::from_secs(60);

/// The largest body the HTTP door accepts (`compute::protocol::MAX_REQUEST_BYTES`).
const MAX_BODY: usize = 32 << 20;

fn showdown(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_showdown"));
    c.env("SHOWDOWN_DATA_HOME", home);
    c
}

/// `showdown serve --http 127.0.0.1:0 extra…` with at most `files` open files (soft and hard),
/// its data in `home`.
fn limited(home: &Path, files: usize, extra: &[&str]) -> Command {
    let mut c = Command::new("sh");
    c.env("SHOWDOWN_DATA_HOME", home)
        .arg("-c")
        .arg(format!(
            "ulimit -n {files} && exec \"$0\" serve --http 127.0.0.1:0 \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_showdown"))
        .args(extra);
    c
}

/// Raises this process's soft limit on open files to its hard limit; returns the limit.
fn raise_own_file_limit() -> libc::rlim_t {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read or write the struct given, which outlives them.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        }
    }
    limit.rlim_cur
}

struct Server {
    child: Child,
    addr: SocketAddr,
    _home: Option<tempfile::TempDir>,
}

impl Server {
    /// `showdown serve --http 127.0.0.1:0 extra…` with a data folder of its own.
    fn start(extra: &[&str]) -> Server {
        let home = tempfile::tempdir().unwrap();
        let mut c = showdown(home.path());
        c.args(["serve", "--http", "127.0.0.1:0"]).args(extra);
        Server::start_with(c, Some(home))
    }

    /// Starts `command`, which must run `showdown serve --http 127.0.0.1:0 …`.
    fn start_with(mut command: Command, home: Option<tempfile::TempDir>) -> Server {
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
        Server {
            child,
            addr,
            _home: home,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `request` (a whole HTTP/1.1 request) on a new connection and reads the reply to
    /// its end: (status, whole reply as text, time taken).
    fn exchange(&self, request: &[u8], within: Duration) -> (u16, String, Duration) {
        let started = Instant::now();
        let mut s = TcpStream::connect_timeout(&self.addr, within).expect("connect");
        s.set_read_timeout(Some(within)).unwrap();
        s.set_write_timeout(Some(within)).unwrap();
        s.write_all(request).expect("send");
        let mut reply = Vec::new();
        let read = s.read_to_end(&mut reply);
        let took = started.elapsed();
        let reply = String::from_utf8_lossy(&reply).into_owned();
        let status = reply
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no HTTP reply after {took:?} ({read:?}): {reply:.300}"));
        (status, reply, took)
    }

    fn get(&self, path: &str) -> (u16, String, Duration) {
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        self.exchange(head.as_bytes(), LONG)
    }

    /// `POST path` with a JSON `body`.
    fn post(&self, path: &str, body: &[u8], within: Duration) -> (u16, String, Duration) {
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.addr,
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        self.exchange(&request, within)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of a whole HTTP reply (not chunked).
fn body_of(reply: &str) -> &str {
    reply.split_once("\r\n\r\n").map_or("", |(_, body)| body)
}

/// A whole reply's `{code, message}` body, checking that it is served as JSON.
fn api_error_of(reply: &str) -> Value {
    let head = reply
        .split_once("\r\n\r\n")
        .map_or(reply, |(head, _)| head)
        .to_ascii_lowercase();
    assert!(
        head.contains("\r\ncontent-type: application/json"),
        "not served as JSON: {reply:.300}"
    );
    let v: Value =
        serde_json::from_str(body_of(reply)).unwrap_or_else(|e| panic!("{e}: {reply:.300}"));
    assert!(v["code"].is_string(), "{reply:.300}");
    assert!(v["message"].is_string(), "{reply:.300}");
    v
}

/// A valid request of exactly `total` bytes whose size is one large string: an ncu CSV
/// import of `a`s (the compute process reads it whole, then refuses it as no ncu export).
fn big_import(total: usize) -> Vec<u8> {
    let head = br#"{"op":"ncu_import","file_name":"x.csv","text":""#;
    let tail = br#""}"#;
    let mut body = Vec::with_capacity(total);
    body.extend_from_slice(head);
    body.resize(total - tail.len(), b'a');
    body.extend_from_slice(tail);
    assert_eq!(body.len(), total);
    body
}

/// A resident-set figure of `/proc/PID/status` (`VmRSS`, `VmHWM`), in KiB.
fn vm_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// Posts `body` to `/api/call` from `n` threads at once; the receiver gets each (status,
/// reply) as it comes.
fn post_concurrently(s: &Server, body: &Arc<Vec<u8>>, n: usize) -> mpsc::Receiver<(u16, String)> {
    let (tx, rx) = mpsc::channel();
    for _ in 0..n {
        let (tx, body, addr) = (tx.clone(), Arc::clone(body), s.addr);
        std::thread::spawn(move || {
            let mut request = format!(
                "POST /api/call HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            request.extend_from_slice(&body);
            let mut c = TcpStream::connect(addr).unwrap();
            c.set_read_timeout(Some(LONG)).unwrap();
            c.set_write_timeout(Some(LONG)).unwrap();
            let sent = c.write_all(&request);
            let mut reply = Vec::new();
            let _ = c.read_to_end(&mut reply);
            let reply = String::from_utf8_lossy(&reply).into_owned();
            let status = reply
                .split(' ')
                .nth(1)
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            let _ = tx.send((status, format!("{sent:?} {reply:.300}")));
        });
    }
    rx
}

// ---------------------------------------------------------------------------------------------
// Issue 30, item 1: one slow request froze the whole server.

#[test]
fn http_compute_status_and_static_files_answer_while_the_compute_process_is_busy() {
    let ui = tempfile::tempdir().unwrap();
    std::fs::write(ui.path().join("index.html"), "<h1>lab</h1>").unwrap();
    let s = Server::start(&["--ui-dir", ui.path().to_str().unwrap()]);
    // Starts the compute process.
    assert_eq!(s.post("/api/call", br#"{"op":"doctor"}"#, LONG).0, 200);
    // Twelve 30 MiB requests: the compute process reads and parses one at a time, so the
    // others' lines wait in a full pipe for seconds (the old server held the supervisor's lock
    // meanwhile, and `/api/compute` waited for it on the async runtime: three of them froze
    // the server).
    let bodies = 12;
    let body = Arc::new(big_import(30 << 20));
    let replies = post_concurrently(&s, &body, bodies);
    std::thread::sleep(Duration::from_millis(300));
    let mut slowest = (Duration::ZERO, String::new());
    let mut all_static = Vec::new();
    let mut all_compute = Vec::new();
    let mut rounds = 0;
    let mut answered = 0;
    let deadline = Instant::now() + Duration::from_secs(40);
    while answered < bodies && Instant::now() < deadline {
        // Three `/api/compute` at once (three froze the old server), and a static file.
        let probes: Vec<_> = (0..3)
            .map(|_| {
                let addr = s.addr;
                std::thread::spawn(move || {
                    let head = format!(
                        "GET /api/compute HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
                    );
                    let started = Instant::now();
                    let mut c = TcpStream::connect(addr).unwrap();
                    c.set_read_timeout(Some(LONG)).unwrap();
                    c.write_all(head.as_bytes()).unwrap();
                    let mut reply = String::new();
                    let _ = c.read_to_string(&mut reply);
                    (started.elapsed(), reply)
                })
            })
            .collect();
        let (status, reply, took) = s.get("/index.html");
        assert_eq!(status, 200, "{reply}");
        all_static.push(took.as_millis());
        if took > slowest.0 {
            slowest = (took, "GET /index.html".into());
        }
        for p in probes {
            let (took, reply) = p.join().unwrap();
            assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
            assert!(body_of(&reply).contains("\"running\":true"), "{reply}");
            all_compute.push(took.as_millis());
            if took > slowest.0 {
                slowest = (took, "GET /api/compute".into());
            }
        }
        rounds += 1;
        while let Ok((status, reply)) = replies.try_recv() {
            assert!(status == 400 || status == 200, "{status}: {reply}");
            answered += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    all_static.sort_unstable();
    all_compute.sort_unstable();
    eprintln!(
        "slowest probe: {} in {:?} ({rounds} rounds); ms: static {all_static:?}, compute \
         {all_compute:?}",
        slowest.1, slowest.0
    );
    assert_eq!(answered, bodies, "the large requests were not all answered");
    assert!(
        rounds >= 3,
        "the compute process was busy for {rounds} rounds only"
    );
    // The goal is under 100 ms, what a machine with cores to spare gives; the margin is for a
    // busy 2-core runner, where the bodies' copying and parsing (in the server and in the
    // compute process) share the cores with the probes (six busy loops beside an idle server
    // already delay a probe by ~50 ms there; 60-400 ms was seen with other builds running).
    // The old server froze for the seconds the compute process took to read the bodies.
    assert!(
        slowest.0 < Duration::from_secs(1),
        "{} took {:?} while the compute process was busy ({rounds} rounds)",
        slowest.1,
        slowest.0
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 30, item 5: slow clients starved the connection cap.

/// A client far below any useful rate: `head` then one byte a second, or its head itself one
/// byte a second; it connects again whenever the server drops it.
struct SlowClient {
    body: bool,
    stream: Option<TcpStream>,
    sent: usize,
}

impl SlowClient {
    /// Sends its next byte (after the whole head, for a slow body); false when the server
    /// had dropped it.
    fn tick(&mut self, head: &[u8]) -> bool {
        let Some(stream) = self.stream.as_mut() else {
            return false;
        };
        let mut probe = [0u8; 256];
        match stream.read(&mut probe) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            // An answer (408) or the end: dropped.
            _ => return false,
        }
        let next = if self.body {
            b"a"
        } else {
            &head[self.sent % head.len()..][..1]
        };
        self.sent += 1;
        stream.write_all(next).is_ok()
    }

    fn connect(&mut self, addr: SocketAddr, head: &[u8]) -> bool {
        self.stream = None;
        self.sent = 0;
        let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(100)) else {
            return false;
        };
        let first: &[u8] = if self.body { head } else { &head[..1] };
        if stream.write_all(first).is_err() || stream.set_nonblocking(true).is_err() {
            return false;
        }
        self.sent = 1;
        self.stream = Some(stream);
        true
    }
}

/// Runs `slow_bodies` slow-body and `slow_heads` slow-head clients against `addr` until `stop`;
/// answers how many connections they made.
fn slow_clients(
    addr: SocketAddr,
    slow_bodies: usize,
    slow_heads: usize,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let head = format!(
            "POST /api/call HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: 100000\r\n\r\n"
        )
        .into_bytes();
        let mut clients: Vec<SlowClient> = (0..slow_bodies + slow_heads)
            .map(|i| SlowClient {
                body: i < slow_bodies,
                stream: None,
                sent: 0,
            })
            .collect();
        let mut connections = 0;
        while !stop.load(Ordering::SeqCst) {
            let tick = Instant::now();
            for c in &mut clients {
                // At most half a second of connecting a tick (the old server left new
                // connections in its listen queue).
                if !c.tick(&head) && tick.elapsed() < Duration::from_millis(500) {
                    connections += usize::from(c.connect(addr, &head));
                }
            }
            let rest = Duration::from_secs(1).saturating_sub(tick.elapsed());
            let until = Instant::now() + rest;
            while Instant::now() < until && !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        connections
    })
}

#[test]
fn http_slow_clients_from_one_address_do_not_starve_a_doctor_call() {
    // 600 sockets here, and the server under a 1024-file limit (a common default): 512
    // connections at most, 128 for one address, so the slow clients outnumber both caps. With
    // a lower hard limit here, as many as it allows (the server's limit scaled down alike).
    let own = usize::try_from(raise_own_file_limit()).unwrap_or(usize::MAX);
    let each = 300.min(own.saturating_sub(100) / 2);
    let server_files = 1024.min(own);
    if each < 300 {
        eprintln!(
            "this process may open {own} files: {each} slow clients of each kind, the server \
             limited to {server_files} files"
        );
    }
    assert!(each >= 50, "too few open files ({own}) for this test");
    let home = tempfile::tempdir().unwrap();
    let s = Server::start_with(limited(home.path(), server_files, &[]), None);
    let stop = Arc::new(AtomicBool::new(false));
    let attack = slow_clients(s.addr, each, each, Arc::clone(&stop));
    let doctor = br#"{"op":"doctor"}"#;
    let mut took = Vec::new();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(1500));
        let (status, reply, t) = s.post("/api/call", doctor, Duration::from_secs(10));
        assert_eq!(status, 200, "{reply:.300}");
        took.push(t);
    }
    stop.store(true, Ordering::SeqCst);
    let connections = attack.join().unwrap();
    eprintln!("doctor calls took {took:?} beside {connections} slow connections");
    assert!(
        connections >= 2 * each,
        "only {connections} slow connections were made"
    );
    assert!(
        took.iter().all(|t| *t < Duration::from_secs(2)),
        "doctor calls took {took:?} beside {each} slow bodies and {each} slow heads"
    );
}

#[test]
fn http_slow_body_is_dropped_early() {
    let s = Server::start(&[]);
    let mut c = TcpStream::connect(s.addr).unwrap();
    write!(
        c,
        "POST /api/call HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: 1000\r\n\r\n{{",
        s.addr
    )
    .unwrap();
    c.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let started = Instant::now();
    let mut reply = Vec::new();
    // Two bytes a second, 10 s at most (the old server waited 60 s for the body).
    while started.elapsed() < Duration::from_secs(10) {
        let mut buf = [0u8; 4096];
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => reply.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
        if !reply.is_empty() {
            continue;
        }
        if c.write_all(b" ").is_err() {
            break;
        }
    }
    let took = started.elapsed();
    let reply = String::from_utf8_lossy(&reply);
    assert!(
        reply.starts_with("HTTP/1.1 408"),
        "after {took:?}: {reply:?}"
    );
    assert!(took < Duration::from_secs(5), "dropped after {took:?}");
    let e = api_error_of(&reply);
    assert!(
        e["message"].as_str().unwrap().contains("slower than"),
        "{e}"
    );
}

#[test]
fn http_one_address_cannot_hold_every_slot() {
    // 64 files: 32 connections, 8 for one address. 40 idle connections from here (the old
    // server served 32 and left the rest in its listen queue for the 10 s header timeout): the
    // oldest make room for the newer ones, and a call still gets through.
    let home = tempfile::tempdir().unwrap();
    let s = Server::start_with(limited(home.path(), 64, &[]), None);
    let idle: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect(s.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (status, reply, took) = s.post(
        "/api/call",
        br#"{"op":"model_summary"}"#,
        Duration::from_secs(10),
    );
    assert_eq!(status, 200, "{reply:.300}");
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
    // The first idle connection was closed to make room.
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 16];
    let read = first.read(&mut buf);
    assert!(
        match &read {
            Ok(n) => *n == 0,
            Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        },
        "the oldest idle connection is still open: {read:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 30, item 6: no reply at the 32 MiB edge.

#[test]
fn http_body_at_the_32_mib_edge_gets_an_answer() {
    let s = Server::start(&[]);
    for size in [MAX_BODY - 10, MAX_BODY] {
        // The old server passed these to the compute process in a line over its limit, and
        // the client waited for ever.
        let (status, reply, took) = s.post("/api/call", &big_import(size), LONG);
        assert!(
            status == 200 || status == 400 || status == 413,
            "{size} bytes: {status} after {took:?}: {reply:.300}"
        );
        let e = api_error_of(&reply);
        assert!(e["code"] == "bad_input", "{size} bytes: {e}");
    }
    let head = format!(
        "POST /api/call HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        s.addr,
        MAX_BODY + 1
    );
    assert_eq!(s.exchange(head.as_bytes(), LONG).0, 413);
}

// ---------------------------------------------------------------------------------------------
// Issue 30, item 7: memory held by in-flight bodies was unbounded.

#[test]
fn http_forty_30_mib_bodies_keep_the_resident_set_bounded() {
    let s = Server::start(&[]);
    assert_eq!(s.post("/api/call", br#"{"op":"doctor"}"#, LONG).0, 200);
    std::thread::sleep(Duration::from_millis(300));
    let idle = vm_kib(s.pid(), "VmRSS");
    let body = Arc::new(big_import(30 << 20));
    let replies = post_concurrently(&s, &body, 40);
    let mut peak = 0;
    let mut statuses = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while statuses.len() < 40 {
        assert!(
            Instant::now() < deadline,
            "{} of 40 answered",
            statuses.len()
        );
        peak = peak.max(vm_kib(s.pid(), "VmRSS"));
        while let Ok((status, reply)) = replies.try_recv() {
            // Each is read whole and refused by the compute process (no ncu export), or
            // waited too long for its share of memory (503): never a lost reply.
            assert!(status == 400 || status == 503, "{status}: {reply}");
            statuses.push(status);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let high_water = vm_kib(s.pid(), "VmHWM");
    std::thread::sleep(Duration::from_millis(500));
    let after = vm_kib(s.pid(), "VmRSS");
    let mib = |kib: u64| kib >> 10;
    eprintln!(
        "server resident set: idle {} MiB, peak sampled {} MiB, high water {} MiB, after {} \
         MiB; statuses {statuses:?}",
        mib(idle),
        mib(peak),
        mib(high_water),
        mib(after)
    );
    assert!(
        statuses.iter().filter(|s| **s == 400).count() >= 20,
        "most bodies are read and answered: {statuses:?}"
    );
    assert!(
        high_water < 1 << 20,
        "the resident set reached {} MiB",
        mib(high_water)
    );
    assert!(
        after < idle + (100 << 10),
        "{} MiB resident after the bodies, {} MiB before",
        mib(after),
        mib(idle)
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 30, item 8: the door's smaller refusals.

#[test]
fn http_two_host_headers_are_400() {
    let s = Server::start(&[]);
    for path in ["/api/compute", "/"] {
        let (status, reply, _) = s.exchange(
            format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
                s.addr
            )
            .as_bytes(),
            LONG,
        );
        assert_eq!(status, 400, "{path}: {reply}");
        let e = api_error_of(&reply);
        assert!(e["message"].as_str().unwrap().contains("Host"), "{e}");
    }
}

#[test]
fn http_two_origin_headers_are_400() {
    let s = Server::start(&[]);
    let body = r#"{"op":"doctor"}"#;
    let (status, reply, _) = s.exchange(
        format!(
            "POST /api/call HTTP/1.1\r\nHost: {0}\r\nOrigin: http://{0}\r\n\
             Origin: http://evil.example\r\nContent-Type: application/json\r\n\
             Content-Length: {1}\r\nConnection: close\r\n\r\n{body}",
            s.addr,
            body.len()
        )
        .as_bytes(),
        LONG,
    );
    assert_eq!(status, 400, "{reply}");
    let e = api_error_of(&reply);
    assert!(e["message"].as_str().unwrap().contains("Origin"), "{e}");
}

#[test]
fn http_256_character_file_name_is_404_with_a_body() {
    let ui = tempfile::tempdir().unwrap();
    std::fs::write(ui.path().join("index.html"), "<h1>lab</h1>").unwrap();
    let s = Server::start(&["--ui-dir", ui.path().to_str().unwrap()]);
    for n in [255, 256, 4000] {
        let (status, reply, _) = s.get(&format!("/{}", "a".repeat(n)));
        assert_eq!(status, 404, "{n} characters: {reply:.300}");
        assert!(
            body_of(&reply).contains("not found: /aaa"),
            "{n} characters: {reply:.300}"
        );
    }
    assert_eq!(s.get("/index.html").0, 200);
}
