//! The desktop app, driven as a person would in its real webview, on the embedded demo.

use gatehouse_desktop_e2e::{App, Options};

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
