//! Running a peer script (PyTorch, in Python) beside one of our benchmarks.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use compute::child::run::{ChildLimits, Finished};
use compute::lab::peers::run_in_foreground;

/// What a benchmark's peer script may take: two hours (a whole training run on a GPU), and the
/// output it prints is held in memory up to 16 MiB (4 MiB of errors); beyond either it is
/// stopped and the error says which.
const PEER_LIMITS: ChildLimits = ChildLimits {
    time: Duration::from_secs(2 * 60 * 60),
    stdout_bytes: 16 << 20,
    stderr_bytes: 4 << 20,
};

/// Runs `python script args…` with unbuffered output and waits for it, within
/// [`PEER_LIMITS`]; an error names the interpreter when it cannot be started, or the limit it
/// went past.
pub(crate) fn run_script<I, S>(python: &str, script: &Path, args: I) -> Result<Finished, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    eprintln!("running the peer {} …", script.display());
    let mut cmd = Command::new(python);
    cmd.arg(script).args(args).env("PYTHONUNBUFFERED", "1");
    run_in_foreground(cmd, PEER_LIMITS).map_err(|e| e.to_string())
}
