//! The CPU backend's memory accounting: bytes allocated, current and peak, split by what the
//! allocations hold ([`MemoryMeter`]), and the [`Ticket`] each buffer carries.

use std::sync::{Arc, Mutex};

use crate::memory::{MemoryCategory, MemorySplit};

/// Bytes allocated through a backend: current and peak, split by what the allocations hold
/// ([`MemoryCategory`], set by the trainer before it allocates; kernel scratch allocated
/// later counts as workspace).
#[derive(Debug, Default)]
pub struct MemoryMeter {
    state: Mutex<MeterState>,
}

#[derive(Debug)]
pub(super) struct MeterState {
    current: u64,
    peak: u64,
    category: MemoryCategory,
    by: MemorySplit,
    at_peak: MemorySplit,
}

impl Default for MeterState {
    fn default() -> Self {
        MeterState {
            current: 0,
            peak: 0,
            category: MemoryCategory::Workspace,
            by: MemorySplit::default(),
            at_peak: MemorySplit::default(),
        }
    }
}

impl MemoryMeter {
    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, MeterState> {
        // The state is plain numbers: a panic elsewhere cannot leave it half-written.
        crate::sync::lock(&self.state)
    }
    /// Counts `bytes` in the current category; returns the category, to give them back to.
    pub(crate) fn add(&self, bytes: u64) -> MemoryCategory {
        let mut s = self.state();
        let c = s.category;
        s.current += bytes;
        *s.by.get_mut(c) += bytes;
        if s.current > s.peak {
            s.peak = s.current;
            s.at_peak = s.by;
        }
        c
    }
    pub(crate) fn sub(&self, bytes: u64, category: MemoryCategory) {
        let mut s = self.state();
        s.current = s.current.saturating_sub(bytes);
        let by = s.by.get_mut(category);
        *by = by.saturating_sub(bytes);
    }
    /// Bytes allocated now.
    pub fn current(&self) -> u64 {
        self.state().current
    }
    /// Highest `current` since the last reset.
    pub fn peak(&self) -> u64 {
        self.state().peak
    }
    /// The split of [`MemoryMeter::peak`] by category (sums to it).
    pub fn peak_split(&self) -> MemorySplit {
        self.state().at_peak
    }
    /// What the next allocations hold.
    pub(crate) fn set_category(&self, c: MemoryCategory) {
        self.state().category = c;
    }
    pub(crate) fn reset(&self) {
        let mut s = self.state();
        s.peak = s.current;
        s.at_peak = s.by;
    }
}

/// Accounting ticket: returns its bytes to the meter when dropped.
#[derive(Debug)]
pub(crate) struct Ticket {
    bytes: u64,
    category: MemoryCategory,
    meter: Arc<MemoryMeter>,
}

impl Ticket {
    /// Counts `bytes` on `meter` until the ticket is dropped.
    pub(crate) fn new(meter: &Arc<MemoryMeter>, bytes: u64) -> Ticket {
        let category = meter.add(bytes);
        Ticket {
            bytes,
            category,
            meter: meter.clone(),
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.meter.sub(self.bytes, self.category);
    }
}
