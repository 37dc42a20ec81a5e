//! `showdown ncu import | panels | compare | list | attach | detach | remove`: Nsight Compute
//! exports as JSON or text, the seven panels with their narratives (and the screenshots
//! attached to them), baseline-vs-current deltas, and the library of saved imports.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Subcommand;
use compute::ncu::{self, NcuError, NcuReport, Screenshot};
use compute::ncu_library::ImportStore;
use compute::ComputeError;
use serde::Serialize;

/// The `ncu` subcommands.
#[derive(Subcommand)]
pub enum NcuCmd {
    /// Read an ncu export (details, raw or per-kernel summary CSV; .ncu-rep through `ncu`).
    Import {
        /// The export.
        file: PathBuf,
        /// Keep it in the library (screenshots can then be attached to its panels); prints
        /// the import's ID.
        #[arg(long)]
        save: bool,
        #[command(flatten)]
        store: StoreArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The seven panels (launch, occupancy, warp state, scheduler, instructions, throughput,
    /// summary) with narratives written from the numbers, and their screenshots.
    Panels {
        /// The export, or the ID of a saved import (then with its screenshots).
        file: PathBuf,
        #[command(flatten)]
        store: StoreArg,
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
    /// The saved imports, with their screenshots.
    List {
        #[command(flatten)]
        store: StoreArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Attach a screenshot (PNG or JPEG, at most 20 MiB and 16384 pixels a side) to a panel
    /// of a saved import.
    Attach {
        /// The import's ID (`showdown ncu list`).
        import: String,
        /// The image.
        image: PathBuf,
        /// The panel: launch, occupancy, warp_state, scheduler, instructions, throughput or
        /// summary.
        #[arg(long)]
        panel: String,
        /// Only on this kernel's panel (default: the panel of every kernel).
        #[arg(long)]
        kernel: Option<u64>,
        /// A caption shown with it.
        #[arg(long)]
        caption: Option<String>,
        #[command(flatten)]
        store: StoreArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a screenshot from a saved import.
    Detach {
        /// The import's ID.
        import: String,
        /// The screenshot's ID.
        screenshot: String,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Remove a saved import and its screenshots.
    Remove {
        /// The import's ID.
        import: String,
        #[command(flatten)]
        store: StoreArg,
    },
}

/// Where the library of saved imports is.
#[derive(clap::Args)]
pub struct StoreArg {
    /// The library's folder (default: $SHOWDOWN_DATA_HOME or the user data folder).
    #[arg(long = "store", value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl StoreArg {
    fn open(&self) -> Result<ImportStore> {
        let root = match &self.dir {
            Some(d) => d.clone(),
            None => ImportStore::default_root().ok_or_else(|| {
                ComputeError::bad_arg(
                    "--store",
                    "",
                    "this system has no user data folder; pass --store DIR or set SHOWDOWN_DATA_HOME",
                )
            })?,
        };
        Ok(ImportStore::open(root).map_err(ComputeError::from)?)
    }
}

/// A saved import's ID: 16 lower-case hex digits.
fn looks_like_id(s: &str) -> bool {
    s.len() == 16
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Imports `path`, naming the file in every error. A file the user names that cannot be
/// read (missing, not a regular file, unreadable) is bad input like bad content: exit 2.
pub fn load(path: &Path) -> Result<NcuReport> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_string(),
            _ => format!("cannot read: {e}"),
        };
        ComputeError::bad_file(shown.clone(), why)
    })?;
    if !meta.is_file() {
        return Err(ComputeError::bad_file(shown, "not a regular file").into());
    }
    let result = match ncu::import_file(path) {
        Err(NcuError::NcuRep { .. }) => compute::ncu_runner::import_rep(path),
        other => other,
    };
    result.map_err(|e| match e {
        NcuError::Io { line, message } => {
            let at = if line > 1 {
                format!(" (line {line})")
            } else {
                String::new()
            };
            // The message names the file already when opening it failed.
            let message = message
                .strip_prefix(&format!("{shown}: "))
                .unwrap_or(&message)
                .to_string();
            ComputeError::bad_file(shown, format!("cannot read{at}: {message}")).into()
        }
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

/// Runs one `ncu` subcommand.
pub fn run(cmd: NcuCmd) -> Result<()> {
    match cmd {
        NcuCmd::Import {
            file,
            save,
            store,
            json,
        } => {
            let r = load(&file)?;
            let saved = if save {
                let store = store.open()?;
                Some(store.save(&file, &r).map_err(ComputeError::from)?)
            } else {
                None
            };
            if json {
                #[derive(Serialize)]
                struct Imported<'a> {
                    #[serde(skip_serializing_if = "Option::is_none")]
                    saved: Option<&'a ncu::ImportSummary>,
                    #[serde(flatten)]
                    report: &'a NcuReport,
                }
                let out = Imported {
                    saved: saved.as_ref(),
                    report: &r,
                };
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                if let Some(s) = &saved {
                    println!(
                        "saved as import {} ({} screenshot(s))",
                        s.id,
                        s.screenshots.len()
                    );
                }
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
        NcuCmd::Panels {
            file,
            store,
            kernel,
            json,
        } => {
            let id = file.to_string_lossy().into_owned();
            let (r, shots) = if !file.exists() && looks_like_id(&id) {
                let (summary, r) = store.open()?.load(&id).map_err(ComputeError::from)?;
                (r, summary.screenshots)
            } else {
                (load(&file)?, Vec::new())
            };
            let kernels: Vec<&ncu::Kernel> = match kernel {
                Some(_) => vec![pick(&r, kernel, &file)?],
                None => r.kernels.iter().collect(),
            };
            let out: Vec<ncu::KernelPanels> = kernels
                .iter()
                .map(|k| ncu::KernelPanels::of(k, &shots))
                .collect();
            if json {
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                for k in &out {
                    println!("[{}] {}", k.id, k.short_name);
                    for p in &k.panels {
                        println!("  {}: {}", p.title, p.narrative);
                        for s in &p.screenshots {
                            println!("    screenshot {}", describe(s));
                        }
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
                    // Both sides in SI units (whatever each export printed), shown readable.
                    let shown = |v: &ncu::MetricValue| match v {
                        ncu::MetricValue::Number(x) => ncu::units::readable(*x, &d.unit),
                        ncu::MetricValue::Text(t) => t.clone(),
                    };
                    let change = ncu::units::readable_signed(d.delta.unwrap_or(0.0), &d.unit);
                    let pct = d
                        .delta_pct
                        .map(|p| format!(" ({p:+.1} %)"))
                        .unwrap_or_default();
                    println!(
                        "  {:<40} {:<32} {:>14} → {:<14} {change}{pct}",
                        d.section,
                        d.name,
                        shown(&d.base),
                        shown(&d.current),
                    );
                }
            }
        }
        NcuCmd::List { store, json } => {
            let store = store.open()?;
            let listing = store.list_checked().map_err(ComputeError::from)?;
            let all = listing.imports;
            if json {
                // The JSON stays the list of imports; what was left out goes to stderr.
                for note in &listing.skipped {
                    eprintln!("warning: left out: {note}");
                }
                println!("{}", serde_json::to_string_pretty(&all)?);
            } else if all.is_empty() {
                println!("no saved imports in {}", store.root().display());
            } else {
                for i in &all {
                    println!(
                        "{}  {} ({:?} page, {} kernel(s), {} bytes)",
                        i.id, i.source_name, i.format, i.kernels, i.source_bytes
                    );
                    for s in &i.screenshots {
                        println!("    screenshot {}", describe(s));
                    }
                }
            }
            if !json && !listing.skipped.is_empty() {
                println!("left out (damaged files):");
                for note in &listing.skipped {
                    println!("  {note}");
                }
            }
        }
        NcuCmd::Attach {
            import,
            image,
            panel,
            kernel,
            caption,
            store,
            json,
        } => {
            let store = store.open()?;
            let bytes = read_image(&image)?;
            let name = image.to_string_lossy();
            let shot = store
                .attach(&import, kernel, &panel, &name, &bytes, caption.as_deref())
                .map_err(ComputeError::from)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&shot)?);
            } else {
                println!("attached {}", describe(&shot));
            }
        }
        NcuCmd::Detach {
            import,
            screenshot,
            store,
        } => {
            store
                .open()?
                .detach(&import, &screenshot)
                .map_err(ComputeError::from)?;
            println!("removed screenshot {screenshot} from import {import}");
        }
        NcuCmd::Remove { import, store } => {
            store.open()?.remove(&import).map_err(ComputeError::from)?;
            println!("removed import {import}");
        }
    }
    Ok(())
}

/// One line about a screenshot.
fn describe(s: &Screenshot) -> String {
    format!(
        "{} on {} of {}: {} ({}×{} {}, {} bytes){}",
        s.id,
        s.panel,
        s.kernel
            .map_or_else(|| "every kernel".to_string(), |k| format!("kernel {k}")),
        s.original_name,
        s.width,
        s.height,
        s.format.media_type(),
        s.bytes,
        s.caption
            .as_deref()
            .map(|c| format!(": {c}"))
            .unwrap_or_default()
    )
}

/// Reads an image to attach, refusing a missing or oversized file before reading it all.
fn read_image(path: &Path) -> Result<Vec<u8>> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_string(),
            _ => format!("cannot read: {e}"),
        };
        ComputeError::bad_file(shown.clone(), why)
    })?;
    if !meta.is_file() {
        return Err(ComputeError::bad_file(shown, "not a file").into());
    }
    if meta.len() > ncu::MAX_SCREENSHOT_BYTES {
        return Err(ComputeError::bad_file(
            shown,
            format!(
                "{} bytes is over the {} MiB limit for a screenshot",
                meta.len(),
                ncu::MAX_SCREENSHOT_BYTES >> 20
            ),
        )
        .into());
    }
    std::fs::read(path).map_err(|e| anyhow::anyhow!("{shown}: {e}"))
}
