//! Act III – The Kernel Reveal: what this machine is (the doctor's GPU, or none); our kernel
//! registry (compiled into the app from the `kernels` crate: families, entry points, dtypes,
//! the CUDA source), and each family's compiled facts from the compute service (NVRTC +
//! cuobjdump where it runs: registers, shared and local memory, occupancy and its limiter,
//! `mma` in the PTX and `HMMA` in the SASS) for this GPU's architecture by default; the
//! sources highlighted at build time; and the live lab, run on this machine: the kernels'
//! checks and throughput, the convolution ladder, inference latency and a training step's
//! anatomy (the first three beside the committed H200 reference), with the PyTorch peer's
//! setting.

use kernels::highlight::{render_spans, Span};
use leptos::prelude::*;
use showdown_core::kernel_panel::{is_ptx_tensor_core_line, is_sass_tensor_core_line, KernelFacts};
use showdown_core::protocol::KernelFactsRequest;

use crate::bridge;
use crate::loading::act;

mod dom;
mod lab;
mod lab_anatomy;
mod lab_crossover;
mod lab_infer;
mod lab_kernels;
mod lab_ladder;
mod peer;
mod results;
mod section;

use section::Lab;

/// A family's highlighted tokens: (family name, its source's [`Span`]s).
pub type FamilyTokens = (&'static str, &'static [Span]);

// `HIGHLIGHT_TOKENS`, written by build.rs (`kernels::highlight::spans`) from the same registry.
include!(concat!(env!("OUT_DIR"), "/kernel_sources.rs"));

/// The highlighted HTML of `family`'s source, from the build-time tokens; `None` if they do not
/// fit the source (then the page shows plain text).
pub fn highlighted_source(family: &kernels::KernelFamily) -> Option<String> {
    let (_, tokens) = HIGHLIGHT_TOKENS
        .iter()
        .find(|(name, _)| *name == family.name)?;
    render_spans(family.source, tokens)
}

/// The source of `family` in a `<pre>`: the build-time highlighted HTML, or the plain text.
fn source_view(family: &'static kernels::KernelFamily) -> impl IntoView {
    match highlighted_source(family) {
        // Trusted HTML: our own kernel source compiled into the app, classified at build time by
        // build.rs, every source character HTML-escaped by `render_spans`; nothing from the
        // service or the user reaches it. This is the only `inner_html` on the page.
        Some(html) => view! { <pre class="source hl" inner_html=html></pre> }.into_any(),
        None => view! { <pre class="source">{family.source}</pre> }.into_any(),
    }
}

/// `lines` (PTX or SASS from the service) as text, one element per line, the tensor-core
/// instructions marked by class. Never HTML: the text comes from the service.
fn asm_excerpt(title: &'static str, lines: Vec<String>, is_tc: fn(&str) -> bool) -> impl IntoView {
    let marked = lines.iter().filter(|l| is_tc(l)).count();
    let body = lines
        .into_iter()
        .map(|l| {
            let tc = is_tc(&l);
            view! { <span class="asm-line" class:tensor-core=tc>{l}</span> }
        })
        .collect_view();
    view! {
        <div class="asm">
            <p class="muted">{format!("{title}: {marked} tensor-core instruction(s) in this excerpt")}</p>
            <pre class="asm-excerpt">{body}</pre>
        </div>
    }
}

fn facts_table(facts: Vec<KernelFacts>) -> impl IntoView {
    let rows = facts
        .into_iter()
        .map(|mut f| {
            let ptx = std::mem::take(&mut f.ptx_excerpt);
            let sass = std::mem::take(&mut f.sass_excerpt);
            let excerpt = (!ptx.is_empty() || !sass.is_empty()).then(|| {
                view! {
                    <tr class="excerpt" data-excerpt-of=f.entry.clone()>
                        <td colspan="9">
                            <details>
                                <summary>{format!("{}: PTX and SASS around the first tensor-core instruction", f.entry)}</summary>
                                {(!ptx.is_empty()).then(|| asm_excerpt("PTX", ptx, is_ptx_tensor_core_line))}
                                {(!sass.is_empty()).then(|| asm_excerpt("SASS", sass, is_sass_tensor_core_line))}
                            </details>
                        </td>
                    </tr>
                }
            });
            let limiter = f
                .occupancy
                .limiters
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let hmma = f.sass_tensor_core_instructions.unwrap_or(0);
            view! {
                <tr data-entry=f.entry.clone() class:tensor-core={hmma > 0}>
                    <td><code>{f.entry.clone()}</code></td>
                    <td class="num">{f.resources.registers}</td>
                    <td class="num">{f.resources.static_shared_bytes}</td>
                    <td class="num">{f.resources.local_bytes}</td>
                    <td class="num">{format!("{:.1}", f.occupancy.occupancy_pct)}</td>
                    <td>{limiter}</td>
                    <td class="num">{f.ptx_tensor_core_instructions}</td>
                    <td class="num hmma">{f.sass_tensor_core_instructions.map_or("—".to_string(), |n| n.to_string())}</td>
                    <td class="num">{f.sass_instructions.map_or("—".to_string(), |n| n.to_string())}</td>
                </tr>
                {excerpt}
            }
        })
        .collect_view();
    view! {
        <table class="facts">
            <thead><tr>
                <th>"entry point"</th><th>"registers"</th><th>"static smem B"</th><th>"local B"</th>
                <th>"occupancy %"</th><th>"limiter"</th><th>"PTX mma"</th><th>"SASS HMMA"</th><th>"SASS instr."</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// The architectures the facts offer besides this GPU's: value and label.
const ARCHES: [(&str, &str); 3] = [
    ("sm_90", "sm_90 (H100)"),
    ("sm_80", "sm_80 (A100)"),
    ("sm_89", "sm_89 (L4, RTX 40)"),
];

/// `sm_XY` of compute capability `X.Y` (`9.0` → `sm_90`, `12.0` → `sm_120`).
fn sm_of(cc: &str) -> Option<String> {
    let digits: String = cc.chars().filter(char::is_ascii_digit).collect();
    (!digits.is_empty() && cc.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .then(|| format!("sm_{digits}"))
}

/// The rungs of a ladder family (`ol.rungs`, one `li[data-rung]` each): what each does, its
/// storage and its entry points, from the registry.
fn rungs_view(family: &'static kernels::KernelFamily) -> impl IntoView {
    (!family.rungs.is_empty()).then(|| {
        let items = family
            .rungs
            .iter()
            .map(|r| {
                let entries = if r.entries.is_empty() {
                    String::new()
                } else {
                    format!(" · {}", r.entries.join(", "))
                };
                view! {
                    <li data-rung=r.number.to_string()>
                        <strong>{format!("Rung {}: ", r.number)}</strong>
                        {r.what}
                        <span class="muted">{format!(" ({}){entries}", r.dtypes)}</span>
                    </li>
                }
            })
            .collect_view();
        view! {
            <p class="rungs-title">{format!("The {} rungs:", family.rungs.len())}</p>
            <ol class="rungs">{items}</ol>
        }
    })
}

/// A family's card; its facts compile for `this_arch` (this GPU's) until the user picks
/// another architecture, else for sm_90. `facts_off` says why the facts cannot be had on the
/// compute service's machine (no NVRTC), which disables the button.
fn family_card(
    family: &'static kernels::KernelFamily,
    this_arch: Memo<Option<String>>,
    facts_off: Memo<Option<String>>,
) -> impl IntoView {
    let facts = act(|request: &KernelFactsRequest| bridge::call(request.clone()));
    let busy = facts.pending();
    let chosen = RwSignal::new(None::<String>);
    let arch = move || {
        chosen
            .get()
            .or_else(|| this_arch.get())
            .unwrap_or_else(|| "sm_90".into())
    };
    let options = move || {
        let mut list: Vec<(String, String)> = ARCHES
            .iter()
            .map(|(v, l)| (v.to_string(), l.to_string()))
            .collect();
        if let Some(a) = this_arch.get() {
            let label = format!("{a} (this GPU)");
            match list.iter_mut().find(|(v, _)| *v == a) {
                Some(o) => o.1 = label,
                None => list.insert(0, (a, label)),
            }
        }
        let current = arch();
        list.into_iter()
            .map(|(v, label)| {
                let selected = v == current;
                view! { <option value=v selected=selected>{label}</option> }
            })
            .collect_view()
    };
    let entries = family
        .entry_points()
        .into_iter()
        .map(|e| {
            let tc = family.is_tensor_core(&e);
            view! { <li class:tensor-core=tc><code>{e}</code>{tc.then_some(" · tensor cores")}</li> }
        })
        .collect_view();
    let load = move |_| {
        let request = KernelFactsRequest {
            name: family.name.to_string(),
            arch: chosen
                .get_untracked()
                .or_else(|| this_arch.get_untracked())
                .unwrap_or_else(|| "sm_90".into()),
            threads: 256,
        };
        facts.dispatch(request);
    };
    view! {
        <article class="card family" data-family=family.name>
            <h3>{family.name} ".cu"</h3>
            <p>{family.summary}</p>
            <p class="muted family-meta">{format!("dtypes: {} · {} lines of CUDA C", family.card_dtypes().join(", "), family.source.lines().count())}</p>
            {rungs_view(family)}
            <details><summary>{format!("{} entry points", family.entry_points().len())}</summary><ul class="entries">{entries}</ul></details>
            <details><summary>"source"</summary>{source_view(family)}</details>
            <p>
                <select class="arch" on:change=move |ev| chosen.set(Some(event_target_value(&ev)))>{options}</select>
                " "
                <button class="facts-button" on:click=load
                    disabled=move || busy.get() || facts_off.with(Option::is_some)
                    title=move || facts_off.get().unwrap_or_default()>"Compile and read the facts"</button>
                {move || busy.get().then_some(view! { <span class="muted">" compiling with NVRTC…"</span> })}
            </p>
            {move || facts_off.get().map(|why| view! { <p class="muted facts-off">{why}</p> })}
            {move || match facts.value().get() {
                None => ().into_any(),
                Some(Ok(f)) => facts_table(f).into_any(),
                Some(Err(e)) => view! { <p class="error">{format!("No facts: {}", e.message)}</p> }.into_any(),
            }}
        </article>
    }
}

/// The sentence the machine bar says without a GPU.
const NO_GPU: &str = "no GPU: the CPU rows run; a GPU adds the kernel timings, the tensor-core rungs, inference latency and the per-kernel step anatomy";

/// "This machine": the doctor's GPU (name, compute capability) or the no-GPU sentence.
fn machine_bar(lab: Lab) -> impl IntoView {
    let body = move || {
        match lab.doctor.get() {
        None => view! { <span class="muted">"asking the compute service…"</span> }.into_any(),
        Some(Err(e)) => view! { <span class="error">{format!("the compute service did not answer: {e}")}</span> }
            .into_any(),
        Some(Ok(d)) => {
            let usable = d.auto_backend == "cuda";
            let gpu = match d.gpus.first() {
                Some(g) if usable => format!(
                    "{} · compute capability {} ({}) · {:.0} GB · {} SMs",
                    g.name,
                    g.compute_capability,
                    sm_of(&g.compute_capability).unwrap_or_default(),
                    g.memory_bytes as f64 / 1e9,
                    g.sms
                ),
                Some(g) => format!("{} found, but not usable here; {NO_GPU}", g.name),
                None => NO_GPU.to_string(),
            };
            view! {
                <span class="machine-cpu">{format!("{} · {} cores", d.cpu, d.cores)}</span>
                " · "
                <span class="machine-gpu" class:no-gpu=!usable>{gpu}</span>
                <span class="muted machine-reason">{format!(" ({})", d.auto_reason)}</span>
            }
            .into_any()
        }
    }
    };
    view! {
        <section id="this-machine" class="card">
            <strong>"This machine: "</strong>{body}
        </section>
    }
}

/// The Act III page.
#[component]
pub fn KernelsPage() -> impl IntoView {
    let lab = Lab::new();
    let this_arch = Memo::new(move |_| lab.gpu_info().and_then(|g| sm_of(&g.compute_capability)));
    let facts_off = Memo::new(move |_| {
        lab.doctor.with(|d| match d {
            Some(Ok(d)) => showdown_core::lab::facts_unavailable(d),
            _ => None,
        })
    });
    let cards = kernels::FAMILIES
        .iter()
        .map(|f| family_card(f, this_arch, facts_off))
        .collect_view();
    view! {
        <h2>"Act III · The Kernel Reveal"</h2>
        {machine_bar(lab)}
        <p>
            "Every kernel the lab runs, as compiled into it: the training step (with the FP16/BF16 convolutions on tensor cores), "
            "the activations and the norms, the convolution ladder's five rungs and the inference path. The facts are read from the compiled code: NVRTC builds each family for the chosen "
            "architecture (the service's GPU's by default) where the compute service runs, cuobjdump reads the resources and the SASS, and "
            "the occupancy calculator of Act IV gives the occupancy at 256 threads per block. Strict FP32 never issues a "
            "tensor-core instruction; a CI test checks the SASS for HMMA on both sides."
        </p>
        <div id="kernel-families">{cards}</div>
        <h3 id="lab-title">"The lab, on this machine"</h3>
        <p>
            "Each job below runs on the machine of the compute service, one at a time, and is kept in the run history. "
            <span id="lab-reference-scope">
                "In the kernel lab, the convolution ladder and inference, the grey column and bars are the lab's committed run on an NVIDIA H200 ("
                {results::RUN_DATE}
                "): a reference for scale, not this machine's numbers. The step anatomy has no reference run: its numbers are this machine's only."
            </span>
        </p>
        {peer::panel(lab)}
        {lab::section_view(lab, &lab_kernels::SECTION)}
        {lab::section_view(lab, &lab_ladder::SECTION)}
        {lab::section_view(lab, &lab_infer::SECTION)}
        {lab::section_view(lab, &lab_anatomy::SECTION)}
    }
}

/// Act II's last section, "When does each precision pay?" (the precision crossover job, with
/// its own lab state); each finished job bumps `refresh`, so the run history lists it.
pub fn crossover_section(refresh: RwSignal<u32>) -> impl IntoView {
    let lab = Lab::new();
    Effect::new(move |was: Option<bool>| {
        let now = lab.running.get();
        if was == Some(true) && !now {
            refresh.update(|n| *n = n.wrapping_add(1));
        }
        now
    });
    lab::section_view(lab, &lab_crossover::SECTION)
}

/// Draws saved lab run `run` into `slot` as its Act III section draws a live result (the same
/// tables, charts and downloads, from the section's own `show`, said to come from the saved
/// run; no Profile buttons), for the run history; the listeners to keep while it is shown, or
/// why it cannot be drawn.
pub fn render_saved_lab_run(
    run: &showdown_core::lab::LabRun,
    slot: &web_sys::Element,
    error: RwSignal<Option<String>>,
) -> Result<dom::Listeners, String> {
    let value = serde_json::to_value(&run.report).map_err(|e| e.to_string())?;
    let section: &'static section::Section = match run.report.kind() {
        "kernels" => &lab_kernels::SECTION,
        "ladder" => &lab_ladder::SECTION,
        "inference" => &lab_infer::SECTION,
        "crossover" => &lab_crossover::SECTION,
        _ => &lab_anatomy::SECTION,
    };
    let inner = value
        .get("report")
        .map(|r| r.to_string())
        .ok_or_else(|| "the saved report is empty".to_string())?;
    let origin = showdown_core::lab::RunOrigin::Saved {
        id: run.id.clone(),
        saved_at: run.saved_at,
    };
    let blocks = (section.show)(&inner, &origin)?;
    // A lab that asks nothing of the service: it only carries the Profile buttons' state,
    // which a saved run does not show.
    let quiet = Lab::quiet();
    let target = dom::Target {
        lab: quiet,
        section: section.id,
        error,
        gpu: false,
    };
    dom::render(&target, slot, None, &blocks).map_err(|e| bridge::js_text(&e))
}
