//! What the host recorded: the audit log (its newest records, filtered; verified) and the
//! traffic tap.

use serde::Serialize;
use serde_json::Value;

use super::{ApiError, Host};
use crate::ErrorCode;
use crate::tap::TrafficEntry;

#[derive(Debug, Clone, Serialize)]
pub struct AuditVerdict {
    pub ok: bool,
    pub records: u64,
    pub problem: Option<ApiError>,
    /// Sealed segments checked besides the file being written (0: never rotated).
    pub segments: u64,
    /// What retention removed, when it did (not a break): "segments 1–K removed by
    /// retention (record seq S)".
    pub removed: Option<String>,
}

impl Host {
    /// How many records the Audit view lists: the newest that match. The whole log is for
    /// `gatehouse audit show` and `export`, which stream it.
    pub const AUDIT_PAGE: usize = 1000;

    /// The newest [`Host::AUDIT_PAGE`] audit records that match, oldest first, filtered by server
    /// id and event type. Read from the end of the log, so the cost is the page's, not the
    /// log's (at most `gatehouse_audit::DEFAULT_TAIL_SCAN` records are examined for a rare
    /// filter).
    pub fn audit(
        &self,
        server: Option<String>,
        event: Option<String>,
    ) -> Result<Vec<Value>, ApiError> {
        let filter = gatehouse_audit::Filter { server, event };
        let recent = gatehouse_audit::tail(self.options.audit_path(), Self::AUDIT_PAGE, &filter)
            .map_err(|e| ApiError::new(ErrorCode::AuditUnreadable, e.to_string()))?;
        Ok(recent
            .records
            .iter()
            .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
            .collect())
    }

    /// Verifies the audit log's hash chain, across its segments.
    pub fn verify_audit(&self) -> Result<AuditVerdict, ApiError> {
        let report = gatehouse_audit::verify(self.options.audit_path())
            .map_err(|e| ApiError::new(ErrorCode::AuditUnreadable, e.to_string()))?;
        Ok(AuditVerdict {
            ok: report.ok,
            records: report.records,
            problem: report.first_broken.as_ref().map(|b| {
                let place = match &b.segment {
                    Some(segment) => format!("segment {segment}, line {}", b.line),
                    None => format!("line {}", b.line),
                };
                ApiError::new(b.kind.into(), format!("{place}: {}", b.detail))
            }),
            segments: report.segments,
            removed: report.removed.as_ref().map(|r| {
                let through = if r.through == 1 {
                    "segment 1".to_string()
                } else {
                    format!("segments 1–{}", r.through)
                };
                format!(
                    "{through} removed by retention (record seq {}); the chain starts again at seq {}",
                    r.record_seq, r.first_seq
                )
            }),
        })
    }

    /// The raw JSON-RPC recorded for one server, or all.
    pub fn traffic(&self, server: Option<&str>) -> Vec<TrafficEntry> {
        self.tap.entries(server)
    }
}
