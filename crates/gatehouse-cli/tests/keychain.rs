//! Secrets against the real OS keychain: a gnome-keyring on a private D-Bus session bus.
//!
//! Needs `dbus-run-session`, `gnome-keyring-daemon` and `secret-tool` (Debian: dbus,
//! gnome-keyring, libsecret-tools; the test command installs them). Missing tools fail the
//! test with that message rather than skipping it.

mod common;

use std::path::PathBuf;

#[test]
fn secrets_live_in_a_real_gnome_keyring() {
    common::require_tools(&[
        "dbus-run-session",
        "gnome-keyring-daemon",
        "secret-tool",
        "python3",
    ]);
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    common::run_session_script(
        &fixtures.join("keychain_session.sh"),
        &[
            env!("CARGO_BIN_EXE_gatehouse").as_ref(),
            fixtures.as_os_str(),
        ],
    );
}
