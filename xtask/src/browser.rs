//! Browser mode: `cargo xtask run --browser` (serve the web UI and the API on
//! http://127.0.0.1:8787) and `cargo xtask e2e` (the end-to-end test in headless Chromium,
//! app-ui/e2e/browser.cjs, driven by npm playwright-core; screenshots into screenshots/).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::{build_ui, cargo, root, run, CudaEnv};

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

/// Installs the npm package `spec` (`name@version`) into `dir` unless that version is there;
/// `dir`'s node_modules/.bin.
pub fn npm_tool(dir: &Path, spec: &str) -> Result<PathBuf> {
    let (name, version) = spec
        .rsplit_once('@')
        .filter(|(n, _)| !n.is_empty())
        .with_context(|| format!("npm spec {spec} has no @version"))?;
    let installed =
        std::fs::read_to_string(dir.join("node_modules").join(name).join("package.json"))
            .unwrap_or_default();
    if !installed.contains(&format!("\"version\": \"{version}\"")) {
        if !has("node") || !has("npm") {
            bail!("{spec} needs Node.js and npm (Debian: apt-get install nodejs npm)");
        }
        std::fs::create_dir_all(dir)?;
        run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(dir)
            .arg(spec))?;
    }
    Ok(dir.join("node_modules/.bin"))
}

/// Debian's chromium (installed with apt-get when missing and running as root), node and the
/// pinned playwright-core.
pub fn ensure_browser_tools() -> Result<()> {
    crate::apt_install(&crate::apt_missing_browser(), "the browser test")?;
    if !has("node") || !has("npm") {
        bail!("the browser test needs Node.js and npm (Debian: apt-get install nodejs npm)");
    }
    npm_tool(&root().join("target/e2e-node"), PLAYWRIGHT_CORE)?;
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
        crate::ci::lint(&mut build)?;
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
    let bin = build_showdown(release, false)?;
    run_e2e(&bin, &CudaEnv::new()?)
}

/// app-ui/e2e/browser.cjs against `bin` (`showdown serve`) and the built app-ui/dist.
pub fn run_e2e(bin: &Path, cuda: &CudaEnv) -> Result<()> {
    // A fresh data folder: the test's imports and run history start empty and never touch
    // the user's own library.
    let data = root().join("target/e2e-data/browser");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data)?;
    // The server compiles kernels for Act III's facts: NVRTC and cuobjdump (pip, into target/).
    run(cuda
        .apply(
            Command::new("node")
                .current_dir(root())
                .arg(root().join("app-ui/e2e/browser.cjs")),
        )
        .env("SHOWDOWN_BIN", bin)
        .env("SHOWDOWN_DATA_HOME", &data)
        .env("UI_DIR", root().join("app-ui/dist"))
        .env("SCREENSHOTS", root().join("screenshots"))
        .env("PLAYWRIGHT_DIR", root().join("target/e2e-node")))
}
