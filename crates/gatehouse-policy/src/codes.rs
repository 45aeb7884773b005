//! Every reason code, as a constant, with the decision it leads to. Codes are stable
//! snake_case: the CLI's JSON, the audit log and the UI key on them.

use crate::decision::Decision;

use Decision::{
    DenySensitiveFormElicitation as SensitiveForm, DenyTokenOrSecretTransit as Transit,
    DenyUntrustedElicitationUrl as BadUrl, HoldForElicitationEvidence as Hold,
    KillSessionOnElicitationAbuse as Kill,
};

// hold_for_elicitation_evidence
pub const SERVER_NOT_ADMITTED: &str = "server_not_admitted";
pub const SERVER_UNATTESTED: &str = "server_unattested";
pub const MODE_NOT_DECLARED: &str = "mode_not_declared";
pub const NOT_TIED_TO_REQUEST: &str = "not_tied_to_request";
pub const NO_IDENTITY_BINDING: &str = "no_identity_binding";
pub const SCHEMA_OUTSIDE_SUBSET: &str = "schema_outside_subset";

// deny_sensitive_form_elicitation
pub const SENSITIVE_FIELD: &str = "sensitive_field";
pub const TOO_MANY_FIELDS: &str = "too_many_fields";

// deny_untrusted_elicitation_url
pub const URL_UNPARSABLE: &str = "url_unparsable";
pub const URL_SCHEME_NOT_ALLOWED: &str = "url_scheme_not_allowed";
pub const URL_NOT_HTTPS: &str = "url_not_https";
pub const URL_USERINFO: &str = "url_userinfo";
pub const URL_IP_LITERAL: &str = "url_ip_literal";
/// A name for this machine (`localhost`, `*.localhost`) from a server that is not on it.
pub const URL_LOCAL_HOST: &str = "url_local_host";
pub const URL_OBFUSCATED_HOST: &str = "url_obfuscated_host";
pub const URL_PUNYCODE_HOST: &str = "url_punycode_host";
pub const URL_MIXED_SCRIPT_HOST: &str = "url_mixed_script_host";
pub const URL_CONFUSABLE_HOST: &str = "url_confusable_host";
pub const URL_HOST_NOT_ALLOWED: &str = "url_host_not_allowed";
pub const URL_SECRET_QUERY: &str = "url_secret_query";
pub const URL_OPEN_REDIRECT: &str = "url_open_redirect";
pub const URL_TOO_LONG: &str = "url_too_long";

// deny_token_or_secret_transit
pub const SECRET_TOKEN_PREFIX: &str = "secret_token_prefix";
pub const SECRET_PEM_BLOCK: &str = "secret_pem_block";
pub const SECRET_JWT: &str = "secret_jwt";
pub const SECRET_HIGH_ENTROPY: &str = "secret_high_entropy";

// kill_session_on_elicitation_abuse
pub const ELICITATION_RATE_EXCEEDED: &str = "elicitation_rate_exceeded";
pub const REPEATED_DENIALS: &str = "repeated_denials";
pub const BOGUS_COMPLETIONS: &str = "bogus_completions";

/// Every code and its decision, in the order the README documents them.
pub const ALL: &[(&str, Decision)] = &[
    (SERVER_NOT_ADMITTED, Hold),
    (SERVER_UNATTESTED, Hold),
    (MODE_NOT_DECLARED, Hold),
    (NOT_TIED_TO_REQUEST, Hold),
    (NO_IDENTITY_BINDING, Hold),
    (SCHEMA_OUTSIDE_SUBSET, Hold),
    (SENSITIVE_FIELD, SensitiveForm),
    (TOO_MANY_FIELDS, SensitiveForm),
    (URL_UNPARSABLE, BadUrl),
    (URL_SCHEME_NOT_ALLOWED, BadUrl),
    (URL_NOT_HTTPS, BadUrl),
    (URL_USERINFO, BadUrl),
    (URL_IP_LITERAL, BadUrl),
    (URL_LOCAL_HOST, BadUrl),
    (URL_OBFUSCATED_HOST, BadUrl),
    (URL_PUNYCODE_HOST, BadUrl),
    (URL_MIXED_SCRIPT_HOST, BadUrl),
    (URL_CONFUSABLE_HOST, BadUrl),
    (URL_HOST_NOT_ALLOWED, BadUrl),
    (URL_SECRET_QUERY, BadUrl),
    (URL_OPEN_REDIRECT, BadUrl),
    (URL_TOO_LONG, BadUrl),
    (SECRET_TOKEN_PREFIX, Transit),
    (SECRET_PEM_BLOCK, Transit),
    (SECRET_JWT, Transit),
    (SECRET_HIGH_ENTROPY, Transit),
    (ELICITATION_RATE_EXCEEDED, Kill),
    (REPEATED_DENIALS, Kill),
    (BOGUS_COMPLETIONS, Kill),
];

/// The decision a code leads to, or `None` for an unknown code.
pub fn decision_of(code: &str) -> Option<Decision> {
    ALL.iter().find(|(c, _)| *c == code).map(|(_, d)| *d)
}

/// Hold codes a policy may list in `evidence.user_may_override`.
pub const OVERRIDABLE: &[&str] = &[
    SERVER_UNATTESTED,
    MODE_NOT_DECLARED,
    NOT_TIED_TO_REQUEST,
    NO_IDENTITY_BINDING,
];

/// Hold codes no policy can make overridable.
pub const NEVER_OVERRIDABLE: &[&str] = &[SERVER_NOT_ADMITTED, SCHEMA_OUTSIDE_SUBSET];

/// A reason for `code` with its decision from [`ALL`].
pub(crate) fn reason(code: &'static str, detail: impl Into<String>) -> crate::decision::Reason {
    let decision = decision_of(code).expect("every code used is listed in codes::ALL");
    crate::decision::Reason::new(decision, code, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for (code, _) in ALL {
            assert!(seen.insert(*code), "{code} listed twice");
            assert!(
                code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{code} is not snake_case"
            );
        }
        for code in OVERRIDABLE.iter().chain(NEVER_OVERRIDABLE) {
            assert_eq!(decision_of(code), Some(Hold), "{code}");
        }
    }
}
