//! Real registry servers, admitted and confined (issue 28), through the real `gatehouse`
//! binary: an admin authors one bundle with `bundle add-server` (`--confinement required`, so a
//! machine that cannot confine fails these tests instead of quietly running the servers
//! unconfined), signs and installs it; the user's Claude-Desktop-shaped config says `npx -y …`
//! and `uvx …`; the servers run from the store inside bubblewrap with our init
//! (`gatehouse-sandbox-init`, built beside `gatehouse`), the install step's seed being the only
//! package source.
//!
//! - `@modelcontextprotocol/server-filesystem`, granted one user directory by its binding's
//!   user-argument rule (read-write): its tools work inside it; a secret file elsewhere in the
//!   user's home never comes back, neither by its own path nor through a symlink planted inside
//!   the granted directory; a read-only grant is enforced by the mount even though the server
//!   itself would write.
//! - `mcp-server-fetch`, granted one loopback test site (`--host 127.0.0.1:PORT`): fetching it
//!   works (through the per-server proxy its `HTTP_PROXY` names); another loopback port is
//!   refused by the proxy, never reached, and audited as `egress_refused`.

mod common;

use common::packages::{FILESYSTEM, VERSION, node_dir, seed};

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::{Env, repo};
use gatehouse_host::EgressRefusal;
use gatehouse_host::audit_event::confine::EgressRefused;
use gatehouse_testkit::audit::payloads_in;
use serde_json::{Value, json};

const FETCH: &str = "mcp-server-fetch";
const FETCH_VERSION: &str = "2026.10.24";

/// `gatehouse-sandbox-init` in the target directory the running test was built into
/// (`target/<profile>/deps/<test>-…` → `target/<profile>/gatehouse-sandbox-init`).
fn sandbox_init() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let init = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test runs from target/<profile>/deps")
        .join("gatehouse-sandbox-init");
    assert!(
        init.is_file(),
        "{} is missing: build it with `cargo build -p gatehouse-sandbox`",
        init.display()
    );
    init
}

/// One machine: a temporary home, the seed as the only package source, the real python3 and
/// the pinned Node on PATH (no npx, no uvx), bubblewrap from the system and our init.
struct Machine {
    env: Env,
    sources: PathBuf,
    bin: PathBuf,
    keys: PathBuf,
    bundle: PathBuf,
    init: PathBuf,
    /// Every stdout and stderr the CLI printed, for the assertion that a secret never leaked.
    printed: Mutex<String>,
}

impl Machine {
    fn new() -> Machine {
        common::require_tools(&["bwrap"]);
        let env = Env::new();
        let sources = env.dir.path().join("package-sources.json");
        std::fs::write(
            &sources,
            json!({"seed": [seed()], "network": false}).to_string(),
        )
        .unwrap();
        // python3 first on PATH is the real interpreter (not a version manager's shim).
        let bin = env.dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(common::python3(), bin.join("python3")).unwrap();
        let keys = env.dir.path().join("keys");
        let bundle = env.dir.path().join("acme.json");
        let machine = Machine {
            env,
            sources,
            bin,
            keys,
            bundle,
            init: sandbox_init(),
            printed: Mutex::new(String::new()),
        };
        machine.author();
        machine
    }

    fn home(&self) -> &Path {
        self.env.dir.path()
    }

    fn run(&self, args: &[&str]) -> (i32, Value) {
        common::json_of(
            |all| {
                let mut cmd = self.env.cmd(all);
                cmd.env(
                    "PATH",
                    format!(
                        "{}:{}:/usr/bin:/bin",
                        self.bin.display(),
                        node_dir().display()
                    ),
                )
                .env("GATEHOUSE_PACKAGE_SOURCES", &self.sources)
                .env("GATEHOUSE_SANDBOX_INIT", &self.init)
                .env("GATEHOUSE_POSTURE", "deny-by-default");
                let (code, stdout, stderr) = common::output_of(cmd);
                let mut printed = self.printed.lock().unwrap();
                printed.push_str(&stdout);
                printed.push_str(&stderr);
                (code, stdout, stderr)
            },
            args,
        )
    }

    fn ok(&self, args: &[&str]) -> Value {
        let (code, out) = self.run(args);
        assert_eq!(code, 0, "{args:?}: {out}");
        out
    }

    fn key(&self, name: &str) -> String {
        self.keys.join(name).display().to_string()
    }

    /// Keys and an empty bundle.
    fn author(&self) {
        let keys = self.keys.display().to_string();
        for id in ["root", "signer"] {
            self.ok(&["bundle", "keygen", "--out", &keys, "--id", id]);
        }
        self.ok(&[
            "bundle",
            "init",
            "--bundle-id",
            "acme",
            "--root-key",
            &self.key("root.pub.json"),
            "--signer-key",
            &self.key("signer.pub.json"),
            "--out",
            self.bundle.to_str().unwrap(),
        ]);
    }

    /// `bundle add-server BUNDLE --id ID --clearance internal --signer-key … ARGS…`.
    fn add_server(&self, id: &str, args: &[&str]) -> Value {
        let signer = self.key("signer.key");
        let mut all = vec![
            "bundle",
            "add-server",
            self.bundle.to_str().unwrap(),
            "--id",
            id,
            "--clearance",
            "internal",
            "--signer-key",
            &signer,
        ];
        all.extend_from_slice(args);
        self.ok(&all)
    }

    fn sign_and_install(&self) {
        let bundle = self.bundle.to_str().unwrap();
        let written: Value = serde_json::from_slice(&std::fs::read(bundle).unwrap()).unwrap();
        assert_eq!(written["signed"]["specVersion"], 7, "{written}");
        self.ok(&["bundle", "sign", "--key", &self.key("root.key"), bundle]);
        self.ok(&["bundle", "install", bundle]);
    }

    /// servers.json as Claude Desktop writes it.
    fn configure(&self, name: &str, command: &str, args: &[&str]) {
        let config = json!({"mcpServers": {name: {"command": command, "args": args}}});
        std::fs::write(self.env.config(), config.to_string()).unwrap();
    }

    /// `servers list --json`'s confinement of the server `name`.
    fn confinement(&self, name: &str) -> Value {
        let out = self.ok(&["servers", "list"]);
        let server = out["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no server {name}: {out}"))
            .clone();
        assert_eq!(server["admission"]["status"], "admitted", "{server}");
        server["confinement"].clone()
    }

    /// `call NAME TOOL --args ARGS`: the exit code and the tool's result.
    fn call(&self, name: &str, tool: &str, args: Value) -> (i32, Value) {
        self.run(&["call", name, tool, "--args", &args.to_string()])
    }

    fn printed(&self) -> String {
        self.printed.lock().unwrap().clone()
    }
}

/// The text of a `call --json` output's result (all its text blocks).
fn text_of(out: &Value) -> String {
    out["result"]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Whether a confinement view's path list (shown as "~/…" under home, or absolute) names `dir`.
fn names_dir(paths: &Value, home: &Path, dir: &Path) -> bool {
    let tilde = format!("~/{}", dir.strip_prefix(home).unwrap_or(dir).display());
    paths
        .as_array()
        .is_some_and(|all| all.iter().any(|p| p == &json!(tilde) || p == &json!(dir)))
}

// --- server-filesystem ------------------------------------------------------------------------

const SECRET: &str = "gatehouse-secret-7f3c9a1e-do-not-leak";

/// The filesystem server bound as a package, its directory argument granted by the rule
/// `existing_directory_under_home:ACCESS`, with the tools the tests call.
fn bind_filesystem(machine: &Machine, access: &str) {
    let lockfile = repo().join("tests/packages/npm/server-filesystem/package-lock.json");
    let user_arg = format!("--user-arg=existing_directory_under_home:{access}:1:4");
    let npm = format!("--npm={FILESYSTEM}@{VERSION}");
    let lockfile = format!("--lockfile={}", lockfile.display());
    let out = machine.add_server(
        "urn:acme:filesystem",
        &[
            &npm,
            &lockfile,
            &user_arg,
            "--confinement",
            "required",
            "--tool",
            "list_allowed_directories",
            "--tool",
            "read_text_file",
            "--tool",
            "write_file",
        ],
    );
    assert!(out["closure"].as_u64().unwrap() > 50, "{out}");
    machine.sign_and_install();
}

/// A directory under the test home for the server, and a secret beside it (and in `~/.ssh`).
fn plant(machine: &Machine) -> (PathBuf, PathBuf) {
    let home = machine.home();
    let docs = home.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("note.txt"), "inside the grant").unwrap();
    let secret = home.join("secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), SECRET).unwrap();
    (std::fs::canonicalize(docs).unwrap(), secret)
}

#[test]
fn server_filesystem_confined_to_its_directory_works_there_and_cannot_reach_a_secret_beside_it() {
    let machine = Machine::new();
    bind_filesystem(&machine, "read_write");
    let (docs, secret) = plant(&machine);
    let docs_arg = docs.display().to_string();
    machine.configure(
        "files",
        "npx",
        &["-y", &format!("{FILESYSTEM}@{VERSION}"), &docs_arg],
    );

    // Confined, and what it may write is exactly the directory its argument names.
    let view = machine.confinement("files");
    assert_eq!(view["state"], "confined", "{view}");
    assert!(names_dir(&view["write"], machine.home(), &docs), "{view}");
    assert_eq!(view["network"]["kind"], "none", "{view}");
    assert_eq!(view["grants_from"], "admission", "{view}");

    // Its tools work inside the grant, and the writes land in the user's real directory.
    let made = docs.join("made.txt");
    let (code, out) = machine.call(
        "files",
        "write_file",
        json!({"path": made, "content": "written from inside"}),
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read_to_string(&made).unwrap(),
        "written from inside"
    );
    let (code, out) = machine.call("files", "read_text_file", json!({"path": made}));
    assert_eq!(code, 0, "{out}");
    assert!(text_of(&out).contains("written from inside"), "{out}");
    let (code, out) = machine.call(
        "files",
        "read_text_file",
        json!({"path": docs.join("note.txt")}),
    );
    assert_eq!(code, 0, "{out}");
    assert!(text_of(&out).contains("inside the grant"), "{out}");

    // The secret by its own absolute path, and through a symlink planted inside the grant.
    let link = docs.join("peek.txt");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let ssh_link = docs.join("key");
    std::os::unix::fs::symlink(machine.home().join(".ssh/id_ed25519"), &ssh_link).unwrap();
    for path in [&secret, &link, &ssh_link] {
        let (_, out) = machine.call("files", "read_text_file", json!({"path": path}));
        assert_eq!(out["is_error"], true, "{path:?}: {out}");
        assert!(!out.to_string().contains(SECRET), "{path:?}: {out}");
        // The server itself refuses a link whose real path it can see outside its directory
        // ("symlink target outside allowed directories"). Confined, the links' targets do not
        // exist at all (the home inside is a private one): the process cannot even resolve
        // them, so the mount, not only the server's own check, keeps the secret out.
        if path != &secret {
            assert!(
                !text_of(&out).contains("symlink target outside allowed directories"),
                "the server resolved the link's target, so the process could see it: {out}"
            );
        }
    }

    // The server still answers, and still lists its directory.
    let (code, out) = machine.call("files", "list_allowed_directories", json!({}));
    assert_eq!(code, 0, "{out}");
    assert!(text_of(&out).contains(&docs_arg), "{out}");

    assert!(
        !machine.printed().contains(SECRET),
        "the secret appeared in the CLI's output"
    );
    let logs = std::fs::read_dir(machine.env.logs())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert!(
        !logs.contains(SECRET),
        "the secret appeared in a server log"
    );
}

#[test]
fn a_read_only_grant_is_enforced_by_the_mount_although_the_server_itself_would_write() {
    let machine = Machine::new();
    bind_filesystem(&machine, "read_only");
    let (docs, _) = plant(&machine);
    let docs_arg = docs.display().to_string();
    machine.configure(
        "files",
        "npx",
        &["-y", &format!("{FILESYSTEM}@{VERSION}"), &docs_arg],
    );
    let view = machine.confinement("files");
    assert_eq!(view["state"], "confined", "{view}");
    assert!(names_dir(&view["read"], machine.home(), &docs), "{view}");
    assert!(!names_dir(&view["write"], machine.home(), &docs), "{view}");

    // Reading works; the server accepts the write (it has no notion of read-only) and the
    // read-only mount refuses it: nothing is created, the existing file is unchanged.
    let (code, out) = machine.call(
        "files",
        "read_text_file",
        json!({"path": docs.join("note.txt")}),
    );
    assert_eq!(code, 0, "{out}");
    assert!(text_of(&out).contains("inside the grant"), "{out}");
    for path in [docs.join("new.txt"), docs.join("note.txt")] {
        let (_, out) = machine.call(
            "files",
            "write_file",
            json!({"path": path, "content": "overwritten"}),
        );
        assert_eq!(out["is_error"], true, "{path:?}: {out}");
    }
    assert!(!docs.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(docs.join("note.txt")).unwrap(),
        "inside the grant"
    );
}

// --- mcp-server-fetch ---------------------------------------------------------------------------

/// A loopback HTTP site on its own thread: `/robots.txt` is 404, every other path a page
/// carrying `phrase`. Every request line it receives is kept, so a test can say what reached it.
struct Site {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Site {
    fn start(phrase: &'static str) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if let Some(line) = answer(stream, phrase) {
                    seen.lock().unwrap().push(line);
                }
            }
        });
        Site { port, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// Reads one request head and answers it; the request line, or None when none came.
fn answer(mut stream: TcpStream, phrase: &str) -> Option<String> {
    // A stalled client must not hold the site forever (no assertion depends on this bound).
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .ok()?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16384 {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let path = line.split(' ').nth(1).unwrap_or_default();
    let (status, body) = if path.ends_with("/robots.txt") {
        ("404 Not Found", "no robots here".to_string())
    } else {
        (
            "200 OK",
            format!("<html><body><p>{phrase}</p></body></html>"),
        )
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).ok()?;
    Some(line)
}

#[test]
fn mcp_server_fetch_reaches_its_granted_loopback_site_and_another_port_is_refused_and_audited() {
    const PHRASE: &str = "granted-site-phrase-51d2b7";
    let machine = Machine::new();
    let site = Site::start(PHRASE);
    // Another loopback port with its own listener: if anything reached it, it would be queued here.
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let other_port = other.local_addr().unwrap().port();
    other.set_nonblocking(true).unwrap();

    let requirements = repo().join(format!("tests/packages/pypi/{FETCH}/requirements.txt"));
    let pypi = format!("--pypi={FETCH}=={FETCH_VERSION}");
    let requirements = format!("--requirements={}", requirements.display());
    let host = format!("--host=127.0.0.1:{}", site.port);
    // `--allow-private-ips`: the server itself refuses loopback and private addresses unless
    // told otherwise; the grant, not the server's own guard, is what is under test here.
    let out = machine.add_server(
        "urn:acme:fetch",
        &[
            &pypi,
            &requirements,
            "--arg=--allow-private-ips",
            &host,
            "--confinement",
            "required",
            "--tool",
            "fetch",
        ],
    );
    assert_eq!(out["tools_allowed"], json!(["fetch"]), "{out}");
    machine.sign_and_install();
    machine.configure("fetch", "uvx", &[FETCH, "--allow-private-ips"]);

    let view = machine.confinement("fetch");
    assert_eq!(view["state"], "confined", "{view}");
    assert_eq!(
        view["network"],
        json!({"kind": "hosts", "hosts": [format!("127.0.0.1:{}", site.port)]}),
        "{view}"
    );

    // The granted site, through the proxy. `raw`: the page as served. The Markdown extraction
    // (readabilipy) starts `node -v` and then `npm install` in its own package directory as
    // subprocesses: this server may start none (and, granted processes, it would reach for
    // registry.npmjs.org, refused, and write into its read-only code).
    let granted = format!("http://127.0.0.1:{}/", site.port);
    let (code, out) = machine.call("fetch", "fetch", json!({"url": granted, "raw": true}));
    assert_eq!(code, 0, "{out}");
    assert!(text_of(&out).contains(PHRASE), "{out}");
    let requests = site.requests();
    assert!(
        requests.iter().any(|r| r.starts_with("GET / ")),
        "{requests:?}"
    );

    // Another loopback port: refused by the proxy, never reached.
    let refused = format!("http://127.0.0.1:{other_port}/");
    let (_, out) = machine.call("fetch", "fetch", json!({"url": refused, "raw": true}));
    assert_eq!(out["is_error"], true, "{out}");
    match other.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the ungranted port was reached: {other:?}"),
    }

    // The refusal is audited with the server's name, host and port; the granted port is not.
    let out = machine.ok(&["audit", "show", "--type", "egress_refused"]);
    let refusals: Vec<EgressRefused> = payloads_in(out["records"].as_array().unwrap());
    assert!(
        refusals.iter().any(|r| r.name == "fetch"
            && r.host == "127.0.0.1"
            && r.port == other_port
            && r.reason == EgressRefusal::NotGranted),
        "{refusals:?}"
    );
    assert!(
        !refusals.iter().any(|r| r.port == site.port),
        "{refusals:?}"
    );

    // The server keeps answering after the refusal.
    let (code, out) = machine.call("fetch", "fetch", json!({"url": granted, "raw": true}));
    assert_eq!(code, 0, "{out}");
    assert!(text_of(&out).contains(PHRASE), "{out}");
}
