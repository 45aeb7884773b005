//! The definition review (`gatehouse_review::review`, `escape`) on server-supplied definitions.
//! The input is JSON: `{"definition": D, "other_tools": [[SERVER, TOOL], …]}` (how the seeds
//! are written: the real tools of server-everything and the demo), or any other value, taken as
//! a tool's definition with no other tools. Properties: never more than `MAX_FINDINGS`; nothing
//! a finding shows (field, excerpt) and nothing `escape` returns holds an invisible character;
//! `escape` changes exactly the strings that hold one, and escaping twice changes nothing more;
//! the same input reviews the same way every time.
#![no_main]

use gatehouse_review::{Context, MAX_FINDINGS, Primitive, escape, is_invisible, review};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push(k);
            strings(v, out);
        }),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let (definition, others) = match input.get("definition") {
        Some(definition) => (definition, input.get("other_tools")),
        None => (&input, None),
    };
    let pairs: Vec<(&str, &str)> = others
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|pair| Some((pair.get(0)?.as_str()?, pair.get(1)?.as_str()?)))
                .collect()
        })
        .unwrap_or_default();
    let context = Context {
        other_tools: &pairs,
    };
    for primitive in [Primitive::Tool, Primitive::Prompt, Primitive::Resource] {
        let findings = review(primitive, definition, &context);
        assert!(
            findings.len() <= MAX_FINDINGS,
            "{} findings",
            findings.len()
        );
        for finding in &findings {
            assert!(
                !finding.field.chars().any(is_invisible),
                "field {:?}",
                finding.field
            );
            assert!(
                !finding.excerpt.chars().any(is_invisible),
                "excerpt {:?}",
                finding.excerpt
            );
        }
        assert_eq!(findings, review(primitive, definition, &context));
    }
    let mut texts = Vec::new();
    strings(definition, &mut texts);
    for text in texts.into_iter().take(64) {
        let shown = escape(text);
        assert!(
            !shown.chars().any(is_invisible),
            "escape left one in {shown:?}"
        );
        assert_eq!(shown != text, text.chars().any(is_invisible));
        assert_eq!(escape(&shown), shown);
    }
});
