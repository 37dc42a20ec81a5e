//! Precision Showdown's desktop shell: a Tauri v2 window around the Leptos front end.
//! Thin by design: every operation goes to the compute service in the supervised `showdown`
//! sidecar (`showdown-supervisor`, the same supervisor `showdown serve --http` uses), with the
//! same request/reply/event messages every door uses.

use showdown_core::protocol::{parse_request_value, ApiError, CancelRequest, Event, Request};
pub use showdown_supervisor::{Sidecar, SidecarStatus};

/// Sends one request to the sidecar; a job's progress streams through `on_event` (a
/// `tauri::ipc::Channel`, not global events). Any request, a cancel too: the shell does not
/// know which ones stream. Errors carry `{code, message}`. When an event cannot be delivered
/// (the window went away), the job is cancelled, once, as the other doors do.
#[tauri::command]
async fn call(
    sidecar: tauri::State<'_, Sidecar>,
    request: serde_json::Value,
    on_event: tauri::ipc::Channel<Event>,
) -> Result<serde_json::Value, ApiError> {
    // The same strict reading as the other doors: a config must be an object, numbers in
    // range, errors naming the field by its path.
    let request: Request = parse_request_value(request)?;
    let sc = sidecar.inner().clone();
    tauri::async_runtime::spawn_blocking(move || {
        let canceller = sc.clone();
        let mut cancelled = false;
        sc.call(request, &mut |e| {
            // Only a request that sends events is running: the cancel reaches this job.
            if on_event.send(e).is_err() && !cancelled {
                cancelled = true;
                let _ = canceller.call(CancelRequest {}.into(), &mut |_| {});
            }
        })
    })
    .await
    .map_err(|e| ApiError::runtime(format!("the request's worker thread failed: {e}")))?
}

/// The sidecar's state (running, process ID, crashes so far).
#[tauri::command]
fn sidecar_status(sidecar: tauri::State<'_, Sidecar>) -> SidecarStatus {
    sidecar.status()
}

/// Stops the sidecar; the next request starts a fresh one (e.g. after a CUDA fault).
#[tauri::command]
fn restart_sidecar(sidecar: tauri::State<'_, Sidecar>) {
    sidecar.kill();
}

/// Builds the app on any runtime (tests use the mock runtime), supervising `program` as the
/// compute sidecar. The sidecar keeps what the user makes (saved imports, screenshots) in the
/// app's data folder (`SHOWDOWN_DATA_HOME`), where it survives sidecar restarts and app updates.
pub fn app_builder<R: tauri::Runtime>(
    builder: tauri::Builder<R>,
    program: std::path::PathBuf,
) -> tauri::Builder<R> {
    builder
        .setup(move |app| {
            use tauri::Manager;
            let mut sidecar = Sidecar::new(program, &["serve", "--stdio"]);
            match app.path().app_data_dir() {
                Ok(dir) => sidecar = sidecar.with_env("SHOWDOWN_DATA_HOME", dir),
                Err(e) => eprintln!(
                    "warning: no app data folder ({e}); the sidecar uses its default data folder"
                ),
            }
            app.manage(sidecar);
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            call,
            sidecar_status,
            restart_sidecar
        ])
}

/// Runs the desktop app; exits with an error message if the window cannot be created.
pub fn run() {
    let builder = app_builder(tauri::Builder::default(), Sidecar::default_program());
    if let Err(e) = builder.run(tauri::generate_context!()) {
        eprintln!("error: cannot start Precision Showdown: {e}");
        std::process::exit(1);
    }
}
