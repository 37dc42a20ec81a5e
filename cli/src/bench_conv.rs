//! `showdown bench conv`: the convolution ladder (rungs 1–5, cuDNN through cudarc, the CPU
//! rows) and, with `--peer`, cuDNN through PyTorch (`bench/anchor_kernels.py --part conv`) in
//! the same call, side by side. The job is the engine's (`compute::lab::ladder`, the same
//! function Act III runs); the report, the peer's labels and the table are the core's
//! (`compute::bench::conv`). `--data-dir` (here and in `bench anatomy` and `bench infer`) is
//! checked and handed to the lab job by [`lab_data_dir`].

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use compute::bench::conv::parse_peer_convs;
use compute::protocol::ConvLadderRequest;
use compute::types::BackendChoice;
use compute::ComputeError;

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
    /// Read the data set's four IDX files from this folder.
    pub data_dir: Option<PathBuf>,
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
    let data_dir = lab_data_dir(a.data_dir.as_deref())?;
    let req = ConvLadderRequest {
        batch: a.batch,
        layers: a.layers.clone(),
        reps: a.reps,
        cpu_batch: a.cpu_batch.max(1),
        backend: BackendChoice::Cuda,
        dataset: a.dataset.clone(),
        data_dir,
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

/// Refuses a `--data-dir` that is not a folder holding the four standard IDX files (gz or
/// not), naming the flag, the folder and the first missing file. The files' contents are
/// checked by the loader.
pub fn check_data_dir(dir: &Path) -> Result<(), ComputeError> {
    let shown = dir.display();
    if !dir.is_dir() {
        return Err(ComputeError::bad_arg(
            "--data-dir",
            shown,
            "not a folder (it should hold the four standard IDX files, gz or not: \
             train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, \
             t10k-labels-idx1-ubyte)",
        ));
    }
    for stem in compute::data::STANDARD_FILES {
        let found = [format!("{stem}.gz"), stem.to_string()]
            .iter()
            .any(|n| dir.join(n).is_file());
        if !found {
            return Err(ComputeError::bad_arg(
                "--data-dir",
                shown,
                format!(
                    "the folder holds no {} (nor {})",
                    dir.join(format!("{stem}.gz")).display(),
                    dir.join(stem).display()
                ),
            ));
        }
    }
    Ok(())
}

/// Checks `--data-dir` ([`check_data_dir`]) and gives it as the lab job's `data_dir` (the
/// request field the HTTP and stdio doors carry too).
pub fn lab_data_dir(dir: Option<&Path>) -> Result<Option<String>, ComputeError> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    check_data_dir(dir)?;
    Ok(Some(dir.display().to_string()))
}
