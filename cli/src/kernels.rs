//! `showdown kernels list | show NAME`: the kernel registry, and each kernel's facts (registers,
//! shared and local memory, occupancy and its limiter, PTX/SASS tensor-core instructions) with
//! its calculated occupancy panel.

use anyhow::Result;
use clap::Subcommand;
use compute::ComputeError;
use serde::Serialize;

/// The `kernels` subcommands.
#[derive(Subcommand)]
pub enum KernelsCmd {
    /// Every kernel family with its entry points and dtypes.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Facts of one entry point (`relu_f16`) or of a whole family (`norm`).
    Show {
        /// Entry point or family name.
        name: String,
        /// Architecture to compile for.
        #[arg(long, default_value = "sm_90")]
        arch: String,
        /// Threads per block for the occupancy.
        #[arg(long, default_value_t = 256)]
        threads: u32,
        /// Print the family's CUDA source too.
        #[arg(long)]
        source: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Serialize)]
struct FamilyRow {
    name: &'static str,
    summary: &'static str,
    entry_points: Vec<String>,
    dtypes: &'static [&'static str],
    source_lines: usize,
}

/// Runs one `kernels` subcommand.
pub fn run(cmd: KernelsCmd) -> Result<()> {
    match cmd {
        KernelsCmd::List { json } => {
            let rows: Vec<FamilyRow> = kernels::FAMILIES
                .iter()
                .map(|f| FamilyRow {
                    name: f.name,
                    summary: f.summary,
                    entry_points: f.entry_points(),
                    dtypes: f.dtypes,
                    source_lines: f.source.lines().count(),
                })
                .collect();
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                for r in &rows {
                    println!("{} ({} lines): {}", r.name, r.source_lines, r.summary);
                    println!("  {}", r.entry_points.join(" "));
                }
            }
            Ok(())
        }
        KernelsCmd::Show {
            name,
            arch,
            threads,
            source,
            json,
        } => show(&name, &arch, threads, source, json),
    }
}

fn show(name: &str, arch: &str, threads: u32, source: bool, json: bool) -> Result<()> {
    let facts = compute::service::kernel_facts(name, arch, threads)?;
    let fam = kernels::FAMILIES
        .iter()
        .find(|f| f.name == name || f.entry_points().iter().any(|e| e == name))
        .ok_or_else(|| ComputeError::bad_arg("kernel", name, "not in the registry"))?;
    let (major, minor) = compute::occupancy::parse_cc(arch)?;
    let panels = facts
        .iter()
        .map(|f| compute::kernel_panel::occupancy_panel(&f.resources, threads, 0, major, minor))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"facts": facts, "panels": panels, "source": if source { Some(fam.source) } else { None }})
            )?
        );
    } else {
        if source {
            println!("{}", fam.source);
        }
        println!(
            "{:<28} {:>4} {:>7} {:>6} {:>6} {:>7} {:>6} {:>5}  limiter",
            "entry", "regs", "smem B", "local", "stack", "occ %", "SASS", "HMMA"
        );
        for f in &facts {
            let lim: Vec<String> = f.occupancy.limiters.iter().map(|l| l.to_string()).collect();
            println!(
                "{:<28} {:>4} {:>7} {:>6} {:>6} {:>7.1} {:>6} {:>5}  {}",
                f.entry,
                f.resources.registers,
                f.resources.static_shared_bytes,
                f.resources.local_bytes,
                f.resources.stack_bytes,
                f.occupancy.occupancy_pct,
                f.sass_instructions.unwrap_or(0),
                f.sass_tensor_core_instructions.unwrap_or(0),
                lim.join("+")
            );
        }
        for p in &panels {
            println!("{}", p.narrative);
        }
    }
    Ok(())
}
