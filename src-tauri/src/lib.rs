//! The Gatehouse desktop app's window: a thin Tauri app over the background host.
//!
//! The desk (the host with its consent and sign-in cards) lives in `gatehouse-background`,
//! a process with no GTK or WebKit that stays when the window closes. At start the window
//! connects to it over `$XDG_RUNTIME_DIR/gatehouse/desk.sock` (starting it, detached, when
//! nothing listens); each command goes there as `(command, args)` and runs through
//! `gatehouse_desk::dispatch`; the desk's change notices come back and become window events
//! that carry no decision. Decisions come back only as typed commands (`prompt_answer`,
//! `prompt_wait_choice`, `sign_in_answer`). Prompts and sign-ins live in the host, so a
//! closed or reloaded window loses nothing. Under Tauri's mock runtime (tests) the same
//! dispatcher runs on a desk in this process ([`Backend::Local`]).

#![forbid(unsafe_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_desk::events::{EventHub, HostState, WindowEvent, forward_resource_updates};
use gatehouse_desk::launch::{log_file, open_desk, program_beside, spawn_detached};
use gatehouse_desk::wire::{self, DeskClient, Heard, Role, WireCode};
use gatehouse_desk::{Desk, dispatch};
use gatehouse_gateway::bridge;
use serde_json::{Value, json};
use tauri::{Builder, Emitter, Manager, Runtime, UserAttentionType};

pub use gatehouse_desk::Launch;

pub mod commands;

/// Window event names (see docs/desktop-api.md).
pub mod events {
    pub use gatehouse_desk::events::{
        AUDIT, CLIENTS, HOST, PROMPTS, RESOURCES, SERVERS, SIGN_INS, TRAFFIC,
    };
}

/// When the process started (as near as the app can tell): start-up is measured from here.
pub struct Started(pub std::time::Instant);

/// The label of the one window.
pub const MAIN_WINDOW: &str = "main";

/// Where the window's commands run.
#[derive(Clone)]
pub enum Backend {
    /// A desk in this process (Tauri's mock runtime in tests): the same dispatcher.
    Local(Box<LocalDesk>),
    /// The background host, over `desk.sock`.
    Remote(RemoteDesk),
}

/// A desk opened in this process, and the hub its notices go to.
#[derive(Clone)]
pub struct LocalDesk {
    desk: Arc<Desk>,
    hub: EventHub,
    launch: Launch,
}

/// The connection to the background host.
#[derive(Clone)]
pub struct RemoteDesk {
    client: DeskClient,
    /// What the host pushes: taken once by `setup`.
    heard: Arc<Mutex<Option<tokio::sync::mpsc::Receiver<Heard>>>>,
}

impl Backend {
    /// Opens a desk in this process with the launch's options (tests).
    pub fn local(launch: Launch) -> Result<Backend, String> {
        let hub = EventHub::new();
        let desk = open_desk(&launch, &hub)?;
        Ok(Backend::Local(Box::new(LocalDesk { desk, hub, launch })))
    }

    /// Runs one window command.
    pub async fn call(&self, command: &str, args: Value) -> Result<Value, Value> {
        match self {
            Backend::Local(local) => {
                if command == "quit" {
                    let plan = dispatch(&local.desk, "quit_preview", Value::Null).await?;
                    gatehouse_desk::dispatch::end_open_cards(&local.desk);
                    return Ok(plan);
                }
                dispatch(&local.desk, command, args).await
            }
            Backend::Remote(remote) => remote.client.call(command, args).await,
        }
    }

    /// The local desk, if the commands run in this process.
    pub fn desk(&self) -> Option<&Arc<Desk>> {
        match self {
            Backend::Local(local) => Some(&local.desk),
            Backend::Remote(_) => None,
        }
    }
}

/// WebKitGTK's switch for painting web content with Skia on the CPU instead of on the GPU
/// (read by the web process, which inherits it from the app; compositing stays on the GPU).
pub const WEBKIT_CPU_PAINTING_SWITCH: &str = "WEBKIT_SKIA_ENABLE_CPU_RENDERING";

/// The value to give [`WEBKIT_CPU_PAINTING_SWITCH`] before WebKit starts, given what the
/// environment holds now: `Some("1")` when unset, else `None` (a user's own setting, "0" for
/// GPU painting, wins).
///
/// Why CPU painting: the window is a document of forms, which Skia paints on the CPU with no
/// visible difference, while GPU painting compiles GL shaders for each new kind of control
/// before the first frame can show: on software GL (no GPU, virtual machines, Xvfb) that
/// almost doubled the time to the first paint (docs/benchmarks.md).
pub fn cpu_painting_default(current: Option<&std::ffi::OsStr>) -> Option<&'static str> {
    match current {
        None => Some("1"),
        Some(_) => None,
    }
}

/// Emits one desk event to the window; a new card asks for the person's attention.
fn show<R: Runtime>(app: &tauri::AppHandle<R>, event: WindowEvent) {
    if event.attention.is_some()
        && let Some(window) = app.get_webview_window(MAIN_WINDOW)
    {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.request_user_attention(Some(UserAttentionType::Critical));
    }
    if let Err(error) = app.emit_to(MAIN_WINDOW, &event.event, event.payload) {
        tracing::warn!(%error, "a change notice did not reach the window");
    }
}

/// The window's side of the events: from the local hub, or from the host until it goes. A
/// host that goes without quitting is shown as gone (a banner; every command then fails with
/// `host_gone`); one that quits closes the window too.
fn forward_events<R: Runtime>(app: tauri::AppHandle<R>, backend: &Backend) {
    match backend {
        Backend::Local(local) => {
            let mut events = local.hub.subscribe();
            tauri::async_runtime::spawn(async move {
                use tokio::sync::broadcast::error::RecvError;
                loop {
                    match events.recv().await {
                        Ok(event) => show(&app, event),
                        Err(RecvError::Lagged(_)) => {}
                        Err(RecvError::Closed) => return,
                    }
                }
            });
        }
        Backend::Remote(remote) => {
            let Some(mut heard) = remote.heard.lock().ok().and_then(|mut h| h.take()) else {
                return;
            };
            tauri::async_runtime::spawn(async move {
                let mut quitting = false;
                while let Some(heard) = heard.recv().await {
                    match heard {
                        Heard::Event(event) => {
                            if event.event == events::HOST
                                && event.payload["state"] == json!(HostState::Quitting)
                            {
                                quitting = true;
                            }
                            show(&app, event);
                        }
                        Heard::Closed(why) => {
                            if quitting {
                                app.exit(0);
                                return;
                            }
                            tracing::warn!(%why, "the Gatehouse host is gone");
                            let _ = app.emit_to(
                                MAIN_WINDOW,
                                events::HOST,
                                json!({"state": HostState::Gone, "message": why}),
                            );
                            return;
                        }
                    }
                }
            });
        }
    }
}

/// The window over `backend`, for the real runtime and for `tauri::test`'s mock runtime
/// alike: one command handler, the backend's events emitted to the window.
pub fn builder<R: Runtime>(builder: Builder<R>, backend: Backend) -> Builder<R> {
    builder_started(builder, backend, std::time::Instant::now())
}

/// [`builder`], with start-up measured from `started`.
pub fn builder_started<R: Runtime>(
    builder: Builder<R>,
    backend: Backend,
    started: std::time::Instant,
) -> Builder<R> {
    builder
        .manage(Started(started))
        .manage(backend.clone())
        .invoke_handler(commands::handler())
        .setup(move |app| {
            let handle = app.handle().clone();
            forward_events(handle, &backend);
            if let Backend::Local(local) = &backend {
                app.manage(local.desk.clone());
                tauri::async_runtime::spawn(forward_resource_updates(
                    local.hub.clone(),
                    local.desk.subscribe(),
                ));
                if local.launch.bridge {
                    tauri::async_runtime::spawn(serve_bridge(local.desk.host().clone()));
                }
                if local.launch.connect_at_start {
                    let desk = local.desk.clone();
                    tauri::async_runtime::spawn(async move { desk.connect_all().await });
                }
            }
            Ok(())
        })
}

/// Serves AI clients' `gatehouse serve` on the bridge socket from a local desk (the host
/// does this for the real window).
async fn serve_bridge(host: Arc<gatehouse_host::host::Host>) {
    match bridge::socket_path().and_then(|path| bridge::BridgeListener::bind(&path)) {
        Ok(listener) => listener.serve(host).await,
        Err(error) => {
            tracing::warn!(code = error.code.as_str(), message = %error.message, "AI clients cannot reach this desk")
        }
    }
}

/// How long the window waits for a host it started to listen.
pub const HOST_START_TIMEOUT: Duration = Duration::from_secs(30);

/// Connects to the background host as `role`, starting it (detached, with the launch's
/// options) when nothing listens: `gatehouse-background` beside this program, or
/// `$GATEHOUSE_BACKGROUND`.
pub async fn connect_or_start(
    launch: &Launch,
    role: Role,
) -> Result<(DeskClient, tokio::sync::mpsc::Receiver<Heard>), String> {
    let path = wire::socket_path().map_err(|e| e.to_string())?;
    match DeskClient::connect(&path, role).await {
        Ok(connected) => return Ok(connected),
        Err(error) if error.code == WireCode::NotRunning.as_str() => {}
        Err(error) => return Err(error.to_string()),
    }
    let program = program_beside("GATEHOUSE_BACKGROUND", "gatehouse-background").ok_or(
        "gatehouse-background is missing beside this program: reinstall Gatehouse, or set \
         GATEHOUSE_BACKGROUND to its path",
    )?;
    let log = path.with_file_name("background.log");
    let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ended.clone();
    spawn_detached(&program, &launch.to_args(), log_file(&log), move || {
        flag.store(true, std::sync::atomic::Ordering::SeqCst)
    })
    .map_err(|e| format!("{} could not start: {e}", program.display()))?;
    let deadline = tokio::time::Instant::now() + HOST_START_TIMEOUT;
    loop {
        match DeskClient::connect(&path, role).await {
            Ok(connected) => return Ok(connected),
            Err(error) if error.code == WireCode::NotRunning.as_str() => {}
            Err(error) => return Err(error.to_string()),
        }
        if ended.load(std::sync::atomic::Ordering::SeqCst) {
            // It may have found another host that started meanwhile: one more try.
            return DeskClient::connect(&path, role).await.map_err(|_| {
                format!(
                    "the Gatehouse host ({}) ended before it served; its messages are in {}",
                    program.display(),
                    log.display()
                )
            });
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "the Gatehouse host did not listen at {} within {} s; its messages are in {}",
                path.display(),
                HOST_START_TIMEOUT.as_secs(),
                log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `gatehouse-desktop --quit`: asks a running host to quit; returns what stopped, in words.
pub fn quit_running_host() -> Result<String, String> {
    tauri::async_runtime::block_on(async {
        let path = wire::socket_path().map_err(|e| e.to_string())?;
        let (client, mut heard) = match DeskClient::connect(&path, Role::Control).await {
            Ok(connected) => connected,
            Err(error) if error.code == WireCode::NotRunning.as_str() => {
                return Ok("Gatehouse is not running; nothing to quit".to_string());
            }
            Err(error) => return Err(error.to_string()),
        };
        let plan = client.call("quit", Value::Null).await.map_err(|e| {
            format!(
                "the host refused to quit: {}",
                e["message"].as_str().unwrap_or("no reason given")
            )
        })?;
        // Wait (bounded) for the host to close the connection: it has quit then.
        let _ = tokio::time::timeout(HOST_START_TIMEOUT, async {
            while let Some(heard) = heard.recv().await {
                if matches!(heard, Heard::Closed(_)) {
                    break;
                }
            }
        })
        .await;
        Ok(describe_quit(&plan))
    })
}

/// What stopped, from the host's quit plan.
pub fn describe_quit(plan: &Value) -> String {
    let list = |key: &str| -> Vec<String> {
        plan[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let clients = list("clients");
    let servers = list("servers");
    let cards = plan["cards"].as_u64().unwrap_or(0) + plan["signIns"].as_u64().unwrap_or(0);
    let names = |items: &[String]| {
        if items.is_empty() {
            "none".to_string()
        } else {
            items.join(", ")
        }
    };
    format!(
        "Gatehouse quit. AI clients disconnected: {}. Servers closed: {}. Requests declined: {cards}.",
        names(&clients),
        names(&servers)
    )
}

/// The window's backend: the background host (started if need be); without a runtime
/// directory (no login session: no private place for the sockets), a desk in this process,
/// as the app was before the split (it then ends with the window, and serves no bridge).
fn backend_for(launch: Launch) -> Result<Backend, String> {
    if let Err(error) = wire::socket_path() {
        tracing::warn!(%error, "no background host: the desk runs in the window and ends with it");
        eprintln!(
            "gatehouse-desktop: {error}; Gatehouse runs inside this window and stops when it closes"
        );
        return Backend::local(launch);
    }
    let (client, heard) = tauri::async_runtime::block_on(connect_or_start(&launch, Role::Window))?;
    Ok(Backend::Remote(RemoteDesk {
        client,
        heard: Arc::new(Mutex::new(Some(heard))),
    }))
}

/// Runs the desktop app's window.
pub fn run(launch: Launch) -> Result<(), String> {
    let started = launch.started.unwrap_or_else(std::time::Instant::now);
    let backend = backend_for(launch)?;
    let base = Builder::default()
        // First, so a second launch only focuses the running window.
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            if let Some(window) = app.get_webview_window(MAIN_WINDOW) {
                let _ = window.unminimize();
                let _ = window.show();
                let _ = window.set_focus();
            }
        }));
    builder_started(base, backend, started)
        .build(tauri::generate_context!())
        .map_err(|e| format!("the window could not start: {e}"))?
        .run(|app, event| match event {
            // SIGTERM ends the window as closing it does; the host stays.
            #[cfg(unix)]
            tauri::RunEvent::Ready => {
                let app = app.clone();
                tauri::async_runtime::spawn(async move {
                    use tokio::signal::unix::{SignalKind, signal};
                    if let Ok(mut term) = signal(SignalKind::terminate())
                        && term.recv().await.is_some()
                    {
                        app.exit(0);
                    }
                });
            }
            // A desk in this process is shut down with it (the audit log flushed and closed).
            tauri::RunEvent::Exit => {
                if let Some(desk) = app.try_state::<Arc<Desk>>() {
                    let desk = desk.inner().clone();
                    tauri::async_runtime::block_on(desk.shutdown());
                }
            }
            _ => {}
        });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::cpu_painting_default;
    use std::ffi::OsStr;

    #[test]
    fn cpu_painting_is_chosen_only_when_the_user_has_not_chosen() {
        assert_eq!(cpu_painting_default(None), Some("1"));
        // "0" is how a user asks for GPU painting: it must survive.
        assert_eq!(cpu_painting_default(Some(OsStr::new("0"))), None);
        assert_eq!(cpu_painting_default(Some(OsStr::new("1"))), None);
        assert_eq!(cpu_painting_default(Some(OsStr::new(""))), None);
    }
}
