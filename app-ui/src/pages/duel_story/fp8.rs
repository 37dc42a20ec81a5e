//! FP8's story (`#fp8-story`), under the duel's result when FP8 ran: which engine ran it (an
//! emulation says so), each cast tensor's scale over training (`#fp8-scale-chart`), a slider
//! over the sampled steps (`#fp8-step`) with every tensor's scale, amax, history and counts at
//! that step (`#fp8-tensors`), and each tensor's values before its cast against E4M3's or
//! E5M2's range with its own scale applied (`#fp8-histograms`); and what FP8 storage of the
//! cast tensors would hold (`#fp8-memory`).

use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::prelude::*;
use showdown_core::fp8::{fp8_sentence, Fp8Format, Fp8Report, Fp8Tensor, Fp8TensorSample};
use showdown_core::grads::GradSample;
use showdown_core::histogram::{Log2Histogram, MAX_EXP, MIN_EXP};
use showdown_core::types::RunReport;
use web_sys::HtmlCanvasElement;

use super::draw::{self, pct, pow2, scale_exp, thousands};
use super::histograms::{draw_histogram, populated, Against};
use crate::charts::{css_color, COLORS};

/// A tensor's colour in the scale chart.
fn tensor_color(t: Fp8Tensor) -> RGBColor {
    match t {
        Fp8Tensor::Conv1Input => COLORS[0],
        Fp8Tensor::Conv1Weight => COLORS[5],
        Fp8Tensor::Conv2Input => COLORS[2],
        Fp8Tensor::Conv2Weight => COLORS[3],
        Fp8Tensor::Conv2GradOutput => COLORS[1],
        Fp8Tensor::Conv1GradOutput => COLORS[4],
    }
}

/// Draws each tensor's scale (log₂, a step line) over the run's steps.
pub fn draw_scale_chart(canvas: HtmlCanvasElement, f: &Fp8Report) -> Result<(), String> {
    let (w, h) = (canvas.width() as i32, canvas.height() as i32);
    let root = draw::root(canvas)?;
    let (left, right, top, bottom) = (56, w - 170, 34, h - 40);
    let dark = RGBColor(60, 60, 60);
    draw::text(
        &root,
        format!(
            "FP8 scale per tensor over training ({} scaling; {} steps)",
            f.recipe.scaling.as_str(),
            thousands(f.steps)
        ),
        (6, 6),
        14,
        BLACK,
    )?;
    let last_step = f
        .tensors
        .iter()
        .flat_map(|t| t.points.iter().map(|p| p.step))
        .max()
        .unwrap_or(1)
        .max(2);
    let exps: Vec<i32> = f
        .tensors
        .iter()
        .flat_map(|t| t.points.iter().map(|p| scale_exp(p.scale as f64)))
        .collect();
    let (lo, hi) = (
        exps.iter().copied().min().unwrap_or(0) - 1,
        exps.iter().copied().max().unwrap_or(1) + 1,
    );
    let px = |step: usize| {
        left + ((step as f64 - 1.0) / (last_step as f64 - 1.0) * f64::from(right - left)) as i32
    };
    let py =
        |e: i32| bottom - (f64::from(e - lo) / f64::from(hi - lo) * f64::from(bottom - top)) as i32;
    let every = ((hi - lo) / 8).max(1);
    for e in (lo..=hi).filter(|e| e % every == 0) {
        let y = py(e);
        draw::line(&root, vec![(left, y), (right, y)], BLACK.mix(0.08))?;
        draw::text(&root, pow2(e), (8, y - 6), 11, dark)?;
    }
    draw::line(&root, vec![(left, bottom), (right, bottom)], BLACK)?;
    draw::line(&root, vec![(left, top), (left, bottom)], BLACK)?;
    for k in 0..=4 {
        let step = 1 + (last_step - 1) * k / 4;
        let x = px(step);
        draw::line(&root, vec![(x, bottom), (x, bottom + 4)], BLACK)?;
        draw::text(
            &root,
            thousands(step as u64),
            (x - 10, bottom + 6),
            10,
            dark,
        )?;
    }
    draw::text(
        &root,
        "training step (scale used by the step; log₂ axis)",
        (left, bottom + 22),
        11,
        dark,
    )?;
    for (i, t) in f.tensors.iter().enumerate() {
        let color = tensor_color(t.tensor);
        let mut path = Vec::new();
        for p in &t.points {
            let (x, y) = (px(p.step), py(scale_exp(p.scale as f64)));
            if let Some(&(_, py0)) = path.last() {
                path.push((x, py0));
            }
            path.push((x, y));
        }
        if let Some(&(_, y)) = path.last() {
            path.push((right, y));
        }
        draw::line(&root, path, color.stroke_width(2))?;
        let ly = top + 4 + 18 * i as i32;
        draw::fill(&root, (right + 10, ly + 2), (right + 22, ly + 12), color)?;
        let last = t.points.last().map_or(0, |p| scale_exp(p.scale as f64));
        draw::text(
            &root,
            format!("{} {} {}", t.tensor.name(), t.format.name(), pow2(last)),
            (right + 26, ly),
            11,
            dark,
        )?;
    }
    root.present().map_err(draw::err)
}

/// The x range of a tensor's histogram: its populated buckets (unscaled and shifted) ±2 and
/// the format's limits.
fn x_range(h: &Log2Histogram, shift: i32, f: Fp8Format) -> (i32, i32) {
    let r = f.range();
    let (mut lo, mut hi) = (r.min_subnormal_exp - 2, r.max_exp + 3);
    if let Some((a, b)) = populated(h) {
        lo = lo.min(a - 2).min(a + shift - 2);
        hi = hi.max(b + 3).max(b + shift + 3);
    }
    (lo.max(MIN_EXP), hi.min(MAX_EXP + 1 + shift.max(0)))
}

/// The sentence under a tensor's histogram: against `format` at the tensor's scale.
pub fn tensor_sentence(t: &Fp8TensorSample, h: &Log2Histogram, format: Fp8Format) -> String {
    let n = h.nonzero();
    let shift = scale_exp(t.scale as f64);
    let c = h.against(&format.range(), 2f64.powi(shift));
    let used = if format == t.tensor.format() {
        "its format"
    } else {
        "not its format: what it would have been"
    };
    format!(
        "{} in {} ({used}) at scale {}: of {} nonzero values, {} ({:.2} %) flush to zero, {} \
         subnormal, {} above the maximum {} (saturated). The cast itself counted {} flushed and \
         {} saturated.",
        t.tensor.name(),
        format.name(),
        pow2(shift),
        thousands(n),
        thousands(c.flush_to_zero),
        pct(c.flush_to_zero, n),
        thousands(c.subnormal),
        thousands(c.overflow),
        format.max(),
        thousands(t.underflow),
        thousands(t.overflow),
    )
}

/// One tensor's histogram against a format at its scale.
#[component]
fn TensorPanel(
    sample: Fp8TensorSample,
    #[prop(into)] format: Signal<Option<Fp8Format>>,
) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let error = RwSignal::new(None::<String>);
    let Some(hist) = sample.histogram.clone() else {
        return view! { <p class="muted">{format!("{}: no histogram at this step.", sample.tensor.name())}</p> }.into_any();
    };
    let t = sample.tensor;
    let shift = scale_exp(sample.scale as f64);
    let drawn = hist.clone();
    let fmt = move || format.get().unwrap_or(t.format());
    Effect::new(move |_| {
        let f = fmt();
        let Some(c) = canvas.get() else { return };
        let range = f.range();
        let title = format!("{} · {} at scale {}", t.name(), f.name(), pow2(shift));
        let corner = if f == t.format() {
            "format used"
        } else {
            "what-if format"
        };
        let against = Against {
            format: &range,
            scale_word: "tensor scale",
            corner,
            quantity: if t.is_gradient() { "gradient" } else { "value" },
        };
        let color = tensor_color(t);
        error.set(
            draw_histogram(
                c,
                &title,
                &drawn,
                shift,
                x_range(&drawn, shift, f),
                color,
                &against,
            )
            .err(),
        );
    });
    let s2 = sample.clone();
    let sentence = move || tensor_sentence(&s2, &hist, fmt());
    view! {
        <figure class="fp8-panel" data-tensor=t.name() data-format=move || fmt().name() style="margin:0">
            <canvas node_ref=canvas width="560" height="230" style="width:100%;max-width:560px;height:auto;border:1px solid #ddd"></canvas>
            <figcaption class="fp8-sentence" style="font-size:0.85em;max-width:560px">{sentence}</figcaption>
            {move || error.get().map(|e| view! { <p class="error">{e}</p> })}
        </figure>
    }
    .into_any()
}

/// The table of every tensor at a sampled step.
fn tensor_table(id: String, s: &GradSample) -> impl IntoView {
    let rows = s
        .fp8
        .iter()
        .map(|t| {
            let landed = t.amax as f64 * t.scale as f64;
            let max = t.tensor.format().max() as f64;
            view! {
                <tr data-tensor=t.tensor.name()>
                    <td><span style=format!("display:inline-block;width:10px;height:10px;margin-right:4px;background:{}", css_color(tensor_color(t.tensor)))></span>{t.tensor.name()}</td>
                    <td>{t.tensor.format().name()}</td>
                    <td class="num fp8-scale">{pow2(scale_exp(t.scale as f64))}</td>
                    <td class="num">{format!("{:.3e}", t.amax)}</td>
                    <td class="num" title="the step's amax times its scale, against the format's maximum">{format!("{:.1} % of {max}", 100.0 * landed / max)}</td>
                    <td class="num">{format!("{:.3e} ({} step{})", t.history_amax, t.history_len, if t.history_len == 1 { "" } else { "s" })}</td>
                    <td class="num">{pow2(scale_exp(t.next_scale as f64))}</td>
                    <td class="num">{thousands(t.overflow)}</td>
                    <td class="num">{format!("{} of {}", thousands(t.underflow), thousands(t.nonzero))}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table id=id class="results">
            <thead><tr>
                <th>"tensor"</th><th>"format"</th><th>"scale used"</th><th title="the tensor's largest magnitude before its FP8 scale (unscaled: FP16's loss scale divided out on a GPU)">"amax (before scaling)"</th>
                <th>"amax × scale"</th><th>"history amax (length)"</th><th>"next scale"</th>
                <th>"saturated"</th><th>"flushed to zero"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// FP8's story for the finished runs (live, or a saved duel's); nothing when no FP8 ran.
#[component]
pub fn Fp8Story(
    /// Put before every element id: `""` for the live duel, `"history-"` for a saved one.
    prefix: &'static str,
    /// The finished runs.
    #[prop(into)]
    runs: Signal<Vec<RunReport>>,
) -> impl IntoView {
    let pid = move |name: &str| format!("{prefix}{name}");
    let run = Memo::new(move |_| runs.with(|rs| rs.iter().find(|r| r.fp8.is_some()).cloned()));
    let step_pick = RwSignal::new(None::<usize>);
    let format_pick = RwSignal::new(None::<Fp8Format>);
    Effect::new(move |_| {
        run.track();
        step_pick.set(None);
    });
    let chart = NodeRef::<Canvas>::new();
    let chart_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let Some(c) = chart.get() else { return };
        run.with(|r| {
            if let Some(f) = r.as_ref().and_then(|r| r.fp8.as_ref()) {
                chart_error.set(draw_scale_chart(c, f).err());
            }
        });
    });
    move || {
        let r = run.get()?;
        let f = r.fp8.clone()?;
        let samples: Vec<GradSample> = r
            .grad_samples
            .iter()
            .filter(|s| !s.fp8.is_empty())
            .cloned()
            .collect();
        let last = samples.len().saturating_sub(1);
        // By default the latest sample that kept its histograms (the timed epochs keep scales
        // and counts only).
        let shown = samples
            .iter()
            .rposition(|s| s.fp8.iter().any(|t| t.histogram.is_some()))
            .unwrap_or(last);
        let current = move || step_pick.get().unwrap_or(shown).min(last);
        let samples2 = samples.clone();
        let chosen = Memo::new(move |_| samples2.get(current()).cloned());
        let engine = format!(
            "FP8 ran {}. Recipe: {}. Our scales are powers of two (Transformer Engine's are not \
             rounded): scaling and unscaling are then exact.",
            showdown_core::origin::saved_words(&f.engine),
            f.recipe.describe()
        );
        let storage = match f.stored_bytes.checked_div(f.fp8_bytes) {
            Some(4) => "FP32",
            Some(2) => "FP16",
            _ => "their storage type",
        };
        let memory = format!(
            "The six cast tensors hold {:.2} MB at batch {} at one byte per element (FP8 storage); \
             this run stored them in {storage} ({:.2} MB){}. FP8 halves FP16's bytes for these \
             tensors; the FP32 master weights, Adam's moments and the data set are the same in \
             every precision.",
            f.fp8_bytes as f64 / 1e6,
            batch_of(&f),
            f.stored_bytes as f64 / 1e6,
            if f.emulated {
                ", as the emulation keeps them between its casts: this run's peak memory is not FP8's"
            } else {
                ""
            },
        );
        let panels = move || {
            chosen.get().map(|s| {
                s.fp8
                    .into_iter()
                    .map(|t| view! { <TensorPanel sample=t format=format_pick/> })
                    .collect_view()
            })
        };
        let table = move || chosen.get().map(|s| tensor_table(pid("fp8-tensors"), &s));
        let step_label = move || {
            chosen
                .get()
                .map(|s| {
                    let kept = s.fp8.iter().any(|t| t.histogram.is_some());
                    format!(
                        "epoch {} step {}{}",
                        s.epoch,
                        s.step,
                        if kept {
                            ""
                        } else {
                            " (scales and counts only: a timed epoch keeps no histograms)"
                        }
                    )
                })
                .unwrap_or_default()
        };
        Some(view! {
            <section id={pid("fp8-story")} class="card">
                <h3>"FP8: a scale per tensor"</h3>
                <p id={pid("fp8-engine")} class="note">{engine}</p>
                <p id={pid("fp8-summary")}><strong>{fp8_sentence(&f)}</strong></p>
                <p class="muted">"E4M3 (forward: images, activations, weights) holds 2⁻⁹ to 448; E5M2 "
                    "(gradients) holds 2⁻¹⁶ to 57,344 with one mantissa bit less. Neither range fits every "
                    "tensor at once, so each tensor gets its own scale, chosen so that its largest magnitude "
                    "(amax) lands just below the format's maximum. The dense layer is not cast: it runs in the "
                    "storage precision (FP32 on the CPU, FP16 on a GPU). On a GPU the gradients are stored times "
                    "FP16's loss scale; their casts divide it out, so every amax, scale and histogram here is "
                    "unscaled and a loss-scale change moves no FP8 scale."</p>
                <canvas id={pid("fp8-scale-chart")} node_ref=chart width="760" height="300"
                    style="width:100%;max-width:760px;height:auto;border:1px solid #ddd"></canvas>
                {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
                <p id={pid("fp8-memory")} class="muted">{memory}</p>
                <div class="controls">
                    <label for={pid("fp8-step")}>"sampled step "
                        <input type="range" id={pid("fp8-step")} min="0" max=last.to_string() step="1"
                            prop:value=move || current().to_string()
                            on:input=move |ev| step_pick.set(event_target_value(&ev).parse().ok())/>
                        <output id={pid("fp8-step-value")}>{step_label}</output>
                    </label>
                    " "
                    <label for={pid("fp8-format")}>"range drawn "
                        <select id={pid("fp8-format")} on:change=move |ev| format_pick.set(match event_target_value(&ev).as_str() {
                            "e4m3" => Some(Fp8Format::E4m3),
                            "e5m2" => Some(Fp8Format::E5m2),
                            _ => None,
                        })>
                            <option value="own" selected>"each tensor's own format"</option>
                            <option value="e4m3">"E4M3 for all"</option>
                            <option value="e5m2">"E5M2 for all"</option>
                        </select>
                    </label>
                </div>
                {table}
                <div id={pid("fp8-histograms")} class="grad-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px">
                    {panels}
                </div>
            </section>
        })
    }
}

/// The batch the run's cast tensors were counted at (from the per-image and fixed counts).
fn batch_of(f: &Fp8Report) -> usize {
    let per_image: u64 = f.tensors.iter().map(|t| t.elements_per_image as u64).sum();
    let fixed: u64 = f.tensors.iter().map(|t| t.elements_fixed as u64).sum();
    f.fp8_bytes
        .saturating_sub(fixed)
        .checked_div(per_image)
        .unwrap_or(0) as usize
}
