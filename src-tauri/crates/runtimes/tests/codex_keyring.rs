//! Codex's keyring item in Codex's own `StoredOAuthTokens` shape (measured with Codex 0.171.0's
//! `codex mcp login`; see the `codex` module docs), and the `auto` mode's choice between the
//! keyring and the file, call by call as Codex makes it. The real Codex CLI judges the same
//! items in tests/tests/codex_cli.rs.

use chrono::{DateTime, Duration, TimeZone, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_runtimes::codex::{CodexAutoStore, CodexFileStore, CodexKeyringStore, KeyringBackend};
use patchbay_runtimes::{RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use patchbay_vault::Secret;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

const FX: &str = "fx|528e1818a7ba21cf";

fn now() -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_764_000_000_000).unwrap()
}

fn key() -> CredentialKey {
    CredentialKey(FX.into())
}

fn cred(access: &str, refresh: Option<&str>, expires: Option<DateTime<Utc>>) -> RuntimeCredential {
    RuntimeCredential {
        key: key(),
        server_name: "fx".into(),
        server_url: "http://localhost:3100/mcp".into(),
        access_token: Secret::new(access),
        refresh_token: refresh.map(Secret::new),
        expires_at: expires,
        scope: Some("mcp:tools mcp:read".into()),
        client_id: Some("cid".into()),
        client_secret: Some(Secret::new("not-in-codex-schema")),
        issuer: Some("http://localhost:3101/".into()),
    }
}

/// An in-memory keyring that can be made to fail like an unreachable Secret Service.
#[derive(Clone, Default)]
struct FakeKeyring {
    items: Arc<Mutex<HashMap<String, String>>>,
    down: Arc<AtomicBool>,
}

impl FakeKeyring {
    fn check(&self) -> Result<(), RuntimeError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(RuntimeError::Busy {
                what: "the keyring (test)".into(),
                message: "no Secret Service".into(),
            });
        }
        Ok(())
    }
    fn item(&self) -> Option<Value> {
        let items = self.items.lock().unwrap();
        items.get(FX).map(|t| serde_json::from_str(t).unwrap())
    }
    fn put(&self, item: Value) {
        self.items
            .lock()
            .unwrap()
            .insert(FX.into(), item.to_string());
    }
}

impl KeyringBackend for FakeKeyring {
    fn get(&self, account: &str) -> Result<Option<String>, RuntimeError> {
        self.check()?;
        Ok(self.items.lock().unwrap().get(account).cloned())
    }
    fn set(&self, account: &str, value: &str) -> Result<(), RuntimeError> {
        self.check()?;
        self.items
            .lock()
            .unwrap()
            .insert(account.into(), value.into());
        Ok(())
    }
    fn delete(&self, account: &str) -> Result<bool, RuntimeError> {
        self.check()?;
        Ok(self.items.lock().unwrap().remove(account).is_some())
    }
}

fn keyring_store(fake: &FakeKeyring) -> CodexKeyringStore {
    CodexKeyringStore::new(Box::new(fake.clone()), vec![key()])
}

#[test]
fn keyring_item_is_codex_stored_oauth_tokens() {
    let fake = FakeKeyring::default();
    let store = keyring_store(&fake);
    let expires = now() + Duration::seconds(3599) + Duration::milliseconds(700);
    store
        .write(&cred("at", Some("rt"), Some(expires)), now())
        .unwrap();
    assert_eq!(
        fake.item().unwrap(),
        json!({
            "server_name": "fx",
            "url": "http://localhost:3100/mcp",
            "client_id": "cid",
            "issuer": "http://localhost:3101/",
            "token_response": {
                "access_token": "at",
                "token_type": "Bearer",
                "refresh_token": "rt",
                "expires_in": 3599,
                "scope": "mcp:tools mcp:read"
            },
            "expires_at": expires.timestamp_millis()
        })
    );
    let back = store.read(&key()).unwrap().unwrap();
    assert_eq!(back.access_token.expose(), "at");
    assert_eq!(back.refresh_token.as_ref().map(Secret::expose), Some("rt"));
    assert_eq!(back.expires_at, Some(expires));
    assert_eq!(back.scope.as_deref(), Some("mcp:tools mcp:read"));
    assert_eq!(back.server_url, "http://localhost:3100/mcp");
    assert_eq!(back.client_id.as_deref(), Some("cid"));
}

#[test]
fn keyring_rewrite_keeps_unknown_members_and_replaces_the_pair() {
    let fake = FakeKeyring::default();
    // What Codex 0.171.0's own `codex mcp login` wrote (measured), plus members of a later Codex.
    fake.put(json!({
        "server_name": "fx", "url": "http://localhost:3100/mcp",
        "issuer": "http://localhost:3101/", "client_id": "codex-client",
        "token_response": {"access_token": "codex-at", "token_type": "bearer", "expires_in": 3600,
                           "refresh_token": "codex-rt", "scope": "mcp:tools", "id_token": "kept"},
        "expires_at": (now() - Duration::minutes(1)).timestamp_millis(),
        "codex_future": {"x": 1}
    }));
    let store = keyring_store(&fake);
    // Read as Codex wrote it (adoption of a pair Codex rotated).
    let theirs = store.read(&key()).unwrap().unwrap();
    assert_eq!(theirs.access_token.expose(), "codex-at");
    assert_eq!(
        theirs.refresh_token.as_ref().map(Secret::expose),
        Some("codex-rt")
    );
    assert_eq!(theirs.client_id.as_deref(), Some("codex-client"));
    assert_eq!(theirs.scope.as_deref(), Some("mcp:tools"));

    // Ours, without a refresh token and already expired: the pair goes as a whole.
    let mut ours = cred("at", None, Some(now() - Duration::seconds(5)));
    ours.scope = None;
    ours.issuer = None;
    assert_eq!(store.write(&ours, now()).unwrap(), WriteOutcome::Written);
    let item = fake.item().unwrap();
    assert_eq!(item["codex_future"], json!({"x": 1}));
    assert_eq!(item["issuer"], "http://localhost:3101/");
    assert_eq!(item["client_id"], "cid");
    let response = &item["token_response"];
    assert_eq!(response["access_token"], "at");
    assert_eq!(response["token_type"], "Bearer");
    assert!(response.get("refresh_token").is_none(), "{item}");
    assert_eq!(
        response["expires_in"], 0,
        "past expiry: 0, as Codex sets it"
    );
    assert_eq!(response["scope"], "mcp:tools", "unknown scope: kept");
    assert_eq!(response["id_token"], "kept");

    // No expiry: neither expires_at nor expires_in survives.
    store.write(&cred("at2", Some("rt2"), None), now()).unwrap();
    let item = fake.item().unwrap();
    assert!(item.get("expires_at").is_none(), "{item}");
    assert!(item["token_response"].get("expires_in").is_none(), "{item}");
}

#[test]
fn keyring_keeps_a_fresher_codex_pair() {
    let fake = FakeKeyring::default();
    fake.put(json!({
        "server_name": "fx", "url": "http://localhost:3100/mcp", "client_id": "c",
        "token_response": {"access_token": "codex-at", "token_type": "bearer"},
        "expires_at": (now() + Duration::hours(2)).timestamp_millis()
    }));
    let store = keyring_store(&fake);
    let ours = cred("at", Some("rt"), Some(now() + Duration::hours(1)));
    assert_eq!(
        store.write(&ours, now()).unwrap(),
        WriteOutcome::KeptFresher
    );
    assert_eq!(
        fake.item().unwrap()["token_response"]["access_token"],
        "codex-at"
    );
}

#[test]
fn a_file_shaped_keyring_item_is_read_and_rewritten_in_codex_shape() {
    let fake = FakeKeyring::default();
    // What Patchbay wrote before the keyring shape was measured.
    fake.put(json!({
        "server_name": "fx", "server_url": "http://localhost:3100/mcp", "client_id": "cid",
        "access_token": "old", "refresh_token": "old-rt", "scopes": ["mcp"],
        "expires_at": (now() - Duration::hours(1)).timestamp_millis(), "extra": true
    }));
    let store = keyring_store(&fake);
    let old = store.read(&key()).unwrap().unwrap();
    assert_eq!(old.access_token.expose(), "old");
    assert_eq!(old.scope.as_deref(), Some("mcp"));
    store
        .write(
            &cred("at", Some("rt"), Some(now() + Duration::hours(1))),
            now(),
        )
        .unwrap();
    let item = fake.item().unwrap();
    for gone in ["server_url", "access_token", "refresh_token", "scopes"] {
        assert!(item.get(gone).is_none(), "{gone} left in {item}");
    }
    assert_eq!(item["extra"], true);
    assert_eq!(item["token_response"]["access_token"], "at");
    assert_eq!(item["url"], "http://localhost:3100/mcp");
}

fn auto(dir: &std::path::Path, fake: &FakeKeyring) -> CodexAutoStore {
    CodexAutoStore::new(
        keyring_store(fake),
        CodexFileStore::at(dir.join(".credentials.json")),
    )
}

fn file_entry(access: &str, expires: DateTime<Utc>) -> Value {
    json!({FX: {"server_name": "fx", "server_url": "http://localhost:3100/mcp", "client_id": "c",
                "access_token": access, "expires_at": expires.timestamp_millis()}})
}

#[test]
fn auto_uses_the_keyring_and_falls_back_to_the_file_as_codex_does() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".credentials.json");
    let fake = FakeKeyring::default();
    let store = auto(dir.path(), &fake);

    // Keyring answers: the write goes there, not to the file.
    let ours = cred("at", Some("rt"), Some(now() + Duration::hours(1)));
    assert_eq!(store.write(&ours, now()).unwrap(), WriteOutcome::Written);
    assert!(fake.item().is_some());
    assert!(!file.exists());

    // An item shadows the file entry (Codex reads the item, even an expired one).
    fs::write(
        &file,
        file_entry("from-file", now() + Duration::hours(5)).to_string(),
    )
    .unwrap();
    assert_eq!(
        store.read(&key()).unwrap().unwrap().access_token.expose(),
        "at"
    );
    assert_eq!(store.read_all().unwrap().len(), 1);

    // No item: the file entry is what Codex reads, and a fresher one there is kept.
    assert!(fake.items.lock().unwrap().remove(FX).is_some());
    assert_eq!(
        store.read(&key()).unwrap().unwrap().access_token.expose(),
        "from-file"
    );
    assert_eq!(
        store.write(&ours, now()).unwrap(),
        WriteOutcome::KeptFresher
    );
    assert!(fake.item().is_none());

    // Keyring down: reads and writes go to the file.
    fake.down.store(true, Ordering::SeqCst);
    let later = cred("later", Some("rt"), Some(now() + Duration::hours(6)));
    assert_eq!(store.write(&later, now()).unwrap(), WriteOutcome::Written);
    let on_disk: Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    assert_eq!(on_disk[FX]["access_token"], "later");
    assert_eq!(
        store.read(&key()).unwrap().unwrap().access_token.expose(),
        "later"
    );
    assert_eq!(store.read_all().unwrap().len(), 1);

    // Remove takes it from both places.
    fake.down.store(false, Ordering::SeqCst);
    store
        .write(&cred("k", None, Some(now() + Duration::hours(9))), now())
        .unwrap();
    assert!(fake.item().is_some());
    assert!(store.remove(&key()).unwrap());
    assert!(fake.item().is_none());
    assert!(store.read(&key()).unwrap().is_none());
    assert_eq!(store.watch_targets().len(), 1);
}
