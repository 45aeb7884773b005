//! Artifact digests: npm's SRI `sha512-<base64>` and `sha256:<hex>` (wheels, `.mcpb` files).

use base64::Engine as _;
use sha2::{Digest as _, Sha256, Sha512};
use std::fmt;

use crate::StoreError;

/// A parsed artifact digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Digest {
    Sha512([u8; 64]),
    Sha256([u8; 32]),
}

impl Digest {
    /// Parses `sha512-<base64>` (one SRI hash, standard alphabet, padded) or `sha256:<hex>`.
    pub fn parse(text: &str) -> Result<Digest, StoreError> {
        let invalid = |reason| StoreError::ArtifactDigestInvalid {
            digest: text.to_owned(),
            reason,
        };
        if let Some(b64) = text.strip_prefix("sha512-") {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|_| invalid("the sha512 value is not standard base64"))?;
            let arr: [u8; 64] = bytes
                .try_into()
                .map_err(|_| invalid("a sha512 digest is 64 bytes"))?;
            Ok(Digest::Sha512(arr))
        } else if let Some(hx) = text.strip_prefix("sha256:") {
            // Lower-case only, so that one digest has one spelling in bundles and logs.
            if hx.len() != 64 || !hx.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                return Err(invalid("a sha256 digest is 64 lower-case hex digits"));
            }
            let mut arr = [0u8; 32];
            hex::decode_to_slice(hx, &mut arr).expect("checked: 64 lower-case hex digits");
            Ok(Digest::Sha256(arr))
        } else {
            Err(invalid("unknown algorithm"))
        }
    }

    /// The digest of `bytes` with the same algorithm as `self`.
    pub fn same_algorithm_of(&self, bytes: &[u8]) -> Digest {
        match self {
            Digest::Sha512(_) => Digest::Sha512(Sha512::digest(bytes).into()),
            Digest::Sha256(_) => Digest::Sha256(Sha256::digest(bytes).into()),
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Digest::Sha512(d) => write!(
                f,
                "sha512-{}",
                base64::engine::general_purpose::STANDARD.encode(d)
            ),
            Digest::Sha256(d) => write!(f, "sha256:{}", hex::encode(d)),
        }
    }
}

/// Checks `bytes` against `expected` (see [`Digest::parse`]). Call it before unpacking: a
/// mismatch names both digests.
pub fn verify_artifact(bytes: &[u8], expected: &str) -> Result<(), StoreError> {
    let want = Digest::parse(expected)?;
    let got = want.same_algorithm_of(bytes);
    if got == want {
        Ok(())
    } else {
        Err(StoreError::ArtifactMismatch {
            expected: want.to_string(),
            actual: got.to_string(),
        })
    }
}
