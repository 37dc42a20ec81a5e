//! Docs: the pages of `docs-content/`, rendered to HTML at build time (`build.rs`,
//! pulldown-cmark) and compiled into the app. The HTML is the lab's own documentation, never
//! user input, so it is the one place the UI sets `inner_html`.

use leptos::prelude::*;

include!(concat!(env!("OUT_DIR"), "/docs.rs"));

/// The page a `#/docs/<path>` fragment names (`index` for `#/docs`), if it exists.
pub fn find(hash: &str) -> Option<&'static (&'static str, &'static str, &'static str)> {
    let path = hash
        .strip_prefix("#/docs")
        .map(|p| p.trim_start_matches('/'))
        .filter(|p| !p.is_empty())
        .unwrap_or("index");
    DOCS.iter().find(|(p, _, _)| *p == path)
}

/// The Docs page; `hash` is the current URL fragment.
#[component]
pub fn DocsPage(hash: RwSignal<String>) -> impl IntoView {
    let toc = DOCS
        .iter()
        .map(|(path, title, _)| {
            let href = format!("#/docs/{path}");
            let here = href.clone();
            view! {
                <li><a href=href class:active=move || hash.get() == here || (hash.get() == "#/docs" && *path == "index")>{*title}</a></li>
            }
        })
        .collect_view();
    view! {
        <section id="docs" class="docs">
            <nav class="card doc-toc"><h3>"Docs"</h3><ul>{toc}</ul></nav>
            {move || match find(&hash.get()) {
                Some((path, _, html)) => view! {
                    <article class="card doc" data-doc=*path inner_html=*html></article>
                }
                .into_any(),
                None => view! {
                    <article class="card doc"><p class="error">{format!("No page {} in docs-content/.", hash.get().trim_start_matches("#/docs/"))}</p></article>
                }
                .into_any(),
            }}
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_docs_content_page_is_compiled_in_and_found_by_its_fragment() {
        assert!(DOCS.len() >= 13, "{} pages", DOCS.len());
        assert_eq!(find("#/docs").map(|d| d.0), Some("index"));
        assert_eq!(find("#/docs/").map(|d| d.0), Some("index"));
        let conv = find("#/docs/layers/conv2d").expect("the conv2d page");
        assert!(conv.1.to_lowercase().contains("conv"), "title {}", conv.1);
        assert!(conv.2.contains("<h1>"), "rendered HTML");
        assert!(find("#/docs/no/such/page").is_none());
        // Links between pages became in-app links.
        let backprop = find("#/docs/training/backprop").expect("the backprop page");
        assert!(backprop.2.contains("href=\"#/docs/layers/maxpool\""));
        assert!(
            !backprop.2.contains(".md\""),
            "a .md link was left as a file link"
        );
    }
}
