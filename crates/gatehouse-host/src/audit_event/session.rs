//! Payloads of a session's events: sign-ins, elicitations, the kill switch and suspensions.
//!
//! Each type is its record's `data`, field for field and in the order the log has always
//! held them: a field that is sometimes unknown is written as `null`, and only a field that
//! some records of the event lack is skipped when absent.

use gatehouse_policy::{Decision, Mode};
use serde::{Deserialize, Deserializer, Serialize};

use super::{AuditEvent, EventPayload};
use crate::HostError;
use crate::admission::Status;
use crate::auth::{Registration, SignInCode, SignInReason};
use crate::broker::{Authorization, Correlation, ElicitationAnswer};
use crate::caller::{Attribution, Caller};
use crate::era::Era;

macro_rules! payloads {
    ($($payload:ident => $event:ident,)*) => {
        $(impl EventPayload for $payload {
            const EVENT: AuditEvent = AuditEvent::$event;
        })*
    };
}

payloads! {
    OauthSignedIn => OauthSignedIn,
    OauthSignInFailed => OauthSignInFailed,
    OauthRefreshed => OauthRefreshed,
    OauthLoggedOut => OauthLoggedOut,
    ElicitationReceipt => ElicitationReceipt,
    ElicitationCompleted => ElicitationCompleted,
    ElicitationCompletionIgnored => ElicitationCompletionIgnored,
    ElicitationRetry => ElicitationRetry,
    SessionKilled => SessionKilled,
    ServerSuspended => ServerSuspended,
    ServerResumed => ServerResumed,
    SuspendedRefused => SuspendedRefused,
}

/// `oauth_signed_in`: a sign-in (or step-up) completed and its tokens are in the keychain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OauthSignedIn {
    /// The configured server name.
    pub name: String,
    /// The MCP server URL the tokens are for.
    pub resource: String,
    pub issuer: Option<String>,
    pub client_id: String,
    pub registration: Registration,
    pub scopes: Vec<String>,
    pub reason: SignInReason,
    /// The token's `sub`, when it names one.
    pub subject: Option<String>,
    /// A fingerprint of the access token ([`crate::auth::store::fingerprint`]), never the token.
    pub token: Option<String>,
}

/// Why a sign-in did not complete: a [`SignInCode`], or the code of another host error met on
/// the way (a client secret that could not be read, say). Serialized as the bare code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SignInFailure {
    SignIn(SignInCode),
    Host(String),
}

impl SignInFailure {
    pub fn of(error: &HostError) -> SignInFailure {
        match error {
            HostError::SignIn { code, .. } => SignInFailure::SignIn(*code),
            other => SignInFailure::Host(other.code().to_string()),
        }
    }

    /// The code as written.
    pub fn code(&self) -> &str {
        match self {
            SignInFailure::SignIn(code) => code.code(),
            SignInFailure::Host(code) => code,
        }
    }
}

/// `oauth_sign_in_failed`: a sign-in was refused or failed; nothing was stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OauthSignInFailed {
    pub name: String,
    pub resource: String,
    /// The authorization server, when discovery got that far.
    pub issuer: Option<String>,
    pub reason: SignInReason,
    pub code: SignInFailure,
    pub detail: String,
}

/// `oauth_refreshed`: tokens were refreshed silently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OauthRefreshed {
    pub name: String,
    pub issuer: Option<String>,
    pub scopes: Vec<String>,
    /// A fingerprint of the new access token.
    pub token: Option<String>,
}

/// `oauth_logged_out`: the user removed a sign-in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OauthLoggedOut {
    pub name: String,
    pub issuer: Option<String>,
    pub client_id: String,
}

/// A receipt's `attribution`: whether a client is named (the kind of [`Attribution`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttributionKind {
    None,
    Client,
    Unknown,
}

/// The string a receipt's `caller` holds when it cannot tell which client caused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownCaller {
    Unknown,
}

/// A receipt's `caller` when some AI client may have caused it: that client, or `"unknown"`
/// when several might have (then the receipt's `caller_candidates` lists them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ReceiptCaller {
    Client(Caller),
    Unknown(UnknownCaller),
}

/// A receipt's `caller_candidates`: who might have caused it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallerCandidates {
    pub clients: Vec<Caller>,
    /// Distinct clients beyond those listed.
    pub more_clients: usize,
    /// A request not made for any AI client was among them too.
    pub gatehouse: bool,
}

/// One reason behind a receipt's decision: a policy reason code and its sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptReason {
    pub code: String,
    pub detail: String,
}

impl From<&gatehouse_policy::Reason> for ReceiptReason {
    fn from(reason: &gatehouse_policy::Reason) -> ReceiptReason {
        ReceiptReason {
            code: reason.code.to_string(),
            detail: reason.detail.clone(),
        }
    }
}

/// The receipt's `attribution`, `caller` and `caller_candidates` of an [`Attribution`].
pub fn receipt_attribution(
    attribution: &Attribution,
) -> (
    AttributionKind,
    Option<ReceiptCaller>,
    Option<CallerCandidates>,
) {
    match attribution {
        Attribution::None => (AttributionKind::None, None, None),
        Attribution::Client { caller } => (
            AttributionKind::Client,
            Some(ReceiptCaller::Client(caller.clone())),
            None,
        ),
        Attribution::Unknown {
            clients,
            more_clients,
            gatehouse,
        } => (
            AttributionKind::Unknown,
            Some(ReceiptCaller::Unknown(UnknownCaller::Unknown)),
            Some(CallerCandidates {
                clients: clients.clone(),
                more_clients: *more_clients,
                gatehouse: *gatehouse,
            }),
        ),
    }
}

/// `elicitation_receipt`: one per elicitation (elicitation.md §4), written before any answer
/// is sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationReceipt {
    pub receipt_id: String,
    pub prompt_id: u64,
    pub name: String,
    /// The verified identity, when the server was admitted.
    pub server_id: Option<String>,
    pub admission: Status,
    pub origin: Option<String>,
    pub command: Option<String>,
    /// The client when the elicitation is tied to one, `null` when none is involved,
    /// `"unknown"` when several were running.
    pub caller: Option<ReceiptCaller>,
    pub attribution: AttributionKind,
    pub caller_candidates: Option<CallerCandidates>,
    pub user: String,
    /// Always `null`: written for the receipt format of elicitation.md §4.
    pub session_id: Option<String>,
    pub era: Era,
    pub correlation: Correlation,
    pub elicitation_id: Option<String>,
    pub input_key: Option<String>,
    pub round: Option<usize>,
    pub mode: Mode,
    pub decision: Decision,
    pub reasons: Vec<ReceiptReason>,
    pub overridden: bool,
    pub url: Option<String>,
    pub host: Option<String>,
    pub host_unicode: Option<String>,
    pub action: ElicitationAnswer,
    /// `sha256:` of the answer's content as sent, when content was sent.
    pub content_sha256: Option<String>,
    pub note: Option<String>,
    pub policy_version: String,
    pub bundle: Option<String>,
    pub authorization: Option<Authorization>,
}

/// How a URL elicitation was seen to complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompletedVia {
    /// The server's `notifications/elicitation/complete` (2025-11-25).
    Notification,
    /// The request retried after it succeeded (`-32042`, or a 2026-07-28 input request).
    RetriedRequestSucceeded,
}

/// Deserializes a field that is present (even as `null`) as `Some`: with `default`, an absent
/// field stays `None`, so `Option<Option<T>>` tells absent from `null`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// `elicitation_completed`. A completion by notification names the elicitation id and the
/// host calls waiting on it and has no `input_key`; one by a retried request names its
/// `input_key` (2026-07-28) and no calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElicitationCompleted {
    pub receipt_id: String,
    pub prompt_id: u64,
    pub elicitation_id: Option<String>,
    /// Present (possibly `null`) only when [`CompletedVia::RetriedRequestSucceeded`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub input_key: Option<Option<String>>,
    pub name: String,
    /// Present only when [`CompletedVia::Notification`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<Vec<u64>>,
    pub via: CompletedVia,
}

/// Why a completion notification was ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IgnoredWhy {
    /// That elicitation had already completed.
    Duplicate,
    /// The id is pending on another server's connection.
    CrossServer,
    /// This server never asked for that id.
    NeverIssued,
}

/// `elicitation_completion_ignored`: a completion that matched nothing, counted as abuse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElicitationCompletionIgnored {
    pub elicitation_id: String,
    pub name: String,
    pub why: IgnoredWhy,
    /// The abuse limit it crossed (a policy reason code), if any: the session is then killed.
    pub abuse: Option<String>,
}

/// `elicitation_retry`: the originating request retried after URL elicitations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElicitationRetry {
    pub name: String,
    /// The host call retried.
    pub call: u64,
    pub attempt: usize,
    pub why: RetryWhy,
    /// The receipts of the elicitations retried after.
    pub receipts: Vec<String>,
}

/// Why the originating request was retried after URL elicitations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryWhy {
    /// Every URL flow it waited on completed.
    Completed,
    /// The user chose Retry.
    UserRetry,
}

/// `session_killed`: the kill switch closed the connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionKilled {
    pub name: String,
    /// Always [`Decision::KillSessionOnElicitationAbuse`].
    pub decision: Decision,
    /// The policy's abuse reason code.
    pub reason: String,
    pub detail: String,
}

/// `server_suspended`: the kill switch suspended a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSuspended {
    pub name: String,
    pub reason: String,
    pub detail: String,
    /// The suspension's key (the approval key: verified id, or command line / URL).
    pub key: String,
}

/// `server_resumed`: the user resumed a suspended server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerResumed {
    pub name: String,
    pub key: String,
}

/// `suspended_refused`: a connection refused because the server is suspended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuspendedRefused {
    pub name: String,
    /// The suspension's reason code.
    pub reason: String,
    /// When it was suspended (RFC 3339).
    pub since: String,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::Auditor;
    use crate::audit_event::read_payload;
    use crate::caller::DownstreamTransport;
    use crate::tap::OutRequest;

    /// Writes `payload` through a real auditor, with a record of another event after it, and
    /// reads both back: the data is `expected` byte for byte (the format the log has always
    /// held, key order included), it parses back into `payload`, and the other record is not
    /// one of `P`.
    fn round_trip<P: EventPayload + PartialEq + std::fmt::Debug>(payload: P, expected: Value) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let (auditor, _) = Auditor::open(&path, crate::tap::system_clock()).unwrap();
        auditor.write(Some("demo"), &payload).unwrap();
        auditor
            .write(
                Some("demo"),
                &crate::audit_event::gate::ToolCall::sample("echo", false),
            )
            .unwrap();
        auditor.finish().unwrap();
        drop(auditor);
        let text = std::fs::read_to_string(&path).unwrap();
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ours: Vec<&Value> = records
            .iter()
            .filter(|r| r["event"] == P::EVENT.as_str())
            .collect();
        assert_eq!(ours.len(), 1, "{text}");
        assert_eq!(ours[0]["server"], "demo");
        assert_eq!(ours[0]["data"].to_string(), expected.to_string());
        let read: P = read_payload(ours[0]).unwrap().unwrap();
        assert_eq!(read, payload);
        let other = records
            .iter()
            .find(|r| r["event"] == AuditEvent::ToolCall.as_str())
            .unwrap();
        assert!(read_payload::<P>(other).is_none());
    }

    fn caller(client: &str) -> Caller {
        Caller {
            client: client.into(),
            transport: DownstreamTransport::Stdio,
            claimed: Some("claude 1.0".into()),
        }
    }

    #[test]
    fn oauth_signed_in() {
        round_trip(
            OauthSignedIn {
                name: "notes".into(),
                resource: "https://mcp.example/mcp".into(),
                issuer: Some("https://as.example".into()),
                client_id: "c-1".into(),
                registration: Registration::MetadataDocument,
                scopes: vec!["read".into(), "write".into()],
                reason: SignInReason::StepUp,
                subject: None,
                token: Some("sha256:0123456789abcdef".into()),
            },
            json!({
                "name": "notes",
                "resource": "https://mcp.example/mcp",
                "issuer": "https://as.example",
                "client_id": "c-1",
                "registration": "metadata_document",
                "scopes": ["read", "write"],
                "reason": "step_up",
                "subject": null,
                "token": "sha256:0123456789abcdef",
            }),
        );
    }

    #[test]
    fn oauth_sign_in_failed_with_a_sign_in_code_or_another_error() {
        let error = HostError::SignIn {
            server: "notes".into(),
            code: SignInCode::SignInTimedOut,
            detail: "too slow".into(),
        };
        let failed = OauthSignInFailed {
            name: "notes".into(),
            resource: "https://mcp.example/mcp".into(),
            issuer: None,
            reason: SignInReason::SignIn,
            code: SignInFailure::of(&error),
            detail: error.to_string(),
        };
        assert_eq!(
            failed.code,
            SignInFailure::SignIn(SignInCode::SignInTimedOut)
        );
        round_trip(
            failed.clone(),
            json!({
                "name": "notes",
                "resource": "https://mcp.example/mcp",
                "issuer": null,
                "reason": "sign_in",
                "code": "sign_in_timed_out",
                "detail": error.to_string(),
            }),
        );
        let other = HostError::Config("bad".into());
        let failed = OauthSignInFailed {
            code: SignInFailure::of(&other),
            detail: other.to_string(),
            ..failed
        };
        assert_eq!(failed.code.code(), "config_invalid");
        round_trip(
            failed,
            json!({
                "name": "notes",
                "resource": "https://mcp.example/mcp",
                "issuer": null,
                "reason": "sign_in",
                "code": "config_invalid",
                "detail": other.to_string(),
            }),
        );
    }

    #[test]
    fn sign_in_codes_serialize_as_their_codes() {
        for &code in crate::error_code::EVERY_SIGN_IN_CODE {
            assert_eq!(serde_json::to_value(code).unwrap(), json!(code.code()));
            let read: SignInFailure = serde_json::from_value(json!(code.code())).unwrap();
            assert_eq!(read, SignInFailure::SignIn(code));
        }
    }

    #[test]
    fn oauth_refreshed() {
        round_trip(
            OauthRefreshed {
                name: "notes".into(),
                issuer: Some("https://as.example".into()),
                scopes: vec!["read".into()],
                token: None,
            },
            json!({"name": "notes", "issuer": "https://as.example", "scopes": ["read"], "token": null}),
        );
    }

    #[test]
    fn oauth_logged_out() {
        round_trip(
            OauthLoggedOut {
                name: "notes".into(),
                issuer: None,
                client_id: "c-1".into(),
            },
            json!({"name": "notes", "issuer": null, "client_id": "c-1"}),
        );
    }

    fn receipt() -> ElicitationReceipt {
        ElicitationReceipt {
            receipt_id: "rcpt_1".into(),
            prompt_id: 7,
            name: "demo".into(),
            server_id: Some("urn:demo".into()),
            admission: Status::Admitted,
            origin: None,
            command: Some("demo-server".into()),
            caller: Some(ReceiptCaller::Client(caller("claude"))),
            attribution: AttributionKind::Client,
            caller_candidates: None,
            user: "alice".into(),
            session_id: None,
            era: Era::V2025_11_25,
            correlation: Correlation {
                basis: crate::broker::CorrelationBasis::InFlight,
                requests: vec![OutRequest {
                    id: json!(3),
                    method: "tools/call".into(),
                    tool: Some("book_table".into()),
                    call: None,
                    progress_token: None,
                }],
            },
            elicitation_id: None,
            input_key: None,
            round: None,
            mode: Mode::Url,
            decision: Decision::HoldForElicitationEvidence,
            reasons: vec![ReceiptReason {
                code: "not_tied_to_request".into(),
                detail: "tied to nothing".into(),
            }],
            overridden: true,
            url: Some("https://pay.example/x".into()),
            host: Some("pay.example".into()),
            host_unicode: Some("pay.example".into()),
            action: ElicitationAnswer::Accept,
            content_sha256: None,
            note: None,
            policy_version: "1".into(),
            bundle: Some("demo@1".into()),
            authorization: Some(Authorization {
                issuer: Some("https://as.example".into()),
                subject: None,
            }),
        }
    }

    #[test]
    fn elicitation_receipt() {
        round_trip(
            receipt(),
            json!({
                "receipt_id": "rcpt_1",
                "prompt_id": 7,
                "name": "demo",
                "server_id": "urn:demo",
                "admission": "admitted",
                "origin": null,
                "command": "demo-server",
                "caller": {"client": "claude", "transport": "stdio", "claimed": "claude 1.0"},
                "attribution": "client",
                "caller_candidates": null,
                "user": "alice",
                "session_id": null,
                "era": "2025-11-25",
                "correlation": {
                    "basis": "in_flight",
                    "requests": [{"id": 3, "method": "tools/call", "tool": "book_table"}],
                },
                "elicitation_id": null,
                "input_key": null,
                "round": null,
                "mode": "url",
                "decision": "hold_for_elicitation_evidence",
                "reasons": [{"code": "not_tied_to_request", "detail": "tied to nothing"}],
                "overridden": true,
                "url": "https://pay.example/x",
                "host": "pay.example",
                "host_unicode": "pay.example",
                "action": "accept",
                "content_sha256": null,
                "note": null,
                "policy_version": "1",
                "bundle": "demo@1",
                "authorization": {"issuer": "https://as.example", "subject": null},
            }),
        );
    }

    #[test]
    fn a_receipt_that_cannot_tell_the_caller() {
        let attribution = Attribution::Unknown {
            clients: vec![caller("claude"), caller("cursor")],
            more_clients: 0,
            gatehouse: true,
        };
        let (kind, who, candidates) = receipt_attribution(&attribution);
        // The same three fields as the attribution's own receipt rendering.
        assert_eq!(json!(kind), json!(attribution.code()));
        assert_eq!(json!(who), attribution.receipt_caller());
        assert_eq!(json!(candidates), attribution.receipt_candidates());
        let mut expected = serde_json::to_value(receipt()).unwrap();
        expected["caller"] = json!("unknown");
        expected["attribution"] = json!("unknown");
        expected["caller_candidates"] = attribution.receipt_candidates();
        round_trip(
            ElicitationReceipt {
                attribution: kind,
                caller: who,
                caller_candidates: candidates,
                ..receipt()
            },
            expected,
        );
        let (kind, who, candidates) = receipt_attribution(&Attribution::None);
        assert_eq!(
            (json!(kind), json!(who), json!(candidates)),
            (json!("none"), Value::Null, Value::Null)
        );
    }

    #[test]
    fn elicitation_completed_by_notification() {
        round_trip(
            ElicitationCompleted {
                receipt_id: "rcpt_1".into(),
                prompt_id: 7,
                elicitation_id: Some("el-1".into()),
                input_key: None,
                name: "demo".into(),
                calls: Some(vec![4, 5]),
                via: CompletedVia::Notification,
            },
            json!({
                "receipt_id": "rcpt_1",
                "prompt_id": 7,
                "elicitation_id": "el-1",
                "name": "demo",
                "calls": [4, 5],
                "via": "notification",
            }),
        );
    }

    #[test]
    fn elicitation_completed_by_a_retried_request() {
        for (key, written) in [(None, Value::Null), (Some("k".to_string()), json!("k"))] {
            round_trip(
                ElicitationCompleted {
                    receipt_id: "rcpt_1".into(),
                    prompt_id: 7,
                    elicitation_id: None,
                    input_key: Some(key),
                    name: "demo".into(),
                    calls: None,
                    via: CompletedVia::RetriedRequestSucceeded,
                },
                json!({
                    "receipt_id": "rcpt_1",
                    "prompt_id": 7,
                    "elicitation_id": null,
                    "input_key": written,
                    "name": "demo",
                    "via": "retried_request_succeeded",
                }),
            );
        }
    }

    #[test]
    fn elicitation_completion_ignored() {
        round_trip(
            ElicitationCompletionIgnored {
                elicitation_id: "el-9".into(),
                name: "demo".into(),
                why: IgnoredWhy::CrossServer,
                abuse: Some("bogus_completions".into()),
            },
            json!({"elicitation_id": "el-9", "name": "demo", "why": "cross_server", "abuse": "bogus_completions"}),
        );
    }

    #[test]
    fn elicitation_retry() {
        for (why, written) in [
            (RetryWhy::UserRetry, "user_retry"),
            (RetryWhy::Completed, "completed"),
        ] {
            round_trip(
                ElicitationRetry {
                    name: "demo".into(),
                    call: 3,
                    attempt: 1,
                    why,
                    receipts: vec!["rcpt_1".into()],
                },
                json!({"name": "demo", "call": 3, "attempt": 1, "why": written, "receipts": ["rcpt_1"]}),
            );
        }
        // A reason the host never writes is not read as one.
        let unknown =
            json!({"name": "demo", "call": 3, "attempt": 1, "why": "bored", "receipts": []});
        assert!(serde_json::from_value::<ElicitationRetry>(unknown).is_err());
    }

    #[test]
    fn session_killed() {
        round_trip(
            SessionKilled {
                name: "demo".into(),
                decision: Decision::KillSessionOnElicitationAbuse,
                reason: "repeated_denials".into(),
                detail: "5 denials".into(),
            },
            json!({
                "name": "demo",
                "decision": "kill_session_on_elicitation_abuse",
                "reason": "repeated_denials",
                "detail": "5 denials",
            }),
        );
    }

    #[test]
    fn server_suspended() {
        round_trip(
            ServerSuspended {
                name: "demo".into(),
                reason: "repeated_denials".into(),
                detail: "5 denials".into(),
                key: "urn:demo".into(),
            },
            json!({"name": "demo", "reason": "repeated_denials", "detail": "5 denials", "key": "urn:demo"}),
        );
    }

    #[test]
    fn server_resumed() {
        round_trip(
            ServerResumed {
                name: "demo".into(),
                key: "urn:demo".into(),
            },
            json!({"name": "demo", "key": "urn:demo"}),
        );
    }

    #[test]
    fn suspended_refused() {
        round_trip(
            SuspendedRefused {
                name: "demo".into(),
                reason: "repeated_denials".into(),
                since: "2026-01-01T00:00:00Z".into(),
            },
            json!({"name": "demo", "reason": "repeated_denials", "since": "2026-01-01T00:00:00Z"}),
        );
    }
}
