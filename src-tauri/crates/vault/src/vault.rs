//! The vault itself: the public API over the database and the master key. Owns the master-key
//! life cycle (load once per Vault, create only while nothing sealed exists, tell a missing or
//! wrong key apart from corrupt data) and the transactional writes of variables and credentials.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::db::{self, from_ms, to_ms, CANARY_KEY, CANARY_PLAINTEXT};
use crate::seal::{Kind, MasterKey};
use crate::{Secret, SecretStore, VaultError};

/// The keychain service every Patchbay master key is filed under.
pub const KEYCHAIN_SERVICE: &str = "Patchbay";

/// One stored OAuth credential, without its tokens.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CredentialRow {
    pub credential_key: CredentialKey,
    pub server_name: String,
    pub server_url: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    /// Derived on write from the stored tokens; the value passed to `put_credential` is ignored.
    pub has_refresh_token: bool,
    /// Derived on write: true when no refresh token survives, so re-auth is the only way on.
    pub one_shot: bool,
    pub issuer: Option<String>,
    pub client_id: Option<String>,
    pub scope: Option<String>,
    pub updated_at: DateTime<Utc>,
    /// The runtime (`claude_code`, `codex`) that rotated the stored pair, when Patchbay adopted it
    /// from that runtime's store; `None` when Patchbay obtained the pair itself. Set only by
    /// `put_adopted_credential`; `put_credential` ignores the value and clears it.
    pub rotated_by: Option<String>,
    /// When the adoption happened; set and cleared with `rotated_by`.
    pub rotated_at: Option<DateTime<Utc>>,
}

impl CredentialRow {
    /// The access token has lapsed at `now` (expiry is inclusive; no expiry never lapses).
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// Something can still be presented or renewed: a refresh token, or an access token that
    /// has not lapsed. A retired credential (refresh token dropped, access token force-expired)
    /// is not live, which is what keeps it from being written to a runtime again.
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        self.has_refresh_token || !self.is_expired(now)
    }
}

/// The secret half of a credential. Debug prints `[redacted]` for both tokens.
#[derive(Debug, Clone)]
pub struct TokenSet {
    pub access_token: Secret,
    pub refresh_token: Option<Secret>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VariableInfo {
    pub name: String,
    pub updated_at: DateTime<Utc>,
}

/// Secrets sealed under one keychain-held master key; metadata in SQLite. `Send + Sync`: share
/// it in an `Arc`. Calls that only read metadata never touch the keychain; the first call that
/// needs the key pays one keychain read, later ones none.
pub struct Vault {
    conn: Mutex<rusqlite::Connection>,
    store: Arc<dyn SecretStore>,
    account: String,
    /// Cached after the first successful load. A Mutex rather than a OnceLock so concurrent
    /// first callers wait for one keychain read instead of racing to create two keys.
    key: Mutex<Option<MasterKey>>,
    /// Opened by [`Vault::open_for_reading`] on a file that could not be written: nothing is
    /// written (no key canary either); writes fail.
    read_only: bool,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault")
            .field("keychain_account", &self.account)
            .finish_non_exhaustive()
    }
}

impl Vault {
    /// Creates the parent directory and database if needed and runs migrations. Does not touch
    /// the keychain.
    pub fn open(
        db_path: &Path,
        store: Arc<dyn SecretStore>,
        keychain_account: &str,
    ) -> Result<Vault, VaultError> {
        let conn = db::open(db_path)?;
        Ok(Vault::with_connection(conn, store, keychain_account, false))
    }

    /// For reading (a status): like [`Vault::open`] when the data directory can be written;
    /// when it cannot (read-only, full disk, not ours), the existing database is opened
    /// read-only, and a missing one reads as a fresh install (an empty vault in memory), so
    /// reading never needs a write. An emptied or corrupt file is an error either way, never
    /// taken for a fresh install.
    pub fn open_for_reading(
        db_path: &Path,
        store: Arc<dyn SecretStore>,
        keychain_account: &str,
    ) -> Result<Vault, VaultError> {
        let writable_error = match db::open(db_path) {
            Ok(conn) => return Ok(Vault::with_connection(conn, store, keychain_account, false)),
            Err(e @ (VaultError::DatabaseEmpty { .. } | VaultError::DatabaseCorrupt { .. })) => {
                return Err(e)
            }
            Err(e) => e,
        };
        if db_path.exists() {
            let conn = db::open_read_only(db_path).map_err(|e| match e {
                // Not there after all, or unreadable: the first error says more.
                VaultError::Io { .. } | VaultError::Database(_) => writable_error,
                e => e,
            })?;
            return Ok(Vault::with_connection(conn, store, keychain_account, true));
        }
        // No database yet and none can be created here: a fresh install, read as an empty vault.
        drop(writable_error);
        let conn = db::open(Path::new(":memory:"))?;
        Ok(Vault::with_connection(conn, store, keychain_account, false))
    }

    fn with_connection(
        conn: Connection,
        store: Arc<dyn SecretStore>,
        keychain_account: &str,
        read_only: bool,
    ) -> Vault {
        Vault {
            conn: Mutex::new(conn),
            store,
            account: keychain_account.to_string(),
            key: Mutex::new(None),
            read_only,
        }
    }

    /// Whether this vault was opened read-only (see [`Vault::open_for_reading`]).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Loads the master key (one keychain read, then cached), or creates it when the database
    /// holds no sealed secret yet. Errors say whether to retry (`is_retryable`).
    pub fn check_store(&self) -> Result<(), VaultError> {
        self.master_key().map(drop)
    }

    pub fn set_variable(
        &self,
        name: &str,
        value: &Secret,
        now: DateTime<Utc>,
    ) -> Result<(), VaultError> {
        validate_variable_name(name)?;
        let key = self.master_key()?;
        let sealed = key.seal_secret(Kind::Variable, name, value);
        self.conn().execute(
            "INSERT INTO variables (name, updated_at_ms, value_sealed) VALUES (?1, ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET
                 updated_at_ms = excluded.updated_at_ms, value_sealed = excluded.value_sealed",
            params![name, to_ms(now), sealed],
        )?;
        Ok(())
    }

    /// `None` when no such variable is stored (answered without the keychain).
    pub fn variable(&self, name: &str) -> Result<Option<Secret>, VaultError> {
        validate_variable_name(name)?;
        let sealed: Option<Vec<u8>> = self
            .conn()
            .query_row(
                "SELECT value_sealed FROM variables WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()?;
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        let key = self.master_key()?;
        open_variable(&key, name, &sealed).map(Some)
    }

    /// Every variable, decrypted, sorted by name; at most one keychain read.
    pub fn variables(&self) -> Result<Vec<(VariableInfo, Secret)>, VaultError> {
        let rows: Vec<(String, i64, Vec<u8>)> = {
            let conn = self.conn();
            let mut stmt = conn
                .prepare("SELECT name, updated_at_ms, value_sealed FROM variables ORDER BY name")?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<_, _>>()?;
            rows
        };
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let key = self.master_key()?;
        rows.into_iter()
            .map(|(name, ms, sealed)| {
                let value = open_variable(&key, &name, &sealed)?;
                let updated_at = from_ms(ms, &format!("variable {name}"))?;
                Ok((VariableInfo { name, updated_at }, value))
            })
            .collect()
    }

    /// Names and times only; never touches the keychain.
    pub fn variable_names(&self) -> Result<Vec<VariableInfo>, VaultError> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT name, updated_at_ms FROM variables ORDER BY name")?;
        let rows: Vec<(String, i64)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        rows.into_iter()
            .map(|(name, ms)| {
                let updated_at = from_ms(ms, &format!("variable {name}"))?;
                Ok(VariableInfo { name, updated_at })
            })
            .collect()
    }

    /// `false` when there was no such variable. Needs no keychain.
    pub fn delete_variable(&self, name: &str) -> Result<bool, VaultError> {
        validate_variable_name(name)?;
        let n = self
            .conn()
            .execute("DELETE FROM variables WHERE name = ?1", [name])?;
        Ok(n > 0)
    }

    /// Every credential's metadata, sorted by key; never touches the keychain.
    pub fn credential_rows(&self) -> Result<Vec<CredentialRow>, VaultError> {
        self.select_rows("", [])
    }

    /// One credential's metadata; never touches the keychain.
    pub fn credential_row(&self, key: &CredentialKey) -> Result<Option<CredentialRow>, VaultError> {
        Ok(self.select_rows("WHERE key = ?1", [key.as_str()])?.pop())
    }

    fn select_rows<P: rusqlite::Params>(
        &self,
        filter: &str,
        params: P,
    ) -> Result<Vec<CredentialRow>, VaultError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT key, server_name, server_url, expires_at_ms, has_refresh_token, one_shot,
                    issuer, client_id, scope, updated_at_ms, rotated_by, rotated_at_ms
             FROM credentials {filter} ORDER BY key"
        ))?;
        let raw: Vec<RawRow> = stmt
            .query_map(params, |r| {
                Ok(RawRow {
                    key: r.get(0)?,
                    server_name: r.get(1)?,
                    server_url: r.get(2)?,
                    expires_at_ms: r.get(3)?,
                    has_refresh_token: r.get(4)?,
                    one_shot: r.get(5)?,
                    issuer: r.get(6)?,
                    client_id: r.get(7)?,
                    scope: r.get(8)?,
                    updated_at_ms: r.get(9)?,
                    rotated_by: r.get(10)?,
                    rotated_at_ms: r.get(11)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        raw.into_iter().map(RawRow::into_row).collect()
    }

    /// Upserts by `row.credential_key`. A `TokenSet` without a refresh token keeps the stored
    /// one (RFC 6749 §6: the server may omit it on refresh). `has_refresh_token` and `one_shot`
    /// are derived from what is stored afterwards, not taken from `row`. Where the credential
    /// came from ([`Vault::credential_source`]) is kept while the client stays the same (a
    /// renewal of an adopted pair) and forgotten when it changes (authorized anew).
    pub fn put_credential(&self, row: &CredentialRow, tokens: &TokenSet) -> Result<(), VaultError> {
        self.upsert_credential(row, tokens, None)
    }

    /// Like `put_credential`, for a pair a runtime rotated and Patchbay adopted: records
    /// `rotated_by` (the runtime's id, e.g. `claude_code`) and `rotated_at` on the row.
    pub fn put_adopted_credential(
        &self,
        row: &CredentialRow,
        tokens: &TokenSet,
        rotated_by: &str,
        rotated_at: DateTime<Utc>,
    ) -> Result<(), VaultError> {
        self.upsert_credential(row, tokens, Some((rotated_by, rotated_at)))
    }

    /// Retires a credential the provider no longer honours: drops the refresh token and
    /// force-expires the access token (`expires_at = now`), so nothing presents it again and
    /// the connector reads as needing authorization. `false` when no such credential is stored.
    /// Needs no keychain.
    pub fn retire_credential(
        &self,
        key: &CredentialKey,
        now: DateTime<Utc>,
    ) -> Result<bool, VaultError> {
        let n = self.conn().execute(
            "UPDATE credentials SET refresh_sealed = NULL, has_refresh_token = 0, one_shot = 1,
                 expires_at_ms = ?2, updated_at_ms = ?2, rotated_by = NULL, rotated_at_ms = NULL,
                 refresh_suspect = 0
             WHERE key = ?1",
            params![key.as_str(), to_ms(now)],
        )?;
        Ok(n > 0)
    }

    fn upsert_credential(
        &self,
        row: &CredentialRow,
        tokens: &TokenSet,
        rotated: Option<(&str, DateTime<Utc>)>,
    ) -> Result<(), VaultError> {
        let key = self.master_key()?;
        let name = row.credential_key.as_str();
        let access = key.seal_secret(Kind::AccessToken, name, &tokens.access_token);
        let new_refresh = tokens
            .refresh_token
            .as_ref()
            .map(|t| key.seal_secret(Kind::RefreshToken, name, t));

        let mut conn = self.conn();
        // IMMEDIATE: the read of the kept refresh token and the write are one unit across processes.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let refresh = match new_refresh {
            Some(r) => Some(r),
            None => tx
                .query_row(
                    "SELECT refresh_sealed FROM credentials WHERE key = ?1",
                    [name],
                    |r| r.get::<_, Option<Vec<u8>>>(0),
                )
                .optional()?
                .flatten(),
        };
        let has_refresh = refresh.is_some();
        // A new refresh token lifts a lost-answer mark; a kept one keeps it.
        let fresh_refresh_token = tokens.refresh_token.is_some();
        tx.execute(
            "INSERT INTO credentials (key, server_name, server_url, expires_at_ms,
                 has_refresh_token, one_shot, issuer, client_id, scope, updated_at_ms,
                 access_sealed, refresh_sealed, rotated_by, rotated_at_ms, refresh_suspect)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 0)
             ON CONFLICT(key) DO UPDATE SET
                 server_name = excluded.server_name, server_url = excluded.server_url,
                 expires_at_ms = excluded.expires_at_ms,
                 has_refresh_token = excluded.has_refresh_token, one_shot = excluded.one_shot,
                 issuer = excluded.issuer, client_id = excluded.client_id,
                 scope = excluded.scope, updated_at_ms = excluded.updated_at_ms,
                 access_sealed = excluded.access_sealed, refresh_sealed = excluded.refresh_sealed,
                 rotated_by = excluded.rotated_by, rotated_at_ms = excluded.rotated_at_ms,
                 refresh_suspect = CASE WHEN ?15 THEN 0 ELSE credentials.refresh_suspect END,
                 source = CASE WHEN credentials.client_id IS excluded.client_id
                     THEN credentials.source ELSE NULL END",
            params![
                name,
                row.server_name,
                row.server_url,
                row.expires_at.map(to_ms),
                has_refresh,
                !has_refresh,
                row.issuer,
                row.client_id,
                row.scope,
                to_ms(row.updated_at),
                access,
                refresh,
                rotated.map(|(by, _)| by),
                rotated.map(|(_, at)| to_ms(at)),
                fresh_refresh_token,
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// `None` when no such credential is stored (answered without the keychain).
    pub fn credential_tokens(&self, key: &CredentialKey) -> Result<Option<TokenSet>, VaultError> {
        let name = key.as_str();
        let sealed: Option<(Vec<u8>, Option<Vec<u8>>)> = self
            .conn()
            .query_row(
                "SELECT access_sealed, refresh_sealed FROM credentials WHERE key = ?1",
                [name],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((access, refresh)) = sealed else {
            return Ok(None);
        };
        let mk = self.master_key()?;
        let access_token = mk
            .open_secret(Kind::AccessToken, name, &access)
            .map_err(|_| corrupt(format!("the access token of credential {name}")))?;
        let refresh_token = refresh
            .map(|r| {
                mk.open_secret(Kind::RefreshToken, name, &r)
                    .map_err(|_| corrupt(format!("the refresh token of credential {name}")))
            })
            .transpose()?;
        Ok(Some(TokenSet {
            access_token,
            refresh_token,
        }))
    }

    /// Deletes the credential with its grant, its refresh history and any more access it was
    /// asked for. `false` when there was no
    /// such credential. Needs no keychain.
    pub fn delete_credential(&self, key: &CredentialKey) -> Result<bool, VaultError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let n = tx.execute("DELETE FROM credentials WHERE key = ?1", [key.as_str()])?;
        tx.execute("DELETE FROM grants WHERE key = ?1", [key.as_str()])?;
        tx.execute(
            "DELETE FROM refresh_attempts WHERE key = ?1",
            [key.as_str()],
        )?;
        tx.execute("DELETE FROM wanted_scopes WHERE key = ?1", [key.as_str()])?;
        tx.commit()?;
        Ok(n > 0)
    }

    /// Deliberately discards every sealed secret (variables, credentials, the key canary) and
    /// returns how many secrets went. The recovery path after `MasterKeyMissing` or
    /// `WrongMasterKey` when the old key is gone for good; never called by the vault itself.
    /// The keychain item is left alone; the next `check_store` adopts or creates a key.
    pub fn discard_sealed_secrets(&self) -> Result<usize, VaultError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let n = tx.execute("DELETE FROM variables", [])?
            + tx.execute("DELETE FROM credentials", [])?
            + tx.execute(
                "DELETE FROM registrations WHERE client_secret_sealed IS NOT NULL",
                [],
            )?
            + tx.execute("DELETE FROM pending_flows", [])?
            + tx.execute(
                "DELETE FROM grants WHERE client_secret_sealed IS NOT NULL",
                [],
            )?;
        tx.execute("DELETE FROM vault_meta WHERE key = ?1", [CANARY_KEY])?;
        tx.commit()?;
        *lock(&self.key) = None;
        Ok(n)
    }

    // ---- master key ----

    pub(crate) fn master_key(&self) -> Result<MasterKey, VaultError> {
        // Lock order: key, then conn. Nothing takes them the other way round.
        let mut cached = lock(&self.key);
        if let Some(key) = cached.as_ref() {
            return Ok(key.clone());
        }
        let key = match self.store.get(&self.account)? {
            Some(encoded) => self.adopt_key(&encoded)?,
            None => self.create_key()?,
        };
        *cached = Some(key.clone());
        Ok(key)
    }

    /// Checks a key from the keychain against this database and records its canary if none.
    /// A present canary is checked with a plain read, so a read-only vault can load its key.
    fn adopt_key(&self, encoded: &Secret) -> Result<MasterKey, VaultError> {
        let key = MasterKey::decode(encoded).ok_or_else(|| VaultError::MasterKeyMalformed {
            account: self.account.clone(),
        })?;
        if let Some(sealed) = canary(&self.conn())? {
            key.open(Kind::Canary, "", &sealed)
                .map_err(|_| self.wrong_key())?;
            return Ok(key);
        }
        if self.read_only {
            // Nothing may be written: test the key on a sealed row, record no canary.
            if let Some((kind, name, sealed)) = sample_sealed(&self.conn())? {
                key.open(kind, &name, &sealed)
                    .map_err(|_| self.wrong_key())?;
            }
            return Ok(key);
        }
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        match canary(&tx)? {
            Some(sealed) => {
                key.open(Kind::Canary, "", &sealed)
                    .map_err(|_| self.wrong_key())?;
            }
            None => {
                // No canary but sealed rows (canary lost): test the key on one of them instead.
                if let Some((kind, name, sealed)) = sample_sealed(&tx)? {
                    key.open(kind, &name, &sealed)
                        .map_err(|_| self.wrong_key())?;
                }
                write_canary(&tx, &key)?;
                tx.commit()?;
            }
        }
        Ok(key)
    }

    /// Creates a key only while nothing sealed exists; otherwise the secrets would be orphaned.
    fn create_key(&self) -> Result<MasterKey, VaultError> {
        if self.read_only {
            // No key can be created without recording it; with sealed rows the key is missing.
            return Err(if db::has_sealed(&self.conn())? {
                VaultError::MasterKeyMissing {
                    account: self.account.clone(),
                }
            } else {
                VaultError::ReadOnly
            });
        }
        let mut conn = self.conn();
        // IMMEDIATE serialises key creation across processes sharing this database.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Ask again under the lock: another process may have created the key meanwhile.
        if let Some(encoded) = self.store.get(&self.account)? {
            drop(tx);
            drop(conn);
            return self.adopt_key(&encoded);
        }
        if db::has_sealed(&tx)? {
            return Err(VaultError::MasterKeyMissing {
                account: self.account.clone(),
            });
        }
        let key = MasterKey::generate();
        // Canary in the transaction, keychain write before commit: if the keychain write fails
        // the canary rolls back and nothing is half-created.
        write_canary(&tx, &key)?;
        self.store.set(&self.account, &key.encode())?;
        tx.commit()?;
        Ok(key)
    }

    fn wrong_key(&self) -> VaultError {
        VaultError::WrongMasterKey {
            account: self.account.clone(),
        }
    }

    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        lock(&self.conn)
    }
}

/// A panic while holding the lock rolled back any open transaction (Transaction's Drop), so the
/// connection is still sound: recover it rather than poisoning the vault for the process.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn canary(conn: &Connection) -> Result<Option<Vec<u8>>, VaultError> {
    Ok(conn
        .query_row(
            "SELECT value FROM vault_meta WHERE key = ?1",
            [CANARY_KEY],
            |r| r.get(0),
        )
        .optional()?)
}

fn write_canary(conn: &Connection, key: &MasterKey) -> Result<(), VaultError> {
    conn.execute(
        "INSERT OR REPLACE INTO vault_meta (key, value) VALUES (?1, ?2)",
        params![CANARY_KEY, key.seal(Kind::Canary, "", CANARY_PLAINTEXT)],
    )?;
    Ok(())
}

fn sample_sealed(conn: &Connection) -> Result<Option<(Kind, String, Vec<u8>)>, VaultError> {
    let var = conn
        .query_row(
            "SELECT name, value_sealed FROM variables LIMIT 1",
            [],
            |r| Ok((Kind::Variable, r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if var.is_some() {
        return Ok(var);
    }
    Ok(conn
        .query_row(
            "SELECT key, access_sealed FROM credentials LIMIT 1",
            [],
            |r| Ok((Kind::AccessToken, r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

fn open_variable(key: &MasterKey, name: &str, sealed: &[u8]) -> Result<Secret, VaultError> {
    key.open_secret(Kind::Variable, name, sealed)
        .map_err(|_| corrupt(format!("variable {name}")))
}

fn corrupt(what: String) -> VaultError {
    VaultError::Corrupt { what }
}

/// `[A-Za-z_][A-Za-z0-9_]*`, the shape `${VAR}` placeholders and environments accept.
fn validate_variable_name(name: &str) -> Result<(), VaultError> {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(VaultError::InvalidName(name.to_string()))
    }
}

struct RawRow {
    key: String,
    server_name: String,
    server_url: Option<String>,
    expires_at_ms: Option<i64>,
    has_refresh_token: bool,
    one_shot: bool,
    issuer: Option<String>,
    client_id: Option<String>,
    scope: Option<String>,
    updated_at_ms: i64,
    rotated_by: Option<String>,
    rotated_at_ms: Option<i64>,
}

impl RawRow {
    fn into_row(self) -> Result<CredentialRow, VaultError> {
        let what = format!("credential {}", self.key);
        Ok(CredentialRow {
            expires_at: self
                .expires_at_ms
                .map(|ms| from_ms(ms, &what))
                .transpose()?,
            updated_at: from_ms(self.updated_at_ms, &what)?,
            rotated_at: self
                .rotated_at_ms
                .map(|ms| from_ms(ms, &what))
                .transpose()?,
            rotated_by: self.rotated_by,
            credential_key: CredentialKey(self.key),
            server_name: self.server_name,
            server_url: self.server_url,
            has_refresh_token: self.has_refresh_token,
            one_shot: self.one_shot,
            issuer: self.issuer,
            client_id: self.client_id,
            scope: self.scope,
        })
    }
}

#[cfg(test)]
mod tests;
