//! What a speed-up rests on: every saved run of the same duel ([`Basis`]), the rule that
//! states a speed-up only from [`MIN_RUNS`] runs, and the sentence that says so. The verdict
//! and its groups by origin read it; it reads only the run history's summaries.

use serde::{Deserialize, Serialize};

use crate::runs::RunSummary;
use crate::stats::MIN_RUNS;

/// What the verdict's speed-up rests on: every saved run of the same duel as the newest (same
/// data, backend, device, contestants and settings; see [`RunSummary::same_setup`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Basis {
    /// The runs' identifiers, newest first.
    pub runs: Vec<String>,
    /// Each run's FP32-over-FP16 median epoch time, in the same order.
    pub speedups: Vec<f64>,
    /// The median of [`Basis::speedups`].
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Basis {
    /// The speed-ups of every run of `history` with the same setup as `latest` (itself
    /// included); `None` when none has a speed-up.
    pub fn of(latest: &RunSummary, history: &[RunSummary]) -> Option<Basis> {
        let same: Vec<(&str, f64)> = history
            .iter()
            .filter(|r| r.id == latest.id || latest.same_setup(r))
            .filter_map(|r| r.speedup_fp16_vs_fp32.map(|x| (r.id.as_str(), x)))
            .filter(|(_, x)| x.is_finite() && *x > 0.0)
            .collect();
        if same.is_empty() {
            return None;
        }
        let mut sorted: Vec<f64> = same.iter().map(|x| x.1).collect();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Basis {
            runs: same.iter().map(|x| x.0.to_string()).collect(),
            speedups: same.iter().map(|x| x.1).collect(),
            median,
            min: sorted[0],
            max: sorted[n - 1],
        })
    }

    /// Whether enough runs back the speed-up for the verdict to state it ([`MIN_RUNS`]).
    pub fn enough(&self) -> bool {
        self.runs.len() >= MIN_RUNS
    }

    /// `1 run` / `4 runs, 0.98–1.37×`.
    pub fn spread(&self) -> String {
        match self.runs.len() {
            1 => "1 run, no spread yet".into(),
            n => format!("{n} runs, spread {:.2}–{:.2}×", self.min, self.max),
        }
    }
}

/// What the speed-up rests on, in words: `Speed-up over 4 runs of this duel: median 1.02×,
/// spread 0.98–1.37× (each: 1.37×, 0.98×, …).`
pub fn basis_line(b: &Basis) -> String {
    let each: Vec<String> = b.speedups.iter().map(|x| format!("{x:.2}×")).collect();
    let n = b.runs.len();
    let head = if n == 1 {
        format!("Speed-up rests on 1 run of this duel: {:.2}×", b.median)
    } else {
        format!(
            "Speed-up rests on {n} runs of this duel: median {:.2}×, spread {:.2}–{:.2}× (newest first: {})",
            b.median,
            b.min,
            b.max,
            each.join(", ")
        )
    };
    if b.enough() {
        format!("{head}.")
    } else {
        format!("{head}; {MIN_RUNS} runs are needed before a speed-up is stated.")
    }
}
