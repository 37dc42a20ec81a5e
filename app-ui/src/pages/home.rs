//! Home / Doctor: the machine, its GPU and the CUDA pieces (where the kernels come from: the
//! embedded cubin or PTX, or NVRTC), or why the CPU backend is used; and the GPU at rest (one
//! NVML reading, refreshed on demand).

use leptos::prelude::*;
use showdown_core::lab::GpuState;
use showdown_core::protocol::GpuStateRequest;
use showdown_core::types::{DoctorReport, Probe};

use crate::bridge;
use crate::loading::{load, Loaded};

fn probe_row(name: &'static str, p: Probe) -> impl IntoView {
    view! {
        <tr>
            <th>{name}</th>
            <td class=if p.ok { "ok" } else { "bad" }>{if p.ok { "✔ usable" } else { "✘ not usable" }}</td>
            <td>{p.detail}</td>
        </tr>
    }
}

fn report_view(r: DoctorReport) -> impl IntoView {
    let gpus = if r.gpus.is_empty() {
        view! { <p>"No GPU found."</p> }.into_any()
    } else {
        let rows = r
            .gpus
            .into_iter()
            .map(|g| {
                view! {
                    <tr>
                        <td>{g.index}</td>
                        <td>{g.name}</td>
                        <td>{g.compute_capability}</td>
                        <td class="num">{format!("{:.1}", g.memory_bytes as f64 / (1u64 << 30) as f64)}</td>
                        <td class="num">{g.sms}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <table>
                <thead><tr><th>"#"</th><th>"GPU"</th><th>"compute capability"</th><th>"memory (GiB)"</th><th>"SMs"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };
    view! {
        <section id="doctor">
            <p class="verdict" id="auto-backend">
                "Backend: " <strong>{r.auto_backend.clone()}</strong> " — " {r.auto_reason}
            </p>
            <table>
                <tbody>
                    <tr><th>"showdown"</th><td colspan="2">{r.version}</td></tr>
                    <tr><th>"CPU"</th><td colspan="2">{format!("{} ({} cores; {})", r.cpu, r.cores, r.cpu_features.join(", "))}</td></tr>
                    <tr><th>"CUDA backend built"</th><td colspan="2">{if r.cuda_built { "yes" } else { "no (built without the cuda feature)" }}</td></tr>
                    {probe_row("CUDA driver", r.driver)}
                    {probe_row("NVRTC", r.nvrtc)}
                    {probe_row("NVML", r.nvml)}
                    {probe_row("Kernels", r.kernels)}
                </tbody>
            </table>
            <h3>"GPUs"</h3>
            {gpus}
        </section>
    }
}

/// The GPU at rest (`#gpu-state`): its name and one NVML reading, or why there is none, with a
/// Refresh button.
#[component]
fn GpuStateCard() -> impl IntoView {
    let state = load(|| bridge::call(GpuStateRequest {}));
    let loading = RwSignal::new(false);
    let body = |g: GpuState| {
        let reading = g.sample.map(|s| {
            let rows = super::telemetry::readings(&s)
                .into_iter()
                .map(|(class, label, value)| view! { <dt>{label}</dt><dd class=class>{value}</dd> })
                .collect_view();
            view! { <dl class="gpu-reading">{rows}</dl> }
        });
        let empty = g.device.is_none() && reading.is_none() && g.note.is_none();
        view! {
            {g.device.map(|d| view! { <p class="gpu-device"><strong>{d}</strong></p> })}
            {reading}
            {g.note.map(|n| view! { <p class="gpu-note muted">{n}</p> })}
            {empty.then(|| view! { <p class="gpu-note muted">"No GPU reading."</p> })}
        }
    };
    view! {
        <section id="gpu-state" class="card">
            <h3>"GPU at rest"</h3>
            <Loaded resource=state what="cannot read the GPU's state" busy=loading
                pending=|| view! { <p class="muted">"Reading the GPU…"</p> }
                children=body/>
            <button type="button" id="gpu-state-refresh" on:click=move |_| state.refetch()
                disabled=move || loading.get()>"Refresh"</button>
        </section>
    }
}

/// The Home page.
#[component]
pub fn HomePage() -> impl IntoView {
    let report = load(bridge::doctor);
    view! {
        <crate::walk::WalkStory/>
        <h2>"Home · Doctor"</h2>
        <p>
            "FP32 against FP16 mixed precision on your own hardware: the lab CNN, our kernels, and the profiles that explain them. "
            "Every number in the acts comes from a run on this machine or from a file you import."
        </p>
        <Loaded resource=report what="doctor failed"
            pending=|| view! { <p class="muted">"Asking the compute service…"</p> }
            children=report_view/>
        <GpuStateCard/>
    }
}
