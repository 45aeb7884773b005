//! `gatehouse serve`: Gatehouse as one MCP server for an AI client, on stdio or (`--http`)
//! Streamable HTTP. While the desktop app runs, the client is bridged to the app's host
//! (gatehouse_gateway::bridge): one set of servers, one gate, one audit log, the app's consent
//! dialog. Over stdio the client's messages are piped to the app; with `--http` this process
//! binds the loopback listener and hands it to the app, which serves it (same tokens, same
//! rules) until this process ends; if the app goes away meanwhile, this process serves the
//! same listener with a host of its own. Otherwise, or with `--no-bridge` or a flag that
//! describes another host, the host runs in this process, headless: elicitations and sign-ins
//! are declined (see gatehouse_gateway::headless), and each call that needed the person says
//! so in its result, with how to start the app. `serve` never starts the app itself: it runs
//! in the AI client's environment, which the security host must not inherit, and a client
//! under prompt injection must not be able to start programs on the desktop.

use std::net::SocketAddr;
use std::sync::Arc;

use gatehouse_gateway::tokens::TokenBook;
use gatehouse_gateway::{HeadlessConsent, bridge};
use gatehouse_host::caller::{UNNAMED_CLIENT, validate_client_id};
use gatehouse_host::host::Host;
use tokio_util::sync::CancellationToken;

use crate::cli::ServeArgs;
use crate::commands::{Context, data_dir};
use crate::failure::Failure;

pub async fn run(
    context: &Context,
    args: &ServeArgs,
    own_host: &[&'static str],
) -> Result<u8, Failure> {
    let client = args.client.as_deref().unwrap_or(UNNAMED_CLIENT);
    validate_client_id(client).map_err(Failure::usage)?;
    if args.startup_wait < 0.0 || !args.startup_wait.is_finite() || args.startup_wait > 600.0 {
        return Err(Failure::usage(
            "--startup-wait must be between 0 and 600 seconds",
        ));
    }
    let startup_wait = std::time::Duration::from_secs_f64(args.startup_wait);
    let http = args
        .http
        .as_deref()
        .map(gatehouse_gateway::http::parse_loopback_addr)
        .transpose()
        .map_err(|e| Failure::usage(format!("--http: {e}")))?;
    let bridging = if args.no_bridge || !own_host.is_empty() {
        let why = if args.no_bridge {
            "--no-bridge".to_string()
        } else {
            own_host.join(", ")
        };
        eprintln!("gatehouse serve: running the host in this process ({why})");
        false
    } else {
        true
    };
    if let Some(addr) = http {
        return serve_http(context, args, addr, startup_wait, bridging).await;
    }
    let bridged = if bridging {
        bridge(client, args.server.as_deref(), startup_wait).await?
    } else {
        None
    };
    if let Some(bridged) = bridged {
        bridged
            .pipe(tokio::io::stdin(), tokio::io::stdout())
            .await
            .map_err(|e| Failure {
                code: e.code.into(),
                message: e.message,
                exit: 2,
            })?;
        return Ok(0);
    }
    let consent = Arc::new(HeadlessConsent::new());
    let host = open_own_host(context, args, consent.clone()).await?;
    gatehouse_gateway::stdio::serve_stdio(
        host,
        client.to_string(),
        args.server.clone(),
        startup_wait,
        Some(consent),
    )
    .await
    .map_err(serve_failed)?;
    Ok(0)
}

fn serve_failed(message: String) -> Failure {
    Failure {
        code: gatehouse_host::ErrorCode::ServeFailed,
        message,
        exit: 2,
    }
}

/// The host in this process, headless: `consent` declines (and remembers) every elicitation.
async fn open_own_host(
    context: &Context,
    args: &ServeArgs,
    consent: Arc<HeadlessConsent>,
) -> Result<Arc<Host>, Failure> {
    // Refused here with the CLI's exit code for a refusal; the host checks again before each
    // admission (a lock installed while it serves).
    crate::commands::lock_guard(context).check(time::OffsetDateTime::now_utc())?;
    let options = crate::commands::host_options(context);
    let host =
        Host::open(options, context.secrets.clone(), consent, Arc::new(|_| {})).map_err(|e| {
            Failure {
                code: e.code,
                message: e.message,
                exit: 2,
            }
        })?;
    if let Some(name) = &args.server
        && !host.has_server(name)
    {
        host.shutdown().await;
        return Err(Failure {
            code: gatehouse_host::ErrorCode::UnknownServer,
            message: format!(
                "--server: no server named {name:?} in {}: see `gatehouse servers list`",
                context.config_path.display()
            ),
            exit: 2,
        });
    }
    Ok(host)
}

/// Cancelled on Ctrl-C or SIGTERM.
fn stop_on_signal() -> Result<CancellationToken, Failure> {
    let stop = CancellationToken::new();
    let cancel = stop.clone();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| serve_failed(format!("cannot listen for SIGTERM: {e}")))?;
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        cancel.cancel();
    });
    Ok(stop)
}

/// Streamable HTTP until Ctrl-C or SIGTERM, on a loopback listener this process binds: served
/// by the app's host while the app runs (and, if it goes away, by a host of this process on
/// the same listener), else by a host of this process. Whoever serves refuses to start when
/// no client has a token: there is no unauthenticated mode.
async fn serve_http(
    context: &Context,
    args: &ServeArgs,
    addr: SocketAddr,
    startup_wait: std::time::Duration,
    bridging: bool,
) -> Result<u8, Failure> {
    let listener = std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| serve_failed(format!("cannot listen on {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| serve_failed(e.to_string()))?;
    let url = format!("http://{local}{}", gatehouse_gateway::http::MCP_PATH);
    let stop = stop_on_signal()?;
    if bridging && let Some(mut bridged) = bridge_http(&listener, args, startup_wait).await? {
        eprintln!(
            "gatehouse serve: listening on {url} (served by the desktop app's host: its consent dialog, gate and audit log)"
        );
        tokio::select! {
            () = stop.cancelled() => return Ok(0),
            () = bridged.closed() => {}
        }
        drop(bridged);
        eprintln!(
            "gatehouse serve: the desktop app stopped serving {url}; serving it with a host in \
             this process, which declines elicitations and sign-ins (start the Gatehouse app, \
             then restart gatehouse serve, to reach it again)"
        );
    }
    let consent = Arc::new(HeadlessConsent::new());
    let host = open_own_host(context, args, consent.clone()).await?;
    let book = Arc::new(TokenBook::new(
        context.secrets.clone(),
        gatehouse_gateway::tokens::index_path(&data_dir()),
    ));
    let loaded = {
        let book = book.clone();
        tokio::task::spawn_blocking(move || book.load())
            .await
            .map_err(|e| e.to_string())
            .and_then(|loaded| loaded)
    };
    let loaded = match loaded {
        Ok(0) => Err(
            "no AI client has a token for gatehouse serve --http: make one with \
             gatehouse clients token CLIENT"
                .to_string(),
        ),
        other => other,
    };
    let loaded = match loaded {
        Ok(loaded) => loaded,
        Err(message) => {
            host.shutdown().await;
            return Err(serve_failed(message));
        }
    };
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            host.shutdown().await;
            return Err(serve_failed(format!("cannot listen on {local}: {e}")));
        }
    };
    eprintln!("gatehouse serve: listening on {url} for {loaded} client(s)");
    let served = gatehouse_gateway::http::serve_http(
        host.clone(),
        listener,
        book,
        args.server.clone(),
        startup_wait,
        Some(consent),
        stop,
    )
    .await;
    host.shutdown().await;
    served.map_err(serve_failed)?;
    Ok(0)
}

/// The bridge's socket, or `None` (said on stderr) when there is none for this session.
fn bridge_socket() -> Option<std::path::PathBuf> {
    match bridge::socket_path() {
        Ok(path) => Some(path),
        Err(error) => {
            eprintln!(
                "gatehouse serve: running the host in this process: {}",
                error.message
            );
            None
        }
    }
}

/// A bridge that is there but fails its checks (or refuses) stops `serve`: nothing is handed
/// to anything unchecked.
fn bridge_failure(error: bridge::BridgeError) -> Failure {
    Failure {
        code: error.code.into(),
        message: format!(
            "{}; or run gatehouse serve --no-bridge to use a host of its own",
            error.message
        ),
        exit: 2,
    }
}

/// The app's host serving `listener`, when the app runs.
async fn bridge_http(
    listener: &std::net::TcpListener,
    args: &ServeArgs,
    startup_wait: std::time::Duration,
) -> Result<Option<bridge::BridgedHttp>, Failure> {
    let Some(path) = bridge_socket() else {
        return Ok(None);
    };
    match bridge::connect_http(&path, listener, args.server.as_deref(), startup_wait).await {
        Ok(Some(bridged)) => Ok(Some(bridged)),
        Ok(None) => {
            eprintln!(
                "gatehouse serve: the desktop app is not running; running the host in this process"
            );
            Ok(None)
        }
        Err(error) => Err(bridge_failure(error)),
    }
}

/// The desktop app's host, when it runs: `None` when no app listens (or there is no runtime
/// directory for its socket), and the host then runs here.
async fn bridge(
    client: &str,
    only: Option<&str>,
    startup_wait: std::time::Duration,
) -> Result<Option<bridge::Bridged>, Failure> {
    let Some(path) = bridge_socket() else {
        return Ok(None);
    };
    match bridge::connect(&path, client, only, startup_wait).await {
        Ok(Some(bridged)) => {
            eprintln!(
                "gatehouse serve: bridged to the desktop app ({})",
                path.display()
            );
            Ok(Some(bridged))
        }
        Ok(None) => {
            eprintln!(
                "gatehouse serve: the desktop app is not running; running the host in this process"
            );
            Ok(None)
        }
        Err(error) => Err(bridge_failure(error)),
    }
}
