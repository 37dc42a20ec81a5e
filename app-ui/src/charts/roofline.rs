//! The roofline: each kernel's arithmetic intensity against its throughput under the
//! device's compute and memory ceilings.

use super::*;

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
