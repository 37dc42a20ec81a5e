//! Act I's grid of real images: the data set, split and paging (`#digits`), and the canvas
//! (`#digit-grid`) whose image, clicked or chosen with the keyboard, goes through the network.

use super::*;

/// A grid cell's size, canvas pixels, for `w × h` images.
pub(super) fn cell(w: usize, h: usize) -> (usize, usize) {
    (w * ZOOM + GAP, h * ZOOM + GAP + CAPTION)
}

/// A move of the grid's keyboard cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    Left,
    Right,
    Up,
    Down,
}

/// Where the cursor at image `at` of a page of `count` images goes on `step`: along a row and
/// on to the next or previous row, or a row of [`GRID_COLUMNS`] up or down, staying on the
/// page.
pub(super) fn grid_step(at: usize, count: usize, step: Step) -> usize {
    let last = count.saturating_sub(1);
    match step {
        Step::Left => at.saturating_sub(1),
        Step::Right => (at + 1).min(last),
        Step::Up => at.checked_sub(GRID_COLUMNS).unwrap_or(at),
        Step::Down => {
            if at + GRID_COLUMNS <= last {
                at + GRID_COLUMNS
            } else {
                at
            }
        }
    }
}

/// The place of image `i` of `p` on the canvas, as CSS in percent of the canvas (for the
/// outlines laid over it).
pub(super) fn cell_box(p: &DatasetSamples, i: usize) -> String {
    let (cell_w, cell_h) = cell(p.width, p.height);
    let rows = p.count().div_ceil(GRID_COLUMNS).max(1);
    let (cw, ch) = ((GRID_COLUMNS * cell_w) as f64, (rows * cell_h) as f64);
    format!(
        "left: {:.3}%; top: {:.3}%; width: {:.3}%; height: {:.3}%",
        100.0 * ((i % GRID_COLUMNS) * cell_w) as f64 / cw,
        100.0 * ((i / GRID_COLUMNS) * cell_h) as f64 / ch,
        100.0 * cell_w as f64 / cw,
        100.0 * cell_h as f64 / ch
    )
}

/// The key a data-set image is shown under (`mnist-sample/test/17`).
pub(super) fn digit_key(dataset: &str, split: DataSplit, index: usize) -> String {
    format!("{dataset}/{}/{index}", split.as_str())
}

/// Draws `page` on `canvas` as rows of [`GRID_COLUMNS`] images, dark ink on white, each
/// with its class name beneath; sizes the canvas to fit.
pub(super) fn draw_grid(
    canvas: &web_sys::HtmlCanvasElement,
    page: &DatasetSamples,
) -> Result<(), String> {
    let pixels = page
        .pixels()
        .map_err(|e| format!("the page's pixels are unreadable: {e}"))?;
    let (w, h) = (page.width, page.height);
    let (cell_w, cell_h) = cell(w, h);
    let rows = page.count().div_ceil(GRID_COLUMNS).max(1);
    let (cw, ch) = (GRID_COLUMNS * cell_w, rows * cell_h);
    canvas.set_width(cw as u32);
    canvas.set_height(ch as u32);
    let ctx = inside::maps::context(canvas)?;
    let mut rgba = vec![255u8; cw * ch * 4];
    for (i, image) in pixels.chunks_exact(w * h).enumerate() {
        let (x0, y0) = (
            (i % GRID_COLUMNS) * cell_w + GAP / 2,
            (i / GRID_COLUMNS) * cell_h + GAP / 2,
        );
        for (p, &v) in image.iter().enumerate() {
            let ink = 255 - v;
            let at = (x0 + (p % w) * ZOOM, y0 + (p / w) * ZOOM);
            inside::maps::fill_square(&mut rgba, cw, at, ZOOM, [ink, ink, ink]);
        }
    }
    inside::maps::put_rgba(&ctx, &rgba, cw, ch)?;
    ctx.set_font("11px sans-serif");
    ctx.set_text_align("center");
    ctx.set_fill_style_str("#333");
    for i in 0..page.count() {
        let x = (i % GRID_COLUMNS) * cell_w + cell_w / 2;
        let y = (i / GRID_COLUMNS) * cell_h + GAP / 2 + h * ZOOM + CAPTION - 2;
        ctx.fill_text(page.class_of(i), x as f64, y as f64)
            .map_err(|e| format!("cannot write a caption: {e:?}"))?;
    }
    Ok(())
}

/// The grid of real images: a data-set and split picker, the canvas, and paging. Clicking an
/// image chooses it (`chosen`); the chosen one is outlined.
#[component]
pub(super) fn DigitGrid(chosen: RwSignal<Chosen>) -> impl IntoView {
    let datasets: RwSignal<Vec<DatasetSummary>> = RwSignal::new(Vec::new());
    let dataset = RwSignal::new("mnist-sample".to_string());
    let split = RwSignal::new(DataSplit::Test);
    let offset = RwSignal::new(0usize);
    // Why a page could not be drawn (the canvas's own errors).
    let error = RwSignal::new(None::<String>);
    // Whether the latest page asked is still unanswered (Previous and Next wait for it).
    let loading = RwSignal::new(false);

    // The data sets, asked when the page opens (GetMnist updates the list after a download).
    let dataset_list = load(bridge::list_datasets);
    Effect::new(move |_| {
        if let Some(Ok(list)) = dataset_list.get() {
            datasets.set(list);
        }
    });
    // The page of images at the chosen data set, split and offset; only the answer to the
    // latest request is kept.
    let samples = load(move || {
        let (name, sp, at) = (dataset.get(), split.get(), offset.get());
        loading.set(true);
        async move {
            let answer = bridge::dataset_samples(&name, sp, at, PAGE).await;
            loading.set(false);
            answer.map_err(|e| ApiError {
                code: e.code,
                message: format!("cannot read {name}: {}", e.message),
            })
        }
    });
    // The page shown: the latest one read (kept when a later one failed).
    let page: Memo<Option<DatasetSamples>> = Memo::new(
        move |prev: Option<&Option<DatasetSamples>>| match samples.get() {
            Some(Ok(p)) => Some(p),
            _ => prev.cloned().flatten(),
        },
    );
    let failed = move || {
        let list = dataset_list
            .with(|l| l.as_ref().and_then(|l| l.as_ref().err().cloned()))
            .map(|e| format!("cannot list the data sets: {}", e.message));
        let sample = samples.with(|s| s.as_ref().and_then(|s| s.as_ref().err().cloned()));
        sample.map(|e| e.message).or(list).or_else(|| error.get())
    };

    let options = move || {
        let list: Vec<DatasetSummary> =
            datasets.with(|l| l.iter().filter(|d| d.available).cloned().collect());
        if list.is_empty() {
            return view! { <option value="mnist-sample">"mnist-sample"</option> }.into_any();
        }
        list.into_iter()
            .map(|d| {
                let selected = d.name == dataset.get_untracked();
                let label = format!("{} ({} train / {} test)", d.name, d.train, d.test);
                view! { <option value=d.name.clone() selected=selected>{label}</option> }
            })
            .collect_view()
            .into_any()
    };
    let total = move || page.with(|p| p.as_ref().map(|p| p.total).unwrap_or(0));
    let no_previous = move || offset.get() == 0 || loading.get();
    let no_next = move || offset.get() + PAGE >= total() || loading.get();
    let range = move || {
        page.with(|p| {
            p.as_ref().map(|p| {
                format!(
                    "{} {} images {}–{} of {}",
                    p.dataset,
                    p.split,
                    p.offset + 1,
                    p.offset + p.count(),
                    p.total
                )
            })
        })
    };
    view! {
        <section id="digits" class="card">
            <h3>"Real images from the data set — click one to run it through the network"</h3>
            <div class="controls">
                <label for="digit-dataset">"data set "
                    <select id="digit-dataset" on:change=move |ev| {
                        dataset.set(event_target_value(&ev));
                        offset.set(0);
                    }>{options}</select>
                </label>
                <label for="digit-split">"split "
                    <select id="digit-split" on:change=move |ev| {
                        split.set(if event_target_value(&ev) == "train" { DataSplit::Train } else { DataSplit::Test });
                        offset.set(0);
                    }>
                        <option value="test" selected>"test"</option>
                        <option value="train">"train"</option>
                    </select>
                </label>
                <button type="button" id="digits-prev" disabled=no_previous
                    on:click=move |_| offset.update(|o| *o = o.saturating_sub(PAGE))>"Previous"</button>
                <button type="button" id="digits-next" disabled=no_next
                    on:click=move |_| offset.update(|o| *o += PAGE)>"Next 64"</button>
                <span id="digit-range" class="muted">{range}</span>
            </div>
            <crate::pages::get_mnist::GetMnist datasets=datasets/>
            {move || failed().map(|e| view! { <p class="error" id="digit-error">{e}</p> })}
            <GridCanvas page=page chosen=chosen error=error/>
        </section>
    }
}

/// The page of images on a canvas (`#digit-grid`): clicking an image, or moving the keyboard's
/// cursor to it and pressing Enter, chooses it (`chosen`); the chosen one is outlined.
#[component]
pub(super) fn GridCanvas(
    page: Memo<Option<DatasetSamples>>,
    chosen: RwSignal<Chosen>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    // The keyboard's cursor on the page (an index into it), and whether the grid has the focus.
    let cursor = RwSignal::new(None::<usize>);
    let focused = RwSignal::new(false);
    Effect::new(move |_| {
        let Some(c) = canvas.get() else { return };
        page.with(|p| {
            if let Some(p) = p {
                if let Err(e) = draw_grid(&c, p) {
                    error.set(Some(e));
                }
            }
        });
    });

    // Image `i` of the page on the canvas chooses it (a click, or Enter/Space on the cursor).
    let choose = move |i: usize| {
        let Some((name, sp, index)) = page.with_untracked(|p| {
            p.as_ref()
                .filter(|p| i < p.count())
                .map(|p| (p.dataset.clone(), p.split, p.offset + i))
        }) else {
            return;
        };
        cursor.set(Some(i));
        chosen.set(Some((
            digit_key(&name, sp, index),
            DigitSource::Dataset {
                dataset: name,
                split: sp,
                index,
            },
        )));
    };
    // A click chooses the image under the pointer.
    let pick = move |ev: web_sys::MouseEvent| {
        let Some(c) = canvas.get_untracked() else {
            return;
        };
        let Some((count, w, h)) =
            page.with_untracked(|p| p.as_ref().map(|p| (p.count(), p.width, p.height)))
        else {
            return;
        };
        let sx = f64::from(c.width()) / f64::from(c.client_width().max(1));
        let sy = f64::from(c.height()) / f64::from(c.client_height().max(1));
        let (x, y) = (f64::from(ev.offset_x()) * sx, f64::from(ev.offset_y()) * sy);
        let (cell_w, cell_h) = cell(w, h);
        if x < 0.0 || y < 0.0 {
            return;
        }
        let (col, row) = (x as usize / cell_w, y as usize / cell_h);
        let i = row * GRID_COLUMNS + col;
        if col >= GRID_COLUMNS || i >= count {
            return;
        }
        choose(i);
    };
    // The keyboard: the arrow keys (Home, End) move the cursor over the page, Enter or Space
    // chooses the image under it.
    let keys = move |ev: web_sys::KeyboardEvent| {
        let count = page.with_untracked(|p| p.as_ref().map(|p| p.count()).unwrap_or(0));
        if count == 0 {
            return;
        }
        let at = cursor.get_untracked().unwrap_or(0).min(count - 1);
        let to = match ev.key().as_str() {
            "ArrowRight" => Some(grid_step(at, count, Step::Right)),
            "ArrowLeft" => Some(grid_step(at, count, Step::Left)),
            "ArrowDown" => Some(grid_step(at, count, Step::Down)),
            "ArrowUp" => Some(grid_step(at, count, Step::Up)),
            "Home" => Some(0),
            "End" => Some(count - 1),
            "Enter" | " " | "Spacebar" => {
                ev.prevent_default();
                choose(at);
                return;
            }
            _ => None,
        };
        if let Some(to) = to {
            ev.prevent_default();
            cursor.set(Some(to));
        }
    };
    // Focus puts the cursor on the chosen image when it is on this page, else the first.
    let on_focus = move |_| {
        focused.set(true);
        if cursor.get_untracked().is_none() {
            let here = page.with_untracked(|p| {
                p.as_ref().and_then(|p| {
                    chosen.with_untracked(|c| match c {
                        Some((
                            _,
                            DigitSource::Dataset {
                                dataset: d,
                                split: sp,
                                index,
                            },
                        )) if *d == p.dataset
                            && *sp == p.split
                            && (p.offset..p.offset + p.count()).contains(index) =>
                        {
                            Some(index - p.offset)
                        }
                        _ => None,
                    })
                })
            });
            cursor.set(Some(here.unwrap_or(0)));
        }
    };
    // A new page keeps the cursor inside it.
    Effect::new(move |_| {
        let count = page.with(|p| p.as_ref().map(|p| p.count()).unwrap_or(0));
        if let Some(c) = cursor.get_untracked() {
            cursor.set((count > 0).then(|| c.min(count - 1)));
        }
    });
    // The chosen image's cell on this page, as an outline in percent of the canvas.
    let outline = move || {
        let index = chosen.with(|c| match c {
            Some((
                _,
                DigitSource::Dataset {
                    dataset: d,
                    split: sp,
                    index,
                },
            )) => Some((d.clone(), *sp, *index)),
            _ => None,
        });
        let Some((d, sp, index)) = index else {
            return "display: none".to_string();
        };
        page.with(|p| match p.as_ref() {
            Some(p)
                if p.dataset == d
                    && p.split == sp
                    && index >= p.offset
                    && index < p.offset + p.count() =>
            {
                cell_box(p, index - p.offset)
            }
            _ => "display: none".to_string(),
        })
    };
    // The keyboard's cursor, while the grid has the focus.
    let cursor_box = move || match (focused.get(), cursor.get()) {
        (true, Some(i)) => page.with(|p| {
            p.as_ref()
                .map(|p| cell_box(p, i))
                .unwrap_or_else(|| "display: none".to_string())
        }),
        _ => "display: none".to_string(),
    };
    // What the grid says to a screen reader: the image under the cursor and its label.
    let cursor_text = move || {
        page.with(|p| {
            let Some(p) = p.as_ref() else {
                return "The data set's images are loading.".to_string();
            };
            match cursor.get().filter(|&i| i < p.count()) {
                Some(i) => format!(
                    "{} {} image {} of {}: {}. Arrow keys move, Enter or Space runs it through the \
                     network.",
                    p.dataset,
                    p.split,
                    p.offset + i + 1,
                    p.total,
                    p.class_of(i)
                ),
                None => format!(
                    "{} {} images {}–{} of {}. Arrow keys move over them, Enter or Space runs \
                     one through the network.",
                    p.dataset,
                    p.split,
                    p.offset + 1,
                    p.offset + p.count(),
                    p.total
                ),
            }
        })
    };
    let selected = move || {
        chosen.with(|c| match c {
            Some((key, DigitSource::Dataset { .. })) => Some(key.clone()),
            _ => None,
        })
    };

    let labels = move || {
        page.with(|p| {
            p.as_ref()
                .map(|p| {
                    (0..p.count())
                        .map(|i| p.class_of(i))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default()
        })
    };
    let geometry = move || page.with(|p| p.as_ref().map(|p| cell(p.width, p.height)));
    view! {
        <div class="grid-wrap" style:display=move || if page.with(Option::is_none) { "none" } else { "inline-block" }>
            <canvas id="digit-grid" node_ref=canvas width="1024" height="312" data-labels=labels
                data-columns=GRID_COLUMNS
                data-cell-width=move || geometry().map(|g| g.0)
                data-cell-height=move || geometry().map(|g| g.1)
                data-selected=selected
                data-cursor=move || cursor.get()
                tabindex="0" role="img" aria-roledescription="image grid"
                aria-label=cursor_text aria-describedby="digit-cursor-text"
                title="Click an image (or move with the arrow keys and press Enter) to run it through the network"
                on:click=pick on:keydown=keys on:focus=on_focus
                on:blur=move |_| focused.set(false)></canvas>
            <span class="grid-pick" style=outline></span>
            <span class="grid-cursor" style=cursor_box></span>
        </div>
        <p id="digit-cursor-text" class="visually-hidden" aria-live="polite">{cursor_text}</p>
    }
}
