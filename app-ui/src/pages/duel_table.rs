//! The result table of a duel, shared by Act II's result and the run history's saved runs (a
//! module of its own, so neither page imports the other): our contestants, then PyTorch's runs
//! beside them when the duel asked for PyTorch, with what the comparison showed.

use leptos::prelude::*;
use showdown_core::pytorch_duel::{PeerDuel, PeerDuelRun, PeerEpoch, PeerMode};
use showdown_core::runs::comparison_sentence;

use crate::charts::{precision_color, Series, Stroke, StyledSeries};
use showdown_core::types::{DuelReport, Precision};

/// Columns of the result table (PyTorch's rows fill the same ones).
const COLUMNS: usize = 8;

/// PyTorch's runs as chart lines beside ours (Act II and the run history draw them alike):
/// named `PyTorch fp16 eager`, in the precision's colour, eager dashed and CUDA graph dotted;
/// `value` is what each epoch puts on the chart.
pub fn peer_lines<'a>(
    runs: impl IntoIterator<Item = &'a PeerDuelRun>,
    value: fn(&PeerEpoch) -> f64,
) -> Vec<StyledSeries> {
    runs.into_iter()
        .map(|run| StyledSeries {
            series: Series {
                name: format!("PyTorch {} {}", run.precision, run.mode.label()),
                color: precision_color(run.precision),
                points: run
                    .epochs
                    .iter()
                    .map(|e| (e.epoch as f64, value(e)))
                    .collect(),
            },
            stroke: match run.mode {
                PeerMode::Eager => Stroke::Dashed,
                PeerMode::Graph => Stroke::Dotted,
            },
        })
        .collect()
}

/// The id of the comparison sentence under the table `table_id`: `pytorch-sentence` under
/// Act II's `result-table`, `{table_id}-pytorch-sentence` under any other (the run history's
/// table is on the same page).
pub fn sentence_id(table_id: &str) -> String {
    if table_id == "result-table" {
        "pytorch-sentence".into()
    } else {
        format!("{table_id}-pytorch-sentence")
    }
}

/// One PyTorch run's row (`tr.peer-row[data-variant]`) in the result table's columns: its
/// label, median epoch (of how many), peak memory, test accuracy, our same-precision
/// contestant's speed-up over it, its loss scaling, its warm-up epoch; no step times.
fn peer_row(r: &DuelReport, peer: &PeerDuel, run: &PeerDuelRun) -> impl IntoView {
    let median = run.epoch_ms_median();
    let ours = r.runs.iter().find(|x| x.precision == run.precision);
    let speedup = match ours {
        None => format!("— (no {} of ours)", run.precision),
        Some(o) => peer
            .compare(run.precision, o.epoch_ms_median)
            .into_iter()
            .find(|c| c.peer.variant == run.variant)
            .map(|c| format!("ours {}", c.words()))
            .unwrap_or_else(|| {
                if peer.comparable {
                    "—".into()
                } else {
                    "— (another device)".into()
                }
            }),
    };
    let memory = match run.peak_memory_bytes {
        Some(b) => format!("{:.1}", b as f64 / 1e6),
        None => "— (CPU: not counted)".into(),
    };
    let warm_up = match run.epochs.first() {
        Some(e) if run.epochs.len() >= 2 => format!("{:.1}", e.ms),
        Some(_) => "— (only epoch)".to_string(),
        None => "—".to_string(),
    };
    let accuracy = if run.epochs.is_empty() {
        "—".to_string()
    } else {
        showdown_core::format::percent(run.test_accuracy())
    };
    view! {
        <tr class="peer-row" data-variant=run.variant.clone() data-precision=run.precision.as_str()>
            <td class="peer-label">{run.label.clone()}</td>
            <td class="num epoch-time">
                {if median.is_finite() { format!("{median:.1}") } else { "—".into() }}
                <span class="peer-median">{run.rests_on()}</span>
            </td>
            <td class="num">{memory}</td>
            <td class="num accuracy">{accuracy}</td>
            <td class="num our-speedup">{speedup}</td>
            <td class="num">{run.scaling.clone().unwrap_or_else(|| "—".into())}</td>
            <td class="num warm-up">{warm_up}</td>
            <td class="num step-times">"—"</td>
        </tr>
    }
}

/// PyTorch's part of the result table: a heading row (where it ran), then a row per run.
fn peer_rows(r: &DuelReport) -> Option<impl IntoView> {
    let peer = r.peer.as_ref()?;
    let head = if peer.runs.is_empty() {
        format!("{} — no run finished", peer.where_label())
    } else {
        format!(
            "{} — the same CNN, images, batch, epochs, learning rate, dropout and activation \
             (bench/duel_peer.py); epoch times are medians of epochs 2 on, as ours",
            peer.where_label()
        )
    };
    let rows = peer
        .runs
        .iter()
        .map(|run| peer_row(r, peer, run))
        .collect_view();
    Some(view! {
        <tbody class="peer-rows">
            <tr class="peer-head"><th colspan=COLUMNS.to_string()>{head}</th></tr>
            {rows}
        </tbody>
    })
}

/// Under the table: what PyTorch could not run here and why its rows are missing (the
/// `peer-notes` list), and the comparison in one sentence ([`sentence_id`]).
fn peer_after(table_id: &'static str, r: &DuelReport) -> Option<impl IntoView> {
    let peer = r.peer.as_ref()?;
    let mut notes: Vec<String> = peer
        .skipped
        .iter()
        .map(|s| format!("Not run here — {s}"))
        .collect();
    notes.extend(peer.note.clone());
    let notes = (!notes.is_empty()).then(|| {
        let items = notes
            .into_iter()
            .map(|n| view! { <li>{n}</li> })
            .collect_view();
        view! { <ul class="peer-notes muted">{items}</ul> }
    });
    let sentence = comparison_sentence(r).map(|s| {
        view! { <p class="pytorch-sentence" id=sentence_id(table_id)>{s}</p> }
    });
    Some(view! { {notes} {sentence} })
}

/// The result table of a duel (Precision | Epoch Time (ms) | Max Memory (MB) | Test accuracy |
/// Speed-up | Loss scaler | Warm-up epoch | Step times) with element id `table_id`; Act II's
/// result and the run history's saved runs both show it. The epoch time is the median of
/// epochs 2.. (the first is the warm-up, shown apart); the step times are the instrumented
/// first epoch's percentiles. When the duel ran PyTorch beside ours, its runs follow ours
/// (`tr.peer-row`, their own `tbody.peer-rows`), and under the table what it could not run and
/// the comparison sentence.
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
            // FP8 says how it ran; where it ran elsewhere than the duel (the CPU beside a GPU
            // without FP8), its times and memory are not comparable with the other rows.
            let fp8_note = run.fp8.as_ref().map(|f| {
                let elsewhere = f.device != r.device;
                let text = match (f.emulated, elsewhere) {
                    (true, true) => format!(" (emulated on {}: not comparable)", f.device),
                    (true, false) => " (emulated)".to_string(),
                    (false, _) => " (tensor cores)".to_string(),
                };
                view! { <span class="fp8-note muted" title=f.engine.clone()>{text}</span> }
            });
            // FP8 adds a scale per tensor; over FP16 storage (a GPU) FP16's loss scaler runs too.
            let scaler = match (&run.fp8, run.skipped_steps, run.final_loss_scale) {
                (Some(_), 0, 1.0) => "none; a scale per tensor".to_string(),
                (Some(_), k, s) => format!("{k} skipped, scale {s}; and a scale per tensor"),
                (None, k, s) => format!("{k} skipped, scale {s}"),
            };
            view! {
                <tr data-precision=run.precision.as_str()>
                    <td>{run.precision.as_str()}{fp8_note}</td>
                    <td class="num">{format!("{:.1}", run.epoch_ms_median)}</td>
                    <td class="num">{format!("{:.1}", run.peak_memory_bytes as f64 / 1e6)}</td>
                    <td class="num">{showdown_core::format::percent(run.test_accuracy)}</td>
                    <td class="num">{speedup}</td>
                    <td class="num">{scaler}</td>
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
            {peer_rows(r)}
        </table>
        {peer_after(table_id, r)}
    }
}
