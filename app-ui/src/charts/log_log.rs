//! Log–log charts with marks and bands: the crossover's throughput over the GEMM size.

use super::*;

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
pub(super) fn dashed(
    root: &Root,
    a: (i32, i32),
    b: (i32, i32),
    color: RGBColor,
) -> Result<(), String> {
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
