//! Small drawing helpers for the story's canvases (pixel coordinates, plotters-canvas).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use web_sys::HtmlCanvasElement;

/// A canvas to draw on.
pub type Root = DrawingArea<CanvasBackend, Shift>;

/// A drawing error in words.
pub fn err(e: impl std::fmt::Debug) -> String {
    format!("cannot draw the chart: {e:?}")
}

/// The whole of `canvas`, cleared to white.
pub fn root(canvas: HtmlCanvasElement) -> Result<Root, String> {
    let backend = crate::charts::chart_backend(canvas)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    Ok(root)
}

/// Text `s` at `at` (its top left), `size` px, in `color`.
pub fn text(
    root: &Root,
    s: impl Into<String>,
    at: (i32, i32),
    size: u32,
    color: RGBColor,
) -> Result<(), String> {
    root.draw(&Text::new(
        s.into(),
        at,
        ("sans-serif", size).into_font().color(&color),
    ))
    .map_err(err)
}

/// A filled rectangle from `a` to `b`.
pub fn fill(
    root: &Root,
    a: (i32, i32),
    b: (i32, i32),
    style: impl Into<ShapeStyle>,
) -> Result<(), String> {
    root.draw(&Rectangle::new([a, b], style.into().filled()))
        .map_err(err)
}

/// A rectangle's outline from `a` to `b`.
pub fn outline(
    root: &Root,
    a: (i32, i32),
    b: (i32, i32),
    style: impl Into<ShapeStyle>,
) -> Result<(), String> {
    root.draw(&Rectangle::new([a, b], style.into()))
        .map_err(err)
}

/// A line through `points`.
pub fn line(
    root: &Root,
    points: Vec<(i32, i32)>,
    style: impl Into<ShapeStyle>,
) -> Result<(), String> {
    root.draw(&PathElement::new(points, style.into()))
        .map_err(err)
}

const SUPERSCRIPTS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];

/// `2⁻²⁴`: two to the power `e`, with a superscript exponent.
pub fn pow2(e: i32) -> String {
    let mut s = String::from("2");
    if e < 0 {
        s.push('⁻');
    }
    for d in e.unsigned_abs().to_string().chars() {
        let i = d.to_digit(10).unwrap_or(0) as usize;
        s.push(SUPERSCRIPTS.get(i).copied().unwrap_or('?'));
    }
    s
}

/// The exponent of a loss scale (a power of two; 0 for anything not positive and finite).
pub fn scale_exp(scale: f64) -> i32 {
    if scale > 0.0 && scale.is_finite() {
        showdown_core::histogram::exponent(scale)
    } else {
        0
    }
}

pub use showdown_core::format::thousands;

/// A percentage of `part` in `whole` with one decimal (0 when `whole` is 0).
pub fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}
