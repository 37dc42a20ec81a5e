//! Bar charts: the ncu panels' bars, the lab's grouped bars (throughput, speed-ups,
//! latencies) and lanes of rectangles (a step's timeline, stacked bars).

use super::*;

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
pub(super) fn tick_step(hi: f64) -> f64 {
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
