//! `showdown bench conv`: the convolution ladder of the Kernel Reveal (rungs 1–5, cuDNN through
//! cudarc, the CPU rows) and cuDNN through PyTorch (`anchor_kernels.py`, benchmark mode) in the
//! same call. The layers, the report, the peer's rows and their labels, and the tables: the
//! terminal's and the page's. The ladder itself runs in the engine (`compute::conv_ladder`,
//! `compute::cuda::conv_ladder`).

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::{json_lines, or_dash, our_dtype, parse_json, ParseError};
use crate::error::{ComputeError, Result};
use crate::model::ConvShape;

/// A layer of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LadderLayer {
    /// The lab CNN's first convolution: 1→32, 28×28, k3.
    LabConv1,
    /// The lab CNN's second convolution: 32→64, 13×13, k3.
    LabConv2,
    /// The LeNet variant's C1 ("GPU Kernel Optimization" seed): 1→4, 86×86, k7.
    LenetC1,
    /// The LeNet variant's C3: 4→16, 40×40, k7.
    LenetC3,
}

impl LadderLayer {
    /// Every layer, in table order.
    pub const ALL: [LadderLayer; 4] = [
        LadderLayer::LabConv1,
        LadderLayer::LabConv2,
        LadderLayer::LenetC1,
        LadderLayer::LenetC3,
    ];
    /// The name used in tables, JSON and kernel entry points (`conv_tc_opt_{name}`).
    pub fn name(self) -> &'static str {
        match self {
            LadderLayer::LabConv1 => "lab_conv1",
            LadderLayer::LabConv2 => "lab_conv2",
            LadderLayer::LenetC1 => "lenet_c1",
            LadderLayer::LenetC3 => "lenet_c3",
        }
    }
    /// What it is, in words: `lab conv1: 1→32, 28², k3`.
    pub fn title(self) -> &'static str {
        match self {
            LadderLayer::LabConv1 => "lab conv1: 1→32, 28², k3",
            LadderLayer::LabConv2 => "lab conv2: 32→64, 13², k3",
            LadderLayer::LenetC1 => "LeNet C1: 1→4, 86², k7",
            LadderLayer::LenetC3 => "LeNet C3: 4→16, 40², k7",
        }
    }
    /// Looks a layer up by [`LadderLayer::name`].
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                ComputeError::bad_arg(
                    "--layers",
                    s,
                    "expected lab_conv1, lab_conv2, lenet_c1 or lenet_c3",
                )
            })
    }
    /// Its shape.
    pub fn shape(self) -> ConvShape {
        let (c_in, c_out, h, k) = match self {
            LadderLayer::LabConv1 => (1, 32, 28, 3),
            LadderLayer::LabConv2 => (32, 64, 13, 3),
            LadderLayer::LenetC1 => (1, 4, 86, 7),
            LadderLayer::LenetC3 => (4, 16, 40, 7),
        };
        ConvShape {
            c_in,
            c_out,
            h,
            w: h,
            k,
        }
    }
    /// Whether the layer reads images (its input is the data set, not a hidden activation).
    pub fn reads_images(self) -> bool {
        matches!(self, LadderLayer::LabConv1 | LadderLayer::LenetC1)
    }
}

/// Whether `implementation` names one of the CPU rows (`cpu_naive_f64`, `cpu_im2col_gemm`):
/// they run a few images, not the GPU batch, and far below a TFLOP/s.
pub fn is_cpu_row(implementation: &str) -> bool {
    implementation.starts_with("cpu_")
}

/// A throughput of `tflops` TFLOP/s in the unit that reads: GFLOP/s for a CPU row (`cpu`),
/// TFLOP/s for the GPU's; three significant digits or two decimals.
pub fn flops_text(tflops: f64, cpu: bool) -> String {
    let (v, unit) = if cpu {
        (tflops * 1e3, "GFLOP/s")
    } else {
        (tflops, "TFLOP/s")
    };
    let digits = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// Multiply-adds ×2 of one forward pass over `batch` images.
pub fn conv_flops(s: &ConvShape, batch: usize) -> f64 {
    2.0 * batch as f64 * s.out_len() as f64 * s.patch_len() as f64
}

/// One implementation's timing on one layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvRow {
    /// The layer ([`LadderLayer::name`]).
    pub layer: String,
    /// The implementation (`rung1_unroll_gemm_permute`, `cudnn_f16`, `cpu_im2col`, ...).
    pub implementation: String,
    /// The rung of the ladder (1–5), none for reference rows.
    pub rung: Option<u8>,
    /// Images per pass.
    pub batch: usize,
    /// Input and weight storage (`f32`, `f16`).
    pub input_dtype: String,
    /// Output storage.
    pub output_dtype: String,
    /// Median, ms.
    pub ms_p50: f64,
    /// 90th percentile, ms.
    pub ms_p90: f64,
    /// 99th percentile, ms.
    pub ms_p99: f64,
    /// Timed passes.
    pub reps: usize,
    /// FLOP/s at the median, in TFLOP/s.
    pub tflops: f64,
    /// (input + weights + output bytes) / median: the compulsory traffic.
    pub gbps: f64,
    /// FLOPs per compulsory byte.
    pub intensity: f64,
    /// Baseline (rung 1) median / this median, on the same layer.
    pub speedup_vs_rung1: Option<f64>,
    /// How the row was measured where it differs from the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ConvRow {
    /// Whether this is one of cuDNN's rows (through cudarc).
    pub fn is_cudnn(&self) -> bool {
        self.implementation.starts_with("cudnn")
    }
}

/// One correctness check of an implementation against the f64 reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvCheck {
    /// The layer.
    pub layer: String,
    /// The implementation.
    pub implementation: String,
    /// Images in the pass that was checked.
    pub batch: usize,
    /// Images compared with the reference (spread over the batch, first and last included).
    pub images_checked: usize,
    /// max |ours − reference|.
    pub max_abs: f64,
    /// max |ours − reference| / max(|reference|, 1).
    pub max_rel: f64,
    /// The bound on max_rel for this implementation's dtypes.
    pub bound: f64,
    /// Outputs that are NaN or infinite (unwritten outputs stay NaN: they are poisoned first).
    pub non_finite: usize,
    /// max_rel ≤ bound, and every output finite.
    pub ok: bool,
}

/// Ceilings measured in the same run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// Device-to-device copy, (read + write) GB/s.
    pub copy_gbps: f64,
    /// cuBLAS FP16 GEMM 8192³ (FP32 accumulation), TFLOP/s, when cuBLAS loads.
    pub gemm_f16_tflops: Option<f64>,
    /// cuBLAS FP32 GEMM 8192³ (no TF32), TFLOP/s, when cuBLAS loads.
    pub gemm_f32_tflops: Option<f64>,
    /// Why a GEMM ceiling is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemm_note: Option<String>,
}

/// What `showdown bench conv` measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvLadderReport {
    /// The GPU in words.
    pub device: String,
    /// Images per pass on the GPU.
    pub batch: usize,
    /// Where the image layers' inputs came from.
    pub input_source: String,
    /// Ceilings from the same run.
    pub ceilings: Ceilings,
    /// Every timing.
    pub rows: Vec<ConvRow>,
    /// Every correctness check.
    pub checks: Vec<ConvCheck>,
    /// Reference rows that could not run (cuDNN missing, ...), with why.
    pub skipped: Vec<String>,
}

/// A row of `layer` from its median time: `tflops`, `gbps` and `intensity` from the shape,
/// the batch and the bytes per element of the input and the output.
pub fn finish_row(
    layer: LadderLayer,
    implementation: &str,
    rung: Option<u8>,
    batch: usize,
    (in_bytes, out_bytes): (usize, usize),
    (p50, p90, p99, reps): (f64, f64, f64, usize),
) -> ConvRow {
    let s = layer.shape();
    let bytes = (batch * s.in_len() + s.weight_len()) * in_bytes + batch * s.out_len() * out_bytes;
    let flops = conv_flops(&s, batch);
    let dt = |b: usize| if b == 2 { "f16" } else { "f32" };
    ConvRow {
        layer: layer.name().into(),
        implementation: implementation.into(),
        rung,
        batch,
        input_dtype: dt(in_bytes).into(),
        output_dtype: dt(out_bytes).into(),
        ms_p50: p50,
        ms_p90: p90,
        ms_p99: p99,
        reps,
        tflops: flops / (p50 * 1e-3) / 1e12,
        gbps: bytes as f64 / (p50 * 1e-3) / 1e9,
        intensity: flops / bytes as f64,
        speedup_vs_rung1: None,
        note: None,
    }
}

/// Sets every row's `speedup_vs_rung1` from the rung-1 row of its layer and batch.
pub fn fill_speedups(rows: &mut [ConvRow]) {
    let base: Vec<(String, f64, usize)> = rows
        .iter()
        .filter(|r| r.rung == Some(1))
        .map(|r| (r.layer.clone(), r.ms_p50, r.batch))
        .collect();
    for r in rows.iter_mut() {
        r.speedup_vs_rung1 = base
            .iter()
            .find(|(l, _, b)| *l == r.layer && *b == r.batch)
            .map(|(_, ms, _)| ms / r.ms_p50);
    }
}

/// One convolution row of `anchor_kernels.py`: cuDNN through PyTorch, benchmark mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerConv {
    /// `cudnn`.
    #[serde(rename = "impl")]
    pub implementation: String,
    /// Batch.
    #[serde(rename = "N")]
    pub n: usize,
    /// Input channels.
    pub cin: usize,
    /// Output channels.
    pub cout: usize,
    /// Input side.
    pub hw: usize,
    /// Kernel side.
    pub k: usize,
    /// `float32` or `float16`.
    pub dtype: String,
    /// NHWC memory format.
    #[serde(default)]
    pub channels_last: bool,
    /// TF32 allowed.
    #[serde(default)]
    pub tf32: bool,
    /// Median ms (`triton.testing.do_bench`).
    pub ms: f64,
}

impl PeerConv {
    /// The ladder layer with this row's shape, if any.
    pub fn layer(&self) -> Option<LadderLayer> {
        LadderLayer::ALL.into_iter().find(|l| {
            let s = l.shape();
            (s.c_in, s.c_out, s.h, s.k) == (self.cin, self.cout, self.hw, self.k)
        })
    }
    /// The row's name in every table, the terminal's and the page's:
    /// `pytorch_cudnn_<dtype>[_channels_last][_tf32|_strict]`, the math mode for FP32 only
    /// (`pytorch_cudnn_f16_channels_last`, `pytorch_cudnn_f32_channels_last_tf32`).
    pub fn label(&self) -> String {
        let mut s = format!("pytorch_cudnn_{}", our_dtype(&self.dtype));
        if self.channels_last {
            s.push_str("_channels_last");
        }
        if self.dtype == "float32" {
            s.push_str(if self.tf32 { "_tf32" } else { "_strict" });
        }
        s
    }
    /// Input and output dtypes, `f16/f16`.
    pub fn dtypes(&self) -> String {
        let d = our_dtype(&self.dtype);
        format!("{d}/{d}")
    }
    /// TFLOP/s at the median, when the row is one of the ladder's layers.
    pub fn tflops(&self) -> Option<f64> {
        let layer = self.layer()?;
        Some(conv_flops(&layer.shape(), self.n) / (self.ms * 1e-3) / 1e12)
    }
}

/// The convolution rows of an `anchor_kernels.py` output (other kinds, non-positive times and
/// broken lines are skipped).
pub fn parse_peer_convs(stdout: &str) -> Vec<PeerConv> {
    json_lines(stdout)
        .filter(|l| l.contains("\"conv\""))
        .filter_map(|l| serde_json::from_str::<PeerConv>(l).ok())
        .filter(|r| r.ms.is_finite() && r.ms > 0.0)
        .collect()
}

/// What `showdown bench conv --json`/`--json-out` hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvBench {
    /// Our ladder, cuDNN through cudarc, the CPU rows.
    pub ours: ConvLadderReport,
    /// cuDNN through PyTorch at our batch.
    #[serde(default)]
    pub peers: Vec<PeerConv>,
    /// Why the peers are missing, if they are.
    #[serde(default)]
    pub peer_failure: Option<String>,
}

/// One line of a layer's table: one of our rows or one of PyTorch's.
#[derive(Debug, Clone, PartialEq)]
pub struct LadderLine {
    /// Our implementation, or the peer's [`PeerConv::label`].
    pub implementation: String,
    /// The rung, for our ladder.
    pub rung: Option<u8>,
    /// `f16/f32`: input and output storage.
    pub dtypes: String,
    /// Images per pass (the CPU rows run a few).
    pub batch: usize,
    /// Median milliseconds per pass.
    pub ms: f64,
    /// 99th percentile (our rows).
    pub ms_p99: Option<f64>,
    /// TFLOP/s at the median.
    pub tflops: Option<f64>,
    /// Compulsory GB/s at the median (our rows).
    pub gbps: Option<f64>,
    /// Speed-up over rung 1 of the same layer and batch.
    pub vs_rung1: Option<f64>,
    /// The fastest cuDNN's time over this one's (above 1: faster than cuDNN).
    pub vs_cudnn: Option<f64>,
    /// Whether this is a cuDNN row (through cudarc or PyTorch).
    pub is_cudnn: bool,
    /// Whether this is PyTorch's row.
    pub is_peer: bool,
    /// What the row includes.
    pub note: Option<String>,
}

impl LadderLine {
    /// Whether this is one of the CPU rows ([`is_cpu_row`]).
    pub fn is_cpu(&self) -> bool {
        is_cpu_row(&self.implementation)
    }

    /// The row's text in `column`, `None` where it has no value (`reference`: the reference
    /// run's TFLOP/s of the same implementation, for the GPU rows).
    pub fn cell(&self, column: LadderColumn, reference: Option<f64>) -> Option<String> {
        let ratio = |v: Option<f64>| {
            v.filter(|r| r.is_finite() && *r > 0.0)
                .map(|r| format!("{r:.2}×"))
        };
        let reference = reference.filter(|r| r.is_finite() && *r > 0.0 && !self.is_cpu());
        match column {
            LadderColumn::Rung => self.rung.map(|r| r.to_string()),
            LadderColumn::Implementation => Some(self.implementation.clone()),
            LadderColumn::Dtypes => Some(self.dtypes.clone()),
            LadderColumn::Batch => Some(self.batch.to_string()),
            LadderColumn::Median => Some(format!("{:.4}", self.ms)),
            LadderColumn::Throughput => self
                .tflops
                .filter(|t| t.is_finite())
                .map(|t| flops_text(t, self.is_cpu())),
            LadderColumn::VsRung1 => ratio(self.vs_rung1),
            LadderColumn::VsCudnn => ratio(self.vs_cudnn),
            LadderColumn::Reference => reference.map(|r| flops_text(r, false)),
            LadderColumn::VsReference => ratio(self.tflops.zip(reference).map(|(a, b)| a / b)),
        }
    }
}

/// A column of a ladder table on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LadderColumn {
    /// The rung (1–5).
    Rung,
    /// The implementation.
    Implementation,
    /// Input and output storage.
    Dtypes,
    /// Images per pass: each row's own (the CPU rows run a few).
    Batch,
    /// Median ms per pass.
    Median,
    /// FLOP/s at the median: GFLOP/s on the CPU rows, TFLOP/s on the GPU's.
    Throughput,
    /// Speed-up over rung 1.
    VsRung1,
    /// The fastest cuDNN's time over this one's.
    VsCudnn,
    /// The reference run's throughput of the same implementation.
    Reference,
    /// This row's throughput over the reference's.
    VsReference,
}

impl LadderColumn {
    /// Every column, in table order.
    pub const ALL: [LadderColumn; 10] = [
        LadderColumn::Rung,
        LadderColumn::Implementation,
        LadderColumn::Dtypes,
        LadderColumn::Batch,
        LadderColumn::Median,
        LadderColumn::Throughput,
        LadderColumn::VsRung1,
        LadderColumn::VsCudnn,
        LadderColumn::Reference,
        LadderColumn::VsReference,
    ];

    /// The column's head; `reference` names the reference run (`H100 reference, 2026-11-23`).
    pub fn head(self, reference: &str) -> String {
        match self {
            LadderColumn::Rung => "rung".into(),
            LadderColumn::Implementation => "implementation".into(),
            LadderColumn::Dtypes => "in/out".into(),
            LadderColumn::Batch => "batch (images per pass)".into(),
            LadderColumn::Median => "p50 ms".into(),
            LadderColumn::Throughput => "FLOP/s".into(),
            LadderColumn::VsRung1 => "× rung 1".into(),
            LadderColumn::VsCudnn => "vs fastest cuDNN".into(),
            LadderColumn::Reference => reference.into(),
            LadderColumn::VsReference => "÷ reference".into(),
        }
    }

    /// The columns at least one of `lines` has a value in (`reference`: each line's reference
    /// TFLOP/s, as [`LadderLine::cell`] takes it): a table of CPU rows shows no rung, speed-up,
    /// cuDNN or reference column of dashes.
    pub fn shown(lines: &[LadderLine], reference: &[Option<f64>]) -> Vec<LadderColumn> {
        Self::ALL
            .into_iter()
            .filter(|&c| {
                lines
                    .iter()
                    .enumerate()
                    .any(|(i, l)| l.cell(c, reference.get(i).copied().flatten()).is_some())
            })
            .collect()
    }
}

/// One layer's table.
#[derive(Debug, Clone, PartialEq)]
pub struct LadderTable {
    /// The layer.
    pub layer: LadderLayer,
    /// The fastest cuDNN at the report's batch (ours through cudarc or PyTorch's): name and ms.
    pub best_cudnn: Option<(String, f64)>,
    /// Rungs in order, then our other rows at the batch, cuDNN's through cudarc, the rows at
    /// another batch (CPU), then PyTorch's.
    pub lines: Vec<LadderLine>,
}

/// Our fastest tensor-core rung of a layer against the fastest cuDNN.
#[derive(Debug, Clone, PartialEq)]
pub struct OursVsCudnn {
    /// The layer.
    pub layer: LadderLayer,
    /// Our fastest of rungs 3 and 4: implementation and ms.
    pub ours: (String, f64),
    /// The fastest cuDNN: name and ms.
    pub cudnn: (String, f64),
    /// cuDNN's ms over ours (above 1: ours is faster).
    pub speedup: f64,
}

impl OursVsCudnn {
    /// The page's line: `conv2: ours 0.1234 ms (rung4) against cuDNN 0.0654 ms (cudnn_x):
    /// 1.89× slower`, the ratio in the one wording of [`crate::format::speedup_words`] (a
    /// slower layer read `0.53× slower`).
    pub fn sentence(&self) -> String {
        format!(
            "{}: ours {:.4} ms ({}) against cuDNN {:.4} ms ({}): {}",
            self.layer.name(),
            self.ours.1,
            self.ours.0,
            self.cudnn.1,
            self.cudnn.0,
            crate::format::speedup_words(self.speedup)
        )
    }
}

fn positive(ms: f64) -> bool {
    ms.is_finite() && ms > 0.0
}

impl ConvBench {
    /// Parses the JSON of `showdown bench conv --json-out`.
    pub fn parse(json: &str) -> std::result::Result<Self, ParseError> {
        parse_json(json, "convolution ladder")
    }

    /// PyTorch's rows on `layer` at our batch.
    pub fn peers_on(&self, layer: LadderLayer) -> impl Iterator<Item = &PeerConv> {
        self.peers
            .iter()
            .filter(move |p| p.layer() == Some(layer) && p.n == self.ours.batch)
    }

    /// Our rows on `layer` at the report's batch (the GPU rows).
    fn rows_at_batch(&self, layer: LadderLayer) -> impl Iterator<Item = &ConvRow> {
        self.ours
            .rows
            .iter()
            .filter(move |r| r.layer == layer.name() && r.batch == self.ours.batch)
    }

    /// Images per pass of the CPU rows (they run a few, not the GPU batch); `None` without
    /// CPU rows.
    pub fn cpu_batch(&self) -> Option<usize> {
        self.ours
            .rows
            .iter()
            .filter(|r| is_cpu_row(&r.implementation))
            .map(|r| r.batch)
            .max()
    }

    /// Whether the report has a GPU row (a rung, cuDNN, ...).
    pub fn has_gpu_rows(&self) -> bool {
        self.ours
            .rows
            .iter()
            .any(|r| !is_cpu_row(&r.implementation))
    }

    /// What ran, with each side's own batch: `forward convolution, batch 1024 on the GPU, 8
    /// images per pass on the CPU` (the GPU batch is left out when no GPU row ran).
    pub fn batch_statement(&self) -> String {
        let cpu = self
            .cpu_batch()
            .map(|b| format!("{b} image(s) per pass on the CPU"));
        match (self.has_gpu_rows(), cpu) {
            (true, Some(cpu)) => format!(
                "forward convolution, batch {} on the GPU, {cpu}",
                self.ours.batch
            ),
            (true, None) => format!("forward convolution, batch {} on the GPU", self.ours.batch),
            (false, Some(cpu)) => format!("forward convolution on the CPU alone, {cpu}"),
            (false, None) => "forward convolution (no rows)".into(),
        }
    }

    /// The layers with rows, in table order.
    pub fn layers(&self) -> Vec<LadderLayer> {
        LadderLayer::ALL
            .into_iter()
            .filter(|l| self.ours.rows.iter().any(|r| r.layer == l.name()))
            .collect()
    }

    /// The median ms of `rung` on `layer` at the report's batch.
    pub fn rung_ms(&self, layer: LadderLayer, rung: u8) -> Option<f64> {
        self.rows_at_batch(layer)
            .find(|r| r.rung == Some(rung))
            .map(|r| r.ms_p50)
    }

    /// The fastest cuDNN on `layer` at the report's batch, through cudarc or PyTorch: its name
    /// ([`PeerConv::label`] for PyTorch's) and ms.
    pub fn best_cudnn(&self, layer: LadderLayer) -> Option<(String, f64)> {
        self.rows_at_batch(layer)
            .filter(|r| r.is_cudnn())
            .map(|r| (r.implementation.clone(), r.ms_p50))
            .chain(self.peers_on(layer).map(|p| (p.label(), p.ms)))
            .filter(|(_, ms)| positive(*ms))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// `layer`'s table (every row, the CPU's included), None when the layer has no rows.
    pub fn table_of(&self, layer: LadderLayer) -> Option<LadderTable> {
        let mut rows: Vec<&ConvRow> = self
            .ours
            .rows
            .iter()
            .filter(|r| r.layer == layer.name())
            .collect();
        if rows.is_empty() {
            return None;
        }
        let batch = self.ours.batch;
        // Rungs first, in order; then our rows without a rung (the copy variants), cuDNN's,
        // and the rows at another batch (the CPU's). The sort is stable.
        rows.sort_by_key(|r| {
            let group = if r.batch != batch {
                2
            } else {
                u8::from(r.is_cudnn())
            };
            (
                group,
                if group == 0 {
                    r.rung.unwrap_or(u8::MAX)
                } else {
                    0
                },
            )
        });
        let best_cudnn = self.best_cudnn(layer);
        let vs = |ms: f64| {
            best_cudnn
                .as_ref()
                .filter(|_| positive(ms))
                .map(|(_, b)| b / ms)
        };
        let rung1 = self.rung_ms(layer, 1);
        let mut lines: Vec<LadderLine> = rows
            .into_iter()
            .map(|r| LadderLine {
                implementation: r.implementation.clone(),
                rung: r.rung,
                dtypes: format!("{}/{}", r.input_dtype, r.output_dtype),
                batch: r.batch,
                ms: r.ms_p50,
                ms_p99: Some(r.ms_p99),
                tflops: Some(r.tflops),
                gbps: Some(r.gbps),
                vs_rung1: r.speedup_vs_rung1,
                vs_cudnn: if r.batch == batch { vs(r.ms_p50) } else { None },
                is_cudnn: r.is_cudnn(),
                is_peer: false,
                note: r.note.clone(),
            })
            .collect();
        lines.extend(self.peers_on(layer).map(|p| LadderLine {
            implementation: p.label(),
            rung: None,
            dtypes: p.dtypes(),
            batch: p.n,
            ms: p.ms,
            ms_p99: None,
            tflops: p.tflops(),
            gbps: None,
            vs_rung1: rung1.filter(|_| positive(p.ms)).map(|r1| r1 / p.ms),
            vs_cudnn: vs(p.ms),
            is_cudnn: true,
            is_peer: true,
            note: Some("PyTorch, cuDNN benchmark mode".into()),
        }));
        Some(LadderTable {
            layer,
            best_cudnn,
            lines,
        })
    }

    /// One table per layer with rows, every row included (the terminal's table).
    pub fn tables(&self) -> Vec<LadderTable> {
        LadderLayer::ALL
            .into_iter()
            .filter_map(|l| self.table_of(l))
            .collect()
    }

    /// One table per layer with rows at the report's batch, the CPU rows (a few images, not the
    /// batch) left out (the page's tables).
    pub fn gpu_tables(&self) -> Vec<LadderTable> {
        let batch = self.ours.batch;
        self.tables()
            .into_iter()
            .filter_map(|mut t| {
                t.lines.retain(|l| l.batch == batch);
                (!t.lines.is_empty()).then_some(t)
            })
            .collect()
    }

    /// Per layer, our fastest of rungs 3 and 4 (on device) against the fastest cuDNN.
    pub fn ours_vs_cudnn(&self) -> Vec<OursVsCudnn> {
        LadderLayer::ALL
            .into_iter()
            .filter_map(|layer| {
                let ours = self
                    .rows_at_batch(layer)
                    .filter(|x| matches!(x.rung, Some(3) | Some(4)) && positive(x.ms_p50))
                    .min_by(|a, b| a.ms_p50.total_cmp(&b.ms_p50))?;
                let cudnn = self.best_cudnn(layer)?;
                Some(OursVsCudnn {
                    layer,
                    speedup: cudnn.1 / ours.ms_p50,
                    ours: (ours.implementation.clone(), ours.ms_p50),
                    cudnn,
                })
            })
            .collect()
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

    /// The checks that failed, as `layer implementation: relative error … > bound …`.
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

    /// The terminal table `showdown bench conv` prints: every row per layer, then our best
    /// against the best cuDNN per layer, then the checks.
    pub fn table(&self) -> String {
        let r = &self.ours;
        let mut o = String::new();
        let c = &r.ceilings;
        let _ = writeln!(
            o,
            "{} — convolution forward, batch {}, {}",
            r.device, r.batch, r.input_source
        );
        let _ = writeln!(
            o,
            "ceilings (same run): copy {:.0} GB/s; cuBLAS GEMM 8192³ FP16 {} TFLOP/s, FP32 {} TFLOP/s",
            c.copy_gbps,
            or_dash(c.gemm_f16_tflops, 0),
            or_dash(c.gemm_f32_tflops, 1),
        );
        let _ = writeln!(
            o,
            "{:<10} {:<34} {:>7} {:>6} {:>10} {:>10} {:>8} {:>7} {:>8}",
            "layer",
            "implementation",
            "in/out",
            "batch",
            "p50 ms",
            "p99 ms",
            "TFLOP/s",
            "GB/s",
            "x rung1"
        );
        for t in self.tables() {
            for x in &t.lines {
                if x.is_peer {
                    let _ = writeln!(
                        o,
                        "{:<10} {:<34} {:>7} {:>6} {:>10.4} {:>10} {:>8}",
                        t.layer.name(),
                        x.implementation,
                        x.dtypes,
                        x.batch,
                        x.ms,
                        "",
                        or_dash(x.tflops, 2),
                    );
                } else {
                    let _ = writeln!(
                        o,
                        "{:<10} {:<34} {:>7} {:>6} {:>10.4} {:>10} {:>8} {:>7} {:>8}",
                        t.layer.name(),
                        x.implementation,
                        x.dtypes,
                        x.batch,
                        x.ms,
                        or_dash(x.ms_p99, 4),
                        or_dash(x.tflops, 2),
                        or_dash(x.gbps, 0),
                        x.vs_rung1.map_or(String::new(), |s| format!("{s:.1}x")),
                    );
                }
            }
        }
        let _ = writeln!(
            o,
            "\nbest of ours (rungs 3-4, on device) vs the best cuDNN (cudarc or PyTorch benchmark mode):"
        );
        for v in self.ours_vs_cudnn() {
            let _ = writeln!(
                o,
                "  {:<10} ours {:.4} ms ({})  cuDNN {:.4} ms ({})  {:.2}x {}",
                v.layer.name(),
                v.ours.1,
                v.ours.0,
                v.cudnn.1,
                v.cudnn.0,
                v.speedup,
                if v.speedup > 1.0 { "faster" } else { "slower" }
            );
        }
        let (n, passed, _) = self.check_totals();
        let _ = writeln!(
            o,
            "\ncorrectness: {passed}/{n} checks within bounds (f64 reference of the stored inputs)"
        );
        for c in r.checks.iter().filter(|c| !c.ok) {
            let _ = writeln!(
                o,
                "  FAIL {} {}: max rel {:.2e} (bound {:.0e}, max abs {:.2e}), {} non-finite outputs",
                c.layer, c.implementation, c.max_rel, c.bound, c.max_abs, c.non_finite
            );
        }
        for s in &r.skipped {
            let _ = writeln!(o, "skipped: {s}");
        }
        if let Some(f) = &self.peer_failure {
            let _ = writeln!(o, "peer failed: {f}");
        }
        o
    }
}
