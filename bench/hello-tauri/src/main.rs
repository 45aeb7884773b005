//! The smallest Tauri 2 app, built the same way as `gatehouse-desktop` (same tauri version and
//! features): one window on a one-file static page that calls `ui_ready` after its first
//! frame. The baseline of the desktop start-up and memory benchmark (scripts/bench-desktop.sh).

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::time::Instant;

/// When `main` began: start-up is measured from here, as in gatehouse-desktop.
struct Started(Instant);

/// The page's first frame is drawn: append the milliseconds since start to
/// `GATEHOUSE_READY_FILE`, exactly like gatehouse-desktop's `ui_ready`.
#[tauri::command]
fn ui_ready(started: tauri::State<'_, Started>) {
    let elapsed = started.0.elapsed();
    if let Some(path) = std::env::var_os("GATEHOUSE_READY_FILE") {
        use std::io::Write;
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(file, "{:.1}", elapsed.as_secs_f64() * 1e3);
        }
    }
}

fn main() -> std::process::ExitCode {
    let started = Instant::now();
    let built = tauri::Builder::default()
        .manage(Started(started))
        .invoke_handler(tauri::generate_handler![ui_ready])
        .build(tauri::generate_context!());
    match built {
        Ok(app) => {
            app.run(|_, _| {});
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("hello-tauri: the app could not start: {error}");
            std::process::ExitCode::from(1)
        }
    }
}
