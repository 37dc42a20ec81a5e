//! The GPU's NVML readings as the pages show them: a live strip (utilisation, SM clock, memory,
//! power, temperature, and a sparkline of the utilisation) fed by a job's
//! [`Event::Telemetry`](showdown_core::protocol::Event::Telemetry) samples, used by Act II's
//! duel and Act III's lab jobs; and the readings' wording, which Home's GPU card shares.

use leptos::prelude::*;
use showdown_core::types::TelemetrySample;

/// Readings the sparkline keeps (about 12 s at the sampler's 5 Hz).
const SPARK_POINTS: usize = 60;

/// The readings of `s` as (CSS class, label, value), in the strip's order.
pub fn readings(s: &TelemetrySample) -> [(&'static str, &'static str, String); 5] {
    [
        ("tl-util", "GPU util", format!("{} %", s.gpu_util_pct)),
        ("tl-clock", "SM clock", format!("{} MHz", s.sm_clock_mhz)),
        (
            "tl-memory",
            "memory used",
            format!("{:.2} GB", s.memory_used_bytes as f64 / 1e9),
        ),
        ("tl-power", "power", format!("{:.0} W", s.power_w)),
        ("tl-temp", "temperature", format!("{} °C", s.temperature_c)),
    ]
}

/// A live strip of the GPU's readings: the latest `sample` and a sparkline of the GPU
/// utilisation over the last readings. The sparkline starts again when `sample` goes back to
/// `None` or its `t_ms` goes back (a new job). Before the first reading it says it waits for
/// one. Everything is rendered as text.
#[component]
pub fn TelemetryStrip(
    /// The latest reading (`None` before the first): a `ReadSignal`, `RwSignal`, `Memo` or
    /// `Signal::derive(..)`.
    #[prop(into)]
    sample: Signal<Option<TelemetrySample>>,
    /// The strip's element ID, if it needs one.
    #[prop(optional)]
    id: Option<&'static str>,
) -> impl IntoView {
    let history = RwSignal::new(Vec::<(f64, u32)>::new());
    Effect::new(move |_| match sample.get() {
        None => history.set(Vec::new()),
        Some(s) => history.update(|h| {
            if h.last().is_some_and(|(t, _)| s.t_ms < *t) {
                h.clear();
            }
            if h.len() >= SPARK_POINTS {
                h.remove(0);
            }
            h.push((s.t_ms, s.gpu_util_pct.min(100)));
        }),
    });
    let points = move || {
        history.with(|h| {
            let step = 100.0 / (SPARK_POINTS - 1) as f64;
            let first = SPARK_POINTS - h.len();
            h.iter()
                .enumerate()
                .map(|(i, (_, u))| {
                    format!(
                        "{:.1},{:.1}",
                        (first + i) as f64 * step,
                        20.0 - f64::from(*u) / 5.0
                    )
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    let values = move || match sample.get() {
        None => {
            view! { <span class="muted">"waiting for the first GPU reading…"</span> }.into_any()
        }
        Some(s) => {
            let items = readings(&s)
                .into_iter()
                .map(|(class, label, value)| {
                    view! { <span class=format!("tl {class}") title=label><strong>{value}</strong>" "<small>{label}</small></span> }
                })
                .collect_view();
            view! {
                {items}
                <span class="tl tl-time muted">{format!("t = {:.1} s", s.t_ms / 1e3)}</span>
            }
            .into_any()
        }
    };
    view! {
        <div class="telemetry-live" id=id data-samples=move || history.with(Vec::len).to_string()>
            <svg class="spark" viewBox="0 0 100 20" preserveAspectRatio="none" width="140" height="24">
                <title>"GPU utilisation, last readings"</title>
                <polyline points=points fill="none" stroke="#1f77b4" stroke-width="1.5"/>
            </svg>
            {values}
        </div>
    }
}
