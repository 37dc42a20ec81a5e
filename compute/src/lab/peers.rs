//! The PyTorch peer: which Python runs it (the app's setting, else `$SHOWDOWN_PYTHON`, else
//! `python3` on PATH), whether that Python has a CUDA-enabled `torch`, and running the peer
//! scripts. The scripts are the repository's `bench/*.py`, compiled into the program so that
//! an installed app runs the same files the repository's benchmarks do; each run writes the
//! script to a fresh temporary folder first.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{LabJob, PeerStatus};
use crate::child::run::{run_limited, secs_text, size_text, Group, Stop, CHILD_POLL};
use crate::child::run::{ChildLimits, Finished};
use crate::error::{ComputeError, Result};

/// A peer script of `bench/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerScript {
    /// `anchor_kernels.py`: the activation and norm kernels (eager and `torch.compile`), the
    /// convolutions through cuDNN, the copy and GEMM ceilings.
    AnchorKernels,
    /// `infer_peer.py`: the lab CNN's inference on our weights (eager, channels-last, graph).
    InferPeer,
    /// `triton_kernels.py`: the activation and norm kernels hand-written in Triton, checked
    /// against f64 before they are timed; a companion of [`PeerScript::AnchorKernels`], which
    /// imports it from its own folder.
    TritonKernels,
    /// `crossover_peer.py`: `torch.matmul` per dtype and `torch._scaled_mm` for FP8 at the
    /// crossover's sizes.
    CrossoverPeer,
}

impl PeerScript {
    /// The script's file name.
    pub fn file_name(self) -> &'static str {
        match self {
            PeerScript::AnchorKernels => "anchor_kernels.py",
            PeerScript::InferPeer => "infer_peer.py",
            PeerScript::TritonKernels => "triton_kernels.py",
            PeerScript::CrossoverPeer => "crossover_peer.py",
        }
    }

    /// The script's text, as committed in `bench/`.
    pub fn source(self) -> &'static str {
        match self {
            PeerScript::AnchorKernels => include_str!("../../../bench/anchor_kernels.py"),
            PeerScript::InferPeer => include_str!("../../../bench/infer_peer.py"),
            PeerScript::TritonKernels => include_str!("../../../bench/triton_kernels.py"),
            PeerScript::CrossoverPeer => include_str!("../../../bench/crossover_peer.py"),
        }
    }

    /// The scripts this one imports from its own folder, written beside it.
    pub fn companions(self) -> &'static [PeerScript] {
        match self {
            PeerScript::AnchorKernels => &[PeerScript::TritonKernels],
            PeerScript::InferPeer | PeerScript::TritonKernels | PeerScript::CrossoverPeer => &[],
        }
    }

    /// Writes the script and its [`companions`](Self::companions) into `dir`; the script's
    /// path.
    pub fn write_to(self, dir: &Path) -> Result<PathBuf> {
        for s in std::iter::once(self).chain(self.companions().iter().copied()) {
            let path = dir.join(s.file_name());
            std::fs::write(&path, s.source()).map_err(|source| ComputeError::Io {
                path: path.display().to_string(),
                source,
            })?;
        }
        Ok(dir.join(self.file_name()))
    }
}

/// The settings file in the data folder (`settings.json`: `{"python": "..."}`).
fn settings_path(root: &Path) -> PathBuf {
    root.join("settings.json")
}

/// The largest settings file read (a larger one is ignored, as if there were none).
const MAX_SETTINGS_BYTES: u64 = 64 << 10;

/// The Python chosen in the app, if any. A settings file that cannot be read, is not JSON or
/// is over [`MAX_SETTINGS_BYTES`] counts as no choice.
pub fn python_setting(root: Option<&Path>) -> Option<String> {
    let f = std::fs::File::open(settings_path(root?)).ok()?;
    let mut text = String::new();
    f.take(MAX_SETTINGS_BYTES + 1)
        .read_to_string(&mut text)
        .ok()?;
    if text.len() as u64 > MAX_SETTINGS_BYTES {
        return None;
    }
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

/// The limits of a peer script: 15 minutes, 16 MiB of output, 4 MiB of errors.
pub const SCRIPT_LIMITS: ChildLimits = ChildLimits {
    time: Duration::from_secs(900),
    stdout_bytes: 16 << 20,
    stderr_bytes: 4 << 20,
};

/// How long the interpreter probe of [`status`] may take by default (importing torch).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Environment variable shortening (or lengthening) [`PROBE_TIMEOUT`], in milliseconds.
pub const PROBE_TIMEOUT_ENV: &str = "SHOWDOWN_PEER_PROBE_TIMEOUT_MS";

/// Most bytes the interpreter probe may print on each stream (it prints one short line).
pub const PROBE_OUTPUT_BYTES: usize = 64 << 10;

/// The probe's limits: [`PROBE_TIMEOUT`] (or `$SHOWDOWN_PEER_PROBE_TIMEOUT_MS`, 100 ms to
/// 10 minutes) and [`PROBE_OUTPUT_BYTES`].
pub fn probe_limits() -> ChildLimits {
    let time = std::env::var(PROBE_TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|ms| Duration::from_millis(ms.clamp(100, 600_000)))
        .unwrap_or(PROBE_TIMEOUT);
    ChildLimits {
        time,
        stdout_bytes: PROBE_OUTPUT_BYTES,
        stderr_bytes: PROBE_OUTPUT_BYTES,
    }
}

/// Runs `cmd` to its end within `limits`, reading its output on threads; kills it (and the
/// processes it started) when `should_stop` says so (a cancelled job:
/// [`ComputeError::Cancelled`]), when it runs past `limits.time` or prints more than its byte
/// limits (an error saying which).
pub fn run_to_end(
    cmd: Command,
    limits: ChildLimits,
    should_stop: &dyn Fn() -> bool,
) -> Result<Finished> {
    let what = cmd.get_program().to_string_lossy().into_owned();
    run_limited(cmd, limits, should_stop, Group::Own, &mut |_| {})
        .map_err(|stop| stop.into_error(&what))
}

/// [`run_to_end`], handing each line of the child's standard output to `on_line` as it comes
/// (a peer that streams its progress); the lines are also in [`Finished::stdout`].
pub fn run_streaming(
    cmd: Command,
    limits: ChildLimits,
    should_stop: &dyn Fn() -> bool,
    on_line: &mut dyn FnMut(&str),
) -> Result<Finished> {
    let what = cmd.get_program().to_string_lossy().into_owned();
    run_limited(cmd, limits, should_stop, Group::Own, on_line)
        .map_err(|stop| stop.into_error(&what))
}

/// [`run_to_end`] for a command-line program: the child stays in the caller's process group,
/// so a terminal's Ctrl-C stops it with the program, and nothing else stops it but `limits`.
pub fn run_in_foreground(cmd: Command, limits: ChildLimits) -> Result<Finished> {
    let what = cmd.get_program().to_string_lossy().into_owned();
    run_limited(cmd, limits, &|| false, Group::Callers, &mut |_| {})
        .map_err(|stop| stop.into_error(&what))
}

/// The probe run by [`status`]: PyTorch's version, whether it sees CUDA, and the GPU's name.
const PROBE: &str = "import json, torch\nok = torch.cuda.is_available()\nprint(json.dumps({'torch': torch.__version__, 'cuda': ok, 'device': torch.cuda.get_device_name(0) if ok else None}))";

/// Whether `python` can run the peer: it starts, imports `torch`, and torch sees a GPU. The
/// probe runs within [`probe_limits`]: an interpreter that hangs or floods its output is
/// stopped and the note says so (the service goes on).
pub fn status(python: &str, source: &str) -> PeerStatus {
    status_within(python, source, probe_limits())
}

/// [`status`] with the probe run within `limits`.
fn status_within(python: &str, source: &str, limits: ChildLimits) -> PeerStatus {
    status_stopping(python, source, limits, &|| false)
}

/// [`status_within`], the probe stopped as soon as `should_stop` says so (a cancelled job).
fn status_stopping(
    python: &str,
    source: &str,
    limits: ChildLimits,
    should_stop: &dyn Fn() -> bool,
) -> PeerStatus {
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
    let mut how = "install a CUDA build of PyTorch (pip install torch) and choose that Python here, or set SHOWDOWN_PYTHON".to_string();
    if source == "setting" {
        how.push_str(
            " (clearing the chosen Python goes back to SHOWDOWN_PYTHON, else python3 on PATH)",
        );
    }
    match run_limited(cmd, limits, should_stop, Group::Own, &mut |_| {}) {
        Err(Stop::Cancelled) => return cancelled_status(python, source),
        Err(Stop::Time(t)) => {
            s.note = format!(
                "PyTorch is not beside our rows: {python} did not answer within {} and was \
                 stopped; {how}",
                secs_text(t)
            )
        }
        Err(Stop::Output { stream, limit }) => {
            s.note = format!(
                "PyTorch is not beside our rows: {python} printed more than {} on its {stream} \
                 and was stopped; {how}",
                size_text(limit)
            )
        }
        Err(e) => {
            s.note = format!(
                "PyTorch is not beside our rows: {}; {how}",
                e.into_error(python)
            )
        }
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

/// The interpreter probes of one service: one probe per interpreter at a time (the other
/// callers wait for its result), the result kept while the interpreter's file is unchanged
/// ([`NOT_READY_KEPT`] at most when the peer cannot run with it) (issue 38: 64 concurrent
/// `peer_status` calls started 64 probes, each importing torch).
/// A caller whose job is cancelled stops waiting, and a probe whose caller is cancelled is
/// stopped (with its process group) within [`CHILD_POLL`]: nothing is kept of it.
#[derive(Debug, Default)]
pub struct ProbeCache {
    slots: std::sync::Mutex<std::collections::HashMap<ProbeKey, Arc<ProbeSlot>>>,
}

/// What a probe's result depends on: the interpreter as found (its path, resolved on PATH
/// for a bare name), its file's modification time, and where the choice came from (the note
/// says how to change it).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ProbeKey {
    python: String,
    resolved: Option<PathBuf>,
    modified: Option<std::time::SystemTime>,
    source: String,
}

/// One interpreter's probe: whether a caller runs it now, and its result (with when it was
/// had) once there is one.
#[derive(Debug, Default)]
struct ProbeSlot {
    state: std::sync::Mutex<(bool, Option<(Instant, PeerStatus)>)>,
    changed: std::sync::Condvar,
}

/// How long a probe's result that the peer cannot use (no torch, no GPU, a hang) is kept: a
/// user who installs torch into the same interpreter (its file unchanged) sees it soon. A
/// ready interpreter's result is kept while its file is unchanged.
const NOT_READY_KEPT: Duration = Duration::from_secs(30);

/// `python` as the system would run it: a path as given, a bare name looked up on `PATH`;
/// `None` when no such file is found.
pub fn resolve_python(python: &str) -> Option<PathBuf> {
    if python.contains('/') {
        let p = PathBuf::from(python);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(python))
            .find(|p| p.is_file())
    })
}

impl ProbeCache {
    /// The status of `python` (chosen by `source`): the cached result while its file is
    /// unchanged, else the result of one probe, shared with every caller waiting meanwhile.
    /// `cancel` (a job's flag) stops the wait or the probe: the answer then says so, and is
    /// not kept.
    pub fn status(&self, python: &str, source: &str, cancel: &AtomicBool) -> PeerStatus {
        let resolved = resolve_python(python);
        let modified = resolved
            .as_deref()
            .and_then(|p| std::fs::metadata(p).ok())
            .and_then(|m| m.modified().ok());
        let key = ProbeKey {
            python: python.to_string(),
            resolved,
            modified,
            source: source.to_string(),
        };
        let slot = {
            let mut slots = crate::sync::lock(&self.slots);
            // Results of an interpreter's older files (or choices) go.
            slots.retain(|k, _| k.python != key.python || *k == key);
            Arc::clone(slots.entry(key).or_default())
        };
        {
            let mut state = crate::sync::lock(&slot.state);
            loop {
                if let Some((at, done)) = &state.1 {
                    if done.ready || at.elapsed() < NOT_READY_KEPT {
                        return done.clone();
                    }
                }
                if cancel.load(Ordering::Relaxed) {
                    return cancelled_status(python, source);
                }
                if !state.0 {
                    state.0 = true;
                    break;
                }
                state = slot
                    .changed
                    .wait_timeout(state, CHILD_POLL)
                    .map(|(s, _)| s)
                    .unwrap_or_else(|poisoned| poisoned.into_inner().0);
            }
        }
        // Whatever happens to this probe (a panic included), the waiters are let go.
        let _probing = Probing(&slot);
        let stop = || cancel.load(Ordering::Relaxed);
        let status = status_stopping(python, source, probe_limits(), &stop);
        if !stop() {
            crate::sync::lock(&slot.state).1 = Some((Instant::now(), status.clone()));
        }
        status
    }
}

/// Marks a slot's probe as ended when dropped, and wakes its waiters.
struct Probing<'a>(&'a ProbeSlot);

impl Drop for Probing<'_> {
    fn drop(&mut self) {
        crate::sync::lock(&self.0.state).0 = false;
        self.0.changed.notify_all();
    }
}

/// The status answered to a caller cancelled while its probe ran or waited.
fn cancelled_status(python: &str, source: &str) -> PeerStatus {
    PeerStatus {
        python: python.to_string(),
        source: source.to_string(),
        torch: None,
        cuda: false,
        device: None,
        ready: false,
        note: "the job was cancelled before the interpreter's probe ended".into(),
    }
}

/// Runs peer `script` with `args` under `python`, writing the script to a temporary folder
/// first; its stdout, or why it failed (a sentence for the report's `peer_failure`: a script
/// that runs past [`SCRIPT_LIMITS`] or prints past them is stopped). The job is told the
/// stage; a cancel kills the script.
pub fn run(
    python: &str,
    script: PeerScript,
    args: &[String],
    job: &mut LabJob<'_>,
) -> Result<std::result::Result<String, String>> {
    let dir = crate::child::temp_dir().map_err(|source| ComputeError::Io {
        path: "the temporary folder".into(),
        source,
    })?;
    let path = script.write_to(dir.path())?;
    job.stage(format!("PyTorch: {}", script.file_name()), 0, 1)?;
    let mut cmd = Command::new(python);
    cmd.arg(&path).args(args).env("PYTHONUNBUFFERED", "1");
    let cancel = || job.cancelled();
    match run_to_end(cmd, SCRIPT_LIMITS, &cancel) {
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
pub(crate) mod tests {
    use super::*;

    /// Issue 29: `anchor_kernels.py` imports `triton_kernels.py` from its own folder, so the
    /// temporary folder a peer run uses holds both.
    #[test]
    fn the_anchor_script_is_written_with_its_triton_companion() {
        let dir = tempfile::tempdir().unwrap();
        let path = PeerScript::AnchorKernels.write_to(dir.path()).unwrap();
        assert_eq!(path, dir.path().join("anchor_kernels.py"));
        let anchor = std::fs::read_to_string(&path).unwrap();
        assert!(
            anchor.contains("import triton_kernels"),
            "the anchor imports it"
        );
        let triton = std::fs::read_to_string(dir.path().join("triton_kernels.py")).unwrap();
        assert_eq!(triton, PeerScript::TritonKernels.source());
        assert!(triton.contains("@triton.jit") && triton.contains("def run("));
        let d2 = tempfile::tempdir().unwrap();
        PeerScript::InferPeer.write_to(d2.path()).unwrap();
        assert!(!d2.path().join("triton_kernels.py").exists());
    }

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

    /// A shell script `body` in a fresh folder, executable: a fake interpreter.
    #[cfg(unix)]
    pub(crate) fn fake_python(body: &str) -> (tempfile::TempDir, String) {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("python");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        (dir, path.display().to_string())
    }

    /// Issue 30: an interpreter that does not answer is stopped at the probe's time limit
    /// (with what it started), and the status says so.
    #[cfg(unix)]
    #[test]
    fn a_hanging_interpreter_is_stopped_at_the_probe_time_limit() {
        let (_dir, python) = fake_python("sleep 20");
        let limits = ChildLimits {
            time: Duration::from_millis(300),
            ..probe_limits()
        };
        let t0 = Instant::now();
        let s = status_within(&python, "setting", limits);
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        assert!(!s.ready);
        assert!(
            s.note
                .contains("did not answer within 0.3 s and was stopped"),
            "{}",
            s.note
        );
        assert!(s.note.contains("clearing the chosen Python"), "{}", s.note);
    }

    /// Issue 30: an interpreter printing without end is stopped at the byte limit; what was
    /// read stays within it.
    #[cfg(unix)]
    #[test]
    fn an_interpreter_printing_without_end_is_stopped_at_the_output_limit() {
        let (_dir, python) = fake_python("yes 0123456789abcdef0123456789abcdef");
        let t0 = Instant::now();
        let s = status_within(&python, "setting", probe_limits());
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        assert!(
            s.note
                .contains("printed more than 64 KiB on its standard output and was stopped"),
            "{}",
            s.note
        );
        let mut cmd = Command::new(&python);
        cmd.arg("-c").arg("x");
        let e = run_to_end(cmd, SCRIPT_LIMITS, &|| false).err().unwrap();
        assert!(e.to_string().contains("more than 16 MiB"), "{e}");
        // A flood on standard error is stopped the same way.
        let (_dir2, python) = fake_python("yes 0123456789abcdef >&2");
        let e = run_to_end(Command::new(&python), SCRIPT_LIMITS, &|| false)
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .contains("more than 4 MiB on its standard error"),
            "{e}"
        );
    }

    /// A settings file that is not a settings file counts as no choice.
    #[test]
    fn an_oversized_or_broken_settings_file_is_no_choice() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("settings.json"),
            format!(r#"{{"python":"{}"}}"#, "p".repeat(100_000)),
        )
        .unwrap();
        assert_eq!(python_setting(Some(dir.path())), None);
        std::fs::write(dir.path().join("settings.json"), "{").unwrap();
        assert_eq!(python_setting(Some(dir.path())), None);
    }

    /// Regression (issue 38, defect 6): 64 concurrent `peer_status` calls started 64
    /// interpreter probes. One probe per interpreter runs now, the other callers wait for its
    /// result, which is kept until the interpreter's file changes.
    #[cfg(unix)]
    #[test]
    fn concurrent_peer_status_calls_start_one_probe_per_interpreter() {
        let count = tempfile::tempdir().unwrap();
        let log = count.path().join("probes");
        let (_dir, python) = fake_python(&format!(
            "echo probe >> '{}'\nsleep 0.5\n\
             echo '{{\"torch\": \"2.5\", \"cuda\": false, \"device\": null}}'",
            log.display()
        ));
        let cache = ProbeCache::default();
        let never = AtomicBool::new(false);
        let answers: Vec<PeerStatus> = std::thread::scope(|s| {
            let calls: Vec<_> = (0..16)
                .map(|_| s.spawn(|| cache.status(&python, "SHOWDOWN_PYTHON", &never)))
                .collect();
            calls.into_iter().map(|c| c.join().unwrap()).collect()
        });
        let probes = || std::fs::read_to_string(&log).unwrap().lines().count();
        assert_eq!(probes(), 1, "one probe for 16 concurrent calls");
        assert!(answers.iter().all(|a| a.torch.as_deref() == Some("2.5")));
        cache.status(&python, "SHOWDOWN_PYTHON", &never);
        assert_eq!(probes(), 1, "the result is kept");
        // A changed interpreter is probed again.
        let later = std::time::SystemTime::now() + Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&python)
            .unwrap()
            .set_modified(later)
            .unwrap();
        cache.status(&python, "SHOWDOWN_PYTHON", &never);
        assert_eq!(probes(), 2, "a new modification time is probed again");
    }

    /// Regression (issue 38, defect 1): a cancel waited for the interpreter probe (a duel
    /// "with PyTorch" cancelled 1 s in answered `freed: false` and ended 7–9 s later). The
    /// probe now stops as soon as its caller's job is cancelled, whatever the child does, and
    /// nothing of it is kept: the next caller probes again.
    #[cfg(unix)]
    #[test]
    fn a_cancel_stops_a_hanging_interpreter_probe_within_a_second() {
        let (_dir, python) = fake_python("trap '' TERM\nsleep 30 &\nwait");
        let cache = ProbeCache::default();
        let cancel = AtomicBool::new(false);
        let (status, after_cancel) = std::thread::scope(|s| {
            let probe = s.spawn(|| cache.status(&python, "setting", &cancel));
            std::thread::sleep(Duration::from_millis(300));
            cancel.store(true, Ordering::Relaxed);
            let t0 = Instant::now();
            let status = probe.join().unwrap();
            (status, t0.elapsed())
        });
        assert!(after_cancel < Duration::from_secs(1), "{after_cancel:?}");
        assert!(!status.ready);
        assert!(status.note.contains("cancelled"), "{}", status.note);
        let slots = crate::sync::lock(&cache.slots);
        assert!(slots
            .values()
            .all(|s| crate::sync::lock(&s.state).1.is_none()));
    }

    #[test]
    fn a_stopped_child_is_killed_and_reported_cancelled() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let t0 = Instant::now();
        let e = run_to_end(cmd, SCRIPT_LIMITS, &|| true).err();
        assert!(matches!(e, Some(ComputeError::Cancelled)));
        assert!(t0.elapsed() < Duration::from_secs(5));
    }
}
