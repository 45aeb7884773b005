//! A confinement in words: the one line under a stdio server (`servers list`, the admission
//! block) from the host's [`ConfinementView`], and a bundle entry's confinement as `bundle
//! inspect` prints it. Text only: printing (and neutralizing server text) is the caller's, so
//! this module sits below `output`, `confinement` and `admin` and imports none of them.

use gatehouse_attest::confinement::EntryConfinement;
use gatehouse_confine::{Network, PathGrant};
use gatehouse_host::{ConfinementState, ConfinementView, GrantSource, NetworkView};
use serde_json::Value;

/// The one line under a server: `confined: reads ~/proj (read-only), writes ~/out; network:
/// api.example.com:443; no processes; memory 4096 MiB; granted by its admission`, or
/// `unconfined: WHY`. None where confinement does not apply (a remote server).
pub fn line(view: &ConfinementView) -> Option<String> {
    match view.state {
        ConfinementState::Confined => Some(format!(
            "confined: {}; {}; {}; memory {} MiB; {}",
            files(view),
            network(&view.network),
            processes(view.processes),
            view.memory_mib,
            source(view.grants_from),
        )),
        ConfinementState::Unconfined => Some(format!("unconfined: {}", view.detail)),
        ConfinementState::NotApplicable => None,
    }
}

/// The JSON of a verdict's `confinement` (the admission record's), read back as the view.
pub fn from_verdict(verdict: &Value) -> Option<ConfinementView> {
    verdict
        .get("confinement")
        .filter(|value| !value.is_null())
        .and_then(|value| serde_json::from_value(value.clone()).ok())
}

fn files(view: &ConfinementView) -> String {
    let mut parts = Vec::new();
    if !view.read.is_empty() {
        parts.push(format!("reads {} (read-only)", view.read.join(", ")));
    }
    if !view.write.is_empty() {
        parts.push(format!("writes {}", view.write.join(", ")));
    }
    if parts.is_empty() {
        return "none of your files".into();
    }
    parts.join(", ")
}

/// In the one line: `no network`, `network: HOST:PORT, …` or `network: any host`.
fn network(network: &NetworkView) -> String {
    match network {
        NetworkView::None => "no network".into(),
        NetworkView::Hosts { .. } | NetworkView::Any => format!("network: {}", reach(network)),
    }
}

/// The hosts it can reach: `none`, `HOST:PORT, …` or `any host`.
pub(crate) fn reach(network: &NetworkView) -> String {
    match network {
        NetworkView::None => "none".into(),
        NetworkView::Hosts { hosts } if hosts.is_empty() => "none".into(),
        NetworkView::Hosts { hosts } => hosts.join(", "),
        NetworkView::Any => "any host".into(),
    }
}

pub(crate) fn processes(processes: u32) -> String {
    match processes {
        0 => "no processes".into(),
        1 => "up to 1 process".into(),
        n => format!("up to {n} processes"),
    }
}

pub(crate) fn source(source: GrantSource) -> &'static str {
    match source {
        GrantSource::Admission => "granted by its admission",
        GrantSource::Person => "granted by your settings",
        GrantSource::Default => "the default for an unattested server",
    }
}

/// An entry's confinement in one line, as `bundle inspect` prints it: "confinement: required;
/// reads ~/x; writes ~/y; hosts a:443; processes 0; memory 4096 MiB".
pub(crate) fn confinement_line(confinement: &EntryConfinement) -> String {
    let list = |items: Vec<String>| {
        if items.is_empty() {
            "nothing".to_string()
        } else {
            items.join(", ")
        }
    };
    let grants = &confinement.grants;
    let paths = |l: &[PathGrant]| list(l.iter().map(|p| p.as_str().to_string()).collect());
    let hosts = match &grants.network {
        Network::None => "none".to_string(),
        Network::Hosts(hosts) => list(hosts.iter().map(|h| h.to_string()).collect()),
        Network::Any => "any".to_string(),
    };
    format!(
        "confinement: {}; reads {}; writes {}; hosts {hosts}; processes {}; memory {} MiB",
        confinement
            .mode
            .map_or("mode not set (the policy's and the bundles' apply)", |m| {
                m.as_str()
            }),
        paths(&grants.read),
        paths(&grants.write),
        grants.processes,
        grants.memory_mib
    )
}
