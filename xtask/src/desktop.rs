//! The desktop app: `cargo xtask run` (open it), `cargo xtask dist` (the release .deb) and
//! `cargo xtask e2e --desktop` (build and install a .deb, drive the installed app with
//! tauri-driver + WebKitWebDriver under Xvfb: app-tauri/e2e/desktop.cjs). CI (ci.rs) bundles
//! in the dev profile: the `showdown` its tests built is the sidecar, and the Tauri graph is
//! compiled once, linted in the same compile.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::installs::is_root;
use crate::installs::npm_tool;
use crate::process::{cargo, cargo_home, output, root, run};
use crate::wasm::build_ui;

/// The Tauri CLI (npm, prebuilt; the cargo crate takes ≈ 17 min to build), pinned to the
/// `tauri` crate's version in Cargo.lock.
const TAURI_CLI: &str = "@tauri-apps/cli@2.12.5";
/// tauri-driver, prebuilt on npm (CrabNebula's build of the official crate's code, a Node
/// native module; Linux needs no account or key): 1 s instead of `cargo install tauri-driver`'s
/// ≈ 100 s. The official crate stays the fallback.
const TAURI_DRIVER: &str = "@crabnebula/tauri-driver@2.0.9";
/// Where tauri-driver listens.
const DRIVER_PORT: u16 = 4444;

/// The cargo profile a bundle is built in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// `tauri build --debug`: what CI tests (the profile its tests already built).
    Dev,
    /// `tauri build`: what users install (`cargo xtask dist`).
    Release,
}

impl Profile {
    fn dir(self) -> &'static str {
        match self {
            Profile::Dev => "debug",
            Profile::Release => "release",
        }
    }
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
    crate::installs::ensure_desktop_deps()?;
    build_ui()?;
    crate::wasm::remove_compressed_ui()?;
    run(cargo().args(["build", "--release", "-p", "showdown"]))?;
    // The shell's build script wants the bundle's externalBin in place.
    place_sidecar(&root().join("target/release/showdown"))?;
    run(cargo().args(["build", "-p", "app-tauri"]))?;
    let app = root().join("target/debug/precision-showdown");
    println!("Precision Showdown: opening the desktop app (close the window to stop)");
    run(Command::new(app).env("SHOWDOWN_BIN", root().join("target/release/showdown")))
}

/// The Tauri CLI installed into target/tauri-cli-node; its `tauri` program.
pub fn tauri_cli() -> Result<PathBuf> {
    Ok(npm_tool(&root().join("target/tauri-cli-node"), TAURI_CLI)?.join("tauri"))
}

/// tauri-driver: npm's prebuilt one (target/tauri-driver-node), else the official crate built
/// with `cargo install` (≈ 100 s).
pub fn tauri_driver() -> Result<PathBuf> {
    match npm_tool(&root().join("target/tauri-driver-node"), TAURI_DRIVER) {
        // npm skips an optional dependency it cannot install (the native module): ask it.
        Ok(bin) if has(&bin.join("tauri-driver").to_string_lossy(), "--help") => {
            return Ok(bin.join("tauri-driver"))
        }
        Ok(bin) => eprintln!(
            "{} does not run; building tauri-driver instead",
            bin.join("tauri-driver").display()
        ),
        Err(e) => eprintln!("cannot install {TAURI_DRIVER} ({e:#}); building tauri-driver instead"),
    }
    let cargo_bin = cargo_home().join("bin/tauri-driver");
    if !cargo_bin.exists() {
        run(cargo()
            .args(["install", "tauri-driver", "--version", "^2", "--locked"])
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("CLIPPY_ARGS"))?;
    }
    Ok(cargo_bin)
}

pub fn host_triple() -> Result<String> {
    let v = output(Command::new("rustc").arg("-vV")).context("running rustc -vV")?;
    v.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|h| h.trim().to_string())
        .context("rustc -vV names no host")
}

/// The installable .deb: the front end (size checked), `showdown` and the shell, release.
pub fn dist() -> Result<PathBuf> {
    crate::installs::ensure_desktop_deps()?;
    build_ui()?;
    crate::wasm::check_wasm_size()?;
    let showdown = crate::browser::build_showdown(true, false)?;
    bundle(Profile::Release, &showdown, false)
}

/// Copies `showdown` to app-tauri/binaries/showdown-<host triple>, where tauri.conf.json's
/// `bundle.externalBin` expects the sidecar; its path.
pub fn place_sidecar(showdown: &Path) -> Result<PathBuf> {
    let bins = root().join("app-tauri/binaries");
    std::fs::create_dir_all(&bins)?;
    let sidecar = bins.join(format!("showdown-{}", host_triple()?));
    // Replace, not overwrite: a running copy (an earlier test's) keeps its own file.
    let _ = std::fs::remove_file(&sidecar);
    std::fs::copy(showdown, &sidecar)
        .with_context(|| format!("copying {} to {}", showdown.display(), sidecar.display()))?;
    Ok(sidecar)
}

/// `cargo xtask sidecar`, the beforeBuildCommand of `cargo tauri build` (app-tauri/
/// prepare-sidecar.sh): the web UI into app-ui/dist and `showdown` — release, or the dev
/// profile when the Tauri CLI says the build is `--debug` (TAURI_ENV_DEBUG=true) — placed as
/// the bundle's sidecar. So `cd app-tauri && cargo tauri build` works on a fresh clone.
pub fn prepare_sidecar() -> Result<PathBuf> {
    build_ui()?;
    crate::wasm::remove_compressed_ui()?;
    let debug = std::env::var("TAURI_ENV_DEBUG").is_ok_and(|v| v == "true");
    let showdown = crate::browser::build_showdown(!debug, false)?;
    let placed = place_sidecar(&showdown)?;
    eprintln!(
        "sidecar ready: {} ({} profile)",
        placed.display(),
        if debug { "dev" } else { "release" }
    );
    Ok(placed)
}

/// `tauri build --bundles deb` in `profile` (`--debug` for the dev one) with `showdown` copied
/// beside the shell as its sidecar (externalBin), from the front end already in app-ui/dist
/// (embedded from its copy in target/tauri-dist, [`ui_for_bundle`](crate::wasm::ui_for_bundle));
/// returns the .deb's path. With `lint`, the workspace's crates compile through clippy
/// (`-D warnings`): the shell's clippy and its build are one compile of the Tauri graph.
pub fn bundle(profile: Profile, showdown: &Path, lint: bool) -> Result<PathBuf> {
    place_sidecar(showdown)?;
    // The app embeds (and compresses) the front end: a copy of dist without the gzip copies
    // `showdown serve --http` sends, which stay (a browser e2e may be serving them).
    let ui = crate::wasm::ui_for_bundle()?;
    let cli = tauri_cli()?;
    let started = Instant::now();
    let mut build = Command::new(cli);
    build.current_dir(root().join("app-tauri")).arg("build");
    if profile == Profile::Dev {
        build.arg("--debug");
    }
    // The front end and the sidecar are in place: the beforeBuildCommand has nothing to do.
    build
        .args(["--bundles", "deb", "--config"])
        .arg(serde_json::json!({ "build": { "frontendDist": ui } }).to_string())
        .env("SHOWDOWN_SIDECAR_READY", "1");
    if lint {
        crate::lint::lint(&mut build)?;
    }
    run(&mut build)?;
    let deb = newest_deb(profile)?;
    let size = std::fs::metadata(&deb)?.len();
    println!(
        "built {} ({:.1} MB) in {:.0} s",
        deb.display(),
        size as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(deb)
}

/// The newest .deb `tauri build` made in `profile`.
pub fn newest_deb(profile: Profile) -> Result<PathBuf> {
    let deb_dir = root().join("target").join(profile.dir()).join("bundle/deb");
    std::fs::read_dir(&deb_dir)
        .with_context(|| format!("reading {}", deb_dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .with_context(|| format!("tauri build made no .deb in {}", deb_dir.display()))
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

/// Xvfb, WebKitWebDriver (apt, when missing) and tauri-driver; tauri-driver's path.
pub fn ensure_driver_tools() -> Result<PathBuf> {
    crate::installs::apt_install(
        &crate::installs::apt_missing_desktop_driver(),
        "the desktop test",
    )?;
    tauri_driver()
}

/// A child ended when dropped (the test's Xvfb and tauri-driver). tauri-driver runs in its
/// own process group and the whole group is ended (SIGTERM, SIGKILL after 3 s): the
/// WebKitWebDriver it started, and the app, go with it.
struct Guard {
    child: Child,
    what: &'static str,
    group: bool,
}

impl Guard {
    fn spawn(cmd: &mut Command, what: &'static str, group: bool) -> Result<Guard> {
        #[cfg(unix)]
        if group {
            std::os::unix::process::CommandExt::process_group(cmd, 0);
        }
        let child = cmd.spawn().with_context(|| format!("starting {what}"))?;
        Ok(Guard { child, what, group })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.group {
            // `kill -SIG -PGID` (dash's kill takes no `--`).
            let pgid = self.child.id();
            let signal = |sig: &str| {
                let _ = Command::new("sh")
                    .args(["-c", &format!("kill -{sig} -{pgid} 2>/dev/null")])
                    .status();
            };
            signal("TERM");
            let end = Instant::now() + Duration::from_secs(3);
            while Instant::now() < end && matches!(self.child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(100));
            }
            signal("KILL");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        eprintln!("stopped {}", self.what);
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

/// `cargo xtask e2e --desktop`: the front end, `showdown` and a .deb of the dev profile
/// (`release`: of the release one), then [`run_e2e`].
/// The desktop end-to-end test of a .deb built elsewhere (`cargo tauri build`): installed with
/// apt and driven as `e2e` does. Its profile is read from its path (target/debug/bundle/…).
pub fn e2e_of(deb: &Path) -> Result<()> {
    if !deb.is_file() {
        bail!(
            "{} is not a file (a .deb that `cargo tauri build` made)",
            deb.display()
        );
    }
    // apt-get takes a package file only as a path it cannot mistake for a name.
    let deb = &deb
        .canonicalize()
        .with_context(|| format!("resolving {}", deb.display()))?;
    crate::installs::ensure_desktop_deps()?;
    let driver = ensure_driver_tools()?;
    let profile = if deb.components().any(|c| c.as_os_str() == "debug") {
        Profile::Dev
    } else {
        Profile::Release
    };
    run_e2e(deb, profile, &driver)
}

pub fn e2e(release: bool) -> Result<()> {
    crate::installs::ensure_desktop_deps()?;
    let driver = ensure_driver_tools()?;
    build_ui()?;
    crate::wasm::check_wasm_size()?;
    let showdown = crate::browser::build_showdown(release, false)?;
    let profile = if release {
        Profile::Release
    } else {
        Profile::Dev
    };
    let deb = bundle(profile, &showdown, false)?;
    run_e2e(&deb, profile, &driver)
}

/// Installs `deb` (as root; otherwise tests the build of `profile` in place), then runs
/// app-tauri/e2e/desktop.cjs against it under Xvfb with tauri-driver (`driver`).
pub fn run_e2e(deb: &Path, profile: Profile, driver: &Path) -> Result<()> {
    let (app, sidecar) = if is_root() && has("apt-get", "--version") {
        (install_deb(deb)?, None)
    } else {
        eprintln!("not root: testing the build in place instead of installing the .deb");
        let dir = root().join("target").join(profile.dir());
        (dir.join("precision-showdown"), Some(dir.join("showdown")))
    };
    // A fresh home for the app's data (run history, imports): the test never sees the user's.
    let data = root().join("target/e2e-data/desktop");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data)?;
    let display = format!(":{}", free_display());
    let _xvfb = Guard::spawn(
        Command::new("Xvfb")
            .args([&display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        "Xvfb",
        false,
    )?;
    std::thread::sleep(Duration::from_millis(500));
    let mut drv = Command::new(driver);
    drv.args(["--port", &DRIVER_PORT.to_string()])
        .env("DISPLAY", &display)
        .env("XDG_DATA_HOME", &data)
        .stdout(Stdio::null());
    if let Some(s) = &sidecar {
        drv.env("SHOWDOWN_BIN", s);
    }
    let _drv = Guard::spawn(&mut drv, "tauri-driver", true)?;
    wait_for_port(DRIVER_PORT, Duration::from_secs(20), "tauri-driver")?;
    run(Command::new("node")
        .current_dir(root())
        .arg(root().join("app-tauri/e2e/desktop.cjs"))
        .env("APP", &app)
        .env("DRIVER_URL", format!("http://127.0.0.1:{DRIVER_PORT}"))
        .env("SCREENSHOTS", root().join("screenshots")))
}
