//! Remote servers the admins vouch for (issue 27): a bundle entry's `vouched` attestation
//! admits a server that publishes none at exactly its endpoints (origin and path), until the
//! vouch expires, and nothing the server or anyone else serves widens it. Admission goes
//! through `Trust::admit` against a loopback fixture that records what was asked of it; the
//! gate through a real `Host` and the demo server in `--http` mode; the issuer pin through the
//! test kit's OAuth mock.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_host::ErrorCode;
use gatehouse_host::admission::{IdentitySource, Status, Trust, TrustSettings, Verdict};
use gatehouse_host::config::ServerSpec;
use gatehouse_testkit as kit;
use kit::bundles;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const ID: &str = "urn:test:remote";
const NOW: OffsetDateTime = datetime!(2026-11-24 12:00 UTC);
const VOUCHED_UNTIL: &str = "2027-01-01T00:00:00Z";

/// A loopback HTTP fixture: serves `document` (if any) at the well-known path and 404
/// elsewhere, and records each request line.
struct Fixture {
    origin: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Fixture {
    async fn start(document: Option<Value>) -> Fixture {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let body = document.map(|d| serde_json::to_vec(&d).unwrap());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (body, seen) = (body.clone(), seen.clone());
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&head).to_string();
                    let line = text.lines().next().unwrap_or_default().to_string();
                    seen.lock().unwrap().push(line.clone());
                    let reply = match &body {
                        Some(body) if line.starts_with("GET /.well-known/mcp-attestation ") => {
                            let mut r = format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                                body.len()
                            )
                            .into_bytes();
                            r.extend_from_slice(body);
                            r
                        }
                        _ => b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_vec(),
                    };
                    let _ = stream.write_all(&reply).await;
                });
            }
        });
        Fixture { origin, requests }
    }

    fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    fn fetched_well_known(&self) -> bool {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("/.well-known/mcp-attestation"))
    }
}

/// The admins' attestation for [`ID`], bound to `origin` as `add-server --url` writes it.
fn vouched_attestation(origin: &str) -> Value {
    bundles::attestation(ID, Some(&[origin]))
}

/// A vouched entry for [`ID`] at `endpoint` (an endpoint of `origin`).
fn vouched_entry(origin: &str, endpoint: &str) -> Value {
    json!({
        "id": ID, "origins": [origin],
        "vouched": {"endpoints": [endpoint], "expires": VOUCHED_UNTIL,
                    "attestation": vouched_attestation(origin)},
        "allowedTools": ["echo"],
    })
}

/// Installs bundle `test-bundle` at `version` (specVersion 6) with `servers`.
fn install(dir: &Path, version: u64, servers: Value) {
    let mut signed = bundles::signed(servers);
    signed["specVersion"] = json!(6);
    signed["version"] = json!(version);
    bundles::install(dir, &signed);
}

fn trust(dir: &Path) -> Trust {
    let trust = Trust::load(
        &TrustSettings {
            system_dir: dir.to_path_buf(),
            user_dir: None,
            posture_override: None,
            demo_bundle: None,
        },
        NOW,
    );
    assert!(trust.problems().is_empty(), "{:?}", trust.problems());
    trust
}

async fn admit_at(dir: &Path, endpoint: &str, now: OffsetDateTime) -> Verdict {
    let spec = ServerSpec::adhoc_http(endpoint).unwrap();
    trust(dir)
        .admit("remote", &spec, now, Duration::from_secs(5), None)
        .await
}

async fn admit(dir: &Path, endpoint: &str) -> Verdict {
    admit_at(dir, endpoint, NOW).await
}

fn assert_vouched(verdict: &Verdict) {
    assert_eq!(verdict.status, Status::Admitted, "{}", verdict.detail);
    let identity = verdict.identity.as_ref().expect("an identity");
    assert_eq!(identity.id, ID);
    assert_eq!(identity.attested_by, IdentitySource::Vouched);
    let said = "vouched for by test-bundle@1; the server publishes no attestation";
    assert!(verdict.headline().contains(said), "{}", verdict.headline());
    assert!(verdict.detail.contains(said), "{}", verdict.detail);
    assert!(!verdict.headline().contains("attested by the server"));
    assert_eq!(verdict.audit_data()["identity"]["attested_by"], "vouched");
}

fn assert_not_admitted(verdict: &Verdict) {
    assert_ne!(verdict.status, Status::Admitted, "{}", verdict.detail);
    assert!(verdict.identity.is_none());
    assert!(!verdict.proceeds, "deny-by-default: {}", verdict.detail);
}

fn reason(verdict: &Verdict) -> Option<&'static str> {
    verdict.reason.map(|r| r.as_str())
}

#[tokio::test]
async fn admitted_at_the_vouched_endpoint_and_nowhere_else() {
    let server = Fixture::start(None).await;
    let endpoint = server.endpoint("/mcp");
    let dir = tempfile::tempdir().unwrap();
    install(
        dir.path(),
        1,
        json!([vouched_entry(&server.origin, &endpoint)]),
    );

    let verdict = admit(dir.path(), &endpoint).await;
    assert_vouched(&verdict);
    assert_eq!(verdict.policy().unwrap().allowed_tools, ["echo"]);
    // A query never identifies a server: the same endpoint with one is the same server.
    assert_vouched(&admit(dir.path(), &format!("{endpoint}?session=1")).await);
    assert!(
        !server.fetched_well_known(),
        "a vouched endpoint's own document is never fetched"
    );

    // Another path at the same origin (another tenant): the normal path, which finds no
    // document there.
    let other_path = admit(dir.path(), &server.endpoint("/@mallory/mcp")).await;
    assert_not_admitted(&other_path);
    assert_eq!(
        other_path.status,
        Status::Unattested,
        "{}",
        other_path.detail
    );

    // Another port: another origin.
    let elsewhere = Fixture::start(None).await;
    assert_not_admitted(&admit(dir.path(), &elsewhere.endpoint("/mcp")).await);

    // Another scheme at the same host and port.
    let https = endpoint.replace("http://", "https://");
    assert_not_admitted(&admit(dir.path(), &https).await);
}

#[tokio::test]
async fn refused_once_the_vouch_expires() {
    let server = Fixture::start(None).await;
    let endpoint = server.endpoint("/mcp");
    let dir = tempfile::tempdir().unwrap();
    install(
        dir.path(),
        1,
        json!([vouched_entry(&server.origin, &endpoint)]),
    );

    assert_vouched(&admit_at(dir.path(), &endpoint, datetime!(2026-12-31 23:59 UTC)).await);
    let verdict = admit_at(dir.path(), &endpoint, datetime!(2027-01-01 00:00 UTC)).await;
    assert_not_admitted(&verdict);
    assert_eq!(
        reason(&verdict),
        Some("vouch_expired"),
        "{}",
        verdict.detail
    );
    assert!(verdict.detail.contains(VOUCHED_UNTIL), "{}", verdict.detail);
    assert!(!server.fetched_well_known());
}

#[tokio::test]
async fn a_rotation_that_drops_the_entry_ends_the_admission() {
    let server = Fixture::start(None).await;
    let endpoint = server.endpoint("/mcp");
    let dir = tempfile::tempdir().unwrap();
    install(
        dir.path(),
        1,
        json!([vouched_entry(&server.origin, &endpoint)]),
    );
    assert_vouched(&admit(dir.path(), &endpoint).await);

    install(
        dir.path(),
        2,
        json!([{"id": "urn:test:other", "origins": ["https://other.example"], "allowedTools": []}]),
    );
    let verdict = admit(dir.path(), &endpoint).await;
    assert_not_admitted(&verdict);
    assert_eq!(verdict.status, Status::Unattested, "{}", verdict.detail);
}

#[tokio::test]
async fn the_server_s_own_document_widens_nothing() {
    // The server also publishes a document signed by a trusted key, as another id whose entry
    // allows more tools at this origin.
    let server = Fixture::start(Some(bundles::attestation("urn:test:wider", None))).await;
    let endpoint = server.endpoint("/mcp");
    let dir = tempfile::tempdir().unwrap();
    install(
        dir.path(),
        1,
        json!([
            vouched_entry(&server.origin, &endpoint),
            {"id": "urn:test:wider", "origins": [server.origin], "allowedTools": ["echo", "add"]},
        ]),
    );
    let verdict = admit(dir.path(), &endpoint).await;
    assert_vouched(&verdict);
    assert_eq!(verdict.policy().unwrap().allowed_tools, ["echo"]);
    assert!(!server.fetched_well_known());
}

#[tokio::test]
async fn a_copied_vouched_attestation_admits_nothing_elsewhere() {
    let real = Fixture::start(None).await;
    let endpoint = real.endpoint("/mcp");
    let entry = vouched_entry(&real.origin, &endpoint);
    let copied = entry["vouched"]["attestation"].clone();
    let dir = tempfile::tempdir().unwrap();
    install(dir.path(), 1, json!([entry]));

    // Served at another origin's well-known path: it names the real origin, so the host rule
    // refuses it anyway.
    let other = Fixture::start(Some(copied.clone())).await;
    let verdict = admit(dir.path(), &other.endpoint("/mcp")).await;
    assert_not_admitted(&verdict);
    assert!(other.fetched_well_known());

    // Served at the vouched origin itself, for another path (another tenant of an
    // aggregator): it verifies, but a vouched id is admitted only at its endpoints.
    let aggregator = Fixture::start(Some(bundles::attestation(ID, None))).await;
    let tenant_endpoint = aggregator.endpoint("/@alice/mcp");
    let dir = tempfile::tempdir().unwrap();
    install(
        dir.path(),
        1,
        json!([vouched_entry(&aggregator.origin, &tenant_endpoint)]),
    );
    let verdict = admit(dir.path(), &aggregator.endpoint("/@mallory/mcp")).await;
    assert_not_admitted(&verdict);
    assert_eq!(
        reason(&verdict),
        Some("vouched_elsewhere"),
        "{}",
        verdict.detail
    );
    assert!(
        verdict.detail.contains(&tenant_endpoint),
        "{}",
        verdict.detail
    );
    // The real tenant is still admitted by the vouch.
    assert_vouched(&admit(dir.path(), &tenant_endpoint).await);
}

/// The demo server in `--http` mode publishing no attestation; its MCP endpoint URL.
struct DemoHttp {
    child: std::process::Child,
    endpoint: String,
}

impl DemoHttp {
    fn start() -> DemoHttp {
        use std::io::BufRead;
        let mut child = std::process::Command::new(kit::demo::server())
            .args(["--http", "127.0.0.1:0", "--attestation", "none"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the demo server starts");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        let endpoint = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        DemoHttp { child, endpoint }
    }
}

impl Drop for DemoHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_gate_applies_the_vouched_entry_s_allow_list_and_pins() {
    let demo = DemoHttp::start();
    let url = url::Url::parse(&demo.endpoint).unwrap();
    let origin = url.origin().ascii_serialization();
    let dir = tempfile::tempdir().unwrap();
    let mut entry = vouched_entry(&origin, &demo.endpoint);
    // A pin that cannot match: the pinned tool is blocked, not called.
    entry["allowedTools"] = json!(["echo", "add"]);
    entry["toolPins"] = json!({"add": format!("sha256:{}", "00".repeat(32))});
    install(
        &kit::host::paths(dir.path()).system_trust_roots,
        1,
        json!([entry]),
    );
    kit::host::write_servers(
        dir.path(),
        &json!({"mcpServers": {"remote": {"url": demo.endpoint}}}),
    );
    let mut options = kit::host::options(dir.path());
    options.connect_timeout = Duration::from_secs(20);
    let host = kit::host::open(
        options,
        Arc::new(gatehouse_host::ScriptedConsent::new(Vec::new())),
    );

    let detail = host.server_detail("remote").await.expect("connected");
    let banner = detail.banner.as_ref().expect("a banner");
    assert_eq!(banner.verified_id.as_deref(), Some(ID));
    assert_eq!(banner.attested_by, Some(IdentitySource::Vouched));
    let lines = banner.lines().join("\n");
    assert!(
        lines.contains("vouched for by test-bundle@1; the server publishes no attestation"),
        "{lines}"
    );
    let allowed: Vec<String> = detail
        .tools
        .allowed
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    let hidden: Vec<String> = detail
        .tools
        .hidden
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(allowed, ["echo"]);
    assert!(hidden.contains(&"slow".to_string()), "{hidden:?}");
    let blocked: Vec<String> = detail
        .tools
        .blocked
        .iter()
        .map(|b| b.tool.name.to_string())
        .collect();
    assert_eq!(blocked, ["add"]);

    let options = gatehouse_host::CallOptions::default();
    let echo = host
        .call(
            "remote",
            "echo",
            json!({"message": "hi"}).as_object().cloned(),
            &options,
        )
        .await
        .expect("an allowed tool is called");
    assert!(format!("{echo:?}").contains("hi"));
    for (refused, code) in [
        ("add", ErrorCode::ToolPinMismatch),
        ("slow", ErrorCode::ToolNotAdmitted),
    ] {
        let error = host
            .call(
                "remote",
                refused,
                json!({"a": 1, "b": 2}).as_object().cloned(),
                &options,
            )
            .await
            .expect_err("a tool off the allow-list or with a changed pin is refused");
        assert_eq!(error.code, code, "{refused}: {}", error.message);
    }
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_vouched_entry_s_issuer_pin_decides_the_sign_in() {
    use kit::oauth::{Approve, Browser, Mock, Mode};
    let mock = Mock::start(Mode::Good).await;
    let endpoint = mock.mcp_url().to_string();
    let origin = mock.base.clone();

    for (issuers, signs_in) in [
        (vec![mock.base.clone()], true),
        (vec!["https://login.example.com".to_string()], false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut entry = vouched_entry(&origin, &endpoint);
        entry["authorizationServers"] = json!(issuers);
        install(dir.path(), 1, json!([entry]));
        let verdict = admit(dir.path(), &endpoint).await;
        assert_vouched(&verdict);
        let allowed = verdict.policy().unwrap().authorization_servers.clone();
        assert_eq!(allowed, issuers);

        let rig = kit::rig::Rig::warn();
        let browser = Arc::new(Browser::default());
        let secrets: Arc<dyn gatehouse_host::secrets::SecretStore> =
            Arc::new(gatehouse_host::secrets::MemoryStore::default());
        let context = gatehouse_host::auth::SignInContext {
            server: "remote".into(),
            url: mock.mcp_url(),
            options: Default::default(),
            secrets: secrets.clone(),
            gatekeeper: rig.gatekeeper.clone(),
            identity: None,
            verdict: "admitted".into(),
            audit_server: ID.into(),
            allowed_issuers: allowed,
            ui: Some(Arc::new(Approve::default())),
            opener: browser.clone(),
            timeout: Duration::from_secs(20),
            network_timeout: Duration::from_secs(2),
            tap: None,
        };
        let challenge = gatehouse_host::auth::probe_challenge(&mock.mcp_url()).await;
        let outcome = context
            .sign_in(
                challenge.as_deref(),
                gatehouse_host::auth::SignInReason::SignIn,
                &[],
            )
            .await;
        match (signs_in, outcome) {
            (true, Ok(_)) => {
                assert_eq!(browser.opened.lock().unwrap().len(), 1);
            }
            (false, Err(gatehouse_host::HostError::SignIn { code, .. })) => {
                assert_eq!(code, gatehouse_host::auth::SignInCode::IssuerNotAllowed);
                assert!(browser.opened.lock().unwrap().is_empty());
            }
            (expected, other) => panic!("signs in: {expected}, got {:?}", other.err()),
        }
    }
}
