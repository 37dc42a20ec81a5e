//! The Docs pages against the committed results files: every `{{fig:NAME}}` of every page of
//! `docs-content/` resolves through `docs-content/figures.json` to a value of its file under
//! `docs/results/`; no page writes a measurement by hand (a number with a unit outside
//! placeholders and fenced code, unless the registry allows it with a reason); no page cites a
//! file outside the repository or a results file that is not committed. The front end's build
//! script renders the pages with the same functions ([`showdown_core::docs_figures`]), so what
//! passes here is what the app shows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails by panicking
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use showdown_core::docs_figures::{
    load_results, outside_citations, parse_registry, placeholders, render_page,
    unallowed_measurements, Registry, Results,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every page of docs-content/: (path without `.md`, Markdown), sorted by path.
fn pages() -> Vec<(String, String)> {
    let root = repo().join("docs-content");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                let rel = p
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((rel.trim_end_matches(".md").to_string(), text));
            }
        }
    }
    out.sort();
    assert!(out.len() >= 13, "{} pages in docs-content/", out.len());
    out
}

fn registry() -> Registry {
    let path = repo().join("docs-content/figures.json");
    parse_registry(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{e}"))
}

fn results(reg: &Registry) -> Results {
    let dir = repo().join("docs/results");
    load_results(reg, |f| {
        std::fs::read_to_string(dir.join(f)).map_err(|e| e.to_string())
    })
}

/// Named `docs_figures::…`, so that `cargo test -p showdown-core docs_figures` runs them with the
/// module's unit tests.
mod docs_figures {
    use super::*;

    #[test]
    fn every_figure_resolves_from_its_results_file() {
        let reg = registry();
        let res = results(&reg);
        for (file, r) in &res {
            assert!(r.is_ok(), "docs/results/{file}: {:?}", r.as_ref().err());
        }
        let mut used_figures = BTreeSet::new();
        let mut failures = Vec::new();
        for (page, md) in pages() {
            match render_page(&page, &md, &reg, &res) {
                Ok(html) => assert!(!html.contains("{{fig:"), "{page}: a placeholder left"),
                Err(e) => failures.push(e.to_string()),
            }
            if let Ok(found) = placeholders(&page, &md) {
                used_figures.extend(found.into_iter().map(|p| p.name));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        // The registry holds what the pages use, and nothing else.
        let unused: Vec<&String> = reg
            .figures
            .keys()
            .filter(|k| !used_figures.contains(*k))
            .collect();
        assert!(unused.is_empty(), "figures no page uses: {unused:?}");
        let used_sources: BTreeSet<&str> = reg
            .figures
            .values()
            .flat_map(|f| {
                std::iter::once(f.source.as_str()).chain(f.per.as_ref().map(|p| p.source.as_str()))
            })
            .collect();
        let idle: Vec<&String> = reg
            .sources
            .keys()
            .filter(|k| !used_sources.contains(k.as_str()))
            .collect();
        assert!(idle.is_empty(), "sources no figure uses: {idle:?}");
    }

    #[test]
    fn no_page_writes_a_measurement_by_hand() {
        let reg = registry();
        let pages = pages();
        let mut bare = Vec::new();
        for (page, md) in &pages {
            for b in unallowed_measurements(page, md, &reg) {
                bare.push(format!("docs-content/{page}.md:{}: {}", b.line, b.text));
            }
        }
        assert!(
            bare.is_empty(),
            "measured numbers must be {{{{fig:NAME}}}} placeholders (docs-content/figures.json) \
             or left out; not measurements go in its \"allow\" list with a reason:\n{}",
            bare.join("\n")
        );
        // The allow-list stays short and each entry is still needed and justified.
        assert!(reg.allow.len() <= 12, "{} allowed numbers", reg.allow.len());
        for a in &reg.allow {
            assert!(
                !a.why.trim().is_empty(),
                "{} on {}: no reason",
                a.text,
                a.page
            );
            let md = &pages
                .iter()
                .find(|(p, _)| *p == a.page)
                .unwrap_or_else(|| panic!("allowed {:?}: no page {}", a.text, a.page))
                .1;
            let all = showdown_core::docs_figures::bare_measurements(md);
            assert!(
                all.iter().any(|b| b.text == a.text),
                "allowed {:?} no longer appears on {}",
                a.text,
                a.page
            );
        }
    }

    #[test]
    fn no_page_cites_a_path_outside_the_repository() {
        let mut bad = Vec::new();
        for (page, md) in pages() {
            for (line, what) in outside_citations(&md) {
                bad.push(format!("docs-content/{page}.md:{line}: {what}"));
            }
            // Results files named on a page are committed.
            let mut rest = md.as_str();
            while let Some(p) = rest.find("docs/results/") {
                let tail = &rest[p + "docs/results/".len()..];
                let name: String = tail
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                    .collect();
                let name = name.trim_end_matches('.');
                if !name.is_empty() && !repo().join("docs/results").join(name).is_file() {
                    bad.push(format!(
                        "docs-content/{page}.md: docs/results/{name} is not committed"
                    ));
                }
                rest = tail;
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// Statements that were true once and are not any more (issue 16): they stay gone.
    #[test]
    fn stale_statements_stay_gone() {
        let stale = [
            ("layers/conv2d", "every kernel\ndoes FP32 arithmetic"),
            ("layers/conv2d", "does FP32 arithmetic on CUDA cores"),
            ("training/adam", "six per step"),
            ("training/adam", "six `adam` launches"),
            ("training/backprop", "one `adam` per tensor"),
            ("tooling/nsys-nvtx", "six `adam` launches"),
            ("low-level/matmul-cpu-gpu", "does not speed the duel up"),
            (
                "low-level/matmul-cpu-gpu",
                "All of them multiply and accumulate in FP32 on CUDA cores",
            ),
            (
                "low-level/raw-cuda",
                "tensor-core counts of the `train` kernels are zero",
            ),
            ("layers/dense", "one thread per weight"),
        ];
        let pages = pages();
        for (page, phrase) in stale {
            let md = &pages.iter().find(|(p, _)| p == page).unwrap().1;
            let flat = md.split_whitespace().collect::<Vec<_>>().join(" ");
            let phrase = phrase.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                !flat.contains(&phrase),
                "{page}: \"{phrase}\" is no longer true"
            );
        }
    }
}
