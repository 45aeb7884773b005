//! `gatehouse clients lockdown --out DIR`: the managed settings that let each AI client run
//! Gatehouse and nothing else. Each file is parsed as its client reads it (JSON, an Apple
//! property list through Python's plistlib, a regedit file), and the real Claude Code CLI runs
//! under the generated files placed where it reads them, inside a private mount namespace so
//! the machine's /etc is never touched.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Env;
use serde_json::{Value, json};

const GATEHOUSE: &str = "/opt/gatehouse/bin/gatehouse";

fn lockdown(env: &Env, out: &Path, gatehouse: &str) -> (i32, String, String) {
    env.run(&[
        "clients",
        "lockdown",
        "--out",
        out.to_str().unwrap(),
        "--gatehouse",
        gatehouse,
    ])
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}: {text}", path.display()))
}

/// The property list at `path` as JSON, parsed by Python's plistlib (a real plist parser).
fn read_plist(path: &Path) -> Value {
    common::require_tools(&["python3"]);
    let out = Command::new("python3")
        .arg("-c")
        .arg(
            "import json, plistlib, sys; print(json.dumps(plistlib.load(open(sys.argv[1], 'rb'))))",
        )
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A regedit 5.00 file: its key and its REG_SZ values, unescaped.
fn read_reg(path: &Path) -> (String, Vec<(String, String)>) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(
        &bytes[..2],
        &[0xFF, 0xFE],
        "UTF-16LE with a byte-order mark"
    );
    let units: Vec<u16> = bytes[2..]
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]))
        .collect();
    let text = String::from_utf16(&units).unwrap();
    let mut lines = text.split("\r\n");
    assert_eq!(lines.next(), Some("Windows Registry Editor Version 5.00"));
    let mut key = None;
    let mut values = Vec::new();
    for line in lines {
        if line.is_empty() || line.starts_with(';') {
            continue;
        }
        if let Some(k) = line.strip_prefix('[') {
            key = Some(k.strip_suffix(']').unwrap().to_string());
            continue;
        }
        let (name, value) = line.split_once("\"=\"").unwrap_or_else(|| panic!("{line}"));
        let unescape = |s: &str| s.replace("\\\"", "\"").replace("\\\\", "\\");
        let name = unescape(name.strip_prefix('"').unwrap());
        let value = unescape(value.strip_suffix('"').unwrap());
        values.push((name, value));
    }
    (key.expect("a [key] line"), values)
}

fn serve_command(gatehouse: &str, client: &str) -> Value {
    json!([gatehouse, "serve", "--client", client])
}

#[test]
fn each_clients_file_names_gatehouse_as_its_one_server() {
    let env = Env::new();
    let out = env.dir.path().join("lockdown");
    let (code, listed) = env.json(&[
        "clients",
        "lockdown",
        "--out",
        out.to_str().unwrap(),
        "--gatehouse",
        GATEHOUSE,
    ]);
    assert_eq!(code, 0, "{listed}");
    let relative: Vec<&str> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["relative"].as_str().unwrap())
        .collect();
    assert_eq!(
        relative,
        [
            "claude_code/managed-mcp.json",
            "claude_code/managed-settings.json",
            "vscode/managed-settings.json",
            "vscode/com.github.copilot.mobileconfig",
            "vscode/GitHubCopilot.reg",
            "cursor/permissions.json",
            "cursor/mcp.json",
            "claude_desktop/com.anthropic.claudefordesktop.mobileconfig",
            "claude_desktop/Claude.reg",
            "README.txt",
        ]
    );

    // Claude Code: exactly one server, and the managed allow-list naming its exact command.
    let mcp = read_json(&out.join("claude_code/managed-mcp.json"));
    let servers = mcp["mcpServers"].as_object().unwrap();
    assert_eq!(servers.len(), 1, "{mcp}");
    assert_eq!(
        servers["gatehouse"],
        json!({"type": "stdio", "command": GATEHOUSE, "args": ["serve", "--client", "claude_code"]})
    );
    let settings = read_json(&out.join("claude_code/managed-settings.json"));
    assert_eq!(settings["allowManagedMcpServersOnly"], true);
    assert_eq!(
        settings["allowedMcpServers"],
        json!([{"serverCommand": serve_command(GATEHOUSE, "claude_code")}])
    );

    // VS Code (GitHub Copilot's managed settings): the file, the profile and the policy hold
    // the same one-entry allow-list; MDM channels carry it as a JSON string.
    let vscode_allowed = json!([{"serverCommand": serve_command(GATEHOUSE, "vscode")}]);
    let copilot = read_json(&out.join("vscode/managed-settings.json"));
    assert_eq!(copilot["allowedMcpServers"], vscode_allowed);
    let profile = read_plist(&out.join("vscode/com.github.copilot.mobileconfig"));
    assert_eq!(profile["PayloadType"], "Configuration");
    let payloads = profile["PayloadContent"].as_array().unwrap();
    assert_eq!(payloads.len(), 1);
    assert_eq!(payloads[0]["PayloadType"], "com.github.copilot");
    let as_string: Value =
        serde_json::from_str(payloads[0]["allowedMcpServers"].as_str().unwrap()).unwrap();
    assert_eq!(as_string, vscode_allowed);
    let (key, values) = read_reg(&out.join("vscode/GitHubCopilot.reg"));
    assert_eq!(key, r"HKEY_LOCAL_MACHINE\SOFTWARE\Policies\GitHubCopilot");
    assert_eq!(values.len(), 1, "{values:?}");
    assert_eq!(values[0].0, "allowedMcpServers");
    assert_eq!(
        serde_json::from_str::<Value>(&values[0].1).unwrap(),
        vscode_allowed
    );

    // Cursor: only Gatehouse's tools run without asking; its one global server.
    let permissions = read_json(&out.join("cursor/permissions.json"));
    assert_eq!(permissions["mcpAllowlist"], json!(["gatehouse:*"]));
    let cursor = read_json(&out.join("cursor/mcp.json"));
    assert_eq!(cursor["mcpServers"].as_object().unwrap().len(), 1);
    assert_eq!(
        cursor["mcpServers"]["gatehouse"]["args"],
        json!(["serve", "--client", "cursor"])
    );

    // Claude Desktop: the managed server list (a JSON string) and no local servers.
    let desktop_servers = json!([{
        "name": "gatehouse", "command": GATEHOUSE, "args": ["serve", "--client", "claude_desktop"],
    }]);
    let profile =
        read_plist(&out.join("claude_desktop/com.anthropic.claudefordesktop.mobileconfig"));
    let payload = &profile["PayloadContent"][0];
    assert_eq!(payload["PayloadType"], "com.anthropic.claudefordesktop");
    assert_eq!(payload["isLocalDevMcpEnabled"], "false");
    assert_eq!(
        serde_json::from_str::<Value>(payload["managedMcpServers"].as_str().unwrap()).unwrap(),
        desktop_servers
    );
    let (key, values) = read_reg(&out.join("claude_desktop/Claude.reg"));
    assert_eq!(key, r"HKEY_LOCAL_MACHINE\SOFTWARE\Policies\Claude");
    let value = |name: &str| {
        values
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} in {values:?}"))
            .1
            .clone()
    };
    assert_eq!(value("isLocalDevMcpEnabled"), "false");
    assert_eq!(
        serde_json::from_str::<Value>(&value("managedMcpServers")).unwrap(),
        desktop_servers
    );

    // README names every file and its place on each platform.
    let readme = std::fs::read_to_string(out.join("README.txt")).unwrap();
    for file in &relative[..relative.len() - 1] {
        assert!(readme.contains(file), "{file} not in README: {readme}");
    }
    for place in [
        "/etc/claude-code/managed-mcp.json",
        "/Library/Application Support/ClaudeCode/managed-mcp.json",
        r"C:\Program Files\ClaudeCode\managed-mcp.json",
        "/etc/github-copilot/managed-settings.json",
    ] {
        assert!(readme.contains(place), "{place} not in README");
    }
}

/// Paths with quotes, backslashes and markup characters come out escaped in every format and
/// read back unchanged.
#[test]
fn an_awkward_install_path_survives_every_format() {
    let env = Env::new();
    let out = env.dir.path().join("out");
    let path = r#"/opt/Gate "house" & <co>\x/gatehouse"#;
    let (code, stdout, stderr) = lockdown(&env, &out, path);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let mcp = read_json(&out.join("claude_code/managed-mcp.json"));
    assert_eq!(mcp["mcpServers"]["gatehouse"]["command"], path);
    let profile = read_plist(&out.join("vscode/com.github.copilot.mobileconfig"));
    let allowed: Value = serde_json::from_str(
        profile["PayloadContent"][0]["allowedMcpServers"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(allowed[0]["serverCommand"][0], path);
    let (_, values) = read_reg(&out.join("claude_desktop/Claude.reg"));
    let servers: Value = serde_json::from_str(
        &values
            .iter()
            .find(|(n, _)| n == "managedMcpServers")
            .unwrap()
            .1,
    )
    .unwrap();
    assert_eq!(servers[0]["command"], path);
}

#[test]
fn a_rerun_updates_its_own_files_and_never_overwrites_anyone_elses() {
    let env = Env::new();
    let out = env.dir.path().join("out");
    let (code, stdout, stderr) = lockdown(&env, &out, GATEHOUSE);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // Re-run with another path: its own files are updated in place.
    let (code, stdout, stderr) = lockdown(&env, &out, "/usr/local/bin/gatehouse");
    assert_eq!(code, 0, "{stdout}{stderr}");
    let mcp = read_json(&out.join("claude_code/managed-mcp.json"));
    assert_eq!(
        mcp["mcpServers"]["gatehouse"]["command"],
        "/usr/local/bin/gatehouse"
    );

    // One of its files edited by someone so that it lost the marker: refused, nothing written.
    let settings = out.join("claude_code/managed-settings.json");
    std::fs::write(&settings, r#"{"allowedMcpServers": []}"#).unwrap();
    let before_mcp = std::fs::read(out.join("claude_code/managed-mcp.json")).unwrap();
    let (code, value) = env.json(&[
        "clients",
        "lockdown",
        "--out",
        out.to_str().unwrap(),
        "--gatehouse",
        GATEHOUSE,
    ]);
    assert_ne!(code, 0, "{value}");
    assert_eq!(
        value["error"]["code"], "client_lockdown_foreign_file",
        "{value}"
    );
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        r#"{"allowedMcpServers": []}"#
    );
    assert_eq!(
        std::fs::read(out.join("claude_code/managed-mcp.json")).unwrap(),
        before_mcp,
        "nothing is written when one file is refused"
    );
    std::fs::remove_file(&settings).unwrap();

    // Anything else in the directory, at the top or in a client's folder: refused.
    for stray in ["notes.txt", "cursor/other.json"] {
        let path = out.join(stray);
        std::fs::write(&path, "mine").unwrap();
        let (code, stdout, stderr) = lockdown(&env, &out, GATEHOUSE);
        assert_ne!(code, 0, "{stray}: {stdout}");
        assert!(
            stderr.contains(stray.rsplit('/').next().unwrap()),
            "{stderr}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");
        std::fs::remove_file(&path).unwrap();
    }

    // A symlink where a file goes is never followed.
    let elsewhere = env.dir.path().join("elsewhere.json");
    std::fs::write(&elsewhere, "theirs").unwrap();
    let target = out.join("cursor/mcp.json");
    std::fs::remove_file(&target).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &target).unwrap();
    let (code, stdout, _) = lockdown(&env, &out, GATEHOUSE);
    assert_ne!(code, 0, "{stdout}");
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "theirs");
    std::fs::remove_file(&target).unwrap();

    // With the strays gone it writes again (the removed files come back).
    let (code, stdout, stderr) = lockdown(&env, &out, GATEHOUSE);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(settings.exists() && target.exists());
}

#[test]
fn a_relative_gatehouse_path_is_refused() {
    let env = Env::new();
    let out = env.dir.path().join("out");
    for relative in ["gatehouse", "./bin/gatehouse", "../gatehouse"] {
        let (code, stdout, stderr) = lockdown(&env, &out, relative);
        assert_eq!(code, 2, "{relative}: {stdout}");
        assert!(stderr.contains("relative"), "{stderr}");
        assert!(!out.exists(), "nothing written for {relative}");
    }
}

/// Runs the real Claude Code CLI's `claude mcp list` with `home` as HOME and, through an
/// overlay mounted on /etc inside a private mount namespace, the files of `etc_upper` added to
/// /etc: Claude Code reads its managed files from /etc/claude-code on Linux. Nothing outside
/// the namespace sees the overlay. If the namespace or the mount cannot be had, the test fails
/// saying so.
fn claude_mcp_list(env: &Env, home: &Path, etc_upper: &Path) -> String {
    common::require_tools(&["unshare"]);
    // One work directory per mount: overlayfs wants it empty and its own.
    let work = etc_upper.with_extension("work");
    std::fs::create_dir_all(&work).unwrap();
    let claude = common::repo().join("node_modules/.bin/claude");
    assert!(
        claude.exists(),
        "{} is missing: run scripts/install-deps.sh (npm ci)",
        claude.display()
    );
    let script = r#"mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc || { echo "MOUNT_FAILED: an overlay on /etc inside a private mount namespace is needed (user namespaces with overlayfs, Linux 5.11+, or root)" >&2; exit 97; }
shift 2
exec "$@""#;
    let mut command = Command::new("unshare");
    command
        .args(["--mount", "--map-root-user", "--", "sh", "-c", script, "sh"])
        .arg(etc_upper)
        .arg(&work)
        .arg(&claude)
        .args(["mcp", "list"]);
    env.isolate(&mut command);
    command
        .env("HOME", home)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(home);
    let (code, stdout, stderr) = common::output_of(command);
    assert_ne!(code, 97, "{stderr}");
    assert_eq!(
        code, 0,
        "unshare/claude failed (private mount namespaces needed): {stdout}{stderr}"
    );
    stdout
}

/// The `gatehouse:` line of a `claude mcp list`, which must show Gatehouse started and
/// answering; and whether the user's own `direct` server is listed at all.
fn gatehouse_line_and_direct(listed: &str) -> (String, bool) {
    let line = listed
        .lines()
        .find(|l| l.starts_with("gatehouse:"))
        .unwrap_or_else(|| panic!("Claude Code lists no gatehouse: {listed}"))
        .to_string();
    assert!(line.contains("serve --client claude_code"), "{line}");
    assert!(
        line.contains("Connected") && !line.contains("Failed"),
        "gatehouse serve must start and answer: {line}"
    );
    (line, listed.lines().any(|l| l.starts_with("direct:")))
}

/// `etc_upper/claude-code/` holding the named generated files, as an admin places them.
fn managed_etc(env: &Env, out: &Path, label: &str, names: &[&str]) -> PathBuf {
    let upper = env.dir.path().join(label);
    let managed_dir = upper.join("claude-code");
    std::fs::create_dir_all(&managed_dir).unwrap();
    for name in names {
        std::fs::copy(out.join("claude_code").join(name), managed_dir.join(name)).unwrap();
    }
    upper
}

#[test]
fn claude_code_under_the_managed_files_runs_gatehouse_and_not_the_users_own_server() {
    let env = Env::new();
    let gatehouse = env!("CARGO_BIN_EXE_gatehouse");
    let out = env.dir.path().join("out");
    let (code, stdout, stderr) = lockdown(&env, &out, gatehouse);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let home = env.dir.path();
    let user_servers = |servers: Value| {
        std::fs::write(
            home.join(".claude.json"),
            json!({ "mcpServers": servers }).to_string(),
        )
        .unwrap()
    };
    let direct = json!({"type": "stdio", "command": common::demo_bin(), "args": []});
    let machine_before = std::fs::read_dir("/etc/claude-code")
        .map(|d| d.count())
        .ok();

    // No managed files: Claude Code runs the server the user added directly, so what follows
    // is the managed files' doing.
    user_servers(json!({ "direct": direct }));
    let unmanaged = claude_mcp_list(&env, home, &managed_etc(&env, &out, "etc-none", &[]));
    assert!(
        unmanaged.lines().any(|l| l.starts_with("direct:")),
        "{unmanaged}"
    );

    // The managed settings alone: of the user's own entries only Gatehouse's exact command
    // runs.
    user_servers(json!({
        "direct": direct,
        "gatehouse": {"type": "stdio", "command": gatehouse, "args": ["serve", "--client", "claude_code"]},
    }));
    let upper = managed_etc(&env, &out, "etc-settings", &["managed-settings.json"]);
    let (_, direct_listed) = gatehouse_line_and_direct(&claude_mcp_list(&env, home, &upper));
    assert!(!direct_listed, "the allow-list lets only Gatehouse run");

    // Both files, and the user has named their own server "gatehouse": the managed entry is
    // the one that runs (exclusive control), and nothing of the user's is used.
    user_servers(json!({
        "direct": direct,
        "gatehouse": direct,
    }));
    let upper = managed_etc(
        &env,
        &out,
        "etc-both",
        &["managed-mcp.json", "managed-settings.json"],
    );
    let listed = claude_mcp_list(&env, home, &upper);
    let (line, direct_listed) = gatehouse_line_and_direct(&listed);
    assert!(line.contains(gatehouse), "{line}");
    assert!(!direct_listed, "{listed}");
    assert_eq!(
        listed.lines().filter(|l| l.contains(": ")).count(),
        1,
        "Gatehouse is the one server: {listed}"
    );

    // The machine's /etc is as it was: the overlays lived in their namespaces only.
    assert_eq!(
        std::fs::read_dir("/etc/claude-code")
            .map(|d| d.count())
            .ok(),
        machine_before
    );
}
