//! Resources and prompts through the real binary: `resources`, `read`, `prompts`, `prompt`,
//! `complete` and `subscribe` against the demo server (admitted under the DEMO-ONLY trust
//! root, deny-by-default) in both protocol eras, its `--hostile-content` fixtures in the warn
//! posture, and `@modelcontextprotocol/server-everything` from npm. Every refusal is checked
//! to have sent nothing and to be in the audit log.

mod common;

use std::path::{Path, PathBuf};

use common::{Env, demo_bin, node, repo};
use gatehouse_attest::gate::GateReason;
use gatehouse_host::audit_event::gate::{
    PromptDecision, PromptGet, ResourceAction, ResourceDecision, ResourceRead, ResourceTarget,
};
use gatehouse_testkit::audit::payloads_in;
use serde_json::{Value, json};

const ERAS: [&str; 2] = ["2025-11-25", "2026-07-28"];

const WELCOME: &str = "demo://docs/welcome.txt";
const GUIDE: &str = "demo://docs/guide.md";
const LOGO: &str = "demo://images/logo.png";
const SAMPLE: &str = "demo://data/sample.bin";
const COUNTER: &str = "demo://counter";
const DIARY: &str = "demo://private/diary";
const NOTES: &str = "demo://notes/{name}";
const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// `--demo --posture deny-by-default --era ERA` followed by `rest`.
fn demo<'a>(era: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--demo", "--posture", "deny-by-default", "--era", era];
    all.extend_from_slice(rest);
    all
}

/// With the flag, adds `--traffic-log FILE` (under the test's directory) in front of `args`.
fn traced<'a>(traffic: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--traffic-log", traffic];
    all.extend_from_slice(args);
    all
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn field(items: &Value, key: &str) -> Vec<String> {
    items
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {items}"))
        .iter()
        .map(|item| item[key].as_str().unwrap().to_string())
        .collect()
}

fn audit(env: &Env, kind: &str) -> Vec<Value> {
    let (code, out) = env.json(&["audit", "show", "--type", kind]);
    assert_eq!(code, 0, "{out}");
    out["records"].as_array().unwrap().clone()
}

/// The URI a `resource_read` record refused; `None` when it allowed, or refused a template.
fn denied_uri(read: &ResourceRead) -> Option<&str> {
    match &read.decision {
        ResourceDecision::Denied {
            target: ResourceTarget::Uri(uri),
            ..
        } => Some(uri),
        ResourceDecision::Denied { .. } | ResourceDecision::Allowed { .. } => None,
    }
}

fn write_answers(env: &Env, name: &str, answers: &Value) -> String {
    let path = env.dir.path().join(name);
    std::fs::write(&path, answers.to_string()).unwrap();
    path.display().to_string()
}

/// `rest` with the `target` arguments after its command words (`resources approve`,
/// `prompts pin`, or the one command word).
fn splice(rest: &[&str], target: &[&str]) -> Vec<String> {
    let words = if rest.len() > 1 && ["approve", "pin"].contains(&rest[1]) {
        2
    } else {
        1
    };
    rest[..words]
        .iter()
        .chain(target)
        .chain(&rest[words..])
        .map(|s| s.to_string())
        .collect()
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The methods of the requests in a traffic log (`--traffic-log`).
fn methods_sent(traffic: &Path) -> Vec<String> {
    std::fs::read_to_string(traffic)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let entry: Value = serde_json::from_str(line).unwrap();
            let message = match &entry["message"] {
                Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
                other => other.clone(),
            };
            (entry["direction"] == "out")
                .then(|| message["method"].as_str().map(str::to_string))
                .flatten()
        })
        .collect()
}

#[test]
fn the_demo_lists_what_its_bundle_allows_in_both_eras() {
    let env = Env::new();
    for era in ERAS {
        let (code, out) = env.json(&demo(era, &["resources", "demo"]));
        assert_eq!(code, 0, "{era}: {out}");
        assert_eq!(out["server"], "demo");
        assert_eq!(out["admission"]["status"], "admitted", "{out}");
        assert_eq!(
            field(&out["resources"], "uri"),
            [WELCOME, GUIDE, LOGO, SAMPLE, COUNTER, DIARY],
            "{era}: {out}"
        );
        assert_eq!(out["resources"][0]["mimeType"], "text/plain");
        assert_eq!(out["resources"][2]["mimeType"], "image/png");
        assert_eq!(field(&out["templates"], "uriTemplate"), [NOTES], "{out}");
        assert_eq!(out["hidden"], json!([]), "{out}");

        let (code, stdout, stderr) = env.run(&demo(era, &["resources", "demo"]));
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("demo://docs/welcome.txt"), "{stdout}");
        assert!(stdout.contains("Welcome"), "{stdout}");
        assert!(stdout.contains("image/png"), "{stdout}");
        assert!(stdout.contains("templates"), "{stdout}");
        assert!(stdout.contains(NOTES), "{stdout}");

        let (code, out) = env.json(&demo(era, &["prompts", "demo"]));
        assert_eq!(code, 0, "{era}: {out}");
        assert_eq!(out["admission"]["status"], "admitted", "{out}");
        assert_eq!(
            field(&out["prompts"], "name"),
            ["summarize", "review_code", "describe_logo", "plan_trip"],
            "{era}: {out}"
        );
        let summarize = &out["prompts"][0];
        assert_eq!(summarize["arguments"][0]["name"], "topic");
        assert_eq!(summarize["arguments"][0]["required"], true);
        assert_eq!(summarize["arguments"][1]["name"], "length");
        assert_eq!(out["hidden"], json!([]), "{out}");
        assert_eq!(out["blocked"], json!([]), "{out}");

        let (code, stdout, stderr) = env.run(&demo(era, &["prompts", "demo"]));
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("summarize"), "{stdout}");
        assert!(stdout.contains("topic (required)"), "{stdout}");
        assert!(stdout.contains("plan_trip"), "{stdout}");
    }
    // Under deny-by-default the user cannot widen either list.
    let (code, out) = env.json(&demo(
        "auto",
        &["resources", "approve", "demo", "--uri", "demo://other/x"],
    ));
    assert_eq!(
        (code, out["error"]["code"].as_str()),
        (1, Some("posture_forbids")),
        "{out}"
    );
    let (code, out) = env.json(&demo("auto", &["prompts", "pin", "demo"]));
    assert_eq!(
        (code, out["error"]["code"].as_str()),
        (1, Some("posture_forbids")),
        "{out}"
    );
}

#[test]
fn reads_text_images_bytes_and_notes_in_both_eras() {
    let env = Env::new();
    for era in ERAS {
        // Text, printed as text.
        let (code, stdout, stderr) = env.run(&demo(era, &["read", "demo", WELCOME]));
        assert_eq!(code, 0, "{era}: {stderr}");
        assert!(
            stdout.starts_with("Welcome to the Gatehouse demo server!"),
            "{stdout}"
        );
        let (code, out) = env.json(&demo(era, &["read", "demo", WELCOME]));
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["server"], "demo");
        assert_eq!(out["uri"], WELCOME);
        assert_eq!(out["rounds"], 1);
        assert_eq!(out["contents"][0]["display"]["kind"], "text");
        assert_eq!(out["contents"][0]["mime"], "text/plain");
        assert_eq!(out["elicitations"], json!([]));

        // Markdown with markup: the markup is text.
        let (code, stdout, stderr) = env.run(&demo(era, &["read", "demo", GUIDE]));
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("the <b>bold</b> tag"), "{stdout}");
        assert!(
            stdout.contains("[Gatehouse](https://example.com)"),
            "{stdout}"
        );

        // The PNG is described, never dumped.
        let (code, stdout, stderr) = env.run(&demo(era, &["read", "demo", LOGO]));
        assert_eq!(code, 0, "{stderr}");
        let line = stdout.trim();
        assert!(
            line.starts_with("demo://images/logo.png: image/png, ")
                && line.ends_with(" bytes (use --out FILE to save)"),
            "{stdout}"
        );
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        assert!(
            !stdout.contains("PNG") && !stdout.contains("IHDR"),
            "{stdout}"
        );
        let (code, out) = env.json(&demo(era, &["read", "demo", LOGO]));
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["contents"][0]["display"]["kind"], "image");
        assert_eq!(out["contents"][0]["display"]["mime"], "image/png");

        // --out writes the decoded bytes; an existing file is kept unless --force.
        let file = env.dir.path().join(format!("logo-{era}.png"));
        let (code, stdout, stderr) = env.run(&demo(
            era,
            &["read", "demo", LOGO, "--out", path_str(&file)],
        ));
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("saved to"), "{stdout}");
        let bytes = std::fs::read(&file).unwrap();
        assert!(bytes.starts_with(PNG_SIGNATURE), "{bytes:?}");
        let size = bytes.len().to_string();
        assert!(
            stdout.contains(&format!("image/png, {size} bytes")),
            "{stdout}"
        );
        std::fs::write(&file, b"mine").unwrap();
        let (code, out) = env.json(&demo(
            era,
            &["read", "demo", LOGO, "--out", path_str(&file)],
        ));
        assert_eq!(code, 2, "{out}");
        assert!(
            out["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--force"),
            "{out}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), b"mine", "kept");
        let (code, out) = env.json(&demo(
            era,
            &["read", "demo", LOGO, "--out", path_str(&file), "--force"],
        ));
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["saved"]["bytes"], bytes.len());
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "replaced");
        let leftovers: Vec<_> = std::fs::read_dir(env.dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");

        // Bytes: described, and saved exactly.
        let (code, stdout, stderr) = env.run(&demo(era, &["read", "demo", SAMPLE]));
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            stdout.trim(),
            "demo://data/sample.bin: application/octet-stream, 64 bytes (use --out FILE to save)"
        );
        let file = env.dir.path().join(format!("sample-{era}.bin"));
        let (code, out) = env.json(&demo(
            era,
            &["read", "demo", SAMPLE, "--out", path_str(&file)],
        ));
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["contents"][0]["display"]["kind"], "binary");
        assert_eq!(out["contents"][0]["display"]["size"], 64);
        assert_eq!(std::fs::read(&file).unwrap(), (0..64).collect::<Vec<u8>>());

        // A note through the listed template.
        let (code, out) = env.json(&demo(
            era,
            &["read", "demo", "--template", NOTES, "--var", "name=ideas"],
        ));
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["uri"], "demo://notes/ideas");
        let text = out["contents"][0]["display"]["text"].as_str().unwrap();
        assert!(text.starts_with("Ideas: a gate"), "{out}");
        let (code, stdout, stderr) = env.run(&demo(
            era,
            &[
                "read",
                "demo",
                "--template",
                NOTES,
                "--var",
                "name=groceries",
            ],
        ));
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(stdout.trim(), "Groceries: bread, milk, apples and coffee.");
    }

    // Bad input: usage errors naming what was wrong, nothing started.
    for (args, expected) in [
        (
            vec!["read", "demo", "--template", NOTES, "--var", "name"],
            "--var",
        ),
        (
            vec!["read", "demo", "--template", NOTES, "--var", "=ideas"],
            "--var",
        ),
        (vec!["read", "demo"], "SERVER URI"),
        (
            vec!["read", "demo", WELCOME, "--template", NOTES],
            "--template",
        ),
    ] {
        let (code, out) = env.json(&demo("auto", &args));
        assert_eq!(code, 2, "{args:?}: {out}");
        assert_eq!(out["error"]["code"], "usage", "{args:?}: {out}");
        assert!(
            out["error"]["message"].as_str().unwrap().contains(expected),
            "{args:?}: {out}"
        );
    }
    let (code, _, stderr) = env.run(&demo("auto", &["read", "demo", WELCOME, "--var", "a=b"]));
    assert_eq!(code, 2, "clap refuses --var without --template: {stderr}");
    assert!(stderr.contains("--template"), "{stderr}");
}

#[test]
fn prompts_come_back_as_messages_and_look_alike_names_are_refused_before_anything_is_sent() {
    let env = Env::new();
    for era in ERAS {
        let (code, out) = env.json(&demo(
            era,
            &[
                "prompt",
                "demo",
                "summarize",
                "--args",
                r#"{"topic":"mcp"}"#,
            ],
        ));
        assert_eq!(code, 0, "{era}: {out}");
        assert_eq!(out["prompt"], "summarize");
        assert_eq!(out["rounds"], 1);
        assert_eq!(out["description"], "A short summary of mcp");
        assert_eq!(out["messages"][0]["role"], "user");
        assert_eq!(
            out["messages"][0]["display"]["text"],
            "Summarize mcp in a short summary."
        );
        let (code, stdout, stderr) = env.run(&demo(
            era,
            &[
                "prompt",
                "demo",
                "summarize",
                "--args",
                r#"{"topic":"mcp","length":"long"}"#,
            ],
        ));
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(stdout.trim(), "user: Summarize mcp in a long summary.");

        // An image message is described; an embedded resource names its URI.
        let (code, stdout, stderr) = env.run(&demo(era, &["prompt", "demo", "describe_logo"]));
        assert_eq!(code, 0, "{stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines[0], "user: Describe this logo in one sentence.");
        assert!(
            lines[1].starts_with("user: [image/png, ") && lines[1].ends_with(" bytes, not shown]"),
            "{stdout}"
        );
        assert_eq!(lines.len(), 2, "{stdout}");
        let (code, stdout, stderr) = env.run(&demo(
            era,
            &[
                "prompt",
                "demo",
                "review_code",
                "--args",
                r#"{"language":"rust","code":"fn main() {}"}"#,
            ],
        ));
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stdout.starts_with("user: Review this rust code:\n\nfn main() {}\n"),
            "{stdout}"
        );
        assert!(
            stdout.contains("user: [resource demo://docs/guide.md] # Guide to the demo server"),
            "{stdout}"
        );

        // Look-alikes of an allowed name: refused by the gate, nothing sent, audited.
        let traffic = env.dir.path().join(format!("prompt-traffic-{era}.jsonl"));
        for name in ["Summarize", "summ\u{0430}rize"] {
            let _ = std::fs::remove_file(&traffic);
            let (code, out) = env.json(&traced(
                path_str(&traffic),
                &demo(
                    era,
                    &["prompt", "demo", name, "--args", r#"{"topic":"mcp"}"#],
                ),
            ));
            assert_eq!(code, 1, "{name:?}: {out}");
            assert_eq!(out["error"]["code"], "prompt_not_admitted", "{out}");
            assert_eq!(out["prompt"], name);
            assert!(
                out["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("nothing was sent"),
                "{out}"
            );
            let sent = methods_sent(&traffic);
            assert!(sent.contains(&"prompts/list".to_string()), "{sent:?}");
            assert!(
                !sent.iter().any(|m| m == "prompts/get"),
                "{name:?}: {sent:?}"
            );
        }
    }
    let gets: Vec<PromptGet> = payloads_in(&audit(&env, "prompt_get"));
    let denied: Vec<(&str, GateReason)> = gets
        .iter()
        .filter_map(|g| match &g.decision {
            PromptDecision::Denied { prompt, reason, .. } => Some((prompt.as_str(), *reason)),
            PromptDecision::Allowed { .. } => None,
        })
        .collect();
    assert_eq!(denied.len(), 4, "{denied:?}");
    assert!(
        denied
            .iter()
            .all(|(_, reason)| *reason == GateReason::PromptNotAdmitted)
    );
    assert!(
        denied
            .iter()
            .any(|(prompt, _)| *prompt == "summ\u{0430}rize")
    );
    assert!(gets.iter().any(|g| matches!(
        &g.decision,
        PromptDecision::Allowed { prompt, .. } if prompt == "summarize"
    )));

    // Bad --args: usage errors.
    for (raw, expected) in [("[1]", "an array"), ("{", "not valid JSON")] {
        let (code, out) = env.json(&demo(
            "auto",
            &["prompt", "demo", "summarize", "--args", raw],
        ));
        assert_eq!(code, 2, "{out}");
        assert_eq!(out["error"]["code"], "usage");
        let message = out["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("--args") && message.contains(expected),
            "{out}"
        );
    }
}

#[test]
fn uris_outside_the_allow_list_are_refused_sent_nowhere_and_audited() {
    let env = Env::new();
    for era in ERAS {
        let traffic = env.dir.path().join(format!("read-traffic-{era}.jsonl"));
        for (uri, reason) in [
            ("demo://notes/../secrets", "resource_uri_refused"),
            ("demo://other/x", "resource_not_admitted"),
            (
                "demo://docs/welcome.txt/../../private/diary",
                "resource_not_admitted",
            ),
        ] {
            let _ = std::fs::remove_file(&traffic);
            let (code, out) = env.json(&traced(
                path_str(&traffic),
                &demo(era, &["read", "demo", uri]),
            ));
            assert_eq!(code, 1, "{uri}: {out}");
            assert_eq!(out["error"]["code"], reason, "{uri}: {out}");
            assert_eq!(out["uri"], uri);
            let sent = methods_sent(&traffic);
            assert!(!sent.is_empty(), "the traffic log was written");
            assert!(
                !sent.iter().any(|m| m == "resources/read"),
                "{uri}: {sent:?}"
            );
            let (code, _, stderr) = env.run(&demo(era, &["read", "demo", uri]));
            assert_eq!(code, 1);
            assert!(stderr.contains(reason), "{stderr}");
        }
    }
    let records: Vec<ResourceRead> = payloads_in(&audit(&env, "resource_read"));
    let denied: Vec<(ResourceAction, &ResourceTarget, GateReason)> = records
        .iter()
        .filter_map(|r| match &r.decision {
            ResourceDecision::Denied {
                action,
                target,
                reason,
                ..
            } => Some((*action, target, *reason)),
            ResourceDecision::Allowed { .. } => None,
        })
        .collect();
    assert_eq!(denied.len(), 12, "{records:?}");
    let secrets = ResourceTarget::Uri("demo://notes/../secrets".into());
    assert!(denied.iter().any(|(action, target, reason)| {
        **target == secrets
            && *reason == GateReason::ResourceUriRefused
            && *action == ResourceAction::Read
    }));
    let other = ResourceTarget::Uri("demo://other/x".into());
    assert!(denied.iter().any(|(_, target, reason)| {
        **target == other && *reason == GateReason::ResourceNotAdmitted
    }));
}

#[test]
fn the_diary_and_plan_trip_ask_and_the_answers_file_answers_in_both_eras() {
    let env = Env::new();
    let diary = write_answers(
        &env,
        "diary.json",
        &json!([{"mode": "form", "action": "accept", "content": {"magic_word": "open"}}]),
    );
    let trip = write_answers(
        &env,
        "trip.json",
        &json!([{"mode": "form", "action": "accept",
                 "content": {"traveller": "Ada Lovelace", "nights": 4}}]),
    );
    let decline = write_answers(
        &env,
        "decline.json",
        &json!([{"mode": "form", "action": "decline"}]),
    );
    for era in ERAS {
        let (code, out) = env.json(&demo(era, &["read", "demo", DIARY, "--answers", &diary]));
        assert_eq!(code, 0, "{era}: {out}");
        assert_eq!(
            out["contents"][0]["display"]["text"], "Dear diary: the demo works.",
            "{era}: {out}"
        );
        let elicitations = out["elicitations"].as_array().unwrap();
        assert_eq!(elicitations.len(), 1, "{out}");
        assert_eq!(elicitations[0]["mode"], "form");
        assert_eq!(elicitations[0]["action"], "accept", "{out}");
        let rounds = out["rounds"].as_u64().unwrap();
        match era {
            // The answer came back on a retry of the read.
            "2026-07-28" => assert_eq!(rounds, 2, "{out}"),
            _ => assert_eq!(rounds, 1, "{out}"),
        }
        let (code, stdout, stderr) =
            env.run(&demo(era, &["read", "demo", DIARY, "--answers", &diary]));
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(stdout.trim(), "Dear diary: the demo works.");
        assert!(stderr.contains("elicitation"), "{stderr}");

        let (code, out) = env.json(&demo(era, &["read", "demo", DIARY, "--answers", &decline]));
        assert_eq!(code, 0, "{out}");
        assert_eq!(
            out["contents"][0]["display"]["text"],
            "The diary stays closed."
        );
        assert_eq!(out["elicitations"][0]["action"], "decline", "{out}");

        let (code, out) = env.json(&demo(
            era,
            &[
                "prompt",
                "demo",
                "plan_trip",
                "--args",
                r#"{"destination":"Lisbon"}"#,
                "--answers",
                &trip,
            ],
        ));
        assert_eq!(code, 0, "{era}: {out}");
        assert_eq!(
            out["messages"][0]["display"]["text"],
            "Plan a trip to Lisbon for Ada Lovelace, 4 nights.",
            "{era}: {out}"
        );
        assert_eq!(out["description"], "Plan a trip to Lisbon");
        assert_eq!(out["elicitations"][0]["action"], "accept", "{out}");
        let (code, stdout, stderr) = env.run(&demo(
            era,
            &["prompt", "demo", "plan_trip", "--answers", &trip],
        ));
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            stdout.trim(),
            "user: Plan a trip to somewhere for Ada Lovelace, 4 nights."
        );
    }
    // The 2025-11-25 demo name too.
    let (code, out) = env.json(&demo(
        "auto",
        &["read", "demo-2025", DIARY, "--answers", &diary],
    ));
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["rounds"], 1);
    assert_eq!(
        out["contents"][0]["display"]["text"],
        "Dear diary: the demo works."
    );
    let receipts = audit(&env, "elicitation_receipt");
    assert!(receipts.len() >= 10, "{receipts:?}");
    let log = std::fs::read_to_string(env.audit_log()).unwrap();
    assert!(!log.contains("Ada Lovelace"), "content is never stored");
}

#[test]
fn completions_for_prompt_arguments_and_template_variables() {
    let env = Env::new();
    for era in ERAS {
        let (code, out) = env.json(&demo(
            era,
            &[
                "complete",
                "demo",
                "--prompt",
                "summarize",
                "--arg",
                "topic",
                "--value",
                "m",
            ],
        ));
        assert_eq!(code, 0, "{era}: {out}");
        assert_eq!(strings(&out["values"]), ["mcp"], "{out}");
        assert!(out.get("total").is_some() && out.get("hasMore").is_some());
        let (code, stdout, stderr) = env.run(&demo(
            era,
            &[
                "complete",
                "demo",
                "--prompt",
                "summarize",
                "--arg",
                "topic",
            ],
        ));
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            stdout.lines().collect::<Vec<_>>(),
            ["gatehouse", "mcp", "oauth", "resources", "prompts"]
        );
        let (code, out) = env.json(&demo(
            era,
            &[
                "complete",
                "demo",
                "--prompt",
                "summarize",
                "--arg",
                "length",
                "--value",
                "",
                "--context",
                r#"{"topic":"mcp"}"#,
            ],
        ));
        assert_eq!(code, 0, "{out}");
        assert_eq!(strings(&out["values"]), ["short", "long"]);

        let (code, out) = env.json(&demo(
            era,
            &[
                "complete",
                "demo",
                "--template",
                NOTES,
                "--arg",
                "name",
                "--value",
                "i",
            ],
        ));
        assert_eq!(code, 0, "{out}");
        assert_eq!(strings(&out["values"]), ["ideas"]);
        let (code, stdout, stderr) = env.run(&demo(
            era,
            &["complete", "demo", "--template", NOTES, "--arg", "name"],
        ));
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            stdout.lines().collect::<Vec<_>>(),
            ["groceries", "ideas", "todo"]
        );

        // A look-alike prompt gets no completion request.
        let (code, out) = env.json(&demo(
            era,
            &[
                "complete",
                "demo",
                "--prompt",
                "Summarize",
                "--arg",
                "topic",
            ],
        ));
        assert_eq!(code, 1, "{out}");
        assert_eq!(out["error"]["code"], "prompt_not_admitted");
    }
    let (code, _, stderr) = env.run(&demo("auto", &["complete", "demo", "--arg", "topic"]));
    assert_eq!(code, 2, "neither --prompt nor --template: {stderr}");
    let (code, out) = env.json(&demo(
        "auto",
        &[
            "complete",
            "demo",
            "--prompt",
            "summarize",
            "--arg",
            "length",
            "--context",
            r#"{"topic": 1}"#,
        ],
    ));
    assert_eq!(code, 2, "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--context"),
        "{out}"
    );
}

#[test]
fn subscribing_to_the_counter_gets_its_updates_in_both_eras() {
    let env = Env::new();
    for era in ERAS {
        let (code, out) = env.json(&demo(
            era,
            &["subscribe", "demo", COUNTER, "--count", "2", "--wait", "20"],
        ));
        assert_eq!(code, 0, "{era}: {out}");
        assert_eq!(
            out,
            json!({"server": "demo", "uri": COUNTER, "updates": 2}),
            "{era}"
        );
        let (code, stdout, stderr) =
            env.run(&demo(era, &["subscribe", "demo", COUNTER, "--wait", "20"]));
        assert_eq!(code, 0, "{era}: {stderr}");
        assert_eq!(stdout.trim(), "updated demo://counter (1/1)");

        // A resource that never changes: no update within the wait, exit 2.
        let (code, out) = env.json(&demo(era, &["subscribe", "demo", WELCOME, "--wait", "1.5"]));
        assert_eq!(code, 2, "{era}: {out}");
        assert_eq!(out["updates"], 0);
        assert_eq!(out["error"]["code"], "timeout", "{out}");
        assert!(
            out["error"]["message"].as_str().unwrap().contains("--wait"),
            "{out}"
        );
        // Outside the allow-list: refused before anything is sent.
        let (code, out) = env.json(&demo(
            era,
            &["subscribe", "demo", "demo://other/x", "--wait", "5"],
        ));
        assert_eq!(code, 1, "{out}");
        assert_eq!(out["error"]["code"], "resource_not_admitted");
    }
    let subscribes: Vec<ResourceRead> = payloads_in::<ResourceRead>(&audit(&env, "resource_read"))
        .into_iter()
        .filter(|r| match &r.decision {
            ResourceDecision::Allowed { action, .. } | ResourceDecision::Denied { action, .. } => {
                *action == ResourceAction::Subscribe
            }
        })
        .collect();
    assert!(
        subscribes
            .iter()
            .any(|r| denied_uri(r) == Some("demo://other/x")),
        "{subscribes:?}"
    );
}

/// Hostile content in the warn posture, after the user approved it.
#[test]
fn hostile_content_is_refused_or_shown_as_data_in_both_eras() {
    let env = Env::new();
    for era in ERAS {
        let command = format!("{} --hostile-content --era {era}", demo_bin());
        let target = ["--stdio", command.as_str()];
        let with = |rest: &[&str]| splice(rest, &target);
        let json = |rest: &[&str]| {
            let owned = with(rest);
            let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
            env.json(&refs)
        };
        let run = |rest: &[&str]| {
            let owned = with(rest);
            let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
            env.run(&refs)
        };

        // Unattested: listed, every one hidden until approved.
        let (code, out) = json(&["resources"]);
        assert_eq!(code, 0, "{era}: {out}");
        assert_eq!(out["admission"]["status"], "unattested", "{out}");
        assert_eq!(out["resources"], json!([]), "{out}");
        let hidden = field(&out["hidden"], "reason");
        assert!(hidden.iter().all(|r| r == "resource_not_admitted"), "{out}");
        assert!(
            out["hidden"]
                .as_array()
                .unwrap()
                .iter()
                .any(|h| h["uriTemplate"] == "{+target}"),
            "{out}"
        );
        let (code, out) = json(&["read", "demo://hostile/markup.html"]);
        assert_eq!(
            (code, out["error"]["code"].as_str()),
            (1, Some("resource_not_admitted")),
            "{out}"
        );

        let (code, out) = json(&[
            "resources",
            "approve",
            "--uri",
            "demo://hostile/huge.txt",
            "--uri",
            "demo://hostile/not-base64.bin",
            "--uri",
            "demo://hostile/lying.png",
            "--uri",
            "demo://hostile/markup.html",
        ]);
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["approved"].as_array().unwrap().len(), 4);
        let (code, out) = json(&["prompts", "pin", "--prompt", "markup_prompt"]);
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["approved"][0]["prompt"], "markup_prompt");
        assert!(
            out["approved"][0]["pin"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
        let (code, out) = json(&["resources"]);
        assert_eq!(code, 0, "{out}");
        assert_eq!(
            field(&out["resources"], "uri"),
            [
                "demo://hostile/huge.txt",
                "demo://hostile/not-base64.bin",
                "demo://hostile/lying.png",
                "demo://hostile/markup.html"
            ],
            "{out}"
        );
        let (code, out) = json(&["prompts"]);
        assert_eq!(code, 0, "{out}");
        assert_eq!(field(&out["prompts"], "name"), ["markup_prompt"], "{out}");

        let (code, out) = json(&["read", "demo://hostile/huge.txt"]);
        assert_eq!(
            (code, out["error"]["code"].as_str()),
            (1, Some("content_too_large")),
            "{era}: {out}"
        );
        let (code, out) = json(&["read", "demo://hostile/not-base64.bin"]);
        assert_eq!(
            (code, out["error"]["code"].as_str()),
            (1, Some("content_not_base64")),
            "{era}: {out}"
        );

        // Claims image/png, holds HTML: read, but offered as binary with why.
        let (code, out) = json(&["read", "demo://hostile/lying.png"]);
        assert_eq!(code, 0, "{out}");
        let display = &out["contents"][0]["display"];
        assert_eq!(display["kind"], "binary", "{out}");
        assert_eq!(display["size"], 38);
        assert!(
            display["note"]
                .as_str()
                .unwrap()
                .contains("claims image/png"),
            "{out}"
        );
        let (code, stdout, stderr) = run(&["read", "demo://hostile/lying.png"]);
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stdout.starts_with("demo://hostile/lying.png: binary data, 38 bytes; claims image/png"),
            "{stdout}"
        );
        assert!(!stdout.contains("<script>"), "{stdout}");

        // Markup is printed as the literal text it is.
        let (code, stdout, stderr) = run(&["read", "demo://hostile/markup.html"]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            stdout.trim_end(),
            r#"<img src=x onerror=alert(1)><a href="https://evil.example">click</a>"#
        );

        let (code, out) = json(&["prompt", "markup_prompt"]);
        assert_eq!(
            (code, out["error"]["code"].as_str()),
            (1, Some("content_too_large")),
            "{era}: {out}"
        );

        // A template that expands to anything: the expansion is judged, not the template.
        let (code, out) = json(&[
            "read",
            "--template",
            "{+target}",
            "--var",
            "target=https://evil.example/x",
        ]);
        assert_eq!(
            (code, out["error"]["code"].as_str()),
            (1, Some("resource_not_admitted")),
            "{era}: {out}"
        );
    }
    let denied: Vec<ResourceRead> = payloads_in::<ResourceRead>(&audit(&env, "resource_read"))
        .into_iter()
        .filter(|r| denied_uri(r) == Some("https://evil.example/x"))
        .collect();
    assert_eq!(denied.len(), 2, "{denied:?}");
}

fn everything() -> PathBuf {
    repo().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

#[test]
fn server_everything_resources_prompts_and_completions() {
    let env = Env::new();
    let command = format!("{} {} stdio", node().display(), everything().display());
    let with = |rest: &[&str]| splice(rest, &["--stdio", &command]);
    let json = |rest: &[&str]| {
        let owned = with(rest);
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        env.json(&refs)
    };
    let run = |rest: &[&str]| {
        let owned = with(rest);
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        env.run(&refs)
    };
    const FEATURES: &str = "demo://resource/static/document/features.md";
    const BLOB_TEMPLATE: &str = "demo://resource/dynamic/blob/{resourceId}";
    const TEXT_TEMPLATE: &str = "demo://resource/dynamic/text/{resourceId}";

    // Unattested (warn): everything listed, nothing usable yet.
    let (code, out) = json(&["resources"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["resources"], json!([]), "{out}");
    let hidden = out["hidden"].as_array().unwrap();
    assert!(hidden.iter().any(|h| h["uri"] == FEATURES), "{out}");
    assert!(
        hidden.iter().any(|h| h["uriTemplate"] == BLOB_TEMPLATE),
        "{out}"
    );
    assert!(
        hidden.iter().any(|h| h["uriTemplate"] == TEXT_TEMPLATE),
        "{out}"
    );
    let (code, out) = json(&["prompts"]);
    assert_eq!(code, 0, "{out}");
    let hidden = field(&out["hidden"], "name");
    for name in [
        "simple-prompt",
        "args-prompt",
        "completable-prompt",
        "resource-prompt",
    ] {
        assert!(hidden.contains(&name.to_string()), "{name}: {out}");
    }
    let (code, stdout, _) = run(&["prompts"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("not admitted"), "{stdout}");

    // Approved by the user, then listed as allowed and readable.
    let (code, out) = json(&[
        "resources",
        "approve",
        "--uri",
        FEATURES,
        "--uri",
        "demo://resource/dynamic/blob/1",
    ]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = json(&[
        "prompts",
        "pin",
        "--prompt",
        "args-prompt",
        "--prompt",
        "completable-prompt",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        field(&out["approved"], "prompt"),
        ["args-prompt", "completable-prompt"]
    );
    let (code, out) = json(&["resources"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(field(&out["resources"], "uri"), [FEATURES], "{out}");
    let (code, out) = json(&["prompts"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        field(&out["prompts"], "name"),
        ["args-prompt", "completable-prompt"],
        "{out}"
    );

    let (code, out) = json(&["read", FEATURES]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["contents"][0]["display"]["kind"], "text");
    assert_eq!(out["contents"][0]["mime"], "text/markdown");
    let (code, stdout, stderr) = run(&["read", FEATURES]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.trim().is_empty());

    // A blob, through its template: described, and saved decoded.
    let (code, out) = json(&["read", "--template", BLOB_TEMPLATE, "--var", "resourceId=1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["uri"], "demo://resource/dynamic/blob/1");
    assert_eq!(out["contents"][0]["display"]["kind"], "binary", "{out}");
    let file = env.dir.path().join("blob.txt");
    let (code, stdout, stderr) = run(&[
        "read",
        "--template",
        BLOB_TEMPLATE,
        "--var",
        "resourceId=1",
        "--out",
        path_str(&file),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("saved to"), "{stdout}");
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(
        saved.starts_with("Resource 1: This is a base64 blob"),
        "{saved}"
    );
    // Not approved: another id of the same template.
    let (code, out) = json(&["read", "--template", BLOB_TEMPLATE, "--var", "resourceId=2"]);
    assert_eq!(
        (code, out["error"]["code"].as_str()),
        (1, Some("resource_not_admitted")),
        "{out}"
    );

    let (code, out) = json(&["prompt", "args-prompt", "--args", r#"{"city":"Paris"}"#]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["messages"][0]["display"]["text"],
        "What's weather in Paris?"
    );
    let (code, stdout, stderr) = run(&["prompt", "args-prompt", "--args", r#"{"city":"Paris"}"#]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "user: What's weather in Paris?");
    let (code, out) = json(&["prompt", "simple-prompt"]);
    assert_eq!(
        (code, out["error"]["code"].as_str()),
        (1, Some("prompt_not_admitted")),
        "{out}"
    );

    let (code, out) = json(&[
        "complete",
        "--prompt",
        "completable-prompt",
        "--arg",
        "department",
        "--value",
        "E",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(strings(&out["values"]), ["Engineering"], "{out}");
    let (code, stdout, stderr) = run(&[
        "complete",
        "--prompt",
        "completable-prompt",
        "--arg",
        "name",
        "--context",
        r#"{"department":"Sales"}"#,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["David", "Eve", "Frank"]
    );
}
