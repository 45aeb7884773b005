//! Secrets against the real OS keychain: a gnome-keyring on a private D-Bus session bus.
//!
//! Needs `dbus-run-session`, `gnome-keyring-daemon` and `secret-tool` (Debian: dbus,
//! gnome-keyring, libsecret-tools; the test command installs them). Missing tools fail the
//! test with that message rather than skipping it.

mod common;

use std::path::PathBuf;
use std::process::Command;

#[test]
fn secrets_live_in_a_real_gnome_keyring() {
    common::require_tools(&[
        "dbus-run-session",
        "gnome-keyring-daemon",
        "secret-tool",
        "python3",
    ]);
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let output = Command::new("dbus-run-session")
        .arg("--")
        .arg("bash")
        .arg("-x")
        .arg(fixtures.join("keychain_session.sh"))
        .arg(env!("CARGO_BIN_EXE_gatehouse"))
        .arg(&fixtures)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // On failure the whole bash -x trace is shown, so the failing step is visible in CI.
    assert!(
        output.status.success(),
        "{stderr}\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(stderr.contains("all steps passed"), "{stderr}");
}
