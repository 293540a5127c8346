//! Vault errors, with the retryable (store unreachable) and terminal cases apart.
//!
//! No variant carries a secret: messages name rows, accounts and causes, never values.

use crate::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    // ---- Retryable: try again later, nothing was changed. ----
    /// The OS keychain did not answer (locked, no Secret Service, D-Bus down).
    #[error(
        "the OS keychain did not answer ({0}); nothing was changed, try again once it is unlocked"
    )]
    StoreUnreachable(String),
    /// Another process held the database lock past the busy timeout.
    #[error("the vault database is busy (locked by another process); try again")]
    DatabaseBusy,

    // ---- Terminal: retrying the same call will not help. ----
    /// The keychain answered "no such item" while the database holds sealed secrets.
    #[error(
        "the vault master key (keychain service \"Patchbay\", account \"{account}\") is missing \
         from the OS keychain, but the vault holds sealed secrets; they are kept untouched. \
         Unlock the keyring that holds the key and retry, or discard the sealed secrets \
         (`patchbay secret reset`) and set them again with `patchbay secret set`"
    )]
    MasterKeyMissing { account: String },
    /// The keychain returned a key that does not open this vault (another keyring, another key).
    #[error(
        "the master key in the OS keychain (account \"{account}\") is not the one this vault was \
         sealed with; the sealed secrets are kept untouched. Unlock the keyring that holds the \
         right key and retry, or discard the sealed secrets (`patchbay secret reset`) and set \
         them again with `patchbay secret set`"
    )]
    WrongMasterKey { account: String },
    /// The keychain item exists but is not a base64 32-byte key.
    #[error("the keychain item for account \"{account}\" is not a Patchbay master key")]
    MasterKeyMalformed { account: String },
    /// The keychain answered and refused (access denied, item too large, ambiguous).
    #[error("the OS keychain refused the request: {0}")]
    StoreRejected(String),
    /// A sealed value failed authentication although the master key is the right one.
    #[error("the sealed value of {what} is corrupt and cannot be opened")]
    Corrupt { what: String },
    /// A variable name outside `[A-Za-z_][A-Za-z0-9_]*`.
    #[error("invalid variable name {0:?}: use letters, digits and _, not starting with a digit")]
    InvalidName(String),
    #[error("cannot create the vault directory {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("vault database error: {0}")]
    Database(#[source] rusqlite::Error),
    /// The database file exists but holds nothing (0 bytes): not a fresh install. Left as it is.
    #[error(
        "the database at {path} is empty (0 bytes): it was emptied, it is not a fresh install; \
         it is left untouched. Restore it from a backup, or move it aside to start afresh"
    )]
    DatabaseEmpty { path: String },
    /// SQLite says the file is not a database or is damaged. Left as it is.
    #[error(
        "the database at {path} is corrupt ({detail}); it is left untouched. Restore it from a \
         backup, or move it aside to start afresh"
    )]
    DatabaseCorrupt { path: String, detail: String },
    /// The vault was opened read-only (its data directory cannot be written) and this needs a
    /// write.
    #[error(
        "the vault is open read-only (its data directory cannot be written); nothing was changed"
    )]
    ReadOnly,
    /// Opened read-only (nothing may be written) with a schema older than this build's.
    #[error(
        "the database at {path} has an older schema (version {found}; this Patchbay reads \
         version {needed}) and cannot be upgraded while it cannot be written; run Patchbay once \
         where its data directory is writable"
    )]
    SchemaOutdated {
        path: String,
        found: i64,
        needed: i64,
    },
    #[error("vault database migration failed: {0}")]
    Migration(#[from] rusqlite_migration::Error),
}

impl VaultError {
    /// True when the same call may succeed later without anyone changing anything.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            VaultError::StoreUnreachable(_) | VaultError::DatabaseBusy
        )
    }
}

impl From<StoreError> for VaultError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unreachable(m) => VaultError::StoreUnreachable(m),
            StoreError::Rejected(m) => VaultError::StoreRejected(m),
        }
    }
}

impl From<rusqlite::Error> for VaultError {
    fn from(e: rusqlite::Error) -> Self {
        // SQLITE_BUSY/LOCKED after busy_timeout is contention, not damage: keep it retryable.
        if let rusqlite::Error::SqliteFailure(f, _) = &e {
            if matches!(
                f.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ) {
                return VaultError::DatabaseBusy;
            }
        }
        VaultError::Database(e)
    }
}
