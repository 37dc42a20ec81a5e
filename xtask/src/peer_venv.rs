//! The PyTorch peer's interpreter for the browser e2e: `target/peer-venv`, made with
//! `python3 -m venv` and `pip install -r bench/requirements.txt` once (a no-op when its Python
//! already imports torch at the pinned version), then handed to the e2e's server.
//!
//! The e2e's environment contract (node app-ui/e2e/browser.cjs and the `showdown serve` it
//! starts, which inherits node's environment) — exactly one of:
//! - `SHOWDOWN_PYTHON=<absolute path of target/peer-venv/bin/python>`: that Python imports
//!   torch at the pinned version (the peer runs on the CPU where there is no GPU);
//! - `PEER_SKIP_REASON=<one line>`: why there is no such Python (the opt-out
//!   `SHOWDOWN_E2E_NO_TORCH=1`, no python3 or venv, pip failed: no registry, no wheel for this
//!   Python, too little disk). `SHOWDOWN_PYTHON` is then removed from the e2e's environment.
//!
//! Making the interpreter never fails the run: a failure becomes the skip reason.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::process::root;

/// The virtual environment, under the repository root.
const VENV: &str = "target/peer-venv";

/// The peers' pinned packages, under the repository root.
const REQUIREMENTS: &str = "bench/requirements.txt";

/// Set to 1 (or any non-empty value but 0): no install, the e2e is told to skip the peer.
pub const OPT_OUT: &str = "SHOWDOWN_E2E_NO_TORCH";

/// Free space a fresh install needs on the disk of `target/`: PyPI's torch 2.11.0 with its
/// CUDA 13 libraries, triton and numpy took 4.7 GB installed here (95 s), plus room for pip's
/// downloaded wheels (about 3 GB) while it unpacks them.
const NEEDED_BYTES: u64 = 8_000_000_000;

/// The process group of the pip install running now (0: none), for [`stop_install`].
static PIP_GROUP: AtomicU32 = AtomicU32::new(0);

/// Set by [`stop_install`]: no pip is started after it.
static STOPPED: AtomicBool = AtomicBool::new(false);

/// Stops a pip install running in the background (CI failed before it was needed): its whole
/// process group, and no pip is started after this.
pub fn stop_install() {
    STOPPED.store(true, Ordering::SeqCst);
    let group = PIP_GROUP.swap(0, Ordering::SeqCst);
    if group != 0 {
        // `kill -TERM -PGID`: pip and what it started.
        let _ = Command::new("kill")
            .args(["-TERM", &format!("-{group}")])
            .status();
        eprintln!("stopped the PyTorch peer's pip install");
    }
}

/// What the browser e2e is given about the PyTorch peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerEnv {
    /// `SHOWDOWN_PYTHON`: a Python that imports torch at the pinned version.
    Python {
        /// Its absolute path.
        python: PathBuf,
        /// The torch version it imports.
        torch: String,
        /// Whether this run installed it (false: it was there).
        installed: bool,
    },
    /// `PEER_SKIP_REASON`: why there is none, in one line.
    Skip(String),
}

impl PeerEnv {
    /// Sets the contract's variables on `cmd` (the e2e's node process).
    pub fn apply<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        match self {
            PeerEnv::Python { python, .. } => cmd
                .env("SHOWDOWN_PYTHON", python)
                .env_remove("PEER_SKIP_REASON"),
            PeerEnv::Skip(reason) => cmd
                .env("PEER_SKIP_REASON", reason)
                .env_remove("SHOWDOWN_PYTHON"),
        }
    }

    /// The stage's note: the variable passed.
    pub fn note(&self) -> String {
        match self {
            PeerEnv::Python {
                python,
                torch,
                installed,
            } => format!(
                "SHOWDOWN_PYTHON={} (torch {torch}, {})",
                python.display(),
                if *installed {
                    "installed now"
                } else {
                    "already there"
                }
            ),
            PeerEnv::Skip(reason) => format!("PEER_SKIP_REASON={reason}"),
        }
    }
}

/// Makes `target/peer-venv` when needed and says what the e2e gets; prints the outcome.
pub fn ensure() -> PeerEnv {
    ensure_logged(None)
}

/// [`ensure`], pip's output written to `log` when given (CI runs it beside other stages)
/// instead of passed through.
pub fn ensure_logged(log: Option<&Path>) -> PeerEnv {
    let env = ensure_with(&root(), std::env::var(OPT_OUT).ok().as_deref(), log);
    match &env {
        PeerEnv::Python { .. } => eprintln!("PyTorch peer for the e2e: {}", env.note()),
        PeerEnv::Skip(reason) => {
            eprintln!("PyTorch peer for the e2e: skipped: {reason} (PEER_SKIP_REASON)")
        }
    }
    env
}

/// [`ensure`] for the repository at `root`, `opt_out` being `$SHOWDOWN_E2E_NO_TORCH`.
#[cfg(test)]
fn ensure_in(root: &Path, opt_out: Option<&str>) -> PeerEnv {
    ensure_with(root, opt_out, None)
}

/// [`ensure_in`], pip's output into `log` when given.
fn ensure_with(root: &Path, opt_out: Option<&str>, log: Option<&Path>) -> PeerEnv {
    if opted_out(opt_out) {
        return PeerEnv::Skip(format!("{OPT_OUT}={} was set", opt_out.unwrap_or("")));
    }
    let pinned = match pinned_torch(&root.join(REQUIREMENTS)) {
        Ok(v) => v,
        Err(why) => return PeerEnv::Skip(why),
    };
    let venv = root.join(VENV);
    let python = venv.join("bin/python");
    if let Ok(torch) = torch_version(&python) {
        if same_release(&torch, &pinned) {
            return PeerEnv::Python {
                python,
                torch,
                installed: false,
            };
        }
    }
    match install(&venv, &root.join(REQUIREMENTS), log) {
        Err(why) => PeerEnv::Skip(why),
        Ok(()) => match torch_version(&python) {
            Ok(torch) if same_release(&torch, &pinned) => PeerEnv::Python {
                python,
                torch,
                installed: true,
            },
            Ok(torch) => PeerEnv::Skip(format!(
                "{} imports torch {torch} after pip install -r {REQUIREMENTS}, not the pinned {pinned}",
                python.display()
            )),
            Err(why) => PeerEnv::Skip(format!(
                "after pip install -r {REQUIREMENTS}, {why}"
            )),
        },
    }
}

/// Whether `$SHOWDOWN_E2E_NO_TORCH` asks to skip: set, not empty, not 0.
fn opted_out(v: Option<&str>) -> bool {
    v.map(str::trim).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The `torch==X` pin of the requirements file.
fn pinned_torch(requirements: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(requirements)
        .map_err(|e| format!("cannot read {}: {e}", requirements.display()))?;
    pin_of(&text, "torch").ok_or_else(|| format!("{} pins no torch==X", requirements.display()))
}

/// The version `name==X` pins in a requirements text (markers and comments ignored).
fn pin_of(text: &str, name: &str) -> Option<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .find_map(|l| {
            let (pkg, rest) = l.split_once("==")?;
            (pkg.trim() == name).then(|| rest.split(';').next().unwrap_or("").trim().to_string())
        })
        .filter(|v| !v.is_empty())
}

/// Whether torch `version` (`2.11.0+cu130`, `2.11.0`) is the release `pinned`.
fn same_release(version: &str, pinned: &str) -> bool {
    version.split('+').next() == Some(pinned)
}

/// The torch version `python` imports (numpy must import too: the peers use it), or why not.
fn torch_version(python: &Path) -> Result<String, String> {
    if !python.exists() {
        return Err(format!("{} does not exist", python.display()));
    }
    let out = Command::new(python)
        .args(["-c", "import numpy, torch; print(torch.__version__)"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{} does not start: {e}", python.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout.lines().last().map(str::trim) {
        Some(v) if out.status.success() && !v.is_empty() => Ok(v.to_string()),
        _ => Err(format!(
            "{} cannot import torch and numpy: {}",
            python.display(),
            last_line(&String::from_utf8_lossy(&out.stderr))
        )),
    }
}

/// `python3 -m venv` (when `venv` has no working Python) and `pip install -r requirements`;
/// pip's output passed through, or written to `log`. The error is one line.
fn install(venv: &Path, requirements: &Path, log: Option<&Path>) -> Result<(), String> {
    let python = venv.join("bin/python");
    if !runs(&python) {
        // A half-made venv (no Python, or one that does not start) is made again.
        let _ = std::fs::remove_dir_all(venv);
        let out = Command::new("python3")
            .arg("-m")
            .arg("venv")
            .arg(venv)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("python3 -m venv {VENV}: cannot start python3: {e}"))?;
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(venv);
            let mut why = String::from_utf8_lossy(&out.stderr).into_owned();
            why.push_str(&String::from_utf8_lossy(&out.stdout));
            return Err(format!(
                "python3 -m venv {VENV} failed ({}): {}",
                out.status,
                last_line(&why)
            ));
        }
    }
    if let Some(free) = free_bytes(venv) {
        if free < NEEDED_BYTES {
            return Err(format!(
                "only {:.1} GB free beside {VENV}; pip install -r {REQUIREMENTS} needs about {:.0} GB",
                free as f64 / 1e9,
                NEEDED_BYTES as f64 / 1e9
            ));
        }
    }
    let mut cmd = Command::new(&python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        "-r",
    ])
    .arg(requirements)
    .stdin(Stdio::null())
    .stderr(Stdio::piped());
    let mut log_file = match log {
        Some(path) => {
            let f = File::create(path)
                .map_err(|e| format!("cannot write pip's log {}: {e}", path.display()))?;
            let out = f
                .try_clone()
                .map_err(|e| format!("cannot write pip's log {}: {e}", path.display()))?;
            cmd.stdout(out);
            Some(f)
        }
        None => None,
    };
    // Its own process group, which stop_install ends whole.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    match &log {
        Some(path) => eprintln!("$ {cmd:?} > {}", path.display()),
        None => eprintln!("$ {cmd:?}"),
    }
    if STOPPED.load(Ordering::SeqCst) {
        return Err("CI stopped before pip install ran".to_string());
    }
    let mut child = cmd.spawn().map_err(|e| {
        format!(
            "pip install -r {REQUIREMENTS}: cannot start {}: {e}",
            python.display()
        )
    })?;
    PIP_GROUP.store(child.id(), Ordering::SeqCst);
    if STOPPED.load(Ordering::SeqCst) {
        // Stopped between the check above and the spawn.
        stop_install();
    }
    // pip's errors come on stderr: passed through (or logged), the last error line kept for
    // the reason.
    let mut last_error = String::new();
    if let Some(err) = child.stderr.take() {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            match log_file.as_mut() {
                Some(f) => {
                    let _ = writeln!(f, "{line}");
                }
                None => eprintln!("{line}"),
            }
            let t = line.trim();
            if t.starts_with("ERROR") || (last_error.is_empty() && !t.is_empty()) {
                last_error = t.to_string();
            }
        }
    }
    let status = child.wait();
    PIP_GROUP.store(0, Ordering::SeqCst);
    let status = status.map_err(|e| format!("pip install -r {REQUIREMENTS}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "pip install -r {REQUIREMENTS} into {VENV} failed ({status}): {}",
            if last_error.is_empty() {
                "no error line".to_string()
            } else {
                one_line(&last_error)
            }
        ));
    }
    Ok(())
}

/// Whether `python` exists and starts.
fn runs(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "pass"])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Free bytes on the file system of `path` (`df -Pk`); `None` when df cannot tell.
fn free_bytes(path: &Path) -> Option<u64> {
    let out = Command::new("df").arg("-Pk").arg(path).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let kib: u64 = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The last non-empty line of `text`, on one line ("no output" when there is none).
fn last_line(text: &str) -> String {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(one_line)
        .unwrap_or_else(|| "no output".to_string())
}

/// `text` on one line: control characters as spaces, at most 300 characters.
fn one_line(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pins_are_read_from_the_requirements_file() {
        let text =
            std::fs::read_to_string(root().join(REQUIREMENTS)).expect("bench/requirements.txt");
        assert_eq!(pin_of(&text, "torch").as_deref(), Some("2.11.0"));
        assert_eq!(pin_of(&text, "triton").as_deref(), Some("3.6.0"));
        assert_eq!(
            pin_of(
                "# torch==1.0\ntorchvision==0.1\n torch == 2.0.1 ; sys_platform == 'linux'",
                "torch"
            )
            .as_deref(),
            Some("2.0.1")
        );
        assert_eq!(pin_of("torch>=2\n", "torch"), None);
    }

    #[test]
    fn a_local_build_tag_is_the_same_release() {
        assert!(same_release("2.11.0+cu130", "2.11.0"));
        assert!(same_release("2.11.0", "2.11.0"));
        assert!(!same_release("2.15.0", "2.11.0"));
        assert!(!same_release("2.11.01", "2.11.0"));
    }

    #[test]
    fn the_opt_out_skips_with_its_reason_and_installs_nothing() {
        let dir = std::env::temp_dir().join(format!("peer-venv-test-{}", std::process::id()));
        let env = ensure_in(&dir, Some("1"));
        assert_eq!(
            env,
            PeerEnv::Skip("SHOWDOWN_E2E_NO_TORCH=1 was set".to_string())
        );
        assert!(!dir.exists());
        let mut cmd = Command::new("true");
        cmd.env("SHOWDOWN_PYTHON", "/x");
        env.apply(&mut cmd);
        let vars: Vec<_> = cmd.get_envs().collect();
        assert!(vars.contains(&(
            std::ffi::OsStr::new("PEER_SKIP_REASON"),
            Some(std::ffi::OsStr::new("SHOWDOWN_E2E_NO_TORCH=1 was set"))
        )));
        assert!(vars.contains(&(std::ffi::OsStr::new("SHOWDOWN_PYTHON"), None)));
        assert!(!opted_out(Some("0")) && !opted_out(Some("")) && !opted_out(None));
    }

    #[test]
    fn a_missing_requirements_file_is_a_skip_reason_not_a_failure() {
        let dir = std::env::temp_dir().join(format!("peer-venv-none-{}", std::process::id()));
        match ensure_in(&dir, None) {
            PeerEnv::Skip(why) => assert!(why.contains("requirements.txt"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(!dir.join(VENV).exists());
    }

    /// The real thing, as CI's stage runs it: `cargo test -p xtask -- --ignored --nocapture
    /// makes_the_peer_venv`.
    #[test]
    #[ignore = "downloads PyTorch (about 5 GB installed) into target/peer-venv"]
    fn makes_the_peer_venv() {
        let t = std::time::Instant::now();
        let env = ensure();
        eprintln!("{} in {:.1} s", env.note(), t.elapsed().as_secs_f64());
        assert!(matches!(env, PeerEnv::Python { .. }), "{env:?}");
    }

    #[test]
    fn a_reason_is_one_line() {
        assert_eq!(last_line("a\nERROR: no wheel\n\n"), "ERROR: no wheel");
        assert_eq!(last_line(""), "no output");
        assert!(!one_line("x\ty\rz").contains(['\t', '\r']));
        assert_eq!(one_line(&"é".repeat(400)).chars().count(), 301);
    }
}
