//! Confinement end to end (issue 28): the real host, real bubblewrap and the real sandbox init
//! around the demo server's hostile mode (`--escape-attempts`), which on every call tries to
//! read an SSH key and another server's files, write outside its grants, reach a loopback port
//! and a host it was not granted, talk to the session bus, run a shell on `/etc/shadow` and
//! fork without bound, and also does what it was granted.
//!
//! Admitted by a bundle entry granting one directory (write) and one loopback port, every
//! escape fails, the grants work, refused connections are audited (a flood of them bounded)
//! and the server keeps answering. Where the machine cannot confine (bubblewrap replaced by
//! `/bin/false`), `required` refuses the server with `confinement_unavailable` and `preferred`
//! runs it unconfined, saying why. An unattested server in the warn posture is confined with
//! nothing granted.
//!
//! Root note: the tests run as root in CI. Root changes nothing they check: the sandbox's
//! `/etc` holds no `shadow` and new processes are refused by seccomp (not by RLIMIT_NPROC, which
//! the kernel does not apply to root).
//!
//! Needs `cargo build -p gatehouse-demo-server -p gatehouse-sandbox` first (the test kit finds
//! both beside the test's `deps`) and bubblewrap on `PATH`.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read as _, Write as _};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gatehouse_attest::bundle::Posture;
use gatehouse_confine::ConfinementMode;
use gatehouse_host::audit_event::confine::EgressRefused;
use gatehouse_host::audit_event::gate::Admission;
use gatehouse_host::host::{Host, HostOptions};
use gatehouse_host::{
    ConfinementState, ConfinementView, EgressRefusal, ErrorCode, GrantSource, NetworkView,
    SandboxTools, ScriptedConsent, UnconfinedReason,
};
use gatehouse_testkit as kit;
use gatehouse_testkit::bundles;
use serde_json::{Map, Value, json};

const HOSTILE: &str = "hostile";
const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- a test key";
const OTHER_SECRET: &str = "another server's secret";
const PLANTED: &str = "planted in the granted directory";
const SITE_BODY: &str = "hello from the granted site";
/// What the escape tool writes in its granted directory and its home (see the demo server's
/// `server::escape`).
const GRANTED_WRITE_FILE: &str = "written-by-escape.txt";
const HOME_WRITE_FILE: &str = ".escape-was-here";

/// Every attempt that must fail in a sandbox, whatever it was granted.
const MUST_FAIL: [&str; 13] = [
    "read_ssh_key",
    "read_other_server",
    "write_outside",
    "read_via_granted_link",
    "connect_loopback_direct",
    "connect_loopback_via_proxy",
    "resolve_host",
    "connect_host_via_proxy",
    "connect_bus_socket",
    "connect_bus_abstract",
    "shell_read_shadow",
    "read_shadow",
    "fork_bomb",
];

/// A loopback HTTP server answering every request `200 SITE_BODY`, one thread per connection
/// (a CONNECT tunnel that never sends a request must not hold up the next one).
fn granted_site() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{SITE_BODY}",
                    SITE_BODY.len()
                );
                let _ = stream.write_all(answer.as_bytes());
            });
        }
    });
    port
}

/// Listeners no confined server may reach; each only queues connections, so "nobody came"
/// is an empty accept queue.
struct Bait {
    loopback: TcpListener,
    bus: UnixListener,
    bus_path: PathBuf,
    abstract_bus: UnixListener,
    abstract_name: String,
}

impl Bait {
    fn new(dir: &Path) -> Bait {
        use std::os::linux::net::SocketAddrExt as _;
        let loopback = TcpListener::bind("127.0.0.1:0").unwrap();
        let bus_path = dir.join("bus");
        let bus = UnixListener::bind(&bus_path).unwrap();
        // Abstract names are shared by the whole network namespace: unique per test.
        let abstract_name = format!(
            "gatehouse-confinement-{}",
            dir.file_name().unwrap().to_string_lossy()
        );
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        let abstract_bus = UnixListener::bind_addr(&addr).unwrap();
        for nonblocking in [
            loopback.set_nonblocking(true),
            bus.set_nonblocking(true),
            abstract_bus.set_nonblocking(true),
        ] {
            nonblocking.unwrap();
        }
        Bait {
            loopback,
            bus,
            bus_path,
            abstract_bus,
            abstract_name,
        }
    }

    fn port(&self) -> u16 {
        self.loopback.local_addr().unwrap().port()
    }

    /// Which listeners somebody connected to.
    fn reached(&self) -> Vec<&'static str> {
        let waiting = |result: std::io::Result<()>| match result {
            Ok(()) => true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(e) => panic!("accept: {e}"),
        };
        let mut reached = Vec::new();
        if waiting(self.loopback.accept().map(drop)) {
            reached.push("loopback");
        }
        if waiting(self.bus.accept().map(drop)) {
            reached.push("bus");
        }
        if waiting(self.abstract_bus.accept().map(drop)) {
            reached.push("abstract bus");
        }
        reached
    }
}

/// A test's directory: the host's files, the user's home with a planted SSH key and a granted
/// `~/work`, another server's private home with a file in it, a directory outside every grant.
struct World {
    dir: tempfile::TempDir,
    home: PathBuf,
    granted: PathBuf,
    other_file: PathBuf,
    write_path: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let granted = home.join("work");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(&granted).unwrap();
        std::fs::write(home.join(".ssh/id_ed25519"), KEY).unwrap();
        std::fs::write(granted.join("planted.txt"), PLANTED).unwrap();
        // A path the server would accept as inside its grant, leading out of it.
        std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), granted.join("key-link")).unwrap();
        let other_home = kit::host::paths(dir.path()).data.join("sandbox/other/home");
        std::fs::create_dir_all(&other_home).unwrap();
        let other_file = other_home.join("secret.txt");
        std::fs::write(&other_file, OTHER_SECRET).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        let write_path = dir.path().join("outside/escaped.txt");
        World {
            dir,
            home,
            granted,
            other_file,
            write_path,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// servers.json listing the demo server in hostile mode as `name`.
    fn list_hostile(&self, name: &str) {
        kit::host::write_servers(
            self.path(),
            &json!({"mcpServers": {name: {
                "command": kit::demo::command(),
                "args": ["--escape-attempts"],
            }}}),
        );
    }

    /// Installs the test bundle admitting the hostile server with `confinement`, and the
    /// bundle-wide `mode` when given.
    fn admit_hostile(&self, confinement: Value, mode: Option<&str>) {
        let demo = kit::demo::server();
        let digest = gatehouse_host::admission::file_sha256(&demo).unwrap();
        let entry = bundles::confined_stdio_entry(
            "urn:test:hostile",
            &demo.display().to_string(),
            &["--escape-attempts"],
            &hex(&digest),
            &["echo", "escape", "egress_flood"],
            confinement,
        );
        bundles::install(
            &kit::host::paths(self.path()).system_trust_roots,
            &bundles::signed_with_confinement(json!([entry]), mode),
        );
    }

    fn options(&self, sandbox: SandboxTools) -> HostOptions {
        let mut options = kit::host::options(self.path());
        options.home = Some(self.home.clone());
        options.sandbox = sandbox;
        options.connect_timeout = std::time::Duration::from_secs(20);
        options
    }

    fn escape_args(&self, bait: &Bait, site_port: u16) -> Map<String, Value> {
        let Value::Object(args) = json!({
            "ssh_key_path": self.home.join(".ssh/id_ed25519"),
            "other_server_file": self.other_file,
            "write_path": self.write_path,
            "granted_link": self.granted.join("key-link"),
            "granted_dir": self.granted,
            "loopback_port": bait.port(),
            "granted_url_port": site_port,
            "bus_socket": bait.bus_path,
            "bus_abstract": bait.abstract_name,
            "host": "example.com",
        }) else {
            unreachable!("a JSON object")
        };
        args
    }

    fn audit_log(&self) -> PathBuf {
        kit::host::audit_log(self.path())
    }

    fn refusals(&self) -> Vec<EgressRefused> {
        kit::audit::payloads(&self.audit_log())
    }

    fn admissions(&self, name: &str) -> Vec<Admission> {
        kit::audit::payloads::<Admission>(&self.audit_log())
            .into_iter()
            .filter(|a| a.name == name)
            .collect()
    }

    /// The private homes the host made for its servers (`<data>/sandbox/<id>/home`), but the
    /// other server's planted one.
    fn private_homes(&self) -> Vec<PathBuf> {
        let sandboxes = kit::host::paths(self.path()).data.join("sandbox");
        std::fs::read_dir(sandboxes)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_name() != "other")
                    .map(|e| e.path().join("home"))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Every file named `name` under `dir`, for failure messages.
fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            } else if entry.file_name() == name {
                found.push(path);
            }
        }
    }
    found
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn open(options: HostOptions) -> Arc<Host> {
    kit::host::open(options, Arc::new(ScriptedConsent::new(Vec::new())))
}

/// Calls `tool` and parses its text as JSON; panics when the call fails.
async fn call_json(host: &Host, server: &str, tool: &str, args: Map<String, Value>) -> Value {
    let outcome = host
        .call_tool(server, tool, args)
        .await
        .unwrap_or_else(|e| panic!("{tool} on {server}: {e:?}"));
    assert!(!outcome.is_error, "{tool}: {}", outcome.text);
    serde_json::from_str(&outcome.text).unwrap_or_else(|e| panic!("{e}: {}", outcome.text))
}

/// Each attempt by name, as the escape tool reported it.
async fn escape(host: &Host, server: &str, args: Map<String, Value>) -> BTreeMap<String, Value> {
    let report = call_json(host, server, "escape", args).await;
    report
        .as_array()
        .expect("escape reports an array")
        .iter()
        .map(|a| (a["attempt"].as_str().unwrap().to_owned(), a.clone()))
        .collect()
}

async fn echo_answers(host: &Host, server: &str) {
    let mut args = Map::new();
    args.insert("message".into(), json!("still here"));
    let outcome = host.call_tool(server, "echo", args).await.unwrap();
    assert_eq!(
        (outcome.is_error, outcome.text.as_str()),
        (false, "still here")
    );
}

fn assert_failed(got: &BTreeMap<String, Value>, names: &[&str]) {
    for name in names {
        let attempt = &got[*name];
        assert_eq!(attempt["ok"], false, "{name} must fail: {attempt}");
    }
}

async fn view_of(host: &Host, name: &str) -> ConfinementView {
    host.with_verdict(name, |verdict| verdict.confinement.clone())
        .await
        .expect("the server is admitted")
        .expect("a stdio server has a confinement view")
}

#[tokio::test]
async fn an_admitted_hostile_server_can_do_only_what_its_entry_grants() {
    let world = World::new();
    let site_port = granted_site();
    let bait = Bait::new(world.path());
    world.list_hostile(HOSTILE);
    let granted_host = format!("127.0.0.1:{site_port}");
    world.admit_hostile(json!({"write": ["~/work"], "hosts": [granted_host]}), None);
    let host = open(world.options(kit::sandbox::tools()));

    // The view: confined, with exactly the entry's grants.
    let view = view_of(&host, HOSTILE).await;
    assert_eq!(view.state, ConfinementState::Confined, "{view:?}");
    assert_eq!(view.reason, None, "{view:?}");
    assert_eq!(view.mode, ConfinementMode::Preferred);
    assert_eq!(view.write, ["~/work"], "{view:?}");
    assert!(view.read.is_empty(), "{view:?}");
    assert_eq!(
        view.network,
        NetworkView::Hosts {
            hosts: vec![granted_host.clone()]
        }
    );
    assert_eq!(view.processes, 0);
    assert_eq!(view.grants_from, GrantSource::Admission);
    // And the admission record carries the same view.
    let admissions = world.admissions(HOSTILE);
    assert_eq!(admissions.len(), 1);
    assert_eq!(admissions[0].confinement.as_ref(), Some(&view));

    let got = escape(&host, HOSTILE, world.escape_args(&bait, site_port)).await;
    assert_failed(&got, &MUST_FAIL);
    assert_eq!(got["fork_bomb"]["started"], 0, "{}", got["fork_bomb"]);
    // What it was granted works.
    for name in [
        "read_granted",
        "write_granted",
        "write_home",
        "write_tmp",
        "get_granted_via_proxy",
    ] {
        assert_eq!(got[name]["ok"], true, "{name} must work: {}", got[name]);
    }
    assert_eq!(got["read_granted"]["detail"], PLANTED);
    assert_eq!(got["get_granted_via_proxy"]["detail"], SITE_BODY);
    // Its writes landed only where granted: the granted directory, its private home.
    assert!(world.granted.join(GRANTED_WRITE_FILE).is_file());
    assert!(!world.write_path.exists());
    assert!(!world.home.join(HOME_WRITE_FILE).exists());
    let homes = world.private_homes();
    assert!(
        homes.iter().any(|h| h.join(HOME_WRITE_FILE).is_file()),
        "the home write went to a private home {homes:?}; it is at {:?}",
        find(&kit::host::paths(world.path()).data, HOME_WRITE_FILE)
    );
    assert_eq!(bait.reached(), Vec::<&str>::new());

    // The proxy refused the two ungranted targets, and the audit log says so.
    let refusals = world.refusals();
    let targets: Vec<(String, u16, &str, EgressRefusal)> = refusals
        .iter()
        .map(|r| (r.host.clone(), r.port, r.name.as_str(), r.reason))
        .collect();
    let not_granted = EgressRefusal::NotGranted;
    assert!(
        targets.contains(&("127.0.0.1".into(), bait.port(), HOSTILE, not_granted)),
        "{targets:?}"
    );
    assert!(
        targets.contains(&("example.com".into(), 443, HOSTILE, not_granted)),
        "{targets:?}"
    );
    assert!(!targets.iter().any(|t| t.1 == site_port), "{targets:?}");

    // A flood of refusals: all refused, at most a window's worth recorded.
    let mut flood = Map::new();
    flood.insert("count".into(), json!(200));
    flood.insert("port".into(), json!(bait.port()));
    let report = call_json(&host, HOSTILE, "egress_flood", flood).await;
    assert_eq!(
        (
            &report["refused"],
            &report["established"],
            &report["failed"]
        ),
        (&json!(200), &json!(0), &json!(0)),
        "{report}"
    );
    let recorded = world.refusals();
    assert!(
        recorded.len() <= 20 && recorded.len() >= refusals.len(),
        "{} records",
        recorded.len()
    );
    // The proxy still works for the granted host, and the server still answers.
    let mut granted = Map::new();
    granted.insert("count".into(), json!(1));
    granted.insert("port".into(), json!(site_port));
    let report = call_json(&host, HOSTILE, "egress_flood", granted).await;
    assert_eq!(report["established"], 1, "{report}");
    echo_answers(&host, HOSTILE).await;
    assert_eq!(bait.reached(), Vec::<&str>::new());

    // Once the server is gone, every refusal is accounted for: recorded, or counted in a
    // later record's `suppressed_before`.
    host.shutdown().await;
    let all = world.refusals();
    assert!(all.len() <= 21, "{} records", all.len());
    let named = all.iter().filter(|r| r.port != 0).count() as u64;
    let suppressed: u64 = all.iter().map(|r| u64::from(r.suppressed_before)).sum();
    assert_eq!(named + suppressed, 202, "{all:?}");
}

/// A policy file with `[confinement] mode = "required"`.
fn required_policy(dir: &Path) -> PathBuf {
    let shipped = gatehouse_policy::policy::DEFAULT_POLICY_TOML;
    let required = shipped.replace("mode = \"preferred\"", "mode = \"required\"");
    assert_ne!(required, shipped, "the shipped policy names the mode");
    let path = dir.join("policy.toml");
    std::fs::write(&path, required).unwrap();
    path
}

#[tokio::test]
async fn required_on_a_machine_that_cannot_confine_refuses_the_server() {
    // Required by the policy, then by the bundle: either way the strictest wins.
    for by_policy in [true, false] {
        let world = World::new();
        world.list_hostile(HOSTILE);
        world.admit_hostile(
            json!({"write": ["~/work"]}),
            (!by_policy).then_some("required"),
        );
        let mut options = world.options(kit::sandbox::broken_tools());
        if by_policy {
            options.policy = Some(required_policy(world.path()));
        }
        let host = open(options);

        let mut args = Map::new();
        args.insert("message".into(), json!("hello"));
        let error = host.call_tool(HOSTILE, "echo", args).await.unwrap_err();
        assert_eq!(
            error.code,
            ErrorCode::ConfinementUnavailable,
            "policy {by_policy}: {error:?}"
        );
        let admissions = world.admissions(HOSTILE);
        let refused = admissions.last().expect("an admission record");
        assert!(!refused.proceeds, "{refused:?}");
        assert_eq!(refused.reason, Some(ErrorCode::ConfinementUnavailable));
        let view = refused.confinement.as_ref().expect("the record's view");
        assert_eq!(view.state, ConfinementState::Unconfined, "{view:?}");
        assert_eq!(view.mode, ConfinementMode::Required, "{view:?}");
        assert_eq!(
            view.reason,
            Some(UnconfinedReason::SelfCheckFailed),
            "{view:?}"
        );
        let set_by = if by_policy { "policy" } else { "test-bundle@1" };
        assert!(view.mode_set_by.iter().any(|s| s == set_by), "{view:?}");
        // The server never started: nothing of it wrote its private home.
        assert!(
            world
                .private_homes()
                .iter()
                .all(|h| !h.join(HOME_WRITE_FILE).exists())
        );
        host.shutdown().await;
    }
}

#[tokio::test]
async fn preferred_on_a_machine_that_cannot_confine_runs_unconfined_and_says_why() {
    let world = World::new();
    let site_port = granted_site();
    let bait = Bait::new(world.path());
    world.list_hostile(HOSTILE);
    world.admit_hostile(json!({"write": ["~/work"]}), None);
    let host = open(world.options(kit::sandbox::broken_tools()));

    echo_answers(&host, HOSTILE).await;
    // Unconfined, the same attempts that fail in a sandbox succeed: the fixture really tries.
    // (With a host that resolves without the network, and a short fork bomb.)
    let mut args = world.escape_args(&bait, site_port);
    args.insert("host".into(), json!("localhost"));
    args.insert("fork_attempts".into(), json!(3));
    // Unconfined, its home and temp directory are the user's own: leave them alone.
    args.insert("write_own_dirs".into(), json!(false));
    let got = escape(&host, HOSTILE, args).await;
    for name in [
        "read_ssh_key",
        "read_other_server",
        "write_outside",
        "read_via_granted_link",
        "connect_loopback_direct",
        "connect_bus_socket",
        "connect_bus_abstract",
        "resolve_host",
        "fork_bomb",
    ] {
        assert_eq!(
            got[name]["ok"], true,
            "{name} works unconfined: {}",
            got[name]
        );
    }
    assert_eq!(got["read_ssh_key"]["detail"], KEY);
    assert_eq!(got["read_via_granted_link"]["detail"], KEY);
    assert_eq!(got["read_other_server"]["detail"], OTHER_SECRET);
    assert_eq!(got["fork_bomb"]["started"], 3);
    assert!(world.write_path.is_file());
    assert_eq!(bait.reached(), ["loopback", "bus", "abstract bus"]);

    let view = view_of(&host, HOSTILE).await;
    assert_eq!(view.state, ConfinementState::Unconfined, "{view:?}");
    assert_eq!(view.mode, ConfinementMode::Preferred);
    assert_eq!(
        view.reason,
        Some(UnconfinedReason::SelfCheckFailed),
        "{view:?}"
    );
    assert!(!view.detail.is_empty(), "{view:?}");
    let admissions = world.admissions(HOSTILE);
    let admitted = admissions.last().expect("an admission record");
    assert!(admitted.proceeds, "{admitted:?}");
    assert_eq!(admitted.confinement.as_ref(), Some(&view));
    host.shutdown().await;
}

#[tokio::test]
async fn an_unattested_server_in_the_warn_posture_is_confined_with_nothing_granted() {
    let world = World::new();
    let site_port = granted_site();
    let bait = Bait::new(world.path());
    world.list_hostile("local");
    let mut options = world.options(kit::sandbox::tools());
    options.posture_override = Some(Posture::Warn);
    let host = open(options);
    // The person approves its tools (the warn posture asks that of every unattested server).
    host.approve_tools("local", &[])
        .await
        .expect("tools approved");

    let view = view_of(&host, "local").await;
    assert_eq!(view.state, ConfinementState::Confined, "{view:?}");
    assert_eq!(view.grants_from, GrantSource::Default, "{view:?}");
    assert!(view.read.is_empty() && view.write.is_empty(), "{view:?}");
    assert_eq!(view.network, NetworkView::None);
    assert_eq!(view.processes, 0);

    let got = escape(&host, "local", world.escape_args(&bait, site_port)).await;
    assert_failed(&got, &MUST_FAIL);
    // Nothing granted: not even the directory or the site it may use when admitted.
    assert_failed(
        &got,
        &["read_granted", "write_granted", "get_granted_via_proxy"],
    );
    assert_eq!(got["fork_bomb"]["started"], 0);
    assert_eq!(got["write_home"]["ok"], true, "{}", got["write_home"]);
    assert!(!world.granted.join(GRANTED_WRITE_FILE).exists());
    assert!(!world.write_path.exists());
    assert!(!world.home.join(HOME_WRITE_FILE).exists());
    assert_eq!(bait.reached(), Vec::<&str>::new());
    // No proxy, so nothing to refuse: the sandbox has no way out at all.
    assert!(world.refusals().is_empty());
    echo_answers(&host, "local").await;
    host.shutdown().await;
}
