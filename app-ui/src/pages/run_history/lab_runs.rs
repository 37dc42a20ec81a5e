//! The lab runs of the run history: Act III's saved kernel, ladder, inference, anatomy and
//! crossover runs, listed with where they were made, reopened as tables and exported as CSV.

use super::*;

/// `v` with `digits` decimals, or `–` when there is none.
pub(super) fn num(v: Option<f64>, digits: usize) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

/// A compact table of text cells: `head` over `rows`, the cells from column `first_num` on
/// right-aligned.
pub(super) fn grid(
    head: &[&'static str],
    first_num: usize,
    rows: Vec<Vec<String>>,
) -> impl IntoView {
    let head = head.iter().map(|h| view! { <th>{*h}</th> }).collect_view();
    let rows = rows
        .into_iter()
        .map(|row| {
            let cells = row
                .into_iter()
                .enumerate()
                .map(|(i, c)| view! { <td class:num={i >= first_num}>{c}</td> })
                .collect_view();
            view! { <tr>{cells}</tr> }
        })
        .collect_view();
    view! {
        <table class="results lab-table">
            <thead><tr>{head}</tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// The report's notes, one muted line each.
pub(super) fn notes(lines: Vec<String>) -> impl IntoView {
    (!lines.is_empty()).then(|| {
        let items = lines
            .into_iter()
            .map(|n| view! { <li>{n}</li> })
            .collect_view();
        view! { <ul class="lab-notes muted">{items}</ul> }
    })
}

/// A saved lab run (`#lab-run-report`): its headline, then the tables and charts its live Act
/// III section draws (drawn by that section's own code); where they cannot be drawn, its
/// figures as compact tables ([`lab_report_tables`]).
pub(super) fn lab_report_view(run: LabRun, here: Here) -> impl IntoView {
    let title = format!(
        "{} {} — {}, {}",
        run.report.title(),
        run.id,
        run.report.device(),
        utc_date_time(run.saved_at)
    );
    let origin = format!("Measured on {}.", run.origin().words(&here));
    let headline = run.report.headline();
    let slot = NodeRef::<Div>::new();
    let error = RwSignal::new(None::<String>);
    let failed = RwSignal::new(false);
    let listeners = StoredValue::new_local(Vec::new());
    let saved = run.clone();
    Effect::new(move |_| {
        let Some(el) = slot.get() else { return };
        match crate::pages::kernels::render_saved_lab_run(&saved, &el, error) {
            Ok(l) => listeners.set_value(l),
            Err(e) => {
                error.set(Some(format!("cannot draw this run as Act III does: {e}")));
                failed.set(true);
            }
        }
    });
    let id = run.id.clone();
    let tables = StoredValue::new(run.report);
    view! {
        <div id="lab-run-report" data-report=id>
            <h4>{title}</h4>
            <p class="lab-run-origin">{origin}</p>
            <p class="lab-headline">{headline}</p>
            <div class="lab-run-drawn" node_ref=slot></div>
            {move || error.get().map(|e| view! { <p class="error">{e}</p> })}
            {move || failed.get().then(|| tables.with_value(|r| lab_report_tables(r.clone())))}
        </div>
    }
}

/// A saved lab run's figures as compact tables (kernels: the throughput rows; ladder: one
/// table per layer; inference: one line per variant and batch; anatomy: each contestant's
/// sums).
pub(super) fn lab_report_tables(report: LabReport) -> impl IntoView {
    let body = match report {
        LabReport::Kernels { report } => {
            let rows = report
                .throughput()
                .into_iter()
                .map(|g| {
                    let o = g.ours;
                    vec![
                        g.label,
                        num(Some(o.ms_p50), 4),
                        num(Some(o.ms_p99), 4),
                        num(Some(o.gbps), 0),
                        format!("{:.1} %", o.of_copy * 100.0),
                        num(g.eager, 0),
                        num(g.compile, 0),
                    ]
                })
                .collect();
            let ceilings: Vec<String> = report
                .copy_rows()
                .map(|c| format!("{} {} GB/s", c.dtype, num(Some(c.gbps), 0)))
                .collect();
            let copy = format!(
                "copy ceiling of the same bytes (same run): {}",
                if ceilings.is_empty() {
                    "–".to_string()
                } else {
                    ceilings.join(", ")
                }
            );
            let head = [
                "kernel",
                "p50 ms",
                "p99 ms",
                "GB/s",
                "of copy",
                "eager GB/s",
                "compile GB/s",
            ];
            view! {
                <p>{copy}</p>
                {grid(&head, 1, rows)}
                {notes(report.peer_failure.into_iter().collect())}
            }
            .into_any()
        }
        LabReport::Ladder { report } => {
            let r = &report.ours;
            let facts = format!(
                "batch {}, {}; copy ceiling {:.0} GB/s, cuBLAS FP16 GEMM {} TFLOP/s",
                r.batch,
                r.input_source,
                r.ceilings.copy_gbps,
                num(r.ceilings.gemm_f16_tflops, 0)
            );
            let head = [
                "implementation",
                "in/out",
                "batch",
                "p50 ms",
                "TFLOP/s",
                "GB/s",
                "× rung 1",
                "× cuDNN",
            ];
            let tables = report
                .tables()
                .into_iter()
                .map(|t| {
                    let rows = t
                        .lines
                        .into_iter()
                        .map(|l| {
                            vec![
                                l.implementation,
                                l.dtypes,
                                l.batch.to_string(),
                                num(Some(l.ms), 4),
                                num(l.tflops, 2),
                                num(l.gbps, 0),
                                num(l.vs_rung1, 2),
                                num(l.vs_cudnn, 2),
                            ]
                        })
                        .collect();
                    view! { <h5>{t.layer.title()}</h5> {grid(&head, 2, rows)} }
                })
                .collect_view();
            let mut lines = r.skipped.clone();
            lines.extend(report.failed_checks());
            lines.extend(report.peer_failure.clone());
            view! { <p>{facts}</p> {tables} {notes(lines)} }.into_any()
        }
        LabReport::Inference { report } => {
            let p50 = |r: &Option<showdown_core::inference::LatencyRow>| {
                num(r.as_ref().map(|r| r.p50_ms), 4)
            };
            let rows = report
                .lines()
                .into_iter()
                .map(|l| {
                    vec![
                        l.activation.label().to_string(),
                        l.batch.to_string(),
                        p50(&l.launches),
                        p50(&l.graph),
                        l.best_torch
                            .as_ref()
                            .map_or_else(|| "–".into(), |t| t.implementation.clone()),
                        p50(&l.best_torch),
                        num(l.ours_vs_best, 2),
                    ]
                })
                .collect();
            let head = [
                "variant",
                "batch",
                "launches p50 ms",
                "graph p50 ms",
                "fastest PyTorch",
                "its p50 ms",
                "PyTorch / ours",
            ];
            let mut lines = report.notes.clone();
            lines.extend(report.peer_failure.clone());
            view! {
                <p>{format!("data set {}", report.dataset)}</p>
                {grid(&head, 1, rows)}
                {notes(lines)}
            }
            .into_any()
        }
        LabReport::Crossover { report } => {
            let facts = format!(
                "{} backend; {}; copy {} GB/s",
                report.backend,
                report.library,
                num(Some(report.ceilings.copy_gbps), 0)
            );
            let rows = report
                .points
                .iter()
                .map(|p| {
                    vec![
                        p.precision.to_string(),
                        p.label.clone().unwrap_or_else(|| "square".into()),
                        p.shape.text(),
                        showdown_core::bench::crossover::ms_text(p.ms_p50),
                        showdown_core::bench::crossover::tflops_text(p.tflops),
                        p.regime.as_str().to_string(),
                        if p.check.ok { "ok" } else { "FAILED" }.to_string(),
                    ]
                })
                .collect();
            let head = [
                "precision",
                "GEMM",
                "m×n×k",
                "median time",
                "rate",
                "regime",
                "f64 check",
            ];
            let mut lines = report.sentences.clone();
            lines.extend(
                report
                    .skipped
                    .iter()
                    .map(|s| format!("{} skipped: {}", s.precision, s.reason)),
            );
            view! { <p>{facts}</p> {grid(&head, 3, rows)} {notes(lines)} }.into_any()
        }
        LabReport::Anatomy { report } => {
            let facts = format!(
                "{} backend; {}, batch {}, {} step(s) timed; {}",
                report.backend, report.dataset, report.batch, report.steps, report.clock
            );
            let rows = report
                .contestants
                .iter()
                .map(|c| {
                    vec![
                        c.precision.to_string(),
                        c.launches.len().to_string(),
                        num(Some(c.sum_ms), 3),
                        num(Some(c.launched_step_ms), 3),
                        num(c.graph_step_ms, 3),
                    ]
                })
                .collect();
            let head = [
                "precision",
                "launches",
                "sum of launches ms",
                "launched step ms",
                "graph step ms",
            ];
            view! { <p>{facts}</p> {grid(&head, 1, rows)} {notes(report.notes)} }.into_any()
        }
    };
    view! { <div class="lab-run-tables">{body}</div> }
}

/// Does `what` (`open`, `json`, `csv`, else delete) to lab run `id`; its error says which run
/// and what failed.
async fn lab_run_op(
    id: String,
    what: &'static str,
    open: RwSignal<Option<LabRun>>,
    refresh: RwSignal<u32>,
) -> Result<(), ApiError> {
    let done: Result<(), ApiError> = match what {
        "open" => bridge::call(LabRunRequest { id: id.clone() })
            .await
            .map(|run| open.set(Some(run))),
        "json" => bridge::call(LabRunRequest { id: id.clone() })
            .await
            .and_then(|run| {
                serde_json::to_string_pretty(&run).map_err(|e| ApiError {
                    code: ErrorKind::Runtime,
                    message: format!("cannot write the run as JSON: {e}"),
                })
            })
            .and_then(|text| download_text(&format!("{id}.json"), "application/json", &text)),
        "csv" => bridge::call(LabRunCsvRequest { id: id.clone() })
            .await
            .and_then(|x| download_text(&x.file_name, "text/csv;charset=utf-8", &x.csv)),
        _ => bridge::call(LabRunRemoveRequest { id: id.clone() })
            .await
            .map(|_| {
                if open.with_untracked(|o| o.as_ref().is_some_and(|r| r.id == id)) {
                    open.set(None);
                }
                refresh.update(|n| *n = n.wrapping_add(1));
            }),
    };
    let verb = match what {
        "open" => "cannot open",
        "json" => "JSON export failed for",
        "csv" => "CSV export failed for",
        _ => "cannot delete",
    };
    done.map_err(|e| ApiError {
        code: e.code,
        message: format!("{verb} lab run {id}: {}", e.message),
    })
}

/// The lab runs of the run history (`#lab-runs`, one row `data-lab-run=<id>` each): Open
/// shows the report, JSON and CSV download it, Delete removes it. Read again when `refresh` is
/// bumped.
#[component]
pub(super) fn LabRuns(refresh: RwSignal<u32>) -> impl IntoView {
    let list = load(move || {
        refresh.track();
        bridge::call(LabRunsRequest {})
    });
    let open = RwSignal::new(None::<LabRun>);
    let here = this_machine();
    // The lab run whose Delete was pressed: its row asks to confirm.
    let confirm = RwSignal::new(None::<String>);
    // What a row's buttons do (`open`, `json`, `csv`, `delete`); a failure names the run.
    let op =
        act(move |(id, what): &(String, &'static str)| lab_run_op(id.clone(), what, open, refresh));
    let act = move |id: String, what: &'static str| {
        confirm.set(None);
        op.dispatch((id, what));
    };

    let rows = move |l: LabRunList| {
        let empty = l.runs.is_empty();
        let rows = l
            .runs
            .into_iter()
            .map(|run| {
                let id = run.id.clone();
                let button = move |class: &'static str, label: &'static str, what: &'static str| {
                    let id = id.clone();
                    view! { <button type="button" class=class on:click=move |_| act(id.clone(), what)>{label}</button> }
                };
                let remove = {
                    let id = run.id.clone();
                    move || {
                        delete_button("lab", "Delete this lab run for good? ", id.clone(), confirm, move |d| {
                            act(d, "delete")
                        })
                    }
                };
                let id = run.id.clone();
                let lab_origin = run.origin.clone();
                let is_open = move || open.with(|o| o.as_ref().is_some_and(|r| r.id == id));
                view! {
                    <tr data-lab-run=run.id.clone() data-kind=run.kind.clone() class:selected=is_open>
                        <td>{run.title.clone()}</td>
                        <td>
                            {run.device.clone()}
                            <br/>
                            <span class="run-origin muted">{move || lab_origin.words(&here.get())}</span>
                        </td>
                        <td>{run.headline.clone()}</td>
                        <td>{utc_date_time(run.saved_at)}</td>
                        <td>
                            {button("lab-open", "Open", "open")}
                            {button("lab-json", "JSON", "json")}
                            {button("lab-csv", "CSV", "csv")}
                            {remove}
                        </td>
                    </tr>
                }
            })
            .collect_view();
        HistoryListing {
            skipped: l.skipped,
            empty: empty.then_some(("lab-runs-empty", "No lab runs yet: every finished Act III job is kept here.")),
            table_id: "lab-runs-table",
            head: view! { <thead><tr><th>"Kind"</th><th>"Device"</th><th>"Headline"</th><th>"Date (UTC)"</th><th>"Report"</th></tr></thead> }.into_any(),
            rows: rows.into_any(),
        }
        .view()
    };

    view! {
        <div id="lab-runs">
            <h3>"Lab runs"</h3>
            {move || failure(op).map(|e| view! { <p class="error" id="lab-runs-error">{e.message}</p> })}
            <Loaded resource=list what="cannot read the lab runs"
                pending=|| view! { <p class="muted">"Reading the lab runs…"</p> }
                children=rows/>
            {move || open.get().map(|run| lab_report_view(run, here.get()))}
        </div>
    }
}
