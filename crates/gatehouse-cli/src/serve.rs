//! `gatehouse serve`: Gatehouse as one MCP server for an AI client, on stdio. While the
//! desktop app runs, the client is bridged to the app's host (gatehouse_gateway::bridge): one
//! set of servers, one gate, one audit log, the app's consent dialog. Otherwise, or with
//! `--no-bridge` or a flag that describes another host, the host runs in this process,
//! headless (elicitations are declined, see gatehouse_gateway::headless); the client's calls
//! pass the same gate and audit log as the CLI's own.

use std::net::SocketAddr;
use std::sync::Arc;

use gatehouse_gateway::tokens::TokenBook;
use gatehouse_gateway::{HeadlessConsent, bridge};
use gatehouse_host::caller::{UNNAMED_CLIENT, validate_client_id};
use gatehouse_host::host::Host;

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
    // `--http` is a long-lived server of its own: it never bridges.
    let bridged = if http.is_some() {
        None
    } else if args.no_bridge || !own_host.is_empty() {
        let why = if args.no_bridge {
            "--no-bridge".to_string()
        } else {
            own_host.join(", ")
        };
        eprintln!("gatehouse serve: running the host in this process ({why})");
        None
    } else {
        bridge(client, args.server.as_deref(), startup_wait).await?
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
    // Refused here with the CLI's exit code for a refusal; the host checks again before each
    // admission (a lock installed while it serves).
    crate::commands::lock_guard(context).check(time::OffsetDateTime::now_utc())?;
    let options = crate::commands::host_options(context);
    let host = Host::open(
        options,
        context.secrets.clone(),
        Arc::new(HeadlessConsent),
        Arc::new(|_| {}),
    )
    .map_err(|e| Failure {
        code: e.code,
        message: e.message,
        exit: 2,
    })?;
    let only = args.server.clone();
    if let Some(name) = &only
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
    let served = match http {
        Some(addr) => serve_http(context, host, addr, only, startup_wait).await,
        None => {
            gatehouse_gateway::stdio::serve_stdio(host, client.to_string(), only, startup_wait)
                .await
        }
    };
    served.map_err(|message| Failure {
        code: gatehouse_host::ErrorCode::ServeFailed,
        message,
        exit: 2,
    })?;
    Ok(0)
}

/// Streamable HTTP until Ctrl-C or SIGTERM. Refuses to start when no client has a token:
/// there is no unauthenticated mode.
async fn serve_http(
    context: &Context,
    host: Arc<Host>,
    addr: SocketAddr,
    only: Option<String>,
    startup_wait: std::time::Duration,
) -> Result<(), String> {
    let book = Arc::new(TokenBook::new(
        context.secrets.clone(),
        gatehouse_gateway::tokens::index_path(&data_dir()),
    ));
    let loaded = {
        let book = book.clone();
        tokio::task::spawn_blocking(move || book.load())
            .await
            .map_err(|e| e.to_string())??
    };
    if loaded == 0 {
        host.shutdown().await;
        return Err(
            "no AI client has a token for gatehouse serve --http: make one with \
             gatehouse clients token CLIENT"
                .into(),
        );
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!(
        "gatehouse serve: listening on http://{local}{} for {loaded} client(s)",
        gatehouse_gateway::http::MCP_PATH
    );
    let shutdown = tokio_util::sync::CancellationToken::new();
    let stop = shutdown.clone();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("cannot listen for SIGTERM: {e}"))?;
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        stop.cancel();
    });
    let served = gatehouse_gateway::http::serve_http(
        host.clone(),
        listener,
        book,
        only,
        startup_wait,
        shutdown,
    )
    .await;
    host.shutdown().await;
    served
}

/// The desktop app's host, when it runs: `None` when no app listens (or there is no runtime
/// directory for its socket), and the host then runs here. A bridge that is there but fails
/// its checks stops `serve`: the client is handed to nothing unchecked.
async fn bridge(
    client: &str,
    only: Option<&str>,
    startup_wait: std::time::Duration,
) -> Result<Option<bridge::Bridged>, Failure> {
    let path = match bridge::socket_path() {
        Ok(path) => path,
        Err(error) => {
            eprintln!(
                "gatehouse serve: running the host in this process: {}",
                error.message
            );
            return Ok(None);
        }
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
        Err(error) => Err(Failure {
            code: error.code.into(),
            message: format!(
                "{}; or run gatehouse serve --no-bridge to use a host of its own",
                error.message
            ),
            exit: 2,
        }),
    }
}
