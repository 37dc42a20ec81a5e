//! The guided walk through the acts (issue 16, item 5).
//!
//! Home tells the lab's story and offers "Start the walkthrough" ([`WalkStory`],
//! `#walk-start`). While the walk is on (kept for the browser session in `sessionStorage` under
//! [`KEY`], so a reload keeps it), the shell wraps the routed page in a [`WalkFrame`]: above
//! it the progress over Home and Acts I–V (`#walk-progress`) and the act's intro
//! (`#walk-intro`: what it will show); below it the outro (`#walk-outro`: what it showed *on
//! this machine*, sentences built by the core's [`showdown_core::walk`] from this machine's
//! reports, read through the bridge) and Previous / Next (`#walk-prev`, `#walk-next`). The
//! arrow keys and `n` / `p` move too ([`on_key`]). Moving sets the location hash, so the hash
//! router does the rest.

use leptos::prelude::*;
use showdown_core::pages::Page;
use showdown_core::protocol::{ApiError, LabRunsRequest};
use showdown_core::walk as story;
use wasm_bindgen::JsCast;

use crate::bridge;
use crate::loading::{load, Loaded};

/// The `sessionStorage` key that keeps the walk on (`on`) or off (`off`).
pub const KEY: &str = "showdown.walk";

/// Whether the walk is on: the shell provides it as context, Home's button turns it on.
#[derive(Clone, Copy)]
pub struct Walk(pub RwSignal<bool>);

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

/// Whether this browser session left the walk on.
fn stored() -> bool {
    storage()
        .and_then(|s| s.get_item(KEY).ok().flatten())
        .is_some_and(|v| v == "on")
}

impl Walk {
    /// The walk as this session left it, provided as context to the pages.
    pub fn provide() -> Walk {
        let walk = Walk(RwSignal::new(stored()));
        provide_context(walk);
        walk
    }

    /// Turns the walk on or off, for this session.
    pub fn set(self, on: bool) {
        if let Some(s) = storage() {
            // A session that cannot store it keeps the walk for this page's life only.
            let _ = s.set_item(KEY, if on { "on" } else { "off" });
        }
        self.0.set(on);
    }

    /// Whether the walk is on (tracked).
    pub fn on(self) -> bool {
        self.0.get()
    }
}

/// Goes to `page` (sets the location hash: the router follows), with the keyboard focus on
/// the content and, once the page is drawn, the act's label in view just below the walk's
/// sticky bar ([`scroll_to_act_label`]).
pub fn go(page: Page) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let _ = window.location().set_hash(page.hash());
    // Focusing scrolled `main` into view on its own, which left the act's label under the
    // walk's bar; the scroll is ours, once the new page is there (after `hashchange` and its
    // render: two frames on).
    focus_content_without_scrolling();
    request_animation_frame(|| request_animation_frame(scroll_to_act_label));
}

/// Space between the walk's bar and the act's label below it, px.
const LABEL_GAP_PX: i32 = 8;

/// Where the page must scroll for an element at `top` (px from the document's top) to sit
/// just below a sticky bar `bar_height` px tall: never above the page's top.
fn label_scroll_y(top: i32, bar_height: i32) -> i32 {
    (top - bar_height - LABEL_GAP_PX).max(0)
}

/// Scrolls so that the act's label (`#walk-intro`) sits just below the walk's sticky bar
/// (`#walk-bar`), never under it; to the top when the page has no label (the walk is off).
pub fn scroll_to_act_label() {
    let Some(window) = web_sys::window() else {
        return;
    };
    let by_id = |id: &str| {
        window
            .document()
            .and_then(|d| d.get_element_by_id(id))
            .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
    };
    let y = match (by_id("walk-intro"), by_id("walk-bar")) {
        (Some(intro), Some(bar)) => label_scroll_y(document_top(&intro), bar.offset_height()),
        (Some(intro), None) => label_scroll_y(document_top(&intro), 0),
        _ => 0,
    };
    window.scroll_to_with_x_and_y(0.0, f64::from(y));
}

/// `el`'s top, px from the document's top (its offsets summed up its offset parents).
fn document_top(el: &web_sys::HtmlElement) -> i32 {
    let mut top = el.offset_top();
    let mut parent = el.offset_parent();
    while let Some(p) = parent.and_then(|p| p.dyn_into::<web_sys::HtmlElement>().ok()) {
        top += p.offset_top();
        parent = p.offset_parent();
    }
    top
}

/// [`focus_content`] without the browser's own scroll (`focus({preventScroll: true})`).
fn focus_content_without_scrolling() {
    let main = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("main-content"));
    let Some(main) = main else {
        return;
    };
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &"preventScroll".into(), &true.into());
    if let Ok(f) = js_sys::Reflect::get(&main, &"focus".into()) {
        if let Ok(f) = f.dyn_into::<js_sys::Function>() {
            let _ = f.call1(&main, &options);
        }
    }
}

/// Moves the keyboard focus to the page's content (`#main-content`), as the skip link does.
pub fn focus_content() {
    let main = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("main-content"))
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
    if let Some(main) = main {
        let _ = main.focus();
    }
}

/// Whether a key pressed in `target` is typing (a field, a list, editable text) rather than a
/// command.
fn typing(target: Option<web_sys::EventTarget>) -> bool {
    let Some(el) = target.and_then(|t| t.dyn_into::<web_sys::HtmlElement>().ok()) else {
        return false;
    };
    matches!(
        el.tag_name().to_ascii_uppercase().as_str(),
        "INPUT" | "TEXTAREA" | "SELECT"
    ) || el.is_content_editable()
}

/// The walk's keys, while it is on and the page is one of its steps: → or `n` for the next
/// step, ← or `p` for the previous one (not while typing, nor with Ctrl, Alt or Meta).
pub fn on_key(walk: Walk, route: Page, ev: &web_sys::KeyboardEvent) {
    if !walk.0.get_untracked()
        || ev.default_prevented()
        || ev.ctrl_key()
        || ev.alt_key()
        || ev.meta_key()
        || typing(ev.target())
    {
        return;
    }
    let to = match ev.key().as_str() {
        "ArrowRight" | "n" | "N" => story::next(route),
        "ArrowLeft" | "p" | "P" => story::previous(route),
        _ => return,
    };
    if let Some(page) = to {
        ev.prevent_default();
        go(page);
    }
}

/// Home's story and the button that starts the walk (`#walk-story`, `#walk-start`).
#[component]
pub fn WalkStory() -> impl IntoView {
    let walk = use_context::<Walk>();
    let start = move |_| {
        if let Some(w) = walk {
            w.set(true);
        }
        go(Page::Setup);
    };
    let lines = story::STORY
        .into_iter()
        .map(|line| view! { <p>{line}</p> })
        .collect_view();
    view! {
        <section id="walk-story" class="walk-story">
            <p class="walk-kicker">"A lab in five acts"</p>
            {lines}
            <p class="walk-start-row">
                <button type="button" id="walk-start" class="primary" on:click=start>
                    "Start the walkthrough"
                </button>
                <span class="muted">
                    " each act says what it will show, then what its results showed (each naming the machine it ran on); move with the arrow keys or "
                    <kbd>"n"</kbd> " / " <kbd>"p"</kbd>
                </span>
            </p>
        </section>
    }
}

/// The sentences of `page`'s outro, from this machine's reports.
async fn outro_lines(page: Page) -> Result<Vec<String>, ApiError> {
    match page {
        Page::Setup => {
            let datasets = bridge::list_datasets().await?;
            let runs = bridge::runs().await?;
            Ok(story::setup_outro(&datasets, runs.runs.first()))
        }
        Page::Duel => {
            let list = bridge::runs().await?;
            let mut lines = match list.runs.first() {
                None => vec![story::NO_DUEL.to_string()],
                Some(newest) => {
                    let report = bridge::run(&newest.id).await?;
                    let mut lines = vec![story::newest_duel_line(newest, list.runs.len())];
                    lines.extend(story::duel_outro(&report));
                    lines
                }
            };
            if !list.skipped.is_empty() {
                lines.push(format!(
                    "{} history file(s) could not be read (the run history below lists them).",
                    list.skipped.len()
                ));
            }
            Ok(lines)
        }
        Page::Kernels => {
            let lab = bridge::call(LabRunsRequest {}).await?;
            let gpu = bridge::doctor().await.ok().map(|d| !d.gpus.is_empty());
            Ok(story::lab_outro(&lab.runs, gpu))
        }
        Page::Profiling => {
            let imports = bridge::ncu_imports().await?;
            let doctor = bridge::doctor().await?;
            Ok(story::profiling_outro(&imports, &doctor.gpus))
        }
        Page::Verdict => {
            let verdict = bridge::verdict().await?;
            let lab = bridge::call(LabRunsRequest {}).await?;
            let imports = bridge::ncu_imports().await?;
            Ok(story::verdict_outro(&verdict, &lab.runs, &imports))
        }
        Page::Home | Page::Docs => Ok(Vec::new()),
    }
}

/// The outro of act `page` (`#walk-outro`): what it showed on this machine, read when shown
/// and on Refresh (`#walk-refresh`, e.g. after a duel finished).
#[component]
fn Outro(page: Page) -> impl IntoView {
    let lines = load(move || outro_lines(page));
    let busy = RwSignal::new(false);
    let body = |lines: Vec<String>| {
        let items = lines
            .into_iter()
            .map(|l| view! { <li>{l}</li> })
            .collect_view();
        view! { <ul class="walk-lines">{items}</ul> }
    };
    view! {
        <section id="walk-outro" class="walk-outro card" aria-live="polite"
            data-act=story::step_label(page)>
            <h3>"What this act's results showed"</h3>
            <Loaded resource=lines what="Cannot read the saved results" busy=busy
                pending=|| view! { <p class="muted">"Reading the saved results…"</p> }
                children=body/>
            <button type="button" id="walk-refresh" class="quiet" on:click=move |_| lines.refetch()
                disabled=move || busy.get()>"Refresh"</button>
        </section>
    }
}

/// The progress over the walk's steps (`#walk-progress`, the current one `aria-current`),
/// each a link to its page, and a button to leave the walk (`#walk-exit`).
#[component]
fn WalkBar(walk: Walk, route: RwSignal<Page>) -> impl IntoView {
    let steps = story::STEPS
        .into_iter()
        .map(|p| {
            let at = move || story::step_index(route.get());
            let here = story::step_index(p);
            view! {
                <li class:current=move || route.get() == p
                    class:done=move || matches!((at(), here), (Some(a), Some(h)) if h < a)>
                    <a href=p.hash() title=p.title()
                        aria-current=move || (route.get() == p).then_some("step")>
                        {story::step_label(p)}
                    </a>
                </li>
            }
        })
        .collect_view();
    view! {
        <div id="walk-bar" class="walk-bar" role="navigation" aria-label="Walkthrough">
            <span class="walk-title">"Walkthrough"</span>
            <ol id="walk-progress" data-current=move || story::step_label(route.get())>{steps}</ol>
            <span class="walk-keys muted">
                <kbd>"←"</kbd> " " <kbd>"→"</kbd> " or " <kbd>"p"</kbd> " " <kbd>"n"</kbd>
            </span>
            <button type="button" id="walk-exit" class="quiet" on:click=move |_| walk.set(false)>
                "Leave the walkthrough"
            </button>
        </div>
    }
}

/// Previous and Next (`#walk-prev`, `#walk-next`); on Act V, Next ends the walk at Home.
fn controls(walk: Walk, page: Page) -> impl IntoView {
    let prev = story::previous(page);
    let next = story::next(page);
    let prev_label = prev.map_or_else(|| "← Previous".to_string(), |p| format!("← {}", p.title()));
    let next_label = next.map_or_else(
        || "Finish the walkthrough".to_string(),
        |p| format!("Next: {} →", p.title()),
    );
    view! {
        <nav id="walk-controls" class="walk-controls" aria-label="Walkthrough steps">
            <button type="button" id="walk-prev" disabled=prev.is_none()
                on:click=move |_| if let Some(p) = prev { go(p) }>{prev_label}</button>
            <button type="button" id="walk-next" class="primary"
                on:click=move |_| match next {
                    Some(p) => go(p),
                    None => {
                        walk.set(false);
                        go(Page::Home);
                    }
                }>{next_label}</button>
        </nav>
    }
}

/// The walk around the routed page (`children`): while the walk is on and the page is one of
/// its steps, the progress and the act's intro above it, its outro and Previous / Next below.
#[component]
pub fn WalkFrame(walk: Walk, route: RwSignal<Page>, children: Children) -> impl IntoView {
    let step = move || {
        let page = route.get();
        (walk.on() && story::step_index(page).is_some()).then_some(page)
    };
    let intro = move || {
        let page = step()?;
        let (numeral, text) = (story::act_numeral(page)?, story::intro(page)?);
        Some(view! {
            <section id="walk-intro" class="walk-intro" data-act=numeral>
                <p class="walk-kicker">{page.title()}</p>
                <p><strong>{format!("Act {numeral} — what you will see: ")}</strong>{text}</p>
            </section>
        })
    };
    let after = move || {
        step().map(|page| {
            let outro = (page != Page::Home).then(|| view! { <Outro page=page/> });
            view! { {outro} {controls(walk, page)} }
        })
    };
    view! {
        <Show when=move || step().is_some()>
            <WalkBar walk=walk route=route/>
        </Show>
        {intro}
        {children()}
        {after}
    }
}
