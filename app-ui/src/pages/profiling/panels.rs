//! Act IV's seven panels of one kernel: its rows in readable units (impossible values flagged),
//! charts, narratives, rules with their links, screenshots (full size on a click), the kernel
//! picker with durations, and the import's kernels page by page.

use super::*;
use crate::loading::{act, failure};

/// `text` with its web addresses as links (ncu's rules point to its documentation).
pub(super) fn linked(text: &str) -> impl IntoView {
    showdown_core::ncu::split_links(text)
        .into_iter()
        .map(|(part, is_link)| {
            if is_link {
                let href = part.clone();
                view! { <a href=href target="_blank" rel="noopener noreferrer">{part}</a> }
                    .into_any()
            } else {
                view! { <span>{part}</span> }.into_any()
            }
        })
        .collect_view()
}

/// A size in bytes, in the largest unit that keeps it at least 1.
pub(super) fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// A screenshot beside its panel: the image (fetched from the service), its caption and a
/// button to remove it.
#[component]
pub(super) fn ShotView(shot: Screenshot, import: String, library: Library) -> impl IntoView {
    let src = {
        let (import, id) = (import.clone(), shot.id.clone());
        LocalResource::new(move || {
            let (import, id) = (import.clone(), id.clone());
            async move {
                bridge::ncu_screenshot(&import, &id)
                    .await
                    .map(|i| i.data_url())
                    .map_err(|e| e.message)
            }
        })
    };
    let id = shot.id.clone();
    let detach = act(move |_: &()| {
        let (import, id) = (import.clone(), id.clone());
        async move {
            bridge::ncu_detach(&import, &id).await?;
            library.changed();
            Ok(())
        }
    });
    let on_detach = move |_| {
        detach.dispatch(());
    };
    let alt = shot.original_name.clone();
    let caption = shot
        .caption
        .clone()
        .unwrap_or_else(|| shot.original_name.clone());
    let facts = format!(
        "{} × {} px, {}{}",
        shot.width,
        shot.height,
        size_text(shot.bytes),
        if shot.kernel.is_none() {
            ", on every kernel"
        } else {
            ""
        }
    );
    view! {
        <figure class="screenshot" data-screenshot=shot.id.clone() style="margin:0 0 0.8rem 0">
            {move || match src.get() {
                None => view! { <p class="muted">"loading the screenshot…"</p> }.into_any(),
                Some(Ok(url)) => view! {
                    <ShotImage url=url alt=alt.clone() width=shot.width height=shot.height/>
                }.into_any(),
                Some(Err(e)) => view! { <p class="error">{e}</p> }.into_any(),
            }}
            <figcaption>
                <span class="screenshot-caption">{caption}</span>
                " " <span class="muted">{facts}</span>
            </figcaption>
            <button class="detach" on:click=on_detach>"Remove screenshot"</button>
            {move || failure(detach).map(|e| view! { <p class="error">{e.message}</p> })}
        </figure>
    }
}

/// One of the seven panels of a kernel of the open import, with its screenshots and the
/// controls to attach one.
#[component]
pub(super) fn PanelView(
    panel: Panel,
    import: String,
    kernel_id: u64,
    library: Library,
    launch: Option<CalculatorLaunch>,
) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    // The occupancy panel opens its kernel's launch in the calculator above.
    let to_calculator = (panel.id == "occupancy")
        .then_some(launch)
        .flatten()
        .zip(use_context::<CalculatorRequest>())
        .map(|(l, CalculatorRequest(asked))| {
            let text = format!(
                "Open in the calculator ({} threads, {} registers, {} B shared)",
                l.threads, l.registers, l.shared_bytes
            );
            view! {
                <p><button class="to-calculator" on:click=move |_| {
                    asked.set(Some(l.clone()));
                    if let Some(e) = document().get_element_by_id("calculator") {
                        e.scroll_into_view();
                    }
                }>{text}</button></p>
            }
        });
    let chart = panel.chart.clone();
    let chart_error = RwSignal::new(None::<String>);
    let has_chart = chart.as_ref().is_some_and(|c| !c.bars.is_empty());
    let height = chart.as_ref().map(|c| 40 + 24 * c.bars.len()).unwrap_or(0);
    Effect::new(move |_| {
        if let (Some(c), Some(spec)) = (canvas.get(), chart.as_ref()) {
            let bars: Vec<(String, f64)> = spec
                .bars
                .iter()
                .map(|b| (b.label.clone(), b.value))
                .collect();
            let r = charts::bar_chart(c, &spec.title, &spec.unit, spec.max, &bars);
            chart_error.set(r.err());
        }
    });
    let rows = panel
        .metrics
        .iter()
        .map(|m| {
            let shown = if m.shown.is_empty() {
                shown_text(&m.value, &m.unit, m.si_value, m.si_unit.as_deref())
            } else {
                m.shown.clone()
            };
            let flag = m.flag.clone();
            let implausible = flag.is_some();
            view! {
                <tr class:implausible=implausible>
                    <td title=m.name.clone()>{m.label.clone()}</td>
                    <td class="num" title=format!("as exported: {} {}", value_as_printed(&m.value), m.unit)>
                        {shown}
                        {flag.map(|f| view! { <span class="flag" role="note">" \u{26a0} "{f}</span> })}
                    </td>
                </tr>
            }
        })
        .collect_view();
    let rules = panel
        .rules
        .iter()
        .map(|r| {
            let speedup = r
                .speedup
                .map(|s| format!(" (est. speedup {s:.1} %)"))
                .unwrap_or_default();
            view! {
                <li><span class=format!("rule {}", r.rule_type.to_ascii_lowercase())>{r.rule_type.clone()}</span>
                    " " <strong>{r.name.clone()}</strong> {speedup} ": " {linked(&r.description)}</li>
            }
        })
        .collect_view();
    let shots = panel
        .screenshots
        .iter()
        .map(|s| view! { <ShotView shot=s.clone() import=import.clone() library=library/> })
        .collect_view();

    let caption = RwSignal::new(String::new());
    let every_kernel = RwSignal::new(false);
    let panel_id = panel.id.clone();
    // Attaches a chosen file (with the caption and kernel asked when it was chosen).
    let attach = act(
        move |(file, kernel, text): &(web_sys::File, Option<u64>, Option<String>)| {
            let (import, panel_id) = (import.clone(), panel_id.clone());
            let (file, kernel, text) = (file.clone(), *kernel, text.clone());
            async move {
                attach_file(&import, &panel_id, kernel, file, text)
                    .await
                    .map_err(bridge::runtime)?;
                caption.set(String::new());
                library.changed();
                Ok(())
            }
        },
    );
    let attaching = attach.pending();
    let on_attach = move |ev: leptos::ev::Event| {
        let Some(file) = chosen_file(&ev) else {
            return;
        };
        clear_input(&ev);
        let kernel = (!every_kernel.get_untracked()).then_some(kernel_id);
        let text = caption.get_untracked();
        let text = (!text.trim().is_empty()).then_some(text);
        attach.dispatch_local((file, kernel, text));
    };
    view! {
        <article class="panel card" id=format!("panel-{}", panel.id) data-panel=panel.id.clone()>
            <h4>{panel.title.clone()}</h4>
            <div class="panel-body" style="display:flex;flex-wrap:wrap;gap:1rem;align-items:flex-start">
                <div class="panel-main" style="flex:1 1 560px;min-width:0">
                    <p class="narrative">{panel.narrative.clone()}</p>
                    <table class="metrics"><tbody>{rows}</tbody></table>
                    {to_calculator}
                    {has_chart.then(|| view! { <canvas node_ref=canvas width="760" height=height.to_string() style="max-width:100%"></canvas> })}
                    {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
                    <ul class="rules">{rules}</ul>
                </div>
                <aside class="panel-shots" style="flex:0 1 340px;min-width:0">
                    {shots}
                    <div class="attach">
                        <label>"Attach screenshot (PNG or JPEG) "
                            <input type="file" class="attach-shot" accept="image/png,image/jpeg"
                                prop:disabled=move || attaching.get() on:change=on_attach/>
                        </label>
                        <input type="text" class="attach-caption" placeholder="caption (optional)"
                            prop:value=move || caption.get()
                            on:input=move |ev| caption.set(event_target_value(&ev))/>
                        <label class="check">
                            <input type="checkbox" class="attach-every-kernel"
                                prop:checked=move || every_kernel.get()
                                on:change=move |ev| every_kernel.set(event_target_checked(&ev))/>
                            " on every kernel's panel"
                        </label>
                        {move || attaching.get().then(|| view! { <p class="muted">"attaching…"</p> })}
                        {move || failure(attach).map(|e| view! { <p class="error attach-error">{e.message}</p> })}
                    </div>
                </aside>
            </div>
        </article>
    }
}

/// The `sessionStorage` key under which another page leaves an import's ID for this page to
/// open on load (the key is removed as it is read).
pub const OPEN_IMPORT_KEY: &str = "showdown.open_import";

/// A kernel picker's options: each kernel with its ID and duration (`#3 gemm · 52.9 µs`), in
/// profiled order or longest first; an option's value is the kernel's index in `ks`.
pub(super) fn kernel_options(
    ks: &[KernelPanels],
    longest_first: bool,
    selected: usize,
) -> impl IntoView {
    let mut order: Vec<usize> = (0..ks.len()).collect();
    if longest_first {
        let secs = |i: usize| ks[i].duration().map_or(f64::NEG_INFINITY, |d| d.0);
        order.sort_by(|&x, &y| secs(y).total_cmp(&secs(x)));
    }
    order
        .into_iter()
        .map(|i| view! { <option value=i.to_string() selected=i == selected>{ks[i].picker_label()}</option> })
        .collect_view()
}

/// Kernels on one page of the open import: the panels view asks the service for this many at
/// a time (`ncu_panels` with `offset` and `limit`), never the whole import (issue 38: one
/// call on a 60,000-kernel import answered 109 MB).
pub(super) const KERNELS_PER_PAGE: usize = 50;

/// The page's place in the import, `kernels 1–50 of 60,000` (the total from the import's
/// summary).
pub(super) fn page_text(offset: usize, shown: usize, total: usize) -> String {
    let thousands = |n: usize| showdown_core::format::thousands(n as u64);
    if shown == 0 {
        return format!("no kernels here, of {}", thousands(total));
    }
    format!(
        "kernels {}–{} of {}",
        thousands(offset + 1),
        thousands(offset + shown),
        thousands(total)
    )
}

/// A page of an import's kernels as the service answered it.
#[derive(Clone, PartialEq)]
struct Page {
    /// The import it is of.
    import: Option<String>,
    /// Its first kernel's index.
    offset: usize,
    /// Its kernels with their panels, or why there are none.
    kernels: Result<Vec<KernelPanels>, String>,
}

/// The page of the open import shown: its first kernel's index and the page's panels, asked
/// of the service page by page.
#[derive(Clone, Copy)]
struct Paging {
    /// The page's first kernel, counted from 0 in the import's order.
    offset: RwSignal<usize>,
    /// The last page answered (of the import open and the offset asked, or still of those
    /// before while the next is asked).
    page: LocalResource<Page>,
}

impl Paging {
    /// Pages of the import `library` has open: back to the first page when another import is
    /// opened; asked again when the library reloads its import (a screenshot attached).
    fn of(library: Library) -> Self {
        let offset = RwSignal::new(0usize);
        let opened = RwSignal::new(None::<String>);
        Effect::new(move |_| {
            let open = library.open.get();
            if open != opened.get_untracked() {
                opened.set(open);
                offset.set(0);
            }
        });
        let page = LocalResource::new(move || {
            let (import, offset) = (opened.get(), offset.get());
            // The library reloads its import after a screenshot is attached or removed.
            library.kernels.track();
            async move {
                let kernels = match &import {
                    None => Ok(Vec::new()),
                    Some(id) => crate::bridge::call(showdown_core::protocol::NcuPanelsRequest {
                        import: id.clone(),
                        kernel: None,
                        offset,
                        limit: Some(KERNELS_PER_PAGE),
                    })
                    .await
                    .map_err(|e| e.message),
                };
                Page {
                    import,
                    offset,
                    kernels,
                }
            }
        });
        Paging { offset, page }
    }

    /// The last page answered of the import open now (tracked): never a page of the import
    /// open before, whose panels would take a screenshot meant for this one.
    fn current(self, library: Library) -> Option<Page> {
        let open = library.open.get();
        self.page
            .get()
            .filter(|p| p.import.is_some() && p.import == open)
    }

    /// Turns one page on (`forward`) or back, within `0..total`; the first kernel of the new
    /// page is shown.
    fn turn(self, library: Library, forward: bool, total: usize) {
        // From the page shown (a second click before the next page came turns from it too).
        let Some(at) = untrack(|| self.current(library)).map(|p| p.offset) else {
            return;
        };
        let next = if forward {
            at + KERNELS_PER_PAGE
        } else {
            at.saturating_sub(KERNELS_PER_PAGE)
        };
        if next < total && next != at {
            library.kernel.set(0);
            self.offset.set(next);
        }
    }
}

/// The page controls: previous, where the page is (`#kernels-page`), next.
fn pager(paging: Paging, library: Library, total: usize) -> impl IntoView {
    let shown = move || {
        paging.current(library).map_or((0, 0), |p| {
            (p.offset, p.kernels.as_ref().map_or(0, |k| k.len()))
        })
    };
    let first = move || shown().0 == 0;
    let last = move || shown().0 + KERNELS_PER_PAGE >= total;
    view! {
        <p class="kernel-pager">
            <button type="button" id="kernels-prev" disabled=first
                on:click=move |_| paging.turn(library, false, total)>"← previous"</button>
            " "
            <span id="kernels-page">{move || {
                let (offset, n) = shown();
                page_text(offset, n, total)
            }}</span>
            " "
            <button type="button" id="kernels-next" disabled=last
                on:click=move |_| paging.turn(library, true, total)>"next →"</button>
        </p>
    }
}

/// The open import: its pages of kernels, the kernel picker of the page shown and the seven
/// panels of the kernel chosen.
pub(super) fn open_import_view(library: Library) -> impl IntoView {
    let longest_first = RwSignal::new(false);
    let paging = Paging::of(library);
    // The page shown, changed only when its content is: a page asked again and answered the
    // same (the library asks again after it opened an import) does not draw the panels anew,
    // which would drop a screenshot being attached to one of them.
    let page: Memo<Option<Page>> = Memo::new(move |_| paging.current(library));
    let current: Memo<Option<KernelPanels>> = Memo::new(move |_| {
        let i = library.kernel.get();
        page.get()?.kernels.ok()?.get(i).cloned()
    });
    move || {
        let Some(id) = library.open.get() else {
            return view! { <p class="muted">"Open a saved import to read its panels."</p> }
                .into_any();
        };
        let kernels = match page.get().map(|p| p.kernels) {
            None => return view! { <p class="muted">"loading the panels…"</p> }.into_any(),
            Some(Err(e)) => {
                return view! { <p class="error" id="ncu-panels-error">{e}</p> }.into_any()
            }
            Some(Ok(k)) => k,
        };
        let summary = library.open_summary();
        let total = summary.as_ref().map_or(kernels.len(), |s| s.kernels);
        let summary = summary.map(|s| {
            format!(
                "{}: {} kernel(s), {:?} page",
                s.source_name,
                showdown_core::format::thousands(s.kernels as u64),
                s.format
            )
        });
        // The chosen kernel stays chosen when the order changes (it was the first option's).
        let options = move || {
            kernel_options(
                &kernels,
                longest_first.get(),
                library.kernel.get_untracked(),
            )
        };
        let import = id.clone();
        view! {
            <p id="ncu-summary">{summary}</p>
            {pager(paging, library, total)}
            <label for="kernel">"kernel "
                <select id="kernel" prop:value=move || library.kernel.get().to_string()
                    on:change=move |ev| {
                        if let Ok(i) = event_target_value(&ev).parse() {
                            library.kernel.set(i);
                        }
                    }>{options}</select>
            </label>
            " "
            <label for="kernel-order">"order "
                <select id="kernel-order" prop:value=move || if longest_first.get() { "longest" } else { "profiled" }
                    on:change=move |ev| longest_first.set(event_target_value(&ev) == "longest")>
                    <option value="profiled">"as profiled"</option>
                    <option value="longest">"longest first"</option>
                </select>
            </label>
            {move || current.get().map(|k| {
                let import = import.clone();
                view! {
                    <p class="kernel-name" id="kernel-name">{k.name.clone()}</p>
                    <div id="panels">
                        {let launch = k.calculator_launch();
                        k.panels.into_iter().map(|p| view! {
                            <PanelView panel=p import=import.clone() kernel_id=k.id library=library launch=launch.clone()/>
                        }).collect_view()}
                    </div>
                }
            })}
        }
        .into_any()
    }
}

/// A printed value as the export had it (for the cell's tooltip).
pub(super) fn value_as_printed(v: &MetricValue) -> String {
    match v {
        MetricValue::Number(n) => format!("{n}"),
        MetricValue::Text(t) => t.clone(),
    }
}
