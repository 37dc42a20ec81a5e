//! `showdown bench conv`: the convolution ladder (rungs 1–5, cuDNN through cudarc, the CPU
//! rows) and, with `--peer`, cuDNN through PyTorch (`bench/anchor_kernels.py --part conv`) in
//! the same call, side by side. The job is the engine's (`compute::lab::ladder`, the same
//! function Act III runs); the report, the peer's labels and the table are the core's
//! (`compute::bench::conv`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use compute::bench::conv::parse_peer_convs;
use compute::protocol::ConvLadderRequest;
use compute::types::BackendChoice;

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
    /// Images for the CPU rows.
    pub cpu_batch: usize,
    /// Run the peer.
    pub peer: bool,
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
pub fn run(a: ConvArgs) -> Result<()> {
    let req = ConvLadderRequest {
        batch: a.batch,
        layers: a.layers.clone(),
        reps: a.reps,
        cpu_batch: a.cpu_batch.max(1),
        backend: BackendChoice::Cuda,
        dataset: a.dataset.clone(),
        peers: a.peer && a.peer_log.is_none(),
    };
    let mut bench = crate::lab_cli::with_job("conv_ladder", |job| {
        compute::lab::ladder::run_ladder(&req, a.device, Some(&a.python), job)
    })?;
    if let Some(log) = &a.peer_log {
        let text =
            std::fs::read_to_string(log).with_context(|| format!("reading {}", log.display()))?;
        bench.peers = parse_peer_convs(&text);
    }
    crate::lab_cli::write_json(&bench, a.json_out.as_deref())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&bench)?);
    } else {
        print!("{}", bench.table());
    }
    if bench.ours.checks.iter().any(|c| !c.ok) {
        anyhow::bail!("a convolution exceeded its error bound");
    }
    Ok(())
}
