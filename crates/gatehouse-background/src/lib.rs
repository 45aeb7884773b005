//! Gatehouse's background host (`gatehouse-background`): the process that stays while the
//! window comes and goes. It opens the desk (the host with its consent and sign-in cards),
//! serves `gatehouse serve` on the bridge socket, serves windows on `desk.sock` (one
//! dispatcher, [`gatehouse_desk::dispatch`]), shows a tray icon and desktop notifications
//! where the desktop has them, and starts the window when a card needs the person and no
//! window is connected. It holds no GTK and no WebKit. It ends only on an explicit quit (the
//! window's Quit, the tray's, `gatehouse-desktop --quit`, SIGTERM), which declines open cards,
//! closes every connection, flushes the audit log and removes its sockets.

pub mod socket;
pub mod window;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gatehouse_desk::dispatch::{QuitPlan, end_open_cards, error_value, quit_plan};
use gatehouse_desk::events::{
    Attention, EventHub, HostState, REFETCH_ALL, WindowEvent, forward_resource_updates,
};
use gatehouse_desk::wire::{
    self, Accepted, HELLO_LIMIT, HELLO_TIMEOUT, Hello, HelloReply, MAX_IN_FLIGHT, MAX_LINE, Role,
    WIRE_VERSION, WireCode, WireError, own_uid, read_line, write_line,
};
use gatehouse_desk::{Desk, Launch, dispatch};
use gatehouse_gateway::bridge;
use gatehouse_gateway::tokens::TokenBook;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::{Semaphore, broadcast, mpsc, watch};

pub use socket::{Bound, DeskListener};
pub use window::WindowStarter;

/// Windows connected at once.
pub const MAX_WINDOWS: usize = 4;
/// One-off control connections at once (`--quit`, teardown).
pub const MAX_CONTROLS: usize = 4;
/// Frames waiting to be written to one connection.
const OUT_QUEUE: usize = 256;

/// How the host was asked to run, beyond the launch's options.
#[derive(Clone)]
pub struct HostSetup {
    /// `desk.sock`'s place.
    pub desk_socket: PathBuf,
    /// Serve peers of this uid (tests use another to see a peer refused).
    pub uid: u32,
    /// How to start the window when a card needs the person and none is connected (`None`:
    /// never).
    pub window: Option<WindowStarter>,
    /// Show a tray icon and desktop notifications on the session bus.
    pub presence: bool,
}

/// The running host, shared by its tasks.
pub struct Background {
    desk: Arc<Desk>,
    hub: EventHub,
    windows: AtomicUsize,
    window_slots: Arc<Semaphore>,
    control_slots: Arc<Semaphore>,
    quit: watch::Sender<bool>,
    setup: HostSetup,
    notices: Option<mpsc::Sender<gatehouse_presence::Notice>>,
}

impl Background {
    pub fn desk(&self) -> &Arc<Desk> {
        &self.desk
    }

    /// Windows connected now.
    pub fn windows(&self) -> usize {
        self.windows.load(Ordering::SeqCst)
    }

    /// Asks the host to quit (as the window's Quit does).
    pub fn request_quit(&self) {
        let _ = self.quit.send(true);
    }

    /// Brings a window: raises the connected ones, or starts one.
    pub fn open_window(&self) {
        if self.windows() > 0 {
            self.hub.send(WindowEvent {
                attention: Some(Attention::Open),
                ..WindowEvent::host(HostState::Raise, "")
            });
        } else if let Some(starter) = &self.setup.window {
            starter.start();
        }
    }
}

/// Runs the host until it is asked to quit; then quits cleanly. `Ok(false)` when another host
/// already serves this user (nothing was opened).
pub async fn run(launch: Launch, setup: HostSetup) -> Result<bool, String> {
    // Listened for before anything is served: a SIGTERM that arrives once a client can reach
    // the host must quit it cleanly, not kill it (the signal's default action).
    let mut signals = QuitSignals::listen();
    let listener = match DeskListener::bind(&setup.desk_socket).map_err(|e| e.to_string())? {
        Bound::Listening(listener) => listener,
        Bound::AlreadyRunning => return Ok(false),
    };
    let hub = EventHub::new();
    let desk = gatehouse_desk::launch::open_desk(&launch, &hub)?;
    // What starts at login is this host itself.
    if let (Some(config_dir), Ok(exec)) = (
        gatehouse_presence::autostart::config_dir_from_env(),
        std::env::current_exe(),
    ) {
        desk.set_autostart_setup(gatehouse_desk::AutostartSetup { config_dir, exec });
    }
    tokio::spawn(forward_resource_updates(hub.clone(), desk.subscribe()));
    // `serve --http` hands its listener to this host; the clients' tokens are checked against
    // the same keychain and client list the CLI's own `serve --http` uses.
    let tokens = {
        let data = match launch.paths.clone() {
            Some(paths) => paths.data,
            None => gatehouse_desk::launch::user_paths()?.data,
        };
        let secrets = launch
            .secrets
            .clone()
            .unwrap_or_else(|| Arc::new(gatehouse_host::KeyringStore));
        Arc::new(TokenBook::new(
            secrets,
            gatehouse_gateway::tokens::index_path(&data),
        ))
    };
    let bridge_task = launch
        .bridge
        .then(|| tokio::spawn(serve_bridge(desk.host().clone(), tokens)));
    if launch.connect_at_start {
        let desk = desk.clone();
        tokio::spawn(async move { desk.connect_all().await });
    }
    let (quit, mut quitting) = watch::channel(false);
    let (notices, notice_queue) = mpsc::channel(16);
    let background = Arc::new(Background {
        desk: desk.clone(),
        hub: hub.clone(),
        windows: AtomicUsize::new(0),
        window_slots: Arc::new(Semaphore::new(MAX_WINDOWS)),
        control_slots: Arc::new(Semaphore::new(MAX_CONTROLS)),
        quit,
        notices: setup.presence.then_some(notices),
        setup: setup.clone(),
    });
    if setup.presence {
        tokio::spawn(presence(background.clone(), notice_queue));
    }
    tokio::spawn(watch_attention(background.clone(), hub.subscribe()));
    let serving = tokio::spawn(serve_windows(listener, background.clone()));
    tracing::info!(socket = %setup.desk_socket.display(), "the Gatehouse host is serving");
    wait_for_quit(&mut quitting, &mut signals).await;
    let plan = quit_now(&background).await;
    tracing::info!(?plan, "the Gatehouse host quit");
    // The bridge's listener goes with its task (its socket file is removed); its clients'
    // connections close when the runtime ends.
    if let Some(task) = bridge_task {
        task.abort();
        let _ = task.await;
    }
    desk.shutdown().await;
    serving.abort();
    let _ = serving.await;
    Ok(true)
}

/// SIGTERM, SIGINT and SIGHUP, each listened for (where the runtime can) from when the host
/// starts.
struct QuitSignals {
    term: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
    hup: Option<tokio::signal::unix::Signal>,
}

impl QuitSignals {
    fn listen() -> QuitSignals {
        use tokio::signal::unix::{SignalKind, signal};
        QuitSignals {
            term: signal(SignalKind::terminate()).ok(),
            int: signal(SignalKind::interrupt()).ok(),
            hup: signal(SignalKind::hangup()).ok(),
        }
    }
}

/// Until a quit is asked for, or SIGTERM / SIGINT arrives. SIGHUP (the terminal that started
/// the window went away) is ignored: the host outlives the window on purpose.
async fn wait_for_quit(quitting: &mut watch::Receiver<bool>, signals: &mut QuitSignals) {
    let QuitSignals { term, int, hup } = signals;
    loop {
        tokio::select! {
            changed = quitting.changed() => {
                if changed.is_err() || *quitting.borrow() {
                    return;
                }
            }
            Some(()) = async { term.as_mut()?.recv().await } => return,
            Some(()) = async { int.as_mut()?.recv().await } => return,
            Some(()) = async { hup.as_mut()?.recv().await } => {}
        }
    }
}

/// What quitting does before the connections close: the cards waiting for the person are
/// declined (the servers get a decline, the audit log its receipt), and every window hears
/// that the host quits (so it closes rather than showing the host as gone).
async fn quit_now(background: &Background) -> Option<QuitPlan> {
    let plan = quit_plan(&background.desk).await.ok();
    let ended = end_open_cards(&background.desk);
    tracing::info!(ended, "open cards declined for the quit");
    background.hub.send(WindowEvent::host(
        HostState::Quitting,
        "Gatehouse quit: AI clients can no longer reach your servers",
    ));
    plan
}

/// Serves AI clients' `gatehouse serve` on the bridge socket until the host quits. A bridge
/// that cannot be opened leaves the host working: `serve` then runs its own host.
async fn serve_bridge(host: Arc<gatehouse_host::host::Host>, tokens: Arc<TokenBook>) {
    let listener = match bridge::socket_path().and_then(|path| bridge::BridgeListener::bind(&path))
    {
        Ok(listener) => Ok(listener.with_tokens(tokens)),
        Err(error) => Err(error),
    };
    let listener = match listener {
        Ok(listener) => listener,
        Err(error) => {
            tracing::warn!(code = error.code.as_str(), message = %error.message, "AI clients cannot reach this host");
            eprintln!("gatehouse-background: AI clients cannot reach this host: {error}");
            return;
        }
    };
    tracing::info!(socket = %listener.path().display(), "serving AI clients");
    listener.serve(host).await;
}

/// A new consent or sign-in card while no window is connected: start the window and say why
/// in a desktop notification. With a window connected, the window raises itself.
async fn watch_attention(
    background: Arc<Background>,
    mut events: broadcast::Receiver<WindowEvent>,
) {
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(_)) => {
                // Notices were lost: a card may be among them. Start the window if one waits.
                if background.windows() == 0
                    && (background.desk.prompts().pending() > 0
                        || background.desk.sign_in_desk().pending() > 0)
                    && let Some(starter) = &background.setup.window
                {
                    starter.start();
                }
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(attention) = event.attention else {
            continue;
        };
        let notice = match &attention {
            Attention::Consent { prompt_id } => background
                .desk
                .prompts()
                .list()
                .into_iter()
                .find(|card| card.prompt.id == *prompt_id)
                .map(|card| gatehouse_presence::Notice::ConsentWaiting {
                    server: card.prompt.server.clone(),
                    identity: card.prompt.banner.verified_id.clone(),
                    vouched_by: match card.prompt.banner.attested_by {
                        Some(gatehouse_host::IdentitySource::Vouched) => {
                            card.prompt.banner.bundle.clone()
                        }
                        _ => None,
                    },
                }),
            Attention::SignIn { server, .. } => Some(gatehouse_presence::Notice::SignInWaiting {
                server: server.clone(),
            }),
            Attention::Open => None,
        };
        // The window is started even when the card is not listed yet (the event can come
        // before the list has it): only the notification needs its text.
        if !matches!(attention, Attention::Open)
            && background.windows() == 0
            && let Some(starter) = &background.setup.window
        {
            starter.start();
        }
        let Some(notice) = notice else { continue };
        if let Some(notices) = &background.notices {
            // A full queue drops the notice: the window (started above) shows the card.
            let _ = notices.try_send(notice);
        }
    }
}

/// The tray icon and the notifications, where the session bus has them; without them the
/// host serves as well (the window still comes when a card needs the person).
async fn presence(
    background: Arc<Background>,
    mut notices: mpsc::Receiver<gatehouse_presence::Notice>,
) {
    use gatehouse_presence::{Bus, Notifier, Tray, TrayAction, TraySpec};
    let bus = match Bus::session().await {
        Ok(bus) => bus,
        Err(error) => {
            tracing::info!(code = error.code().as_str(), %error, "no tray and no notifications");
            while notices.recv().await.is_some() {}
            return;
        }
    };
    let (actions, mut acted) = mpsc::channel::<TrayAction>(16);
    let on_action: gatehouse_presence::ActionHandler = Arc::new(move |action| {
        let _ = actions.try_send(action);
    });
    let _tray = match Tray::start(&bus, TraySpec::default(), on_action.clone()).await {
        Ok(tray) => Some(tray),
        Err(error) => {
            tracing::info!(code = error.code().as_str(), %error, "no tray icon");
            None
        }
    };
    let notifier = match Notifier::new(&bus, on_action).await {
        Ok(notifier) => Some(notifier),
        Err(error) => {
            tracing::info!(code = error.code().as_str(), %error, "no notifications");
            None
        }
    };
    loop {
        tokio::select! {
            notice = notices.recv() => {
                let Some(notice) = notice else { return };
                if let Some(notifier) = &notifier
                    && let Err(error) = notifier.send(&notice).await
                {
                    tracing::info!(code = error.code().as_str(), %error, "a notification was not shown");
                }
            }
            action = acted.recv() => match action {
                Some(TrayAction::Open) => background.open_window(),
                Some(TrayAction::Quit) => background.request_quit(),
                None => return,
            }
        }
    }
}

/// Accepts windows (and control connections) until the host quits.
async fn serve_windows(listener: DeskListener, background: Arc<Background>) {
    loop {
        let stream = match listener.listener().accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(%error, "the window socket could not accept");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let background = background.clone();
        tokio::spawn(async move {
            if let Err(error) = serve_connection(stream, background).await {
                tracing::warn!(code = %error.code, message = %error.message, "a window connection ended");
            }
        });
    }
}

#[derive(Deserialize)]
struct Request {
    id: u64,
    command: String,
    #[serde(default)]
    args: Value,
}

async fn refuse(stream: &mut UnixStream, error: WireError) -> WireError {
    let reply = HelloReply {
        gatehouse_desk: WIRE_VERSION,
        accepted: None,
        error: Some(error.clone()),
    };
    let _ = write_line(stream, &reply).await;
    let _ = stream.shutdown().await;
    error
}

async fn serve_connection(
    mut stream: UnixStream,
    background: Arc<Background>,
) -> Result<(), WireError> {
    let peer = stream
        .peer_cred()
        .map_err(|e| WireCode::Io.error(format!("cannot read the peer's credentials: {e}")))?;
    if peer.uid() != background.setup.uid {
        // Another user's process learns nothing but the refusal.
        return Err(refuse(
            &mut stream,
            WireCode::PeerNotSameUser.error(format!(
                "a process of uid {} tried the window socket (served: uid {})",
                peer.uid(),
                background.setup.uid
            )),
        )
        .await);
    }
    let hello = {
        let mut reader = BufReader::new(&mut stream);
        tokio::time::timeout(HELLO_TIMEOUT, read_line(&mut reader, HELLO_LIMIT)).await
    };
    let hello: Hello = match hello {
        Err(_) => {
            return Err(refuse(
                &mut stream,
                WireCode::BadHello.error(format!("no hello within {} s", HELLO_TIMEOUT.as_secs())),
            )
            .await);
        }
        Ok(Err(error)) => return Err(refuse(&mut stream, error).await),
        Ok(Ok(None)) => return Ok(()),
        Ok(Ok(Some(line))) => match serde_json::from_slice(&line) {
            Ok(hello) => hello,
            Err(e) => {
                return Err(refuse(
                    &mut stream,
                    WireCode::BadHello.error(format!(
                        "the hello is not {{\"gatehouse_desk\":{WIRE_VERSION},\"role\":\"window\"|\"control\"}}: {e}"
                    )),
                )
                .await);
            }
        },
    };
    if hello.gatehouse_desk != WIRE_VERSION {
        return Err(refuse(
            &mut stream,
            WireCode::VersionMismatch.error(format!(
                "this host speaks version {WIRE_VERSION} of the window protocol, the peer {}; \
                 quit Gatehouse and start it again",
                hello.gatehouse_desk
            )),
        )
        .await);
    }
    let slots = match hello.role {
        Role::Window => &background.window_slots,
        Role::Control => &background.control_slots,
    };
    let Ok(_slot) = slots.clone().try_acquire_owned() else {
        return Err(refuse(
            &mut stream,
            WireCode::TooManyWindows.error(format!(
                "{} connections of this kind are open already; close one",
                match hello.role {
                    Role::Window => MAX_WINDOWS,
                    Role::Control => MAX_CONTROLS,
                }
            )),
        )
        .await);
    };
    let accepted = HelloReply {
        gatehouse_desk: WIRE_VERSION,
        accepted: Some(Accepted {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").into(),
        }),
        error: None,
    };
    write_line(&mut stream, &accepted).await?;
    let window = hello.role == Role::Window;
    if window {
        background.windows.fetch_add(1, Ordering::SeqCst);
        if let Some(starter) = &background.setup.window {
            starter.connected();
        }
    }
    let result = converse(stream, background.clone(), window).await;
    if window {
        let before = background.windows.fetch_sub(1, Ordering::SeqCst);
        // The last window went while a card still waits for the person: a card that arrived
        // as this window was going (and so started none) or one left unanswered. Either way
        // its call is blocked on the person, so the window comes back for it.
        if before == 1
            && (background.desk.prompts().pending() > 0
                || background.desk.sign_in_desk().pending() > 0)
            && let Some(starter) = &background.setup.window
        {
            starter.start();
        }
    }
    result
}

/// Requests in, replies and events out, until the peer closes.
async fn converse(
    stream: UnixStream,
    background: Arc<Background>,
    window: bool,
) -> Result<(), WireError> {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let (out, mut outgoing) = mpsc::channel::<Vec<u8>>(OUT_QUEUE);
    let writer = tokio::spawn(async move {
        while let Some(line) = outgoing.recv().await {
            if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
                break;
            }
        }
    });
    let events = window.then(|| {
        let out = out.clone();
        let mut events = background.hub.subscribe();
        tokio::spawn(async move {
            loop {
                let batch = match events.recv().await {
                    Ok(event) => vec![event],
                    // Too far behind: the window refetches everything instead.
                    Err(broadcast::error::RecvError::Lagged(_)) => REFETCH_ALL
                        .iter()
                        .map(|name| WindowEvent {
                            event: (*name).to_string(),
                            payload: json!({}),
                            attention: None,
                        })
                        .collect(),
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                for event in batch {
                    if out.send(frame(&event)).await.is_err() {
                        return;
                    }
                }
            }
        })
    });
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let result = loop {
        let line = match read_line(&mut read, MAX_LINE).await {
            Ok(Some(line)) => line,
            Ok(None) => break Ok(()),
            Err(error) => break Err(error),
        };
        let request: Request = match serde_json::from_slice(&line) {
            Ok(request) => request,
            Err(e) => {
                break Err(WireCode::BadHello.error(format!(
                    "a request is not {{\"id\":N,\"command\":\"…\",\"args\":{{…}}}}: {e}"
                )));
            }
        };
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            break Ok(());
        };
        let background = background.clone();
        let out = out.clone();
        tokio::spawn(async move {
            let outcome = run_command(&background, &request.command, request.args).await;
            let reply = match outcome {
                Ok(ok) => json!({"id": request.id, "ok": ok}),
                Err(err) => json!({"id": request.id, "err": err}),
            };
            let _ = out.send(frame(&reply)).await;
            drop(permit);
        });
    };
    if let Some(events) = events {
        events.abort();
    }
    drop(out);
    // Replies already queued still go out, for a bounded time: a request still running (its
    // task holds a sender) must not keep a closed window counted as connected, or no window
    // is started for the next card.
    let mut writer = writer;
    if tokio::time::timeout(std::time::Duration::from_secs(2), &mut writer)
        .await
        .is_err()
    {
        writer.abort();
    }
    result
}

fn frame(value: &impl serde::Serialize) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    bytes.push(b'\n');
    bytes
}

/// The host's own commands, then the desk's.
async fn run_command(background: &Background, command: &str, args: Value) -> Result<Value, Value> {
    match command {
        // What stops is measured now and sent back before the quit begins.
        "quit" => {
            let plan = quit_plan(&background.desk)
                .await
                .map_err(|e| error_value(e.code.as_str(), e.message))?;
            background.request_quit();
            serde_json::to_value(plan).map_err(|e| error_value("internal", e.to_string()))
        }
        "ui_ready" => Ok(Value::Null),
        _ => dispatch(&background.desk, command, args).await,
    }
}

/// The host's setup from the environment: `desk.sock` under `$XDG_RUNTIME_DIR`, the window
/// beside this program (or `$GATEHOUSE_WINDOW`), and presence on the session bus.
pub fn setup_from_env(launch: &Launch) -> Result<HostSetup, String> {
    let desk_socket = wire::socket_path().map_err(|e| e.to_string())?;
    Ok(HostSetup {
        desk_socket: desk_socket.clone(),
        uid: own_uid(),
        window: window::window_program().map(|program| {
            let log = desk_socket.with_file_name("window.log");
            WindowStarter::new(program, launch, log)
        }),
        presence: true,
    })
}

/// Whether `path` names a host that answers (for messages).
pub fn answering(path: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(path).is_ok()
}
