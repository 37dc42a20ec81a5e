//! `showdown occupancy`: the exact occupancy calculator of [`compute::occupancy`] for one launch
//! configuration (a readable summary, or the `OccupancyOutput` as JSON) or for every row of a
//! CSV file, streamed (100,000 rows take a few tens of milliseconds).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use compute::occupancy::{
    occupancy, parse_cc, GpuLimits, Limiter, OccupancyInput, OccupancyOutput,
};
use compute::ComputeError;
use serde::Serialize;

/// The flags of `showdown occupancy`.
#[derive(Args)]
pub struct OccupancyArgs {
    /// Compute capability: 9.0, 90, sm_90, 8.6, 12.0 ...
    #[arg(long)]
    cc: String,
    /// Threads per block (1 to 1024).
    #[arg(long, required_unless_present = "batch", conflicts_with = "batch")]
    threads: Option<u32>,
    /// Registers per thread as ptxas -v or cuFuncGetAttribute report them (0 to 255).
    #[arg(long, required_unless_present = "batch", conflicts_with = "batch")]
    regs: Option<u32>,
    /// Shared memory per block in bytes, static + dynamic (the driver's reserve is added).
    #[arg(long, default_value_t = 0, conflicts_with = "batch")]
    smem: u32,
    /// Preferred shared-memory carveout in percent of the SM's maximum (default: none).
    #[arg(long, value_name = "PCT", conflicts_with = "batch")]
    carveout: Option<u32>,
    /// Answer every row of a CSV file ('-': stdin) with header threads,regs,smem and an
    /// optional 4th column carveout (empty or -1: no preference); prints the rows with
    /// blocks_per_sm,warps_per_sm,occupancy_pct,limiter appended.
    #[arg(long, value_name = "FILE")]
    batch: Option<PathBuf>,
    /// Print JSON (with --batch: an array of {line, input, output}).
    #[arg(long)]
    json: bool,
}

/// Runs `showdown occupancy`.
pub fn run(a: &OccupancyArgs) -> Result<()> {
    let (major, minor) = parse_cc(&a.cc).map_err(ComputeError::from)?;
    let limits = GpuLimits::for_cc(major, minor).map_err(ComputeError::from)?;
    if let Some(path) = &a.batch {
        return ignore_broken_pipe(batch(&limits, path, a.json));
    }
    let input = OccupancyInput {
        // clap requires both without --batch.
        threads_per_block: a.threads.unwrap_or(0),
        registers_per_thread: a.regs.unwrap_or(0),
        shared_mem_per_block: a.smem,
        carveout_pct: a.carveout,
    };
    let out = occupancy(&limits, &input).map_err(ComputeError::from)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", summary(&limits, &input, &out));
    }
    Ok(())
}

/// A reader closing stdout early (`| head`) is not an error.
fn ignore_broken_pipe(r: Result<()>) -> Result<()> {
    match r {
        Err(e)
            if e.downcast_ref::<io::Error>().map(io::Error::kind)
                == Some(io::ErrorKind::BrokenPipe) =>
        {
            Ok(())
        }
        other => other,
    }
}

/// A limiter's name in the CSV's `limiter` column (as in the JSON: `shared_memory`).
fn limiter_csv_name(l: Limiter) -> &'static str {
    match l {
        Limiter::Warps => "warps",
        Limiter::Registers => "registers",
        Limiter::SharedMemory => "shared_memory",
        Limiter::Blocks => "blocks",
    }
}

/// The limiters joined by `+`, e.g. `warps+registers`.
pub fn limiter_list(limiters: &[Limiter]) -> String {
    let names: Vec<&str> = limiters.iter().map(|&l| limiter_csv_name(l)).collect();
    names.join("+")
}

/// The readable summary of one occupancy answer.
pub fn summary(limits: &GpuLimits, input: &OccupancyInput, o: &OccupancyOutput) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {} threads/block, {} registers/thread, {} B shared memory/block",
        limits.sm_name(),
        input.threads_per_block,
        input.registers_per_thread,
        input.shared_mem_per_block
    );
    let _ = writeln!(s, "{:<22}{}", "active blocks/SM", o.active_blocks_per_sm);
    let _ = writeln!(
        s,
        "{:<22}{} of {}",
        "active warps/SM", o.active_warps_per_sm, o.max_warps_per_sm
    );
    let _ = writeln!(s, "{:<22}{:.1} %", "occupancy", o.occupancy_pct);
    let limiters: Vec<&str> = o.limiters.iter().map(|l| l.as_str()).collect();
    let _ = writeln!(s, "{:<22}{}", "limited by", limiters.join(" + "));
    let _ = writeln!(s, "blocks/SM allowed by");
    let per_limit = [
        (
            Limiter::Warps,
            Some(o.blocks_by_warps),
            format!(
                "{} warps/SM / {} warps/block",
                o.max_warps_per_sm, o.warps_per_block
            ),
        ),
        (
            Limiter::Registers,
            o.blocks_by_registers,
            if o.blocks_by_registers.is_some() {
                format!("{} registers/block", o.registers_per_block)
            } else {
                "no registers used".into()
            },
        ),
        (
            Limiter::SharedMemory,
            o.blocks_by_shared_memory,
            if o.blocks_by_shared_memory.is_some() {
                format!(
                    "{} B/block in {} KB",
                    o.shared_memory_per_block,
                    smem_capacity_kb(limits, input, o)
                )
            } else {
                "no shared memory allocated".into()
            },
        ),
        (
            Limiter::Blocks,
            Some(o.blocks_by_max_blocks),
            "hardware maximum".into(),
        ),
    ];
    for (limiter, blocks, detail) in per_limit {
        let count = blocks.map_or_else(|| "-".to_string(), |b| b.to_string());
        let mark = if o.limiters.contains(&limiter) {
            "  <- limiter"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "  {:<20}{:>4}  ({detail}){mark}",
            limiter.as_str(),
            count
        );
    }
    let per_warp = o.registers_per_block / o.warps_per_block.max(1);
    let _ = writeln!(
        s,
        "{:<22}{} ({} per warp x {} warps)",
        "registers/block", o.registers_per_block, per_warp, o.warps_per_block
    );
    let reserve = limits.reserved_shared_memory_per_block;
    let how = if reserve > 0 {
        format!(
            "{} B + {} B driver reserve, rounded up to {} B",
            input.shared_mem_per_block, reserve, limits.shared_memory_allocation_unit
        )
    } else {
        format!(
            "{} B rounded up to {} B",
            input.shared_mem_per_block, limits.shared_memory_allocation_unit
        )
    };
    let _ = writeln!(
        s,
        "{:<22}{} B ({how})",
        "shared memory/block", o.shared_memory_per_block
    );
    let why = if !limits.has_carveout() {
        format!("fixed on {}", limits.sm_name())
    } else if let Some(pct) = input.carveout_pct {
        format!("preference {pct} %")
    } else if o.active_blocks_per_sm > 0 {
        format!(
            "no preference: the smallest option holding {} block(s)",
            o.active_blocks_per_sm
        )
    } else {
        "no preference".into()
    };
    let _ = writeln!(
        s,
        "{:<22}{} KB ({why})",
        "carveout",
        o.carveout_bytes / 1024
    );
    for note in &o.notes {
        let _ = writeln!(s, "note: {note}");
    }
    s
}

/// The shared-memory capacity the block limit was computed with, in KB: the maximum without a
/// preference, else the carveout used.
fn smem_capacity_kb(limits: &GpuLimits, input: &OccupancyInput, o: &OccupancyOutput) -> u32 {
    if limits.has_carveout() && input.carveout_pct.is_none() {
        limits.max_shared_memory_per_sm / 1024
    } else {
        o.carveout_bytes / 1024
    }
}

/// The header the batch file must start with.
const BATCH_HEADER: &str = "threads,regs,smem[,carveout]";

/// The columns `--batch` appends.
const BATCH_APPENDED: &str = "blocks_per_sm,warps_per_sm,occupancy_pct,limiter";

/// Answers every row of the CSV at `path` ('-': stdin) on stdout.
fn batch(limits: &GpuLimits, path: &Path, json: bool) -> Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    if path == Path::new("-") {
        let stdin = io::stdin();
        write_batch(limits, stdin.lock(), "<stdin>", json, &mut out)?;
    } else {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound {
                ComputeError::bad_file(&name, "no such file")
            } else {
                ComputeError::Io {
                    path: name.clone(),
                    source,
                }
            }
        })?;
        let reader = BufReader::with_capacity(1 << 16, file);
        write_batch(limits, reader, &name, json, &mut out)?;
    }
    out.flush()?;
    Ok(())
}

/// One answered row of `--batch --json`.
#[derive(Serialize)]
struct BatchRow<'a> {
    /// 1-based line of the file.
    line: usize,
    input: &'a OccupancyInput,
    output: &'a OccupancyOutput,
}

/// Reads the batch CSV from `reader` (named `name` in errors) and writes the answers to `out`.
fn write_batch<R: BufRead, W: Write>(
    limits: &GpuLimits,
    mut reader: R,
    name: &str,
    json: bool,
    out: &mut W,
) -> Result<()> {
    let bad = |line: usize, reason: String| {
        ComputeError::bad_file(name, format!("line {line}: {reason}"))
    };
    let mut buf = String::new();
    let mut line = 0usize;
    // Reads the next line into `buf`; false at the end.
    let mut next_line = |buf: &mut String, line: &mut usize| -> Result<bool, ComputeError> {
        buf.clear();
        *line += 1;
        match reader.read_line(buf) {
            Ok(n) => Ok(n > 0),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                Err(bad(*line, "not UTF-8 text".into()))
            }
            Err(source) => Err(ComputeError::Io {
                path: name.to_string(),
                source,
            }),
        }
    };

    // The header (blank lines before it are skipped).
    let columns = loop {
        if !next_line(&mut buf, &mut line)? {
            return Err(ComputeError::bad_file(
                name,
                format!("no header: expected {BATCH_HEADER}"),
            )
            .into());
        }
        let text = buf.trim().trim_start_matches('\u{feff}');
        if text.is_empty() {
            continue;
        }
        let fields: Vec<String> = text
            .split(',')
            .map(|f| f.trim().to_ascii_lowercase())
            .collect();
        let columns = match fields.as_slice() {
            [t, r, s] if t == "threads" && r == "regs" && s == "smem" => 3,
            [t, r, s, c] if t == "threads" && r == "regs" && s == "smem" && c == "carveout" => 4,
            _ => {
                return Err(bad(
                    line,
                    format!("expected the header {BATCH_HEADER}, found '{text}'"),
                )
                .into())
            }
        };
        if json {
            out.write_all(b"[")?;
        } else {
            writeln!(out, "{text},{BATCH_APPENDED}")?;
        }
        break columns;
    };

    let mut rows = 0usize;
    while next_line(&mut buf, &mut line)? {
        let text = buf.trim();
        if text.is_empty() {
            continue;
        }
        let input = parse_row(text, columns).map_err(|reason| bad(line, reason))?;
        let o = occupancy(limits, &input).map_err(|e| bad(line, e.to_string()))?;
        if json {
            out.write_all(if rows == 0 { b"\n" } else { b",\n" })?;
            serde_json::to_writer(
                &mut *out,
                &BatchRow {
                    line,
                    input: &input,
                    output: &o,
                },
            )?;
        } else {
            writeln!(
                out,
                "{text},{},{},{},{}",
                o.active_blocks_per_sm,
                o.active_warps_per_sm,
                pct_text(o.occupancy_pct),
                limiter_list(&o.limiters)
            )?;
        }
        rows += 1;
    }
    if json {
        out.write_all(if rows == 0 { b"]\n" } else { b"\n]\n" })?;
    }
    Ok(())
}

/// A percentage with at most 4 decimals and no trailing zeros (`50`, `78.125`, `66.6667`):
/// exact for every occupancy of a 32- or 64-warp SM, and no halfway case is ever rounded.
fn pct_text(pct: f64) -> String {
    let fixed = format!("{pct:.4}");
    fixed
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// Parses one data row of `columns` (3 or 4) fields.
fn parse_row(text: &str, columns: usize) -> Result<OccupancyInput, String> {
    let mut fields = [""; 4];
    let mut count = 0;
    for field in text.split(',') {
        if count < fields.len() {
            fields[count] = field.trim();
        }
        count += 1;
    }
    if count != columns {
        let header = if columns == 3 {
            "threads,regs,smem"
        } else {
            "threads,regs,smem,carveout"
        };
        return Err(format!(
            "expected {columns} fields ({header}), found {count} in '{text}'"
        ));
    }
    let number = |what: &str, s: &str| {
        s.parse::<u32>()
            .map_err(|_| format!("{what} '{s}' is not a whole number in '{text}'"))
    };
    let carveout_pct = match fields[3] {
        _ if columns == 3 => None,
        "" | "-1" => None,
        s => Some(number("carveout", s)?),
    };
    Ok(OccupancyInput {
        threads_per_block: number("threads", fields[0])?,
        registers_per_thread: number("regs", fields[1])?,
        shared_mem_per_block: number("smem", fields[2])?,
        carveout_pct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_batch(csv: &str, json: bool) -> Result<String> {
        let limits = GpuLimits::for_cc(9, 0).unwrap();
        let mut out = Vec::new();
        write_batch(&limits, csv.as_bytes(), "rows.csv", json, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn rows_and_blank_lines() {
        let got = run_batch(
            "\nthreads, regs, smem,carveout\r\n256,64,4096,\r\n\n1024,32,0,-1\n128,32,10240,25\n",
            false,
        )
        .unwrap();
        assert_eq!(
            got,
            "threads, regs, smem,carveout,blocks_per_sm,warps_per_sm,occupancy_pct,limiter\n\
             256,64,4096,,4,32,50,registers\n\
             1024,32,0,-1,2,64,100,warps+registers\n\
             128,32,10240,25,5,20,31.25,shared_memory\n"
        );
    }

    #[test]
    fn json_batch_is_one_array() {
        let v: serde_json::Value = serde_json::from_str(
            &run_batch("threads,regs,smem\n256,64,4096\n32,0,0\n", true).unwrap(),
        )
        .unwrap();
        assert_eq!(v[0]["line"], 2);
        assert_eq!(v[0]["input"]["threads_per_block"], 256);
        assert_eq!(v[0]["output"]["active_blocks_per_sm"], 4);
        assert_eq!(v[1]["output"]["limiters"][0], "blocks");
        let empty: serde_json::Value =
            serde_json::from_str(&run_batch("threads,regs,smem\n", true).unwrap()).unwrap();
        assert_eq!(empty, serde_json::json!([]));
    }

    #[test]
    fn bad_rows_name_the_line() {
        for (csv, needle) in [
            ("", "no header"),
            ("threads,regs\n", "line 1: expected the header"),
            ("threads,regs,smem\n256,64\n", "line 2: expected 3 fields"),
            (
                "threads,regs,smem\n256,64,4096,50\n",
                "line 2: expected 3 fields",
            ),
            ("threads,regs,smem\n\n256,x,4096\n", "line 3: regs 'x'"),
            ("threads,regs,smem\n2048,64,0\n", "line 2: 2048 threads"),
            (
                "threads,regs,smem,carveout\n256,64,0,101\n",
                "line 2: shared-memory carveout",
            ),
            ("threads,regs,smem\n256,64,-5\n", "line 2: smem '-5'"),
        ] {
            let err = run_batch(csv, false).unwrap_err();
            let c = err.downcast_ref::<ComputeError>().expect("a ComputeError");
            assert_eq!(c.kind(), compute::ErrorKind::BadInput, "{csv:?}");
            let msg = err.to_string();
            assert!(msg.starts_with("rows.csv: "), "{msg}");
            assert!(
                msg.contains(needle),
                "{csv:?}: expected {needle:?} in {msg}"
            );
        }
    }

    #[test]
    fn percentages_are_short_and_exact() {
        for (pct, text) in [
            (0.0, "0"),
            (50.0, "50"),
            (100.0, "100"),
            (12.5, "12.5"),
            (78.125, "78.125"),
            (1.5625, "1.5625"),
            (200.0 / 3.0, "66.6667"),
            (100.0 / 48.0, "2.0833"),
        ] {
            assert_eq!(pct_text(pct), text);
        }
    }

    #[test]
    fn summary_mentions_everything() {
        let limits = GpuLimits::for_cc(9, 0).unwrap();
        let input = OccupancyInput {
            threads_per_block: 256,
            registers_per_thread: 64,
            shared_mem_per_block: 4096,
            carveout_pct: None,
        };
        let o = occupancy(&limits, &input).unwrap();
        let s = summary(&limits, &input, &o);
        for needle in [
            "sm_90",
            "active blocks/SM      4",
            "32 of 64",
            "50.0 %",
            "limited by            registers",
            "registers              4  (16384 registers/block)  <- limiter",
            "shared memory         45",
            "5120 B",
            "32 KB",
        ] {
            assert!(s.contains(needle), "{needle:?} not in\n{s}");
        }
    }
}
