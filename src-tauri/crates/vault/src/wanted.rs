//! More access a server asked for than a credential grants: a 403 `insufficient_scope` whose
//! scope no step-up could obtain (nobody could consent, the consent timed out, or the step-up
//! budget was spent). Kept per credential until an authorization asks for it (or the credential
//! goes), so the status can say "needs more access" and Authorize can ask for the union of what
//! was granted and what is wanted. Scopes are not secrets.

use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use rusqlite::{params, OptionalExtension};
use std::collections::HashMap;

use crate::db::to_ms;
use crate::{Vault, VaultError};

impl Vault {
    /// Notes that the server behind `key` asked for `scope` (space-separated, as challenged);
    /// a later ask replaces an earlier one.
    pub fn want_scope(
        &self,
        key: &CredentialKey,
        scope: &str,
        now: DateTime<Utc>,
    ) -> Result<(), VaultError> {
        self.conn().execute(
            "INSERT INTO wanted_scopes (key, scope, at_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET scope = excluded.scope, at_ms = excluded.at_ms",
            params![key.as_str(), scope, to_ms(now)],
        )?;
        Ok(())
    }

    /// The scope wanted for `key`, if any.
    pub fn wanted_scope(&self, key: &CredentialKey) -> Result<Option<String>, VaultError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT scope FROM wanted_scopes WHERE key = ?1",
                [key.as_str()],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Every wanted scope, by credential key.
    pub fn wanted_scopes(&self) -> Result<HashMap<String, String>, VaultError> {
        let conn = self.conn();
        let mut statement = conn.prepare("SELECT key, scope FROM wanted_scopes")?;
        let rows = statement.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Forgets the scope wanted for `key` (an authorization asked for it). `false` when none was.
    pub fn clear_wanted_scope(&self, key: &CredentialKey) -> Result<bool, VaultError> {
        let n = self
            .conn()
            .execute("DELETE FROM wanted_scopes WHERE key = ?1", [key.as_str()])?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;
    use std::sync::Arc;

    #[test]
    fn a_wanted_scope_is_kept_replaced_and_cleared_with_the_credential() {
        let dir = tempfile::tempdir().unwrap();
        let vault = Vault::open(
            &dir.path().join("v.sqlite"),
            Arc::new(MemoryStore::new()),
            "test",
        )
        .unwrap();
        let key = CredentialKey("notion|abc".into());
        let now = Utc::now();
        assert_eq!(vault.wanted_scope(&key).unwrap(), None);
        vault.want_scope(&key, "files:read", now).unwrap();
        vault
            .want_scope(&key, "files:read files:write", now)
            .unwrap();
        assert_eq!(
            vault.wanted_scope(&key).unwrap().as_deref(),
            Some("files:read files:write")
        );
        assert_eq!(vault.wanted_scopes().unwrap().len(), 1);
        assert!(vault.clear_wanted_scope(&key).unwrap());
        assert!(!vault.clear_wanted_scope(&key).unwrap());
        vault.want_scope(&key, "admin", now).unwrap();
        vault.delete_credential(&key).unwrap();
        assert_eq!(
            vault.wanted_scope(&key).unwrap(),
            None,
            "gone with the credential"
        );
    }
}
