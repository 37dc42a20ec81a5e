//! `showdown bench crossover`: the precision crossover (issue 39). The same square GEMM at
//! growing sizes in every precision (cuBLASLt on a GPU; the CPU backend's GEMMs without one)
//! and the lab CNN's own GEMMs, each checked against f64; prints a table of TFLOP/s, speed-ups
//! and regimes, and the sentences saying where each precision starts to pay on this machine.
//! The job is the engine's (`compute::lab::crossover`, the same function Act II runs); the
//! report and its table are the core's (`compute::bench::crossover`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use compute::protocol::CrossoverRequest;
use compute::types::{BackendChoice, Precision};

/// Options of `bench crossover`.
#[derive(Debug, Args)]
pub struct CrossoverArgs {
    /// Square sizes N, comma-separated (16 to 16384, at most 4096 on the CPU); default
    /// 64…16384 on a GPU, 32…1024 on the CPU.
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<usize>,
    /// Precisions, comma-separated: fp32, tf32, bf16, fp16, fp8 (what the device cannot run
    /// is reported skipped with the reason).
    #[arg(long, value_delimiter = ',', default_value = "fp32,tf32,bf16,fp16,fp8")]
    pub precisions: Vec<Precision>,
    /// auto (GPU if usable), cpu or cuda.
    #[arg(long, default_value = "auto")]
    pub backend: BackendChoice,
    /// Leave out the lab CNN's own GEMMs.
    #[arg(long)]
    pub no_cnn: bool,
    /// Leave out the lab CNN's whole training step at batches 128 to 8192 (GPU only).
    #[arg(long)]
    pub no_steps: bool,
    /// Run PyTorch (torch.matmul, torch._scaled_mm) at the same sizes beside ours.
    #[arg(long)]
    pub peer: bool,
    /// Python interpreter with a CUDA-enabled PyTorch, for `--peer`.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON here.
    #[arg(long)]
    pub json_out: Option<PathBuf>,
}

/// The request the arguments describe.
pub fn request(a: &CrossoverArgs) -> CrossoverRequest {
    CrossoverRequest {
        sizes: a.sizes.clone(),
        precisions: a.precisions.clone(),
        backend: a.backend,
        include_peer: a.peer,
        include_cnn: !a.no_cnn,
        include_steps: !a.no_steps,
    }
}

/// Runs the sweep and prints it.
pub fn run(a: CrossoverArgs) -> Result<()> {
    let req = request(&a);
    let python = a.peer.then_some(a.python.as_str());
    let report = crate::lab_cli::with_job("crossover", |job| {
        compute::lab::crossover::run_crossover(&req, a.device, python, job)
    })?;
    crate::lab_cli::write_json(&report, a.json_out.as_deref())?;
    if a.json {
        crate::print_json(&report)
    } else {
        print!("{}", compute::bench::crossover::table(&report));
        Ok(())
    }
}
