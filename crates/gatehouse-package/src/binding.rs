//! Building a package binding from what an admin (or a person pinning for themself) reviewed:
//! an npm lockfile, a hashed requirements file with the wheels it names, or a `.mcpb` file.
//! `bundle add-server` and `servers pin` both call these; each returns the `package` JSON
//! without `attestation`, which the caller signs and adds. Pure: the caller reads the files,
//! finds the interpreter and computes its digest.

use gatehouse_attest::package::PinnedPackage;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::lockfile::{LockError, Platform, npm_closure};
use crate::mcpb::{McpbError, ServerType, read_mcpb_as};
use crate::names::{is_file_stem, normalize_pypi_name};
use crate::wheels::{self, RequirementsError, WheelsError, parse_requirements};

/// What every ecosystem's binding takes besides the package itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Common {
    /// What runs, when not the default (npm: the lockfile's only bin; PyPI: the console
    /// script named like the package; MCPB: the manifest's entry point).
    pub entry: Option<String>,
    /// Fixed arguments, before the user's own.
    pub args: Vec<String>,
    /// User-argument rules (see [`parse_user_arg_rule`]).
    pub user_args: Vec<Value>,
    /// The allowed interpreter digests (SHA-256 hex): this machine's first, then any others.
    pub interpreter_sha256: Vec<String>,
}

/// Why a binding cannot be built. Stable codes; each says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    #[error(transparent)]
    Lockfile(#[from] LockError),
    #[error("{package}: {why}; name the file that runs with --entry")]
    EntryUnknown { package: String, why: String },
    #[error(transparent)]
    Requirements(#[from] RequirementsError),
    #[error(
        "the requirements file does not pin {name}; generate it for {name}=={version} (`uv pip compile --generate-hashes` of a file that says {name}=={version})"
    )]
    RootMissing { name: String, version: String },
    #[error(
        "the requirements file pins {name}=={found}, not {version}; bind {name}=={found}, or generate the file for {version}"
    )]
    RootVersion {
        name: String,
        version: String,
        found: String,
    },
    #[error(
        "{name}: the requirement does not apply to this Python (its marker is false), so nothing would run; generate the file for this interpreter"
    )]
    RootNotForThisPython { name: String },
    #[error(transparent)]
    Wheels(#[from] WheelsError),
    #[error(transparent)]
    Mcpb(#[from] McpbError),
    #[error(
        "{stem:?} is not a .mcpb file name stem (letters, digits, - _ ., not starting with .); rename the file: the config's path names it"
    )]
    FileStem { stem: String },
    #[error(
        "the {kind} interpreter's digest is missing: the binding allows the interpreters it lists; run this where the reviewed {kind} is on PATH, or pass its digest with --interpreter-sha256"
    )]
    InterpreterDigestMissing { kind: &'static str },
    #[error(
        "{digest:?} is not a SHA-256 digest (64 hex digits); pass the interpreter binary's `sha256sum`"
    )]
    InterpreterDigestInvalid { digest: String },
    #[error(
        "a binary server is pinned by the .mcpb's own hash and runs no interpreter; drop --interpreter-sha256"
    )]
    InterpreterNotApplicable,
}

impl BindingError {
    pub fn code(&self) -> &'static str {
        match self {
            BindingError::Lockfile(_) => "lockfile_invalid",
            BindingError::EntryUnknown { .. } => "entry_unknown",
            BindingError::Requirements(e) => e.code(),
            BindingError::RootMissing { .. } => "root_not_pinned",
            BindingError::RootVersion { .. } => "root_version_mismatch",
            BindingError::RootNotForThisPython { .. } => "root_not_for_this_python",
            BindingError::Wheels(e) => e.code(),
            BindingError::Mcpb(e) => e.code(),
            BindingError::FileStem { .. } => "mcpb_file_name_invalid",
            BindingError::InterpreterDigestMissing { .. } => "interpreter_digest_missing",
            BindingError::InterpreterDigestInvalid { .. } => "interpreter_digest_invalid",
            BindingError::InterpreterNotApplicable => "interpreter_not_applicable",
        }
    }
}

/// An npm binding from `lock` (a package-lock.json of version 2 or 3) for `name@version`,
/// with its closure for this machine's platform.
pub fn npm_binding(
    lock: &Value,
    name: &str,
    version: &str,
    common: &Common,
) -> Result<Value, BindingError> {
    let closure = npm_closure(lock, name, version, Platform::current())?;
    let entry = match &common.entry {
        Some(entry) => entry.clone(),
        None => npm_bin(lock, name).map_err(|why| BindingError::EntryUnknown {
            package: name.to_string(),
            why,
        })?,
    };
    let mut binding = json!({
        "ecosystem": "npm", "name": name, "version": version,
        "artifact": closure.package.artifact.to_text(),
        "closure": closure.closure.iter().map(|p| json!({
            "name": p.name, "version": p.version, "artifact": p.artifact.to_text(), "path": p.path,
        })).collect::<Vec<_>>(),
        "entry": entry,
        "interpreter": {"kind": "node", "sha256": digests(common, "node")?},
    });
    add_common(&mut binding, common);
    Ok(binding)
}

/// A PyPI binding of `name==version` from a hashed requirements file: the closure is every
/// other requirement that applies to `env`, each the wheel among `files` (file name, SHA-256
/// hex: an index listing or a seed directory) that `env` installs. The default entry is the
/// console script named like the package; whether the wheel declares it is checked when the
/// server is installed and started.
pub fn pypi_binding(
    requirements: &str,
    name: &str,
    version: &str,
    files: &[(String, String)],
    env: &wheels::Environment,
    common: &Common,
) -> Result<Value, BindingError> {
    let parsed = parse_requirements(requirements)?;
    let normal = normalize_pypi_name(name).ok_or_else(|| BindingError::RootMissing {
        name: name.to_string(),
        version: version.to_string(),
    })?;
    let root =
        parsed
            .iter()
            .find(|r| r.name == normal)
            .ok_or_else(|| BindingError::RootMissing {
                name: normal.clone(),
                version: version.to_string(),
            })?;
    if root.version != version {
        return Err(BindingError::RootVersion {
            name: normal,
            version: version.to_string(),
            found: root.version.clone(),
        });
    }
    if !root.applies(env) {
        return Err(BindingError::RootNotForThisPython { name: normal });
    }
    let pinned = wheels::choose(&parsed, files, env)?;
    let (root, closure): (Vec<PinnedPackage>, Vec<PinnedPackage>) =
        pinned.into_iter().partition(|p| p.name == normal);
    let Some(root) = root.into_iter().next() else {
        return Err(BindingError::RootNotForThisPython { name: normal });
    };
    let mut binding = json!({
        "ecosystem": "pypi", "name": normal, "version": version,
        "artifact": root.artifact.to_text(),
        "closure": closure.iter().map(|p| json!({
            "name": p.name, "version": p.version, "artifact": p.artifact.to_text(),
        })).collect::<Vec<_>>(),
        "entry": common.entry.clone().unwrap_or_else(|| normal.clone()),
        "interpreter": {"kind": "python", "sha256": digests(common, "python")?},
    });
    add_common(&mut binding, common);
    Ok(binding)
}

/// An MCPB binding of the `.mcpb` file's `bytes`, named by its file name's stem (what the
/// config's path carries): its SHA-256, the manifest's version and server type, and its entry
/// point (or `common.entry`, which must be a file in the bundle as well). A binary server
/// takes no interpreter digests.
pub fn mcpb_binding(bytes: &[u8], file_stem: &str, common: &Common) -> Result<Value, BindingError> {
    if !is_file_stem(file_stem) {
        return Err(BindingError::FileStem {
            stem: file_stem.to_string(),
        });
    }
    let manifest = read_mcpb_as(bytes, common.entry.as_deref())?;
    let interpreter = match manifest.server_type {
        ServerType::Binary if !common.interpreter_sha256.is_empty() => {
            return Err(BindingError::InterpreterNotApplicable);
        }
        ServerType::Binary => json!({"kind": "binary"}),
        kind => {
            let label = if kind == ServerType::Node {
                "node"
            } else {
                "python"
            };
            json!({"kind": kind.interpreter_kind(), "sha256": digests(common, label)?})
        }
    };
    let mut binding = json!({
        "ecosystem": "mcpb", "name": file_stem, "version": manifest.version,
        "artifact": format!("sha256:{}", hex::encode(Sha256::digest(bytes))),
        "closure": [],
        "entry": manifest.entry_point,
        "interpreter": interpreter,
    });
    add_common(&mut binding, common);
    Ok(binding)
}

/// The interpreter's digests, lower-cased, checked and without duplicates.
fn digests(common: &Common, kind: &'static str) -> Result<Vec<String>, BindingError> {
    let mut out: Vec<String> = Vec::new();
    for digest in &common.interpreter_sha256 {
        let lower = digest.to_ascii_lowercase();
        if lower.len() != 64 || !lower.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(BindingError::InterpreterDigestInvalid {
                digest: digest.clone(),
            });
        }
        if !out.contains(&lower) {
            out.push(lower);
        }
    }
    if out.is_empty() {
        return Err(BindingError::InterpreterDigestMissing { kind });
    }
    Ok(out)
}

fn add_common(binding: &mut Value, common: &Common) {
    if !common.args.is_empty() {
        binding["args"] = json!(common.args);
    }
    if !common.user_args.is_empty() {
        binding["userArgs"] = Value::Array(common.user_args.clone());
    }
}

/// The package's only `bin` file, from its lockfile entry.
fn npm_bin(lock: &Value, name: &str) -> Result<String, String> {
    let entry = &lock["packages"][format!("node_modules/{name}")];
    match &entry["bin"] {
        Value::Object(bins) if bins.len() == 1 => bins
            .values()
            .next()
            .and_then(Value::as_str)
            .map(|p| p.trim_start_matches("./").to_string())
            .ok_or_else(|| "its bin is not a path".to_string()),
        Value::Object(bins) if bins.len() > 1 => Err(format!(
            "it has several bins ({})",
            bins.keys().cloned().collect::<Vec<_>>().join(", ")
        )),
        Value::String(path) => Ok(path.trim_start_matches("./").to_string()),
        _ => Err("it declares no bin in the lockfile".to_string()),
    }
}

/// A user-argument rule from its command-line form:
/// `existing_directory_under_home[:read_only|read_write][:MIN:MAX]` or
/// `one_of:V1,V2[:MIN:MAX]`. The binding parser checks the result again.
pub fn parse_user_arg_rule(text: &str) -> Result<Value, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let bad = || {
        format!(
            "{text:?} is not a user-argument rule; write existing_directory_under_home[:read_only|read_write][:MIN:MAX] or one_of:V1,V2[:MIN:MAX]"
        )
    };
    let counts = |rest: &[&str]| -> Result<(u64, u64), String> {
        match rest {
            [] => Ok((1, 1)),
            [min, max] => Ok((
                min.parse().map_err(|_| bad())?,
                max.parse().map_err(|_| bad())?,
            )),
            _ => Err(bad()),
        }
    };
    match parts.as_slice() {
        ["existing_directory_under_home", rest @ ..] => {
            let (access, rest) = match rest.first().copied() {
                Some(a @ ("read_only" | "read_write")) => (a, &rest[1..]),
                _ => ("read_only", rest),
            };
            let (min, max) = counts(rest)?;
            Ok(
                json!({"rule": "existing_directory_under_home", "access": access, "min": min, "max": max}),
            )
        }
        ["one_of", values, rest @ ..] => {
            let (min, max) = counts(rest)?;
            Ok(
                json!({"rule": "one_of", "values": values.split(',').collect::<Vec<_>>(), "min": min, "max": max}),
            )
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use gatehouse_attest::package::{Ecosystem, parse_package};

    use super::*;
    use crate::fixtures::sri;
    use crate::mcpb::tests::{bundle, manifest};
    use crate::wheels::{Arch, Environment, Implementation, Os};

    const NODE: &str = "4444444444444444444444444444444444444444444444444444444444444444";

    fn common() -> Common {
        Common {
            interpreter_sha256: vec![NODE.to_uppercase(), NODE.into()],
            ..Common::default()
        }
    }

    /// What the bundle parser would say of it once signed.
    fn parses(mut binding: Value) -> gatehouse_attest::package::PackageBinding {
        binding["attestation"] = json!({"body": {}});
        parse_package(&binding, "package").expect("a valid binding")
    }

    fn lock(bin: Value) -> Value {
        json!({
            "lockfileVersion": 3,
            "packages": {
                "": {"dependencies": {"srv": "1.0.0"}},
                "node_modules/srv": {"version": "1.0.0", "resolved": "https://registry.npmjs.org/srv/-/srv-1.0.0.tgz",
                    "integrity": sri(1), "bin": bin, "dependencies": {"dep": "^2"}},
                "node_modules/dep": {"version": "2.0.1", "resolved": "https://registry.npmjs.org/dep/-/dep-2.0.1.tgz",
                    "integrity": sri(2)}
            }
        })
    }

    #[test]
    fn an_npm_binding_takes_its_closure_and_its_only_bin() {
        let mut c = common();
        c.args = vec!["--fixed".into()];
        c.user_args = vec![parse_user_arg_rule("one_of:a,b").unwrap()];
        let b = npm_binding(&lock(json!({"srv": "./dist/cli.js"})), "srv", "1.0.0", &c).unwrap();
        assert_eq!(b["entry"], "dist/cli.js");
        assert_eq!(b["interpreter"]["sha256"], json!([NODE]));
        assert_eq!(b["closure"][0]["path"], "node_modules/dep");
        assert_eq!(b["args"], json!(["--fixed"]));
        assert!(b.get("attestation").is_none());
        let parsed = parses(b);
        assert_eq!(parsed.ecosystem, Ecosystem::Npm);
        assert_eq!(parsed.closure.len(), 1);

        let several = lock(json!({"a": "a.js", "b": "b.js"}));
        let e = npm_binding(&several, "srv", "1.0.0", &common()).unwrap_err();
        assert_eq!(e.code(), "entry_unknown");
        assert!(e.to_string().contains("--entry"), "{e}");
        c.entry = Some("b.js".into());
        assert_eq!(
            npm_binding(&several, "srv", "1.0.0", &c).unwrap()["entry"],
            "b.js"
        );
        assert_eq!(
            npm_binding(&lock(Value::Null), "srv", "1.0.0", &common())
                .unwrap_err()
                .code(),
            "entry_unknown"
        );
        assert_eq!(
            npm_binding(&lock(json!({"srv": "x.js"})), "srv", "1.0.1", &common())
                .unwrap_err()
                .code(),
            "lockfile_invalid"
        );
        let no_digest = Common::default();
        assert_eq!(
            npm_binding(&lock(json!({"srv": "x.js"})), "srv", "1.0.0", &no_digest)
                .unwrap_err()
                .code(),
            "interpreter_digest_missing"
        );
        let bad_digest = Common {
            interpreter_sha256: vec!["abc".into()],
            ..Common::default()
        };
        assert_eq!(
            npm_binding(&lock(json!({"srv": "x.js"})), "srv", "1.0.0", &bad_digest)
                .unwrap_err()
                .code(),
            "interpreter_digest_invalid"
        );
    }

    fn env() -> Environment {
        Environment {
            python: (3, 12),
            implementation: Implementation::CPython,
            platform: wheels::Platform {
                os: Os::Linux,
                arch: Arch::X86_64,
            },
            glibc: (2, 36),
        }
    }

    fn requirements() -> String {
        format!(
            "mcp-server-time==1.0.0 \\\n    --hash=sha256:{a}\nTzData==2025.2 \\\n    --hash=sha256:{b}\nwin-only==1.0 ; sys_platform == \"win32\" \\\n    --hash=sha256:{c}\n",
            a = "a".repeat(64),
            b = "b".repeat(64),
            c = "c".repeat(64)
        )
    }

    fn files() -> Vec<(String, String)> {
        vec![
            (
                "mcp_server_time-1.0.0-py3-none-any.whl".into(),
                "a".repeat(64),
            ),
            ("tzdata-2025.2-py2.py3-none-any.whl".into(), "b".repeat(64)),
            ("mcp_server_time-1.0.0.tar.gz".into(), "d".repeat(64)),
        ]
    }

    #[test]
    fn a_pypi_binding_is_the_named_root_and_the_rest_for_this_python() {
        let mut c = common();
        c.args = vec!["--local-timezone".into(), "UTC".into()];
        let b = pypi_binding(
            &requirements(),
            "MCP_Server.Time",
            "1.0.0",
            &files(),
            &env(),
            &c,
        )
        .unwrap();
        assert_eq!(b["name"], "mcp-server-time");
        assert_eq!(b["entry"], "mcp-server-time");
        assert_eq!(b["artifact"], format!("sha256:{}", "a".repeat(64)));
        assert_eq!(
            b["closure"],
            json!([{"name": "tzdata", "version": "2025.2", "artifact": format!("sha256:{}", "b".repeat(64))}])
        );
        let parsed = parses(b);
        assert_eq!(parsed.args, vec!["--local-timezone", "UTC"]);

        let e = pypi_binding(
            &requirements(),
            "mcp-server-time",
            "1.0.1",
            &files(),
            &env(),
            &c,
        )
        .unwrap_err();
        assert_eq!(e.code(), "root_version_mismatch");
        assert!(e.to_string().contains("1.0.0"), "{e}");
        let e = pypi_binding(
            &requirements(),
            "mcp-server-fetch",
            "1.0.0",
            &files(),
            &env(),
            &c,
        )
        .unwrap_err();
        assert_eq!(e.code(), "root_not_pinned");
        let e = pypi_binding(&requirements(), "win-only", "1.0", &files(), &env(), &c).unwrap_err();
        assert_eq!(e.code(), "root_not_for_this_python");
        // A wheel of the closure missing from the listing.
        let e = pypi_binding(
            &requirements(),
            "mcp-server-time",
            "1.0.0",
            &files()[..1],
            &env(),
            &c,
        )
        .unwrap_err();
        assert_eq!(e.code(), "no_file");
        let e = pypi_binding(
            "mcp-server-time>=1",
            "mcp-server-time",
            "1.0.0",
            &files(),
            &env(),
            &c,
        )
        .unwrap_err();
        assert!(!e.code().is_empty() && e.code() != "root_not_pinned", "{e}");
    }

    #[test]
    fn an_mcpb_binding_is_the_file_hash_and_the_manifest() {
        let bytes = bundle(&manifest("node", "server/index.js"));
        let b = mcpb_binding(&bytes, "hello-world", &common()).unwrap();
        assert_eq!(b["name"], "hello-world");
        assert_eq!(b["version"], "1.2.3");
        assert_eq!(b["entry"], "server/index.js");
        assert_eq!(
            b["artifact"],
            format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
        );
        assert_eq!(b["interpreter"], json!({"kind": "node", "sha256": [NODE]}));
        parses(b);

        let binary = bundle(&manifest("binary", "server/hello"));
        let b = mcpb_binding(&binary, "hello", &Common::default()).unwrap();
        assert_eq!(b["interpreter"], json!({"kind": "binary"}));
        parses(b);
        assert_eq!(
            mcpb_binding(&binary, "hello", &common())
                .unwrap_err()
                .code(),
            "interpreter_not_applicable"
        );
        assert_eq!(
            mcpb_binding(&bytes, "hello", &Common::default())
                .unwrap_err()
                .code(),
            "interpreter_digest_missing"
        );
        assert_eq!(
            mcpb_binding(&bytes, "../evil", &common())
                .unwrap_err()
                .code(),
            "mcpb_file_name_invalid"
        );
        let mut c = common();
        c.entry = Some("server/hello".into());
        assert_eq!(
            mcpb_binding(&bytes, "h", &c).unwrap()["entry"],
            "server/hello"
        );
        c.entry = Some("server/none.js".into());
        assert_eq!(
            mcpb_binding(&bytes, "h", &c).unwrap_err().code(),
            "mcpb_entry_missing"
        );
        assert_eq!(
            mcpb_binding(b"not a zip", "h", &common())
                .unwrap_err()
                .code(),
            "mcpb_archive_invalid"
        );
    }

    #[test]
    fn user_arg_rules_parse_and_bad_ones_are_refused() {
        assert_eq!(
            parse_user_arg_rule("existing_directory_under_home:read_write:1:8").unwrap(),
            json!({"rule": "existing_directory_under_home", "access": "read_write", "min": 1, "max": 8})
        );
        assert_eq!(
            parse_user_arg_rule("existing_directory_under_home").unwrap()["access"],
            "read_only"
        );
        assert_eq!(
            parse_user_arg_rule("one_of:utc,local").unwrap(),
            json!({"rule": "one_of", "values": ["utc", "local"], "min": 1, "max": 1})
        );
        for bad in [
            "any_path",
            "one_of",
            "existing_directory_under_home:1",
            "one_of:a:x:2",
        ] {
            assert!(parse_user_arg_rule(bad).is_err(), "{bad}");
        }
    }
}
