//! Checking answers against a parsed schema, including the string formats (email, uri, date,
//! date-time).

use std::collections::HashSet;

use serde::Serialize;
use serde_json::{Map, Value};

use super::model::{Field, FieldKind, FormSchema, TextFormat, kind};

/// An answer that breaks the schema: which field and what is wrong, for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    pub field: String,
    pub problem: String,
}

impl FormSchema {
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
}

/// One answer against its field; the problem in words.
pub(super) fn check_value(field: &Field, value: &Value) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
