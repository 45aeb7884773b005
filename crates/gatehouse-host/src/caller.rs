//! Who asked for a call when it was not the user's own hand: a downstream MCP client of the
//! gateway. Recorded with every gate decision for its calls, so the audit log says which AI
//! client drove a tool, over which transport.

use serde::{Deserialize, Serialize};

/// How a downstream client reached Gatehouse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// At most this many distinct clients are named as candidates of one elicitation; any more are
/// counted (a card and a receipt stay bounded whatever is in flight).
pub const MAX_CANDIDATE_CLIENTS: usize = 16;

/// Which downstream client an elicitation can be put down to. A client is named only when
/// every request the elicitation may belong to was made for that same client; otherwise the
/// card says plainly that Gatehouse cannot tell, and lists who was running something.
///
/// Serialized with `kind` (`none`, `client`, `unknown`; [`Attribution::code`]), the one
/// vocabulary of the cards, the CLI's JSON and the receipts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Attribution {
    /// No AI client's request is among those it may belong to: the person's own action, or
    /// Gatehouse's own request (or nothing was in flight at all).
    None,
    /// Tied to a request made for this client, and to no one else's.
    Client { caller: Caller },
    /// Requests of several clients, or of a client and of Gatehouse itself, were in flight
    /// and the transport cannot say which one the elicitation belongs to.
    Unknown {
        /// The distinct clients with a request in flight, oldest first, at most
        /// [`MAX_CANDIDATE_CLIENTS`].
        clients: Vec<Caller>,
        /// Distinct clients beyond those listed.
        #[serde(skip_serializing_if = "is_zero")]
        more_clients: usize,
        /// A request not made for any AI client (the person's own, or Gatehouse's) was among
        /// them too.
        gatehouse: bool,
    },
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Attribution {
    /// From the candidates: for each request the elicitation may belong to, the client it
    /// was made for (`None`: made for no client). One client throughout names it; no client
    /// at all is [`Attribution::None`]; anything else is [`Attribution::Unknown`].
    pub fn of(candidates: impl IntoIterator<Item = Option<Caller>>) -> Attribution {
        let mut clients: Vec<Caller> = Vec::new();
        let mut more_clients = 0;
        let mut beyond: Vec<Caller> = Vec::new();
        let mut gatehouse = false;
        for candidate in candidates {
            match candidate {
                None => gatehouse = true,
                Some(caller) if clients.contains(&caller) || beyond.contains(&caller) => {}
                Some(caller) if clients.len() < MAX_CANDIDATE_CLIENTS => clients.push(caller),
                Some(caller) => {
                    // Counted once each; the list is bounded by the in-flight table.
                    beyond.push(caller);
                    more_clients += 1;
                }
            }
        }
        match (clients.len(), gatehouse) {
            (0, _) => Attribution::None,
            (1, false) => Attribution::Client {
                caller: clients.remove(0),
            },
            _ => Attribution::Unknown {
                clients,
                more_clients,
                gatehouse,
            },
        }
    }

    /// The stable code: `none`, `client` or `unknown` (the serialized `kind`).
    pub fn code(&self) -> &'static str {
        match self {
            Attribution::None => "none",
            Attribution::Client { .. } => "client",
            Attribution::Unknown { .. } => "unknown",
        }
    }

    /// The client the elicitation is tied to; `None` unless exactly one is.
    pub fn client(&self) -> Option<&Caller> {
        match self {
            Attribution::Client { caller } => Some(caller),
            _ => None,
        }
    }

    /// One plain sentence for a card, or `None` when no client is involved. Client names are
    /// what the clients claimed: a front end prints them as text, never as markup.
    pub fn sentence(&self) -> Option<String> {
        match self {
            Attribution::None => None,
            Attribution::Client { caller } => Some(format!(
                "Asked during a call from the AI client {}.",
                caller.describe()
            )),
            Attribution::Unknown {
                clients,
                more_clients,
                gatehouse,
            } => {
                let mut who: Vec<String> = clients.iter().map(Caller::describe).collect();
                if *more_clients > 0 {
                    who.push(format!("{more_clients} more AI clients"));
                }
                if *gatehouse {
                    who.push("Gatehouse itself (not for an AI client)".into());
                }
                let who = match who.split_last() {
                    Some((last, [])) => last.clone(),
                    Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                    None => String::new(),
                };
                Some(format!(
                    "Asked while requests from {who} were running; Gatehouse cannot tell which one caused it."
                ))
            }
        }
    }

    /// What a receipt's `caller` says: the client when tied to one, `null` when none is
    /// involved, `"unknown"` otherwise (the candidates are in `caller_candidates`).
    pub fn receipt_caller(&self) -> serde_json::Value {
        match self {
            Attribution::None => serde_json::Value::Null,
            Attribution::Client { caller } => serde_json::json!(caller),
            Attribution::Unknown { .. } => serde_json::Value::from("unknown"),
        }
    }

    /// For a receipt: who might have caused it, when it cannot be told (else `null`).
    pub fn receipt_candidates(&self) -> serde_json::Value {
        match self {
            Attribution::Unknown {
                clients,
                more_clients,
                gatehouse,
            } => serde_json::json!({
                "clients": clients,
                "more_clients": more_clients,
                "gatehouse": gatehouse,
            }),
            _ => serde_json::Value::Null,
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

    fn client(id: &str) -> Caller {
        Caller::new(id, DownstreamTransport::Stdio, Some(&format!("{id} 1.0")))
    }

    #[test]
    fn a_client_is_named_only_when_every_candidate_is_that_client() {
        let (claude, cursor) = (client("claude_code"), client("cursor"));
        assert_eq!(Attribution::of([]), Attribution::None);
        assert_eq!(Attribution::of([None, None]), Attribution::None);
        assert_eq!(
            Attribution::of([Some(claude.clone())]).client(),
            Some(&claude)
        );
        // Two calls of the same client: still that client.
        assert_eq!(
            Attribution::of([Some(claude.clone()), Some(claude.clone())]).client(),
            Some(&claude)
        );
        // Two clients: neither is named, both are listed, oldest first.
        let both = Attribution::of([Some(claude.clone()), Some(cursor.clone())]);
        assert_eq!(both.client(), None);
        assert_eq!(
            both,
            Attribution::Unknown {
                clients: vec![claude.clone(), cursor.clone()],
                more_clients: 0,
                gatehouse: false,
            }
        );
        // A client's call and the person's own (or Gatehouse's): unknown, in either order.
        for candidates in [[Some(claude.clone()), None], [None, Some(claude.clone())]] {
            let mixed = Attribution::of(candidates);
            assert_eq!(mixed.client(), None);
            assert_eq!(
                mixed,
                Attribution::Unknown {
                    clients: vec![claude.clone()],
                    more_clients: 0,
                    gatehouse: true,
                }
            );
        }
        // The same id with another claimed name or transport is another client.
        let other = Caller::new("claude_code", DownstreamTransport::Http, None);
        assert_eq!(
            Attribution::of([Some(claude.clone()), Some(other)]).code(),
            "unknown"
        );
    }

    #[test]
    fn candidates_are_bounded_and_counted() {
        let many = (0..40).map(|n| Some(client(&format!("c{n}"))));
        let Attribution::Unknown {
            clients,
            more_clients,
            gatehouse,
        } = Attribution::of(many.clone().chain(many))
        else {
            panic!("forty clients are not one");
        };
        assert_eq!(clients.len(), MAX_CANDIDATE_CLIENTS);
        assert_eq!(more_clients, 40 - MAX_CANDIDATE_CLIENTS);
        assert!(!gatehouse);
    }

    #[test]
    fn the_code_is_the_serialized_kind_and_the_receipt_says_unknown_plainly() {
        let claude = client("claude_code");
        for attribution in [
            Attribution::None,
            Attribution::of([Some(claude.clone())]),
            Attribution::of([Some(claude.clone()), Some(client("cursor"))]),
        ] {
            let json = serde_json::to_value(&attribution).unwrap();
            assert_eq!(json["kind"], attribution.code(), "{json}");
        }
        let known = Attribution::of([Some(claude.clone())]);
        assert_eq!(known.receipt_caller(), serde_json::json!(claude));
        assert!(known.receipt_candidates().is_null());
        assert!(Attribution::None.receipt_caller().is_null());
        let unknown = Attribution::of([Some(claude.clone()), None]);
        assert_eq!(unknown.receipt_caller(), "unknown");
        assert_eq!(
            unknown.receipt_candidates()["clients"][0]["client"],
            "claude_code"
        );
        assert_eq!(unknown.receipt_candidates()["gatehouse"], true);
    }

    #[test]
    fn the_sentence_names_one_client_or_says_it_cannot_tell() {
        assert_eq!(Attribution::None.sentence(), None);
        let one = Attribution::of([Some(client("claude_code"))]);
        assert_eq!(
            one.sentence().unwrap(),
            "Asked during a call from the AI client claude_code (stdio; says \"claude_code 1.0\")."
        );
        let two = Attribution::of([Some(client("claude_code")), Some(client("cursor")), None]);
        let sentence = two.sentence().unwrap();
        assert_eq!(
            sentence,
            "Asked while requests from claude_code (stdio; says \"claude_code 1.0\"), cursor (stdio; says \"cursor 1.0\") and Gatehouse itself (not for an AI client) were running; Gatehouse cannot tell which one caused it."
        );
        assert!(!sentence.contains("during a call from"));
    }
}
