//! Act IV's Nsight Compute library: importing exports (file choice, drop, `.ncu-rep`), the saved
//! imports, the example report, and the page that holds the panels and the comparison.

use super::*;
use crate::loading::{act, failure, Acting};
use showdown_core::protocol::ApiError;

/// Standard padded base64, how `ncu_attach` takes an image's bytes and `ncu_rep_import` a
/// report's.
pub(super) fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The file chosen in the `<input type="file">` an event came from.
pub(super) fn chosen_file(ev: &leptos::ev::Event) -> Option<web_sys::File> {
    ev.target()
        .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
        .and_then(|input| input.files())
        .and_then(|files| files.get(0))
}

/// Resets a file input, so that choosing the same file again is a change too.
pub(super) fn clear_input(ev: &leptos::ev::Event) {
    if let Some(input) = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
    {
        input.set_value("");
    }
}

/// Reads `file` (a PNG or JPEG screenshot) and attaches it to panel `panel` of import `import`.
pub(super) async fn attach_file(
    import: &str,
    panel: &str,
    kernel: Option<u64>,
    file: web_sys::File,
    caption: Option<String>,
) -> Result<Screenshot, String> {
    let name = file.name();
    if file.size() > MAX_SCREENSHOT_BYTES as f64 {
        return Err(format!(
            "{name}: {:.0} bytes is over the {} MiB limit for a screenshot",
            file.size(),
            MAX_SCREENSHOT_BYTES >> 20
        ));
    }
    let buffer = JsFuture::from(file.array_buffer())
        .await
        .map_err(|_| format!("cannot read {name}"))?;
    let bytes = js_sys::Uint8Array::new(&buffer).to_vec();
    bridge::ncu_attach(import, panel, kernel, &name, base64_encode(&bytes), caption)
        .await
        .map_err(|e| e.message)
}

/// What the library holds: the saved imports and the one open.
#[derive(Clone, Copy)]
pub(super) struct Shelf {
    /// The saved imports, oldest first.
    pub(super) imports: RwSignal<Vec<ImportSummary>>,
    /// The notes naming what the library left out (a damaged import or screenshot).
    pub(super) skipped: RwSignal<Vec<String>>,
    /// Whether the list has been fetched once.
    pub(super) listed: RwSignal<bool>,
    /// What is being imported now.
    pub(super) busy: RwSignal<Option<String>>,
    /// The open import's ID.
    pub(super) open: RwSignal<Option<String>>,
    /// The open import's kernels with their panels.
    pub(super) kernels: RwSignal<Option<Result<Vec<KernelPanels>, String>>>,
    /// The index of the kernel shown.
    pub(super) kernel: RwSignal<usize>,
    /// Imports the user removed a moment ago: shown with "Undo" until [`UNDO_SECONDS`] pass,
    /// then removed with their screenshots.
    pub(super) removing: RwSignal<Vec<String>>,
}

/// How long a removed import can be brought back before it and its screenshots are deleted.
pub(super) const UNDO_SECONDS: u64 = 5;

/// What the library asks of the service.
#[derive(Clone)]
pub(super) enum Task {
    /// Read the list of saved imports again.
    Refresh,
    /// Add the example report and open it.
    Example,
    /// Open an import (keeping the kernel shown when `true`).
    Show(String, bool),
    /// After a screenshot was attached or removed: the list and the open import again.
    Changed,
    /// Import files one after the other, then open the last one.
    Import(Vec<web_sys::File>),
    /// Remove an import and its screenshots.
    Remove(String),
}

/// The saved imports and the one open, shared by the library, its panels and the comparison;
/// its tasks go through one action, whose last failure the page shows (`#ncu-error`).
#[derive(Clone, Copy)]
pub(super) struct Library {
    shelf: Shelf,
    /// The library's tasks.
    pub(super) task: Acting<Task, ()>,
}

impl std::ops::Deref for Library {
    type Target = Shelf;
    fn deref(&self) -> &Shelf {
        &self.shelf
    }
}

impl Library {
    pub(super) fn new() -> Self {
        let shelf = Shelf {
            imports: RwSignal::new(Vec::new()),
            skipped: RwSignal::new(Vec::new()),
            listed: RwSignal::new(false),
            busy: RwSignal::new(None),
            open: RwSignal::new(None),
            kernels: RwSignal::new(None),
            kernel: RwSignal::new(0),
            removing: RwSignal::new(Vec::new()),
        };
        Library {
            shelf,
            task: act(move |t: &Task| run_task(shelf, t.clone())),
        }
    }

    /// Fetches the list of saved imports again.
    pub(super) fn refresh(self) {
        self.task.dispatch_local(Task::Refresh);
    }

    /// Adds the example report (a real export of our kernels) to the library and opens it.
    pub(super) fn add_example(self) {
        self.task.dispatch_local(Task::Example);
    }

    /// Opens import `id`: loads its kernels' panels (keeping the kernel shown when
    /// `keep_kernel`, as after attaching a screenshot).
    pub(super) fn show(self, id: String, keep_kernel: bool) {
        self.task.dispatch_local(Task::Show(id, keep_kernel));
    }

    /// After a screenshot was attached or removed: the list (screenshot counts) and the open
    /// import's panels again.
    pub(super) fn changed(self) {
        self.task.dispatch_local(Task::Changed);
    }

    /// Imports `files` one after the other through the service, then opens the last one.
    pub(super) fn import(self, files: Vec<web_sys::File>) {
        if !files.is_empty() {
            self.task.dispatch_local(Task::Import(files));
        }
    }

    /// Removes import `id` and its screenshots.
    pub(super) fn remove(self, id: String) {
        self.task.dispatch_local(Task::Remove(id));
    }

    /// Removes import `id` and its screenshots after [`UNDO_SECONDS`], unless
    /// [`Library::undo_remove`] comes first (a page left before then keeps the import).
    pub(super) fn remove_later(self, id: String) {
        self.removing.update(|v| {
            if !v.contains(&id) {
                v.push(id.clone());
            }
        });
        set_timeout(
            move || {
                let due = self.removing.try_update(|v| {
                    let had = v.contains(&id);
                    v.retain(|x| *x != id);
                    had
                });
                if due == Some(true) {
                    self.remove(id);
                }
            },
            std::time::Duration::from_secs(UNDO_SECONDS),
        );
    }

    /// Keeps import `id`, removed a moment ago.
    pub(super) fn undo_remove(self, id: &str) {
        self.removing.update(|v| v.retain(|x| x != id));
    }

    /// The library's last failure (an import, a removal, a listing).
    pub(super) fn error(self) -> Option<String> {
        failure(self.task).map(|e| e.message)
    }

    /// The open import's summary.
    pub(super) fn open_summary(self) -> Option<ImportSummary> {
        let id = self.open.get()?;
        self.imports
            .with(|list| list.iter().find(|i| i.id == id).cloned())
    }
}

/// Does task `t`.
async fn run_task(s: Shelf, t: Task) -> Result<(), ApiError> {
    match t {
        Task::Refresh => refresh(s).await,
        Task::Example => add_example(s).await,
        Task::Show(id, keep_kernel) => {
            show(s, id, keep_kernel).await;
            Ok(())
        }
        Task::Changed => {
            let listed = refresh(s).await;
            if let Some(id) = s.open.get_untracked() {
                show(s, id, true).await;
            }
            listed
        }
        Task::Import(files) => import(s, files).await,
        Task::Remove(id) => {
            bridge::ncu_remove(&id).await?;
            if s.open.try_get_untracked().flatten().as_deref() == Some(id.as_str()) {
                s.open.set(None);
                s.kernels.set(None);
            }
            refresh(s).await
        }
    }
}

/// Reads the list of saved imports; a new user's library opens with the example report.
async fn refresh(s: Shelf) -> Result<(), ApiError> {
    let list = bridge::ncu_imports().await?;
    let first_visit = list.imports.is_empty() && !example_offered();
    s.imports.set(list.imports);
    s.skipped.set(list.skipped);
    s.listed.set(true);
    if first_visit {
        // Its panels shown; once only, so a removed example stays removed.
        mark_example_offered();
        Box::pin(add_example(s)).await?;
    }
    Ok(())
}

/// Adds the example report (a real export of our kernels) and opens it.
async fn add_example(s: Shelf) -> Result<(), ApiError> {
    let example = bridge::ncu_example().await?;
    let listed = Box::pin(refresh(s)).await;
    show(s, example.id, false).await;
    listed
}

/// Opens import `id` and loads its kernels' panels; a later choice wins over a slower answer.
async fn show(s: Shelf, id: String, keep_kernel: bool) {
    if !keep_kernel {
        s.kernel.set(0);
        s.kernels.set(None);
    }
    s.open.set(Some(id.clone()));
    let r = bridge::ncu_panels(&id, None).await.map_err(|e| e.message);
    if s.open.try_get_untracked().flatten().as_deref() != Some(id.as_str()) {
        return;
    }
    if let Ok(kernels) = &r {
        let last = kernels.len().saturating_sub(1);
        if s.kernel.get_untracked() > last {
            s.kernel.set(0);
        }
    }
    s.kernels.set(Some(r));
}

/// Imports `files` one after the other, then opens the last one imported; the last file that
/// failed is the task's error.
async fn import(s: Shelf, files: Vec<web_sys::File>) -> Result<(), ApiError> {
    let mut last = None;
    let mut failed = None;
    for file in files {
        let name = file.name();
        s.busy.set(Some(format!("importing {name}…")));
        let imported = if name.to_ascii_lowercase().ends_with(".ncu-rep") {
            // Binary: the service exports it through `ncu --import`; without ncu its error
            // names the command to run where ncu is.
            match JsFuture::from(file.array_buffer()).await {
                Ok(buffer) => bridge::call(NcuRepImportRequest {
                    file_name: name.clone(),
                    base64: base64_encode(&js_sys::Uint8Array::new(&buffer).to_vec()),
                })
                .await
                .map(|summary| summary.id),
                Err(_) => Err(bridge::runtime(format!("cannot read {name}"))),
            }
        } else {
            // The bytes, not the browser's UTF-8 reading of them: a Latin-1 kernel name is
            // decoded, not replaced (showdown_core::ncu::export_text).
            let text = JsFuture::from(file.array_buffer())
                .await
                .ok()
                .map(|buffer| {
                    let bytes = js_sys::Uint8Array::new(&buffer).to_vec();
                    showdown_core::ncu::export_text(&bytes).into_owned()
                });
            match text {
                Some(text) => bridge::ncu_import(&name, text)
                    .await
                    .map(|summary| summary.id),
                None => Err(bridge::runtime(format!("cannot read {name} as text"))),
            }
        };
        match imported {
            Ok(id) => last = Some(id),
            Err(e) => failed = Some(e),
        }
    }
    s.busy.set(None);
    let listed = refresh(s).await;
    if let Some(id) = last {
        show(s, id, false).await;
    }
    match failed {
        Some(e) => Err(e),
        None => listed,
    }
}

/// The import another page asked this one to open ([`OPEN_IMPORT_KEY`]), taken out of
/// `sessionStorage`.
pub(super) fn take_open_import() -> Option<String> {
    let store = web_sys::window()?.session_storage().ok().flatten()?;
    let id = store.get_item(OPEN_IMPORT_KEY).ok().flatten();
    let _ = store.remove_item(OPEN_IMPORT_KEY);
    id.map(|i| i.trim().to_string()).filter(|i| !i.is_empty())
}

/// Where the page remembers that it offered the example report (this browser, this origin).
pub(super) const EXAMPLE_OFFERED_KEY: &str = "showdown-ncu-example-offered";

pub(super) fn example_offered() -> bool {
    web_sys::window()
        .and_then(|w| w.local_storage().ok().flatten())
        .and_then(|s| s.get_item(EXAMPLE_OFFERED_KEY).ok().flatten())
        .is_some()
}

pub(super) fn mark_example_offered() {
    if let Some(s) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) {
        let _ = s.set_item(EXAMPLE_OFFERED_KEY, "1");
    }
}

/// The saved imports, with buttons to open or remove each; the example report marked as such,
/// and a button to add it (back) when it is not there.
pub(super) fn library_view(library: Library) -> impl IntoView {
    move || {
        let list = library.imports.get();
        let add_example = (library.listed.get() && !list.iter().any(|i| i.example)).then(|| {
            view! {
                <button id="ncu-add-example" on:click=move |_| library.add_example()>
                    "Add the example report (our kernels on an H100)"
                </button>
            }
        });
        if list.is_empty() {
            let text = if library.listed.get() {
                "No saved imports yet."
            } else {
                "reading the library…"
            };
            return view! { <p class="muted empty">{text}</p> {add_example} }.into_any();
        }
        let open = library.open.get();
        let removing = library.removing.get();
        let items = list
            .into_iter()
            .map(|i| {
                if removing.contains(&i.id) {
                    let id = i.id.clone();
                    let text = format!(
                        "{} and its {} screenshot(s) will be removed in {UNDO_SECONDS} s. ",
                        i.source_name,
                        i.screenshots.len()
                    );
                    return view! {
                        <li class="removing" data-removing=i.id.clone()>
                            <span class="muted">{text}</span>
                            <button class="undo-remove" on:click=move |_| library.undo_remove(&id)>"Undo"</button>
                        </li>
                    }
                    .into_any();
                }
                let is_open = open.as_deref() == Some(i.id.as_str());
                let facts = format!(
                    "{:?} page · {} kernel(s) · {} · {} screenshot(s)",
                    i.format,
                    i.kernels,
                    size_text(i.source_bytes),
                    i.screenshots.len()
                );
                // Where the export's kernels ran, as the export says, and when it came in: an
                // import from another machine names its GPU, never passing for this one's.
                let origin = format!(
                    "profiled on {} · imported {}",
                    i.profiled_on.as_ref().map_or_else(
                        || "a GPU not read (imported before this version)".to_string(),
                        |p| p.words()
                    ),
                    showdown_core::format::utc_date_time(i.imported_at)
                );
                let (open_id, remove_id) = (i.id.clone(), i.id.clone());
                let example = i.example.then(|| {
                    view! { <span class="example-badge" title="a real export of our kernels that ships with the lab">"example"</span> " " }
                });
                view! {
                    <li class="import" class:selected=is_open class:example=i.example data-import=i.id.clone()>
                        {example}
                        <strong class="import-name">{i.source_name.clone()}</strong>
                        " " <span class="muted">{facts}</span> " "
                        <span class="import-origin muted">{origin}</span> " "
                        <button class="open-import" on:click=move |_| library.show(open_id.clone(), false)>"Open"</button>
                        <button class="remove-import" title=format!("removes it and its screenshots after {UNDO_SECONDS} s, with Undo until then")
                            on:click=move |_| library.remove_later(remove_id.clone())>"Remove"</button>
                    </li>
                }
                .into_any()
            })
            .collect_view();
        view! { <ul class="imports">{items}</ul> {add_example} }.into_any()
    }
}

/// What the library left out because it could not be read (a damaged import or screenshot),
/// one muted line each, as the service named it.
pub(super) fn skipped_view(library: Library) -> impl IntoView {
    move || {
        let notes = library.skipped.get();
        (!notes.is_empty()).then(|| {
            let items = notes
                .into_iter()
                .map(|n| view! { <li>{n}</li> })
                .collect_view();
            view! {
                <div id="ncu-skipped" class="muted">
                    <p>"Left out of the library (damaged files):"</p>
                    <ul class="skipped">{items}</ul>
                </div>
            }
        })
    }
}

/// The Nsight Compute library: import by file choice or drop, the saved imports, the open
/// import's panels with their screenshots, and the comparison of two reports.
#[component]
pub(super) fn NcuLibrary() -> impl IntoView {
    let library = Library::new();
    library.refresh();
    if let Some(id) = take_open_import() {
        // As if the user had picked it in the library; its panels scrolled into view.
        library.show(id, false);
        request_animation_frame(|| {
            if let Some(e) = document().get_element_by_id("ncu-library") {
                e.scroll_into_view();
            }
        });
    }
    let dragging = RwSignal::new(false);
    let on_file = move |ev: leptos::ev::Event| {
        let files: Vec<web_sys::File> = chosen_file(&ev).into_iter().collect();
        clear_input(&ev);
        library.import(files);
    };
    let on_drop = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        dragging.set(false);
        let files: Vec<web_sys::File> = ev
            .data_transfer()
            .and_then(|d| d.files())
            .map(|list| (0..list.length()).filter_map(|i| list.get(i)).collect())
            .unwrap_or_default();
        library.import(files);
    };
    view! {
        <section id="ncu">
            <h3>"Nsight Compute reports"</h3>
            <p>"Drop a " <code>".ncu-rep"</code> " report below (or choose it): the compute service exports it with "
               <code>"ncu --import"</code> " where Nsight Compute is installed, and otherwise says the command to run. A CSV export made with "
               <code>"ncu --csv --page details --import report.ncu-rep > report.csv"</code>
               " works too. Imports are kept in the lab's library on this machine, with the screenshots you attach to their panels, and survive restarts."</p>
            <div id="ncu-drop" class="drop-zone card"
                style:border=move || if dragging.get() { "2px dashed #1f6feb" } else { "2px dashed #aab" }
                style:background=move || if dragging.get() { "#eef4f8" } else { "#fff" }
                on:dragover=move |ev: leptos::ev::DragEvent| {
                    ev.prevent_default();
                    dragging.set(true);
                }
                on:dragleave=move |_| dragging.set(false)
                on:drop=on_drop>
                <p>"Drop a .ncu-rep report or an ncu CSV export here, or choose one: "
                    <input type="file" id="ncu-file" accept=".ncu-rep,.csv,text/csv" on:change=on_file/>
                </p>
                {move || library.busy.get().map(|b| view! { <p class="muted" id="ncu-busy">{b}</p> })}
            </div>
            {move || library.error().map(|e| view! { <p class="error" id="ncu-error">{e}</p> })}
            <div id="ncu-library">
                <h4>"Saved imports"</h4>
                {library_view(library)}
                {skipped_view(library)}
            </div>
            {open_import_view(library)}
            <Compare library=library/>
        </section>
    }
}
