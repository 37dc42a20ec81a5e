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
pub mod loading;
pub mod pages;
pub mod walk;

fn current_hash() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default()
}

/// The app shell: a skip link, the navigation (compact titles, the full one as a tooltip)
/// and the current page, inside the guided walk's frame ([`walk::WalkFrame`]) when the walk
/// is on.
#[component]
pub fn App() -> impl IntoView {
    let hash = RwSignal::new(current_hash());
    let route = RwSignal::new(Page::from_hash(&hash.get_untracked()));
    let walk = walk::Walk::provide();
    // Above the pages: a duel keeps running, and its page shows it again, after a visit to
    // another act.
    pages::duel::provide_duel_state();
    let handle = window_event_listener(leptos::ev::hashchange, move |_| {
        hash.set(current_hash());
        route.set(Page::from_hash(&current_hash()));
    });
    // The walk's keys: → / n and ← / p move between its steps while it is on.
    // The page is read from the address, not the route signal: a key pressed right after
    // another moved the walk arrives before `hashchange` has updated the signal.
    let keys = window_event_listener(leptos::ev::keydown, move |ev| {
        walk::on_key(walk, Page::from_hash(&current_hash()), &ev);
    });
    // The shell lives as long as the page.
    std::mem::forget(handle);
    std::mem::forget(keys);
    let nav = Page::ALL
        .into_iter()
        .map(|r| {
            view! {
                <a href=r.hash() title=r.title() class:active=move || route.get() == r
                    aria-current=move || (route.get() == r).then_some("page")>{r.short_title()}</a>
            }
        })
        .collect_view();
    view! {
        <a class="skip-link" href="#main-content" on:click=|ev| {
            ev.prevent_default();
            walk::focus_content();
        }>"Skip to content"</a>
        <header>
            <h1><a href="#/" class="brand">"Precision Showdown"</a></h1>
            <nav id="nav" aria-label="Acts">{nav}</nav>
        </header>
        <main id="main-content" tabindex="-1">
            <walk::WalkFrame walk=walk route=route>
                {move || match route.get() {
                    Page::Home => view! { <pages::home::HomePage/> }.into_any(),
                    Page::Setup => view! { <pages::setup::SetupPage/> }.into_any(),
                    Page::Duel => view! { <pages::duel::DuelPage/> }.into_any(),
                    Page::Kernels => view! { <pages::kernels::KernelsPage/> }.into_any(),
                    Page::Profiling => view! { <pages::profiling::ProfilingPage/> }.into_any(),
                    Page::Verdict => view! { <pages::verdict::VerdictPage/> }.into_any(),
                    Page::Docs => view! { <pages::docs::DocsPage hash=hash/> }.into_any(),
                }}
            </walk::WalkFrame>
        </main>
    }
}

/// Entry point called by the generated JavaScript glue.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}
