//! `cargo xtask`: Precision Showdown's task runner.
//!
//! - `cargo xtask run [ARGS…]`: the main job. With a display: the desktop app (Act II runs the
//!   duel on the embedded MNIST sample). Without one, with `--cli` or with ARGS (they go to
//!   `showdown duel`): build `showdown` (release) and run the duel on the embedded sample.
//! - `cargo xtask dist`: the installable .deb (`tauri build --bundles deb`, release, the
//!   `showdown` sidecar bundled beside the app).
//! - `cargo xtask test`: what CI runs (ci.rs): install what is missing, then rustfmt, the tests
//!   (clippy `-D warnings` in the same compile), compute's pure core for wasm32, the WASM front
//!   end, the browser-mode end-to-end test (its PyTorch peer from `target/peer-venv`, made from
//!   bench/requirements.txt once: peer_venv.rs), the desktop .deb (dev profile) and its
//!   end-to-end test; a table of seconds per stage at the end (also in target/ci-stages.json).
//! - `cargo xtask ui`: build the WASM front end into `app-ui/dist`.
//! - `cargo xtask kernels`: every kernel family compiled with pip's NVRTC (12.8: cubins and PTX
//!   any CUDA 12 or newer driver loads) into `kernels/compiled/` (cubins for sm_80/86/89/90, PTX
//!   for compute_90, gzip-compressed, with manifest.json), which `showdown` embeds; run it after
//!   editing a kernel (a test fails until then).
//! - `cargo xtask run --browser`: serve the web UI (gzip-compressed to browsers that accept
//!   it) and the API on http://127.0.0.1:8787, rebuilding nothing unchanged (wasm-bindgen and
//!   wasm-opt only for a new module); Ctrl-C stops it in one line.
//! - `cargo xtask e2e`: the browser-mode end-to-end test in headless Chromium (screenshots
//!   into `screenshots/`); `--desktop`: the .deb installed and driven with tauri-driver under
//!   Xvfb (`--release`: test release builds instead of the dev profile).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

mod browser;
mod ci;
mod desktop;
mod peer_venv;
mod stages;

#[derive(Parser)]
#[command(name = "xtask", about = "Precision Showdown task runner")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The desktop app (with a display), else a duel on the embedded MNIST sample.
    Run {
        /// Browser mode: build the web UI and serve it with the API on http://127.0.0.1:8787.
        #[arg(long)]
        browser: bool,
        /// The command-line duel even where a display is available.
        #[arg(long)]
        cli: bool,
        /// Extra arguments for `showdown duel` (e.g. --epochs 5 --json).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// What CI runs: install what is missing, then every check and test, each graph compiled
    /// once; seconds per stage at the end (and in target/ci-stages.json).
    Test {
        /// Skip the desktop shell build (it needs WebKitGTK development files).
        #[arg(long)]
        no_desktop: bool,
    },
    /// Build the WASM front end into app-ui/dist.
    Ui,
    /// Compile every kernel family ahead of time into kernels/compiled/ (cubins for
    /// sm_80/86/89/90, PTX for compute_90, manifest.json), the files `showdown` embeds.
    Kernels {
        /// The pip requirement of the NVRTC that compiles them. CUDA 12.8's cubins load on every
        /// driver from CUDA 12.0 (r525) on and its PTX on every driver that knows Blackwell;
        /// NVRTC 13's need a CUDA 13 driver (r580).
        #[arg(long, default_value = KERNELS_NVRTC)]
        nvrtc: String,
    },
    /// The installable .deb (`tauri build --bundles deb`, release, showdown bundled as the
    /// sidecar).
    Dist,
    /// What `tauri build` bundles, prepared (its beforeBuildCommand): the web UI and `showdown`
    /// (release; the dev profile when TAURI_ENV_DEBUG is true) as app-tauri/binaries/showdown-<triple>.
    Sidecar,
    /// The browser-mode end-to-end test (headless Chromium); screenshots into screenshots/.
    E2e {
        /// Test release builds (default: the dev profile, as CI does).
        #[arg(long)]
        release: bool,
        /// The desktop app instead: build and install the .deb, drive it with tauri-driver.
        #[arg(long)]
        desktop: bool,
        /// With --desktop: install and drive this .deb (e.g. one `cargo tauri build` made)
        /// instead of building one.
        #[arg(long, value_name = "PATH", requires = "desktop")]
        deb: Option<PathBuf>,
    },
    /// Benchmarks: ours and the peer in the same run, a table on stdout and JSON in target/bench.
    Bench {
        #[command(subcommand)]
        what: BenchCmd,
    },
}

#[derive(Subcommand)]
enum BenchCmd {
    /// CPU training on the embedded MNIST sample against PyTorch on the same CPU: showdown
    /// (fp32, fp16, bf16) and the peer (fp32, bf16 autocast) in turn, `--runs` times each; per
    /// contestant the median over runs of each run's median epoch (epochs 2..), the spread
    /// (min–max), samples/s, test accuracy and the ratio to the peer.
    Cpu {
        /// Epochs per run (a run's figure is its median epoch time of epochs 2..).
        #[arg(long, default_value_t = 3, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        epochs: usize,
        /// Runs of each, interleaved (showdown, the peer, showdown, the peer, …).
        #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        runs: usize,
        /// Python interpreter with torch (and numpy) installed, for the peer; without torch the
        /// peer is skipped with a note and showdown is still measured.
        #[arg(long, value_name = "PATH", default_value = "python3")]
        python: String,
    },
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

fn output(cmd: &mut Command) -> Option<String> {
    cmd.output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
}

fn ensure_rust_parts() -> Result<()> {
    let targets =
        output(Command::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    if !targets.contains("wasm32-unknown-unknown") {
        run(Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]))?;
    }
    let comps = output(Command::new("rustup").args(["component", "list", "--installed"]))
        .unwrap_or_default();
    for c in ["clippy", "rustfmt"] {
        if !comps.contains(c) {
            run(Command::new("rustup").args(["component", "add", c]))?;
        }
    }
    Ok(())
}

/// The wasm-bindgen version Cargo.lock pins (the CLI must match it exactly).
fn locked_wasm_bindgen() -> Result<String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).context("reading Cargo.lock")?;
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l.trim() == "name = \"wasm-bindgen\"" {
            if let Some(v) = lines
                .next()
                .and_then(|v| v.trim().strip_prefix("version = \""))
            {
                return Ok(v.trim_end_matches('"').to_string());
            }
        }
    }
    bail!("Cargo.lock has no wasm-bindgen entry")
}

/// `$CARGO_HOME` (default ~/.cargo): where `cargo install` puts programs.
fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"))
}

/// A wasm-bindgen program of exactly version `want` (on PATH, or in $CARGO_HOME/bin).
fn wasm_bindgen_program(want: &str) -> Option<PathBuf> {
    [
        PathBuf::from("wasm-bindgen"),
        cargo_home().join("bin/wasm-bindgen"),
    ]
    .into_iter()
    .find(|p| {
        output(Command::new(p).arg("--version"))
            .is_some_and(|v| v.split_whitespace().nth(1) == Some(want))
    })
}

/// `cargo install` of wasm-bindgen-cli `=want`. No registry we can reach ships it prebuilt
/// (crates.io has only the source; npm `wasm-bindgen-cli`, PyPI and Debian have no package), so
/// it is built, as cheaply as it goes: only the `wasm-bindgen` program, without the default
/// `rustls-tls` feature (TLS for the test runner's downloads: ring and rustls, never used
/// here), at opt-level 1 (it runs for a second or two per build of the front end).
fn wasm_bindgen_install(want: &str) -> Command {
    let mut c = cargo();
    c.args([
        "install",
        "wasm-bindgen-cli",
        "--version",
        &format!("={want}"),
        "--no-default-features",
        "--bin",
        "wasm-bindgen",
    ])
    .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1")
    // Never lint someone else's crate (see ci::lint).
    .env_remove("RUSTC_WORKSPACE_WRAPPER")
    .env_remove("CLIPPY_ARGS");
    c
}

/// The wasm-bindgen program matching Cargo.lock's wasm-bindgen, installed when missing.
fn ensure_wasm_bindgen() -> Result<PathBuf> {
    let want = locked_wasm_bindgen()?;
    if let Some(p) = wasm_bindgen_program(&want) {
        return Ok(p);
    }
    let have = output(Command::new("wasm-bindgen").arg("--version")).unwrap_or_default();
    eprintln!(
        "installing wasm-bindgen-cli {want} (found: {})",
        if have.is_empty() { "none" } else { have.trim() }
    );
    run(&mut wasm_bindgen_install(&want))?;
    wasm_bindgen_program(&want).with_context(|| {
        format!(
            "installed wasm-bindgen-cli {want} but no wasm-bindgen {want} is on PATH or in {}",
            cargo_home().join("bin").display()
        )
    })
}

/// The WASM front end built into app-ui/dist (wasm-release profile, then wasm-bindgen).
fn build_ui() -> Result<()> {
    build_ui_with(false)
}

/// The file (under target/, out of the folder the desktop app embeds) recording what
/// app-ui/dist's WASM was made from (see [`wasm_stamp`]).
const WASM_STAMP: &str = "target/app-ui-dist.stamp";

/// What app-ui/dist's `app_ui.js` and `app_ui_bg.wasm` are made from: the wasm-bindgen and
/// Binaryen versions and a hash of rustc's module. The same stamp means the same output, so
/// wasm-bindgen and wasm-opt (tens of seconds) are skipped.
fn wasm_stamp(bindgen_version: &str, module: &[u8]) -> String {
    use std::hash::{DefaultHasher, Hasher};
    let mut h = DefaultHasher::new();
    h.write(module);
    format!(
        "wasm-bindgen {bindgen_version}; {BINARYEN} -Oz; {} bytes, hash {:016x}\n",
        module.len(),
        h.finish()
    )
}

/// Copies `from` to `to` unless `to` already holds the same bytes (its time then stays, and
/// its compressed copy with it); whether it copied.
fn copy_if_changed(from: &Path, to: &Path) -> Result<bool> {
    let new = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    if std::fs::read(to).is_ok_and(|old| old == new) {
        return Ok(false);
    }
    std::fs::write(to, &new).with_context(|| format!("writing {}", to.display()))?;
    Ok(true)
}

/// `path` with `.gz` appended: where its gzip copy lies.
fn gz_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".gz");
    PathBuf::from(name)
}

/// Removes the gzip copy of `path`, if any (it no longer matches `path`).
fn remove_gz(path: &Path) -> Result<()> {
    match std::fs::remove_file(gz_path(path)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", gz_path(path).display()))
        }
        _ => Ok(()),
    }
}

/// The files of `dir` (and its folders) that `showdown serve --http` sends compressed: the
/// page, its style sheet, scripts and WASM.
fn compressible(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            out.extend(compressible(&p)?);
        } else if p
            .extension()
            .is_some_and(|x| ["html", "css", "js", "wasm"].iter().any(|e| x == *e))
        {
            out.push(p);
        }
    }
    Ok(out)
}

/// Writes `NAME.gz` beside each [`compressible`] file of app-ui/dist that has none or an older
/// one (gzip, best compression): `showdown serve --http` sends it, with `Content-Encoding:
/// gzip`, to a browser that accepts gzip. Returns (bytes, gzip bytes) of the WASM.
fn compress_ui() -> Result<(u64, u64)> {
    use std::io::Write as _;
    let dist = root().join("app-ui/dist");
    for f in compressible(&dist)? {
        let gz = gz_path(&f);
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        if matches!((modified(&f), modified(&gz)), (Some(src), Some(z)) if z >= src) {
            continue;
        }
        let data = std::fs::read(&f).with_context(|| format!("reading {}", f.display()))?;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&data)?;
        let bytes = enc.finish()?;
        // Renamed into place: a server reading it meanwhile never sees half a file.
        let tmp = gz_path(&f.with_extension("tmp"));
        std::fs::write(&tmp, &bytes).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &gz).with_context(|| format!("writing {}", gz.display()))?;
    }
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let wasm = dist.join("app_ui_bg.wasm");
    Ok((size(&wasm), size(&gz_path(&wasm))))
}

/// Removes every gzip copy from app-ui/dist: the desktop app embeds the folder as it is (and
/// compresses it itself), so the copies for `showdown serve --http` would only weigh on it.
fn remove_compressed_ui() -> Result<()> {
    let dist = root().join("app-ui/dist");
    if !dist.is_dir() {
        return Ok(());
    }
    for f in compressible(&dist)? {
        remove_gz(&f)?;
    }
    Ok(())
}

/// [`build_ui`]; with `lint`, the workspace's crates compile through clippy (`-D warnings`):
/// CI's clippy of the front end and its build are one compile.
fn build_ui_with(lint: bool) -> Result<()> {
    ensure_rust_parts()?;
    let mut build = cargo();
    build.args([
        "build",
        "-p",
        "app-ui",
        "--profile",
        "wasm-release",
        "--target",
        "wasm32-unknown-unknown",
    ]);
    if lint {
        ci::lint(&mut build)?;
    }
    run(&mut build)?;
    let wasm_bindgen = ensure_wasm_bindgen()?;
    let dist = root().join("app-ui/dist");
    std::fs::create_dir_all(&dist)?;
    let wasm = root().join("target/wasm32-unknown-unknown/wasm-release/app_ui.wasm");
    let module = std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))?;
    let stamp = wasm_stamp(&locked_wasm_bindgen()?, &module);
    let stamp_file = root().join(WASM_STAMP);
    let out = dist.join("app_ui_bg.wasm");
    let js = dist.join("app_ui.js");
    if out.is_file()
        && js.is_file()
        && std::fs::read_to_string(&stamp_file).is_ok_and(|s| s == stamp)
    {
        eprintln!(
            "app-ui/dist: the WASM is unchanged ({WASM_STAMP}): wasm-bindgen and wasm-opt skipped"
        );
    } else {
        bindgen_and_optimise(&wasm_bindgen, &wasm, &dist)?;
        std::fs::write(&stamp_file, &stamp)
            .with_context(|| format!("writing {}", stamp_file.display()))?;
    }
    for f in ["index.html", "style.css"] {
        let to = dist.join(f);
        if copy_if_changed(&root().join("app-ui").join(f), &to)? {
            remove_gz(&to)?;
        }
    }
    let size = std::fs::metadata(dist.join("app_ui_bg.wasm"))
        .map(|m| m.len())
        .unwrap_or(0);
    eprintln!("app-ui/dist ready ({size} bytes of WASM)");
    Ok(())
}

/// wasm-bindgen then wasm-opt: rustc's `wasm` into `dist` (`app_ui.js`, `app_ui_bg.wasm`);
/// their gzip copies, now stale, removed.
fn bindgen_and_optimise(wasm_bindgen: &Path, wasm: &Path, dist: &Path) -> Result<()> {
    // Not up to date until the stamp is written again.
    let _ = std::fs::remove_file(root().join(WASM_STAMP));
    // The name section (function names for stack traces) is most of an unstripped module.
    run(Command::new(wasm_bindgen)
        .args([
            "--target",
            "web",
            "--no-typescript",
            "--remove-name-section",
            "--out-dir",
        ])
        .arg(dist)
        .arg(wasm))?;
    // Binaryen's size pass (npm `binaryen`, prebuilt): about a fifth off what rustc and
    // wasm-bindgen leave, with the features rustc's wasm32 target emits enabled (and no other).
    let wasm_opt = browser::npm_tool(&root().join("target/binaryen-node"), BINARYEN)?;
    let out = dist.join("app_ui_bg.wasm");
    run(Command::new(wasm_opt.join("wasm-opt"))
        .args([
            "-Oz",
            "--enable-mutable-globals",
            "--enable-sign-ext",
            "--enable-nontrapping-float-to-int",
            "--enable-bulk-memory",
            "--enable-reference-types",
            "--enable-multivalue",
        ])
        .arg(&out)
        .arg("-o")
        .arg(&out))?;
    for f in compressible(dist)? {
        remove_gz(&f)?;
    }
    Ok(())
}

/// The npm package of Binaryen's wasm-opt (prebuilt for Linux, macOS and Windows).
const BINARYEN: &str = "binaryen@132.0.0";

/// The largest front end we ship. The desktop-app issue set 2 MiB as a proxy for start-up
/// (window interactive ≤ 1.5 s); the visual explainer (Act I's network, Act II's histograms and
/// memory, the guided walk) brought it to 2.58 MB, most of it Leptos's view code and serde's
/// readers of the new reports, with the window interactive in 0.67 s. The start-up it stands
/// for is printed on every CI run (the desktop e2e's "window interactive"); docs/benchmarks.md
/// keeps both. FP8's story in Act II (issue 28: the scale chart, the step slider's tensor
/// table, the per-tensor histograms) measured 53,746 bytes on its own (3,195,387 with it,
/// 3,141,641 without, 2026-11-27), over the 3 MiB this bar was: it is 3.25 MiB since, the
/// start-up it stands for still printed by CI beside it.
const MAX_WASM_BYTES: u64 = 13 << 18;

/// Fails when the built front end (app-ui/dist) is over [`MAX_WASM_BYTES`]; its size.
fn check_wasm_size() -> Result<u64> {
    let wasm = root().join("app-ui/dist/app_ui_bg.wasm");
    let bytes = std::fs::metadata(&wasm)
        .with_context(|| format!("reading {}", wasm.display()))?
        .len();
    println!(
        "front end: {} ({bytes} bytes of WASM, {:.2} MiB; target ≤ {MAX_WASM_BYTES} bytes, {:.2} MiB)",
        wasm.display(),
        bytes as f64 / (1 << 20) as f64,
        MAX_WASM_BYTES as f64 / (1 << 20) as f64
    );
    if bytes > MAX_WASM_BYTES {
        bail!("the WASM front end is {bytes} bytes, over the {MAX_WASM_BYTES}-byte target");
    }
    Ok(bytes)
}

fn has_webkit() -> bool {
    Command::new("pkg-config")
        .args(["--exists", "webkit2gtk-4.1"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn is_root() -> bool {
    output(Command::new("id").arg("-u")).is_some_and(|s| s.trim() == "0")
}

/// Debian packages the browser-mode test needs and lacks: Chromium (driven by npm
/// playwright-core through its DevTools protocol: no chromedriver).
fn apt_missing_browser() -> Vec<&'static str> {
    if Path::new("/usr/bin/chromium").exists() {
        vec![]
    } else {
        vec!["chromium"]
    }
}

/// Debian packages the desktop shell's build needs and lacks (WebKitGTK's development files
/// and the other libraries it links).
fn apt_missing_desktop_build() -> Vec<&'static str> {
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
fn apt_missing_desktop_driver() -> Vec<&'static str> {
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
fn apt_install(packages: &[&str], for_what: &str) -> Result<()> {
    if packages.is_empty() {
        return Ok(());
    }
    if !is_root() || Command::new("apt-get").arg("--version").output().is_err() {
        bail!(
            "{for_what} needs Debian packages that are missing: apt-get install {}",
            packages.join(" ")
        );
    }
    run(Command::new("apt-get")
        .args(["update", "-qq"])
        .env("DEBIAN_FRONTEND", "noninteractive"))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq"])
        .args(packages)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// WebKitGTK's development files and the other libraries the desktop shell links (apt, as
/// root, when missing).
fn ensure_desktop_deps() -> Result<()> {
    apt_install(
        &apt_missing_desktop_build(),
        "the desktop shell (or pass --no-desktop)",
    )
}

/// Installs Python wheels (here: CUDA tools shipped on PyPI) into `target` with pip.
fn pip_install(target: &Path, packages: &[&str]) -> Result<()> {
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

/// A folder holding `libnvrtc.so` (NVRTC 13 from pip `nvidia-cuda-nvrtc`, installed into
/// target/ when missing) and the folder of its builtins, for LD_LIBRARY_PATH: CI compiles every
/// kernel with NVRTC although it has no GPU.
fn nvrtc_lib_path() -> Result<String> {
    nvrtc_lib_path_of("nvidia-cuda-nvrtc==13.0.*", "pip-nvrtc", "nvrtc")
}

/// [`nvrtc_lib_path`] for the pip requirement `requirement`, installed into target/`pip_dir`,
/// its `libnvrtc.so` link in target/`link_dir`.
fn nvrtc_lib_path_of(requirement: &str, pip_dir: &str, link_dir: &str) -> Result<String> {
    let pip_dir = root().join("target").join(pip_dir);
    let find = |dir: &Path| -> Option<PathBuf> {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).ok()?.flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if p.is_dir() {
                    stack.push(p);
                } else if name.starts_with("libnvrtc.so.") {
                    return Some(p);
                }
            }
        }
        None
    };
    let lib = match find(&pip_dir) {
        Some(l) => l,
        None => {
            pip_install(&pip_dir, &[requirement])?;
            find(&pip_dir).with_context(|| {
                format!("pip installed {requirement} but no libnvrtc.so.* was found in it")
            })?
        }
    };
    // cudarc looks for libnvrtc.so (or .so.12/.11…): the NVRTC 13 wheel has only libnvrtc.so.13.
    let link_dir = root().join("target").join(link_dir);
    std::fs::create_dir_all(&link_dir)?;
    let link = link_dir.join("libnvrtc.so");
    let _ = std::fs::remove_file(&link);
    #[cfg(unix)]
    std::os::unix::fs::symlink(&lib, &link).context("linking libnvrtc.so")?;
    let lib_dir = lib.parent().map(Path::to_path_buf).unwrap_or_default();
    let old = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    Ok(format!(
        "{}:{}{}",
        link_dir.display(),
        lib_dir.display(),
        if old.is_empty() {
            String::new()
        } else {
            format!(":{old}")
        }
    ))
}

/// A PATH with cuobjdump and nvdisasm (pip `nvidia-cuda-cuobjdump` / `nvidia-cuda-nvdisasm`,
/// installed into target/ when missing): CI reads every kernel's resource usage and SASS.
fn cuda_tools_path() -> Result<String> {
    let dir = root().join("target/pip-cuda-tools");
    let bin = dir.join("nvidia/cu13/bin");
    if !(bin.join("cuobjdump").exists() && bin.join("nvdisasm").exists()) {
        pip_install(
            &dir,
            &[
                "nvidia-cuda-cuobjdump==13.2.*",
                "nvidia-cuda-nvdisasm==13.2.*",
            ],
        )?;
    }
    if !bin.join("cuobjdump").exists() {
        bail!(
            "pip installed nvidia-cuda-cuobjdump but {} has no cuobjdump",
            bin.display()
        );
    }
    Ok(format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    ))
}

/// The environment that lets NVRTC and cuobjdump run here without a GPU (pip wheels, installed
/// into target/ when missing): the tests and `showdown serve` compile every kernel with them.
pub struct CudaEnv {
    ld_library_path: String,
    path: String,
}

impl CudaEnv {
    pub fn new() -> Result<Self> {
        Ok(CudaEnv {
            ld_library_path: nvrtc_lib_path()?,
            path: cuda_tools_path()?,
        })
    }

    pub fn apply<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.env("LD_LIBRARY_PATH", &self.ld_library_path)
            .env("PATH", &self.path)
    }
}

/// The NVRTC `cargo xtask kernels` compiles with by default: CUDA 12.8, whose cubins every
/// driver from CUDA 12.0 (r525) on loads (minor version compatibility) and whose PTX every
/// driver that knows Blackwell (r570, CUDA 12.8) JIT-compiles; NVRTC 13's files need r580.
const KERNELS_NVRTC: &str = "nvidia-cuda-nvrtc-cu12==12.8.*";

/// `cargo xtask kernels`: NVRTC `requirement` from pip (into target/), then compute's
/// `write_compiled` (the runtime's own compile functions and options) through its test
/// `write_compiled_kernels`, writing kernels/compiled/.
fn kernels(requirement: &str) -> Result<()> {
    let tag: String = requirement
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let ld = nvrtc_lib_path_of(requirement, &format!("pip-{tag}"), &format!("nvrtc-{tag}"))?;
    let out = root().join("kernels/compiled");
    run(cargo()
        .args(["test", "-p", "compute", "--features", "cuda", "--lib", "--"])
        .args(["--ignored", "--exact", "--nocapture"])
        .arg("cuda::shipped::tests::write_compiled_kernels")
        .env("LD_LIBRARY_PATH", ld)
        .env("SHOWDOWN_WRITE_KERNELS", &out))?;
    let manifest = std::fs::read_to_string(out.join("manifest.json"))
        .with_context(|| format!("reading {}", out.join("manifest.json").display()))?;
    if !manifest.contains("\"source_sha256\"") {
        bail!("{} holds no family: nothing was compiled", out.display());
    }
    eprintln!(
        "kernels/compiled/ written: commit it (`cargo test -p compute --features cuda --lib shipped` checks it)"
    );
    Ok(())
}

/// The median of the finite values in `v` (NaN and infinities left out); `None` when there are
/// none.
fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let mid = v.get(n / 2).copied()?;
    if n % 2 == 1 {
        Some(mid)
    } else {
        Some((v.get(n / 2 - 1).copied()? + mid) / 2.0)
    }
}

/// The smallest and the largest finite value in `v`; `None` when there are none.
fn min_max(v: &[f64]) -> Option<(f64, f64)> {
    v.iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(None, |acc, x| match acc {
            None => Some((x, x)),
            Some((lo, hi)) => Some((lo.min(x), hi.max(x))),
        })
}

/// The median epoch time of epochs 2.. (of the only epoch when there is one), ms, of a report's
/// `epochs` list (`[{"ms": …}, …]`): the rule of `showdown`'s `epoch_ms_median`, applied to both
/// contestants alike. `None` when an epoch has no time.
fn epoch_ms_from_2(epochs: &serde_json::Value) -> Option<f64> {
    let ms = epochs
        .as_array()?
        .iter()
        .map(|e| e["ms"].as_f64())
        .collect::<Option<Vec<f64>>>()?;
    median(ms.get(usize::from(ms.len() > 1)..)?)
}

/// One contestant's result in one run of `bench cpu`.
struct Sample {
    /// Its name in the table: "showdown fp32", "pytorch-2.11.0-cpu bf16 autocast".
    name: String,
    /// fp32, fp16 or bf16.
    precision: String,
    /// Whether it is the PyTorch peer.
    peer: bool,
    /// Training images per epoch.
    train: f64,
    /// Median epoch time of epochs 2.., ms.
    epoch_ms: f64,
    /// Test accuracy after the last epoch.
    accuracy: f64,
}

/// One row of `bench cpu`'s table: a contestant's results over the runs.
struct BenchRow {
    /// See [`Sample::name`].
    name: String,
    /// fp32, fp16 or bf16.
    precision: String,
    /// Whether it is the PyTorch peer.
    peer: bool,
    /// Training images per epoch.
    train: f64,
    /// Per run: the median epoch time of epochs 2.., ms.
    epoch_ms: Vec<f64>,
    /// Per run: the test accuracy after the last epoch.
    accuracy: Vec<f64>,
}

impl BenchRow {
    /// The median over runs of the per-run epoch time, ms.
    fn ms(&self) -> Option<f64> {
        median(&self.epoch_ms)
    }

    /// Training images per second at [`BenchRow::ms`].
    fn samples_per_s(&self) -> Option<f64> {
        self.ms().map(|ms| self.train / (ms / 1e3))
    }

    /// Ours against the peer row it is compared with (fp32 with PyTorch fp32, fp16 and bf16
    /// with PyTorch bf16 autocast): the ratio of samples/s and that row. `None` for the peer's
    /// own rows and where the peer was not measured.
    fn vs_peer<'a>(&self, rows: &'a [BenchRow]) -> Option<(f64, &'a BenchRow)> {
        if self.peer {
            return None;
        }
        let want = if self.precision == "fp32" {
            "fp32"
        } else {
            "bf16"
        };
        let peer = rows.iter().find(|r| r.peer && r.precision == want)?;
        Some((self.samples_per_s()? / peer.samples_per_s()?, peer))
    }
}

/// Adds `s` to its contestant's row in `rows` (a new row at the end for one not seen yet).
fn record(rows: &mut Vec<BenchRow>, s: Sample) {
    match rows.iter_mut().find(|r| r.name == s.name) {
        Some(r) => {
            r.epoch_ms.push(s.epoch_ms);
            r.accuracy.push(s.accuracy);
        }
        None => rows.push(BenchRow {
            name: s.name,
            precision: s.precision,
            peer: s.peer,
            train: s.train,
            epoch_ms: vec![s.epoch_ms],
            accuracy: vec![s.accuracy],
        }),
    }
}

/// "fp32 812 ms, bf16 824 ms": one run's epoch times, for the progress lines.
fn brief(samples: &[Sample]) -> String {
    samples
        .iter()
        .map(|s| format!("{} {:.0} ms", s.precision, s.epoch_ms))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One `showdown duel --backend cpu` (fp32, fp16, bf16) on the embedded MNIST sample with the
/// release build: its JSON report.
fn run_showdown(epochs: usize) -> Result<serde_json::Value> {
    let bin = root().join("target/release/showdown");
    let out = Command::new(&bin)
        .args([
            "duel",
            "--backend",
            "cpu",
            "--dataset",
            "mnist-sample",
            "--precisions",
            "fp32,fp16,bf16",
            "--epochs",
            &epochs.to_string(),
            "--json",
        ])
        .output()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    if !out.status.success() {
        bail!(
            "showdown duel failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).context("parsing showdown's JSON report")
}

/// The contestants of a `showdown duel --json` report.
fn showdown_samples(report: &serde_json::Value) -> Result<Vec<Sample>> {
    let train = report["dataset"]["train"]
        .as_f64()
        .context("showdown's report has no dataset.train")?;
    let runs = report["runs"]
        .as_array()
        .context("showdown's report has no runs")?;
    runs.iter()
        .map(|r| {
            let precision = r["precision"]
                .as_str()
                .context("a run in showdown's report has no precision")?;
            Ok(Sample {
                name: format!("showdown {precision}"),
                precision: precision.to_string(),
                peer: false,
                train,
                epoch_ms: epoch_ms_from_2(&r["epochs"])
                    .with_context(|| format!("showdown {precision}: no epoch times"))?,
                accuracy: r["test_accuracy"]
                    .as_f64()
                    .with_context(|| format!("showdown {precision}: no test_accuracy"))?,
            })
        })
        .collect()
}

/// One run of the PyTorch peer (`bench/torch_cpu_peer.py`: fp32 and bf16 autocast, on the IDX
/// files the embedded sample is made of): its JSON lines (one per precision) and contestants.
fn run_peer(python: &str, epochs: usize) -> Result<(Vec<serde_json::Value>, Vec<Sample>)> {
    let script = root().join("bench/torch_cpu_peer.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(root().join("compute/data"))
        .args([
            "mnist10k-",
            "--epochs",
            &epochs.to_string(),
            "--precisions",
            "fp32,bf16",
        ])
        .output()
        .with_context(|| format!("cannot run {python}"))?;
    if !out.status.success() {
        bail!(
            "{python} {} failed ({}): {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(serde_json::Value::is_object)
        .collect();
    if lines.is_empty() {
        bail!("{python} {} printed no result", script.display());
    }
    let samples = lines
        .iter()
        .map(|l| {
            let precision = l["precision"]
                .as_str()
                .context("a line of the peer has no precision")?;
            let name = format!(
                "{} {precision}{}",
                l["peer"].as_str().unwrap_or("peer"),
                if precision == "fp32" { "" } else { " autocast" }
            );
            Ok(Sample {
                precision: precision.to_string(),
                peer: true,
                train: l["train"]
                    .as_f64()
                    .with_context(|| format!("{name}: no train count"))?,
                epoch_ms: epoch_ms_from_2(&l["epochs"])
                    .with_context(|| format!("{name}: no epoch times"))?,
                accuracy: l["epochs"]
                    .as_array()
                    .and_then(|e| e.last())
                    .and_then(|e| e["test_accuracy"].as_f64())
                    .with_context(|| format!("{name}: no test_accuracy"))?,
                name,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((lines, samples))
}

/// This process's command line as `cargo xtask …` (arguments with spaces or quotes quoted).
fn command_line() -> String {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| {
            let a = a.to_string_lossy().into_owned();
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$\\".contains(c)) {
                format!("'{}'", a.replace('\'', r"'\''"))
            } else {
                a
            }
        })
        .collect();
    format!("cargo xtask {}", args.join(" "))
}

/// `cargo xtask bench cpu`: CPU training on the embedded MNIST sample, ours against PyTorch on
/// the same CPU in the same command. `showdown` is built once (release); then `runs` rounds of
/// `showdown duel --backend cpu` (fp32, fp16, bf16) and the PyTorch peer
/// `bench/torch_cpu_peer.py` (fp32, bf16 autocast), interleaved (ours, the peer, ours, the peer,
/// …) so that the machine's drifts hit both alike. A run's figure for a contestant is its median
/// epoch time of epochs 2..; the table (stdout, last, after the command line, date, CPU and
/// threads) gives per contestant the median over runs, the spread (min–max over runs), samples/s
/// at the median, the median test accuracy and the ratio of samples/s to the peer (fp32 against
/// PyTorch fp32, fp16 and bf16 against PyTorch bf16 autocast). Progress goes to stderr, one line
/// per run; the rows and every run's raw reports to target/bench/cpu.json. Without torch at
/// `python` the peer is skipped with a note and ours is still measured.
fn bench_cpu(epochs: usize, runs: usize, python: &str) -> Result<()> {
    let command = command_line();
    let date = output(Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]))
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "unknown".into());
    run(cargo().args(["build", "--release", "-p", "showdown"]))?;
    let out_dir = root().join("target/bench");
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;

    let mut rows: Vec<BenchRow> = Vec::new();
    let mut raw_ours: Vec<serde_json::Value> = Vec::new();
    let mut raw_peer: Vec<Vec<serde_json::Value>> = Vec::new();
    let mut peer_skipped: Option<String> = None;
    for i in 1..=runs {
        let report = run_showdown(epochs).with_context(|| format!("run {i}/{runs}: showdown"))?;
        let ours = showdown_samples(&report)
            .with_context(|| format!("run {i}/{runs}: reading showdown's report"))?;
        let mut progress = format!("run {i}/{runs}: showdown {}", brief(&ours));
        raw_ours.push(report);
        ours.into_iter().for_each(|s| record(&mut rows, s));
        if peer_skipped.is_none() {
            match run_peer(python, epochs) {
                Ok((lines, peer)) => {
                    progress += &format!("; peer {}", brief(&peer));
                    raw_peer.push(lines);
                    peer.into_iter().for_each(|s| record(&mut rows, s));
                }
                // Never measured: no torch there (or no Python); ours alone, said why.
                Err(e) if raw_peer.is_empty() => {
                    eprintln!(
                        "peer skipped: {e:#}. To measure it, pass --python PATH to a Python with torch (and numpy) installed"
                    );
                    peer_skipped = Some(format!("{e:#}"));
                }
                Err(e) => {
                    progress += &format!("; peer failed: {e:#}");
                    raw_peer.push(Vec::new());
                }
            }
        }
        eprintln!("{progress}");
    }
    rows.sort_by_key(|r| r.peer); // stable: ours first, each side in the order it ran.

    let first = raw_ours.first().context("no run of showdown")?;
    let cpu = first["device"].as_str().unwrap_or("?").to_string();
    let threads = &first["config"]["threads"];
    let peer_threads = raw_peer
        .iter()
        .flatten()
        .find_map(|l| l["threads"].as_u64());

    let table: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let spread = min_max(&r.epoch_ms);
            let vs = r.vs_peer(&rows);
            serde_json::json!({
                "run": r.name,
                "precision": r.precision,
                "runs": r.epoch_ms.len(),
                "epoch_ms_median": r.ms(),
                "epoch_ms_min": spread.map(|s| s.0),
                "epoch_ms_max": spread.map(|s| s.1),
                "epoch_ms_runs": r.epoch_ms,
                "samples_per_s": r.samples_per_s(),
                "test_accuracy": median(&r.accuracy),
                "test_accuracy_runs": r.accuracy,
                "vs_peer": vs.map(|v| v.0),
                "vs_peer_run": vs.map(|v| v.1.name.clone()),
            })
        })
        .collect();
    let json = serde_json::json!({
        "bench": "cpu",
        "command": command,
        "date": date,
        "device": cpu,
        "threads": threads,
        "peer_threads": peer_threads,
        "epochs": epochs,
        "runs": runs,
        "peer_skipped": peer_skipped,
        "rows": table,
        "raw": {"showdown": raw_ours, "peer": raw_peer},
    });
    let path = out_dir.join("cpu.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&json).context("serializing the bench JSON")?,
    )
    .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {}", path.display());

    let dataset = &first["dataset"];
    println!("command: {command}");
    println!("date: {date}");
    println!(
        "CPU: {cpu}; showdown {threads} threads{}",
        peer_threads
            .map(|t| format!(", PyTorch {t} threads"))
            .unwrap_or_default()
    );
    println!(
        "CPU training, {} ({} train / {} test), batch {}, {epochs} epochs per run, {runs} runs \
         interleaved (showdown, then PyTorch); a run's figure: its median epoch of epochs 2..; \
         below: the median over runs, the spread min–max over runs",
        dataset["name"].as_str().unwrap_or("mnist-sample"),
        dataset["train"],
        dataset["test"],
        first["config"]["batch"],
    );
    let w = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(28);
    println!(
        "{:<w$} | {:>9} | {:>11} | {:>9} | {:>8} | {:>11}",
        "run", "epoch ms", "spread", "samples/s", "test acc", "vs peer"
    );
    println!("{}", "-".repeat(w + 63));
    let num = |v: Option<f64>, digits: usize| {
        v.map(|x| format!("{x:.digits$}"))
            .unwrap_or_else(|| "—".into())
    };
    for r in &rows {
        let spread = min_max(&r.epoch_ms)
            .map(|(lo, hi)| format!("{lo:.0}–{hi:.0}"))
            .unwrap_or_else(|| "—".into());
        let vs = r
            .vs_peer(&rows)
            .map(|(ratio, p)| format!("{ratio:.2}× {}", p.precision))
            .unwrap_or_else(|| if r.peer { "" } else { "—" }.into());
        println!(
            "{:<w$} | {:>9} | {:>11} | {:>9} | {:>8} | {:>11}",
            r.name,
            num(r.ms(), 1),
            spread,
            num(r.samples_per_s(), 0),
            num(median(&r.accuracy), 4),
            vs
        );
    }
    for r in rows.iter().filter(|r| r.epoch_ms.len() != runs) {
        println!("note: {}: {} of {runs} runs", r.name, r.epoch_ms.len());
    }
    if let Some(why) = &peer_skipped {
        println!("peer: skipped ({why}); pass --python PATH to a Python with torch to measure it");
    }
    Ok(())
}

/// Builds `showdown` (release) and runs a duel on the embedded MNIST sample (`args` go to
/// `showdown duel`).
fn duel_cli(args: &[String]) -> Result<()> {
    if !desktop::has_display() {
        eprintln!("no display: running the duel on the command line (`cargo xtask run --browser` serves the lab's pages)");
    }
    run(cargo().args(["build", "--release", "-p", "showdown"]))?;
    let bin = root().join("target/release/showdown");
    let mut c = Command::new(bin);
    c.arg("duel");
    if !args.iter().any(|a| a == "--dataset" || a == "--data-dir") {
        c.args(["--dataset", "mnist-sample"]);
    }
    run(c.args(args))
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Run { browser: true, .. } => browser::run_browser(),
        Cmd::Run {
            cli: false, args, ..
        } if args.is_empty() && desktop::has_display() => {
            match ensure_desktop_deps() {
                Ok(()) => desktop::run_app(),
                Err(e) => {
                    eprintln!("cannot open the desktop app ({e:#}); running the command-line duel instead");
                    duel_cli(&[])
                }
            }
        }
        Cmd::Run { args, .. } => duel_cli(&args),
        Cmd::Test { no_desktop } => {
            if let Err(e) = ci::test(no_desktop) {
                // The machine's free disk and memory (a full disk or the OOM killer fails a
                // build without naming itself), then CI's last line: what failed, in one line,
                // which a log cut to its tail keeps (anyhow's report would end with a
                // backtrace under RUST_BACKTRACE).
                for (what, cmd, args) in [
                    ("disk", "df", &["-h", "/", "/tmp"][..]),
                    ("memory", "free", &["-m"][..]),
                ] {
                    if let Ok(o) = Command::new(cmd).args(args).current_dir(root()).output() {
                        eprintln!("{what}:\n{}", String::from_utf8_lossy(&o.stdout).trim_end());
                    }
                }
                eprintln!("CI FAILED: {e:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Cmd::Ui => build_ui(),
        Cmd::Kernels { nvrtc } => kernels(&nvrtc),
        Cmd::Dist => desktop::dist().map(|_| ()),
        Cmd::Sidecar => desktop::prepare_sidecar().map(|_| ()),
        Cmd::E2e {
            desktop: true,
            deb: Some(deb),
            ..
        } => desktop::e2e_of(&deb),
        Cmd::E2e {
            desktop: true,
            release,
            ..
        } => desktop::e2e(release),
        Cmd::E2e { release, .. } => browser::e2e(release),
        Cmd::Bench {
            what:
                BenchCmd::Cpu {
                    epochs,
                    runs,
                    python,
                },
        } => bench_cpu(epochs, runs, &python),
    }
}
