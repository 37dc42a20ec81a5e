//! The waiting room: connections admitted within the cap (a quarter of it per client address),
//! the slowest dropped for room, heads timed, and the connection loop.

use super::*;

/// Connections served at once at most, whatever the descriptor limit (see
/// [`connection_cap`]).
pub(super) const MAX_CONNECTIONS: usize = 4096;

/// How long a client has to send a request's head; also how long an idle keep-alive
/// connection is kept.
pub(super) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The head timeout instead for a connection that arrives while the server is under pressure:
/// over half its connections open, or over half its client address's share.
pub(super) const PRESSED_HEADER_TIMEOUT: Duration = Duration::from_secs(2);

/// Sets the header timeout in milliseconds instead (tests).
pub(super) const HEADER_TIMEOUT_ENV: &str = "SHOWDOWN_HTTP_HEADER_TIMEOUT_MS";

pub(super) fn header_timeout() -> Result<Duration> {
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
pub(super) fn connection_cap(descriptors: Option<usize>) -> usize {
    descriptors.map_or(MAX_CONNECTIONS, |n| (n / 2).clamp(8, MAX_CONNECTIONS))
}

/// Connections one client address may hold at once: a quarter of the cap. A new connection
/// from an address at its share takes the place of that address's connection waiting longest
/// for a request's head (else for its body); see [`Conns::admit`].
pub(super) fn address_cap(cap: usize) -> usize {
    (cap / 4).max(2)
}

/// Raises the soft limit on open files to the hard limit (best effort) and returns the soft
/// limit then in force, when there is one.
#[cfg(unix)]
pub(super) fn raise_descriptor_limit() -> Option<usize> {
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
pub(super) fn raise_descriptor_limit() -> Option<usize> {
    None
}

/// What a connection is doing, for choosing one to drop when there is no room: waiting for a
/// request's head (idle, or a slow client), dropped first.
pub(super) const PHASE_HEAD: u8 = 0;
/// Reading a request's body.
pub(super) const PHASE_BODY: u8 = 1;

/// Answering a request (its body read): never dropped for room.
pub(super) const PHASE_BUSY: u8 = 2;

/// How long a new connection may wait for room when every connection of its address is busy
/// or not read yet; then it gets 503.
pub(super) const ADMIT_WAIT: Duration = Duration::from_millis(250);

/// A connection not read yet this long after it was accepted (a server starved of CPU) may be
/// dropped for room all the same.
pub(super) const FIRST_READ_WITHIN: Duration = Duration::from_secs(1);

/// One open connection.
pub(super) struct Conn {
    /// Its place in the order of arrival.
    pub(super) seq: u64,
    pub(super) addr: IpAddr,
    /// [`PHASE_HEAD`], [`PHASE_BODY`] or [`PHASE_BUSY`].
    pub(super) phase: AtomicU8,
    /// The server has read all that the client had sent, at least once (see [`Watched`]):
    /// until then (or [`FIRST_READ_WITHIN`]) the connection has had no chance to be served,
    /// and is not dropped for room.
    pub(super) drained: AtomicBool,
    /// When it was accepted.
    pub(super) since: std::time::Instant,
    /// Told when the connection is dropped for room.
    pub(super) evict: Notify,
}

impl Conn {
    /// Whether it may be dropped to make room: it has had its chance to send, and it is not
    /// answering a request.
    pub(super) fn droppable(&self) -> bool {
        (self.drained.load(Ordering::SeqCst) || self.since.elapsed() > FIRST_READ_WITHIN)
            && self.phase.load(Ordering::SeqCst) != PHASE_BUSY
    }
}

/// A client's socket, telling its [`Conn`] when a read finds nothing more waiting.
pub(super) struct Watched {
    pub(super) stream: tokio::net::TcpStream,
    pub(super) conn: Arc<Conn>,
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
pub(super) struct Conns {
    /// All addresses together.
    pub(super) cap: usize,
    /// One client address.
    pub(super) per_address: usize,
    pub(super) table: Mutex<ConnTable>,
    /// New connections waiting for room ([`ADMIT_WAIT`] at most), oldest first, each with the
    /// flag that sends it away: at most `per_address` wait; a newcomer finding the room full
    /// sends the oldest away (a burst of half-sent requests cannot keep a later client out).
    pub(super) waiting: Mutex<std::collections::VecDeque<Arc<AtomicBool>>>,
}

#[derive(Default)]
pub(super) struct ConnTable {
    pub(super) by_address: HashMap<IpAddr, Vec<Arc<Conn>>>,
    pub(super) total: usize,
    pub(super) next_seq: u64,
}

impl ConnTable {
    /// Drops the connection waiting longest for a head, else for a body, among those of `addr`
    /// (of every address when `None`); false when none may be dropped (all are answering
    /// requests, or have not been read yet).
    pub(super) fn evict(&mut self, addr: Option<IpAddr>) -> bool {
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

    pub(super) fn remove(&mut self, conn: &Arc<Conn>) {
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
    pub(super) fn admit(&self, addr: IpAddr) -> Option<(Arc<Conn>, bool)> {
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
    pub(super) fn full(&self) -> bool {
        let t = lock(&self.table);
        t.total >= self.cap && !t.by_address.values().flatten().any(|c| c.droppable())
    }

    pub(super) fn close(&self, conn: &Arc<Conn>) {
        lock(&self.table).remove(conn);
    }
}

/// The app, telling its connection's [`Conn`] what it does: a request with a body is
/// [`PHASE_BODY`] until the body is read (see [`read_body`]), then [`PHASE_BUSY`] until its
/// response is sent; then [`PHASE_HEAD`] again.
pub(super) struct Tracked {
    pub(super) app: TowerToHyperService<Router>,
    pub(super) conn: Arc<Conn>,
}

/// A request's connection, in its extensions, for the handlers that read a body.
#[derive(Clone)]
pub(super) struct ConnOf(pub(super) Arc<Conn>);

/// A response body that sets its connection back to waiting for a head once it is sent (or
/// dropped); its length and end pass through, so the response keeps its `content-length`.
pub(super) struct IdleWhenDropped {
    pub(super) body: Body,
    pub(super) conn: Arc<Conn>,
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

pub(super) type Answer =
    Pin<Box<dyn Future<Output = std::result::Result<Response, Infallible>> + Send>>;

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
pub(super) async fn serve_connections(
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
pub(super) async fn serve_one(
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
pub(super) fn refuse(stream: &tokio::net::TcpStream) {
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
