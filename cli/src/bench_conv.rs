//! `showdown bench conv`: the convolution ladder (rungs 1–5, cuDNN through cudarc, the CPU
//! rows) and, with `--reference`, cuDNN through PyTorch (`anchor_kernels.py`, benchmark mode)
//! in the same call, side by side. The report, the peer's labels and the table are the core's
//! (`compute::bench::conv`).

use std::path::{Path, PathBuf};

use anyhow::Result;

/// Runs `anchor_kernels.py` from `dir` with `python`; its stdout, or why it failed.
pub(crate) fn run_peer(python: &str, dir: &Path) -> Result<String, String> {
    let script = dir.join("anchor_kernels.py");
    if !script.is_file() {
        return Err(format!("{}: no such file", script.display()));
    }
    let out = crate::peer::run_script(python, &script, [] as [&str; 0])?;
    crate::peer::stdout_or_failure(&script, out)
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
    use anyhow::Context;
    use compute::bench::conv::{parse_peer_convs, ConvBench, LadderLayer};
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
        print!("{}", bench.table());
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
