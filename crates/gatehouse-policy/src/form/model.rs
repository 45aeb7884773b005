//! The field model: what a parsed `requestedSchema` is, shared by parsing, validation and
//! sensitive-field detection.

use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TextFormat {
    Email,
    Uri,
    Date,
    DateTime,
}

/// One choice of a select field: the value sent and the label shown (the value when untitled).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    pub value: String,
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FieldKind {
    Text {
        min_length: Option<u64>,
        max_length: Option<u64>,
        format: Option<TextFormat>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// `enum`, titled `oneOf`, or legacy `enum` + `enumNames`.
    Select {
        choices: Vec<Choice>,
    },
    /// `type: array` with `items.enum` or `items.anyOf`.
    MultiSelect {
        choices: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Field {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    /// Validated against the field: a default that breaks the field's own rules is a schema
    /// error.
    pub default: Option<Value>,
    pub kind: FieldKind,
}

/// A parsed `requestedSchema`, fields in the server's order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FormSchema {
    pub fields: Vec<Field>,
}

impl TextFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            TextFormat::Email => "email",
            TextFormat::Uri => "uri",
            TextFormat::Date => "date",
            TextFormat::DateTime => "date-time",
        }
    }

    pub(super) fn parse(text: &str) -> Option<TextFormat> {
        Some(match text {
            "email" => TextFormat::Email,
            "uri" => TextFormat::Uri,
            "date" => TextFormat::Date,
            "date-time" => TextFormat::DateTime,
            _ => return None,
        })
    }
}

impl FormSchema {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// A JSON value's type as a problem names it ("a string", "an array"): shared by the schema's
/// and the answers' checks.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
