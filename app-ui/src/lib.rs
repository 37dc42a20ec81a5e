//! Precision Showdown's front end (Leptos, client-side rendering, compiled to WebAssembly).
//!
//! One module per page under [`pages`], a hash router (`#/setup`, `#/duel`, ... so the static
//! file server needs no fallback and a reload keeps the page), one typed [`bridge`] to the
//! compute service, charts drawn with plotters on a canvas ([`charts`]). Everything the server
//! or an imported file says is rendered as text.

use leptos::prelude::*;
use wasm_bindgen::prelude::wasm_bindgen;

pub mod bridge;
pub mod charts;
pub mod download;
pub mod pages;

/// A page of the lab.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Route {
    /// Home / Doctor.
    Home,
    /// Act I – The Setup.
    Setup,
    /// Act II – The Duel.
    Duel,
    /// Act III – The Kernel Reveal.
    Kernels,
    /// Act IV – Occupancy & Profiling.
    Profiling,
    /// Act V – The Verdict.
    Verdict,
    /// Docs (`#/docs/<page>`).
    Docs,
}

impl Route {
    /// Every page, in the order of the navigation bar.
    pub const ALL: [Route; 7] = [
        Route::Home,
        Route::Setup,
        Route::Duel,
        Route::Kernels,
        Route::Profiling,
        Route::Verdict,
        Route::Docs,
    ];

    /// The URL fragment of the page.
    pub fn hash(self) -> &'static str {
        match self {
            Route::Home => "#/",
            Route::Setup => "#/setup",
            Route::Duel => "#/duel",
            Route::Kernels => "#/kernels",
            Route::Profiling => "#/profiling",
            Route::Verdict => "#/verdict",
            Route::Docs => "#/docs",
        }
    }

    /// The navigation label.
    pub fn label(self) -> &'static str {
        match self {
            Route::Home => "Home · Doctor",
            Route::Setup => "Act I · The Setup",
            Route::Duel => "Act II · The Duel",
            Route::Kernels => "Act III · The Kernel Reveal",
            Route::Profiling => "Act IV · Occupancy & Profiling",
            Route::Verdict => "Act V · The Verdict",
            Route::Docs => "Docs",
        }
    }

    /// The page a fragment names (unknown fragments show Home; `#/docs/<page>` is Docs).
    pub fn from_hash(hash: &str) -> Route {
        if hash == "#/docs" || hash.starts_with("#/docs/") {
            return Route::Docs;
        }
        Route::ALL
            .into_iter()
            .find(|r| r.hash() == hash && *r != Route::Home)
            .unwrap_or(Route::Home)
    }
}

fn current_hash() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default()
}

/// The app shell: navigation and the current page.
#[component]
pub fn App() -> impl IntoView {
    let hash = RwSignal::new(current_hash());
    let route = RwSignal::new(Route::from_hash(&hash.get_untracked()));
    let handle = window_event_listener(leptos::ev::hashchange, move |_| {
        hash.set(current_hash());
        route.set(Route::from_hash(&current_hash()));
    });
    // The shell lives as long as the page.
    std::mem::forget(handle);
    let nav = Route::ALL
        .into_iter()
        .map(|r| {
            view! {
                <a href=r.hash() class:active=move || route.get() == r>{r.label()}</a>
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
                Route::Home => view! { <pages::home::HomePage/> }.into_any(),
                Route::Setup => view! { <pages::setup::SetupPage/> }.into_any(),
                Route::Duel => view! { <pages::duel::DuelPage/> }.into_any(),
                Route::Kernels => view! { <pages::kernels::KernelsPage/> }.into_any(),
                Route::Profiling => view! { <pages::profiling::ProfilingPage/> }.into_any(),
                Route::Verdict => view! { <pages::verdict::VerdictPage/> }.into_any(),
                Route::Docs => view! { <pages::docs::DocsPage hash=hash/> }.into_any(),
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

#[cfg(test)]
mod tests {
    use super::Route;

    #[test]
    fn every_route_round_trips_through_its_hash() {
        for r in Route::ALL {
            assert_eq!(Route::from_hash(r.hash()), r, "{r:?}");
        }
        assert_eq!(Route::from_hash("#/verdict"), Route::Verdict);
        assert_eq!(Route::ALL[5], Route::Verdict);
        assert_eq!(Route::from_hash("#/nowhere"), Route::Home);
        assert_eq!(Route::from_hash("#/docs/layers/conv2d"), Route::Docs);
    }
}
