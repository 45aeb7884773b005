//! The second adversarial review's gateway items, tried as a client would: AI clients on the
//! embedded demo (both eras) through in-process gateway sessions on one host, as the app
//! serves bridged clients. What a client can make the host hold (subscriptions), do
//! (admissions, listings) or record (who asked).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_gateway::{Gateway, GatewayHandler, HeadlessConsent};
use gatehouse_host::DownstreamTransport;
use gatehouse_host::connection::MAX_SUBSCRIPTIONS_PER_CLIENT;
use gatehouse_host::host::Host;
use gatehouse_testkit as kit;
use kit::mcp::{Client, code};
use rmcp::ServiceError;
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, ProtocolVersion, ReadResourceRequestParams, Reference,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use serde_json::{Value, json};

/// A host in demo mode (`demo` in 2026-07-28, `demo-2025` in 2025-11-25), plus the servers
/// of `servers` (a servers.json body), started as `gatehouse serve` starts it.
fn host(dir: &Path, servers: Option<Value>) -> Arc<Host> {
    if let Some(servers) = servers {
        kit::host::write_servers(dir, &servers);
    }
    kit::host::open(
        kit::host::demo_options(dir),
        Arc::new(HeadlessConsent::new()),
    )
}

/// One AI client's session on `host` (its own gateway, as each bridged client gets), in
/// 2025-11-25, where `resources/subscribe` is a request.
async fn client(host: &Arc<Host>, name: &str, only: Option<&str>) -> (Client, Arc<Gateway>) {
    let gateway = Arc::new(
        Gateway::new(host.clone(), name.to_string(), DownstreamTransport::Stdio)
            .with_only(only.map(str::to_string)),
    );
    let running = kit::mcp::connect(
        GatewayHandler(gateway.clone()),
        name,
        ProtocolVersion::V_2025_11_25,
    )
    .await;
    (running, gateway)
}

/// The methods the host sent to `server` so far.
fn sent(host: &Host, server: &str, method: &str) -> usize {
    host.traffic(Some(server))
        .iter()
        .filter(|e| {
            e.direction == gatehouse_host::Direction::Out && e.message["method"] == json!(method)
        })
        .count()
}

#[allow(deprecated)]
async fn subscribe(client: &Client, uri: &str) -> Result<(), ServiceError> {
    client
        .peer()
        .subscribe(SubscribeRequestParams::new(uri))
        .await
}

/// Waits (bounded) until `check` holds; the release after a client leaves runs on a task.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never happened: {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_cannot_take_every_subscription_and_its_subscriptions_end_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), None);
    host.connect_in_background(None);
    let (greedy, greedy_gateway) = client(&host, "greedy", None).await;
    // The attacker takes as many slots as it can.
    let mut held = Vec::new();
    let refused = loop {
        let uri = format!("demo://notes/page-{}", held.len());
        match subscribe(&greedy, &uri).await {
            Ok(()) => held.push(uri),
            Err(error) => break error,
        }
        assert!(held.len() <= 64, "no limit stopped one client");
    };
    assert_eq!(held.len(), MAX_SUBSCRIPTIONS_PER_CLIENT);
    assert_eq!(code(&refused), "subscription_limit", "{refused}");
    let demo = host.live_connection("demo").await.unwrap();
    assert_eq!(demo.subscriptions().len(), MAX_SUBSCRIPTIONS_PER_CLIENT);

    // Another client still gets its subscription, and shares the counter with the first.
    let (other, other_gateway) = client(&host, "other", None).await;
    subscribe(&other, "demo://counter").await.unwrap();
    subscribe(&greedy, "demo://notes/groceries")
        .await
        .expect_err("still over its share");
    assert_eq!(demo.subscriptions().len(), MAX_SUBSCRIPTIONS_PER_CLIENT + 1);

    // Unsubscribing a URI another client holds keeps the upstream subscription.
    #[allow(deprecated)]
    greedy
        .peer()
        .unsubscribe(UnsubscribeRequestParams::new(held[0].as_str()))
        .await
        .unwrap();
    assert!(!demo.subscriptions().contains(&held[0]));
    subscribe(&other, &held[1]).await.unwrap();
    #[allow(deprecated)]
    greedy
        .peer()
        .unsubscribe(UnsubscribeRequestParams::new(held[1].as_str()))
        .await
        .unwrap();
    assert!(
        demo.subscriptions().contains(&held[1]),
        "the other holds it"
    );
    let unsubscribes_before = sent(&host, "demo", "resources/unsubscribe");

    // The greedy client leaves without unsubscribing: what only it held is released upstream.
    greedy.cancel().await.unwrap();
    greedy_gateway.end();
    eventually("the greedy client's subscriptions released", async || {
        demo.subscriptions().len() == 2
    })
    .await;
    let mut left = demo.subscriptions();
    left.sort();
    assert_eq!(left, ["demo://counter".to_string(), held[1].clone()]);
    // `demo` speaks 2026-07-28: its subscriptions are listen streams, ended by cancelling;
    // no legacy unsubscribe was sent for them.
    assert_eq!(
        sent(&host, "demo", "resources/unsubscribe"),
        unsubscribes_before
    );
    other.cancel().await.unwrap();
    other_gateway.end();
    eventually("every subscription released", async || {
        demo.subscriptions().is_empty()
    })
    .await;
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_server_hears_unsubscribe_for_the_last_holder_and_every_request_is_recorded_with_its_client()
 {
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), None);
    host.connect_in_background(Some("demo-2025".into()));
    let (a, a_gateway) = client(&host, "client_a", Some("demo-2025")).await;
    let (b, b_gateway) = client(&host, "client_b", Some("demo-2025")).await;
    subscribe(&a, "demo://counter").await.unwrap();
    // A second subscribe to what is already subscribed passes the gate again and is recorded.
    subscribe(&a, "demo://counter").await.unwrap();
    subscribe(&b, "demo://counter").await.unwrap();
    assert_eq!(sent(&host, "demo-2025", "resources/subscribe"), 1);
    let subscribes: Vec<Value> = kit::host::records_of(dir.path(), "resource_read")
        .into_iter()
        .filter(|r| r["data"]["action"] == "subscribe")
        .collect();
    let callers: Vec<&Value> = subscribes
        .iter()
        .map(|r| &r["data"]["caller"]["client"])
        .collect();
    assert_eq!(
        callers,
        [&json!("client_a"), &json!("client_a"), &json!("client_b")],
        "{subscribes:?}"
    );
    // A refused subscription names its client too.
    let refused = subscribe(&b, "demo://secret").await.unwrap_err();
    assert_eq!(code(&refused), "resource_not_admitted", "{refused}");
    let last = kit::host::records_of(dir.path(), "resource_read")
        .pop()
        .unwrap();
    assert_eq!(last["data"]["decision"], "denied");
    assert_eq!(last["data"]["caller"]["client"], "client_b");

    // A completion the gate refuses is recorded with the client that asked.
    let completion = b
        .peer()
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("Summarize"),
            ArgumentInfo::new("topic", "m"),
        ))
        .await
        .unwrap_err();
    assert!(
        completion.to_string().contains("prompt_not_admitted"),
        "{completion}"
    );
    let denied = kit::host::records_of(dir.path(), "prompt_get")
        .pop()
        .unwrap();
    assert_eq!(denied["data"]["decision"], "denied", "{denied}");
    assert_eq!(denied["data"]["caller"]["client"], "client_b", "{denied}");
    let template = b
        .peer()
        .complete(CompleteRequestParams::new(
            Reference::for_resource("demo://secrets/{name}"),
            ArgumentInfo::new("name", "p"),
        ))
        .await
        .unwrap_err();
    assert!(
        template.to_string().contains("resource_not_admitted"),
        "{template}"
    );
    let denied = kit::host::records_of(dir.path(), "resource_read")
        .pop()
        .unwrap();
    assert_eq!(denied["data"]["action"], "complete", "{denied}");
    assert_eq!(denied["data"]["template"], "demo://secrets/{name}");
    assert_eq!(denied["data"]["caller"]["client"], "client_b", "{denied}");

    // The last holder's unsubscribe (or leaving) ends the upstream subscription.
    #[allow(deprecated)]
    a.peer()
        .unsubscribe(UnsubscribeRequestParams::new("demo://counter"))
        .await
        .unwrap();
    assert_eq!(sent(&host, "demo-2025", "resources/unsubscribe"), 0);
    b.cancel().await.unwrap();
    b_gateway.end();
    eventually("the upstream unsubscribe", async || {
        sent(&host, "demo-2025", "resources/unsubscribe") == 1
    })
    .await;
    a.cancel().await.unwrap();
    a_gateway.end();
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_requests_never_readmit_a_refused_server() {
    let dir = tempfile::tempdir().unwrap();
    // A server no bundle binds (the demo server's bytes at another path): refused under
    // deny-by-default.
    let copy = dir.path().join("unbound-server");
    std::fs::copy(kit::demo::server(), &copy).unwrap();
    let host = host(
        dir.path(),
        Some(json!({"mcpServers": {"unbound": {"command": copy.display().to_string()}}})),
    );
    host.connect_in_background(None);
    let (client, gateway) = client(&host, "looper", Some("unbound")).await;
    // The first request waits for the host's start, when `unbound` was refused once.
    let first = client
        .peer()
        .read_resource(ReadResourceRequestParams::new("demo://counter"))
        .await
        .unwrap_err();
    assert!(
        first.to_string().contains("server_not_connected"),
        "{first}"
    );
    let admissions = kit::host::records_of(dir.path(), "admission").len();
    assert!(admissions >= 1, "unbound was admitted (and refused) once");
    for i in 0..20 {
        let read = client
            .peer()
            .read_resource(ReadResourceRequestParams::new(format!("demo://notes/{i}")))
            .await;
        assert!(read.is_err());
        let _ = subscribe(&client, "demo://counter").await.unwrap_err();
        let _ = client
            .peer()
            .complete(CompleteRequestParams::new(
                Reference::for_prompt("summarize"),
                ArgumentInfo::new("topic", "m"),
            ))
            .await
            .unwrap_err();
        let _ = client
            .peer()
            .get_prompt(rmcp::model::GetPromptRequestParams::new("summarize"))
            .await
            .unwrap_err();
        // Each bridged client's arrival starts the servers never tried, not refused ones.
        host.connect_in_background(None);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        kit::host::records_of(dir.path(), "admission").len(),
        admissions,
        "a client's requests re-ran admission"
    );
    client.cancel().await.unwrap();
    gateway.end();
    // The person's connect still admits it again (and refuses it again).
    let _ = host.connect("unbound").await;
    assert_eq!(
        kit::host::records_of(dir.path(), "admission").len(),
        admissions + 1
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_reads_prompts_and_completions_lists_nothing_after_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), None);
    host.connect_in_background(None);
    let (client, gateway) = client(&host, "bursty", None).await;
    let read = |uri: &'static str| {
        client
            .peer()
            .read_resource(ReadResourceRequestParams::new(uri))
    };
    read("demo://docs/welcome.txt").await.unwrap();
    let listed = |host: &Host| {
        ["demo", "demo-2025"]
            .iter()
            .map(|s| {
                sent(host, s, "resources/list")
                    + sent(host, s, "resources/templates/list")
                    + sent(host, s, "prompts/list")
            })
            .sum::<usize>()
    };
    let after_first = listed(&host);
    for _ in 0..25 {
        read("demo://docs/welcome.txt").await.unwrap();
        // A URI nobody offers lists nothing either.
        read("nowhere://at/all").await.unwrap_err();
        client
            .peer()
            .get_prompt(
                rmcp::model::GetPromptRequestParams::new("demo__summarize")
                    .with_arguments(serde_json::from_value(json!({"topic": "x"})).unwrap()),
            )
            .await
            .unwrap();
        client
            .peer()
            .complete(CompleteRequestParams::new(
                Reference::for_prompt("demo__summarize"),
                ArgumentInfo::new("topic", "m"),
            ))
            .await
            .unwrap();
    }
    // The first prompt listed the prompts once per server; nothing after.
    let prompts_listed = after_first + 2;
    assert!(
        listed(&host) <= prompts_listed,
        "listings after the first: {} (at most {prompts_listed})",
        listed(&host)
    );
    client.cancel().await.unwrap();
    gateway.end();
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_serve_waits_for_its_first_connection_and_the_demo_offers_its_resources() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), None);
    // The client asks at once, before the server is up.
    host.connect_in_background(Some("demo".into()));
    let (client, gateway) = client(&host, "eager", Some("demo")).await;
    let read = client
        .peer()
        .read_resource(ReadResourceRequestParams::new("demo://docs/welcome.txt"))
        .await
        .expect("the read waits for the connection instead of failing with `connecting`");
    assert!(!read.contents.is_empty());
    client.cancel().await.unwrap();
    gateway.end();

    // Every server side by side: the demo's two eras list the same URIs, and are one server:
    // its resources are offered once, from `demo`.
    let dir = tempfile::tempdir().unwrap();
    let host = self::host(dir.path(), None);
    host.connect_in_background(None);
    let (client, gateway) = self::client(&host, "demo_user", None).await;
    let listed = client.peer().list_all_resources().await.unwrap();
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    assert!(uris.contains(&"demo://docs/welcome.txt"), "{uris:?}");
    client
        .peer()
        .read_resource(ReadResourceRequestParams::new("demo://notes/ideas"))
        .await
        .unwrap();
    let reads = kit::host::records_of(dir.path(), "resource_read");
    assert_eq!(reads.last().unwrap()["data"]["name"], "demo", "{reads:?}");
    client.cancel().await.unwrap();
    gateway.end();
    assert_eq!(host.demo_twin("demo-2025"), Some("demo"));
    assert_eq!(host.demo_twin("demo"), None);
    host.shutdown().await;

    // A configured server named like the demo's twin is not one: the rule holds for it.
    let dir = tempfile::tempdir().unwrap();
    let host = self::host(
        dir.path(),
        Some(json!({"mcpServers": {"demo-2025": {"command": kit::demo::command()}}})),
    );
    assert_eq!(host.demo_twin("demo-2025"), None);
    host.shutdown().await;
}
