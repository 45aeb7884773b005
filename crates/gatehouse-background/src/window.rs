//! Starting the window (`gatehouse-desktop`) from the host, and the host from the window:
//! both are started detached (their own process group, no terminal input, reaped by a
//! thread) so that neither's end ends the other.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use gatehouse_desk::Launch;
use gatehouse_desk::launch::{log_file, program_beside, spawn_detached};

/// The window's executable: `$GATEHOUSE_WINDOW`, else `gatehouse-desktop` beside this program.
pub fn window_program() -> Option<PathBuf> {
    program_beside("GATEHOUSE_WINDOW", "gatehouse-desktop")
}

/// Starts the window when a card needs the person, at most one at a time: a window started
/// and not yet connected is not started again.
#[derive(Clone)]
pub struct WindowStarter {
    program: PathBuf,
    args: Vec<OsString>,
    /// Where the window's output goes (it has no terminal).
    log: PathBuf,
    starting: Arc<Mutex<bool>>,
}

impl WindowStarter {
    pub fn new(program: PathBuf, launch: &Launch, log: PathBuf) -> WindowStarter {
        WindowStarter {
            program,
            args: launch.to_args(),
            log,
            starting: Arc::default(),
        }
    }

    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Starts the window unless one this host started has not connected yet.
    pub fn start(&self) {
        let Ok(mut starting) = self.starting.lock() else {
            return;
        };
        if *starting {
            return;
        }
        let flag = self.starting.clone();
        let log = log_file(&self.log);
        match spawn_detached(&self.program, &self.args, log, move || {
            if let Ok(mut starting) = flag.lock() {
                *starting = false;
            }
        }) {
            Ok(pid) => {
                *starting = true;
                tracing::info!(pid, program = %self.program.display(), "started the window");
            }
            Err(error) => {
                tracing::warn!(%error, program = %self.program.display(), "the window could not start");
                eprintln!(
                    "gatehouse-background: the window ({}) could not start: {error}",
                    self.program.display()
                );
            }
        }
    }

    /// A window connected: the next card may start another once it is gone.
    pub fn connected(&self) {
        if let Ok(mut starting) = self.starting.lock() {
            *starting = false;
        }
    }
}
