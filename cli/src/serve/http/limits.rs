//! Request bodies within their limits: size, time, rate, and the memory they share (per client
//! address and in all); large requests parsed off the runtime and their memory given back.

use super::*;

/// How long a client has to send a request's body once its head has come.
pub(super) const BODY_TIMEOUT: Duration = Duration::from_secs(60);

/// A body must come at [`MIN_BODY_RATE`] at least, counted from this long after its head: a
/// client far below it gets 408 and is dropped early, not at [`BODY_TIMEOUT`].
pub(super) const BODY_GRACE: Duration = Duration::from_secs(2);

/// See [`BODY_GRACE`], in bytes a second.
pub(super) const MIN_BODY_RATE: u64 = 16 << 10;

/// Request bodies held in memory at once, all clients together. A body larger than
/// [`SMALL_BODY`] takes its share (from its announced length, or as it grows) before it is
/// read and keeps it until its request is answered; one that cannot get it within
/// [`BODY_TIMEOUT`] gets 503. The server holds at most about twice a body at once (the body
/// then the request parsed from it, the request then its line to the compute process).
pub(super) const BODY_MEMORY: usize = 256 << 20;

/// The part of [`BODY_MEMORY`] one client address may hold at once: a body takes from it
/// before it takes from the whole, so slow uploads from one address cannot hold the budget
/// that another address's request needs (issue 38: nine slow clients of one address held it
/// all, and another client's 1.2 MB import waited 59 s). Two of the largest bodies fit.
pub(super) const ADDRESS_BODY_MEMORY: usize = BODY_MEMORY / 4;

/// Each client address's part of [`BODY_MEMORY`], in KiB.
#[derive(Default)]
pub(super) struct AddressShares {
    pub(super) by_address: Mutex<HashMap<IpAddr, Arc<Semaphore>>>,
}

impl AddressShares {
    /// Address `addr`'s semaphore (made at its first large body).
    pub(super) fn of(&self, addr: IpAddr) -> Arc<Semaphore> {
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
pub(super) const SMALL_BODY: usize = 64 << 10;

/// A body's reader lets other tasks run after copying this much.
pub(super) const YIELD_EVERY: usize = 256 << 10;

/// After a request this large, the memory freed is given back to the system.
pub(super) const LARGE_BODY: usize = 1 << 20;

/// Has the allocator hand blocks of 1 MiB and more straight back to the system when they are
/// freed (glibc raises this threshold after the first large block freed, then keeps the later
/// ones in its heap: 40 bodies of 30 MiB left 1.5 GB resident).
pub(super) fn return_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Gives the memory the allocator keeps free back to the system (after a large request).
pub(super) fn trim_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory that the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}

pub(super) fn too_large() -> Response {
    let (status, e) = too_large_error();
    error_response(status, &e)
}

pub(super) fn too_large_error() -> (StatusCode, ApiError) {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        ApiError::bad_input(format!(
            "the request body is larger than {MAX_BODY_BYTES} bytes ({} MiB)",
            MAX_BODY_BYTES >> 20
        )),
    )
}

/// After a reply of `bytes` bytes whose parts are freed: when it is large (from
/// [`LARGE_BODY`]), the memory the allocator keeps free is given back to the system, off the
/// runtime, as after a large body (issue 38: three `ncu_panels` replies of 12 MB left the
/// server 57 MiB larger than before them).
pub(super) fn given_back_after(bytes: usize) {
    if bytes < LARGE_BODY {
        return;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(trim_memory)),
        Err(_) => trim_memory(),
    }
}

/// What a request holds until it is answered: its share of [`BODY_MEMORY`]. Dropped off the
/// runtime, after the call; after a large request it gives the memory freed back to the
/// system.
pub(super) struct Held {
    pub(super) share: Option<OwnedSemaphorePermit>,
    /// The same memory, counted in its client address's part.
    pub(super) address_share: Option<OwnedSemaphorePermit>,
    pub(super) large: bool,
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
pub(super) fn kib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1 << 10)).unwrap_or(u32::MAX)
}

/// Where a body's memory is counted: its client address's part ([`ADDRESS_BODY_MEMORY`]),
/// then the whole ([`BODY_MEMORY`]).
pub(super) struct BodyMemory {
    pub(super) address: Option<Arc<Semaphore>>,
    pub(super) whole: Arc<Semaphore>,
}

/// Takes more of the address's part then of the whole so that `shares` (the same order)
/// cover `want` bytes (they cover `covered`), waiting until `deadline` at most (then 503);
/// answers how long it waited.
pub(super) async fn reserve(
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
pub(super) async fn read_body(
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

pub(super) async fn read_body_within_limits(
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
pub(super) fn body_error(status: StatusCode, e: &ApiError) -> Response {
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
pub(super) fn start_off_runtime(
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
pub(super) async fn off_runtime<T: Send + 'static>(
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
pub(super) fn lower_priority() {
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
pub(super) async fn parse_request(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
