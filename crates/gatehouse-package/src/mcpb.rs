//! Reading a `.mcpb` bundle (a zip with a `manifest.json` at its top, MCPB manifest versions
//! 0.1 to 0.4, or `dxt_version` from before the rename) for what a binding needs: its name,
//! its SemVer version, the server type (which interpreter runs it) and the entry point, which
//! must be a file in the zip. The zip is read with the store's checked reader, so a bundle
//! that could not be installed is refused here already.
//!
//! Gatehouse runs the entry with the bound interpreter (`node ENTRY`, or the entry itself for
//! a binary) followed by the binding's arguments; the manifest's `mcp_config` (a command line
//! with `${__dirname}` and `${user_config.*}` substitutions) is not run.

use gatehouse_store::{Entry, EntryKind, Limits, StoreError, check_zip, normalize_path};
use serde_json::Value;

use crate::names::is_semver;

/// The manifest versions whose `server` object this reads.
pub const MANIFEST_VERSIONS: &[&str] = &["0.1", "0.2", "0.3", "0.4"];

/// What runs the server (the manifest's `server.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerType {
    Node,
    Python,
    Binary,
}

impl ServerType {
    /// The binding's `interpreter.kind` for it.
    pub fn interpreter_kind(self) -> &'static str {
        match self {
            ServerType::Node => "node",
            ServerType::Python => "python",
            ServerType::Binary => "binary",
        }
    }
}

/// What a binding takes from a `.mcpb`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpbManifest {
    pub manifest_version: String,
    /// The manifest's `name` (the binding names the file's stem instead, which the config
    /// path carries).
    pub name: String,
    pub version: String,
    pub server_type: ServerType,
    /// Normalised, relative; a file in the zip.
    pub entry_point: String,
}

/// Why a `.mcpb` cannot be bound. Stable codes; each says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpbError {
    /// The store's refusal, as text (its own code names the kind).
    #[error(
        "the .mcpb is not a zip Gatehouse would install: {detail}; rebuild it with `mcpb pack`"
    )]
    Archive { detail: String },
    #[error(
        "the .mcpb has no manifest.json at its top; rebuild it with `mcpb pack` from a directory holding one"
    )]
    ManifestMissing,
    #[error("the .mcpb's manifest.json is not a JSON object ({detail}); fix it and pack again")]
    ManifestInvalid { detail: String },
    #[error(
        "the .mcpb's manifest.json {field} {why}; fix the manifest (`mcpb validate manifest.json`) and pack again"
    )]
    Field { field: &'static str, why: String },
    #[error(
        "the .mcpb's manifest version {found:?} is not one Gatehouse reads ({}); pack it with a supported manifest_version",
        MANIFEST_VERSIONS.join(", ")
    )]
    ManifestVersion { found: String },
    #[error(
        "the .mcpb's version {found:?} is not an exact SemVer version (MAJOR.MINOR.PATCH); set one in manifest.json and pack again"
    )]
    Version { found: String },
    #[error(
        "the .mcpb's server.type {found:?} is not run by Gatehouse (node, python or binary); a \"uv\" server resolves its dependencies at launch: bind its package with --pypi instead"
    )]
    ServerType { found: String },
    #[error(
        "the .mcpb's server.entry_point {entry:?} is not a file in the bundle; fix entry_point (or the files packed) and pack again"
    )]
    EntryMissing { entry: String },
    #[error(
        "the .mcpb's binary entry {entry:?} is not executable in the zip; make it executable (chmod +x) before `mcpb pack`"
    )]
    EntryNotExecutable { entry: String },
}

impl McpbError {
    pub fn code(&self) -> &'static str {
        match self {
            McpbError::Archive { .. } => "mcpb_archive_invalid",
            McpbError::ManifestMissing => "mcpb_manifest_missing",
            McpbError::ManifestInvalid { .. } | McpbError::Field { .. } => "mcpb_manifest_invalid",
            McpbError::ManifestVersion { .. } => "mcpb_manifest_version_unsupported",
            McpbError::Version { .. } => "mcpb_version_invalid",
            McpbError::ServerType { .. } => "mcpb_server_type_unsupported",
            McpbError::EntryMissing { .. } => "mcpb_entry_missing",
            McpbError::EntryNotExecutable { .. } => "mcpb_entry_not_executable",
        }
    }
}

/// Reads the `.mcpb` file's bytes (every entry checked, with the store's default limits).
pub fn read_mcpb(bytes: &[u8]) -> Result<McpbManifest, McpbError> {
    read_mcpb_as(bytes, None)
}

/// As [`read_mcpb`], with `entry` (when given) run instead of the manifest's entry point,
/// checked the same way.
pub fn read_mcpb_as(bytes: &[u8], entry: Option<&str>) -> Result<McpbManifest, McpbError> {
    let entries =
        check_zip(bytes, &Limits::default()).map_err(|e: StoreError| McpbError::Archive {
            detail: e.to_string(),
        })?;
    let manifest = entries
        .iter()
        .find_map(|e| match (&e.kind, e.path.as_str()) {
            (EntryKind::File { data, .. }, "manifest.json") => Some(data),
            _ => None,
        })
        .ok_or(McpbError::ManifestMissing)?;
    let mut read = read_manifest(manifest, &entries)?;
    if let Some(entry) = entry {
        read.entry_point = entry_in(&entries, entry, read.server_type)?;
    }
    Ok(read)
}

/// Reads `manifest.json`'s bytes against the bundle's checked `entries`.
pub fn read_manifest(manifest: &[u8], entries: &[Entry]) -> Result<McpbManifest, McpbError> {
    let value: Value =
        serde_json::from_slice(manifest).map_err(|e| McpbError::ManifestInvalid {
            detail: e.to_string(),
        })?;
    let Some(object) = value.as_object() else {
        return Err(McpbError::ManifestInvalid {
            detail: "not an object".into(),
        });
    };
    let text = |field: &'static str, value: Option<&Value>| -> Result<String, McpbError> {
        match value {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            Some(_) => Err(McpbError::Field {
                field,
                why: "is not a non-empty string".into(),
            }),
            None => Err(McpbError::Field {
                field,
                why: "is missing".into(),
            }),
        }
    };
    let manifest_version = match (object.get("manifest_version"), object.get("dxt_version")) {
        (Some(v), _) => text("manifest_version", Some(v))?,
        (None, Some(v)) => text("dxt_version", Some(v))?,
        (None, None) => text("manifest_version", None)?,
    };
    if !MANIFEST_VERSIONS.contains(&manifest_version.as_str()) {
        return Err(McpbError::ManifestVersion {
            found: manifest_version,
        });
    }
    let name = text("name", object.get("name"))?;
    let version = text("version", object.get("version"))?;
    if !is_semver(&version) {
        return Err(McpbError::Version { found: version });
    }
    let server = object
        .get("server")
        .and_then(Value::as_object)
        .ok_or_else(|| McpbError::Field {
            field: "server",
            why: "is missing or not an object".into(),
        })?;
    let kind = text("server.type", server.get("type"))?;
    let server_type = match kind.as_str() {
        "node" => ServerType::Node,
        "python" => ServerType::Python,
        "binary" => ServerType::Binary,
        _ => return Err(McpbError::ServerType { found: kind }),
    };
    let raw_entry = text("server.entry_point", server.get("entry_point"))?;
    let entry_point = entry_in(entries, &raw_entry, server_type)?;
    Ok(McpbManifest {
        manifest_version,
        name,
        version,
        server_type,
        entry_point,
    })
}

/// `raw` normalised, when it is a file among `entries` (executable, for a binary server).
fn entry_in(entries: &[Entry], raw: &str, server_type: ServerType) -> Result<String, McpbError> {
    let missing = || McpbError::EntryMissing {
        entry: raw.to_string(),
    };
    let entry_point = normalize_path(raw.as_bytes(), &Limits::default()).map_err(|_| missing())?;
    match entries
        .iter()
        .find(|e| e.path == entry_point)
        .map(|e| &e.kind)
    {
        Some(EntryKind::File { executable, .. }) => {
            if server_type == ServerType::Binary && !executable {
                return Err(McpbError::EntryNotExecutable { entry: entry_point });
            }
            Ok(entry_point)
        }
        _ => Err(missing()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::Write;

    use serde_json::json;

    use super::*;

    /// A zip of `files` (path, bytes, unix mode).
    pub(crate) fn zip(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
        use zip::write::SimpleFileOptions;
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (path, data, mode) in files {
            let options = SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored)
                .unix_permissions(*mode);
            w.start_file(*path, options).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    pub(crate) fn manifest(kind: &str, entry: &str) -> Value {
        json!({
            "manifest_version": "0.3", "name": "hello", "version": "1.2.3",
            "description": "d", "author": {"name": "a"},
            "server": {"type": kind, "entry_point": entry,
                       "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js"]}},
        })
    }

    pub(crate) fn bundle(manifest: &Value) -> Vec<u8> {
        let text = serde_json::to_vec(manifest).unwrap();
        zip(&[
            ("manifest.json", &text, 0o644),
            ("server/index.js", b"console.log(1)", 0o644),
            ("server/hello", b"\x7fELF", 0o755),
        ])
    }

    fn refused(manifest: &Value) -> McpbError {
        read_mcpb(&bundle(manifest)).unwrap_err()
    }

    fn set(mut value: Value, pointer: &str, to: Value) -> Value {
        *value.pointer_mut(pointer).unwrap() = to;
        value
    }

    #[test]
    fn a_node_bundle_reads_its_name_version_type_and_entry() {
        let m = read_mcpb(&bundle(&manifest("node", "./server/index.js"))).unwrap();
        assert_eq!(
            m,
            McpbManifest {
                manifest_version: "0.3".into(),
                name: "hello".into(),
                version: "1.2.3".into(),
                server_type: ServerType::Node,
                entry_point: "server/index.js".into(),
            }
        );
        let binary = read_mcpb(&bundle(&manifest("binary", "server/hello"))).unwrap();
        assert_eq!(binary.server_type.interpreter_kind(), "binary");
        // The pre-rename key.
        let mut dxt = manifest("python", "server/index.js");
        let v = dxt
            .as_object_mut()
            .unwrap()
            .remove("manifest_version")
            .unwrap();
        dxt["dxt_version"] = v;
        assert_eq!(
            read_mcpb(&bundle(&dxt)).unwrap().server_type,
            ServerType::Python
        );
    }

    #[test]
    fn what_cannot_be_bound_is_refused_by_name() {
        let base = manifest("node", "server/index.js");
        let cases = [
            (
                set(base.clone(), "/server/type", json!("uv")),
                "mcpb_server_type_unsupported",
            ),
            (
                set(base.clone(), "/server/type", json!("deno")),
                "mcpb_server_type_unsupported",
            ),
            (
                set(base.clone(), "/version", json!("^1.2.3")),
                "mcpb_version_invalid",
            ),
            (
                set(base.clone(), "/version", json!("1.2")),
                "mcpb_version_invalid",
            ),
            (
                set(base.clone(), "/manifest_version", json!("9.9")),
                "mcpb_manifest_version_unsupported",
            ),
            (
                set(base.clone(), "/name", json!(7)),
                "mcpb_manifest_invalid",
            ),
            (
                set(base.clone(), "/server", json!("node")),
                "mcpb_manifest_invalid",
            ),
            (
                set(
                    base.clone(),
                    "/server/entry_point",
                    json!("server/missing.js"),
                ),
                "mcpb_entry_missing",
            ),
            (
                set(
                    base.clone(),
                    "/server/entry_point",
                    json!("../server/index.js"),
                ),
                "mcpb_entry_missing",
            ),
            (
                set(base.clone(), "/server/entry_point", json!("server")),
                "mcpb_entry_missing",
            ),
            (
                set(base.clone(), "/server/entry_point", json!("/etc/passwd")),
                "mcpb_entry_missing",
            ),
            // A binary entry the store would install without its executable bit.
            (
                manifest("binary", "server/index.js"),
                "mcpb_entry_not_executable",
            ),
        ];
        for (manifest, code) in cases {
            let error = refused(&manifest);
            assert_eq!(error.code(), code, "{manifest}: {error}");
        }
        let mut none = base.clone();
        none.as_object_mut().unwrap().remove("manifest_version");
        assert_eq!(refused(&none).code(), "mcpb_manifest_invalid");
    }

    #[test]
    fn a_zip_without_a_manifest_or_not_a_zip_is_refused() {
        let no_manifest = zip(&[("server/index.js", b"1", 0o644)]);
        assert_eq!(
            read_mcpb(&no_manifest).unwrap_err(),
            McpbError::ManifestMissing
        );
        let nested = zip(&[("hello/manifest.json", b"{}", 0o644)]);
        assert_eq!(read_mcpb(&nested).unwrap_err(), McpbError::ManifestMissing);
        let not_json = zip(&[("manifest.json", b"{not json", 0o644)]);
        assert_eq!(
            read_mcpb(&not_json).unwrap_err().code(),
            "mcpb_manifest_invalid"
        );
        let array = zip(&[("manifest.json", b"[]", 0o644)]);
        assert_eq!(
            read_mcpb(&array).unwrap_err().code(),
            "mcpb_manifest_invalid"
        );
        assert_eq!(
            read_mcpb(b"PK\x03\x04 truncated").unwrap_err().code(),
            "mcpb_archive_invalid"
        );
        let escaping = zip(&[("../manifest.json", b"{}", 0o644)]);
        assert_eq!(
            read_mcpb(&escaping).unwrap_err().code(),
            "mcpb_archive_invalid"
        );
    }
}
