//! The seven analysis panels of one kernel, as data for the UI: launch statistics,
//! occupancy, warp state, scheduler, instructions, throughput (speed of light) and the
//! rules' summary. Each panel has its metric rows, an optional chart and a narrative
//! generated from the same numbers, so the text never contradicts the table.
//!
//! Metrics are looked up by their details-page section and name (as ncu prints them; the
//! per-kernel summary uses the same names) and, for raw-page imports, by their raw metric
//! names (`sm__throughput.avg.pct_of_peak_sustained_elapsed`).

use serde::{Deserialize, Serialize};

use super::panel::*;
pub use super::panel::{
    boundness, shown_text, Bar, Boundness, ChartKind, ChartSpec, Panel, PanelRow,
    BALANCED_WITHIN_POINTS, LATENCY_BOUND_BELOW_PCT, UNREADABLE,
};
use super::units::fmt_num;
use super::{Kernel, Rule};

/// Builds the seven panels of kernel `k`, in order: launch, occupancy, warp state,
/// scheduler, instructions, throughput, summary.
pub fn build_panels(k: &Kernel) -> Vec<Panel> {
    // Speed of Light first: whether the kernel is bound by compute or memory is the first
    // question, and the other panels explain the answer.
    vec![
        throughput_panel(k),
        launch_panel(k),
        occupancy_panel(k),
        warp_state_panel(k),
        scheduler_panel(k),
        instructions_panel(k),
        summary_panel(k),
    ]
}

/// A kernel's seven panels, as `ncu panels --json` and the `ncu_panels` request give them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelPanels {
    /// The kernel's ID in its import.
    pub id: u64,
    /// Its full name.
    pub name: String,
    /// Its bare function name.
    pub short_name: String,
    /// The seven panels, with the screenshots attached to each.
    pub panels: Vec<Panel>,
    /// The device's compute capability (`9.0`), when the export names it.
    #[serde(default)]
    pub cc: String,
}

/// A kernel's launch as the occupancy calculator takes it (Act IV's "open in the calculator").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalculatorLaunch {
    /// The compute capability (`9.0`); empty when the export does not say.
    pub cc: String,
    /// Threads per block.
    pub threads: u32,
    /// Registers per thread.
    pub registers: u32,
    /// Shared memory per block, static and dynamic, in bytes.
    pub shared_bytes: u32,
    /// The shared-memory carveout per SM the profiled launch ran with (ncu's `Shared Memory
    /// Configuration Size`), in bytes; ncu's `Block Limit Shared Mem` counts against it.
    /// `None` when the export does not say.
    #[serde(default)]
    pub carveout_bytes: Option<u32>,
}

impl KernelPanels {
    /// The kernel's duration (Speed of Light's `Duration`, or the raw
    /// `gpu__time_duration.sum`): its SI value in seconds and how the page shows it.
    pub fn duration(&self) -> Option<(f64, String)> {
        self.panels
            .iter()
            .flat_map(|p| p.metrics.iter())
            .find(|r| r.name == "Duration" || r.name == "gpu__time_duration.sum")
            .and_then(|r| {
                let v = r
                    .si_value
                    .filter(|_| r.si_unit.as_deref() == Some("second"))?;
                Some((v, r.shown.clone()))
            })
    }

    /// The kernel's launch for the occupancy calculator, read off its launch panel (block
    /// size, registers per thread, static + dynamic shared memory); `None` when the export
    /// lacks the block size or the registers.
    pub fn calculator_launch(&self) -> Option<CalculatorLaunch> {
        let launch = self.panels.iter().find(|p| p.id == "launch")?;
        // Sizes read through the printed digits: `32.77 Kbyte` is 32,768 B.
        let value = |label: &str| {
            launch
                .metrics
                .iter()
                .find(|r| r.label == label)
                .and_then(|r| {
                    let si = r.si_value?;
                    Some(match (&r.value, r.si_unit.as_deref()) {
                        (super::MetricValue::Number(v), Some(u)) => {
                            super::units::size_through_printed_digits(*v, &r.unit, si, u)
                        }
                        _ => si,
                    })
                })
                .filter(|v| v.is_finite() && *v >= 0.0 && *v <= f64::from(u32::MAX))
        };
        let shared = value("Static Shared Memory Per Block").unwrap_or(0.0)
            + value("Dynamic Shared Memory Per Block").unwrap_or(0.0);
        Some(CalculatorLaunch {
            cc: self.cc.clone(),
            threads: value("Block Size")?.round() as u32,
            registers: value("Registers Per Thread")?.round() as u32,
            shared_bytes: shared.min(f64::from(u32::MAX)).round() as u32,
            carveout_bytes: value("Shared Memory Configuration Size").map(|v| v.round() as u32),
        })
    }

    /// How a kernel picker names it: `#3 gemm_kernel · 52.9 µs` (IDs tell same-named
    /// kernels apart; the duration says which matters).
    pub fn picker_label(&self) -> String {
        match self.duration() {
            Some((_, d)) => format!("#{} {} \u{b7} {d}", self.id, self.short_name),
            None => format!("#{} {}", self.id, self.short_name),
        }
    }

    /// The panels of `k` with the screenshots among `shots` that belong to them.
    pub fn of(k: &Kernel, shots: &[super::Screenshot]) -> Self {
        KernelPanels {
            id: k.id,
            name: k.name.clone(),
            short_name: k.short_name.clone(),
            panels: build_panels_with(k, shots),
            cc: k.cc.clone(),
        }
    }
}

/// The seven panels of kernel `k` with the screenshots among `shots` that belong to each
/// (see [`super::Screenshot::shows_on`]).
pub fn build_panels_with(k: &Kernel, shots: &[super::Screenshot]) -> Vec<Panel> {
    let mut panels = build_panels(k);
    for p in &mut panels {
        p.screenshots = shots
            .iter()
            .filter(|s| s.shows_on(k.id, &p.id))
            .cloned()
            .collect();
    }
    panels
}

fn launch_panel(k: &Kernel) -> Panel {
    let metrics = rows(
        k,
        &[
            &W_GRID,
            &W_BLOCK,
            &W_THREADS,
            &W_REGS,
            &W_SMEM_CONFIG,
            &W_SMEM_STATIC,
            &W_SMEM_DYNAMIC,
            &W_SMEM_DRIVER,
            &W_SMS,
            &W_WAVES,
            &W_CLUSTER,
        ],
    );
    let mut parts = Vec::new();
    let threads = num(k, &W_THREADS)
        .unwrap_or_else(|| k.block.iter().chain(&k.grid).map(|&d| d as f64).product());
    parts.push(format!(
        "Grid {} × block {} = {} threads",
        dims(k.grid),
        dims(k.block),
        fmt_num(threads)
    ));
    if let Some(r) = num(k, &W_REGS) {
        parts.push(format!("{} registers per thread", fmt_num(r)));
    }
    match (num(k, &W_WAVES), num(k, &W_SMS)) {
        (Some(w), Some(s)) => parts.push(format!(
            "{} {} per SM over {} SMs",
            fmt_num(w),
            plural(w, "wave", "waves"),
            fmt_num(s)
        )),
        (Some(w), None) => parts.push(format!(
            "{} {} per SM",
            fmt_num(w),
            plural(w, "wave", "waves")
        )),
        _ => {}
    }
    let mut narrative = format!("{}.", parts.join("; "));
    if let Some(w) = num(k, &W_WAVES) {
        if w < 1.0 {
            narrative.push_str(
                " Less than one full wave: the grid does not fill every SM at the achievable occupancy.",
            );
        }
    }
    Panel {
        screenshots: Vec::new(),
        id: "launch".into(),
        title: "Launch Statistics".into(),
        metrics,
        chart: None,
        narrative,
        rules: rules_of(k, &["LaunchStats", LAUNCH]),
    }
}

fn occupancy_panel(k: &Kernel) -> Panel {
    let metrics = rows(
        k,
        &[
            &W_THEO,
            &W_ACHIEVED,
            &W_THEO_WARPS,
            &W_ACHIEVED_WARPS,
            &W_LIMIT_REGS,
            &W_LIMIT_SMEM,
            &W_LIMIT_WARPS,
            &W_LIMIT_SM,
            &W_LIMIT_BARRIERS,
            &W_REGS,
            &W_BLOCK,
        ],
    );
    let bars = bars(k, &[("Theoretical", &W_THEO), ("Achieved", &W_ACHIEVED)]);
    let chart = (!bars.is_empty()).then(|| ChartSpec {
        kind: ChartKind::Bars,
        title: "Occupancy".into(),
        unit: "%".into(),
        max: Some(100.0),
        bars,
    });
    let limits: Vec<(&str, f64)> = [
        ("registers", &W_LIMIT_REGS),
        ("shared memory", &W_LIMIT_SMEM),
        ("warps", &W_LIMIT_WARPS),
        ("blocks per SM", &W_LIMIT_SM),
        ("barriers", &W_LIMIT_BARRIERS),
    ]
    .iter()
    .filter_map(|(n, w)| num(k, w).map(|v| (*n, v)))
    .collect();
    let limiter = limits
        .iter()
        .map(|(_, v)| *v)
        .fold(None, |acc: Option<f64>, v| {
            Some(acc.map_or(v, |a| a.min(v)))
        })
        .map(|min| {
            let names: Vec<&str> = limits
                .iter()
                .filter(|(_, v)| *v == min)
                .map(|(n, _)| *n)
                .collect();
            let blocks = plural(min, "block", "blocks");
            format!(
                "limited by {}: {} {blocks}",
                names.join(" and "),
                fmt_num(min)
            )
        });
    let theo = num(k, &W_THEO);
    let achieved = num(k, &W_ACHIEVED);
    let narrative = match (theo, achieved) {
        (None, None) => match &limiter {
            Some(l) => format!("Blocks per SM {l}; no occupancy percentages in this export."),
            None => "No occupancy metrics in this export (collect them with --section Occupancy)."
                .to_string(),
        },
        (t, a) => {
            let mut s = String::new();
            if let Some(t) = t {
                s.push_str(&format!("Theoretical occupancy {} %", fmt_num(t)));
                if let Some(l) = &limiter {
                    s.push_str(&format!(" ({l})"));
                }
            }
            if let Some(a) = a {
                if s.is_empty() {
                    s.push_str(&format!("Achieved occupancy {} %", fmt_num(a)));
                } else {
                    s.push_str(&format!("; achieved {} %", fmt_num(a)));
                }
            }
            s.push('.');
            if let (Some(t), Some(a)) = (t, a) {
                let gap = t - a;
                if gap > 10.0 {
                    s.push_str(&format!(
                        " Achieved is {} points below theoretical: warps finish unevenly or the scheduler cannot keep them resident (load imbalance, tail effects).",
                        fmt_num(gap)
                    ));
                }
            }
            s
        }
    };
    Panel {
        screenshots: Vec::new(),
        id: "occupancy".into(),
        title: "Occupancy".into(),
        metrics,
        chart,
        narrative,
        rules: rules_of(k, &[OCC]),
    }
}

/// The stall breakdown: (reason, value, unit) sorted by value, largest first.
fn stall_breakdown(k: &Kernel) -> (Vec<(String, f64)>, &'static str) {
    // Newer details pages (--print-details all): "Stall Long Scoreboard" in Warp State Statistics.
    let mut out: Vec<(String, f64)> = k
        .metrics
        .iter()
        .filter(|m| m.section() == WARP)
        .filter_map(|m| {
            let reason = m.name().strip_prefix("Stall ")?;
            Some((reason.to_string(), m.value.as_f64()?))
        })
        .collect();
    let mut unit = "cycles per issued instruction";
    if out.is_empty() {
        // Raw page: cycles per issued instruction, by reason.
        out = k
            .metrics
            .iter()
            .filter_map(|m| {
                let reason = m
                    .name()
                    .strip_prefix("smsp__average_warps_issue_stalled_")?
                    .strip_suffix("_per_issue_active.ratio")?;
                Some((reason.replace('_', " "), m.value.as_f64()?))
            })
            .collect();
    }
    if out.is_empty() {
        // Raw page without the ratios: PC sampling counts.
        out = k
            .metrics
            .iter()
            .filter_map(|m| {
                let reason = m.name().strip_prefix("smsp__pcsamp_warps_issue_stalled_")?;
                if reason.ends_with("_not_issued") {
                    return None;
                }
                Some((reason.replace('_', " "), m.value.as_f64()?))
            })
            .collect();
        unit = "samples";
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    (out, unit)
}

fn warp_state_panel(k: &Kernel) -> Panel {
    let metrics = rows(
        k,
        &[
            &W_CPI_ISSUED,
            &W_CPI_EXECUTED,
            &W_THREADS_PER_WARP,
            &W_PRED_ON_PER_WARP,
        ],
    );
    let (stalls, unit) = stall_breakdown(k);
    let chart = (!stalls.is_empty()).then(|| ChartSpec {
        kind: ChartKind::Ranked,
        title: "Warp stall reasons".into(),
        unit: unit.into(),
        max: None,
        bars: stalls
            .iter()
            .take(12)
            .map(|(label, value)| Bar {
                label: label.clone(),
                value: *value,
            })
            .collect(),
    });
    let mut parts = Vec::new();
    if let Some(c) = num(k, &W_CPI_ISSUED) {
        parts.push(format!(
            "Each warp issues an instruction every {} cycles on average",
            fmt_num(c)
        ));
    }
    // "selected" is the cycle a warp issues, not a stall.
    if let Some((reason, value)) = stalls
        .iter()
        .find(|(r, v)| !r.eq_ignore_ascii_case("selected") && *v > 0.0)
    {
        parts.push(format!(
            "the largest stall reason is {} ({} {unit})",
            reason.to_lowercase(),
            fmt_num(*value)
        ));
    }
    if let Some(t) = num(k, &W_THREADS_PER_WARP) {
        parts.push(format!("{} of 32 threads active per warp", fmt_num(t)));
    }
    let narrative = if parts.is_empty() {
        "No warp state metrics in this export (collect them with --section WarpStateStats)."
            .to_string()
    } else {
        let mut s = capitalize(&parts.join("; "));
        s.push('.');
        if stalls.is_empty() {
            s.push_str(" The per-reason stall breakdown is not in this export; the raw page (--page raw) has it.");
        }
        s
    };
    Panel {
        screenshots: Vec::new(),
        id: "warp_state".into(),
        title: "Warp State Statistics".into(),
        metrics,
        chart,
        narrative,
        rules: rules_of(k, &["WarpStateStats", WARP]),
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn scheduler_panel(k: &Kernel) -> Panel {
    let metrics = rows(
        k,
        &[
            &W_ONE_ELIGIBLE,
            &W_NO_ELIGIBLE,
            &W_ACTIVE_WARPS,
            &W_ELIGIBLE_WARPS,
            &W_ISSUED_WARP,
        ],
    );
    let bars = bars(
        k,
        &[
            ("One or More Eligible", &W_ONE_ELIGIBLE),
            ("No Eligible", &W_NO_ELIGIBLE),
        ],
    );
    let chart = (!bars.is_empty()).then(|| ChartSpec {
        kind: ChartKind::Bars,
        title: "Issue slots".into(),
        unit: "%".into(),
        max: Some(100.0),
        bars,
    });
    let mut parts = Vec::new();
    match (num(k, &W_ONE_ELIGIBLE), num(k, &W_NO_ELIGIBLE)) {
        (Some(a), Some(n)) => parts.push(format!(
            "Schedulers had an eligible warp to issue in {} % of cycles and none in {} %",
            fmt_num(a),
            fmt_num(n)
        )),
        (Some(a), None) => parts.push(format!(
            "Schedulers had an eligible warp to issue in {} % of cycles",
            fmt_num(a)
        )),
        (None, Some(n)) => parts.push(format!(
            "Schedulers had no eligible warp in {} % of cycles",
            fmt_num(n)
        )),
        (None, None) => {}
    }
    match (num(k, &W_ACTIVE_WARPS), num(k, &W_ELIGIBLE_WARPS)) {
        (Some(a), Some(e)) => parts.push(format!(
            "{} warps active and {} eligible per scheduler per cycle",
            fmt_num(a),
            fmt_num(e)
        )),
        (Some(a), None) => parts.push(format!("{} warps active per scheduler", fmt_num(a))),
        _ => {}
    }
    if let Some(i) = num(k, &W_ISSUED_WARP) {
        parts.push(format!(
            "{} instructions issued per scheduler per cycle (at most 1)",
            fmt_num(i)
        ));
    }
    let narrative = if parts.is_empty() {
        "No scheduler metrics in this export (collect them with --section SchedulerStats)."
            .to_string()
    } else {
        format!("{}.", parts.join("; "))
    };
    Panel {
        screenshots: Vec::new(),
        id: "scheduler".into(),
        title: "Scheduler Statistics".into(),
        metrics,
        chart,
        narrative,
        rules: rules_of(k, &["SchedulerStats", SCHED]),
    }
}

fn instructions_panel(k: &Kernel) -> Panel {
    let metrics = rows(
        k,
        &[
            &W_EXECUTED,
            &W_ISSUED,
            &W_EXECUTED_PER_SCHED,
            &W_ISSUED_PER_SCHED,
            &W_IPC_ACTIVE,
            &W_IPC_ELAPSED,
            &W_ISSUED_IPC,
            &W_ISSUE_BUSY,
            &W_SM_BUSY,
            &W_BRANCHES,
            &W_BRANCH_EFF,
        ],
    );
    let bars = bars(k, &[("Executed", &W_EXECUTED), ("Issued", &W_ISSUED)]);
    let chart = (!bars.is_empty()).then(|| ChartSpec {
        kind: ChartKind::Bars,
        title: "Instructions".into(),
        unit: "inst".into(),
        max: None,
        bars,
    });
    let mut parts = Vec::new();
    match (num(k, &W_EXECUTED), num(k, &W_ISSUED)) {
        (Some(e), Some(i)) => {
            let mut s = format!(
                "{} instructions executed, {} issued",
                fmt_num(e),
                fmt_num(i)
            );
            if e > 0.0 && i > e {
                s.push_str(&format!(
                    " ({} % more issued than executed)",
                    fmt_num(100.0 * (i - e) / e)
                ));
            }
            parts.push(s);
        }
        (Some(e), None) => parts.push(format!("{} instructions executed", fmt_num(e))),
        (None, Some(i)) => parts.push(format!("{} instructions issued", fmt_num(i))),
        (None, None) => {}
    }
    match (num(k, &W_IPC_ACTIVE), num(k, &W_IPC_ELAPSED)) {
        (Some(a), Some(e)) => parts.push(format!(
            "IPC {} per active cycle ({} per elapsed cycle)",
            fmt_num(a),
            fmt_num(e)
        )),
        (Some(a), None) => parts.push(format!("IPC {} per active cycle", fmt_num(a))),
        (None, Some(e)) => parts.push(format!("IPC {} per elapsed cycle", fmt_num(e))),
        (None, None) => {}
    }
    if let Some(b) = num(k, &W_BRANCH_EFF) {
        parts.push(format!("branch efficiency {} %", fmt_num(b)));
    }
    let narrative = if parts.is_empty() {
        "No instruction statistics in this export (collect them with --section InstructionStats)."
            .to_string()
    } else {
        format!("{}.", capitalize(&parts.join("; ")))
    };
    Panel {
        screenshots: Vec::new(),
        id: "instructions".into(),
        title: "Instruction Statistics".into(),
        metrics,
        chart,
        narrative,
        rules: rules_of(k, &["InstructionStats", INST, "SourceCounters", SRC]),
    }
}

/// The boundness sentence for compute and memory throughput in percent of peak.
pub fn boundness_sentence(compute_pct: f64, memory_pct: f64) -> String {
    let (c, m) = (fmt_num(compute_pct), fmt_num(memory_pct));
    match boundness(compute_pct, memory_pct) {
        Boundness::Memory => {
            format!("Memory-bound: memory throughput {m} % of peak vs compute {c} %.")
        }
        Boundness::Compute => {
            format!("Compute-bound: compute (SM) throughput {c} % of peak vs memory {m} %.")
        }
        Boundness::Balanced => format!(
            "Balanced: compute {c} % and memory {m} % of peak are within {} points of each other.",
            fmt_num(BALANCED_WITHIN_POINTS)
        ),
        Boundness::Latency => format!(
            "Latency-bound: compute {c} % and memory {m} % of peak are both below {} %; look at the warp state and scheduler panels for what the warps wait on.",
            fmt_num(LATENCY_BOUND_BELOW_PCT)
        ),
    }
}

fn throughput_panel(k: &Kernel) -> Panel {
    let metrics = rows(
        k,
        &[
            &W_COMPUTE,
            &W_MEMORY,
            &W_DRAM,
            &W_L1,
            &W_L2,
            &W_DURATION,
            &W_ELAPSED,
            &W_SM_ACTIVE,
            &W_SM_FREQ,
            &W_DRAM_FREQ,
            &W_SM_BUSY,
            &W_ISSUE_BUSY,
            &W_IPC_ACTIVE,
            &W_MEM_BANDWIDTH,
            &W_MEM_BUSY,
            &W_MAX_BANDWIDTH,
            &W_L1_HIT,
            &W_L2_HIT,
        ],
    );
    let bars = bars(
        k,
        &[
            ("Compute (SM)", &W_COMPUTE),
            ("Memory", &W_MEMORY),
            ("DRAM", &W_DRAM),
            ("L1/TEX", &W_L1),
            ("L2", &W_L2),
        ],
    );
    let chart = (!bars.is_empty()).then(|| ChartSpec {
        kind: ChartKind::Bars,
        title: "Throughput (% of peak)".into(),
        unit: "%".into(),
        max: Some(100.0),
        bars,
    });
    let mut narrative = match (num(k, &W_COMPUTE), num(k, &W_MEMORY)) {
        (Some(c), Some(m)) => boundness_sentence(c, m),
        (Some(c), None) => format!(
            "Compute (SM) throughput {} % of peak; no memory throughput in this export.",
            fmt_num(c)
        ),
        (None, Some(m)) => format!(
            "Memory throughput {} % of peak; no compute throughput in this export.",
            fmt_num(m)
        ),
        (None, None) => {
            "No speed-of-light metrics in this export (collect them with --section SpeedOfLight)."
                .to_string()
        }
    };
    match find(k, &W_DURATION) {
        Some(m) if m.value.as_f64().is_some() => {
            narrative.push_str(&format!(" Duration {}.", show(m)));
        }
        Some(m) => narrative.push_str(&format!(
            " No duration in this export (ncu printed \u{201c}{}\u{201d}).",
            show(m)
        )),
        None => {}
    }
    if let Some(d) = num(k, &W_DRAM) {
        narrative.push_str(&format!(" DRAM throughput {} % of peak.", fmt_num(d)));
    }
    Panel {
        screenshots: Vec::new(),
        id: "throughput".into(),
        title: "GPU Speed Of Light Throughput".into(),
        metrics,
        chart,
        narrative,
        rules: rules_of(
            k,
            &[
                "SpeedOfLight",
                SOL,
                "ComputeWorkloadAnalysis",
                CWA,
                "SpeedOfLight_RooflineChart",
            ],
        ),
    }
}

fn summary_panel(k: &Kernel) -> Panel {
    let mut rules = k.rules.clone();
    // Largest estimated speedup first; rules without one after, in file order.
    rules.sort_by(|a, b| match (a.speedup, b.speedup) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let with_speedup: Vec<&Rule> = rules.iter().filter(|r| r.speedup.is_some()).collect();
    let chart = (!with_speedup.is_empty()).then(|| ChartSpec {
        kind: ChartKind::Ranked,
        title: "Estimated speedup".into(),
        unit: "%".into(),
        max: Some(100.0),
        bars: with_speedup
            .iter()
            .take(10)
            .map(|r| Bar {
                label: format!("{} ({})", r.name, r.section),
                value: r.speedup.unwrap_or(0.0),
            })
            .collect(),
    });
    let metrics = rows(
        k,
        &[&W_DURATION, &W_COMPUTE, &W_MEMORY, &W_THEO, &W_ACHIEVED],
    );
    let mut narrative = if rules.is_empty() {
        "No rule results for this kernel (only the details page carries ncu's guided analysis)."
            .to_string()
    } else {
        let opt = rules.iter().filter(|r| r.rule_type == "OPT").count();
        let mut s = format!(
            "{} rule result(s), {opt} optimisation opportunit{}",
            rules.len(),
            if opt == 1 { "y" } else { "ies" }
        );
        match with_speedup.first() {
            Some(top) => {
                let scope = top
                    .speedup_type
                    .as_deref()
                    .map(|t| format!(", {t}"))
                    .unwrap_or_default();
                s.push_str(&format!(
                    "; the largest estimated speedup is {} % ({}{scope}).",
                    fmt_num(top.speedup.unwrap_or(0.0)),
                    top.name
                ));
            }
            None => s.push_str("; none estimates a speedup."),
        }
        s
    };
    if let (Some(c), Some(m)) = (num(k, &W_COMPUTE), num(k, &W_MEMORY)) {
        narrative.push(' ');
        narrative.push_str(&boundness_sentence(c, m));
    }
    Panel {
        screenshots: Vec::new(),
        id: "summary".into(),
        title: "Summary".into(),
        metrics,
        chart,
        narrative,
        rules,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundness_cases() {
        assert_eq!(boundness(12.1, 85.2), Boundness::Memory);
        assert_eq!(boundness(85.2, 12.1), Boundness::Compute);
        assert_eq!(boundness(73.03, 14.86), Boundness::Compute);
        assert_eq!(boundness(65.0, 70.0), Boundness::Balanced);
        assert_eq!(boundness(60.0, 70.0), Boundness::Balanced);
        assert_eq!(boundness(59.9, 30.0), Boundness::Latency);
        assert_eq!(boundness(34.53, 12.29), Boundness::Latency);
        assert_eq!(boundness(61.0, 49.0), Boundness::Compute);
        let s = boundness_sentence(12.1, 85.2);
        assert_eq!(
            s,
            "Memory-bound: memory throughput 85.2 % of peak vs compute 12.1 %."
        );
    }
}
