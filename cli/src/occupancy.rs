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
    driver_occupancy, occupancy, parse_cc, GpuLimits, Limiter, OccupancyInput, OccupancyOutput,
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
    /// blocks_per_sm,warps_per_sm,occupancy_pct,limiter appended. A launch the hardware cannot
    /// run gets the driver's answer, 0 blocks; a row that cannot be read is named on stderr,
    /// the rest answered, and the exit code is 2.
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

/// The longest line `--batch` reads (64 KiB, without its line end); a longer one ends the
/// read, so that an endless line (`/dev/zero` piped in) cannot fill the memory.
const MAX_BATCH_LINE_BYTES: usize = 64 * 1024;

/// How many rejected lines the closing error lists by number (each is named on stderr).
const LISTED_BAD_LINES: usize = 10;

/// The most characters of a row quoted in a message.
const QUOTED_CHARS: usize = 80;

/// Answers every row of the CSV at `path` ('-': stdin) on stdout; a row that cannot be read is
/// named on stderr and the rest are still answered (then the error says how many were left
/// out). Only a regular file (or stdin) is read.
fn batch(limits: &GpuLimits, path: &Path, json: bool) -> Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let stderr = io::stderr();
    let mut errors = stderr.lock();
    let result = if path == Path::new("-") {
        let stdin = io::stdin();
        write_batch(limits, stdin.lock(), "<stdin>", json, &mut out, &mut errors)
    } else {
        let name = path.display().to_string();
        let file = open_regular_file(path, &name)?;
        let reader = BufReader::with_capacity(1 << 16, file);
        write_batch(limits, reader, &name, json, &mut out, &mut errors)
    };
    // The answers come out even when some rows were refused.
    out.flush()?;
    result
}

/// Opens `path` for reading if it is a regular file: a directory, a device (`/dev/zero`), a
/// FIFO or a socket is refused as bad input before it is opened (opening a FIFO would wait
/// for a writer; reading a device may never end).
fn open_regular_file(path: &Path, name: &str) -> Result<File, ComputeError> {
    let io_error = |source: io::Error| {
        if source.kind() == io::ErrorKind::NotFound {
            ComputeError::bad_file(name, "no such file")
        } else {
            ComputeError::Io {
                path: name.to_string(),
                source,
            }
        }
    };
    let check = |meta: &std::fs::Metadata| {
        let kind = meta.file_type();
        if kind.is_file() {
            Ok(())
        } else {
            Err(ComputeError::bad_file(
                name,
                format!(
                    "{}, not a regular file: --batch reads a CSV file (or '-' for stdin, to \
                     pipe a stream in)",
                    file_kind(&kind)
                ),
            ))
        }
    };
    check(&std::fs::metadata(path).map_err(io_error)?)?;
    let file = File::open(path).map_err(io_error)?;
    // The path may have been replaced between the two looks.
    check(&file.metadata().map_err(io_error)?)?;
    Ok(file)
}

/// What a path that is not a regular file is, for the message.
fn file_kind(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// What [`read_bounded_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum LineRead {
    /// A line, in the buffer (without `\n`).
    Line,
    /// The end of the input.
    End,
    /// A line longer than the limit; reading stopped inside it.
    TooLong,
}

/// Reads one line into `buf` (cleared first; without its `\n`), stopping as soon as it is
/// longer than `max` bytes: memory stays bounded whatever the input.
fn read_bounded_line<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<LineRead> {
    buf.clear();
    let mut any = false;
    loop {
        let avail = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(if any { LineRead::Line } else { LineRead::End });
        }
        any = true;
        let (chunk, used, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (&avail[..i], i + 1, true),
            None => (avail, avail.len(), false),
        };
        if buf.len() + chunk.len() > max {
            return Ok(LineRead::TooLong);
        }
        buf.extend_from_slice(chunk);
        reader.consume(used);
        if done {
            return Ok(LineRead::Line);
        }
    }
}

/// At most [`QUOTED_CHARS`] characters of `text`, for a message.
fn clip(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
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
///
/// Every row that parses gets the driver's answer ([`driver_occupancy`]: 0 blocks for a launch
/// beyond the per-block limits). A row that does not parse (or that the driver refuses: 0
/// threads, a carveout above 100 %) is named by its line on `errors` and left out; after the
/// last row, the error says how many were. A missing or wrong header, a line longer than
/// [`MAX_BATCH_LINE_BYTES`] and read errors end the read (the answers so far are written).
fn write_batch<R: BufRead, W: Write, E: Write>(
    limits: &GpuLimits,
    mut reader: R,
    name: &str,
    json: bool,
    out: &mut W,
    errors: &mut E,
) -> Result<()> {
    let bad = |line: usize, reason: String| {
        ComputeError::bad_file(name, format!("line {line}: {reason}"))
    };
    let mut buf = Vec::new();
    let mut line = 0usize;
    // Reads the next line into `buf`; false at the end.
    let mut next_line = |buf: &mut Vec<u8>, line: &mut usize| -> Result<bool, ComputeError> {
        *line += 1;
        match read_bounded_line(&mut reader, buf, MAX_BATCH_LINE_BYTES) {
            Ok(LineRead::Line) => Ok(true),
            Ok(LineRead::End) => Ok(false),
            Ok(LineRead::TooLong) => Err(bad(
                *line,
                format!(
                    "longer than {MAX_BATCH_LINE_BYTES} bytes: not a row of {BATCH_HEADER} \
                     (nothing after it was read)"
                ),
            )),
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
        let text = std::str::from_utf8(&buf)
            .map_err(|_| bad(line, "not UTF-8 text".into()))?
            .trim()
            .trim_start_matches('\u{feff}');
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
                    format!("expected the header {BATCH_HEADER}, found '{}'", clip(text)),
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
    let mut rejected = 0usize;
    let mut listed: Vec<usize> = Vec::new();
    let mut fatal = None;
    loop {
        match next_line(&mut buf, &mut line) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                fatal = Some(e);
                break;
            }
        }
        let answer = match std::str::from_utf8(&buf) {
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => answer_row(limits, text.trim(), columns).map(|a| (text.trim(), a)),
            Err(_) => Err("not UTF-8 text".to_string()),
        };
        let (text, (input, o)) = match answer {
            Ok(a) => a,
            Err(reason) => {
                writeln!(errors, "error: {}", bad(line, reason))?;
                rejected += 1;
                if listed.len() < LISTED_BAD_LINES {
                    listed.push(line);
                }
                continue;
            }
        };
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
    if let Some(e) = fatal {
        return Err(e.into());
    }
    if rejected > 0 {
        let mut lines: Vec<String> = listed.iter().map(usize::to_string).collect();
        if rejected > listed.len() {
            lines.push("...".into());
        }
        return Err(ComputeError::bad_file(
            name,
            format!(
                "{rejected} row(s) could not be read and were left out (line {}); the other \
                 {rows} row(s) were answered",
                lines.join(", ")
            ),
        )
        .into());
    }
    Ok(())
}

/// The driver's answer for one data row, or why the row cannot be answered.
fn answer_row(
    limits: &GpuLimits,
    text: &str,
    columns: usize,
) -> Result<(OccupancyInput, OccupancyOutput), String> {
    let input = parse_row(text, columns)?;
    let output = driver_occupancy(limits, &input).map_err(|e| e.to_string())?;
    Ok((input, output))
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
            "expected {columns} fields ({header}), found {count} in '{}'",
            clip(text)
        ));
    }
    let number = |what: &str, s: &str| {
        s.parse::<u32>().map_err(|_| {
            format!(
                "{what} '{}' is not a whole number in '{}'",
                clip(s),
                clip(text)
            )
        })
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

    /// stdout, stderr and the result of a batch from `reader`.
    fn run_batch_from<R: BufRead>(reader: R, json: bool) -> (String, String, Result<()>) {
        let limits = GpuLimits::for_cc(9, 0).unwrap();
        let (mut out, mut errors) = (Vec::new(), Vec::new());
        let result = write_batch(&limits, reader, "rows.csv", json, &mut out, &mut errors);
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(errors).unwrap(),
            result,
        )
    }

    fn run_batch_all(csv: &str, json: bool) -> (String, String, Result<()>) {
        run_batch_from(csv.as_bytes(), json)
    }

    fn run_batch(csv: &str, json: bool) -> Result<String> {
        let (out, errors, result) = run_batch_all(csv, json);
        assert!(result.is_err() || errors.is_empty(), "{errors}");
        result.map(|()| out)
    }

    /// The bad-input error of `result`, as text.
    fn bad_input(result: Result<()>) -> String {
        let err = result.unwrap_err();
        let c = err.downcast_ref::<ComputeError>().expect("a ComputeError");
        assert_eq!(c.kind(), compute::ErrorKind::BadInput, "{err}");
        err.to_string()
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
    fn a_bad_header_ends_the_read() {
        for (csv, needle) in [
            ("", "no header"),
            ("\n\n", "no header"),
            ("threads,regs\n256,64\n", "line 1: expected the header"),
            ("\nthreads,regs,smem,x\n", "line 2: expected the header"),
        ] {
            let (out, errors, result) = run_batch_all(csv, false);
            let msg = bad_input(result);
            assert!(msg.starts_with("rows.csv: "), "{msg}");
            assert!(
                msg.contains(needle),
                "{csv:?}: expected {needle:?} in {msg}"
            );
            assert_eq!((out.as_str(), errors.as_str()), ("", ""));
        }
        let (_, _, result) = run_batch_from(&b"threads,\xff\n"[..], false);
        assert!(bad_input(result).contains("line 1: not UTF-8 text"));
    }

    #[test]
    fn bad_rows_name_the_line() {
        for (csv, needle) in [
            ("threads,regs,smem\n256,64\n", "line 2: expected 3 fields"),
            (
                "threads,regs,smem\n256,64,4096,50\n",
                "line 2: expected 3 fields",
            ),
            ("threads,regs,smem\n\n256,x,4096\n", "line 3: regs 'x'"),
            (
                "threads,regs,smem,carveout\n256,64,0,101\n",
                "line 2: shared-memory carveout",
            ),
            ("threads,regs,smem\n256,64,-5\n", "line 2: smem '-5'"),
            ("threads,regs,smem\n0,32,0\n", "line 2: 0 threads per block"),
            ("threads,regs,smem\n4294967296,32,0\n", "line 2: threads"),
        ] {
            let (out, errors, result) = run_batch_all(csv, false);
            let msg = bad_input(result);
            assert!(
                errors.starts_with("error: rows.csv: ") && errors.contains(needle),
                "{csv:?}: expected {needle:?} in {errors}"
            );
            assert!(
                msg.contains("1 row(s) could not be read") && msg.contains("the other 0 row(s)"),
                "{msg}"
            );
            // Only the header comes out.
            assert_eq!(out.lines().count(), 1, "{out}");
        }
    }

    #[test]
    fn occupancy_batch_answers_over_limit_rows_with_zero_blocks() {
        // Issue 18: the first row beyond a per-block limit aborted the whole file; the driver
        // answers such a launch with 0 blocks per SM.
        let got = run_batch(
            "threads,regs,smem\n\
             256,64,4096\n\
             128,32,232449\n\
             2048,64,0\n\
             1056,16,0\n\
             128,256,0\n\
             128,32,232448\n",
            false,
        )
        .unwrap();
        assert_eq!(
            got,
            "threads,regs,smem,blocks_per_sm,warps_per_sm,occupancy_pct,limiter\n\
             256,64,4096,4,32,50,registers\n\
             128,32,232449,0,0,0,shared_memory\n\
             2048,64,0,0,0,0,warps+registers\n\
             1056,16,0,0,0,0,warps\n\
             128,256,0,0,0,0,registers\n\
             128,32,232448,1,4,6.25,shared_memory\n"
        );
        let v: serde_json::Value =
            serde_json::from_str(&run_batch("threads,regs,smem\n128,32,300000\n", true).unwrap())
                .unwrap();
        assert_eq!(v[0]["output"]["active_blocks_per_sm"], 0);
        assert_eq!(
            v[0]["output"]["limiters"],
            serde_json::json!(["shared_memory"])
        );
        assert!(v[0]["output"]["notes"][0]
            .as_str()
            .unwrap()
            .contains("cannot launch"));
    }

    #[test]
    fn occupancy_batch_names_unparseable_lines_and_answers_the_rest() {
        let csv = "threads,regs,smem\n\
                   256,64,4096\n\
                   256,sixty-four,0\n\
                   128,32,232449\n\
                   1024\n\
                   \n\
                   32,0,0\n\
                   0,32,0\n";
        let (out, errors, result) = run_batch_all(csv, false);
        assert_eq!(
            out,
            "threads,regs,smem,blocks_per_sm,warps_per_sm,occupancy_pct,limiter\n\
             256,64,4096,4,32,50,registers\n\
             128,32,232449,0,0,0,shared_memory\n\
             32,0,0,32,32,50,blocks\n"
        );
        let named: Vec<&str> = errors.lines().collect();
        assert_eq!(named.len(), 3, "{errors}");
        assert!(named[0].starts_with("error: rows.csv: line 3: regs 'sixty-four'"));
        assert!(named[1].starts_with("error: rows.csv: line 5: expected 3 fields"));
        assert!(named[2].starts_with("error: rows.csv: line 8: 0 threads per block"));
        let msg = bad_input(result);
        assert!(
            msg.contains("3 row(s) could not be read and were left out (line 3, 5, 8)")
                && msg.contains("the other 3 row(s) were answered"),
            "{msg}"
        );
        // In JSON the answered rows carry their line; invalid UTF-8 is one bad row.
        let (out, errors, result) =
            run_batch_from(&b"threads,regs,smem\n\xff,1,2\n32,0,0\n"[..], true);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v.as_array().map(Vec::len), Some(1));
        assert_eq!(v[0]["line"], 3);
        assert!(errors.contains("line 2: not UTF-8 text"), "{errors}");
        assert!(bad_input(result).contains("(line 2)"));
        // Many bad rows: each named on stderr, the first ten listed in the error.
        let many = format!("threads,regs,smem\n{}32,0,0\n", "x\n".repeat(25));
        let (out, errors, result) = run_batch_all(&many, false);
        assert_eq!(out.lines().count(), 2);
        assert_eq!(errors.lines().count(), 25);
        let msg = bad_input(result);
        assert!(
            msg.contains("25 row(s)") && msg.contains("(line 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, ...)"),
            "{msg}"
        );
    }

    #[test]
    fn lines_are_bounded() {
        // Issue 19: an endless line (`/dev/zero` on stdin) was read until memory ran out.
        let endless = BufReader::new(io::repeat(0));
        let (out, errors, result) = run_batch_from(endless, false);
        let msg = bad_input(result);
        assert!(msg.contains("line 1: longer than 65536 bytes"), "{msg}");
        assert_eq!((out.as_str(), errors.as_str()), ("", ""));
        // After good rows: they are answered, then the read ends at the long line.
        let text = format!(
            "threads,regs,smem\n32,0,0\n{}\n32,0,0\n",
            "1".repeat(MAX_BATCH_LINE_BYTES + 1)
        );
        let (out, _, result) = run_batch_all(&text, true);
        assert!(bad_input(result).contains("line 3: longer than"));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v.as_array().map(Vec::len), Some(1));
        // Exactly the limit is still a line.
        let mut buf = Vec::new();
        let line = format!("{}\r\nnext", "2".repeat(MAX_BATCH_LINE_BYTES - 1));
        let mut r = line.as_bytes();
        assert_eq!(
            read_bounded_line(&mut r, &mut buf, MAX_BATCH_LINE_BYTES).unwrap(),
            LineRead::Line
        );
        assert_eq!(buf.len(), MAX_BATCH_LINE_BYTES);
        assert_eq!(
            read_bounded_line(&mut r, &mut buf, MAX_BATCH_LINE_BYTES).unwrap(),
            LineRead::Line
        );
        assert_eq!(buf, b"next");
        assert_eq!(
            read_bounded_line(&mut r, &mut buf, MAX_BATCH_LINE_BYTES).unwrap(),
            LineRead::End
        );
    }

    #[test]
    fn only_regular_files_are_opened() {
        let t = std::env::temp_dir();
        let msg = open_regular_file(&t, "tmp").unwrap_err().to_string();
        assert!(msg.contains("a directory, not a regular file"), "{msg}");
        #[cfg(unix)]
        {
            let e = open_regular_file(Path::new("/dev/zero"), "/dev/zero").unwrap_err();
            assert_eq!(e.kind(), compute::ErrorKind::BadInput);
            assert!(e.to_string().contains("a character device"), "{e}");
        }
        let e = open_regular_file(&t.join("no-such-showdown-batch.csv"), "x").unwrap_err();
        assert!(e.to_string().contains("no such file"), "{e}");
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
