//! The occupancy calculator against the driver: `tests/data/occupancy/truth_sm90.csv.gz` holds
//! 71,400 answers of `cuOccupancyMaxActiveBlocksPerMultiprocessor` on an H100 (made by
//! `make_truth_table.py` next to it) and [`showdown_core::occupancy::occupancy`] must reproduce
//! every one of them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails by panicking
use std::io::{BufRead, BufReader};
use std::path::Path;

use flate2::read::GzDecoder;
use showdown_core::occupancy::{occupancy, parse_cc, GpuLimits, OccupancyInput};

const HEADER: &str = "cc,threads,regs,smem_static,smem_dynamic,carveout,blocks_per_sm";

/// One row of the truth table.
#[derive(Debug)]
struct Row {
    line: usize,
    cc: String,
    threads: u32,
    regs: u32,
    smem_static: u32,
    smem_dynamic: u32,
    carveout: i32,
    blocks_per_sm: u32,
}

fn read_table(path: &Path) -> Vec<Row> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = BufReader::new(GzDecoder::new(file)).lines();
    let header = lines.next().expect("empty truth table").unwrap();
    assert_eq!(header.trim(), HEADER);
    lines
        .enumerate()
        .map(|(i, line)| {
            let line_no = i + 2;
            let line = line.unwrap();
            let fields: Vec<&str> = line.trim().split(',').collect();
            assert_eq!(fields.len(), 7, "line {line_no}: {line:?}");
            let num = |k: usize| -> u32 {
                fields[k]
                    .parse()
                    .unwrap_or_else(|e| panic!("line {line_no} field {k}: {line:?}: {e}"))
            };
            Row {
                line: line_no,
                cc: fields[0].to_string(),
                threads: num(1),
                regs: num(2),
                smem_static: num(3),
                smem_dynamic: num(4),
                carveout: fields[5]
                    .parse()
                    .unwrap_or_else(|e| panic!("line {line_no} carveout: {line:?}: {e}")),
                blocks_per_sm: num(6),
            }
        })
        .collect()
}

#[test]
fn occupancy_matches_the_driver_on_sm90() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/occupancy/truth_sm90.csv.gz");
    let rows = read_table(&path);
    assert_eq!(rows.len(), 71_400, "row count of {}", path.display());

    let mut limits: Option<(String, GpuLimits)> = None;
    let mut mismatches = Vec::new();
    for row in &rows {
        if limits.as_ref().map(|(cc, _)| cc != &row.cc).unwrap_or(true) {
            let (major, minor) = parse_cc(&row.cc).unwrap();
            limits = Some((row.cc.clone(), GpuLimits::for_cc(major, minor).unwrap()));
        }
        let (_, gpu) = limits.as_ref().unwrap();
        let input = OccupancyInput {
            threads_per_block: row.threads,
            registers_per_thread: row.regs,
            shared_mem_per_block: row.smem_static + row.smem_dynamic,
            carveout_pct: (row.carveout >= 0).then_some(row.carveout as u32),
        };
        let out = occupancy(gpu, &input)
            .unwrap_or_else(|e| panic!("line {}: {row:?}: calculator refused: {e}", row.line));
        if out.active_blocks_per_sm != row.blocks_per_sm {
            mismatches.push(format!(
                "line {}: cc {} threads {} regs {} smem_static {} smem_dynamic {} carveout {}: \
                 driver {} blocks, calculator {} (warps {} regs {:?} smem {:?} [{} B/block at \
                 {} B] max {})",
                row.line,
                row.cc,
                row.threads,
                row.regs,
                row.smem_static,
                row.smem_dynamic,
                row.carveout,
                row.blocks_per_sm,
                out.active_blocks_per_sm,
                out.blocks_by_warps,
                out.blocks_by_registers,
                out.blocks_by_shared_memory,
                out.shared_memory_per_block,
                out.carveout_bytes,
                out.blocks_by_max_blocks,
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} rows disagree with the driver; the first:\n{}",
        mismatches.len(),
        rows.len(),
        mismatches
            .iter()
            .take(25)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
