//! User approvals: the approvals store (tools, prompts, resources), and the gatekeeper's
//! approve calls, allowed only where the posture lets the user approve.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use gatehouse_attest::bundle::Posture;
use gatehouse_attest::pins::parse_pin;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{AuditEvent, Gatekeeper};
use crate::HostError;
use crate::admission::Verdict;
use crate::files::write_atomically;

/// Tool approvals made by the user where the posture allows (warn): server key → tool → pin.
#[derive(Debug, Default, Serialize, Deserialize)]
struct ApprovalsFile {
    version: u32,
    /// Approval key → tool → pin.
    servers: BTreeMap<String, BTreeMap<String, String>>,
    /// Approval key → prompt → pin (absent in files written before prompts were gated).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    prompts: BTreeMap<String, BTreeMap<String, String>>,
    /// Approval key → exact resource URIs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    resources: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Approval key → resource URI prefixes (the bundle's prefix rule).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    resource_prefixes: BTreeMap<String, std::collections::BTreeSet<String>>,
}

/// Which of a server's approvals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approved {
    Tools,
    Prompts,
}

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
                for tools in file.servers.values().chain(file.prompts.values()) {
                    for (tool, pin) in tools {
                        parse_pin(pin).map_err(|e| {
                            HostError::Config(format!(
                                "the tool approvals file {}: tool {tool:?}: {e}",
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

    /// The approved tools of a server: name → pin.
    pub fn for_server(&self, key: &str) -> BTreeMap<String, String> {
        self.named(key, Approved::Tools)
    }

    /// The approved tools or prompts of a server: name → pin.
    pub fn named(&self, key: &str, which: Approved) -> BTreeMap<String, String> {
        let file = self.file.lock().expect("approvals lock");
        let map = match which {
            Approved::Tools => &file.servers,
            Approved::Prompts => &file.prompts,
        };
        map.get(key).cloned().unwrap_or_default()
    }

    /// The exact resource URIs and the URI prefixes approved for a server.
    pub fn resources(&self, key: &str) -> (Vec<String>, Vec<String>) {
        let file = self.file.lock().expect("approvals lock");
        let of = |map: &BTreeMap<String, std::collections::BTreeSet<String>>| {
            map.get(key)
                .map(|uris| uris.iter().cloned().collect())
                .unwrap_or_default()
        };
        (of(&file.resources), of(&file.resource_prefixes))
    }

    /// Approves tools (with the pins of their current definitions) and saves.
    pub fn approve(&self, key: &str, pins: &[(String, String)]) -> Result<(), HostError> {
        self.approve_named(key, Approved::Tools, pins)
    }

    /// Approves tools or prompts (with the pins of their current definitions) and saves.
    pub fn approve_named(
        &self,
        key: &str,
        which: Approved,
        pins: &[(String, String)],
    ) -> Result<(), HostError> {
        let mut file = self.file.lock().expect("approvals lock");
        let map = match which {
            Approved::Tools => &mut file.servers,
            Approved::Prompts => &mut file.prompts,
        };
        let entry = map.entry(key.to_string()).or_default();
        for (tool, pin) in pins {
            entry.insert(tool.clone(), pin.clone());
        }
        self.save(&file)
    }

    /// Approves exact resource URIs and URI prefixes, and saves.
    pub fn approve_resources(
        &self,
        key: &str,
        uris: &[String],
        prefixes: &[String],
    ) -> Result<(), HostError> {
        let mut file = self.file.lock().expect("approvals lock");
        file.resources
            .entry(key.to_string())
            .or_default()
            .extend(uris.iter().cloned());
        if !prefixes.is_empty() {
            file.resource_prefixes
                .entry(key.to_string())
                .or_default()
                .extend(prefixes.iter().cloned());
        }
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
    /// Records user approvals of prompts (with their current pins), or explains why the
    /// posture does not allow it.
    pub fn approve_prompts(
        &self,
        verdict: &Verdict,
        pins: &[(String, String)],
    ) -> Result<(), HostError> {
        self.may_approve(
            "prompts are approved by the admin bundle's allowedPrompts and promptPins; send these pins to your admin",
            pins.iter().map(|(p, pin)| format!("{p:?}: {pin}")),
        )?;
        for (prompt, pin) in pins {
            self.audit.record(
                AuditEvent::PromptApproved,
                Some(&verdict.audit_server()),
                json!({"prompt": prompt, "pin": pin, "approval_key": verdict.approval_key, "scope": "user"}),
            )?;
        }
        self.approvals
            .approve_named(&verdict.approval_key, Approved::Prompts, pins)
    }

    /// Records user approvals of exact resource URIs and of URI prefixes (checked by the
    /// bundle's rules: a prefix ends in `/` and has a plain path).
    pub fn approve_resources(
        &self,
        verdict: &Verdict,
        uris: &[String],
        prefixes: &[String],
    ) -> Result<(), HostError> {
        self.may_approve(
            "resources are approved by the admin bundle's allowedResources and allowedResourcePrefixes; send these to your admin",
            uris.iter().chain(prefixes).map(|u| format!("{u:?}")),
        )?;
        let checked = uris
            .iter()
            .map(|u| (u, gatehouse_attest::resources::check_exact_uri(u)))
            .chain(
                prefixes
                    .iter()
                    .map(|p| (p, gatehouse_attest::resources::check_prefix(p))),
            );
        for (entry, check) in checked {
            check.map_err(|detail| {
                HostError::Config(format!("cannot approve {entry:?}: {detail}"))
            })?;
        }
        for (uri, kind) in uris
            .iter()
            .map(|u| (u, "uri"))
            .chain(prefixes.iter().map(|p| (p, "prefix")))
        {
            self.audit.record(
                AuditEvent::ResourceApproved,
                Some(&verdict.audit_server()),
                json!({kind: uri, "approval_key": verdict.approval_key, "scope": "user"}),
            )?;
        }
        self.approvals
            .approve_resources(&verdict.approval_key, uris, prefixes)
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

    /// Users approve tools only in the warn posture (never under a locked bundle, whose
    /// posture wins).
    pub fn user_may_approve(&self) -> bool {
        self.trust().posture() == Posture::Warn
    }

    /// Records user approvals of tools (with their current pins), or explains why the posture
    /// does not allow it.
    pub fn approve(&self, verdict: &Verdict, pins: &[(String, String)]) -> Result<(), HostError> {
        self.may_approve(
            "tools are approved by the admin bundle's allowedTools and toolPins; send these pins to your admin",
            pins.iter().map(|(t, p)| format!("{t:?}: {p}")),
        )?;
        for (tool, pin) in pins {
            self.audit.record(
                AuditEvent::ToolApproved,
                Some(&verdict.audit_server()),
                json!({"tool": tool, "pin": pin, "approval_key": verdict.approval_key, "scope": "user"}),
            )?;
        }
        self.approvals.approve(&verdict.approval_key, pins)
    }
}
