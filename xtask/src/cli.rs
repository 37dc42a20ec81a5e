//! The command line of `cargo xtask`: its subcommands and their options (clap).

use clap::{Parser, Subcommand};
use std::path::PathBuf;

use crate::cuda::KERNELS_NVRTC;

#[derive(Parser)]
#[command(name = "xtask", about = "Precision Showdown task runner")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
}

#[derive(Subcommand)]
pub(crate) enum Cmd {
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
    /// The house rules clippy does not know (file and component lengths, the front end's typed
    /// loading), as CI checks them.
    Lint,
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
    /// One of the jobs CI runs beside its stages (`cargo xtask test` starts them, niced, each
    /// with its log in target/ci-logs): not a command for users.
    #[command(hide = true)]
    CiJob {
        #[command(subcommand)]
        job: CiJob,
    },
    /// Benchmarks: ours and the peer in the same run, a table on stdout and JSON in target/bench.
    Bench {
        #[command(subcommand)]
        what: BenchCmd,
    },
}

/// CI's background jobs (ci.rs says when each starts and who waits for it).
#[derive(Subcommand, Clone, Copy)]
pub(crate) enum CiJob {
    /// The WASM front end in its one linted (wasm-release) compile, wasm-bindgen and wasm-opt,
    /// and its size bar.
    Ui,
    /// compute's pure core checked for wasm32 (no default features).
    Wasm32Check,
    /// The dev .deb (`tauri build --debug`, linted) with the tests' `showdown` as its sidecar.
    Shell,
}

#[derive(Subcommand)]
pub(crate) enum BenchCmd {
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
