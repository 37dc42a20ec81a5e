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
//!   request from another page gets through without a preflight); a request with two `Host`,
//!   two `Origin` or two `Content-Type` headers gets 400. Every /api refusal is an [`ApiError`] JSON.
//!
//!   Limits (`http/limits.rs` and `http/conns.rs` name each; docs/serve.md states them too):
//!   - a body is at most 32 MiB (the core's `MAX_REQUEST_BYTES`; 413 above), and the stdio
//!     line that carries it to the compute process fits that process's `MAX_LINE_BYTES`
//!     (the body plus 64 KiB for its envelope): a request whose line would not fit gets an
//!     error reply from the supervisor, never silence;
//!   - a client has 10 s to send a request's head (2 s when its connection arrives while the
//!     server is under pressure: over half its connections, or half its address's share,
//!     open) and 60 s for its body, which must come at 16 KiB a second at least after its
//!     first 2 s (408 otherwise, and the connection is closed);
//!   - at start the server raises its soft open-file limit to the hard one and serves at most
//!     half that many connections (at most 4096), a quarter of them from one client address
//!     (loopback included); a new connection takes the place of the one waiting longest for
//!     a head (else for a body) from its address, or from any when the server is full, so
//!     slow clients cannot hold every slot; connections answering requests are never dropped
//!     (when they fill every slot, new clients wait in the listen queue, or get 503 when
//!     their address has its share);
//!   - bodies over 64 KiB share 256 MiB of memory, a quarter of it at most for one client
//!     address (taken from the announced length, or as the body grows, before it is read; 503
//!     when it cannot be had within 60 s); large requests
//!     are parsed and encoded on threads of lower priority, and the memory they used is given
//!     back to the system after them;
//!   - at most 32 requests (half the compute process's workers) and 4 `cancel`s go to the
//!     compute process at once; the others queue at the door, in order, up to 60 s (then
//!     503), so a burst of `doctor` calls never meets the compute process's `busy`;
//!   - over HTTP, `peer_set_python` accepts only an interpreter the server found itself
//!     (`python3` on PATH, `$SHOWDOWN_PYTHON`, the peer venv, `--python`): 403 otherwise;
//!   - `GET /api/compute` and the static files never wait on the compute process: the
//!     supervisor writes requests on a thread of its own and keeps the process's state where
//!     it can be read without a lock.

use std::any::Any;
use std::convert::Infallible;
use std::io::{self, BufRead, Read, Write};
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
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
use http_body_util::BodyExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use showdown_supervisor::Sidecar;
use tower_http::services::ServeDir;

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
    /// An interpreter that HTTP clients may choose for the PyTorch peer, besides those the
    /// server finds itself (`python3` on PATH, `$SHOWDOWN_PYTHON`, `target/peer-venv`);
    /// repeatable. Any other path is settable only through the CLI or the desktop app.
    #[arg(long, value_name = "PYTHON", conflicts_with = "stdio")]
    python: Vec<PathBuf>,
}

impl ServeArgs {
    /// Whether this is the HTTP door (`--http`): the one a person starts and stops with Ctrl-C
    /// (`--stdio` is a compute process whose parent stops it).
    pub fn is_http(&self) -> bool {
        self.http.is_some()
    }
}

/// Runs `showdown serve`.
pub fn run(a: ServeArgs) -> Result<()> {
    match a.http {
        Some(addr) => http::http(addr, a.token, a.ui_dir, a.allow_origin, a.python),
        None => stdio::stdio(),
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

mod http;
mod stdio;

use compute::sync::lock;

/// A diagnostic on stderr, best effort: a closed or full stderr never stops `serve`
/// (`eprintln!` would panic).
fn note(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr(), "{message}");
}
