//! The demo server against rmcp 3.9's own client, the stack the Gatehouse host uses: the
//! `ClientLifecycleMode::Auto` probe must land on the right era for every `--era`.

mod common;

use std::{process::Stdio, time::Duration};

use common::{ALL_TOOLS, BIN, HttpServer, SERVER_ENV, TIMEOUT};
use gatehouse_demo_server::{DemoServer, Era, era::EraGate};
use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt,
    model::{CallToolRequestParams, ClientConfig, ErrorCode, ProtocolVersion},
    service::{ClientInitializeError, RunningService},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::json;

fn auto() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

fn stdio_transport(args: &[&str]) -> TokioChildProcess {
    let mut command = tokio::process::Command::new(BIN);
    command.args(args);
    for key in SERVER_ENV {
        command.env_remove(key);
    }
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn gatehouse-demo-server");
    transport
}

fn http_transport(url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url))
}

async fn connect<F>(
    connecting: F,
) -> Result<RunningService<RoleClient, ClientConfig>, ClientInitializeError>
where
    F: Future<Output = Result<RunningService<RoleClient, ClientConfig>, ClientInitializeError>>,
{
    tokio::time::timeout(TIMEOUT, connecting)
        .await
        .expect("connecting timed out")
}

/// Connected: check the era, list every tool (across pages) and call one.
async fn exercise(client: RunningService<RoleClient, ClientConfig>, expected: ProtocolVersion) {
    let info = client.peer_info().expect("server info after startup");
    assert_eq!(info.protocol_version, expected);
    assert_eq!(
        info.server_info.as_ref().map(|server| server.name.as_str()),
        Some("gatehouse-demo-server")
    );
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect();
    assert_eq!(names, ALL_TOOLS);
    let sum = client
        .call_tool(
            CallToolRequestParams::new("add")
                .with_arguments(json!({"a": 40, "b": 2}).as_object().unwrap().clone()),
        )
        .await
        .expect("tools/call add");
    let text = sum.content[0].as_text().expect("text content");
    assert_eq!(text.text, "42");
    client.cancel().await.expect("close the client");
}

#[tokio::test]
async fn auto_lands_on_the_right_era_over_stdio() {
    for (era, expected) in [
        ("2025-11-25", ProtocolVersion::V_2025_11_25),
        ("2026-07-28", ProtocolVersion::V_2026_07_28),
        ("both", ProtocolVersion::V_2026_07_28),
    ] {
        let transport = stdio_transport(&["--era", era, "--page-size", "1"]);
        let client = connect(ClientConfig::default().serve_with_lifecycle(transport, auto()))
            .await
            .unwrap_or_else(|error| panic!("--era {era}: {error}"));
        exercise(client, expected).await;
    }
}

#[tokio::test]
async fn auto_lands_on_the_right_era_over_http() {
    for (era, expected) in [
        ("2025-11-25", ProtocolVersion::V_2025_11_25),
        ("2026-07-28", ProtocolVersion::V_2026_07_28),
        ("both", ProtocolVersion::V_2026_07_28),
    ] {
        let server = HttpServer::spawn(&["--era", era, "--page-size", "3"]);
        let client = connect(
            ClientConfig::default().serve_with_lifecycle(http_transport(&server.url), auto()),
        )
        .await
        .unwrap_or_else(|error| panic!("--era {era}: {error}; stderr:\n{}", server.stderr()));
        exercise(client, expected).await;
    }
}

#[tokio::test]
async fn legacy_initialize_is_refused_by_the_modern_era() {
    let config = ClientConfig::default().with_protocol_version(ProtocolVersion::V_2025_11_25);
    let transport = stdio_transport(&["--era", "2026-07-28"]);
    let error = connect(
        config
            .clone()
            .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize),
    )
    .await
    .expect_err("initialize must be refused");
    let ClientInitializeError::JsonRpcError(error) = error else {
        panic!("expected a JSON-RPC error, got {error}");
    };
    assert_eq!(error.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);

    let server = HttpServer::spawn(&["--era", "2026-07-28"]);
    let result = connect(
        config.serve_with_lifecycle(http_transport(&server.url), ClientLifecycleMode::Initialize),
    )
    .await;
    assert!(result.is_err(), "initialize over HTTP must be refused");
}

#[tokio::test]
async fn discover_only_client_cannot_use_the_legacy_era() {
    let transport = stdio_transport(&["--era", "2025-11-25"]);
    let mode = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let error = connect(ClientConfig::default().serve_with_lifecycle(transport, mode))
        .await
        .expect_err("a legacy server has no server/discover");
    let ClientInitializeError::JsonRpcError(error) = error else {
        panic!("expected a JSON-RPC error, got {error}");
    };
    assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
}

/// Why `EraGate` exists: rmcp alone, with the supported list cut at 2025-11-25, answers a
/// 2026-07-28 discover with -32022, and an Auto client that prefers only 2026-07-28 then
/// fails instead of falling back to `initialize`. If rmcp changes this, the gate may go.
#[tokio::test]
async fn without_the_gate_rmcp_would_strand_auto_clients() {
    async fn auto_against(gated: bool) -> Result<(), ClientInitializeError> {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let server = DemoServer::new(Era::Legacy);
        tokio::spawn(async move {
            if gated {
                if let Ok(running) = EraGate::new(Era::Legacy, server).serve(server_io).await {
                    let _ = running.waiting().await;
                }
            } else if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let client =
            connect(ClientConfig::default().serve_with_lifecycle(client_io, auto())).await?;
        let _ = tokio::time::timeout(Duration::from_secs(5), client.cancel()).await;
        Ok(())
    }

    let ungated = auto_against(false)
        .await
        .expect_err("rmcp alone strands the client");
    assert!(
        matches!(
            ungated,
            ClientInitializeError::NoCompatibleProtocolVersion { .. }
        ),
        "{ungated}"
    );
    auto_against(true)
        .await
        .expect("the gate lets Auto fall back");
}
