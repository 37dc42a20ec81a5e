//! One map enlarged: a convolution's output map beside the input maps it reads and its 3×3
//! filters, and the pooled map it feeds. Hovering a pixel of the enlarged map (or clicking it,
//! or moving with the arrow keys) outlines the 3×3 windows it reads and shows the convolution
//! there with the real numbers (#conv-at): every input × weight, the sum, + bias, the
//! activation, and which pixel of the 2×2 pool window wins.

use std::sync::Arc;

use leptos::html::Canvas;
use leptos::prelude::*;
use showdown_core::explain::{conv_at, operand, store, ConvAtPixel, LayerMaps};

use super::maps::{self, paint_map, MapJob, Palette};
use super::{conv_names, fmt_value, Explained, Focus};

/// Canvas pixels per map pixel of the enlarged map.
fn zoom_of(width: usize) -> usize {
    if width >= 20 {
        11
    } else {
        26
    }
}

/// A map of `l` as a [`MapJob`] with its own range.
fn job(l: &LayerMaps, values: &Arc<[f32]>, c: usize, zoom: usize, palette: Palette) -> MapJob {
    let mut j = MapJob {
        values: values.clone(),
        offset: c * l.height * l.width,
        width: l.width,
        height: l.height,
        zoom,
        palette,
        range: (0.0, 0.0),
    };
    j.range = maps::range_of(j.map());
    j
}

/// An outline at map pixel `(y, x)` spanning `size` pixels, on a map drawn at `zoom` on a
/// canvas with a 1-pixel border.
fn boxed(y: usize, x: usize, size: usize, zoom: usize) -> String {
    format!(
        "left: {}px; top: {}px; width: {}px; height: {}px",
        x * zoom + 1,
        y * zoom + 1,
        size * zoom,
        size * zoom
    )
}

/// The enlarged view of `f` (#inside-focus); `focus` is cleared by its close button and moved
/// by its previous / next buttons.
pub fn focus_view(s: Arc<Explained>, f: Focus, focus: RwSignal<Option<Focus>>) -> AnyView {
    let fail = |text: String| {
        view! { <div id="inside-focus"><p class="error">{text}</p></div> }.into_any()
    };
    let Some(acts) = s.report.models.get(f.model) else {
        return fail("no such model".into());
    };
    let Some((conv_name, input_name, pool_name)) = conv_names(f.conv) else {
        return fail(format!("{} is not a convolution", f.conv));
    };
    let (Some(conv), Some(input), Some(pool)) = (
        acts.layer(conv_name),
        acts.layer(input_name),
        acts.layer(pool_name),
    ) else {
        return fail(format!(
            "the {} model's layers are incomplete",
            acts.precision
        ));
    };
    let Some(weights) = s.weights_for(f.model) else {
        return fail(format!(
            "the service sent no weights for the {} model",
            acts.precision
        ));
    };
    let c = f.channel.min(conv.channels.saturating_sub(1));
    let f = Focus { channel: c, ..f };
    let p = acts.precision;
    let (h, w) = (conv.height, conv.width);
    let c_in = input.channels;
    let zoom = zoom_of(w);
    let in_zoom = if input.width >= 20 { 7 } else { 3 };
    let filter_zoom = if c_in == 1 { 20 } else { 10 };

    // The filters of output map c as the arithmetic sees them.
    let w_index = if conv_name == "conv1" { 0 } else { 2 };
    let filter_len = c_in * 9;
    let filters: Vec<f32> = weights.params[w_index]
        .get(c * filter_len..(c + 1) * filter_len)
        .unwrap_or(&[])
        .iter()
        .map(|&v| operand(p, store(p, v)))
        .collect();
    let filter_max = filters.iter().fold(0f32, |m, v| m.max(v.abs()));
    let filters: Arc<[f32]> = Arc::from(filters);

    let conv_values: Arc<[f32]> = Arc::from(conv.values.as_slice());
    let pool_values: Arc<[f32]> = Arc::from(pool.values.as_slice());
    let input_values: Arc<[f32]> = Arc::from(input.values.as_slice());

    // Start at the map's largest value.
    let map = conv.map(c);
    let start = map
        .iter()
        .enumerate()
        .fold(None::<(usize, f32)>, |best, (i, &v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((i, v)),
        })
        .map(|(i, _)| (i / w.max(1), i % w.max(1)))
        .unwrap_or((0, 0));
    let hover = RwSignal::new(None::<(usize, usize)>);
    let pinned = RwSignal::new(start);
    let at = Memo::new(move |_| hover.get().unwrap_or_else(|| pinned.get()));

    // The input maps, each with its 3×3 filter and the window the pixel reads.
    let pairs = (0..c_in)
        .map(|ci| {
            let fjob = MapJob {
                values: filters.clone(),
                offset: ci * 9,
                width: 3,
                height: 3,
                zoom: filter_zoom,
                palette: Palette::Diverging,
                range: (-filter_max, filter_max),
            };
            let ftitle = fjob
                .map()
                .chunks(3)
                .map(|row| {
                    row.iter()
                        .map(|v| format!("{v:.4}"))
                        .collect::<Vec<_>>()
                        .join("  ")
                })
                .collect::<Vec<_>>()
                .join("\n");
            let ijob = job(input, &input_values, ci, in_zoom, Palette::of(input_name));
            let window = move || {
                let (y, x) = at.get();
                boxed(y, x, 3, in_zoom)
            };
            view! {
                <div class="pair" data-input-channel=ci>
                    <span class="ci">{ci}</span>
                    <span class="wrap">
                        <canvas class="focus-input" data-channel=ci use:paint_map=ijob
                            title=format!("{input_name} map {ci}")></canvas>
                        <span class="box" style=window></span>
                    </span>
                    <canvas class="filter" data-channel=ci use:paint_map=fjob
                        title=format!("filter {c} × {input_name} map {ci}:\n{ftitle}")></canvas>
                </div>
            }
        })
        .collect_view();
    let pair_columns = if c_in == 1 { 1 } else { 3 };
    let inputs_style = format!("grid-template-columns: repeat({pair_columns}, max-content)");

    // The enlarged map: pointer → pixel.
    let map_ref = NodeRef::<Canvas>::new();
    let pixel = move |ev: &web_sys::MouseEvent| -> Option<(usize, usize)> {
        let canvas = map_ref.get_untracked()?;
        let sx = f64::from(canvas.width()) / f64::from(canvas.client_width().max(1));
        let sy = f64::from(canvas.height()) / f64::from(canvas.client_height().max(1));
        let x = (f64::from(ev.offset_x()) * sx / zoom as f64).floor();
        let y = (f64::from(ev.offset_y()) * sy / zoom as f64).floor();
        (x >= 0.0 && y >= 0.0 && (x as usize) < w && (y as usize) < h)
            .then_some((y as usize, x as usize))
    };
    let key = move |ev: web_sys::KeyboardEvent| {
        let (y, x) = pinned.get_untracked();
        let moved = match ev.key().as_str() {
            "ArrowLeft" => (y, x.saturating_sub(1)),
            "ArrowRight" => (y, (x + 1).min(w.saturating_sub(1))),
            "ArrowUp" => (y.saturating_sub(1), x),
            "ArrowDown" => ((y + 1).min(h.saturating_sub(1)), x),
            _ => return,
        };
        ev.prevent_default();
        hover.set(None);
        pinned.set(moved);
    };
    let conv_job = job(conv, &conv_values, c, zoom, Palette::of(conv_name));
    let pool_job = job(pool, &pool_values, c, zoom, Palette::of(pool_name));
    let (ph, pw) = (pool.height, pool.width);
    let pixel_box = move || {
        let (y, x) = at.get();
        boxed(y, x, 1, zoom)
    };
    let window_box = move || {
        let (y, x) = at.get();
        if y / 2 < ph && x / 2 < pw {
            boxed(y / 2 * 2, x / 2 * 2, 2, zoom)
        } else {
            "display: none".into()
        }
    };
    let pool_box = move || {
        let (y, x) = at.get();
        if y / 2 < ph && x / 2 < pw {
            boxed(y / 2, x / 2, 1, zoom)
        } else {
            "display: none".into()
        }
    };
    let channels = conv.channels.max(1);
    let step = move |d: isize| {
        focus.update(|fo| {
            if let Some(fo) = fo {
                fo.channel = (fo.channel as isize + d).rem_euclid(channels as isize) as usize;
            }
        })
    };
    let title = format!("{conv_name} map {c} of the {p} model");
    let panel = {
        let s = s.clone();
        move || {
            let (y, x) = at.get();
            conv_at_panel(&s, f, y, x)
        }
    };
    view! {
        <div id="inside-focus" data-layer=conv_name data-channel=c data-precision=p.to_string()>
            <div class="focus-head">
                <b>{title}</b>
                <button type="button" id="inside-focus-prev" on:click=move |_| step(-1)>"◀ previous map"</button>
                <button type="button" id="inside-focus-next" on:click=move |_| step(1)>"next map ▶"</button>
                <button type="button" id="inside-focus-close" on:click=move |_| focus.set(None)>"close"</button>
            </div>
            <div class="focus-row">
                <div>
                    <div class="focus-caption">
                        {format!("The {c_in} {input_name} map{} it reads, each beside its 3 × 3 filter (blue negative, orange positive); the red square is the window the chosen pixel reads.", if c_in == 1 { "" } else { "s" })}
                    </div>
                    <div class="focus-inputs" style=inputs_style>{pairs}</div>
                </div>
                <div class="flow-sign">"Σ inputs × weights + bias →"</div>
                <div>
                    <div class="focus-caption">
                        {format!("{conv_name} map {c} ({h} × {w}, before {}). Hover or click a pixel; arrow keys move it.", acts.activation.name())}
                    </div>
                    <span class="wrap">
                        <canvas id="inside-focus-map" node_ref=map_ref tabindex="0"
                            data-zoom=zoom data-width=w data-height=h data-layer=conv_name data-channel=c
                            use:paint_map=conv_job
                            on:mousemove=move |ev| hover.set(pixel(&ev))
                            on:mouseleave=move |_| hover.set(None)
                            on:click=move |ev| {
                                if let Some(px) = pixel(&ev) {
                                    pinned.set(px);
                                }
                            }
                            on:keydown=key></canvas>
                        <span class="box" style=pixel_box></span>
                        <span class="box pool" style=window_box></span>
                    </span>
                </div>
                <div class="flow-sign">{format!("{}, then max of 2 × 2 →", acts.activation.name())}</div>
                <div>
                    <div class="focus-caption">{format!("{pool_name} map {c} ({ph} × {pw})")}</div>
                    <span class="wrap">
                        <canvas id="inside-focus-pool" data-zoom=zoom use:paint_map=pool_job></canvas>
                        <span class="box" style=pool_box></span>
                    </span>
                </div>
            </div>
            {panel}
        </div>
    }
    .into_any()
}

/// A 3×3 grid of numbers tinted by sign and size.
fn mini(values: &[f32], range: (f32, f32)) -> impl IntoView {
    let rows = values
        .chunks(3)
        .map(|row| {
            let cells = row
                .iter()
                .map(|&v| {
                    let bg = maps::css_colour(Palette::Diverging, v, range, 0.55);
                    view! { <td style=format!("background: {bg}")>{format!("{v:.3}")}</td> }
                })
                .collect_view();
            view! { <tr>{cells}</tr> }
        })
        .collect_view();
    view! { <table class="mini"><tbody>{rows}</tbody></table> }
}

/// The products of the convolution at the pixel: one row per product for conv1 (9), one row
/// per input map for conv2 (32 rows of 9), with running sums accumulated as the arithmetic
/// does (in f32, in order).
fn terms_view(at: &ConvAtPixel, input_name: &str) -> AnyView {
    if at.terms.len() <= 9 {
        let mut acc = 0f32;
        let rows = at
            .terms
            .iter()
            .map(|t| {
                let product = t.input * t.weight;
                acc += product;
                view! {
                    <tr>
                        <td>{format!("({}, {})", t.ky, t.kx)}</td>
                        <td class="num">{fmt_value(t.input)}</td>
                        <td>"×"</td>
                        <td class="num">{fmt_value(t.weight)}</td>
                        <td>"="</td>
                        <td class="num">{fmt_value(product)}</td>
                        <td class="num">{fmt_value(acc)}</td>
                    </tr>
                }
            })
            .collect_view();
        return view! {
            <div class="terms">
                <table id="conv-at-terms">
                    <thead><tr>
                        <th>"(row, col) in the window"</th><th>{format!("{input_name} value")}</th><th></th>
                        <th>"weight"</th><th></th><th>"product"</th><th>"running Σ"</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        }
        .into_any();
    }
    let groups: Vec<&[showdown_core::explain::ConvTerm]> = at.terms.chunks(9).collect();
    let sums: Vec<f32> = groups
        .iter()
        .map(|g| g.iter().fold(0f32, |a, t| a + t.input * t.weight))
        .collect();
    let mut order: Vec<usize> = (0..sums.len()).collect();
    order.sort_by(|&a, &b| sums[b].abs().total_cmp(&sums[a].abs()));
    let top: Vec<usize> = order.into_iter().take(3).collect();
    let mut acc = 0f32;
    let rows = groups
        .iter()
        .zip(&sums)
        .enumerate()
        .map(|(i, (g, &sum))| {
            for t in g.iter() {
                acc += t.input * t.weight;
            }
            let inputs: Vec<f32> = g.iter().map(|t| t.input).collect();
            let weights: Vec<f32> = g.iter().map(|t| t.weight).collect();
            let ri = maps::range_of(&inputs);
            let rw = maps::range_of(&weights);
            let ci = g.first().map(|t| t.channel).unwrap_or(i);
            view! {
                <tr class:top=top.contains(&i)>
                    <td class="num">{ci}</td>
                    <td>{mini(&inputs, ri)}</td>
                    <td>{mini(&weights, rw)}</td>
                    <td class="num">{fmt_value(sum)}</td>
                    <td class="num">{fmt_value(acc)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="terms">
            <table id="conv-at-terms">
                <thead><tr>
                    <th>{format!("{input_name} map")}</th><th>"its 3 × 3 window"</th><th>"× the filter's weights"</th>
                    <th>"Σ of the 9 products"</th><th>"running Σ"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

/// The convolution at pixel `(y, x)` of the focused map, with the real numbers (#conv-at).
fn conv_at_panel(s: &Explained, f: Focus, y: usize, x: usize) -> AnyView {
    let fail = |text: String| {
        view! { <div id="conv-at" data-y=y data-x=x><p class="error">{text}</p></div> }.into_any()
    };
    let Some(acts) = s.report.models.get(f.model) else {
        return fail("no such model".into());
    };
    let Some(weights) = s.weights_for(f.model) else {
        return fail(format!(
            "the service sent no weights for the {} model",
            acts.precision
        ));
    };
    let Some((conv_name, input_name, pool_name)) = conv_names(f.conv) else {
        return fail(format!("{} is not a convolution", f.conv));
    };
    let at = match conv_at(weights, acts, conv_name, f.channel, y, x) {
        Ok(at) => at,
        Err(e) => return fail(format!("cannot compute the convolution here: {e}")),
    };
    let p = acts.precision;
    let act = acts.activation;
    let c = f.channel;
    let map_value = acts.layer(conv_name).and_then(|l| l.at(c, y, x));
    let products = at.terms.iter().fold(0f32, |a, t| a + t.input * t.weight);
    let same = map_value == Some(at.sum);
    let rounding = match p.as_str() {
        "fp32" => "in FP32".to_string(),
        "tf32" => "rounded to TF32 (10-bit mantissa)".to_string(),
        other => format!("as stored in {}", other.to_uppercase()),
    };
    let explanation = format!(
        "{} products of a {input_name} value and a weight, each {rounding} as the {p} arithmetic \
         sees it, added up in f32 in this order, then the bias (FP32) — the arithmetic of the \
         service's forward pass, so the sum is the map's value to the last bit.",
        at.terms.len()
    );
    let pool_view = match at.pool_choice {
        Some((py, px)) => {
            let (y0, x0) = (y / 2 * 2, x / 2 * 2);
            let conv = acts.layer(conv_name);
            let cells = [(0, 0), (0, 1), (1, 0), (1, 1)].map(|(dy, dx)| {
                let z = conv.and_then(|l| l.at(c, y0 + dy, x0 + dx)).unwrap_or(f32::NAN);
                (y0 + dy, x0 + dx, act.apply(f64::from(z)) as f32)
            });
            let rows = cells
                .chunks(2)
                .map(|row| {
                    let tds = row
                        .iter()
                        .map(|&(cy, cx, v)| {
                            let win = (cy, cx) == (py, px);
                            let me = (cy, cx) == (y, x);
                            view! {
                                <td class:win=win class="num">
                                    {format!("({cy}, {cx}){} {}", if me { " this" } else { "" }, fmt_value(v))}
                                </td>
                            }
                        })
                        .collect_view();
                    view! { <tr>{tds}</tr> }
                })
                .collect_view();
            let pooled = acts
                .layer(pool_name)
                .and_then(|l| l.at(c, y / 2, x / 2))
                .map(fmt_value)
                .unwrap_or_else(|| "—".into());
            let verdict = if (py, px) == (y, x) {
                "this pixel wins: its value goes on".to_string()
            } else {
                format!("pixel ({py}, {px}) wins, not this one")
            };
            view! {
                <div id="conv-at-pool" data-win-y=py data-win-x=px>
                    <p>{format!(
                        "The 2 × 2 pool window of rows {y0}–{}, columns {x0}–{} ({} of each):",
                        y0 + 1,
                        x0 + 1,
                        act.name()
                    )}</p>
                    <table class="pool-window"><tbody>{rows}</tbody></table>
                    <p>{format!("{verdict} → {pool_name} map {c} at row {}, column {} = {pooled}", y / 2, x / 2)}
                        {(p.activation_bytes() == 2).then(|| format!(" (stored in {})", p.as_str().to_uppercase()))}</p>
                </div>
            }
            .into_any()
        }
        None => view! {
            <div id="conv-at-pool">
                <p>{format!(
                    "Row {y}, column {x} lies in the last row or column, which the 2 × 2 pool drops \
                     (it keeps whole windows only): this value goes nowhere."
                )}</p>
            </div>
        }
        .into_any(),
    };
    let others = s
        .report
        .models
        .iter()
        .enumerate()
        .filter(|(k, _)| *k != f.model)
        .map(|(k, m)| {
            let text = match s
                .weights_for(k)
                .map(|wk| conv_at(wk, m, conv_name, c, y, x))
            {
                Some(Ok(o)) => format!(
                    "The {} model at this pixel: sum {} (Δ {:+.3e} from the {p} model's).",
                    m.precision,
                    fmt_value(o.sum),
                    o.sum - at.sum
                ),
                Some(Err(e)) => format!("The {} model: {e}", m.precision),
                None => format!("The {} model: no weights.", m.precision),
            };
            view! { <li>{text}</li> }
        })
        .collect_view();
    view! {
        <div id="conv-at" data-y=y data-x=x data-layer=conv_name data-channel=c data-precision=p.to_string()>
            <h4>{format!("{conv_name} map {c} at row {y}, column {x} — the {p} model")}</h4>
            <p class="muted">{explanation}</p>
            {terms_view(&at, input_name)}
            <table class="sums"><tbody>
                <tr><td>{format!("Σ of the {} products", at.terms.len())}</td><td class="num">{fmt_value(products)}</td><td></td></tr>
                <tr><td>"+ bias"</td><td class="num">{fmt_value(at.bias)}</td><td></td></tr>
                <tr class="total"><td>"= the sum"</td><td class="num" id="conv-at-sum">{fmt_value(at.sum)}</td><td></td></tr>
                <tr>
                    <td>{format!("{conv_name} map {c} at ({y}, {x}), from the service")}</td>
                    <td class="num" id="conv-at-map-value">{map_value.map(fmt_value).unwrap_or_else(|| "—".into())}</td>
                    <td class:same=same class:differs=!same>{if same { "✓ the same number" } else { "✗ differs" }}</td>
                </tr>
                <tr><td>{format!("{}(sum)", act.name())}</td><td class="num" id="conv-at-activated">{fmt_value(at.activated)}</td><td></td></tr>
            </tbody></table>
            {pool_view}
            <ul class="conv-at-others">{others}</ul>
        </div>
    }
    .into_any()
}
