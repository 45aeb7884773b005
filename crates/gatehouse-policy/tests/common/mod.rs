//! Shared by the corpus runners: contexts and failure reporting.
#![allow(dead_code)]

use gatehouse_policy::{ElicitationContext, Mode, Reason, ServerStanding, TransportKind};

/// Every piece of evidence in order: admitted, mode declared, tied to a request; stdio when
/// `local`, otherwise remote HTTP with MCP authorization (so SEP-2343 does not fire).
pub fn good_context(mode: Mode, local: bool) -> ElicitationContext {
    ElicitationContext {
        standing: ServerStanding::Admitted,
        transport: if local {
            TransportKind::Stdio
        } else {
            TransportKind::Http {
                loopback: false,
                authorized: true,
            }
        },
        mode,
        mode_declared: true,
        tied_to_request: true,
    }
}

/// The distinct codes, sorted.
pub fn codes(reasons: &[Reason]) -> Vec<&'static str> {
    let mut codes: Vec<&'static str> = reasons.iter().map(|r| r.code).collect();
    codes.sort_unstable();
    codes.dedup();
    codes
}

pub fn sorted(codes: &[String]) -> Vec<String> {
    let mut codes = codes.to_vec();
    codes.sort_unstable();
    codes.dedup();
    codes
}

/// Panics listing every failed case by name.
pub fn report(what: &str, total: usize, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} of {total} {what} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

pub fn corpus(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}
