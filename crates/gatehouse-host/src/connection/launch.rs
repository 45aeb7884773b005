//! How a server is started or reached: its launch with secrets resolved, the handshake in the
//! chosen era, and how the broker sees its transport.

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};

use super::{ConnectOptions, with_stderr};
use crate::client::HostClient;
use crate::config::{ServerSpec, lookup_secret, resolve_secrets};
use crate::error::explain;
use crate::http::HttpLaunch;
use crate::secrets::{SecretStore, SecretValue, to_identifier};
use crate::stdio::{StdioLaunch, TransportState};
use crate::tap::{Tapped, Wire};
use crate::{Era, EraPreference, HostError};

fn lifecycle(era: EraPreference) -> ClientLifecycleMode {
    match era {
        EraPreference::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![Era::V2026_07_28.protocol_version()],
            legacy_version: Some(Era::V2025_11_25.protocol_version()),
        },
        EraPreference::Only(Era::V2026_07_28) => ClientLifecycleMode::Discover {
            preferred_versions: vec![Era::V2026_07_28.protocol_version()],
        },
        EraPreference::Only(Era::V2025_11_25) => ClientLifecycleMode::Initialize,
    }
}

/// The working directory of every stdio server admitted through a bundle's binding: the root,
/// which only the system's administrators can write, so relative paths in a binding resolve to
/// the same files whoever starts the host, wherever.
pub const BOUND_SERVER_CWD: &str = "/";

/// How to start or reach a server, with its secrets resolved.
pub(super) enum Launch {
    Stdio(StdioLaunch),
    Http(HttpLaunch),
}

/// Resolves every secret the spec references, off the async runtime (keychain calls block),
/// into a launch description. Returns the secrets used, for redaction.
pub(super) async fn resolve(
    server: &str,
    spec: &ServerSpec,
    secrets: Arc<dyn SecretStore>,
    options: &ConnectOptions,
) -> Result<(Launch, Vec<(String, SecretValue)>), HostError> {
    let spec = spec.clone();
    let stderr_log = options
        .log_dir
        .as_ref()
        .map(|d| d.join(log_file_name(server)));
    let (grace, connect_timeout) = (options.shutdown_grace, options.connect_timeout);
    tokio::task::spawn_blocking(move || {
        let mut used = Vec::new();
        let mut resolve_all = |pairs: &[(String, String)]| {
            pairs
                .iter()
                .map(|(k, v)| Ok((k.clone(), resolve_secrets(v, secrets.as_ref(), &mut used)?)))
                .collect::<Result<Vec<_>, HostError>>()
        };
        let launch = match spec {
            ServerSpec::Stdio(s) => Launch::Stdio(StdioLaunch {
                env: resolve_all(&s.env)?,
                command: s.command,
                args: s
                    .args
                    .iter()
                    .map(|a| resolve_secrets(a, secrets.as_ref(), &mut used))
                    .collect::<Result<_, _>>()?,
                cwd: s.cwd,
                stderr_log,
                grace,
                env_remove: Vec::new(),
                env_remove_prefixes: Vec::new(),
            }),
            ServerSpec::Http(h) => {
                let headers = resolve_all(&h.headers)?;
                let bearer = match &h.bearer_token_secret {
                    Some(name) => {
                        let value = lookup_secret(secrets.as_ref(), name)?;
                        used.push((name.clone(), value.clone()));
                        Some(value.expose().to_string())
                    }
                    None => None,
                };
                Launch::Http(HttpLaunch {
                    url: crate::config::resolve_url_secrets(&h.url, secrets.as_ref(), &mut used)?,
                    headers,
                    bearer,
                    connect_timeout,
                })
            }
        };
        Ok((launch, used))
    })
    .await
    .map_err(|e| HostError::Secret {
        name: "(keychain)".into(),
        detail: format!("the keychain lookup failed: {e}"),
    })?
}

/// Wraps `transport` in the tap and completes the MCP handshake in the chosen era, within the
/// connect timeout.
pub(super) async fn handshake<T: crate::tap::WireText + 'static>(
    server: &str,
    handler: HostClient,
    transport: T,
    wire: Wire,
    options: &ConnectOptions,
    state: &TransportState,
) -> Result<RunningService<RoleClient, HostClient>, HostError> {
    let tapped = Tapped::new(transport, server, wire);
    let result = tokio::time::timeout(
        options.connect_timeout,
        handler.serve_with_lifecycle(tapped, lifecycle(options.era)),
    )
    .await;
    let detail = match result {
        Ok(Ok(service)) => return Ok(service),
        Ok(Err(error)) => format!("during the handshake: {}", explain(&error)),
        Err(_) => format!(
            "no answer to the handshake within {}s (is it an MCP server? does it speak this protocol era?)",
            options.connect_timeout.as_secs_f64()
        ),
    };
    Err(HostError::Connect {
        server: server.to_string(),
        detail: with_stderr(state.fault().unwrap_or(detail), state),
    })
}

/// A file name for a server's log: the name with anything but `[A-Za-z0-9._-]` replaced.
pub fn log_file_name(server: &str) -> String {
    format!("{}.stderr.log", to_identifier(server, '_'))
}

/// How the broker sees the transport: stdio, or HTTP on loopback or not, with or without
/// MCP authorization (a bearer token or an Authorization header).
pub(super) fn transport_kind(spec: &ServerSpec) -> gatehouse_policy::TransportKind {
    match spec {
        ServerSpec::Stdio(_) => gatehouse_policy::TransportKind::Stdio,
        ServerSpec::Http(http) => gatehouse_policy::TransportKind::Http {
            // The policy's one host classification (`localhost`, 127.0.0.0/8, `::1`).
            loopback: http.url.host().is_some_and(|host| {
                gatehouse_policy::host_class(&host) == gatehouse_policy::HostClass::Loopback
            }),
            authorized: http.bearer_token_secret.is_some()
                || http
                    .headers
                    .iter()
                    .any(|(name, _)| name.eq_ignore_ascii_case("authorization")),
        },
    }
}
