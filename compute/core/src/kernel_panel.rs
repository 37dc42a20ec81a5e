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
    /// Lines of the entry point's PTX around its first tensor-core instruction (see
    /// [`excerpt`]); empty for kernels without one, and from services that predate the field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ptx_excerpt: Vec<String>,
    /// The same for its SASS, without the encoding words (empty without cuobjdump).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sass_excerpt: Vec<String>,
}

/// Whether a PTX line is a tensor-core instruction (`mma.sync`, `wmma.mma`, `wgmma.mma_async`).
pub fn is_ptx_tensor_core_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("mma.") || t.starts_with("wmma.mma") || t.starts_with("wgmma.mma")
}

/// Whether a SASS line is a tensor-core instruction (`HMMA`, `HGMMA`, `IMMA`).
pub fn is_sass_tensor_core_line(line: &str) -> bool {
    line.contains(" HMMA") || line.contains(" HGMMA") || line.contains(" IMMA")
}

/// Lines before the first tensor-core instruction that [`excerpt`] keeps for context.
pub const EXCERPT_CONTEXT_LINES: usize = 4;

/// Up to `max` lines of `text` from [`EXCERPT_CONTEXT_LINES`] before the first line `is_tc`
/// matches; empty when none does. SASS encoding-only lines (`/* 0x… */`) are dropped and the
/// encoding comment after an instruction is cut; lines are trimmed on the right.
pub fn excerpt(text: &str, max: usize, is_tc: impl Fn(&str) -> bool) -> Vec<String> {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("/* 0x"))
        .map(|l| match l.find(";  ") {
            Some(end) if l.contains("/* 0x") => &l[..=end],
            _ => l,
        })
        .collect();
    let Some(first) = lines.iter().position(|l| is_tc(l)) else {
        return Vec::new();
    };
    let start = first.saturating_sub(EXCERPT_CONTEXT_LINES);
    lines[start..]
        .iter()
        .take(max)
        .map(|l| l.trim_end().to_string())
        .collect()
}

fn row(label: &str, unit: &str, v: f64) -> PanelRow {
    PanelRow::new(
        label,
        "Occupancy (calculated)",
        label,
        unit,
        MetricValue::Number(v),
        Some(v),
        Some(unit.into()),
    )
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
    fn excerpts_start_just_before_the_first_tensor_core_instruction() {
        let sass = "        /*0000*/   MOV R1, c[0x0][0x28] ;   /* 0x00000a0000017a02 */\n                                          /* 0x000fe40000000f00 */\n        /*0010*/   S2R R0, SR_TID.X ;   /* 0x0000000000007919 */\n        /*0020*/   LDS R4, [R2] ;\n        /*0030*/   HMMA.16816.F32 R8, R4, R6, R8 ;   /* 0x000000060408723c */\n        /*0040*/   EXIT ;\n";
        let e = excerpt(sass, 3, is_sass_tensor_core_line);
        assert_eq!(e.len(), 3);
        assert!(e[0].ends_with("MOV R1, c[0x0][0x28] ;"), "{e:?}");
        assert!(e[2].contains("LDS R4"));
        let e = excerpt(sass, 10, is_sass_tensor_core_line);
        assert_eq!(e.len(), 5, "the encoding-only line is dropped: {e:?}");
        assert!(e[3].ends_with("HMMA.16816.F32 R8, R4, R6, R8 ;"), "{e:?}");
        assert!(e.iter().all(|l| !l.contains("0x000fe4")));
        let ptx = "ld.shared.u32 %r1, [%r2];\n\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f1};\n";
        let e = excerpt(ptx, 8, is_ptx_tensor_core_line);
        assert_eq!(e.len(), 2);
        assert!(is_ptx_tensor_core_line(&e[1]) && !is_ptx_tensor_core_line(&e[0]));
        assert!(excerpt("add.f32 %f1, %f2, %f3;", 8, is_ptx_tensor_core_line).is_empty());
    }

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
