//! The window's socket, `desk.sock`: bound in the same private directory as the bridge's
//! `gateway.sock`, with the same rules (the directory is a real directory of this user that
//! no one else may enter; a socket left by a host that died is replaced, one that answers is
//! another host's; the socket file goes with the listener, and only if it is still ours).

use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use gatehouse_desk::wire::{WireCode, WireError, own_uid};
use gatehouse_gateway::bridge::private_dir_problem;

/// Checks that `dir` is a real directory (not a link), owned by `uid`, that no one else may
/// enter or change: the bridge's rule ([`private_dir_problem`]).
pub fn check_private_dir(dir: &Path, uid: u32) -> Result<(), WireError> {
    match private_dir_problem(dir, uid) {
        Err(e) => Err(WireCode::Io.error(format!("cannot inspect {}: {e}", dir.display()))),
        Ok(Some(why)) => Err(WireCode::Io.error(format!(
            "{} {why}; remove it (Gatehouse makes it again, private to you)",
            dir.display()
        ))),
        Ok(None) => Ok(()),
    }
}

/// What binding found at the socket's place.
pub enum Bound {
    Listening(DeskListener),
    /// A host answers there already.
    AlreadyRunning,
}

/// The host's end of `desk.sock`. The socket file goes when this is dropped.
pub struct DeskListener {
    pub(crate) listener: tokio::net::UnixListener,
    path: PathBuf,
    inode: (u64, u64),
}

impl DeskListener {
    /// Binds at `path`, making its directory (0700) if missing. Must run inside a Tokio
    /// runtime.
    pub fn bind(path: &Path) -> Result<Bound, WireError> {
        let io = |what: &str, e: std::io::Error| {
            WireCode::Io.error(format!("{what} {}: {e}", path.display()))
        };
        let dir = path
            .parent()
            .ok_or_else(|| WireCode::Io.error(format!("{} has no parent", path.display())))?;
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io("cannot make the directory of", e)),
        }
        check_private_dir(dir, own_uid())?;
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io("cannot inspect", e)),
            Ok(meta) if !meta.file_type().is_socket() => {
                return Err(WireCode::Io.error(format!(
                    "{} exists and is not a socket; remove it and start Gatehouse again",
                    path.display()
                )));
            }
            Ok(_) => match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => return Ok(Bound::AlreadyRunning),
                // Nobody listens: a socket left by a host that did not exit cleanly.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    std::fs::remove_file(path).map_err(|e| io("cannot remove the stale", e))?;
                }
                Err(e) => return Err(io("cannot probe", e)),
            },
        }
        let listener =
            std::os::unix::net::UnixListener::bind(path).map_err(|e| io("cannot listen at", e))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io("cannot restrict", e))?;
        let meta = std::fs::symlink_metadata(path).map_err(|e| io("cannot inspect", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| io("cannot listen at", e))?;
        let listener =
            tokio::net::UnixListener::from_std(listener).map_err(|e| io("cannot listen at", e))?;
        Ok(Bound::Listening(DeskListener {
            listener,
            path: path.to_path_buf(),
            inode: (meta.dev(), meta.ino()),
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DeskListener {
    fn drop(&mut self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path)
            && (meta.dev(), meta.ino()) == self.inode
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
