//! The precision crossover (issue 39): the same GEMM at growing sizes in every precision, on
//! this machine's GPU (cuBLASLt) or CPU (the CPU backend's GEMMs), with the lab CNN's own GEMM
//! shapes as labelled points. Where each precision starts to pay over the next wider one, and
//! why: launch-bound, then memory-bound, then compute-bound, from the roofline with the
//! ceilings measured in the same run.
//!
//! The request ([`CrossoverRequest`](crate::protocol::CrossoverRequest)) lives with the other
//! requests; this module holds the report ([`CrossoverReport`]) and the pure logic over it:
//! the regime of a point ([`regime`]), the crossover sizes ([`crossovers`]), the sentences
//! ([`sentences`]), the speed-ups ([`fill_speedups`]) and the f64 check's tolerance
//! ([`tolerance`]).

use serde::{Deserialize, Serialize};

use crate::types::Precision;

/// The smallest square size a sweep accepts.
pub const MIN_SIZE: usize = 16;
/// The largest square size a sweep accepts (a 16384² FP32 operand is 1 GiB).
pub const MAX_SIZE: usize = 16_384;
/// The largest square size of a CPU sweep (a 4096³ FP32 product is 137 GFLOP: seconds).
pub const MAX_CPU_SIZE: usize = 4096;
/// A precision "pays" from the size where it is at least this much faster than the next
/// wider one.
pub const PAYS: f64 = 1.2;

/// The GPU sweep's default sizes: 64 to 16384, twelve sizes.
pub const GPU_SIZES: [usize; 12] = [
    64, 128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192, 16384,
];
/// The CPU sweep's default sizes (small: a CPU takes seconds at 2048).
pub const CPU_SIZES: [usize; 6] = [32, 64, 128, 256, 512, 1024];

/// The precisions of the sweep, widest first: the order of the tables and the legend.
pub const ORDER: [Precision; 5] = [
    Precision::Fp32,
    Precision::Tf32,
    Precision::Bf16,
    Precision::Fp16,
    Precision::Fp8,
];

/// The precisions a precision is compared with, in order of preference: the next wider one
/// first (BF16 and FP16 over TF32, FP8 over BF16), then wider ones for a machine without it
/// (a CPU has no TF32). FP32 is compared with nothing.
pub fn wider(p: Precision) -> &'static [Precision] {
    match p {
        Precision::Fp32 => &[],
        Precision::Tf32 => &[Precision::Fp32],
        Precision::Bf16 | Precision::Fp16 => &[Precision::Tf32, Precision::Fp32],
        Precision::Fp8 => &[
            Precision::Bf16,
            Precision::Fp16,
            Precision::Tf32,
            Precision::Fp32,
        ],
    }
}

/// The precision's name in tables and sentences (`FP32 strict`, `TF32`, `BF16`, `FP16`,
/// `FP8 E4M3`).
pub fn label(p: Precision) -> &'static str {
    match p {
        Precision::Fp32 => "FP32",
        Precision::Tf32 => "TF32",
        Precision::Bf16 => "BF16",
        Precision::Fp16 => "FP16",
        Precision::Fp8 => "FP8",
    }
}

/// What limits a GEMM's time, from the roofline with the run's ceilings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Regime {
    /// The fixed cost of a call (a kernel launch, a library's set-up, a thread pool's
    /// wake-up) is longer than moving the operands or doing the arithmetic at the ceilings.
    Launch,
    /// Moving the operands at the copy bandwidth takes longer than the arithmetic at the
    /// precision's peak rate.
    Memory,
    /// The arithmetic at the precision's peak rate takes longest.
    Compute,
}

impl Regime {
    /// `launch-bound`, `memory-bound`, `compute-bound`.
    pub fn as_str(self) -> &'static str {
        match self {
            Regime::Launch => "launch-bound",
            Regime::Memory => "memory-bound",
            Regime::Compute => "compute-bound",
        }
    }
}

/// What a GEMM does: `C[m×n] = A[m×k] · B[k×n]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GemmShape {
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Columns of `B` and `C`.
    pub n: usize,
    /// The reduction: columns of `A`, rows of `B`.
    pub k: usize,
}

impl GemmShape {
    /// The square product `n × n × n`.
    pub fn square(n: usize) -> Self {
        GemmShape { m: n, n, k: n }
    }

    /// Floating-point operations: `2·m·n·k`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Bytes read and written once each: `A` and `B` at `in_bytes` an element, `C` at
    /// `out_bytes`.
    pub fn bytes(&self, in_bytes: f64, out_bytes: f64) -> f64 {
        let (m, n, k) = (self.m as f64, self.n as f64, self.k as f64);
        (m * k + k * n) * in_bytes + m * n * out_bytes
    }

    /// Whether the shape is square.
    pub fn is_square(&self) -> bool {
        self.m == self.n && self.n == self.k
    }

    /// `m×n×k`.
    pub fn text(&self) -> String {
        format!("{}×{}×{}", self.m, self.n, self.k)
    }
}

/// The lab CNN's GEMMs at batch `batch`, as implicit GEMMs (`M` output pixels or rows, `N`
/// output channels or columns, `K` the reduction), each with its label: conv1 and conv2
/// forward, conv2's data gradient, both weight gradients, and the dense layer forward and its
/// two gradients.
pub fn cnn_gemms(batch: usize) -> Vec<(String, GemmShape)> {
    use crate::model::lab::{CLASSES, CONV1, CONV2};
    let pool2 = CONV2.h_out() / 2;
    let dense_in = CONV2.c_out * pool2 * pool2;
    let px1 = batch * CONV1.out_pixels();
    let px2 = batch * CONV2.out_pixels();
    let in2 = batch * CONV2.h * CONV2.w;
    let g = |m, n, k| GemmShape { m, n, k };
    vec![
        ("conv1 fwd".into(), g(px1, CONV1.c_out, CONV1.patch_len())),
        ("conv1 wgrad".into(), g(CONV1.c_out, CONV1.patch_len(), px1)),
        ("conv2 fwd".into(), g(px2, CONV2.c_out, CONV2.patch_len())),
        (
            "conv2 dgrad".into(),
            g(in2, CONV2.c_in, CONV2.c_out * CONV2.k * CONV2.k),
        ),
        ("conv2 wgrad".into(), g(CONV2.c_out, CONV2.patch_len(), px2)),
        ("dense fwd".into(), g(batch, CLASSES, dense_in)),
        ("dense dgrad".into(), g(batch, dense_in, CLASSES)),
        ("dense wgrad".into(), g(CLASSES, dense_in, batch)),
    ]
}

/// The batch of the CNN's points.
pub const CNN_BATCH: usize = 128;

/// The batches of the whole training step's points (capped at the data set's training
/// images).
pub const STEP_BATCHES: [usize; 4] = [128, 512, 2048, 8192];

/// The lab CNN's whole training step in one precision at one batch, from the step anatomy
/// (the graph-replayed step where there is one, else the launched step).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepPoint {
    /// The precision.
    pub precision: Precision,
    /// Images per step.
    pub batch: usize,
    /// Time of one step, ms.
    pub ms: f64,
    /// Images per second.
    pub images_per_s: f64,
    /// FP32's step time over this one at the same batch; `None` without an FP32 step.
    #[serde(default)]
    pub speedup_vs_fp32: Option<f64>,
}

/// The speed-ups of every training step over FP32's at the same batch.
pub fn fill_step_speedups(steps: &mut [StepPoint]) {
    let fp32: Vec<(usize, f64)> = steps
        .iter()
        .filter(|s| s.precision == Precision::Fp32)
        .map(|s| (s.batch, s.ms))
        .collect();
    for s in steps.iter_mut() {
        s.speedup_vs_fp32 = fp32
            .iter()
            .find(|(b, _)| *b == s.batch)
            .filter(|(_, t)| *t > 0.0 && s.ms > 0.0)
            .map(|(_, t)| t / s.ms);
    }
}

/// The f64 check of one point: the result against an f64 product of the same rounded
/// operands, on every entry or a sample of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GemmCheck {
    /// The largest error over the checked entries, each relative to `Σ|a·b|` of its entry
    /// (the size of the sum before cancellation).
    pub max_rel_err: f64,
    /// The tolerance ([`tolerance`]).
    pub tolerance: f64,
    /// Entries checked.
    pub entries: usize,
    /// Whether every checked entry is within the tolerance (and finite).
    pub ok: bool,
}

impl GemmCheck {
    /// The check of `max_rel_err` over `entries` entries against `tolerance`.
    pub fn new(max_rel_err: f64, tolerance: f64, entries: usize) -> Self {
        GemmCheck {
            max_rel_err,
            tolerance,
            entries,
            ok: max_rel_err.is_finite() && max_rel_err <= tolerance && entries > 0,
        }
    }
}

/// The tolerance of the f64 check of a `precision` product with reduction `k` whose result is
/// stored with unit round-off `out_unit` (2⁻²⁴ for f32, 2⁻⁸ for bf16, 2⁻¹¹ for f16): the
/// accumulation's error growing as `√k` (f32 accumulators; FP8's tensor cores accumulate with
/// fewer bits) with a margin of 8, plus the output's rounding. Errors are relative to `Σ|a·b|`.
pub fn tolerance(precision: Precision, k: usize, out_unit: f64) -> f64 {
    let acc_unit = match precision {
        Precision::Fp8 => 2f64.powi(-13),
        _ => 2f64.powi(-23),
    };
    8.0 * (k.max(1) as f64).sqrt() * acc_unit + 2.0 * out_unit
}

/// One measured GEMM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GemmPoint {
    /// The precision.
    pub precision: Precision,
    /// The product.
    pub shape: GemmShape,
    /// The lab CNN's name of the GEMM (`conv2 fwd`); `None` for the square sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Shape actually run when the precision needs padding (FP8: every dimension a multiple
    /// of 16); `None` when it ran as asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub padded: Option<GemmShape>,
    /// Median time of one product, ms.
    pub ms_p50: f64,
    /// Timed products.
    pub reps: usize,
    /// `2·m·n·k` over the median time, TFLOP/s (of the shape asked for, not the padded one).
    pub tflops: f64,
    /// Operands and result moved once each, bytes.
    pub bytes: f64,
    /// Speed-up over FP32 at the same shape (its time over ours); `None` without an FP32 point.
    #[serde(default)]
    pub speedup_vs_fp32: Option<f64>,
    /// Speed-up over BF16 at the same shape; `None` without a BF16 point.
    #[serde(default)]
    pub speedup_vs_bf16: Option<f64>,
    /// What limits it ([`regime`]).
    pub regime: Regime,
    /// The f64 check.
    pub check: GemmCheck,
}

/// The ceilings of the run: what the roofline is drawn from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CrossoverCeilings {
    /// Copy bandwidth measured in the same run, GB/s.
    pub copy_gbps: f64,
    /// The fixed cost of one call, ms: the fastest median of the run's smallest square size.
    pub launch_ms: f64,
    /// Each precision's best rate over the square sweep (the largest sizes'), TFLOP/s.
    pub peaks: Vec<PrecisionPeak>,
}

impl CrossoverCeilings {
    /// The peak of `p`, TFLOP/s.
    pub fn peak(&self, p: Precision) -> Option<f64> {
        self.peaks
            .iter()
            .find(|x| x.precision == p)
            .map(|x| x.tflops)
    }
}

/// A precision's peak rate in the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrecisionPeak {
    /// The precision.
    pub precision: Precision,
    /// Its best rate, TFLOP/s.
    pub tflops: f64,
    /// The square size it was reached at.
    pub n: usize,
}

/// The regime of a GEMM of `flops` operations moving `bytes` at the ceilings: the largest of
/// the call's fixed cost (`launch_ms`), the time to move the bytes at `copy_gbps` and the time
/// of the arithmetic at `peak_tflops`. A ceiling that is not positive counts as unknown
/// (its time is zero).
pub fn regime(flops: f64, bytes: f64, launch_ms: f64, copy_gbps: f64, peak_tflops: f64) -> Regime {
    let mem_ms = if copy_gbps > 0.0 {
        bytes / (copy_gbps * 1e9) * 1e3
    } else {
        0.0
    };
    let compute_ms = if peak_tflops > 0.0 {
        flops / (peak_tflops * 1e12) * 1e3
    } else {
        0.0
    };
    let launch_ms = launch_ms.max(0.0);
    if launch_ms >= mem_ms && launch_ms >= compute_ms {
        Regime::Launch
    } else if mem_ms >= compute_ms {
        Regime::Memory
    } else {
        Regime::Compute
    }
}

/// A precision that could not run, and why (a GPU below sm_89 for FP8, a cuBLASLt without
/// FP8, a CPU without TF32).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedPrecision {
    /// The precision.
    pub precision: Precision,
    /// Why, in a sentence.
    pub reason: String,
}

/// Where a precision starts to pay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Crossover {
    /// The precision.
    pub precision: Precision,
    /// The wider precision it is compared with.
    pub over: Precision,
    /// The smallest square size from which it is at least [`PAYS`]× faster than `over` at
    /// every measured size; `None` when it never is up to the largest size.
    pub n: Option<usize>,
    /// Its speed-up over `over` at the largest size both ran.
    pub at_largest: Option<f64>,
    /// That largest size.
    pub largest: Option<usize>,
}

/// PyTorch at one size and precision (`torch.matmul`, `torch._scaled_mm` for FP8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerGemm {
    /// The precision.
    pub precision: Precision,
    /// The square size.
    pub n: usize,
    /// Median time, ms.
    pub ms_p50: f64,
    /// Rate, TFLOP/s.
    pub tflops: f64,
}

/// The crossover job's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossoverReport {
    /// The device, in words (`NVIDIA H200`, the CPU's model).
    pub device: String,
    /// `cuda` or `cpu`.
    pub backend: String,
    /// What ran the products (`cuBLASLt 12.8`, `CPU: matrixmultiply (f32), …`).
    pub library: String,
    /// The run's ceilings.
    pub ceilings: CrossoverCeilings,
    /// Every measured point: the square sweep, then the CNN's GEMMs.
    pub points: Vec<GemmPoint>,
    /// Precisions that could not run, and why.
    #[serde(default)]
    pub skipped: Vec<SkippedPrecision>,
    /// Where each precision pays ([`crossovers`]).
    pub crossovers: Vec<Crossover>,
    /// The sentences written from the numbers ([`sentences`]).
    pub sentences: Vec<String>,
    /// PyTorch's rows, when asked for and found.
    #[serde(default)]
    pub peers: Vec<PeerGemm>,
    /// Why PyTorch's rows are missing when they were asked for.
    #[serde(default)]
    pub peer_failure: Option<String>,
    /// The whole training step per precision and batch ([`STEP_BATCHES`]).
    #[serde(default)]
    pub steps: Vec<StepPoint>,
    /// Why the training steps are missing (or some of them), when they were asked for.
    #[serde(default)]
    pub step_note: Option<String>,
}

impl CrossoverReport {
    /// The square sweep's points of `p`, by size.
    pub fn sweep(&self, p: Precision) -> Vec<&GemmPoint> {
        let mut v: Vec<&GemmPoint> = self
            .points
            .iter()
            .filter(|x| x.precision == p && x.label.is_none())
            .collect();
        v.sort_by_key(|x| x.shape.n);
        v
    }

    /// The CNN's points.
    pub fn cnn(&self) -> impl Iterator<Item = &GemmPoint> {
        self.points.iter().filter(|x| x.label.is_some())
    }

    /// The precisions measured, widest first.
    pub fn precisions(&self) -> Vec<Precision> {
        ORDER
            .iter()
            .copied()
            .filter(|p| self.points.iter().any(|x| x.precision == *p))
            .collect()
    }

    /// The square sizes measured, ascending.
    pub fn sizes(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .points
            .iter()
            .filter(|x| x.label.is_none())
            .map(|x| x.shape.n)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// How many points pass their f64 check, of how many.
    pub fn checks_passed(&self) -> (usize, usize) {
        (
            self.points.iter().filter(|p| p.check.ok).count(),
            self.points.len(),
        )
    }

    /// The point of `p` at `shape` with `label`, if measured.
    pub fn point(&self, p: Precision, shape: GemmShape, label: Option<&str>) -> Option<&GemmPoint> {
        self.points
            .iter()
            .find(|x| x.precision == p && x.shape == shape && x.label.as_deref() == label)
    }

    /// The crossover of `p`, if it was computed.
    pub fn crossover(&self, p: Precision) -> Option<&Crossover> {
        self.crossovers.iter().find(|c| c.precision == p)
    }

    /// The one-line summary of the run list.
    pub fn headline(&self) -> String {
        let (ok, all) = self.checks_passed();
        let pays: Vec<String> = self
            .crossovers
            .iter()
            .map(|c| match c.n {
                Some(n) => format!("{} from N = {n}", label(c.precision)),
                None => format!("{} never", label(c.precision)),
            })
            .collect();
        format!(
            "{} point(s), {ok}/{all} checks pass; pays: {}",
            self.points.len(),
            if pays.is_empty() {
                "–".to_string()
            } else {
                pays.join(", ")
            }
        )
    }

    /// Fills in the derived fields from the points and ceilings: the speed-ups, the regimes,
    /// the crossovers and the sentences. The job calls it once its points are in.
    pub fn finish(&mut self) {
        fill_speedups(&mut self.points);
        let c = self.ceilings.clone();
        for p in &mut self.points {
            p.regime = regime(
                p.shape.flops(),
                p.bytes,
                c.launch_ms,
                c.copy_gbps,
                c.peak(p.precision).unwrap_or(0.0),
            );
        }
        self.crossovers = crossovers(&self.points);
        self.sentences = sentences(self);
    }
}

/// The speed-ups of every point over FP32 and BF16 at the same shape and label.
pub fn fill_speedups(points: &mut [GemmPoint]) {
    let time = |points: &[GemmPoint], p: Precision, x: &GemmPoint| {
        points
            .iter()
            .find(|y| y.precision == p && y.shape == x.shape && y.label == x.label)
            .map(|y| y.ms_p50)
    };
    let ups: Vec<(Option<f64>, Option<f64>)> = points
        .iter()
        .map(|x| {
            let over = |p| {
                time(points, p, x)
                    .filter(|t| *t > 0.0 && x.ms_p50 > 0.0)
                    .map(|t| t / x.ms_p50)
            };
            (over(Precision::Fp32), over(Precision::Bf16))
        })
        .collect();
    for (x, (f, b)) in points.iter_mut().zip(ups) {
        x.speedup_vs_fp32 = f;
        x.speedup_vs_bf16 = b;
    }
}

/// The square sweep's time of `p` at each size, ascending.
fn times(points: &[GemmPoint], p: Precision) -> Vec<(usize, f64)> {
    let mut v: Vec<(usize, f64)> = points
        .iter()
        .filter(|x| x.precision == p && x.label.is_none() && x.ms_p50 > 0.0)
        .map(|x| (x.shape.n, x.ms_p50))
        .collect();
    v.sort_by_key(|x| x.0);
    v
}

/// For each measured precision but FP32, where it pays over the next wider precision measured
/// ([`wider`]): the smallest square size from which it is at least [`PAYS`]× faster at every
/// size both ran.
pub fn crossovers(points: &[GemmPoint]) -> Vec<Crossover> {
    let mut out = Vec::new();
    for p in ORDER {
        let ours = times(points, p);
        if ours.is_empty() {
            continue;
        }
        let Some((over, theirs)) = wider(p)
            .iter()
            .map(|&w| (w, times(points, w)))
            .find(|(_, t)| !t.is_empty())
        else {
            continue;
        };
        let ups: Vec<(usize, f64)> = ours
            .iter()
            .filter_map(|&(n, t)| theirs.iter().find(|x| x.0 == n).map(|&(_, tw)| (n, tw / t)))
            .collect();
        if ups.is_empty() {
            continue;
        }
        // From the largest size down while it pays: the crossover is the last that does.
        let mut from = None;
        for &(n, s) in ups.iter().rev() {
            if s >= PAYS {
                from = Some(n);
            } else {
                break;
            }
        }
        let last = ups.last().copied();
        out.push(Crossover {
            precision: p,
            over,
            n: from,
            at_largest: last.map(|x| x.1),
            largest: last.map(|x| x.0),
        });
    }
    out
}

/// `1.43×`.
fn times_text(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.0}×")
    } else {
        format!("{x:.2}×")
    }
}

/// One sentence per crossover, written from the numbers and naming the device, and where the
/// CNN's largest GEMM stands: `On this NVIDIA H200, FP8 pays over BF16 from N = 4096 (1.57×
/// there, 1.81× at N = 16384); the lab CNN's largest GEMM, conv2 fwd 15488×64×288, runs
/// 0.71× BF16's speed in FP8, because it is launch-bound.`
pub fn sentences(report: &CrossoverReport) -> Vec<String> {
    let device = &report.device;
    // The CNN's largest GEMM by FLOPs (the first such label).
    let largest = report
        .cnn()
        .max_by(|a, b| a.shape.flops().total_cmp(&b.shape.flops()))
        .map(|p| (p.label.clone(), p.shape));
    let mut out = Vec::new();
    for c in &report.crossovers {
        let (p, w) = (label(c.precision), label(c.over));
        let mut s = match (c.n, c.at_largest, c.largest) {
            (Some(n), Some(up), Some(top)) => {
                let at_n = report
                    .point(c.precision, GemmShape::square(n), None)
                    .zip(report.point(c.over, GemmShape::square(n), None))
                    .map(|(a, b)| b.ms_p50 / a.ms_p50);
                match at_n {
                    Some(x) if n != top => format!(
                        "On this {device}, {p} pays over {w} from N = {n} ({} there, {} at N = {top})",
                        times_text(x),
                        times_text(up)
                    ),
                    _ => format!(
                        "On this {device}, {p} pays over {w} from N = {n} ({} there)",
                        times_text(up)
                    ),
                }
            }
            (None, Some(up), Some(top)) => format!(
                "On this {device}, {p} never pays {PAYS}× over {w} up to N = {top} ({} there)",
                times_text(up)
            ),
            _ => format!("On this {device}, {p} has no size measured beside {w}"),
        };
        if let Some((Some(name), shape)) = &largest {
            let ours = report.point(c.precision, *shape, Some(name));
            let theirs = report.point(c.over, *shape, Some(name));
            if let (Some(a), Some(b)) = (ours, theirs) {
                let r = b.ms_p50 / a.ms_p50;
                let how = if r < 1.0 {
                    format!("{p} costs {} {w}", times_text(1.0 / r))
                } else {
                    format!("{p} runs {} faster than {w}", times_text(r))
                };
                s.push_str(&format!(
                    "; the lab CNN's largest GEMM, {name} {} at batch {CNN_BATCH}, is where {how}, because it is {}",
                    shape.text(),
                    a.regime.as_str()
                ));
            }
        }
        s.push('.');
        out.push(s);
    }
    if out.is_empty() {
        let ran: Vec<&str> = report.precisions().into_iter().map(label).collect();
        if !ran.is_empty() {
            out.push(format!(
                "On this {device}, only {} ran: a crossover compares a precision with a wider one \
                 measured in the same run.",
                ran.join(" and ")
            ));
        }
    }
    out
}

/// Text of a duration in ms with its unit scaled: `38 µs`, `1.20 ms`, `2.4 s`.
pub fn ms_text(ms: f64) -> String {
    if !ms.is_finite() {
        "–".into()
    } else if ms < 1.0 {
        format!("{:.1} µs", ms * 1e3)
    } else if ms < 1000.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{:.2} s", ms / 1e3)
    }
}

/// Text of a rate in TFLOP/s, small rates in GFLOP/s: `725 TFLOP/s`, `3.1 TFLOP/s`,
/// `84 GFLOP/s`.
pub fn tflops_text(t: f64) -> String {
    if !t.is_finite() {
        "–".into()
    } else if t >= 100.0 {
        format!("{t:.0} TFLOP/s")
    } else if t >= 1.0 {
        format!("{t:.1} TFLOP/s")
    } else {
        format!("{:.1} GFLOP/s", t * 1e3)
    }
}

/// The report as a text table: one row per size, one column per precision (rate and
/// speed-up over FP32), then the CNN's points and the sentences. `showdown bench crossover`
/// prints it; `docs/benchmarks.md` holds it.
pub fn table(report: &CrossoverReport) -> String {
    let precisions = report.precisions();
    let mut out = format!(
        "Precision crossover on {} ({}), {}; copy {:.0} GB/s, call floor {}\n\n",
        report.device,
        report.backend,
        report.library,
        report.ceilings.copy_gbps,
        ms_text(report.ceilings.launch_ms)
    );
    out.push_str("| N |");
    for p in &precisions {
        out.push_str(&format!(" {} |", label(*p)));
    }
    out.push_str("\n| --- |");
    for _ in &precisions {
        out.push_str(" --- |");
    }
    out.push('\n');
    let cell = |x: &GemmPoint| {
        let up = x
            .speedup_vs_fp32
            .filter(|_| x.precision != Precision::Fp32)
            .map_or(String::new(), |s| format!(" ({} FP32)", times_text(s)));
        let bad = if x.check.ok { "" } else { " CHECK FAILED" };
        format!(
            "{}, {}{up}, {}{bad}",
            tflops_text(x.tflops),
            ms_text(x.ms_p50),
            x.regime.as_str()
        )
    };
    for n in report.sizes() {
        out.push_str(&format!("| {n} |"));
        for p in &precisions {
            let c = report
                .point(*p, GemmShape::square(n), None)
                .map_or("–".to_string(), cell);
            out.push_str(&format!(" {c} |"));
        }
        out.push('\n');
    }
    let cnn: Vec<&GemmPoint> = report.cnn().collect();
    if !cnn.is_empty() {
        out.push_str(&format!(
            "\nThe lab CNN's GEMMs at batch {CNN_BATCH} (M×N×K):\n\n| GEMM |"
        ));
        for p in &precisions {
            out.push_str(&format!(" {} |", label(*p)));
        }
        out.push_str("\n| --- |");
        for _ in &precisions {
            out.push_str(" --- |");
        }
        out.push('\n');
        let mut seen: Vec<(String, GemmShape)> = Vec::new();
        for x in &cnn {
            if let Some(l) = &x.label {
                if !seen.iter().any(|(s, _)| s == l) {
                    seen.push((l.clone(), x.shape));
                }
            }
        }
        for (l, shape) in seen {
            out.push_str(&format!("| {l} {} |", shape.text()));
            for p in &precisions {
                let c = report
                    .point(*p, shape, Some(&l))
                    .map_or("–".to_string(), cell);
                out.push_str(&format!(" {c} |"));
            }
            out.push('\n');
        }
    }
    for s in &report.skipped {
        out.push_str(&format!("\n{} skipped: {}", label(s.precision), s.reason));
    }
    if !report.skipped.is_empty() {
        out.push('\n');
    }
    out.push('\n');
    for s in &report.sentences {
        out.push_str(s);
        out.push('\n');
    }
    if !report.peers.is_empty() {
        out.push_str("\nPyTorch beside it (torch.matmul, torch._scaled_mm for FP8):\n");
        for r in &report.peers {
            out.push_str(&format!(
                "  {} N = {}: {}, {}\n",
                label(r.precision),
                r.n,
                tflops_text(r.tflops),
                ms_text(r.ms_p50)
            ));
        }
    }
    if let Some(why) = &report.peer_failure {
        out.push_str(&format!("\nPyTorch skipped: {why}\n"));
    }
    if !report.steps.is_empty() {
        out.push_str("\nThe lab CNN's whole training step (step anatomy):\n");
        for s in &report.steps {
            let up = s
                .speedup_vs_fp32
                .map_or(String::new(), |u| format!(", {} FP32", times_text(u)));
            out.push_str(&format!(
                "  {} batch {}: {} a step, {:.0} images/s{up}\n",
                label(s.precision),
                s.batch,
                ms_text(s.ms),
                s.images_per_s
            ));
        }
    }
    if let Some(why) = &report.step_note {
        out.push_str(&format!("\nTraining steps: {why}\n"));
    }
    out
}

/// The sizes a person types (the page's field, comma- or space-separated; empty for the
/// defaults), or the sentence naming the word that is not a whole number.
pub fn parse_sizes(text: &str) -> Result<Vec<usize>, String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format!("sizes: {s:?} is not a whole number"))
        })
        .collect()
}

/// PyTorch's rows from the peer's JSON lines (`{"precision":"bf16","n":4096,"ms":0.21}`);
/// lines that are not rows are skipped.
pub fn parse_peer_lines(stdout: &str) -> Vec<PeerGemm> {
    #[derive(Deserialize)]
    struct Line {
        precision: Precision,
        n: usize,
        ms: f64,
    }
    super::json_lines(stdout)
        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
        .filter(|l| l.ms > 0.0 && l.ms.is_finite())
        .map(|l| PeerGemm {
            precision: l.precision,
            n: l.n,
            ms_p50: l.ms,
            tflops: GemmShape::square(l.n).flops() / (l.ms * 1e-3) / 1e12,
        })
        .collect()
}

#[cfg(test)]
mod tests;
