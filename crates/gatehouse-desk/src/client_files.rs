//! AI clients' config files in the window (issue 25): what `gatehouse clients list | connect |
//! restore` do from the terminal, one click each, through the same `gatehouse_clients` calls
//! (the import's safety rules, the byte-exact backup, the all-or-nothing connect). Under a
//! connected client, the servers its connect brought, each with what it is now: admitted,
//! pinned by you, can be pinned (the Pin button), ask your admin, or refused with the reason.
//!
//! Paths come in from the shell ([`ClientSetup`]): the home and config directories, and the
//! `gatehouse` command line the client's file will launch (`gatehouse serve --client ID`,
//! which reaches this app over the bridge). Claude Code's project files are not offered: the
//! app has no current project.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use gatehouse_clients::{
    self as clients, BackupStore, ClientError, ClientId, ClientStatus, ConnectRequest, Location,
    Roots, Scope,
};
use gatehouse_host::ErrorCode;
use gatehouse_host::host::{PackageState, RowStatus, ServerRow};
use serde::Serialize;

use super::{Desk, DeskError};

/// The command line's executable name.
pub const GATEHOUSE_BINARY: &str = "gatehouse";

/// Where the clients' files are and what they will launch, from the shell.
#[derive(Debug, Clone)]
pub struct ClientSetup {
    /// The person's home (`~/.claude.json`, `~/.cursor/mcp.json`).
    pub home: PathBuf,
    /// The user config directory (`~/.config`: Claude Desktop, VS Code).
    pub config_dir: PathBuf,
    /// The absolute path of the `gatehouse` command line, or why there is none.
    pub gatehouse: Result<PathBuf, String>,
}

/// Finds the `gatehouse` command line: next to `exe` (this app's own executable), else the
/// first executable `gatehouse` in an absolute directory of `path` (`$PATH`). A relative
/// directory is skipped: the client would launch it from wherever it runs.
pub fn locate_gatehouse(exe: Option<&Path>, path: Option<&OsStr>) -> Result<PathBuf, String> {
    let beside = exe
        .and_then(Path::parent)
        .map(|dir| dir.join(GATEHOUSE_BINARY));
    let on_path = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(GATEHOUSE_BINARY));
    beside
        .into_iter()
        .chain(on_path)
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| {
            "connecting an AI client writes `gatehouse serve` into its file, and no `gatehouse` command line was found next to this app or on PATH: install it (cargo install --path crates/gatehouse-cli, or the gatehouse package), then try again".to_string()
        })
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What a server a client brought is now, for its row under the client. Stable snake_case
/// codes; the window shows one line and, for `can_be_pinned`, the Pin button.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BroughtState {
    /// Admitted by an admin's bundle (or its attestation).
    Admitted,
    /// Admitted (or, before its first admission, bound) by the person's own pin.
    PinnedByYou,
    /// An npx or uvx package no bundle binds: the person can pin it.
    CanBePinned,
    /// A package the person cannot pin (a `.mcpb`, or under a locked admin bundle).
    AskYourAdmin,
    /// Admission refused it, or it failed to connect: `row.reason` says why.
    Refused,
    /// Running unattested, as the warn posture allows.
    Unattested,
    /// The kill switch stopped it.
    Suspended,
    Connecting,
    /// Not tried yet.
    NotConnected,
    /// No longer in servers.json.
    Removed,
}

impl BroughtState {
    pub fn as_str(self) -> &'static str {
        match self {
            BroughtState::Admitted => "admitted",
            BroughtState::PinnedByYou => "pinned_by_you",
            BroughtState::CanBePinned => "can_be_pinned",
            BroughtState::AskYourAdmin => "ask_your_admin",
            BroughtState::Refused => "refused",
            BroughtState::Unattested => "unattested",
            BroughtState::Suspended => "suspended",
            BroughtState::Connecting => "connecting",
            BroughtState::NotConnected => "not_connected",
            BroughtState::Removed => "removed",
        }
    }

    /// From the host's two answers: the server's row (its status as last tried, and whether
    /// a live connection exists; `None` when it is no longer listed) and what it is as a
    /// package (by the bundles installed now). What the person can do comes first: an
    /// unbound npx/uvx server is refused by deny-by-default, and pinning is the way out.
    pub fn of(row: Option<(RowStatus, bool)>, package: Option<PackageState>) -> BroughtState {
        let Some((status, connected)) = row else {
            return BroughtState::Removed;
        };
        match (package, status) {
            (Some(PackageState::CanBePinned), _) => BroughtState::CanBePinned,
            (Some(PackageState::AskYourAdmin), _) => BroughtState::AskYourAdmin,
            (_, RowStatus::Suspended) => BroughtState::Suspended,
            (Some(PackageState::Refused), _) | (_, RowStatus::Refused | RowStatus::Error) => {
                BroughtState::Refused
            }
            (_, RowStatus::Unattested) if connected => BroughtState::Unattested,
            (_, RowStatus::Unattested) => BroughtState::Refused,
            (Some(PackageState::PinnedByYou), _) => BroughtState::PinnedByYou,
            (_, RowStatus::Admitted) | (Some(PackageState::PackageBound), _) => {
                BroughtState::Admitted
            }
            (None, RowStatus::Connecting) => BroughtState::Connecting,
            (None, RowStatus::NotConnected) => BroughtState::NotConnected,
        }
    }
}

/// One server a client's connect brought into servers.json.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BroughtServer {
    pub name: String,
    pub state: BroughtState,
    /// What it is as a package; absent when it is not one (HTTP, a command run directly).
    pub package: Option<PackageState>,
    /// Its row in the Servers view (status, reason, headline); absent when removed.
    pub row: Option<ServerRow>,
}

/// One AI client's config file, as the AI clients view shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientFileRow {
    pub client: ClientId,
    pub display_name: &'static str,
    pub scope: Scope,
    pub path: PathBuf,
    /// The key of the servers object, e.g. `mcpServers` or `mcp.servers`.
    pub key: String,
    /// The client is installed: its file exists.
    pub exists: bool,
    /// How many MCP servers the file configures; absent when it could not be read.
    pub servers: Option<usize>,
    /// Its only server is Gatehouse's `serve --client` entry.
    pub connected: bool,
    /// A backup from connect is waiting to be restored.
    pub backup: bool,
    /// Why the file could not be read.
    pub problem: Option<String>,
    /// Connect would be tried (a readable file, not connected, no backup waiting, not a
    /// listed-only file); the host and the clients crate still decide.
    pub can_connect: bool,
    /// A backup is there to put back.
    pub can_restore: bool,
    /// The servers its connect imported (from the backup's record), while connected.
    pub brought: Vec<BroughtServer>,
}

/// What Connect did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientConnected {
    /// The client's row now (connected, with the servers it brought).
    pub row: ClientFileRow,
    /// Where the original file is kept.
    pub backup: PathBuf,
    /// Servers already in servers.json with the same settings.
    pub already_configured: Vec<String>,
    /// Secrets moved to the keychain and the import's warnings.
    pub secrets_moved: Vec<String>,
    pub warnings: Vec<String>,
}

/// What Restore did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientRestored {
    pub row: ClientFileRow,
    pub path: PathBuf,
    /// What had changed in the file since Gatehouse wrote it (gone, with `force`).
    pub changed: Vec<String>,
    /// The servers the connect imported: they stay in servers.json.
    pub kept_in_servers: Vec<String>,
}

/// The shell's setup, once given.
#[derive(Default)]
pub struct ClientsSlot {
    setup: Mutex<Option<ClientSetup>>,
}

impl ClientsSlot {
    fn get(&self) -> Option<ClientSetup> {
        self.setup
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn desk_error(error: ClientError) -> DeskError {
    let mut failed = DeskError::new(error.error_code(), error.message.clone());
    failed.refusal = error.is_refusal();
    failed
}

impl Desk {
    /// Where the clients' files are and which `gatehouse` they will launch (the shell's
    /// path resolver and [`locate_gatehouse`]).
    pub fn set_client_setup(&self, setup: ClientSetup) {
        *self
            .clients
            .setup
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(setup);
    }

    fn client_setup(&self) -> Result<(ClientSetup, Roots, BackupStore), DeskError> {
        let setup = self.clients.get().ok_or_else(|| {
            DeskError::new(
                ErrorCode::ClientConfigMissing,
                "this app was started without the AI clients' directories; restart it",
            )
        })?;
        let roots = Roots {
            home: setup.home.clone(),
            config_dir: setup.config_dir.clone(),
            // Only project files live here, and the app offers none.
            cwd: setup.home.clone(),
        };
        // The CLI's backups too: either can restore what the other connected.
        let backups = BackupStore::new(self.data.join("clients"));
        Ok((setup, roots, backups))
    }

    /// Every AI client's config file but project ones, with what each holds and, when
    /// connected, the servers its connect brought.
    pub async fn client_files(&self) -> Result<Vec<ClientFileRow>, DeskError> {
        let (_, roots, backups) = self.client_setup()?;
        let statuses: Vec<ClientStatus> = clients::list(&roots, &backups)
            .into_iter()
            .filter(|status| status.scope != Scope::Project)
            .collect();
        let rows = self.host.servers().await?;
        Ok(statuses
            .into_iter()
            .map(|status| self.file_row(status, &roots, &backups, &rows))
            .collect())
    }

    fn file_row(
        &self,
        status: ClientStatus,
        roots: &Roots,
        backups: &BackupStore,
        rows: &[ServerRow],
    ) -> ClientFileRow {
        let names = if status.backup {
            clients::location(roots, status.client, false)
                .ok()
                .filter(|location| location.scope == status.scope)
                .and_then(|location| backups.load(&location).ok())
                .map(|(meta, _, _)| meta.imported)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let packages = self.host.package_states(&names);
        let brought = names
            .into_iter()
            .map(|name| {
                let row = rows.iter().find(|row| row.name == name).cloned();
                let package = packages
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, state)| *state);
                BroughtServer {
                    state: BroughtState::of(row.as_ref().map(|r| (r.status, r.connected)), package),
                    name,
                    package,
                    row,
                }
            })
            .collect();
        let connectable = status.scope != Scope::Settings;
        ClientFileRow {
            client: status.client,
            display_name: status.client.display_name(),
            can_connect: connectable
                && status.exists
                && status.problem.is_none()
                && !status.connected
                && !status.backup,
            can_restore: status.backup,
            scope: status.scope,
            path: status.path,
            key: status.key,
            exists: status.exists,
            servers: status.servers,
            connected: status.connected,
            backup: status.backup,
            problem: status.problem,
            brought,
        }
    }

    async fn client_row(&self, client: ClientId) -> Result<ClientFileRow, DeskError> {
        self.client_files()
            .await?
            .into_iter()
            .find(|row| row.client == client && row.scope == Scope::User)
            .ok_or_else(|| {
                DeskError::new(
                    ErrorCode::ClientConfigMissing,
                    format!(
                        "{} has no config file Gatehouse knows",
                        client.display_name()
                    ),
                )
            })
    }

    fn user_location(&self, roots: &Roots, client: ClientId) -> Result<Location, DeskError> {
        clients::location(roots, client, false).map_err(desk_error)
    }

    /// Connects `client` through Gatehouse, as `gatehouse clients connect CLIENT` does: its
    /// servers imported into servers.json (all or nothing), its file backed up byte for byte
    /// and rewritten to launch `gatehouse serve --client CLIENT`. The servers it brought are
    /// then admitted, so the answer lists each with its admission and package state.
    pub async fn client_connect(&self, client: ClientId) -> Result<ClientConnected, DeskError> {
        let (setup, roots, backups) = self.client_setup()?;
        let gatehouse = setup
            .gatehouse
            .clone()
            .map_err(|why| DeskError::new(ErrorCode::SpawnFailed, why))?;
        let location = self.user_location(&roots, client)?;
        let (servers_path, secrets, task_backups) =
            (self.config.clone(), self.secrets.clone(), backups.clone());
        // The keychain blocks on D-Bus: off the async runtime.
        let outcome = tokio::task::spawn_blocking(move || {
            clients::connect(
                &ConnectRequest {
                    location: &location,
                    servers_path: &servers_path,
                    gatehouse: &gatehouse,
                    confirmed: &[],
                    replace: false,
                },
                &task_backups,
                secrets.as_ref(),
            )
        })
        .await
        .map_err(|e| DeskError::new(ErrorCode::ClientIo, format!("the connect task failed: {e}")))?
        .map_err(desk_error)?;
        // Admitted now, together, as at the app's start, so the answer says what each is (an
        // unbound npx/uvx server is refused at once, nothing spawned; a bound package installs).
        // Each outcome is in its row; the host tells the window of each.
        futures::future::join_all(
            outcome
                .import
                .imported
                .iter()
                .map(|name| self.host.server_detail(name)),
        )
        .await;
        Ok(ClientConnected {
            row: self.client_row(client).await?,
            backup: outcome.backup,
            already_configured: outcome.already_configured,
            secrets_moved: outcome.import.secrets_moved,
            warnings: outcome.import.warnings,
        })
    }

    /// Puts `client`'s file back from its backup, as `gatehouse clients restore CLIENT
    /// [--force]` does: refused when the file changed since Gatehouse wrote it, unless
    /// `force`. The servers it brought stay in servers.json.
    pub async fn client_restore(
        &self,
        client: ClientId,
        force: bool,
    ) -> Result<ClientRestored, DeskError> {
        let (_, roots, backups) = self.client_setup()?;
        let location = self.user_location(&roots, client)?;
        let outcome = clients::restore(&location, &backups, force).map_err(desk_error)?;
        Ok(ClientRestored {
            row: self.client_row(client).await?,
            path: outcome.path,
            changed: outcome.changed,
            kept_in_servers: outcome.kept_in_servers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: RowStatus, connected: bool) -> (RowStatus, bool) {
        (status, connected)
    }

    #[test]
    fn what_the_person_can_do_comes_before_the_refusal() {
        use BroughtState as B;
        use PackageState as P;
        use RowStatus as R;
        let cases = [
            (None, None, B::Removed),
            (
                Some(row(R::Refused, false)),
                Some(P::CanBePinned),
                B::CanBePinned,
            ),
            (
                Some(row(R::NotConnected, false)),
                Some(P::AskYourAdmin),
                B::AskYourAdmin,
            ),
            (
                Some(row(R::Refused, false)),
                Some(P::PackageBound),
                B::Refused,
            ),
            (
                Some(row(R::NotConnected, false)),
                Some(P::Refused),
                B::Refused,
            ),
            (Some(row(R::Error, false)), None, B::Refused),
            (Some(row(R::Unattested, false)), None, B::Refused),
            (Some(row(R::Unattested, true)), None, B::Unattested),
            (
                Some(row(R::Suspended, true)),
                Some(P::PinnedByYou),
                B::Suspended,
            ),
            (
                Some(row(R::Admitted, true)),
                Some(P::PinnedByYou),
                B::PinnedByYou,
            ),
            (
                Some(row(R::NotConnected, false)),
                Some(P::PinnedByYou),
                B::PinnedByYou,
            ),
            (
                Some(row(R::Admitted, true)),
                Some(P::PackageBound),
                B::Admitted,
            ),
            (Some(row(R::Admitted, true)), None, B::Admitted),
            (Some(row(R::Connecting, false)), None, B::Connecting),
            (Some(row(R::NotConnected, false)), None, B::NotConnected),
        ];
        for (row, package, want) in cases {
            assert_eq!(BroughtState::of(row, package), want, "{row:?} {package:?}");
            assert_eq!(
                serde_json::to_value(want).unwrap(),
                serde_json::json!(want.as_str())
            );
        }
    }

    #[test]
    fn gatehouse_is_found_beside_the_app_then_on_absolute_path_entries_only() {
        let dir = tempfile::tempdir().unwrap();
        let app_dir = dir.path().join("app");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&app_dir).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        let exe = app_dir.join("gatehouse-desktop");
        let on_path = bin.join(GATEHOUSE_BINARY);
        std::fs::write(&on_path, "#!/bin/sh\n").unwrap();
        let path = std::env::join_paths([Path::new("relative"), &bin]).unwrap();
        // Not executable: not a candidate.
        std::fs::set_permissions(&on_path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(locate_gatehouse(Some(&exe), Some(&path)).is_err());
        std::fs::set_permissions(&on_path, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(locate_gatehouse(Some(&exe), Some(&path)).unwrap(), on_path);
        // Beside the app wins.
        let beside = app_dir.join(GATEHOUSE_BINARY);
        std::fs::write(&beside, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&beside, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(locate_gatehouse(Some(&exe), Some(&path)).unwrap(), beside);
        // A relative PATH entry is never used, even when it leads to one: here, `bin` spelled
        // relative to the test's working directory.
        let cwd = std::env::current_dir().unwrap();
        let up = "../".repeat(cwd.components().count() - 1);
        let relative = PathBuf::from(up).join(bin.strip_prefix("/").unwrap());
        assert!(
            is_executable(&relative.join(GATEHOUSE_BINARY)),
            "{}",
            relative.display()
        );
        let error = locate_gatehouse(None, Some(relative.as_os_str())).unwrap_err();
        assert!(error.contains("install it"), "{error}");
        // A directory named gatehouse is not a program.
        let odd = dir.path().join("odd");
        std::fs::create_dir_all(odd.join(GATEHOUSE_BINARY)).unwrap();
        assert!(locate_gatehouse(None, Some(odd.as_os_str())).is_err());
    }
}
