//! What every admission path reads the same way before and while verifying: the claims of a
//! document nobody verified yet, and the clearance an entry requires. Below the paths (a
//! document from an origin, a stdio or package binding's, a vouched entry's), which each import
//! it.

use gatehouse_attest::bundle::{ServerPolicy, VerifiedBundle};
use serde_json::Value;

/// The clearance a server must hold: its entry's own, else the bundle's.
pub(super) fn required_clearance(bundle: &VerifiedBundle, policy: Option<&ServerPolicy>) -> String {
    policy
        .and_then(|p| p.required_clearance.clone())
        .unwrap_or_else(|| bundle.content().required_clearance.clone())
}

/// What a document claims, read before verification: only to pick the bundle that judges it
/// and to show the publisher as claimed. Nothing here is trusted.
#[derive(Debug, Default)]
pub(super) struct ClaimedDocument {
    pub(super) id: Option<String>,
    pub(super) publisher: Option<String>,
    pub(super) signer_key_id: Option<String>,
}

impl ClaimedDocument {
    pub(super) fn parse(bytes: &[u8]) -> ClaimedDocument {
        gatehouse_attest::json::parse_strict(
            bytes,
            gatehouse_attest::MAX_DOCUMENT_BYTES,
            gatehouse_attest::MAX_DEPTH,
        )
        .map(|v| ClaimedDocument::of(&v))
        .unwrap_or_default()
    }

    pub(super) fn of(document: &Value) -> ClaimedDocument {
        let text = |key: &str| {
            document
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        ClaimedDocument {
            id: text("id"),
            publisher: text("publisher"),
            signer_key_id: text("signerKeyId"),
        }
    }
}
