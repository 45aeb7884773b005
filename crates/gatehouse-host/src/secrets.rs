//! Secrets referenced from the config (bearer tokens, API keys for stdio servers).
//!
//! They live in the OS keychain only, never in config files, logs or the traffic tap. The
//! [`SecretStore`] trait is the boundary: [`KeyringStore`] is the real keychain (Secret Service
//! on Linux), [`MemoryStore`] is for unit tests.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use crate::HostError;

/// The keychain service name every Gatehouse secret is stored under.
pub const KEYCHAIN_SERVICE: &str = "gatehouse";

/// A secret value. `Debug` is redacted so a secret cannot leak through a log line or a panic.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    pub fn new(value: impl Into<String>) -> Self {
        SecretValue(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

/// Where secrets live. Implementations must be safe to call from any thread; callers in async
/// code run them off the async runtime (keychain calls block on D-Bus).
pub trait SecretStore: Send + Sync {
    /// The secret, or `Ok(None)` when no secret of that name exists.
    fn get(&self, name: &str) -> Result<Option<SecretValue>, HostError>;
    fn set(&self, name: &str, value: &SecretValue) -> Result<(), HostError>;
    /// Removes the secret; removing an absent secret is not an error.
    fn delete(&self, name: &str) -> Result<(), HostError>;
}

/// Checks a secret name: 1 to 128 characters from `[A-Za-z0-9._-]`, so names are easy to type,
/// quote and reference as `${secret:NAME}`.
pub fn validate_name(name: &str) -> Result<(), HostError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(HostError::Secret {
            name: name.to_string(),
            detail: "a secret name is 1 to 128 characters from A-Z a-z 0-9 . _ -".into(),
        })
    }
}

/// `text` with every character outside `[A-Za-z0-9._-]` replaced by `replacement`: a secret
/// name or file name derived from a server or variable name.
pub(crate) fn to_identifier(text: &str, replacement: char) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                replacement
            }
        })
        .collect()
}

/// The OS keychain through the `keyring` crate (Secret Service on Linux).
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyringStore;

impl KeyringStore {
    fn entry(name: &str) -> Result<keyring::Entry, HostError> {
        validate_name(name)?;
        keyring::Entry::new(KEYCHAIN_SERVICE, name).map_err(|e| keychain_error(name, e))
    }
}

fn keychain_error(name: &str, error: keyring::Error) -> HostError {
    let hint = match error {
        keyring::Error::NoStorageAccess(_)
        | keyring::Error::PlatformFailure(_)
        | keyring::Error::NoDefaultStore => {
            "; is a Secret Service (gnome-keyring, KWallet) running and unlocked in this session?"
        }
        _ => "",
    };
    HostError::Secret {
        name: name.to_string(),
        detail: format!("OS keychain: {error}{hint}"),
    }
}

impl SecretStore for KeyringStore {
    fn get(&self, name: &str) -> Result<Option<SecretValue>, HostError> {
        match Self::entry(name)?.get_password() {
            Ok(value) => Ok(Some(SecretValue(value))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(keychain_error(name, e)),
        }
    }

    fn set(&self, name: &str, value: &SecretValue) -> Result<(), HostError> {
        if value.0.is_empty() {
            return Err(HostError::Secret {
                name: name.to_string(),
                detail: "the value is empty; nothing was stored".into(),
            });
        }
        Self::entry(name)?
            .set_password(&value.0)
            .map_err(|e| keychain_error(name, e))
    }

    fn delete(&self, name: &str) -> Result<(), HostError> {
        match Self::entry(name)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(keychain_error(name, e)),
        }
    }
}

/// An in-memory store for tests.
#[derive(Debug, Default)]
pub struct MemoryStore(Mutex<HashMap<String, SecretValue>>);

impl SecretStore for MemoryStore {
    fn get(&self, name: &str) -> Result<Option<SecretValue>, HostError> {
        validate_name(name)?;
        Ok(self
            .0
            .lock()
            .expect("secret map poisoned")
            .get(name)
            .cloned())
    }
    fn set(&self, name: &str, value: &SecretValue) -> Result<(), HostError> {
        validate_name(name)?;
        self.0
            .lock()
            .expect("secret map poisoned")
            .insert(name.to_string(), value.clone());
        Ok(())
    }
    fn delete(&self, name: &str) -> Result<(), HostError> {
        validate_name(name)?;
        self.0.lock().expect("secret map poisoned").remove(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(validate_name("github-token.v2_x").is_ok());
        for bad in ["", "a b", "a/b", "${x}", &"x".repeat(129)] {
            assert_eq!(
                validate_name(bad).unwrap_err().code().as_str(),
                "secret_unavailable",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn debug_never_shows_the_value() {
        let value = SecretValue::new("hunter2");
        assert!(!format!("{value:?}").contains("hunter2"));
    }

    #[test]
    fn memory_store_round_trips() {
        let store = MemoryStore::default();
        assert_eq!(store.get("t").unwrap(), None);
        store.set("t", &SecretValue::new("v")).unwrap();
        assert_eq!(store.get("t").unwrap(), Some(SecretValue::new("v")));
        store.delete("t").unwrap();
        store.delete("t").unwrap();
        assert_eq!(store.get("t").unwrap(), None);
    }
}
