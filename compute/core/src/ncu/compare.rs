//! Metric-by-metric comparison of two kernels (a baseline and a current run).

use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

use super::units::{printed_resolution, readable_signed_in_scale_of, scale_pow10, si_scale};
use super::{Kernel, KernelPanels, Metric, MetricValue, PanelRow};

/// How one metric changed between two kernels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDelta {
    /// The metric's section.
    pub section: String,
    /// The metric's name.
    pub name: String,
    /// The unit `base` and `current` are in: the SI unit both convert to (`second`, `hz`,
    /// `byte`…; see [`super::units::to_si`]), or the printed unit for text.
    pub unit: String,
    /// The baseline's value.
    pub base: MetricValue,
    /// The current value.
    pub current: MetricValue,
    /// `current - base`, when both are numbers in the same unit.
    pub delta: Option<f64>,
    /// `100 × delta / |base|`, when `delta` exists and `base` is not zero.
    pub delta_pct: Option<f64>,
}

/// A metric's identity: section, name and body-item label.
type Key<'a> = (&'a str, &'a str, Option<&'a str>);

fn key(m: &Metric) -> Key<'_> {
    (m.section(), m.name(), m.label())
}

/// Compares the metrics `base` and `cur` have in common, matched by (section, name) (and the
/// body-item label, when the export has one), in `base`'s order. Metrics present on one side
/// only are left out; a metric repeated within a kernel is matched by its first occurrence.
///
/// Numbers are compared in SI units, whatever unit each export printed (`us` vs `ns`,
/// `Kbyte` vs `byte`); anything else (text, incompatible units) comes with `delta: None`.
pub fn compare(base: &Kernel, cur: &Kernel) -> Vec<MetricDelta> {
    let mut current: HashMap<Key<'_>, &Metric> = HashMap::with_capacity(cur.metrics.len());
    for m in &cur.metrics {
        current.entry(key(m)).or_insert(m);
    }
    let mut seen: HashSet<Key<'_>> = HashSet::with_capacity(base.metrics.len());
    let mut out = Vec::new();
    for b in &base.metrics {
        let k = key(b);
        if !seen.insert(k) {
            continue;
        }
        let Some(c) = current.get(&k) else {
            continue;
        };
        out.push(delta(b, c));
    }
    out
}

fn delta(b: &Metric, c: &Metric) -> MetricDelta {
    let numbers = match (&b.value, &c.value) {
        (MetricValue::Number(_), MetricValue::Number(_)) => {
            match (b.si_value, c.si_value, b.si_unit(), c.si_unit()) {
                (Some(x), Some(y), Some(ub), Some(uc)) if ub == uc => Some((x, y, ub.to_string())),
                _ => None,
            }
        }
        _ => None,
    };
    match numbers {
        Some((x, y, unit)) => {
            let d = y - x;
            MetricDelta {
                section: b.section().to_string(),
                name: b.name().to_string(),
                unit,
                base: MetricValue::Number(x),
                current: MetricValue::Number(y),
                delta: Some(d),
                delta_pct: (x != 0.0).then(|| 100.0 * d / x.abs()),
            }
        }
        None => MetricDelta {
            section: b.section().to_string(),
            name: b.name().to_string(),
            unit: b.unit().to_string(),
            base: b.value.clone(),
            current: c.value.clone(),
            delta: None,
            delta_pct: None,
        },
    }
}

/// One metric of one panel, side by side in two kernels' panels (A and B).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelDelta {
    /// The panel's identifier (`occupancy`; see [`super::PANEL_IDS`]).
    pub panel: String,
    /// The panel's title, as A's panels have it.
    pub panel_title: String,
    /// What the row shows (`Achieved Occupancy`).
    pub label: String,
    /// The metric's section, as imported.
    pub section: String,
    /// The metric's name, as imported.
    pub name: String,
    /// The unit `a` and `b` are in: the SI unit both convert to (`second`, `hz`, `byte`…),
    /// or A's printed unit when they are not two numbers of one quantity.
    pub unit: String,
    /// A's value.
    pub a: MetricValue,
    /// B's value.
    pub b: MetricValue,
    /// `b - a`, when both are numbers of the same quantity (computed on the SI values).
    pub difference: Option<f64>,
    /// `b / a`, when both are numbers of the same quantity and `a` is not zero.
    pub ratio: Option<f64>,
    /// A's value as the page shows it (readable scaled unit: `52.9 µs`).
    #[serde(default)]
    pub a_shown: String,
    /// B's value as the page shows it.
    #[serde(default)]
    pub b_shown: String,
    /// The difference as the page shows it (`+1.2 µs`), or why there is none.
    #[serde(default)]
    pub difference_shown: String,
    /// The ratio as the page shows it (`1.25×`, `≈ 1×`), or `—`.
    #[serde(default)]
    pub ratio_shown: String,
    /// The difference is smaller than the digits the two exports printed can tell apart
    /// (`32.77 Kbyte` against `32,768 byte`): no difference is claimed.
    #[serde(default)]
    pub within_printed_digits: bool,
}

/// Compares the panel rows two kernels' panels have in common: for each panel of `a` (in
/// its order), each row the same panel of `b` also shows, with B's value against A's. Rows
/// are matched by the metric they show (the row's label, which names one metric whatever
/// page it was read from), not by the section and name the export printed: a details export
/// names a metric `Memory Workload Analysis / Mem Busy`, a raw export
/// `gpu__compute_memory_access_throughput…`, and the two compare. Rows on one side only are
/// left out; a row repeated within a panel is matched by its first occurrence.
///
/// Numbers printed in the same unit are compared as printed; numbers printed in different
/// units (`us` vs `ms`) are compared in SI units; anything else (text, incompatible units)
/// comes with `difference` and `ratio` of `None`.
pub fn compare_panels(a: &KernelPanels, b: &KernelPanels) -> Vec<PanelDelta> {
    let mut out = Vec::new();
    for pa in &a.panels {
        let Some(pb) = b.panels.iter().find(|p| p.id == pa.id) else {
            continue;
        };
        let mut seen: HashSet<&str> = HashSet::with_capacity(pa.metrics.len());
        for ra in &pa.metrics {
            if !seen.insert(ra.label.as_str()) {
                continue;
            }
            let Some(rb) = pb.metrics.iter().find(|r| r.label == ra.label) else {
                continue;
            };
            out.push(row_delta(&pa.id, &pa.title, ra, rb));
        }
    }
    out
}

fn row_delta(panel: &str, title: &str, ra: &PanelRow, rb: &PanelRow) -> PanelDelta {
    let numbers = match (&ra.value, &rb.value) {
        (MetricValue::Number(_), MetricValue::Number(_)) => {
            match (ra.si_value, rb.si_value, &ra.si_unit, &rb.si_unit) {
                (Some(x), Some(y), Some(ua), Some(ub)) if ua == ub => Some((x, y, ua.clone())),
                _ => None,
            }
        }
        _ => None,
    };
    let base = PanelDelta {
        panel: panel.to_string(),
        panel_title: title.to_string(),
        label: ra.label.clone(),
        section: ra.section.clone(),
        name: ra.name.clone(),
        unit: ra.unit.clone(),
        a: ra.value.clone(),
        b: rb.value.clone(),
        difference: None,
        ratio: None,
        a_shown: shown_of(ra),
        b_shown: shown_of(rb),
        difference_shown: "\u{2014}".into(),
        ratio_shown: "\u{2014}".into(),
        within_printed_digits: false,
    };
    match numbers {
        Some((x, y, unit)) => {
            let d = y - x;
            let tolerance = si_resolution(ra) + si_resolution(rb);
            let same = d != 0.0 && d.abs() <= tolerance;
            let ratio = (x != 0.0).then(|| y / x);
            PanelDelta {
                difference_shown: if same {
                    "\u{2248} 0 (within the printed digits)".into()
                } else {
                    readable_signed_in_scale_of(d, &unit, x.abs().max(y.abs()))
                },
                ratio_shown: match ratio {
                    Some(_) if same => "\u{2248} 1\u{d7}".into(),
                    Some(r) => format!("{r:.3}\u{d7}"),
                    None => "\u{2014}".into(),
                },
                unit,
                a: MetricValue::Number(x),
                b: MetricValue::Number(y),
                difference: Some(d),
                ratio,
                within_printed_digits: same,
                ..base
            }
        }
        None => base,
    }
}

/// What the page shows for a row (rows made before [`PanelRow::shown`] existed have none).
fn shown_of(r: &PanelRow) -> String {
    if r.shown.is_empty() {
        super::panels::shown_text(&r.value, &r.unit, r.si_value, r.si_unit.as_deref())
    } else {
        r.shown.clone()
    }
}

/// How far a row's true value may lie from its printed one, in its SI unit: half a unit in
/// the last printed digit.
fn si_resolution(r: &PanelRow) -> f64 {
    let MetricValue::Number(v) = r.value else {
        return 0.0;
    };
    let exp = si_scale(&r.unit).map_or(0, |s| s.exp10);
    scale_pow10(printed_resolution(v), exp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ncu::{import_str, Panel};

    fn row(section: &str, name: &str, unit: &str, value: MetricValue) -> PanelRow {
        let si = match &value {
            MetricValue::Number(v) => Some(crate::ncu::units::to_si(*v, unit)),
            MetricValue::Text(_) => None,
        };
        PanelRow::new(
            name,
            section,
            name,
            unit,
            value,
            si.as_ref().map(|s| s.0),
            si.map(|s| s.1),
        )
    }

    fn panels(id: u64, list: Vec<(&str, Vec<PanelRow>)>) -> KernelPanels {
        KernelPanels {
            id,
            name: format!("k{id}"),
            short_name: format!("k{id}"),
            panels: list
                .into_iter()
                .map(|(pid, metrics)| Panel {
                    id: pid.to_string(),
                    title: pid.to_uppercase(),
                    metrics,
                    chart: None,
                    narrative: "n".into(),
                    rules: Vec::new(),
                    screenshots: Vec::new(),
                })
                .collect(),
            cc: "9.0".into(),
        }
    }

    #[test]
    fn rows_in_both_come_with_ratio_and_difference() {
        let n = MetricValue::Number;
        let a = panels(
            1,
            vec![
                (
                    "occupancy",
                    vec![
                        row("Occupancy", "Achieved Occupancy", "%", n(40.0)),
                        row("Occupancy", "Only In A", "%", n(1.0)),
                        row("Occupancy", "Achieved Occupancy", "%", n(99.0)),
                    ],
                ),
                ("launch", vec![row("Launch", "Zero", "", n(0.0))]),
                (
                    "summary",
                    vec![row("S", "Text", "", MetricValue::Text("x".into()))],
                ),
            ],
        );
        let b = panels(
            2,
            vec![
                ("launch", vec![row("Launch", "Zero", "", n(3.0))]),
                (
                    "occupancy",
                    vec![row("Occupancy", "Achieved Occupancy", "%", n(60.0))],
                ),
                (
                    "summary",
                    vec![row("S", "Text", "", MetricValue::Text("y".into()))],
                ),
            ],
        );
        let d = compare_panels(&a, &b);
        assert_eq!(d.len(), 3, "{d:#?}");
        assert_eq!(
            (d[0].panel.as_str(), d[0].name.as_str()),
            ("occupancy", "Achieved Occupancy")
        );
        assert_eq!(d[0].panel_title, "OCCUPANCY");
        assert_eq!((d[0].a.clone(), d[0].b.clone()), (n(40.0), n(60.0)));
        assert_eq!(d[0].difference, Some(20.0));
        assert_eq!(d[0].ratio, Some(1.5));
        assert_eq!(d[0].unit, "%");
        // A zero baseline has a difference but no ratio.
        assert_eq!((d[1].difference, d[1].ratio), (Some(3.0), None));
        // Text is shown side by side, not computed with.
        assert_eq!((d[2].difference, d[2].ratio), (None, None));
        assert_eq!(d[2].b, MetricValue::Text("y".into()));
    }

    #[test]
    fn different_printed_units_compare_in_si() {
        let n = MetricValue::Number;
        let mut ra = row("SOL", "Duration", "usecond", n(2.0));
        ra.si_value = Some(2e-6);
        ra.si_unit = Some("s".into());
        let mut rb = row("SOL", "Duration", "msecond", n(0.004));
        rb.si_value = Some(4e-6);
        rb.si_unit = Some("s".into());
        let mut rc = row("SOL", "Duration", "byte", n(4.0));
        rc.si_value = Some(4.0);
        rc.si_unit = Some("B".into());
        let a = panels(1, vec![("throughput", vec![ra])]);
        let d = compare_panels(&a, &panels(2, vec![("throughput", vec![rb])]));
        assert_eq!(d[0].unit, "s");
        assert!(d[0].ratio.is_some_and(|r| (r - 2.0).abs() < 1e-9), "{d:?}");
        let d = compare_panels(&a, &panels(3, vec![("throughput", vec![rc])]));
        assert_eq!((d[0].difference, d[0].ratio), (None, None));
        assert_eq!(d[0].unit, "usecond");
    }

    #[test]
    fn two_real_exports_share_numeric_rows() {
        // The e2e test compares these two fixtures in the browser.
        let x = import_str(include_str!(
            "../../tests/data/ncu/torch_cupy_set_full_details.csv"
        ))
        .unwrap();
        let y = import_str(include_str!("../../tests/data/ncu/ours_details.csv")).unwrap();
        let a = KernelPanels::of(&x.kernels[0], &[]);
        let b = KernelPanels::of(&y.kernels[0], &[]);
        let d = compare_panels(&a, &b);
        assert!(
            d.iter().filter(|r| r.ratio.is_some()).count() >= 5,
            "{d:#?}"
        );
        // A kernel against itself: every number has ratio 1.
        let same = compare_panels(&a, &a);
        assert!(!same.is_empty());
        assert!(same
            .iter()
            .filter_map(|r| r.ratio)
            .all(|r| (r - 1.0).abs() < 1e-12));
    }

    /// Issue 26: one export in µs, the other in ns, showed "0.00 second / 0.00 second";
    /// frequencies in base units read "1590000000 hz"; Kbyte values rounded to bytes showed
    /// false differences ("32770 vs 32768 byte", "1020 vs 1024 byte/block, 1.004×").
    #[test]
    fn compare_across_units_reads_and_agrees_to_the_printed_digits() {
        let n = MetricValue::Number;
        let a = panels(
            1,
            vec![(
                "throughput",
                vec![
                    row("SOL", "Duration", "us", n(52.9)),
                    row("SOL", "SM Frequency", "Ghz", n(1.59)),
                    row(
                        "Launch",
                        "Shared Memory Configuration Size",
                        "Kbyte",
                        n(32.77),
                    ),
                    row(
                        "Launch",
                        "Driver Shared Memory Per Block",
                        "Kbyte/block",
                        n(1.02),
                    ),
                    row("SOL", "DRAM Throughput", "Gbyte/s", n(229.83)),
                ],
            )],
        );
        let b = panels(
            2,
            vec![(
                "throughput",
                vec![
                    row("SOL", "Duration", "ns", n(61_250.0)),
                    row("SOL", "SM Frequency", "hz", n(1_590_000_000.0)),
                    row(
                        "Launch",
                        "Shared Memory Configuration Size",
                        "byte",
                        n(32_768.0),
                    ),
                    row(
                        "Launch",
                        "Driver Shared Memory Per Block",
                        "byte/block",
                        n(1024.0),
                    ),
                    row("SOL", "DRAM Throughput", "byte/s", n(229_826_981_246.22)),
                ],
            )],
        );
        let d = compare_panels(&a, &b);
        assert_eq!(d.len(), 5, "{d:#?}");
        let by = |name: &str| d.iter().find(|r| r.name == name).unwrap();
        let dur = by("Duration");
        assert_eq!(
            (dur.a_shown.as_str(), dur.b_shown.as_str()),
            ("52.9 \u{b5}s", "61.25 \u{b5}s")
        );
        assert_eq!(dur.difference_shown, "+8.35 \u{b5}s");
        assert_eq!(dur.unit, "second");
        assert!(dur.ratio.is_some_and(|r| (r - 61.25 / 52.9).abs() < 1e-9));
        let f = by("SM Frequency");
        assert_eq!(
            (f.a_shown.as_str(), f.b_shown.as_str()),
            ("1.59 GHz", "1.59 GHz")
        );
        assert_eq!(f.difference, Some(0.0));
        let smem = by("Shared Memory Configuration Size");
        assert!(smem.within_printed_digits, "{smem:#?}");
        assert_eq!(smem.ratio_shown, "\u{2248} 1\u{d7}");
        // Shared memory in CUDA's KiB (issue 37: "32.77 KB").
        assert_eq!(
            (smem.a_shown.as_str(), smem.b_shown.as_str()),
            ("32 KiB", "32 KiB")
        );
        let block = by("Driver Shared Memory Per Block");
        assert!(block.within_printed_digits, "{block:#?}");
        assert_eq!(
            (block.a_shown.as_str(), block.b_shown.as_str()),
            ("1 KiB/block", "1 KiB/block")
        );
        let bw = by("DRAM Throughput");
        assert!(bw.within_printed_digits, "{bw:#?}");
        assert_eq!(bw.b_shown, "229.8 GB/s");
    }

    /// Issue 26: "Achieved occupancy 12,345,678.5 %" was shown as a normal value.
    #[test]
    fn an_impossible_percentage_is_flagged_on_its_row() {
        let r = row(
            "Occupancy",
            "Achieved Occupancy",
            "%",
            MetricValue::Number(12_345_678.5),
        );
        assert!(
            r.flag.as_deref().is_some_and(|f| f.contains("above 100")),
            "{r:?}"
        );
        let ok = row(
            "Occupancy",
            "Achieved Occupancy",
            "%",
            MetricValue::Number(62.5),
        );
        assert_eq!((ok.flag, ok.shown.as_str()), (None, "62.5 %"));
    }

    /// Issue 37: the difference of two durations in µs read "0 s" (and a small one in ns):
    /// a difference reads in the unit of the values it is taken between.
    #[test]
    fn a_difference_reads_in_the_unit_of_its_values() {
        let n = MetricValue::Number;
        let a = panels(
            1,
            vec![(
                "throughput",
                vec![
                    row("SOL", "Duration", "us", n(52.9)),
                    row("SOL", "Elapsed", "us", n(52.9)),
                    row("SOL", "SM Frequency", "Ghz", n(1.5)),
                ],
            )],
        );
        let b = panels(
            2,
            vec![(
                "throughput",
                vec![
                    row("SOL", "Duration", "us", n(52.9)),
                    row("SOL", "Elapsed", "us", n(53.3)),
                    row("SOL", "SM Frequency", "Ghz", n(1.75)),
                ],
            )],
        );
        let d = compare_panels(&a, &b);
        let by = |name: &str| d.iter().find(|r| r.name == name).unwrap();
        assert_eq!(by("Duration").difference_shown, "0 \u{b5}s");
        assert_eq!(by("Elapsed").difference_shown, "+0.4 \u{b5}s");
        assert_eq!(by("SM Frequency").difference_shown, "+0.25 GHz");
    }
}
