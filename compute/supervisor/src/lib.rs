//! The compute sidecar, supervised: `showdown serve --stdio` in its own process, spoken to with
//! the protocol of `showdown_core::protocol` (one [`Envelope`] a line in, [`Reply`] lines out).
//!
//! Why a process: a CUDA fault poisons the CUDA context for the life of the process. When the
//! sidecar dies (a fault, a crash, a kill), every request in flight gets an error reply saying
//! so, the sidecar is started again, and the next request goes to the new one. Nothing the
//! user made lives in the sidecar's memory: imports, screenshots and run history are on disk.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use showdown_core::protocol::{
    ApiError, Envelope, Event, Reply, ReplyBody, Request, MAX_LINE_BYTES, MAX_REQUEST_BYTES,
};
use showdown_core::sync::lock;

/// Restarts allowed within [`RESTART_WINDOW`] before the supervisor gives up (a sidecar that
/// dies at once every time would otherwise be restarted forever).
pub const MAX_RESTARTS: u32 = 5;
/// See [`MAX_RESTARTS`].
pub const RESTART_WINDOW: Duration = Duration::from_secs(60);

/// What a caller waiting on a request receives.
enum Delivery {
    Event(Event),
    Done(Result<serde_json::Value, ApiError>),
    /// The request's line reached the process's stdin whole: the caller may let it go.
    Written,
    /// The line never reached the process (it is gone): safe to send again to a fresh one.
    NotSent(String),
}

/// Where a request's line stands on its way to the sidecar's stdin: [`QUEUED`], [`WRITING`],
/// [`WRITTEN`], or [`SETTLED`] (the caller was told what became of it). Whoever moves it to
/// `SETTLED` tells the caller, so the caller hears once.
struct Ticket(AtomicU8);
const QUEUED: u8 = 0;
const WRITING: u8 = 1;
const WRITTEN: u8 = 2;
const SETTLED: u8 = 3;

/// A line for the writer thread of one process.
struct Outgoing {
    id: u64,
    line: Arc<Vec<u8>>,
    ticket: Arc<Ticket>,
    tx: Sender<Delivery>,
}

struct Running {
    child: Child,
    /// To the thread that writes this process's stdin (a full pipe blocks that thread only).
    lines: Sender<Outgoing>,
    /// Which start this is (1 for the first), so a stale reader thread can tell it is stale.
    generation: u64,
}

/// A request waiting for its reply.
struct Pending {
    /// The process generation it was sent to.
    generation: u64,
    tx: Sender<Delivery>,
    ticket: Arc<Ticket>,
}

struct Shared {
    program: PathBuf,
    args: Vec<String>,
    envs: Mutex<Vec<(String, std::ffi::OsString)>>,
    /// The process, held only for short moves (start, hand a line to its writer, kill): never
    /// while a line is written.
    running: Mutex<Option<Running>>,
    /// The running process's ID, 0 when none runs: what [`Sidecar::status`] reads, lock-free.
    pid: AtomicU32,
    /// Requests waiting for their reply, by id.
    pending: Mutex<HashMap<u64, Pending>>,
    next_id: AtomicU64,
    generation: AtomicU64,
    restarts: Mutex<Vec<Instant>>,
    crashes: AtomicU32,
}

/// A supervised sidecar process.
#[derive(Clone)]
pub struct Sidecar {
    shared: Arc<Shared>,
}

/// The sidecar's state, for the UI's status line.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SidecarStatus {
    /// The program run.
    pub program: String,
    /// Whether a sidecar process is running now.
    pub running: bool,
    /// Its process ID.
    pub pid: Option<u32>,
    /// How many times it stopped unexpectedly since the app started.
    pub crashes: u32,
}

fn runtime_error(message: String) -> ApiError {
    ApiError::runtime(message)
}

/// Sets what runs (its pid for [`Sidecar::status`] too); the caller holds the `running` lock.
fn set_running(shared: &Shared, slot: &mut Option<Running>, new: Option<Running>) {
    shared
        .pid
        .store(new.as_ref().map_or(0, |r| r.child.id()), Ordering::SeqCst);
    *slot = new;
}

/// Kills what runs in `slot`, collects it and forgets it; the caller holds the `running` lock.
fn forget(shared: &Shared, slot: &mut Option<Running>) {
    if let Some(r) = slot.as_mut() {
        let _ = r.child.kill();
        let _ = r.child.wait();
    }
    set_running(shared, slot, None);
}

/// A buffer that refuses to grow past `limit` bytes (so a request too large for a line is
/// refused without encoding all of it).
struct Capped {
    buf: Vec<u8>,
    limit: usize,
    over: bool,
}

impl Write for Capped {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + bytes.len() > self.limit {
            self.over = true;
            return Err(std::io::Error::other("the line limit is reached"));
        }
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `request` as the stdio line for `id` (newline included), or the error to answer when its
/// line would be longer than the sidecar reads ([`MAX_LINE_BYTES`], newline not counted).
/// Takes the request by value: it is dropped once encoded, so a large one is not held twice.
fn encode_line(id: u64, request: Request) -> Result<Vec<u8>, ApiError> {
    let mut out = Capped {
        buf: Vec::new(),
        limit: MAX_LINE_BYTES,
        over: false,
    };
    match serde_json::to_writer(&mut out, &Envelope { id, request }) {
        Ok(()) => {
            out.buf.push(b'\n');
            Ok(out.buf)
        }
        Err(_) if out.over => Err(ApiError::bad_input(format!(
            "the request is too large: encoded for the compute process it is longer than \
             {MAX_LINE_BYTES} bytes (a request may be at most {MAX_REQUEST_BYTES} bytes of JSON)"
        ))),
        Err(e) => Err(runtime_error(format!("cannot encode the request: {e}"))),
    }
}

impl Sidecar {
    /// Supervises `program args…` (normally `showdown serve --stdio`); it is started on the
    /// first request.
    pub fn new(program: impl Into<PathBuf>, args: &[&str]) -> Self {
        Sidecar {
            shared: Arc::new(Shared {
                program: program.into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                envs: Mutex::new(Vec::new()),
                running: Mutex::new(None),
                pid: AtomicU32::new(0),
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                generation: AtomicU64::new(0),
                restarts: Mutex::new(Vec::new()),
                crashes: AtomicU32::new(0),
            }),
        }
    }

    /// Sets an environment variable of the sidecar process, from its next start on.
    pub fn with_env(self, key: &str, value: impl Into<std::ffi::OsString>) -> Self {
        lock(&self.shared.envs).push((key.to_string(), value.into()));
        self
    }

    /// The `showdown` binary to run: `$SHOWDOWN_BIN`, else `showdown` beside this executable,
    /// else `showdown` on PATH.
    pub fn default_program() -> PathBuf {
        if let Some(p) = std::env::var_os("SHOWDOWN_BIN") {
            return PathBuf::from(p);
        }
        let beside = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(|d| d.join("showdown")));
        match beside {
            Some(p) if p.is_file() => p,
            _ => PathBuf::from("showdown"),
        }
    }

    /// Its state now. Never waits: it reads what the supervisor recorded when the process
    /// started and when it ended, so it answers at once while requests are written to a busy
    /// process (safe to call from an async runtime).
    pub fn status(&self) -> SidecarStatus {
        let pid = self.shared.pid.load(Ordering::SeqCst);
        SidecarStatus {
            program: self.shared.program.display().to_string(),
            running: pid != 0,
            pid: (pid != 0).then_some(pid),
            crashes: self.shared.crashes.load(Ordering::Relaxed),
        }
    }

    /// Starts the process if none runs; the caller holds the `running` lock.
    fn ensure_started<'a>(
        &self,
        running: &'a mut Option<Running>,
    ) -> Result<&'a mut Running, ApiError> {
        let alive = running
            .as_mut()
            .is_some_and(|r| matches!(r.child.try_wait(), Ok(None)));
        if !alive {
            forget(&self.shared, running);
            let mut restarts = lock(&self.shared.restarts);
            let now = Instant::now();
            restarts.retain(|t| now.duration_since(*t) < RESTART_WINDOW);
            if restarts.len() as u32 > MAX_RESTARTS {
                return Err(runtime_error(format!(
                    "the compute sidecar ({}) stopped {} times within {} s; not starting it again (restart the app)",
                    self.shared.program.display(),
                    restarts.len(),
                    RESTART_WINDOW.as_secs()
                )));
            }
            restarts.push(now);
            drop(restarts);
            let started = self.spawn()?;
            set_running(&self.shared, running, Some(started));
        }
        running
            .as_mut()
            .ok_or_else(|| runtime_error("the compute sidecar did not start".into()))
    }

    fn spawn(&self) -> Result<Running, ApiError> {
        let mut child = Command::new(&self.shared.program)
            .args(&self.shared.args)
            .envs(lock(&self.shared.envs).iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                runtime_error(format!(
                    "cannot start the compute sidecar {}: {e}",
                    self.shared.program.display()
                ))
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(runtime_error(
                "the compute sidecar started without pipes".into(),
            ));
        };
        let generation = self.shared.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let (lines, to_write) = channel::<Outgoing>();
        let started = {
            let weak = Arc::downgrade(&self.shared);
            std::thread::Builder::new()
                .name("sidecar-stdin".into())
                .spawn(move || write_lines(&weak, stdin, to_write))
        }
        .and_then(|_| {
            let weak = Arc::downgrade(&self.shared);
            std::thread::Builder::new()
                .name("sidecar-stdout".into())
                .spawn(move || read_replies(&weak, BufReader::new(stdout), generation))
        });
        if let Err(e) = started {
            // The writer (if it started) ends when `lines` is dropped.
            let _ = child.kill();
            let _ = child.wait();
            return Err(runtime_error(format!(
                "cannot start a thread for the compute sidecar: {e}"
            )));
        }
        Ok(Running {
            child,
            lines,
            generation,
        })
    }

    /// Forgets the process of `generation` if it is still the one running (its stdin failed).
    fn forget_generation(&self, generation: u64) {
        let mut running = lock(&self.shared.running);
        if running.as_ref().is_some_and(|r| r.generation == generation) {
            forget(&self.shared, &mut running);
        }
    }

    /// Sends `request` and waits for its reply, passing its progress events to `on_event`.
    ///
    /// The line is handed to a writer thread of the process, so a slow write (a full pipe, a
    /// large request) blocks neither [`status`](Self::status) nor other callers. A request
    /// whose line would be longer than the sidecar reads ([`MAX_LINE_BYTES`]) is refused here
    /// with a `bad_input` error; every request gets exactly one result.
    pub fn call(
        &self,
        request: Request,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<serde_json::Value, ApiError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        // Held until the writer has written it (or for sending again): then let go at once.
        let mut line = Some(Arc::new(encode_line(id, request)?));
        // A process that died a moment ago may not be reaped yet: a line not written to it was
        // not delivered, and it is safe to send it once more to a fresh process.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let Some(this_line) = line.clone() else {
                return Err(runtime_error(
                    "the request was lost on its way to the compute sidecar".into(),
                ));
            };
            let (tx, rx): (Sender<Delivery>, Receiver<Delivery>) = channel();
            let ticket = Arc::new(Ticket(AtomicU8::new(QUEUED)));
            let generation = {
                let mut running = lock(&self.shared.running);
                let r = self.ensure_started(&mut running)?;
                let generation = r.generation;
                lock(&self.shared.pending).insert(
                    id,
                    Pending {
                        generation,
                        tx: tx.clone(),
                        ticket: Arc::clone(&ticket),
                    },
                );
                let handed = r.lines.send(Outgoing {
                    id,
                    line: this_line,
                    ticket,
                    tx,
                });
                if handed.is_err() {
                    // Its writer thread is gone: so is the process's stdin.
                    lock(&self.shared.pending).remove(&id);
                    forget(&self.shared, &mut running);
                    if attempt >= 2 {
                        return Err(runtime_error(
                            "cannot write to the compute sidecar: its input is closed".into(),
                        ));
                    }
                    continue;
                }
                generation
            };
            loop {
                match rx.recv() {
                    Ok(Delivery::Event(e)) => on_event(e),
                    Ok(Delivery::Written) => line = None,
                    Ok(Delivery::Done(result)) => return result,
                    Ok(Delivery::NotSent(why)) => {
                        self.forget_generation(generation);
                        if attempt >= 2 {
                            return Err(runtime_error(format!(
                                "cannot write to the compute sidecar: {why}"
                            )));
                        }
                        break;
                    }
                    Err(_) => {
                        return Err(runtime_error(
                            "the compute sidecar's reply channel closed".into(),
                        ))
                    }
                }
            }
        }
    }

    /// Kills the sidecar process (the next request starts a new one); for tests and for the
    /// UI's "restart the engine" action.
    pub fn kill(&self) {
        forget(&self.shared, &mut lock(&self.shared.running));
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(r) = self
            .running
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
}

/// Writes one process's request lines to its stdin, in the order handed over. A line whose
/// caller was already told (the process ended first) is skipped; once a write fails, every
/// later line of this process fails the same way and its caller sends it again elsewhere.
/// Holds the supervisor weakly.
fn write_lines(shared: &Weak<Shared>, mut stdin: ChildStdin, lines: Receiver<Outgoing>) {
    let mut broken: Option<String> = None;
    for out in lines {
        let Outgoing {
            id,
            line,
            ticket,
            tx,
        } = out;
        if ticket
            .0
            .compare_exchange(QUEUED, WRITING, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            continue;
        }
        let written = match &broken {
            Some(why) => Err(why.clone()),
            None => stdin
                .write_all(&line)
                .and_then(|()| stdin.flush())
                .map_err(|e| e.to_string()),
        };
        drop(line);
        match written {
            Ok(()) => {
                if ticket
                    .0
                    .compare_exchange(WRITING, WRITTEN, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    let _ = tx.send(Delivery::Written);
                }
            }
            Err(why) => {
                broken = Some(why.clone());
                if ticket.0.swap(SETTLED, Ordering::SeqCst) == WRITING {
                    if let Some(shared) = shared.upgrade() {
                        let mut pending = lock(&shared.pending);
                        if pending
                            .get(&id)
                            .is_some_and(|p| Arc::ptr_eq(&p.ticket, &ticket))
                        {
                            pending.remove(&id);
                        }
                    }
                    let _ = tx.send(Delivery::NotSent(why));
                }
            }
        }
    }
}

/// Routes the sidecar's reply lines to the waiting callers; when its output ends, fails every
/// request sent to this process and forgets it (the next request starts a new one). Holds the
/// supervisor weakly, so dropping the last [`Sidecar`] ends the process (see `Drop`).
fn read_replies(shared: &Weak<Shared>, out: impl BufRead, generation: u64) {
    for line in out.lines() {
        let Ok(line) = line else { break };
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let Ok(reply) = serde_json::from_str::<Reply>(&line) else {
            // Best effort: a closed stderr must not stop the routing of replies.
            let _ = writeln!(
                std::io::stderr(),
                "sidecar: ignoring a line that is not a reply: {line:.200}"
            );
            continue;
        };
        let mut pending = lock(&shared.pending);
        match reply.body {
            ReplyBody::Event(e) => {
                if let Some(p) = pending.get(&reply.id) {
                    let _ = p.tx.send(Delivery::Event(e));
                }
            }
            ReplyBody::Ok(v) => {
                if let Some(p) = pending.remove(&reply.id) {
                    p.ticket.0.store(SETTLED, Ordering::SeqCst);
                    let _ = p.tx.send(Delivery::Done(Ok(v)));
                }
            }
            ReplyBody::Error(e) => match pending.remove(&reply.id) {
                Some(p) => {
                    p.ticket.0.store(SETTLED, Ordering::SeqCst);
                    let _ = p.tx.send(Delivery::Done(Err(e)));
                }
                None => {
                    // Id 0: a line the sidecar could not read (the supervisor's lines are
                    // checked against its limits, so this is a bug worth a note).
                    let _ = writeln!(
                        std::io::stderr(),
                        "sidecar: an error for no waiting request (id {}): {:.200}",
                        reply.id,
                        e.message
                    );
                }
            },
        }
    }
    let Some(shared) = shared.upgrade() else {
        return;
    };
    // The process ended (or closed its output): collect its status.
    let status = {
        let mut running = lock(&shared.running);
        match running.as_mut() {
            Some(r) if r.generation == generation => {
                // It closed its output: make sure it is gone, then collect its status.
                let _ = r.child.kill();
                let st = r.child.wait().ok();
                set_running(&shared, &mut running, None);
                st
            }
            _ => None,
        }
    };
    shared.crashes.fetch_add(1, Ordering::Relaxed);
    let what = status.map_or_else(|| "ended".to_string(), |s| format!("ended ({s})"));
    let waiting: Vec<Pending> = {
        let mut pending = lock(&shared.pending);
        let ids: Vec<u64> = pending
            .iter()
            .filter(|(_, p)| p.generation == generation)
            .map(|(id, _)| *id)
            .collect();
        ids.iter().filter_map(|id| pending.remove(id)).collect()
    };
    for p in waiting {
        let told = match p.ticket.0.swap(SETTLED, Ordering::SeqCst) {
            // Never written: the caller sends it to the next process.
            QUEUED => Delivery::NotSent(format!("the compute sidecar {what} before it was sent")),
            SETTLED => continue,
            _ => Delivery::Done(Err(runtime_error(format!(
                "the compute sidecar {what} during this request; it will be restarted for the next one"
            )))),
        };
        let _ = p.tx.send(told);
    }
}

#[cfg(test)]
mod tests;
