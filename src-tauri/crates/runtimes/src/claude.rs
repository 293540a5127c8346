//! Claude Code's credential file (`.credentials.json`, the `mcpOAuth` map), its negative cache
//! (`mcp-needs-auth-cache.json`) and "Add to Claude Code" (`mcpServers` in `.claude.json`).
//!
//! The field names and types are Claude Code's private format as measured in
//! shared/reference/runtime-credential-stores.md; canary tests pin them. The rules on that JSON
//! (merge one `mcpOAuth` entry keeping every other member, keep a fresher entry, remove one,
//! read them) are the functions at the bottom of this module, shared by [`ClaudeFileStore`] and
//! the macOS Keychain variant, [`crate::claude_keychain::ClaudeKeychainStore`], which holds the
//! same JSON in a Keychain item. [`crate::claude_keychain::claude_store`] picks the one Claude
//! Code uses on this platform.
//!
//! A write or removal in `.credentials.json` also takes Claude Code's own write lock,
//! `.storage-write.lock` beside it ([`crate::claude_lock`]), inside our lock file and only when it
//! changes something, so that Claude Code (2.1.332 on) cannot read-modify-write the file in the
//! middle of ours; reads never take it, nor does the needs-auth cache (not secure storage).

use crate::atomic::{lock_path_for, read_json_object, update_json_object, FileMode, UpdateOptions};
use crate::claude_lock::claude_write_lock_path;
use crate::config::RuntimePaths;
use crate::lock::DEFAULT_LOCK_TIMEOUT;
use crate::{Runtime, RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use chrono::{DateTime, Utc};
use indexmap::IndexMap;
use patchbay_catalog::CredentialKey;
use patchbay_vault::Secret;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

const NEEDS_AUTH_FILE: &str = "mcp-needs-auth-cache.json";
const MCP_OAUTH: &str = "mcpOAuth";

/// Claude Code's plaintext credential file (Linux and Windows; the macOS fallback).
#[derive(Debug, Clone)]
pub struct ClaudeFileStore {
    credentials: PathBuf,
    needs_auth: PathBuf,
    lock_timeout: Duration,
}

impl ClaudeFileStore {
    pub fn new(paths: &RuntimePaths) -> Self {
        ClaudeFileStore {
            credentials: paths.claude_credentials.clone(),
            needs_auth: paths.claude_needs_auth_cache(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
    }

    /// A store on an explicit credential file; the needs-auth cache beside it.
    pub fn at(credentials: impl Into<PathBuf>) -> Self {
        let credentials = credentials.into();
        ClaudeFileStore {
            needs_auth: credentials.with_file_name(NEEDS_AUTH_FILE),
            credentials,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
    }

    /// How long a write waits for another Patchbay writer, and then for Claude Code's write lock
    /// (default 5 s each), before `Busy`.
    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    pub fn credentials_path(&self) -> &Path {
        &self.credentials
    }

    pub fn needs_auth_path(&self) -> &Path {
        &self.needs_auth
    }

    /// Our writers' lock: `.credentials.json.patchbay.lock` beside the file. Also taken for the
    /// needs-auth cache.
    pub fn lock_path(&self) -> PathBuf {
        lock_path_for(&self.credentials)
    }

    /// Claude Code's own write lock: the `.storage-write.lock` directory beside the file.
    pub fn claude_lock_path(&self) -> PathBuf {
        claude_write_lock_path(self.credentials.parent().unwrap_or(Path::new("")))
    }

    /// For `.credentials.json`: our lock, then Claude Code's.
    fn options(&self, create_if_missing: bool) -> UpdateOptions {
        UpdateOptions {
            runtime_lock: Some(self.claude_lock_path()),
            ..self.cache_options(create_if_missing)
        }
    }

    /// For the needs-auth cache: our lock only.
    fn cache_options(&self, create_if_missing: bool) -> UpdateOptions {
        UpdateOptions {
            lock_path: self.lock_path(),
            lock_timeout: self.lock_timeout,
            runtime_lock: None,
            create_if_missing,
            mode: FileMode::Private,
        }
    }
}

impl RuntimeStore for ClaudeFileStore {
    fn runtime(&self) -> Runtime {
        Runtime::ClaudeCode
    }

    /// Entries without an `accessToken` (e.g. a client registration kept before consent) are skipped.
    fn read_all(&self) -> Result<Vec<RuntimeCredential>, RuntimeError> {
        let root = read_json_object(&self.credentials)?;
        read_all_in(root.as_ref(), &self.credentials)
    }

    fn read(&self, key: &CredentialKey) -> Result<Option<RuntimeCredential>, RuntimeError> {
        let root = read_json_object(&self.credentials)?;
        read_in(root.as_ref(), key, &self.credentials)
    }

    /// Writes the token pair (`accessToken`, `refreshToken`, `expiresAt`: replaced together, a
    /// `None` removes the member) and what we know of the client (`serverName`, `serverUrl`, and
    /// `scope`, `clientId`, `clientSecret`, `issuer` when known). Every other member of an
    /// existing entry (`redirectUri`, `discoveryState`, anything newer) is kept. A `Written`
    /// write also clears the server's needs-auth member (a failure there is logged, not returned:
    /// the token is written).
    fn write(
        &self,
        credential: &RuntimeCredential,
        now: DateTime<Utc>,
    ) -> Result<WriteOutcome, RuntimeError> {
        let path = &self.credentials;
        let mut outcome = WriteOutcome::Written;
        update_json_object(path, &self.options(true), &mut |root| {
            let (decided, changed) = merge_entry(root, credential, now, path)?;
            outcome = decided;
            Ok(changed)
        })?;
        after_write(self, credential, outcome);
        Ok(outcome)
    }

    fn remove(&self, key: &CredentialKey) -> Result<bool, RuntimeError> {
        let path = &self.credentials;
        let mut removed = false;
        update_json_object(path, &self.options(false), &mut |root| {
            removed = remove_entry(root, key, path)?;
            Ok(removed)
        })?;
        Ok(removed)
    }

    /// Removes `server_name`'s member from `mcp-needs-auth-cache.json`; an absent file or member
    /// is nothing to do.
    fn clear_needs_auth(&self, server_name: &str) -> Result<(), RuntimeError> {
        clear_needs_auth_in(&self.needs_auth, &self.cache_options(false), server_name)
    }

    fn watch_targets(&self) -> Vec<(PathBuf, Vec<String>)> {
        let dir = |p: &Path| p.parent().map(Path::to_path_buf).unwrap_or_default();
        let (cred_dir, cache_dir) = (dir(&self.credentials), dir(&self.needs_auth));
        let name = |p: &Path| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        if cred_dir == cache_dir {
            vec![(
                cred_dir,
                vec![name(&self.credentials), name(&self.needs_auth)],
            )]
        } else {
            vec![
                (cred_dir, vec![name(&self.credentials)]),
                (cache_dir, vec![name(&self.needs_auth)]),
            ]
        }
    }
}

// The rules on Claude Code's credentials JSON, shared by every store that holds it (the file,
// the macOS Keychain item). `origin` names where the JSON came from in errors: the file's path,
// or `keychain:<service>`.

/// The `mcpOAuth` map of a credentials object; `None` when the object has none.
fn oauth_entries<'a>(
    root: &'a Map<String, Value>,
    origin: &Path,
) -> Result<Option<&'a Map<String, Value>>, RuntimeError> {
    match root.get(MCP_OAUTH) {
        None => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(other) => Err(not_an_object(origin, MCP_OAUTH, other)),
    }
}

/// Every MCP credential in a credentials object (`None`: there is none yet). Entries without an
/// `accessToken` (e.g. a client registration kept before consent) are skipped.
pub(crate) fn read_all_in(
    root: Option<&Map<String, Value>>,
    origin: &Path,
) -> Result<Vec<RuntimeCredential>, RuntimeError> {
    let Some(oauth) = root
        .map(|r| oauth_entries(r, origin))
        .transpose()?
        .flatten()
    else {
        return Ok(Vec::new());
    };
    Ok(oauth
        .iter()
        .filter_map(|(key, entry)| parse_entry(key, entry.as_object()?))
        .collect())
}

/// One MCP credential of a credentials object.
pub(crate) fn read_in(
    root: Option<&Map<String, Value>>,
    key: &CredentialKey,
    origin: &Path,
) -> Result<Option<RuntimeCredential>, RuntimeError> {
    let Some(oauth) = root
        .map(|r| oauth_entries(r, origin))
        .transpose()?
        .flatten()
    else {
        return Ok(None);
    };
    Ok(oauth
        .get(key.as_str())
        .and_then(Value::as_object)
        .and_then(|entry| parse_entry(key.as_str(), entry)))
}

/// Merge `credential` into `mcpOAuth[key]` of a credentials object, unless the stored entry is
/// fresher at `now` (see [`on_disk_is_fresher`]). Every other member of the object and of the
/// entry is kept (see [`RuntimeStore::write`] on [`ClaudeFileStore`]). Returns what was decided
/// and whether the object changed.
pub(crate) fn merge_entry(
    root: &mut Map<String, Value>,
    credential: &RuntimeCredential,
    now: DateTime<Utc>,
    origin: &Path,
) -> Result<(WriteOutcome, bool), RuntimeError> {
    let key = credential.key.as_str();
    let oauth = root
        .entry(MCP_OAUTH)
        .or_insert_with(|| Value::Object(Map::new()));
    let oauth = match oauth {
        Value::Object(map) => map,
        other => return Err(not_an_object(origin, MCP_OAUTH, other)),
    };
    let existing = match oauth.get(key) {
        None => None,
        Some(Value::Object(entry)) => Some(entry),
        Some(other) => {
            return Err(not_an_object(
                origin,
                &format!("{MCP_OAUTH}[{key:?}]"),
                other,
            ))
        }
    };
    if let Some(entry) = existing {
        let has_access = entry
            .get("accessToken")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty());
        if on_disk_is_fresher(has_access, millis(entry.get("expiresAt")), credential, now) {
            return Ok((WriteOutcome::KeptFresher, false));
        }
    }
    let mut entry = existing.cloned().unwrap_or_default();
    fill_entry(&mut entry, credential);
    let changed = existing != Some(&entry);
    oauth.insert(key.to_string(), Value::Object(entry));
    Ok((WriteOutcome::Written, changed))
}

/// Remove `mcpOAuth[key]` from a credentials object, keeping everything else; whether it was there.
pub(crate) fn remove_entry(
    root: &mut Map<String, Value>,
    key: &CredentialKey,
    origin: &Path,
) -> Result<bool, RuntimeError> {
    match root.get_mut(MCP_OAUTH) {
        None => Ok(false),
        Some(Value::Object(oauth)) => Ok(oauth.shift_remove(key.as_str()).is_some()),
        Some(other) => Err(not_an_object(origin, MCP_OAUTH, other)),
    }
}

/// Remove `server_name`'s member from the needs-auth cache file (absent file or member: nothing
/// to do), under `options`' lock.
pub(crate) fn clear_needs_auth_in(
    needs_auth: &Path,
    options: &UpdateOptions,
    server_name: &str,
) -> Result<(), RuntimeError> {
    update_json_object(needs_auth, options, &mut |root| {
        Ok(root.shift_remove(server_name).is_some())
    })?;
    Ok(())
}

/// After a `Written` write, forget the server's needs-auth verdict (a failure there is logged,
/// not returned: the token is written).
pub(crate) fn after_write(
    store: &dyn RuntimeStore,
    credential: &RuntimeCredential,
    outcome: WriteOutcome,
) {
    if outcome == WriteOutcome::Written {
        if let Err(e) = store.clear_needs_auth(&credential.server_name) {
            tracing::warn!(server = %credential.server_name, "token written, but the needs-auth cache was not cleared: {e}");
        }
    }
}

/// Whether the stored entry must not be overwritten: its access token is still valid at `now`
/// and expires later than ours. An expired stored entry, or one with no known expiry, never
/// wins here (adopting a newer expired pair is the reconciler's job, before it writes). Ours
/// with no expiry counts as never expiring.
pub(crate) fn on_disk_is_fresher(
    has_access_token: bool,
    stored_expires_ms: Option<i64>,
    ours: &RuntimeCredential,
    now: DateTime<Utc>,
) -> bool {
    let (true, Some(stored)) = (has_access_token, stored_expires_ms) else {
        return false;
    };
    stored > now.timestamp_millis()
        && ours
            .expires_at
            .is_some_and(|ours| stored > ours.timestamp_millis())
}

/// A JSON number of milliseconds (JavaScript may write it as a float).
pub(crate) fn millis(value: Option<&Value>) -> Option<i64> {
    let value = value?;
    value
        .as_i64()
        .or_else(|| value.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
}

/// A store's names for the members it always replaces together: the server and the token pair.
pub(crate) struct PairFields {
    pub server_name: &'static str,
    pub server_url: &'static str,
    pub access_token: &'static str,
    pub refresh_token: &'static str,
    /// Epoch milliseconds in both stores.
    pub expires_at: &'static str,
}

const CLAUDE_PAIR: PairFields = PairFields {
    server_name: "serverName",
    server_url: "serverUrl",
    access_token: "accessToken",
    refresh_token: "refreshToken",
    expires_at: "expiresAt",
};

/// Sets the server and the token pair of `c` in `entry`, under the store's `names`: the pair is
/// replaced as a whole (an absent refresh token or expiry removes the stored one, so a stale
/// member never outlives its pair); every other member is the caller's.
pub(crate) fn set_pair(entry: &mut Map<String, Value>, names: &PairFields, c: &RuntimeCredential) {
    let mut set = |name: &str, value: Option<Value>| match value {
        Some(v) => {
            entry.insert(name.to_string(), v);
        }
        None => {
            entry.shift_remove(name);
        }
    };
    set(names.server_name, Some(json!(c.server_name)));
    set(names.server_url, Some(json!(c.server_url)));
    set(names.access_token, Some(json!(c.access_token.expose())));
    set(
        names.refresh_token,
        c.refresh_token.as_ref().map(|t| json!(t.expose())),
    );
    set(
        names.expires_at,
        c.expires_at.map(|t| json!(t.timestamp_millis())),
    );
}

fn fill_entry(entry: &mut Map<String, Value>, c: &RuntimeCredential) {
    set_pair(entry, &CLAUDE_PAIR, c);
    // Known only sometimes: left as they are when we do not know them.
    let known = [
        ("scope", c.scope.clone()),
        ("clientId", c.client_id.clone()),
        (
            "clientSecret",
            c.client_secret.as_ref().map(|s| s.expose().to_string()),
        ),
        ("issuer", c.issuer.clone()),
    ];
    for (name, value) in known {
        if let Some(value) = value {
            entry.insert(name.to_string(), json!(value));
        }
    }
}

fn parse_entry(key: &str, entry: &Map<String, Value>) -> Option<RuntimeCredential> {
    let text = |name: &str| entry.get(name).and_then(Value::as_str).map(str::to_string);
    let key = CredentialKey(key.to_string());
    Some(RuntimeCredential {
        access_token: Secret::new(text("accessToken")?),
        refresh_token: text("refreshToken").map(Secret::new),
        expires_at: millis(entry.get("expiresAt")).and_then(DateTime::from_timestamp_millis),
        server_name: text("serverName").unwrap_or_else(|| key.server_name().to_string()),
        server_url: text("serverUrl").unwrap_or_default(),
        scope: text("scope"),
        client_id: text("clientId"),
        client_secret: text("clientSecret").map(Secret::new),
        issuer: text("issuer"),
        key,
    })
}

fn not_an_object(path: &Path, at: &str, value: &Value) -> RuntimeError {
    RuntimeError::Malformed {
        path: path.to_path_buf(),
        message: format!(
            "{at}: expected an object, found {}",
            crate::atomic::json_kind(value)
        ),
    }
}

/// A server to add to Claude Code's user scope, as `claude mcp add --transport <kind> <name> <url>`
/// (with `--header` for each header) would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeServerSpec {
    /// The name Claude Code will know it by (and file its credential under).
    pub name: String,
    /// `http` or `sse`.
    pub kind: String,
    pub url: String,
    /// Written as given (placeholders stay placeholders).
    pub headers: IndexMap<String, String>,
}

/// What [`add_server`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddServerOutcome {
    Added,
    /// The same server was already configured under that name: nothing written.
    AlreadyPresent,
    /// The name is taken by a different config: nothing written; the existing config.
    Conflict {
        existing: Value,
    },
}

/// "Add to Claude Code": write `mcpServers.<name> = {"type": kind, "url": url[, "headers": ...]}`
/// at the top of `.claude.json` (created if missing), preserving everything else, with the same
/// lock, re-read and atomic replace as the credential file (lock `.claude.json.patchbay.lock`,
/// and Claude Code's own `.claude.json.lock` around the write; the file keeps its mode). Refuses
/// a name already configured differently.
pub fn add_server(
    paths: &RuntimePaths,
    spec: &ClaudeServerSpec,
) -> Result<AddServerOutcome, RuntimeError> {
    let path = &paths.claude_json;
    if !matches!(spec.kind.as_str(), "http" | "sse") || spec.name.is_empty() {
        return Err(RuntimeError::Malformed {
            path: path.clone(),
            message: format!(
                "cannot add {:?}: a name and a transport of \"http\" or \"sse\" are required (got {:?})",
                spec.name, spec.kind
            ),
        });
    }
    let mut wanted = json!({"type": spec.kind, "url": spec.url});
    if !spec.headers.is_empty() {
        wanted["headers"] = json!(spec.headers);
    }
    let options = UpdateOptions {
        lock_path: lock_path_for(path),
        lock_timeout: DEFAULT_LOCK_TIMEOUT,
        runtime_lock: Some(crate::claude_lock::claude_config_lock_path(path)),
        create_if_missing: true,
        mode: FileMode::PreserveOrPrivate,
    };
    let mut outcome = AddServerOutcome::Added;
    update_json_object(path, &options, &mut |root| {
        let servers = root
            .entry("mcpServers")
            .or_insert_with(|| Value::Object(Map::new()));
        let servers = match servers {
            Value::Object(map) => map,
            other => return Err(not_an_object(path, "mcpServers", other)),
        };
        match servers.get(&spec.name) {
            Some(existing) => {
                let mut same = existing.clone();
                if let Some(o) = same.as_object_mut() {
                    if o.get("headers")
                        .and_then(Value::as_object)
                        .is_some_and(Map::is_empty)
                    {
                        o.shift_remove("headers");
                    }
                }
                outcome = if same == wanted {
                    AddServerOutcome::AlreadyPresent
                } else {
                    AddServerOutcome::Conflict {
                        existing: existing.clone(),
                    }
                };
                Ok(false)
            }
            None => {
                outcome = AddServerOutcome::Added;
                servers.insert(spec.name.clone(), wanted.clone());
                Ok(true)
            }
        }
    })?;
    Ok(outcome)
}
