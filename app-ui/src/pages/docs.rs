//! Docs: the pages of `docs-content/`, rendered to HTML at build time (`build.rs`,
//! pulldown-cmark) and compiled into the app. The HTML is the lab's own documentation, never
//! user input, so it is the one place the UI sets `inner_html`.

use leptos::prelude::*;
use showdown_core::pages::{doc_hash, doc_path, find_doc, DocPage};

include!(concat!(env!("OUT_DIR"), "/docs.rs"));

/// The page a `#/docs/<path>` fragment names (`index` for `#/docs`), if it exists.
pub fn find(hash: &str) -> Option<&'static DocPage<'static>> {
    find_doc(DOCS, hash)
}

/// The Docs page; `hash` is the current URL fragment.
#[component]
pub fn DocsPage(hash: RwSignal<String>) -> impl IntoView {
    let toc = DOCS
        .iter()
        .map(|d| {
            let path = d.path;
            view! {
                <li><a href=doc_hash(path) class:active=move || doc_path(&hash.get()) == Some(path)>{d.title}</a></li>
            }
        })
        .collect_view();
    view! {
        <section id="docs" class="docs">
            <nav class="card doc-toc"><h3>"Docs"</h3><ul>{toc}</ul></nav>
            {move || match find(&hash.get()) {
                Some(d) => view! {
                    <article class="card doc" data-doc=d.path inner_html=d.html></article>
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
