//! The Gatehouse desktop app: a thin Tauri shell over `gatehouse_desk`.
//!
//! Each command is one call into the desk. The desk's change notices become window events
//! that carry no decision; decisions come back only as typed commands (`prompt_answer`,
//! `prompt_wait_choice`, `sign_in_answer`). Prompts and sign-ins live in Rust, so a reloaded
//! window loses nothing.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::sync::Arc;

use gatehouse_attest::bundle::Posture;
use gatehouse_desk::{
    ClientSetup, Desk, DeskEvent, DeskOptions, DeskPaths, Notifier, SignInChange, SignInNotifier,
    locate_gatehouse,
};
use gatehouse_gateway::bridge;
use gatehouse_host::HostEvent;
use gatehouse_host::KeyringStore;
use gatehouse_host::SecretStore;
use gatehouse_host::{SYSTEM_TRUST_ROOTS, system_clock};
use serde_json::json;
use tauri::{Builder, Emitter, Manager, Runtime, UserAttentionType};

pub mod commands;

/// Window event names (see docs/desktop-api.md).
pub mod events {
    pub const PROMPTS: &str = "gatehouse://prompts";
    pub const SERVERS: &str = "gatehouse://servers";
    pub const AUDIT: &str = "gatehouse://audit";
    pub const TRAFFIC: &str = "gatehouse://traffic";
    pub const CLIENTS: &str = "gatehouse://clients";
    pub const SIGN_INS: &str = "gatehouse://sign-ins";
    /// A subscribed resource changed on its server: `{server, uri}`.
    pub const RESOURCES: &str = "gatehouse://resources";
}

/// When the process started (as near as the app can tell): start-up is measured from here.
pub struct Started(pub std::time::Instant);

/// The label of the one window.
pub const MAIN_WINDOW: &str = "main";

/// How the app was started.
#[derive(Clone, Default)]
pub struct Launch {
    /// The embedded demo: the DEMO-ONLY trust root and the demo server.
    pub demo: bool,
    /// An elicitation policy file instead of the shipped default.
    pub policy: Option<PathBuf>,
    /// The posture asked for on the command line; a locked admin bundle's wins over it.
    pub posture: Option<Posture>,
    /// The demo server's executable, instead of the one found next to the app (tests).
    pub demo_server: Option<PathBuf>,
    /// Paths to use instead of the path resolver's (tests).
    pub paths: Option<DeskPaths>,
    /// Where consented URLs go instead of the system browser (tests).
    pub opener: Option<Arc<dyn gatehouse_host::UrlOpener>>,
    /// The keychain, or a stand-in (tests).
    pub secrets: Option<Arc<dyn SecretStore>>,
    /// Connect every server at start, so the Servers view shows verdicts at once.
    pub connect_at_start: bool,
    /// When `main` began.
    pub started: Option<std::time::Instant>,
    /// Serve AI clients' `gatehouse serve` on the bridge socket (gatehouse_gateway::bridge).
    pub bridge: bool,
    /// Where saved resources go, instead of `$GATEHOUSE_DOWNLOAD_DIR` or the user's download
    /// directory (tests).
    pub downloads: Option<PathBuf>,
    /// The AI clients' directories and the `gatehouse` their files will launch, instead of
    /// the path resolver's home and config directories and the one found beside the app or
    /// on PATH (tests).
    pub clients: Option<ClientSetup>,
    /// The package-sources file instead of the one beside the system trust roots
    /// (`GATEHOUSE_PACKAGE_SOURCES`, as for the CLI's `--package-sources`).
    pub package_sources: Option<PathBuf>,
}

const USAGE: &str = "usage: gatehouse-desktop [--demo] [--policy FILE] [--posture deny-by-default|warn] [--no-bridge]";

impl Launch {
    /// From the command line: `--demo`, `--policy FILE`, `--posture POSTURE` (or
    /// `GATEHOUSE_DEMO=1`, `GATEHOUSE_POLICY`, `GATEHOUSE_POSTURE`, as for the CLI), and
    /// `GATEHOUSE_PACKAGE_SOURCES`.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Launch, String> {
        let posture = match std::env::var_os("GATEHOUSE_POSTURE") {
            None => None,
            Some(value) => Some(
                value
                    .to_str()
                    .ok_or_else(|| "GATEHOUSE_POSTURE is not UTF-8".to_string())
                    .and_then(str::parse::<Posture>)
                    .map_err(|e| format!("GATEHOUSE_POSTURE: {e}"))?,
            ),
        };
        let mut launch = Launch {
            demo: std::env::var("GATEHOUSE_DEMO").is_ok_and(|v| v == "1"),
            policy: std::env::var_os("GATEHOUSE_POLICY").map(PathBuf::from),
            posture,
            package_sources: package_sources_from(std::env::var_os("GATEHOUSE_PACKAGE_SOURCES"))?,
            connect_at_start: true,
            bridge: true,
            ..Launch::default()
        };
        let mut args = args.into_iter().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--demo" => launch.demo = true,
                "--no-bridge" => launch.bridge = false,
                "--policy" => {
                    launch.policy = Some(
                        args.next()
                            .ok_or("--policy needs a file: --policy policy.toml")?
                            .into(),
                    )
                }
                "--posture" => {
                    let text = args
                        .next()
                        .ok_or("--posture needs deny-by-default or warn: --posture warn")?;
                    launch.posture = Some(
                        text.parse::<Posture>()
                            .map_err(|e| format!("--posture: {e}"))?,
                    );
                }
                "--help" | "-h" => return Err(USAGE.into()),
                other => return Err(format!("unknown argument {other:?}; {USAGE}")),
            }
        }
        Ok(launch)
    }
}

/// `GATEHOUSE_PACKAGE_SOURCES` as the CLI takes it: a file's path. Set but empty is refused,
/// as the CLI's `--package-sources` refuses an empty value, rather than read as unset.
fn package_sources_from(value: Option<std::ffi::OsString>) -> Result<Option<PathBuf>, String> {
    match value {
        None => Ok(None),
        Some(value) if value.is_empty() => Err(
            "GATEHOUSE_PACKAGE_SOURCES is empty: name a package-sources file, or unset it to use the system's"
                .into(),
        ),
        Some(value) => Ok(Some(PathBuf::from(value))),
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

/// Paths from Tauri's path resolver, shared with the `gatehouse` CLI: the same
/// `servers.json`, audit log and trust roots.
fn resolved_paths<R: Runtime>(app: &tauri::AppHandle<R>) -> Result<DeskPaths, String> {
    let path = app.path();
    let config = path
        .config_dir()
        .map_err(|e| format!("no config directory: {e}"))?
        .join("gatehouse");
    let data = path
        .data_dir()
        .map_err(|e| format!("no data directory: {e}"))?
        .join("gatehouse");
    Ok(DeskPaths {
        config: config.join("servers.json"),
        logs: data.join("logs"),
        data,
        user_trust_roots: Some(config.join("trust-roots")),
        system_trust_roots: PathBuf::from(SYSTEM_TRUST_ROOTS),
    })
}

/// Where saved resources go: the launch's directory, else `$GATEHOUSE_DOWNLOAD_DIR`, else the
/// path resolver's download directory, else `~/Downloads`.
fn download_dir<R: Runtime>(app: &tauri::AppHandle<R>, launch: &Launch) -> Option<PathBuf> {
    launch
        .downloads
        .clone()
        .or_else(|| {
            std::env::var_os("GATEHOUSE_DOWNLOAD_DIR")
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| app.path().download_dir().ok())
        .or_else(|| {
            app.path()
                .home_dir()
                .ok()
                .map(|home| home.join("Downloads"))
        })
}

/// Where the AI clients' files are (the resolver's home and config directories, as the CLI
/// reads them) and the `gatehouse` command line they will launch.
fn client_setup<R: Runtime>(app: &tauri::AppHandle<R>, launch: &Launch) -> Option<ClientSetup> {
    if let Some(setup) = &launch.clients {
        return Some(setup.clone());
    }
    let home = app.path().home_dir().ok()?;
    let config_dir = app
        .path()
        .config_dir()
        .unwrap_or_else(|_| home.join(".config"));
    let exe = std::env::current_exe().ok();
    let gatehouse = locate_gatehouse(exe.as_deref(), std::env::var_os("PATH").as_deref());
    Some(ClientSetup {
        home,
        config_dir,
        gatehouse,
    })
}

/// Passes the host's resource updates (for resources the user subscribed to) on to the window
/// as `gatehouse://resources` notices: `{server, uri}`, nothing more.
async fn forward_resource_updates<R: Runtime>(
    app: tauri::AppHandle<R>,
    mut updates: tokio::sync::broadcast::Receiver<HostEvent>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        match updates.recv().await {
            Ok(HostEvent::ResourceUpdated { server, uri }) => {
                let sent = app.emit_to(
                    MAIN_WINDOW,
                    events::RESOURCES,
                    json!({"server": server, "uri": uri}),
                );
                if let Err(error) = sent {
                    tracing::warn!(%error, "a resource notice did not reach the window");
                }
            }
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => break,
        }
    }
}

/// Turns the desk's change notices into window events, and asks for the user's attention
/// when a new prompt needs them.
fn notifier<R: Runtime>(app: tauri::AppHandle<R>) -> Notifier {
    Arc::new(move |event: DeskEvent| {
        let sent = match &event {
            DeskEvent::Prompts {
                prompt_id,
                attention,
            } => {
                if *attention && let Some(window) = app.get_webview_window(MAIN_WINDOW) {
                    let _ = window.request_user_attention(Some(UserAttentionType::Critical));
                }
                app.emit_to(MAIN_WINDOW, events::PROMPTS, json!({"promptId": prompt_id}))
            }
            DeskEvent::Servers { name } => {
                app.emit_to(MAIN_WINDOW, events::SERVERS, json!({"name": name}))
            }
            DeskEvent::Audit => app.emit_to(MAIN_WINDOW, events::AUDIT, json!({})),
            DeskEvent::Traffic { server } => {
                app.emit_to(MAIN_WINDOW, events::TRAFFIC, json!({"server": server}))
            }
            DeskEvent::Clients => app.emit_to(MAIN_WINDOW, events::CLIENTS, json!({})),
        };
        if let Err(error) = sent {
            tracing::warn!(%error, "a change notice did not reach the window");
        }
    })
}

/// Turns the desk's sign-in card changes into window events, and asks for the user's
/// attention when a new sign-in needs them.
fn sign_in_notifier<R: Runtime>(app: tauri::AppHandle<R>) -> SignInNotifier {
    Arc::new(move |change: SignInChange| {
        if change.attention
            && let Some(window) = app.get_webview_window(MAIN_WINDOW)
        {
            let _ = window.request_user_attention(Some(UserAttentionType::Critical));
        }
        let sent = app.emit_to(
            MAIN_WINDOW,
            events::SIGN_INS,
            json!({"signInId": change.sign_in_id}),
        );
        if let Err(error) = sent {
            tracing::warn!(%error, "a sign-in notice did not reach the window");
        }
    })
}

/// The app, for the real runtime and for `tauri::test`'s mock runtime alike: commands and
/// the desk, opened in `setup` with the resolver's paths (or the launch's).
pub fn builder<R: Runtime>(builder: Builder<R>, launch: Launch) -> Builder<R> {
    let started = Started(launch.started.unwrap_or_else(std::time::Instant::now));
    builder
        .manage(started)
        .invoke_handler(commands::handler())
        .setup(move |app| {
            let handle = app.handle().clone();
            let paths = match launch.paths.clone() {
                Some(paths) => paths,
                None => resolved_paths(&handle)?,
            };
            let mut options = DeskOptions::new(paths, system_clock());
            options.demo = launch.demo;
            options.policy = launch.policy.clone();
            options.posture_override = launch.posture;
            options.demo_server = launch.demo_server.clone();
            options.package_sources = launch.package_sources.clone();
            if let Some(opener) = &launch.opener {
                options.opener = opener.clone();
            }
            let secrets = launch
                .secrets
                .clone()
                .unwrap_or_else(|| Arc::new(KeyringStore));
            // The desk's sign-in cards are the host's sign-in UI (`options.sign_in`).
            let desk = Desk::open_with_sign_ins(
                options,
                secrets,
                notifier(handle.clone()),
                sign_in_notifier(handle.clone()),
            )
            .map_err(|e| e.to_string())?;
            if let Some(dir) = download_dir(&handle, &launch) {
                desk.set_download_dir(dir);
            }
            if let Some(setup) = client_setup(&handle, &launch) {
                desk.set_client_setup(setup);
            }
            tauri::async_runtime::spawn(forward_resource_updates(handle.clone(), desk.subscribe()));
            app.manage(desk.clone());
            if launch.bridge {
                tauri::async_runtime::spawn(serve_bridge(desk.host().clone()));
            }
            if launch.connect_at_start {
                tauri::async_runtime::spawn(async move { desk.connect_all().await });
            }
            Ok(())
        })
}

/// Serves AI clients' `gatehouse serve` on the bridge socket for as long as the app runs. A
/// bridge that cannot be opened leaves the app working: `serve` then runs its own host.
async fn serve_bridge(host: Arc<gatehouse_host::host::Host>) {
    let listener = match bridge::socket_path().and_then(|path| bridge::BridgeListener::bind(&path))
    {
        Ok(listener) => listener,
        Err(error) => {
            tracing::warn!(code = error.code.as_str(), message = %error.message, "AI clients cannot reach this app");
            eprintln!("gatehouse-desktop: AI clients cannot reach this app: {error}");
            return;
        }
    };
    tracing::info!(socket = %listener.path().display(), "serving AI clients");
    listener.serve(host).await;
}

/// Runs the desktop app.
pub fn run(launch: Launch) -> Result<(), String> {
    let base = Builder::default()
        // First, so a second launch only focuses the running window (one audit log writer,
        // one set of prompts).
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            if let Some(window) = app.get_webview_window(MAIN_WINDOW) {
                let _ = window.unminimize();
                let _ = window.show();
                let _ = window.set_focus();
            }
        }));
    builder(base, launch)
        .build(tauri::generate_context!())
        .map_err(|e| format!("the app could not start: {e}"))?
        .run(|app, event| match event {
            // SIGTERM (a logout, a system shutdown, `kill`) ends the app the way closing its
            // window does, so the desk shuts down and the audit log is flushed and closed.
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
    use super::{cpu_painting_default, package_sources_from};
    use std::ffi::{OsStr, OsString};
    use std::path::PathBuf;

    #[test]
    fn package_sources_come_from_a_named_file_and_an_empty_name_is_refused() {
        assert_eq!(package_sources_from(None), Ok(None));
        assert_eq!(
            package_sources_from(Some(OsString::from("mirror/package-sources.json"))),
            Ok(Some(PathBuf::from("mirror/package-sources.json")))
        );
        let empty = package_sources_from(Some(OsString::new())).unwrap_err();
        assert!(empty.contains("GATEHOUSE_PACKAGE_SOURCES"), "{empty}");
    }

    #[test]
    fn cpu_painting_is_chosen_only_when_the_user_has_not_chosen() {
        assert_eq!(cpu_painting_default(None), Some("1"));
        // "0" is how a user asks for GPU painting: it must survive.
        assert_eq!(cpu_painting_default(Some(OsStr::new("0"))), None);
        assert_eq!(cpu_painting_default(Some(OsStr::new("1"))), None);
        assert_eq!(cpu_painting_default(Some(OsStr::new(""))), None);
    }
}
