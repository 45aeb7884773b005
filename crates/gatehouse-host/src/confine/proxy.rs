//! The per-server egress proxy: the only way out of a confined server's network namespace.
//!
//! The sandbox has loopback only; its in-sandbox forwarder pipes each TCP connection to this
//! proxy's unix socket (bound into the sandbox). Here, outside the server's control, each
//! connection's request head is parsed (`gatehouse_confine::parse_head`), checked against the
//! server's grants, and only then connected upstream. Refusals answer the client with a status that
//! says how to grant the host and are reported to a sink through a flood bound, so a server that
//! hammers a refused host cannot flood the audit log.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use gatehouse_confine::{
    CONNECT_ESTABLISHED, Grants, MAX_HEAD_BYTES, ProxyRequest, REFUSAL_WINDOW_MS,
    REFUSALS_RECORDED_PER_WINDOW, RefusalNote, RefusalWindow, head_end, parse_head,
    refusal_response,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::timeout;

use crate::tap::Clock;

/// How long a client has to send its whole request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long resolving and connecting upstream may take before the client is told 502.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long writing a refusal may take (a client that never reads must not hold a slot).
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long, and how many bytes, a refused client's unread input is drained before closing.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 64 * 1024;
/// Connections open at once through one server's proxy; more are answered 503.
pub const MAX_CONNECTIONS: usize = 64;
/// `sockaddr_un.sun_path` holds 108 bytes including the terminating NUL.
const MAX_SOCKET_PATH_BYTES: usize = 107;

use super::view::EgressRefusal;

/// One refusal to record (already passed through the flood bound: suppressed ones never reach the
/// sink, the next recorded one says how many were suppressed before it; the proxy's drop reports
/// the rest with host "" and port 0 only if some remain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub host: String,
    pub port: u16,
    pub reason: EgressRefusal,
    pub suppressed_before: u32,
}

pub type RefusalSink = Arc<dyn Fn(Refusal) + Send + Sync>;

/// A running proxy for one server. Dropping it stops accepting, ends every connection through it
/// and removes its socket file.
pub struct EgressProxy {
    socket_path: PathBuf,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

struct Shared {
    server: String,
    grants: Grants,
    clock: Clock,
    sink: RefusalSink,
    flood: Mutex<Flood>,
    allowed: AtomicU64,
    slots: Arc<Semaphore>,
    /// The 503 answer for a connection over `MAX_CONNECTIONS`, built once.
    overloaded: Vec<u8>,
}

struct Flood {
    window: RefusalWindow,
    /// The reason of the newest suppressed refusal, for the final record at drop.
    last_suppressed: Option<EgressRefusal>,
}

impl EgressProxy {
    /// Binds a unix socket `<socket_dir>/<random hex 12>.sock` (socket_dir created 0700 if
    /// missing; a socket_dir not owned by us or writable by group or others is refused) and accepts
    /// connections on a tokio task. Each connection: read the head (at most `MAX_HEAD_BYTES`,
    /// 10 s), parse it, allow only what `grants.allows(host, port)` says, connect upstream (10 s),
    /// answer `CONNECT_ESTABLISHED` for CONNECT or forward the rewritten head (plus any bytes read
    /// past it) for plain HTTP, then copy both ways until both sides are done. At most
    /// `MAX_CONNECTIONS` at once (more are answered 503 and closed). Refusals are answered
    /// (403 not granted, 400 malformed, 502 unreachable) and reported to `sink` through a
    /// `RefusalWindow` timed by `clock`.
    pub async fn start(
        server: &str,
        grants: Grants,
        socket_dir: &Path,
        clock: Clock,
        sink: RefusalSink,
    ) -> io::Result<EgressProxy> {
        prepare_socket_dir(socket_dir)?;
        let mut random = [0u8; 6];
        getrandom::fill(&mut random).map_err(|e| {
            io::Error::other(format!(
                "cannot name the egress proxy socket for server {server}: the OS random number \
                 generator failed ({e})"
            ))
        })?;
        let socket_path = socket_dir.join(format!("{}.sock", hex::encode(random)));
        let length = socket_path.as_os_str().len();
        if length > MAX_SOCKET_PATH_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the egress proxy socket path {} is {length} bytes, over the \
                     {MAX_SOCKET_PATH_BYTES} a unix socket allows; use a shorter runtime \
                     directory (XDG_RUNTIME_DIR) or data directory",
                    socket_path.display()
                ),
            ));
        }
        let listener = UnixListener::bind(&socket_path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot bind the egress proxy socket {} for server {server}: {e}",
                    socket_path.display()
                ),
            )
        })?;
        // The directory is already 0700; the socket says the same on its own in case it is
        // ever moved or bound elsewhere.
        if let Err(e) =
            std::fs::set_permissions(&socket_path, std::fs::Permissions::from_mode(0o600))
        {
            let _ = std::fs::remove_file(&socket_path);
            return Err(e);
        }
        let shared = Arc::new(Shared {
            server: server.to_owned(),
            grants,
            clock,
            sink,
            flood: Mutex::new(Flood {
                window: RefusalWindow::new(REFUSALS_RECORDED_PER_WINDOW, REFUSAL_WINDOW_MS),
                last_suppressed: None,
            }),
            allowed: AtomicU64::new(0),
            slots: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
            overloaded: overloaded_response(server),
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(EgressProxy {
            socket_path,
            shared,
            accept,
        })
    }

    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// Refusals so far (all, recorded or not).
    pub fn refused(&self) -> u64 {
        self.shared.flood().window.total()
    }

    /// Connections allowed so far (granted and connected upstream).
    // The host shows only refusals so far; this is the other half of the count, for tests and
    // any front end that wants it.
    #[allow(dead_code)]
    pub fn allowed(&self) -> u64 {
        self.shared.allowed.load(Ordering::Relaxed)
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        // Aborting the accept task drops its JoinSet, which aborts every connection task.
        self.accept.abort();
        let _ = std::fs::remove_file(&self.socket_path);
        let (suppressed, reason) = {
            let mut flood = self.shared.flood();
            (flood.window.take_suppressed(), flood.last_suppressed)
        };
        if suppressed > 0 {
            (self.shared.sink)(Refusal {
                host: String::new(),
                port: 0,
                reason: reason.unwrap_or(EgressRefusal::NotGranted),
                suppressed_before: suppressed,
            });
        }
    }
}

impl Shared {
    fn flood(&self) -> MutexGuard<'_, Flood> {
        // A panicking sink cannot leave the window half-updated: every update is one call.
        self.flood
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn now_ms(&self) -> u64 {
        let millis = (self.clock)().unix_timestamp_nanos() / 1_000_000;
        u64::try_from(millis).unwrap_or(0)
    }

    /// Counts a refusal and, unless the flood bound suppresses it, reports it to the sink.
    fn note_refusal(&self, host: &str, port: u16, reason: EgressRefusal) {
        let now = self.now_ms();
        let note = {
            let mut flood = self.flood();
            let note = flood.window.note(now);
            if note == RefusalNote::Suppress {
                flood.last_suppressed = Some(reason);
            }
            note
        };
        // The sink runs outside the lock: it may write the audit log.
        if let RefusalNote::Record { suppressed_before } = note {
            (self.sink)(Refusal {
                host: host.to_owned(),
                port,
                reason,
                suppressed_before,
            });
        }
    }
}

/// Creates `dir` 0700 if missing, and refuses one that another user owns or that group or others
/// can write (they could replace the socket with their own).
fn prepare_socket_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot create the egress proxy socket directory {}: {e}",
                    dir.display()
                ),
            )
        })?;
    let meta = std::fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the egress proxy socket directory {} is not a directory; remove it",
                dir.display()
            ),
        ));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "the egress proxy socket directory {} belongs to uid {}, not to this user (uid \
                 {me}); remove it so it is created afresh",
                dir.display(),
                meta.uid()
            ),
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "the egress proxy socket directory {} is writable by group or others (mode \
                 {mode:o}); run `chmod 700` on it or remove it",
                dir.display()
            ),
        ));
    }
    Ok(())
}

fn overloaded_response(server: &str) -> Vec<u8> {
    let body = format!(
        "The egress proxy for server {server} already has {MAX_CONNECTIONS} connections open; \
         try again when one closes.\n"
    );
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn accept_loop(listener: UnixListener, shared: Arc<Shared>) {
    // Owned here so that aborting this task (the proxy's drop) aborts every connection too.
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors and the like: back off instead of spinning.
                tracing::warn!(server = %shared.server, error = %e, "egress proxy accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        match Arc::clone(&shared.slots).try_acquire_owned() {
            Ok(slot) => {
                let shared = Arc::clone(&shared);
                connections.spawn(async move {
                    serve(&shared, stream).await;
                    drop(slot);
                });
            }
            Err(_) => {
                // A fresh socket's send buffer is empty, so this small write does not block; a
                // task per overflow connection would defeat the bound.
                let _ = stream.try_write(&shared.overloaded);
                tracing::debug!(server = %shared.server, "egress proxy full; connection refused");
            }
        }
    }
}

/// How reading a request head ended.
enum HeadRead {
    /// The head ends at this index (just past the blank line).
    Complete(usize),
    /// The client closed before the head ended.
    Closed,
    /// `MAX_HEAD_BYTES` read without the head ending.
    Full,
}

async fn read_head(client: &mut UnixStream, buf: &mut Vec<u8>) -> io::Result<HeadRead> {
    let mut chunk = [0u8; 2048];
    loop {
        let room = MAX_HEAD_BYTES.saturating_sub(buf.len()).min(chunk.len());
        if room == 0 {
            return Ok(HeadRead::Full);
        }
        let n = client.read(&mut chunk[..room]).await?;
        if n == 0 {
            return Ok(HeadRead::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = head_end(buf) {
            return Ok(HeadRead::Complete(end));
        }
    }
}

async fn serve(shared: &Shared, mut client: UnixStream) {
    let mut buf = Vec::with_capacity(1024);
    let end = match timeout(HEAD_TIMEOUT, read_head(&mut client, &mut buf)).await {
        Ok(Ok(HeadRead::Complete(end))) => end,
        // Connected and said nothing: not a request, so nothing to refuse or record.
        Ok(Ok(HeadRead::Closed)) | Err(_) if buf.is_empty() => return,
        // The client's socket failed: there is no one to answer.
        Ok(Err(_)) => return,
        Ok(Ok(HeadRead::Closed | HeadRead::Full)) | Err(_) => {
            refuse(shared, &mut client, None, EgressRefusal::MalformedRequest).await;
            return;
        }
    };
    let request = match parse_head(&buf[..end]) {
        Ok(request) => request,
        Err(e) => {
            tracing::debug!(server = %shared.server, code = e.code(), "egress proxy: malformed head");
            refuse(shared, &mut client, None, EgressRefusal::MalformedRequest).await;
            return;
        }
    };
    let (host, port) = (request.host().to_owned(), request.port());
    if !shared.grants.allows(&host, port) {
        refuse(
            shared,
            &mut client,
            Some((&host, port)),
            EgressRefusal::NotGranted,
        )
        .await;
        return;
    }
    let mut upstream = match timeout(CONNECT_TIMEOUT, connect_upstream(&host, port)).await {
        Ok(Ok(upstream)) => upstream,
        Ok(Err(e)) => {
            tracing::debug!(server = %shared.server, %host, port, error = %e, "egress proxy: unreachable");
            refuse(
                shared,
                &mut client,
                Some((&host, port)),
                EgressRefusal::Unreachable,
            )
            .await;
            return;
        }
        Err(_) => {
            tracing::debug!(server = %shared.server, %host, port, "egress proxy: connect timed out");
            refuse(
                shared,
                &mut client,
                Some((&host, port)),
                EgressRefusal::Unreachable,
            )
            .await;
            return;
        }
    };
    shared.allowed.fetch_add(1, Ordering::Relaxed);
    let opened = match &request {
        ProxyRequest::Connect { .. } => client.write_all(CONNECT_ESTABLISHED).await,
        ProxyRequest::Http { head, .. } => upstream.write_all(head).await,
    };
    if opened.is_err() {
        return;
    }
    // Bytes the client sent past its head (a request body, an eager TLS hello) go upstream first.
    if end < buf.len() && upstream.write_all(&buf[end..]).await.is_err() {
        return;
    }
    drop(buf);
    // Ends when both directions are done or either side fails; errors are the peers' business.
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// Counts and reports the refusal, then answers the client and closes. Counting first means a
/// client that has read the answer can rely on `refused()` including it.
async fn refuse(
    shared: &Shared,
    client: &mut UnixStream,
    target: Option<(&str, u16)>,
    reason: EgressRefusal,
) {
    let (host, port) = target.unwrap_or(("", 0));
    shared.note_refusal(host, port, reason);
    let response = refusal_response(&shared.server, target, reason.status());
    let _ = timeout(REPLY_TIMEOUT, async {
        client.write_all(&response).await?;
        client.shutdown().await
    })
    .await;
    // Closing with unread input (the rest of an oversized head, a body) resets the connection,
    // and the client would lose the answer; read on briefly until it closes its side.
    let _ = timeout(LINGER, async {
        let mut discard = [0u8; 2048];
        let mut left = LINGER_BYTES;
        while left > 0 {
            match client.read(&mut discard).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}

/// Resolves `host` and connects to the first address that answers.
async fn connect_upstream(host: &str, port: u16) -> io::Result<TcpStream> {
    // An IPv6 literal may come bracketed; lookup_host parses it as an address only without them.
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let mut last = None;
    for address in tokio::net::lookup_host((host, port)).await? {
        match TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{host} resolves to no address"),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_confine::{HostGrant, Network};
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicI64, AtomicUsize};
    use tokio::net::TcpListener;

    fn fixed_clock() -> Clock {
        Arc::new(|| time::macros::datetime!(2026-11-21 10:00:00 UTC))
    }

    type Records = Arc<Mutex<Vec<Refusal>>>;

    fn collecting_sink() -> (RefusalSink, Records) {
        let records: Records = Arc::default();
        let kept = Arc::clone(&records);
        let sink: RefusalSink =
            Arc::new(move |refusal| kept.lock().unwrap_or_else(|p| p.into_inner()).push(refusal));
        (sink, records)
    }

    fn taken(records: &Records) -> Vec<Refusal> {
        records.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn grants_for(hosts: &[&str]) -> Grants {
        Grants {
            network: Network::Hosts(
                hosts
                    .iter()
                    .map(|h| HostGrant::parse(h).expect("a valid host grant"))
                    .collect(),
            ),
            ..Grants::default()
        }
    }

    /// A TCP echo server on loopback; counts the connections it accepted.
    async fn echo_server() -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind echo");
        let address = listener.local_addr().expect("echo address");
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepted);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let (mut read, mut write) = stream.split();
                    let _ = tokio::io::copy(&mut read, &mut write).await;
                });
            }
        });
        (address, accepted)
    }

    /// A loopback port nothing listens on.
    async fn closed_port() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        listener.local_addr().expect("address").port()
    }

    struct Started {
        proxy: EgressProxy,
        records: Records,
        _dir: tempfile::TempDir,
    }

    async fn start_with(grants: Grants, clock: Clock) -> Started {
        let dir = tempfile::tempdir().expect("temp dir");
        let (sink, records) = collecting_sink();
        let proxy = EgressProxy::start("hostile", grants, &dir.path().join("px"), clock, sink)
            .await
            .expect("the proxy starts");
        Started {
            proxy,
            records,
            _dir: dir,
        }
    }

    async fn start(grants: Grants) -> Started {
        start_with(grants, fixed_clock()).await
    }

    async fn client(proxy: &EgressProxy) -> UnixStream {
        UnixStream::connect(proxy.socket_path())
            .await
            .expect("connect to the proxy")
    }

    /// Sends `request` and reads the whole answer (the proxy closes after a refusal).
    async fn exchange(proxy: &EgressProxy, request: &[u8]) -> String {
        let mut stream = client(proxy).await;
        stream.write_all(request).await.expect("send");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("read");
        String::from_utf8_lossy(&answer).into_owned()
    }

    fn connect_head(host: &str, port: u16) -> Vec<u8> {
        format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n").into_bytes()
    }

    /// Opens a CONNECT tunnel and returns the stream once the proxy said 200, or the answer.
    async fn tunnel(proxy: &EgressProxy, host: &str, port: u16) -> Result<UnixStream, String> {
        let mut stream = client(proxy).await;
        stream
            .write_all(&connect_head(host, port))
            .await
            .expect("send");
        let mut answer = vec![0u8; CONNECT_ESTABLISHED.len()];
        let mut got = 0;
        while got < answer.len() {
            let n = stream.read(&mut answer[got..]).await.expect("read");
            if n == 0 {
                break;
            }
            got += n;
        }
        answer.truncate(got);
        if answer == CONNECT_ESTABLISHED {
            Ok(stream)
        } else {
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest).await;
            answer.extend(rest);
            Err(String::from_utf8_lossy(&answer).into_owned())
        }
    }

    async fn echo_through(stream: &mut UnixStream, text: &[u8]) -> Vec<u8> {
        stream.write_all(text).await.expect("send");
        let mut back = vec![0u8; text.len()];
        stream.read_exact(&mut back).await.expect("echo");
        back
    }

    #[tokio::test]
    async fn granted_connect_is_established_and_carries_bytes_both_ways() {
        let (echo, accepted) = echo_server().await;
        let started = start(grants_for(&[&format!("127.0.0.1:{}", echo.port())])).await;
        let mut stream = tunnel(&started.proxy, "127.0.0.1", echo.port())
            .await
            .expect("granted");
        assert_eq!(echo_through(&mut stream, b"ping").await, b"ping");
        assert_eq!(echo_through(&mut stream, b"second").await, b"second");
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        assert_eq!(started.proxy.allowed(), 1);
        assert_eq!(started.proxy.refused(), 0);
        assert!(taken(&started.records).is_empty());
    }

    #[tokio::test]
    async fn bytes_sent_past_a_connect_head_reach_the_upstream() {
        let (echo, _) = echo_server().await;
        let started = start(grants_for(&[&format!("127.0.0.1:{}", echo.port())])).await;
        let mut stream = client(&started.proxy).await;
        let mut request = connect_head("127.0.0.1", echo.port());
        request.extend_from_slice(b"eager");
        stream.write_all(&request).await.expect("send");
        let mut answer = vec![0u8; CONNECT_ESTABLISHED.len() + 5];
        stream.read_exact(&mut answer).await.expect("read");
        assert_eq!(&answer[..CONNECT_ESTABLISHED.len()], CONNECT_ESTABLISHED);
        assert_eq!(&answer[CONNECT_ESTABLISHED.len()..], b"eager");
    }

    #[tokio::test]
    async fn connect_to_an_ungranted_port_is_refused_403_and_recorded() {
        let (granted, _) = echo_server().await;
        let (other, other_accepted) = echo_server().await;
        let started = start(grants_for(&[&format!("127.0.0.1:{}", granted.port())])).await;
        let answer = exchange(&started.proxy, &connect_head("127.0.0.1", other.port())).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert_eq!(
            taken(&started.records),
            vec![Refusal {
                host: "127.0.0.1".into(),
                port: other.port(),
                reason: EgressRefusal::NotGranted,
                suppressed_before: 0,
            }]
        );
        assert_eq!(other_accepted.load(Ordering::SeqCst), 0);
        assert_eq!(started.proxy.refused(), 1);
        assert_eq!(started.proxy.allowed(), 0);
        // Nothing was suppressed, so dropping the proxy adds no final record.
        let Started { proxy, records, .. } = started;
        drop(proxy);
        assert_eq!(taken(&records).len(), 1);
    }

    #[tokio::test]
    async fn look_alike_hosts_are_not_granted() {
        let (echo, accepted) = echo_server().await;
        let started = start(grants_for(&[&format!("127.0.0.1:{}", echo.port())])).await;
        for host in ["localhost", "127.0.0.2", "127.0.0.1.example", "[::1]"] {
            let answer = exchange(&started.proxy, &connect_head(host, echo.port())).await;
            assert!(answer.starts_with("HTTP/1.1 403"), "{host}: {answer}");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 0);
        assert_eq!(started.proxy.refused(), 4);
    }

    #[tokio::test]
    async fn malformed_heads_are_refused_400_and_recorded() {
        let (echo, accepted) = echo_server().await;
        let started = start(grants_for(&[&format!("127.0.0.1:{}", echo.port())])).await;
        let port = echo.port();
        let oversized = vec![b'a'; MAX_HEAD_BYTES + 100];
        let cases: Vec<Vec<u8>> = vec![
            b"\x00\x01garbage\r\n\r\n".to_vec(),
            b"GET /relative HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_vec(),
            format!("GET https://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n").into_bytes(),
            oversized,
        ];
        for case in &cases {
            let answer = exchange(&started.proxy, case).await;
            assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        }
        // A head cut off by the client closing its side.
        let mut stream = client(&started.proxy).await;
        stream
            .write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n").as_bytes())
            .await
            .expect("send");
        stream.shutdown().await.expect("shutdown");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.expect("read");
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");

        let records = taken(&started.records);
        assert_eq!(records.len(), cases.len() + 1);
        for record in records {
            assert_eq!(
                record,
                Refusal {
                    host: String::new(),
                    port: 0,
                    reason: EgressRefusal::MalformedRequest,
                    suppressed_before: 0,
                }
            );
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_connection_closed_without_a_word_is_not_a_refusal() {
        let started = start(Grants::default()).await;
        let mut stream = client(&started.proxy).await;
        stream.shutdown().await.expect("shutdown");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("read");
        assert!(answer.is_empty());
        assert_eq!(started.proxy.refused(), 0);
        // The same proxy does count a request it refuses.
        let answer = exchange(&started.proxy, &connect_head("127.0.0.1", 9)).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert_eq!(started.proxy.refused(), 1);
    }

    /// An upstream that hands over what it received (head and `Content-Length` body) and answers.
    async fn recording_upstream() -> (SocketAddr, tokio::sync::oneshot::Receiver<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let (send, receive) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let mut received = Vec::new();
            let mut chunk = [0u8; 1024];
            loop {
                let Ok(n) = stream.read(&mut chunk).await else {
                    return;
                };
                if n == 0 {
                    break;
                }
                received.extend_from_slice(&chunk[..n]);
                if let Some(end) = head_end(&received) {
                    let head = String::from_utf8_lossy(&received[..end]).to_ascii_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if received.len() >= end + length {
                        break;
                    }
                }
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .await;
            let _ = stream.shutdown().await;
            let _ = send.send(received);
        });
        (address, receive)
    }

    #[tokio::test]
    async fn absolute_form_http_is_rewritten_to_origin_form_for_the_upstream() {
        let (upstream, received) = recording_upstream().await;
        let port = upstream.port();
        let started = start(grants_for(&[&format!("127.0.0.1:{port}")])).await;
        let request = format!(
            "POST http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Proxy-Authorization: Basic c2VjcmV0\r\nContent-Length: 4\r\n\r\nbody"
        );
        let answer = exchange(&started.proxy, request.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.ends_with("ok"), "{answer}");
        let received =
            String::from_utf8(received.await.expect("upstream saw the request")).expect("utf-8");
        assert!(received.starts_with("POST /x HTTP/1.1\r\n"), "{received}");
        assert!(
            !received
                .to_ascii_lowercase()
                .contains("proxy-authorization"),
            "{received}"
        );
        assert!(!received.contains("c2VjcmV0"), "{received}");
        assert!(received.ends_with("\r\n\r\nbody"), "{received}");
        assert_eq!(started.proxy.allowed(), 1);
    }

    #[tokio::test]
    async fn absolute_form_get_reaches_the_upstream_as_get_x() {
        let (upstream, received) = recording_upstream().await;
        let port = upstream.port();
        let started = start(grants_for(&[&format!("127.0.0.1:{port}")])).await;
        let request = format!(
            "GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Proxy-Authorization: Basic c2VjcmV0\r\n\r\n"
        );
        let answer = exchange(&started.proxy, request.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        let received =
            String::from_utf8(received.await.expect("upstream saw the request")).expect("utf-8");
        assert!(received.starts_with("GET /x HTTP/1.1\r\n"), "{received}");
        assert!(
            !received
                .to_ascii_lowercase()
                .contains("proxy-authorization"),
            "{received}"
        );
    }

    #[tokio::test]
    async fn absolute_form_http_to_an_ungranted_host_never_reaches_it() {
        let (upstream, accepted) = echo_server().await;
        let started = start(grants_for(&["127.0.0.1:1"])).await;
        let request = format!(
            "GET http://127.0.0.1:{}/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            upstream.port()
        );
        let answer = exchange(&started.proxy, request.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert_eq!(
            taken(&started.records),
            vec![Refusal {
                host: "127.0.0.1".into(),
                port: upstream.port(),
                reason: EgressRefusal::NotGranted,
                suppressed_before: 0,
            }]
        );
        assert_eq!(accepted.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_granted_host_that_cannot_be_reached_is_502_unreachable() {
        let closed = closed_port().await;
        let started = start(grants_for(&[
            "nonexistent.invalid:80",
            &format!("127.0.0.1:{closed}"),
        ]))
        .await;
        let answer = exchange(&started.proxy, &connect_head("nonexistent.invalid", 80)).await;
        assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
        let answer = exchange(&started.proxy, &connect_head("127.0.0.1", closed)).await;
        assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
        assert_eq!(
            taken(&started.records),
            vec![
                Refusal {
                    host: "nonexistent.invalid".into(),
                    port: 80,
                    reason: EgressRefusal::Unreachable,
                    suppressed_before: 0,
                },
                Refusal {
                    host: "127.0.0.1".into(),
                    port: closed,
                    reason: EgressRefusal::Unreachable,
                    suppressed_before: 0,
                },
            ]
        );
        assert_eq!(started.proxy.allowed(), 0);
        assert_eq!(started.proxy.refused(), 2);
    }

    #[tokio::test]
    async fn a_flood_of_refusals_is_counted_but_recorded_only_up_to_the_window() {
        let started = start(Grants::default()).await;
        for _ in 0..100 {
            let answer = exchange(&started.proxy, &connect_head("127.0.0.1", 22)).await;
            assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        }
        assert_eq!(started.proxy.refused(), 100);
        let records = taken(&started.records);
        assert_eq!(records.len(), REFUSALS_RECORDED_PER_WINDOW as usize);
        assert!(records.iter().all(|r| r.suppressed_before == 0));
        // The drop reports the suppressed rest in one final record.
        let Started { proxy, records, .. } = started;
        drop(proxy);
        let records = taken(&records);
        assert_eq!(records.len(), REFUSALS_RECORDED_PER_WINDOW as usize + 1);
        assert_eq!(
            records.last(),
            Some(&Refusal {
                host: String::new(),
                port: 0,
                reason: EgressRefusal::NotGranted,
                suppressed_before: 100 - REFUSALS_RECORDED_PER_WINDOW,
            })
        );
    }

    #[tokio::test]
    async fn the_flood_window_is_timed_by_the_clock() {
        let seconds = Arc::new(AtomicI64::new(1_790_000_000));
        let now = Arc::clone(&seconds);
        let clock: Clock = Arc::new(move || {
            time::OffsetDateTime::from_unix_timestamp(now.load(Ordering::SeqCst))
                .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
        });
        let started = start_with(Grants::default(), clock).await;
        let over = 5;
        for _ in 0..REFUSALS_RECORDED_PER_WINDOW + over {
            exchange(&started.proxy, &connect_head("127.0.0.1", 22)).await;
        }
        assert_eq!(
            taken(&started.records).len(),
            REFUSALS_RECORDED_PER_WINDOW as usize
        );
        let window_seconds = i64::try_from(REFUSAL_WINDOW_MS / 1000).expect("small");
        seconds.fetch_add(window_seconds + 1, Ordering::SeqCst);
        exchange(&started.proxy, &connect_head("127.0.0.1", 23)).await;
        let records = taken(&started.records);
        assert_eq!(records.len(), REFUSALS_RECORDED_PER_WINDOW as usize + 1);
        assert_eq!(records.last().map(|r| r.suppressed_before), Some(over));
        assert_eq!(records.last().map(|r| r.port), Some(23));
    }

    #[tokio::test]
    async fn connections_over_the_bound_are_answered_503() {
        let (echo, _) = echo_server().await;
        let started = start(grants_for(&[&format!("127.0.0.1:{}", echo.port())])).await;
        let mut open = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            open.push(
                tunnel(&started.proxy, "127.0.0.1", echo.port())
                    .await
                    .expect("within the bound"),
            );
        }
        let refused = tunnel(&started.proxy, "127.0.0.1", echo.port())
            .await
            .expect_err("the 65th is refused");
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
        // Every open tunnel still works.
        assert_eq!(echo_through(&mut open[0], b"still").await, b"still");
        // Closing one frees its slot once the proxy has seen it close.
        let mut closing = open.pop().expect("one open");
        closing.shutdown().await.expect("shutdown");
        let mut rest = Vec::new();
        closing.read_to_end(&mut rest).await.expect("read");
        drop(closing);
        let mut reopened = None;
        for _ in 0..1000 {
            match tunnel(&started.proxy, "127.0.0.1", echo.port()).await {
                Ok(stream) => {
                    reopened = Some(stream);
                    break;
                }
                Err(answer) => {
                    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
                    tokio::task::yield_now().await;
                }
            }
        }
        let mut reopened = reopened.expect("a slot frees once a connection closes");
        assert_eq!(echo_through(&mut reopened, b"again").await, b"again");
        assert_eq!(started.proxy.allowed(), MAX_CONNECTIONS as u64 + 1);
        // The overflow is not an egress refusal: no host was asked for.
        assert_eq!(started.proxy.refused(), 0);
    }

    #[tokio::test]
    async fn dropping_the_proxy_ends_its_connections_and_removes_the_socket() {
        let (echo, _) = echo_server().await;
        let started = start(grants_for(&[&format!("127.0.0.1:{}", echo.port())])).await;
        let mut stream = tunnel(&started.proxy, "127.0.0.1", echo.port())
            .await
            .expect("granted");
        let path = started.proxy.socket_path().to_owned();
        assert!(path.exists());
        let Started { proxy, _dir, .. } = started;
        drop(proxy);
        assert!(!path.exists());
        let mut rest = Vec::new();
        // The echo server keeps its side open: only the proxy's end closes this.
        stream.read_to_end(&mut rest).await.expect("read");
        assert!(rest.is_empty());
        assert!(UnixStream::connect(&path).await.is_err());
    }

    #[tokio::test]
    async fn the_socket_dir_is_created_private_and_named_sockets_are_random() {
        let dir = tempfile::tempdir().expect("temp dir");
        let socket_dir = dir.path().join("gatehouse").join("px");
        let (sink, _) = collecting_sink();
        let first = EgressProxy::start(
            "a",
            Grants::default(),
            &socket_dir,
            fixed_clock(),
            Arc::clone(&sink),
        )
        .await
        .expect("created");
        let second = EgressProxy::start("b", Grants::default(), &socket_dir, fixed_clock(), sink)
            .await
            .expect("the existing private dir is accepted");
        let mode = std::fs::metadata(&socket_dir).expect("dir").mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert_ne!(first.socket_path(), second.socket_path());
        for proxy in [&first, &second] {
            let name = proxy
                .socket_path()
                .file_name()
                .and_then(|n| n.to_str())
                .expect("a name");
            let stem = name.strip_suffix(".sock").expect("ends .sock");
            assert_eq!(stem.len(), 12);
            assert!(stem.bytes().all(|b| b.is_ascii_hexdigit()));
            assert_eq!(proxy.socket_path().parent(), Some(socket_dir.as_path()));
        }
    }

    async fn start_in(socket_dir: &Path) -> io::Result<EgressProxy> {
        let (sink, _) = collecting_sink();
        EgressProxy::start("s", Grants::default(), socket_dir, fixed_clock(), sink).await
    }

    #[tokio::test]
    async fn a_socket_dir_writable_by_others_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        for mode in [0o777, 0o770, 0o720, 0o702, 0o1777] {
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode))
                .expect("chmod");
            let error = start_in(dir.path()).await.err().expect("refused");
            assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{mode:o}");
            assert!(error.to_string().contains("writable"), "{error}");
        }
        // The same directory made private is accepted.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .expect("chmod");
        assert!(start_in(dir.path()).await.is_ok());
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        assert!(start_in(dir.path()).await.is_ok());
    }

    #[tokio::test]
    async fn a_socket_dir_owned_by_another_user_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let foreign = if nix::unistd::geteuid().is_root() {
            // Root (as in CI) can give a directory away; a normal user cannot, but does not own
            // the root directory.
            let path = dir.path().join("foreign");
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&path)
                .expect("mkdir");
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).expect("chown");
            path
        } else {
            PathBuf::from("/")
        };
        let error = start_in(&foreign).await.err().expect("refused");
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert!(error.to_string().contains("belongs to uid"), "{error}");
    }

    #[tokio::test]
    async fn a_socket_dir_that_is_a_file_or_too_deep_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("file");
        std::fs::write(&file, b"").expect("write");
        assert!(start_in(&file).await.is_err());
        let deep = dir.path().join("d".repeat(MAX_SOCKET_PATH_BYTES));
        let error = start_in(&deep).await.err().expect("refused");
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        assert!(error.to_string().contains("bytes"), "{error}");
    }

    #[test]
    fn refusal_codes_are_stable_and_match_the_serialized_form() {
        let codes: Vec<&str> = EgressRefusal::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(codes, ["not_granted", "malformed_request", "unreachable"]);
        for reason in EgressRefusal::ALL {
            assert_eq!(
                serde_json::to_value(reason).expect("serialize"),
                serde_json::Value::from(reason.as_str())
            );
            let back: EgressRefusal =
                serde_json::from_value(serde_json::Value::from(reason.as_str())).expect("parse");
            assert_eq!(back, reason);
        }
        assert!(
            serde_json::from_value::<EgressRefusal>(serde_json::Value::from("NotGranted")).is_err()
        );
        assert_eq!(
            EgressRefusal::ALL.map(EgressRefusal::status),
            [403, 400, 502]
        );
    }
}
