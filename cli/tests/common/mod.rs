//! Helpers shared by the CLI's integration tests (`mod common;` in each test file).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)] // a test helper fails by panicking

use std::io::Write;
use std::process::Command;

/// Runs `showdown args` (stdin: an endless stream of zeros if `zeros`, else nothing), killing
/// it after `limit`; returns its exit code, stderr, run time and peak resident set in KiB.
#[cfg(target_os = "linux")]
pub fn run_bounded(
    args: &[&str],
    zeros: bool,
    limit: std::time::Duration,
) -> (Option<i32>, String, std::time::Duration, i64) {
    use std::io::Read;
    use std::process::Stdio;
    let start = std::time::Instant::now();
    #[allow(clippy::zombie_processes)] // reaped by wait4 below, which also gives its rusage
    let mut child = Command::new(env!("CARGO_BIN_EXE_showdown"))
        .args(args)
        .stdin(if zeros { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(mut stdin) = child.stdin.take() {
        std::thread::spawn(move || {
            let block = vec![0u8; 1 << 16];
            while stdin.write_all(&block).is_ok() {}
        });
    }
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; all zeros is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our child, not yet reaped; both pointers are valid.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        assert_eq!(r, 0, "wait4: {}", std::io::Error::last_os_error());
        if start.elapsed() > limit {
            let _ = child.kill();
            // SAFETY: as above; reaps the killed child.
            unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            panic!("{args:?} still running after {limit:?}: reading without a bound?");
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let elapsed = start.elapsed();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, err, elapsed, usage.ru_maxrss)
}
