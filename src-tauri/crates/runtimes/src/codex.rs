//! Codex's MCP OAuth credential stores, chosen by `mcp_oauth_credentials_store` in
//! `$CODEX_HOME/config.toml` exactly as Codex 0.171.0 chooses them:
//! - `file`: `$CODEX_HOME/.credentials.json`, a map of key → entry in the file shape
//!   ([`CodexFileStore`]), read and written under Codex's own `flock` on
//!   `$CODEX_HOME/mcp-oauth-locks/file-store.lock`;
//! - `keyring`: one OS keyring item per key (service `Codex MCP Credentials`, account = the key),
//!   its secret the JSON of Codex's `StoredOAuthTokens`, a different shape from the file's
//!   ([`CodexKeyringStore`]);
//! - `auto` (the default): the keyring item when the keyring answers and holds one, else the file
//!   entry; a write goes to the keyring, and to the file only when the keyring fails
//!   ([`CodexAutoStore`]).
//!
//! Measured with the real Codex 0.171.0 (`codex mcp login` against a loopback OAuth server, then
//! `secret-tool search`): on Linux its item is a Secret Service item written by the keyring crate
//! 3.6.3 with attributes `service` = `Codex MCP Credentials`, `username` = the key,
//! `target` = `default`, `application` = `rust-keyring` (label `<key>@Codex MCP
//! Credentials:default (keyring v3.6.3)`); it looks an item up by `service`, `username` and
//! `target` (falling back to `service` and `username` alone). [`OsKeyring`] goes through the same
//! crate and version, so it writes and finds the very same item. Its secret:
//! `{"server_name", "url", "issuer", "client_id", "token_response": {"access_token",
//! "token_type": "bearer", "expires_in", "refresh_token", "scope": "a b"}, "expires_at": ms}`.
//! A file-shaped secret there reads as `unknown` in `codex mcp list`; an item in the keyring
//! shadows the file entry in `auto` even when expired. tests/tests/codex_cli.rs pins all this
//! against the real CLI.
//!
//! Codex keeps no needs-auth cache (it re-reads its store on every connection), so
//! `clear_needs_auth` is a no-op here.

use crate::atomic::{lock_path_for, read_json_object, update_json_object, FileMode, UpdateOptions};
use crate::claude::{millis, on_disk_is_fresher, set_pair, PairFields};
use crate::config::{CodexStoreMode, RuntimePaths};
use crate::lock::{FileLock, DEFAULT_LOCK_TIMEOUT};
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

/// The directory of Codex's OAuth locks in `$CODEX_HOME`, and its file store's lock in it.
pub const CODEX_LOCK_DIR: &str = "mcp-oauth-locks";
pub const CODEX_FILE_STORE_LOCK: &str = "file-store.lock";

/// Codex's per-credential refresh lock: `$CODEX_HOME/mcp-oauth-locks/<sha256 hex of the key>.lock`.
/// Measured with Codex 0.171.0: before refreshing a credential it takes an exclusive `flock` on
/// this file (a `codex exec` whose entry was due refreshed only once `flock(1)` let go of it),
/// and once it holds it re-reads its store (an entry made fresh while the lock was held was not
/// refreshed at all). A refresher that takes it around its own re-read of Codex's entry, refresh
/// and write-through therefore never presents a refresh token Codex is presenting.
pub fn codex_refresh_lock_path(codex_home: &Path, key: &CredentialKey) -> PathBuf {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(key.as_str().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    codex_home.join(CODEX_LOCK_DIR).join(format!("{hex}.lock"))
}

/// Takes Codex's refresh lock for `key` ([`codex_refresh_lock_path`]; its directory created as
/// Codex creates it), waiting up to `timeout`; past it, [`RuntimeError::Busy`]. Held until the
/// returned lock is dropped.
pub fn lock_codex_refresh(
    codex_home: &Path,
    key: &CredentialKey,
    timeout: Duration,
) -> Result<FileLock, RuntimeError> {
    let path = codex_refresh_lock_path(codex_home, key);
    if let Some(dir) = path.parent() {
        crate::atomic::create_private_dir(codex_home)?;
        std::fs::create_dir_all(dir)
            .map_err(|e| crate::atomic::io_error(dir, "cannot create the directory", e))?;
    }
    FileLock::acquire(&path, timeout).map_err(|e| match e {
        RuntimeError::Busy { what, .. } => RuntimeError::Busy {
            what,
            message: format!(
                "Codex held its refresh lock for more than {} ms",
                timeout.as_millis()
            ),
        },
        other => other,
    })
}

/// The store Codex uses under `mode`. `known_keys` are the keys the keyring reports from
/// `read_all` (a keyring cannot be listed): the keys of the servers in Codex's config.
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
            Box::new(CodexAutoStore::new(keyring(), CodexFileStore::new(paths)))
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

    /// `.credentials.json.patchbay.lock` beside the file: our own writers' lock, taken inside
    /// Codex's ([`CodexFileStore::codex_lock_path`]).
    pub fn lock_path(&self) -> PathBuf {
        lock_path_for(&self.path)
    }

    /// `$CODEX_HOME/mcp-oauth-locks/file-store.lock`: Codex 0.171.0 holds an exclusive `flock`
    /// on it around every complete read-modify-write of its file store, and around its reads
    /// (measured: `codex mcp list` waits while `flock(1)` holds it). We take it around ours, and
    /// around our reads when Codex has created it, so Codex never sees half our change nor we
    /// half of its (it writes the file in place).
    pub fn codex_lock_path(&self) -> PathBuf {
        let home = self.path.parent().unwrap_or(Path::new(""));
        home.join(CODEX_LOCK_DIR).join(CODEX_FILE_STORE_LOCK)
    }

    /// Takes Codex's lock. `for_write`: create its directory when missing (Codex creates it the
    /// same way); else, without the directory, Codex has never locked here and we skip it.
    fn codex_lock(&self, for_write: bool) -> Result<Option<FileLock>, RuntimeError> {
        let path = self.codex_lock_path();
        let dir = path.parent().unwrap_or(Path::new(""));
        if !dir.is_dir() {
            if !for_write {
                return Ok(None);
            }
            if let Some(home) = dir.parent() {
                crate::atomic::create_private_dir(home)?;
            }
            std::fs::create_dir_all(dir)
                .map_err(|e| crate::atomic::io_error(dir, "cannot create the directory", e))?;
        }
        match FileLock::acquire(&path, self.lock_timeout) {
            Ok(lock) => Ok(Some(lock)),
            Err(RuntimeError::Busy { what, .. }) => Err(RuntimeError::Busy {
                what,
                message: format!(
                    "Codex held its credential-store lock for more than {} ms",
                    self.lock_timeout.as_millis()
                ),
            }),
            Err(e) => Err(e),
        }
    }

    /// The raw entry under `key`, if any.
    fn entry(&self, key: &CredentialKey) -> Result<Option<Map<String, Value>>, RuntimeError> {
        let _codex = self.codex_lock(false)?;
        Ok(read_json_object(&self.path)?.and_then(|mut root| {
            match root.shift_remove(key.as_str()) {
                Some(Value::Object(entry)) => Some(entry),
                _ => None,
            }
        }))
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
        let _codex = self.codex_lock(false)?;
        Ok(read_json_object(&self.path)?
            .unwrap_or_default()
            .iter()
            .filter_map(|(key, entry)| parse_entry(key, entry.as_object()?))
            .collect())
    }

    fn read(&self, key: &CredentialKey) -> Result<Option<RuntimeCredential>, RuntimeError> {
        let _codex = self.codex_lock(false)?;
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
        let _codex = self.codex_lock(true)?;
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
        if !self.path.exists() {
            return Ok(false);
        }
        let _codex = self.codex_lock(true)?;
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

/// Codex's keyring store: one item per key, its secret Codex's `StoredOAuthTokens` as JSON (see
/// the module docs). Reads also accept a file-shaped item (what Patchbay wrote before this shape
/// was measured), and a rewrite turns it into Codex's shape.
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
            .and_then(|entry| parse_stored_tokens(key.as_str(), &entry)))
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
            .is_some_and(|e| stored_tokens_are_fresher(e, credential, now))
        {
            return Ok(WriteOutcome::KeptFresher);
        }
        let mut entry = existing.unwrap_or_default();
        fill_stored_tokens(&mut entry, credential, now);
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

/// Codex's `auto` mode, call by call as Codex does it: read the keyring item, and the file entry
/// when the keyring holds none or fails (an item shadows the file entry even when expired); write
/// the keyring, and the file only when the keyring fails. A keyring write does not delete the
/// file entry (Codex's own save does): the item shadows it for Codex, and leaving it costs
/// nothing should the keyring later stop answering.
pub struct CodexAutoStore {
    keyring: CodexKeyringStore,
    file: CodexFileStore,
}

impl CodexAutoStore {
    pub fn new(keyring: CodexKeyringStore, file: CodexFileStore) -> Self {
        CodexAutoStore { keyring, file }
    }

    pub fn file(&self) -> &CodexFileStore {
        &self.file
    }
}

impl RuntimeStore for CodexAutoStore {
    fn runtime(&self) -> Runtime {
        Runtime::Codex
    }

    fn read_all(&self) -> Result<Vec<RuntimeCredential>, RuntimeError> {
        let mut all = match self.keyring.read_all() {
            Ok(all) => all,
            Err(e) => {
                tracing::debug!("Codex store: the keyring failed ({e}); reading the file");
                Vec::new()
            }
        };
        for entry in self.file.read_all()? {
            if !all.iter().any(|c| c.key == entry.key) {
                all.push(entry);
            }
        }
        Ok(all)
    }

    fn read(&self, key: &CredentialKey) -> Result<Option<RuntimeCredential>, RuntimeError> {
        match self.keyring.read(key) {
            Ok(Some(credential)) => Ok(Some(credential)),
            Ok(None) => self.file.read(key),
            Err(e) => {
                tracing::debug!("Codex store: the keyring failed ({e}); reading the file");
                self.file.read(key)
            }
        }
    }

    fn write(
        &self,
        credential: &RuntimeCredential,
        now: DateTime<Utc>,
    ) -> Result<WriteOutcome, RuntimeError> {
        match self.keyring.entry(&credential.key) {
            Err(e) => {
                tracing::debug!("Codex store: the keyring failed ({e}); writing the file");
                return self.file.write(credential, now);
            }
            // What Codex reads now is the file entry: a fresher one there is kept.
            Ok(None) => {
                if self
                    .file
                    .entry(&credential.key)?
                    .is_some_and(|e| is_fresher(&e, credential, now))
                {
                    return Ok(WriteOutcome::KeptFresher);
                }
            }
            Ok(Some(_)) => {}
        }
        match self.keyring.write(credential, now) {
            Ok(outcome) => Ok(outcome),
            Err(e) => {
                tracing::debug!(
                    "Codex store: the keyring refused the write ({e}); writing the file"
                );
                self.file.write(credential, now)
            }
        }
    }

    /// From both places (either may hold the entry Codex reads).
    fn remove(&self, key: &CredentialKey) -> Result<bool, RuntimeError> {
        let from_file = self.file.remove(key)?;
        let from_keyring = match self.keyring.remove(key) {
            Ok(removed) => removed,
            // Nothing there that Codex could read either.
            Err(e) if !from_file => return Err(e),
            Err(e) => {
                tracing::debug!("Codex store: the keyring failed ({e}) removing {key}");
                false
            }
        };
        Ok(from_file || from_keyring)
    }

    fn clear_needs_auth(&self, _server_name: &str) -> Result<(), RuntimeError> {
        Ok(())
    }

    /// The file's directory (a keyring item change is not a file event).
    fn watch_targets(&self) -> Vec<(PathBuf, Vec<String>)> {
        self.file.watch_targets()
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

/// `token_type` as Patchbay writes it (Codex reads it case-insensitively; its own items say
/// `bearer`).
const BEARER: &str = "Bearer";

/// The members of a file-shaped item (Patchbay's keyring writes before the shape was measured)
/// that `StoredOAuthTokens` keeps elsewhere: dropped when such an item is rewritten.
const FILE_SHAPE_ONLY: [&str; 4] = ["server_url", "access_token", "refresh_token", "scopes"];

/// An item in the file's shape rather than `StoredOAuthTokens`'.
fn is_file_shaped(entry: &Map<String, Value>) -> bool {
    !entry.contains_key("token_response") && entry.contains_key("access_token")
}

/// A keyring item (Codex's `StoredOAuthTokens`, or a file-shaped one) as a credential. `None`
/// without an access token.
fn parse_stored_tokens(key: &str, entry: &Map<String, Value>) -> Option<RuntimeCredential> {
    if is_file_shaped(entry) {
        return parse_entry(key, entry);
    }
    let response = entry.get("token_response")?.as_object()?;
    let text = |map: &Map<String, Value>, name: &str| {
        map.get(name).and_then(Value::as_str).map(str::to_string)
    };
    let key = CredentialKey(key.to_string());
    // A space-separated string as OAuth sends it; a list accepted too.
    let scope = match response.get("scope") {
        Some(Value::String(scope)) => Some(scope.clone()),
        Some(Value::Array(scopes)) => Some(
            scopes
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    };
    Some(RuntimeCredential {
        access_token: Secret::new(text(response, "access_token")?),
        refresh_token: text(response, "refresh_token").map(Secret::new),
        expires_at: millis(entry.get("expires_at")).and_then(DateTime::from_timestamp_millis),
        server_name: text(entry, "server_name").unwrap_or_else(|| key.server_name().to_string()),
        server_url: text(entry, "url").unwrap_or_default(),
        scope,
        client_id: text(entry, "client_id").filter(|id| !id.is_empty()),
        client_secret: None,
        issuer: text(entry, "issuer"),
        key,
    })
}

fn stored_tokens_are_fresher(
    entry: &Map<String, Value>,
    ours: &RuntimeCredential,
    now: DateTime<Utc>,
) -> bool {
    if is_file_shaped(entry) {
        return is_fresher(entry, ours, now);
    }
    let has_access = entry
        .get("token_response")
        .and_then(|r| r.get("access_token"))
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    on_disk_is_fresher(has_access, millis(entry.get("expires_at")), ours, now)
}

/// Writes `c` into a keyring item in Codex's `StoredOAuthTokens` shape, keeping every member we
/// do not set (in the item and in its `token_response`). The pair is replaced as a whole (an
/// absent refresh token or expiry removes the stored one); `expires_in` is the whole seconds left
/// until `expires_at` at `now` (0 once past, as Codex itself sets it), absent with no expiry.
fn fill_stored_tokens(entry: &mut Map<String, Value>, c: &RuntimeCredential, now: DateTime<Utc>) {
    if is_file_shaped(entry) {
        for name in FILE_SHAPE_ONLY {
            entry.shift_remove(name);
        }
    }
    entry.insert("server_name".into(), json!(c.server_name));
    entry.insert("url".into(), json!(c.server_url));
    match &c.client_id {
        Some(client_id) => {
            entry.insert("client_id".into(), json!(client_id));
        }
        // A required member: without it Codex cannot read the item at all.
        None => {
            entry.entry("client_id").or_insert_with(|| json!(""));
        }
    }
    if let Some(issuer) = &c.issuer {
        entry.insert("issuer".into(), json!(issuer));
    }
    let mut response = match entry.shift_remove("token_response") {
        Some(Value::Object(response)) => response,
        _ => Map::new(),
    };
    response.insert("access_token".into(), json!(c.access_token.expose()));
    response.insert("token_type".into(), json!(BEARER));
    match &c.refresh_token {
        Some(token) => {
            response.insert("refresh_token".into(), json!(token.expose()));
        }
        None => {
            response.shift_remove("refresh_token");
        }
    }
    match c.expires_at {
        Some(expires_at) => {
            let left = (expires_at - now).num_seconds().max(0);
            response.insert("expires_in".into(), json!(left));
            entry.insert("expires_at".into(), json!(expires_at.timestamp_millis()));
        }
        None => {
            response.shift_remove("expires_in");
            entry.shift_remove("expires_at");
        }
    }
    if let Some(scope) = &c.scope {
        response.insert("scope".into(), json!(scope));
    }
    entry.insert("token_response".into(), Value::Object(response));
}
