//! Heat maps of a layer's outputs, drawn pixel for pixel with `putImageData` (one small canvas
//! per map, scaled up by CSS with `image-rendering: pixelated`).
//!
//! Colours: pre-activations (conv1, conv2) and differences on a diverging scale, blue for
//! negative, white for 0, orange for positive (blue/orange stays distinct for the common
//! colour-vision deficiencies); the pools (after the activation) on a sequential white → orange
//! → brown scale; the input as dark ink on white, like the data-set grid. Each map has its own
//! range unless the page asks for one range per layer.

use std::sync::Arc;

use leptos::prelude::*;
use wasm_bindgen::{Clamped, JsCast};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

use super::{conv_names, Explained, Focus, Scale};

/// Negative end of the diverging scale (ColorBrewer RdBu's blue).
pub const BLUE: [u8; 3] = [33, 102, 172];
/// Positive end of the diverging scale (ColorBrewer PuOr's orange).
pub const ORANGE: [u8; 3] = [230, 97, 1];
/// The sequential scale's stops (ColorBrewer Oranges): 0, ½, 1.
const SEQUENTIAL: [[u8; 3]; 3] = [[255, 255, 255], [253, 141, 60], [127, 39, 4]];

/// How a map's values become colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Palette {
    /// Blue (negative) · white (0) · orange (positive), symmetric about 0.
    Diverging,
    /// White (smallest) → orange → brown (largest).
    Sequential,
    /// White (smallest) → black (largest): ink on paper.
    Grey,
}

impl Palette {
    /// The palette a layer's maps are drawn in.
    pub fn of(layer: &str) -> Palette {
        match layer {
            "input" => Palette::Grey,
            "pool1" | "pool2" | "softmax" => Palette::Sequential,
            _ => Palette::Diverging,
        }
    }
}

fn lerp(a: [u8; 3], b: [u8; 3], t: f32) -> [u8; 3] {
    let t = t.clamp(0.0, 1.0);
    let mix = |x: u8, y: u8| (f32::from(x) + (f32::from(y) - f32::from(x)) * t).round() as u8;
    [mix(a[0], b[0]), mix(a[1], b[1]), mix(a[2], b[2])]
}

/// The colour of `v` in `palette` over the range `(lo, hi)`.
pub fn colour(palette: Palette, v: f32, (lo, hi): (f32, f32)) -> [u8; 3] {
    const WHITE: [u8; 3] = [255, 255, 255];
    if !v.is_finite() {
        return [255, 0, 255];
    }
    match palette {
        Palette::Diverging => {
            let m = lo.abs().max(hi.abs());
            let t = if m > 0.0 { v / m } else { 0.0 };
            if t >= 0.0 {
                lerp(WHITE, ORANGE, t)
            } else {
                lerp(WHITE, BLUE, -t)
            }
        }
        Palette::Sequential | Palette::Grey => {
            let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
            if palette == Palette::Grey {
                let g = (255.0 * (1.0 - t.clamp(0.0, 1.0))).round() as u8;
                [g, g, g]
            } else if t < 0.5 {
                lerp(SEQUENTIAL[0], SEQUENTIAL[1], 2.0 * t)
            } else {
                lerp(SEQUENTIAL[1], SEQUENTIAL[2], 2.0 * t - 1.0)
            }
        }
    }
}

/// `colour` as a CSS colour, mixed `strength` (0..1) of the way from white (for backgrounds
/// behind dark text).
pub fn css_colour(palette: Palette, v: f32, range: (f32, f32), strength: f32) -> String {
    let [r, g, b] = lerp([255, 255, 255], colour(palette, v, range), strength);
    format!("rgb({r},{g},{b})")
}

/// A CSS gradient showing `palette` (for the legend).
pub fn css_gradient(palette: Palette) -> String {
    let stops: Vec<String> = (0..=8)
        .map(|i| {
            let t = i as f32 / 8.0;
            let v = match palette {
                Palette::Diverging => 2.0 * t - 1.0,
                _ => t,
            };
            let lo = if palette == Palette::Diverging {
                -1.0
            } else {
                0.0
            };
            let [r, g, b] = colour(palette, v, (lo, 1.0));
            format!("rgb({r},{g},{b})")
        })
        .collect();
    format!("linear-gradient(to right, {})", stops.join(", "))
}

/// Smallest and largest finite value (0, 0 when there is none).
pub fn range_of(values: &[f32]) -> (f32, f32) {
    let (lo, hi) = values
        .iter()
        .filter(|v| v.is_finite())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        (0.0, 0.0)
    } else {
        (lo, hi)
    }
}

/// The 2D context of `canvas`.
pub fn context(canvas: &HtmlCanvasElement) -> Result<CanvasRenderingContext2d, String> {
    canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
        .ok_or_else(|| "the canvas has no 2D context".to_string())
}

/// Fills the `zoom × zoom` square at pixel `(x0, y0)` of an RGBA buffer `cw` pixels wide with
/// the opaque colour `rgb`.
pub fn fill_square(
    rgba: &mut [u8],
    cw: usize,
    (x0, y0): (usize, usize),
    zoom: usize,
    rgb: [u8; 3],
) {
    let [r, g, b] = rgb;
    for dy in 0..zoom {
        let row = ((y0 + dy) * cw + x0) * 4;
        if let Some(line) = rgba.get_mut(row..row + zoom * 4) {
            for px in line.chunks_exact_mut(4) {
                px.copy_from_slice(&[r, g, b, 255]);
            }
        }
    }
}

/// Puts an RGBA buffer of `cw × ch` pixels on `ctx` at its top left corner.
pub fn put_rgba(
    ctx: &CanvasRenderingContext2d,
    rgba: &[u8],
    cw: usize,
    ch: usize,
) -> Result<(), String> {
    let data =
        web_sys::ImageData::new_with_u8_clamped_array_and_sh(Clamped(rgba), cw as u32, ch as u32)
            .map_err(|e| format!("cannot make the image: {e:?}"))?;
    ctx.put_image_data(&data, 0.0, 0.0)
        .map_err(|e| format!("cannot draw the image: {e:?}"))
}

/// One map to draw: `values[offset..offset + width × height]`, each value a `zoom × zoom`
/// square.
#[derive(Debug, Clone)]
pub struct MapJob {
    /// The layer's values (all its maps).
    pub values: Arc<[f32]>,
    /// Where the map starts in `values`.
    pub offset: usize,
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Canvas pixels per map pixel.
    pub zoom: usize,
    /// The colours.
    pub palette: Palette,
    /// The range the colours span.
    pub range: (f32, f32),
}

impl MapJob {
    /// The map's values.
    pub fn map(&self) -> &[f32] {
        self.values
            .get(self.offset..self.offset + self.width * self.height)
            .unwrap_or(&[])
    }

    /// Sizes `canvas` and draws the map on it.
    pub fn paint(&self, canvas: &HtmlCanvasElement) -> Result<(), String> {
        let (w, h, z) = (self.width, self.height, self.zoom.max(1));
        let map = self.map();
        if map.len() != w * h || map.is_empty() {
            return Err(format!("no {w}×{h} map to draw"));
        }
        let (cw, ch) = (w * z, h * z);
        canvas.set_width(cw as u32);
        canvas.set_height(ch as u32);
        let ctx = context(canvas)?;
        let mut rgba = vec![255u8; cw * ch * 4];
        for (p, &v) in map.iter().enumerate() {
            let rgb = colour(self.palette, v, self.range);
            fill_square(&mut rgba, cw, ((p % w) * z, (p / w) * z), z, rgb);
        }
        put_rgba(&ctx, &rgba, cw, ch)
    }
}

/// The directive that draws a [`MapJob`] on the canvas it is put on (`use:paint_map=job`);
/// a failure is written on the canvas's `title` and `data-error`.
pub fn paint_map(el: web_sys::Element, job: MapJob) {
    let Ok(canvas) = el.dyn_into::<HtmlCanvasElement>() else {
        return;
    };
    if let Err(e) = job.paint(&canvas) {
        let _ = canvas.set_attribute("data-error", &e);
        canvas.set_title(&e);
    }
}

/// Whose maps a column shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapSource {
    /// Model `i`'s outputs.
    Model(usize),
    /// Model `b`'s outputs minus model `a`'s.
    Diff(usize, usize),
}

/// A column of a layer block: one model, or the difference of two.
#[derive(Debug, Clone)]
pub struct Column {
    /// Whose maps.
    pub source: MapSource,
    /// Heading, e.g. `fp16 model` or `fp16 − fp32`.
    pub label: String,
    /// `data-precision` of its canvases: `fp16`, or `fp16-minus-fp32`.
    pub key: String,
}

/// The columns of a layer block: each model, then (when `diff` and there are two or more)
/// each model after the first minus the first.
pub fn columns(s: &Explained, diff: bool) -> Vec<Column> {
    let models = &s.report.models;
    let mut out: Vec<Column> = models
        .iter()
        .enumerate()
        .map(|(i, m)| Column {
            source: MapSource::Model(i),
            label: format!("{} model", m.precision),
            key: m.precision.to_string(),
        })
        .collect();
    if diff {
        if let Some(first) = models.first() {
            for (k, m) in models.iter().enumerate().skip(1) {
                out.push(Column {
                    source: MapSource::Diff(0, k),
                    label: format!("{} − {}", m.precision, first.precision),
                    key: format!("{}-minus-{}", m.precision, first.precision),
                });
            }
        }
    }
    out
}

/// All maps of `layer` for `source` (a difference when the shapes agree), with the shape
/// `(channels, height, width)`.
pub fn layer_values(
    s: &Explained,
    source: MapSource,
    layer: &str,
) -> Option<(Arc<[f32]>, usize, usize, usize)> {
    let of = |i: usize| s.report.models.get(i).and_then(|m| m.layer(layer));
    match source {
        MapSource::Model(i) => {
            let l = of(i)?;
            Some((
                Arc::from(l.values.as_slice()),
                l.channels,
                l.height,
                l.width,
            ))
        }
        MapSource::Diff(a, b) => {
            let (la, lb) = (of(a)?, of(b)?);
            if la.values.len() != lb.values.len() || la.channels != lb.channels {
                return None;
            }
            let d: Vec<f32> = la
                .values
                .iter()
                .zip(&lb.values)
                .map(|(x, y)| y - x)
                .collect();
            Some((Arc::from(d), la.channels, la.height, la.width))
        }
    }
}

/// Maps per row and the largest size of a map (CSS pixels) for `layer` when `n` columns
/// share the width.
fn grid_shape(layer: &str, n: usize) -> (usize, usize) {
    let per_row = match n {
        0 | 1 => 16,
        2 => 8,
        3 => 6,
        _ => 4,
    };
    match layer {
        "input" => (1, 112),
        "conv1" | "pool1" => (per_row, 52),
        "conv2" => (per_row, 48),
        _ => (per_row, 40),
    }
}

/// The model a click on a map of `source` focuses on.
fn model_of(source: MapSource) -> usize {
    match source {
        MapSource::Model(i) | MapSource::Diff(_, i) => i,
    }
}

/// The maps of `layer` in one column per [`columns`], clickable (conv and pool maps open the
/// enlarged view of their convolution).
pub fn layer_columns(
    s: &Explained,
    layer: &'static str,
    scale: Scale,
    diff: bool,
    focus: RwSignal<Option<Focus>>,
) -> impl IntoView {
    let cols = columns(s, diff);
    let n = cols.len();
    let (per_row, px) = grid_shape(layer, n);
    // One range per layer shared by the models (the differences keep their own).
    let shared = range_of(
        &s.report
            .models
            .iter()
            .filter_map(|m| m.layer(layer))
            .flat_map(|l| l.values.iter().copied())
            .collect::<Vec<f32>>(),
    );
    let palette_for = |source: MapSource| match source {
        MapSource::Model(_) => Palette::of(layer),
        MapSource::Diff(..) => Palette::Diverging,
    };
    cols.into_iter()
        .map(|col| {
            let Some((values, channels, height, width)) = layer_values(s, col.source, layer)
            else {
                return view! {
                    <div class="inside-model">
                        <div class="inside-model-name">{col.label}</div>
                        <p class="error">{format!("the {layer} maps are missing or have different shapes")}</p>
                    </div>
                }
                .into_any();
            };
            let palette = palette_for(col.source);
            let whole = range_of(&values);
            let model = model_of(col.source);
            let maps = (0..channels)
                .map(|c| {
                    let offset = c * height * width;
                    let mut job = MapJob {
                        values: values.clone(),
                        offset,
                        width,
                        height,
                        zoom: 1,
                        palette,
                        range: whole,
                    };
                    let own = range_of(job.map());
                    job.range = match (scale, col.source) {
                        (Scale::Map, _) => own,
                        (Scale::Shared, MapSource::Model(_)) => shared,
                        _ => whole,
                    };
                    let title = format!(
                        "{layer} map {c} ({}): from {} to {}{}",
                        col.key,
                        super::fmt_value(own.0),
                        super::fmt_value(own.1),
                        if conv_names(layer).is_some() {
                            " — click to enlarge"
                        } else {
                            ""
                        }
                    );
                    let focused = move || {
                        focus.get().is_some_and(|f| {
                            f.model == model
                                && f.channel == c
                                && conv_names(layer).is_some_and(|(conv, _, _)| conv == f.conv)
                        })
                    };
                    let click = move |_| {
                        if let Some((conv, _, _)) = conv_names(layer) {
                            focus.set(Some(Focus {
                                model,
                                conv,
                                channel: c,
                                from: layer,
                            }));
                        }
                    };
                    view! {
                        <canvas class="fmap" class:focused=focused class:clickable=conv_names(layer).is_some()
                            data-layer=layer data-channel=c data-precision=col.key.clone() data-model=model
                            title=title use:paint_map=job on:click=click></canvas>
                    }
                })
                .collect_view();
            let grid_style = format!("grid-template-columns: repeat({per_row}, minmax(0, {px}px))");
            view! {
                <div class="inside-model" data-precision=col.key.clone()>
                    <div class="inside-model-name">{col.label}</div>
                    <div class="fmap-grid" style=grid_style>{maps}</div>
                </div>
            }
            .into_any()
        })
        .collect_view()
}
