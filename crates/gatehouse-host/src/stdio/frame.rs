//! The pure part of the stdio transport: line framing and what a line is. It depends on
//! nothing but rmcp's message types and serde_json, so the fuzz targets (fuzz/) compile this
//! very file without the rest of the host (reqwest, keyring, TLS), keeping their build short.

use rmcp::model::ServerJsonRpcMessage;

/// One `\n`-terminated frame, or the news that a frame was over the limit (its bytes were
/// skipped, so the reader stays in step with the next line).
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    Line(Vec<u8>),
    TooLong,
}

/// The line framing of a server's stdout, as a pure state machine: the async reader only moves
/// bytes into it, so the framing can be tested (and fuzzed) without a process or a runtime.
#[derive(Debug)]
pub struct Framer {
    buf: Vec<u8>,
    discarding: bool,
    max: usize,
}

impl Framer {
    /// A framer for lines of at most `max` bytes (the newline not counted).
    pub fn new(max: usize) -> Framer {
        Framer {
            buf: Vec::new(),
            discarding: false,
            max,
        }
    }

    /// Takes bytes from the front of `available`, never past its first newline: returns how
    /// many it used and the frame they completed, if any. Bytes it used are its own (kept or,
    /// for an over-long line, skipped), so the caller consumes exactly that many.
    pub fn feed(&mut self, available: &[u8]) -> (usize, Option<Frame>) {
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if !self.discarding {
            if self.buf.len() + chunk.len() > self.max {
                self.discarding = true;
                self.buf = Vec::new();
            } else {
                self.buf.extend_from_slice(chunk);
            }
        }
        let Some(at) = newline else {
            return (chunk.len(), None);
        };
        let frame = if std::mem::take(&mut self.discarding) {
            Frame::TooLong
        } else {
            Frame::Line(std::mem::take(&mut self.buf))
        };
        (at + 1, Some(frame))
    }

    /// End of input: the last line if it had no newline (or the news that it was too long).
    pub fn finish(&mut self) -> Option<Frame> {
        if std::mem::take(&mut self.discarding) {
            return Some(Frame::TooLong);
        }
        (!self.buf.is_empty()).then(|| Frame::Line(std::mem::take(&mut self.buf)))
    }
}

/// Why a stdout line ends the connection: MCP's stdio transport carries one UTF-8 JSON-RPC
/// message per line and nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineFault {
    /// Not UTF-8; the first bad byte is at `valid_up_to`.
    NotUtf8 { valid_up_to: usize },
    /// JSON, but not a JSON-RPC message (`error` says why; `excerpt` is the line's start).
    NotJsonRpc { error: String, excerpt: String },
    /// Not JSON at all (a log line on stdout, typically).
    NotJson { excerpt: String },
}

impl LineFault {
    /// The fault as the transport reports it, for stdout line `number`.
    pub fn describe(&self, number: u64) -> String {
        match self {
            LineFault::NotUtf8 { valid_up_to } => format!(
                "wrote invalid UTF-8 on stdout (line {number}, byte {valid_up_to}); MCP messages are UTF-8, so the connection was closed"
            ),
            LineFault::NotJsonRpc { error, excerpt } => format!(
                "wrote JSON that is not a valid JSON-RPC message on stdout (line {number}: {error}): {excerpt}"
            ),
            LineFault::NotJson { excerpt } => format!(
                "wrote a line that is not JSON on stdout (line {number}): {excerpt}; stdout is reserved for MCP messages (logs belong on stderr), so the connection was closed"
            ),
        }
    }
}

/// Classifies one frame's bytes (without its `\n`): `Ok(None)` for a blank line (skipped), the
/// message, or why the line is not one. A trailing `\r` is dropped (CRLF line ends).
pub fn classify_line(line: &[u8]) -> Result<Option<ServerJsonRpcMessage>, LineFault> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let text = std::str::from_utf8(line).map_err(|e| LineFault::NotUtf8 {
        valid_up_to: e.valid_up_to(),
    })?;
    match serde_json::from_str::<ServerJsonRpcMessage>(text) {
        Ok(message) => Ok(Some(message)),
        Err(error) if serde_json::from_str::<serde_json::Value>(text).is_ok() => {
            Err(LineFault::NotJsonRpc {
                error: error.to_string(),
                excerpt: excerpt(text),
            })
        }
        Err(_) => Err(LineFault::NotJson {
            excerpt: excerpt(text),
        }),
    }
}

fn excerpt(text: &str) -> String {
    let short: String = text.chars().take(80).collect();
    if short.len() < text.len() {
        format!("{short:?}…")
    } else {
        format!("{short:?}")
    }
}
