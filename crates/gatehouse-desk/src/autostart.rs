//! Start at login from the window (issue 26): the Settings switch and the first-run choice
//! ("Keep Gatehouse available to your AI clients: start it when you log in?"). The entry
//! itself is `gatehouse_presence::autostart`'s (an XDG autostart file); the desk knows where it
//! goes and what it starts ([`AutostartSetup`], given by whoever opened the desk: the
//! background host, whose own path is what starts at login) and remembers that the first-run
//! question was answered, in a small file in its data directory.
//!
//! Both calls answer with the state as it now is ([`AutostartView`]); a change that could not
//! be made (someone else's entry under our name, an unwritable folder) comes back in the view
//! as its `problem`, with a code and what to do, next to the state that stayed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use gatehouse_presence::autostart::{self as xdg, AutostartState, ForeignReason, Overwrite};
use serde::{Deserialize, Serialize};

use crate::Desk;

/// The file in the data directory that says the first-run question was answered.
pub const FIRST_RUN_FILE: &str = "first-run.json";
/// The first-run file is a few dozen bytes; anything larger is not ours and is read as unanswered.
const MAX_FIRST_RUN_BYTES: u64 = 4096;

/// Where the login entry goes and what it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutostartSetup {
    /// The XDG config directory (`$XDG_CONFIG_HOME`, else `~/.config`): the entry goes in its
    /// `autostart/` folder.
    pub config_dir: PathBuf,
    /// The installed background host, started at login.
    pub exec: PathBuf,
}

/// The desk's [`AutostartSetup`], set once the opener knows it.
#[derive(Default)]
pub struct AutostartSlot {
    setup: Mutex<Option<AutostartSetup>>,
}

/// Where a choice was made: the first-run question or the Settings switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AutostartChoice {
    /// The first-run question: "Not now" changes nothing on disk, it only stops the question.
    FirstRun,
    /// The Settings switch.
    Settings,
}

/// What the window shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AutostartStatus {
    /// Gatehouse does not start at login.
    Off,
    /// Gatehouse's entry starts the background host at login.
    On,
    /// An entry under Gatehouse's name that Gatehouse did not write: left alone.
    Foreign,
    /// This desk was not told what to start (or the platform has no XDG autostart).
    Unavailable,
}

/// Why a change was not made, by a stable code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AutostartProblemCode {
    /// Someone else's entry is under our name.
    ForeignFile,
    /// The entry could not be written or removed.
    WriteFailed,
    /// The program to start cannot be written into an entry.
    BadExec,
    /// Start at login cannot be set up from this desk.
    Unavailable,
    /// The change was made but the first-run answer could not be saved (the question returns).
    FirstRunUnsaved,
}

/// A change that was not made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AutostartProblem {
    pub code: AutostartProblemCode,
    pub message: String,
}

/// Start at login as it is now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AutostartView {
    pub status: AutostartStatus,
    /// `on`: the program the entry starts.
    pub exec: Option<PathBuf>,
    /// What Gatehouse would start (the installed background host), when known.
    pub expected: Option<PathBuf>,
    /// The entry's path, when known.
    pub entry: Option<PathBuf>,
    /// `foreign`: why the entry is not Gatehouse's.
    pub foreign: Option<ForeignReason>,
    /// The first-run question should be asked: never answered, and start at login is off.
    pub first_run_pending: bool,
    /// Set when the change asked for was not made.
    pub problem: Option<AutostartProblem>,
}

/// The first-run answer as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    /// "Yes" to the first-run question.
    Yes,
    /// "Not now".
    NotNow,
    /// Chosen with the Settings switch before the question was answered.
    Settings,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct FirstRunFile {
    version: u32,
    answered: Answer,
}

impl Desk {
    /// Tells the desk where the login entry goes and what it starts.
    pub fn set_autostart_setup(&self, setup: AutostartSetup) {
        *self
            .autostart
            .setup
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(setup);
    }

    fn autostart_setup(&self) -> Option<AutostartSetup> {
        self.autostart
            .setup
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether Gatehouse starts at login, and whether to ask the first-run question.
    pub fn autostart_state(&self) -> AutostartView {
        self.autostart_view(None)
    }

    /// Turns start at login on or off. From the first run, "Not now" (`on == false`) changes
    /// nothing on disk; either answer stops the question. A change that could not be made is
    /// the view's `problem`.
    pub fn set_autostart(&self, on: bool, from: AutostartChoice) -> AutostartView {
        let problem = match self.autostart_setup() {
            None => Some(AutostartProblem {
                code: AutostartProblemCode::Unavailable,
                message: "this Gatehouse was not told which program to start at login: start the installed Gatehouse app and choose again".into(),
            }),
            Some(setup) => {
                let changed = match (on, from) {
                    (true, _) => xdg::enable(&setup.config_dir, &setup.exec, Overwrite::OursOnly),
                    (false, AutostartChoice::Settings) => xdg::disable(&setup.config_dir),
                    (false, AutostartChoice::FirstRun) => Ok(xdg::status(&setup.config_dir)),
                };
                changed.err().map(|e| AutostartProblem {
                    code: match e.code() {
                        xdg::AutostartErrorCode::ForeignFile => AutostartProblemCode::ForeignFile,
                        xdg::AutostartErrorCode::ExecNotAbsolute
                        | xdg::AutostartErrorCode::ExecNotUtf8
                        | xdg::AutostartErrorCode::ExecHasControlChars => {
                            AutostartProblemCode::BadExec
                        }
                        xdg::AutostartErrorCode::UnsupportedPlatform => {
                            AutostartProblemCode::Unavailable
                        }
                        xdg::AutostartErrorCode::WriteFailed
                        | xdg::AutostartErrorCode::RemoveFailed => AutostartProblemCode::WriteFailed,
                    },
                    message: e.to_string(),
                })
            }
        };
        let answer = match (from, on) {
            (AutostartChoice::FirstRun, true) => Answer::Yes,
            (AutostartChoice::FirstRun, false) => Answer::NotNow,
            (AutostartChoice::Settings, _) => Answer::Settings,
        };
        // A person who chose in Settings is not asked again; a Settings choice after the
        // first-run answer keeps that answer.
        let saved = if from == AutostartChoice::Settings && self.first_run_answered() {
            Ok(())
        } else {
            self.save_first_run(answer)
        };
        let problem = problem.or_else(|| {
            saved.err().map(|e| AutostartProblem {
                code: AutostartProblemCode::FirstRunUnsaved,
                message: format!(
                    "could not remember the answer in {}: {e}; Gatehouse will ask again at the next start",
                    self.first_run_path().display()
                ),
            })
        });
        self.autostart_view(problem)
    }

    fn autostart_view(&self, problem: Option<AutostartProblem>) -> AutostartView {
        let Some(setup) = self.autostart_setup() else {
            return AutostartView {
                status: AutostartStatus::Unavailable,
                exec: None,
                expected: None,
                entry: None,
                foreign: None,
                first_run_pending: false,
                problem,
            };
        };
        let (status, exec, foreign) = match xdg::status(&setup.config_dir) {
            AutostartState::Off => (AutostartStatus::Off, None, None),
            AutostartState::On { exec } => (AutostartStatus::On, Some(exec), None),
            AutostartState::Foreign { why } => (AutostartStatus::Foreign, None, Some(why)),
        };
        let status = if cfg!(any(target_os = "macos", target_os = "windows")) {
            AutostartStatus::Unavailable
        } else {
            status
        };
        AutostartView {
            first_run_pending: status == AutostartStatus::Off && !self.first_run_answered(),
            status,
            exec,
            expected: Some(setup.exec.clone()),
            entry: Some(xdg::entry_path(&setup.config_dir)),
            foreign,
            problem,
        }
    }

    fn first_run_path(&self) -> PathBuf {
        self.data.join(FIRST_RUN_FILE)
    }

    /// Whether the first-run question was answered. A missing, unreadable or malformed file is
    /// "not answered": asking again is the harmless side.
    fn first_run_answered(&self) -> bool {
        let path = self.first_run_path();
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() && meta.len() <= MAX_FIRST_RUN_BYTES => {}
            _ => return false,
        }
        std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<FirstRunFile>(&bytes).ok())
            .is_some_and(|f| f.version == 1)
    }

    fn save_first_run(&self, answered: Answer) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(&FirstRunFile {
            version: 1,
            answered,
        })
        .map_err(std::io::Error::other)?;
        std::fs::create_dir_all(&self.data)?;
        write_atomically(&self.first_run_path(), &bytes)
    }
}

/// Writes `bytes` to `path` through a temporary file beside it (fsync, rename, fsync of the
/// folder): a crash leaves the old file or the new one, and no temporary file on failure.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("the file has no folder"))?;
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(format!(".{FIRST_RUN_FILE}.{}-{n}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
