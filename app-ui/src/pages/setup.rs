//! Act I – The Setup: the lab CNN layer by layer, computed in the browser by compute's pure
//! core. Click a layer (in the diagram or the table) for its shapes, parameters, FLOPs and
//! activation memory.

use compute::model::{lab_summary, LayerInfo};
use leptos::prelude::*;

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
        <p>"The lab CNN, computed in your browser from the same specification the trainer uses. Click a layer."</p>
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
    }
}
