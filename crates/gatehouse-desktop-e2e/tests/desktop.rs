//! The desktop app, driven as a person would in its real webview, on the embedded demo.

use gatehouse_desktop_e2e::{App, Options};
use gatehouse_host::audit_event::gate::ToolCall;
use gatehouse_host::audit_event::session::ElicitationReceipt;
use gatehouse_policy::Decision;
use gatehouse_testkit::audit::payloads_in;

/// One app at a time: each brings up a display, a WebKit and the demo server.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_server_shows_admitted_with_its_identity() {
    let _one = SERIAL.lock().await;
    let app = App::launch(Options::default()).await;
    app.wait("[data-server=\"demo\"] [data-testid=status][data-status=admitted]")
        .await;
    app.screenshot("servers").await;
    app.click("[data-server=\"demo\"]").await;
    let detail = "[data-testid=server-detail][data-server=\"demo\"]";
    app.wait(detail).await;
    let verified = app
        .text(&format!(
            "{detail} [data-testid=identity] [data-field=verified_id]"
        ))
        .await;
    assert!(!verified.trim().is_empty(), "verified id shown");
    app.wait(&format!(
        "{detail} [data-tool=\"book_table\"][data-tool-status=allowed]"
    ))
    .await;
    app.wait(&format!(
        "{detail} [data-tool=\"fail\"][data-tool-status=hidden]"
    ))
    .await;
    app.screenshot("server-detail").await;
    app.close().await;
}

/// The tool result shown in the Servers view once the call ended.
async fn tool_result(app: &App) -> (String, String) {
    app.view("servers").await;
    let css = "#tool-form [data-testid=tool-result]";
    let is_error = app.attr(css, "data-is-error").await.unwrap_or_default();
    let text = match app
        .all(&format!("{css} [data-testid=tool-result-text]"))
        .await
        .pop()
    {
        Some(text) => text.text().await.expect("result text"),
        None => app.text(css).await,
    };
    (text, is_error)
}

const ASKING: &str = "dialog#prompt-dialog[open] .prompt-card[data-state=asking]";

/// Sets a date input's value as its picker would (WebKitGTK's date widget takes no typed
/// ISO text), then lets the page see the change.
async fn set_date(app: &App, css: &str, value: &str) {
    app.wait(css).await;
    app.client
        .execute(
            "const i = document.querySelector(arguments[0]); i.value = arguments[1];\
             i.dispatchEvent(new Event('input', {bubbles: true}));\
             i.dispatchEvent(new Event('change', {bubbles: true})); return null;",
            vec![css.into(), value.into()],
        )
        .await
        .unwrap_or_else(|e| panic!("set {css}: {e}"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_form_elicitation_is_asked_validated_and_sent_exactly_as_submitted() {
    let _one = SERIAL.lock().await;
    let app = App::launch(Options::default()).await;
    app.wait(".server-row[data-server=\"demo\"] [data-status=admitted]")
        .await;
    app.run_tool("demo", "book_table", &[]).await;

    // The banner is the host's, from the admission record.
    let card = format!("{ASKING}[data-mode=form]");
    app.wait(&card).await;
    let verified = app
        .text(&format!(
            "{card} [data-testid=banner] [data-field=verified_id]"
        ))
        .await;
    assert_eq!(verified.trim(), "urn:gatehouse:demo-server");
    assert_eq!(
        app.text(&format!("{card} [data-testid=message]")).await,
        "Book a table at the demo restaurant"
    );
    // Every field type, defaults pre-filled.
    let field = |name: &str| format!("{card} [name=\"{name}\"]");
    for (name, kind) in [
        ("name", "text"),
        ("email", "email"),
        ("website", "url"),
        ("party_size", "number"),
        ("budget", "number"),
        ("vegetarian", "checkbox"),
    ] {
        assert_eq!(
            app.attr(&field(name), "type").await.as_deref(),
            Some(kind),
            "{name}"
        );
    }
    app.wait(&field("date")).await;
    app.wait(&field("arrival")).await;
    assert_eq!(app.value(&field("party_size")).await, "2");
    assert_eq!(app.value(&field("budget")).await, "50.5");
    assert_eq!(app.value(&field("seating")).await, "indoor");
    assert_eq!(app.value(&field("occasion")).await, "none");
    assert_eq!(app.value(&field("cuisine")).await, "italian");
    let cuisine = app
        .text(&format!("{} option[value=\"japanese\"]", field("cuisine")))
        .await;
    assert_eq!(cuisine, "Japanese", "legacy enumNames are the labels");
    let bread = app
        .wait(&format!("{card} [name=\"extras\"][value=\"bread\"]"))
        .await;
    assert!(bread.is_selected().await.unwrap(), "default extras checked");
    app.wait(&format!("{card} [name=\"allergies\"][value=\"nuts\"]"))
        .await;
    app.screenshot("prompt-form").await;

    // Invalid input is refused inline, and Submit stays off.
    app.fill(&field("party_size"), "40").await;
    app.wait(&format!("{card} [data-error-for=\"party_size\"]"))
        .await;
    app.fill(&field("email"), "not-an-email").await;
    app.wait(&format!("{card} [data-error-for=\"email\"]"))
        .await;
    let submit = app.wait(&format!("{card} [data-action=submit]")).await;
    assert!(
        !submit.is_enabled().await.unwrap(),
        "submit disabled while invalid"
    );
    app.screenshot("prompt-form-invalid").await;

    // Fixed, then submitted.
    app.fill(&field("party_size"), "4").await;
    app.fill(&field("email"), "ada@example.com").await;
    app.fill(&field("name"), "Ada Lovelace").await;
    set_date(&app, &field("date"), "2026-12-24").await;
    // The card re-renders (and its layout moves) as each field validates: wait until every
    // field is valid, then set each box until it shows the state wanted, at most 3 clicks. A
    // click that lands while the card is replaced is lost or hits the box next to it (seen
    // under load: bread unchecked instead of wine checked). What is asserted below is what
    // reached the server.
    app.wait_gone(&format!("{card} [data-error-for]")).await;
    for (value, wanted) in [("bread", true), ("wine", true)] {
        let boxed = format!("{card} [name=\"extras\"][value=\"{value}\"]");
        for _ in 0..3 {
            if app.wait(&boxed).await.is_selected().await.unwrap() == wanted {
                break;
            }
            app.click(&boxed).await;
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
        assert_eq!(
            app.wait(&boxed).await.is_selected().await.unwrap(),
            wanted,
            "{value}"
        );
    }
    app.click(&format!("{card} [data-action=submit]")).await;
    let (text, is_error) = tool_result(&app).await;
    assert_eq!(is_error, "false", "{text}");
    let received: serde_json::Value = serde_json::from_str(&text).expect("the demo echoes JSON");
    assert_eq!(received["action"], "accept", "{received}");
    let content = &received["content"];
    assert_eq!(content["name"], "Ada Lovelace");
    assert_eq!(content["email"], "ada@example.com");
    assert_eq!(content["date"], "2026-12-24");
    assert_eq!(content["party_size"], 4);
    assert_eq!(content["budget"], 50.5);
    assert_eq!(content["seating"], "indoor");
    assert_eq!(content["extras"], serde_json::json!(["bread", "wine"]));
    // The result sits under the tool form, below the identity card: scroll to it.
    app.reveal("#tool-form [data-testid=tool-result]").await;
    app.screenshot("tool-result").await;

    // A sensitive form is refused: nothing is asked, the server gets a decline.
    app.run_tool("demo", "ask_password", &[]).await;
    let (text, _) = tool_result(&app).await;
    assert!(text.contains("decline"), "{text}");
    app.view("prompts").await;
    let refused = ".prompt-card[data-state=refused][data-mode=form]";
    // Views share the window's scroll, left where the Servers view had it: bring the reason
    // into view.
    app.reveal(&format!(
        "{refused} [data-testid=reason][data-code=sensitive_field]"
    ))
    .await;
    app.screenshot("prompt-refused-sensitive").await;

    // Server text is text: markup in a message is shown, never run or rendered.
    let markup = "<img src=x onerror=\"document.title='pwned'\"> connect";
    app.run_tool(
        "demo",
        "open_link",
        &[("url", "http://127.0.0.1:9/markup"), ("message", markup)],
    )
    .await;
    let card = format!("{ASKING}[data-mode=url]");
    assert_eq!(
        app.text(&format!("{card} [data-testid=message]")).await,
        markup
    );
    assert!(app.all(".prompt-card img, dialog img").await.is_empty());
    assert_ne!(app.client.title().await.unwrap(), "pwned");
    app.screenshot("prompt-markup-as-text").await;
    app.click(&format!("{card} [data-action=decline]")).await;
    let (text, _) = tool_result(&app).await;
    assert!(text.contains("decline"), "{text}");
    assert!(
        app.opened().is_empty(),
        "nothing opened: {:?}",
        app.opened()
    );

    // The audit view lists the receipts, and the chain verifies.
    app.view("audit").await;
    app.wait("[data-testid=audit-row][data-event=elicitation_receipt]")
        .await;
    assert!(
        app.all("[data-testid=audit-row][data-event=elicitation_receipt]")
            .await
            .len()
            >= 3
    );
    app.click("[data-action=verify-audit]").await;
    app.wait("[data-testid=audit-verify][data-ok=true]").await;
    app.screenshot("audit").await;
    let receipts: Vec<ElicitationReceipt> = payloads_in(&app.audit());
    assert!(
        receipts
            .iter()
            .any(|r| r.decision == Decision::DenySensitiveFormElicitation),
        "{receipts:?}"
    );
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ai_clients_call_through_gatehouse_serve_is_asked_on_the_apps_card_naming_the_client() {
    let _one = SERIAL.lock().await;
    let app = App::launch(Options::default()).await;
    app.wait(".server-row[data-server=\"demo\"] [data-status=admitted]")
        .await;
    // An AI client launches `gatehouse serve`, which finds the running app over its bridge.
    let client = app.ai_client(
        &serde_json::json!([
            {"op": "list"},
            {"op": "call", "name": "demo__book_table", "arguments": {}},
            // Hidden by the bundle: the gate refuses it.
            {"op": "call", "name": "demo__fail", "arguments": {}},
        ]),
        &["--client", "claude_code"],
    );
    let card = format!("{ASKING}[data-mode=form]");
    app.wait(&card).await;
    assert_eq!(
        app.text(&format!("{card} [data-testid=caller]")).await,
        "claude_code"
    );
    let caller_line = app.text(&format!("{card} .caller")).await;
    assert!(
        caller_line.contains("over stdio") && caller_line.contains("ts-sdk-test-client 1.0.0"),
        "{caller_line}"
    );
    let verified = app
        .text(&format!(
            "{card} [data-testid=banner] [data-field=verified_id]"
        ))
        .await;
    assert_eq!(verified.trim(), "urn:gatehouse:demo-server");
    app.screenshot("prompt-from-ai-client").await;
    let field = |name: &str| format!("{card} [name=\"{name}\"]");
    app.fill(&field("name"), "Grace Hopper").await;
    set_date(&app, &field("date"), "2026-12-31").await;
    app.wait_gone(&format!("{card} [data-error-for]")).await;
    // Submit comes on once the host has checked the form.
    let submit = format!("{card} [data-action=submit]");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !app.wait(&submit).await.is_enabled().await.unwrap() {
        assert!(std::time::Instant::now() < deadline, "Submit stayed off");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    app.click(&submit).await;

    let (ok, out, notes) = client.join().expect("client thread");
    assert!(ok, "{notes}");
    assert!(notes.contains("bridged to the desktop app"), "{notes}");
    let offered = out[0]["names"].as_array().expect("a listing");
    assert!(
        offered.iter().any(|n| n == "demo__book_table"),
        "{offered:?}"
    );
    let text = out[1]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {}; serve said: {notes}", out[1]));
    let received: serde_json::Value = serde_json::from_str(text).expect("the demo echoes JSON");
    assert_eq!(received["action"], "accept", "{received}");
    assert_eq!(received["content"]["name"], "Grace Hopper");
    assert_eq!(received["content"]["date"], "2026-12-31");
    // The call is in the app's own audit log, with the client named.
    let calls: Vec<ToolCall> = payloads_in::<ToolCall>(&app.audit())
        .into_iter()
        .filter(|c| c.decision.tool() == "book_table")
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        calls[0].caller.as_ref().map(|c| c.client.as_str()),
        Some("claude_code")
    );
    assert!(
        out[2]["result"]["isError"] == true,
        "the hidden tool is refused: {}",
        out[2]
    );

    // The AI clients view: the client, its calls as the gate decided them, and that it left.
    app.view("clients").await;
    let row = "[data-testid=client][data-client=claude_code]";
    app.wait(&format!("{row}[data-connected=false]")).await;
    app.wait(&format!(
        "{row} [data-testid=client-call][data-tool=book_table][data-decision=allowed][data-server=demo]"
    ))
    .await;
    app.wait(&format!(
        "{row} [data-testid=client-call][data-tool=fail][data-decision=denied]"
    ))
    .await;
    assert!(
        app.text(row).await.contains("ts-sdk-test-client 1.0.0"),
        "the claimed name is shown as claimed"
    );
    app.screenshot("clients").await;
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn url_elicitations_show_the_full_url_open_only_on_consent_and_complete_on_their_card() {
    let _one = SERIAL.lock().await;
    let app = App::launch(Options {
        browser_visit: Some("submit"),
        ..Options::default()
    })
    .await;
    app.wait(".server-row[data-server=\"demo-2025\"] [data-status=admitted]")
        .await;

    // A punycode look-alike is refused with the warning; nothing opens.
    app.run_tool(
        "demo",
        "open_link",
        &[
            ("url", "https://xn--80ak6aa92e.com/login"),
            ("message", "Sign in"),
        ],
    )
    .await;
    let _ = tool_result(&app).await;
    app.view("prompts").await;
    let refused = ".prompt-card[data-state=refused][data-mode=url]";
    app.reveal(&format!(
        "{refused} [data-testid=url-warning][data-code=url_punycode_host]"
    ))
    .await;
    app.screenshot("prompt-refused-punycode").await;
    assert!(app.opened().is_empty());

    // 2025-11-25: consent, the system browser, the completion notification.
    app.run_tool("demo-2025", "connect_account", &[("service", "calendar")])
        .await;
    let card = format!("{ASKING}[data-mode=url]");
    let full = app.text(&format!("{card} [data-testid=url-full]")).await;
    assert!(full.starts_with("http://127.0.0.1:"), "{full}");
    assert_eq!(
        app.text(&format!("{card} [data-testid=url-host]")).await,
        "127.0.0.1"
    );
    assert!(app.page_hits().is_empty(), "no prefetch before consent");
    app.screenshot("prompt-url").await;
    app.click(&format!("{card} [data-action=open]")).await;
    let done = ".prompt-card[data-state=completed][data-mode=url]";
    let result = app
        .text(&format!("{done} [data-testid=prompt-result]"))
        .await;
    assert!(result.contains("connected calendar"), "{result}");
    assert_eq!(app.opened(), vec![full.clone()], "exactly the URL shown");
    app.reveal(&format!("{done} [data-testid=prompt-result]"))
        .await;
    app.screenshot("prompt-url-completed").await;
    let (text, _) = tool_result(&app).await;
    assert!(text.starts_with("connected calendar"), "{text}");

    // -32042: the URL is consented and completed, then the call is retried.
    app.run_tool(
        "demo-2025",
        "connect_account_required",
        &[("service", "mail")],
    )
    .await;
    let full = app.text(&format!("{card} [data-testid=url-full]")).await;
    app.click(&format!("{card} [data-action=open]")).await;
    app.wait_gone(ASKING).await;
    let (text, is_error) = tool_result(&app).await;
    assert_eq!(is_error, "false", "{text}");
    assert!(text.contains("mail"), "the retried call's result: {text}");
    assert_eq!(app.opened().last(), Some(&full));
    app.view("prompts").await;
    app.wait(".prompt-card[data-state=completed] [data-testid=prompt-result]")
        .await;

    // 2026-07-28: nothing announces completion; the user retries.
    app.run_tool("demo", "connect_account", &[("service", "files")])
        .await;
    app.click(&format!("{card} [data-action=open]")).await;
    let waiting = ".prompt-card[data-state=waiting][data-mode=url]";
    // Newest first: the waiting card is above the completed ones, out of view.
    app.reveal(&format!("{waiting} [data-action=retry]")).await;
    app.screenshot("prompt-url-waiting").await;
    app.click(&format!("{waiting} [data-action=retry]")).await;
    let (text, _) = tool_result(&app).await;
    assert!(text.starts_with("connected files"), "{text}");
    app.close().await;
}

/// Presses keys (WebDriver key values) on whatever has the focus, one after another; a
/// `(SHIFT, key)` pair is pressed as a chord.
async fn press(app: &App, keys: &[(Option<char>, char)]) {
    use fantoccini::actions::{InputSource, KeyAction, KeyActions};
    let mut actions = KeyActions::new("keys".into());
    for (modifier, key) in keys {
        if let Some(m) = modifier {
            actions = actions.then(KeyAction::Down { value: *m });
        }
        actions = actions
            .then(KeyAction::Down { value: *key })
            .then(KeyAction::Up { value: *key });
        if let Some(m) = modifier {
            actions = actions.then(KeyAction::Up { value: *m });
        }
    }
    app.client
        .perform_actions(actions)
        .await
        .unwrap_or_else(|e| panic!("press {keys:?}: {e:?}"));
}

const ENTER: char = '\u{E007}';
const ESCAPE: char = '\u{E00C}';
const TAB: char = '\u{E004}';
const SHIFT: char = '\u{E008}';

/// Where the focus is: `"dialog"` inside the open prompt dialog, else the focused tag.
async fn focus_at(app: &App) -> String {
    app.client
        .execute(
            "const a = document.activeElement;\
             if (a && a.closest('dialog#prompt-dialog[open]')) return 'dialog';\
             return a ? a.tagName.toLowerCase() : 'none';",
            vec![],
        )
        .await
        .expect("read the focus")
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_prompt_dialog_keyboard_enter_submits_only_a_valid_form_esc_cancels_focus_stays_inside()
{
    let _one = SERIAL.lock().await;
    let app = App::launch(Options::default()).await;
    app.wait(".server-row[data-server=\"demo\"] [data-status=admitted]")
        .await;
    app.run_tool("demo", "book_table", &[]).await;
    let card = format!("{ASKING}[data-mode=form]");
    app.wait(&card).await;
    assert_eq!(focus_at(&app).await, "dialog", "the dialog takes the focus");

    // Enter on a form missing its required name: nothing is sent, the problem is shown.
    press(&app, &[(None, ENTER)]).await;
    app.wait(&format!("{card} [data-error-for=\"name\"]")).await;
    app.wait(&card).await;
    assert!(
        app.all("#tool-form [data-testid=tool-result]")
            .await
            .is_empty(),
        "the call still waits for the form"
    );
    app.screenshot("prompt-keyboard-invalid-enter").await;

    // Tab and Shift+Tab go round the dialog's controls and never leave it.
    for step in 0..30 {
        press(&app, &[(None, TAB)]).await;
        assert_eq!(focus_at(&app).await, "dialog", "after {} Tab", step + 1);
    }
    for step in 0..30 {
        press(&app, &[(Some(SHIFT), TAB)]).await;
        assert_eq!(
            focus_at(&app).await,
            "dialog",
            "after {} Shift+Tab",
            step + 1
        );
    }

    // Valid now: Enter in a field submits exactly what the form holds.
    app.wait(&format!("{card} [data-error-for=\"date\"]")).await;
    set_date(&app, &format!("{card} [name=\"date\"]"), "2026-12-31").await;
    app.fill(&format!("{card} [name=\"name\"]"), "Grace Hopper")
        .await;
    app.wait_gone(&format!("{card} [data-error-for]")).await;
    press(&app, &[(None, ENTER)]).await;
    app.wait_gone("dialog#prompt-dialog[open]").await;
    let (text, is_error) = tool_result(&app).await;
    assert_eq!(is_error, "false", "{text}");
    let received: serde_json::Value = serde_json::from_str(&text).expect("the demo echoes JSON");
    assert_eq!(received["action"], "accept", "{received}");
    assert_eq!(received["content"]["name"], "Grace Hopper", "{received}");
    assert_eq!(received["content"]["date"], "2026-12-31", "{received}");
    assert_eq!(received["content"]["party_size"], 2, "defaults kept");

    // Esc cancels: the dialog closes and the server is told cancel, with no content.
    app.run_tool("demo", "book_table", &[]).await;
    app.wait(&card).await;
    press(&app, &[(None, ESCAPE)]).await;
    app.wait_gone("dialog#prompt-dialog[open]").await;
    let (text, _) = tool_result(&app).await;
    let received: serde_json::Value = serde_json::from_str(&text).expect("the demo echoes JSON");
    assert_eq!(received, serde_json::json!({"action": "cancel"}));
    app.close().await;
}
