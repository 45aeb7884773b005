//! The stdio transport: a child process speaking newline-delimited JSON-RPC.
//!
//! Written here rather than taken from rmcp's `TokioChildProcess` because the host needs
//! control rmcp does not offer: a size limit per line ([`crate::MAX_MESSAGE_BYTES`]), a clear
//! fault for a line that is not UTF-8, not JSON, or not JSON-RPC (the connection ends, the host
//! goes on), stderr captured to a per-server log (capped and rotated) and never treated as an
//! error, the child in a session of its own with no controlling terminal (a Ctrl-C at the
//! terminal reaches the host, which then cancels properly, and the server cannot read or draw on
//! the terminal), and the spec's shutdown: close stdin, then SIGTERM, then SIGKILL.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::ServerJsonRpcMessage;
use rmcp::service::TxJsonRpcMessage;
use rmcp::transport::Transport;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, watch};

use crate::{HostError, MAX_MESSAGE_BYTES};

mod frame;
pub use frame::{Frame, Framer, LineFault, classify_line};

/// What the host learned about why a transport stopped working. The first fault wins: later
/// ones are consequences.
#[derive(Debug, Default)]
pub struct TransportState {
    fault: Mutex<Option<String>>,
    stderr_tail: Mutex<VecDeque<String>>,
    /// Bytes written to the server (stdio: its stdin). Lets tests prove a denied call sent
    /// nothing.
    bytes_sent: std::sync::atomic::AtomicU64,
}

const STDERR_TAIL_LINES: usize = 20;

impl TransportState {
    pub fn set_fault(&self, fault: impl Into<String>) {
        let mut slot = self.fault.lock().expect("fault poisoned");
        if slot.is_none() {
            *slot = Some(fault.into());
        }
    }
    pub fn fault(&self) -> Option<String> {
        self.fault.lock().expect("fault poisoned").clone()
    }
    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr_tail
            .lock()
            .expect("stderr poisoned")
            .iter()
            .cloned()
            .collect()
    }
    /// Bytes written to the server so far.
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn push_stderr(&self, line: String) {
        let mut tail = self.stderr_tail.lock().expect("stderr poisoned");
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

/// How to run a stdio server. Secrets in `env` are already resolved.
#[derive(Debug, Clone)]
pub struct StdioLaunch {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// Where the server's stderr is appended; `None` keeps only the in-memory tail.
    pub stderr_log: Option<PathBuf>,
    /// How long to wait after closing stdin, and again after SIGTERM.
    pub grace: Duration,
    /// Variables of the host's own environment the server must not inherit (a package
    /// server: what would add to its module path), by name and by prefix.
    pub env_remove: Vec<String>,
    pub env_remove_prefixes: Vec<String>,
}

pub struct StdioTransport {
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    /// `None` once stdout ended or broke the rules; the fault is in `state`.
    stdout: Option<FrameReader<BufReader<ChildStdout>>>,
    line_number: u64,
    /// The line the last message was parsed from, until the tap takes it.
    received_text: Option<String>,
    state: Arc<TransportState>,
    shutdown: Option<oneshot::Sender<()>>,
    exited: watch::Receiver<Option<ExitStatus>>,
}

impl StdioTransport {
    /// Starts the server. The returned state reports faults and the stderr tail.
    pub fn spawn(
        server: &str,
        launch: &StdioLaunch,
    ) -> Result<(StdioTransport, Arc<TransportState>), HostError> {
        let spawn_error = |detail: String| HostError::Spawn {
            server: server.to_string(),
            command: launch.command.clone(),
            detail,
        };
        // The server runs in a session of its own, so it has no controlling terminal: it cannot
        // draw on or type into the terminal where the CLI asks for consent, and a Ctrl-C there
        // reaches the host (which cancels properly), not the server. std has no safe setsid and
        // the workspace forbids unsafe code, so util-linux's `setsid` calls it and then execs the
        // program in place: same PID, same file.
        let setsid = SETSID
            .iter()
            .map(Path::new)
            .find(|p| p.is_file())
            .ok_or_else(|| {
                spawn_error(
                    "setsid (util-linux) is missing; Gatehouse needs it to start stdio servers without access to your terminal".into(),
                )
            })?;
        // What `setsid` would fail to exec is reported here, in the user's terms.
        if let Err(detail) = crate::admission::resolve_launch_program(
            &launch.command,
            launch.cwd.as_deref(),
            &launch.env,
        ) {
            return Err(spawn_error(format!(
                "{detail}; is it installed and on PATH (or give an absolute path)?"
            )));
        }
        let mut command = Command::new(setsid);
        for (key, _) in std::env::vars_os() {
            let name = key.to_string_lossy();
            if launch.env_remove.iter().any(|k| *k == name)
                || launch
                    .env_remove_prefixes
                    .iter()
                    .any(|p| name.starts_with(p.as_str()))
            {
                command.env_remove(&key);
            }
        }
        command
            .arg("--")
            .arg(&launch.command)
            .args(&launch.args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(cwd) = &launch.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().map_err(|e| HostError::Spawn {
            server: server.to_string(),
            command: launch.command.clone(),
            detail: match e.kind() {
                std::io::ErrorKind::NotFound => {
                    format!("{e}; is it installed and on PATH (or give an absolute path)?")
                }
                _ => e.to_string(),
            },
        })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let state = Arc::new(TransportState::default());

        let log = launch
            .stderr_log
            .as_ref()
            .and_then(|path| match StderrLog::open(path, MAX_STDERR_LOG_BYTES) {
                Ok(log) => Some(log),
                Err(error) => {
                    tracing::warn!(%error, path = %path.display(), "cannot open the server's stderr log; keeping only the last lines in memory");
                    None
                }
            });
        tokio::spawn(copy_stderr(stderr, log, state.clone()));

        let (exit_tx, exited) = watch::channel(None);
        let (shutdown_tx, shutdown_rx) = oneshot::channel();
        let stdin = Arc::new(tokio::sync::Mutex::new(Some(stdin)));
        tokio::spawn(reap(
            child,
            stdin.clone(),
            shutdown_rx,
            exit_tx,
            launch.grace,
        ));

        // stdout is read in `receive` itself, not by a task of its own: a hand-over per message
        // would cost a cross-thread wake-up on every round trip.
        let transport = StdioTransport {
            stdin,
            stdout: Some(FrameReader::new(BufReader::new(stdout), MAX_MESSAGE_BYTES)),
            line_number: 0,
            received_text: None,
            state: state.clone(),
            shutdown: Some(shutdown_tx),
            exited,
        };
        Ok((transport, state))
    }
}

/// Where `setsid` is looked for (util-linux; Essential on Debian).
const SETSID: [&str; 2] = ["/usr/bin/setsid", "/bin/setsid"];

/// Each server's stderr log is at most this large; then it is rotated once to `<log>.1`, so a
/// server that floods stderr holds at most twice this on the disk the audit log needs.
pub const MAX_STDERR_LOG_BYTES: u64 = 10 * 1024 * 1024;

/// A stderr log file with a size cap and one rotated predecessor.
struct StderrLog {
    path: PathBuf,
    file: std::fs::File,
    written: u64,
    cap: u64,
}

impl StderrLog {
    fn open(path: &Path, cap: u64) -> std::io::Result<StderrLog> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let written = file.metadata()?.len();
        Ok(StderrLog {
            path: path.to_path_buf(),
            file,
            written,
            cap,
        })
    }

    fn write_line(&mut self, text: &str) -> std::io::Result<()> {
        let bytes = text.len() as u64 + 1;
        if self.written + bytes > self.cap && self.written > 0 {
            let mut rotated = self.path.clone().into_os_string();
            rotated.push(".1");
            std::fs::rename(&self.path, &rotated)?;
            self.file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
            let note = format!(
                "[gatehouse: the log reached {} bytes; the earlier part is in {}]",
                self.cap,
                Path::new(&rotated).display()
            );
            writeln!(self.file, "{note}")?;
            self.written = note.len() as u64 + 1;
        }
        writeln!(self.file, "{text}")?;
        self.written += bytes;
        Ok(())
    }
}

/// The in-memory tail keeps at most this much of each line.
const STDERR_TAIL_LINE_BYTES: usize = 4096;

async fn copy_stderr(
    stderr: tokio::process::ChildStderr,
    mut log: Option<StderrLog>,
    state: Arc<TransportState>,
) {
    // Bounded like stdout, so a server cannot make the host buffer without limit here either.
    // The pipe is always drained, whether or not the log can be written.
    let mut frames = FrameReader::new(BufReader::new(stderr), 64 * 1024);
    while let Ok(Some(frame)) = frames.next().await {
        let text = match frame {
            Frame::Line(line) => String::from_utf8_lossy(&line).trim_end().to_string(),
            Frame::TooLong => "[a stderr line over 64 KiB was skipped]".to_string(),
        };
        if let Some(file) = &mut log
            && let Err(error) = file.write_line(&text)
        {
            tracing::warn!(%error, "cannot write the server's stderr log; keeping only the last lines in memory");
            log = None;
        }
        let mut tail = text;
        if tail.len() > STDERR_TAIL_LINE_BYTES {
            let mut cut = STDERR_TAIL_LINE_BYTES;
            while !tail.is_char_boundary(cut) {
                cut -= 1;
            }
            tail.truncate(cut);
            tail.push_str(" …");
        }
        state.push_stderr(tail);
    }
}

async fn reap(
    mut child: Child,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    shutdown: oneshot::Receiver<()>,
    exit_tx: watch::Sender<Option<ExitStatus>>,
    grace: Duration,
) {
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        _ = shutdown => {
            stdin.lock().await.take();
            match tokio::time::timeout(grace, child.wait()).await {
                Ok(status) => status.ok(),
                Err(_) => {
                    if let Some(pid) = child.id() {
                        let _ = nix::sys::signal::kill(
                            nix::unistd::Pid::from_raw(pid as i32),
                            nix::sys::signal::Signal::SIGTERM,
                        );
                    }
                    match tokio::time::timeout(grace, child.wait()).await {
                        Ok(status) => status.ok(),
                        Err(_) => {
                            let _ = child.start_kill();
                            child.wait().await.ok()
                        }
                    }
                }
            }
        }
    };
    let _ = exit_tx.send(status);
}

/// Reads bounded frames. Cancel-safe: the only await is `fill_buf`, which consumes nothing,
/// and every bit of state lives in the framer, so a `receive` dropped by rmcp's `select!` loses
/// nothing.
struct FrameReader<R> {
    reader: R,
    framer: Framer,
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    fn new(reader: R, max: usize) -> Self {
        FrameReader {
            reader,
            framer: Framer::new(max),
        }
    }

    /// The next frame, or `None` at end of input.
    async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                return Ok(self.framer.finish());
            }
            let (used, frame) = self.framer.feed(available);
            self.reader.consume(used);
            if frame.is_some() {
                return Ok(frame);
            }
        }
    }
}

impl StdioTransport {
    /// The next message from stdout; `None` once stdout ended or broke the rules, with the
    /// reason recorded in the transport state.
    async fn next_message(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let frame = self.stdout.as_mut()?.next().await;
            self.line_number += 1;
            let number = self.line_number;
            let line = match frame {
                Ok(Some(Frame::Line(line))) => line,
                Ok(None) => return self.ended().await,
                Ok(Some(Frame::TooLong)) => {
                    return self.fail(format!(
                        "sent a message (stdout line {number}) over the {} MiB limit; the connection was closed",
                        MAX_MESSAGE_BYTES / (1024 * 1024)
                    ));
                }
                Err(e) => return self.fail(format!("reading stdout failed: {e}")),
            };
            match classify_line(&line) {
                Ok(None) => continue,
                Ok(Some(message)) => {
                    // `classify_line` checked it is UTF-8; kept (trimmed) for the tap.
                    self.received_text =
                        String::from_utf8(line).ok().map(|text| match text.trim() {
                            trimmed if trimmed.len() == text.len() => text,
                            trimmed => trimmed.to_string(),
                        });
                    return Some(message);
                }
                Err(fault) => return self.fail(fault.describe(number)),
            }
        }
    }

    fn fail(&mut self, fault: String) -> Option<ServerJsonRpcMessage> {
        self.state.set_fault(fault);
        self.stdout = None;
        None
    }

    /// End of stdout: the server closed it or exited. Give the reaper a moment to learn how.
    async fn ended(&mut self) -> Option<ServerJsonRpcMessage> {
        let status = tokio::time::timeout(
            Duration::from_secs(2),
            self.exited.wait_for(Option::is_some),
        )
        .await
        .ok()
        .and_then(|r| r.ok().and_then(|s| *s));
        self.fail(match status {
            Some(status) => format!("the server process exited ({status})"),
            None => "the server closed its stdout".to_string(),
        })
    }
}

impl StdioTransport {
    /// The line the last message `receive` returned was parsed from, once: the tap records it
    /// instead of serializing the message again.
    pub(crate) fn take_received_text(&mut self) -> Option<String> {
        self.received_text.take()
    }

    /// Writes one line (`line` ends with its newline) to the server's stdin.
    pub(crate) fn write_line(
        &self,
        line: Vec<u8>,
    ) -> impl Future<Output = Result<(), std::io::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        let state = self.state.clone();
        async move {
            let mut guard = stdin.lock().await;
            let pipe = guard.as_mut().ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the server's stdin is closed",
                )
            })?;
            pipe.write_all(&line).await?;
            state
                .bytes_sent
                .fetch_add(line.len() as u64, std::sync::atomic::Ordering::SeqCst);
            pipe.flush().await
        }
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let write = line.map(|line| self.write_line(line));
        async move { write.map_err(std::io::Error::other)?.await }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.next_message()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        let _ = self.exited.wait_for(Option::is_some).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_are_bounded_and_stay_in_step() {
        let data: &[u8] = b"short\nthis line is too long\nok\nlast";
        let mut frames = FrameReader::new(BufReader::with_capacity(4, data), 10);
        assert_eq!(
            frames.next().await.unwrap(),
            Some(Frame::Line(b"short".to_vec()))
        );
        assert_eq!(frames.next().await.unwrap(), Some(Frame::TooLong));
        assert_eq!(
            frames.next().await.unwrap(),
            Some(Frame::Line(b"ok".to_vec()))
        );
        assert_eq!(
            frames.next().await.unwrap(),
            Some(Frame::Line(b"last".to_vec()))
        );
        assert_eq!(frames.next().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_cancelled_read_loses_nothing() {
        // A reader that delivers a line in pieces, with pauses: dropping `next()` mid-line and
        // calling it again must still yield the whole line.
        let (client, mut server) = tokio::io::duplex(64);
        let mut frames = FrameReader::new(BufReader::new(client), 100);
        use tokio::io::AsyncWriteExt;
        server.write_all(b"{\"par").await.unwrap();
        let first = tokio::time::timeout(Duration::from_millis(20), frames.next()).await;
        assert!(first.is_err(), "no complete line yet");
        server.write_all(b"tial\": 1}\n").await.unwrap();
        assert_eq!(
            frames.next().await.unwrap(),
            Some(Frame::Line(b"{\"partial\": 1}".to_vec()))
        );
    }

    /// Feeds `data` to a framer in pieces of at most `piece` bytes, as a reader would.
    fn frames(data: &[u8], piece: usize, max: usize) -> Vec<Frame> {
        let mut framer = Framer::new(max);
        let mut out = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            let (used, frame) = framer.feed(&rest[..piece.min(rest.len())]);
            rest = &rest[used..];
            out.extend(frame);
        }
        out.extend(framer.finish());
        out
    }

    #[test]
    fn framing_does_not_depend_on_how_the_bytes_arrive() {
        let data: &[u8] = b"{\"a\":1}\r\n\nthis line is too long\nok\nlast one is too long";
        let whole = frames(data, data.len(), 10);
        assert_eq!(
            whole,
            [
                Frame::Line(b"{\"a\":1}\r".to_vec()),
                Frame::Line(Vec::new()),
                Frame::TooLong,
                Frame::Line(b"ok".to_vec()),
                Frame::TooLong,
            ]
        );
        for piece in 1..data.len() {
            assert_eq!(frames(data, piece, 10), whole, "pieces of {piece} bytes");
        }
    }

    #[test]
    fn each_kind_of_line_is_told_apart() {
        assert!(matches!(classify_line(b" \t\r"), Ok(None)));
        let message = classify_line(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r");
        assert!(matches!(message, Ok(Some(_))), "{message:?}");
        let fault = classify_line(b"ok \xff}").unwrap_err();
        assert_eq!(fault, LineFault::NotUtf8 { valid_up_to: 3 });
        assert!(
            fault
                .describe(7)
                .contains("invalid UTF-8 on stdout (line 7, byte 3)")
        );
        let fault = classify_line(b"{\"hello\": 1}").unwrap_err();
        assert!(matches!(fault, LineFault::NotJsonRpc { .. }), "{fault:?}");
        let fault = classify_line(b"Server started on port 3000").unwrap_err();
        assert_eq!(
            fault.describe(1),
            "wrote a line that is not JSON on stdout (line 1): \"Server started on port 3000\"; stdout is reserved for MCP messages (logs belong on stderr), so the connection was closed"
        );
    }

    #[test]
    fn first_fault_wins() {
        let state = TransportState::default();
        state.set_fault("first");
        state.set_fault("second");
        assert_eq!(state.fault().as_deref(), Some("first"));
    }
}
