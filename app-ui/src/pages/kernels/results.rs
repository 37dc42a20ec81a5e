//! The committed H200 runs of the kernel lab (docs/results/*-h200-2026-11-28.json), compiled
//! into the app as the lab's reference: read into the core's reports (as the run history reads
//! a [`LabReport`]) and shown only as a labelled column ("H200 reference, 2026-11-28") beside this machine's
//! numbers, with the ratio; never as this machine's. The core's tests parse committed reports of
//! the same formats.

use showdown_core::lab::LabReport;

use super::section::{report_of, Block};

/// How many bytes of `json` are left once the whitespace outside its strings is dropped.
const fn minified_len(json: &[u8]) -> usize {
    let (mut i, mut n, mut in_string, mut escaped) = (0, 0, false, false);
    while i < json.len() {
        let c = json[i];
        if in_string {
            n += 1;
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
        } else if c == b'"' {
            in_string = true;
            n += 1;
        } else if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
            n += 1;
        }
        i += 1;
    }
    n
}

/// `json` without the whitespace outside its strings (`N` is its [`minified_len`]): the
/// committed files are pretty-printed, the app keeps them compact.
const fn minify<const N: usize>(json: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    let (mut i, mut n, mut in_string, mut escaped) = (0, 0, false, false);
    while i < json.len() && n < N {
        let c = json[i];
        let keep = if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
            true
        } else {
            in_string = c == b'"';
            !matches!(c, b' ' | b'\n' | b'\r' | b'\t')
        };
        if keep {
            out[n] = c;
            n += 1;
        }
        i += 1;
    }
    out
}

const KERNELS_FILE: &[u8] =
    include_bytes!("../../../../docs/results/kernels-bench-h200-2026-11-28.json");
const LADDER_FILE: &[u8] =
    include_bytes!("../../../../docs/results/conv-ladder-h200-2026-11-28.json");
const INFER_FILE: &[u8] = include_bytes!("../../../../docs/results/infer-h200-2026-11-28.json");

/// `showdown bench kernels --json-out` of the committed run, compact.
static KERNELS_BENCH_JSON: [u8; minified_len(KERNELS_FILE)] = minify(KERNELS_FILE);
/// `showdown bench conv --json-out` of the committed run, compact.
static CONV_LADDER_JSON: [u8; minified_len(LADDER_FILE)] = minify(LADDER_FILE);
/// `showdown bench infer --json-out` of the committed run, compact.
static INFER_JSON: [u8; minified_len(INFER_FILE)] = minify(INFER_FILE);

/// When the committed runs were measured.
pub const RUN_DATE: &str = "2026-11-28";
/// The reference column's name.
pub const REFERENCE: &str = "H200 reference, 2026-11-28";
/// The command of the committed kernel benchmark.
pub const KERNELS_BENCH_COMMAND: &str =
    "showdown bench kernels --peer-log anchor_kernels.jsonl --json-out …";
/// The command of the committed convolution ladder.
pub const CONV_LADDER_COMMAND: &str = "showdown bench conv --dataset fashion-mnist --data-dir .gpu/fashion --peer-log anchor_kernels.jsonl --json-out conv_bench.json";
/// The command of the committed inference benchmark.
pub const INFER_COMMAND: &str = "Act III's inference job through showdown serve --http (bench/lab_jobs.py: mnist-sample, batches 1, 32, 128, 1024, PyTorch beside)";

/// The committed report of `kind` (`kernels`, `ladder`, `inference`), read as the lab's
/// replies are ([`report_of`]), or why it does not parse.
pub fn reference(kind: &str) -> Result<LabReport, String> {
    let json: &[u8] = match kind {
        "kernels" => &KERNELS_BENCH_JSON,
        "ladder" => &CONV_LADDER_JSON,
        _ => &INFER_JSON,
    };
    let json = std::str::from_utf8(json).map_err(|e| format!("{REFERENCE}: {e}"))?;
    report_of(kind, json)
}

/// What the reference column is (`.reference-note`): the committed run's device and command,
/// labelled as another machine's; the parse error instead when it does not parse.
pub fn reference_note(device: Result<&str, &String>, what: &str, command: &str) -> Block {
    match device {
        Ok(device) => Block::Para(
            "reference-note muted",
            format!("{REFERENCE}: {what} of the lab's committed run on {device}, another machine, shown beside yours for scale (`{command}`)."),
        ),
        Err(e) => Block::Para("reference-note error", format!("{REFERENCE} unavailable: {e}")),
    }
}
