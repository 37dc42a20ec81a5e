//! Browser mode: `cargo xtask run --browser` (serve the web UI and the API on
//! http://127.0.0.1:8787) and `cargo xtask e2e` (the end-to-end test in headless Chromium,
//! app-ui/e2e/browser.cjs, driven by npm playwright-core; screenshots into screenshots/).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::cuda::CudaEnv;
use crate::installs::{has, npm_tool};
use crate::peer_venv::PeerEnv;
use crate::process::{cargo, root, run};
use crate::wasm::build_ui;

/// The playwright-core the e2e test drives Chromium with (installed into target/e2e-node).
const PLAYWRIGHT_CORE: &str = "playwright-core@1.65.1";

/// axe-core, whose WCAG colour-contrast rule the e2e runs on every page in both themes
/// (app-ui/e2e/look.cjs); installed beside playwright-core.
const AXE_CORE: &str = "axe-core@4.14.1";

/// The port `cargo xtask run --browser` serves on.
const BROWSER_PORT: u16 = 8787;

/// Builds the web UI (its gzip copies too) and `showdown` (release), rebuilding nothing that
/// is unchanged, and serves both on 127.0.0.1:8787 until Ctrl-C, which stops the server and
/// this program in one line (exit code 130).
pub fn run_browser() -> Result<()> {
    let started = Instant::now();
    build_ui()?;
    let (wasm, gz) = crate::wasm::compress_ui()?;
    run(cargo().args(["build", "--release", "-p", "showdown"]))?;
    let addr = format!("127.0.0.1:{BROWSER_PORT}");
    println!(
        "Precision Showdown in browser mode: open http://{addr}/ (Ctrl-C stops it); built in {:.1} s, \
         the WASM is {:.2} MB, {:.2} MB sent gzip-compressed",
        started.elapsed().as_secs_f64(),
        wasm as f64 / 1e6,
        gz as f64 / 1e6
    );
    let mut child = Command::new(root().join("target/release/showdown"))
        .current_dir(root())
        .args(["serve", "--http", &addr, "--ui-dir"])
        .arg(root().join("app-ui/dist"))
        .spawn()
        .context("cannot start target/release/showdown")?;
    // Ctrl-C in the terminal reaches the server too (same process group) and it stops, saying
    // so in one line; this program waits for it instead of dying first. A SIGINT sent to this
    // program alone is passed on to the server.
    let pid = child.id().to_string();
    if let Err(e) = ctrlc::set_handler(move || {
        // Quiet: the server may have stopped already (Ctrl-C reached it too).
        let _ = Command::new("kill")
            .args(["-INT", &pid])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }) {
        eprintln!("note: Ctrl-C ends this program before the server stops ({e})");
    }
    let status = child.wait().context("waiting for showdown serve")?;
    if stopped_by_ctrl_c(&status) {
        // The server said it stopped: nothing more to say.
        std::process::exit(130);
    }
    if !status.success() {
        bail!("showdown serve --http {addr} stopped: {status}");
    }
    Ok(())
}

/// Whether a child process ended by Ctrl-C: killed by SIGINT, or exit code 130 (what
/// `showdown serve` answers it with).
pub fn stopped_by_ctrl_c(status: &ExitStatus) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if status.signal() == Some(2) {
            return true;
        }
    }
    status.code() == Some(130)
}

/// Debian's chromium (installed with apt-get when missing and running as root), node and the
/// pinned playwright-core.
pub fn ensure_browser_tools() -> Result<()> {
    crate::installs::apt_install(&crate::installs::apt_missing_browser(), "the browser test")?;
    if !has("node") || !has("npm") {
        bail!("the browser test needs Node.js and npm (Debian: apt-get install nodejs npm)");
    }
    npm_tool(&root().join("target/e2e-node"), PLAYWRIGHT_CORE)?;
    npm_tool(&root().join("target/e2e-node"), AXE_CORE)?;
    Ok(())
}

/// `showdown` of the dev profile (`release`: the release one) built; its path.
pub fn build_showdown(release: bool, lint: bool) -> Result<PathBuf> {
    let mut build = cargo();
    build.args(["build", "-p", "showdown"]);
    if release {
        build.arg("--release");
    }
    if lint {
        crate::lint::lint(&mut build)?;
    }
    run(&mut build)?;
    Ok(root().join(if release {
        "target/release/showdown"
    } else {
        "target/debug/showdown"
    }))
}

/// The browser-mode end-to-end test: builds the UI and `showdown` (`release` or the dev
/// profile), then runs app-ui/e2e/browser.cjs against `showdown serve --http 127.0.0.1:0`.
pub fn e2e(release: bool) -> Result<()> {
    ensure_browser_tools()?;
    build_ui()?;
    crate::wasm::compress_ui()?;
    let bin = build_showdown(release, false)?;
    run_e2e(&bin, &CudaEnv::new()?, &crate::peer_venv::ensure())
}

/// app-ui/e2e/browser.cjs against `bin` (`showdown serve`) and the built app-ui/dist; `peer`
/// says which Python runs the PyTorch peer, or why there is none (peer_venv.rs).
pub fn run_e2e(bin: &Path, cuda: &CudaEnv, peer: &PeerEnv) -> Result<()> {
    // A fresh data folder: the test's imports and run history start empty and never touch
    // the user's own library.
    let data = root().join("target/e2e-data/browser");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data)?;
    // The FP8 peer's convolution (im2col + torch._scaled_mm) against F.conv2d on the same
    // rounded operands, before the e2e trains with it.
    if let PeerEnv::Python { python, .. } = peer {
        run(Command::new(python).current_dir(root()).args([
            "bench/duel_peer.py",
            "--check-fp8",
            "--device",
            "cpu",
        ]))?;
    }
    // The server compiles kernels for Act III's facts: NVRTC and cuobjdump (pip, into target/).
    run_checks(
        peer.apply(
            cuda.apply(
                Command::new("node")
                    .current_dir(root())
                    .arg(root().join("app-ui/e2e/browser.cjs")),
            ),
        )
        .env("SHOWDOWN_BIN", bin)
        .env("SHOWDOWN_DATA_HOME", &data)
        .env("UI_DIR", root().join("app-ui/dist"))
        .env("SCREENSHOTS", root().join("screenshots"))
        .env("PLAYWRIGHT_DIR", root().join("target/e2e-node")),
    )
}

/// Runs an e2e script, its stdout passed through; a failure names the checks that printed
/// `FAIL` (CI's last line carries them) rather than the whole command line.
fn run_checks(cmd: &mut Command) -> Result<()> {
    use std::io::{BufRead, BufReader};
    eprintln!("$ {cmd:?}");
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    let mut failed = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
            println!("{line}");
            if let Some(what) = failed_check(&line) {
                failed.push(what.to_string());
            }
        }
    }
    let status = child.wait()?;
    if !status.success() {
        let named = if failed.is_empty() {
            "no check printed FAIL".to_string()
        } else {
            format!("{} check(s) failed: {}", failed.len(), failed.join(" | "))
        };
        bail!("{named}; {:?} exited with {status}", cmd.get_program());
    }
    Ok(())
}

/// The check of an e2e line `  12.3s FAIL what`, if it is a failure.
fn failed_check(line: &str) -> Option<&str> {
    let (time, rest) = line.trim_start().split_once("s FAIL ")?;
    time.parse::<f64>().ok().map(|_| rest.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_checks_are_read_from_the_e2e_lines() {
        assert_eq!(
            failed_check("174.6s FAIL act2fp8: Act I ticks fp32 and fp8"),
            Some("act2fp8: Act I ticks fp32 and fp8")
        );
        assert_eq!(failed_check("  4.0s ok   every page renders"), None);
        assert_eq!(failed_check("the word FAIL in a log"), None);
    }

    /// Issue 26: Ctrl-C on `cargo xtask run --browser` printed an error and a backtrace. A
    /// server ended by SIGINT or answering it with 130 is a stop, not a failure.
    #[test]
    fn a_server_stopped_by_ctrl_c_is_not_a_failure() {
        let status = |script: &str| {
            Command::new("sh")
                .args(["-c", script])
                .status()
                .expect("sh runs")
        };
        assert!(stopped_by_ctrl_c(&status("kill -INT $$")));
        assert!(stopped_by_ctrl_c(&status("exit 130")));
        assert!(!stopped_by_ctrl_c(&status("exit 1")));
        assert!(!stopped_by_ctrl_c(&status("kill -TERM $$")));
    }
}
