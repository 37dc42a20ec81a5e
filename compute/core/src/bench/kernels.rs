//! `showdown bench kernels`: the activation and norm kernels checked against f64 on awkward
//! shapes, then timed (CUDA events, p50/p90/p99, GB/s against the copy ceiling measured in the
//! same run), with PyTorch eager, `torch.compile` (`anchor_kernels.py`) and our hand-written
//! Triton kernels (`triton_kernels.py`, checked against f64 before they are timed) beside each
//! row, and ours' speed-up over each. The kernels themselves run in the engine
//! (`compute::cuda::lab`).

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
/// Our hand-written Triton kernels (`triton_kernels.py`), as `anchor_kernels.py` names them.
pub const TRITON: &str = "triton";
/// The `check` of a [`TRITON`] row whose kernel missed its bound against f64 (or did not run).
pub const CHECK_FAILED: &str = "failed";

/// One elementwise/norm row of `anchor_kernels.py`.
///
/// A [`TRITON`] row also carries its check against f64 (`check`, `max_abs`, `max_rel`, `bound`,
/// `worst_shape`); one whose check failed has no time (`ms` and `gbps` absent, read as 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerOp {
    /// [`TORCH_EAGER`], [`TORCH_COMPILE`] or [`TRITON`].
    #[serde(rename = "impl")]
    pub implementation: String,
    /// `relu`, `gelu_erf`, `gelu_tanh`, `swish`, `layernorm`, `ln_gelu`.
    pub op: String,
    /// `float32` or `float16`.
    pub dtype: String,
    /// Rows × cols.
    pub shape: [usize; 2],
    /// Median ms (0 when the row was not timed: a failed check).
    #[serde(default)]
    pub ms: f64,
    /// (read + write) / ms.
    #[serde(default)]
    pub gbps: f64,
    /// The check against f64 before timing (`ok` or [`CHECK_FAILED`]); None for the PyTorch
    /// rows, which are not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// Largest |kernel − f64 reference| over the checked shapes (None: not finite, or the
    /// kernel did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_abs: Option<f64>,
    /// Largest |kernel − reference| / max(|reference|, 1): our kernels' rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rel: Option<f64>,
    /// The bound on `max_rel` (2e-5 for f32, 2e-3 for f16, as ours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
    /// The checked shape with the largest error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_shape: Option<[usize; 2]>,
    /// Why the kernel did not run, when it did not (a compile or launch error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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

    /// Whether the row's kernel failed its check against f64 (and so was not timed).
    pub fn check_failed(&self) -> bool {
        self.check.as_deref() == Some(CHECK_FAILED)
    }

    /// Whether the row holds a time: positive and finite, its check (if any) passed.
    pub fn is_timed(&self) -> bool {
        !self.check_failed() && self.ms.is_finite() && self.ms > 0.0
    }
}

/// The op rows of an `anchor_kernels.py` output: the timed ones and the Triton rows whose
/// check failed (other kinds, other non-positive times and broken lines are skipped).
pub fn parse_peer_ops(stdout: &str) -> Vec<PeerOp> {
    json_lines(stdout)
        .filter(|l| l.contains("\"op\""))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some("op"))
        .filter_map(|v| serde_json::from_value::<PeerOp>(v).ok())
        .filter(|r| r.is_timed() || r.check_failed())
        .collect()
}

/// Why an `anchor_kernels.py` output has no Triton column (its `{"kind": "note", "impl":
/// "triton", "note": ...}` line: Triton or `triton_kernels.py` could not be imported), if it
/// says so.
pub fn parse_triton_note(stdout: &str) -> Option<String> {
    json_lines(stdout)
        .filter(|l| l.contains("\"note\""))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some("note"))
        .filter(|v| v.get("impl").and_then(|k| k.as_str()) == Some(TRITON))
        .find_map(|v| v.get("note").and_then(|n| n.as_str()).map(str::to_string))
}

/// The Triton cell of a timed kernel's row.
#[derive(Debug, Clone, PartialEq)]
pub enum TritonCell {
    /// No Triton row for this op, dtype and shape.
    Absent,
    /// Checked against f64, then timed: GB/s.
    Timed(f64),
    /// Its check against f64 failed, so it was not timed: the largest relative error (None:
    /// not finite, or the kernel did not run), the bound, and why it did not run if it did not.
    CheckFailed {
        /// Largest relative error over the checked shapes.
        max_rel: Option<f64>,
        /// The bound it missed.
        bound: Option<f64>,
        /// A compile or launch error.
        error: Option<String>,
    },
}

impl TritonCell {
    /// The GB/s, when timed.
    pub fn gbps(&self) -> Option<f64> {
        match self {
            TritonCell::Timed(g) => Some(*g),
            _ => None,
        }
    }

    /// The cell as a table shows it: the GB/s with `digits` decimals, `check failed`, or `–`.
    pub fn text(&self, digits: usize) -> String {
        match self {
            TritonCell::Absent => "–".to_string(),
            TritonCell::Timed(g) => format!("{g:.digits$}"),
            TritonCell::CheckFailed { .. } => "check failed".to_string(),
        }
    }

    /// A failed check in words (`max rel 3.10e-2 > bound 2e-5`, or the error), else None.
    pub fn failure(&self) -> Option<String> {
        let TritonCell::CheckFailed {
            max_rel,
            bound,
            error,
        } = self
        else {
            return None;
        };
        let bound = bound.map_or_else(|| "–".to_string(), |b| format!("{b:.0e}"));
        Some(match (error, max_rel) {
            (Some(e), _) => format!("did not run: {e}"),
            (None, Some(r)) => format!("max rel {r:.2e} > bound {bound}"),
            (None, None) => format!("non-finite output (bound {bound})"),
        })
    }
}

/// `ours ÷ peer` from GB/s of the same bytes: how many times faster ours is (None without a
/// positive, finite peer value).
pub fn speedup(ours_gbps: f64, peer_gbps: Option<f64>) -> Option<f64> {
    let p = peer_gbps?;
    let r = ours_gbps / p;
    (p > 0.0 && r.is_finite() && r > 0.0).then_some(r)
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
    /// Why the peer's Triton column is missing although the peer ran (Triton or
    /// `triton_kernels.py` could not be imported); absent in runs before the column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triton_failure: Option<String>,
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
    /// Our hand-written Triton kernel: GB/s, a failed check, or absent.
    pub triton: TritonCell,
    /// The copy ceiling of the same dtype's bytes in the same run (the first copy row where
    /// that dtype has none), GB/s.
    pub copy_gbps: Option<f64>,
}

impl ThroughputGroup {
    /// Ours ÷ PyTorch eager (how many times faster ours is).
    pub fn vs_eager(&self) -> Option<f64> {
        speedup(self.ours.gbps, self.eager)
    }

    /// Ours ÷ `torch.compile`.
    pub fn vs_compile(&self) -> Option<f64> {
        speedup(self.ours.gbps, self.compile)
    }

    /// Ours ÷ hand-written Triton (None when its check failed or it is absent).
    pub fn vs_triton(&self) -> Option<f64> {
        speedup(self.ours.gbps, self.triton.gbps())
    }

    /// Triton's GB/s as a fraction of the copy ceiling of the same bytes.
    pub fn triton_of_copy(&self) -> Option<f64> {
        let c = self.copy_gbps.filter(|c| c.is_finite() && *c > 0.0)?;
        self.triton.gbps().map(|g| g / c)
    }

    /// The speed-up chart's bars for this kernel: (peer, ours ÷ peer) for eager,
    /// `torch.compile` and Triton, each where there is one.
    pub fn speedups(&self) -> [(&'static str, Option<f64>); 3] {
        [
            ("eager", self.vs_eager()),
            ("torch.compile", self.vs_compile()),
            ("Triton", self.vs_triton()),
        ]
    }
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

    /// The peer `implementation`'s GB/s on our `row`'s op, dtype and shape (a row whose check
    /// failed has none).
    pub fn peer_gbps(&self, implementation: &str, row: &BenchRow) -> Option<f64> {
        self.peers
            .iter()
            .find(|p| p.implementation == implementation && p.pairs_with(row) && p.is_timed())
            .map(|p| p.gbps)
    }

    /// The Triton cell of our `row`: timed, failed its check, or absent.
    pub fn triton_cell(&self, row: &BenchRow) -> TritonCell {
        let mine = || {
            self.peers
                .iter()
                .filter(move |p| p.implementation == TRITON && p.pairs_with(row))
        };
        if let Some(p) = mine().find(|p| p.is_timed()) {
            return TritonCell::Timed(p.gbps);
        }
        match mine().find(|p| p.check_failed()) {
            Some(p) => TritonCell::CheckFailed {
                max_rel: p.max_rel,
                bound: p.bound,
                error: p.error.clone(),
            },
            None => TritonCell::Absent,
        }
    }

    /// Whether the run has a Triton column: a Triton row, or the peer's note on its absence.
    pub fn has_triton(&self) -> bool {
        self.triton_failure.is_some() || self.peers.iter().any(|p| p.implementation == TRITON)
    }

    /// The copy ceiling of `dtype`'s bytes (`f32`, `f16`) in the same run, else the first copy
    /// row's, GB/s.
    pub fn copy_gbps_for(&self, dtype: &str) -> Option<f64> {
        self.copy_rows()
            .find(|c| c.dtype == dtype)
            .or_else(|| self.copy_row())
            .map(|c| c.gbps)
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
                triton: self.triton_cell(t),
                copy_gbps: self.copy_gbps_for(&t.dtype),
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
        let triton = self.has_triton();
        if triton {
            let _ = writeln!(
                o,
                "Triton: our kernels hand-written in Triton (triton_kernels.py), each checked against f64 before it is timed; of copy against the same ceiling as ours"
            );
        }
        let _ = write!(
            o,
            "  {:<15} {:<4} {:>9} {:>9} {:>7} {:>7} | {:>6} {:>7}",
            "op", "type", "p50 ms", "p99 ms", "GB/s", "of copy", "eager", "compile",
        );
        if triton {
            let _ = write!(o, " {:>12} {:>7}", "triton", "of copy");
        }
        let _ = write!(o, " | {:>8} {:>10}", "vs eager", "vs compile");
        if triton {
            let _ = write!(o, " {:>9}", "vs triton");
        }
        let _ = writeln!(o);
        let ratio = |ours: f64, v: Option<f64>| {
            v.map_or_else(|| "–".to_string(), |g| format!("{:.2}x", ours / g))
        };
        let mut failed = Vec::new();
        for g in self.throughput() {
            let x = &g.ours;
            let _ = write!(
                o,
                "  {:<15} {:<4} {:>9.4} {:>9.4} {:>7.0} {:>6.1}% | {:>6} {:>7}",
                x.op,
                x.dtype,
                x.ms_p50,
                x.ms_p99,
                x.gbps,
                x.of_copy * 100.0,
                or_dash(g.eager, 0),
                or_dash(g.compile, 0),
            );
            if triton {
                let _ = write!(
                    o,
                    " {:>12} {:>7}",
                    g.triton.text(0),
                    g.triton_of_copy()
                        .map_or_else(|| "–".to_string(), |f| format!("{:.1}%", f * 100.0)),
                );
            }
            let _ = write!(
                o,
                " | {:>8} {:>10}",
                ratio(x.gbps, g.eager),
                ratio(x.gbps, g.compile)
            );
            if triton {
                let _ = write!(o, " {:>9}", ratio(x.gbps, g.triton.gbps()));
            }
            let _ = writeln!(o);
            if let Some(f) = g.triton.failure() {
                failed.push(format!("{}: {f}", g.label));
            }
        }
        for f in failed {
            let _ = writeln!(o, "triton check failed, not timed: {f}");
        }
        if let Some(f) = &self.triton_failure {
            let _ = writeln!(o, "triton absent: {f}");
        }
        if let Some(f) = &self.peer_failure {
            let _ = writeln!(o, "peer failed: {f}");
        }
        o
    }
}

#[cfg(test)]
mod triton_tests {
    //! Issue 29: the hand-written Triton kernels (`bench/triton_kernels.py`) as a peer of ours.

    use super::*;

    /// A sample of `anchor_kernels.py` lines with Triton rows, two of them failed checks.
    const SAMPLE: &str =
        include_str!("../../../../bench/testdata/anchor_kernels_triton_sample.jsonl");
    /// The committed H100 run (ours; its peers predate the Triton column).
    const KERNELS_JSON: &str =
        include_str!("../../../../docs/results/kernels-bench-h100-2026-11-24-issue17.json");

    /// The committed run's kernels with the sample's peers beside them.
    fn with_sample() -> KernelsBench {
        let mut k = KernelsBench::parse(KERNELS_JSON).expect("the committed run parses");
        k.peers = parse_peer_ops(SAMPLE);
        k
    }

    fn group<'a>(groups: &'a [ThroughputGroup], label: &str) -> &'a ThroughputGroup {
        groups
            .iter()
            .find(|g| g.label == label)
            .unwrap_or_else(|| panic!("no {label}"))
    }

    #[test]
    fn issue_29_triton_lines_are_read_with_their_checks() {
        let p = parse_peer_ops(SAMPLE);
        assert_eq!(p.len(), 12, "10 timed rows and 2 failed checks: {p:?}");
        let triton: Vec<&PeerOp> = p.iter().filter(|r| r.implementation == TRITON).collect();
        assert_eq!(triton.len(), 4);
        let relu = triton[0];
        assert_eq!((relu.op.as_str(), relu.dtype.as_str()), ("relu", "float32"));
        assert!(relu.is_timed() && !relu.check_failed());
        assert_eq!(relu.check.as_deref(), Some("ok"));
        assert_eq!((relu.bound, relu.worst_shape), (Some(2e-5), Some([1, 1])));
        let failed = triton[2];
        assert_eq!(failed.op, "gelu_erf");
        assert!(failed.check_failed() && !failed.is_timed());
        assert_eq!(
            (failed.ms, failed.gbps),
            (0.0, 0.0),
            "a failed check has no time"
        );
        assert_eq!(failed.max_rel, Some(0.015625));
        assert_eq!(failed.worst_shape, Some([7, 4097]));
        let broken = triton[3];
        assert_eq!((broken.max_abs, broken.max_rel), (None, None));
        assert!(broken
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("CompilationError")));
        assert!(p
            .iter()
            .filter(|r| r.implementation != TRITON)
            .all(|r| r.check.is_none() && r.is_timed()));
        assert_eq!(parse_triton_note(SAMPLE), None);
    }

    #[test]
    fn issue_29_each_kernel_gets_its_triton_cell_of_copy_and_ratios() {
        let k = with_sample();
        let groups = k.throughput();
        let relu = group(&groups, "relu f32");
        assert_eq!(relu.triton, TritonCell::Timed(3826.9198351920095));
        let ours = relu.ours.gbps;
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
        assert!(close(relu.vs_triton(), ours / 3826.9198351920095));
        assert!(close(relu.vs_eager(), ours / 3921.7428901983053));
        assert!(close(relu.vs_compile(), ours / 3930.931673801857));
        let copy_f32 = k.copy_gbps_for("f32").expect("an f32 copy row");
        let copy_f16 = k.copy_gbps_for("f16").expect("an f16 copy row");
        assert_ne!(copy_f32, copy_f16, "each dtype has its own ceiling");
        assert!(close(relu.triton_of_copy(), 3826.9198351920095 / copy_f32));
        let ln = group(&groups, "layernorm_gelu f16");
        assert!(close(ln.triton_of_copy(), 2086.7184720056453 / copy_f16));
        assert_eq!(
            ln.speedups().map(|(name, _)| name),
            ["eager", "torch.compile", "Triton"]
        );
        assert!(ln.speedups().iter().all(|(_, v)| v.is_some()));
        // A failed check: no time, no ratio, shown as such; eager and compile still paired.
        let gelu = group(&groups, "gelu_erf f16");
        assert_eq!(
            gelu.triton,
            TritonCell::CheckFailed {
                max_rel: Some(0.015625),
                bound: Some(0.002),
                error: None
            }
        );
        assert_eq!((gelu.vs_triton(), gelu.triton_of_copy()), (None, None));
        assert!(gelu.vs_eager().is_some() && gelu.vs_compile().is_some());
        assert_eq!(gelu.triton.text(0), "check failed");
        assert_eq!(
            gelu.triton.failure().as_deref(),
            Some("max rel 1.56e-2 > bound 2e-3")
        );
        assert_eq!(
            k.peer_gbps(TRITON, &gelu.ours),
            None,
            "a failed check is never a time"
        );
        let swish = group(&groups, "swish f16");
        assert!(swish
            .triton
            .failure()
            .is_some_and(|f| f.starts_with("did not run: CompilationError")));
        // No Triton row at all.
        let tanh = group(&groups, "gelu_tanh f32");
        assert_eq!(
            (&tanh.triton, tanh.triton.text(0)),
            (&TritonCell::Absent, "–".into())
        );
        assert_eq!(tanh.speedups()[2].1, None);
    }

    #[test]
    fn issue_29_the_table_has_a_triton_column_and_a_failed_check_reads_check_failed() {
        let t = with_sample().table();
        let header = t
            .lines()
            .find(|l| l.trim_start().starts_with("op "))
            .expect("a header");
        assert!(
            header.contains("triton") && header.contains("vs triton"),
            "{t}"
        );
        let line = |label: &str| {
            let mut w = label.split(' ');
            let (op, dtype) = (w.next().unwrap_or(""), w.next().unwrap_or(""));
            t.lines()
                .find(|l| {
                    let mut x = l.split_whitespace();
                    x.next() == Some(op) && x.next() == Some(dtype)
                })
                .unwrap_or_else(|| panic!("no {label} in {t}"))
                .to_string()
        };
        let relu = line("relu f32");
        assert!(relu.contains(" 3827 "), "{relu}");
        let k = with_sample();
        let ours = k
            .ours
            .bench
            .iter()
            .find(|r| r.op == "relu" && r.dtype == "f32");
        let ratio = format!("{:.2}x", ours.map_or(0.0, |r| r.gbps) / 3826.9198351920095);
        assert!(relu.trim_end().ends_with(&ratio), "{relu} / {ratio}");
        let gelu = line("gelu_erf f16");
        assert!(gelu.contains("check failed"), "{gelu}");
        assert!(
            gelu.trim_end().ends_with('–'),
            "no ratio for a failed check: {gelu}"
        );
        assert!(
            t.contains(
                "triton check failed, not timed: gelu_erf f16: max rel 1.56e-2 > bound 2e-3"
            ),
            "{t}"
        );
        assert!(
            t.contains("swish f16: did not run: CompilationError"),
            "{t}"
        );
        // The rows stay in the run's order and keep op and dtype first (as the page's labels).
        let rows: Vec<&str> = t
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("op "))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .collect();
        assert_eq!(rows.len(), 12);
        // A run without Triton rows keeps the table it always printed.
        assert!(!KernelsBench::parse(KERNELS_JSON)
            .expect("parses")
            .table()
            .contains("triton"));
    }

    #[test]
    fn issue_29_a_missing_triton_is_a_note_and_older_results_stay_readable() {
        let out = r#"{"kind": "op", "impl": "torch-eager", "op": "relu", "dtype": "float32", "shape": [8192, 4096], "ms": 0.07, "gbps": 3900}
{"kind": "note", "impl": "triton", "note": "the Triton column is absent: import triton failed (ModuleNotFoundError: No module named 'triton')"}"#;
        let note = parse_triton_note(out).expect("the note");
        assert!(note.contains("No module named 'triton'"));
        assert_eq!(parse_peer_ops(out).len(), 1);
        let mut k = KernelsBench::parse(KERNELS_JSON).expect("parses");
        assert_eq!(k.triton_failure, None, "a run before the column");
        assert!(!k.has_triton());
        assert!(k
            .throughput()
            .iter()
            .all(|g| g.triton == TritonCell::Absent));
        k.triton_failure = Some(note.clone());
        assert!(k.has_triton());
        assert!(k.table().contains(&format!("triton absent: {note}")));
        // Older files are written back as they were: no new keys on old rows.
        let old = KernelsBench::parse(KERNELS_JSON).expect("parses");
        let again = serde_json::to_string(&old).expect("serializes");
        assert!(!again.contains("triton_failure") && !again.contains("\"check\""));
        // A run with Triton rows (failed checks too) round-trips.
        let mut k = with_sample();
        k.triton_failure = Some(note);
        let json = serde_json::to_string(&k).expect("serializes");
        assert_eq!(KernelsBench::parse(&json).expect("parses back"), k);
    }

    #[test]
    fn issue_29_a_speedup_needs_a_positive_finite_peer() {
        assert_eq!(speedup(100.0, Some(50.0)), Some(2.0));
        assert_eq!(speedup(100.0, None), None);
        assert_eq!(speedup(100.0, Some(0.0)), None);
        assert_eq!(speedup(100.0, Some(-5.0)), None);
        assert_eq!(speedup(100.0, Some(f64::NAN)), None);
        assert_eq!(speedup(0.0, Some(10.0)), None);
    }
}
