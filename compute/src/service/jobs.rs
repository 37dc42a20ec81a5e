//! The service's job slot: at most one job (a long-running request, [`Op::JOB`]) runs at a
//! time; [`Request::Cancel`](crate::protocol::Request::Cancel) stops it; its progress events
//! are thinned to a bounded rate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{ComputeError, Result};
use crate::protocol::Event;

/// Locks `m`, carrying on after a panic in another holder (the data are plain flags and
/// caches that a panic leaves whole).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The job running now: what it is and its cancel flag.
#[derive(Debug)]
struct Running {
    what: &'static str,
    cancel: Arc<AtomicBool>,
}

/// The one job slot of a [`Service`](super::Service).
#[derive(Debug, Default)]
pub struct JobSlot {
    running: Mutex<Option<Running>>,
}

impl JobSlot {
    /// Takes the slot for job `what` with cancel flag `cancel`, or answers
    /// [`ComputeError::Busy`] naming the job that holds it. The slot is free again when the
    /// returned guard is dropped, however the job ends.
    pub fn take(&self, what: &'static str, cancel: &Arc<AtomicBool>) -> Result<SlotGuard<'_>> {
        let mut running = lock(&self.running);
        if let Some(r) = running.as_ref() {
            return Err(ComputeError::Busy(format!("a {}", r.what)));
        }
        *running = Some(Running {
            what,
            cancel: Arc::clone(cancel),
        });
        Ok(SlotGuard { slot: self })
    }

    /// Asks the running job to stop; `false` when none is running.
    pub fn cancel(&self) -> bool {
        match lock(&self.running).as_ref() {
            Some(r) => {
                r.cancel.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// The job running now, if any.
    pub fn running(&self) -> Option<&'static str> {
        lock(&self.running).as_ref().map(|r| r.what)
    }
}

/// Frees its [`JobSlot`] when dropped.
#[derive(Debug)]
pub struct SlotGuard<'a> {
    slot: &'a JobSlot,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        *lock(&self.slot.running) = None;
    }
}

/// Passes progress events at a bounded rate: boundaries always, ticks
/// ([`Event::is_tick`]) at most `per_second` times a second.
#[derive(Debug)]
pub struct EventThrottle {
    gap: Duration,
    last: Option<Instant>,
}

impl EventThrottle {
    /// A throttle letting through at most `per_second` ticks a second (at least one).
    pub fn new(per_second: u32) -> Self {
        EventThrottle {
            gap: Duration::from_secs(1) / per_second.max(1),
            last: None,
        }
    }

    /// Whether `event` should be sent now.
    pub fn pass(&mut self, event: &Event) -> bool {
        if !event.is_tick() {
            return true;
        }
        let now = Instant::now();
        match self.last {
            Some(t) if now.duration_since(t) < self.gap => false,
            _ => {
                self.last = Some(now);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{DuelEvent, Precision};

    #[test]
    fn the_throttle_passes_boundaries_and_spaces_ticks() {
        let mut t = EventThrottle::new(20);
        let step = Event::Duel {
            event: DuelEvent::Step {
                precision: Precision::Fp32,
                epoch: 1,
                step: 1,
                steps: 2,
                loss: 1.0,
                loss_scale: 1.0,
                skipped: 0,
            },
        };
        let start = Event::Duel {
            event: DuelEvent::RunStarted {
                precision: Precision::Fp32,
                steps_per_epoch: 2,
                epochs: 1,
            },
        };
        assert!(t.pass(&step));
        assert!(!t.pass(&step));
        assert!(t.pass(&start));
        std::thread::sleep(Duration::from_millis(60));
        assert!(t.pass(&step));
    }

    #[test]
    fn one_job_at_a_time_and_cancel_reaches_the_running_one() {
        let slot = JobSlot::default();
        assert!(!slot.cancel(), "nothing runs yet");
        let flag = Arc::new(AtomicBool::new(false));
        let guard = slot.take("duel", &flag).unwrap();
        assert_eq!(slot.running(), Some("duel"));
        let other = Arc::new(AtomicBool::new(false));
        let e = slot.take("duel", &other).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Busy);
        assert!(e.to_string().contains("a duel is already running"), "{e}");
        assert!(slot.cancel());
        assert!(flag.load(Ordering::Relaxed));
        assert!(!other.load(Ordering::Relaxed));
        drop(guard);
        assert_eq!(slot.running(), None);
        assert!(slot.take("duel", &other).is_ok());
    }
}
