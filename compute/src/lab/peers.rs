//! The PyTorch peer: which Python runs it (the app's setting, else `$SHOWDOWN_PYTHON`, else
//! `python3` on PATH), whether that Python has a CUDA-enabled `torch`, and running the peer
//! scripts. The scripts are the repository's `bench/*.py`, compiled into the program so that
//! an installed app runs the same files the repository's benchmarks do; each run writes the
//! script to a fresh temporary folder first.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{LabJob, PeerStatus};
use crate::error::{ComputeError, Result};

/// A peer script of `bench/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerScript {
    /// `anchor_kernels.py`: the activation and norm kernels (eager and `torch.compile`), the
    /// convolutions through cuDNN, the copy and GEMM ceilings.
    AnchorKernels,
    /// `infer_peer.py`: the lab CNN's inference on our weights (eager, channels-last, graph).
    InferPeer,
}

impl PeerScript {
    /// The script's file name.
    pub fn file_name(self) -> &'static str {
        match self {
            PeerScript::AnchorKernels => "anchor_kernels.py",
            PeerScript::InferPeer => "infer_peer.py",
        }
    }

    /// The script's text, as committed in `bench/`.
    pub fn source(self) -> &'static str {
        match self {
            PeerScript::AnchorKernels => include_str!("../../../bench/anchor_kernels.py"),
            PeerScript::InferPeer => include_str!("../../../bench/infer_peer.py"),
        }
    }
}

/// The settings file in the data folder (`settings.json`: `{"python": "..."}`).
fn settings_path(root: &Path) -> PathBuf {
    root.join("settings.json")
}

/// The Python chosen in the app, if any.
pub fn python_setting(root: Option<&Path>) -> Option<String> {
    let text = std::fs::read_to_string(settings_path(root?)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("python")?.as_str().map(str::to_string)
}

/// Saves (or with `None` clears) the Python setting.
pub fn set_python_setting(root: &Path, python: Option<&str>) -> Result<()> {
    let path = settings_path(root);
    std::fs::create_dir_all(root).map_err(|source| ComputeError::Io {
        path: root.display().to_string(),
        source,
    })?;
    let text = serde_json::json!({ "python": python }).to_string();
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|source| ComputeError::Io {
            path: path.display().to_string(),
            source,
        })
}

/// The interpreter to run and where the choice came from (`setting`, `SHOWDOWN_PYTHON`,
/// `PATH`).
pub fn choose_python(setting: Option<String>) -> (String, &'static str) {
    if let Some(p) = setting.filter(|p| !p.trim().is_empty()) {
        return (p, "setting");
    }
    match std::env::var("SHOWDOWN_PYTHON") {
        Ok(p) if !p.trim().is_empty() => (p, "SHOWDOWN_PYTHON"),
        _ => ("python3".into(), "PATH"),
    }
}

/// What a finished child process left: its status, stdout and stderr.
pub struct Finished {
    /// Whether it exited with status 0.
    pub success: bool,
    /// Its exit status in words.
    pub status: String,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Finished {
    /// The last non-empty line of stderr (usually the exception), or "".
    pub fn last_error_line(&self) -> &str {
        self.stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
    }
}

/// Runs `cmd` to its end, reading its output on threads; kills it when `should_stop` says so
/// (a cancelled job: [`ComputeError::Cancelled`]) or after `limit`.
pub fn run_to_end(
    mut cmd: Command,
    limit: Duration,
    should_stop: &dyn Fn() -> bool,
) -> Result<Finished> {
    let what = format!("{:?}", cmd.get_program());
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ComputeError::Backend {
            backend: "peer".into(),
            reason: format!("cannot start {what}: {e}"),
        })?;
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut p) = pipe {
                let mut bytes = Vec::new();
                let _ = p.read_to_end(&mut bytes);
                text = String::from_utf8_lossy(&bytes).into_owned();
            }
            text
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                return Err(ComputeError::Backend {
                    backend: "peer".into(),
                    reason: format!("waiting for {what}: {e}"),
                })
            }
        }
        if should_stop() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ComputeError::Cancelled);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ComputeError::Backend {
                backend: "peer".into(),
                reason: format!("{what} ran past {} s and was stopped", limit.as_secs()),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ok(Finished {
        success: status.success(),
        status: status.to_string(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// The probe run by [`status`]: PyTorch's version, whether it sees CUDA, and the GPU's name.
const PROBE: &str = "import json, torch\nok = torch.cuda.is_available()\nprint(json.dumps({'torch': torch.__version__, 'cuda': ok, 'device': torch.cuda.get_device_name(0) if ok else None}))";

/// Whether `python` can run the peer: it starts, imports `torch`, and torch sees a GPU.
pub fn status(python: &str, source: &str) -> PeerStatus {
    let mut s = PeerStatus {
        python: python.to_string(),
        source: source.to_string(),
        torch: None,
        cuda: false,
        device: None,
        ready: false,
        note: String::new(),
    };
    let mut cmd = Command::new(python);
    cmd.arg("-c").arg(PROBE);
    let how = "install a CUDA build of PyTorch (pip install torch) and choose that Python here, or set SHOWDOWN_PYTHON";
    match run_to_end(cmd, Duration::from_secs(60), &|| false) {
        Err(e) => s.note = format!("PyTorch is not beside our rows: {e}; {how}"),
        Ok(f) if !f.success => {
            s.note = format!(
                "PyTorch is not beside our rows: {python} cannot import torch ({}); {how}",
                f.last_error_line()
            )
        }
        Ok(f) => {
            let v: serde_json::Value = f
                .stdout
                .lines()
                .rev()
                .find_map(|l| serde_json::from_str(l).ok())
                .unwrap_or_default();
            s.torch = v.get("torch").and_then(|t| t.as_str()).map(str::to_string);
            s.cuda = v.get("cuda").and_then(|c| c.as_bool()).unwrap_or(false);
            s.device = v.get("device").and_then(|d| d.as_str()).map(str::to_string);
            s.ready = s.torch.is_some() && s.cuda;
            s.note = match (&s.torch, s.cuda) {
                (Some(t), true) => format!(
                    "PyTorch {t} on {} runs beside our rows",
                    s.device.as_deref().unwrap_or("the GPU")
                ),
                (Some(t), false) => format!(
                    "PyTorch {t} found, but it sees no CUDA GPU: the peer's rows need one; {how}"
                ),
                (None, _) => format!("{python} answered without a torch version; {how}"),
            };
        }
    }
    s
}

/// Runs peer `script` with `args` under `python`, writing the script to a temporary folder
/// first; its stdout, or why it failed (a sentence for the report's `peer_failure`). The job
/// is told the stage; a cancel kills the script.
pub fn run(
    python: &str,
    script: PeerScript,
    args: &[String],
    job: &mut LabJob<'_>,
) -> Result<std::result::Result<String, String>> {
    let dir = tempfile::tempdir().map_err(|source| ComputeError::Io {
        path: std::env::temp_dir().display().to_string(),
        source,
    })?;
    let path = dir.path().join(script.file_name());
    std::fs::write(&path, script.source()).map_err(|source| ComputeError::Io {
        path: path.display().to_string(),
        source,
    })?;
    job.stage(format!("PyTorch: {}", script.file_name()), 0, 1)?;
    let mut cmd = Command::new(python);
    cmd.arg(&path).args(args).env("PYTHONUNBUFFERED", "1");
    let cancel = || job.cancelled();
    match run_to_end(cmd, Duration::from_secs(900), &cancel) {
        Ok(f) if f.success => Ok(Ok(f.stdout)),
        Ok(f) => Ok(Err(format!(
            "{}: {}; {}",
            script.file_name(),
            f.status,
            f.last_error_line()
        ))),
        Err(ComputeError::Cancelled) => Err(ComputeError::Cancelled),
        Err(e) => Ok(Err(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_that_is_not_there_gives_a_note_on_how_to_enable_the_peer() {
        let s = status("/nonexistent/python-for-showdown", "setting");
        assert!(!s.ready);
        assert!(s.note.contains("cannot start"), "{}", s.note);
        assert!(s.note.contains("SHOWDOWN_PYTHON"), "{}", s.note);
    }

    #[test]
    fn the_setting_wins_then_the_environment_then_path() {
        assert_eq!(
            choose_python(Some("/opt/py".into())),
            ("/opt/py".into(), "setting")
        );
        let dir = tempfile::tempdir().unwrap();
        set_python_setting(dir.path(), Some("/x/python")).unwrap();
        assert_eq!(
            python_setting(Some(dir.path())).as_deref(),
            Some("/x/python")
        );
        set_python_setting(dir.path(), None).unwrap();
        assert_eq!(python_setting(Some(dir.path())), None);
    }

    #[test]
    fn a_stopped_child_is_killed_and_reported_cancelled() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let t0 = Instant::now();
        let e = run_to_end(cmd, Duration::from_secs(60), &|| true).err();
        assert!(matches!(e, Some(ComputeError::Cancelled)));
        assert!(t0.elapsed() < Duration::from_secs(5));
    }
}
