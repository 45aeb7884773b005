//! The attestation the real binary serves over HTTP, checked with the verifier the host uses.

mod common;

use common::{HttpServer, MODERN, TIMEOUT};
use gatehouse_attest::{Reason, VerifyContext, verify};
use gatehouse_demo_server::attestation::{
    DEMO_CLEARANCE, DEMO_SERVER_ID, WELL_KNOWN_PATH, demo_trust_root,
};
use serde_json::{Value, json};
use time::OffsetDateTime;

struct Fetched {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

/// A bare GET, with none of the MCP headers: hosts fetch the document before speaking MCP.
async fn fetch(server: &HttpServer) -> Fetched {
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .expect("reqwest client");
    let response = client
        .get(format!("{}{WELL_KNOWN_PATH}", server.origin()))
        .send()
        .await
        .unwrap_or_else(|error| panic!("GET {WELL_KNOWN_PATH}: {error}; {}", server.stderr()));
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.bytes().await.expect("response body").to_vec();
    Fetched {
        status,
        content_type,
        body,
    }
}

fn check(document: &[u8], origin: &str) -> Result<String, Reason> {
    let context = VerifyContext {
        origin: Some(origin),
        required_clearance: DEMO_CLEARANCE,
        now: OffsetDateTime::now_utc(),
    };
    verify(Some(document), &demo_trust_root(), &context)
        .map(|admitted| admitted.id().to_owned())
        .map_err(|refusal| refusal.reason)
}

/// The same host and scheme on a port the server is not listening on.
fn other_port(origin: &str) -> String {
    let (host, port) = origin.rsplit_once(':').expect("origin has a port");
    let port: u16 = port.parse().expect("numeric port");
    let other = if port == u16::MAX { port - 1 } else { port + 1 };
    format!("{host}:{other}")
}

#[tokio::test]
async fn signed_attestation_is_admitted_at_its_own_origin_only() {
    let server = HttpServer::spawn(&[]);
    let fetched = fetch(&server).await;
    assert_eq!(fetched.status, 200, "{}", server.stderr());
    assert!(
        fetched.content_type.starts_with("application/json"),
        "{}",
        fetched.content_type
    );
    let document: Value = serde_json::from_slice(&fetched.body).expect("JSON document");
    assert_eq!(document["netAllowedHosts"], json!([server.origin()]));

    assert_eq!(
        check(&fetched.body, server.origin()),
        Ok(DEMO_SERVER_ID.to_owned())
    );
    assert_eq!(
        check(&fetched.body, &other_port(server.origin())),
        Err(Reason::HostNotBound)
    );
}

#[tokio::test]
async fn tampered_attestation_has_a_bad_signature() {
    let server = HttpServer::spawn(&["--attestation", "tampered"]);
    let fetched = fetch(&server).await;
    assert_eq!(fetched.status, 200, "{}", server.stderr());
    assert_eq!(
        check(&fetched.body, server.origin()),
        Err(Reason::BadSignature)
    );
}

#[tokio::test]
async fn no_attestation_is_not_found() {
    let server = HttpServer::spawn(&["--attestation", "none"]);
    let fetched = fetch(&server).await;
    assert_eq!(fetched.status, 404, "{}", server.stderr());
}

#[tokio::test]
async fn mode_can_come_from_the_environment() {
    let server = HttpServer::spawn_with_env(&[], &[("GATEHOUSE_DEMO_ATTESTATION", "none")]);
    assert_eq!(fetch(&server).await.status, 404, "{}", server.stderr());
}

#[tokio::test]
async fn attestation_is_served_in_every_era() {
    // A modern-only server requires protocol metadata on MCP requests and a legacy one gates
    // session-less POSTs; neither may touch the well-known GET.
    for era in [MODERN, common::LEGACY] {
        let server = HttpServer::spawn(&["--era", era]);
        let fetched = fetch(&server).await;
        assert_eq!(fetched.status, 200, "era {era}: {}", server.stderr());
        assert_eq!(
            check(&fetched.body, server.origin()),
            Ok(DEMO_SERVER_ID.to_owned()),
            "era {era}"
        );
    }
}
