//! The user's own arguments against the binding's closed rules, checked against the real file
//! system at launch.
//!
//! Directories are resolved (symlinks followed) and the resolved path is what the server gets,
//! so a link that points outside the home is judged by where it leads, and swapping the link
//! after the check does not change the directory passed. `~` is refused rather than expanded:
//! no shell runs, so the server would see a literal `~`.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use gatehouse_attest::package::UserArgRule;

/// Why a user argument is refused. Stable snake_case codes ([`UserArgReason::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UserArgReason {
    /// Resolves outside the home directory, or to the home directory itself.
    OutsideHome,
    NotADirectory,
    Missing,
    /// Not one of a `one_of` rule's values.
    NotAllowedValue,
    TooFew,
    TooMany,
    /// Starts with `~`, which nothing expands.
    Tilde,
    /// A relative path: it would be resolved against whatever directory the host runs in.
    NotAbsolute,
    /// Resolves to a path that is not UTF-8, which cannot be passed on exactly.
    NotUtf8,
}

impl UserArgReason {
    pub fn code(self) -> &'static str {
        match self {
            UserArgReason::OutsideHome => "outside_home",
            UserArgReason::NotADirectory => "not_a_directory",
            UserArgReason::Missing => "missing",
            UserArgReason::NotAllowedValue => "not_allowed_value",
            UserArgReason::TooFew => "too_few",
            UserArgReason::TooMany => "too_many",
            UserArgReason::Tilde => "tilde",
            UserArgReason::NotAbsolute => "not_absolute",
            UserArgReason::NotUtf8 => "not_utf8",
        }
    }
}

/// A refused user argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserArgRefusal {
    /// Among the user's arguments (0-based); for `too_few`, where the missing one would be.
    pub index: usize,
    /// As written; empty for `too_few`.
    pub arg: String,
    pub reason: UserArgReason,
    /// The rule it was checked against (`existing_directory_under_home`, `one_of`), if any.
    pub rule: Option<&'static str>,
    /// For people: what was wrong and what to do.
    pub message: String,
}

impl std::fmt::Display for UserArgRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UserArgRefusal {}

fn range(rule: &UserArgRule) -> String {
    match rule.count() {
        (min, max) if min == max => format!("exactly {min}"),
        (min, max) => format!("{min} to {max}"),
    }
}

/// The arguments to pass (resolved directories, values as written), or the first refusal.
pub fn check_user_args(
    rules: &[UserArgRule],
    args: &[String],
    home: &Path,
) -> Result<Vec<String>, UserArgRefusal> {
    let mut out = Vec::with_capacity(args.len());
    let mut home_resolved: Option<PathBuf> = None;
    let mut at = 0;
    for (r, rule) in rules.iter().enumerate() {
        let (min, max) = rule.count();
        let (min, max) = (min as usize, max as usize);
        // Take as many as this rule allows while leaving the later rules their minimum, but
        // never fewer than this rule's own minimum when there are that many (so a shortfall is
        // blamed on the rule that comes up short).
        let remaining = args.len() - at;
        let later: usize = rules[r + 1..].iter().map(|l| l.count().0 as usize).sum();
        let take = remaining
            .saturating_sub(later)
            .min(max)
            .max(min.min(remaining));
        if take < min {
            return Err(UserArgRefusal {
                index: args.len(),
                arg: String::new(),
                reason: UserArgReason::TooFew,
                rule: Some(rule.rule()),
                message: format!(
                    "the binding needs {} argument(s) by rule {} (rule {}), but the config gives {}; add them after the fixed arguments",
                    range(rule),
                    rule.rule(),
                    r + 1,
                    remaining
                ),
            });
        }
        for index in at..at + take {
            let arg = &args[index];
            let passed = match rule {
                UserArgRule::ExistingDirectoryUnderHome { .. } => {
                    if home_resolved.is_none() {
                        home_resolved = Some(home.canonicalize().map_err(|e| UserArgRefusal {
                            index,
                            arg: arg.clone(),
                            reason: UserArgReason::OutsideHome,
                            rule: Some(rule.rule()),
                            message: format!(
                                "argument {} {arg:?}: the home directory {} cannot be resolved ({e}), so no directory can be checked against it",
                                index + 1,
                                home.display()
                            ),
                        })?);
                    }
                    let home = home_resolved.as_deref().unwrap_or(home);
                    check_directory(arg, home).map_err(|(reason, why)| UserArgRefusal {
                        index,
                        arg: arg.clone(),
                        reason,
                        rule: Some(rule.rule()),
                        message: format!(
                            "argument {} {arg:?} (rule existing_directory_under_home): {why}",
                            index + 1
                        ),
                    })?
                }
                UserArgRule::OneOf { values, .. } => {
                    if !values.contains(arg) {
                        return Err(UserArgRefusal {
                            index,
                            arg: arg.clone(),
                            reason: UserArgReason::NotAllowedValue,
                            rule: Some(rule.rule()),
                            message: format!(
                                "argument {} {arg:?} (rule one_of) is not one of the values the binding allows: {}; use one of them exactly",
                                index + 1,
                                values.join(", ")
                            ),
                        });
                    }
                    arg.clone()
                }
            };
            out.push(passed);
        }
        at += take;
    }
    if at < args.len() {
        let allowed: usize = rules.iter().map(|r| r.count().1 as usize).sum();
        return Err(UserArgRefusal {
            index: at,
            arg: args[at].clone(),
            reason: UserArgReason::TooMany,
            rule: rules.last().map(UserArgRule::rule),
            message: format!(
                "argument {} {:?}: the binding allows at most {allowed} argument(s) of the user's own, and the config gives {}; remove the extra ones or ask the admin to allow more",
                at + 1,
                args[at],
                args.len()
            ),
        });
    }
    Ok(out)
}

/// The resolved directory, or why not. `home` is already resolved.
fn check_directory(arg: &str, home: &Path) -> Result<String, (UserArgReason, String)> {
    if arg.starts_with('~') {
        return Err((
            UserArgReason::Tilde,
            "no shell runs the server, so ~ is not expanded; write the absolute path (under your home)".to_string(),
        ));
    }
    let path = Path::new(arg);
    if !path.is_absolute() {
        return Err((
            UserArgReason::NotAbsolute,
            "is not an absolute path; write the full path of a directory under your home"
                .to_string(),
        ));
    }
    let resolved = match path.canonicalize() {
        Ok(p) => p,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err((
                UserArgReason::Missing,
                "does not exist; create the directory or correct the path".to_string(),
            ));
        }
        Err(e) if e.kind() == ErrorKind::NotADirectory => {
            return Err((
                UserArgReason::NotADirectory,
                "runs through a file, not a directory; name a directory".to_string(),
            ));
        }
        Err(e) => {
            return Err((
                UserArgReason::Missing,
                format!("cannot be resolved ({e}); name a directory you can open"),
            ));
        }
    };
    // Path::starts_with compares whole components, so /home/al is not under /home/alice.
    if resolved == home || !resolved.starts_with(home) {
        let where_ = if resolved == home {
            "is the home directory itself".to_string()
        } else {
            format!("resolves to {}, outside", resolved.display())
        };
        return Err((
            UserArgReason::OutsideHome,
            format!(
                "{where_} the home directory {}; name a directory under it (links are judged by where they lead)",
                home.display()
            ),
        ));
    }
    if !resolved.is_dir() {
        return Err((
            UserArgReason::NotADirectory,
            "is a file, not a directory; name a directory".to_string(),
        ));
    }
    resolved.into_os_string().into_string().map_err(|_| {
        (
            UserArgReason::NotUtf8,
            "resolves to a path that is not UTF-8; name a directory whose path is UTF-8"
                .to_string(),
        )
    })
}

// The fixtures use symlinks, which is how a directory escapes on the platforms that run this.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use gatehouse_attest::package::Access;

    fn dirs(min: u32, max: u32) -> UserArgRule {
        UserArgRule::ExistingDirectoryUnderHome {
            access: Access::ReadWrite,
            min,
            max,
        }
    }

    fn one_of(values: &[&str], min: u32, max: u32) -> UserArgRule {
        UserArgRule::OneOf {
            values: values.iter().map(|s| s.to_string()).collect(),
            min,
            max,
        }
    }

    struct Fixture {
        _root: tempfile::TempDir,
        home: PathBuf,
        outside: PathBuf,
    }

    /// `<root>/home/docs`, `<root>/home/docs/sub`, `<root>/home/notes.txt`, `<root>/home2`,
    /// `<root>/outside`; `home/link-out` → outside, `home/link-in` → docs.
    fn fixture() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let home = base.join("home");
        std::fs::create_dir_all(home.join("docs/sub")).unwrap();
        std::fs::write(home.join("notes.txt"), b"x").unwrap();
        std::fs::create_dir_all(base.join("home2")).unwrap();
        let outside = base.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, home.join("link-out")).unwrap();
        std::os::unix::fs::symlink(home.join("docs"), home.join("link-in")).unwrap();
        Fixture {
            _root: root,
            home,
            outside,
        }
    }

    fn s(p: &Path) -> String {
        p.to_str().unwrap().to_string()
    }

    fn refused(rules: &[UserArgRule], args: &[String], home: &Path) -> UserArgRefusal {
        check_user_args(rules, args, home).unwrap_err()
    }

    #[test]
    fn directories_under_home_pass_resolved() {
        let f = fixture();
        let docs = f.home.join("docs");
        let args = vec![
            s(&docs),
            s(&f.home.join("docs/sub")),
            s(&f.home.join("link-in")),
            format!("{}/docs/sub/..", s(&f.home)),
            format!("{}/", s(&docs)),
        ];
        let out = check_user_args(&[dirs(1, 8)], &args, &f.home).unwrap();
        assert_eq!(
            out,
            [s(&docs), s(&docs.join("sub")), s(&docs), s(&docs), s(&docs)]
        );
        // The home given unresolved (through a link) is resolved too.
        let home_link = f.home.parent().unwrap().join("home-link");
        std::os::unix::fs::symlink(&f.home, &home_link).unwrap();
        assert_eq!(
            check_user_args(&[dirs(1, 1)], &[s(&docs)], &home_link).unwrap(),
            [s(&docs)]
        );
    }

    #[test]
    fn directories_outside_home_files_and_missing_paths_are_refused() {
        let f = fixture();
        let rules = [dirs(1, 8)];
        let cases: Vec<(String, UserArgReason)> = vec![
            (s(&f.outside), UserArgReason::OutsideHome),
            (s(&f.home.join("link-out")), UserArgReason::OutsideHome),
            (
                format!("{}/docs/../../outside", s(&f.home)),
                UserArgReason::OutsideHome,
            ),
            (format!("{}/..", s(&f.home)), UserArgReason::OutsideHome),
            (s(&f.home), UserArgReason::OutsideHome),
            (
                format!("{}/docs/..", s(&f.home)),
                UserArgReason::OutsideHome,
            ),
            (format!("{}/.", s(&f.home)), UserArgReason::OutsideHome),
            // A sibling whose name starts with the home's is not under it.
            (format!("{}2", s(&f.home)), UserArgReason::OutsideHome),
            ("/".to_string(), UserArgReason::OutsideHome),
            (s(&f.home.join("notes.txt")), UserArgReason::NotADirectory),
            (s(&f.home.join("notes.txt/x")), UserArgReason::NotADirectory),
            (s(&f.home.join("nope")), UserArgReason::Missing),
            ("~/docs".to_string(), UserArgReason::Tilde),
            ("~".to_string(), UserArgReason::Tilde),
            ("docs".to_string(), UserArgReason::NotAbsolute),
            ("../outside".to_string(), UserArgReason::NotAbsolute),
            ("--allow-all".to_string(), UserArgReason::NotAbsolute),
            (String::new(), UserArgReason::NotAbsolute),
        ];
        for (arg, reason) in cases {
            let ok = s(&f.home.join("docs"));
            let r = refused(&rules, &[ok, arg.clone()], &f.home);
            assert_eq!(
                (r.index, &r.arg, r.reason),
                (1, &arg, reason),
                "{arg}: {}",
                r.message
            );
            assert_eq!(r.rule, Some("existing_directory_under_home"));
            assert!(
                r.message.contains("existing_directory_under_home"),
                "{}",
                r.message
            );
        }
        let r = refused(&rules, &["~/docs".into()], &f.home);
        assert_eq!(r.reason.code(), "tilde");
        assert!(
            r.message.contains("write the absolute path"),
            "{}",
            r.message
        );
        let r = refused(&rules, &[s(&f.home.join("link-out"))], &f.home);
        assert!(r.message.contains(&s(&f.outside)), "{}", r.message);
        // A home that does not exist admits nothing.
        let r = refused(&rules, &[s(&f.home.join("docs"))], &f.home.join("absent"));
        assert_eq!(r.reason, UserArgReason::OutsideHome);
    }

    #[test]
    fn counts_are_checked_in_rule_order() {
        let f = fixture();
        let docs = s(&f.home.join("docs"));
        let rules = [one_of(&["--verbose", "--quiet"], 1, 1), dirs(1, 2)];
        assert_eq!(
            check_user_args(&rules, &["--quiet".into(), docs.clone()], &f.home).unwrap(),
            ["--quiet", docs.as_str()]
        );
        let r = refused(&rules, &["--quiet".into()], &f.home);
        assert_eq!(
            (r.reason, r.index, r.arg.as_str()),
            (UserArgReason::TooFew, 1, "")
        );
        assert_eq!(r.reason.code(), "too_few");
        assert!(
            r.message.contains("1 to 2") && r.message.contains("existing_directory_under_home"),
            "{}",
            r.message
        );
        let r = refused(&rules, &[], &f.home);
        assert_eq!((r.reason, r.rule), (UserArgReason::TooFew, Some("one_of")));
        let three = vec!["--quiet".into(), docs.clone(), docs.clone(), docs.clone()];
        let r = refused(&rules, &three, &f.home);
        assert_eq!((r.reason, r.index), (UserArgReason::TooMany, 3));
        assert_eq!(r.reason.code(), "too_many");
        assert!(r.message.contains("at most 3"), "{}", r.message);
        // The order matters: a directory where the value belongs is not the value.
        let r = refused(&rules, &[docs.clone(), "--quiet".into()], &f.home);
        assert_eq!((r.reason, r.index), (UserArgReason::NotAllowedValue, 0));
        // No rules: no user arguments at all.
        assert_eq!(
            check_user_args(&[], &[], &f.home).unwrap(),
            Vec::<String>::new()
        );
        let r = refused(&[], &[docs], &f.home);
        assert_eq!((r.reason, r.rule), (UserArgReason::TooMany, None));
    }

    #[test]
    fn one_of_is_exact_equality() {
        let f = fixture();
        let rules = [one_of(&["--verbose", "--quiet"], 0, 2)];
        assert_eq!(
            check_user_args(&rules, &["--verbose".into(), "--quiet".into()], &f.home).unwrap(),
            ["--verbose", "--quiet"]
        );
        assert!(check_user_args(&rules, &[], &f.home).unwrap().is_empty());
        for bad in [
            "--Verbose",
            "--verbose ",
            "--verbose=1",
            "-v",
            "",
            "--verbose\0",
        ] {
            let r = refused(&rules, &[bad.into()], &f.home);
            assert_eq!(
                (r.reason, r.arg.as_str()),
                (UserArgReason::NotAllowedValue, bad)
            );
            assert_eq!(r.reason.code(), "not_allowed_value");
            assert!(r.message.contains("--verbose, --quiet"), "{}", r.message);
        }
    }
}
