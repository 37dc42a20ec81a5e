//! Act V – The Verdict: the machine and the newest duel from the run history (the user's own
//! measurements), with an export of the whole verdict as one self-contained HTML file.

use leptos::prelude::*;
use showdown_core::runs::{utc_date_time, RunSummary};
use showdown_core::verdict::{percent, speedup_line, Verdict, NO_RUN_YET};

use crate::bridge;
use crate::download::download_text;

/// The newest run's result table: Precision | Epoch Time (ms) | Max Memory (MB) | Test accuracy.
fn latest_view(run: RunSummary) -> impl IntoView {
    let rows = run
        .results
        .iter()
        .map(|r| {
            view! {
                <tr>
                    <td>{r.precision.as_str()}</td>
                    <td class="num">{format!("{:.1}", r.epoch_ms_median)}</td>
                    <td class="num">{format!("{:.1}", r.peak_memory_bytes as f64 / 1e6)}</td>
                    <td class="num">{percent(r.test_accuracy)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section id="verdict-latest">
            <h3>"The latest duel"</h3>
            <p>{format!(
                "{}: {} on {} ({}); {} training / {} test images, {} epoch(s).",
                utc_date_time(run.saved_at), run.dataset, run.backend, run.device,
                run.train_images, run.test_images, run.epochs
            )}</p>
            <table id="verdict-table">
                <thead><tr>
                    <th>"Precision"</th><th>"Epoch Time (ms)"</th><th>"Max Memory (MB)"</th><th>"Test accuracy"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
            <p id="verdict-speedup"><strong>{speedup_line(&run)}</strong></p>
        </section>
    }
}

/// The earlier runs, newest first.
fn earlier_view(runs: Vec<RunSummary>) -> impl IntoView {
    (!runs.is_empty()).then(|| {
        let rows = runs
            .into_iter()
            .map(|run| {
                let acc = run
                    .results
                    .iter()
                    .map(|r| format!("{} {}", r.precision, percent(r.test_accuracy)))
                    .collect::<Vec<_>>()
                    .join(", ");
                let speedup = run
                    .speedup_fp16_vs_fp32
                    .map(|x| format!("{x:.2}×"))
                    .unwrap_or_else(|| "—".into());
                view! {
                    <tr>
                        <td>{utc_date_time(run.saved_at)}</td>
                        <td>{run.dataset}</td>
                        <td>{format!("{} ({})", run.backend, run.device)}</td>
                        <td>{acc}</td>
                        <td class="num">{speedup}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <h3>"Earlier runs"</h3>
            <table id="verdict-earlier">
                <thead><tr><th>"Date"</th><th>"Data set"</th><th>"Backend"</th><th>"Test accuracy"</th><th>"Speed-up fp16 vs fp32"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
    })
}

fn verdict_view(v: Verdict) -> impl IntoView {
    let m = v.machine;
    let gpus = if m.gpus.is_empty() {
        "none found".to_string()
    } else {
        m.gpus.join("; ")
    };
    let latest = match v.latest {
        Some(run) => latest_view(run).into_any(),
        None => view! {
            <p id="no-run">{NO_RUN_YET} " " <a href="#/duel">"Go to Act II"</a></p>
        }
        .into_any(),
    };
    let notes = v
        .notes
        .into_iter()
        .map(|n| view! { <p class="note">{n}</p> })
        .collect_view();
    view! {
        <p class="verdict" id="verdict-headline">{v.headline}</p>
        <p class="muted">{format!("Made {} by showdown {}.", utc_date_time(v.generated_at), m.version)}</p>
        <section id="verdict-machine">
            <h3>"The machine"</h3>
            <table>
                <tbody>
                    <tr><th>"CPU"</th><td>{format!("{} ({} cores)", m.cpu, m.cores)}</td></tr>
                    <tr><th>"GPU"</th><td>{gpus}</td></tr>
                    <tr><th>"Backend (auto)"</th><td>{format!("{} — {}", m.auto_backend, m.auto_reason)}</td></tr>
                </tbody>
            </table>
        </section>
        {latest}
        {earlier_view(v.earlier)}
        {notes}
    }
}

/// The Act V page.
#[component]
pub fn VerdictPage() -> impl IntoView {
    let verdict = RwSignal::new(None::<Verdict>);
    let error = RwSignal::new(None::<String>);
    let exporting = RwSignal::new(false);

    leptos::task::spawn_local(async move {
        match bridge::verdict().await {
            Ok(v) => verdict.set(Some(v)),
            Err(e) => error.set(Some(format!("cannot make the verdict: {}", e.message))),
        }
    });

    let export = move |_| {
        exporting.set(true);
        leptos::task::spawn_local(async move {
            let saved = match bridge::verdict_html().await {
                Ok(doc) => download_text(&doc.file_name, "text/html;charset=utf-8", &doc.html),
                Err(e) => Err(e),
            };
            if let Err(e) = saved {
                error.set(Some(format!("export failed: {}", e.message)));
            }
            exporting.set(false);
        });
    };

    view! {
        <h2>"Act V · The Verdict"</h2>
        <p>"What your own runs say: the machine, the newest duel from the run history and the speed-up of FP16 mixed precision over FP32."</p>
        <p>
            <button type="button" id="export-html" on:click=export disabled=move || exporting.get()>"Export HTML"</button>
            <span class="muted">" one self-contained file (no scripts, nothing fetched) to keep or share"</span>
        </p>
        {move || error.get().map(|e| view! { <p class="error" id="verdict-error">{e}</p> })}
        <div id="verdict">
            {move || match verdict.get() {
                Some(v) => verdict_view(v).into_any(),
                None => view! { <p class="muted">"Reading the run history…"</p> }.into_any(),
            }}
        </div>
    }
}
