//! A bundle's confinement declarations (specVersion 7): what an admitted local server may
//! read, write and reach, per entry (`signed.servers[].confinement`, the shape
//! [`gatehouse_confine::parse_confinement`] reads), and the mode the bundle asks of every
//! server (`signed.confinement`, `{"mode": …}` only).
//!
//! Only the declaration is checked here; the host decides the effective mode (the strictest
//! of the policy, every bundle and the entry) and the effective grants.

use gatehouse_confine::{ConfinementMode, Grants, parse_confinement};
use serde_json::Value;

/// The bundle version that carries `confinement`, in an entry and bundle-wide.
pub const CONFINEMENT_SPEC_VERSION: u64 = 7;

/// An entry's `confinement`: the mode it asks for (strictest wins with the policy and the
/// bundles) and the grants the admins give the server beyond what its attestation and its
/// binding's arguments already grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryConfinement {
    pub mode: Option<ConfinementMode>,
    pub grants: Grants,
}

/// What is wrong, worded for the admin; the bundle's parser makes it a
/// `BundleError::Invalid` (so this module needs nothing of the bundle's).
fn invalid<T>(detail: impl Into<String>) -> Result<T, String> {
    Err(detail.into())
}

fn needs_version(path: &str) -> String {
    format!(
        "{path} needs \"specVersion\": {CONFINEMENT_SPEC_VERSION}; raise the bundle's specVersion (and version) to use it"
    )
}

/// `signed.servers[i].confinement`. Refused by name below specVersion 7 (a host that would
/// not read it must never leave an admin believing a server is confined), and on an entry
/// this machine does not run: a remote server runs elsewhere, where no grant of ours applies.
pub(crate) fn parse_entry_confinement(
    raw: Option<&Value>,
    path: &str,
    id: &str,
    runs_here: bool,
    spec_version: u64,
) -> Result<Option<EntryConfinement>, String> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let path = format!("{path}.confinement");
    if spec_version < CONFINEMENT_SPEC_VERSION {
        return invalid(needs_version(&path));
    }
    if !runs_here {
        return invalid(format!(
            "{path}: {id} is a remote server (no stdio or package binding); it runs elsewhere, so no confinement of this machine applies to it; remove the confinement or bind the server to run here"
        ));
    }
    let (mode, grants) = parse_confinement(raw, &path).map_err(|e| e.to_string())?;
    Ok(Some(EntryConfinement { mode, grants }))
}

/// `signed.confinement`: `{"mode": "required"|"preferred"|"off"}` and nothing else (grants
/// belong to the entry they are for).
pub(crate) fn parse_bundle_confinement(
    raw: Option<&Value>,
    spec_version: u64,
) -> Result<Option<ConfinementMode>, String> {
    const PATH: &str = "signed.confinement";
    let Some(raw) = raw else {
        return Ok(None);
    };
    if spec_version < CONFINEMENT_SPEC_VERSION {
        return invalid(needs_version(PATH));
    }
    let Some(object) = raw.as_object() else {
        return invalid(format!(
            "{PATH} must be an object: {{\"mode\": \"required\"|\"preferred\"|\"off\"}}"
        ));
    };
    if let Some(key) = object.keys().find(|k| k.as_str() != "mode") {
        return invalid(format!(
            "{PATH}.{key} is not a setting of the bundle's confinement (only \"mode\"; what a server may read, write or reach goes in its entry's confinement)"
        ));
    }
    let modes = ConfinementMode::ALL.map(ConfinementMode::as_str).join(", ");
    match object.get("mode") {
        None => invalid(format!("{PATH}.mode is missing: write one of {modes}")),
        Some(Value::String(text)) => match ConfinementMode::parse(text) {
            Some(mode) => Ok(Some(mode)),
            None => invalid(format!("{PATH}.mode {text:?} is not one of {modes}")),
        },
        Some(_) => invalid(format!("{PATH}.mode must be a string, one of {modes}")),
    }
}
