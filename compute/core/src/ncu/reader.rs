//! Streaming line and CSV-record reading with line numbers, size limits and lossy UTF-8.
//!
//! The reader never holds more than one record: a physical line is read into a reusable
//! buffer (capped at [`MAX_LINE_BYTES`]; longer lines are cut and flagged), and a CSV record is
//! parsed from one or more physical lines (a quoted field may contain newlines).

use std::io::BufRead;

use super::NcuError;

/// The longest single field accepted (1 MiB).
pub const MAX_FIELD_BYTES: usize = 1 << 20;
/// The longest physical line (or multi-line record) kept in memory (16 MiB).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// A physical line as read.
pub(crate) struct Line {
    /// 1-based line number.
    pub number: usize,
    /// Whether the line was longer than [`MAX_LINE_BYTES`] and was cut.
    pub cut: bool,
}

/// Reads physical lines from a [`BufRead`], counting them.
pub(crate) struct LineSource<R> {
    inner: R,
    /// Lines read so far.
    lines: usize,
}

impl<R: BufRead> LineSource<R> {
    pub fn new(inner: R) -> Self {
        LineSource { inner, lines: 0 }
    }

    /// The number of lines read so far (the number of the last line returned).
    pub fn lines_read(&self) -> usize {
        self.lines
    }

    /// The bytes at the start of the stream, without consuming them (up to one buffer).
    pub fn peek(&mut self) -> Result<&[u8], NcuError> {
        let line = self.lines + 1;
        let io = |e: std::io::Error| NcuError::Io {
            line,
            message: e.to_string(),
        };
        // Retry interrupted reads; once filled, `fill_buf` returns the same buffer again.
        for _ in 0..16 {
            match self.inner.fill_buf() {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io(e)),
            }
        }
        self.inner.fill_buf().map_err(io)
    }

    /// Discards `n` bytes already peeked (a byte-order mark).
    pub fn skip(&mut self, n: usize) {
        self.inner.consume(n);
    }

    /// Reads the next physical line into `buf` (without `\n` or a trailing `\r`).
    /// Returns `None` at end of input.
    pub fn next_line(&mut self, buf: &mut Vec<u8>) -> Result<Option<Line>, NcuError> {
        buf.clear();
        let mut cut = false;
        let mut any = false;
        loop {
            let (used, done) = {
                let avail = match self.inner.fill_buf() {
                    Ok(b) => b,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        return Err(NcuError::Io {
                            line: self.lines + 1,
                            message: e.to_string(),
                        })
                    }
                };
                if avail.is_empty() {
                    break;
                }
                any = true;
                let (chunk, used, done) = match avail.iter().position(|&b| b == b'\n') {
                    Some(i) => (&avail[..i], i + 1, true),
                    None => (avail, avail.len(), false),
                };
                if !cut {
                    let room = MAX_LINE_BYTES.saturating_sub(buf.len());
                    if chunk.len() > room {
                        buf.extend_from_slice(&chunk[..room]);
                        cut = true;
                    } else {
                        buf.extend_from_slice(chunk);
                    }
                }
                (used, done)
            };
            self.inner.consume(used);
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.lines += 1;
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(Some(Line {
            number: self.lines,
            cut,
        }))
    }
}

/// One CSV record: the unquoted fields, as UTF-8 text.
#[derive(Default)]
pub(crate) struct Record {
    /// The fields' bytes, concatenated (while parsing).
    bytes: Vec<u8>,
    /// The fields' text, concatenated (after [`Record::finish`]).
    text: String,
    /// Where each field ends in `text`.
    ends: Vec<usize>,
    /// Whether invalid UTF-8 was replaced.
    pub lossy: bool,
}

impl Record {
    /// The number of fields.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Field `i`, or `""` when the record is shorter.
    pub fn get(&self, i: usize) -> &str {
        if i >= self.ends.len() {
            return "";
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.text.get(start..self.ends[i]).unwrap_or("")
    }

    /// Every field, in order.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// The index and length of the first field longer than [`MAX_FIELD_BYTES`].
    pub fn oversized_field(&self) -> Option<(usize, usize)> {
        let mut start = 0;
        for (i, &end) in self.ends.iter().enumerate() {
            if end - start > MAX_FIELD_BYTES {
                return Some((i, end - start));
            }
            start = end;
        }
        None
    }

    fn begin(&mut self) {
        let mut bytes = std::mem::take(&mut self.text).into_bytes();
        bytes.clear();
        self.bytes = bytes;
        self.ends.clear();
        self.lossy = false;
    }

    /// Turns the parsed bytes into text: a field that is not UTF-8 is read as Latin-1 (ISO
    /// 8859-1, what a Windows or older Linux tool writes a `café` kernel name in), its C1
    /// control bytes (0x80 to 0x9F, never text there) replaced with U+FFFD.
    fn finish(&mut self) {
        let bytes = std::mem::take(&mut self.bytes);
        match String::from_utf8(bytes) {
            Ok(s) => self.text = s,
            Err(e) => {
                let bytes = e.into_bytes();
                let mut text = String::with_capacity(bytes.len() + 16);
                let mut start = 0;
                for end in self.ends.iter_mut() {
                    let field = bytes.get(start..*end).unwrap_or(&[]);
                    match std::str::from_utf8(field) {
                        Ok(f) => text.push_str(f),
                        Err(_) => text.extend(field.iter().map(|&b| latin1(b))),
                    }
                    start = *end;
                    *end = text.len();
                }
                self.text = text;
                self.lossy = true;
            }
        }
    }
}

/// A Latin-1 byte as its character; the C1 controls (0x80 to 0x9F) as U+FFFD.
fn latin1(b: u8) -> char {
    if (0x80..0xA0).contains(&b) {
        '\u{fffd}'
    } else {
        char::from(b)
    }
}

/// Where the tokenizer stopped within a line.
enum State {
    /// At the start of a field.
    FieldStart,
    /// In an unquoted field.
    Unquoted,
    /// In a quoted field.
    Quoted,
    /// Just after the closing quote of a quoted field.
    AfterQuote,
}

/// Parses CSV records from a [`LineSource`].
pub(crate) struct RecordReader<R> {
    pub source: LineSource<R>,
    line: Vec<u8>,
}

/// The outcome of reading one record.
pub(crate) enum Next {
    /// A record starting on this 1-based line.
    Record(usize),
    /// A line skipped before parsing: blank, or (`log`) an `==PROF==`-style log line.
    Skipped { log: bool },
    /// End of input.
    End,
}

/// Whether a line is one of ncu's own log lines (`==PROF==`, `==WARNING==`, `==ERROR==`).
pub(crate) fn is_log_line(line: &[u8]) -> bool {
    let t = trim_start(line);
    t.starts_with(b"==PROF==")
        || t.starts_with(b"==WARNING==")
        || t.starts_with(b"==ERROR==")
        || t.starts_with(b"==INFO==")
}

pub(crate) fn trim_start(line: &[u8]) -> &[u8] {
    let n = line.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &line[n..]
}

impl<R: BufRead> RecordReader<R> {
    pub fn new(source: LineSource<R>) -> Self {
        RecordReader {
            source,
            line: Vec::new(),
        }
    }

    /// Reads the next record into `rec`, skipping blank lines and ncu log lines.
    pub fn next(&mut self, rec: &mut Record) -> Result<Next, NcuError> {
        let Some(first) = self.source.next_line(&mut self.line)? else {
            return Ok(Next::End);
        };
        let start = first.number;
        if is_log_line(&self.line) {
            return Ok(Next::Skipped { log: true });
        }
        if trim_start(&self.line).is_empty() {
            return Ok(Next::Skipped { log: false });
        }
        if first.cut {
            return Err(NcuError::RowTooLong {
                line: start,
                limit: MAX_LINE_BYTES,
            });
        }
        rec.begin();
        let mut state = State::FieldStart;
        loop {
            let line = std::mem::take(&mut self.line);
            state = tokenize(&line, state, rec);
            self.line = line;
            if !matches!(state, State::Quoted) {
                break;
            }
            // A quoted field continues on the next physical line.
            if rec.bytes.len() > MAX_LINE_BYTES {
                return Err(NcuError::RowTooLong {
                    line: start,
                    limit: MAX_LINE_BYTES,
                });
            }
            match self.source.next_line(&mut self.line)? {
                Some(l) if !l.cut => rec.bytes.push(b'\n'),
                Some(_) => {
                    return Err(NcuError::RowTooLong {
                        line: start,
                        limit: MAX_LINE_BYTES,
                    })
                }
                None => {
                    return Err(NcuError::Truncated {
                        line: start,
                        reason: "the input ends inside a quoted field (unbalanced '\"')".into(),
                    })
                }
            }
        }
        rec.ends.push(rec.bytes.len());
        rec.finish();
        Ok(Next::Record(start))
    }
}

/// Parses one physical line as a whole CSV record (no continuation). `None` when a quoted
/// field is left open.
pub(crate) fn parse_single_line(line: &[u8], rec: &mut Record) -> Option<()> {
    rec.begin();
    let state = tokenize(line, State::FieldStart, rec);
    if matches!(state, State::Quoted) {
        return None;
    }
    rec.ends.push(rec.bytes.len());
    rec.finish();
    Some(())
}

/// Tokenizes `line` into `rec` from `state`; returns the state at the end of the line.
/// Lenient like common CSV readers: a quote inside an unquoted field is kept as is, and text
/// after a closing quote is appended to the field.
fn tokenize(line: &[u8], mut state: State, rec: &mut Record) -> State {
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        match state {
            State::FieldStart => match b {
                b'"' => state = State::Quoted,
                b',' => rec.ends.push(rec.bytes.len()),
                _ => {
                    rec.bytes.push(b);
                    state = State::Unquoted;
                }
            },
            State::Unquoted => {
                // Copy the run up to the next comma in one go.
                let run = line[i..].iter().position(|&c| c == b',');
                match run {
                    Some(n) => {
                        rec.bytes.extend_from_slice(&line[i..i + n]);
                        rec.ends.push(rec.bytes.len());
                        state = State::FieldStart;
                        i += n + 1;
                    }
                    None => {
                        rec.bytes.extend_from_slice(&line[i..]);
                        i = line.len();
                    }
                }
                continue;
            }
            State::Quoted => {
                let run = line[i..].iter().position(|&c| c == b'"');
                match run {
                    Some(n) => {
                        rec.bytes.extend_from_slice(&line[i..i + n]);
                        i += n + 1;
                        if line.get(i) == Some(&b'"') {
                            rec.bytes.push(b'"');
                            i += 1;
                        } else {
                            state = State::AfterQuote;
                        }
                    }
                    None => {
                        rec.bytes.extend_from_slice(&line[i..]);
                        i = line.len();
                    }
                }
                continue;
            }
            State::AfterQuote => match b {
                b',' => {
                    rec.ends.push(rec.bytes.len());
                    state = State::FieldStart;
                }
                _ => rec.bytes.push(b),
            },
        }
        i += 1;
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str) -> Result<Vec<(usize, Vec<String>)>, NcuError> {
        let mut r = RecordReader::new(LineSource::new(text.as_bytes()));
        let mut rec = Record::default();
        let mut out = Vec::new();
        loop {
            match r.next(&mut rec)? {
                Next::Record(line) => out.push((line, rec.fields().map(String::from).collect())),
                Next::Skipped { .. } => {}
                Next::End => return Ok(out),
            }
        }
    }

    #[test]
    fn quoting_trailing_comma_and_multiline() {
        let got =
            records("\"a\",\"b,c\",\"d\"\"e\",\r\n==PROF== x\n\nplain,2\n\"multi\nline\",z\n\"\"")
                .unwrap();
        assert_eq!(
            got,
            vec![
                (1, vec!["a".into(), "b,c".into(), "d\"e".into(), "".into()]),
                (4, vec!["plain".into(), "2".into()]),
                (5, vec!["multi\nline".into(), "z".into()]),
                (7, vec!["".into()]),
            ]
        );
    }

    #[test]
    fn open_quote_at_end_is_truncated() {
        let err = records("\"a\",\"b\nc").unwrap_err();
        assert!(matches!(err, NcuError::Truncated { line: 1, .. }), "{err}");
    }

    #[test]
    fn lossy_utf8() {
        // 0x81 is neither UTF-8 nor Latin-1 text.
        let mut r = RecordReader::new(LineSource::new(&b"\"a\x81\",\"\xc3\xa9\""[..]));
        let mut rec = Record::default();
        assert!(matches!(r.next(&mut rec).unwrap(), Next::Record(1)));
        assert!(rec.lossy);
        assert_eq!(rec.get(0), "a\u{fffd}");
        assert_eq!(rec.get(1), "\u{e9}");
        // Issue 37: a Latin-1 field is decoded, not replaced.
        let mut r = RecordReader::new(LineSource::new(&b"\"caf\xe9\",\"\xc3\xa9\""[..]));
        assert!(matches!(r.next(&mut rec).unwrap(), Next::Record(1)));
        assert_eq!((rec.get(0), rec.get(1)), ("caf\u{e9}", "\u{e9}"));
    }
}
