//! The loss scale over the steps (`#loss-scale-chart`), live from the duel's step events and
//! completed from each run's `scale_history`, with the skipped steps marked — on it and on the
//! training-loss curve (`#loss-chart`, drawn here too so that it can carry the marks).

use std::collections::BTreeMap;

use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use showdown_core::types::{Precision, RunReport};
use web_sys::HtmlCanvasElement;

use super::draw::{err, pow2};
use crate::charts::{precision_color, series_legend};

/// One step event of a running contestant.
#[derive(Clone, Debug, PartialEq)]
pub struct StepPoint {
    /// Global 1-based step (over the whole run).
    pub step: usize,
    /// Where on the epoch axis: `epoch - 1 + step / steps`.
    pub x: f64,
    /// Loss of the latest step.
    pub loss: f64,
    /// Loss scale after it.
    pub loss_scale: f64,
    /// Steps skipped so far in the run.
    pub skipped: usize,
}

/// One contestant's loss curve: its curve points (the same steps for every contestant).
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The contestant.
    pub precision: Precision,
    /// Steps per epoch.
    pub steps_per_epoch: usize,
    /// Its curve points, in order.
    pub points: Vec<StepPoint>,
    /// The legend's label (the precision when `None`): an overlaid saved run names itself.
    pub label: Option<String>,
    /// Drawn dashed (an overlaid run, apart from the one shown).
    pub dashed: bool,
}

impl Trace {
    /// The trace of a saved run's curve: its points as the live duel drew them.
    pub fn of_curve(r: &RunReport) -> Option<Trace> {
        if r.curve.is_empty() {
            return None;
        }
        // The last curve step of an epoch is its last step.
        let steps_per_epoch = r
            .curve
            .iter()
            .filter(|p| p.epoch == 1)
            .map(|p| p.step)
            .max()
            .unwrap_or(1);
        Some(Trace {
            precision: r.precision,
            steps_per_epoch,
            points: r
                .curve
                .iter()
                .map(|p| StepPoint {
                    step: p.global_step,
                    x: p.x,
                    loss: p.loss,
                    loss_scale: p.loss_scale,
                    skipped: p.skipped,
                })
                .collect(),
            label: None,
            dashed: false,
        })
    }

    /// A report without curves (saved before they were kept): each epoch's mean training loss,
    /// at the epoch's end.
    pub fn of_epochs(r: &RunReport) -> Trace {
        Trace {
            precision: r.precision,
            steps_per_epoch: 1,
            points: r
                .epochs
                .iter()
                .map(|e| StepPoint {
                    step: e.epoch,
                    x: e.epoch as f64,
                    loss: e.train_loss,
                    loss_scale: e.loss_scale,
                    skipped: 0,
                })
                .collect(),
            label: None,
            dashed: false,
        }
    }
}

/// The loss curves of saved runs `runs`: each contestant's curve points, or its epochs' mean
/// losses when the report predates the curves; and whether they are the per-step curves.
pub fn saved_traces(runs: &[RunReport]) -> (Vec<Trace>, bool) {
    let curves: Vec<Trace> = runs.iter().filter_map(Trace::of_curve).collect();
    if !curves.is_empty() {
        (curves, true)
    } else {
        (runs.iter().map(Trace::of_epochs).collect(), false)
    }
}

/// The marks of skipped steps on the loss curve: (epoch axis x, loss). Live, where a step
/// event's skip count rose; from the report, its `scale_history`'s skipped steps (placed on
/// the curve at the nearest step event).
pub fn skip_marks(t: &Trace, report: Option<&RunReport>) -> Vec<(f64, f64)> {
    let finite: Vec<&StepPoint> = t.points.iter().filter(|p| p.loss.is_finite()).collect();
    let loss_near = |step: usize| {
        finite
            .iter()
            .min_by_key(|p| p.step.abs_diff(step))
            .map(|p| p.loss)
    };
    let mut steps = Vec::new();
    let mut before = 0;
    for p in &t.points {
        if p.skipped > before {
            steps.push(p.step);
        }
        before = before.max(p.skipped);
    }
    if let Some(r) = report {
        for sp in r.scale_history.iter().filter(|s| s.skipped) {
            if !steps.contains(&sp.step) {
                steps.push(sp.step);
            }
        }
    }
    let spe = t.steps_per_epoch.max(1) as f64;
    steps
        .into_iter()
        .filter_map(|s| loss_near(s).map(|l| (s as f64 / spe, l)))
        .collect()
}

/// A contestant's loss scale by global step, `(step, log2 scale, skipped)`: the step events'
/// and the report's `scale_history` (which wins where both have a step).
pub fn scale_points(t: Option<&Trace>, r: Option<&RunReport>) -> Vec<(usize, f64, bool)> {
    let mut by_step: BTreeMap<usize, (f64, bool)> = BTreeMap::new();
    if let Some(t) = t {
        let mut before = 0;
        for p in &t.points {
            if p.loss_scale > 0.0 && p.loss_scale.is_finite() {
                by_step.insert(p.step, (p.loss_scale.log2(), p.skipped > before));
            }
            before = before.max(p.skipped);
        }
    }
    if let Some(r) = r {
        for sp in &r.scale_history {
            if sp.loss_scale > 0.0 && sp.loss_scale.is_finite() {
                let was = by_step.get(&sp.step).is_some_and(|v| v.1);
                by_step.insert(sp.step, (sp.loss_scale.log2(), sp.skipped || was));
            }
        }
    }
    by_step.into_iter().map(|(s, (v, k))| (s, v, k)).collect()
}

/// What the loss chart draws, for tests and tools: `fp32:4,8;fp16:4,8` (each line's global
/// steps; an overlaid line's name ends in `~`).
pub fn drawn_steps(traces: &[Trace]) -> String {
    traces
        .iter()
        .map(|t| {
            let steps: Vec<String> = t
                .points
                .iter()
                .filter(|p| p.loss.is_finite())
                .map(|p| p.step.to_string())
                .collect();
            format!(
                "{}{}:{}",
                t.precision,
                if t.dashed { "~" } else { "" },
                steps.join(",")
            )
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// The training loss of every contestant minus FP32's at the same step (`#loss-chart` with
/// "difference from FP32" on): where the four loss curves overlap, their gaps are what a
/// reader wants to see. The canvas's `data-difference` names the lines drawn; without an FP32
/// curve it draws nothing and says why.
pub fn draw_loss_difference_chart(
    canvas: HtmlCanvasElement,
    traces: &[Trace],
) -> Result<(), String> {
    let points =
        |t: &Trace| -> Vec<(f64, f64)> { t.points.iter().map(|p| (p.x, p.loss)).collect() };
    let base = traces
        .iter()
        .find(|t| t.precision == Precision::Fp32 && !t.dashed)
        .map(points)
        .ok_or("the difference from FP32 needs an fp32 contestant in the duel")?;
    let lines: Vec<(&Trace, Vec<(f64, f64)>)> = traces
        .iter()
        .filter(|t| !t.dashed && t.precision != Precision::Fp32)
        .map(|t| {
            (
                t,
                showdown_core::chart_data::difference_from(&base, &points(t)),
            )
        })
        .collect();
    let names: Vec<&str> = lines.iter().map(|(t, _)| t.precision.as_str()).collect();
    let _ = canvas.set_attribute("data-difference", &names.join(";"));
    let backend =
        CanvasBackend::with_canvas_object(canvas).ok_or("the canvas has no 2D context")?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let all = || lines.iter().flat_map(|(_, pts)| pts.iter());
    let x1 = all().fold(1.0f64, |a, p| a.max(p.0));
    let m = all().fold(0.0f64, |a, p| a.max(p.1.abs()));
    let m = if m > 0.0 { m * 1.1 } else { 0.1 };
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .caption(
            "Training loss minus FP32's at the same step",
            ("sans-serif", 16),
        )
        .x_label_area_size(38)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x1, -m..m)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc("loss − FP32 loss")
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new([(0.0, 0.0), (x1, 0.0)], BLACK.mix(0.5)))
        .map_err(err)?
        .label("fp32 (zero)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.mix(0.5)));
    for (t, pts) in &lines {
        let color = precision_color(t.precision);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(err)?
            .label(t.precision.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    series_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)
}

/// The training-loss chart: a line per contestant over epochs, crosses on skipped steps. The
/// canvas's `data-steps` says at which steps each line has its points ([`drawn_steps`]).
pub fn draw_loss_chart(
    canvas: HtmlCanvasElement,
    traces: &[Trace],
    runs: &[RunReport],
) -> Result<(), String> {
    let _ = canvas.set_attribute("data-steps", &drawn_steps(traces));
    let backend = crate::charts::chart_backend(canvas)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let lines: Vec<(&Trace, Vec<(f64, f64)>)> = traces
        .iter()
        .map(|t| {
            (
                t,
                t.points
                    .iter()
                    .filter(|p| p.loss.is_finite())
                    .map(|p| (p.x, p.loss))
                    .collect(),
            )
        })
        .collect();
    let marks: Vec<(f64, f64)> = traces
        .iter()
        .filter(|t| !t.dashed)
        .flat_map(|t| skip_marks(t, runs.iter().find(|r| r.precision == t.precision)))
        .collect();
    let all = || lines.iter().flat_map(|(_, pts)| pts.iter());
    let (mut x0, mut x1) = all().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    x0 = x0.min(0.0);
    if x1 - x0 < 1e-9 {
        x1 = x0 + 1.0;
    }
    let hi = all().fold(f64::MIN, |a, p| a.max(p.1));
    let y1 = if hi > 0.0 { hi * 1.05 } else { 1.0 };
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .caption("Training loss", ("sans-serif", 16))
        .x_label_area_size(38)
        .y_label_area_size(52)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc("loss")
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    for (t, pts) in &lines {
        let color = precision_color(t.precision);
        let label = t
            .label
            .clone()
            .unwrap_or_else(|| t.precision.as_str().to_string());
        let drawn = if t.dashed {
            chart
                .draw_series(DashedLineSeries::new(
                    pts.iter().copied(),
                    6,
                    4,
                    color.mix(0.8).stroke_width(2),
                ))
                .map_err(err)?
        } else {
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                .map_err(err)?
        };
        let dashed = t.dashed;
        drawn.label(label).legend(move |(x, y)| {
            let style = color.stroke_width(2);
            if dashed {
                PathElement::new(vec![(x, y), (x + 6, y)], style)
            } else {
                PathElement::new(vec![(x, y), (x + 18, y)], style)
            }
        });
    }
    if !marks.is_empty() {
        draw_skipped(
            &mut chart,
            &marks,
            format!("skipped step ({})", marks.len()),
        )?;
    }
    if lines.len() > 1 || !marks.is_empty() {
        series_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    }
    root.present().map_err(err)
}

/// A chart of this page: f64 on both axes, on a canvas.
type Chart<'a> = ChartContext<
    'a,
    CanvasBackend,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Crosses at the skipped steps `at`, with the legend entry `label`.
fn draw_skipped(chart: &mut Chart<'_>, at: &[(f64, f64)], label: String) -> Result<(), String> {
    chart
        .draw_series(at.iter().map(|&m| Cross::new(m, 5, BLACK.stroke_width(2))))
        .map_err(err)?
        .label(label)
        .legend(|(x, y)| Cross::new((x + 9, y), 5, BLACK.stroke_width(2)));
    Ok(())
}

/// The contestants of a duel, live or from its report, in order.
fn contestants(traces: &[Trace], runs: &[RunReport]) -> Vec<Precision> {
    let mut out: Vec<Precision> = traces.iter().map(|t| t.precision).collect();
    for r in runs {
        if !out.contains(&r.precision) {
            out.push(r.precision);
        }
    }
    out
}

/// Whether contestant `p` ran a dynamic loss scaler: FP16 always; FP8 where its storage is
/// FP16 (a GPU), seen in its scales (the CPU's FP8 runs without one).
fn has_scaler(p: Precision, traces: &[Trace], runs: &[RunReport]) -> bool {
    p.uses_loss_scaler()
        || (p.may_use_loss_scaler()
            && (traces
                .iter()
                .filter(|t| t.precision == p)
                .any(|t| t.points.iter().any(|x| x.loss_scale != 1.0))
                || runs.iter().filter(|r| r.precision == p).any(|r| {
                    r.final_loss_scale != 1.0
                        || r.skipped_steps > 0
                        || r.scale_history.iter().any(|s| s.loss_scale != 1.0)
                })))
}

/// The loss-scale chart: log2 of each scaler's loss scale by step (held between changes),
/// crosses on skipped steps; a contestant without a scaler is a line at 2⁰.
pub fn draw_scale_chart(
    canvas: HtmlCanvasElement,
    traces: &[Trace],
    runs: &[RunReport],
) -> Result<(), String> {
    let backend = crate::charts::chart_backend(canvas)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut series = Vec::new();
    let mut last_step = 1usize;
    for p in contestants(traces, runs) {
        let scaled = has_scaler(p, traces, runs);
        let t = traces.iter().find(|t| t.precision == p);
        let r = runs.iter().find(|r| r.precision == p);
        let pts = scale_points(t, r);
        let end = pts
            .last()
            .map(|x| x.0)
            .into_iter()
            .chain(t.and_then(|t| t.points.last().map(|x| x.step)))
            .max()
            .unwrap_or(1);
        last_step = last_step.max(end);
        series.push((p, pts, end, scaled));
    }
    let top = series
        .iter()
        .flat_map(|(_, pts, _, _)| pts.iter().map(|x| x.1))
        .fold(0.0f64, f64::max)
        .ceil()
        + 1.0;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .caption("Loss scale over the steps", ("sans-serif", 16))
        .x_label_area_size(38)
        .y_label_area_size(52)
        .build_cartesian_2d(0.0..last_step as f64 + 1.0, -0.5..top)
        .map_err(err)?;
    let labels = (top as usize + 2).min(14);
    chart
        .configure_mesh()
        .x_desc("step (over the whole run)")
        .y_desc("loss scale")
        .y_labels(labels)
        .y_label_formatter(&|v: &f64| {
            if (v - v.round()).abs() < 1e-6 && *v >= 0.0 {
                pow2(v.round() as i32)
            } else {
                String::new()
            }
        })
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    let mut skipped = Vec::new();
    for (p, pts, end, scaled) in &series {
        let color = precision_color(*p);
        let (path, label) = if *scaled && !pts.is_empty() {
            let mut path = Vec::with_capacity(pts.len() * 2);
            for (i, &(s, v, k)) in pts.iter().enumerate() {
                if let Some(&(_, before, _)) = i.checked_sub(1).and_then(|j| pts.get(j)) {
                    path.push((s as f64, before));
                }
                path.push((s as f64, v));
                if k {
                    skipped.push((s as f64, v));
                }
            }
            (path, format!("{p}: dynamic loss scaler"))
        } else {
            (
                vec![(1.0, 0.0), (*end as f64, 0.0)],
                format!("{p}: no loss scaler (fixed at 1)"),
            )
        };
        chart
            .draw_series(LineSeries::new(path, color.stroke_width(2)))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    if !skipped.is_empty() {
        draw_skipped(
            &mut chart,
            &skipped,
            "skipped step (inf or NaN: the scale halves)".into(),
        )?;
    }
    series_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(err)
}

/// A sentence per contestant under the chart.
fn scale_notes(traces: &[Trace], runs: &[RunReport]) -> Vec<(Precision, String)> {
    contestants(traces, runs)
        .into_iter()
        .map(|p| {
            if !has_scaler(p, traces, runs) {
                return (p, format!("{p}: no loss scaler (fixed at 1)."));
            }
            let t = traces.iter().find(|t| t.precision == p);
            let r = runs.iter().find(|r| r.precision == p);
            let pts = scale_points(t, r);
            let skipped = r
                .map(|r| r.skipped_steps)
                .or_else(|| t.and_then(|t| t.points.iter().map(|x| x.skipped).max()))
                .unwrap_or(0);
            let text = match (pts.first(), pts.last()) {
                (Some(a), Some(b)) => format!(
                    "{p}: loss scale {} at step {}, {} at step {}; {skipped} step(s) skipped (× on \
                     both charts: their gradients held an inf or NaN, the update was dropped and \
                     the scale halved).",
                    pow2(a.1.round() as i32),
                    a.0,
                    pow2(b.1.round() as i32),
                    b.0,
                ),
                _ => format!("{p}: no loss-scale readings yet."),
            };
            (p, text)
        })
        .collect()
}

/// The loss-scale chart section: drawn from the step events as they come and from the
/// reports once the runs finish.
#[component]
pub fn LossScaleChart(
    /// Put before every element id: `""` for the live duel (`#loss-scale-chart`…),
    /// `"history-"` for a saved one (`#history-loss-scale-chart`…).
    prefix: &'static str,
    /// The running duel's step events per contestant.
    #[prop(into)]
    traces: Signal<Vec<Trace>>,
    /// The finished runs.
    #[prop(into)]
    runs: Signal<Vec<RunReport>>,
) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let error = RwSignal::new(None::<String>);
    let shown = move || traces.with(|t| !t.is_empty()) || runs.with(|r| !r.is_empty());
    Effect::new(move |_| {
        let Some(c) = canvas.get() else { return };
        if !shown() {
            return;
        }
        let r = traces.with(|t| runs.with(|r| draw_scale_chart(c, t, r)));
        error.set(r.err());
    });
    let notes = move || {
        traces.with(|t| {
            runs.with(|r| {
                scale_notes(t, r)
                    .into_iter()
                    .map(|(p, s)| view! { <li data-precision=p.as_str()>{s}</li> })
                    .collect_view()
            })
        })
    };
    let pid = move |name: &str| format!("{prefix}{name}");
    view! {
        <section id={pid("loss-scale")} style:display=move || if shown() { "block" } else { "none" }>
            <canvas id={pid("loss-scale-chart")} node_ref=canvas width="760" height="260"></canvas>
            {move || error.get().map(|e| view! { <p class="error">{e}</p> })}
            <ul id={pid("loss-scale-notes")} class="muted" style="font-size:0.9em">{notes}</ul>
        </section>
    }
}
