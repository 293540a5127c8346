//! Watching the runtimes' stores and adopting what they rotate, as soon as they rotate it.
//!
//! Each store's directory is watched, never the file: runtimes replace the file by rename
//! (Claude Code writes `.credentials.json.tmp.<hex>` and renames it over), which blinds a watch
//! on the old inode. Events are filtered by file name and handled on arrival, by a thread that
//! sleeps on them ([`watch_files`]: no periodic tick; a burst already queued is one pass): the
//! rename itself triggers the reconciliation of every credential the vault holds that the store
//! also holds, so an adoption follows a runtime's rotation within milliseconds. Healing
//! ([`watch_and_heal`]: re-writing every entry we are responsible for that the store lost,
//! [`crate::heal`]) writes to the runtime's file, so it waits until the store's events have
//! settled ([`SETTLE`], a one-shot timer armed by an event): never in the middle of a runtime's
//! own write.
//!
//! The loop guard: a healing write of ours replaces the file, so the watcher sees one more
//! change. That pass finds the store holding exactly what we want and writes nothing
//! ([`crate::heal::HealReport::is_noop`]), so no further event follows. Passes that write
//! nothing are not reported.

use crate::heal::HealReport;
use crate::reconcile::{runtime_credential, Adoption, BridgeKey, Reconciled, Reconciler};
use crate::{Runtime, RuntimeCredential, RuntimeStore};
use chrono::{DateTime, Utc};
use notify::{Event, RecursiveMode, Watcher};
use patchbay_vault::Vault;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a store's events must have been quiet before a healing pass writes to it (adoption
/// does not wait).
pub const SETTLE: Duration = Duration::from_millis(100);
/// A store that never stops changing is healed at least this often.
const SETTLE_AT_MOST: Duration = Duration::from_secs(2);

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

/// The entries Patchbay is responsible for in a store (what a healing pass re-applies), asked
/// afresh on every change. Retired credentials must not be in it.
pub type DesiredFn =
    Arc<dyn Fn(&Vault, &dyn RuntimeStore, DateTime<Utc>) -> Vec<RuntimeCredential> + Send + Sync>;

/// Every live credential in the vault, filed under the same key: the default when the runtime
/// names its servers as the catalog does. Live: it still holds a refresh token, or its access
/// token has no expiry or has not expired. A retired credential (its refresh token dropped and
/// its access token force-expired) is never in it, so it is never re-added.
pub fn vault_desired_same_keys() -> DesiredFn {
    Arc::new(
        |vault: &Vault, _store: &dyn RuntimeStore, now: DateTime<Utc>| {
            let rows = match vault.credential_rows() {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::warn!("cannot list the vault's credentials: {e}");
                    return Vec::new();
                }
            };
            rows.into_iter()
                .filter(|r| r.is_live(now))
                .filter_map(|r| match vault.credential_tokens(&r.credential_key) {
                    Ok(Some(tokens)) => Some(runtime_credential(&r, &tokens, &r.credential_key)),
                    Ok(None) => None,
                    Err(e) => {
                        tracing::warn!(key = %r.credential_key, "cannot read the vault: {e}");
                        None
                    }
                })
                .collect()
        },
    )
}

/// What one pass after a change did (only passes that did something are reported).
#[derive(Debug, Default)]
pub struct Pass {
    pub adopted: Vec<Adoption>,
    /// Per healed store, when the pass wrote (or failed to write) anything.
    pub healed: Vec<(Runtime, HealReport)>,
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
    _files: FileWatch,
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

/// Reconcile every watched store, then heal those with a desired set: what a change does with
/// [`watch_and_heal`]. Reconciling first means a pair the runtime rotated is adopted before the
/// healing pass compares, so it is not reported as newer-than-ours.
pub fn reconcile_and_heal_all(
    vault: &Vault,
    reconciler: &Reconciler,
    watched: &[(Watched, Option<DesiredFn>)],
    now: DateTime<Utc>,
) -> Pass {
    let plain: Vec<Watched> = watched.iter().map(|(w, _)| w.clone()).collect();
    let mut pass = Pass {
        adopted: reconcile_all(vault, reconciler, &plain, now),
        healed: Vec::new(),
    };
    for (w, desired) in watched {
        let Some(desired) = desired else { continue };
        let want = desired(vault, w.store.as_ref(), now);
        match reconciler.heal(w.store.as_ref(), &want, now) {
            Ok(report) if report.is_noop() => {}
            Ok(report) => pass.healed.push((w.store.runtime(), report)),
            Err(e) => tracing::warn!(
                runtime = w.store.runtime().display_name(),
                "cannot heal: {e}"
            ),
        }
    }
    pass
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
    let watched = watched.into_iter().map(|w| (w, None)).collect();
    watch_passes(vault, reconciler, watched, clock, move |pass: Pass| {
        if !pass.adopted.is_empty() {
            on_adopted(pass.adopted);
        }
    })
}

/// [`watch`], and after reconciling, heal each store against its desired set (e.g.
/// [`vault_desired_same_keys`]): entries the runtime's own unlocked rewrite dropped are written
/// again. `on_pass` is called when a pass adopted or wrote anything.
pub fn watch_and_heal(
    vault: Arc<Vault>,
    reconciler: Arc<Reconciler>,
    watched: Vec<(Watched, DesiredFn)>,
    clock: Clock,
    on_pass: impl Fn(Pass) + Send + 'static,
) -> Result<StoreWatch, WatchError> {
    let watched = watched.into_iter().map(|(w, d)| (w, Some(d))).collect();
    watch_passes(vault, reconciler, watched, clock, on_pass)
}

fn watch_passes(
    vault: Arc<Vault>,
    reconciler: Arc<Reconciler>,
    watched: Vec<(Watched, Option<DesiredFn>)>,
    clock: Clock,
    on_pass: impl Fn(Pass) + Send + 'static,
) -> Result<StoreWatch, WatchError> {
    // (directory, file name), tagged with the index of the store it belongs to.
    let mut targets: Vec<WatchedFile> = Vec::new();
    for (i, (w, _)) in watched.iter().enumerate() {
        for (dir, names) in w.store.watch_targets() {
            for name in names {
                targets.push(WatchedFile {
                    dir: dir.clone(),
                    name: OsString::from(name),
                    tag: i,
                });
            }
        }
    }
    let heals = watched.iter().any(|(_, desired)| desired.is_some());
    let settle = heals.then_some(SETTLE);
    let files = watch_files(
        "patchbay-store-watch",
        targets,
        settle,
        None,
        move |wake: Wake| {
            let (touched, heal) = match wake {
                // Adopt at once: the rename is the whole write.
                Wake::Changed(touched) => (touched, false),
                Wake::Settled(touched) => (touched, true),
                Wake::Tick => return,
            };
            let stores: Vec<_> = touched
                .iter()
                .map(|i| {
                    let (w, desired) = &watched[*i];
                    (w.clone(), if heal { desired.clone() } else { None })
                })
                .collect();
            if heal && stores.iter().all(|(_, desired)| desired.is_none()) {
                return;
            }
            let pass = reconcile_and_heal_all(&vault, &reconciler, &stores, clock());
            if !pass.adopted.is_empty() || !pass.healed.is_empty() {
                on_pass(pass);
            }
        },
    )?;
    let dirs = files.dirs.clone();
    Ok(StoreWatch {
        _files: files,
        dirs,
    })
}

/// One file a [`watch_files`] watch cares about: `name` in `dir`, reported as `tag`.
#[derive(Debug, Clone)]
pub struct WatchedFile {
    pub dir: PathBuf,
    pub name: OsString,
    pub tag: usize,
}

/// Why a [`watch_files`] callback runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// These files (their tags) changed: called as soon as the events arrive, once for the
    /// events already queued.
    Changed(BTreeSet<usize>),
    /// No event for these files for the settle time since they last changed.
    Settled(BTreeSet<usize>),
    /// The tick elapsed (when one was asked for).
    Tick,
}

enum Message {
    Event(notify::Result<Event>),
    Stop,
}

/// Keeps a [`watch_files`] watch alive; dropping it stops the watcher and its thread (waiting for
/// a callback that is running to return).
pub struct FileWatch {
    watcher: Option<notify::RecommendedWatcher>,
    stop: mpsc::Sender<Message>,
    worker: Option<JoinHandle<()>>,
    /// The directories watched.
    pub dirs: Vec<PathBuf>,
}

impl Drop for FileWatch {
    fn drop(&mut self) {
        self.watcher.take();
        let _ = self.stop.send(Message::Stop);
        if let Some(worker) = self.worker.take() {
            // A callback that drops its own watch must not wait for itself.
            if worker.thread().id() != std::thread::current().id() {
                let _ = worker.join();
            }
        }
    }
}

/// Watch `files` (their directories, created when missing, non-recursively) and call `on_wake`
/// from a thread of its own: [`Wake::Changed`] as soon as events for them arrive (one call for
/// what is queued, so a burst that arrives together is one call, and a change during a call is
/// one more call after it); with `settle`, [`Wake::Settled`] once their events have been quiet
/// that long (at most [`SETTLE_AT_MOST`] after the first); with `tick`, [`Wake::Tick`] every
/// `tick`. The thread sleeps on the events: no timer runs unless an event armed the settle
/// timer, or a tick was asked for. Access events (our own reads open the files) are ignored.
pub fn watch_files(
    thread_name: &str,
    files: Vec<WatchedFile>,
    settle: Option<Duration>,
    tick: Option<Duration>,
    mut on_wake: impl FnMut(Wake) + Send + 'static,
) -> Result<FileWatch, WatchError> {
    let dirs: BTreeSet<PathBuf> = files.iter().map(|f| f.dir.clone()).collect();
    let (tx, rx) = mpsc::channel::<Message>();
    let events = tx.clone();
    let mut watcher = notify::recommended_watcher(move |event| {
        let _ = events.send(Message::Event(event));
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
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| WatchError {
                path: dir.clone(),
                message: e.to_string(),
            })?;
    }
    let touched_by = move |event: &Event, touched: &mut BTreeSet<usize>| {
        // Our own reads are access events; reacting to them would loop.
        if event.kind.is_access() {
            return;
        }
        for path in &event.paths {
            let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
                continue;
            };
            for f in &files {
                if f.name == name && f.dir == dir {
                    touched.insert(f.tag);
                }
            }
        }
    };
    let worker = std::thread::Builder::new()
        .name(thread_name.into())
        .spawn(move || {
            // The settle timer: the files waiting, when they last changed, when they first did.
            let mut unsettled: BTreeSet<usize> = BTreeSet::new();
            let mut last_change = Instant::now();
            let mut first_change = Instant::now();
            let mut next_tick = tick.map(|t| Instant::now() + t);
            loop {
                let settle_at = settle
                    .filter(|_| !unsettled.is_empty())
                    .map(|s| (last_change + s).min(first_change + SETTLE_AT_MOST.max(s)));
                let deadline = match (settle_at, next_tick) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                let first = match deadline {
                    None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    Some(at) => rx.recv_timeout(at.saturating_duration_since(Instant::now())),
                };
                match first {
                    Ok(message) => {
                        let mut touched = BTreeSet::new();
                        let mut stop = false;
                        for message in std::iter::once(message).chain(rx.try_iter()) {
                            match message {
                                Message::Event(Ok(event)) => touched_by(&event, &mut touched),
                                Message::Event(Err(error)) => {
                                    tracing::warn!("file watch error: {error}")
                                }
                                Message::Stop => stop = true,
                            }
                        }
                        if stop {
                            return;
                        }
                        if touched.is_empty() {
                            continue;
                        }
                        let now = Instant::now();
                        if unsettled.is_empty() {
                            first_change = now;
                        }
                        last_change = now;
                        if settle.is_some() {
                            unsettled.extend(touched.iter().copied());
                        }
                        on_wake(Wake::Changed(touched));
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        let now = Instant::now();
                        if settle_at.is_some_and(|at| at <= now) {
                            on_wake(Wake::Settled(std::mem::take(&mut unsettled)));
                        }
                        if let (Some(at), Some(every)) = (next_tick, tick) {
                            if at <= Instant::now() {
                                on_wake(Wake::Tick);
                                next_tick = Some(Instant::now() + every);
                            }
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        })
        .map_err(|e| WatchError {
            path: PathBuf::new(),
            message: e.to_string(),
        })?;
    Ok(FileWatch {
        watcher: Some(watcher),
        stop: tx,
        worker: Some(worker),
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

    /// The context switches of this process's threads named `name` (Linux: /proc/self/task).
    #[cfg(target_os = "linux")]
    fn switches_of(name: &str) -> Option<u64> {
        let mut found = None;
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() != name {
                continue;
            }
            let status = std::fs::read_to_string(task.path().join("status")).ok()?;
            let total: u64 = status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum();
            *found.get_or_insert(0) += total;
        }
        found
    }

    #[test]
    fn a_burst_is_handled_on_arrival_settles_once_and_then_nothing_wakes() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = mpsc::channel();
        // A name no other test's thread has (at most 15 bytes: the kernel's comm).
        const NAME: &str = "pb-watch-idle";
        let _watch = watch_files(
            NAME,
            vec![WatchedFile {
                dir: dir.path().join("store"),
                name: "a.json".into(),
                tag: 7,
            }],
            Some(Duration::from_millis(150)),
            None,
            move |wake| {
                let _ = tx.send((Instant::now(), wake));
            },
        )
        .unwrap();
        let file = dir.path().join("store/a.json");
        let written = Instant::now();
        for i in 0..5 {
            std::fs::write(&file, format!("{{\"n\": {i}}}")).unwrap();
        }
        let (at, wake) = rx.recv_timeout(Duration::from_secs(2)).expect("a change");
        assert_eq!(wake, Wake::Changed(BTreeSet::from([7])));
        assert!(
            at - written < Duration::from_millis(150),
            "{:?}",
            at - written
        );
        // More Changed calls may follow for the rest of the burst, then exactly one Settled.
        let settled = loop {
            match rx.recv_timeout(Duration::from_secs(3)).expect("settled") {
                (_, Wake::Changed(tags)) => assert_eq!(tags, BTreeSet::from([7])),
                (at, wake) => break (at, wake),
            }
        };
        assert_eq!(settled.1, Wake::Settled(BTreeSet::from([7])));
        assert!(settled.0 - written >= Duration::from_millis(150));
        // An unrelated file in the directory wakes nobody's callback.
        std::fs::write(dir.path().join("store/b.json"), "{}").unwrap();
        // Idle: the thread sleeps on the events (the debouncer it replaces woke every 25 ms). Once
        // it has handled the unrelated file's event it goes quiet, and stays so.
        #[cfg(target_os = "linux")]
        {
            let mut last = switches_of(NAME).expect("the watch thread");
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                std::thread::sleep(Duration::from_millis(250));
                let now = switches_of(NAME).unwrap();
                if now == last {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "the watch thread never went quiet"
                );
                last = now;
            }
            std::thread::sleep(Duration::from_millis(500));
            assert_eq!(
                switches_of(NAME).unwrap(),
                last,
                "the watch thread woke while idle"
            );
        }
        assert!(
            rx.try_recv().is_err(),
            "an unrelated file woke the callback"
        );
    }

    #[test]
    fn dropping_the_watch_stops_its_thread_and_its_tick() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = mpsc::channel();
        const NAME: &str = "pb-watch-drop";
        let watch = watch_files(
            NAME,
            vec![WatchedFile {
                dir: dir.path().to_path_buf(),
                name: "a.json".into(),
                tag: 0,
            }],
            None,
            Some(Duration::from_millis(20)),
            move |wake| {
                let _ = tx.send(wake);
            },
        )
        .unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(2)), Ok(Wake::Tick));
        drop(watch);
        #[cfg(target_os = "linux")]
        assert_eq!(switches_of(NAME), None, "the thread outlived its watch");
        // The callback (and its sender) went with the thread.
        while let Ok(wake) = rx.try_recv() {
            assert_eq!(wake, Wake::Tick);
        }
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(1)),
            Err(mpsc::RecvTimeoutError::Disconnected)
        );
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

    #[test]
    fn a_dropped_entry_is_healed_once_and_our_own_write_ends_the_loop() {
        use crate::claude::ClaudeFileStore;
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
        let row = |key: &str, name: &str| CredentialRow {
            credential_key: CredentialKey(key.into()),
            server_name: name.into(),
            server_url: Some("http://localhost:3100/mcp".into()),
            expires_at: Some(now + chrono::Duration::hours(1)),
            has_refresh_token: true,
            one_shot: false,
            issuer: None,
            client_id: Some("c".into()),
            scope: None,
            updated_at: now,
            rotated_by: None,
            rotated_at: None,
        };
        let tokens = |a: &str| TokenSet {
            access_token: Secret::new(a),
            refresh_token: Some(Secret::new(format!("rt-{a}"))),
        };
        const DEAD: &str = "dead|528e1818a7ba21cf";
        vault
            .put_credential(&row(KEY, "fx"), &tokens("at-1"))
            .unwrap();
        vault
            .put_credential(&row(DEAD, "dead"), &tokens("at-d"))
            .unwrap();
        let file = dir.path().join("claude/.credentials.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let user = serde_json::json!({"accessToken": "user"});
        std::fs::write(
            &file,
            serde_json::to_vec(&serde_json::json!({"claudeAiOauth": user})).unwrap(),
        )
        .unwrap();
        let store = Arc::new(ClaudeFileStore::at(&file));
        let reconciler = Arc::new(Reconciler::new());
        // Written through, then the dead one retired (vault and store).
        let desired = vault_desired_same_keys();
        for c in desired(&vault, store.as_ref(), now) {
            store.write(&c, now).unwrap();
        }
        let dead = CredentialKey(DEAD.into());
        let target = crate::reconcile::Target {
            store: store.as_ref(),
            runtime_key: &dead,
        };
        reconciler.retire(&vault, &dead, &[target], now).unwrap();

        let (tx, rx) = mpsc::channel();
        let _watch = watch_and_heal(
            vault.clone(),
            reconciler,
            vec![(
                Watched {
                    store: store.clone(),
                    keys: same_keys(),
                },
                vault_desired_same_keys(),
            )],
            Arc::new(Utc::now),
            move |pass| {
                let _ = tx.send(pass);
            },
        )
        .unwrap();

        // Claude Code's unlocked rewrite, from a version read before ours: our entry vanishes.
        let tmp = dir.path().join("claude/.credentials.json.tmp.0badf00d");
        std::fs::write(
            &tmp,
            serde_json::to_vec(&serde_json::json!({"claudeAiOauth": user, "mcpOAuth": {"cc|1": {"accessToken": "x"}}})).unwrap(),
        )
        .unwrap();
        std::fs::rename(&tmp, &file).unwrap();

        let pass = rx
            .recv_timeout(Duration::from_secs(2))
            .expect("healed within 2 s");
        assert!(pass.adopted.is_empty());
        assert_eq!(pass.healed.len(), 1);
        let report = &pass.healed[0].1;
        assert_eq!(report.restored_missing, vec![CredentialKey(KEY.into())]);
        assert_eq!(report.checked, 1, "the retired credential is not desired");
        // Our healing write replaced the file: the pass it triggers writes nothing, so nothing
        // more is reported (and no further event follows).
        assert!(rx.recv_timeout(Duration::from_millis(600)).is_err());
        let got = store.read(&CredentialKey(KEY.into())).unwrap().unwrap();
        assert_eq!(got.access_token.expose(), "at-1");
        assert!(
            store.read(&dead).unwrap().is_none(),
            "retired: never re-added"
        );
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(v["claudeAiOauth"], user);
        assert!(
            v["mcpOAuth"].get("cc|1").is_some(),
            "the runtime's own entry kept"
        );
    }
}
