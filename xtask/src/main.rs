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
//! - `cargo xtask lint`: the house rules clippy does not know (lint/house.rs), as CI checks them.
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

use anyhow::Result;
use clap::Parser;
use std::process::Command;

use crate::bench::bench_cpu;
use crate::cli::{BenchCmd, Cli, Cmd};
use crate::cuda::kernels;
use crate::installs::ensure_desktop_deps;
use crate::process::{cargo, root, run};
use crate::wasm::build_ui;

mod bench;
mod browser;
mod ci;
mod cli;
mod cuda;
mod desktop;
mod installs;
mod lint;
mod peer_venv;
mod process;
mod stages;
mod wasm;

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
        Cmd::CiJob { job } => ci::job(job),
        Cmd::Lint => {
            lint::house::check(&root()).map(|c| println!("house rules hold: {}", c.summary()))
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
