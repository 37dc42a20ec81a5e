//! The service's job slot: at most one job (a long-running request, [`Op::JOB`]) runs at a
//! time; [`Request::Cancel`](crate::protocol::Request::Cancel) stops it and waits (a bounded
//! time) for it to free the slot; its progress events are thinned to a bounded rate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::error::{ComputeError, Result};
use crate::protocol::Event;
use crate::sync::lock;

/// The job running now: what it is, its cancel flag and which take of the slot it is.
#[derive(Debug)]
struct Running {
    what: &'static str,
    cancel: Arc<AtomicBool>,
    take: u64,
}

/// The slot's state: the job running now, and how many times the slot was taken.
#[derive(Debug, Default)]
struct State {
    running: Option<Running>,
    takes: u64,
}

/// The one job slot of a [`Service`](super::Service).
#[derive(Debug, Default)]
pub struct JobSlot {
    state: Mutex<State>,
    /// Notified whenever the slot is freed.
    freed: Condvar,
}

/// What [`JobSlot::cancel_and_wait`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// No job was running.
    NoneRunning,
    /// The running job was asked to stop and freed the slot within the wait.
    Freed,
    /// The running job was asked to stop but still held the slot when the wait ended.
    StillRunning,
}

impl JobSlot {
    /// Takes the slot for job `what` with cancel flag `cancel`, or answers
    /// [`ComputeError::Busy`] naming the job that holds it. The slot is free again when the
    /// returned guard is dropped, however the job ends.
    pub fn take(&self, what: &'static str, cancel: &Arc<AtomicBool>) -> Result<SlotGuard<'_>> {
        let mut state = lock(&self.state);
        if let Some(r) = state.running.as_ref() {
            return Err(ComputeError::Busy(format!("a {}", r.what)));
        }
        state.takes += 1;
        state.running = Some(Running {
            what,
            cancel: Arc::clone(cancel),
            take: state.takes,
        });
        Ok(SlotGuard { slot: self })
    }

    /// Asks the running job to stop; `false` when none is running.
    pub fn cancel(&self) -> bool {
        match lock(&self.state).running.as_ref() {
            Some(r) => {
                r.cancel.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// Asks the running job to stop, then waits at most `within` for it to free the slot, so
    /// that a reply saying it stopped means the next job may start.
    pub fn cancel_and_wait(&self, within: Duration) -> CancelOutcome {
        let deadline = Instant::now() + within;
        let mut state = lock(&self.state);
        let take = match state.running.as_ref() {
            Some(r) => {
                r.cancel.store(true, Ordering::Relaxed);
                r.take
            }
            None => return CancelOutcome::NoneRunning,
        };
        loop {
            // Freed, or freed and taken again by another job: either way this one is gone.
            if state.running.as_ref().is_none_or(|r| r.take != take) {
                return CancelOutcome::Freed;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return CancelOutcome::StillRunning;
            }
            state = self
                .freed
                .wait_timeout(state, left)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
    }

    /// The job running now, if any.
    pub fn running(&self) -> Option<&'static str> {
        lock(&self.state).running.as_ref().map(|r| r.what)
    }
}

/// Frees its [`JobSlot`] when dropped.
#[derive(Debug)]
pub struct SlotGuard<'a> {
    slot: &'a JobSlot,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        lock(&self.slot.state).running = None;
        self.slot.freed.notify_all();
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

    /// Issue 30: `cancel` answers once the cancelled job has freed the slot (or says that it
    /// has not, after a bounded wait).
    #[test]
    fn cancel_waits_for_the_slot_to_be_freed() {
        let slot = Arc::new(JobSlot::default());
        assert_eq!(
            slot.cancel_and_wait(Duration::from_secs(1)),
            CancelOutcome::NoneRunning
        );
        // A job that stops 200 ms after its flag is set.
        let flag = Arc::new(AtomicBool::new(false));
        let (taken_tx, taken_rx) = std::sync::mpsc::channel();
        let job = {
            let (slot, flag) = (Arc::clone(&slot), Arc::clone(&flag));
            std::thread::spawn(move || {
                let _guard = slot.take("step_anatomy", &flag).unwrap();
                taken_tx.send(()).unwrap();
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                std::thread::sleep(Duration::from_millis(200));
            })
        };
        taken_rx.recv().unwrap();
        let t0 = Instant::now();
        assert_eq!(
            slot.cancel_and_wait(Duration::from_secs(5)),
            CancelOutcome::Freed
        );
        assert!(
            t0.elapsed() >= Duration::from_millis(190),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(slot.running(), None, "free when the reply says so");
        job.join().unwrap();
        // A job that does not stop: the wait ends, saying so.
        let stuck = Arc::new(AtomicBool::new(false));
        let _held = slot.take("data_fetch", &stuck).unwrap();
        let t0 = Instant::now();
        assert_eq!(
            slot.cancel_and_wait(Duration::from_millis(100)),
            CancelOutcome::StillRunning
        );
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert!(
            stuck.load(Ordering::Relaxed),
            "the flag is set all the same"
        );
    }
}
