//! The app's pages: the lab's acts and the Docs, each with the URL fragment that routes to it
//! and its title in the navigation bar. The front end routes on the fragment (`#/setup`,
//! `#/duel`, …), so a static file server needs no fallback and a reload keeps the page; it
//! renders each page in a module of its own, `app-ui/src/pages/<module>.rs` (named on each
//! [`Page`]).
//!
//! The Docs page shows the pages of `docs-content/` (rendered to HTML when the front end is
//! built, as [`DocPage`]s), each at `#/docs/<path>`: [`doc_hash`], [`doc_path`], [`find_doc`].

/// A page of the lab.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Page {
    /// Home / Doctor: the lab's story, the GPU, driver, NVRTC and NVML status (`home.rs`).
    Home,
    /// Act I – The Setup: digits, every layer's activations, the convolution at a pixel
    /// (`setup.rs`).
    Setup,
    /// Act II – The Duel: FP32 against mixed precision, trained live (`duel.rs`).
    Duel,
    /// Act III – The Kernel Reveal: the kernels' sources, compiled facts and benchmarks
    /// (`kernels.rs`).
    Kernels,
    /// Act IV – Occupancy & Profiling: the occupancy calculator and Nsight Compute imports
    /// (`profiling.rs`).
    Profiling,
    /// Act V – The Verdict: what this machine showed across the acts (`verdict.rs`).
    Verdict,
    /// Docs: the pages of `docs-content/`, at `#/docs/<path>` (`docs.rs`).
    Docs,
}

impl Page {
    /// Every page, in the order of the navigation bar.
    pub const ALL: [Page; 7] = [
        Page::Home,
        Page::Setup,
        Page::Duel,
        Page::Kernels,
        Page::Profiling,
        Page::Verdict,
        Page::Docs,
    ];

    /// The URL fragment of the page.
    pub fn hash(self) -> &'static str {
        match self {
            Page::Home => "#/",
            Page::Setup => "#/setup",
            Page::Duel => "#/duel",
            Page::Kernels => "#/kernels",
            Page::Profiling => "#/profiling",
            Page::Verdict => "#/verdict",
            Page::Docs => "#/docs",
        }
    }

    /// The page's title in the navigation bar.
    pub fn title(self) -> &'static str {
        match self {
            Page::Home => "Home · Doctor",
            Page::Setup => "Act I · The Setup",
            Page::Duel => "Act II · The Duel",
            Page::Kernels => "Act III · The Kernel Reveal",
            Page::Profiling => "Act IV · Occupancy & Profiling",
            Page::Verdict => "Act V · The Verdict",
            Page::Docs => "Docs",
        }
    }

    /// The page's short title, for a compact navigation bar (`II · Duel`); the full
    /// [`title`](Page::title) goes in the link's tooltip.
    pub fn short_title(self) -> &'static str {
        match self {
            Page::Home => "Home",
            Page::Setup => "I · Setup",
            Page::Duel => "II · Duel",
            Page::Kernels => "III · Kernels",
            Page::Profiling => "IV · Profiling",
            Page::Verdict => "V · Verdict",
            Page::Docs => "Docs",
        }
    }

    /// The page a fragment names (unknown fragments show Home; `#/docs/<path>` is Docs).
    pub fn from_hash(hash: &str) -> Page {
        if doc_path(hash).is_some() {
            return Page::Docs;
        }
        Page::ALL
            .into_iter()
            .find(|p| p.hash() == hash && *p != Page::Home)
            .unwrap_or(Page::Home)
    }
}

/// A page of `docs-content/`, rendered.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DocPage<'a> {
    /// Its path under `docs-content/`, without `.md` (`layers/conv2d`).
    pub path: &'a str,
    /// Its title (its first `# ` heading).
    pub title: &'a str,
    /// Its HTML.
    pub html: &'a str,
}

/// The fragment of the docs page at `path` (`#/docs/layers/conv2d`).
pub fn doc_hash(path: &str) -> String {
    format!("#/docs/{path}")
}

/// The docs page path a fragment names (`index` for `#/docs` and `#/docs/`); `None` if the
/// fragment is not one of the Docs page's.
pub fn doc_path(hash: &str) -> Option<&str> {
    let rest = hash.strip_prefix("#/docs")?;
    if rest.is_empty() || rest == "/" {
        Some("index")
    } else {
        rest.strip_prefix('/')
    }
}

/// The page of `docs` a fragment names, if it exists.
pub fn find_doc<'d, 'a>(docs: &'d [DocPage<'a>], hash: &str) -> Option<&'d DocPage<'a>> {
    let path = doc_path(hash)?;
    docs.iter().find(|d| d.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_round_trips_through_its_hash() {
        for p in Page::ALL {
            assert_eq!(Page::from_hash(p.hash()), p, "{p:?}");
        }
        assert_eq!(Page::from_hash("#/verdict"), Page::Verdict);
        assert_eq!(Page::ALL[5], Page::Verdict);
        assert_eq!(Page::from_hash("#/nowhere"), Page::Home);
        assert_eq!(Page::from_hash("#/docs/layers/conv2d"), Page::Docs);
        assert_eq!(Page::from_hash("#/docsx"), Page::Home);
        assert_eq!(Page::from_hash(""), Page::Home);
    }

    /// The paths of the pages of `docs-content/`, as the front end's build script names them.
    fn docs_content_paths() -> Vec<String> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs-content");
        let mut paths = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).expect("docs-content/").flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "md") {
                    let rel = p.strip_prefix(&root).expect("under docs-content/");
                    let rel = rel.to_string_lossy().replace('\\', "/");
                    paths.push(rel.trim_end_matches(".md").to_string());
                }
            }
        }
        paths.sort();
        paths
    }

    /// The rendering of each page (its title and HTML, links between pages as in-app links) is
    /// checked by app-ui's build script, which fails the build otherwise.
    #[test]
    fn every_docs_content_page_is_found_by_its_fragment() {
        let paths = docs_content_paths();
        assert!(paths.len() >= 13, "{} pages", paths.len());
        let docs: Vec<DocPage<'_>> = paths
            .iter()
            .map(|path| DocPage {
                path,
                title: "",
                html: "",
            })
            .collect();
        for d in &docs {
            assert_eq!(find_doc(&docs, &doc_hash(d.path)), Some(d));
        }
        assert_eq!(find_doc(&docs, "#/docs").map(|d| d.path), Some("index"));
        assert_eq!(find_doc(&docs, "#/docs/").map(|d| d.path), Some("index"));
        assert_eq!(
            find_doc(&docs, "#/docs/layers/conv2d").map(|d| d.path),
            Some("layers/conv2d")
        );
        assert_eq!(
            find_doc(&docs, "#/docs/training/backprop").map(|d| d.path),
            Some("training/backprop")
        );
        assert!(find_doc(&docs, "#/docs/no/such/page").is_none());
        assert!(find_doc(&docs, "#/setup").is_none());
        assert_eq!(doc_path("#/docs/layers/conv2d"), Some("layers/conv2d"));
        assert_eq!(doc_path("#/docsx"), None);
    }
}
