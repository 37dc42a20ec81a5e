//! Browser mode: `cargo xtask run --browser` (serve the web UI and the API on
//! http://127.0.0.1:8787) and `cargo xtask e2e` (the end-to-end test in headless Chromium,
//! app-ui/e2e/browser.cjs, driven by npm playwright-core; screenshots into screenshots/).

use std::process::Command;

use anyhow::{bail, Result};

use crate::{build_ui, cargo, output, root, run};

/// The playwright-core the e2e test drives Chromium with (installed into target/e2e-node).
const PLAYWRIGHT_CORE: &str = "playwright-core@1.65.1";

/// The port `cargo xtask run --browser` serves on.
const BROWSER_PORT: u16 = 8787;

/// Builds the web UI and `showdown` (release) and serves both on 127.0.0.1:8787 until killed.
pub fn run_browser() -> Result<()> {
    build_ui()?;
    run(cargo().args(["build", "--release", "-p", "showdown"]))?;
    let addr = format!("127.0.0.1:{BROWSER_PORT}");
    println!("Precision Showdown in browser mode: open http://{addr}/ (Ctrl-C stops it)");
    run(Command::new(root().join("target/release/showdown"))
        .current_dir(root())
        .args(["serve", "--http", &addr, "--ui-dir"])
        .arg(root().join("app-ui/dist")))
}

fn has(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Debian's chromium (installed with apt-get when missing and running as root), node and the
/// pinned playwright-core.
fn ensure_browser_tools() -> Result<()> {
    if !std::path::Path::new("/usr/bin/chromium").exists() {
        let is_root = output(Command::new("id").arg("-u")).is_some_and(|s| s.trim() == "0");
        if !is_root || !has("apt-get") {
            bail!("the browser test needs Chromium at /usr/bin/chromium (Debian: apt-get install chromium chromium-driver)");
        }
        run(Command::new("apt-get").args(["update", "-qq"]))?;
        run(Command::new("apt-get").args(["install", "-y", "-qq", "chromium", "chromium-driver"]))?;
    }
    if !has("node") || !has("npm") {
        bail!("the browser test needs Node.js and npm (Debian: apt-get install nodejs npm)");
    }
    let dir = root().join("target/e2e-node");
    let version = PLAYWRIGHT_CORE.trim_start_matches("playwright-core@");
    let installed = std::fs::read_to_string(dir.join("node_modules/playwright-core/package.json"))
        .unwrap_or_default();
    if !installed.contains(&format!("\"version\": \"{version}\"")) {
        std::fs::create_dir_all(&dir)?;
        run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .arg(PLAYWRIGHT_CORE))?;
    }
    Ok(())
}

/// The browser-mode end-to-end test: builds the UI and `showdown` (`release` or the dev
/// profile), then runs app-ui/e2e/browser.cjs against `showdown serve --http 127.0.0.1:0`.
pub fn e2e(release: bool) -> Result<()> {
    ensure_browser_tools()?;
    build_ui()?;
    let mut build = cargo();
    build.args(["build", "-p", "showdown"]);
    if release {
        build.arg("--release");
    }
    run(&mut build)?;
    let bin = root().join(if release {
        "target/release/showdown"
    } else {
        "target/debug/showdown"
    });
    // The server compiles kernels for Act III's facts: NVRTC and cuobjdump (pip, into target/).
    let ld = super::nvrtc_lib_path()?;
    let path = super::cuda_tools_path()?;
    // A fresh data folder: the test's imports and run history start empty and never touch
    // the user's own library.
    let data = root().join("target/e2e-data/browser");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data)?;
    run(Command::new("node")
        .current_dir(root())
        .arg(root().join("app-ui/e2e/browser.cjs"))
        .env("LD_LIBRARY_PATH", ld)
        .env("PATH", path)
        .env("SHOWDOWN_BIN", bin)
        .env("SHOWDOWN_DATA_HOME", &data)
        .env("UI_DIR", root().join("app-ui/dist"))
        .env("SCREENSHOTS", root().join("screenshots"))
        .env("PLAYWRIGHT_DIR", root().join("target/e2e-node")))
}
