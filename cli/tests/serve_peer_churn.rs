//! Issue 38, defect 2 ("Done when"): after 100 cancels, exits and kill -9s of the compute
//! process during the PyTorch peer's work, no process of the peer's family and no temporary
//! folder is left, counted; nor after the interpreter probe. Fake interpreters stand in for
//! PyTorch; the CPU duel is tiny.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails by panicking

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const LONG: Duration = Duration::from_secs(60);

/// The compute process (`serve --stdio`) with its own data folder and temporary folder.
struct Sidecar {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Sidecar {
    fn start(home: &Path, tmp: &Path) -> Sidecar {
        let mut child = Command::new(env!("CARGO_BIN_EXE_showdown"))
            .env("SHOWDOWN_DATA_HOME", home)
            .env("TMPDIR", tmp)
            .env_remove("SHOWDOWN_PYTHON")
            .args(["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("showdown starts");
        let stdin = child.stdin.take().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Sidecar {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, id: u64, request: Value) {
        writeln!(self.stdin, "{}", json!({"id": id, "request": request})).unwrap();
        self.stdin.flush().unwrap();
    }

    /// The final reply of request `id` (events skipped).
    fn final_of(&self, id: u64) -> Value {
        self.finals(&[id]).remove(0)
    }

    /// The final replies of `ids`, in the order of `ids`, however they come (events skipped).
    fn finals(&self, ids: &[u64]) -> Vec<Value> {
        let deadline = Instant::now() + LONG;
        let mut got: Vec<Option<Value>> = vec![None; ids.len()];
        while got.iter().any(Option::is_none) {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no final replies to {ids:?}: {e} ({got:?})"));
            let v: Value = serde_json::from_str(&line).unwrap();
            if v.get("event").is_some() {
                continue;
            }
            if let Some(i) = ids.iter().position(|id| v["id"] == *id) {
                got[i] = Some(v);
            }
        }
        got.into_iter().flatten().collect()
    }

    /// A duel "with PyTorch" on 64 images, one epoch, FP32: our side is quick, then the peer.
    fn duel(&mut self, id: u64) {
        self.send(
            id,
            json!({"op": "duel", "config": {"backend": "cpu", "dataset": "mnist-sample",
                "precisions": ["fp32"], "epochs": 1, "train_limit": 64, "test_limit": 64,
                "threads": 1, "pytorch": true}}),
        );
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fake interpreter at `path`: its probe says torch is there; as the peer script it says
/// so, starts two children carrying `marker` (one in a session of its own, one in the
/// script's group), then runs without end, or exits at once when `exits`.
fn fake_python(path: &Path, marker: &str, exits: bool) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let end = if exits {
        "exit 0"
    } else {
        "while :; do sleep 1; done"
    };
    std::fs::write(
        path,
        format!(
            r#"#!/bin/sh
if [ "$1" = "-c" ]; then echo '{{"torch": "2.11.0", "cuda": false, "device": null}}'; exit 0; fi
echo '{{"kind":"env","torch":"2.11.0","device":"CPU"}}'
setsid sh -c 'sleep 300; :' {marker}-session &
sh -c 'sleep 300; :' {marker}-group &
{end}
"#
        ),
    )
    .unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_path_buf()
}

/// Chooses `python` in the data folder's settings (as `peer_set_python` leaves it).
fn choose(home: &Path, python: &Path) {
    std::fs::write(
        home.join("settings.json"),
        json!({ "python": python }).to_string(),
    )
    .unwrap();
}

/// The live processes (zombies left out) whose command line holds `token`, or whose
/// environment names one of `owners` as the process that started their family
/// (`SHOWDOWN_CHILD_OF`, the compute process's mark on every child it starts).
fn left(token: &str, owners: &[u32]) -> Vec<String> {
    let marks: Vec<String> = owners
        .iter()
        .map(|o| format!("SHOWDOWN_CHILD_OF={o}"))
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let zombie = stat
                .rfind(')')
                .and_then(|i| stat.get(i + 2..i + 3))
                .is_some_and(|s| s == "Z");
            let cmdline = String::from_utf8_lossy(
                &std::fs::read(e.path().join("cmdline")).unwrap_or_default(),
            )
            .replace('\0', " ");
            let environ = std::fs::read(e.path().join("environ")).unwrap_or_default();
            let owned = environ
                .split(|b| *b == 0)
                .any(|var| marks.iter().any(|m| var == m.as_bytes()));
            (!zombie && (cmdline.contains(token) || owned))
                .then(|| format!("{}: {cmdline}", e.file_name().to_string_lossy()))
        })
        .collect()
}

/// The entries of the temporary folder.
fn folders(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Waits until the peer script has started both its children (`marker`'s two processes).
fn peer_working(marker: &str) {
    let deadline = Instant::now() + LONG;
    while left(marker, &[]).len() < 2 {
        assert!(Instant::now() < deadline, "the peer script never started");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Regression (issue 38, defect 2, "Done when"): a peer script's child in its own group or
/// session, the probe's children, and everything of a compute process killed with -9
/// outlived their owner, with their `/tmp/.tmp…` folders. 100 rounds of peer work (34
/// cancels, 33 normal exits, 33 kill -9s of the compute process) now leave no process
/// carrying the peer's mark or the compute process's child mark, and no temporary folder.
#[test]
fn a_hundred_cancels_exits_and_kill_9s_during_peer_work_leave_no_process_and_no_folder() {
    let started = Instant::now();
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let marker = format!("peer-churn-{}", std::process::id());
    let runs_on = fake_python(&bin.path().join("python-runs-on"), &marker, false);
    let exits = fake_python(&bin.path().join("python-exits"), &marker, true);
    let mut owners = Vec::new();
    let (mut cancels, mut exited, mut killed) = (0, 0, 0);

    // Cancels and normal exits, one compute process.
    let mut s = Sidecar::start(home.path(), tmp.path());
    owners.push(s.child.id());
    let mut id = 0;
    for round in 0..67 {
        id += 2;
        if round % 2 == 0 {
            choose(home.path(), &runs_on);
            s.duel(id);
            peer_working(&marker);
            s.send(id + 1, json!({"op": "cancel"}));
            let replies = s.finals(&[id, id + 1]);
            assert_eq!(replies[1]["ok"]["freed"], true, "{}", replies[1]);
            cancels += 1;
        } else {
            choose(home.path(), &exits);
            s.duel(id);
            s.final_of(id);
            exited += 1;
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while !left(&marker, &owners).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let alive = left(&marker, &owners);
        assert!(alive.is_empty(), "round {round}: left {alive:#?}");
        let kept = folders(tmp.path());
        assert!(kept.is_empty(), "round {round}: left {kept:?}");
    }
    drop(s);

    // kill -9 of the compute process while the peer works; each next start sweeps what the
    // killed one left.
    choose(home.path(), &runs_on);
    for _ in 0..33 {
        let mut s = Sidecar::start(home.path(), tmp.path());
        owners.push(s.child.id());
        // Started, and what the last one killed left is swept.
        s.send(1, json!({"op": "doctor"}));
        s.final_of(1);
        let deadline = Instant::now() + Duration::from_secs(2);
        while !left(&marker, &[]).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let alive = left(&marker, &[]);
        assert!(alive.is_empty(), "not swept at the start: {alive:#?}");
        s.duel(2);
        peer_working(&marker);
        s.child.kill().unwrap();
        s.child.wait().unwrap();
        killed += 1;
    }
    let mut last = Sidecar::start(home.path(), tmp.path());
    owners.push(last.child.id());
    last.send(1, json!({"op": "doctor"}));
    last.final_of(1);
    drop(last);
    let deadline = Instant::now() + Duration::from_secs(3);
    while !left(&marker, &owners).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let alive = left(&marker, &owners);
    let kept = folders(tmp.path());
    eprintln!(
        "{cancels} cancels, {exited} exits, {killed} kill -9s in {:?}: {} processes and {} \
         folders left",
        started.elapsed(),
        alive.len(),
        kept.len()
    );
    assert_eq!(cancels + exited + killed, 100);
    assert!(alive.is_empty(), "left {alive:#?}");
    assert!(kept.is_empty(), "left {kept:?}");
}

/// Regression (issue 38, defect 2): the interpreter probe's background children survived
/// every `peer_status` (8 were left after 3 calls). Three probes of three interpreters, each
/// leaving a process in the background (one in a session of its own) as it answers, leave
/// none running.
#[test]
fn stdio_the_probes_background_children_do_not_outlive_peer_status() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let marker = format!("probe-bg-{}", std::process::id());
    let mut s = Sidecar::start(home.path(), tmp.path());
    for k in 0..3u64 {
        let python = bin.path().join(format!("python-{k}"));
        std::fs::write(
            &python,
            format!(
                "#!/bin/sh\nsh -c 'sleep 300; :' {marker}-group >/dev/null 2>&1 &\n\
                 setsid sh -c 'sleep 300; :' {marker}-session >/dev/null 2>&1 &\n\
                 echo '{{\"torch\": \"2.11.0\", \"cuda\": false, \"device\": null}}'\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        choose(home.path(), &python);
        s.send(k, json!({"op": "peer_status"}));
        let status = s.final_of(k);
        assert_eq!(status["ok"]["torch"], "2.11.0", "{status}");
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while !left(&marker, &[]).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let alive = left(&marker, &[]);
    assert!(alive.is_empty(), "left after 3 probes: {alive:#?}");
    assert!(folders(tmp.path()).is_empty());
}
