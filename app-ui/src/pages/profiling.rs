//! Act IV – Occupancy & Profiling: the occupancy calculator (compute's pure core, in WASM)
//! with its sweep chart, and the Nsight Compute library: CSV exports and `.ncu-rep` reports
//! imported through the compute service (kept on disk, so they survive restarts), the seven
//! panels per kernel with screenshots attached to them, and the comparison of two reports.
//! Another page opens an import here by leaving its ID in `sessionStorage`
//! ([`OPEN_IMPORT_KEY`]) before it navigates to this page.
//! File names, kernel names, metric names, rule messages and captions come from the user's
//! files and are shown as text only (never as markup).

use leptos::html::Canvas;
use leptos::prelude::*;
use showdown_core::ncu::{
    compare_panels, ImportSummary, KernelPanels, MetricValue, Panel, PanelDelta, Screenshot,
    MAX_SCREENSHOT_BYTES,
};
use showdown_core::occupancy::{
    occupancy, parse_cc, sweep_block_size, GpuLimits, OccupancyInput, OccupancyOutput,
    SUPPORTED_COMPUTE_CAPABILITIES,
};
use showdown_core::protocol::NcuRepImportRequest;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::bridge;
use crate::charts::{self, LineChart, Series, COLORS};

/// The Act IV page.
#[component]
pub fn ProfilingPage() -> impl IntoView {
    view! {
        <h2>"Act IV · Occupancy & Profiling"</h2>
        <Calculator/>
        <NcuLibrary/>
    }
}

fn slider(
    id: &'static str,
    label: &'static str,
    value: RwSignal<u32>,
    min: u32,
    max: Signal<u32>,
    step: u32,
) -> impl IntoView {
    view! {
        <label class="slider" for=id>
            <span>{label}</span>
            <input type="range" id=id min=min.to_string() max=move || max.get().to_string() step=step.to_string()
                prop:value=move || value.get().to_string()
                on:input=move |ev| {
                    if let Ok(v) = event_target_value(&ev).parse::<u32>() {
                        value.set(v);
                    }
                }/>
            <output id=format!("{id}-value")>{move || value.get().to_string()}</output>
        </label>
    }
}

fn result_view(o: OccupancyOutput) -> impl IntoView {
    let limiters = o
        .limiters
        .iter()
        .map(|l| l.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let opt = |v: Option<u32>| {
        v.map(|b| b.to_string())
            .unwrap_or_else(|| "no limit".into())
    };
    let notes = o
        .notes
        .into_iter()
        .map(|n| view! { <li>{n}</li> })
        .collect_view();
    view! {
        <div id="occ-result" class="card">
            <p class="big"><span id="occ-pct">{format!("{:.1} %", o.occupancy_pct)}</span>" theoretical occupancy"</p>
            <table>
                <tbody>
                    <tr><th>"active blocks / SM"</th><td id="occ-blocks" class="num">{o.active_blocks_per_sm}</td></tr>
                    <tr><th>"active warps / SM"</th><td id="occ-warps" class="num">{format!("{} of {}", o.active_warps_per_sm, o.max_warps_per_sm)}</td></tr>
                    <tr><th>"limited by"</th><td id="occ-limiter">{limiters}</td></tr>
                    <tr><th>"blocks allowed by warps · registers · shared memory · max blocks"</th>
                        <td class="num">{format!("{} · {} · {} · {}", o.blocks_by_warps, opt(o.blocks_by_registers), opt(o.blocks_by_shared_memory), o.blocks_by_max_blocks)}</td></tr>
                    <tr><th>"registers per block"</th><td class="num">{o.registers_per_block}</td></tr>
                    <tr><th>"shared memory per block (allocated)"</th><td class="num">{format!("{} B", o.shared_memory_per_block)}</td></tr>
                </tbody>
            </table>
            <ul class="notes">{notes}</ul>
        </div>
    }
}

#[component]
fn Calculator() -> impl IntoView {
    let cc = RwSignal::new("9.0".to_string());
    // This GPU first: the calculator opens on the device's compute capability (the doctor's
    // first GPU) when the calculator knows it; without a GPU it says its default is an example.
    let this_gpu = RwSignal::new(None::<String>);
    leptos::task::spawn_local(async move {
        let note = match crate::bridge::doctor().await {
            Ok(d) => match d.gpus.first() {
                Some(g)
                    if parse_cc(&g.compute_capability)
                        .and_then(|(a, b)| GpuLimits::for_cc(a, b))
                        .is_ok() =>
                {
                    let v = parse_cc(&g.compute_capability)
                        .map(|(a, b)| format!("{a}.{b}"))
                        .unwrap_or_else(|_| g.compute_capability.clone());
                    cc.set(v.clone());
                    format!("this machine's GPU: {} (compute capability {v})", g.name)
                }
                Some(g) => format!(
                    "this machine's GPU, {} (compute capability {}), is not in the calculator's \
                     table: showing 9.0 (H100) instead",
                    g.name, g.compute_capability
                ),
                None => "no GPU on this machine: 9.0 (H100) is shown as an example".into(),
            },
            Err(e) => format!("the machine could not be asked for its GPU ({e}): showing 9.0"),
        };
        this_gpu.set(Some(note));
    });
    let threads = RwSignal::new(256u32);
    let regs = RwSignal::new(32u32);
    let smem = RwSignal::new(0u32);
    let limits: Memo<Result<GpuLimits, String>> = Memo::new(move |_| {
        parse_cc(&cc.get())
            .and_then(|(a, b)| GpuLimits::for_cc(a, b))
            .map_err(|e| e.to_string())
    });
    let smem_max = Signal::derive(move || {
        limits
            .get()
            .map(|l| l.max_shared_memory_per_block_optin)
            .unwrap_or(48 * 1024)
    });
    let regs_max = Signal::derive(move || {
        limits
            .get()
            .map(|l| l.max_registers_per_thread)
            .unwrap_or(255)
    });
    let threads_max = Signal::derive(move || {
        limits
            .get()
            .map(|l| l.max_threads_per_block)
            .unwrap_or(1024)
    });
    let input = move || OccupancyInput {
        threads_per_block: threads.get(),
        registers_per_thread: regs.get(),
        shared_mem_per_block: smem.get().min(smem_max.get()),
        carveout_pct: None,
    };
    let result: Memo<Result<OccupancyOutput, String>> = Memo::new(move |_| {
        let l = limits.get()?;
        occupancy(&l, &input()).map_err(|e| e.to_string())
    });
    let canvas = NodeRef::<Canvas>::new();
    let chart_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let (Some(c), Ok(l)) = (canvas.get(), limits.get()) else {
            return;
        };
        let inp = input();
        let points: Vec<(f64, f64)> = sweep_block_size(&l, &inp)
            .into_iter()
            .map(|p| (p.x as f64, p.occupancy_pct))
            .collect();
        let marker = result
            .get()
            .ok()
            .map(|o| (inp.threads_per_block as f64, o.occupancy_pct));
        let series = [Series {
            name: "occupancy".into(),
            color: COLORS[0],
            points,
        }];
        let title = format!(
            "Occupancy vs block size (sm_{}, {} registers/thread, {} B shared/block)",
            l.sm_name().trim_start_matches("sm_"),
            inp.registers_per_thread,
            inp.shared_mem_per_block
        );
        let r = charts::line_chart(
            c,
            &LineChart {
                title: &title,
                x_desc: "threads per block",
                y_desc: "occupancy (%)",
                series: &series,
                marker,
                y_range: Some((0.0, 105.0)),
            },
        );
        chart_error.set(r.err());
    });
    let ccs = SUPPORTED_COMPUTE_CAPABILITIES
        .iter()
        .map(|(a, b)| {
            let v = format!("{a}.{b}");
            let selected = v.clone();
            view! { <option value=v.clone() selected=move || cc.get() == selected>{format!("{v} (sm_{a}{b})")}</option> }
        })
        .collect_view();
    view! {
        <section id="calculator">
            <h3>"Occupancy calculator"</h3>
            <p>"How many warps of a kernel fit on one streaming multiprocessor, and which resource stops more — the driver's calculation, run in your browser."</p>
            <div class="controls">
                <label for="cc">"compute capability "
                    <select id="cc" prop:value=move || cc.get() on:change=move |ev| cc.set(event_target_value(&ev))>{ccs}</select>
                </label>
                <span id="cc-this-gpu" class="muted">{move || this_gpu.get().unwrap_or_default()}</span>
                {slider("threads", "threads per block", threads, 32, threads_max, 32)}
                {slider("registers", "registers per thread", regs, 0, regs_max, 1)}
                {slider("shared", "shared memory per block (bytes)", smem, 0, smem_max, 512)}
            </div>
            {move || match result.get() {
                Ok(o) => result_view(o).into_any(),
                Err(e) => view! { <p class="error">{e}</p> }.into_any(),
            }}
            <canvas id="occ-chart" node_ref=canvas width="760" height="320"></canvas>
            {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
        </section>
    }
}

fn value_text(v: &MetricValue, unit: &str) -> String {
    match v {
        MetricValue::Number(n) => {
            let s = if n.fract() == 0.0 && n.abs() < 1e15 {
                format!("{n:.0}")
            } else {
                format!("{n:.2}")
            };
            if unit.is_empty() {
                s
            } else {
                format!("{s} {unit}")
            }
        }
        MetricValue::Text(t) => t.clone(),
    }
}

/// A difference with its sign and unit (`+12.50 %`).
fn signed_text(d: f64, unit: &str) -> String {
    let s = if d.fract() == 0.0 && d.abs() < 1e15 {
        format!("{d:+.0}")
    } else {
        format!("{d:+.3}")
    };
    if unit.is_empty() {
        s
    } else {
        format!("{s} {unit}")
    }
}

/// A size in bytes, in the largest unit that keeps it at least 1.
fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// Standard padded base64, how `ncu_attach` takes an image's bytes and `ncu_rep_import` a
/// report's.
fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The file chosen in the `<input type="file">` an event came from.
fn chosen_file(ev: &leptos::ev::Event) -> Option<web_sys::File> {
    ev.target()
        .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
        .and_then(|input| input.files())
        .and_then(|files| files.get(0))
}

/// Resets a file input, so that choosing the same file again is a change too.
fn clear_input(ev: &leptos::ev::Event) {
    if let Some(input) = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
    {
        input.set_value("");
    }
}

/// Reads `file` (a PNG or JPEG screenshot) and attaches it to panel `panel` of import `import`.
async fn attach_file(
    import: &str,
    panel: &str,
    kernel: Option<u64>,
    file: web_sys::File,
    caption: Option<String>,
) -> Result<Screenshot, String> {
    let name = file.name();
    if file.size() > MAX_SCREENSHOT_BYTES as f64 {
        return Err(format!(
            "{name}: {:.0} bytes is over the {} MiB limit for a screenshot",
            file.size(),
            MAX_SCREENSHOT_BYTES >> 20
        ));
    }
    let buffer = JsFuture::from(file.array_buffer())
        .await
        .map_err(|_| format!("cannot read {name}"))?;
    let bytes = js_sys::Uint8Array::new(&buffer).to_vec();
    bridge::ncu_attach(import, panel, kernel, &name, base64_encode(&bytes), caption)
        .await
        .map_err(|e| e.message)
}

/// The saved imports and the one open, shared by the library, its panels and the comparison.
#[derive(Clone, Copy)]
struct Library {
    /// The saved imports, oldest first.
    imports: RwSignal<Vec<ImportSummary>>,
    /// The notes naming what the library left out (a damaged import or screenshot).
    skipped: RwSignal<Vec<String>>,
    /// Whether the list has been fetched once.
    listed: RwSignal<bool>,
    /// The last failure of an import, a removal or a listing.
    error: RwSignal<Option<String>>,
    /// What is being imported now.
    busy: RwSignal<Option<String>>,
    /// The open import's ID.
    open: RwSignal<Option<String>>,
    /// The open import's kernels with their panels.
    kernels: RwSignal<Option<Result<Vec<KernelPanels>, String>>>,
    /// The index of the kernel shown.
    kernel: RwSignal<usize>,
}

impl Library {
    fn new() -> Self {
        Library {
            imports: RwSignal::new(Vec::new()),
            skipped: RwSignal::new(Vec::new()),
            listed: RwSignal::new(false),
            error: RwSignal::new(None),
            busy: RwSignal::new(None),
            open: RwSignal::new(None),
            kernels: RwSignal::new(None),
            kernel: RwSignal::new(0),
        }
    }

    /// Fetches the list of saved imports again.
    fn refresh(self) {
        leptos::task::spawn_local(async move {
            match bridge::ncu_imports().await {
                Ok(list) => {
                    let first_visit = list.imports.is_empty() && !example_offered();
                    self.imports.set(list.imports);
                    self.skipped.set(list.skipped);
                    self.listed.set(true);
                    if first_visit {
                        // A new user's library opens with the example report, its panels
                        // shown; once only, so a removed example stays removed.
                        mark_example_offered();
                        self.add_example();
                    }
                }
                Err(e) => self.error.set(Some(e.message)),
            }
        });
    }

    /// Adds the example report (a real export of our kernels) to the library and opens it.
    fn add_example(self) {
        leptos::task::spawn_local(async move {
            match bridge::ncu_example().await {
                Ok(example) => {
                    self.refresh();
                    self.show(example.id, false);
                }
                Err(e) => self.error.set(Some(e.message)),
            }
        });
    }

    /// Opens import `id`: loads its kernels' panels (keeping the kernel shown when
    /// `keep_kernel`, as after attaching a screenshot).
    fn show(self, id: String, keep_kernel: bool) {
        if !keep_kernel {
            self.kernel.set(0);
            self.kernels.set(None);
        }
        self.open.set(Some(id.clone()));
        leptos::task::spawn_local(async move {
            let r = bridge::ncu_panels(&id, None).await.map_err(|e| e.message);
            // A later choice wins over a slower answer.
            if self.open.try_get_untracked().flatten().as_deref() != Some(id.as_str()) {
                return;
            }
            if let Ok(kernels) = &r {
                let last = kernels.len().saturating_sub(1);
                if self.kernel.get_untracked() > last {
                    self.kernel.set(0);
                }
            }
            self.kernels.set(Some(r));
        });
    }

    /// After a screenshot was attached or removed: the list (screenshot counts) and the open
    /// import's panels again.
    fn changed(self) {
        self.refresh();
        if let Some(id) = self.open.get_untracked() {
            self.show(id, true);
        }
    }

    /// Imports `files` one after the other through the service, then opens the last one.
    fn import(self, files: Vec<web_sys::File>) {
        if files.is_empty() {
            return;
        }
        self.error.set(None);
        leptos::task::spawn_local(async move {
            let mut last = None;
            for file in files {
                let name = file.name();
                self.busy.set(Some(format!("importing {name}…")));
                if name.to_ascii_lowercase().ends_with(".ncu-rep") {
                    // Binary: the service exports it through `ncu --import`; without ncu its
                    // error names the command to run where ncu is.
                    let r = match JsFuture::from(file.array_buffer()).await {
                        Ok(buffer) => bridge::call(NcuRepImportRequest {
                            file_name: name.clone(),
                            base64: base64_encode(&js_sys::Uint8Array::new(&buffer).to_vec()),
                        })
                        .await
                        .map_err(|e| e.message),
                        Err(_) => Err(format!("cannot read {name}")),
                    };
                    match r {
                        Ok(summary) => last = Some(summary.id),
                        Err(e) => self.error.set(Some(e)),
                    }
                    continue;
                }
                let text = JsFuture::from(file.text())
                    .await
                    .ok()
                    .and_then(|t| t.as_string());
                let Some(text) = text else {
                    self.error.set(Some(format!("cannot read {name} as text")));
                    continue;
                };
                match bridge::ncu_import(&name, text).await {
                    Ok(summary) => last = Some(summary.id),
                    Err(e) => self.error.set(Some(e.message)),
                }
            }
            self.busy.set(None);
            self.refresh();
            if let Some(id) = last {
                self.show(id, false);
            }
        });
    }

    /// Removes import `id` and its screenshots.
    fn remove(self, id: String) {
        leptos::task::spawn_local(async move {
            match bridge::ncu_remove(&id).await {
                Ok(_) => {
                    if self.open.try_get_untracked().flatten().as_deref() == Some(id.as_str()) {
                        self.open.set(None);
                        self.kernels.set(None);
                    }
                    self.refresh();
                }
                Err(e) => self.error.set(Some(e.message)),
            }
        });
    }

    /// The open import's summary.
    fn open_summary(self) -> Option<ImportSummary> {
        let id = self.open.get()?;
        self.imports
            .with(|list| list.iter().find(|i| i.id == id).cloned())
    }
}

/// A screenshot beside its panel: the image (fetched from the service), its caption and a
/// button to remove it.
#[component]
fn ShotView(shot: Screenshot, import: String, library: Library) -> impl IntoView {
    let src = RwSignal::new(None::<Result<String, String>>);
    {
        let (import, id) = (import.clone(), shot.id.clone());
        leptos::task::spawn_local(async move {
            let r = bridge::ncu_screenshot(&import, &id).await;
            src.set(Some(r.map(|i| i.data_url()).map_err(|e| e.message)));
        });
    }
    let detach_error = RwSignal::new(None::<String>);
    let id = shot.id.clone();
    let on_detach = move |_| {
        let (import, id) = (import.clone(), id.clone());
        leptos::task::spawn_local(async move {
            match bridge::ncu_detach(&import, &id).await {
                Ok(_) => library.changed(),
                Err(e) => detach_error.set(Some(e.message)),
            }
        });
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
                    <img class="screenshot-image" src=url alt=alt.clone()
                        style="max-width:100%;border:1px solid #ddd"/>
                }.into_any(),
                Some(Err(e)) => view! { <p class="error">{e}</p> }.into_any(),
            }}
            <figcaption>
                <span class="screenshot-caption">{caption}</span>
                " " <span class="muted">{facts}</span>
            </figcaption>
            <button class="detach" on:click=on_detach>"Remove screenshot"</button>
            {move || detach_error.get().map(|e| view! { <p class="error">{e}</p> })}
        </figure>
    }
}

/// One of the seven panels of a kernel of the open import, with its screenshots and the
/// controls to attach one.
#[component]
fn PanelView(panel: Panel, import: String, kernel_id: u64, library: Library) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
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
            view! {
                <tr><td title=m.name.clone()>{m.label.clone()}</td><td class="num">{value_text(&m.value, &m.unit)}</td></tr>
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
                    " " <strong>{r.name.clone()}</strong> {speedup} ": " {r.description.clone()}</li>
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
    let attaching = RwSignal::new(false);
    let attach_error = RwSignal::new(None::<String>);
    let panel_id = panel.id.clone();
    let on_attach = move |ev: leptos::ev::Event| {
        let Some(file) = chosen_file(&ev) else {
            return;
        };
        clear_input(&ev);
        let (import, panel_id) = (import.clone(), panel_id.clone());
        let kernel = (!every_kernel.get_untracked()).then_some(kernel_id);
        let text = caption.get_untracked();
        let text = (!text.trim().is_empty()).then_some(text);
        attaching.set(true);
        attach_error.set(None);
        leptos::task::spawn_local(async move {
            let r = attach_file(&import, &panel_id, kernel, file, text).await;
            attaching.set(false);
            match r {
                Ok(_) => {
                    caption.set(String::new());
                    library.changed();
                }
                Err(e) => attach_error.set(Some(e)),
            }
        });
    };
    view! {
        <article class="panel card" id=format!("panel-{}", panel.id) data-panel=panel.id.clone()>
            <h4>{panel.title.clone()}</h4>
            <div class="panel-body" style="display:flex;flex-wrap:wrap;gap:1rem;align-items:flex-start">
                <div class="panel-main" style="flex:1 1 560px;min-width:0">
                    <p class="narrative">{panel.narrative.clone()}</p>
                    <table class="metrics"><tbody>{rows}</tbody></table>
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
                        {move || attach_error.get().map(|e| view! { <p class="error attach-error">{e}</p> })}
                    </div>
                </aside>
            </div>
        </article>
    }
}

/// The `sessionStorage` key under which another page leaves an import's ID for this page to
/// open on load (the key is removed as it is read).
pub const OPEN_IMPORT_KEY: &str = "showdown.open_import";

/// The import another page asked this one to open ([`OPEN_IMPORT_KEY`]), taken out of
/// `sessionStorage`.
fn take_open_import() -> Option<String> {
    let store = web_sys::window()?.session_storage().ok().flatten()?;
    let id = store.get_item(OPEN_IMPORT_KEY).ok().flatten();
    let _ = store.remove_item(OPEN_IMPORT_KEY);
    id.map(|i| i.trim().to_string()).filter(|i| !i.is_empty())
}

/// Where the page remembers that it offered the example report (this browser, this origin).
const EXAMPLE_OFFERED_KEY: &str = "showdown-ncu-example-offered";

fn example_offered() -> bool {
    web_sys::window()
        .and_then(|w| w.local_storage().ok().flatten())
        .and_then(|s| s.get_item(EXAMPLE_OFFERED_KEY).ok().flatten())
        .is_some()
}

fn mark_example_offered() {
    if let Some(s) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) {
        let _ = s.set_item(EXAMPLE_OFFERED_KEY, "1");
    }
}

/// The saved imports, with buttons to open or remove each; the example report marked as such,
/// and a button to add it (back) when it is not there.
fn library_view(library: Library) -> impl IntoView {
    move || {
        let list = library.imports.get();
        let add_example = (library.listed.get() && !list.iter().any(|i| i.example)).then(|| {
            view! {
                <button id="ncu-add-example" on:click=move |_| library.add_example()>
                    "Add the example report (our kernels on an H100)"
                </button>
            }
        });
        if list.is_empty() {
            let text = if library.listed.get() {
                "No saved imports yet."
            } else {
                "reading the library…"
            };
            return view! { <p class="muted empty">{text}</p> {add_example} }.into_any();
        }
        let open = library.open.get();
        let items = list
            .into_iter()
            .map(|i| {
                let is_open = open.as_deref() == Some(i.id.as_str());
                let facts = format!(
                    "{:?} page · {} kernel(s) · {} · {} screenshot(s)",
                    i.format,
                    i.kernels,
                    size_text(i.source_bytes),
                    i.screenshots.len()
                );
                let (open_id, remove_id) = (i.id.clone(), i.id.clone());
                let example = i.example.then(|| {
                    view! { <span class="example-badge" title="a real export of our kernels that ships with the lab">"example"</span> " " }
                });
                view! {
                    <li class="import" class:selected=is_open class:example=i.example data-import=i.id.clone()>
                        {example}
                        <strong class="import-name">{i.source_name.clone()}</strong>
                        " " <span class="muted">{facts}</span> " "
                        <button class="open-import" on:click=move |_| library.show(open_id.clone(), false)>"Open"</button>
                        <button class="remove-import" on:click=move |_| library.remove(remove_id.clone())>"Remove"</button>
                    </li>
                }
            })
            .collect_view();
        view! { <ul class="imports">{items}</ul> {add_example} }.into_any()
    }
}

/// What the library left out because it could not be read (a damaged import or screenshot),
/// one muted line each, as the service named it.
fn skipped_view(library: Library) -> impl IntoView {
    move || {
        let notes = library.skipped.get();
        (!notes.is_empty()).then(|| {
            let items = notes
                .into_iter()
                .map(|n| view! { <li>{n}</li> })
                .collect_view();
            view! {
                <div id="ncu-skipped" class="muted">
                    <p>"Left out of the library (damaged files):"</p>
                    <ul class="skipped">{items}</ul>
                </div>
            }
        })
    }
}

/// The open import: its kernel picker and the seven panels of the kernel chosen.
fn open_import_view(library: Library) -> impl IntoView {
    let current: Memo<Option<KernelPanels>> = Memo::new(move |_| {
        let i = library.kernel.get();
        library
            .kernels
            .with(|k| k.as_ref()?.as_ref().ok()?.get(i).cloned())
    });
    move || {
        let Some(id) = library.open.get() else {
            return view! { <p class="muted">"Open a saved import to read its panels."</p> }
                .into_any();
        };
        let kernels = match library.kernels.get() {
            None => return view! { <p class="muted">"loading the panels…"</p> }.into_any(),
            Some(Err(e)) => {
                return view! { <p class="error" id="ncu-panels-error">{e}</p> }.into_any()
            }
            Some(Ok(k)) => k,
        };
        let summary = library.open_summary().map(|s| {
            format!(
                "{}: {} kernel(s), {:?} page",
                s.source_name, s.kernels, s.format
            )
        });
        let options = kernels
            .iter()
            .enumerate()
            .map(|(i, k)| {
                view! { <option value=i.to_string()>{format!("#{} {}", k.id, k.short_name)}</option> }
            })
            .collect_view();
        let import = id.clone();
        view! {
            <p id="ncu-summary">{summary}</p>
            <label for="kernel">"kernel "
                <select id="kernel" prop:value=move || library.kernel.get().to_string()
                    on:change=move |ev| {
                        if let Ok(i) = event_target_value(&ev).parse() {
                            library.kernel.set(i);
                        }
                    }>{options}</select>
            </label>
            {move || current.get().map(|k| {
                let import = import.clone();
                view! {
                    <p class="kernel-name" id="kernel-name">{k.name.clone()}</p>
                    <div id="panels">
                        {k.panels.into_iter().map(|p| view! {
                            <PanelView panel=p import=import.clone() kernel_id=k.id library=library/>
                        }).collect_view()}
                    </div>
                }
            })}
        }
        .into_any()
    }
}

/// One side (A or B) of the comparison: an import and one of its kernels.
#[derive(Clone, Copy)]
struct Side {
    /// The import's ID (empty: none chosen).
    import: RwSignal<String>,
    /// Its kernels' panels.
    kernels: RwSignal<Option<Result<Vec<KernelPanels>, String>>>,
    /// The index of the kernel compared.
    kernel: RwSignal<usize>,
}

impl Side {
    fn new() -> Self {
        Side {
            import: RwSignal::new(String::new()),
            kernels: RwSignal::new(None),
            kernel: RwSignal::new(0),
        }
    }

    /// Chooses import `id` and loads its panels.
    fn choose(self, id: String) {
        self.import.set(id.clone());
        self.kernel.set(0);
        self.kernels.set(None);
        if id.is_empty() {
            return;
        }
        leptos::task::spawn_local(async move {
            let r = bridge::ncu_panels(&id, None).await.map_err(|e| e.message);
            if self.import.try_get_untracked().as_deref() == Some(id.as_str()) {
                self.kernels.set(Some(r));
            }
        });
    }

    /// The kernel chosen, once loaded.
    fn current(self) -> Option<KernelPanels> {
        let i = self.kernel.get();
        self.kernels
            .with(|k| k.as_ref()?.as_ref().ok()?.get(i).cloned())
    }
}

/// The pickers of one side of the comparison (`name` is `a` or `b`).
fn side_view(
    name: &'static str,
    label: &'static str,
    side: Side,
    library: Library,
) -> impl IntoView {
    let imports = move || {
        library
            .imports
            .get()
            .into_iter()
            .map(|i| {
                let chosen = side.import.get_untracked() == i.id;
                view! {
                    <option value=i.id.clone() selected=chosen>
                        {format!("{} ({} kernel(s))", i.source_name, i.kernels)}
                    </option>
                }
            })
            .collect_view()
    };
    let kernels = move || match side.kernels.get() {
        None => None,
        Some(Err(e)) => Some(view! { <p class="error">{e}</p> }.into_any()),
        Some(Ok(ks)) => {
            let options = ks
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    view! { <option value=i.to_string()>{format!("#{} {}", k.id, k.short_name)}</option> }
                })
                .collect_view();
            Some(
                view! {
                    <select id=format!("compare-{name}-kernel")
                        prop:value=move || side.kernel.get().to_string()
                        on:change=move |ev| {
                            if let Ok(i) = event_target_value(&ev).parse() {
                                side.kernel.set(i);
                            }
                        }>{options}</select>
                }
                .into_any(),
            )
        }
    };
    view! {
        <div class="compare-side" style="flex:1 1 300px;min-width:0">
            <label for=format!("compare-{name}")>{label}" "</label>
            <select id=format!("compare-{name}") on:change=move |ev| side.choose(event_target_value(&ev))>
                <option value="">"— choose an import —"</option>
                {imports}
            </select>
            {kernels}
        </div>
    }
}

/// One row of the comparison table.
fn delta_row(d: PanelDelta) -> impl IntoView {
    let ratio = d
        .ratio
        .map(|r| format!("{r:.3}×"))
        .unwrap_or_else(|| "—".into());
    let difference = d
        .difference
        .map(|x| signed_text(x, &d.unit))
        .unwrap_or_else(|| "—".into());
    view! {
        <tr class="delta" data-panel=d.panel.clone()>
            <td>{d.panel_title.clone()}</td>
            <td title=format!("{} / {}", d.section, d.name)>{d.label.clone()}</td>
            <td class="num a">{value_text(&d.a, &d.unit)}</td>
            <td class="num b">{value_text(&d.b, &d.unit)}</td>
            <td class="num ratio">{ratio}</td>
            <td class="num difference">{difference}</td>
        </tr>
    }
}

/// The most bars the comparison chart draws.
const MAX_COMPARE_BARS: usize = 40;

/// Compares two saved imports (or two kernels of one): every panel metric both have, with
/// B / A and B − A, as a table and a bar chart of the ratios.
#[component]
fn Compare(library: Library) -> impl IntoView {
    let a = Side::new();
    let b = Side::new();
    let deltas: Memo<Option<(String, String, Vec<PanelDelta>)>> = Memo::new(move |_| {
        let (ka, kb) = (a.current()?, b.current()?);
        Some((
            ka.short_name.clone(),
            kb.short_name.clone(),
            compare_panels(&ka, &kb),
        ))
    });
    let canvas = NodeRef::<Canvas>::new();
    let chart_error = RwSignal::new(None::<String>);
    let has_bars = move || {
        deltas.with(|d| {
            d.as_ref()
                .is_some_and(|(_, _, rows)| rows.iter().any(|r| r.ratio.is_some()))
        })
    };
    Effect::new(move |_| {
        let Some(c) = canvas.get() else {
            return;
        };
        let bars: Vec<(String, f64)> = deltas.with(|d| {
            d.as_ref()
                .map(|(_, _, rows)| {
                    rows.iter()
                        .filter_map(|r| Some((format!("{}: {}", r.panel_title, r.label), r.ratio?)))
                        .filter(|(_, v)| v.is_finite())
                        .take(MAX_COMPARE_BARS)
                        .collect()
                })
                .unwrap_or_default()
        });
        if bars.is_empty() {
            return;
        }
        c.set_height(40 + 24 * bars.len() as u32);
        let r = charts::bar_chart(
            c,
            "B / A for each metric both have (1 = the same)",
            "×",
            None,
            &bars,
        );
        chart_error.set(r.err());
    });
    let table = move || {
        let Some((name_a, name_b, rows)) = deltas.get() else {
            return view! {
                <p class="muted">"Choose two imports (or one import twice, with two kernels) to compare their panels."</p>
            }
            .into_any();
        };
        if rows.is_empty() {
            return view! { <p class="muted" id="compare-empty">"These two kernels have no panel metric in common."</p> }
                .into_any();
        }
        let numeric = rows.iter().filter(|r| r.ratio.is_some()).count();
        let caption = format!(
            "A: {name_a} · B: {name_b} — {} metric(s) in both, {numeric} with a ratio",
            rows.len()
        );
        view! {
            <p class="kernel-name" id="compare-caption">{caption}</p>
            <table id="compare-table">
                <thead><tr><th>"Panel"</th><th>"Metric"</th><th>"A"</th><th>"B"</th><th>"B / A"</th><th>"B − A"</th></tr></thead>
                <tbody>{rows.into_iter().map(delta_row).collect_view()}</tbody>
            </table>
        }
        .into_any()
    };
    view! {
        <section id="ncu-compare" class="card">
            <h4>"Compare two reports"</h4>
            <div class="controls" style="align-items:flex-start">
                {side_view("a", "A", a, library)}
                {side_view("b", "B", b, library)}
            </div>
            <canvas id="compare-chart" node_ref=canvas width="760" height="40"
                style:display=move || if has_bars() { "block" } else { "none" }></canvas>
            {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
            {table}
        </section>
    }
}

/// The Nsight Compute library: import by file choice or drop, the saved imports, the open
/// import's panels with their screenshots, and the comparison of two reports.
#[component]
fn NcuLibrary() -> impl IntoView {
    let library = Library::new();
    library.refresh();
    if let Some(id) = take_open_import() {
        // As if the user had picked it in the library; its panels scrolled into view.
        library.show(id, false);
        request_animation_frame(|| {
            if let Some(e) = document().get_element_by_id("ncu-library") {
                e.scroll_into_view();
            }
        });
    }
    let dragging = RwSignal::new(false);
    let on_file = move |ev: leptos::ev::Event| {
        let files: Vec<web_sys::File> = chosen_file(&ev).into_iter().collect();
        clear_input(&ev);
        library.import(files);
    };
    let on_drop = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        dragging.set(false);
        let files: Vec<web_sys::File> = ev
            .data_transfer()
            .and_then(|d| d.files())
            .map(|list| (0..list.length()).filter_map(|i| list.get(i)).collect())
            .unwrap_or_default();
        library.import(files);
    };
    view! {
        <section id="ncu">
            <h3>"Nsight Compute reports"</h3>
            <p>"Drop a " <code>".ncu-rep"</code> " report below (or choose it): the compute service exports it with "
               <code>"ncu --import"</code> " where Nsight Compute is installed, and otherwise says the command to run. A CSV export made with "
               <code>"ncu --csv --page details --import report.ncu-rep > report.csv"</code>
               " works too. Imports are kept in the lab's library on this machine, with the screenshots you attach to their panels, and survive restarts."</p>
            <div id="ncu-drop" class="drop-zone card"
                style:border=move || if dragging.get() { "2px dashed #1f6feb" } else { "2px dashed #aab" }
                style:background=move || if dragging.get() { "#eef4f8" } else { "#fff" }
                on:dragover=move |ev: leptos::ev::DragEvent| {
                    ev.prevent_default();
                    dragging.set(true);
                }
                on:dragleave=move |_| dragging.set(false)
                on:drop=on_drop>
                <p>"Drop a .ncu-rep report or an ncu CSV export here, or choose one: "
                    <input type="file" id="ncu-file" accept=".ncu-rep,.csv,text/csv" on:change=on_file/>
                </p>
                {move || library.busy.get().map(|b| view! { <p class="muted" id="ncu-busy">{b}</p> })}
            </div>
            {move || library.error.get().map(|e| view! { <p class="error" id="ncu-error">{e}</p> })}
            <div id="ncu-library">
                <h4>"Saved imports"</h4>
                {library_view(library)}
                {skipped_view(library)}
            </div>
            {open_import_view(library)}
            <Compare library=library/>
        </section>
    }
}
