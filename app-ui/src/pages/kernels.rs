//! Act III – The Kernel Reveal: our kernel registry (compiled into the app from the `kernels`
//! crate: families, entry points, dtypes, the CUDA source), and each family's compiled facts
//! from the compute service (NVRTC + cuobjdump where it runs: registers, shared and local
//! memory, occupancy and its limiter, `mma` in the PTX and `HMMA` in the SASS).

use compute::kernel_panel::KernelFacts;
use compute::protocol::{ApiError, Request};
use leptos::prelude::*;

use crate::bridge;

/// Whether `entry` is one of `family`'s tensor-core kernels.
pub fn is_tensor_core(family: &kernels::KernelFamily, entry: &str) -> bool {
    family.is_tensor_core(entry)
}

fn facts_table(facts: Vec<KernelFacts>) -> impl IntoView {
    let rows = facts
        .into_iter()
        .map(|f| {
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

fn family_card(family: &'static kernels::KernelFamily) -> impl IntoView {
    let facts: RwSignal<Option<Result<Vec<KernelFacts>, ApiError>>> = RwSignal::new(None);
    let busy = RwSignal::new(false);
    let arch = RwSignal::new("sm_90".to_string());
    let entries = family
        .entry_points()
        .into_iter()
        .map(|e| {
            let tc = is_tensor_core(family, &e);
            view! { <li class:tensor-core=tc><code>{e}</code>{tc.then_some(" · tensor cores")}</li> }
        })
        .collect_view();
    let load = move |_| {
        busy.set(true);
        let request = Request::KernelFacts {
            name: family.name.to_string(),
            arch: arch.get_untracked(),
            threads: 256,
        };
        leptos::task::spawn_local(async move {
            facts.set(Some(bridge::call::<Vec<KernelFacts>>(&request).await));
            busy.set(false);
        });
    };
    view! {
        <article class="card family" data-family=family.name>
            <h3>{family.name} ".cu"</h3>
            <p>{family.summary}</p>
            <p class="muted">{format!("dtypes: {} · {} lines of CUDA C", family.dtypes.join(", "), family.source.lines().count())}</p>
            <details><summary>{format!("{} entry points", family.entry_points().len())}</summary><ul class="entries">{entries}</ul></details>
            <details><summary>"source"</summary><pre class="source">{family.source}</pre></details>
            <p>
                <select on:change=move |ev| arch.set(event_target_value(&ev))>
                    <option value="sm_90" selected>"sm_90 (H100)"</option>
                    <option value="sm_80">"sm_80 (A100)"</option>
                    <option value="sm_89">"sm_89 (L4, RTX 40)"</option>
                </select>
                " "
                <button class="facts-button" on:click=load disabled=move || busy.get()>"Compile and read the facts"</button>
                {move || busy.get().then_some(view! { <span class="muted">" compiling with NVRTC…"</span> })}
            </p>
            {move || match facts.get() {
                None => ().into_any(),
                Some(Ok(f)) => facts_table(f).into_any(),
                Some(Err(e)) => view! { <p class="error">{format!("facts unavailable ({:?}): {}", e.code, e.message)}</p> }.into_any(),
            }}
        </article>
    }
}

/// The Act III page.
#[component]
pub fn KernelsPage() -> impl IntoView {
    let cards = kernels::FAMILIES.iter().map(family_card).collect_view();
    view! {
        <h2>"Act III · The Kernel Reveal"</h2>
        <p>
            "Every kernel the lab runs, as compiled into it: the training step (with the FP16/BF16 convolutions on tensor cores), "
            "the activations and the norms. The facts are read from the compiled code: NVRTC builds each family for the chosen "
            "architecture where the compute service runs, cuobjdump reads the resources and the SASS, and the occupancy calculator "
            "of Act IV gives the occupancy at 256 threads per block. Strict FP32 never issues a tensor-core instruction; a CI test "
            "checks the SASS for HMMA on both sides."
        </p>
        <div id="kernel-families">{cards}</div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tensor_core_kernels_are_flagged_and_nothing_else() {
        let train = kernels::family("train").expect("the train family");
        assert!(is_tensor_core(train, "conv_mma_fwd_f16"));
        assert!(is_tensor_core(train, "conv_mma_bwd_filter_bf16"));
        assert!(is_tensor_core(train, "conv_mma_bwd_data_tf32"));
        assert!(!is_tensor_core(train, "conv_mma_wgrad_reduce_tf32"));
        assert!(!is_tensor_core(train, "conv_block_fwd_f16"));
        assert!(!is_tensor_core(train, "adam_multi_f16"));
        let act = kernels::family("activations").expect("the activations family");
        assert!(!act.entry_points().iter().any(|e| is_tensor_core(act, e)));
        let ladder = kernels::family("conv_ladder").expect("the conv_ladder family");
        assert!(is_tensor_core(ladder, "conv_tc_f16"));
        assert!(is_tensor_core(ladder, "conv_tc_opt_lab_conv2"));
        assert!(!is_tensor_core(ladder, "conv_fused_f32"));
        assert!(!is_tensor_core(ladder, "gemm_tiled_f32"));
    }
}
