//! Nsight Compute from the app: a profile job that runs `ncu` on this program's own hidden
//! `profile-target` subcommand for one [`ProfileTarget`] (a kernel of the kernel lab, a rung of
//! the convolution ladder, a training step) and keeps the CSV it prints in the import library,
//! and the import of a dropped `.ncu-rep` report through `ncu --import`.
//!
//! The two sides:
//!
//! * [`profile`] (the service's `profile` job) finds `ncu` ([`find_ncu`](crate::ncu_runner::find_ncu): `$SHOWDOWN_NCU`, else
//!   `PATH`, else `/usr/local/cuda/bin`), runs
//!   `ncu --csv --page details --print-units base --clock-control none --cache-control none
//!   --section … --nvtx --nvtx-include profile/ --launch-count N EXE profile-target --what JSON`
//!   as a child process (killed, with the program it profiles, when the job is cancelled),
//!   and imports its standard output exactly as an `ncu_import` request imports a CSV
//!   ([`import_csv`]).
//! * [`run_target`] (`showdown profile-target --what JSON`) runs the target's work after a
//!   warm-up and once more inside the NVTX range [`PROFILE_RANGE`], which is what ncu's filter
//!   keeps: the warm-up (first launches, lazy allocations) is not profiled.
//!
//! The clocks and caches are left as they are (`--clock-control none --cache-control none`)
//! so that the durations ncu reports match the lab's own timings (CUDA events, CUPTI records),
//! which run at the GPU's own clocks with warm caches.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::bench::conv::LadderLayer;
use crate::error::{ComputeError, Result};
use crate::lab::{LabJob, ProfileTarget, DEFAULT_SECTIONS, STALL_METRICS};
use crate::ncu::{self, ImportSummary, NcuError};
use crate::ncu_library::ImportStore;
use crate::ncu_runner::{clip, export_rep, find_ncu, ncu_failed, run_ncu, tail, NcuRun};
use crate::protocol::{ProfileOutcome, ProfileRequest};

/// The NVTX range `profile-target` wraps its profiled work in, and that ncu's filter keeps
/// (`--nvtx-include profile/`: the push/pop range of that name, at any depth).
pub const PROFILE_RANGE: &str = "profile";

/// The hidden subcommand of the `showdown` program that ncu runs.
pub const TARGET_SUBCOMMAND: &str = "profile-target";

/// Most rows, and most columns, of a kernel target.
pub const MAX_KERNEL_SIDE: usize = 1 << 24;

/// Most elements (rows × columns) of a kernel target: 1 GiB per FP32 buffer.
pub const MAX_KERNEL_ELEMENTS: usize = 1 << 28;

/// Most images per pass of a rung target.
pub const MAX_RUNG_BATCH: usize = 16_384;

/// Most images per step of a training-step target.
pub const MAX_STEP_BATCH: usize = 8_192;

/// Most ncu sections one profile collects.
pub const MAX_SECTIONS: usize = 32;

/// Passes of the target's work before the profiled one.
#[cfg(feature = "cuda")]
const WARMUPS: usize = 2;

/// The fix for `ERR_NVGPUCTRPERM`, as shown to the user.
const PERM_HELP: &str = "ncu may not read this GPU's performance counters (ERR_NVGPUCTRPERM): \
the NVIDIA driver allows them to administrators only. Either let every user profile: add the \
line `options nvidia NVreg_RestrictProfilingToAdminUsers=0` to a file in /etc/modprobe.d/ \
(for example /etc/modprobe.d/nvidia-profiling.conf), rebuild the initramfs where your \
distribution needs it (`sudo update-initramfs -u`) and reboot; or run the app as root (or \
give it CAP_SYS_ADMIN). See https://developer.nvidia.com/ERR_NVGPUCTRPERM";

// ---------------------------------------------------------------------------------------------
// Finding ncu

// ---------------------------------------------------------------------------------------------
// Validation

/// The convolution-ladder layer named `name`: its table name (`lab_conv1`, `lab_conv2`,
/// `lenet_c1`, `lenet_c3`) or its short one (`conv1`, `conv2`, `c1`, `c3`). The error names
/// the field `what.layer`.
pub fn ladder_layer(name: &str) -> Result<LadderLayer> {
    let canonical = match name {
        "conv1" => "lab_conv1",
        "conv2" => "lab_conv2",
        "c1" => "lenet_c1",
        "c3" => "lenet_c3",
        other => other,
    };
    LadderLayer::parse(canonical).map_err(|_| {
        ComputeError::bad_arg(
            "what.layer",
            clip(name),
            "expected lab_conv1, lab_conv2, lenet_c1 or lenet_c3 (or conv1, conv2, c1, c3)",
        )
    })
}

/// Checks a profile target, naming the first bad field (`what.rows`, `what.rung`, ...):
/// rows, columns and batches at least 1 and bounded ([`MAX_KERNEL_SIDE`],
/// [`MAX_KERNEL_ELEMENTS`], [`MAX_RUNG_BATCH`], [`MAX_STEP_BATCH`]), the rung 1 to 5, the
/// layer one of the ladder's.
pub fn validate_target(target: &ProfileTarget) -> Result<()> {
    let between = |name: &str, v: usize, max: usize| {
        if (1..=max).contains(&v) {
            Ok(())
        } else {
            Err(ComputeError::bad_arg(
                name,
                v,
                format!("must be between 1 and {max}"),
            ))
        }
    };
    match target {
        ProfileTarget::Kernel { rows, cols, .. } => {
            between("what.rows", *rows, MAX_KERNEL_SIDE)?;
            between("what.cols", *cols, MAX_KERNEL_SIDE)?;
            if rows.saturating_mul(*cols) > MAX_KERNEL_ELEMENTS {
                return Err(ComputeError::bad_arg(
                    "what.rows × what.cols",
                    format!("{rows}×{cols}"),
                    format!("at most {MAX_KERNEL_ELEMENTS} elements"),
                ));
            }
        }
        ProfileTarget::Rung { layer, rung, batch } => {
            ladder_layer(layer)?;
            if !(1..=5).contains(rung) {
                return Err(ComputeError::bad_arg(
                    "what.rung",
                    rung,
                    "the convolution ladder's rungs are 1 to 5",
                ));
            }
            between("what.batch", *batch, MAX_RUNG_BATCH)?;
        }
        ProfileTarget::Step { batch, .. } => between("what.batch", *batch, MAX_STEP_BATCH)?,
    }
    Ok(())
}

/// The sections to collect: the request's (in order, repeats dropped) or
/// [`DEFAULT_SECTIONS`]. Each must be an ncu section identifier (letters, digits, `_`; at most
/// 64 characters), at most [`MAX_SECTIONS`] of them; the error names the field `sections`.
fn sections_of(asked: &[String]) -> Result<Vec<String>> {
    if asked.is_empty() {
        return Ok(DEFAULT_SECTIONS.iter().map(|s| s.to_string()).collect());
    }
    if asked.len() > MAX_SECTIONS {
        return Err(ComputeError::bad_arg(
            "sections",
            asked.len(),
            format!("at most {MAX_SECTIONS} sections"),
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for s in asked {
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ok {
            return Err(ComputeError::bad_arg(
                "sections",
                clip(s),
                "an ncu section identifier is letters, digits and '_' (SpeedOfLight, Occupancy…)",
            ));
        }
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// The command

/// A short name of the target for file names: `kernel-gelu_erf-f16-8192x4096`,
/// `rung4-lab_conv2-b1024`, `step-fp16-b128`.
fn target_slug(target: &ProfileTarget) -> String {
    match target {
        ProfileTarget::Kernel {
            op,
            dtype,
            rows,
            cols,
        } => format!("kernel-{}-{}-{rows}x{cols}", op.name(), dtype.suffix()),
        ProfileTarget::Rung { layer, rung, batch } => {
            let layer = ladder_layer(layer).map_or("layer", |l| l.name());
            format!("rung{rung}-{layer}-b{batch}")
        }
        ProfileTarget::Step { precision, batch } => format!("step-{precision}-b{batch}"),
    }
}

/// `unix_secs` as `YYYYMMDD-HHMMSS` (UTC).
fn stamp(unix_secs: u64) -> String {
    let (y, mo, d, h, mi, s) = crate::runs::utc_parts(unix_secs);
    format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}")
}

/// The kernel launches ncu profiles at most: one for a kernel, and a bound for the others
/// (rung 1 is three launches per chunk of images, a training step a few dozen).
fn launch_count(target: &ProfileTarget) -> usize {
    match target {
        ProfileTarget::Kernel { .. } => 1,
        ProfileTarget::Rung { .. } | ProfileTarget::Step { .. } => 256,
    }
}

/// ncu's arguments for `target` (after the program itself).
fn ncu_args(
    target: &ProfileTarget,
    sections: &[String],
    target_exe: &Path,
) -> Result<Vec<OsString>> {
    let what = serde_json::to_string(target)
        .map_err(|e| ComputeError::bad_arg("what", target.describe(), e.to_string()))?;
    let mut args: Vec<OsString> = [
        "--csv",
        "--page",
        "details",
        "--print-units",
        "base",
        "--clock-control",
        "none",
        "--cache-control",
        "none",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    for s in sections {
        args.push("--section".into());
        args.push(s.into());
    }
    args.push("--metrics".into());
    args.push(STALL_METRICS.into());
    args.push("--nvtx".into());
    args.push("--nvtx-include".into());
    args.push(format!("{PROFILE_RANGE}/").into());
    args.push("--launch-count".into());
    args.push(launch_count(target).to_string().into());
    args.push(target_exe.as_os_str().to_os_string());
    args.push(TARGET_SUBCOMMAND.into());
    args.push("--what".into());
    args.push(what.into());
    Ok(args)
}

/// The command line `program args…`, shell-quoted, for the user to repeat.
fn command_line(program: &Path, args: &[OsString]) -> String {
    std::iter::once(program.as_os_str())
        .chain(args.iter().map(OsString::as_os_str))
        .map(|a| ncu::shell_quote(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------------------------
// Running ncu

/// The error for `ERR_NVGPUCTRPERM` in ncu's output, if it is there.
fn permission_error(ncu: &Path, run: &NcuRun) -> Option<ComputeError> {
    const CODE: &[u8] = b"ERR_NVGPUCTRPERM";
    let seen = run.stderr.contains("ERR_NVGPUCTRPERM")
        || run.stdout.windows(CODE.len()).any(|w| w == CODE);
    seen.then(|| ncu_failed(ncu, PERM_HELP))
}

// ---------------------------------------------------------------------------------------------
// Importing

/// Imports an ncu CSV export (`bytes`, named `file_name`) and keeps it in the library: the
/// same path as the `ncu_import` request (the importer, then [`ImportStore::save_bytes`]).
/// Errors name the file.
pub fn import_csv(file_name: &str, bytes: &[u8], store: &ImportStore) -> Result<ImportSummary> {
    let report = ncu::import_bytes(bytes)
        .map_err(|e| ComputeError::bad_file(file_name.to_string(), e.to_string()))?;
    Ok(store.save_bytes(file_name, bytes, &report)?)
}

/// Nsight Compute on one target of this program: runs ncu on `target_exe profile-target
/// --what JSON` (see the [module](self) for the command), reports its stages through `job`
/// (cancelling the job kills ncu and the program it profiles), imports the CSV it prints into
/// `store` as `profile-<target>-<UTC date>.csv`, and answers that import with the command that
/// made it (shell-quoted, to repeat by hand).
///
/// `target_exe` is the `showdown` program (the compute service passes
/// `std::env::current_exe()`). Errors, each a sentence: a bad target or section (naming the
/// field), ncu not found (how to install it, or set `$SHOWDOWN_NCU`), `ERR_NVGPUCTRPERM` (the
/// driver option that lifts it), ncu failing (its last lines), no kernel profiled.
pub fn profile(
    req: &ProfileRequest,
    target_exe: &Path,
    store: &ImportStore,
    job: &mut LabJob<'_>,
) -> Result<ProfileOutcome> {
    profile_with(req, target_exe, store, job, find_ncu)
}

/// [`profile`] with the search for ncu given (the tests' door).
fn profile_with(
    req: &ProfileRequest,
    target_exe: &Path,
    store: &ImportStore,
    job: &mut LabJob<'_>,
    find: impl FnOnce() -> Result<PathBuf>,
) -> Result<ProfileOutcome> {
    validate_target(&req.what)?;
    let sections = sections_of(&req.sections)?;
    let what = req.what.describe();
    job.stage("looking for Nsight Compute (ncu)", 0, 2)?;
    let ncu = find()?;
    let args = ncu_args(&req.what, &sections, target_exe)?;
    let command = format!(
        "{}  # clocks and caches as in our own timings (--clock-control none \
         --cache-control none)",
        command_line(&ncu, &args)
    );
    let running = format!("ncu profiling {what}");
    job.stage(running.clone(), 0, 2)?;
    job.note(format!("running: {command}"));
    // No deadline: the job is cancelled by the user.
    let run = run_ncu(&ncu, &args, Some((job, &running)), Duration::MAX)?;
    if let Some(e) = permission_error(&ncu, &run) {
        return Err(e);
    }
    if !run.status.success() {
        return Err(ncu_failed(
            &ncu,
            format!(
                "ncu exited with {} while profiling {what}: {}",
                run.status,
                tail(&run)
            ),
        ));
    }
    job.stage("importing ncu's CSV", 1, 2)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let file_name = format!("profile-{}-{}.csv", target_slug(&req.what), stamp(now));
    let report = match ncu::import_bytes(&run.stdout) {
        Ok(r) => r,
        Err(NcuError::Empty { .. } | NcuError::NotNcu { .. } | NcuError::HeaderOnly { .. }) => {
            return Err(ComputeError::BadRequest(format!(
                "ncu profiled no kernel of {what}: no launch matched the filter (--nvtx-include \
                 {PROFILE_RANGE}/ --launch-count {}); ncu said: {}",
                launch_count(&req.what),
                tail(&run)
            )))
        }
        Err(e) => return Err(ComputeError::bad_file(file_name, e.to_string())),
    };
    let import = store.save_bytes(&file_name, &run.stdout, &report)?;
    job.note(format!(
        "imported {} kernel(s) of {what} as {}",
        import.kernels, import.source_name
    ));
    Ok(ProfileOutcome { import, command })
}

/// The file's name without folders.
fn base_name(file_name: &str) -> &str {
    file_name.rsplit(['/', '\\']).next().unwrap_or(file_name)
}

/// Imports a dropped report: a binary `.ncu-rep` is written to a temporary file and exported
/// with `ncu --import FILE --csv --page details --print-units base`, and the CSV is kept in
/// `store` as `NAME.csv` (so its panels open later without ncu); a CSV export given here is
/// imported as it is. Without ncu the error shows the exact command to run where Nsight
/// Compute is installed (then import the CSV it writes).
pub fn import_ncu_rep(file_name: &str, bytes: &[u8], store: &ImportStore) -> Result<ImportSummary> {
    import_ncu_rep_with(file_name, bytes, store, find_ncu)
}

/// [`import_ncu_rep`] with the search for ncu given (the tests' door).
fn import_ncu_rep_with(
    file_name: &str,
    bytes: &[u8],
    store: &ImportStore,
    find: impl FnOnce() -> Result<PathBuf>,
) -> Result<ImportSummary> {
    let name = base_name(file_name);
    match ncu::import_named(bytes, name) {
        Ok(report) => return Ok(store.save_bytes(name, bytes, &report)?),
        Err(NcuError::NcuRep { .. }) => {}
        Err(e) => return Err(ComputeError::bad_file(name.to_string(), e.to_string())),
    }
    let export = ncu::export_command(name);
    let ncu = find().map_err(|e| {
        ComputeError::bad_file(
            name.to_string(),
            format!(
                "a binary Nsight Compute report (.ncu-rep) needs ncu to be read, and this \
                 machine has none ({e}). Export it where Nsight Compute is installed with: \
                 {export}; then import the CSV it writes"
            ),
        )
    })?;
    let io = |e: std::io::Error| ncu_failed(&ncu, format!("writing the report for ncu: {e}"));
    let mut rep = tempfile::Builder::new()
        .prefix("showdown-import-")
        .suffix(".ncu-rep")
        .tempfile()
        .map_err(io)?;
    rep.write_all(bytes).map_err(io)?;
    rep.flush().map_err(io)?;
    let run = export_rep(&ncu, rep.path())?;
    drop(rep);
    if !run.status.success() {
        return Err(ComputeError::bad_file(
            name.to_string(),
            format!(
                "ncu could not export the report (it exited with {}: {}); try by hand: {export}",
                run.status,
                tail(&run)
            ),
        ));
    }
    let stem = name.strip_suffix(".ncu-rep").unwrap_or(name);
    import_csv(&format!("{stem}.csv"), &run.stdout, store)
}

// ---------------------------------------------------------------------------------------------
// The target side

/// Runs `target`'s work for a profiler (`showdown profile-target --what JSON`) on GPU
/// `device`: two warm-up passes, then one inside the NVTX range [`PROFILE_RANGE`]. A kernel:
/// one launch of the op in its dtype on `rows × cols` ([`KernelLab`](crate::cuda::lab::KernelLab));
/// a rung: one pass of that rung on that layer ([`ConvLab`](crate::cuda::conv_ladder::ConvLab),
/// the ladder's inputs from the embedded MNIST sample); a step: one training step of the lab
/// CNN at that precision and batch on the CUDA backend, launched kernel by kernel (not the
/// recorded graph: ncu profiles kernels). Errors: a bad target (naming the field), no GPU.
#[cfg(feature = "cuda")]
pub fn run_target(target: &ProfileTarget, device: usize) -> Result<()> {
    validate_target(target)?;
    match target {
        ProfileTarget::Kernel {
            op,
            dtype,
            rows,
            cols,
        } => {
            let lab = crate::cuda::lab::KernelLab::new(device)?;
            lab.profile_launch(*op, *dtype, *rows, *cols, WARMUPS, PROFILE_RANGE)
        }
        ProfileTarget::Rung { layer, rung, batch } => {
            let layer = ladder_layer(layer)?;
            let data = crate::data::mnist_sample()?;
            let lab = crate::cuda::conv_ladder::ConvLab::new(device)?;
            lab.profile_pass(layer, *rung, *batch, &data, WARMUPS, PROFILE_RANGE)
        }
        ProfileTarget::Step { precision, batch } => step_target(*precision, *batch, device),
    }
}

/// One training step of the lab CNN for a profiler (see [`run_target`]).
#[cfg(feature = "cuda")]
fn step_target(precision: crate::types::Precision, batch: usize, device: usize) -> Result<()> {
    use crate::backend::{AdamParams, Backend};
    use crate::train::{init_params, TrainOptions, Trainer};
    let data = crate::data::mnist_sample()?;
    if batch > data.train.len() {
        return Err(ComputeError::bad_arg(
            "what.batch",
            batch,
            format!(
                "the {} training split has {} images",
                data.name,
                data.train.len()
            ),
        ));
    }
    let be = crate::cuda::CudaBackend::new(device)?;
    let cfg = crate::types::DuelConfig::default();
    let opts = TrainOptions {
        precision,
        epochs: 1,
        batch,
        adam: AdamParams {
            lr: cfg.lr,
            ..AdamParams::default()
        },
        seed: cfg.seed,
        dropout: cfg.dropout,
        activation: cfg.activation,
    };
    let mut trainer = Trainer::new(&be, opts, &data.train, &data.test, &init_params(cfg.seed))?;
    // Step 0 each time: its images exist whatever the batch.
    for _ in 0..WARMUPS {
        trainer.step(0, batch)?;
    }
    be.synchronize()?;
    let _range = crate::trace::range(PROFILE_RANGE);
    trainer.step(0, batch)?;
    be.synchronize()
}

/// Without the CUDA backend there is nothing to profile: checks `target`, then answers that a
/// CUDA GPU is needed.
#[cfg(not(feature = "cuda"))]
pub fn run_target(target: &ProfileTarget, _device: usize) -> Result<()> {
    validate_target(target)?;
    Err(super::needs_gpu(
        &format!("profiling {}", target.describe()),
        "this build has no CUDA backend (built without the `cuda` feature)",
    ))
}

#[cfg(test)]
mod tests;
