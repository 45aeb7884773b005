//! `gatehouse auth`: sign in to servers that require MCP authorization, list the sign-ins,
//! remove one. Every step goes through the host (admission, the admin's issuer pin, consent
//! on the terminal, the audit log); tokens stay in the OS keychain and are never printed.

use serde_json::json;

use crate::cli::AuthCommand;
use crate::commands::{Context, open_host, report, terminal_consent};
use crate::failure::Failure;
use crate::output::safe_line;

pub async fn run(context: &Context, command: AuthCommand) -> Result<u8, Failure> {
    let host = open_host(context, terminal_consent())?;
    let outcome = match command {
        AuthCommand::Login { server, scopes } => match host.sign_in(&server, &scopes).await {
            Ok(row) => {
                report(
                    context,
                    json!({"signed_in": row}),
                    &format!(
                        "signed in to {} at {}{} (scopes: {})",
                        safe_line(&row.server),
                        safe_line(row.issuer.as_deref().unwrap_or("(no issuer)")),
                        row.subject
                            .as_deref()
                            .map(|s| format!(" as {}", safe_line(s)))
                            .unwrap_or_default(),
                        safe_line(&row.scopes.join(" "))
                    ),
                );
                Ok(0)
            }
            Err(e) => Err(Failure::from(e)),
        },
        AuthCommand::Status => match host.sign_ins().await {
            Ok(rows) => {
                if context.json {
                    crate::output::print_json(&json!({"sign_ins": rows}));
                } else if rows.is_empty() {
                    println!("no stored sign-ins");
                } else {
                    for row in &rows {
                        let expiry = match row.expires_in {
                            Some(s) if s > 0 => format!("token valid for {s}s"),
                            Some(_) => "token expired".into(),
                            None => "token expiry unknown".into(),
                        };
                        println!(
                            "{}: {} {}; scopes {}; {}{}",
                            safe_line(&row.server),
                            safe_line(row.issuer.as_deref().unwrap_or("(no issuer)")),
                            row.subject
                                .as_deref()
                                .map(|s| format!("as {}", safe_line(s)))
                                .unwrap_or_default(),
                            safe_line(&row.scopes.join(" ")),
                            expiry,
                            if row.refreshable {
                                ", renews itself"
                            } else {
                                ""
                            }
                        );
                    }
                }
                Ok(0)
            }
            Err(e) => Err(Failure::from(e)),
        },
        AuthCommand::Logout { server } => match host.sign_out(&server).await {
            Ok(removed) => {
                report(
                    context,
                    json!({"server": server, "removed": removed}),
                    &if removed {
                        format!("removed the sign-in to {}", safe_line(&server))
                    } else {
                        format!("no sign-in stored for {}", safe_line(&server))
                    },
                );
                Ok(0)
            }
            Err(e) => Err(Failure::from(e)),
        },
    };
    host.shutdown().await;
    outcome
}
