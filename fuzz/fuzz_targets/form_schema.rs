//! Form schemas (`FormSchema::parse`, `assess_form`, `validate`, `check_answers`). The input is
//! JSON: `{"schema": S, "content": C, "message": M}` (how the seeds are written; the fields
//! the host gets in an `elicitation/create` and a user's answer), or any other value, taken as
//! the schema. Properties: `assess_form` keeps a schema exactly when `FormSchema::parse` does;
//! a schema's own defaults are valid answers (missing required fields aside).
#![no_main]

use std::sync::LazyLock;

use gatehouse_policy::{
    ElicitationContext, FormSchema, Mode, Policy, ServerStanding, TransportKind, assess_form,
    check_answers, check_fields,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

static POLICY: LazyLock<Policy> = LazyLock::new(Policy::default_policy);

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let (schema, content, message) = match input.get("schema") {
        Some(schema) => (schema, input.get("content"), input.get("message").and_then(Value::as_str)),
        None => (&input, None, None),
    };
    let context = ElicitationContext {
        standing: ServerStanding::Admitted,
        transport: TransportKind::Stdio,
        mode: Mode::Form,
        mode_declared: true,
        tied_to_request: true,
    };
    let assessed = assess_form(&POLICY, &context, message, schema);
    let parsed = FormSchema::parse(schema);
    assert_eq!(assessed.schema.is_some(), parsed.is_ok());
    let Ok(form) = parsed else {
        return;
    };
    assert_eq!(check_fields(&POLICY.form, &form).len(), form.fields.len());
    let defaults = form.defaults();
    if let Err(errors) = form.validate(&defaults) {
        for error in errors {
            let field = form.field(&error.field).expect("errors name fields of the form");
            assert!(
                error.problem == "is required" && field.default.is_none(),
                "the schema's own default for {:?} is refused: {}",
                error.field,
                error.problem
            );
        }
    }
    if let Some(Value::Object(content)) = content {
        let _ = form.validate(content);
        let _ = check_answers(&POLICY, &form, content);
    }
});
