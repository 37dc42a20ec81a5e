//! `showdown ncu import | panels | compare`: Nsight Compute exports as JSON or text, the seven
//! panels with their narratives, and baseline-vs-current deltas.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Subcommand;
use compute::ncu::{self, NcuError, NcuReport};
use compute::ComputeError;
use serde::Serialize;

/// The `ncu` subcommands.
#[derive(Subcommand)]
pub enum NcuCmd {
    /// Read an ncu export (details, raw or per-kernel summary CSV; .ncu-rep through `ncu`).
    Import {
        /// The export.
        file: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The seven panels (launch, occupancy, warp state, scheduler, instructions, throughput,
    /// summary) with narratives written from the numbers.
    Panels {
        /// The export.
        file: PathBuf,
        /// Only the kernel with this ID.
        #[arg(long)]
        kernel: Option<u64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Metric deltas of one kernel between two exports (baseline, then current).
    Compare {
        /// The baseline export.
        base: PathBuf,
        /// The current export.
        current: PathBuf,
        /// Kernel ID in the baseline (default: the first).
        #[arg(long)]
        base_kernel: Option<u64>,
        /// Kernel ID in the current export (default: the first).
        #[arg(long)]
        kernel: Option<u64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn ncu_on_path() -> bool {
    std::process::Command::new("ncu")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Imports `path`, naming the file in every error (bad content: exit 2; I/O: exit 1).
pub fn load(path: &Path) -> Result<NcuReport> {
    let shown = path.display().to_string();
    if !path.is_file() {
        return Err(ComputeError::bad_file(shown, "no such file").into());
    }
    let result = match ncu::import_file(path) {
        Err(NcuError::NcuRep { .. }) => ncu::import_ncu_rep(path, ncu_on_path()),
        other => other,
    };
    result.map_err(|e| match e {
        NcuError::Io { .. } => anyhow::anyhow!("{shown}: {e}"),
        other => ComputeError::bad_file(shown, other.to_string()).into(),
    })
}

fn pick<'a>(r: &'a NcuReport, id: Option<u64>, file: &Path) -> Result<&'a ncu::Kernel> {
    match id {
        Some(id) => r.kernels.iter().find(|k| k.id == id).ok_or_else(|| {
            ComputeError::bad_arg(
                "--kernel",
                id,
                format!(
                    "{} has no kernel with that ID ({} kernels)",
                    file.display(),
                    r.kernels.len()
                ),
            )
            .into()
        }),
        None => r.kernels.first().ok_or_else(|| {
            ComputeError::bad_file(file.display().to_string(), "the export holds no kernel").into()
        }),
    }
}

#[derive(Serialize)]
struct KernelPanels<'a> {
    id: u64,
    name: &'a str,
    short_name: &'a str,
    panels: Vec<ncu::Panel>,
}

/// Runs one `ncu` subcommand.
pub fn run(cmd: NcuCmd) -> Result<()> {
    match cmd {
        NcuCmd::Import { file, json } => {
            let r = load(&file)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                println!(
                    "{}: {:?} page, {} kernel(s)",
                    file.display(),
                    r.format,
                    r.kernels.len()
                );
                for k in &r.kernels {
                    println!(
                        "  [{}] {} block {:?} grid {:?} cc {}: {} metrics, {} rules",
                        k.id,
                        k.short_name,
                        k.block,
                        k.grid,
                        k.cc,
                        k.metrics.len(),
                        k.rules.len()
                    );
                }
                for w in &r.warnings {
                    println!("  warning: {w}");
                }
            }
        }
        NcuCmd::Panels { file, kernel, json } => {
            let r = load(&file)?;
            let kernels: Vec<&ncu::Kernel> = match kernel {
                Some(_) => vec![pick(&r, kernel, &file)?],
                None => r.kernels.iter().collect(),
            };
            let out: Vec<KernelPanels> = kernels
                .iter()
                .map(|k| KernelPanels {
                    id: k.id,
                    name: &k.name,
                    short_name: &k.short_name,
                    panels: ncu::build_panels(k),
                })
                .collect();
            if json {
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                for k in &out {
                    println!("[{}] {}", k.id, k.short_name);
                    for p in &k.panels {
                        println!("  {}: {}", p.title, p.narrative);
                    }
                }
            }
        }
        NcuCmd::Compare {
            base,
            current,
            base_kernel,
            kernel,
            json,
        } => {
            let (b, c) = (load(&base)?, load(&current)?);
            let (kb, kc) = (pick(&b, base_kernel, &base)?, pick(&c, kernel, &current)?);
            let deltas = ncu::compare(kb, kc);
            if json {
                println!("{}", serde_json::to_string_pretty(&deltas)?);
            } else {
                println!(
                    "{} [{}] → {} [{}]: {} metrics in common",
                    kb.short_name,
                    kb.id,
                    kc.short_name,
                    kc.id,
                    deltas.len()
                );
                for d in deltas.iter().filter(|d| d.delta.is_some_and(|x| x != 0.0)) {
                    println!(
                        "  {:<40} {:<32} {:>14} {}",
                        d.section,
                        d.name,
                        d.delta_pct
                            .map(|p| format!("{p:+.1} %"))
                            .unwrap_or_else(|| format!("{:+}", d.delta.unwrap_or(0.0))),
                        d.unit
                    );
                }
            }
        }
    }
    Ok(())
}
