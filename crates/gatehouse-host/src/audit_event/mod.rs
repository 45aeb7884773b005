//! The closed set of events the host (and the CLI, through it) writes to the audit log.
//!
//! Every record the host appends is written from a payload type tied to one [`AuditEvent`]
//! ([`crate::Auditor::write`] is the only way in), so neither a free string nor a free JSON
//! object can become a record. The names are the snake_case ones
//! the log has always held (the CLI's `audit show --type`, the UI and SECURITY.md use them);
//! [`crate::gatekeeper::events`] keeps them as `&str` constants for readers. The audit log's
//! own records (`audit_torn_tail`, `audit_head_mismatch`, `audit_short_tail`) are not here:
//! only the log writes them.
//!
//! Each event's `data` has a payload type ([`EventPayload`]: `session.rs`, `gate.rs`,
//! `bundle.rs`); a reader of one event uses [`read_payload`], a reader of every event
//! [`AuditRecord::parse`].

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod bundle;
pub mod confine;
pub mod gate;
pub mod session;

/// The data of one event's records: a type per event, serialized (serde, snake_case fields)
/// as the record's `data` object. The host writes records only through
/// [`crate::Auditor::write`], which takes a payload, so every record's name and shape come
/// from one of these types; readers parse records back with [`read_payload`] into the same
/// type.
pub trait EventPayload: Serialize + DeserializeOwned {
    /// The event every record of this payload is written under.
    const EVENT: AuditEvent;
}

/// A record's (`{"event": …, "data": …}`, as the audit log holds it) data as `P`: `None` when
/// the record is of another event; an error when it is this event but its data does not
/// parse (a record cut to fit the size limit keeps its shape, but a record written by an
/// older version may lack a field).
pub fn read_payload<P: EventPayload>(record: &Value) -> Option<Result<P, serde_json::Error>> {
    if record.get("event").and_then(Value::as_str) != Some(P::EVENT.as_str()) {
        return None;
    }
    let data = record.get("data").cloned().unwrap_or(Value::Null);
    Some(serde_json::from_value(data))
}

/// Declares [`AuditEvent`], its name and [`AuditEvent::ALL`] from one list, so that no variant
/// can be left out of `ALL` or given a second spelling.
macro_rules! audit_events {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// An event the host records. Serialized as its snake_case name, exactly
        /// [`AuditEvent::as_str`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum AuditEvent {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl AuditEvent {
            /// Every event, in declaration order.
            pub const ALL: [AuditEvent; [$($name),*].len()] = [$(AuditEvent::$variant),*];

            /// The name written in the record's `event` field.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(AuditEvent::$variant => $name,)*
                }
            }
        }
    };
}

audit_events! {
    /// An admission decision (the verdict), before anything is exchanged with the server.
    Admission => "admission",
    /// The gate's decision on a tool call, before anything is sent.
    ToolCall => "tool_call",
    /// A sign-in (or step-up) to a server completed; tokens stored in the keychain.
    OauthSignedIn => "oauth_signed_in",
    /// A sign-in was refused (issuer pin, insecure URL) or failed; nothing was stored.
    OauthSignInFailed => "oauth_sign_in_failed",
    /// Tokens were refreshed silently.
    OauthRefreshed => "oauth_refreshed",
    /// The user removed a sign-in.
    OauthLoggedOut => "oauth_logged_out",
    /// A pinned tool's current definition differs from its pin.
    ToolPinMismatch => "tool_pin_mismatch",
    /// The user approved a tool (with its pin), in the warn posture.
    ToolApproved => "tool_approved",
    /// The gate's decision on a `prompts/get`, before anything is sent.
    PromptGet => "prompt_get",
    /// The gate's decision on a `resources/read`, a subscription or an argument completion
    /// for a resource template, before anything is sent.
    ResourceRead => "resource_read",
    /// A pinned prompt's current definition differs from its pin.
    PromptPinMismatch => "prompt_pin_mismatch",
    /// The user approved a prompt (with its pin), in the warn posture.
    PromptApproved => "prompt_approved",
    /// The user approved a resource URI or prefix, in the warn posture.
    ResourceApproved => "resource_approved",
    /// `gatehouse bundle install` accepted a bundle (recorded before it is written).
    BundleAccepted => "bundle_accepted",
    /// `gatehouse bundle install` refused a bundle (verification, rotation, rollback): nothing
    /// was installed.
    BundleRefused => "bundle_refused",
    /// One per elicitation: the receipt of elicitation.md §4.
    ElicitationReceipt => "elicitation_receipt",
    /// A `notifications/elicitation/complete` that matched a pending URL elicitation, or a
    /// retried request after one that succeeded.
    ElicitationCompleted => "elicitation_completed",
    /// A completion that matched nothing (unknown, duplicate, another server's): ignored.
    ElicitationCompletionIgnored => "elicitation_completion_ignored",
    /// A retried request after URL elicitations (-32042, or an MRTR round).
    ElicitationRetry => "elicitation_retry",
    /// The kill switch fired: the connection was closed.
    SessionKilled => "session_killed",
    /// The kill switch suspended a server (recorded before the suspension is saved).
    ServerSuspended => "server_suspended",
    /// The user resumed a suspended server.
    ServerResumed => "server_resumed",
    /// A connection refused because the server is suspended.
    SuspendedRefused => "suspended_refused",
    /// The installed bundles decide differently than when last loaded (a rotation, an expiry).
    TrustReloaded => "trust_reloaded",
    /// The audit log changed durability mode (a bundle requiring another was installed or
    /// removed).
    DurabilityChanged => "durability_changed",
    /// An admission refused because a locked admin bundle forbids what the front end was
    /// started with (other trust roots, demo mode, a user policy): a lock installed since.
    LockRefused => "lock_refused",
    /// A confined server's connection refused by its egress proxy (issue 28): a host its
    /// grants do not name. Bounded per window; the next record counts the ones left out.
    EgressRefused => "egress_refused",
    /// The person changed an unattested server's confinement in `servers.json`.
    ConfinementChanged => "confinement_changed",
}

impl AuditEvent {
    /// The event a record's `event` field names, if the host writes it (`None` for the audit
    /// log's own records and for anything else).
    pub fn from_name(name: &str) -> Option<AuditEvent> {
        AuditEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

impl std::fmt::Display for AuditEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Declares [`AuditRecord`] from one list of `Variant => payload type`: a variant per event
/// that has a payload type, holding it. Each pairing is checked at compile time against the
/// payload's [`EventPayload::EVENT`], so a line naming the wrong event does not build.
macro_rules! audit_records {
    ($($variant:ident => $payload:ty,)*) => {
        /// A host record's data as its event's payload type: what a reader that handles every
        /// event matches on.
        // Unboxed: a receipt is the largest payload, and readers match on the variants
        // directly; a few hundred bytes per record read is no cost worth a box.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum AuditRecord {
            $($variant($payload),)*
        }

        $(const _: () = assert!(
            matches!(<$payload as EventPayload>::EVENT, AuditEvent::$variant),
            concat!(stringify!($payload), " is not the payload of AuditEvent::", stringify!($variant)),
        );)*

        impl AuditRecord {
            /// Every event, in the list's order (the same set as [`AuditEvent::ALL`]: `parse`
            /// matches on the event exhaustively).
            pub const EVENTS: &'static [AuditEvent] = &[$(AuditEvent::$variant),*];

            /// The event this record is of.
            pub fn event(&self) -> AuditEvent {
                match self {
                    $(AuditRecord::$variant(_) => AuditEvent::$variant,)*
                }
            }

            /// A record as the audit log holds it (`{"event": …, "data": …}`): `None` when
            /// its event is not in [`AuditRecord::EVENTS`] (the audit log's own records,
            /// anything else); an error when its data does not parse as that event's payload.
            pub fn parse(record: &Value) -> Option<Result<AuditRecord, serde_json::Error>> {
                let event = AuditEvent::from_name(record.get("event")?.as_str()?)?;
                match event {
                    $(AuditEvent::$variant => {
                        read_payload::<$payload>(record).map(|p| p.map(AuditRecord::$variant))
                    })*
                }
            }
        }
    };
}

audit_records! {
    Admission => gate::Admission,
    ToolCall => gate::ToolCall,
    OauthSignedIn => session::OauthSignedIn,
    OauthSignInFailed => session::OauthSignInFailed,
    OauthRefreshed => session::OauthRefreshed,
    OauthLoggedOut => session::OauthLoggedOut,
    ToolPinMismatch => gate::PinMismatched<gate::ToolName>,
    ToolApproved => gate::Approved<gate::ToolPin>,
    PromptGet => gate::PromptGet,
    ResourceRead => gate::ResourceRead,
    PromptPinMismatch => gate::PinMismatched<gate::PromptName>,
    PromptApproved => gate::Approved<gate::PromptPin>,
    ResourceApproved => gate::Approved<gate::ResourceEntry>,
    BundleAccepted => bundle::BundleAccepted,
    BundleRefused => bundle::BundleRefused,
    ElicitationReceipt => session::ElicitationReceipt,
    ElicitationCompleted => session::ElicitationCompleted,
    ElicitationCompletionIgnored => session::ElicitationCompletionIgnored,
    ElicitationRetry => session::ElicitationRetry,
    SessionKilled => session::SessionKilled,
    ServerSuspended => session::ServerSuspended,
    ServerResumed => session::ServerResumed,
    SuspendedRefused => session::SuspendedRefused,
    TrustReloaded => gate::TrustReloaded,
    DurabilityChanged => gate::DurabilityChanged,
    LockRefused => gate::LockRefused,
    EgressRefused => confine::EgressRefused,
    ConfinementChanged => confine::ConfinementChanged,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn a_record_parses_as_its_events_variant() {
        let resumed = session::ServerResumed {
            name: "demo".into(),
            key: "id:urn:demo".into(),
        };
        let record = serde_json::json!({
            "event": "server_resumed",
            "data": serde_json::to_value(&resumed).unwrap(),
        });
        let parsed = AuditRecord::parse(&record).unwrap().unwrap();
        assert_eq!(parsed.event(), AuditEvent::ServerResumed);
        assert_eq!(parsed, AuditRecord::ServerResumed(resumed));

        let broken = serde_json::json!({"event": "server_resumed", "data": {"name": 1}});
        assert!(AuditRecord::parse(&broken).unwrap().is_err());
        for other in [
            serde_json::json!({"event": gatehouse_audit::EVENT_TORN_TAIL, "data": {}}),
            serde_json::json!({"event": "no_such_event", "data": {}}),
            serde_json::json!({"data": {}}),
        ] {
            assert!(AuditRecord::parse(&other).is_none(), "{other}");
        }
    }

    #[test]
    fn every_event_has_its_payload_listed_once() {
        let set: BTreeSet<AuditEvent> = AuditRecord::EVENTS.iter().copied().collect();
        assert_eq!(set.len(), AuditRecord::EVENTS.len());
        let all: BTreeSet<AuditEvent> = AuditEvent::ALL.into_iter().collect();
        assert_eq!(
            set, all,
            "an event without a payload type, or one listed twice"
        );
    }

    /// Every gate record the host writes parses back through the reader of every event,
    /// into the variant of its event.
    #[test]
    fn a_gate_record_written_by_the_host_parses_as_its_variant() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let (auditor, _) =
            crate::Auditor::open(&path, crate::tap::system_clock()).expect("the log opens");
        for denied in [false, true] {
            auditor
                .write(Some("demo"), &gate::ToolCall::sample("echo", denied))
                .unwrap();
        }
        drop(auditor);
        let records = gatehouse_audit::read(&path).unwrap();
        assert_eq!(records.len(), 2);
        for (record, denied) in records.iter().zip([false, true]) {
            let value = serde_json::to_value(record).unwrap();
            match AuditRecord::parse(&value).unwrap().unwrap() {
                AuditRecord::ToolCall(call) => {
                    assert_eq!(call, gate::ToolCall::sample("echo", denied))
                }
                other => panic!("a tool_call record parsed as {:?}", other.event()),
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for e in AuditEvent::ALL {
            assert_eq!(AuditEvent::from_name(e.as_str()), Some(e), "{e:?}");
            assert_eq!(e.to_string(), e.as_str());
        }
        assert_eq!(AuditEvent::from_name("Tool_call"), None);
        assert_eq!(AuditEvent::from_name(""), None);
    }

    #[test]
    fn all_holds_each_variant_once() {
        let names: BTreeSet<&str> = AuditEvent::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(names.len(), AuditEvent::ALL.len());
        let set: BTreeSet<AuditEvent> = AuditEvent::ALL.into_iter().collect();
        assert_eq!(set.len(), AuditEvent::ALL.len());
        assert_eq!(AuditEvent::ALL.len(), 28);
    }

    #[test]
    fn serde_uses_the_same_names() {
        for e in AuditEvent::ALL {
            let json = serde_json::to_value(e).unwrap();
            assert_eq!(json, serde_json::Value::String(e.as_str().into()), "{e:?}");
            let back: AuditEvent = serde_json::from_value(json).unwrap();
            assert_eq!(back, e);
        }
        assert!(serde_json::from_str::<AuditEvent>("\"audit_torn_tail\"").is_err());
    }

    #[test]
    fn no_event_is_one_of_the_logs_own() {
        for e in AuditEvent::ALL {
            let name = e.as_str();
            assert!(
                !name.starts_with(gatehouse_audit::RESERVED_EVENT_PREFIX),
                "{name} uses the audit log's reserved prefix"
            );
            assert!(
                gatehouse_audit::check_event_name(name).is_ok(),
                "the audit log refuses {name}"
            );
        }
        for own in [
            gatehouse_audit::EVENT_TORN_TAIL,
            gatehouse_audit::EVENT_HEAD_MISMATCH,
            gatehouse_audit::EVENT_SHORT_TAIL,
        ] {
            assert_eq!(AuditEvent::from_name(own), None, "{own}");
        }
    }

    /// The events listed in SECURITY.md's "What the audit log records" table.
    fn documented_events() -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../SECURITY.md");
        let text = std::fs::read_to_string(&path).unwrap();
        let heading = "### What the audit log records";
        let section = text
            .split_once(heading)
            .unwrap_or_else(|| panic!("SECURITY.md has no {heading:?} section"))
            .1;
        let section = section.split("\n#").next().unwrap();
        let mut rows = section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'));
        let header = rows.next().expect("the section has a table");
        assert!(header.starts_with("| event |"), "{header}");
        rows.filter(|l| !l.starts_with("|---"))
            .map(|row| {
                let cell = row.split('|').nth(1).unwrap().trim();
                cell.strip_prefix('`')
                    .and_then(|c| c.strip_suffix('`'))
                    .unwrap_or_else(|| panic!("not a `name`: {row}"))
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn security_md_lists_exactly_these_events() {
        let listed = documented_events();
        let documented: BTreeSet<String> = listed.iter().cloned().collect();
        assert_eq!(
            documented.len(),
            listed.len(),
            "an event listed twice: {listed:?}"
        );
        let ours: BTreeSet<String> = AuditEvent::ALL
            .iter()
            .map(|e| e.as_str().to_string())
            .collect();
        let missing: Vec<_> = ours.difference(&documented).collect();
        let extra: Vec<_> = documented.difference(&ours).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "SECURITY.md's event table: missing {missing:?}, not an event {extra:?}"
        );
    }
}
