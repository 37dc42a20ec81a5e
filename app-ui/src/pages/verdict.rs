//! Act V – The Verdict: the machine and the newest duel from the run history (the user's own
//! measurements) with its settings, how many runs of the same duel its speed-up rests on and
//! their spread, a flag on contestants whose epochs varied, and an offer to repeat the duel
//! 3× before a speed-up is stated; with an export of the whole verdict as one self-contained
//! HTML file.

use leptos::prelude::*;
use showdown_core::protocol::Event;
use showdown_core::runs::{utc_date_time, RunSummary};
use showdown_core::types::{DuelConfig, DuelEvent};
use showdown_core::verdict::{
    basis_line, epoch_rule, percent, repeat_offer, speedup_line, Basis, Verdict, NO_RUN_YET,
    REPEATS,
};
use showdown_core::verdict_groups::OriginGroup;
use showdown_core::ErrorKind;

use crate::bridge;
use crate::download::download_text;
use crate::loading::{act, cancel_job, failure, load, Acting, Loaded};

/// The newest run's result table: Precision | Epoch Time (ms) | Max Memory (MB) | Test
/// accuracy; its settings, what its speed-up rests on and the flags on its epochs.
fn latest_view(
    run: RunSummary,
    basis: Option<Basis>,
    flags: Vec<String>,
    origin: Option<String>,
) -> impl IntoView {
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
            <p>{format!("{}: {}.", utc_date_time(run.saved_at), run.setup())}</p>
            {origin.map(|o| view! { <p id="verdict-origin">{format!("Ran on {o}.")}</p> })}
            <p id="verdict-settings">{format!("Settings: {}.", run.config().summary())}</p>
            <table id="verdict-table">
                <thead><tr>
                    <th>"Precision"</th><th>"Epoch Time (ms)"</th><th>"Max Memory (MB)"</th><th>"Test accuracy"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
            <p id="verdict-speedup"><strong>{speedup_line(&run)}</strong></p>
            {run.pytorch_sentence.clone().map(|t| view! { <p id="verdict-pytorch">{t}</p> })}
            {run.fp8_sentence.clone().map(|t| view! { <p id="verdict-fp8">{t}</p> })}
            {basis.map(|b| view! { <p id="verdict-basis">{basis_line(&b)}</p> })}
            {(!flags.is_empty()).then(|| {
                let items = flags.into_iter().map(|f| view! { <li>{f}</li> }).collect_view();
                view! { <ul id="verdict-flags" class="note">{items}</ul> }
            })}
            <p id="verdict-epoch-rule" class="muted">{epoch_rule()}</p>
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
                        <td>{run.dataset.clone()}</td>
                        <td>{format!("{} ({})", run.backend, run.device)}</td>
                        <td>{run.config().summary()}</td>
                        <td>{acc}</td>
                        <td class="num">{speedup}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <h3>"Earlier runs"</h3>
            <table id="verdict-earlier">
                <thead><tr><th>"Date"</th><th>"Data set"</th><th>"Backend"</th><th>"Settings"</th><th>"Test accuracy"</th><th>"Speed-up fp16 vs fp32"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
    })
}

/// The offer to repeat the newest duel (`#verdict-repeat`): what it does, and the button; then
/// its progress.
fn repeat_view(v: &Verdict, repeat: RepeatState) -> Option<AnyView> {
    let config = v.repeat.clone();
    let offer = repeat_offer(v);
    // Kept while a repeat runs, even once the runs so far are enough to state a speed-up.
    let shown = v.offers_repeat() || repeat.running.get_untracked();
    if let Some(why) = v.repeat_blocked.clone() {
        // The newest duel ran on other hardware: the offer is shown, disabled, with why.
        return Some(
            view! {
                <section id="verdict-repeat-offer" class="card">
                    <button type="button" id="verdict-repeat" disabled=true title=why.clone()>
                        {format!("Repeat {REPEATS}×")}
                    </button>
                    " "
                    <span id="verdict-repeat-blocked" class="muted">{why}</span>
                </section>
            }
            .into_any(),
        );
    }
    config.filter(|_| shown).map(|config| {
        let config = StoredValue::new(config);
        view! {
            <section id="verdict-repeat-offer" class="card">
                <p>{offer}</p>
                <button type="button" id="verdict-repeat"
                    disabled=move || repeat.running.get()
                    on:click=move |_| start_repeats(config.get_value(), repeat)>
                    {format!("Repeat {REPEATS}×")}
                </button>
                <button type="button" id="verdict-repeat-cancel"
                    disabled=move || !repeat.running.get()
                    on:click=move |_| {
                        repeat.stop.set(true);
                        repeat.cancel.dispatch(());
                    }>"Cancel"</button>
                " "
                <span id="verdict-repeat-progress" class="muted">{move || repeat.progress.get()}</span>
            </section>
        }
        .into_any()
    })
}

/// Every run of the history in groups of one origin and configuration, each with its machine
/// line (`#verdict-groups`).
fn groups_view(groups: Vec<OriginGroup>) -> impl IntoView {
    (!groups.is_empty()).then(|| {
        let items = groups
            .into_iter()
            .map(|g| {
                let n = g.runs.len();
                let basis = g.basis.as_ref().map(basis_line);
                view! {
                    <li class="origin-group" data-here=g.here.to_string()>
                        <strong class="machine-line">{g.machine_line}</strong>
                        <br/>
                        <span class="config">{format!("{} · {n} run{}", g.config, if n == 1 { "" } else { "s" })}</span>
                        {basis.map(|b| view! { <br/><span class="muted">{b}</span> })}
                    </li>
                }
            })
            .collect_view();
        view! {
            <section id="verdict-groups">
                <h3>"Results by machine and configuration"</h3>
                <ul>{items}</ul>
            </section>
        }
    })
}

/// The state of a running repeat.
#[derive(Clone, Copy)]
struct RepeatState {
    running: RwSignal<bool>,
    stop: RwSignal<bool>,
    progress: RwSignal<String>,
    error: RwSignal<Option<String>>,
    /// Bumped when a repeat ended: the verdict is read again.
    done: RwSignal<u32>,
    /// Cancels the running duel.
    cancel: Acting<(), bool>,
}

/// Runs `config` [`REPEATS`] times, one after another (each saved to the run history), then
/// reads the verdict again.
fn start_repeats(config: DuelConfig, s: RepeatState) {
    s.running.set(true);
    s.stop.set(false);
    s.error.set(None);
    // A streaming job: each duel's step events move the progress line while it runs.
    leptos::task::spawn_local(async move {
        for i in 1..=REPEATS {
            if s.stop.get_untracked() {
                break;
            }
            s.progress.set(format!("run {i} of {REPEATS}: starting…"));
            let on_event = move |ev: Event| {
                if let Event::Duel {
                    event:
                        DuelEvent::Step {
                            precision,
                            epoch,
                            step,
                            steps,
                            ..
                        },
                } = ev
                {
                    s.progress.set(format!(
                        "run {i} of {REPEATS}: {precision}, epoch {epoch}, step {step}/{steps}"
                    ));
                }
            };
            match bridge::duel(&config, on_event).await {
                Ok(_) => s.progress.set(format!("run {i} of {REPEATS}: done")),
                Err(e) => {
                    // The progress line no longer says "starting…" of a run that failed.
                    s.progress.set(format!("stopped at run {i} of {REPEATS}"));
                    s.error.set(Some(if e.code == ErrorKind::Cancelled {
                        format!("Repeat cancelled during run {i} of {REPEATS}; the runs before it are kept.")
                    } else {
                        format!("repeat run {i} of {REPEATS} failed: {}", e.message)
                    }));
                    break;
                }
            }
            s.done.update(|n| *n = n.wrapping_add(1));
        }
        s.running.set(false);
        s.done.update(|n| *n = n.wrapping_add(1));
    });
}

fn verdict_view(v: Verdict, repeat: RepeatState) -> impl IntoView {
    let offer = repeat_view(&v, repeat);
    let m = v.machine;
    let gpus = if m.gpus.is_empty() {
        "none found".to_string()
    } else {
        m.gpus.join("; ")
    };
    let latest = match v.latest {
        Some(run) => latest_view(run, v.basis, v.flags, v.latest_origin).into_any(),
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
        {offer}
        <p class="muted">{format!("Made {} by showdown {}.", utc_date_time(v.generated_at), m.version)}</p>
        <section id="verdict-machine">
            <h3>"Where the verdict is made"</h3>
            <table>
                <tbody>
                    <tr><th>"CPU"</th><td>{format!("{} ({} cores)", m.cpu, m.cores)}</td></tr>
                    <tr><th>"GPU"</th><td>{gpus}</td></tr>
                    <tr><th>"Backend (auto)"</th><td>{format!("{} — {}", m.auto_backend, m.auto_reason)}</td></tr>
                </tbody>
            </table>
        </section>
        {latest}
        {groups_view(v.groups)}
        {earlier_view(v.earlier)}
        {notes}
    }
}

/// The Act V page.
#[component]
pub fn VerdictPage() -> impl IntoView {
    let repeat = RepeatState {
        running: RwSignal::new(false),
        stop: RwSignal::new(false),
        progress: RwSignal::new(String::new()),
        error: RwSignal::new(None),
        done: RwSignal::new(0),
        cancel: cancel_job(),
    };
    // Read again whenever a repeat ended.
    let verdict = load(move || {
        repeat.done.track();
        bridge::verdict()
    });
    let export = act(|_: &()| async {
        let doc = bridge::verdict_html().await?;
        download_text(&doc.file_name, "text/html;charset=utf-8", &doc.html)
    });

    view! {
        <h2>"Act V · The Verdict"</h2>
        <p>"What your own runs say: the machine, the newest duel from the run history and the speed-up of FP16 mixed precision over FP32."</p>
        <p>
            <button type="button" id="export-html" on:click=move |_| { export.dispatch(()); } disabled=move || export.pending().get()>"Export HTML"</button>
            <span class="muted">" one self-contained file (no scripts, nothing fetched) to keep or share"</span>
        </p>
        {move || failure(export).map(|e| view! { <p class="error" id="verdict-error">{format!("export failed: {}", e.message)}</p> })}
        {move || repeat.error.get().map(|e| view! { <p class="error" id="verdict-repeat-error">{e}</p> })}
        <div id="verdict">
            <Loaded resource=verdict what="cannot make the verdict" error_id="verdict-error"
                pending=|| view! { <p class="muted">"Reading the run history…"</p> }
                children=move |v: Verdict| verdict_view(v, repeat)/>
        </div>
    }
}
