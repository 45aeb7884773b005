//! Background mode in the real webview: with the window closed the background host keeps
//! serving an AI client's `gatehouse serve`, a consent card starts a window again, the answer
//! made in a new window reaches the client, and Quit from the window ends serving cleanly.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use gatehouse_desktop_e2e::{App, Options, built, eventually};
use serde_json::{Value, json};

const ASKING: &str = "dialog#prompt-dialog[open] .prompt-card[data-state=asking]";

/// The text of a tools/call response's first content block.
fn result_text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result in {response}"))
}

/// Waits (up to 30 s) until `check` holds, polling without a WebDriver session.
fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "not within 30 s: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn alive(pid: i32) -> bool {
    // A zombie still answers kill(0): look at its state too.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
            Some(after != 'Z' && after != 'X')
        })
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_window_keeps_serving_a_card_brings_a_window_back_and_quit_ends_serving() {
    // Stands in for the window the host starts on a card: records that it was started (its
    // arguments and parent) and then stays, as a window that has not connected yet does (one
    // that exited at once would rightly be started again by the card's next notice), so the
    // test's own WebDriver window answers the card.
    let spawns = tempfile::tempdir().expect("temp dir");
    let record = spawns.path().join("window-started.log");
    let script = spawns.path().join("window-recorder.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"started pid=$$ ppid=$PPID args=$*\" >> \"$GATEHOUSE_E2E_WINDOW_RECORD\"\n\
         exec sleep 120\n",
    )
    .expect("recorder script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .expect("recorder executable");
    let mut app = App::launch(Options {
        env: vec![
            ("GATEHOUSE_WINDOW".into(), script.clone().into()),
            ("GATEHOUSE_E2E_WINDOW_RECORD".into(), record.clone().into()),
        ],
        // The first-run question answered, as the harness does (written here so the data
        // directory exists before the app starts).
        data_files: vec![(
            "first-run.json".into(),
            br#"{"version":1,"answered":"not_now"}"#.to_vec(),
        )],
        ..Options::default()
    })
    .await;
    app.wait(".server-row[data-server=\"demo\"] [data-status=admitted]")
        .await;
    let host = app.background_pid().expect("a background host answers");
    let first_windows = app.window_pids();
    assert_eq!(first_windows.len(), 1, "one window: {first_windows:?}");
    assert_ne!(first_windows[0], host, "the window is not the host");

    // 1. An AI client through `gatehouse serve`, bridged to the app.
    let mut client = app.serve_client(&["--client", "claude_code"]);
    let echoed = client.call(
        "demo__echo",
        json!({"message": "with the window open"}),
        Duration::from_secs(30),
    );
    assert!(
        result_text(&echoed).contains("with the window open"),
        "{echoed}"
    );
    assert!(
        client.notes().contains("bridged to the desktop app"),
        "{}",
        client.notes()
    );
    app.screenshot("background-1-window-open").await;

    // 2. The window closes; the host stays.
    app.end_window().await;
    until("the window process ends", || {
        first_windows.iter().all(|pid| !alive(*pid))
    });
    assert!(app.window_pids().is_empty(), "{:?}", app.window_pids());
    assert!(alive(host), "the background host still runs");
    assert_eq!(app.background_pid(), Some(host), "the same host answers");

    // 3. The client's next call still works, through the host alone.
    let echoed = client.call(
        "demo__echo",
        json!({"message": "with no window"}),
        Duration::from_secs(30),
    );
    assert!(result_text(&echoed).contains("with no window"), "{echoed}");
    assert!(
        std::fs::read_to_string(&record)
            .unwrap_or_default()
            .is_empty(),
        "no window is started for a call that needs no person"
    );

    // 4. A form elicitation: the host starts a window, and a window answers the card.
    let asking = std::thread::spawn(move || {
        let response = client.call("demo__book_table", json!({}), Duration::from_secs(120));
        (client, response)
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&record).is_ok_and(|r| r.contains("started")) {
        if Instant::now() > deadline {
            let logs = app.runtime_dir().join("gatehouse");
            let mut said = String::new();
            for entry in std::fs::read_dir(&logs).into_iter().flatten().flatten() {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                said.push_str(&format!("== {:?}\n{text}\n", entry.file_name()));
            }
            panic!(
                "the host started no window for the card; windows {:?}; {said}",
                app.window_pids()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let started = std::fs::read_to_string(&record).expect("the record");
    assert_eq!(started.lines().count(), 1, "started once: {started}");
    app.reopen().await;
    // The real window took the card: the stand-in ends.
    if let Some(pid) = started
        .split_whitespace()
        .find_map(|word| word.strip_prefix("pid="))
        .and_then(|pid| pid.parse::<i32>().ok())
    {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let card = format!("{ASKING}[data-mode=form]");
    app.wait(&card).await;
    assert_eq!(
        app.text(&format!("{card} [data-testid=caller]")).await,
        "claude_code"
    );
    let second_windows = app.window_pids();
    assert_eq!(second_windows.len(), 1, "{second_windows:?}");
    assert!(
        !first_windows.contains(&second_windows[0]),
        "a new window process"
    );
    app.screenshot("background-2-card-in-new-window").await;
    let field = |name: &str| format!("{card} [name=\"{name}\"]");
    app.fill(&field("name"), "Grace Hopper").await;
    app.wait(&field("date")).await;
    app.client
        .execute(
            "const i = document.querySelector(arguments[0]); i.value = arguments[1];\
             i.dispatchEvent(new Event('input', {bubbles: true}));\
             i.dispatchEvent(new Event('change', {bubbles: true})); return null;",
            vec![field("date").into(), "2026-12-31".into()],
        )
        .await
        .expect("set the date");
    app.wait_gone(&format!("{card} [data-error-for]")).await;
    let submit = format!("{card} [data-action=submit]");
    eventually("Submit comes on once the host checked the form", || async {
        app.wait(&submit)
            .await
            .is_enabled()
            .await
            .unwrap_or(false)
            .then_some(())
    })
    .await;
    app.click(&submit).await;
    let (mut client, booked) = asking.join().expect("the client thread");
    let received: Value = serde_json::from_str(result_text(&booked)).expect("the demo echoes JSON");
    assert_eq!(received["action"], "accept", "{received}");
    assert_eq!(received["content"]["name"], "Grace Hopper");
    assert_eq!(received["content"]["date"], "2026-12-31");

    // 5. Quit from the window: the dialog says what stops, then serving ends.
    app.click("[data-action=quit-open]").await;
    let plan = "#quit-dialog[open] [data-testid=quit-plan]";
    app.wait(&format!("{plan} [data-quit=clients][data-count=\"1\"]"))
        .await;
    assert!(
        app.text(&format!("{plan} [data-quit=clients]"))
            .await
            .contains("claude_code"),
        "the connected client is named"
    );
    app.wait(&format!("{plan} [data-quit=servers]")).await;
    app.wait(&format!("{plan} [data-quit=cards][data-count=\"0\"]"))
        .await;
    app.screenshot("background-3-quit-dialog").await;
    // The window goes with the host, possibly before WebDriver answers the click: what the
    // click did is checked below, not its reply.
    let confirm = app.reveal("#quit-dialog [data-action=quit-confirm]").await;
    let _ = confirm.click().await;
    until("the background host exits", || !alive(host));
    let runtime = app.runtime_dir().join("gatehouse");
    until("the bridge and window sockets are gone", || {
        !runtime.join("gateway.sock").exists() && !runtime.join("desk.sock").exists()
    });
    assert_eq!(app.background_pid(), None, "no host answers");
    // serve's bridge closed: serve ends (its client sees its server go).
    let ended = client.ended_within(Duration::from_secs(30));
    assert!(
        ended.is_some_and(|status| status.success()),
        "serve did not end cleanly ({ended:?}): {}",
        client.notes()
    );
    let verify = std::process::Command::new(built("gatehouse"))
        .args(["audit", "verify"])
        .arg(app.data_dir().join("audit.jsonl"))
        .output()
        .expect("gatehouse audit verify runs");
    assert!(
        verify.status.success(),
        "the audit log verifies: {}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    app.close().await;
}
