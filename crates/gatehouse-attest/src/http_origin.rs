//! The host's rule for admitting an HTTP connection at an origin ([`bind_http_origin`]), on
//! top of ATSA rule 8. Apart from [`crate::origin`] so that [`crate::verify`] (which matches
//! origins) and this rule (which reads what `verify` admitted) import one way only.

use crate::origin::same_origin;
use crate::verify::{Admitted, Reason, Refusal};

/// Which signed statement bound an HTTP connection's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OriginBinding {
    /// The attestation's `netAllowedHosts` names it (the signer's word).
    Document,
    /// The bundle entry's `origins` names it (the admins' word).
    Bundle,
    /// Both name it.
    DocumentAndBundle,
}

impl OriginBinding {
    pub fn as_str(self) -> &'static str {
        match self {
            OriginBinding::Document => "document",
            OriginBinding::Bundle => "bundle",
            OriginBinding::DocumentAndBundle => "document_and_bundle",
        }
    }
}

/// The rule for admitting an HTTP connection, on top of ATSA rule 8 (which passes a document
/// with no `netAllowedHosts` anywhere): the connected origin must be *named* by a signed list,
/// the document's `netAllowedHosts` or the bundle entry's `origins`, and by each of them that is
/// not empty. A document with no hosts whose entry lists no origins (a stdio server's attestation,
/// say, copied out of the world-readable bundle) can therefore never admit an HTTP connection.
///
/// `admitted` must come from a [`crate::verify`] with the connected origin in its context;
/// `entry_origins` is the governing bundle entry's `origins` (empty when there is no entry).
pub fn bind_http_origin(
    admitted: &Admitted,
    entry_origins: &[String],
) -> Result<OriginBinding, Refusal> {
    let Some(origin) = admitted.origin() else {
        return Err(Refusal {
            reason: Reason::HostNotBound,
            detail: "an HTTP admission needs the connected origin, and none was given".into(),
        });
    };
    let hosts = admitted.net_allowed_hosts();
    // `verify` already refused a non-empty `netAllowedHosts` without this origin; check again
    // so this rule stands on its own.
    let by_document = !hosts.is_empty() && hosts.iter().any(|h| same_origin(h, origin));
    if !hosts.is_empty() && !by_document {
        return Err(Refusal {
            reason: Reason::HostNotBound,
            detail: format!(
                "the connection ({origin}) is not one of the document's netAllowedHosts {hosts:?}"
            ),
        });
    }
    let by_bundle = entry_origins.iter().any(|o| same_origin(o, origin));
    if !entry_origins.is_empty() && !by_bundle {
        return Err(Refusal {
            reason: Reason::HostNotBound,
            detail: format!(
                "the bundle entry for {} allows it only at {entry_origins:?}, not at {origin}",
                admitted.id()
            ),
        });
    }
    match (by_document, by_bundle) {
        (true, true) => Ok(OriginBinding::DocumentAndBundle),
        (true, false) => Ok(OriginBinding::Document),
        (false, true) => Ok(OriginBinding::Bundle),
        (false, false) => Err(Refusal {
            reason: Reason::HostNotBound,
            detail: format!(
                "neither the attestation for {} (no netAllowedHosts) nor its bundle entry (no origins) binds an origin, so it cannot admit an HTTP connection at {origin}; a document meant for HTTP names its origins in netAllowedHosts, or the admin lists them in the bundle entry's origins",
                admitted.id()
            ),
        }),
    }
}
