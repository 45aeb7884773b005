//! A server's confinement as the CLI shows it (one line under each stdio server in `servers
//! list`, and in the admission block), and `servers confine`: the person's own settings for a
//! server they run unattested. Everything shown comes from the host's [`ConfinementView`],
//! its states matched as the closed enums they are.

use gatehouse_confine::{
    ConfinementMode, GrantError, Grants, HostGrant, MAX_MEMORY_MIB, MAX_PROCESSES, Network,
    PathGrant, confinement_to_json,
};
use gatehouse_host::{ConfinementState, ConfinementView, GrantSource};
use serde_json::{Value, json};

use crate::cli::ConfineArgs;
use crate::commands::{Context, open_host, terminal_consent};
use crate::confinement_text::{processes, reach, source};
use crate::failure::Failure;
use crate::output::{self, safe_line};

/// Whether the person's settings in `servers.json` decide this server's confinement: not for
/// an admitted server, whose admission does.
fn settings_apply(view: &ConfinementView) -> bool {
    match view.grants_from {
        GrantSource::Admission => false,
        GrantSource::Person | GrantSource::Default => true,
    }
}

/// What `servers confine` was asked to do.
#[derive(Debug, Clone, PartialEq)]
enum Change {
    /// No option: show the confinement as it stands.
    Show,
    /// Replace the person's settings with this (`None`: remove them, `--reset`).
    Set(Option<Value>),
}

/// The settings the options describe, each value checked here so a refusal names its option.
fn change_of(args: &ConfineArgs) -> Result<Change, Failure> {
    if args.reset {
        return Ok(Change::Set(None));
    }
    if args.unconfined {
        return Ok(Change::Set(Some(confinement_to_json(
            Some(ConfinementMode::Off),
            &Grants::default(),
        ))));
    }
    let nothing = args.read.is_empty()
        && args.write.is_empty()
        && args.hosts.is_empty()
        && !args.any_host
        && args.processes.is_none()
        && args.memory_mib.is_none();
    if nothing {
        return Ok(Change::Show);
    }
    let paths = |values: &[String], flag: &str| {
        values
            .iter()
            .map(|raw| PathGrant::parse(raw).map_err(|e| refused(flag, raw, &e)))
            .collect::<Result<Vec<_>, _>>()
    };
    let mut grants = Grants {
        read: paths(&args.read, "--read")?,
        write: paths(&args.write, "--write")?,
        ..Grants::default()
    };
    if args.any_host {
        grants.network = Network::Any;
    } else if !args.hosts.is_empty() {
        let hosts = args
            .hosts
            .iter()
            .map(|raw| HostGrant::parse(raw).map_err(|e| refused("--host", raw, &e)))
            .collect::<Result<Vec<_>, _>>()?;
        grants.network = Network::Hosts(hosts);
    }
    if let Some(processes) = args.processes {
        if processes > MAX_PROCESSES {
            return Err(Failure::usage(format!(
                "--processes {processes}: at most {MAX_PROCESSES}"
            )));
        }
        grants.processes = processes;
    }
    if let Some(memory) = args.memory_mib {
        if memory == 0 || memory > MAX_MEMORY_MIB {
            return Err(Failure::usage(format!(
                "--memory-mib {memory}: between 1 and {MAX_MEMORY_MIB}"
            )));
        }
        grants.memory_mib = memory;
    }
    Ok(Change::Set(Some(confinement_to_json(None, &grants))))
}

/// A refused value, named by its option: the value as data (quoted, control characters
/// escaped) and the parser's words, which say what to write instead.
fn refused(flag: &str, raw: &str, error: &GrantError) -> Failure {
    Failure::usage(format!(
        "{flag} {:?}: {}",
        raw.chars().take(200).collect::<String>(),
        safe_line(&error.to_string())
    ))
}

/// `servers confine NAME [options]`.
pub async fn run(context: &Context, args: ConfineArgs) -> Result<u8, Failure> {
    let change = change_of(&args)?;
    let host = open_host(context, terminal_consent())?;
    let result = match &change {
        Change::Show => host.confinement_of(&args.name).await,
        Change::Set(settings) => host.set_confinement(&args.name, settings.clone()).await,
    };
    host.shutdown().await;
    let view = result?;
    let applies = settings_apply(&view);
    if context.json {
        let mut document = json!({
            "server": args.name,
            "confinement": view,
            "your_settings_apply": applies,
        });
        if let Change::Set(settings) = &change {
            document["settings"] = settings.clone().unwrap_or(Value::Null);
        }
        output::print_json(&document);
        return Ok(0);
    }
    if let Change::Set(settings) = &change {
        println!(
            "{} {:?}'s confinement settings in {}",
            if settings.is_some() {
                "saved"
            } else {
                "removed"
            },
            args.name,
            context.config_path.display()
        );
    }
    print_view(&args.name, &view);
    if !applies {
        println!(
            "{:?} is admitted: its confinement comes from its admission, and your settings do \
             not apply to it while it is admitted (ask your admin to change its grants).",
            args.name
        );
    }
    Ok(0)
}

/// The whole view, a line per grant: what the server can read, write and reach.
fn print_view(name: &str, view: &ConfinementView) {
    let head = match view.state {
        ConfinementState::Confined => "confined",
        ConfinementState::Unconfined => "unconfined",
        ConfinementState::NotApplicable => "confinement does not apply",
    };
    println!("{}: {head}", safe_line(name));
    println!(
        "  mode        {} (set by {})",
        view.mode.as_str(),
        if view.mode_set_by.is_empty() {
            "default".into()
        } else {
            safe_line(&view.mode_set_by.join(", "))
        }
    );
    match view.state {
        ConfinementState::Confined => {
            let list = |paths: &[String], none: &str| {
                if paths.is_empty() {
                    none.to_string()
                } else {
                    safe_line(&paths.join(", "))
                }
            };
            println!("  reads       {}", list(&view.read, "none of your files"));
            println!("  writes      {}", list(&view.write, "none of your files"));
            println!("  network     {}", safe_line(&reach(&view.network)));
            println!("  processes   {}", processes(view.processes));
            println!("  memory      {} MiB", view.memory_mib);
            if !view.code.is_empty() {
                println!(
                    "  its code    {} (read-only)",
                    safe_line(&view.code.join(", "))
                );
            }
            println!("  grants      {}", source(view.grants_from));
        }
        ConfinementState::Unconfined => {
            println!("  it can read, write and reach whatever you can");
        }
        ConfinementState::NotApplicable => {}
    }
    if !view.detail.is_empty() {
        println!("  detail      {}", safe_line(&view.detail));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confinement_text::{from_verdict, line};
    use gatehouse_host::NetworkView;

    fn args(name: &str) -> ConfineArgs {
        ConfineArgs {
            name: name.into(),
            read: Vec::new(),
            write: Vec::new(),
            hosts: Vec::new(),
            any_host: false,
            processes: None,
            memory_mib: None,
            unconfined: false,
            reset: false,
        }
    }

    fn message(result: Result<Change, Failure>) -> String {
        match result {
            Err(failure) => failure.message,
            Ok(change) => panic!("accepted: {change:?}"),
        }
    }

    #[test]
    fn no_option_shows_and_reset_removes() {
        assert_eq!(change_of(&args("a")).ok(), Some(Change::Show));
        let mut reset = args("a");
        reset.reset = true;
        assert_eq!(change_of(&reset).ok(), Some(Change::Set(None)));
        let mut off = args("a");
        off.unconfined = true;
        assert_eq!(
            change_of(&off).ok(),
            Some(Change::Set(Some(json!({"mode": "off"}))))
        );
    }

    #[test]
    fn options_become_the_shared_json_shape() {
        let mut a = args("a");
        a.read = vec!["~/proj".into()];
        a.write = vec!["/srv/out/".into()];
        a.hosts = vec!["API.example.com:443".into()];
        a.processes = Some(2);
        a.memory_mib = Some(512);
        let Ok(Change::Set(Some(value))) = change_of(&a) else {
            panic!("not a setting")
        };
        assert_eq!(value["read"], json!(["~/proj"]));
        assert_eq!(value["write"], json!(["/srv/out"]));
        assert_eq!(value["hosts"], json!(["api.example.com:443"]));
        assert_eq!(value["processes"], 2);
        assert_eq!(value["memoryMiB"], 512);
        assert!(value.get("mode").is_none(), "{value}");
        let mut any = args("a");
        any.any_host = true;
        let Ok(Change::Set(Some(value))) = change_of(&any) else {
            panic!("not a setting")
        };
        assert_eq!(value["hosts"], "any");
    }

    #[test]
    fn each_bad_value_is_refused_naming_its_option() {
        for (host, flag) in [
            ("*.example.com:443", "--host"),
            ("example.com", "--host"),
            ("https://example.com:443", "--host"),
            ("user@example.com:443", "--host"),
            ("example.com:0", "--host"),
        ] {
            let mut a = args("a");
            a.hosts = vec![host.into()];
            let message = message(change_of(&a));
            assert!(message.starts_with(flag), "{host}: {message}");
        }
        for path in ["relative/dir", "~other/x", "/", "/a/../b", "/a\u{1b}[2J"] {
            let mut a = args("a");
            a.read = vec![path.into()];
            let message = message(change_of(&a));
            assert!(message.starts_with("--read"), "{path}: {message}");
            assert!(!message.contains('\u{1b}'), "escaped: {message:?}");
            let mut a = args("a");
            a.write = vec![path.into()];
            assert!(message_of_write(&a).starts_with("--write"), "{path}");
        }
        let mut a = args("a");
        a.processes = Some(MAX_PROCESSES + 1);
        assert!(message(change_of(&a)).starts_with("--processes"));
        let mut a = args("a");
        a.memory_mib = Some(0);
        assert!(message(change_of(&a)).starts_with("--memory-mib"));
        a.memory_mib = Some(MAX_MEMORY_MIB + 1);
        assert!(message(change_of(&a)).starts_with("--memory-mib"));
        a.memory_mib = Some(MAX_MEMORY_MIB);
        assert!(change_of(&a).is_ok());
    }

    fn view(state: ConfinementState, grants_from: GrantSource) -> ConfinementView {
        ConfinementView {
            state,
            mode: ConfinementMode::Preferred,
            mode_set_by: vec!["default".into()],
            reason: None,
            detail: "why it is so".into(),
            read: Vec::new(),
            write: Vec::new(),
            code: vec!["/opt/server/bin/server".into()],
            network: NetworkView::None,
            processes: 0,
            memory_mib: 4096,
            grants_from,
        }
    }

    #[test]
    fn the_line_says_what_a_confined_server_can_read_write_and_reach() {
        let mut granted = view(ConfinementState::Confined, GrantSource::Person);
        granted.read = vec!["~/proj".into(), "/srv/data".into()];
        granted.write = vec!["~/out".into()];
        granted.network = NetworkView::Hosts {
            hosts: vec!["api.example.com:443".into(), "[::1]:8080".into()],
        };
        granted.processes = 3;
        assert_eq!(
            line(&granted).unwrap(),
            "confined: reads ~/proj, /srv/data (read-only), writes ~/out; network: \
             api.example.com:443, [::1]:8080; up to 3 processes; memory 4096 MiB; granted by \
             your settings"
        );
        let nothing = view(ConfinementState::Confined, GrantSource::Default);
        assert_eq!(
            line(&nothing).unwrap(),
            "confined: none of your files; no network; no processes; memory 4096 MiB; the \
             default for an unattested server"
        );
        let mut any = view(ConfinementState::Confined, GrantSource::Admission);
        any.network = NetworkView::Any;
        any.processes = 1;
        assert!(
            line(&any).unwrap().ends_with(
                "network: any host; up to 1 process; memory 4096 MiB; granted by its admission"
            ),
            "{any:?}"
        );
        assert!(!settings_apply(&any));
        assert!(settings_apply(&nothing) && settings_apply(&granted));
    }

    #[test]
    fn unconfined_says_why_and_a_remote_server_has_no_line() {
        let mut unconfined = view(ConfinementState::Unconfined, GrantSource::Default);
        unconfined.detail = "bubblewrap is not installed".into();
        // Grants do not make an unconfined server look confined.
        unconfined.read = vec!["~/proj".into()];
        assert_eq!(
            line(&unconfined).unwrap(),
            "unconfined: bubblewrap is not installed"
        );
        assert_eq!(
            line(&view(ConfinementState::NotApplicable, GrantSource::Default)),
            None
        );
    }

    #[test]
    fn a_verdict_without_a_readable_view_has_none() {
        let shown = view(ConfinementState::Confined, GrantSource::Default);
        let verdict = json!({"status": "admitted", "confinement": shown});
        assert_eq!(from_verdict(&verdict), Some(shown));
        for verdict in [
            json!({"status": "admitted"}),
            json!({"confinement": null}),
            json!({"confinement": {"state": "sort_of"}}),
            json!({"confinement": "confined"}),
        ] {
            assert_eq!(from_verdict(&verdict), None, "{verdict}");
        }
    }

    fn message_of_write(a: &ConfineArgs) -> String {
        message(change_of(a))
    }
}
