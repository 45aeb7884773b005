//! `gatehouse servers confine` and the confinement `servers list` shows (issue 28), through the
//! real binary: a person loosens the default confinement of a server they run unattested (warn
//! posture), the list shows what it can now read, write and reach, the change is in the audit
//! log, a bad value is refused naming its option, and `--reset` gives the default back. An
//! admitted server's confinement is its admission's: the person's settings are said not to
//! apply.

mod common;

use common::{Env, demo_bin, require_tools};
use serde_json::{Value, json};

/// An Env with one unattested stdio server, `files` (the demo server), and two directories
/// under the test's home to grant.
fn env_with_server() -> Env {
    let env = Env::new();
    std::fs::create_dir_all(env.dir.path().join("proj")).unwrap();
    std::fs::create_dir_all(env.dir.path().join("out")).unwrap();
    std::fs::write(
        env.config(),
        serde_json::to_vec_pretty(&json!({"mcpServers": {"files": {"command": demo_bin()}}}))
            .unwrap(),
    )
    .unwrap();
    env
}

fn servers_json(env: &Env) -> Value {
    serde_json::from_slice(&std::fs::read(env.config()).unwrap()).unwrap()
}

/// The `servers list --json` row of `name`.
fn listed(env: &Env, args: &[&str], name: &str) -> Value {
    let mut all = args.to_vec();
    all.extend(["servers", "list"]);
    let (code, out) = env.json(&all);
    assert_eq!(code, 0, "{out}");
    out["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed: {out}"))
        .clone()
}

/// The audit log's records of `event`, parsed.
fn audited(env: &Env, event: &str) -> Vec<Value> {
    std::fs::read_to_string(env.audit_log())
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["event"] == event)
        .collect()
}

const GRANTS: [&str; 9] = [
    "servers",
    "confine",
    "files",
    "--read",
    "~/proj",
    "--write",
    "~/out",
    "--host",
    "api.example.com:443",
];

#[test]
fn a_person_loosens_an_unattested_server_sees_it_listed_and_resets_it() {
    require_tools(&["bwrap"]);
    let env = env_with_server();

    // Before: the default confinement, nothing granted.
    let row = listed(&env, &[], "files");
    assert_eq!(row["confinement"]["grants_from"], "default", "{row}");
    assert_eq!(row["confinement"]["network"], json!({"kind": "none"}));
    assert_eq!(row["admission"]["confinement"], row["confinement"]);

    let mut set = GRANTS.to_vec();
    set.extend(["--processes", "2"]);
    let (code, out) = env.json(&set);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["confinement"]["grants_from"], "person", "{out}");
    assert_eq!(out["your_settings_apply"], true);
    assert_eq!(
        out["settings"],
        json!({"read": ["~/proj"], "write": ["~/out"], "hosts": ["api.example.com:443"], "processes": 2})
    );
    // Written into the server's entry, the rest of it untouched.
    let entry = &servers_json(&env)["mcpServers"]["files"];
    assert_eq!(entry["command"], demo_bin());
    assert_eq!(entry["confinement"], out["settings"], "{entry}");

    // The list shows it, in JSON and in one line under the server.
    let row = listed(&env, &[], "files");
    let view = &row["confinement"];
    assert_eq!(view["state"], "confined", "{row}");
    assert_eq!(view["grants_from"], "person");
    assert_eq!(view["read"], json!(["~/proj"]));
    assert_eq!(view["write"], json!(["~/out"]));
    assert_eq!(
        view["network"],
        json!({"kind": "hosts", "hosts": ["api.example.com:443"]})
    );
    assert_eq!(view["processes"], 2);
    let (code, stdout, stderr) = env.run(&["servers", "list"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(
            "    confined: reads ~/proj (read-only), writes ~/out; network: api.example.com:443; \
             up to 2 processes; memory 4096 MiB; granted by your settings"
        ),
        "{stdout}"
    );

    // The change is in the audit log: the server, what it was and what it became.
    let changes = audited(&env, "confinement_changed");
    assert_eq!(changes.len(), 1, "{changes:?}");
    let data = &changes[0]["data"];
    assert_eq!(data["name"], "files", "{data}");
    assert_eq!(data["before"], Value::Null, "{data}");
    assert_eq!(data["after"], out["settings"], "{data}");

    // Shown without options: nothing changes, nothing is audited.
    let (code, stdout, stderr) = env.run(&["servers", "confine", "files"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("files: confined\n"), "{stdout}");
    for line in [
        "  reads       ~/proj\n",
        "  writes      ~/out\n",
        "  network     api.example.com:443\n",
        "  processes   up to 2 processes\n",
        "  grants      granted by your settings\n",
    ] {
        assert!(stdout.contains(line), "{line:?} in {stdout}");
    }
    assert_eq!(audited(&env, "confinement_changed").len(), 1);

    // --reset removes the settings: the default again, audited.
    let (code, out) = env.json(&["servers", "confine", "files", "--reset"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["settings"], Value::Null);
    assert_eq!(out["confinement"]["grants_from"], "default", "{out}");
    let entry = &servers_json(&env)["mcpServers"]["files"];
    assert!(entry.get("confinement").is_none(), "{entry}");
    assert_eq!(entry["command"], demo_bin());
    let row = listed(&env, &[], "files");
    assert_eq!(row["confinement"]["grants_from"], "default", "{row}");
    let changes = audited(&env, "confinement_changed");
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert_eq!(changes[1]["data"]["after"], Value::Null);
    assert_eq!(changes[1]["data"]["before"], out_settings_of(&changes[0]));
}

fn out_settings_of(record: &Value) -> Value {
    record["data"]["after"].clone()
}

#[test]
fn unconfined_is_shown_with_why_and_the_persons_off_is_the_persons() {
    let env = env_with_server();
    // A machine that cannot confine (bubblewrap is not there), in the default preferred
    // mode: the server runs unconfined, and the line says so with the host's reason.
    let missing = env.dir.path().join("no-such-bwrap");
    let mut cmd = env.cmd(&["--json", "servers", "list"]);
    cmd.env("GATEHOUSE_BWRAP", &missing);
    let (code, stdout, stderr) = common::output_of(cmd);
    assert_eq!(code, 0, "{stderr}");
    let out: Value = serde_json::from_str(&stdout).unwrap();
    let view = &out["servers"][0]["confinement"];
    assert_eq!(view["state"], "unconfined", "{out}");
    assert_eq!(view["reason"], "bubblewrap_missing", "{out}");
    let detail = view["detail"].as_str().unwrap().to_string();
    assert!(!detail.is_empty());
    let mut cmd = env.cmd(&["servers", "list"]);
    cmd.env("GATEHOUSE_BWRAP", &missing);
    let (code, stdout, stderr) = common::output_of(cmd);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(&format!("    unconfined: {detail}")),
        "{stdout}"
    );

    // The person turns it off for this server: shown as theirs, audited.
    let (code, out) = env.json(&["servers", "confine", "files", "--unconfined"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["settings"], json!({"mode": "off"}));
    assert_eq!(out["confinement"]["state"], "unconfined", "{out}");
    assert_eq!(out["confinement"]["reason"], "person_turned_off", "{out}");
    assert_eq!(audited(&env, "confinement_changed").len(), 1);

    // An empty GATEHOUSE_BWRAP is a mistake, not "find it".
    let mut cmd = env.cmd(&["servers", "list"]);
    cmd.env("GATEHOUSE_BWRAP", "");
    let (code, _, stderr) = common::output_of(cmd);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("GATEHOUSE_BWRAP is empty"), "{stderr}");
}

#[test]
fn a_bad_value_is_refused_naming_its_option_and_nothing_is_written() {
    let env = env_with_server();
    let before = std::fs::read(env.config()).unwrap();
    for (args, option) in [
        (&["--host", "*.example.com:443"][..], "--host"),
        (&["--host", "api.example.com"][..], "--host"),
        (&["--host", "https://api.example.com:443"][..], "--host"),
        (&["--host", "api.example.com:70000"][..], "--host"),
        (&["--read", "proj"][..], "--read"),
        (&["--write", "~/../etc"][..], "--write"),
        (&["--read", "~root/.ssh"][..], "--read"),
        (&["--processes", "100000"][..], "--processes"),
        (&["--memory-mib", "0"][..], "--memory-mib"),
    ] {
        let mut all = vec!["servers", "confine", "files"];
        all.extend_from_slice(args);
        let (code, stdout, stderr) = env.run(&all);
        assert_eq!(code, 2, "{args:?}: {stdout} {stderr}");
        assert!(
            stderr.contains(&format!("gatehouse: error: {option} ")),
            "{args:?}: {stderr}"
        );
        let (code, out) = env.json(&all);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert_eq!(out["error"]["code"], "usage", "{out}");
    }
    // Options that contradict each other are refused by the parser.
    for args in [
        &["--unconfined", "--read", "~/proj"][..],
        &["--reset", "--host", "a.example:443"][..],
        &["--any-host", "--host", "a.example:443"][..],
    ] {
        let mut all = vec!["servers", "confine", "files"];
        all.extend_from_slice(args);
        let (code, _, stderr) = env.run(&all);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains("cannot be used with"), "{args:?}: {stderr}");
    }
    // A server that is not configured is refused by the host.
    let (code, _, stderr) = env.run(&["servers", "confine", "nobody", "--read", "~/proj"]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("nobody"), "{stderr}");
    assert_eq!(std::fs::read(env.config()).unwrap(), before);
    assert!(audited(&env, "confinement_changed").is_empty());
}

#[test]
fn an_admitted_servers_confinement_is_its_admissions() {
    let env = env_with_server();
    // The embedded demo, admitted through the DEMO-ONLY trust root: its bundle entry grants
    // it the network, and the person's settings do not apply to it.
    let (code, out) = env.json(&[
        "--demo",
        "--posture",
        "deny-by-default",
        "servers",
        "confine",
        "demo",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["confinement"]["grants_from"], "admission", "{out}");
    assert_eq!(out["confinement"]["network"]["kind"], "any", "{out}");
    assert_eq!(out["your_settings_apply"], false);
    let (code, stdout, stderr) = env.run(&[
        "--demo",
        "--posture",
        "deny-by-default",
        "servers",
        "confine",
        "demo",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("\"demo\" is admitted: its confinement comes from its admission"),
        "{stdout}"
    );
}
