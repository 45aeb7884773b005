//! Prompts and resources through the gate, against the real demo server under its demo bundle
//! (deny-by-default, specVersion 2 allow-lists): a denied prompt, read, template or
//! completion writes nothing to the server and is audited; allowed ones work in both eras,
//! with their elicitations asked through the broker and tied to the request that caused them;
//! a server that declares neither primitive is never asked for them.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_attest::bundle::Posture;
use gatehouse_attest::gate::ToolStatus;
use gatehouse_attest::resources::ResourceStatus;
use gatehouse_audit::Record;
use gatehouse_host::config::StdioSpec;
use gatehouse_host::connection::{CompletionTarget, Subscriber};
use gatehouse_host::consent::{
    ScriptedAction, ScriptedConsent, ScriptedEntry, ScriptedMode, SystemBrowser,
};
use gatehouse_host::content::Display;
use gatehouse_host::gatekeeper::events;
use gatehouse_host::tap::Direction;
use gatehouse_host::{
    BrokerOptions, CallOptions, ConnectOptions, Connection, ElicitationBroker, EraPreference,
    HostError, HostEvent, ServerSpec,
};
use gatehouse_policy::Policy;
use gatehouse_policy::policy::DEFAULT_POLICY_TOML;
use gatehouse_testkit as kit;
use serde_json::{Map, Value, json};

/// The test kit's rig, with this file's way of connecting.
struct Host(kit::rig::Rig);

impl std::ops::Deref for Host {
    type Target = kit::rig::Rig;
    fn deref(&self) -> &kit::rig::Rig {
        &self.0
    }
}

impl Host {
    fn new(posture: Option<Posture>, demo_bundle: Option<Vec<u8>>) -> Host {
        Host(kit::rig::Rig::new(posture, demo_bundle))
    }

    fn demo() -> Host {
        Host(kit::rig::Rig::demo())
    }

    async fn connect(
        &self,
        spec: &ServerSpec,
        era: EraPreference,
        answers: Vec<ScriptedEntry>,
    ) -> Connection {
        let broker = ElicitationBroker::new(
            Arc::new(Policy::from_toml(DEFAULT_POLICY_TOML).unwrap()),
            Arc::new(ScriptedConsent::new(answers)),
            Arc::new(SystemBrowser),
            self.gatekeeper.clone(),
            BrokerOptions::default(),
        );
        let options = ConnectOptions {
            era,
            // These tests never read a server's stderr.
            log_dir: None,
            broker: Some(broker),
            ..self.options()
        };
        self.0.connect("demo", spec, &options).await.unwrap()
    }

    /// What the host sent the server for `method`: each request's `params[key]`.
    fn sent(&self, method: &str, key: &str) -> Vec<Value> {
        self.tap
            .entries(None)
            .into_iter()
            .filter(|e| e.direction == Direction::Out && e.message["method"] == method)
            .map(|e| e.message["params"][key].clone())
            .collect()
    }
}

fn form(content: Value) -> ScriptedEntry {
    ScriptedEntry {
        mode: ScriptedMode::Form,
        action: ScriptedAction::Accept,
        content: content.as_object().cloned(),
        override_hold: false,
    }
}

fn args(value: Value) -> Option<Map<String, Value>> {
    value.as_object().cloned()
}

fn reason(error: &HostError) -> &'static str {
    match error {
        HostError::ToolDenied { reason, .. } => reason.as_str(),
        other => panic!("expected a gate denial, got {other:?}"),
    }
}

fn text(display: &Display) -> &str {
    match display {
        Display::Text { text } => text,
        other => panic!("not text: {other:?}"),
    }
}

const ERAS: [EraPreference; 2] = [
    EraPreference::Only(gatehouse_host::Era::V2025_11_25),
    EraPreference::Only(gatehouse_host::Era::V2026_07_28),
];

#[tokio::test]
async fn what_the_bundle_does_not_allow_is_refused_before_a_byte_is_sent() {
    let host = Host::demo();
    let demo = host
        .connect(&kit::demo::spec(), EraPreference::Auto, Vec::new())
        .await;
    // The listing shows what the bundle allows.
    let prompts = demo.gated_prompts().await.unwrap();
    let status = |name: &str| {
        prompts
            .iter()
            .find(|p| p.prompt.name == name)
            .map(|p| p.status.clone())
    };
    assert_eq!(status("summarize"), Some(ToolStatus::Allowed));
    let (resources, templates) = demo.gated_resources().await.unwrap();
    assert!(
        resources
            .iter()
            .all(|r| r.status == ResourceStatus::Allowed),
        "{resources:?}"
    );
    assert_eq!(templates[0].template.uri_template, "demo://notes/{name}");
    assert_eq!(templates[0].status, ResourceStatus::Allowed);

    // An allowed prompt and read work.
    let got = demo
        .get_prompt(
            "summarize",
            args(json!({"topic": "mcp"})),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(text(&got.messages[0].display).contains("mcp"), "{got:?}");
    let read = demo
        .read_resource("demo://docs/welcome.txt", &CallOptions::default())
        .await
        .unwrap();
    assert!(!text(&read.contents[0].display).is_empty());
    let note = demo
        .read_template(
            "demo://notes/{name}",
            &BTreeMap::from([("name".to_string(), "groceries".to_string())]),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(note.uri, "demo://notes/groceries");

    for look_alike in [
        "Summarize",
        "summarize ",
        "summ\u{0430}rize",
        "summarize\u{200b}",
        "markup_prompt",
        "",
    ] {
        let error = demo
            .get_prompt(look_alike, None, &CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(reason(&error), "prompt_not_admitted", "{look_alike:?}");
    }
    for (uri, why) in [
        ("demo://notes/../secrets", "resource_uri_refused"),
        ("demo://notes/%2e%2e/secrets", "resource_uri_refused"),
        ("demo://docs/Welcome.txt", "resource_not_admitted"),
        ("demo://docs/welcome.txt/../../x", "resource_not_admitted"),
        ("demo://other/x", "resource_not_admitted"),
        (
            "https://evil.example/demo://notes/x",
            "resource_not_admitted",
        ),
    ] {
        let error = demo
            .read_resource(uri, &CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(reason(&error), why, "{uri}");
    }
    // A value cannot walk out of the template's prefix: "/" is encoded, and an encoded
    // separator is refused rather than trusted to the server's decoding.
    let error = demo
        .read_template(
            "demo://notes/{name}",
            &BTreeMap::from([("name".to_string(), "../../etc/passwd".to_string())]),
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(reason(&error), "resource_uri_refused");
    // A template the server does not list is not expanded.
    assert!(matches!(
        demo.read_template("{+target}", &BTreeMap::new(), &CallOptions::default())
            .await,
        Err(HostError::Protocol { .. })
    ));
    // Completions for a hidden prompt are not sent either.
    let error = demo
        .complete(
            &CompletionTarget::Prompt("Summarize".into()),
            "topic",
            "m",
            &HashMap::new(),
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(reason(&error), "prompt_not_admitted");
    let completion = demo
        .complete(
            &CompletionTarget::Prompt("summarize".into()),
            "topic",
            "m",
            &HashMap::new(),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(completion.values, ["mcp"]);
    demo.close().await;

    // On the wire: only what was allowed.
    assert_eq!(host.sent("prompts/get", "name"), [json!("summarize")]);
    assert_eq!(
        host.sent("resources/read", "uri"),
        [
            json!("demo://docs/welcome.txt"),
            json!("demo://notes/groceries")
        ]
    );
    assert_eq!(
        host.sent("completion/complete", "ref"),
        [json!({"type": "ref/prompt", "name": "summarize"})]
    );

    let prompts = host.records_of(events::PROMPT_GET);
    let denied: Vec<&Value> = prompts
        .iter()
        .filter(|r| r.data["decision"] == "denied")
        .map(|r| &r.data["prompt"])
        .collect();
    assert_eq!(denied.len(), 7, "{prompts:?}");
    assert_eq!(denied[0], "Summarize");
    assert!(prompts.iter().any(|r| r.data["decision"] == "allowed"
        && r.data["prompt"] == "summarize"
        && r.data["scope"].as_str().unwrap().starts_with("bundle:")));
    let reads = host.records_of(events::RESOURCE_READ);
    let refused: Vec<&str> = reads
        .iter()
        .filter(|r| r.data["decision"] == "denied")
        .map(|r| r.data["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        refused,
        [
            "resource_uri_refused",
            "resource_uri_refused",
            "resource_not_admitted",
            "resource_not_admitted",
            "resource_not_admitted",
            "resource_not_admitted",
            "resource_uri_refused",
        ]
    );
    let allowed: Vec<&Record> = reads
        .iter()
        .filter(|r| r.data["decision"] == "allowed")
        .collect();
    assert_eq!(allowed[1].data["prefix"], "demo://notes/");
}

#[tokio::test]
async fn a_prompt_and_a_read_ask_their_elicitations_in_both_eras() {
    for era in ERAS {
        let host = Host::demo();
        let demo = host
            .connect(
                &kit::demo::spec(),
                era,
                vec![
                    form(json!({"traveller": "Ada", "nights": 3})),
                    form(json!({"magic_word": "open"})),
                ],
            )
            .await;
        let trip = demo
            .get_prompt(
                "plan_trip",
                args(json!({"destination": "Lisbon"})),
                &CallOptions::default(),
            )
            .await
            .unwrap();
        let said = text(&trip.messages[0].display);
        assert!(
            said.contains("Lisbon") && said.contains("Ada") && said.contains('3'),
            "{era:?}: {said}"
        );
        assert_eq!(trip.elicitations.len(), 1, "{era:?}");
        let correlation = &trip.elicitations[0].correlation;
        assert_eq!(correlation.requests[0].method, "prompts/get", "{era:?}");
        assert_eq!(
            correlation.requests[0].tool.as_deref(),
            Some("plan_trip"),
            "{era:?}"
        );

        let diary = demo
            .read_resource("demo://private/diary", &CallOptions::default())
            .await
            .unwrap();
        assert_eq!(
            text(&diary.contents[0].display),
            "Dear diary: the demo works.",
            "{era:?}"
        );
        assert_eq!(diary.elicitations.len(), 1);
        assert_eq!(
            diary.elicitations[0].correlation.requests[0].method,
            "resources/read"
        );
        let expected_rounds = match era {
            EraPreference::Only(gatehouse_host::Era::V2026_07_28) => 2,
            _ => 1,
        };
        assert_eq!(diary.rounds, expected_rounds, "{era:?}");
        demo.close().await;
        // Each elicitation has its receipt.
        assert_eq!(host.records_of(events::ELICITATION_RECEIPT).len(), 2);
    }
}

#[tokio::test]
async fn images_are_checked_and_a_subscription_hears_updates() {
    for era in ERAS {
        let host = Host::demo();
        let demo = host.connect(&kit::demo::spec(), era, Vec::new()).await;
        let logo = demo
            .read_resource("demo://images/logo.png", &CallOptions::default())
            .await
            .unwrap();
        assert!(
            matches!(
                logo.contents[0].display,
                Display::Image {
                    mime: "image/png",
                    ..
                }
            ),
            "{:?}",
            logo.contents
        );
        let sample = demo
            .read_resource("demo://data/sample.bin", &CallOptions::default())
            .await
            .unwrap();
        assert!(matches!(
            sample.contents[0].display,
            Display::Binary {
                size: 64,
                note: None,
                ..
            }
        ));
        let mut updates = host.events.subscribe();
        demo.subscribe_resource("demo://counter", Subscriber::Person, None)
            .await
            .unwrap();
        assert_eq!(demo.subscriptions(), ["demo://counter"]);
        let heard = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Ok(HostEvent::ResourceUpdated { uri, .. }) = updates.recv().await {
                    return uri;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{era:?}: no update"));
        assert_eq!(heard, "demo://counter");
        demo.unsubscribe_resource("demo://counter", Subscriber::Person)
            .await
            .unwrap();
        assert!(demo.subscriptions().is_empty());
        // Subscribing to what the bundle does not allow is refused like a read.
        assert_eq!(
            reason(
                &demo
                    .subscribe_resource("demo://other", Subscriber::Person, None)
                    .await
                    .unwrap_err()
            ),
            "resource_not_admitted"
        );
        demo.close().await;
    }
}

#[tokio::test]
async fn a_server_that_declares_neither_is_never_asked() {
    let host = Host::new(Some(Posture::Warn), None);
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/misbehaving_stdio.py");
    let fixture = ServerSpec::Stdio(StdioSpec {
        command: "python3".into(),
        args: vec![script.display().to_string(), "record".into()],
        env: Vec::new(),
        cwd: None,
    });
    let server = host
        .connect(&fixture, EraPreference::Auto, Vec::new())
        .await;
    let sent = server.bytes_sent();
    assert!(server.prompts().await.unwrap().is_empty());
    assert!(server.resources().await.unwrap().is_empty());
    assert!(server.resource_templates().await.unwrap().is_empty());
    for error in [
        server
            .get_prompt("p", None, &CallOptions::default())
            .await
            .unwrap_err(),
        server
            .read_resource("file:///x", &CallOptions::default())
            .await
            .unwrap_err(),
    ] {
        assert_eq!(error.code().as_str(), "not_offered", "{error}");
    }
    assert_eq!(server.bytes_sent(), sent, "a request went to the server");
    server.close().await;
}
