//! Act I, inside the network: one digit through the lab CNN, every layer's output drawn as heat
//! maps and flowing input → conv1 → pool1 → conv2 → pool2 → dense → softmax, for each chosen
//! model side by side (the FP32-trained and the FP16-trained one by default).
//!
//! - [`maps`]: the heat maps (one small canvas per map, `putImageData`);
//! - [`focus`]: a clicked map enlarged beside its input maps and 3×3 filters; hovering (or
//!   clicking) one of its pixels shows the convolution there with the real numbers, recomputed
//!   here by the core's [`conv_at`](showdown_core::explain::conv_at) with the arithmetic of the
//!   service's forward pass, so the sum is the map's value exactly;
//! - [`compare`]: predictions, logits and softmax bars, and where the models differ;
//! - [`draw`]: the 28×28-bound drawing pad.
//!
//! The numbers come from the compute service ([`ExplainReport`]); everything it says is
//! rendered as text.

use std::sync::Arc;

use leptos::prelude::*;
use showdown_core::explain::matching::Fit;
use showdown_core::explain::{BackendCheck, ModelWeights};
use showdown_core::protocol::{DigitSource, ExplainReport};

pub mod compare;
pub mod draw;
pub mod focus;
pub mod maps;

/// The digit chosen on the page: the key it is shown under (`mnist-sample/test/17`,
/// `drawn/2`) and where it comes from.
pub type Chosen = Option<(String, DigitSource)>;

/// A report on the page, with the key of the digit it answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Explained {
    /// The chosen digit's key (`#inside`'s `data-source`).
    pub key: String,
    /// The service's answer.
    pub report: ExplainReport,
}

impl Explained {
    /// The weights of model `i` (the one of the same precision, else the `i`-th).
    pub fn weights_for(&self, i: usize) -> Option<&ModelWeights> {
        let r = &self.report;
        let p = r.models.get(i)?.precision;
        r.weights
            .iter()
            .find(|w| w.precision == p)
            .or_else(|| r.weights.get(i))
    }

    /// The name of class `k` of the image's data set (its index when the service named none):
    /// what the label is called.
    pub fn class_name(&self, k: usize) -> String {
        self.report
            .class_names
            .get(k)
            .cloned()
            .unwrap_or_else(|| k.to_string())
    }

    /// The name of the models' output `k`: the image's class name, unless the models were
    /// trained on other images (then their own data set's).
    pub fn output_name(&self, k: usize) -> String {
        if self.mismatched() {
            if let Some(name) = self.report.model_class_names.get(k) {
                return name.clone();
            }
        }
        self.class_name(k)
    }

    /// Whether the models were trained on another kind of image than this one.
    pub fn mismatched(&self) -> bool {
        self.report.fit == Some(Fit::Other)
    }
}

/// The layers, in the order the digit flows through them.
pub const LAYERS: [&str; 7] = [
    "input", "conv1", "pool1", "conv2", "pool2", "logits", "softmax",
];

/// For a conv or pool layer: its convolution, the convolution's input layer and its pool.
pub fn conv_names(layer: &str) -> Option<(&'static str, &'static str, &'static str)> {
    match layer {
        "conv1" | "pool1" => Some(("conv1", "input", "pool1")),
        "conv2" | "pool2" => Some(("conv2", "pool1", "pool2")),
        _ => None,
    }
}

/// The enlarged map: model `model`'s map `channel` of convolution `conv`, opened from a map
/// of layer `from` (shown under that layer's block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Focus {
    /// Index into the report's models.
    pub model: usize,
    /// `conv1` or `conv2`.
    pub conv: &'static str,
    /// Output map.
    pub channel: usize,
    /// The layer whose map was clicked.
    pub from: &'static str,
}

/// The range each map's colours span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Each map its own smallest to largest value.
    Map,
    /// One range per layer and model.
    Layer,
    /// One range per layer, shared by the models (to compare them map for map).
    Shared,
}

/// A value as the page prints the numbers a reader may check: four decimals, or four digits
/// after the point in scientific notation when very small or large.
pub fn fmt_value(v: f32) -> String {
    let a = v.abs();
    if !v.is_finite() {
        v.to_string()
    } else if a == 0.0 {
        "0.0000".to_string()
    } else if (1e-3..1e5).contains(&a) {
        format!("{v:.4}")
    } else {
        format!("{v:.4e}")
    }
}

/// A probability as a percentage with one decimal (`97.1 %`).
pub fn percent(p: f32) -> String {
    format!("{:.1} %", p * 100.0)
}

/// The backend check in words: "the cuda kernels (NVIDIA H100) agree to 3.1e-4, same
/// prediction".
pub fn check_text(c: &BackendCheck) -> String {
    format!(
        "the {} kernels ({}) agree to {:.1e}, {}",
        c.backend,
        c.device,
        c.max_abs_diff,
        if c.same_prediction {
            "same prediction"
        } else {
            "a different prediction"
        }
    )
}

/// What happens between the previous layer and `layer`, for the flow's arrows.
fn arrow_text(layer: &str, activation: &str) -> String {
    match layer {
        "conv1" => "conv1: 32 filters of 1 × 3 × 3 slide over the input; each output pixel is \
                    Σ 9 inputs × weights + bias"
            .into(),
        "pool1" => {
            format!("{activation}, then the largest value of each 2 × 2 window (26 × 26 → 13 × 13)")
        }
        "conv2" => "conv2: 64 filters of 32 × 3 × 3 slide over the 32 pool1 maps; each output \
                    pixel is Σ 288 inputs × weights + bias"
            .into(),
        "pool2" => format!(
            "{activation}, then the largest of each 2 × 2 window (11 × 11 → 5 × 5: the last row \
             and column have no whole window and are dropped)"
        ),
        "logits" => "flatten the 64 × 5 × 5 = 1,600 values; dense: each of the 10 logits is \
                     Σ 1,600 values × weights + bias"
            .into(),
        "softmax" => "softmax: e^logit / Σ e^logits, the probabilities".into(),
        _ => String::new(),
    }
}

/// The page's styles for everything under `#inside` (the app's stylesheet belongs to the
/// shell).
const CSS: &str = r#"
#inside canvas { margin: 0; }
#inside .inside-head { display: flex; flex-wrap: wrap; gap: 0.4rem 1.5rem; align-items: baseline; }
#inside .inside-checks { margin: 0.3rem 0; padding-left: 1.2rem; font-size: 0.85rem; }
#inside .inside-options { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; font-size: 0.9rem; margin: 0.5rem 0; }
#inside .legend { display: inline-flex; align-items: center; gap: 0.3rem; font-size: 0.8rem; color: var(--muted); }
#inside .legend .ramp { display: inline-block; width: 90px; height: 10px; border: 1px solid var(--border-strong); }
#inside .inside-fit { margin: 0.2rem 0; }
#inside .inside-fit.mismatch { color: var(--warn); font-weight: 600; border-left: 4px solid var(--warn); padding-left: 0.5rem; }
#inside .inside-layer { border: 1px solid var(--border); border-radius: 6px; background: var(--surface); color: var(--text); padding: 0.5rem 0.8rem; }
#inside .inside-layer-head { display: flex; flex-wrap: wrap; gap: 0.2rem 0.8rem; align-items: baseline; margin-bottom: 0.4rem; }
#inside .inside-layer-head b { font-size: 1rem; color: var(--text); }
#inside .inside-layer-head .shape { font-variant-numeric: tabular-nums; color: var(--text); }
#inside .inside-layer-head .what { color: var(--muted); font-size: 0.85rem; }
#inside .inside-arrow { color: var(--muted); font-size: 0.85rem; margin: 0.15rem 0 0.15rem 1.2rem; padding-left: 1.4rem; position: relative; }
#inside .inside-arrow::before { content: "↓"; position: absolute; left: 0; top: -0.2rem; font-size: 1.3rem; color: var(--accent); }
#inside .inside-models { display: flex; gap: 1rem; align-items: flex-start; }
#inside .inside-model { flex: 1 1 0; min-width: 0; }
#inside .inside-model-name { font-size: 0.8rem; font-weight: 600; margin-bottom: 0.2rem; }
#inside .fmap-grid { display: grid; gap: 3px; }
#inside canvas.fmap { width: 100%; height: auto; border: 1px solid var(--border); image-rendering: pixelated; background: #fff; }
#inside canvas.fmap.clickable { cursor: zoom-in; }
#inside canvas.fmap.clickable:hover { outline: 2px solid var(--accent); }
#inside canvas.fmap.focused { outline: 2px solid var(--bad); }
#inside .bars { font-size: 0.8rem; }
#inside .bar-row { display: grid; grid-template-columns: 8rem 1fr 4.5rem; gap: 0.4rem; align-items: center; margin: 1px 0; }
#inside .bar-row.pred { font-weight: 700; }
#inside .bar-row.clickable { cursor: pointer; }
#inside .bar-row.clickable:hover { background: var(--selected-bg); }
#inside .bar-row.chosen { background: var(--highlight-bg); color: var(--highlight-text); }
#dense-at { margin-top: 0.6rem; border-top: 1px solid var(--border); padding-top: 0.4rem; font-size: 0.85rem; }
#dense-at h4 { margin: 0.2rem 0; }
#dense-at .dense-detail { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
#dense-at td, #dense-at th { padding: 0.1rem 0.45rem; font-variant-numeric: tabular-nums; }
#dense-at td.num { text-align: right; }
#dense-at .sums tr.total td { font-weight: 700; border-top: 2px solid var(--text); }
#dense-at .same { color: var(--ok); } #dense-at .differs { color: var(--bad); }
#inside .bar-track { position: relative; height: 12px; background: var(--surface-2); }
#inside .bar-track .zero { position: absolute; left: 50%; top: 0; bottom: 0; width: 1px; background: var(--muted); }
#inside .bar { position: absolute; top: 1px; bottom: 1px; }
#inside .bar-val { text-align: right; font-variant-numeric: tabular-nums; }
#inside .bar-name .label-mark { color: var(--ok); font-weight: 600; }
#inside .prediction-line { display: flex; flex-wrap: wrap; gap: 0.3rem 1.5rem; }
#inside .prediction { font-weight: 600; font-size: 1.05rem; }
#inside .same { color: var(--ok); } #inside .differs { color: var(--bad); } #inside .unlike { color: var(--warn); }
#inside .agree { font-size: 1.05rem; margin: 0.3rem 0; }
#inside .agree.disagree { color: var(--bad); }
#inside table.diffs { font-size: 0.8rem; margin: 0.3rem 0; }
#inside table.diffs td, #inside table.diffs th { padding: 0.1rem 0.5rem; }
#inside-focus { border: 2px solid var(--bad); border-radius: 6px; background: var(--surface); color: var(--text); padding: 0.5rem 0.8rem; margin: 0.4rem 0; }
#inside-focus .focus-head { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; margin-bottom: 0.4rem; }
#inside-focus .focus-head b { margin-right: 0.6rem; }
#inside-focus .focus-row { display: flex; flex-wrap: wrap; gap: 0.8rem; align-items: flex-start; }
#inside-focus .focus-caption { font-size: 0.8rem; color: var(--muted); margin-bottom: 0.25rem; max-width: 18rem; }
#inside-focus .focus-inputs { display: grid; gap: 4px 8px; }
#inside-focus .pair { display: flex; gap: 3px; align-items: flex-end; font-size: 0.7rem; color: var(--muted); }
#inside-focus .pair .ci { width: 1.4rem; text-align: right; }
#inside-focus .wrap { position: relative; display: inline-block; line-height: 0; }
#inside-focus .wrap canvas { border: 1px solid var(--border); image-rendering: pixelated; }
#inside-focus canvas.filter { border: 1px solid var(--border-strong); }
#inside-focus .box { position: absolute; pointer-events: none; box-sizing: border-box; border: 2px solid #cf222e; }
#inside-focus .box.pool { border: 2px dashed #1b1f24; }
#inside-focus .flow-sign { align-self: center; font-size: 0.8rem; color: var(--muted); text-align: center; max-width: 5rem; }
#inside-focus #inside-focus-map { cursor: crosshair; }
#conv-at { margin-top: 0.6rem; border-top: 1px solid var(--border); padding-top: 0.4rem; font-size: 0.85rem; }
#conv-at h4 { margin: 0.2rem 0; }
#conv-at .terms { max-height: 340px; overflow: auto; border: 1px solid var(--border); display: inline-block; }
#conv-at .terms table { margin: 0; }
#conv-at td, #conv-at th { padding: 0.1rem 0.45rem; font-variant-numeric: tabular-nums; }
#conv-at td.num { text-align: right; }
#conv-at tr.top td { font-weight: 700; }
#conv-at table.mini { margin: 0; border-collapse: collapse; }
#conv-at table.mini td { border: 1px solid var(--border); padding: 0 0.25rem; font-size: 0.7rem; text-align: right; min-width: 2.8rem; }
#conv-at .sums td { border-bottom: 1px solid var(--border); }
#conv-at .sums tr.total td { font-weight: 700; border-top: 2px solid var(--text); }
#conv-at .same { color: var(--ok); } #conv-at .differs { color: var(--bad); }
#conv-at .pool-window td.win { font-weight: 700; background: var(--highlight-bg); color: var(--highlight-text); }
"#;

/// Everything inside the network for the report in `shown` (nothing until there is one).
#[component]
pub fn InsideNetwork(
    /// The report on the page.
    #[prop(into)]
    shown: Signal<Option<Arc<Explained>>>,
) -> impl IntoView {
    let focus = RwSignal::new(None::<Focus>);
    let scale = RwSignal::new(Scale::Map);
    let diff = RwSignal::new(false);
    let dense = RwSignal::new(None::<(usize, usize)>);
    let body = move || match shown.get() {
        None => view! {
            <p class="muted" id="inside-empty">
                "Choose a digit in the grid or draw one: its way through the network appears here."
            </p>
        }
        .into_any(),
        Some(s) => network(s, focus, scale, diff, dense).into_any(),
    };
    let source = move || shown.with(|s| s.as_ref().map(|s| s.key.clone()));
    view! {
        <style>{CSS}</style>
        <section id="inside" class="card" data-source=source>
            <h3>"Inside the network"</h3>
            {body}
        </section>
    }
}

/// The report's header, the comparison, the options and the flow of layer blocks.
fn network(
    s: Arc<Explained>,
    focus: RwSignal<Option<Focus>>,
    scale: RwSignal<Scale>,
    diff: RwSignal<bool>,
    dense: RwSignal<Option<(usize, usize)>>,
) -> impl IntoView {
    let r = &s.report;
    if r.models.is_empty() {
        return view! { <p class="error" id="inside-no-model">"The service returned no model."</p> }
            .into_any();
    }
    let n = r.models.len();
    let activation = r
        .models
        .first()
        .map(|m| m.activation.name())
        .unwrap_or("relu");
    let checks = r
        .models
        .iter()
        .map(|m| {
            let p = m.precision;
            let text = m
                .backend_check
                .as_ref()
                .map(check_text)
                .unwrap_or_else(|| "no backend check was run".into());
            view! { <li id=format!("inside-check-{p}")><b>{format!("{p} model: ")}</b>{text}</li> }
        })
        .collect_view();
    let digit = match r.label {
        Some(l) => format!(
            "a {} image labelled {}",
            r.dataset,
            s.class_name(l as usize)
        ),
        None => "your drawing".to_string(),
    };
    let trained_on = r
        .trained_on
        .clone()
        .unwrap_or_else(|| "nothing (untrained)".into());
    let fit_note = r.fit_note.clone();
    let legend = move || {
        let item = |p: maps::Palette, lo: &'static str, hi: &'static str, what: &'static str| {
            let style = format!("background: {}", maps::css_gradient(p));
            view! {
                <span class="legend">{what} " " {lo} <span class="ramp" style=style></span> {hi}</span>
            }
        };
        view! {
            {item(maps::Palette::Diverging, "−", "+", "conv maps (before the activation), logits, differences: ")}
            {item(maps::Palette::Sequential, "low", "high", "pools (after it), softmax: ")}
        }
    };
    let options = view! {
        <div class="inside-options">
            <label for="inside-scale">"colours span "
                <select id="inside-scale" on:change=move |ev| {
                    scale.set(match event_target_value(&ev).as_str() {
                        "layer" => Scale::Layer,
                        "shared" => Scale::Shared,
                        _ => Scale::Map,
                    });
                }>
                    <option value="map" selected=move || scale.get() == Scale::Map>"each map's own range"</option>
                    <option value="layer" selected=move || scale.get() == Scale::Layer>"one range per layer"</option>
                    <option value="shared" selected=move || scale.get() == Scale::Shared>"one range per layer, shared by the models"</option>
                </select>
            </label>
            {(n >= 2).then(|| view! {
                <label class="check" for="inside-diff">
                    <input type="checkbox" id="inside-diff" prop:checked=move || diff.get()
                        on:change=move |ev| diff.set(event_target_checked(&ev))/>
                    " show the difference maps"
                </label>
            })}
            {legend}
        </div>
    };
    let flow = LAYERS
        .iter()
        .enumerate()
        .map(|(i, &layer)| {
            let arrow = (i > 0)
                .then(|| view! { <div class="inside-arrow">{arrow_text(layer, activation)}</div> });
            let block = layer_block(s.clone(), layer, focus, scale, diff, dense);
            let here = {
                let s = s.clone();
                move || {
                    focus.get().filter(|f| f.from == layer).map(|f| {
                        let f = Focus {
                            model: f.model.min(s.report.models.len().saturating_sub(1)),
                            ..f
                        };
                        focus::focus_view(s.clone(), f, focus)
                    })
                }
            };
            view! { {arrow} {block} {here} }
        })
        .collect_view();
    view! {
        <div class="inside-head">
            <p id="inside-source">{r.model_source.clone()}</p>
            <p id="inside-digit-what" class="muted">{format!("The image: {digit}, normalised with mean {} and std {}.", r.mean, r.std)}</p>
        </div>
        <p id="inside-fit" class="inside-fit" class:mismatch=s.mismatched()
            data-trained-on=trained_on data-fit=r.fit.map(|f| match f {
                Fit::Same => "same",
                Fit::SameKind => "same_kind",
                Fit::Other => "other",
            })>
            {fit_note}
        </p>
        <ul class="inside-checks" id="inside-checks">{checks}</ul>
        {compare::compare_panel(&s)}
        {options}
        <div id="inside-flow">{flow}</div>
    }
    .into_any()
}

/// One layer's block: its name, shape and what it computes, then its maps (or bars) for
/// each model.
fn layer_block(
    s: Arc<Explained>,
    layer: &'static str,
    focus: RwSignal<Option<Focus>>,
    scale: RwSignal<Scale>,
    diff: RwSignal<bool>,
    dense: RwSignal<Option<(usize, usize)>>,
) -> impl IntoView {
    let first = s.report.models.first().and_then(|m| m.layer(layer));
    let shape = first
        .map(|l| format!("{} × {} × {}", l.channels, l.height, l.width))
        .unwrap_or_else(|| "missing".into());
    let what = first.map(|l| l.what.clone()).unwrap_or_default();
    let dense_here = (layer == "logits").then(|| {
        let s = s.clone();
        move || match dense.get() {
            Some((model, class)) => {
                let model = model.min(s.report.models.len().saturating_sub(1));
                compare::dense_panel(&s, model, class)
            }
            None => view! {
                <p class="muted" id="dense-hint">"Click a class's logit for the dense layer's sum behind it."</p>
            }
            .into_any(),
        }
    });
    let body = if matches!(layer, "logits" | "softmax") {
        compare::bars(&s, layer, dense).into_any()
    } else {
        let s = s.clone();
        (move || maps::layer_columns(&s, layer, scale.get(), diff.get(), focus)).into_any()
    };
    view! {
        <div class="inside-layer" id=format!("inside-layer-{layer}") data-layer=layer>
            <div class="inside-layer-head">
                <b>{layer}</b>
                <span class="shape">{shape}</span>
                <span class="what">{what}</span>
            </div>
            <div class="inside-models">{body}</div>
            {dense_here}
        </div>
    }
}
