//! What one elicitation costs the host: the form and URL assessments and the transit check on
//! typical inputs. `cargo bench -p gatehouse-policy --bench assess`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use gatehouse_policy::{
    ElicitationContext, FormSchema, Mode, Policy, ServerStanding, TransportKind, assess_form,
    assess_url, check_answers,
};
use serde_json::{Value, json};

/// The reference server's every-type form (trigger-elicitation-request).
fn every_type_schema() -> Value {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("../tests/corpus/forms.json")).expect("corpus parses");
    cases
        .into_iter()
        .find(|c| c["name"] == "everything_server_every_type")
        .expect("every-type case")["schema"]
        .clone()
}

fn context(mode: Mode) -> ElicitationContext {
    ElicitationContext {
        standing: ServerStanding::Admitted,
        transport: TransportKind::Http {
            loopback: false,
            authorized: true,
        },
        mode,
        mode_declared: true,
        tied_to_request: true,
    }
}

const GOOGLE: &str = "https://accounts.google.com/o/oauth2/v2/auth?client_id=123456789012-abcdefghijklmnopqrstuvwxyz012345.apps.googleusercontent.com&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback&response_type=code&scope=openid%20email&state=xyz&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256";

fn bench(c: &mut Criterion) {
    let policy = Policy::default_policy();
    let schema = every_type_schema();
    let form_context = context(Mode::Form);
    let url_context = context(Mode::Url);
    let parsed = FormSchema::parse(&schema).expect("parses");
    let answers = json!({
        "name": "Ada Lovelace",
        "check": true,
        "firstLine": "It was a dark and stormy night.",
        "email": "ada@example.com",
        "homepage": "https://ada.example.org/",
        "birthdate": "1815-12-10",
        "integer": 42,
        "number": 2.5,
        "untitledSingleSelectEnum": "Joey",
        "untitledMultipleSelectEnum": ["Guitar", "Drums"],
        "titledSingleSelectEnum": "hero-2",
        "titledMultipleSelectEnum": ["fish-1", "fish-3"],
        "legacyTitledEnum": "pet-5"
    });
    let answers = answers.as_object().expect("object").clone();
    assert!(
        assess_form(&policy, &form_context, None, &schema)
            .assessment
            .is_allowed()
    );
    assert!(
        assess_url(&policy, &url_context, GOOGLE, &[])
            .assessment
            .is_allowed()
    );
    assert!(check_answers(&policy, &parsed, &answers).is_allowed());

    c.bench_function("assess_form/every_type_schema", |b| {
        b.iter(|| {
            assess_form(
                black_box(&policy),
                black_box(&form_context),
                None,
                black_box(&schema),
            )
        })
    });
    c.bench_function("assess_url/google_oauth", |b| {
        b.iter(|| {
            assess_url(
                black_box(&policy),
                black_box(&url_context),
                black_box(GOOGLE),
                &[],
            )
        })
    });
    c.bench_function("check_answers/every_type_answers", |b| {
        b.iter(|| check_answers(black_box(&policy), black_box(&parsed), black_box(&answers)))
    });
    c.bench_function("validate/every_type_answers", |b| {
        b.iter(|| black_box(&parsed).validate(black_box(&answers)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
