//! Bindings for the tests, parsed by the bundle parser exactly as a signed bundle's would be.

use gatehouse_attest::package::{PackageBinding, parse_package};
use serde_json::{Value, json};

pub(crate) fn sri(n: u8) -> String {
    use base64::Engine;
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode([n; 64])
    )
}

pub(crate) fn hex256(n: u8) -> String {
    hex::encode([n; 32])
}

pub(crate) fn npm_json() -> Value {
    json!({
        "ecosystem": "npm",
        "name": "@modelcontextprotocol/server-filesystem",
        "version": "2026.8.31",
        "artifact": sri(1),
        "closure": [
            {"name": "@modelcontextprotocol/sdk", "version": "1.20.0", "artifact": sri(2),
             "path": "node_modules/@modelcontextprotocol/sdk"},
            {"name": "zod", "version": "3.25.76", "artifact": sri(3),
             "path": "node_modules/@modelcontextprotocol/sdk/node_modules/zod"}
        ],
        "entry": "dist/index.js",
        "interpreter": {"kind": "node", "sha256": [hex256(4)]},
        "userArgs": [{"rule": "existing_directory_under_home", "access": "read_write", "min": 1, "max": 8}],
        "attestation": {"body": {}}
    })
}

pub(crate) fn pypi_json() -> Value {
    json!({
        "ecosystem": "pypi",
        "name": "mcp-server-time",
        "version": "2026.10.19",
        "artifact": format!("sha256:{}", hex256(7)),
        "closure": [
            {"name": "mcp", "version": "1.20.0", "artifact": format!("sha256:{}", hex256(8))},
            {"name": "tzdata", "version": "2025.2", "artifact": format!("sha256:{}", hex256(9))}
        ],
        "entry": "mcp-server-time",
        "interpreter": {"kind": "python", "sha256": [hex256(10)]},
        "args": ["--local-timezone", "UTC"],
        "attestation": {"body": {}}
    })
}

pub(crate) fn mcpb_json() -> Value {
    json!({
        "ecosystem": "mcpb",
        "name": "hello-world",
        "version": "0.1.0",
        "artifact": format!("sha256:{}", hex256(11)),
        "closure": [],
        "entry": "server/index.js",
        "interpreter": {"kind": "binary"},
        "userArgs": [{"rule": "one_of", "values": ["--verbose", "--quiet"]}],
        "attestation": {"body": {}}
    })
}

/// `raw` with the JSON pointer `pointer` set to `value`.
pub(crate) fn with(mut raw: Value, pointer: &str, value: Value) -> Value {
    *raw.pointer_mut(pointer).expect("pointer into the fixture") = value;
    raw
}

pub(crate) fn binding(raw: &Value) -> PackageBinding {
    parse_package(raw, "signed.servers[0].package").expect("fixture binding parses")
}
