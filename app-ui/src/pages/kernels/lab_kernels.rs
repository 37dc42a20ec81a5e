//! "Kernels on the GPU": the activation and norm kernels checked against f64 and timed on the
//! service's GPU against the copy ceiling of the same job (`KernelBenchRequest`), PyTorch's
//! rows (eager, torch.compile) and our kernels hand-written in Triton (checked against f64
//! before they are timed) beside ours when the peer is ready, the H200 reference column with
//! the ratio, and each kernel's speed-up over each peer.

use std::rc::Rc;

use showdown_core::bench::kernels::{
    BenchRow, KernelsBench, LabDtype, Op, ThroughputGroup, TritonCell,
};
use showdown_core::lab::{LabReport, ProfileTarget, RunOrigin};
use showdown_core::protocol::{KernelBenchRequest, Request};

use super::results;
use super::section::{cell, report_of, times, Block, Control, Form, Row, Section, Table};
use crate::charts::{bar_group, fmt, grouped_bars, Bar, BarGroup, Bars, COLORS, REFERENCE_GREY};

/// The ops' names ([`Op::name`], in [`Op::ALL`]'s order).
const OPS: [&str; 6] = [
    "relu",
    "gelu_erf",
    "gelu_tanh",
    "swish",
    "layernorm",
    "layernorm_gelu",
];
const DTYPES: [&str; 2] = ["f32", "f16"];

/// The section.
pub static SECTION: Section = Section {
    id: "kernels",
    kind: "kernels",
    title: "Kernels on the GPU",
    intro: "Each activation and norm kernel is first checked against an f64 reference on awkward shapes, then timed \
        (CUDA events, median of the reps) on a rows × columns matrix; GB/s counts one read and one write, against a \
        device-to-device copy measured in the same job: the ceiling these memory-bound kernels can reach.",
    gpu_only: Some("Timing the activation and norm kernels"),
    controls: &[
        Control::Count("kernels-rows", "rows", "8192"),
        Control::Count("kernels-cols", "columns", "4096"),
        Control::Count("kernels-reps", "reps", "100"),
        Control::Checks("kernel-op", &OPS, &OPS, &[]),
        Control::Checks("kernel-dtype", &DTYPES, &DTYPES, &[]),
        Control::Peer,
    ],
    request,
    show,
};

fn request(f: &Form) -> Result<Request, String> {
    let ops = f
        .checked("kernel-op", "op")?
        .into_iter()
        .filter_map(|n| Op::ALL.into_iter().find(|o| o.name() == n))
        .collect();
    let dtypes = f
        .checked("kernel-dtype", "dtype")?
        .into_iter()
        .filter_map(|n| {
            [LabDtype::F32, LabDtype::F16]
                .into_iter()
                .find(|d| d.suffix() == n)
        })
        .collect();
    Ok(KernelBenchRequest {
        rows: f.count("kernels-rows", "rows")?,
        cols: f.count("kernels-cols", "columns")?,
        ops,
        dtypes,
        reps: f.count("kernels-reps", "reps")?,
        peers: f.peers(),
    }
    .into())
}

/// The reference's row of the same op and dtype.
fn reference_row<'a>(reference: Option<&'a KernelsBench>, row: &BenchRow) -> Option<&'a BenchRow> {
    reference?
        .ours
        .bench
        .iter()
        .find(|r| r.op == row.op && r.dtype == row.dtype)
}

fn gbps(v: f64) -> String {
    format!("{} GB/s", fmt(v))
}

/// The peers of the speed-up chart: the name [`ThroughputGroup::speedups`] gives, the legend's
/// and the colour (eager and torch.compile as in the bandwidth chart).
const SPEEDUP_SERIES: [(&str, &str, usize); 3] = [
    ("eager", "ours ÷ PyTorch eager", 4),
    ("torch.compile", "ours ÷ torch.compile", 2),
    ("Triton", "ours ÷ hand-written Triton", 1),
];

/// One kernel's speed-up bars: ours ÷ each peer that has a time; a Triton kernel that failed
/// its check gets a stub bar saying so, not a time.
fn speedup_group(g: &ThroughputGroup) -> BarGroup {
    let mut bars = Vec::new();
    for ((name, v), (_, _, color)) in g.speedups().into_iter().zip(SPEEDUP_SERIES) {
        if let Some(value) = v {
            bars.push(Bar {
                value,
                color: COLORS[color],
                text: format!("÷ {name} {value:.2}×"),
            });
        } else if name == "Triton" && g.triton.failure().is_some() {
            bars.push(Bar {
                value: 0.0,
                color: COLORS[color],
                text: "Triton: check failed".into(),
            });
        }
    }
    BarGroup {
        label: g.label.clone(),
        bars,
    }
}

fn show(reply: &str, origin: &RunOrigin) -> Result<Vec<Block>, String> {
    let LabReport::Kernels { report: k } = report_of("kernels", reply)? else {
        return Err("the reply is not a kernel benchmark".into());
    };
    let reference = match results::reference("kernels") {
        Ok(LabReport::Kernels { report }) => Ok(report),
        Ok(_) => Err("not a kernel benchmark".to_string()),
        Err(e) => Err(e),
    };
    let r = reference.as_ref().ok();
    let (passed, total) = k.checks_passed();
    let mut checks = Table {
        id: "kernels-checks",
        head: [
            "op",
            "dtype",
            "passed",
            "max abs error",
            "max rel error",
            "bound",
        ]
        .map(String::from)
        .to_vec(),
        ..Table::default()
    };
    for c in k.check_summaries() {
        checks.rows.push(Row {
            class: if c.passed < c.checks { "failed" } else { "" }.into(),
            key: format!("{} {}", c.op.name(), c.dtype.suffix()),
            cells: vec![
                cell("", c.op.name()),
                cell("", c.dtype.suffix()),
                cell("num", format!("{}/{}", c.passed, c.checks)),
                cell("num", format!("{:.2e}", c.max_abs)),
                cell("num", format!("{:.2e}", c.max_rel)),
                cell("num", format!("{:.0e}", c.bound)),
            ],
            profile: None,
        });
    }
    let ref_shape = r
        .and_then(KernelsBench::copy_row)
        .map_or(String::new(), |c| {
            format!(" at {}×{}", c.shape[0], c.shape[1])
        });
    let mut timings = Table {
        id: "kernels-table",
        head: vec![
            "op".into(),
            "dtype".into(),
            "shape".into(),
            "p50 / p99 ms".into(),
            "GB/s (of copy)".into(),
            "PyTorch eager GB/s".into(),
            "torch.compile GB/s".into(),
            "Triton GB/s (of copy)".into(),
            "÷ eager".into(),
            "÷ torch.compile".into(),
            "÷ Triton".into(),
            format!("{}{ref_shape}, GB/s", results::REFERENCE),
            "measured ÷ H200".into(),
        ],
        ..Table::default()
    };
    let mut legend = vec![("measured (ours)".to_string(), COLORS[0])];
    let mut groups = Vec::new();
    let mut speedups = Vec::new();
    let mut triton_failures = Vec::new();
    let mut shape = [0, 0];
    for g in k.throughput() {
        let sg = speedup_group(&g);
        if !sg.bars.is_empty() {
            speedups.push(sg);
        }
        if let Some(f) = g.triton.failure() {
            triton_failures.push(format!("{}: {f}", g.label));
        }
        let (vs_eager, vs_compile, vs_triton) = (g.vs_eager(), g.vs_compile(), g.vs_triton());
        let triton_of_copy = g.triton_of_copy();
        let triton_gbps = g.triton.gbps();
        // The Triton kernel's GB/s with its share of the copy ceiling, in one cell (the table
        // fits 1,280 px).
        let triton_cell = match &g.triton {
            TritonCell::Timed(t) => cell(
                "num",
                match triton_of_copy {
                    Some(f) => format!("{} ({:.1} %)", fmt(*t), f * 100.0),
                    None => fmt(*t),
                },
            ),
            TritonCell::CheckFailed { .. } => cell("num failed", "check failed"),
            TritonCell::Absent => cell("num", "–"),
        };
        let x = g.ours;
        shape = x.shape;
        let h100 = reference_row(r, &x).map(|r| r.gbps);
        let mut group = bar_group(
            format!("{} {}", x.op, x.dtype),
            [
                (Some(x.gbps), "ours", COLORS[0]),
                (g.eager, "eager", COLORS[4]),
                (g.compile, "compile", COLORS[2]),
                (h100, "H200 ref.", REFERENCE_GREY),
            ],
            gbps,
        );
        if let Some(t) = triton_gbps {
            // After this GPU's, eager's and compile's bars, before the reference's.
            let at = 1 + usize::from(g.eager.is_some()) + usize::from(g.compile.is_some());
            group.bars.insert(
                at.min(group.bars.len()),
                Bar {
                    value: t,
                    color: COLORS[1],
                    text: format!("Triton {}", gbps(t)),
                },
            );
        }
        groups.push(group);
        for (v, name, color) in [
            (g.eager, "PyTorch eager", COLORS[4]),
            (g.compile, "torch.compile (Triton)", COLORS[2]),
            (triton_gbps, "hand-written Triton", COLORS[1]),
            (h100, results::REFERENCE, REFERENCE_GREY),
        ] {
            if v.is_some() && !legend.iter().any(|(n, _)| n == name) {
                legend.push((name.to_string(), color));
            }
        }
        let op = Op::ALL.into_iter().find(|o| o.name() == x.op);
        let dtype = [LabDtype::F32, LabDtype::F16]
            .into_iter()
            .find(|d| d.suffix() == x.dtype);
        timings.rows.push(Row {
            class: String::new(),
            key: format!("{} {}", x.op, x.dtype),
            profile: op.zip(dtype).map(|(op, dtype)| ProfileTarget::Kernel {
                op,
                dtype,
                rows: x.shape[0],
                cols: x.shape[1],
            }),
            cells: vec![
                cell("", x.op.clone()),
                cell("", x.dtype.clone()),
                cell("num", format!("{}×{}", x.shape[0], x.shape[1])),
                cell("num", format!("{:.4} / {:.4}", x.ms_p50, x.ms_p99)),
                cell(
                    "num",
                    format!("{} ({:.1} %)", fmt(x.gbps), x.of_copy * 100.0),
                ),
                cell("num", g.eager.map_or("–".into(), fmt)),
                cell("num", g.compile.map_or("–".into(), fmt)),
                triton_cell,
                cell("num ratio", times(vs_eager)),
                cell("num ratio", times(vs_compile)),
                cell("num ratio", times(vs_triton)),
                cell("num reference", h100.map_or("–".into(), fmt)),
                cell("num ratio", times(h100.map(|h| x.gbps / h))),
            ],
        });
    }
    let rule = k.copy_ceiling_gbps().map(|c| {
        (
            c,
            format!(
                "copy ceiling (the same GPU, same job, {} bytes) {} GB/s",
                k.copy_row().map_or("f32", |r| r.dtype.as_str()),
                fmt(c)
            ),
        )
    });
    let title = format!(
        "Effective bandwidth, GB/s ({} × {}, one read + one write)",
        shape[0], shape[1]
    );
    let chart = Block::Chart(
        "kernels-chart",
        Rc::new(move |c| {
            grouped_bars(
                c,
                &Bars {
                    title: &title,
                    legend: &legend,
                    groups: &groups,
                    rule: rule.clone(),
                    log: false,
                },
            )
        }),
    );
    let speedup_title = format!(
        "Speed-up of ours over each peer, same bytes, same job ({} × {}; above 1×: ours faster)",
        shape[0], shape[1]
    );
    let speedup_legend: Vec<(String, _)> = SPEEDUP_SERIES
        .iter()
        .map(|(_, name, color)| (name.to_string(), COLORS[*color]))
        .collect();
    let speedup_chart = (!speedups.is_empty()).then(|| {
        Block::Chart(
            "kernels-speedup-chart",
            Rc::new(move |c| {
                grouped_bars(
                    c,
                    &Bars {
                        title: &speedup_title,
                        legend: &speedup_legend,
                        groups: &speedups,
                        rule: Some((1.0, "parity, 1×".to_string())),
                        log: false,
                    },
                )
            }),
        )
    });
    let mut blocks = vec![Block::Para(
        "measured-on",
        format!("{}.", origin.measured_on(&k.ours.device)),
    )];
    if let Some(f) = &k.peer_failure {
        blocks.push(Block::Para("error", format!("PyTorch did not run: {f}")));
    }
    if let Some(f) = &k.triton_failure {
        blocks.push(Block::Para(
            "triton-absent muted",
            format!("No Triton column: {f}"),
        ));
    }
    if !triton_failures.is_empty() {
        blocks.push(Block::List(
            "kernels-triton-failed",
            "failed",
            triton_failures
                .into_iter()
                .map(|f| format!("Triton check against f64 failed, not timed — {f}"))
                .collect(),
        ));
    }
    blocks.extend([
        Block::Para(
            "checks-summary",
            format!("{passed} of {total} correctness checks passed (fresh random inputs of awkward shapes, against an f64 reference):"),
        ),
        Block::Table(checks),
        results::reference_note(
            reference.as_ref().map(|k| k.ours.device.as_str()),
            "the kernel timings",
            results::KERNELS_BENCH_COMMAND,
        ),
        chart,
        Block::Table(timings),
    ]);
    blocks.extend(speedup_chart);
    Ok(blocks)
}
