//! The names tools are offered under: `SERVER__TOOL`, within `^[A-Za-z0-9_-]{1,64}$` (what
//! clients accept). The rule is a pure function of (server, tool), so a name never changes
//! because another server connected, and a table refuses the rare collision instead of
//! guessing.
//!
//! - The server part is the server's name when it is made of `A-Z a-z 0-9 _ -`, has no `__`,
//!   does not end in `_` and has at most [`MAX_PLAIN_SERVER`] characters; otherwise its
//!   characters outside that set become `_`, it is cut to 20 and gets `_` and 6 hex digits of
//!   the SHA-256 of the name.
//! - The tool part is the tool's name when it is made of that set and the whole name fits in
//!   64; otherwise the same substitution, cut so that `_` and 8 hex digits of the SHA-256 of
//!   the tool's name fit.
//!
//! A plain server part has no `__` and no trailing `_`, so the first `__` of a plain name
//! ends the server: plain names of different servers never meet, and a server cannot name a
//! tool into another server's names.
//!
//! A gateway that offers one server's tools only (`gatehouse serve --server NAME`, see
//! [`Naming::Plain`]) offers them under the tool part alone: the tool's own name when it is
//! in the set and at most 64 long, otherwise the same substitution and hash.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// The longest server name used as it is.
pub const MAX_PLAIN_SERVER: usize = 30;
/// The longest offered name.
pub const MAX_NAME: usize = 64;

const SEPARATOR: &str = "__";

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn substitute(s: &str) -> String {
    s.chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .collect()
}

fn hash_hex(s: &str, digits: usize) -> String {
    let digest = Sha256::digest(s.as_bytes());
    hex::encode(digest)[..digits].to_string()
}

/// The server part of offered names.
pub fn server_part(server: &str) -> String {
    let plain = !server.is_empty()
        && server.chars().all(allowed)
        && !server.contains(SEPARATOR)
        && !server.ends_with('_')
        && server.len() <= MAX_PLAIN_SERVER;
    if plain {
        return server.to_string();
    }
    let mut cut: String = substitute(server).chars().take(20).collect();
    cut.push('_');
    cut.push_str(&hash_hex(server, 6));
    cut
}

/// How a gateway names what it offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// `SERVER__TOOL`: the tools of every server, side by side.
    Prefixed,
    /// The tool part alone: the gateway offers one server's tools only.
    Plain,
}

impl Naming {
    /// The name `tool` of `server` is offered under.
    pub fn name(self, server: &str, tool: &str) -> String {
        match self {
            Naming::Prefixed => offered_name(server, tool),
            Naming::Plain => tool_part(tool, MAX_NAME),
        }
    }
}

/// `tool` as it is when it is in the set and fits in `room`; otherwise substituted, cut and
/// told apart by 8 hex digits of its hash.
fn tool_part(tool: &str, room: usize) -> String {
    let plain = !tool.is_empty() && tool.chars().all(allowed) && tool.len() <= room;
    if plain {
        return tool.to_string();
    }
    let mut cut: String = substitute(tool).chars().take(room - 9).collect();
    cut.push('_');
    cut.push_str(&hash_hex(tool, 8));
    cut
}

/// The name `tool` of `server` is offered under.
pub fn offered_name(server: &str, tool: &str) -> String {
    let server = server_part(server);
    let room = MAX_NAME - server.len() - SEPARATOR.len();
    format!("{server}{SEPARATOR}{}", tool_part(tool, room))
}

/// Whether `name` is one a client accepts.
pub fn is_valid_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len()) && name.chars().all(allowed)
}

/// Offered names to what they stand for. Pairs whose names collide are all left out (and
/// reported): a call must never reach a tool the client did not mean.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NameTable {
    names: BTreeMap<String, (String, String)>,
}

/// Pairs left out of a table because their names met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    pub name: String,
    pub pairs: Vec<(String, String)>,
}

impl NameTable {
    /// The table for `pairs` (server, tool) named by `naming`, with the collisions it left
    /// out.
    pub fn build<'a>(
        naming: Naming,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> (NameTable, Vec<Collision>) {
        let mut all: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (server, tool) in pairs {
            let entry = all.entry(naming.name(server, tool)).or_default();
            let pair = (server.to_string(), tool.to_string());
            if !entry.contains(&pair) {
                entry.push(pair);
            }
        }
        let mut table = NameTable::default();
        let mut collisions = Vec::new();
        for (name, mut pairs) in all {
            if pairs.len() == 1 {
                table.names.insert(name, pairs.remove(0));
            } else {
                collisions.push(Collision { name, pairs });
            }
        }
        (table, collisions)
    }

    /// The server and tool an offered name stands for.
    pub fn resolve(&self, name: &str) -> Option<(&str, &str)> {
        self.names
            .get(name)
            .map(|(server, tool)| (server.as_str(), tool.as_str()))
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ordinary_names_are_kept_readable() {
        assert_eq!(offered_name("demo", "echo"), "demo__echo");
        assert_eq!(
            offered_name("github-prod", "create_issue"),
            "github-prod__create_issue"
        );
    }

    #[test]
    fn names_outside_the_set_or_too_long_are_hashed_not_truncated_into_each_other() {
        let dotted = offered_name("demo", "files.read");
        assert!(dotted.starts_with("demo__files_read_") && is_valid_name(&dotted));
        // The look-alike a server might send to shadow it gets a different name.
        assert_ne!(dotted, offered_name("demo", "files_read"));
        let long = "a".repeat(80);
        let (a, b) = (
            offered_name("demo", &long),
            offered_name("demo", &format!("{long}b")),
        );
        assert!(is_valid_name(&a) && is_valid_name(&b) && a != b);
        let spaced = offered_name("my server", "t");
        assert!(spaced.starts_with("my_server_") && spaced.ends_with("__t"));
    }

    #[test]
    fn a_server_cannot_name_a_tool_into_another_servers_names() {
        // "a__b" + "c" against "a" + "b__c": the first server part is not plain.
        assert_ne!(offered_name("a__b", "c"), offered_name("a", "b__c"));
        assert_ne!(offered_name("a_", "_b"), offered_name("a", "__b"));
    }

    #[test]
    fn a_table_leaves_out_names_that_meet_and_keeps_the_rest() {
        // A server naming a tool exactly like the hashed name of another of its tools.
        let hashed = offered_name("s", "x.y");
        let tool = hashed.strip_prefix("s__").unwrap().to_string();
        let (table, collisions) = NameTable::build(
            Naming::Prefixed,
            [("s", "x.y"), ("s", tool.as_str()), ("s", "ok")],
        );
        assert_eq!(collisions.len(), 1);
        assert_eq!(collisions[0].pairs.len(), 2);
        assert_eq!(table.resolve("s__ok"), Some(("s", "ok")));
        assert_eq!(table.resolve(&hashed), None);
        assert_eq!(table.len(), 1);
    }

    #[test]
    fn one_servers_tools_keep_their_own_names_within_the_set() {
        assert_eq!(
            Naming::Plain.name("s", "test_simple_text"),
            "test_simple_text"
        );
        let dotted = Naming::Plain.name("s", "files.read");
        assert!(dotted.starts_with("files_read_") && is_valid_name(&dotted));
        assert_ne!(dotted, Naming::Plain.name("s", "files_read"));
        let long = "a".repeat(80);
        assert!(is_valid_name(&Naming::Plain.name("s", &long)));
        assert_ne!(
            Naming::Plain.name("s", &long),
            Naming::Plain.name("s", &format!("{long}b"))
        );
        // The look-alike a server names to shadow its own hashed tool is left out, both of
        // them: the table never guesses.
        let shadow = Naming::Plain.name("s", "x.y");
        let (table, collisions) =
            NameTable::build(Naming::Plain, [("s", "x.y"), ("s", shadow.as_str())]);
        assert_eq!((table.len(), collisions.len()), (0, 1));
    }

    proptest! {
        #[test]
        fn every_plain_name_is_valid_and_stable(tool in "\\PC{1,90}") {
            let name = Naming::Plain.name("s", &tool);
            prop_assert!(is_valid_name(&name), "{name}");
            prop_assert_eq!(name, Naming::Plain.name("s", &tool));
        }

        #[test]
        fn every_name_is_valid_and_stable(server in "\\PC{1,70}", tool in "\\PC{1,90}") {
            let name = offered_name(&server, &tool);
            prop_assert!(is_valid_name(&name), "{name}");
            prop_assert_eq!(name, offered_name(&server, &tool));
        }

        #[test]
        fn plain_names_of_different_servers_never_meet(
            s1 in "[a-z0-9-]{1,12}", s2 in "[a-z0-9-]{1,12}",
            t1 in "[A-Za-z0-9_-]{1,30}", t2 in "[A-Za-z0-9_-]{1,30}",
        ) {
            prop_assume!(s1 != s2);
            prop_assert_ne!(offered_name(&s1, &t1), offered_name(&s2, &t2));
        }
    }
}
