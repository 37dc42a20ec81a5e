//! What the canvas charts share: the areas they answer for hover ([`Hit`]), a root sized to
//! its container, text, rectangles, short labels and the legend's layout.

use super::*;

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

pub(super) type Root = DrawingArea<CanvasBackend, Shift>;

/// Sizes `canvas` to its container (320–1100 px wide) and `height`, and clears it.
pub(super) fn sized_root(
    canvas: HtmlCanvasElement,
    width: i32,
    height: i32,
) -> Result<Root, String> {
    canvas.set_width(width as u32);
    canvas.set_height(height.max(40) as u32);
    let backend = chart_backend(canvas)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    Ok(root)
}

/// The width a chart gets: its container's, 320 to 1100 px.
pub(super) fn container_width(canvas: &HtmlCanvasElement) -> i32 {
    canvas
        .parent_element()
        .map_or(820, |p| p.client_width())
        .clamp(320, 1100)
}

pub(super) fn text(
    root: &Root,
    s: impl Into<String>,
    at: (i32, i32),
    size: u32,
) -> Result<(), String> {
    root.draw(&Text::new(s.into(), at, ("sans-serif", size)))
        .map_err(err)
}

pub(super) fn rect(
    root: &Root,
    a: (i32, i32),
    b: (i32, i32),
    color: RGBColor,
) -> Result<(), String> {
    root.draw(&Rectangle::new([a, b], color.filled()))
        .map_err(err)
}

/// `s` cut to `n` characters (an ellipsis marks the cut).
pub(super) fn short(s: &str, n: usize) -> String {
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
pub(super) fn legend_layout(items: &Legend, width: i32, top: i32) -> (Vec<(i32, i32)>, i32) {
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

pub(super) fn draw_legend(
    root: &Root,
    items: &Legend,
    places: &[(i32, i32)],
) -> Result<(), String> {
    for ((name, color), &(x, y)) in items.iter().zip(places) {
        rect(root, (x, y), (x + 12, y + 12), *color)?;
        text(root, name.clone(), (x + 16, y), 12)?;
    }
    Ok(())
}
