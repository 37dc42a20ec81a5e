//! `showdown bench infer`: the CNN variant switch. Each variant of the lab CNN (ReLU, GELU,
//! Swish after the convolutions) is trained on the CPU backend, its logits on the test split
//! computed there (FP32), then run on the GPU (FP16: rung-4 tensor-core convolutions, fused
//! bias/activation/pool, dense) and held against them; then timed per batch size as five
//! launches and as a replayed CUDA graph. With `--peer`, PyTorch (`bench/infer_peer.py`, built
//! in) runs the same weights on the same images at the same batch sizes in the same call. The
//! job is the engine's (`compute::lab::infer`, the same function Act III runs); the report,
//! the peer's lines and the table are the core's.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use compute::model::Activation;
use compute::protocol::InferBenchRequest;

/// Options of `bench infer`.
#[derive(Debug, Args)]
pub struct InferArgs {
    /// Variants, comma-separated: relu, gelu, swish.
    #[arg(long, value_delimiter = ',', default_value = "relu,gelu,swish")]
    pub activations: Vec<Activation>,
    /// Batch sizes, comma-separated (capped to the test split).
    #[arg(long, value_delimiter = ',', default_value = "1,32,128,1024,10000")]
    pub batches: Vec<usize>,
    /// mnist-sample (embedded), fashion-mnist or mnist.
    #[arg(long, default_value = "mnist-sample")]
    pub dataset: String,
    /// Read the four standard IDX files (gz or not) from this folder.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Training epochs per variant (CPU backend, FP32, batch 128).
    #[arg(long, default_value_t = 1)]
    pub epochs: usize,
    /// Train on the first N training images.
    #[arg(long)]
    pub train_limit: Option<usize>,
    /// Seed of the weights, shuffles and dropout.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Time budget per row, ms (at least 20 passes, at most --max-reps).
    #[arg(long, default_value_t = 300.0)]
    pub budget_ms: f64,
    /// Timed passes at most per row.
    #[arg(long, default_value_t = 2000)]
    pub max_reps: usize,
    /// Run the PyTorch peer (bench/infer_peer.py, built in) on the same weights after ours.
    #[arg(long)]
    pub peer: bool,
    /// Batches at which the peer also times torch.compile (slow to compile), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub compile_batches: Vec<usize>,
    /// Python interpreter with PyTorch, for the peer.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Also write the trained weights (JSON, what the peer reads) here.
    #[arg(long)]
    pub weights_out: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON here.
    #[arg(long)]
    pub json_out: Option<PathBuf>,
}

/// Trains, checks, times, runs the peer, prints.
pub fn run(a: InferArgs) -> Result<()> {
    let req = InferBenchRequest {
        activations: a.activations.clone(),
        batches: a.batches.clone(),
        dataset: a.dataset.clone(),
        epochs: a.epochs,
        train_limit: a.train_limit,
        budget_ms: a.budget_ms,
        max_reps: a.max_reps,
        peers: a.peer,
        compile_batches: a.compile_batches.clone(),
        seed: a.seed,
    };
    if let Some(dir) = &a.data_dir {
        crate::bench_conv::check_data_dir(dir)?;
    }
    let data = compute::data::load(&a.dataset, a.data_dir.as_deref())?;
    let report = crate::lab_cli::with_job("infer_bench", |job| {
        compute::lab::infer::run_infer_bench(
            &req,
            data,
            a.device,
            Some(&a.python),
            a.weights_out.as_deref(),
            job,
        )
    })?;
    crate::lab_cli::write_json(&report, a.json_out.as_deref())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.table());
    }
    if report.variants.iter().any(|v| !v.check.ok) {
        anyhow::bail!("the GPU's logits disagree with the CPU's beyond the bounds");
    }
    Ok(())
}
