//! The host killed with SIGKILL during a flood of tool calls, in each durability mode, and a
//! simulated power cut in the batched mode: every call a client saw answered has its audit
//! record, the chain verifies, and a cut window is reported as a short tail, not tampering.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Env, audit_records, repo};
use serde_json::{Value, json};

/// The shipped policy with its `[audit]` settings replaced.
fn policy(env: &Env, durability: &str, flush_ms: u64, flush_records: u64) -> PathBuf {
    let shipped = std::fs::read_to_string(repo().join("policies/default.toml")).unwrap();
    let base = &shipped[..shipped
        .find("[audit]")
        .expect("the shipped policy has [audit]")];
    let text = format!(
        "{base}[audit]\ndurability = \"{durability}\"\nflush_ms = {flush_ms}\nflush_records = {flush_records}\n"
    );
    let path = env.dir.path().join(format!("policy-{durability}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// `gatehouse --demo --policy POLICY serve`, with a raw JSON-RPC client on its pipes.
struct Gateway {
    child: Child,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Gateway {
    fn start(env: &Env, policy: &Path) -> Gateway {
        let mut command = env.cmd(&["--demo", "--policy"]);
        command
            .arg(policy)
            .args(["serve", "--client", "flood"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        let mut gateway = Gateway {
            child,
            stdin,
            lines,
        };
        gateway.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "flood", "version": "0"}}}),
        );
        gateway.next(|m| m["id"] == 0);
        gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        gateway
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
        self.stdin.flush().unwrap();
    }

    fn next(&self, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).expect("an answer from serve");
            let message: Value = serde_json::from_str(&line).unwrap();
            if wanted(&message) {
                return message;
            }
        }
    }

    fn call(id: u64) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "demo__echo", "arguments": {"message": format!("call {id}")}}})
    }

    /// Keeps `in_flight` calls going (concurrent calls on one connection) until `wanted` were
    /// answered, then kills serve with SIGKILL mid-flood. Returns how many calls were answered
    /// with a result, counting those already on the pipe when it died.
    fn flood_then_kill(mut self, in_flight: u64, wanted: u64) -> u64 {
        let mut next_id = 1;
        for _ in 0..in_flight {
            self.send(&Gateway::call(next_id));
            next_id += 1;
        }
        let mut answered = 0;
        while answered < wanted {
            let answer = self.next(|m| m.get("id").is_some());
            assert!(answer["result"].is_object(), "{answer}");
            assert_eq!(
                answer["result"]["content"][0]["text"],
                format!("call {}", answer["id"]),
                "{answer}"
            );
            answered += 1;
            self.send(&Gateway::call(next_id));
            next_id += 1;
        }
        self.child.kill().unwrap(); // SIGKILL
        self.child.wait().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if message["result"].is_object() {
                answered += 1;
            }
        }
        answered
    }
}

fn echo_records(env: &Env) -> usize {
    audit_records(&env.audit_log())
        .iter()
        .filter(|r| {
            r["event"] == "tool_call"
                && r["data"]["tool"] == "echo"
                && r["data"]["caller"]["client"] == "flood"
        })
        .count()
}

fn verify(env: &Env) -> Value {
    let (code, report) = env.json(&["audit", "verify"]);
    assert!(code == 0 || code == 1, "{report}");
    report
}

fn markers(env: &Env) -> Vec<PathBuf> {
    let dir = env.audit_log().parent().unwrap().to_path_buf();
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("audit.jsonl.batched-") && !name.ends_with(".tmp")
        })
        .collect();
    found.sort();
    found
}

#[test]
fn sigkill_of_the_host_during_a_flood_of_calls_loses_no_acknowledged_record_in_either_mode() {
    for (durability, flush_ms, flush_records) in [("sync", 50, 128), ("batched", 50, 128)] {
        let env = Env::new();
        let policy = policy(&env, durability, flush_ms, flush_records);
        let answered = Gateway::start(&env, &policy).flood_then_kill(8, 300);
        // Every call a client saw answered was recorded before it was forwarded.
        let recorded = echo_records(&env);
        assert!(
            recorded as u64 >= answered,
            "{durability}: {answered} calls answered, {recorded} recorded"
        );
        let report = verify(&env);
        assert_eq!(report["ok"], true, "{durability}: {report}");
        assert_eq!(report["short_tails"], json!([]), "{durability}: {report}");
        if durability == "sync" {
            // Every record anchored before its call went on: the head is at the end, or one
            // behind when the kill fell between a record's flush and the head's rename.
            let head: Value = serde_json::from_slice(
                &std::fs::read(env.audit_log().with_file_name("audit.jsonl.head")).unwrap(),
            )
            .unwrap();
            let last = report["records"].as_u64().unwrap();
            assert!(head["seq"].as_u64().unwrap() + 1 >= last, "{head} {report}");
        }
        // The next start finds nothing to repair: only the process died.
        let (code, stdout, stderr) = env.run(&["--demo", "tools", "demo"]);
        assert_eq!(code, 0, "{stdout}{stderr}");
        assert!(!stderr.contains("warning: the"), "{durability}: {stderr}");
        assert!(markers(&env).is_empty(), "{durability}");
    }
}

/// A power cut, simulated: serve runs batched with a window no test waits out, is killed
/// mid-flood, the log loses what was never flushed (cut to the end of the record the head
/// anchors, as the disk never had the rest), and the marker reads as written by the boot
/// before.
#[test]
fn a_power_cut_while_serving_in_the_batched_mode_is_reported_as_a_short_tail() {
    if !cfg!(target_os = "linux") {
        return; // the markers need a boot id
    }
    let env = Env::new();
    let policy = policy(&env, "batched", 1000, 10_000);
    Gateway::start(&env, &policy).flood_then_kill(8, 200);

    let log = env.audit_log();
    let head: Value =
        serde_json::from_slice(&std::fs::read(log.with_file_name("audit.jsonl.head")).unwrap())
            .unwrap();
    let head_seq = head["seq"].as_u64().unwrap();
    let bytes = std::fs::read(&log).unwrap();
    let mut end = 0;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let record: Value = serde_json::from_slice(line).unwrap();
        if record["seq"].as_u64().unwrap() > head_seq {
            break;
        }
        end += line.len();
    }
    assert!(
        end < bytes.len(),
        "records after the head's anchor were written"
    );
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(end as u64)
        .unwrap();
    let marker = markers(&env).pop().expect("serve's marker outlived it");
    let mut content: Value = serde_json::from_slice(&std::fs::read(&marker).unwrap()).unwrap();
    content["boot_id"] = json!("00000000-0000-0000-0000-000000000000");
    std::fs::write(&marker, serde_json::to_vec(&content).unwrap()).unwrap();

    // verify: intact up to the head, and a short tail of the window, not a break.
    let report = verify(&env);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["records"], head_seq);
    let short = &report["short_tails"][0];
    assert_eq!(short["head_seq"], head_seq, "{report}");
    assert_eq!(
        (short["flush_ms"].clone(), short["flush_records"].clone()),
        (json!(1000), json!(10000))
    );
    let (_, text, _) = env.run(&["audit", "verify"]);
    assert!(
        text.contains("short tail") && text.contains("not tampering"),
        "{text}"
    );

    // The next start records it once and says so.
    let (code, stdout, stderr) = env.run(&["--demo", "tools", "demo"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.contains("the machine stopped"), "{stderr}");
    let report = verify(&env);
    assert_eq!(report["ok"], true, "{report}");
    assert!(report["short_tails"][0]["seq"].is_u64(), "{report}");
    let (_, _, stderr) = env.run(&["--demo", "tools", "demo"]);
    assert!(!stderr.contains("the machine stopped"), "{stderr}");
}
