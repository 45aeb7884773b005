//! Remote servers the admins vouch for (issue 27): a bundle entry's `vouched` attestation
//! admits a server that publishes none, at exactly the endpoints the entry lists.
//!
//! The server's own well-known document is never fetched for a vouched endpoint: the admins'
//! word is the whole statement about it, so nothing the server serves can widen it. And a
//! vouched id admits nothing anywhere else (see [`Trust::vouched_elsewhere`]).

use gatehouse_attest::VerifyContext;
use gatehouse_attest::bundle::{ServerPolicy, VerifiedBundle};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::claimed::{ClaimedDocument, required_clearance};
use super::{AdmissionReason, IdentitySource, Trust, Verdict};

/// The endpoint a configured URL is matched by: the URL without its query and fragment,
/// which never identify a server (a token in the query must not make it another one).
/// Userinfo is kept, so a URL carrying credentials matches no endpoint (the bundle refuses
/// endpoints with userinfo).
pub fn endpoint_of(url: &url::Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

impl Trust {
    /// The installed entry that vouches for `endpoint` (already in [`endpoint_of`] form), and
    /// its bundle. At most one: `check_combinable` refuses one endpoint under two ids.
    pub(super) fn vouched_for(&self, endpoint: &str) -> Option<(&VerifiedBundle, &ServerPolicy)> {
        self.store.bundles().iter().find_map(|b| {
            b.content()
                .servers
                .iter()
                .find(|s| {
                    s.vouched
                        .as_ref()
                        .is_some_and(|v| v.endpoints.iter().any(|e| e == endpoint))
                })
                .map(|s| (b, s))
        })
    }

    /// Whether `id` is vouched for by an installed entry: a document fetched from an origin
    /// that verifies as it is refused, naming where it is vouched for.
    pub(super) fn vouched_elsewhere(&self, id: &str) -> Option<String> {
        let (bundle, policy) = self.store.server(id)?;
        let vouched = policy.vouched.as_ref()?;
        Some(format!(
            "{id} is vouched for by {} only at {}; a document served elsewhere cannot admit it (nothing a server publishes widens the admins' vouch)",
            bundle.label(),
            vouched.endpoints.join(", ")
        ))
    }

    /// Admits the server at `endpoint` (whose origin is `origin`) by the admins' attestation
    /// in `policy`, verified against `bundle`'s trust root with the connected origin.
    pub(super) fn admit_vouched(
        &self,
        mut verdict: Verdict,
        bundle: &VerifiedBundle,
        policy: &ServerPolicy,
        endpoint: &str,
        origin: &str,
        now: OffsetDateTime,
    ) -> Verdict {
        let vouched = policy
            .vouched
            .as_ref()
            .expect("the caller found this entry by its vouched endpoints");
        verdict.origin = Some(origin.to_string());
        verdict.claimed.publisher = ClaimedDocument::of(&vouched.attestation).publisher;
        if now >= vouched.expires {
            verdict.bundle = Some(bundle.label());
            return verdict.refused(
                AdmissionReason::VouchExpired,
                format!(
                    "{} is vouched for by {} at {endpoint} only until {}, which has passed; ask the admin to review the server again and renew the vouch (gatehouse bundle add-server --url)",
                    policy.id,
                    bundle.label(),
                    vouched.expires.format(&Rfc3339).unwrap_or_default()
                ),
            );
        }
        let document = serde_json::to_vec(&vouched.attestation).expect("a JSON value serializes");
        let required = required_clearance(bundle, Some(policy));
        let context = VerifyContext {
            origin: Some(origin),
            required_clearance: &required,
            now,
        };
        let admitted =
            match gatehouse_attest::verify(Some(&document), &bundle.content().trust_root, &context)
            {
                Err(refusal) => return verdict.refused_by(&refusal, Some(bundle)),
                Ok(admitted) => admitted,
            };
        if admitted.id() != policy.id {
            verdict.bundle = Some(bundle.label());
            return verdict.refused(
                AdmissionReason::VouchedElsewhere,
                format!(
                    "the attestation vouched for at {endpoint} is for {:?}, but its bundle entry is {:?}: the bundle contradicts itself; ask the admin to fix it",
                    admitted.id(),
                    policy.id
                ),
            );
        }
        match gatehouse_attest::http_origin::bind_http_origin(&admitted, &policy.origins) {
            Err(refusal) => verdict.refused_by(&refusal, Some(bundle)),
            Ok(binding) => {
                verdict.origin_binding = Some(binding);
                let mut verdict = self.admitted(verdict, admitted, bundle, Some(policy.clone()));
                if let Some(identity) = verdict.identity.as_mut() {
                    identity.attested_by = IdentitySource::Vouched;
                }
                verdict.detail = format!(
                    "{} at {endpoint} (until {})",
                    IdentitySource::Vouched.describe(&bundle.label()),
                    vouched.expires.format(&Rfc3339).unwrap_or_default()
                );
                verdict
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::endpoint_of;

    #[test]
    fn the_endpoint_drops_query_and_fragment_but_keeps_the_path() {
        let url = |s: &str| url::Url::parse(s).unwrap();
        assert_eq!(
            endpoint_of(&url("https://mcp.example.com/mcp?token=x#frag")),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            endpoint_of(&url("HTTPS://MCP.example.com:443/@alice/mcp")),
            "https://mcp.example.com/@alice/mcp"
        );
        // Userinfo stays, so it matches no vouched endpoint.
        assert_ne!(
            endpoint_of(&url("https://user:pw@mcp.example.com/mcp")),
            "https://mcp.example.com/mcp"
        );
    }
}
