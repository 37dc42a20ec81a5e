//! The HTTP door: browser mode over a supervised compute process.

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
}

/// The interpreters the server found itself, which an HTTP client may choose for the PyTorch
/// peer (`peer_set_python`): `python3` on PATH, `$SHOWDOWN_PYTHON`, the project's peer venv
/// (`target/peer-venv/bin/python`) and each `--python` given at start-up. Any other path is
/// settable only through the CLI or the desktop app: a token holder or a same-origin page
/// must not make the server run any executable of the machine (issue 38, defect 5).
#[derive(Debug, Default)]
struct KnownPythons {
    /// Each as named (shown in the refusal), and its file resolved (compared).
    known: Vec<(String, PathBuf)>,
}

/// The project's peer venv's interpreter (`cargo xtask` makes it), relative to the folder
/// the server runs in.
const PEER_VENV_PYTHON: &str = "target/peer-venv/bin/python";

impl KnownPythons {
    /// The interpreters found now, with `extra` (the `--python` flags).
    fn find(extra: &[PathBuf]) -> Self {
        let mut names: Vec<String> = vec!["python3".into(), PEER_VENV_PYTHON.into()];
        if let Some(p) = std::env::var_os("SHOWDOWN_PYTHON") {
            names.push(p.to_string_lossy().into_owned());
        }
        names.extend(extra.iter().map(|p| p.display().to_string()));
        Self::of(names)
    }

    /// `names`, those that name an interpreter file.
    fn of(names: Vec<String>) -> Self {
        let known = names
            .into_iter()
            .filter_map(|name| {
                let file = compute::lab::peers::resolve_python(name.trim())?;
                Some((name, file.canonicalize().ok()?))
            })
            .collect();
        KnownPythons { known }
    }

    /// Refuses a `peer_set_python` naming an interpreter the server did not find; clearing
    /// the choice is always allowed.
    fn check(&self, request: &Request) -> std::result::Result<(), ApiError> {
        let Request::PeerSetPython(op) = request else {
            return Ok(());
        };
        let Some(wanted) = op
            .python
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
        else {
            return Ok(());
        };
        let file = compute::lab::peers::resolve_python(wanted).and_then(|f| f.canonicalize().ok());
        if file.is_some_and(|f| self.known.iter().any(|(_, k)| *k == f)) {
            return Ok(());
        }
        let names: Vec<&str> = self.known.iter().map(|(n, _)| n.as_str()).collect();
        Err(ApiError::bad_input(format!(
            "python '{wanted}' is not one of the interpreters this server found ({}): over \
             HTTP the PyTorch peer runs only those; start the server with --python PATH (or \
             SHOWDOWN_PYTHON=PATH) to add one, or choose it in the desktop app",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )))
    }
}

/// Requests (other than `cancel`) this door has at the compute process at once: half its
/// workers ([`MAX_IN_FLIGHT`](super::stdio::MAX_IN_FLIGHT)), so that the door's requests
/// never meet its `busy`; the others queue at the door, in order of arrival (issue 38: 200
/// concurrent `doctor` calls got 17–48 % `409 busy`). A running job holds one turn; a second
/// job gets its turn and then the job slot's own `busy`, as it should.
const AT_ONCE: usize = super::stdio::MAX_IN_FLIGHT / 2;

/// `cancel` requests this door has at the compute process at once: half its room for them
/// ([`CANCEL_ROOM`](super::stdio::CANCEL_ROOM)), the rest for the door's own cancels of jobs
/// whose client went away.
const CANCELS_AT_ONCE: usize = super::stdio::CANCEL_ROOM / 2;

/// How long a request waits at the door for its turn; then 503 (the compute process is
/// wedged, or the server flooded).
const QUEUE_WAIT: Duration = Duration::from_secs(60);

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

/// Connections served at once at most, whatever the descriptor limit (see
/// [`connection_cap`]).
const MAX_CONNECTIONS: usize = 4096;

/// How long a client has to send a request's head; also how long an idle keep-alive
/// connection is kept.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The head timeout instead for a connection that arrives while the server is under pressure:
/// over half its connections open, or over half its client address's share.
const PRESSED_HEADER_TIMEOUT: Duration = Duration::from_secs(2);

/// Sets the header timeout in milliseconds instead (tests).
const HEADER_TIMEOUT_ENV: &str = "SHOWDOWN_HTTP_HEADER_TIMEOUT_MS";

/// How long a client has to send a request's body once its head has come.
const BODY_TIMEOUT: Duration = Duration::from_secs(60);

/// A body must come at [`MIN_BODY_RATE`] at least, counted from this long after its head: a
/// client far below it gets 408 and is dropped early, not at [`BODY_TIMEOUT`].
const BODY_GRACE: Duration = Duration::from_secs(2);

/// See [`BODY_GRACE`], in bytes a second.
const MIN_BODY_RATE: u64 = 16 << 10;

/// Request bodies held in memory at once, all clients together. A body larger than
/// [`SMALL_BODY`] takes its share (from its announced length, or as it grows) before it is
/// read and keeps it until its request is answered; one that cannot get it within
/// [`BODY_TIMEOUT`] gets 503. The server holds at most about twice a body at once (the body
/// then the request parsed from it, the request then its line to the compute process).
const BODY_MEMORY: usize = 256 << 20;

/// The part of [`BODY_MEMORY`] one client address may hold at once: a body takes from it
/// before it takes from the whole, so slow uploads from one address cannot hold the budget
/// that another address's request needs (issue 38: nine slow clients of one address held it
/// all, and another client's 1.2 MB import waited 59 s). Two of the largest bodies fit.
const ADDRESS_BODY_MEMORY: usize = BODY_MEMORY / 4;

/// Each client address's part of [`BODY_MEMORY`], in KiB.
#[derive(Default)]
struct AddressShares {
    by_address: Mutex<HashMap<IpAddr, Arc<Semaphore>>>,
}

impl AddressShares {
    /// Address `addr`'s semaphore (made at its first large body).
    fn of(&self, addr: IpAddr) -> Arc<Semaphore> {
        let mut map = lock(&self.by_address);
        if map.len() >= 1024 {
            // Addresses holding nothing now are forgotten.
            map.retain(|_, s| Arc::strong_count(s) > 1);
        }
        Arc::clone(
            map.entry(addr)
                .or_insert_with(|| Arc::new(Semaphore::new(ADDRESS_BODY_MEMORY >> 10))),
        )
    }
}

/// A body this small needs no share of [`BODY_MEMORY`] (a small call never waits behind large
/// ones; their total is bounded by the connection cap).
const SMALL_BODY: usize = 64 << 10;

/// A body's reader lets other tasks run after copying this much.
const YIELD_EVERY: usize = 256 << 10;

/// After a request this large, the memory freed is given back to the system.
const LARGE_BODY: usize = 1 << 20;

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

/// Connections served at once: half the open-file limit (the other half for the files, pipes
/// and connections being closed), at least 8 and at most [`MAX_CONNECTIONS`].
fn connection_cap(descriptors: Option<usize>) -> usize {
    descriptors.map_or(MAX_CONNECTIONS, |n| (n / 2).clamp(8, MAX_CONNECTIONS))
}

/// Connections one client address may hold at once: a quarter of the cap. A new connection
/// from an address at its share takes the place of that address's connection waiting longest
/// for a request's head (else for its body); see [`Conns::admit`].
fn address_cap(cap: usize) -> usize {
    (cap / 4).max(2)
}

/// Raises the soft limit on open files to the hard limit (best effort) and returns the soft
/// limit then in force, when there is one.
#[cfg(unix)]
fn raise_descriptor_limit() -> Option<usize> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given, which outlives the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit only reads the struct it is given, which outlives the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    (limit.rlim_cur != libc::RLIM_INFINITY)
        .then(|| usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX))
}

#[cfg(not(unix))]
fn raise_descriptor_limit() -> Option<usize> {
    None
}

/// Has the allocator hand blocks of 1 MiB and more straight back to the system when they are
/// freed (glibc raises this threshold after the first large block freed, then keeps the later
/// ones in its heap: 40 bodies of 30 MiB left 1.5 GB resident).
fn return_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Gives the memory the allocator keeps free back to the system (after a large request).
fn trim_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory that the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// What a connection is doing, for choosing one to drop when there is no room: waiting for a
/// request's head (idle, or a slow client), dropped first.
const PHASE_HEAD: u8 = 0;
/// Reading a request's body.
const PHASE_BODY: u8 = 1;

/// Answering a request (its body read): never dropped for room.
const PHASE_BUSY: u8 = 2;

/// How long a new connection may wait for room when every connection of its address is busy
/// or not read yet; then it gets 503.
const ADMIT_WAIT: Duration = Duration::from_millis(250);

/// A connection not read yet this long after it was accepted (a server starved of CPU) may be
/// dropped for room all the same.
const FIRST_READ_WITHIN: Duration = Duration::from_secs(1);

/// One open connection.
struct Conn {
    /// Its place in the order of arrival.
    seq: u64,
    addr: IpAddr,
    /// [`PHASE_HEAD`], [`PHASE_BODY`] or [`PHASE_BUSY`].
    phase: AtomicU8,
    /// The server has read all that the client had sent, at least once (see [`Watched`]):
    /// until then (or [`FIRST_READ_WITHIN`]) the connection has had no chance to be served,
    /// and is not dropped for room.
    drained: AtomicBool,
    /// When it was accepted.
    since: std::time::Instant,
    /// Told when the connection is dropped for room.
    evict: Notify,
}

impl Conn {
    /// Whether it may be dropped to make room: it has had its chance to send, and it is not
    /// answering a request.
    fn droppable(&self) -> bool {
        (self.drained.load(Ordering::SeqCst) || self.since.elapsed() > FIRST_READ_WITHIN)
            && self.phase.load(Ordering::SeqCst) != PHASE_BUSY
    }
}

/// A client's socket, telling its [`Conn`] when a read finds nothing more waiting.
struct Watched {
    stream: tokio::net::TcpStream,
    conn: Arc<Conn>,
}

impl tokio::io::AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let this = self.get_mut();
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        if read.is_pending() {
            this.conn.drained.store(true, Ordering::SeqCst);
        }
        read
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> std::task::Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// The open connections, and the limits they live under.
struct Conns {
    /// All addresses together.
    cap: usize,
    /// One client address.
    per_address: usize,
    table: Mutex<ConnTable>,
    /// New connections waiting for room ([`ADMIT_WAIT`] at most), oldest first, each with the
    /// flag that sends it away: at most `per_address` wait; a newcomer finding the room full
    /// sends the oldest away (a burst of half-sent requests cannot keep a later client out).
    waiting: Mutex<std::collections::VecDeque<Arc<AtomicBool>>>,
}

#[derive(Default)]
struct ConnTable {
    by_address: HashMap<IpAddr, Vec<Arc<Conn>>>,
    total: usize,
    next_seq: u64,
}

impl ConnTable {
    /// Drops the connection waiting longest for a head, else for a body, among those of `addr`
    /// (of every address when `None`); false when none may be dropped (all are answering
    /// requests, or have not been read yet).
    fn evict(&mut self, addr: Option<IpAddr>) -> bool {
        let victim = self
            .by_address
            .iter()
            .filter(|(a, _)| addr.is_none_or(|x| x == **a))
            .flat_map(|(_, list)| list.iter())
            .filter(|c| c.droppable())
            .min_by_key(|c| (c.phase.load(Ordering::SeqCst), c.seq))
            .cloned();
        match victim {
            Some(c) => {
                self.remove(&c);
                c.evict.notify_one();
                true
            }
            None => false,
        }
    }

    fn remove(&mut self, conn: &Arc<Conn>) {
        let Some(list) = self.by_address.get_mut(&conn.addr) else {
            return;
        };
        let Some(i) = list.iter().position(|c| Arc::ptr_eq(c, conn)) else {
            return;
        };
        list.swap_remove(i);
        if list.is_empty() {
            self.by_address.remove(&conn.addr);
        }
        self.total -= 1;
    }
}

impl Conns {
    /// Admits a connection from `addr`: when the address holds its share, or the server its
    /// cap, the connection waiting longest for a head (else a body) there makes room, once the
    /// server has read all it sent ([`Conn::droppable`]). `None` when none of them may be
    /// dropped. With the connection, whether the server is under pressure (over half the
    /// cap, or over half the address's share, open).
    fn admit(&self, addr: IpAddr) -> Option<(Arc<Conn>, bool)> {
        let mut t = lock(&self.table);
        let here = t.by_address.get(&addr).map_or(0, Vec::len);
        let room = if here >= self.per_address {
            t.evict(Some(addr))
        } else if t.total >= self.cap {
            t.evict(None)
        } else {
            true
        };
        if !room {
            return None;
        }
        t.next_seq += 1;
        let conn = Arc::new(Conn {
            seq: t.next_seq,
            addr,
            phase: AtomicU8::new(PHASE_HEAD),
            drained: AtomicBool::new(false),
            since: std::time::Instant::now(),
            evict: Notify::new(),
        });
        let list = t.by_address.entry(addr).or_default();
        list.push(Arc::clone(&conn));
        let here = list.len();
        t.total += 1;
        let pressed = 2 * t.total > self.cap || 2 * here > self.per_address;
        Some((conn, pressed))
    }

    /// Whether every connection the cap allows is open and none may be dropped for room.
    fn full(&self) -> bool {
        let t = lock(&self.table);
        t.total >= self.cap && !t.by_address.values().flatten().any(|c| c.droppable())
    }

    fn close(&self, conn: &Arc<Conn>) {
        lock(&self.table).remove(conn);
    }
}

/// The app, telling its connection's [`Conn`] what it does: a request with a body is
/// [`PHASE_BODY`] until the body is read (see [`read_body`]), then [`PHASE_BUSY`] until its
/// response is sent; then [`PHASE_HEAD`] again.
struct Tracked {
    app: TowerToHyperService<Router>,
    conn: Arc<Conn>,
}

/// A request's connection, in its extensions, for the handlers that read a body.
#[derive(Clone)]
struct ConnOf(Arc<Conn>);

/// A response body that sets its connection back to waiting for a head once it is sent (or
/// dropped); its length and end pass through, so the response keeps its `content-length`.
struct IdleWhenDropped {
    body: Body,
    conn: Arc<Conn>,
}

impl Drop for IdleWhenDropped {
    fn drop(&mut self) {
        self.conn.phase.store(PHASE_HEAD, Ordering::SeqCst);
    }
}

impl hyper::body::Body for IdleWhenDropped {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<std::result::Result<hyper::body::Frame<Self::Data>, Self::Error>>>
    {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

type Answer = Pin<Box<dyn Future<Output = std::result::Result<Response, Infallible>> + Send>>;

impl HyperService<hyper::Request<Incoming>> for Tracked {
    type Response = Response;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, mut req: hyper::Request<Incoming>) -> Answer {
        let phase = if req.body().is_end_stream() {
            PHASE_BUSY
        } else {
            PHASE_BODY
        };
        self.conn.phase.store(phase, Ordering::SeqCst);
        req.extensions_mut().insert(ConnOf(Arc::clone(&self.conn)));
        let answer = self.app.call(req);
        let conn = Arc::clone(&self.conn);
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(move |body| Body::new(IdleWhenDropped { body, conn })))
        })
    }
}

/// Accepts connections and serves each over HTTP/1.1, within [`Conns`]'s limits: a client
/// that does not send a request's head within `header_timeout` (or [`PRESSED_HEADER_TIMEOUT`]
/// under pressure) is disconnected, and a new client takes the place of the one waiting
/// longest for a head or a body, so slow clients cannot hold every descriptor or slot. When
/// no slot may be given up, new clients wait in the kernel's listen queue.
async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: Router,
    conns: Arc<Conns>,
    header_timeout: Duration,
) {
    loop {
        while conns.full() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
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
        if let Some(admitted) = conns.admit(peer.ip()) {
            tokio::spawn(serve_one(
                stream,
                admitted,
                app.clone(),
                Arc::clone(&conns),
                header_timeout,
            ));
        } else {
            // Every connection of its address is busy or not read yet (a burst of them): wait
            // a moment for one to make room, in a waiting room of `per_address` places whose
            // oldest is sent away when a newcomer finds it full.
            let gone = Arc::new(AtomicBool::new(false));
            {
                let mut waiting = lock(&conns.waiting);
                if waiting.len() >= conns.per_address.max(1) {
                    if let Some(oldest) = waiting.pop_front() {
                        oldest.store(true, Ordering::SeqCst);
                    }
                }
                waiting.push_back(Arc::clone(&gone));
            }
            let (app, conns) = (app.clone(), Arc::clone(&conns));
            tokio::spawn(async move {
                let deadline = Instant::now() + ADMIT_WAIT;
                let admitted = loop {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    if gone.load(Ordering::SeqCst) {
                        break None;
                    }
                    match conns.admit(peer.ip()) {
                        Some(admitted) => break Some(admitted),
                        None if Instant::now() >= deadline => break None,
                        None => {}
                    }
                };
                lock(&conns.waiting).retain(|w| !Arc::ptr_eq(w, &gone));
                match admitted {
                    Some(admitted) => serve_one(stream, admitted, app, conns, header_timeout).await,
                    None => refuse(&stream),
                }
            });
        }
    }
}

/// Serves one admitted connection until it closes, times out or is dropped for room.
async fn serve_one(
    stream: tokio::net::TcpStream,
    (conn, pressed): (Arc<Conn>, bool),
    app: Router,
    conns: Arc<Conns>,
    header_timeout: Duration,
) {
    let _ = stream.set_nodelay(true);
    let service = Tracked {
        app: TowerToHyperService::new(app),
        conn: Arc::clone(&conn),
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(if pressed {
            header_timeout.min(PRESSED_HEADER_TIMEOUT)
        } else {
            header_timeout
        });
    let stream = Watched {
        stream,
        conn: Arc::clone(&conn),
    };
    let serving = builder.serve_connection(TokioIo::new(stream), service);
    let evicted = conn.evict.notified();
    // A connection's error (a client gone, a timeout) concerns that client only; one dropped
    // for room is closed here.
    let _ = futures_util::future::select(std::pin::pin!(serving), std::pin::pin!(evicted)).await;
    conns.close(&conn);
}

/// Tells a client that its address holds every connection it may (all answering requests,
/// or just arrived) and hangs up.
fn refuse(stream: &tokio::net::TcpStream) {
    let body = serde_json::to_string(&ApiError::busy(
        "this address holds every connection it may, none of them idle: try again in a moment",
    ))
    .unwrap_or_default();
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    // Best effort: a fresh socket's buffer takes it whole, and nothing waits for it.
    let _ = stream.try_write(reply.as_bytes());
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

/// Refuses a request with two `Host`, two `Origin` or two `Content-Type` headers (RFC 9110
/// and 6454: one at most; a check of the first alone would let the second through, and a body
/// announced as JSON then as `text/plain` is not known to be either).
fn check_single(req: &axum::extract::Request) -> std::result::Result<(), String> {
    for (name, what) in [
        (header::HOST, "Host"),
        (header::ORIGIN, "Origin"),
        (header::CONTENT_TYPE, "Content-Type"),
    ] {
        if req.headers().get_all(&name).iter().nth(1).is_some() {
            return Err(format!(
                "the request has more than one {what} header: send one"
            ));
        }
    }
    Ok(())
}

/// Checks `Host` on every request (one, naming this server), and on /api the `Origin`, that a
/// POST carries JSON and that its announced length is within the limit; every refusal is an
/// [`ApiError`].
async fn guard(State(g): State<Guard>, req: axum::extract::Request, next: Next) -> Response {
    if let Err(why) = check_single(&req) {
        return error_response(StatusCode::BAD_REQUEST, &ApiError::bad_input(why));
    }
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
        } else if announced.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
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
    let (status, e) = too_large_error();
    error_response(status, &e)
}

fn too_large_error() -> (StatusCode, ApiError) {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        ApiError::bad_input(format!(
            "the request body is larger than {MAX_BODY_BYTES} bytes ({} MiB)",
            MAX_BODY_BYTES >> 20
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
            // A file's `NAME.gz` beside it (the UI build writes them) goes to a browser that
            // accepts gzip, with `Content-Encoding: gzip`.
            let files = Router::new()
                .fallback_service(
                    ServeDir::new(d)
                        .precompressed_gzip()
                        .not_found_service(not_found.into_service()),
                )
                .layer(middleware::map_response(vary_accept_encoding))
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

/// A static file's body depends on the request's `Accept-Encoding` (gzip or not): says so to
/// caches (`Vary: Accept-Encoding`).
async fn vary_accept_encoding(mut r: Response) -> Response {
    r.headers_mut().append(
        header::VARY,
        header::HeaderValue::from_static("accept-encoding"),
    );
    r
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
        // A machine without what the operation needs (a GPU): nothing failed, and the client
        // cannot fix it by changing the request.
        ErrorKind::Busy | ErrorKind::Unavailable => StatusCode::CONFLICT,
        // The request was well formed and ran, but its numbers diverged.
        ErrorKind::Diverged => StatusCode::UNPROCESSABLE_ENTITY,
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

/// What a request holds until it is answered: its share of [`BODY_MEMORY`]. Dropped off the
/// runtime, after the call; after a large request it gives the memory freed back to the
/// system.
struct Held {
    share: Option<OwnedSemaphorePermit>,
    /// The same memory, counted in its client address's part.
    address_share: Option<OwnedSemaphorePermit>,
    large: bool,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.share.take();
        self.address_share.take();
        if self.large {
            trim_memory();
        }
    }
}

/// KiB (the unit of [`BODY_MEMORY`]'s semaphore) covering `bytes`.
fn kib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1 << 10)).unwrap_or(u32::MAX)
}

/// Where a body's memory is counted: its client address's part ([`ADDRESS_BODY_MEMORY`]),
/// then the whole ([`BODY_MEMORY`]).
struct BodyMemory {
    address: Option<Arc<Semaphore>>,
    whole: Arc<Semaphore>,
}

/// Takes more of the address's part then of the whole so that `shares` (the same order)
/// cover `want` bytes (they cover `covered`), waiting until `deadline` at most (then 503);
/// answers how long it waited.
async fn reserve(
    memory: &BodyMemory,
    shares: &mut [Option<OwnedSemaphorePermit>; 2],
    covered: &mut usize,
    want: usize,
    deadline: Instant,
) -> std::result::Result<Duration, (StatusCode, ApiError)> {
    let started = Instant::now();
    let more = kib(want).saturating_sub(kib(*covered));
    let mut taken = [None, None];
    for (i, semaphore) in [memory.address.as_ref(), Some(&memory.whole)]
        .into_iter()
        .enumerate()
    {
        let Some(semaphore) = semaphore else {
            continue;
        };
        let permit =
            tokio::time::timeout_at(deadline, Arc::clone(semaphore).acquire_many_owned(more))
                .await
                .ok()
                .and_then(|permit| permit.ok());
        let Some(permit) = permit else {
            // What was taken here goes back with `taken`.
            let (held, whose) = if i == 0 {
                (ADDRESS_BODY_MEMORY, "from this client address")
            } else {
                (BODY_MEMORY, "in all")
            };
            return Err((
                StatusCode::SERVICE_UNAVAILABLE,
                ApiError::busy(format!(
                    "the server holds {} MiB of request bodies {whose} already and this one \
                     did not fit within {} s: try again in a moment",
                    held >> 20,
                    BODY_TIMEOUT.as_secs()
                )),
            ));
        };
        taken[i] = Some(permit);
    }
    for (share, permit) in shares.iter_mut().zip(taken) {
        match (share.as_mut(), permit) {
            (Some(s), Some(p)) => s.merge(p),
            (None, p) => *share = p,
            (Some(_), None) => {}
        }
    }
    *covered = want;
    Ok(started.elapsed())
}

/// A request's body, read within the limits: at most [`MAX_BODY_BYTES`] (413), at
/// [`MIN_BODY_RATE`] after [`BODY_GRACE`] and whole within [`BODY_TIMEOUT`] (408), within
/// [`BODY_MEMORY`] (503); with the share of memory it holds. Sets `conn` to answering once
/// the body is read (or refused).
async fn read_body(
    body: Body,
    memory: &BodyMemory,
    conn: Option<&ConnOf>,
) -> std::result::Result<(Vec<u8>, Held), (StatusCode, ApiError)> {
    let read = read_body_within_limits(body, memory).await;
    if let Some(ConnOf(c)) = conn {
        c.phase.store(PHASE_BUSY, Ordering::SeqCst);
    }
    read
}

async fn read_body_within_limits(
    mut body: Body,
    memory: &BodyMemory,
) -> std::result::Result<(Vec<u8>, Held), (StatusCode, ApiError)> {
    let start = Instant::now();
    let deadline = start + BODY_TIMEOUT;
    let announced = body.size_hint().exact();
    if announced.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large_error());
    }
    let announced = announced.map_or(0, |n| n as usize);
    let mut shares = [None, None];
    let mut covered = 0;
    // Time spent waiting for memory is the server's, not the client's: it does not count
    // against the client's rate.
    let mut waited = Duration::ZERO;
    if announced > SMALL_BODY {
        waited += reserve(memory, &mut shares, &mut covered, announced, deadline).await?;
    }
    let mut bytes = Vec::with_capacity(announced);
    let mut since_yield = 0;
    loop {
        let keeping_up = Duration::from_secs_f64(bytes.len() as f64 / MIN_BODY_RATE as f64);
        let due = (start + waited + BODY_GRACE + keeping_up).min(deadline);
        let frame = match tokio::time::timeout_at(due, body.frame()).await {
            Ok(Some(Ok(frame))) => frame,
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err((
                    StatusCode::BAD_REQUEST,
                    ApiError::bad_input(format!("cannot read the request body: {e}")),
                ))
            }
            Err(_) if due >= deadline => {
                return Err((
                    StatusCode::REQUEST_TIMEOUT,
                    ApiError::bad_input(format!(
                        "the request body did not arrive within {} s",
                        BODY_TIMEOUT.as_secs()
                    )),
                ))
            }
            Err(_) => {
                return Err((
                    StatusCode::REQUEST_TIMEOUT,
                    ApiError::bad_input(format!(
                        "the request body came slower than {} KiB a second (after {} s): \
                         send it at once",
                        MIN_BODY_RATE >> 10,
                        BODY_GRACE.as_secs()
                    )),
                ))
            }
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        let total = bytes.len() + data.len();
        if total > MAX_BODY_BYTES {
            return Err(too_large_error());
        }
        if total > SMALL_BODY.max(covered) {
            // No length announced (or more than announced): take memory as the body grows,
            // for what the buffer will hold.
            let want = total.next_power_of_two().min(MAX_BODY_BYTES);
            waited += reserve(memory, &mut shares, &mut covered, want, deadline).await?;
        }
        bytes.extend_from_slice(&data);
        since_yield += data.len();
        if since_yield >= YIELD_EVERY {
            // A fast client's frames are always ready: let the other connections' tasks run
            // (tokio would let this one copy tens of MiB first).
            since_yield = 0;
            tokio::task::yield_now().await;
        }
    }
    let large = bytes.len() >= LARGE_BODY;
    let [address_share, share] = shares;
    Ok((
        bytes,
        Held {
            share,
            address_share,
            large,
        },
    ))
}

/// An error about a request's body, closing the connection (the rest of the body is not read).
fn body_error(status: StatusCode, e: &ApiError) -> Response {
    let mut r = error_response(status, e);
    r.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    r
}

/// Starts `work` off the async runtime: on a blocking thread, or for a large request's work
/// (parsing or encoding tens of MiB) on a thread of its own at a lower priority, so that the
/// runtime and small requests keep answering at once while it runs.
fn start_off_runtime(
    large: bool,
    work: impl FnOnce() + Send + 'static,
) -> std::result::Result<(), ApiError> {
    if !large {
        drop(tokio::task::spawn_blocking(work));
        return Ok(());
    }
    std::thread::Builder::new()
        .name("large-request".into())
        .spawn(move || {
            lower_priority();
            work();
        })
        .map(drop)
        .map_err(|e| ApiError::runtime(format!("cannot start a thread for the request: {e}")))
}

/// Runs `work` as [`start_off_runtime`] does and waits for its result.
async fn off_runtime<T: Send + 'static>(
    large: bool,
    work: impl FnOnce() -> T + Send + 'static,
) -> std::result::Result<T, ApiError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    start_off_runtime(large, move || {
        let _ = tx.send(work());
    })?;
    rx.await.map_err(|_| {
        ApiError::runtime("the request stopped before its end (a bug; please report it)")
    })
}

/// Lowers the calling thread's scheduling priority (nice 10), best effort.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no preconditions; setpriority with this thread's own id changes its
    // niceness only.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}

/// The request in `bytes`, parsed (off the runtime when more than [`SMALL_BODY`], so the
/// runtime never waits for it), `bytes` dropped once parsed; or the 400 to answer.
async fn parse_request(
    bytes: Vec<u8>,
    held: Held,
) -> std::result::Result<(Request, Held), (StatusCode, ApiError)> {
    let small = bytes.len() <= SMALL_BODY;
    let large = held.large;
    let parse = move || {
        // The core's strict reading, as every door: errors name the field by its path.
        let parsed = compute::protocol::parse_request(&bytes);
        drop(bytes);
        match parsed {
            Ok(request) => Ok((request, held)),
            Err(e) => Err((StatusCode::BAD_REQUEST, e)),
        }
    };
    if small {
        return parse();
    }
    off_runtime(large, parse)
        .await
        .unwrap_or_else(|e| Err((StatusCode::INTERNAL_SERVER_ERROR, e)))
}

/// The request in an `/api` body, with what it holds until answered; or the response to give.
async fn receive(
    s: &AppState,
    req: axum::extract::Request,
) -> std::result::Result<(Request, Held), Response> {
    let (parts, body) = req.into_parts();
    let conn = parts.extensions.get::<ConnOf>();
    let memory = BodyMemory {
        address: conn.map(|ConnOf(c)| s.address_bodies.of(c.addr)),
        whole: Arc::clone(&s.bodies),
    };
    let (bytes, held) = read_body(body, &memory, conn)
        .await
        .map_err(|(status, e)| body_error(status, &e))?;
    let (request, held) = parse_request(bytes, held)
        .await
        .map_err(|(status, e)| error_response(status, &e))?;
    s.pythons
        .check(&request)
        .map_err(|e| error_response(StatusCode::FORBIDDEN, &e))?;
    Ok((request, held))
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

/// Waits for `request`'s turn at the compute process (see [`AT_ONCE`]), at most
/// [`QUEUE_WAIT`]; the turn is held until the compute process has answered.
async fn take_turn(
    s: &AppState,
    request: &Request,
) -> std::result::Result<OwnedSemaphorePermit, (StatusCode, ApiError)> {
    let turns = if matches!(request, Request::Cancel(_)) {
        &s.cancel_turns
    } else {
        &s.turns
    };
    tokio::time::timeout(QUEUE_WAIT, Arc::clone(turns).acquire_owned())
        .await
        .ok()
        .and_then(|permit| permit.ok())
        .ok_or_else(|| {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiError::busy(format!(
                    "the request waited {} s for the compute process behind others: try again \
                     in a moment",
                    QUEUE_WAIT.as_secs()
                )),
            )
        })
}

/// Sends `request` to the compute process and waits for its result (events are dropped); a
/// job is cancelled when the client goes away first (see [`CancelOnDrop`]). `turn` is given
/// back once the compute process has answered.
async fn call_for_client(
    compute: Sidecar,
    request: Request,
    held: Held,
    turn: OwnedSemaphorePermit,
) -> std::result::Result<serde_json::Value, ApiError> {
    let watch = Arc::new(CallWatch::default());
    let mut on_drop = CancelOnDrop {
        compute: compute.clone(),
        watch: Arc::clone(&watch),
        armed: request.is_job(),
    };
    let result = off_runtime(held.large, move || {
        let canceller = compute.clone();
        let result = compute.call(request, &mut |_| {
            watch.started.store(true, Ordering::SeqCst);
            if watch.gone.load(Ordering::SeqCst) {
                watch.cancel_once(&canceller);
            }
        });
        drop(held);
        drop(turn);
        result
    })
    .await
    .unwrap_or_else(Err);
    on_drop.armed = false;
    result
}

fn result_response(result: std::result::Result<serde_json::Value, ApiError>) -> Response {
    match result {
        Ok(v) => json_response(StatusCode::OK, v.to_string()),
        Err(e) => error_response(status_of(e.code), &e),
    }
}

async fn api_call(State(s): State<AppState>, req: axum::extract::Request) -> Response {
    let (request, held) = match receive(&s, req).await {
        Ok(received) => received,
        Err(response) => return response,
    };
    match take_turn(&s, &request).await {
        Ok(turn) => result_response(call_for_client(s.compute, request, held, turn).await),
        Err((status, e)) => error_response(status, &e),
    }
}

/// The compute process's state: `{program, running, pid, crashes}`. Never waits on the compute
/// process ([`Sidecar::status`] reads what the supervisor recorded), so it answers at once
/// while the compute process is busy.
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
async fn api_job(State(s): State<AppState>, req: axum::extract::Request) -> Response {
    let (request, held) = match receive(&s, req).await {
        Ok(received) => received,
        Err(response) => return response,
    };
    let turn = match take_turn(&s, &request).await {
        Ok(turn) => turn,
        Err((status, e)) => return error_response(status, &e),
    };
    let id = s.next_id.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Reply>();
    let compute = s.compute.clone();
    let large = held.large;
    let started = start_off_runtime(large, move || {
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
        drop(held);
        drop(turn);
        // The client may be gone; nobody is left to tell.
        let _ = tx.send(reply_of(id, result));
    });
    if let Err(e) = started {
        return error_response(StatusCode::INTERNAL_SERVER_ERROR, &e);
    }
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
/// symlink, outside `root`, the canonical `--ui-dir`, and for one that cannot be read; the
/// rest goes on to `ServeDir`.
async fn stay_inside(
    State(root): State<Arc<Path>>,
    req: axum::extract::Request,
    next: Next,
) -> Response {
    let uri = req.uri().clone();
    let path = uri.path().to_string();
    let outside = tokio::task::spawn_blocking(move || leaves(&root, &path))
        .await
        .unwrap_or(true);
    if outside {
        return not_found(uri).await;
    }
    let response = next.run(req).await;
    if response.status().is_server_error() {
        // `ServeDir` answers an empty 500 for an I/O error other than "not found": a name the
        // system refuses (over 255 bytes: ENAMETOOLONG), a file it cannot read. No such page.
        return not_found(uri).await;
    }
    response
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
    // The gzip copy `ServeDir` sends instead (`precompressed_gzip`) must stay inside too.
    let gz = |p: &Path| {
        let mut name = p.as_os_str().to_os_string();
        name.push(".gz");
        PathBuf::from(name)
    };
    let index = file.join("index.html");
    outside(&file)
        || outside(&gz(&file))
        || (file.is_dir() && (outside(&index) || outside(&gz(&index))))
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

    /// Regression (issue 38, defect 9): `Content-Type: application/json` then
    /// `Content-Type: text/plain` got 200, only the first being read; now 400 naming it.
    #[test]
    fn two_content_type_headers_are_refused() {
        let req = axum::http::Request::builder()
            .method(Method::POST)
            .uri("/api/call")
            .header(header::HOST, "127.0.0.1:8080")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_TYPE, "text/plain")
            .body(Body::empty())
            .unwrap();
        let why = check_single(&req).unwrap_err();
        assert!(why.contains("more than one Content-Type header"), "{why}");
        let one = axum::http::Request::builder()
            .method(Method::POST)
            .uri("/api/call")
            .header(header::HOST, "127.0.0.1:8080")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::empty())
            .unwrap();
        assert!(check_single(&one).is_ok());
    }

    /// Regression (issue 38, smaller items): a GPU-only operation on a machine without a GPU
    /// answered 500 ("cuda backend: no CUDA driver…"), and a diverged duel 500 with the CLI's
    /// "lower --lr"; now 409 saying what is missing, and 422 naming the request's field.
    #[test]
    fn gpu_only_ops_without_a_gpu_are_409_and_a_diverged_duel_is_422_with_the_doors_advice() {
        let missing = ApiError::from(&ComputeError::Unavailable {
            backend: "cuda".into(),
            reason: "no CUDA driver: libcuda.so not found".into(),
        });
        assert_eq!(status_of(missing.code), StatusCode::CONFLICT);
        assert!(missing.message.contains("no CUDA driver"), "{missing}");
        let diverged = ApiError::from(&ComputeError::Diverged {
            precision: "fp32".into(),
            epoch: 1,
            step: 3,
            loss: "NaN".into(),
        });
        assert_eq!(status_of(diverged.code), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(!diverged.message.contains("--lr"), "{diverged}");
        assert!(diverged.message.contains("config.lr"), "{diverged}");
        assert_eq!(
            status_of(ErrorKind::Runtime),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }

    /// Regression (issue 38, defect 5): over HTTP `peer_set_python` accepted any executable
    /// of the machine, which the next `peer_status` ran. Only the interpreters the server
    /// found itself are accepted now (clearing the choice always is).
    #[test]
    fn peer_set_python_over_http_accepts_only_interpreters_the_server_found() {
        let dir = tempfile::tempdir().unwrap();
        let python = dir.path().join("python");
        std::fs::write(&python, "#!/bin/sh\n").unwrap();
        let known = KnownPythons::of(vec![python.display().to_string()]);
        let set = |p: Option<&str>| {
            Request::from(compute::protocol::PeerSetPythonRequest {
                python: p.map(str::to_string),
            })
        };
        assert!(known
            .check(&set(Some(&python.display().to_string())))
            .is_ok());
        assert!(known.check(&set(None)).is_ok());
        let e = known.check(&set(Some("/bin/sh"))).unwrap_err();
        assert_eq!(e.code, ErrorKind::BadInput);
        assert!(e.message.contains("'/bin/sh' is not one of"), "{e}");
        assert!(known.check(&Request::from(CancelRequest {})).is_ok());
    }

    /// Regression (issue 38, defect 8): nine slow clients of one address announcing 30 MiB
    /// bodies held the whole 256 MiB budget, and another client's 1.2 MB import waited 59 s.
    /// An address holds at most its part now: the other address gets its memory at once.
    #[test]
    fn slow_uploads_from_one_address_cannot_hold_the_whole_body_budget() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let whole = Arc::new(Semaphore::new(BODY_MEMORY >> 10));
            let shares = AddressShares::default();
            let (a, b): (IpAddr, IpAddr) =
                ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
            let of = |addr| BodyMemory {
                address: Some(shares.of(addr)),
                whole: Arc::clone(&whole),
            };
            let soon = || Instant::now() + Duration::from_millis(200);
            let mut held = Vec::new();
            let mut refused = 0;
            for _ in 0..9 {
                let mut s = [None, None];
                let mut covered = 0;
                match reserve(&of(a), &mut s, &mut covered, 30 << 20, soon()).await {
                    Ok(_) => held.push(s),
                    Err((status, _)) => {
                        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
                        refused += 1;
                    }
                }
            }
            assert_eq!(held.len(), ADDRESS_BODY_MEMORY / (30 << 20));
            assert_eq!(refused, 9 - held.len());
            let mut s = [None, None];
            let mut covered = 0;
            let waited = reserve(&of(b), &mut s, &mut covered, 1_200_000, soon())
                .await
                .unwrap();
            assert!(waited < Duration::from_millis(100), "{waited:?}");
        });
    }

    #[test]
    fn a_token_is_percent_encoded_for_the_url_it_is_printed_in() {
        assert_eq!(url_encode("s3cret-_.~"), "s3cret-_.~");
        assert_eq!(url_encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
