//! `showdown bench kernels`: the activation and norm kernels checked against f64 on awkward
//! shapes, then timed at 8192×4096 (CUDA events, p50/p90/p99, GB/s against the copy ceiling
//! measured in the same run); with `--reference DIR` (or `--peer-log F`) PyTorch eager and
//! torch.compile (`anchor_kernels.py`) beside each row, with the ratios.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

/// One elementwise/norm row of `anchor_kernels.py`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerOp {
    /// `torch-eager` or `torch-compile-triton`.
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

/// The op rows of an `anchor_kernels.py` output (other kinds and broken lines are skipped).
pub fn parse_peer_ops(stdout: &str) -> Vec<PeerOp> {
    stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('{') && l.contains("\"op\""))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some("op"))
        .filter_map(|v| serde_json::from_value::<PeerOp>(v).ok())
        .filter(|r| r.ms.is_finite() && r.ms > 0.0)
        .collect()
}

/// The peer's GB/s for our (op, dtype, shape) row, by implementation.
fn peer_gbps(
    peers: &[PeerOp],
    implementation: &str,
    op: &str,
    dtype: &str,
    shape: [usize; 2],
) -> Option<f64> {
    let op = if op == "layernorm_gelu" {
        "ln_gelu"
    } else {
        op
    };
    let dtype = if dtype == "f16" { "float16" } else { "float32" };
    peers
        .iter()
        .find(|p| {
            p.implementation == implementation && p.op == op && p.dtype == dtype && p.shape == shape
        })
        .map(|p| p.gbps)
}

/// Options of `bench kernels`.
#[derive(Debug, Args)]
pub struct KernelsArgs {
    /// Rows of the timed matrix.
    #[arg(long, default_value_t = 8192)]
    pub rows: usize,
    /// Columns of the timed matrix.
    #[arg(long, default_value_t = 4096)]
    pub cols: usize,
    /// Timed repetitions per kernel.
    #[arg(long, default_value_t = 100)]
    pub reps: usize,
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Folder of anchor_kernels.py (PyTorch eager and torch.compile, run after ours).
    #[arg(long)]
    pub reference: Option<PathBuf>,
    /// A saved anchor_kernels.py output (same device call) to read instead of running it.
    #[arg(long)]
    pub peer_log: Option<PathBuf>,
    /// Python interpreter with PyTorch, for the peer.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON here (`bench plot --kernels` reads it).
    #[arg(long)]
    pub json_out: Option<PathBuf>,
}

/// Ours (device, checks, timings) as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct KernelsOurs<C: Serialize, B: Serialize> {
    /// The GPU.
    pub device: String,
    /// Correctness checks.
    pub checks: Vec<C>,
    /// Timings (the `copy` row is the ceiling).
    pub bench: Vec<B>,
}

/// What `--json`/`--json-out` hold.
#[derive(Debug, Serialize)]
pub struct KernelsBench<C: Serialize, B: Serialize> {
    /// Ours.
    pub ours: KernelsOurs<C, B>,
    /// PyTorch rows of the same call.
    pub peers: Vec<PeerOp>,
    /// Why the peers are missing, if they are.
    pub peer_failure: Option<String>,
}

/// The peers' rows: from the log, or by running anchor_kernels.py, or none.
fn peers(a: &KernelsArgs) -> Result<(Vec<PeerOp>, Option<String>)> {
    Ok(match (&a.peer_log, &a.reference) {
        (Some(log), _) => {
            let text = std::fs::read_to_string(log)
                .with_context(|| format!("reading {}", log.display()))?;
            (parse_peer_ops(&text), None)
        }
        (None, Some(dir)) => match crate::bench_conv::run_peer(&a.python, dir) {
            Ok(out) => (parse_peer_ops(&out), None),
            Err(e) => (Vec::new(), Some(e)),
        },
        _ => (Vec::new(), None),
    })
}

/// Runs the checks and timings, then the peer, and prints.
#[cfg(feature = "cuda")]
pub fn run(a: KernelsArgs) -> Result<()> {
    use compute::cuda::lab::{KernelLab, LabDtype, Op, CHECK_SHAPES};
    use compute::ComputeError;
    if a.rows == 0 || a.cols == 0 || a.reps == 0 {
        return Err(ComputeError::bad_arg(
            "--rows/--cols/--reps",
            format!("{}/{}/{}", a.rows, a.cols, a.reps),
            "must be at least 1",
        )
        .into());
    }
    let lab = KernelLab::new(a.device)?;
    let mut checks = Vec::new();
    for op in Op::ALL {
        for dt in [LabDtype::F32, LabDtype::F16] {
            for [r, c] in CHECK_SHAPES {
                checks.push(lab.check(op, dt, r, c)?);
            }
        }
    }
    let bench = lab.bench(a.rows, a.cols, a.reps)?;
    let (peers, peer_failure) = peers(&a)?;
    let out = KernelsBench {
        ours: KernelsOurs {
            device: lab.device.clone(),
            checks,
            bench,
        },
        peers,
        peer_failure,
    };
    if let Some(p) = &a.json_out {
        std::fs::write(p, serde_json::to_string_pretty(&out)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", table(&out));
    }
    if out.ours.checks.iter().any(|c| !c.ok) {
        anyhow::bail!("a kernel exceeded its error bound");
    }
    Ok(())
}

/// Without the CUDA backend there are no kernels to run.
#[cfg(not(feature = "cuda"))]
pub fn run(_: KernelsArgs) -> Result<()> {
    Err(crate::peer::no_cuda_backend())
}

/// The table: the checks, then each timed row with the peers beside it.
#[cfg(feature = "cuda")]
pub fn table(
    b: &KernelsBench<compute::cuda::lab::CheckRow, compute::cuda::lab::BenchRow>,
) -> String {
    let mut o = String::new();
    let r = &b.ours;
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
    let bad = r.checks.iter().filter(|c| !c.ok).count();
    let _ = writeln!(
        o,
        "correctness: {}/{} checks within bounds",
        r.checks.len() - bad,
        r.checks.len()
    );
    let copy = r.bench.iter().find(|x| x.op == "copy");
    let shape = copy.map(|c| c.shape).unwrap_or([0, 0]);
    let _ = writeln!(
        o,
        "\ntimings, {}×{}, GB/s = (read + write) / median; copy ceiling (same run) {} GB/s{}",
        shape[0],
        shape[1],
        copy.map_or("–".into(), |c| format!("{:.0}", c.gbps)),
        if b.peers.is_empty() {
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
    let fmt = |v: Option<f64>| v.map_or("–".to_string(), |g| format!("{g:.0}"));
    let ratio =
        |ours: f64, v: Option<f64>| v.map_or("–".to_string(), |g| format!("{:.2}x", ours / g));
    for x in r.bench.iter().filter(|x| x.op != "copy") {
        let e = peer_gbps(&b.peers, "torch-eager", &x.op, &x.dtype, x.shape);
        let c = peer_gbps(&b.peers, "torch-compile-triton", &x.op, &x.dtype, x.shape);
        let _ = writeln!(
            o,
            "  {:<15} {:<4} {:>9.4} {:>9.4} {:>7.0} {:>6.1}% | {:>6} {:>7} | {:>8} {:>10}",
            x.op,
            x.dtype,
            x.ms_p50,
            x.ms_p99,
            x.gbps,
            x.of_copy * 100.0,
            fmt(e),
            fmt(c),
            ratio(x.gbps, e),
            ratio(x.gbps, c)
        );
    }
    if let Some(f) = &b.peer_failure {
        let _ = writeln!(o, "peer failed: {f}");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_rows_are_read_and_matched_by_op_dtype_and_shape() {
        let log = r#"{"kind": "ceiling", "name": "d2d_copy_1GiB", "ms": 0.7, "gbps": 3000}
{"kind": "op", "impl": "torch-eager", "op": "ln_gelu", "dtype": "float16", "shape": [8192, 4096], "ms": 0.11, "gbps": 1168.0}
{"kind": "op", "impl": "torch-compile-triton", "op": "relu", "dtype": "float32", "shape": [8192, 4096], "ms": 0.09, "gbps": 2836.0}
{"kind": "conv", "impl": "cudnn", "N": 10000, "cin": 32, "cout": 64, "hw": 13, "k": 3, "dtype": "float16", "channels_last": true, "tf32": true, "ms": 0.137}
{"kind": "op", "impl": "torch-eager", "op": "relu", "dtype": "float32", "shape": [8192, 4096], "ms": -1, "gbps": 1}
broken {"#;
        let p = parse_peer_ops(log);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(
            peer_gbps(&p, "torch-eager", "layernorm_gelu", "f16", [8192, 4096]),
            Some(1168.0)
        );
        assert_eq!(
            peer_gbps(&p, "torch-compile-triton", "relu", "f32", [8192, 4096]),
            Some(2836.0)
        );
        assert_eq!(
            peer_gbps(&p, "torch-compile-triton", "relu", "f32", [4096, 4096]),
            None
        );
        assert_eq!(
            peer_gbps(&p, "torch-eager", "relu", "f32", [8192, 4096]),
            None,
            "a non-positive time is dropped"
        );
    }
}
