//! The stdio door: the compute process.
//!
//! The loop here only reads and parses lines: every request is answered on a worker thread of
//! its own, so a slow one (an interpreter probe, a duel) never holds up the next line, and a
//! `cancel` is answered while the job it stops still runs. At most [`MAX_IN_FLIGHT`] requests
//! are answered at once (one more is refused as busy), with [`CANCEL_ROOM`] more for `cancel`
//! so that it always gets through; a request reusing the id of one still being answered is
//! refused naming the id.

use std::collections::HashMap;

use super::*;
use compute::protocol::MAX_LINE_BYTES;

/// Most requests (other than `cancel`) answered at once, each on a worker thread of its own;
/// one more is refused with a `busy` error.
pub(super) const MAX_IN_FLIGHT: usize = 64;

/// Room for `cancel` requests beyond [`MAX_IN_FLIGHT`]: a control request gets through even
/// when every other worker is taken.
pub(super) const CANCEL_ROOM: usize = 8;

/// Where replies go: stdout, until a write fails.
struct Output {
    stdout: Mutex<io::Stdout>,
    /// Set at the first failed write: nobody reads the replies any more (the client is gone).
    gone: AtomicBool,
    /// Wakes the stdio loop when the client is gone (it may be waiting for a line).
    wake: SyncSender<Input>,
}

type Out = Arc<Output>;

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
    /// A line longer than [`MAX_LINE_BYTES`], skipped.
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
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf);
        let next = match read {
            Err(e) => Input::End(Err(e)),
            Ok(0) => Input::End(Ok(())),
            Ok(_) if buf.last() != Some(&b'\n') && buf.len() > MAX_LINE_BYTES => {
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

/// The requests being answered, by id (`true` for a `cancel`).
#[derive(Default)]
struct InFlight {
    ids: Mutex<HashMap<u64, bool>>,
}

impl InFlight {
    /// Counts request `id` in, or answers why it is refused: its id is that of a request still
    /// being answered (bad input), or too many are (busy).
    fn admit(&self, id: u64, is_cancel: bool) -> std::result::Result<(), ApiError> {
        let mut ids = lock(&self.ids);
        if ids.contains_key(&id) {
            return Err(ApiError::bad_input(format!(
                "request id {id} is already in use by a request still being answered: give \
                 each request in flight an id of its own"
            )));
        }
        let cancels = ids.values().filter(|c| **c).count();
        let others = ids.len() - cancels;
        let full = if is_cancel {
            cancels >= CANCEL_ROOM
        } else {
            others >= MAX_IN_FLIGHT
        };
        if full {
            return Err(ApiError::busy(format!(
                "{} requests are already being answered (the most at once): wait for a reply \
                 before sending more",
                if is_cancel {
                    CANCEL_ROOM
                } else {
                    MAX_IN_FLIGHT
                }
            )));
        }
        ids.insert(id, is_cancel);
        Ok(())
    }

    /// Counts request `id` out (before its last reply goes, so that the id may be used again
    /// as soon as the client has read it).
    fn release(&self, id: u64) {
        lock(&self.ids).remove(&id);
    }
}

/// The stdio door. Exits 0 at the end of stdin; 1 when stdin cannot be read or stdout cannot be
/// written (the client is gone); either way the running job is cancelled and every request
/// being answered is waited for first.
pub(super) fn stdio() -> Result<()> {
    // What the peer scripts of a compute process killed during PyTorch's side (kill -9) left
    // behind goes now: the processes they started, and their temporary folders.
    compute::child::sweep_stale_children();
    compute::child::sweep_stale_temp_dirs(&std::env::temp_dir());
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
    let in_flight = Arc::new(InFlight::default());
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    let ended = loop {
        let next = inputs.recv().unwrap_or(Input::End(Ok(())));
        if out.gone.load(Ordering::SeqCst) {
            break Err(anyhow!(
                "stdout is closed: the client is gone (its job was cancelled)"
            ));
        }
        match next {
            Input::Line(buf) => match parse_line(&buf) {
                Ok(None) => {}
                Ok(Some(env)) => dispatch(env, &service, &out, &in_flight, &mut workers),
                Err((id, e)) => send(&out, &Reply::error(id, e)),
            },
            Input::TooLong => {
                let msg =
                    format!("a request line is longer than {MAX_LINE_BYTES} bytes: it was skipped");
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
            .take(MAX_LINE_BYTES as u64)
            .read_until(b'\n', &mut sink)?;
        if n == 0 || sink.last() == Some(&b'\n') {
            return Ok(());
        }
    }
}

/// An envelope, `None` for a blank line, or the id to answer (0 when unreadable) and the
/// error naming what is wrong (the core's strict parser: the wrong field by its path).
fn parse_line(bytes: &[u8]) -> std::result::Result<Option<Envelope>, (u64, ApiError)> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t.trim(),
        Err(e) => {
            return Err((
                0,
                ApiError::bad_input(format!("the request line is not UTF-8: {e}")),
            ))
        }
    };
    if text.is_empty() {
        return Ok(None);
    }
    compute::protocol::parse_envelope(text.as_bytes())
        .map(Some)
        .map_err(|(id, mut e)| {
            // A request is one line: serde's `at line 1 column 9` is the column alone.
            e.message = e.message.replace(" at line 1 column ", " at column ");
            (id.unwrap_or(0), e)
        })
}

/// Answers a request on a worker thread of its own, so that the next lines (a `cancel`, a
/// quick request behind a slow one) are read and answered meanwhile. A request whose id is
/// still being answered is refused (answered as id 0, naming the id: its own id would be taken
/// for the running request's), and one beyond [`MAX_IN_FLIGHT`] is refused as busy.
fn dispatch(
    env: Envelope,
    service: &Arc<Service>,
    out: &Out,
    in_flight: &Arc<InFlight>,
    workers: &mut Vec<JoinHandle<()>>,
) {
    let Envelope { id, request } = env;
    let is_cancel = matches!(request, Request::Cancel(_));
    if let Err(e) = in_flight.admit(id, is_cancel) {
        let answer_as = if e.code == ErrorKind::BadInput { 0 } else { id };
        send(out, &Reply::error(answer_as, e));
        return;
    }
    let answer = {
        let (service, out, in_flight) =
            (Arc::clone(service), Arc::clone(out), Arc::clone(in_flight));
        move || {
            let cancel = Arc::new(AtomicBool::new(false));
            let result = call(
                &service,
                request,
                &mut |e| send(&out, &Reply::event(id, e)),
                &cancel,
            );
            in_flight.release(id);
            send(&out, &reply_of(id, result));
        }
    };
    match std::thread::Builder::new()
        .name(format!("request-{id}"))
        .spawn(answer)
    {
        Ok(w) => workers.push(w),
        Err(e) => {
            in_flight.release(id);
            send(
                out,
                &Reply::error(
                    id,
                    ApiError::runtime(format!("cannot start a worker thread: {e}")),
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 30: a second request with the id of one still being answered is refused naming
    /// the id; beyond [`MAX_IN_FLIGHT`] a request is refused as busy, while `cancel` still has
    /// room of its own.
    #[test]
    fn in_flight_refuses_a_running_id_and_bounds_the_count() {
        let f = InFlight::default();
        f.admit(7, false).unwrap();
        let e = f.admit(7, true).unwrap_err();
        assert_eq!(e.code, ErrorKind::BadInput);
        assert!(e.message.contains("request id 7 is already in use"), "{e}");
        f.release(7);
        f.admit(7, false).unwrap();
        for id in 100..(100 + MAX_IN_FLIGHT as u64 - 1) {
            f.admit(id, false).unwrap();
        }
        let e = f.admit(1, false).unwrap_err();
        assert_eq!(e.code, ErrorKind::Busy);
        assert!(e.message.contains("64 requests are already"), "{e}");
        for id in 0..CANCEL_ROOM as u64 {
            f.admit(1_000 + id, true).unwrap();
        }
        assert_eq!(f.admit(2_000, true).unwrap_err().code, ErrorKind::Busy);
        f.release(100);
        f.admit(1, false).unwrap();
    }

    /// Issue 30: no line number in the door's errors (it prefixed `line N:`), and serde's
    /// position in a one-line request is its column.
    #[test]
    fn parse_errors_carry_no_line_number() {
        let (id, e) = parse_line(b"{nope").unwrap_err();
        assert_eq!(id, 0);
        assert!(!e.message.contains("line"), "{e}");
        assert!(e.message.contains("at column 2"), "{e}");
        let (id, e) = parse_line(br#"{"id":3,"request":{"op":"make_coffee"}}"#).unwrap_err();
        assert_eq!(id, 3);
        assert!(!e.message.contains("line"), "{e}");
        assert!(parse_line(b"  \r\n").unwrap().is_none());
    }
}
