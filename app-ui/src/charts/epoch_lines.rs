//! Lines over the epochs in several strokes (ours solid, PyTorch's eager dashed and CUDA
//! graph dotted): the accuracy and loss charts beside PyTorch.

use super::*;

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
