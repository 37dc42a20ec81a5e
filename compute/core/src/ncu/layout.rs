//! The three CSV layouts an Nsight Compute export comes in (details, raw, per-kernel summary):
//! their header's columns, one row of each read into the report being built ([`Builder`]),
//! and the text of a value (links, instance suffixes, numbers in SI units).

use std::collections::HashMap;

use super::error::*;
use super::model::*;
use super::names::short_name;
use super::reader::Record;
use super::units::{self, Number, SiScale};

pub use super::reader::{MAX_FIELD_BYTES, MAX_LINE_BYTES};

/// Column positions of a details-page header.
pub(crate) struct DetailsCols {
    pub(crate) id: usize,
    pub(crate) name: usize,
    /// Missing in exports of ncu before 2021 (which had "Kernel Time" instead).
    pub(crate) block: Option<usize>,
    pub(crate) grid: Option<usize>,
    pub(crate) device: Option<usize>,
    pub(crate) cc: Option<usize>,
    pub(crate) section: usize,
    pub(crate) label: Option<usize>,
    pub(crate) metric: usize,
    pub(crate) unit: usize,
    pub(crate) value: usize,
    pub(crate) rule_name: Option<usize>,
    pub(crate) rule_type: Option<usize>,
    pub(crate) rule_desc: Option<usize>,
    pub(crate) speedup_type: Option<usize>,
    pub(crate) speedup: Option<usize>,
    /// Fields a row needs (through `Metric Value`).
    pub(crate) min_fields: usize,
}

/// Column positions of a per-kernel summary header.
pub(crate) struct SummaryCols {
    pub(crate) id: Option<usize>,
    pub(crate) process: Option<usize>,
    pub(crate) name: usize,
    pub(crate) block: usize,
    pub(crate) grid: usize,
    pub(crate) device: Option<usize>,
    pub(crate) cc: usize,
    pub(crate) invocations: Option<usize>,
    pub(crate) section: usize,
    pub(crate) label: Option<usize>,
    pub(crate) metric: usize,
    pub(crate) unit: usize,
    pub(crate) min: usize,
    pub(crate) max: usize,
    pub(crate) avg: usize,
    pub(crate) min_fields: usize,
}

/// Column positions of a raw-page header.
pub(crate) struct RawCols {
    pub(crate) id: usize,
    pub(crate) name: usize,
    pub(crate) block: Option<usize>,
    pub(crate) grid: Option<usize>,
    pub(crate) device: Option<usize>,
    pub(crate) cc: Option<usize>,
    /// `(column, metric name)` of every metric column.
    pub(crate) metrics: Vec<(usize, String)>,
    /// Every metric column with its unit and SI scaling (set from the units row).
    pub(crate) columns: Vec<RawColumn>,
    /// Whether the units row has been read.
    pub(crate) have_units: bool,
}

/// A raw-page metric column, resolved once for every row.
pub(crate) struct RawColumn {
    pub(crate) index: usize,
    pub(crate) key: std::sync::Arc<MetricKey>,
    pub(crate) scale: Option<SiScale>,
}

impl RawCols {
    /// Resolves every metric column's section, unit and SI scaling.
    pub(crate) fn resolve(&mut self, units: &Record) {
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
    pub(crate) kernels: Vec<Kernel>,
    pub(crate) by_id: HashMap<u64, usize>,
    pub(crate) by_key: HashMap<String, usize>,
    pub(crate) key: String,
    /// Interned metric keys with their SI scaling, by `section\0name\0unit`.
    pub(crate) keys: HashMap<String, (std::sync::Arc<MetricKey>, Option<SiScale>)>,
    pub(crate) intern_buf: String,
    /// Values printed as numbers that are not finite ones, kept as unreadable.
    pub(crate) unreadable: usize,
    /// The first of them: line, column or metric, value.
    pub(crate) first_unreadable: Option<(usize, String, String)>,
}

impl Builder {
    pub(crate) fn new() -> Self {
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
    pub(crate) fn note_unreadable(&mut self, line: usize, what: &str, value: &str) {
        self.unreadable += 1;
        if self.first_unreadable.is_none() {
            self.first_unreadable = Some((line, clip(what), clip(value)));
        }
    }

    /// A number field that may be empty or text (`None`); a non-finite number is `None` too,
    /// counted as unreadable.
    pub(crate) fn optional_number(&mut self, text: &str, line: usize, column: &str) -> Option<f64> {
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
    pub(crate) fn unreadable_warning(&self) -> Option<String> {
        let (line, what, value) = self.first_unreadable.as_ref()?;
        Some(format!(
            "{} value(s) are not finite numbers (in their unit or in SI units) and are kept as \
             unreadable, without an SI value; the first: line {line}, '{what}' = '{value}'",
            self.unreadable
        ))
    }

    /// A metric from its printed fields; its key is interned (one per section, name and unit).
    /// A value that is not a usable number is kept as unreadable (and counted).
    pub(crate) fn metric(
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
