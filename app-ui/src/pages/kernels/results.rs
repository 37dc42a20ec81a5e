//! The committed H100 runs of the kernel lab (docs/results/*-h100-2026-11-23.json), compiled
//! into the app: correctness checks and throughput of the activation and norm kernels against
//! PyTorch eager and `torch.compile`, the convolution ladder against cuDNN, and the lab CNN's
//! inference latency against PyTorch on the same weights. Parsed with serde into the local
//! structs below; a file that does not parse shows an error line instead of its section.

use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use serde::Deserialize;
use web_sys::HtmlCanvasElement;

use crate::charts::{fmt, COLORS};

/// `showdown bench kernels --json-out` of the committed run.
pub const KERNELS_BENCH_JSON: &str =
    include_str!("../../../../docs/results/kernels-bench-h100-2026-11-23.json");
/// `showdown bench conv --json-out` of the committed run.
pub const CONV_LADDER_JSON: &str =
    include_str!("../../../../docs/results/conv-ladder-h100-2026-11-23.json");
/// `showdown bench infer --json-out` of the committed run.
pub const INFER_JSON: &str = include_str!("../../../../docs/results/infer-h100-2026-11-23.json");

/// When the committed runs were measured.
pub const RUN_DATE: &str = "2026-11-23";
/// The command of the committed kernel benchmark.
pub const KERNELS_BENCH_COMMAND: &str =
    "showdown bench kernels --peer-log anchor_kernels.jsonl --json-out …";
/// The command of the committed convolution ladder.
pub const CONV_LADDER_COMMAND: &str = "showdown bench conv --dataset fashion-mnist --data-dir .gpu/fashion --peer-log anchor_kernels.jsonl --json-out conv_bench.json";
/// The command of the committed inference benchmark.
pub const INFER_COMMAND: &str = "showdown bench infer --dataset fashion-mnist --data-dir .gpu/fashion --epochs 2 --peer bench/infer_peer.py --compile-batches 1,10000";

// ---------------------------------------------------------------- kernels: checks + throughput

/// The kernel benchmark file: our checks and timings, and PyTorch's timings of the same ops.
#[derive(Debug, Clone, Deserialize)]
pub struct KernelsBench {
    /// Our side.
    pub ours: KernelsOurs,
    /// PyTorch eager and `torch.compile` timings.
    #[serde(default)]
    pub peers: Vec<KernelPeer>,
    /// Why the peer did not run, when it did not.
    #[serde(default)]
    pub peer_failure: Option<String>,
}

/// Our correctness checks and timings.
#[derive(Debug, Clone, Deserialize)]
pub struct KernelsOurs {
    /// The GPU, as the run named it.
    pub device: String,
    /// Checks against an f64 reference.
    #[serde(default)]
    pub checks: Vec<KernelCheck>,
    /// Timed launches.
    #[serde(default)]
    pub bench: Vec<KernelTiming>,
}

/// One correctness check of one kernel on one shape.
#[derive(Debug, Clone, Deserialize)]
pub struct KernelCheck {
    /// Operation (`relu`, `layernorm_gelu`).
    pub op: String,
    /// Storage dtype (`f32`, `f16`).
    pub dtype: String,
    /// Largest absolute error against the reference.
    pub max_abs: f64,
    /// Largest relative error against the reference.
    pub max_rel: f64,
    /// The error bound the check holds the kernel to.
    pub bound: f64,
    /// Whether the kernel stayed within the bound.
    pub ok: bool,
}

/// Our timing of one kernel.
#[derive(Debug, Clone, Deserialize)]
pub struct KernelTiming {
    /// Operation (`copy` is the device-to-device copy ceiling).
    pub op: String,
    /// Storage dtype.
    pub dtype: String,
    /// Effective bandwidth (one read + one write) at the median, GB/s.
    pub gbps: f64,
}

/// PyTorch's timing of one op.
#[derive(Debug, Clone, Deserialize)]
pub struct KernelPeer {
    /// `torch-eager` or `torch-compile-triton`.
    #[serde(rename = "impl")]
    pub implementation: String,
    /// Operation, in the peer's naming (`ln_gelu`).
    pub op: String,
    /// Dtype, in the peer's naming (`float32`).
    pub dtype: String,
    /// Effective bandwidth, GB/s.
    pub gbps: f64,
}

/// Our op name for a peer's op name.
fn our_op(peer_op: &str) -> &str {
    match peer_op {
        "ln_gelu" => "layernorm_gelu",
        other => other,
    }
}

/// Our dtype name for a peer's dtype name.
fn our_dtype(peer_dtype: &str) -> &str {
    match peer_dtype {
        "float32" => "f32",
        "float16" => "f16",
        "bfloat16" => "bf16",
        other => other,
    }
}

/// One op and dtype of the throughput chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputGroup {
    /// `relu f32`.
    pub label: String,
    /// Ours, GB/s.
    pub ours: f64,
    /// PyTorch eager, GB/s.
    pub eager: Option<f64>,
    /// `torch.compile` (Triton), GB/s.
    pub compile: Option<f64>,
}

/// Correctness of one op and dtype over all its shapes.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckSummary {
    /// Operation.
    pub op: String,
    /// Dtype.
    pub dtype: String,
    /// Shapes checked.
    pub checks: usize,
    /// Shapes within the bound.
    pub passed: usize,
    /// Largest absolute error over the shapes.
    pub max_abs: f64,
    /// Largest relative error over the shapes.
    pub max_rel: f64,
    /// The bound (the loosest, if they differ).
    pub bound: f64,
}

impl KernelsBench {
    /// Parses the JSON of `showdown bench kernels --json-out`.
    pub fn parse(json: &str) -> Result<Self, String> {
        serde_json::from_str(json).map_err(|e| format!("cannot read the kernel benchmark: {e}"))
    }

    /// Ours against PyTorch for every timed kernel (not the copy ceiling), in the run's order.
    pub fn throughput(&self) -> Vec<ThroughputGroup> {
        let peer = |op: &str, dtype: &str, which: &str| {
            self.peers
                .iter()
                .find(|p| {
                    p.implementation == which && our_op(&p.op) == op && our_dtype(&p.dtype) == dtype
                })
                .map(|p| p.gbps)
        };
        self.ours
            .bench
            .iter()
            .filter(|t| t.op != "copy")
            .map(|t| ThroughputGroup {
                label: format!("{} {}", t.op, t.dtype),
                ours: t.gbps,
                eager: peer(&t.op, &t.dtype, "torch-eager"),
                compile: peer(&t.op, &t.dtype, "torch-compile-triton"),
            })
            .collect()
    }

    /// Our device-to-device copy in the same run, GB/s (the ceiling of these kernels).
    pub fn copy_ceiling_gbps(&self) -> Option<f64> {
        self.ours
            .bench
            .iter()
            .find(|t| t.op == "copy")
            .map(|t| t.gbps)
    }

    /// The checks grouped by op and dtype, in the run's order.
    pub fn check_summaries(&self) -> Vec<CheckSummary> {
        let mut out: Vec<CheckSummary> = Vec::new();
        for c in &self.ours.checks {
            let pos = out.iter().position(|s| s.op == c.op && s.dtype == c.dtype);
            let s = match pos {
                Some(i) => &mut out[i],
                None => {
                    out.push(CheckSummary {
                        op: c.op.clone(),
                        dtype: c.dtype.clone(),
                        checks: 0,
                        passed: 0,
                        max_abs: 0.0,
                        max_rel: 0.0,
                        bound: 0.0,
                    });
                    let last = out.len() - 1;
                    &mut out[last]
                }
            };
            s.checks += 1;
            s.passed += usize::from(c.ok);
            s.max_abs = s.max_abs.max(c.max_abs);
            s.max_rel = s.max_rel.max(c.max_rel);
            s.bound = s.bound.max(c.bound);
        }
        out
    }
}

// ---------------------------------------------------------------- the convolution ladder

/// The ladder file: our rungs and cuDNN through cudarc, and PyTorch's cuDNN on the same shapes.
#[derive(Debug, Clone, Deserialize)]
pub struct LadderRun {
    /// Our side.
    pub ours: LadderOurs,
    /// PyTorch's cuDNN convolutions.
    #[serde(default)]
    pub peers: Vec<CudnnPeer>,
    /// Why the peer did not run, when it did not.
    #[serde(default)]
    pub peer_failure: Option<String>,
}

/// Our rungs, with their checks and the ceilings of the same run.
#[derive(Debug, Clone, Deserialize)]
pub struct LadderOurs {
    /// The GPU, as the run named it.
    pub device: String,
    /// Images per pass.
    pub batch: usize,
    /// Where the inputs came from.
    #[serde(default)]
    pub input_source: String,
    /// Timed rows.
    #[serde(default)]
    pub rows: Vec<LadderRow>,
    /// Checks of each implementation against an f64 reference.
    #[serde(default)]
    pub checks: Vec<LadderCheck>,
}

/// One implementation on one layer.
#[derive(Debug, Clone, Deserialize)]
pub struct LadderRow {
    /// `lab_conv1`, `lab_conv2`, `lenet_c1`, `lenet_c3`.
    pub layer: String,
    /// `rung3_tensor_cores`, `cudnn_f16`, `cpu_naive_f64`.
    pub implementation: String,
    /// The rung, for our ladder's rows.
    #[serde(default)]
    pub rung: Option<u32>,
    /// Images per pass.
    pub batch: usize,
    /// Input dtype.
    pub input_dtype: String,
    /// Output dtype.
    pub output_dtype: String,
    /// Median milliseconds per pass.
    pub ms_p50: f64,
    /// TFLOP/s at the median.
    #[serde(default)]
    pub tflops: Option<f64>,
    /// Speed-up over rung 1 of the same layer.
    #[serde(default)]
    pub speedup_vs_rung1: Option<f64>,
    /// What the row includes.
    #[serde(default)]
    pub note: Option<String>,
}

/// One implementation's check on one layer.
#[derive(Debug, Clone, Deserialize)]
pub struct LadderCheck {
    /// Layer.
    pub layer: String,
    /// Implementation.
    pub implementation: String,
    /// Largest relative error against the reference.
    pub max_rel: f64,
    /// The bound.
    pub bound: f64,
    /// Whether it held.
    pub ok: bool,
}

/// PyTorch's cuDNN convolution on one shape.
#[derive(Debug, Clone, Deserialize)]
pub struct CudnnPeer {
    /// Batch.
    #[serde(rename = "N")]
    pub n: usize,
    /// Input channels.
    pub cin: u32,
    /// Output channels.
    pub cout: u32,
    /// Input height and width.
    pub hw: u32,
    /// Kernel size.
    pub k: u32,
    /// `float32` or `float16`.
    pub dtype: String,
    /// NHWC layout.
    #[serde(default)]
    pub channels_last: bool,
    /// TF32 allowed.
    #[serde(default)]
    pub tf32: bool,
    /// Median milliseconds.
    pub ms: f64,
}

/// A layer of the ladder: name, title, and the shape that identifies PyTorch's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LadderLayer {
    /// Name in the rows.
    pub name: &'static str,
    /// What it is.
    pub title: &'static str,
    /// Input channels.
    pub cin: u32,
    /// Output channels.
    pub cout: u32,
    /// Input height and width.
    pub hw: u32,
    /// Kernel size.
    pub k: u32,
}

/// The ladder's layers (`showdown bench conv --layers`).
pub const LADDER_LAYERS: [LadderLayer; 4] = [
    LadderLayer {
        name: "lab_conv1",
        title: "lab conv1: 1→32, 28², k3",
        cin: 1,
        cout: 32,
        hw: 28,
        k: 3,
    },
    LadderLayer {
        name: "lab_conv2",
        title: "lab conv2: 32→64, 13², k3",
        cin: 32,
        cout: 64,
        hw: 13,
        k: 3,
    },
    LadderLayer {
        name: "lenet_c1",
        title: "LeNet C1: 1→4, 86², k7",
        cin: 1,
        cout: 4,
        hw: 86,
        k: 7,
    },
    LadderLayer {
        name: "lenet_c3",
        title: "LeNet C3: 4→16, 40², k7",
        cin: 4,
        cout: 16,
        hw: 40,
        k: 7,
    },
];

/// One line of the ladder table.
#[derive(Debug, Clone, PartialEq)]
pub struct LadderLine {
    /// Implementation (PyTorch's rows as `pytorch_cudnn_<dtype>[_channels_last]`).
    pub implementation: String,
    /// The rung, for our ladder.
    pub rung: Option<u32>,
    /// `f16/f32`.
    pub dtypes: String,
    /// Median milliseconds per pass.
    pub ms: f64,
    /// TFLOP/s at the median (our rows).
    pub tflops: Option<f64>,
    /// Speed-up over rung 1.
    pub vs_rung1: Option<f64>,
    /// The fastest cuDNN's time over this one's (above 1: faster than cuDNN).
    pub vs_cudnn: Option<f64>,
    /// Whether this is a cuDNN row.
    pub is_cudnn: bool,
    /// What the row includes.
    pub note: Option<String>,
}

/// One layer's table.
#[derive(Debug, Clone, PartialEq)]
pub struct LadderTable {
    /// The layer.
    pub layer: LadderLayer,
    /// The fastest cuDNN (ours through cudarc or PyTorch's): name and milliseconds.
    pub best_cudnn: Option<(String, f64)>,
    /// Rungs in order, then the other GPU rows of the same batch, then cuDNN's.
    pub lines: Vec<LadderLine>,
}

impl LadderRun {
    /// Parses the JSON of `showdown bench conv --json-out`.
    pub fn parse(json: &str) -> Result<Self, String> {
        serde_json::from_str(json).map_err(|e| format!("cannot read the convolution ladder: {e}"))
    }

    /// (checks, passed, largest relative error) over every implementation and layer.
    pub fn check_totals(&self) -> (usize, usize, f64) {
        let c = &self.ours.checks;
        (
            c.len(),
            c.iter().filter(|c| c.ok).count(),
            c.iter().map(|c| c.max_rel).fold(0.0, f64::max),
        )
    }

    /// The checks that failed, as `layer implementation: error > bound`.
    pub fn failed_checks(&self) -> Vec<String> {
        self.ours
            .checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| {
                format!(
                    "{} {}: relative error {:.2e} > bound {:.0e}",
                    c.layer, c.implementation, c.max_rel, c.bound
                )
            })
            .collect()
    }

    /// One table per layer of [`LADDER_LAYERS`] that has rows. CPU rows (a few images, not the
    /// batch) are left out.
    pub fn tables(&self) -> Vec<LadderTable> {
        LADDER_LAYERS
            .iter()
            .filter_map(|layer| {
                let rows: Vec<&LadderRow> = self
                    .ours
                    .rows
                    .iter()
                    .filter(|r| r.layer == layer.name && r.batch == self.ours.batch)
                    .collect();
                if rows.is_empty() {
                    return None;
                }
                let is_cudnn = |name: &str| name.starts_with("cudnn");
                let peers: Vec<(String, &CudnnPeer)> = self
                    .peers
                    .iter()
                    .filter(|p| {
                        p.cin == layer.cin
                            && p.cout == layer.cout
                            && p.hw == layer.hw
                            && p.k == layer.k
                            && p.n == self.ours.batch
                    })
                    .map(|p| {
                        let math = if p.dtype == "float32" && !p.tf32 {
                            "_strict"
                        } else if p.dtype == "float32" {
                            "_tf32"
                        } else {
                            ""
                        };
                        let layout = if p.channels_last {
                            "_channels_last"
                        } else {
                            ""
                        };
                        (
                            format!("pytorch_cudnn_{}{math}{layout}", our_dtype(&p.dtype)),
                            p,
                        )
                    })
                    .collect();
                let best_cudnn = rows
                    .iter()
                    .filter(|r| is_cudnn(&r.implementation))
                    .map(|r| (r.implementation.clone(), r.ms_p50))
                    .chain(peers.iter().map(|(n, p)| (n.clone(), p.ms)))
                    .filter(|(_, ms)| ms.is_finite() && *ms > 0.0)
                    .min_by(|a, b| a.1.total_cmp(&b.1));
                let vs = |ms: f64| best_cudnn.as_ref().map(|(_, b)| b / ms);
                let mut ours: Vec<&LadderRow> = rows
                    .iter()
                    .copied()
                    .filter(|r| !is_cudnn(&r.implementation))
                    .collect();
                // Rungs first, in order; then the rows without a rung (the copy variants).
                ours.sort_by_key(|r| r.rung.unwrap_or(u32::MAX));
                let mut lines: Vec<LadderLine> = ours
                    .into_iter()
                    .chain(rows.iter().copied().filter(|r| is_cudnn(&r.implementation)))
                    .map(|r| LadderLine {
                        implementation: r.implementation.clone(),
                        rung: r.rung,
                        dtypes: format!("{}/{}", r.input_dtype, r.output_dtype),
                        ms: r.ms_p50,
                        tflops: r.tflops,
                        vs_rung1: r.speedup_vs_rung1,
                        vs_cudnn: vs(r.ms_p50),
                        is_cudnn: is_cudnn(&r.implementation),
                        note: r.note.clone(),
                    })
                    .collect();
                let rung1 = rows.iter().find(|r| r.rung == Some(1)).map(|r| r.ms_p50);
                lines.extend(peers.iter().map(|(name, p)| {
                    let d = our_dtype(&p.dtype);
                    LadderLine {
                        implementation: name.clone(),
                        rung: None,
                        dtypes: format!("{d}/{d}"),
                        ms: p.ms,
                        tflops: None,
                        vs_rung1: rung1.map(|r1| r1 / p.ms),
                        vs_cudnn: vs(p.ms),
                        is_cudnn: true,
                        note: Some("PyTorch, cuDNN benchmark mode".into()),
                    }
                }));
                Some(LadderTable {
                    layer: *layer,
                    best_cudnn,
                    lines,
                })
            })
            .collect()
    }
}

// ---------------------------------------------------------------- inference

/// The inference file: per activation variant, our latencies and the check against the CPU;
/// PyTorch's latencies on the same weights.
#[derive(Debug, Clone, Deserialize)]
pub struct InferRun {
    /// The GPU, as the run named it.
    pub device: String,
    /// The data set of the test images.
    pub dataset: String,
    /// The variants (ReLU, GELU, Swish).
    #[serde(default)]
    pub variants: Vec<InferVariant>,
    /// PyTorch's rows.
    #[serde(default)]
    pub peers: Vec<InferRow>,
    /// Why the peer did not run, when it did not.
    #[serde(default)]
    pub peer_failure: Option<String>,
}

/// One activation variant of the lab CNN.
#[derive(Debug, Clone, Deserialize)]
pub struct InferVariant {
    /// `relu`, `gelu`, `swish`.
    pub activation: String,
    /// GPU FP16 logits against CPU FP32 logits of the same weights.
    pub check: InferCheck,
    /// PyTorch's accuracy with the same weights.
    #[serde(default)]
    pub peer_accuracy: Option<f64>,
    /// Our rows.
    #[serde(default)]
    pub rows: Vec<InferRow>,
}

/// The check of one variant over the whole test split.
#[derive(Debug, Clone, Deserialize)]
pub struct InferCheck {
    /// Images compared.
    pub images: usize,
    /// Largest |GPU logit − CPU logit|.
    pub max_abs_diff: f64,
    /// Share of images with the same predicted class.
    pub argmax_agreement: f64,
    /// Accuracy of the GPU FP16 forward.
    pub gpu_accuracy: f64,
    /// Accuracy of the CPU FP32 forward.
    pub cpu_accuracy: f64,
    /// Whether the check held.
    pub ok: bool,
}

/// One implementation at one batch size.
#[derive(Debug, Clone, Deserialize)]
pub struct InferRow {
    /// `showdown_fp16_graph`, `pytorch_compile_fp16`.
    pub implementation: String,
    /// Activation variant.
    pub activation: String,
    /// Images per pass.
    pub batch: usize,
    /// Median milliseconds per pass.
    pub p50_ms: f64,
}

/// One line of the inference table.
#[derive(Debug, Clone, PartialEq)]
pub struct InferLine {
    /// Activation variant.
    pub activation: String,
    /// Images per pass.
    pub batch: usize,
    /// Ours, one launch per kernel: p50 ms.
    pub launches_p50: Option<f64>,
    /// Ours, replayed as a CUDA graph: p50 ms.
    pub graph_p50: Option<f64>,
    /// The fastest PyTorch p50: name and ms.
    pub best_torch: Option<(String, f64)>,
    /// Fastest PyTorch over our fastest (above 1: ours is faster).
    pub ours_vs_best: Option<f64>,
}

impl InferRun {
    /// Parses the JSON of `showdown bench infer --json-out`.
    pub fn parse(json: &str) -> Result<Self, String> {
        serde_json::from_str(json).map_err(|e| format!("cannot read the inference benchmark: {e}"))
    }

    /// Every (variant, batch) of our rows, with the fastest PyTorch beside it.
    pub fn lines(&self) -> Vec<InferLine> {
        let mut out = Vec::new();
        for v in &self.variants {
            let mut batches: Vec<usize> = v.rows.iter().map(|r| r.batch).collect();
            batches.sort_unstable();
            batches.dedup();
            for b in batches {
                let ours = |which: &str| {
                    v.rows
                        .iter()
                        .find(|r| r.batch == b && r.implementation == which)
                        .map(|r| r.p50_ms)
                };
                let launches_p50 = ours("showdown_fp16_launches");
                let graph_p50 = ours("showdown_fp16_graph");
                let best_torch = self
                    .peers
                    .iter()
                    .filter(|p| p.activation == v.activation && p.batch == b)
                    .filter(|p| p.p50_ms.is_finite() && p.p50_ms > 0.0)
                    .min_by(|a, b| a.p50_ms.total_cmp(&b.p50_ms))
                    .map(|p| (p.implementation.clone(), p.p50_ms));
                let our_best = match (launches_p50, graph_p50) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                let ours_vs_best = match (&best_torch, our_best) {
                    (Some((_, t)), Some(o)) if o > 0.0 => Some(t / o),
                    _ => None,
                };
                out.push(InferLine {
                    activation: v.activation.clone(),
                    batch: b,
                    launches_p50,
                    graph_p50,
                    best_torch,
                    ours_vs_best,
                });
            }
        }
        out
    }
}

// ---------------------------------------------------------------- the page's section

fn ms(v: f64) -> String {
    format!("{v:.4}")
}

fn ratio(v: Option<f64>) -> String {
    v.map_or("–".to_string(), |r| format!("{r:.2}×"))
}

/// Draws `groups` as horizontal bars, three per kernel (ours, PyTorch eager, `torch.compile`),
/// with our copy ceiling as a vertical line.
fn draw_throughput(
    canvas: HtmlCanvasElement,
    groups: &[ThroughputGroup],
    ceiling: Option<f64>,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Debug| format!("cannot draw the chart: {e:?}");
    let width = canvas.width() as i32;
    let backend =
        CanvasBackend::with_canvas_object(canvas).ok_or("the canvas has no 2D context")?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let series = [
        ("ours", COLORS[0]),
        ("PyTorch eager", COLORS[4]),
        ("torch.compile (Triton)", COLORS[2]),
    ];
    root.draw(&Text::new(
        "Effective bandwidth, GB/s (8192 × 4096, one read + one write)".to_string(),
        (8, 6),
        ("sans-serif", 15),
    ))
    .map_err(|e| err(&e))?;
    let mut x = 8;
    for (name, color) in series {
        root.draw(&Rectangle::new([(x, 30), (x + 12, 42)], color.filled()))
            .map_err(|e| err(&e))?;
        root.draw(&Text::new(
            name.to_string(),
            (x + 16, 30),
            ("sans-serif", 12),
        ))
        .map_err(|e| err(&e))?;
        x += 30 + 7 * name.len() as i32;
    }
    let top = groups
        .iter()
        .flat_map(|g| [Some(g.ours), g.eager, g.compile])
        .flatten()
        .chain(ceiling)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let label_w = 130;
    let value_w = 60;
    let bar_w = (width - label_w - value_w - 16).max(40);
    let px = |v: f64| label_w + ((v.max(0.0) / top) * bar_w as f64).round() as i32;
    let bar_h = 9;
    let group_h = 3 * (bar_h + 1) + 8;
    let y0 = 54;
    for (i, g) in groups.iter().enumerate() {
        let y = y0 + i as i32 * group_h;
        root.draw(&Text::new(g.label.clone(), (8, y + 9), ("sans-serif", 12)))
            .map_err(|e| err(&e))?;
        for (j, (value, (_, color))) in [Some(g.ours), g.eager, g.compile]
            .into_iter()
            .zip(series)
            .enumerate()
        {
            let Some(v) = value else { continue };
            let by = y + j as i32 * (bar_h + 1);
            root.draw(&Rectangle::new(
                [(label_w, by), (px(v).max(label_w + 1), by + bar_h)],
                color.filled(),
            ))
            .map_err(|e| err(&e))?;
            root.draw(&Text::new(fmt(v), (px(v) + 4, by - 1), ("sans-serif", 10)))
                .map_err(|e| err(&e))?;
        }
    }
    if let Some(c) = ceiling {
        let bottom = y0 + groups.len() as i32 * group_h;
        root.draw(&PathElement::new(
            vec![(px(c), y0 - 4), (px(c), bottom)],
            BLACK.mix(0.5).stroke_width(1),
        ))
        .map_err(|e| err(&e))?;
        root.draw(&Text::new(
            format!("copy {}", fmt(c)),
            (px(c) - 40, bottom + 2),
            ("sans-serif", 11),
        ))
        .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))
}

fn run_line(device: &str, command: &'static str) -> impl IntoView {
    view! {
        <p class="measured-on">
            {format!("Measured on {device}, {RUN_DATE} (committed run: ")}
            <code>{command}</code>")"
        </p>
    }
}

fn kernels_section(k: KernelsBench) -> impl IntoView {
    let groups = k.throughput();
    let ceiling = k.copy_ceiling_gbps();
    let checks = k.check_summaries();
    let total: usize = checks.iter().map(|c| c.checks).sum();
    let passed: usize = checks.iter().map(|c| c.passed).sum();
    let canvas = NodeRef::<Canvas>::new();
    let chart_error = RwSignal::new(None::<String>);
    let height = 70 + groups.len() * (3 * 10 + 8);
    let chart_groups = groups.clone();
    Effect::new(move |_| {
        if let Some(c) = canvas.get() {
            chart_error.set(draw_throughput(c, &chart_groups, ceiling).err());
        }
    });
    let check_rows = checks
        .into_iter()
        .map(|c| {
            view! {
                <tr class:failed={c.passed < c.checks}>
                    <td><code>{c.op}</code></td><td>{c.dtype}</td>
                    <td class="num">{format!("{}/{}", c.passed, c.checks)}</td>
                    <td class="num">{format!("{:.2e}", c.max_abs)}</td>
                    <td class="num">{format!("{:.2e}", c.max_rel)}</td>
                    <td class="num">{format!("{:.0e}", c.bound)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h4>"Activation and normalisation kernels against PyTorch"</h4>
        {run_line(&k.ours.device, KERNELS_BENCH_COMMAND)}
        {k.peer_failure.map(|f| view! { <p class="error">{format!("PyTorch did not run: {f}")}</p> })}
        <canvas id="kernels-bench-chart" width="820" height=height.to_string()></canvas>
        {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
        <p>
            <strong>{format!("{passed} of {total} correctness checks passed")}</strong>
            " (fresh random inputs of five shapes each, against an f64 reference):"
        </p>
        <table class="results" id="kernel-checks">
            <thead><tr><th>"op"</th><th>"dtype"</th><th>"passed"</th><th>"max abs error"</th><th>"max rel error"</th><th>"bound"</th></tr></thead>
            <tbody>{check_rows}</tbody>
        </table>
    }
}

fn ladder_section(l: LadderRun) -> impl IntoView {
    let (n, passed, max_rel) = l.check_totals();
    let failed = l
        .failed_checks()
        .into_iter()
        .map(|f| view! { <li>{f}</li> })
        .collect_view();
    let tables = l
        .tables()
        .into_iter()
        .map(|t| {
            let best = t.best_cudnn.clone().map_or("no cuDNN row".to_string(), |(name, ms)| {
                format!("fastest cuDNN: {name}, {} ms", self::ms(ms))
            });
            let rows = t
                .lines
                .into_iter()
                .map(|line| {
                    let faster = line.vs_cudnn.is_some_and(|v| v > 1.0);
                    view! {
                        <tr class:cudnn=line.is_cudnn class:rung=line.rung.is_some() title=line.note.unwrap_or_default()>
                            <td class="num">{line.rung.map_or(String::new(), |r| r.to_string())}</td>
                            <td><code>{line.implementation}</code></td>
                            <td>{line.dtypes}</td>
                            <td class="num">{ms(line.ms)}</td>
                            <td class="num">{line.tflops.map_or(String::new(), |t| format!("{t:.1}"))}</td>
                            <td class="num">{ratio(line.vs_rung1)}</td>
                            <td class="num" class:faster=faster>{ratio(line.vs_cudnn)}</td>
                        </tr>
                    }
                })
                .collect_view();
            view! {
                <table class="results ladder" data-layer=t.layer.name>
                    <caption>{format!("{} · {best}", t.layer.title)}</caption>
                    <thead><tr><th>"rung"</th><th>"implementation"</th><th>"in/out"</th><th>"p50 ms"</th><th>"TFLOP/s"</th><th>"× rung 1"</th><th>"vs fastest cuDNN"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            }
        })
        .collect_view();
    view! {
        <h4>"The convolution ladder"</h4>
        {run_line(&l.ours.device, CONV_LADDER_COMMAND)}
        <p>
            {format!("Forward convolution, batch {}; {}. ", l.ours.batch, l.ours.input_source)}
            <strong>{format!("{passed} of {n} checks passed")}</strong>
            {format!(" (largest relative error {max_rel:.1e}). ")}
            "Rung 1 unrolls and calls a GEMM, rung 2 fuses it in FP32, rung 3 moves to tensor cores (mma.sync, FP16 in, FP32 out), "
            "rung 4 writes FP16, rung 5 overlaps the copy from pinned host memory on two streams. "
            "\"vs fastest cuDNN\" above 1 means faster than the fastest cuDNN configuration of the same layer (through cudarc or PyTorch)."
        </p>
        <ul class="error">{failed}</ul>
        {l.peer_failure.map(|f| view! { <p class="error">{format!("PyTorch did not run: {f}")}</p> })}
        <div id="conv-ladder">{tables}</div>
    }
}

fn infer_section(i: InferRun) -> impl IntoView {
    let checks = i
        .variants
        .iter()
        .map(|v| {
            let c = &v.check;
            let peer = v.peer_accuracy.map_or(String::new(), |a| format!(", PyTorch {a:.4}"));
            view! {
                <li class:failed=!c.ok>
                    <code>{v.activation.clone()}</code>
                    {format!(
                        ": accuracy GPU FP16 {:.4}, CPU FP32 {:.4}{peer}; argmax agreement {:.2} % of {} images; max |Δlogit| {:.2e} · {}",
                        c.gpu_accuracy, c.cpu_accuracy, c.argmax_agreement * 100.0, c.images, c.max_abs_diff,
                        if c.ok { "ok" } else { "FAILED" }
                    )}
                </li>
            }
        })
        .collect_view();
    let rows = i
        .lines()
        .into_iter()
        .map(|l| {
            let (which, best) = l
                .best_torch
                .map_or(("–".to_string(), "–".to_string()), |(w, m)| (w, ms(m)));
            view! {
                <tr>
                    <td>{l.activation}</td>
                    <td class="num">{l.batch}</td>
                    <td class="num">{l.launches_p50.map_or("–".into(), ms)}</td>
                    <td class="num">{l.graph_p50.map_or("–".into(), ms)}</td>
                    <td class="num">{best}</td>
                    <td><code>{which}</code></td>
                    <td class="num" class:faster=l.ours_vs_best.is_some_and(|v| v > 1.0)>{ratio(l.ours_vs_best)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h4>"Lab CNN inference against PyTorch on the same weights"</h4>
        {run_line(&i.device, INFER_COMMAND)}
        <p>{format!("{} test images, FP16 activations with FP32 accumulation; latency of one forward pass, median ms. ", i.dataset)}
           "GPU logits checked against the CPU's FP32 forward of the same weights:"</p>
        <ul class="infer-checks">{checks}</ul>
        {i.peer_failure.map(|f| view! { <p class="error">{format!("PyTorch did not run: {f}")}</p> })}
        <table class="results" id="infer-table">
            <thead><tr><th>"activation"</th><th>"batch"</th><th>"ours p50 ms"</th><th>"ours CUDA graph p50 ms"</th><th>"fastest PyTorch p50 ms"</th><th>"which"</th><th>"ours vs fastest"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

fn or_error<T, V: IntoView + 'static>(
    parsed: Result<T, String>,
    show: impl FnOnce(T) -> V,
) -> AnyView {
    match parsed {
        Ok(v) => show(v).into_any(),
        Err(e) => view! { <p class="error">{e}</p> }.into_any(),
    }
}

/// The committed H100 results: throughput chart and checks of the activation and norm kernels,
/// the convolution ladder tables and the inference latency table.
#[component]
pub fn MeasuredResults() -> impl IntoView {
    view! {
        <section id="measured-results" class="card">
            <h3>"Correctness and benchmarks, as committed"</h3>
            {or_error(KernelsBench::parse(KERNELS_BENCH_JSON), kernels_section)}
            {or_error(LadderRun::parse(CONV_LADDER_JSON), ladder_section)}
            {or_error(InferRun::parse(INFER_JSON), infer_section)}
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_kernel_benchmark_parses_and_pairs_with_pytorch() {
        let k = KernelsBench::parse(KERNELS_BENCH_JSON).expect("the committed run parses");
        assert!(k.ours.device.contains("H100"));
        let groups = k.throughput();
        assert_eq!(
            groups.len(),
            12,
            "6 ops x f32/f16, the copy ceiling left out"
        );
        assert!(
            groups
                .iter()
                .all(|g| g.eager.is_some() && g.compile.is_some()),
            "{groups:?}"
        );
        let ln_gelu = groups
            .iter()
            .find(|g| g.label == "layernorm_gelu f32")
            .expect("ln+gelu");
        assert!(
            (ln_gelu.eager.unwrap_or(0.0) - 1180.0).abs() < 1.0,
            "ln_gelu is paired: {ln_gelu:?}"
        );
        assert!(k.copy_ceiling_gbps().is_some_and(|c| c > 2000.0));
        let checks = k.check_summaries();
        assert_eq!(
            checks.iter().map(|c| c.checks).sum::<usize>(),
            k.ours.checks.len()
        );
        assert!(checks
            .iter()
            .all(|c| c.passed == c.checks && c.max_abs <= c.bound));
    }

    #[test]
    fn the_committed_ladder_parses_into_one_table_per_layer() {
        let l = LadderRun::parse(CONV_LADDER_JSON).expect("the committed run parses");
        let (n, passed, max_rel) = l.check_totals();
        assert!(l.failed_checks().is_empty());
        assert!(
            n > 0 && passed == n && max_rel < 1e-2,
            "{n} {passed} {max_rel}"
        );
        let tables = l.tables();
        assert_eq!(tables.len(), 4);
        for t in &tables {
            let rungs: Vec<u32> = t.lines.iter().filter_map(|l| l.rung).collect();
            assert_eq!(rungs, [1, 2, 3, 4, 5], "{}", t.layer.name);
            assert!(t
                .lines
                .iter()
                .all(|l| !l.implementation.starts_with("cpu_")));
            assert_eq!(
                t.lines
                    .iter()
                    .filter(|l| l.implementation.starts_with("pytorch_"))
                    .count(),
                4
            );
            let (_, best) = t.best_cudnn.clone().expect("a cuDNN time");
            assert!(t.lines.iter().filter(|l| l.is_cudnn).all(|l| l.ms >= best));
        }
        // lab conv2's fastest cuDNN is PyTorch's FP16 channels-last (0.136 ms): rung 4 is slower.
        let conv2 = &tables[1];
        assert_eq!(
            conv2.best_cudnn.as_ref().map(|b| b.0.as_str()),
            Some("pytorch_cudnn_f16_channels_last")
        );
        let rung4 = conv2
            .lines
            .iter()
            .find(|l| l.rung == Some(4))
            .expect("rung 4");
        assert!(rung4.vs_cudnn.is_some_and(|v| v < 1.0));
    }

    #[test]
    fn the_committed_inference_run_parses_with_the_fastest_pytorch_beside_ours() {
        let i = InferRun::parse(INFER_JSON).expect("the committed run parses");
        assert_eq!(i.variants.len(), 3);
        assert!(i.variants.iter().all(|v| v.check.ok));
        let lines = i.lines();
        assert_eq!(lines.len(), 15, "3 activations x 5 batches");
        let relu1 = &lines[0];
        assert_eq!((relu1.activation.as_str(), relu1.batch), ("relu", 1));
        let (which, ms) = relu1.best_torch.clone().expect("a PyTorch row");
        assert_eq!(which, "pytorch_graph_fp16");
        assert!((ms - 0.0382).abs() < 1e-3);
        assert!(relu1.ours_vs_best.is_some_and(|v| (v - 1.07).abs() < 0.01));
    }

    #[test]
    fn a_file_that_does_not_parse_is_an_error_not_a_panic() {
        assert!(KernelsBench::parse("{").is_err());
        let e = LadderRun::parse(r#"{"ours": {}}"#).expect_err("missing fields");
        assert!(e.contains("convolution ladder"), "{e}");
        assert!(InferRun::parse("[]").is_err());
    }
}
