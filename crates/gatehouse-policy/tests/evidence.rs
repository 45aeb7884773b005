//! The hold checks, one at a time and together, and who may override them.

mod common;

use common::{codes, good_context};
use gatehouse_policy::{
    Decision, Mode, Policy, ServerStanding, TransportKind, check_evidence, override_allowed,
};

#[test]
fn each_hold_check() {
    let policy = Policy::default_policy();
    // (case, edit, expected codes)
    type Edit = fn(&mut gatehouse_policy::ElicitationContext);
    let cases: Vec<(&str, Edit, Vec<&str>)> = vec![
        ("all_evidence", |_| {}, vec![]),
        (
            "not_admitted",
            |c| c.standing = ServerStanding::NotAdmitted,
            vec!["server_not_admitted"],
        ),
        (
            "unattested",
            |c| c.standing = ServerStanding::Unattested,
            vec!["server_unattested"],
        ),
        (
            "mode_not_declared",
            |c| c.mode_declared = false,
            vec!["mode_not_declared"],
        ),
        (
            "not_tied",
            |c| c.tied_to_request = false,
            vec!["not_tied_to_request"],
        ),
        (
            "remote_without_authorization",
            |c| {
                c.transport = TransportKind::Http {
                    loopback: false,
                    authorized: false,
                }
            },
            vec!["no_identity_binding"],
        ),
        (
            "loopback_without_authorization_is_local",
            |c| {
                c.transport = TransportKind::Http {
                    loopback: true,
                    authorized: false,
                }
            },
            vec![],
        ),
        (
            "stdio_is_local",
            |c| c.transport = TransportKind::Stdio,
            vec![],
        ),
        (
            "everything_missing",
            |c| {
                c.standing = ServerStanding::NotAdmitted;
                c.mode_declared = false;
                c.tied_to_request = false;
                c.transport = TransportKind::Http {
                    loopback: false,
                    authorized: false,
                };
            },
            vec![
                "mode_not_declared",
                "no_identity_binding",
                "not_tied_to_request",
                "server_not_admitted",
            ],
        ),
    ];
    let mut failures = Vec::new();
    for (name, edit, expected) in &cases {
        let mut context = good_context(Mode::Form, false);
        edit(&mut context);
        let assessment = check_evidence(&policy, &context);
        let got = codes(&assessment.reasons);
        let decision = if expected.is_empty() {
            Decision::AllowElicitationWithReceipt
        } else {
            Decision::HoldForElicitationEvidence
        };
        if got != *expected || assessment.decision != decision {
            failures.push(format!(
                "  {name}: {} {got:?} (want {decision} {expected:?})",
                assessment.decision
            ));
        }
    }
    common::report("evidence", cases.len(), &failures);
}

#[test]
fn policy_switches_turn_checks_off_and_on() {
    let mut policy = Policy::default_policy();
    let mut context = good_context(Mode::Url, false);
    context.standing = ServerStanding::Unattested;
    context.tied_to_request = false;
    context.transport = TransportKind::Http {
        loopback: true,
        authorized: false,
    };
    assert_eq!(
        codes(&check_evidence(&policy, &context).reasons),
        ["not_tied_to_request", "server_unattested"]
    );
    policy.evidence.hold_unattested = false;
    policy.evidence.require_request_binding = false;
    assert!(check_evidence(&policy, &context).is_allowed());
    // Loopback is remote when the policy says so, and then SEP-2343 applies.
    policy.evidence.loopback_http_is_local = false;
    assert_eq!(
        codes(&check_evidence(&policy, &context).reasons),
        ["no_identity_binding"]
    );
    policy.evidence.remote_requires_authorization = false;
    assert!(check_evidence(&policy, &context).is_allowed());
    // Not admitted is never switched off.
    context.standing = ServerStanding::NotAdmitted;
    assert_eq!(
        codes(&check_evidence(&policy, &context).reasons),
        ["server_not_admitted"]
    );
}

#[test]
fn overrides_follow_the_policy() {
    let mut policy = Policy::default_policy();
    let mut context = good_context(Mode::Form, false);
    context.standing = ServerStanding::Unattested;
    assert!(check_evidence(&policy, &context).override_allowed);
    context.transport = TransportKind::Http {
        loopback: false,
        authorized: false,
    };
    let both = check_evidence(&policy, &context);
    assert!(both.override_allowed, "both default-overridable");
    context.tied_to_request = false;
    let three = check_evidence(&policy, &context);
    assert!(
        !three.override_allowed,
        "not_tied_to_request is not overridable by default"
    );
    policy
        .evidence
        .user_may_override
        .push("not_tied_to_request".into());
    assert!(check_evidence(&policy, &context).override_allowed);
    policy.evidence.user_may_override.clear();
    context.tied_to_request = true;
    assert!(!check_evidence(&policy, &context).override_allowed);
    // Never for not admitted, even if a policy (built in code) lists it.
    policy.evidence.user_may_override = vec!["server_not_admitted".into()];
    let mut context = good_context(Mode::Form, false);
    context.standing = ServerStanding::NotAdmitted;
    let assessment = check_evidence(&policy, &context);
    assert!(!assessment.override_allowed);
    assert!(!override_allowed(&policy, &assessment));
    // Allowed assessments have nothing to override.
    assert!(!check_evidence(&policy, &good_context(Mode::Form, false)).override_allowed);
}
