//! The importer of Nsight Compute CSV exports (details, raw and per-kernel summary pages, found
//! by their header line), its errors, and (native builds) `ncu --import` of a binary report.

use std::collections::HashMap;
use std::io::BufRead;

use super::model::*;
use super::names::short_name;
use super::reader::{self, LineSource, Next, Record, RecordReader};
use super::units::{self, Number, SiScale};

/// The magic bytes at the start of a binary `.ncu-rep` report.
pub(crate) const NCU_REP_MAGIC: &[u8] = b"NVR\0";

/// The longest excerpt of input quoted in an error message.
pub(crate) const EXCERPT_CHARS: usize = 80;

/// Why an export could not be imported. Every variant names the 1-based line it concerns.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NcuError {
    /// The input has no content.
    #[error("line {line}: the input is empty: expected an Nsight Compute CSV export (ncu --csv)")]
    Empty {
        /// Always 1.
        line: usize,
    },
    /// The input is a binary `.ncu-rep` report.
    #[error("line {line}: this is a binary Nsight Compute report (.ncu-rep), not a CSV export{note}; export it with: {command}")]
    NcuRep {
        /// Always 1.
        line: usize,
        /// Why it was not exported automatically (` (ncu is not on PATH)`), or empty.
        note: String,
        /// The export command ([`export_command`]).
        command: String,
    },
    /// The input is binary data (or a text encoding other than UTF-8).
    #[error("line {line}: binary data, not a CSV export: {reason}")]
    Binary {
        /// Where the binary data was seen.
        line: usize,
        /// What it looks like.
        reason: String,
    },
    /// No Nsight Compute header was found, or the header lacks a needed column.
    #[error("line {line}: not an Nsight Compute CSV export: {reason}")]
    NotNcu {
        /// The line examined (the header, or 1 when none was found).
        line: usize,
        /// What was expected and what was found.
        reason: String,
    },
    /// The export has a header but no kernel rows.
    #[error(
        "line {line}: the export has a header but no kernel rows (did ncu profile any kernel?)"
    )]
    HeaderOnly {
        /// The header's line (the units row's, on the raw page).
        line: usize,
    },
    /// A row has fewer fields than the header needs, or the input ends inside a field.
    #[error("line {line}: truncated row: {reason}")]
    Truncated {
        /// The row's first line.
        line: usize,
        /// What is missing.
        reason: String,
    },
    /// A row does not fit the header.
    #[error("line {line}: malformed row: {reason}")]
    Malformed {
        /// The row's first line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A field is longer than [`MAX_FIELD_BYTES`].
    #[error("line {line}: field '{column}' is {len} bytes long, over the limit of {limit} bytes")]
    FieldTooLong {
        /// The row's first line.
        line: usize,
        /// The column's header name (or its 1-based number).
        column: String,
        /// The field's length in bytes.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// A line (or multi-line row) is longer than [`MAX_LINE_BYTES`].
    #[error("line {line}: row longer than {limit} bytes")]
    RowTooLong {
        /// The row's first line.
        line: usize,
        /// The limit.
        limit: usize,
    },
    /// A field that must be a number (or a launch shape) is not a usable one.
    #[error("line {line}: column '{column}': {reason}: '{value}'")]
    BadValue {
        /// The row's first line.
        line: usize,
        /// The column's header name.
        column: String,
        /// The field (cut to 80 characters).
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// Reading the input failed.
    #[error("line {line}: read error: {message}")]
    Io {
        /// The line being read.
        line: usize,
        /// The operating system's message.
        message: String,
    },
}

pub use super::reader::{MAX_FIELD_BYTES, MAX_LINE_BYTES};

impl NcuError {
    /// The 1-based line the error concerns.
    pub fn line(&self) -> usize {
        match self {
            NcuError::Empty { line }
            | NcuError::NcuRep { line, .. }
            | NcuError::Binary { line, .. }
            | NcuError::NotNcu { line, .. }
            | NcuError::HeaderOnly { line }
            | NcuError::Truncated { line, .. }
            | NcuError::Malformed { line, .. }
            | NcuError::FieldTooLong { line, .. }
            | NcuError::RowTooLong { line, .. }
            | NcuError::BadValue { line, .. }
            | NcuError::Io { line, .. } => *line,
        }
    }
}

impl From<NcuError> for crate::error::ComputeError {
    fn from(e: NcuError) -> Self {
        crate::error::ComputeError::bad_file("Nsight Compute export", e.to_string())
    }
}

/// The command that exports a binary report `file` as the CSV this importer reads best:
/// `ncu --import FILE --csv --page details --print-units base > FILE.csv`.
/// A path with spaces or shell metacharacters is single-quoted.
pub fn export_command(file: &str) -> String {
    format!(
        "ncu --import {} --csv --page details --print-units base > {}",
        shell_quote(file),
        shell_quote(&format!("{file}.csv"))
    )
}

/// `s` as one shell word: as it is when it holds only letters, digits and `._/-+:@%,=~`, else
/// single-quoted (a `'` inside becomes `'\''`).
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-+:@%,=~".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Imports an ncu CSV export from `reader`. Errors name the line and what is wrong; a binary
/// `.ncu-rep` gives the export command with the placeholder `FILE`.
pub fn import<R: BufRead>(reader: R) -> Result<NcuReport, NcuError> {
    import_named(reader, "FILE")
}

/// Like [`import`], naming the input `file_name` in the `.ncu-rep` export command.
pub fn import_named<R: BufRead>(reader: R, file_name: &str) -> Result<NcuReport, NcuError> {
    Importer::new(reader, file_name).run()
}

/// Imports an export held in memory (the UI's uploaded file). Invalid UTF-8 is replaced.
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

/// Imports a binary `.ncu-rep` report by running
/// `ncu --import PATH --csv --page details --print-units base` and reading its output as it
/// streams. When `ncu_on_path` is false (the caller found no `ncu`), or running it fails,
/// the error carries the command to run by hand.
#[cfg(feature = "fs")]
pub fn import_ncu_rep(path: &std::path::Path, ncu_on_path: bool) -> Result<NcuReport, NcuError> {
    use std::process::{Command, Stdio};
    let shown = path.display().to_string();
    let refuse = |why: String| NcuError::NcuRep {
        line: 1,
        note: format!(" ({why})"),
        command: export_command(&shown),
    };
    if !ncu_on_path {
        return Err(refuse("ncu is not on PATH".into()));
    }
    let mut child = Command::new("ncu")
        .arg("--import")
        .arg(path)
        .args(["--csv", "--page", "details", "--print-units", "base"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| refuse(format!("running ncu failed: {e}")))?;
    let Some(stdout) = child.stdout.take() else {
        return Err(refuse("ncu gave no output".into()));
    };
    // Drain stderr on its own thread so a chatty ncu cannot block on a full pipe.
    let stderr = child.stderr.take();
    let err_thread = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut s) = stderr {
            let _ = std::io::Read::read_to_string(&mut s, &mut text);
        }
        text
    });
    let result = import_named(std::io::BufReader::with_capacity(1 << 16, stdout), &shown);
    let status = child.wait();
    let stderr_text = err_thread.join().unwrap_or_default();
    match (status, result) {
        (Ok(s), result) if s.success() => result,
        // A parse error in the middle of ncu's output: ours is the more precise message
        // (dropping the pipe early also makes ncu fail).
        (
            _,
            Err(
                e @ (NcuError::Truncated { .. }
                | NcuError::Malformed { .. }
                | NcuError::BadValue { .. }
                | NcuError::FieldTooLong { .. }
                | NcuError::RowTooLong { .. }),
            ),
        ) => Err(e),
        (Ok(s), _) => {
            let first = stderr_text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            Err(refuse(format!("ncu exited with {s}: {}", clip(first))))
        }
        (Err(e), _) => Err(refuse(format!("waiting for ncu failed: {e}"))),
    }
}

/// `text` cut to [`EXCERPT_CHARS`] characters, with `…` when cut.
pub(crate) fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
    if text.chars().nth(EXCERPT_CHARS).is_some() {
        out.push('\u{2026}');
    }
    out
}

/// Whether `hay` contains `needle`.
pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Column positions of a details-page header.
pub(crate) struct DetailsCols {
    id: usize,
    name: usize,
    /// Missing in exports of ncu before 2021 (which had "Kernel Time" instead).
    block: Option<usize>,
    grid: Option<usize>,
    device: Option<usize>,
    cc: Option<usize>,
    section: usize,
    label: Option<usize>,
    metric: usize,
    unit: usize,
    value: usize,
    rule_name: Option<usize>,
    rule_type: Option<usize>,
    rule_desc: Option<usize>,
    speedup_type: Option<usize>,
    speedup: Option<usize>,
    /// Fields a row needs (through `Metric Value`).
    min_fields: usize,
}

/// Column positions of a per-kernel summary header.
pub(crate) struct SummaryCols {
    id: Option<usize>,
    process: Option<usize>,
    name: usize,
    block: usize,
    grid: usize,
    device: Option<usize>,
    cc: usize,
    invocations: Option<usize>,
    section: usize,
    label: Option<usize>,
    metric: usize,
    unit: usize,
    min: usize,
    max: usize,
    avg: usize,
    min_fields: usize,
}

/// Column positions of a raw-page header.
pub(crate) struct RawCols {
    id: usize,
    name: usize,
    block: Option<usize>,
    grid: Option<usize>,
    device: Option<usize>,
    cc: Option<usize>,
    /// `(column, metric name)` of every metric column.
    metrics: Vec<(usize, String)>,
    /// Every metric column with its unit and SI scaling (set from the units row).
    columns: Vec<RawColumn>,
    /// Whether the units row has been read.
    have_units: bool,
}

/// A raw-page metric column, resolved once for every row.
pub(crate) struct RawColumn {
    index: usize,
    key: std::sync::Arc<MetricKey>,
    scale: Option<SiScale>,
}

impl RawCols {
    /// Resolves every metric column's section, unit and SI scaling.
    fn resolve(&mut self, units: &Record) {
        self.columns = self
            .metrics
            .iter()
            .map(|(index, name)| {
                let unit = if units.len() > *index {
                    units.get(*index).trim().to_string()
                } else {
                    String::new()
                };
                // `sm__throughput.avg...` → `sm`; `FBSP.TriageCompute.dramc__...` → `dramc`.
                let section = name
                    .split_once("__")
                    .map(|(prefix, _)| prefix.rsplit('.').next().unwrap_or(prefix))
                    .unwrap_or("")
                    .to_string();
                RawColumn {
                    index: *index,
                    key: std::sync::Arc::new(MetricKey::new(&section, name, &unit)),
                    scale: units::si_scale(&unit),
                }
            })
            .collect();
    }
}

/// The layout found in a header, with its columns.
pub(crate) enum Layout {
    Details(DetailsCols),
    Summary(SummaryCols),
    Raw(RawCols),
}

/// Identity columns of the raw page (everything else is a metric).
pub(crate) const RAW_IDENTITY: [&str; 12] = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
];

/// Recognises a header record. `Ok(None)`: not an ncu header at all; `Err`: an ncu-like
/// header that lacks a needed column.
pub(crate) fn classify_header(rec: &Record, line: usize) -> Result<Option<Layout>, NcuError> {
    let names: Vec<&str> = rec.fields().map(str::trim).collect();
    let find = |n: &str| names.iter().position(|c| *c == n);
    let has_kernel = find("Kernel Name").is_some();
    if !has_kernel {
        return Ok(None);
    }
    let need = |n: &str| {
        find(n).ok_or_else(|| NcuError::NotNcu {
            line,
            reason: format!("the header has no '{n}' column"),
        })
    };
    if find("Metric Name").is_some() && find("Average").is_some() {
        let avg = need("Average")?;
        let min = need("Minimum")?;
        let max = need("Maximum")?;
        let cols = SummaryCols {
            id: find("ID"),
            process: find("Process ID"),
            name: need("Kernel Name")?,
            block: need("Block Size")?,
            grid: need("Grid Size")?,
            device: find("Device"),
            cc: need("CC")?,
            invocations: find("Invocations"),
            section: need("Section Name")?,
            label: find("Body Item Label"),
            metric: need("Metric Name")?,
            unit: need("Metric Unit")?,
            min,
            max,
            avg,
            min_fields: avg.max(min).max(max) + 1,
        };
        return Ok(Some(Layout::Summary(cols)));
    }
    if find("Metric Name").is_some() || find("Metric Value").is_some() {
        let value = need("Metric Value")?;
        let cols = DetailsCols {
            id: need("ID")?,
            name: need("Kernel Name")?,
            block: find("Block Size"),
            grid: find("Grid Size"),
            device: find("Device"),
            cc: find("CC"),
            section: need("Section Name")?,
            label: find("Body Item Label"),
            metric: need("Metric Name")?,
            unit: need("Metric Unit")?,
            value,
            rule_name: find("Rule Name"),
            rule_type: find("Rule Type"),
            rule_desc: find("Rule Description"),
            speedup_type: find("Estimated Speedup Type"),
            speedup: find("Estimated Speedup"),
            min_fields: value + 1,
        };
        return Ok(Some(Layout::Details(cols)));
    }
    if names.first() == Some(&"ID") {
        let metrics: Vec<(usize, String)> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| !RAW_IDENTITY.contains(n) && !n.is_empty())
            .map(|(i, n)| (i, n.to_string()))
            .collect();
        if metrics.is_empty() {
            return Err(NcuError::NotNcu {
                line,
                reason: "the raw-page header has no metric columns".into(),
            });
        }
        let cols = RawCols {
            id: 0,
            name: need("Kernel Name")?,
            block: find("Block Size"),
            grid: find("Grid Size"),
            device: find("Device"),
            cc: find("CC"),
            metrics,
            columns: Vec::new(),
            have_units: false,
        };
        return Ok(Some(Layout::Raw(cols)));
    }
    Ok(None)
}

/// Parses a launch shape `(256, 1, 1)` (a bare `256` is `[256, 1, 1]`).
pub(crate) fn parse_dim3(text: &str, line: usize, column: &str) -> Result<[u32; 3], NcuError> {
    let bad = |reason: &str| NcuError::BadValue {
        line,
        column: column.to_string(),
        value: clip(text),
        reason: reason.to_string(),
    };
    let inner = text.trim().trim_start_matches('(').trim_end_matches(')');
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(bad("expected a launch shape like (256, 1, 1)"));
    }
    let mut out = [1u32; 3];
    for (slot, p) in out.iter_mut().zip(&parts) {
        *slot = p
            .parse::<u32>()
            .map_err(|_| bad("expected a launch shape like (256, 1, 1)"))?;
    }
    Ok(out)
}

/// Parses a non-negative integer printed by ncu (thousands separators allowed).
pub(crate) fn parse_count(text: &str, line: usize, column: &str) -> Result<u64, NcuError> {
    match units::parse_number(text) {
        Number::Finite(v) if v >= 0.0 && v.fract() == 0.0 && v < 9.007_199_254_740_992e15 => {
            Ok(v as u64)
        }
        Number::NonFinite => Err(NcuError::BadValue {
            line,
            column: column.to_string(),
            value: clip(text),
            reason: "not a finite number".into(),
        }),
        _ => Err(NcuError::BadValue {
            line,
            column: column.to_string(),
            value: clip(text),
            reason: "expected a non-negative integer".into(),
        }),
    }
}

/// A new kernel's name; an empty (or blank) one is refused: no ncu export has one, and every
/// view names kernels by it.
pub(crate) fn kernel_name(text: &str, line: usize) -> Result<String, NcuError> {
    if text.trim().is_empty() {
        return Err(NcuError::BadValue {
            line,
            column: "Kernel Name".to_string(),
            value: clip(text),
            reason: "empty kernel name".to_string(),
        });
    }
    Ok(text.to_string())
}

/// The report being built, with its lookup tables.
pub(crate) struct Builder {
    kernels: Vec<Kernel>,
    by_id: HashMap<u64, usize>,
    by_key: HashMap<String, usize>,
    key: String,
    /// Interned metric keys with their SI scaling, by `section\0name\0unit`.
    keys: HashMap<String, (std::sync::Arc<MetricKey>, Option<SiScale>)>,
    intern_buf: String,
    /// Values printed as numbers that are not finite ones, kept as unreadable.
    unreadable: usize,
    /// The first of them: line, column or metric, value.
    first_unreadable: Option<(usize, String, String)>,
}

impl Builder {
    fn new() -> Self {
        Builder {
            kernels: Vec::new(),
            by_id: HashMap::new(),
            by_key: HashMap::new(),
            key: String::new(),
            keys: HashMap::new(),
            intern_buf: String::new(),
            unreadable: 0,
            first_unreadable: None,
        }
    }

    /// Counts an unreadable value (`what`: the metric or column) for the report's warning.
    fn note_unreadable(&mut self, line: usize, what: &str, value: &str) {
        self.unreadable += 1;
        if self.first_unreadable.is_none() {
            self.first_unreadable = Some((line, clip(what), clip(value)));
        }
    }

    /// A number field that may be empty or text (`None`); a non-finite number is `None` too,
    /// counted as unreadable.
    fn optional_number(&mut self, text: &str, line: usize, column: &str) -> Option<f64> {
        match units::parse_number(without_instances(text)) {
            Number::Finite(v) => Some(v),
            Number::Text => None,
            Number::NonFinite => {
                self.note_unreadable(line, column, text);
                None
            }
        }
    }

    /// The warning about unreadable values, if there were any.
    fn unreadable_warning(&self) -> Option<String> {
        let (line, what, value) = self.first_unreadable.as_ref()?;
        Some(format!(
            "{} value(s) are not finite numbers (in their unit or in SI units) and are kept as \
             unreadable, without an SI value; the first: line {line}, '{what}' = '{value}'",
            self.unreadable
        ))
    }

    /// A metric from its printed fields; its key is interned (one per section, name and unit).
    /// A value that is not a usable number is kept as unreadable (and counted).
    fn metric(
        &mut self,
        section: &str,
        name: &str,
        unit: &str,
        value: &str,
        line: usize,
    ) -> Metric {
        self.intern_buf.clear();
        for part in [section, "\0", name, "\0", unit] {
            self.intern_buf.push_str(part);
        }
        if !self.keys.contains_key(self.intern_buf.as_str()) {
            let key = std::sync::Arc::new(MetricKey::new(section, name, unit));
            self.keys
                .insert(self.intern_buf.clone(), (key, units::si_scale(unit)));
        }
        let (key, scale) = match self.keys.get(self.intern_buf.as_str()) {
            Some((k, sc)) => (k.clone(), sc.as_ref()),
            None => (
                std::sync::Arc::new(MetricKey::new(section, name, unit)),
                None,
            ),
        };
        let (printed, si_value, unreadable) = metric_value(value, scale);
        let mut m = Metric::new(key, printed, si_value);
        if unreadable {
            m.set_unreadable(true);
            self.note_unreadable(line, name, value);
        }
        m
    }
}

/// A value as printed, in SI units, and whether it is unreadable.
pub(crate) type Valued = (MetricValue, Option<f64>, bool);

/// `text` cut into plain parts and web addresses (`http://` or `https://` up to the next
/// space, without a closing `.`, `,`, `)` or quote), in order: `(part, is_link)`.
pub fn split_links(text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = ["https://", "http://"]
        .iter()
        .filter_map(|p| rest.find(p))
        .min()
    {
        let tail = &rest[start..];
        let end = tail.find(char::is_whitespace).unwrap_or(tail.len());
        let url = tail[..end].trim_end_matches(['.', ',', ')', ';', '"', '\'']);
        if start > 0 {
            out.push((rest[..start].to_string(), false));
        }
        out.push((url.to_string(), true));
        rest = &rest[start + url.len()..];
    }
    if !rest.is_empty() {
        out.push((rest.to_string(), false));
    }
    out
}

/// A value printed with its metric instances (`--print-metric-instances values`: `44 (44)`,
/// `62.50 (62.50; 60.00)`): the value before them. Anything else comes back as it is.
pub fn without_instances(text: &str) -> &str {
    let t = text.trim();
    match t.split_once(" (") {
        Some((value, rest))
            if rest.ends_with(')') && !matches!(units::parse_number(value), Number::Text) =>
        {
            value
        }
        _ => text,
    }
}

/// A printed value with its SI conversion. A non-finite number (`1e400`, `inf`), or one whose
/// SI conversion overflows (`1e308 Tbyte/second`), is unreadable: kept as printed text with no
/// SI value, and flagged.
pub(crate) fn metric_value(text: &str, scale: Option<&SiScale>) -> Valued {
    let text = without_instances(text);
    let unreadable = || (MetricValue::Text(text.to_string()), None, true);
    match units::parse_number(text) {
        Number::Finite(v) => match scale {
            Some(s) => {
                let si = units::scale_pow10(v, s.exp10);
                if !si.is_finite() {
                    return unreadable();
                }
                (MetricValue::Number(v), Some(si), false)
            }
            None => (MetricValue::Number(v), Some(v), false),
        },
        Number::Text => (MetricValue::Text(text.to_string()), None, false),
        Number::NonFinite => unreadable(),
    }
}

/// Checks a row's field count against the header.
pub(crate) fn check_fields(
    rec: &Record,
    line: usize,
    min_fields: usize,
    header_len: usize,
) -> Result<(), NcuError> {
    if rec.len() < min_fields {
        return Err(NcuError::Truncated {
            line,
            reason: format!(
                "{} field(s), the header needs at least {min_fields} (it has {header_len})",
                rec.len()
            ),
        });
    }
    if rec.len() > header_len && (header_len..rec.len()).any(|i| !rec.get(i).trim().is_empty()) {
        return Err(NcuError::Malformed {
            line,
            reason: format!("{} fields, more than the header's {header_len}", rec.len()),
        });
    }
    Ok(())
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
                "{lossy_rows} row(s) had invalid UTF-8, replaced with U+FFFD (first on line {first_lossy})"
            ));
        }
        Ok(NcuReport {
            format,
            kernels: b.kernels,
            warnings: self.warnings,
        })
    }
}

/// Adds one details-page row.
pub(crate) fn details_row(
    b: &mut Builder,
    cols: &DetailsCols,
    rec: &Record,
    line: usize,
    header_len: usize,
) -> Result<(), NcuError> {
    check_fields(rec, line, cols.min_fields, header_len)?;
    let id = parse_count(rec.get(cols.id), line, "ID")?;
    let idx = match b.by_id.get(&id) {
        Some(&i) => i,
        None => {
            let name = kernel_name(rec.get(cols.name), line)?;
            let dim = |c: Option<usize>, column: &str| match c {
                Some(c) => parse_dim3(rec.get(c), line, column),
                None => Ok([0; 3]),
            };
            let kernel = Kernel {
                id,
                short_name: short_name(&name),
                name,
                block: dim(cols.block, "Block Size")?,
                grid: dim(cols.grid, "Grid Size")?,
                cc: cols
                    .cc
                    .map(|c| rec.get(c).trim().to_string())
                    .unwrap_or_default(),
                device: cols
                    .device
                    .and_then(|c| rec.get(c).trim().parse::<u32>().ok()),
                invocations: None,
                metrics: Vec::new(),
                rules: Vec::new(),
            };
            b.kernels.push(kernel);
            b.by_id.insert(id, b.kernels.len() - 1);
            b.kernels.len() - 1
        }
    };
    let section = rec.get(cols.section);
    let name = rec.get(cols.metric);
    if !name.is_empty() {
        let mut m = b.metric(section, name, rec.get(cols.unit), rec.get(cols.value), line);
        m.set_label(
            cols.label
                .map(|c| rec.get(c))
                .filter(|l| !l.is_empty())
                .map(str::to_string),
        );
        b.kernels[idx].metrics.push(m);
    }
    let get = |c: Option<usize>| c.map(|c| rec.get(c)).unwrap_or("");
    let rule_name = get(cols.rule_name);
    if !rule_name.is_empty() {
        let speedup_type = get(cols.speedup_type).trim();
        let rule = Rule {
            section: section.to_string(),
            name: rule_name.to_string(),
            rule_type: get(cols.rule_type).to_string(),
            description: get(cols.rule_desc).to_string(),
            speedup_type: (!speedup_type.is_empty()).then(|| speedup_type.to_string()),
            speedup: b.optional_number(get(cols.speedup), line, "Estimated Speedup"),
        };
        b.kernels[idx].rules.push(rule);
    }
    Ok(())
}

/// Adds one per-kernel summary row.
pub(crate) fn summary_row(
    b: &mut Builder,
    cols: &SummaryCols,
    rec: &Record,
    line: usize,
    header_len: usize,
) -> Result<(), NcuError> {
    check_fields(rec, line, cols.min_fields, header_len)?;
    let identity = [
        cols.id,
        cols.process,
        Some(cols.name),
        Some(cols.block),
        Some(cols.grid),
        cols.device,
        Some(cols.cc),
    ];
    let mut key = std::mem::take(&mut b.key);
    key.clear();
    for c in identity.into_iter().flatten() {
        key.push_str(rec.get(c));
        key.push('\u{1f}');
    }
    let found = b.by_key.get(key.as_str()).copied();
    let idx = match found {
        Some(i) => i,
        None => {
            let name = kernel_name(rec.get(cols.name), line)?;
            let id = match cols.id {
                Some(c) => parse_count(rec.get(c), line, "ID")?,
                None => b.kernels.len() as u64,
            };
            let invocations = match cols.invocations {
                Some(c) => Some(parse_count(rec.get(c), line, "Invocations")?),
                None => None,
            };
            let kernel = Kernel {
                id,
                short_name: short_name(&name),
                name,
                block: parse_dim3(rec.get(cols.block), line, "Block Size")?,
                grid: parse_dim3(rec.get(cols.grid), line, "Grid Size")?,
                cc: rec.get(cols.cc).trim().to_string(),
                device: cols
                    .device
                    .and_then(|c| rec.get(c).trim().parse::<u32>().ok()),
                invocations,
                metrics: Vec::new(),
                rules: Vec::new(),
            };
            b.kernels.push(kernel);
            b.by_key.insert(key.clone(), b.kernels.len() - 1);
            b.kernels.len() - 1
        }
    };
    b.key = key;
    let name = rec.get(cols.metric);
    if name.is_empty() {
        return Ok(());
    }
    let mut m = b.metric(
        rec.get(cols.section),
        name,
        rec.get(cols.unit),
        rec.get(cols.avg),
        line,
    );
    let min = b.optional_number(rec.get(cols.min), line, "Minimum");
    let max = b.optional_number(rec.get(cols.max), line, "Maximum");
    m.set_range(min, max);
    m.set_label(
        cols.label
            .map(|c| rec.get(c))
            .filter(|l| !l.is_empty())
            .map(str::to_string),
    );
    b.kernels[idx].metrics.push(m);
    Ok(())
}

/// Adds one raw-page row. Returns `false` for the units row.
pub(crate) fn raw_row(
    b: &mut Builder,
    cols: &mut RawCols,
    rec: &Record,
    line: usize,
    header_len: usize,
    warnings: &mut Vec<String>,
) -> Result<bool, NcuError> {
    if !cols.have_units {
        cols.have_units = true;
        let first = rec.get(cols.id).trim();
        if first.is_empty() || units::parse_number(first) == Number::Text {
            cols.resolve(rec);
            return Ok(false);
        }
        cols.resolve(&Record::default());
        warnings.push(format!(
            "raw page without a units row (line {line} is already a kernel): units left empty"
        ));
    }
    check_fields(rec, line, header_len, header_len)?;
    let id = parse_count(rec.get(cols.id), line, "ID")?;
    let name = kernel_name(rec.get(cols.name), line)?;
    // Launch shape: from the identity columns, else from the launch__ metrics.
    let dim_from_metrics = |prefix: &str| -> Option<[u32; 3]> {
        let mut out = [1u32; 3];
        for (slot, axis) in out.iter_mut().zip(["x", "y", "z"]) {
            let want = format!("{prefix}_{axis}");
            let (c, _) = cols.metrics.iter().find(|(_, n)| *n == want)?;
            match units::parse_number(rec.get(*c)) {
                Number::Finite(v) if v >= 0.0 && v <= u32::MAX as f64 => *slot = v as u32,
                _ => return None,
            }
        }
        Some(out)
    };
    let block = match cols.block {
        Some(c) => parse_dim3(rec.get(c), line, "Block Size")?,
        None => dim_from_metrics("launch__block_dim").unwrap_or([0; 3]),
    };
    let grid = match cols.grid {
        Some(c) => parse_dim3(rec.get(c), line, "Grid Size")?,
        None => dim_from_metrics("launch__grid_dim").unwrap_or([0; 3]),
    };
    let cc = match cols.cc {
        Some(c) => rec.get(c).trim().to_string(),
        None => {
            let part = |n: &str| {
                cols.metrics
                    .iter()
                    .find(|(_, m)| m == n)
                    .map(|(c, _)| rec.get(*c).trim().to_string())
            };
            match (
                part("device__attribute_compute_capability_major"),
                part("device__attribute_compute_capability_minor"),
            ) {
                (Some(a), Some(b)) if !a.is_empty() && !b.is_empty() => format!("{a}.{b}"),
                _ => String::new(),
            }
        }
    };
    let mut kernel = Kernel {
        id,
        short_name: short_name(&name),
        name,
        block,
        grid,
        cc,
        device: cols
            .device
            .and_then(|c| rec.get(c).trim().parse::<u32>().ok()),
        invocations: None,
        metrics: Vec::with_capacity(cols.columns.len()),
        rules: Vec::new(),
    };
    for col in &cols.columns {
        let value = rec.get(col.index);
        if value.trim().is_empty() {
            continue;
        }
        let (printed, si_value, unreadable) = metric_value(value, col.scale.as_ref());
        let mut m = Metric::new(col.key.clone(), printed, si_value);
        if unreadable {
            m.set_unreadable(true);
            b.note_unreadable(line, &col.key.name, value);
        }
        kernel.metrics.push(m);
    }
    if b.by_id.insert(id, b.kernels.len()).is_some() {
        warnings.push(format!(
            "line {line}: result ID {id} appears more than once"
        ));
    }
    b.kernels.push(kernel);
    Ok(true)
}
