//! `showdown`: the Precision Showdown command line (and, later, the compute sidecar).
//! A thin door onto `compute::service`; exit codes 0 ok, 1 runtime failure, 2 bad input.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use compute::types::{BackendChoice, DuelConfig, DuelEvent, DuelReport, Precision};
use compute::{ComputeError, ErrorKind};
use indicatif::{ProgressBar, ProgressStyle};

mod bench_anatomy;
mod bench_conv;
mod bench_crossover;
mod bench_duel;
mod bench_infer;
mod bench_kernels;
mod kernels;
mod lab_cli;
mod ncu;
mod occupancy;
mod peer;
mod plots;
mod profile_target;
mod render;
mod serve;

#[derive(Parser)]
#[command(
    name = "showdown",
    version,
    about = "Precision Showdown: FP32 vs FP16 mixed precision, our CUDA kernels, and the profiles that explain them"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// CPU, GPU, driver, NVRTC and NVML status, and the backend `auto` picks.
    Doctor {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Data sets: list, inspect, download.
    Data {
        #[command(subcommand)]
        cmd: DataCmd,
    },
    /// The lab CNN layer by layer: shapes, parameters, FLOPs, activation bytes.
    Model {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Train the lab CNN in several precisions and compare them.
    Duel(DuelArgs),
    /// Train the lab CNN in one precision.
    Train {
        /// The precision: fp32, fp16, tf32 or bf16.
        #[arg(long, default_value = "fp32")]
        precision: Precision,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Theoretical occupancy of a kernel launch on one SM, exactly as the CUDA driver computes it.
    Occupancy(occupancy::OccupancyArgs),
    /// Benchmarks on this machine's GPU.
    Bench {
        #[command(subcommand)]
        what: BenchCmd,
    },
    /// Our CUDA kernels: the registry, and each kernel's compiled facts and occupancy panel.
    Kernels {
        #[command(subcommand)]
        cmd: kernels::KernelsCmd,
    },
    /// Nsight Compute exports: import, the seven panels, compare two reports.
    Ncu {
        #[command(subcommand)]
        cmd: ncu::NcuCmd,
    },
    /// The compute sidecar: JSON lines on stdin/stdout, or HTTP (+ the web UI).
    Serve(serve::ServeArgs),
    /// What Nsight Compute runs when the app profiles a target (`profile` job): the target's
    /// work, warmed up, then once inside the NVTX range `profile`.
    #[command(hide = true)]
    ProfileTarget(profile_target::ProfileTargetArgs),
}

#[derive(Subcommand)]
enum DataCmd {
    /// The known data sets and whether each is available here.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Load a data set and describe it (counts, classes, pixel statistics).
    Info {
        /// mnist-sample, fashion-mnist or mnist.
        #[arg(default_value = "mnist-sample")]
        name: String,
        /// Read the four standard IDX files from this folder instead.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a page of real images with their labels, as ASCII art (or JSON: the
    /// `dataset_samples` answer of the protocol).
    Samples {
        /// mnist-sample, fashion-mnist or mnist.
        #[arg(default_value = "mnist-sample")]
        name: String,
        /// train or test.
        #[arg(long, default_value = "test")]
        split: compute::types::DataSplit,
        /// Index of the first image in the split.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Images to print (at most 256).
        #[arg(long, default_value_t = 8)]
        count: usize,
        /// Read the four standard IDX files from this folder instead.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Download a data set into the user data folder, verifying SHA-256.
    Fetch {
        /// The data set (only `mnist` is downloadable).
        name: String,
        /// Mirror base URL to use instead of $SHOWDOWN_MNIST_MIRRORS (comma-separated) or the
        /// built-in ones (repeatable).
        #[arg(long = "mirror")]
        mirrors: Vec<String>,
        /// Destination folder (default: the user data folder).
        #[arg(long)]
        dest: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
enum BenchCmd {
    /// Our duel and the PyTorch peers in the same call, side by side with ratios. On the GPU
    /// machine: `--backend cuda --dataset fashion-mnist --data-dir DIR --epochs 5
    /// --precisions fp32,fp16,bf16 --reference DIR` (the folder of anchor_graph.py and
    /// anchor_train.py).
    Duel {
        /// Contestants, comma-separated: fp32, fp16, tf32, bf16.
        #[arg(long, value_delimiter = ',', default_value = "fp32,fp16,bf16")]
        precisions: Vec<Precision>,
        #[command(flatten)]
        common: CommonArgs,
        /// Folder of the peer scripts (anchor_graph.py, anchor_train.py); without it, our rows only.
        #[arg(long)]
        reference: Option<PathBuf>,
        /// Python interpreter with PyTorch, for the peers.
        #[arg(long, default_value = "python3")]
        python: String,
        /// Leave out the slow eager peers (anchor_train.py).
        #[arg(long)]
        skip_eager: bool,
        /// Also write the JSON here.
        #[arg(long)]
        json_out: Option<PathBuf>,
    },
    /// Activation and norm kernels: correctness against f64 on awkward shapes, then timings
    /// (CUDA events, p50/p90/p99, GB/s and fraction of the copy ceiling measured in the same run);
    /// with `--reference DIR` (or `--peer-log F`) PyTorch eager and torch.compile beside them.
    Kernels(bench_kernels::KernelsArgs),
    /// One training step taken apart, per precision, side by side: every kernel launched on its
    /// own between CUDA events (every primitive on the host clock on the CPU) beside the
    /// graph-replayed step; `--trace-out FILE` writes Chrome trace JSON for Perfetto.
    Anatomy(bench_anatomy::AnatomyArgs),
    /// The precision crossover: the same GEMM at growing sizes in FP32, TF32, BF16, FP16 and
    /// FP8 (cuBLASLt on a GPU; FP32, BF16 and FP16 on the CPU), the lab CNN's own GEMMs, each
    /// checked against f64; prints TFLOP/s, speed-ups, regimes and where each precision pays.
    Crossover(bench_crossover::CrossoverArgs),
    /// The CNN variant switch: the lab CNN with ReLU, GELU or Swish, trained on the CPU, then its
    /// inference latency on the GPU per batch size (p50/p90/p99), logits checked against the
    /// CPU's; with `--peer bench/infer_peer.py` PyTorch on the same weights in the same call.
    Infer(bench_infer::InferArgs),
    /// The convolution ladder: rung 1 (unroll + GEMM + permute) to rung 5 (tensor cores, FP16
    /// out, streamed from pinned memory), cuDNN through cudarc, the CPU rows, each checked
    /// against an f64 reference; with `--reference DIR`, cuDNN through PyTorch beside them.
    Conv {
        /// Images per pass.
        #[arg(long, default_value_t = 10_000)]
        batch: usize,
        /// Timed passes at most per row (slow rows get fewer, at least 5).
        #[arg(long, default_value_t = 50)]
        reps: usize,
        /// Layers, comma-separated (default all): lab_conv1, lab_conv2, lenet_c1, lenet_c3.
        #[arg(long, value_delimiter = ',')]
        layers: Vec<String>,
        /// GPU ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// Data set whose test images feed the image layers: mnist-sample, fashion-mnist
        /// (--data-dir, else $SHOWDOWN_FASHION_MNIST_DIR, else apt's dataset-fashion-mnist),
        /// mnist (--data-dir, else fetched).
        #[arg(long, default_value = "mnist-sample")]
        dataset: String,
        /// Read the four standard IDX files (gz or not) from this folder.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Images for the CPU rows.
        #[arg(long, default_value_t = 8)]
        cpu_batch: usize,
        /// Run cuDNN through PyTorch (bench/anchor_kernels.py, built in) after ours.
        #[arg(long)]
        peer: bool,
        /// A saved anchor_kernels.py output to read instead of running it.
        #[arg(long)]
        peer_log: Option<PathBuf>,
        /// Python interpreter with PyTorch, for the peer.
        #[arg(long, default_value = "python3")]
        python: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also write the JSON here.
        #[arg(long)]
        json_out: Option<PathBuf>,
    },
    /// SVG charts of a `bench conv --json-out` file (and a `bench kernels --json-out` file):
    /// the ladder's speed-up, runtimes, and a roofline.
    Plot {
        /// The `bench conv` JSON.
        #[arg(long)]
        conv: PathBuf,
        /// The `bench kernels` JSON, to put the activation and norm kernels on the roofline.
        #[arg(long)]
        kernels: Option<PathBuf>,
        /// Folder for the SVG files.
        #[arg(long, default_value = "docs/plots")]
        out: PathBuf,
    },
}

#[derive(Args)]
struct DuelArgs {
    /// Contestants, comma-separated: fp32, fp16, tf32, bf16, fp8.
    #[arg(long, value_delimiter = ',', default_value = "fp32,fp16")]
    precisions: Vec<Precision>,
    /// FP8's per-tensor scaling: delayed (each tensor's amax history, Transformer Engine's
    /// default recipe) or current (each tensor's own amax).
    #[arg(long, default_value = "delayed")]
    fp8_scaling: compute::fp8::Fp8Scaling,
    /// Also train the same network in PyTorch after ours (bench/duel_peer.py: eager, and a
    /// CUDA graph on a GPU), on the same images and settings; its rows join the table.
    #[arg(long)]
    pytorch: bool,
    /// The Python with torch for --pytorch (default: $SHOWDOWN_PYTHON, else python3).
    #[arg(long, value_name = "PATH", requires = "pytorch")]
    python: Option<String>,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
struct CommonArgs {
    /// auto (GPU if usable), cpu or cuda.
    #[arg(long, default_value = "auto")]
    backend: BackendChoice,
    /// mnist-sample (embedded), fashion-mnist or mnist.
    #[arg(long, default_value = "mnist-sample")]
    dataset: String,
    /// Read the four standard IDX files (gz or not) from this folder.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Epochs per contestant.
    #[arg(long, default_value_t = 1)]
    epochs: usize,
    /// Mini-batch size.
    #[arg(long, default_value_t = 128)]
    batch: usize,
    /// Adam learning rate.
    #[arg(long, default_value_t = 1e-3)]
    lr: f32,
    /// Seed of weights, shuffles and dropout.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Train on the first N training images.
    #[arg(long)]
    train_limit: Option<usize>,
    /// Evaluate on the first N test images.
    #[arg(long)]
    test_limit: Option<usize>,
    /// Dropout probability.
    #[arg(long, default_value_t = 0.5)]
    dropout: f32,
    /// Activation after each convolution: relu, gelu or swish (the CNN variant; both backends
    /// train all three).
    #[arg(long, default_value = "relu")]
    activation: compute::model::Activation,
    /// CPU threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// GPU ordinal for the CUDA backend.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
}

impl CommonArgs {
    fn config(&self, precisions: Vec<Precision>) -> DuelConfig {
        DuelConfig {
            backend: self.backend,
            dataset: self.dataset.clone(),
            data_dir: self.data_dir.as_ref().map(|p| p.display().to_string()),
            precisions,
            epochs: self.epochs,
            batch: self.batch,
            lr: self.lr,
            seed: self.seed,
            train_limit: self.train_limit,
            test_limit: self.test_limit,
            dropout: self.dropout,
            activation: self.activation,
            threads: self.threads,
            device: self.device,
            pytorch: false,
            fp8_scaling: compute::fp8::Fp8Scaling::Delayed,
        }
    }
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// A flag the first Ctrl-C sets (the duel stops within one step and reports `cancelled`); a
/// second Ctrl-C ends the process at once with exit code 130.
fn ctrl_c_cancels() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&flag);
    let installed = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
        eprintln!("\ncancelling (Ctrl-C again to quit at once)…");
    });
    if let Err(e) = installed {
        eprintln!("note: Ctrl-C will end the process without a report ({e})");
    }
    flag
}

/// What `showdown serve --http` says when Ctrl-C stops it: its one line.
const SERVE_STOPPED: &str = "showdown serve: stopped (Ctrl-C)";

/// Ctrl-C stops `showdown serve --http` at once: one line on stderr, exit code 130, no error
/// and no backtrace. The compute process goes with it (Ctrl-C reaches its whole process group;
/// otherwise it ends when its stdin closes).
fn ctrl_c_stops_the_server() {
    let installed = ctrlc::set_handler(|| {
        let _ = writeln!(std::io::stderr(), "{SERVE_STOPPED}");
        std::process::exit(130);
    });
    if let Err(e) = installed {
        let _ = writeln!(
            std::io::stderr(),
            "note: Ctrl-C will end the server without a word ({e})"
        );
    }
}

fn duel(cfg: DuelConfig, json: bool) -> Result<()> {
    duel_with(cfg, None, json)
}

/// The duel, with PyTorch beside it when `cfg.pytorch` (run by `python`, else the peer's
/// usual choice: `$SHOWDOWN_PYTHON`, else python3).
fn duel_with(cfg: DuelConfig, python: Option<String>, json: bool) -> Result<()> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>5} epoch {msg} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut epochs_total = 0;
    let mut peer_printed: Option<(String, usize)> = None;
    let mut on_event = |e: DuelEvent| match e {
        DuelEvent::RunStarted {
            precision,
            steps_per_epoch,
            epochs,
        } => {
            epochs_total = epochs;
            bar.reset();
            bar.set_length((steps_per_epoch * epochs) as u64);
            bar.set_prefix(precision.to_string());
        }
        DuelEvent::Step {
            epoch,
            step,
            steps,
            loss,
            ..
        } => {
            bar.set_position(((epoch - 1) * steps + step) as u64);
            bar.set_message(format!("{epoch}/{epochs_total} loss {loss:.4}"));
        }
        DuelEvent::Epoch { precision, report } => {
            bar.println(format!(
                "{precision:>5} epoch {}: {:.0} ms, train loss {:.4}, test accuracy {:.4}",
                report.epoch, report.ms, report.train_loss, report.test_accuracy
            ));
        }
        DuelEvent::RunFinished { .. } => bar.finish_and_clear(),
        DuelEvent::Curve { .. } => {}
        DuelEvent::Peer { run, epochs } => {
            // Each epoch once: the variant's later events (its end) repeat its last epoch.
            let last = run.epochs.last().map(|e| (run.variant.clone(), e.epoch));
            if let Some(e) = run.epochs.last().filter(|_| last != peer_printed) {
                peer_printed = last;
                bar.println(format!(
                    "{} epoch {}/{epochs}: {:.0} ms, train loss {:.4}, test accuracy {:.4}",
                    run.label, e.epoch, e.ms, e.train_loss, e.test_accuracy
                ));
            }
        }
        DuelEvent::PeerNote { text } => bar.println(text),
    };
    let cancel = ctrl_c_cancels();
    let peer = cfg.pytorch.then(|| {
        let (python, source) = match python {
            Some(p) => (p, "--python"),
            None => compute::lab::peers::choose_python(None),
        };
        compute::lab::peers::status(&python, source)
    });
    let report: DuelReport =
        compute::duel::run_duel_with_peer(&cfg, peer.as_ref(), &mut on_event, &cancel)?;
    if json {
        print_json(&report)
    } else {
        print!("{}", render::duel_table(&report));
        Ok(())
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Doctor { json } => {
            let r = compute::doctor::doctor();
            if json {
                print_json(&r)
            } else {
                print!("{}", render::doctor(&r));
                Ok(())
            }
        }
        Cmd::Model { json } => {
            let s = compute::model::lab_summary();
            if json {
                print_json(&s)
            } else {
                print!("{}", render::model(&s));
                Ok(())
            }
        }
        Cmd::Data {
            cmd: DataCmd::List { json },
        } => {
            let l = compute::data::list();
            if json {
                print_json(&l)
            } else {
                print!("{}", render::datasets(&l));
                Ok(())
            }
        }
        Cmd::Data {
            cmd:
                DataCmd::Info {
                    name,
                    data_dir,
                    json,
                },
        } => {
            let d = compute::data::load(&name, data_dir.as_deref())?;
            let info = render::DatasetInfo::of(&d);
            if json {
                print_json(&info)
            } else {
                print!("{}", info.text());
                Ok(())
            }
        }
        Cmd::Data {
            cmd:
                DataCmd::Samples {
                    name,
                    split,
                    offset,
                    count,
                    data_dir,
                    json,
                },
        } => {
            compute::data::check_page(count)?;
            let d = compute::data::load(&name, data_dir.as_deref())?;
            let page = compute::data::samples(&d, split, offset, count)?;
            if json {
                return print_json(&page);
            }
            let pixels = page.pixels()?;
            const RAMP: &[u8] = b" .:-=+*#%@";
            for (i, image) in pixels.chunks_exact(page.width * page.height).enumerate() {
                println!(
                    "{} {} #{}: {}",
                    page.dataset,
                    page.split,
                    page.offset + i,
                    page.class_of(i)
                );
                for row in image.chunks_exact(page.width) {
                    let line: String = row
                        .iter()
                        .map(|&v| RAMP[v as usize * (RAMP.len() - 1) / 255] as char)
                        .collect();
                    println!("{}", line.trim_end());
                }
            }
            Ok(())
        }
        Cmd::Data {
            cmd:
                DataCmd::Fetch {
                    name,
                    mirrors,
                    dest,
                    json,
                },
        } => {
            if name != "mnist" {
                return Err(ComputeError::bad_arg("data set", &name, "only `mnist` is downloadable (fashion-mnist: apt install dataset-fashion-mnist)").into());
            }
            use compute::protocol::FetchProgress;
            let dest = match dest {
                Some(d) => d,
                None => compute::data::user_data_dir()?.join("mnist"),
            };
            let mirrors = if mirrors.is_empty() {
                compute::data::fetch::mirrors_from_env()
            } else {
                mirrors
            };
            let files = compute::data::fetch::manifest_from_env()?;
            // The same streaming fetch as the app's job: a progress line per file (on a
            // terminal), each boundary on its own line, Ctrl-C cancels leaving no partial file.
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let on_progress = &mut |p: FetchProgress| match p {
                FetchProgress::Started {
                    file,
                    index,
                    files,
                    mirror,
                } => {
                    bar.suspend(|| eprintln!("fetching {file} ({index}/{files}) from {mirror}"));
                    bar.reset();
                    bar.set_length(0);
                    bar.set_prefix(file);
                }
                FetchProgress::Bytes { bytes, total, .. } => {
                    bar.set_length(total.unwrap_or(bytes));
                    bar.set_position(bytes);
                }
                FetchProgress::MirrorFailed { reason, .. } => {
                    bar.finish_and_clear();
                    bar.suspend(|| eprintln!("  failed: {reason}"));
                }
                FetchProgress::Done {
                    file, bytes, from, ..
                } => {
                    bar.finish_and_clear();
                    bar.suspend(|| eprintln!("  {file}: {bytes} bytes, SHA-256 ok ({from})"));
                }
            };
            let cancel = ctrl_c_cancels();
            let got = compute::data::fetch::fetch(&mirrors, &files, &dest, on_progress, &cancel);
            bar.finish_and_clear();
            let got = got?;
            if json {
                print_json(&got)
            } else {
                for g in &got {
                    println!("{} ({} bytes, {})", g.path.display(), g.bytes, g.from);
                }
                Ok(())
            }
        }
        Cmd::Duel(a) => {
            let cfg = DuelConfig {
                pytorch: a.pytorch,
                fp8_scaling: a.fp8_scaling,
                ..a.common.config(a.precisions)
            };
            duel_with(cfg, a.python, a.common.json)
        }
        Cmd::Train { precision, common } => duel(common.config(vec![precision]), common.json),
        Cmd::Occupancy(a) => occupancy::run(&a),
        Cmd::Ncu { cmd } => ncu::run(cmd),
        Cmd::Kernels { cmd } => kernels::run(cmd),
        Cmd::Serve(a) => serve::run(a),
        Cmd::ProfileTarget(a) => profile_target::run(a),
        Cmd::Bench {
            what: BenchCmd::Kernels(a),
        } => bench_kernels::run(a),
        Cmd::Bench {
            what: BenchCmd::Anatomy(a),
        } => bench_anatomy::run(a),
        Cmd::Bench {
            what: BenchCmd::Crossover(a),
        } => bench_crossover::run(a),
        Cmd::Bench {
            what: BenchCmd::Infer(a),
        } => bench_infer::run(a),
        Cmd::Bench {
            what: BenchCmd::Plot { conv, kernels, out },
        } => {
            for p in plots::run(&conv, kernels.as_deref(), &out)? {
                println!("{}", p.display());
            }
            Ok(())
        }
        Cmd::Bench {
            what:
                BenchCmd::Conv {
                    batch,
                    reps,
                    layers,
                    device,
                    dataset,
                    data_dir,
                    cpu_batch,
                    peer,
                    peer_log,
                    python,
                    json,
                    json_out,
                },
        } => bench_conv::run(bench_conv::ConvArgs {
            batch,
            reps,
            layers,
            device,
            dataset,
            data_dir,
            cpu_batch,
            peer,
            peer_log,
            python,
            json,
            json_out,
        }),
        Cmd::Bench {
            what:
                BenchCmd::Duel {
                    precisions,
                    common,
                    reference,
                    python,
                    skip_eager,
                    json_out,
                },
        } => {
            if let Some(dir) = &common.data_dir {
                bench_conv::check_data_dir(dir)?;
            }
            bench_duel::run(
                common.config(precisions),
                reference,
                &python,
                skip_eager,
                common.json,
                json_out,
            )
        }
    }
}

/// Lets `showdown … | head` end quietly, as Unix tools do, instead of panicking on a closed pipe.
/// Not for `serve`: see [`ignore_sigpipe`].
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: resetting SIGPIPE to its default disposition before any thread is spawned.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// `serve` must outlive its readers: a client (or the reader of its stderr) that goes away makes
/// a write fail with EPIPE, which `serve` handles (see `serve.rs`), instead of killing the
/// process with SIGPIPE and losing the job. (Rust ignores SIGPIPE already; said here explicitly.)
fn ignore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: setting SIGPIPE's disposition before any thread is spawned.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Lets a numeric flag take a negative value (`--batch -1`), so that its parser refuses it
/// naming the flag, instead of clap's "unexpected argument '-1'" that names none.
fn negative_numbers_are_values(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if a.get_action().takes_values() {
            a.allow_negative_numbers(true)
        } else {
            a
        }
    })
    .mut_subcommands(negative_numbers_are_values)
}

fn parse() -> std::result::Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut cmd = negative_numbers_are_values(Cli::command());
    let matches = cmd.try_get_matches_from_mut(std::env::args_os())?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))
}

fn main() -> ExitCode {
    let cli = match parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    if let Cmd::Serve(a) = &cli.cmd {
        ignore_sigpipe();
        if a.is_http() {
            ctrl_c_stops_the_server();
        }
    } else {
        restore_default_sigpipe();
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Never a panic over a closed stderr: the exit code still tells.
            let _ = writeln!(std::io::stderr(), "error: {e}");
            let kind = e.downcast_ref::<ComputeError>().map(|c| c.kind());
            match kind {
                Some(ErrorKind::BadInput) => ExitCode::from(2),
                Some(ErrorKind::Cancelled) => ExitCode::from(130),
                _ => ExitCode::from(1),
            }
        }
    }
}
