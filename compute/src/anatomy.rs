//! The step-anatomy recorder: while it records on a thread, every training primitive the CPU
//! backend runs there (a host-clock span, [`span`]) and every CUDA kernel launched there through
//! the typed wrappers of `cuda::launch` (a pair of CUDA events around the launch, on the same
//! stream; with [`start_on_gpu`], CUPTI's record of the kernel where CUPTI can be used) is
//! logged with its name and the step's phase ([`set_phase`]: `forward`, `backward`,
//! `optimizer`). [`Trainer::anatomy`](crate::train::Trainer::anatomy) records steps this way and
//! turns them into a [`ContestantAnatomy`](crate::bench::anatomy::ContestantAnatomy).
//!
//! Nothing is logged while a stream is being captured into a CUDA graph (a graph's kernels run
//! as one replay: the anatomy times the step launched one kernel at a time instead). When the
//! recorder is off, a launch or a primitive pays one thread-local check.
//!
//! ```
//! use compute::anatomy;
//! let (value, recording) = anatomy::record(|| {
//!     anatomy::set_phase("forward");
//!     let _span = anatomy::span("dense_fwd");
//!     6 * 7
//! });
//! assert_eq!(value, 42);
//! let launches = recording.resolve().unwrap();
//! assert_eq!((launches[0].name.as_str(), launches[0].phase.as_str()), ("dense_fwd", "forward"));
//! ```

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::time::Instant;

use crate::bench::anatomy::LaunchTime;
use crate::error::{ComputeError, Result};

thread_local! {
    /// Whether this thread records (the one check a launch pays when it does not).
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// The phase of the step the next launches belong to.
    static PHASE: Cell<&'static str> = const { Cell::new("") };
    /// Whether the last resolved recording's kernels were timed by CUPTI's activity records.
    static KERNELS_BY_CUPTI: Cell<bool> = const { Cell::new(false) };
    /// What was recorded so far.
    static LOG: RefCell<Log> = const {
        RefCell::new(Log {
            entries: Vec::new(),
            error: None,
        })
    };
}

/// How one launch was timed.
enum Clock {
    /// The host clock around a primitive.
    Host { start: Instant, end: Instant },
    /// CUDA events recorded before and after a kernel launch on its stream.
    #[cfg(feature = "cuda")]
    Device {
        start: cudarc::driver::CudaEvent,
        end: cudarc::driver::CudaEvent,
    },
}

/// One logged launch.
struct Entry {
    name: Cow<'static, str>,
    phase: &'static str,
    clock: Clock,
}

/// The log of one recording.
#[derive(Default)]
struct Log {
    entries: Vec<Entry>,
    /// The first failure to record (an event that could not be created), reported at the end.
    error: Option<String>,
}

/// Whether this thread is recording.
#[inline]
pub fn is_recording() -> bool {
    ACTIVE.with(Cell::get)
}

fn push(entry: Entry) {
    LOG.with(|l| l.borrow_mut().entries.push(entry));
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn note_error(e: impl std::fmt::Display) {
    LOG.with(|l| {
        let mut l = l.borrow_mut();
        if l.error.is_none() {
            l.error = Some(e.to_string());
        }
    });
}

/// A recording in progress on this thread; [`Session::finish`] ends it and hands the log over.
/// Dropped without finishing (an error, a panic), it stops the recording and drops the log.
#[must_use = "the recording stops when the session is dropped"]
pub struct Session {
    /// A session belongs to its thread.
    _not_send: std::marker::PhantomData<*const ()>,
    /// CUPTI's kernel records, where [`start_on_gpu`] could begin them.
    #[cfg(feature = "cuda")]
    cupti: Option<crate::cuda::cupti::Capture>,
}

/// Starts recording on this thread (an earlier unfinished log is dropped); the phase starts
/// empty.
pub fn start() -> Session {
    LOG.with(|l| *l.borrow_mut() = Log::default());
    PHASE.with(|p| p.set(""));
    ACTIVE.with(|a| a.set(true));
    Session {
        _not_send: std::marker::PhantomData,
        #[cfg(feature = "cuda")]
        cupti: None,
    }
}

/// [`start`] for a step on the GPU: each kernel's duration will come from CUPTI's activity
/// records (its own start and end on the device, the clock the profilers read) where CUPTI can
/// be used, from the CUDA events around its launch otherwise ([`kernels_timed_by_cupti`]
/// says which after [`Recording::resolve`]).
pub fn start_on_gpu() -> Session {
    #[allow(unused_mut)]
    let mut session = start();
    #[cfg(feature = "cuda")]
    {
        session.cupti = crate::cuda::cupti::Capture::begin();
    }
    session
}

/// Whether the kernels of the last recording resolved on this thread were timed by CUPTI's
/// activity records (all of them); `false`: by CUDA events around each launch.
pub fn kernels_timed_by_cupti() -> bool {
    KERNELS_BY_CUPTI.with(Cell::get)
}

impl Session {
    /// Stops recording and returns what was recorded.
    #[cfg_attr(not(feature = "cuda"), allow(unused_mut))]
    pub fn finish(mut self) -> Recording {
        ACTIVE.with(|a| a.set(false));
        let log = LOG.with(|l| std::mem::take(&mut *l.borrow_mut()));
        Recording {
            entries: log.entries,
            error: log.error,
            #[cfg(feature = "cuda")]
            cupti: self.cupti.take(),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(false));
        LOG.with(|l| *l.borrow_mut() = Log::default());
    }
}

/// Runs `f` with the recorder on and returns its value and what it launched.
pub fn record<T>(f: impl FnOnce() -> T) -> (T, Recording) {
    let session = start();
    let value = f();
    (value, session.finish())
}

/// Labels the launches that follow on this thread with the step's phase (`forward`,
/// `backward`, `optimizer`); a no-op unless recording.
#[inline]
pub fn set_phase(phase: &'static str) {
    if is_recording() {
        PHASE.with(|p| p.set(phase));
    }
}

fn phase() -> &'static str {
    PHASE.with(Cell::get)
}

/// A primitive being timed on the host clock; logged when dropped.
#[must_use = "the span ends when this guard is dropped"]
pub struct Span(Option<(Cow<'static, str>, &'static str, Instant)>);

/// Times the rest of the scope as the primitive `name` (nothing unless recording).
#[inline]
pub fn span(name: &'static str) -> Span {
    if !is_recording() {
        return Span(None);
    }
    Span(Some((Cow::Borrowed(name), phase(), Instant::now())))
}

/// [`span`] with a name made only when recording (`conv_block_fwd conv1`).
#[inline]
pub fn span_with(name: impl FnOnce() -> String) -> Span {
    if !is_recording() {
        return Span(None);
    }
    Span(Some((Cow::Owned(name()), phase(), Instant::now())))
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some((name, phase, start)) = self.0.take() {
            let end = Instant::now();
            if is_recording() {
                push(Entry {
                    name,
                    phase,
                    clock: Clock::Host { start, end },
                });
            }
        }
    }
}

/// The phase to log a kernel launch under, when this thread records and `stream` is not being
/// captured into a graph: the launch is then to be timed
/// (`LaunchArgs::record_kernel_launch`) and its events handed to [`log_launch`]. `None`
/// otherwise, at the cost of one thread-local check when the recorder is off.
#[cfg(feature = "cuda")]
#[inline]
pub(crate) fn launch_phase(stream: &cudarc::driver::CudaStream) -> Option<&'static str> {
    if !is_recording() {
        return None;
    }
    launch_phase_slow(stream)
}

#[cfg(feature = "cuda")]
#[cold]
fn launch_phase_slow(stream: &cudarc::driver::CudaStream) -> Option<&'static str> {
    use cudarc::driver::sys::CUstreamCaptureStatus;
    match stream.capture_status() {
        Ok(CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE) => Some(phase()),
        Ok(_) => None,
        Err(e) => {
            note_error(format!("asking whether the stream is being captured: {e}"));
            None
        }
    }
}

/// Logs the launch of entry point `name` in `phase`, timed by the CUDA events recorded just
/// before and after it was submitted (`None`: it was not timed, nothing is logged).
#[cfg(feature = "cuda")]
pub(crate) fn log_launch(
    name: &str,
    phase: &'static str,
    events: Option<(cudarc::driver::CudaEvent, cudarc::driver::CudaEvent)>,
) {
    match events {
        Some((start, end)) if is_recording() => push(Entry {
            name: Cow::Owned(name.to_string()),
            phase,
            clock: Clock::Device { start, end },
        }),
        Some(_) => {}
        None => note_error(format!("{name} was launched without its timing events")),
    }
}

/// What one recording logged, in issue order; [`Recording::resolve`] reads the clocks.
pub struct Recording {
    entries: Vec<Entry>,
    error: Option<String>,
    /// Kernel activity still being captured: finished once the GPU has run the step.
    #[cfg(feature = "cuda")]
    cupti: Option<crate::cuda::cupti::Capture>,
}

impl Recording {
    /// Launches logged.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was logged.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Each launch's name, phase, start (ms from the first launch's start) and duration (ms).
    /// Waits for the GPU where launches were timed with CUDA events; an error if an event could
    /// not be recorded or read.
    pub fn resolve(self) -> Result<Vec<LaunchTime>> {
        if let Some(e) = self.error {
            return Err(ComputeError::Backend {
                backend: "cuda".into(),
                reason: format!("the step anatomy could not time a launch: {e}"),
            });
        }
        let first_host = self.entries.iter().find_map(|e| match &e.clock {
            Clock::Host { start, .. } => Some(*start),
            #[cfg(feature = "cuda")]
            Clock::Device { .. } => None,
        });
        #[cfg(feature = "cuda")]
        let first_device = self.entries.iter().find_map(|e| match &e.clock {
            Clock::Device { start, .. } => Some(start),
            Clock::Host { .. } => None,
        });
        let mut out = Vec::with_capacity(self.entries.len());
        for e in &self.entries {
            let (start_ms, ms) = match &e.clock {
                Clock::Host { start, end } => {
                    let from = first_host.map_or(0.0, |f| secs_ms(start.duration_since(f)));
                    (from, secs_ms(end.duration_since(*start)))
                }
                #[cfg(feature = "cuda")]
                Clock::Device { start, end } => {
                    let from = match first_device {
                        Some(f) => f64::from(f.elapsed_ms(start).map_err(crate::cuda::err)?),
                        None => 0.0,
                    };
                    let ms = f64::from(start.elapsed_ms(end).map_err(crate::cuda::err)?);
                    (from, ms)
                }
            };
            out.push(LaunchTime {
                name: e.name.to_string(),
                phase: e.phase.to_string(),
                start_ms,
                ms,
            });
        }
        KERNELS_BY_CUPTI.with(|c| c.set(false));
        // Reading the events waited for the GPU: every kernel's record is complete now.
        #[cfg(feature = "cuda")]
        if let Some(records) = self.cupti.and_then(|c| c.finish()) {
            let device: Vec<usize> = (0..self.entries.len())
                .filter(|&i| matches!(self.entries[i].clock, Clock::Device { .. }))
                .collect();
            let names: Vec<&str> = device.iter().map(|&i| out[i].name.as_str()).collect();
            let found = crate::cuda::cupti::match_in_order(&names, &records);
            if !device.is_empty() && found.iter().all(Option::is_some) {
                let first = found.iter().flatten().map(|&(s, _)| s).min().unwrap_or(0);
                for (&i, &(s, e)) in device.iter().zip(found.iter().flatten()) {
                    out[i].start_ms = s.saturating_sub(first) as f64 / 1e6;
                    out[i].ms = e.saturating_sub(s) as f64 / 1e6;
                }
                KERNELS_BY_CUPTI.with(|c| c.set(true));
            }
        }
        Ok(out)
    }
}

fn secs_ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_logged_only_while_recording_with_their_phase() {
        drop(span("before"));
        assert!(!is_recording());
        let ((), rec) = record(|| {
            set_phase("forward");
            {
                let _a = span("a");
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            set_phase("optimizer");
            let _b = span_with(|| format!("b {}", 2));
        });
        assert!(!is_recording());
        drop(span("after"));
        assert_eq!(rec.len(), 2);
        let l = rec.resolve().unwrap();
        assert_eq!(
            l.iter()
                .map(|t| (t.name.as_str(), t.phase.as_str()))
                .collect::<Vec<_>>(),
            [("a", "forward"), ("b 2", "optimizer")]
        );
        assert_eq!(l[0].start_ms, 0.0);
        assert!(l[0].ms >= 2.0, "{l:?}");
        assert!(l[1].start_ms >= l[0].ms, "{l:?}");
        // Phases set outside a recording are not kept.
        set_phase("backward");
        let ((), rec) = record(|| drop(span("c")));
        assert_eq!(rec.resolve().unwrap()[0].phase, "");
    }

    #[test]
    fn a_dropped_session_stops_recording() {
        let s = start();
        drop(span("x"));
        drop(s);
        assert!(!is_recording());
        let ((), rec) = record(|| {});
        assert!(rec.is_empty());
    }
}
