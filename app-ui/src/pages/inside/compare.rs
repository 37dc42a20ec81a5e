//! The models side by side on the same digit: each one's prediction, its logits and softmax as
//! bars, whether they agree, and where their layers differ (the largest |Δ| of each layer, the
//! map and pixel it is at, how many values differ).

use std::sync::Arc;

use leptos::prelude::*;
use showdown_core::explain::{operand, store, LayerMaps};

use super::maps::{self, paint_map, MapJob, Palette};
use super::{fmt_value, percent, Explained, LAYERS};

/// How one layer of two models differs.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerDiff {
    /// Largest |b − a|.
    pub max: f32,
    /// Where it is: (map, row, column).
    pub at: (usize, usize, usize),
    /// The two values there.
    pub values: (f32, f32),
    /// Mean |b − a|.
    pub mean: f32,
    /// Values that differ at all.
    pub differ: usize,
    /// Values compared.
    pub total: usize,
    /// Largest |a| (to judge `max` against).
    pub magnitude: f32,
}

/// How layer `b` differs from layer `a` (`None` when their shapes differ).
pub fn layer_diff(a: &LayerMaps, b: &LayerMaps) -> Option<LayerDiff> {
    if a.values.len() != b.values.len()
        || (a.channels, a.height, a.width) != (b.channels, b.height, b.width)
    {
        return None;
    }
    let (mut max, mut at, mut sum, mut differ, mut magnitude) = (0f32, 0usize, 0f64, 0usize, 0f32);
    for (i, (&x, &y)) in a.values.iter().zip(&b.values).enumerate() {
        let d = (y - x).abs();
        if d > max {
            max = d;
            at = i;
        }
        if x != y {
            differ += 1;
        }
        sum += f64::from(d);
        magnitude = magnitude.max(x.abs());
    }
    let n = a.values.len();
    let hw = (a.height * a.width).max(1);
    Some(LayerDiff {
        max,
        at: (at / hw, (at % hw) / a.width.max(1), at % a.width.max(1)),
        values: (
            a.values.get(at).copied().unwrap_or(0.0),
            b.values.get(at).copied().unwrap_or(0.0),
        ),
        mean: if n > 0 { (sum / n as f64) as f32 } else { 0.0 },
        differ,
        total: n,
        magnitude,
    })
}

/// "prediction: 7 (97.1 %)" for model `i`.
fn prediction_text(s: &Explained, i: usize) -> String {
    let Some(m) = s.report.models.get(i) else {
        return String::new();
    };
    let p = m.probabilities.get(m.prediction).copied().unwrap_or(0.0);
    format!(
        "prediction: {} ({})",
        s.output_name(m.prediction),
        percent(p)
    )
}

/// The comparison card (#inside-compare): each model's prediction (#inside-prediction-<p>),
/// whether they agree (#inside-agreement), and each layer's largest difference
/// (#inside-diff-table).
pub fn compare_panel(s: &Explained) -> impl IntoView {
    let r = &s.report;
    let label = r.label.map(|l| l as usize);
    let predictions = r
        .models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let p = m.precision;
            let right = label.map(|l| {
                if s.mismatched() {
                    // Its outputs are another data set's classes: index l is not the label.
                    view! { <span class="unlike">{format!(" — the label is {}, not one of this model's classes", s.class_name(l))}</span> }.into_any()
                } else if l == m.prediction {
                    view! { <span class="same">" ✓ the label"</span> }.into_any()
                } else {
                    view! { <span class="differs">{format!(" ✗ the label is {}", s.class_name(l))}</span> }.into_any()
                }
            });
            view! {
                <div class="prediction-model">
                    <b>{format!("{p} model: ")}</b>
                    <span class="prediction" id=format!("inside-prediction-{p}") data-class=m.prediction>
                        {prediction_text(s, i)}
                    </span>
                    {right}
                </div>
            }
        })
        .collect_view();
    let preds: Vec<usize> = r.models.iter().map(|m| m.prediction).collect();
    let agree = preds.windows(2).all(|w| w[0] == w[1]);
    let agreement = match (r.models.len(), preds.first()) {
        (0, _) | (_, None) => "No model.".to_string(),
        (1, _) => "One model: choose two precisions to compare them on this digit.".to_string(),
        (n, Some(&k)) if agree => {
            let max_dp = r
                .models
                .iter()
                .skip(1)
                .filter_map(|m| {
                    let first = r.models.first()?;
                    Some(
                        m.probabilities
                            .iter()
                            .zip(&first.probabilities)
                            .fold(0f32, |a, (x, y)| a.max((x - y).abs())),
                    )
                })
                .fold(0f32, f32::max);
            format!(
                "{} predict {}; their probabilities differ by at most {:.3} percentage points.",
                if n == 2 {
                    "both".to_string()
                } else {
                    format!("all {n}")
                },
                s.output_name(k),
                max_dp * 100.0
            )
        }
        _ => {
            let says: Vec<String> = r
                .models
                .iter()
                .map(|m| {
                    let pr = m.probabilities.get(m.prediction).copied().unwrap_or(0.0);
                    format!(
                        "{} says {} ({})",
                        m.precision,
                        s.output_name(m.prediction),
                        percent(pr)
                    )
                })
                .collect();
            format!("They disagree: {}.", says.join(", "))
        }
    };
    let disagree = r.models.len() >= 2 && !agree;
    let table = (r.models.len() >= 2).then(|| {
        let first = r.models.first();
        let rows = r
            .models
            .iter()
            .skip(1)
            .flat_map(|m| {
                LAYERS.iter().filter_map(move |&layer| {
                    let a = first?.layer(layer)?;
                    let b = m.layer(layer)?;
                    let d = layer_diff(a, b)?;
                    let pair = format!("{} − {}", m.precision, first?.precision);
                    let (c, y, x) = d.at;
                    let place = if a.channels == 1 && a.height == 1 {
                        format!("class {x}")
                    } else {
                        format!("map {c}, row {y}, column {x}")
                    };
                    Some(view! {
                        <tr data-layer=layer>
                            <td>{pair}</td>
                            <td>{layer}</td>
                            <td class="num">{fmt_value(d.max)}</td>
                            <td>{if d.max > 0.0 { place } else { "—".into() }}</td>
                            <td class="num">{format!("{} / {}", fmt_value(d.values.0), fmt_value(d.values.1))}</td>
                            <td class="num">{fmt_value(d.mean)}</td>
                            <td class="num">{format!("{} of {}", d.differ, d.total)}</td>
                            <td class="num">{if d.magnitude > 0.0 { format!("{:.2e}", d.max / d.magnitude) } else { "—".into() }}</td>
                        </tr>
                    })
                })
            })
            .collect_view();
        let (p0, p1) = (
            r.models.first().map(|m| m.precision.to_string()).unwrap_or_default(),
            r.models.get(1).map(|m| m.precision.to_string()).unwrap_or_default(),
        );
        view! {
            <table class="diffs" id="inside-diff-table">
                <caption>"Where they differ, layer by layer"</caption>
                <thead><tr>
                    <th>"models"</th><th>"layer"</th><th>"largest |Δ|"</th><th>"where"</th>
                    <th>{format!("values there ({p0} / {p1})")}</th><th>"mean |Δ|"</th>
                    <th>"values that differ"</th><th>"largest |Δ| / largest |value|"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
    });
    view! {
        <div id="inside-compare">
            <div class="prediction-line">{predictions}</div>
            <p id="inside-agreement" class="agree" class:disagree=disagree>{agreement}</p>
            {table}
        </div>
    }
}

/// The logits or the softmax of each model as bars, side by side: logits about 0 (orange
/// positive, blue negative) on one scale for all models, probabilities from 0 to 100 %; the
/// prediction in bold, the label marked. Clicking a logit sets `dense` to (model, class).
pub fn bars(
    s: &Explained,
    layer: &'static str,
    dense: RwSignal<Option<(usize, usize)>>,
) -> impl IntoView {
    let r = &s.report;
    let logits = layer == "logits";
    let m_abs = r
        .models
        .iter()
        .filter_map(|m| m.layer(layer))
        .flat_map(|l| l.values.iter())
        .fold(0f32, |a, v| a.max(v.abs()));
    // A model of other images has no class of the label's to mark.
    let label = r.label.map(|l| l as usize).filter(|_| !s.mismatched());
    r.models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let p = m.precision;
            let Some(l) = m.layer(layer) else {
                return view! {
                    <div class="inside-model"><p class="error">{format!("the {p} model has no {layer}")}</p></div>
                }
                .into_any();
            };
            let rows = l
                .values
                .iter()
                .enumerate()
                .map(|(k, &v)| {
                    let (left, width, colour) = if logits {
                        let t = if m_abs > 0.0 { v / m_abs } else { 0.0 };
                        let colour = maps::css_colour(Palette::Diverging, t, (-1.0, 1.0), 1.0);
                        if t >= 0.0 {
                            (50.0, 50.0 * t, colour)
                        } else {
                            (50.0 + 50.0 * t, -50.0 * t, colour)
                        }
                    } else {
                        let colour = maps::css_colour(Palette::Sequential, v.max(0.25), (0.0, 1.0), 1.0);
                        (0.0, 100.0 * v.clamp(0.0, 1.0), colour)
                    };
                    let style = format!("left: {left:.2}%; width: {width:.2}%; background: {colour}");
                    let value = if logits { fmt_value(v) } else { percent(v) };
                    let chosen = move || logits && dense.get() == Some((i, k));
                    let click = move |_| {
                        if logits {
                            dense.set(Some((i, k)));
                        }
                    };
                    view! {
                        <div class="bar-row" class:pred=k == m.prediction class:clickable=logits
                            class:chosen=chosen data-class=k on:click=click>
                            <span class="bar-name">
                                {s.output_name(k)}
                                {(label == Some(k)).then(|| view! { <span class="label-mark">" ← label"</span> })}
                            </span>
                            <span class="bar-track">
                                {logits.then(|| view! { <span class="zero"></span> })}
                                <span class="bar" style=style></span>
                            </span>
                            <span class="bar-val">{value}</span>
                        </div>
                    }
                })
                .collect_view();
            view! {
                <div class="inside-model" data-precision=p.to_string()>
                    <div class="inside-model-name">{format!("{p} model")}</div>
                    <div class="bars" id=format!("inside-{layer}-{p}")>{rows}</div>
                </div>
            }
            .into_any()
        })
        .collect_view()
}

/// How the dense layer computes logit `class` of model `model` (#dense-at): the 1,600 pool2
/// values × their weights as 64 maps of 5 × 5 products (where the evidence comes from), the
/// largest contributions, and the sum — with the arithmetic of the service's forward pass
/// (operands rounded as the precision sees them, f32 accumulation in order, the result stored
/// in the precision), so it is the logit to the last bit.
pub fn dense_panel(s: &Explained, model: usize, class: usize) -> AnyView {
    let fail =
        |text: String| view! { <div id="dense-at"><p class="error">{text}</p></div> }.into_any();
    let Some(acts) = s.report.models.get(model) else {
        return fail("no such model".into());
    };
    let Some(weights) = s.weights_for(model) else {
        return fail(format!(
            "the service sent no weights for the {} model",
            acts.precision
        ));
    };
    let (Some(pool), Some(logits)) = (acts.layer("pool2"), acts.layer("logits")) else {
        return fail(format!(
            "the {} model's layers are incomplete",
            acts.precision
        ));
    };
    let p = acts.precision;
    let n = pool.values.len();
    let (Some(w), Some(&b)) = (
        weights.params[4].get(class * n..(class + 1) * n),
        weights.params[5].get(class),
    ) else {
        return fail(format!("the dense weights have no row for class {class}"));
    };
    let mut acc = 0f32;
    let products: Vec<f32> = pool
        .values
        .iter()
        .zip(w)
        .map(|(&a, &wv)| {
            let prod = operand(p, a) * operand(p, store(p, wv));
            acc += prod;
            prod
        })
        .collect();
    let sum = acc + b;
    let stored = store(p, sum);
    let logit = logits.values.get(class).copied();
    let same = logit == Some(stored);
    let m = products.iter().fold(0f32, |m, v| m.max(v.abs()));
    let products: Arc<[f32]> = Arc::from(products);
    let hw = pool.height * pool.width;
    let cells = (0..pool.channels)
        .map(|c| {
            let job = MapJob {
                values: products.clone(),
                offset: c * hw,
                width: pool.width,
                height: pool.height,
                zoom: 1,
                palette: Palette::Diverging,
                range: (-m, m),
            };
            let total: f32 = job.map().iter().sum();
            view! {
                <canvas class="fmap dense-map" data-channel=c use:paint_map=job
                    title=format!("pool2 map {c} × its weights for class {class}: Σ {}", fmt_value(total))></canvas>
            }
        })
        .collect_view();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| products[y].abs().total_cmp(&products[x].abs()));
    let top = order
        .into_iter()
        .take(8)
        .map(|i| {
            let (c, y, x) = (
                i / hw.max(1),
                (i % hw.max(1)) / pool.width.max(1),
                i % pool.width.max(1),
            );
            let a = pool.values.get(i).copied().unwrap_or(0.0);
            let wv = w.get(i).copied().unwrap_or(0.0);
            view! {
                <tr>
                    <td>{format!("map {c}, row {y}, column {x}")}</td>
                    <td class="num">{fmt_value(operand(p, a))}</td>
                    <td class="num">{fmt_value(operand(p, store(p, wv)))}</td>
                    <td class="num">{fmt_value(products.get(i).copied().unwrap_or(0.0))}</td>
                </tr>
            }
        })
        .collect_view();
    let per_row = 16;
    view! {
        <div id="dense-at" data-model=model data-class=class data-precision=p.to_string()>
            <h4>{format!("Logit {} ({}) of the {p} model: Σ {n} pool2 values × weights + bias", class, s.output_name(class))}</h4>
            <p class="muted">"Each small map: one pool2 map times its weights for this class (orange adds to the logit, blue takes away), on one scale."</p>
            <div class="fmap-grid" style=format!("grid-template-columns: repeat({per_row}, minmax(0, 40px))")>{cells}</div>
            <div class="dense-detail">
                <table class="dense-top">
                    <caption>"The largest contributions"</caption>
                    <thead><tr><th>"pool2 value at"</th><th>"value"</th><th>"weight"</th><th>"product"</th></tr></thead>
                    <tbody>{top}</tbody>
                </table>
                <table class="sums"><tbody>
                    <tr><td>{format!("Σ of the {n} products")}</td><td class="num">{fmt_value(acc)}</td><td></td></tr>
                    <tr><td>"+ bias"</td><td class="num">{fmt_value(b)}</td><td></td></tr>
                    <tr class="total"><td>"= the sum"</td><td class="num" id="dense-at-sum">{fmt_value(sum)}</td><td></td></tr>
                    <tr><td>{format!("stored as {}", p.as_str().to_uppercase())}</td><td class="num" id="dense-at-stored">{fmt_value(stored)}</td><td></td></tr>
                    <tr>
                        <td>"the logit from the service"</td>
                        <td class="num" id="dense-at-logit">{logit.map(fmt_value).unwrap_or_else(|| "—".into())}</td>
                        <td class:same=same class:differs=!same>{if same { "✓ the same number" } else { "✗ differs" }}</td>
                    </tr>
                </tbody></table>
            </div>
        </div>
    }
    .into_any()
}
