//! Codex's stores in their own schema.

use chrono::{DateTime, Duration, TimeZone, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_runtimes::codex::{CodexFileStore, CodexKeyringStore, KeyringBackend};
use patchbay_runtimes::{RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use patchbay_vault::Secret;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fs;
use std::sync::{Arc, Mutex};

const FX: &str = "fx|528e1818a7ba21cf";

fn now() -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_764_000_000_000).unwrap()
}

fn cred(access: &str, expires: Option<DateTime<Utc>>) -> RuntimeCredential {
    RuntimeCredential {
        key: CredentialKey(FX.into()),
        server_name: "fx".into(),
        server_url: "http://localhost:3100/mcp".into(),
        access_token: Secret::new(access),
        refresh_token: Some(Secret::new("rt")),
        expires_at: expires,
        scope: Some("mcp:tools mcp:read".into()),
        client_id: Some("cid".into()),
        client_secret: Some(Secret::new("not-in-codex-schema")),
        issuer: Some("https://auth.example.com/".into()),
    }
}

#[test]
fn file_round_trip_in_codex_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".credentials.json");
    fs::write(
        &path,
        r#"{"other|0123456789abcdef": {"server_name": "other", "access_token": "x", "extra": 1},
            "fx|528e1818a7ba21cf": {"server_name": "fx", "access_token": "old", "codex_private": "kept"}}"#,
    )
    .unwrap();
    let store = CodexFileStore::at(&path);
    let expires = now() + Duration::hours(1);
    assert_eq!(
        store.write(&cred("at", Some(expires)), now()).unwrap(),
        WriteOutcome::Written
    );
    let file: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        file[FX],
        json!({"server_name": "fx", "access_token": "at", "codex_private": "kept",
               "server_url": "http://localhost:3100/mcp", "refresh_token": "rt",
               "expires_at": expires.timestamp_millis(), "client_id": "cid",
               "scopes": ["mcp:tools", "mcp:read"], "issuer": "https://auth.example.com/"})
    );
    assert_eq!(file["other|0123456789abcdef"]["extra"], 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let back = store.read(&CredentialKey(FX.into())).unwrap().unwrap();
    assert_eq!(back.scope.as_deref(), Some("mcp:tools mcp:read"));
    assert_eq!(back.expires_at, Some(expires));
    assert!(back.client_secret.is_none());
    assert_eq!(store.read_all().unwrap().len(), 2);

    // Fresher on disk is kept.
    let older = cred("older", Some(now() + Duration::minutes(5)));
    assert_eq!(
        store.write(&older, now()).unwrap(),
        WriteOutcome::KeptFresher
    );
    store.clear_needs_auth("fx").unwrap();
    assert!(store.remove(&CredentialKey(FX.into())).unwrap());
    let file: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert!(file.get(FX).is_none());
    assert_eq!(file["other|0123456789abcdef"]["access_token"], "x");
}

#[test]
fn malformed_codex_file_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".credentials.json");
    fs::write(&path, "{\"fx|528e1818a7ba21cf\": []}").unwrap();
    let store = CodexFileStore::at(&path);
    let err = store.write(&cred("a", None), now()).unwrap_err();
    assert!(matches!(err, RuntimeError::Malformed { .. }), "{err}");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"fx|528e1818a7ba21cf\": []}"
    );
}

#[derive(Clone, Default)]
struct FakeKeyring(Arc<Mutex<HashMap<String, String>>>);

impl KeyringBackend for FakeKeyring {
    fn get(&self, account: &str) -> Result<Option<String>, RuntimeError> {
        Ok(self.0.lock().unwrap().get(account).cloned())
    }
    fn set(&self, account: &str, value: &str) -> Result<(), RuntimeError> {
        self.0.lock().unwrap().insert(account.into(), value.into());
        Ok(())
    }
    fn delete(&self, account: &str) -> Result<bool, RuntimeError> {
        Ok(self.0.lock().unwrap().remove(account).is_some())
    }
}

#[test]
fn keyring_variant_stores_one_entry_per_account() {
    let fake = FakeKeyring::default();
    let store = CodexKeyringStore::new(Box::new(fake.clone()), vec![CredentialKey(FX.into())]);
    assert!(store.read_all().unwrap().is_empty());
    let expires = now() + Duration::hours(1);
    assert_eq!(
        store.write(&cred("at", Some(expires)), now()).unwrap(),
        WriteOutcome::Written
    );
    let item: Value = serde_json::from_str(&fake.0.lock().unwrap()[FX]).unwrap();
    assert_eq!(item["token_response"]["access_token"], "at");
    assert_eq!(item["expires_at"], json!(expires.timestamp_millis()));
    assert_eq!(store.read_all().unwrap().len(), 1);
    assert_eq!(
        store
            .write(&cred("older", Some(now() + Duration::minutes(1))), now())
            .unwrap(),
        WriteOutcome::KeptFresher
    );
    assert!(store.remove(&CredentialKey(FX.into())).unwrap());
    assert!(store.watch_targets().is_empty());
}
