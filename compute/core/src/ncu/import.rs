//! The importer of Nsight Compute CSV exports: the layout found by its header line, read row
//! by row, and (native builds) `ncu --import` of a binary report.

use std::io::BufRead;

use super::error::*;
use super::layout::*;
use super::model::*;
use super::reader::{self, LineSource, Next, Record, RecordReader};

/// The magic bytes at the start of a binary `.ncu-rep` report.
pub(crate) const NCU_REP_MAGIC: &[u8] = b"NVR\0";

/// Imports an ncu CSV export from `reader`. Errors name the line and what is wrong; a binary
/// `.ncu-rep` gives the export command with the placeholder `FILE`.
pub fn import<R: BufRead>(reader: R) -> Result<NcuReport, NcuError> {
    import_named(reader, "FILE")
}

/// Like [`import`], naming the input `file_name` in the `.ncu-rep` export command.
pub fn import_named<R: BufRead>(reader: R, file_name: &str) -> Result<NcuReport, NcuError> {
    Importer::new(reader, file_name).run()
}

/// Imports an export held in memory (the UI's uploaded file). A field that is not UTF-8 is
/// read as Latin-1.
pub fn import_bytes(bytes: &[u8]) -> Result<NcuReport, NcuError> {
    import(bytes)
}

/// Imports an export held in a string.
pub fn import_str(text: &str) -> Result<NcuReport, NcuError> {
    import(text.as_bytes())
}

/// Imports the export at `path`. A `.ncu-rep` is refused with its export command.
#[cfg(feature = "fs")]
pub fn import_file(path: &std::path::Path) -> Result<NcuReport, NcuError> {
    let file = std::fs::File::open(path).map_err(|e| NcuError::Io {
        line: 1,
        message: format!("{}: {e}", path.display()),
    })?;
    import_named(
        std::io::BufReader::with_capacity(1 << 16, file),
        &path.display().to_string(),
    )
}

/// Whether `hay` contains `needle`.
pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// The streaming import.
pub(crate) struct Importer<R> {
    records: RecordReader<R>,
    file_name: String,
    warnings: Vec<String>,
}

impl<R: BufRead> Importer<R> {
    fn new(reader: R, file_name: &str) -> Self {
        Importer {
            records: RecordReader::new(LineSource::new(reader)),
            file_name: file_name.to_string(),
            warnings: Vec::new(),
        }
    }

    /// Refuses binary input by its first bytes; skips a UTF-8 byte-order mark.
    fn sniff(&mut self) -> Result<(), NcuError> {
        let source = &mut self.records.source;
        let head = source.peek()?;
        if head.is_empty() {
            return Err(NcuError::Empty { line: 1 });
        }
        if head.starts_with(NCU_REP_MAGIC) {
            return Err(NcuError::NcuRep {
                line: 1,
                note: String::new(),
                command: export_command(&self.file_name),
            });
        }
        let binary = |reason: &str| NcuError::Binary {
            line: 1,
            reason: reason.to_string(),
        };
        if head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]) {
            return Err(binary(
                "UTF-16 text (a PowerShell redirect?); save the export as UTF-8",
            ));
        }
        if head.starts_with(&[0x1F, 0x8B]) {
            return Err(binary("gzip-compressed; decompress it first"));
        }
        if head.starts_with(b"PK\x03\x04") {
            return Err(binary("a zip archive; extract the CSV first"));
        }
        let sample = &head[..head.len().min(8192)];
        if sample.contains(&0) {
            return Err(binary("NUL bytes in the first 8 KiB"));
        }
        if head.starts_with(&[0xEF, 0xBB, 0xBF]) {
            source.skip(3);
        }
        Ok(())
    }

    /// Finds the header line; returns its layout, its line number and its field count.
    fn find_header(&mut self, rec: &mut Record) -> Result<(Layout, usize, usize), NcuError> {
        let mut line_buf = Vec::new();
        let mut junk = 0usize;
        let mut first_junk: Option<(usize, String)> = None;
        let mut log_lines = 0usize;
        let mut first_error: Option<String> = None;
        // Lines of ncu's text report (`    Section: GPU Speed Of Light Throughput`, the
        // `Metric Name   Metric Unit   Metric Value` table head): an export without --csv.
        let mut text_report = 0usize;
        while let Some(line) = self.records.source.next_line(&mut line_buf)? {
            let text = &line_buf[..];
            if text.contains(&0) {
                return Err(NcuError::Binary {
                    line: line.number,
                    reason: "NUL bytes in a text line".into(),
                });
            }
            if reader::is_log_line(text) {
                log_lines += 1;
                if first_error.is_none() && reader::trim_start(text).starts_with(b"==ERROR==") {
                    first_error = Some(clip(&String::from_utf8_lossy(text)));
                }
                continue;
            }
            if reader::trim_start(text).is_empty() {
                continue;
            }
            if !line.cut
                && contains(text, b"Kernel Name")
                && reader::parse_single_line(text, rec).is_some()
            {
                if let Some(layout) = classify_header(rec, line.number)? {
                    if junk + log_lines > 0 {
                        self.warnings.push(format!(
                            "skipped {} line(s) before the header on line {} ({log_lines} ncu log line(s), {junk} other)",
                            junk + log_lines,
                            line.number
                        ));
                    }
                    return Ok((layout, line.number, rec.len()));
                }
            }
            if is_text_report_line(text) {
                text_report += 1;
            }
            junk += 1;
            if first_junk.is_none() {
                first_junk = Some((line.number, clip(&String::from_utf8_lossy(text))));
            }
        }
        if junk == 0 && log_lines == 0 {
            return Err(NcuError::Empty { line: 1 });
        }
        let reason = match (first_junk, first_error) {
            (_, Some(err)) => format!("ncu reported an error and printed no CSV: {err}"),
            (Some(_), None) if text_report >= 2 => format!(
                "this is Nsight Compute's text report, not its CSV: export it with --csv, e.g. \
                 `ncu --csv --page details <your usual options> ./app > report.csv`, or from a \
                 saved report `{}`",
                export_command("report.ncu-rep")
            ),
            (None, None) => format!(
                "only ncu log lines ({log_lines}), no CSV: did ncu profile any kernel, and was --csv given?"
            ),
            (Some((n, text)), None) => format!(
                "no Nsight Compute header (\"ID\",\"Process ID\",...,\"Kernel Name\",...) in {} line(s); line {n} reads '{text}'",
                self.records.source.lines_read()
            ),
        };
        Err(NcuError::NotNcu { line: 1, reason })
    }

    fn run(mut self) -> Result<NcuReport, NcuError> {
        self.sniff()?;
        let mut rec = Record::default();
        let (mut layout, header_line, header_len) = self.find_header(&mut rec)?;
        let header_names: Vec<String> = rec.fields().map(|f| f.trim().to_string()).collect();
        if let Layout::Details(cols) = &layout {
            if cols.block.is_none() || cols.grid.is_none() || cols.cc.is_none() {
                self.warnings.push(format!(
                    "the header on line {header_line} has no Block Size, Grid Size or CC column (an export of ncu before 2021?): launch shapes are [0, 0, 0] and CC is empty where missing"
                ));
            }
        }
        let format = match layout {
            Layout::Details(_) => Format::Details,
            Layout::Summary(_) => Format::Summary,
            Layout::Raw(_) => Format::Raw,
        };
        let mut b = Builder::new();
        let mut rows = 0usize;
        let mut last_line = header_line;
        let mut log_after = 0usize;
        let mut lossy_rows = 0usize;
        let mut first_lossy = 0usize;
        loop {
            let line = match self.records.next(&mut rec)? {
                Next::End => break,
                Next::Skipped { log } => {
                    if log {
                        log_after += 1;
                    }
                    continue;
                }
                Next::Record(line) => line,
            };
            last_line = line;
            if let Some((i, len)) = rec.oversized_field() {
                return Err(NcuError::FieldTooLong {
                    line,
                    column: header_names
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| format!("#{}", i + 1)),
                    len,
                    limit: MAX_FIELD_BYTES,
                });
            }
            if rec.lossy {
                lossy_rows += 1;
                if first_lossy == 0 {
                    first_lossy = line;
                }
            }
            match &mut layout {
                Layout::Details(cols) => details_row(&mut b, cols, &rec, line, header_len)?,
                Layout::Summary(cols) => summary_row(&mut b, cols, &rec, line, header_len)?,
                Layout::Raw(cols) => {
                    if !raw_row(&mut b, cols, &rec, line, header_len, &mut self.warnings)? {
                        continue;
                    }
                }
            }
            rows += 1;
        }
        if rows == 0 || b.kernels.is_empty() {
            return Err(NcuError::HeaderOnly { line: last_line });
        }
        if log_after > 0 {
            self.warnings.push(format!(
                "skipped {log_after} ncu log line(s) (==PROF==, ==WARNING==, ==ERROR==) after the header"
            ));
        }
        if let Some(w) = b.unreadable_warning() {
            self.warnings.push(w);
        }
        if lossy_rows > 0 {
            self.warnings.push(format!(
                "{lossy_rows} row(s) had invalid UTF-8, read as Latin-1 (ISO 8859-1; bytes that are no text there replaced with U+FFFD) (first on line {first_lossy})"
            ));
        }
        Ok(NcuReport {
            format,
            kernels: b.kernels,
            warnings: self.warnings,
        })
    }
}

/// The text of an export's bytes as the importer reads them: UTF-8 where it is UTF-8, and
/// any line that is not read as Latin-1 (ISO 8859-1; its C1 control bytes, never text there,
/// as U+FFFD), so a page that holds a file's bytes (a browser's upload) sends the service a
/// `café` kernel name, not `caf\u{fffd}`.
pub fn export_text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(bytes.len() + 16);
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        match std::str::from_utf8(line) {
            Ok(l) => out.push_str(l),
            Err(_) => out.extend(line.iter().map(|&b| {
                if (0x80..0xA0).contains(&b) {
                    '\u{fffd}'
                } else {
                    char::from(b)
                }
            })),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether a line looks like ncu's text report (printed without `--csv`): a `Section:` line
/// or the head of a metric table, unquoted.
fn is_text_report_line(text: &[u8]) -> bool {
    let t = reader::trim_start(text);
    if t.contains(&b'"') {
        return false;
    }
    t.starts_with(b"Section: ")
        || (contains(t, b"Metric Name")
            && contains(t, b"Metric Unit")
            && contains(t, b"Metric Value"))
}
