//! The form-mode schema subset (elicitation.md §1): parse, defaults, validation, and
//! sensitive-field detection.

mod matcher;
mod model;
mod schema;
mod sensitive;
mod text;
mod validate;

pub use model::{Choice, Field, FieldKind, FormSchema, TextFormat};
pub use schema::SchemaError;
pub use sensitive::{FieldCheck, check_fields};
pub use validate::FieldError;

pub(crate) use matcher::Matcher;
pub use matcher::WHOLE_NAME_TERMS;
pub(crate) use sensitive::{judge_fields, judge_form_texts, raw_sensitive_fields};
pub(crate) use text::words;
