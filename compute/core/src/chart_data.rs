//! What the charts plot, computed here where it is tested: the accuracy axis zoomed to its
//! data (twelve curves between 85 and 92 % are told apart, not pressed into a 0–100 % axis),
//! and a loss curve's difference from FP32's at the same steps.

/// The accuracy axis (in %) for `values` (in %): from a little under the lowest to a little
/// over the highest, on whole steps of 1, 2, 5, 10 or 20 percentage points, never past 0 or
/// 100; the whole 0–100 % without a finite value.
pub fn accuracy_axis(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if lo > hi {
        return (0.0, 100.0);
    }
    let span = (hi - lo).max(1.0);
    let step = [1.0, 2.0, 5.0, 10.0, 20.0]
        .into_iter()
        .find(|s| span / s <= 8.0)
        .unwrap_or(20.0);
    let pad = span * 0.1;
    let y0 = ((lo - pad) / step).floor() * step;
    let y1 = ((hi + pad) / step).ceil() * step;
    (y0.max(0.0), y1.min(100.0))
}

/// `curve` minus `base` at the steps both have (points `(step, value)`, `step` as drawn), in
/// `curve`'s order; steps `base` lacks and values that are not finite are left out.
pub fn difference_from(base: &[(f64, f64)], curve: &[(f64, f64)]) -> Vec<(f64, f64)> {
    curve
        .iter()
        .filter_map(|&(x, y)| {
            let b = base.iter().find(|p| p.0 == x)?.1;
            let d = y - b;
            d.is_finite().then_some((x, d))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 37: the 0–100 % axis made twelve curves between 85 and 92 % indistinguishable.
    #[test]
    fn the_accuracy_axis_zooms_to_its_data() {
        let (y0, y1) = accuracy_axis([88.1, 91.7, 85.3, 90.0]);
        assert_eq!((y0, y1), (84.0, 93.0));
        assert!(y1 - y0 < 10.0, "{y0}..{y1}");
        // An early epoch far below: a wider axis on coarser steps.
        assert_eq!(accuracy_axis([12.0, 91.0]), (0.0, 100.0));
        assert_eq!(accuracy_axis([60.0, 91.0]), (55.0, 95.0));
        // Near the top it stops at 100 %, with one value it still spans a point.
        assert_eq!(accuracy_axis([99.6]), (99.0, 100.0));
        assert_eq!(accuracy_axis([f64::NAN]), (0.0, 100.0));
        assert_eq!(accuracy_axis(std::iter::empty()), (0.0, 100.0));
    }

    #[test]
    fn a_difference_is_taken_at_the_steps_both_curves_have() {
        let fp32 = [(1.0, 2.0), (2.0, 1.5), (3.0, 1.0)];
        let fp16 = [(1.0, 2.5), (2.0, 1.25), (2.5, 9.0), (3.0, f64::NAN)];
        assert_eq!(
            difference_from(&fp32, &fp16),
            vec![(1.0, 0.5), (2.0, -0.25)]
        );
        assert!(difference_from(&[], &fp16).is_empty());
    }
}
