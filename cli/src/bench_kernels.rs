//! `showdown bench kernels`: the activation and norm kernels checked against f64 on awkward
//! shapes, then timed at 8192×4096 (CUDA events, p50/p90/p99, GB/s against the copy ceiling
//! measured in the same run); with `--reference DIR` (or `--peer-log F`) PyTorch eager and
//! torch.compile (`anchor_kernels.py`) beside each row, with the ratios. The report, the
//! pairing and the table are the core's (`compute::bench::kernels`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use compute::bench::kernels::{parse_peer_ops, PeerOp};

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
    use compute::bench::kernels::{KernelsBench, KernelsOurs};
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
        print!("{}", out.table());
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
