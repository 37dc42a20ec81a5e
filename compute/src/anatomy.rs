//! The step-anatomy recorder: [`start`] turns on the [`probe`](crate::probe) of this thread,
//! which logs every training primitive the CPU backend runs there and every CUDA kernel
//! launched there with its name and the step's phase; with [`start_on_gpu`], CUPTI's record of
//! each kernel is captured too, where CUPTI can be used. [`Recording::resolve`] reads the clocks.
//! [`Trainer::anatomy`](crate::train::Trainer::anatomy) records steps this way and turns them
//! into a [`ContestantAnatomy`](crate::bench::anatomy::ContestantAnatomy).
//!
//! Nothing is logged while a stream is being captured into a CUDA graph (a graph's kernels run
//! as one replay: the anatomy times the step launched one kernel at a time instead).
//!
//! ```
//! use compute::{anatomy, probe};
//! let (value, recording) = anatomy::record(|| {
//!     probe::set_phase("forward");
//!     let _span = probe::span("dense_fwd");
//!     6 * 7
//! });
//! assert_eq!(value, 42);
//! let launches = recording.resolve().unwrap();
//! assert_eq!((launches[0].name.as_str(), launches[0].phase.as_str()), ("dense_fwd", "forward"));
//! ```

use std::cell::Cell;

use crate::bench::anatomy::LaunchTime;
use crate::error::{ComputeError, Result};
use crate::probe::{self, Clock, Entry};

pub use crate::probe::is_recording;

thread_local! {
    /// Whether the last resolved recording's kernels were timed by CUPTI's activity records.
    static KERNELS_BY_CUPTI: Cell<bool> = const { Cell::new(false) };
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
    probe::begin();
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
        let log = probe::end();
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
        drop(probe::end());
    }
}

/// Runs `f` with the recorder on and returns its value and what it launched.
pub fn record<T>(f: impl FnOnce() -> T) -> (T, Recording) {
    let session = start();
    let value = f();
    (value, session.finish())
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
        let first_host = self.entries.iter().find_map(|e| e.clock.host_start());
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
    use crate::probe::{set_phase, span, span_with};

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
