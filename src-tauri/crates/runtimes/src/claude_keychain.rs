//! Claude Code's credentials in the macOS login Keychain: one generic password item (service
//! `Claude Code-credentials[-<8 hex>]`, account the user name; see
//! [`crate::config::claude_keychain_service`] and [`crate::config::claude_keychain_account`])
//! whose secret is the whole credentials JSON, the same object as `.credentials.json`
//! (`claudeAiOauth`, `mcpOAuth`, ...). As reported in shared/reference/runtime-credential-stores.md
//! and not verified on a Mac: the item is reached through the keyring crate, whose Secret Service
//! backend runs the same code path in the tests here.
//!
//! [`ClaudeKeychainStore`] reads the item, applies the rules of [`crate::claude`] (the same
//! functions as the file store: one copy of them) and writes the whole object back. Our writers
//! are serialized by the same lock file as the file store's (`.credentials.json.patchbay.lock` in
//! Claude Code's config dir), and the needs-auth cache is still the file there. A write that
//! changes the item also takes, inside that lock, the write lock Claude Code 2.1.332 holds around
//! its own Keychain writes (`.storage-write.lock` in the same directory, [`crate::claude_lock`]),
//! and re-reads the item under it before setting it, so the two read-modify-writes cannot
//! interleave. Older releases take no lock: against those, the re-read right before setting
//! (starting again when it changed) is all there is; a Keychain item cannot be exchanged like a
//! file, so the remaining window (one Keychain round trip) is not closed: a change made inside it
//! is lost, and the reconciler re-applies ours on its next pass.
//!
//! Known, not handled (read in Claude Code 2.1.332's binary, not in the reference): when the JSON
//! grows too large, Claude Code moves sections into an encrypted `<service>-overflow-<a|b>` item
//! and leaves a `keychainOverflow` pointer in the main one. The pointer is kept like any other
//! member, and an entry we write to the main item wins over the overflow's (Claude Code merges
//! them so), but entries that live only in the overflow are invisible to [`RuntimeStore::read`].

use crate::atomic::{create_private_dir, lock_path_for, FileMode, Mutation, UpdateOptions};
use crate::claude::{
    after_write, clear_needs_auth_in, merge_entry, read_all_in, read_in, remove_entry,
    ClaudeFileStore,
};
use crate::claude_lock::{claude_write_lock_path, ClaudeWriteLock};
use crate::config::RuntimePaths;
use crate::lock::{FileLock, DEFAULT_LOCK_TIMEOUT};
use crate::{Runtime, RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_vault::Secret;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Attempts before giving up with `Busy` (each one saw the item change under it).
const MAX_ATTEMPTS: usize = 16;

/// The directory Claude Code 2.1.332 creates (proper-lockfile) beside its credentials around a
/// secure-storage write and removes after it: the only file event a Keychain write makes, so the
/// watcher listens for it (our own writes take it too: the pass that follows one writes nothing).
/// Read in its binary, not in the reference.
pub use crate::claude_lock::CLAUDE_WRITE_LOCK_DIR;

/// One secret item: the whole of what [`ClaudeKeychainStore`] keeps in the OS keychain.
pub trait CredentialItem: Send + Sync {
    /// `Ok(None)`: there is no item.
    fn get(&self) -> Result<Option<Secret>, RuntimeError>;
    /// Create or replace the item's secret.
    fn set(&self, value: &Secret) -> Result<(), RuntimeError>;
    /// Names the item in errors (never its content), e.g. `keychain:Claude Code-credentials`.
    fn name(&self) -> String;
}

/// An OS keychain item through the keyring crate: a generic password (service, account) in the
/// macOS login Keychain; a Secret Service item elsewhere.
#[derive(Debug, Clone)]
pub struct KeyringItem {
    service: String,
    account: String,
}

impl KeyringItem {
    pub fn new(service: impl Into<String>, account: impl Into<String>) -> Self {
        KeyringItem {
            service: service.into(),
            account: account.into(),
        }
    }

    pub fn service(&self) -> &str {
        &self.service
    }

    /// Delete the item (`Ok(false)`: there was none). The store never does: the item also holds
    /// the user's own Claude login. For tests and tools.
    pub fn delete(&self) -> Result<bool, RuntimeError> {
        match self.entry()?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(self.error(e)),
        }
    }

    fn entry(&self) -> Result<keyring::Entry, RuntimeError> {
        keyring::Entry::new(&self.service, &self.account).map_err(|e| self.error(e))
    }

    /// keyring's Display never includes the secret.
    fn error(&self, e: keyring::Error) -> RuntimeError {
        match e {
            keyring::Error::BadEncoding(_) => RuntimeError::Malformed {
                path: PathBuf::from(self.name()),
                message: "the item's secret is not UTF-8 text".into(),
            },
            e => RuntimeError::Busy {
                what: self.name(),
                message: e.to_string(),
            },
        }
    }
}

impl CredentialItem for KeyringItem {
    fn get(&self) -> Result<Option<Secret>, RuntimeError> {
        match self.entry()?.get_password() {
            Ok(value) => Ok(Some(Secret::new(value))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(self.error(e)),
        }
    }

    fn set(&self, value: &Secret) -> Result<(), RuntimeError> {
        self.entry()?
            .set_password(value.expose())
            .map_err(|e| self.error(e))
    }

    fn name(&self) -> String {
        format!("keychain:{}", self.service)
    }
}

/// Claude Code's credentials JSON held in one keychain item (macOS).
pub struct ClaudeKeychainStore {
    item: Box<dyn CredentialItem>,
    /// Our writers' lock: the file store's, `.credentials.json.patchbay.lock` in the config dir.
    lock: PathBuf,
    needs_auth: PathBuf,
    /// Where Claude Code's own write lock appears (see [`CLAUDE_WRITE_LOCK_DIR`]).
    claude_dir: PathBuf,
    lock_timeout: Duration,
}

impl std::fmt::Debug for ClaudeKeychainStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeKeychainStore")
            .field("item", &self.item.name())
            .field("lock", &self.lock)
            .field("needs_auth", &self.needs_auth)
            .finish()
    }
}

impl ClaudeKeychainStore {
    /// The login Keychain item Claude Code uses under `paths`.
    pub fn new(paths: &RuntimePaths) -> Self {
        Self::with_item(
            Box::new(KeyringItem::new(
                &paths.claude_keychain_service,
                &paths.claude_keychain_account,
            )),
            paths,
        )
    }

    /// Another item (a test service name, an in-memory one); the lock and the needs-auth cache
    /// where `paths` puts them.
    pub fn with_item(item: Box<dyn CredentialItem>, paths: &RuntimePaths) -> Self {
        let credentials = &paths.claude_credentials;
        ClaudeKeychainStore {
            item,
            lock: lock_path_for(credentials),
            needs_auth: paths.claude_needs_auth_cache(),
            claude_dir: credentials
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
    }

    /// How long a write waits for another Patchbay writer, and then for Claude Code's write lock
    /// (default 5 s each), before `Busy`.
    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    pub fn lock_path(&self) -> &Path {
        &self.lock
    }

    pub fn needs_auth_path(&self) -> &Path {
        &self.needs_auth
    }

    /// Whether the item exists.
    pub fn has_item(&self) -> Result<bool, RuntimeError> {
        Ok(self.item.get()?.is_some())
    }

    /// The item's name as errors give it, e.g. `keychain:Claude Code-credentials`.
    fn origin(&self) -> PathBuf {
        PathBuf::from(self.item.name())
    }

    fn parse(&self, text: &Secret) -> Result<Map<String, Value>, RuntimeError> {
        // serde_json's error names a position, never the text.
        match serde_json::from_str::<Value>(text.expose()) {
            Ok(Value::Object(object)) => Ok(object),
            Ok(other) => Err(RuntimeError::Malformed {
                path: self.origin(),
                message: format!(
                    "expected a JSON object, found {}",
                    crate::atomic::json_kind(&other)
                ),
            }),
            Err(e) => Err(RuntimeError::Malformed {
                path: self.origin(),
                message: format!("not valid JSON: {e}"),
            }),
        }
    }

    fn load(&self) -> Result<Option<Map<String, Value>>, RuntimeError> {
        self.item.get()?.map(|text| self.parse(&text)).transpose()
    }

    /// Claude Code's own write lock: the `.storage-write.lock` directory in its config dir.
    pub fn claude_lock_path(&self) -> PathBuf {
        claude_write_lock_path(&self.claude_dir)
    }

    /// Under our lock: read the item, apply `mutate`; when that changes something, take Claude
    /// Code's write lock too, re-read, and set the item when it did not change meanwhile (else
    /// start again from the new content). Whether the item was set.
    fn update(
        &self,
        create_if_missing: bool,
        mutate: &mut Mutation<'_>,
    ) -> Result<bool, RuntimeError> {
        if let Some(dir) = self.lock.parent() {
            create_private_dir(dir)?;
        }
        let ours = FileLock::acquire(&self.lock, self.lock_timeout)?;
        // Declared after ours: released before it.
        let mut claude_lock: Option<ClaudeWriteLock> = None;
        let mut seen = self.item.get()?;
        for _ in 0..MAX_ATTEMPTS {
            let mut object = match &seen {
                Some(text) => self.parse(text)?,
                None if create_if_missing => Map::new(),
                None => return Ok(false),
            };
            if !mutate(&mut object)? {
                return Ok(false);
            }
            if claude_lock.is_none() {
                // In the directory created above (our lock file's, beside the credentials). What
                // Claude Code wrote while we waited for it, the re-read below sees.
                claude_lock = Some(ClaudeWriteLock::acquire_under(
                    &self.claude_lock_path(),
                    self.lock_timeout,
                    &ours,
                )?);
            }
            // Compact, as Claude Code writes it (JSON.stringify).
            let text = Secret::new(serde_json::to_string(&object).expect("JSON values serialize"));
            let now = self.item.get()?;
            if now != seen {
                seen = now;
                continue;
            }
            self.item.set(&text)?;
            return Ok(true);
        }
        Err(RuntimeError::Busy {
            what: self.item.name(),
            message: format!("the item kept changing under us ({MAX_ATTEMPTS} attempts)"),
        })
    }

    fn cache_options(&self) -> UpdateOptions {
        UpdateOptions {
            lock_path: self.lock.clone(),
            lock_timeout: self.lock_timeout,
            runtime_lock: None,
            create_if_missing: false,
            mode: FileMode::Private,
        }
    }
}

impl RuntimeStore for ClaudeKeychainStore {
    fn runtime(&self) -> Runtime {
        Runtime::ClaudeCode
    }

    fn read_all(&self) -> Result<Vec<RuntimeCredential>, RuntimeError> {
        read_all_in(self.load()?.as_ref(), &self.origin())
    }

    fn read(&self, key: &CredentialKey) -> Result<Option<RuntimeCredential>, RuntimeError> {
        read_in(self.load()?.as_ref(), key, &self.origin())
    }

    /// As [`ClaudeFileStore`]'s write (the same merge), on the item; a missing item is created.
    fn write(
        &self,
        credential: &RuntimeCredential,
        now: DateTime<Utc>,
    ) -> Result<WriteOutcome, RuntimeError> {
        let origin = self.origin();
        let mut outcome = WriteOutcome::Written;
        self.update(true, &mut |root| {
            let (decided, changed) = merge_entry(root, credential, now, &origin)?;
            outcome = decided;
            Ok(changed)
        })?;
        after_write(self, credential, outcome);
        Ok(outcome)
    }

    fn remove(&self, key: &CredentialKey) -> Result<bool, RuntimeError> {
        let origin = self.origin();
        let mut removed = false;
        self.update(false, &mut |root| {
            removed = remove_entry(root, key, &origin)?;
            Ok(removed)
        })?;
        Ok(removed)
    }

    fn clear_needs_auth(&self, server_name: &str) -> Result<(), RuntimeError> {
        clear_needs_auth_in(&self.needs_auth, &self.cache_options(), server_name)
    }

    /// A Keychain write is no file event; Claude Code's write lock directory and the needs-auth
    /// cache are.
    fn watch_targets(&self) -> Vec<(PathBuf, Vec<String>)> {
        let name = |p: &Path| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let cache_dir = self
            .needs_auth
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        if cache_dir == self.claude_dir {
            vec![(
                cache_dir,
                vec![CLAUDE_WRITE_LOCK_DIR.to_string(), name(&self.needs_auth)],
            )]
        } else {
            vec![
                (
                    self.claude_dir.clone(),
                    vec![CLAUDE_WRITE_LOCK_DIR.to_string()],
                ),
                (cache_dir, vec![name(&self.needs_auth)]),
            ]
        }
    }
}

/// The store Claude Code uses on this platform: on macOS the login Keychain item
/// ([`choose_claude_store`]); elsewhere `.credentials.json`.
pub fn claude_store(paths: &RuntimePaths) -> Box<dyn RuntimeStore> {
    #[cfg(target_os = "macos")]
    {
        choose_claude_store(ClaudeKeychainStore::new(paths), ClaudeFileStore::new(paths))
    }
    #[cfg(not(target_os = "macos"))]
    {
        Box::new(ClaudeFileStore::new(paths))
    }
}

/// macOS: the Keychain item, the file being only Claude Code's fallback. The file store only when
/// the file exists and the Keychain answered that it has no item; a Keychain that does not answer
/// keeps the Keychain store (its errors are `Busy`, retried), never silently the file.
pub fn choose_claude_store(
    keychain: ClaudeKeychainStore,
    file: ClaudeFileStore,
) -> Box<dyn RuntimeStore> {
    match keychain.has_item() {
        Ok(false) if file.credentials_path().is_file() => Box::new(file),
        Ok(_) => Box::new(keychain),
        Err(e) => {
            tracing::warn!(
                "Claude Code's Keychain item cannot be read ({e}); keeping the Keychain store"
            );
            Box::new(keychain)
        }
    }
}
