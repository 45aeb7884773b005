//! `secret set | delete`: the OS keychain.

use std::io::{IsTerminal, Read};

use gatehouse_host::HostError;
use gatehouse_host::secrets::{SecretValue, validate_name};
use serde_json::json;

use crate::cli::SecretCommand;
use crate::commands::{Context, report};
use crate::failure::Failure;

/// Runs a keychain operation off the async runtime: Secret Service calls block on D-Bus.
async fn off_runtime<T: Send + 'static>(
    operation: impl FnOnce() -> Result<T, HostError> + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(operation)
        .await
        .map_err(|e| Failure::usage(format!("keychain task failed: {e}")))?
        .map_err(Failure::from)
}

pub async fn run(context: &Context, command: SecretCommand) -> Result<u8, Failure> {
    match command {
        SecretCommand::Set { name } => {
            validate_name(&name)?;
            let value = read_secret_value(&name)?;
            let (secrets, task_name) = (context.secrets.clone(), name.clone());
            off_runtime(move || secrets.set(&task_name, &value)).await?;
            report(
                context,
                json!({"stored": name}),
                &format!("stored secret {name:?} in the OS keychain"),
            );
            Ok(0)
        }
        SecretCommand::Delete { name } => {
            validate_name(&name)?;
            let (secrets, task_name) = (context.secrets.clone(), name.clone());
            off_runtime(move || secrets.delete(&task_name)).await?;
            report(
                context,
                json!({"deleted": name}),
                &format!("deleted secret {name:?}"),
            );
            Ok(0)
        }
    }
}

/// Reads a secret from stdin: with the terminal's echo off when stdin is a terminal, else the
/// whole input with one trailing newline removed.
fn read_secret_value(name: &str) -> Result<SecretValue, Failure> {
    let value = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("value for {name} (not echoed): "))
            .map_err(|e| Failure::usage(format!("cannot read the secret from the terminal: {e}")))?
    } else {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::usage(format!("cannot read the secret from stdin: {e}")))?;
        let trimmed = text.strip_suffix('\n').unwrap_or(&text);
        trimmed.strip_suffix('\r').unwrap_or(trimmed).to_string()
    };
    if value.is_empty() {
        return Err(Failure::usage(format!(
            "the value for secret {name:?} is empty; nothing was stored"
        )));
    }
    Ok(SecretValue::new(value))
}
