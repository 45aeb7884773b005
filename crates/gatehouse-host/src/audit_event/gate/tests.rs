//! Each payload written through a real [`Auditor`] comes back from the log line as the same
//! payload, and its `data` is exactly the JSON these records have always held (names and
//! order), so the log format did not change with the types.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::Auditor;
use crate::audit_event::read_payload;
use crate::caller::DownstreamTransport;

/// Writes `payload` to a fresh log, and returns the log's last line as JSON.
fn written<P: EventPayload>(payload: &P) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let clock: crate::Clock = Arc::new(|| time::macros::datetime!(2026-11-21 12:00 UTC));
    let (auditor, _) = Auditor::open(&path, clock).unwrap();
    auditor.write(Some("urn:example:server"), payload).unwrap();
    drop(auditor);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

/// The payload survives the log, its data is `expected` byte for byte, and a record of
/// another event is not read as it.
fn round_trip<P: EventPayload + PartialEq + std::fmt::Debug>(payload: P, expected: Value) {
    let record = written(&payload);
    assert_eq!(record["event"], P::EVENT.as_str());
    assert_eq!(
        serde_json::to_string(&record["data"]).unwrap(),
        serde_json::to_string(&expected).unwrap(),
        "{}",
        P::EVENT
    );
    let back: P = read_payload(&record).expect("its own event").unwrap();
    assert_eq!(back, payload);
    let other = if P::EVENT == AuditEvent::LockRefused {
        written(&DurabilityChanged {
            before: Durability::Sync.into(),
            after: Durability::Sync.into(),
            set_by: vec![],
        })
    } else {
        written(&LockRefused {
            code: "admin_locked".into(),
            detail: "d".into(),
        })
    };
    assert!(read_payload::<P>(&other).is_none(), "{}", P::EVENT);
}

fn caller() -> Option<Caller> {
    Some(Caller::new(
        "cursor",
        DownstreamTransport::Http,
        Some("Cursor 1.0"),
    ))
}

#[test]
fn admission() {
    let payload = Admission {
        name: "files".into(),
        status: Status::Admitted,
        proceeds: true,
        posture: Posture::DenyByDefault,
        reason: None,
        code: None,
        detail: String::new(),
        identity: Some(Identity {
            id: "urn:example:files".into(),
            clearance: "internal".into(),
            asserted_clearance: "internal".into(),
            signer_key_id: "k1".into(),
            bundle: "acme@7".into(),
            bundle_source: BundleSource::System,
            demo: false,
            body_sha256: "ab".into(),
            attested_by: crate::admission::IdentitySource::Server,
        }),
        claimed: Claimed {
            publisher: Some("Acme".into()),
            server_name: None,
            server_version: None,
        },
        transport: ServerKind::Http,
        origin: Some("https://files.example".into()),
        origin_binding: Some(OriginBinding::Bundle),
        command: None,
        package: None,
        bundle: Some("acme@7".into()),
        demo: false,
        decision: AdmissionDecision::Admitted,
        confinement: None,
    };
    let expected = json!({
        "name": "files", "status": "admitted", "proceeds": true, "posture": "deny-by-default",
        "reason": null, "code": null, "detail": "",
        "identity": {"id": "urn:example:files", "clearance": "internal",
            "asserted_clearance": "internal", "signer_key_id": "k1", "bundle": "acme@7",
            "bundle_source": "system", "demo": false, "body_sha256": "ab",
            "attested_by": "server"},
        "claimed": {"publisher": "Acme", "server_name": null, "server_version": null},
        "transport": "http", "origin": "https://files.example", "origin_binding": "bundle",
        "command": null, "bundle": "acme@7", "demo": false, "decision": "admitted",
    });
    round_trip(payload.clone(), expected.clone());
    // A package server's record adds what is bound and checked, after the command.
    let package = Admission {
        package: Some(PackageSummary {
            ecosystem: gatehouse_attest::package::Ecosystem::Npm,
            package: "@modelcontextprotocol/server-filesystem".into(),
            version: "2026.8.31".into(),
            closure: 104,
            files_verified: 1200,
            user_args: vec!["/home/a/docs".into()],
            launcher: gatehouse_package::LauncherKind::Npx,
        }),
        ..payload.clone()
    };
    let mut with_package = expected.clone();
    let object = with_package.as_object_mut().unwrap();
    let tail: Vec<(String, serde_json::Value)> = ["bundle", "demo", "decision"]
        .iter()
        .map(|k| (k.to_string(), object.remove(*k).unwrap()))
        .collect();
    object.insert(
        "package".into(),
        json!({"ecosystem": "npm", "package": "@modelcontextprotocol/server-filesystem",
            "version": "2026.8.31", "closure": 104, "files_verified": 1200,
            "user_args": ["/home/a/docs"], "launcher": "npx"}),
    );
    object.extend(tail);
    round_trip(package, with_package);
    // Without an origin binding (stdio), the key is absent, as it always was.
    let stdio = Admission {
        origin_binding: None,
        decision: AdmissionDecision::AllowedByPosture,
        confinement: None,
        ..payload
    };
    let record = written(&stdio);
    assert!(record["data"].get("origin_binding").is_none());
    assert_eq!(record["data"]["decision"], "allowed_by_posture");
    assert_eq!(read_payload::<Admission>(&record).unwrap().unwrap(), stdio);
}

#[test]
fn tool_call() {
    let allowed = Decided {
        decision: ToolDecision::Allowed {
            tool: "echo".into(),
            scope: "bundle:acme@7".into(),
            pinned: true,
        },
        admission: Status::Admitted,
        name: "demo".into(),
        caller: caller(),
    };
    round_trip(
        allowed,
        json!({"decision": "allowed", "tool": "echo", "scope": "bundle:acme@7", "pinned": true,
            "admission": "admitted", "name": "demo",
            "caller": {"client": "cursor", "transport": "http", "claimed": "Cursor 1.0"}}),
    );
    let denied = Decided {
        decision: ToolDecision::Denied {
            tool: "rm".into(),
            reason: GateReason::ToolPinMismatch,
            code: None,
            detail: "changed".into(),
        },
        admission: Status::Unattested,
        name: "demo".into(),
        caller: None,
    };
    round_trip(
        denied,
        json!({"decision": "denied", "tool": "rm", "reason": "tool_pin_mismatch", "code": null,
            "detail": "changed", "admission": "unattested", "name": "demo"}),
    );
}

#[test]
fn prompt_get() {
    round_trip(
        Decided {
            decision: PromptDecision::Allowed {
                prompt: "summarize".into(),
                scope: "user".into(),
                pinned: false,
            },
            admission: Status::Admitted,
            name: "demo".into(),
            caller: None,
        },
        json!({"decision": "allowed", "prompt": "summarize", "scope": "user", "pinned": false,
            "admission": "admitted", "name": "demo"}),
    );
    round_trip(
        Decided {
            decision: PromptDecision::Denied {
                prompt: "x".into(),
                reason: GateReason::PromptNotAdmitted,
                detail: "d".into(),
            },
            admission: Status::Refused,
            name: "demo".into(),
            caller: caller(),
        },
        json!({"decision": "denied", "prompt": "x", "reason": "prompt_not_admitted",
            "detail": "d", "admission": "refused", "name": "demo",
            "caller": {"client": "cursor", "transport": "http", "claimed": "Cursor 1.0"}}),
    );
}

#[test]
fn resource_read() {
    round_trip(
        Decided {
            decision: ResourceDecision::Allowed {
                action: ResourceAction::Read,
                uri: "demo://notes/a".into(),
                scope: "bundle:demo@1".into(),
                prefix: Some("demo://notes/".into()),
            },
            admission: Status::Admitted,
            name: "demo".into(),
            caller: None,
        },
        json!({"decision": "allowed", "action": "read", "uri": "demo://notes/a",
            "scope": "bundle:demo@1", "prefix": "demo://notes/", "admission": "admitted",
            "name": "demo"}),
    );
    round_trip(
        Decided {
            decision: ResourceDecision::Allowed {
                action: ResourceAction::Subscribe,
                uri: "demo://counter".into(),
                scope: "user".into(),
                prefix: None,
            },
            admission: Status::Admitted,
            name: "demo".into(),
            caller: None,
        },
        json!({"decision": "allowed", "action": "subscribe", "uri": "demo://counter",
            "scope": "user", "prefix": null, "admission": "admitted", "name": "demo"}),
    );
    round_trip(
        Decided {
            decision: ResourceDecision::Denied {
                action: ResourceAction::Read,
                target: ResourceTarget::Uri("demo://notes/../x".into()),
                reason: GateReason::ResourceUriRefused,
                detail: "d".into(),
            },
            admission: Status::Admitted,
            name: "demo".into(),
            caller: caller(),
        },
        json!({"decision": "denied", "action": "read", "uri": "demo://notes/../x",
            "reason": "resource_uri_refused", "detail": "d", "admission": "admitted",
            "name": "demo",
            "caller": {"client": "cursor", "transport": "http", "claimed": "Cursor 1.0"}}),
    );
    round_trip(
        Decided {
            decision: ResourceDecision::Denied {
                action: ResourceAction::Complete,
                target: ResourceTarget::Template("demo://notes/{name}".into()),
                reason: GateReason::ResourceNotAdmitted,
                detail: "d".into(),
            },
            admission: Status::Admitted,
            name: "demo".into(),
            caller: None,
        },
        json!({"decision": "denied", "action": "complete", "template": "demo://notes/{name}",
            "reason": "resource_not_admitted", "detail": "d", "admission": "admitted",
            "name": "demo"}),
    );
}

#[test]
fn approvals() {
    fn approved<E>(entry: E) -> Approved<E> {
        Approved {
            entry,
            approval_key: "stdio:/bin/x".into(),
            scope: ApprovalScope::User,
            findings: Vec::new(),
        }
    }
    round_trip(
        approved(ToolPin {
            tool: "echo".into(),
            pin: "sha256:00".into(),
        }),
        json!({"tool": "echo", "pin": "sha256:00", "approval_key": "stdio:/bin/x",
            "scope": "user"}),
    );
    round_trip(
        approved(PromptPin {
            prompt: "p".into(),
            pin: "sha256:01".into(),
        }),
        json!({"prompt": "p", "pin": "sha256:01", "approval_key": "stdio:/bin/x",
            "scope": "user"}),
    );
    round_trip(
        approved(ResourceEntry::Uri("demo://a".into())),
        json!({"uri": "demo://a", "approval_key": "stdio:/bin/x", "scope": "user"}),
    );
    round_trip(
        approved(ResourceEntry::Prefix("demo://notes/".into())),
        json!({"prefix": "demo://notes/", "approval_key": "stdio:/bin/x", "scope": "user"}),
    );
    // Acknowledged findings (issue 27) are written only when there are some.
    round_trip(
        Approved {
            findings: vec!["invisible_characters".into(), "secret_request".into()],
            ..approved(ToolPin {
                tool: "echo".into(),
                pin: "sha256:00".into(),
            })
        },
        json!({"tool": "echo", "pin": "sha256:00", "approval_key": "stdio:/bin/x",
            "scope": "user", "findings": ["invisible_characters", "secret_request"]}),
    );
}

#[test]
fn pin_mismatches() {
    fn mismatch<N>(subject: N) -> PinMismatched<N> {
        PinMismatched {
            subject,
            expected: "sha256:00".into(),
            actual: "sha256:11".into(),
            scope: "bundle:acme@7".into(),
            name: "demo".into(),
        }
    }
    round_trip(
        mismatch(ToolName { tool: "t".into() }),
        json!({"tool": "t", "expected": "sha256:00", "actual": "sha256:11",
            "scope": "bundle:acme@7", "name": "demo"}),
    );
    round_trip(
        mismatch(PromptName { prompt: "p".into() }),
        json!({"prompt": "p", "expected": "sha256:00", "actual": "sha256:11",
            "scope": "bundle:acme@7", "name": "demo"}),
    );
}

#[test]
fn lock_refused() {
    round_trip(
        LockRefused {
            code: "admin_locked".into(),
            detail: "the admin bundle acme@7 is locked".into(),
        },
        json!({"code": "admin_locked", "detail": "the admin bundle acme@7 is locked"}),
    );
}

#[test]
fn trust_reloaded() {
    let state = |posture| TrustState {
        bundles: vec![BundleState {
            bundle: "acme@7".into(),
            locked: true,
            expires: "2027-01-01T00:00:00Z".into(),
            servers: vec!["urn:example:files".into()],
            signers: vec!["k1".into()],
            source: BundleSource::System,
        }],
        sha256: vec!["ab".into()],
        posture,
        locked_by: Some("acme@7".into()),
        problems: vec![TrustProblem {
            code: "bundle_expired".into(),
            message: "m".into(),
        }],
    };
    let bundle = json!({"bundle": "acme@7", "locked": true, "expires": "2027-01-01T00:00:00Z",
        "servers": ["urn:example:files"], "signers": ["k1"], "source": "system"});
    round_trip(
        TrustReloaded {
            before: state(Posture::Warn),
            after: state(Posture::DenyByDefault),
        },
        json!({
            "before": {"bundles": [bundle], "sha256": ["ab"], "posture": "warn",
                "locked_by": "acme@7", "problems": [{"code": "bundle_expired", "message": "m"}]},
            "after": {"bundles": [bundle], "sha256": ["ab"], "posture": "deny-by-default",
                "locked_by": "acme@7", "problems": [{"code": "bundle_expired", "message": "m"}]},
        }),
    );
}

#[test]
fn durability_changed() {
    let batched = Durability::Batched {
        max_delay: Duration::from_millis(50),
        max_records: 128,
    };
    let payload = DurabilityChanged {
        before: batched.into(),
        after: Durability::Sync.into(),
        set_by: vec!["policy".into(), "acme@7".into()],
    };
    // The same JSON the audit crate's own serialization of a durability gives.
    let expected = json!({"before": batched, "after": Durability::Sync,
        "set_by": ["policy", "acme@7"]});
    assert_eq!(
        expected,
        json!({"before": {"mode": "batched", "flush_ms": 50, "flush_records": 128},
            "after": {"mode": "sync"}, "set_by": ["policy", "acme@7"]})
    );
    round_trip(payload, expected);
}
