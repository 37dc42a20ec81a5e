//! `showdown bench infer`: the CNN variant switch's inference latency against PyTorch on the
//! same weights. The report ([`InferenceReport`]) and its rows live in
//! [`inference`](crate::inference); here are the peer's lines, the table of ours beside the
//! fastest PyTorch, and the terminal table.

use std::fmt::Write;

use serde::Deserialize;

use super::{json_lines, or_dash, parse_json, ParseError};
use crate::inference::{InferenceReport, LatencyRow};
use crate::model::Activation;

/// Our row with one launch per kernel.
pub const OURS_LAUNCHES: &str = "showdown_fp16_launches";
/// Our row replayed as a CUDA graph.
pub const OURS_GRAPH: &str = "showdown_fp16_graph";

/// A JSON line of the peer (`bench/infer_peer.py`).
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum PeerLine {
    Latency {
        #[serde(rename = "impl")]
        implementation: String,
        activation: Activation,
        batch: usize,
        reps: usize,
        p50_ms: f64,
        p90_ms: f64,
        p99_ms: f64,
    },
    Accuracy {
        activation: Activation,
        accuracy: f64,
    },
}

/// The peer's latency rows and accuracies (other lines, unknown activations, batch 0,
/// non-positive times and broken lines are skipped).
pub fn parse_peer_lines(stdout: &str) -> (Vec<LatencyRow>, Vec<(Activation, f64)>) {
    let (mut rows, mut acc) = (Vec::new(), Vec::new());
    for l in json_lines(stdout) {
        match serde_json::from_str::<PeerLine>(l) {
            Ok(PeerLine::Latency {
                implementation,
                activation,
                batch,
                reps,
                p50_ms,
                p90_ms,
                p99_ms,
            }) if p50_ms.is_finite() && p50_ms > 0.0 && batch > 0 => rows.push(LatencyRow {
                implementation,
                activation,
                batch,
                reps,
                p50_ms,
                p90_ms,
                p99_ms,
                images_per_s: batch as f64 / (p50_ms * 1e-3),
            }),
            Ok(PeerLine::Accuracy {
                activation,
                accuracy,
            }) => acc.push((activation, accuracy)),
            _ => {}
        }
    }
    (rows, acc)
}

/// One variant at one batch size: ours (launches, graph) beside the fastest PyTorch.
#[derive(Debug, Clone, PartialEq)]
pub struct InferLine {
    /// The variant.
    pub activation: Activation,
    /// Images per pass.
    pub batch: usize,
    /// Ours, one launch per kernel.
    pub launches: Option<LatencyRow>,
    /// Ours, replayed as a CUDA graph.
    pub graph: Option<LatencyRow>,
    /// The fastest PyTorch row (by p50).
    pub best_torch: Option<LatencyRow>,
    /// The fastest PyTorch's p50 over our fastest (above 1: ours is faster).
    pub ours_vs_best: Option<f64>,
}

fn positive(ms: f64) -> bool {
    ms.is_finite() && ms > 0.0
}

impl InferenceReport {
    /// Parses the JSON of `showdown bench infer --json-out`.
    pub fn parse(json: &str) -> Result<Self, ParseError> {
        parse_json(json, "inference benchmark")
    }

    /// Every variant at every batch of the report, with the fastest PyTorch beside ours.
    pub fn lines(&self) -> Vec<InferLine> {
        let mut out = Vec::new();
        for v in &self.variants {
            for &b in &self.batches {
                let ours = |name: &str| {
                    v.rows
                        .iter()
                        .find(|x| x.batch == b && x.implementation == name)
                        .cloned()
                };
                let (launches, graph) = (ours(OURS_LAUNCHES), ours(OURS_GRAPH));
                let best_torch = self
                    .peers
                    .iter()
                    .filter(|p| p.activation == v.activation && p.batch == b && positive(p.p50_ms))
                    .min_by(|a, c| a.p50_ms.total_cmp(&c.p50_ms))
                    .cloned();
                let our_best = [&launches, &graph]
                    .into_iter()
                    .flatten()
                    .map(|x| x.p50_ms)
                    .filter(|ms| positive(*ms))
                    .min_by(f64::total_cmp);
                let ours_vs_best = match (&best_torch, our_best) {
                    (Some(t), Some(o)) => Some(t.p50_ms / o),
                    _ => None,
                };
                out.push(InferLine {
                    activation: v.activation,
                    batch: b,
                    launches,
                    graph,
                    best_torch,
                    ours_vs_best,
                });
            }
        }
        out
    }

    /// The terminal table `showdown bench infer` prints: per variant and batch ours (launches,
    /// graph) beside the fastest PyTorch row, then the checks, then every peer row.
    pub fn table(&self) -> String {
        let r = self;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{} — lab CNN inference (FP16 activations, FP32 accumulation), {} test images",
            r.device, r.dataset
        );
        let _ = writeln!(
            o,
            "{:<6} {:>6} | {:>10} {:>10} {:>10} | {:>10} {:>10} | {:>10} {:<34} | {:>7}",
            "act",
            "batch",
            "launch p50",
            "p90",
            "p99",
            "graph p50",
            "p99",
            "torch best",
            "(which)",
            "ours vs"
        );
        let ms = |x: &Option<LatencyRow>, f: fn(&LatencyRow) -> f64| or_dash(x.as_ref().map(f), 4);
        for l in self.lines() {
            let _ = writeln!(
                o,
                "{:<6} {:>6} | {:>10} {:>10} {:>10} | {:>10} {:>10} | {:>10} {:<34} | {:>7}",
                l.activation.name(),
                l.batch,
                ms(&l.launches, |x| x.p50_ms),
                ms(&l.launches, |x| x.p90_ms),
                ms(&l.launches, |x| x.p99_ms),
                ms(&l.graph, |x| x.p50_ms),
                ms(&l.graph, |x| x.p99_ms),
                ms(&l.best_torch, |x| x.p50_ms),
                l.best_torch
                    .as_ref()
                    .map_or("", |x| x.implementation.as_str()),
                l.ours_vs_best
                    .map_or_else(|| "–".to_string(), |v| format!("{v:.2}x")),
            );
        }
        let _ = writeln!(
            o,
            "\ncorrectness and accuracy (GPU FP16 vs CPU FP32 logits of the same weights, whole test split):"
        );
        for v in &r.variants {
            let c = &v.check;
            let _ = writeln!(
                o,
                "  {:<6} trained {} epoch(s) on {} images in {:.1} s | acc CPU {:.4} GPU {:.4} PyTorch {} | argmax agree {:.2}% | max |Δlogit| {:.3e} (max |logit| {:.1}) | {}",
                v.activation.name(),
                v.epochs,
                v.train_images,
                v.train_s,
                c.cpu_accuracy,
                c.gpu_accuracy,
                or_dash(v.peer_accuracy, 4),
                c.argmax_agreement * 100.0,
                c.max_abs_diff,
                c.max_abs_logit,
                if c.ok { "ok" } else { "FAIL" }
            );
        }
        if !r.peers.is_empty() {
            let _ = writeln!(o, "\nPyTorch rows (same weights, same images, same call):");
            for p in &r.peers {
                let _ = writeln!(
                    o,
                    "  {:<6} {:>6} {:<34} p50 {:.4}  p90 {:.4}  p99 {:.4} ms  ({} passes)",
                    p.activation.name(),
                    p.batch,
                    p.implementation,
                    p.p50_ms,
                    p.p90_ms,
                    p.p99_ms,
                    p.reps
                );
            }
        }
        for n in &r.notes {
            let _ = writeln!(o, "note: {n}");
        }
        if let Some(f) = &r.peer_failure {
            let _ = writeln!(o, "peer failed: {f}");
        }
        o
    }
}
