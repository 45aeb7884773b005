//! Helpers shared by the integration tests: spawn the real binary and talk to it by hand.

#![allow(dead_code)] // Each test crate uses a different subset.

use std::{
    io::{BufRead, BufReader, Read, Write},
    process::{Child, ChildStdin, Command, ExitStatus, Stdio},
    sync::{
        Arc, Mutex,
        mpsc::{self, Receiver, RecvTimeoutError},
    },
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_gatehouse-demo-server");

/// Long enough for a loaded 2-core CI box, short enough that a hang fails the test.
pub const TIMEOUT: Duration = Duration::from_secs(20);

pub const LEGACY: &str = "2025-11-25";
pub const MODERN: &str = "2026-07-28";

/// Every tool, in the order `tools/list` gives them (by name).
pub const ALL_TOOLS: [&str; 10] = [
    "add",
    "ask_password",
    "book_table",
    "connect_account",
    "connect_account_required",
    "echo",
    "fail",
    "open_link",
    "slow",
    "spoof_completion",
];

/// Environment variables the server reads; cleared so the caller's settings cannot leak in.
pub const SERVER_ENV: [&str; 4] = [
    "GATEHOUSE_DEMO_ERA",
    "GATEHOUSE_DEMO_PAGE_SIZE",
    "GATEHOUSE_DEMO_ATTESTATION",
    "GATEHOUSE_DEMO_PAGE_HITS",
];

/// The per-request `_meta` a 2026-07-28 client sends instead of `initialize`.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "demo-server-tests", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// `modern_meta()` with extra keys merged in (e.g. a progress token).
pub fn modern_meta_with(extra: Value) -> Value {
    let mut meta = modern_meta();
    let (Value::Object(meta_map), Value::Object(extra)) = (&mut meta, extra) else {
        panic!("meta must be an object");
    };
    meta_map.extend(extra);
    meta
}

pub fn initialize_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "demo-server-tests", "version": "0"},
    })
}

/// The text of the single text block of a tool result.
pub fn only_text(result: &Value) -> &str {
    let content = result["content"].as_array().expect("content array");
    assert_eq!(content.len(), 1, "one content block in {result}");
    assert_eq!(content[0]["type"], "text", "text block in {result}");
    content[0]["text"].as_str().expect("text string")
}

pub fn tool_names(list_result: &Value) -> Vec<String> {
    list_result["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .map(|tool| tool["name"].as_str().expect("tool name").to_owned())
        .collect()
}

/// Collects a child's stderr so failures can show the server's logs.
fn collect(mut stream: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let buffer = Arc::new(Mutex::new(String::new()));
    let sink = buffer.clone();
    thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stream.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
    buffer
}

/// Forwards stdout lines over a channel so reads can time out.
fn line_reader(stream: impl Read + Send + 'static) -> Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

fn wait_with_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// The demo server on stdio, driven with newline-delimited JSON-RPC.
pub struct StdioServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
    /// Messages that arrived while waiting for a response with another id.
    pub unsolicited: Vec<Value>,
}

impl StdioServer {
    pub fn spawn(args: &[&str]) -> Self {
        Self::spawn_with_env(args, &[])
    }

    pub fn spawn_with_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(BIN);
        command.args(args);
        for key in SERVER_ENV {
            command.env_remove(key);
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("spawn gatehouse-demo-server");
        let stdin = child.stdin.take();
        let stdout = line_reader(child.stdout.take().expect("stdout"));
        let stderr = collect(child.stderr.take().expect("stderr"));
        Self {
            child,
            stdin,
            stdout,
            stderr,
            next_id: 0,
            unsolicited: Vec::new(),
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{message}").expect("write to server stdin");
        stdin.flush().expect("flush server stdin");
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Send a request and return its id without waiting.
    pub fn start(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next stdout message, or `None` if none arrives within `timeout`.
    ///
    /// Every stdout line must be JSON-RPC: stdout is reserved for the protocol.
    pub fn try_next(&mut self, timeout: Duration) -> Option<Value> {
        match self.stdout.recv_timeout(timeout) {
            Ok(line) => {
                let message: Value = serde_json::from_str(&line).unwrap_or_else(|error| {
                    panic!(
                        "stdout carried a non-JSON line {line:?} ({error}); stderr:\n{}",
                        self.stderr()
                    )
                });
                assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC: {line}");
                Some(message)
            }
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    pub fn next(&mut self) -> Value {
        self.try_next(TIMEOUT)
            .unwrap_or_else(|| panic!("no message from the server; stderr:\n{}", self.stderr()))
    }

    /// Wait for the response to request `id`, keeping everything else in `unsolicited`.
    pub fn response(&mut self, id: u64) -> Value {
        loop {
            let message = self.next();
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
            self.unsolicited.push(message);
        }
    }

    /// Send a request and wait for its full response message (`result` or `error`).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params);
        self.response(id)
    }

    /// Send a request that must succeed and return its `result`.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// Send a request that must fail and return its `error`.
    pub fn call_err(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(
            response.get("result").is_none(),
            "{method} should fail: {response}"
        );
        response["error"].clone()
    }

    /// Run the 2025-11-25 handshake.
    pub fn initialize(&mut self) -> Value {
        let result = self.call("initialize", initialize_params(LEGACY));
        self.notify("notifications/initialized", json!({}));
        result
    }

    /// Close stdin and wait for the process to exit.
    pub fn close(mut self) -> ExitStatus {
        self.stdin.take();
        self.wait()
    }

    pub fn wait(&mut self) -> ExitStatus {
        wait_with_timeout(&mut self.child, TIMEOUT)
            .unwrap_or_else(|| panic!("server did not exit; stderr:\n{}", self.stderr()))
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The demo server on Streamable HTTP.
pub struct HttpServer {
    child: Child,
    stdout: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    /// The endpoint the server announced, e.g. `http://127.0.0.1:41234/mcp`.
    pub url: String,
    /// The exact line it printed.
    pub listening_line: String,
}

impl HttpServer {
    pub fn spawn(args: &[&str]) -> Self {
        Self::spawn_with_env(args, &[])
    }

    pub fn spawn_with_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(BIN);
        command.args(["--http", "127.0.0.1:0"]).args(args);
        for key in SERVER_ENV {
            command.env_remove(key);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("spawn gatehouse-demo-server --http");
        let stdout = line_reader(child.stdout.take().expect("stdout"));
        let stderr = collect(child.stderr.take().expect("stderr"));
        let listening_line = match stdout.recv_timeout(TIMEOUT) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("no listening line; stderr:\n{}", stderr.lock().unwrap());
            }
        };
        let url = listening_line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {listening_line:?}"))
            .to_owned();
        Self {
            child,
            stdout,
            stderr,
            url,
            listening_line,
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The origin the server listens at, e.g. `http://127.0.0.1:41234`.
    pub fn origin(&self) -> &str {
        self.url
            .strip_suffix("/mcp")
            .unwrap_or_else(|| panic!("endpoint {:?} does not end with /mcp", self.url))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Wait for exit, returning the status and every stdout line after the listening line.
    pub fn wait(&mut self) -> (ExitStatus, Vec<String>) {
        let status = wait_with_timeout(&mut self.child, TIMEOUT)
            .unwrap_or_else(|| panic!("server did not exit; stderr:\n{}", self.stderr()));
        let rest = self.stdout.try_iter().collect();
        (status, rest)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP exchange with the MCP endpoint, with the body decoded into JSON-RPC messages.
#[derive(Debug)]
pub struct Exchange {
    pub status: u16,
    pub content_type: String,
    pub session_id: Option<String>,
    /// Every JSON-RPC message in the body, in order (one for JSON, any number for SSE).
    pub messages: Vec<Value>,
}

impl Exchange {
    /// The single response message (the last message, which must carry an id).
    pub fn response(&self) -> &Value {
        let last = self.messages.last().expect("a response message");
        assert!(
            last.get("id").is_some(),
            "last message is not a response: {last}"
        );
        last
    }

    pub fn result(&self) -> &Value {
        let response = self.response();
        assert!(
            response.get("error").is_none(),
            "unexpected error: {response}"
        );
        &response["result"]
    }

    pub fn error(&self) -> &Value {
        let response = self.response();
        assert!(
            response.get("result").is_none(),
            "unexpected result: {response}"
        );
        &response["error"]
    }
}

/// A small client for the MCP endpoint: POSTs one JSON-RPC message and decodes the answer.
pub struct HttpClient {
    client: reqwest::Client,
    url: String,
}

impl HttpClient {
    pub fn new(url: &str) -> Self {
        Self {
            client: reqwest::Client::builder()
                .timeout(TIMEOUT)
                .build()
                .expect("reqwest client"),
            url: url.to_owned(),
        }
    }

    pub async fn post(&self, body: &Value, headers: &[(&str, &str)]) -> Exchange {
        let mut request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .json(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("POST to the MCP endpoint");
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header("content-type").unwrap_or_default();
        let session_id = header("mcp-session-id");
        let text = response.text().await.expect("response body");
        let messages = if content_type.starts_with("text/event-stream") {
            sse_messages(&text)
        } else if content_type.starts_with("application/json") {
            vec![serde_json::from_str(&text).expect("JSON body")]
        } else {
            Vec::new()
        };
        Exchange {
            status,
            content_type,
            session_id,
            messages,
        }
    }

    /// A 2026-07-28 request: `_meta` in the body and the matching SEP-2243 headers.
    pub async fn modern(&self, id: u64, method: &str, mut params: Value) -> Exchange {
        params
            .as_object_mut()
            .expect("params object")
            .entry("_meta")
            .or_insert_with(modern_meta);
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut headers = vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)];
        if let Some(name) = name.as_deref() {
            headers.push(("Mcp-Name", name));
        }
        self.post(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            &headers,
        )
        .await
    }

    /// A request inside a 2025-11-25 session.
    pub async fn in_session(
        &self,
        session: &str,
        id: u64,
        method: &str,
        params: Value,
    ) -> Exchange {
        self.post(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            &[
                ("Mcp-Session-Id", session),
                ("MCP-Protocol-Version", LEGACY),
            ],
        )
        .await
    }
}

/// Decode the `data:` payloads of an SSE body, skipping empty priming events.
pub fn sse_messages(body: &str) -> Vec<Value> {
    body.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|data| data.strip_prefix(' ').unwrap_or(data))
                .collect();
            let data = data.join("\n");
            (!data.trim().is_empty())
                .then(|| serde_json::from_str(&data).expect("SSE data is JSON"))
        })
        .collect()
}
