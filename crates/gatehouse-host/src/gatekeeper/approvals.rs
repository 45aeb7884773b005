//! User approvals: the approvals store (tools, prompts, resources), and the gatekeeper's one
//! approve call for every primitive, allowed only where the posture lets the user approve.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use gatehouse_attest::bundle::Posture;
use gatehouse_attest::pins::parse_pin;

use super::Gatekeeper;
use super::approvals_file::ApprovalsFile;
use super::primitive::Primitive;
use crate::HostError;
use crate::admission::Verdict;
use crate::files::write_atomically;

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
        for entry in entries {
            P::check_entry(entry).map_err(|detail| {
                HostError::Config(format!("cannot approve {}: {detail}", P::shown(entry)))
            })?;
        }
        for entry in entries {
            self.audit.write(
                Some(&verdict.audit_server()),
                &P::approved(entry, &verdict.approval_key),
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
    use super::Approvals;

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
