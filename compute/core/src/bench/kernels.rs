//! `showdown bench kernels`: the activation and norm kernels checked against f64 on awkward
//! shapes, then timed (CUDA events, p50/p90/p99, GB/s against the copy ceiling measured in the
//! same run), with PyTorch eager and `torch.compile` (`anchor_kernels.py`) beside each row.
//! The kernels themselves run in the engine (`compute::cuda::lab`).

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::{json_lines, or_dash, our_dtype, parse_json, ParseError};

/// An operation of the kernel lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// max(x, 0).
    Relu,
    /// x·Φ(x), erf form.
    GeluErf,
    /// GELU, tanh approximation.
    GeluTanh,
    /// x·σ(x) (SiLU).
    Swish,
    /// Row-wise LayerNorm with affine γ, β (ε = 1e-5).
    Layernorm,
    /// LayerNorm followed by GELU (erf), fused.
    LayernormGelu,
}

impl Op {
    /// Every op, in table order.
    pub const ALL: [Op; 6] = [
        Op::Relu,
        Op::GeluErf,
        Op::GeluTanh,
        Op::Swish,
        Op::Layernorm,
        Op::LayernormGelu,
    ];
    /// The kernel name stem (`layernorm_gelu`), also the op of a [`BenchRow`].
    pub fn name(self) -> &'static str {
        match self {
            Op::Relu => "relu",
            Op::GeluErf => "gelu_erf",
            Op::GeluTanh => "gelu_tanh",
            Op::Swish => "swish",
            Op::Layernorm => "layernorm",
            Op::LayernormGelu => "layernorm_gelu",
        }
    }
    /// Whether the op normalises rows (LayerNorm, alone or fused).
    pub fn is_norm(self) -> bool {
        matches!(self, Op::Layernorm | Op::LayernormGelu)
    }
}

/// Storage dtype of the lab's tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LabDtype {
    /// f32.
    F32,
    /// IEEE half.
    F16,
}

impl LabDtype {
    /// The kernel name suffix (`f32`, `f16`), also the dtype of a [`BenchRow`].
    pub fn suffix(self) -> &'static str {
        match self {
            LabDtype::F32 => "f32",
            LabDtype::F16 => "f16",
        }
    }
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            LabDtype::F32 => 4,
            LabDtype::F16 => 2,
        }
    }
}

/// One correctness check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRow {
    /// The op.
    pub op: Op,
    /// The dtype.
    pub dtype: LabDtype,
    /// Rows × cols.
    pub shape: [usize; 2],
    /// max |ours − reference|.
    pub max_abs: f64,
    /// max |ours − reference| / max(|reference|, 1).
    pub max_rel: f64,
    /// The bound for this dtype.
    pub bound: f64,
    /// Whether max_rel ≤ bound.
    pub ok: bool,
}

/// The op of the copy ceiling's [`BenchRow`].
pub const COPY_OP: &str = "copy";

/// One timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    /// The op ([`Op::name`], or [`COPY_OP`] for the ceiling).
    pub op: String,
    /// The dtype ([`LabDtype::suffix`]).
    pub dtype: String,
    /// Rows × cols.
    pub shape: [usize; 2],
    /// Median, ms.
    pub ms_p50: f64,
    /// 90th percentile, ms.
    pub ms_p90: f64,
    /// 99th percentile, ms.
    pub ms_p99: f64,
    /// Bytes moved (one read of the input and one write of the output) per ms, in GB/s.
    pub gbps: f64,
    /// gbps as a fraction of the copy ceiling measured in the same run.
    pub of_copy: f64,
}

/// Nominal FLOPs per element of the activation and norm ops, for placing them on a roofline
/// (they are memory-bound whatever the exact count): ReLU 1 (max), Swish 4, GELU 8, LayerNorm 8
/// (two reductions, normalise, affine), LayerNorm+GELU 16. None for other ops (the copy).
pub fn nominal_flops_per_element(op: &str) -> Option<f64> {
    Some(match op {
        "relu" => 1.0,
        "swish" => 4.0,
        "gelu_erf" | "gelu_tanh" => 8.0,
        "layernorm" => 8.0,
        "layernorm_gelu" => 16.0,
        _ => return None,
    })
}

impl BenchRow {
    /// Where the row sits on a roofline: (FLOP per compulsory byte, TFLOP/s), from
    /// [`nominal_flops_per_element`]; None for the copy or a non-positive time.
    pub fn roofline_point(&self) -> Option<(f64, f64)> {
        let fl = nominal_flops_per_element(&self.op)?;
        if !(self.ms_p50.is_finite() && self.ms_p50 > 0.0) {
            return None;
        }
        let elems = (self.shape[0] * self.shape[1]) as f64;
        let bytes = 2.0 * elems * if self.dtype == "f16" { 2.0 } else { 4.0 };
        Some((fl * elems / bytes, fl * elems / (self.ms_p50 * 1e-3) / 1e12))
    }
}

/// PyTorch eager, as `anchor_kernels.py` names it.
pub const TORCH_EAGER: &str = "torch-eager";
/// `torch.compile` (Triton), as `anchor_kernels.py` names it.
pub const TORCH_COMPILE: &str = "torch-compile-triton";

/// One elementwise/norm row of `anchor_kernels.py`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerOp {
    /// [`TORCH_EAGER`] or [`TORCH_COMPILE`].
    #[serde(rename = "impl")]
    pub implementation: String,
    /// `relu`, `gelu_erf`, `gelu_tanh`, `swish`, `layernorm`, `ln_gelu`.
    pub op: String,
    /// `float32` or `float16`.
    pub dtype: String,
    /// Rows × cols.
    pub shape: [usize; 2],
    /// Median ms.
    pub ms: f64,
    /// (read + write) / ms.
    pub gbps: f64,
}

/// Our op name for the peer's (`ln_gelu` is our `layernorm_gelu`).
pub fn our_op(torch_op: &str) -> &str {
    match torch_op {
        "ln_gelu" => "layernorm_gelu",
        other => other,
    }
}

impl PeerOp {
    /// Whether this row measured the same op, dtype and shape as our `row`.
    pub fn pairs_with(&self, row: &BenchRow) -> bool {
        our_op(&self.op) == row.op && our_dtype(&self.dtype) == row.dtype && self.shape == row.shape
    }
}

/// The op rows of an `anchor_kernels.py` output (other kinds, non-positive times and broken
/// lines are skipped).
pub fn parse_peer_ops(stdout: &str) -> Vec<PeerOp> {
    json_lines(stdout)
        .filter(|l| l.contains("\"op\""))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some("op"))
        .filter_map(|v| serde_json::from_value::<PeerOp>(v).ok())
        .filter(|r| r.ms.is_finite() && r.ms > 0.0)
        .collect()
}

/// Ours: the device, the checks and the timings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelsOurs {
    /// The GPU.
    pub device: String,
    /// Correctness checks.
    #[serde(default)]
    pub checks: Vec<CheckRow>,
    /// Timings (the [`COPY_OP`] row is the ceiling).
    #[serde(default)]
    pub bench: Vec<BenchRow>,
}

/// What `showdown bench kernels --json`/`--json-out` hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelsBench {
    /// Ours.
    pub ours: KernelsOurs,
    /// PyTorch rows of the same call.
    #[serde(default)]
    pub peers: Vec<PeerOp>,
    /// Why the peers are missing, if they are.
    #[serde(default)]
    pub peer_failure: Option<String>,
}

/// One timed kernel (op and dtype) beside PyTorch's.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputGroup {
    /// `relu f32`.
    pub label: String,
    /// Our row.
    pub ours: BenchRow,
    /// PyTorch eager, GB/s.
    pub eager: Option<f64>,
    /// `torch.compile` (Triton), GB/s.
    pub compile: Option<f64>,
}

/// Correctness of one op and dtype over all its shapes.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckSummary {
    /// Operation.
    pub op: Op,
    /// Dtype.
    pub dtype: LabDtype,
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

/// A kernel file's timings, however it holds them: [`KernelsBench`] (ours under `ours`; the
/// peers, in any format, ignored), or our side alone at the top level.
#[derive(Deserialize)]
#[serde(untagged)]
enum TimingsFile {
    Nested { ours: KernelsOurs },
    Bare(KernelsOurs),
}

/// The timings of a `showdown bench kernels --json` file, also of an earlier one whose peers
/// are in another format (`docs/results/kernels-h100-2026-11-23.json`) or one holding our side
/// alone; what `showdown bench plot --kernels` draws.
pub fn parse_kernel_timings(json: &str) -> Result<Vec<BenchRow>, ParseError> {
    let f: TimingsFile = parse_json(json, "kernel benchmark")?;
    Ok(match f {
        TimingsFile::Nested { ours } | TimingsFile::Bare(ours) => ours.bench,
    })
}

impl KernelsBench {
    /// Parses the JSON of `showdown bench kernels --json-out`.
    pub fn parse(json: &str) -> Result<Self, ParseError> {
        parse_json(json, "kernel benchmark")
    }

    /// The peer `implementation`'s GB/s on our `row`'s op, dtype and shape.
    pub fn peer_gbps(&self, implementation: &str, row: &BenchRow) -> Option<f64> {
        self.peers
            .iter()
            .find(|p| p.implementation == implementation && p.pairs_with(row))
            .map(|p| p.gbps)
    }

    /// Our first device-to-device copy row (FP32's ceiling where it was timed).
    pub fn copy_row(&self) -> Option<&BenchRow> {
        self.ours.bench.iter().find(|t| t.op == COPY_OP)
    }

    /// Our device-to-device copy in the same run, GB/s (the first copy row's).
    pub fn copy_ceiling_gbps(&self) -> Option<f64> {
        self.copy_row().map(|t| t.gbps)
    }

    /// Every copy row: one per dtype in runs that time each dtype's ceiling on its own bytes,
    /// a single FP32 row in older runs.
    pub fn copy_rows(&self) -> impl Iterator<Item = &BenchRow> {
        self.ours.bench.iter().filter(|t| t.op == COPY_OP)
    }

    /// Ours against PyTorch for every timed kernel (not the copy ceiling), in the run's order.
    pub fn throughput(&self) -> Vec<ThroughputGroup> {
        self.ours
            .bench
            .iter()
            .filter(|t| t.op != COPY_OP)
            .map(|t| ThroughputGroup {
                label: format!("{} {}", t.op, t.dtype),
                ours: t.clone(),
                eager: self.peer_gbps(TORCH_EAGER, t),
                compile: self.peer_gbps(TORCH_COMPILE, t),
            })
            .collect()
    }

    /// The checks grouped by op and dtype, in the run's order.
    pub fn check_summaries(&self) -> Vec<CheckSummary> {
        let mut out: Vec<CheckSummary> = Vec::new();
        for c in &self.ours.checks {
            let i = match out.iter().position(|s| s.op == c.op && s.dtype == c.dtype) {
                Some(i) => i,
                None => {
                    out.push(CheckSummary {
                        op: c.op,
                        dtype: c.dtype,
                        checks: 0,
                        passed: 0,
                        max_abs: 0.0,
                        max_rel: 0.0,
                        bound: 0.0,
                    });
                    out.len() - 1
                }
            };
            let s = &mut out[i];
            s.checks += 1;
            s.passed += usize::from(c.ok);
            s.max_abs = s.max_abs.max(c.max_abs);
            s.max_rel = s.max_rel.max(c.max_rel);
            s.bound = s.bound.max(c.bound);
        }
        out
    }

    /// (checks within their bounds, checks).
    pub fn checks_passed(&self) -> (usize, usize) {
        let c = &self.ours.checks;
        (c.iter().filter(|c| c.ok).count(), c.len())
    }

    /// The terminal table `showdown bench kernels` prints: every check, then each timed row
    /// with the peers beside it.
    pub fn table(&self) -> String {
        let mut o = String::new();
        let r = &self.ours;
        let _ = writeln!(
            o,
            "{}: correctness against f64 (fresh random inputs)",
            r.device
        );
        for c in &r.checks {
            let _ = writeln!(
                o,
                "  {:<15} {:<4} {:>5}×{:<5} max abs {:.2e}  max rel {:.2e}  bound {:.0e}  {}",
                format!("{:?}", c.op),
                format!("{:?}", c.dtype),
                c.shape[0],
                c.shape[1],
                c.max_abs,
                c.max_rel,
                c.bound,
                if c.ok { "ok" } else { "FAIL" }
            );
        }
        let (passed, total) = self.checks_passed();
        let _ = writeln!(o, "correctness: {passed}/{total} checks within bounds");
        let copy = self.copy_row();
        let shape = copy.map_or([0, 0], |c| c.shape);
        let ceilings: Vec<String> = self
            .copy_rows()
            .map(|c| format!("{} {:.0} GB/s", c.dtype, c.gbps))
            .collect();
        let _ = writeln!(
            o,
            "\ntimings, {}×{}, GB/s = (read + write) / median; copy ceiling of the same bytes (same run) {}{}",
            shape[0],
            shape[1],
            if ceilings.is_empty() {
                "–".to_string()
            } else {
                ceilings.join(", ")
            },
            if self.peers.is_empty() {
                ""
            } else {
                "; PyTorch from anchor_kernels.py in the same call"
            }
        );
        let _ = writeln!(
            o,
            "  {:<15} {:<4} {:>9} {:>9} {:>7} {:>7} | {:>6} {:>7} | {:>8} {:>10}",
            "op",
            "type",
            "p50 ms",
            "p99 ms",
            "GB/s",
            "of copy",
            "eager",
            "compile",
            "vs eager",
            "vs compile"
        );
        let ratio = |ours: f64, v: Option<f64>| {
            v.map_or_else(|| "–".to_string(), |g| format!("{:.2}x", ours / g))
        };
        for g in self.throughput() {
            let x = &g.ours;
            let _ = writeln!(
                o,
                "  {:<15} {:<4} {:>9.4} {:>9.4} {:>7.0} {:>6.1}% | {:>6} {:>7} | {:>8} {:>10}",
                x.op,
                x.dtype,
                x.ms_p50,
                x.ms_p99,
                x.gbps,
                x.of_copy * 100.0,
                or_dash(g.eager, 0),
                or_dash(g.compile, 0),
                ratio(x.gbps, g.eager),
                ratio(x.gbps, g.compile)
            );
        }
        if let Some(f) = &self.peer_failure {
            let _ = writeln!(o, "peer failed: {f}");
        }
        o
    }
}
