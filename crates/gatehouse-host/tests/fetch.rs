//! Fetching attestations from small local HTTP servers that write canned responses, so each
//! test controls the exact bytes: lying or missing Content-Length, chunked bodies, redirects,
//! silence and dribbling.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_host::fetch::{
    AttestationSource, DEFAULT_FETCH_TIMEOUT, FetchError, MAX_ATTESTATION_BYTES, WELL_KNOWN_PATH,
    fetch_attestation,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const SHORT: Duration = Duration::from_millis(300);
const DOCUMENT: &[u8] = br#"{"v":"1.0","id":"urn:omcp:server:weather"}"#;

/// A request as the server saw it; header names lower-cased.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
}

impl Received {
    fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// What the server does with a request.
enum Reply {
    /// Write these bytes and close.
    Bytes(Vec<u8>),
    /// Write these bytes, then hold the connection open without a word more.
    ThenHang(Vec<u8>),
    /// Wait, then write these bytes and close.
    After(Duration, Vec<u8>),
    /// Write the head, then the body one byte at a time with `every` between bytes.
    Dribble {
        head: Vec<u8>,
        body: Vec<u8>,
        every: Duration,
    },
}

struct Server {
    addr: SocketAddr,
    requests: mpsc::UnboundedReceiver<Received>,
}

impl Server {
    /// Serves on 127.0.0.1, answering each request with `reply(request, own port)`.
    async fn start<F>(reply: F) -> Server
    where
        F: Fn(&Received, u16) -> Reply + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, requests) = mpsc::unbounded_channel();
        let reply = Arc::new(reply);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let tx = tx.clone();
                let reply = reply.clone();
                tokio::spawn(async move { serve(stream, tx, reply, addr.port()).await });
            }
        });
        Server { addr, requests }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.addr.port())
    }

    fn source(&self) -> AttestationSource {
        AttestationSource::for_endpoint(&self.endpoint()).unwrap()
    }

    fn received(&mut self) -> Vec<Received> {
        let mut all = Vec::new();
        while let Ok(request) = self.requests.try_recv() {
            all.push(request);
        }
        all
    }
}

async fn serve<F>(
    mut stream: TcpStream,
    tx: mpsc::UnboundedSender<Received>,
    reply: Arc<F>,
    port: u16,
) where
    F: Fn(&Received, u16) -> Reply,
{
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let mut lines = text.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let request = Received {
        method: request_line.next().unwrap_or_default().to_string(),
        path: request_line.next().unwrap_or_default().to_string(),
        headers: lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect(),
    };
    let answer = reply(&request, port);
    let _ = tx.send(request);
    match answer {
        Reply::Bytes(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
        }
        Reply::After(delay, bytes) => {
            tokio::time::sleep(delay).await;
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
        }
        Reply::ThenHang(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.flush().await;
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        Reply::Dribble { head, body, every } => {
            if stream.write_all(&head).await.is_err() {
                return;
            }
            for byte in body {
                tokio::time::sleep(every).await;
                if stream.write_all(&[byte]).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn ok_head(content_length: Option<usize>) -> Vec<u8> {
    let length = content_length
        .map(|n| format!("Content-Length: {n}\r\n"))
        .unwrap_or_default();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{length}Connection: close\r\n\r\n"
    )
    .into_bytes()
}

fn ok(body: &[u8]) -> Reply {
    let mut bytes = ok_head(Some(body.len()));
    bytes.extend_from_slice(body);
    Reply::Bytes(bytes)
}

/// No Content-Length: the body runs until the server closes.
fn ok_until_close(body: &[u8]) -> Reply {
    let mut bytes = ok_head(None);
    bytes.extend_from_slice(body);
    Reply::Bytes(bytes)
}

fn ok_chunked(body: &[u8], chunk: usize) -> Reply {
    let mut bytes = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    for piece in body.chunks(chunk) {
        bytes.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        bytes.extend_from_slice(piece);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"0\r\n\r\n");
    Reply::Bytes(bytes)
}

fn status(code: u16) -> Reply {
    Reply::Bytes(
        format!("HTTP/1.1 {code} Whatever\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .into_bytes(),
    )
}

fn redirect(code: u16, location: &str) -> Reply {
    Reply::Bytes(
        format!(
            "HTTP/1.1 {code} Redirect\r\nLocation: {location}\r\nSet-Cookie: session=secret; Path=/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .into_bytes(),
    )
}

async fn fetch(server: &Server) -> Result<Option<Vec<u8>>, FetchError> {
    fetch_attestation(&server.source(), DEFAULT_FETCH_TIMEOUT).await
}

fn json_of(len: usize) -> Vec<u8> {
    // Valid-looking JSON of an exact size: {"p":"xxx…"}
    assert!(len >= 8);
    let mut body = b"{\"p\":\"".to_vec();
    body.resize(len - 2, b'x');
    body.extend_from_slice(b"\"}");
    assert_eq!(body.len(), len);
    body
}

// ---------------------------------------------------------------------------------------------
// Status codes and the request itself

#[tokio::test]
async fn a_200_returns_the_bytes_of_an_anonymous_get_to_the_well_known_path() {
    let mut server = Server::start(|_, _| ok(DOCUMENT)).await;
    let body = fetch(&server).await.unwrap();
    assert_eq!(body.as_deref(), Some(DOCUMENT));
    let received = server.received();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.method, "GET");
    assert_eq!(request.path, WELL_KNOWN_PATH);
    assert_eq!(request.path, "/.well-known/mcp-attestation");
    assert_eq!(request.header("accept"), ["application/json"]);
    assert!(request.header("cookie").is_empty());
    assert!(request.header("authorization").is_empty());
}

#[tokio::test]
async fn a_404_or_410_means_no_attestation() {
    for code in [404, 410] {
        let server = Server::start(move |_, _| status(code)).await;
        assert_eq!(fetch(&server).await.unwrap(), None, "HTTP {code}");
    }
}

#[tokio::test]
async fn any_other_status_is_refused() {
    for code in [500, 403, 401, 204, 300, 304] {
        let server = Server::start(move |_, _| status(code)).await;
        let error = fetch(&server).await.unwrap_err();
        assert!(
            matches!(error, FetchError::Status { status } if status == code),
            "HTTP {code}: {error:?}"
        );
        assert_eq!(error.code(), "http_status");
        assert!(error.to_string().contains(&code.to_string()), "{error}");
    }
}

#[tokio::test]
async fn nothing_listening_is_a_network_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let source = AttestationSource::for_endpoint(&format!("http://127.0.0.1:{port}")).unwrap();
    let error = fetch_attestation(&source, DEFAULT_FETCH_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "network", "{error:?}");
}

#[tokio::test]
async fn localhost_is_fetched_from_loopback() {
    let mut server = Server::start(|_, _| ok(DOCUMENT)).await;
    let source =
        AttestationSource::for_endpoint(&format!("http://localhost:{}/mcp", server.addr.port()))
            .unwrap();
    let body = fetch_attestation(&source, DEFAULT_FETCH_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(body.as_deref(), Some(DOCUMENT));
    assert_eq!(server.received()[0].header("host").len(), 1);
}

// ---------------------------------------------------------------------------------------------
// The size cap

#[tokio::test]
async fn exactly_the_cap_is_accepted_however_it_is_framed() {
    let body = json_of(MAX_ATTESTATION_BYTES);
    for (framing, reply) in [
        ("content-length", ok as fn(&[u8]) -> Reply),
        ("until-close", ok_until_close),
        ("chunked", |b: &[u8]| ok_chunked(b, 4096)),
    ] {
        let copy = body.clone();
        let server = Server::start(move |_, _| reply(&copy)).await;
        let fetched = fetch(&server)
            .await
            .unwrap_or_else(|e| panic!("{framing}: {e}"));
        assert_eq!(fetched.as_deref(), Some(&body[..]), "{framing}");
    }
}

#[tokio::test]
async fn one_byte_over_the_cap_is_refused_however_it_is_framed() {
    let body = json_of(MAX_ATTESTATION_BYTES + 1);
    for (framing, reply) in [
        ("content-length", ok as fn(&[u8]) -> Reply),
        ("until-close", ok_until_close),
        ("chunked", |b: &[u8]| ok_chunked(b, 4096)),
        ("one chunk", |b: &[u8]| ok_chunked(b, b.len())),
    ] {
        let copy = body.clone();
        let server = Server::start(move |_, _| reply(&copy)).await;
        let error = fetch(&server).await.unwrap_err();
        assert!(
            matches!(error, FetchError::TooLarge { limit } if limit == MAX_ATTESTATION_BYTES),
            "{framing}: {error:?}"
        );
        assert_eq!(error.code(), "attestation_too_large");
    }
}

#[tokio::test]
async fn a_declared_oversize_length_fails_before_the_body_arrives() {
    // Claims 10 MB, sends a few bytes, then goes quiet: refused at once, not after the timeout.
    let server = Server::start(|_, _| {
        let mut bytes = ok_head(Some(10 * 1024 * 1024));
        bytes.extend_from_slice(b"{\"p\":");
        Reply::ThenHang(bytes)
    })
    .await;
    let error = fetch_attestation(&server.source(), Duration::from_secs(30))
        .await
        .unwrap_err();
    assert!(matches!(error, FetchError::TooLarge { .. }), "{error:?}");
}

#[tokio::test]
async fn reading_stops_as_soon_as_the_cap_is_exceeded() {
    // No length, cap + 1 bytes, then silence: a reader that waited for the end would time out.
    for chunked in [false, true] {
        let server = Server::start(move |_, _| {
            let body = json_of(MAX_ATTESTATION_BYTES + 1);
            let bytes = if chunked {
                let mut bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
                bytes.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
                bytes.extend_from_slice(&body);
                bytes.extend_from_slice(b"\r\n");
                bytes
            } else {
                let mut bytes = ok_head(None);
                bytes.extend_from_slice(&body);
                bytes
            };
            Reply::ThenHang(bytes)
        })
        .await;
        let error = fetch_attestation(&server.source(), Duration::from_secs(30))
            .await
            .unwrap_err();
        assert!(
            matches!(error, FetchError::TooLarge { .. }),
            "chunked={chunked}: {error:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Redirects

#[tokio::test]
async fn a_same_origin_redirect_is_followed_without_cookies() {
    for code in [301, 302, 303, 307, 308] {
        let mut server = Server::start(move |request, port| match request.path.as_str() {
            WELL_KNOWN_PATH => redirect(code, "/attestations/current.json"),
            "/attestations/current.json" => redirect(
                code,
                &format!("http://127.0.0.1:{port}/attestations/final.json"),
            ),
            "/attestations/final.json" => ok(DOCUMENT),
            _ => status(404),
        })
        .await;
        let body = fetch(&server).await.unwrap();
        assert_eq!(body.as_deref(), Some(DOCUMENT), "HTTP {code}");
        let received = server.received();
        let paths: Vec<_> = received.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                WELL_KNOWN_PATH,
                "/attestations/current.json",
                "/attestations/final.json"
            ]
        );
        for request in &received {
            assert!(request.header("cookie").is_empty(), "{request:?}");
            assert_eq!(request.header("accept"), ["application/json"]);
        }
    }
}

#[tokio::test]
async fn a_redirect_to_another_port_is_another_origin() {
    let mut other = Server::start(|_, _| ok(DOCUMENT)).await;
    let other_port = other.addr.port();
    let server = Server::start(move |_, _| {
        redirect(
            302,
            &format!("http://127.0.0.1:{other_port}{WELL_KNOWN_PATH}"),
        )
    })
    .await;
    let error = fetch(&server).await.unwrap_err();
    match &error {
        FetchError::CrossOriginRedirect { from, to } => {
            assert_eq!(from, &format!("http://127.0.0.1:{}", server.addr.port()));
            assert_eq!(to, &format!("http://127.0.0.1:{other_port}"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(error.code(), "cross_origin_redirect");
    let message = error.to_string();
    assert!(
        message.contains(&format!("127.0.0.1:{other_port}")),
        "{message}"
    );
    assert!(
        other.received().is_empty(),
        "the other origin was contacted"
    );
}

#[tokio::test]
async fn localhost_and_127_0_0_1_are_different_origins() {
    let mut server = Server::start(|request, port| match request.path.as_str() {
        WELL_KNOWN_PATH => redirect(307, &format!("http://localhost:{port}/moved")),
        _ => ok(DOCUMENT),
    })
    .await;
    let error = fetch(&server).await.unwrap_err();
    match &error {
        FetchError::CrossOriginRedirect { to, .. } => {
            assert_eq!(to, &format!("http://localhost:{}", server.addr.port()))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.received().len(), 1, "the redirect was followed");
}

#[tokio::test]
async fn a_redirect_to_another_scheme_on_the_same_host_and_port_is_another_origin() {
    let server = Server::start(|_, port| {
        redirect(308, &format!("https://127.0.0.1:{port}{WELL_KNOWN_PATH}"))
    })
    .await;
    let error = fetch(&server).await.unwrap_err();
    assert!(
        matches!(&error, FetchError::CrossOriginRedirect { to, .. } if to.starts_with("https://")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_same_origin_redirect_carrying_credentials_is_refused() {
    let mut server = Server::start(|request, port| match request.path.as_str() {
        WELL_KNOWN_PATH => redirect(302, &format!("http://user:hunter2@127.0.0.1:{port}/moved")),
        _ => ok(DOCUMENT),
    })
    .await;
    let error = fetch(&server).await.unwrap_err();
    assert_eq!(error.code(), "invalid_url", "{error:?}");
    assert!(!error.to_string().contains("hunter2"), "{error}");
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_redirect_without_location_is_a_status_error() {
    let server = Server::start(|_, _| status(302)).await;
    let error = fetch(&server).await.unwrap_err();
    assert!(
        matches!(error, FetchError::Status { status: 302 }),
        "{error:?}"
    );
}

/// A server whose well-known path starts a chain of `hops` same-origin redirects.
async fn chain(hops: usize) -> Server {
    Server::start(move |request, _| {
        let step = match request.path.as_str() {
            WELL_KNOWN_PATH => 0,
            path => path.trim_start_matches("/hop/").parse().unwrap(),
        };
        if step < hops {
            redirect(302, &format!("/hop/{}", step + 1))
        } else {
            ok(DOCUMENT)
        }
    })
    .await
}

#[tokio::test]
async fn three_same_origin_hops_are_followed() {
    let mut server = chain(3).await;
    assert_eq!(fetch(&server).await.unwrap().as_deref(), Some(DOCUMENT));
    assert_eq!(server.received().len(), 4);
}

#[tokio::test]
async fn four_same_origin_hops_are_refused() {
    let mut server = chain(4).await;
    let error = fetch(&server).await.unwrap_err();
    assert!(
        matches!(error, FetchError::TooManyRedirects { limit: 3, .. }),
        "{error:?}"
    );
    assert_eq!(error.code(), "too_many_redirects");
    // The fourth redirect target is never requested.
    assert_eq!(server.received().len(), 4);
}

// ---------------------------------------------------------------------------------------------
// The timeout

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = Server::start(|_, _| Reply::ThenHang(Vec::new())).await;
    let error = fetch_attestation(&server.source(), SHORT)
        .await
        .unwrap_err();
    assert!(
        matches!(error, FetchError::Timeout { after } if after == SHORT),
        "{error:?}"
    );
    assert_eq!(error.code(), "fetch_timeout");
}

#[tokio::test]
async fn a_body_dribbled_slower_than_the_timeout_times_out() {
    let body = DOCUMENT.to_vec();
    let server = Server::start(move |_, _| Reply::Dribble {
        head: ok_head(Some(body.len())),
        body: body.clone(),
        every: Duration::from_millis(100),
    })
    .await;
    let error = fetch_attestation(&server.source(), SHORT)
        .await
        .unwrap_err();
    assert!(matches!(error, FetchError::Timeout { .. }), "{error:?}");
}

#[tokio::test]
async fn a_dribble_that_finishes_in_time_is_accepted() {
    let server = Server::start(|_, _| Reply::Dribble {
        head: ok_head(Some(4)),
        body: b"{}  ".to_vec(),
        every: Duration::from_millis(10),
    })
    .await;
    let body = fetch_attestation(&server.source(), DEFAULT_FETCH_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(body.as_deref(), Some(&b"{}  "[..]));
}

#[tokio::test]
async fn the_timeout_covers_the_whole_redirect_chain() {
    // Each hop answers well within the timeout; the three hops together do not.
    let server = Server::start(|request, _| {
        let reply = match request.path.as_str() {
            WELL_KNOWN_PATH => redirect(302, "/hop/1"),
            "/hop/1" => redirect(302, "/hop/2"),
            _ => ok(DOCUMENT),
        };
        match reply {
            Reply::Bytes(bytes) => Reply::After(Duration::from_millis(150), bytes),
            other => other,
        }
    })
    .await;
    let error = fetch_attestation(&server.source(), SHORT)
        .await
        .unwrap_err();
    assert!(matches!(error, FetchError::Timeout { .. }), "{error:?}");
}

// ---------------------------------------------------------------------------------------------
// for_endpoint

fn refused(endpoint: &str) -> FetchError {
    AttestationSource::for_endpoint(endpoint)
        .map(|s| panic!("{endpoint} was accepted: {s:?}"))
        .unwrap_err()
}

#[test]
fn https_is_accepted() {
    let source = AttestationSource::for_endpoint("https://tools.example/mcp").unwrap();
    assert_eq!(source.origin, "https://tools.example");
    assert_eq!(
        source.url.as_str(),
        "https://tools.example/.well-known/mcp-attestation"
    );
}

#[test]
fn http_is_accepted_for_loopback() {
    let source = AttestationSource::for_endpoint("http://127.0.0.1:8080/mcp").unwrap();
    assert_eq!(source.origin, "http://127.0.0.1:8080");
    assert_eq!(
        source.url.as_str(),
        "http://127.0.0.1:8080/.well-known/mcp-attestation"
    );
    for (endpoint, origin) in [
        ("http://[::1]/mcp", "http://[::1]"),
        ("http://[::1]:9000/mcp", "http://[::1]:9000"),
        ("http://localhost", "http://localhost"),
        ("http://LOCALHOST:3000/mcp", "http://localhost:3000"),
        ("http://127.1.2.3/mcp", "http://127.1.2.3"),
        ("http://[::ffff:127.0.0.1]/mcp", "http://[::ffff:7f00:1]"),
    ] {
        let source =
            AttestationSource::for_endpoint(endpoint).unwrap_or_else(|e| panic!("{endpoint}: {e}"));
        assert_eq!(source.origin, origin, "{endpoint}");
    }
}

#[test]
fn http_is_refused_for_anything_but_loopback() {
    for endpoint in [
        "http://example.com/mcp",
        "http://10.0.0.1/mcp",
        "http://192.168.1.1:8080",
        "http://[::ffff:10.0.0.1]/mcp",
        "http://[fe80::1]/mcp",
        "http://0.0.0.0/mcp",
        "http://localhost.example.com/mcp",
        "http://128.0.0.1/mcp",
    ] {
        let error = refused(endpoint);
        assert!(
            matches!(error, FetchError::InsecureOrigin { .. }),
            "{endpoint}: {error:?}"
        );
        assert_eq!(error.code(), "insecure_origin");
    }
    let message = refused("http://example.com/mcp").to_string();
    assert!(
        message.contains("http://example.com/.well-known/mcp-attestation"),
        "{message}"
    );
    assert!(message.contains("serve it over https"), "{message}");
}

#[test]
fn other_schemes_and_non_urls_are_refused() {
    for endpoint in [
        "ftp://tools.example/mcp",
        "file:///mcp.json",
        "ws://127.0.0.1/mcp",
        "data:application/json,{}",
        "tools.example/mcp",
        "",
        "https://",
    ] {
        let error = refused(endpoint);
        assert!(
            matches!(error, FetchError::InvalidUrl { .. }),
            "{endpoint:?}: {error:?}"
        );
        assert_eq!(error.code(), "invalid_url");
    }
}

#[test]
fn userinfo_is_refused() {
    for endpoint in [
        "https://user:hunter2@tools.example/mcp",
        "https://user@tools.example/mcp",
        "http://user:hunter2@127.0.0.1/mcp",
        "https://:hunter2@tools.example/mcp",
    ] {
        let error = refused(endpoint);
        assert!(
            matches!(error, FetchError::InvalidUrl { .. }),
            "{endpoint}: {error:?}"
        );
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }
}

#[test]
fn default_ports_and_case_are_normalized() {
    let source = AttestationSource::for_endpoint("https://Example.COM:443/mcp").unwrap();
    assert_eq!(source.origin, "https://example.com");
    assert_eq!(
        source.url.as_str(),
        "https://example.com/.well-known/mcp-attestation"
    );
    let source = AttestationSource::for_endpoint("http://127.0.0.1:80/mcp").unwrap();
    assert_eq!(source.origin, "http://127.0.0.1");
    let source = AttestationSource::for_endpoint("https://example.com:8443/mcp").unwrap();
    assert_eq!(source.origin, "https://example.com:8443");
}

#[test]
fn the_endpoint_path_query_and_fragment_are_ignored() {
    let a = AttestationSource::for_endpoint("https://tools.example/a/b/mcp?x=1#frag").unwrap();
    let b = AttestationSource::for_endpoint("https://tools.example").unwrap();
    assert_eq!(a, b);
    assert_eq!(
        a.url.as_str(),
        "https://tools.example/.well-known/mcp-attestation"
    );
}
