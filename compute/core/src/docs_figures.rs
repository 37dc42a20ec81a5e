//! Figures in the Docs pages, read from committed results files.
//!
//! A page of `docs-content/` never types a measured number: it writes a placeholder,
//! `{{fig:NAME}}`, and the registry `docs-content/figures.json` ([`Registry`]) says where NAME
//! comes from: a results file under `docs/results/` ([`Source`]), a selector into its JSON
//! ([`select`]) and a format (`"{:.1} ms"`, [`format_value`]). The front end's build script
//! resolves every placeholder with [`render_page`] and fails the build on an unknown figure, a
//! missing or unreadable results file, or a selector that finds nothing; each rendered figure
//! carries a numbered note naming its file, machine and date, listed at the end of the page.
//!
//! So that a number cannot slip back in by hand, [`bare_measurements`] finds what looks like a
//! measurement outside placeholders and fenced code (digits followed by a unit such as `ms`,
//! `µs`, `GB/s`, `TFLOP/s`, `MB` or `%`, or a speed-up such as `2.7×`), and
//! [`unallowed_measurements`] leaves out the few the registry allows, each with its reason
//! (rules and limits such as "48 KB", not measurements). [`outside_citations`] finds citations
//! of files outside the repository. The tests of `tests/docs_figures.rs` run all of this over
//! every page.
//!
//! Selectors are JSON pointers (`/ok/ours/ceilings/copy_gbps`) whose segments may also pick an
//! array element by its fields: `precision=fp16` is the first element whose `precision` is
//! `fp16`, `layer=lab_conv2,implementation=cudnn_f16` the first matching both, and
//! `name=conv_block_fwd_f32#2` the second match. A `.jsonl` file is read as an array of its
//! lines.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::Value;

/// Where the registry lives, for messages.
const REGISTRY: &str = "docs-content/figures.json";

/// The registry of figures: `docs-content/figures.json`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    /// What the file is for, in words (not used).
    #[serde(default)]
    pub about: String,
    /// The results files figures are read from, by a short id.
    pub sources: BTreeMap<String, Source>,
    /// The figures, by the name a placeholder gives.
    pub figures: BTreeMap<String, Figure>,
    /// Numbers with units that are not measurements, allowed on one page each.
    #[serde(default)]
    pub allow: Vec<Allowed>,
}

/// A results file that figures come from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Its file name under `docs/results/`.
    pub file: String,
    /// The machine it was measured on (`NVIDIA H100 80GB HBM3`).
    pub machine: String,
    /// The day it was measured (`2026-11-24`).
    pub date: String,
    /// What was run, in words.
    pub what: String,
}

/// One figure: a value read from a source, optionally scaled or divided, then formatted.
///
/// Its value is `scale · v / per`, where `v` is the selected number (or `1 / v` with
/// `reciprocal`) and `per` the optional divisor's number.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// The id of its [`Source`].
    pub source: String,
    /// The selector of its value in the source's JSON ([`select`]).
    pub select: String,
    /// How it is written: one `{}`, `{:.N}` or `{:,.N}` hole and its unit (`"{:.1} ms"`).
    pub format: String,
    /// A factor applied to the value (`1000` for ms → µs).
    #[serde(default)]
    pub scale: Option<f64>,
    /// Use `1 / v` (a rate from a time, a time from a rate).
    #[serde(default)]
    pub reciprocal: bool,
    /// A divisor read from a source (a ratio of two measurements).
    #[serde(default)]
    pub per: Option<Operand>,
}

/// A number read from a source (the divisor of a [`Figure`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Operand {
    /// The id of its [`Source`].
    pub source: String,
    /// Its selector ([`select`]).
    pub select: String,
}

/// A number with a unit that a page may write as it is, and why it is not a measurement.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Allowed {
    /// The page, as its path under `docs-content/` without `.md` (`tooling/ncu`).
    pub page: String,
    /// The text as [`bare_measurements`] reports it (`48 KB`).
    pub text: String,
    /// Why it is not a measurement.
    pub why: String,
}

/// Why a page's figures could not be rendered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FigureError {
    /// The registry is not valid.
    #[error("{REGISTRY}: {0}")]
    Registry(String),
    /// A placeholder is malformed or sits where it cannot be rendered.
    #[error("docs-content/{page}.md line {line}: {reason}")]
    Placeholder {
        /// The page.
        page: String,
        /// Its line (1-based).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A placeholder names no figure of the registry.
    #[error("docs-content/{page}.md line {line}: figure `{figure}` is not in {REGISTRY}")]
    UnknownFigure {
        /// The page.
        page: String,
        /// Its line (1-based).
        line: usize,
        /// The name in the placeholder.
        figure: String,
    },
    /// A figure's results file is missing or unreadable.
    #[error("docs-content/{page}.md: figure `{figure}`: docs/results/{file}: {reason}")]
    Results {
        /// The page.
        page: String,
        /// The figure.
        figure: String,
        /// The results file.
        file: String,
        /// Why it could not be read.
        reason: String,
    },
    /// A figure's selector finds nothing, or nothing it can format.
    #[error("docs-content/{page}.md: figure `{figure}`: {reason} (selector `{select}` in docs/results/{file})")]
    Value {
        /// The page.
        page: String,
        /// The figure.
        figure: String,
        /// The results file.
        file: String,
        /// The selector.
        select: String,
        /// What is wrong.
        reason: String,
    },
}

/// Every results file the registry names, read: file name → its JSON or why it could not be
/// read or parsed.
pub type Results = BTreeMap<String, Result<Value, String>>;

/// Parses and checks the registry: every figure's source (and divisor's) exists, every format
/// has one hole.
pub fn parse_registry(text: &str) -> Result<Registry, FigureError> {
    let reg: Registry =
        serde_json::from_str(text).map_err(|e| FigureError::Registry(e.to_string()))?;
    for (name, f) in &reg.figures {
        let mut sources = vec![&f.source];
        if let Some(p) = &f.per {
            sources.push(&p.source);
        }
        for s in sources {
            if !reg.sources.contains_key(s) {
                return Err(FigureError::Registry(format!(
                    "figure `{name}`: source `{s}` is not in \"sources\""
                )));
            }
        }
        split_format(&f.format)
            .map_err(|e| FigureError::Registry(format!("figure `{name}`: {e}")))?;
    }
    Ok(reg)
}

/// Parses a results file: JSON, or for a `.jsonl` file an array of its non-empty lines.
pub fn parse_results(file: &str, text: &str) -> Result<Value, String> {
    if file.ends_with(".jsonl") {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
            .collect::<Result<Vec<Value>, String>>()
            .map(Value::Array)
    } else {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

/// Reads every results file the registry names with `read` (given the file name under
/// `docs/results/`) and parses it.
pub fn load_results(
    reg: &Registry,
    mut read: impl FnMut(&str) -> Result<String, String>,
) -> Results {
    let mut out = Results::new();
    for s in reg.sources.values() {
        if !out.contains_key(&s.file) {
            let parsed = read(&s.file).and_then(|text| parse_results(&s.file, &text));
            out.insert(s.file.clone(), parsed);
        }
    }
    out
}

/// Whether array element `v` has every `key=value` of `conds`.
fn matches(v: &Value, conds: &[(&str, &str)]) -> bool {
    conds.iter().all(|(k, want)| match v.get(*k) {
        Some(Value::String(s)) => s == want,
        Some(Value::Number(n)) => want
            .parse::<f64>()
            .ok()
            .zip(n.as_f64())
            .is_some_and(|(a, b)| a == b),
        Some(Value::Bool(b)) => want.parse::<bool>().ok() == Some(*b),
        Some(Value::Null) => *want == "null",
        _ => false,
    })
}

/// The value `selector` points at in `root`, if any (see the module's documentation).
pub fn select<'a>(root: &'a Value, selector: &str) -> Option<&'a Value> {
    // As in a JSON pointer, "" is the whole document.
    if selector.is_empty() {
        return Some(root);
    }
    let path = selector.strip_prefix('/')?;
    let mut cur = root;
    for seg in path.split('/') {
        cur = if seg.contains('=') {
            let (conds, nth) = match seg.rsplit_once('#') {
                Some((c, n)) => (c, n.parse::<usize>().ok().filter(|&n| n >= 1)?),
                None => (seg, 1),
            };
            let conds: Vec<(&str, &str)> = conds
                .split(',')
                .map(|c| c.split_once('='))
                .collect::<Option<_>>()?;
            cur.as_array()?
                .iter()
                .filter(|v| matches(v, &conds))
                .nth(nth - 1)?
        } else {
            match cur {
                Value::Object(m) => m.get(seg)?,
                Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            }
        };
    }
    Some(cur)
}

/// A format split around its hole: (before, grouping, decimals or `None` for `{}`, after).
type FormatParts<'a> = (&'a str, bool, Option<usize>, &'a str);

fn split_format(format: &str) -> Result<FormatParts<'_>, String> {
    let open = format
        .find('{')
        .ok_or_else(|| format!("format `{format}` has no `{{…}}`"))?;
    let close = format[open..]
        .find('}')
        .map(|c| open + c)
        .ok_or_else(|| format!("format `{format}`: unclosed `{{`"))?;
    let (before, spec, after) = (
        &format[..open],
        &format[open + 1..close],
        &format[close + 1..],
    );
    if after.contains('{') || after.contains('}') || before.contains('}') {
        return Err(format!("format `{format}` has more than one hole"));
    }
    if spec.is_empty() {
        return Ok((before, false, None, after));
    }
    let spec = spec
        .strip_prefix(':')
        .ok_or_else(|| format!("format `{format}`: expected `{{}}`, `{{:.N}}` or `{{:,.N}}`"))?;
    let (group, spec) = match spec.strip_prefix(',') {
        Some(rest) => (true, rest),
        None => (false, spec),
    };
    let decimals = spec
        .strip_prefix('.')
        .and_then(|d| d.parse::<usize>().ok())
        .filter(|&d| d <= 12)
        .ok_or_else(|| format!("format `{format}`: expected `{{}}`, `{{:.N}}` or `{{:,.N}}`"))?;
    Ok((before, group, Some(decimals), after))
}

/// `digits` (an unsigned decimal, maybe with a fraction) with commas between thousands.
fn group_thousands(digits: &str) -> String {
    let (int, frac) = digits
        .split_once('.')
        .map_or((digits, None), |(i, f)| (i, Some(f)));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// Writes `v` with `format`: `{}` prints a string as it is and a number as JSON prints it,
/// `{:.N}` a number with N decimals, `{:,.N}` the same with commas between thousands.
pub fn format_value(format: &str, v: &Value) -> Result<String, String> {
    let (before, group, decimals, after) = split_format(format)?;
    let body = match (v, decimals) {
        (Value::String(s), None) => s.clone(),
        (Value::Number(n), None) => n.to_string(),
        (Value::Number(n), Some(d)) => {
            let x = n
                .as_f64()
                .ok_or_else(|| format!("{n} is not a finite number"))?;
            format_number(x, d, group)?
        }
        (other, _) => return Err(format!("{other} is not a number the format can write")),
    };
    Ok(format!("{before}{body}{after}"))
}

fn format_number(x: f64, decimals: usize, group: bool) -> Result<String, String> {
    if !x.is_finite() {
        return Err(format!("{x} is not a finite number"));
    }
    let s = format!("{:.*}", decimals, x.abs());
    let s = if group { group_thousands(&s) } else { s };
    // No "-0.0": a value that rounds to zero is written unsigned.
    let negative = x < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0');
    Ok(if negative { format!("-{s}") } else { s })
}

/// One placeholder of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// The figure's name.
    pub name: String,
    /// Its line (1-based).
    pub line: usize,
    /// Its byte range in the page.
    pub range: std::ops::Range<usize>,
}

const OPEN: &str = "{{fig:";
const CLOSE: &str = "}}";

/// Whether a line opens or closes a fenced code block: its fence (``` or ~~~, at least three).
fn fence_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if line.len() - t.len() > 3 {
        return None;
    }
    for c in ['`', '~'] {
        let n = t.chars().take_while(|&x| x == c).count();
        if n >= 3 {
            return Some(&t[..n]);
        }
    }
    None
}

/// The page's lines with their byte offsets, and whether each is inside a fenced code block
/// (fence lines included).
fn lines_with_fences(md: &str) -> Vec<(usize, &str, bool)> {
    let mut out = Vec::new();
    let mut open: Option<&str> = None;
    let mut offset = 0;
    for raw in md.split_inclusive('\n') {
        let line = raw.trim_end_matches(['\n', '\r']);
        let fence = fence_of(line);
        let in_code = match (open, fence) {
            (None, Some(f)) => {
                open = Some(f);
                true
            }
            (Some(o), Some(f)) if f.starts_with(o) && line.trim().len() == f.len() => {
                open = None;
                true
            }
            (Some(_), _) => true,
            (None, None) => false,
        };
        out.push((offset, line, in_code));
        offset += raw.len();
    }
    out
}

/// Whether byte `at` of `line` is inside an inline code span (backtick runs of equal length
/// open and close one; a span is not followed across lines).
fn in_inline_code(line: &str, at: usize) -> bool {
    let b = line.as_bytes();
    let mut open: Option<usize> = None;
    let mut i = 0;
    while i < at.min(b.len()) {
        if b[i] == b'`' {
            let n = b[i..].iter().take_while(|&&c| c == b'`').count();
            open = match open {
                None => Some(n),
                Some(o) if o == n => None,
                keep => keep,
            };
            i += n;
        } else {
            i += 1;
        }
    }
    open.is_some()
}

/// Every placeholder of page `page` (for messages), in order. A placeholder must be closed on
/// its line, name a figure (letters, digits, `_`, `-`, `.`) and stand in text: not in fenced
/// code nor in an inline code span, where its note could not be rendered.
pub fn placeholders(page: &str, md: &str) -> Result<Vec<Placeholder>, FigureError> {
    let mut out = Vec::new();
    for (i, (offset, line, in_code)) in lines_with_fences(md).into_iter().enumerate() {
        let err = |reason: String| FigureError::Placeholder {
            page: page.to_string(),
            line: i + 1,
            reason,
        };
        let mut from = 0;
        while let Some(p) = line[from..].find(OPEN).map(|p| from + p) {
            if in_code {
                return Err(err("a figure placeholder inside a fenced code block".into()));
            }
            if in_inline_code(line, p) {
                return Err(err("a figure placeholder inside an inline code span".into()));
            }
            let rest = &line[p + OPEN.len()..];
            let end = rest
                .find(CLOSE)
                .ok_or_else(|| err("`{{fig:` without its closing `}}`".into()))?;
            let name = &rest[..end];
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            {
                return Err(err(format!("`{{{{fig:{name}}}}}` is not a figure name")));
            }
            let stop = p + OPEN.len() + end + CLOSE.len();
            out.push(Placeholder {
                name: name.to_string(),
                line: i + 1,
                range: offset + p..offset + stop,
            });
            from = stop;
        }
    }
    Ok(out)
}

/// A number read from a results file.
fn number(
    results: &Results,
    reg: &Registry,
    page: &str,
    figure: &str,
    source: &str,
    selector: &str,
) -> Result<Value, FigureError> {
    let src = reg.sources.get(source).ok_or_else(|| {
        FigureError::Registry(format!(
            "figure `{figure}`: source `{source}` is not in \"sources\""
        ))
    })?;
    let root = match results.get(&src.file) {
        Some(Ok(v)) => v,
        Some(Err(reason)) => {
            return Err(FigureError::Results {
                page: page.to_string(),
                figure: figure.to_string(),
                file: src.file.clone(),
                reason: reason.clone(),
            })
        }
        None => {
            return Err(FigureError::Results {
                page: page.to_string(),
                figure: figure.to_string(),
                file: src.file.clone(),
                reason: "not read".into(),
            })
        }
    };
    match select(root, selector) {
        Some(Value::Null) | None => Err(FigureError::Value {
            page: page.to_string(),
            figure: figure.to_string(),
            file: src.file.clone(),
            select: selector.to_string(),
            reason: "the selector finds nothing".into(),
        }),
        Some(v) => Ok(v.clone()),
    }
}

/// The text of figure `name` on page `page` (its value, formatted) and its source.
pub fn figure_text<'r>(
    reg: &'r Registry,
    results: &Results,
    page: &str,
    name: &str,
    line: usize,
) -> Result<(String, &'r Source), FigureError> {
    let fig = reg
        .figures
        .get(name)
        .ok_or_else(|| FigureError::UnknownFigure {
            page: page.to_string(),
            line,
            figure: name.to_string(),
        })?;
    let src = reg.sources.get(&fig.source).ok_or_else(|| {
        FigureError::Registry(format!(
            "figure `{name}`: source `{}` is not in \"sources\"",
            fig.source
        ))
    })?;
    let value_err = |file: &str, select: &str, reason: String| FigureError::Value {
        page: page.to_string(),
        figure: name.to_string(),
        file: file.to_string(),
        select: select.to_string(),
        reason,
    };
    let v = number(results, reg, page, name, &fig.source, &fig.select)?;
    let derived = fig.scale.is_some() || fig.reciprocal || fig.per.is_some();
    let v = if derived {
        let x = v
            .as_f64()
            .ok_or_else(|| value_err(&src.file, &fig.select, format!("{v} is not a number")))?;
        let mut x = if fig.reciprocal { 1.0 / x } else { x };
        x *= fig.scale.unwrap_or(1.0);
        if let Some(per) = &fig.per {
            let d = number(results, reg, page, name, &per.source, &per.select)?;
            let file = reg.sources.get(&per.source).map_or("", |s| s.file.as_str());
            let d = d
                .as_f64()
                .ok_or_else(|| value_err(file, &per.select, format!("{d} is not a number")))?;
            x /= d;
        }
        if !x.is_finite() {
            return Err(value_err(
                &src.file,
                &fig.select,
                format!("the value is {x}"),
            ));
        }
        serde_json::Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| value_err(&src.file, &fig.select, format!("the value is {x}")))?
    } else {
        v
    };
    let text = format_value(&fig.format, &v).map_err(|e| value_err(&src.file, &fig.select, e))?;
    Ok((text, src))
}

/// `s` for a double-quoted HTML attribute or text.
fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// Page `page`'s Markdown with every placeholder replaced by its figure and a numbered note
/// (`<sup class="fig-src" title="machine, date: docs/results/FILE">[n]</sup>`), and, when it
/// has figures, a closing section that lists the notes' sources.
pub fn render_page(
    page: &str,
    md: &str,
    reg: &Registry,
    results: &Results,
) -> Result<String, FigureError> {
    let found = placeholders(page, md)?;
    if found.is_empty() {
        return Ok(md.to_string());
    }
    let mut used: Vec<&Source> = Vec::new();
    let mut out = String::with_capacity(md.len() + 1024);
    let mut last = 0;
    for p in &found {
        let (text, src) = figure_text(reg, results, page, &p.name, p.line)?;
        let n = match used.iter().position(|s| *s == src) {
            Some(i) => i + 1,
            None => {
                used.push(src);
                used.len()
            }
        };
        out.push_str(&md[last..p.range.start]);
        let _ = write!(
            out,
            "{text}<sup class=\"fig-src\" title=\"{}\">[{n}]</sup>",
            escape_html(&format!(
                "{}, {}: docs/results/{}",
                src.machine, src.date, src.file
            ))
        );
        last = p.range.end;
    }
    out.push_str(&md[last..]);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(
        "\n## Where the figures come from\n\n\
         The measured figures on this page were read from results files committed in the \
         repository when the app was built. They are reference measurements from the lab's own \
         runs, not from your machine:\n\n",
    );
    for (i, s) in used.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. `docs/results/{}`: {}, {}. {}",
            i + 1,
            s.file,
            s.machine,
            s.date,
            s.what
        );
    }
    Ok(out)
}

/// A number with a unit on a page, outside placeholders and fenced code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bare {
    /// Its line (1-based).
    pub line: usize,
    /// The number and its unit as written (`125 µs`, `3–6 µs`, `2.7×`).
    pub text: String,
}

/// Units that make a number look like a measurement, longest first where one is a prefix of
/// another.
const UNITS: &[&str] = &[
    "TFLOP/s",
    "GFLOP/s",
    "samples/s",
    "images/s",
    "GB/s",
    "TB/s",
    "MB/s",
    "GiB",
    "MiB",
    "KiB",
    "GB",
    "MB",
    "KB",
    "kB",
    "ms",
    "µs",
    "μs",
    "us",
    "ns",
    "s",
    "%",
    "W",
    "MHz",
    "°C",
];

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The measurement-looking numbers of a line: digits (with `,` and `.`, and a range such as
/// `3–6`) not preceded by a letter, digit, `_` or `.`, followed by an optional space and a
/// unit of [`UNITS`] that ends the word, or directly by `×` not followed by a digit.
fn scan_line(line: &str) -> Vec<String> {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let at = |i: usize| chars.get(i).map(|&(_, c)| c);
    let byte = |i: usize| chars.get(i).map_or(line.len(), |&(b, _)| b);
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        let starts =
            c.is_ascii_digit() && (i == 0 || !at(i - 1).is_some_and(|p| is_word(p) || p == '.'));
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        let digits = |mut j: usize| {
            while at(j).is_some_and(|c| c.is_ascii_digit() || c == ',' || c == '.') {
                j += 1;
            }
            j
        };
        let mut j = digits(i);
        if matches!(at(j), Some('–' | '-')) && at(j + 1).is_some_and(|c| c.is_ascii_digit()) {
            j = digits(j + 1);
        }
        // Sentence punctuation is not part of the number.
        while j > start + 1 && matches!(at(j - 1), Some(',' | '.')) {
            j -= 1;
        }
        let num_end = j;
        if at(j) == Some('×') && !at(j + 1).is_some_and(|c| c.is_ascii_digit()) {
            out.push(line[byte(start)..byte(j + 1)].to_string());
            i = j + 1;
            continue;
        }
        let mut k = j;
        if matches!(at(k), Some(' ' | '\u{a0}' | '\u{2009}' | '\u{202f}')) {
            k += 1;
        }
        let rest = &line[byte(k)..];
        let unit = UNITS.iter().find(|u| {
            rest.starts_with(**u) && !rest[u.len()..].chars().next().is_some_and(is_word)
        });
        if let Some(u) = unit {
            let end = byte(k) + u.len();
            out.push(line[byte(start)..end].to_string());
            i = chars
                .iter()
                .position(|&(b, _)| b >= end)
                .unwrap_or(chars.len());
        } else {
            i = num_end.max(i + 1);
        }
    }
    out
}

/// Every measurement-looking number of a page outside fenced code blocks and placeholders
/// (see [`scan_line`]'s rule in the module's documentation).
pub fn bare_measurements(md: &str) -> Vec<Bare> {
    let mut out = Vec::new();
    for (i, (_, line, in_code)) in lines_with_fences(md).into_iter().enumerate() {
        if in_code {
            continue;
        }
        // Placeholders are figures, not bare numbers: blank them out (an unclosed one is left
        // for `placeholders` to report).
        let mut text = line.to_string();
        while let Some(p) = text.find(OPEN) {
            let Some(e) = text[p..].find(CLOSE) else {
                break;
            };
            text.replace_range(p..p + e + CLOSE.len(), " ");
        }
        for t in scan_line(&text) {
            out.push(Bare {
                line: i + 1,
                text: t,
            });
        }
    }
    out
}

/// The measurement-looking numbers of page `page` that the registry does not allow.
pub fn unallowed_measurements(page: &str, md: &str, reg: &Registry) -> Vec<Bare> {
    bare_measurements(md)
        .into_iter()
        .filter(|b| !reg.allow.iter().any(|a| a.page == page && a.text == b.text))
        .collect()
}

/// Citations of files outside the repository: `../shared/…`, `shared/ANCHORS…`, and any
/// inline code span that starts with `../` (paths on these pages are relative to the
/// repository's root). Each with its line (1-based).
pub fn outside_citations(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in md.lines().enumerate() {
        let hit = ["../shared", "shared/ANCHORS", "`../"]
            .iter()
            .find(|pat| line.contains(**pat));
        if let Some(pat) = hit {
            out.push((i + 1, format!("`{pat}` in: {}", line.trim())));
        }
    }
    out
}

#[cfg(test)]
mod tests;
