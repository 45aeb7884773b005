//! The decision at admission: the effective mode (strictest of the policy, the bundles and
//! the entry; the person's own only for an unattested server), the grants (the admission's,
//! or the person's for an unattested server) and whether this machine can confine.

use std::path::{Path, PathBuf};

use gatehouse_confine::{ConfinementMode, Grants, HostGrant, Network, PathGrant};

use super::probe::{Checked, Unavailable};
use super::ConfinementSettings;
use super::view::{
    ConfinementState, ConfinementView, GrantSource, NetworkView, Sandboxing, UnconfinedReason,
};

/// What the decision starts from, gathered from the verdict and the configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inputs {
    /// Admitted through a bundle (its entry's grants apply; the person's do not).
    pub admitted: bool,
    /// The bundles' strictest bundle-level mode and the labels that set it.
    pub bundle_mode: Option<(ConfinementMode, Vec<String>)>,
    /// The admitting entry's own mode and grants, with its bundle's label.
    pub entry: Option<(Option<ConfinementMode>, Grants, String)>,
    /// The verified attestation's `netAllowedHosts` origins.
    pub net_allowed_hosts: Vec<String>,
    /// A package binding's directory arguments (resolved) and whether each is writable.
    pub directories: Vec<(String, bool)>,
    /// The person's `confinement` of this server in `servers.json`, as written.
    pub person: Option<serde_json::Value>,
    /// The server's own code, read-only (shown; bound at launch).
    pub code: Vec<PathBuf>,
}

/// The decision.
#[derive(Debug, Clone)]
pub(crate) struct Decided {
    pub view: ConfinementView,
    /// Present when the server runs confined.
    pub sandbox: Option<Sandboxing>,
    /// Present when the server must be refused: confinement is required and unavailable.
    pub refusal: Option<String>,
}

/// Decides a stdio server's confinement; `probe` says whether this machine can confine (it
/// is asked only when the mode is not `off`).
pub(crate) fn decide(
    settings: &ConfinementSettings,
    inputs: &Inputs,
    probe: impl FnOnce() -> Result<Checked, Unavailable>,
) -> Decided {
    let mut notes: Vec<String> = Vec::new();
    let person = match (&inputs.person, inputs.admitted) {
        (Some(_), true) => {
            notes.push("your own confinement for it in servers.json is ignored: it was admitted and runs with what its admission grants".into());
            None
        }
        (Some(value), false) => {
            match gatehouse_confine::parse_confinement(value, "confinement") {
                Ok(parsed) => Some(parsed),
                Err(error) => {
                    // Fail closed: the default confinement, and the person is told why.
                    notes.push(format!(
                        "your confinement for it in servers.json is not used ({error}); it runs with the default"
                    ));
                    None
                }
            }
        }
        (None, _) => None,
    };
    let (mode, set_by, person_off) = effective_mode(
        settings,
        inputs,
        person.as_ref().and_then(|(mode, _)| *mode),
    );
    let (grants, grants_from) = if inputs.admitted {
        (admitted_grants(inputs, &mut notes), GrantSource::Admission)
    } else {
        match person {
            Some((_, grants)) => {
                let mut all = Grants::default();
                all.widen(&grants);
                (all, GrantSource::Person)
            }
            None => (Grants::default(), GrantSource::Default),
        }
    };
    // A granted path that is not there is not bound (bubblewrap cannot bind nothing); say so
    // rather than show a grant that does nothing.
    for grant in grants.read.iter().chain(&grants.write) {
        if !grant.resolve(&settings.home).exists() {
            notes.push(format!(
                "{} is granted but does not exist, so it is not in the sandbox",
                shown(grant, &settings.home)
            ));
        }
    }
    let mut view = ConfinementView {
        state: ConfinementState::Unconfined,
        mode,
        mode_set_by: set_by.clone(),
        reason: None,
        detail: String::new(),
        read: grants
            .read
            .iter()
            .map(|g| shown(g, &settings.home))
            .collect(),
        write: grants
            .write
            .iter()
            .map(|g| shown(g, &settings.home))
            .collect(),
        code: inputs
            .code
            .iter()
            .map(|p| shown_path(p, &settings.home))
            .collect(),
        network: match &grants.network {
            Network::None => NetworkView::None,
            Network::Any => NetworkView::Any,
            Network::Hosts(hosts) => NetworkView::Hosts {
                hosts: hosts.iter().map(ToString::to_string).collect(),
            },
        },
        processes: grants.processes,
        memory_mib: grants.memory_mib,
        grants_from,
    };
    let with_notes = |sentence: String, notes: &[String]| {
        std::iter::once(sentence)
            .chain(notes.iter().cloned())
            .collect::<Vec<_>>()
            .join("; ")
    };
    if mode == ConfinementMode::Off {
        view.reason = Some(if person_off {
            UnconfinedReason::PersonTurnedOff
        } else {
            UnconfinedReason::ModeOff
        });
        let sentence = if person_off {
            "unconfined: you turned confinement off for this server in servers.json".to_string()
        } else {
            format!(
                "unconfined: confinement is off (set by {})",
                set_by.join(", ")
            )
        };
        view.detail = with_notes(sentence, &notes);
        return Decided {
            view,
            sandbox: None,
            refusal: None,
        };
    }
    match probe() {
        Ok(checked) => {
            view.state = ConfinementState::Confined;
            view.detail = with_notes(confined_sentence(&view), &notes);
            Decided {
                view,
                sandbox: Some(Sandboxing {
                    bwrap: checked.bwrap,
                    init: checked.init,
                    grants,
                    home: settings.home.clone(),
                    data: settings.data.clone(),
                    code: inputs.code.clone(),
                }),
                refusal: None,
            }
        }
        Err((reason, why)) => {
            view.reason = Some(reason);
            if mode == ConfinementMode::Required {
                let refusal = format!(
                    "confinement is required (set by {}), but this machine cannot confine servers: {why}",
                    set_by.join(", ")
                );
                view.detail = with_notes(refusal.clone(), &notes);
                Decided {
                    view,
                    sandbox: None,
                    refusal: Some(refusal),
                }
            } else {
                view.detail = with_notes(format!("unconfined: {why}"), &notes);
                Decided {
                    view,
                    sandbox: None,
                    refusal: None,
                }
            }
        }
    }
}

/// The effective mode, who set it, and whether it is the person's own `off`.
fn effective_mode(
    settings: &ConfinementSettings,
    inputs: &Inputs,
    person: Option<ConfinementMode>,
) -> (ConfinementMode, Vec<String>, bool) {
    let policy = if settings.policy_is_default {
        "default"
    } else {
        "policy"
    };
    let mut said: Vec<(ConfinementMode, String)> = vec![(settings.policy_mode, policy.to_string())];
    if let Some((mode, labels)) = &inputs.bundle_mode {
        said.extend(labels.iter().map(|l| (*mode, l.clone())));
    }
    if let Some((Some(mode), _, label)) = &inputs.entry {
        said.push((*mode, label.clone()));
    }
    let admins = said
        .iter()
        .map(|(m, _)| *m)
        .fold(ConfinementMode::Off, ConfinementMode::strictest);
    // The person loosens only what the admins left loosenable: never past `required`.
    match person {
        Some(ConfinementMode::Off) if !inputs.admitted && admins < ConfinementMode::Required => {
            return (ConfinementMode::Off, vec!["you".into()], true);
        }
        Some(mode) if !inputs.admitted && mode > admins => {
            return (mode, vec!["you".into()], false);
        }
        _ => {}
    }
    let mut set_by: Vec<String> = Vec::new();
    for (mode, label) in said {
        if mode == admins && !set_by.contains(&label) {
            set_by.push(label);
        }
    }
    (admins, set_by, false)
}

/// An admitted server's grants: its entry's, its attestation's hosts and its package
/// binding's directory arguments.
fn admitted_grants(inputs: &Inputs, notes: &mut Vec<String>) -> Grants {
    let mut grants = Grants::default();
    if let Some((_, entry, _)) = &inputs.entry {
        grants.widen(entry);
    }
    let mut hosts = Vec::new();
    for origin in &inputs.net_allowed_hosts {
        match HostGrant::from_origin(origin) {
            Ok(host) => hosts.push(host),
            Err(error) => notes.push(format!(
                "the attestation's netAllowedHosts entry {origin:?} grants nothing ({error})"
            )),
        }
    }
    if !hosts.is_empty() {
        grants.widen(&Grants {
            network: Network::Hosts(hosts),
            ..Grants::default()
        });
    }
    let (mut read, mut write) = (Vec::new(), Vec::new());
    for (dir, writable) in &inputs.directories {
        match PathGrant::parse(dir) {
            Ok(grant) if *writable => write.push(grant),
            Ok(grant) => read.push(grant),
            Err(error) => notes.push(format!(
                "the directory argument {dir:?} grants nothing ({error})"
            )),
        }
    }
    grants.widen(&Grants {
        read,
        write,
        ..Grants::default()
    });
    grants
}

/// A grant as shown: `~/…` stays, an absolute path under the home is shown under `~`.
fn shown(grant: &PathGrant, home: &Path) -> String {
    let text = grant.as_str();
    if text.starts_with('~') {
        return text.to_string();
    }
    shown_path(Path::new(text), home)
}

pub(crate) fn shown_path(path: &Path, home: &Path) -> String {
    match path.strip_prefix(home) {
        Ok(rest) if rest.as_os_str().is_empty() => "~".into(),
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => path.display().to_string(),
    }
}

fn confined_sentence(view: &ConfinementView) -> String {
    let list = |paths: &[String]| {
        if paths.is_empty() {
            "nothing".to_string()
        } else {
            paths.join(", ")
        }
    };
    let network = match &view.network {
        NetworkView::None => "no network".to_string(),
        NetworkView::Any => "any host".to_string(),
        NetworkView::Hosts { hosts } => format!("only {}", hosts.join(", ")),
    };
    format!(
        "confined: reads {} of yours, writes {}, reaches {network}; a private home and /tmp; {} processes",
        list(&view.read),
        list(&view.write),
        view.processes
    )
}

/// Which rule each of a package's user arguments fell under: the same division as
/// `gatehouse_package::user_args::check_user_args` (each rule takes as many as it may while
/// leaving the later rules their minimum).
pub(crate) fn rule_of_each(counts: &[(u32, u32)], args: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(args);
    let mut at = 0;
    for (r, (min, max)) in counts.iter().enumerate() {
        let (min, max) = (*min as usize, *max as usize);
        let remaining = args.saturating_sub(at);
        let later: usize = counts[r + 1..].iter().map(|(m, _)| *m as usize).sum();
        let take = remaining
            .saturating_sub(later)
            .min(max)
            .max(min.min(remaining));
        out.extend(std::iter::repeat_n(r, take));
        at += take;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(mode: ConfinementMode) -> ConfinementSettings {
        ConfinementSettings {
            policy_mode: mode,
            policy_is_default: false,
            tools: Default::default(),
            home: PathBuf::from("/home/u"),
            data: PathBuf::from("/var/data"),
        }
    }

    fn works() -> Result<Checked, Unavailable> {
        Ok(Checked {
            bwrap: PathBuf::from("/usr/bin/bwrap"),
            init: PathBuf::from("/usr/lib/gatehouse/init"),
        })
    }

    fn fails() -> Result<Checked, Unavailable> {
        Err((
            UnconfinedReason::UserNamespacesUnavailable,
            "no user namespaces".into(),
        ))
    }

    fn grants(value: serde_json::Value) -> Grants {
        gatehouse_confine::parse_confinement(&value, "t").unwrap().1
    }

    #[test]
    fn the_strictest_mode_wins_and_says_who_set_it() {
        let mut inputs = Inputs {
            admitted: true,
            ..Inputs::default()
        };
        let d = decide(&settings(ConfinementMode::Off), &inputs, works);
        assert_eq!(d.view.mode, ConfinementMode::Off);
        assert_eq!(d.view.reason, Some(UnconfinedReason::ModeOff));
        assert_eq!(d.view.mode_set_by, ["policy"]);
        assert!(d.sandbox.is_none());

        inputs.bundle_mode = Some((ConfinementMode::Preferred, vec!["acme@3".into()]));
        let d = decide(&settings(ConfinementMode::Off), &inputs, works);
        assert_eq!(d.view.mode, ConfinementMode::Preferred);
        assert_eq!(d.view.mode_set_by, ["acme@3"]);
        assert_eq!(d.view.state, ConfinementState::Confined);

        inputs.entry = Some((
            Some(ConfinementMode::Required),
            Grants::default(),
            "team@1".into(),
        ));
        let d = decide(&settings(ConfinementMode::Preferred), &inputs, works);
        assert_eq!(d.view.mode, ConfinementMode::Required);
        assert_eq!(d.view.mode_set_by, ["team@1"]);

        // An entry saying off does not loosen the policy's preferred.
        inputs.entry = Some((Some(ConfinementMode::Off), Grants::default(), "t@1".into()));
        inputs.bundle_mode = None;
        let d = decide(&settings(ConfinementMode::Preferred), &inputs, works);
        assert_eq!(d.view.mode, ConfinementMode::Preferred);
        assert_eq!(d.view.mode_set_by, ["policy"]);
    }

    #[test]
    fn a_granted_path_that_does_not_exist_is_said_not_hidden() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("present")).unwrap();
        let mut settings = settings(ConfinementMode::Preferred);
        settings.home = home.path().to_path_buf();
        let inputs = Inputs {
            admitted: true,
            entry: Some((
                None,
                grants(json!({"read": ["~/present"], "write": ["~/missing"]})),
                "acme@1".into(),
            )),
            ..Inputs::default()
        };
        let d = decide(&settings, &inputs, works);
        assert_eq!(d.view.state, ConfinementState::Confined);
        assert!(
            d.view
                .detail
                .contains("~/missing is granted but does not exist"),
            "{}",
            d.view.detail
        );
        assert!(
            !d.view.detail.contains("~/present is granted"),
            "{}",
            d.view.detail
        );
    }

    #[test]
    fn required_and_unavailable_is_refused_preferred_runs_unconfined() {
        let inputs = Inputs {
            admitted: true,
            bundle_mode: Some((ConfinementMode::Required, vec!["acme@3".into()])),
            ..Inputs::default()
        };
        let d = decide(&settings(ConfinementMode::Preferred), &inputs, fails);
        let refusal = d.refusal.expect("refused");
        assert!(refusal.contains("acme@3") && refusal.contains("no user namespaces"));
        assert_eq!(
            d.view.reason,
            Some(UnconfinedReason::UserNamespacesUnavailable)
        );
        assert!(d.sandbox.is_none());

        let d = decide(
            &settings(ConfinementMode::Preferred),
            &Inputs::default(),
            fails,
        );
        assert!(d.refusal.is_none());
        assert_eq!(d.view.state, ConfinementState::Unconfined);
        assert_eq!(
            d.view.reason,
            Some(UnconfinedReason::UserNamespacesUnavailable)
        );
        assert!(d.view.detail.contains("no user namespaces"));

        let d = decide(
            &settings(ConfinementMode::Required),
            &Inputs::default(),
            works,
        );
        assert!(d.refusal.is_none());
        assert!(d.sandbox.is_some());
    }

    #[test]
    fn an_admitted_servers_grants_are_the_union_of_its_admission() {
        let inputs = Inputs {
            admitted: true,
            entry: Some((
                None,
                grants(json!({"read": ["~/docs"], "hosts": ["api.example.com:443"]})),
                "acme@1".into(),
            )),
            net_allowed_hosts: vec![
                "https://status.example.com".into(),
                "https://api.example.com".into(),
                "ftp://nope.example.com".into(),
            ],
            directories: vec![("/home/u/work".into(), true), ("/home/u/ref".into(), false)],
            ..Inputs::default()
        };
        let d = decide(&settings(ConfinementMode::Preferred), &inputs, works);
        assert_eq!(d.view.grants_from, GrantSource::Admission);
        assert_eq!(d.view.read, ["~/docs", "~/ref"]);
        assert_eq!(d.view.write, ["~/work"]);
        assert_eq!(
            d.view.network,
            NetworkView::Hosts {
                hosts: vec![
                    "api.example.com:443".into(),
                    "status.example.com:443".into()
                ]
            }
        );
        // The origin that grants nothing is said, not silently dropped.
        assert!(d.view.detail.contains("ftp://nope.example.com"));
        let sandbox = d.sandbox.unwrap();
        assert!(sandbox.grants.allows("status.example.com", 443));
        assert!(!sandbox.grants.allows("status.example.com", 80));
        assert!(!sandbox.grants.allows("evil.example.com", 443));
    }

    #[test]
    fn the_persons_settings_are_ignored_for_an_admitted_server() {
        let person = json!({"mode": "off", "read": ["~"], "hosts": "any"});
        let admitted = Inputs {
            admitted: true,
            person: Some(person.clone()),
            ..Inputs::default()
        };
        let d = decide(&settings(ConfinementMode::Preferred), &admitted, works);
        assert_eq!(d.view.state, ConfinementState::Confined);
        assert!(d.view.read.is_empty());
        assert_eq!(d.view.network, NetworkView::None);
        assert!(d.view.detail.contains("ignored"));

        let unattested = Inputs {
            person: Some(person),
            ..Inputs::default()
        };
        let d = decide(&settings(ConfinementMode::Preferred), &unattested, works);
        assert_eq!(d.view.state, ConfinementState::Unconfined);
        assert_eq!(d.view.reason, Some(UnconfinedReason::PersonTurnedOff));
        assert_eq!(d.view.mode_set_by, ["you"]);
    }

    #[test]
    fn the_person_loosens_only_what_the_admins_left_loosenable() {
        let unattested = Inputs {
            person: Some(json!({"mode": "off"})),
            ..Inputs::default()
        };
        let d = decide(&settings(ConfinementMode::Required), &unattested, works);
        assert_eq!(d.view.mode, ConfinementMode::Required);
        assert_eq!(d.view.state, ConfinementState::Confined);

        let grants_only = Inputs {
            person: Some(json!({"write": ["~/notes"], "processes": 4})),
            ..Inputs::default()
        };
        let d = decide(&settings(ConfinementMode::Preferred), &grants_only, works);
        assert_eq!(d.view.grants_from, GrantSource::Person);
        assert_eq!(d.view.write, ["~/notes"]);
        assert_eq!(d.view.processes, 4);

        // Nothing given: the default confinement grants nothing.
        let d = decide(
            &settings(ConfinementMode::Preferred),
            &Inputs::default(),
            works,
        );
        assert_eq!(d.view.grants_from, GrantSource::Default);
        assert!(d.view.read.is_empty() && d.view.write.is_empty());
        assert_eq!(d.view.network, NetworkView::None);
        assert_eq!(d.view.processes, 0);

        // A hand-edited setting that does not parse confines with the default, and says so.
        let broken = Inputs {
            person: Some(json!({"mode": "off", "read": ["relative/path"]})),
            ..Inputs::default()
        };
        let d = decide(&settings(ConfinementMode::Preferred), &broken, works);
        assert_eq!(d.view.state, ConfinementState::Confined);
        assert_eq!(d.view.grants_from, GrantSource::Default);
        assert!(d.view.detail.contains("not used"), "{}", d.view.detail);
    }

    #[test]
    fn user_arguments_fall_under_the_same_rules_as_checked() {
        // Two directory rules (1..=2 read-write, then exactly 1 read-only).
        assert_eq!(rule_of_each(&[(1, 2), (1, 1)], 3), [0, 0, 1]);
        assert_eq!(rule_of_each(&[(1, 2), (1, 1)], 2), [0, 1]);
        assert_eq!(rule_of_each(&[(0, 8)], 0), Vec::<usize>::new());
        assert_eq!(rule_of_each(&[(0, 1), (0, 8)], 4), [0, 1, 1, 1]);
    }

    #[test]
    fn paths_under_the_home_are_shown_under_tilde() {
        let home = Path::new("/home/u");
        assert_eq!(shown_path(Path::new("/home/u/a/b"), home), "~/a/b");
        assert_eq!(shown_path(Path::new("/home/u"), home), "~");
        assert_eq!(
            shown_path(Path::new("/home/user2/a"), home),
            "/home/user2/a"
        );
    }
}
