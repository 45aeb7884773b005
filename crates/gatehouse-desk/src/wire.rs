//! The window's connection to the background host: `$XDG_RUNTIME_DIR/gatehouse/desk.sock`,
//! newline-delimited JSON. The window says hello (`{"gatehouse_desk":1,"role":"window"}`), the
//! host answers (`{"gatehouse_desk":1,"accepted":{"pid":N,"version":"…"}}` or
//! `{"gatehouse_desk":1,"error":{code,message}}` and closes); then requests
//! `{"id":N,"command":"…","args":{…}}` get `{"id":N,"ok":…}` or `{"id":N,"err":{code,message}}`
//! in any order (requests run concurrently: a URL wait blocks for long), and the host pushes
//! window events `{"event":"gatehouse://…","payload":{…}}`. Both ends serve only a peer of
//! their own uid (`SO_PEERCRED`). This module has the frames and the window's end.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};

use crate::dispatch::error_value;
use crate::events::WindowEvent;

/// The protocol's version, in both hellos.
pub const WIRE_VERSION: u64 = 1;
/// The longest line either side accepts: tool results carry up to 8 MiB of content, which
/// JSON escaping (and base64) can make several times larger.
pub const MAX_LINE: usize = 32 * 1024 * 1024;
/// The longest hello.
pub const HELLO_LIMIT: usize = 4096;
/// How long a peer has to say hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the window waits for the host's answer to its hello: a host just started binds
/// its socket first and answers once its desk is open.
pub const HOST_READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Requests one connection may have outstanding at once.
pub const MAX_IN_FLIGHT: usize = 256;
/// Events waiting for the window before the reader stops reading (back-pressure).
pub const EVENT_QUEUE: usize = 256;

/// Who connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A window: counted as one (no new window is started while one is connected) and sent
    /// every event.
    Window,
    /// A one-off caller (`gatehouse-desktop --quit`, a test's teardown): sent no events.
    Control,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    pub gatehouse_desk: u64,
    pub role: Role,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Accepted {
    /// The host's process id.
    pub pid: u32,
    /// Its version (the workspace's).
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HelloReply {
    pub gatehouse_desk: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<Accepted>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<WireError>,
}

/// Why the connection failed: a stable code and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for WireError {}

/// Stable codes of connection failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireCode {
    NoRuntimeDir,
    NotRunning,
    Io,
    PeerNotSameUser,
    BadHello,
    VersionMismatch,
    TooManyWindows,
    LineTooLong,
    HostGone,
    TooManyRequests,
}

impl WireCode {
    pub fn as_str(self) -> &'static str {
        match self {
            WireCode::NoRuntimeDir => "desk_no_runtime_dir",
            WireCode::NotRunning => "desk_not_running",
            WireCode::Io => "desk_io",
            WireCode::PeerNotSameUser => "desk_peer_not_same_user",
            WireCode::BadHello => "desk_bad_hello",
            WireCode::VersionMismatch => "desk_version_mismatch",
            WireCode::TooManyWindows => "desk_too_many_windows",
            WireCode::LineTooLong => "desk_line_too_long",
            WireCode::HostGone => "host_gone",
            WireCode::TooManyRequests => "desk_too_many_requests",
        }
    }

    pub fn error(self, message: impl Into<String>) -> WireError {
        WireError {
            code: self.as_str().into(),
            message: message.into(),
        }
    }
}

/// The socket's place under a runtime directory.
pub fn socket_path_in(runtime_dir: &Path) -> PathBuf {
    runtime_dir.join("gatehouse").join("desk.sock")
}

/// The socket's place for this session: under `$XDG_RUNTIME_DIR` (never a shared directory).
pub fn socket_path() -> Result<PathBuf, WireError> {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if Path::new(&dir).is_absolute() => Ok(socket_path_in(Path::new(&dir))),
        _ => Err(WireCode::NoRuntimeDir.error(
            "XDG_RUNTIME_DIR is not set (or not an absolute path): no private place for the \
             window's connection to the Gatehouse host; log in to a desktop session",
        )),
    }
}

/// This process's effective uid: the only peer either end talks to.
pub fn own_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Reads one line of at most `limit` bytes (without its newline). `Ok(None)` at the end of
/// the stream; a longer line is an error, and nothing more is read from the stream.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    limit: usize,
) -> Result<Option<Vec<u8>>, WireError> {
    let mut line = Vec::new();
    loop {
        let buf = reader
            .fill_buf()
            .await
            .map_err(|e| WireCode::Io.error(format!("cannot read: {e}")))?;
        if buf.is_empty() {
            return Ok(if line.is_empty() { None } else { Some(line) });
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        let body = if done { take - 1 } else { take };
        if line.len() + body > limit {
            return Err(WireCode::LineTooLong.error(format!(
                "a line longer than {limit} bytes; the connection is closed"
            )));
        }
        line.extend_from_slice(&buf[..body]);
        reader.consume(take);
        if done {
            return Ok(Some(line));
        }
    }
}

/// Writes `value` as one line.
pub async fn write_line<W: AsyncWrite + Unpin>(
    writer: &mut W,
    value: &impl Serialize,
) -> Result<(), WireError> {
    let mut bytes =
        serde_json::to_vec(value).map_err(|e| WireCode::Io.error(format!("cannot encode: {e}")))?;
    bytes.push(b'\n');
    writer
        .write_all(&bytes)
        .await
        .map_err(|e| WireCode::Io.error(format!("cannot write: {e}")))?;
    writer
        .flush()
        .await
        .map_err(|e| WireCode::Io.error(format!("cannot write: {e}")))
}

/// What the window's end hears besides replies.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard {
    Event(WindowEvent),
    /// The connection ended; why, in words for the banner.
    Closed(String),
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, Value>>>>>;

/// The window's end of a connection to the background host.
#[derive(Clone)]
pub struct DeskClient {
    out: mpsc::Sender<Vec<u8>>,
    pending: Pending,
    next: Arc<AtomicU64>,
    accepted: Accepted,
}

impl DeskClient {
    /// Connects to the host at `path` as `role`: checks that the host runs as this user, says
    /// hello, and starts reading. Events (and the end of the connection) arrive on the
    /// returned receiver, which must be drained.
    pub async fn connect(
        path: &Path,
        role: Role,
    ) -> Result<(DeskClient, mpsc::Receiver<Heard>), WireError> {
        let stream = UnixStream::connect(path)
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
                    WireCode::NotRunning.error(format!(
                        "no Gatehouse host listens at {}: {e}",
                        path.display()
                    ))
                }
                _ => WireCode::Io.error(format!("cannot connect to {}: {e}", path.display())),
            })?;
        let peer = stream
            .peer_cred()
            .map_err(|e| WireCode::Io.error(format!("cannot read the host's credentials: {e}")))?
            .uid();
        if peer != own_uid() {
            return Err(WireCode::PeerNotSameUser.error(format!(
                "the process at {} runs as uid {peer}, not as you (uid {}); not using it",
                path.display(),
                own_uid()
            )));
        }
        let (read, mut write) = stream.into_split();
        let mut read = BufReader::new(read);
        write_line(
            &mut write,
            &Hello {
                gatehouse_desk: WIRE_VERSION,
                role,
            },
        )
        .await?;
        let reply = tokio::time::timeout(HOST_READY_TIMEOUT, read_line(&mut read, HELLO_LIMIT))
            .await
            .map_err(|_| {
                WireCode::BadHello.error(format!(
                    "the host did not answer the hello within {} s",
                    HOST_READY_TIMEOUT.as_secs()
                ))
            })??
            .ok_or_else(|| WireCode::BadHello.error("the host closed without answering"))?;
        let reply: HelloReply = serde_json::from_slice(&reply)
            .map_err(|e| WireCode::BadHello.error(format!("the host's hello is not one: {e}")))?;
        if let Some(error) = reply.error {
            return Err(error);
        }
        if reply.gatehouse_desk != WIRE_VERSION {
            return Err(WireCode::VersionMismatch.error(format!(
                "the host speaks version {} of the window protocol, this window {WIRE_VERSION}; \
                 quit Gatehouse and start it again",
                reply.gatehouse_desk
            )));
        }
        let accepted = reply
            .accepted
            .ok_or_else(|| WireCode::BadHello.error("the host's hello accepts nothing"))?;
        let (out, mut outgoing) = mpsc::channel::<Vec<u8>>(MAX_IN_FLIGHT);
        let (heard, hearing) = mpsc::channel(EVENT_QUEUE);
        let pending: Pending = Arc::default();
        tokio::spawn(async move {
            while let Some(line) = outgoing.recv().await {
                if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
                    break;
                }
            }
        });
        let reading = pending.clone();
        tokio::spawn(async move {
            let why = loop {
                match read_line(&mut read, MAX_LINE).await {
                    Ok(Some(line)) => match serde_json::from_slice::<Value>(&line) {
                        Ok(frame) => {
                            if let Some(event) = frame.get("event") {
                                let _ = event;
                                match serde_json::from_value::<WindowEvent>(frame) {
                                    Ok(event) => {
                                        if heard.send(Heard::Event(event)).await.is_err() {
                                            break "the window stopped listening".to_string();
                                        }
                                    }
                                    Err(e) => {
                                        tracing::warn!(%e, "the host sent an event that is not one")
                                    }
                                }
                            } else if let Some(id) = frame.get("id").and_then(Value::as_u64) {
                                let outcome = match (frame.get("ok"), frame.get("err")) {
                                    (Some(ok), None) => Ok(ok.clone()),
                                    (None, Some(err)) => Err(err.clone()),
                                    _ => Err(error_value(
                                        WireCode::Io.as_str(),
                                        "the host's reply has neither ok nor err",
                                    )),
                                };
                                let waiter = reading.lock().ok().and_then(|mut p| p.remove(&id));
                                if let Some(waiter) = waiter {
                                    let _ = waiter.send(outcome);
                                }
                            }
                        }
                        Err(e) => tracing::warn!(%e, "the host sent a line that is not JSON"),
                    },
                    Ok(None) => break "the Gatehouse host closed the connection".to_string(),
                    Err(error) => break error.to_string(),
                }
            };
            // Every request still waiting learns that no answer will come.
            let waiting: Vec<_> = reading
                .lock()
                .map(|mut p| p.drain().collect())
                .unwrap_or_default();
            for (_, waiter) in waiting {
                let _ = waiter.send(Err(host_gone(&why)));
            }
            let _ = heard.send(Heard::Closed(why)).await;
        });
        Ok((
            DeskClient {
                out,
                pending,
                next: Arc::new(AtomicU64::new(1)),
                accepted,
            },
            hearing,
        ))
    }

    /// The host's pid and version, from its hello.
    pub fn accepted(&self) -> &Accepted {
        &self.accepted
    }

    /// Runs `command` with `args` on the host's desk; its answer, or `{code, message}`.
    pub async fn call(&self, command: &str, args: Value) -> Result<Value, Value> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self
                .pending
                .lock()
                .map_err(|_| host_gone("the connection's state was lost"))?;
            if pending.len() >= MAX_IN_FLIGHT {
                return Err(error_value(
                    WireCode::TooManyRequests.as_str(),
                    format!(
                        "{MAX_IN_FLIGHT} requests already wait for the Gatehouse host; try again when they end"
                    ),
                ));
            }
            pending.insert(id, tx);
        }
        let mut line = serde_json::to_vec(&json!({"id": id, "command": command, "args": args}))
            .map_err(|e| error_value(WireCode::Io.as_str(), format!("cannot encode: {e}")))?;
        line.push(b'\n');
        if self.out.send(line).await.is_err() {
            if let Ok(mut pending) = self.pending.lock() {
                pending.remove(&id);
            }
            return Err(host_gone("the connection to the Gatehouse host is closed"));
        }
        rx.await
            .unwrap_or_else(|_| Err(host_gone("the connection to the Gatehouse host is closed")))
    }
}

fn host_gone(why: &str) -> Value {
    error_value(
        WireCode::HostGone.as_str(),
        format!("{why}; start Gatehouse again (the window cannot work without its host)"),
    )
}
