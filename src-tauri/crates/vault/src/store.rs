//! The keychain seam: a trait over "get/set/delete one item", the real OS keychain through the
//! keyring crate, and an in-memory store for unit tests that can also play "unreachable".

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::Secret;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store did not answer (locked, no Secret Service, D-Bus down). Retryable; never "missing".
    #[error("the OS keychain did not answer: {0}")]
    Unreachable(String),
    /// The store answered and refused (bad attribute, item too large, access denied). Terminal.
    #[error("the OS keychain refused the request: {0}")]
    Rejected(String),
}

pub trait SecretStore: Send + Sync {
    /// `Ok(None)` only when the store answered that there is no such item.
    fn get(&self, account: &str) -> Result<Option<Secret>, StoreError>;
    fn set(&self, account: &str, value: &Secret) -> Result<(), StoreError>;
    /// `Ok(false)` when there was nothing to delete.
    fn delete(&self, account: &str) -> Result<bool, StoreError>;
}

/// The OS keychain: Secret Service on Linux, Keychain on macOS, Credential Manager on Windows.
pub struct KeyringStore {
    service: String,
}

impl KeyringStore {
    pub fn new(service: impl Into<String>) -> Self {
        KeyringStore {
            service: service.into(),
        }
    }

    fn entry(&self, account: &str) -> Result<keyring::Entry, StoreError> {
        keyring::Entry::new(&self.service, account).map_err(map_keyring_error)
    }
}

/// keyring's Display never includes the secret (BadEncoding prints a fixed text), so the
/// message is safe to carry.
fn map_keyring_error(e: keyring::Error) -> StoreError {
    match e {
        // Locked collection, no Secret Service, D-Bus down, prompt dismissed: try again later.
        keyring::Error::PlatformFailure(_) | keyring::Error::NoStorageAccess(_) => {
            StoreError::Unreachable(format!("{e}{}", no_bus_hint()))
        }
        other => StoreError::Rejected(other.to_string()),
    }
}

/// Why the Secret Service cannot be reached when no session bus was found at all (see
/// [`crate::session_bus`]): the usual cause under an MCP client's stripped environment.
fn no_bus_hint() -> &'static str {
    #[cfg(target_os = "linux")]
    if std::env::var_os(crate::session_bus::ADDRESS_VARIABLE).is_none_or(|a| a.is_empty()) {
        return "; no D-Bus session bus was found: DBUS_SESSION_BUS_ADDRESS is unset and no \
                bus is at $XDG_RUNTIME_DIR/bus or /run/user/UID/bus (pass \
                DBUS_SESSION_BUS_ADDRESS in the client's env for this server)";
    }
    ""
}

impl SecretStore for KeyringStore {
    fn get(&self, account: &str) -> Result<Option<Secret>, StoreError> {
        match self.entry(account)?.get_password() {
            Ok(value) => Ok(Some(Secret::new(value))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(map_keyring_error(e)),
        }
    }

    fn set(&self, account: &str, value: &Secret) -> Result<(), StoreError> {
        self.entry(account)?
            .set_password(value.expose())
            .map_err(map_keyring_error)
    }

    fn delete(&self, account: &str) -> Result<bool, StoreError> {
        match self.entry(account)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(map_keyring_error(e)),
        }
    }
}

/// An in-memory store for tests; `set_unreachable(true)` makes every call fail as a locked keychain would.
#[derive(Default)]
pub struct MemoryStore {
    items: Mutex<HashMap<String, Secret>>,
    unreachable: AtomicBool,
    get_calls: AtomicUsize,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set_unreachable(&self, unreachable: bool) {
        self.unreachable.store(unreachable, Ordering::SeqCst);
    }

    /// How many `get` calls reached the store (including ones that failed as unreachable).
    pub fn get_calls(&self) -> usize {
        self.get_calls.load(Ordering::SeqCst)
    }

    /// How many items the store holds; for tests asserting nothing was written or deleted.
    pub fn len(&self) -> usize {
        self.items().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.unreachable.load(Ordering::SeqCst) {
            return Err(StoreError::Unreachable(
                "memory store set unreachable".into(),
            ));
        }
        Ok(())
    }

    fn items(&self) -> std::sync::MutexGuard<'_, HashMap<String, Secret>> {
        // A panicking test thread must not take the store down with it.
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl SecretStore for MemoryStore {
    fn get(&self, account: &str) -> Result<Option<Secret>, StoreError> {
        self.get_calls.fetch_add(1, Ordering::SeqCst);
        self.check()?;
        Ok(self.items().get(account).cloned())
    }

    fn set(&self, account: &str, value: &Secret) -> Result<(), StoreError> {
        self.check()?;
        self.items().insert(account.to_string(), value.clone());
        Ok(())
    }

    fn delete(&self, account: &str) -> Result<bool, StoreError> {
        self.check()?;
        Ok(self.items().remove(account).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_store_roundtrip_unreachable_and_counter() {
        let s = MemoryStore::new();
        assert_eq!(s.get("a").unwrap(), None);
        s.set("a", &Secret::new("v")).unwrap();
        assert_eq!(s.get("a").unwrap().unwrap().expose(), "v");
        s.set_unreachable(true);
        assert!(matches!(s.get("a"), Err(StoreError::Unreachable(_))));
        assert!(matches!(s.delete("a"), Err(StoreError::Unreachable(_))));
        s.set_unreachable(false);
        assert!(s.delete("a").unwrap());
        assert!(!s.delete("a").unwrap());
        assert_eq!(s.get_calls(), 3);
    }

    #[test]
    fn keyring_errors_map_to_unreachable_or_rejected() {
        let boxed = || -> Box<dyn std::error::Error + Send + Sync> { "x".into() };
        assert!(matches!(
            map_keyring_error(keyring::Error::PlatformFailure(boxed())),
            StoreError::Unreachable(_)
        ));
        assert!(matches!(
            map_keyring_error(keyring::Error::NoStorageAccess(boxed())),
            StoreError::Unreachable(_)
        ));
        let bad = map_keyring_error(keyring::Error::BadEncoding(b"hunter2".to_vec()));
        assert!(matches!(bad, StoreError::Rejected(_)));
        assert!(!bad.to_string().contains("hunter2"));
    }
}
