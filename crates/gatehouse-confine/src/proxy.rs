//! What the host's per-server egress proxy decides about one request head. Pure: the host reads
//! the head, asks [`parse_head`], checks the target against the grants, and either connects or
//! answers with [`refusal_response`].
//!
//! Strict on purpose: the only clients are a confined server's HTTP libraries, which write
//! well-formed heads; anything ambiguous (bare LF, folded or duplicate framing headers, lower-case
//! methods) is refused rather than interpreted.

use crate::declaration::{normalize_host, parse_port, split_host_port};

/// Longest request head the proxy reads.
pub const MAX_HEAD_BYTES: usize = 8192;

/// The index just past the head's end: the first empty line, "\r\n\r\n". A bare-LF empty line
/// ("\n\n" or "\n\r\n") also ends it, so the proxy stops reading and [`parse_head`] refuses the
/// head as malformed instead of waiting for bytes that never come.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < buf.len() {
        if buf[i] == b'\n' {
            match buf.get(i + 1) {
                Some(b'\n') => return Some(i + 2),
                Some(b'\r') if buf.get(i + 2) == Some(&b'\n') => return Some(i + 3),
                _ => {}
            }
        }
        i += 1;
    }
    None
}

/// A request the proxy can decide about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyRequest {
    /// `CONNECT host:port HTTP/1.x`: a tunnel (HTTPS).
    Connect { host: String, port: u16 },
    /// An absolute-form `http://` request, rewritten to origin-form with `Host` from the target,
    /// `Proxy-*`, `Connection` and `Keep-Alive` dropped, and `Connection: close`.
    Http {
        host: String,
        port: u16,
        head: Vec<u8>,
    },
}

impl ProxyRequest {
    /// The normalised host (see [`normalize_host`]).
    pub fn host(&self) -> &str {
        match self {
            ProxyRequest::Connect { host, .. } | ProxyRequest::Http { host, .. } => host,
        }
    }

    pub fn port(&self) -> u16 {
        match self {
            ProxyRequest::Connect { port, .. } | ProxyRequest::Http { port, .. } => *port,
        }
    }
}

/// Why a head was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    #[error("the request head is longer than {MAX_HEAD_BYTES} bytes")]
    TooLarge,
    #[error("the request is not a well-formed HTTP/1.x proxy request")]
    NotHttp,
    #[error("the request target {0:?} is not \"host:port\" for CONNECT or an absolute http:// URL")]
    BadTarget(String),
    #[error("an https:// URL was sent as a plain request; HTTPS goes through CONNECT host:443")]
    HttpsWithoutConnect,
    #[error("scheme {0:?} is not supported; the proxy takes CONNECT and http:// requests")]
    UnsupportedScheme(String),
    #[error("the request target carries user information (\"user@\"), which the proxy refuses")]
    UserInfo,
}

impl HeadError {
    /// A stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            HeadError::TooLarge => "head_too_large",
            HeadError::NotHttp => "malformed_request",
            HeadError::BadTarget(_) => "bad_target",
            HeadError::HttpsWithoutConnect => "https_without_connect",
            HeadError::UnsupportedScheme(_) => "unsupported_scheme",
            HeadError::UserInfo => "userinfo_in_target",
        }
    }
}

/// Headers dropped from a forwarded request besides every `Proxy-*`: hop-by-hop ones the proxy
/// replaces, and `Host`, which is rewritten from the target.
const DROPPED: &[&str] = &[
    "connection",
    "keep-alive",
    "host",
    "te",
    "trailer",
    "upgrade",
];

/// Parses one request head: exactly the bytes up to and including the empty line (what
/// [`head_end`] finds), CRLF line ends only.
pub fn parse_head(head: &[u8]) -> Result<ProxyRequest, HeadError> {
    if head.len() > MAX_HEAD_BYTES {
        return Err(HeadError::TooLarge);
    }
    let Some(body) = head.strip_suffix(b"\r\n\r\n") else {
        return Err(HeadError::NotHttp);
    };
    // Bare CR or LF anywhere else, NUL and other controls (tab aside) are never valid here.
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'\r' if body.get(i + 1) == Some(&b'\n') => i += 2,
            b'\t' => i += 1,
            b if b < 0x20 || b == 0x7f => return Err(HeadError::NotHttp),
            _ => i += 1,
        }
    }
    let mut lines = body
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request_line = lines.next().ok_or(HeadError::NotHttp)?;
    let request_line = std::str::from_utf8(request_line).map_err(|_| HeadError::NotHttp)?;
    if !request_line.is_ascii() {
        return Err(HeadError::NotHttp);
    }
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::NotHttp);
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(HeadError::NotHttp);
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(HeadError::NotHttp);
    }
    let headers = parse_headers(lines)?;

    if method == "CONNECT" {
        let (host, port) = authority(target, None)?;
        return Ok(ProxyRequest::Connect { host, port });
    }

    let Some((scheme, rest)) = target.split_once("://") else {
        return Err(HeadError::BadTarget(target.to_string()));
    };
    if !scheme
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        || scheme.is_empty()
    {
        return Err(HeadError::BadTarget(target.to_string()));
    }
    if scheme.eq_ignore_ascii_case("https") {
        return Err(HeadError::HttpsWithoutConnect);
    }
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(HeadError::UnsupportedScheme(scheme.to_ascii_lowercase()));
    }
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority_text, path) = rest.split_at(split);
    if path.contains('#') {
        return Err(HeadError::BadTarget(target.to_string()));
    }
    let (host, port) = authority(authority_text, Some(80))?;
    let path = if path.is_empty() {
        "/".to_string()
    } else if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    let host_header = match (host.contains(':'), port) {
        (true, 80) => format!("[{host}]"),
        (true, _) => format!("[{host}]:{port}"),
        (false, 80) => host.clone(),
        (false, _) => format!("{host}:{port}"),
    };

    let mut out = Vec::with_capacity(head.len() + 32);
    out.extend_from_slice(
        format!("{method} {path} {version}\r\nHost: {host_header}\r\n").as_bytes(),
    );
    for (name, line) in headers {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("proxy-") || DROPPED.contains(&lower.as_str()) {
            continue;
        }
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(ProxyRequest::Http {
        host,
        port,
        head: out,
    })
}

/// Checks each header line; returns (name, whole line). Refuses what request smuggling relies
/// on: folded lines, whitespace before the colon, two `Host`, two `Content-Length`, both
/// `Content-Length` and `Transfer-Encoding`.
fn parse_headers<'a>(
    lines: impl Iterator<Item = &'a [u8]>,
) -> Result<Vec<(String, &'a [u8])>, HeadError> {
    let mut out = Vec::new();
    let (mut hosts, mut lengths, mut encodings) = (0, 0, 0);
    for line in lines {
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or(HeadError::NotHttp)?;
        let name = &line[..colon];
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
            return Err(HeadError::NotHttp);
        }
        let name = String::from_utf8(name.to_vec()).map_err(|_| HeadError::NotHttp)?;
        match name.to_ascii_lowercase().as_str() {
            "host" => hosts += 1,
            "content-length" => lengths += 1,
            "transfer-encoding" => encodings += 1,
            _ => {}
        }
        out.push((name, line));
    }
    if hosts > 1 || lengths > 1 || (lengths > 0 && encodings > 0) {
        return Err(HeadError::NotHttp);
    }
    Ok(out)
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// "host:port" (CONNECT, port required) or "host[:port]" (http://, default port). Userinfo is
/// refused before anything else so "a@b:1" never reaches host parsing.
fn authority(text: &str, default_port: Option<u16>) -> Result<(String, u16), HeadError> {
    if text.contains('@') {
        return Err(HeadError::UserInfo);
    }
    let bad = || HeadError::BadTarget(text.to_string());
    let (host, port) = match (split_host_port(text), default_port) {
        (Some((host, port)), _) => (host, parse_port(port).ok_or_else(bad)?),
        (None, Some(port)) => (text, port),
        (None, None) => return Err(bad()),
    };
    // An unbracketed IPv6 address is not a valid authority.
    if host.contains(':') && !host.starts_with('[') {
        return Err(bad());
    }
    let host = normalize_host(host).ok_or_else(bad)?;
    Ok((host, port))
}

/// The answer to an established tunnel.
pub const CONNECT_ESTABLISHED: &[u8] = b"HTTP/1.1 200 Connection Established\r\n\r\n";

/// "HTTP/1.1 403 Forbidden" (or 400 for a malformed head) with a text/plain body naming the host,
/// port, server and how to grant it ("ask your admin to add host:port to the server's
/// confinement.hosts").
pub fn refusal_response(server: &str, target: Option<(&str, u16)>, status: u16) -> Vec<u8> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Error",
    };
    let server = printable(server);
    let body = match target {
        Some((host, port)) => {
            let host = printable(host);
            let shown = if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            format!(
                "gatehouse: the confined server \"{server}\" may not reach {shown}. \
                 If it should, ask your admin to add {shown} to the server's confinement.hosts.\n"
            )
        }
        None => format!(
            "gatehouse: the confined server \"{server}\" sent a request its egress proxy cannot \
             read. Use CONNECT host:port for HTTPS and an absolute http:// URL for HTTP.\n"
        ),
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Drops control characters so a name cannot add lines to the response.
fn printable(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(200).collect()
}
