//! A person's own pins (issue 25). Most people who install the app have no admin: `servers pin
//! NAME` (and the app's Pin button) binds a configured `npx` or `uvx` package server to the
//! closure it resolves to now, in a bundle of the person's own in their user trust-roots directory, signed
//! with a key kept in the keychain. The server then runs from the store in deny-by-default like
//! an admin-bound one, labelled "pinned by you"; a later version or a changed tree is refused
//! until they pin again. A locked admin bundle forbids it: it ignores user trust roots.
//!
//! The closure is resolved by the ecosystem's own resolver (`npm install --package-lock-only
//! --ignore-scripts`, or `pip install --dry-run --report --only-binary=:all:` for the python3
//! that will run it: each reads the registry and writes a lockfile or report, and runs no
//! package code);
//! every artifact is then fetched and checked by Gatehouse itself, as for an admin's binding.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ed25519_dalek::SigningKey;
use gatehouse_attest::bundle::sign_bundle;
use gatehouse_attest::package::{Ecosystem, parse_package};
use gatehouse_attest::pins::tool_pin;
use gatehouse_attest::sign_document;
use gatehouse_package::launcher::{PackageRequest, Parsed, parse_launcher};
use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::{ApiError, Host, PackagePreview};
use crate::ErrorCode;
use crate::config::ServerSpec;
use crate::secrets::SecretValue;

/// The person's own bundle, in their user trust-roots directory.
pub const PIN_BUNDLE_ID: &str = "pinned-by-you";
const PIN_BUNDLE_FILE: &str = "pinned-by-you.json";
/// The keychain entry holding the person's signing key (its 32-byte seed, base64).
pub const PIN_KEY_SECRET: &str = "gatehouse-pin-key";
const PIN_KEY_ID: &str = "you";
const PIN_CLEARANCE: &str = "pinned";
/// How long npm may take to resolve a closure.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(300);
/// The most bytes of a user-argument directory rule's count.
const MAX_USER_DIRS: u32 = 16;

/// What `pin` would write, shown to the person before they confirm.
#[derive(Debug, Clone, Serialize)]
pub struct PinPlan {
    pub server: String,
    /// The server id the pin gives it (`urn:gatehouse:pinned:npm:NAME`).
    pub id: String,
    pub ecosystem: Ecosystem,
    pub package: String,
    pub version: String,
    /// The fixed arguments and the rule for the person's own (directories under home).
    pub args: Vec<String>,
    pub user_args: Option<Value>,
    pub preview: PackagePreview,
    #[serde(skip)]
    binding: Value,
}

/// What `pin` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Pinned {
    pub server: String,
    pub id: String,
    pub bundle: String,
    pub path: PathBuf,
    pub tools: Vec<String>,
}

/// What a configured server is as a package, for the import report, `clients connect` and the
/// AI clients view. Stable snake_case codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PackageState {
    /// Bound by an admin's bundle: runs from the store.
    PackageBound,
    /// Bound by the person's own pin: runs from the store.
    PinnedByYou,
    /// An npx or uvx package no bundle binds: `servers pin` (or the Pin button) can pin it.
    CanBePinned,
    /// A package the person cannot pin (a `.mcpb`, a locked admin bundle): an admin must
    /// bind it.
    AskYourAdmin,
    /// A package bound, but refused as configured (another version, an argument outside its
    /// rule, a changed tree…): the verdict says why.
    Refused,
}

impl PackageState {
    pub fn as_str(self) -> &'static str {
        match self {
            PackageState::PackageBound => "package_bound",
            PackageState::PinnedByYou => "pinned_by_you",
            PackageState::CanBePinned => "can_be_pinned",
            PackageState::AskYourAdmin => "ask_your_admin",
            PackageState::Refused => "refused",
        }
    }
}

fn refuse(code: ErrorCode, message: impl Into<String>) -> ApiError {
    ApiError::new(code, message)
}

impl Host {
    /// Resolves, installs into a scratch store and starts the package server `name` as
    /// configured, and says what a pin would bind. Nothing of the person's is changed.
    pub async fn plan_pin(&self, name: &str) -> Result<PinPlan, ApiError> {
        self.pin_allowed()?;
        let (spec, _) = self.spec(name)?;
        let ServerSpec::Stdio(stdio) = &spec else {
            return Err(refuse(
                ErrorCode::PinUnsupported,
                format!("{name} is an HTTP server; pins bind packages launched with npx or uvx"),
            ));
        };
        let request = match parse_launcher(&stdio.command, &stdio.args) {
            Parsed::Request(request) => request,
            Parsed::Unsupported { reason, .. } => {
                return Err(refuse(
                    ErrorCode::PinUnsupported,
                    format!("{name} cannot be pinned as configured: {reason}"),
                ));
            }
            Parsed::NotALauncher => {
                return Err(refuse(
                    ErrorCode::PinUnsupported,
                    format!(
                        "{name} runs {} directly, not a package through npx or uvx; only those can be pinned yourself (ask an admin to bind other servers)",
                        stdio.command
                    ),
                ));
            }
        };
        let sources_path = self.options.package_sources_path();
        let sources = crate::packages::PackageSources::load(&sources_path)
            .map_err(|e| refuse(ErrorCode::ConfigInvalid, e))?;
        if !sources.network {
            return Err(refuse(
                ErrorCode::PackageUnavailable,
                format!(
                    "pinning resolves {} from the registry, and {} turns the network off; ask your admin to bind it",
                    request.name,
                    sources_path.display()
                ),
            ));
        }
        let scratch = tempfile::tempdir()
            .map_err(|e| refuse(ErrorCode::ScratchUnavailable, e.to_string()))?;
        let (args, user_args) = split_args(&request.args, &self.home());
        let (version, mut binding) = match request.ecosystem {
            Ecosystem::Npm => {
                npm_plan(&request, sources.npm_registry.as_str(), scratch.path()).await?
            }
            Ecosystem::Pypi => pypi_plan(&request, &sources.pypi_index, scratch.path()).await?,
            Ecosystem::Mcpb => {
                return Err(refuse(
                    ErrorCode::PinUnsupported,
                    format!(
                        "{name} is a .mcpb bundle; pinning one yourself is not available: ask an admin to bind it with `gatehouse bundle add-server --mcpb`"
                    ),
                ));
            }
        };
        if !args.is_empty() {
            binding["args"] = json!(args);
        }
        if let Some(rule) = &user_args {
            binding["userArgs"] = json!([rule]);
        }
        // Unsigned for the preview, which verifies nothing; `pin` signs it.
        binding["attestation"] = json!({});
        let parsed = parse_package(&binding, "package")
            .map_err(|e| refuse(ErrorCode::PackageResolveFailed, e))?;
        let preview = Host::preview_package(
            &parsed,
            Some(&sources_path),
            None,
            self.options.clock.clone(),
        )
        .await?;
        Ok(PinPlan {
            server: name.to_string(),
            id: format!(
                "urn:gatehouse:pinned:{}:{}",
                request.ecosystem.as_str(),
                request.name
            ),
            ecosystem: request.ecosystem,
            package: request.name.clone(),
            version,
            args,
            user_args,
            preview,
            binding,
        })
    }

    /// Writes `plan` into the person's own bundle, signed with their key from the keychain
    /// (made on the first pin), every tool the server listed allowed and pinned.
    pub async fn pin(&self, plan: &PinPlan) -> Result<Pinned, ApiError> {
        self.pin_allowed()?;
        let dir = self.options.paths.user_trust_roots.clone().ok_or_else(|| {
            refuse(
                ErrorCode::PinUnsupported,
                "this host has no user trust-roots directory to keep your pins in",
            )
        })?;
        let secrets = self.secrets.clone();
        let key = tokio::task::spawn_blocking(move || pin_key(secrets.as_ref()))
            .await
            .map_err(|e| refuse(ErrorCode::KeychainFailed, e.to_string()))??;
        let now = (self.options.clock)();
        let path = dir.join(PIN_BUNDLE_FILE);
        let mut signed = own_bundle(&path, &key, now)?;
        let sad = json!({
            "v": "1.0", "id": plan.id, "publisher": "pinned by you", "version": plan.version,
            "clearance": PIN_CLEARANCE, "capabilities": ["mcp-server"],
        });
        let attestation = sign_document(sad.as_object().expect("an object"), PIN_KEY_ID, &key)
            .map_err(|e| refuse(ErrorCode::KeychainFailed, e.to_string()))?;
        let mut binding = plan.binding.clone();
        binding["attestation"] = Value::Object(attestation);
        let tools: Vec<String> = plan
            .preview
            .tools
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        let pins: serde_json::Map<String, Value> = plan
            .preview
            .tools
            .iter()
            .filter_map(|t| Some((t["name"].as_str()?.to_owned(), json!(tool_pin(t)))))
            .collect();
        let entry =
            json!({"id": plan.id, "package": binding, "allowedTools": tools, "toolPins": pins});
        let servers = signed["servers"]
            .as_array_mut()
            .expect("own_bundle makes a list");
        servers.retain(|s| s["id"] != json!(plan.id));
        servers.push(entry);
        let signature = sign_bundle(&signed, PIN_KEY_ID, &key)
            .map_err(|e| refuse(ErrorCode::KeychainFailed, e.to_string()))?;
        let document = json!({"signed": signed, "signatures": [signature]});
        // Through the one install path: threshold, expiry, rollback, and the audit record.
        let staged = tempfile::NamedTempFile::new()
            .map_err(|e| refuse(ErrorCode::ScratchUnavailable, e.to_string()))?;
        std::fs::write(
            staged.path(),
            serde_json::to_vec_pretty(&document).expect("json"),
        )
        .map_err(|e| refuse(ErrorCode::ScratchUnavailable, e.to_string()))?;
        let accepted = Host::install_bundle(
            staged.path(),
            &dir,
            &self.options.audit_path(),
            now,
            self.options.clock.clone(),
        )?;
        Ok(Pinned {
            server: plan.server.clone(),
            id: plan.id.clone(),
            bundle: accepted.bundle,
            path,
            tools,
        })
    }

    /// What `admission`'s server is as a package; `None` when it is not one (HTTP, a command
    /// run directly, the demo).
    pub fn package_state(&self, admission: &super::Admission) -> Option<PackageState> {
        let verdict = &admission.verdict;
        if verdict.package.is_some() && verdict.is_admitted() {
            return Some(if verdict.pinned_by_you() {
                PackageState::PinnedByYou
            } else {
                PackageState::PackageBound
            });
        }
        if admission.demo {
            return None;
        }
        let (ServerSpec::Stdio(stdio), _) = self.spec(&admission.name).ok()? else {
            return None;
        };
        let Parsed::Request(request) = parse_launcher(&stdio.command, &stdio.args) else {
            return None;
        };
        Some(
            match (
                verdict.status,
                self.gatekeeper.trust().locked_by().is_some(),
                request.ecosystem,
            ) {
                (crate::admission::Status::Unattested, false, Ecosystem::Npm | Ecosystem::Pypi) => {
                    PackageState::CanBePinned
                }
                (crate::admission::Status::Unattested, _, _) => PackageState::AskYourAdmin,
                _ => PackageState::Refused,
            },
        )
    }

    /// What each of `names` (configured servers) is as a package, by the bundles installed
    /// now and without admitting anything (nothing is installed or started): for the import
    /// report and `clients connect`. Servers that are not packages are left out.
    pub fn package_states(&self, names: &[String]) -> Vec<(String, PackageState)> {
        let trust = self.gatekeeper.trust();
        names
            .iter()
            .filter_map(|name| {
                let (ServerSpec::Stdio(stdio), false) = self.spec(name).ok()? else {
                    return None;
                };
                let Parsed::Request(request) = parse_launcher(&stdio.command, &stdio.args) else {
                    return None;
                };
                let state = match (
                    trust.package_bound_by(&request),
                    trust.locked_by(),
                    request.ecosystem,
                ) {
                    (Some(true), _, _) => PackageState::PinnedByYou,
                    (Some(false), _, _) => PackageState::PackageBound,
                    (None, None, Ecosystem::Npm | Ecosystem::Pypi) => PackageState::CanBePinned,
                    (None, _, _) => PackageState::AskYourAdmin,
                };
                Some((name.clone(), state))
            })
            .collect()
    }

    /// For an admin's `bundle add-server` without a lockfile: `package-lock.json` as npm's
    /// resolver writes it for `name@version` now, from `sources` (a package-sources file;
    /// `None` is the public registry). No script runs; nothing is installed.
    pub async fn resolve_npm_lockfile(
        name: &str,
        version: &str,
        sources: Option<&Path>,
    ) -> Result<Value, ApiError> {
        let sources = resolver_sources(sources)?;
        let scratch = tempfile::tempdir()
            .map_err(|e| refuse(ErrorCode::ScratchUnavailable, e.to_string()))?;
        let request = PackageRequest {
            launcher: gatehouse_package::LauncherKind::Npx,
            ecosystem: Ecosystem::Npm,
            name: name.to_string(),
            version: Some(version.to_string()),
            script: None,
            mcpb_file: None,
            args: Vec::new(),
        };
        npm_resolve(&request, sources.npm_registry.as_str(), scratch.path()).await
    }

    /// For an admin's `bundle add-server` without a requirements file: the hashed,
    /// wheels-only requirements pip's resolver gives for `name==version` and the `python3` on
    /// PATH now, from `sources`, one `NAME==VERSION --hash=sha256:…` line a package.
    pub async fn resolve_pypi_requirements(
        name: &str,
        version: &str,
        sources: Option<&Path>,
    ) -> Result<String, ApiError> {
        let sources = resolver_sources(sources)?;
        let scratch = tempfile::tempdir()
            .map_err(|e| refuse(ErrorCode::ScratchUnavailable, e.to_string()))?;
        let python =
            crate::admission::resolve_program("python3", None, std::env::var_os("PATH").as_deref())
                .map_err(|e| refuse(ErrorCode::PackageResolveFailed, e))?;
        let report = pip_report(
            &python,
            &sources.pypi_index,
            name,
            Some(version),
            scratch.path(),
        )
        .await?;
        let mut text = format!(
            "# Resolved by pip for {name}=={version} (gatehouse bundle add-server), wheels only.\n"
        );
        for item in report["install"].as_array().into_iter().flatten() {
            let (Some(name), Some(version), Some(sha256)) = (
                item["metadata"]["name"].as_str(),
                item["metadata"]["version"].as_str(),
                item["download_info"]["archive_info"]["hashes"]["sha256"].as_str(),
            ) else {
                return Err(refuse(
                    ErrorCode::PackageResolveFailed,
                    "pip's report lacks a name, version or sha256",
                ));
            };
            text.push_str(&format!(
                "{name}=={version} --hash=sha256:{}\n",
                sha256.to_ascii_lowercase()
            ));
        }
        Ok(text)
    }

    /// A locked admin bundle ignores user trust roots: a pin would never apply.
    fn pin_allowed(&self) -> Result<(), ApiError> {
        match self.gatekeeper.trust().locked_by() {
            Some(bundle) => Err(refuse(
                ErrorCode::LockedByAdmin,
                format!(
                    "your admin's bundle {bundle} is locked: it ignores pins of your own; ask your admin to bind the server"
                ),
            )),
            None => Ok(()),
        }
    }

    fn home(&self) -> PathBuf {
        self.options
            .home
            .clone()
            .or_else(|| std::env::var_os("HOME").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("/nonexistent"))
    }
}

/// An npx server's version and binding: npm's resolver, then the closure Node would load.
async fn npm_plan(
    request: &PackageRequest,
    registry: &str,
    scratch: &Path,
) -> Result<(String, Value), ApiError> {
    let lock = npm_resolve(request, registry, scratch).await?;
    let version = lock["packages"][format!("node_modules/{}", request.name)]["version"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| {
            refuse(
                ErrorCode::PackageResolveFailed,
                format!("npm's lockfile does not install {}", request.name),
            )
        })?;
    // The admin's builder, so a pin and an admin's entry bind a lockfile the same way.
    let common = gatehouse_package::binding::Common {
        interpreter_sha256: vec![interpreter_digest("node")?],
        ..Default::default()
    };
    let binding = gatehouse_package::binding::npm_binding(&lock, &request.name, &version, &common)
        .map_err(|e| {
            // No single bin to run is the package's shape; anything else is the lockfile.
            let code = match e {
                gatehouse_package::binding::BindingError::EntryUnknown { .. } => {
                    ErrorCode::PinUnsupported
                }
                _ => ErrorCode::PackageResolveFailed,
            };
            refuse(code, format!("{}: {e}", request.name))
        })?;
    Ok((version, binding))
}

/// A uvx server's version and binding: pip's resolver for the `python3` that will run it
/// (`--dry-run --report`, wheels only: it reads the index and the wheels' metadata, installs
/// and builds nothing), each wheel pinned by the sha256 the report gives.
async fn pypi_plan(
    request: &PackageRequest,
    index: &url::Url,
    scratch: &Path,
) -> Result<(String, Value), ApiError> {
    let python =
        crate::admission::resolve_program("python3", None, std::env::var_os("PATH").as_deref())
            .map_err(|e| {
                refuse(
                    ErrorCode::PackageResolveFailed,
                    format!("{e}; pinning a PyPI package needs the python3 that will run it"),
                )
            })?;
    let report = pip_report(
        &python,
        index,
        &request.name,
        request.version.as_deref(),
        scratch,
    )
    .await?;
    let mut root = None;
    let mut closure = Vec::new();
    for item in report["install"].as_array().into_iter().flatten() {
        let name = item["metadata"]["name"].as_str().unwrap_or_default();
        let version = item["metadata"]["version"].as_str().unwrap_or_default();
        let url = item["download_info"]["url"].as_str().unwrap_or_default();
        let Some(sha256) = item["download_info"]["archive_info"]["hashes"]["sha256"].as_str()
        else {
            return Err(refuse(
                ErrorCode::PackageResolveFailed,
                format!("pip's report gives no sha256 for {name} {version}"),
            ));
        };
        if !url.ends_with(".whl") {
            return Err(refuse(
                ErrorCode::PackageSourceOnly,
                format!(
                    "{name} {version} resolves to {url}, not a wheel; Gatehouse never builds from source"
                ),
            ));
        }
        let pinned = json!({"name": name, "version": version, "artifact": format!("sha256:{}", sha256.to_ascii_lowercase())});
        if crate::packages::pypi_normal(name) == crate::packages::pypi_normal(&request.name) {
            root = Some((version.to_string(), pinned));
        } else {
            closure.push(pinned);
        }
    }
    let Some((version, root)) = root else {
        return Err(refuse(
            ErrorCode::PackageResolveFailed,
            format!("pip's report does not install {}", request.name),
        ));
    };
    let python = interpreter_digest("python3")?;
    let entry = request
        .script
        .clone()
        .unwrap_or_else(|| crate::packages::pypi_normal(&request.name));
    let binding = json!({
        "ecosystem": "pypi", "name": request.name, "version": version,
        "artifact": root["artifact"], "closure": closure, "entry": entry,
        "interpreter": {"kind": "python", "sha256": [python]},
    });
    Ok((version, binding))
}

/// The sources a resolver reads: the file's, which must allow the network.
fn resolver_sources(path: Option<&Path>) -> Result<crate::packages::PackageSources, ApiError> {
    let sources = match path {
        Some(path) => crate::packages::PackageSources::load(path)
            .map_err(|e| refuse(ErrorCode::ConfigInvalid, e))?,
        None => crate::packages::PackageSources::default(),
    };
    if !sources.network {
        return Err(refuse(
            ErrorCode::PackageUnavailable,
            "resolving a closure reads the registry, and package-sources.json turns the network off; pass the lockfile or requirements file you reviewed",
        ));
    }
    Ok(sources)
}

/// pip's resolution of `name` (at `version`) for `python`, as its `--report` JSON: wheels only
/// (`--only-binary=:all:`), `--dry-run` (nothing installed or built), `--isolated` (none of the
/// person's pip settings), no cache.
async fn pip_report(
    python: &Path,
    index: &url::Url,
    name: &str,
    version: Option<&str>,
    scratch: &Path,
) -> Result<Value, ApiError> {
    let spec = match version {
        Some(version) => format!("{name}=={version}"),
        None => name.to_string(),
    };
    let report = scratch.join("report.json");
    let mut command = tokio::process::Command::new(python);
    command
        .current_dir(scratch)
        .args([
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--only-binary=:all:",
            "--isolated",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--quiet",
        ])
        .arg("--report")
        .arg(&report)
        .arg("--index-url")
        .arg(index.as_str());
    // Plain http is accepted only for a mirror on this machine's loopback.
    if index.scheme() == "http"
        && let Some(host) = index.host_str()
    {
        command.arg("--trusted-host").arg(host);
    }
    command
        .arg(&spec)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy().to_ascii_uppercase();
        if name.starts_with("PIP_") || name.starts_with("PYTHON") {
            command.env_remove(key);
        }
    }
    run_resolver(&mut command, "pip", &spec).await?;
    let text = std::fs::read(&report).map_err(|e| {
        refuse(
            ErrorCode::PackageResolveFailed,
            format!("pip wrote no report: {e}"),
        )
    })?;
    serde_json::from_slice(&text).map_err(|e| {
        refuse(
            ErrorCode::PackageResolveFailed,
            format!("pip's report: {e}"),
        )
    })
}

/// Runs a resolver to its end within [`RESOLVE_TIMEOUT`]; its failure is the last lines it
/// wrote to stderr.
async fn run_resolver(
    command: &mut tokio::process::Command,
    tool: &str,
    spec: &str,
) -> Result<(), ApiError> {
    let output = tokio::time::timeout(RESOLVE_TIMEOUT, command.output())
        .await
        .map_err(|_| {
            refuse(
                ErrorCode::PackageResolveFailed,
                format!(
                    "{tool} did not resolve {spec} within {}s",
                    RESOLVE_TIMEOUT.as_secs()
                ),
            )
        })?
        .map_err(|e| {
            refuse(
                ErrorCode::PackageResolveFailed,
                format!("cannot run {tool}: {e}"),
            )
        })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
    Err(refuse(
        ErrorCode::PackageResolveFailed,
        format!(
            "{tool} could not resolve {spec}: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        ),
    ))
}

/// Runs npm's resolver in `scratch`: a lockfile for `request`, no scripts, none of the
/// person's npm settings.
async fn npm_resolve(
    request: &PackageRequest,
    registry: &str,
    scratch: &Path,
) -> Result<Value, ApiError> {
    let npm = crate::admission::resolve_program("npm", None, std::env::var_os("PATH").as_deref())
        .map_err(|e| {
        refuse(
            ErrorCode::PackageResolveFailed,
            format!(
                "{e}; pinning resolves the package with npm, which npx comes with: install npm"
            ),
        )
    })?;
    std::fs::write(
        scratch.join("package.json"),
        r#"{"name": "gatehouse-pin", "version": "0.0.0", "private": true}"#,
    )
    .map_err(|e| refuse(ErrorCode::ScratchUnavailable, e.to_string()))?;
    std::fs::write(scratch.join("npmrc"), "")
        .map_err(|e| refuse(ErrorCode::ScratchUnavailable, e.to_string()))?;
    let spec = match &request.version {
        Some(version) => format!("{}@{version}", request.name),
        None => request.name.clone(),
    };
    let mut command = tokio::process::Command::new(npm);
    command
        .current_dir(scratch)
        .args([
            "install",
            "--package-lock-only",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--save-exact",
            "--omit-lockfile-registry-resolved=false",
            "--loglevel=error",
        ])
        .arg(format!("--registry={registry}"))
        .arg(format!("--userconfig={}", scratch.join("npmrc").display()))
        .arg(format!("--cache={}", scratch.join("cache").display()))
        .arg("--")
        .arg(&spec)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for (key, _) in std::env::vars_os() {
        if key
            .to_string_lossy()
            .to_ascii_lowercase()
            .starts_with("npm_config_")
        {
            command.env_remove(key);
        }
    }
    run_resolver(&mut command, "npm", &spec).await?;
    let text = std::fs::read(scratch.join("package-lock.json")).map_err(|e| {
        refuse(
            ErrorCode::PackageResolveFailed,
            format!("npm wrote no lockfile: {e}"),
        )
    })?;
    serde_json::from_slice(&text).map_err(|e| {
        refuse(
            ErrorCode::PackageResolveFailed,
            format!("npm's lockfile: {e}"),
        )
    })
}

/// The SHA-256 of `command` (`node`, `python3`) on PATH, canonical: what runs the pin.
fn interpreter_digest(command: &str) -> Result<String, ApiError> {
    let program =
        crate::admission::resolve_program(command, None, std::env::var_os("PATH").as_deref())
            .map_err(|e| {
                refuse(
                    ErrorCode::InterpreterNotAllowed,
                    format!("{e}; install {command}"),
                )
            })?;
    let program = std::fs::canonicalize(&program).unwrap_or(program);
    crate::admission::file_sha256(&program)
        .map(hex::encode)
        .map_err(|e| refuse(ErrorCode::InterpreterNotAllowed, e))
}

/// The configured arguments as fixed ones and, when the trailing ones are all existing
/// directories under the home, a rule for them instead (so the person may change which
/// directories without pinning again).
fn split_args(args: &[String], home: &Path) -> (Vec<String>, Option<Value>) {
    let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
    let is_dir_under_home = |a: &String| {
        std::fs::canonicalize(a).is_ok_and(|p| p != home && p.starts_with(&home) && p.is_dir())
    };
    let trailing = args
        .iter()
        .rev()
        .take_while(|a| is_dir_under_home(a))
        .count();
    if trailing == 0 {
        return (args.to_vec(), None);
    }
    let fixed = args[..args.len() - trailing].to_vec();
    let max = MAX_USER_DIRS.max(trailing as u32);
    (
        fixed,
        Some(
            json!({"rule": "existing_directory_under_home", "access": "read_write", "min": 1, "max": max}),
        ),
    )
}

/// The person's key: from the keychain, or made and stored there on the first pin.
fn pin_key(secrets: &dyn crate::secrets::SecretStore) -> Result<SigningKey, ApiError> {
    use base64::Engine;
    let engine = base64::engine::general_purpose::STANDARD;
    let keychain = |e: crate::HostError| refuse(ErrorCode::KeychainFailed, e.to_string());
    if let Some(value) = secrets.get(PIN_KEY_SECRET).map_err(keychain)? {
        let seed: [u8; 32] = engine
            .decode(value.expose())
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| {
                refuse(
                    ErrorCode::KeychainFailed,
                    format!("the keychain entry {PIN_KEY_SECRET} is not a pin key; delete it to make a new one (your existing pins must then be made again)"),
                )
            })?;
        return Ok(SigningKey::from_bytes(&seed));
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| refuse(ErrorCode::KeychainFailed, e.to_string()))?;
    secrets
        .set(PIN_KEY_SECRET, &SecretValue::new(engine.encode(seed)))
        .map_err(keychain)?;
    Ok(SigningKey::from_bytes(&seed))
}

/// The signed part of the person's bundle: the one at `path` (its next version), or a new
/// one. A bundle made with another key (the keychain entry was lost) is not overwritten.
fn own_bundle(path: &Path, key: &SigningKey, now: OffsetDateTime) -> Result<Value, ApiError> {
    use base64::Engine;
    let public = base64::engine::general_purpose::STANDARD.encode(key.verifying_key().to_bytes());
    let expires = (now + time::Duration::days(3650))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let existing =
        match std::fs::read(path) {
            Ok(bytes) => Some(serde_json::from_slice::<Value>(&bytes).map_err(|e| {
                refuse(ErrorCode::ConfigInvalid, format!("{}: {e}", path.display()))
            })?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(refuse(
                    ErrorCode::ConfigInvalid,
                    format!("{}: {e}", path.display()),
                ));
            }
        };
    if let Some(document) = existing {
        let mut signed = document["signed"].clone();
        if signed["root"]["keys"][0]["publicKey"] != json!(public) {
            return Err(refuse(
                ErrorCode::KeychainFailed,
                format!(
                    "{} was signed with another key than the one in your keychain; move it away to start your pins again",
                    path.display()
                ),
            ));
        }
        let version = signed["version"].as_u64().unwrap_or(0) + 1;
        signed["version"] = json!(version);
        signed["expires"] = json!(expires);
        signed["keys"][0]["notAfter"] = json!(expires);
        return Ok(signed);
    }
    Ok(json!({
        "type": "gatehouse-trust-root", "specVersion": 4, "bundleId": PIN_BUNDLE_ID,
        "version": 1, "expires": expires,
        "root": {"threshold": 1, "keys": [{"id": PIN_KEY_ID, "publicKey": public}]},
        "posture": "deny-by-default", "locked": false, "requiredClearance": PIN_CLEARANCE,
        "scheme": {"name": "pins", "levels": [{"name": PIN_CLEARANCE, "rank": 0}]},
        "keys": [{"id": PIN_KEY_ID, "publicKey": public, "notAfter": expires,
                  "approvedClearances": [PIN_CLEARANCE]}],
        "servers": [],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::SecretStore;

    #[test]
    fn trailing_directories_under_home_become_a_rule_and_the_rest_stay_fixed() {
        let home = tempfile::tempdir().unwrap();
        let docs = home.path().join("docs");
        std::fs::create_dir(&docs).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let d = docs.display().to_string();
        let (fixed, rule) = split_args(&["--flag".into(), d.clone()], home.path());
        assert_eq!(fixed, vec!["--flag".to_string()]);
        assert_eq!(rule.unwrap()["rule"], "existing_directory_under_home");
        // A directory outside the home stays a fixed argument: it is not the person's to vary.
        let o = outside.path().display().to_string();
        let (fixed, rule) = split_args(std::slice::from_ref(&o), home.path());
        assert_eq!((fixed, rule), (vec![o], None));
        let (fixed, rule) = split_args(&[home.path().display().to_string()], home.path());
        assert_eq!(fixed.len(), 1);
        assert!(rule.is_none());
    }

    #[test]
    fn a_key_is_made_once_and_kept_in_the_keychain() {
        let secrets = crate::secrets::MemoryStore::default();
        let first = pin_key(&secrets).unwrap();
        let second = pin_key(&secrets).unwrap();
        assert_eq!(first.to_bytes(), second.to_bytes());
        let broken = crate::secrets::MemoryStore::default();
        broken
            .set(PIN_KEY_SECRET, &SecretValue::new("not a key"))
            .unwrap();
        assert_eq!(
            pin_key(&broken).unwrap_err().code,
            ErrorCode::KeychainFailed
        );
    }

    #[test]
    fn another_keys_bundle_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(PIN_BUNDLE_FILE);
        let now = OffsetDateTime::UNIX_EPOCH + time::Duration::days(20000);
        let mine = SigningKey::from_bytes(&[1; 32]);
        let fresh = own_bundle(&path, &mine, now).unwrap();
        assert_eq!(fresh["version"], 1);
        std::fs::write(
            &path,
            serde_json::to_vec(&json!({"signed": fresh})).unwrap(),
        )
        .unwrap();
        assert_eq!(own_bundle(&path, &mine, now).unwrap()["version"], 2);
        let other = SigningKey::from_bytes(&[2; 32]);
        assert_eq!(
            own_bundle(&path, &other, now).unwrap_err().code,
            ErrorCode::KeychainFailed
        );
    }
}
