//! `gatehouse clients list | connect | restore` on a fake home holding each AI client's real
//! config file format: the real binary, HOME (and so XDG_CONFIG_HOME and XDG_DATA_HOME) in the
//! test's directory, the current directory a project of its own.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::Env;
use serde_json::{Value, json};

/// Claude Code's ~/.claude.json: user-scope servers among much state of its own, which must
/// survive a connect untouched.
const CLAUDE_CODE: &str = r#"{
  "numStartups": 42,
  "installMethod": "npm-global",
  "autoUpdates": true,
  "tipsHistory": {"memory-command": 3, "shift-enter": 7},
  "userID": "5f1c0e9d2b7a4c3e8f6a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e",
  "mcpServers": {
    "files": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/src"], "env": {}},
    "docs": {"type": "http", "url": "https://mcp.example.com/mcp"}
  },
  "projects": {
    "/home/me/src/app": {
      "allowedTools": [],
      "mcpServers": {},
      "hasTrustDialogAccepted": true,
      "lastCost": 0.1234
    }
  },
  "oauthAccount": {"emailAddress": "me@example.com", "organizationRole": "admin"}
}
"#;

const CLAUDE_DESKTOP: &str = r#"{
  "mcpServers": {
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"]
    }
  },
  "globalShortcut": "Ctrl+Space"
}
"#;

const CURSOR: &str = r#"{
  "mcpServers": {
    "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=Europe/Paris"]},
    "web": {"url": "https://tools.example.com/mcp"},
    "sqlite": {"command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "/home/me/db.sqlite"]}
  }
}
"#;

const VSCODE: &str = r#"{
	"servers": {
		"git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git", "--repository", "/home/me/src/app"]}
	},
	"inputs": [
		{"type": "promptString", "id": "api-key", "description": "API key", "password": true}
	]
}
"#;

/// VS Code's settings.json is JSONC: comments and a trailing comma.
const VSCODE_SETTINGS: &str = r#"{
    // my editor
    "editor.fontSize": 14,
    "mcp": {"servers": {"old": {"type": "stdio", "command": "old-server"}}},
}
"#;

struct Home {
    env: Env,
    project: PathBuf,
}

impl Home {
    fn new() -> Home {
        let env = Env::new();
        let project = env.dir.path().join("src/app");
        std::fs::create_dir_all(&project).unwrap();
        Home { env, project }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.env.dir.path().join(relative)
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Every client's file, as each client writes it.
    fn populated() -> Home {
        let home = Home::new();
        home.write(".config/Claude/claude_desktop_config.json", CLAUDE_DESKTOP);
        home.write(".claude.json", CLAUDE_CODE);
        home.write(
            "src/app/.mcp.json",
            r#"{"mcpServers": {"team": {"command": "team-mcp"}}}"#,
        );
        home.write(".cursor/mcp.json", CURSOR);
        home.write(".config/Code/User/mcp.json", VSCODE);
        home.write(".config/Code/User/settings.json", VSCODE_SETTINGS);
        home
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let mut cmd = self.env.cmd(args);
        cmd.current_dir(&self.project);
        common::output_of(cmd)
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        common::json_of(|all| self.run(all), args)
    }

    fn servers_json(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.env.config()).unwrap()).unwrap()
    }

    fn backups(&self) -> Vec<String> {
        let dir = self.path(".local/share/gatehouse/clients");
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

fn gatehouse_bin() -> String {
    std::fs::canonicalize(env!("CARGO_BIN_EXE_gatehouse"))
        .unwrap()
        .display()
        .to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn row<'a>(list: &'a Value, client: &str, scope: &str) -> &'a Value {
    list["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["client"] == client && r["scope"] == scope)
        .unwrap_or_else(|| panic!("no {client}/{scope} in {list}"))
}

#[test]
fn list_finds_each_clients_file_and_says_what_is_in_it() {
    let home = Home::populated();
    let (code, list) = home.json(&["clients", "list"]);
    assert_eq!(code, 0, "{list}");
    for (client, scope, file, servers) in [
        (
            "claude_desktop",
            "user",
            ".config/Claude/claude_desktop_config.json",
            1,
        ),
        ("claude_code", "user", ".claude.json", 2),
        ("claude_code", "project", "src/app/.mcp.json", 1),
        ("cursor", "user", ".cursor/mcp.json", 3),
        ("vscode", "user", ".config/Code/User/mcp.json", 1),
    ] {
        let r = row(&list, client, scope);
        assert_eq!(r["path"], home.path(file).display().to_string());
        assert_eq!(r["exists"], true);
        assert_eq!(r["servers"], servers, "{r}");
        assert_eq!(
            (&r["connected"], &r["backup"]),
            (&json!(false), &json!(false))
        );
        assert_eq!(r["problem"], Value::Null);
    }
    // settings.json is JSONC: reported, never guessed at.
    let settings = row(&list, "vscode", "settings");
    assert_eq!(
        (&settings["exists"], &settings["servers"]),
        (&json!(true), &Value::Null)
    );
    assert!(
        settings["problem"].as_str().unwrap().contains("JSONC"),
        "{settings}"
    );
    let (code, human, _) = home.run(&["clients", "list"]);
    assert_eq!(code, 0);
    assert!(
        human.contains("3 server(s) under \"mcpServers\""),
        "{human}"
    );

    // A machine without any client: every row is there, none exists.
    let empty = Home::new();
    let (code, list) = empty.json(&["clients", "list"]);
    assert_eq!(code, 0);
    let rows = list["clients"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    assert!(
        rows.iter()
            .all(|r| r["exists"] == false && r["servers"].is_null())
    );
}

#[test]
fn connect_claude_code_keeps_its_state_and_restore_gives_back_the_exact_bytes() {
    let home = Home::populated();
    let file = home.path(".claude.json");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (code, out) = home.json(&["clients", "connect", "claude_code"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["import"]["imported"], json!(["files", "docs"]));
    assert_eq!(out["path"], file.display().to_string());

    // Gatehouse has the servers, the client has only Gatehouse.
    let servers = home.servers_json();
    assert_eq!(servers["mcpServers"]["files"]["command"], "npx");
    assert_eq!(
        servers["mcpServers"]["docs"]["url"],
        "https://mcp.example.com/mcp"
    );
    let before: Value = serde_json::from_str(CLAUDE_CODE).unwrap();
    let after: Value = serde_json::from_str(&read(&file)).unwrap();
    assert_eq!(
        after["mcpServers"],
        json!({"gatehouse": {"type": "stdio", "command": gatehouse_bin(), "args": ["serve", "--client", "claude_code"]}})
    );
    // Every other key kept, with its value and in its place.
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&after), keys(&before));
    for (key, value) in before.as_object().unwrap() {
        if key != "mcpServers" {
            assert_eq!(&after[key], value, "{key}");
        }
    }
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        home.backups(),
        [
            "claude_code.backup.json",
            "claude_code.meta.json",
            "claude_code.written.json"
        ]
    );
    assert_eq!(
        read(&home.path(".local/share/gatehouse/clients/claude_code.backup.json")),
        CLAUDE_CODE
    );
    let (_, list) = home.json(&["clients", "list"]);
    let r = row(&list, "claude_code", "user");
    assert_eq!(
        (&r["connected"], &r["backup"], &r["servers"]),
        (&json!(true), &json!(true), &json!(1))
    );

    let (code, out, stderr) = home.run(&["clients", "restore", "claude_code"]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert!(
        out.contains("stay in") && out.contains("files, docs"),
        "{out}"
    );
    assert_eq!(read(&file), CLAUDE_CODE);
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(home.backups().is_empty());
    // The imported servers stay in Gatehouse.
    assert_eq!(home.servers_json()["mcpServers"]["files"]["command"], "npx");
}

#[test]
fn connect_each_other_client_writes_its_own_entry() {
    let home = Home::populated();
    for (client, file, text, key) in [
        (
            "claude_desktop",
            ".config/Claude/claude_desktop_config.json",
            CLAUDE_DESKTOP,
            "mcpServers",
        ),
        ("cursor", ".cursor/mcp.json", CURSOR, "mcpServers"),
        ("vscode", ".config/Code/User/mcp.json", VSCODE, "servers"),
    ] {
        let (code, out) = home.json(&["clients", "connect", client]);
        assert_eq!(code, 0, "{client}: {out}");
        let written: Value = serde_json::from_str(&read(&home.path(file))).unwrap();
        let mut expected =
            json!({"command": gatehouse_bin(), "args": ["serve", "--client", client]});
        if client == "vscode" {
            expected = json!({"type": "stdio", "command": gatehouse_bin(), "args": ["serve", "--client", client]});
        }
        assert_eq!(written[key], json!({"gatehouse": expected}), "{client}");
        let original: Value = serde_json::from_str(text).unwrap();
        for (k, v) in original.as_object().unwrap() {
            if k != key {
                assert_eq!(&written[k], v, "{client}: {k}");
            }
        }
        if client == "vscode" {
            // Tabs stay tabs; settings.json's servers are named as still launched directly.
            assert!(read(&home.path(file)).contains("\n\t\"servers\""));
            assert!(
                out["warnings"][0]
                    .as_str()
                    .unwrap()
                    .contains("settings.json"),
                "{out}"
            );
            assert_eq!(
                read(&home.path(".config/Code/User/settings.json")),
                VSCODE_SETTINGS
            );
        } else {
            assert_eq!(out["warnings"], json!([]));
        }
    }
    let servers = home.servers_json();
    for name in ["memory", "time", "web", "sqlite", "git"] {
        assert!(
            servers["mcpServers"].get(name).is_some(),
            "{name}: {servers}"
        );
    }
    for (client, text, file) in [
        (
            "claude_desktop",
            CLAUDE_DESKTOP,
            ".config/Claude/claude_desktop_config.json",
        ),
        ("cursor", CURSOR, ".cursor/mcp.json"),
        ("vscode", VSCODE, ".config/Code/User/mcp.json"),
    ] {
        let (code, out) = home.json(&["clients", "restore", client]);
        assert_eq!(code, 0, "{out}");
        assert_eq!(read(&home.path(file)), text, "{client}");
    }
}

#[test]
fn a_quarantined_entry_changes_neither_file_until_confirmed() {
    let home = Home::new();
    let text = r#"{"mcpServers": {
  "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
  "node": {"command": "node", "args": ["server.js"], "env": {"NODE_OPTIONS": "--require /tmp/evil.js"}}
}}"#;
    let file = home.write(".cursor/mcp.json", text);
    let servers = r#"{"mcpServers": {"mine": {"command": "my-server"}}}"#;
    std::fs::write(home.env.config(), servers).unwrap();

    let (code, out) = home.json(&["clients", "connect", "cursor"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["error"]["code"], "client_import_incomplete");
    assert_eq!(out["changed"], false);
    assert_eq!(out["import"]["quarantined"][0]["name"], "node");
    assert_eq!(
        out["import"]["quarantined"][0]["settings"][0]["name"],
        "NODE_OPTIONS"
    );
    assert_eq!(read(&file), text);
    assert_eq!(read(&home.env.config()), servers);
    assert!(home.backups().is_empty());
    // The human form shows the exact setting held back.
    let (code, stdout, stderr) = home.run(&["clients", "connect", "cursor"]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains("NODE_OPTIONS=--require /tmp/evil.js"),
        "{stdout}"
    );
    assert!(stderr.contains("nothing was changed"), "{stderr}");

    // Confirmed by name, having seen it: both files change.
    let (code, out) = home.json(&[
        "clients",
        "connect",
        "cursor",
        "--allow-launch-settings",
        "node",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["import"]["imported"], json!(["files", "node"]));
    assert_eq!(
        home.servers_json()["mcpServers"]["node"]["env"]["NODE_OPTIONS"],
        "--require /tmp/evil.js"
    );
    assert_ne!(read(&file), text);
}

#[test]
fn a_second_connect_and_a_connect_over_a_waiting_backup_are_refused() {
    let home = Home::populated();
    let file = home.path(".cursor/mcp.json");
    let (code, out) = home.json(&["clients", "connect", "cursor"]);
    assert_eq!(code, 0, "{out}");
    let connected = read(&file);
    let (code, out) = home.json(&["clients", "connect", "cursor"]);
    assert_eq!(
        (code, &out["error"]["code"]),
        (1, &json!("client_already_connected"))
    );
    assert_eq!(read(&file), connected);

    // The user added a server by hand: not "connected" any more, but the backup still waits.
    let mut edited: Value = serde_json::from_str(&connected).unwrap();
    edited["mcpServers"]["extra"] = json!({"command": "extra-server"});
    std::fs::write(&file, edited.to_string()).unwrap();
    let (code, out) = home.json(&["clients", "connect", "cursor"]);
    assert_eq!(
        (code, &out["error"]["code"]),
        (1, &json!("client_backup_exists"))
    );
    assert_eq!(read(&file), edited.to_string());
    assert_eq!(
        read(&home.path(".local/share/gatehouse/clients/cursor.backup.json")),
        CURSOR
    );
}

#[test]
fn restore_after_the_user_edited_the_file_needs_force() {
    let home = Home::populated();
    let file = home.path(".claude.json");
    let (code, out) = home.json(&["clients", "connect", "claude_code"]);
    assert_eq!(code, 0, "{out}");
    // Claude Code itself rewrites its state.
    let mut edited: Value = serde_json::from_str(&read(&file)).unwrap();
    edited["numStartups"] = json!(43);
    let edited = serde_json::to_string_pretty(&edited).unwrap();
    std::fs::write(&file, &edited).unwrap();

    let (code, out) = home.json(&["clients", "restore", "claude_code"]);
    assert_eq!(
        (code, &out["error"]["code"]),
        (1, &json!("client_changed_since_connect"))
    );
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("changed numStartups") && message.contains("--force"),
        "{message}"
    );
    assert_eq!(read(&file), edited);
    assert_eq!(home.backups().len(), 3);

    let (code, out) = home.json(&["clients", "restore", "claude_code", "--force"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["forced"], true);
    assert_eq!(out["changed"], json!(["changed numStartups"]));
    assert_eq!(read(&file), CLAUDE_CODE);
    assert!(home.backups().is_empty());
}

#[test]
fn missing_jsonc_and_unknown_are_refused_and_nothing_is_written() {
    let home = Home::new();
    let (code, out) = home.json(&["clients", "connect", "claude_desktop"]);
    assert_eq!(
        (code, &out["error"]["code"]),
        (2, &json!("client_config_missing"))
    );
    assert!(
        !home
            .path(".config/Claude/claude_desktop_config.json")
            .exists()
    );

    let jsonc = "{\n  // my servers\n  \"servers\": {\"git\": {\"type\": \"stdio\", \"command\": \"uvx\"}}\n}\n";
    let file = home.write(".config/Code/User/mcp.json", jsonc);
    let (code, out) = home.json(&["clients", "connect", "vscode"]);
    assert_eq!(
        (code, &out["error"]["code"]),
        (2, &json!("client_config_invalid"))
    );
    assert!(
        out["error"]["message"].as_str().unwrap().contains("line 2"),
        "{out}"
    );
    assert_eq!(read(&file), jsonc);
    assert!(!home.env.config().exists() && home.backups().is_empty());
    // The same servers without the comment connect.
    home.write(
        ".config/Code/User/mcp.json",
        r#"{"servers": {"git": {"type": "stdio", "command": "uvx"}}}"#,
    );
    let (code, out) = home.json(&["clients", "connect", "vscode"]);
    assert_eq!(code, 0, "{out}");

    let (code, out) = home.json(&["clients", "restore", "cursor"]);
    assert_eq!(
        (code, &out["error"]["code"]),
        (2, &json!("client_backup_missing"))
    );
    let (code, _, stderr) = home.run(&["clients", "connect", "claude"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("claude_desktop, claude_code, cursor, vscode"),
        "{stderr}"
    );
    let (code, out) = home.json(&["clients", "connect", "cursor", "--project"]);
    assert_eq!((code, &out["error"]["code"]), (2, &json!("usage")));
}

#[test]
fn a_project_mcp_json_connects_and_restores_on_its_own() {
    let home = Home::populated();
    let project_file = home.path("src/app/.mcp.json");
    let original = read(&project_file);
    let (code, out) = home.json(&["clients", "connect", "claude_code", "--project"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["scope"], "project");
    assert_eq!(out["import"]["imported"], json!(["team"]));
    // The user file is another location: untouched, and still connectable.
    assert_eq!(read(&home.path(".claude.json")), CLAUDE_CODE);
    let backups = home.backups();
    assert!(
        backups
            .iter()
            .all(|b| b.starts_with("claude_code-project-")),
        "{backups:?}"
    );
    let (code, out) = home.json(&["clients", "restore", "claude_code"]);
    assert_eq!(
        (code, &out["error"]["code"]),
        (2, &json!("client_backup_missing"))
    );
    let (code, out) = home.json(&["clients", "restore", "claude_code", "--project"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(read(&project_file), original);
}

#[test]
fn a_keychain_failure_leaves_the_client_file_and_no_backup() {
    // A literal token must move to the keychain; with no keychain reachable, the connect
    // fails before the client's file is touched.
    let home = Home::new();
    let text =
        r#"{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_abc"}}}}"#;
    let file = home.write(".config/Claude/claude_desktop_config.json", text);
    let out = home
        .env
        .cmd(&["--json", "clients", "connect", "claude_desktop"])
        .current_dir(&home.project)
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .output()
        .unwrap();
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{value}");
    assert!(
        value["error"]["message"]
            .as_str()
            .unwrap()
            .contains("keychain"),
        "{value}"
    );
    assert_eq!(read(&file), text);
    assert!(home.backups().is_empty());
    assert!(!read_or_empty(&home.env.config()).contains("ghp_abc"));
}

fn read_or_empty(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn connect_moves_a_literal_token_into_a_real_keychain() {
    // A gnome-keyring on a private D-Bus session bus, as tests/keychain.rs runs it.
    common::require_tools(&["dbus-run-session", "gnome-keyring-daemon", "secret-tool"]);
    let home = Home::new();
    let text = r#"{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_live_5eCr3t", "LOG_LEVEL": "debug"}}}}"#;
    let file = home.write(".config/Claude/claude_desktop_config.json", text);
    let script = r#"set -eu
eval "$(printf 'test-password' | gnome-keyring-daemon --unlock --components=secrets --daemonize)"
"$1" --config "$2" --json clients connect claude_desktop
printf '\n--- keyring: '
secret-tool lookup service gatehouse username gh.GITHUB_TOKEN"#;
    let out = std::process::Command::new("dbus-run-session")
        .args(["--", "bash", "-c", script, "session"])
        .arg(env!("CARGO_BIN_EXE_gatehouse"))
        .arg(home.env.config())
        .current_dir(&home.project)
        .env("HOME", home.env.dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("GATEHOUSE_CONFIG")
        .env("GATEHOUSE_TRUST_ROOTS", home.env.trust_roots())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (report, keyring) = stdout.split_once("\n--- keyring: ").unwrap();
    assert_eq!(keyring.trim(), "ghp_live_5eCr3t");
    let report: Value = serde_json::from_str(report).unwrap();
    assert_eq!(
        report["import"]["secrets_moved"],
        json!(["gh: env.GITHUB_TOKEN -> gh.GITHUB_TOKEN"])
    );
    let servers = read(&home.env.config());
    assert!(!servers.contains("ghp_live_5eCr3t"), "{servers}");
    assert!(servers.contains("${secret:gh.GITHUB_TOKEN}"), "{servers}");
    assert!(!read(&file).contains("ghp_live_5eCr3t"));
    // The backup holds the client's file as it was, token included: private to the user.
    let backup = home.path(".local/share/gatehouse/clients/claude_desktop.backup.json");
    assert_eq!(read(&backup), text);
    assert_eq!(
        std::fs::metadata(&backup).unwrap().permissions().mode() & 0o777,
        0o600
    );
}
