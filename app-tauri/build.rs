fn main() {
    // The shell's own commands get `allow-*` permissions; only those the capability grants
    // (capabilities/default.json) can be invoked from the window.
    let manifest =
        tauri_build::AppManifest::new().commands(&["call", "sidecar_status", "restart_sidecar"]);
    if let Err(e) = tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)) {
        eprintln!("error: tauri-build failed: {e:#}");
        std::process::exit(1);
    }
}
