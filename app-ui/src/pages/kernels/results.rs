//! The committed H100 runs of the kernel lab (docs/results/*-h100-2026-11-23.json), compiled
//! into the app: correctness checks and throughput of the activation and norm kernels against
//! PyTorch eager and `torch.compile`, the convolution ladder against cuDNN, and the lab CNN's
//! inference latency against PyTorch on the same weights. Parsed into the core's reports
//! (`showdown_core::bench`), laid out by the core's table functions (the ones the CLI prints
//! with); a file that does not parse shows an error line instead of its section. The core's
//! tests (`showdown_core::bench`) parse these same files into the same reports.

use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use showdown_core::bench::conv::ConvBench;
use showdown_core::bench::kernels::{KernelsBench, ThroughputGroup};
use showdown_core::bench::ParseError;
use showdown_core::inference::{InferenceReport, LatencyRow};
use web_sys::HtmlCanvasElement;

use crate::charts::{fmt, COLORS};

/// `showdown bench kernels --json-out` of the committed run.
pub const KERNELS_BENCH_JSON: &str =
    include_str!("../../../../docs/results/kernels-bench-h100-2026-11-23.json");
/// `showdown bench conv --json-out` of the committed run.
pub const CONV_LADDER_JSON: &str =
    include_str!("../../../../docs/results/conv-ladder-h100-2026-11-23.json");
/// `showdown bench infer --json-out` of the committed run.
pub const INFER_JSON: &str = include_str!("../../../../docs/results/infer-h100-2026-11-23.json");

/// When the committed runs were measured.
pub const RUN_DATE: &str = "2026-11-23";
/// The command of the committed kernel benchmark.
pub const KERNELS_BENCH_COMMAND: &str =
    "showdown bench kernels --peer-log anchor_kernels.jsonl --json-out …";
/// The command of the committed convolution ladder.
pub const CONV_LADDER_COMMAND: &str = "showdown bench conv --dataset fashion-mnist --data-dir .gpu/fashion --peer-log anchor_kernels.jsonl --json-out conv_bench.json";
/// The command of the committed inference benchmark.
pub const INFER_COMMAND: &str = "showdown bench infer --dataset fashion-mnist --data-dir .gpu/fashion --epochs 2 --peer bench/infer_peer.py --compile-batches 1,10000";

// ---------------------------------------------------------------- the page's section

fn ms(v: f64) -> String {
    format!("{v:.4}")
}

fn ratio(v: Option<f64>) -> String {
    v.map_or("–".to_string(), |r| format!("{r:.2}×"))
}

/// Draws `groups` as horizontal bars, three per kernel (ours, PyTorch eager, `torch.compile`),
/// with our copy ceiling as a vertical line.
fn draw_throughput(
    canvas: HtmlCanvasElement,
    groups: &[ThroughputGroup],
    ceiling: Option<f64>,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Debug| format!("cannot draw the chart: {e:?}");
    let width = canvas.width() as i32;
    let backend =
        CanvasBackend::with_canvas_object(canvas).ok_or("the canvas has no 2D context")?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let series = [
        ("ours", COLORS[0]),
        ("PyTorch eager", COLORS[4]),
        ("torch.compile (Triton)", COLORS[2]),
    ];
    root.draw(&Text::new(
        "Effective bandwidth, GB/s (8192 × 4096, one read + one write)".to_string(),
        (8, 6),
        ("sans-serif", 15),
    ))
    .map_err(|e| err(&e))?;
    let mut x = 8;
    for (name, color) in series {
        root.draw(&Rectangle::new([(x, 30), (x + 12, 42)], color.filled()))
            .map_err(|e| err(&e))?;
        root.draw(&Text::new(
            name.to_string(),
            (x + 16, 30),
            ("sans-serif", 12),
        ))
        .map_err(|e| err(&e))?;
        x += 30 + 7 * name.len() as i32;
    }
    let top = groups
        .iter()
        .flat_map(|g| [Some(g.ours.gbps), g.eager, g.compile])
        .flatten()
        .chain(ceiling)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let label_w = 130;
    let value_w = 60;
    let bar_w = (width - label_w - value_w - 16).max(40);
    let px = |v: f64| label_w + ((v.max(0.0) / top) * bar_w as f64).round() as i32;
    let bar_h = 9;
    let group_h = 3 * (bar_h + 1) + 8;
    let y0 = 54;
    for (i, g) in groups.iter().enumerate() {
        let y = y0 + i as i32 * group_h;
        root.draw(&Text::new(g.label.clone(), (8, y + 9), ("sans-serif", 12)))
            .map_err(|e| err(&e))?;
        for (j, (value, (_, color))) in [Some(g.ours.gbps), g.eager, g.compile]
            .into_iter()
            .zip(series)
            .enumerate()
        {
            let Some(v) = value else { continue };
            let by = y + j as i32 * (bar_h + 1);
            root.draw(&Rectangle::new(
                [(label_w, by), (px(v).max(label_w + 1), by + bar_h)],
                color.filled(),
            ))
            .map_err(|e| err(&e))?;
            root.draw(&Text::new(fmt(v), (px(v) + 4, by - 1), ("sans-serif", 10)))
                .map_err(|e| err(&e))?;
        }
    }
    if let Some(c) = ceiling {
        let bottom = y0 + groups.len() as i32 * group_h;
        root.draw(&PathElement::new(
            vec![(px(c), y0 - 4), (px(c), bottom)],
            BLACK.mix(0.5).stroke_width(1),
        ))
        .map_err(|e| err(&e))?;
        root.draw(&Text::new(
            format!("copy {}", fmt(c)),
            (px(c) - 40, bottom + 2),
            ("sans-serif", 11),
        ))
        .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))
}

fn run_line(device: &str, command: &'static str) -> impl IntoView {
    view! {
        <p class="measured-on">
            {format!("Measured on {device}, {RUN_DATE} (committed run: ")}
            <code>{command}</code>")"
        </p>
    }
}

fn kernels_section(k: KernelsBench) -> impl IntoView {
    let groups = k.throughput();
    let ceiling = k.copy_ceiling_gbps();
    let checks = k.check_summaries();
    let (passed, total) = k.checks_passed();
    let canvas = NodeRef::<Canvas>::new();
    let chart_error = RwSignal::new(None::<String>);
    let height = 70 + groups.len() * (3 * 10 + 8);
    let chart_groups = groups.clone();
    Effect::new(move |_| {
        if let Some(c) = canvas.get() {
            chart_error.set(draw_throughput(c, &chart_groups, ceiling).err());
        }
    });
    let check_rows = checks
        .into_iter()
        .map(|c| {
            view! {
                <tr class:failed={c.passed < c.checks}>
                    <td><code>{c.op.name()}</code></td><td>{c.dtype.suffix()}</td>
                    <td class="num">{format!("{}/{}", c.passed, c.checks)}</td>
                    <td class="num">{format!("{:.2e}", c.max_abs)}</td>
                    <td class="num">{format!("{:.2e}", c.max_rel)}</td>
                    <td class="num">{format!("{:.0e}", c.bound)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h4>"Activation and normalisation kernels against PyTorch"</h4>
        {run_line(&k.ours.device, KERNELS_BENCH_COMMAND)}
        {k.peer_failure.map(|f| view! { <p class="error">{format!("PyTorch did not run: {f}")}</p> })}
        <canvas id="kernels-bench-chart" width="820" height=height.to_string()></canvas>
        {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
        <p>
            <strong>{format!("{passed} of {total} correctness checks passed")}</strong>
            " (fresh random inputs of five shapes each, against an f64 reference):"
        </p>
        <table class="results" id="kernel-checks">
            <thead><tr><th>"op"</th><th>"dtype"</th><th>"passed"</th><th>"max abs error"</th><th>"max rel error"</th><th>"bound"</th></tr></thead>
            <tbody>{check_rows}</tbody>
        </table>
    }
}

fn ladder_section(l: ConvBench) -> impl IntoView {
    let (n, passed, max_rel) = l.check_totals();
    let failed = l
        .failed_checks()
        .into_iter()
        .map(|f| view! { <li>{f}</li> })
        .collect_view();
    let tables = l
        .gpu_tables()
        .into_iter()
        .map(|t| {
            let best = t.best_cudnn.clone().map_or("no cuDNN row".to_string(), |(name, ms)| {
                format!("fastest cuDNN: {name}, {} ms", self::ms(ms))
            });
            let rows = t
                .lines
                .into_iter()
                .map(|line| {
                    let faster = line.vs_cudnn.is_some_and(|v| v > 1.0);
                    view! {
                        <tr class:cudnn=line.is_cudnn class:rung=line.rung.is_some() title=line.note.unwrap_or_default()>
                            <td class="num">{line.rung.map_or(String::new(), |r| r.to_string())}</td>
                            <td><code>{line.implementation}</code></td>
                            <td>{line.dtypes}</td>
                            <td class="num">{ms(line.ms)}</td>
                            <td class="num">{line.tflops.map_or(String::new(), |t| format!("{t:.1}"))}</td>
                            <td class="num">{ratio(line.vs_rung1)}</td>
                            <td class="num" class:faster=faster>{ratio(line.vs_cudnn)}</td>
                        </tr>
                    }
                })
                .collect_view();
            view! {
                <table class="results ladder" data-layer=t.layer.name()>
                    <caption>{format!("{} · {best}", t.layer.title())}</caption>
                    <thead><tr><th>"rung"</th><th>"implementation"</th><th>"in/out"</th><th>"p50 ms"</th><th>"TFLOP/s"</th><th>"× rung 1"</th><th>"vs fastest cuDNN"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            }
        })
        .collect_view();
    view! {
        <h4>"The convolution ladder"</h4>
        {run_line(&l.ours.device, CONV_LADDER_COMMAND)}
        <p>
            {format!("Forward convolution, batch {}; {}. ", l.ours.batch, l.ours.input_source)}
            <strong>{format!("{passed} of {n} checks passed")}</strong>
            {format!(" (largest relative error {max_rel:.1e}). ")}
            "Rung 1 unrolls and calls a GEMM, rung 2 fuses it in FP32, rung 3 moves to tensor cores (mma.sync, FP16 in, FP32 out), "
            "rung 4 writes FP16, rung 5 overlaps the copy from pinned host memory on two streams. "
            "\"vs fastest cuDNN\" above 1 means faster than the fastest cuDNN configuration of the same layer (through cudarc or PyTorch)."
        </p>
        <ul class="error">{failed}</ul>
        {l.peer_failure.map(|f| view! { <p class="error">{format!("PyTorch did not run: {f}")}</p> })}
        <div id="conv-ladder">{tables}</div>
    }
}

fn infer_section(i: InferenceReport) -> impl IntoView {
    let checks = i
        .variants
        .iter()
        .map(|v| {
            let c = &v.check;
            let peer = v.peer_accuracy.map_or(String::new(), |a| format!(", PyTorch {a:.4}"));
            view! {
                <li class:failed=!c.ok>
                    <code>{v.activation.name()}</code>
                    {format!(
                        ": accuracy GPU FP16 {:.4}, CPU FP32 {:.4}{peer}; argmax agreement {:.2} % of {} images; max |Δlogit| {:.2e} · {}",
                        c.gpu_accuracy, c.cpu_accuracy, c.argmax_agreement * 100.0, c.images, c.max_abs_diff,
                        if c.ok { "ok" } else { "FAILED" }
                    )}
                </li>
            }
        })
        .collect_view();
    let rows = i
        .lines()
        .into_iter()
        .map(|l| {
            let (which, best) = l
                .best_torch
                .map_or(("–".to_string(), "–".to_string()), |r| (r.implementation, ms(r.p50_ms)));
            let p50 = |r: Option<LatencyRow>| r.map_or("–".to_string(), |r| ms(r.p50_ms));
            view! {
                <tr>
                    <td>{l.activation.name()}</td>
                    <td class="num">{l.batch}</td>
                    <td class="num">{p50(l.launches)}</td>
                    <td class="num">{p50(l.graph)}</td>
                    <td class="num">{best}</td>
                    <td><code>{which}</code></td>
                    <td class="num" class:faster=l.ours_vs_best.is_some_and(|v| v > 1.0)>{ratio(l.ours_vs_best)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h4>"Lab CNN inference against PyTorch on the same weights"</h4>
        {run_line(&i.device, INFER_COMMAND)}
        <p>{format!("{} test images, FP16 activations with FP32 accumulation; latency of one forward pass, median ms. ", i.dataset)}
           "GPU logits checked against the CPU's FP32 forward of the same weights:"</p>
        <ul class="infer-checks">{checks}</ul>
        {i.peer_failure.map(|f| view! { <p class="error">{format!("PyTorch did not run: {f}")}</p> })}
        <table class="results" id="infer-table">
            <thead><tr><th>"activation"</th><th>"batch"</th><th>"ours p50 ms"</th><th>"ours CUDA graph p50 ms"</th><th>"fastest PyTorch p50 ms"</th><th>"which"</th><th>"ours vs fastest"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

fn or_error<T, V: IntoView + 'static>(
    parsed: Result<T, ParseError>,
    show: impl FnOnce(T) -> V,
) -> AnyView {
    match parsed {
        Ok(v) => show(v).into_any(),
        Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
    }
}

/// The committed H100 results: throughput chart and checks of the activation and norm kernels,
/// the convolution ladder tables and the inference latency table.
#[component]
pub fn MeasuredResults() -> impl IntoView {
    view! {
        <section id="measured-results" class="card">
            <h3>{format!("H100 reference, {RUN_DATE}: committed results from another machine, not this one's")}</h3>
            <p class="muted">"Act III does not run these benchmarks on this machine yet (`showdown bench kernels`, `bench conv` and `bench infer` do, on a GPU); what follows is the lab's own H100 run, shown as a labelled reference."</p>
            {or_error(KernelsBench::parse(KERNELS_BENCH_JSON), kernels_section)}
            {or_error(ConvBench::parse(CONV_LADDER_JSON), ladder_section)}
            {or_error(InferenceReport::parse(INFER_JSON), infer_section)}
        </section>
    }
}
