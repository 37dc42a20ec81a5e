//! The desktop app: `cargo xtask run` (open it), `cargo xtask dist` (the .deb) and
//! `cargo xtask e2e --desktop` (install the .deb, drive the installed app with tauri-driver +
//! WebKitWebDriver under Xvfb: app-tauri/e2e/desktop.cjs).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::{build_ui, cargo, output, root, run};

/// The Tauri CLI (npm, prebuilt; the cargo crate takes ≈ 17 min to build), pinned to the
/// `tauri` crate's version in Cargo.lock.
const TAURI_CLI: &str = "@tauri-apps/cli@2.12.5";
/// The largest front end we ship (the target), checked by `dist`.
const MAX_WASM_BYTES: u64 = 2 << 20;
/// Where tauri-driver listens.
const DRIVER_PORT: u16 = 4444;

fn is_root() -> bool {
    output(Command::new("id").arg("-u")).is_some_and(|s| s.trim() == "0")
}

fn has(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Whether a window can be opened here (X11 or Wayland).
pub fn has_display() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()))
}

/// Builds the front end, `showdown` (release) and the shell, and opens the desktop app.
pub fn run_app() -> Result<()> {
    crate::ensure_desktop_deps()?;
    build_ui()?;
    run(cargo().args(["build", "--release", "-p", "showdown"]))?;
    run(cargo().args(["build", "-p", "app-tauri"]))?;
    let app = root().join("target/debug/precision-showdown");
    println!("Precision Showdown: opening the desktop app (close the window to stop)");
    run(Command::new(app).env("SHOWDOWN_BIN", root().join("target/release/showdown")))
}

/// The Tauri CLI installed into target/tauri-cli-node; its `tauri` program.
fn tauri_cli() -> Result<PathBuf> {
    let dir = root().join("target/tauri-cli-node");
    let bin = dir.join("node_modules/.bin/tauri");
    let version = TAURI_CLI.trim_start_matches("@tauri-apps/cli@");
    let installed = std::fs::read_to_string(dir.join("node_modules/@tauri-apps/cli/package.json"))
        .unwrap_or_default();
    if !bin.exists() || !installed.contains(&format!("\"version\": \"{version}\"")) {
        if !has("npm", "--version") {
            bail!("the .deb build needs npm for the Tauri CLI (Debian: apt-get install npm)");
        }
        std::fs::create_dir_all(&dir)?;
        run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .arg(TAURI_CLI))?;
    }
    Ok(bin)
}

fn host_triple() -> Result<String> {
    let v = output(Command::new("rustc").arg("-vV")).context("running rustc -vV")?;
    v.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|h| h.trim().to_string())
        .context("rustc -vV names no host")
}

/// `cargo tauri build --bundles deb` with `showdown` bundled as the sidecar (externalBin);
/// returns the .deb's path. Checks the WASM front end's size first.
pub fn dist() -> Result<PathBuf> {
    crate::ensure_desktop_deps()?;
    build_ui()?;
    let wasm = root().join("app-ui/dist/app_ui_bg.wasm");
    let wasm_bytes = std::fs::metadata(&wasm)
        .with_context(|| format!("reading {}", wasm.display()))?
        .len();
    println!(
        "front end: {} ({:.2} MB of WASM; target ≤ {:.0} MB)",
        wasm.display(),
        wasm_bytes as f64 / 1e6,
        MAX_WASM_BYTES as f64 / (1 << 20) as f64
    );
    if wasm_bytes > MAX_WASM_BYTES {
        bail!("the WASM front end is {wasm_bytes} bytes, over the {MAX_WASM_BYTES}-byte target");
    }
    run(cargo().args(["build", "--release", "-p", "showdown"]))?;
    let bins = root().join("app-tauri/binaries");
    std::fs::create_dir_all(&bins)?;
    let sidecar = bins.join(format!("showdown-{}", host_triple()?));
    std::fs::copy(root().join("target/release/showdown"), &sidecar)
        .with_context(|| format!("copying showdown to {}", sidecar.display()))?;
    let cli = tauri_cli()?;
    let started = Instant::now();
    run(Command::new(cli)
        .current_dir(root().join("app-tauri"))
        .args([
            "build",
            "--bundles",
            "deb",
            "--config",
            "tauri.deb.conf.json",
        ]))?;
    let deb_dir = root().join("target/release/bundle/deb");
    let deb = std::fs::read_dir(&deb_dir)
        .with_context(|| format!("reading {}", deb_dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .with_context(|| format!("tauri build made no .deb in {}", deb_dir.display()))?;
    let size = std::fs::metadata(&deb)?.len();
    println!(
        "built {} ({:.1} MB) in {:.0} s",
        deb.display(),
        size as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(deb)
}

/// Installs `deb` with apt (its dependencies too); the installed app's program.
fn install_deb(deb: &Path) -> Result<PathBuf> {
    let package = output(
        Command::new("dpkg-deb")
            .args(["-f"])
            .arg(deb)
            .arg("Package"),
    )
    .map(|s| s.trim().to_string())
    .filter(|s| !s.is_empty())
    .with_context(|| format!("{} names no package", deb.display()))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq", "--reinstall"])
        .arg(deb)
        .env("DEBIAN_FRONTEND", "noninteractive"))?;
    let files = output(Command::new("dpkg").args(["-L", &package]))
        .with_context(|| format!("dpkg -L {package}"))?;
    let bin_files: Vec<&str> = files
        .lines()
        .filter(|l| l.starts_with("/usr/bin/"))
        .collect();
    println!("installed {package}: {}", bin_files.join(", "));
    if !bin_files.iter().any(|f| f.ends_with("/showdown")) {
        bail!("the .deb does not install the showdown sidecar beside the app ({bin_files:?})");
    }
    bin_files
        .iter()
        .find(|f| !f.ends_with("/showdown"))
        .map(PathBuf::from)
        .context("the .deb installs no app program in /usr/bin")
}

/// Xvfb, WebKitWebDriver and tauri-driver (apt and cargo, when missing).
fn ensure_driver_tools() -> Result<PathBuf> {
    let need_apt =
        !Path::new("/usr/bin/Xvfb").exists() || !Path::new("/usr/bin/WebKitWebDriver").exists();
    if need_apt {
        if !is_root() || !has("apt-get", "--version") {
            bail!("the desktop test needs Xvfb and WebKitWebDriver (Debian: apt-get install xvfb webkit2gtk-driver)");
        }
        run(Command::new("apt-get").args(["update", "-qq"]))?;
        run(Command::new("apt-get")
            .args(["install", "-y", "-qq", "xvfb", "webkit2gtk-driver"])
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
    }
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"))
        .join("bin/tauri-driver");
    if !cargo_bin.exists() {
        run(cargo().args(["install", "tauri-driver", "--version", "^2", "--locked"]))?;
    }
    Ok(cargo_bin)
}

/// Kills its child when dropped (the test's Xvfb and tauri-driver).
struct Guard(Child, &'static str);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        eprintln!("stopped {}", self.1);
    }
}

/// A display number with no X server on it.
fn free_display() -> u32 {
    (99..140)
        .find(|n| !Path::new(&format!("/tmp/.X{n}-lock")).exists())
        .unwrap_or(99)
}

fn wait_for_port(port: u16, within: Duration, what: &str) -> Result<()> {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("{what} did not listen on 127.0.0.1:{port} within {within:?}")
}

/// Builds and installs the .deb (as root; otherwise tests the release build in place), then
/// runs app-tauri/e2e/desktop.cjs against it under Xvfb with tauri-driver.
pub fn e2e() -> Result<()> {
    let driver = ensure_driver_tools()?;
    let deb = dist()?;
    let (app, sidecar) = if is_root() && has("apt-get", "--version") {
        (install_deb(&deb)?, None)
    } else {
        eprintln!("not root: testing the release build in place instead of installing the .deb");
        (
            root().join("target/release/precision-showdown"),
            Some(root().join("target/release/showdown")),
        )
    };
    // A fresh home for the app's data (run history, imports): the test never sees the user's.
    let data = root().join("target/e2e-data/desktop");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data)?;
    let display = format!(":{}", free_display());
    let xvfb = Command::new("Xvfb")
        .args([&display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting Xvfb")?;
    let _xvfb = Guard(xvfb, "Xvfb");
    std::thread::sleep(Duration::from_millis(500));
    let mut drv = Command::new(&driver);
    drv.args(["--port", &DRIVER_PORT.to_string()])
        .env("DISPLAY", &display)
        .env("XDG_DATA_HOME", &data)
        .stdout(Stdio::null());
    if let Some(s) = &sidecar {
        drv.env("SHOWDOWN_BIN", s);
    }
    let drv = drv
        .spawn()
        .with_context(|| format!("starting {}", driver.display()))?;
    let _drv = Guard(drv, "tauri-driver");
    wait_for_port(DRIVER_PORT, Duration::from_secs(20), "tauri-driver")?;
    run(Command::new("node")
        .current_dir(root())
        .arg(root().join("app-tauri/e2e/desktop.cjs"))
        .env("APP", &app)
        .env("DRIVER_URL", format!("http://127.0.0.1:{DRIVER_PORT}"))
        .env("SCREENSHOTS", root().join("screenshots")))
}
