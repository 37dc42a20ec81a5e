//! "When does each precision pay?" (issue 39), the end of Act II: the precision crossover
//! (`CrossoverRequest`): the same GEMM at growing sizes in every precision on this machine
//! (cuBLASLt on a GPU, the CPU backend's GEMMs without one) and the lab CNN's own GEMMs; a
//! log–log chart of TFLOP/s against size with the ceilings, the CNN's points labelled, the
//! crossover sizes marked and the regimes shaded; the speed-up over FP32; the sentences
//! written from the numbers; the tables with every value's unit.

use std::rc::Rc;

use plotters::style::RGBColor;
use showdown_core::bench::crossover::{
    label, ms_text, parse_sizes, tflops_text, CrossoverReport, GemmPoint, Regime, ORDER, PAYS,
};
use showdown_core::lab::{LabReport, RunOrigin};
use showdown_core::protocol::{CrossoverRequest, Request};
use showdown_core::types::Precision;

use super::section::{cell, report_of, times, Block, Cell, Control, Form, Row, Section, Table};
use crate::charts::{
    css_color, fmt, log_log, precision_color, Band, LogLine, LogLog, Mark, REFERENCE_GREY,
};

const PRECISIONS: [&str; 5] = ["fp32", "tf32", "bf16", "fp16", "fp8"];
const CNN: [&str; 1] = ["cnn"];

/// The section.
pub static SECTION: Section = Section {
    id: "crossover",
    kind: "crossover",
    title: "When does each precision pay?",
    intro: "The duel showed one size: the lab CNN. Here the same matrix product runs at growing sizes in every precision on this \
        machine (cuBLASLt on a GPU; the CPU backend's GEMMs without one: FP32, BF16 on vdpbf16ps where the CPU has it, FP16 \
        widened), each checked against an f64 product of the same rounded operands, beside the lab CNN's own GEMMs (cnn). \
        Small products are launch-bound (the call's fixed cost dominates), then memory-bound, then compute-bound: only there \
        does a narrower precision's faster arithmetic pay. Sizes: N for N×N×N products, comma-separated (empty: 64 to 16384 \
        on a GPU, 32 to 1024 on the CPU).",
    gpu_only: None,
    controls: &[
        Control::Text("crossover-sizes", "sizes N", ""),
        Control::Checks("crossover-precision", &PRECISIONS, &PRECISIONS, &[]),
        Control::Checks("crossover-cnn", &CNN, &CNN, &[]),
        Control::Peer,
    ],
    request,
    show,
};

fn request(f: &Form) -> Result<Request, String> {
    let precisions = f
        .checked("crossover-precision", "precision")?
        .into_iter()
        .map(|p| p.parse::<Precision>().map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let include_cnn = f.checked("crossover-cnn", "cnn").is_ok();
    Ok(CrossoverRequest {
        sizes: parse_sizes(&f.text("crossover-sizes"))?,
        precisions,
        include_cnn,
        include_peer: f.peers(),
        ..CrossoverRequest::default()
    }
    .into())
}

/// The CNN's GEMM at the x of a square product of the same FLOPs: `∛(m·n·k)`.
fn equivalent_n(p: &GemmPoint) -> f64 {
    (p.shape.m as f64 * p.shape.n as f64 * p.shape.k as f64).cbrt()
}

/// A point's hover title: every value with its unit.
fn title(p: &GemmPoint, device: &str) -> String {
    let what = match &p.label {
        Some(l) => format!("{l} {} (lab CNN, batch 128)", p.shape.text()),
        None => format!("N = {}", p.shape.n),
    };
    format!(
        "{} {what} on {device}: {}, {} (median of {}); {} FP32, {} BF16; {}; f64 check {} (max error {:.1e}, tolerance {:.1e})",
        label(p.precision),
        tflops_text(p.tflops),
        ms_text(p.ms_p50),
        p.reps,
        times(p.speedup_vs_fp32),
        times(p.speedup_vs_bf16),
        p.regime.as_str(),
        if p.check.ok { "passed" } else { "FAILED" },
        p.check.max_rel_err,
        p.check.tolerance
    )
}

fn regime_color(r: Regime) -> RGBColor {
    match r {
        Regime::Launch => RGBColor(236, 236, 236),
        Regime::Memory => RGBColor(222, 235, 247),
        Regime::Compute => RGBColor(229, 245, 224),
    }
}

/// The regime most of the square points at each size share, as shaded stretches of x
/// between the sizes' geometric midpoints.
fn bands(r: &CrossoverReport) -> Vec<Band> {
    let sizes = r.sizes();
    let mut out: Vec<Band> = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let mut count = [0usize; 3];
        for p in r
            .points
            .iter()
            .filter(|p| p.label.is_none() && p.shape.n == n)
        {
            count[p.regime as usize] += 1;
        }
        let regime = [Regime::Launch, Regime::Memory, Regime::Compute]
            .into_iter()
            .max_by_key(|g| count[*g as usize])
            .unwrap_or(Regime::Launch);
        let from = if i == 0 {
            n as f64 / 1.5
        } else {
            (n as f64 * sizes[i - 1] as f64).sqrt()
        };
        let to = sizes
            .get(i + 1)
            .map_or(n as f64 * 1.5, |&m| (n as f64 * m as f64).sqrt());
        match out.last_mut() {
            Some(b) if b.color == regime_color(regime) => b.to = to,
            _ => out.push(Band {
                from,
                to,
                color: regime_color(regime),
                title: format!("{} (most precisions at these sizes)", regime.as_str()),
            }),
        }
    }
    out
}

/// The legend: the precisions measured, the CNN's marks and the regimes.
fn legend(r: &CrossoverReport) -> Vec<(String, RGBColor)> {
    let mut l: Vec<(String, RGBColor)> = r
        .precisions()
        .into_iter()
        .map(|p| (label(p).to_string(), precision_color(p)))
        .collect();
    for g in [Regime::Launch, Regime::Memory, Regime::Compute] {
        l.push((g.as_str().to_string(), regime_color(g)));
    }
    l
}

fn charts(r: &CrossoverReport, blocks: &mut Vec<Block>) {
    let device = r.device.clone();
    let mut lines = Vec::new();
    let mut speed = Vec::new();
    for p in r.precisions() {
        let pts = r.sweep(p);
        lines.push(LogLine {
            name: label(p).into(),
            color: precision_color(p),
            points: pts
                .iter()
                .map(|x| (x.shape.n as f64, x.tflops, title(x, &device)))
                .collect(),
        });
        if p != Precision::Fp32 {
            speed.push(LogLine {
                name: label(p).into(),
                color: precision_color(p),
                points: pts
                    .iter()
                    .filter_map(|x| {
                        x.speedup_vs_fp32
                            .map(|s| (x.shape.n as f64, s, title(x, &device)))
                    })
                    .collect(),
            });
        }
    }
    let marks: Vec<Mark> = r
        .cnn()
        .map(|x| Mark {
            x: equivalent_n(x),
            y: x.tflops,
            color: precision_color(x.precision),
            label: x.label.clone().unwrap_or_default(),
            title: title(x, &device),
        })
        .collect();
    let speed_marks: Vec<Mark> = r
        .cnn()
        .filter(|x| x.precision != Precision::Fp32)
        .filter_map(|x| {
            x.speedup_vs_fp32.map(|s| Mark {
                x: equivalent_n(x),
                y: s,
                color: precision_color(x.precision),
                label: x.label.clone().unwrap_or_default(),
                title: title(x, &device),
            })
        })
        .collect();
    let hrules: Vec<(String, f64, RGBColor)> = r
        .ceilings
        .peaks
        .iter()
        .map(|p| {
            (
                format!("{} peak {}", label(p.precision), tflops_text(p.tflops)),
                p.tflops,
                precision_color(p.precision),
            )
        })
        .collect();
    let vrules: Vec<(String, f64, RGBColor)> = r
        .crossovers
        .iter()
        .filter_map(|c| {
            c.n.map(|n| {
                (
                    format!(
                        "{} pays over {} from N = {n}",
                        label(c.precision),
                        label(c.over)
                    ),
                    n as f64,
                    precision_color(c.precision),
                )
            })
        })
        .collect();
    let bands = bands(r);
    let legend = legend(r);
    let (l1, m1, h1, v1, b1, g1) = (
        lines,
        marks,
        hrules,
        vrules.clone(),
        Rc::new(bands),
        Rc::new(legend),
    );
    let (b2, g2) = (b1.clone(), g1.clone());
    blocks.push(Block::Chart(
        "crossover-chart",
        Rc::new(move |c| {
            log_log(
                c,
                &LogLog {
                    title: "TFLOP/s against size N (N×N×N; the CNN's GEMMs ◇ at ∛(m·n·k)), this run's peaks dashed",
                    x_desc: "N (log)",
                    y_desc: "TFLOP/s (log)",
                    lines: &l1,
                    marks: &m1,
                    hrules: &h1,
                    vrules: &v1,
                    bands: &b1,
                    legend: &g1,
                },
            )
        }),
    ));
    let rules = vec![
        ("1× FP32".to_string(), 1.0, REFERENCE_GREY),
        (format!("{PAYS}×"), PAYS, RGBColor(120, 120, 120)),
    ];
    if speed.iter().any(|l| !l.points.is_empty()) {
        blocks.push(Block::Chart(
            "crossover-speedup",
            Rc::new(move |c| {
                log_log(
                    c,
                    &LogLog {
                        title: "Speed-up over FP32 at the same size (FP32's median time ÷ the precision's)",
                        x_desc: "N (log)",
                        y_desc: "× FP32 (log)",
                        lines: &speed,
                        marks: &speed_marks,
                        hrules: &rules,
                        vrules: &vrules,
                        bands: &b2,
                        legend: &g2,
                    },
                )
            }),
        ));
    }
}

/// One row per point: what, precision (with its swatch), time, rate, speed-ups, regime,
/// check.
fn table(r: &CrossoverReport, cnn: bool) -> Table {
    let mut rows = Vec::new();
    let mut points: Vec<&GemmPoint> = if cnn {
        r.cnn().collect()
    } else {
        r.points.iter().filter(|p| p.label.is_none()).collect()
    };
    points.sort_by_key(|p| {
        (
            p.label.clone(),
            p.shape.n,
            ORDER.iter().position(|x| *x == p.precision),
        )
    });
    for p in points {
        let what = match &p.label {
            Some(l) => format!("{l} {}", p.shape.text()),
            None => p.shape.n.to_string(),
        };
        let padded = p
            .padded
            .map_or(String::new(), |s| format!(" (run as {})", s.text()));
        rows.push(Row {
            class: if p.check.ok {
                String::new()
            } else {
                "error".into()
            },
            key: format!("{} {}", p.precision.as_str(), what),
            cells: vec![
                cell("", format!("{what}{padded}")),
                Cell {
                    text: label(p.precision).into(),
                    class: "",
                    swatch: Some(css_color(precision_color(p.precision))),
                },
                cell("num", ms_text(p.ms_p50)),
                cell("num", tflops_text(p.tflops)),
                cell("num", times(p.speedup_vs_fp32)),
                cell("num", times(p.speedup_vs_bf16)),
                cell("", p.regime.as_str()),
                cell(
                    "num",
                    format!(
                        "{} ({:.1e})",
                        if p.check.ok { "ok" } else { "FAILED" },
                        p.check.max_rel_err
                    ),
                ),
                cell("num", p.reps.to_string()),
            ],
            profile: None,
        });
    }
    Table {
        id: if cnn {
            "crossover-cnn-table"
        } else {
            "crossover-table"
        },
        key: String::new(),
        caption: if cnn {
            format!("The lab CNN's GEMMs at batch 128 on {} (M×N×K)", r.device)
        } else {
            format!("The square products on {}", r.device)
        },
        head: [
            if cnn { "GEMM" } else { "N" },
            "precision",
            "median time",
            "rate",
            "× FP32",
            "× BF16",
            "regime",
            "f64 check (max error)",
            "runs",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

fn show(reply: &str, origin: &RunOrigin) -> Result<Vec<Block>, String> {
    let LabReport::Crossover { report: r } = report_of("crossover", reply)? else {
        return Err("the reply is not a precision crossover".into());
    };
    let date = match origin {
        RunOrigin::Live => format!(
            " on {} (UTC)",
            String::from(js_sys::Date::new_0().to_iso_string())
                .chars()
                .take(10)
                .collect::<String>()
        ),
        RunOrigin::Saved { .. } => String::new(),
    };
    let reps: usize = r.points.iter().map(|p| p.reps).sum();
    let (ok, all) = r.checks_passed();
    let peaks = r
        .ceilings
        .peaks
        .iter()
        .map(|p| {
            format!(
                "{} {} (N = {})",
                label(p.precision),
                tflops_text(p.tflops),
                p.n
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut blocks = vec![
        Block::Para(
            "measured-on",
            format!(
                "{}{date} ({} backend; {}): {} points, {reps} timed runs in all (each point the median of its runs).",
                origin.measured_on(&r.device),
                r.backend,
                r.library,
                r.points.len()
            ),
        ),
        Block::Para(
            "crossover-ceilings",
            format!(
                "Ceilings measured in the same run: copy {} GB/s; a call's fixed cost {}; best rates {}.",
                fmt(r.ceilings.copy_gbps),
                ms_text(r.ceilings.launch_ms),
                if peaks.is_empty() { "–".into() } else { peaks }
            ),
        ),
        Block::List("crossover-sentences", "crossover-sentence", r.sentences.clone()),
        Block::Para(
            "checks-summary",
            format!("{ok} of {all} points pass their f64 check."),
        ),
    ];
    let mut problems: Vec<String> = r
        .skipped
        .iter()
        .map(|s| format!("{} skipped: {}", label(s.precision), s.reason))
        .collect();
    if let Some(f) = &r.peer_failure {
        problems.push(format!("PyTorch did not run: {f}"));
    }
    blocks.push(Block::List("crossover-skipped", "muted", problems));
    if !r.points.is_empty() {
        charts(&r, &mut blocks);
        blocks.push(Block::Table(table(&r, false)));
        if r.cnn().next().is_some() {
            blocks.push(Block::Table(table(&r, true)));
        }
    }
    if !r.steps.is_empty() {
        let rows = r
            .steps
            .iter()
            .map(|s| Row {
                class: String::new(),
                key: format!("step {} {}", s.precision.as_str(), s.batch),
                cells: vec![
                    cell("num", s.batch.to_string()),
                    Cell {
                        text: label(s.precision).into(),
                        class: "",
                        swatch: Some(css_color(precision_color(s.precision))),
                    },
                    cell("num", ms_text(s.ms)),
                    cell("num", format!("{} images/s", fmt(s.images_per_s))),
                    cell("num", times(s.speedup_vs_fp32)),
                ],
                profile: None,
            })
            .collect();
        blocks.push(Block::Table(Table {
            id: "crossover-steps",
            key: String::new(),
            caption: format!(
                "The lab CNN's whole training step on {} (step anatomy; the duel's result in context)",
                r.device
            ),
            head: ["batch", "precision", "step time", "throughput", "× FP32"]
                .map(String::from)
                .to_vec(),
            rows,
        }));
    }
    if let Some(n) = &r.step_note {
        blocks.push(Block::Para(
            "crossover-steps-note muted",
            format!("Training steps: {n}"),
        ));
    }
    if !r.peers.is_empty() {
        let rows = r
            .peers
            .iter()
            .map(|x| {
                let ours = r
                    .point(
                        x.precision,
                        showdown_core::bench::crossover::GemmShape::square(x.n),
                        None,
                    )
                    .map(|o| o.ms_p50);
                Row {
                    class: String::new(),
                    key: format!("peer {} {}", x.precision.as_str(), x.n),
                    cells: vec![
                        cell("", x.n.to_string()),
                        cell("", label(x.precision)),
                        cell("num", ms_text(x.ms_p50)),
                        cell("num", tflops_text(x.tflops)),
                        cell("num", times(ours.map(|o| x.ms_p50 / o))),
                    ],
                    profile: None,
                }
            })
            .collect();
        blocks.push(Block::Table(Table {
            id: "crossover-peer-table",
            key: String::new(),
            caption: "PyTorch in the same job (torch.matmul; torch._scaled_mm for FP8)".into(),
            head: [
                "N",
                "precision",
                "median time",
                "rate",
                "ours × PyTorch's speed",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }));
    }
    Ok(blocks)
}
