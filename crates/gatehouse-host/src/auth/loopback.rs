//! The redirect end of a sign-in: a listener on `127.0.0.1` at an ephemeral port (RFC 8252
//! §7.3) that takes exactly one redirect carrying the `state` this sign-in sent, answers it
//! with a plain page, and closes. Anything else (another path, another state, a second
//! redirect, a request that is too large or too slow) gets a plain error and changes nothing.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request head larger than this is refused: a redirect carries a code, a state and an issuer.
const MAX_REQUEST_BYTES: usize = 16 * 1024;
/// A connection that sends no complete request head in this time is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections that are not the awaited redirect: after this many, the listener gives up
/// (a local process is flooding it), and the sign-in fails rather than wait forever.
const MAX_STRAY_REQUESTS: usize = 64;

pub const CALLBACK_PATH: &str = "/callback";

/// What the authorization server sent back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    Code {
        code: String,
        state: String,
        issuer: Option<String>,
    },
    /// RFC 6749 §4.1.2.1: the user or the server refused. `error` is the server's code,
    /// `description` its text (shown as text, never as markup).
    Error {
        error: String,
        description: Option<String>,
    },
}

pub struct Listener {
    listener: TcpListener,
    port: u16,
}

impl Listener {
    /// Binds `127.0.0.1:port` (0: any free port).
    pub async fn bind(port: u16) -> std::io::Result<Listener> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        Ok(Listener { listener, port })
    }

    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Waits for the redirect whose `state` is `state`, answering every other request with an
    /// error page. Returns `Err` with a reason when the flood limit is reached or the socket
    /// fails. The caller bounds the overall wait.
    pub async fn accept(self, state: &str) -> Result<Redirect, String> {
        let mut strays = 0;
        loop {
            let (stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| format!("the sign-in listener failed: {e}"))?;
            match serve_one(stream, state).await {
                Some(redirect) => return Ok(redirect),
                None => {
                    strays += 1;
                    if strays >= MAX_STRAY_REQUESTS {
                        return Err(format!(
                            "the sign-in listener received {MAX_STRAY_REQUESTS} requests that were not the awaited redirect; giving up"
                        ));
                    }
                }
            }
        }
    }
}

/// Reads one request; answers it; returns the redirect when it is the awaited one.
async fn serve_one(mut stream: TcpStream, state: &str) -> Option<Redirect> {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(Some(head)) => head,
        _ => {
            let _ = respond(&mut stream, 400, "Bad request.").await;
            return None;
        }
    };
    let outcome = judge(&head, state);
    let (status, text) = match &outcome {
        Ok(Redirect::Code { .. }) => (
            200,
            "Gatehouse received the sign-in. You can close this tab and return to Gatehouse.",
        ),
        Ok(Redirect::Error { .. }) => (
            200,
            "The sign-in was not completed. You can close this tab; Gatehouse shows what happened.",
        ),
        Err(status) => (*status, "This is not the sign-in Gatehouse is waiting for."),
    };
    let _ = respond(&mut stream, status, text).await;
    outcome.ok()
}

async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.truncate(end);
            return String::from_utf8(buf).ok();
        }
        if buf.len() > MAX_REQUEST_BYTES {
            return None;
        }
    }
}

/// The pure decision on a request head: the awaited redirect, or the status to answer with.
pub(crate) fn judge(head: &str, state: &str) -> Result<Redirect, u16> {
    let line = head.lines().next().ok_or(400u16)?;
    let mut parts = line.split(' ');
    let (method, target) = (parts.next().ok_or(400u16)?, parts.next().ok_or(400u16)?);
    if method != "GET" {
        return Err(405);
    }
    let url = url::Url::parse(&format!("http://127.0.0.1{target}")).map_err(|_| 400u16)?;
    if url.path() != CALLBACK_PATH {
        return Err(404);
    }
    let mut fields = std::collections::BTreeMap::new();
    for (key, value) in url.query_pairs() {
        // A parameter given twice is ambiguous: refuse rather than pick one.
        if fields
            .insert(key.into_owned(), value.into_owned())
            .is_some()
        {
            return Err(400);
        }
    }
    // The state binds the redirect to this sign-in (CSRF, and a replay of an old redirect):
    // anything else is not ours, compared in constant time.
    let sent = fields.get("state").map(String::as_str).unwrap_or_default();
    if !constant_time_eq(sent.as_bytes(), state.as_bytes()) {
        return Err(400);
    }
    if let Some(error) = fields.get("error") {
        return Ok(Redirect::Error {
            error: error.clone(),
            description: fields.get("error_description").cloned(),
        });
    }
    match fields.get("code") {
        Some(code) if !code.is_empty() => Ok(Redirect::Code {
            code: code.clone(),
            state: sent.to_string(),
            issuer: fields.get("iss").cloned(),
        }),
        _ => Err(400),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn respond(stream: &mut TcpStream, status: u16, text: &str) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Bad Request",
    };
    // Plain text: nothing a server sent is ever echoed back as markup.
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nreferrer-policy: no-referrer\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(target: &str) -> String {
        format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1")
    }

    #[test]
    fn the_matching_state_with_a_code_is_the_redirect() {
        assert_eq!(
            judge(
                &head("/callback?code=abc&state=s1&iss=https%3A%2F%2Fas.example"),
                "s1"
            ),
            Ok(Redirect::Code {
                code: "abc".into(),
                state: "s1".into(),
                issuer: Some("https://as.example".into())
            })
        );
    }

    #[test]
    fn another_state_a_missing_state_or_another_path_is_refused() {
        assert_eq!(judge(&head("/callback?code=abc&state=s2"), "s1"), Err(400));
        assert_eq!(judge(&head("/callback?code=abc"), "s1"), Err(400));
        assert_eq!(judge(&head("/other?code=abc&state=s1"), "s1"), Err(404));
        assert_eq!(
            judge("POST /callback?code=abc&state=s1 HTTP/1.1", "s1"),
            Err(405)
        );
        assert_eq!(
            judge(&head("/callback?code=a&code=b&state=s1"), "s1"),
            Err(400)
        );
        assert_eq!(judge(&head("/callback?state=s1"), "s1"), Err(400));
    }

    #[test]
    fn an_error_redirect_with_the_state_is_reported() {
        assert_eq!(
            judge(
                &head("/callback?error=access_denied&error_description=no&state=s1"),
                "s1"
            ),
            Ok(Redirect::Error {
                error: "access_denied".into(),
                description: Some("no".into())
            })
        );
        // Without our state, an error redirect is someone else's: ignored.
        assert_eq!(
            judge(&head("/callback?error=access_denied"), "s1"),
            Err(400)
        );
    }

    #[tokio::test]
    async fn the_listener_takes_one_matching_redirect_and_ignores_the_rest() {
        let listener = Listener::bind(0).await.unwrap();
        let uri = listener.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let wait = tokio::spawn(async move { listener.accept("good").await });
        let client = reqwest::Client::new();
        let wrong = client
            .get(format!("{uri}?code=x&state=bad"))
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), 400);
        let right = client
            .get(format!("{uri}?code=x&state=good"))
            .send()
            .await
            .unwrap();
        assert_eq!(right.status(), 200);
        assert!(right.text().await.unwrap().contains("close this tab"));
        assert_eq!(
            wait.await.unwrap().unwrap(),
            Redirect::Code {
                code: "x".into(),
                state: "good".into(),
                issuer: None
            }
        );
        // The listener is gone: a replay of the same redirect reaches nobody.
        assert!(
            client
                .get(format!("{uri}?code=x&state=good"))
                .send()
                .await
                .is_err()
        );
    }
}
