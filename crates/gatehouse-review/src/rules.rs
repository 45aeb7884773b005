//! The phrase rules, matched on folded text (see [`crate::text::fold`]). The list is small and
//! explicit on purpose: each rule has a stable sub-id (the first word of a finding's `detail`)
//! and a test that fires and a near miss that does not.

use crate::FindingKind;
use regex::Regex;
use std::sync::LazyLock;

/// One phrase rule.
pub(crate) struct Rule {
    pub(crate) kind: FindingKind,
    /// Stable sub-id, written first in the finding's `detail`.
    pub(crate) id: &'static str,
    /// What the rule means, for the reviewer.
    pub(crate) says: &'static str,
    pub(crate) pattern: Regex,
    /// For rules about another tool: the capture group holding that tool's name, which must
    /// not be the reviewed definition's own name (nor "this"/"that"…).
    pub(crate) tool_group: Option<usize>,
}

// A tool name as prose writes it: optionally quoted or back-ticked.
const TOOL: &str = r#"[`'"]?([a-z0-9][a-z0-9_.\-/]*)[`'"]?"#;

fn rule(
    kind: FindingKind,
    id: &'static str,
    says: &'static str,
    pattern: &str,
    tool_group: Option<usize>,
) -> Option<Rule> {
    // The patterns are constants covered by the tests; a bad one drops only itself.
    Regex::new(pattern).ok().map(|pattern| Rule {
        kind,
        id,
        says,
        pattern,
        tool_group,
    })
}

pub(crate) static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    use FindingKind::{ModelInstruction as M, OtherToolInstruction as O};
    let when_using = format!(
        r"\b(?:when|whenever|before|after|while)\s+(?:using|calling|invoking|running)\s+(?:the\s+)?{TOOL}\s+tool\b"
    );
    let tool_must = format!(
        r"\b(?:the\s+)?{TOOL}\s+tool\s+(?:must|should|shall|needs\s+to|has\s+to|is\s+required\s+to)\b"
    );
    let instead_of =
        format!(r"\binstead\s+of\s+(?:using|calling|invoking)\s+(?:the\s+)?{TOOL}(?:\s+tool)?");
    [
        rule(
            M,
            "ignore_previous",
            "tells the model to ignore its earlier instructions",
            r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|preceding|original)\s+(?:instructions?|directions?|rules|prompts?|guidelines|messages?)\b",
            None,
        ),
        rule(
            M,
            "conceal_from_user",
            "tells the model to keep something from the user",
            r"\b(?:(?:do\s+not|don't|never|must\s+not)\s+(?:tell|inform|mention|reveal|disclose|notify|alert|show)\s+(?:[a-z]+\s+){0,3}?(?:it\s+|this\s+)?(?:to\s+)?the\s+user(?:[\s.,;:!)]|$)|don't\s+let\s+the\s+user\s+know|do\s+not\s+let\s+the\s+user\s+know|without\s+(?:telling|informing|notifying|alerting|asking)\s+the\s+user|(?:keep|hide)\s+(?:this|it)\s+(?:secret\s+)?from\s+the\s+user)",
            None,
        ),
        rule(
            M,
            "hidden_importance",
            "hides instructions behind markers the model treats as important (<IMPORTANT>, <SYSTEM>, [INST])",
            r"(?:<\s*/?\s*(?:important|system|instructions?|hidden|secret|critical)\s*>|\[/?inst\]|<<\s*/?\s*sys\s*>>|<\|im_start\|>|<\|system\|>)",
            None,
        ),
        rule(
            M,
            "read_before_use",
            "tells the model to read or send something before using the tool",
            r"\bbefore\s+(?:using|calling|invoking|running)\s+this\s+tool\s*,?\s+(?:(?:you\s+)?(?:must|should|need\s+to|have\s+to)\s+|please\s+|first\s+|always\s+)*(?:read|send|include|pass|provide|upload|attach|cat|open|fetch)\b",
            None,
        ),
        rule(
            M,
            "sensitive_file",
            "tells the model to read or send a credentials file",
            r"\b(?:must|should|need\s+to|have\s+to|always)\s+(?:first\s+)?(?:read|send|pass|include|provide|upload|attach|copy|cat)\b[^.]{0,80}?(?:~/\.ssh|\.ssh/|id_rsa|id_ed25519|id_ecdsa|\.env\b|mcp\.json|credentials\.json|\.aws/credentials|\.git-credentials|credentials\s+file|\.netrc|\.npmrc|\.pgpass)",
            None,
        ),
        rule(
            M,
            "system_prompt_override",
            "tries to replace or expose the model's system prompt",
            r"\b(?:(?:ignore|override|overrides|replace|replaces|disregard|forget|reveal|print|output|leak|bypass)\s+(?:the\s+|your\s+|any\s+|all\s+)?(?:previous\s+|original\s+|current\s+|existing\s+)?system\s+(?:prompts?|messages?|instructions)|system\s+prompt\s+(?:override|update)|new\s+system\s+prompt)\b",
            None,
        ),
        rule(
            O,
            "when_using_tool",
            "tells the model what to do when it uses another tool",
            &when_using,
            Some(1),
        ),
        rule(
            O,
            "tool_must",
            "says how another tool must be used",
            &tool_must,
            Some(1),
        ),
        rule(
            O,
            "instead_of_tool",
            "steers the model away from another tool",
            &instead_of,
            Some(1),
        ),
        rule(
            O,
            "redirect_recipient",
            "says where every message, payment or file must go",
            r"\ball\s+(?:e-?mails?|messages?|payments?|transfers?|invoices?|files?|data|requests?)\s+(?:must|should|shall|need\s+to|have\s+to)\s+(?:always\s+)?(?:be\s+)?(?:sent|forwarded|routed|redirected|copied|cc'?d|bcc'?d|addressed|transferred|uploaded)\s+to\b",
            None,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
});

/// Words that stand where a tool name goes but name no other tool ("when using this tool").
pub(crate) fn is_not_a_tool_name(word: &str) -> bool {
    matches!(
        word,
        "this"
            | "that"
            | "the"
            | "a"
            | "an"
            | "any"
            | "each"
            | "every"
            | "another"
            | "other"
            | "same"
            | "current"
            | "above"
            | "following"
            | "previous"
            | "next"
            | "your"
            | "my"
            | "its"
            | "which"
            | "such"
            | "one"
    )
}
