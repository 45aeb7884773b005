//! Where a client's resource URI goes: pure, so the rule is tested and fuzzed on its own
//! (`fuzz/fuzz_targets/gateway_requests.rs` compiles this file alone).
//!
//! Resource URIs cannot be renamed without breaking the links inside content, so they are
//! offered as the servers list them and routed back: a URI one server lists exactly goes to
//! it; otherwise to the server of the template with the longest literal start the URI begins
//! with. A URI two servers list, or a template start two servers share, is left out rather
//! than guessed, and a URI two servers list is never routed by a template either. The one
//! exception is a pair of connections to one server in two eras (the demo's `demo-2025` is
//! `demo` in 2025-11-25): what both list is offered once, from the primary. Routing is never
//! authorization: the server's gate decides the URI afterwards.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use gatehouse_attest::uri_template::literal_prefix;

/// What every server offers, as routing sees it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Routes {
    /// URI → the one server that lists it.
    pub resources: BTreeMap<String, String>,
    /// Template → the one server that lists it.
    pub templates: BTreeMap<String, String>,
    /// URIs more than one server lists: never routed.
    pub collided: BTreeSet<String>,
}

impl Routes {
    /// The routes for `resources` and `templates`, each (server, URI or template), where
    /// `twins` maps a server to the primary it is another era of: the twin's entries that
    /// the primary lists too are dropped before collisions are counted.
    pub fn build(
        resources: &[(String, String)],
        templates: &[(String, String)],
        twins: &HashMap<String, String>,
    ) -> Routes {
        let mut routes = Routes::default();
        for (uri, servers) in owners(resources, twins) {
            match servers.first().filter(|_| servers.len() == 1) {
                Some(one) => {
                    routes.resources.insert(uri.to_string(), one.to_string());
                }
                None => {
                    routes.collided.insert(uri.to_string());
                }
            }
        }
        for (template, servers) in owners(templates, twins) {
            if let Some(one) = servers.first().filter(|_| servers.len() == 1) {
                routes
                    .templates
                    .insert(template.to_string(), one.to_string());
            }
        }
        routes
    }

    /// Where `uri` goes: the server that lists it, else the one whose template's literal start
    /// it begins with (the longest; two servers' templates with that start leave it unrouted).
    /// A URI two servers list goes nowhere, not even by template.
    pub fn route(&self, uri: &str) -> Option<&str> {
        if self.collided.contains(uri) {
            return None;
        }
        if let Some(server) = self.resources.get(uri) {
            return Some(server);
        }
        let mut starts: Vec<(&str, &str)> = self
            .templates
            .iter()
            .map(|(template, server)| (literal_prefix(template), server.as_str()))
            .filter(|(start, _)| !start.is_empty() && uri.starts_with(start))
            .collect();
        starts.sort_by_key(|(start, _)| std::cmp::Reverse(start.len()));
        match starts.as_slice() {
            [(start, server), rest @ ..]
                if rest.iter().all(|(s, other)| s != start || other == server) =>
            {
                Some(server)
            }
            _ => None,
        }
    }
}

/// Who lists each item (URI or template), a twin's entries that its primary lists too left
/// out.
fn owners<'a>(
    list: &'a [(String, String)],
    twins: &HashMap<String, String>,
) -> BTreeMap<&'a str, BTreeSet<&'a str>> {
    let mut owners: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (server, item) in list {
        let shadowed = twins
            .get(server)
            .is_some_and(|primary| list.iter().any(|(s, i)| s == primary && i == item));
        if !shadowed {
            owners.entry(item).or_default().insert(server);
        }
    }
    owners
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(s, i)| (s.to_string(), i.to_string()))
            .collect()
    }

    fn build(twins: &[(&str, &str)]) -> Routes {
        Routes::build(
            &pairs(&[
                ("one", "docs://a/readme"),
                ("one", "docs://shared/index"),
                ("two", "docs://shared/index"),
            ]),
            &pairs(&[("two", "docs://shared/{name}"), ("one", "docs://{path}")]),
            &twins
                .iter()
                .map(|(t, p)| (t.to_string(), p.to_string()))
                .collect(),
        )
    }

    #[test]
    fn a_uri_two_servers_list_goes_nowhere_even_when_a_template_starts_it() {
        let routes = build(&[]);
        // Listed by two servers: left out, never guessed through the template that starts it.
        assert_eq!(routes.route("docs://shared/index"), None);
        // What only one lists, and what one template starts, still route.
        assert_eq!(routes.route("docs://a/readme"), Some("one"));
        assert_eq!(routes.route("docs://shared/other"), Some("two"));
        assert_eq!(routes.route("docs://b"), Some("one"));
        assert_eq!(routes.route("mail://x"), None);
    }

    #[test]
    fn two_servers_templates_with_one_start_route_nothing() {
        let mut routes = build(&[]);
        routes
            .templates
            .insert("docs://shared/{id}".into(), "three".into());
        assert_eq!(routes.route("docs://shared/other"), None);
    }

    #[test]
    fn a_twin_gives_way_to_its_primary_and_only_a_twin_does() {
        // `two` is another era of `one`: the URI both list is offered once, from `one`.
        let routes = build(&[("two", "one")]);
        assert_eq!(routes.route("docs://shared/index"), Some("one"));
        assert!(routes.collided.is_empty());
        // The twin's own template, which the primary does not list, stays its own.
        assert_eq!(routes.route("docs://shared/other"), Some("two"));
        // The other way round does not hide the primary's.
        let routes = build(&[("one", "nobody")]);
        assert_eq!(routes.route("docs://shared/index"), None);
    }
}
