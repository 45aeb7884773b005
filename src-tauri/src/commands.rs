//! The window's commands: ONE handler for all of them. Each is granted to the window by the
//! capability (Tauri checks that before the handler runs), then sent as `(command, args)` to
//! the backend, which runs it through `gatehouse_desk::dispatch` (on the background host, or
//! on a desk in this process under the mock runtime). Arguments travel exactly as the page
//! sent them (camelCase keys); the dispatcher parses each command's into a struct of its own,
//! and every error comes back as `{code, message}`.

use serde_json::Value;
use tauri::ipc::{Invoke, InvokeBody, InvokeError};
use tauri::{Manager, Runtime};

use crate::{Backend, Started};

/// Every command, registered once for the real and the mock runtime: the names in
/// `command_names::ALL` (which grants them to the window) and nothing else.
pub fn handler<R: Runtime>() -> impl Fn(Invoke<R>) -> bool + Send + Sync + 'static {
    move |invoke: Invoke<R>| {
        let Some(&command) = names::ALL
            .iter()
            .find(|name| **name == invoke.message.command())
        else {
            return false;
        };
        let args = match invoke.message.payload() {
            InvokeBody::Json(value) => value.clone(),
            InvokeBody::Raw(_) => {
                invoke
                    .resolver
                    .reject(gatehouse_desk::dispatch::error_value(
                        gatehouse_desk::dispatch::DispatchCode::BadArguments.as_str(),
                        format!("{command} takes a JSON object of arguments, not raw bytes"),
                    ));
                return true;
            }
        };
        let webview = invoke.message.webview();
        let app = webview.app_handle().clone();
        if command == "ui_ready" {
            ui_ready(&app.state::<Started>());
            invoke.resolver.resolve(Value::Null);
            return true;
        }
        let backend = app.state::<Backend>().inner().clone();
        invoke.resolver.respond_async(async move {
            let outcome = backend.call(command, args).await;
            if command == "quit" && outcome.is_ok() {
                // The host quits (and tells the window, which then closes); a local desk
                // ends with the app.
                if let Backend::Local(_) = backend {
                    app.exit(0);
                }
            }
            outcome.map_err(InvokeError)
        });
        true
    }
}

/// The window painted its first frame. With `GATEHOUSE_READY_FILE` set, the time since the
/// process started is appended to that file (the start-up benchmark reads it); otherwise it
/// is only logged.
fn ui_ready(started: &Started) {
    let elapsed = started.0.elapsed();
    tracing::info!(ms = elapsed.as_secs_f64() * 1e3, "first paint");
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

pub mod names {
    include!("command_names.rs");
}
