//! The warm-up epoch reported apart from the timed ones, and the step-time percentiles of the
//! instrumented epoch (`#duel-timing`).

use leptos::prelude::*;
use showdown_core::types::{DuelReport, RunReport};

/// What a run's timing says in words.
pub fn timing_sentence(r: &RunReport) -> String {
    let p = r.precision;
    let epochs = r.epochs.len();
    let head = match r.epochs.first() {
        Some(first) if epochs >= 2 => format!(
            "{p}: epoch 1 (warm-up, includes module loading and the instrumented steps): {:.1} ms; \
             median of epochs 2..{epochs}: {:.1} ms ({:.0} images/s).",
            first.ms, r.epoch_ms_median, r.samples_per_s
        ),
        Some(first) => format!(
            "{p}: its only epoch, {:.1} ms, includes the warm-up (module loading): train 2 or more \
             epochs to time it apart.",
            first.ms
        ),
        None => format!("{p}: no epoch finished."),
    };
    let steps = match &r.step_times {
        Some(st) => format!(
            " Step times over epoch {}'s {} steps, each synchronised: p50 {:.2} ms, p90 {:.2} ms, \
             p99 {:.2} ms, max {:.2} ms (the first step carries the warm-up).",
            st.epoch, st.steps, st.p50_ms, st.p90_ms, st.p99_ms, st.max_ms
        ),
        None => " No per-step times (a one-epoch run's only epoch is the timed one).".into(),
    };
    format!("{head}{steps}")
}

/// The timing notes of a duel, one item per contestant.
pub fn timing_notes(r: &DuelReport) -> impl IntoView {
    let items = r
        .runs
        .iter()
        .map(|run| view! { <li data-precision=run.precision.as_str()>{timing_sentence(run)}</li> })
        .collect_view();
    view! {
        <div id="duel-timing">
            <h4>"Warm-up and step times"</h4>
            <ul style="font-size:0.9em">{items}</ul>
        </div>
    }
}
