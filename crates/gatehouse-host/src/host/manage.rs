//! Admission-only server work, for every front end: every listed server's verdict without
//! connecting (`servers list`), adding, importing and removing servers (one path and one set
//! of checks for the CLI and the window), and resuming a suspended server.

use serde::Serialize;
use serde_json::Value;

use super::{ApiError, Change, DEMO_LEGACY_NAME, Host, ServerRow, close_slot};
use crate::ErrorCode;
use crate::config::{ServerEntry, ServerKind, ServersFile, import, validate_server_name};
use crate::secrets::SecretValue;
use crate::{ServerSpec, demo};

/// A listed server's admission verdict, decided without connecting ([`Host::admissions`]).
#[derive(Debug, Serialize)]
pub struct Admission {
    pub name: String,
    pub transport: ServerKind,
    pub target: String,
    /// The embedded demo (`demo`, `demo-2025` in demo mode) rather than a `servers.json` entry.
    pub demo: bool,
    /// The keychain secrets its `servers.json` entry references (none for the demo's).
    pub secrets: Vec<String>,
    pub verdict: crate::Verdict,
}

/// What [`Host::resume_server`] did.
#[derive(Debug, Clone, Serialize)]
pub struct Resumed {
    pub row: ServerRow,
    /// It was suspended, and no longer is.
    pub resumed: bool,
}

/// A server to add from the window.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewServer {
    pub name: String,
    pub kind: crate::config::ServerKind,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub url: Option<String>,
    /// Goes to the keychain; the file only names it.
    #[serde(default)]
    pub bearer_token: Option<String>,
}

/// A server to add with everything `servers add` can say ([`Host::add_server_entry`]).
#[derive(Debug, Clone)]
pub struct AddServer {
    pub name: String,
    pub spec: ServerSpec,
    /// More environment variables for a stdio server (values may hold `${secret:NAME}`).
    pub env: Vec<(String, String)>,
    /// HTTP headers (values may hold `${secret:NAME}`).
    pub headers: Vec<(String, String)>,
    /// The working directory of a stdio server.
    pub cwd: Option<String>,
    /// A keychain secret, stored already, sent as the bearer token.
    pub bearer_token_secret: Option<String>,
    /// A bearer token to store in the keychain (as `NAME-bearer`) and send.
    pub bearer_token: Option<String>,
    /// Replace a listed server of the same name (never the demo's, in demo mode).
    pub replace: bool,
}

impl AddServer {
    pub fn new(name: impl Into<String>, spec: ServerSpec) -> AddServer {
        AddServer {
            name: name.into(),
            spec,
            env: Vec::new(),
            headers: Vec::new(),
            cwd: None,
            bearer_token_secret: None,
            bearer_token: None,
            replace: false,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ImportOutcome {
    pub imported: Vec<String>,
    pub skipped: Vec<String>,
    pub secrets_moved: Vec<String>,
    pub warnings: Vec<String>,
    /// Held back until the user confirms each by name (`confirmed`), with the exact settings.
    pub quarantined: Vec<crate::config::Quarantined>,
    pub refused: Vec<crate::config::RefusedImport>,
}

impl Host {
    /// Every listed server (the demo's first in demo mode, as [`Host::servers`]) with its
    /// admission decided now, one after another, without connecting: an attestation fetched,
    /// a binary hashed, each verdict audited, nothing said to the servers themselves.
    /// Connections and their slots are left as they are.
    pub async fn admissions(&self) -> Result<Vec<Admission>, ApiError> {
        let config = self.config()?;
        let mut admissions = Vec::new();
        for (name, spec, demo) in self.specs_in(&config)? {
            let secrets = match config.servers.get(&name) {
                Some(entry) if !demo => entry.secret_references(),
                _ => Vec::new(),
            };
            let person = match config.servers.get(&name) {
                Some(entry) if !demo => entry.other.get(super::confinement::CONFINEMENT_KEY),
                _ => None,
            };
            let verdict = self.gatekeeper.admit_as(&name, &spec, person).await?;
            admissions.push(Admission {
                transport: spec.kind(),
                target: spec.describe(),
                name,
                demo,
                secrets,
                verdict,
            });
        }
        (self.notify)(Change::Audit);
        Ok(admissions)
    }

    /// Adds a server to `servers.json`; a bearer token goes to the keychain first.
    pub async fn add_server(&self, new: NewServer) -> Result<ServerRow, ApiError> {
        validate_server_name(&new.name)?;
        self.check_name_free(&self.config()?, &new.name, false)?;
        let spec = match (new.kind, &new.command, &new.url) {
            (ServerKind::Stdio, Some(command), None) if !command.trim().is_empty() => {
                ServerSpec::Stdio(crate::config::StdioSpec {
                    command: command.trim().to_string(),
                    args: new.args.clone(),
                    env: Vec::new(),
                    cwd: None,
                })
            }
            (ServerKind::Http, None, Some(url)) => ServerSpec::adhoc_http(url.trim())?,
            _ => {
                return Err(ApiError::new(
                    ErrorCode::ServerInvalid,
                    "a stdio server needs a command (and optional arguments); an HTTP server needs a URL",
                ));
            }
        };
        if new.bearer_token.is_some() && new.kind != ServerKind::Http {
            return Err(ApiError::new(
                ErrorCode::ServerInvalid,
                "a bearer token only goes with an HTTP server",
            ));
        }
        self.add_server_entry(AddServer {
            bearer_token: new.bearer_token,
            ..AddServer::new(new.name, spec)
        })
        .await
    }

    /// Adds a server to `servers.json` with everything `servers add` can say (environment,
    /// headers, working directory, a stored bearer secret, replacing one of the same name):
    /// the one path every front end's add takes. A bearer token goes to the keychain first.
    pub async fn add_server_entry(&self, add: AddServer) -> Result<ServerRow, ApiError> {
        validate_server_name(&add.name)?;
        let mut config = self.config()?;
        self.check_name_free(&config, &add.name, add.replace)?;
        let mut entry = ServerEntry::from(&add.spec);
        entry.env.extend(add.env);
        entry.headers.extend(add.headers);
        if add.cwd.is_some() {
            entry.cwd = add.cwd;
        }
        if add.bearer_token_secret.is_some() {
            entry.bearer_token_secret = add.bearer_token_secret;
        }
        let token = add.bearer_token.as_deref().filter(|t| !t.is_empty());
        if token.is_some() {
            entry.bearer_token_secret = Some(format!("{}-bearer", add.name));
        }
        // Validated the way it will be read back, before anything is written: a refused entry
        // must not have replaced the keychain secret a listed server of this name uses.
        let spec = entry.to_spec(&add.name)?;
        if let (Some(token), Some(secret)) = (token, entry.bearer_token_secret.clone()) {
            let (store, value) = (self.secrets.clone(), SecretValue::new(token));
            off_runtime(move || store.set(&secret, &value)).await??;
        }
        config.servers.insert(add.name.clone(), entry);
        config.save(&self.options.paths.config)?;
        (self.notify)(Change::Servers {
            name: add.name.clone(),
        });
        Ok(self.row_for(&add.name, &spec, false, None))
    }

    /// Refuses `name` when a listed server has it (unless `replace`), or, in demo mode, when
    /// it is one of the demo's: an added "demo" would stand where the built-in one was.
    fn check_name_free(
        &self,
        config: &ServersFile,
        name: &str,
        replace: bool,
    ) -> Result<(), ApiError> {
        if self.options.demo && [demo::DEMO_SERVER_NAME, DEMO_LEGACY_NAME].contains(&name) {
            return Err(ApiError::new(
                ErrorCode::ServerExists,
                format!(
                    "{name:?} is the built-in demo server's name in demo mode; choose another name"
                ),
            ));
        }
        if config.servers.contains_key(name) && !replace {
            return Err(ApiError::new(
                ErrorCode::ServerExists,
                format!("a server named {name:?} exists; choose another name"),
            ));
        }
        Ok(())
    }

    /// Removes the `servers.json` entry `name` and closes its connection if one is open: the
    /// one path every front end's remove takes. The keychain secrets the entry referenced
    /// stay (another entry, or the user, may use them; `secret delete` removes one).
    /// In demo mode the demo's names are the built-in server unless `servers.json` has an
    /// entry of that name: the built-in one is refused (`server_exists`), as it is not in the
    /// file and would be listed again on the next look. An entry of that name is removed, and
    /// the built-in one stands in the list again.
    pub async fn remove_server(&self, name: &str) -> Result<(), ApiError> {
        let path = &self.options.paths.config;
        let mut config = self.config()?;
        if config.servers.remove(name).is_none() {
            if self.options.demo && [demo::DEMO_SERVER_NAME, DEMO_LEGACY_NAME].contains(&name) {
                return Err(ApiError::new(
                    ErrorCode::DemoNotRemovable,
                    format!(
                        "{name:?} is the built-in demo server in demo mode, not an entry of {}; it cannot be removed (it is listed only in demo mode)",
                        path.display()
                    ),
                ));
            }
            return Err(config.unknown(name, path).into());
        }
        config.save(path)?;
        let stale = self.slots.lock().await.remove(name);
        close_slot(stale).await;
        (self.notify)(Change::Servers { name: name.into() });
        Ok(())
    }

    /// Imports an `mcpServers` (or VS Code) file's content; literal credentials move to the
    /// keychain. Entries that set what a server runs are imported only when named in
    /// `confirmed` (the user saw their exact settings in an earlier report).
    pub async fn import_servers(
        &self,
        text: &str,
        confirmed: &[String],
    ) -> Result<ImportOutcome, ApiError> {
        let report = self
            .import_servers_from(
                text,
                std::path::Path::new("the imported file"),
                false,
                confirmed,
            )
            .await?;
        Ok(ImportOutcome {
            imported: report.imported,
            skipped: report.skipped,
            secrets_moved: report.secrets_moved,
            warnings: report.warnings,
            quarantined: report.quarantined,
            refused: report.refused,
        })
    }

    /// [`Host::import_servers`] of the file `source` (named in what import reports), with
    /// listed servers of the same names replaced when `replace`: the one path every front
    /// end's import takes.
    pub async fn import_servers_from(
        &self,
        text: &str,
        source: &std::path::Path,
        replace: bool,
        confirmed: &[String],
    ) -> Result<crate::config::ImportReport, ApiError> {
        // In demo mode the demo's names are taken, as for Add: an imported "demo" would stand
        // in the list where the built-in one was. Checked before anything (a secret) moves, in
        // every shape import accepts.
        if self.options.demo
            && let Ok(root) = serde_json::from_str::<Value>(text)
            && let Some(Value::Object(servers)) = crate::config::import_servers_object(&root)
            && let Some(taken) = [demo::DEMO_SERVER_NAME, DEMO_LEGACY_NAME]
                .into_iter()
                .find(|name| servers.contains_key(*name))
        {
            return Err(ApiError::new(
                ErrorCode::ServerExists,
                format!(
                    "the file names a server {taken:?}, which is the built-in demo server's name in demo mode; rename it in the file and import again (nothing was imported)"
                ),
            ));
        }
        let mut config = self.config()?;
        let (store, text, source, confirmed) = (
            self.secrets.clone(),
            text.to_string(),
            source.to_path_buf(),
            confirmed.to_vec(),
        );
        let (report, config) = off_runtime(move || {
            import(
                &text,
                &source,
                &mut config,
                store.as_ref(),
                replace,
                &confirmed,
            )
            .map(|report| (report, config))
        })
        .await??;
        config.save(&self.options.paths.config)?;
        (self.notify)(Change::Servers {
            name: String::new(),
        });
        Ok(report)
    }

    /// Lifts a suspension (after the kill switch); the next use reconnects.
    pub async fn resume(&self, name: &str) -> Result<ServerRow, ApiError> {
        Ok(self.resume_server(name).await?.row)
    }

    /// [`Host::resume`], also saying whether `name` was suspended. Admission (audited)
    /// computes the key the suspension was recorded under; nothing connects.
    pub async fn resume_server(&self, name: &str) -> Result<Resumed, ApiError> {
        let (spec, demo) = self.spec(name)?;
        let person = self.person_confinement(name);
        let verdict = self
            .gatekeeper
            .admit_as(name, &spec, person.as_ref())
            .await?;
        let resumed = self.gatekeeper.resume(&verdict)?;
        let stale = self.slots.lock().await.remove(name);
        close_slot(stale).await;
        (self.notify)(Change::Servers { name: name.into() });
        (self.notify)(Change::Audit);
        Ok(Resumed {
            row: self.row_for(name, &spec, demo, None),
            resumed,
        })
    }
}

/// Runs `work` on the blocking pool: keychain calls (Secret Service over D-Bus) block, and
/// must not stall the runtime that serves the window and the gateway's clients.
async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        ApiError::new(
            ErrorCode::SecretUnavailable,
            format!("the keychain task failed: {e}"),
        )
    })
}
