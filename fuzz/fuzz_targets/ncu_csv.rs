//! Fuzzes the Nsight Compute CSV importer (`compute::ncu::import_bytes`).
//!
//! Invariants: the importer never panics; an `Ok` report has at least one kernel, every
//! kernel has a non-empty name, and every number it holds (printed value, SI value, minimum,
//! maximum, rule speedup) is finite. An `Err` names a line (>= 1).
#![no_main]

use compute::ncu::{import_bytes, MetricValue};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let report = match import_bytes(data) {
        Ok(r) => r,
        Err(e) => {
            assert!(e.line() >= 1, "error without a line: {e}");
            // The message is built (and bounded) without panicking.
            let _ = e.to_string();
            return;
        }
    };
    assert!(!report.kernels.is_empty(), "Ok report without kernels");
    for k in &report.kernels {
        assert!(!k.name.is_empty(), "kernel {} has an empty name", k.id);
        for m in &k.metrics {
            if let Some(v) = m.si_value {
                assert!(
                    v.is_finite(),
                    "kernel {} metric {}/{}: si_value {v} ({:?} {})",
                    k.id,
                    m.section(),
                    m.name(),
                    m.value,
                    m.unit()
                );
                assert!(m.si_unit().is_some(), "si_value without si_unit");
            }
            if let MetricValue::Number(v) = m.value {
                assert!(v.is_finite(), "metric {}: printed value {v}", m.name());
                assert!(
                    m.si_value.is_some(),
                    "metric {}: number without si_value",
                    m.name()
                );
            }
            for v in [m.min(), m.max()].into_iter().flatten() {
                assert!(v.is_finite(), "metric {}: min/max {v}", m.name());
            }
        }
        for r in &k.rules {
            if let Some(s) = r.speedup {
                assert!(s.is_finite(), "rule {}: speedup {s}", r.name);
            }
        }
    }
});
