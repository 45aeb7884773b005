//! Start at login: an XDG autostart entry, `<config dir>/autostart/gatehouse.desktop`
//! (the config dir is `$XDG_CONFIG_HOME`, else `~/.config`; see [`config_dir_from_env`]),
//! that starts the background host when the person logs in.
//!
//! The entry carries a marker key (`X-Gatehouse-Autostart=1`) and an `Exec` of exactly one
//! absolute path: a file under our name without the marker, or with a different command, was
//! written by someone else (the person, a dotfiles manager, an administrator) and is reported
//! as [`AutostartState::Foreign`]: [`enable`] replaces it only when asked to
//! ([`Overwrite::EvenForeign`]) and [`disable`] never deletes it.
//!
//! Writes are atomic (a temporary file in the same directory, fsync, rename, fsync of the
//! directory): a crash leaves the old entry or the new one, never half of one.
//!
//! The other desktops, not implemented here (every call there fails with
//! `unsupported_platform`):
//! - macOS: a LaunchAgent, `~/Library/LaunchAgents/<bundle id>.plist` with `Label`,
//!   `ProgramArguments` = [the background host's path] and `RunAtLoad` = true (loaded at the
//!   next login, or at once with `launchctl bootstrap gui/<uid> <plist>`); on macOS 13+ the
//!   app bundle can instead register itself with `SMAppService.mainApp.register()` /
//!   `SMAppService.agent(plistName:)`, which also lists it under System Settings › General ›
//!   Login Items where the person can turn it off.
//! - Windows: a value named `Gatehouse` under
//!   `HKCU\Software\Microsoft\Windows\CurrentVersion\Run` holding the quoted path of the
//!   background host (per user, no elevation; Task Manager's Startup tab can disable it), or a
//!   shortcut in the per-user Startup folder (`shell:startup`).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The entry's file name.
pub const ENTRY_FILE: &str = "gatehouse.desktop";
/// The marker key that says Gatehouse wrote the entry.
const MARKER: &str = "X-Gatehouse-Autostart=1";
/// Entries larger than this are not ours (ours is a few hundred bytes).
const MAX_ENTRY_BYTES: u64 = 64 * 1024;

/// The config directory from the environment: `$XDG_CONFIG_HOME` when set to an absolute path
/// (the spec says to ignore a relative one), else `$HOME/.config`. The only environment read in
/// this module; everything else takes the directory as an argument.
pub fn config_dir_from_env() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from)
        && dir.is_absolute()
    {
        return Some(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    home.is_absolute().then(|| home.join(".config"))
}

/// Where the entry lives under `config_dir`.
pub fn entry_path(config_dir: &Path) -> PathBuf {
    config_dir.join("autostart").join(ENTRY_FILE)
}

/// Whether Gatehouse starts at login.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AutostartState {
    /// No entry, or our entry switched off by the desktop's own startup settings
    /// (`Hidden=true` or `X-GNOME-Autostart-enabled=false`).
    Off,
    /// Our entry starts `exec` at login.
    On { exec: PathBuf },
    /// A file under our name that Gatehouse did not write (or cannot read): left alone.
    Foreign { why: ForeignReason },
}

/// Why an entry under our name is not ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ForeignReason {
    /// No Gatehouse marker in it.
    NotWrittenByGatehouse,
    /// Our marker, but an `Exec` other than one absolute path (edited by hand).
    UnexpectedExec,
    /// A directory, a symlink or another non-file under our name.
    NotARegularFile,
    /// It could not be read (permissions, not UTF-8, too large).
    Unreadable,
}

impl ForeignReason {
    /// The stable snake_case code.
    pub fn as_str(self) -> &'static str {
        match self {
            ForeignReason::NotWrittenByGatehouse => "not_written_by_gatehouse",
            ForeignReason::UnexpectedExec => "unexpected_exec",
            ForeignReason::NotARegularFile => "not_a_regular_file",
            ForeignReason::Unreadable => "unreadable",
        }
    }
}

/// Whether [`enable`] may replace an entry someone else wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overwrite {
    /// Replace only our own entry (the default choice).
    OursOnly,
    /// Replace whatever is there (the person confirmed it).
    EvenForeign,
}

/// What went wrong, by a stable code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AutostartErrorCode {
    /// The entry under our name is someone else's.
    ForeignFile,
    /// The program path is relative.
    ExecNotAbsolute,
    /// The program path is not UTF-8 (desktop entries are UTF-8).
    ExecNotUtf8,
    /// The program path holds control characters (a newline would break the entry).
    ExecHasControlChars,
    /// The entry could not be written.
    WriteFailed,
    /// The entry could not be removed.
    RemoveFailed,
    /// Not Linux/XDG.
    UnsupportedPlatform,
}

impl AutostartErrorCode {
    /// The stable snake_case code.
    pub fn as_str(self) -> &'static str {
        match self {
            AutostartErrorCode::ForeignFile => "foreign_file",
            AutostartErrorCode::ExecNotAbsolute => "exec_not_absolute",
            AutostartErrorCode::ExecNotUtf8 => "exec_not_utf8",
            AutostartErrorCode::ExecHasControlChars => "exec_has_control_chars",
            AutostartErrorCode::WriteFailed => "write_failed",
            AutostartErrorCode::RemoveFailed => "remove_failed",
            AutostartErrorCode::UnsupportedPlatform => "unsupported_platform",
        }
    }
}

/// A failure to change the entry, with what to do.
#[derive(Clone, Debug)]
pub struct AutostartError {
    code: AutostartErrorCode,
    message: String,
}

impl AutostartError {
    fn new(code: AutostartErrorCode, message: impl Into<String>) -> AutostartError {
        AutostartError {
            code,
            message: message.into(),
        }
    }

    /// The stable code.
    pub fn code(&self) -> AutostartErrorCode {
        self.code
    }
}

impl std::fmt::Display for AutostartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code.as_str())
    }
}

impl std::error::Error for AutostartError {}

/// Whether Gatehouse starts at login from `config_dir`'s autostart entry.
pub fn status(config_dir: &Path) -> AutostartState {
    let path = entry_path(config_dir);
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        // No entry; or no autostart folder at all (a file in its place): nothing starts either.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return AutostartState::Off;
        }
        Err(_) => {
            return AutostartState::Foreign {
                why: ForeignReason::Unreadable,
            };
        }
    };
    if !meta.file_type().is_file() {
        return AutostartState::Foreign {
            why: ForeignReason::NotARegularFile,
        };
    }
    if meta.len() > MAX_ENTRY_BYTES {
        return AutostartState::Foreign {
            why: ForeignReason::Unreadable,
        };
    }
    match fs::read(&path).map(String::from_utf8) {
        Ok(Ok(text)) => classify(&text),
        _ => AutostartState::Foreign {
            why: ForeignReason::Unreadable,
        },
    }
}

/// Reads an entry's text: ours (on or switched off) or foreign.
fn classify(text: &str) -> AutostartState {
    let mut in_main = false;
    let mut marker = false;
    let mut exec = None;
    let mut off = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_main = line == "[Desktop Entry]";
            continue;
        }
        if !in_main {
            continue;
        }
        if line == MARKER {
            marker = true;
        } else if let Some(value) = line.strip_prefix("Exec=") {
            exec = Some(value.to_string());
        } else if line == "Hidden=true" || line == "X-GNOME-Autostart-enabled=false" {
            off = true;
        }
    }
    if !marker {
        return AutostartState::Foreign {
            why: ForeignReason::NotWrittenByGatehouse,
        };
    }
    let program = exec
        .and_then(|e| parse_exec(&e))
        .filter(|args| args.len() == 1)
        .map(|mut args| PathBuf::from(args.remove(0)))
        .filter(|p| p.is_absolute());
    match program {
        None => AutostartState::Foreign {
            why: ForeignReason::UnexpectedExec,
        },
        Some(_) if off => AutostartState::Off,
        Some(exec) => AutostartState::On { exec },
    }
}

/// The characters that make the Desktop Entry spec require quoting an `Exec` argument.
const RESERVED: &[char] = &[
    ' ', '\t', '\n', '"', '\'', '\\', '>', '<', '~', '|', '&', ';', '$', '*', '?', '#', '(', ')',
    '`',
];

/// One `Exec` argument quoted per the Desktop Entry spec, then escaped as a desktop-entry
/// string value: inside double quotes `"`, `` ` ``, `$` and `\` take a backslash, `%` is
/// doubled (field codes), and the string escape then doubles every backslash.
fn quote_exec_arg(arg: &str) -> String {
    let needs_quotes = arg.is_empty() || arg.contains(RESERVED);
    let mut quoted = String::with_capacity(arg.len() + 2);
    if needs_quotes {
        quoted.push('"');
    }
    for c in arg.chars() {
        match c {
            '"' | '`' | '$' | '\\' if needs_quotes => {
                quoted.push('\\');
                quoted.push(c);
            }
            '%' => quoted.push_str("%%"),
            c => quoted.push(c),
        }
    }
    if needs_quotes {
        quoted.push('"');
    }
    // The value is a desktop-entry string: its own escapes come on top of the quoting.
    quoted.replace('\\', "\\\\")
}

/// The arguments of an `Exec` value (the inverse of [`quote_exec_arg`] joined by spaces), or
/// `None` when it is malformed or uses field codes other than `%%`.
fn parse_exec(value: &str) -> Option<Vec<String>> {
    // Undo the string escapes first.
    let mut unescaped = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next()? {
                's' => unescaped.push(' '),
                'n' => unescaped.push('\n'),
                't' => unescaped.push('\t'),
                'r' => unescaped.push('\r'),
                '\\' => unescaped.push('\\'),
                other => {
                    // A lone backslash before another character is left as is.
                    unescaped.push('\\');
                    unescaped.push(other);
                }
            }
        } else {
            unescaped.push(c);
        }
    }
    let mut args = Vec::new();
    let mut chars = unescaped.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let Some(&first) = chars.peek() else { break };
        let mut arg = String::new();
        if first == '"' {
            chars.next();
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => match chars.next()? {
                        c @ ('"' | '`' | '$' | '\\') => arg.push(c),
                        _ => return None,
                    },
                    '%' => {
                        if chars.next()? != '%' {
                            return None;
                        }
                        arg.push('%');
                    }
                    c => arg.push(c),
                }
            }
            // A quoted argument ends at a space or the end.
            if chars.peek().is_some_and(|c| *c != ' ') {
                return None;
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ' ' {
                    break;
                }
                chars.next();
                if c == '%' {
                    if chars.next()? != '%' {
                        return None;
                    }
                    arg.push('%');
                } else if RESERVED.contains(&c) {
                    // Reserved characters must be quoted.
                    return None;
                } else {
                    arg.push(c);
                }
            }
        }
        args.push(arg);
    }
    Some(args)
}

/// The entry's text for `exec` (an absolute UTF-8 path without control characters).
pub fn desktop_entry(exec: &Path) -> Result<String, AutostartError> {
    if !exec.is_absolute() {
        return Err(AutostartError::new(
            AutostartErrorCode::ExecNotAbsolute,
            format!(
                "{} is not an absolute path: give the installed background host's full path",
                exec.display()
            ),
        ));
    }
    let exec = exec.to_str().ok_or_else(|| {
        AutostartError::new(
            AutostartErrorCode::ExecNotUtf8,
            format!(
                "{} is not UTF-8, which a login entry cannot hold: install Gatehouse under a UTF-8 path",
                exec.display()
            ),
        )
    })?;
    if exec.chars().any(char::is_control) {
        return Err(AutostartError::new(
            AutostartErrorCode::ExecHasControlChars,
            format!(
                "{exec:?} holds control characters, which a login entry cannot hold: install Gatehouse under a plain path"
            ),
        ));
    }
    Ok(format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Name=Gatehouse\n\
         Comment=Starts Gatehouse in the background at login so your AI clients can reach it. Turn it off in Gatehouse's Settings.\n\
         Exec={}\n\
         Icon=gatehouse\n\
         Terminal=false\n\
         NoDisplay=true\n\
         X-GNOME-Autostart-enabled=true\n\
         {MARKER}\n",
        quote_exec_arg(exec)
    ))
}

/// Makes Gatehouse start `exec` at login. Refuses to replace a foreign entry unless
/// `overwrite` is [`Overwrite::EvenForeign`]. Returns the new state (`On`).
pub fn enable(
    config_dir: &Path,
    exec: &Path,
    overwrite: Overwrite,
) -> Result<AutostartState, AutostartError> {
    supported()?;
    let text = desktop_entry(exec)?;
    if let AutostartState::Foreign { why } = status(config_dir)
        && overwrite == Overwrite::OursOnly
    {
        return Err(AutostartError::new(
            AutostartErrorCode::ForeignFile,
            format!(
                "{} was not written by Gatehouse ({}): Gatehouse leaves it alone; remove it yourself or confirm replacing it",
                entry_path(config_dir).display(),
                why.as_str()
            ),
        ));
    }
    let dir = config_dir.join("autostart");
    fs::create_dir_all(&dir).map_err(|e| write_failed(&dir, &e))?;
    write_atomically(&dir, text.as_bytes())?;
    Ok(status(config_dir))
}

/// Stops Gatehouse starting at login by removing our entry. Already off → `Off`; a foreign
/// entry is never deleted (`foreign_file`).
pub fn disable(config_dir: &Path) -> Result<AutostartState, AutostartError> {
    supported()?;
    let path = entry_path(config_dir);
    match status(config_dir) {
        AutostartState::Off if !path.exists() => Ok(AutostartState::Off),
        AutostartState::Foreign { why } => Err(AutostartError::new(
            AutostartErrorCode::ForeignFile,
            format!(
                "{} was not written by Gatehouse ({}): Gatehouse does not delete it; remove it yourself if it should not run at login",
                path.display(),
                why.as_str()
            ),
        )),
        // Ours, on or switched off by the desktop.
        _ => {
            fs::remove_file(&path).map_err(|e| {
                AutostartError::new(
                    AutostartErrorCode::RemoveFailed,
                    format!(
                        "could not remove {}: {e}; check that its folder is writable",
                        path.display()
                    ),
                )
            })?;
            if let Some(dir) = path.parent() {
                sync_dir(dir);
            }
            Ok(status(config_dir))
        }
    }
}

fn supported() -> Result<(), AutostartError> {
    if cfg!(any(target_os = "macos", target_os = "windows")) {
        return Err(AutostartError::new(
            AutostartErrorCode::UnsupportedPlatform,
            "start at login is implemented for XDG desktops (Linux, BSD) only: on macOS add a LaunchAgent or a Login Item, on Windows a Run key or a Startup shortcut",
        ));
    }
    Ok(())
}

fn write_failed(path: &Path, e: &std::io::Error) -> AutostartError {
    AutostartError::new(
        AutostartErrorCode::WriteFailed,
        format!(
            "could not write the login entry in {}: {e}; check that the folder exists and is writable",
            path.display()
        ),
    )
}

/// Writes `bytes` as `dir/gatehouse.desktop` through a temporary file beside it: either the old
/// entry or the whole new one exists at every moment, and nothing temporary is left on failure.
fn write_atomically(dir: &Path, bytes: &[u8]) -> Result<(), AutostartError> {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(format!(".{ENTRY_FILE}.{}-{n}.tmp", std::process::id()));
    // A leftover from a crashed run with the same pid: never write through what is there.
    let _ = fs::remove_file(&temp);
    let result = (|| {
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o644);
        }
        let mut file = options.open(&temp)?;
        // The umask may have narrowed the mode; desktop entries are world-readable.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(fs::Permissions::from_mode(0o644))?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, dir.join(ENTRY_FILE))
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&temp);
        return Err(write_failed(dir, &e));
    }
    sync_dir(dir);
    Ok(())
}

/// Makes a rename or removal in `dir` durable. Best effort: the entry itself is already whole.
fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_quoting_round_trips() {
        for path in [
            "/usr/lib/gatehouse/gatehouse-background",
            "/opt/Gate House/bin/gatehouse-background",
            "/home/a\"b/$HOME/`x`/back\\slash/100%/gatehouse",
            "/opt/semi;colon/&/|/<>/~/*?#()/'q'",
            "/ünïcode/路径/gatehouse",
        ] {
            let quoted = quote_exec_arg(path);
            assert_eq!(
                parse_exec(&quoted),
                Some(vec![path.to_string()]),
                "{quoted}"
            );
        }
        assert_eq!(quote_exec_arg("/opt/Gate House/g"), "\"/opt/Gate House/g\"");
        // A literal backslash inside quotes is four backslashes in the file.
        assert_eq!(quote_exec_arg("/a\\b"), "\"/a\\\\\\\\b\"");
        assert_eq!(quote_exec_arg("/a%b"), "/a%%b");
    }

    #[test]
    fn malformed_exec_does_not_parse() {
        assert_eq!(parse_exec("/usr/bin/app %U"), None);
        assert_eq!(parse_exec("\"/unterminated"), None);
        assert_eq!(parse_exec("/has;semicolon"), None);
        assert_eq!(parse_exec("\"/a\"b"), None);
        assert_eq!(
            parse_exec("/usr/bin/app --flag"),
            Some(vec!["/usr/bin/app".into(), "--flag".into()])
        );
    }

    #[test]
    fn classify_tells_ours_from_foreign() {
        let ours = desktop_entry(Path::new("/opt/g h/gatehouse-background")).expect("entry");
        assert_eq!(
            classify(&ours),
            AutostartState::On {
                exec: PathBuf::from("/opt/g h/gatehouse-background")
            }
        );
        let switched_off = ours.replace(
            "X-GNOME-Autostart-enabled=true",
            "X-GNOME-Autostart-enabled=false",
        );
        assert_eq!(classify(&switched_off), AutostartState::Off);
        let hidden = format!("{ours}Hidden=true\n");
        assert_eq!(classify(&hidden), AutostartState::Off);
        let no_marker = ours.replace(MARKER, "");
        assert_eq!(
            classify(&no_marker),
            AutostartState::Foreign {
                why: ForeignReason::NotWrittenByGatehouse
            }
        );
        let extra_args = ours.replace("gatehouse-background\"", "gatehouse-background\" --evil");
        assert_eq!(
            classify(&extra_args),
            AutostartState::Foreign {
                why: ForeignReason::UnexpectedExec
            }
        );
        let relative = ours.replace("\"/opt/g h/gatehouse-background\"", "gatehouse-background");
        assert_eq!(
            classify(&relative),
            AutostartState::Foreign {
                why: ForeignReason::UnexpectedExec
            }
        );
        // The marker outside the main group does not count.
        let other_group =
            "[Desktop Entry]\nExec=/usr/bin/other\n[Desktop Action x]\nX-Gatehouse-Autostart=1\n";
        assert_eq!(
            classify(other_group),
            AutostartState::Foreign {
                why: ForeignReason::NotWrittenByGatehouse
            }
        );
    }

    #[test]
    fn bad_exec_paths_are_refused() {
        let code = |p: &str| {
            desktop_entry(Path::new(p))
                .map(|_| ())
                .map_err(|e| e.code())
        };
        assert_eq!(
            code("relative/gatehouse"),
            Err(AutostartErrorCode::ExecNotAbsolute)
        );
        assert_eq!(
            code("/a\nExec=/bin/evil"),
            Err(AutostartErrorCode::ExecHasControlChars)
        );
        assert_eq!(code("/usr/bin/gatehouse-background"), Ok(()));
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let not_utf8 = std::ffi::OsStr::from_bytes(b"/opt/\xff/g");
            assert_eq!(
                desktop_entry(Path::new(not_utf8))
                    .map(|_| ())
                    .map_err(|e| e.code()),
                Err(AutostartErrorCode::ExecNotUtf8)
            );
        }
    }
}
