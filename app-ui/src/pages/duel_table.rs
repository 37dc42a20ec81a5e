//! The result table of a duel, shared by Act II's result and the run history's saved runs (a
//! module of its own, so neither page imports the other).

use leptos::prelude::*;
use showdown_core::types::{DuelReport, Precision};

/// The result table of a duel (Precision | Epoch Time (ms) | Max Memory (MB) | Test accuracy |
/// Speed-up | Loss scaler | Warm-up epoch | Step times) with element id `table_id`; Act II's
/// result and the run history's saved runs both show it. The epoch time is the median of
/// epochs 2.. (the first is the warm-up, shown apart); the step times are the instrumented
/// first epoch's percentiles.
pub fn duel_table(table_id: &'static str, r: &DuelReport) -> impl IntoView {
    let base = r
        .runs
        .iter()
        .find(|x| x.precision == Precision::Fp32)
        .or(r.runs.first())
        .map(|x| (x.precision, x.epoch_ms_median));
    let rows = r
        .runs
        .iter()
        .map(|run| {
            let speedup = base
                .filter(|(_, ms)| *ms > 0.0 && run.epoch_ms_median > 0.0)
                .map(|(p, ms)| format!("{:.2}× vs {p}", ms / run.epoch_ms_median))
                .unwrap_or_else(|| "—".into());
            let warm_up = match run.epochs.first() {
                Some(e) if run.epochs.len() >= 2 => format!("{:.1}", e.ms),
                Some(_) => "— (only epoch)".to_string(),
                None => "—".to_string(),
            };
            let steps = run
                .step_times
                .as_ref()
                .map(|st| {
                    format!(
                        "{:.2} / {:.2} / {:.2} / {:.2}",
                        st.p50_ms, st.p90_ms, st.p99_ms, st.max_ms
                    )
                })
                .unwrap_or_else(|| "—".into());
            view! {
                <tr>
                    <td>{run.precision.as_str()}</td>
                    <td class="num">{format!("{:.1}", run.epoch_ms_median)}</td>
                    <td class="num">{format!("{:.1}", run.peak_memory_bytes as f64 / 1e6)}</td>
                    <td class="num">{showdown_core::verdict::percent(run.test_accuracy)}</td>
                    <td class="num">{speedup}</td>
                    <td class="num">{format!("{} skipped, scale {}", run.skipped_steps, run.final_loss_scale)}</td>
                    <td class="num warm-up">{warm_up}</td>
                    <td class="num step-times">{steps}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table id=table_id>
            <thead><tr>
                <th>"Precision"</th><th>"Epoch Time (ms)"</th><th>"Max Memory (MB)"</th>
                <th>"Test accuracy"</th><th>"Speed-up"</th><th>"Loss scaler"</th>
                <th>"Warm-up epoch 1 (ms)"</th><th>"Step p50 / p90 / p99 / max (ms)"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}
