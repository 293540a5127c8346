//! Codex's MCP OAuth credential store: `$CODEX_HOME/.credentials.json`, or the OS keyring
//! (service `Codex MCP Credentials`, account = the key), chosen by `mcp_oauth_credentials_store`.
//!
//! Codex keeps no needs-auth cache (it re-reads its store on every connection), so
//! `clear_needs_auth` is a no-op here.

use crate::atomic::{lock_path_for, read_json_object, update_json_object, FileMode, UpdateOptions};
use crate::claude::{millis, on_disk_is_fresher, set_pair, PairFields};
use crate::config::{CodexStoreMode, RuntimePaths};
use crate::lock::DEFAULT_LOCK_TIMEOUT;
use crate::{Runtime, RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_vault::Secret;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Codex's keyring service name.
pub const CODEX_KEYRING_SERVICE: &str = "Codex MCP Credentials";

/// The store Codex uses under `mode`: `File`, `Keyring`, or for `Auto` the keyring when it
/// answers (a read of a probe account succeeds or says "no entry"), else the file, as Codex
/// does. `known_keys` are the keys the keyring store reports from `read_all` (a keyring cannot
/// be listed): the keys of the servers in Codex's config.
pub fn codex_store(
    paths: &RuntimePaths,
    mode: CodexStoreMode,
    known_keys: Vec<CredentialKey>,
) -> Box<dyn RuntimeStore> {
    let keyring = || {
        CodexKeyringStore::new(
            Box::new(OsKeyring::new(CODEX_KEYRING_SERVICE)),
            known_keys.clone(),
        )
    };
    match mode {
        CodexStoreMode::File => Box::new(CodexFileStore::new(paths)),
        CodexStoreMode::Keyring => Box::new(keyring()),
        CodexStoreMode::Auto => {
            let probe = OsKeyring::new(CODEX_KEYRING_SERVICE).get("patchbay-probe");
            match probe {
                Ok(_) => Box::new(keyring()),
                Err(e) => {
                    tracing::debug!("Codex store: keyring unavailable ({e}), using the file");
                    Box::new(CodexFileStore::new(paths))
                }
            }
        }
    }
}

/// `$CODEX_HOME/.credentials.json`: `{ "<key>": { "server_name", "server_url", "client_id",
/// "access_token", "expires_at" (ms), "refresh_token", "scopes": [..], "issuer" } }`, mode 0600.
#[derive(Debug, Clone)]
pub struct CodexFileStore {
    path: PathBuf,
    lock_timeout: Duration,
}

impl CodexFileStore {
    pub fn new(paths: &RuntimePaths) -> Self {
        Self::at(paths.codex_credentials())
    }

    pub fn at(path: impl Into<PathBuf>) -> Self {
        CodexFileStore {
            path: path.into(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
    }

    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `.credentials.json.patchbay.lock` beside the file. (Codex's own `mcp-oauth-locks/` is a
    /// protocol we have not measured, so we do not take part in it.)
    pub fn lock_path(&self) -> PathBuf {
        lock_path_for(&self.path)
    }

    fn options(&self, create_if_missing: bool) -> UpdateOptions {
        UpdateOptions {
            lock_path: self.lock_path(),
            lock_timeout: self.lock_timeout,
            runtime_lock: None,
            create_if_missing,
            mode: FileMode::Private,
        }
    }
}

impl RuntimeStore for CodexFileStore {
    fn runtime(&self) -> Runtime {
        Runtime::Codex
    }

    fn read_all(&self) -> Result<Vec<RuntimeCredential>, RuntimeError> {
        Ok(read_json_object(&self.path)?
            .unwrap_or_default()
            .iter()
            .filter_map(|(key, entry)| parse_entry(key, entry.as_object()?))
            .collect())
    }

    fn read(&self, key: &CredentialKey) -> Result<Option<RuntimeCredential>, RuntimeError> {
        Ok(read_json_object(&self.path)?
            .and_then(|root| parse_entry(key.as_str(), root.get(key.as_str())?.as_object()?)))
    }

    fn write(
        &self,
        credential: &RuntimeCredential,
        now: DateTime<Utc>,
    ) -> Result<WriteOutcome, RuntimeError> {
        let key = credential.key.as_str();
        let path = &self.path;
        let mut outcome = WriteOutcome::Written;
        update_json_object(path, &self.options(true), &mut |root| {
            let existing = match root.get(key) {
                None => None,
                Some(Value::Object(entry)) => Some(entry),
                Some(other) => {
                    return Err(RuntimeError::Malformed {
                        path: path.clone(),
                        message: format!(
                            "{key:?}: expected an object, found {}",
                            crate::atomic::json_kind(other)
                        ),
                    })
                }
            };
            if existing.is_some_and(|e| is_fresher(e, credential, now)) {
                outcome = WriteOutcome::KeptFresher;
                return Ok(false);
            }
            outcome = WriteOutcome::Written;
            let mut entry = existing.cloned().unwrap_or_default();
            fill_entry(&mut entry, credential);
            let changed = existing != Some(&entry);
            root.insert(key.to_string(), Value::Object(entry));
            Ok(changed)
        })?;
        Ok(outcome)
    }

    fn remove(&self, key: &CredentialKey) -> Result<bool, RuntimeError> {
        let mut removed = false;
        update_json_object(&self.path, &self.options(false), &mut |root| {
            removed = root.shift_remove(key.as_str()).is_some();
            Ok(removed)
        })?;
        Ok(removed)
    }

    fn clear_needs_auth(&self, _server_name: &str) -> Result<(), RuntimeError> {
        Ok(())
    }

    fn watch_targets(&self) -> Vec<(PathBuf, Vec<String>)> {
        let dir = self
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        vec![(dir, vec![name])]
    }
}

/// The secret store behind [`CodexKeyringStore`]: the OS keyring, or a fake in tests.
pub trait KeyringBackend: Send + Sync {
    fn get(&self, account: &str) -> Result<Option<String>, RuntimeError>;
    fn set(&self, account: &str, value: &str) -> Result<(), RuntimeError>;
    /// `Ok(false)` when there was nothing to delete.
    fn delete(&self, account: &str) -> Result<bool, RuntimeError>;
}

/// The OS keyring through the keyring crate (Secret Service, Keychain, Credential Manager).
#[derive(Debug, Clone)]
pub struct OsKeyring {
    service: String,
}

impl OsKeyring {
    pub fn new(service: &str) -> Self {
        OsKeyring {
            service: service.to_string(),
        }
    }

    fn entry(&self, account: &str) -> Result<keyring::Entry, RuntimeError> {
        keyring::Entry::new(&self.service, account).map_err(|e| self.error(e))
    }

    /// keyring's Display never includes the secret.
    fn error(&self, e: keyring::Error) -> RuntimeError {
        RuntimeError::Busy {
            what: format!("the keyring ({})", self.service),
            message: e.to_string(),
        }
    }
}

impl KeyringBackend for OsKeyring {
    fn get(&self, account: &str) -> Result<Option<String>, RuntimeError> {
        match self.entry(account)?.get_password() {
            Ok(value) => Ok(Some(value)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(self.error(e)),
        }
    }

    fn set(&self, account: &str, value: &str) -> Result<(), RuntimeError> {
        self.entry(account)?
            .set_password(value)
            .map_err(|e| self.error(e))
    }

    fn delete(&self, account: &str) -> Result<bool, RuntimeError> {
        match self.entry(account)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(self.error(e)),
        }
    }
}

/// Codex's keyring store: one item per key, its value one entry of the file schema as JSON.
/// NOT VERIFIED: the reference measured the file; that the keyring item holds the same JSON
/// object is an assumption, to be checked against Codex with a working keyring.
pub struct CodexKeyringStore {
    backend: Box<dyn KeyringBackend>,
    keys: Vec<CredentialKey>,
    /// Serializes our own read-decide-write of one item within this process.
    write_lock: Mutex<()>,
}

impl CodexKeyringStore {
    pub fn new(backend: Box<dyn KeyringBackend>, known_keys: Vec<CredentialKey>) -> Self {
        CodexKeyringStore {
            backend,
            keys: known_keys,
            write_lock: Mutex::new(()),
        }
    }

    fn entry(&self, key: &CredentialKey) -> Result<Option<Map<String, Value>>, RuntimeError> {
        let Some(text) = self.backend.get(key.as_str())? else {
            return Ok(None);
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(entry)) => Ok(Some(entry)),
            _ => Err(RuntimeError::Malformed {
                path: PathBuf::from(format!("keyring:{CODEX_KEYRING_SERVICE}/{key}")),
                message: "the item is not a JSON object".into(),
            }),
        }
    }
}

impl RuntimeStore for CodexKeyringStore {
    fn runtime(&self) -> Runtime {
        Runtime::Codex
    }

    /// The entries of the known keys (a keyring cannot be listed).
    fn read_all(&self) -> Result<Vec<RuntimeCredential>, RuntimeError> {
        let mut all = Vec::new();
        for key in &self.keys {
            all.extend(self.read(key)?);
        }
        Ok(all)
    }

    fn read(&self, key: &CredentialKey) -> Result<Option<RuntimeCredential>, RuntimeError> {
        Ok(self
            .entry(key)?
            .and_then(|entry| parse_entry(key.as_str(), &entry)))
    }

    fn write(
        &self,
        credential: &RuntimeCredential,
        now: DateTime<Utc>,
    ) -> Result<WriteOutcome, RuntimeError> {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let existing = self.entry(&credential.key)?;
        if existing
            .as_ref()
            .is_some_and(|e| is_fresher(e, credential, now))
        {
            return Ok(WriteOutcome::KeptFresher);
        }
        let mut entry = existing.unwrap_or_default();
        fill_entry(&mut entry, credential);
        let text = serde_json::to_string(&entry).expect("JSON values serialize");
        self.backend.set(credential.key.as_str(), &text)?;
        Ok(WriteOutcome::Written)
    }

    fn remove(&self, key: &CredentialKey) -> Result<bool, RuntimeError> {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.backend.delete(key.as_str())
    }

    fn clear_needs_auth(&self, _server_name: &str) -> Result<(), RuntimeError> {
        Ok(())
    }

    /// Nothing to watch: a keyring item change is not a file event (and Codex does not rotate
    /// mid-session the way Claude Code does).
    fn watch_targets(&self) -> Vec<(PathBuf, Vec<String>)> {
        Vec::new()
    }
}

fn is_fresher(entry: &Map<String, Value>, ours: &RuntimeCredential, now: DateTime<Utc>) -> bool {
    let has_access = entry
        .get("access_token")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    on_disk_is_fresher(has_access, millis(entry.get("expires_at")), ours, now)
}

/// Same rules as Claude's: the token pair replaced together, client facts set when known,
/// unknown members kept. Codex's schema has no client secret.
const CODEX_PAIR: PairFields = PairFields {
    server_name: "server_name",
    server_url: "server_url",
    access_token: "access_token",
    refresh_token: "refresh_token",
    expires_at: "expires_at",
};

fn fill_entry(entry: &mut Map<String, Value>, c: &RuntimeCredential) {
    set_pair(entry, &CODEX_PAIR, c);
    if let Some(client_id) = &c.client_id {
        entry.insert("client_id".into(), json!(client_id));
    }
    if let Some(scope) = &c.scope {
        let scopes: Vec<&str> = scope.split_whitespace().collect();
        entry.insert("scopes".into(), json!(scopes));
    }
    if let Some(issuer) = &c.issuer {
        entry.insert("issuer".into(), json!(issuer));
    }
}

fn parse_entry(key: &str, entry: &Map<String, Value>) -> Option<RuntimeCredential> {
    let text = |name: &str| entry.get(name).and_then(Value::as_str).map(str::to_string);
    let key = CredentialKey(key.to_string());
    let scope = entry.get("scopes").and_then(Value::as_array).map(|scopes| {
        scopes
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" ")
    });
    Some(RuntimeCredential {
        access_token: Secret::new(text("access_token")?),
        refresh_token: text("refresh_token").map(Secret::new),
        expires_at: millis(entry.get("expires_at")).and_then(DateTime::from_timestamp_millis),
        server_name: text("server_name").unwrap_or_else(|| key.server_name().to_string()),
        server_url: text("server_url").unwrap_or_default(),
        scope,
        client_id: text("client_id"),
        client_secret: None,
        issuer: text("issuer"),
        key,
    })
}
