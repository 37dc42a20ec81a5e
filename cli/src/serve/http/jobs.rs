//! Calls and job streams to the compute process: each waits for its turn at the door, and a
//! job whose client goes away is cancelled.

use super::*;

/// Requests (other than `cancel`) this door has at the compute process at once: half its
/// workers ([`MAX_IN_FLIGHT`](super::stdio::MAX_IN_FLIGHT)), so that the door's requests
/// never meet its `busy`; the others queue at the door, in order of arrival (issue 38: 200
/// concurrent `doctor` calls got 17–48 % `409 busy`). A running job holds one turn; a second
/// job gets its turn and then the job slot's own `busy`, as it should.
pub(super) const AT_ONCE: usize = super::stdio::MAX_IN_FLIGHT / 2;

/// `cancel` requests this door has at the compute process at once: half its room for them
/// ([`CANCEL_ROOM`](super::stdio::CANCEL_ROOM)), the rest for the door's own cancels of jobs
/// whose client went away.
pub(super) const CANCELS_AT_ONCE: usize = super::stdio::CANCEL_ROOM / 2;

/// How long a request waits at the door for its turn; then 503 (the compute process is
/// wedged, or the server flooded).
pub(super) const QUEUE_WAIT: Duration = Duration::from_secs(60);

/// What `/api/call` knows of its request, shared by the handler and the thread waiting on
/// the compute process.
#[derive(Default)]
pub(super) struct CallWatch {
    /// The request sent an event: it is the job running now.
    pub(super) started: AtomicBool,
    /// The client went away before the result.
    pub(super) gone: AtomicBool,
    /// A cancel was sent (one at most).
    pub(super) cancelled: AtomicBool,
}

impl CallWatch {
    pub(super) fn cancel_once(&self, compute: &Sidecar) {
        if !self.cancelled.swap(true, Ordering::SeqCst) {
            let _ = compute.call(CancelRequest {}.into(), &mut |_| {});
        }
    }
}

/// Cancels the job of an `/api/call` whose client went away (its handler dropped before the
/// result): at once when the job has sent an event, else at its first event. Never before: a
/// job refused as `busy` must not cancel the job of someone else.
pub(super) struct CancelOnDrop {
    pub(super) compute: Sidecar,
    pub(super) watch: Arc<CallWatch>,
    pub(super) armed: bool,
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
pub(super) async fn take_turn(
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
pub(super) async fn call_for_client(
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

/// Streams any request as Server-Sent Events, each a [`Reply`]: its events, then the final
/// `ok` or `error`. A client that goes away cancels the running job.
pub(super) async fn api_job(State(s): State<AppState>, req: axum::extract::Request) -> Response {
    let (request, held) = match receive(&s, req).await {
        Ok(received) => received,
        Err(response) => return response,
    };
    let id = s.next_id.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Reply>();
    if let Some(answer) = s.pythons.answer(&request) {
        // The door's own answer (`peer_pythons`), as the stream's one reply.
        let _ = tx.send(reply_of(id, answer));
        return sse_of(rx);
    }
    let turn = match take_turn(&s, &request).await {
        Ok(turn) => turn,
        Err((status, e)) => return error_response(status, &e),
    };
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
    sse_of(rx)
}

/// The replies coming on `rx` as Server-Sent Events, until its senders are gone.
fn sse_of(rx: tokio::sync::mpsc::UnboundedReceiver<Reply>) -> Response {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let reply = rx.recv().await?;
        let data = encode(&reply);
        drop(reply);
        given_back_after(data.len());
        Some((Ok::<_, Infallible>(SseEvent::default().data(data)), rx))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
