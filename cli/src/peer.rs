//! Running a peer script (PyTorch, in Python) beside one of our benchmarks.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

/// Runs `python script args…` with unbuffered output and waits for it; an error names the
/// interpreter when it cannot be started.
pub(crate) fn run_script<I, S>(python: &str, script: &Path, args: I) -> Result<Output, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    eprintln!("running the peer {} …", script.display());
    Command::new(python)
        .arg(script)
        .args(args)
        .env("PYTHONUNBUFFERED", "1")
        .output()
        .map_err(|e| format!("cannot start {python}: {e}"))
}

/// The last non-empty line the script wrote to stderr ("" when none): usually the exception.
pub(crate) fn last_stderr_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string()
}
