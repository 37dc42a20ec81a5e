//! Act II's run history: the duels the service saved (they survive restarts of the app and of
//! the sidecar), each with its result table on demand, JSON and CSV downloads, and removal.

use leptos::prelude::*;
use showdown_core::protocol::ApiError;
use showdown_core::runs::{json_file_name, utc_date_time, RunList, RunSummary};
use showdown_core::types::DuelReport;
use showdown_core::verdict::percent;
use showdown_core::ErrorKind;

use crate::bridge;
use crate::download::download_text;

/// A saved run's result table (the same columns as the duel's own result table).
fn saved_run_table(id: String, r: DuelReport) -> impl IntoView {
    view! {
        <div id="history-run" data-run=id.clone()>
            <h4>{format!("Run {id}")}</h4>
            <p>{format!("{} backend on {}; {}: {} training / {} test images; {} epoch(s), batch {}",
                r.backend, r.device, r.dataset.name, r.dataset.train, r.dataset.test, r.config.epochs, r.config.batch)}</p>
            {super::duel_table::duel_table("history-run-table", &r)}
        </div>
    }
}

/// `fp32 91.25 %, fp16 90.75 %`.
fn accuracies(run: &RunSummary) -> String {
    run.results
        .iter()
        .map(|r| format!("{} {}", r.precision, percent(r.test_accuracy)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The run history section (`#run-history`). `refresh` is bumped by the page after each
/// finished duel; the list is read again then.
#[component]
pub fn RunHistory(refresh: RwSignal<u32>) -> impl IntoView {
    let list = RwSignal::new(None::<RunList>);
    let list_error = RwSignal::new(None::<String>);
    let action_error = RwSignal::new(None::<String>);
    let selected = RwSignal::new(None::<(String, DuelReport)>);

    Effect::new(move |_| {
        refresh.track();
        leptos::task::spawn_local(async move {
            match bridge::runs().await {
                Ok(l) => {
                    list_error.set(None);
                    list.set(Some(l));
                }
                Err(e) => {
                    list_error.set(Some(format!("cannot read the run history: {}", e.message)))
                }
            }
        });
    });

    let show = move |id: String| {
        leptos::task::spawn_local(async move {
            match bridge::run(&id).await {
                Ok(r) => {
                    action_error.set(None);
                    selected.set(Some((id, r)));
                }
                Err(e) => action_error.set(Some(format!("cannot read run {id}: {}", e.message))),
            }
        });
    };
    let save_json = move |id: String| {
        leptos::task::spawn_local(async move {
            let saved = match bridge::run(&id).await {
                Ok(r) => serde_json::to_string_pretty(&r)
                    .map_err(|e| ApiError {
                        code: ErrorKind::Runtime,
                        message: format!("cannot write the report as JSON: {e}"),
                    })
                    .and_then(|text| {
                        download_text(&json_file_name(&id), "application/json", &text)
                    }),
                Err(e) => Err(e),
            };
            match saved {
                Ok(()) => action_error.set(None),
                Err(e) => action_error.set(Some(format!("JSON export failed: {}", e.message))),
            }
        });
    };
    let save_csv = move |id: String| {
        leptos::task::spawn_local(async move {
            let saved = match bridge::run_csv(&id).await {
                Ok(x) => download_text(&x.file_name, "text/csv;charset=utf-8", &x.csv),
                Err(e) => Err(e),
            };
            match saved {
                Ok(()) => action_error.set(None),
                Err(e) => action_error.set(Some(format!("CSV export failed: {}", e.message))),
            }
        });
    };
    let delete = move |id: String| {
        leptos::task::spawn_local(async move {
            match bridge::run_remove(&id).await {
                Ok(_) => {
                    action_error.set(None);
                    if selected.with_untracked(|s| s.as_ref().is_some_and(|(x, _)| *x == id)) {
                        selected.set(None);
                    }
                    refresh.update(|n| *n = n.wrapping_add(1));
                }
                Err(e) => action_error.set(Some(format!("cannot delete run {id}: {}", e.message))),
            }
        });
    };

    let rows = move || {
        let Some(l) = list.get() else {
            return view! { <p class="muted">"Reading the run history…"</p> }.into_any();
        };
        let skipped = l
            .skipped
            .into_iter()
            .map(|n| view! { <p class="error skipped">{n}</p> })
            .collect_view();
        if l.runs.is_empty() {
            return view! {
                {skipped}
                <p id="history-empty" class="muted">"No saved runs yet: every finished duel is kept here."</p>
            }
            .into_any();
        }
        let rows = l
            .runs
            .into_iter()
            .map(|run| {
                let id = run.id.clone();
                let (a, b, c, d) = (id.clone(), id.clone(), id.clone(), id.clone());
                let speedup = run
                    .speedup_fp16_vs_fp32
                    .map(|x| format!("{x:.2}×"))
                    .unwrap_or_else(|| "—".into());
                let precisions = run
                    .precisions
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                let is_selected = move || {
                    selected.with(|s| s.as_ref().is_some_and(|(x, _)| *x == id))
                };
                view! {
                    <tr data-run=run.id.clone() class:selected=is_selected>
                        <td><button type="button" class="run-show" title="show this run's result table"
                            on:click=move |_| show(a.clone())>{utc_date_time(run.saved_at)}</button></td>
                        <td>{run.dataset.clone()}</td>
                        <td>{format!("{} ({})", run.backend, run.device)}</td>
                        <td>{precisions}</td>
                        <td class="acc">{accuracies(&run)}</td>
                        <td class="num">{speedup}</td>
                        <td>
                            <button type="button" class="run-json" on:click=move |_| save_json(b.clone())>"JSON"</button>
                            <button type="button" class="run-csv" on:click=move |_| save_csv(c.clone())>"CSV"</button>
                            <button type="button" class="run-delete" on:click=move |_| delete(d.clone())>"Delete"</button>
                        </td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            {skipped}
            <table id="history-table">
                <thead><tr>
                    <th>"Date (UTC)"</th><th>"Data set"</th><th>"Backend"</th><th>"Precisions"</th>
                    <th>"Test accuracy"</th><th>"Speed-up fp16 vs fp32"</th><th>"Export"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };

    view! {
        <section id="run-history">
            <h3>"Run history"</h3>
            <p class="muted">"Every finished duel is saved on this machine and kept across restarts. Click a date to see that run's table."</p>
            {move || list_error.get().map(|e| view! { <p class="error">{e}</p> })}
            {move || action_error.get().map(|e| view! { <p class="error" id="history-error">{e}</p> })}
            {rows}
            {move || selected.get().map(|(id, r)| saved_run_table(id, r))}
        </section>
    }
}
