// One app command, `ui_ready`; the capability in capabilities/ grants it to the window.
fn main() {
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(&["ui_ready"]));
    tauri_build::try_build(attributes).expect("tauri-build failed");
}
