//! The core end to end with an in-memory keychain: the user catalog merged over the default,
//! live watching of catalogs and the vault, unclaimed deletion, an unreachable store.

use patchbay_catalog::{CatalogSource, CredentialKey, SourceKind};
use patchbay_core::{watch::watch, Patchbay, Paths};
use patchbay_status::ConnectorState;
use patchbay_vault::{MemoryStore, Secret};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A default catalog whose entries are enabled, so they are in use (a shipped one is a gallery).
const DEFAULT: &str = r#"{"mcpServers":{
  "notion": {"title": "Notion", "type": "streamable-http", "url": "https://mcp.notion.com/mcp", "enabled": true},
  "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${PB_TEST_GH}"}, "enabled": true}
}}"#;

fn paths(dir: &Path) -> Paths {
    let default = dir.join("default.json");
    std::fs::write(&default, DEFAULT).unwrap();
    Paths {
        config_dir: dir.join("config"),
        data_dir: dir.join("data"),
        default_catalog: CatalogSource::File {
            path: default,
            kind: SourceKind::Default,
            required: true,
        },
        catalog_override: None,
        keychain_account: "test".into(),
    }
}

/// Write by temp file and rename, the way editors and runtimes replace files.
fn replace(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn wait_for(count: &AtomicUsize, above: usize) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if count.load(Ordering::SeqCst) > above {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// The count once it has not moved for 300 ms (at most 10 s).
fn quiet(count: &AtomicUsize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = count.load(Ordering::SeqCst);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
        let now = count.load(Ordering::SeqCst);
        if now == seen {
            return now;
        }
        seen = now;
    }
    seen
}

#[test]
fn the_user_catalog_is_merged_over_the_default_and_the_users_entry_wins() {
    let dir = tempfile::tempdir().unwrap();
    let paths = paths(dir.path());
    replace(
        &paths.user_catalog(),
        r#"{"mcpServers":{
          "notion": {"title": "My Notion", "type": "stdio", "command": "notion-local"},
          "mine": {"type": "stdio", "command": "my-server"}
        }}"#,
    );
    let patchbay = Patchbay::with_store(paths, Arc::new(MemoryStore::new())).unwrap();
    let report = patchbay.status();
    let notion = report.connector("notion").unwrap();
    assert_eq!(notion.title, "My Notion");
    assert_eq!(notion.state, ConnectorState::NoCredentialRequired);
    assert!(
        notion.source.ends_with("config/mcp.json"),
        "{}",
        notion.source
    );
    assert!(report.connector("mine").is_some());
    assert!(report.connector("github").is_some());
    assert_eq!(report.catalog.sources.len(), 2);
}

#[test]
fn a_bad_user_catalog_leaves_the_default_entries_listed() {
    let dir = tempfile::tempdir().unwrap();
    let paths = paths(dir.path());
    replace(&paths.user_catalog(), "{ not json");
    let patchbay = Patchbay::with_store(paths, Arc::new(MemoryStore::new())).unwrap();
    let report = patchbay.status();
    assert_eq!(report.connectors.len(), 2);
    let user = &report.catalog.sources[1];
    assert!(user.error.as_deref().unwrap().contains("mcp.json"));
    assert!(report.any_attention());
    assert!(
        report
            .headline()
            .contains("1 catalog file could not be read"),
        "{}",
        report.headline()
    );
}

#[test]
fn a_catalog_change_and_a_secret_set_elsewhere_are_seen_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let paths = paths(dir.path());
    let store = Arc::new(MemoryStore::new());
    let patchbay = Patchbay::with_store(paths.clone(), store.clone()).unwrap();
    assert_eq!(patchbay.status().connectors.len(), 2);

    let fired = Arc::new(AtomicUsize::new(0));
    let counter = fired.clone();
    let _watch = watch(&paths, Duration::from_secs(3600), move || {
        counter.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();

    // A new user catalog, written by rename.
    let before = fired.load(Ordering::SeqCst);
    replace(
        &paths.user_catalog(),
        r#"{"mcpServers":{"fresh": {"type": "stdio", "command": "x"}}}"#,
    );
    assert!(
        wait_for(&fired, before),
        "creating the user catalog was not seen"
    );
    assert!(patchbay.status().connector("fresh").is_some());

    // Replaced again: a watch on the old inode would be blind now.
    std::thread::sleep(Duration::from_millis(400));
    let before = fired.load(Ordering::SeqCst);
    replace(
        &paths.user_catalog(),
        r#"{"mcpServers":{"fresher": {"type": "stdio", "command": "x"}}}"#,
    );
    assert!(
        wait_for(&fired, before),
        "the second replacement was not seen"
    );
    let report = patchbay.status();
    assert!(report.connector("fresher").is_some());
    assert!(report.connector("fresh").is_none());

    // Another process (another vault handle) stores the GitHub token.
    std::thread::sleep(Duration::from_millis(400));
    let before = fired.load(Ordering::SeqCst);
    let other = Patchbay::with_store(paths.clone(), store).unwrap();
    other
        .set_secret("PB_TEST_GH", &Secret::new("ghp_x"))
        .unwrap();
    assert!(wait_for(&fired, before), "a vault write was not seen");
    assert_eq!(
        patchbay.status().connector("github").unwrap().state,
        ConnectorState::Ready
    );
}

#[test]
fn the_tick_fires_so_expiry_transitions_show_up() {
    let dir = tempfile::tempdir().unwrap();
    let paths = paths(dir.path());
    let fired = Arc::new(AtomicUsize::new(0));
    let counter = fired.clone();
    let watch_handle = watch(&paths, Duration::from_millis(50), move || {
        counter.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    assert!(wait_for(&fired, 2));
    drop(watch_handle);
    let after_drop = fired.load(Ordering::SeqCst);
    // The proof that time enough went by: a second watch with the same tick fires three times,
    // so the first one's tick, had it outlived its watch, would have fired at least twice.
    let witness = Arc::new(AtomicUsize::new(0));
    let counter = witness.clone();
    let _witness = watch(&paths, Duration::from_millis(50), move || {
        counter.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    assert!(wait_for(&witness, 2), "the witness tick never fired");
    assert_eq!(
        fired.load(Ordering::SeqCst),
        after_drop,
        "the tick outlived its watch"
    );
}

#[test]
fn an_unreachable_store_reports_and_keeps_every_secret() {
    let dir = tempfile::tempdir().unwrap();
    let paths = paths(dir.path());
    let store = Arc::new(MemoryStore::new());
    let patchbay = Patchbay::with_store(paths.clone(), store.clone()).unwrap();
    patchbay
        .set_secret("PB_TEST_GH", &Secret::new("ghp_x"))
        .unwrap();

    store.set_unreachable(true);
    let fresh = Patchbay::with_store(paths.clone(), store.clone()).unwrap();
    let report = fresh.status();
    assert!(!report.secret_store.reachable);
    assert_eq!(
        report.connector("github").unwrap().state,
        ConnectorState::SecretStoreUnreachable
    );
    assert_eq!(
        fresh.secret_names().unwrap().len(),
        1,
        "the index must survive"
    );

    store.set_unreachable(false);
    let back = Patchbay::with_store(paths, store).unwrap();
    assert_eq!(
        back.status().connector("github").unwrap().state,
        ConnectorState::Ready
    );
}

#[test]
fn status_reads_the_keychain_once_per_process_however_many_connectors() {
    let dir = tempfile::tempdir().unwrap();
    let paths = paths(dir.path());
    let store = Arc::new(MemoryStore::new());
    let seed = Patchbay::with_store(paths.clone(), store.clone()).unwrap();
    seed.set_secret("PB_TEST_GH", &Secret::new("ghp_x"))
        .unwrap();
    let before = store.get_calls();
    let patchbay = Patchbay::with_store(paths, store.clone()).unwrap();
    for _ in 0..5 {
        patchbay.status();
    }
    assert_eq!(store.get_calls() - before, 1);
}

#[test]
fn only_an_unclaimed_credential_can_be_deleted_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let patchbay = Patchbay::with_store(paths(dir.path()), Arc::new(MemoryStore::new())).unwrap();
    let err = patchbay
        .delete_unclaimed(&CredentialKey("nobody|0000000000000000".into()))
        .unwrap_err();
    assert!(err.to_string().contains("no unclaimed credential"), "{err}");
}

#[test]
fn reading_the_status_does_not_wake_the_watch() {
    let dir = tempfile::tempdir().unwrap();
    let paths = paths(dir.path());
    replace(&paths.user_catalog(), r#"{"mcpServers":{}}"#);
    let patchbay = Patchbay::with_store(paths.clone(), Arc::new(MemoryStore::new())).unwrap();
    // The first status creates the vault's key (a write, once per data directory).
    patchbay.status();
    let fired = Arc::new(AtomicUsize::new(0));
    let counter = fired.clone();
    let _watch = watch(&paths, Duration::from_secs(3600), move || {
        counter.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    // The watch is up once it sees a change.
    replace(
        &paths.user_catalog(),
        r#"{"mcpServers":{"a":{"type":"stdio","command":"x"}}}"#,
    );
    assert!(wait_for(&fired, 0), "the watch never saw the first change");
    // One replace is one call or two (the temp file's write and its rename can fall on either
    // side of a call): the count is taken once the watch has gone quiet.
    let before = quiet(&fired);
    for _ in 0..3 {
        patchbay.status();
    }
    // What the reads caused, had they written anything, would arrive within milliseconds.
    assert_eq!(quiet(&fired), before, "status reads woke the watch");
    // And the watch was listening all along: a change after the reads is seen.
    replace(
        &paths.user_catalog(),
        r#"{"mcpServers":{"b":{"type":"stdio","command":"x"}}}"#,
    );
    assert!(wait_for(&fired, before), "the marker change was not seen");
}
