//! `--self-check`: what the host needs to see to believe the sandbox is one. The host runs it
//! through bubblewrap once per (bwrap, init) pair and compares the namespaces with its own.

use std::path::Path;

use serde_json::{Value, json};

use crate::seccomp;

/// The one JSON line the self-check prints: `net_ns` and `user_ns` as `readlink` shows them
/// ("net:[4026531840]"), `uid`, `no_new_privs` (from /proc/self/status), `seccomp_ok` (the
/// real filter applied and a process start was refused with EPERM), and `home_entries` (how
/// many entries `$HOME` shows; the host's fresh private home has none, so a positive count
/// means the user's real home leaked in; null when `$HOME` is unset or unreadable).
pub fn report() -> Result<Value, String> {
    let net_ns = namespace("net")?;
    let user_ns = namespace("user")?;
    let uid = nix::unistd::getuid().as_raw();
    // Read before the seccomp check, which sets no_new_privs itself.
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("could not read /proc/self/status ({e}); is /proc mounted?"))?;
    let no_new_privs = no_new_privs(&status);
    let home_entries = std::env::var_os("HOME").and_then(|home| count_entries(Path::new(&home)));
    let seccomp_ok = seccomp_works();
    Ok(json!({
        "net_ns": net_ns,
        "user_ns": user_ns,
        "uid": uid,
        "no_new_privs": no_new_privs,
        "seccomp_ok": seccomp_ok,
        "home_entries": home_entries,
    }))
}

fn namespace(kind: &str) -> Result<String, String> {
    let link = format!("/proc/self/ns/{kind}");
    std::fs::read_link(&link)
        .map(|target| target.to_string_lossy().into_owned())
        .map_err(|e| format!("could not read {link} ({e}); is /proc mounted?"))
}

/// The `NoNewPrivs:` field of /proc/self/status; false when absent or not "1".
pub fn no_new_privs(status: &str) -> bool {
    status
        .lines()
        .find_map(|line| line.strip_prefix("NoNewPrivs:"))
        .is_some_and(|value| value.trim() == "1")
}

fn count_entries(dir: &Path) -> Option<usize> {
    std::fs::read_dir(dir).ok().map(|entries| entries.count())
}

/// Applies the filter the server would get (no processes) and checks that it bites: starting
/// a process must now fail with EPERM. This process exits right after, so the filter costs
/// nothing.
fn seccomp_works() -> bool {
    if seccomp::apply(0).is_err() {
        return false;
    }
    // A path that does not exist: if the filter did not bite, the start fails with ENOENT
    // (nothing runs); with it, the clone itself is refused.
    match std::process::Command::new("/nonexistent/gatehouse-self-check").spawn() {
        Ok(mut child) => {
            let _ = child.wait();
            false
        }
        Err(e) => e.kind() == std::io::ErrorKind::PermissionDenied,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_new_privs_is_read_from_the_status_field() {
        assert!(no_new_privs("Name:\tx\nNoNewPrivs:\t1\nSeccomp:\t2\n"));
        assert!(!no_new_privs("Name:\tx\nNoNewPrivs:\t0\n"));
        assert!(!no_new_privs("Name:\tx\n"));
        // Only the field itself counts, not a line that merely mentions it.
        assert!(!no_new_privs("Name:\tNoNewPrivs: 1\nNoNewPrivs:\t0\n"));
        assert!(!no_new_privs("NoNewPrivs:\t10\n"));
    }

    #[test]
    fn home_entries_counts_what_the_directory_shows() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(count_entries(dir.path()), Some(0));
        std::fs::write(dir.path().join(".bashrc"), b"").unwrap();
        assert_eq!(count_entries(dir.path()), Some(1));
        assert_eq!(count_entries(&dir.path().join("absent")), None);
    }
}
