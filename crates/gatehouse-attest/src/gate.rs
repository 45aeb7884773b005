//! Tool authorization (docs/atsa.md §4): decides whether a `tools/call` for a name may leave the
//! host.
//!
//! Admitting a server never authorizes its tools. Each admitted server has a closed allow-list
//! ([`AllowList`]); a name is on it only if its bytes equal an entry's bytes. Names that differ
//! by case, Unicode look-alikes, invisible or bidi characters, surrounding spaces, NUL, path or
//! shell punctuation are different names. A look-alike is only ever *named* in a denial's detail,
//! to help people spot spoofing; it never allows.
//!
//! Tool pins go beyond the SEP: the SHA-256 of the RFC 8785 form of the whole tool definition
//! ([`crate::pins`]). A pinned tool is callable only while the server's latest `tools/list`
//! ([`ToolGate::observe`]) carries exactly the pinned definition.
//!
//! [`Permit`] can only be minted by [`ToolGate::check`]. Pure: the host passes in the allow-list
//! and every `tools/list` it receives; nothing here reads the network, the disk or a clock.

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write as _};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::bundle::ServerPolicy;
use crate::names::{look_alike_fold, shown};
use crate::pins::{format_pin, parse_pin, tool_digest};

/// Where an allow-list entry came from (shown in audit records as the allow-list scope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// An admin bundle, as `bundleId@version`.
    Bundle(String),
    /// Approved by the user, where the posture allows it.
    User,
}

impl Scope {
    /// `bundle:acme@7` or `user`.
    pub fn label(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Bundle(label) => write!(f, "bundle:{label}"),
            Scope::User => f.write_str("user"),
        }
    }
}

/// One allow-list entry: where it came from and, when pinned, the SHA-256 of the JCS of the
/// tool's whole definition.
#[derive(Debug, Clone)]
pub struct AllowEntry {
    pub scope: Scope,
    pub pin: Option<[u8; 32]>,
}

#[derive(Debug, Clone)]
struct Slot {
    entry: AllowEntry,
    // Shared with every Permit for this name, so a successful check allocates nothing.
    name: Arc<str>,
    scope: Arc<Scope>,
    // Computed once so a denial's look-alike hint does not refold the whole list.
    folded: String,
}

/// What a name gate guards: tools and prompts are both named, listed, allow-listed by exact
/// name and pinned by the hash of their whole definition; only the words and codes differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Tool,
    Prompt,
}

impl Kind {
    /// `tool` or `prompt`, as details name it.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
        }
    }

    fn listing(self) -> &'static str {
        match self {
            Kind::Tool => "tools/list",
            Kind::Prompt => "prompts/list",
        }
    }

    fn not_admitted(self) -> GateReason {
        match self {
            Kind::Tool => GateReason::ToolNotAdmitted,
            Kind::Prompt => GateReason::PromptNotAdmitted,
        }
    }

    /// Pinned, but not in the server's current listing.
    pub fn not_listed(self) -> GateReason {
        match self {
            Kind::Tool => GateReason::ToolNotListed,
            Kind::Prompt => GateReason::PromptNotListed,
        }
    }

    fn pin_mismatch(self) -> GateReason {
        match self {
            Kind::Tool => GateReason::ToolPinMismatch,
            Kind::Prompt => GateReason::PromptPinMismatch,
        }
    }
}

/// Closed allow-list: exact tool-name bytes → entry.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    // Ordered so that `names()` and pin mismatches come out the same on every run.
    entries: BTreeMap<String, Slot>,
}

impl AllowList {
    pub fn new() -> Self {
        Self::default()
    }

    /// The allow-list a bundle's server policy grants: every `allowedTools` name, pinned where
    /// `toolPins` says so. Fails on a pin that is not `sha256:<64 lower-case hex>` or that names
    /// a tool outside `allowedTools` (both already refused when a bundle is parsed).
    pub fn from_policy(policy: &ServerPolicy, bundle_label: &str) -> Result<AllowList, String> {
        Self::from_names(
            &policy.allowed_tools,
            &policy.tool_pins,
            Kind::Tool,
            bundle_label,
        )
    }

    /// The prompt allow-list a bundle's server policy grants: `allowedPrompts`, pinned where
    /// `promptPins` says so.
    pub fn prompts_from_policy(
        policy: &ServerPolicy,
        bundle_label: &str,
    ) -> Result<AllowList, String> {
        Self::from_names(
            &policy.allowed_prompts,
            &policy.prompt_pins,
            Kind::Prompt,
            bundle_label,
        )
    }

    fn from_names(
        names: &[String],
        pins: &BTreeMap<String, String>,
        kind: Kind,
        bundle_label: &str,
    ) -> Result<AllowList, String> {
        if let Some(stray) = pins.keys().find(|name| !names.contains(name)) {
            return Err(format!(
                "the pin for {} names a {} that is not on the allow-list",
                shown(stray),
                kind.noun()
            ));
        }
        let mut list = AllowList::new();
        for name in names {
            let pin = pins.get(name).map(|pin| parse_pin(pin)).transpose()?;
            list.allow(name.as_str(), Scope::Bundle(bundle_label.to_string()), pin);
        }
        Ok(list)
    }

    /// Adds or replaces an entry (a later entry for the same exact name replaces the earlier:
    /// the host adds bundle entries first, then user approvals where posture allows).
    pub fn allow(&mut self, name: impl Into<String>, scope: Scope, pin: Option<[u8; 32]>) {
        let name = name.into();
        let slot = Slot {
            name: Arc::from(name.as_str()),
            scope: Arc::new(scope.clone()),
            folded: look_alike_fold(&name),
            entry: AllowEntry { scope, pin },
        };
        self.entries.insert(name, slot);
    }

    /// The entry for exactly these bytes.
    pub fn get(&self, name: &str) -> Option<&AllowEntry> {
        self.entries.get(name).map(|slot| &slot.entry)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The allowed names, in byte order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// An allowed name that equals `name` after the look-alike fold (for denial details only).
    fn look_alike_of(&self, name: &str) -> Option<&str> {
        let folded = look_alike_fold(name);
        if folded.is_empty() {
            return None;
        }
        self.entries
            .iter()
            .find(|(allowed, slot)| slot.folded == folded && allowed.as_str() != name)
            .map(|(allowed, _)| allowed.as_str())
    }
}

/// Why a tool call was refused. The snake_case name is stable: it appears unchanged in the CLI's
/// JSON, the audit log and the UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateReason {
    /// ATSA registry code 9: the name is not on the allow-list (compared byte for byte).
    ToolNotAdmitted,
    /// The pinned tool's current definition hashes differently from its pin.
    ToolPinMismatch,
    /// The tool is pinned, but the server's current `tools/list` does not contain it, so the
    /// pin cannot be checked.
    ToolNotListed,
    /// The prompt name is not on the prompt allow-list (compared byte for byte).
    PromptNotAdmitted,
    /// The pinned prompt's current definition hashes differently from its pin.
    PromptPinMismatch,
    /// The prompt is pinned, but the server's current `prompts/list` does not contain it.
    PromptNotListed,
    /// The URI is neither an allowed URI nor under an allowed prefix ([`crate::resources`]).
    ResourceNotAdmitted,
    /// The URI starts with an allowed prefix but its remainder breaks the grammar of
    /// [`crate::resources::remainder`] (a query or fragment, a dot segment, an escape a server
    /// may decode into syntax, a look-alike NFKC rewrites): refused rather than normalized.
    ResourceUriRefused,
}

impl GateReason {
    pub fn as_str(self) -> &'static str {
        match self {
            GateReason::ToolNotAdmitted => "tool_not_admitted",
            GateReason::ToolPinMismatch => "tool_pin_mismatch",
            GateReason::ToolNotListed => "tool_not_listed",
            GateReason::PromptNotAdmitted => "prompt_not_admitted",
            GateReason::PromptPinMismatch => "prompt_pin_mismatch",
            GateReason::PromptNotListed => "prompt_not_listed",
            GateReason::ResourceNotAdmitted => "resource_not_admitted",
            GateReason::ResourceUriRefused => "resource_uri_refused",
        }
    }

    /// The ATSA registry code; pins are Gatehouse's own, so only `tool_not_admitted` has one.
    pub fn code(self) -> Option<u8> {
        match self {
            GateReason::ToolNotAdmitted => Some(9),
            GateReason::ToolPinMismatch
            | GateReason::ToolNotListed
            | GateReason::PromptNotAdmitted
            | GateReason::PromptPinMismatch
            | GateReason::PromptNotListed
            | GateReason::ResourceNotAdmitted
            | GateReason::ResourceUriRefused => None,
        }
    }
}

impl fmt::Display for GateReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a tool call, a prompt or a resource read may not leave the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Denial {
    pub reason: GateReason,
    /// The requested name (or URI), exactly as asked for.
    pub tool: String,
    /// For people: what exactly failed, with the name escaped so invisible characters show.
    pub detail: String,
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason.code() {
            Some(code) => write!(f, "{} (code {code}): {}", self.reason, self.detail),
            None => write!(f, "{}: {}", self.reason, self.detail),
        }
    }
}

impl std::error::Error for Denial {}

/// Proof that the gate let this exact tool name through. Only [`ToolGate::check`] makes one.
///
/// ```
/// use gatehouse_attest::gate::{AllowList, Scope, ToolGate};
/// use gatehouse_attest::pins::tool_digest;
/// let echo = serde_json::json!({"name": "echo", "inputSchema": {"type": "object"}});
/// let mut allow = AllowList::new();
/// allow.allow("echo", Scope::Bundle("acme@7".into()), Some(tool_digest(&echo)));
/// let mut gate = ToolGate::new(allow);
/// assert!(gate.observe(&[echo]).is_empty());
/// let permit = gate.check("echo").unwrap();
/// assert_eq!((permit.tool(), permit.scope().label(), permit.pinned()), ("echo", "bundle:acme@7".into(), true));
/// ```
///
/// ```compile_fail
/// // The fields are private: a `Permit` cannot be built outside this crate…
/// let forged = gatehouse_attest::gate::Permit { kind: gatehouse_attest::gate::Kind::Tool, name: "echo".into(), scope: gatehouse_attest::gate::Scope::User.into(), pinned: false };
/// ```
///
/// ```compile_fail
/// // …nor copied into a second call…
/// fn twice(p: &gatehouse_attest::gate::Permit) -> gatehouse_attest::gate::Permit { p.clone() }
/// ```
///
/// ```compile_fail
/// // …nor defaulted…
/// let forged = <gatehouse_attest::gate::Permit as Default>::default();
/// ```
///
/// ```compile_fail
/// // …nor read from JSON.
/// let forged: gatehouse_attest::gate::Permit = serde_json::from_str("{}").unwrap();
/// ```
#[derive(Debug)]
#[must_use]
pub struct Permit {
    kind: Kind,
    name: Arc<str>,
    scope: Arc<Scope>,
    pinned: bool,
}

impl Permit {
    /// The allowed name (byte-equal to the requested one).
    pub fn tool(&self) -> &str {
        &self.name
    }
    /// Whether this permits a tool call or a prompt.
    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// The allow-list scope of the entry that allowed it.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }
    /// Whether the entry is pinned (and so the definition was checked against the pin).
    pub fn pinned(&self) -> bool {
        self.pinned
    }
}

/// How one listed tool is classified for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolStatus {
    Allowed,
    /// Not on the allow-list: not callable; developers see it marked as not admitted.
    Hidden,
    /// On the allow-list but not callable. `expected` is the `sha256:<hex>` pin; `actual` is
    /// the current definition's, or empty when the tool is not listed.
    Blocked {
        reason: GateReason,
        expected: String,
        actual: String,
    },
}

/// A pinned tool whose current definition differs from its pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinMismatch {
    pub tool: String,
    /// The pin, `sha256:<hex>`.
    pub expected: String,
    /// The current definition's pin, `sha256:<hex>`.
    pub actual: String,
    pub scope: Scope,
}

/// The per-server gate: the allow-list plus what the server's latest `tools/list` said. The
/// same gate guards prompts ([`ToolGate::for_prompts`]) against `prompts/list`.
#[derive(Debug, Clone)]
pub struct ToolGate {
    kind: Kind,
    allow: AllowList,
    // Name → SHA-256 of the JCS of the whole definition, from the latest tools/list.
    observed: HashMap<String, [u8; 32]>,
}

enum Verdict<'a> {
    NotAdmitted,
    NotListed(&'a Slot, [u8; 32]),
    Mismatch(&'a Slot, [u8; 32], [u8; 32]),
    Allowed(&'a Slot),
}

impl ToolGate {
    /// A gate that has observed no tools yet: pinned tools are not callable until
    /// [`ToolGate::observe`] has seen their definitions.
    pub fn new(allow: AllowList) -> Self {
        ToolGate {
            kind: Kind::Tool,
            allow,
            observed: HashMap::new(),
        }
    }

    /// The same gate for prompts: names from `allowedPrompts`, pins over whole prompt
    /// definitions, observations from `prompts/list`, `prompt_*` reasons.
    pub fn for_prompts(allow: AllowList) -> Self {
        ToolGate {
            kind: Kind::Prompt,
            allow,
            observed: HashMap::new(),
        }
    }

    /// What this gate guards.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn allow_list(&self) -> &AllowList {
        &self.allow
    }

    /// Records the server's current tool definitions (each a JSON object with at least a string
    /// `"name"`; others cannot be called and are skipped), replacing earlier observations, and
    /// returns the pinned tools whose definition differs from the pin, in name order.
    pub fn observe(&mut self, tools: &[Value]) -> Vec<PinMismatch> {
        let mut observed: HashMap<String, [u8; 32]> = HashMap::with_capacity(tools.len());
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let digest = tool_digest(tool);
            let pin = self.allow.get(name).and_then(|entry| entry.pin);
            observed
                .entry(name.to_string())
                // A name listed twice keeps a definition that differs from its pin, if any, so
                // a matching duplicate cannot hide a changed one.
                .and_modify(|kept| {
                    if pin == Some(*kept) {
                        *kept = digest;
                    }
                })
                .or_insert(digest);
        }
        self.observed = observed;
        self.allow
            .entries
            .values()
            .filter_map(|slot| {
                let pin = slot.entry.pin?;
                let actual = self.observed.get(&*slot.name)?;
                (*actual != pin).then(|| PinMismatch {
                    tool: slot.name.to_string(),
                    expected: format_pin(&pin),
                    actual: format_pin(actual),
                    scope: slot.entry.scope.clone(),
                })
            })
            .collect()
    }

    fn verdict(&self, name: &str) -> Verdict<'_> {
        let Some(slot) = self.allow.entries.get(name) else {
            return Verdict::NotAdmitted;
        };
        let Some(pin) = slot.entry.pin else {
            return Verdict::Allowed(slot);
        };
        match self.observed.get(name) {
            None => Verdict::NotListed(slot, pin),
            Some(actual) if *actual != pin => Verdict::Mismatch(slot, pin, *actual),
            Some(_) => Verdict::Allowed(slot),
        }
    }

    /// The per-call check: not on the allow-list (exact bytes) → `tool_not_admitted`; pinned
    /// and not in the latest `tools/list` → `tool_not_listed`; pinned and the listed definition
    /// differs → `tool_pin_mismatch`; otherwise a [`Permit`]. No JSON work and no allocation
    /// when the call is allowed.
    pub fn check(&self, name: &str) -> Result<Permit, Denial> {
        let (reason, detail) = match self.verdict(name) {
            Verdict::Allowed(slot) => {
                return Ok(Permit {
                    kind: self.kind,
                    name: Arc::clone(&slot.name),
                    scope: Arc::clone(&slot.scope),
                    pinned: slot.entry.pin.is_some(),
                });
            }
            Verdict::NotAdmitted => {
                let noun = self.kind.noun();
                let mut detail = format!(
                    "the {noun} {} is not on this server's allow-list",
                    shown(name)
                );
                if let Some(allowed) = self.allow.look_alike_of(name) {
                    let _ = write!(
                        detail,
                        "; it differs from the allowed {noun} {} only by look-alike characters; \
                         names are compared byte for byte",
                        shown(allowed)
                    );
                }
                (self.kind.not_admitted(), detail)
            }
            Verdict::NotListed(slot, pin) => (
                self.kind.not_listed(),
                format!(
                    "the {} {} is pinned ({}, {}) but the server's current {} does \
                     not include it, so its definition cannot be checked",
                    self.kind.noun(),
                    shown(name),
                    slot.entry.scope,
                    format_pin(&pin),
                    self.kind.listing(),
                ),
            ),
            Verdict::Mismatch(slot, pin, actual) => (
                self.kind.pin_mismatch(),
                format!(
                    "the definition of the {} {} changed since it was approved ({}): pinned \
                     {}, now {}; it stays blocked until it is re-approved",
                    self.kind.noun(),
                    shown(name),
                    slot.entry.scope,
                    format_pin(&pin),
                    format_pin(&actual)
                ),
            ),
        };
        Err(Denial {
            reason,
            tool: name.to_string(),
            detail,
        })
    }

    /// Classification of a listed tool name, for the "tools" output.
    pub fn status(&self, name: &str) -> ToolStatus {
        match self.verdict(name) {
            Verdict::Allowed(_) => ToolStatus::Allowed,
            Verdict::NotAdmitted => ToolStatus::Hidden,
            Verdict::NotListed(_, pin) => ToolStatus::Blocked {
                reason: self.kind.not_listed(),
                expected: format_pin(&pin),
                actual: String::new(),
            },
            Verdict::Mismatch(_, pin, actual) => ToolStatus::Blocked {
                reason: self.kind.pin_mismatch(),
                expected: format_pin(&pin),
                actual: format_pin(&actual),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_have_stable_names_and_only_not_admitted_has_a_registry_code() {
        for (reason, name, code) in [
            (GateReason::ToolNotAdmitted, "tool_not_admitted", Some(9)),
            (GateReason::ToolPinMismatch, "tool_pin_mismatch", None),
            (GateReason::ToolNotListed, "tool_not_listed", None),
        ] {
            assert_eq!(reason.as_str(), name);
            assert_eq!(serde_json::to_value(reason).unwrap(), name);
            assert_eq!(reason.code(), code);
        }
        assert_eq!(
            GateReason::ToolNotAdmitted.code().map(usize::from),
            Some(crate::Reason::ToolNotAdmitted.code().into())
        );
    }

    #[test]
    fn scope_labels() {
        assert_eq!(Scope::Bundle("acme@7".into()).label(), "bundle:acme@7");
        assert_eq!(Scope::User.label(), "user");
    }

    #[test]
    fn the_fold_catches_look_alikes_and_keeps_different_names_apart() {
        for look_alike in [
            "Echo",
            "ECHO",
            "есho",
            "ech\u{043e}",
            "ech\u{03bf}",
            "ЕСНО",
            "echo\u{200b}",
            "\u{feff}echo",
            "\u{202e}echo\u{202c}",
            "\u{2066}echo\u{2069}",
            "e\u{00ad}cho",
            " echo\n",
            "echo\0",
            "ｅｃｈｏ",
        ] {
            assert_eq!(look_alike_fold(look_alike), "echo", "{look_alike:?}");
        }
        for different in ["ech", "echo2", "../echo", "echo;rm -rf /", "echo/", "e cho"] {
            assert_ne!(look_alike_fold(different), "echo", "{different:?}");
        }
    }

    #[test]
    fn shown_names_make_every_odd_character_visible() {
        assert_eq!(shown("echo"), "\"echo\"");
        assert_eq!(shown("echo\u{200b}"), "\"echo\\u{200b}\"");
        assert_eq!(shown("\u{202e}echo"), "\"\\u{202e}echo\"");
        assert_eq!(shown("echo\0"), "\"echo\\0\"");
        assert_eq!(
            shown("ech\u{043e}"),
            "\"ech\u{043e}\" (as code points: \"ech\\u{43e}\")"
        );
        let long = "a".repeat(1000);
        let text = shown(&long);
        assert!(text.len() < 200, "{text}");
        assert!(
            text.ends_with("(the first 128 of 1000 characters)"),
            "{text}"
        );
    }
}
