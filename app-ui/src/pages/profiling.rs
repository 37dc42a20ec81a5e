//! Act IV – Occupancy & Profiling: the occupancy calculator (compute's pure core, in WASM)
//! with its sweep chart, and the Nsight Compute CSV importer with the seven panels.
//! Kernel names, metric names and rule messages come from the imported file and are shown as
//! text only.

use compute::ncu::{build_panels, import_str, MetricValue, NcuReport, Panel};
use compute::occupancy::{
    occupancy, parse_cc, sweep_block_size, GpuLimits, OccupancyInput, OccupancyOutput,
    SUPPORTED_COMPUTE_CAPABILITIES,
};
use leptos::html::Canvas;
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::charts::{self, LineChart, Series, COLORS};

/// The Act IV page.
#[component]
pub fn ProfilingPage() -> impl IntoView {
    view! {
        <h2>"Act IV · Occupancy & Profiling"</h2>
        <Calculator/>
        <NcuImport/>
    }
}

fn slider(
    id: &'static str,
    label: &'static str,
    value: RwSignal<u32>,
    min: u32,
    max: Signal<u32>,
    step: u32,
) -> impl IntoView {
    view! {
        <label class="slider" for=id>
            <span>{label}</span>
            <input type="range" id=id min=min.to_string() max=move || max.get().to_string() step=step.to_string()
                prop:value=move || value.get().to_string()
                on:input=move |ev| {
                    if let Ok(v) = event_target_value(&ev).parse::<u32>() {
                        value.set(v);
                    }
                }/>
            <output id=format!("{id}-value")>{move || value.get().to_string()}</output>
        </label>
    }
}

fn result_view(o: OccupancyOutput) -> impl IntoView {
    let limiters = o
        .limiters
        .iter()
        .map(|l| l.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let opt = |v: Option<u32>| {
        v.map(|b| b.to_string())
            .unwrap_or_else(|| "no limit".into())
    };
    let notes = o
        .notes
        .into_iter()
        .map(|n| view! { <li>{n}</li> })
        .collect_view();
    view! {
        <div id="occ-result" class="card">
            <p class="big"><span id="occ-pct">{format!("{:.1} %", o.occupancy_pct)}</span>" theoretical occupancy"</p>
            <table>
                <tbody>
                    <tr><th>"active blocks / SM"</th><td id="occ-blocks" class="num">{o.active_blocks_per_sm}</td></tr>
                    <tr><th>"active warps / SM"</th><td id="occ-warps" class="num">{format!("{} of {}", o.active_warps_per_sm, o.max_warps_per_sm)}</td></tr>
                    <tr><th>"limited by"</th><td id="occ-limiter">{limiters}</td></tr>
                    <tr><th>"blocks allowed by warps · registers · shared memory · max blocks"</th>
                        <td class="num">{format!("{} · {} · {} · {}", o.blocks_by_warps, opt(o.blocks_by_registers), opt(o.blocks_by_shared_memory), o.blocks_by_max_blocks)}</td></tr>
                    <tr><th>"registers per block"</th><td class="num">{o.registers_per_block}</td></tr>
                    <tr><th>"shared memory per block (allocated)"</th><td class="num">{format!("{} B", o.shared_memory_per_block)}</td></tr>
                </tbody>
            </table>
            <ul class="notes">{notes}</ul>
        </div>
    }
}

#[component]
fn Calculator() -> impl IntoView {
    let cc = RwSignal::new("9.0".to_string());
    let threads = RwSignal::new(256u32);
    let regs = RwSignal::new(32u32);
    let smem = RwSignal::new(0u32);
    let limits: Memo<Result<GpuLimits, String>> = Memo::new(move |_| {
        parse_cc(&cc.get())
            .and_then(|(a, b)| GpuLimits::for_cc(a, b))
            .map_err(|e| e.to_string())
    });
    let smem_max = Signal::derive(move || {
        limits
            .get()
            .map(|l| l.max_shared_memory_per_block_optin)
            .unwrap_or(48 * 1024)
    });
    let regs_max = Signal::derive(move || {
        limits
            .get()
            .map(|l| l.max_registers_per_thread)
            .unwrap_or(255)
    });
    let threads_max = Signal::derive(move || {
        limits
            .get()
            .map(|l| l.max_threads_per_block)
            .unwrap_or(1024)
    });
    let input = move || OccupancyInput {
        threads_per_block: threads.get(),
        registers_per_thread: regs.get(),
        shared_mem_per_block: smem.get().min(smem_max.get()),
        carveout_pct: None,
    };
    let result: Memo<Result<OccupancyOutput, String>> = Memo::new(move |_| {
        let l = limits.get()?;
        occupancy(&l, &input()).map_err(|e| e.to_string())
    });
    let canvas = NodeRef::<Canvas>::new();
    let chart_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let (Some(c), Ok(l)) = (canvas.get(), limits.get()) else {
            return;
        };
        let inp = input();
        let points: Vec<(f64, f64)> = sweep_block_size(&l, &inp)
            .into_iter()
            .map(|p| (p.x as f64, p.occupancy_pct))
            .collect();
        let marker = result
            .get()
            .ok()
            .map(|o| (inp.threads_per_block as f64, o.occupancy_pct));
        let series = [Series {
            name: "occupancy".into(),
            color: COLORS[0],
            points,
        }];
        let title = format!(
            "Occupancy vs block size (sm_{}, {} registers/thread, {} B shared/block)",
            l.sm_name().trim_start_matches("sm_"),
            inp.registers_per_thread,
            inp.shared_mem_per_block
        );
        let r = charts::line_chart(
            c,
            &LineChart {
                title: &title,
                x_desc: "threads per block",
                y_desc: "occupancy (%)",
                series: &series,
                marker,
                y_range: Some((0.0, 105.0)),
            },
        );
        chart_error.set(r.err());
    });
    let ccs = SUPPORTED_COMPUTE_CAPABILITIES
        .iter()
        .map(|(a, b)| {
            let v = format!("{a}.{b}");
            view! { <option value=v.clone() selected=v == "9.0">{format!("{v} (sm_{a}{b})")}</option> }
        })
        .collect_view();
    view! {
        <section id="calculator">
            <h3>"Occupancy calculator"</h3>
            <p>"How many warps of a kernel fit on one streaming multiprocessor, and which resource stops more — the driver's calculation, run in your browser."</p>
            <div class="controls">
                <label for="cc">"compute capability "
                    <select id="cc" on:change=move |ev| cc.set(event_target_value(&ev))>{ccs}</select>
                </label>
                {slider("threads", "threads per block", threads, 32, threads_max, 32)}
                {slider("registers", "registers per thread", regs, 0, regs_max, 1)}
                {slider("shared", "shared memory per block (bytes)", smem, 0, smem_max, 512)}
            </div>
            {move || match result.get() {
                Ok(o) => result_view(o).into_any(),
                Err(e) => view! { <p class="error">{e}</p> }.into_any(),
            }}
            <canvas id="occ-chart" node_ref=canvas width="760" height="320"></canvas>
            {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
        </section>
    }
}

fn value_text(v: &MetricValue, unit: &str) -> String {
    match v {
        MetricValue::Number(n) => {
            let s = if n.fract() == 0.0 && n.abs() < 1e15 {
                format!("{n:.0}")
            } else {
                format!("{n:.2}")
            };
            if unit.is_empty() {
                s
            } else {
                format!("{s} {unit}")
            }
        }
        MetricValue::Text(t) => t.clone(),
    }
}

#[component]
fn PanelView(panel: Panel) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let chart = panel.chart.clone();
    let chart_error = RwSignal::new(None::<String>);
    let has_chart = chart.as_ref().is_some_and(|c| !c.bars.is_empty());
    let height = chart.as_ref().map(|c| 40 + 24 * c.bars.len()).unwrap_or(0);
    Effect::new(move |_| {
        if let (Some(c), Some(spec)) = (canvas.get(), chart.as_ref()) {
            let bars: Vec<(String, f64)> = spec
                .bars
                .iter()
                .map(|b| (b.label.clone(), b.value))
                .collect();
            let r = charts::bar_chart(c, &spec.title, &spec.unit, spec.max, &bars);
            chart_error.set(r.err());
        }
    });
    let rows = panel
        .metrics
        .iter()
        .map(|m| {
            view! {
                <tr><td title=m.name.clone()>{m.label.clone()}</td><td class="num">{value_text(&m.value, &m.unit)}</td></tr>
            }
        })
        .collect_view();
    let rules = panel
        .rules
        .iter()
        .map(|r| {
            let speedup = r
                .speedup
                .map(|s| format!(" (est. speedup {s:.1} %)"))
                .unwrap_or_default();
            view! {
                <li><span class=format!("rule {}", r.rule_type.to_ascii_lowercase())>{r.rule_type.clone()}</span>
                    " " <strong>{r.name.clone()}</strong> {speedup} ": " {r.description.clone()}</li>
            }
        })
        .collect_view();
    view! {
        <article class="panel card" id=format!("panel-{}", panel.id)>
            <h4>{panel.title.clone()}</h4>
            <p class="narrative">{panel.narrative.clone()}</p>
            <table class="metrics"><tbody>{rows}</tbody></table>
            {has_chart.then(|| view! { <canvas node_ref=canvas width="760" height=height.to_string()></canvas> })}
            {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
            <ul class="rules">{rules}</ul>
        </article>
    }
}

#[component]
fn NcuImport() -> impl IntoView {
    let report: RwSignal<Option<Result<(String, NcuReport), String>>> = RwSignal::new(None);
    let kernel = RwSignal::new(0usize);
    let on_file = move |ev: leptos::ev::Event| {
        let Some(input) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
        else {
            return;
        };
        let Some(file) = input.files().and_then(|f| f.get(0)) else {
            return;
        };
        leptos::task::spawn_local(async move {
            let name = file.name();
            let text = JsFuture::from(file.text()).await;
            let r = match text.ok().and_then(|t| t.as_string()) {
                None => Err(format!("cannot read {name} as text")),
                Some(t) => import_str(&t)
                    .map(|rep| (name.clone(), rep))
                    .map_err(|e| format!("{name}: {e}")),
            };
            kernel.set(0);
            report.set(Some(r));
        });
    };
    let panels: Memo<Option<(String, Vec<Panel>)>> = Memo::new(move |_| {
        let i = kernel.get();
        report.with(|r| {
            let (_, rep) = r.as_ref()?.as_ref().ok()?;
            let k = rep.kernels.get(i)?;
            Some((k.name.clone(), build_panels(k)))
        })
    });
    let header = move || {
        report.get().map(|r| match r {
            Err(e) => view! { <p class="error" id="ncu-error">{e}</p> }.into_any(),
            Ok((name, rep)) => {
                let options = rep
                    .kernels
                    .iter()
                    .enumerate()
                    .map(|(i, k)| {
                        view! {
                            <option value=i.to_string()>
                                {format!("#{} {} — block ({}, {}, {}), grid ({}, {}, {})", k.id, k.short_name,
                                    k.block[0], k.block[1], k.block[2], k.grid[0], k.grid[1], k.grid[2])}
                            </option>
                        }
                    })
                    .collect_view();
                let warnings = rep
                    .warnings
                    .iter()
                    .map(|w| view! { <li>{w.clone()}</li> })
                    .collect_view();
                view! {
                    <p id="ncu-summary">{format!("{name}: {} kernel(s), {:?} page", rep.kernels.len(), rep.format)}</p>
                    <label for="kernel">"kernel "
                        <select id="kernel" prop:value=move || kernel.get().to_string()
                            on:change=move |ev| {
                                if let Ok(i) = event_target_value(&ev).parse() {
                                    kernel.set(i);
                                }
                            }>{options}</select>
                    </label>
                    <ul class="warnings">{warnings}</ul>
                }
                .into_any()
            }
        })
    };
    view! {
        <section id="ncu">
            <h3>"Nsight Compute import"</h3>
            <p>"Export a profile with " <code>"ncu --csv --page details --import report.ncu-rep > report.csv"</code>
               " and open it here; it is parsed in your browser and never leaves it."</p>
            <input type="file" id="ncu-file" accept=".csv,text/csv" on:change=on_file/>
            {header}
            {move || panels.get().map(|(name, ps)| view! {
                <p class="kernel-name" id="kernel-name">{name}</p>
                <div id="panels">
                    {ps.into_iter().map(|p| view! { <PanelView panel=p/> }).collect_view()}
                </div>
            })}
        </section>
    }
}
