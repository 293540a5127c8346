//! The unit tests of `vault.rs`, kept apart so the module reads as what it does.

use super::*;
use crate::MemoryStore;
use chrono::TimeZone;

const ACCOUNT: &str = "test-account";

fn t(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).unwrap()
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    store: Arc<MemoryStore>,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/vault.db");
        Fixture {
            _dir: dir,
            path,
            store: Arc::new(MemoryStore::new()),
        }
    }

    /// A fresh Vault on the same db and store: what a second process would see.
    fn vault(&self) -> Vault {
        Vault::open(&self.path, self.store.clone(), ACCOUNT).unwrap()
    }
}

fn row(key: &str) -> CredentialRow {
    CredentialRow {
        credential_key: CredentialKey(key.to_string()),
        server_name: key.split('|').next().unwrap().to_string(),
        server_url: Some("https://mcp.example.com/mcp".into()),
        expires_at: Some(t(1_700_000_360_000)),
        has_refresh_token: false,
        one_shot: false,
        issuer: Some("https://auth.example.com".into()),
        client_id: Some("client-1".into()),
        scope: Some("read write".into()),
        updated_at: t(1_700_000_000_000),
        rotated_by: None,
        rotated_at: None,
    }
}

/// The database file's bytes and whether a rollback journal or a non-empty WAL exists, so
/// "nothing was written" can be asserted. (SQLite may map an empty `-shm`/`-wal` for a
/// reader where the directory allows; that is not a write to the database.)
fn snapshot(path: &Path) -> (u64, Vec<u8>, bool, u64) {
    let side = |s: &str| std::fs::metadata(format!("{}{s}", path.display()));
    let bytes = std::fs::read(path).unwrap();
    (
        bytes.len() as u64,
        bytes,
        side("-journal").is_ok(),
        side("-wal").map(|m| m.len()).unwrap_or(0),
    )
}

#[test]
fn a_read_only_vault_loads_its_key_reads_everything_and_writes_nothing() {
    let fx = Fixture::new();
    {
        let v = fx.vault();
        v.set_variable("TOKEN", &Secret::new("v1"), t(1)).unwrap();
        v.put_credential(&row("fx|1"), &tokens("at", Some("rt")))
            .unwrap();
    }
    let before = snapshot(&fx.path);
    let conn = db::open_read_only(&fx.path).unwrap();
    let v = Vault::with_connection(conn, fx.store.clone(), ACCOUNT, true);
    assert!(v.is_read_only());
    v.check_store().unwrap();
    assert_eq!(v.variable("TOKEN").unwrap().unwrap().expose(), "v1");
    let t1 = v
        .credential_tokens(&CredentialKey("fx|1".into()))
        .unwrap()
        .unwrap();
    assert_eq!(t1.access_token.expose(), "at");
    assert_eq!(v.credential_rows().unwrap().len(), 1);
    assert!(v.set_variable("OTHER", &Secret::new("x"), t(2)).is_err());
    drop(v);
    assert!(snapshot(&fx.path) == before, "a read wrote to the database");
}

#[test]
fn a_read_only_vault_without_a_key_creates_none() {
    let fx = Fixture::new();
    drop(fx.vault());
    let conn = db::open_read_only(&fx.path).unwrap();
    let v = Vault::with_connection(conn, fx.store.clone(), ACCOUNT, true);
    assert!(matches!(v.check_store(), Err(VaultError::ReadOnly)));
    assert!(
        fx.store.get(ACCOUNT).unwrap().is_none(),
        "a key was created"
    );
}

#[test]
fn an_emptied_or_corrupt_database_is_refused_and_left_as_it_is() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.path.parent().unwrap()).unwrap();
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 13 % 251) as u8).collect();
    for content in [Vec::new(), garbage] {
        std::fs::write(&fx.path, &content).unwrap();
        let opened = Vault::open(&fx.path, fx.store.clone(), ACCOUNT);
        let reading = Vault::open_for_reading(&fx.path, fx.store.clone(), ACCOUNT);
        for result in [opened, reading] {
            match result {
                Err(VaultError::DatabaseEmpty { path }) if content.is_empty() => {
                    assert_eq!(path, fx.path.display().to_string())
                }
                Err(VaultError::DatabaseCorrupt { path, .. }) if !content.is_empty() => {
                    assert_eq!(path, fx.path.display().to_string())
                }
                other => panic!("{:?}", other.map(|_| ())),
            }
        }
        assert_eq!(std::fs::read(&fx.path).unwrap(), content);
        assert!(db::open_read_only(&fx.path).is_err());
    }
}

#[test]
fn an_older_schema_opened_read_only_says_it_cannot_be_upgraded() {
    let fx = Fixture::new();
    drop(fx.vault());
    {
        let conn = Connection::open(&fx.path).unwrap();
        conn.pragma_update(None, "user_version", 2).unwrap();
    }
    match db::open_read_only(&fx.path) {
        Err(e @ VaultError::SchemaOutdated { found: 2, .. }) => {
            assert!(e.to_string().contains("older schema"), "{e}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn reading_where_no_database_can_be_created_reads_a_fresh_install() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file where the directory should be: nothing can be created under it.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let path = blocker.join("vault.db");
    assert!(Vault::open(&path, Arc::new(MemoryStore::new()), ACCOUNT).is_err());
    let v = Vault::open_for_reading(&path, Arc::new(MemoryStore::new()), ACCOUNT).unwrap();
    assert!(v.credential_rows().unwrap().is_empty());
    assert!(v.variable_names().unwrap().is_empty());
    assert!(!path.exists());
}

#[test]
fn expiry_is_inclusive_and_a_refresh_token_keeps_a_lapsed_credential_live() {
    let at = t(1_700_000_360_000);
    let mut r = row("fx|0");
    assert!(!r.is_expired(t(1_700_000_359_999)));
    assert!(r.is_expired(at));
    assert!(!r.is_live(at), "lapsed, nothing to renew it with");
    r.has_refresh_token = true;
    assert!(r.is_live(at));
    r.has_refresh_token = false;
    r.expires_at = None;
    assert!(!r.is_expired(at) && r.is_live(at), "no expiry never lapses");
}

fn tokens(access: &str, refresh: Option<&str>) -> TokenSet {
    TokenSet {
        access_token: Secret::new(access),
        refresh_token: refresh.map(Secret::new),
    }
}

#[test]
fn vault_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Vault>();
}

#[test]
fn open_creates_dirs_and_does_not_touch_the_keychain() {
    let f = Fixture::new();
    let v = f.vault();
    assert!(f.path.exists());
    assert!(v.variable_names().unwrap().is_empty());
    assert!(v.credential_rows().unwrap().is_empty());
    assert_eq!(f.store.get_calls(), 0);
    assert!(f.store.is_empty());
}

#[test]
fn check_store_creates_key_once_then_caches() {
    let f = Fixture::new();
    let v = f.vault();
    v.check_store().unwrap();
    assert_eq!(f.store.len(), 1, "master key created");
    let after_create = f.store.get_calls();
    v.check_store().unwrap();
    v.set_variable("A", &Secret::new("1"), t(1)).unwrap();
    v.variables().unwrap();
    assert_eq!(f.store.get_calls(), after_create, "cached: no more reads");

    // A second process: exactly one keychain read for status plus everything after it.
    let v2 = f.vault();
    let before = f.store.get_calls();
    v2.check_store().unwrap();
    assert_eq!(v2.variables().unwrap().len(), 1);
    assert_eq!(v2.variable("A").unwrap().unwrap().expose(), "1");
    assert_eq!(f.store.get_calls() - before, 1);
}

#[test]
fn metadata_reads_never_touch_the_keychain() {
    let f = Fixture::new();
    let v = f.vault();
    v.set_variable("TOKEN", &Secret::new("x"), t(5)).unwrap();
    v.put_credential(&row("notion|abc"), &tokens("a", Some("r")))
        .unwrap();
    let v2 = f.vault();
    f.store.set_unreachable(true);
    let before = f.store.get_calls();
    assert_eq!(
        v2.variable_names().unwrap(),
        vec![VariableInfo {
            name: "TOKEN".into(),
            updated_at: t(5)
        }]
    );
    assert_eq!(v2.credential_rows().unwrap().len(), 1);
    assert_eq!(v2.variable("MISSING").unwrap(), None);
    assert!(v2
        .credential_tokens(&CredentialKey("nope|x".into()))
        .unwrap()
        .is_none());
    assert_eq!(f.store.get_calls(), before);
}

#[test]
fn variables_roundtrip_update_delete() {
    let f = Fixture::new();
    let v = f.vault();
    v.set_variable("B_VAR", &Secret::new("b"), t(10)).unwrap();
    v.set_variable("_a1", &Secret::new("a"), t(11)).unwrap();
    v.set_variable("B_VAR", &Secret::new("b2"), t(12)).unwrap();
    let all = v.variables().unwrap();
    let got: Vec<_> = all
        .iter()
        .map(|(i, s)| (i.name.as_str(), i.updated_at, s.expose()))
        .collect();
    assert_eq!(got, vec![("B_VAR", t(12), "b2"), ("_a1", t(11), "a")]);
    assert!(v.delete_variable("B_VAR").unwrap());
    assert!(!v.delete_variable("B_VAR").unwrap());
    assert_eq!(v.variable("B_VAR").unwrap(), None);
    assert_eq!(v.variable_names().unwrap().len(), 1);
}

#[test]
fn variable_names_are_validated() {
    let f = Fixture::new();
    let v = f.vault();
    for bad in ["", "1A", "A-B", "A B", "Ä", "A.B", "${A}"] {
        assert!(
            matches!(
                v.set_variable(bad, &Secret::new("x"), t(0)),
                Err(VaultError::InvalidName(_))
            ),
            "{bad:?}"
        );
    }
    for good in ["A", "_", "a_b_9", "_9"] {
        v.set_variable(good, &Secret::new("x"), t(0)).unwrap();
    }
    assert!(f.store.len() == 1);
}

#[test]
fn credential_roundtrip_and_flags_derived() {
    let f = Fixture::new();
    let v = f.vault();
    let key = CredentialKey("notion|3fad03f7abd02b9c".into());
    let mut r = row(key.as_str());
    r.has_refresh_token = false; // ignored: derived
    r.one_shot = true; // ignored: derived
    v.put_credential(&r, &tokens("acc1", Some("ref1"))).unwrap();
    let rows = v.credential_rows().unwrap();
    assert_eq!(rows.len(), 1);
    assert!(rows[0].has_refresh_token);
    assert!(!rows[0].one_shot);
    assert_eq!(rows[0].expires_at, r.expires_at);
    assert_eq!(rows[0].issuer, r.issuer);
    let toks = v.credential_tokens(&key).unwrap().unwrap();
    assert_eq!(toks.access_token.expose(), "acc1");
    assert_eq!(toks.refresh_token.unwrap().expose(), "ref1");

    assert!(v.delete_credential(&key).unwrap());
    assert!(!v.delete_credential(&key).unwrap());
    assert!(v.credential_tokens(&key).unwrap().is_none());
}

#[test]
fn refresh_without_new_refresh_token_keeps_the_stored_one() {
    let f = Fixture::new();
    let v = f.vault();
    let key = CredentialKey("gh|1".into());
    v.put_credential(&row("gh|1"), &tokens("acc1", Some("ref1")))
        .unwrap();
    let mut r2 = row("gh|1");
    r2.updated_at = t(1_700_000_100_000);
    r2.expires_at = None;
    v.put_credential(&r2, &tokens("acc2", None)).unwrap();
    let toks = v.credential_tokens(&key).unwrap().unwrap();
    assert_eq!(toks.access_token.expose(), "acc2");
    assert_eq!(toks.refresh_token.unwrap().expose(), "ref1", "kept");
    let rows = v.credential_rows().unwrap();
    assert!(rows[0].has_refresh_token && !rows[0].one_shot);
    assert_eq!(rows[0].updated_at, r2.updated_at);
    assert_eq!(rows[0].expires_at, None);

    // A rotated refresh token replaces the old one.
    v.put_credential(&row("gh|1"), &tokens("acc3", Some("ref2")))
        .unwrap();
    let toks = v.credential_tokens(&key).unwrap().unwrap();
    assert_eq!(toks.refresh_token.unwrap().expose(), "ref2");
}

#[test]
fn adoption_records_who_rotated_and_our_own_write_clears_it() {
    let f = Fixture::new();
    let v = f.vault();
    let key = CredentialKey("n|1".into());
    v.put_credential(&row("n|1"), &tokens("a1", Some("r1")))
        .unwrap();
    assert_eq!(v.credential_rows().unwrap()[0].rotated_by, None);
    let mut r = row("n|1");
    r.rotated_by = Some("ignored".into()); // ignored: the argument decides
    v.put_adopted_credential(&r, &tokens("a2", Some("r2")), "claude_code", t(42))
        .unwrap();
    let got = &v.credential_rows().unwrap()[0];
    assert_eq!(got.rotated_by.as_deref(), Some("claude_code"));
    assert_eq!(got.rotated_at, Some(t(42)));
    assert_eq!(
        v.credential_tokens(&key)
            .unwrap()
            .unwrap()
            .refresh_token
            .unwrap()
            .expose(),
        "r2"
    );
    v.put_credential(&row("n|1"), &tokens("a3", None)).unwrap();
    let got = &v.credential_rows().unwrap()[0];
    assert_eq!((got.rotated_by.clone(), got.rotated_at), (None, None));
}

#[test]
fn retiring_drops_the_refresh_token_and_expires_the_access_token() {
    let f = Fixture::new();
    let v = f.vault();
    let key = CredentialKey("n|1".into());
    assert!(!v.retire_credential(&key, t(5)).unwrap());
    v.put_adopted_credential(&row("n|1"), &tokens("a1", Some("r1")), "codex", t(1))
        .unwrap();
    assert!(v.retire_credential(&key, t(5)).unwrap());
    let got = &v.credential_rows().unwrap()[0];
    assert!(!got.has_refresh_token && got.one_shot);
    assert_eq!(got.expires_at, Some(t(5)));
    assert_eq!(got.rotated_by, None);
    assert!(v
        .credential_tokens(&key)
        .unwrap()
        .unwrap()
        .refresh_token
        .is_none());
}

#[test]
fn credential_without_any_refresh_token_is_one_shot() {
    let f = Fixture::new();
    let v = f.vault();
    v.put_credential(&row("linear|1"), &tokens("acc", None))
        .unwrap();
    let rows = v.credential_rows().unwrap();
    assert!(!rows[0].has_refresh_token);
    assert!(rows[0].one_shot);
    let toks = v
        .credential_tokens(&CredentialKey("linear|1".into()))
        .unwrap()
        .unwrap();
    assert!(toks.refresh_token.is_none());
}

#[test]
fn unreachable_keychain_is_retryable_and_changes_nothing() {
    let f = Fixture::new();
    let v = f.vault();
    v.set_variable("KEEP", &Secret::new("kept"), t(1)).unwrap();
    v.put_credential(&row("n|1"), &tokens("a", Some("r")))
        .unwrap();
    let key_before = f.store.get(ACCOUNT).unwrap().unwrap();

    f.store.set_unreachable(true);
    let v2 = f.vault();
    let e = v2.check_store().unwrap_err();
    assert!(matches!(e, VaultError::StoreUnreachable(_)), "{e:?}");
    assert!(e.is_retryable());
    assert!(matches!(
        v2.variable("KEEP"),
        Err(VaultError::StoreUnreachable(_))
    ));
    assert!(matches!(
        v2.variables(),
        Err(VaultError::StoreUnreachable(_))
    ));
    assert!(matches!(
        v2.set_variable("NEW", &Secret::new("n"), t(2)),
        Err(VaultError::StoreUnreachable(_))
    ));
    assert!(matches!(
        v2.put_credential(&row("n|1"), &tokens("x", None)),
        Err(VaultError::StoreUnreachable(_))
    ));

    // A fresh db with an unreachable keychain must not create a key either.
    let fresh = Fixture::new();
    fresh.store.set_unreachable(true);
    assert!(matches!(
        fresh.vault().check_store(),
        Err(VaultError::StoreUnreachable(_))
    ));
    fresh.store.set_unreachable(false);
    assert!(fresh.store.is_empty());

    f.store.set_unreachable(false);
    assert_eq!(f.store.get(ACCOUNT).unwrap().unwrap(), key_before);
    let v3 = f.vault();
    assert_eq!(v3.variable("KEEP").unwrap().unwrap().expose(), "kept");
    assert_eq!(v3.variable("NEW").unwrap(), None);
    let toks = v3
        .credential_tokens(&CredentialKey("n|1".into()))
        .unwrap()
        .unwrap();
    assert_eq!(toks.access_token.expose(), "a");
    // v2 did not cache a failure: it recovers once the keychain answers.
    v2.check_store().unwrap();
}

#[test]
fn missing_key_with_sealed_secrets_is_terminal_and_creates_nothing() {
    let f = Fixture::new();
    let v = f.vault();
    v.set_variable("KEEP", &Secret::new("kept"), t(1)).unwrap();
    let old_key = f.store.get(ACCOUNT).unwrap().unwrap();
    assert!(f.store.delete(ACCOUNT).unwrap());

    let v2 = f.vault();
    let e = v2.check_store().unwrap_err();
    assert!(matches!(e, VaultError::MasterKeyMissing { .. }), "{e:?}");
    assert!(!e.is_retryable());
    let msg = e.to_string();
    assert!(
        msg.contains("kept") && msg.contains("patchbay secret set"),
        "{msg}"
    );
    assert!(matches!(
        v2.set_variable("OTHER", &Secret::new("x"), t(2)),
        Err(VaultError::MasterKeyMissing { .. })
    ));
    assert!(f.store.is_empty(), "no new key created");
    assert_eq!(v2.variable_names().unwrap().len(), 1, "secrets kept");

    // Putting the right key back (unlocking the right keyring) recovers everything.
    f.store.set(ACCOUNT, &old_key).unwrap();
    assert_eq!(v2.variable("KEEP").unwrap().unwrap().expose(), "kept");
}

#[test]
fn missing_key_with_credentials_only_is_also_terminal() {
    let f = Fixture::new();
    f.vault()
        .put_credential(&row("n|1"), &tokens("a", None))
        .unwrap();
    f.store.delete(ACCOUNT).unwrap();
    assert!(matches!(
        f.vault().check_store(),
        Err(VaultError::MasterKeyMissing { .. })
    ));
    assert!(f.store.is_empty());
}

#[test]
fn missing_key_with_nothing_sealed_creates_a_new_one() {
    let f = Fixture::new();
    let v = f.vault();
    v.set_variable("GONE", &Secret::new("x"), t(1)).unwrap();
    v.delete_variable("GONE").unwrap();
    f.store.delete(ACCOUNT).unwrap();
    let v2 = f.vault();
    v2.check_store().unwrap();
    assert_eq!(f.store.len(), 1);
    v2.set_variable("NEW", &Secret::new("n"), t(2)).unwrap();
    assert_eq!(f.vault().variable("NEW").unwrap().unwrap().expose(), "n");
}

#[test]
fn wrong_key_is_detected_as_such() {
    let f = Fixture::new();
    f.vault()
        .set_variable("KEEP", &Secret::new("kept"), t(1))
        .unwrap();
    let right = f.store.get(ACCOUNT).unwrap().unwrap();
    f.store
        .set(ACCOUNT, &MasterKey::generate().encode())
        .unwrap();
    let v = f.vault();
    let e = v.check_store().unwrap_err();
    assert!(matches!(e, VaultError::WrongMasterKey { .. }), "{e:?}");
    assert!(!e.is_retryable());
    assert!(matches!(
        v.variable("KEEP"),
        Err(VaultError::WrongMasterKey { .. })
    ));
    assert_eq!(v.variable_names().unwrap().len(), 1, "secrets kept");

    // Wrong key with the canary lost: still detected through a sealed row.
    v.conn().execute("DELETE FROM vault_meta", []).unwrap();
    assert!(matches!(
        f.vault().check_store(),
        Err(VaultError::WrongMasterKey { .. })
    ));

    f.store.set(ACCOUNT, &right).unwrap();
    assert_eq!(
        f.vault().variable("KEEP").unwrap().unwrap().expose(),
        "kept"
    );
}

#[test]
fn malformed_keychain_item_is_terminal_and_left_alone() {
    let f = Fixture::new();
    f.store.set(ACCOUNT, &Secret::new("not a key")).unwrap();
    let e = f.vault().check_store().unwrap_err();
    assert!(matches!(e, VaultError::MasterKeyMalformed { .. }), "{e:?}");
    assert_eq!(f.store.get(ACCOUNT).unwrap().unwrap().expose(), "not a key");
}

#[test]
fn corrupt_row_with_right_key_is_corrupt_not_wrong_key() {
    let f = Fixture::new();
    let v = f.vault();
    v.set_variable("A", &Secret::new("a"), t(1)).unwrap();
    v.set_variable("B", &Secret::new("b"), t(1)).unwrap();
    // Move A's ciphertext onto B: the AAD binds it to A, so it must not open as B.
    v.conn()
        .execute(
            "UPDATE variables SET value_sealed = (SELECT value_sealed FROM variables WHERE name = 'A') WHERE name = 'B'",
            [],
        )
        .unwrap();
    let e = f.vault().variable("B").unwrap_err();
    assert!(matches!(e, VaultError::Corrupt { .. }), "{e:?}");
    assert!(e.to_string().contains("variable B"), "{e}");
    assert_eq!(f.vault().variable("A").unwrap().unwrap().expose(), "a");
}

#[test]
fn discard_sealed_secrets_allows_starting_over() {
    let f = Fixture::new();
    f.vault()
        .set_variable("KEEP", &Secret::new("kept"), t(1))
        .unwrap();
    f.store.delete(ACCOUNT).unwrap();
    let v = f.vault();
    assert!(v.check_store().is_err());
    assert_eq!(v.discard_sealed_secrets().unwrap(), 1);
    v.check_store().unwrap();
    v.set_variable("KEEP", &Secret::new("again"), t(2)).unwrap();
    assert_eq!(
        f.vault().variable("KEEP").unwrap().unwrap().expose(),
        "again"
    );
}

#[test]
fn secrets_never_show_in_debug_errors_or_the_db_file() {
    let toks = tokens("access-SENTINEL-1", Some("refresh-SENTINEL-2"));
    let dbg = format!("{toks:?} {:?} {}", toks.access_token, toks.access_token);
    assert!(dbg.contains("[redacted]"));
    assert!(!dbg.contains("SENTINEL"), "{dbg}");

    let f = Fixture::new();
    let v = f.vault();
    v.set_variable("VAR", &Secret::new("variable-SENTINEL-3"), t(1))
        .unwrap();
    v.put_credential(&row("n|1"), &toks).unwrap();
    assert!(!format!("{v:?}").contains("SENTINEL"));
    // Checkpoint so the main file holds everything, then scan every file SQLite wrote.
    v.conn()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    let dir = f.path.parent().unwrap();
    let mut scanned = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        scanned += bytes.len();
        for needle in ["SENTINEL", "variable-SENTINEL-3", "access-SENTINEL-1"] {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                "plaintext {needle} found in the db files"
            );
        }
    }
    assert!(scanned > 0);
    // The master key is not in the db either.
    let key = f.store.get(ACCOUNT).unwrap().unwrap();
    let db = std::fs::read(&f.path).unwrap();
    assert!(!db
        .windows(key.expose().len())
        .any(|w| w == key.expose().as_bytes()));
}

#[test]
fn write_failure_leaves_nothing_half_written() {
    let f = Fixture::new();
    let v = f.vault();
    v.put_credential(&row("n|1"), &tokens("a1", Some("r1")))
        .unwrap();
    // Make the upsert fail after the kept-refresh read: a trigger aborts updates.
    v.conn()
        .execute_batch(
            "CREATE TRIGGER no_update BEFORE UPDATE ON credentials
             BEGIN SELECT RAISE(ABORT, 'injected'); END;",
        )
        .unwrap();
    assert!(v.put_credential(&row("n|1"), &tokens("a2", None)).is_err());
    v.conn().execute_batch("DROP TRIGGER no_update;").unwrap();
    let toks = v
        .credential_tokens(&CredentialKey("n|1".into()))
        .unwrap()
        .unwrap();
    assert_eq!(toks.access_token.expose(), "a1");
    assert_eq!(toks.refresh_token.unwrap().expose(), "r1");
}

#[test]
fn concurrent_first_use_creates_one_key() {
    let f = Fixture::new();
    let v = Arc::new(f.vault());
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let v = v.clone();
            std::thread::spawn(move || {
                v.set_variable(&format!("V{i}"), &Secret::new(format!("{i}")), t(i))
                    .unwrap()
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let v2 = f.vault();
    assert_eq!(v2.variables().unwrap().len(), 4);
}
