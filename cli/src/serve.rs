//! `showdown serve`: the compute service's two doors.
//!
//! - `--stdio`: the compute process. Newline-delimited JSON; each input line is an
//!   [`Envelope`], each output line a [`Reply`] (stdout carries nothing else). Every request is
//!   answered by one [`Service`] on a worker thread of its own (at most [`MAX_IN_FLIGHT`] at
//!   once), so a `cancel` line reaches a running job; EOF on stdin cancels what runs, waits for
//!   it and exits 0. A failed write on stdout means the client is gone: the running job is
//!   cancelled and waited for, and the process exits 1 (stdin open or not). `serve` ignores
//!   SIGPIPE, and its diagnostics on stderr are best effort: a closed stderr stops nothing.
//! - `--http ADDR`: browser mode. The compute runs in a supervised child process
//!   (`showdown serve --stdio`, through `showdown-supervisor`, as in the desktop app), so a CUDA
//!   fault or a crash there fails the requests in flight and the next request gets a fresh
//!   process. `POST /api/call` (a [`Request`] → its result, or an [`ApiError`] with 400, 409 or
//!   500; a job whose client goes away is cancelled), `POST /api/job` (any [`Request`] →
//!   Server-Sent Events, each a [`Reply`]: the events, then the result), `GET /api/compute`
//!   (the compute process's state) and the web UI's static files (never one that a symlink
//!   takes out of the UI folder: 404). Neither door knows which requests stream.
//!
//!   Safe to leave running beside a browser: every request must name this server in `Host`
//!   (its address or a loopback name with its port; any name when bound off loopback, where a
//!   token is mandatory), so a site re-pointing its name at 127.0.0.1 (DNS rebinding) gets 403;
//!   on /api an `Origin` must be the server's own or an `--allow-origin` (403 otherwise) and a
//!   POST must say `Content-Type: application/json` (415 otherwise: no form or `text/plain`
//!   request from another page gets through without a preflight). Every /api refusal is an
//!   [`ApiError`] JSON. A client has [`HEADER_TIMEOUT`] to send a request's head and
//!   [`BODY_TIMEOUT`] for its body, and at most [`MAX_CONNECTIONS`] connections are served at
//!   once (half the open-file limit when lower), so half-sent requests cannot starve the
//!   server of descriptors.

use std::any::Any;
use std::convert::Infallible;
use std::io::{self, BufRead, Read, Write};
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Result};
use axum::body::Body;
use axum::extract::State;
use axum::handler::HandlerWithoutStateExt;
use axum::http::{header, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use clap::Args;
use compute::protocol::{ApiError, CancelRequest, Envelope, Event, Reply, Request};
use compute::service::Service;
use compute::{ComputeError, ErrorKind};
use http_body_util::{BodyExt, LengthLimitError};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use showdown_supervisor::Sidecar;
use tower_http::services::ServeDir;

/// Longest request line (stdio) or body (HTTP /api) accepted: room for the largest screenshot
/// an `ncu_attach` may carry (20 MiB, 26.7 MiB in base64) and an ncu CSV of that size.
const MAX_REQUEST_BYTES: usize = 32 << 20;

/// Where `--ui-dir` points by default, when it exists.
const DEFAULT_UI_DIR: &str = "app-ui/dist";

/// The flags of `showdown serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Speak newline-delimited JSON on stdin/stdout (one request envelope per line).
    #[arg(long, conflicts_with = "http", required_unless_present = "http")]
    stdio: bool,
    /// Serve HTTP on IP:PORT (port 0 picks a free port; the first stdout line names it).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Require `Authorization: Bearer TOKEN` on /api (mandatory off loopback).
    #[arg(long, value_name = "TOKEN", conflicts_with = "stdio")]
    token: Option<String>,
    /// Folder of the web UI's static files (default: app-ui/dist when it exists).
    #[arg(long, value_name = "DIR", conflicts_with = "stdio")]
    ui_dir: Option<PathBuf>,
    /// Also accept /api requests from pages of this origin (`http://localhost:5173`), with
    /// CORS headers; repeatable. The server's own pages are always accepted.
    #[arg(long, value_name = "ORIGIN", conflicts_with = "stdio")]
    allow_origin: Vec<String>,
}

/// Runs `showdown serve`.
pub fn run(a: ServeArgs) -> Result<()> {
    match a.http {
        Some(addr) => http(addr, a.token, a.ui_dir, a.allow_origin),
        None => stdio(),
    }
}

/// Calls the service, turning a panic (a bug) into a runtime error instead of a lost reply.
fn call(
    service: &Service,
    request: Request,
    on_event: &mut dyn FnMut(Event),
    cancel: &Arc<AtomicBool>,
) -> std::result::Result<serde_json::Value, ApiError> {
    match catch_unwind(AssertUnwindSafe(|| {
        service.handle(request, on_event, cancel)
    })) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(ApiError::from(&e)),
        Err(panic) => Err(internal_error(&*panic)),
    }
}

fn internal_error(panic: &(dyn Any + Send)) -> ApiError {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    ApiError::runtime(format!("internal error (a bug; please report it): {what}"))
}

fn reply_of(id: u64, result: std::result::Result<serde_json::Value, ApiError>) -> Reply {
    match result {
        Ok(v) => Reply::ok(id, v),
        Err(e) => Reply::error(id, e),
    }
}

/// One reply as a JSON line (never fails: an unencodable reply becomes an error reply).
fn encode(reply: &Reply) -> String {
    serde_json::to_string(reply).unwrap_or_else(|e| {
        serde_json::json!({
            "id": reply.id,
            "error": {"code": "runtime", "message": format!("could not encode the reply: {e}")},
        })
        .to_string()
    })
}

// ---------------------------------------------------------------------------------------------
// stdio

/// Where replies go: stdout, until a write fails.
struct Output {
    stdout: Mutex<io::Stdout>,
    /// Set at the first failed write: nobody reads the replies any more (the client is gone).
    gone: AtomicBool,
    /// Wakes the stdio loop when the client is gone (it may be waiting for a line).
    wake: SyncSender<Input>,
}

type Out = Arc<Output>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A diagnostic on stderr, best effort: a closed or full stderr never stops `serve`
/// (`eprintln!` would panic).
fn note(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr(), "{message}");
}

/// Writes one reply line. A write error means the client is gone: nothing more is written, and
/// the stdio loop is woken to cancel what runs and exit 1.
fn send(out: &Out, reply: &Reply) {
    if out.gone.load(Ordering::SeqCst) {
        return;
    }
    let line = encode(reply);
    let mut o = lock(&out.stdout);
    if let Err(e) = writeln!(o, "{line}").and_then(|()| o.flush()) {
        if !out.gone.swap(true, Ordering::SeqCst) {
            note(format_args!(
                "showdown serve: cannot write to stdout ({e}): the client is gone; cancelling \
                 and exiting"
            ));
            // Full only when a line waits for the loop, which then sees `gone`.
            let _ = out.wake.try_send(Input::ClientGone);
        }
    }
}

/// What the stdio loop waits for.
enum Input {
    /// One line of stdin (with its newline, if any).
    Line(Vec<u8>),
    /// A line longer than [`MAX_REQUEST_BYTES`], skipped.
    TooLong,
    /// The end of stdin, or an error reading it.
    End(io::Result<()>),
    /// A reply could not be written: the client is gone.
    ClientGone,
}

/// Reads stdin a line at a time for the stdio loop (one line ahead at most), until its end.
fn read_stdin(to_loop: &SyncSender<Input>) {
    let mut input = io::stdin().lock();
    loop {
        let mut buf = Vec::new();
        let read = (&mut input)
            .take(MAX_REQUEST_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf);
        let next = match read {
            Err(e) => Input::End(Err(e)),
            Ok(0) => Input::End(Ok(())),
            Ok(_) if buf.last() != Some(&b'\n') && buf.len() > MAX_REQUEST_BYTES => {
                match skip_rest_of_line(&mut input) {
                    Ok(()) => Input::TooLong,
                    Err(e) => Input::End(Err(e)),
                }
            }
            Ok(_) => Input::Line(buf),
        };
        let end = matches!(next, Input::End(_));
        if to_loop.send(next).is_err() || end {
            return;
        }
    }
}

/// The stdio door. Exits 0 at the end of stdin; 1 when stdin cannot be read or stdout cannot be
/// written (the client is gone); either way the running job is cancelled and waited for first.
fn stdio() -> Result<()> {
    let service = Arc::new(Service::from_env());
    let (wake, inputs) = sync_channel::<Input>(1);
    let out: Out = Arc::new(Output {
        stdout: Mutex::new(io::stdout()),
        gone: AtomicBool::new(false),
        wake: wake.clone(),
    });
    // Left blocked on stdin when the client goes away with stdin open: the process ends anyway.
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || read_stdin(&wake))
        .map_err(|e| anyhow!("cannot start the stdin reader thread: {e}"))?;
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    let mut line_no = 0u64;
    let ended = loop {
        let next = inputs.recv().unwrap_or(Input::End(Ok(())));
        if out.gone.load(Ordering::SeqCst) {
            break Err(anyhow!(
                "stdout is closed: the client is gone (its job was cancelled)"
            ));
        }
        match next {
            Input::Line(buf) => {
                line_no += 1;
                match parse_line(&buf, line_no) {
                    Ok(None) => {}
                    Ok(Some(env)) => dispatch(env, &service, &out, &mut workers),
                    Err((id, e)) => send(&out, &Reply::error(id, e)),
                }
            }
            Input::TooLong => {
                line_no += 1;
                let msg = format!("line {line_no} is longer than {MAX_REQUEST_BYTES} bytes");
                send(&out, &Reply::error(0, ApiError::bad_input(msg)));
            }
            Input::End(Ok(())) => break Ok(()),
            Input::End(Err(e)) => break Err(anyhow!("cannot read stdin: {e}")),
            // `gone` was set before this was sent: seen above.
            Input::ClientGone => {}
        }
        workers.retain(|w| !w.is_finished());
    };
    service.cancel_running();
    for w in workers {
        // A worker that panicked has already answered through `call`.
        let _ = w.join();
    }
    ended
}

fn skip_rest_of_line(input: &mut impl BufRead) -> io::Result<()> {
    let mut sink = Vec::new();
    loop {
        sink.clear();
        let n = input
            .take(MAX_REQUEST_BYTES as u64)
            .read_until(b'\n', &mut sink)?;
        if n == 0 || sink.last() == Some(&b'\n') {
            return Ok(());
        }
    }
}

/// An envelope, `None` for a blank line, or the id to answer (0 when unreadable) and the
/// error naming what is wrong.
fn parse_line(
    bytes: &[u8],
    line_no: u64,
) -> std::result::Result<Option<Envelope>, (u64, ApiError)> {
    let bad =
        |id: u64, what: String| Err((id, ApiError::bad_input(format!("line {line_no}: {what}"))));
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t.trim(),
        Err(e) => return bad(0, format!("not UTF-8: {e}")),
    };
    if text.is_empty() {
        return Ok(None);
    }
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return bad(0, format!("not JSON: {e}")),
    };
    let id = value.get("id").and_then(serde_json::Value::as_u64);
    match serde_json::from_value::<Envelope>(value) {
        Ok(env) => Ok(Some(env)),
        Err(e) => bad(
            id.unwrap_or(0),
            format!(
                "not a request envelope {{\"id\":N,\"request\":{{\"op\":...}}}}: {e}{}",
                if id.is_none() {
                    " (no readable id: answering as id 0)"
                } else {
                    ""
                }
            ),
        ),
    }
}

/// Answers a request: a job ([`Request::is_job`]) on a worker thread, so that `cancel` lines
/// are read while it runs; a quick request here, in order.
fn dispatch(env: Envelope, service: &Arc<Service>, out: &Out, workers: &mut Vec<JoinHandle<()>>) {
    let Envelope { id, request } = env;
    let is_job = request.is_job();
    let answer = {
        let service = Arc::clone(service);
        move |out: &Out| {
            let cancel = Arc::new(AtomicBool::new(false));
            let result = call(
                &service,
                request,
                &mut |e| send(out, &Reply::event(id, e)),
                &cancel,
            );
            send(out, &reply_of(id, result));
        }
    };
    if !is_job {
        answer(out);
        return;
    }
    let worker_out = Arc::clone(out);
    match std::thread::Builder::new()
        .name(format!("job-{id}"))
        .spawn(move || answer(&worker_out))
    {
        Ok(w) => workers.push(w),
        Err(e) => send(
            out,
            &Reply::error(
                id,
                ApiError::runtime(format!("cannot start a worker thread: {e}")),
            ),
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP

#[derive(Clone)]
struct AppState {
    token: Option<Arc<str>>,
    next_id: Arc<AtomicU64>,
    /// The supervised compute process (`showdown serve --stdio`).
    compute: Sidecar,
}

/// Who may reach the server: checked on every request before anything else runs.
#[derive(Clone)]
struct Guard {
    /// The `Host` values accepted (lower case): the bound address and the loopback names with
    /// its port. `None` when bound off loopback (then a token is mandatory): any Host.
    hosts: Option<Arc<[String]>>,
    /// Browser origins accepted besides the server's own (`--allow-origin`), answered with
    /// CORS headers.
    allowed_origins: Arc<[String]>,
}

/// How a request's `Origin` stands.
enum OriginCheck {
    /// No `Origin`, or the server's own: nothing to add.
    Own,
    /// An `--allow-origin` origin: the response carries CORS headers naming it.
    Allowed(header::HeaderValue),
}

fn http(
    addr: SocketAddr,
    token: Option<String>,
    ui_dir: Option<PathBuf>,
    allow_origin: Vec<String>,
) -> Result<()> {
    if token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(ComputeError::bad_arg("--token", "", "must not be empty").into());
    }
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(ComputeError::bad_arg(
            "--http",
            addr,
            "is not a loopback address, so anyone who reaches it could run jobs here: pass \
             --token TOKEN (clients then send `Authorization: Bearer TOKEN`) or bind 127.0.0.1",
        )
        .into());
    }
    let allowed_origins = allow_origin
        .iter()
        .map(|o| parse_origin(o))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let header_timeout = header_timeout()?;
    let ui_dir = match ui_dir {
        Some(d) if !d.is_dir() => {
            return Err(ComputeError::bad_arg(
                "--ui-dir",
                d.display(),
                "is not a folder (build the web UI with `cargo xtask ui`)",
            )
            .into())
        }
        Some(d) => Some(d),
        None => Some(PathBuf::from(DEFAULT_UI_DIR)).filter(|d| d.is_dir()),
    };
    // Canonical, so that a file can be checked to lie inside it (see [`stay_inside`]).
    let ui_dir = match ui_dir {
        Some(d) => Some(d.canonicalize().map_err(|e| {
            ComputeError::bad_arg("--ui-dir", d.display(), format!("cannot be resolved: {e}"))
        })?),
        None => None,
    };
    let program = std::env::current_exe()
        .map_err(|e| anyhow!("cannot find this program to run the compute process: {e}"))?;
    let open_token = token.clone();
    let state = AppState {
        token: token.map(Arc::from),
        next_id: Arc::new(AtomicU64::new(1)),
        compute: Sidecar::new(program, &["serve", "--stdio"]),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow!("cannot start the async runtime: {e}"))?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| anyhow!("cannot listen on {addr}: {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| anyhow!("cannot read the address bound for {addr}: {e}"))?;
        let guard = Guard {
            hosts: local
                .ip()
                .is_loopback()
                .then(|| Arc::from(own_hosts(local))),
            allowed_origins: Arc::from(allowed_origins),
        };
        let app = router(state, guard, ui_dir.as_deref());
        {
            let mut o = io::stdout().lock();
            writeln!(o, "listening on http://{local}")
                .and_then(|()| o.flush())
                .map_err(|e| anyhow!("cannot write to stdout: {e}"))?;
        }
        match &ui_dir {
            Some(d) => note(format_args!("serving the web UI from {}", d.display())),
            None => note(format_args!(
                "no web UI folder ({DEFAULT_UI_DIR} does not exist): API only"
            )),
        }
        if let (Some(t), Some(_)) = (&open_token, &ui_dir) {
            // Said once, here: the page keeps the token for its session and drops it from the
            // address bar; a page opened without it asks for it.
            note(format_args!(
                "open the lab with its token: http://{local}/?token={}",
                url_encode(t)
            ));
        }
        serve_connections(listener, app, connection_cap(), header_timeout).await;
        Ok(())
    })
}

/// Connections served at once at most (fewer when the process may open few files: half its
/// descriptor limit); more wait in the kernel's listen queue until one closes.
const MAX_CONNECTIONS: usize = 256;

/// How long a client has to send a request's head; also how long an idle keep-alive
/// connection is kept.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Sets the header timeout in milliseconds instead (tests).
const HEADER_TIMEOUT_ENV: &str = "SHOWDOWN_HTTP_HEADER_TIMEOUT_MS";

/// How long a client has to send a request's body once its head has come.
const BODY_TIMEOUT: Duration = Duration::from_secs(60);

fn header_timeout() -> Result<Duration> {
    let Some(v) = std::env::var_os(HEADER_TIMEOUT_ENV) else {
        return Ok(HEADER_TIMEOUT);
    };
    let ms = v.to_str().and_then(|s| s.trim().parse::<u64>().ok());
    match ms {
        Some(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(ComputeError::bad_arg(
            HEADER_TIMEOUT_ENV,
            v.to_string_lossy(),
            "must be a positive number of milliseconds",
        )
        .into()),
    }
}

fn connection_cap() -> usize {
    descriptor_limit().map_or(MAX_CONNECTIONS, |n| (n / 2).clamp(8, MAX_CONNECTIONS))
}

/// The soft limit on open files, when there is one.
#[cfg(unix)]
fn descriptor_limit() -> Option<usize> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given, which outlives the call.
    let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    (read && limit.rlim_cur != libc::RLIM_INFINITY)
        .then(|| usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX))
}

#[cfg(not(unix))]
fn descriptor_limit() -> Option<usize> {
    None
}

/// Accepts connections while fewer than `cap` are open and serves each over HTTP/1.1; a client
/// that does not send a request's head within `header_timeout` is disconnected, so half-sent
/// requests cannot hold the server's descriptors.
async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: Router,
    cap: usize,
    header_timeout: Duration,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(cap));
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return; // never closed
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                if !matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionAborted
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionRefused
                ) {
                    // Out of descriptors or memory: wait for connections to close.
                    note(format_args!(
                        "showdown serve: cannot accept a connection: {e}"
                    ));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                continue;
            }
        };
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let _ = stream.set_nodelay(true);
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            // A connection's error (a client gone, a timeout) concerns that client only.
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The `Host` values that name this server on `local`'s port.
fn own_hosts(local: SocketAddr) -> Vec<String> {
    let port = local.port();
    let mut hosts = vec![
        local.to_string(),
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ];
    if port == 80 {
        // Browsers leave the default port out.
        let without: Vec<String> = hosts
            .iter()
            .filter_map(|h| h.strip_suffix(":80").map(str::to_string))
            .collect();
        hosts.extend(without);
    }
    hosts.sort();
    hosts.dedup();
    hosts
}

/// An `--allow-origin` value, normalised: `scheme://host[:port]` in lower case.
fn parse_origin(origin: &str) -> Result<String> {
    let o = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let well_formed = ["http://", "https://"].iter().any(|scheme| {
        o.strip_prefix(scheme)
            .is_some_and(|rest| !rest.is_empty() && !rest.contains(['/', '?', '#', '@', '*', ' ']))
    });
    if well_formed {
        Ok(o)
    } else {
        Err(ComputeError::bad_arg(
            "--allow-origin",
            origin,
            "must be a browser origin, scheme://host[:port] (such as http://localhost:5173)",
        )
        .into())
    }
}

impl Guard {
    /// Refuses a request whose `Host` (and absolute URI) does not name this server: a page
    /// of another site whose name was re-pointed at 127.0.0.1 (DNS rebinding) sends its own.
    fn check_host(&self, req: &axum::extract::Request) -> std::result::Result<(), String> {
        let host = req
            .headers()
            .get(header::HOST)
            .map(|h| h.to_str().unwrap_or("(not text)").to_ascii_lowercase());
        let authority = req
            .uri()
            .authority()
            .map(|a| a.as_str().to_ascii_lowercase());
        if host.is_none() && authority.is_none() {
            return Err("the request has no Host header".into());
        }
        let Some(hosts) = &self.hosts else {
            return Ok(());
        };
        for h in host.iter().chain(authority.iter()) {
            if !hosts.iter().any(|o| o == h) {
                return Err(format!(
                    "Host '{h}' is not this server (it answers to {})",
                    hosts.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Refuses a request whose `Origin` is neither the server's own nor allowed.
    fn check_origin(
        &self,
        req: &axum::extract::Request,
    ) -> std::result::Result<OriginCheck, String> {
        let Some(value) = req.headers().get(header::ORIGIN) else {
            return Ok(OriginCheck::Own);
        };
        let origin = value.to_str().unwrap_or("(not text)").to_ascii_lowercase();
        let own = match &self.hosts {
            Some(hosts) => hosts.iter().any(|h| origin == format!("http://{h}")),
            None => req
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .is_some_and(|h| origin == format!("http://{}", h.to_ascii_lowercase())),
        };
        if own {
            Ok(OriginCheck::Own)
        } else if self.allowed_origins.contains(&origin) {
            Ok(OriginCheck::Allowed(value.clone()))
        } else {
            Err(format!(
                "requests from the page origin '{origin}' are refused: only this server's own \
                 pages may call its API (start it with --allow-origin {origin} to allow that one)"
            ))
        }
    }
}

fn is_api(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/")
}

/// Whether the request says its body is JSON (`application/json`, parameters allowed).
fn is_json(req: &axum::extract::Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Checks `Host` on every request, and on /api the `Origin`, that a POST carries JSON and
/// that its announced length is within the limit; every refusal is an [`ApiError`].
async fn guard(State(g): State<Guard>, req: axum::extract::Request, next: Next) -> Response {
    if let Err(why) = g.check_host(&req) {
        return error_response(StatusCode::FORBIDDEN, &ApiError::bad_input(why));
    }
    if !is_api(req.uri().path()) {
        return next.run(req).await;
    }
    let origin = match g.check_origin(&req) {
        Ok(o) => o,
        Err(why) => return error_response(StatusCode::FORBIDDEN, &ApiError::bad_input(why)),
    };
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let mut response =
        if req.method() == Method::OPTIONS && matches!(origin, OriginCheck::Allowed(_)) {
            // A CORS preflight from an allowed origin.
            let mut r = StatusCode::NO_CONTENT.into_response();
            let h = r.headers_mut();
            h.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                header::HeaderValue::from_static("GET, POST"),
            );
            h.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                header::HeaderValue::from_static("content-type, authorization"),
            );
            h.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                header::HeaderValue::from_static("600"),
            );
            r
        } else if announced.is_some_and(|n| n > MAX_REQUEST_BYTES as u64) {
            too_large()
        } else if req.method() == Method::POST && !is_json(&req) {
            error_response(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &ApiError::bad_input(
                    "the API takes JSON: send `Content-Type: application/json` with the request",
                ),
            )
        } else {
            next.run(req).await
        };
    if let OriginCheck::Allowed(o) = origin {
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, o);
        h.insert(header::VARY, header::HeaderValue::from_static("Origin"));
    }
    response
}

fn too_large() -> Response {
    error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        &ApiError::bad_input(format!(
            "the request body is larger than {MAX_REQUEST_BYTES} bytes"
        )),
    )
}

fn router(state: AppState, guard_state: Guard, ui_dir: Option<&Path>) -> Router {
    let api = Router::new()
        .route("/call", post(api_call))
        .route("/job", post(api_job))
        .route("/compute", get(api_compute))
        .fallback(api_not_found)
        .method_not_allowed_fallback(api_method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), require_token))
        .with_state(state);
    let app = Router::new().nest("/api", api);
    let app = match ui_dir {
        // ServeDir refuses `..`, absolute and prefixed paths (also percent-encoded) with 404;
        // `stay_inside` refuses what a symlink would take out of the folder.
        Some(d) => {
            let files = Router::new()
                .fallback_service(ServeDir::new(d).not_found_service(not_found.into_service()))
                .layer(middleware::from_fn_with_state(
                    Arc::<Path>::from(d),
                    stay_inside,
                ));
            app.fallback_service(files)
        }
        None => app.fallback(no_ui),
    };
    app.layer(middleware::from_fn_with_state(guard_state, guard))
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn error_response(status: StatusCode, e: &ApiError) -> Response {
    let body = serde_json::to_string(e).unwrap_or_else(|_| {
        "{\"code\":\"runtime\",\"message\":\"could not encode the error\"}".into()
    });
    json_response(status, body)
}

fn status_of(code: ErrorKind) -> StatusCode {
    match code {
        ErrorKind::BadInput => StatusCode::BAD_REQUEST,
        ErrorKind::Busy => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

async fn require_token(
    State(s): State<AppState>,
    req: axum::extract::Request,
    next: Next,
) -> Response {
    if let Some(token) = &s.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes())) {
            let mut r = error_response(
                StatusCode::UNAUTHORIZED,
                &ApiError::bad_input(
                    "this server needs `Authorization: Bearer TOKEN` with the --token it was \
                     started with",
                ),
            );
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return r;
        }
    }
    next.run(req).await
}

/// Compares without stopping at the first difference (no timing hint about the token).
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The body read within [`BODY_TIMEOUT`] and parsed as a [`Request`], or the error to answer
/// (413 too large, 408 too slow, 400 unreadable or not a request).
async fn read_request(body: Body) -> std::result::Result<Request, (StatusCode, ApiError)> {
    let read = tokio::time::timeout(
        BODY_TIMEOUT,
        http_body_util::Limited::new(body, MAX_REQUEST_BYTES).collect(),
    )
    .await
    .map_err(|_| {
        (
            StatusCode::REQUEST_TIMEOUT,
            ApiError::bad_input(format!(
                "the request body did not arrive within {} s",
                BODY_TIMEOUT.as_secs()
            )),
        )
    })?;
    let bytes = match read {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<LengthLimitError>() => {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                ApiError::bad_input(format!(
                    "the request body is larger than {MAX_REQUEST_BYTES} bytes"
                )),
            ))
        }
        Err(e) => {
            return Err((
                StatusCode::BAD_REQUEST,
                ApiError::bad_input(format!("cannot read the request body: {e}")),
            ))
        }
    };
    serde_json::from_slice(&bytes).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            ApiError::bad_input(format!("the body is not a request {{\"op\":...}}: {e}")),
        )
    })
}

/// What `/api/call` knows of its request, shared by the handler and the thread waiting on
/// the compute process.
#[derive(Default)]
struct CallWatch {
    /// The request sent an event: it is the job running now.
    started: AtomicBool,
    /// The client went away before the result.
    gone: AtomicBool,
    /// A cancel was sent (one at most).
    cancelled: AtomicBool,
}

impl CallWatch {
    fn cancel_once(&self, compute: &Sidecar) {
        if !self.cancelled.swap(true, Ordering::SeqCst) {
            let _ = compute.call(CancelRequest {}.into(), &mut |_| {});
        }
    }
}

/// Cancels the job of an `/api/call` whose client went away (its handler dropped before the
/// result): at once when the job has sent an event, else at its first event. Never before: a
/// job refused as `busy` must not cancel the job of someone else.
struct CancelOnDrop {
    compute: Sidecar,
    watch: Arc<CallWatch>,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.watch.gone.store(true, Ordering::SeqCst);
        if self.watch.started.load(Ordering::SeqCst) {
            let (compute, watch) = (self.compute.clone(), Arc::clone(&self.watch));
            // A thread of its own: the call blocks until the compute process answers.
            if let Err(e) = std::thread::Builder::new()
                .name("cancel-abandoned".into())
                .spawn(move || watch.cancel_once(&compute))
            {
                note(format_args!(
                    "showdown serve: cannot cancel an abandoned job: {e}"
                ));
            }
        }
    }
}

/// Sends `request` to the compute process and waits for its result (events are dropped); a
/// job is cancelled when the client goes away first (see [`CancelOnDrop`]).
async fn call_for_client(
    compute: Sidecar,
    request: Request,
) -> std::result::Result<serde_json::Value, ApiError> {
    let watch = Arc::new(CallWatch::default());
    let mut on_drop = CancelOnDrop {
        compute: compute.clone(),
        watch: Arc::clone(&watch),
        armed: request.is_job(),
    };
    let result = tokio::task::spawn_blocking(move || {
        let canceller = compute.clone();
        compute.call(request, &mut |_| {
            watch.started.store(true, Ordering::SeqCst);
            if watch.gone.load(Ordering::SeqCst) {
                watch.cancel_once(&canceller);
            }
        })
    })
    .await
    .unwrap_or_else(|e| {
        Err(ApiError::runtime(format!(
            "the request did not finish: {e}"
        )))
    });
    on_drop.armed = false;
    result
}

fn result_response(result: std::result::Result<serde_json::Value, ApiError>) -> Response {
    match result {
        Ok(v) => json_response(StatusCode::OK, v.to_string()),
        Err(e) => error_response(status_of(e.code), &e),
    }
}

async fn api_call(State(s): State<AppState>, body: Body) -> Response {
    match read_request(body).await {
        Ok(request) => result_response(call_for_client(s.compute, request).await),
        Err((status, e)) => error_response(status, &e),
    }
}

/// The compute process's state: `{program, running, pid, crashes}`.
async fn api_compute(State(s): State<AppState>) -> Response {
    match serde_json::to_string(&s.compute.status()) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(e) => error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &ApiError::runtime(format!("cannot encode the status: {e}")),
        ),
    }
}

/// Streams any request as Server-Sent Events, each a [`Reply`]: its events, then the final
/// `ok` or `error`. A client that goes away cancels the running job.
async fn api_job(State(s): State<AppState>, body: Body) -> Response {
    let request = match read_request(body).await {
        Ok(r) => r,
        Err((status, e)) => return error_response(status, &e),
    };
    let id = s.next_id.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Reply>();
    let compute = s.compute.clone();
    tokio::task::spawn_blocking(move || {
        let events = tx.clone();
        let canceller = compute.clone();
        let mut cancelled = false;
        let mut on_event = move |e: Event| {
            if events.send(Reply::event(id, e)).is_err() && !cancelled {
                // The client is gone: nobody reads this job's progress any more.
                cancelled = true;
                let _ = canceller.call(CancelRequest {}.into(), &mut |_| {});
            }
        };
        let result = compute.call(request, &mut on_event);
        // The client may be gone; nobody is left to tell.
        let _ = tx.send(reply_of(id, result));
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let reply = rx.recv().await?;
        Some((
            Ok::<_, Infallible>(SseEvent::default().data(encode(&reply))),
            rx,
        ))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn api_not_found(uri: Uri) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        &ApiError::bad_input(format!(
            "no API endpoint {}: POST /api/call or /api/job, GET /api/compute",
            uri.path()
        )),
    )
}

async fn api_method_not_allowed(method: Method, uri: Uri) -> Response {
    error_response(
        StatusCode::METHOD_NOT_ALLOWED,
        &ApiError::bad_input(format!(
            "{method} {} is not an API call: POST /api/call or /api/job, GET /api/compute",
            uri.path()
        )),
    )
}

async fn not_found(uri: Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!("not found: {}\n", uri.path()),
    )
        .into_response()
}

/// Answers 404 for a static file (or a folder's `index.html`) that resolves, through a
/// symlink, outside `root`, the canonical `--ui-dir`; the rest goes on to `ServeDir`.
async fn stay_inside(
    State(root): State<Arc<Path>>,
    req: axum::extract::Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_string();
    let outside = tokio::task::spawn_blocking(move || leaves(&root, &path))
        .await
        .unwrap_or(true);
    if outside {
        return not_found(req.uri().clone()).await;
    }
    next.run(req).await
}

/// Whether the file `ServeDir` would serve for the URL path `url_path` lies outside `root` (a
/// canonical folder). A path `ServeDir` would refuse counts as outside; one that does not exist
/// does not (`ServeDir` answers 404).
fn leaves(root: &Path, url_path: &str) -> bool {
    let Some(relative) = percent_decode(url_path.trim_start_matches('/')) else {
        return true;
    };
    let mut file = root.to_path_buf();
    for part in Path::new(&relative).components() {
        match part {
            std::path::Component::Normal(name) => file.push(name),
            std::path::Component::CurDir => {}
            _ => return true,
        }
    }
    let outside = |p: &Path| p.canonicalize().is_ok_and(|real| !real.starts_with(root));
    outside(&file) || (file.is_dir() && outside(&file.join("index.html")))
}

/// `text` with its `%XX` escapes decoded, as `ServeDir` decodes a path; `None` when the result
/// is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match escaped {
            Some(b) if bytes[i] == b'%' => {
                out.push(b);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

async fn no_ui(uri: Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!(
            "not found: {}: this server has no web UI folder ({DEFAULT_UI_DIR} does not exist; \
             build it with `cargo xtask ui` or pass --ui-dir DIR); the API is under /api\n",
            uri.path()
        ),
    )
        .into_response()
}

/// `text` percent-encoded for a URL query value (RFC 3986 unreserved characters kept).
fn url_encode(text: &str) -> String {
    const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(text, QUERY_VALUE).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_percent_encoded_for_the_url_it_is_printed_in() {
        assert_eq!(url_encode("s3cret-_.~"), "s3cret-_.~");
        assert_eq!(url_encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
