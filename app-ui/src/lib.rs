//! Precision Showdown's front end (Leptos, client-side rendering, compiled to WebAssembly).
//!
//! Today it renders the Home page from compute's pure core running in WASM (the lab CNN's
//! layer table); the acts are added page by page as the backend capabilities land.

use leptos::prelude::*;
use wasm_bindgen::prelude::wasm_bindgen;

/// The lab CNN layer by layer, computed in the browser by compute's pure core.
#[component]
fn ModelTable() -> impl IntoView {
    let summary = compute::model::lab_summary();
    let rows = summary
        .layers
        .into_iter()
        .map(|l| {
            view! {
                <tr>
                    <td>{l.name}</td>
                    <td>{l.kind}</td>
                    <td>{format!("{:?}", l.output)}</td>
                    <td class="num">{l.params}</td>
                    <td class="num">{format!("{:.3}", l.flops_fwd as f64 / 1e6)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table id="model-table">
            <thead>
                <tr><th>"layer"</th><th>"kind"</th><th>"output"</th><th>"params"</th><th>"MFLOP fwd"</th></tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
        <p id="model-total">
            {format!("{} parameters, {:.2} MFLOP forward per image", summary.params, summary.flops_fwd as f64 / 1e6)}
        </p>
    }
}

/// The app shell.
#[component]
pub fn App() -> impl IntoView {
    view! {
        <main>
            <h1>"Precision Showdown"</h1>
            <p>"FP32 against FP16 mixed precision on your own hardware: the lab CNN, our kernels, and the profiles that explain them."</p>
            <h2>"The lab CNN"</h2>
            <ModelTable/>
        </main>
    }
}

/// Entry point called by the generated JavaScript glue.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}
