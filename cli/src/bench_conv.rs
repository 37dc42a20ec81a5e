//! `showdown bench conv`: the convolution ladder (rungs 1–5, cuDNN through cudarc, the CPU
//! rows) and, with `--reference`, cuDNN through PyTorch (`anchor_kernels.py`, benchmark mode)
//! in the same call, side by side.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use compute::conv_ladder::{ConvLadderReport, LadderLayer};
use serde::{Deserialize, Serialize};

/// One convolution row of `anchor_kernels.py`.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    pub channels_last: bool,
    /// TF32 allowed.
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
    /// A short label: `pytorch_cudnn_f16_channels_last`.
    pub fn label(&self) -> String {
        let dt = if self.dtype == "float16" {
            "f16"
        } else {
            "f32"
        };
        let mut s = format!("pytorch_cudnn_{dt}");
        if self.channels_last {
            s.push_str("_channels_last");
        }
        if self.dtype == "float32" {
            s.push_str(if self.tf32 { "_tf32" } else { "_strict" });
        }
        s
    }
}

/// What `--json`/`--json-out` hold.
#[derive(Debug, Serialize)]
pub struct ConvBench {
    /// Our ladder, cuDNN through cudarc, the CPU rows.
    pub ours: ConvLadderReport,
    /// cuDNN through PyTorch at our batch.
    pub peers: Vec<PeerConv>,
    /// Why the peers are missing, if they are.
    pub peer_failure: Option<String>,
}

/// The convolution rows of an `anchor_kernels.py` output.
pub fn parse_peer_convs(stdout: &str) -> Vec<PeerConv> {
    stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('{') && l.contains("\"conv\""))
        .filter_map(|l| serde_json::from_str::<PeerConv>(l).ok())
        .filter(|r| r.ms.is_finite() && r.ms > 0.0)
        .collect()
}

/// Runs `anchor_kernels.py` from `dir` with `python`; its stdout, or why it failed.
pub(crate) fn run_peer(python: &str, dir: &Path) -> Result<String, String> {
    let script = dir.join("anchor_kernels.py");
    if !script.is_file() {
        return Err(format!("{}: no such file", script.display()));
    }
    let out = crate::peer::run_script(python, &script, [] as [&str; 0])?;
    crate::peer::stdout_or_failure(&script, out)
}

/// The table: every row per layer, then our best against the best cuDNN per layer.
pub fn table(b: &ConvBench) -> String {
    use std::fmt::Write;
    let r = &b.ours;
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
        c.gemm_f16_tflops.map_or("–".into(), |v| format!("{v:.0}")),
        c.gemm_f32_tflops.map_or("–".into(), |v| format!("{v:.1}")),
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
    for layer in LadderLayer::ALL {
        let rows: Vec<_> = r.rows.iter().filter(|x| x.layer == layer.name()).collect();
        if rows.is_empty() {
            continue;
        }
        for x in rows {
            let _ = writeln!(
                o,
                "{:<10} {:<34} {:>7} {:>6} {:>10.4} {:>10.4} {:>8.2} {:>7.0} {:>8}",
                x.layer,
                x.implementation,
                format!("{}/{}", x.input_dtype, x.output_dtype),
                x.batch,
                x.ms_p50,
                x.ms_p99,
                x.tflops,
                x.gbps,
                x.speedup_vs_rung1.map_or("".into(), |s| format!("{s:.1}x")),
            );
        }
        for p in b
            .peers
            .iter()
            .filter(|p| p.layer() == Some(layer) && p.n == r.batch)
        {
            let _ = writeln!(
                o,
                "{:<10} {:<34} {:>7} {:>6} {:>10.4} {:>10} {:>8.2}",
                layer.name(),
                p.label(),
                if p.dtype == "float16" {
                    "f16/f16"
                } else {
                    "f32/f32"
                },
                p.n,
                p.ms,
                "",
                compute::conv_ladder::conv_flops(&layer.shape(), p.n) / (p.ms * 1e-3) / 1e12,
            );
        }
    }
    let _ = writeln!(o, "\nbest of ours (rungs 3-4, on device) vs the best cuDNN (cudarc or PyTorch benchmark mode):");
    for layer in LadderLayer::ALL {
        let ours = r
            .rows
            .iter()
            .filter(|x| x.layer == layer.name() && matches!(x.rung, Some(3) | Some(4)))
            .min_by(|a, b| a.ms_p50.total_cmp(&b.ms_p50));
        let lib = r
            .rows
            .iter()
            .filter(|x| x.layer == layer.name() && x.implementation.starts_with("cudnn"))
            .map(|x| (x.implementation.clone(), x.ms_p50))
            .chain(
                b.peers
                    .iter()
                    .filter(|p| p.layer() == Some(layer) && p.n == r.batch)
                    .map(|p| (p.label(), p.ms)),
            )
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(ours), Some((name, ms))) = (ours, lib) {
            let _ = writeln!(
                o,
                "  {:<10} ours {:.4} ms ({})  cuDNN {:.4} ms ({})  {:.2}x {}",
                layer.name(),
                ours.ms_p50,
                ours.implementation,
                ms,
                name,
                ms / ours.ms_p50,
                if ours.ms_p50 < ms { "faster" } else { "slower" }
            );
        }
    }
    let bad: Vec<_> = r.checks.iter().filter(|c| !c.ok).collect();
    let _ = writeln!(
        o,
        "\ncorrectness: {}/{} checks within bounds (f64 reference of the stored inputs)",
        r.checks.len() - bad.len(),
        r.checks.len()
    );
    for c in bad {
        let _ = writeln!(
            o,
            "  FAIL {} {}: max rel {:.2e} (bound {:.0e}, max abs {:.2e}), {} non-finite outputs",
            c.layer, c.implementation, c.max_rel, c.bound, c.max_abs, c.non_finite
        );
    }
    for s in &r.skipped {
        let _ = writeln!(o, "skipped: {s}");
    }
    if let Some(f) = &b.peer_failure {
        let _ = writeln!(o, "peer failed: {f}");
    }
    o
}

/// Options of `bench conv`.
pub struct ConvArgs {
    /// Images per pass.
    pub batch: usize,
    /// Timed passes at most.
    pub reps: usize,
    /// Layers.
    pub layers: Vec<String>,
    /// GPU.
    pub device: usize,
    /// Data set for the image layers.
    pub dataset: String,
    /// Its folder.
    pub data_dir: Option<PathBuf>,
    /// Images for the CPU rows.
    pub cpu_batch: usize,
    /// Folder of anchor_kernels.py.
    pub reference: Option<PathBuf>,
    /// A saved anchor_kernels.py output to read instead of running it.
    pub peer_log: Option<PathBuf>,
    /// Python for the peer.
    pub python: String,
    /// Print JSON.
    pub json: bool,
    /// Also write the JSON here.
    pub json_out: Option<PathBuf>,
}

/// Runs the ladder, then the peer, and prints.
#[cfg(feature = "cuda")]
pub fn run(a: ConvArgs) -> Result<()> {
    use compute::cuda::conv_ladder::{ConvLab, LadderOptions};
    use compute::ComputeError;
    if a.batch == 0 || a.reps == 0 {
        return Err(ComputeError::bad_arg(
            "--batch/--reps",
            format!("{}/{}", a.batch, a.reps),
            "must be at least 1",
        )
        .into());
    }
    let layers = if a.layers.is_empty() {
        LadderLayer::ALL.to_vec()
    } else {
        a.layers
            .iter()
            .map(|l| LadderLayer::parse(l))
            .collect::<Result<Vec<_>, _>>()?
    };
    let data = compute::data::load(&a.dataset, a.data_dir.as_deref())?;
    let lab = ConvLab::new(a.device)?;
    let opts = LadderOptions {
        batch: a.batch,
        reps: a.reps,
        budget_ms: 1500.0,
        layers: layers.clone(),
        check_images: 6,
    };
    eprintln!("{}: the ladder at batch {} …", lab.device, a.batch);
    let mut ours = lab.run(&opts, &data)?;
    for &layer in &layers {
        let input = compute::conv_ladder::ladder_input(layer, a.cpu_batch.max(1), &data, 42)?;
        let (rows, check) = compute::conv_ladder::cpu_rows(layer, &input, a.cpu_batch.max(1), 3);
        ours.rows.extend(rows);
        ours.checks.push(check);
    }
    let (peers, peer_failure) = match (&a.peer_log, &a.reference) {
        (Some(log), _) => {
            let text = std::fs::read_to_string(log)
                .with_context(|| format!("reading {}", log.display()))?;
            (parse_peer_convs(&text), None)
        }
        (None, Some(dir)) => match run_peer(&a.python, dir) {
            Ok(out) => (parse_peer_convs(&out), None),
            Err(e) => (Vec::new(), Some(e)),
        },
        _ => (Vec::new(), None),
    };
    let bench = ConvBench {
        ours,
        peers,
        peer_failure,
    };
    if let Some(p) = &a.json_out {
        std::fs::write(p, serde_json::to_string_pretty(&bench)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&bench)?);
    } else {
        print!("{}", table(&bench));
    }
    if bench.ours.checks.iter().any(|c| !c.ok) {
        anyhow::bail!("a convolution exceeded its error bound");
    }
    Ok(())
}

/// Without the CUDA backend there is no ladder to run.
#[cfg(not(feature = "cuda"))]
pub fn run(_: ConvArgs) -> Result<()> {
    Err(crate::peer::no_cuda_backend())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_rows_parse_and_map_onto_layers() {
        let out = r#"{"kind": "ceiling", "name": "d2d_copy_1GiB", "ms": 0.7, "gbps": 2999}
{"kind": "conv", "impl": "cudnn", "N": 10000, "cin": 32, "cout": 64, "hw": 13, "k": 3, "dtype": "float16", "channels_last": true, "tf32": true, "ms": 0.137, "tflops": 300}
{"kind": "conv", "impl": "cudnn", "N": 10000, "cin": 1, "cout": 4, "hw": 86, "k": 7, "dtype": "float32", "channels_last": false, "tf32": false, "ms": 7.7, "tflops": 3}
not json
{"kind": "conv", "impl": "cudnn", "N": 10000, "cin": 3, "cout": 3, "hw": 9, "k": 3, "dtype": "float32", "channels_last": false, "tf32": false, "ms": 1.0}"#;
        let rows = parse_peer_convs(out);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].layer(), Some(LadderLayer::LabConv2));
        assert_eq!(rows[0].label(), "pytorch_cudnn_f16_channels_last");
        assert_eq!(rows[1].layer(), Some(LadderLayer::LenetC1));
        assert_eq!(rows[1].label(), "pytorch_cudnn_f32_strict");
        assert_eq!(rows[2].layer(), None);
    }
}
