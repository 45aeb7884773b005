//! Suspensions: the kill switch's record of suspended servers, and the gatekeeper's suspend
//! and resume.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::Gatekeeper;
use crate::HostError;
use crate::admission::Verdict;
use crate::audit_event::session::{ServerResumed, ServerSuspended};
use crate::files::write_atomically;

/// Why and when a server was suspended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspension {
    /// The configured name at the time.
    pub server: String,
    pub reason: String,
    pub detail: String,
    /// RFC 3339.
    pub since: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct SuspensionsFile {
    version: u32,
    /// Keyed like approvals: the verified id, or command line + cwd / URL when unattested.
    servers: BTreeMap<String, Suspension>,
}

/// Servers the kill switch suspended, until the user re-enables them; in a file (0600, written
/// atomically) or only in memory.
#[derive(Debug)]
pub struct Suspensions {
    path: Option<PathBuf>,
    file: Mutex<SuspensionsFile>,
}

impl Suspensions {
    pub fn in_memory() -> Suspensions {
        Suspensions {
            path: None,
            file: Mutex::new(SuspensionsFile {
                version: 1,
                ..SuspensionsFile::default()
            }),
        }
    }

    /// Loads suspensions; a missing file is empty, a malformed one an error (a suspension must
    /// not be lost silently).
    pub fn load(path: &Path) -> Result<Suspensions, HostError> {
        let file = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                HostError::Config(format!(
                    "the suspended-servers file {} is not valid ({e}); fix it or move it aside (servers listed there stay suspended until then)",
                    path.display()
                ))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => SuspensionsFile {
                version: 1,
                ..SuspensionsFile::default()
            },
            Err(e) => {
                return Err(HostError::Config(format!(
                    "cannot read the suspended-servers file {}: {e}",
                    path.display()
                )));
            }
        };
        Ok(Suspensions {
            path: Some(path.to_path_buf()),
            file: Mutex::new(file),
        })
    }

    pub fn get(&self, key: &str) -> Option<Suspension> {
        self.file
            .lock()
            .expect("suspensions lock")
            .servers
            .get(key)
            .cloned()
    }

    fn set(&self, key: &str, suspension: Option<Suspension>) -> Result<bool, HostError> {
        let mut file = self.file.lock().expect("suspensions lock");
        let changed = match suspension {
            Some(s) => file.servers.insert(key.to_string(), s).is_none(),
            None => file.servers.remove(key).is_some(),
        };
        if let Some(path) = &self.path {
            let mut text = serde_json::to_string_pretty(&*file).expect("serializes");
            text.push('\n');
            write_atomically(path, text.as_bytes(), 0o600).map_err(|e| {
                HostError::Config(format!(
                    "cannot save the suspended-servers file {}: {e}",
                    path.display()
                ))
            })?;
        }
        Ok(changed)
    }
}

impl Gatekeeper {
    /// Keeps suspensions in `suspensions` (a file, so they outlive the process).
    pub fn with_suspensions(mut self, suspensions: Suspensions) -> Gatekeeper {
        self.suspensions = suspensions;
        self
    }

    /// The suspension in force for this server, if any.
    pub fn suspension(&self, verdict: &Verdict) -> Option<Suspension> {
        self.suspensions.get(&verdict.approval_key)
    }

    /// Suspends a server (the kill switch): audited first, then saved.
    pub fn suspend(&self, verdict: &Verdict, reason: &str, detail: &str) -> Result<(), HostError> {
        let since = (self.clock)()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        self.write_for(
            verdict,
            &ServerSuspended {
                name: verdict.server.clone(),
                reason: reason.to_string(),
                detail: detail.to_string(),
                key: verdict.approval_key.clone(),
            },
        )?;
        self.suspensions.set(
            &verdict.approval_key,
            Some(Suspension {
                server: verdict.server.clone(),
                reason: reason.to_string(),
                detail: detail.to_string(),
                since,
            }),
        )?;
        Ok(())
    }

    /// Re-enables a suspended server (the user's explicit decision). Returns whether it was
    /// suspended.
    pub fn resume(&self, verdict: &Verdict) -> Result<bool, HostError> {
        if self.suspension(verdict).is_none() {
            return Ok(false);
        }
        self.write_for(
            verdict,
            &ServerResumed {
                name: verdict.server.clone(),
                key: verdict.approval_key.clone(),
            },
        )?;
        self.suspensions.set(&verdict.approval_key, None)
    }
}
