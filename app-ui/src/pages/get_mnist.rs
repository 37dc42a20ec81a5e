//! "Get full MNIST", on Act I's and Act II's data-set pickers: the compute service's
//! `data_fetch` job (the server's own mirrors, each file SHA-256-checked before it is kept),
//! its progress per file in MB, Cancel, then the data-set list read again so that `mnist`
//! can be picked in the same session. Where full MNIST is read from is shown once it is there.

use leptos::prelude::*;
use showdown_core::protocol::{Event, FetchProgress};
use showdown_core::types::DatasetSummary;
use showdown_core::ErrorKind;

use crate::bridge;
use crate::loading::{cancel_job, failure};

/// Bytes as megabytes with one decimal.
fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1e6)
}

/// The progress line for one event; `current` keeps the file's place in the list.
fn progress_line(event: FetchProgress, current: &mut (usize, usize)) -> String {
    match event {
        FetchProgress::Started {
            file,
            index,
            files,
            mirror,
        } => {
            *current = (index, files);
            format!("{file} ({index}/{files}) from {mirror}…")
        }
        FetchProgress::Bytes { file, bytes, total } => {
            let (index, files) = *current;
            match total {
                Some(t) => format!("{file} ({index}/{files}): {} / {} MB", mb(bytes), mb(t)),
                None => format!("{file} ({index}/{files}): {} MB", mb(bytes)),
            }
        }
        FetchProgress::MirrorFailed {
            file,
            mirror,
            reason,
        } => format!("{file}: {mirror} failed ({reason}); trying the next mirror…"),
        FetchProgress::Done {
            file,
            index,
            files,
            bytes,
            from,
        } => format!(
            "{file} ({index}/{files}): {} MB, SHA-256 checked ({from})",
            mb(bytes)
        ),
    }
}

/// The "Get full MNIST" control for a page whose data-set list is `datasets` (every data set
/// the server lists, available or not); the list is read again after a download.
#[component]
pub fn GetMnist(datasets: RwSignal<Vec<DatasetSummary>>) -> impl IntoView {
    let running = RwSignal::new(false);
    let progress = RwSignal::new(String::new());
    let status = RwSignal::new(None::<Result<String, String>>);
    let current = StoredValue::new((0usize, 0usize));
    let mnist = move || datasets.with(|l| l.iter().find(|d| d.name == "mnist").cloned());

    let on_event = move |ev: Event| {
        let Event::DataFetch { event } = ev else {
            return;
        };
        let mut at = current.get_value();
        progress.set(progress_line(event, &mut at));
        current.set_value(at);
    };
    let get = move |_: leptos::ev::MouseEvent| {
        running.set(true);
        status.set(None);
        progress.set("starting…".into());
        // A streaming job: the download's progress events arrive while it runs.
        leptos::task::spawn_local(async move {
            let result = bridge::data_fetch("mnist", on_event).await;
            // Read the list again however it ended: files finished before a cancel are kept.
            match bridge::list_datasets().await {
                Ok(list) => datasets.set(list),
                Err(e) => status.set(Some(Err(format!(
                    "cannot list the data sets: {}",
                    e.message
                )))),
            }
            status.set(Some(match result {
                Ok(done) => {
                    let at = done.dataset.location.unwrap_or(done.dataset.source);
                    let fetched = done.files.iter().filter(|f| f.from != "cached").count();
                    Ok(format!(
                        "Full MNIST is here ({fetched} of {} files downloaded, each SHA-256-checked), read from {at}: pick mnist.",
                        done.files.len()
                    ))
                }
                Err(e) if e.code == ErrorKind::Cancelled => Err(
                    "Download cancelled: no partial file was kept (files finished before stay and are not fetched again)."
                        .into(),
                ),
                Err(e) => Err(format!("The download failed: {}", showdown_core::error::plain_words(e.code, &e.message))),
            }));
            progress.set(String::new());
            running.set(false);
        });
    };
    let cancel_action = cancel_job();
    // A failed cancel says so in the status line.
    Effect::new(move |_| {
        if let Some(e) = failure(cancel_action) {
            status.set(Some(Err(format!("cancel failed: {}", e.message))));
        }
    });
    let cancel = move |_: leptos::ev::MouseEvent| {
        cancel_action.dispatch(());
    };

    view! {
        {move || mnist().map(|m| {
            let missing = (!m.available).then(|| {
                let into = m.source.clone();
                view! {
                    <button type="button" id="get-mnist" disabled=move || running.get() on:click=get
                        title="download the four MNIST files from the server's mirrors, checking each file's SHA-256">
                        "Get full MNIST"
                    </button>
                    <span class="muted">{format!(" 60,000 + 10,000 digits (about 11 MB) into {into}")}</span>
                }
            });
            let here = m.location.map(|at| view! {
                <span id="mnist-location" class="muted">{format!("full MNIST is read from {at}")}</span>
            });
            view! { <div class="get-mnist">{missing}{here}</div> }
        })}
        {move || running.get().then(|| view! {
            <div class="get-mnist-progress">
                <span id="fetch-progress">{move || progress.get()}</span>
                " "
                <button type="button" id="cancel-fetch" on:click=cancel>"Cancel"</button>
            </div>
        })}
        {move || status.get().map(|s| match s {
            Ok(text) => view! { <p id="fetch-status" class="muted">{text}</p> }.into_any(),
            Err(text) => view! { <p id="fetch-error" class="error">{text}</p> }.into_any(),
        })}
    }
}
