//! Charts drawn on `<canvas>` with plotters-canvas: line charts (loss and accuracy curves,
//! occupancy sweeps), bar charts (the ncu panels), grouped bars (the lab's throughput, speed-ups
//! and latencies), lanes of rectangles (a step's timeline, stacked bars) and a roofline. Labels
//! are drawn as canvas text, never as HTML; the charts that can say what is under the pointer
//! answer their [`Hit`]s.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use showdown_core::types::Precision;
use web_sys::HtmlCanvasElement;

mod bars;
mod canvas;
mod epoch_lines;
mod log_log;
mod roofline;

pub use bars::*;
pub use canvas::*;
pub use epoch_lines::*;
pub use log_log::*;
pub use roofline::*;

/// Series colours, in order: Okabe–Ito's colour-blind-safe palette, the first four the
/// precisions' (fp32 blue, fp16 vermillion, tf32 bluish green, bf16 reddish purple, in
/// [`Precision::ALL`]'s order, as the duel page indexes them), then orange and sky blue.
pub const COLORS: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
];

/// Okabe–Ito's yellow, the palette's last colour besides black (after [`COLORS`]).
pub const YELLOW: RGBColor = RGBColor(240, 228, 66);

/// The colour of a reference measured elsewhere (the committed H100 run): grey.
pub const REFERENCE_GREY: RGBColor = RGBColor(150, 150, 150);

/// A precision's colour (Okabe–Ito): fp32 #0072B2, fp16 #D55E00, tf32 #009E73, bf16 #CC79A7,
/// fp8 #E69F00.
pub fn precision_color(p: Precision) -> RGBColor {
    match p {
        Precision::Fp32 => COLORS[0],
        Precision::Fp16 => COLORS[1],
        Precision::Tf32 => COLORS[2],
        Precision::Bf16 => COLORS[3],
        Precision::Fp8 => COLORS[4],
    }
}

/// `c` as CSS (`#0072b2`), for a swatch beside a table row.
pub fn css_color(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// One named line.
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Its colour.
    pub color: RGBColor,
    /// Points, x ascending.
    pub points: Vec<(f64, f64)>,
}

/// What a line chart shows.
pub struct LineChart<'a> {
    /// Title above the plot.
    pub title: &'a str,
    /// X axis description.
    pub x_desc: &'a str,
    /// Y axis description.
    pub y_desc: &'a str,
    /// The lines.
    pub series: &'a [Series],
    /// A highlighted point (the current configuration).
    pub marker: Option<(f64, f64)>,
    /// Fixed y range; `None` fits the data.
    pub y_range: Option<(f64, f64)>,
}

/// The plotters backend of a chart's `canvas`, the canvas marked `data-chart` so that the
/// dark theme shows the chart dark (style.css), as the rest of the page.
pub fn chart_backend(canvas: HtmlCanvasElement) -> Result<CanvasBackend, String> {
    canvas
        .set_attribute("data-chart", "")
        .map_err(|e| format!("{e:?}"))?;
    CanvasBackend::with_canvas_object(canvas).ok_or_else(|| "the canvas has no 2D context".into())
}

/// A tick label of a chart's axis: counts as whole numbers (`100`, not `100.0`).
fn tick(v: &f64) -> String {
    showdown_core::format::axis_tick(*v)
}

fn err(e: impl std::fmt::Debug) -> String {
    format!("cannot draw the chart: {e:?}")
}

/// Draws `c` on `canvas`.
pub fn line_chart(canvas: HtmlCanvasElement, c: &LineChart) -> Result<(), String> {
    draw_lines(canvas, c, None)
}

/// Draws `c` on `canvas` as per-epoch results: x from 0 to `epochs` + ½ with whole-number
/// ticks, and a dot on every point (so a one-epoch run still shows its result).
pub fn epoch_chart(canvas: HtmlCanvasElement, c: &LineChart, epochs: usize) -> Result<(), String> {
    draw_lines(canvas, c, Some(epochs.max(1)))
}

/// The test accuracy after each epoch, in percent, over `epochs` epochs: the chart the live
/// duel and a reopened run both draw.
pub fn accuracy_chart(
    canvas: HtmlCanvasElement,
    series: &[Series],
    epochs: usize,
) -> Result<(), String> {
    epoch_chart(
        canvas,
        &LineChart {
            title: "Test accuracy after each epoch",
            x_desc: "epoch",
            y_desc: "accuracy (%)",
            series,
            marker: None,
            // Zoomed to the data: curves between 85 and 92 % are told apart.
            y_range: Some(showdown_core::chart_data::accuracy_axis(
                series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
            )),
        },
        epochs,
    )
}

/// [`line_chart`], or [`epoch_chart`] when `epochs` is given.
fn draw_lines(
    canvas: HtmlCanvasElement,
    c: &LineChart,
    epochs: Option<usize>,
) -> Result<(), String> {
    let backend = chart_backend(canvas)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let all = || c.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1) = all().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    if let Some(n) = epochs {
        (x0, x1) = (0.0, n as f64 + 0.5);
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 - x0 < 1e-9 {
        x1 = x0 + 1.0;
    }
    let (y0, y1) = match c.y_range {
        Some(r) => r,
        None => {
            let (lo, hi) = all().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
            if lo > hi {
                (0.0, 1.0)
            } else {
                (
                    lo.min(0.0),
                    if hi - lo.min(0.0) < 1e-9 {
                        hi + 1.0
                    } else {
                        hi * 1.05
                    },
                )
            }
        }
    };
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .caption(c.title, ("sans-serif", 16))
        .x_label_area_size(38)
        .y_label_area_size(52)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    let whole = |x: &f64| format!("{x:.0}");
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(c.x_desc)
        .y_desc(c.y_desc)
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .light_line_style(RGBColor(235, 235, 235));
    if let Some(n) = epochs {
        mesh.x_labels(n.min(10) + 1).x_label_formatter(&whole);
    }
    mesh.draw().map_err(err)?;
    for s in c.series {
        let color = s.color;
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        if epochs.is_some() {
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(err)?;
        }
    }
    if let Some(p) = c.marker {
        chart
            .draw_series(std::iter::once(Circle::new(p, 6, BLACK.filled())))
            .map_err(err)?;
    }
    if c.series.len() > 1 {
        series_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    }
    root.present().map_err(err)
}

/// The lab's legend box of a chart's labelled series, at `position`: white at 85 %, grey border.
pub fn series_legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .draw()
        .map_err(err)
}

/// Draws horizontal bars (label, value) scaled to `max` (or the largest value) with `unit`.
pub fn bar_chart(
    canvas: HtmlCanvasElement,
    title: &str,
    unit: &str,
    max: Option<f64>,
    bars: &[(String, f64)],
) -> Result<(), String> {
    let width = canvas.width() as i32;
    let backend = chart_backend(canvas)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    root.draw(&Text::new(title.to_string(), (8, 6), ("sans-serif", 15)))
        .map_err(err)?;
    let top = bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
    let scale_max = max.unwrap_or(top).max(top).max(1e-12);
    let label_w = 250;
    let value_w = 110;
    let bar_w = (width - label_w - value_w - 16).max(40);
    for (i, (label, value)) in bars.iter().enumerate() {
        let y = 30 + i as i32 * 24;
        let short: String = if label.chars().count() > 36 {
            label.chars().take(35).chain(std::iter::once('…')).collect()
        } else {
            label.clone()
        };
        root.draw(&Text::new(short, (8, y + 4), ("sans-serif", 12)))
            .map_err(err)?;
        let w = ((value.max(0.0) / scale_max) * bar_w as f64).round() as i32;
        let color = COLORS[i % COLORS.len()];
        root.draw(&Rectangle::new(
            [(label_w, y), (label_w + w.max(1), y + 18)],
            color.filled(),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            format!("{} {unit}", fmt(*value)),
            (label_w + w + 6, y + 4),
            ("sans-serif", 12),
        ))
        .map_err(err)?;
    }
    root.present().map_err(err)
}

/// A compact number: 3 significant digits, thousands as plain digits.
pub fn fmt(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        format!("{v}")
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}
