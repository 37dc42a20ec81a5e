//! Locking shared state the same way everywhere (the service, the doors, the supervisor).

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, carrying on after a panic in another holder: the data behind the lab's mutexes
/// are plain flags, caches, queues and readings that a panic leaves whole, and a poisoned lock
/// must not turn one bug into every later request failing.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_poisoned_by_a_panic_still_opens() {
        let m = std::sync::Arc::new(Mutex::new(1));
        let m2 = std::sync::Arc::clone(&m);
        let _ = std::thread::spawn(move || {
            let _g = m2.lock();
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        *lock(&m) += 1;
        assert_eq!(*lock(&m), 2);
    }
}
