//! An npm `package-lock.json` (lockfileVersion 2 or 3) read into a binding's closure: the
//! bound package and everything it loads, each with its install path, version and sha512.
//!
//! The lockfile is the admin's review of what runs; this reads it strictly. The closure is
//! what Node would resolve from the bound package (its dependencies, optional dependencies
//! for this platform, and peers, found the way Node walks `node_modules` upward), not every
//! entry of the file: a lockfile of a project with other dependencies binds only what this
//! package reaches. A linked entry, a missing or non-sha512 integrity, or a dependency the
//! lockfile does not hold is an error naming it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use gatehouse_attest::package::{ArtifactHash, PinnedPackage};
use serde_json::{Map, Value};

/// The most entries read from one lockfile.
pub const MAX_LOCK_ENTRIES: usize = 20_000;

/// The platform optional dependencies are chosen for (npm's `os` and `cpu` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    pub os: &'static str,
    pub cpu: &'static str,
}

impl Platform {
    /// This machine, in npm's words.
    pub fn current() -> Platform {
        Platform {
            os: match std::env::consts::OS {
                "macos" => "darwin",
                "windows" => "win32",
                other => other,
            },
            cpu: match std::env::consts::ARCH {
                "x86_64" => "x64",
                "aarch64" => "arm64",
                "x86" => "ia32",
                other => other,
            },
        }
    }
}

/// The bound package and its closure, as a binding holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpmClosure {
    pub package: PinnedPackage,
    pub closure: Vec<PinnedPackage>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    #[error(
        "the lockfile is not a package-lock.json of lockfileVersion 2 or 3 ({0}); generate one with `npm install --package-lock-only --ignore-scripts NAME@VERSION` in an empty directory"
    )]
    NotALockfile(String),
    #[error(
        "the lockfile does not install {name} (no node_modules/{name}); generate it for a project that depends on {name}@{version}"
    )]
    PackageMissing { name: String, version: String },
    #[error(
        "the lockfile installs {name} at {found}, not {version}; generate it for {name}@{version}"
    )]
    OtherVersion {
        name: String,
        version: String,
        found: String,
    },
    #[error("lockfile entry {path} {why}")]
    Entry { path: String, why: String },
    #[error(
        "{from} depends on {dependency}, which the lockfile does not hold; the lockfile is incomplete: generate it again"
    )]
    Unresolved { from: String, dependency: String },
    #[error("the lockfile has more than {MAX_LOCK_ENTRIES} entries")]
    TooLarge,
}

struct LockEntry<'a> {
    name: String,
    body: &'a Map<String, Value>,
}

/// Reads `lock` for `name@version`.
pub fn npm_closure(
    lock: &Value,
    name: &str,
    version: &str,
    platform: Platform,
) -> Result<NpmClosure, LockError> {
    let version_ok = matches!(
        lock.get("lockfileVersion").and_then(Value::as_u64),
        Some(2 | 3)
    );
    let Some(packages) = lock.get("packages").and_then(Value::as_object) else {
        return Err(LockError::NotALockfile("no \"packages\" object".into()));
    };
    if !version_ok {
        return Err(LockError::NotALockfile(
            "lockfileVersion is not 2 or 3".into(),
        ));
    }
    if packages.len() > MAX_LOCK_ENTRIES {
        return Err(LockError::TooLarge);
    }
    let mut entries: BTreeMap<&str, LockEntry<'_>> = BTreeMap::new();
    for (path, body) in packages {
        if path.is_empty() {
            continue;
        }
        let Some(body) = body.as_object() else {
            return Err(entry_error(path, "is not an object"));
        };
        let Some(derived) = name_from_path(path) else {
            return Err(entry_error(
                path,
                "is not a node_modules/<name> install path",
            ));
        };
        let name = body
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(derived)
            .to_string();
        entries.insert(path.as_str(), LockEntry { name, body });
    }
    let root_path = format!("node_modules/{name}");
    let Some(root) = entries.get(root_path.as_str()) else {
        return Err(LockError::PackageMissing {
            name: name.into(),
            version: version.into(),
        });
    };
    let found = root
        .body
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or("");
    if found != version {
        return Err(LockError::OtherVersion {
            name: name.into(),
            version: version.into(),
            found: found.into(),
        });
    }

    // Walk what the package reaches, resolving each dependency as Node does: the nearest
    // `node_modules/<dep>` from the requiring package's directory upward.
    let mut reached: BTreeSet<String> = BTreeSet::new();
    let mut queue = VecDeque::from([root_path.clone()]);
    reached.insert(root_path.clone());
    while let Some(path) = queue.pop_front() {
        let entry = &entries[path.as_str()];
        let mut wanted: Vec<(&str, bool)> = Vec::new();
        for (field, optional) in [
            ("dependencies", false),
            ("optionalDependencies", true),
            ("peerDependencies", true),
        ] {
            if let Some(deps) = entry.body.get(field).and_then(Value::as_object) {
                wanted.extend(deps.keys().map(|k| (k.as_str(), optional)));
            }
        }
        for (dependency, optional) in wanted {
            match resolve(&entries, &path, dependency) {
                Some(found) => {
                    let target = &entries[found.as_str()];
                    if optional && !fits(target.body, platform) {
                        continue;
                    }
                    if reached.insert(found.clone()) {
                        queue.push_back(found);
                    }
                }
                None if optional => {}
                None => {
                    return Err(LockError::Unresolved {
                        from: path.clone(),
                        dependency: dependency.into(),
                    });
                }
            }
        }
    }

    let mut package = None;
    let mut closure = Vec::new();
    for path in &reached {
        let entry = &entries[path.as_str()];
        // Bundled dependencies come inside their parent's tarball: no artifact of their own.
        if entry.body.get("inBundle").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let pinned = pin(path, entry)?;
        if *path == root_path {
            package = Some(PinnedPackage {
                path: None,
                ..pinned
            });
        } else {
            closure.push(pinned);
        }
    }
    Ok(NpmClosure {
        package: package.expect("the root is reached"),
        closure,
    })
}

fn entry_error(path: &str, why: &str) -> LockError {
    LockError::Entry {
        path: path.into(),
        why: why.into(),
    }
}

/// `node_modules/a/node_modules/@s/b` → `@s/b`.
fn name_from_path(path: &str) -> Option<&str> {
    let at = path.rfind("node_modules/")?;
    let name = &path[at + "node_modules/".len()..];
    if name.is_empty()
        || name
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
    {
        return None;
    }
    let parts = name.split('/').count();
    match (name.starts_with('@'), parts) {
        (true, 2) | (false, 1) => Some(name),
        _ => None,
    }
}

/// Node's lookup from the package installed at `from`.
fn resolve(
    entries: &BTreeMap<&str, LockEntry<'_>>,
    from: &str,
    dependency: &str,
) -> Option<String> {
    let mut base = from.to_string();
    loop {
        let candidate = if base.is_empty() {
            format!("node_modules/{dependency}")
        } else {
            format!("{base}/node_modules/{dependency}")
        };
        if entries.contains_key(candidate.as_str()) {
            return Some(candidate);
        }
        if base.is_empty() {
            return None;
        }
        // Up one package: drop the last `node_modules/<name>`.
        base = match base.rfind("/node_modules/") {
            Some(at) => base[..at].to_string(),
            None => String::new(),
        };
    }
}

/// Whether an optional dependency is installed on `platform` (npm's `os`/`cpu` lists; a `!x`
/// excludes).
fn fits(body: &Map<String, Value>, platform: Platform) -> bool {
    // npm writes a list, or a single string for one value.
    let allows = |field: &str, value: &str| match body.get(field) {
        None => true,
        Some(list) => {
            let items: Vec<&str> = match list {
                Value::String(one) => vec![one.as_str()],
                other => other
                    .as_array()
                    .map(|l| l.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default(),
            };
            if items.iter().any(|i| i.strip_prefix('!') == Some(value)) {
                return false;
            }
            let positive: Vec<&&str> = items.iter().filter(|i| !i.starts_with('!')).collect();
            positive.is_empty() || positive.iter().any(|i| **i == value)
        }
    };
    allows("os", platform.os) && allows("cpu", platform.cpu)
}

fn pin(path: &str, entry: &LockEntry<'_>) -> Result<PinnedPackage, LockError> {
    if entry.body.get("link").and_then(Value::as_bool) == Some(true) {
        return Err(entry_error(
            path,
            "is a link to a directory, not a registry package; bind only registry packages",
        ));
    }
    let version = entry
        .body
        .get("version")
        .and_then(Value::as_str)
        .ok_or_else(|| entry_error(path, "has no version"))?;
    let integrity = entry
        .body
        .get("integrity")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            entry_error(
                path,
                "has no integrity hash; generate the lockfile against a registry",
            )
        })?;
    let sha512 = integrity
        .split_whitespace()
        .find_map(|i| i.strip_prefix("sha512-"))
        .ok_or_else(|| entry_error(path, "has no sha512 integrity (only weaker hashes)"))?;
    let bytes: [u8; 64] = STANDARD
        .decode(sha512)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            entry_error(
                path,
                "has a sha512 integrity that is not 64 bytes of base64",
            )
        })?;
    Ok(PinnedPackage {
        name: entry.name.clone(),
        version: version.to_string(),
        artifact: ArtifactHash::Sha512(bytes),
        path: Some(path.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LINUX: Platform = Platform {
        os: "linux",
        cpu: "x64",
    };

    fn integrity(n: u8) -> String {
        format!("sha512-{}", STANDARD.encode([n; 64]))
    }

    fn lock() -> Value {
        json!({
            "name": "x", "lockfileVersion": 3, "requires": true,
            "packages": {
                "": {"dependencies": {"srv": "1.0.0", "other": "1"}},
                "node_modules/srv": {"version": "1.0.0", "integrity": integrity(1),
                    "dependencies": {"a": "^1", "@s/b": "^2"},
                    "optionalDependencies": {"mac-only": "1", "linux-only": "1"}},
                "node_modules/a": {"version": "1.2.0", "integrity": integrity(2)},
                "node_modules/@s/b": {"version": "2.0.0", "integrity": integrity(3), "dependencies": {"a": "^2"}},
                "node_modules/@s/b/node_modules/a": {"version": "2.0.0", "integrity": integrity(4)},
                "node_modules/mac-only": {"version": "1.0.0", "integrity": integrity(5), "os": ["darwin"], "optional": true},
                "node_modules/linux-only": {"version": "1.0.0", "integrity": integrity(6), "os": "linux", "cpu": ["x64"], "optional": true},
                "node_modules/other": {"version": "1.0.0", "integrity": integrity(7)}
            }
        })
    }

    #[test]
    fn the_closure_is_what_the_package_reaches_on_this_platform() {
        let closure = npm_closure(&lock(), "srv", "1.0.0", LINUX).unwrap();
        assert_eq!(closure.package.name, "srv");
        assert_eq!(closure.package.path, None);
        let paths: Vec<_> = closure
            .closure
            .iter()
            .map(|p| (p.path.clone().unwrap(), p.name.clone(), p.version.clone()))
            .collect();
        assert_eq!(
            paths,
            vec![
                ("node_modules/@s/b".into(), "@s/b".into(), "2.0.0".into()),
                (
                    "node_modules/@s/b/node_modules/a".into(),
                    "a".into(),
                    "2.0.0".into()
                ),
                ("node_modules/a".into(), "a".into(), "1.2.0".into()),
                (
                    "node_modules/linux-only".into(),
                    "linux-only".into(),
                    "1.0.0".into()
                ),
            ]
        );
        assert_eq!(closure.closure[2].artifact, ArtifactHash::Sha512([2; 64]));
    }

    #[test]
    fn another_platform_takes_its_own_optional_dependencies() {
        let mac = Platform {
            os: "darwin",
            cpu: "arm64",
        };
        let closure = npm_closure(&lock(), "srv", "1.0.0", mac).unwrap();
        assert!(closure.closure.iter().any(|p| p.name == "mac-only"));
        assert!(!closure.closure.iter().any(|p| p.name == "linux-only"));
    }

    #[test]
    fn bad_lockfiles_are_refused_by_name() {
        let mut other = lock();
        other["packages"]["node_modules/srv"]["version"] = json!("1.0.1");
        assert!(matches!(
            npm_closure(&other, "srv", "1.0.0", LINUX),
            Err(LockError::OtherVersion { .. })
        ));
        assert!(matches!(
            npm_closure(&lock(), "srv-x", "1.0.0", LINUX),
            Err(LockError::PackageMissing { .. })
        ));
        let mut missing = lock();
        missing["packages"]
            .as_object_mut()
            .unwrap()
            .remove("node_modules/a");
        assert!(matches!(
            npm_closure(&missing, "srv", "1.0.0", LINUX),
            Err(LockError::Unresolved { .. })
        ));
        let mut sha1 = lock();
        sha1["packages"]["node_modules/a"]["integrity"] = json!("sha1-AAAA");
        let error = npm_closure(&sha1, "srv", "1.0.0", LINUX).unwrap_err();
        assert!(error.to_string().contains("sha512"), "{error}");
        let mut link = lock();
        link["packages"]["node_modules/a"] = json!({"resolved": "../a", "link": true});
        let error = npm_closure(&link, "srv", "1.0.0", LINUX).unwrap_err();
        assert!(error.to_string().contains("link"), "{error}");
        let mut v1 = lock();
        v1["lockfileVersion"] = json!(1);
        assert!(matches!(
            npm_closure(&v1, "srv", "1.0.0", LINUX),
            Err(LockError::NotALockfile(_))
        ));
        let mut traversal = lock();
        traversal["packages"]["node_modules/../evil"] = json!({"version": "1.0.0"});
        assert!(matches!(
            npm_closure(&traversal, "srv", "1.0.0", LINUX),
            Err(LockError::Entry { .. })
        ));
    }

    #[test]
    fn the_real_server_filesystem_lockfile_reads_whole() {
        let text = include_str!("../../../tests/packages/npm/server-filesystem/package-lock.json");
        let lock: Value = serde_json::from_str(text).unwrap();
        let closure = npm_closure(
            &lock,
            "@modelcontextprotocol/server-filesystem",
            "2026.8.31",
            LINUX,
        )
        .unwrap();
        // Every registry entry of this single-dependency project is reached.
        let entries = lock["packages"].as_object().unwrap().len() - 2;
        assert_eq!(closure.closure.len(), entries);
    }
}
