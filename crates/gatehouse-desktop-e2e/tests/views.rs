//! The Traffic and Settings views, adding and importing servers, and a tool blocked by a pin
//! change, driven as a person would in the real webview, on the embedded demo.

use std::path::{Path, PathBuf};
use std::process::Command;

use fantoccini::Locator;
use gatehouse_desktop_e2e::{App, Options, built, eventually};
use gatehouse_host::Status;
use gatehouse_host::audit_event::gate::{Admission, PinMismatched, ToolName};
use gatehouse_testkit::audit::payloads_in;
use serde_json::{Value, json};

/// One app at a time: each brings up a display, a WebKit and the demo server.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The text of `css` once it shows, read again if the list re-rendered under it (the
/// Servers view redraws its rows on every change notice).
async fn settled_text(app: &App, css: &str) -> String {
    eventually(&format!("the text of {css}"), || async {
        let element = app.all(css).await.into_iter().next()?;
        element.text().await.ok()
    })
    .await
}

/// Waits until both demo servers were connected at start and admitted.
async fn demo_admitted(app: &App) {
    for name in ["demo", "demo-2025"] {
        app.wait(&format!(
            ".server-row[data-server=\"{name}\"] [data-testid=status][data-status=admitted]"
        ))
        .await;
    }
}

/// Opens `tool` of `server` in the Servers view, fills its arguments, runs it and returns
/// the result text once the call ended.
async fn run_tool(app: &App, server: &str, tool: &str, args: &[(&str, &str)]) -> String {
    app.run_tool(server, tool, args).await;
    let result = "#tool-form [data-testid=tool-result]";
    assert_eq!(
        app.attr(result, "data-is-error").await.as_deref(),
        Some("false")
    );
    app.text(&format!("{result} [data-testid=tool-result-text]"))
        .await
}

/// The names of the servers the list shows, in order (read again if the list re-rendered
/// while being read).
async fn listed(app: &App) -> Vec<String> {
    eventually("the server list", || async {
        let mut names = Vec::new();
        for row in app.all("#server-list .server-row[data-server]").await {
            names.push(row.attr("data-server").await.ok()??);
        }
        Some(names)
    })
    .await
}

/// `servers.json` as the app left it (`None` when it was never written).
fn servers_file(app: &App) -> Option<Value> {
    let bytes = std::fs::read(app.config_dir().join("servers.json")).ok()?;
    Some(serde_json::from_slice(&bytes).expect("servers.json is JSON"))
}

/// One message in the Traffic view.
#[derive(Debug)]
struct Row {
    direction: String,
    server: String,
    message: Value,
    text: String,
}

/// Every message the Traffic view shows now, in order (read again if a change notice
/// re-rendered the list while it was being read).
async fn traffic_rows(app: &App) -> Vec<Row> {
    eventually("the traffic list", || async {
        let mut rows = Vec::new();
        for element in app.all("[data-testid=traffic-row]").await {
            let direction = element.attr("data-direction").await.ok()??;
            let server = element.attr("data-server").await.ok()??;
            let text = element
                .find(Locator::Css("pre"))
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            let message = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("a traffic row is not JSON ({e}): {text}"));
            rows.push(Row {
                direction,
                server,
                message,
                text,
            });
        }
        Some(rows)
    })
    .await
}

/// Picks `value` in a `<select>` as a person would.
async fn choose(app: &App, select: &str, value: &str) {
    app.click(select).await;
    app.click(&format!("{select} option[value=\"{value}\"]"))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn traffic_lists_the_raw_messages_of_a_call_filters_by_server_and_copies_one() {
    let _one = SERIAL.lock().await;
    let app = App::launch(Options::default()).await;
    demo_admitted(&app).await;
    let probe = "traffic probe 7f3a";
    assert_eq!(
        run_tool(&app, "demo", "echo", &[("message", probe)]).await,
        probe
    );

    // The call went out as a tools/call request and its result came back under the same id.
    app.view("traffic").await;
    let rows = eventually("the echo call and its result in Traffic", || async {
        let rows = traffic_rows(&app).await;
        rows.iter()
            .any(|r| r.direction == "in" && r.text.contains(probe))
            .then_some(rows)
    })
    .await;
    let (at, request) = rows
        .iter()
        .enumerate()
        .find(|(_, r)| r.message["method"] == "tools/call")
        .expect("a tools/call request");
    assert_eq!(
        (request.direction.as_str(), request.server.as_str()),
        ("out", "demo")
    );
    assert_eq!(request.message["jsonrpc"], "2.0");
    assert_eq!(request.message["params"]["name"], "echo");
    assert_eq!(request.message["params"]["arguments"]["message"], probe);
    let (answered_at, response) = rows
        .iter()
        .enumerate()
        .find(|(_, r)| r.message["id"] == request.message["id"] && r.direction == "in")
        .expect("the response to the tools/call");
    assert!(answered_at > at, "the result is listed after the request");
    assert_eq!(response.server, "demo");
    assert_eq!(response.message["result"]["content"][0]["text"], probe);
    assert_eq!(response.message["result"]["isError"], false);
    // Both demo servers talked at start: the handshake of each era is listed.
    for (server, handshake) in [("demo", "server/discover"), ("demo-2025", "initialize")] {
        assert!(
            rows.iter().any(|r| r.server == server
                && r.direction == "out"
                && r.message["method"] == handshake),
            "no {handshake} to {server}: {rows:?}"
        );
    }
    app.screenshot("traffic").await;

    // The server filter narrows the list to one server's messages.
    let select = "select[name=traffic-server]";
    choose(&app, select, "demo-2025").await;
    app.wait_gone("[data-testid=traffic-row]:not([data-server=\"demo-2025\"])")
        .await;
    let only = traffic_rows(&app).await;
    assert!(!only.is_empty(), "demo-2025 has traffic");
    assert!(only.iter().all(|r| r.server == "demo-2025"), "{only:?}");
    assert!(
        only.iter().all(|r| !r.text.contains(probe)),
        "the echo call was to demo: {only:?}"
    );
    choose(&app, select, "demo").await;
    app.wait_gone("[data-testid=traffic-row]:not([data-server=\"demo\"])")
        .await;
    let only = eventually("demo's messages", || async {
        let rows = traffic_rows(&app).await;
        rows.iter()
            .any(|r| r.message["method"] == "tools/call")
            .then_some(rows)
    })
    .await;
    assert!(only.iter().all(|r| r.server == "demo"), "{only:?}");
    assert_eq!(
        only.len(),
        rows.iter().filter(|r| r.server == "demo").count(),
        "every message to and from demo, and only those"
    );
    app.screenshot("traffic-server-demo").await;

    // The text filter: the probe is in exactly the request and its result.
    let filter = "input[name=traffic-filter]";
    app.fill(filter, probe).await;
    let matching = eventually("only the probe's messages", || async {
        let rows = traffic_rows(&app).await;
        (rows.len() == 2).then_some(rows)
    })
    .await;
    assert_eq!(matching[0].direction, "out");
    assert_eq!(matching[0].message["method"], "tools/call");
    assert_eq!(matching[1].direction, "in");
    assert_eq!(matching[1].message["id"], matching[0].message["id"]);

    // Copy the request, then paste into the filter: the clipboard holds exactly its text, so
    // the list narrows to that one message.
    let copy = "[data-testid=traffic-row][data-direction=out] [data-action=copy]";
    app.click(copy).await;
    let copied = format!("{copy}[data-copied]");
    let how = app.attr(&copied, "data-copied").await.unwrap_or_default();
    if how == "selected" {
        // No clipboard permission: the UI selected the text and asks for Ctrl+C.
        app.ctrl('c').await;
    } else {
        assert_eq!(how, "clipboard", "the copy reports how it copied");
    }
    app.screenshot("traffic-copied").await;
    app.fill(filter, "").await;
    app.wait("[data-testid=traffic-row][data-direction=in]")
        .await;
    app.ctrl('v').await;
    let pasted = app.value(filter).await;
    assert_eq!(pasted, matching[0].text, "the clipboard holds the message");
    let rows = eventually("only the pasted message", || async {
        let rows = traffic_rows(&app).await;
        (rows.len() == 1).then_some(rows)
    })
    .await;
    assert_eq!(rows[0].message, matching[0].message);
    eprintln!("traffic copy went through: {how}");
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn settings_show_the_demo_bundle_the_posture_and_the_shipped_policy() {
    let _one = SERIAL.lock().await;
    let app = App::launch(Options::default()).await;
    app.view("settings").await;
    let bundle = "[data-testid=bundle][data-bundle=\"DEMO-ONLY-gatehouse-demo\"]";
    app.wait(bundle).await;
    assert_eq!(app.all("[data-testid=bundle]").await.len(), 1);
    assert_eq!(
        app.attr(bundle, "data-source").await.as_deref(),
        Some("demo")
    );
    assert_eq!(
        app.attr(bundle, "data-locked").await.as_deref(),
        Some("false")
    );
    assert!(
        app.all(&format!("{bundle} [data-testid=locked]"))
            .await
            .is_empty(),
        "the demo bundle is not locked"
    );
    let version = format!("{bundle} [data-field=version]");
    assert_eq!(
        app.attr(&version, "data-version").await.as_deref(),
        Some("1")
    );
    assert_eq!(app.text(&version).await, "version 1");
    // Demo mode signs its bundle at start, valid for 30 days.
    let expires = format!("{bundle} [data-field=expires]");
    assert_eq!(
        app.attr(&expires, "data-expired").await.as_deref(),
        Some("false")
    );
    let at = app.attr(&expires, "data-expires").await.expect("expiry");
    let days = app
        .client
        .execute(
            "return (Date.parse(arguments[0]) - Date.now()) / 86400000;",
            vec![at.clone().into()],
        )
        .await
        .expect("days left")
        .as_f64()
        .unwrap_or_else(|| panic!("{at} is not a date"));
    assert!((29.0..=30.0).contains(&days), "{at}: {days} days left");
    assert!(!app.text(&expires).await.trim().is_empty());
    assert!(app.all("[data-testid=bundle-problem]").await.is_empty());
    assert!(
        app.all("[data-testid=audit-warning]").await.is_empty(),
        "a new audit log has nothing to report"
    );
    app.wait("[data-testid=demo-mode]").await;

    let posture = "[data-testid=posture]";
    assert_eq!(
        app.attr(posture, "data-posture").await.as_deref(),
        Some("deny-by-default")
    );
    assert_eq!(app.text(posture).await, "Deny by default");

    assert_eq!(
        app.text("[data-testid=policy-path]").await,
        "built-in default policy"
    );
    let source = "[data-testid=policy-source]";
    assert_eq!(
        app.attr(source, "data-source").await.as_deref(),
        Some("shipped default")
    );
    assert_eq!(app.text(source).await, "shipped default");
    // The shipped policy's audit durability, batched, chosen by the policy (the demo bundle
    // says nothing about it).
    let durability = "[data-testid=audit-durability]";
    assert_eq!(
        app.attr(durability, "data-mode").await.as_deref(),
        Some("batched")
    );
    assert_eq!(
        app.text(durability).await,
        "batched: each record is written before its decision takes effect and on disk within 50 ms or 128 records (set by policy)"
    );

    // The paths are the app's own (the XDG directories it was started with).
    let config = app.config_dir();
    let data = app.data_dir();
    for (testid, path) in [
        ("path-config", config.join("servers.json")),
        ("path-data", data.clone()),
        ("path-audit", data.join("audit.jsonl")),
        ("path-user-trust-roots", config.join("trust-roots")),
    ] {
        assert_eq!(
            app.text(&format!("[data-testid={testid}]")).await,
            path.display().to_string(),
            "{testid}"
        );
    }
    app.screenshot("settings").await;
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn settings_warn_about_a_torn_audit_log_found_at_start() {
    let _one = SERIAL.lock().await;
    // An earlier run crashed mid-write: half a record, no newline, nothing before it.
    let torn = br#"{"seq":1,"time":"2026-05-01T12:00:00Z","event":"admis"#.to_vec();
    let app = App::launch(Options {
        data_files: vec![("audit.jsonl".into(), torn.clone())],
        ..Options::default()
    })
    .await;
    app.view("settings").await;
    let warning = "[data-testid=audit-warning][data-code=audit_torn_tail]";
    app.wait(warning).await;
    assert_eq!(app.all("[data-testid=audit-warning]").await.len(), 1);
    let side = app.data_dir().join("audit.jsonl.torn-1");
    let text = app.text(warning).await;
    assert!(
        text.contains(&side.display().to_string()),
        "names the side file: {text}"
    );
    assert!(
        text.contains("gatehouse audit verify"),
        "says what to do: {text}"
    );
    assert_eq!(std::fs::read(&side).expect("the torn bytes are kept"), torn);
    app.screenshot("settings-audit-warning").await;
    app.close().await;
}

/// Opens the Add server dialog, fills it and saves.
async fn add_server(app: &App, name: &str, command: &str, args: &str) {
    let dialog = "#add-server-dialog[open]";
    if app.all(dialog).await.is_empty() {
        app.click("[data-action=add-server]").await;
        app.wait(dialog).await;
    }
    app.fill(&format!("{dialog} [name=name]"), name).await;
    app.fill(&format!("{dialog} [name=command]"), command).await;
    app.fill(&format!("{dialog} [name=args]"), args).await;
    app.click(&format!("{dialog} [data-action=save]")).await;
}

/// The error the Add server dialog shows, once it shows `code`.
async fn add_error(app: &App, code: &str) -> String {
    app.text(&format!(
        "#add-server-dialog[open] [data-testid=add-server-error][data-code={code}]"
    ))
    .await
}

/// A copy of the demo server in a directory of its own: the same program, but no bundle
/// binds this path.
fn unbound_copy(app: &App) -> PathBuf {
    let dir = app.dirs.path().join("elsewhere");
    std::fs::create_dir_all(&dir).expect("dir");
    let copy = dir.join("gatehouse-demo-server");
    std::fs::copy(app.demo_server(), &copy).expect("copy the demo server");
    copy
}

#[tokio::test(flavor = "multi_thread")]
async fn adding_a_server_lists_it_and_its_verdict_and_bad_input_adds_nothing() {
    let _one = SERIAL.lock().await;
    let app = App::launch(Options::default()).await;
    demo_admitted(&app).await;
    let before = listed(&app).await;
    assert_eq!(before, ["demo", "demo-2025"]);
    let unbound = unbound_copy(&app);
    let unbound = unbound.to_str().expect("UTF-8 path");

    // Bad input: each refused with its reason, the dialog stays open, nothing is added.
    add_server(&app, "", unbound, "").await;
    let error = add_error(&app, "config_invalid").await;
    assert!(error.contains("server name \"\" is not allowed"), "{error}");
    app.screenshot("add-server-invalid-name").await;
    add_server(&app, "demo", unbound, "").await;
    let error = add_error(&app, "server_exists").await;
    assert!(error.contains("\"demo\""), "{error}");
    add_server(&app, "bad/name", unbound, "").await;
    let error = add_error(&app, "config_invalid").await;
    assert!(
        error.contains("server name \"bad/name\" is not allowed"),
        "{error}"
    );
    add_server(&app, "no-command", "", "").await;
    let error = add_error(&app, "server_invalid").await;
    assert!(error.contains("needs a command"), "{error}");
    app.wait("#add-server-dialog[open]").await;
    assert_eq!(listed(&app).await, before);
    assert_eq!(servers_file(&app), None, "nothing written");

    // A program no bundle binds: added, then on connect unattested, never started.
    add_server(&app, "demo-copy", unbound, "").await;
    app.wait_gone("#add-server-dialog[open]").await;
    let notice = app.text("[data-testid=notice]").await;
    assert!(notice.contains("Added demo-copy."), "{notice}");
    let row = ".server-row[data-server=\"demo-copy\"]";
    app.wait(&format!(
        "{row} [data-testid=status][data-status=not_connected]"
    ))
    .await;
    assert_eq!(listed(&app).await, ["demo", "demo-2025", "demo-copy"]);
    let saved = servers_file(&app).expect("servers.json written");
    assert_eq!(
        saved["mcpServers"]["demo-copy"]["command"], unbound,
        "{saved}"
    );
    app.screenshot("add-server-added").await;
    app.settled_click(&format!("{row} [data-action=connect]"))
        .await;
    app.wait(&format!(
        "{row} [data-testid=status][data-status=unattested]"
    ))
    .await;
    let reason = format!("{row} [data-testid=reason][data-code=not_mcp_server]");
    let text = settled_text(&app, &reason).await;
    assert!(
        text.contains("no installed bundle binds the command"),
        "{text}"
    );
    let detail = "[data-testid=server-detail][data-server=\"demo-copy\"]";
    app.wait(&format!("{detail} [data-status=unattested]"))
        .await;
    assert!(app.all(&format!("{detail} [data-tool]")).await.is_empty());
    assert!(
        !app.data_dir().join("logs/demo-copy.stderr.log").exists(),
        "the unattested server was started"
    );
    assert!(
        app.data_dir().join("logs/demo.stderr.log").exists(),
        "the admitted demo server logs there"
    );
    app.screenshot("add-server-unattested").await;

    // The demo's own executable under a new name, but not the command line the demo bundle
    // binds (it binds no arguments): refused.
    let demo = app.demo_server();
    add_server(&app, "demo-args", demo.to_str().unwrap(), "--era both").await;
    app.wait_gone("#add-server-dialog[open]").await;
    let row = ".server-row[data-server=\"demo-args\"]";
    app.settled_click(&format!("{row} [data-action=connect]"))
        .await;
    app.wait(&format!("{row} [data-testid=status][data-status=refused]"))
        .await;
    let text = settled_text(
        &app,
        &format!("{row} [data-testid=reason][data-code=stdio_binding_mismatch]"),
    )
    .await;
    assert!(
        text.contains("the bundle binds the exact command line"),
        "{text}"
    );
    let saved = servers_file(&app).expect("servers.json");
    assert_eq!(
        saved["mcpServers"]["demo-args"]["args"],
        json!(["--era", "both"])
    );
    app.screenshot("add-server-refused").await;
    let admissions: Vec<Admission> = payloads_in(&app.audit());
    for (name, decision) in [
        ("demo-copy", Status::Unattested),
        ("demo-args", Status::Refused),
    ] {
        assert!(
            admissions
                .iter()
                .any(|a| a.name == name && a.status == decision),
            "no {} admission of {name}: {admissions:?}",
            decision.as_str()
        );
    }
    app.close().await;
}

/// The import report, once it is about `file`.
async fn import_report(app: &App, file: &str) -> String {
    let css = "#import-report [data-testid=import-report]";
    eventually(&format!("the import report of {file}"), || async {
        let report = app.all(css).await.pop()?;
        let text = report.text().await.ok()?;
        text.contains(file).then_some(text)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn importing_an_mcp_servers_file_adds_its_servers_and_a_bad_file_changes_nothing() {
    let _one = SERIAL.lock().await;
    let app = App::launch(Options::default()).await;
    demo_admitted(&app).await;
    let unbound = unbound_copy(&app);
    let files = app.dirs.path().join("import");
    std::fs::create_dir_all(&files).unwrap();
    let write = |name: &str, text: &str| -> PathBuf {
        let path = files.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let input = "input[type=file][data-testid=import-file]";

    // A Claude Desktop style file: one stdio and one HTTP server.
    let good = write(
        "claude_desktop_config.json",
        &serde_json::to_string_pretty(&json!({
            "mcpServers": {
                "imported-stdio": {"command": unbound, "args": ["--era", "both"]},
                "imported-http": {"url": "http://127.0.0.1:9/mcp"},
            },
            "globalShortcut": "kept as it is",
        }))
        .unwrap(),
    );
    app.upload(input, &good).await;
    let text = import_report(&app, "claude_desktop_config.json").await;
    assert!(text.contains("Imported 2 of 2"), "{text}");
    let report = "[data-testid=import-report][data-ok=true]";
    for name in ["imported-stdio", "imported-http"] {
        app.wait(&format!("{report} [data-imported=\"{name}\"]"))
            .await;
        app.wait(&format!(
            ".server-row[data-server=\"{name}\"] [data-testid=status][data-status=not_connected]"
        ))
        .await;
    }
    assert_eq!(
        listed(&app).await,
        ["demo", "demo-2025", "imported-http", "imported-stdio"]
    );
    let saved = servers_file(&app).expect("servers.json written");
    assert_eq!(
        saved["mcpServers"]["imported-stdio"]["command"],
        unbound.to_str().unwrap()
    );
    assert_eq!(
        saved["mcpServers"]["imported-http"]["url"],
        "http://127.0.0.1:9/mcp"
    );
    app.screenshot("import-report").await;

    // The same file again: nothing replaced, both reported as skipped.
    let again = write(
        "again.json",
        &std::fs::read_to_string(&good).expect("the first file"),
    );
    app.upload(input, &again).await;
    let text = import_report(&app, "again.json").await;
    assert!(text.contains("Imported 0 of 2"), "{text}");
    for name in ["imported-stdio", "imported-http"] {
        app.wait(&format!("{report} [data-skipped=\"{name}\"]"))
            .await;
    }
    let saved_bytes = std::fs::read(app.config_dir().join("servers.json")).unwrap();
    let listed_before = listed(&app).await;

    // Not JSON: a clear error, nothing changes.
    let broken = write("broken.json", "{\"mcpServers\": {\"half\": {\"command\": ");
    app.upload(input, &broken).await;
    let text = import_report(&app, "broken.json").await;
    let failed = "[data-testid=import-report][data-ok=false][data-code=config_invalid]";
    app.wait(failed).await;
    assert!(text.contains("Could not import broken.json"), "{text}");
    assert!(text.contains("line 1 column"), "{text}");
    app.screenshot("import-malformed").await;

    // One bad entry refuses the whole file: the good entry before it is not imported either.
    let partly = write(
        "partly.json",
        &json!({"mcpServers": {
            "would-be-fine": {"command": unbound},
            "bad/name": {"command": unbound},
        }})
        .to_string(),
    );
    app.upload(input, &partly).await;
    let text = import_report(&app, "partly.json").await;
    app.wait(failed).await;
    assert!(text.contains("bad/name"), "{text}");

    // No servers object at all.
    let other = write("settings.json", "{\"theme\": \"dark\"}");
    app.upload(input, &other).await;
    let text = import_report(&app, "settings.json").await;
    app.wait(failed).await;
    assert!(text.contains("no \"mcpServers\""), "{text}");

    // The app re-lists after every import: still exactly what the first import left.
    app.view("traffic").await;
    app.view("servers").await;
    assert_eq!(listed(&app).await, listed_before);
    assert!(
        app.all(".server-row[data-server=\"would-be-fine\"]")
            .await
            .is_empty()
    );
    assert_eq!(
        std::fs::read(app.config_dir().join("servers.json")).unwrap(),
        saved_bytes,
        "servers.json unchanged"
    );
    app.close().await;
}

/// Runs the `gatehouse` CLI as an admin would, in `dir`.
fn gatehouse(dir: &Path, args: &[&str]) {
    let out = Command::new(built("gatehouse"))
        .args(args)
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .output()
        .expect("gatehouse runs");
    assert!(
        out.status.success(),
        "gatehouse {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sha256_hex(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

/// A user trust-root bundle, made with the `gatehouse` admin commands and test keys, binding
/// `program` (no arguments) as `urn:e2e:pinned` with `echo` and `add` allowed and `echo`
/// pinned to `echo_pin`.
fn pinned_bundle(work: &Path, program: &Path, echo_pin: &str) -> Vec<u8> {
    gatehouse(
        work,
        &["bundle", "keygen", "--out", "keys", "--id", "e2e-root"],
    );
    gatehouse(
        work,
        &["bundle", "keygen", "--out", "keys", "--id", "e2e-signer"],
    );
    let sad = json!({
        "v": "1.0", "id": "urn:e2e:pinned", "publisher": "E2E pins publisher",
        "version": "1", "clearance": "internal", "capabilities": ["mcp-server", "tools"],
    });
    std::fs::write(work.join("sad.json"), sad.to_string()).unwrap();
    gatehouse(
        work,
        &[
            "attest",
            "sign",
            "--key",
            "keys/e2e-signer.key",
            "sad.json",
            "--out",
            "sad.signed.json",
        ],
    );
    gatehouse(
        work,
        &[
            "bundle",
            "init",
            "--bundle-id",
            "e2e-pins",
            "--root-key",
            "keys/e2e-root.pub.json",
            "--signer-key",
            "keys/e2e-signer.pub.json",
            "--out",
            "bundle.json",
        ],
    );
    let path = work.join("bundle.json");
    let mut bundle: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let attestation: Value =
        serde_json::from_slice(&std::fs::read(work.join("sad.signed.json")).unwrap()).unwrap();
    bundle["signed"]["servers"] = json!([{
        "id": "urn:e2e:pinned",
        "stdio": {
            "command": program.display().to_string(),
            "args": [],
            "sha256": sha256_hex(program),
            "attestation": attestation,
        },
        "allowedTools": ["echo", "add"],
        "toolPins": {"echo": echo_pin},
    }]);
    std::fs::write(&path, serde_json::to_vec_pretty(&bundle).unwrap()).unwrap();
    gatehouse(
        work,
        &[
            "bundle",
            "sign",
            "--key",
            "keys/e2e-root.key",
            "bundle.json",
        ],
    );
    gatehouse(work, &["bundle", "verify", "bundle.json"]);
    std::fs::read(&path).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_whose_definition_differs_from_its_pin_is_shown_blocked_with_both_pins() {
    let _one = SERIAL.lock().await;
    // The admin's bundle pins `echo` to a definition other than the one the server sends.
    let work = tempfile::tempdir().expect("temp dir");
    let program = work.path().join("pinned-server");
    std::fs::copy(built("gatehouse-demo-server"), &program).expect("copy the demo server");
    let pinned = format!("sha256:{}", "0".repeat(64));
    let bundle = pinned_bundle(work.path(), &program, &pinned);
    let app = App::launch(Options {
        servers: Some(json!({"mcpServers": {"pinned": {"command": program}}})),
        config_files: vec![("trust-roots/e2e-pins.json".into(), bundle)],
        ..Options::default()
    })
    .await;
    let row = ".server-row[data-server=\"pinned\"]";
    app.wait(&format!("{row} [data-testid=status][data-status=admitted]"))
        .await;
    app.settled_click(&format!("{row} .row-open")).await;
    let detail = "[data-testid=server-detail][data-server=\"pinned\"]";
    let verified = app
        .text(&format!(
            "{detail} [data-testid=identity] [data-field=verified_id]"
        ))
        .await;
    assert_eq!(verified.trim(), "urn:e2e:pinned");

    // echo: blocked, with the reason and the pinned and current pins; add: allowed (listed,
    // not pinned); the rest hidden by the allow-list.
    let echo = format!("{detail} [data-tool=\"echo\"][data-tool-status=blocked]");
    app.wait(&echo).await;
    assert_eq!(
        app.attr(&format!("{echo} [data-testid=reason]"), "data-code")
            .await
            .as_deref(),
        Some("tool_pin_mismatch")
    );
    assert!(
        app.all(&format!("{echo} [data-action=open-tool]"))
            .await
            .is_empty(),
        "a blocked tool cannot be opened"
    );
    app.click(&format!("{echo} details summary")).await;
    let expected = app
        .text(&format!("{echo} [data-testid=pin-expected]"))
        .await;
    let actual = app.text(&format!("{echo} [data-testid=pin-actual]")).await;
    assert_eq!(expected, pinned);
    assert!(
        actual.starts_with("sha256:") && actual.len() == 71 && actual != pinned,
        "{actual}"
    );
    app.wait(&format!(
        "{detail} [data-tool=\"add\"][data-tool-status=allowed] [data-action=open-tool]"
    ))
    .await;
    app.wait(&format!(
        "{detail} [data-tool=\"book_table\"][data-tool-status=hidden]"
    ))
    .await;
    assert!(
        app.all(&format!(
            "{detail} [data-tool=\"echo\"]:not([data-tool-status=blocked])"
        ))
        .await
        .is_empty()
    );
    app.reveal(&echo).await;
    app.screenshot("tool-blocked-by-pin").await;

    // The mismatch is in the audit log with the same pins.
    let mismatch = eventually("a tool_pin_mismatch record", || async {
        payloads_in::<PinMismatched<ToolName>>(&app.audit())
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(mismatch.subject.tool, "echo");
    assert_eq!(mismatch.expected, pinned);
    assert_eq!(mismatch.actual, actual);

    // The user's bundle is listed next to the demo one.
    app.view("settings").await;
    let user = "[data-testid=bundle][data-bundle=\"e2e-pins\"]";
    assert_eq!(app.attr(user, "data-source").await.as_deref(), Some("user"));
    app.wait("[data-testid=bundle][data-bundle=\"DEMO-ONLY-gatehouse-demo\"]")
        .await;
    app.close().await;
}
