//! Act IV's occupancy calculator: sliders with number fields, the result and the block-size
//! sweep, opened on this machine's GPU or on a kernel's launch ("open in the calculator").

use super::*;

/// A kernel's launch sent to the calculator from an occupancy panel ("open in the
/// calculator"): the page's calculator takes it over.
#[derive(Clone, Copy)]
pub(super) struct CalculatorRequest(pub(super) RwSignal<Option<CalculatorLaunch>>);

/// A slider with a number field beside it, both on `value`: the slider moves in `step`s, the
/// field takes any whole number in `min..=max` (100 threads stays 100).
pub(super) fn slider(
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
            <input type="number" id=format!("{id}-number") class="slider-number" min=min.to_string()
                max=move || max.get().to_string() step="1" aria-label=label
                prop:value=move || value.get().to_string()
                on:change=move |ev| {
                    if let Ok(v) = event_target_value(&ev).trim().parse::<u64>() {
                        let top = u64::from(max.get_untracked());
                        value.set(v.clamp(u64::from(min), top) as u32);
                    }
                }/>
            <output id=format!("{id}-value")>{move || value.get().to_string()}</output>
        </label>
    }
}

pub(super) fn result_view(o: OccupancyOutput) -> impl IntoView {
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
pub(super) fn Calculator() -> impl IntoView {
    let cc = RwSignal::new("9.0".to_string());
    // This GPU first: the calculator opens on the device's compute capability (the doctor's
    // first GPU) when the calculator knows it; without a GPU it says its default is an example.
    let this_gpu = RwSignal::new(None::<String>);
    let doctor = crate::loading::load(crate::bridge::doctor);
    Effect::new(move |_| {
        let Some(answer) = doctor.get() else {
            return;
        };
        let note = match answer {
            Ok(d) => match d.gpus.first() {
                Some(g)
                    if parse_cc(&g.compute_capability)
                        .and_then(|(a, b)| GpuLimits::for_cc(a, b))
                        .is_ok() =>
                {
                    let v = parse_cc(&g.compute_capability)
                        .map(|(a, b)| format!("{a}.{b}"))
                        .unwrap_or_else(|_| g.compute_capability.clone());
                    cc.set(v.clone());
                    format!("this machine's GPU: {} (compute capability {v})", g.name)
                }
                Some(g) => format!(
                    "this machine's GPU, {} (compute capability {}), is not in the calculator's \
                     table: showing 9.0 (H100) instead",
                    g.name, g.compute_capability
                ),
                None => "no GPU on this machine: 9.0 (H100) is shown as an example".into(),
            },
            Err(e) => format!("the machine could not be asked for its GPU ({e}): showing 9.0"),
        };
        this_gpu.set(Some(note));
    });
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
    // A new compute capability clamps what exceeds its limits, in the controls themselves, so
    // no label shows a value the calculation no longer uses (99,840 B on a 5.0 device).
    Effect::new(move |_| {
        let (t, r, m) = (threads_max.get(), regs_max.get(), smem_max.get());
        threads.update(|v| *v = (*v).clamp(32, t.max(32)));
        regs.update(|v| *v = (*v).min(r));
        smem.update(|v| *v = (*v).min(m));
    });
    // "Open in the calculator" from an occupancy panel: that kernel's launch.
    if let Some(CalculatorRequest(asked)) = use_context::<CalculatorRequest>() {
        Effect::new(move |_| {
            let Some(l) = asked.get() else { return };
            if !l.cc.is_empty()
                && parse_cc(&l.cc)
                    .and_then(|(a, b)| GpuLimits::for_cc(a, b))
                    .is_ok()
            {
                cc.set(l.cc.clone());
            }
            threads.set(l.threads);
            regs.set(l.registers);
            smem.set(l.shared_bytes);
        });
    }
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
            let selected = v.clone();
            view! { <option value=v.clone() selected=move || cc.get() == selected>{format!("{v} (sm_{a}{b})")}</option> }
        })
        .collect_view();
    view! {
        <section id="calculator">
            <h3>"Occupancy calculator"</h3>
            <p>"How many warps of a kernel fit on one streaming multiprocessor, and which resource stops more — the driver's calculation, run in your browser."</p>
            <div class="controls">
                <label for="cc">"compute capability "
                    <select id="cc" prop:value=move || cc.get() on:change=move |ev| cc.set(event_target_value(&ev))>{ccs}</select>
                </label>
                <span id="cc-this-gpu" class="muted">{move || this_gpu.get().unwrap_or_default()}</span>
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
