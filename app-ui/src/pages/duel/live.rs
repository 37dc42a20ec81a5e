//! Act II's live panels while a duel runs: the loss and accuracy charts, the loss scale, each
//! contestant's card with its GPU readings, and PyTorch's loss per epoch.

use super::*;

/// Smallest, mean and largest of `values`; `None` when there are none.
pub(super) fn min_mean_max(values: impl Iterator<Item = f64>) -> Option<(f64, f64, f64)> {
    let (mut lo, mut hi, mut sum, mut n) = (f64::MAX, f64::MIN, 0.0, 0usize);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
        sum += v;
        n += 1;
    }
    (n > 0).then(|| (lo, sum / n as f64, hi))
}

/// The GPU readings of a finished run: min/mean/max per quantity and a utilisation sparkline.
pub(super) fn gpu_telemetry(t: &Telemetry) -> AnyView {
    let s = &t.samples;
    if s.is_empty() {
        let why = t
            .note
            .clone()
            .unwrap_or_else(|| "NVML took no samples".into());
        return view! { <p class="gpu-telemetry">{format!("GPU telemetry: none — {why}")}</p> }
            .into_any();
    }
    let line = |name: &str, unit: &str, v: Option<(f64, f64, f64)>| {
        v.map(|(lo, mean, hi)| {
            format!(
                "{name} {} / {} / {} {unit}",
                charts::fmt(lo),
                charts::fmt(mean),
                charts::fmt(hi)
            )
        })
        .unwrap_or_default()
    };
    let util = line(
        "utilisation",
        "%",
        min_mean_max(s.iter().map(|x| x.gpu_util_pct as f64)),
    );
    let memory = line(
        "memory used",
        "MB",
        min_mean_max(s.iter().map(|x| x.memory_used_bytes as f64 / 1e6)),
    );
    let power = line("power", "W", min_mean_max(s.iter().map(|x| x.power_w)));
    let temperature = line(
        "temperature",
        "°C",
        min_mean_max(s.iter().map(|x| x.temperature_c as f64)),
    );
    let process = t
        .process_memory_peak_bytes
        .map(|b| format!("; process peak {:.1} MB (NVML)", b as f64 / 1e6))
        .unwrap_or_default();
    let last = s.len().saturating_sub(1).max(1) as f64;
    let points = s
        .iter()
        .enumerate()
        .map(|(i, x)| {
            format!(
                "{:.1},{:.1}",
                i as f64 / last * 100.0,
                20.0 - x.gpu_util_pct.min(100) as f64 / 5.0
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    view! {
        <p class="gpu-telemetry">
            {format!("GPU telemetry ({} samples, min / mean / max): {util}; {memory}{process}; {power}; {temperature}", s.len())}
            " "
            <svg class="spark" viewBox="0 0 100 20" preserveAspectRatio="none" width="120" height="22">
                <title>"GPU utilisation over the run"</title>
                <polyline points=points fill="none" stroke="#1f77b4" stroke-width="1.5"/>
            </svg>
        </p>
    }
    .into_any()
}

/// One contestant's card in the telemetry strip. `cpu_chosen`: the user picked the CPU
/// backend, so no GPU readings will come.
pub(super) fn contestant_card(
    c: ContestantStats,
    train_images: Option<usize>,
    cpu_chosen: bool,
) -> impl IntoView {
    let epoch = c
        .last_epoch
        .as_ref()
        .map(|e| format!("{} / {}", e.epoch, c.epochs))
        .unwrap_or_else(|| format!("0 / {}", c.epochs));
    let epoch_time = c
        .last_epoch
        .as_ref()
        .map(|e| format!("{:.1} ms", e.ms))
        .unwrap_or_else(|| "—".into());
    let samples_per_s = match (&c.finished, &c.last_epoch, train_images) {
        (Some(r), _, _) => format!("{:.0} (median epoch)", r.samples_per_s),
        (None, Some(e), Some(n)) if e.ms > 0.0 => format!("{:.0}", n as f64 / (e.ms / 1e3)),
        _ => "—".into(),
    };
    let peak = c
        .finished
        .as_ref()
        .map(|r| format!("{:.1} MB", r.peak_memory_bytes as f64 / 1e6))
        .unwrap_or_else(|| "— (at the end of the run)".into());
    let loss_scale = if c.loss_scale.is_finite() {
        c.loss_scale.to_string()
    } else {
        "—".into()
    };
    let gpu = match &c.finished {
        Some(RunReport {
            telemetry: Some(t), ..
        }) => gpu_telemetry(t),
        Some(_) => view! { <p class="gpu-telemetry">"GPU telemetry: none (CPU backend)"</p> }.into_any(),
        None if cpu_chosen => view! { <p class="gpu-telemetry">"GPU telemetry: none (CPU backend)"</p> }.into_any(),
        None => view! { <p class="gpu-telemetry muted">"GPU telemetry: live above; the summary comes with the run's report"</p> }.into_any(),
    };
    view! {
        <article class="contestant" data-precision=c.precision.as_str()
            style:border-top-color=format!("rgb({},{},{})", color_of(c.precision).0, color_of(c.precision).1, color_of(c.precision).2)>
            <h4>{c.precision.as_str()}</h4>
            <dl>
                <dt>"epoch"</dt><dd class="epoch">{epoch}</dd>
                <dt>"epoch time"</dt><dd class="epoch-time">{epoch_time}</dd>
                <dt>"samples/s"</dt><dd class="samples-per-s">{samples_per_s}</dd>
                <dt>"peak memory"</dt><dd class="peak-memory">{peak}</dd>
                <dt>"loss scale"</dt><dd class="loss-scale">{loss_scale}</dd>
                <dt>"skipped steps"</dt><dd class="skipped-steps">{c.skipped_steps}</dd>
            </dl>
            {gpu}
        </article>
    }
}

/// The running duel's live panels: the loss chart, the loss scale, the GPU's readings, each
/// contestant's card, the accuracy chart and, with PyTorch, its loss per epoch.
#[component]
pub(super) fn DuelLive(d: Duel) -> impl IntoView {
    let Duel {
        curves,
        runs,
        epoch_rows,
        stats,
        train_images,
        cpu_chosen,
        live,
        peer_runs,
        ..
    } = d;
    let canvas = NodeRef::<Canvas>::new();
    let chart_error = RwSignal::new(None::<String>);
    // "difference from FP32": each contestant's loss minus FP32's at the same step.
    let difference = RwSignal::new(false);
    let has_fp32 = Memo::new(move |_| {
        curves.with(|t| t.iter().any(|t| t.precision == Precision::Fp32))
            && curves.with(|t| t.iter().any(|t| t.precision != Precision::Fp32))
    });
    Effect::new(move |_| {
        let Some(c) = canvas.get() else { return };
        let r = if difference.get() && has_fp32.get() {
            curves.with(|t| duel_story::scale::draw_loss_difference_chart(c, t))
        } else {
            let _ = c.remove_attribute("data-difference");
            curves.with(|t| runs.with(|r| duel_story::scale::draw_loss_chart(c, t, r)))
        };
        chart_error.set(r.err());
    });

    let accuracy_canvas = NodeRef::<Canvas>::new();
    let accuracy_error = RwSignal::new(None::<String>);
    // Changes once per run, not with every step's loss scale.
    let most_epochs =
        Memo::new(move |_| stats.with(|v| v.iter().map(|c| c.epochs).max().unwrap_or(1)));
    Effect::new(move |_| {
        let rows = epoch_rows.get();
        let epochs = most_epochs.get();
        let Some(c) = accuracy_canvas.get() else {
            return;
        };
        let peers = peer_runs.get();
        let mut series: Vec<Series> = Vec::new();
        for (p, e) in rows {
            let point = (e.epoch as f64, e.test_accuracy * 100.0);
            match series.iter_mut().find(|s| s.name == p.as_str()) {
                Some(s) => s.points.push(point),
                None => series.push(Series {
                    name: p.as_str().into(),
                    color: color_of(p),
                    points: vec![point],
                }),
            }
        }
        if peers.is_empty() {
            // Without PyTorch the chart is drawn as before (and as a reopened run draws it).
            let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
            let _ = c.set_attribute("data-series", &names.join(";"));
            let (y0, y1) = showdown_core::chart_data::accuracy_axis(
                series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
            );
            let _ = c.set_attribute("data-y-range", &format!("{y0}-{y1}"));
            c.set_height(260);
            accuracy_error.set(charts::accuracy_chart(c, &series, epochs).err());
            return;
        }
        let mut lines: Vec<StyledSeries> = series
            .into_iter()
            .map(|series| StyledSeries {
                series,
                stroke: Stroke::Solid,
            })
            .collect();
        let epochs = peers.iter().map(|(_, n)| *n).fold(epochs, usize::max);
        lines.extend(duel_table::peer_lines(
            peers.iter().map(|(run, _)| run),
            |e| e.test_accuracy * 100.0,
        ));
        // Room for the legend's lines (one row each, low in the chart: the accuracies are high).
        c.set_height((170 + 20 * lines.len()).max(260) as u32);
        let chart = EpochLines {
            title: "Test accuracy after each epoch (PyTorch: eager dashed, CUDA graph dotted)",
            y_desc: "accuracy (%)",
            lines: &lines,
            epochs,
            y_range: Some(showdown_core::chart_data::accuracy_axis(
                lines
                    .iter()
                    .flat_map(|l| l.series.points.iter().map(|p| p.1)),
            )),
            legend: SeriesLabelPosition::LowerRight,
        };
        accuracy_error.set(charts::epoch_lines(c, &chart).err());
    });
    // With PyTorch: the training loss per epoch, ours solid and PyTorch's dashed (PyTorch
    // reports each epoch's mean loss, not the per-step curve the loss chart draws).
    let peer_loss_canvas = NodeRef::<Canvas>::new();
    let peer_loss_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let rows = epoch_rows.get();
        let peers = peer_runs.get();
        let Some(c) = peer_loss_canvas.get() else {
            return;
        };
        if peers.is_empty() {
            peer_loss_error.set(None);
            return;
        }
        let mut lines: Vec<StyledSeries> = Vec::new();
        for (p, e) in rows {
            let point = (e.epoch as f64, e.train_loss);
            match lines.iter_mut().find(|l| l.series.name == p.as_str()) {
                Some(l) => l.series.points.push(point),
                None => lines.push(StyledSeries {
                    series: Series {
                        name: p.as_str().into(),
                        color: color_of(p),
                        points: vec![point],
                    },
                    stroke: Stroke::Solid,
                }),
            }
        }
        let epochs = peers
            .iter()
            .map(|(_, n)| *n)
            .fold(most_epochs.get_untracked(), usize::max);
        lines.extend(duel_table::peer_lines(
            peers.iter().map(|(run, _)| run),
            |e| e.train_loss,
        ));
        c.set_height((200 + 20 * lines.len()).max(300) as u32);
        // Headroom over the highest loss for the legend (upper right: the losses fall).
        let hi = lines
            .iter()
            .flat_map(|l| l.series.points.iter().map(|p| p.1))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let y_range = (hi > 0.0).then_some((0.0, hi * (1.3 + 0.12 * lines.len() as f64)));
        let chart = EpochLines {
            title: "Training loss, mean of each epoch (PyTorch: eager dashed, CUDA graph dotted)",
            y_desc: "loss",
            lines: &lines,
            epochs,
            y_range,
            legend: SeriesLabelPosition::UpperRight,
        };
        peer_loss_error.set(charts::epoch_lines(c, &chart).err());
    });
    let telemetry_strip = move || {
        let list = stats.get();
        (!list.is_empty()).then(|| {
            let (n, cpu) = (train_images.get(), cpu_chosen.get());
            let cards = list
                .into_iter()
                .map(|c| contestant_card(c, n, cpu))
                .collect_view();
            view! { <section id="telemetry-strip">{cards}</section> }
        })
    };

    view! {
        <canvas id="loss-chart" node_ref=canvas width="760" height="320"
            style:display=move || if curves.get().is_empty() { "none" } else { "block" }></canvas>
        <Show when=move || !curves.with(Vec::is_empty)>
            <label class="check" title=move || if has_fp32.get() { "each contestant's training loss minus FP32's at the same step" } else { "needs fp32 and another contestant in the duel" }>
                <input type="checkbox" id="loss-difference" disabled=move || !has_fp32.get()
                    prop:checked=move || difference.get()
                    on:change=move |ev| difference.set(event_target_checked(&ev))/>
                " difference from FP32"
            </label>
        </Show>
        {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
        <LossScaleChart prefix="" traces=curves runs=runs/>
        <Show when=move || live.with(Option::is_some)>
            <TelemetryStrip sample=live id="live-telemetry"/>
        </Show>
        {telemetry_strip}
        <canvas id="accuracy-chart" node_ref=accuracy_canvas width="760" height="260"
            style:display=move || if epoch_rows.with(Vec::is_empty) { "none" } else { "block" }></canvas>
        {move || accuracy_error.get().map(|e| view! { <p class="error">{e}</p> })}
        <canvas id="pytorch-loss-chart" node_ref=peer_loss_canvas width="760" height="300"
            style:display=move || if peer_runs.with(Vec::is_empty) { "none" } else { "block" }></canvas>
        {move || peer_loss_error.get().map(|e| view! { <p class="error">{e}</p> })}
    }
}
