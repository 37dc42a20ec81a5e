//! `showdown bench anatomy`: one training step of the lab CNN taken apart, per precision, side
//! by side: on the GPU every kernel launched one at a time between two CUDA events (outside the
//! step's graph) beside the graph-replayed step; on the CPU every primitive on the host clock.
//! Prints each contestant's launches, their sum, the launched step, the graph step and the gap,
//! then each kernel role's time per contestant with its ratio to the first; `--trace-out FILE`
//! writes Chrome trace-event JSON that Perfetto (<https://ui.perfetto.dev>) and
//! `chrome://tracing` open. The job is the engine's (`compute::lab::anatomy`, the same function
//! Act III runs); the report, its trace and its tables are the core's
//! (`compute::bench::anatomy`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use compute::model::Activation;
use compute::protocol::StepAnatomyRequest;
use compute::types::{BackendChoice, Precision};

/// Options of `bench anatomy`.
#[derive(Debug, Args)]
pub struct AnatomyArgs {
    /// Contestants, comma-separated: fp32, fp16, tf32, bf16 (the CPU backend leaves out what it
    /// cannot train in, with a note).
    #[arg(long, value_delimiter = ',', default_value = "fp32,fp16")]
    pub precisions: Vec<Precision>,
    /// auto (GPU if usable), cpu or cuda.
    #[arg(long, default_value = "auto")]
    pub backend: BackendChoice,
    /// mnist-sample (embedded), fashion-mnist or mnist: the data set the step's batches come
    /// from.
    #[arg(long, default_value = "mnist-sample")]
    pub dataset: String,
    /// Read the four standard IDX files (gz or not) from this folder.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Images per step.
    #[arg(long, default_value_t = 128)]
    pub batch: usize,
    /// Steps timed per contestant (1 to 1000); each launch's figures are medians over them.
    #[arg(long, default_value_t = 20)]
    pub steps: usize,
    /// The CNN variant: relu, gelu or swish.
    #[arg(long, default_value = "relu")]
    pub activation: Activation,
    /// Print JSON instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON here.
    #[arg(long)]
    pub json_out: Option<PathBuf>,
    /// Write the Chrome trace-event JSON here (open it in https://ui.perfetto.dev).
    #[arg(long)]
    pub trace_out: Option<PathBuf>,
}

/// Runs the anatomy and prints it.
pub fn run(a: AnatomyArgs) -> Result<()> {
    let data_dir = crate::bench_conv::lab_data_dir(a.data_dir.as_deref())?;
    let req = StepAnatomyRequest {
        precisions: a.precisions,
        backend: a.backend,
        dataset: a.dataset,
        data_dir,
        batch: a.batch,
        steps: a.steps,
        activation: a.activation,
    };
    let report = crate::lab_cli::with_job("step_anatomy", |job| {
        compute::lab::anatomy::run_step_anatomy(&req, job)
    })?;
    crate::lab_cli::write_json(&report, a.json_out.as_deref())?;
    if let Some(p) = &a.trace_out {
        std::fs::write(p, report.trace_json())
            .with_context(|| format!("writing {}", p.display()))?;
        eprintln!(
            "trace: {} (open it in https://ui.perfetto.dev)",
            p.display()
        );
    }
    if a.json {
        crate::print_json(&report)
    } else {
        print!("{}", report.table());
        Ok(())
    }
}
