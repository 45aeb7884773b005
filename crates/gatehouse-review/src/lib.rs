//! What a tool, prompt or resource definition really says: invisible and direction-changing
//! characters, instructions aimed at the model, references to other servers' tools and
//! instructions about other tools, and input-schema fields asking for secrets. Pure: no I/O,
//! no clock; local heuristics whose high findings need a human's look.

mod names;
mod rules;
mod secret;
#[cfg(test)]
mod tests;
mod text;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

pub use names::offered_name;

/// How much a finding should worry the reviewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    High,
    Medium,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::High => "high",
            Severity::Medium => "medium",
        }
    }
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Tags, bidi controls, zero-width characters, variation selectors, soft hyphens, U+061C,
    /// U+FEFF and the like: text the reader does not see but the model reads.
    InvisibleCharacters,
    /// Instructions aimed at the model ("ignore previous instructions", "do not tell the
    /// user", hidden-importance markers).
    ModelInstruction,
    /// Names another configured server's tool, by its own name or by the gateway's name for
    /// it (`SERVER__TOOL`).
    OtherServerTool,
    /// Tells the model how some other tool must be used.
    OtherToolInstruction,
    /// An input-schema field asking for a secret.
    SecretRequest,
}

impl FindingKind {
    pub const ALL: [FindingKind; 5] = [
        FindingKind::InvisibleCharacters,
        FindingKind::ModelInstruction,
        FindingKind::OtherServerTool,
        FindingKind::OtherToolInstruction,
        FindingKind::SecretRequest,
    ];

    pub fn code(self) -> &'static str {
        match self {
            FindingKind::InvisibleCharacters => "invisible_characters",
            FindingKind::ModelInstruction => "model_instruction",
            FindingKind::OtherServerTool => "other_server_tool",
            FindingKind::OtherToolInstruction => "other_tool_instruction",
            FindingKind::SecretRequest => "secret_request",
        }
    }
}

/// One thing a definition says that a reviewer should see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub severity: Severity,
    /// JSON path of the string, e.g. `description`, `inputSchema.properties.token`.
    pub field: String,
    /// The text around the match, escaped, at most 120 characters.
    pub excerpt: String,
    /// The rule's stable sub-id and what it saw.
    pub detail: String,
}

/// Which kind of definition is reviewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primitive {
    Tool,
    Prompt,
    Resource,
}

/// What the review knows beyond the definition: the other configured servers' tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// `(server, tool)` pairs of every other configured server.
    pub other_tools: &'a [(&'a str, &'a str)],
}

/// At most this many findings per definition.
pub const MAX_FINDINGS: usize = 32;
/// Each string is scanned up to this many bytes.
pub const MAX_SCAN_BYTES: usize = 64 * 1024;
/// The definition is walked to this depth.
pub const MAX_DEPTH: usize = 32;
/// At most this many strings (values and keys) are scanned per definition.
pub const MAX_STRINGS: usize = 4096;
/// Excerpts are at most this many characters.
pub const MAX_EXCERPT: usize = 120;

/// Every finding in `definition` (at most [`MAX_FINDINGS`]), in the order its strings appear.
pub fn review(primitive: Primitive, definition: &Value, context: &Context) -> Vec<Finding> {
    let mut review = Review::new(definition, context);
    let mut strings = Vec::new();
    collect(definition, String::new(), 0, &mut strings);
    for item in &strings {
        review.string(item);
        if review.full() {
            break;
        }
    }
    match primitive {
        Primitive::Tool => {
            if let Some(schema) = definition.get("inputSchema") {
                review.schema(schema, "inputSchema".to_string(), 0);
            }
        }
        Primitive::Prompt => review.prompt_arguments(definition),
        Primitive::Resource => {}
    }
    review.findings.truncate(MAX_FINDINGS);
    review.findings
}

/// `text` with every invisible or direction-changing character written as `\u{XXXX}`;
/// everything else unchanged (borrowed when nothing needed escaping).
pub fn escape(text: &str) -> Cow<'_, str> {
    text::escape(text)
}

/// `other_tools` without the tools whose names `own` (the reviewed server's own listing) also
/// has. Two instances of one server (two filesystem servers for two directories) list the same
/// names, and a description naming a sibling tool ("use read_text_file instead") then refers
/// to its own server's tool, not the other's: without this every such description would be an
/// `other_server_tool` finding. Names compare as the review reads them (compatibility forms
/// folded, case ignored).
pub fn without_own<'a>(
    other_tools: &[(&'a str, &'a str)],
    own: &[&str],
) -> Vec<(&'a str, &'a str)> {
    let own: Vec<String> = own.iter().map(|name| text::fold(name)).collect();
    other_tools
        .iter()
        .filter(|(_, tool)| !own.contains(&text::fold(tool)))
        .copied()
        .collect()
}

/// Whether any finding is high.
pub fn has_high(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::High)
}

/// Whether `c` is an invisible or direction-changing code point (Unicode tags, bidi controls,
/// zero-width characters, variation selectors, soft hyphen, U+061C, U+FEFF and the other
/// default-ignorables): drawn as nothing, or as a reordering, yet read by the model.
pub fn is_invisible(c: char) -> bool {
    text::invisible_class(c).is_some()
}

/// One string of the definition and where it is.
struct Item<'a> {
    /// JSON path, unescaped (escaped when written into a finding).
    path: String,
    text: &'a str,
    /// An object key rather than a value.
    key: bool,
}

/// Every string value and object key in `value`, depth-first, to [`MAX_DEPTH`] and at most
/// [`MAX_STRINGS`].
fn collect<'a>(value: &'a Value, path: String, depth: usize, out: &mut Vec<Item<'a>>) {
    if depth > MAX_DEPTH || out.len() >= MAX_STRINGS {
        return;
    }
    match value {
        Value::String(text) => out.push(Item {
            path,
            text,
            key: false,
        }),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect(item, format!("{path}[{i}]"), depth + 1, out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let child = join(&path, key);
                if out.len() >= MAX_STRINGS {
                    return;
                }
                out.push(Item {
                    path: child.clone(),
                    text: key,
                    key: true,
                });
                collect(item, child, depth + 1, out);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The reviewer of one definition.
struct Review<'a> {
    /// The definition's own name, folded: a rule about "another tool" never means this one.
    own_name: String,
    /// Other servers' tools worth matching, lower-cased: (server, tool, distinctive).
    others: Vec<(&'a str, String, bool)>,
    /// Every other server's tool under the gateway's name for it, lower-cased: (server,
    /// tool, `SERVER__TOOL`). Always a reference when named: no word looks like one, and it
    /// names that server's tool even when the reviewed definition shares the tool's name.
    offered: Vec<(&'a str, &'a str, String)>,
    findings: Vec<Finding>,
}

impl<'a> Review<'a> {
    fn new(definition: &Value, context: &Context<'a>) -> Self {
        let own_name = definition
            .get("name")
            .and_then(Value::as_str)
            .map(text::fold)
            .unwrap_or_default();
        let others = context
            .other_tools
            .iter()
            .filter_map(|&(server, tool)| {
                let folded = text::fold(tool);
                let separated = folded.contains(['_', '-']);
                // Short plain names ("add", "get") are words, never evidence of a reference.
                if folded.is_empty()
                    || folded == own_name
                    || !(separated || folded.chars().count() >= 4)
                {
                    return None;
                }
                Some((server, folded, is_distinctive(tool)))
            })
            .collect();
        let offered = context
            .other_tools
            .iter()
            .map(|&(server, tool)| (server, tool, text::fold(&offered_name(server, tool))))
            .collect();
        Review {
            own_name,
            others,
            offered,
            findings: Vec::new(),
        }
    }

    fn full(&self) -> bool {
        self.findings.len() >= MAX_FINDINGS
    }

    fn push(
        &mut self,
        kind: FindingKind,
        severity: Severity,
        path: &str,
        excerpt: String,
        detail: String,
    ) {
        if self.full() {
            return;
        }
        let field = escape(path).into_owned();
        // One finding per rule and field: the first match says enough.
        let rule = detail.split(':').next().unwrap_or_default();
        if self.findings.iter().any(|f| {
            f.kind == kind
                && f.field == field
                && f.detail.split(':').next().unwrap_or_default() == rule
        }) {
            return;
        }
        self.findings.push(Finding {
            kind,
            severity,
            field,
            excerpt,
            detail,
        });
    }

    fn string(&mut self, item: &Item) {
        let scanned = text::cap(item.text, MAX_SCAN_BYTES);
        self.invisible(item, scanned);
        let folded = text::fold(scanned);
        self.phrases(item, &folded, "");
        let smuggled = text::decode_tags(scanned);
        if !smuggled.is_empty() {
            self.phrases(
                item,
                &text::fold(&smuggled),
                " (spelled in invisible Unicode tag characters)",
            );
        }
        // The definition's own name is its name, not a reference; keys are schema structure.
        if !item.key && item.path != "name" {
            self.other_server_tools(item, &folded);
        }
    }

    fn invisible(&mut self, item: &Item, scanned: &str) {
        let mut first: Option<(usize, char)> = None;
        let mut class: Option<text::InvisibleClass> = None;
        let mut count = 0usize;
        let mut seen: Vec<char> = Vec::new();
        for (at, c) in scanned.char_indices() {
            let Some(this) = text::invisible_class(c) else {
                continue;
            };
            count += 1;
            first.get_or_insert((at, c));
            class = Some(class.map_or(this, |old| old.min(this)));
            if seen.len() < 4 && !seen.contains(&c) {
                seen.push(c);
            }
        }
        let (Some((at, c)), Some(class)) = (first, class) else {
            return;
        };
        let smuggled = text::decode_tags(scanned);
        let tags = if smuggled.is_empty() {
            String::new()
        } else {
            format!(" [tags: \"{}\"]", text::clip(&smuggled, 60))
        };
        let room = MAX_EXCERPT.saturating_sub(tags.chars().count()).max(20);
        let excerpt = text::clip(
            &format!(
                "{}{tags}",
                text::window(scanned, at, at + c.len_utf8(), room)
            ),
            MAX_EXCERPT,
        );
        let listed: Vec<String> = seen
            .iter()
            .map(|c| format!("U+{:04X}", *c as u32))
            .collect();
        let more = if count > seen.len() { ", …" } else { "" };
        let place = if item.key { " in a key" } else { "" };
        self.push(
            FindingKind::InvisibleCharacters,
            Severity::High,
            &item.path,
            excerpt,
            format!(
                "{}: {count} invisible or direction-changing character{}{place} ({}{more})",
                class.code(),
                if count == 1 { "" } else { "s" },
                listed.join(", ")
            ),
        );
    }

    fn phrases(&mut self, item: &Item, folded: &str, note: &str) {
        for rule in rules::RULES.iter() {
            let hit = rule.pattern.captures_iter(folded).find_map(|captures| {
                let whole = captures.get(0)?;
                let Some(group) = rule.tool_group else {
                    return Some((whole, None));
                };
                let tool = captures
                    .get(group)?
                    .as_str()
                    .trim_end_matches(['.', '/', '-']);
                if tool.is_empty() || tool == self.own_name || rules::is_not_a_tool_name(tool) {
                    return None;
                }
                Some((whole, Some(tool.to_string())))
            });
            let Some((whole, tool)) = hit else { continue };
            let about = tool
                .map(|t| format!(" (`{}`)", escape(&t)))
                .unwrap_or_default();
            self.push(
                rule.kind,
                Severity::High,
                &item.path,
                text::window(folded, whole.start(), whole.end(), MAX_EXCERPT),
                format!("{}: {}{about}{note}", rule.id, rule.says),
            );
        }
    }

    fn other_server_tools(&mut self, item: &Item, folded: &str) {
        let mut hits = Vec::new();
        for (server, tool, distinctive) in &self.others {
            if let Some((start, end)) = find_reference(folded, tool, *distinctive) {
                hits.push((
                    start,
                    end,
                    format!(
                        "tool_name: names `{}`, a tool of server `{}`",
                        escape(tool),
                        escape(server)
                    ),
                ));
            }
        }
        for (server, tool, offered) in &self.offered {
            if let Some((start, end)) = find_reference(folded, offered, true) {
                hits.push((
                    start,
                    end,
                    format!(
                        "gateway_name: names `{}`, the gateway's name for tool `{}` of server `{}`",
                        escape(offered),
                        escape(tool),
                        escape(server)
                    ),
                ));
            }
        }
        for (start, end, detail) in hits {
            let excerpt = text::window(folded, start, end, MAX_EXCERPT);
            // Several servers' tools may be named in one field; each is its own finding.
            if self.findings.iter().any(|f| {
                f.kind == FindingKind::OtherServerTool
                    && f.field == escape(&item.path)
                    && f.detail == detail
            }) {
                continue;
            }
            if self.full() {
                return;
            }
            self.findings.push(Finding {
                kind: FindingKind::OtherServerTool,
                severity: Severity::High,
                field: escape(&item.path).into_owned(),
                excerpt,
                detail,
            });
        }
    }

    /// Input-schema properties that ask for a secret, to [`MAX_DEPTH`].
    fn schema(&mut self, schema: &Value, path: String, depth: usize) {
        if depth > MAX_DEPTH || self.full() {
            return;
        }
        let Some(map) = schema.as_object() else {
            return;
        };
        if let Some(properties) = map.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                let at = format!("{path}.properties.{name}");
                self.secret_field(name, property, &at);
                self.schema(property, at, depth + 1);
            }
        }
        if let Some(items) = map.get("items") {
            self.schema(items, format!("{path}.items"), depth + 1);
        }
        if let Some(extra) = map.get("additionalProperties") {
            self.schema(extra, format!("{path}.additionalProperties"), depth + 1);
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(options) = map.get(key).and_then(Value::as_array) {
                for (i, option) in options.iter().enumerate() {
                    self.schema(option, format!("{path}.{key}[{i}]"), depth + 1);
                }
            }
        }
        for key in ["$defs", "definitions"] {
            if let Some(defs) = map.get(key).and_then(Value::as_object) {
                for (name, def) in defs {
                    self.schema(def, format!("{path}.{key}.{name}"), depth + 1);
                }
            }
        }
    }

    /// A prompt's arguments that ask for a secret.
    fn prompt_arguments(&mut self, definition: &Value) {
        let Some(arguments) = definition.get("arguments").and_then(Value::as_array) else {
            return;
        };
        for (i, argument) in arguments.iter().enumerate().take(MAX_STRINGS) {
            let Some(name) = argument.get("name").and_then(Value::as_str) else {
                continue;
            };
            self.secret_field(name, argument, &format!("arguments[{i}]"));
        }
    }

    /// One field: high when its name or title names a secret (or its format is `password`),
    /// medium when only its description hints at one.
    fn secret_field(&mut self, name: &str, field: &Value, path: &str) {
        let description = field
            .get("description")
            .and_then(Value::as_str)
            .map(|d| text::cap(d, MAX_SCAN_BYTES));
        let description_words = description.map(secret::words).unwrap_or_default();
        let pagination = secret::is_pagination(&description_words);
        let named = |text: &str| {
            let words = secret::words(text);
            secret::secret_term(&words).filter(|term| !(pagination && term == "token"))
        };
        let title = field
            .get("title")
            .and_then(Value::as_str)
            .map(|t| text::cap(t, MAX_SCAN_BYTES));
        let format_password = field.get("format").and_then(Value::as_str) == Some("password");
        let by_name = named(text::cap(name, MAX_SCAN_BYTES))
            .map(|term| (term, "name"))
            .or_else(|| title.and_then(named).map(|term| (term, "title")))
            .or_else(|| format_password.then(|| ("password".to_string(), "format")));
        if let Some((term, place)) = by_name {
            self.push(
                FindingKind::SecretRequest,
                Severity::High,
                path,
                text::clip(&escape(name), MAX_EXCERPT),
                format!("secret_field: the field's {place} asks for a secret ({term})"),
            );
            return;
        }
        let Some(description) = description else {
            return;
        };
        let hint =
            secret::secret_term(&description_words).filter(|term| !(pagination && term == "token"));
        if let Some(term) = hint {
            self.push(
                FindingKind::SecretRequest,
                Severity::Medium,
                &format!("{path}.description"),
                text::clip(&escape(description), MAX_EXCERPT),
                format!("secret_description: the field's description mentions a secret ({term})"),
            );
        }
    }
}

/// Whether a tool name is unlike an ordinary word: it has a separator, a digit or a case
/// hump (`send_email`, `getTinyImage`, `s3-put`), so finding it in prose is a reference.
fn is_distinctive(tool: &str) -> bool {
    let chars: Vec<char> = tool.chars().collect();
    chars
        .iter()
        .any(|c| matches!(c, '_' | '-' | '.' | '/') || c.is_numeric())
        || chars
            .windows(2)
            .any(|w| w[0].is_lowercase() && w[1].is_uppercase())
}

/// Where `tool` (folded) is named in `folded` as a whole identifier. A plain word ("search")
/// counts only when marked as a tool: quoted or back-ticked, or followed by "tool".
fn find_reference(folded: &str, tool: &str, distinctive: bool) -> Option<(usize, usize)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let mut from = 0;
    while let Some(offset) = folded.get(from..)?.find(tool) {
        let start = from + offset;
        let end = start + tool.len();
        let before = folded[..start].chars().next_back();
        let after = folded[end..].chars().next();
        let whole = !before.is_some_and(ident) && !after.is_some_and(ident);
        if whole {
            let quoted =
                matches!(before, Some('`' | '"' | '\'')) && matches!(after, Some('`' | '"' | '\''));
            let rest = folded[end..].trim_start_matches(['`', '"', '\'']);
            let called_tool = rest
                .strip_prefix(" tool")
                .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric()));
            if distinctive || quoted || called_tool {
                return Some((start, end));
            }
        }
        from = end;
    }
    None
}
