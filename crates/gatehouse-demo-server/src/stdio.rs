//! Serving the demo over stdio: newline-delimited JSON-RPC on stdin/stdout.

use std::future::Future;

use anyhow::{Context, bail};
use rmcp::{ServiceExt, service::ServerInitializeError};
use tokio_util::sync::CancellationToken;

use crate::{era::EraGate, server::DemoServer, wire::ModernWire};

/// Serve one MCP connection on this process's stdin/stdout until the client closes stdin or
/// `shutdown` resolves.
///
/// Only rmcp writes to stdout here; every log line must go to stderr.
///
/// # Errors
///
/// When the connection fails before a lifecycle is established, including the 2026-07-28
/// era refusing `initialize`: rmcp 3.9 answers the refusal and then ends the connection.
pub async fn serve_stdio(
    server: DemoServer,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let era = server.era();
    let ct = CancellationToken::new();
    let serving = EraGate::new(era, ModernWire::new(server))
        .serve_with_ct(rmcp::transport::stdio(), ct.clone());
    tokio::pin!(serving);
    tokio::pin!(shutdown);

    let running = tokio::select! {
        result = &mut serving => match result {
            Ok(running) => running,
            // The client left before asking anything: nothing went wrong on our side.
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(ServerInitializeError::InitializeFailed(error)) => {
                bail!("refused initialize in the {era} era: {}", error.message)
            }
            Err(error) => return Err(error).context("stdio connection failed before it was established"),
        },
        () = &mut shutdown => return Ok(()),
    };

    let waiting = running.waiting();
    tokio::pin!(waiting);
    let quit = tokio::select! {
        quit = &mut waiting => quit,
        () = &mut shutdown => {
            ct.cancel();
            waiting.await
        }
    };
    let reason = quit.context("stdio service task failed")?;
    tracing::info!(?reason, "stdio connection ended");
    Ok(())
}
