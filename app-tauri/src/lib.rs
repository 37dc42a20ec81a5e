//! Precision Showdown's desktop shell: a Tauri v2 window around the Leptos front end.
//! Thin by design: the compute service lives in the `showdown` sidecar.

/// Builds the app on any runtime (tests use the mock runtime).
pub fn app_builder<R: tauri::Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    builder
}

/// Runs the desktop app; exits with an error message if the window cannot be created.
pub fn run() {
    if let Err(e) = app_builder(tauri::Builder::default()).run(tauri::generate_context!()) {
        eprintln!("error: cannot start Precision Showdown: {e}");
        std::process::exit(1);
    }
}
