//! Watching the runtimes' stores and adopting what they rotate, within a fraction of a second.
//!
//! Each store's directory is watched, never the file: runtimes replace the file by rename
//! (Claude Code writes `.credentials.json.tmp.<hex>` and renames it over), which blinds a watch
//! on the old inode. Events are debounced ([`DEBOUNCE`]) and filtered by file name; then every
//! credential the vault holds that the store also holds is reconciled.

use crate::reconcile::{Adoption, BridgeKey, Reconciled, Reconciler};
use crate::RuntimeStore;
use chrono::{DateTime, Utc};
use notify::RecursiveMode;
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};
use patchbay_vault::Vault;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long a burst of events must settle before one reconciliation.
pub const DEBOUNCE: Duration = Duration::from_millis(100);

/// Where "now" comes from.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// Which credentials to reconcile against a store, asked afresh on every change (the vault and
/// the runtime's config may have changed since the watch started).
pub type KeysFn = Arc<dyn Fn(&Vault, &dyn RuntimeStore) -> Vec<BridgeKey> + Send + Sync>;

/// The credentials the vault holds that the store holds under the same key: the default when the
/// runtime names its servers as the catalog does.
pub fn same_keys() -> KeysFn {
    Arc::new(|vault: &Vault, store: &dyn RuntimeStore| {
        let ours: BTreeSet<_> = match vault.credential_rows() {
            Ok(rows) => rows.into_iter().map(|r| r.credential_key).collect(),
            Err(e) => {
                tracing::warn!("cannot list the vault's credentials: {e}");
                return Vec::new();
            }
        };
        match store.read_all() {
            Ok(entries) => entries
                .into_iter()
                .filter(|e| ours.contains(&e.key))
                .map(|e| BridgeKey::same(e.key))
                .collect(),
            Err(e) => {
                tracing::warn!("{}: {e}", store.runtime().display_name());
                Vec::new()
            }
        }
    })
}

/// One store to watch.
#[derive(Clone)]
pub struct Watched {
    pub store: Arc<dyn RuntimeStore>,
    pub keys: KeysFn,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot watch {path}: {message}")]
pub struct WatchError {
    pub path: PathBuf,
    pub message: String,
}

/// Keeps the watch alive; dropping it stops watching.
pub struct StoreWatch {
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
    /// The directories watched.
    pub dirs: Vec<PathBuf>,
}

/// Reconcile every watched store once now (what a change does), returning the adoptions.
pub fn reconcile_all(
    vault: &Vault,
    reconciler: &Reconciler,
    watched: &[Watched],
    now: DateTime<Utc>,
) -> Vec<Adoption> {
    let mut adopted = Vec::new();
    for w in watched {
        for key in (w.keys)(vault, w.store.as_ref()) {
            match reconciler.reconcile(vault, w.store.as_ref(), &key, now) {
                Ok(Reconciled::Adopted(a)) => adopted.push(a),
                Ok(_) => {}
                Err(e) => tracing::warn!(key = %key.vault, "cannot reconcile: {e}"),
            }
        }
    }
    adopted
}

/// Watch every store's `watch_targets()`; after a change to one of its files settles, reconcile
/// that store and call `on_adopted` (from the watcher's thread) with what was adopted, when
/// anything was. Directories that do not exist yet are created (a runtime that has not written
/// its store yet is still watched).
pub fn watch(
    vault: Arc<Vault>,
    reconciler: Arc<Reconciler>,
    watched: Vec<Watched>,
    clock: Clock,
    on_adopted: impl Fn(Vec<Adoption>) + Send + 'static,
) -> Result<StoreWatch, WatchError> {
    // (directory, file name) → the indices of the stores it belongs to.
    let mut interest: Vec<(PathBuf, OsString, usize)> = Vec::new();
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    for (i, w) in watched.iter().enumerate() {
        for (dir, names) in w.store.watch_targets() {
            for name in names {
                interest.push((dir.clone(), OsString::from(name), i));
            }
            dirs.insert(dir);
        }
    }

    let mut debouncer = new_debouncer(DEBOUNCE, None, move |result: DebounceEventResult| {
        let Ok(events) = result else { return };
        let mut touched: BTreeSet<usize> = BTreeSet::new();
        for event in &events {
            // Our own reads are access events; reacting to them would loop.
            if event.kind.is_access() {
                continue;
            }
            for path in &event.paths {
                let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
                    continue;
                };
                for (d, n, i) in &interest {
                    if n == name && d == dir {
                        touched.insert(*i);
                    }
                }
            }
        }
        if touched.is_empty() {
            return;
        }
        let stores: Vec<Watched> = touched.iter().map(|i| watched[*i].clone()).collect();
        let adopted = reconcile_all(&vault, &reconciler, &stores, clock());
        if !adopted.is_empty() {
            on_adopted(adopted);
        }
    })
    .map_err(|e| WatchError {
        path: PathBuf::new(),
        message: e.to_string(),
    })?;

    for dir in &dirs {
        std::fs::create_dir_all(dir).map_err(|e| WatchError {
            path: dir.clone(),
            message: e.to_string(),
        })?;
        debouncer
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| WatchError {
                path: dir.clone(),
                message: e.to_string(),
            })?;
    }
    Ok(StoreWatch {
        _debouncer: debouncer,
        dirs: dirs.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::JsonFileRuntimeStore;
    use crate::{Runtime, RuntimeCredential};
    use patchbay_catalog::CredentialKey;
    use patchbay_vault::{CredentialRow, MemoryStore, Secret, TokenSet};
    use std::sync::mpsc;
    use std::time::Instant;

    const KEY: &str = "fx|528e1818a7ba21cf";

    fn pair(access: &str, refresh: &str, expires_at: DateTime<Utc>) -> RuntimeCredential {
        RuntimeCredential {
            key: CredentialKey(KEY.into()),
            server_name: "fx".into(),
            server_url: "http://localhost:3100/mcp".into(),
            access_token: Secret::new(access),
            refresh_token: Some(Secret::new(refresh)),
            expires_at: Some(expires_at),
            scope: None,
            client_id: Some("c".into()),
            client_secret: None,
            issuer: None,
        }
    }

    #[test]
    fn a_rotation_renamed_into_place_is_adopted_within_two_seconds() {
        let dir = tempfile::tempdir().unwrap();
        let vault = Arc::new(
            Vault::open(
                &dir.path().join("v.db"),
                Arc::new(MemoryStore::new()),
                "acct",
            )
            .unwrap(),
        );
        let now = Utc::now();
        let expires = now + chrono::Duration::hours(1);
        vault
            .put_credential(
                &CredentialRow {
                    credential_key: CredentialKey(KEY.into()),
                    server_name: "fx".into(),
                    server_url: Some("http://localhost:3100/mcp".into()),
                    expires_at: Some(expires),
                    has_refresh_token: true,
                    one_shot: false,
                    issuer: None,
                    client_id: Some("c".into()),
                    scope: None,
                    updated_at: now,
                    rotated_by: None,
                    rotated_at: None,
                },
                &TokenSet {
                    access_token: Secret::new("at-1"),
                    refresh_token: Some(Secret::new("rt-1")),
                },
            )
            .unwrap();
        let store = Arc::new(JsonFileRuntimeStore::new(
            Runtime::ClaudeCode,
            dir.path().join("claude/.credentials.json"),
        ));
        // The store directory does not exist yet: the watch creates it.
        let (tx, rx) = mpsc::channel();
        let _watch = watch(
            vault.clone(),
            Arc::new(Reconciler::new()),
            vec![Watched {
                store: store.clone(),
                keys: same_keys(),
            }],
            Arc::new(Utc::now),
            move |adopted| {
                let _ = tx.send((Instant::now(), adopted));
            },
        )
        .unwrap();
        // Our own pair written through: not an adoption.
        store
            .write(&pair("at-1", "rt-1", expires), Utc::now())
            .unwrap();
        // An unrelated file in the same directory changes nothing.
        std::fs::write(dir.path().join("claude/other.json"), "{}").unwrap();
        assert!(rx.recv_timeout(Duration::from_millis(400)).is_err());

        let renamed = Instant::now();
        store
            .rotate(&pair(
                "at-2",
                "rt-2",
                expires + chrono::Duration::minutes(5),
            ))
            .unwrap();
        let (at, adopted) = rx
            .recv_timeout(Duration::from_secs(2))
            .expect("adopted within 2 s");
        assert_eq!(adopted.len(), 1);
        assert_eq!(adopted[0].runtime, Runtime::ClaudeCode);
        eprintln!("adopted {:?} after the rename", at - renamed);
        let tokens = vault
            .credential_tokens(&CredentialKey(KEY.into()))
            .unwrap()
            .unwrap();
        assert_eq!(tokens.access_token.expose(), "at-2");
        assert_eq!(tokens.refresh_token.unwrap().expose(), "rt-2");
        assert_eq!(
            vault.credential_rows().unwrap()[0].rotated_by.as_deref(),
            Some("claude_code")
        );
    }
}
