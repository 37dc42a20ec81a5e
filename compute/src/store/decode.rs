//! The memory that screenshot decodes may take, shared by every decode of the process.
//!
//! A PNG of a megabyte can declare 16384×16384 RGBA pixels: a gibibyte once decoded. Each
//! image is therefore checked against [`MAX_DECODE_BYTES`] from its header alone, before any
//! pixel is decoded, and then takes its share of the process's [`DECODE_BUDGET`] for as long
//! as it decodes. A decode that does not fit waits a little ([`DECODE_WAIT`]) for others to
//! finish, then is refused as busy: ten requests at once can never hold more than the budget.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The most bytes one screenshot may take decoded (64 Mpx of RGBA, e.g. 8192×8192).
pub const MAX_DECODE_BYTES: u64 = 256 << 20;

/// The most bytes all the screenshot decodes of the process may take at once.
pub const DECODE_BUDGET_BYTES: u64 = 512 << 20;

/// How long a decode waits for others to free budget before it is refused.
pub const DECODE_WAIT: Duration = Duration::from_secs(5);

/// A byte budget shared by concurrent decodes.
#[derive(Debug)]
pub struct DecodeBudget {
    total: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

/// The process's budget: memory is the process's, so every store and service shares it.
pub static DECODE_BUDGET: DecodeBudget = DecodeBudget::new(DECODE_BUDGET_BYTES);

/// A share of a [`DecodeBudget`], given back when dropped.
#[derive(Debug)]
pub struct DecodeLease<'a> {
    budget: &'a DecodeBudget,
    bytes: u64,
}

impl DecodeBudget {
    /// A budget of `total` bytes.
    pub const fn new(total: u64) -> Self {
        DecodeBudget {
            total,
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// The budget's size in bytes.
    pub fn total(&self) -> u64 {
        self.total
    }

    fn used(&self) -> MutexGuard<'_, u64> {
        // A decode that panicked while holding the lock left a consistent number behind.
        self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes taken now.
    pub fn in_use(&self) -> u64 {
        *self.used()
    }

    /// Takes `bytes` of the budget, waiting up to `wait` for other decodes to give theirs
    /// back; `Err(bytes in use)` when they do not fit in time (or never could).
    pub fn take(&self, bytes: u64, wait: Duration) -> Result<DecodeLease<'_>, u64> {
        let deadline = Instant::now() + wait;
        let mut used = self.used();
        loop {
            if bytes <= self.total.saturating_sub(*used) {
                *used += bytes;
                return Ok(DecodeLease {
                    budget: self,
                    bytes,
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if bytes > self.total || left.is_zero() {
                return Err(*used);
            }
            used = self
                .freed
                .wait_timeout(used, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

impl Drop for DecodeLease<'_> {
    fn drop(&mut self) {
        let mut used = self.budget.used();
        *used = used.saturating_sub(self.bytes);
        drop(used);
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_share_the_budget_and_give_it_back() {
        let b = DecodeBudget::new(100);
        let a = b.take(60, Duration::ZERO).unwrap();
        assert_eq!(b.take(50, Duration::ZERO).unwrap_err(), 60);
        let c = b.take(40, Duration::ZERO).unwrap();
        assert_eq!(b.in_use(), 100);
        drop(a);
        assert_eq!(b.in_use(), 40);
        assert!(b.take(60, Duration::ZERO).is_ok());
        drop(c);
        assert_eq!(b.in_use(), 0);
        assert!(b.take(101, Duration::from_secs(5)).is_err(), "never fits");
    }

    #[test]
    fn a_decode_waits_for_one_that_ends() {
        let b = std::sync::Arc::new(DecodeBudget::new(100));
        let held = b.take(80, Duration::ZERO).unwrap();
        let waiter = {
            let b = std::sync::Arc::clone(&b);
            std::thread::spawn(move || b.take(50, Duration::from_secs(20)).map(|l| l.bytes))
        };
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        assert_eq!(waiter.join().unwrap(), Ok(50));
        assert_eq!(b.in_use(), 0);
    }
}
