//! Precision Showdown's front end (Leptos, client-side rendering, compiled to WebAssembly).
//!
//! One module per page under [`pages`], a hash router over the core's
//! [`Page`](showdown_core::pages::Page)s (`#/setup`, `#/duel`, ... so the static file server
//! needs no fallback and a reload keeps the page), one typed [`bridge`] to the compute service,
//! charts drawn with plotters on a canvas ([`charts`]). Everything the server or an imported
//! file says is rendered as text.

use leptos::prelude::*;
use showdown_core::pages::Page;
use wasm_bindgen::prelude::wasm_bindgen;

pub mod bridge;
pub mod charts;
pub mod download;
pub mod pages;

fn current_hash() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default()
}

/// The app shell: navigation and the current page.
#[component]
pub fn App() -> impl IntoView {
    let hash = RwSignal::new(current_hash());
    let route = RwSignal::new(Page::from_hash(&hash.get_untracked()));
    let handle = window_event_listener(leptos::ev::hashchange, move |_| {
        hash.set(current_hash());
        route.set(Page::from_hash(&current_hash()));
    });
    // The shell lives as long as the page.
    std::mem::forget(handle);
    let nav = Page::ALL
        .into_iter()
        .map(|r| {
            view! {
                <a href=r.hash() class:active=move || route.get() == r>{r.title()}</a>
            }
        })
        .collect_view();
    view! {
        <header>
            <h1>"Precision Showdown"</h1>
            <nav id="nav">{nav}</nav>
        </header>
        <main>
            {move || match route.get() {
                Page::Home => view! { <pages::home::HomePage/> }.into_any(),
                Page::Setup => view! { <pages::setup::SetupPage/> }.into_any(),
                Page::Duel => view! { <pages::duel::DuelPage/> }.into_any(),
                Page::Kernels => view! { <pages::kernels::KernelsPage/> }.into_any(),
                Page::Profiling => view! { <pages::profiling::ProfilingPage/> }.into_any(),
                Page::Verdict => view! { <pages::verdict::VerdictPage/> }.into_any(),
                Page::Docs => view! { <pages::docs::DocsPage hash=hash/> }.into_any(),
            }}
        </main>
    }
}

/// Entry point called by the generated JavaScript glue.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}
