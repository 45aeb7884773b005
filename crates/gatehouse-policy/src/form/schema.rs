//! Parsing a `requestedSchema` into the form subset: any keyword outside it is refused with a
//! reason a server author can act on.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::model::{Choice, Field, FieldKind, FormSchema, TextFormat, kind};
use super::validate::check_value;

/// A `requestedSchema` outside the subset; the message says what and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub String);

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
}
