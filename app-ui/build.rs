//! Renders `docs-content/**/*.md` to HTML at build time (pulldown-cmark), so the Docs page ships
//! finished pages and the WASM carries no Markdown parser. Links between the pages become
//! in-app links (`#/docs/<path>`); a link to a missing page fails the build.
//!
//! Also tokenizes every kernel family's CUDA source (the `kernels` crate's registry, the very
//! text the app compiles in) with the small highlighter of `build/cuda_highlight.rs`, so the
//! Kernel Reveal page ships the classified token spans and the WASM carries no tokenizer.
// A build script reports a failure by panicking: cargo prints the message and stops the build.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag};

// `render` and `highlight` serve the library's tests (the page renders the tokens itself).
#[allow(dead_code)]
#[path = "build/cuda_highlight.rs"]
mod cuda_highlight;

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            markdown_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

/// `a/b/../c` → `a/c` (no filesystem access).
fn normalise(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// Writes `kernel_sources.rs`: every kernel family's highlighted tokens, as (start byte, end
/// byte, class index) into the family's source.
fn highlight_kernel_sources(out_dir: &Path) {
    let mut code = String::from(
        "/// Every kernel family's highlighted tokens, found by build.rs (build/cuda_highlight.rs) in\n\
         /// the `kernels` registry's sources: (family name, [(start byte, end byte, class index)]).\n\
         pub static HIGHLIGHT_TOKENS: &[FamilyTokens] = &[\n",
    );
    for family in kernels::FAMILIES {
        let _ = write!(code, "    ({:?}, &[", family.name);
        for t in cuda_highlight::tokens(family.source) {
            let _ = write!(code, "({},{},{}),", t.start, t.end, t.class.index());
        }
        code.push_str("]),\n");
    }
    code.push_str("];\n");
    let out = out_dir.join("kernel_sources.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}

fn main() {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    highlight_kernel_sources(&out_dir);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs-content");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    files.sort();
    let slug_of = |p: &Path| -> String {
        let rel = p
            .strip_prefix(&root)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/");
        rel.trim_end_matches(".md").to_string()
    };
    let slugs: Vec<String> = files.iter().map(|p| slug_of(p)).collect();
    let mut code = String::from("/// Every page of docs-content/, rendered: (path without .md, title, HTML).\npub static DOCS: &[(&str, &str, &str)] = &[\n");
    for (file, slug) in files.iter().zip(&slugs) {
        println!("cargo:rerun-if-changed={}", file.display());
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let title = text
            .lines()
            .find_map(|l| l.strip_prefix("# "))
            .unwrap_or(slug)
            .trim()
            .to_string();
        let dir = slug.rsplit_once('/').map_or("", |(d, _)| d);
        let events = Parser::new_ext(&text, Options::ENABLE_TABLES).map(|ev| match ev {
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let dest = dest_url.to_string();
                let (target, anchor) = dest.split_once('#').unwrap_or((&dest, ""));
                let internal = !dest.contains("://") && target.ends_with(".md");
                let dest_url = if internal {
                    let joined = if dir.is_empty() {
                        target.to_string()
                    } else {
                        format!("{dir}/{target}")
                    };
                    match normalise(&joined) {
                        // Inside docs-content: an in-app link, which must exist.
                        Some(n) if slugs.contains(&n.trim_end_matches(".md").to_string()) => {
                            let s = n.trim_end_matches(".md").to_string();
                            // The router owns the fragment, so an anchor inside the page is dropped.
                            let _ = anchor;
                            CowStr::from(format!("#/docs/{s}"))
                        }
                        // Outside it (docs/benchmarks.md, README.md): the repository's file.
                        _ if joined.starts_with("../") || dest.starts_with("../") => dest_url,
                        _ => panic!(
                            "{slug}.md links to {dest}, which is not a page of docs-content/"
                        ),
                    }
                } else {
                    dest_url
                };
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                })
            }
            other => other,
        });
        let mut body = String::new();
        html::push_html(&mut body, events);
        let _ = writeln!(code, "    ({slug:?}, {title:?}, {body:?}),");
    }
    code.push_str("];\n");
    let out = out_dir.join("docs.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
