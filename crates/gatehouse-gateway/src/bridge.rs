//! The bridge: while the desktop app runs, `gatehouse serve` is a pipe to the app's host, so
//! every AI client shares one set of upstream connections, one gate, one audit log and the
//! app's consent dialog.
//!
//! The app listens on a Unix socket, `$XDG_RUNTIME_DIR/gatehouse/gateway.sock`, in a
//! directory only its user can enter (0700, owned by that user, checked on both sides), and
//! serves only peers whose kernel-reported uid (`SO_PEERCRED`) is its own; `serve` checks the
//! app's uid the same way before it sends a byte of the client's. A connection starts with
//! one hello line each way (bounded in size and time), then carries the client's MCP messages
//! unchanged:
//!
//! ```text
//! serve -> app   {"gatehouse_bridge":1,"client":"claude_code","startup_wait_ms":10000}
//! app -> serve   {"gatehouse_bridge":1,"accepted":true}
//!            or  {"gatehouse_bridge":1,"error":{"code":"bridge_busy","message":"..."}}
//! ```

use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gatehouse_host::DownstreamTransport;
use gatehouse_host::caller::validate_client_id;
use gatehouse_host::host::Host;
use rmcp::ServiceExt;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::Semaphore;

use crate::server::{Gateway, GatewayHandler};

/// The hello's version: both sides must speak it.
pub const BRIDGE_VERSION: u64 = 1;
/// A hello line is at most this long, newline included.
pub const HELLO_LIMIT: usize = 1024;
/// How long either side waits for the other's hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How many clients the app serves at once; one more is told so and closed.
pub const MAX_CLIENTS: usize = 64;
/// How long an accepted client may hold its place before its MCP `initialize`.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);
/// After the client closed its side, how long `serve` waits for the app to finish.
const DRAIN_WAIT: Duration = Duration::from_secs(5);

/// Why the bridge could not be used; each has a stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BridgeCode {
    /// `XDG_RUNTIME_DIR` is not set: there is nowhere private to put the socket.
    NoRuntimeDir,
    /// The socket's directory (or the socket) is not this user's alone.
    UnsafeDir,
    /// Another process already listens on the socket.
    InUse,
    /// The other end runs as another user.
    PeerNotSameUser,
    /// The hello was not one line of the expected JSON in time.
    BadHello,
    /// The app refused the client (its reason is in the message).
    Refused,
    /// The app serves [`MAX_CLIENTS`] already.
    Busy,
    /// A socket or file operation failed.
    Io,
}

impl BridgeCode {
    const ALL: [BridgeCode; 8] = [
        BridgeCode::NoRuntimeDir,
        BridgeCode::UnsafeDir,
        BridgeCode::InUse,
        BridgeCode::PeerNotSameUser,
        BridgeCode::BadHello,
        BridgeCode::Refused,
        BridgeCode::Busy,
        BridgeCode::Io,
    ];

    /// The code a reply names, if it is one of ours.
    pub fn parse(code: &str) -> Option<BridgeCode> {
        BridgeCode::ALL.into_iter().find(|c| c.as_str() == code)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BridgeCode::NoRuntimeDir => "bridge_no_runtime_dir",
            BridgeCode::UnsafeDir => "bridge_unsafe_dir",
            BridgeCode::InUse => "bridge_in_use",
            BridgeCode::PeerNotSameUser => "bridge_peer_not_same_user",
            BridgeCode::BadHello => "bridge_bad_hello",
            BridgeCode::Refused => "bridge_refused",
            BridgeCode::Busy => "bridge_busy",
            BridgeCode::Io => "bridge_io",
        }
    }
}

/// The bridge's codes as the CLI prints them: the same names, in the one set of codes.
impl From<BridgeCode> for gatehouse_host::ErrorCode {
    fn from(code: BridgeCode) -> Self {
        use gatehouse_host::ErrorCode as Code;
        match code {
            BridgeCode::NoRuntimeDir => Code::BridgeNoRuntimeDir,
            BridgeCode::UnsafeDir => Code::BridgeUnsafeDir,
            BridgeCode::InUse => Code::BridgeInUse,
            BridgeCode::PeerNotSameUser => Code::BridgePeerNotSameUser,
            BridgeCode::BadHello => Code::BridgeBadHello,
            BridgeCode::Refused => Code::BridgeRefused,
            BridgeCode::Busy => Code::BridgeBusy,
            BridgeCode::Io => Code::BridgeIo,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeError {
    pub code: BridgeCode,
    pub message: String,
}

impl BridgeError {
    fn new(code: BridgeCode, message: impl Into<String>) -> BridgeError {
        BridgeError {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for BridgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code.as_str())
    }
}

impl std::error::Error for BridgeError {}

/// The socket's place under a runtime directory.
pub fn socket_path_in(runtime_dir: &Path) -> PathBuf {
    runtime_dir.join("gatehouse").join("gateway.sock")
}

/// The socket's place for this session: under `$XDG_RUNTIME_DIR`, the per-user directory the
/// login session provides (never a shared one such as /tmp).
pub fn socket_path() -> Result<PathBuf, BridgeError> {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if Path::new(&dir).is_absolute() => Ok(socket_path_in(Path::new(&dir))),
        _ => Err(BridgeError::new(
            BridgeCode::NoRuntimeDir,
            "XDG_RUNTIME_DIR is not set (or not an absolute path): no private place for the \
             desktop app's bridge socket",
        )),
    }
}

/// This process's effective uid: the only peer either side talks to.
pub fn own_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Checks that `dir` is a real directory (not a link), owned by `uid`, that no one else may
/// enter or change.
fn check_private_dir(dir: &Path, uid: u32) -> Result<(), BridgeError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| {
        BridgeError::new(
            BridgeCode::Io,
            format!("cannot inspect {}: {e}", dir.display()),
        )
    })?;
    let unsafe_dir = |why: String| {
        BridgeError::new(
            BridgeCode::UnsafeDir,
            format!(
                "{} {why}; remove it (the app makes it again, private to you)",
                dir.display()
            ),
        )
    };
    if !meta.file_type().is_dir() {
        return Err(unsafe_dir("is not a directory".into()));
    }
    if meta.uid() != uid {
        return Err(unsafe_dir(format!(
            "belongs to uid {}, not to you (uid {uid})",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(unsafe_dir(format!(
            "can be used by other users (mode {:o})",
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

/// The peer's uid as the kernel reports it.
fn peer_uid(stream: &UnixStream) -> Result<u32, BridgeError> {
    stream.peer_cred().map(|c| c.uid()).map_err(|e| {
        BridgeError::new(
            BridgeCode::Io,
            format!("cannot read the peer's credentials: {e}"),
        )
    })
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Hello {
    gatehouse_bridge: u64,
    client: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    startup_wait_ms: Option<u64>,
    /// The one server whose tools the client is offered (`serve --server NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HelloReply {
    gatehouse_bridge: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    accepted: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ReplyError>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyError {
    code: String,
    message: String,
}

/// Reads one line of at most [`HELLO_LIMIT`] bytes within [`HELLO_TIMEOUT`].
async fn read_hello_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> Result<Vec<u8>, BridgeError> {
    let mut line = Vec::new();
    let read = tokio::time::timeout(
        HELLO_TIMEOUT,
        (&mut *reader)
            .take(HELLO_LIMIT as u64)
            .read_until(b'\n', &mut line),
    )
    .await
    .map_err(|_| {
        BridgeError::new(
            BridgeCode::BadHello,
            format!("no hello within {} s", HELLO_TIMEOUT.as_secs()),
        )
    })?
    .map_err(|e| match e.kind() {
        // A refusal without a word closes with our bytes unread: the kernel resets.
        ErrorKind::ConnectionReset => BridgeError::new(
            BridgeCode::BadHello,
            "the other end closed before its hello",
        ),
        _ => BridgeError::new(BridgeCode::Io, format!("reading the hello: {e}")),
    })?;
    if read == 0 {
        return Err(BridgeError::new(
            BridgeCode::BadHello,
            "the other end closed before its hello",
        ));
    }
    if line.last() != Some(&b'\n') {
        return Err(BridgeError::new(
            BridgeCode::BadHello,
            format!("the hello is not one line of at most {HELLO_LIMIT} bytes"),
        ));
    }
    line.pop();
    Ok(line)
}

async fn write_line<W: AsyncWrite + Unpin, T: Serialize>(
    writer: &mut W,
    value: &T,
) -> Result<(), BridgeError> {
    let mut line = serde_json::to_vec(value).expect("hello serializes");
    line.push(b'\n');
    writer
        .write_all(&line)
        .await
        .map_err(|e| BridgeError::new(BridgeCode::Io, format!("writing the hello: {e}")))
}

/// The app's end: a socket bound in a private directory, serving each same-user client a
/// [`Gateway`] on the app's host. The socket file goes when this is dropped.
pub struct BridgeListener {
    listener: tokio::net::UnixListener,
    path: PathBuf,
    /// The bound socket's inode, so a drop never removes a socket another process made.
    inode: (u64, u64),
    uid: u32,
    slots: Arc<Semaphore>,
    max_clients: usize,
    handshake_timeout: Duration,
}

impl BridgeListener {
    /// Binds at `path` (see [`socket_path`]), making its directory (0700) if missing. A socket
    /// left by an app that died is replaced; one that answers is another app's
    /// ([`BridgeCode::InUse`]). Must run inside a Tokio runtime.
    pub fn bind(path: &Path) -> Result<BridgeListener, BridgeError> {
        BridgeListener::bind_for(path, own_uid())
    }

    /// As [`BridgeListener::bind`], serving peers of `uid` only (tests use another uid to
    /// see a peer refused).
    pub fn bind_for(path: &Path, uid: u32) -> Result<BridgeListener, BridgeError> {
        let io = |what: &str, e: std::io::Error| {
            BridgeError::new(BridgeCode::Io, format!("{what} {}: {e}", path.display()))
        };
        let dir = path.parent().ok_or_else(|| {
            BridgeError::new(BridgeCode::Io, format!("{} has no parent", path.display()))
        })?;
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io("cannot make the directory of", e)),
        }
        check_private_dir(dir, own_uid())?;
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io("cannot inspect", e)),
            Ok(meta) if !meta.file_type().is_socket() => {
                return Err(BridgeError::new(
                    BridgeCode::UnsafeDir,
                    format!(
                        "{} exists and is not a socket; remove it and start the app again",
                        path.display()
                    ),
                ));
            }
            Ok(_) => match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => {
                    return Err(BridgeError::new(
                        BridgeCode::InUse,
                        format!(
                            "another Gatehouse app already serves AI clients at {}",
                            path.display()
                        ),
                    ));
                }
                // Nobody listens: a socket left by an app that did not exit cleanly.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    std::fs::remove_file(path).map_err(|e| io("cannot remove the stale", e))?;
                }
                Err(e) => return Err(io("cannot probe", e)),
            },
        }
        let listener =
            std::os::unix::net::UnixListener::bind(path).map_err(|e| io("cannot listen at", e))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io("cannot restrict", e))?;
        let meta = std::fs::symlink_metadata(path).map_err(|e| io("cannot inspect", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| io("cannot listen at", e))?;
        let listener =
            tokio::net::UnixListener::from_std(listener).map_err(|e| io("cannot listen at", e))?;
        Ok(BridgeListener {
            listener,
            path: path.to_path_buf(),
            inode: (meta.dev(), meta.ino()),
            uid,
            slots: Arc::new(Semaphore::new(MAX_CLIENTS)),
            max_clients: MAX_CLIENTS,
            handshake_timeout: HANDSHAKE_TIMEOUT,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serves at most `n` clients at once instead of [`MAX_CLIENTS`].
    pub fn with_max_clients(mut self, n: usize) -> BridgeListener {
        self.slots = Arc::new(Semaphore::new(n));
        self.max_clients = n;
        self
    }

    /// Gives an accepted client `limit` to initialize instead of [`HANDSHAKE_TIMEOUT`].
    pub fn with_handshake_timeout(mut self, limit: Duration) -> BridgeListener {
        self.handshake_timeout = limit;
        self
    }

    /// Serves clients until the runtime stops. A client that fails its checks is told why
    /// (when it is this user's) and closed; nothing it sent reaches the host.
    pub async fn serve(self, host: Arc<Host>) {
        loop {
            let stream = match self.listener.accept().await {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "the bridge could not accept a client");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let host = host.clone();
            let slots = self.slots.clone();
            let limits = (self.uid, self.max_clients, self.handshake_timeout);
            tokio::spawn(async move {
                if let Err(error) = serve_client(stream, host, slots, limits).await {
                    tracing::warn!(code = error.code.as_str(), message = %error.message, "a bridge client was refused");
                }
            });
        }
    }
}

impl Drop for BridgeListener {
    fn drop(&mut self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path)
            && (meta.dev(), meta.ino()) == self.inode
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

async fn serve_client(
    stream: UnixStream,
    host: Arc<Host>,
    slots: Arc<Semaphore>,
    (uid, max_clients, handshake_timeout): (u32, usize, Duration),
) -> Result<(), BridgeError> {
    let peer = peer_uid(&stream)?;
    if peer != uid {
        // Not a word to another user's process.
        return Err(BridgeError::new(
            BridgeCode::PeerNotSameUser,
            format!("a process of uid {peer} tried the bridge (served: uid {uid})"),
        ));
    }
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let hello = async {
        let line = read_hello_line(&mut reader).await?;
        let hello: Hello = serde_json::from_slice(&line).map_err(|e| {
            BridgeError::new(BridgeCode::BadHello, format!("the hello is not valid: {e}"))
        })?;
        if hello.gatehouse_bridge != BRIDGE_VERSION {
            return Err(BridgeError::new(
                BridgeCode::BadHello,
                format!(
                    "bridge version {} asked, {BRIDGE_VERSION} spoken: use the gatehouse command of the same release as the app",
                    hello.gatehouse_bridge
                ),
            ));
        }
        validate_client_id(&hello.client)
            .map_err(|e| BridgeError::new(BridgeCode::BadHello, e))?;
        if let Some(server) = &hello.server
            && !host.has_server(server)
        {
            return Err(BridgeError::new(
                BridgeCode::Refused,
                format!(
                    "the app has no server named {server:?}: see `gatehouse servers list`, or add it"
                ),
            ));
        }
        Ok(hello)
    }
    .await;
    let refuse = |error: BridgeError| HelloReply {
        gatehouse_bridge: BRIDGE_VERSION,
        accepted: None,
        error: Some(ReplyError {
            code: error.code.as_str().into(),
            message: error.message,
        }),
    };
    let hello = match hello {
        Ok(hello) => hello,
        Err(error) => {
            let _ = write_line(&mut write, &refuse(error.clone())).await;
            return Err(error);
        }
    };
    let Ok(_slot) = slots.try_acquire_owned() else {
        let error = BridgeError::new(
            BridgeCode::Busy,
            format!("the app serves {max_clients} AI clients already; close one and try again"),
        );
        let _ = write_line(&mut write, &refuse(error.clone())).await;
        return Err(error);
    };
    write_line(
        &mut write,
        &HelloReply {
            gatehouse_bridge: BRIDGE_VERSION,
            accepted: Some(true),
            error: None,
        },
    )
    .await?;
    // Servers never tried yet (added since the app started) connect now.
    host.connect_in_background(None);
    let mut gateway =
        Gateway::new(host, hello.client, DownstreamTransport::Stdio).with_only(hello.server);
    if let Some(ms) = hello.startup_wait_ms {
        gateway = gateway.with_startup_wait(Duration::from_millis(ms.min(600_000)));
    }
    let gateway = Arc::new(gateway);
    let running = tokio::time::timeout(
        handshake_timeout,
        GatewayHandler(gateway.clone()).serve((reader, write)),
    )
    .await
    .map_err(|_| {
        BridgeError::new(
            BridgeCode::BadHello,
            format!(
                "no MCP initialize within {} ms of the hello",
                handshake_timeout.as_millis()
            ),
        )
    })?
    .map_err(|e| BridgeError::new(BridgeCode::Io, format!("the client's handshake: {e}")))?;
    // The gateway goes with this function: its change watcher stops, the client is no
    // longer listed as connected.
    let _ = running.waiting().await;
    Ok(())
}

/// `serve`'s end, connected and greeted.
pub struct Bridged {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

/// Connects to the app at `path`. `Ok(None)` when no app listens (no socket, or a stale
/// one): `serve` then runs the host itself. An unsafe directory, an app of another user or
/// a refusal is an error: the client is not handed to anything unchecked.
pub async fn connect(
    path: &Path,
    client: &str,
    only: Option<&str>,
    startup_wait: Duration,
) -> Result<Option<Bridged>, BridgeError> {
    let uid = own_uid();
    let dir = path.parent().unwrap_or(Path::new("/"));
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        _ => check_private_dir(dir, uid)?,
    }
    let stream = match UnixStream::connect(path).await {
        Ok(stream) => stream,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::ConnectionRefused) => {
            return Ok(None);
        }
        Err(e) => {
            return Err(BridgeError::new(
                BridgeCode::Io,
                format!("cannot reach the app at {}: {e}", path.display()),
            ));
        }
    };
    let peer = peer_uid(&stream)?;
    if peer != uid {
        return Err(BridgeError::new(
            BridgeCode::PeerNotSameUser,
            format!(
                "the process at {} runs as uid {peer}, not as you (uid {uid}); not using it",
                path.display()
            ),
        ));
    }
    let (read, mut writer) = stream.into_split();
    let mut reader = BufReader::new(read);
    write_line(
        &mut writer,
        &Hello {
            gatehouse_bridge: BRIDGE_VERSION,
            client: client.to_string(),
            startup_wait_ms: Some(u64::try_from(startup_wait.as_millis()).unwrap_or(u64::MAX)),
            server: only.map(str::to_string),
        },
    )
    .await?;
    let line = read_hello_line(&mut reader).await?;
    let reply: HelloReply = serde_json::from_slice(&line).map_err(|e| {
        BridgeError::new(
            BridgeCode::BadHello,
            format!("the app's reply is not valid: {e}"),
        )
    })?;
    match reply {
        HelloReply {
            gatehouse_bridge: BRIDGE_VERSION,
            accepted: Some(true),
            error: None,
        } => Ok(Some(Bridged { reader, writer })),
        HelloReply {
            error: Some(error), ..
        } => Err(BridgeError::new(
            match BridgeCode::parse(&error.code) {
                Some(BridgeCode::Busy) => BridgeCode::Busy,
                _ => BridgeCode::Refused,
            },
            format!(
                "the app refused the client: {} ({})",
                error.message, error.code
            ),
        )),
        other => Err(BridgeError::new(
            BridgeCode::BadHello,
            format!("the app's reply is not an acceptance: {other:?}"),
        )),
    }
}

impl Bridged {
    /// Carries the client's bytes to the app and the app's back, unchanged, until the app
    /// ends the session. When the client closes its side first, the app is told and given
    /// a moment to finish (its cancelled calls tell their servers).
    pub async fn pipe<I, O>(self, mut input: I, mut output: O) -> Result<(), BridgeError>
    where
        I: AsyncRead + Unpin + Send + 'static,
        O: AsyncWrite + Unpin,
    {
        let Bridged {
            mut reader,
            mut writer,
        } = self;
        let upstream = tokio::spawn(async move {
            let copied = tokio::io::copy(&mut input, &mut writer).await;
            let _ = writer.shutdown().await;
            copied
        });
        let result = {
            let downstream = tokio::io::copy(&mut reader, &mut output);
            tokio::pin!(downstream);
            tokio::select! {
                copied = &mut downstream => copied.map(|_| ()),
                _ = upstream => {
                    // The client is done: the app ends the session and closes; wait for that.
                    match tokio::time::timeout(DRAIN_WAIT, &mut downstream).await {
                        Ok(copied) => copied.map(|_| ()),
                        Err(_) => Ok(()),
                    }
                }
            }
        };
        let _ = output.flush().await;
        result.map_err(|e| BridgeError::new(BridgeCode::Io, format!("the bridge broke: {e}")))
    }
}

#[cfg(test)]
mod code_tests {
    use super::BridgeCode;

    #[test]
    fn each_bridge_code_is_the_error_code_of_its_name() {
        for code in BridgeCode::ALL {
            assert_eq!(
                gatehouse_host::ErrorCode::from(code).as_str(),
                code.as_str()
            );
        }
    }
}
