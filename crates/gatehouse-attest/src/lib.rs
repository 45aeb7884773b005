//! ATSA 1.0 (Attested Tool-Server Admission, SEP-2809): verify a Server Attestation Document
//! against a pinned trust root.
//!
//! Pure: bytes and `now` in, an [`Admitted`] proof or a [`Refusal`] out. No I/O, no clock, no
//! global state. Everything that reads the network, the disk or the time lives in the host.
//!
//! Invariants:
//! - Parsing is strict ([`json`]): a size cap, a depth cap, duplicate keys refused.
//! - The canonical body ([`canonical`]) is byte-for-byte ATSA's (not RFC 8785): registered fields
//!   only, keys and array members in UTF-16 code-unit order, absent and `null` kept apart.
//! - Rules 0–8 run in order and stop at the first failure ([`verify`]); every refusal carries
//!   the registry reason, its code and a detail for people.
//! - [`Admitted`] can only be minted by [`verify`]: its fields are private and it implements
//!   neither `Clone`, `Default` nor `Deserialize`.
//! - A trust root with no keys, ambiguous clearance names or weak keys is refused when loaded,
//!   never treated as "allow all" ([`TrustRoot::from_json`]).

pub mod bundle;
pub mod canonical;
pub mod confinement;
pub mod diff;
pub mod gate;
pub mod http_origin;
pub mod json;
pub mod keys;
mod names;
pub mod origin;
pub mod package;
pub mod pins;
pub mod resources;
pub mod trust_root;
pub mod uri_template;
pub mod verify;

/// The confinement declarations a bundle entry carries, re-exported so a consumer of bundles
/// reads them with the same types.
pub use gatehouse_confine;
pub use trust_root::{Level, Scheme, SignerKey, TrustRoot, TrustRootError};
pub use verify::{Admitted, Reason, Refusal, VerifyContext, sign_document, verify};

/// Largest attestation document accepted, in bytes (64 KiB, as for the well-known fetch).
pub const MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// Deepest nesting accepted in an attestation document.
pub const MAX_DEPTH: usize = 32;
