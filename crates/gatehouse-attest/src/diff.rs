//! What a bundle rotation changes (`gatehouse bundle diff OLD NEW`), for the admins who sign it.
//!
//! Pure: two parsed [`BundleContent`]s in, a list of [`Change`]s out; signatures, the clock and
//! the host's state play no part (the CLI says separately whether each file verifies).
//! Servers are matched by their exact `id` bytes and list members by their exact bytes, so a
//! look-alike edit (a tool renamed with a homoglyph, an id with a zero-width character) shows
//! as one thing removed and another added, never as "unchanged".
//!
//! # When a change widens
//!
//! A change **widens** when, after it, something may be admitted, allowed, trusted or kept
//! less strictly than before; CI fails on any. The rule, per kind:
//! - *Always widens*: a server added; a binding changed in any way (its kind, stdio
//!   command/args/sha256, any part of a package binding, the attestation it carries): the
//!   admins now vouch for other bytes; an origin, vouched endpoint, tool, prompt, resource,
//!   resource prefix, URL-elicitation domain or authorization server added; a pin changed (a
//!   new definition is new access) or removed (any definition then passes); the
//!   `authorizationServers` pin emptied (any issuer the server names then counts); a signer or
//!   root key added, or its public key replaced under the same id; a clearance approved for a
//!   signer key; a signer key's `notAfter` later or dropped; a clearance level or alias added,
//!   or a level's rank raised (documents asserting it now reach higher requirements); the
//!   scheme renamed; a required clearance (bundle or entry, compared as the effective level by
//!   rank) lower; the root threshold lower; the bundle's or a vouch's expiry later; the lock
//!   removed; the posture relaxed from deny-by-default to warn; the audit durability relaxed
//!   (sync to batched, a longer window, or no requirement) or the retention shortened or
//!   dropped; the bundle id changed (a different bundle: nothing of the old one carries over);
//!   a confinement mode loosened, bundle-wide or an entry's (an absent mode counts as `off`:
//!   it adds nothing to the strictest-wins combination with the policy); a read path, write
//!   path or host granted to an entry, its network opened to any host, or its process or
//!   memory bound raised (an entry without `confinement` grants nothing of its own).
//! - *Never widens*: the reverse of each of the above (removals, a pin added to an unpinned
//!   allowed name, later requirements, earlier expiries...), and the specVersion changing.
//!
//! When a change could go either way (an entry's required clearance moving together with the
//! scheme's ranks), it is compared by the effective rank each bundle gives it; what cannot be
//! compared (a level the other scheme does not have) widens.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use gatehouse_confine::{ConfinementMode, Grants, Network};

use crate::bundle::{AuditDurability, BundleContent, Posture, ServerPolicy};
use crate::confinement::EntryConfinement;
use crate::package::{EntryPoint, Interpreter, PackageBinding, PinnedPackage, UserArgRule};
use crate::trust_root::{NotAfter, Scheme};

/// What changed. Closed; `code()` is the stable snake_case name (also the JSON form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    BundleIdChanged,
    SpecVersionChanged,
    ServerAdded,
    ServerRemoved,
    BindingKindChanged,
    StdioCommandChanged,
    StdioArgsChanged,
    StdioSha256Changed,
    PackageChanged,
    PackageClosureChanged,
    PackageEntryChanged,
    PackageInterpreterChanged,
    PackageArgsChanged,
    PackageUserArgsChanged,
    BindingAttestationChanged,
    VouchedEndpointAdded,
    VouchedEndpointRemoved,
    VouchedExpiryExtended,
    VouchedExpiryShortened,
    OriginAdded,
    OriginRemoved,
    ToolAllowed,
    ToolDisallowed,
    PromptAllowed,
    PromptDisallowed,
    ResourceAllowed,
    ResourceDisallowed,
    ResourcePrefixAllowed,
    ResourcePrefixDisallowed,
    ToolPinChanged,
    ToolPinAdded,
    ToolPinRemoved,
    PromptPinChanged,
    PromptPinAdded,
    PromptPinRemoved,
    SignerKeyAdded,
    SignerKeyRemoved,
    SignerKeyReplaced,
    SignerClearanceApproved,
    SignerClearanceWithdrawn,
    SignerNotAfterExtended,
    SignerNotAfterShortened,
    SchemeRenamed,
    ClearanceLevelAdded,
    ClearanceLevelRemoved,
    ClearanceRankRaised,
    ClearanceRankLowered,
    ClearanceAliasAdded,
    ClearanceAliasRemoved,
    RequiredClearanceLowered,
    RequiredClearanceRaised,
    RootKeyAdded,
    RootKeyRemoved,
    RootKeyReplaced,
    ThresholdLowered,
    ThresholdRaised,
    ExpiryExtended,
    ExpiryShortened,
    LockRemoved,
    LockAdded,
    PostureRelaxed,
    PostureTightened,
    AuditDurabilityRelaxed,
    AuditDurabilityTightened,
    AuditRetentionShortened,
    AuditRetentionLengthened,
    AuthorizationServerAdded,
    AuthorizationServerRemoved,
    AuthorizationServersUnpinned,
    UrlElicitationDomainAdded,
    UrlElicitationDomainRemoved,
    ConfinementModeLoosened,
    ConfinementModeTightened,
    ConfinementReadGranted,
    ConfinementReadRemoved,
    ConfinementWriteGranted,
    ConfinementWriteRemoved,
    ConfinementHostGranted,
    ConfinementHostRemoved,
    ConfinementNetworkAny,
    ConfinementNetworkRestricted,
    ConfinementProcessesRaised,
    ConfinementProcessesLowered,
    ConfinementMemoryRaised,
    ConfinementMemoryLowered,
    BundleConfinementLoosened,
    BundleConfinementTightened,
}

impl ChangeKind {
    /// Every kind, in declaration order.
    pub const ALL: [ChangeKind; 87] = [
        ChangeKind::BundleIdChanged,
        ChangeKind::SpecVersionChanged,
        ChangeKind::ServerAdded,
        ChangeKind::ServerRemoved,
        ChangeKind::BindingKindChanged,
        ChangeKind::StdioCommandChanged,
        ChangeKind::StdioArgsChanged,
        ChangeKind::StdioSha256Changed,
        ChangeKind::PackageChanged,
        ChangeKind::PackageClosureChanged,
        ChangeKind::PackageEntryChanged,
        ChangeKind::PackageInterpreterChanged,
        ChangeKind::PackageArgsChanged,
        ChangeKind::PackageUserArgsChanged,
        ChangeKind::BindingAttestationChanged,
        ChangeKind::VouchedEndpointAdded,
        ChangeKind::VouchedEndpointRemoved,
        ChangeKind::VouchedExpiryExtended,
        ChangeKind::VouchedExpiryShortened,
        ChangeKind::OriginAdded,
        ChangeKind::OriginRemoved,
        ChangeKind::ToolAllowed,
        ChangeKind::ToolDisallowed,
        ChangeKind::PromptAllowed,
        ChangeKind::PromptDisallowed,
        ChangeKind::ResourceAllowed,
        ChangeKind::ResourceDisallowed,
        ChangeKind::ResourcePrefixAllowed,
        ChangeKind::ResourcePrefixDisallowed,
        ChangeKind::ToolPinChanged,
        ChangeKind::ToolPinAdded,
        ChangeKind::ToolPinRemoved,
        ChangeKind::PromptPinChanged,
        ChangeKind::PromptPinAdded,
        ChangeKind::PromptPinRemoved,
        ChangeKind::SignerKeyAdded,
        ChangeKind::SignerKeyRemoved,
        ChangeKind::SignerKeyReplaced,
        ChangeKind::SignerClearanceApproved,
        ChangeKind::SignerClearanceWithdrawn,
        ChangeKind::SignerNotAfterExtended,
        ChangeKind::SignerNotAfterShortened,
        ChangeKind::SchemeRenamed,
        ChangeKind::ClearanceLevelAdded,
        ChangeKind::ClearanceLevelRemoved,
        ChangeKind::ClearanceRankRaised,
        ChangeKind::ClearanceRankLowered,
        ChangeKind::ClearanceAliasAdded,
        ChangeKind::ClearanceAliasRemoved,
        ChangeKind::RequiredClearanceLowered,
        ChangeKind::RequiredClearanceRaised,
        ChangeKind::RootKeyAdded,
        ChangeKind::RootKeyRemoved,
        ChangeKind::RootKeyReplaced,
        ChangeKind::ThresholdLowered,
        ChangeKind::ThresholdRaised,
        ChangeKind::ExpiryExtended,
        ChangeKind::ExpiryShortened,
        ChangeKind::LockRemoved,
        ChangeKind::LockAdded,
        ChangeKind::PostureRelaxed,
        ChangeKind::PostureTightened,
        ChangeKind::AuditDurabilityRelaxed,
        ChangeKind::AuditDurabilityTightened,
        ChangeKind::AuditRetentionShortened,
        ChangeKind::AuditRetentionLengthened,
        ChangeKind::AuthorizationServerAdded,
        ChangeKind::AuthorizationServerRemoved,
        ChangeKind::AuthorizationServersUnpinned,
        ChangeKind::UrlElicitationDomainAdded,
        ChangeKind::UrlElicitationDomainRemoved,
        ChangeKind::ConfinementModeLoosened,
        ChangeKind::ConfinementModeTightened,
        ChangeKind::ConfinementReadGranted,
        ChangeKind::ConfinementReadRemoved,
        ChangeKind::ConfinementWriteGranted,
        ChangeKind::ConfinementWriteRemoved,
        ChangeKind::ConfinementHostGranted,
        ChangeKind::ConfinementHostRemoved,
        ChangeKind::ConfinementNetworkAny,
        ChangeKind::ConfinementNetworkRestricted,
        ChangeKind::ConfinementProcessesRaised,
        ChangeKind::ConfinementProcessesLowered,
        ChangeKind::ConfinementMemoryRaised,
        ChangeKind::ConfinementMemoryLowered,
        ChangeKind::BundleConfinementLoosened,
        ChangeKind::BundleConfinementTightened,
    ];

    pub fn code(self) -> &'static str {
        use ChangeKind::*;
        match self {
            BundleIdChanged => "bundle_id_changed",
            SpecVersionChanged => "spec_version_changed",
            ServerAdded => "server_added",
            ServerRemoved => "server_removed",
            BindingKindChanged => "binding_kind_changed",
            StdioCommandChanged => "stdio_command_changed",
            StdioArgsChanged => "stdio_args_changed",
            StdioSha256Changed => "stdio_sha256_changed",
            PackageChanged => "package_changed",
            PackageClosureChanged => "package_closure_changed",
            PackageEntryChanged => "package_entry_changed",
            PackageInterpreterChanged => "package_interpreter_changed",
            PackageArgsChanged => "package_args_changed",
            PackageUserArgsChanged => "package_user_args_changed",
            BindingAttestationChanged => "binding_attestation_changed",
            VouchedEndpointAdded => "vouched_endpoint_added",
            VouchedEndpointRemoved => "vouched_endpoint_removed",
            VouchedExpiryExtended => "vouched_expiry_extended",
            VouchedExpiryShortened => "vouched_expiry_shortened",
            OriginAdded => "origin_added",
            OriginRemoved => "origin_removed",
            ToolAllowed => "tool_allowed",
            ToolDisallowed => "tool_disallowed",
            PromptAllowed => "prompt_allowed",
            PromptDisallowed => "prompt_disallowed",
            ResourceAllowed => "resource_allowed",
            ResourceDisallowed => "resource_disallowed",
            ResourcePrefixAllowed => "resource_prefix_allowed",
            ResourcePrefixDisallowed => "resource_prefix_disallowed",
            ToolPinChanged => "tool_pin_changed",
            ToolPinAdded => "tool_pin_added",
            ToolPinRemoved => "tool_pin_removed",
            PromptPinChanged => "prompt_pin_changed",
            PromptPinAdded => "prompt_pin_added",
            PromptPinRemoved => "prompt_pin_removed",
            SignerKeyAdded => "signer_key_added",
            SignerKeyRemoved => "signer_key_removed",
            SignerKeyReplaced => "signer_key_replaced",
            SignerClearanceApproved => "signer_clearance_approved",
            SignerClearanceWithdrawn => "signer_clearance_withdrawn",
            SignerNotAfterExtended => "signer_not_after_extended",
            SignerNotAfterShortened => "signer_not_after_shortened",
            SchemeRenamed => "scheme_renamed",
            ClearanceLevelAdded => "clearance_level_added",
            ClearanceLevelRemoved => "clearance_level_removed",
            ClearanceRankRaised => "clearance_rank_raised",
            ClearanceRankLowered => "clearance_rank_lowered",
            ClearanceAliasAdded => "clearance_alias_added",
            ClearanceAliasRemoved => "clearance_alias_removed",
            RequiredClearanceLowered => "required_clearance_lowered",
            RequiredClearanceRaised => "required_clearance_raised",
            RootKeyAdded => "root_key_added",
            RootKeyRemoved => "root_key_removed",
            RootKeyReplaced => "root_key_replaced",
            ThresholdLowered => "threshold_lowered",
            ThresholdRaised => "threshold_raised",
            ExpiryExtended => "expiry_extended",
            ExpiryShortened => "expiry_shortened",
            LockRemoved => "lock_removed",
            LockAdded => "lock_added",
            PostureRelaxed => "posture_relaxed",
            PostureTightened => "posture_tightened",
            AuditDurabilityRelaxed => "audit_durability_relaxed",
            AuditDurabilityTightened => "audit_durability_tightened",
            AuditRetentionShortened => "audit_retention_shortened",
            AuditRetentionLengthened => "audit_retention_lengthened",
            AuthorizationServerAdded => "authorization_server_added",
            AuthorizationServerRemoved => "authorization_server_removed",
            AuthorizationServersUnpinned => "authorization_servers_unpinned",
            UrlElicitationDomainAdded => "url_elicitation_domain_added",
            UrlElicitationDomainRemoved => "url_elicitation_domain_removed",
            ConfinementModeLoosened => "confinement_mode_loosened",
            ConfinementModeTightened => "confinement_mode_tightened",
            ConfinementReadGranted => "confinement_read_granted",
            ConfinementReadRemoved => "confinement_read_removed",
            ConfinementWriteGranted => "confinement_write_granted",
            ConfinementWriteRemoved => "confinement_write_removed",
            ConfinementHostGranted => "confinement_host_granted",
            ConfinementHostRemoved => "confinement_host_removed",
            ConfinementNetworkAny => "confinement_network_any",
            ConfinementNetworkRestricted => "confinement_network_restricted",
            ConfinementProcessesRaised => "confinement_processes_raised",
            ConfinementProcessesLowered => "confinement_processes_lowered",
            ConfinementMemoryRaised => "confinement_memory_raised",
            ConfinementMemoryLowered => "confinement_memory_lowered",
            BundleConfinementLoosened => "bundle_confinement_loosened",
            BundleConfinementTightened => "bundle_confinement_tightened",
        }
    }

    /// Whether this kind always widens access (see the module doc); every kind is one or the
    /// other, so `widens` never depends on anything but the kind.
    pub fn widens(self) -> bool {
        use ChangeKind::*;
        !matches!(
            self,
            SpecVersionChanged
                | ServerRemoved
                | VouchedEndpointRemoved
                | VouchedExpiryShortened
                | OriginRemoved
                | ToolDisallowed
                | PromptDisallowed
                | ResourceDisallowed
                | ResourcePrefixDisallowed
                | ToolPinAdded
                | PromptPinAdded
                | SignerKeyRemoved
                | SignerClearanceWithdrawn
                | SignerNotAfterShortened
                | ClearanceLevelRemoved
                | ClearanceRankLowered
                | ClearanceAliasRemoved
                | RequiredClearanceRaised
                | RootKeyRemoved
                | ThresholdRaised
                | ExpiryShortened
                | LockAdded
                | PostureTightened
                | AuditDurabilityTightened
                | AuditRetentionLengthened
                | AuthorizationServerRemoved
                | UrlElicitationDomainRemoved
                | ConfinementModeTightened
                | ConfinementReadRemoved
                | ConfinementWriteRemoved
                | ConfinementHostRemoved
                | ConfinementNetworkRestricted
                | ConfinementProcessesLowered
                | ConfinementMemoryLowered
                | BundleConfinementTightened
        )
    }
}

/// One change. `server` is the entry's id, `None` for the bundle as a whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub kind: ChangeKind,
    pub server: Option<String>,
    pub widens: bool,
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub detail: String,
}

/// Every change from one bundle to the next: bundle-wide ones first, then per server in the
/// old bundle's order, then servers only the new one has.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct BundleDiff {
    pub changes: Vec<Change>,
}

impl BundleDiff {
    /// Whether any change widens access (the CLI's exit 3).
    pub fn widens(&self) -> bool {
        self.changes.iter().any(|c| c.widens)
    }
}

struct Out {
    changes: Vec<Change>,
}

impl Out {
    fn push(
        &mut self,
        kind: ChangeKind,
        server: Option<&str>,
        before: Option<Value>,
        after: Option<Value>,
        detail: String,
    ) {
        self.changes.push(Change {
            kind,
            server: server.map(str::to_string),
            widens: kind.widens(),
            before,
            after,
            detail,
        });
    }

    /// Members of `new` not in `old` (`added`) and of `old` not in `new` (`removed`), by
    /// exact bytes, each in its list's order.
    fn members(
        &mut self,
        server: Option<&str>,
        old: &[String],
        new: &[String],
        (added, removed): (ChangeKind, ChangeKind),
        noun: &str,
    ) {
        for item in new.iter().filter(|i| !old.contains(i)) {
            self.push(
                added,
                server,
                None,
                Some(json!(item)),
                format!("{noun} {item:?} added"),
            );
        }
        for item in old.iter().filter(|i| !new.contains(i)) {
            self.push(
                removed,
                server,
                Some(json!(item)),
                None,
                format!("{noun} {item:?} removed"),
            );
        }
    }
}

fn time_text(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_else(|_| t.to_string())
}

/// The changes from `old` to `new`.
pub fn diff(old: &BundleContent, new: &BundleContent) -> BundleDiff {
    let mut out = Out {
        changes: Vec::new(),
    };
    bundle_wide(&mut out, old, new);
    for before in &old.servers {
        match new.servers.iter().find(|s| s.id == before.id) {
            Some(after) => server(&mut out, old, new, before, after),
            None => out.push(
                ChangeKind::ServerRemoved,
                Some(&before.id),
                Some(json!(before.id)),
                None,
                format!("server {:?} removed", before.id),
            ),
        }
    }
    for after in new
        .servers
        .iter()
        .filter(|s| !old.servers.iter().any(|o| o.id == s.id))
    {
        out.push(
            ChangeKind::ServerAdded,
            Some(&after.id),
            None,
            Some(json!(after.id)),
            format!(
                "server {:?} added ({}; {} tool(s), {} prompt(s), {} resource(s), {} prefix(es) allowed)",
                after.id,
                binding_kind(after),
                after.allowed_tools.len(),
                after.allowed_prompts.len(),
                after.allowed_resources.len(),
                after.allowed_resource_prefixes.len()
            ),
        );
    }
    BundleDiff {
        changes: out.changes,
    }
}

fn bundle_wide(out: &mut Out, old: &BundleContent, new: &BundleContent) {
    use ChangeKind::*;
    if old.bundle_id != new.bundle_id {
        out.push(
            BundleIdChanged,
            None,
            Some(json!(old.bundle_id)),
            Some(json!(new.bundle_id)),
            format!(
                "bundle id {:?} became {:?}: a different bundle, not a rotation of the old one",
                old.bundle_id, new.bundle_id
            ),
        );
    }
    if old.spec_version != new.spec_version {
        out.push(
            SpecVersionChanged,
            None,
            Some(json!(old.spec_version)),
            Some(json!(new.spec_version)),
            format!(
                "specVersion {} became {}",
                old.spec_version, new.spec_version
            ),
        );
    }
    // Root keys: who may sign the next rotation.
    for key in &new.root_keys {
        match old.root_keys.iter().find(|k| k.id == key.id) {
            None => out.push(
                RootKeyAdded,
                None,
                None,
                Some(json!(key.id)),
                format!("root key {:?} added", key.id),
            ),
            Some(was) if was.public_key != key.public_key => out.push(
                RootKeyReplaced,
                None,
                Some(json!(hex::encode(was.public_key.as_bytes()))),
                Some(json!(hex::encode(key.public_key.as_bytes()))),
                format!("root key {:?} is now a different public key", key.id),
            ),
            Some(_) => {}
        }
    }
    for key in old
        .root_keys
        .iter()
        .filter(|k| !new.root_keys.iter().any(|n| n.id == k.id))
    {
        out.push(
            RootKeyRemoved,
            None,
            Some(json!(key.id)),
            None,
            format!("root key {:?} removed", key.id),
        );
    }
    if new.threshold != old.threshold {
        let kind = if new.threshold < old.threshold {
            ThresholdLowered
        } else {
            ThresholdRaised
        };
        out.push(
            kind,
            None,
            Some(json!(old.threshold)),
            Some(json!(new.threshold)),
            format!(
                "root threshold {} of {} became {} of {}",
                old.threshold,
                old.root_keys.len(),
                new.threshold,
                new.root_keys.len()
            ),
        );
    }
    if new.expires != old.expires {
        let kind = if new.expires > old.expires {
            ExpiryExtended
        } else {
            ExpiryShortened
        };
        out.push(
            kind,
            None,
            Some(json!(time_text(old.expires))),
            Some(json!(time_text(new.expires))),
            format!(
                "bundle expiry {} became {}",
                time_text(old.expires),
                time_text(new.expires)
            ),
        );
    }
    if old.locked != new.locked {
        let kind = if new.locked { LockAdded } else { LockRemoved };
        out.push(
            kind,
            None,
            Some(json!(old.locked)),
            Some(json!(new.locked)),
            if new.locked {
                "the bundle now locks the host (users can add nothing)".into()
            } else {
                "the bundle no longer locks the host (users may add servers and approvals)".into()
            },
        );
    }
    if old.posture != new.posture {
        let kind = if new.posture == Posture::Warn {
            PostureRelaxed
        } else {
            PostureTightened
        };
        out.push(
            kind,
            None,
            Some(json!(old.posture.as_str())),
            Some(json!(new.posture.as_str())),
            format!("posture {} became {}", old.posture, new.posture),
        );
    }
    audit(out, old, new);
    mode_move(
        out,
        None,
        (old.confinement_mode, new.confinement_mode),
        (BundleConfinementLoosened, BundleConfinementTightened),
        "the bundle's confinement mode",
    );
    scheme(out, &old.trust_root.scheme, &new.trust_root.scheme);
    signer_keys(out, old, new);
    if let Some((kind, detail)) = clearance_move(
        (&old.trust_root.scheme, &old.required_clearance),
        (&new.trust_root.scheme, &new.required_clearance),
    ) {
        out.push(
            kind,
            None,
            Some(json!(old.required_clearance)),
            Some(json!(new.required_clearance)),
            format!("the bundle's required clearance {detail}"),
        );
    }
}

/// Rank of a level name in a scheme, if it has it.
fn rank(scheme: &Scheme, name: &str) -> Option<i64> {
    scheme.resolve(name).map(|l| l.rank)
}

/// A required clearance moving from one (scheme, name) to another: lowered, raised or
/// unchanged, by the rank each scheme gives it.
fn clearance_move(
    (old_scheme, old): (&Scheme, &str),
    (new_scheme, new): (&Scheme, &str),
) -> Option<(ChangeKind, String)> {
    match (rank(old_scheme, old), rank(new_scheme, new)) {
        // The same rank (under the same or another name): the requirement did not move.
        (Some(a), Some(b)) if a == b => None,
        (Some(a), Some(b)) if b < a => Some((
            ChangeKind::RequiredClearanceLowered,
            format!("lowered: {old:?} (rank {a}) became {new:?} (rank {b})"),
        )),
        (Some(a), Some(b)) => Some((
            ChangeKind::RequiredClearanceRaised,
            format!("raised: {old:?} (rank {a}) became {new:?} (rank {b})"),
        )),
        // Not comparable: treated as lowered (see the module doc).
        _ => Some((
            ChangeKind::RequiredClearanceLowered,
            format!("{old:?} became {new:?}, which cannot be compared by rank"),
        )),
    }
}

fn scheme(out: &mut Out, old: &Scheme, new: &Scheme) {
    use ChangeKind::*;
    if old.name != new.name {
        out.push(
            SchemeRenamed,
            None,
            Some(json!(old.name)),
            Some(json!(new.name)),
            format!("clearance scheme {:?} became {:?}", old.name, new.name),
        );
    }
    for level in &new.levels {
        let Some(was) = old.levels.iter().find(|l| l.name == level.name) else {
            out.push(
                ClearanceLevelAdded,
                None,
                None,
                Some(json!({"name": level.name, "rank": level.rank})),
                format!(
                    "clearance level {:?} (rank {}) added",
                    level.name, level.rank
                ),
            );
            continue;
        };
        if level.rank != was.rank {
            let kind = if level.rank > was.rank {
                ClearanceRankRaised
            } else {
                ClearanceRankLowered
            };
            out.push(
                kind,
                None,
                Some(json!(was.rank)),
                Some(json!(level.rank)),
                format!(
                    "clearance level {:?} rank {} became {}",
                    level.name, was.rank, level.rank
                ),
            );
        }
        let noun = format!("alias of clearance level {:?}", level.name);
        out.members(
            None,
            &was.aliases,
            &level.aliases,
            (ClearanceAliasAdded, ClearanceAliasRemoved),
            &noun,
        );
    }
    for level in old
        .levels
        .iter()
        .filter(|l| !new.levels.iter().any(|n| n.name == l.name))
    {
        out.push(
            ClearanceLevelRemoved,
            None,
            Some(json!({"name": level.name, "rank": level.rank})),
            None,
            format!("clearance level {:?} removed", level.name),
        );
    }
}

fn not_after_value(n: &Option<NotAfter>) -> Value {
    match n {
        None => Value::Null,
        Some(NotAfter::At(t)) => json!(time_text(*t)),
        Some(NotAfter::Unparseable(raw)) => json!(raw),
    }
}

/// How long a key signs, for comparison: an unreadable `notAfter` signs nothing (rule 4
/// refuses it), none signs for ever.
fn signs_until(n: &Option<NotAfter>) -> (u8, Option<OffsetDateTime>) {
    match n {
        Some(NotAfter::Unparseable(_)) => (0, None),
        Some(NotAfter::At(t)) => (1, Some(*t)),
        None => (2, None),
    }
}

fn signer_keys(out: &mut Out, old: &BundleContent, new: &BundleContent) {
    use ChangeKind::*;
    for key in &new.trust_root.keys {
        let Some(was) = old.trust_root.key(&key.id) else {
            out.push(
                SignerKeyAdded,
                None,
                None,
                Some(json!({"id": key.id, "approvedClearances": key.approved_clearances, "notAfter": not_after_value(&key.not_after)})),
                format!(
                    "signer key {:?} added, approved for {:?}",
                    key.id, key.approved_clearances
                ),
            );
            continue;
        };
        if was.public_key != key.public_key {
            out.push(
                SignerKeyReplaced,
                None,
                Some(json!(hex::encode(was.public_key.as_bytes()))),
                Some(json!(hex::encode(key.public_key.as_bytes()))),
                format!("signer key {:?} is now a different public key", key.id),
            );
        }
        let noun = format!("clearance approved for signer key {:?}:", key.id);
        out.members(
            None,
            &was.approved_clearances,
            &key.approved_clearances,
            (SignerClearanceApproved, SignerClearanceWithdrawn),
            &noun,
        );
        let (a, b) = (signs_until(&was.not_after), signs_until(&key.not_after));
        if a != b || not_after_value(&was.not_after) != not_after_value(&key.not_after) {
            let kind = if b > a {
                SignerNotAfterExtended
            } else {
                SignerNotAfterShortened
            };
            out.push(
                kind,
                None,
                Some(not_after_value(&was.not_after)),
                Some(not_after_value(&key.not_after)),
                format!(
                    "signer key {:?} notAfter {} became {}",
                    key.id,
                    not_after_value(&was.not_after),
                    not_after_value(&key.not_after)
                ),
            );
        }
    }
    for key in old
        .trust_root
        .keys
        .iter()
        .filter(|k| new.trust_root.key(&k.id).is_none())
    {
        out.push(
            SignerKeyRemoved,
            None,
            Some(json!(key.id)),
            None,
            format!("signer key {:?} removed", key.id),
        );
    }
}

fn durability_value(d: Option<AuditDurability>) -> Value {
    match d {
        None => Value::Null,
        Some(AuditDurability::Sync) => json!({"durability": "sync"}),
        Some(AuditDurability::Batched {
            flush_ms,
            flush_records,
        }) => json!({"durability": "batched", "flushMs": flush_ms, "flushRecords": flush_records}),
    }
}

fn audit(out: &mut Out, old: &BundleContent, new: &BundleContent) {
    use ChangeKind::*;
    if old.audit != new.audit {
        // Tightened only when the new requirement is at least as strict as the old in every
        // part (what `strictest` would keep); anything else relaxes something.
        let tightened = match (old.audit, new.audit) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(a), Some(b)) => a.strictest(b) == b,
        };
        out.push(
            if tightened {
                AuditDurabilityTightened
            } else {
                AuditDurabilityRelaxed
            },
            None,
            Some(durability_value(old.audit)),
            Some(durability_value(new.audit)),
            format!(
                "audit durability {} became {}",
                durability_value(old.audit),
                durability_value(new.audit)
            ),
        );
    }
    if old.audit_retain_days != new.audit_retain_days {
        let longer = match (old.audit_retain_days, new.audit_retain_days) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(a), Some(b)) => b > a,
        };
        out.push(
            if longer {
                AuditRetentionLengthened
            } else {
                AuditRetentionShortened
            },
            None,
            Some(json!(old.audit_retain_days)),
            Some(json!(new.audit_retain_days)),
            format!(
                "audit retainDays {} became {}",
                json!(old.audit_retain_days),
                json!(new.audit_retain_days)
            ),
        );
    }
}

fn binding_kind(s: &ServerPolicy) -> &'static str {
    if s.stdio.is_some() {
        "stdio binding"
    } else if s.package.is_some() {
        "package binding"
    } else if s.vouched.is_some() {
        "vouched remote"
    } else {
        "remote (attested by the server)"
    }
}

fn server(
    out: &mut Out,
    old_bundle: &BundleContent,
    new_bundle: &BundleContent,
    old: &ServerPolicy,
    new: &ServerPolicy,
) {
    use ChangeKind::*;
    let id = Some(new.id.as_str());
    binding(out, old, new);
    out.members(
        id,
        &old.origins,
        &new.origins,
        (OriginAdded, OriginRemoved),
        "origin",
    );
    out.members(
        id,
        &old.allowed_tools,
        &new.allowed_tools,
        (ToolAllowed, ToolDisallowed),
        "allowed tool",
    );
    pins(
        out,
        id,
        (&old.tool_pins, &old.tool_definitions),
        (&new.tool_pins, &new.tool_definitions),
        &new.allowed_tools,
        (ToolPinChanged, ToolPinAdded, ToolPinRemoved),
        "tool",
    );
    out.members(
        id,
        &old.allowed_prompts,
        &new.allowed_prompts,
        (PromptAllowed, PromptDisallowed),
        "allowed prompt",
    );
    pins(
        out,
        id,
        (&old.prompt_pins, &old.prompt_definitions),
        (&new.prompt_pins, &new.prompt_definitions),
        &new.allowed_prompts,
        (PromptPinChanged, PromptPinAdded, PromptPinRemoved),
        "prompt",
    );
    out.members(
        id,
        &old.allowed_resources,
        &new.allowed_resources,
        (ResourceAllowed, ResourceDisallowed),
        "allowed resource",
    );
    out.members(
        id,
        &old.allowed_resource_prefixes,
        &new.allowed_resource_prefixes,
        (ResourcePrefixAllowed, ResourcePrefixDisallowed),
        "allowed resource prefix",
    );
    out.members(
        id,
        &old.url_elicitation_domains,
        &new.url_elicitation_domains,
        (UrlElicitationDomainAdded, UrlElicitationDomainRemoved),
        "URL-elicitation domain",
    );
    // An empty list means "whichever issuer the server names": emptying it is one widening
    // change, not a list of narrowing removals.
    if !old.authorization_servers.is_empty() && new.authorization_servers.is_empty() {
        out.push(
            AuthorizationServersUnpinned,
            id,
            Some(json!(old.authorization_servers)),
            Some(json!([])),
            "authorizationServers emptied: any issuer the server names now counts".into(),
        );
    } else if !old.authorization_servers.is_empty() {
        out.members(
            id,
            &old.authorization_servers,
            &new.authorization_servers,
            (AuthorizationServerAdded, AuthorizationServerRemoved),
            "authorization server",
        );
    } else if !new.authorization_servers.is_empty() {
        // From any issuer to a pinned list: narrows, whatever it names.
        out.push(
            AuthorizationServerRemoved,
            id,
            Some(json!([])),
            Some(json!(new.authorization_servers)),
            format!(
                "authorizationServers pinned to {:?} (any issuer the server named counted before)",
                new.authorization_servers
            ),
        );
    }
    let effective = |b: &BundleContent, s: &ServerPolicy| {
        s.required_clearance
            .clone()
            .unwrap_or_else(|| b.required_clearance.clone())
    };
    let (was, now) = (effective(old_bundle, old), effective(new_bundle, new));
    // Compared whenever the entry names its own level on either side; otherwise the bundle's
    // requirement governs it and its move is reported once, bundle-wide.
    if (old.required_clearance.is_some() || new.required_clearance.is_some())
        && let Some((kind, detail)) = clearance_move(
            (&old_bundle.trust_root.scheme, &was),
            (&new_bundle.trust_root.scheme, &now),
        )
    {
        out.push(
            kind,
            id,
            Some(json!(old.required_clearance)),
            Some(json!(new.required_clearance)),
            format!("the entry's required clearance {detail}"),
        );
    }
    confinement(out, id, old.confinement.as_ref(), new.confinement.as_ref());
}

fn mode_value(mode: Option<ConfinementMode>) -> Value {
    mode.map_or(Value::Null, |m| json!(m.as_str()))
}

/// A confinement mode moving: compared by what it adds to the strictest-wins combination,
/// where saying nothing adds what `off` adds (nothing).
fn mode_move(
    out: &mut Out,
    id: Option<&str>,
    (old, new): (Option<ConfinementMode>, Option<ConfinementMode>),
    (loosened, tightened): (ChangeKind, ChangeKind),
    noun: &str,
) {
    let weight = |m: Option<ConfinementMode>| m.unwrap_or(ConfinementMode::Off);
    let (was, now) = (weight(old), weight(new));
    if was == now {
        return;
    }
    let text = |m: Option<ConfinementMode>| m.map_or("not set", ConfinementMode::as_str);
    out.push(
        if now < was { loosened } else { tightened },
        id,
        Some(mode_value(old)),
        Some(mode_value(new)),
        format!("{noun} {} became {}", text(old), text(new)),
    );
}

fn network_value(network: &Network) -> Value {
    match network {
        Network::None => json!([]),
        Network::Hosts(hosts) => json!(hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>()),
        Network::Any => json!("any"),
    }
}

/// An entry's confinement: its mode, then each grant. An entry without one grants nothing of
/// its own (the defaults), so adding one is compared grant by grant like any other edit.
fn confinement(
    out: &mut Out,
    id: Option<&str>,
    old: Option<&EntryConfinement>,
    new: Option<&EntryConfinement>,
) {
    use ChangeKind::*;
    let nothing = Grants::default();
    let (old_mode, was) = old.map_or((None, &nothing), |c| (c.mode, &c.grants));
    let (new_mode, now) = new.map_or((None, &nothing), |c| (c.mode, &c.grants));
    mode_move(
        out,
        id,
        (old_mode, new_mode),
        (ConfinementModeLoosened, ConfinementModeTightened),
        "the entry's confinement mode",
    );
    let paths = |list: &[gatehouse_confine::PathGrant]| -> Vec<String> {
        list.iter().map(|p| p.as_str().to_string()).collect()
    };
    out.members(
        id,
        &paths(&was.read),
        &paths(&now.read),
        (ConfinementReadGranted, ConfinementReadRemoved),
        "confinement read path",
    );
    out.members(
        id,
        &paths(&was.write),
        &paths(&now.write),
        (ConfinementWriteGranted, ConfinementWriteRemoved),
        "confinement write path",
    );
    match (&was.network, &now.network) {
        (Network::Any, Network::Any) => {}
        (before, Network::Any) => out.push(
            ConfinementNetworkAny,
            id,
            Some(network_value(before)),
            Some(network_value(&now.network)),
            "the server's network is now shared: it may reach any host".into(),
        ),
        (Network::Any, after) => out.push(
            ConfinementNetworkRestricted,
            id,
            Some(network_value(&was.network)),
            Some(network_value(after)),
            format!(
                "the server may no longer reach any host, only {}",
                if now.hosts().is_empty() {
                    "none".to_string()
                } else {
                    now.hosts()
                        .iter()
                        .map(|h| h.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        ),
        _ => {
            let hosts =
                |g: &Grants| -> Vec<String> { g.hosts().iter().map(|h| h.to_string()).collect() };
            out.members(
                id,
                &hosts(was),
                &hosts(now),
                (ConfinementHostGranted, ConfinementHostRemoved),
                "confinement host",
            );
        }
    }
    if was.processes != now.processes {
        out.push(
            if now.processes > was.processes {
                ConfinementProcessesRaised
            } else {
                ConfinementProcessesLowered
            },
            id,
            Some(json!(was.processes)),
            Some(json!(now.processes)),
            format!(
                "confinement processes {} became {}",
                was.processes, now.processes
            ),
        );
    }
    if was.memory_mib != now.memory_mib {
        out.push(
            if now.memory_mib > was.memory_mib {
                ConfinementMemoryRaised
            } else {
                ConfinementMemoryLowered
            },
            id,
            Some(json!(was.memory_mib)),
            Some(json!(now.memory_mib)),
            format!(
                "confinement memory {} MiB became {} MiB",
                was.memory_mib, now.memory_mib
            ),
        );
    }
}

/// `{"pin", "definition"?}` for one side of a pin change.
fn pin_side(name: &str, pin: &str, definitions: &BTreeMap<String, Value>) -> Value {
    match definitions.get(name) {
        Some(definition) => json!({"name": name, "pin": pin, "definition": definition}),
        None => json!({"name": name, "pin": pin}),
    }
}

#[allow(clippy::too_many_arguments)]
fn pins(
    out: &mut Out,
    id: Option<&str>,
    (old, old_defs): (&BTreeMap<String, String>, &BTreeMap<String, Value>),
    (new, new_defs): (&BTreeMap<String, String>, &BTreeMap<String, Value>),
    still_allowed: &[String],
    (changed, added, removed): (ChangeKind, ChangeKind, ChangeKind),
    noun: &str,
) {
    for (name, pin) in new {
        match old.get(name) {
            Some(was) if was != pin => {
                let carried = old_defs.contains_key(name) && new_defs.contains_key(name);
                out.push(
                    changed,
                    id,
                    Some(pin_side(name, was, old_defs)),
                    Some(pin_side(name, pin, new_defs)),
                    if carried {
                        format!("{noun} {name:?} pinned to a different definition")
                    } else {
                        format!("{noun} {name:?} pin {was} became {pin} (definitions not carried)")
                    },
                );
            }
            Some(_) => {}
            // A name newly allowed and pinned: the allow-list change already widens; the pin
            // restricts it to one definition, which is the review's subject.
            None => out.push(
                added,
                id,
                None,
                Some(pin_side(name, pin, new_defs)),
                format!("{noun} {name:?} pinned to {pin}"),
            ),
        }
    }
    // A pin gone from a name that stays allowed: any definition now passes. A pin gone with
    // its name is already the name's removal.
    for (name, pin) in old
        .iter()
        .filter(|(n, _)| !new.contains_key(*n) && still_allowed.contains(n))
    {
        out.push(
            removed,
            id,
            Some(pin_side(name, pin, old_defs)),
            None,
            format!("{noun} {name:?} is no longer pinned: any definition under that name passes"),
        );
    }
}

fn package_value(p: &PinnedPackage) -> Value {
    json!({"name": p.name, "version": p.version, "artifact": p.artifact.to_text(), "path": p.path})
}

fn entry_value(e: &EntryPoint) -> Value {
    match e {
        EntryPoint::Path(path) => json!({"path": path}),
        EntryPoint::ConsoleScript(script) => json!({"consoleScript": script}),
        EntryPoint::Callable { module, function } => {
            json!({"callable": format!("{module}:{function}")})
        }
    }
}

fn interpreter_value(i: &Interpreter) -> Value {
    match i {
        Interpreter::Node { sha256, package } => json!({
            "kind": "node",
            "sha256": sha256.iter().map(hex::encode).collect::<Vec<_>>(),
            "package": package.as_ref().map(package_value),
        }),
        Interpreter::Python { sha256 } => json!({
            "kind": "python",
            "sha256": sha256.iter().map(hex::encode).collect::<Vec<_>>(),
        }),
        Interpreter::Binary => json!({"kind": "binary"}),
    }
}

fn user_arg_value(rule: &UserArgRule) -> Value {
    let (min, max) = rule.count();
    match rule {
        UserArgRule::ExistingDirectoryUnderHome { access, .. } => {
            json!({"rule": rule.rule(), "access": access, "min": min, "max": max})
        }
        UserArgRule::OneOf { values, .. } => {
            json!({"rule": rule.rule(), "values": values, "min": min, "max": max})
        }
    }
}

fn binding(out: &mut Out, old: &ServerPolicy, new: &ServerPolicy) {
    use ChangeKind::*;
    let id = Some(new.id.as_str());
    let (was_kind, now_kind) = (binding_kind(old), binding_kind(new));
    if was_kind != now_kind {
        out.push(
            BindingKindChanged,
            id,
            Some(json!(was_kind)),
            Some(json!(now_kind)),
            format!("binding {was_kind} became {now_kind}"),
        );
        return;
    }
    let mut attestations = None;
    if let (Some(a), Some(b)) = (&old.stdio, &new.stdio) {
        if a.command != b.command {
            out.push(
                StdioCommandChanged,
                id,
                Some(json!(a.command)),
                Some(json!(b.command)),
                format!("stdio command {:?} became {:?}", a.command, b.command),
            );
        }
        if a.args != b.args {
            out.push(
                StdioArgsChanged,
                id,
                Some(json!(a.args)),
                Some(json!(b.args)),
                format!("stdio args {:?} became {:?}", a.args, b.args),
            );
        }
        if a.sha256 != b.sha256 {
            out.push(
                StdioSha256Changed,
                id,
                Some(json!(hex::encode(a.sha256))),
                Some(json!(hex::encode(b.sha256))),
                "the bound executable's sha256 changed".into(),
            );
        }
        attestations = Some((&a.attestation, &b.attestation));
    }
    if let (Some(a), Some(b)) = (&old.package, &new.package) {
        package(out, id, a, b);
        attestations = Some((&a.attestation, &b.attestation));
    }
    if let (Some(a), Some(b)) = (&old.vouched, &new.vouched) {
        out.members(
            id,
            &a.endpoints,
            &b.endpoints,
            (VouchedEndpointAdded, VouchedEndpointRemoved),
            "vouched endpoint",
        );
        if a.expires != b.expires {
            out.push(
                if b.expires > a.expires {
                    VouchedExpiryExtended
                } else {
                    VouchedExpiryShortened
                },
                id,
                Some(json!(time_text(a.expires))),
                Some(json!(time_text(b.expires))),
                format!(
                    "vouch expiry {} became {}",
                    time_text(a.expires),
                    time_text(b.expires)
                ),
            );
        }
        attestations = Some((&a.attestation, &b.attestation));
    }
    if let Some((a, b)) = attestations
        && a != b
    {
        out.push(
            BindingAttestationChanged,
            id,
            Some(a.clone()),
            Some(b.clone()),
            "the attestation the admins sign for this server changed".into(),
        );
    }
}

fn package(out: &mut Out, id: Option<&str>, a: &PackageBinding, b: &PackageBinding) {
    use ChangeKind::*;
    if a.ecosystem != b.ecosystem || a.package != b.package {
        out.push(
            PackageChanged,
            id,
            Some(json!({"ecosystem": a.ecosystem, "package": package_value(&a.package)})),
            Some(json!({"ecosystem": b.ecosystem, "package": package_value(&b.package)})),
            format!(
                "package {} {}@{} became {} {}@{}",
                a.ecosystem.as_str(),
                a.package.name,
                a.package.version,
                b.ecosystem.as_str(),
                b.package.name,
                b.package.version
            ),
        );
    }
    if a.closure != b.closure {
        let was: Vec<Value> = a.closure.iter().map(package_value).collect();
        let now: Vec<Value> = b.closure.iter().map(package_value).collect();
        let added = now.iter().filter(|p| !was.contains(p)).count();
        let removed = was.iter().filter(|p| !now.contains(p)).count();
        out.push(
            PackageClosureChanged,
            id,
            Some(json!(was)),
            Some(json!(now)),
            format!("package closure changed: {added} entr(ies) added or changed, {removed} removed or changed"),
        );
    }
    if a.entry != b.entry {
        out.push(
            PackageEntryChanged,
            id,
            Some(entry_value(&a.entry)),
            Some(entry_value(&b.entry)),
            format!(
                "package entry {} became {}",
                entry_value(&a.entry),
                entry_value(&b.entry)
            ),
        );
    }
    if a.interpreter != b.interpreter {
        out.push(
            PackageInterpreterChanged,
            id,
            Some(interpreter_value(&a.interpreter)),
            Some(interpreter_value(&b.interpreter)),
            format!("package interpreter ({}) pin changed", b.interpreter.kind()),
        );
    }
    if a.args != b.args {
        out.push(
            PackageArgsChanged,
            id,
            Some(json!(a.args)),
            Some(json!(b.args)),
            format!("package args {:?} became {:?}", a.args, b.args),
        );
    }
    if a.user_args != b.user_args {
        out.push(
            PackageUserArgsChanged,
            id,
            Some(json!(
                a.user_args.iter().map(user_arg_value).collect::<Vec<_>>()
            )),
            Some(json!(
                b.user_args.iter().map(user_arg_value).collect::<Vec<_>>()
            )),
            "the rules for the user's own arguments changed".into(),
        );
    }
}
