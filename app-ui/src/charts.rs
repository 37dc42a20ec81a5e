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

/// A rectangle of a drawn chart (left, top, right, bottom, in canvas pixels) and what a hover
/// title says of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// Left, top, right, bottom.
    pub area: (i32, i32, i32, i32),
    /// The title.
    pub title: String,
}

/// The title of the first of `hits` under canvas pixel (`x`, `y`).
pub fn hit_at(hits: &[Hit], x: i32, y: i32) -> Option<&str> {
    hits.iter()
        .find(|h| x >= h.area.0 && x <= h.area.2 && y >= h.area.1 && y <= h.area.3)
        .map(|h| h.title.as_str())
}

/// A legend: names and colours.
pub type Legend = [(String, RGBColor)];

type Root = DrawingArea<CanvasBackend, Shift>;

/// Sizes `canvas` to its container (320–1100 px wide) and `height`, and clears it.
fn sized_root(canvas: HtmlCanvasElement, width: i32, height: i32) -> Result<Root, String> {
    canvas.set_width(width as u32);
    canvas.set_height(height.max(40) as u32);
    let backend = chart_backend(canvas)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    Ok(root)
}

/// The width a chart gets: its container's, 320 to 1100 px.
fn container_width(canvas: &HtmlCanvasElement) -> i32 {
    canvas
        .parent_element()
        .map_or(820, |p| p.client_width())
        .clamp(320, 1100)
}

fn text(root: &Root, s: impl Into<String>, at: (i32, i32), size: u32) -> Result<(), String> {
    root.draw(&Text::new(s.into(), at, ("sans-serif", size)))
        .map_err(err)
}

fn rect(root: &Root, a: (i32, i32), b: (i32, i32), color: RGBColor) -> Result<(), String> {
    root.draw(&Rectangle::new([a, b], color.filled()))
        .map_err(err)
}

/// `s` cut to `n` characters (an ellipsis marks the cut).
fn short(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        s.chars()
            .take(n.saturating_sub(1))
            .chain(std::iter::once('…'))
            .collect()
    } else {
        s.to_string()
    }
}

/// Where a legend's items go in a chart `width` wide from `top` down: each item's place, and
/// the first free y below the legend.
fn legend_layout(items: &Legend, width: i32, top: i32) -> (Vec<(i32, i32)>, i32) {
    let (mut x, mut y) = (8, top);
    let mut places = Vec::with_capacity(items.len());
    for (name, _) in items {
        let w = 22 + 7 * name.chars().count() as i32;
        if x > 8 && x + w > width - 8 {
            x = 8;
            y += 18;
        }
        places.push((x, y));
        x += w + 8;
    }
    (places, if items.is_empty() { top } else { y + 22 })
}

fn draw_legend(root: &Root, items: &Legend, places: &[(i32, i32)]) -> Result<(), String> {
    for ((name, color), &(x, y)) in items.iter().zip(places) {
        rect(root, (x, y), (x + 12, y + 12), *color)?;
        text(root, name.clone(), (x + 16, y), 12)?;
    }
    Ok(())
}

/// One bar of [`Bars`].
pub struct Bar {
    /// Its value.
    pub value: f64,
    /// Its colour.
    pub color: RGBColor,
    /// The text after it (and its hover title).
    pub text: String,
}

/// A labelled group of bars.
pub struct BarGroup {
    /// The group's label, left of its bars.
    pub label: String,
    /// Its bars, top to bottom.
    pub bars: Vec<Bar>,
}

/// A group of the series that have a value: each `(value, name, colour)` a bar whose text is
/// the name and the value as `show` writes it.
pub fn bar_group(
    label: String,
    series: [(Option<f64>, &str, RGBColor); 4],
    show: fn(f64) -> String,
) -> BarGroup {
    let mut bars = Vec::new();
    for (v, name, color) in series {
        if let Some(value) = v {
            bars.push(Bar {
                value,
                color,
                text: format!("{name} {}", show(value)),
            });
        }
    }
    BarGroup { label, bars }
}

/// Horizontal bars in groups, on one scale.
pub struct Bars<'a> {
    /// Title above the chart.
    pub title: &'a str,
    /// What the colours mean.
    pub legend: &'a Legend,
    /// The groups.
    pub groups: &'a [BarGroup],
    /// A vertical line at a value, with its label (a ceiling).
    pub rule: Option<(f64, String)>,
    /// Log scale (values over orders of magnitude: latencies).
    pub log: bool,
}

/// Draws `c` on `canvas`, sized to its container and its bars; the bars' hover titles.
pub fn grouped_bars(canvas: HtmlCanvasElement, c: &Bars) -> Result<Vec<Hit>, String> {
    let width = container_width(&canvas);
    let (places, top) = legend_layout(c.legend, width, 28);
    let body: i32 = c
        .groups
        .iter()
        .map(|g| g.bars.len().max(1) as i32 * 12 + 8)
        .sum();
    let root = sized_root(canvas, width, top + body + 24)?;
    text(&root, c.title, (8, 6), 15)?;
    draw_legend(&root, c.legend, &places)?;
    let values = || {
        c.groups
            .iter()
            .flat_map(|g| g.bars.iter().map(|b| b.value))
            .chain(c.rule.as_ref().map(|r| r.0))
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let hi = values().fold(0.0f64, f64::max).max(1e-12);
    let lo = values().fold(hi, f64::min) / 2.0;
    let (label_w, text_w) = (150, 190);
    let span = f64::from((width - label_w - text_w).max(60));
    let px = |v: f64| {
        let f = if !(v.is_finite() && v > 0.0) {
            0.0
        } else if c.log && hi > lo {
            (v / lo).log10() / (hi / lo).log10()
        } else {
            v / hi
        };
        label_w + (span * f.clamp(0.0, 1.0)).round() as i32
    };
    let mut hits = Vec::new();
    let mut y = top;
    for g in c.groups {
        text(&root, short(&g.label, 22), (8, y), 12)?;
        for b in &g.bars {
            let x = px(b.value).max(label_w + 1);
            rect(&root, (label_w, y), (x, y + 10), b.color)?;
            text(&root, b.text.clone(), (x + 4, y - 1), 10)?;
            hits.push(Hit {
                area: (
                    label_w,
                    y,
                    x + 4 + 6 * b.text.chars().count() as i32,
                    y + 10,
                ),
                title: format!("{}: {}", g.label, b.text),
            });
            y += 12;
        }
        y += 8;
    }
    if let Some((v, label)) = &c.rule {
        let x = px(*v);
        root.draw(&PathElement::new(
            vec![(x, top - 4), (x, y)],
            BLACK.mix(0.5).stroke_width(1),
        ))
        .map_err(err)?;
        text(&root, label.clone(), ((x - 60).max(4), y + 2), 11)?;
    }
    root.present().map_err(err)?;
    Ok(hits)
}

/// One rectangle of [`Lanes`].
pub struct Segment {
    /// The lane (row), from 0.
    pub lane: usize,
    /// Where it starts on the axis.
    pub x0: f64,
    /// Where it ends.
    pub x1: f64,
    /// Its colour.
    pub color: RGBColor,
    /// Drawn inside when it fits.
    pub label: String,
    /// Its hover title.
    pub title: String,
}

/// Lanes of rectangles on one axis that starts at 0: a timeline, stacked bars.
pub struct Lanes<'a> {
    /// Title above the chart.
    pub title: &'a str,
    /// The axis's unit (`ms`).
    pub unit: &'a str,
    /// The lanes' names, top to bottom.
    pub lanes: &'a [String],
    /// What the colours mean.
    pub legend: &'a Legend,
    /// The rectangles.
    pub segments: &'a [Segment],
    /// Vertical marks: lane, where, label.
    pub marks: &'a [(usize, f64, String)],
}

/// A round step for about six ticks up to `hi`.
fn tick_step(hi: f64) -> f64 {
    let raw = (hi / 6.0).max(1e-12);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// Draws `c` on `canvas`, sized to its container and its lanes; the rectangles' and marks'
/// hover titles.
pub fn lanes(canvas: HtmlCanvasElement, c: &Lanes) -> Result<Vec<Hit>, String> {
    let width = container_width(&canvas);
    let (places, top) = legend_layout(c.legend, width, 28);
    let lane_h = 34;
    let bottom = top + c.lanes.len() as i32 * lane_h;
    let root = sized_root(canvas, width, bottom + 30)?;
    text(&root, c.title, (8, 6), 15)?;
    draw_legend(&root, c.legend, &places)?;
    let hi = c
        .segments
        .iter()
        .map(|s| s.x1)
        .chain(c.marks.iter().map(|m| m.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-12);
    let label_w = 70;
    let span = f64::from((width - label_w - 24).max(60));
    let px = |v: f64| label_w + (span * (v / hi).clamp(0.0, 1.0)).round() as i32;
    for (i, name) in c.lanes.iter().enumerate() {
        text(&root, short(name, 9), (8, top + i as i32 * lane_h + 10), 13)?;
    }
    let mut hits = Vec::new();
    for s in c.segments {
        let y = top + s.lane as i32 * lane_h;
        let (x0, x1) = (px(s.x0), px(s.x1).max(px(s.x0) + 1));
        rect(&root, (x0, y + 4), (x1, y + lane_h - 6), s.color)?;
        if x1 - x0 >= 4 {
            root.draw(&Rectangle::new([(x0, y + 4), (x1, y + lane_h - 6)], WHITE))
                .map_err(err)?;
        }
        let chars = ((x1 - x0 - 6) / 6).max(0) as usize;
        if chars >= 4 && !s.label.is_empty() {
            text(&root, short(&s.label, chars), (x0 + 3, y + 10), 10)?;
        }
        hits.push(Hit {
            area: (x0, y + 4, x1, y + lane_h - 6),
            title: s.title.clone(),
        });
    }
    for (lane, v, label) in c.marks {
        let (x, y) = (px(*v), top + *lane as i32 * lane_h);
        root.draw(&PathElement::new(
            vec![(x, y), (x, y + lane_h - 2)],
            BLACK.stroke_width(2),
        ))
        .map_err(err)?;
        hits.push(Hit {
            area: (x - 3, y, x + 3, y + lane_h),
            title: format!("{label}: {} {}", fmt(*v), c.unit),
        });
    }
    let step = tick_step(hi);
    let mut v = 0.0;
    while v <= hi * 1.0001 {
        let x = px(v);
        root.draw(&PathElement::new(
            vec![(x, bottom), (x, bottom + 4)],
            BLACK.stroke_width(1),
        ))
        .map_err(err)?;
        text(
            &root,
            format!("{} {}", fmt(v), c.unit),
            (x - 10, bottom + 8),
            10,
        )?;
        v += step;
    }
    root.draw(&PathElement::new(
        vec![(label_w, bottom), (px(hi), bottom)],
        BLACK.stroke_width(1),
    ))
    .map_err(err)?;
    root.present().map_err(err)?;
    Ok(hits)
}

/// A point of a [`Roofline`].
pub struct Point {
    /// FLOP per byte.
    pub x: f64,
    /// TFLOP/s.
    pub y: f64,
    /// Its colour.
    pub color: RGBColor,
    /// Drawn beside it.
    pub label: String,
    /// Its hover title.
    pub title: String,
}

/// Points against a memory roof and compute roofs, log–log.
pub struct Roofline<'a> {
    /// Title above the chart.
    pub title: &'a str,
    /// The memory roof, GB/s.
    pub bandwidth_gbps: f64,
    /// Compute roofs: name and TFLOP/s.
    pub peaks: &'a [(String, f64)],
    /// The points.
    pub points: &'a [Point],
    /// What the colours mean.
    pub legend: &'a Legend,
}

/// Draws `c` on `canvas`, sized to its container, log–log over whole decades; the points'
/// hover titles.
pub fn roofline(canvas: HtmlCanvasElement, c: &Roofline) -> Result<Vec<Hit>, String> {
    let width = container_width(&canvas);
    let (places, top) = legend_layout(c.legend, width, 28);
    let root = sized_root(canvas, width, top + 370)?;
    text(&root, c.title, (8, 6), 15)?;
    draw_legend(&root, c.legend, &places)?;
    let bw = c.bandwidth_gbps.max(1e-9) / 1e3; // TFLOP/s per FLOP/byte
    let ok = |v: &f64| v.is_finite() && *v > 0.0;
    let peaks: Vec<&(String, f64)> = c.peaks.iter().filter(|p| ok(&p.1)).collect();
    let span = |vals: &mut dyn Iterator<Item = f64>| {
        vals.filter(ok)
            .fold((f64::MAX, 0.0f64), |(a, b), v| (a.min(v), b.max(v)))
    };
    let (x0, x1) = span(
        &mut c
            .points
            .iter()
            .map(|p| p.x)
            .chain(peaks.iter().map(|p| p.1 / bw)),
    );
    let (y0, y1) = span(
        &mut c
            .points
            .iter()
            .map(|p| p.y)
            .chain(peaks.iter().map(|p| p.1)),
    );
    if x0 > x1 || y0 > y1 {
        return Err("nothing to place on the roofline".into());
    }
    // Whole decades around the data, the memory roof's start included.
    let (lx0, lx1) = ((x0 / 2.0).log10().floor(), (x1 * 2.0).log10().ceil());
    let (ly0, ly1) = (
        (y0 / 2.0).min(10f64.powf(lx0) * bw).log10().floor(),
        (y1 * 2.0).log10().ceil(),
    );
    let (left, right, ptop, bottom) = (64, width - 16, top + 8, top + 330);
    let fx = |x: f64| (x.log10() - lx0) / (lx1 - lx0);
    let fy = |y: f64| (y.log10() - ly0) / (ly1 - ly0);
    let px = |x: f64| left + (f64::from(right - left) * fx(x).clamp(0.0, 1.0)).round() as i32;
    let py = |y: f64| bottom - (f64::from(bottom - ptop) * fy(y).clamp(0.0, 1.0)).round() as i32;
    let grid = RGBColor(225, 225, 225);
    let mut d = lx0;
    while d <= lx1 {
        let x = px(10f64.powf(d));
        root.draw(&PathElement::new(vec![(x, ptop), (x, bottom)], grid))
            .map_err(err)?;
        text(&root, fmt(10f64.powf(d)), (x - 8, bottom + 4), 10)?;
        d += 1.0;
    }
    let mut d = ly0;
    while d <= ly1 {
        let y = py(10f64.powf(d));
        root.draw(&PathElement::new(vec![(left, y), (right, y)], grid))
            .map_err(err)?;
        text(&root, fmt(10f64.powf(d)), (8, y - 6), 10)?;
        d += 1.0;
    }
    text(
        &root,
        "FLOP per byte of compulsory traffic (log)",
        (left + 8, bottom + 18),
        12,
    )?;
    text(&root, "TFLOP/s (log)", (left + 4, ptop), 12)?;
    let roof = BLACK.mix(0.6).stroke_width(2);
    let xs = (10f64.powf(lx0), 10f64.powf(lx1));
    let top_peak = peaks.iter().map(|p| p.1).fold(0.0f64, f64::max);
    let knee = if top_peak > 0.0 { top_peak / bw } else { xs.1 };
    // The memory roof, up to where it leaves the plot or meets the highest compute roof.
    let end = knee.min(10f64.powf(ly1) / bw);
    root.draw(&PathElement::new(
        vec![(px(xs.0), py(xs.0 * bw)), (px(end), py(end * bw))],
        roof,
    ))
    .map_err(err)?;
    text(
        &root,
        format!("copy {} GB/s", fmt(c.bandwidth_gbps)),
        (px(xs.0) + 6, py(xs.0 * bw) - 18),
        11,
    )?;
    for (name, peak) in peaks {
        let y = py(*peak);
        root.draw(&PathElement::new(
            vec![(px(peak / bw), y), (right, y)],
            roof,
        ))
        .map_err(err)?;
        text(
            &root,
            format!("{name} {} TFLOP/s", fmt(*peak)),
            (px(peak / bw) + 6, y - 14),
            11,
        )?;
    }
    let mut hits = Vec::new();
    for p in c.points.iter().filter(|p| ok(&p.x) && ok(&p.y)) {
        let (x, y) = (px(p.x), py(p.y));
        root.draw(&Circle::new((x, y), 5, p.color.filled()))
            .map_err(err)?;
        text(&root, p.label.clone(), (x + 7, y - 12), 11)?;
        hits.push(Hit {
            area: (x - 6, y - 6, x + 6, y + 6),
            title: p.title.clone(),
        });
    }
    root.present().map_err(err)?;
    Ok(hits)
}

/// How a line of [`epoch_lines`] is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stroke {
    /// A solid line with filled dots (ours).
    Solid,
    /// Long dashes with hollow dots (a peer's eager run: PyTorch beside ours).
    Dashed,
    /// Short dots with hollow dots (a peer's CUDA-graph run).
    Dotted,
}

/// A [`Series`] and how it is drawn.
pub struct StyledSeries {
    /// The line.
    pub series: Series,
    /// Its stroke.
    pub stroke: Stroke,
}

/// What [`epoch_lines`] shows: per-epoch lines, solid and dashed on one chart.
pub struct EpochLines<'a> {
    /// Title above the plot.
    pub title: &'a str,
    /// Y axis description.
    pub y_desc: &'a str,
    /// The lines, in legend order.
    pub lines: &'a [StyledSeries],
    /// Epochs on the x axis (0 to `epochs` + ½).
    pub epochs: usize,
    /// Fixed y range; `None` fits the data (from 0).
    pub y_range: Option<(f64, f64)>,
    /// Where the legend goes (away from where the lines are).
    pub legend: SeriesLabelPosition,
}

/// The names of `lines`, `;`-separated: what a drawn chart's `data-series` attribute says (the
/// UI tests read it, a canvas holding no text).
pub fn series_names(lines: &[StyledSeries]) -> String {
    lines
        .iter()
        .map(|l| l.series.name.as_str())
        .collect::<Vec<_>>()
        .join(";")
}

/// Draws per-epoch results on `canvas`, as [`epoch_chart`] does, with some lines dashed or
/// dotted (a peer's beside ours): x from 0 to `epochs` + ½ with whole-number ticks, a dot on
/// every point (filled for solid lines, hollow for the others), a legend where `c.legend` says
/// when there is more than one line. Sets the canvas's `data-series` ([`series_names`]).
pub fn epoch_lines(canvas: HtmlCanvasElement, c: &EpochLines) -> Result<(), String> {
    let _ = canvas.set_attribute("data-series", &series_names(c.lines));
    let backend = chart_backend(canvas)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (x0, x1) = (0.0, c.epochs.max(1) as f64 + 0.5);
    let (y0, y1) = match c.y_range {
        Some(r) => r,
        None => {
            let hi = c
                .lines
                .iter()
                .flat_map(|l| l.series.points.iter().map(|p| p.1))
                .filter(|v| v.is_finite())
                .fold(f64::MIN, f64::max);
            if hi <= 0.0 {
                (0.0, 1.0)
            } else {
                (0.0, hi * 1.1)
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
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc(c.y_desc)
        .light_line_style(RGBColor(235, 235, 235))
        .x_labels(c.epochs.clamp(1, 10) + 1)
        .x_label_formatter(&whole)
        .y_label_formatter(&tick)
        .draw()
        .map_err(err)?;
    for l in c.lines {
        let s = &l.series;
        let color = s.color;
        let points = s.points.iter().copied().filter(|p| p.1.is_finite());
        let drawn = match l.stroke {
            Stroke::Solid => chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(err)?,
            Stroke::Dashed => chart
                .draw_series(DashedLineSeries::new(points, 8, 5, color.stroke_width(2)))
                .map_err(err)?,
            Stroke::Dotted => chart
                .draw_series(DashedLineSeries::new(points, 2, 4, color.stroke_width(2)))
                .map_err(err)?,
        };
        let stroke = l.stroke;
        drawn.label(s.name.clone()).legend(move |(x, y)| {
            let style = color.stroke_width(2);
            let path: Vec<(i32, i32)> = match stroke {
                Stroke::Solid => vec![(0, 0), (18, 0)],
                Stroke::Dashed => vec![(0, 0), (7, 0)],
                Stroke::Dotted => vec![(0, 0), (2, 0)],
            };
            let second: Vec<(i32, i32)> = match stroke {
                Stroke::Solid => vec![(0, 0), (18, 0)],
                Stroke::Dashed => vec![(11, 0), (18, 0)],
                Stroke::Dotted => vec![(8, 0), (10, 0)],
            };
            EmptyElement::at((x, y))
                + PathElement::new(path, style)
                + PathElement::new(second, style)
        });
        let dots = s.points.iter().filter(|p| p.1.is_finite()).map(move |&p| {
            if stroke == Stroke::Solid {
                Circle::new(p, 4, color.filled())
            } else {
                Circle::new(p, 4, color.stroke_width(2))
            }
        });
        chart.draw_series(dots).map_err(err)?;
    }
    if c.lines.len() > 1 {
        series_legend(&mut chart, c.legend.clone())?;
    }
    root.present().map_err(err)
}

/// One line of a [`LogLog`] chart: its points (x, y, hover title).
pub struct LogLine {
    /// Legend text.
    pub name: String,
    /// Its colour.
    pub color: RGBColor,
    /// Points, x ascending: x, y and the hover title.
    pub points: Vec<(f64, f64, String)>,
}

/// A labelled point of a [`LogLog`] chart, drawn as a hollow diamond (the lab CNN's GEMMs).
pub struct Mark {
    /// X.
    pub x: f64,
    /// Y.
    pub y: f64,
    /// Its colour.
    pub color: RGBColor,
    /// Drawn beside it.
    pub label: String,
    /// Its hover title.
    pub title: String,
}

/// A shaded stretch of the x axis (a regime) of a [`LogLog`] chart.
pub struct Band {
    /// Where it starts.
    pub from: f64,
    /// Where it ends.
    pub to: f64,
    /// Its fill.
    pub color: RGBColor,
    /// Its hover title.
    pub title: String,
}

/// Lines on log–log axes, with horizontal rules (ceilings), vertical rules (crossover sizes),
/// labelled marks and shaded stretches of x.
pub struct LogLog<'a> {
    /// Title above the chart.
    pub title: &'a str,
    /// X axis description.
    pub x_desc: &'a str,
    /// Y axis description.
    pub y_desc: &'a str,
    /// The lines.
    pub lines: &'a [LogLine],
    /// The labelled marks.
    pub marks: &'a [Mark],
    /// Dashed horizontal rules: label, y, colour.
    pub hrules: &'a [(String, f64, RGBColor)],
    /// Dashed vertical rules: label, x, colour.
    pub vrules: &'a [(String, f64, RGBColor)],
    /// Shaded stretches of x, drawn first.
    pub bands: &'a [Band],
    /// What the colours mean.
    pub legend: &'a Legend,
}

/// A dashed segment from `a` to `b`.
fn dashed(root: &Root, a: (i32, i32), b: (i32, i32), color: RGBColor) -> Result<(), String> {
    let (dx, dy) = (f64::from(b.0 - a.0), f64::from(b.1 - a.1));
    let len = (dx * dx + dy * dy).sqrt();
    let steps = (len / 6.0).floor() as i32;
    for s in (0..steps).step_by(2) {
        let t0 = f64::from(s) * 6.0 / len.max(1.0);
        let t1 = (f64::from(s + 1) * 6.0 / len.max(1.0)).min(1.0);
        let p = |t: f64| (a.0 + (dx * t).round() as i32, a.1 + (dy * t).round() as i32);
        root.draw(&PathElement::new(vec![p(t0), p(t1)], color.stroke_width(2)))
            .map_err(err)?;
    }
    Ok(())
}

/// Draws `c` on `canvas`, sized to its container, log–log over whole decades around the data;
/// the hover titles of the points, marks and bands.
pub fn log_log(canvas: HtmlCanvasElement, c: &LogLog) -> Result<Vec<Hit>, String> {
    let width = container_width(&canvas);
    let (places, top) = legend_layout(c.legend, width, 28);
    let root = sized_root(canvas, width, top + 380)?;
    text(&root, c.title, (8, 6), 15)?;
    draw_legend(&root, c.legend, &places)?;
    let ok = |v: &f64| v.is_finite() && *v > 0.0;
    let span = |vals: &mut dyn Iterator<Item = f64>| {
        vals.filter(ok)
            .fold((f64::MAX, 0.0f64), |(a, b), v| (a.min(v), b.max(v)))
    };
    let (x0, x1) = span(
        &mut c
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .chain(c.marks.iter().map(|m| m.x)),
    );
    let (y0, y1) = span(
        &mut c
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .chain(c.marks.iter().map(|m| m.y))
            .chain(c.hrules.iter().map(|r| r.1)),
    );
    if x0 > x1 || y0 > y1 {
        return Err("nothing to place on the chart".into());
    }
    let (lx0, lx1) = (
        x0.log10().floor(),
        (x1 * 1.01).log10().ceil().max(x0.log10().floor() + 1.0),
    );
    let (ly0, ly1) = ((y0 / 1.5).log10().floor(), (y1 * 1.5).log10().ceil());
    let (left, right, ptop, bottom) = (64, width - 16, top + 8, top + 340);
    let fx = |x: f64| (x.log10() - lx0) / (lx1 - lx0);
    let fy = |y: f64| (y.log10() - ly0) / (ly1 - ly0);
    let px = |x: f64| left + (f64::from(right - left) * fx(x).clamp(0.0, 1.0)).round() as i32;
    let py = |y: f64| bottom - (f64::from(bottom - ptop) * fy(y).clamp(0.0, 1.0)).round() as i32;
    let mut hits = Vec::new();
    let mut band_hits = Vec::new();
    for b in c.bands.iter().filter(|b| ok(&b.from) && ok(&b.to)) {
        let (a, z) = (px(b.from), px(b.to));
        rect(&root, (a, ptop), (z, bottom), b.color)?;
        band_hits.push(Hit {
            area: (a, ptop, z, bottom),
            title: b.title.clone(),
        });
    }
    let grid = RGBColor(215, 215, 215);
    let mut d = lx0;
    while d <= lx1 {
        let x = px(10f64.powf(d));
        root.draw(&PathElement::new(vec![(x, ptop), (x, bottom)], grid))
            .map_err(err)?;
        text(&root, fmt(10f64.powf(d)), (x - 8, bottom + 4), 10)?;
        d += 1.0;
    }
    let mut d = ly0;
    while d <= ly1 {
        let y = py(10f64.powf(d));
        root.draw(&PathElement::new(vec![(left, y), (right, y)], grid))
            .map_err(err)?;
        text(&root, fmt(10f64.powf(d)), (8, y - 6), 10)?;
        d += 1.0;
    }
    text(&root, c.x_desc, (left + 8, bottom + 18), 12)?;
    text(&root, c.y_desc, (left + 4, ptop), 12)?;
    for (label, y, color) in c.hrules.iter().filter(|r| ok(&r.1)) {
        let yy = py(*y);
        dashed(&root, (left, yy), (right, yy), *color)?;
        text(
            &root,
            label.clone(),
            (right - 8 - 6 * label.chars().count() as i32, yy - 14),
            11,
        )?;
    }
    for (i, (label, x, color)) in c.vrules.iter().filter(|r| ok(&r.1)).enumerate() {
        let xx = px(*x);
        dashed(&root, (xx, ptop), (xx, bottom), *color)?;
        text(&root, label.clone(), (xx + 4, ptop + 4 + 14 * i as i32), 11)?;
    }
    for l in c.lines {
        let pts: Vec<(i32, i32)> = l
            .points
            .iter()
            .filter(|p| ok(&p.0) && ok(&p.1))
            .map(|p| (px(p.0), py(p.1)))
            .collect();
        if pts.len() > 1 {
            root.draw(&PathElement::new(pts.clone(), l.color.stroke_width(2)))
                .map_err(err)?;
        }
        for (p, (x, y)) in l.points.iter().filter(|p| ok(&p.0) && ok(&p.1)).zip(pts) {
            root.draw(&Circle::new((x, y), 4, l.color.filled()))
                .map_err(err)?;
            hits.push(Hit {
                area: (x - 6, y - 6, x + 6, y + 6),
                title: p.2.clone(),
            });
        }
    }
    for m in c.marks.iter().filter(|m| ok(&m.x) && ok(&m.y)) {
        let (x, y) = (px(m.x), py(m.y));
        root.draw(&PathElement::new(
            vec![(x, y - 6), (x + 6, y), (x, y + 6), (x - 6, y), (x, y - 6)],
            m.color.stroke_width(2),
        ))
        .map_err(err)?;
        text(&root, m.label.clone(), (x + 8, y - 6), 10)?;
        hits.push(Hit {
            area: (x - 7, y - 7, x + 7, y + 7),
            title: m.title.clone(),
        });
    }
    root.present().map_err(err)?;
    // Points first: a pointer over a point reads the point, elsewhere the regime.
    hits.extend(band_hits);
    Ok(hits)
}
