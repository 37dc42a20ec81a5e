//! A training step's anatomy: one step of the lab CNN replayed with every launch timed on its
//! own (CUDA events around each kernel, outside the graph; the host clock around each primitive
//! on the CPU backend), for each contestant of a duel, beside the graph-replayed step.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::{parse_json, ParseError};
use crate::types::Precision;

/// The phases of a step, in order: each is a track (`tid`) of the trace.
pub const PHASES: [&str; 3] = ["forward", "backward", "optimizer"];

/// The dtype suffixes an entry point may end with (`conv_mma_fwd_f16`).
const DTYPE_SUFFIXES: [&str; 4] = ["_f32", "_f16", "_bf16", "_tf32"];

/// Within this fraction of the first contestant's time, a kernel role counts as unchanged
/// ([`RoleChange::Same`]).
pub const SAME_WITHIN: f64 = 0.10;

/// Below this time (1 µs, in ms) in both contestants a role is too short for a ratio to mean
/// anything ([`RoleChange::TooShort`]): a clock read or a launch's jitter is of that size, and
/// "0.0 → 0.3 µs" is not "7× slower".
pub const RESOLUTION_MS: f64 = 0.001;

/// One launch of a step (a kernel on the GPU, a primitive on the CPU), in issue order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchTime {
    /// The kernel's entry point (`conv_mma_fwd_f16`) or the CPU primitive
    /// (`conv_block_fwd conv1`).
    pub name: String,
    /// The part of the step it belongs to: `forward`, `backward` or `optimizer`.
    pub phase: String,
    /// Its start, ms from the step's first launch (median over the timed steps).
    pub start_ms: f64,
    /// Its duration, ms (median over the timed steps).
    pub ms: f64,
}

/// One contestant's step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContestantAnatomy {
    /// The precision.
    pub precision: Precision,
    /// Every launch of one step, in issue order.
    pub launches: Vec<LaunchTime>,
    /// The sum of the launches' durations, ms.
    pub sum_ms: f64,
    /// The step launched one launch at a time with the timers around each, first start to
    /// last end, ms (median over the timed steps).
    pub launched_step_ms: f64,
    /// The same step replayed as a CUDA graph, ms (median); `None` on the CPU backend or where
    /// graphs are off.
    pub graph_step_ms: Option<f64>,
}

/// The report of a step-anatomy job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepAnatomy {
    /// `cuda` or `cpu`.
    pub backend: String,
    /// The device, in words.
    pub device: String,
    /// The data set the step's batch came from.
    pub dataset: String,
    /// Images per step.
    pub batch: usize,
    /// Steps timed per contestant (each launch's figures are medians over them).
    pub steps: usize,
    /// How each launch was timed, in words.
    pub clock: String,
    /// One per precision, in the order asked.
    pub contestants: Vec<ContestantAnatomy>,
    /// Notes (a precision the backend cannot run, graphs off...).
    pub notes: Vec<String>,
}

impl StepAnatomy {
    /// Parses the JSON of `showdown bench anatomy --json-out` (or a saved lab run's report).
    pub fn parse(json: &str) -> Result<Self, ParseError> {
        parse_json(json, "step anatomy")
    }

    /// What the anatomy's clock measures, and how its step relates to a duel's step, in two
    /// sentences: each launch is timed on its own and the step is synchronised around it, so
    /// the launched step is a step taken apart, not the step a duel times (a duel divides its
    /// epoch's training time by its steps, with no timer around each primitive, and on a GPU
    /// replays the step as one CUDA graph).
    pub fn clock_statement(&self) -> String {
        let launched: Vec<String> = self
            .contestants
            .iter()
            .map(|c| format!("{} {:.3} ms", c.precision, c.launched_step_ms))
            .collect();
        let graph: Vec<String> = self
            .contestants
            .iter()
            .filter_map(|c| {
                c.graph_step_ms
                    .map(|g| format!("{} {g:.3} ms", c.precision))
            })
            .collect();
        let what = if self.backend == "cuda" {
            "each kernel is timed on its own and launched one at a time"
        } else {
            "each primitive is timed on its own, synchronised: it runs to its end before the next one starts, with a clock read before and after it"
        };
        let measures = format!(
            "What the clock measures: {} ({what}), the median over {} step(s) at batch {}; the launched step (first start to last end: {}) includes the gaps and the timers between them.",
            self.clock,
            self.steps,
            self.batch,
            launched.join(", ")
        );
        let duel = if graph.is_empty() {
            format!(
                "A duel's step is not this one: a duel divides each epoch's training time by its steps, the same primitives running back to back without a timer around each and the model training between them; compare a duel at batch {} on this machine with the launched step, and read the rows below as where a step's time goes.",
                self.batch
            )
        } else {
            format!(
                "A duel's step is not the launched one: a duel replays the step as one CUDA graph, without the per-kernel timers and launch gaps, and divides each epoch's training time by its steps; compare a duel at batch {} on this machine with the graph step ({}).",
                self.batch,
                graph.join(", ")
            )
        };
        format!("{measures} {duel}")
    }

    /// One line for the run list: each contestant's kernel sum and step time.
    pub fn headline(&self) -> String {
        let parts: Vec<String> = self
            .contestants
            .iter()
            .map(|c| {
                format!(
                    "{} {} launches {:.3} ms",
                    c.precision,
                    c.launches.len(),
                    c.sum_ms
                )
            })
            .collect();
        format!(
            "batch {} on {}: {}",
            self.batch,
            self.backend,
            parts.join(", ")
        )
    }
}

/// The median of `values` (the mean of the two middle ones for an even count); `None` when
/// there are none. NaNs sort last.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => None,
        l if l % 2 == 1 => Some(v[l / 2]),
        l => Some((v[l / 2 - 1] + v[l / 2]) / 2.0),
    }
}

/// First start to last end of one step's launches, ms.
fn step_span(step: &[LaunchTime]) -> f64 {
    let first = step
        .iter()
        .map(|l| l.start_ms)
        .fold(f64::INFINITY, f64::min);
    let last = step
        .iter()
        .map(|l| l.start_ms + l.ms)
        .fold(f64::NEG_INFINITY, f64::max);
    if step.is_empty() {
        0.0
    } else {
        last - first
    }
}

/// `name` without its dtype suffix (`conv_mma_fwd_f16` → `conv_mma_fwd`).
pub fn strip_dtype(name: &str) -> &str {
    DTYPE_SUFFIXES
        .iter()
        .find_map(|sfx| name.strip_suffix(sfx))
        .unwrap_or(name)
}

impl ContestantAnatomy {
    /// One contestant's anatomy from its timed steps, each the launches of one step (start from
    /// the step's first launch, duration; ms): per launch index the median start and duration,
    /// the median of the steps' sums and of their first-start-to-last-end spans. Steps whose
    /// launches differ from the first non-empty step's (names and phases) are left out of the
    /// medians. `None` when no step launched anything.
    pub fn from_steps(
        precision: Precision,
        steps: &[Vec<LaunchTime>],
        graph_step_ms: Option<f64>,
    ) -> Option<Self> {
        let first = steps.iter().find(|s| !s.is_empty())?;
        let alike: Vec<&Vec<LaunchTime>> = steps
            .iter()
            .filter(|s| {
                s.len() == first.len()
                    && s.iter()
                        .zip(first.iter())
                        .all(|(a, b)| a.name == b.name && a.phase == b.phase)
            })
            .collect();
        let launches = first
            .iter()
            .enumerate()
            .map(|(i, l)| LaunchTime {
                name: l.name.clone(),
                phase: l.phase.clone(),
                start_ms: median(alike.iter().map(|s| s[i].start_ms)).unwrap_or(l.start_ms),
                ms: median(alike.iter().map(|s| s[i].ms)).unwrap_or(l.ms),
            })
            .collect();
        Some(ContestantAnatomy {
            precision,
            launches,
            sum_ms: median(alike.iter().map(|s| s.iter().map(|l| l.ms).sum())).unwrap_or(0.0),
            launched_step_ms: median(alike.iter().map(|s| step_span(s))).unwrap_or(0.0),
            graph_step_ms,
        })
    }

    /// The graph-replayed step minus the sum of the launches, ms: what the graph saves (when
    /// negative, the replayed step is shorter than its kernels launched one by one) or the time
    /// between kernels it keeps. `None` without a graph.
    pub fn gap_ms(&self) -> Option<f64> {
        self.graph_step_ms.map(|g| g - self.sum_ms)
    }

    /// The launches' time per phase, in the order the phases first appear (the stacked bars).
    pub fn phase_totals(&self) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = Vec::new();
        for l in &self.launches {
            match out.iter_mut().find(|(p, _)| *p == l.phase) {
                Some((_, ms)) => *ms += l.ms,
                None => out.push((l.phase.clone(), l.ms)),
            }
        }
        out
    }

    /// Each launch's role key: its name without the dtype suffix and its occurrence (1-based)
    /// among the launches of that base name, in issue order.
    fn role_keys(&self) -> Vec<(String, usize)> {
        let mut seen: Vec<(String, usize)> = Vec::new();
        self.launches
            .iter()
            .map(|l| {
                let base = strip_dtype(&l.name).to_string();
                let n = match seen.iter_mut().find(|(b, _)| *b == base) {
                    Some((_, n)) => {
                        *n += 1;
                        *n
                    }
                    None => {
                        seen.push((base.clone(), 1));
                        1
                    }
                };
                (base, n)
            })
            .collect()
    }
}

/// How a kernel role's time changed from the first contestant's to another's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleChange {
    /// Faster by more than [`SAME_WITHIN`].
    Faster,
    /// Within [`SAME_WITHIN`] of the first contestant's time.
    Same,
    /// Slower by more than [`SAME_WITHIN`].
    Slower,
    /// Only this contestant launches the role (the first one does not).
    Added,
    /// The first contestant launches the role, this one does not.
    Gone,
    /// Both times are under [`RESOLUTION_MS`]: too short to compare.
    TooShort,
}

impl RoleChange {
    /// The change in words, for a table cell (`faster`, `under 1 µs in both`).
    pub fn word(self) -> &'static str {
        match self {
            RoleChange::Faster => "faster",
            RoleChange::Same => "same",
            RoleChange::Slower => "slower",
            RoleChange::Added => "added",
            RoleChange::Gone => "gone",
            RoleChange::TooShort => "under 1 µs in both: too short to compare",
        }
    }
}

/// One kernel role of the step (the same work in every contestant: `dense_fwd`, the second
/// `conv_mma_fwd`) with its time in each contestant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRole {
    /// The label: the entry point without its dtype suffix, with `#k` when the base name is
    /// launched more than once in a step (`conv_mma_fwd #2`).
    pub role: String,
    /// The entry point without its dtype suffix.
    pub base: String,
    /// Which launch of that base name within a step (1-based).
    pub occurrence: usize,
    /// The phase (of the first contestant that launches it).
    pub phase: String,
    /// The entry point each contestant launched (`None`: it has no such launch).
    pub names: Vec<Option<String>>,
    /// Its median time in each contestant, ms.
    pub ms: Vec<Option<f64>>,
    /// Its time over the first contestant's (`None` where either has no such launch, or both
    /// are under [`RESOLUTION_MS`]).
    pub ratio: Vec<Option<f64>>,
}

impl KernelRole {
    /// How contestant `i`'s time compares with the first contestant's; `None` for the first
    /// contestant itself, or where neither launches the role.
    pub fn change(&self, i: usize) -> Option<RoleChange> {
        if i == 0 {
            return None;
        }
        let base = self.ms.first().copied().flatten();
        let mine = self.ms.get(i).copied().flatten();
        Some(match (base, mine) {
            (None, None) => return None,
            (None, Some(_)) => RoleChange::Added,
            (Some(_), None) => RoleChange::Gone,
            (Some(b), Some(m)) => {
                if b.max(m) < RESOLUTION_MS {
                    RoleChange::TooShort
                } else if m < b * (1.0 - SAME_WITHIN) {
                    RoleChange::Faster
                } else if m > b * (1.0 + SAME_WITHIN) {
                    RoleChange::Slower
                } else {
                    RoleChange::Same
                }
            }
        })
    }
}

/// Non-finite values as 0 (the trace wants numbers).
fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// The trace track of a phase: 1.. for [`PHASES`], 4 for anything else.
fn phase_tid(phase: &str) -> usize {
    PHASES
        .iter()
        .position(|p| *p == phase)
        .map_or(PHASES.len() + 1, |i| i + 1)
}

impl StepAnatomy {
    /// The step's kernels grouped by role across the contestants (see [`KernelRole`]), in step
    /// order: the first contestant's launches, each other contestant's own roles placed just
    /// before the next role it shares (or after the last one).
    pub fn roles(&self) -> Vec<KernelRole> {
        type Pending = Vec<((String, usize), KernelRole)>;
        fn place(
            pending: &mut Pending,
            keys: &mut Vec<(String, usize)>,
            rows: &mut Vec<KernelRole>,
            at: usize,
        ) {
            for (i, (k, r)) in pending.drain(..).enumerate() {
                keys.insert(at + i, k);
                rows.insert(at + i, r);
            }
        }
        let n = self.contestants.len();
        let mut keys: Vec<(String, usize)> = Vec::new();
        let mut rows: Vec<KernelRole> = Vec::new();
        for (ci, c) in self.contestants.iter().enumerate() {
            // Where this contestant's own roles go: after the last role it shares so far.
            let mut after = 0;
            let mut pending: Pending = Vec::new();
            for (key, l) in c.role_keys().into_iter().zip(&c.launches) {
                match keys.iter().position(|k| *k == key) {
                    Some(found) => {
                        let at = found.max(after);
                        let placed = pending.len();
                        place(&mut pending, &mut keys, &mut rows, at);
                        let found = if found >= at { found + placed } else { found };
                        rows[found].names[ci] = Some(l.name.clone());
                        rows[found].ms[ci] = Some(l.ms);
                        after = (found + 1).max(at + placed);
                    }
                    None => {
                        let mut row = KernelRole {
                            role: String::new(),
                            base: key.0.clone(),
                            occurrence: key.1,
                            phase: l.phase.clone(),
                            names: vec![None; n],
                            ms: vec![None; n],
                            ratio: vec![None; n],
                        };
                        row.names[ci] = Some(l.name.clone());
                        row.ms[ci] = Some(l.ms);
                        pending.push((key, row));
                    }
                }
            }
            place(&mut pending, &mut keys, &mut rows, after);
        }
        for r in &mut rows {
            let repeated = rows_occurrences(&keys, &r.base) > 1;
            r.role = if repeated {
                format!("{} #{}", r.base, r.occurrence)
            } else {
                r.base.clone()
            };
            let first = r.ms.first().copied().flatten();
            r.ratio =
                r.ms.iter()
                    .map(|m| match (first, m) {
                        (Some(f), Some(m)) if f > 0.0 && f.max(*m) >= RESOLUTION_MS => Some(m / f),
                        _ => None,
                    })
                    .collect();
        }
        rows
    }

    /// The report as Chrome trace-event JSON (`chrome://tracing`, <https://ui.perfetto.dev>):
    /// one process per contestant (named by its precision), one thread per phase of the step,
    /// a complete event (`"ph":"X"`, `ts` and `dur` in µs) per launch at its median start,
    /// and on a `step` thread the launched step and the graph-replayed step.
    pub fn trace_json(&self) -> String {
        use serde_json::{json, Value};
        let mut events: Vec<Value> = Vec::new();
        for (ci, c) in self.contestants.iter().enumerate() {
            let pid = ci + 1;
            let meta = |name: &str, tid: usize, args: Value| json!({"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args});
            events.push(meta(
                "process_name",
                0,
                json!({"name": format!("{} ({})", c.precision, self.backend)}),
            ));
            events.push(meta("process_sort_index", 0, json!({"sort_index": ci})));
            events.push(meta("thread_name", 0, json!({"name": "step"})));
            events.push(meta("thread_sort_index", 0, json!({"sort_index": 0})));
            let mut tids: Vec<(usize, String)> = Vec::new();
            for l in &c.launches {
                let tid = phase_tid(&l.phase);
                if !tids.iter().any(|(t, _)| *t == tid) {
                    let name = if tid <= PHASES.len() {
                        l.phase.clone()
                    } else {
                        "other".into()
                    };
                    tids.push((tid, name));
                }
            }
            tids.sort();
            for (tid, name) in tids {
                events.push(meta("thread_name", tid, json!({"name": name})));
                events.push(meta("thread_sort_index", tid, json!({"sort_index": tid})));
            }
            events.push(json!({
                "name": "launched step", "cat": "step", "ph": "X", "pid": pid, "tid": 0,
                "ts": 0.0, "dur": finite(c.launched_step_ms) * 1e3,
                "args": {"ms": finite(c.launched_step_ms), "sum_ms": finite(c.sum_ms),
                         "launches": c.launches.len()},
            }));
            if let Some(g) = c.graph_step_ms {
                events.push(json!({
                    "name": "graph step (replayed)", "cat": "step", "ph": "X", "pid": pid,
                    "tid": PHASES.len() + 2, "ts": 0.0, "dur": finite(g) * 1e3,
                    "args": {"ms": finite(g)},
                }));
                events.push(meta(
                    "thread_name",
                    PHASES.len() + 2,
                    json!({"name": "graph replay"}),
                ));
            }
            for (i, l) in c.launches.iter().enumerate() {
                events.push(json!({
                    "name": l.name, "cat": "launch", "ph": "X", "pid": pid,
                    "tid": phase_tid(&l.phase),
                    "ts": finite(l.start_ms) * 1e3, "dur": finite(l.ms) * 1e3,
                    "args": {"ms": finite(l.ms), "index": i, "phase": l.phase,
                             "role": strip_dtype(&l.name)},
                }));
            }
        }
        json!({
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": {
                "backend": self.backend, "device": self.device, "dataset": self.dataset,
                "batch": self.batch, "steps": self.steps, "clock": self.clock,
            },
        })
        .to_string()
    }

    /// The tables `showdown bench anatomy` prints: per contestant its launches, their sum, the
    /// launched step, the graph-replayed step and the gap (graph step − sum); then each kernel
    /// role's time per contestant with its ratio to the first.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Step anatomy on {} ({} backend): {}, batch {}, medians of {} step(s)",
            self.device, self.backend, self.dataset, self.batch, self.steps
        );
        let _ = writeln!(s, "timed with {}", self.clock);
        let _ = writeln!(
            s,
            "{:<10} | {:>8} | {:>10} | {:>16} | {:>13} | {:>10}",
            "contestant", "launches", "sum ms", "launched step ms", "graph step ms", "gap ms"
        );
        let _ = writeln!(s, "{}", "-".repeat(82));
        let opt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
        for c in &self.contestants {
            let _ = writeln!(
                s,
                "{:<10} | {:>8} | {:>10.3} | {:>16.3} | {:>13} | {:>10}",
                c.precision.as_str(),
                c.launches.len(),
                c.sum_ms,
                c.launched_step_ms,
                opt(c.graph_step_ms),
                opt(c.gap_ms())
            );
        }
        let roles = self.roles();
        if !roles.is_empty() {
            let _ = writeln!(s);
            let mut head = format!("{:<28} | {:<9}", "kernel role", "phase");
            for (i, c) in self.contestants.iter().enumerate() {
                if i == 0 {
                    let _ = write!(head, " | {:>10}", format!("{} ms", c.precision));
                } else {
                    let _ = write!(head, " | {:>18}", format!("{} ms (x)", c.precision));
                }
            }
            let _ = writeln!(s, "{head}");
            let _ = writeln!(s, "{}", "-".repeat(head.chars().count()));
            for r in &roles {
                let mut line = format!("{:<28} | {:<9}", r.role, r.phase);
                for i in 0..self.contestants.len() {
                    let ms = r.ms.get(i).copied().flatten();
                    if i == 0 {
                        let _ = write!(line, " | {:>10}", opt(ms));
                    } else {
                        let cell = match (ms, r.ratio.get(i).copied().flatten()) {
                            (Some(m), Some(x)) => format!("{m:.3} ({x:.2}x)"),
                            (Some(m), None) => format!("{m:.3}"),
                            _ => "-".into(),
                        };
                        let _ = write!(line, " | {cell:>18}");
                    }
                }
                let _ = writeln!(s, "{}", line.trim_end());
            }
        }
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        s
    }
}

/// How many roles share `base` (its launches per step, at most, over the contestants).
fn rows_occurrences(keys: &[(String, usize)], base: &str) -> usize {
    keys.iter().filter(|(b, _)| b == base).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(name: &str, phase: &str, start_ms: f64, ms: f64) -> LaunchTime {
        LaunchTime {
            name: name.into(),
            phase: phase.into(),
            start_ms,
            ms,
        }
    }

    /// Two contestants on a GPU: FP16 swaps the convolution kernels for tensor-core ones and
    /// halves the dense layer.
    fn report() -> StepAnatomy {
        let fp32 = ContestantAnatomy {
            precision: Precision::Fp32,
            launches: vec![
                launch("gather_f32", "forward", 0.0, 0.010),
                launch("conv_block_fwd_f32", "forward", 0.012, 0.200),
                launch("conv_block_fwd_f32", "forward", 0.215, 0.300),
                launch("dense_fwd_f32", "forward", 0.520, 0.040),
                launch("dense_bwd_f32", "backward", 0.565, 0.080),
                launch("adam_multi", "optimizer", 0.650, 0.050),
            ],
            sum_ms: 0.680,
            launched_step_ms: 0.700,
            graph_step_ms: Some(0.690),
        };
        let fp16 = ContestantAnatomy {
            precision: Precision::Fp16,
            launches: vec![
                launch("gather_f16", "forward", 0.0, 0.010),
                launch("conv_mma_fwd_f16", "forward", 0.012, 0.050),
                launch("conv_mma_fwd_f16", "forward", 0.065, 0.080),
                launch("dense_fwd_f16", "forward", 0.150, 0.020),
                launch("dense_bwd_f16", "backward", 0.175, 0.085),
                launch("check_finite", "optimizer", 0.265, 0.010),
                launch("adam_multi", "optimizer", 0.280, 0.050),
            ],
            sum_ms: 0.305,
            launched_step_ms: 0.330,
            graph_step_ms: None,
        };
        StepAnatomy {
            backend: "cuda".into(),
            device: "Test GPU".into(),
            dataset: "mnist-sample".into(),
            batch: 128,
            steps: 3,
            clock: "CUDA events around each kernel launch, outside the graph".into(),
            contestants: vec![fp32, fp16],
            notes: vec!["bf16: not on this backend".into()],
        }
    }

    #[test]
    fn the_trace_has_one_complete_event_per_launch_in_microseconds() {
        let r = report();
        let v: serde_json::Value = serde_json::from_str(&r.trace_json()).expect("valid JSON");
        assert_eq!(v["displayTimeUnit"], "ms");
        let events = v["traceEvents"].as_array().expect("an event list");
        let launches: Vec<&serde_json::Value> =
            events.iter().filter(|e| e["cat"] == "launch").collect();
        assert_eq!(launches.len(), 13);
        assert!(launches.iter().all(|e| e["ph"] == "X"));
        for (e, l) in launches
            .iter()
            .zip(r.contestants.iter().flat_map(|c| c.launches.iter()))
        {
            assert_eq!(e["name"], l.name.as_str());
            let dur = e["dur"].as_f64().expect("dur is a number");
            let ts = e["ts"].as_f64().expect("ts is a number");
            assert!((dur - l.ms * 1000.0).abs() < 1e-9, "{dur} vs {}", l.ms);
            assert!(
                (ts - l.start_ms * 1000.0).abs() < 1e-9,
                "{ts} vs {}",
                l.start_ms
            );
            assert_eq!(e["args"]["ms"].as_f64(), Some(l.ms));
        }
        // One process per contestant, named by its precision; a thread per phase.
        let names: Vec<(u64, String)> = events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
            .map(|e| {
                (
                    e["pid"].as_u64().unwrap_or(0),
                    e["args"]["name"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                (1, "fp32 (cuda)".to_string()),
                (2, "fp16 (cuda)".to_string())
            ]
        );
        let backward_tid = events
            .iter()
            .find(|e| e["name"] == "thread_name" && e["args"]["name"] == "backward")
            .map(|e| e["tid"].clone());
        let dense_bwd = launches.iter().find(|e| e["name"] == "dense_bwd_f32");
        assert_eq!(dense_bwd.map(|e| e["tid"].clone()), backward_tid);
        // The graph step appears for the contestant that has one.
        let graph: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["name"] == "graph step (replayed)")
            .collect();
        assert_eq!(graph.len(), 1);
        assert_eq!(graph[0]["pid"], 1);
        assert!((graph[0]["dur"].as_f64().unwrap_or(0.0) - 690.0).abs() < 1e-9);
    }

    #[test]
    fn roles_pair_kernels_across_dtypes_and_keep_the_two_convolutions_apart() {
        let roles = report().roles();
        let labels: Vec<&str> = roles.iter().map(|r| r.role.as_str()).collect();
        assert_eq!(
            labels,
            [
                "gather",
                "conv_block_fwd #1",
                "conv_block_fwd #2",
                "conv_mma_fwd #1",
                "conv_mma_fwd #2",
                "dense_fwd",
                "dense_bwd",
                "check_finite",
                "adam_multi",
            ]
        );
        let by = |role: &str| roles.iter().find(|r| r.role == role).expect("role");
        let dense = by("dense_fwd");
        assert_eq!(dense.ms, [Some(0.040), Some(0.020)]);
        assert_eq!(dense.ratio, [Some(1.0), Some(0.5)]);
        assert_eq!(
            dense.names,
            [Some("dense_fwd_f32".into()), Some("dense_fwd_f16".into())]
        );
        assert_eq!(dense.change(1), Some(RoleChange::Faster));
        assert_eq!(by("dense_bwd").change(1), Some(RoleChange::Same));
        assert_eq!(by("gather").change(1), Some(RoleChange::Same));
        assert_eq!(by("conv_block_fwd #2").change(1), Some(RoleChange::Gone));
        assert_eq!(by("conv_mma_fwd #1").change(1), Some(RoleChange::Added));
        assert_eq!(by("conv_mma_fwd #1").ratio, [None, None]);
        assert_eq!(by("check_finite").phase, "optimizer");
        assert_eq!(dense.change(0), None);
    }

    #[test]
    fn the_table_shows_the_gap_and_the_ratios() {
        let t = report().table();
        assert!(t.contains("Test GPU (cuda backend)"), "{t}");
        let fp32 = t
            .lines()
            .find(|l| l.starts_with("fp32 "))
            .expect("fp32 row");
        // gap = graph step − sum = 0.690 − 0.680.
        assert!(
            fp32.contains("0.680") && fp32.contains("0.690") && fp32.ends_with("0.010"),
            "{fp32}"
        );
        let fp16 = t
            .lines()
            .find(|l| l.starts_with("fp16 "))
            .expect("fp16 row");
        assert!(fp16.ends_with("-"), "{fp16}");
        let dense = t
            .lines()
            .find(|l| l.starts_with("dense_fwd "))
            .expect("dense row");
        assert!(dense.contains("0.020 (0.50x)"), "{dense}");
        assert!(t.contains("note: bf16: not on this backend"), "{t}");
    }

    #[test]
    fn contestants_take_medians_over_alike_steps() {
        let step = |k: f64| {
            vec![
                launch("a", "forward", 0.0, 1.0 * k),
                launch("b", "backward", 1.5 * k, 2.0 * k),
            ]
        };
        let odd = vec![launch("a", "forward", 0.0, 100.0)];
        let c = ContestantAnatomy::from_steps(
            Precision::Fp16,
            &[step(1.0), step(3.0), odd, step(2.0)],
            Some(4.0),
        )
        .expect("steps");
        assert_eq!(c.launches.len(), 2);
        assert_eq!((c.launches[0].ms, c.launches[1].start_ms), (2.0, 3.0));
        assert_eq!(c.sum_ms, 6.0);
        assert_eq!(c.launched_step_ms, 7.0);
        assert_eq!(c.gap_ms(), Some(-2.0));
        assert_eq!(
            c.phase_totals(),
            [("forward".to_string(), 2.0), ("backward".to_string(), 4.0)]
        );
        assert!(ContestantAnatomy::from_steps(Precision::Fp32, &[vec![]], None).is_none());
        assert_eq!(median([3.0, 1.0]), Some(2.0));
        assert_eq!(median([]), None);
        assert_eq!(strip_dtype("conv_mma_fwd_bf16"), "conv_mma_fwd");
        assert_eq!(strip_dtype("adam_multi"), "adam_multi");
    }

    /// Issue 26: a role at 0.04 µs in FP32 and 0.3 µs in FP16 was flagged "7.00× slower".
    /// Under 1 µs in both, it is too short to compare: no ratio, not slower.
    #[test]
    fn sub_microsecond_roles_are_not_called_slower() {
        let mut r = report();
        r.contestants[0]
            .launches
            .push(launch("cursor_advance", "optimizer", 0.7, 0.000_04));
        r.contestants[1]
            .launches
            .push(launch("cursor_advance", "optimizer", 0.33, 0.000_3));
        let roles = r.roles();
        let tiny = roles
            .iter()
            .find(|x| x.role == "cursor_advance")
            .expect("the role");
        assert_eq!(tiny.change(1), Some(RoleChange::TooShort));
        assert_eq!(tiny.ratio, [None, None]);
        assert!(!tiny.change(1).is_some_and(|c| c.word().contains("slower")));
        // From 0.04 µs to 5 µs is a real change, above the resolution.
        r.contestants[1].launches.last_mut().expect("a launch").ms = 0.005;
        let roles = r.roles();
        let grown = roles
            .iter()
            .find(|x| x.role == "cursor_advance")
            .expect("the role");
        assert_eq!(grown.change(1), Some(RoleChange::Slower));
        assert!(grown.ratio[1].is_some());
        let table = r.table();
        assert!(!table.contains("7.00x"), "{table}");
    }

    /// Issue 26: on the CPU the anatomy said 61.4 ms per FP32 step while the duel's median step
    /// was 29 ms, without saying what its clock measures. It says so, and how its step relates
    /// to a duel's: the launched step on the CPU, the graph step on a GPU.
    #[test]
    fn the_anatomy_states_its_clock_and_the_duels_step() {
        let mut cpu = report();
        cpu.backend = "cpu".into();
        cpu.clock = "host clock around each primitive".into();
        for c in &mut cpu.contestants {
            c.graph_step_ms = None;
        }
        let said = cpu.clock_statement();
        assert!(said.contains("synchronised"), "{said}");
        assert!(said.contains("host clock around each primitive"), "{said}");
        assert!(said.contains("A duel's step is not this one"), "{said}");
        assert!(
            said.contains("fp32 0.700 ms") && said.contains("batch 128"),
            "{said}"
        );
        let gpu = report().clock_statement();
        assert!(gpu.contains("one CUDA graph"), "{gpu}");
        assert!(gpu.contains("graph step (fp32 0.690 ms)"), "{gpu}");
    }

    #[test]
    fn the_report_round_trips_through_json() {
        let r = report();
        let json = serde_json::to_string(&r).expect("serializes");
        assert_eq!(StepAnatomy::parse(&json).expect("parses"), r);
    }
}
