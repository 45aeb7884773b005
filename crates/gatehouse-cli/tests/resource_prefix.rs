//! Issue 23, item 1: nothing outside an allowed resource prefix is ever sent.
//!
//! The upstream server is the demo server with `--careless-files`: it reads `file://` URIs
//! the careless way (query and fragment kept in the path, percent-decoded until nothing
//! changes, overlong UTF-8, NFKC, Windows look-alikes, `;params` dropped, segments trimmed,
//! `..` resolved) and reads whatever file results, so an attack URI that reached it would
//! return the secret beside the allowed directory. Every URI it is asked for is in its
//! request log. The attacks go through `gatehouse read` and through a raw MCP client of
//! `gatehouse serve --client claude_code`, as the issue reproduced them; each must be refused
//! as `resource_uri_refused` with nothing sent, and ordinary names under the prefix (a
//! sub-directory, an encoded space, an encoded é) must still read.

mod common;

use std::path::{Path, PathBuf};

use common::{Env, demo_bin};
use gatehouse_testkit::raw::RawClient;
use serde_json::{Value, json};

const SECRET: &str = "TOP-SECRET: the careless server must never read this";

/// What an attacker puts after the allowed prefix `file://…/files/docs/`. The secret is at
/// `files/secret.txt` (and a copy one level higher), outside the prefix.
const ATTACKS: &[&str] = &[
    // The issue: the check stopped at "?", and the server ignores it.
    "x?/../../secret.txt",
    "x?/../../../secret.txt",
    "x#/../../secret.txt",
    // Encoded dots and separators, once, twice, three times.
    "%2e%2e/secret.txt",
    "%2E%2E/%2E%2E/secret.txt",
    "%252e%252e/secret.txt",
    "%25252e%25252e/secret.txt",
    "..%2fsecret.txt",
    "..%2F..%2Fsecret.txt",
    "..%5csecret.txt",
    // Overlong UTF-8, fullwidth and dot-leader look-alikes, best-fit slashes.
    "%c0%ae%c0%ae/secret.txt",
    "..%c0%afsecret.txt",
    "..%ef%bc%8fsecret.txt",
    "%ef%bc%8e%ef%bc%8e/secret.txt",
    "\u{ff0e}\u{ff0e}/secret.txt",
    "%e2%80%a5/secret.txt",
    "%e2%80%a4%e2%80%a4/secret.txt",
    "..%e2%88%95secret.txt",
    // Path parameters, backslashes, drives, plain and trimmed dot segments.
    "..;/secret.txt",
    "x/..;/..;/secret.txt",
    "..\\secret.txt",
    "C:/Windows/win.ini",
    "../secret.txt",
    "x/../../secret.txt",
    "x/./../../secret.txt",
    ".../secret.txt",
    "..%20/secret.txt",
    ".+./secret.txt",
    // Controls, empty segments, broken escapes.
    "x%00/../../secret.txt",
    "x%0a/../../secret.txt",
    "/../secret.txt",
    "x//../../secret.txt",
    "x%2",
];

/// Ordinary names under the prefix: (remainder, the file's text).
const ORDINARY: &[(&str, &str)] = &[
    ("readme.txt", "readme: public"),
    ("sub/deeper.txt", "deeper: public"),
    ("my%20file.txt", "spaced: public"),
    ("caf%C3%A9.txt", "cafe: public"),
];

/// Percent-encodes a path the way the fixture lists it.
fn encoded(path: &Path) -> String {
    let mut out = String::new();
    for byte in path.to_str().unwrap().bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

struct Fixture {
    env: Env,
    docs: PathBuf,
    log: PathBuf,
    command: String,
    prefix: String,
}

impl Fixture {
    fn new() -> Fixture {
        // The careless fixture writes its request log beside the files it serves, where the
        // test reads it; the subject is the gate, so the sandbox is off here.
        let env = Env::unconfined();
        let top = env.dir.path().canonicalize().unwrap();
        let files = top.join("files");
        let docs = files.join("docs");
        std::fs::create_dir_all(docs.join("sub")).unwrap();
        std::fs::write(files.join("secret.txt"), SECRET).unwrap();
        std::fs::write(top.join("secret.txt"), SECRET).unwrap();
        std::fs::write(docs.join("readme.txt"), "readme: public").unwrap();
        std::fs::write(docs.join("sub/deeper.txt"), "deeper: public").unwrap();
        std::fs::write(docs.join("my file.txt"), "spaced: public").unwrap();
        std::fs::write(docs.join("caf\u{e9}.txt"), "cafe: public").unwrap();
        let log = top.join("requests.jsonl");
        let command = format!(
            "{} --careless-files {} --request-log {}",
            demo_bin(),
            docs.display(),
            log.display()
        );
        let prefix = format!("file://{}/", encoded(&docs));
        Fixture {
            env,
            docs,
            log,
            command,
            prefix,
        }
    }

    fn uri(&self, rest: &str) -> String {
        format!("{}{rest}", self.prefix)
    }

    /// The fixture's request log: (URI asked for, path it resolved to).
    fn requests(&self) -> Vec<(String, String)> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let entry: Value = serde_json::from_str(line).unwrap();
                (
                    entry["uri"].as_str().unwrap().to_string(),
                    entry["path"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// Nothing outside the prefix was ever asked for: the server's log holds exactly the
    /// ordinary reads, once each, and the remainders in `again`.
    fn assert_only_ordinary_reads_were_sent(&self, again: &[&str]) {
        let requests = self.requests();
        for (uri, path) in &requests {
            assert!(
                Path::new(path).starts_with(&self.docs),
                "the server was asked for {uri:?}, which it resolved to {path:?}, outside {}",
                self.docs.display()
            );
        }
        let mut asked: Vec<&str> = requests.iter().map(|(uri, _)| uri.as_str()).collect();
        asked.sort_unstable();
        let mut expected: Vec<String> = ORDINARY
            .iter()
            .map(|(rest, _)| *rest)
            .chain(again.iter().copied())
            .map(|rest| self.uri(rest))
            .collect();
        expected.sort_unstable();
        assert_eq!(asked, expected);
    }

    fn audit_reads(&self) -> Vec<Value> {
        common::audit_records(&self.env.audit_log())
            .into_iter()
            .filter(|r| r["event"] == "resource_read")
            .collect()
    }
}

/// The secret's text is in no output a user or a client sees.
fn assert_no_secret(text: &str) {
    assert!(!text.contains("TOP-SECRET"), "the secret leaked: {text}");
}

#[test]
fn gatehouse_read_refuses_every_uri_that_could_leave_an_approved_prefix_on_a_careless_server() {
    let fx = Fixture::new();
    let target = ["--stdio", fx.command.as_str()];
    let with = |rest: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = rest[..1].iter().map(|s| s.to_string()).collect();
        all.extend(target.iter().map(|s| s.to_string()));
        all.extend(rest[1..].iter().map(|s| s.to_string()));
        all
    };
    let json = |rest: &[&str]| {
        let owned = with(rest);
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = fx.env.run(&[&["--json"], refs.as_slice()].concat());
        assert_no_secret(&stdout);
        assert_no_secret(&stderr);
        let out: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{rest:?}: {e}: {stdout} {stderr}"));
        (code, out)
    };

    // The user approves the directory (warn posture): every file below it, nothing else.
    let (code, stdout, stderr) = fx.env.run(&[
        "resources",
        "approve",
        "--stdio",
        &fx.command,
        "--prefix",
        &fx.prefix,
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, out) = json(&["resources"]);
    assert_eq!(code, 0, "{out}");
    let listed: Vec<&str> = out["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    for (rest, _) in ORDINARY {
        assert!(listed.contains(&fx.uri(rest).as_str()), "{rest}: {out}");
    }
    assert_eq!(
        out["templates"][0]["uriTemplate"],
        format!("{}{{+path}}", fx.prefix),
        "{out}"
    );

    for rest in ATTACKS {
        let uri = fx.uri(rest);
        let (code, out) = json(&["read", &uri]);
        assert_eq!(code, 1, "{uri:?}: {out}");
        assert_eq!(
            out["error"]["code"], "resource_uri_refused",
            "{uri:?}: {out}"
        );
        assert_eq!(out["uri"], uri.as_str(), "{out}");
    }
    // The refusal names the rule that failed and what to do.
    let (_, out) = json(&["read", &fx.uri("x?/../../secret.txt")]);
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("query or fragment never follows"),
        "{message}"
    );
    assert!(message.contains("allowedResources"), "{message}");
    let (_, out) = json(&["read", &fx.uri("%252e%252e/secret.txt")]);
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains("decodes twice"), "{message}");
    let plain = with(&["read", &fx.uri("x?/../../secret.txt")]);
    let (code, stdout, stderr) = fx
        .env
        .run(&plain.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("resource_uri_refused"), "{stderr}");
    assert_no_secret(&stdout);
    assert_no_secret(&stderr);

    // Through the listed template too: the expansion is what is judged.
    for value in [
        "x?/../../secret.txt",
        "../../secret.txt",
        "x#/../../secret.txt",
    ] {
        let template = format!("{}{{+path}}", fx.prefix);
        let var = format!("path={value}");
        let (code, out) = json(&["read", "--template", &template, "--var", &var]);
        assert_eq!(code, 1, "{value}: {out}");
        assert_eq!(
            out["error"]["code"], "resource_uri_refused",
            "{value}: {out}"
        );
    }

    // Ordinary names under the prefix still read.
    for (rest, text) in ORDINARY {
        let (code, out) = json(&["read", &fx.uri(rest)]);
        assert_eq!(code, 0, "{rest}: {out}");
        assert_eq!(out["contents"][0]["display"]["text"], *text, "{out}");
    }
    let (code, stdout, stderr) = fx.env.run(
        &with(&["read", &fx.uri("sub/deeper.txt")])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!((code, stdout.trim()), (0, "deeper: public"), "{stderr}");
    let (code, out) = json(&[
        "read",
        "--template",
        &format!("{}{{+path}}", fx.prefix),
        "--var",
        "path=sub/deeper.txt",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["contents"][0]["display"]["text"], "deeper: public",
        "{out}"
    );

    // What the server was asked for: the ordinary names (deeper.txt twice more), never an
    // attack.
    fx.assert_only_ordinary_reads_were_sent(&["sub/deeper.txt", "sub/deeper.txt"]);

    // Each refusal is in the audit log, as refused, with the URI asked for.
    let refused: Vec<Value> = fx
        .audit_reads()
        .into_iter()
        .filter(|r| r["data"]["decision"] == "denied")
        .collect();
    // The attacks, the two read again for their messages, the plain one and three templates.
    assert_eq!(refused.len(), ATTACKS.len() + 6, "{refused:?}");
    assert!(
        refused
            .iter()
            .all(|r| r["data"]["reason"] == "resource_uri_refused"),
        "{refused:?}"
    );
    for rest in ATTACKS {
        let uri = fx.uri(rest);
        assert!(
            refused.iter().any(|r| r["data"]["uri"] == uri.as_str()),
            "{uri:?} not audited"
        );
    }
    assert_no_secret(&std::fs::read_to_string(fx.env.audit_log()).unwrap());
}

/// `gatehouse serve` with raw pipes (the test kit's raw client): newline-delimited JSON-RPC,
/// as an AI client speaks it, every line checked for the secret.
struct Client(RawClient);

impl Client {
    /// `gatehouse ARGS` under `env`.
    fn start(env: &Env, args: &[&str]) -> Client {
        Client::spawn(env.cmd(args))
    }

    /// Any stdio MCP server, initialized in the 2025-11-25 era.
    fn spawn(command: std::process::Command) -> Client {
        Client(RawClient::initialized(command, "claude-code"))
    }

    /// Sends a request and returns the response to it; the secret must not be in any line.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.0
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.0.answer_inspecting(id, assert_no_secret)
    }

    /// [`Client::request`] without the secret check, for the control.
    fn request_unchecked(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.0.request(id, method, params)
    }
}

#[test]
fn a_gateway_client_gets_not_found_for_every_uri_that_could_leave_an_approved_prefix() {
    let fx = Fixture::new();
    let (code, stdout, stderr) =
        fx.env
            .run(&["servers", "add", "careless", "--stdio", &fx.command]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, stdout, stderr) =
        fx.env
            .run(&["resources", "approve", "careless", "--prefix", &fx.prefix]);
    assert_eq!(code, 0, "{stdout}{stderr}");

    // Every server side by side (no --server): a URI reaches the careless server because its
    // template's literal start is the approved prefix.
    let mut client = Client::start(&fx.env, &["serve", "--client", "claude_code"]);
    let listed = client.request(2, "resources/templates/list", json!({}));
    assert_eq!(
        listed["result"]["resourceTemplates"][0]["uriTemplate"],
        format!("{}{{+path}}", fx.prefix),
        "{listed}"
    );
    let listed = client.request(3, "resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    for (rest, _) in ORDINARY {
        assert!(uris.contains(&fx.uri(rest).as_str()), "{rest}: {listed}");
    }

    let mut id = 10;
    for rest in ATTACKS {
        id += 1;
        let uri = fx.uri(rest);
        let answer = client.request(id, "resources/read", json!({"uri": uri}));
        let error = &answer["error"];
        assert_eq!(error["code"], json!(-32002), "{uri:?}: {answer}");
        assert_eq!(
            error["data"]["gatehouse"], "resource_uri_refused",
            "{answer}"
        );
        assert_eq!(error["data"]["uri"], uri.as_str(), "{answer}");
        assert!(answer.get("result").is_none(), "{answer}");
    }
    let answer = client.request(
        99,
        "resources/read",
        json!({"uri": fx.uri("x?/../../secret.txt")}),
    );
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("query or fragment never follows"),
        "{message}"
    );

    for (rest, text) in ORDINARY {
        id += 1;
        let uri = fx.uri(rest);
        let answer = client.request(id, "resources/read", json!({"uri": uri}));
        assert_eq!(answer["result"]["contents"][0]["text"], *text, "{answer}");
        assert_eq!(answer["result"]["contents"][0]["uri"], uri.as_str());
    }
    drop(client);

    fx.assert_only_ordinary_reads_were_sent(&[]);
    let reads = fx.audit_reads();
    let refused: Vec<&Value> = reads
        .iter()
        .filter(|r| r["data"]["decision"] == "denied")
        .collect();
    assert_eq!(refused.len(), ATTACKS.len() + 1, "{reads:?}");
    for record in &refused {
        assert_eq!(record["data"]["reason"], "resource_uri_refused", "{record}");
        assert_eq!(
            record["data"]["caller"]["client"], "claude_code",
            "{record}"
        );
    }
    assert_no_secret(&std::fs::read_to_string(fx.env.audit_log()).unwrap());
}

/// The control: straight to the careless fixture, without Gatehouse, the URI and its
/// kin do return the secret. So the tests above would fail if Gatehouse sent any of them.
#[test]
fn without_gatehouse_the_careless_fixture_hands_out_the_secret() {
    let fx = Fixture::new();
    let mut command = std::process::Command::new(demo_bin());
    command
        .arg("--careless-files")
        .arg(&fx.docs)
        .arg("--request-log")
        .arg(&fx.log);
    let mut client = Client::spawn(command);
    let escaping = [
        "x?/../../secret.txt",
        "x#/../../secret.txt",
        "%252e%252e/secret.txt",
        "%c0%ae%c0%ae/secret.txt",
        "%ef%bc%8e%ef%bc%8e/secret.txt",
        "%e2%80%a5/secret.txt",
        "..%e2%88%95secret.txt",
        "..;/secret.txt",
        "..%20/secret.txt",
    ];
    for (n, rest) in escaping.iter().enumerate() {
        let answer = client.request_unchecked(
            100 + n as u64,
            "resources/read",
            json!({"uri": fx.uri(rest)}),
        );
        assert_eq!(
            answer["result"]["contents"][0]["text"], SECRET,
            "{rest}: {answer}"
        );
    }
    drop(client);
    let outside = fx
        .requests()
        .into_iter()
        .filter(|(_, path)| !Path::new(path).starts_with(&fx.docs))
        .count();
    assert_eq!(outside, escaping.len());
}
