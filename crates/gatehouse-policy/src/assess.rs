//! One decision per elicitation: evidence first, then the content checks for the mode.

use serde::Serialize;
use serde_json::Value;

use crate::codes::{self, reason};
use crate::decision::Assessment;
use crate::evidence::{ElicitationContext, check_evidence, override_allowed};
use crate::form::{FieldCheck, FormSchema, judge_fields, judge_form_texts, raw_sensitive_fields};
use crate::policy::Policy;
use crate::transit::find_token_prefix;
use crate::url_check::{UrlContext, UrlDisplay, check_url, percent_decode};

#[derive(Debug, Clone, Serialize)]
pub struct FormAssessment {
    #[serde(flatten)]
    pub assessment: Assessment,
    /// `None` when the schema is outside the subset (then a `schema_outside_subset` reason).
    #[serde(skip)]
    pub schema: Option<FormSchema>,
    pub fields: Vec<FieldCheck>,
}

#[derive(Debug, Clone, Serialize)]
pub struct UrlAssessment {
    #[serde(flatten)]
    pub assessment: Assessment,
    pub display: UrlDisplay,
}

/// Assesses a form elicitation: evidence, then the schema subset, the field count and
/// sensitive-field detection over every text the user is shown: the message (when there is
/// one), the schema's own title and description, and each field's name, title, description,
/// format and choice titles. A schema outside the subset is held (never overridable) with no
/// fields; its properties are still judged for secrets, so a password field is denied
/// whatever shape the schema has.
pub fn assess_form(
    policy: &Policy,
    context: &ElicitationContext,
    message: Option<&str>,
    schema: &Value,
) -> FormAssessment {
    let mut assessment = check_evidence(policy, context);
    for hit in judge_form_texts(&policy.form, message, schema) {
        assessment.push(reason(
            codes::SENSITIVE_FIELD,
            format!("the form asks for a secret: {}", hit.describe()),
        ));
    }
    let parsed = FormSchema::parse(schema);
    let mut fields = Vec::new();
    match &parsed {
        Ok(form) => {
            for (check, hit) in judge_fields(&policy.form, form) {
                if let Some(hit) = hit {
                    assessment.push(reason(
                        codes::SENSITIVE_FIELD,
                        format!(
                            "field {:?} asks for a secret: {}",
                            check.name,
                            hit.describe()
                        ),
                    ));
                }
                fields.push(check);
            }
            push_field_count(&mut assessment, policy, form.fields.len());
        }
        Err(error) => {
            assessment.push(reason(
                codes::SCHEMA_OUTSIDE_SUBSET,
                format!("the form's schema is outside the MCP form subset: {error}"),
            ));
            for (name, hit) in raw_sensitive_fields(&policy.form, schema) {
                assessment.push(reason(
                    codes::SENSITIVE_FIELD,
                    format!("field {name:?} asks for a secret: {}", hit.describe()),
                ));
            }
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                push_field_count(&mut assessment, policy, properties.len());
            }
        }
    }
    assessment.override_allowed = override_allowed(policy, &assessment);
    FormAssessment {
        assessment,
        schema: parsed.ok(),
        fields,
    }
}

fn push_field_count(assessment: &mut Assessment, policy: &Policy, count: usize) {
    if count > policy.form.max_fields {
        assessment.push(reason(
            codes::TOO_MANY_FIELDS,
            format!(
                "the form has {count} fields; the policy allows at most {}",
                policy.form.max_fields
            ),
        ));
    }
}

/// Assesses a URL elicitation. `allowed_hosts`: the bundle's `urlElicitationDomains` for this
/// server (empty when it has none). Evidence, then the URL checks (with the server's locality
/// from the context), then credentials carried in the URL: a well-known token prefix in any
/// query or fragment value or path segment is secret transit.
pub fn assess_url(
    policy: &Policy,
    context: &ElicitationContext,
    url: &str,
    allowed_hosts: &[String],
) -> UrlAssessment {
    let mut assessment = check_evidence(policy, context);
    let url_context = UrlContext {
        server_is_local: context.server_is_local(policy),
        allowed_hosts: allowed_hosts.to_vec(),
    };
    let (checked, display) = check_url(&policy.url, url, &url_context);
    assessment.merge(checked);
    if let Some((place, prefix)) = token_in_url(policy, url) {
        assessment.push(reason(
            codes::SECRET_TOKEN_PREFIX,
            format!("the URL's {place} carries what looks like a credential (a token starting {prefix:?})"),
        ));
    }
    assessment.override_allowed = override_allowed(policy, &assessment);
    UrlAssessment {
        assessment,
        display,
    }
}

/// A well-known credential prefix in the URL's query values, fragment or path (decoded), or,
/// when the URL does not parse, anywhere in its text.
fn token_in_url<'p>(policy: &'p Policy, raw: &str) -> Option<(&'static str, &'p str)> {
    let transit = &policy.transit;
    let Ok(url) = url::Url::parse(raw.trim_matches(|c: char| c <= ' ')) else {
        return find_token_prefix(transit, raw).map(|p| ("text", p));
    };
    for (_, value) in url.query_pairs() {
        if let Some(prefix) = find_token_prefix(transit, &value) {
            return Some(("query", prefix));
        }
    }
    if let Some(fragment) = url.fragment() {
        for (key, value) in url::form_urlencoded::parse(fragment.as_bytes()) {
            if let Some(prefix) =
                find_token_prefix(transit, &value).or_else(|| find_token_prefix(transit, &key))
            {
                return Some(("fragment", prefix));
            }
        }
    }
    let path = percent_decode(url.path()).unwrap_or_else(|| url.path().to_string());
    find_token_prefix(transit, &path).map(|p| ("path", p))
}
