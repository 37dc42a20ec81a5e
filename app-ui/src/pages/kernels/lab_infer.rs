//! "Inference latency": the lab CNN's variants run forward on this GPU per batch size, one
//! launch per kernel and replayed as a CUDA graph (`InferBenchRequest`), PyTorch on the same
//! weights when the peer is ready, the H200 reference column with the ratio.

use std::rc::Rc;

use showdown_core::bench::infer::InferLine;
use showdown_core::inference::LatencyRow;
use showdown_core::lab::{LabReport, RunOrigin};
use showdown_core::model::Activation;
use showdown_core::protocol::{InferBenchRequest, Request};

use super::results;
use super::section::{cell, num, report_of, times, Block, Control, Form, Row, Section, Table};
use crate::charts::{bar_group, grouped_bars, Bars, COLORS, REFERENCE_GREY};

const VARIANTS: [&str; 3] = ["relu", "gelu", "swish"];

/// The section.
pub static SECTION: Section = Section {
    id: "infer",
    kind: "inference",
    title: "Inference latency",
    intro: "The lab CNN with ReLU, GELU or Swish, trained quickly on the CPU, then run forward on the GPU (tensor-core \
        convolutions and fused kernels) per batch size: one launch per kernel, and the same pass replayed as a CUDA \
        graph, which removes the launch overhead that dominates small batches.",
    gpu_only: Some("Timing inference"),
    controls: &[
        Control::Checks("infer-variant", &VARIANTS, &VARIANTS, &[]),
        Control::Text("infer-batches", "batch sizes", "1, 32, 128, 1024"),
        Control::Peer,
    ],
    request,
    show,
};

fn request(f: &Form) -> Result<Request, String> {
    let activations = f
        .checked("infer-variant", "variant")?
        .into_iter()
        .filter_map(|n| Activation::ALL.into_iter().find(|a| a.name() == n))
        .collect();
    let text = f.text("infer-batches");
    let mut batches = Vec::new();
    for part in text.split([',', ' ']).filter(|s| !s.is_empty()) {
        match part.parse::<usize>() {
            Ok(b) if b > 0 => batches.push(b),
            _ => {
                return Err(format!(
                    "batch sizes must be whole numbers above 0, not {text:?}"
                ))
            }
        }
    }
    if batches.is_empty() {
        return Err("give at least one batch size".into());
    }
    Ok(InferBenchRequest {
        activations,
        batches,
        peers: f.peers(),
        ..InferBenchRequest::default()
    }
    .into())
}

/// Our fastest median of a line (launches or graph), ms.
fn best_ms(l: &InferLine) -> Option<f64> {
    [&l.launches, &l.graph]
        .into_iter()
        .flatten()
        .map(|r| r.p50_ms)
        .filter(|ms| ms.is_finite() && *ms > 0.0)
        .min_by(f64::total_cmp)
}

fn p50(r: &Option<LatencyRow>) -> Option<f64> {
    r.as_ref().map(|r| r.p50_ms)
}

fn ms4(v: f64) -> String {
    format!("{v:.4} ms")
}

fn show(reply: &str, origin: &RunOrigin) -> Result<Vec<Block>, String> {
    let LabReport::Inference { report: i } = report_of("inference", reply)? else {
        return Err("the reply is not an inference benchmark".into());
    };
    let reference = match results::reference("inference") {
        Ok(LabReport::Inference { report }) => Ok(report),
        Ok(_) => Err("not an inference benchmark".to_string()),
        Err(e) => Err(e),
    };
    let refs = reference.as_ref().map(|r| r.lines()).unwrap_or_default();
    let mut checks = Vec::new();
    for v in &i.variants {
        let c = &v.check;
        let peer = v
            .peer_accuracy
            .map_or(String::new(), |a| format!(", PyTorch {a:.4}"));
        checks.push(format!(
            "{}: accuracy GPU FP16 {:.4}, CPU FP32 {:.4}{peer}; argmax agreement {:.2} % of {} images; max |Δlogit| {:.2e} · {}",
            v.activation.name(), c.gpu_accuracy, c.cpu_accuracy, c.argmax_agreement * 100.0, c.images,
            c.max_abs_diff, if c.ok { "ok" } else { "FAILED" }
        ));
    }
    let mut notes = i.notes.clone();
    if let Some(f) = &i.peer_failure {
        notes.push(format!("PyTorch did not run: {f}"));
    }
    let mut legend = vec![
        ("one launch per kernel".to_string(), COLORS[0]),
        ("CUDA graph".to_string(), COLORS[1]),
    ];
    let mut torch = false;
    let mut groups = Vec::new();
    let mut table = Table {
        id: "infer-results",
        head: vec![
            "activation".into(),
            "batch".into(),
            "launches p50 ms".into(),
            "CUDA graph p50 ms".into(),
            "fastest PyTorch p50 ms".into(),
            "which".into(),
            "ours vs fastest PyTorch".into(),
            format!("{}, fastest of ours, ms", results::REFERENCE),
            "measured ÷ H200 (speed)".into(),
        ],
        ..Table::default()
    };
    for l in i.lines() {
        let h = refs
            .iter()
            .find(|r| r.activation == l.activation && r.batch == l.batch)
            .and_then(best_ms);
        torch |= l.best_torch.is_some();
        groups.push(bar_group(
            format!("{} · batch {}", l.activation.name(), l.batch),
            [
                (p50(&l.launches), "launches", COLORS[0]),
                (p50(&l.graph), "graph", COLORS[1]),
                (p50(&l.best_torch), "PyTorch", COLORS[4]),
                (h, "H200 ref.", REFERENCE_GREY),
            ],
            ms4,
        ));
        table.rows.push(Row {
            key: format!("{} {}", l.activation.name(), l.batch),
            cells: vec![
                cell("", l.activation.name()),
                cell("num", l.batch.to_string()),
                cell("num", num(p50(&l.launches), 4)),
                cell("num", num(p50(&l.graph), 4)),
                cell("num", num(p50(&l.best_torch), 4)),
                cell(
                    "",
                    l.best_torch
                        .as_ref()
                        .map_or("–".to_string(), |r| r.implementation.clone()),
                ),
                cell(
                    if l.ours_vs_best.is_some_and(|v| v > 1.0) {
                        "num faster"
                    } else {
                        "num"
                    },
                    times(l.ours_vs_best),
                ),
                cell("num reference", num(h, 4)),
                cell("num ratio", times(h.zip(best_ms(&l)).map(|(h, o)| h / o))),
            ],
            ..Row::default()
        });
    }
    if torch {
        legend.push(("fastest PyTorch".into(), COLORS[4]));
    }
    if !refs.is_empty() {
        legend.push((
            format!("{} (fastest of ours)", results::REFERENCE),
            REFERENCE_GREY,
        ));
    }
    Ok(vec![
        Block::Para(
            "measured-on",
            format!(
                "{}: {} test images, FP16 activations with FP32 accumulation; latency of one forward pass.",
                origin.measured_on(&i.device),
                i.dataset
            ),
        ),
        Block::Para(
            "",
            "GPU logits checked against the CPU's FP32 forward of the same weights:".into(),
        ),
        Block::List("", "infer-checks", checks),
        Block::List("", "lab-notes", notes),
        results::reference_note(
            reference.as_ref().map(|i| i.device.as_str()),
            "the latencies",
            results::INFER_COMMAND,
        ),
        Block::Chart(
            "infer-chart",
            Rc::new(move |c| {
                grouped_bars(
                    c,
                    &Bars {
                        title: "Latency of one forward pass, median ms (log scale)",
                        legend: &legend,
                        groups: &groups,
                        rule: None,
                        log: true,
                    },
                )
            }),
        ),
        Block::Table(table),
    ])
}
