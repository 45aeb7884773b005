//! The bridge from an admission's verdict to the decision: what the verdict, the bundles and
//! the configuration say, gathered into [`Inputs`], and the decision written back.

use gatehouse_attest::package::{Access, UserArgRule};
use serde_json::Value;

use super::ConfinementSettings;
use super::decide::{Inputs, decide, rule_of_each};
use super::launch::{argument_paths, code_paths, holding_folders};
use super::probe::{Checked, Unavailable};
use crate::admission::{AdmissionReason, Status, Trust, Verdict};
use crate::config::StdioSpec;

/// Decides the confinement of the stdio server `verdict` is about (one that proceeds) and
/// records it in the verdict: its view, what it runs with, or its refusal when confinement
/// is required and `checked` says this machine cannot confine.
pub(crate) fn confine_verdict(
    verdict: &mut Verdict,
    trust: &Trust,
    settings: &ConfinementSettings,
    stdio: &StdioSpec,
    person: Option<&Value>,
    checked: Result<Checked, Unavailable>,
) {
    let inputs = inputs(verdict, trust, settings, stdio, person);
    let decided = decide(settings, &inputs, || checked);
    verdict.confinement = Some(decided.view);
    verdict.sandbox = decided.sandbox;
    if let Some(detail) = decided.refusal {
        let reason = AdmissionReason::ConfinementUnavailable;
        verdict.status = Status::Refused;
        verdict.proceeds = false;
        verdict.reason = Some(reason.into());
        verdict.code = reason.code();
        verdict.detail = detail;
    }
}

fn inputs(
    verdict: &Verdict,
    trust: &Trust,
    settings: &ConfinementSettings,
    stdio: &StdioSpec,
    person: Option<&Value>,
) -> Inputs {
    let admitted = verdict.is_admitted();
    let policy = verdict.policy().filter(|_| admitted);
    let entry = policy.and_then(|p| p.confinement.as_ref()).map(|c| {
        (
            c.mode,
            c.grants.clone(),
            verdict.bundle.clone().unwrap_or_default(),
        )
    });
    let net_allowed_hosts = verdict
        .admitted_proof()
        .map(|a| a.net_allowed_hosts().to_vec())
        .unwrap_or_default();
    let directories = match (policy.and_then(|p| p.package.as_ref()), &verdict.package) {
        (Some(binding), Some(summary)) => {
            let counts: Vec<(u32, u32)> =
                binding.user_args.iter().map(UserArgRule::count).collect();
            rule_of_each(&counts, summary.user_args.len())
                .into_iter()
                .zip(&summary.user_args)
                .filter_map(|(rule, arg)| match binding.user_args.get(rule) {
                    Some(UserArgRule::ExistingDirectoryUnderHome { access, .. }) => {
                        Some((arg.clone(), *access == Access::ReadWrite))
                    }
                    _ => None,
                })
                .collect()
        }
        _ => Vec::new(),
    };
    // The server's own code: the bound file, a package's interpreter and verified tree, or
    // what an unattested command resolves to now and the script files it names.
    let (program, extra) = if let Some(launch) = verdict.package_launch() {
        (Some(launch.program.clone()), vec![launch.tree.clone()])
    } else if let Some(program) = verdict.program() {
        // The binding names its arguments exactly, so the scripts among them are part of what
        // the admins reviewed, with the folder that holds each (a script imports its
        // neighbours and its package's dependencies).
        (
            Some(program.to_path_buf()),
            holding_folders(&argument_paths(&stdio.args), &settings.home),
        )
    } else {
        (
            crate::admission::resolve_launch_program(
                &stdio.command,
                stdio.cwd.as_deref(),
                &stdio.env,
            )
            .ok(),
            // Nobody reviewed an unattested server, so its code is whatever it names: the
            // program, the paths among its arguments and the directory it runs in, each as
            // the folder that holds it (a project, `~/.pyenv`, `/opt/tool`), read-only.
            argument_paths(&stdio.args)
                .into_iter()
                .chain(unattested_cwd(stdio))
                .collect(),
        )
    };
    let code = match (program, admitted || verdict.package_launch().is_some()) {
        (Some(program), true) => code_paths(&program, &settings.home, &extra),
        // `resolve_launch_program` already gave the program's canonical path.
        (Some(program), false) => {
            let mut named = vec![program];
            named.extend(extra);
            holding_folders(&named, &settings.home)
        }
        (None, _) => holding_folders(&extra, &settings.home),
    };
    Inputs {
        admitted,
        bundle_mode: trust.confinement_mode(),
        entry,
        net_allowed_hosts,
        directories,
        person: person.cloned(),
        code,
    }
}

/// The working directory an unattested server runs in: its configured one, else the host's
/// own (where an ad hoc `--stdio` command was typed), as it runs unconfined.
pub(crate) fn unattested_cwd(stdio: &StdioSpec) -> Option<std::path::PathBuf> {
    stdio
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .filter(|dir| dir.is_absolute() && dir.is_dir())
}
