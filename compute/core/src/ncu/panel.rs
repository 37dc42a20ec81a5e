//! What a panel is (its table's rows, its chart, the boundness its narrative states) and the
//! metrics the seven panels read, each by its details-page section and name and its raw-page
//! name, with the lookups over one kernel. The panels themselves are built in [`super::panels`].

use serde::{Deserialize, Serialize};

use super::units::fmt_num;
use super::{Kernel, Metric, MetricValue, Rule};

/// One row of a panel's table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelRow {
    /// What the row shows (`Theoretical Occupancy`).
    pub label: String,
    /// The metric's section, as imported.
    pub section: String,
    /// The metric's name, as imported (a raw metric name for raw-page imports).
    pub name: String,
    /// The unit as printed.
    pub unit: String,
    /// The value as printed.
    pub value: MetricValue,
    /// The value in SI units (see [`Metric::si_value`]).
    pub si_value: Option<f64>,
    /// The SI unit.
    pub si_unit: Option<String>,
    /// The value as the page shows it: in a readable scaled unit (`52.9 µs`, `1.586 GHz`,
    /// `32 KiB`) whatever unit the export printed, or the text as printed.
    #[serde(default)]
    pub shown: String,
    /// Why the value cannot be right, when it cannot (`12,345,678.5 % is above 100 %…`):
    /// shown beside it instead of passing it off as normal.
    #[serde(default)]
    pub flag: Option<String>,
}

impl PanelRow {
    /// A row, with what the page shows ([`PanelRow::shown`]) and its [`PanelRow::flag`]
    /// worked out from the value and its units.
    pub fn new(
        label: &str,
        section: &str,
        name: &str,
        unit: &str,
        value: MetricValue,
        si_value: Option<f64>,
        si_unit: Option<String>,
    ) -> Self {
        let shown = shown_text(&value, unit, si_value, si_unit.as_deref());
        let flag = match &value {
            MetricValue::Number(v) => super::units::implausible(*v, unit),
            MetricValue::Text(_) => None,
        };
        PanelRow {
            label: label.to_string(),
            section: section.to_string(),
            name: name.to_string(),
            unit: unit.to_string(),
            value,
            si_value,
            si_unit,
            shown,
            flag,
        }
    }
}

/// A value as a page shows it: a number in its SI unit made readable
/// ([`super::units::readable`]; a size printed in decimal units within its digits of a whole
/// KiB as that KiB, see [`super::units::size_through_printed_digits`]), else the printed number with the printed unit, or the text.
pub fn shown_text(
    value: &MetricValue,
    unit: &str,
    si_value: Option<f64>,
    si_unit: Option<&str>,
) -> String {
    match (value, si_value, si_unit) {
        (MetricValue::Number(printed), Some(v), Some(u)) => super::units::readable(
            super::units::size_through_printed_digits(*printed, unit, v, u),
            u,
        ),
        (MetricValue::Number(v), _, _) => super::units::readable(*v, unit),
        (MetricValue::Text(t), _, _) => t.clone(),
    }
}

/// How a chart draws its bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChartKind {
    /// A few bars side by side, to compare (theoretical vs achieved).
    Bars,
    /// A ranked list of horizontal bars, largest first (stall reasons, rule speedups).
    Ranked,
}

/// One bar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    /// The bar's label.
    pub label: String,
    /// Its value, in the chart's unit.
    pub value: f64,
}

/// A chart for a panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartSpec {
    /// How to draw it.
    pub kind: ChartKind,
    /// The chart's title.
    pub title: String,
    /// The unit of every bar (`%`, `cycles per issued instruction`).
    pub unit: String,
    /// The axis maximum, when the quantity has one (100 for percentages of peak).
    pub max: Option<f64>,
    /// The bars, in drawing order.
    pub bars: Vec<Bar>,
}

/// One analysis panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Panel {
    /// A stable identifier (`launch`, `occupancy`, `warp_state`, `scheduler`,
    /// `instructions`, `throughput`, `summary`).
    pub id: String,
    /// The panel's title.
    pub title: String,
    /// The rows, in display order (only metrics the export has).
    pub metrics: Vec<PanelRow>,
    /// A chart, when the export has the numbers for one.
    pub chart: Option<ChartSpec>,
    /// What the numbers say, in a sentence or three; never empty.
    pub narrative: String,
    /// The rule results of the panel's sections (all of them, by estimated speedup, for the
    /// summary panel).
    pub rules: Vec<Rule>,
    /// Screenshots the user attached to this panel (empty unless the panel was built from a
    /// stored import).
    #[serde(default)]
    pub screenshots: Vec<super::Screenshot>,
}

/// What limits a kernel, from the speed-of-light throughputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundness {
    /// Compute throughput leads memory by more than 10 points (and one is at least 60 %).
    Compute,
    /// Memory throughput leads compute by more than 10 points (and one is at least 60 %).
    Memory,
    /// Within 10 points of each other, at least one at 60 % or more.
    Balanced,
    /// Both below 60 % of peak: the kernel waits more than it works.
    Latency,
}

/// Below this percentage of peak for both compute and memory, a kernel is latency-bound.
pub const LATENCY_BOUND_BELOW_PCT: f64 = 60.0;
/// Compute and memory throughputs within this many points are balanced.
pub const BALANCED_WITHIN_POINTS: f64 = 10.0;

/// Classifies a kernel from its compute (SM) and memory throughput, in percent of peak.
pub fn boundness(compute_pct: f64, memory_pct: f64) -> Boundness {
    if compute_pct < LATENCY_BOUND_BELOW_PCT && memory_pct < LATENCY_BOUND_BELOW_PCT {
        Boundness::Latency
    } else if (compute_pct - memory_pct).abs() <= BALANCED_WITHIN_POINTS {
        Boundness::Balanced
    } else if memory_pct > compute_pct {
        Boundness::Memory
    } else {
        Boundness::Compute
    }
}

/// A metric to show: label, details-page section and name, raw-page names.
pub(crate) struct Want {
    pub(crate) label: &'static str,
    pub(crate) section: &'static str,
    pub(crate) name: &'static str,
    pub(crate) raw: &'static [&'static str],
}

pub(crate) const fn want(
    label: &'static str,
    section: &'static str,
    name: &'static str,
    raw: &'static [&'static str],
) -> Want {
    Want {
        label,
        section,
        name,
        raw,
    }
}

pub(crate) const SOL: &str = "GPU Speed Of Light Throughput";
pub(crate) const LAUNCH: &str = "Launch Statistics";
pub(crate) const OCC: &str = "Occupancy";
pub(crate) const WARP: &str = "Warp State Statistics";
pub(crate) const SCHED: &str = "Scheduler Statistics";
pub(crate) const INST: &str = "Instruction Statistics";
pub(crate) const CWA: &str = "Compute Workload Analysis";
pub(crate) const MWA: &str = "Memory Workload Analysis";
pub(crate) const SRC: &str = "Source Counters";

// Launch statistics.
pub(crate) const W_GRID: Want = want("Grid Size", LAUNCH, "Grid Size", &["launch__grid_size"]);
pub(crate) const W_BLOCK: Want = want("Block Size", LAUNCH, "Block Size", &["launch__block_size"]);
pub(crate) const W_THREADS: Want = want("Threads", LAUNCH, "Threads", &["launch__thread_count"]);
pub(crate) const W_REGS: Want = want(
    "Registers Per Thread",
    LAUNCH,
    "Registers Per Thread",
    &["launch__registers_per_thread"],
);
pub(crate) const W_SMEM_CONFIG: Want = want(
    "Shared Memory Configuration Size",
    LAUNCH,
    "Shared Memory Configuration Size",
    &["launch__shared_mem_config_size"],
);
pub(crate) const W_SMEM_STATIC: Want = want(
    "Static Shared Memory Per Block",
    LAUNCH,
    "Static Shared Memory Per Block",
    &["launch__shared_mem_per_block_static"],
);
pub(crate) const W_SMEM_DYNAMIC: Want = want(
    "Dynamic Shared Memory Per Block",
    LAUNCH,
    "Dynamic Shared Memory Per Block",
    &["launch__shared_mem_per_block_dynamic"],
);
pub(crate) const W_SMEM_DRIVER: Want = want(
    "Driver Shared Memory Per Block",
    LAUNCH,
    "Driver Shared Memory Per Block",
    &["launch__shared_mem_per_block_driver"],
);
pub(crate) const W_SMS: Want = want("# SMs", LAUNCH, "# SMs", &["launch__sm_count"]);
pub(crate) const W_WAVES: Want = want(
    "Waves Per SM",
    LAUNCH,
    "Waves Per SM",
    &["launch__waves_per_multiprocessor"],
);
pub(crate) const W_CLUSTER: Want = want(
    "Cluster Size",
    LAUNCH,
    "Cluster Size",
    &["launch__cluster_size"],
);

// Occupancy.
pub(crate) const W_THEO: Want = want(
    "Theoretical Occupancy",
    OCC,
    "Theoretical Occupancy",
    &["sm__maximum_warps_per_active_cycle_pct"],
);
pub(crate) const W_ACHIEVED: Want = want(
    "Achieved Occupancy",
    OCC,
    "Achieved Occupancy",
    &["sm__warps_active.avg.pct_of_peak_sustained_active"],
);
pub(crate) const W_THEO_WARPS: Want = want(
    "Theoretical Active Warps per SM",
    OCC,
    "Theoretical Active Warps per SM",
    &["sm__maximum_warps_avg_per_active_cycle"],
);
pub(crate) const W_ACHIEVED_WARPS: Want = want(
    "Achieved Active Warps Per SM",
    OCC,
    "Achieved Active Warps Per SM",
    &["sm__warps_active.avg.per_cycle_active"],
);
pub(crate) const W_LIMIT_REGS: Want = want(
    "Block Limit Registers",
    OCC,
    "Block Limit Registers",
    &["launch__occupancy_limit_registers"],
);
pub(crate) const W_LIMIT_SMEM: Want = want(
    "Block Limit Shared Mem",
    OCC,
    "Block Limit Shared Mem",
    &["launch__occupancy_limit_shared_mem"],
);
pub(crate) const W_LIMIT_WARPS: Want = want(
    "Block Limit Warps",
    OCC,
    "Block Limit Warps",
    &["launch__occupancy_limit_warps"],
);
pub(crate) const W_LIMIT_SM: Want = want(
    "Block Limit SM",
    OCC,
    "Block Limit SM",
    &["launch__occupancy_limit_blocks"],
);
pub(crate) const W_LIMIT_BARRIERS: Want = want(
    "Block Limit Barriers",
    OCC,
    "Block Limit Barriers",
    &["launch__occupancy_limit_barriers"],
);

// Warp state.
pub(crate) const W_CPI_ISSUED: Want = want(
    "Warp Cycles Per Issued Instruction",
    WARP,
    "Warp Cycles Per Issued Instruction",
    &["smsp__average_warp_latency_per_inst_issued.ratio"],
);
pub(crate) const W_CPI_EXECUTED: Want = want(
    "Warp Cycles Per Executed Instruction",
    WARP,
    "Warp Cycles Per Executed Instruction",
    &["smsp__average_warps_active_per_inst_executed.ratio"],
);
pub(crate) const W_THREADS_PER_WARP: Want = want(
    "Avg. Active Threads Per Warp",
    WARP,
    "Avg. Active Threads Per Warp",
    &["smsp__thread_inst_executed_per_inst_executed.ratio"],
);
pub(crate) const W_PRED_ON_PER_WARP: Want = want(
    "Avg. Not Predicated Off Threads Per Warp",
    WARP,
    "Avg. Not Predicated Off Threads Per Warp",
    &["smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"],
);

// Scheduler.
pub(crate) const W_ONE_ELIGIBLE: Want = want(
    "One or More Eligible",
    SCHED,
    "One or More Eligible",
    &["smsp__issue_active.avg.pct_of_peak_sustained_active"],
);
pub(crate) const W_NO_ELIGIBLE: Want = want(
    "No Eligible",
    SCHED,
    "No Eligible",
    &["smsp__issue_inst0.avg.pct_of_peak_sustained_active"],
);
pub(crate) const W_ACTIVE_WARPS: Want = want(
    "Active Warps Per Scheduler",
    SCHED,
    "Active Warps Per Scheduler",
    &["smsp__warps_active.avg.per_cycle_active"],
);
pub(crate) const W_ELIGIBLE_WARPS: Want = want(
    "Eligible Warps Per Scheduler",
    SCHED,
    "Eligible Warps Per Scheduler",
    &["smsp__warps_eligible.avg.per_cycle_active"],
);
pub(crate) const W_ISSUED_WARP: Want = want(
    "Issued Warp Per Scheduler",
    SCHED,
    "Issued Warp Per Scheduler",
    &["smsp__issue_active.avg.per_cycle_active"],
);

// Instructions.
pub(crate) const W_EXECUTED: Want = want(
    "Executed Instructions",
    INST,
    "Executed Instructions",
    &["smsp__inst_executed.sum"],
);
pub(crate) const W_ISSUED: Want = want(
    "Issued Instructions",
    INST,
    "Issued Instructions",
    &["smsp__inst_issued.sum"],
);
pub(crate) const W_EXECUTED_PER_SCHED: Want = want(
    "Avg. Executed Instructions Per Scheduler",
    INST,
    "Avg. Executed Instructions Per Scheduler",
    &["smsp__inst_executed.avg"],
);
pub(crate) const W_ISSUED_PER_SCHED: Want = want(
    "Avg. Issued Instructions Per Scheduler",
    INST,
    "Avg. Issued Instructions Per Scheduler",
    &["smsp__inst_issued.avg"],
);
pub(crate) const W_IPC_ACTIVE: Want = want(
    "Executed Ipc Active",
    CWA,
    "Executed Ipc Active",
    &["sm__inst_executed.avg.per_cycle_active"],
);
pub(crate) const W_IPC_ELAPSED: Want = want(
    "Executed Ipc Elapsed",
    CWA,
    "Executed Ipc Elapsed",
    &["sm__inst_executed.avg.per_cycle_elapsed"],
);
pub(crate) const W_ISSUED_IPC: Want = want(
    "Issued Ipc Active",
    CWA,
    "Issued Ipc Active",
    &["sm__inst_issued.avg.per_cycle_active"],
);
pub(crate) const W_ISSUE_BUSY: Want = want(
    "Issue Slots Busy",
    CWA,
    "Issue Slots Busy",
    &["sm__inst_issued.avg.pct_of_peak_sustained_active"],
);
pub(crate) const W_SM_BUSY: Want = want(
    "SM Busy",
    CWA,
    "SM Busy",
    &["sm__instruction_throughput.avg.pct_of_peak_sustained_active"],
);
pub(crate) const W_BRANCHES: Want = want(
    "Branch Instructions",
    SRC,
    "Branch Instructions",
    &["smsp__inst_executed_op_branch.sum"],
);
pub(crate) const W_BRANCH_EFF: Want = want(
    "Branch Efficiency",
    SRC,
    "Branch Efficiency",
    &["smsp__sass_average_branch_targets_threads_uniform.pct"],
);

// Speed of light.
pub(crate) const W_COMPUTE: Want = want(
    "Compute (SM) Throughput",
    SOL,
    "Compute (SM) Throughput",
    &["sm__throughput.avg.pct_of_peak_sustained_elapsed"],
);
pub(crate) const W_MEMORY: Want = want(
    "Memory Throughput",
    SOL,
    "Memory Throughput",
    &["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"],
);
pub(crate) const W_DRAM: Want = want(
    "DRAM Throughput",
    SOL,
    "DRAM Throughput",
    &[
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    ],
);
pub(crate) const W_L1: Want = want(
    "L1/TEX Cache Throughput",
    SOL,
    "L1/TEX Cache Throughput",
    &["l1tex__throughput.avg.pct_of_peak_sustained_active"],
);
pub(crate) const W_L2: Want = want(
    "L2 Cache Throughput",
    SOL,
    "L2 Cache Throughput",
    &["lts__throughput.avg.pct_of_peak_sustained_elapsed"],
);
pub(crate) const W_DURATION: Want = want("Duration", SOL, "Duration", &["gpu__time_duration.sum"]);
pub(crate) const W_ELAPSED: Want = want(
    "Elapsed Cycles",
    SOL,
    "Elapsed Cycles",
    &["gpc__cycles_elapsed.max"],
);
pub(crate) const W_SM_ACTIVE: Want = want(
    "SM Active Cycles",
    SOL,
    "SM Active Cycles",
    &["sm__cycles_active.avg"],
);
pub(crate) const W_SM_FREQ: Want = want(
    "SM Frequency",
    SOL,
    "SM Frequency",
    &["gpc__cycles_elapsed.avg.per_second"],
);
pub(crate) const W_DRAM_FREQ: Want = want(
    "DRAM Frequency",
    SOL,
    "DRAM Frequency",
    &["dram__cycles_elapsed.avg.per_second"],
);
pub(crate) const W_MEM_BANDWIDTH: Want = want(
    "Memory Bandwidth",
    MWA,
    "Memory Throughput",
    &["dram__bytes.sum.per_second"],
);
// ncu's own details page names these two: Mem Busy is the access throughput, Max Bandwidth the
// request throughput (the raw names were the other way round, so a raw export's two rows were
// swapped; `raw_panel_rows_equal_their_details_twin` holds every row to the details page).
pub(crate) const W_MEM_BUSY: Want = want(
    "Mem Busy",
    MWA,
    "Mem Busy",
    &["gpu__compute_memory_access_throughput.avg.pct_of_peak_sustained_elapsed"],
);
pub(crate) const W_MAX_BANDWIDTH: Want = want(
    "Max Bandwidth",
    MWA,
    "Max Bandwidth",
    &["gpu__compute_memory_request_throughput.avg.pct_of_peak_sustained_elapsed"],
);
pub(crate) const W_L1_HIT: Want = want(
    "L1/TEX Hit Rate",
    MWA,
    "L1/TEX Hit Rate",
    &["l1tex__t_sector_hit_rate.pct"],
);
pub(crate) const W_L2_HIT: Want = want(
    "L2 Hit Rate",
    MWA,
    "L2 Hit Rate",
    &["lts__t_sector_hit_rate.pct"],
);

/// The metric `w` in kernel `k`: by section and name, else by a raw name.
pub(crate) fn find<'k>(k: &'k Kernel, w: &Want) -> Option<&'k Metric> {
    k.metric(w.section, w.name)
        .or_else(|| w.raw.iter().find_map(|r| k.metric_named(r)))
}

/// The printed number of `w`.
pub(crate) fn num(k: &Kernel, w: &Want) -> Option<f64> {
    find(k, w).and_then(|m| m.value.as_f64())
}

pub(crate) fn show(m: &Metric) -> String {
    let v = match &m.value {
        // `n/a` is not "n/a us": text carries no unit.
        MetricValue::Text(t) => t.clone(),
        number => shown_text(number, m.unit(), m.si_value, m.si_unit()),
    };
    if m.unreadable() {
        format!("{UNREADABLE} ({v})")
    } else {
        v
    }
}

/// How a panel shows a value that is not a usable number ([`Metric::unreadable`]).
pub const UNREADABLE: &str = "unreadable value";

/// The value a panel row shows: as printed, or, for an unreadable one, `unreadable value
/// (1e400)`.
pub(crate) fn row_value(m: &Metric) -> MetricValue {
    match &m.value {
        MetricValue::Text(t) if m.unreadable() => MetricValue::Text(format!("{UNREADABLE} ({t})")),
        v => v.clone(),
    }
}

pub(crate) fn rows(k: &Kernel, wants: &[&Want]) -> Vec<PanelRow> {
    wants
        .iter()
        .filter_map(|w| {
            find(k, w).map(|m| {
                PanelRow::new(
                    w.label,
                    m.section(),
                    m.name(),
                    m.unit(),
                    row_value(m),
                    m.si_value,
                    m.si_unit().map(str::to_string),
                )
            })
        })
        .collect()
}

pub(crate) fn bars(k: &Kernel, wants: &[(&str, &Want)]) -> Vec<Bar> {
    wants
        .iter()
        .filter_map(|(label, w)| {
            num(k, w).map(|value| Bar {
                label: label.to_string(),
                value,
            })
        })
        .collect()
}

pub(crate) fn rules_of(k: &Kernel, sections: &[&str]) -> Vec<Rule> {
    k.rules
        .iter()
        .filter(|r| sections.contains(&r.section.as_str()))
        .cloned()
        .collect()
}

/// `one` when `n` prints as 1, else `many`.
pub(crate) fn plural(n: f64, one: &'static str, many: &'static str) -> &'static str {
    if fmt_num(n) == "1" {
        one
    } else {
        many
    }
}

pub(crate) fn dims(d: [u32; 3]) -> String {
    format!("({}, {}, {})", d[0], d[1], d[2])
}
