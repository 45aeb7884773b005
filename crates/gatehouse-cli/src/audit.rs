//! `gatehouse audit verify|show|export|settings`: reading the audit log. Reading never
//! creates or repairs a log; only the host's writers append to it. `show` and `export` stream
//! the log record by record across its segments (memory does not grow with the log), and
//! `show --last N` reads it from the end (the cost grows with N, not with the log).

use std::io::Write;
use std::path::{Path, PathBuf};

use gatehouse_audit::{AuditError, ExportFormat, Filter, Record, TailEnd};
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

/// Standard output closed or failed (`| head`): the rest is not wanted.
fn stdout_failure(error: std::io::Error) -> Failure {
    Failure {
        code: ErrorCode::OutUnwritable,
        message: format!("cannot write to standard output: {error}"),
        exit: 1,
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
            last,
        } => {
            let path = log(file);
            let filter = filter(server, event);
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            match last {
                Some(n) => show_last(context, &path, &filter, n, &mut out)?,
                None => show_all(context, &path, &filter, &mut out)?,
            }
            out.flush().map_err(stdout_failure)?;
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
                Some(target) => export_to_file(&path, &filter, format, target)?,
                None => {
                    let stdout = std::io::stdout();
                    let mut lock = std::io::BufWriter::new(stdout.lock());
                    let count = gatehouse_audit::export(&path, &filter, format, &mut lock)
                        .map_err(failure)?;
                    lock.flush().map_err(stdout_failure)?;
                    count
                }
            };
            if let Some(target) = out {
                eprintln!("exported {count} record(s) to {}", target.display());
            }
            Ok(0)
        }
        AuditCommand::Settings => settings(context),
    }
}

/// Every matching record, oldest first, printed as it is read.
fn show_all(
    context: &Context,
    path: &Path,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let stream = gatehouse_audit::stream(path, filter).map_err(failure)?;
    let mut printer = Printer::start(context.json, path, out)?;
    for item in stream {
        printer.record(&item.map_err(failure)?.record)?;
    }
    printer.finish(None)
}

/// The newest `n` matching records, oldest first, read from the end.
fn show_last(
    context: &Context,
    path: &Path,
    filter: &Filter,
    n: u64,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    // The parser bounds n (1 to 100000), so it fits.
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    let recent = gatehouse_audit::tail(path, n, filter).map_err(failure)?;
    let mut printer = Printer::start(context.json, path, out)?;
    for record in &recent.records {
        printer.record(record)?;
    }
    if recent.end == TailEnd::ScanCap && !context.json {
        eprintln!(
            "gatehouse: showing {} record(s): stopped after examining {} records from the end; older matching records may exist (gatehouse audit show without --last reads them all)",
            recent.records.len(),
            recent.scanned
        );
    }
    printer.finish(Some((recent.end, recent.scanned)))
}

/// Writes records as they come: one line each for people, or one JSON document
/// (`{"log": …, "records": [ … ]}`, plus `end` and `scanned` for `--last`) written piece by
/// piece, so nothing is held but the record being printed.
struct Printer<'a> {
    json: bool,
    path: &'a Path,
    out: &'a mut dyn Write,
    count: u64,
}

impl<'a> Printer<'a> {
    fn start(json: bool, path: &'a Path, out: &'a mut dyn Write) -> Result<Printer<'a>, Failure> {
        if json {
            let log = serde_json::to_string(path).map_err(|e| Failure::usage(e.to_string()))?;
            write!(out, "{{\n  \"log\": {log},\n  \"records\": [").map_err(stdout_failure)?;
        }
        Ok(Printer {
            json,
            path,
            out,
            count: 0,
        })
    }

    fn record(&mut self, record: &Record) -> Result<(), Failure> {
        let result = if self.json {
            let sep = if self.count == 0 { "\n    " } else { ",\n    " };
            serde_json::to_string(record)
                .map_err(std::io::Error::other)
                .and_then(|text| write!(self.out, "{sep}{text}"))
        } else {
            writeln!(self.out, "{}", describe(record))
        };
        self.count += 1;
        result.map_err(stdout_failure)
    }

    fn finish(self, tail: Option<(TailEnd, u64)>) -> Result<(), Failure> {
        let result = if self.json {
            let close = if self.count == 0 { "]" } else { "\n  ]" };
            match tail {
                Some((end, scanned)) => write!(
                    self.out,
                    "{close},\n  \"end\": \"{}\",\n  \"scanned\": {scanned}\n}}\n",
                    end.code()
                ),
                None => write!(self.out, "{close}\n}}\n"),
            }
        } else if self.count == 0 {
            writeln!(self.out, "no matching records in {}", self.path.display())
        } else {
            Ok(())
        };
        result.map_err(stdout_failure)
    }
}

/// Streams the export into a file beside `target` and renames it into place, so a failed
/// export leaves no half-written file and memory does not grow with the log.
fn export_to_file(
    path: &Path,
    filter: &Filter,
    format: ExportFormat,
    target: &Path,
) -> Result<u64, Failure> {
    let cannot =
        |e: std::io::Error| Failure::usage(format!("cannot write {}: {e}", target.display()));
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("export");
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&tmp).map_err(cannot)?;
        let mut writer = std::io::BufWriter::new(file);
        let count = gatehouse_audit::export(path, filter, format, &mut writer).map_err(failure)?;
        let file = writer.into_inner().map_err(|e| cannot(e.into_error()))?;
        file.sync_all().map_err(cannot)?;
        std::fs::rename(&tmp, target).map_err(cannot)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(count)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `audit settings`: what a host opened with this command line's policy and trust roots
/// would keep, and who chose it.
fn settings(context: &Context) -> Result<u8, Failure> {
    let policy = crate::policy::load_policy(context.policy_path.as_deref())?;
    let trust = crate::commands::load_trust(context)?;
    let setting = gatehouse_host::host::Settings::audit_for(&policy.audit, &trust);
    if context.json {
        output::print_json(&json!({
            "log": context.audit_path,
            "audit": setting,
        }));
    } else {
        let durability = match setting.durability {
            gatehouse_audit::Durability::Sync => {
                "sync (each record on disk before its decision takes effect)".to_string()
            }
            gatehouse_audit::Durability::Batched {
                max_delay,
                max_records,
            } => format!(
                "batched (on disk within {} ms or {max_records} records)",
                max_delay.as_millis()
            ),
        };
        println!("log: {}", context.audit_path.display());
        println!(
            "durability: {durability}, set by {}",
            setting.set_by.join(", ")
        );
        println!("retention: {}", setting.retention.describe());
    }
    Ok(0)
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
        None if is_the_logs_own(&record.event) => {
            if let Some(detail) = segment_detail(record) {
                parts.push(format!("— {}", output::safe(&detail)));
            }
        }
        None => parts.push("(an event this version of gatehouse does not record)".into()),
    }
    parts.join(" ")
}

/// The audit log's own records (a torn tail, a head mismatch, a short tail, a rotation, a
/// removal by retention): they have no payload type, and their line is the seq, time and
/// event, with what a rotation or a removal concerned.
fn is_the_logs_own(event: &str) -> bool {
    [
        gatehouse_audit::EVENT_TORN_TAIL,
        gatehouse_audit::EVENT_HEAD_MISMATCH,
        gatehouse_audit::EVENT_SHORT_TAIL,
        gatehouse_audit::EVENT_ROTATED,
        gatehouse_audit::EVENT_RETENTION,
    ]
    .contains(&event)
}

/// Which segment a rotation sealed, or how many segments retention removed; `None` for the
/// other records of the log's own (or data without those fields).
fn segment_detail(record: &Record) -> Option<String> {
    let number = |key: &str| record.data.get(key).and_then(serde_json::Value::as_u64);
    match record.event.as_str() {
        gatehouse_audit::EVENT_ROTATED => {
            let segment = record.data.get("segment")?.as_str()?;
            Some(format!(
                "continues {segment} (records {}–{})",
                number("first_seq")?,
                number("last_seq")?
            ))
        }
        gatehouse_audit::EVENT_RETENTION => {
            let removed = record.data.get("removed")?.as_array()?.len();
            Some(format!(
                "removed {removed} segment(s) whose records were all older than {} days",
                number("keep_days")?
            ))
        }
        _ => None,
    }
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
        AuditRecord::EgressRefused(e) => Summary {
            reason: Some(e.reason.as_str()),
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
        | AuditRecord::DurabilityChanged(_)
        | AuditRecord::ConfinementChanged(_) => Summary::default(),
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
            AuditEvent::EgressRefused => vec![json!({
                "name": "fetch", "host": "127.0.0.1", "port": 8081, "reason": "not_granted",
                "suppressed_before": 3,
            })],
            AuditEvent::ConfinementChanged => vec![json!({
                "name": "notes", "before": null, "after": {"write": ["~/notes"]},
            })],
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
        let rotated = record(
            gatehouse_audit::EVENT_ROTATED,
            json!({"segment": "audit.jsonl.seg-000002", "number": 2, "first_seq": 90,
                   "last_seq": 180, "last_hash": "ab", "bytes": 4000}),
        );
        assert_eq!(
            describe(&rotated),
            "#7 1970-01-01T00:00:00Z audit_rotated demo \
             — continues audit.jsonl.seg-000002 (records 90–180)"
        );
        let pruned = record(
            gatehouse_audit::EVENT_RETENTION,
            json!({"keep_days": 30, "removed": [{"segment": "a"}, {"segment": "b"}], "through": 2}),
        );
        assert_eq!(
            describe(&pruned),
            "#7 1970-01-01T00:00:00Z audit_retention demo \
             — removed 2 segment(s) whose records were all older than 30 days"
        );
        // Fields missing (another version wrote it): the plain line.
        let odd = record(gatehouse_audit::EVENT_RETENTION, json!({"removed": 3}));
        assert_eq!(
            describe(&odd),
            "#7 1970-01-01T00:00:00Z audit_retention demo"
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
