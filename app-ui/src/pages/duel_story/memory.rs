//! Memory, explained (`#memory-split`): each contestant's peak memory split by what held it
//! (data set, master weights, low-precision copies, gradients, optimizer state, activations,
//! workspace) as stacked bars that sum to the reported peak, the sentences the numbers make,
//! and a batch-size slider (`#memory-batch`) that computes the same split from the model's
//! specification to show where activations take over and FP16 halves the total.

use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::prelude::RGBColor;
use showdown_core::memory::{self, mb, MemoryCategory, MemorySplit};
use showdown_core::types::{batch_label, memory_batch_label, DuelReport, Precision};

use crate::charts::{self, css_color, Segment, COLORS, YELLOW};

/// The batch sizes the slider steps through (the duel's own batch is added).
const BATCHES: [usize; 18] = [
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 50000, 60000,
];

/// The largest batch the slider and the take-over search go to.
const MAX_BATCH: usize = 60_000;

/// A category's colour (Okabe–Ito, one each).
pub fn category_color(c: MemoryCategory) -> RGBColor {
    match c {
        MemoryCategory::Dataset => COLORS[0],
        MemoryCategory::MasterWeights => COLORS[1],
        MemoryCategory::LowPrecisionCopies => COLORS[2],
        MemoryCategory::Gradients => COLORS[3],
        MemoryCategory::OptimizerState => COLORS[4],
        MemoryCategory::Activations => COLORS[5],
        MemoryCategory::Workspace => YELLOW,
    }
}

fn legend() -> Vec<(String, RGBColor)> {
    MemoryCategory::ALL
        .iter()
        .map(|&c| (c.label().to_string(), category_color(c)))
        .collect()
}

/// Stacked bars (one lane per split, categories in [`MemoryCategory::ALL`]'s order, in MB),
/// and a mark at each lane's reported peak where there is one.
fn draw_splits(
    canvas: web_sys::HtmlCanvasElement,
    title: &str,
    splits: &[(Precision, MemorySplit, Option<u64>)],
) -> Result<(), String> {
    let lanes: Vec<String> = splits
        .iter()
        .map(|(p, _, _)| p.as_str().to_string())
        .collect();
    let mut segments = Vec::new();
    let mut marks = Vec::new();
    for (lane, (p, s, peak)) in splits.iter().enumerate() {
        let mut at = 0.0;
        let total = s.total().max(1);
        for c in MemoryCategory::ALL {
            let v = mb(s.get(c));
            if s.get(c) == 0 {
                continue;
            }
            segments.push(Segment {
                lane,
                x0: at,
                x1: at + v,
                color: category_color(c),
                label: format!("{} {}", short_label(c), charts::fmt(v)),
                title: format!(
                    "{p} · {}: {} MB ({:.1} %)",
                    c.label(),
                    charts::fmt(v),
                    100.0 * s.get(c) as f64 / total as f64
                ),
            });
            at += v;
        }
        if let Some(b) = peak {
            marks.push((lane, mb(*b), format!("{p}: reported peak")));
        }
    }
    let legend = legend();
    charts::lanes(
        canvas,
        &charts::Lanes {
            title,
            unit: "MB",
            lanes: &lanes,
            legend: &legend,
            segments: &segments,
            marks: &marks,
        },
    )
    .map(|_| ())
}

fn short_label(c: MemoryCategory) -> &'static str {
    match c {
        MemoryCategory::Dataset => "data",
        MemoryCategory::MasterWeights => "master",
        MemoryCategory::LowPrecisionCopies => "copies",
        MemoryCategory::Gradients => "grads",
        MemoryCategory::OptimizerState => "Adam",
        MemoryCategory::Activations => "act.",
        MemoryCategory::Workspace => "ws",
    }
}

/// The colour key of the categories, as HTML.
fn legend_view() -> impl IntoView {
    MemoryCategory::ALL
        .iter()
        .map(|&c| {
            let style = format!(
                "display:inline-block;width:12px;height:12px;margin:0 4px 0 10px;vertical-align:middle;background:{}",
                css_color(category_color(c))
            );
            view! { <span class="memory-key"><span style=style></span>{c.label()}</span> }
        })
        .collect_view()
}

/// What the panel needs of a duel's report.
#[derive(Clone, Debug, PartialEq)]
struct MemoryInput {
    batch: usize,
    n_train: usize,
    n_test: usize,
    dataset: String,
    /// Contestant, measured split, reported peak.
    runs: Vec<(Precision, Option<MemorySplit>, u64)>,
}

/// Whether a split's sum and the reported peak agree, in words.
fn peak_line(p: Precision, s: &MemorySplit, peak: u64) -> String {
    let total = s.total();
    if total == peak {
        format!(
            "{p}: the split sums to {:.2} MB, the reported peak.",
            mb(total)
        )
    } else {
        format!(
            "{p}: the split sums to {:.2} MB, the reported peak is {:.2} MB: they differ by {:+.3} MB.",
            mb(total),
            mb(peak),
            mb(total) - mb(peak)
        )
    }
}

/// The sentence under the slider's bars (`#memory-sentence`).
fn estimate_sentence(
    batch: usize,
    n_train: usize,
    n_test: usize,
    s32: &MemorySplit,
    s16: &MemorySplit,
    over: (Option<usize>, Option<usize>),
) -> String {
    let capped = batch > n_train.max(n_test);
    let saved = 100.0 * (1.0 - s16.total() as f64 / s32.total().max(1) as f64);
    let over_text = |o: Option<usize>| {
        o.map(|b| format!("batch {b}"))
            .unwrap_or_else(|| format!("no batch up to {MAX_BATCH}"))
    };
    format!(
        "At batch {batch}{} activations take {:.1} MB of {:.1} MB in fp32 and {:.1} MB of {:.1} MB \
         in fp16; FP16 saves {saved:.1} % of the total ({:.2}× fp32's). With {n_train} training \
         and {n_test} test images held on the device, activations outgrow the data set from {} \
         in fp32 and {} in fp16.",
        if capped {
            format!(" (a batch holds at most {} images here)", n_train.max(n_test))
        } else {
            String::new()
        },
        mb(s32.activations),
        mb(s32.total()),
        mb(s16.activations),
        mb(s16.total()),
        s16.total() as f64 / s32.total().max(1) as f64,
        over_text(over.0),
        over_text(over.1),
    )
}

/// The memory section; empty until the duel's report arrives.
#[component]
pub fn MemoryPanel(
    /// Put before every element id: `""` for the live duel (`#memory-split`…), `"history-"`
    /// for a saved one (`#history-memory-split`…).
    prefix: &'static str,
    /// The duel's report.
    #[prop(into)]
    report: Signal<Option<DuelReport>>,
) -> impl IntoView {
    let pid = move |name: &str| format!("{prefix}{name}");
    let input = Memo::new(move |_| {
        report.with(|r| {
            r.as_ref().map(|r| MemoryInput {
                batch: r.config.batch,
                n_train: r.dataset.train,
                n_test: r.dataset.test,
                dataset: r.dataset.name.clone(),
                runs: r
                    .runs
                    .iter()
                    .map(|x| (x.precision, x.memory, x.peak_memory_bytes))
                    .collect(),
            })
        })
    });
    // The data set sizes the slider computes with: this duel's, or a whole data set's.
    let sizes = RwSignal::new(None::<(usize, usize)>);
    let batch = RwSignal::new(None::<usize>);
    Effect::new(move |_| {
        input.track();
        sizes.set(None);
        batch.set(None);
    });
    let n = Memo::new(move |_| {
        sizes.get().unwrap_or_else(|| {
            input.with(|i| {
                i.as_ref()
                    .map_or((60_000, 10_000), |i| (i.n_train, i.n_test))
            })
        })
    });
    let steps = Memo::new(move |_| {
        let mut v = BATCHES.to_vec();
        if let Some(b) = input.with(|i| i.as_ref().map(|i| i.batch)) {
            v.push(b.min(MAX_BATCH));
        }
        v.sort_unstable();
        v.dedup();
        v
    });
    let chosen = Memo::new(move |_| {
        batch
            .get()
            .or_else(|| input.with(|i| i.as_ref().map(|i| i.batch)))
            .unwrap_or(128)
    });
    let index = Memo::new(move |_| {
        let b = chosen.get();
        steps.with(|v| {
            v.iter()
                .position(|x| *x >= b)
                .unwrap_or(v.len().saturating_sub(1))
        })
    });
    let take_over = Memo::new(move |_| {
        let (t, e) = n.get();
        (
            memory::activations_take_over(Precision::Fp32, t, e, MAX_BATCH),
            memory::activations_take_over(Precision::Fp16, t, e, MAX_BATCH),
        )
    });
    // The measured runs' workspace, per precision (what the estimate cannot compute).
    let workspace = move |p: Precision| {
        input.with(|i| {
            i.as_ref()
                .and_then(|i| i.runs.iter().find(|r| r.0 == p))
                .and_then(|r| r.1.map(|s| s.workspace))
                .unwrap_or(0)
        })
    };
    let estimates = Memo::new(move |_| {
        let (b, (t, e)) = (chosen.get(), n.get());
        (
            memory::estimate(Precision::Fp32, b, t, e, workspace(Precision::Fp32)),
            memory::estimate(Precision::Fp16, b, t, e, workspace(Precision::Fp16)),
        )
    });

    let measured_canvas = NodeRef::<Canvas>::new();
    let measured_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let Some(c) = measured_canvas.get() else {
            return;
        };
        let Some(i) = input.get() else { return };
        let splits: Vec<(Precision, MemorySplit, Option<u64>)> = i
            .runs
            .iter()
            .filter_map(|(p, s, peak)| s.map(|s| (*p, s, Some(*peak))))
            .collect();
        if splits.is_empty() {
            return;
        }
        let title = format!(
            "Peak memory by what holds it ({}, measured)",
            memory_batch_label(i.batch, i.n_train, i.n_test)
        );
        measured_error.set(draw_splits(c, &title, &splits).err());
    });
    let estimate_canvas = NodeRef::<Canvas>::new();
    let estimate_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let (s32, s16) = estimates.get();
        let b = chosen.get();
        let (t, e) = n.get();
        let Some(c) = estimate_canvas.get() else {
            return;
        };
        let title = format!(
            "Computed from the model's specification at {}",
            memory_batch_label(b, t, e)
        );
        let splits = [(Precision::Fp32, s32, None), (Precision::Fp16, s16, None)];
        estimate_error.set(draw_splits(c, &title, &splits).err());
    });

    let measured = move || {
        input.get().map(|i| {
            let rows = i
                .runs
                .iter()
                .map(|(p, s, peak)| {
                    let text = match s {
                        Some(s) => peak_line(*p, s, *peak),
                        None => format!(
                            "{p}: peak {:.2} MB; no split in this report (recorded before the split existed).",
                            mb(*peak)
                        ),
                    };
                    view! { <li data-precision=p.as_str()>{text}</li> }
                })
                .collect_view();
            let splits: Vec<(Precision, MemorySplit)> =
                i.runs.iter().filter_map(|(p, s, _)| s.map(|s| (*p, s))).collect();
            let held = i.batch.min(i.n_train.max(i.n_test)).max(1);
            let sentences = memory::sentences(held, &splits)
                .into_iter()
                .map(|s| view! { <p>{s}</p> })
                .collect_view();
            let any = !splits.is_empty();
            view! {
                <canvas id={pid("memory-chart")} node_ref=measured_canvas width="760" height="160"
                    style:display=if any { "block" } else { "none" }></canvas>
                <ul class="memory-rows" style="font-size:0.9em">{rows}</ul>
                <div id={pid("memory-sentences")}>{sentences}</div>
            }
        })
    };
    let size_options = move || {
        let own = input.with(|i| i.as_ref().map(|i| (i.dataset.clone(), i.n_train, i.n_test)));
        let mut v = Vec::new();
        if let Some((name, t, e)) = own {
            v.push((
                "duel".to_string(),
                format!("this duel's {name}: {t} training / {e} test images"),
            ));
        }
        v.push(("mnist-sample".into(), "mnist-sample: 8000 / 2000".into()));
        v.push((
            "mnist".into(),
            "MNIST or Fashion-MNIST: 60000 / 10000".into(),
        ));
        v.into_iter()
            .map(|(value, label)| view! { <option value=value>{label}</option> })
            .collect_view()
    };

    view! {
        <Show when=move || input.with(Option::is_some)>
            <section id={pid("memory-split")} class="card">
                <h3>"Memory, explained"</h3>
                <p class="muted">"Each contestant's peak, split by what held it at that moment (the backend's allocation accounting)."</p>
                {move || input.with(|i| i.as_ref().and_then(|i| (i.batch > i.n_train).then(|| {
                    view! { <p class="note" id={pid("memory-batch-note")}>{format!(
                        "This duel asked for batch {}; with {} training images each step held {} ({}).",
                        i.batch, i.n_train, i.batch.min(i.n_train).max(1), batch_label(i.batch, i.n_train)
                    )}</p> }
                })))}
                <p class="memory-legend" style="font-size:0.85em">{legend_view()}</p>
                {measured}
                {move || measured_error.get().map(|e| view! { <p class="error">{e}</p> })}
                <h4>"Any batch size"</h4>
                <div class="controls">
                    <label for={pid("memory-batch")}>"batch "
                        <input type="range" id={pid("memory-batch")} min="0"
                            max=move || steps.with(|v| v.len().saturating_sub(1)).to_string() step="1"
                            prop:value=move || index.get().to_string()
                            on:input=move |ev| {
                                if let Ok(i) = event_target_value(&ev).parse::<usize>() {
                                    if let Some(b) = steps.with(|v| v.get(i).copied()) {
                                        batch.set(Some(b));
                                    }
                                }
                            }/>
                        <output id={pid("memory-batch-value")}>{move || {
                            let (b, (t, e)) = (chosen.get(), n.get());
                            if b > t.max(e) {
                                format!("{b} → {} held", t.max(e))
                            } else {
                                b.to_string()
                            }
                        }}</output>
                    </label>
                    " "
                    <label for={pid("memory-data")}>"images "
                        <select id={pid("memory-data")} on:change=move |ev| {
                            sizes.set(match event_target_value(&ev).as_str() {
                                "mnist-sample" => Some((8000, 2000)),
                                "mnist" => Some((60_000, 10_000)),
                                _ => None,
                            });
                        }>{size_options}</select>
                    </label>
                </div>
                <canvas id={pid("memory-estimate-chart")} node_ref=estimate_canvas width="760" height="120"></canvas>
                {move || estimate_error.get().map(|e| view! { <p class="error">{e}</p> })}
                <p id={pid("memory-sentence")}>{move || {
                    let (s32, s16) = estimates.get();
                    let (t, e) = n.get();
                    estimate_sentence(chosen.get(), t, e, &s32, &s16, take_over.get())
                }}</p>
                <p class="muted" style="font-size:0.85em">"The computed split counts what the trainer allocates by the model's shapes; the workspace (kernels' scratch) cannot be computed, so it is the measured run's."</p>
            </section>
        </Show>
    }
}
