//! The preset of a host that keeps nothing of its own: the conformance client's, whose
//! servers are the suite's unattested mocks and must never touch the user's state.

use std::sync::Arc;

use gatehouse_attest::bundle::Posture;

use super::{ApiError, HostOptions, HostPaths};
use crate::ErrorCode;
use crate::tap::Clock;

impl HostOptions {
    /// Options for a host whose `servers.json`, approvals, suspensions, server logs and
    /// (empty) trust-root directory are in a scratch directory it owns, removed when the host
    /// and every copy of these options are dropped. No trust roots and the warn posture: every
    /// server is unattested and let through, while admission, the gate and the audit still
    /// run. The audit log is in the scratch directory unless `audit_file` names one to keep.
    pub fn ephemeral(clock: Clock) -> Result<HostOptions, ApiError> {
        let scratch = tempfile::Builder::new()
            .prefix("gatehouse-host-")
            .tempdir()
            .map_err(|e| {
                ApiError::new(
                    ErrorCode::ScratchUnavailable,
                    format!(
                        "cannot create the host's scratch directory in {}: {e}; set TMPDIR to a writable directory",
                        std::env::temp_dir().display()
                    ),
                )
            })?;
        let root = scratch.path();
        let paths = HostPaths {
            config: root.join("servers.json"),
            data: root.join("data"),
            logs: root.join("logs"),
            user_trust_roots: None,
            system_trust_roots: root.join("no-trust-roots"),
        };
        let mut options = HostOptions::new(paths, clock);
        options.posture_override = Some(Posture::Warn);
        options.scratch = Some(Arc::new(scratch));
        Ok(options)
    }
}
