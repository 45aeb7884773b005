//! URLs (`check_url`, `assess_url`) under the shipped policy, for a local and a remote server,
//! with and without an allow list. Properties: what is allowed is an http(s) URL with a host,
//! without userinfo or control characters, and what the user is shown (`display.full`) is
//! exactly what the URL parser makes of it (reading it again changes nothing).
#![no_main]

use std::sync::LazyLock;

use gatehouse_policy::{
    ElicitationContext, Mode, Policy, ServerStanding, TransportKind, UrlContext, assess_url,
    check_url,
};
use libfuzzer_sys::fuzz_target;

static POLICY: LazyLock<Policy> = LazyLock::new(Policy::default_policy);

fuzz_target!(|data: &[u8]| {
    // URLs arrive inside JSON strings: always UTF-8.
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    for local in [false, true] {
        for allowed in [&[][..], &["example.com".to_string()][..]] {
            let context = UrlContext {
                server_is_local: local,
                allowed_hosts: allowed.to_vec(),
            };
            let (assessment, display) = check_url(&POLICY.url, raw, &context);
            if assessment.is_allowed() {
                let url = url::Url::parse(&display.full).expect("an allowed URL parses");
                assert_eq!(url.as_str(), display.full, "what is shown is not what is opened");
                assert!(matches!(url.scheme(), "https" | "http"), "scheme {}", url.scheme());
                assert!(url.host().is_some() && !display.host.is_empty());
                assert!(url.username().is_empty() && url.password().is_none());
                assert!(!display.full.chars().any(char::is_control));
                assert!(display.full.len() <= POLICY.url.max_length);
            }
            let elicitation = ElicitationContext {
                standing: ServerStanding::Admitted,
                transport: if local {
                    TransportKind::Stdio
                } else {
                    TransportKind::Http { loopback: false, authorized: true }
                },
                mode: Mode::Url,
                mode_declared: true,
                tied_to_request: true,
            };
            let assessed = assess_url(&POLICY, &elicitation, raw, allowed);
            if assessed.assessment.is_allowed() {
                assert!(assessment.is_allowed(), "assess_url allowed what check_url did not");
            }
        }
    }
});
