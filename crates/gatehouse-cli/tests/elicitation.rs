//! The elicitation engine end to end: the `gatehouse` CLI against the demo server (admitted
//! under the DEMO-ONLY trust root), over stdio and Streamable HTTP, in both protocol eras, with
//! scripted consent (`--answers`) and a recorder `$BROWSER` that visits the demo's page like a
//! person would. Every decision of elicitation.md §3 is triggered here or in
//! gatehouse-host's tests/elicitation.rs.

mod common;

use std::process::Command;

use common::{Running, Transport, World, demo_bin, lines, start_listening};
use gatehouse_host::audit_event::session::{
    ElicitationCompleted, ElicitationCompletionIgnored, ElicitationReceipt, IgnoredWhy,
    SessionKilled,
};
use gatehouse_host::broker::ElicitationAnswer;
use gatehouse_policy::Decision;
use gatehouse_testkit::audit::payloads_in;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const ERAS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// What this file adds to the shared world: the demo server's page hits and its calls.
impl World {
    /// GETs of the demo's connect page.
    fn hits(&self) -> Vec<String> {
        lines(&self.path("hits.log"))
    }

    fn demo_command(&self, visit: &str) -> Command {
        let mut cmd = self.command(visit);
        cmd.env("GATEHOUSE_DEMO_PAGE_HITS", self.path("hits.log"));
        cmd
    }

    /// The demo server over HTTP, recording page hits in this world.
    fn demo_http(&self, era: &str) -> (Running, String) {
        let mut command = Command::new(demo_bin());
        command
            .args(["--http", "127.0.0.1:0", "--era", era])
            .env("GATEHOUSE_DEMO_PAGE_HITS", self.path("hits.log"));
        start_listening(command)
    }

    /// `gatehouse --json --demo call …` with these answers; returns the exit code, the JSON
    /// printed and stderr.
    fn call(
        &mut self,
        target: &[&str],
        tool: &str,
        args: Value,
        answers: Value,
        visit: &str,
        extra: &[&str],
    ) -> (i32, Value, String) {
        let file = self.answers_file(&answers);
        let mut cmd = self.demo_command(visit);
        cmd.args(["--json", "--demo", "--posture", "deny-by-default"])
            .args(extra)
            .arg("call")
            .args(target)
            .arg(tool)
            .arg("--args")
            .arg(args.to_string())
            .arg("--answers")
            .arg(&file);
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        (out.status.code().unwrap_or(-1), value, stderr)
    }
}

/// The text the tool returned.
fn text(out: &Value) -> String {
    out["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result in {out}"))
        .to_string()
}

/// The ElicitResult the demo server says it received (book_table, ask_password, open_link).
fn received(out: &Value) -> Value {
    serde_json::from_str(&text(out)).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Runs `f` against the demo server over `transport` in `era`, with the target arguments
/// and era flag for `call`.
fn each_transport_and_era(mut f: impl FnMut(&mut World, Transport, &str, &[&str], &[&str])) {
    for transport in [Transport::Stdio, Transport::Http] {
        for era in ERAS {
            let mut world = World::new();
            let era_flag = ["--era", era];
            match transport {
                Transport::Stdio => f(&mut world, transport, era, &["demo"], &era_flag),
                Transport::Http => {
                    let (_server, url) = world.demo_http(era);
                    f(&mut world, transport, era, &["--url", &url], &era_flag);
                }
            }
        }
    }
}

fn book_table_answers() -> Value {
    json!({"name": "Ada Lovelace", "email": "ada@example.com", "date": "2026-12-24",
           "party_size": 4, "seating": "outdoor", "extras": ["bread", "wine"]})
}

#[test]
fn a_form_with_every_field_type_reaches_the_server_exactly_as_submitted() {
    each_transport_and_era(|world, transport, era, target, flags| {
        let answers =
            json!([{"mode": "form", "action": "accept", "content": book_table_answers()}]);
        let (code, out, stderr) =
            world.call(target, "book_table", json!({}), answers, "none", flags);
        assert_eq!(code, 0, "{transport:?} {era}: {out} {stderr}");
        let got = received(&out);
        assert_eq!(got["action"], "accept", "{transport:?} {era}: {got}");
        // Defaults the user kept are sent along with what they typed.
        let content = got["content"].as_object().unwrap();
        assert_eq!(content["name"], "Ada Lovelace");
        assert_eq!(content["party_size"], 4);
        assert_eq!(content["seating"], "outdoor");
        assert_eq!(content["extras"], json!(["bread", "wine"]));
        assert_eq!(content["budget"], 50.5, "default pre-filled");
        assert_eq!(content["vegetarian"], false, "default pre-filled");

        let elicitation = &out["elicitations"][0];
        assert_eq!(elicitation["decision"], "allow_elicitation_with_receipt");
        assert_eq!(elicitation["action"], "accept");
        assert_eq!(elicitation["mode"], "form");
        let receipt_id = elicitation["receipt_id"].as_str().unwrap().to_string();
        match era {
            "2025-11-25" => {
                let basis = elicitation["correlation"]["basis"].as_str().unwrap();
                // HTTP says which POST's stream it came on; stdio can only list what was in flight.
                let expected = match transport {
                    Transport::Http => "sse_stream",
                    Transport::Stdio => "in_flight",
                };
                assert_eq!(basis, expected, "{elicitation}");
                assert_eq!(
                    elicitation["correlation"]["requests"][0]["tool"], "book_table",
                    "{elicitation}"
                );
            }
            _ => {
                assert_eq!(elicitation["correlation"]["basis"], "mrtr_result");
                assert_eq!(elicitation["input_key"], "booking");
                assert_eq!(elicitation["round"], 1);
                assert_eq!(out["rounds"], 2, "one input_required round, then the retry");
            }
        }

        // The receipt: hashed content, never the content itself.
        let receipts: Vec<ElicitationReceipt> = payloads_in(&world.audit("elicitation_receipt"));
        let data = receipts
            .iter()
            .find(|r| r.receipt_id == receipt_id)
            .unwrap_or_else(|| panic!("no receipt {receipt_id} in {receipts:?}"));
        assert_eq!(data.server_id.as_deref(), Some("urn:gatehouse:demo-server"));
        assert_eq!(data.bundle.as_deref(), Some("DEMO-ONLY-gatehouse-demo@1"));
        assert_eq!(data.era.as_str(), era);
        assert_eq!(data.action, ElicitationAnswer::Accept);
        let sent = serde_json::to_vec(&got["content"]).unwrap();
        assert_eq!(
            data.content_sha256,
            Some(format!("sha256:{}", hex::encode(Sha256::digest(&sent)))),
            "the hash of exactly what was sent"
        );
        assert!(!data.policy_version.is_empty());
        let log = std::fs::read_to_string(world.env.audit_log()).unwrap();
        assert!(
            !log.contains("Ada Lovelace"),
            "content must never be stored"
        );
        let (code, verify) = world.env.json(&["audit", "verify"]);
        assert_eq!((code, &verify["ok"]), (0, &json!(true)), "{verify}");
    });
}

#[test]
fn invalid_answers_are_never_sent() {
    let mut world = World::new();
    // party_size is an integer from 1 to 12; 99 breaks it.
    let answers = json!([{"mode": "form", "action": "accept", "content": {"name": "Ada", "date": "2026-12-24", "party_size": 99}}]);
    let (code, out, stderr) = world.call(&["demo"], "book_table", json!({}), answers, "none", &[]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(received(&out), json!({"action": "cancel"}), "{out}");
    assert_eq!(out["elicitations"][0]["action"], "cancel");
    let notes = out["answers_notes"].to_string();
    assert!(
        notes.contains("party_size"),
        "the note names the field: {notes}"
    );
}

#[test]
fn a_sensitive_form_is_refused_and_the_server_only_gets_decline() {
    for era in ERAS {
        let mut world = World::new();
        // Even an answers file that would accept: the user is never asked.
        let answers =
            json!([{"mode": "form", "action": "accept", "content": {"password": "hunter2"}}]);
        let (code, out, stderr) = world.call(
            &["demo"],
            "ask_password",
            json!({}),
            answers,
            "none",
            &["--era", era],
        );
        assert_eq!(code, 0, "{era}: {out} {stderr}");
        assert_eq!(received(&out), json!({"action": "decline"}), "{era}");
        let elicitation = &out["elicitations"][0];
        assert_eq!(elicitation["decision"], "deny_sensitive_form_elicitation");
        assert!(
            elicitation["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["code"] == "sensitive_field"),
            "{elicitation}"
        );
        let receipt: Vec<ElicitationReceipt> = payloads_in(&world.audit("elicitation_receipt"));
        assert_eq!(receipt[0].decision, Decision::DenySensitiveFormElicitation);
        assert_eq!(receipt[0].content_sha256, None);
        assert!(
            !std::fs::read_to_string(world.env.audit_log())
                .unwrap()
                .contains("hunter2")
        );
    }
}

#[test]
fn a_credential_typed_into_an_ordinary_field_is_not_sent() {
    let mut world = World::new();
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let answers = json!([{"mode": "form", "action": "accept", "content": {"name": token, "date": "2026-12-24"}}]);
    let (code, out, stderr) = world.call(&["demo"], "book_table", json!({}), answers, "none", &[]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(received(&out), json!({"action": "decline"}));
    assert_eq!(
        out["elicitations"][0]["decision"],
        "deny_token_or_secret_transit"
    );
    assert!(
        !std::fs::read_to_string(world.env.audit_log())
            .unwrap()
            .contains(token)
    );
}

#[test]
fn the_url_flow_opens_only_after_consent_and_completes_on_its_prompt() {
    each_transport_and_era(|world, transport, era, target, flags| {
        // Declined: nothing is opened and the page is never fetched, by anyone.
        let (code, out, stderr) = world.call(
            target,
            "connect_account",
            json!({}),
            json!([{"mode": "url", "action": "decline"}]),
            "submit",
            flags,
        );
        assert_eq!(code, 0, "{transport:?} {era}: {out} {stderr}");
        assert_eq!(text(&out), "not connected: decline", "{transport:?} {era}");
        assert!(world.opened().is_empty(), "nothing opened");
        assert!(world.hits().is_empty(), "no prefetch: {:?}", world.hits());
        let elicitation = &out["elicitations"][0];
        assert_eq!(elicitation["decision"], "allow_elicitation_with_receipt");
        let url = elicitation["url"]["full"].as_str().unwrap().to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        assert_eq!(elicitation["url"]["host"], "127.0.0.1");

        // Accepted: opened in the (recorder) browser, which submits the page.
        let (code, out, stderr) = world.call(
            target,
            "connect_account",
            json!({"service": "calendar"}),
            json!([{"mode": "url", "action": "accept"}]),
            "submit",
            flags,
        );
        assert_eq!(code, 0, "{transport:?} {era}: {out} {stderr}");
        let elicitation = &out["elicitations"][0];
        let url = elicitation["url"]["full"].as_str().unwrap().to_string();
        assert_eq!(world.opened(), vec![url.clone()], "exactly the URL shown");
        assert!(!world.hits().is_empty(), "the browser visited the page");
        assert!(text(&out).starts_with("connected calendar"), "{out}");
        assert_eq!(elicitation["completed"], true, "{elicitation}");
        if era == "2025-11-25" {
            // The completion notification landed on this prompt.
            let id = elicitation["elicitation_id"].as_str().unwrap();
            let completed: Vec<ElicitationCompleted> =
                payloads_in(&world.audit("elicitation_completed"));
            assert!(
                completed
                    .iter()
                    .any(|r| r.elicitation_id.as_deref() == Some(id)
                        && elicitation["receipt_id"] == r.receipt_id.as_str()),
                "{completed:?}"
            );
        }
    });
}

#[test]
fn url_elicitation_required_is_completed_then_the_call_is_retried() {
    each_transport_and_era(|world, transport, era, target, flags| {
        let (code, out, stderr) = world.call(
            target,
            "connect_account_required",
            json!({"service": "mail"}),
            json!([{"mode": "url", "action": "accept"}]),
            "submit",
            flags,
        );
        assert_eq!(code, 0, "{transport:?} {era}: {out} {stderr}");
        assert!(text(&out).starts_with("connected mail"), "{out}");
        assert!(out["rounds"].as_u64().unwrap() >= 2, "retried: {out}");
        let elicitation = &out["elicitations"][0];
        assert_eq!(elicitation["completed"], true, "{elicitation}");
        let basis = elicitation["correlation"]["basis"].as_str().unwrap();
        match era {
            "2025-11-25" => assert_eq!(basis, "error_response"),
            _ => assert_eq!(basis, "mrtr_result"),
        }
        let retries = world.audit("elicitation_retry");
        assert!(!retries.is_empty(), "the retry is audited");
        assert_eq!(world.opened().len(), 1, "opened once, not per retry");
    });
}

#[test]
fn a_declined_required_url_fails_the_call_without_opening_anything() {
    let mut world = World::new();
    let (code, out, stderr) = world.call(
        &["demo"],
        "connect_account_required",
        json!({}),
        json!([{"mode": "url", "action": "decline"}]),
        "submit",
        &["--era", "2025-11-25"],
    );
    assert_eq!(code, 1, "{out} {stderr}");
    assert_eq!(out["error"]["code"], "elicitation_incomplete", "{out}");
    assert_eq!(out["elicitations"][0]["action"], "decline");
    assert!(world.opened().is_empty());
    assert!(world.hits().is_empty());
}

#[test]
fn phishing_urls_are_refused_before_anyone_sees_a_consent_button() {
    let cases = [
        ("https://github.com@evil.example/login", "url_userinfo"),
        ("https://xn--80ak6aa92e.com/login", "url_punycode_host"),
        ("javascript:alert(1)", "url_scheme_not_allowed"),
        ("http://93.184.216.34/connect", "url_ip_literal"),
        // Not on the demo bundle's urlElicitationDomains.
        (
            "https://accounts.example.com/connect",
            "url_host_not_allowed",
        ),
        (
            "https://127.0.0.1.evil.example/connect",
            "url_host_not_allowed",
        ),
    ];
    for (url, code_expected) in cases {
        let mut world = World::new();
        let (code, out, stderr) = world.call(
            &["demo"],
            "open_link",
            json!({"url": url}),
            json!([{"mode": "url", "action": "accept"}]),
            "submit",
            &["--era", "2025-11-25"],
        );
        assert_eq!(code, 0, "{url}: {out} {stderr}");
        let elicitation = &out["elicitations"][0];
        assert_eq!(
            elicitation["decision"], "deny_untrusted_elicitation_url",
            "{url}: {elicitation}"
        );
        assert!(
            elicitation["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["code"] == code_expected),
            "{url}: expected {code_expected} in {elicitation}"
        );
        assert_eq!(received(&out)["action"], "decline", "{url}");
        assert!(world.opened().is_empty(), "{url} must not be opened");
        assert_eq!(out["answers_notes"], json!([]), "the user was never asked");
    }
}

#[test]
fn spoofed_completions_change_nothing_but_the_audit_log() {
    for era in ERAS {
        let mut world = World::new();
        let (code, out, stderr) = world.call(
            &["demo"],
            "spoof_completion",
            json!({"count": 2}),
            json!([]),
            "none",
            &["--era", era],
        );
        assert_eq!(code, 0, "{era}: {out} {stderr}");
        assert_eq!(text(&out), "sent 2 spoofed completions");
        let ignored: Vec<ElicitationCompletionIgnored> =
            payloads_in(&world.audit("elicitation_completion_ignored"));
        assert_eq!(ignored.len(), 2, "{era}: {ignored:?}");
        assert!(ignored.iter().all(|r| r.why == IgnoredWhy::NeverIssued));
        assert!(world.audit("elicitation_completed").is_empty());
        assert!(
            world.audit("server_suspended").is_empty(),
            "below the abuse limit"
        );
        // The server still works.
        let (code, out, _) = world.call(
            &["demo"],
            "echo",
            json!({"message": "still here"}),
            json!([]),
            "none",
            &["--era", era],
        );
        assert_eq!((code, text(&out)), (0, "still here".to_string()));
    }
}

#[test]
fn abuse_kills_the_session_and_suspends_the_server_until_resumed() {
    let mut world = World::new();
    // The default policy tolerates a few bogus completions per window, not twenty.
    let (code, out, stderr) = world.call(
        &["demo"],
        "spoof_completion",
        json!({"count": 20}),
        json!([]),
        "none",
        &["--era", "2025-11-25"],
    );
    assert_ne!(code, 0, "{out} {stderr}");
    let killed: Vec<SessionKilled> = payloads_in(&world.audit("session_killed"));
    assert_eq!(killed.len(), 1, "{killed:?}");
    assert_eq!(killed[0].decision, Decision::KillSessionOnElicitationAbuse);
    assert_eq!(world.audit("server_suspended").len(), 1);

    // Suspended: refused before the process is started.
    let (code, out, stderr) = world.call(
        &["demo"],
        "echo",
        json!({"message": "hi"}),
        json!([]),
        "none",
        &[],
    );
    assert_eq!(code, 1, "{out} {stderr}");
    assert!(stderr.contains("suspended"), "{stderr}");

    let (code, stdout, stderr) = world.env.run(&["--demo", "servers", "resume", "demo"]);
    assert_eq!(code, 0, "{stdout} {stderr}");
    assert_eq!(world.audit("server_resumed").len(), 1);
    let (code, out, stderr) = world.call(
        &["demo"],
        "echo",
        json!({"message": "back"}),
        json!([]),
        "none",
        &[],
    );
    assert_eq!((code, text(&out)), (0, "back".to_string()), "{stderr}");
}

#[test]
fn an_unattested_server_is_held_and_only_an_explicit_override_goes_ahead() {
    let mut world = World::new();
    let target = ["--stdio", &demo_bin()].map(str::to_string);
    let target: Vec<&str> = target.iter().map(String::as_str).collect();
    // Warn posture: the developer pinned the tools of this unattested server.
    let mut pin = world.command("none");
    pin.args(["--posture", "warn", "tools", "pin"])
        .args(&target);
    assert!(pin.status().unwrap().success());
    let run = |world: &mut World, answers: Value| {
        let file = world.answers_file(&answers);
        let mut cmd = world.command("none");
        cmd.args(["--json", "--posture", "warn", "call"])
            .args(&target)
            .args(["book_table", "--answers"])
            .arg(&file);
        let out = cmd.output().unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let accept = json!({"mode": "form", "action": "accept", "content": {"name": "Ada", "date": "2026-12-24"}});
    let out = run(&mut world, json!([accept]));
    let elicitation = &out["elicitations"][0];
    assert_eq!(elicitation["decision"], "hold_for_elicitation_evidence");
    assert!(
        elicitation["reasons"]
            .to_string()
            .contains("server_unattested")
    );
    assert_eq!(
        elicitation["action"], "decline",
        "accept alone does not override"
    );
    assert_eq!(received(&out)["action"], "decline");

    let mut overriding = accept.clone();
    overriding["override"] = json!(true);
    let out = run(&mut world, json!([overriding]));
    assert_eq!(out["elicitations"][0]["overridden"], true, "{out}");
    assert_eq!(received(&out)["action"], "accept");
    assert_eq!(received(&out)["content"]["name"], "Ada");
}

#[test]
fn a_remote_server_without_authorization_is_held_under_sep_2343() {
    let mut world = World::new();
    // A policy that does not treat loopback HTTP as local: the demo HTTP server is "remote".
    let policy = gatehouse_policy::policy::DEFAULT_POLICY_TOML.replace(
        "loopback_http_is_local = true",
        "loopback_http_is_local = false",
    );
    assert_ne!(policy, gatehouse_policy::policy::DEFAULT_POLICY_TOML);
    let policy_file = world.path("remote.toml");
    std::fs::write(&policy_file, policy).unwrap();
    let (_server, url) = world.demo_http("2025-11-25");
    let (code, out, stderr) = world.call(
        &["--url", &url],
        "book_table",
        json!({}),
        json!([{"mode": "form", "action": "accept", "content": {"name": "Ada", "date": "2026-12-24"}}]),
        "none",
        &["--policy", policy_file.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out} {stderr}");
    let elicitation = &out["elicitations"][0];
    assert_eq!(elicitation["decision"], "hold_for_elicitation_evidence");
    assert!(
        elicitation["reasons"]
            .to_string()
            .contains("no_identity_binding"),
        "{elicitation}"
    );
    assert_eq!(received(&out)["action"], "decline");
}

/// Without `--answers`, prompts are asked at the terminal: shown on stderr (the banner, the
/// full URL and host, the form field by field) and answered by what is typed at the
/// controlling terminal. The command's stdin is /dev/null here, so every answer below came
/// from the terminal.
#[test]
fn without_an_answers_file_the_terminal_asks() {
    let world = World::new();
    let ask = |tool: &str, args: Value, typed: &str, visit: &str| {
        let mut cmd = world.demo_command(visit);
        cmd.args([
            "--json",
            "--demo",
            "--era",
            "2025-11-25",
            "call",
            "demo",
            tool,
        ])
        .arg("--args")
        .arg(args.to_string());
        let (_, stdout, stderr) = common::in_a_terminal(&cmd, typed, None);
        (
            serde_json::from_str::<Value>(&stdout).unwrap_or(Value::Null),
            stderr,
        )
    };

    // A URL: shown in full with its host and the verified identity; "d" declines.
    let (out, stderr) = ask("connect_account", json!({}), "d\n", "submit");
    assert_eq!(text(&out), "not connected: decline", "{stderr}");
    let url = out["elicitations"][0]["url"]["full"].as_str().unwrap();
    assert!(stderr.contains(url), "the full URL is shown: {stderr}");
    assert!(
        stderr.contains("Verified server: urn:gatehouse:demo-server"),
        "{stderr}"
    );
    assert!(stderr.contains("claimed (not verified)"), "{stderr}");
    assert!(world.opened().is_empty() && world.hits().is_empty());

    // "o" opens it; the recorder browser submits the page and the call completes.
    let (out, stderr) = ask("connect_account", json!({}), "o\n", "submit");
    assert!(text(&out).starts_with("connected"), "{out} {stderr}");
    assert_eq!(world.opened().len(), 1);

    // Opened, but the page is never finished: while the call runs, "c" cancels it, and the
    // server is told (notifications/cancelled); the flow stays not completed.
    let (out, stderr) = ask("connect_account", json!({}), "o\nc\n", "none");
    assert_eq!(out["error"]["code"], "cancelled", "{out} {stderr}");
    assert!(
        out["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("notifications/cancelled")),
        "{out}"
    );
    assert_eq!(out["elicitations"][0]["completed"], false, "{out}");
    assert!(stderr.contains("Type c to cancel the call"), "{stderr}");
    assert_eq!(world.opened_eventually(2).len(), 2);

    // A form: Enter keeps every default; "s" submits; the required name is missing, so the
    // form comes back with the problem named, and the end of input cancels it.
    let (out, stderr) = ask(
        "book_table",
        json!({}),
        &format!("{}s\n", "\n".repeat(13)),
        "none",
    );
    assert!(stderr.contains("invalid answer for name"), "{stderr}");
    assert_eq!(received(&out), json!({"action": "cancel"}), "{stderr}");

    // A refused form is reported on the terminal; nothing is asked.
    let (out, stderr) = ask("ask_password", json!({}), "", "none");
    assert_eq!(received(&out), json!({"action": "decline"}));
    assert!(stderr.contains("REFUSED"), "{stderr}");
    assert!(stderr.contains("sensitive_field"), "{stderr}");
}

/// The attack (issue 23, item 9): whatever runs `gatehouse` can write to its stdin, so an AI
/// agent with a shell tool can pipe `o` or a whole form into `gatehouse call` and answer for
/// the person. Answers come only from the controlling terminal: without one every question
/// is declined and says why; with one, stdin is never read. `--answers FILE` stays the one
/// explicit way to answer without a terminal.
#[test]
fn a_piped_answer_never_answers_for_the_person() {
    use std::io::Write;
    use std::process::Stdio;
    let mut world = World::new();
    let call = |world: &World, tool: &str, visit: &str| {
        let mut cmd = world.demo_command(visit);
        cmd.args([
            "--json",
            "--demo",
            "--era",
            "2025-11-25",
            "call",
            "demo",
            tool,
        ]);
        cmd
    };
    // Piped into a `gatehouse` with no controlling terminal, as an agent's shell tool runs it.
    let piped = |cmd: &Command, typed: &str| {
        let mut cmd = common::without_terminal(cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        // The command may be done before it would have read it: that is fine too.
        let _ = child.stdin.take().unwrap().write_all(typed.as_bytes());
        let out = child.wait_with_output().unwrap();
        (
            serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let receipt_action = |world: &World, out: &Value| {
        let id = out["elicitations"][0]["receipt_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no receipt id in {out}"))
            .to_string();
        let receipts = world.audit("elicitation_receipt");
        receipts
            .iter()
            .find(|r| r["data"]["receipt_id"] == id.as_str())
            .unwrap_or_else(|| panic!("no receipt {id} in {receipts:?}"))["data"]["action"]
            .clone()
    };

    // "o" piped in, no terminal: the URL is declined, never opened, and the decline audited.
    let (out, stderr) = piped(&call(&world, "connect_account", "submit"), "o\n");
    assert_eq!(text(&out), "not connected: decline", "{out} {stderr}");
    assert_eq!(out["elicitations"][0]["action"], "decline", "{out}");
    assert_eq!(receipt_action(&world, &out), "decline");
    assert!(
        stderr.contains("DECLINED: there is no terminal to ask on")
            && stderr.contains("never from standard input")
            && stderr.contains("--answers FILE"),
        "{stderr}"
    );
    assert!(world.opened().is_empty() && world.hits().is_empty());

    // A whole valid form piped in (name, email, date, Enter for the ten other fields' defaults,
    // then "s" to submit): declined, nothing sent.
    let form = format!("Ada\nada@example.com\n2026-12-24\n{}s\n", "\n".repeat(10));
    let (out, stderr) = piped(&call(&world, "book_table", "none"), &form);
    assert_eq!(received(&out), json!({"action": "decline"}), "{stderr}");
    assert_eq!(receipt_action(&world, &out), "decline");

    // With a terminal, stdin is still not the person: "o" on stdin, "d" typed at the terminal.
    let attacker = world.path("piped-answers.txt");
    std::fs::write(&attacker, "o\no\no\n").unwrap();
    let (_, stdout, stderr) = common::in_a_terminal(
        &call(&world, "connect_account", "submit"),
        "d\n",
        Some(&attacker),
    );
    let out: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    assert_eq!(text(&out), "not connected: decline", "{out} {stderr}");
    assert!(world.opened().is_empty() && world.hits().is_empty());

    // The passing side: "o" typed at the terminal opens it (stdin says "d").
    std::fs::write(&attacker, "d\n").unwrap();
    let (_, stdout, stderr) = common::in_a_terminal(
        &call(&world, "connect_account", "submit"),
        "o\n",
        Some(&attacker),
    );
    let out: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    assert!(text(&out).starts_with("connected"), "{out} {stderr}");
    assert_eq!(out["elicitations"][0]["action"], "accept", "{out}");
    assert_eq!(world.opened_eventually(1).len(), 1);

    // And an answers file, given explicitly, answers without a terminal.
    let answers = world.answers_file(&json!([{"mode": "form", "action": "accept",
        "content": {"name": "Ada", "date": "2026-12-24"}}]));
    let mut cmd = call(&world, "book_table", "none");
    cmd.arg("--answers").arg(&answers);
    let (out, stderr) = piped(&cmd, "d\n");
    assert_eq!(received(&out)["action"], "accept", "{out} {stderr}");
    assert_eq!(receipt_action(&world, &out), "accept");
}
