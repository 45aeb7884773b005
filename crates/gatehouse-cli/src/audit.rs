//! `gatehouse audit verify|show|export`: reading the audit log. Reading never creates or
//! repairs a log; only the host's writers append to it.

use std::io::Write;
use std::path::PathBuf;

use gatehouse_audit::{AuditError, ExportFormat, Filter, Record};
use gatehouse_host::ErrorCode;
use gatehouse_host::audit_event::AuditRecord;
use gatehouse_host::audit_event::gate::{
    AdmissionDecision, PromptDecision, ResourceDecision, ToolDecision,
};
use serde_json::json;

use crate::cli::{AuditCommand, ExportFormatArg};
use crate::commands::Context;
use crate::failure::Failure;
use crate::output;

fn failure(error: AuditError) -> Failure {
    let exit = match error {
        AuditError::NotFound { .. } => 2,
        _ => 1,
    };
    Failure {
        code: (&error).into(),
        message: error.to_string(),
        exit,
    }
}

fn filter(server: Option<String>, event: Option<String>) -> Filter {
    Filter { server, event }
}

pub fn run(context: &Context, command: AuditCommand) -> Result<u8, Failure> {
    let log = |file: Option<PathBuf>| file.unwrap_or_else(|| context.audit_path.clone());
    match command {
        AuditCommand::Verify { file } => {
            let path = log(file);
            let report = gatehouse_audit::verify(&path).map_err(failure)?;
            if context.json {
                output::print_json(&serde_json::to_value(&report).expect("serializes"));
            } else {
                println!("{}: {report}", path.display());
            }
            Ok(if report.ok { 0 } else { 1 })
        }
        AuditCommand::Show {
            file,
            server,
            event,
        } => {
            let path = log(file);
            let records =
                filter(server, event).apply(gatehouse_audit::read(&path).map_err(failure)?);
            if context.json {
                output::print_json(&json!({"log": path, "records": records}));
            } else {
                if records.is_empty() {
                    println!("no matching records in {}", path.display());
                }
                for record in &records {
                    println!("{}", describe(record));
                }
            }
            Ok(0)
        }
        AuditCommand::Export {
            file,
            server,
            event,
            format,
            out,
        } => {
            let format = match format {
                ExportFormatArg::Jsonl => ExportFormat::Jsonl,
                ExportFormatArg::Json => ExportFormat::JsonArray,
            };
            let path = log(file);
            let filter = filter(server, event);
            let count = match &out {
                Some(target) => {
                    // Written next to the target and renamed, so a failed export leaves no
                    // half-written file.
                    let mut buffer = Vec::new();
                    let count = gatehouse_audit::export(&path, &filter, format, &mut buffer)
                        .map_err(failure)?;
                    gatehouse_host::files::write_atomically(target, &buffer, 0o600).map_err(
                        |e| Failure::usage(format!("cannot write {}: {e}", target.display())),
                    )?;
                    count
                }
                None => {
                    let stdout = std::io::stdout();
                    let mut lock = stdout.lock();
                    let count = gatehouse_audit::export(&path, &filter, format, &mut lock)
                        .map_err(failure)?;
                    let _ = lock.flush();
                    count
                }
            };
            if let Some(target) = out {
                eprintln!("exported {count} record(s) to {}", target.display());
            }
            Ok(0)
        }
    }
}

/// One line per record for people: seq, time, event, server, then the record's decision
/// fields (`decision`, `tool`, `reason`, `bundle`, and `— detail`), read through the record's
/// payload type.
fn describe(record: &Record) -> String {
    let mut parts = vec![format!(
        "#{} {} {}",
        record.seq,
        record
            .time
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        record.event
    )];
    if let Some(server) = &record.server {
        parts.push(output::safe(server));
    }
    let value = json!({"event": record.event, "data": record.data});
    match AuditRecord::parse(&value) {
        Some(Ok(parsed)) => summary(&parsed).push_onto(&mut parts),
        // A record an older or newer version wrote differently: shown, never a failure, so
        // the rest of the log still reads.
        Some(Err(e)) => parts.push(format!(
            "(its data does not parse as a {} record: {})",
            record.event,
            output::safe_line(&e.to_string())
        )),
        None if is_the_logs_own(&record.event) => {}
        None => parts.push("(an event this version of gatehouse does not record)".into()),
    }
    parts.join(" ")
}

/// The audit log's own records (a torn tail, a head mismatch, a short tail): they have no
/// payload type, and their line is the seq, time and event alone.
fn is_the_logs_own(event: &str) -> bool {
    [
        gatehouse_audit::EVENT_TORN_TAIL,
        gatehouse_audit::EVENT_HEAD_MISMATCH,
        gatehouse_audit::EVENT_SHORT_TAIL,
    ]
    .contains(&event)
}

/// The fields of a record's line, each shown when set, in this order.
#[derive(Default)]
struct Summary<'a> {
    decision: Option<&'a str>,
    tool: Option<&'a str>,
    reason: Option<&'a str>,
    bundle: Option<&'a str>,
    /// Shown after a dash; an empty detail is not shown.
    detail: Option<&'a str>,
}

impl Summary<'_> {
    fn push_onto(&self, parts: &mut Vec<String>) {
        let fields = [
            ("decision", self.decision),
            ("tool", self.tool),
            ("reason", self.reason),
            ("bundle", self.bundle),
        ];
        for (key, value) in fields {
            if let Some(value) = value {
                parts.push(format!("{key}={}", output::safe(value)));
            }
        }
        if let Some(detail) = self.detail.filter(|d| !d.is_empty()) {
            parts.push(format!("— {}", output::safe(detail)));
        }
    }
}

/// What each event's line shows: the fields of its payload named `decision`, `tool`,
/// `reason`, `bundle` and `detail` (the line has always shown those, whatever the event).
/// Exhaustive, so a new event is described before it builds.
fn summary(record: &AuditRecord) -> Summary<'_> {
    match record {
        AuditRecord::Admission(a) => Summary {
            decision: Some(match a.decision {
                AdmissionDecision::Admitted => "admitted",
                AdmissionDecision::AllowedByPosture => "allowed_by_posture",
                AdmissionDecision::Refused => "refused",
            }),
            reason: a.reason.map(ErrorCode::as_str),
            bundle: a.bundle.as_deref(),
            detail: Some(&a.detail),
            ..Summary::default()
        },
        AuditRecord::ToolCall(call) => match &call.decision {
            ToolDecision::Allowed { tool, .. } => Summary {
                decision: Some(call.decision.code()),
                tool: Some(tool),
                ..Summary::default()
            },
            ToolDecision::Denied {
                tool,
                reason,
                detail,
                ..
            } => Summary {
                decision: Some(call.decision.code()),
                tool: Some(tool),
                reason: Some(reason.as_str()),
                detail: Some(detail),
                ..Summary::default()
            },
        },
        AuditRecord::PromptGet(get) => match &get.decision {
            PromptDecision::Allowed { .. } => Summary {
                decision: Some("allowed"),
                ..Summary::default()
            },
            PromptDecision::Denied { reason, detail, .. } => Summary {
                decision: Some("denied"),
                reason: Some(reason.as_str()),
                detail: Some(detail),
                ..Summary::default()
            },
        },
        AuditRecord::ResourceRead(read) => match &read.decision {
            ResourceDecision::Allowed { .. } => Summary {
                decision: Some("allowed"),
                ..Summary::default()
            },
            ResourceDecision::Denied { reason, detail, .. } => Summary {
                decision: Some("denied"),
                reason: Some(reason.as_str()),
                detail: Some(detail),
                ..Summary::default()
            },
        },
        AuditRecord::OauthSignedIn(s) => Summary {
            reason: Some(s.reason.code()),
            ..Summary::default()
        },
        AuditRecord::OauthSignInFailed(f) => Summary {
            reason: Some(f.reason.code()),
            detail: Some(&f.detail),
            ..Summary::default()
        },
        AuditRecord::ToolPinMismatch(m) => Summary {
            tool: Some(&m.subject.tool),
            ..Summary::default()
        },
        AuditRecord::ToolApproved(a) => Summary {
            tool: Some(&a.entry.tool),
            ..Summary::default()
        },
        AuditRecord::BundleAccepted(b) => Summary {
            bundle: Some(&b.bundle),
            ..Summary::default()
        },
        AuditRecord::BundleRefused(b) => Summary {
            reason: Some(b.reason.as_str()),
            detail: Some(&b.detail),
            ..Summary::default()
        },
        AuditRecord::ElicitationReceipt(r) => Summary {
            decision: Some(r.decision.as_str()),
            bundle: r.bundle.as_deref(),
            ..Summary::default()
        },
        AuditRecord::SessionKilled(k) => Summary {
            decision: Some(k.decision.as_str()),
            reason: Some(&k.reason),
            detail: Some(&k.detail),
            ..Summary::default()
        },
        AuditRecord::ServerSuspended(s) => Summary {
            reason: Some(&s.reason),
            detail: Some(&s.detail),
            ..Summary::default()
        },
        AuditRecord::SuspendedRefused(s) => Summary {
            reason: Some(&s.reason),
            ..Summary::default()
        },
        AuditRecord::LockRefused(l) => Summary {
            detail: Some(&l.detail),
            ..Summary::default()
        },
        // Nothing of these is a decision, a reason or a detail: the line names the event.
        AuditRecord::OauthRefreshed(_)
        | AuditRecord::OauthLoggedOut(_)
        | AuditRecord::PromptPinMismatch(_)
        | AuditRecord::PromptApproved(_)
        | AuditRecord::ResourceApproved(_)
        | AuditRecord::ElicitationCompleted(_)
        | AuditRecord::ElicitationCompletionIgnored(_)
        | AuditRecord::ElicitationRetry(_)
        | AuditRecord::ServerResumed(_)
        | AuditRecord::TrustReloaded(_)
        | AuditRecord::DurabilityChanged(_) => Summary::default(),
    }
}

#[cfg(test)]
mod tests {
    use gatehouse_host::audit_event::AuditEvent;
    use serde_json::{Map, Value};
    use time::OffsetDateTime;

    use super::*;

    /// The line as it was built before records were read through their types: every record's
    /// string fields `decision`, `tool`, `reason`, `bundle`, then `detail`. The typed lines
    /// must stay exactly these.
    fn generic(record: &Record) -> String {
        let field = |key: &str| record.data.get(key).and_then(Value::as_str);
        let mut parts = vec![format!(
            "#{} {} {}",
            record.seq,
            record
                .time
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            record.event
        )];
        if let Some(server) = &record.server {
            parts.push(output::safe(server));
        }
        for key in ["decision", "tool", "reason", "bundle"] {
            if let Some(value) = field(key) {
                parts.push(format!("{key}={}", output::safe(value)));
            }
        }
        if let Some(detail) = field("detail").filter(|d| !d.is_empty()) {
            parts.push(format!("— {}", output::safe(detail)));
        }
        parts.join(" ")
    }

    fn record(event: &str, data: Value) -> Record {
        let data: Map<String, Value> = match data {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        };
        Record {
            seq: 7,
            time: OffsetDateTime::UNIX_EPOCH,
            event: event.into(),
            server: Some("demo".into()),
            prev: "0".repeat(64),
            data,
        }
    }

    /// Records of each event as the host writes them (several where the decision changes
    /// what the record holds). Exhaustive, so a new event needs a sample here too.
    fn samples(event: AuditEvent) -> Vec<Value> {
        let denied = |extra: Value| {
            let mut data = json!({"decision": "denied", "admission": "admitted", "name": "demo"});
            data.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            data
        };
        match event {
            AuditEvent::Admission => {
                let admitted = json!({
                    "name": "demo", "status": "admitted", "proceeds": true,
                    "posture": "deny-by-default", "reason": null, "code": null,
                    "detail": "admitted by DEMO-ONLY-gatehouse-demo@1",
                    "identity": {
                        "id": "urn:gatehouse:demo-server", "clearance": "internal",
                        "asserted_clearance": "internal", "signer_key_id": "DEMO-ONLY-signer",
                        "bundle": "DEMO-ONLY-gatehouse-demo@1", "bundle_source": "demo",
                        "demo": true, "body_sha256": "7ad7",
                    },
                    "claimed": {"publisher": "Demo", "server_name": null, "server_version": null},
                    "transport": "stdio", "origin": null, "command": "demo-server",
                    "bundle": "DEMO-ONLY-gatehouse-demo@1", "demo": true, "decision": "admitted",
                });
                let mut posture = admitted.clone();
                posture["status"] = json!("unattested");
                posture["reason"] = json!("unsigned");
                posture["detail"] = json!("no attestation");
                posture["identity"] = Value::Null;
                posture["bundle"] = Value::Null;
                posture["posture"] = json!("warn");
                posture["decision"] = json!("allowed_by_posture");
                let mut refused = posture.clone();
                refused["proceeds"] = json!(false);
                refused["posture"] = json!("deny-by-default");
                refused["decision"] = json!("refused");
                vec![admitted, posture, refused]
            }
            AuditEvent::ToolCall => vec![
                json!({"decision": "allowed", "tool": "echo", "scope": "user", "pinned": false,
                       "admission": "admitted", "name": "demo"}),
                denied(
                    json!({"tool": "nope", "reason": "tool_not_admitted", "code": 9,
                              "detail": "the tool \"nope\" is not on this server's allow-list"}),
                ),
                denied(
                    json!({"tool": "pinned", "reason": "tool_pin_mismatch", "code": null,
                              "detail": "", "caller": {"client": "claude", "transport": "stdio",
                              "claimed": null}}),
                ),
            ],
            AuditEvent::OauthSignedIn => vec![json!({
                "name": "notes", "resource": "https://mcp.example/mcp",
                "issuer": "https://as.example", "client_id": "c-1",
                "registration": "metadata_document", "scopes": ["read"], "reason": "step_up",
                "subject": null, "token": "sha256:0123",
            })],
            AuditEvent::OauthSignInFailed => vec![json!({
                "name": "notes", "resource": "https://mcp.example/mcp", "issuer": null,
                "reason": "sign_in", "code": "sign_in_timed_out", "detail": "too slow",
            })],
            AuditEvent::OauthRefreshed => {
                vec![json!({"name": "notes", "issuer": null, "scopes": [], "token": null})]
            }
            AuditEvent::OauthLoggedOut => {
                vec![json!({"name": "notes", "issuer": "https://as.example", "client_id": "c-1"})]
            }
            AuditEvent::ToolPinMismatch => vec![json!({
                "tool": "echo", "expected": "sha256:a", "actual": "sha256:b",
                "scope": "user", "name": "demo",
            })],
            AuditEvent::ToolApproved => vec![
                json!({"tool": "echo", "pin": "sha256:a", "approval_key": "k", "scope": "user"}),
            ],
            AuditEvent::PromptGet => vec![
                json!({"decision": "allowed", "prompt": "p", "scope": "user", "pinned": true,
                       "admission": "admitted", "name": "demo"}),
                denied(json!({"prompt": "p", "reason": "prompt_not_admitted",
                              "detail": "not on the list"})),
            ],
            AuditEvent::ResourceRead => vec![
                json!({"decision": "allowed", "action": "read", "uri": "file:///a/b",
                       "scope": "user", "prefix": "file:///a/", "admission": "admitted",
                       "name": "demo"}),
                denied(json!({"action": "complete", "template": "file:///{x}",
                              "reason": "resource_not_admitted", "detail": "not listed"})),
                denied(json!({"action": "subscribe", "uri": "file:///a/../b",
                              "reason": "resource_uri_refused", "detail": "a dot segment"})),
            ],
            AuditEvent::PromptPinMismatch => vec![json!({
                "prompt": "p", "expected": "sha256:a", "actual": "sha256:b",
                "scope": "user", "name": "demo",
            })],
            AuditEvent::PromptApproved => vec![
                json!({"prompt": "p", "pin": "sha256:a", "approval_key": "k", "scope": "user"}),
            ],
            AuditEvent::ResourceApproved => vec![
                json!({"prefix": "file:///a/", "approval_key": "k", "scope": "user"}),
                json!({"uri": "file:///a/b", "approval_key": "k", "scope": "user"}),
            ],
            AuditEvent::BundleAccepted => vec![json!({
                "bundle": "acme@7", "signers": ["root-1"], "sha256": "ab",
                "replaces": "acme@6", "into": "trust-roots/acme.json",
            })],
            AuditEvent::BundleRefused => vec![json!({
                "bundle_id": "acme", "version": 5, "installed": "acme@7", "highest_seen": 7,
                "file": "acme.json", "into": "trust-roots", "reason": "bad_signature",
                "detail": "a rollback",
            })],
            AuditEvent::ElicitationReceipt => vec![json!({
                "receipt_id": "rcpt_1", "prompt_id": 7, "name": "demo",
                "server_id": "urn:demo", "admission": "admitted", "origin": null,
                "command": "demo-server",
                "caller": {"client": "claude", "transport": "stdio", "claimed": "claude 1.0"},
                "attribution": "client", "caller_candidates": null, "user": "alice",
                "session_id": null, "era": "2025-11-25",
                "correlation": {
                    "basis": "in_flight",
                    "requests": [{"id": 3, "method": "tools/call", "tool": "book_table"}],
                },
                "elicitation_id": null, "input_key": null, "round": null, "mode": "url",
                "decision": "hold_for_elicitation_evidence",
                "reasons": [{"code": "not_tied_to_request", "detail": "tied to nothing"}],
                "overridden": true, "url": "https://pay.example/x", "host": "pay.example",
                "host_unicode": "pay.example", "action": "accept", "content_sha256": null,
                "note": null, "policy_version": "1", "bundle": "demo@1",
                "authorization": {"issuer": "https://as.example", "subject": null},
            })],
            AuditEvent::ElicitationCompleted => vec![json!({
                "receipt_id": "rcpt_1", "prompt_id": 7, "elicitation_id": "el-1",
                "name": "demo", "calls": [4, 5], "via": "notification",
            })],
            AuditEvent::ElicitationCompletionIgnored => vec![json!({
                "elicitation_id": "el-9", "name": "demo", "why": "cross_server",
                "abuse": "bogus_completions",
            })],
            AuditEvent::ElicitationRetry => vec![json!({
                "name": "demo", "call": 3, "attempt": 1, "why": "user_retry",
                "receipts": ["rcpt_1"],
            })],
            AuditEvent::SessionKilled => vec![json!({
                "name": "demo", "decision": "kill_session_on_elicitation_abuse",
                "reason": "repeated_denials", "detail": "5 denials",
            })],
            AuditEvent::ServerSuspended => vec![json!({
                "name": "demo", "reason": "repeated_denials", "detail": "5 denials",
                "key": "urn:demo",
            })],
            AuditEvent::ServerResumed => vec![json!({"name": "demo", "key": "urn:demo"})],
            AuditEvent::SuspendedRefused => vec![json!({
                "name": "demo", "reason": "repeated_denials", "since": "2026-01-01T00:00:00Z",
            })],
            AuditEvent::TrustReloaded => {
                let state = |posture: &str| {
                    json!({
                        "bundles": [{
                            "bundle": "acme@7", "locked": false, "expires": "2027-01-01",
                            "servers": ["urn:acme"], "signers": ["root-1"], "source": "system",
                        }],
                        "sha256": ["ab"], "posture": posture, "locked_by": null,
                        "problems": [{"code": "bad_signature", "message": "x.json"}],
                    })
                };
                vec![json!({"before": state("warn"), "after": state("deny-by-default")})]
            }
            AuditEvent::DurabilityChanged => vec![json!({
                "before": {"mode": "sync"},
                "after": {"mode": "batched", "flush_ms": 50, "flush_records": 64},
                "set_by": ["acme@7"],
            })],
            AuditEvent::LockRefused => vec![
                json!({"code": "lock_forbids_demo", "detail": "a locked bundle forbids --demo"}),
            ],
        }
    }

    #[test]
    fn each_events_line_is_the_one_it_always_was() {
        for event in AuditEvent::ALL {
            for data in samples(event) {
                let record = record(event.as_str(), data);
                let value = json!({"event": record.event, "data": record.data});
                let parsed = AuditRecord::parse(&value)
                    .unwrap_or_else(|| panic!("{event} has no payload type"));
                assert!(parsed.is_ok(), "the {event} sample: {parsed:?}");
                assert_eq!(describe(&record), generic(&record), "{event}");
            }
        }
    }

    #[test]
    fn the_lines_show_the_decision_fields() {
        let call = record("tool_call", samples(AuditEvent::ToolCall).swap_remove(1));
        assert_eq!(
            describe(&call),
            "#7 1970-01-01T00:00:00Z tool_call demo decision=denied tool=nope \
             reason=tool_not_admitted — the tool \"nope\" is not on this server's allow-list"
        );
        let resumed = record(
            "server_resumed",
            samples(AuditEvent::ServerResumed).remove(0),
        );
        assert_eq!(
            describe(&resumed),
            "#7 1970-01-01T00:00:00Z server_resumed demo"
        );
    }

    #[test]
    fn the_logs_own_records_are_a_plain_line() {
        let torn = record(
            gatehouse_audit::EVENT_TORN_TAIL,
            json!({"bytes": 12, "sha256": "ab", "side_file": "audit.jsonl.torn", "detail": "x"}),
        );
        assert_eq!(
            describe(&torn),
            "#7 1970-01-01T00:00:00Z audit_torn_tail demo"
        );
        let unknown = record("from_the_future", json!({"decision": "allowed"}));
        assert_eq!(
            describe(&unknown),
            "#7 1970-01-01T00:00:00Z from_the_future demo \
             (an event this version of gatehouse does not record)"
        );
    }

    #[test]
    fn a_record_whose_data_does_not_parse_says_so() {
        let broken = record(
            "tool_call",
            json!({"decision": "denied", "tool": "nope", "reason": "no_such_reason\u{7}"}),
        );
        let line = describe(&broken);
        assert!(
            line.starts_with(
                "#7 1970-01-01T00:00:00Z tool_call demo \
                 (its data does not parse as a tool_call record: "
            ),
            "{line}"
        );
        assert!(!line.contains('\u{7}'), "{line}");
        assert!(!line.contains("decision="), "{line}");
    }
}
