//! Previewing a package binding before anyone signs it: `bundle add-server` (the admin) and
//! `servers pin` (a person without one) install the closure into a scratch store, start the
//! server in a throwaway home and list what it offers, so what is pinned is what was seen.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gatehouse_attest::package::{PackageBinding, UserArgRule};
use serde::Serialize;

use super::{ApiError, Host, HostOptions};
use crate::config::{ServerSpec, StdioSpec};
use crate::packages::{PackageSources, Packages, STORE_DIR};
use crate::tap::Clock;

const PREVIEW: &str = "preview";

/// What a binding installs and what its server offers.
#[derive(Debug, Clone, Serialize)]
pub struct PackagePreview {
    pub package: String,
    pub version: String,
    /// Packages in the closure, the bound one included.
    pub closure: usize,
    /// Files of the installed tree (all checked against the manifest).
    pub files: usize,
    /// The interpreter and arguments it was started with.
    pub command: Vec<String>,
    /// The interpreter binary's path (its digest goes into the binding).
    pub interpreter: Option<PathBuf>,
    /// Each tool's whole definition, as `tools/list` gave it (what a pin hashes).
    pub tools: Vec<serde_json::Value>,
}

impl Host {
    /// Installs `binding`'s closure from `sources` (a package-sources file; `None` is the
    /// public registries) into a scratch store, starts it in a throwaway home with example
    /// user arguments (new directories under that home; the first allowed value), and lists
    /// its tools. Nothing of the user's is read or written. `mcpb_file` is the `.mcpb` of an
    /// MCPB binding.
    pub async fn preview_package(
        binding: &PackageBinding,
        sources: Option<&Path>,
        mcpb_file: Option<&Path>,
        clock: Clock,
    ) -> Result<PackagePreview, ApiError> {
        let options = HostOptions::ephemeral(clock)?;
        let scratch = options
            .scratch
            .as_ref()
            .map(|s| s.path().to_path_buf())
            .expect("an ephemeral host has a scratch directory");
        let sources = match sources {
            Some(path) => PackageSources::load(path)
                .map_err(|e| ApiError::new(crate::ErrorCode::ConfigInvalid, e))?,
            None => PackageSources::default(),
        };
        let home = scratch.join("home");
        let args = example_args(&binding.user_args, &home).map_err(|e| {
            ApiError::new(
                crate::ErrorCode::ScratchUnavailable,
                format!("cannot create the preview's home {}: {e}", home.display()),
            )
        })?;
        let packages = Packages::new(scratch.join("data").join(STORE_DIR), sources, home.clone());
        let user_args = gatehouse_package::check_user_args(&binding.user_args, &args, &home)
            .map_err(|e| ApiError::new(crate::ErrorCode::PackageUserArgRefused, e.to_string()))?;
        let launch = packages
            .prepare(binding, &user_args, mcpb_file)
            .await
            .map_err(|f| ApiError::new(f.code(), f.to_string()))?;
        // Confined like its admitted run (issue 28): its own store tree read-only, and the
        // throwaway home (the example directories) writable; nothing of the user's.
        let confinement = serde_json::json!({
            "read": [launch.tree.display().to_string()],
            "write": [home.display().to_string()],
        });
        let tools = list_tools(
            options,
            StdioSpec {
                command: launch.program.display().to_string(),
                args: launch.args.clone(),
                env: vec![("HOME".into(), home.display().to_string())],
                cwd: None,
            },
            Some(confinement),
        )
        .await?;
        let interpreter = match binding.interpreter {
            gatehouse_attest::package::Interpreter::Binary => None,
            _ => Some(launch.program.clone()),
        };
        Ok(PackagePreview {
            package: binding.package.name.clone(),
            version: binding.package.version.clone(),
            closure: binding.closure.len() + 1,
            files: launch.files,
            command: std::iter::once(launch.program.display().to_string())
                .chain(launch.args)
                .collect(),
            interpreter,
            tools,
        })
    }
}

impl Host {
    /// For `bundle add-server --stdio`: starts `command args` (a resolved executable) in a
    /// throwaway home of a scratch host and lists its tools. Nothing of the user's is read or
    /// written.
    pub async fn preview_stdio(
        command: &Path,
        args: &[String],
        clock: Clock,
    ) -> Result<Vec<serde_json::Value>, ApiError> {
        let options = HostOptions::ephemeral(clock)?;
        let home = options
            .scratch
            .as_ref()
            .map(|s| s.path().join("home"))
            .expect("an ephemeral host has a scratch directory");
        std::fs::create_dir_all(&home).map_err(|e| {
            ApiError::new(
                crate::ErrorCode::ScratchUnavailable,
                format!("cannot create the preview's home {}: {e}", home.display()),
            )
        })?;
        list_tools(
            options,
            StdioSpec {
                command: command.display().to_string(),
                args: args.to_vec(),
                env: vec![("HOME".into(), home.display().to_string())],
                cwd: Some(PathBuf::from(crate::connection::BOUND_SERVER_CWD)),
            },
            None,
        )
        .await
    }
}

/// What a live remote server offers, listed before anyone vouches for it.
#[derive(Debug, Clone, Serialize)]
pub struct RemotePreview {
    /// Each tool's whole definition, as `tools/list` gave it (what a pin hashes).
    pub tools: Vec<serde_json::Value>,
    /// `serverInfo` from the handshake: what the server says, unverified.
    pub server_name: Option<String>,
    pub server_version: Option<String>,
}

impl Host {
    /// Connects to the remote server at `url` from a scratch host (as an ad-hoc, unattested
    /// server under the warn posture: nothing of the user's is read or written) with
    /// `headers` sent as given, and lists its tools: what `bundle add-server --url` pins.
    pub async fn preview_remote(
        url: &url::Url,
        headers: &[(String, String)],
        clock: Clock,
    ) -> Result<RemotePreview, ApiError> {
        let options = HostOptions::ephemeral(clock)?;
        let host = Host::open(
            options,
            Arc::new(crate::secrets::MemoryStore::default()),
            Arc::new(crate::consent::ScriptedConsent::new(Vec::new())),
            Arc::new(|_| {}),
        )?;
        host.add_adhoc(
            PREVIEW,
            ServerSpec::Http(crate::config::HttpSpec {
                url: url.clone(),
                headers: headers.to_vec(),
                bearer_token_secret: None,
                oauth: crate::auth::OAuthOptions::default(),
            }),
        );
        let detail = host.connect(PREVIEW).await;
        host.shutdown().await;
        let detail = not_listed(detail?)?;
        let claimed = detail.banner.as_ref().map(|b| b.claimed.clone());
        Ok(RemotePreview {
            tools: detail
                .tools
                .allowed
                .iter()
                .chain(&detail.tools.hidden)
                .map(|t| serde_json::to_value(t).unwrap_or_default())
                .collect(),
            server_name: claimed.as_ref().and_then(|c| c.server_name.clone()),
            server_version: claimed.and_then(|c| c.server_version),
        })
    }
}

/// Opens a scratch host on `options`, connects `spec` as an ad-hoc server (unattested, the
/// warn posture of an ephemeral host) and returns every tool's whole definition.
async fn list_tools(
    options: HostOptions,
    spec: StdioSpec,
    confinement: Option<serde_json::Value>,
) -> Result<Vec<serde_json::Value>, ApiError> {
    let host = Host::open(
        options,
        Arc::new(crate::secrets::MemoryStore::default()),
        Arc::new(crate::consent::ScriptedConsent::new(Vec::new())),
        Arc::new(|_| {}),
    )?;
    match confinement {
        Some(confinement) => host.add_adhoc_confined(PREVIEW, ServerSpec::Stdio(spec), confinement),
        None => host.add_adhoc(PREVIEW, ServerSpec::Stdio(spec)),
    }
    let detail = host.connect(PREVIEW).await;
    host.shutdown().await;
    let detail = not_listed(detail?)?;
    Ok(detail
        .tools
        .allowed
        .iter()
        .chain(&detail.tools.hidden)
        .map(|t| serde_json::to_value(t).unwrap_or_default())
        .collect())
}

/// A preview whose connection failed (a server that needs a sign-in, one that did not start)
/// lists nothing: say why instead of offering an empty listing to choose tools from.
fn not_listed(detail: super::ServerDetail) -> Result<super::ServerDetail, ApiError> {
    if detail.row.connected {
        return Ok(detail);
    }
    let (code, why) = match &detail.row.reason {
        Some(reason) => (
            crate::ErrorCode::parse(&reason.code).unwrap_or(crate::ErrorCode::ConnectFailed),
            reason.detail.clone(),
        ),
        None => (crate::ErrorCode::ConnectFailed, detail.row.headline.clone()),
    };
    let hint = if code == crate::ErrorCode::AuthRequired {
        "; it needs a sign-in: pass a token for the listing with --header 'Authorization: Bearer …' (it is never written into the bundle)"
    } else {
        ""
    };
    Err(ApiError::new(
        code,
        format!("could not list the server's tools: {why}{hint}"),
    ))
}

/// Arguments that satisfy `rules` in a throwaway home: the minimum count of each (at least
/// one for a rule that allows one), new directories for directory rules.
fn example_args(rules: &[UserArgRule], home: &Path) -> std::io::Result<Vec<String>> {
    std::fs::create_dir_all(home)?;
    let mut args = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let (min, max) = rule.count();
        let count = min.max(max.min(1));
        for n in 0..count {
            match rule {
                UserArgRule::ExistingDirectoryUnderHome { .. } => {
                    let dir = home.join(format!("preview-{i}-{n}"));
                    std::fs::create_dir_all(&dir)?;
                    args.push(dir.display().to_string());
                }
                UserArgRule::OneOf { values, .. } => {
                    args.push(values.first().cloned().unwrap_or_default());
                }
            }
        }
    }
    Ok(args)
}
