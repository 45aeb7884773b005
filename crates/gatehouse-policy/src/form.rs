//! The form-mode schema subset (elicitation.md §1): parse, defaults, validation, and
//! sensitive-field detection.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::policy::FormPolicy;

/// A `requestedSchema` outside the subset; the message says what and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub String);

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

/// An answer that breaks the schema: which field and what is wrong, for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    pub field: String,
    pub problem: String,
}

/// Whether a field asks for a secret, and which term or format matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldCheck {
    pub name: String,
    pub sensitive: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<String>,
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

    fn parse(text: &str) -> Option<TextFormat> {
        Some(match text {
            "email" => TextFormat::Email,
            "uri" => TextFormat::Uri,
            "date" => TextFormat::Date,
            "date-time" => TextFormat::DateTime,
            _ => return None,
        })
    }
}

/// Keywords that only annotate: accepted on every property and ignored (title and description
/// must be strings, since they are shown).
const ANNOTATIONS: &[&str] = &["title", "description", "default", "$comment", "examples"];
/// Keywords accepted at the top level besides `type`, `properties` and `required`.
const TOP_LEVEL: &[&str] = &[
    "$schema",
    "title",
    "description",
    "$comment",
    "additionalProperties",
];

fn err<T>(text: impl Into<String>) -> Result<T, SchemaError> {
    Err(SchemaError(text.into()))
}

/// Why a keyword is refused, in words a server author can act on.
fn refuse_keyword(at: &str, key: &str) -> SchemaError {
    let why = match key {
        "$ref" | "$defs" | "definitions" | "$id" | "$anchor" | "$dynamicRef" => {
            "references and definitions are not supported"
        }
        "properties" | "additionalProperties" | "patternProperties" | "required" => {
            "nested objects are not supported"
        }
        "allOf" | "anyOf" | "oneOf" | "not" | "if" | "then" | "else" => {
            "schema combinators are not supported here (only oneOf of {const, title} on a string, \
             and anyOf of {const, title} in a multi-select's items)"
        }
        "pattern" => "the MCP form subset has no pattern",
        "const" => "const is only supported inside oneOf/anyOf choices",
        _ => "it is not in the MCP form subset",
    };
    SchemaError(format!("{at}: keyword {key:?} is refused: {why}"))
}

fn only_keys(at: &str, object: &Map<String, Value>, allowed: &[&str]) -> Result<(), SchemaError> {
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(refuse_keyword(at, key)),
        None => Ok(()),
    }
}

fn opt_string(
    at: &str,
    object: &Map<String, Value>,
    key: &str,
) -> Result<Option<String>, SchemaError> {
    match object.get(key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => err(format!("{at}: {key} must be a string, not {}", kind(other))),
    }
}

fn opt_count(at: &str, object: &Map<String, Value>, key: &str) -> Result<Option<u64>, SchemaError> {
    match object.get(key) {
        None => Ok(None),
        Some(value) => match value.as_u64() {
            Some(n) => Ok(Some(n)),
            None => match value.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u32::MAX as f64 => {
                    Ok(Some(f as u64))
                }
                _ => err(format!(
                    "{at}: {key} must be a non-negative integer, not {value}"
                )),
            },
        },
    }
}

fn opt_number(
    at: &str,
    object: &Map<String, Value>,
    key: &str,
) -> Result<Option<f64>, SchemaError> {
    match object.get(key) {
        None => Ok(None),
        Some(value) => match value.as_f64() {
            Some(f) if f.is_finite() => Ok(Some(f)),
            _ => err(format!("{at}: {key} must be a number, not {value}")),
        },
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn ordered<T: PartialOrd + std::fmt::Display>(
    at: &str,
    low: Option<T>,
    high: Option<T>,
    names: (&str, &str),
) -> Result<(), SchemaError> {
    if let (Some(low), Some(high)) = (low, high)
        && low > high
    {
        return err(format!(
            "{at}: {} ({low}) is greater than {} ({high})",
            names.0, names.1
        ));
    }
    Ok(())
}

/// Non-empty, duplicate-free string values of an `enum`.
fn string_enum(at: &str, value: &Value) -> Result<Vec<String>, SchemaError> {
    let Value::Array(items) = value else {
        return err(format!("{at}: enum must be an array of strings"));
    };
    if items.is_empty() {
        return err(format!("{at}: enum must not be empty"));
    }
    let mut seen = HashSet::new();
    items
        .iter()
        .map(|item| match item {
            Value::String(text) if seen.insert(text.as_str()) => Ok(text.clone()),
            Value::String(text) => err(format!("{at}: enum lists {text:?} twice")),
            other => err(format!(
                "{at}: enum values must be strings, not {}",
                kind(other)
            )),
        })
        .collect()
}

/// `[{const, title}, …]`: exactly those two keys, both strings, consts unique.
fn titled_choices(at: &str, keyword: &str, value: &Value) -> Result<Vec<Choice>, SchemaError> {
    let Value::Array(items) = value else {
        return err(format!(
            "{at}: {keyword} must be an array of {{const, title}} objects"
        ));
    };
    if items.is_empty() {
        return err(format!("{at}: {keyword} must not be empty"));
    }
    let mut seen = HashSet::new();
    let mut choices = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let here = format!("{at}: {keyword}[{i}]");
        let Value::Object(object) = item else {
            return err(format!("{here} must be a {{const, title}} object"));
        };
        if let Some(key) = object.keys().find(|k| *k != "const" && *k != "title") {
            return err(format!(
                "{here}: only const and title are supported in a choice, not {key:?}"
            ));
        }
        let (Some(Value::String(value)), Some(Value::String(title))) =
            (object.get("const"), object.get("title"))
        else {
            return err(format!("{here} needs a string const and a string title"));
        };
        if !seen.insert(value.clone()) {
            return err(format!("{here}: const {value:?} is listed twice"));
        }
        choices.push(Choice {
            value: value.clone(),
            title: title.clone(),
        });
    }
    Ok(choices)
}

fn untitled(values: Vec<String>) -> Vec<Choice> {
    values
        .into_iter()
        .map(|value| Choice {
            title: value.clone(),
            value,
        })
        .collect()
}

fn parse_field(name: &str, value: &Value) -> Result<Field, SchemaError> {
    let at = format!("property {name:?}");
    let Value::Object(object) = value else {
        return err(format!(
            "{at} must be an object schema, not {}",
            kind(value)
        ));
    };
    let type_name = match object.get("type") {
        Some(Value::String(text)) => text.as_str(),
        Some(Value::Array(_)) => return err(format!("{at}: type arrays are not supported")),
        Some(other) => return err(format!("{at}: type must be a string, not {}", kind(other))),
        None => {
            if object.contains_key("$ref") {
                return Err(refuse_keyword(&at, "$ref"));
            }
            return err(format!("{at} has no type"));
        }
    };
    let title = opt_string(&at, object, "title")?;
    let description = opt_string(&at, object, "description")?;
    fn with(extra: &[&'static str]) -> Vec<&'static str> {
        let mut keys = vec!["type"];
        keys.extend_from_slice(ANNOTATIONS);
        keys.extend_from_slice(extra);
        keys
    }
    let kind = match type_name {
        "string" if object.contains_key("enum") && object.contains_key("oneOf") => {
            return err(format!("{at}: give enum or oneOf, not both"));
        }
        "string" if object.contains_key("enum") => {
            only_keys(&at, object, &with(&["enum", "enumNames"]))?;
            let values = string_enum(&at, &object["enum"])?;
            let choices = match object.get("enumNames") {
                None => untitled(values),
                Some(Value::Array(names)) => {
                    if names.len() != values.len() {
                        return err(format!(
                            "{at}: enumNames has {} entries but enum has {}",
                            names.len(),
                            values.len()
                        ));
                    }
                    let mut choices = Vec::with_capacity(values.len());
                    for (value, title) in values.into_iter().zip(names) {
                        let Value::String(title) = title else {
                            return err(format!("{at}: enumNames must be strings"));
                        };
                        choices.push(Choice {
                            value,
                            title: title.clone(),
                        });
                    }
                    choices
                }
                Some(_) => return err(format!("{at}: enumNames must be an array of strings")),
            };
            FieldKind::Select { choices }
        }
        "string" if object.contains_key("oneOf") => {
            only_keys(&at, object, &with(&["oneOf"]))?;
            FieldKind::Select {
                choices: titled_choices(&at, "oneOf", &object["oneOf"])?,
            }
        }
        "string" => {
            if object.contains_key("enumNames") {
                return err(format!("{at}: enumNames without enum"));
            }
            only_keys(&at, object, &with(&["minLength", "maxLength", "format"]))?;
            let min_length = opt_count(&at, object, "minLength")?;
            let max_length = opt_count(&at, object, "maxLength")?;
            ordered(&at, min_length, max_length, ("minLength", "maxLength"))?;
            let format = match opt_string(&at, object, "format")? {
                None => None,
                Some(text) => Some(TextFormat::parse(&text).ok_or_else(|| {
                    SchemaError(format!(
                        "{at}: format {text:?} is not supported (email, uri, date or date-time)"
                    ))
                })?),
            };
            FieldKind::Text {
                min_length,
                max_length,
                format,
            }
        }
        "number" | "integer" => {
            only_keys(&at, object, &with(&["minimum", "maximum"]))?;
            let minimum = opt_number(&at, object, "minimum")?;
            let maximum = opt_number(&at, object, "maximum")?;
            ordered(&at, minimum, maximum, ("minimum", "maximum"))?;
            FieldKind::Number {
                integer: type_name == "integer",
                minimum,
                maximum,
            }
        }
        "boolean" => {
            only_keys(&at, object, &with(&[]))?;
            FieldKind::Boolean
        }
        "array" => {
            only_keys(
                &at,
                object,
                &with(&["items", "minItems", "maxItems", "uniqueItems"]),
            )?;
            match object.get("uniqueItems") {
                None | Some(Value::Bool(true)) => {}
                Some(_) => {
                    return err(format!(
                        "{at}: uniqueItems may only be true (a multi-select never repeats a choice)"
                    ));
                }
            }
            let Some(Value::Object(items)) = object.get("items") else {
                return err(format!(
                    "{at}: an array must be a multi-select with items {{type: string, enum}} or {{anyOf: [{{const, title}}]}}"
                ));
            };
            let items_at = format!("{at}: items");
            match items.get("type") {
                None => {}
                Some(Value::String(t)) if t == "string" => {}
                Some(Value::String(t)) if t == "object" => {
                    return err(format!("{at}: arrays of objects are not supported"));
                }
                Some(other) => {
                    return err(format!(
                        "{items_at}: only string items are supported, not type {other}"
                    ));
                }
            }
            if items.contains_key("properties") {
                return err(format!("{at}: arrays of objects are not supported"));
            }
            let choices = match (items.get("enum"), items.get("anyOf")) {
                (Some(values), None) => {
                    only_keys(&items_at, items, &["type", "enum"])?;
                    untitled(string_enum(&items_at, values)?)
                }
                (None, Some(any_of)) => {
                    only_keys(&items_at, items, &["type", "anyOf"])?;
                    titled_choices(&items_at, "anyOf", any_of)?
                }
                (Some(_), Some(_)) => {
                    return err(format!("{items_at}: give enum or anyOf, not both"));
                }
                (None, None) => {
                    return err(format!(
                        "{items_at}: a multi-select needs enum or anyOf (free-form arrays are not supported)"
                    ));
                }
            };
            let min_items = opt_count(&at, object, "minItems")?;
            let max_items = opt_count(&at, object, "maxItems")?;
            ordered(&at, min_items, max_items, ("minItems", "maxItems"))?;
            if let Some(min) = min_items
                && min > choices.len() as u64
            {
                return err(format!(
                    "{at}: minItems ({min}) is more than the {} choices",
                    choices.len()
                ));
            }
            FieldKind::MultiSelect {
                choices,
                min_items,
                max_items,
            }
        }
        "object" => return err(format!("{at}: nested objects are not supported")),
        other => return err(format!("{at}: type {other:?} is not supported")),
    };
    let mut field = Field {
        name: name.to_string(),
        title,
        description,
        required: false,
        default: None,
        kind,
    };
    if let Some(default) = object.get("default") {
        if let Err(problem) = check_value(&field, default) {
            return err(format!("{at}: the default {default} is invalid: {problem}"));
        }
        field.default = Some(default.clone());
    }
    Ok(field)
}

impl FormSchema {
    /// Parses a `requestedSchema` (a flat object of primitives). Anything outside the subset
    /// (nested objects, `$ref`, arrays of objects, unknown types, bad bounds, required names
    /// that are not properties) is a [`SchemaError`] naming the field.
    ///
    /// The exact rule: the top level may hold only `type: "object"`, `properties`,
    /// `required`, and the annotations `$schema`, `title`, `description`, `$comment` and
    /// `additionalProperties: false`. Each property may hold only the keywords of its shape
    /// (see policies/README.md) plus `title`, `description`, `default`, `$comment` and
    /// `examples`; any other keyword is refused, because an unknown keyword may change what
    /// the server expects and the form would then be half-rendered.
    pub fn parse(schema: &Value) -> Result<FormSchema, SchemaError> {
        let Value::Object(object) = schema else {
            return err(format!(
                "the schema must be an object, not {}",
                kind(schema)
            ));
        };
        let at = "the schema";
        match object.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            Some(other) => return err(format!("{at}: type must be \"object\", not {other}")),
            None => return err(format!("{at} needs type \"object\"")),
        }
        for key in object.keys() {
            if !matches!(key.as_str(), "type" | "properties" | "required")
                && !TOP_LEVEL.contains(&key.as_str())
            {
                let why = refuse_keyword("the schema", key);
                return Err(why);
            }
        }
        for key in ["$schema", "title", "description"] {
            opt_string(at, object, key)?;
        }
        match object.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return err(format!(
                    "{at}: additionalProperties may only be false (the form has exactly the listed fields)"
                ));
            }
        }
        let Some(Value::Object(properties)) = object.get("properties") else {
            return err(format!("{at} needs properties (an object)"));
        };
        let mut fields = Vec::with_capacity(properties.len());
        for (name, value) in properties {
            if name.trim().is_empty() {
                return err(format!("{at}: a property has an empty name"));
            }
            fields.push(parse_field(name, value)?);
        }
        match object.get("required") {
            None => {}
            Some(Value::Array(names)) => {
                let mut seen = HashSet::new();
                for name in names {
                    let Value::String(name) = name else {
                        return err(format!("{at}: required must list property names (strings)"));
                    };
                    if !seen.insert(name.as_str()) {
                        return err(format!("{at}: required lists {name:?} twice"));
                    }
                    match fields.iter_mut().find(|f| &f.name == name) {
                        Some(field) => field.required = true,
                        None => {
                            return err(format!(
                                "{at}: required names {name:?}, which is not a property"
                            ));
                        }
                    }
                }
            }
            Some(other) => {
                return err(format!(
                    "{at}: required must be an array, not {}",
                    kind(other)
                ));
            }
        }
        Ok(FormSchema { fields })
    }

    /// `{field: default}` for every field with a default, to pre-fill the form.
    pub fn defaults(&self) -> Map<String, Value> {
        self.fields
            .iter()
            .filter_map(|f| f.default.clone().map(|d| (f.name.clone(), d)))
            .collect()
    }

    /// Checks answers against the schema (types, formats, bounds, lengths, enums, item counts,
    /// required, no unknown fields). Integers given as JSON numbers with no fraction are fine.
    pub fn validate(&self, content: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
        let mut errors = Vec::new();
        for (name, value) in content {
            match self.field(name) {
                None => errors.push(FieldError {
                    field: name.clone(),
                    problem: "is not a field of this form".into(),
                }),
                Some(field) => {
                    if let Err(problem) = check_value(field, value) {
                        errors.push(FieldError {
                            field: name.clone(),
                            problem,
                        });
                    }
                }
            }
        }
        for field in &self.fields {
            if field.required && !content.contains_key(&field.name) {
                errors.push(FieldError {
                    field: field.name.clone(),
                    problem: "is required".into(),
                });
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// One answer against its field; the problem in words.
fn check_value(field: &Field, value: &Value) -> Result<(), String> {
    match &field.kind {
        FieldKind::Text {
            min_length,
            max_length,
            format,
        } => {
            let Value::String(text) = value else {
                return Err(format!("must be a string, not {}", kind(value)));
            };
            let length = text.chars().count() as u64;
            if let Some(min) = min_length
                && length < *min
            {
                return Err(format!("must be at least {min} characters (is {length})"));
            }
            if let Some(max) = max_length
                && length > *max
            {
                return Err(format!("must be at most {max} characters (is {length})"));
            }
            if let Some(format) = format {
                let ok = match format {
                    TextFormat::Email => is_email(text),
                    TextFormat::Uri => url::Url::parse(text).is_ok(),
                    TextFormat::Date => is_date(text),
                    TextFormat::DateTime => is_date_time(text),
                };
                if !ok {
                    return Err(format!("is not a valid {}", format.as_str()));
                }
            }
            Ok(())
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let Some(number) = value.as_f64() else {
                return Err(format!("must be a number, not {}", kind(value)));
            };
            let integral = value.is_i64() || value.is_u64() || number.fract() == 0.0;
            if *integer && !integral {
                return Err(format!("must be a whole number, not {number}"));
            }
            if let Some(min) = minimum
                && number < *min
            {
                return Err(format!("must be at least {min} (is {number})"));
            }
            if let Some(max) = maximum
                && number > *max
            {
                return Err(format!("must be at most {max} (is {number})"));
            }
            Ok(())
        }
        FieldKind::Boolean => match value {
            Value::Bool(_) => Ok(()),
            other => Err(format!("must be true or false, not {}", kind(other))),
        },
        FieldKind::Select { choices } => match value {
            Value::String(text) if choices.iter().any(|c| &c.value == text) => Ok(()),
            Value::String(text) => Err(format!("{text:?} is not one of the choices")),
            other => Err(format!(
                "must be one of the choices (a string), not {}",
                kind(other)
            )),
        },
        FieldKind::MultiSelect {
            choices,
            min_items,
            max_items,
        } => {
            let Value::Array(items) = value else {
                return Err(format!("must be a list of choices, not {}", kind(value)));
            };
            let mut seen = HashSet::new();
            for item in items {
                let Value::String(text) = item else {
                    return Err(format!(
                        "every item must be a choice (a string), not {}",
                        kind(item)
                    ));
                };
                if !choices.iter().any(|c| &c.value == text) {
                    return Err(format!("{text:?} is not one of the choices"));
                }
                if !seen.insert(text) {
                    return Err(format!("{text:?} is chosen twice"));
                }
            }
            let count = items.len() as u64;
            if let Some(min) = min_items
                && count < *min
            {
                return Err(format!("choose at least {min} (chose {count})"));
            }
            if let Some(max) = max_items
                && count > *max
            {
                return Err(format!("choose at most {max} (chose {count})"));
            }
            Ok(())
        }
    }
}

/// One `@`, a non-empty local part, a domain with a dot and no empty labels, no whitespace or
/// control characters anywhere.
fn is_email(text: &str) -> bool {
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let mut parts = text.split('@');
    let (Some(local), Some(domain), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    !local.is_empty() && domain.contains('.') && domain.split('.').all(|label| !label.is_empty())
}

fn digits(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `YYYY-MM-DD`, a real calendar date (proleptic Gregorian).
fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (
        digits(&text[0..4]),
        digits(&text[5..7]),
        digits(&text[8..10]),
    ) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339 `date-time`: `YYYY-MM-DDThh:mm:ss[.frac](Z|±hh:mm)`, `T` and `Z` in either case.
fn is_date_time(text: &str) -> bool {
    if !text.is_ascii() || text.len() < 20 {
        return false;
    }
    let (date, rest) = text.split_at(10);
    if !is_date(date) || !matches!(rest.as_bytes()[0], b'T' | b't') {
        return false;
    }
    let time = &rest[1..];
    if time.len() < 9 || time.as_bytes()[2] != b':' || time.as_bytes()[5] != b':' {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) = (
        digits(&time[0..2]),
        digits(&time[3..5]),
        digits(&time[6..8]),
    ) else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut rest = &time[8..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return false;
        }
        rest = &fraction[end..];
    }
    match rest {
        "Z" | "z" => true,
        offset if offset.len() == 6 => {
            let b = offset.as_bytes();
            matches!(b[0], b'+' | b'-')
                && b[3] == b':'
                && matches!(
                    (digits(&offset[1..3]), digits(&offset[4..6])),
                    (Some(h), Some(m)) if h <= 23 && m <= 59
                )
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------
// Sensitive-field detection

/// Splits text into lowercase words at every separator (anything not a letter or digit), at
/// camelCase humps (`apiKey`, `APIKey`), and between letters and digits (`cvv2`, `2fa`).
pub(crate) fn words(text: &str) -> Vec<String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Class {
        Upper,
        Lower,
        Digit,
    }
    let text = fold(text);
    let class = |c: char| {
        if c.is_numeric() {
            Some(Class::Digit)
        } else if c.is_uppercase() {
            Some(Class::Upper)
        } else if c.is_alphabetic() {
            Some(Class::Lower)
        } else {
            None
        }
    };
    let chars: Vec<char> = text.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous: Option<Class> = None;
    for (i, &c) in chars.iter().enumerate() {
        // Scripts written without spaces: each character is a word, so a term spelled in
        // them ("密码") is found as a run inside a sentence ("请输入密码").
        if is_unspaced(c) {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            words.push(c.to_string());
            previous = None;
            continue;
        }
        let Some(this) = class(c) else {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous = None;
            continue;
        };
        let next = chars.get(i + 1).copied().and_then(class);
        let split = match (previous, this) {
            (Some(Class::Lower), Class::Upper) => true,
            (Some(Class::Upper), Class::Upper) => next == Some(Class::Lower),
            (Some(Class::Digit), Class::Upper | Class::Lower) => true,
            (Some(Class::Upper | Class::Lower), Class::Digit) => true,
            _ => false,
        };
        if split && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        current.extend(c.to_lowercase());
        previous = Some(this);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Text as matching sees it: compatibility forms unfolded (NFKD: full-width `ｐ４ｓｓ`,
/// mathematical `𝐩𝐚𝐬𝐬`, ligatures), accents and other combining marks dropped (`pássword`),
/// and invisible characters removed rather than read as separators (`pass\u{200B}word`,
/// soft hyphens, variation selectors), so they neither split nor hide a word.
pub(crate) fn fold(text: &str) -> String {
    use unicode_normalization::{UnicodeNormalization, char::is_combining_mark};
    text.nfkd()
        .filter(|&c| !is_combining_mark(c) && !is_invisible(c))
        .collect()
}

/// Unicode's default-ignorable code points: drawn as nothing.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

/// Han ideographs and kana, written without spaces between words.
fn is_unspaced(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}' | '\u{20000}'..='\u{2FA1F}')
}

fn skeleton(text: &str) -> String {
    unicode_security::skeleton(text)
        .flat_map(char::to_lowercase)
        .collect()
}

/// Words after the bare word "token" that make it a count of LLM tokens, not a credential:
/// "token count", "tokenLimit", "token_budget".
const TOKEN_MEASURES: &[&str] = &[
    "count", "counts", "limit", "limits", "budget", "usage", "estimate", "length", "size",
];

/// A bare word followed by one of these is an ordinary compound, not a secret.
const ORDINARY_AFTER: &[(&str, &[&str])] = &[("token", TOKEN_MEASURES), ("secret", &["santa"])];

/// Words that ask for something: a request term within [`REQUEST_REACH`] words after one is
/// asked for ("Enter your card's PIN", "What is your 2FA?").
const REQUEST_WORDS: &[&str] = &[
    "enter", "type", "provide", "paste", "input", "give", "send", "share", "submit", "tell",
    "confirm", "verify", "what", "whats", "need", "reply", "write",
];
const REQUEST_REACH: usize = 4;
/// Words that turn a request around ("do not give us your PIN", "we don't need your 2FA";
/// "don't" splits into "don" and "t").
const NEGATIONS: &[&str] = &[
    "not", "never", "no", "dont", "don", "t", "without", "cannot",
];
/// Words after a request term that make it a place on a map ("confirm the pin location").
const PLACE_AFTER: &[&str] = &["location", "position", "map", "marker", "point"];

/// Glued terms at least this long also match inside a longer word ("userpassword",
/// "mysecretpassphrase"); shorter ones only as whole words ("pin" never matches "spinning").
const SUBSTRING_MIN: usize = 8;

/// Glued terms shorter than [`SUBSTRING_MIN`] that still count inside a longer word: no
/// ordinary word contains them ("openaiapikey", "dbpasswd"), unlike "secret" ("secretary").
const SHORT_INNER_TERMS: &[&str] = &["apikey", "passwd"];

/// The policy's terms, prepared for matching.
pub(crate) struct Matcher {
    /// Glued term (words concatenated) → the term as written in the policy.
    everywhere: HashMap<String, String>,
    names_only: HashMap<String, String>,
    /// Glued request terms and name-only terms: secrets when prose asks for them.
    requested: HashMap<String, String>,
    /// Length in bytes of the longest glued term in `requested`.
    longest_requested: usize,
    /// UTS #39 skeletons of the glued terms, for words with non-ASCII look-alike letters.
    skeletons: std::sync::OnceLock<(HashMap<String, String>, HashMap<String, String>)>,
    formats: Vec<String>,
    /// Length in bytes of the longest glued term.
    longest: usize,
    /// Glued terms of at least [`SUBSTRING_MIN`] bytes: (glued, term, name-only).
    long: Vec<(String, String, bool)>,
}

/// The lists a [`Matcher`] was built from.
type MatcherKey = (Vec<String>, Vec<String>, Vec<String>, Vec<String>);

/// Prepared matchers for the last few distinct term lists (normally just the one policy).
/// Keyed by the lists' exact contents, so a policy edited in place never sees a stale one.
static MATCHERS: std::sync::Mutex<Vec<(MatcherKey, std::sync::Arc<Matcher>)>> =
    std::sync::Mutex::new(Vec::new());

/// Where a match was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Name,
    Title,
    Description,
    Format,
    /// The title of one of a select field's choices.
    Choice,
    /// The elicitation's own message.
    Message,
}

impl Place {
    fn as_str(self) -> &'static str {
        match self {
            Place::Name => "name",
            Place::Title => "title",
            Place::Description => "description",
            Place::Format => "format",
            Place::Choice => "choice title",
            Place::Message => "message",
        }
    }
}

/// A sensitive match: the policy term (or format) and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub term: String,
    pub place: Place,
}

impl Hit {
    pub fn describe(&self) -> String {
        match self.place {
            Place::Format => format!("its format is {:?}", self.term),
            place => format!("its {} matches {:?}", place.as_str(), self.term),
        }
    }
}

impl Matcher {
    /// The matcher for this policy's lists, prepared once and shared.
    pub fn new(policy: &FormPolicy) -> std::sync::Arc<Matcher> {
        let same = |key: &MatcherKey| {
            key.0 == policy.sensitive_terms
                && key.1 == policy.name_only_terms
                && key.2 == policy.sensitive_formats
                && key.3 == policy.request_terms
        };
        let mut cache = MATCHERS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, matcher)) = cache.iter().find(|(key, _)| same(key)) {
            return matcher.clone();
        }
        let matcher = std::sync::Arc::new(Matcher::build(policy));
        if cache.len() >= 4 {
            cache.remove(0);
        }
        let key = (
            policy.sensitive_terms.clone(),
            policy.name_only_terms.clone(),
            policy.sensitive_formats.clone(),
            policy.request_terms.clone(),
        );
        cache.push((key, matcher.clone()));
        matcher
    }

    fn build(policy: &FormPolicy) -> Matcher {
        let prepare = |terms: &[String]| -> HashMap<String, String> {
            terms
                .iter()
                .map(|t| (words(t).concat(), t.clone()))
                .filter(|(glued, _)| !glued.is_empty())
                .collect()
        };
        let everywhere = prepare(&policy.sensitive_terms);
        let names_only = prepare(&policy.name_only_terms);
        let mut requested = prepare(&policy.request_terms);
        requested.extend(names_only.clone());
        let longest_requested = requested.keys().map(String::len).max().unwrap_or(0);
        let longest = everywhere
            .keys()
            .chain(names_only.keys())
            .map(String::len)
            .max()
            .unwrap_or(0);
        let long = everywhere
            .iter()
            .map(|(g, t)| (g, t, false))
            .chain(names_only.iter().map(|(g, t)| (g, t, true)))
            .filter(|(glued, _, _)| {
                glued.len() >= SUBSTRING_MIN || SHORT_INNER_TERMS.contains(&glued.as_str())
            })
            .map(|(g, t, n)| (g.clone(), t.clone(), n))
            .collect();
        Matcher {
            everywhere,
            names_only,
            requested,
            longest_requested,
            long,
            skeletons: std::sync::OnceLock::new(),
            formats: policy
                .sensitive_formats
                .iter()
                .map(|f| f.to_lowercase())
                .collect(),
            longest,
        }
    }

    fn skeleton_maps(&self) -> &(HashMap<String, String>, HashMap<String, String>) {
        self.skeletons.get_or_init(|| {
            let map = |terms: &HashMap<String, String>| {
                terms
                    .iter()
                    .map(|(glued, term)| (skeleton(glued), term.clone()))
                    .collect()
            };
            (map(&self.everywhere), map(&self.names_only))
        })
    }

    /// The first policy term found in `text`.
    fn find(&self, text: &str, with_name_only: bool) -> Option<String> {
        let words = words(text);
        let lookup = |glued: &str, ascii: bool| -> Option<String> {
            let direct = self
                .everywhere
                .get(glued)
                .or_else(|| with_name_only.then(|| self.names_only.get(glued)).flatten());
            if let Some(term) = direct {
                return Some(term.clone());
            }
            if ascii {
                return None;
            }
            let (everywhere, names_only) = self.skeleton_maps();
            let key = skeleton(glued);
            everywhere
                .get(&key)
                .or_else(|| with_name_only.then(|| names_only.get(&key)).flatten())
                .cloned()
        };
        for start in 0..words.len() {
            let mut glued = String::new();
            for end in start..words.len() {
                glued.push_str(&words[end]);
                // Nothing longer can match; skeletons of non-ASCII text can be longer or
                // shorter than the text (but not by more than a factor of four).
                let limit = if glued.is_ascii() {
                    self.longest
                } else {
                    self.longest * 4
                };
                if glued.len() > limit {
                    break;
                }
                let Some(term) = lookup(&glued, glued.is_ascii()) else {
                    continue;
                };
                if end == start
                    && ORDINARY_AFTER.iter().any(|(word, after)| {
                        glued == *word
                            && words
                                .get(end + 1)
                                .is_some_and(|next| after.contains(&next.as_str()))
                    })
                {
                    continue;
                }
                return Some(term);
            }
        }
        // Long terms glued inside a longer word: "userpassword", "myapitoken" does not
        // count ("apitoken" is short of SUBSTRING_MIN only when the term is).
        for word in &words {
            for (glued, term, name_only) in &self.long {
                if (with_name_only || !name_only)
                    && word.len() > glued.len()
                    && word.contains(glued.as_str())
                {
                    return Some(term.clone());
                }
            }
        }
        None
    }

    /// [`Matcher::find`], and again with digit-for-letter spellings read as letters
    /// ("p4ssw0rd", "s3cr3t", "t0ken"): only runs that mix letters with such digits change, so
    /// ordinary numbers and words stay as they are.
    fn find_any(&self, text: &str, with_name_only: bool) -> Option<String> {
        // Folded first, so full-width digits are digits to `deleet` too.
        let text = fold(text);
        self.find(&text, with_name_only).or_else(|| {
            let plain = deleet(&text)?;
            self.find(&plain, with_name_only)
        })
    }

    /// A request term or name-only term that `text` asks for: after a request word within
    /// [`REQUEST_REACH`] words with no negation before it, or as the closing "your …".
    fn find_requested(&self, text: &str) -> Option<String> {
        let words = words(text);
        let asked = |start: usize, end: usize| {
            if words
                .get(end + 1)
                .is_some_and(|next| PLACE_AFTER.contains(&next.as_str()))
            {
                return false;
            }
            let from = start.saturating_sub(REQUEST_REACH);
            if let Some(verb) = (from..start)
                .rev()
                .find(|&i| REQUEST_WORDS.contains(&words[i].as_str()))
            {
                let negated =
                    (verb.saturating_sub(3)..start).any(|i| NEGATIONS.contains(&words[i].as_str()));
                if !negated {
                    return true;
                }
            }
            end + 1 == words.len() && start > 0 && words[start - 1] == "your"
        };
        for start in 0..words.len() {
            let mut glued = String::new();
            for (end, word) in words.iter().enumerate().skip(start) {
                glued.push_str(word);
                if glued.len() > self.longest_requested {
                    break;
                }
                if let Some(term) = self.requested.get(&glued)
                    && asked(start, end)
                {
                    return Some(term.clone());
                }
            }
        }
        None
    }

    /// Prose: the terms that are safe in prose anywhere, and request and name-only terms
    /// where the text asks for them.
    fn find_in_prose(&self, text: &str) -> Option<String> {
        self.find_any(text, false).or_else(|| {
            let text = fold(text);
            self.find_requested(&text)
                .or_else(|| self.find_requested(&deleet(&text)?))
        })
    }

    /// Judges prose (the elicitation's message, the schema's own title and description)
    /// against the terms that are safe in prose.
    pub fn judge_prose(&self, text: &str, place: Place) -> Option<Hit> {
        self.find_in_prose(text).map(|term| Hit { term, place })
    }

    /// Judges one field's texts: name and title against every term, description against
    /// the terms that are safe in prose, format against the sensitive formats.
    pub fn judge(
        &self,
        name: &str,
        title: Option<&str>,
        description: Option<&str>,
        format: Option<&str>,
    ) -> Option<Hit> {
        if let Some(format) = format {
            let format = format.to_lowercase();
            if let Some(term) = self.formats.iter().find(|f| **f == format) {
                return Some(Hit {
                    term: term.clone(),
                    place: Place::Format,
                });
            }
        }
        let texts = [
            (Some(name), Place::Name, true),
            (title, Place::Title, true),
            (description, Place::Description, false),
        ];
        texts.into_iter().find_map(|(text, place, with_name_only)| {
            let text = text?;
            let term = if with_name_only {
                self.find_any(text, true)
            } else {
                self.find_in_prose(text)
            };
            term.map(|term| Hit { term, place })
        })
    }

    /// Judges a select field's choice titles (a choice labelled "Password" is a request for
    /// one).
    pub fn judge_choices<'a>(&self, titles: impl IntoIterator<Item = &'a str>) -> Option<Hit> {
        titles.into_iter().find_map(|title| {
            self.find_any(title, false).map(|term| Hit {
                term,
                place: Place::Choice,
            })
        })
    }
}

/// `text` with digit-for-letter substitutions read as letters (0→o, 1→i, 3→e, 4→a, 5→s,
/// 7→t, @→a, $→s) inside runs that also hold letters; `None` when nothing changes.
pub(crate) fn deleet(text: &str) -> Option<String> {
    let leet = |c: char| match c {
        '0' => Some('o'),
        '1' => Some('i'),
        '3' => Some('e'),
        '4' => Some('a'),
        '5' => Some('s'),
        '7' => Some('t'),
        '@' => Some('a'),
        '$' => Some('s'),
        _ => None,
    };
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        let in_run = |c: char| c.is_ascii_alphanumeric() || c == '@' || c == '$';
        if !in_run(chars[i]) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && in_run(chars[i]) {
            i += 1;
        }
        let run = &chars[start..i];
        let has_letter = run.iter().any(|c| c.is_ascii_alphabetic());
        for &c in run {
            match leet(c).filter(|_| has_letter) {
                Some(letter) => {
                    out.push(letter);
                    changed = true;
                }
                None => out.push(c),
            }
        }
    }
    changed.then_some(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_every_style() {
        let cases: &[(&str, &[&str])] = &[
            ("apiKey", &["api", "key"]),
            ("APIKey", &["api", "key"]),
            ("API_KEY", &["api", "key"]),
            ("x-api-key", &["x", "api", "key"]),
            ("client.secret", &["client", "secret"]),
            ("Pass Phrase", &["pass", "phrase"]),
            ("cvv2", &["cvv", "2"]),
            ("2faCode", &["2", "fa", "code"]),
            ("oneTimeCode", &["one", "time", "code"]),
            ("OAuth2Token", &["o", "auth", "2", "token"]),
            ("PASSWORD", &["password"]),
            ("  ", &[]),
        ];
        for (text, expected) in cases {
            assert_eq!(words(text), *expected, "{text}");
        }
    }

    #[test]
    fn dates_and_times() {
        for good in ["2026-12-01", "2024-02-29", "2000-02-29", "1999-12-31"] {
            assert!(is_date(good), "{good}");
        }
        for bad in [
            "2026-13-01",
            "2026-02-29",
            "1900-02-29",
            "2026-04-31",
            "2026-1-01",
            "26-12-01",
            "2026-12-01 ",
            "２026-12-01",
            "2026-00-10",
            "2026-01-00",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
        for good in [
            "2026-12-01T10:20:30Z",
            "2026-12-01t10:20:30z",
            "2026-12-01T10:20:30.123456+05:30",
            "2026-12-01T23:59:60-00:00",
        ] {
            assert!(is_date_time(good), "{good}");
        }
        for bad in [
            "2026-12-01",
            "2026-12-01T10:20:30",
            "2026-12-01 10:20:30Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T10:60:00Z",
            "2026-12-01T10:20:30.Z",
            "2026-12-01T10:20:30+0530",
            "2026-12-01T10:20:30+24:00",
            "2026-02-30T10:20:30Z",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }

    #[test]
    fn emails() {
        for good in ["ada@example.com", "a.b+c@sub.example.org"] {
            assert!(is_email(good), "{good}");
        }
        for bad in [
            "ada",
            "ada@",
            "@example.com",
            "ada@example",
            "a@b@example.com",
            "ada @example.com",
            "ada@example..com",
            "ada@.example.com",
            "ada@example.com.",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
    }
}
