//! A kernel of our registry as an occupancy panel, from its compiled resource usage and the
//! occupancy calculator: what the profiling page shows before any Nsight Compute run.

use serde::{Deserialize, Serialize};

use crate::ncu::panels::{Bar, ChartKind, ChartSpec, Panel, PanelRow};
use crate::ncu::MetricValue;
use crate::occupancy::{occupancy, GpuLimits, OccupancyError, OccupancyInput};

/// Resources one compiled kernel uses (from `cuobjdump --dump-resource-usage` or
/// `cuFuncGetAttribute`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelResources {
    /// Entry point.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block, bytes.
    pub static_shared_bytes: u32,
    /// Local memory per thread (register spills, local arrays), bytes.
    pub local_bytes: u32,
    /// Stack per thread, bytes.
    pub stack_bytes: u32,
}

/// Everything the Kernel Reveal page shows about one entry point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelFacts {
    /// Family (file) name.
    pub family: String,
    /// Entry point.
    pub entry: String,
    /// Architecture compiled for (`sm_90`).
    pub arch: String,
    /// Resource usage of the compiled function.
    pub resources: KernelResources,
    /// Threads per block the occupancy is computed for.
    pub threads: u32,
    /// The calculator's answer for that launch.
    pub occupancy: crate::occupancy::OccupancyOutput,
    /// PTX lines of the family.
    pub ptx_lines: usize,
    /// `mma`/`wmma` instructions in the entry point's PTX.
    pub ptx_tensor_core_instructions: usize,
    /// `HMMA`/`HGMMA` instructions in the entry point's SASS (None without cuobjdump).
    pub sass_tensor_core_instructions: Option<usize>,
    /// SASS instructions of the entry point (None without cuobjdump).
    pub sass_instructions: Option<usize>,
}

fn row(label: &str, unit: &str, v: f64) -> PanelRow {
    PanelRow {
        label: label.into(),
        section: "Occupancy (calculated)".into(),
        name: label.into(),
        unit: unit.into(),
        value: MetricValue::Number(v),
        si_value: Some(v),
        si_unit: Some(unit.into()),
    }
}

/// The occupancy panel of `res` launched with `threads` per block and `dynamic_smem` bytes of
/// dynamic shared memory on a device of compute capability `major.minor`.
pub fn occupancy_panel(
    res: &KernelResources,
    threads: u32,
    dynamic_smem: u32,
    major: u32,
    minor: u32,
) -> Result<Panel, OccupancyError> {
    let limits = GpuLimits::for_cc(major, minor)?;
    let input = OccupancyInput {
        threads_per_block: threads,
        registers_per_thread: res.registers,
        shared_mem_per_block: res.static_shared_bytes + dynamic_smem,
        carveout_pct: None,
    };
    let o = occupancy(&limits, &input)?;
    let limiters: Vec<String> = o.limiters.iter().map(|l| l.to_string()).collect();
    let mut bars = vec![Bar {
        label: "warps".into(),
        value: o.blocks_by_warps as f64,
    }];
    if let Some(b) = o.blocks_by_registers {
        bars.push(Bar {
            label: "registers".into(),
            value: b as f64,
        });
    }
    if let Some(b) = o.blocks_by_shared_memory {
        bars.push(Bar {
            label: "shared memory".into(),
            value: b as f64,
        });
    }
    bars.push(Bar {
        label: "blocks per SM".into(),
        value: o.blocks_by_max_blocks as f64,
    });
    let mut narrative = format!(
        "{} at {threads} threads per block on sm_{major}{minor}: {} registers per thread, {} B static shared memory; theoretical occupancy {:.1} % ({} block(s), {} of {} warps per SM), limited by {}.",
        res.name,
        res.registers,
        res.static_shared_bytes,
        o.occupancy_pct,
        o.active_blocks_per_sm,
        o.active_warps_per_sm,
        o.max_warps_per_sm,
        limiters.join(" and ")
    );
    if res.local_bytes > 0 {
        narrative.push_str(&format!(
            " It uses {} B of local memory per thread (spills or local arrays).",
            res.local_bytes
        ));
    }
    Ok(Panel {
        screenshots: Vec::new(),
        id: "occupancy".into(),
        title: format!("Occupancy (calculated): {}", res.name),
        metrics: vec![
            row("Block Size", "thread", threads as f64),
            row(
                "Registers Per Thread",
                "register/thread",
                res.registers as f64,
            ),
            row(
                "Static Shared Memory Per Block",
                "byte/block",
                res.static_shared_bytes as f64,
            ),
            row("Local Memory Per Thread", "byte", res.local_bytes as f64),
            row("Theoretical Occupancy", "%", o.occupancy_pct),
            row(
                "Theoretical Active Warps per SM",
                "warp",
                o.active_warps_per_sm as f64,
            ),
            row(
                "Block Limit Registers",
                "block",
                o.blocks_by_registers.unwrap_or(o.blocks_by_max_blocks) as f64,
            ),
            row("Block Limit Warps", "block", o.blocks_by_warps as f64),
        ],
        chart: Some(ChartSpec {
            kind: ChartKind::Bars,
            title: "Blocks per SM allowed by each limit".into(),
            unit: "block".into(),
            max: None,
            bars,
        }),
        narrative,
        rules: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_register_heavy_kernel_is_register_limited_in_its_narrative() {
        let r = KernelResources {
            name: "k".into(),
            registers: 64,
            static_shared_bytes: 4096,
            local_bytes: 0,
            stack_bytes: 0,
        };
        let p = occupancy_panel(&r, 256, 0, 9, 0).unwrap();
        assert!(
            p.narrative.contains("50.0 %") && p.narrative.contains("registers"),
            "{}",
            p.narrative
        );
        let occ = p
            .metrics
            .iter()
            .find(|m| m.label == "Theoretical Occupancy")
            .unwrap();
        assert_eq!(occ.value, MetricValue::Number(50.0));
        assert!(occupancy_panel(&r, 2048, 0, 9, 0).is_err());
    }
}
