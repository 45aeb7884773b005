//! The window's side of issue 25 on a real host: Claude Code's config in a temporary home is
//! connected through Gatehouse with one call (its `npx` server imported, its file backed up and
//! rewritten), the server it brought is listed as one the person can pin, the plan shows the
//! package, closure and every tool's definition, and the Pin writes the person's own bundle,
//! after which the server is admitted, pinned by you. Restore puts the file back byte for byte.
//! A locked admin bundle refuses the pin. The registry is a mirror of the install step's seed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gatehouse_attest::bundle::Posture;
use gatehouse_desk::{
    BroughtState, ClientFileRow, ClientId, ClientScope, ClientSetup, Desk, DeskOptions,
    PackageState, RowStatus,
};
use gatehouse_host::{ErrorCode, MemoryStore, system_clock};
use gatehouse_testkit::bundles;
use gatehouse_testkit::mirror::Mirror;
use serde_json::{Value, json};

const FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn seed() -> PathBuf {
    let seed = repo().join("target/package-seed");
    assert!(
        seed.join("npm").join(FILESYSTEM).is_dir(),
        "{} is missing: run scripts/install-deps.sh (it fetches the test packages)",
        seed.display()
    );
    seed
}

struct Person {
    dir: tempfile::TempDir,
    desk: Arc<Desk>,
    home: PathBuf,
    docs: PathBuf,
    _mirror: Mirror,
}

impl Person {
    /// A person with Claude Code configured to run the filesystem server on a directory of
    /// theirs, and (when `locked`) an admin's locked bundle.
    fn new(locked: bool) -> Person {
        let dir = tempfile::tempdir().unwrap();
        let mirror = Mirror::start(seed());
        let sources = dir.path().join("package-sources.json");
        std::fs::write(
            &sources,
            json!({"npmRegistry": mirror.npm_url()}).to_string(),
        )
        .unwrap();
        let home = dir.path().join("home");
        let docs = home.join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("note.txt"), "mine").unwrap();
        std::fs::write(
            home.join(".claude.json"),
            json!({"numStartups": 3, "mcpServers": {"files": {"type": "stdio", "command": "npx",
                "args": ["-y", FILESYSTEM, docs.display().to_string()], "env": {}}}})
            .to_string(),
        )
        .unwrap();
        let mut paths = gatehouse_testkit::host::paths(dir.path());
        paths.user_trust_roots = Some(dir.path().join("config/trust-roots"));
        if locked {
            let mut signed = bundles::signed(json!([]));
            signed["locked"] = json!(true);
            bundles::install(&paths.system_trust_roots, &signed);
        }
        let mut options = DeskOptions::new(paths, system_clock());
        options.posture_override = Some(Posture::DenyByDefault);
        options.package_sources = Some(sources);
        options.home = Some(home.clone());
        let desk = Desk::open(options, Arc::new(MemoryStore::default()), Arc::new(|_| {}))
            .expect("the desk opens");
        desk.set_client_setup(ClientSetup {
            home: home.clone(),
            config_dir: home.join(".config"),
            gatehouse: Ok(dir.path().join("bin/gatehouse")),
        });
        Person {
            dir,
            desk,
            home,
            docs,
            _mirror: mirror,
        }
    }

    fn claude_file(&self) -> PathBuf {
        self.home.join(".claude.json")
    }

    fn own_bundle(&self) -> PathBuf {
        self.dir
            .path()
            .join("config/trust-roots/pinned-by-you.json")
    }

    async fn claude_code(&self) -> ClientFileRow {
        self.desk
            .client_files()
            .await
            .unwrap()
            .into_iter()
            .find(|row| row.client == ClientId::ClaudeCode)
            .expect("Claude Code's user file is listed")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connected_clients_npx_server_is_pinned_from_the_window_and_then_admitted() {
    let person = Person::new(false);
    let original = std::fs::read(person.claude_file()).unwrap();

    // Listed, installed, not connected; project files are not offered.
    let rows = person.desk.client_files().await.unwrap();
    assert!(
        rows.iter().all(|row| row.scope != ClientScope::Project),
        "{rows:?}"
    );
    let row = person.claude_code().await;
    assert!(row.exists && !row.connected && row.can_connect && !row.can_restore);
    assert_eq!(row.servers, Some(1));
    assert!(row.brought.is_empty());

    // Connect: imported, backed up, rewritten; the server it brought can be pinned, and
    // deny-by-default refused it as it stands (unbound), with the reason.
    let connected = person
        .desk
        .client_connect(ClientId::ClaudeCode)
        .await
        .unwrap();
    assert!(connected.row.connected && !connected.row.can_connect && connected.row.can_restore);
    let brought = &connected.row.brought;
    assert_eq!(brought.len(), 1, "{brought:?}");
    assert_eq!(brought[0].name, "files");
    assert_eq!(brought[0].state, BroughtState::CanBePinned);
    assert_eq!(brought[0].package, Some(PackageState::CanBePinned));
    let row = brought[0].row.as_ref().expect("files is in servers.json");
    assert_ne!(row.status, RowStatus::Admitted, "{row:?}");
    assert!(row.reason.is_some(), "{row:?}");
    let rewritten: Value =
        serde_json::from_slice(&std::fs::read(person.claude_file()).unwrap()).unwrap();
    assert_eq!(rewritten["numStartups"], 3);
    assert_eq!(
        rewritten["mcpServers"]["gatehouse"]["args"],
        json!(["serve", "--client", "claude_code"]),
        "{rewritten}"
    );
    // A second Connect is refused, and changes nothing.
    let again = person
        .desk
        .client_connect(ClientId::ClaudeCode)
        .await
        .unwrap_err();
    assert_eq!(again.code, ErrorCode::ClientAlreadyConnected, "{again:?}");

    // The plan: package, version, closure, and every tool with its whole definition as data.
    let plan = person.desk.pin_plan("files").await.unwrap();
    assert_eq!(plan.package, FILESYSTEM);
    assert_eq!(plan.version, "2026.8.31");
    assert!(plan.closure > 50, "{}", plan.closure);
    assert!(plan.files >= plan.closure, "{} files", plan.files);
    assert!(
        plan.user_args.is_some(),
        "the docs directory is the person's own argument"
    );
    let listing = plan
        .tools
        .iter()
        .find(|tool| tool.name == "list_allowed_directories")
        .expect("the plan lists list_allowed_directories");
    assert!(listing.definition["inputSchema"].is_object(), "{listing:?}");
    assert!(listing.description.is_some(), "{listing:?}");
    let as_window_gets_it = serde_json::to_value(&plan).unwrap();
    assert!(as_window_gets_it["tools"][0]["definition"].is_object());
    assert_eq!(as_window_gets_it["ecosystem"], "npm");
    // Planning changed nothing of the person's.
    assert!(!person.own_bundle().exists());

    // Pin: the person's bundle is written and the server admitted from the store.
    let pinned = person.desk.pin_server("files").await.unwrap();
    assert_eq!(pinned.bundle, "pinned-by-you@1", "{pinned:?}");
    assert!(pinned.tools.iter().any(|t| t == "list_allowed_directories"));
    assert_eq!(pinned.package_state, Some(PackageState::PinnedByYou));
    let row = pinned.row.as_ref().expect("files is listed");
    assert_eq!(row.status, RowStatus::Admitted, "{row:?}");
    assert!(person.own_bundle().is_file());
    let row = person.claude_code().await;
    assert_eq!(row.brought[0].state, BroughtState::PinnedByYou, "{row:?}");

    // Its tools work through the gate, on the person's own directory.
    let outcome = person
        .desk
        .call_tool("files", "list_allowed_directories", Default::default())
        .await
        .unwrap();
    let canonical = std::fs::canonicalize(&person.docs).unwrap();
    assert!(
        outcome.text.contains(&canonical.display().to_string()),
        "{}",
        outcome.text
    );

    // Restore: the file as it was, byte for byte; the server stays in servers.json.
    let restored = person
        .desk
        .client_restore(ClientId::ClaudeCode, false)
        .await
        .unwrap();
    assert_eq!(restored.kept_in_servers, vec!["files".to_string()]);
    assert!(
        !restored.row.connected && !restored.row.can_restore && restored.row.brought.is_empty()
    );
    assert_eq!(std::fs::read(person.claude_file()).unwrap(), original);
    let missing = person
        .desk
        .client_restore(ClientId::ClaudeCode, false)
        .await
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::ClientBackupMissing, "{missing:?}");
    person.desk.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_after_the_client_changed_its_file_needs_force() {
    let person = Person::new(false);
    let original = std::fs::read(person.claude_file()).unwrap();
    person
        .desk
        .client_connect(ClientId::ClaudeCode)
        .await
        .unwrap();
    let mut now: Value =
        serde_json::from_slice(&std::fs::read(person.claude_file()).unwrap()).unwrap();
    now["numStartups"] = json!(4);
    std::fs::write(person.claude_file(), now.to_string()).unwrap();
    let refused = person
        .desk
        .client_restore(ClientId::ClaudeCode, false)
        .await
        .unwrap_err();
    assert_eq!(
        refused.code,
        ErrorCode::ClientChangedSinceConnect,
        "{refused:?}"
    );
    assert!(refused.refusal);
    assert!(person.claude_code().await.can_restore);
    let forced = person
        .desk
        .client_restore(ClientId::ClaudeCode, true)
        .await
        .unwrap();
    assert_eq!(forced.changed, vec!["changed numStartups".to_string()]);
    assert_eq!(std::fs::read(person.claude_file()).unwrap(), original);
    person.desk.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_admin_bundle_refuses_the_pin_and_says_ask_your_admin() {
    let person = Person::new(true);
    let connected = person
        .desk
        .client_connect(ClientId::ClaudeCode)
        .await
        .unwrap();
    assert_eq!(
        connected.row.brought[0].state,
        BroughtState::AskYourAdmin,
        "{connected:?}"
    );
    let plan = person.desk.pin_plan("files").await.unwrap_err();
    assert_eq!(plan.code, ErrorCode::LockedByAdmin, "{plan:?}");
    let pin = person.desk.pin_server("files").await.unwrap_err();
    assert_eq!(pin.code, ErrorCode::LockedByAdmin, "{pin:?}");
    assert!(pin.message.contains("ask your admin"), "{}", pin.message);
    assert!(!person.own_bundle().exists());
    person.desk.shutdown().await;
}

#[tokio::test]
async fn without_a_gatehouse_command_line_connect_changes_nothing_and_says_what_to_install() {
    let person = Person::new(false);
    let original = std::fs::read(person.claude_file()).unwrap();
    person.desk.set_client_setup(ClientSetup {
        home: person.home.clone(),
        config_dir: person.home.join(".config"),
        gatehouse: Err("no gatehouse: install it".into()),
    });
    let error = person
        .desk
        .client_connect(ClientId::ClaudeCode)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::SpawnFailed, "{error:?}");
    assert!(error.message.contains("install it"), "{}", error.message);
    assert_eq!(std::fs::read(person.claude_file()).unwrap(), original);
    assert!(!person.claude_code().await.backup);
    // With one, a client that is not installed cannot be connected either.
    person.desk.set_client_setup(ClientSetup {
        home: person.home.clone(),
        config_dir: person.home.join(".config"),
        gatehouse: Ok(person.dir.path().join("bin/gatehouse")),
    });
    let cursor = person
        .desk
        .client_connect(ClientId::Cursor)
        .await
        .unwrap_err();
    assert_eq!(cursor.code, ErrorCode::ClientConfigMissing, "{cursor:?}");
    person.desk.shutdown().await;
}
