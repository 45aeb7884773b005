//! The window's socket, `desk.sock`: bound in the same private directory as the bridge's
//! `gateway.sock`, by the bridge's own [`PrivateSocket`] (the directory is a real directory of
//! this user that no one else may enter; a socket left by a host that died is replaced, one
//! that answers is another host's; the socket file goes with the listener, and only if it is
//! still ours). Only the words are the window socket's own.

use std::path::Path;

use gatehouse_desk::wire::{WireCode, WireError, own_uid};
use gatehouse_gateway::bridge::{PrivateSocket, SocketPlace, SocketProblem};

/// What binding found at the socket's place.
pub enum Bound {
    Listening(DeskListener),
    /// A host answers there already.
    AlreadyRunning,
}

/// The host's end of `desk.sock`. The socket file goes when this is dropped.
pub struct DeskListener {
    socket: PrivateSocket,
}

impl DeskListener {
    /// Binds at `path`, making its directory (0700) if missing. Must run inside a Tokio
    /// runtime.
    pub fn bind(path: &Path) -> Result<Bound, WireError> {
        match PrivateSocket::bind(path, own_uid()) {
            Ok(SocketPlace::Listening(socket)) => Ok(Bound::Listening(DeskListener { socket })),
            Ok(SocketPlace::Answered) => Ok(Bound::AlreadyRunning),
            Err(problem) => Err(desk_socket_error(path, problem)),
        }
    }

    pub fn path(&self) -> &Path {
        self.socket.path()
    }

    pub(crate) fn listener(&self) -> &tokio::net::UnixListener {
        &self.socket.listener
    }
}

/// The window socket's words for a socket it could not bind (the sentences it always had).
fn desk_socket_error(path: &Path, problem: SocketProblem) -> WireError {
    let dir = path.parent().unwrap_or(path);
    match problem {
        SocketProblem::Io { what, error } => {
            WireCode::Io.error(format!("{what} {}: {error}", path.display()))
        }
        SocketProblem::DirUnreadable(e) => {
            WireCode::Io.error(format!("cannot inspect {}: {e}", dir.display()))
        }
        SocketProblem::DirNotPrivate(why) => WireCode::Io.error(format!(
            "{} {why}; remove it (Gatehouse makes it again, private to you)",
            dir.display()
        )),
        SocketProblem::NotASocket => WireCode::Io.error(format!(
            "{} exists and is not a socket; remove it and start Gatehouse again",
            path.display()
        )),
    }
}
