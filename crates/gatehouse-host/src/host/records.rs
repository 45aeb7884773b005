//! What the host recorded: the audit log (read, filtered, verified) and the traffic tap.

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
}

impl Host {
    /// Audit records, oldest first, filtered by server id and event type.
    pub fn audit(
        &self,
        server: Option<String>,
        event: Option<String>,
    ) -> Result<Vec<Value>, ApiError> {
        let records = gatehouse_audit::read(self.options.audit_path())
            .map_err(|e| ApiError::new(ErrorCode::AuditUnreadable, e.to_string()))?;
        let filter = gatehouse_audit::Filter { server, event };
        Ok(filter
            .apply(records)
            .iter()
            .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
            .collect())
    }

    /// Verifies the audit log's hash chain.
    pub fn verify_audit(&self) -> Result<AuditVerdict, ApiError> {
        let report = gatehouse_audit::verify(self.options.audit_path())
            .map_err(|e| ApiError::new(ErrorCode::AuditUnreadable, e.to_string()))?;
        Ok(AuditVerdict {
            ok: report.ok,
            records: report.records,
            problem: report
                .first_broken
                .as_ref()
                .map(|b| ApiError::new(b.kind.into(), format!("line {}: {}", b.line, b.detail))),
        })
    }

    /// The raw JSON-RPC recorded for one server, or all.
    pub fn traffic(&self, server: Option<&str>) -> Vec<TrafficEntry> {
        self.tap.entries(server)
    }
}
