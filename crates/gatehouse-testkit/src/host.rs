//! The real [`Host`], as a front end opens it, in a test's own directory: [`paths`] lays the
//! directory out, [`options`] and [`demo_options`] say how to open it (plain, or in demo mode:
//! the demo server as `demo` in 2026-07-28 and `demo-2025` in 2025-11-25 under the DEMO-ONLY
//! trust root), and [`open`] opens it with the consent UI the test gives, in-memory secrets
//! and no one notified. The consent UI is any `Arc<dyn ConsentUi>`, so the gateway's
//! `HeadlessConsent` or a scripted one can be passed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gatehouse_host::ConsentUi;
use gatehouse_host::host::{Host, HostOptions, HostPaths};
use gatehouse_host::secrets::MemoryStore;
use gatehouse_host::tap::system_clock;
use serde_json::Value;

/// The host's directories under `dir`: `config/servers.json`, `data` (the audit log is
/// `data/audit.jsonl`), `logs`, no user trust roots, and `system-trust-roots` (absent unless
/// the test makes it, so the machine's `/etc/gatehouse` is never read).
pub fn paths(dir: &Path) -> HostPaths {
    HostPaths {
        config: dir.join("config/servers.json"),
        data: dir.join("data"),
        logs: dir.join("logs"),
        user_trust_roots: None,
        system_trust_roots: dir.join("system-trust-roots"),
    }
}

/// The audit log of a host opened on [`paths`]`(dir)`.
pub fn audit_log(dir: &Path) -> PathBuf {
    paths(dir).audit()
}

/// The records of the host in `dir` whose `event` is `event`, oldest first (see
/// [`crate::audit::records_of`]).
pub fn records_of(dir: &Path, event: &str) -> Vec<Value> {
    crate::audit::records_of(&audit_log(dir), event)
}

/// Writes `servers` (a servers.json body) as the configuration of the host in `dir`.
pub fn write_servers(dir: &Path, servers: &Value) {
    let config = paths(dir).config;
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(config, serde_json::to_vec(servers).unwrap()).unwrap();
}

/// A plain host's options on [`paths`]`(dir)`, on the system clock.
pub fn options(dir: &Path) -> HostOptions {
    HostOptions::new(paths(dir), system_clock())
}

/// [`options`] in demo mode, with the demo server of [`crate::demo::server`] and 20 seconds
/// for a server's handshake.
pub fn demo_options(dir: &Path) -> HostOptions {
    let mut options = options(dir);
    options.demo = true;
    options.demo_server = Some(crate::demo::server());
    options.connect_timeout = Duration::from_secs(20);
    options
}

/// Opens the host with `consent` as its consent UI, in-memory secrets and a notifier that
/// tells no one. Panics when it does not open.
pub fn open(options: HostOptions, consent: Arc<dyn ConsentUi>) -> Arc<Host> {
    Host::open(
        options,
        Arc::new(MemoryStore::default()),
        consent,
        Arc::new(|_| {}),
    )
    .expect("host opens")
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_host::ScriptedConsent;

    #[test]
    fn the_layout_keeps_everything_inside_the_directory() {
        let paths = paths(Path::new("/t"));
        assert_eq!(paths.config, Path::new("/t/config/servers.json"));
        assert_eq!(paths.audit(), Path::new("/t/data/audit.jsonl"));
        assert_eq!(audit_log(Path::new("/t")), paths.audit());
        assert_eq!(paths.logs, Path::new("/t/logs"));
        assert_eq!(paths.user_trust_roots, None);
        assert_eq!(paths.system_trust_roots, Path::new("/t/system-trust-roots"));
    }

    #[test]
    fn demo_options_name_the_demo_server() {
        let options = demo_options(Path::new("/t"));
        assert!(options.demo);
        assert_eq!(options.demo_server, Some(crate::demo::server()));
        assert!(!self::options(Path::new("/t")).demo);
    }

    #[tokio::test]
    async fn a_plain_host_opens_with_the_servers_written_and_its_log_in_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        write_servers(
            dir.path(),
            &serde_json::json!({"mcpServers": {"echo": {"command": "/nonexistent/echo-mcp"}}}),
        );
        let host = open(
            options(dir.path()),
            Arc::new(ScriptedConsent::new(Vec::new())),
        );
        let rows = host.servers().await.unwrap();
        let names: Vec<&str> = rows.iter().map(|row| row.name.as_str()).collect();
        assert_eq!(names, ["echo"]);
        host.shutdown().await;
        assert!(audit_log(dir.path()).is_file());
        assert!(records_of(dir.path(), "no_such_event").is_empty());
    }
}
