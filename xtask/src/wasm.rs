//! The WASM front end: the Rust target and wasm-bindgen it needs, its build into app-ui/dist
//! (wasm-release, wasm-bindgen, wasm-opt), the stamp that skips an unchanged module, its
//! gzip-compressed copies for the browser mode and its size limit.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::process::{cargo, cargo_home, output, root, run};

pub(crate) fn ensure_rust_parts() -> Result<()> {
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
pub(crate) fn locked_wasm_bindgen() -> Result<String> {
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

/// A wasm-bindgen program of exactly version `want` (on PATH, or in $CARGO_HOME/bin).
pub(crate) fn wasm_bindgen_program(want: &str) -> Option<PathBuf> {
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
pub(crate) fn wasm_bindgen_install(want: &str) -> Command {
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
    // Never lint someone else's crate (see lint.rs).
    .env_remove("RUSTC_WORKSPACE_WRAPPER")
    .env_remove("CLIPPY_ARGS");
    c
}

/// The wasm-bindgen program matching Cargo.lock's wasm-bindgen, installed when missing.
pub(crate) fn ensure_wasm_bindgen() -> Result<PathBuf> {
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
pub(crate) fn build_ui() -> Result<()> {
    build_ui_with(false)
}

/// The file (under target/, out of the folder the desktop app embeds) recording what
/// app-ui/dist's WASM was made from (see [`wasm_stamp`]).
pub(crate) const WASM_STAMP: &str = "target/app-ui-dist.stamp";

/// What app-ui/dist's `app_ui.js` and `app_ui_bg.wasm` are made from: the wasm-bindgen and
/// Binaryen versions and a hash of rustc's module. The same stamp means the same output, so
/// wasm-bindgen and wasm-opt (tens of seconds) are skipped.
pub(crate) fn wasm_stamp(bindgen_version: &str, module: &[u8]) -> String {
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
pub(crate) fn copy_if_changed(from: &Path, to: &Path) -> Result<bool> {
    let new = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    if std::fs::read(to).is_ok_and(|old| old == new) {
        return Ok(false);
    }
    std::fs::write(to, &new).with_context(|| format!("writing {}", to.display()))?;
    Ok(true)
}

/// `path` with `.gz` appended: where its gzip copy lies.
pub(crate) fn gz_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".gz");
    PathBuf::from(name)
}

/// Removes the gzip copy of `path`, if any (it no longer matches `path`).
pub(crate) fn remove_gz(path: &Path) -> Result<()> {
    match std::fs::remove_file(gz_path(path)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", gz_path(path).display()))
        }
        _ => Ok(()),
    }
}

/// The files of `dir` (and its folders) that `showdown serve --http` sends compressed: the
/// page, its style sheet, scripts and WASM.
pub(crate) fn compressible(dir: &Path) -> Result<Vec<PathBuf>> {
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
pub(crate) fn compress_ui() -> Result<(u64, u64)> {
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

/// app-ui/dist as the desktop app embeds it, in target/tauri-dist: every file but the gzip
/// copies (the app compresses what it embeds itself). `showdown serve --http` keeps its copies
/// in app-ui/dist, so a browser e2e can run while a bundle is built (CI runs them side by
/// side). A file unchanged keeps its time (the shell is not rebuilt for nothing); one gone
/// from dist is removed. Its path.
pub(crate) fn ui_for_bundle() -> Result<PathBuf> {
    let dist = root().join("app-ui/dist");
    let to = root().join("target/tauri-dist");
    std::fs::create_dir_all(&to).with_context(|| format!("creating {}", to.display()))?;
    let is_gz = |p: &Path| p.extension().is_some_and(|x| x == "gz");
    let mut kept = Vec::new();
    for e in std::fs::read_dir(&dist).with_context(|| format!("reading {}", dist.display()))? {
        let p = e?.path();
        if p.is_file() && !is_gz(&p) {
            let name = p.file_name().context("a file in app-ui/dist has no name")?;
            copy_if_changed(&p, &to.join(name))?;
            kept.push(name.to_owned());
        }
    }
    if !kept.iter().any(|n| n == "index.html") {
        bail!(
            "{} has no index.html: build the front end first (`cargo xtask ui`)",
            dist.display()
        );
    }
    for e in std::fs::read_dir(&to)? {
        let p = e?.path();
        if p.file_name().is_some_and(|n| !kept.iter().any(|k| k == n)) {
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
        }
    }
    Ok(to)
}

/// Removes every gzip copy from app-ui/dist: the desktop app embeds the folder as it is (and
/// compresses it itself), so the copies for `showdown serve --http` would only weigh on it.
pub(crate) fn remove_compressed_ui() -> Result<()> {
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
pub(crate) fn build_ui_with(lint: bool) -> Result<()> {
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
        crate::lint::lint(&mut build)?;
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
pub(crate) fn bindgen_and_optimise(wasm_bindgen: &Path, wasm: &Path, dist: &Path) -> Result<()> {
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
    let wasm_opt = crate::installs::npm_tool(&root().join("target/binaryen-node"), BINARYEN)?;
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
pub(crate) const BINARYEN: &str = "binaryen@132.0.0";

/// The largest front end we ship. The desktop-app issue set 2 MiB as a proxy for start-up
/// (window interactive ≤ 1.5 s); the visual explainer (Act I's network, Act II's histograms and
/// memory, the guided walk) brought it to 2.58 MB, most of it Leptos's view code and serde's
/// readers of the new reports, with the window interactive in 0.67 s. The start-up it stands
/// for is printed on every CI run (the desktop e2e's "window interactive"); docs/benchmarks.md
/// keeps both. FP8's story in Act II (issue 28: the scale chart, the step slider's tensor
/// table, the per-tensor histograms) measured 53,746 bytes on its own (3,195,387 with it,
/// 3,141,641 without, 2026-11-27), over the 3 MiB this bar was: it was 3.25 MiB since. The
/// precision crossover's section at the end of Act II (issue 39: its run form, two log-log
/// charts with the regimes shaded and the CNN's points, the sentences) and the house's typed
/// loading (issue 36: `loading.rs`, the pages split into components) took it from 3,205,189
/// bytes (366c591) to 3,569,583 (2026-11-28, measured together, not apart): it was 3.5 MiB
/// since. Issue 37's pages (Act IV's screenshot viewer at 1:1, the calculator's carveout and
/// flagged fields, compare by metric identity, the provenance words, the verdict's groups, the
/// duel's kept settings and its difference chart) and issue 38's (Act IV's pager, the
/// interpreter picker) took it to 3,761,880 bytes (b859ef3 → e8a00f5, the same release
/// profile: opt-level "z", LTO, one codegen unit, wasm-opt -Oz): it is 3.75 MiB since, the
/// start-up it stands for still printed by CI beside it (the desktop e2e's time to an
/// interactive window).
pub(crate) const MAX_WASM_BYTES: u64 = 15 << 18;

/// Fails when the built front end (app-ui/dist) is over [`MAX_WASM_BYTES`]; its size.
pub(crate) fn check_wasm_size() -> Result<u64> {
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
