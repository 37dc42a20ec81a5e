//! A small CUDA C tokenizer for the kernel sources of this crate's registry: it classifies the
//! tokens of a source ([`tokens`]), and [`render`] turns source + tokens into HTML, each
//! classified token a `<span class="hl-…">`, all text HTML-escaped ([`highlight`] does both).
//!
//! The front end's build script (`app-ui/build.rs`) runs [`spans`] over every family's source
//! and ships the result, byte ranges into the source the app already carries (about a sixth of
//! the size of the HTML); the Kernel Reveal page turns them into HTML with [`render_spans`], so
//! the WASM carries no tokenizer. Both the build script and this module's tests check that
//! this gives [`highlight`]'s HTML for every family.
//!
//! Why not syntect: its C++ grammar nests a span for every scope (about 14× the source in HTML,
//! 1.2 MB for our kernels) and knows none of CUDA's qualifiers, built-in variables, intrinsics or
//! PTX tensor-core mnemonics, which are what this page is about.

/// What a highlighted token is; each is one CSS class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenClass {
    /// C/C++ keyword (`for`, `return`, `template`, `asm`).
    Keyword,
    /// A type name (built-in, fixed-width, CUDA vector types, and names the source typedefs).
    Type,
    /// A CUDA qualifier, built-in variable or intrinsic (`__global__`, `threadIdx`,
    /// `__syncthreads`, `wmma`).
    Builtin,
    /// A PTX tensor-core instruction inside an `asm` string (`mma.sync…`, `ldmatrix…`).
    TensorCore,
    /// `// …` or `/* … */`.
    Comment,
    /// A string or character literal.
    String,
    /// A numeric literal.
    Number,
    /// A preprocessor directive (`#define`, `#pragma unroll`).
    Preprocessor,
}

impl TokenClass {
    /// Every class, in the order of their index in a [`Span`].
    pub const ALL: [TokenClass; 8] = [
        TokenClass::Keyword,
        TokenClass::Type,
        TokenClass::Builtin,
        TokenClass::TensorCore,
        TokenClass::Comment,
        TokenClass::String,
        TokenClass::Number,
        TokenClass::Preprocessor,
    ];

    /// Index of the class in [`TokenClass::ALL`].
    pub fn index(self) -> u8 {
        TokenClass::ALL.iter().position(|c| *c == self).unwrap_or(0) as u8
    }

    /// The CSS class(es) of the token's `<span>`.
    pub fn css(self) -> &'static str {
        match self {
            TokenClass::Keyword => "hl-keyword",
            TokenClass::Type => "hl-type",
            TokenClass::Builtin => "hl-builtin",
            TokenClass::TensorCore => "hl-builtin hl-tensor",
            TokenClass::Comment => "hl-comment",
            TokenClass::String => "hl-string",
            TokenClass::Number => "hl-number",
            TokenClass::Preprocessor => "hl-preprocessor",
        }
    }
}

const KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "asm",
    "auto",
    "break",
    "case",
    "class",
    "const",
    "constexpr",
    "continue",
    "decltype",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "explicit",
    "extern",
    "false",
    "for",
    "goto",
    "if",
    "inline",
    "namespace",
    "new",
    "nullptr",
    "operator",
    "private",
    "public",
    "register",
    "return",
    "sizeof",
    "static",
    "static_assert",
    "struct",
    "switch",
    "template",
    "this",
    "true",
    "typedef",
    "typename",
    "union",
    "using",
    "virtual",
    "volatile",
    "while",
];

const TYPES: &[&str] = &[
    "bool",
    "char",
    "double",
    "float",
    "int",
    "long",
    "short",
    "signed",
    "unsigned",
    "void",
    "size_t",
    "half",
    "half2",
    "__half",
    "__half2",
    "nv_bfloat16",
    "__nv_bfloat16",
    "__nv_bfloat162",
    "dim3",
    "float2",
    "float4",
    "int2",
    "int4",
    "uint2",
    "uint4",
    "short2",
    "ushort2",
];

/// CUDA identifiers that do not start with `__` (those that do are all qualifiers or
/// intrinsics).
const BUILTINS: &[&str] = &[
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "atomicAdd",
    "atomicMax",
    "atomicMin",
    "atomicCAS",
    "atomicExch",
    "atomicOr",
    "atomicAnd",
    "wmma",
    "mma",
    "nvcuda",
];

/// PTX mnemonics that run on (or feed) the tensor cores.
const TENSOR_CORE_PTX: &[&str] = &[
    "mma.",
    "wmma.",
    "wgmma.",
    "ldmatrix.",
    "stmatrix.",
    "movmatrix.",
];

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// HTML-escapes `text` onto `out`.
pub fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// A classified token: bytes `start..end` of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// What it is.
    pub class: TokenClass,
}

/// A token in the compact form the front end ships: (first byte, one past the last byte, index
/// of its class in [`TokenClass::ALL`]).
pub type Span = (u32, u32, u8);

/// `src` as HTML: `tokens` (ordered, not overlapping) in `<span class="hl-…">`, the rest as
/// escaped text.
pub fn render(src: &str, tokens: &[Token]) -> String {
    let mut out = String::with_capacity(src.len() * 2);
    let mut at = 0;
    for t in tokens {
        escape_into(&mut out, &src[at..t.start]);
        out.push_str("<span class=\"");
        out.push_str(t.class.css());
        out.push_str("\">");
        escape_into(&mut out, &src[t.start..t.end]);
        out.push_str("</span>");
        at = t.end;
    }
    escape_into(&mut out, &src[at..]);
    out
}

/// Names the source declares as types: the last identifier of each `typedef …;`.
pub fn typedef_names(src: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = src;
    while let Some(at) = rest.find("typedef ") {
        let after = &rest[at + "typedef ".len()..];
        let Some(end) = after.find(';') else { break };
        let decl = &after[..end];
        let last = decl
            .rsplit(|c: char| !is_ident_char(c))
            .find(|w| !w.is_empty() && w.starts_with(is_ident_start));
        if let Some(name) = last {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
        rest = &after[end..];
    }
    names
}

/// The class of identifier `word`, given the source's own type names.
pub fn classify_identifier(word: &str, user_types: &[String]) -> Option<TokenClass> {
    if KEYWORDS.contains(&word) {
        Some(TokenClass::Keyword)
    } else if TYPES.contains(&word)
        || (word.ends_with("_t") && word.len() > 2)
        || user_types.iter().any(|t| t == word)
    {
        Some(TokenClass::Type)
    } else if word.starts_with("__") || BUILTINS.contains(&word) {
        Some(TokenClass::Builtin)
    } else {
        None
    }
}

/// The tokens of the string literal at `offset..offset + lit.len()`: string pieces, and the PTX
/// tensor-core mnemonics inside it as their own tokens.
fn string_literal(out: &mut Vec<Token>, offset: usize, lit: &str) {
    let mut piece_start = 0;
    let mut i = 0;
    while i < lit.len() {
        let rest = &lit[i..];
        let at_word_start = i == 0 || !lit[..i].ends_with(|c: char| is_ident_char(c) || c == '.');
        if at_word_start && TENSOR_CORE_PTX.iter().any(|m| rest.starts_with(m)) {
            let len = rest
                .find(|c: char| !(is_ident_char(c) || c == '.'))
                .unwrap_or(rest.len());
            if piece_start < i {
                out.push(Token {
                    start: offset + piece_start,
                    end: offset + i,
                    class: TokenClass::String,
                });
            }
            out.push(Token {
                start: offset + i,
                end: offset + i + len,
                class: TokenClass::TensorCore,
            });
            i += len;
            piece_start = i;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    if piece_start < lit.len() {
        out.push(Token {
            start: offset + piece_start,
            end: offset + lit.len(),
            class: TokenClass::String,
        });
    }
}

/// Byte length of the literal starting with quote `q` at the start of `s` (to the closing quote,
/// or the end of the line when unterminated).
fn literal_len(s: &str, q: char) -> usize {
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == q {
            return i + 1;
        } else if c == '\n' {
            return i;
        }
    }
    s.len()
}

/// Byte length of the number starting at the start of `s`.
fn number_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let exponent_sign = (b == b'+' || b == b'-')
            && i > 0
            && matches!(bytes[i - 1], b'e' | b'E' | b'p' | b'P')
            && !s.starts_with("0x")
            && !s.starts_with("0X");
        if b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || exponent_sign {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// CUDA C `src` as HTML: [`render`] of its [`tokens`].
pub fn highlight(src: &str) -> String {
    render(src, &tokens(src))
}

/// The [`tokens`] of CUDA C `src` as [`Span`]s; `None` if `src` is too long for `u32` offsets.
pub fn spans(src: &str) -> Option<Vec<Span>> {
    tokens(src)
        .iter()
        .map(|t| {
            Some((
                u32::try_from(t.start).ok()?,
                u32::try_from(t.end).ok()?,
                t.class.index(),
            ))
        })
        .collect()
}

/// `src` as HTML from its [`spans`] (shipped by a build script): [`render`] of the tokens they
/// stand for. `None` if a span does not fit `src` (out of order, overlapping, past its end, off
/// a character boundary, or an unknown class): show the plain text then.
pub fn render_spans(src: &str, spans: &[Span]) -> Option<String> {
    let mut tokens = Vec::with_capacity(spans.len());
    let mut at = 0;
    for &(start, end, class) in spans {
        let (start, end) = (usize::try_from(start).ok()?, usize::try_from(end).ok()?);
        let class = *TokenClass::ALL.get(usize::from(class))?;
        if start < at || end < start || !src.is_char_boundary(start) || !src.is_char_boundary(end) {
            return None;
        }
        tokens.push(Token { start, end, class });
        at = end;
    }
    Some(render(src, &tokens))
}

/// The classified tokens of CUDA C `src`, in order; whitespace, punctuation and plain
/// identifiers are not tokens.
pub fn tokens(src: &str) -> Vec<Token> {
    let user_types = typedef_names(src);
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < src.len() {
        let rest = &src[i..];
        let c = rest.chars().next().unwrap_or(' ');
        if c == '\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if c == ' ' || c == '\t' || c == '\r' {
            i += 1;
            continue;
        }
        let was_line_start = line_start;
        line_start = false;
        let mut token = |len: usize, class: TokenClass| {
            out.push(Token {
                start: i,
                end: i + len,
                class,
            });
            len
        };
        let len = if rest.starts_with("//") {
            token(rest.find('\n').unwrap_or(rest.len()), TokenClass::Comment)
        } else if let Some(body) = rest.strip_prefix("/*") {
            token(
                body.find("*/").map_or(rest.len(), |e| e + 4),
                TokenClass::Comment,
            )
        } else if c == '#' && was_line_start {
            // `#pragma …` and `#include …` are one token to the end of the line; other
            // directives are `#word` followed by ordinary tokens (macro bodies are code).
            let after_hash = &rest[1..];
            let spaces = after_hash.len() - after_hash.trim_start_matches(' ').len();
            let name_len = after_hash[spaces..]
                .find(|ch: char| !is_ident_char(ch))
                .unwrap_or(after_hash.len() - spaces);
            let name = &after_hash[spaces..spaces + name_len];
            let len = if name == "pragma" || name == "include" {
                rest.find('\n').unwrap_or(rest.len())
            } else {
                1 + spaces + name_len
            };
            token(len, TokenClass::Preprocessor)
        } else if c == '"' {
            let len = literal_len(rest, '"');
            string_literal(&mut out, i, &rest[..len]);
            len
        } else if c == '\'' {
            token(literal_len(rest, '\''), TokenClass::String)
        } else if c.is_ascii_digit()
            || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit()))
        {
            token(number_len(rest), TokenClass::Number)
        } else if is_ident_start(c) {
            let len = rest
                .find(|ch: char| !is_ident_char(ch))
                .unwrap_or(rest.len());
            match classify_identifier(&rest[..len], &user_types) {
                Some(class) => token(len, class),
                None => len,
            }
        } else {
            c.len_utf8()
        };
        i += len.max(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_cuda_tokens() {
        let html = highlight("__global__ void k(const float* __restrict__ x, u32 n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    __syncthreads();\n}\ntypedef unsigned int u32;\n");
        assert!(html.starts_with(
            "<span class=\"hl-builtin\">__global__</span> <span class=\"hl-type\">void</span> k("
        ));
        assert!(html.contains(
            "<span class=\"hl-keyword\">const</span> <span class=\"hl-type\">float</span>*"
        ));
        assert!(
            html.contains("<span class=\"hl-type\">u32</span> n"),
            "typedef'd names are types: {html}"
        );
        assert!(html.contains("<span class=\"hl-builtin\">blockIdx</span>.x"));
        assert!(html.contains("<span class=\"hl-builtin\">threadIdx</span>.x"));
        assert!(html.contains("<span class=\"hl-builtin\">__syncthreads</span>()"));
    }

    #[test]
    fn comments_strings_numbers_and_directives() {
        let src = "#pragma unroll\n#define N 4 // four\n#if __CUDA_ARCH__ >= 800\nx = 1.5e-3f + 0x7fffu; /* a < b */ c = 'a';\n";
        let html = highlight(src);
        assert!(html.contains("<span class=\"hl-preprocessor\">#pragma unroll</span>\n"));
        assert!(html.contains("<span class=\"hl-preprocessor\">#define</span> N <span class=\"hl-number\">4</span> <span class=\"hl-comment\">// four</span>"));
        assert!(html.contains("<span class=\"hl-preprocessor\">#if</span> <span class=\"hl-builtin\">__CUDA_ARCH__</span> &gt;= <span class=\"hl-number\">800</span>"));
        assert!(html.contains(
            "<span class=\"hl-number\">1.5e-3f</span> + <span class=\"hl-number\">0x7fffu</span>"
        ));
        assert!(html.contains("<span class=\"hl-comment\">/* a &lt; b */</span>"));
        assert!(html.contains("<span class=\"hl-string\">&#39;a&#39;</span>"));
    }

    #[test]
    fn marks_tensor_core_ptx_inside_asm_strings() {
        let html = highlight(
            r#"asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0}, [%1];\n" : "=r"(d));"#,
        );
        assert!(html.starts_with(
            "<span class=\"hl-keyword\">asm</span> <span class=\"hl-keyword\">volatile</span>("
        ));
        assert!(html.contains("<span class=\"hl-string\">&quot;</span><span class=\"hl-builtin hl-tensor\">mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32</span><span class=\"hl-string\"> {%0}, [%1];\\n&quot;</span>"));
        let ld = highlight(r#""ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0}""#);
        assert!(ld.contains("hl-tensor\">ldmatrix.sync.aligned.m8n8.x4.shared.b16</span>"));
        assert!(!highlight(r#""cvt.rn.f16.f32 %0""#).contains("hl-tensor"));
    }

    #[test]
    fn every_character_survives_escaped() {
        let src = "a<b && c>\"d\" // <e>\n/* unterminated";
        let html = highlight(src);
        let mut text = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' if in_tag => in_tag = false,
                c if !in_tag => text.push(c),
                _ => {}
            }
        }
        let unescaped = text
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&");
        assert_eq!(unescaped, src);
        assert!(!html.contains("<b"), "no raw markup from the source");
    }

    /// What the Kernel Reveal page shows: every family's build-time spans render as the
    /// highlighter's HTML.
    #[test]
    fn every_family_ships_highlighted_source_equal_to_the_build_time_highlighter() {
        for (i, class) in TokenClass::ALL.iter().enumerate() {
            assert_eq!(usize::from(class.index()), i);
        }
        for family in crate::FAMILIES {
            let spans = spans(family.source).expect("u32 offsets");
            let html = render_spans(family.source, &spans).expect("the spans fit the source");
            assert_eq!(html, highlight(family.source), "{}", family.name);
            assert!(
                html.matches("class=\"hl-keyword\"").count() > 10,
                "{}",
                family.name
            );
            assert!(
                html.contains("<span class=\"hl-builtin\">__global__</span>"),
                "{}",
                family.name
            );
        }
        let train = crate::family("train").expect("train");
        let html = render_spans(train.source, &spans(train.source).expect("u32 offsets"))
            .expect("the spans fit the source");
        assert!(html.contains("hl-tensor\">mma.sync.aligned.m16n8k16"));
    }

    #[test]
    fn tokens_that_do_not_fit_the_source_fall_back_to_plain_text() {
        assert_eq!(render_spans("a<b", &[]).as_deref(), Some("a&lt;b"));
        assert!(render_spans("abc", &[(1, 9, 0)]).is_none());
        assert!(render_spans("abc", &[(0, 1, 99)]).is_none());
        assert!(render_spans("abc", &[(2, 3, 0), (0, 1, 0)]).is_none());
        assert!(render_spans("abc", &[(2, 1, 0)]).is_none());
        assert!(
            render_spans("é", &[(0, 1, 0)]).is_none(),
            "inside a character"
        );
        assert_eq!(
            render_spans("a<b", &[(1, 2, 4)]).as_deref(),
            Some("a<span class=\"hl-comment\">&lt;</span>b")
        );
    }

    #[test]
    fn typedef_names_are_collected() {
        let names =
            typedef_names("typedef unsigned short u16;\nstruct F32 { typedef float T; };\n");
        assert_eq!(names, ["u16", "T"]);
    }
}
