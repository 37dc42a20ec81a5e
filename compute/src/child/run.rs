//! Running a child process to its end within limits ([`ChildLimits`]: a time, and a byte cap on
//! each output stream, read on threads of its own), stopped when its caller says so: what a
//! finished child left ([`Finished`]), or why it was stopped ([`Stop`]). The peers' probe and
//! scripts and the command-line tools the engine runs all go through [`run_limited`].

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::ComputeError;

/// What a finished child process left: its status, stdout and stderr.
pub struct Finished {
    /// Whether it exited with status 0.
    pub success: bool,
    /// Its exit status in words.
    pub status: String,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Finished {
    /// The last non-empty line of stderr (usually the exception), or "".
    pub fn last_error_line(&self) -> &str {
        self.stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
    }
}

/// What a child process may take: how long it may run and how much each of its output streams
/// may print (what it prints is held in memory). Beyond either it is killed, and the error
/// says which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildLimits {
    /// Longest it may run.
    pub time: Duration,
    /// Most bytes read from its standard output.
    pub stdout_bytes: usize,
    /// Most bytes read from its standard error.
    pub stderr_bytes: usize,
}

/// `n` bytes in words: `64 KiB`, `16 MiB`.
pub(crate) fn size_text(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// `d` in seconds, in words: `10 s`, `0.5 s`.
pub(crate) fn secs_text(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// Why a child did not finish on its own.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The job was cancelled.
    Cancelled,
    /// It could not be started or waited for (a sentence).
    Failed(String),
    /// It ran past its time limit.
    Time(Duration),
    /// It printed more than its limit on `stream`.
    Output { stream: &'static str, limit: usize },
}

impl Stop {
    /// The error of a child `what` that stopped this way.
    pub(crate) fn into_error(self, what: &str) -> ComputeError {
        let reason = match self {
            Stop::Cancelled => return ComputeError::Cancelled,
            Stop::Failed(why) => why,
            Stop::Time(t) => format!(
                "{what} did not finish within {} and was stopped",
                secs_text(t)
            ),
            Stop::Output { stream, limit } => format!(
                "{what} printed more than {} on its {stream} and was stopped",
                size_text(limit)
            ),
        };
        ComputeError::Backend {
            backend: "peer".into(),
            reason,
        }
    }
}

/// A child's output stream, read on a thread of its own into memory, at most `limit` bytes.
pub(crate) struct Capture {
    bytes: std::sync::Mutex<Vec<u8>>,
    /// Set when the stream had more than the limit (reading stopped there).
    over: AtomicBool,
    /// Set when reading ended (the stream's end, an error, or the limit).
    done: AtomicBool,
}

impl Capture {
    /// Starts reading `pipe` (nothing to read when `None`).
    fn start(pipe: Option<impl Read + Send + 'static>, limit: usize) -> std::io::Result<Arc<Self>> {
        let c = Arc::new(Capture {
            bytes: std::sync::Mutex::new(Vec::new()),
            over: AtomicBool::new(false),
            done: AtomicBool::new(false),
        });
        let Some(mut pipe) = pipe else {
            c.done.store(true, Ordering::SeqCst);
            return Ok(c);
        };
        let me = Arc::clone(&c);
        std::thread::Builder::new()
            .name("child-output".into())
            .spawn(move || {
                let mut buf = vec![0u8; 16 << 10];
                loop {
                    let n = match pipe.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break,
                    };
                    let mut bytes = crate::sync::lock(&me.bytes);
                    let room = limit.saturating_sub(bytes.len());
                    bytes.extend_from_slice(&buf[..n.min(room)]);
                    if n > room {
                        me.over.store(true, Ordering::SeqCst);
                        break;
                    }
                }
                me.done.store(true, Ordering::SeqCst);
            })?;
        Ok(c)
    }

    /// Hands each whole line read after byte `seen` to `on_line` (without its newline) and
    /// moves `seen` past them; a line still being written waits for its newline (or the end).
    fn lines_since(&self, seen: &mut usize, on_line: &mut dyn FnMut(&str)) {
        let ended = self.done.load(Ordering::SeqCst);
        let fresh = {
            let bytes = crate::sync::lock(&self.bytes);
            let tail = bytes.get(*seen..).unwrap_or(&[]);
            let upto = if ended {
                tail.len()
            } else {
                tail.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
            };
            *seen += upto;
            String::from_utf8_lossy(&tail[..upto]).into_owned()
        };
        for line in fresh.lines() {
            on_line(line);
        }
    }

    /// What was read, as text (invalid UTF-8 replaced).
    fn text(&self) -> String {
        String::from_utf8_lossy(&crate::sync::lock(&self.bytes)).into_owned()
    }
}

/// Ends `child` started in a group of its own: with what it started ([`super`]), or
/// alone (a child in the caller's group).
pub(crate) fn end(family: Option<super::Family>, child: &mut Child) {
    match family {
        Some(f) => f.end(child),
        None => {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// How often a running child is checked on.
pub(crate) const CHILD_POLL: Duration = Duration::from_millis(20);

/// How long the output of a child that ended is waited for (a process it left behind may hold
/// its pipes open).
pub(crate) const DRAIN_WAIT: Duration = Duration::from_secs(1);

/// How a child is started and ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    /// In a process group of its own, ended with everything it started.
    Own,
    /// In the caller's process group (a terminal's Ctrl-C reaches it too); ended alone.
    Callers,
}

/// Runs `cmd` to its end within `limits`, reading its output on threads; kills it (with its
/// process group when it has its own) when `should_stop` says so, when it runs past the time
/// limit or prints past a byte limit.
pub(crate) fn run_limited(
    mut cmd: Command,
    limits: ChildLimits,
    should_stop: &dyn Fn() -> bool,
    group: Group,
    on_line: &mut dyn FnMut(&str),
) -> std::result::Result<Finished, Stop> {
    let what = cmd.get_program().to_string_lossy().into_owned();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let spawned = match group {
        // Its own group, a parent-death signal, and what it starts followed.
        Group::Own => super::spawn(&mut cmd),
        Group::Callers => super::spawn_retrying(&mut cmd),
    };
    let mut child = spawned.map_err(|e| Stop::Failed(format!("cannot start {what}: {e}")))?;
    let mut family = (group == Group::Own).then(|| super::Family::of(&child));
    let captures = Capture::start(child.stdout.take(), limits.stdout_bytes).and_then(|out| {
        Capture::start(child.stderr.take(), limits.stderr_bytes).map(|err| (out, err))
    });
    let (out, err) = match captures {
        Ok(c) => c,
        Err(e) => {
            end(family, &mut child);
            return Err(Stop::Failed(format!(
                "cannot read the output of {what}: {e}"
            )));
        }
    };
    let start = Instant::now();
    // How much of the standard output was handed to `on_line` (whole lines only).
    let mut seen = 0usize;
    let status = loop {
        out.lines_since(&mut seen, on_line);
        if let Some(f) = family.as_mut() {
            f.watch();
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                end(family, &mut child);
                return Err(Stop::Failed(format!("waiting for {what}: {e}")));
            }
        }
        let stop = if should_stop() {
            Some(Stop::Cancelled)
        } else if out.over.load(Ordering::SeqCst) {
            Some(Stop::Output {
                stream: "standard output",
                limit: limits.stdout_bytes,
            })
        } else if err.over.load(Ordering::SeqCst) {
            Some(Stop::Output {
                stream: "standard error",
                limit: limits.stderr_bytes,
            })
        } else if start.elapsed() > limits.time {
            Some(Stop::Time(limits.time))
        } else {
            None
        };
        if let Some(stop) = stop {
            end(family, &mut child);
            return Err(stop);
        }
        std::thread::sleep(CHILD_POLL);
    };
    // It ended on its own: what it started goes with it (a process it forked into a group or
    // a session of its own would outlive it, and may hold its pipes).
    end(family, &mut child);
    // What it printed last may still be in the pipes; a process it left behind may hold them.
    let drained = Instant::now();
    while !(out.done.load(Ordering::SeqCst) && err.done.load(Ordering::SeqCst))
        && drained.elapsed() < DRAIN_WAIT
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    out.lines_since(&mut seen, on_line);
    // Stopped reading at a limit, the pipe closed: the child may have ended of that.
    if out.over.load(Ordering::SeqCst) {
        return Err(Stop::Output {
            stream: "standard output",
            limit: limits.stdout_bytes,
        });
    }
    if err.over.load(Ordering::SeqCst) {
        return Err(Stop::Output {
            stream: "standard error",
            limit: limits.stderr_bytes,
        });
    }
    Ok(Finished {
        success: status.success(),
        status: status.to_string(),
        stdout: out.text(),
        stderr: err.text(),
    })
}
