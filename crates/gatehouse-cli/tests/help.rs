//! Each command's `--help` lists only the options that command accepts: the shared groups
//! (connection, era, timeouts, trust, audit log, policy, demo) appear only where they apply,
//! and every option may still be given before the command's name.

use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

// The parser itself, so the walk covers clap's whole command tree rather than a hand list.
#[allow(dead_code)]
#[path = "../src/cli.rs"]
mod cli;

/// Every command's path (its names from the top), the top level first.
fn paths() -> Vec<Vec<String>> {
    fn walk(command: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(path.clone());
        for sub in command.get_subcommands() {
            let mut next = path.clone();
            next.push(sub.get_name().to_string());
            walk(sub, next, out);
        }
    }
    let mut out = Vec::new();
    walk(&cli::command(), Vec::new(), &mut out);
    out
}

fn help(path: &[String]) -> String {
    let output = Command::cargo_bin("gatehouse")
        .unwrap()
        .args(path)
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success(), "{path:?} --help failed");
    String::from_utf8(output.stdout).unwrap()
}

/// The long options a help text lists (one per option line).
fn listed_options(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line
                .strip_prefix("-h, ")
                .or_else(|| line.strip_prefix("-V, "))
                .unwrap_or(line);
            let rest = line.strip_prefix("--")?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// The command at `path` in the parser's tree.
fn find<'a>(root: &'a clap::Command, path: &[String]) -> &'a clap::Command {
    path.iter().fold(root, |command, name| {
        command
            .find_subcommand(name)
            .unwrap_or_else(|| panic!("no subcommand {name} in {path:?}"))
    })
}

#[test]
fn every_commands_help_lists_only_options_it_accepts() {
    let root = cli::command();
    let paths = paths();
    assert!(
        paths.len() > 40,
        "the walk found only {} commands",
        paths.len()
    );
    for path in &paths {
        let text = help(path);
        let options = listed_options(&text);
        assert!(options.contains(&"help".to_string()), "{path:?}: {text}");
        let command = find(&root, path);
        for option in options {
            if option == "help" || option == "version" {
                continue;
            }
            assert!(
                command
                    .get_arguments()
                    .any(|arg| arg.get_long() == Some(option.as_str())),
                "{path:?} --help lists --{option}, which the command does not define"
            );
            // And the parser takes it at that place (a missing value or argument may still be
            // an error; an unknown argument may not).
            let mut args = vec!["gatehouse".to_string()];
            args.extend(path.iter().cloned());
            args.push(format!("--{option}"));
            if let Err(error) = cli::command().try_get_matches_from(&args) {
                assert_ne!(
                    error.kind(),
                    clap::error::ErrorKind::UnknownArgument,
                    "{args:?}: {error}"
                );
            }
        }
    }
}

const CONNECTION: &[&str] = &[
    "era",
    "timeout",
    "connect-timeout",
    "traffic-log",
    "log-dir",
    "prompt-timeout",
];
const HOST: &[&str] = &[
    "config",
    "trust-roots",
    "posture",
    "audit",
    "policy",
    "demo",
];

#[test]
fn bundle_keygen_offers_no_connection_or_host_options() {
    let options = listed_options(&help(&["bundle".into(), "keygen".into()]));
    for flag in CONNECTION.iter().chain(HOST) {
        assert!(
            !options.iter().any(|o| o == flag),
            "bundle keygen --help lists --{flag}: {options:?}"
        );
    }
    for flag in ["out", "id", "json"] {
        assert!(options.iter().any(|o| o == flag), "--{flag}: {options:?}");
    }
}

#[test]
fn call_offers_connection_and_host_options() {
    let options = listed_options(&help(&["call".into()]));
    for flag in CONNECTION
        .iter()
        .chain(HOST)
        .chain(&["stdio", "url", "json"])
    {
        assert!(
            options.iter().any(|o| o == flag),
            "call --help lacks --{flag}: {options:?}"
        );
    }
}

#[test]
fn shared_options_are_taken_before_and_after_the_command_after_winning() {
    let before = cli::parse_from(["gatehouse", "--demo", "--json", "servers", "list"]).unwrap();
    assert!(before.flags.admission.demo && before.flags.output.json);
    let after = cli::parse_from(["gatehouse", "servers", "list", "--demo", "--json"]).unwrap();
    assert!(after.flags.admission.demo && after.flags.output.json);
    let both = cli::parse_from([
        "gatehouse",
        "--era",
        "2025-11-25",
        "--timeout",
        "5",
        "call",
        "demo",
        "echo",
        "--era",
        "2026-07-28",
    ])
    .unwrap();
    assert_eq!(both.flags.connect.era, Some("2026-07-28".parse().unwrap()));
    assert_eq!(both.flags.connect.timeout, Some(5.0));
    // Nested commands take them after their own name too.
    let pin = cli::parse_from(["gatehouse", "tools", "pin", "demo", "--posture", "warn"]).unwrap();
    assert_eq!(pin.flags.admission.posture, Some("warn".parse().unwrap()));
}

#[test]
fn a_command_refuses_an_option_that_does_not_apply_to_it() {
    for args in [
        &[
            "gatehouse",
            "bundle",
            "keygen",
            "--out",
            "d",
            "--era",
            "auto",
        ][..],
        &["gatehouse", "policy", "show", "--timeout", "5"],
        &["gatehouse", "audit", "verify", "--demo"],
    ] {
        let error = cli::parse_from(args).unwrap_err();
        assert_eq!(
            error.kind(),
            clap::error::ErrorKind::UnknownArgument,
            "{args:?}"
        );
    }
}

#[test]
fn a_flag_after_the_command_wins_over_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output = Command::cargo_bin("gatehouse")
            .unwrap()
            .env("HOME", dir.path())
            .env_remove("XDG_CONFIG_HOME")
            .env("GATEHOUSE_TRUST_ROOTS", dir.path().join("trust-roots"))
            .env("GATEHOUSE_POSTURE", "warn")
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        document["posture"].as_str().unwrap().to_string()
    };
    assert_eq!(run(&["--json", "trust"]), "warn");
    assert_eq!(
        run(&["--json", "trust", "--posture", "deny-by-default"]),
        "deny-by-default"
    );
    assert_eq!(
        run(&["--posture", "deny-by-default", "trust", "--json"]),
        "deny-by-default"
    );
}
