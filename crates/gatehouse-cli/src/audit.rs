//! `gatehouse audit verify|show|export`: reading the audit log. Reading never creates or
//! repairs a log; only the host's writers append to it.

use std::io::Write;
use std::path::PathBuf;

use gatehouse_audit::{AuditError, ExportFormat, Filter, Record};
use serde_json::{Value, json};

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

/// One line per record for people: seq, time, event, server, and the decision fields.
fn describe(record: &Record) -> String {
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
