//! Who asked for a call when it was not the user's own hand: a downstream MCP client of the
//! gateway. Recorded with every gate decision for its calls, so the audit log says which AI
//! client drove a tool, over which transport.

use serde::Serialize;

/// How a downstream client reached Gatehouse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DownstreamTransport {
    /// `gatehouse serve` launched by the client, MCP on its stdin/stdout.
    Stdio,
    /// `gatehouse serve --http`: Streamable HTTP on loopback.
    Http,
}

impl DownstreamTransport {
    pub fn as_str(self) -> &'static str {
        match self {
            DownstreamTransport::Stdio => "stdio",
            DownstreamTransport::Http => "http",
        }
    }
}

/// The most a client's claimed name and version may take in a record.
pub const MAX_CLAIMED_BYTES: usize = 128;

/// A downstream client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Caller {
    /// The client as Gatehouse set it up (`serve --client ID`, written by `clients
    /// connect`), or `unnamed`.
    pub client: String,
    pub transport: DownstreamTransport,
    /// What the client said it is in its handshake (`clientInfo` name and version): claimed,
    /// not verified, cut to [`MAX_CLAIMED_BYTES`].
    pub claimed: Option<String>,
}

/// The id of a client that named none.
pub const UNNAMED_CLIENT: &str = "unnamed";

/// A client id: 1 to 64 of `a-z 0-9 _ -`. Names what to use instead when it is not.
pub fn validate_client_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the client id {id:?} is not valid: use 1 to 64 of a-z, 0-9, '_' and '-' (for example claude_desktop)"
        ))
    }
}

impl Caller {
    /// A caller with its claimed name cut to the record's limit at a character boundary.
    pub fn new(client: &str, transport: DownstreamTransport, claimed: Option<&str>) -> Caller {
        let claimed = claimed.map(|c| {
            let mut end = c.len().min(MAX_CLAIMED_BYTES);
            while !c.is_char_boundary(end) {
                end -= 1;
            }
            c[..end].chars().filter(|ch| !ch.is_control()).collect()
        });
        Caller {
            client: client.to_string(),
            transport,
            claimed,
        }
    }

    /// How a person is told who asked: `claude_desktop (stdio; says "claude-ai 0.1.0")`.
    pub fn describe(&self) -> String {
        match &self.claimed {
            Some(claimed) => format!(
                "{} ({}; says {claimed:?})",
                self.client,
                self.transport.as_str()
            ),
            None => format!("{} ({})", self.client, self.transport.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids_are_short_lowercase_words() {
        for good in ["claude_desktop", "cursor", "vscode", "a", "x-1"] {
            assert!(validate_client_id(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Claude",
            "claude desktop",
            "c/d",
            "ｃursor",
            &"a".repeat(65),
        ] {
            assert!(validate_client_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_claimed_name_is_cut_and_loses_control_characters() {
        let long = "é".repeat(200);
        let caller = Caller::new("x", DownstreamTransport::Stdio, Some(&long));
        let claimed = caller.claimed.unwrap();
        assert!(claimed.len() <= MAX_CLAIMED_BYTES && claimed.chars().all(|c| c == 'é'));
        let caller = Caller::new("x", DownstreamTransport::Http, Some("evil\n\u{1b}[2Jname"));
        assert_eq!(caller.claimed.as_deref(), Some("evil[2Jname"));
    }
}
