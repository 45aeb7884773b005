//! What an AI client sends the gateway, against what the servers list: offered names
//! (gatehouse-gateway's src/names.rs), URI routing (src/routing.rs), template values and the
//! resource gate on what they expand to. The two gateway files are compiled here on their own,
//! as the stdio target does with the host's framer, so the fuzz build does not bring the whole
//! host. (The gateway answers every listing whole and ignores a client's cursor, so a cursor
//! reaches no code; the upstream servers' cursors are bounded by the host's listing loop.)
//!
//! Input: lines. `R server uri` and `T server template` are what servers list, `N server name`
//! a tool or prompt, `W twin primary` two eras of one server, `G prefix` an allowed resource
//! prefix, `E uri` an allowed exact URI; `U uri` a client's read, `P name` a client's tool or
//! prompt name, `V name value` a template value.
//!
//! Properties: a URI two servers list goes nowhere; a URI one server lists goes to it; a URI
//! routed by template goes to the server of the longest template start it begins with, which
//! no other server shares; a resolved name is the name of exactly the pair it resolves to, and
//! every offered name is within the clients' character set and length; an expansion starts
//! with its template's literal start; what the resource gate allows under a prefix stays
//! under it however often a careless server percent-decodes it.
#![no_main]

#[path = "../../crates/gatehouse-gateway/src/names.rs"]
#[allow(dead_code)]
mod names;
#[path = "../../crates/gatehouse-gateway/src/routing.rs"]
mod routing;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use gatehouse_attest::gate::Scope;
use gatehouse_attest::resources::{ResourceAllowList, ResourceGate};
use gatehouse_attest::uri_template::{Template, literal_prefix};
use libfuzzer_sys::fuzz_target;
use names::{NameTable, Naming, is_valid_name};
use routing::Routes;

/// Bounds, so one input stays fast.
const MAX_LINES: usize = 64;

fn percent_decode(text: &str) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((high * 16 + low) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut resources = Vec::new();
    let mut templates = Vec::new();
    let mut tools = Vec::new();
    let mut twins = HashMap::new();
    let mut prefixes = Vec::new();
    let mut exact = Vec::new();
    let mut reads = Vec::new();
    let mut asked = Vec::new();
    let mut values = BTreeMap::new();
    for line in text.lines().take(MAX_LINES) {
        let mut parts = line.splitn(3, ' ');
        let (Some(kind), Some(a)) = (parts.next(), parts.next()) else {
            continue;
        };
        let b = parts.next();
        match (kind, b) {
            ("R", Some(b)) => resources.push((a.to_string(), b.to_string())),
            ("T", Some(b)) => templates.push((a.to_string(), b.to_string())),
            ("N", Some(b)) => tools.push((a.to_string(), b.to_string())),
            ("W", Some(b)) => {
                twins.insert(a.to_string(), b.to_string());
            }
            ("V", Some(b)) => {
                values.insert(a.to_string(), b.to_string());
            }
            ("G", _) => prefixes.push(a.to_string()),
            ("E", _) => exact.push(a.to_string()),
            ("U", _) => reads.push(a.to_string()),
            ("P", _) => asked.push(a.to_string()),
            _ => {}
        }
    }

    // Routing.
    let routes = Routes::build(&resources, &templates, &twins);
    let shadowed = |server: &str, uri: &str| {
        twins.get(server).is_some_and(|primary| {
            resources.iter().any(|(s, u)| s == primary && u == uri)
        })
    };
    let listers = |uri: &str| -> BTreeSet<&str> {
        resources
            .iter()
            .filter(|(s, u)| u == uri && !shadowed(s, u))
            .map(|(s, _)| s.as_str())
            .collect()
    };
    for uri in reads.iter().chain(resources.iter().map(|(_, u)| u)) {
        let routed = routes.route(uri);
        let by = listers(uri);
        match by.len() {
            0 => {}
            1 => assert_eq!(routed, by.first().copied(), "{uri:?} listed by one server"),
            _ => assert_eq!(routed, None, "{uri:?} listed by {by:?} was routed"),
        }
        if let Some(server) = routed
            && by.is_empty()
        {
            // By template: the longest start the URI begins with is this server's alone.
            let starts: Vec<(&str, &str)> = routes
                .templates
                .iter()
                .map(|(t, s)| (literal_prefix(t), s.as_str()))
                .filter(|(start, _)| !start.is_empty() && uri.starts_with(start))
                .collect();
            let longest = starts.iter().map(|(s, _)| s.len()).max().expect("a start");
            for (start, owner) in starts {
                if start.len() == longest {
                    assert_eq!(owner, server, "{uri:?}: a shared start routed");
                }
            }
        }
    }

    // Names.
    for naming in [Naming::Prefixed, Naming::Plain] {
        let (table, _collisions) = NameTable::build(
            naming,
            tools.iter().map(|(s, t)| (s.as_str(), t.as_str())),
        );
        for (server, tool) in &tools {
            let name = naming.name(server, tool);
            assert!(is_valid_name(&name), "{name:?} offered for ({server:?}, {tool:?})");
        }
        for name in asked.iter().chain(tools.iter().map(|(_, t)| t)) {
            if let Some((server, tool)) = table.resolve(name) {
                assert_eq!(naming.name(server, tool), *name);
                assert!(tools.iter().any(|(s, t)| s == server && t == tool));
            }
        }
    }

    // Template values and the resource gate on what they expand to.
    let mut allow = ResourceAllowList::new();
    for prefix in &prefixes {
        let _ = allow.allow_prefix(prefix, Scope::User);
    }
    for uri in &exact {
        let _ = allow.allow_uri(uri, Scope::User);
    }
    let gate = ResourceGate::new(allow);
    let mut candidates: Vec<String> = reads.clone();
    for (_, template) in &templates {
        if let Ok(parsed) = Template::parse(template)
            && let Ok(expanded) = parsed.expand(&values)
        {
            assert!(
                expanded.starts_with(literal_prefix(template)),
                "{template:?} expanded to {expanded:?}"
            );
            candidates.push(expanded);
        }
    }
    for uri in &candidates {
        let Ok(permit) = gate.check(uri) else {
            continue;
        };
        assert_eq!(permit.uri(), uri);
        let Some(prefix) = permit.prefix() else {
            assert!(exact.contains(uri));
            continue;
        };
        // However often a careless server decodes what follows the prefix, it never holds a
        // step out of it, a separator of another kind, a query, a fragment or a NUL.
        let mut rest = uri[prefix.len()..].to_string();
        for _ in 0..3 {
            let decoded = String::from_utf8_lossy(&percent_decode(&rest)).into_owned();
            assert!(
                !decoded.split('/').any(|s| s == ".." || s == "."),
                "{uri:?} decodes to a dot segment: {decoded:?}"
            );
            assert!(
                !decoded.contains(['\\', '?', '#', '\0']) && !decoded.starts_with('/'),
                "{uri:?} decodes to {decoded:?}"
            );
            rest = decoded;
        }
    }
});
