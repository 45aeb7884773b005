// The app's own commands get an ACL manifest, so each must be granted to the window by a
// capability (capabilities/main.json); a command missing there is refused at runtime.
fn main() {
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(gatehouse_commands::ALL));
    tauri_build::try_build(attributes).expect("tauri-build failed");
}

mod gatehouse_commands {
    include!("src/command_names.rs");
}
