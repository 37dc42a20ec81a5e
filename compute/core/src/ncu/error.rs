//! Why an Nsight Compute export could not be imported ([`NcuError`], each naming its line),
//! and the command that exports a binary report as the CSV the importer reads.

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

/// `text` cut to [`EXCERPT_CHARS`] characters, with `…` when cut.
pub(crate) fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
    if text.chars().nth(EXCERPT_CHARS).is_some() {
        out.push('\u{2026}');
    }
    out
}
