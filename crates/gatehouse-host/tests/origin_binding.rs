//! HTTP admission needs the connected origin to be bound: by the attestation's
//! `netAllowedHosts`, the bundle entry's `origins`, or both. The attack: a stdio server's
//! attestation (no hosts; its entry no origins) copied out of the world-readable bundle and
//! served at an origin of the attacker's choosing. Each case goes through `Trust::admit`
//! against a real local HTTP server serving the document.

use std::path::Path;
use std::time::Duration;

use gatehouse_attest::bundle::Posture;
use gatehouse_host::admission::{Status, Trust, TrustSettings, Verdict};
use gatehouse_host::config::ServerSpec;
use gatehouse_testkit::bundles;
use serde_json::{Value, json};
use time::macros::datetime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const ID: &str = "urn:test:weather";

fn attestation(hosts: Option<&[&str]>) -> Value {
    bundles::attestation(ID, hosts)
}

/// Installs a bundle whose only entry is `entry`.
fn install(dir: &Path, entry: Value) {
    bundles::install(dir, &bundles::signed(json!([entry])));
}

/// A stdio binding, as an admin writes it for a local server: no `origins`.
fn stdio_entry(attestation: Value) -> Value {
    bundles::stdio_entry(ID, "/usr/bin/weather-mcp", &"00".repeat(32), attestation)
}

/// A fresh loopback port and the MCP endpoint URL there, before anything is served.
async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, format!("http://127.0.0.1:{port}/mcp"))
}

/// Serves `document` at the well-known path (404 elsewhere) on a fresh loopback port, and
/// returns the MCP endpoint URL there.
async fn serve(document: &Value) -> String {
    let (listener, endpoint) = listen().await;
    serve_on(listener, document);
    endpoint
}

fn serve_on(listener: TcpListener, document: &Value) {
    let body = serde_json::to_vec(document).unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let wanted =
                    String::from_utf8_lossy(&head).starts_with("GET /.well-known/mcp-attestation ");
                let reply = if wanted {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend_from_slice(&body);
                    r
                } else {
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_vec()
                };
                let _ = stream.write_all(&reply).await;
            });
        }
    });
}

fn origin_of(endpoint: &str) -> String {
    endpoint.trim_end_matches("/mcp").to_string()
}

async fn admit(dir: &Path, endpoint: &str) -> Verdict {
    let trust = Trust::load(
        &TrustSettings {
            system_dir: dir.to_path_buf(),
            user_dir: None,
            posture_override: None,
            demo_bundle: None,
        },
        datetime!(2026-11-24 12:00 UTC),
    );
    assert!(trust.problems().is_empty(), "{:?}", trust.problems());
    assert_eq!(trust.posture(), Posture::DenyByDefault);
    let spec = ServerSpec::adhoc_http(endpoint).unwrap();
    trust
        .admit(
            "weather",
            &spec,
            datetime!(2026-11-24 12:00 UTC),
            Duration::from_secs(5),
            None,
        )
        .await
}

fn assert_refused_unbound(verdict: &Verdict) {
    assert_eq!(verdict.status, Status::Refused, "{}", verdict.detail);
    assert_eq!(
        verdict.reason.map(|r| r.as_str()),
        Some("host_not_bound"),
        "{}",
        verdict.detail
    );
    assert!(!verdict.proceeds);
    assert!(verdict.identity.is_none());
}

#[tokio::test]
async fn a_stdio_binding_s_attestation_copied_to_an_http_origin_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let document = attestation(None);
    install(dir.path(), stdio_entry(document.clone()));
    // The attacker copies the bound attestation byte for byte and serves it.
    let endpoint = serve(&document).await;
    let verdict = admit(dir.path(), &endpoint).await;
    assert_refused_unbound(&verdict);
    assert!(
        verdict.detail.contains("cannot admit an HTTP connection"),
        "{}",
        verdict.detail
    );
    let audit = verdict.audit_data();
    assert_eq!(audit["decision"], "refused");
    assert_eq!(audit["reason"], "host_not_bound");
}

#[tokio::test]
async fn entry_origins_bind_a_document_without_hosts_at_those_origins_only() {
    let document = attestation(None);
    let endpoint = serve(&document).await;

    // The admin lists this origin: admitted, bound by the bundle.
    let dir = tempfile::tempdir().unwrap();
    install(
        dir.path(),
        json!({"id": ID, "origins": [origin_of(&endpoint)], "allowedTools": ["forecast"]}),
    );
    let verdict = admit(dir.path(), &endpoint).await;
    assert_eq!(verdict.status, Status::Admitted, "{}", verdict.detail);
    assert_eq!(verdict.identity.as_ref().unwrap().id, ID);
    assert_eq!(verdict.audit_data()["origin_binding"], "bundle");

    // The same document served from another origin the admin did not list.
    let elsewhere = serve(&document).await;
    assert_refused_unbound(&admit(dir.path(), &elsewhere).await);
}

#[tokio::test]
async fn document_hosts_bind_without_entry_origins_and_only_there() {
    let dir = tempfile::tempdir().unwrap();
    // The entry (a stdio binding, so no origins) exists; the signer's hosts decide for HTTP.
    install(dir.path(), stdio_entry(attestation(None)));
    let (listener, endpoint) = listen().await;
    let document = attestation(Some(&[&origin_of(&endpoint)]));
    serve_on(listener, &document);
    let verdict = admit(dir.path(), &endpoint).await;
    assert_eq!(verdict.status, Status::Admitted, "{}", verdict.detail);
    assert_eq!(verdict.audit_data()["origin_binding"], "document");

    // The same signed document copied to another origin: rule 8 refuses it.
    let elsewhere = serve(&document).await;
    assert_refused_unbound(&admit(dir.path(), &elsewhere).await);
}

#[tokio::test]
async fn a_document_without_hosts_and_no_entry_at_all_is_refused() {
    // Signed by a trusted key, but no bundle entry governs the id and no host is named.
    let dir = tempfile::tempdir().unwrap();
    install(
        dir.path(),
        json!({"id": "urn:test:other", "origins": ["https://other.example"], "allowedTools": []}),
    );
    let endpoint = serve(&attestation(None)).await;
    assert_refused_unbound(&admit(dir.path(), &endpoint).await);
}
