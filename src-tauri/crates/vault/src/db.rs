//! The SQLite side: opening the file (WAL, busy timeout, owner-only permissions), the schema
//! migrations, and the small conversions between rows and chrono times. Also the reader's way
//! in ([`open_read_only`]), for a data directory that cannot be written (read-only, full disk),
//! and telling an emptied or corrupt file apart from a fresh install: such a file is reported,
//! never migrated over, overwritten or deleted.
//!
//! Only ciphertext and non-secret metadata ever reach this file.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OpenFlags};
use rusqlite_migration::{Migrations, M};

use crate::VaultError;

/// How long a write waits for another process's lock before failing as `DatabaseBusy`.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Append only: each entry runs once per database, in order (tracked in `user_version`).
fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(
            r#"
CREATE TABLE credentials (
    key               TEXT PRIMARY KEY NOT NULL,
    server_name       TEXT NOT NULL,
    server_url        TEXT,
    expires_at_ms     INTEGER,
    has_refresh_token INTEGER NOT NULL,
    one_shot          INTEGER NOT NULL,
    issuer            TEXT,
    client_id         TEXT,
    scope             TEXT,
    updated_at_ms     INTEGER NOT NULL,
    access_sealed     BLOB NOT NULL,
    refresh_sealed    BLOB,
    -- The flags are derived from the sealed columns; the schema keeps them honest.
    CHECK (has_refresh_token = (refresh_sealed IS NOT NULL)),
    CHECK (one_shot = (refresh_sealed IS NULL))
) STRICT;

CREATE TABLE variables (
    name          TEXT PRIMARY KEY NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    value_sealed  BLOB NOT NULL
) STRICT;

-- 'canary': a fixed value sealed under the master key, so a wrong key is told apart from
-- corrupt rows.
CREATE TABLE vault_meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value BLOB NOT NULL
) STRICT;
"#,
        ),
        // OAuth: dynamic client registrations per authorization server, and flows waiting for
        // their callback. Secrets (client secrets, PKCE verifiers) are sealed like tokens.
        M::up(
            r#"
CREATE TABLE registrations (
    issuer               TEXT NOT NULL,
    redirect_uri         TEXT NOT NULL,
    client_id            TEXT NOT NULL,
    client_secret_sealed BLOB,
    token_auth_method    TEXT,
    created_at_ms        INTEGER NOT NULL,
    PRIMARY KEY (issuer, redirect_uri)
) STRICT;

CREATE TABLE pending_flows (
    state                  TEXT PRIMARY KEY NOT NULL,
    connector              TEXT NOT NULL,
    credential_key         TEXT NOT NULL,
    server_url             TEXT NOT NULL,
    issuer                 TEXT NOT NULL,
    authorization_endpoint TEXT NOT NULL,
    token_endpoint         TEXT NOT NULL,
    client_id              TEXT NOT NULL,
    client_secret_sealed   BLOB,
    token_auth_method      TEXT NOT NULL,
    client_registered      INTEGER NOT NULL,
    verifier_sealed        BLOB NOT NULL,
    redirect_uri           TEXT NOT NULL,
    resource               TEXT,
    scopes                 TEXT,
    manual                 INTEGER NOT NULL,
    iss_required           INTEGER NOT NULL,
    created_at_ms          INTEGER NOT NULL,
    expires_at_ms          INTEGER NOT NULL
) STRICT;
CREATE INDEX pending_flows_expiry ON pending_flows (expires_at_ms);
"#,
        ),
        // Runtime bridges: who rotated the stored pair when a runtime (Claude Code, Codex)
        // refreshed it and Patchbay adopted it. NULL when Patchbay obtained the pair itself.
        M::up(
            r#"
ALTER TABLE credentials ADD COLUMN rotated_by TEXT;
ALTER TABLE credentials ADD COLUMN rotated_at_ms INTEGER;
"#,
        ),
        // The refresher of record: how each credential is renewed (what its token exchange
        // used), a flag on a refresh token whose refresh answer was lost (`refresh_suspect`: the
        // server may have spent it), and a short history of attempts.
        M::up(
            r#"
ALTER TABLE credentials ADD COLUMN refresh_suspect INTEGER NOT NULL DEFAULT 0;

CREATE TABLE grants (
    key                  TEXT PRIMARY KEY NOT NULL,
    issuer               TEXT NOT NULL,
    token_endpoint       TEXT NOT NULL,
    token_auth_method    TEXT NOT NULL,
    client_id            TEXT NOT NULL,
    client_secret_sealed BLOB,
    client_registered    INTEGER NOT NULL,
    redirect_uri         TEXT NOT NULL,
    resource             TEXT,
    scopes               TEXT
) STRICT;

CREATE TABLE refresh_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    key         TEXT NOT NULL,
    at_ms       INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    http_status INTEGER,
    summary     TEXT NOT NULL,
    detail      TEXT,
    retries     INTEGER NOT NULL
) STRICT;
CREATE INDEX refresh_attempts_key ON refresh_attempts (key, id);
"#,
        ),
        // Where a credential came from when Patchbay adopted it from another tool's store
        // (`claude_code`, `codex`, `mcp_remote`); NULL when Patchbay authorized it itself. Kept
        // across renewals with the same client; a credential of another client clears it.
        M::up(
            r#"
ALTER TABLE credentials ADD COLUMN source TEXT;
"#,
        ),
        // More access a server asked for (a 403 `insufficient_scope`) that its credential does
        // not grant and no step-up could obtain: the row says "needs more access" until an
        // authorization asks for it.
        M::up(
            r#"
CREATE TABLE wanted_scopes (
    key   TEXT PRIMARY KEY NOT NULL,
    scope TEXT NOT NULL,
    at_ms INTEGER NOT NULL
) STRICT;
"#,
        ),
    ])
}

pub(crate) const CANARY_KEY: &str = "canary";
pub(crate) const CANARY_PLAINTEXT: &[u8] = b"patchbay vault canary v1";

pub(crate) fn open(path: &Path) -> Result<Connection, VaultError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::private::create_private_dir(parent).map_err(|source| VaultError::Io {
            path: parent.display().to_string(),
            source,
        })?;
    }
    if path.as_os_str() != ":memory:" && !path.exists() {
        create_whole(path)?;
    }
    refuse_emptied(path)?;
    create_private_file(path)?;
    let mut conn = Connection::open(path)?;
    restrict_permissions(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // WAL: readers (status) never wait on a writer (a token refresh) in another process.
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(|e| damaged(path, e))?;
    debug_assert!(mode.eq_ignore_ascii_case("wal") || path.as_os_str() == ":memory:");
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    migrations().to_latest(&mut conn).map_err(|e| match e {
        rusqlite_migration::Error::RusqliteError { err, .. } => damaged(path, err),
        e => VaultError::Migration(e),
    })?;
    Ok(conn)
}

/// A fresh database appears at `path` whole or not at all: it is made (WAL, migrated) under a
/// name of this process's own beside it and linked into place only if nothing is there yet. Two
/// processes starting on a new data dir at once would otherwise race: one's empty file, not yet
/// written, would read to the other as a database someone emptied.
fn create_whole(path: &Path) -> Result<(), VaultError> {
    let io = |source| VaultError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    // This process's and this call's own: threads of one process may race too.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    name.push(format!(".new-{}-{call}", std::process::id()));
    let fresh = path.with_file_name(name);
    let _ = std::fs::remove_file(&fresh);
    let made = (|| {
        create_private_file(&fresh)?;
        let mut conn = Connection::open(&fresh)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        migrations()
            .to_latest(&mut conn)
            .map_err(VaultError::Migration)?;
        // Closing checkpoints the WAL into the file: what is linked is the whole database.
        conn.close().map_err(|(_, e)| e)?;
        match std::fs::hard_link(&fresh, path) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(io(e)),
            _ => Ok(()),
        }
    })();
    for leftover in ["", "-wal", "-shm"] {
        let mut name = fresh.clone().into_os_string();
        name.push(leftover);
        let _ = std::fs::remove_file(name);
    }
    made
}

/// Open an existing database for reading only: nothing is created, migrated or written, so it
/// works on a read-only directory or a full disk. A WAL database whose shared-memory file cannot
/// be created there is opened as immutable (no locks: fine on a directory nobody can write).
/// An older schema than this build's cannot be upgraded read-only and is refused as such.
pub(crate) fn open_read_only(path: &Path) -> Result<Connection, VaultError> {
    refuse_emptied(path)?;
    if !path.is_file() {
        return Err(VaultError::Io {
            path: path.display().to_string(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let uri = |extra: &str| format!("file:{}?mode=ro{extra}", uri_path(path));
    let first =
        Connection::open_with_flags(uri(""), flags).and_then(|c| user_version(&c).map(|v| (c, v)));
    let (conn, version) = match first {
        Ok(opened) => opened,
        Err(e) if is_damage(&e) => return Err(damaged(path, e)),
        Err(_) => Connection::open_with_flags(uri("&immutable=1"), flags)
            .and_then(|c| user_version(&c).map(|v| (c, v)))
            .map_err(|e| damaged(path, e))?,
    };
    let needed = LATEST_VERSION;
    if version < needed {
        return Err(VaultError::SchemaOutdated {
            path: path.display().to_string(),
            found: version,
            needed,
        });
    }
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// The schema version this build migrates to (one per migration).
const LATEST_VERSION: i64 = 6;

fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    // Reading the schema forces SQLite to open the file: damage and a WAL it cannot map show here.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// A path as the path part of an SQLite `file:` URI (`?`, `#` and `%` escaped).
fn uri_path(path: &Path) -> String {
    let text = path.display().to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            '%' => out.push_str("%25"),
            c => out.push(c),
        }
    }
    out
}

/// An existing 0-byte file is a database someone or something emptied, not a fresh install:
/// SQLite would quietly start a new one in it and every credential would read as never stored.
fn refuse_emptied(path: &Path) -> Result<(), VaultError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() == 0 => Err(VaultError::DatabaseEmpty {
            path: path.display().to_string(),
        }),
        _ => Ok(()),
    }
}

/// Whether SQLite says the file is not a database or is damaged.
fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

/// `e`, as a corrupt database at `path` when SQLite says so.
fn damaged(path: &Path, e: rusqlite::Error) -> VaultError {
    if is_damage(&e) {
        VaultError::DatabaseCorrupt {
            path: path.display().to_string(),
            detail: e.to_string(),
        }
    } else {
        VaultError::from(e)
    }
}

/// A new database file is created 0600 before SQLite opens it (SQLite would create it with the
/// umask's mode, open to others until [`restrict_permissions`]); its -wal and -shm take the
/// database's mode. An existing file is left to [`restrict_permissions`].
fn create_private_file(path: &Path) -> Result<(), VaultError> {
    if path.as_os_str() == ":memory:" {
        return Ok(());
    }
    crate::private::create_private_file(path).map_err(|source| VaultError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Metadata (server names, issuers) is nobody else's business; SQLite gives -wal/-shm the same
/// mode. Only ever takes permissions away: a file its owner made read-only stays read-only.
#[cfg(unix)]
fn restrict_permissions(path: &Path) -> Result<(), VaultError> {
    use std::os::unix::fs::PermissionsExt;
    if path.as_os_str() == ":memory:" {
        return Ok(());
    }
    let io = |source| VaultError::Io {
        path: path.display().to_string(),
        source,
    };
    let mode = std::fs::metadata(path).map_err(io)?.permissions().mode() & 0o7777;
    let wanted = mode & 0o700;
    if wanted == mode {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(wanted)).map_err(io)
}

#[cfg(not(unix))]
fn restrict_permissions(_path: &Path) -> Result<(), VaultError> {
    Ok(())
}

/// True when any row holds a value sealed under the master key (the canary does not count:
/// losing it loses nothing).
pub(crate) fn has_sealed(conn: &Connection) -> Result<bool, VaultError> {
    Ok(conn.query_row(
        "SELECT EXISTS(SELECT 1 FROM variables) OR EXISTS(SELECT 1 FROM credentials)
             OR EXISTS(SELECT 1 FROM registrations WHERE client_secret_sealed IS NOT NULL)
             OR EXISTS(SELECT 1 FROM pending_flows)
             OR EXISTS(SELECT 1 FROM grants WHERE client_secret_sealed IS NOT NULL)",
        [],
        |r| r.get(0),
    )?)
}

pub(crate) fn to_ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn from_ms(ms: i64, what: &str) -> Result<DateTime<Utc>, VaultError> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| VaultError::Corrupt {
        what: format!("{what} (timestamp {ms} out of range)"),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn processes_opening_a_new_data_dir_at_once_all_get_the_one_database() {
        // What `gateway serve` beside `gateway client add` on a fresh data dir did: the loser
        // of the race read the winner's not-yet-written file as an emptied database.
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("patchbay.db");
            let openers: Vec<_> = (0..6)
                .map(|_| {
                    let path = path.clone();
                    std::thread::spawn(move || super::open(&path).map(drop))
                })
                .collect();
            for opener in openers {
                opener
                    .join()
                    .unwrap()
                    .expect("every opener gets the database");
            }
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|n| n.contains(".new-"))
                .collect();
            assert!(names.is_empty(), "left behind: {names:?}");
        }
    }

    use super::*;

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .permissions()
            .mode()
            & 0o777
    }

    /// Issue 14: the directories the vault creates are 0700, the database and its WAL and
    /// shared-memory files 0600, from their first byte on.
    #[cfg(unix)]
    #[test]
    fn a_new_database_and_its_directories_are_the_owners_only() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("data/patchbay/patchbay.sqlite3");
        let conn = open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        for dir in [root.path().join("data"), root.path().join("data/patchbay")] {
            assert_eq!(mode(&dir), 0o700, "{}", dir.display());
        }
        for suffix in ["", "-wal", "-shm"] {
            let file = root
                .path()
                .join(format!("data/patchbay/patchbay.sqlite3{suffix}"));
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
        drop(conn);
        // Opened again: still a database (the early empty file did not count as emptied).
        open(&path).unwrap();
    }

    #[test]
    fn migrations_are_valid() {
        assert!(migrations().validate().is_ok());
    }

    #[test]
    fn latest_version_is_the_number_of_migrations() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrations().to_latest(&mut conn).unwrap();
        assert_eq!(user_version(&conn).unwrap(), LATEST_VERSION);
    }
}
