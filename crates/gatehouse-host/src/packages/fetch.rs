//! Fetching one artifact of a closure: from a seed directory when one holds it, else from the
//! ecosystem's registry (npm's tarball path, PyPI's simple index found by the pinned hash).
//! What is fetched is only a candidate: the store checks every hash before anything is
//! unpacked, and a seed file with the wrong bytes is skipped here, never used.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gatehouse_attest::package::{ArtifactHash, Ecosystem};
use gatehouse_package::layout::PlannedArtifact;
use reqwest::header::{ACCEPT, HeaderValue};
use url::Url;

use super::sources::PackageSources;

/// The largest artifact fetched (Node's own npm package is about 30 MB; wheels and tarballs
/// of MCP servers are far smaller): a bigger body is cut off and refused.
pub const MAX_ARTIFACT_BYTES: u64 = 256 * 1024 * 1024;
/// The largest PyPI index page read.
const MAX_INDEX_BYTES: u64 = 8 * 1024 * 1024;
/// Most redirects a registry may send for one artifact.
const MAX_REDIRECTS: usize = 5;

/// Why an artifact could not be had. Each names the package and what to do.
#[derive(Debug, thiserror::Error)]
pub enum FetchFailure {
    #[error(
        "{package} could not be fetched from {url}: {detail}; check the network or the mirror in package-sources.json, or pre-seed it"
    )]
    Unreachable {
        package: String,
        url: String,
        detail: String,
    },
    #[error(
        "{package} is not at {url} ({status}); the registry or mirror does not have this version: check package-sources.json, or pre-seed it"
    )]
    NotFound {
        package: String,
        url: String,
        status: u16,
    },
    #[error(
        "{package}: the index lists no file with the pinned hash {hash}; the registry no longer serves the bytes the admin reviewed (or the mirror lacks them): pre-seed the file, or ask the admin to re-pin"
    )]
    NoFileWithHash { package: String, hash: String },
    #[error(
        "{package}: the pinned file {file} is a source distribution; Gatehouse installs wheels only and never builds from source: bind a version with a wheel"
    )]
    SourceOnly { package: String, file: String },
    #[error(
        "{package} is larger than {limit} bytes at {url}; refused: an MCP server's artifact is far smaller"
    )]
    TooLarge {
        package: String,
        url: String,
        limit: u64,
    },
    #[error(
        "{package} is in no seed directory and the network is off (package-sources.json says \"network\": false); pre-seed it"
    )]
    Offline { package: String },
}

impl FetchFailure {
    /// Whether the artifact was simply not available (network, registry, seed), as opposed
    /// to something the registry served that must not be used.
    pub fn code(&self) -> crate::ErrorCode {
        match self {
            FetchFailure::Unreachable { .. }
            | FetchFailure::NotFound { .. }
            | FetchFailure::NoFileWithHash { .. }
            | FetchFailure::Offline { .. } => crate::ErrorCode::PackageUnavailable,
            FetchFailure::SourceOnly { .. } => crate::ErrorCode::PackageSourceOnly,
            FetchFailure::TooLarge { .. } => crate::ErrorCode::ArchiveTooLarge,
        }
    }
}

/// Fetches artifacts from `sources`, within `timeout` each.
#[derive(Debug)]
pub struct Fetcher {
    sources: PackageSources,
    timeout: Duration,
}

impl Fetcher {
    pub fn new(sources: PackageSources, timeout: Duration) -> Fetcher {
        Fetcher { sources, timeout }
    }

    pub fn sources(&self) -> &PackageSources {
        &self.sources
    }

    /// The bytes of `artifact` (not yet verified by the store).
    pub async fn fetch(
        &self,
        ecosystem: Ecosystem,
        artifact: &PlannedArtifact,
    ) -> Result<Vec<u8>, FetchFailure> {
        let package = format!("{}@{}", artifact.name, artifact.version);
        for seed in &self.sources.seeds {
            if let Some(bytes) = from_seed(seed, ecosystem, artifact).await {
                return Ok(bytes);
            }
        }
        if !self.sources.network {
            return Err(FetchFailure::Offline { package });
        }
        let work = async {
            match ecosystem {
                Ecosystem::Npm => {
                    let url = npm_tarball_url(&self.sources.npm_registry, artifact);
                    get(&url, &package, MAX_ARTIFACT_BYTES, None).await
                }
                Ecosystem::Pypi => {
                    let url = pypi_file_url(&self.sources.pypi_index, artifact, &package).await?;
                    get(&url, &package, MAX_ARTIFACT_BYTES, None).await
                }
                // A .mcpb comes from the file the config names, never from a registry.
                Ecosystem::Mcpb => Err(FetchFailure::NotFound {
                    package: package.clone(),
                    url: "(no registry for .mcpb bundles)".into(),
                    status: 404,
                }),
            }
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(FetchFailure::Unreachable {
                package,
                url: match ecosystem {
                    Ecosystem::Npm => self.sources.npm_registry.to_string(),
                    _ => self.sources.pypi_index.to_string(),
                },
                detail: format!("no answer within {}s", self.timeout.as_secs()),
            }),
        }
    }
}

impl Fetcher {
    /// The files a PyPI project offers, as (file name, SHA-256 hex): the seed directories'
    /// wheels of `name` first, then (network on) its PEP 691 index page. For `bundle
    /// add-server`, which picks among them by the requirements file's hashes; nothing here is
    /// trusted beyond its name and digest.
    pub(crate) async fn pypi_files(
        &self,
        name: &str,
    ) -> Result<Vec<(String, String)>, FetchFailure> {
        use sha2::{Digest as _, Sha256};
        let normal = pypi_normal(name);
        let mut files: Vec<(String, String)> = Vec::new();
        for seed in &self.sources.seeds {
            let Ok(mut entries) = tokio::fs::read_dir(seed.join("pypi")).await else {
                continue;
            };
            while let Ok(Some(entry)) = entries.next_entry().await {
                let file = entry.file_name().to_string_lossy().into_owned();
                let project = file.split('-').next().unwrap_or_default();
                if pypi_normal(project) != normal || !file.ends_with(".whl") {
                    continue;
                }
                let Ok(meta) = tokio::fs::metadata(entry.path()).await else {
                    continue;
                };
                if !meta.is_file() || meta.len() > MAX_ARTIFACT_BYTES {
                    continue;
                }
                if let Ok(bytes) = tokio::fs::read(entry.path()).await {
                    files.push((file, hex::encode(Sha256::digest(&bytes))));
                }
            }
        }
        if !self.sources.network {
            return if files.is_empty() {
                Err(FetchFailure::Offline { package: normal })
            } else {
                Ok(files)
            };
        }
        let index = &self.sources.pypi_index;
        let page = Url::parse(&format!(
            "{}/{normal}/",
            index.as_str().trim_end_matches('/')
        ))
        .map_err(|e| FetchFailure::Unreachable {
            package: normal.clone(),
            url: index.to_string(),
            detail: e.to_string(),
        })?;
        let listed = tokio::time::timeout(
            self.timeout,
            get(
                &page,
                &normal,
                MAX_INDEX_BYTES,
                Some("application/vnd.pypi.simple.v1+json"),
            ),
        )
        .await
        .unwrap_or_else(|_| {
            Err(FetchFailure::Unreachable {
                package: normal.clone(),
                url: page.to_string(),
                detail: format!("no answer within {}s", self.timeout.as_secs()),
            })
        });
        let body = match listed {
            Ok(body) => body,
            // The seed already holds this project's files: the index is not needed.
            Err(_) if !files.is_empty() => return Ok(files),
            Err(e) => return Err(e),
        };
        let json: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| FetchFailure::Unreachable {
                package: normal.clone(),
                url: page.to_string(),
                detail: format!("the index page is not PEP 691 JSON: {e}"),
            })?;
        for file in json["files"].as_array().into_iter().flatten() {
            if let (Some(name), Some(digest)) = (
                file["filename"].as_str(),
                file.pointer("/hashes/sha256")
                    .and_then(serde_json::Value::as_str),
            ) {
                files.push((name.to_string(), digest.to_ascii_lowercase()));
            }
        }
        Ok(files)
    }
}

/// The npm registry's tarball path: `<name>/-/<basename>-<version>.tgz`, where the basename
/// drops the scope (`@scope/pkg` → `pkg`).
pub fn npm_tarball_path(name: &str, version: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name);
    format!("{name}/-/{base}-{version}.tgz")
}

fn npm_tarball_url(registry: &Url, artifact: &PlannedArtifact) -> Url {
    let mut text = registry.as_str().trim_end_matches('/').to_string();
    text.push('/');
    text.push_str(&npm_tarball_path(&artifact.name, &artifact.version));
    // The name was checked against npm's rules (no `?`, `#`, `..`), so this stays a path.
    Url::parse(&text).unwrap_or_else(|_| registry.clone())
}

/// The PEP 503 normal form of a distribution name: the bundle parser's rule, the one every
/// PyPI name is compared in.
pub fn pypi_normal(name: &str) -> String {
    gatehouse_package::normal_form(Ecosystem::Pypi, name)
}

fn sha256_hex(artifact: &ArtifactHash) -> Option<String> {
    match artifact {
        ArtifactHash::Sha256(bytes) => Some(hex::encode(bytes)),
        ArtifactHash::Sha512(_) => None,
    }
}

/// Finds the file with the pinned hash on a PEP 691 index page.
async fn pypi_file_url(
    index: &Url,
    artifact: &PlannedArtifact,
    package: &str,
) -> Result<Url, FetchFailure> {
    let hash = sha256_hex(&artifact.artifact).unwrap_or_default();
    let page = Url::parse(&format!(
        "{}/{}/",
        index.as_str().trim_end_matches('/'),
        pypi_normal(&artifact.name)
    ))
    .map_err(|e| FetchFailure::Unreachable {
        package: package.to_string(),
        url: index.to_string(),
        detail: e.to_string(),
    })?;
    let body = get(
        &page,
        package,
        MAX_INDEX_BYTES,
        Some("application/vnd.pypi.simple.v1+json"),
    )
    .await?;
    let json: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| FetchFailure::Unreachable {
            package: package.to_string(),
            url: page.to_string(),
            detail: format!("the index page is not PEP 691 JSON: {e}"),
        })?;
    let files = json
        .get("files")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    for file in files {
        let digest = file
            .pointer("/hashes/sha256")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        if !digest.eq_ignore_ascii_case(&hash) {
            continue;
        }
        let filename = file
            .get("filename")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        if !filename.ends_with(".whl") {
            return Err(FetchFailure::SourceOnly {
                package: package.to_string(),
                file: filename.to_string(),
            });
        }
        let href = file
            .get("url")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        return page.join(href).map_err(|e| FetchFailure::Unreachable {
            package: package.to_string(),
            url: page.to_string(),
            detail: format!("the index gives a file URL that does not parse ({e})"),
        });
    }
    Err(FetchFailure::NoFileWithHash {
        package: package.to_string(),
        hash: artifact.artifact.to_text(),
    })
}

/// One GET, with at most [`MAX_REDIRECTS`] redirects (never from https to plain http off
/// loopback), and a body cut off at `limit`.
async fn get(
    url: &Url,
    package: &str,
    limit: u64,
    accept: Option<&'static str>,
) -> Result<Vec<u8>, FetchFailure> {
    let unreachable = |detail: String| FetchFailure::Unreachable {
        package: package.to_string(),
        url: url.to_string(),
        detail,
    };
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let downgrade = attempt.url().scheme() != "https"
            && attempt.previous().iter().any(|u| u.scheme() == "https");
        if attempt.previous().len() > MAX_REDIRECTS || downgrade {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    let builder = reqwest::Client::builder()
        .redirect(policy)
        .pool_max_idle_per_host(0);
    let client = crate::fetch::loopback_path(builder, url)
        .build()
        .map_err(|e| unreachable(format!("cannot build the HTTP client: {e}")))?;
    let mut request = client.get(url.clone());
    if let Some(accept) = accept {
        request = request.header(ACCEPT, HeaderValue::from_static(accept));
    }
    let mut response = request
        .send()
        .await
        .map_err(|e| unreachable(crate::fetch::describe_reqwest(&e)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(FetchFailure::NotFound {
            package: package.to_string(),
            url: url.to_string(),
            status: status.as_u16(),
        });
    }
    if response.content_length().is_some_and(|n| n > limit) {
        return Err(FetchFailure::TooLarge {
            package: package.to_string(),
            url: url.to_string(),
            limit,
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| unreachable(crate::fetch::describe_reqwest(&e)))?
    {
        if body.len() as u64 + chunk.len() as u64 > limit {
            return Err(FetchFailure::TooLarge {
                package: package.to_string(),
                url: url.to_string(),
                limit,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The artifact from one seed directory, when it holds a file with the pinned bytes.
async fn from_seed(
    seed: &Path,
    ecosystem: Ecosystem,
    artifact: &PlannedArtifact,
) -> Option<Vec<u8>> {
    let expected = artifact.artifact.to_text();
    let candidates: Vec<PathBuf> = match ecosystem {
        Ecosystem::Npm => vec![
            seed.join("npm")
                .join(npm_tarball_path(&artifact.name, &artifact.version)),
        ],
        Ecosystem::Pypi => {
            // Wheel names start with the distribution name (`-`, `.` as `_`) and version.
            let prefix = format!(
                "{}-{}-",
                pypi_normal(&artifact.name).replace('-', "_"),
                artifact.version
            );
            let dir = seed.join("pypi");
            let mut found = Vec::new();
            if let Ok(mut entries) = tokio::fs::read_dir(&dir).await {
                while let Ok(Some(entry)) = entries.next_entry().await {
                    let name = entry.file_name().to_string_lossy().to_lowercase();
                    if name.starts_with(&prefix) && name.ends_with(".whl") {
                        found.push(entry.path());
                    }
                    if found.len() > 64 {
                        break;
                    }
                }
            }
            found
        }
        Ecosystem::Mcpb => Vec::new(),
    };
    for path in candidates {
        let Ok(meta) = tokio::fs::metadata(&path).await else {
            continue;
        };
        if !meta.is_file() || meta.len() > MAX_ARTIFACT_BYTES {
            continue;
        }
        if let Ok(bytes) = tokio::fs::read(&path).await
            && gatehouse_store::verify_artifact(&bytes, &expected).is_ok()
        {
            return Some(bytes);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_paths_drop_the_scope_from_the_file_name() {
        assert_eq!(
            npm_tarball_path("@modelcontextprotocol/server-filesystem", "2026.8.31"),
            "@modelcontextprotocol/server-filesystem/-/server-filesystem-2026.8.31.tgz"
        );
        assert_eq!(npm_tarball_path("zod", "3.25.76"), "zod/-/zod-3.25.76.tgz");
    }

    #[test]
    fn pypi_names_are_normalised() {
        assert_eq!(pypi_normal("MCP_Server.time"), "mcp-server-time");
        assert_eq!(pypi_normal("typing--extensions"), "typing-extensions");
    }
}
