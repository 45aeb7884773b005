//! What every front end gets back from the host: errors as [`ApiError`] (a stable code and a
//! sentence), and [`Change`]s through its [`Notifier`].

use std::sync::Arc;

use serde::Serialize;

use crate::ErrorCode;
use crate::HostError;

/// What changed, for the window to refetch. Never a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A prompt card changed; `attention` when a new one needs the user.
    Prompts {
        prompt_id: u64,
        attention: bool,
    },
    Servers {
        name: String,
    },
    Audit,
    Traffic {
        server: String,
    },
    /// An AI client connected or left through a gateway.
    Clients,
}

/// How the host tells its front end that something changed.
pub type Notifier = Arc<dyn Fn(Change) + Send + Sync>;

/// An error for the window: a stable code and a sentence saying what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiError {
    /// The stable code, serialized as its snake_case name.
    pub code: ErrorCode,
    pub message: String,
    /// The server or the gate said no (see [`HostError::is_refusal`]), rather than the
    /// config, the machine or the network failing: the CLI exits 1 for these, 2 otherwise.
    #[serde(skip)]
    pub refusal: bool,
    /// The JSON-RPC error code the server answered with, when the server (not Gatehouse)
    /// refused: the gateway passes it on unchanged.
    #[serde(skip)]
    pub server_code: Option<i32>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            refusal: false,
            server_code: None,
        }
    }
}

impl From<HostError> for ApiError {
    fn from(error: HostError) -> Self {
        let server_code = match &error {
            HostError::ServerError { code, .. } => Some(*code),
            _ => None,
        };
        ApiError {
            refusal: error.is_refusal(),
            server_code,
            ..ApiError::new(error.code(), error.to_string())
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}
