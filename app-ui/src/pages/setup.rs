//! Act I – The Setup: a grid of real images from the chosen data set (read by the compute
//! service, drawn on a canvas, 64 a page), and the lab CNN layer by layer, computed in the
//! browser by compute's pure core. Click a layer (in the diagram or the table) for its shapes,
//! parameters, FLOPs and activation memory.

use leptos::html::Canvas;
use leptos::prelude::*;
use showdown_core::model::{lab_summary, LayerInfo};
use showdown_core::types::{DataSplit, DatasetSamples, DatasetSummary};
use wasm_bindgen::{Clamped, JsCast};

use crate::bridge;

/// Images on a page of the grid.
const PAGE: usize = 64;
/// Images per row of the grid.
const GRID_COLUMNS: usize = 8;
/// Each image pixel is drawn as a `ZOOM × ZOOM` square.
const ZOOM: usize = 3;
/// Space between images, canvas pixels.
const GAP: usize = 8;
/// Height of the caption under each image, canvas pixels.
const CAPTION: usize = 14;

/// Draws `page` on `canvas` as rows of [`GRID_COLUMNS`] images, dark ink on white, each
/// with its class name beneath; sizes the canvas to fit.
fn draw_grid(canvas: &web_sys::HtmlCanvasElement, page: &DatasetSamples) -> Result<(), String> {
    let pixels = page
        .pixels()
        .map_err(|e| format!("the page's pixels are unreadable: {e}"))?;
    let (w, h) = (page.width, page.height);
    let cell_w = w * ZOOM + GAP;
    let cell_h = h * ZOOM + GAP + CAPTION;
    let rows = page.count().div_ceil(GRID_COLUMNS).max(1);
    let (cw, ch) = (GRID_COLUMNS * cell_w, rows * cell_h);
    canvas.set_width(cw as u32);
    canvas.set_height(ch as u32);
    let ctx = canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<web_sys::CanvasRenderingContext2d>().ok())
        .ok_or("the canvas has no 2D context")?;
    let mut rgba = vec![255u8; cw * ch * 4];
    for (i, image) in pixels.chunks_exact(w * h).enumerate() {
        let (x0, y0) = (
            (i % GRID_COLUMNS) * cell_w + GAP / 2,
            (i / GRID_COLUMNS) * cell_h + GAP / 2,
        );
        for (p, &v) in image.iter().enumerate() {
            let ink = 255 - v;
            let (px, py) = (x0 + (p % w) * ZOOM, y0 + (p / w) * ZOOM);
            for dy in 0..ZOOM {
                let row = ((py + dy) * cw + px) * 4;
                for k in rgba[row..row + ZOOM * 4].chunks_exact_mut(4) {
                    k.copy_from_slice(&[ink, ink, ink, 255]);
                }
            }
        }
    }
    let data = web_sys::ImageData::new_with_u8_clamped_array_and_sh(
        Clamped(&rgba[..]),
        cw as u32,
        ch as u32,
    )
    .map_err(|e| format!("cannot make the image: {e:?}"))?;
    ctx.put_image_data(&data, 0.0, 0.0)
        .map_err(|e| format!("cannot draw the image: {e:?}"))?;
    ctx.set_font("11px sans-serif");
    ctx.set_text_align("center");
    ctx.set_fill_style_str("#333");
    for i in 0..page.count() {
        let x = (i % GRID_COLUMNS) * cell_w + cell_w / 2;
        let y = (i / GRID_COLUMNS) * cell_h + GAP / 2 + h * ZOOM + CAPTION - 2;
        ctx.fill_text(page.class_of(i), x as f64, y as f64)
            .map_err(|e| format!("cannot write a caption: {e:?}"))?;
    }
    Ok(())
}

/// The grid of real images: a data-set and split picker, the canvas, and paging.
#[component]
fn DigitGrid() -> impl IntoView {
    let datasets: RwSignal<Vec<DatasetSummary>> = RwSignal::new(Vec::new());
    let dataset = RwSignal::new("mnist-sample".to_string());
    let split = RwSignal::new(DataSplit::Test);
    let offset = RwSignal::new(0usize);
    let page: RwSignal<Option<DatasetSamples>> = RwSignal::new(None);
    let error = RwSignal::new(None::<String>);
    let loading = RwSignal::new(false);
    // Only the answer to the latest request is shown.
    let generation = StoredValue::new(0u64);

    leptos::task::spawn_local(async move {
        match bridge::list_datasets().await {
            Ok(list) => datasets.set(list),
            Err(e) => error.set(Some(format!("cannot list the data sets: {}", e.message))),
        }
    });

    Effect::new(move |_| {
        let (name, sp, at) = (dataset.get(), split.get(), offset.get());
        generation.update_value(|g| *g += 1);
        let mine = generation.get_value();
        loading.set(true);
        leptos::task::spawn_local(async move {
            let answer = bridge::dataset_samples(&name, sp, at, PAGE).await;
            if generation.get_value() != mine {
                return;
            }
            loading.set(false);
            match answer {
                Ok(p) => {
                    error.set(None);
                    page.set(Some(p));
                }
                Err(e) => error.set(Some(format!("cannot read {name}: {}", e.message))),
            }
        });
    });

    let canvas = NodeRef::<Canvas>::new();
    Effect::new(move |_| {
        let Some(c) = canvas.get() else { return };
        page.with(|p| {
            if let Some(p) = p {
                if let Err(e) = draw_grid(&c, p) {
                    error.set(Some(e));
                }
            }
        });
    });

    let options = move || {
        let list: Vec<DatasetSummary> =
            datasets.with(|l| l.iter().filter(|d| d.available).cloned().collect());
        if list.is_empty() {
            return view! { <option value="mnist-sample">"mnist-sample"</option> }.into_any();
        }
        list.into_iter()
            .map(|d| {
                let selected = d.name == dataset.get_untracked();
                let label = format!("{} ({} train / {} test)", d.name, d.train, d.test);
                view! { <option value=d.name.clone() selected=selected>{label}</option> }
            })
            .collect_view()
            .into_any()
    };
    let total = move || page.with(|p| p.as_ref().map(|p| p.total).unwrap_or(0));
    let no_previous = move || offset.get() == 0 || loading.get();
    let no_next = move || offset.get() + PAGE >= total() || loading.get();
    let range = move || {
        page.with(|p| {
            p.as_ref().map(|p| {
                format!(
                    "{} {} images {}–{} of {}",
                    p.dataset,
                    p.split,
                    p.offset + 1,
                    p.offset + p.count(),
                    p.total
                )
            })
        })
    };
    let labels = move || {
        page.with(|p| {
            p.as_ref()
                .map(|p| {
                    (0..p.count())
                        .map(|i| p.class_of(i))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default()
        })
    };
    view! {
        <section id="digits" class="card">
            <h3>"Real images from the data set"</h3>
            <div class="controls">
                <label for="digit-dataset">"data set "
                    <select id="digit-dataset" on:change=move |ev| {
                        dataset.set(event_target_value(&ev));
                        offset.set(0);
                    }>{options}</select>
                </label>
                <label for="digit-split">"split "
                    <select id="digit-split" on:change=move |ev| {
                        split.set(if event_target_value(&ev) == "train" { DataSplit::Train } else { DataSplit::Test });
                        offset.set(0);
                    }>
                        <option value="test" selected>"test"</option>
                        <option value="train">"train"</option>
                    </select>
                </label>
                <button type="button" id="digits-prev" disabled=no_previous
                    on:click=move |_| offset.update(|o| *o = o.saturating_sub(PAGE))>"Previous"</button>
                <button type="button" id="digits-next" disabled=no_next
                    on:click=move |_| offset.update(|o| *o += PAGE)>"Next 64"</button>
                <span id="digit-range" class="muted">{range}</span>
            </div>
            <crate::pages::get_mnist::GetMnist datasets=datasets/>
            {move || error.get().map(|e| view! { <p class="error" id="digit-error">{e}</p> })}
            <canvas id="digit-grid" node_ref=canvas width="736" height="864" data-labels=labels
                style:display=move || if page.with(Option::is_none) { "none" } else { "block" }></canvas>
        </section>
    }
}

fn shape(s: &[usize]) -> String {
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(" × ")
}

fn kib(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

fn details(l: LayerInfo) -> impl IntoView {
    view! {
        <div id="layer-details" class="card">
            <h3>{l.name.clone()} " — " {l.kind.clone()}</h3>
            <dl>
                <dt>"input (per image)"</dt><dd>{shape(&l.input)}</dd>
                <dt>"output (per image)"</dt><dd>{shape(&l.output)}</dd>
                <dt>"trainable parameters"</dt><dd>{l.params.to_string()}</dd>
                <dt>"forward FLOPs (per image)"</dt><dd>{format!("{} ({:.3} MFLOP)", l.flops_fwd, l.flops_fwd as f64 / 1e6)}</dd>
                <dt>"output activations (per image)"</dt>
                <dd>{format!("{} in FP32, {} in FP16/BF16", kib(l.activation_bytes_fp32), kib(l.activation_bytes_fp32 / 2))}</dd>
                <dt>"documentation"</dt>
                <dd><a class="doc-link" href=format!("#/docs/{}", l.doc.trim_end_matches(".md"))>{format!("docs-content/{}", l.doc)}</a></dd>
            </dl>
        </div>
    }
}

/// The Act I page.
#[component]
pub fn SetupPage() -> impl IntoView {
    let summary = lab_summary();
    let layers = StoredValue::new(summary.layers.clone());
    let selected = RwSignal::new(0usize);
    let diagram = summary
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let name = l.name.clone();
            let out = shape(&l.output);
            view! {
                <button class="layer" class:selected=move || selected.get() == i
                    on:click=move |_| selected.set(i)>
                    <span class="lname">{name}</span>
                    <span class="lshape">{out}</span>
                </button>
            }
        })
        .collect_view();
    let rows = summary
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| {
            view! {
                <tr class:selected=move || selected.get() == i on:click=move |_| selected.set(i)>
                    <td>{l.name.clone()}</td>
                    <td>{l.kind.clone()}</td>
                    <td>{shape(&l.output)}</td>
                    <td class="num">{l.params}</td>
                    <td class="num">{format!("{:.3}", l.flops_fwd as f64 / 1e6)}</td>
                    <td class="num">{format!("{:.1}", l.activation_bytes_fp32 as f64 / 1024.0)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h2>"Act I · The Setup"</h2>
        <p>"The lab CNN, computed in your browser from the same specification the trainer uses. Click a layer. Below it, real images of the data set it learns from."</p>
        <div id="diagram">{diagram}</div>
        {move || layers.with_value(|ls| ls.get(selected.get()).cloned()).map(details)}
        <table id="model-table">
            <thead>
                <tr><th>"layer"</th><th>"kind"</th><th>"output"</th><th>"params"</th><th>"MFLOP fwd"</th><th>"activations FP32 (KiB)"</th></tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
        <p id="model-total">
            {format!(
                "{} parameters · {:.2} MFLOP forward, {:.2} MFLOP training per image",
                summary.params,
                summary.flops_fwd as f64 / 1e6,
                summary.flops_train as f64 / 1e6
            )}
        </p>
        <DigitGrid/>
    }
}
