//! One client's config file as a JSON document: its servers object, whether it is connected,
//! and the rewrite that leaves Gatehouse as its only server.
//!
//! serde_json keeps object keys in file order here (the workspace enables `preserve_order`),
//! so every key the client keeps (Claude Code's ~/.claude.json holds much of its state) comes
//! back in place with its value unchanged.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::{ClientError, ClientErrorCode, ClientId, Location};

/// The name of Gatehouse's entry in a connected client's file.
pub const ENTRY_NAME: &str = "gatehouse";

pub struct ClientDocument {
    pub bytes: Vec<u8>,
    root: Map<String, Value>,
    key: &'static [&'static str],
}

impl ClientDocument {
    /// Reads and parses the file: strict JSON, an object at the root.
    pub fn read(location: &Location) -> Result<ClientDocument, ClientError> {
        let bytes = match std::fs::read(&location.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ClientError::new(
                    ClientErrorCode::ClientConfigMissing,
                    format!(
                        "{} has no config file at {}; nothing to connect (start {} once, or add a server to it first)",
                        location.client.display_name(),
                        location.path.display(),
                        location.client.display_name()
                    ),
                ));
            }
            Err(e) => return Err(ClientError::io("read", &location.path, e)),
        };
        ClientDocument::parse(bytes, location)
    }

    pub fn parse(bytes: Vec<u8>, location: &Location) -> Result<ClientDocument, ClientError> {
        let invalid = |detail: String| {
            ClientError::new(
                ClientErrorCode::ClientConfigInvalid,
                format!("{}: {detail}", location.path.display()),
            )
        };
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
            invalid(format!(
                "not strict JSON (line {} column {}: {e}); comments and trailing commas (JSONC) are not rewritten, so that none is lost: remove them, then try again",
                e.line(),
                e.column()
            ))
        })?;
        let Value::Object(root) = value else {
            return Err(invalid("the file is not a JSON object".into()));
        };
        let doc = ClientDocument {
            bytes,
            root,
            key: location.key,
        };
        if let Some(found) = doc.lookup()
            && !found.is_object()
        {
            return Err(invalid(format!(
                "\"{}\" is not an object",
                location.key.join(".")
            )));
        }
        Ok(doc)
    }

    fn lookup(&self) -> Option<&Value> {
        let (first, rest) = self.key.split_first()?;
        rest.iter()
            .try_fold(self.root.get(*first)?, |value, key| value.get(*key))
    }

    /// The servers object; `None` when the file has none.
    pub fn servers(&self) -> Option<&Map<String, Value>> {
        self.lookup().and_then(Value::as_object)
    }

    /// Connected: the only server is Gatehouse's `serve --client ID` entry for this client.
    pub fn is_connected(&self, client: ClientId) -> bool {
        let Some(servers) = self.servers() else {
            return false;
        };
        servers.len() == 1
            && servers.get(ENTRY_NAME).is_some_and(|entry| {
                entry.get("args") == Some(&json!(serve_args(client)))
                    && entry
                        .get("command")
                        .and_then(Value::as_str)
                        .and_then(|c| Path::new(c).file_name())
                        .is_some_and(|name| name == "gatehouse")
            })
    }

    /// The file's bytes with its servers object replaced by Gatehouse's entry alone, in the
    /// file's own indentation and final newline.
    pub fn rewritten(&self, client: ClientId, gatehouse: &Path) -> Vec<u8> {
        let mut root = self.root.clone();
        let (last, parents) = self.key.split_last().expect("a key is never empty");
        let mut object = &mut root;
        for key in parents {
            let slot = object
                .entry(key.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            object = slot.as_object_mut().expect("made an object above");
        }
        let mut servers = Map::new();
        servers.insert(ENTRY_NAME.to_string(), entry(client, gatehouse));
        // Replacing a key's value keeps its place in the file.
        object.insert(last.to_string(), Value::Object(servers));
        let mut out = Vec::new();
        let indent = indentation(&self.bytes);
        let formatter = serde_json::ser::PrettyFormatter::with_indent(&indent);
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
        serde::Serialize::serialize(&Value::Object(root), &mut serializer)
            .expect("JSON serializes");
        if self.bytes.ends_with(b"\n") {
            out.push(b'\n');
        }
        out
    }

    #[cfg(test)]
    pub fn root(&self) -> &Map<String, Value> {
        &self.root
    }
}

pub fn serve_args(client: ClientId) -> [&'static str; 3] {
    ["serve", "--client", client.as_str()]
}

/// Gatehouse's entry: the running binary's absolute path, `serve --client ID`. VS Code
/// requires a `type`; Claude Code writes one itself for stdio servers.
pub fn entry(client: ClientId, gatehouse: &Path) -> Value {
    let mut entry = Map::new();
    if matches!(client, ClientId::Vscode | ClientId::ClaudeCode) {
        entry.insert("type".into(), json!("stdio"));
    }
    entry.insert("command".into(), json!(gatehouse.display().to_string()));
    entry.insert("args".into(), json!(serve_args(client)));
    Value::Object(entry)
}

/// The indentation of the first indented line (spaces or a tab), or two spaces.
fn indentation(bytes: &[u8]) -> Vec<u8> {
    bytes
        .split(|b| *b == b'\n')
        .skip(1)
        .map(|line| {
            line.iter()
                .take_while(|b| **b == b' ' || **b == b'\t')
                .copied()
                .collect::<Vec<u8>>()
        })
        .find(|indent| !indent.is_empty())
        .unwrap_or_else(|| b"  ".to_vec())
}

/// The top-level keys whose values differ between two documents, each as `added KEY`,
/// `removed KEY` or `changed KEY`.
pub fn changed_keys(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<String> {
    let mut changes = Vec::new();
    for (key, value) in before {
        match after.get(key) {
            None => changes.push(format!("removed {key}")),
            Some(now) if now != value => changes.push(format!("changed {key}")),
            Some(_) => {}
        }
    }
    for key in after.keys() {
        if !before.contains_key(key) {
            changes.push(format!("added {key}"));
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::super::Scope;
    use super::*;

    fn at(client: ClientId, key: &'static [&'static str]) -> Location {
        Location {
            client,
            scope: Scope::User,
            path: "client.json".into(),
            key,
        }
    }

    #[test]
    fn rewrite_keeps_every_other_key_in_place_and_the_files_style() {
        let text = "{\n    \"numStartups\": 12,\n    \"mcpServers\": {\"a\": {\"command\": \"x\"}},\n    \"projects\": {\"/p\": {\"mcpServers\": {}}},\n    \"z\": [1, 2.5, \"é\"]\n}\n";
        let location = at(ClientId::ClaudeCode, &["mcpServers"]);
        let doc = ClientDocument::parse(text.as_bytes().to_vec(), &location).unwrap();
        assert!(!doc.is_connected(ClientId::ClaudeCode));
        let out = doc.rewritten(ClientId::ClaudeCode, Path::new("/usr/bin/gatehouse"));
        let text_out = String::from_utf8(out.clone()).unwrap();
        assert!(text_out.starts_with("{\n    \"numStartups\": 12,\n    \"mcpServers\""));
        assert!(text_out.ends_with("}\n"));
        let again = ClientDocument::parse(out, &location).unwrap();
        assert!(again.is_connected(ClientId::ClaudeCode));
        assert!(!again.is_connected(ClientId::Cursor));
        let keys: Vec<&String> = again.root().keys().collect();
        assert_eq!(keys, ["numStartups", "mcpServers", "projects", "z"]);
        assert_eq!(
            changed_keys(doc.root(), again.root()),
            ["changed mcpServers"]
        );
        assert_eq!(again.root()["z"], json!([1, 2.5, "é"]));
    }

    #[test]
    fn vscode_entries_say_stdio_and_nested_keys_are_created() {
        let location = at(ClientId::Vscode, &["mcp", "servers"]);
        let doc = ClientDocument::parse(br#"{"editor.fontSize": 14}"#.to_vec(), &location).unwrap();
        assert_eq!(doc.servers(), None);
        let out = doc.rewritten(ClientId::Vscode, Path::new("/opt/gatehouse"));
        let value: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            value["mcp"]["servers"]["gatehouse"],
            json!({"type": "stdio", "command": "/opt/gatehouse", "args": ["serve", "--client", "vscode"]})
        );
        assert_eq!(value["editor.fontSize"], 14);
    }

    #[test]
    fn only_a_lone_gatehouse_entry_for_this_client_is_connected() {
        let location = at(ClientId::Cursor, &["mcpServers"]);
        let connected = |text: &str| {
            ClientDocument::parse(text.as_bytes().to_vec(), &location)
                .unwrap()
                .is_connected(ClientId::Cursor)
        };
        let ours = r#"{"command": "/x/gatehouse", "args": ["serve", "--client", "cursor"]}"#;
        assert!(connected(&format!(
            r#"{{"mcpServers": {{"gatehouse": {ours}}}}}"#
        )));
        assert!(!connected(&format!(
            r#"{{"mcpServers": {{"gatehouse": {ours}, "other": {{"command": "y"}}}}}}"#
        )));
        assert!(!connected(
            r#"{"mcpServers": {"gatehouse": {"command": "/x/evil", "args": ["serve", "--client", "cursor"]}}}"#
        ));
        assert!(!connected(
            r#"{"mcpServers": {"gatehouse": {"command": "/x/gatehouse", "args": ["serve", "--client", "vscode"]}}}"#
        ));
        assert!(!connected(r#"{"mcpServers": {}}"#));
    }

    #[test]
    fn jsonc_and_odd_shapes_are_refused_with_the_place() {
        let location = at(ClientId::Vscode, &["servers"]);
        let refuse = |text: &str| {
            ClientDocument::parse(text.as_bytes().to_vec(), &location)
                .err()
                .map(|e| (e.code, e.message))
        };
        let (code, message) = refuse("{\n  // mine\n  \"servers\": {}\n}").unwrap();
        assert_eq!(code, ClientErrorCode::ClientConfigInvalid);
        assert!(
            message.contains("line 2") && message.contains("JSONC"),
            "{message}"
        );
        assert!(refuse(r#"{"servers": {},}"#).is_some());
        assert!(refuse("[]").unwrap().1.contains("not a JSON object"));
        assert!(
            refuse(r#"{"servers": []}"#)
                .unwrap()
                .1
                .contains("not an object")
        );
        assert!(refuse(r#"{"servers": {}}"#).is_none());
    }
}
