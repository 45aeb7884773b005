//! Start at login against real files in temporary config directories.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use gatehouse_presence::autostart::{
    self, AutostartErrorCode, AutostartState, ForeignReason, Overwrite, entry_path,
};

/// The files in `dir`'s autostart folder (to see nothing temporary is left behind).
fn autostart_files(config: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(config.join("autostart"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn on_and_off_with_a_path_that_needs_quoting() {
    let config = tempfile::tempdir().unwrap();
    let exec = PathBuf::from("/opt/Gate House/$bin/gatehouse-background");
    assert_eq!(autostart::status(config.path()), AutostartState::Off);

    let state = autostart::enable(config.path(), &exec, Overwrite::OursOnly).expect("enable");
    assert_eq!(state, AutostartState::On { exec: exec.clone() });
    assert_eq!(autostart::status(config.path()), state);
    let path = entry_path(config.path());
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("[Desktop Entry]\n"), "{text}");
    for line in [
        "Type=Application",
        "Name=Gatehouse",
        "NoDisplay=true",
        "X-GNOME-Autostart-enabled=true",
        // Quoted, with `$` escaped inside the quotes.
        "Exec=\"/opt/Gate House/\\\\$bin/gatehouse-background\"",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
    }
    assert!(text.lines().any(|l| l.starts_with("Comment=")), "{text}");
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
    assert_eq!(autostart_files(config.path()), vec!["gatehouse.desktop"]);

    // Enabling again (the app moved) rewrites our own entry.
    let moved = PathBuf::from("/usr/lib/gatehouse/gatehouse-background");
    assert_eq!(
        autostart::enable(config.path(), &moved, Overwrite::OursOnly).expect("re-enable"),
        AutostartState::On { exec: moved }
    );
    assert_eq!(autostart_files(config.path()), vec!["gatehouse.desktop"]);

    assert_eq!(
        autostart::disable(config.path()).expect("disable"),
        AutostartState::Off
    );
    assert!(!path.exists(), "the entry is gone");
    // Disabling twice is fine.
    assert_eq!(
        autostart::disable(config.path()).expect("disable again"),
        AutostartState::Off
    );
}

#[test]
fn our_entry_switched_off_by_the_desktop_is_off_and_disable_removes_it() {
    let config = tempfile::tempdir().unwrap();
    let exec = Path::new("/usr/bin/gatehouse-background");
    autostart::enable(config.path(), exec, Overwrite::OursOnly).unwrap();
    let path = entry_path(config.path());
    let text = fs::read_to_string(&path).unwrap().replace(
        "X-GNOME-Autostart-enabled=true",
        "X-GNOME-Autostart-enabled=false",
    );
    fs::write(&path, text).unwrap();
    assert_eq!(autostart::status(config.path()), AutostartState::Off);
    assert_eq!(
        autostart::disable(config.path()).unwrap(),
        AutostartState::Off
    );
    assert!(!path.exists());
}

#[test]
fn a_foreign_entry_is_reported_and_left_alone_unless_replacing_is_confirmed() {
    let config = tempfile::tempdir().unwrap();
    let path = entry_path(config.path());
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let theirs = "[Desktop Entry]\nType=Application\nName=Gatehouse\nExec=/home/me/bin/my-gatehouse --debug\n";
    fs::write(&path, theirs).unwrap();
    let foreign = AutostartState::Foreign {
        why: ForeignReason::NotWrittenByGatehouse,
    };
    assert_eq!(autostart::status(config.path()), foreign);

    let exec = Path::new("/usr/bin/gatehouse-background");
    let err = autostart::enable(config.path(), exec, Overwrite::OursOnly).unwrap_err();
    assert_eq!(err.code(), AutostartErrorCode::ForeignFile);
    assert!(
        err.to_string().contains("not written by Gatehouse"),
        "{err}"
    );
    let err = autostart::disable(config.path()).unwrap_err();
    assert_eq!(err.code(), AutostartErrorCode::ForeignFile);
    assert_eq!(fs::read_to_string(&path).unwrap(), theirs, "untouched");

    // Our marker with a command we did not write is foreign too.
    let ours = autostart::desktop_entry(exec).unwrap();
    let edited = ours.replace(
        "Exec=/usr/bin/gatehouse-background",
        "Exec=/usr/bin/gatehouse-background --evil",
    );
    assert_ne!(edited, ours);
    fs::write(&path, &edited).unwrap();
    assert_eq!(
        autostart::status(config.path()),
        AutostartState::Foreign {
            why: ForeignReason::UnexpectedExec
        }
    );
    assert_eq!(
        autostart::disable(config.path()).unwrap_err().code(),
        AutostartErrorCode::ForeignFile
    );

    // Confirmed: replaced by ours.
    let state = autostart::enable(config.path(), exec, Overwrite::EvenForeign).unwrap();
    assert_eq!(
        state,
        AutostartState::On {
            exec: exec.to_path_buf()
        }
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), ours);
}

#[test]
fn odd_things_under_our_name_are_foreign() {
    let config = tempfile::tempdir().unwrap();
    let path = entry_path(config.path());
    fs::create_dir_all(path.parent().unwrap()).unwrap();

    // A symlink, even to our own entry: someone manages it.
    let elsewhere = config.path().join("elsewhere.desktop");
    fs::write(
        &elsewhere,
        autostart::desktop_entry(Path::new("/usr/bin/gatehouse-background")).unwrap(),
    )
    .unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    assert_eq!(
        autostart::status(config.path()),
        AutostartState::Foreign {
            why: ForeignReason::NotARegularFile
        }
    );
    assert_eq!(
        autostart::disable(config.path()).unwrap_err().code(),
        AutostartErrorCode::ForeignFile
    );
    assert!(path.symlink_metadata().is_ok(), "the link is kept");
    fs::remove_file(&path).unwrap();

    // Not UTF-8, or huge.
    fs::write(&path, b"[Desktop Entry]\nExec=/\xff\n").unwrap();
    assert_eq!(
        autostart::status(config.path()),
        AutostartState::Foreign {
            why: ForeignReason::Unreadable
        }
    );
    fs::write(&path, vec![b'#'; 70 * 1024]).unwrap();
    assert_eq!(
        autostart::status(config.path()),
        AutostartState::Foreign {
            why: ForeignReason::Unreadable
        }
    );
}

#[test]
fn an_unwritable_place_is_a_clear_error_and_nothing_is_half_written() {
    let exec = Path::new("/usr/bin/gatehouse-background");

    // The autostart folder cannot be created: a file stands where it should be.
    let config = tempfile::tempdir().unwrap();
    fs::write(config.path().join("autostart"), "not a folder").unwrap();
    let err = autostart::enable(config.path(), exec, Overwrite::OursOnly).unwrap_err();
    assert_eq!(err.code(), AutostartErrorCode::WriteFailed);
    assert!(
        err.to_string().contains("writable"),
        "says what to check: {err}"
    );

    // The final rename fails (a non-empty folder under our name, replacing confirmed): the
    // temporary file is removed and what was there is intact.
    let config = tempfile::tempdir().unwrap();
    let path = entry_path(config.path());
    fs::create_dir_all(path.join("inside")).unwrap();
    assert_eq!(
        autostart::status(config.path()),
        AutostartState::Foreign {
            why: ForeignReason::NotARegularFile
        }
    );
    let err = autostart::enable(config.path(), exec, Overwrite::EvenForeign).unwrap_err();
    assert_eq!(err.code(), AutostartErrorCode::WriteFailed, "{err}");
    assert_eq!(autostart_files(config.path()), vec!["gatehouse.desktop"]);
    assert!(path.join("inside").is_dir());

    // A read-only autostart folder (mode bits; root ignores them, so only as a normal user
    // does this refuse — the outcome is checked either way: a whole entry or a clear error).
    let config = tempfile::tempdir().unwrap();
    let dir = config.path().join("autostart");
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o555)).unwrap();
    match autostart::enable(config.path(), exec, Overwrite::OursOnly) {
        Ok(state) => {
            assert_eq!(
                state,
                AutostartState::On {
                    exec: exec.to_path_buf()
                }
            );
            assert_eq!(autostart_files(config.path()), vec!["gatehouse.desktop"]);
        }
        Err(err) => {
            assert_eq!(err.code(), AutostartErrorCode::WriteFailed, "{err}");
            assert!(autostart_files(config.path()).is_empty(), "nothing written");
        }
    }
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();

    // Bad programs never reach the disk.
    let config = tempfile::tempdir().unwrap();
    let err = autostart::enable(
        config.path(),
        Path::new("gatehouse-background"),
        Overwrite::OursOnly,
    )
    .unwrap_err();
    assert_eq!(err.code(), AutostartErrorCode::ExecNotAbsolute);
    let err = autostart::enable(
        config.path(),
        Path::new("/usr/bin/x\n[Desktop Entry]\nExec=/bin/evil"),
        Overwrite::OursOnly,
    )
    .unwrap_err();
    assert_eq!(err.code(), AutostartErrorCode::ExecHasControlChars);
    assert!(!config.path().join("autostart").exists());
}
