//! Where a package's artifacts come from: the directories an admin pre-seeded (first, and the
//! only source on a machine without network), then the npm registry and the PyPI index (the
//! public ones, or the admin's mirror). Sources decide only availability: every artifact is
//! checked against the binding's hash whatever served it.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use url::Url;

/// The file an admin writes beside the admin trust-roots directory
/// (`/etc/gatehouse/package-sources.json`).
pub const SOURCES_FILE: &str = "package-sources.json";

pub const PUBLIC_NPM_REGISTRY: &str = "https://registry.npmjs.org";
pub const PUBLIC_PYPI_INDEX: &str = "https://pypi.org/simple";

/// Where artifacts are fetched from, in order: every seed directory, then (unless `network`
/// is off) the registry of the artifact's ecosystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageSources {
    /// npm registry base: tarballs are at `<base>/<name>/-/<basename>-<version>.tgz`.
    pub npm_registry: Url,
    /// A PEP 691 simple index base: `<base>/<normalised name>/`.
    pub pypi_index: Url,
    /// Pre-seeded directories: `npm/<name>/-/<basename>-<version>.tgz` and `pypi/<wheel>`.
    pub seeds: Vec<PathBuf>,
    /// Off: only the seed directories are used, never the network.
    pub network: bool,
}

impl Default for PackageSources {
    fn default() -> PackageSources {
        PackageSources {
            npm_registry: Url::parse(PUBLIC_NPM_REGISTRY).expect("a valid URL"),
            pypi_index: Url::parse(PUBLIC_PYPI_INDEX).expect("a valid URL"),
            seeds: Vec::new(),
            network: true,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SourcesFile {
    npm_registry: Option<String>,
    pypi_index: Option<String>,
    #[serde(default)]
    seed: Vec<PathBuf>,
    network: Option<bool>,
}

/// The most seed directories one file may list.
const MAX_SEEDS: usize = 16;

impl PackageSources {
    /// Reads `path`; a missing file is the defaults (the public registries). Anything that
    /// does not parse is an error naming the field, never a silent default: a mistyped mirror
    /// would otherwise send a machine without network to the public registry.
    pub fn load(path: &Path) -> Result<PackageSources, String> {
        let text = match std::fs::read(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(PackageSources::default());
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        if text.len() > 64 * 1024 {
            return Err(format!(
                "{} is larger than 64 KiB; it holds two URLs and a few directories",
                path.display()
            ));
        }
        let file: SourcesFile = serde_json::from_slice(&text).map_err(|e| {
            format!(
                "{} is not a package-sources file ({e}); write {{\"npmRegistry\": URL, \"pypiIndex\": URL, \"seed\": [DIRECTORY…], \"network\": true|false}}, every key optional",
                path.display()
            )
        })?;
        let mut sources = PackageSources::default();
        if let Some(url) = file.npm_registry {
            sources.npm_registry = registry_url(&url, "npmRegistry", path)?;
        }
        if let Some(url) = file.pypi_index {
            sources.pypi_index = registry_url(&url, "pypiIndex", path)?;
        }
        if file.seed.len() > MAX_SEEDS {
            return Err(format!(
                "{}: seed lists {} directories; at most {MAX_SEEDS}",
                path.display(),
                file.seed.len()
            ));
        }
        for dir in &file.seed {
            if !dir.is_absolute() {
                return Err(format!(
                    "{}: seed directory {} is relative; write an absolute path",
                    path.display(),
                    dir.display()
                ));
            }
        }
        sources.seeds = file.seed;
        sources.network = file.network.unwrap_or(true);
        Ok(sources)
    }
}

/// A registry base URL: https, or http on a loopback address (a mirror on this machine). The
/// bytes are checked against their hashes either way; https keeps what was asked for private.
pub fn registry_url(text: &str, field: &str, path: &Path) -> Result<Url, String> {
    let url = Url::parse(text.trim_end_matches('/')).map_err(|e| {
        format!(
            "{}: {field} {text:?} is not a URL ({e}); write https://HOST/PATH",
            path.display()
        )
    })?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => {
            return Err(format!(
                "{}: {field} {text:?} is not https (plain http is accepted only on this machine's loopback); use the mirror's https URL",
                path.display()
            ));
        }
    }
    if !url.username().is_empty() || url.password().is_some() || url.query().is_some() {
        return Err(format!(
            "{}: {field} {text:?} carries credentials or a query; write the bare base URL",
            path.display()
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<PackageSources, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SOURCES_FILE);
        std::fs::write(&path, text).unwrap();
        PackageSources::load(&path)
    }

    #[test]
    fn a_missing_file_is_the_public_registries() {
        let dir = tempfile::tempdir().unwrap();
        let sources = PackageSources::load(&dir.path().join(SOURCES_FILE)).unwrap();
        assert_eq!(sources, PackageSources::default());
        assert_eq!(sources.npm_registry.as_str(), "https://registry.npmjs.org/");
        assert!(sources.network);
    }

    #[test]
    fn a_mirror_and_seeds_are_read() {
        let sources = load(
            r#"{"npmRegistry": "https://npm.example.com/repo/", "pypiIndex": "http://127.0.0.1:8080/simple", "seed": ["/srv/seed"], "network": false}"#,
        )
        .unwrap();
        assert_eq!(
            sources.npm_registry.as_str(),
            "https://npm.example.com/repo"
        );
        assert_eq!(sources.pypi_index.as_str(), "http://127.0.0.1:8080/simple");
        assert_eq!(sources.seeds, vec![PathBuf::from("/srv/seed")]);
        assert!(!sources.network);
    }

    #[test]
    fn bad_files_are_refused_by_name() {
        for (text, needle) in [
            (r#"{"npmRegistry": "http://npm.example.com"}"#, "not https"),
            (r#"{"npmRegistry": "ftp://x"}"#, "not https"),
            (r#"{"pypiIndex": "https://u:p@x/simple"}"#, "credentials"),
            (r#"{"seed": ["relative/dir"]}"#, "relative"),
            (r#"{"mirror": "https://x"}"#, "not a package-sources file"),
            ("not json", "not a package-sources file"),
        ] {
            let error = load(text).unwrap_err();
            assert!(error.contains(needle), "{text}: {error}");
        }
    }
}
