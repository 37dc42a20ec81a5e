//! Every child process the engine starts (the PyTorch peer's probe and scripts, ncu), owned
//! in one place (issue 38, defect 2: children and temporary folders outlived their owner):
//!
//! - [`spawn`] starts a command in a process group of its own, with a parent-death signal on
//!   Linux (the child is killed when the thread that started it goes, as when the compute
//!   process is killed), retrying while the program file is still busy being written
//!   (ETXTBSY);
//! - [`Family`] follows what the child starts (its descendants, found through `/proc` while
//!   it runs, a process that started a session of its own included) and [`Family::end`] kills
//!   them all, with the group, however the child ended: its normal exit, a cancel, a time or
//!   output limit;
//! - [`run::run_limited`] runs a child to its end within a time and a cap on each output
//!   stream ([`run::ChildLimits`]), stopped when its caller says so;
//! - [`temp_dir`] makes a child's temporary folder under a name that says which process owns
//!   it, removed when dropped, and [`sweep_stale_temp_dirs`] removes those of processes that
//!   are gone (run when the compute process starts);
//! - every child carries [`OWNER_ENV`] (its owner's pid) in its environment, which what it
//!   starts inherits: [`sweep_stale_children`] kills the processes whose owner is gone (a
//!   compute process killed with `kill -9` kills its children through their parent-death
//!   signal, but not what they started);
//! - every child also carries [`FAMILY_ENV`] (its owner's pid and a number of its own), which
//!   [`Family::end`] looks for: what the child started and left before it was seen (a script
//!   that starts a process in its own session and exits at once) is killed with the rest.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

pub mod run;

/// The start of the name of every temporary folder a child gets: `showdown-child-PID-…`.
pub const TEMP_PREFIX: &str = "showdown-child-";

/// The environment variable naming the process that started a child (its pid), inherited by
/// what the child starts.
pub const OWNER_ENV: &str = "SHOWDOWN_CHILD_OF";

/// The environment variable naming a child's family (`OWNER-N`: its owner's pid and a number
/// of its own), inherited by what the child starts; [`Family::end`] kills every process that
/// carries it.
pub const FAMILY_ENV: &str = "SHOWDOWN_CHILD_FAMILY";

/// The number of the next family [`spawn`] starts.
static NEXT_FAMILY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The [`FAMILY_ENV`] value of each child [`spawn`] started, by pid, until [`Family::of`]
/// takes it (a child may have ended, its environment no longer readable, by then); the newest
/// [`TAGS_KEPT`] at most.
static TAGS: std::sync::Mutex<Vec<(u32, String)>> = std::sync::Mutex::new(Vec::new());

/// How many [`TAGS`] are kept for children whose [`Family`] was not asked for.
const TAGS_KEPT: usize = 256;

/// Starts `cmd` in a process group of its own (the group's id is the child's pid) and, on
/// Linux, with SIGKILL as its parent-death signal; again a few times while the program file is
/// still busy being written (a script just written, whose write handle another thread's fork
/// briefly holds).
pub fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    cmd.env(OWNER_ENV, std::process::id().to_string());
    let family = NEXT_FAMILY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tag = format!("{}-{family}", std::process::id());
    cmd.env(FAMILY_ENV, &tag);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        // SAFETY: the closure runs in the forked child before exec and calls only prctl and
        // getppid, which are async-signal-safe; it allocates nothing (its errors are OS
        // error codes).
        unsafe {
            let parent = libc::getpid();
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent died before the signal was set: go now.
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    let child = spawn_retrying(cmd)?;
    let mut tags = TAGS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if tags.len() >= TAGS_KEPT {
        tags.remove(0);
    }
    tags.push((child.id(), tag));
    Ok(child)
}

/// Starts `cmd` as it is set (in the caller's process group when it says nothing else), again
/// a few times while the program file is busy (ETXTBSY).
pub fn spawn_retrying(cmd: &mut Command) -> std::io::Result<Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            // ETXTBSY on Linux.
            Err(e) if e.raw_os_error() == Some(26) && tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(25));
            }
            other => return other,
        }
    }
}

/// A process as `/proc` names it: its pid and its start time (a pid reused later is another
/// process).
type Proc = (u32, u64);

/// How often [`Family::watch`] looks through `/proc` at most: each look reads every
/// process's `stat`, which a peer script timing PyTorch for hours must not pay 50 times a
/// second.
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// The most looks through `/proc` that [`Family::end`] makes for processes carrying the
/// family's mark (it stops after two in a row find none).
const MAX_SWEEPS: usize = 20;

/// A child started by [`spawn`] and the processes it started, seen so far.
#[derive(Debug)]
pub struct Family {
    /// The child's pid, also its process group's id.
    pid: u32,
    /// Its [`FAMILY_ENV`] value, as [`spawn`] gave it.
    tag: Option<String>,
    /// Its descendants seen by [`Family::watch`].
    seen: HashSet<Proc>,
    /// When `/proc` was last looked through.
    looked: Option<std::time::Instant>,
}

impl Family {
    /// The family of `child` (started by [`spawn`]).
    pub fn of(child: &Child) -> Family {
        Family {
            pid: child.id(),
            tag: take_tag(child.id()).or_else(|| env_var(child.id(), FAMILY_ENV)),
            seen: HashSet::new(),
            looked: None,
        }
    }

    /// Notes the child's descendants alive now (call it while the child runs, as often as
    /// wanted: it looks at most every [`WATCH_EVERY`]; a process that leaves its group or
    /// starts its own session is still found by its parent).
    pub fn watch(&mut self) {
        if self.looked.is_some_and(|t| t.elapsed() < WATCH_EVERY) {
            return;
        }
        self.look();
    }

    /// Notes the child's descendants alive now, whenever it was looked last.
    fn look(&mut self) {
        self.looked = Some(std::time::Instant::now());
        self.seen.extend(descendants(self.pid));
    }

    /// Kills the child's process group, every descendant seen (still the same process) and
    /// every process carrying the family's [`FAMILY_ENV`] (one started and left between two
    /// looks), then the child itself, and reaps it.
    pub fn end(mut self, child: &mut Child) {
        self.look();
        kill_group(self.pid);
        for (pid, started) in &self.seen {
            if start_time(*pid) == Some(*started) {
                kill_group(*pid);
                kill_pid(*pid);
            }
        }
        if let Some(tag) = &self.tag {
            // Again until two looks 10 ms apart find none: one may have started another just
            // before its kill, and a process in the middle of `exec` shows an empty
            // environment for a moment (a session a script started as it exited outlived the
            // family when the one look that found nothing ended the sweep: the 100-round
            // churn test, 1 run in 5 beside a fork-and-exec load).
            let mut quiet = 0;
            for _ in 0..MAX_SWEEPS {
                if kill_carrying(FAMILY_ENV, tag) > 0 {
                    quiet = 0;
                    continue;
                }
                quiet += 1;
                if quiet == 2 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The [`FAMILY_ENV`] value [`spawn`] gave child `pid`, taken out of [`TAGS`].
fn take_tag(pid: u32) -> Option<String> {
    let mut tags = TAGS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let i = tags.iter().position(|(p, _)| *p == pid)?;
    Some(tags.remove(i).1)
}

/// The value of variable `name` in process `pid`'s environment as it started
/// (`/proc/PID/environ`, readable for this user's processes only; Linux).
fn env_var(pid: u32, name: &str) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{name}=");
    environ
        .split(|b| *b == 0)
        .filter_map(|var| std::str::from_utf8(var).ok())
        .find_map(|var| var.strip_prefix(&prefix).map(str::to_string))
}

/// Sends SIGKILL to every process (but this one) whose environment sets `name` to `value`;
/// answers how many it found alive (zombies left out).
fn kill_carrying(name: &str, value: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut killed = 0;
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !zombie(pid) && env_var(pid, name).as_deref() == Some(value)
        {
            kill_pid(pid);
            killed += 1;
        }
    }
    killed
}

/// Whether process `pid` has ended and waits to be reaped (`/proc/PID/stat`'s state `Z`).
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|text| {
        text.rfind(')')
            .and_then(|i| text.get(i + 2..i + 3))
            .is_some_and(|state| state == "Z")
    })
}

/// Sends SIGKILL to the process group `pgid` (nothing when there is none).
pub fn kill_group(pgid: u32) {
    #[cfg(unix)]
    if let Ok(id) = libc::pid_t::try_from(pgid) {
        if id > 1 {
            // SAFETY: kill only sends a signal; a negative id names a process group.
            unsafe {
                libc::kill(-id, libc::SIGKILL);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = pgid;
}

/// Sends SIGKILL to process `pid`.
fn kill_pid(pid: u32) {
    #[cfg(unix)]
    if let Ok(id) = libc::pid_t::try_from(pid) {
        if id > 1 {
            // SAFETY: kill only sends a signal.
            unsafe {
                libc::kill(id, libc::SIGKILL);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// The parent and start time of process `pid` (`/proc/PID/stat`, Linux); `None` elsewhere or
/// when it is gone.
fn stat(pid: u32) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold anything: read after the
    // last ')'. Then: state, ppid, …; the start time is field 22.
    let rest = text.get(text.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ppid = fields.get(1)?.parse().ok()?;
    let started = fields.get(19)?.parse().ok()?;
    Some((ppid, started))
}

/// The start time of process `pid`, when it is alive.
fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|(_, started)| started)
}

/// The processes descending from `root` now (not `root` itself).
fn descendants(root: u32) -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<u32, Vec<Proc>> = HashMap::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((ppid, started)) = stat(pid) {
            children.entry(ppid).or_default().push((pid, started));
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for &(c, started) in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            if !out.iter().any(|(x, _)| *x == c) {
                out.push((c, started));
                todo.push(c);
            }
        }
    }
    out
}

/// A fresh temporary folder for a child, named `showdown-child-PID-…` after this process
/// (so that [`sweep_stale_temp_dirs`] can tell when its owner is gone); removed when dropped.
pub fn temp_dir() -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
        .tempdir()
}

/// Removes the children's temporary folders in `dir` whose owning process is gone (a compute
/// process killed during a peer's run); answers how many were removed. Best effort.
pub fn sweep_stale_temp_dirs(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir
            && owner != std::process::id()
            && gone(owner)
            && std::fs::remove_dir_all(e.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Kills the processes (of this user: `/proc/PID/environ` is readable for those only) whose
/// [`OWNER_ENV`] names a process that is gone: what the children of a killed compute process
/// left running. Answers how many were killed. Best effort; Linux only.
pub fn sweep_stale_children() -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let marker = format!("{OWNER_ENV}=");
    let mut killed = 0;
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(environ) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        let owner = environ
            .split(|b| *b == 0)
            .filter_map(|var| std::str::from_utf8(var).ok())
            .find_map(|var| var.strip_prefix(&marker))
            .and_then(|owner| owner.parse::<u32>().ok());
        if let Some(owner) = owner {
            if owner != std::process::id() && pid != std::process::id() && gone(owner) {
                kill_pid(pid);
                killed += 1;
            }
        }
    }
    killed
}

/// Whether no process `pid` exists.
fn gone(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(id) = libc::pid_t::try_from(pid) else {
            return true;
        };
        // SAFETY: signal 0 only checks whether the process exists.
        let r = unsafe { libc::kill(id, 0) };
        r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The live processes whose command line holds `token`.
    pub(crate) fn alive_with(token: &str) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .filter(|e| {
                let state = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                let zombie = state
                    .rfind(')')
                    .and_then(|i| state.get(i + 2..i + 3))
                    .is_some_and(|s| s == "Z");
                let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                !zombie && String::from_utf8_lossy(&cmdline).contains(token)
            })
            .count()
    }

    /// Regression (issue 38, defect 2): a child that a peer script started in a session of
    /// its own, or in its own group, outlived the script's normal exit (and a cancel). Every
    /// descendant seen is killed when the family ends.
    #[test]
    fn processes_a_child_starts_do_not_outlive_it() {
        let dir = temp_dir().unwrap();
        let token = format!("tok{}x{}", std::process::id(), line!());
        let script = dir.path().join("peer");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nsetsid sh -c 'sleep 300 # {token}' &\n\
                 sh -c 'sleep 300 # {token}' &\nsleep 1\nexit 0\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut child = spawn(&mut Command::new(&script)).unwrap();
        let mut family = Family::of(&child);
        while child.try_wait().unwrap().is_none() {
            family.watch();
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            alive_with(&token),
            2,
            "the script left two processes running"
        );
        family.end(&mut child);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(alive_with(&token), 0, "none is left");
    }

    /// Regression (issue 38, defect 2, found by the 100-round test in
    /// cli/tests/serve_peer_churn.rs): a script that starts a process in a session of its own
    /// and exits at once, before any look through `/proc`, left it running (reparented to
    /// init, no longer a descendant). The family's mark in its environment finds it.
    #[test]
    fn a_session_started_just_before_the_script_exits_does_not_outlive_it() {
        let dir = temp_dir().unwrap();
        let token = format!("tok{}x{}", std::process::id(), line!());
        let script = dir.path().join("peer");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh
setsid sh -c 'sleep 300 # {token}' &
exit 0
"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut child = spawn(&mut Command::new(&script)).unwrap();
        let family = Family::of(&child);
        child.wait().unwrap();
        // Until one is left, twice in a row: while `setsid` and `sh` fork and exec, a copy
        // carrying the token lives for a moment beside it (CI counted 2 once, under a build).
        let t0 = std::time::Instant::now();
        let mut seen = alive_with(&token);
        while t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
            let now = alive_with(&token);
            if (seen, now) == (1, 1) {
                break;
            }
            seen = now;
        }
        assert_eq!(seen, 1, "the script left its session running");
        family.end(&mut child);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(alive_with(&token), 0, "none is left");
    }

    /// Regression (issue 38, defect 2): what a peer script started outlived a compute process
    /// killed with `kill -9` (the script itself dies by its parent-death signal). A process
    /// whose owner is gone is killed at the next start; one whose owner lives is kept.
    #[test]
    fn processes_left_by_a_dead_owner_are_swept() {
        let token = format!("{}", 290 + std::process::id() % 9);
        let start = |owner: u32| {
            Command::new("sleep")
                .arg(format!("{token}.{owner}"))
                .env(OWNER_ENV, owner.to_string())
                .spawn()
                .unwrap()
        };
        // pid_max is at most 2^22 on Linux: no process has this pid.
        let mut orphan = start(4_194_999);
        let mut kept = start(std::process::id());
        std::thread::sleep(Duration::from_millis(100));
        let swept = sweep_stale_children();
        assert!(swept >= 1, "{swept}");
        let status = orphan.wait().unwrap();
        assert!(!status.success(), "killed: {status}");
        assert!(
            kept.try_wait().unwrap().is_none(),
            "a live owner's child is kept"
        );
        kept.kill().unwrap();
        kept.wait().unwrap();
    }

    /// Regression (issue 38, defect 2): a compute process killed during a peer's run left the
    /// script's temporary folder behind. A folder whose owner is gone is swept; one of a live
    /// process is kept.
    #[test]
    fn temporary_folders_of_a_dead_owner_are_swept() {
        let root = tempfile::tempdir().unwrap();
        // pid_max is at most 2^22 on Linux: no process has this pid.
        let dead = root.path().join(format!("{TEMP_PREFIX}4194999-abc"));
        let live = root
            .path()
            .join(format!("{TEMP_PREFIX}{}-abc", std::process::id()));
        let other = root.path().join("somebody-else");
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("script.py"), "x").unwrap();
        }
        assert_eq!(sweep_stale_temp_dirs(root.path()), 1);
        assert!(!dead.exists() && live.exists() && other.exists());
        let t = temp_dir().unwrap();
        let name = t.path().file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with(&format!("{TEMP_PREFIX}{}-", std::process::id())));
    }
}
