//! The primitives the gate guards: tools, prompts and resources. One [`Primitive`] impl each
//! says what grants it (a bundle's entries, the user's approvals), how its gate decides, and
//! what its decisions and approvals record; the gatekeeper's allow-list, authorize, record and
//! approve are written once over it. A new primitive is one more impl here (plus its bundle
//! field, its events and its slot in the approvals file).

use gatehouse_attest::bundle::ServerPolicy;
use gatehouse_attest::gate::{AllowList, Denial, Kind, Permit, PinMismatch, Scope, ToolGate};
use gatehouse_attest::pins::parse_pin;
use gatehouse_attest::resources::{
    ResourceAllowList, ResourceGate, ResourcePermit, check_exact_uri, check_prefix,
};

use super::approvals_file::ApprovalsFile;
use crate::audit_event::EventPayload;
use crate::audit_event::gate::{
    ApprovalScope, Approved, PinMismatched, PromptDecision, PromptName, PromptPin, ResourceAction,
    ResourceDecision, ResourceEntry, ResourceTarget, ToolDecision, ToolName, ToolPin,
};

/// One kind of thing a server offers that must pass the gate before any byte of a request
/// for it is sent.
pub trait Primitive {
    /// What a bundle grants and the user's approvals extend.
    type AllowList: Default;
    /// The per-connection gate: the allow-list plus what the server listed.
    type Gate;
    /// What a request asks for.
    type Request<'a>: Copy;
    /// Proof the gate allowed a request (only the gate mints one).
    type Permit;
    /// The decision as its record holds it (see [`crate::audit_event::gate::Decided`]).
    type Decision;
    /// One user approval, as the approvals file keeps it.
    type Entry;
    /// An approval's record.
    type Approved: EventPayload;
    /// Who approves instead, when the posture does not let the user.
    const BY_ADMIN: &'static str;

    /// What a bundle's server policy grants.
    fn from_policy(policy: &ServerPolicy, bundle_label: &str) -> Result<Self::AllowList, String>;
    /// Adds one user approval (one the gate would not accept grants nothing).
    fn allow_user(list: &mut Self::AllowList, entry: &Self::Entry);
    fn gate(list: Self::AllowList) -> Self::Gate;
    fn check(gate: &Self::Gate, request: Self::Request<'_>) -> Result<Self::Permit, Denial>;
    /// The record of `check`'s answer to `request`.
    fn decision(
        request: Self::Request<'_>,
        decided: &Result<Self::Permit, Denial>,
    ) -> Self::Decision;

    /// Why `entry` cannot be approved, if it cannot.
    fn check_entry(_entry: &Self::Entry) -> Result<(), String> {
        Ok(())
    }
    /// `entry` as a refusal names it.
    fn shown(entry: &Self::Entry) -> String;
    /// An approval's record; `findings` are the codes of the high findings the person
    /// acknowledged (none for a primitive without definitions to review).
    fn approved(entry: &Self::Entry, approval_key: &str, findings: Vec<String>) -> Self::Approved;
    /// The approvals of a server (by approval key) in the approvals file.
    fn approvals(file: &ApprovalsFile, key: &str) -> Vec<Self::Entry>;
    fn add_approvals(file: &mut ApprovalsFile, key: &str, entries: &[Self::Entry]);
}

/// A primitive allowed by exact name and pinned by the hash of its whole definition, whose
/// gate is a [`ToolGate`] of its [`Kind`] (tools, prompts).
pub trait Pinned: Primitive<Gate = ToolGate> {
    const KIND: Kind;
    /// What the definition review ([`gatehouse_review::review`]) takes a definition for.
    const REVIEWED: gatehouse_review::Primitive;
    /// A pin mismatch's record.
    type Mismatch: EventPayload;
    fn mismatch(mismatch: &PinMismatch, server: &str) -> Self::Mismatch;
}

/// Tools: `allowedTools`/`toolPins`, approved with pins.
#[derive(Debug, Clone, Copy)]
pub enum Tools {}

/// Prompts: `allowedPrompts`/`promptPins`, approved with pins.
#[derive(Debug, Clone, Copy)]
pub enum Prompts {}

/// Resources: `allowedResources` (exact URIs) and `allowedResourcePrefixes`.
#[derive(Debug, Clone, Copy)]
pub enum Resources {}

/// A request for a resource: the URI and what it is for.
#[derive(Debug, Clone, Copy)]
pub struct ResourceRequest<'a> {
    pub uri: &'a str,
    pub action: ResourceAction,
}

/// A named primitive's user approval: (name, pin of its current definition).
pub type NamedPin = (String, String);

fn allow_named(list: &mut AllowList, (name, pin): &NamedPin) {
    if let Ok(pin) = parse_pin(pin) {
        list.allow(name.as_str(), Scope::User, Some(pin));
    }
}

fn shown_named((name, pin): &NamedPin) -> String {
    format!("{name:?}: {pin}")
}

fn add_named(
    map: &mut std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
    key: &str,
    entries: &[NamedPin],
) {
    let entry = map.entry(key.to_string()).or_default();
    for (name, pin) in entries {
        entry.insert(name.clone(), pin.clone());
    }
}

fn stored_named(
    map: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
    key: &str,
) -> Vec<NamedPin> {
    map.get(key)
        .map(|named| named.clone().into_iter().collect())
        .unwrap_or_default()
}

impl Primitive for Tools {
    type AllowList = AllowList;
    type Gate = ToolGate;
    type Request<'a> = &'a str;
    type Permit = Permit;
    type Decision = ToolDecision;
    type Entry = NamedPin;
    type Approved = Approved<ToolPin>;
    const BY_ADMIN: &'static str = "tools are approved by the admin bundle's allowedTools and toolPins; send these pins to your admin";

    fn from_policy(policy: &ServerPolicy, bundle_label: &str) -> Result<AllowList, String> {
        AllowList::from_policy(policy, bundle_label)
    }
    fn allow_user(list: &mut AllowList, entry: &NamedPin) {
        allow_named(list, entry)
    }
    fn gate(list: AllowList) -> ToolGate {
        ToolGate::new(list)
    }
    fn check(gate: &ToolGate, name: &str) -> Result<Permit, Denial> {
        gate.check(name)
    }
    fn decision(name: &str, decided: &Result<Permit, Denial>) -> ToolDecision {
        let tool = name.to_string();
        match decided {
            Ok(permit) => ToolDecision::Allowed {
                tool,
                scope: permit.scope().label(),
                pinned: permit.pinned(),
            },
            Err(denial) => ToolDecision::Denied {
                tool,
                reason: denial.reason,
                code: denial.reason.code(),
                detail: denial.detail.clone(),
            },
        }
    }
    fn shown(entry: &NamedPin) -> String {
        shown_named(entry)
    }
    fn approved(
        (tool, pin): &NamedPin,
        approval_key: &str,
        findings: Vec<String>,
    ) -> Approved<ToolPin> {
        Approved {
            entry: ToolPin {
                tool: tool.clone(),
                pin: pin.clone(),
            },
            approval_key: approval_key.to_string(),
            scope: ApprovalScope::User,
            findings,
        }
    }
    fn approvals(file: &ApprovalsFile, key: &str) -> Vec<NamedPin> {
        stored_named(&file.servers, key)
    }
    fn add_approvals(file: &mut ApprovalsFile, key: &str, entries: &[NamedPin]) {
        add_named(&mut file.servers, key, entries)
    }
}

impl Pinned for Tools {
    const KIND: Kind = Kind::Tool;
    const REVIEWED: gatehouse_review::Primitive = gatehouse_review::Primitive::Tool;
    type Mismatch = PinMismatched<ToolName>;
    fn mismatch(m: &PinMismatch, server: &str) -> Self::Mismatch {
        mismatched(
            ToolName {
                tool: m.tool.clone(),
            },
            m,
            server,
        )
    }
}

impl Primitive for Prompts {
    type AllowList = AllowList;
    type Gate = ToolGate;
    type Request<'a> = &'a str;
    type Permit = Permit;
    type Decision = PromptDecision;
    type Entry = NamedPin;
    type Approved = Approved<PromptPin>;
    const BY_ADMIN: &'static str = "prompts are approved by the admin bundle's allowedPrompts and promptPins; send these pins to your admin";

    fn from_policy(policy: &ServerPolicy, bundle_label: &str) -> Result<AllowList, String> {
        AllowList::prompts_from_policy(policy, bundle_label)
    }
    fn allow_user(list: &mut AllowList, entry: &NamedPin) {
        allow_named(list, entry)
    }
    fn gate(list: AllowList) -> ToolGate {
        ToolGate::for_prompts(list)
    }
    fn check(gate: &ToolGate, name: &str) -> Result<Permit, Denial> {
        gate.check(name)
    }
    fn decision(name: &str, decided: &Result<Permit, Denial>) -> PromptDecision {
        let prompt = name.to_string();
        match decided {
            Ok(permit) => PromptDecision::Allowed {
                prompt,
                scope: permit.scope().label(),
                pinned: permit.pinned(),
            },
            Err(denial) => PromptDecision::Denied {
                prompt,
                reason: denial.reason,
                detail: denial.detail.clone(),
            },
        }
    }
    fn shown(entry: &NamedPin) -> String {
        shown_named(entry)
    }
    fn approved(
        (prompt, pin): &NamedPin,
        approval_key: &str,
        findings: Vec<String>,
    ) -> Approved<PromptPin> {
        Approved {
            entry: PromptPin {
                prompt: prompt.clone(),
                pin: pin.clone(),
            },
            approval_key: approval_key.to_string(),
            scope: ApprovalScope::User,
            findings,
        }
    }
    fn approvals(file: &ApprovalsFile, key: &str) -> Vec<NamedPin> {
        stored_named(&file.prompts, key)
    }
    fn add_approvals(file: &mut ApprovalsFile, key: &str, entries: &[NamedPin]) {
        add_named(&mut file.prompts, key, entries)
    }
}

impl Pinned for Prompts {
    const KIND: Kind = Kind::Prompt;
    const REVIEWED: gatehouse_review::Primitive = gatehouse_review::Primitive::Prompt;
    type Mismatch = PinMismatched<PromptName>;
    fn mismatch(m: &PinMismatch, server: &str) -> Self::Mismatch {
        mismatched(
            PromptName {
                prompt: m.tool.clone(),
            },
            m,
            server,
        )
    }
}

fn mismatched<N>(subject: N, m: &PinMismatch, server: &str) -> PinMismatched<N> {
    PinMismatched {
        subject,
        expected: m.expected.clone(),
        actual: m.actual.clone(),
        scope: m.scope.label(),
        name: server.to_string(),
    }
}

impl Primitive for Resources {
    type AllowList = ResourceAllowList;
    type Gate = ResourceGate;
    type Request<'a> = ResourceRequest<'a>;
    type Permit = ResourcePermit;
    type Decision = ResourceDecision;
    type Entry = ResourceEntry;
    type Approved = Approved<ResourceEntry>;
    const BY_ADMIN: &'static str = "resources are approved by the admin bundle's allowedResources and allowedResourcePrefixes; send these to your admin";

    fn from_policy(policy: &ServerPolicy, bundle_label: &str) -> Result<ResourceAllowList, String> {
        ResourceAllowList::from_policy(policy, bundle_label)
    }
    fn allow_user(list: &mut ResourceAllowList, entry: &ResourceEntry) {
        let _ = match entry {
            ResourceEntry::Uri(uri) => list.allow_uri(uri, Scope::User),
            ResourceEntry::Prefix(prefix) => list.allow_prefix(prefix, Scope::User),
        };
    }
    fn gate(list: ResourceAllowList) -> ResourceGate {
        ResourceGate::new(list)
    }
    fn check(gate: &ResourceGate, request: ResourceRequest<'_>) -> Result<ResourcePermit, Denial> {
        gate.check(request.uri)
    }
    fn decision(
        request: ResourceRequest<'_>,
        decided: &Result<ResourcePermit, Denial>,
    ) -> ResourceDecision {
        let (action, uri) = (request.action, request.uri.to_string());
        match decided {
            Ok(permit) => ResourceDecision::Allowed {
                action,
                uri,
                scope: permit.scope().label(),
                prefix: permit.prefix().map(str::to_string),
            },
            Err(denial) => ResourceDecision::Denied {
                action,
                target: ResourceTarget::Uri(uri),
                reason: denial.reason,
                detail: denial.detail.clone(),
            },
        }
    }
    fn check_entry(entry: &ResourceEntry) -> Result<(), String> {
        match entry {
            ResourceEntry::Uri(uri) => check_exact_uri(uri),
            ResourceEntry::Prefix(prefix) => check_prefix(prefix),
        }
    }
    fn shown(entry: &ResourceEntry) -> String {
        format!("{:?}", entry.as_str())
    }
    fn approved(
        entry: &ResourceEntry,
        approval_key: &str,
        findings: Vec<String>,
    ) -> Approved<ResourceEntry> {
        Approved {
            entry: entry.clone(),
            approval_key: approval_key.to_string(),
            scope: ApprovalScope::User,
            findings,
        }
    }
    fn approvals(file: &ApprovalsFile, key: &str) -> Vec<ResourceEntry> {
        let of = |map: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>| {
            map.get(key)
                .into_iter()
                .flatten()
                .cloned()
                .collect::<Vec<_>>()
        };
        let uris = of(&file.resources).into_iter().map(ResourceEntry::Uri);
        let prefixes = of(&file.resource_prefixes)
            .into_iter()
            .map(ResourceEntry::Prefix);
        uris.chain(prefixes).collect()
    }
    fn add_approvals(file: &mut ApprovalsFile, key: &str, entries: &[ResourceEntry]) {
        // The URI set is written even when only prefixes are approved, as it always was.
        let uris = file.resources.entry(key.to_string()).or_default();
        let mut prefixes = Vec::new();
        for entry in entries {
            match entry {
                ResourceEntry::Uri(uri) => {
                    uris.insert(uri.clone());
                }
                ResourceEntry::Prefix(prefix) => prefixes.push(prefix.clone()),
            }
        }
        if !prefixes.is_empty() {
            file.resource_prefixes
                .entry(key.to_string())
                .or_default()
                .extend(prefixes);
        }
    }
}
