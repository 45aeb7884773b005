//! Per-call gate cost: `ToolGate::check` runs before every `tools/call` leaves the host, so it
//! must stay far below a round trip. Target: under 5 µs. `observe` (JCS and SHA-256 of every
//! definition, once per `tools/list`) is measured for context.
//! Run: `cargo bench -p gatehouse-attest --bench gate`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use gatehouse_attest::gate::{AllowList, GateReason, Scope, ToolGate};
use gatehouse_attest::pins::tool_digest;
use serde_json::{Value, json};

/// 50 tool definitions shaped like real ones: title, description, nested schemas, annotations.
fn tools() -> Vec<Value> {
    (0..50)
        .map(|i| {
            let name = if i == 17 {
                "get_forecast".to_string()
            } else {
                format!("tool_{i:02}")
            };
            json!({
                "name": name,
                "title": format!("Tool {i}"),
                "description": format!("Does thing number {i} for the caller and returns a summary."),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "City name"},
                        "days": {"type": "integer", "minimum": 1, "maximum": 14},
                        "units": {"type": "string", "enum": ["metric", "imperial"]}
                    },
                    "required": ["city"]
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {"summary": {"type": "string"}, "items": {"type": "array"}}
                },
                "annotations": {"readOnlyHint": true, "openWorldHint": false}
            })
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let tools = tools();
    let mut allow = AllowList::new();
    for tool in &tools {
        allow.allow(
            tool["name"].as_str().unwrap(),
            Scope::Bundle("acme@7".into()),
            Some(tool_digest(tool)),
        );
    }
    let mut gate = ToolGate::new(allow);
    assert!(gate.observe(&tools).is_empty());
    assert!(gate.check("get_forecast").unwrap().pinned());
    let look_alike = "get_f\u{043e}recast";
    assert_eq!(
        gate.check(look_alike).unwrap_err().reason,
        GateReason::ToolNotAdmitted
    );

    let mut group = c.benchmark_group("gate_check");
    group.bench_function("allowed", |b| {
        b.iter(|| gate.check(black_box("get_forecast")).is_ok())
    });
    group.bench_function("denied_lookalike", |b| {
        b.iter(|| gate.check(black_box(look_alike)).is_err())
    });
    group.finish();

    let mut group = c.benchmark_group("gate_observe");
    group.bench_function("50_tools", |b| {
        b.iter(|| gate.observe(black_box(&tools)).len())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
