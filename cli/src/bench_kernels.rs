//! `showdown bench kernels`: the activation and norm kernels checked against f64 on awkward
//! shapes, then timed (CUDA events, p50/p90/p99, GB/s against the copy ceiling measured in the
//! same run); with `--peer` (or `--peer-log F`) PyTorch eager, torch.compile and our kernels
//! hand-written in Triton (`bench/anchor_kernels.py`, which runs `bench/triton_kernels.py` and
//! checks each Triton kernel against f64 before timing it) beside each row, with the ratios
//! (ours ÷ each; a Triton kernel that failed its check reads "check failed"). `bench plot
//! --kernels` draws the per-kernel speed-up chart of the saved JSON. The job is the engine's
//! (`compute::lab::kernels`, the same function Act III runs); the report, the pairing and the
//! table are the core's (`compute::bench::kernels`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use compute::lab::kernels::PeerRows;
use compute::protocol::KernelBenchRequest;

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
    /// Run PyTorch eager, torch.compile and the Triton kernels (bench/anchor_kernels.py and
    /// bench/triton_kernels.py, built in) after ours.
    #[arg(long)]
    pub peer: bool,
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

/// Runs the checks and timings, then the peer, and prints.
pub fn run(a: KernelsArgs) -> Result<()> {
    let req = KernelBenchRequest {
        rows: a.rows,
        cols: a.cols,
        reps: a.reps,
        peers: a.peer && a.peer_log.is_none(),
        ..KernelBenchRequest::default()
    };
    let mut out = crate::lab_cli::with_job("kernel_bench", |job| {
        compute::lab::kernels::run_kernel_bench(&req, a.device, Some(&a.python), job)
    })?;
    if let Some(log) = &a.peer_log {
        let text =
            std::fs::read_to_string(log).with_context(|| format!("reading {}", log.display()))?;
        let peer = PeerRows::of_output(&text);
        out.peers = peer.rows;
        out.triton_failure = peer.triton_failure;
    }
    crate::lab_cli::write_json(&out, a.json_out.as_deref())?;
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
