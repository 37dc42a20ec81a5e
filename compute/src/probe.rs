//! The low-level probe of the step anatomy: while a thread records ([`begin`], driven by the
//! recorder in [`crate::anatomy`]), every training primitive the CPU backend runs there (a
//! host-clock span, [`span`]) and every CUDA kernel launched there through the typed wrappers of
//! `cuda::launch` (a pair of CUDA events around the launch, [`launch_phase`] and [`log_launch`])
//! is logged with its name and the step's phase ([`set_phase`]: `forward`, `backward`,
//! `optimizer`). A leaf: it imports nothing of the engine, so the backends can call it.
//!
//! Nothing is logged while a stream is being captured into a CUDA graph. When the probe is off,
//! a launch or a primitive pays one thread-local check.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::time::Instant;

thread_local! {
    /// Whether this thread records (the one check a launch pays when it does not).
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// The phase of the step the next launches belong to.
    static PHASE: Cell<&'static str> = const { Cell::new("") };
    /// What was recorded so far.
    static LOG: RefCell<Log> = const {
        RefCell::new(Log {
            entries: Vec::new(),
            error: None,
        })
    };
}

/// How one launch was timed.
pub(crate) enum Clock {
    /// The host clock around a primitive.
    Host { start: Instant, end: Instant },
    /// CUDA events recorded before and after a kernel launch on its stream.
    #[cfg(feature = "cuda")]
    Device {
        start: cudarc::driver::CudaEvent,
        end: cudarc::driver::CudaEvent,
    },
}

impl Clock {
    /// When a host-clock span started (`None` for a kernel timed on the device).
    pub(crate) fn host_start(&self) -> Option<Instant> {
        match self {
            Clock::Host { start, .. } => Some(*start),
            #[cfg(feature = "cuda")]
            Clock::Device { .. } => None,
        }
    }
}

/// One logged launch.
pub(crate) struct Entry {
    pub(crate) name: Cow<'static, str>,
    pub(crate) phase: &'static str,
    pub(crate) clock: Clock,
}

/// The log of one recording.
#[derive(Default)]
pub(crate) struct Log {
    pub(crate) entries: Vec<Entry>,
    /// The first failure to record (an event that could not be created), reported at the end.
    pub(crate) error: Option<String>,
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

/// Turns this thread's probe on with an empty log and an empty phase (an earlier unfinished
/// log is dropped).
pub(crate) fn begin() {
    LOG.with(|l| *l.borrow_mut() = Log::default());
    PHASE.with(|p| p.set(""));
    ACTIVE.with(|a| a.set(true));
}

/// Turns this thread's probe off and hands over what it logged.
pub(crate) fn end() -> Log {
    ACTIVE.with(|a| a.set(false));
    LOG.with(|l| std::mem::take(&mut *l.borrow_mut()))
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
