//! Claude Code's own write lock (`.storage-write.lock`, proper-lockfile's protocol): the lock
//! itself (acquire, release, wait, time out, the stale rule), and our Claude writers taking it
//! around their read-merge-write, after our own lock file and only when they change something.
//!
//! "Claude Code" here is the test itself, doing what its lock holder does on disk: `mkdir` the
//! lock directory, change the store, `rmdir`. The real proper-lockfile library against these
//! writers is tests/tests/claude_lock_interop.rs. Waits are ordering evidence (what the store
//! holds, which event came first), never durations, except for generous timeouts.

use chrono::{DateTime, Duration as ChronoDuration, TimeZone, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_runtimes::claude::ClaudeFileStore;
use patchbay_runtimes::claude_keychain::ClaudeKeychainStore;
use patchbay_runtimes::claude_lock::{
    claude_write_lock_path, ClaudeWriteLock, CLAUDE_LOCK_STALE, CLAUDE_WRITE_LOCK_DIR,
};
use patchbay_runtimes::config::RuntimePaths;
use patchbay_runtimes::lock::FileLock;
use patchbay_runtimes::memory::MemoryCredentialItem;
use patchbay_runtimes::{RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, SystemTime};

const NOTION: &str = "notion|3fad03f7abd02b9c";
const CC: &str = "cc|1111111111111111";

/// Long enough for a writer that ignored the lock to have finished, so that the assertions made
/// while the lock is held would see its write. Counted from the moment the writer is seen
/// holding our own lock ([`holds`]): it is then past our lock and at Claude Code's.
const LET_IT_RUN: Duration = Duration::from_millis(300);

/// Waits (bounded) until someone holds our lock at `path`: the positive sign that a writer
/// started has reached its critical section, so a later "it has not written" means something.
fn holds(path: &Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while FileLock::acquire(path, Duration::from_millis(10)).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the writer never took our lock at {}",
            path.display()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

fn now() -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_764_000_000_000).unwrap()
}

fn cred(key: &str, access: &str, expires: Option<DateTime<Utc>>) -> RuntimeCredential {
    patchbay_runtimes::memory::sample_credential(key, access, expires)
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// Claude Code's write inside its lock: read, add its entry, temp file, rename.
fn claude_like_write(path: &Path, key: &str) {
    let mut root = fs::read_to_string(path)
        .ok()
        .map(|t| serde_json::from_str::<Value>(&t).unwrap())
        .unwrap_or_else(|| json!({}));
    root["mcpOAuth"][key] = json!({"serverName": "cc", "accessToken": "cc-at"});
    let tmp = path.with_file_name(".credentials.json.tmp.0123abcd");
    fs::write(&tmp, root.to_string()).unwrap();
    fs::rename(&tmp, path).unwrap();
}

/// Set a directory's mtime (std's `File::set_modified` on the directory opened for reading).
fn set_mtime(dir: &Path, when: SystemTime) {
    fs::File::open(dir).unwrap().set_modified(when).unwrap();
}

fn mtime(dir: &Path) -> SystemTime {
    fs::metadata(dir).unwrap().modified().unwrap()
}

#[test]
fn acquire_makes_the_directory_and_drop_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let lock = claude_write_lock_path(dir.path());
    assert_eq!(lock, dir.path().join(".storage-write.lock"));
    assert_eq!(CLAUDE_WRITE_LOCK_DIR, ".storage-write.lock");
    let held = ClaudeWriteLock::acquire(&lock, Duration::from_secs(1)).unwrap();
    assert!(lock.is_dir(), "the lock is a directory");
    assert_eq!(held.path(), lock);
    drop(held);
    assert!(!lock.exists(), "released by rmdir");
    // And again.
    drop(ClaudeWriteLock::acquire(&lock, Duration::from_secs(1)).unwrap());
    assert!(!lock.exists());
}

#[test]
fn a_taker_waits_for_the_holder_then_proceeds() {
    let dir = tempfile::tempdir().unwrap();
    let lock = claude_write_lock_path(dir.path());
    let held = ClaudeWriteLock::acquire(&lock, Duration::from_secs(1)).unwrap();
    let (events, seen) = mpsc::channel::<&'static str>();
    let waiter = {
        let (lock, events) = (lock.clone(), events.clone());
        thread::spawn(move || {
            let second = ClaudeWriteLock::acquire(&lock, Duration::from_secs(30)).unwrap();
            events.send("second acquired").unwrap();
            drop(second);
        })
    };
    thread::sleep(LET_IT_RUN);
    events.send("first releasing").unwrap();
    drop(held);
    waiter.join().unwrap();
    drop(events);
    assert_eq!(
        seen.iter().collect::<Vec<_>>(),
        ["first releasing", "second acquired"]
    );
    assert!(!lock.exists());
}

#[test]
fn a_held_lock_times_out_as_busy_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let lock = claude_write_lock_path(dir.path());
    fs::create_dir(&lock).unwrap();
    let err = ClaudeWriteLock::acquire(&lock, Duration::from_millis(200)).unwrap_err();
    match &err {
        RuntimeError::Busy { what, .. } => assert_eq!(what, &lock.display().to_string()),
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains(".storage-write.lock"), "{err}");
    assert!(lock.is_dir(), "a waiter never removes a live holder's lock");
}

#[test]
fn a_lock_older_than_fifteen_seconds_is_stale_and_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let lock = claude_write_lock_path(dir.path());
    fs::create_dir(&lock).unwrap();
    let old = SystemTime::now() - CLAUDE_LOCK_STALE - Duration::from_secs(5);
    set_mtime(&lock, old);
    // No waiting needed: the stale lock is removed and the mkdir tried again at once.
    let held = ClaudeWriteLock::acquire(&lock, Duration::ZERO).unwrap();
    assert!(lock.is_dir());
    assert!(mtime(&lock) > old, "a new lock directory");
    drop(held);
    assert!(!lock.exists());
}

#[test]
fn a_fresh_lock_is_never_removed() {
    let dir = tempfile::tempdir().unwrap();
    let lock = claude_write_lock_path(dir.path());
    fs::create_dir(&lock).unwrap();
    // 10 s old: held (proper-lockfile's holder refreshes every 7.5 s), not stale.
    let recent = SystemTime::now() - Duration::from_secs(10);
    set_mtime(&lock, recent);
    assert!(matches!(
        ClaudeWriteLock::acquire(&lock, Duration::from_millis(200)),
        Err(RuntimeError::Busy { .. })
    ));
    assert_eq!(mtime(&lock), recent, "left exactly as it was");
    // proper-lockfile sets a fresh lock's mtime to the next second + 5 ms: in the future.
    let ahead = SystemTime::now() + Duration::from_millis(900);
    set_mtime(&lock, ahead);
    assert!(matches!(
        ClaudeWriteLock::acquire(&lock, Duration::from_millis(100)),
        Err(RuntimeError::Busy { .. })
    ));
    assert_eq!(mtime(&lock), ahead);
}

#[test]
fn a_lock_taken_over_while_held_is_not_removed_on_release() {
    let dir = tempfile::tempdir().unwrap();
    let lock = claude_write_lock_path(dir.path());
    let held = ClaudeWriteLock::acquire(&lock, Duration::from_secs(1)).unwrap();
    // Claude Code found ours stale (a hold past 15 s), removed it and took its own.
    fs::remove_dir(&lock).unwrap();
    fs::create_dir(&lock).unwrap();
    set_mtime(&lock, SystemTime::now() + Duration::from_millis(500));
    drop(held);
    assert!(lock.is_dir(), "Claude Code's lock is not ours to remove");
}

/// A credential file with the user's login, in a fresh config dir.
fn claude_dir() -> (tempfile::TempDir, ClaudeFileStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".credentials.json");
    fs::write(
        &path,
        json!({"claudeAiOauth": {"accessToken": "user-at"}}).to_string(),
    )
    .unwrap();
    (dir, ClaudeFileStore::at(&path))
}

#[test]
fn the_file_store_waits_for_claude_code_and_keeps_what_it_wrote() {
    let (_dir, store) = claude_dir();
    let path = store.credentials_path().to_path_buf();
    let lock = store.claude_lock_path();
    assert_eq!(lock, path.with_file_name(".storage-write.lock"));

    // Claude Code takes its lock...
    fs::create_dir(&lock).unwrap();
    let writer = {
        let store = store.clone();
        thread::spawn(move || {
            store
                .write(
                    &cred(NOTION, "ours", Some(now() + ChronoDuration::hours(1))),
                    now(),
                )
                .unwrap()
        })
    };
    holds(&store.lock_path());
    thread::sleep(LET_IT_RUN);
    // ...our write waits, holding our own lock meanwhile (ours first, then Claude Code's)...
    assert!(
        read(&path)["mcpOAuth"].get(NOTION).is_none(),
        "our write went ahead while Claude Code held its lock"
    );
    assert!(matches!(
        FileLock::acquire(&store.lock_path(), Duration::from_millis(50)),
        Err(RuntimeError::Busy { .. })
    ));
    // ...Claude Code writes inside its lock and releases it.
    claude_like_write(&path, CC);
    fs::remove_dir(&lock).unwrap();

    assert_eq!(writer.join().unwrap(), WriteOutcome::Written);
    let file = read(&path);
    assert_eq!(file["mcpOAuth"][NOTION]["accessToken"], "ours");
    assert_eq!(
        file["mcpOAuth"][CC]["accessToken"], "cc-at",
        "Claude Code's write kept"
    );
    assert_eq!(file["claudeAiOauth"]["accessToken"], "user-at");
    assert!(!lock.exists(), "our hold released");
    drop(FileLock::acquire(&store.lock_path(), Duration::from_millis(50)).unwrap());
}

#[test]
fn the_file_store_is_busy_when_claude_code_holds_its_lock_too_long() {
    let (_dir, store) = claude_dir();
    let store = store.with_lock_timeout(Duration::from_millis(200));
    let before = fs::read(store.credentials_path()).unwrap();
    fs::create_dir(store.claude_lock_path()).unwrap();
    let err = store.write(&cred(NOTION, "ours", None), now()).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Busy { what, .. } if what.ends_with(".storage-write.lock")),
        "{err}"
    );
    assert_eq!(fs::read(store.credentials_path()).unwrap(), before);
    fs::write(
        store.credentials_path(),
        json!({"mcpOAuth": {NOTION: {"accessToken": "x"}}}).to_string(),
    )
    .unwrap();
    assert!(matches!(
        store.remove(&CredentialKey(NOTION.into())),
        Err(RuntimeError::Busy { .. })
    ));
    assert!(
        store.claude_lock_path().is_dir(),
        "Claude Code's lock left alone"
    );
}

#[test]
fn reads_and_writes_that_change_nothing_do_not_take_it() {
    let (_dir, store) = claude_dir();
    let store = store.with_lock_timeout(Duration::from_millis(100));
    let path = store.credentials_path().to_path_buf();
    let later = now() + ChronoDuration::hours(2);
    store
        .write(&cred(NOTION, "fresh", Some(later)), now())
        .unwrap();
    fs::write(
        store.needs_auth_path(),
        json!({"notion": {"timestamp": 1}}).to_string(),
    )
    .unwrap();
    let before = fs::read(&path).unwrap();

    // Claude Code holds its lock (for good): nothing below may wait for it.
    fs::create_dir(store.claude_lock_path()).unwrap();
    assert_eq!(store.read_all().unwrap().len(), 1);
    assert!(store.read(&CredentialKey(NOTION.into())).unwrap().is_some());
    // A fresher stored entry: nothing to write.
    assert_eq!(
        store
            .write(
                &cred(NOTION, "older", Some(now() + ChronoDuration::hours(1))),
                now()
            )
            .unwrap(),
        WriteOutcome::KeptFresher
    );
    // Nothing to remove.
    assert!(!store.remove(&CredentialKey(CC.into())).unwrap());
    // The needs-auth cache is not secure storage.
    store.clear_needs_auth("notion").unwrap();
    assert_eq!(read(store.needs_auth_path()), json!({}));
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn the_keychain_store_waits_for_claude_code_and_keeps_what_it_wrote() {
    let home = tempfile::tempdir().unwrap();
    let paths = RuntimePaths::resolve(home.path(), &|_| None);
    let item = MemoryCredentialItem::new();
    item.put_raw(&json!({"claudeAiOauth": {"accessToken": "user-at"}}).to_string());
    let store = ClaudeKeychainStore::with_item(Box::new(item.clone()), &paths);
    let lock = store.claude_lock_path();
    assert_eq!(lock, paths.claude_config_dir.join(".storage-write.lock"));
    fs::create_dir_all(&paths.claude_config_dir).unwrap();

    fs::create_dir(&lock).unwrap();
    let our_lock = store.lock_path().to_path_buf();
    let (done, finished) = mpsc::channel();
    let writer = thread::spawn(move || {
        let outcome = store
            .write(
                &cred(NOTION, "ours", Some(now() + ChronoDuration::hours(1))),
                now(),
            )
            .unwrap();
        done.send(outcome).unwrap();
    });
    holds(&our_lock);
    thread::sleep(LET_IT_RUN);
    assert!(
        finished.try_recv().is_err(),
        "our write went ahead while Claude Code held its lock"
    );
    assert_eq!(item.sets(), 0);
    // Claude Code's own Keychain write inside its lock, then its release.
    let mut blob: Value = serde_json::from_str(&item.text().unwrap()).unwrap();
    blob["mcpOAuth"] = json!({CC: {"serverName": "cc", "accessToken": "cc-at"}});
    item.put_raw(&blob.to_string());
    fs::remove_dir(&lock).unwrap();

    writer.join().unwrap();
    assert_eq!(finished.recv().unwrap(), WriteOutcome::Written);
    let blob: Value = serde_json::from_str(&item.text().unwrap()).unwrap();
    assert_eq!(blob["mcpOAuth"][NOTION]["accessToken"], "ours");
    assert_eq!(blob["mcpOAuth"][CC]["accessToken"], "cc-at");
    assert_eq!(blob["claudeAiOauth"]["accessToken"], "user-at");
    assert!(!lock.exists());
}

#[test]
fn the_keychain_store_is_busy_when_claude_code_holds_its_lock_too_long() {
    let home = tempfile::tempdir().unwrap();
    let paths = RuntimePaths::resolve(home.path(), &|_| None);
    let item = MemoryCredentialItem::new();
    let store = ClaudeKeychainStore::with_item(Box::new(item.clone()), &paths)
        .with_lock_timeout(Duration::from_millis(200));
    fs::create_dir_all(&paths.claude_config_dir).unwrap();
    fs::create_dir(store.claude_lock_path()).unwrap();
    let err = store.write(&cred(NOTION, "ours", None), now()).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Busy { what, .. } if what.ends_with(".storage-write.lock")),
        "{err}"
    );
    assert_eq!(item.sets(), 0);
    assert!(store.read_all().unwrap().is_empty(), "reads do not wait");
}

/// Issue 23: a Patchbay writer killed while it held Claude Code's lock left the directory, and
/// the next sync waited until its timeout (the lock looked fresh for 15 s). A writer under the
/// same flock of ours knows its maker is gone and takes it over at once; a lock someone else
/// made, or one made under another flock, is still waited on.
#[test]
fn a_lock_a_killed_writer_of_ours_left_is_taken_over_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let lock = claude_write_lock_path(dir.path());
    let ours = dir.path().join(".credentials.json.patchbay.lock");
    {
        let guard = FileLock::acquire(&ours, Duration::from_secs(1)).unwrap();
        let held = ClaudeWriteLock::acquire_under(&lock, Duration::from_secs(1), &guard).unwrap();
        // Killed while holding both: no release of Claude Code's lock; the flock goes with the
        // process.
        std::mem::forget(held);
    }
    assert!(lock.is_dir(), "left behind");
    let guard = FileLock::acquire(&ours, Duration::from_secs(1)).unwrap();
    let taken = std::time::Instant::now();
    let held = ClaudeWriteLock::acquire_under(&lock, Duration::from_secs(5), &guard).unwrap();
    assert!(
        taken.elapsed() < Duration::from_secs(1),
        "taken over, not waited out: {:?}",
        taken.elapsed()
    );
    drop(held);
    assert!(!lock.exists());
    let notes: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("patchbay-owner"))
        .collect();
    assert!(notes.is_empty(), "the note goes with the lock: {notes:?}");

    // Claude Code's own lock (no note of ours) is never taken over while fresh.
    fs::create_dir(&lock).unwrap();
    let err = ClaudeWriteLock::acquire_under(&lock, Duration::from_millis(200), &guard);
    assert!(matches!(err, Err(RuntimeError::Busy { .. })), "{err:?}");
    fs::remove_dir(&lock).unwrap();

    // One left under another flock (another writer of ours that may still be alive) neither.
    let other = dir.path().join("other.patchbay.lock");
    {
        let other_guard = FileLock::acquire(&other, Duration::from_secs(1)).unwrap();
        let held =
            ClaudeWriteLock::acquire_under(&lock, Duration::from_secs(1), &other_guard).unwrap();
        std::mem::forget(held);
    }
    let err = ClaudeWriteLock::acquire_under(&lock, Duration::from_millis(200), &guard);
    assert!(matches!(err, Err(RuntimeError::Busy { .. })), "{err:?}");
    assert!(lock.is_dir());
}
