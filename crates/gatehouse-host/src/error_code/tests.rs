use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use gatehouse_attest::bundle::BundleError;
use gatehouse_audit::AuditError;

use super::ErrorCode;
use super::convert::{
    EVERY_BREAK_KIND, EVERY_CONTENT_FAULT, EVERY_GATE_REASON, EVERY_REASON, EVERY_SIGN_IN_CODE,
};
use crate::admission::AdmissionReason;
use crate::fetch::FetchError;

#[test]
fn every_code_is_snake_case_spelled_once_and_serialized_as_itself() {
    let mut seen = BTreeSet::new();
    for code in ErrorCode::ALL {
        let name = code.as_str();
        assert!(seen.insert(name), "{name} spelled twice");
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{name} is not snake_case"
        );
        let json = serde_json::to_value(code).unwrap();
        assert_eq!(json, serde_json::json!(name));
        assert_eq!(serde_json::from_value::<ErrorCode>(json).unwrap(), code);
        assert_eq!(ErrorCode::parse(name), Some(code));
        assert_eq!(code.to_string(), name);
    }
    assert!(serde_json::from_value::<ErrorCode>(serde_json::json!("no_such_code")).is_err());
    assert_eq!(ErrorCode::parse("Timeout"), None);
}

#[test]
fn each_reason_maps_to_the_code_of_its_own_name() {
    let mut pairs: Vec<(&str, ErrorCode)> = Vec::new();
    pairs.extend(EVERY_REASON.iter().map(|r| (r.as_str(), (*r).into())));
    pairs.extend(
        EVERY_REASON
            .iter()
            .map(|r| (r.as_str(), AdmissionReason::Atsa(*r).into())),
    );
    pairs.extend(
        [
            AdmissionReason::BinaryChanged,
            AdmissionReason::StdioBindingMismatch,
            AdmissionReason::AttestationUnavailable,
        ]
        .map(|r| (r.as_str(), r.into())),
    );
    pairs.extend(EVERY_GATE_REASON.iter().map(|r| (r.as_str(), (*r).into())));
    pairs.extend(
        EVERY_CONTENT_FAULT
            .iter()
            .map(|r| (r.as_str(), (*r).into())),
    );
    pairs.extend(EVERY_SIGN_IN_CODE.iter().map(|r| (r.code(), (*r).into())));
    pairs.extend(EVERY_BREAK_KIND.iter().map(|r| (r.code(), (*r).into())));
    for (name, code) in pairs {
        assert_eq!(code.as_str(), name);
    }
}

#[test]
fn each_error_maps_to_the_code_it_names() {
    let s = String::new;
    let fetch = [
        FetchError::InsecureOrigin { url: s() },
        FetchError::InvalidUrl {
            url: s(),
            detail: s(),
        },
        FetchError::CrossOriginRedirect { from: s(), to: s() },
        FetchError::TooManyRedirects { url: s(), limit: 1 },
        FetchError::TooLarge { limit: 1 },
        FetchError::Timeout {
            after: Duration::from_secs(1),
        },
        FetchError::Status { status: 500 },
        FetchError::Network { detail: s() },
    ];
    for error in &fetch {
        assert_eq!(ErrorCode::from(error).as_str(), error.code());
    }
    let bundle = [
        BundleError::Invalid(s()),
        BundleError::Expired {
            bundle_id: s(),
            version: 1,
            expires: s(),
        },
        BundleError::ThresholdNotMet {
            bundle_id: s(),
            version: 1,
            valid: 0,
            threshold: 1,
            detail: s(),
        },
        BundleError::Rollback {
            bundle_id: s(),
            version: 1,
            highest: 2,
        },
        BundleError::SameVersionChanged {
            bundle_id: s(),
            version: 1,
        },
        BundleError::RotationNotAuthorized {
            bundle_id: s(),
            version: 2,
            installed: 1,
            valid: 0,
            threshold: 1,
        },
        BundleError::Conflict(s()),
    ];
    for error in &bundle {
        assert_eq!(ErrorCode::from(error).as_str(), error.code());
    }
    let path = PathBuf::new;
    let io = || std::io::Error::other("x");
    let audit = [
        AuditError::CreateDir {
            path: path(),
            source: io(),
        },
        AuditError::Open {
            path: path(),
            source: io(),
        },
        AuditError::NotARegularFile { path: path() },
        AuditError::ReadOnly { path: path() },
        AuditError::NotFound { path: path() },
        AuditError::Lock {
            path: path(),
            source: io(),
        },
        AuditError::Read {
            path: path(),
            source: io(),
        },
        AuditError::Write {
            path: path(),
            source: io(),
        },
        AuditError::Export {
            path: path(),
            source: io(),
        },
        AuditError::Head {
            path: path(),
            source: io(),
        },
        AuditError::SaveTorn {
            path: path(),
            source: io(),
        },
        AuditError::Unrecoverable {
            path: path(),
            offset: 0,
            reason: s(),
        },
        AuditError::BadRecord {
            path: path(),
            line: 1,
            reason: s(),
        },
        AuditError::BadEvent { event: s() },
        AuditError::ReservedEvent { event: s() },
        AuditError::BadServer {
            server: s(),
            reason: "x",
        },
        AuditError::DataNotObject { found: "x" },
        AuditError::RecordTooLarge {
            event: s(),
            bytes: 1,
        },
        AuditError::Unreadable {
            event: s(),
            reason: s(),
        },
        AuditError::BadTime { time: s() },
        AuditError::SeqExhausted { path: path() },
        AuditError::FlushFailed {
            path: path(),
            detail: s(),
        },
        AuditError::BadDurability { detail: s() },
    ];
    for error in &audit {
        assert_eq!(ErrorCode::from(error).as_str(), error.code());
    }
}

#[test]
fn docs_list_exactly_these_codes() {
    let listed = documented_codes();
    let documented: BTreeSet<&str> = listed.iter().map(String::as_str).collect();
    assert_eq!(
        documented.len(),
        listed.len(),
        "a code listed twice: {listed:?}"
    );
    let ours: BTreeSet<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    let missing: Vec<_> = ours.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&ours).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/error-codes.md: missing {missing:?}, not a code {extra:?}"
    );
}

/// The first cell of every row of every `| code | … |` table in docs/error-codes.md.
fn documented_codes() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/error-codes.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut codes = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        if !in_table {
            assert!(line.starts_with("| code |"), "a table of codes: {line}");
            in_table = true;
            continue;
        }
        if line.starts_with("|---") {
            continue;
        }
        let cell = line.split('|').nth(1).unwrap().trim();
        let code = cell
            .strip_prefix('`')
            .and_then(|c| c.strip_suffix('`'))
            .unwrap_or_else(|| panic!("not a `code`: {line}"));
        codes.push(code.to_string());
    }
    codes
}
