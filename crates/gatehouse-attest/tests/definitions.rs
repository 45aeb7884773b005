//! Definitions carried in a bundle (`toolDefinitions`, `promptDefinitions`, specVersion 6):
//! copies for reviewers that must agree with the pins the host enforces.

use gatehouse_attest::bundle::Bundle;
use gatehouse_attest::pins::{prompt_pin, tool_pin};
use serde_json::{Value, json};

fn vectors_root() -> Value {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/atsa/_trust-root.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn forecast() -> Value {
    json!({"name": "get_forecast", "description": "Forecast for a city.",
           "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}})
}

fn summary() -> Value {
    json!({"name": "summary", "description": "Summarise the week.",
           "arguments": [{"name": "week", "required": true}]})
}

/// An unsigned bundle (`parse` checks structure only) with one entry carrying both kinds.
fn signed(spec_version: u64) -> Value {
    let tr = vectors_root();
    json!({
        "type": "gatehouse-trust-root", "specVersion": spec_version, "bundleId": "acme",
        "version": 1, "expires": "2027-06-30T00:00:00Z",
        "root": {"threshold": 1, "keys": [{"id": "admin-1", "publicKey": tr["keys"][0]["publicKey"]}]},
        "posture": "deny-by-default", "requiredClearance": "internal",
        "scheme": tr["scheme"], "keys": tr["keys"],
        "servers": [{
            "id": "urn:omcp:server:weather", "origins": ["https://tools.example.com"],
            "allowedTools": ["get_forecast", "list_stations"],
            "toolPins": {"get_forecast": tool_pin(&forecast())},
            "toolDefinitions": {"get_forecast": forecast()},
            "allowedPrompts": ["summary"],
            "promptPins": {"summary": prompt_pin(&summary())},
            "promptDefinitions": {"summary": summary()}
        }]
    })
}

fn parse(signed: &Value) -> Result<Bundle, String> {
    Bundle::parse(&serde_json::to_vec(&json!({"signed": signed})).unwrap()).map_err(|e| {
        assert_eq!(e.code(), "bundle_invalid");
        e.to_string()
    })
}

#[test]
fn carried_definitions_that_match_their_pins_are_kept() {
    let bundle = parse(&signed(6)).unwrap();
    let entry = &bundle.content().servers[0];
    assert_eq!(entry.tool_definitions["get_forecast"], forecast());
    assert_eq!(entry.prompt_definitions["summary"], summary());
    // Optional: an entry without them is as before.
    let mut none = signed(6);
    let server = none["servers"][0].as_object_mut().unwrap();
    server.remove("toolDefinitions");
    server.remove("promptDefinitions");
    let bundle = parse(&none).unwrap();
    assert!(bundle.content().servers[0].tool_definitions.is_empty());
    assert!(bundle.content().servers[0].prompt_definitions.is_empty());
}

#[test]
fn a_definition_that_does_not_hash_to_its_pin_is_refused() {
    // One invisible character in the description: what a reviewer would read is not what
    // the pin enforces.
    let mut tool = signed(6);
    tool["servers"][0]["toolDefinitions"]["get_forecast"]["description"] =
        json!("Forecast for a city.\u{200B}");
    let error = parse(&tool).unwrap_err();
    assert!(
        error.contains("signed.servers[0].toolDefinitions.get_forecast hashes to sha256:")
            && error.contains("not to its pin")
            && error.contains("contradicts itself"),
        "{error}"
    );
    let mut prompt = signed(6);
    prompt["servers"][0]["promptDefinitions"]["summary"]["arguments"][0]["required"] = json!(false);
    let error = parse(&prompt).unwrap_err();
    assert!(
        error.contains("signed.servers[0].promptDefinitions.summary hashes to"),
        "{error}"
    );
    // A definition under another name, even one that hashes to the pin it is filed under.
    let mut renamed = signed(6);
    let mut other = forecast();
    other["name"] = json!("list_stations");
    renamed["servers"][0]["toolPins"]["get_forecast"] = json!(tool_pin(&other));
    renamed["servers"][0]["toolDefinitions"]["get_forecast"] = other;
    let error = parse(&renamed).unwrap_err();
    assert!(
        error.contains("toolDefinitions.get_forecast: the definition's \"name\" is not"),
        "{error}"
    );
    let mut not_object = signed(6);
    not_object["servers"][0]["toolDefinitions"]["get_forecast"] = json!("Forecast for a city.");
    assert!(parse(&not_object).unwrap_err().contains("an object"));
    let mut not_map = signed(6);
    not_map["servers"][0]["toolDefinitions"] = json!([forecast()]);
    assert!(
        parse(&not_map)
            .unwrap_err()
            .contains("toolDefinitions must be an object of name to definition")
    );
}

#[test]
fn a_definition_for_a_name_that_is_not_pinned_is_refused() {
    // Allowed but not pinned: a copy would show a reviewer one definition while any passes.
    let mut tool = signed(6);
    let mut stations = forecast();
    stations["name"] = json!("list_stations");
    tool["servers"][0]["toolDefinitions"]["list_stations"] = stations;
    let error = parse(&tool).unwrap_err();
    assert!(
        error.contains(
            "signed.servers[0].toolDefinitions carries \"list_stations\", which toolPins does not pin"
        ),
        "{error}"
    );
    let mut prompt = signed(6);
    prompt["servers"][0]["promptDefinitions"]["weekly"] = json!({"name": "weekly"});
    let error = parse(&prompt).unwrap_err();
    assert!(
        error.contains("promptDefinitions carries \"weekly\", which promptPins does not pin"),
        "{error}"
    );
}

#[test]
fn below_spec_version_6_the_keys_are_refused_by_name() {
    for key in ["toolDefinitions", "promptDefinitions"] {
        let mut v5 = signed(5);
        let other = if key == "toolDefinitions" {
            "promptDefinitions"
        } else {
            "toolDefinitions"
        };
        v5["servers"][0].as_object_mut().unwrap().remove(other);
        let error = parse(&v5).unwrap_err();
        assert!(
            error.contains(&format!("signed.servers[0].{key} needs \"specVersion\": 6")),
            "{error}"
        );
        v5["specVersion"] = json!(6);
        assert!(parse(&v5).is_ok());
    }
}
