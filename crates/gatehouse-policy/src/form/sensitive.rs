//! Sensitive-field detection: each field of a parsed schema, the form's own prose, and the
//! properties of a schema outside the subset.

use serde::Serialize;
use serde_json::Value;

use crate::policy::FormPolicy;

use super::matcher::{Hit, Matcher, Place};
use super::model::{FieldKind, FormSchema, TextFormat};

/// Whether a field asks for a secret, and which term or format matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldCheck {
    pub name: String,
    pub sensitive: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<String>,
}

/// Sensitive-field detection over names, titles, descriptions and formats.
pub fn check_fields(policy: &FormPolicy, schema: &FormSchema) -> Vec<FieldCheck> {
    judge_fields(policy, schema)
        .into_iter()
        .map(|(check, _)| check)
        .collect()
}

/// Each field's check and, when sensitive, what matched where.
pub(crate) fn judge_fields(
    policy: &FormPolicy,
    schema: &FormSchema,
) -> Vec<(FieldCheck, Option<Hit>)> {
    let matcher = Matcher::new(policy);
    schema
        .fields
        .iter()
        .map(|field| {
            let format = match &field.kind {
                FieldKind::Text { format, .. } => format.map(TextFormat::as_str),
                _ => None,
            };
            let choices = match &field.kind {
                FieldKind::Select { choices } | FieldKind::MultiSelect { choices, .. } => {
                    choices.as_slice()
                }
                _ => &[],
            };
            let hit = matcher
                .judge(
                    &field.name,
                    field.title.as_deref(),
                    field.description.as_deref(),
                    format,
                )
                .or_else(|| matcher.judge_choices(choices.iter().map(|c| c.title.as_str())));
            let check = FieldCheck {
                name: field.name.clone(),
                sensitive: hit.is_some(),
                matched: hit.as_ref().map(|h| h.term.clone()),
            };
            (check, hit)
        })
        .collect()
}

/// The texts of a form that are not a field's: the elicitation's message and the schema's own
/// title and description, judged as prose. Each hit is named by where it was found.
pub(crate) fn judge_form_texts(
    policy: &FormPolicy,
    message: Option<&str>,
    schema: &Value,
) -> Vec<Hit> {
    let matcher = Matcher::new(policy);
    let text = |key: &str| schema.get(key).and_then(Value::as_str);
    [
        (message, Place::Message),
        (text("title"), Place::Title),
        (text("description"), Place::Description),
    ]
    .into_iter()
    .filter_map(|(text, place)| matcher.judge_prose(text?, place))
    .collect()
}

/// Sensitive-field detection on a schema that is outside the subset: every property found
/// (nested ones named with dots), judged on whatever name, title, description and format it
/// has. A password field stays a password field whatever shape the schema has.
pub(crate) fn raw_sensitive_fields(policy: &FormPolicy, schema: &Value) -> Vec<(String, Hit)> {
    fn walk(
        matcher: &Matcher,
        path: &str,
        schema: &Value,
        depth: usize,
        out: &mut Vec<(String, Hit)>,
    ) {
        if depth > 8 || out.len() >= 100 {
            return;
        }
        let Value::Object(object) = schema else {
            return;
        };
        if let Some(Value::Object(properties)) = object.get("properties") {
            for (name, property) in properties {
                let full = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                let text = |key: &str| property.get(key).and_then(Value::as_str);
                if let Some(hit) =
                    matcher.judge(name, text("title"), text("description"), text("format"))
                {
                    out.push((full.clone(), hit));
                }
                walk(matcher, &full, property, depth + 1, out);
            }
        }
        if let Some(items) = object.get("items") {
            walk(matcher, path, items, depth + 1, out);
        }
    }
    let matcher = Matcher::new(policy);
    let mut out = Vec::new();
    walk(&matcher, "", schema, 0, &mut out);
    out
}
