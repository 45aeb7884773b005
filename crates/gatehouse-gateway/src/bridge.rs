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
//!
//! `serve --http` uses the same socket in `http` mode: `serve` binds the loopback listener
//! itself (so the address, the port and their errors stay the CLI's), and hands the app the
//! listening socket, which the app serves with the gateway's HTTP ([`crate::http`]: the
//! clients' keychain tokens, loopback, `Host`/`Origin` and body rules) on its own host until
//! the connection closes. A hello without `mode` is a stdio hello, byte for byte as before; an
//! app of an older release refuses `mode` as an unknown field (`bridge_bad_hello`).
//!
//! ```text
//! serve -> app   {"gatehouse_bridge":1,"mode":"http","startup_wait_ms":10000}
//! app -> serve   {"gatehouse_bridge":1,"accepted":true}            (or an error, as above)
//! serve -> app   one byte, "\n", carrying the listening socket (SCM_RIGHTS)
//! app -> serve   {"gatehouse_bridge":1,"serving":"127.0.0.1:PORT"} (or an error)
//! ... no more bytes either way; either side closing the connection ends the serving
//! ```

use std::io::ErrorKind;
use std::os::fd::OwnedFd;
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
use crate::tokens::TokenBook;

/// The hello's version: both sides must speak it.
pub const BRIDGE_VERSION: u64 = 1;
/// A hello line is at most this long, newline included.
pub const HELLO_LIMIT: usize = 1024;
/// How long either side waits for the other's hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How many clients the app serves at once; one more is told so and closed.
pub const MAX_CLIENTS: usize = 64;
/// How many `serve --http` listeners the app serves at once; one more is told so and closed.
pub const MAX_HTTP_LISTENERS: usize = 8;
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
    match private_dir_problem(dir, uid) {
        Err(e) => Err(BridgeError::new(
            BridgeCode::Io,
            format!("cannot inspect {}: {e}", dir.display()),
        )),
        Ok(Some(why)) => Err(BridgeError::new(
            BridgeCode::UnsafeDir,
            format!(
                "{} {why}; remove it (the app makes it again, private to you)",
                dir.display()
            ),
        )),
        Ok(None) => Ok(()),
    }
}

/// Why `dir` is not a private directory of `uid`: not a real directory (a link is not one),
/// owned by another uid, or open to others; `None` when it is. The one rule for every socket
/// Gatehouse puts in the runtime directory (the bridge's and the window's).
pub fn private_dir_problem(dir: &Path, uid: u32) -> std::io::Result<Option<String>> {
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.file_type().is_dir() {
        return Ok(Some("is not a directory".into()));
    }
    if meta.uid() != uid {
        return Ok(Some(format!(
            "belongs to uid {}, not to you (uid {uid})",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        return Ok(Some(format!(
            "can be used by other users (mode {:o})",
            meta.mode() & 0o777
        )));
    }
    Ok(None)
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

/// What a bridge connection carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BridgeMode {
    /// One client's MCP messages, piped (the hello has no `mode`).
    Stdio,
    /// A loopback HTTP listener passed to the app, served there until the connection closes.
    Http,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Hello {
    gatehouse_bridge: u64,
    /// Absent for stdio, so that hello stays what every release sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mode: Option<BridgeMode>,
    /// The client, for stdio (over HTTP each request's token names its client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client: Option<String>,
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
    /// `http` mode: the address the app serves on the passed listener.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    serving: Option<String>,
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

/// A Unix socket listening in a private directory of this user, its file removed when this is
/// dropped, and only if it is still the one bound (a drop never removes a socket another
/// process made). The one binding rule for every socket Gatehouse puts in the runtime
/// directory: the bridge's `gateway.sock` and the window's `desk.sock`.
pub struct PrivateSocket {
    pub listener: tokio::net::UnixListener,
    path: PathBuf,
    inode: (u64, u64),
}

/// What [`PrivateSocket::bind`] found at the socket's place.
pub enum SocketPlace {
    Listening(PrivateSocket),
    /// Something answers there already: another process serves this socket.
    Answered,
}

/// Why a [`PrivateSocket`] could not be bound; each owner words it for its own users.
#[derive(Debug)]
pub enum SocketProblem {
    /// An operation on the path failed: `what` says which ("cannot listen at", …).
    Io {
        what: &'static str,
        error: std::io::Error,
    },
    /// The directory could not be inspected.
    DirUnreadable(std::io::Error),
    /// The directory is not private to this user ([`private_dir_problem`]'s reason).
    DirNotPrivate(String),
    /// Something other than a socket is at the path.
    NotASocket,
}

impl PrivateSocket {
    /// Binds at `path`, making its directory (0700) if missing and refusing one that is not
    /// private to `uid`. A socket left by a process that died (nobody answers) is replaced.
    /// Must run inside a Tokio runtime.
    pub fn bind(path: &Path, uid: u32) -> Result<SocketPlace, SocketProblem> {
        let io = |what: &'static str| move |error| SocketProblem::Io { what, error };
        let dir = path.parent().ok_or(SocketProblem::Io {
            what: "no parent directory for",
            error: ErrorKind::NotFound.into(),
        })?;
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io("cannot make the directory of")(e)),
        }
        match private_dir_problem(dir, uid) {
            Err(e) => return Err(SocketProblem::DirUnreadable(e)),
            Ok(Some(why)) => return Err(SocketProblem::DirNotPrivate(why)),
            Ok(None) => {}
        }
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io("cannot inspect")(e)),
            Ok(meta) if !meta.file_type().is_socket() => return Err(SocketProblem::NotASocket),
            Ok(_) => match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => return Ok(SocketPlace::Answered),
                // Nobody listens: a socket left by a process that did not exit cleanly.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    std::fs::remove_file(path).map_err(io("cannot remove the stale"))?;
                }
                Err(e) => return Err(io("cannot probe")(e)),
            },
        }
        let listener =
            std::os::unix::net::UnixListener::bind(path).map_err(io("cannot listen at"))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(io("cannot restrict"))?;
        let meta = std::fs::symlink_metadata(path).map_err(io("cannot inspect"))?;
        listener
            .set_nonblocking(true)
            .map_err(io("cannot listen at"))?;
        let listener =
            tokio::net::UnixListener::from_std(listener).map_err(io("cannot listen at"))?;
        Ok(SocketPlace::Listening(PrivateSocket {
            listener,
            path: path.to_path_buf(),
            inode: (meta.dev(), meta.ino()),
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateSocket {
    fn drop(&mut self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path)
            && (meta.dev(), meta.ino()) == self.inode
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The app's end: a socket bound in a private directory, serving each same-user client a
/// [`Gateway`] on the app's host. The socket file goes when this is dropped.
pub struct BridgeListener {
    socket: PrivateSocket,
    limits: Limits,
}

/// What each connection is held to, shared by the connections' tasks.
#[derive(Clone)]
struct Limits {
    uid: u32,
    slots: Arc<Semaphore>,
    max_clients: usize,
    http_slots: Arc<Semaphore>,
    max_http: usize,
    /// The clients' HTTP tokens; without them `http` hellos are refused.
    tokens: Option<Arc<TokenBook>>,
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
        let socket = match PrivateSocket::bind(path, own_uid()) {
            Ok(SocketPlace::Listening(socket)) => socket,
            Ok(SocketPlace::Answered) => {
                return Err(BridgeError::new(
                    BridgeCode::InUse,
                    format!(
                        "another Gatehouse app already serves AI clients at {}",
                        path.display()
                    ),
                ));
            }
            Err(problem) => return Err(bridge_socket_error(path, problem)),
        };
        Ok(BridgeListener {
            socket,
            limits: Limits {
                uid,
                slots: Arc::new(Semaphore::new(MAX_CLIENTS)),
                max_clients: MAX_CLIENTS,
                http_slots: Arc::new(Semaphore::new(MAX_HTTP_LISTENERS)),
                max_http: MAX_HTTP_LISTENERS,
                tokens: None,
                handshake_timeout: HANDSHAKE_TIMEOUT,
            },
        })
    }

    pub fn path(&self) -> &Path {
        self.socket.path()
    }

    /// Serves at most `n` clients at once instead of [`MAX_CLIENTS`].
    pub fn with_max_clients(mut self, n: usize) -> BridgeListener {
        self.limits.slots = Arc::new(Semaphore::new(n));
        self.limits.max_clients = n;
        self
    }

    /// Serves at most `n` `serve --http` listeners at once instead of [`MAX_HTTP_LISTENERS`].
    pub fn with_max_http_listeners(mut self, n: usize) -> BridgeListener {
        self.limits.http_slots = Arc::new(Semaphore::new(n));
        self.limits.max_http = n;
        self
    }

    /// Serves `serve --http` listeners, checking each request's bearer token against `book`
    /// (the app's keychain and data directory: see [`crate::tokens`]). Without it, `http`
    /// hellos are refused and `serve --http` says so.
    pub fn with_tokens(mut self, book: Arc<TokenBook>) -> BridgeListener {
        self.limits.tokens = Some(book);
        self
    }

    /// Gives an accepted client `limit` to initialize instead of [`HANDSHAKE_TIMEOUT`].
    pub fn with_handshake_timeout(mut self, limit: Duration) -> BridgeListener {
        self.limits.handshake_timeout = limit;
        self
    }

    /// Serves clients until the runtime stops. A client that fails its checks is told why
    /// (when it is this user's) and closed; nothing it sent reaches the host.
    pub async fn serve(self, host: Arc<Host>) {
        loop {
            let stream = match self.socket.listener.accept().await {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "the bridge could not accept a client");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let host = host.clone();
            let limits = self.limits.clone();
            tokio::spawn(async move {
                if let Err(error) = serve_client(stream, host, limits).await {
                    tracing::warn!(code = error.code.as_str(), message = %error.message, "a bridge client was refused");
                }
            });
        }
    }
}

/// The bridge's words for a socket it could not bind (the codes and sentences it always had).
fn bridge_socket_error(path: &Path, problem: SocketProblem) -> BridgeError {
    let dir = path.parent().unwrap_or(path);
    match problem {
        SocketProblem::Io { what, error } => BridgeError::new(
            BridgeCode::Io,
            format!("{what} {}: {error}", path.display()),
        ),
        SocketProblem::DirUnreadable(e) => BridgeError::new(
            BridgeCode::Io,
            format!("cannot inspect {}: {e}", dir.display()),
        ),
        SocketProblem::DirNotPrivate(why) => BridgeError::new(
            BridgeCode::UnsafeDir,
            format!(
                "{} {why}; remove it (the app makes it again, private to you)",
                dir.display()
            ),
        ),
        SocketProblem::NotASocket => BridgeError::new(
            BridgeCode::UnsafeDir,
            format!(
                "{} exists and is not a socket; remove it and start the app again",
                path.display()
            ),
        ),
    }
}

fn refusal(error: BridgeError) -> HelloReply {
    HelloReply {
        gatehouse_bridge: BRIDGE_VERSION,
        accepted: None,
        error: Some(ReplyError {
            code: error.code.as_str().into(),
            message: error.message,
        }),
        serving: None,
    }
}

/// Tells the peer why, then returns the error for the app's log.
async fn refuse<W: AsyncWrite + Unpin>(write: &mut W, error: BridgeError) -> BridgeError {
    let _ = write_line(write, &refusal(error.clone())).await;
    error
}

fn accepted() -> HelloReply {
    HelloReply {
        gatehouse_bridge: BRIDGE_VERSION,
        accepted: Some(true),
        error: None,
        serving: None,
    }
}

async fn serve_client(
    stream: UnixStream,
    host: Arc<Host>,
    limits: Limits,
) -> Result<(), BridgeError> {
    let peer = peer_uid(&stream)?;
    if peer != limits.uid {
        // Not a word to another user's process.
        return Err(BridgeError::new(
            BridgeCode::PeerNotSameUser,
            format!(
                "a process of uid {peer} tried the bridge (served: uid {})",
                limits.uid
            ),
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
        match (hello.mode.unwrap_or(BridgeMode::Stdio), &hello.client) {
            (BridgeMode::Stdio, Some(client)) => validate_client_id(client)
                .map_err(|e| BridgeError::new(BridgeCode::BadHello, e))?,
            (BridgeMode::Stdio, None) => {
                return Err(BridgeError::new(
                    BridgeCode::BadHello,
                    "a stdio hello names its client",
                ));
            }
            (BridgeMode::Http, Some(_)) => {
                return Err(BridgeError::new(
                    BridgeCode::BadHello,
                    "an http hello names no client: each request's bearer token names its client",
                ));
            }
            (BridgeMode::Http, None) => {}
        }
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
    let hello = match hello {
        Ok(hello) => hello,
        Err(error) => return Err(refuse(&mut write, error).await),
    };
    match hello.mode.unwrap_or(BridgeMode::Stdio) {
        BridgeMode::Stdio => serve_stdio_client(reader, write, host, hello, &limits).await,
        BridgeMode::Http => serve_http_listener(reader, write, host, hello, &limits).await,
    }
}

async fn serve_stdio_client(
    reader: BufReader<OwnedReadHalf>,
    mut write: OwnedWriteHalf,
    host: Arc<Host>,
    hello: Hello,
    limits: &Limits,
) -> Result<(), BridgeError> {
    let Ok(_slot) = limits.slots.clone().try_acquire_owned() else {
        let error = BridgeError::new(
            BridgeCode::Busy,
            format!(
                "the app serves {} AI clients already; close one and try again",
                limits.max_clients
            ),
        );
        return Err(refuse(&mut write, error).await);
    };
    write_line(&mut write, &accepted()).await?;
    // Servers never tried yet (added since the app started) connect now.
    host.connect_in_background(None);
    let client = hello.client.unwrap_or_default();
    let mut gateway =
        Gateway::new(host, client, DownstreamTransport::Stdio).with_only(hello.server);
    if let Some(ms) = hello.startup_wait_ms {
        gateway = gateway.with_startup_wait(Duration::from_millis(ms.min(600_000)));
    }
    let gateway = Arc::new(gateway);
    let handshake_timeout = limits.handshake_timeout;
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

/// The byte that carries the listening socket.
const LISTENER_BYTE: u8 = b'\n';

/// Receives the one byte that carries the listening socket, with exactly one descriptor.
/// Anything else (no descriptor, several, a truncated control message, another byte) is
/// refused; descriptors received and not kept are closed.
fn receive_listener_now(stream: &UnixStream) -> std::io::Result<Result<OwnedFd, BridgeError>> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags};
    let mut byte = [0u8; 1];
    // Room for more than one, so that a peer sending several is seen doing so.
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = rustix::net::recvmsg(
        stream,
        &mut [std::io::IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT,
    )?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(passed) = message {
            fds.extend(passed);
        }
    }
    let bad = |message: String| Ok(Err(BridgeError::new(BridgeCode::BadHello, message)));
    if received.bytes == 0 {
        return bad("serve closed the bridge before it passed its listener".into());
    }
    if received.flags.contains(ReturnFlags::CTRUNC) {
        return bad("serve passed more descriptors than the one listener".into());
    }
    if byte[0] != LISTENER_BYTE || fds.len() != 1 {
        return bad(format!(
            "expected the one byte \\n carrying one listening socket, got {:?} with {} descriptor(s)",
            byte[0] as char,
            fds.len()
        ));
    }
    Ok(Ok(fds.remove(0)))
}

async fn receive_listener(stream: &UnixStream) -> Result<OwnedFd, BridgeError> {
    let io = |e: std::io::Error| {
        BridgeError::new(BridgeCode::Io, format!("receiving the listener: {e}"))
    };
    loop {
        stream.readable().await.map_err(io)?;
        match stream.try_io(tokio::io::Interest::READABLE, || {
            receive_listener_now(stream)
        }) {
            Ok(received) => return received,
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) => return Err(io(e)),
        }
    }
}

/// A passed descriptor the app serves HTTP on: a TCP socket that listens on a loopback
/// address. A file, a Unix socket, a socket that does not listen, or one on another address
/// is refused.
pub fn check_passed_listener(fd: OwnedFd) -> Result<std::net::TcpListener, BridgeError> {
    let bad = |message: String| BridgeError::new(BridgeCode::BadHello, message);
    let kind = rustix::net::sockopt::socket_type(&fd)
        .map_err(|e| bad(format!("the passed descriptor is not a socket ({e})")))?;
    if kind != rustix::net::SocketType::STREAM {
        return Err(bad("the passed socket is not a stream socket".into()));
    }
    let listening = rustix::net::sockopt::socket_acceptconn(&fd).map_err(|e| {
        bad(format!(
            "cannot tell whether the passed socket listens: {e}"
        ))
    })?;
    if !listening {
        return Err(bad("the passed socket does not listen".into()));
    }
    let family = rustix::net::getsockname(&fd)
        .map_err(|e| bad(format!("the passed socket has no address: {e}")))?
        .address_family();
    if family != rustix::net::AddressFamily::INET && family != rustix::net::AddressFamily::INET6 {
        return Err(bad("the passed socket is not a TCP/IP socket".into()));
    }
    let listener = std::net::TcpListener::from(fd);
    let local = listener
        .local_addr()
        .map_err(|e| bad(format!("the passed socket has no address: {e}")))?;
    crate::http::check_loopback(local).map_err(bad)?;
    listener
        .set_nonblocking(true)
        .map_err(|e| BridgeError::new(BridgeCode::Io, format!("the passed listener: {e}")))?;
    Ok(listener)
}

/// How long the app gives its HTTP sessions to end once `serve` closed the bridge.
const HTTP_STOP_WAIT: Duration = Duration::from_secs(5);

async fn serve_http_listener(
    mut reader: BufReader<OwnedReadHalf>,
    mut write: OwnedWriteHalf,
    host: Arc<Host>,
    hello: Hello,
    limits: &Limits,
) -> Result<(), BridgeError> {
    let Some(book) = limits.tokens.clone() else {
        let error = BridgeError::new(
            BridgeCode::Refused,
            "this app does not serve HTTP clients; run gatehouse serve --http --no-bridge",
        );
        return Err(refuse(&mut write, error).await);
    };
    let Ok(_slot) = limits.http_slots.clone().try_acquire_owned() else {
        let error = BridgeError::new(
            BridgeCode::Busy,
            format!(
                "the app serves {} HTTP listeners already; stop one and try again",
                limits.max_http
            ),
        );
        return Err(refuse(&mut write, error).await);
    };
    // There is no unauthenticated mode: without a token, serve is told what to do.
    let loaded = {
        let book = book.clone();
        tokio::task::spawn_blocking(move || book.load()).await
    };
    let tokens = match loaded {
        Ok(Ok(n)) => n,
        Ok(Err(message)) => {
            let error = BridgeError::new(
                BridgeCode::Refused,
                format!("the app cannot read the client tokens: {message}"),
            );
            return Err(refuse(&mut write, error).await);
        }
        Err(e) => {
            let error = BridgeError::new(BridgeCode::Io, format!("reading the tokens: {e}"));
            return Err(refuse(&mut write, error).await);
        }
    };
    if tokens == 0 {
        let error = BridgeError::new(
            BridgeCode::Refused,
            "no AI client has a token for gatehouse serve --http: make one with \
             gatehouse clients token CLIENT",
        );
        return Err(refuse(&mut write, error).await);
    }
    write_line(&mut write, &accepted()).await?;
    // The descriptor travels with its byte: bytes read ahead would have dropped it.
    if !reader.buffer().is_empty() {
        let error = BridgeError::new(
            BridgeCode::BadHello,
            "serve sent more than its hello before passing its listener",
        );
        return Err(refuse(&mut write, error).await);
    }
    let received = tokio::time::timeout(HELLO_TIMEOUT, receive_listener(reader.get_ref().as_ref()))
        .await
        .unwrap_or_else(|_| {
            Err(BridgeError::new(
                BridgeCode::BadHello,
                format!("no listener within {} s", HELLO_TIMEOUT.as_secs()),
            ))
        });
    let listener = match received.and_then(check_passed_listener) {
        Ok(listener) => listener,
        Err(error) => return Err(refuse(&mut write, error).await),
    };
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            let error = BridgeError::new(BridgeCode::Io, format!("the passed listener: {e}"));
            return Err(refuse(&mut write, error).await);
        }
    };
    let local = listener
        .local_addr()
        .map_err(|e| BridgeError::new(BridgeCode::Io, format!("the passed listener: {e}")))?;
    write_line(
        &mut write,
        &HelloReply {
            serving: Some(local.to_string()),
            accepted: None,
            ..accepted()
        },
    )
    .await?;
    tracing::info!(%local, "serving an HTTP listener of gatehouse serve");
    let startup_wait = hello
        .startup_wait_ms
        .map_or(crate::server::DEFAULT_STARTUP_WAIT, |ms| {
            Duration::from_millis(ms.min(600_000))
        });
    let shutdown = tokio_util::sync::CancellationToken::new();
    let mut serving = tokio::spawn(crate::http::serve_http(
        host,
        listener,
        book,
        hello.server,
        startup_wait,
        None,
        shutdown.clone(),
    ));
    // Until serve closes the bridge (it sends nothing more: a byte is a protocol error and
    // ends the serving as well), or the HTTP server ends by itself.
    let mut byte = [0u8; 1];
    let ended = tokio::select! {
        _ = reader.read(&mut byte) => None,
        ended = &mut serving => Some(ended),
    };
    shutdown.cancel();
    if ended.is_none()
        && tokio::time::timeout(HTTP_STOP_WAIT, &mut serving)
            .await
            .is_err()
    {
        serving.abort();
        let _ = serving.await;
    }
    // The listener is closed here before the bridge: when serve sees the connection end,
    // this app no longer accepts on its socket.
    drop(write);
    match ended {
        Some(Ok(Err(message))) => Err(BridgeError::new(BridgeCode::Io, message)),
        _ => Ok(()),
    }
}

/// `serve`'s end, connected and greeted.
pub struct Bridged {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

/// Connects to the app at `path` after checking its directory and its uid. `Ok(None)` when
/// no app listens (no directory, no socket, or a stale one).
async fn open(path: &Path) -> Result<Option<UnixStream>, BridgeError> {
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
    Ok(Some(stream))
}

/// Reads the app's reply line: `Ok` when it is the one `expected`, else why not.
async fn read_reply(
    reader: &mut BufReader<OwnedReadHalf>,
    expected: impl Fn(&HelloReply) -> bool,
) -> Result<HelloReply, BridgeError> {
    let line = read_hello_line(reader).await?;
    let reply: HelloReply = serde_json::from_slice(&line).map_err(|e| {
        BridgeError::new(
            BridgeCode::BadHello,
            format!("the app's reply is not valid: {e}"),
        )
    })?;
    if reply.gatehouse_bridge == BRIDGE_VERSION && reply.error.is_none() && expected(&reply) {
        return Ok(reply);
    }
    match reply {
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

fn is_acceptance(reply: &HelloReply) -> bool {
    reply.accepted == Some(true) && reply.serving.is_none()
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
    let Some(stream) = open(path).await? else {
        return Ok(None);
    };
    let (read, mut writer) = stream.into_split();
    let mut reader = BufReader::new(read);
    write_line(
        &mut writer,
        &Hello {
            gatehouse_bridge: BRIDGE_VERSION,
            mode: None,
            client: Some(client.to_string()),
            startup_wait_ms: Some(u64::try_from(startup_wait.as_millis()).unwrap_or(u64::MAX)),
            server: only.map(str::to_string),
        },
    )
    .await?;
    read_reply(&mut reader, is_acceptance).await?;
    Ok(Some(Bridged { reader, writer }))
}

/// `serve --http`'s end: the app serves the listener it was passed until this is dropped.
pub struct BridgedHttp {
    reader: BufReader<OwnedReadHalf>,
    _writer: OwnedWriteHalf,
    serving: String,
}

/// Hands `listener` (loopback, listening) to the app at `path`, which serves the gateway's
/// HTTP on it with its own host until the returned [`BridgedHttp`] is dropped or the app
/// goes away ([`BridgedHttp::closed`]). `Ok(None)` when no app listens. This process keeps
/// its own copy of the listener, so it can serve on it again when the app is gone.
pub async fn connect_http(
    path: &Path,
    listener: &std::net::TcpListener,
    only: Option<&str>,
    startup_wait: Duration,
) -> Result<Option<BridgedHttp>, BridgeError> {
    let local = listener
        .local_addr()
        .map_err(|e| BridgeError::new(BridgeCode::Io, format!("the listener: {e}")))?;
    crate::http::check_loopback(local).map_err(|e| BridgeError::new(BridgeCode::Io, e))?;
    let Some(stream) = open(path).await? else {
        return Ok(None);
    };
    let (read, mut writer) = stream.into_split();
    let mut reader = BufReader::new(read);
    write_line(
        &mut writer,
        &Hello {
            gatehouse_bridge: BRIDGE_VERSION,
            mode: Some(BridgeMode::Http),
            client: None,
            startup_wait_ms: Some(u64::try_from(startup_wait.as_millis()).unwrap_or(u64::MAX)),
            server: only.map(str::to_string),
        },
    )
    .await?;
    read_reply(&mut reader, is_acceptance).await?;
    send_listener(writer.as_ref(), listener).await?;
    let reply = read_reply(&mut reader, |r| r.serving.is_some()).await?;
    Ok(Some(BridgedHttp {
        reader,
        _writer: writer,
        serving: reply.serving.unwrap_or_default(),
    }))
}

/// Sends the one byte carrying `listener` (SCM_RIGHTS).
async fn send_listener(
    stream: &UnixStream,
    listener: &std::net::TcpListener,
) -> Result<(), BridgeError> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use std::os::fd::AsFd;
    let io =
        |e: std::io::Error| BridgeError::new(BridgeCode::Io, format!("passing the listener: {e}"));
    loop {
        stream.writable().await.map_err(io)?;
        let sent = stream.try_io(tokio::io::Interest::WRITABLE, || {
            let fds = [listener.as_fd()];
            let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
            let mut control = SendAncillaryBuffer::new(&mut space);
            control.push(SendAncillaryMessage::ScmRights(&fds));
            rustix::net::sendmsg(
                stream,
                &[std::io::IoSlice::new(&[LISTENER_BYTE])],
                &mut control,
                SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
            )
            .map_err(std::io::Error::from)
        });
        match sent {
            Ok(1) => return Ok(()),
            Ok(_) => return Err(io(std::io::Error::from(ErrorKind::WriteZero))),
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) => return Err(io(e)),
        }
    }
}

impl BridgedHttp {
    /// The address the app serves, as it reported it.
    pub fn serving(&self) -> &str {
        &self.serving
    }

    /// Resolves when the app closed the bridge (it quit, or stopped serving the listener).
    pub async fn closed(&mut self) {
        let mut byte = [0u8; 1];
        // The app sends nothing more; a byte is treated as the end as well.
        let _ = self.reader.read(&mut byte).await;
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
    use super::{BRIDGE_VERSION, BridgeCode, BridgeMode, Hello};

    #[test]
    fn the_stdio_hello_is_what_every_release_sent_and_the_http_hello_adds_its_mode() {
        let stdio = Hello {
            gatehouse_bridge: BRIDGE_VERSION,
            mode: None,
            client: Some("claude_code".into()),
            startup_wait_ms: Some(10000),
            server: None,
        };
        assert_eq!(
            serde_json::to_string(&stdio).unwrap(),
            r#"{"gatehouse_bridge":1,"client":"claude_code","startup_wait_ms":10000}"#
        );
        let http = Hello {
            gatehouse_bridge: BRIDGE_VERSION,
            mode: Some(BridgeMode::Http),
            client: None,
            startup_wait_ms: Some(0),
            server: Some("demo".into()),
        };
        assert_eq!(
            serde_json::to_string(&http).unwrap(),
            r#"{"gatehouse_bridge":1,"mode":"http","startup_wait_ms":0,"server":"demo"}"#
        );
    }

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
