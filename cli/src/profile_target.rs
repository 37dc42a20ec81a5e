//! `showdown profile-target --what JSON` (hidden): what Nsight Compute runs when the app
//! profiles one of its targets (`compute::lab::profile`). It runs the target's work after a
//! warm-up and once more inside the NVTX range `profile`, which ncu's filter keeps, and prints
//! nothing on standard output (ncu's CSV goes there).

use anyhow::Result;
use clap::Args;
use compute::lab::profile::{run_target, validate_target};
use compute::lab::ProfileTarget;
use compute::ComputeError;

/// Options of `profile-target`.
#[derive(Debug, Args)]
pub struct ProfileTargetArgs {
    /// The target as JSON, like the profile request's `what`:
    /// `{"target":"kernel","op":"gelu_erf","dtype":"f16","rows":8192,"cols":4096}`,
    /// `{"target":"rung","layer":"lab_conv2","rung":4,"batch":1024}` or
    /// `{"target":"step","precision":"fp16","batch":128}`.
    #[arg(long)]
    pub what: String,
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
}

/// Runs the target once for the profiler; without a CUDA GPU (or the `cuda` feature) an error
/// says so (exit 1); a bad target names its field (exit 2).
pub fn run(a: ProfileTargetArgs) -> Result<()> {
    let target: ProfileTarget = serde_json::from_str(&a.what).map_err(|e| {
        ComputeError::bad_arg(
            "--what",
            a.what.chars().take(120).collect::<String>(),
            format!("not a profile target: {e}"),
        )
    })?;
    validate_target(&target)?;
    run_target(&target, a.device)?;
    eprintln!("profile-target: ran {} for the profiler", target.describe());
    Ok(())
}
