//! Policy files (`Policy::from_toml`). A policy that loads is then used the way the broker uses
//! it, so a setting that passes validation but breaks a check (a term, a host, a limit) shows
//! up here: a form and its answers, a URL, the evidence checks and the abuse counters.
#![no_main]

use std::time::{Duration, Instant};

use gatehouse_policy::{
    AbuseEvent, AbuseTracker, ElicitationContext, FormSchema, Mode, Policy, ServerStanding,
    TransportKind, assess_form, assess_url, check_answers,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(policy) = Policy::from_toml(text) else {
        return;
    };
    let schema = json!({
        "type": "object",
        "title": "Sign in to Example",
        "properties": {
            "name": {"type": "string", "title": "Name", "maxLength": 50},
            "apiKey": {"type": "string", "description": "Your API key"},
            "plan": {"type": "string", "enum": ["free", "pro"]},
            "seats": {"type": "integer", "minimum": 1, "maximum": 100}
        },
        "required": ["name"]
    });
    for (standing, transport, tied) in [
        (ServerStanding::Admitted, TransportKind::Stdio, true),
        (
            ServerStanding::Unattested,
            TransportKind::Http { loopback: true, authorized: false },
            false,
        ),
    ] {
        let context = |mode| ElicitationContext {
            standing,
            transport,
            mode,
            mode_declared: true,
            tied_to_request: tied,
        };
        let form = assess_form(&policy, &context(Mode::Form), Some("Please sign in"), &schema);
        let parsed = FormSchema::parse(&schema).expect("the fixed schema is in the subset");
        let answers: Map<String, Value> = serde_json::from_value(json!({
            "name": "Ada",
            "apiKey": "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
            "plan": "pro",
            "seats": 3
        }))
        .expect("an object");
        let _ = (form, check_answers(&policy, &parsed, &answers));
        for url in [
            "https://accounts.example.com/login?next=https%3A%2F%2Fevil.example&token=ghp_abc",
            "http://127.0.0.1:8080/callback#access_token=xyz",
            "https://xn--80ak6aa92e.com/",
        ] {
            let _ = assess_url(&policy, &context(Mode::Url), url, &["example.com".to_string()]);
        }
    }
    let mut abuse = AbuseTracker::new(&policy.abuse);
    let start = Instant::now();
    for (i, event) in [AbuseEvent::Elicitation, AbuseEvent::Denial, AbuseEvent::BogusCompletion]
        .into_iter()
        .cycle()
        .take(30)
        .enumerate()
    {
        let _ = abuse.record(event, start + Duration::from_millis(100 * i as u64));
    }
});
