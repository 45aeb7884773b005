//! Start at login on a real desk (issue 26): the first-run question is pending until answered
//! (once, remembered in the data directory across a reopened desk), "Yes" writes the login
//! entry that starts the background host, Settings turns it off and on, someone else's entry
//! under our name is shown as such and left alone, and a desk not told what to start says so.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gatehouse_desk::autostart::{
    AutostartChoice, AutostartProblemCode, AutostartSetup, AutostartStatus, FIRST_RUN_FILE,
};
use gatehouse_desk::{Desk, DeskOptions};
use gatehouse_host::{MemoryStore, system_clock};

struct Person {
    dir: tempfile::TempDir,
    /// What starts at login: a path with a space, as an install under /opt might have.
    exec: PathBuf,
}

impl Person {
    fn new() -> Person {
        let dir = tempfile::tempdir().unwrap();
        let exec = dir.path().join("Gate House/gatehouse-background");
        Person { dir, exec }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("xdg-config")
    }

    fn entry(&self) -> PathBuf {
        self.config().join("autostart/gatehouse.desktop")
    }

    /// A desk on this person's files, told (or not) what starts at login.
    fn open(&self, told: bool) -> Arc<Desk> {
        let paths = gatehouse_testkit::host::paths(self.dir.path());
        let options = DeskOptions::new(paths, system_clock());
        let desk = Desk::open(options, Arc::new(MemoryStore::default()), Arc::new(|_| {}))
            .expect("the desk opens");
        if told {
            desk.set_autostart_setup(AutostartSetup {
                config_dir: self.config(),
                exec: self.exec.clone(),
            });
        }
        desk
    }
}

fn exec_line(entry: &Path) -> String {
    std::fs::read_to_string(entry)
        .expect("the entry")
        .lines()
        .find(|l| l.starts_with("Exec="))
        .expect("an Exec line")
        .to_string()
}

#[test]
fn first_run_yes_writes_the_entry_and_is_asked_once() {
    let person = Person::new();
    let desk = person.open(true);
    let view = desk.autostart_state();
    assert_eq!(view.status, AutostartStatus::Off);
    assert!(view.first_run_pending, "a new person is asked");
    assert_eq!(view.expected.as_deref(), Some(person.exec.as_path()));

    let view = desk.set_autostart(true, AutostartChoice::FirstRun);
    assert_eq!(view.problem, None);
    assert_eq!(view.status, AutostartStatus::On);
    assert_eq!(view.exec.as_deref(), Some(person.exec.as_path()));
    assert!(!view.first_run_pending);
    assert_eq!(
        exec_line(&person.entry()),
        format!("Exec=\"{}\"", person.exec.display()),
        "the path with a space is quoted"
    );

    // Settings turns it off: the file is gone, and the question does not come back.
    let view = desk.set_autostart(false, AutostartChoice::Settings);
    assert_eq!(view.problem, None);
    assert_eq!(view.status, AutostartStatus::Off);
    assert!(!person.entry().exists());
    assert!(!view.first_run_pending, "answered once is answered");

    // A reopened desk (the next start) remembers the answer.
    drop(desk);
    let desk = person.open(true);
    assert!(!desk.autostart_state().first_run_pending);
    let saved = std::fs::read_to_string(person.dir.path().join("data").join(FIRST_RUN_FILE));
    assert!(
        saved.is_ok_and(|s| s.contains("\"yes\"")),
        "the first-run answer is in the data directory"
    );
}

#[test]
fn first_run_not_now_changes_nothing_on_disk_but_stops_the_question() {
    let person = Person::new();
    let desk = person.open(true);
    let view = desk.set_autostart(false, AutostartChoice::FirstRun);
    assert_eq!(view.problem, None);
    assert_eq!(view.status, AutostartStatus::Off);
    assert!(!view.first_run_pending);
    assert!(
        !person.config().join("autostart").exists(),
        "nothing written"
    );
    // Changeable in Settings later.
    let view = desk.set_autostart(true, AutostartChoice::Settings);
    assert_eq!(view.status, AutostartStatus::On);
}

#[test]
fn a_broken_first_run_file_means_ask_again() {
    let person = Person::new();
    let desk = person.open(true);
    let file = person.dir.path().join("data").join(FIRST_RUN_FILE);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    for junk in [
        &b"{\"version\":1,\"answered\":\"maybe\"}"[..],
        b"{\"version\":2,\"answered\":\"yes\"}",
        b"not json",
        &[b' '; 5000],
    ] {
        std::fs::write(&file, junk).unwrap();
        assert!(
            desk.autostart_state().first_run_pending,
            "{:?}",
            String::from_utf8_lossy(junk)
        );
    }
    std::fs::write(&file, b"{\"version\":1,\"answered\":\"not_now\"}").unwrap();
    assert!(!desk.autostart_state().first_run_pending);
}

#[test]
fn a_foreign_entry_is_shown_and_left_alone() {
    let person = Person::new();
    let desk = person.open(true);
    std::fs::create_dir_all(person.entry().parent().unwrap()).unwrap();
    let theirs = "[Desktop Entry]\nType=Application\nName=My Gatehouse\nExec=/usr/local/bin/gatehouse-background --debug\n";
    std::fs::write(person.entry(), theirs).unwrap();

    let view = desk.autostart_state();
    assert_eq!(view.status, AutostartStatus::Foreign);
    assert!(
        !view.first_run_pending,
        "nothing to ask: something already starts"
    );
    assert_eq!(
        serde_json::to_value(&view).unwrap()["foreign"],
        "not_written_by_gatehouse"
    );

    for on in [true, false] {
        let view = desk.set_autostart(on, AutostartChoice::Settings);
        assert_eq!(view.status, AutostartStatus::Foreign);
        let problem = view.problem.expect("refused");
        assert_eq!(problem.code, AutostartProblemCode::ForeignFile);
        assert!(
            problem.message.contains("not written by Gatehouse"),
            "{}",
            problem.message
        );
    }
    assert_eq!(std::fs::read_to_string(person.entry()).unwrap(), theirs);
}

#[test]
fn a_desk_not_told_what_to_start_says_so() {
    let person = Person::new();
    let desk = person.open(false);
    let view = desk.autostart_state();
    assert_eq!(view.status, AutostartStatus::Unavailable);
    assert!(!view.first_run_pending);
    let view = desk.set_autostart(true, AutostartChoice::Settings);
    assert_eq!(view.status, AutostartStatus::Unavailable);
    assert_eq!(
        view.problem.map(|p| p.code),
        Some(AutostartProblemCode::Unavailable)
    );
    assert!(!person.config().exists());
}

#[test]
fn an_unwritable_autostart_folder_is_a_problem_and_the_state_stays() {
    let person = Person::new();
    let desk = person.open(true);
    std::fs::create_dir_all(person.config()).unwrap();
    // A file where the autostart folder should be.
    std::fs::write(person.config().join("autostart"), "in the way").unwrap();
    let view = desk.set_autostart(true, AutostartChoice::FirstRun);
    assert_eq!(view.status, AutostartStatus::Off);
    let problem = view.problem.expect("not written");
    assert_eq!(problem.code, AutostartProblemCode::WriteFailed);
    assert!(problem.message.contains("writable"), "{}", problem.message);
    // The answer was given: the question does not come back even though the write failed
    // (Settings shows the switch off, with the problem).
    assert!(!view.first_run_pending);
}

#[test]
fn the_view_is_what_the_window_reads() {
    let person = Person::new();
    let desk = person.open(true);
    let view = serde_json::to_value(desk.set_autostart(true, AutostartChoice::Settings)).unwrap();
    assert_eq!(view["status"], "on");
    assert_eq!(view["exec"], person.exec.display().to_string());
    assert_eq!(view["entry"], person.entry().display().to_string());
    assert_eq!(view["firstRunPending"], false);
    assert!(view["problem"].is_null());
    let choice: AutostartChoice = serde_json::from_value(serde_json::json!("first_run")).unwrap();
    assert_eq!(choice, AutostartChoice::FirstRun);
    assert!(serde_json::from_value::<AutostartChoice>(serde_json::json!("firstRun")).is_err());
}
