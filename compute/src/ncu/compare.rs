//! Metric-by-metric comparison of two kernels (a baseline and a current run).

use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

use super::{Kernel, Metric, MetricValue};

/// How one metric changed between two kernels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDelta {
    /// The metric's section.
    pub section: String,
    /// The metric's name.
    pub name: String,
    /// The unit `base` and `current` are in: the printed unit when both sides printed the
    /// same one, else the SI unit both convert to.
    pub unit: String,
    /// The baseline's value.
    pub base: MetricValue,
    /// The current value.
    pub current: MetricValue,
    /// `current - base`, when both are numbers in the same unit.
    pub delta: Option<f64>,
    /// `100 × delta / |base|`, when `delta` exists and `base` is not zero.
    pub delta_pct: Option<f64>,
}

/// A metric's identity: section, name and body-item label.
type Key<'a> = (&'a str, &'a str, Option<&'a str>);

fn key(m: &Metric) -> Key<'_> {
    (m.section(), m.name(), m.label())
}

/// Compares the metrics `base` and `cur` have in common, matched by (section, name) (and the
/// body-item label, when the export has one), in `base`'s order. Metrics present on one side
/// only are left out; a metric repeated within a kernel is matched by its first occurrence.
///
/// Numbers in the same printed unit are compared as printed; numbers printed in different
/// units (`us` vs `ns`) are compared in SI units; anything else (text, incompatible units)
/// comes with `delta: None`.
pub fn compare(base: &Kernel, cur: &Kernel) -> Vec<MetricDelta> {
    let mut current: HashMap<Key<'_>, &Metric> = HashMap::with_capacity(cur.metrics.len());
    for m in &cur.metrics {
        current.entry(key(m)).or_insert(m);
    }
    let mut seen: HashSet<Key<'_>> = HashSet::with_capacity(base.metrics.len());
    let mut out = Vec::new();
    for b in &base.metrics {
        let k = key(b);
        if !seen.insert(k) {
            continue;
        }
        let Some(c) = current.get(&k) else {
            continue;
        };
        out.push(delta(b, c));
    }
    out
}

fn delta(b: &Metric, c: &Metric) -> MetricDelta {
    let numbers = match (&b.value, &c.value) {
        (MetricValue::Number(x), MetricValue::Number(y)) if b.unit() == c.unit() => {
            Some((*x, *y, b.unit().to_string()))
        }
        (MetricValue::Number(_), MetricValue::Number(_)) => {
            match (b.si_value, c.si_value, b.si_unit(), c.si_unit()) {
                (Some(x), Some(y), Some(ub), Some(uc)) if ub == uc => Some((x, y, ub.to_string())),
                _ => None,
            }
        }
        _ => None,
    };
    match numbers {
        Some((x, y, unit)) => {
            let d = y - x;
            MetricDelta {
                section: b.section().to_string(),
                name: b.name().to_string(),
                unit,
                base: MetricValue::Number(x),
                current: MetricValue::Number(y),
                delta: Some(d),
                delta_pct: (x != 0.0).then(|| 100.0 * d / x.abs()),
            }
        }
        None => MetricDelta {
            section: b.section().to_string(),
            name: b.name().to_string(),
            unit: b.unit().to_string(),
            base: b.value.clone(),
            current: c.value.clone(),
            delta: None,
            delta_pct: None,
        },
    }
}
