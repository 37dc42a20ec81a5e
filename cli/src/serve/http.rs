//! The HTTP door: browser mode over a supervised compute process.
//!
//! By concern: [`guard`] (who may reach the server: `Host`, `Origin`, JSON, single headers,
//! the token), [`conns`] (the waiting room: connections admitted, timed and dropped for room),
//! [`limits`] (request bodies within their limits and the memory they share), [`routes`] (the
//! router, the replies and their status codes), [`jobs`] (calls and job streams to the compute
//! process, each waiting for its turn) and [`files`] (the web UI's static files). This module
//! holds the server's state and starts it.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::AtomicU8;

use compute::protocol::MAX_REQUEST_BYTES as MAX_BODY_BYTES;
use hyper::body::{Body as _, Incoming};
use hyper::service::Service as HyperService;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::*;

mod conns;
mod files;
mod guard;
mod jobs;
mod limits;
mod routes;

use conns::*;
use files::*;
use guard::*;
use jobs::*;
use limits::*;
use routes::*;

// HTTP

#[derive(Clone)]
struct AppState {
    token: Option<Arc<str>>,
    next_id: Arc<AtomicU64>,
    /// The supervised compute process (`showdown serve --stdio`).
    compute: Sidecar,
    /// What is left of [`BODY_MEMORY`], in KiB: a body larger than [`SMALL_BODY`] holds its
    /// share from its head until its request is answered.
    bodies: Arc<Semaphore>,
    /// What is left of each client address's part of [`BODY_MEMORY`] ([`ADDRESS_BODY_MEMORY`]).
    address_bodies: Arc<AddressShares>,
    /// Turns at the compute process for requests other than `cancel` ([`AT_ONCE`]): a request
    /// waits here for one (at most [`QUEUE_WAIT`]) instead of meeting the compute process's
    /// `busy`.
    turns: Arc<Semaphore>,
    /// Turns for `cancel` ([`CANCELS_AT_ONCE`]).
    cancel_turns: Arc<Semaphore>,
    /// The interpreters an HTTP client may choose for the PyTorch peer ([`KnownPythons`]).
    pythons: Arc<KnownPythons>,
    /// The last `doctor` answer, which concurrent `doctor` calls share ([`shared_doctor`]).
    doctor: Arc<tokio::sync::Mutex<Option<(Instant, serde_json::Value)>>>,
}

pub(super) fn http(
    addr: SocketAddr,
    token: Option<String>,
    ui_dir: Option<PathBuf>,
    allow_origin: Vec<String>,
    pythons: Vec<PathBuf>,
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
        bodies: Arc::new(Semaphore::new(BODY_MEMORY >> 10)),
        address_bodies: Arc::new(AddressShares::default()),
        turns: Arc::new(Semaphore::new(AT_ONCE)),
        cancel_turns: Arc::new(Semaphore::new(CANCELS_AT_ONCE)),
        pythons: Arc::new(KnownPythons::find(&pythons)),
        doctor: Arc::new(tokio::sync::Mutex::new(None)),
    };
    return_large_blocks();
    let cap = connection_cap(raise_descriptor_limit());
    let conns = Arc::new(Conns {
        cap,
        per_address: address_cap(cap),
        table: Mutex::new(ConnTable::default()),
        waiting: Mutex::new(std::collections::VecDeque::new()),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Each request waiting on the compute process holds a blocking thread: room for one a
        // connection, and for the static files' reads beside them.
        .max_blocking_threads(cap + 64)
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
        serve_connections(listener, app, conns, header_timeout).await;
        Ok(())
    })
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
