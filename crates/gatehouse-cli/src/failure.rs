//! A command that did not succeed: its stable code, its sentence and its exit status.

use gatehouse_host::HostError;
use gatehouse_host::host::ApiError;

/// A command that did not succeed: what to print and how to exit.
#[derive(Debug)]
pub struct Failure {
    pub code: gatehouse_host::ErrorCode,
    pub message: String,
    pub exit: u8,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: gatehouse_host::ErrorCode::Usage,
            message: message.into(),
            exit: 2,
        }
    }
    pub fn exit_code(&self) -> u8 {
        self.exit
    }
}

impl From<HostError> for Failure {
    fn from(error: HostError) -> Self {
        Failure {
            code: error.code(),
            message: error.to_string(),
            exit: if error.is_refusal() { 1 } else { 2 },
        }
    }
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Self {
        Failure {
            exit: if error.refusal { 1 } else { 2 },
            code: error.code,
            message: error.message,
        }
    }
}
