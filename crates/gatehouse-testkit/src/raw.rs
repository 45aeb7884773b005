//! A raw MCP client over a child process's stdio: newline-delimited JSON-RPC written and read
//! byte for byte, as an AI client speaks it, so a test can send what no SDK would (a line
//! that is not JSON, a huge one, a request of another era) and see every line that comes back.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long the client waits for a line before failing the test: far beyond any answer, so
/// reaching it means the answer never comes.
const WAIT: Duration = Duration::from_secs(60);

/// A child process spoken to over its stdin and stdout; killed when dropped.
pub struct RawClient {
    pub child: Child,
    /// `None` once [`RawClient::close_stdin`] closed it.
    pub stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl RawClient {
    /// Starts `command` with piped stdin and stdout (stderr discarded); nothing is said yet.
    pub fn spawn(mut command: Command) -> RawClient {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().expect("the client's server starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = std::sync::mpsc::channel();
        // Lines are read on a thread of their own so a wait can be bounded.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        RawClient {
            child,
            stdin,
            lines,
        }
    }

    /// [`RawClient::spawn`], then the 2025-11-25 handshake as client `name`: `initialize` (id
    /// 1, its answer awaited) and `notifications/initialized`.
    pub fn initialized(command: Command, name: &str) -> RawClient {
        let mut client = RawClient::spawn(command);
        client.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": name, "version": "0"}}),
        );
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    /// Writes `line` and a newline, as is.
    pub fn send_line(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        stdin.write_all(line).expect("the server reads its stdin");
        stdin.write_all(b"\n").expect("the server reads its stdin");
        stdin.flush().expect("the server reads its stdin");
    }

    /// Writes `message` as one line.
    pub fn send(&mut self, message: &Value) {
        self.send_line(message.to_string().as_bytes());
    }

    /// Closes the child's stdin, as a client that leaves does.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// The next line the child writes, as it wrote it.
    pub fn next_line(&mut self) -> String {
        self.lines
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("no message within {} s", WAIT.as_secs()))
    }

    /// The next message the child writes.
    pub fn next_message(&mut self) -> Value {
        let line = self.next_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// The response to request `id`; other messages are skipped, each line seen by `inspect`
    /// first.
    pub fn answer_inspecting(&mut self, id: u64, mut inspect: impl FnMut(&str)) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to request {id}"));
            inspect(&line);
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// The response to request `id` (notifications and other responses are skipped).
    pub fn answer(&mut self, id: u64) -> Value {
        self.answer_inspecting(id, |_| {})
    }

    /// Sends request `id` (`method` with `params`) and returns the response to it.
    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(id)
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cat` answers every line with itself: a request is its own response.
    #[test]
    fn a_request_is_answered_by_the_line_with_its_id_and_other_lines_are_skipped() {
        let mut client = RawClient::spawn(Command::new("cat"));
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/x"}));
        client.send_line(b"{\"id\": 7, \"other\": true}");
        let mut seen = Vec::new();
        client.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {}}));
        let answer = client.answer_inspecting(3, |line| seen.push(line.to_string()));
        assert_eq!(answer["method"], "ping");
        assert_eq!(seen.len(), 3, "{seen:?}");
        client.send_line(b"not json");
        assert_eq!(client.next_line(), "not json");
        client.close_stdin();
        assert!(client.child.wait().unwrap().success());
    }
}
