//! What the machine must have, installed when missing: Debian packages for the browser and
//! desktop tests and the desktop build, and pip packages into target/.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::process::{output, run};

pub(crate) fn has_webkit() -> bool {
    Command::new("pkg-config")
        .args(["--exists", "webkit2gtk-4.1"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

pub(crate) fn is_root() -> bool {
    output(Command::new("id").arg("-u")).is_some_and(|s| s.trim() == "0")
}

/// Debian packages the browser-mode test needs and lacks: Chromium (driven by npm
/// playwright-core through its DevTools protocol: no chromedriver).
pub(crate) fn apt_missing_browser() -> Vec<&'static str> {
    if Path::new("/usr/bin/chromium").exists() {
        vec![]
    } else {
        vec!["chromium"]
    }
}

/// Debian packages the desktop shell's build needs and lacks (WebKitGTK's development files
/// and the other libraries it links).
pub(crate) fn apt_missing_desktop_build() -> Vec<&'static str> {
    if has_webkit() {
        vec![]
    } else {
        vec![
            "pkg-config",
            "build-essential",
            "libwebkit2gtk-4.1-dev",
            "libxdo-dev",
            "libssl-dev",
            "libayatana-appindicator3-dev",
            "librsvg2-dev",
        ]
    }
}

/// Debian packages the desktop end-to-end test needs and lacks (an X server, WebKit's
/// WebDriver).
pub(crate) fn apt_missing_desktop_driver() -> Vec<&'static str> {
    let mut v = vec![];
    if !Path::new("/usr/bin/Xvfb").exists() {
        v.push("xvfb");
    }
    if !Path::new("/usr/bin/WebKitWebDriver").exists() {
        v.push("webkit2gtk-driver");
    }
    v
}

/// `apt-get update` and one `apt-get install` of `packages` (as root); `for_what` names what
/// needs them when that cannot be done.
pub(crate) fn apt_install(packages: &[&str], for_what: &str) -> Result<()> {
    match apt_install_command(packages, for_what)? {
        Some(mut cmd) => run(&mut cmd),
        None => Ok(()),
    }
}

/// The one command that does [`apt_install`]'s work (`apt-get update`, then one `apt-get
/// install`), for a caller that runs it in the background (CI); `None` when nothing is
/// missing, an error naming the packages when this user cannot install them.
pub(crate) fn apt_install_command(packages: &[&str], for_what: &str) -> Result<Option<Command>> {
    if packages.is_empty() {
        return Ok(None);
    }
    if !is_root() || Command::new("apt-get").arg("--version").output().is_err() {
        bail!(
            "{for_what} needs Debian packages that are missing: apt-get install {}",
            packages.join(" ")
        );
    }
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        "apt-get update -qq && exec apt-get install -y -qq \"$@\"",
        "apt-install",
    ])
    .args(packages)
    .env("DEBIAN_FRONTEND", "noninteractive");
    Ok(Some(cmd))
}

/// WebKitGTK's development files and the other libraries the desktop shell links (apt, as
/// root, when missing).
pub(crate) fn ensure_desktop_deps() -> Result<()> {
    apt_install(
        &apt_missing_desktop_build(),
        "the desktop shell (or pass --no-desktop)",
    )
}

/// Installs Python wheels (here: CUDA tools shipped on PyPI) into `target` with pip.
pub(crate) fn pip_install(target: &Path, packages: &[&str]) -> Result<()> {
    run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--target",
        ])
        .arg(target)
        .args(packages))
}

/// Whether `program` runs (`program --version` succeeds).
pub(crate) fn has(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Installs the npm package `spec` (`name@version`) into `dir` unless that version is there;
/// `dir`'s node_modules/.bin.
pub(crate) fn npm_tool(dir: &Path, spec: &str) -> Result<PathBuf> {
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
