//! `showdown serve`: the compute service's two doors.
//!
//! - `--stdio`: the compute process. Newline-delimited JSON; each input line is an
//!   [`Envelope`], each output line a [`Reply`] (stdout carries nothing else). Every request is
//!   answered by one [`Service`] on a worker thread of its own (at most [`MAX_IN_FLIGHT`] at
//!   once), so a `cancel` line reaches a running job; EOF on stdin cancels what runs, waits for
//!   it and exits 0.
//! - `--http ADDR`: browser mode. The compute runs in a supervised child process
//!   (`showdown serve --stdio`, through `showdown-supervisor`, as in the desktop app), so a CUDA
//!   fault or a crash there fails the requests in flight and the next request gets a fresh
//!   process. `POST /api/call` (a [`Request`] → its result, or an [`ApiError`] with 400, 409 or
//!   500), `POST /api/job` (any [`Request`] → Server-Sent Events, each a [`Reply`]: the events,
//!   then the result), `GET /api/compute` (the compute process's state) and the web UI's static
//!   files. Neither door knows which requests stream.

use std::any::Any;
use std::convert::Infallible;
use std::io::{self, BufRead, Read, Write};
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use anyhow::{anyhow, Result};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::handler::HandlerWithoutStateExt;
use axum::http::{header, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use clap::Args;
use compute::protocol::{ApiError, CancelRequest, Envelope, Event, Reply, Request};
use compute::service::Service;
use compute::{ComputeError, ErrorKind};
use serde::de::DeserializeOwned;
use showdown_supervisor::Sidecar;
use tower_http::limit::RequestBodyLimitLayer;
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
}

/// Runs `showdown serve`.
pub fn run(a: ServeArgs) -> Result<()> {
    match a.http {
        Some(addr) => http(addr, a.token, a.ui_dir),
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

type Out = Arc<Mutex<io::Stdout>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Writes one reply line. A write error means the client is gone; the read loop ends at EOF.
fn send(out: &Out, reply: &Reply) {
    let line = encode(reply);
    let mut o = lock(out);
    if let Err(e) = writeln!(o, "{line}").and_then(|()| o.flush()) {
        eprintln!("showdown serve: cannot write to stdout: {e}");
    }
}

fn stdio() -> Result<()> {
    let service = Arc::new(Service::from_env());
    let out: Out = Arc::new(Mutex::new(io::stdout()));
    let mut input = io::stdin().lock();
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = (&mut input)
            .take(MAX_REQUEST_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| anyhow!("cannot read stdin: {e}"))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if buf.last() != Some(&b'\n') && buf.len() > MAX_REQUEST_BYTES {
            skip_rest_of_line(&mut input).map_err(|e| anyhow!("cannot read stdin: {e}"))?;
            let msg = format!("line {line_no} is longer than {MAX_REQUEST_BYTES} bytes");
            send(&out, &Reply::error(0, ApiError::bad_input(msg)));
            continue;
        }
        match parse_line(&buf, line_no) {
            Ok(None) => {}
            Ok(Some(env)) => dispatch(env, &service, &out, &mut workers),
            Err((id, e)) => send(&out, &Reply::error(id, e)),
        }
        workers.retain(|w| !w.is_finished());
    }
    service.cancel_running();
    for w in workers {
        // A worker that panicked has already answered through `call`.
        let _ = w.join();
    }
    Ok(())
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

fn http(addr: SocketAddr, token: Option<String>, ui_dir: Option<PathBuf>) -> Result<()> {
    if token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(ComputeError::bad_arg("--token", "", "must not be empty").into());
    }
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(ComputeError::bad_arg(
            "--http",
            addr,
            "is not a loopback address, so anyone who reaches it could run jobs here: pass              --token TOKEN (clients then send `Authorization: Bearer TOKEN`) or bind 127.0.0.1",
        )
        .into());
    }
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
    let program = std::env::current_exe()
        .map_err(|e| anyhow!("cannot find this program to run the compute process: {e}"))?;
    let state = AppState {
        token: token.map(Arc::from),
        next_id: Arc::new(AtomicU64::new(1)),
        compute: Sidecar::new(program, &["serve", "--stdio"]),
    };
    let app = router(state, ui_dir.as_deref());
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
        {
            let mut o = io::stdout().lock();
            writeln!(o, "listening on http://{local}")
                .and_then(|()| o.flush())
                .map_err(|e| anyhow!("cannot write to stdout: {e}"))?;
        }
        match &ui_dir {
            Some(d) => eprintln!("serving the web UI from {}", d.display()),
            None => eprintln!("no web UI folder ({DEFAULT_UI_DIR} does not exist): API only"),
        }
        axum::serve(listener, app)
            .await
            .map_err(|e| anyhow!("the HTTP server failed: {e}"))
    })
}

fn router(state: AppState, ui_dir: Option<&Path>) -> Router {
    let api = Router::new()
        .route("/call", post(api_call))
        .route("/job", post(api_job))
        .route("/compute", get(api_compute))
        .fallback(api_not_found)
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .layer(RequestBodyLimitLayer::new(MAX_REQUEST_BYTES))
        .layer(middleware::from_fn_with_state(state.clone(), require_token))
        .with_state(state);
    let app = Router::new().nest("/api", api);
    match ui_dir {
        // ServeDir refuses `..`, absolute and prefixed paths (also percent-encoded) with 404.
        Some(d) => {
            app.fallback_service(ServeDir::new(d).not_found_service(not_found.into_service()))
        }
        None => app.fallback(no_ui),
    }
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
                    "this server needs `Authorization: Bearer TOKEN` with the --token it was                      started with",
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

/// The body parsed as `T`, or the error to answer (413 too large, 400 not `T`).
fn parse_body<T: DeserializeOwned>(
    body: std::result::Result<Bytes, BytesRejection>,
    what: &str,
) -> std::result::Result<T, (StatusCode, ApiError)> {
    let bytes = body.map_err(|rejection| {
        let status = rejection.status();
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!("the request body is larger than {MAX_REQUEST_BYTES} bytes")
        } else {
            format!("cannot read the request body: {}", rejection.body_text())
        };
        (status, ApiError::bad_input(message))
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            ApiError::bad_input(format!("the body is not {what}: {e}")),
        )
    })
}

/// Sends `request` to the compute process and waits for its result (events are dropped).
async fn blocking_call(
    compute: Sidecar,
    request: Request,
) -> std::result::Result<serde_json::Value, ApiError> {
    tokio::task::spawn_blocking(move || compute.call(request, &mut |_| {}))
        .await
        .unwrap_or_else(|e| {
            Err(ApiError::runtime(format!(
                "the request did not finish: {e}"
            )))
        })
}

fn result_response(result: std::result::Result<serde_json::Value, ApiError>) -> Response {
    match result {
        Ok(v) => json_response(StatusCode::OK, v.to_string()),
        Err(e) => error_response(status_of(e.code), &e),
    }
}

async fn api_call(
    State(s): State<AppState>,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Response {
    match parse_body::<Request>(body, "a request {\"op\":...}") {
        Ok(request) => result_response(blocking_call(s.compute, request).await),
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
async fn api_job(
    State(s): State<AppState>,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Response {
    let request: Request = match parse_body(body, "a request {\"op\":...}") {
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

async fn not_found(uri: Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!("not found: {}\n", uri.path()),
    )
        .into_response()
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
