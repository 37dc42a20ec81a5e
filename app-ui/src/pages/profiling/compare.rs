//! Act IV's comparison of two kernels: both values in one readable unit, compared on their SI
//! values; a side whose import is removed is cleared.

use super::*;

/// One side (A or B) of the comparison: an import and one of its kernels.
#[derive(Clone, Copy)]
pub(super) struct Side {
    /// The import's ID (empty: none chosen).
    pub(super) import: RwSignal<String>,
    /// Its kernels' panels.
    /// Its kernels' panels, read whenever the import changes (`None`: none chosen, or not read
    /// yet).
    pub(super) kernels: LocalResource<Option<Result<Vec<KernelPanels>, String>>>,
    /// The index of the kernel compared.
    pub(super) kernel: RwSignal<usize>,
}

impl Side {
    pub(super) fn new() -> Self {
        let import = RwSignal::new(String::new());
        let kernels = LocalResource::new(move || {
            let id = import.get();
            async move {
                if id.is_empty() {
                    return None;
                }
                Some(bridge::ncu_panels(&id, None).await.map_err(|e| e.message))
            }
        });
        Side {
            import,
            kernels,
            kernel: RwSignal::new(0),
        }
    }

    /// Chooses import `id`; its panels load.
    pub(super) fn choose(self, id: String) {
        self.import.set(id);
        self.kernel.set(0);
    }

    /// The kernel chosen, once loaded.
    pub(super) fn current(self) -> Option<KernelPanels> {
        let i = self.kernel.get();
        self.kernels
            .with(|k| k.as_ref()?.as_ref()?.as_ref().ok()?.get(i).cloned())
    }
}

/// The pickers of one side of the comparison (`name` is `a` or `b`).
pub(super) fn side_view(
    name: &'static str,
    label: &'static str,
    side: Side,
    library: Library,
) -> impl IntoView {
    let imports = move || {
        library
            .imports
            .get()
            .into_iter()
            .map(|i| {
                let chosen = side.import.get_untracked() == i.id;
                view! {
                    <option value=i.id.clone() selected=chosen>
                        {format!("{} ({} kernel(s))", i.source_name, i.kernels)}
                    </option>
                }
            })
            .collect_view()
    };
    let kernels = move || match side.kernels.get().flatten() {
        None => None,
        Some(Err(e)) => Some(view! { <p class="error">{e}</p> }.into_any()),
        Some(Ok(ks)) => {
            let options = kernel_options(&ks, false, side.kernel.get_untracked());
            Some(
                view! {
                    <select id=format!("compare-{name}-kernel")
                        prop:value=move || side.kernel.get().to_string()
                        on:change=move |ev| {
                            if let Ok(i) = event_target_value(&ev).parse() {
                                side.kernel.set(i);
                            }
                        }>{options}</select>
                }
                .into_any(),
            )
        }
    };
    view! {
        <div class="compare-side" style="flex:1 1 300px;min-width:0">
            <label for=format!("compare-{name}")>{label}" "</label>
            <select id=format!("compare-{name}") prop:value=move || side.import.get()
                on:change=move |ev| side.choose(event_target_value(&ev))>
                <option value="">"— choose an import —"</option>
                {imports}
            </select>
            {kernels}
        </div>
    }
}

/// One row of the comparison table: both values in one readable unit, compared on their SI
/// values; a difference the printed digits cannot tell apart is not claimed.
pub(super) fn delta_row(d: PanelDelta) -> impl IntoView {
    let title = if d.within_printed_digits {
        "the two exports printed these to different digits; they agree within them".to_string()
    } else {
        format!("{} / {}", d.section, d.name)
    };
    view! {
        <tr class="delta" data-panel=d.panel.clone() class:same=d.within_printed_digits>
            <td>{d.panel_title.clone()}</td>
            <td title=format!("{} / {}", d.section, d.name)>{d.label.clone()}</td>
            <td class="num a">{d.a_shown.clone()}</td>
            <td class="num b">{d.b_shown.clone()}</td>
            <td class="num ratio" title=title.clone()>{d.ratio_shown.clone()}</td>
            <td class="num difference" title=title>{d.difference_shown.clone()}</td>
        </tr>
    }
}

/// The most bars the comparison chart draws.
pub(super) const MAX_COMPARE_BARS: usize = 40;

/// Compares two saved imports (or two kernels of one): every panel metric both have, with
/// B / A and B − A, as a table and a bar chart of the ratios.
#[component]
pub(super) fn Compare(library: Library) -> impl IntoView {
    let a = Side::new();
    let b = Side::new();
    // A side whose import was removed (here or elsewhere) is cleared with it: the table never
    // shows numbers of an import that is gone.
    Effect::new(move |_| {
        let ids: Vec<String> = library
            .imports
            .with(|l| l.iter().map(|i| i.id.clone()).collect());
        for side in [a, b] {
            let chosen = side.import.get_untracked();
            if !chosen.is_empty() && !ids.contains(&chosen) {
                side.choose(String::new());
            }
        }
    });
    let deltas: Memo<Option<(String, String, Vec<PanelDelta>)>> = Memo::new(move |_| {
        let (ka, kb) = (a.current()?, b.current()?);
        Some((
            ka.short_name.clone(),
            kb.short_name.clone(),
            compare_panels(&ka, &kb),
        ))
    });
    let canvas = NodeRef::<Canvas>::new();
    let chart_error = RwSignal::new(None::<String>);
    let has_bars = move || {
        deltas.with(|d| {
            d.as_ref()
                .is_some_and(|(_, _, rows)| rows.iter().any(|r| r.ratio.is_some()))
        })
    };
    Effect::new(move |_| {
        let Some(c) = canvas.get() else {
            return;
        };
        let bars: Vec<(String, f64)> = deltas.with(|d| {
            d.as_ref()
                .map(|(_, _, rows)| {
                    rows.iter()
                        // A difference within the printed digits is drawn as the table says
                        // it (≈ 1×), not as the ratio of two rounded numbers (0.01 % / 0.005 %).
                        .filter_map(|r| {
                            let ratio = if r.within_printed_digits {
                                1.0
                            } else {
                                r.ratio?
                            };
                            Some((format!("{}: {}", r.panel_title, r.label), ratio))
                        })
                        .filter(|(_, v)| v.is_finite())
                        .take(MAX_COMPARE_BARS)
                        .collect()
                })
                .unwrap_or_default()
        });
        if bars.is_empty() {
            return;
        }
        c.set_height(40 + 24 * bars.len() as u32);
        let r = charts::bar_chart(
            c,
            "B / A for each metric both have (1 = the same)",
            "×",
            None,
            &bars,
        );
        chart_error.set(r.err());
    });
    let table = move || {
        let Some((name_a, name_b, rows)) = deltas.get() else {
            return view! {
                <p class="muted">"Choose two imports (or one import twice, with two kernels) to compare their panels."</p>
            }
            .into_any();
        };
        if rows.is_empty() {
            return view! { <p class="muted" id="compare-empty">"These two kernels have no panel metric in common."</p> }
                .into_any();
        }
        let numeric = rows.iter().filter(|r| r.ratio.is_some()).count();
        let caption = format!(
            "A: {name_a} · B: {name_b} — {} metric(s) in both, {numeric} with a ratio",
            rows.len()
        );
        view! {
            <p class="kernel-name" id="compare-caption">{caption}</p>
            <table id="compare-table">
                <thead><tr><th>"Panel"</th><th>"Metric"</th><th>"A"</th><th>"B"</th><th>"B / A"</th><th>"B − A"</th></tr></thead>
                <tbody>{rows.into_iter().map(delta_row).collect_view()}</tbody>
            </table>
        }
        .into_any()
    };
    view! {
        <section id="ncu-compare" class="card">
            <h4>"Compare two reports"</h4>
            <div class="controls" style="align-items:flex-start">
                {side_view("a", "A", a, library)}
                {side_view("b", "B", b, library)}
            </div>
            <canvas id="compare-chart" node_ref=canvas width="760" height="40"
                style:display=move || if has_bars() { "block" } else { "none" }></canvas>
            {move || chart_error.get().map(|e| view! { <p class="error">{e}</p> })}
            {table}
        </section>
    }
}
