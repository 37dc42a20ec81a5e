//! The gradient histograms (`#grad-histograms`): for a chosen contestant and sampled step,
//! each layer's activation and weight gradients by power of two, drawn against FP16's range
//! (flush to zero below 2⁻²⁴, subnormal to 2⁻¹⁴, overflow above 65504) with a loss scale that
//! shifts them live, and in words how many values would flush or overflow without and with it.

use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::prelude::*;
use showdown_core::grads::{GradSample, LayerGrads};
use showdown_core::histogram::{FloatRange, Log2Histogram, RangeCounts, FP16, MAX_EXP, MIN_EXP};
use showdown_core::types::{Precision, RunReport};
use web_sys::HtmlCanvasElement;

use super::draw::{self, pct, pow2, scale_exp, thousands};
use crate::charts::{css_color, precision_color, YELLOW};

/// The largest loss-scale exponent the slider offers (unless a sample's own scale is larger).
const MAX_SHIFT: i32 = 24;

/// Which gradient of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The gradient with respect to the layer's output.
    Activations,
    /// The gradient with respect to the layer's weights.
    Weights,
}

impl Kind {
    /// Both, in the order of a row.
    pub const ALL: [Kind; 2] = [Kind::Activations, Kind::Weights];

    /// `activation` or `weight`.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Activations => "activation",
            Kind::Weights => "weight",
        }
    }

    /// The histogram of this kind in `l`.
    pub fn of(self, l: &LayerGrads) -> &Log2Histogram {
        match self {
            Kind::Activations => &l.activations,
            Kind::Weights => &l.weights,
        }
    }
}

/// The lowest and highest populated bucket exponents of `h`.
pub fn populated(h: &Log2Histogram) -> Option<(i32, i32)> {
    let lo = h.counts.iter().position(|&c| c > 0)?;
    let hi = h.counts.iter().rposition(|&c| c > 0)?;
    Some((Log2Histogram::bucket_exp(lo), Log2Histogram::bucket_exp(hi)))
}

/// The x range (bucket exponents, from `.0` to `.1` exclusive) that every panel of `sample`
/// shares: the populated range ±2, unscaled and shifted by `shift`, and always FP16's limits.
pub fn x_range(sample: &GradSample, shift: i32) -> (i32, i32) {
    let (mut lo, mut hi) = (FP16.min_subnormal_exp - 2, FP16.max_exp + 3);
    for l in &sample.layers {
        for k in Kind::ALL {
            if let Some((a, b)) = populated(k.of(l)) {
                lo = lo.min(a - 2).min(a + shift - 2);
                hi = hi.max(b + 3).max(b + shift + 3);
            }
        }
    }
    (lo.max(MIN_EXP), hi.min(MAX_EXP + 1 + MAX_SHIFT.max(shift)))
}

/// The sentence under one panel: FP16 without and with the scale 2^`shift`, and the zeros.
pub fn panel_sentence(layer: &str, kind: Kind, h: &Log2Histogram, shift: i32) -> String {
    let n = h.nonzero();
    let zeros = match (h.zeros, kind) {
        (0, _) => String::new(),
        (z, Kind::Activations) => format!(
            " {} exact zeros: ReLU's mask and the pool's unchosen pixels.",
            thousands(z)
        ),
        (z, Kind::Weights) => format!(" {} exact zeros.", thousands(z)),
    };
    let non_finite = if h.non_finite > 0 {
        format!(" {} inf or NaN.", thousands(h.non_finite))
    } else {
        String::new()
    };
    if n == 0 {
        return format!(
            "{layer}, {} gradients: no nonzero value at this step.{zeros}{non_finite}",
            kind.label()
        );
    }
    let raw = h.against(&FP16, 1.0);
    let scale = 2f64.powi(shift);
    let scaled = h.against(&FP16, scale);
    format!(
        "{layer}, {} gradients, {} nonzero: without scaling {} ({:.1} %) would flush to zero in \
         FP16, {} subnormal, {} overflow; with scale {} = {}: {} ({:.1} %) flush, {} subnormal, \
         {} overflow.{zeros}{non_finite}",
        kind.label(),
        thousands(n),
        thousands(raw.flush_to_zero),
        pct(raw.flush_to_zero, n),
        thousands(raw.subnormal),
        thousands(raw.overflow),
        pow2(shift),
        scale,
        thousands(scaled.flush_to_zero),
        pct(scaled.flush_to_zero, n),
        thousands(scaled.subnormal),
        thousands(scaled.overflow),
    )
}

fn add(a: RangeCounts, b: RangeCounts) -> RangeCounts {
    RangeCounts {
        flush_to_zero: a.flush_to_zero + b.flush_to_zero,
        subnormal: a.subnormal + b.subnormal,
        normal: a.normal + b.normal,
        overflow: a.overflow + b.overflow,
    }
}

/// The summary of a sample (`#grad-underflow`): how many of its gradient values would flush to
/// zero in FP16 without scaling (per layer and in all), and with the scale 2^`shift`.
pub fn underflow_summary(p: Precision, s: &GradSample, shift: i32) -> String {
    let scale = 2f64.powi(shift);
    let (mut raw, mut scaled, mut n) = (RangeCounts::default(), RangeCounts::default(), 0u64);
    let mut per_layer = Vec::new();
    for l in &s.layers {
        let mut layer_raw = 0;
        for k in Kind::ALL {
            let h = k.of(l);
            let r = h.against(&FP16, 1.0);
            layer_raw += r.flush_to_zero;
            raw = add(raw, r);
            scaled = add(scaled, h.against(&FP16, scale));
            n += h.nonzero();
        }
        per_layer.push(format!("{} {}", l.layer, thousands(layer_raw)));
    }
    format!(
        "{p}, epoch {} step {}: without a loss scale {} of the {} nonzero gradient values would \
         flush to zero in FP16 ({:.1} %; {}); with the scale {} = {}: {} ({:.1} %) flush and {} \
         overflow.",
        s.epoch,
        s.step,
        thousands(raw.flush_to_zero),
        thousands(n),
        pct(raw.flush_to_zero, n),
        per_layer.join(", "),
        pow2(shift),
        scale,
        thousands(scaled.flush_to_zero),
        pct(scaled.flush_to_zero, n),
        thousands(scaled.overflow),
    )
}

/// A format's regions by bucket exponent: from, to (exclusive), name, fill.
fn bands(f: &FloatRange) -> [(i32, i32, &'static str, RGBAColor); 4] {
    let grey = BLACK.mix(0.13);
    [
        (i32::MIN / 2, f.min_subnormal_exp, "flush to 0", grey),
        (
            f.min_subnormal_exp,
            f.min_normal_exp,
            "subnormal",
            YELLOW.mix(0.45),
        ),
        (f.min_normal_exp, f.max_exp + 1, "normal", WHITE.mix(0.0)),
        (f.max_exp + 1, i32::MAX / 2, "overflow", grey),
    ]
}

/// How a histogram is drawn: against which format, and what its shift is called.
pub struct Against<'a> {
    /// The format whose regions are shaded.
    pub format: &'a FloatRange,
    /// `loss scale`, `tensor scale`.
    pub scale_word: &'a str,
    /// A note in the top right corner.
    pub corner: &'a str,
    /// What the x axis measures (`gradient`, `value`).
    pub quantity: &'a str,
}

/// FP16 with the loss scale (the mixed-precision figure).
pub const AGAINST_FP16: Against<'static> = Against {
    format: &FP16,
    scale_word: "loss scale",
    corner: "bf16: all of this in range",
    quantity: "gradient",
};

/// `1`, `10`, `100`, `1k` … for a count axis tick at 10^`k`.
fn decade(k: i32) -> String {
    match k {
        0 => "1".into(),
        1 => "10".into(),
        2 => "100".into(),
        3..=5 => format!("{}k", 10u64.pow((k - 3) as u32)),
        6..=8 => format!("{}M", 10u64.pow((k - 6) as u32)),
        _ => format!("1e{k}"),
    }
}

/// Draws `h` by bucket (counts on a log axis) shifted by `shift` powers of two, over `range`,
/// on the shaded regions of `against`'s format; the unscaled histogram as grey outlines when
/// shifted.
pub fn draw_histogram(
    canvas: HtmlCanvasElement,
    title: &str,
    h: &Log2Histogram,
    shift: i32,
    range: (i32, i32),
    color: RGBColor,
    against: &Against<'_>,
) -> Result<(), String> {
    let f = against.format;
    let (w, ht) = (canvas.width() as i32, canvas.height() as i32);
    let root = draw::root(canvas)?;
    let (left, right, top, bottom) = (46, w - 10, 40, ht - 40);
    let (lo, hi) = (range.0, range.1.max(range.0 + 1));
    let unit = f64::from(right - left) / f64::from(hi - lo);
    let px = |e: i32| left + (f64::from(e - lo) * unit).round() as i32;
    let dark = RGBColor(60, 60, 60);
    draw::text(&root, title, (6, 4), 14, BLACK)?;
    draw::text(
        &root,
        against.corner,
        (w - 6 * against.corner.chars().count() as i32 - 8, 6),
        11,
        RGBColor(110, 110, 110),
    )?;
    for (a, b, name, fill) in bands(f) {
        let (x0, x1) = (px(a.max(lo)), px(b.min(hi)));
        if x1 <= x0 {
            continue;
        }
        draw::fill(&root, (x0, top), (x1, bottom), fill)?;
        let label_w = 6 * name.len() as i32 + 4;
        if a > f.max_exp {
            // The overflow band is narrow: its label may reach left over the margin.
            draw::text(&root, name, ((x0 + 3).min(w - label_w), top - 14), 11, dark)?;
        } else if x1 - x0 >= label_w {
            draw::text(&root, name, (x0 + 3, top - 14), 11, dark)?;
        }
    }
    let top_count = h.counts.iter().copied().max().unwrap_or(0).max(1);
    let decades = (top_count as f64).log10().floor() as i32 + 1;
    // A count's height: log10(count) + 1, so that a single value still shows.
    let py_of =
        |v: f64| bottom - (v / f64::from(decades + 1) * f64::from(bottom - top)).round() as i32;
    let py = |c: u64| {
        py_of(if c == 0 {
            0.0
        } else {
            (c as f64).log10() + 1.0
        })
    };
    for k in 0..=decades {
        let y = py_of(f64::from(k + 1));
        draw::line(&root, vec![(left, y), (right, y)], BLACK.mix(0.08))?;
        draw::text(&root, decade(k), (4, y - 6), 10, dark)?;
    }
    let bar = |i: usize, s: i32| {
        let e = Log2Histogram::bucket_exp(i) + s;
        (e >= lo && e < hi).then(|| (px(e) + 1, px(e + 1) - 1))
    };
    if shift != 0 {
        for (i, &c) in h.counts.iter().enumerate() {
            if let (true, Some((x0, x1))) = (c > 0, bar(i, 0)) {
                draw::outline(
                    &root,
                    (x0, py(c)),
                    (x1.max(x0 + 1), bottom),
                    RGBColor(150, 150, 150),
                )?;
            }
        }
    }
    for (i, &c) in h.counts.iter().enumerate() {
        if let (true, Some((x0, x1))) = (c > 0, bar(i, shift)) {
            draw::fill(&root, (x0, py(c)), (x1.max(x0 + 1), bottom), color)?;
        }
    }
    for e in [f.min_subnormal_exp, f.min_normal_exp, f.max_exp + 1] {
        if e > lo && e < hi {
            draw::line(&root, vec![(px(e), top), (px(e), bottom)], dark)?;
        }
    }
    draw::line(&root, vec![(left, bottom), (right, bottom)], BLACK)?;
    let limits = [f.min_subnormal_exp, f.min_normal_exp, f.max_exp + 1];
    let mut ticks: Vec<i32> = (lo..hi)
        .filter(|e| e % 10 == 0 && limits.iter().all(|l| (l - e).abs() > 3))
        .collect();
    ticks.extend(limits.iter().filter(|&&e| e >= lo && e < hi));
    for e in ticks {
        let x = px(e);
        draw::line(&root, vec![(x, bottom), (x, bottom + 4)], BLACK)?;
        draw::text(&root, pow2(e), (x - 8, bottom + 6), 10, dark)?;
    }
    let axis = if shift == 0 {
        format!(
            "|{}| by power of two (no {})",
            against.quantity, against.scale_word
        )
    } else {
        format!(
            "|{}| × {} {} by power of two (grey: unscaled)",
            against.quantity,
            against.scale_word,
            pow2(shift)
        )
    };
    draw::text(&root, axis, (left, bottom + 22), 11, dark)?;
    root.present().map_err(draw::err)
}

/// One panel: a layer's gradient of one kind, its chart and its sentence.
#[component]
fn HistPanel(
    layer: String,
    kind: Kind,
    hist: Log2Histogram,
    #[prop(into)] shift: Signal<i32>,
    #[prop(into)] range: Signal<(i32, i32)>,
    color: RGBColor,
) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let error = RwSignal::new(None::<String>);
    let title = format!("{layer} · {} gradients", kind.label());
    let drawn = hist.clone();
    Effect::new(move |_| {
        let (s, r) = (shift.get(), range.get());
        let Some(c) = canvas.get() else { return };
        error.set(draw_histogram(c, &title, &drawn, s, r, color, &AGAINST_FP16).err());
    });
    let data_layer = layer.clone();
    let sentence = move || panel_sentence(&layer, kind, &hist, shift.get());
    view! {
        <figure class="grad-panel" data-layer=data_layer data-kind=kind.label() style="margin:0">
            <canvas node_ref=canvas width="560" height="230" style="width:100%;max-width:560px;height:auto;border:1px solid #ddd"></canvas>
            <figcaption class="grad-sentence" style="font-size:0.85em;max-width:560px">{sentence}</figcaption>
            {move || error.get().map(|e| view! { <p class="error">{e}</p> })}
        </figure>
    }
}

/// `epoch 1 step 1 (scale 65536)`, the label of a sample in the select.
fn sample_label(s: &GradSample) -> String {
    format!(
        "epoch {} step {} (scale {}){}",
        s.epoch,
        s.step,
        s.loss_scale,
        if s.skipped { ", skipped" } else { "" }
    )
}

/// A legend swatch.
fn swatch(css: String, border: bool) -> impl IntoView {
    let style = format!(
        "display:inline-block;width:12px;height:12px;margin:0 4px 0 10px;vertical-align:middle;background:{css};{}",
        if border { "border:1px solid #999" } else { "" }
    );
    view! { <span style=style></span> }
}

/// The histogram section (`#grad-histograms`) for the runs finished so far: it fills as each
/// contestant's report arrives.
#[component]
pub fn GradHistograms(
    /// Put before every element id: `""` for the live duel (`#grad-histograms`,
    /// `#grad-underflow`…), `"history-"` for a saved one (`#history-grad-histograms`…).
    prefix: &'static str,
    /// The finished runs (live, or the duel's report).
    #[prop(into)]
    runs: Signal<Vec<RunReport>>,
) -> impl IntoView {
    let pid = move |name: &str| format!("{prefix}{name}");
    let chosen = RwSignal::new(None::<Precision>);
    let sample_pick = RwSignal::new(None::<usize>);
    let shift_pick = RwSignal::new(None::<i32>);
    let contestants = Memo::new(move |_| {
        runs.with(|rs| {
            rs.iter()
                .filter(|r| !r.grad_samples.is_empty())
                .map(|r| (r.precision, r.grad_samples.clone()))
                .collect::<Vec<_>>()
        })
    });
    let without_samples = Memo::new(move |_| {
        runs.with(|rs| {
            rs.iter()
                .filter(|r| r.grad_samples.is_empty())
                .map(|r| r.precision)
                .collect::<Vec<_>>()
        })
    });
    // The shown contestant, sample index and sample: the chosen ones, else FP16 (the story's
    // contestant) or the first, and its latest sample.
    let current = Memo::new(move |_| {
        contestants.with(|list| {
            let p = chosen
                .get()
                .filter(|p| list.iter().any(|(q, _)| q == p))
                .or_else(|| {
                    list.iter()
                        .find(|(q, _)| *q == Precision::Fp16)
                        .or(list.first())
                        .map(|(q, _)| *q)
                })?;
            let samples = &list.iter().find(|(q, _)| *q == p)?.1;
            let last = samples.len().checked_sub(1)?;
            let i = sample_pick.get().filter(|i| *i <= last).unwrap_or(last);
            Some((p, i, samples.get(i)?.clone()))
        })
    });
    let own_shift = Memo::new(move |_| {
        current.with(|c| {
            c.as_ref()
                .map_or(0, |(_, _, s)| scale_exp(s.loss_scale).max(0))
        })
    });
    let shift = Memo::new(move |_| shift_pick.get().unwrap_or_else(|| own_shift.get()));
    let max_shift = Memo::new(move |_| own_shift.get().max(MAX_SHIFT));
    let range = Memo::new(move |_| {
        let s = shift.get();
        current.with(|c| {
            c.as_ref()
                .map_or((-50, 20), |(_, _, sample)| x_range(sample, s))
        })
    });
    // A new duel's runs: back to the defaults.
    Effect::new(move |_| {
        contestants.track();
        sample_pick.set(None);
        shift_pick.set(None);
    });

    let contestant_select = move || {
        let shown = current.with(|c| c.as_ref().map(|(p, _, _)| *p));
        contestants.with(|list| {
            list.iter()
                .map(|(p, samples)| {
                    view! {
                        <option value=p.as_str() selected=Some(*p) == shown>
                            {format!("{p} ({} samples)", samples.len())}
                        </option>
                    }
                })
                .collect_view()
        })
    };
    let sample_select = move || {
        let Some((p, shown, _)) = current.get() else {
            return Vec::new();
        };
        contestants.with(|list| {
            list.iter()
                .find(|(q, _)| *q == p)
                .map(|(_, samples)| {
                    samples
                        .iter()
                        .enumerate()
                        .map(|(i, s)| {
                            view! { <option value=i.to_string() selected=i == shown>{sample_label(s)}</option> }
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    };
    let panels = move || {
        current.get().map(|(p, _, sample)| {
            let color = precision_color(p);
            sample
                .layers
                .into_iter()
                .flat_map(|l| {
                    Kind::ALL.map(|k| {
                        view! {
                            <HistPanel layer=l.layer.clone() kind=k hist=k.of(&l).clone()
                                shift=shift range=range color=color/>
                        }
                    })
                })
                .collect_view()
        })
    };
    let underflow = move || {
        let s = shift.get();
        current.with(|c| {
            c.as_ref()
                .map(|(p, _, sample)| underflow_summary(*p, sample, s))
        })
    };
    let missing = move || {
        let list = without_samples.get();
        (!list.is_empty()).then(|| {
            let names = list.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ");
            view! {
                <p class="muted">{format!("{names}: no gradient samples in this run's report (reports from before they were recorded have none).")}</p>
            }
        })
    };
    let grey = css_color(RGBColor(210, 210, 210));
    let sub = css_color(RGBColor(248, 242, 170));
    view! {
        <section id={pid("grad-histograms")} class="card">
            <h3>"Gradients against FP16's range"</h3>
            <p class="muted">"Sampled training steps record each layer's gradients by power of two. "
                "FP16 cannot hold a magnitude below 2⁻²⁴ (it flushes to zero), keeps fewer bits between "
                "2⁻²⁴ and 2⁻¹⁴ (subnormal) and overflows above 65504 ≈ 2¹⁶. The loss scale multiplies the "
                "gradients before they are stored in FP16 — drag it to see them move (Micikevicius et al., "
                "Mixed Precision Training, ICLR 2018, here live on this model)."</p>
            {move || if contestants.with(Vec::is_empty) {
                view! { <p class="muted" id={pid("grad-waiting")}>"The histograms appear when a contestant's run finishes."</p> }.into_any()
            } else {
                view! {
                    <div class="controls">
                        <label for={pid("grad-contestant")}>"contestant "
                            <select id={pid("grad-contestant")} on:change=move |ev| {
                                chosen.set(event_target_value(&ev).parse().ok());
                                sample_pick.set(None);
                                shift_pick.set(None);
                            }>{contestant_select}</select>
                        </label>
                        " "
                        <label for={pid("grad-sample")}>"sampled step "
                            <select id={pid("grad-sample")} on:change=move |ev| {
                                sample_pick.set(event_target_value(&ev).parse().ok());
                                shift_pick.set(None);
                            }>{sample_select}</select>
                        </label>
                        " "
                        <label for={pid("grad-scale")}>"loss scale "
                            <input type="range" id={pid("grad-scale")} min="0" max=move || max_shift.get().to_string() step="1"
                                prop:value=move || shift.get().to_string()
                                on:input=move |ev| shift_pick.set(event_target_value(&ev).parse().ok())/>
                            <output id={pid("grad-scale-value")}>{move || format!("{} = {}", pow2(shift.get()), 2f64.powi(shift.get()))}</output>
                        </label>
                        " "
                        <button type="button" id={pid("grad-scale-reset")} on:click=move |_| shift_pick.set(None)
                            disabled=move || shift_pick.get().is_none()>"the step's own scale"</button>
                    </div>
                    <p class="grad-legend" style="font-size:0.85em">
                        "FP16: "{swatch(grey.clone(), false)}"flush to zero (< 2⁻²⁴)"
                        {swatch(sub.clone(), false)}"subnormal (2⁻²⁴ … 2⁻¹⁴)"
                        {swatch("#ffffff".into(), true)}"normal (2⁻¹⁴ … 65504)"
                        {swatch(grey.clone(), false)}"overflow (> 65504 ≈ 2¹⁶)"
                        ". BF16 keeps everything here: its range is FP32's (smallest subnormal 2⁻¹³³, largest ≈ 3.4 × 10³⁸, both off this chart); it gives up mantissa bits, not range, so it needs no loss scale."
                    </p>
                    <p id={pid("grad-underflow")}><strong>{underflow}</strong></p>
                    <div class="grad-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px">
                        {panels}
                    </div>
                }.into_any()
            }}
            {missing}
        </section>
    }
}
