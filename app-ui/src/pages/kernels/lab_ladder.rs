//! "The convolution ladder": rungs 1–5 and cuDNN on this GPU, the CPU rows everywhere
//! (`ConvLadderRequest`, backend `auto`): the core's tables per layer, the speed-up over the
//! first rung, a roofline against the ceilings measured in the same job, and the H200
//! reference column for the GPU rows.

use std::rc::Rc;

use plotters::style::RGBColor;
use showdown_core::bench::conv::{is_cpu_row, ConvBench, LadderColumn, LadderLine, LadderTable};
use showdown_core::lab::{LabReport, ProfileTarget, RunOrigin};
use showdown_core::protocol::{ConvLadderRequest, Request};

use super::results;
use super::section::{cell, num, report_of, Block, Cell, Control, Form, Row, Section, Table};
use crate::charts::{
    fmt, grouped_bars, roofline, Bar, BarGroup, Bars, Point, Roofline, COLORS, YELLOW,
};

const LAYERS: [&str; 4] = ["lab_conv1", "lab_conv2", "lenet_c1", "lenet_c3"];
const CUDNN: RGBColor = RGBColor(60, 60, 60);

/// The section.
pub static SECTION: Section = Section {
    id: "ladder",
    kind: "ladder",
    title: "The convolution ladder",
    intro: "Rung 1 unrolls and calls a GEMM, rung 2 fuses it in FP32, rung 3 moves to tensor cores (mma.sync, FP16 in, \
        FP32 out), rung 4 writes FP16, rung 5 overlaps the copy from pinned host memory on two streams; cuDNN beside \
        them. The CPU rows run a few images (their own batch): the naive f64 loop every rung is checked against, and im2col + \
        GEMM; without a GPU they run alone.",
    gpu_only: None,
    controls: &[
        Control::GpuCount("ladder-batch", "batch (GPU rows)", "1024"),
        Control::Count("ladder-cpu-batch", "batch (CPU rows)", "8"),
        Control::Checks("ladder-layer", &LAYERS, &LAYERS, &[]),
        Control::Peer,
    ],
    request,
    show,
};

fn request(f: &Form) -> Result<Request, String> {
    Ok(ConvLadderRequest {
        batch: f.count("ladder-batch", "batch (GPU rows)")?,
        cpu_batch: f.count("ladder-cpu-batch", "batch (CPU rows)")?,
        layers: f
            .checked("ladder-layer", "layer")?
            .into_iter()
            .map(String::from)
            .collect(),
        peers: f.peers(),
        ..ConvLadderRequest::default()
    }
    .into())
}

fn is_cpu(implementation: &str) -> bool {
    is_cpu_row(implementation)
}

/// The cell of `line` in `column` (`reference`: the reference run's TFLOP/s), a dash where
/// the line has no value.
fn ladder_cell(line: &LadderLine, column: LadderColumn, reference: Option<f64>) -> Cell {
    let class = match column {
        LadderColumn::Implementation | LadderColumn::Dtypes => "",
        LadderColumn::VsCudnn if line.vs_cudnn.is_some_and(|v| v > 1.0) => "num faster",
        LadderColumn::Reference => "num reference",
        LadderColumn::VsReference => "num ratio",
        _ => "num",
    };
    cell(
        class,
        line.cell(column, reference)
            .unwrap_or_else(|| "–".to_string()),
    )
}

/// Per layer, every row's speed-up (the GPU rows over rung 1, the CPU rows over the naive
/// f64 loop), and the GPU rows (rungs, cuDNN) on a roofline against this GPU's copy and GEMM
/// ceilings.
fn charts(l: &ConvBench, tables: &[LadderTable], blocks: &mut Vec<Block>) {
    let mut legend: Vec<(String, RGBColor)> = Vec::new();
    let mut groups = Vec::new();
    for t in tables {
        let naive = t
            .lines
            .iter()
            .find(|l| l.implementation == "cpu_naive_f64")
            .map(|l| l.ms);
        let mut bars = Vec::new();
        for l in &t.lines {
            let (value, color, kind) = if is_cpu(&l.implementation) {
                (
                    naive.map(|n| n / l.ms),
                    YELLOW,
                    "CPU (× the naive f64 loop)".to_string(),
                )
            } else if let Some(r) = l.rung {
                let i = usize::from(r.saturating_sub(1)) % COLORS.len();
                (l.vs_rung1, COLORS[i], format!("rung {r}"))
            } else if l.is_cudnn {
                (l.vs_rung1, CUDNN, "cuDNN".to_string())
            } else {
                (l.vs_rung1, COLORS[5], "ours, other".to_string())
            };
            let Some(value) = value else { continue };
            if !legend.iter().any(|(n, _)| *n == kind) {
                legend.push((kind, color));
            }
            bars.push(Bar {
                value,
                color,
                text: format!("{} {value:.1}×", l.implementation),
            });
        }
        groups.push(BarGroup {
            label: t.layer.name().to_string(),
            bars,
        });
    }
    blocks.push(Block::Chart(
        "ladder-chart",
        Rc::new(move |c| {
            grouped_bars(
                c,
                &Bars {
                    title: "Speed-up over rung 1 per layer (median time of rung 1 ÷ the row's)",
                    legend: &legend,
                    groups: &groups,
                    rule: None,
                    log: false,
                },
            )
        }),
    ));
    let r = &l.ours;
    let c = &r.ceilings;
    let layers = l.layers();
    let mut points = Vec::new();
    for x in &r.rows {
        if x.batch != r.batch || is_cpu(&x.implementation) || !(x.rung.is_some() || x.is_cudnn()) {
            continue;
        }
        let i = layers.iter().position(|l| l.name() == x.layer).unwrap_or(0);
        points.push(Point {
            x: x.intensity,
            y: x.tflops,
            color: COLORS[i % COLORS.len()],
            label: x.rung.map_or("c".into(), |r| r.to_string()),
            title: format!(
                "{} {}: {} TFLOP/s at {} FLOP/B",
                x.layer,
                x.implementation,
                fmt(x.tflops),
                fmt(x.intensity)
            ),
        });
    }
    if points.is_empty() || c.copy_gbps <= 0.0 {
        return;
    }
    let mut legend = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        legend.push((l.name().to_string(), COLORS[i % COLORS.len()]));
    }
    let mut peaks = Vec::new();
    for (n, v) in [
        ("cuBLAS FP16", c.gemm_f16_tflops),
        ("cuBLAS FP32", c.gemm_f32_tflops),
    ] {
        if let Some(v) = v {
            peaks.push((n.to_string(), v));
        }
    }
    let bandwidth = c.copy_gbps;
    blocks.push(Block::Chart(
        "ladder-roofline",
        Rc::new(move |canvas| {
            roofline(
                canvas,
                &Roofline {
                    title: "Roofline: the rungs (1–5) and cuDNN (c) against the measured GPU's ceilings",
                    bandwidth_gbps: bandwidth,
                    peaks: &peaks,
                    points: &points,
                    legend: &legend,
                },
            )
        }),
    ));
}

fn show(reply: &str, origin: &RunOrigin) -> Result<Vec<Block>, String> {
    let LabReport::Ladder { report: l } = report_of("ladder", reply)? else {
        return Err("the reply is not a convolution ladder".into());
    };
    let reference = match results::reference("ladder") {
        Ok(LabReport::Ladder { report }) => Ok(report),
        Ok(_) => Err("not a convolution ladder".to_string()),
        Err(e) => Err(e),
    };
    let r = &l.ours;
    let (n, passed, max_rel) = l.check_totals();
    let gpu_rows = r.rows.iter().any(|x| !is_cpu(&x.implementation));
    let tables = l.tables();
    let ref_tables = reference
        .as_ref()
        .map(ConvBench::tables)
        .unwrap_or_default();
    let ref_head = format!(
        "{}{}",
        results::REFERENCE,
        reference
            .as_ref()
            .map_or(String::new(), |x| format!(" (batch {})", x.ours.batch))
    );
    let c = &r.ceilings;
    let mut blocks = vec![Block::Para(
        "measured-on",
        format!(
            "{}: {}; {}. Each row states its own batch (images per pass); the CPU rows' throughput is in GFLOP/s, the GPU's in TFLOP/s.",
            origin.measured_on(&r.device),
            l.batch_statement(),
            r.input_source
        ),
    )];
    if gpu_rows {
        blocks.push(Block::Para(
            "ceilings",
            format!(
                "Ceilings measured in the same job: copy {} GB/s; cuBLAS GEMM 8192³ FP16 {} TFLOP/s, FP32 {} TFLOP/s{}.",
                fmt(c.copy_gbps),
                num(c.gemm_f16_tflops, 0),
                num(c.gemm_f32_tflops, 1),
                c.gemm_note.as_ref().map_or(String::new(), |n| format!(" ({n})")),
            ),
        ));
    }
    blocks.push(Block::Para(
        "checks-summary",
        format!("{passed} of {n} checks passed (largest relative error {max_rel:.1e})."),
    ));
    let mut problems = l.failed_checks();
    for s in &r.skipped {
        problems.push(format!("skipped: {s}"));
    }
    if let Some(f) = &l.peer_failure {
        problems.push(format!("PyTorch did not run: {f}"));
    }
    blocks.push(Block::List("", "error", problems));
    let versus: Vec<String> = l.ours_vs_cudnn().iter().map(|v| v.sentence()).collect();
    blocks.push(Block::List("", "ours-vs-cudnn", versus));
    charts(&l, &tables, &mut blocks);
    if gpu_rows {
        blocks.push(results::reference_note(
            reference.as_ref().map(|l| l.ours.device.as_str()),
            "the GPU rows",
            results::CONV_LADDER_COMMAND,
        ));
    }
    let batch = r.batch;
    for t in tables {
        let layer = t.layer;
        let ref_lines = ref_tables
            .iter()
            .find(|x| x.layer == layer)
            .map(|x| &x.lines);
        let best = t
            .best_cudnn
            .clone()
            .map_or("no cuDNN row".to_string(), |(name, ms)| {
                format!("fastest cuDNN: {name}, {ms:.4} ms")
            });
        // The reference run's TFLOP/s of each GPU line; the columns that have a value.
        let refs: Vec<Option<f64>> = t
            .lines
            .iter()
            .map(|line| {
                ref_lines
                    .filter(|_| !is_cpu(&line.implementation))
                    .and_then(|ls| ls.iter().find(|x| x.implementation == line.implementation))
                    .and_then(|x| x.tflops)
            })
            .collect();
        let columns = LadderColumn::shown(&t.lines, &refs);
        let mut table = Table {
            key: layer.name().into(),
            caption: format!("{} · {best}", layer.title()),
            head: columns.iter().map(|c| c.head(&ref_head)).collect(),
            ..Table::default()
        };
        for (line, h100) in t.lines.iter().zip(refs.iter().copied()) {
            let gpu = !is_cpu(&line.implementation);
            let class = match (line.is_cudnn, line.rung.is_some(), gpu) {
                (true, _, _) => "cudnn",
                (_, true, _) => "rung",
                (_, _, false) => "cpu",
                _ => "",
            };
            table.rows.push(Row {
                class: class.into(),
                key: line.implementation.clone(),
                profile: line
                    .rung
                    .filter(|_| gpu && line.batch == batch)
                    .map(|rung| ProfileTarget::Rung {
                        layer: layer.name().into(),
                        rung,
                        batch,
                    }),
                cells: columns
                    .iter()
                    .map(|&c| ladder_cell(line, c, h100))
                    .collect(),
            });
        }
        blocks.push(Block::Table(table));
    }
    Ok(blocks)
}
