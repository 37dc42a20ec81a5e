//! Act IV's occupancy calculator: sliders with number fields, the result and the block-size
//! sweep, opened on this machine's GPU or on a kernel's launch ("open in the calculator").

use super::*;

/// A kernel's launch sent to the calculator from an occupancy panel ("open in the
/// calculator"): the page's calculator takes it over.
#[derive(Clone, Copy)]
pub(super) struct CalculatorRequest(pub(super) RwSignal<Option<CalculatorLaunch>>);

/// A slider with a number field beside it, both on `value`: the slider moves in `step`s, the
/// field takes any whole number in `min..=max` (100 threads stays 100). Text the field cannot
/// take (`-5`, `abc`, above the maximum) is kept in the field, marked, and said in `invalid`
/// (the page shows it instead of results for the old value); the slider clears it.
#[allow(clippy::too_many_arguments)]
pub(super) fn slider(
    id: &'static str,
    what: &'static str,
    label: Signal<String>,
    value: RwSignal<u32>,
    min: u32,
    max: Signal<u32>,
    step: u32,
    invalid: RwSignal<Option<String>>,
) -> impl IntoView {
    view! {
        <label class="slider" for=id>
            <span id=format!("{id}-label")>{move || label.get()}</span>
            <input type="range" id=id min=min.to_string() max=move || max.get().to_string() step=step.to_string()
                prop:value=move || value.get().to_string()
                on:input=move |ev| {
                    if let Ok(v) = event_target_value(&ev).parse::<u32>() {
                        invalid.set(None);
                        value.set(v);
                    }
                }/>
            <input type="number" id=format!("{id}-number") class="slider-number" min=min.to_string()
                max=move || max.get().to_string() step="1" aria-label=what
                class:invalid=move || invalid.get().is_some()
                aria-invalid=move || invalid.get().is_some().then_some("true")
                prop:value=move || value.get().to_string()
                on:change=move |ev| {
                    match parse_field(&event_target_value(&ev), what, min, max.get_untracked()) {
                        Ok(v) => {
                            invalid.set(None);
                            value.set(v);
                        }
                        Err(e) => invalid.set(Some(e.to_string())),
                    }
                }/>
            <output id=format!("{id}-value")>{move || value.get().to_string()}</output>
            {move || invalid.get().map(|e| view! { <span class="field-error" id=format!("{id}-error")>{e}</span> })}
        </label>
    }
}

/// Bytes with their size in KiB, as CUDA quotes shared memory (`5,120 B (5 KiB)`).
fn kib(bytes: u32) -> String {
    let k = f64::from(bytes) / 1024.0;
    let k = if k.fract() == 0.0 {
        format!("{k:.0}")
    } else {
        format!("{k:.2}")
    };
    format!(
        "{} B ({k} KiB)",
        showdown_core::format::thousands(u64::from(bytes))
    )
}

/// The calculator's results for a valid launch.
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
                        <td class="num" id="occ-limits">{format!("{} · {} · {} · {}", o.blocks_by_warps, opt(o.blocks_by_registers), opt(o.blocks_by_shared_memory), o.blocks_by_max_blocks)}</td></tr>
                    <tr><th>"registers per block"</th><td class="num">{o.registers_per_block}</td></tr>
                    <tr><th>"shared memory per block (allocated)"</th><td class="num" id="occ-smem">{kib(o.shared_memory_per_block)}</td></tr>
                    <tr><th>"shared-memory carveout per SM (used)"</th><td class="num" id="occ-carveout">{kib(o.carveout_bytes)}</td></tr>
                </tbody>
            </table>
            <ul class="notes" id="occ-notes">{notes}</ul>
        </div>
    }
}

/// What the doctor said of this machine's GPU, for the calculator's first compute capability.
#[derive(Clone, PartialEq)]
enum ThisGpu {
    /// A GPU the calculator knows: its name and compute capability (`9.0`).
    Known(String, String),
    /// A GPU outside the calculator's table: its name and compute capability as reported.
    Unknown(String, String),
    /// No GPU on this machine.
    None,
    /// The doctor could not be asked.
    Failed(String),
}

/// The line beside the compute-capability picker, for the capability `cc` now chosen: which
/// GPU it is, or that 9.0 is an example only while 9.0 is what is shown.
fn cc_note(gpu: &ThisGpu, cc: &str) -> String {
    match gpu {
        ThisGpu::Known(name, v) if v == cc => {
            format!("this machine's GPU: {name} (compute capability {v})")
        }
        ThisGpu::Known(name, v) => format!(
            "showing compute capability {cc}; this machine's GPU is {name} (compute capability {v})"
        ),
        ThisGpu::Unknown(name, v) if cc == "9.0" => format!(
            "this machine's GPU, {name} (compute capability {v}), is not in the calculator's \
             table: showing 9.0 (H100) instead"
        ),
        ThisGpu::Unknown(name, v) => format!(
            "showing compute capability {cc}; this machine's GPU, {name} (compute capability \
             {v}), is not in the calculator's table"
        ),
        ThisGpu::None if cc == "9.0" => {
            "no GPU on this machine: 9.0 (H100) is shown as an example".into()
        }
        ThisGpu::None => format!("no GPU on this machine: showing compute capability {cc}"),
        ThisGpu::Failed(e) if cc == "9.0" => {
            format!("the machine could not be asked for its GPU ({e}): showing 9.0")
        }
        ThisGpu::Failed(e) => {
            format!("the machine could not be asked for its GPU ({e}): showing {cc}")
        }
    }
}

/// Asks the doctor for this machine's GPU and opens the calculator on it when it knows it.
fn this_gpu(cc: RwSignal<String>) -> RwSignal<Option<ThisGpu>> {
    let gpu = RwSignal::new(None::<ThisGpu>);
    let doctor = crate::loading::load(crate::bridge::doctor);
    Effect::new(move |_| {
        let Some(answer) = doctor.get() else {
            return;
        };
        let found = match answer {
            Ok(d) => match d.gpus.first() {
                Some(g) => match parse_cc(&g.compute_capability)
                    .and_then(|(a, b)| GpuLimits::for_cc(a, b).map(|_| format!("{a}.{b}")))
                {
                    Ok(v) => {
                        cc.set(v.clone());
                        ThisGpu::Known(g.name.clone(), v)
                    }
                    Err(_) => ThisGpu::Unknown(g.name.clone(), g.compute_capability.clone()),
                },
                None => ThisGpu::None,
            },
            Err(e) => ThisGpu::Failed(e.to_string()),
        };
        gpu.set(Some(found));
    });
    gpu
}

/// The carveout picker: the driver's choice (the largest) or one of the capability's options,
/// and why the calculator's shared-memory block count can differ from Nsight Compute's.
fn carveout_control(
    limits: Memo<Result<GpuLimits, String>>,
    carveout_kb: RwSignal<Option<u32>>,
    input: Signal<OccupancyInput>,
) -> impl IntoView {
    let options = move || {
        let Ok(l) = limits.get() else {
            return Vec::new().into_iter().collect_view();
        };
        let largest = l.max_shared_memory_per_sm / 1024;
        let mut list = vec![(
            String::new(),
            format!("driver's choice: the largest, {largest} KiB"),
        )];
        if l.has_carveout() {
            list.extend(
                l.carveout_options_kb
                    .iter()
                    .map(|kb| (kb.to_string(), format!("{kb} KiB"))),
            );
        }
        list.into_iter()
            .map(|(v, text)| {
                let chosen = v.clone();
                view! { <option value=v selected=move || carveout_kb.get().map(|k| k.to_string()).unwrap_or_default() == chosen>{text}</option> }
            })
            .collect_view()
    };
    let why = move || {
        let l = limits.get().ok()?;
        match carveout_kb.get() {
            None => carveout_explanation(&l, &input.get()),
            Some(kb) => Some(format!(
                "Shared memory is counted against a {kb} KiB carveout per SM: what a launch \
                 preferring it runs with, and what Nsight Compute's \"Block Limit Shared Mem\" \
                 counts against when its \"Shared Memory Configuration Size\" is {kb} KiB."
            )),
        }
    };
    view! {
        <label for="carveout">"shared-memory carveout per SM "
            <select id="carveout"
                prop:value=move || carveout_kb.get().map(|k| k.to_string()).unwrap_or_default()
                disabled=move || limits.get().map(|l| !l.has_carveout()).unwrap_or(true)
                on:change=move |ev| carveout_kb.set(event_target_value(&ev).parse().ok())>
                {options}
            </select>
        </label>
        <p id="carveout-why" class="muted field-note">{why}</p>
    }
}

#[component]
pub(super) fn Calculator() -> impl IntoView {
    let cc = RwSignal::new("9.0".to_string());
    // This GPU first: the calculator opens on the device's compute capability (the doctor's
    // first GPU) when the calculator knows it; without a GPU it says its default is an example
    // while the example is what is shown.
    let gpu = this_gpu(cc);
    let note = move || {
        gpu.get()
            .map(|g| cc_note(&g, &cc.get()))
            .unwrap_or_default()
    };
    let threads = RwSignal::new(256u32);
    let regs = RwSignal::new(32u32);
    let smem = RwSignal::new(0u32);
    let carveout_kb = RwSignal::new(None::<u32>);
    let bad = [
        RwSignal::new(None::<String>),
        RwSignal::new(None::<String>),
        RwSignal::new(None::<String>),
    ];
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
    let smem_label = Signal::derive(move || match limits.get() {
        Ok(l) => format!("shared memory per block ({})", l.shared_memory_label()),
        Err(_) => "shared memory per block (bytes)".into(),
    });
    // A new compute capability clamps what exceeds its limits, in the controls themselves, so
    // no label shows a value the calculation no longer uses (99,840 B on a 5.0 device), and
    // drops a carveout it does not offer.
    Effect::new(move |_| {
        let (t, r, m) = (threads_max.get(), regs_max.get(), smem_max.get());
        threads.update(|v| *v = (*v).clamp(32, t.max(32)));
        regs.update(|v| *v = (*v).min(r));
        smem.update(|v| *v = (*v).min(m));
        if let Ok(l) = limits.get() {
            let offered = carveout_kb
                .get_untracked()
                .is_none_or(|kb| l.has_carveout() && l.carveout_options_kb.contains(&kb));
            if !offered {
                carveout_kb.set(None);
            }
        }
    });
    // "Open in the calculator" from an occupancy panel: that kernel's launch, with the carveout
    // it ran with (ncu's "Shared Memory Configuration Size").
    if let Some(CalculatorRequest(asked)) = use_context::<CalculatorRequest>() {
        Effect::new(move |_| {
            let Some(l) = asked.get() else { return };
            let known = parse_cc(&l.cc).and_then(|(a, b)| GpuLimits::for_cc(a, b));
            if let Ok(lim) = &known {
                cc.set(l.cc.clone());
                let option = l.carveout_bytes.and_then(|b| {
                    lim.carveout_pct_for(b)?;
                    lim.carveout_options_kb
                        .iter()
                        .copied()
                        .find(|kb| (kb * 1024).abs_diff(b) <= 512)
                });
                carveout_kb.set(option);
            }
            for b in bad {
                b.set(None);
            }
            threads.set(l.threads);
            regs.set(l.registers);
            smem.set(l.shared_bytes);
        });
    }
    let input = Signal::derive(move || OccupancyInput {
        threads_per_block: threads.get(),
        registers_per_thread: regs.get(),
        shared_mem_per_block: smem.get().min(smem_max.get()),
        carveout_pct: carveout_kb.get().and_then(|kb| {
            limits
                .get()
                .ok()
                .and_then(|l| l.carveout_pct_for(kb * 1024))
        }),
    });
    let invalid = move || bad.iter().filter_map(|b| b.get()).collect::<Vec<_>>();
    let result: Memo<Result<OccupancyOutput, String>> = Memo::new(move |_| {
        let l = limits.get()?;
        occupancy(&l, &input.get()).map_err(|e| e.to_string())
    });
    let canvas = NodeRef::<Canvas>::new();
    let chart_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let (Some(c), Ok(l)) = (canvas.get(), limits.get()) else {
            return;
        };
        let inp = input.get();
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
                <span id="cc-this-gpu" class="muted">{note}</span>
                {slider("threads", "threads per block", Signal::derive(|| "threads per block (a warp is 32)".to_string()), threads, 32, threads_max, 1, bad[0])}
                {slider("registers", "registers per thread", Signal::derive(|| "registers per thread".to_string()), regs, 0, regs_max, 1, bad[1])}
                {slider("shared", "shared memory per block", smem_label, smem, 0, smem_max, 512, bad[2])}
                {carveout_control(limits, carveout_kb, input)}
            </div>
            {move || {
                let wrong = invalid();
                if !wrong.is_empty() {
                    return view! {
                        <p class="error" id="occ-invalid">{format!("No result until the field is fixed: {}", wrong.join("; "))}</p>
                    }
                    .into_any();
                }
                match result.get() {
                    Ok(o) => result_view(o).into_any(),
                    Err(e) => view! { <p class="error">{e}</p> }.into_any(),
                }
            }}
            <canvas id="occ-chart" node_ref=canvas width="760" height="320"
                style:display=move || if invalid().is_empty() { "block" } else { "none" }></canvas>
            {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
        </section>
    }
}
