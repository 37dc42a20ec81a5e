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
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use showdown_core::protocol::{ApiError, Envelope, Event, Reply, ReplyBody, Request};

/// Restarts allowed within [`RESTART_WINDOW`] before the supervisor gives up (a sidecar that
/// dies at once every time would otherwise be restarted forever).
pub const MAX_RESTARTS: u32 = 5;
/// See [`MAX_RESTARTS`].
pub const RESTART_WINDOW: Duration = Duration::from_secs(60);

/// What a caller waiting on a request receives.
enum Delivery {
    Event(Event),
    Done(Result<serde_json::Value, ApiError>),
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    /// Which start this is (1 for the first), so a stale reader thread can tell it is stale.
    generation: u64,
}

struct Shared {
    program: PathBuf,
    args: Vec<String>,
    envs: Mutex<Vec<(String, std::ffi::OsString)>>,
    running: Mutex<Option<Running>>,
    /// Requests waiting for their reply: id → (the process generation it was sent to, sender).
    pending: Mutex<HashMap<u64, (u64, Sender<Delivery>)>>,
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn runtime_error(message: String) -> ApiError {
    ApiError::runtime(message)
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

    /// Its state now.
    pub fn status(&self) -> SidecarStatus {
        let mut running = lock(&self.shared.running);
        let alive = running
            .as_mut()
            .is_some_and(|r| matches!(r.child.try_wait(), Ok(None)));
        SidecarStatus {
            program: self.shared.program.display().to_string(),
            running: alive,
            pid: running.as_ref().filter(|_| alive).map(|r| r.child.id()),
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
            *running = None;
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
            *running = Some(self.spawn()?);
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
            return Err(runtime_error(
                "the compute sidecar started without pipes".into(),
            ));
        };
        let generation = self.shared.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let weak = Arc::downgrade(&self.shared);
        std::thread::spawn(move || read_replies(&weak, BufReader::new(stdout), generation));
        Ok(Running {
            child,
            stdin,
            generation,
        })
    }

    /// Sends `request` and waits for its reply, passing its progress events to `on_event`.
    pub fn call(
        &self,
        request: Request,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<serde_json::Value, ApiError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx): (Sender<Delivery>, Receiver<Delivery>) = channel();
        let line = serde_json::to_string(&Envelope { id, request })
            .map_err(|e| runtime_error(format!("cannot encode the request: {e}")))?
            + "\n";
        // A process that died a moment ago may not be reaped yet: a write to it fails, the
        // request was not delivered, and it is safe to send it once more to a fresh process.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut running = lock(&self.shared.running);
            let r = self.ensure_started(&mut running)?;
            lock(&self.shared.pending).insert(id, (r.generation, tx.clone()));
            let written = r
                .stdin
                .write_all(line.as_bytes())
                .and_then(|()| r.stdin.flush());
            match written {
                Ok(()) => break,
                Err(e) => {
                    lock(&self.shared.pending).remove(&id);
                    let _ = r.child.kill();
                    let _ = r.child.wait();
                    *running = None;
                    if attempt >= 2 {
                        return Err(runtime_error(format!(
                            "cannot write to the compute sidecar: {e}"
                        )));
                    }
                }
            }
        }
        drop(tx);
        loop {
            match rx.recv() {
                Ok(Delivery::Event(e)) => on_event(e),
                Ok(Delivery::Done(result)) => return result,
                Err(_) => {
                    return Err(runtime_error(
                        "the compute sidecar's reply channel closed".into(),
                    ))
                }
            }
        }
    }

    /// Kills the sidecar process (the next request starts a new one); for tests and for the
    /// UI's "restart the engine" action.
    pub fn kill(&self) {
        let mut running = lock(&self.shared.running);
        if let Some(r) = running.as_mut() {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
        *running = None;
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

/// Routes the sidecar's reply lines to the waiting callers; when its output ends, fails every
/// request sent to this process and forgets it (the next request starts a new one). Holds the
/// supervisor weakly, so dropping the last [`Sidecar`] ends the process (see `Drop`).
fn read_replies(shared: &std::sync::Weak<Shared>, out: impl BufRead, generation: u64) {
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
                if let Some((_, tx)) = pending.get(&reply.id) {
                    let _ = tx.send(Delivery::Event(e));
                }
            }
            ReplyBody::Ok(v) => {
                if let Some((_, tx)) = pending.remove(&reply.id) {
                    let _ = tx.send(Delivery::Done(Ok(v)));
                }
            }
            ReplyBody::Error(e) => {
                if let Some((_, tx)) = pending.remove(&reply.id) {
                    let _ = tx.send(Delivery::Done(Err(e)));
                }
            }
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
                *running = None;
                st
            }
            _ => None,
        }
    };
    shared.crashes.fetch_add(1, Ordering::Relaxed);
    let what = status.map_or_else(|| "ended".to_string(), |s| format!("ended ({s})"));
    let waiting: Vec<Sender<Delivery>> = {
        let mut pending = lock(&shared.pending);
        let ids: Vec<u64> = pending
            .iter()
            .filter(|(_, (g, _))| *g == generation)
            .map(|(id, _)| *id)
            .collect();
        ids.iter()
            .filter_map(|id| pending.remove(id).map(|(_, tx)| tx))
            .collect()
    };
    for tx in waiting {
        let _ = tx.send(Delivery::Done(Err(runtime_error(format!(
            "the compute sidecar {what} during this request; it will be restarted for the next one"
        )))));
    }
}

#[cfg(test)]
mod tests;
