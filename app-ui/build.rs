//! Renders `docs-content/**/*.md` to HTML at build time (pulldown-cmark), so the Docs page ships
//! finished pages and the WASM carries no Markdown parser. Links between the pages become
//! in-app links (`#/docs/<path>`); a link to a missing page fails the build.
//!
//! Measured figures are not typed into the pages: each `{{fig:NAME}}` is replaced here by figure
//! NAME of `docs-content/figures.json`, read from its results file under `docs/results/`, with a
//! numbered note naming the file, machine and date (`showdown_core::docs_figures::render_page`).
//! An unknown figure, a missing results file or a selector that finds nothing fails the build
//! with the page, the figure and the file; so does a page citing a path outside the repository.
//!
//! Also tokenizes every kernel family's CUDA source (the `kernels` crate's registry, the very
//! text the app compiles in) with the small highlighter of `kernels::highlight`, so the Kernel
//! Reveal page ships the classified token spans and the WASM carries no tokenizer.
//!
//! What it writes is checked here, a failed check failing the build: every family's spans
//! render as the highlighter's HTML; the Docs pages named in checks (index, layers/conv2d,
//! training/backprop) are there, titled, with their links to each other made in-app. Finding a
//! page by its fragment is `showdown_core::pages`, tested there over every page of docs-content.
// A build script reports a failure by panicking: cargo prints the message and stops the build.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kernels::highlight;
use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag};
use showdown_core::docs_figures;

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

/// Writes `kernel_sources.rs`: every kernel family's highlighted tokens, as
/// `kernels::highlight::Span`s (start byte, end byte, class index) into the family's source.
fn highlight_kernel_sources(out_dir: &Path) {
    let mut code = String::from(
        "/// Every kernel family's highlighted tokens, found by build.rs (kernels::highlight) in\n\
         /// the `kernels` registry's sources: (family name, [(start byte, end byte, class index)]).\n\
         pub static HIGHLIGHT_TOKENS: &[FamilyTokens] = &[\n",
    );
    for family in kernels::FAMILIES {
        let spans = highlight::spans(family.source)
            .unwrap_or_else(|| panic!("{}: the source is over 4 GiB", family.name));
        // What the page will render from these spans: the highlighter's HTML.
        assert!(
            highlight::render_spans(family.source, &spans)
                .is_some_and(|html| html == highlight::highlight(family.source)),
            "{}: the spans do not render as the highlighter's HTML",
            family.name
        );
        let _ = write!(code, "    ({:?}, &[", family.name);
        for (start, end, class) in spans {
            let _ = write!(code, "({start},{end},{class}),");
        }
        code.push_str("]),\n");
    }
    code.push_str("];\n");
    let out = out_dir.join("kernel_sources.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}

/// The pages the app links to by name are there, rendered, and link to each other in-app.
fn check_docs(pages: &[(String, String, String)]) {
    assert!(pages.len() >= 13, "{} pages in docs-content/", pages.len());
    let page = |path: &str| {
        pages
            .iter()
            .find(|(p, _, _)| p == path)
            .unwrap_or_else(|| panic!("no page {path}.md in docs-content/"))
    };
    // `#/docs` shows the index.
    page("index");
    let (_, title, html) = page("layers/conv2d");
    assert!(
        title.to_lowercase().contains("conv"),
        "conv2d's title {title}"
    );
    assert!(html.contains("<h1>"), "conv2d: no <h1> rendered");
    // Its measured figures came from the results files, each with its note and the sources.
    assert!(
        html.contains("<sup class=\"fig-src\"") && html.contains("docs/results/"),
        "conv2d: no figure rendered from docs/results/"
    );
    assert!(
        !html.contains("{{fig:"),
        "conv2d: a figure placeholder left"
    );
    // Links between pages became in-app links.
    let (_, _, html) = page("training/backprop");
    assert!(
        html.contains("href=\"#/docs/layers/maxpool\""),
        "backprop: no in-app link to layers/maxpool"
    );
    assert!(
        !html.contains(".md\""),
        "backprop: a .md link was left as a file link"
    );
}

fn main() {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    highlight_kernel_sources(&out_dir);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs-content");
    println!("cargo:rerun-if-changed={}", root.display());
    // The figures' registry and the results files they are read from.
    let registry_path = root.join("figures.json");
    let results_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/results");
    println!("cargo:rerun-if-changed={}", registry_path.display());
    println!("cargo:rerun-if-changed={}", results_dir.display());
    let registry = std::fs::read_to_string(&registry_path)
        .map_err(|e| docs_figures::FigureError::Registry(e.to_string()))
        .and_then(|text| docs_figures::parse_registry(&text))
        .unwrap_or_else(|e| panic!("{e}"));
    let results = docs_figures::load_results(&registry, |file| {
        let path = results_dir.join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        std::fs::read_to_string(&path).map_err(|e| e.to_string())
    });
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
    let mut code = String::from("/// Every page of docs-content/, rendered.\npub static DOCS: &[showdown_core::pages::DocPage<'static>] = &[\n");
    // (path, title, HTML) of every page, for the checks below.
    let mut pages: Vec<(String, String, String)> = Vec::new();
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
        if let Some((line, what)) = docs_figures::outside_citations(&text).into_iter().next() {
            panic!(
                "docs-content/{slug}.md line {line}: cites a path outside the repository: {what}"
            );
        }
        // Every {{fig:NAME}} replaced by its figure from docs/results/ (or the build fails).
        let text = docs_figures::render_page(slug, &text, &registry, &results)
            .unwrap_or_else(|e| panic!("{e}"));
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
        let _ = writeln!(
            code,
            "    showdown_core::pages::DocPage {{ path: {slug:?}, title: {title:?}, html: {body:?} }},"
        );
        pages.push((slug.clone(), title, body));
    }
    code.push_str("];\n");
    check_docs(&pages);
    let out = out_dir.join("docs.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
