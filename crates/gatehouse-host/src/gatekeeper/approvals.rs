//! User approvals: the approvals store (tools, prompts, resources), and the gatekeeper's one
//! approve call for every primitive, allowed only where the posture lets the user approve.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use gatehouse_attest::bundle::Posture;
use gatehouse_attest::pins::{parse_pin, tool_pin};
use gatehouse_review::{Finding, Severity};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Gatekeeper;
use super::approvals_file::ApprovalsFile;
use super::primitive::{NamedPin, Pinned, Primitive};
use crate::admission::Verdict;
use crate::files::write_atomically;
use crate::{ErrorCode, HostError};

/// The user's tool approvals, in a file (0600, written atomically) or only in memory.
#[derive(Debug)]
pub struct Approvals {
    path: Option<PathBuf>,
    file: Mutex<ApprovalsFile>,
}

impl Approvals {
    pub fn in_memory() -> Approvals {
        Approvals {
            path: None,
            file: Mutex::new(ApprovalsFile {
                version: 1,
                ..ApprovalsFile::default()
            }),
        }
    }

    /// Loads approvals; a missing file is empty, a malformed one an error (never "allow all").
    pub fn load(path: &Path) -> Result<Approvals, HostError> {
        let file = match std::fs::read(path) {
            Ok(bytes) => {
                let file: ApprovalsFile = serde_json::from_slice(&bytes).map_err(|e| {
                    HostError::Config(format!(
                        "the tool approvals file {} is not valid ({e}); move it aside and approve the tools again with `gatehouse tools pin`",
                        path.display()
                    ))
                })?;
                let tools = file.servers.values().map(|pins| ("tool", pins));
                let prompts = file.prompts.values().map(|pins| ("prompt", pins));
                for (kind, pins) in tools.chain(prompts) {
                    for (name, pin) in pins {
                        parse_pin(pin).map_err(|e| {
                            HostError::Config(format!(
                                "the approvals file {}: {kind} {name:?}: {e}",
                                path.display()
                            ))
                        })?;
                    }
                }
                file
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ApprovalsFile {
                version: 1,
                ..ApprovalsFile::default()
            },
            Err(e) => {
                return Err(HostError::Config(format!(
                    "cannot read the tool approvals file {}: {e}",
                    path.display()
                )));
            }
        };
        Ok(Approvals {
            path: Some(path.to_path_buf()),
            file: Mutex::new(file),
        })
    }

    /// A server's approvals of `P`.
    pub fn of<P: Primitive>(&self, key: &str) -> Vec<P::Entry> {
        P::approvals(&self.file.lock().expect("approvals lock"), key)
    }

    /// Adds approvals of `P` for a server, and saves.
    pub fn add<P: Primitive>(&self, key: &str, entries: &[P::Entry]) -> Result<(), HostError> {
        let mut file = self.file.lock().expect("approvals lock");
        P::add_approvals(&mut file, key, entries);
        self.save(&file)
    }

    fn save(&self, file: &ApprovalsFile) -> Result<(), HostError> {
        if let Some(path) = &self.path {
            let mut text = serde_json::to_string_pretty(file).expect("serializes");
            text.push('\n');
            write_atomically(path, text.as_bytes(), 0o600).map_err(|e| {
                HostError::Config(format!(
                    "cannot save tool approvals to {}: {e}",
                    path.display()
                ))
            })?;
        }
        Ok(())
    }
}

/// `text` (already escaped by the review) with control characters escaped too: the refusal
/// reaches terminals, and a definition's text must never drive one.
fn without_controls(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Whether the person approving saw the high findings of the definitions they approve and
/// approves anyway (the CLI's `--accept-findings`, the desktop's "Approve despite findings").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Acknowledgement {
    /// Nothing acknowledged: a definition with a high finding is not approved.
    NotGiven,
    /// The high findings were shown and accepted; the approval's record names them.
    HighFindings,
}

/// What an approval of pinned definitions (tools, prompts) reviews them against.
#[derive(Debug, Clone, Copy)]
pub struct Review<'a> {
    /// `(server, tool)` of every other configured server's known tools (a tool approval
    /// leaves out the names the server itself lists).
    pub other_tools: &'a [(&'a str, &'a str)],
    pub acknowledgement: Acknowledgement,
}

impl Review<'_> {
    /// No other servers known, nothing acknowledged: what an approval without a host (one
    /// connection alone) reviews against.
    pub const ALONE: Review<'static> = Review {
        other_tools: &[],
        acknowledgement: Acknowledgement::NotGiven,
    };
}

impl Gatekeeper {
    /// Records user approvals of `P` (tools and prompts with the pins of their current
    /// definitions, resource URIs and prefixes checked by the bundle's rules) and saves them,
    /// or explains why the posture does not allow it. Each is recorded before any is saved.
    pub fn approve<P: Primitive>(
        &self,
        verdict: &Verdict,
        entries: &[P::Entry],
    ) -> Result<(), HostError> {
        self.may_approve(P::BY_ADMIN, entries.iter().map(P::shown))?;
        self.record_approvals::<P>(verdict, entries, |_| Vec::new())
    }

    /// Approves pinned definitions of `P` (`pins`, each the pin of one of `definitions`)
    /// after reviewing each: when one has a high finding and `review` does not acknowledge
    /// it, nothing is approved and the refusal (`finding_not_acknowledged`) lists every
    /// high finding; otherwise each approval's record carries the codes of its definition's
    /// high findings. The posture is checked first: deny-by-default refuses as before.
    pub fn approve_reviewed<P: Pinned<Entry = NamedPin>>(
        &self,
        verdict: &Verdict,
        pins: &[NamedPin],
        definitions: &[Value],
        review: &Review<'_>,
    ) -> Result<(), HostError> {
        self.may_approve(P::BY_ADMIN, pins.iter().map(P::shown))?;
        // Tools: the server's own names are left out of the others, as the listings leave
        // them out, so what is approved is reviewed exactly as it was shown.
        let own = |tool: &str| {
            P::REVIEWED == gatehouse_review::Primitive::Tool
                && definitions.iter().any(|d| {
                    d.get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| n.eq_ignore_ascii_case(tool))
                })
        };
        let others: Vec<(&str, &str)> = review
            .other_tools
            .iter()
            .copied()
            .filter(|(_, tool)| !own(tool))
            .collect();
        let context = gatehouse_review::Context {
            other_tools: &others,
        };
        let reviewed: Vec<Vec<Finding>> = pins
            .iter()
            .map(|(name, pin)| {
                definitions
                    .iter()
                    .filter(|d| {
                        d.get("name").and_then(Value::as_str) == Some(name.as_str())
                            && tool_pin(d) == *pin
                    })
                    .flat_map(|d| gatehouse_review::review(P::REVIEWED, d, &context))
                    .filter(|f| f.severity == Severity::High)
                    .collect()
            })
            .collect();
        if review.acknowledgement == Acknowledgement::NotGiven
            && let Some(at) = reviewed.iter().position(|f| !f.is_empty())
        {
            let listed: Vec<String> = pins
                .iter()
                .zip(&reviewed)
                .filter(|(_, findings)| !findings.is_empty())
                .map(|((name, _), findings)| {
                    let each: Vec<String> = findings
                        .iter()
                        .map(|f| {
                            format!(
                                "{} in {} ({}): \"{}\"",
                                f.kind.code(),
                                without_controls(&f.field),
                                without_controls(&f.detail),
                                without_controls(&f.excerpt)
                            )
                        })
                        .collect();
                    format!("{name:?}: {}", each.join("; "))
                })
                .collect();
            return Err(HostError::ToolDenied {
                server: verdict.server.clone(),
                tool: pins[at].0.clone(),
                reason: ErrorCode::FindingNotAcknowledged,
                detail: format!(
                    "not approved: the current definition has high findings, which need an explicit acknowledgement: {}. Read the definition; approve despite them with --accept-findings (or the window's \"Approve despite findings\"), or ask the server's publisher to fix it",
                    listed.join(" | ")
                ),
            });
        }
        self.record_approvals::<P>(verdict, pins, |i| {
            let mut codes: Vec<String> = reviewed[i]
                .iter()
                .map(|f| f.kind.code().to_string())
                .collect();
            codes.sort();
            codes.dedup();
            codes
        })
    }

    /// Checks, records and saves approvals already allowed by the posture; `findings(i)` is
    /// what the record of `entries[i]` carries.
    fn record_approvals<P: Primitive>(
        &self,
        verdict: &Verdict,
        entries: &[P::Entry],
        findings: impl Fn(usize) -> Vec<String>,
    ) -> Result<(), HostError> {
        for entry in entries {
            P::check_entry(entry).map_err(|detail| {
                HostError::Config(format!("cannot approve {}: {detail}", P::shown(entry)))
            })?;
        }
        for (i, entry) in entries.iter().enumerate() {
            self.audit.write(
                Some(&verdict.audit_server()),
                &P::approved(entry, &verdict.approval_key, findings(i)),
            )?;
        }
        self.approvals.add::<P>(&verdict.approval_key, entries)
    }

    fn may_approve(
        &self,
        by_admin: &str,
        items: impl Iterator<Item = String>,
    ) -> Result<(), HostError> {
        if self.user_may_approve() {
            return Ok(());
        }
        let trust = self.trust();
        let why = match trust.locked_by() {
            Some(label) => format!("the admin bundle {label} is locked (deny-by-default)"),
            None => format!(
                "the posture is deny-by-default ({})",
                trust.posture_reason()
            ),
        };
        Err(HostError::PostureForbids {
            detail: format!(
                "{why}: {by_admin}: {}",
                items.collect::<Vec<_>>().join(", ")
            ),
        })
    }

    /// Users approve only in the warn posture (never under a locked bundle, whose posture
    /// wins).
    pub fn user_may_approve(&self) -> bool {
        self.trust().posture() == Posture::Warn
    }
}

#[cfg(test)]
mod tests {
    use super::{Approvals, without_controls};

    #[test]
    fn a_refusal_never_carries_a_control_character_of_a_definition() {
        assert_eq!(
            without_controls("plain \\u{200B} text"),
            "plain \\u{200B} text"
        );
        let escaped = without_controls("red \u{1b}[31m\r\nbell\u{7}");
        assert_eq!(escaped, "red \\u{1b}[31m\\r\\nbell\\u{7}");
        assert!(!escaped.chars().any(char::is_control));
    }

    fn load(json: &str) -> Result<Approvals, crate::HostError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.json");
        std::fs::write(&path, json).unwrap();
        Approvals::load(&path)
    }

    #[test]
    fn a_bad_pin_is_refused_naming_whether_a_tool_or_a_prompt_holds_it() {
        let good = format!("sha256:{}", "a".repeat(64));
        let file = |tool_pin: &str, prompt_pin: &str| {
            format!(
                r#"{{"version": 1, "servers": {{"id:urn:x": {{"echo": "{tool_pin}"}}}},
                    "prompts": {{"id:urn:x": {{"summarize": "{prompt_pin}"}}}}}}"#
            )
        };
        assert!(load(&file(&good, &good)).is_ok());
        let error = load(&file("sha256:nope", &good)).err().unwrap().to_string();
        assert!(error.contains("tool \"echo\""), "{error}");
        let error = load(&file(&good, "sha256:nope")).err().unwrap().to_string();
        assert!(error.contains("prompt \"summarize\""), "{error}");
    }
}
