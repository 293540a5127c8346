//! Test doubles of [`RuntimeStore`]: [`MemoryRuntimeStore`] (no I/O, cannot be watched) and
//! [`JsonFileRuntimeStore`] (one JSON file replaced by temp file + rename, the way Claude Code
//! writes, so the watcher can be exercised without depending on a real runtime's format). Both
//! keep the contract: a write never clobbers a fresher entry. And [`MemoryCredentialItem`], a
//! keychain item in memory for [`crate::claude_keychain::ClaudeKeychainStore`].

use crate::claude_keychain::CredentialItem;
use crate::{Runtime, RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

#[derive(Debug)]
pub struct MemoryRuntimeStore {
    runtime: Runtime,
    entries: Mutex<BTreeMap<CredentialKey, RuntimeCredential>>,
    /// Server names with a cached "needs auth" verdict.
    needs_auth: Mutex<BTreeSet<String>>,
}

impl MemoryRuntimeStore {
    pub fn new(runtime: Runtime) -> MemoryRuntimeStore {
        MemoryRuntimeStore {
            runtime,
            entries: Mutex::new(BTreeMap::new()),
            needs_auth: Mutex::new(BTreeSet::new()),
        }
    }

    /// Put an entry as the runtime itself would (no freshness check): a refresh it did.
    pub fn put_raw(&self, credential: RuntimeCredential) {
        lock(&self.entries).insert(credential.key.clone(), credential);
    }

    /// Mark a server as cached "needs auth", as the runtime does after a 401.
    pub fn mark_needs_auth(&self, server_name: &str) {
        lock(&self.needs_auth).insert(server_name.to_owned());
    }

    pub fn needs_auth(&self, server_name: &str) -> bool {
        lock(&self.needs_auth).contains(server_name)
    }

    pub fn len(&self) -> usize {
        lock(&self.entries).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The stored entry is fresher when its access token is still valid at `now` and expires later
/// than the incoming one (an incoming pair without an expiry never loses to it).
fn stored_is_fresher(
    stored: &RuntimeCredential,
    incoming: &RuntimeCredential,
    now: DateTime<Utc>,
) -> bool {
    match (stored.expires_at, incoming.expires_at) {
        (Some(stored), Some(incoming)) => stored > now && stored > incoming,
        _ => false,
    }
}

impl RuntimeStore for MemoryRuntimeStore {
    fn runtime(&self) -> Runtime {
        self.runtime
    }

    fn read_all(&self) -> Result<Vec<RuntimeCredential>, RuntimeError> {
        Ok(lock(&self.entries).values().cloned().collect())
    }

    fn read(&self, key: &CredentialKey) -> Result<Option<RuntimeCredential>, RuntimeError> {
        Ok(lock(&self.entries).get(key).cloned())
    }

    fn write(
        &self,
        credential: &RuntimeCredential,
        now: DateTime<Utc>,
    ) -> Result<WriteOutcome, RuntimeError> {
        let mut entries = lock(&self.entries);
        if let Some(stored) = entries.get(&credential.key) {
            if stored_is_fresher(stored, credential, now) {
                return Ok(WriteOutcome::KeptFresher);
            }
        }
        let mut written = credential.clone();
        // Like the runtimes: a pair without a refresh token keeps the one stored.
        if written.refresh_token.is_none() {
            written.refresh_token = entries
                .get(&credential.key)
                .and_then(|s| s.refresh_token.clone());
        }
        entries.insert(credential.key.clone(), written);
        Ok(WriteOutcome::Written)
    }

    fn remove(&self, key: &CredentialKey) -> Result<bool, RuntimeError> {
        Ok(lock(&self.entries).remove(key).is_some())
    }

    fn clear_needs_auth(&self, server_name: &str) -> Result<(), RuntimeError> {
        lock(&self.needs_auth).remove(server_name);
        Ok(())
    }

    fn watch_targets(&self) -> Vec<(PathBuf, Vec<String>)> {
        Vec::new()
    }
}

/// A file-backed double: `{"<key>": {"server_name", "server_url", "access_token",
/// "refresh_token", "expires_at" (epoch ms)}}`, rewritten whole through a temp file and a rename.
#[derive(Debug)]
pub struct JsonFileRuntimeStore {
    runtime: Runtime,
    path: PathBuf,
    /// Serializes this process's writers (another process renaming over us is the race the real
    /// stores guard against; this double only needs to be correct for one writer at a time).
    write_lock: Mutex<()>,
}

impl JsonFileRuntimeStore {
    pub fn new(runtime: Runtime, path: PathBuf) -> JsonFileRuntimeStore {
        JsonFileRuntimeStore {
            runtime,
            path,
            write_lock: Mutex::new(()),
        }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Write an entry as the runtime does when it refreshed (no freshness check): a temp file in
    /// the same directory, renamed over the store.
    pub fn rotate(&self, credential: &RuntimeCredential) -> Result<(), RuntimeError> {
        let _guard = lock(&self.write_lock);
        let mut all = self.load()?;
        all.insert(credential.key.clone(), credential.clone());
        self.save(&all)
    }

    fn io(&self, e: impl std::fmt::Display) -> RuntimeError {
        RuntimeError::Io {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn load(&self) -> Result<BTreeMap<CredentialKey, RuntimeCredential>, RuntimeError> {
        let Some(text) = crate::atomic::read_text_bounded(&self.path)? else {
            return Ok(BTreeMap::new());
        };
        let malformed = |message: String| RuntimeError::Malformed {
            path: self.path.clone(),
            message,
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| malformed(e.to_string()))?;
        let object = value
            .as_object()
            .ok_or_else(|| malformed("not an object".into()))?;
        let text_of =
            |v: &serde_json::Value, k: &str| v.get(k).and_then(|s| s.as_str()).map(str::to_owned);
        let mut out = BTreeMap::new();
        for (key, v) in object {
            let key = CredentialKey(key.clone());
            out.insert(
                key.clone(),
                RuntimeCredential {
                    key,
                    server_name: text_of(v, "server_name").unwrap_or_default(),
                    server_url: text_of(v, "server_url").unwrap_or_default(),
                    access_token: text_of(v, "access_token")
                        .map(patchbay_vault::Secret::new)
                        .ok_or_else(|| malformed("an entry has no access_token".into()))?,
                    refresh_token: text_of(v, "refresh_token").map(patchbay_vault::Secret::new),
                    expires_at: v
                        .get("expires_at")
                        .and_then(|e| e.as_i64())
                        .and_then(DateTime::from_timestamp_millis),
                    scope: text_of(v, "scope"),
                    client_id: text_of(v, "client_id"),
                    client_secret: None,
                    issuer: text_of(v, "issuer"),
                },
            );
        }
        Ok(out)
    }

    fn save(&self, all: &BTreeMap<CredentialKey, RuntimeCredential>) -> Result<(), RuntimeError> {
        let mut object = serde_json::Map::new();
        for (key, c) in all {
            object.insert(
                key.as_str().to_owned(),
                serde_json::json!({
                    "server_name": c.server_name,
                    "server_url": c.server_url,
                    "access_token": c.access_token.expose(),
                    "refresh_token": c.refresh_token.as_ref().map(|s| s.expose()),
                    "expires_at": c.expires_at.map(|t| t.timestamp_millis()),
                    "scope": c.scope,
                    "client_id": c.client_id,
                    "issuer": c.issuer,
                }),
            );
        }
        let text = serde_json::to_string_pretty(&object).map_err(|e| self.io(e))?;
        let dir = self
            .path
            .parent()
            .ok_or_else(|| self.io("the store has no directory"))?;
        std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(format!(".tmp.{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, text).map_err(|e| self.io(e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| self.io(e))
    }
}

impl RuntimeStore for JsonFileRuntimeStore {
    fn runtime(&self) -> Runtime {
        self.runtime
    }

    fn read_all(&self) -> Result<Vec<RuntimeCredential>, RuntimeError> {
        Ok(self.load()?.into_values().collect())
    }

    fn read(&self, key: &CredentialKey) -> Result<Option<RuntimeCredential>, RuntimeError> {
        Ok(self.load()?.remove(key))
    }

    fn write(
        &self,
        credential: &RuntimeCredential,
        now: DateTime<Utc>,
    ) -> Result<WriteOutcome, RuntimeError> {
        let _guard = lock(&self.write_lock);
        let mut all = self.load()?;
        let mut written = credential.clone();
        if let Some(stored) = all.get(&credential.key) {
            if stored_is_fresher(stored, credential, now) {
                return Ok(WriteOutcome::KeptFresher);
            }
            if written.refresh_token.is_none() {
                written.refresh_token = stored.refresh_token.clone();
            }
        }
        all.insert(credential.key.clone(), written);
        self.save(&all)?;
        Ok(WriteOutcome::Written)
    }

    fn remove(&self, key: &CredentialKey) -> Result<bool, RuntimeError> {
        let _guard = lock(&self.write_lock);
        let mut all = self.load()?;
        let had = all.remove(key).is_some();
        if had {
            self.save(&all)?;
        }
        Ok(had)
    }

    fn clear_needs_auth(&self, _server_name: &str) -> Result<(), RuntimeError> {
        Ok(())
    }

    fn watch_targets(&self) -> Vec<(PathBuf, Vec<String>)> {
        match (self.path.parent(), self.path.file_name()) {
            (Some(dir), Some(name)) => {
                vec![(dir.to_path_buf(), vec![name.to_string_lossy().into_owned()])]
            }
            _ => Vec::new(),
        }
    }
}

/// A keychain item in memory. Clones share the item (one is given to the store, the test keeps
/// another to play the runtime writing behind our back).
#[derive(Clone, Default)]
pub struct MemoryCredentialItem {
    value: std::sync::Arc<Mutex<Option<patchbay_vault::Secret>>>,
    /// Runs on every `get` (after reading): a runtime's write landing between our reads.
    on_get: std::sync::Arc<Mutex<Option<GetHook>>>,
    sets: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

type GetHook = Box<dyn FnMut(&MemoryCredentialItem) + Send>;

impl std::fmt::Debug for MemoryCredentialItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryCredentialItem")
            .field("present", &lock(&self.value).is_some())
            .field("sets", &self.sets())
            .finish()
    }
}

impl MemoryCredentialItem {
    pub fn new() -> Self {
        Self::default()
    }

    /// The item's text, as the runtime would see it.
    pub fn text(&self) -> Option<String> {
        lock(&self.value).as_ref().map(|s| s.expose().to_string())
    }

    /// Replace the item as the runtime would (no lock, no merge).
    pub fn put_raw(&self, text: &str) {
        *lock(&self.value) = Some(patchbay_vault::Secret::new(text));
    }

    /// How many times the store set the item.
    pub fn sets(&self) -> usize {
        self.sets.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Call `hook` after every read (e.g. to write behind the store's back once).
    pub fn on_get(&self, hook: impl FnMut(&MemoryCredentialItem) + Send + 'static) {
        *lock(&self.on_get) = Some(Box::new(hook));
    }
}

impl CredentialItem for MemoryCredentialItem {
    fn get(&self) -> Result<Option<patchbay_vault::Secret>, RuntimeError> {
        let value = lock(&self.value).clone();
        let hook = lock(&self.on_get).take();
        if let Some(mut hook) = hook {
            hook(self);
            *lock(&self.on_get) = Some(hook);
        }
        Ok(value)
    }

    fn set(&self, value: &patchbay_vault::Secret) -> Result<(), RuntimeError> {
        self.sets.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        *lock(&self.value) = Some(value.clone());
        Ok(())
    }

    fn name(&self) -> String {
        "keychain:memory".into()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A credential for tests: `key`'s server, Notion's URL, `access` and `<access>-refresh`, client
/// `client-1`, scope `read write`, issuer `https://auth.example.com/`.
pub fn sample_credential(
    key: &str,
    access: &str,
    expires_at: Option<chrono::DateTime<chrono::Utc>>,
) -> RuntimeCredential {
    let key = patchbay_catalog::CredentialKey(key.to_string());
    RuntimeCredential {
        server_name: key.server_name().to_string(),
        key,
        server_url: "https://mcp.notion.com/v1/mcp".into(),
        access_token: patchbay_vault::Secret::new(access),
        refresh_token: Some(patchbay_vault::Secret::new(format!("{access}-refresh"))),
        expires_at,
        scope: Some("read write".into()),
        client_id: Some("client-1".into()),
        client_secret: None,
        issuer: Some("https://auth.example.com/".into()),
    }
}
