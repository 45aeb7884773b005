//! Start at login in the real webview (issue 26): the first run asks once, "Yes" writes the
//! XDG autostart entry that starts the background host, Settings turns it off (the file is
//! gone), and an entry under Gatehouse's name that someone else wrote is shown as such and
//! left alone.

use std::path::{Path, PathBuf};

use gatehouse_desktop_e2e::{App, Options, built, eventually};

/// One app at a time: each brings up a display, a WebKit and the demo server.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The login entry in the app's XDG config directory.
fn entry(app: &App) -> PathBuf {
    app.dirs.path().join("config/autostart/gatehouse.desktop")
}

fn exec_line(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()?
        .lines()
        .find(|l| l.starts_with("Exec="))
        .map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_run_yes_starts_at_login_and_settings_turns_it_off() {
    let _one = SERIAL.lock().await;
    let app = App::launch(Options {
        first_run: true,
        ..Options::default()
    })
    .await;
    app.wait("[data-testid=first-run]").await;
    assert!(
        !entry(&app).exists(),
        "nothing is written before the person answers"
    );
    app.screenshot("first-run").await;
    app.click("[data-testid=first-run] [data-action=first-run-yes]")
        .await;
    app.wait_gone("[data-testid=first-run]").await;

    // The entry starts the background host by its absolute path.
    let background = built("gatehouse-background")
        .canonicalize()
        .expect("the background host");
    let exec = eventually("the login entry is written", || async {
        exec_line(&entry(&app))
    })
    .await;
    let written = exec
        .strip_prefix("Exec=")
        .expect("an Exec line")
        .trim_matches('"');
    assert_eq!(
        Path::new(written).canonicalize().ok().as_deref(),
        Some(background.as_path()),
        "{exec}"
    );
    let text = std::fs::read_to_string(entry(&app)).expect("the entry");
    for line in [
        "Type=Application",
        "Name=Gatehouse",
        "X-GNOME-Autostart-enabled=true",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
    }

    app.view("settings").await;
    app.wait("[data-testid=autostart][data-state=on] [data-testid=autostart-switch]:checked")
        .await;
    let note = app.text("[data-testid=autostart-note]").await;
    assert!(note.starts_with("On:"), "{note}");
    app.screenshot("autostart-on").await;

    app.click("[data-testid=autostart-switch]").await;
    app.wait("[data-testid=autostart][data-state=off]").await;
    assert!(!entry(&app).exists(), "the entry is gone");
    assert!(
        app.all("[data-testid=autostart-problem]").await.is_empty(),
        "no problem is shown"
    );
    // The answer is remembered: the data directory holds it.
    let saved = std::fs::read_to_string(app.data_dir().join("first-run.json")).expect("saved");
    assert!(saved.contains("\"yes\""), "{saved}");
    app.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_entry_is_shown_as_such_and_left_alone() {
    let _one = SERIAL.lock().await;
    let theirs =
        b"[Desktop Entry]\nType=Application\nName=Mine\nExec=/usr/local/bin/my-gatehouse --debug\n";
    let app = App::launch(Options {
        // `config_files` are relative to $XDG_CONFIG_HOME/gatehouse: the entry is beside it.
        config_files: vec![(
            PathBuf::from("../autostart/gatehouse.desktop"),
            theirs.to_vec(),
        )],
        ..Options::default()
    })
    .await;
    app.view("settings").await;
    app.wait("[data-testid=autostart][data-state=foreign] [data-testid=autostart-switch]:disabled")
        .await;
    let note = app.text("[data-testid=autostart-note]").await;
    assert!(note.contains("Gatehouse did not write it"), "{note}");
    assert!(
        note.contains(&entry(&app).display().to_string()),
        "names the file: {note}"
    );
    assert_eq!(std::fs::read(entry(&app)).expect("kept"), theirs);
    app.close().await;
}
