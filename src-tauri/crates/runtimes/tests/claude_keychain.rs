//! Claude Code's macOS Keychain variant: the same JSON rules as the file store, on one keychain
//! item. In memory always; against the real OS keychain (Secret Service through the keyring crate,
//! the code path a Mac uses but for the OS backend) with `PATCHBAY_TEST_KEYCHAIN=1` inside a D-Bus
//! session with an unlocked gnome-keyring. Without that variable the real tests print a notice and
//! skip, so a developer's `cargo test` never writes into their login keyring; they use a unique
//! test service name, never Claude Code's.

use chrono::{DateTime, Duration, TimeZone, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_runtimes::claude::ClaudeFileStore;
use patchbay_runtimes::claude_keychain::{
    choose_claude_store, ClaudeKeychainStore, CredentialItem, KeyringItem, CLAUDE_WRITE_LOCK_DIR,
};
use patchbay_runtimes::config::RuntimePaths;
use patchbay_runtimes::lock::FileLock;
use patchbay_runtimes::memory::MemoryCredentialItem;
use patchbay_runtimes::{RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use patchbay_vault::Secret;
use serde_json::{json, Value};
use std::fs;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

const NOTION: &str = "notion|3fad03f7abd02b9c";
const FX: &str = "fx|528e1818a7ba21cf";

fn now() -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_764_000_000_000).unwrap()
}

fn cred(key: &str, access: &str, expires: Option<DateTime<Utc>>) -> RuntimeCredential {
    patchbay_runtimes::memory::sample_credential(key, access, expires)
}

/// What Claude Code keeps: the user's login, MCP entries with members we do not write, and more.
fn claude_blob() -> Value {
    json!({
        "claudeAiOauth": {"accessToken": "user-at", "refreshToken": "user-rt", "expiresAt": 1, "scopes": ["user:inference"]},
        "mcpOAuth": {
            NOTION: {"serverName": "notion", "accessToken": "old", "expiresAt": 1,
                     "redirectUri": "http://localhost:3118/callback",
                     "discoveryState": {"authorizationServerUrl": "https://auth.example.com/"},
                     "futureField": [1, 2]},
            FX: {"serverName": "fx", "accessToken": "theirs"},
            "pending|0000000000000000": {"serverName": "pending", "clientId": "registered-only"}
        },
        "mcpOAuthClientConfig": {"x": 1},
        "keychainOverflow": {"slot": "a", "key": "b64"},
        "somethingNew": true
    })
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

struct Rig {
    home: tempfile::TempDir,
    paths: RuntimePaths,
}

fn rig() -> Rig {
    let home = tempfile::tempdir().unwrap();
    let paths = RuntimePaths::resolve(home.path(), &|_| None);
    Rig { home, paths }
}

fn memory_store(rig: &Rig) -> (ClaudeKeychainStore, MemoryCredentialItem) {
    let item = MemoryCredentialItem::new();
    let store = ClaudeKeychainStore::with_item(Box::new(item.clone()), &rig.paths);
    (store, item)
}

type Step = Box<dyn Fn(&dyn RuntimeStore) -> String>;

/// The same operations through the file store and the keychain store leave the same JSON: one
/// set of rules.
#[test]
fn the_keychain_store_applies_the_file_stores_rules() {
    let rig = rig();
    let (keychain, item) = memory_store(&rig);
    let file = ClaudeFileStore::new(&rig.paths);
    item.put_raw(&claude_blob().to_string());
    fs::create_dir_all(rig.paths.claude_credentials.parent().unwrap()).unwrap();
    fs::write(&rig.paths.claude_credentials, claude_blob().to_string()).unwrap();

    let later = now() + Duration::hours(2);
    let steps: Vec<(&str, Step)> = vec![
        (
            "write over an older entry",
            Box::new(|s| {
                format!(
                    "{:?}",
                    s.write(
                        &cred(NOTION, "new-at", Some(now() + Duration::hours(1))),
                        now()
                    )
                    .unwrap()
                )
            }),
        ),
        (
            "a fresher stored entry is kept",
            Box::new(move |s| {
                format!(
                    "{:?}",
                    s.write(
                        &cred(NOTION, "stale-at", Some(now() + Duration::minutes(30))),
                        now()
                    )
                    .unwrap()
                )
            }),
        ),
        (
            "a later one replaces it",
            Box::new(move |s| {
                format!(
                    "{:?}",
                    s.write(&cred(NOTION, "later-at", Some(later)), now())
                        .unwrap()
                )
            }),
        ),
        (
            "a new entry",
            Box::new(|s| {
                format!(
                    "{:?}",
                    s.write(&cred("new|1111111111111111", "n", None), now())
                        .unwrap()
                )
            }),
        ),
        (
            "remove one",
            Box::new(|s| format!("{:?}", s.remove(&CredentialKey(FX.into())).unwrap())),
        ),
        (
            "remove an absent one",
            Box::new(|s| format!("{:?}", s.remove(&CredentialKey(FX.into())).unwrap())),
        ),
    ];
    for (what, step) in &steps {
        let a = step(&keychain);
        let b = step(&file);
        assert_eq!(a, b, "{what}");
        let in_item = parse(&item.text().unwrap());
        let in_file: Value =
            serde_json::from_slice(&fs::read(&rig.paths.claude_credentials).unwrap()).unwrap();
        assert_eq!(in_item, in_file, "{what}");
    }

    let blob = parse(&item.text().unwrap());
    assert_eq!(
        blob["claudeAiOauth"],
        claude_blob()["claudeAiOauth"],
        "the user's login is untouched"
    );
    assert_eq!(blob["keychainOverflow"], json!({"slot": "a", "key": "b64"}));
    assert_eq!(blob["somethingNew"], json!(true));
    let entry = &blob["mcpOAuth"][NOTION];
    assert_eq!(entry["accessToken"], "later-at");
    assert_eq!(entry["expiresAt"], json!(later.timestamp_millis()));
    assert_eq!(entry["redirectUri"], "http://localhost:3118/callback");
    assert_eq!(entry["futureField"], json!([1, 2]));
    assert!(blob["mcpOAuth"].get(FX).is_none());
    assert_eq!(
        blob["mcpOAuth"]["pending|0000000000000000"]["clientId"],
        "registered-only"
    );
    // Compact, as Claude Code writes it: `security -w` prints hex for a secret with newlines.
    assert!(!item.text().unwrap().contains('\n'));

    // Reads agree too (the registration without a token is skipped by both).
    let keys = |s: &dyn RuntimeStore| {
        let mut k: Vec<String> = s.read_all().unwrap().into_iter().map(|c| c.key.0).collect();
        k.sort();
        k
    };
    assert_eq!(keys(&keychain), keys(&file));
    assert_eq!(
        keys(&keychain),
        vec!["new|1111111111111111".to_string(), NOTION.to_string()]
    );
    let back = keychain
        .read(&CredentialKey(NOTION.into()))
        .unwrap()
        .unwrap();
    assert_eq!(back.access_token.expose(), "later-at");
    assert_eq!(back.expires_at, Some(later));
}

#[test]
fn a_missing_item_is_created_by_a_write_and_never_by_a_remove() {
    let rig = rig();
    let (store, item) = memory_store(&rig);
    assert!(store.read_all().unwrap().is_empty());
    assert!(!store.remove(&CredentialKey(NOTION.into())).unwrap());
    assert_eq!(item.text(), None);
    assert_eq!(item.sets(), 0);
    assert_eq!(
        store.write(&cred(NOTION, "a", None), now()).unwrap(),
        WriteOutcome::Written
    );
    let blob = parse(&item.text().unwrap());
    assert_eq!(
        blob.as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["mcpOAuth"]
    );
    // The same write again changes nothing and sets nothing.
    store.write(&cred(NOTION, "a", None), now()).unwrap();
    assert_eq!(item.sets(), 1);
    // Our lock is the file store's, in Claude Code's config dir.
    assert_eq!(
        store.lock_path(),
        rig.paths
            .claude_config_dir
            .join(".credentials.json.patchbay.lock")
    );
    assert!(store.lock_path().exists());
}

#[test]
fn a_write_by_claude_code_between_our_reads_is_merged_not_lost() {
    let rig = rig();
    let (store, item) = memory_store(&rig);
    item.put_raw(&claude_blob().to_string());
    // Claude Code rotates fx's pair right after our first read.
    let mut fired = false;
    item.on_get(move |item| {
        if !fired {
            fired = true;
            let mut blob = claude_blob();
            blob["mcpOAuth"][FX]["accessToken"] = json!("rotated-by-claude");
            item.put_raw(&blob.to_string());
        }
    });
    store
        .write(
            &cred(NOTION, "ours", Some(now() + Duration::hours(1))),
            now(),
        )
        .unwrap();
    let blob = parse(&item.text().unwrap());
    assert_eq!(blob["mcpOAuth"][NOTION]["accessToken"], "ours");
    assert_eq!(blob["mcpOAuth"][FX]["accessToken"], "rotated-by-claude");
    assert_eq!(item.sets(), 1);
}

#[test]
fn a_written_token_clears_the_needs_auth_cache_file() {
    let rig = rig();
    let (store, _item) = memory_store(&rig);
    let cache = rig.paths.claude_needs_auth_cache();
    assert_eq!(store.needs_auth_path(), cache);
    fs::create_dir_all(cache.parent().unwrap()).unwrap();
    fs::write(
        &cache,
        r#"{"notion": {"timestamp": 1}, "other": {"timestamp": 2}}"#,
    )
    .unwrap();
    store.write(&cred(NOTION, "a", None), now()).unwrap();
    let left: Value = serde_json::from_slice(&fs::read(&cache).unwrap()).unwrap();
    assert_eq!(left, json!({"other": {"timestamp": 2}}));
}

#[test]
fn a_malformed_item_is_named_and_never_echoed() {
    let rig = rig();
    let (store, item) = memory_store(&rig);
    item.put_raw("{\"mcpOAuth\": \"sk-secret-value\"}");
    let err = store.read_all().unwrap_err();
    assert!(matches!(err, RuntimeError::Malformed { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("keychain:memory: mcpOAuth: expected an object"),
        "{err}"
    );
    let err = store.write(&cred(NOTION, "a", None), now()).unwrap_err();
    assert!(!err.to_string().contains("sk-secret-value"), "{err}");
    item.put_raw("not json sk-secret-value");
    let err = store.read(&CredentialKey(NOTION.into())).unwrap_err();
    assert!(err.to_string().contains("not valid JSON"), "{err}");
    assert!(!err.to_string().contains("sk-secret-value"), "{err}");
    assert_eq!(item.sets(), 0, "nothing written over a malformed item");
    assert!(!format!("{store:?}").contains("sk-secret-value"));
}

#[test]
fn our_writers_wait_for_the_shared_lock() {
    let rig = rig();
    let (store, _item) = memory_store(&rig);
    let store = store.with_lock_timeout(std::time::Duration::from_millis(50));
    fs::create_dir_all(&rig.paths.claude_config_dir).unwrap();
    let _held = FileLock::acquire(
        &rig.paths
            .claude_config_dir
            .join(".credentials.json.patchbay.lock"),
        std::time::Duration::from_secs(1),
    )
    .unwrap();
    let err = store.write(&cred(NOTION, "a", None), now()).unwrap_err();
    assert!(matches!(err, RuntimeError::Busy { .. }), "{err}");
}

#[test]
fn it_watches_claude_codes_write_lock_and_the_cache() {
    let rig = rig();
    let (store, _item) = memory_store(&rig);
    assert_eq!(
        store.watch_targets(),
        vec![(
            rig.paths.claude_config_dir.clone(),
            vec![
                CLAUDE_WRITE_LOCK_DIR.to_string(),
                "mcp-needs-auth-cache.json".to_string()
            ]
        )]
    );
}

/// Which store a write lands in.
fn lands_in(store: &dyn RuntimeStore, item: &MemoryCredentialItem, rig: &Rig) -> &'static str {
    let sets = item.sets();
    store
        .write(&cred("probe|2222222222222222", "p", None), now())
        .unwrap();
    if item.sets() > sets {
        "keychain"
    } else if fs::read_to_string(&rig.paths.claude_credentials).is_ok_and(|t| t.contains("probe|"))
    {
        "file"
    } else {
        "nowhere"
    }
}

#[test]
fn the_file_is_used_only_when_it_exists_and_the_keychain_has_no_item() {
    // No item, no file: the Keychain (the write creates the item, as Claude Code would).
    let rig1 = rig();
    let (keychain, item) = memory_store(&rig1);
    let chosen = choose_claude_store(keychain, ClaudeFileStore::new(&rig1.paths));
    assert_eq!(lands_in(chosen.as_ref(), &item, &rig1), "keychain");

    // No item, a file: Claude Code's fallback.
    let rig2 = rig();
    let (keychain, item) = memory_store(&rig2);
    fs::create_dir_all(&rig2.paths.claude_config_dir).unwrap();
    fs::write(&rig2.paths.claude_credentials, "{}").unwrap();
    let chosen = choose_claude_store(keychain, ClaudeFileStore::new(&rig2.paths));
    assert_eq!(lands_in(chosen.as_ref(), &item, &rig2), "file");

    // An item and a file: the item.
    let rig3 = rig();
    let (keychain, item) = memory_store(&rig3);
    item.put_raw("{}");
    fs::create_dir_all(&rig3.paths.claude_config_dir).unwrap();
    fs::write(&rig3.paths.claude_credentials, "{}").unwrap();
    let chosen = choose_claude_store(keychain, ClaudeFileStore::new(&rig3.paths));
    assert_eq!(lands_in(chosen.as_ref(), &item, &rig3), "keychain");
    drop(rig3.home);
}

// ---- The real OS keychain ----

fn keychain_enabled(test: &str) -> bool {
    let on = std::env::var("PATCHBAY_TEST_KEYCHAIN").as_deref() == Ok("1");
    // Under scripts/test.sh (PATCHBAY_TEST_INNER=1) the keychain is provided: not a skip.
    assert!(
        on || std::env::var("PATCHBAY_TEST_INNER").as_deref() != Ok("1"),
        "{test} needs the real keychain, which PATCHBAY_TEST_INNER=1 promises"
    );
    if !on {
        println!(
            "SKIPPED {test}: set PATCHBAY_TEST_KEYCHAIN=1 inside a D-Bus session with an unlocked \
             keyring to run the real keychain tests"
        );
    }
    on
}

/// A keychain item under a service name unique to this run and test (never Claude Code's);
/// deleted on drop.
struct TestItem(KeyringItem);

impl TestItem {
    fn new(test: &str) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        TestItem(KeyringItem::new(
            format!("patchbay-test-claude-{test}-{}-{nanos}", std::process::id()),
            "patchbay-test",
        ))
    }

    /// Another handle on the same item (its own keyring entry), as Claude Code would open it.
    fn handle(&self) -> KeyringItem {
        self.0.clone()
    }
}

impl Drop for TestItem {
    fn drop(&mut self) {
        let _ = self.0.delete();
    }
}

#[test]
fn real_keychain_round_trip_preserves_the_users_login() {
    if !keychain_enabled("real_keychain_round_trip_preserves_the_users_login") {
        return;
    }
    let rig = rig();
    let test_item = TestItem::new("round-trip");
    let claude = test_item.handle();
    assert!(test_item.0.service().starts_with("patchbay-test-claude-"));
    assert_eq!(claude.get().unwrap(), None);
    claude.set(&Secret::new(claude_blob().to_string())).unwrap();

    let store = ClaudeKeychainStore::with_item(Box::new(test_item.handle()), &rig.paths);
    assert!(store.has_item().unwrap());
    let expires = now() + Duration::hours(1);
    assert_eq!(
        store
            .write(&cred(NOTION, "new-at", Some(expires)), now())
            .unwrap(),
        WriteOutcome::Written
    );
    let blob = parse(claude.get().unwrap().unwrap().expose());
    assert_eq!(blob["claudeAiOauth"], claude_blob()["claudeAiOauth"]);
    assert_eq!(blob["mcpOAuth"][NOTION]["accessToken"], "new-at");
    assert_eq!(
        blob["mcpOAuth"][NOTION]["redirectUri"],
        "http://localhost:3118/callback"
    );
    assert_eq!(blob["mcpOAuth"][FX]["accessToken"], "theirs");

    // A fresher pair Claude Code wrote is kept.
    let mut rotated = blob.clone();
    rotated["mcpOAuth"][NOTION]["accessToken"] = json!("claude-rotated");
    rotated["mcpOAuth"][NOTION]["expiresAt"] =
        json!((now() + Duration::hours(3)).timestamp_millis());
    claude.set(&Secret::new(rotated.to_string())).unwrap();
    assert_eq!(
        store
            .write(&cred(NOTION, "ours-again", Some(expires)), now())
            .unwrap(),
        WriteOutcome::KeptFresher
    );
    let back = store.read(&CredentialKey(NOTION.into())).unwrap().unwrap();
    assert_eq!(back.access_token.expose(), "claude-rotated");
    assert_eq!(store.read_all().unwrap().len(), 2);

    assert!(store.remove(&CredentialKey(FX.into())).unwrap());
    assert!(!store.remove(&CredentialKey(FX.into())).unwrap());
    let blob = parse(claude.get().unwrap().unwrap().expose());
    assert!(blob["mcpOAuth"].get(FX).is_none());
    assert_eq!(blob["claudeAiOauth"]["accessToken"], "user-at");
    assert_eq!(blob["somethingNew"], json!(true));
}

#[test]
fn real_keychain_concurrent_writers_lose_nothing() {
    if !keychain_enabled("real_keychain_concurrent_writers_lose_nothing") {
        return;
    }
    let rig = Arc::new(rig());
    let test_item = TestItem::new("concurrent");
    test_item
        .handle()
        .set(&Secret::new(claude_blob().to_string()))
        .unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let rig = rig.clone();
            let item = test_item.handle();
            std::thread::spawn(move || {
                // Each writer its own store, as separate Patchbay processes would be. The lock
                // wait is generous: this asserts that nothing is lost, and a loaded machine's
                // Secret Service can take seconds for the writes queued ahead.
                let store = ClaudeKeychainStore::with_item(Box::new(item), &rig.paths)
                    .with_lock_timeout(std::time::Duration::from_secs(120));
                for n in 0..5 {
                    let key = format!("s{t}n{n}|{:016x}", t * 100 + n);
                    store.write(&cred(&key, "x", None), now()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let blob = parse(test_item.handle().get().unwrap().unwrap().expose());
    let oauth = blob["mcpOAuth"].as_object().unwrap();
    assert_eq!(oauth.len(), 3 + 20, "every writer's entry is there");
    assert_eq!(blob["claudeAiOauth"]["accessToken"], "user-at");
}

#[test]
fn real_keychain_missing_item_then_created() {
    if !keychain_enabled("real_keychain_missing_item_then_created") {
        return;
    }
    let rig = rig();
    let test_item = TestItem::new("missing");
    let store = ClaudeKeychainStore::with_item(Box::new(test_item.handle()), &rig.paths);
    assert!(!store.has_item().unwrap());
    assert!(store.read_all().unwrap().is_empty());
    assert!(!store.remove(&CredentialKey(NOTION.into())).unwrap());
    assert_eq!(
        test_item.handle().get().unwrap(),
        None,
        "remove creates nothing"
    );
    store.write(&cred(NOTION, "a", None), now()).unwrap();
    assert!(store.has_item().unwrap());
    let blob = parse(test_item.handle().get().unwrap().unwrap().expose());
    assert_eq!(blob["mcpOAuth"][NOTION]["accessToken"], "a");
}
