//! The house rules clippy does not know, checked on the sources (CI's `lint: house rules` stage,
//! `cargo xtask lint`):
//! - no non-test Rust source file (one outside `tests/` and `benches/`, not named `tests.rs` or
//!   `…_tests.rs`) over [`MAX_FILE_LINES`] lines, inline tests included;
//! - in the front end (app-ui/src), the typed loading of issue 36: at most
//!   [`MAX_SPAWN_LOCAL`] `spawn_local` calls, each under a comment saying it runs a streaming
//!   job; at least [`MIN_TYPED_LOADING`] `LocalResource`s and `Action`s (`load`/`act`); no
//!   hand-made error signal (an `Option<String>` signal named `…error…`) in a function that
//!   calls the bridge outside a streaming job; no component function over
//!   [`MAX_COMPONENT_LINES`] lines.
//!
//! The sources are read as text, their strings and comments blanked ([`Code`]) so that braces
//! and names inside them count for nothing; a function spans its `fn` line to its closing
//! brace.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The most lines a non-test Rust source file may have.
pub const MAX_FILE_LINES: usize = 1000;

/// The most `spawn_local` calls in app-ui/src: the streaming jobs only.
pub const MAX_SPAWN_LOCAL: usize = 12;

/// The fewest `LocalResource`s and `Action`s in app-ui/src (made with `load`/`act` or directly).
pub const MIN_TYPED_LOADING: usize = 10;

/// The most lines of a `#[component]` function.
pub const MAX_COMPONENT_LINES: usize = 250;

/// The bridge calls that stream a job's events (a duel, a data download, a lab job): their
/// errors arrive in the job's own signals, beside its progress.
const STREAMING_CALLS: &[&str] = &["bridge::job(", "bridge::duel(", "bridge::data_fetch("];

/// What the bridge offers besides calls to the service: its error helpers (`bridge::js_text`…)
/// and its types (`bridge::Untyped`, any capitalised name).
const BRIDGE_HELPERS: &[&str] = &[
    "bridge::js_text(",
    "bridge::runtime(",
    "bridge::from_json_value(",
];

/// One broken rule, with where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file, relative to the repository's root.
    pub file: String,
    /// Its line (1-based; 0 for the whole file).
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.what)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.what)
        }
    }
}

/// What the rules counted, for CI's note.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    /// `spawn_local` calls.
    pub spawn_local: usize,
    /// `LocalResource`s and `Action`s made.
    pub typed_loading: usize,
    /// The longest component function: (lines, file, name).
    pub longest_component: Option<(usize, String, String)>,
}

impl Counts {
    /// In words, for CI's table: `6 spawn_local, 30 LocalResource/Action, longest component 240
    /// lines (SetupPage, …); no source file over 1000 lines`.
    pub fn summary(&self) -> String {
        let longest = self
            .longest_component
            .as_ref()
            .map_or("no component".to_string(), |(n, file, name)| {
                format!("longest component {n} lines ({name}, {file})")
            });
        format!(
            "{} spawn_local, {} LocalResource/Action, {longest}; no source file over {MAX_FILE_LINES} lines",
            self.spawn_local,
            self.typed_loading,
        )
    }
}

/// Checks every rule on the repository at `root`: the counts when they all hold, else an error
/// listing every finding.
pub fn check(root: &Path) -> Result<Counts> {
    let mut findings = Vec::new();
    let sources = rust_sources(root)?;
    let mut texts = Vec::new();
    for path in &sources {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        texts.push((relative(root, path), text));
    }
    findings.extend(file_lengths(
        texts.iter().map(|(p, t)| (p.as_str(), t.as_str())),
    ));
    let ui: Vec<(&str, &str)> = texts
        .iter()
        .filter(|(p, _)| p.starts_with("app-ui/src/"))
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let (counts, ui_findings) = ui_rules(&ui);
    findings.extend(ui_findings);
    if !findings.is_empty() {
        let list: Vec<String> = findings.iter().map(|f| format!("  {f}")).collect();
        bail!(
            "{} house rule(s) broken ({}):\n{}",
            findings.len(),
            counts.summary(),
            list.join("\n")
        );
    }
    Ok(counts)
}

/// The file-length rule over `(path, text)` pairs (paths relative to the root, `/`-separated).
pub fn file_lengths<'a>(files: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (path, text) in files {
        if is_test_file(path) {
            continue;
        }
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            findings.push(Finding {
                file: path.to_string(),
                line: 0,
                what: format!(
                    "{lines} lines, over {MAX_FILE_LINES}: split it by concern (its tests can go to a tests.rs beside it)"
                ),
            });
        }
    }
    findings
}

/// The front end's rules over its `(path, text)` pairs: what they counted, and what broke.
pub fn ui_rules(files: &[(&str, &str)]) -> (Counts, Vec<Finding>) {
    let mut counts = Counts::default();
    let mut findings = Vec::new();
    let mut spawns = Vec::new();
    for &(path, text) in files {
        let code = Code::new(text);
        let fns = code.functions();
        for line in code.lines_with("spawn_local(") {
            spawns.push((path, line));
            if !comment_above_mentions(text, line, "streaming") {
                findings.push(Finding {
                    file: path.to_string(),
                    line,
                    what: "spawn_local without a comment above it saying which streaming job it runs (other calls use loading::load/act)".into(),
                });
            }
        }
        if path != "app-ui/src/loading.rs" {
            counts.typed_loading += code.typed_loading();
        }
        for f in &fns {
            if f.component && f.lines() > MAX_COMPONENT_LINES {
                findings.push(Finding {
                    file: path.to_string(),
                    line: f.start_line,
                    what: format!(
                        "component {} is {} lines, over {MAX_COMPONENT_LINES}: split it into components of one job each",
                        f.name,
                        f.lines()
                    ),
                });
            }
            if f.component
                && counts
                    .longest_component
                    .as_ref()
                    .is_none_or(|(n, _, _)| f.lines() > *n)
            {
                counts.longest_component = Some((f.lines(), path.to_string(), f.name.clone()));
            }
        }
        for (line, name) in code.error_signals() {
            let Some(f) = innermost(&fns, line) else {
                continue;
            };
            if let Some(call) = code.plain_bridge_call(f) {
                findings.push(Finding {
                    file: path.to_string(),
                    line,
                    what: format!(
                        "hand-made error signal `{name}` in {} beside a bridge call (line {call}): use loading::load/act and <Loaded>",
                        f.name
                    ),
                });
            }
        }
    }
    counts.spawn_local = spawns.len();
    if spawns.len() > MAX_SPAWN_LOCAL {
        findings.push(Finding {
            file: "app-ui/src".into(),
            line: 0,
            what: format!(
                "{} spawn_local calls, over {MAX_SPAWN_LOCAL}: keep it for the streaming jobs",
                spawns.len()
            ),
        });
    }
    if counts.typed_loading < MIN_TYPED_LOADING {
        findings.push(Finding {
            file: "app-ui/src".into(),
            line: 0,
            what: format!(
                "{} LocalResource/Action uses, under {MIN_TYPED_LOADING}: load through loading::load/act",
                counts.typed_loading
            ),
        });
    }
    (counts, findings)
}

/// The innermost function whose body holds `line`.
fn innermost(fns: &[Function], line: usize) -> Option<&Function> {
    fns.iter()
        .filter(|f| f.start_line <= line && line <= f.end_line)
        .min_by_key(|f| f.lines())
}

/// Whether the comment block right above `line` (1-based; `//` lines, blank lines not between)
/// or the line itself mentions `word` (any case).
fn comment_above_mentions(text: &str, line: usize, word: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let has = |l: &str| {
        l.split_once("//")
            .is_some_and(|(_, c)| c.to_lowercase().contains(word))
    };
    if lines.get(line - 1).is_some_and(|l| has(l)) {
        return true;
    }
    lines[..line - 1]
        .iter()
        .rev()
        .take_while(|l| l.trim_start().starts_with("//"))
        .any(|l| has(l))
}

/// Whether `path` holds tests only: under a `tests` or `benches` folder, or named `tests.rs` or
/// `…_tests.rs`.
fn is_test_file(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let name = parts.last().copied().unwrap_or("");
    parts[..parts.len().saturating_sub(1)]
        .iter()
        .any(|p| *p == "tests" || *p == "benches")
        || name == "tests.rs"
        || name.ends_with("_tests.rs")
}

/// Every `.rs` file of the repository but the build outputs and the installed tools.
fn rust_sources(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
        for e in entries {
            let e = e?;
            let path = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            if e.file_type()?.is_dir() {
                if !matches!(
                    name.as_ref(),
                    "target" | "node_modules" | "dist" | "shared" | "gen"
                ) && !name.starts_with('.')
                {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// A Rust source with its comments, strings and character literals blanked to spaces (line
/// breaks kept), so that what is searched is code.
struct Code {
    text: String,
    /// Byte offsets of each line's start.
    line_starts: Vec<usize>,
}

/// A function in a [`Code`].
#[derive(Debug)]
struct Function {
    name: String,
    /// Its `fn` line, 1-based.
    start_line: usize,
    /// Its closing brace's line.
    end_line: usize,
    /// Its body's byte range in the code.
    body: std::ops::Range<usize>,
    /// Marked `#[component]`.
    component: bool,
}

impl Function {
    fn lines(&self) -> usize {
        self.end_line - self.start_line + 1
    }
}

impl Code {
    fn new(src: &str) -> Code {
        let b = src.as_bytes();
        let mut out = b.to_vec();
        let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
            for c in &mut out[from..to] {
                if *c != b'\n' {
                    *c = b' ';
                }
            }
        };
        let mut i = 0;
        while i < b.len() {
            let rest = &b[i..];
            if rest.starts_with(b"//") {
                let end = rest
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            } else if rest.starts_with(b"/*") {
                let mut depth = 0;
                let mut j = i;
                while j < b.len() {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            } else if let Some(hashes) = raw_string_start(b, i) {
                // r"…", r#"…"#, br"…", cr"…": ends at a quote followed by as many #s.
                let open = i + b[i..].iter().position(|&c| c == b'"').unwrap_or(0) + 1;
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let end = b[open..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |p| open + p + close.len());
                blank(&mut out, i, end);
                i = end;
            } else if b[i] == b'"' {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(b.len());
                blank(&mut out, i, end);
                i = end;
            } else if b[i] == b'\'' {
                // A character literal ('a', '\n', '\u{1F600}', 'é'), or a lifetime ('a).
                let end = if rest.get(1) == Some(&b'\\') {
                    rest.iter()
                        .skip(2)
                        .position(|&c| c == b'\'')
                        .map(|p| i + 2 + p + 1)
                } else {
                    let ch_len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (rest.get(1 + ch_len) == Some(&b'\'')).then_some(i + 2 + ch_len)
                };
                match end {
                    Some(end) => {
                        blank(&mut out, i, end);
                        i = end;
                    }
                    None => i += 1,
                }
            } else {
                i += 1;
            }
        }
        // Blanking swaps bytes for spaces, and only whole literals and comments: multi-byte
        // characters inside them go whole, so the result stays UTF-8.
        let text = String::from_utf8_lossy(&out).into_owned();
        let mut line_starts = vec![0];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, c)| *c == b'\n')
                .map(|(i, _)| i + 1),
        );
        Code { text, line_starts }
    }

    /// The 1-based line of byte `at`.
    fn line_of(&self, at: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= at)
    }

    /// The closing brace (or parenthesis, or bracket) of the one opened at `open`.
    fn matching_brace(&self, open: usize) -> Option<usize> {
        let bytes = self.text.as_bytes();
        let (o, c) = match bytes.get(open)? {
            b'(' => (b'(', b')'),
            b'[' => (b'[', b']'),
            _ => (b'{', b'}'),
        };
        let mut depth = 0usize;
        for (i, &b) in bytes.iter().enumerate().skip(open) {
            if b == o {
                depth += 1;
            } else if b == c {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
        }
        None
    }

    /// The lines (1-based) where `needle` occurs as code, not as part of a longer name.
    fn lines_with(&self, needle: &str) -> Vec<usize> {
        self.find_words(needle)
            .into_iter()
            .map(|at| self.line_of(at))
            .collect()
    }

    /// Where `needle` starts as code, not preceded by a name's character.
    fn find_words(&self, needle: &str) -> Vec<usize> {
        self.text
            .match_indices(needle)
            .map(|(at, _)| at)
            .filter(|&at| {
                !self.text[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
            .collect()
    }

    /// Every function with a body, nested ones included.
    fn functions(&self) -> Vec<Function> {
        let mut fns = Vec::new();
        for at in self.find_words("fn ") {
            let after = &self.text[at + 3..];
            let name: String = after
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() {
                continue;
            }
            let Some(open) = self.text[at..].find(['{', ';']).map(|o| at + o) else {
                continue;
            };
            if self.text.as_bytes()[open] == b';' {
                continue;
            }
            let Some(close) = self.matching_brace(open) else {
                continue;
            };
            let start_line = self.line_of(at);
            fns.push(Function {
                name,
                start_line,
                end_line: self.line_of(close),
                body: open..close + 1,
                component: self.attributes_above(start_line).contains("#[component]"),
            });
        }
        fns
    }

    /// The attribute lines right above line `line` (1-based; blank and comment lines, blanked
    /// here, skipped).
    fn attributes_above(&self, line: usize) -> String {
        let mut attrs = String::new();
        let mut l = line - 1;
        while l >= 1 {
            let text = self.line(l).trim();
            if text.is_empty() {
                l -= 1;
                continue;
            }
            if text.starts_with("#[") || text.starts_with(')') || text.ends_with(',') {
                attrs.push_str(text);
                l -= 1;
                continue;
            }
            break;
        }
        attrs
    }

    fn line(&self, line: usize) -> &str {
        let start = self.line_starts[line - 1];
        let end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |e| e - 1);
        &self.text[start..end]
    }

    /// `LocalResource`s and `Action`s made: `LocalResource::new…`, `Action::new…`, and
    /// `load(…)`/`act(…)` (loading.rs's) as a binding's or a field's value.
    fn typed_loading(&self) -> usize {
        let direct = ["LocalResource::new", "Action::new"]
            .iter()
            .map(|n| self.find_words(n).len())
            .sum::<usize>();
        let helpers = ["load(", "act("]
            .iter()
            .flat_map(|n| self.find_words(n))
            .filter(|&at| {
                let before = self.text[..at].trim_end();
                let before = before
                    .strip_suffix("loading::")
                    .map(|b| b.strip_suffix("crate::").unwrap_or(b))
                    .unwrap_or(before)
                    .trim_end();
                before.ends_with('=') || before.ends_with(':')
            })
            .count();
        direct + helpers
    }

    /// Hand-made error signals: `let …error… = RwSignal::new(None::<String>)` (or `signal`),
    /// with their lines and names.
    fn error_signals(&self) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for at in self.find_words("let ") {
            let stmt_end = self.text[at..]
                .find(';')
                .map_or(self.text.len(), |e| at + e);
            let stmt = &self.text[at + 4..stmt_end];
            let Some((name, value)) = stmt.split_once('=') else {
                continue;
            };
            let name = name.trim().trim_start_matches("mut ").trim();
            let value: String = value.chars().filter(|c| !c.is_whitespace()).collect();
            let made = ["RwSignal::new(None::<String>)", "signal(None::<String>)"];
            if name.contains("error") && made.iter().any(|m| value.starts_with(m)) {
                out.push((self.line_of(at), name.to_string()));
            }
        }
        out
    }

    /// The line of the first bridge call in `f` made by hand: neither a streaming job's (nor
    /// inside one's `spawn_local`) nor the body of a `LocalResource` or an `Action` (`load`,
    /// `act`), if any.
    fn plain_bridge_call(&self, f: &Function) -> Option<usize> {
        let body = &self.text[f.body.clone()];
        let within = |needle: &str| -> Vec<std::ops::Range<usize>> {
            self.find_words(needle)
                .into_iter()
                .filter(|at| f.body.contains(at))
                .filter_map(|at| {
                    let open = at + needle.len() - 1;
                    self.matching_brace(open).map(|close| open..close)
                })
                .collect()
        };
        let mut handled: Vec<std::ops::Range<usize>> = within("spawn_local(")
            .into_iter()
            .filter(|r| {
                let block = &self.text[r.clone()];
                STREAMING_CALLS.iter().any(|c| block.contains(c))
            })
            .collect();
        for typed in [
            "load(",
            "act(",
            "LocalResource::new(",
            "Action::new(",
            "Action::new_local(",
        ] {
            handled.extend(within(typed));
        }
        body.match_indices("bridge::")
            .map(|(at, _)| f.body.start + at)
            .filter(|at| !handled.iter().any(|r| r.contains(at)))
            .filter(|&at| {
                let rest = &self.text[at..];
                !rest["bridge::".len()..].starts_with(|c: char| c.is_uppercase())
                    && !BRIDGE_HELPERS.iter().any(|h| rest.starts_with(h))
            })
            .find(|&at| {
                !STREAMING_CALLS
                    .iter()
                    .any(|c| self.text[at..].starts_with(c))
            })
            .map(|at| self.line_of(at))
    }
}

/// When a raw string literal (`r"`, `r#"`, `br"`, `cr#"`…) starts at `i`: its number of `#`s.
fn raw_string_start(b: &[u8], i: usize) -> Option<usize> {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let mut j = i;
    if matches!(b.get(j), Some(b'b' | b'c')) {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    (b.get(j + hashes) == Some(&b'"')).then_some(hashes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `file:line` of the findings whose words start with `what`.
    fn places(findings: &[Finding], what: &str) -> Vec<String> {
        findings
            .iter()
            .filter(|f| f.what.starts_with(what))
            .map(|f| format!("{}:{}", f.file, f.line))
            .collect()
    }

    #[test]
    fn strings_comments_and_chars_are_blanked_lifetimes_kept() {
        let src = "fn a<'x>(s: &'x str) -> char { // }\n let b = \"{\"; let r = r#\"}\"#; '{' }\n/* { /* } */ */";
        let code = Code::new(src);
        assert_eq!(code.text.len(), src.len());
        assert_eq!(code.text.matches('{').count(), 1);
        assert_eq!(code.text.matches('}').count(), 1);
        assert!(code.text.contains("<'x>"), "{}", code.text);
        let fns = code.functions();
        assert_eq!(fns.len(), 1);
        assert_eq!((fns[0].start_line, fns[0].end_line), (1, 2));
    }

    fn component(name: &str, body_lines: usize) -> String {
        let body = "    let x = 1;\n".repeat(body_lines);
        format!("/// Doc.\n#[component]\npub fn {name}(\n    /// A prop.\n    n: u32,\n) -> impl IntoView {{\n{body}}}\n")
    }

    #[test]
    fn a_long_component_is_named_with_its_length() {
        // 4 signature lines, the body, the closing brace: 250 lines exactly is allowed.
        let ok = component("Short", 245);
        let long = component("Long", 246);
        let plain = "fn helper() {\n".to_string() + &"    let y = 2;\n".repeat(300) + "}\n";
        let text = format!("{ok}\n{long}\n{plain}");
        let (counts, findings) = ui_rules(&[("app-ui/src/a.rs", &text)]);
        let long_ones: Vec<&Finding> = findings
            .iter()
            .filter(|f| f.what.starts_with("component"))
            .collect();
        assert_eq!(long_ones.len(), 1, "{findings:?}");
        assert!(
            long_ones[0].what.starts_with("component Long is 251 lines"),
            "{}",
            long_ones[0]
        );
        assert_eq!(
            counts.longest_component.map(|(n, _, name)| (n, name)),
            Some((251, "Long".to_string()))
        );
    }

    #[test]
    fn spawn_local_needs_a_streaming_comment_and_a_cap() {
        let good = "fn a() {\n    // A streaming job: the duel's events arrive while it runs.\n    leptos::task::spawn_local(async move { bridge::duel(&c, f).await; });\n}\n";
        let bad = "fn b() {\n    // Reads the list.\n    spawn_local(async move { let _ = bridge::runs().await; });\n}\n";
        let (counts, findings) = ui_rules(&[("app-ui/src/a.rs", good), ("app-ui/src/b.rs", bad)]);
        assert_eq!(counts.spawn_local, 2);
        assert_eq!(places(&findings, "spawn_local"), ["app-ui/src/b.rs:3"]);
        let many = good.repeat(MAX_SPAWN_LOCAL + 1);
        let (_, findings) = ui_rules(&[("app-ui/src/a.rs", &many)]);
        assert!(
            findings
                .iter()
                .any(|f| f.what.starts_with("13 spawn_local")),
            "{findings:?}"
        );
    }

    #[test]
    fn an_error_signal_beside_a_plain_bridge_call_is_found_not_one_of_a_streaming_job() {
        let plain = "fn page() {\n    let error = RwSignal::new(None::<String>);\n    let go = move || spawn_local(async move { match bridge::runs().await { Err(e) => error.set(Some(e.message)), _ => {} } });\n}\n";
        let streaming = "fn duel() {\n    let error = RwSignal::new(None::<String>);\n    // A streaming job: its events arrive while it runs.\n    spawn_local(async move { if let Err(e) = bridge::duel(&c, f).await { error.set(Some(e.message)); } });\n}\n";
        let chart = "fn chart() {\n    let chart_error = RwSignal::new(None::<String>);\n    draw(chart_error).map_err(|e| bridge::js_text(&e));\n}\n";
        let typed = "fn typed() {\n    let export_error = RwSignal::new(None::<String>);\n    let list = load(move || bridge::runs());\n    let remove = act(|id: &String| bridge::run_remove(id));\n}\n";
        let (_, findings) = ui_rules(&[
            ("app-ui/src/p.rs", plain),
            ("app-ui/src/s.rs", streaming),
            ("app-ui/src/c.rs", chart),
            ("app-ui/src/t.rs", typed),
        ]);
        assert_eq!(places(&findings, "hand-made"), ["app-ui/src/p.rs:2"]);
    }

    #[test]
    fn typed_loading_counts_bindings_and_fields_not_other_calls() {
        let text = "fn a() {\n    let l = load(bridge::runs);\n    let x = crate::loading::act(|_: &()| go());\n    let s = S { task: act(move |t: &T| run(t)) };\n    let r = LocalResource::new(f);\n    on_click(move |_| act(id, what));\n    reload(l);\n}\n";
        assert_eq!(Code::new(text).typed_loading(), 4);
    }

    #[test]
    fn long_source_files_fail_and_test_files_do_not() {
        let long = "fn a() {}\n".repeat(MAX_FILE_LINES + 1);
        let with_tests = format!(
            "{}#[cfg(test)]\nmod tests {{\n{}}}\n",
            "fn a() {}\n".repeat(900),
            "fn t() {}\n".repeat(300)
        );
        let just = "fn a() {}\n".repeat(MAX_FILE_LINES);
        let files: Vec<(&str, &str)> = vec![
            ("cli/src/big.rs", &long),
            ("cli/src/tested.rs", &with_tests),
            ("cli/src/just.rs", &just),
            ("cli/tests/serve.rs", &long),
            ("compute/src/cuda/gpu_tests.rs", &long),
            ("compute/src/train/tests.rs", &long),
        ];
        let found: Vec<String> = file_lengths(files.into_iter())
            .iter()
            .map(|f| f.to_string())
            .collect();
        // Inline tests count: a source file is read whole.
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with("cli/src/big.rs: 1001 lines"),
            "{found:?}"
        );
        assert!(
            found[1].starts_with("cli/src/tested.rs: 1203 lines"),
            "{found:?}"
        );
    }
}
