//! Tool calls: gated and audited as every call, for the gateway ([`Host::call`], with the
//! downstream caller) and for the person ([`Host::call_tool`], elicitations as cards).

use serde::Serialize;
use serde_json::{Map, Value};

use super::{ApiError, Change, Host};
use crate::CallOptions;
use crate::broker::ElicitationRecord;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallOutcome {
    pub is_error: bool,
    pub text: String,
    pub result: Value,
    pub elicitations: Vec<ElicitationRecord>,
}

impl Host {
    /// Calls a tool for a front end that wants the outcome as the host produced it (the
    /// gateway): gated and audited as every call, with `options.caller` in the record.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: &CallOptions,
    ) -> Result<crate::ToolOutcome, ApiError> {
        let connection = self.connection_for(server, options).await?;
        let outcome = connection.call_tool(tool, arguments, options).await;
        (self.notify)(Change::Audit);
        (self.notify)(Change::Traffic {
            server: server.into(),
        });
        Ok(outcome?)
    }

    /// Calls a tool for a front end that shows every elicitation it caused, also when the
    /// call failed (the CLI's `call`): the outcome, and the elicitations recorded before a
    /// failure (empty on success, where the outcome carries them).
    pub async fn call_traced(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: &CallOptions,
    ) -> (Result<crate::ToolOutcome, ApiError>, Vec<ElicitationRecord>) {
        let connection = match self.connection_for(server, options).await {
            Ok(connection) => connection,
            Err(error) => return (Err(error), Vec::new()),
        };
        let (outcome, records) = connection.call_tool_traced(tool, arguments, options).await;
        (self.notify)(Change::Audit);
        (self.notify)(Change::Traffic {
            server: server.into(),
        });
        (outcome.map_err(ApiError::from), records)
    }

    /// Calls a tool; elicitations it causes become prompt cards meanwhile.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallOutcome, ApiError> {
        let connection = self.connection(server).await?;
        let (outcome, _records) = connection
            .call_tool_traced(tool, Some(arguments), &CallOptions::default())
            .await;
        (self.notify)(Change::Audit);
        (self.notify)(Change::Traffic {
            server: server.into(),
        });
        (self.notify)(Change::Servers {
            name: server.into(),
        });
        let outcome = outcome?;
        let text = crate::connection::result_text(&outcome.result);
        Ok(CallOutcome {
            is_error: outcome.is_error(),
            text,
            result: serde_json::to_value(&outcome.result).unwrap_or(Value::Null),
            elicitations: outcome.elicitations,
        })
    }
}
