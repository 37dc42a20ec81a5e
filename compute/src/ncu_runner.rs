//! The one runner of Nsight Compute's `ncu` program: finding it ([`find_ncu`]: `$SHOWDOWN_NCU`,
//! else `PATH`, else `/usr/local/cuda/bin`), running it as a child process of its own group
//! (its output in temporary files, capped; killed with what it profiles on cancel or past a
//! deadline), and exporting a binary `.ncu-rep` report as the CSV the importer reads
//! ([`export_rep`], [`import_rep`]). The profile job and the import of a dropped or stored
//! `.ncu-rep` all run ncu through here; the core only reads what it prints.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::error::{ComputeError, Result};
use crate::lab_job::LabJob;
use crate::ncu::{self, NcuError, NcuReport};

/// The environment variable naming the `ncu` program to use (it wins over `PATH`).
pub const NCU_ENV: &str = "SHOWDOWN_NCU";

/// The largest CSV read back from ncu.
const MAX_OUTPUT_BYTES: u64 = 512 << 20;

/// How often a running ncu is checked on (and the job's cancel flag read).
const POLL: Duration = Duration::from_millis(50);

/// How often the job tells the user ncu is still running.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// How long an `ncu --import` (no job to cancel it) may take.
pub(crate) const IMPORT_DEADLINE: Duration = Duration::from_secs(15 * 60);

/// Where ncu is looked for after `$SHOWDOWN_NCU` and `PATH`.
const FALLBACK_NCU: [&str; 1] = ["/usr/local/cuda/bin/ncu"];

/// The `ncu` program to run: `$SHOWDOWN_NCU` when set (a path, or a name looked up on `PATH`),
/// else `ncu` on `PATH`, else `/usr/local/cuda/bin/ncu`. The error says how to install
/// Nsight Compute, or what is wrong with `$SHOWDOWN_NCU`.
pub fn find_ncu() -> Result<PathBuf> {
    let env = std::env::var_os(NCU_ENV).filter(|v| !v.is_empty());
    let path = std::env::var_os("PATH");
    let fallbacks: Vec<&Path> = FALLBACK_NCU.iter().map(Path::new).collect();
    locate_ncu(env.as_deref(), path.as_deref(), &fallbacks)
}

/// [`find_ncu`] over explicit inputs (the tests' door: no environment read or changed).
pub(crate) fn locate_ncu(
    env: Option<&OsStr>,
    path: Option<&OsStr>,
    fallbacks: &[&Path],
) -> Result<PathBuf> {
    let on_path = |name: &OsStr| {
        path.into_iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(name))
            .find(|p| is_executable(p))
    };
    if let Some(v) = env {
        let given = PathBuf::from(v);
        let found = if given.components().count() == 1 && !given.is_absolute() {
            on_path(v)
        } else {
            Some(given.clone()).filter(|p| is_executable(p))
        };
        return found.ok_or_else(|| {
            ComputeError::BadRequest(format!(
                "${NCU_ENV} is set to '{}', which is not an executable file: point it at the \
                 ncu program (for example /usr/local/cuda/bin/ncu) or unset it",
                given.display()
            ))
        });
    }
    on_path(OsStr::new("ncu"))
        .or_else(|| {
            fallbacks
                .iter()
                .find(|p| is_executable(p))
                .map(|p| p.to_path_buf())
        })
        .ok_or_else(ncu_missing)
}

/// The error when no ncu was found: how to install it and point the app at it.
pub(crate) fn ncu_missing() -> ComputeError {
    ComputeError::BadRequest(format!(
        "Nsight Compute (ncu) was not found: it is not on PATH, not in /usr/local/cuda/bin, and \
         ${NCU_ENV} is not set. Install Nsight Compute (it comes with the CUDA Toolkit, as the \
         cuda-nsight-compute packages of NVIDIA's CUDA repository, or on its own from \
         https://developer.nvidia.com/nsight-compute), then put its folder on PATH or set \
         {NCU_ENV} to the ncu program (for example {NCU_ENV}=/usr/local/cuda/bin/ncu) and \
         restart the app"
    ))
}

/// Whether `p` is a regular file this user may execute.
fn is_executable(p: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(p) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// What a finished ncu left.
pub(crate) struct NcuRun {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: String,
}

/// A failure of the ncu at `ncu`, as a runtime error naming it.
pub(crate) fn ncu_failed(ncu: &Path, reason: impl Into<String>) -> ComputeError {
    ComputeError::Io {
        path: ncu.display().to_string(),
        source: std::io::Error::other(reason.into()),
    }
}

/// An anonymous temporary file for a child's output.
fn scratch(ncu: &Path) -> Result<File> {
    tempfile::tempfile()
        .map_err(|e| ncu_failed(ncu, format!("no temporary file for ncu's output: {e}")))
}

/// Reads back a child's output file, at most [`MAX_OUTPUT_BYTES`].
fn read_back(ncu: &Path, mut f: File) -> Result<Vec<u8>> {
    let fail = |e: std::io::Error| ncu_failed(ncu, format!("reading ncu's output: {e}"));
    f.seek(SeekFrom::Start(0)).map_err(fail)?;
    let mut out = Vec::new();
    f.take(MAX_OUTPUT_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(fail)?;
    if out.len() as u64 > MAX_OUTPUT_BYTES {
        return Err(ncu_failed(
            ncu,
            format!(
                "ncu printed more than {} MiB; profile fewer kernels or sections",
                MAX_OUTPUT_BYTES >> 20
            ),
        ));
    }
    Ok(out)
}

/// Runs `ncu args…` to its end, its output in temporary files. With a job: reports progress
/// every few seconds as `what`, and kills ncu (and what it profiles) when the job is cancelled;
/// without one, kills it after `deadline`.
pub(crate) fn run_ncu(
    ncu: &Path,
    args: &[OsString],
    mut job: Option<(&mut LabJob<'_>, &str)>,
    deadline: Duration,
) -> Result<NcuRun> {
    let (out, err) = (scratch(ncu)?, scratch(ncu)?);
    let clone = |f: &File| {
        f.try_clone()
            .map_err(|e| ncu_failed(ncu, format!("no handle for ncu's output: {e}")))
    };
    let mut cmd = Command::new(ncu);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(clone(&out)?))
        .stderr(Stdio::from(clone(&err)?));
    // A group of its own, a parent-death signal, and what it starts followed.
    let mut child = crate::child::spawn(&mut cmd)
        .map_err(|e| ncu_failed(ncu, format!("could not start ncu: {e}")))?;
    let mut family = crate::child::Family::of(&child);
    drop(cmd); // the parent's copies of the output handles
    let started = Instant::now();
    let mut told = started;
    let status = loop {
        family.watch();
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                family.end(&mut child);
                return Err(ncu_failed(ncu, format!("waiting for ncu failed: {e}")));
            }
        }
        if started.elapsed() > deadline {
            family.end(&mut child);
            return Err(ncu_failed(
                ncu,
                format!(
                    "ncu did not finish in {} s; it was stopped",
                    deadline.as_secs()
                ),
            ));
        }
        // Its output goes to files: one that outgrows what is read back stops it (the disk is
        // not filled by a run that would be refused anyway).
        let printed = |f: &File| f.metadata().map(|m| m.len()).unwrap_or(0);
        if printed(&out) > MAX_OUTPUT_BYTES || printed(&err) > MAX_OUTPUT_BYTES {
            family.end(&mut child);
            return Err(ncu_failed(
                ncu,
                format!(
                    "ncu printed more than {} MiB and was stopped; profile fewer kernels or \
                     sections",
                    MAX_OUTPUT_BYTES >> 20
                ),
            ));
        }
        if let Some((job, what)) = job.as_mut() {
            let heartbeat = if told.elapsed() >= HEARTBEAT {
                told = Instant::now();
                job.stage(format!("{what} ({} s)", started.elapsed().as_secs()), 0, 2)
            } else {
                job.check_cancel()
            };
            if let Err(e) = heartbeat {
                family.end(&mut child);
                return Err(e);
            }
        }
        std::thread::sleep(POLL);
    };
    // Ended on its own: what it started goes with it.
    family.end(&mut child);
    let stdout = read_back(ncu, out)?;
    let stderr = String::from_utf8_lossy(&read_back(ncu, err)?).into_owned();
    Ok(NcuRun {
        status,
        stdout,
        stderr,
    })
}

/// The last few lines worth showing of a failed ncu: the last lines of its standard error
/// (which carries the profiled program's own errors and, depending on the version, ncu's
/// `==WARNING==` lines), then the `==ERROR==`/`==WARNING==` lines of its standard output
/// (where ncu 2025 prints `==ERROR== The application returned an error code`); ncu's
/// `==PROF==` progress lines and its notes on uncontrolled clocks and caches are left out.
pub(crate) fn tail(run: &NcuRun) -> String {
    // ncu's progress lines and its notes on the clock and cache settings we chose say nothing.
    let noise = |l: &str| l.starts_with("==PROF==") || l.contains("Note: Running with");
    let mut lines: Vec<String> = run
        .stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !noise(l))
        .map(clip)
        .collect();
    lines.drain(..lines.len().saturating_sub(6));
    let out = String::from_utf8_lossy(&run.stdout);
    for l in out.lines().map(str::trim) {
        if (l.starts_with("==ERROR==") || l.starts_with("==WARNING=="))
            && !noise(l)
            && !lines.iter().any(|seen| seen == l)
        {
            lines.push(clip(l));
        }
    }
    lines.drain(..lines.len().saturating_sub(8));
    if lines.is_empty() {
        "it printed no error".into()
    } else {
        lines.join(" | ")
    }
}

/// At most 120 characters of `s`, for a message.
pub(crate) fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(120).collect();
    if s.chars().nth(120).is_some() {
        out.push('…');
    }
    out
}

/// The arguments of `ncu` that export the `.ncu-rep` at `rep` as the CSV the importer reads:
/// `--import REP --csv --page details --print-units base` ([`ncu::export_command`] says the
/// same to the user).
pub(crate) fn export_args(rep: &Path) -> Vec<OsString> {
    vec![
        "--import".into(),
        rep.as_os_str().to_os_string(),
        "--csv".into(),
        "--page".into(),
        "details".into(),
        "--print-units".into(),
        "base".into(),
    ]
}

/// Exports the `.ncu-rep` at `rep` with the ncu at `ncu` ([`export_args`]), at most
/// [`IMPORT_DEADLINE`]: what ncu left (its status says whether it exported).
pub(crate) fn export_rep(ncu: &Path, rep: &Path) -> Result<NcuRun> {
    run_ncu(ncu, &export_args(rep), None, IMPORT_DEADLINE)
}

/// Imports the `.ncu-rep` report at `path` (shown as itself in errors) by exporting it with
/// the ncu [`find_ncu`] finds. Without ncu, or when it fails, the error is the importer's
/// [`NcuError::NcuRep`], which carries the command to run by hand and why it was not run here.
pub fn import_rep(path: &Path) -> std::result::Result<NcuReport, NcuError> {
    import_rep_with(path, find_ncu)
}

/// [`import_rep`] with the search for ncu given (the tests' door).
pub(crate) fn import_rep_with(
    path: &Path,
    find: impl FnOnce() -> Result<PathBuf>,
) -> std::result::Result<NcuReport, NcuError> {
    let shown = path.display().to_string();
    let refuse = |why: String| NcuError::NcuRep {
        line: 1,
        note: format!(" ({why})"),
        command: ncu::export_command(&shown),
    };
    let ncu = find().map_err(|e| refuse(format!("ncu was not run: {e}")))?;
    let run = export_rep(&ncu, path).map_err(|e| refuse(e.to_string()))?;
    if !run.status.success() {
        return Err(refuse(format!(
            "ncu exited with {}: {}",
            run.status,
            tail(&run)
        )));
    }
    ncu::import_named(run.stdout.as_slice(), &shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rep_without_ncu_is_refused_with_the_command_to_run_by_hand() {
        let rep = Path::new("/nowhere/ours_head.ncu-rep");
        let e = import_rep_with(rep, || Err(ncu_missing())).unwrap_err();
        let NcuError::NcuRep { note, command, .. } = &e else {
            panic!("{e:?}");
        };
        assert!(
            note.contains("Nsight Compute (ncu) was not found"),
            "{note}"
        );
        assert!(
            command.contains("--import")
                && command.contains("--csv --page details --print-units base"),
            "{command}"
        );
        assert!(command.contains("ours_head.ncu-rep"), "{command}");
        assert!(e.to_string().contains("export it with:"), "{e}");
    }

    #[test]
    fn the_export_arguments_are_the_command_the_user_is_shown() {
        let args: Vec<String> = export_args(Path::new("r.ncu-rep"))
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let shown = ncu::export_command("r.ncu-rep");
        assert!(
            shown.starts_with(&format!("ncu {}", args.join(" "))),
            "{shown} / {args:?}"
        );
    }
}
