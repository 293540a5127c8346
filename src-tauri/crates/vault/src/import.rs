//! Credentials adopted from another tool's store (Claude Code, Codex, mcp-remote): stored only
//! where Patchbay holds none for the key, in one transaction with the grant of the client they
//! were issued to, and marked with where they came from, so status can say "Credential from
//! mcp-remote". The mark is the `source` column of `credentials` (NULL: authorized in Patchbay);
//! `upsert_credential` keeps it across renewals by the same client and clears it otherwise.

use std::collections::BTreeMap;

use patchbay_catalog::CredentialKey;
use rusqlite::{params, OptionalExtension, TransactionBehavior};

use crate::db::to_ms;
use crate::renewal::write_grant;
use crate::seal::Kind;
use crate::{CredentialRow, Grant, TokenSet, Vault, VaultError};

/// Where a stored credential came from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum CredentialSource {
    /// Authorized in Patchbay (or renewed by a runtime from such a pair).
    Patchbay,
    /// Claude Code's `mcpOAuth` entries.
    ClaudeCode,
    /// Codex's MCP credential store (file or keyring).
    Codex,
    /// mcp-remote's plaintext `~/.mcp-auth/mcp-remote-v1/`.
    McpRemote,
}

impl CredentialSource {
    pub const ADOPTED: [CredentialSource; 3] = [
        CredentialSource::ClaudeCode,
        CredentialSource::Codex,
        CredentialSource::McpRemote,
    ];

    /// The id stored and shown in JSON: `patchbay`, `claude_code`, `codex`, `mcp_remote`.
    pub fn id(self) -> &'static str {
        match self {
            CredentialSource::Patchbay => "patchbay",
            CredentialSource::ClaudeCode => "claude_code",
            CredentialSource::Codex => "codex",
            CredentialSource::McpRemote => "mcp_remote",
        }
    }

    pub fn from_id(id: &str) -> Option<CredentialSource> {
        [CredentialSource::Patchbay]
            .into_iter()
            .chain(CredentialSource::ADOPTED)
            .find(|s| s.id() == id)
    }

    /// For a row: `Patchbay`, `Claude Code`, `Codex`, `mcp-remote`.
    pub fn display_name(self) -> &'static str {
        match self {
            CredentialSource::Patchbay => "Patchbay",
            CredentialSource::ClaudeCode => "Claude Code",
            CredentialSource::Codex => "Codex",
            CredentialSource::McpRemote => "mcp-remote",
        }
    }
}

/// What [`Vault::put_imported_credential`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Imported {
    Stored,
    /// Patchbay already holds a credential under the key: nothing was written.
    AlreadyHeld,
}

impl Vault {
    /// Stores a credential adopted from `source`'s store, only when none is stored under
    /// `row.credential_key` (a credential Patchbay holds is never overwritten, even a lapsed
    /// one), together with `grant` (how it renews: the client it was issued to); `None` leaves
    /// it without one (and drops a stale grant left under the key), so the refresher says to
    /// authorize in Patchbay. One transaction: the row, its grant and its source land together
    /// or not at all. `has_refresh_token` and `one_shot` are derived, `rotated_by` left empty.
    /// `CredentialSource::Patchbay` stores no mark (the same as `put_credential`).
    pub fn put_imported_credential(
        &self,
        row: &CredentialRow,
        tokens: &TokenSet,
        grant: Option<&Grant>,
        source: CredentialSource,
    ) -> Result<Imported, VaultError> {
        if let Some(g) = grant {
            if g.credential_key != row.credential_key {
                return Err(VaultError::Corrupt {
                    what: format!(
                        "the grant for {} offered with credential {}",
                        g.credential_key, row.credential_key
                    ),
                });
            }
        }
        let key = self.master_key()?;
        let name = row.credential_key.as_str();
        let access = key.seal_secret(Kind::AccessToken, name, &tokens.access_token);
        let refresh = tokens
            .refresh_token
            .as_ref()
            .map(|t| key.seal_secret(Kind::RefreshToken, name, t));
        let grant_secret = grant
            .and_then(|g| g.client_secret.as_ref())
            .map(|s| key.seal_secret(Kind::GrantClientSecret, name, s));
        let has_refresh = refresh.is_some();
        let source = (source != CredentialSource::Patchbay).then(|| source.id());

        let mut conn = self.conn();
        // IMMEDIATE: "none is stored" and the insert are one unit across processes.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let held: Option<i64> = tx
            .query_row("SELECT 1 FROM credentials WHERE key = ?1", [name], |r| {
                r.get(0)
            })
            .optional()?;
        if held.is_some() {
            return Ok(Imported::AlreadyHeld);
        }
        tx.execute(
            "INSERT INTO credentials (key, server_name, server_url, expires_at_ms,
                 has_refresh_token, one_shot, issuer, client_id, scope, updated_at_ms,
                 access_sealed, refresh_sealed, rotated_by, rotated_at_ms, refresh_suspect, source)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, NULL, NULL, 0, ?13)",
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
                source,
            ],
        )?;
        match grant {
            Some(g) => write_grant(&tx, g, grant_secret)?,
            None => {
                tx.execute("DELETE FROM grants WHERE key = ?1", [name])?;
            }
        }
        tx.commit()?;
        Ok(Imported::Stored)
    }

    /// Where the credential under `key` came from; `None` when none is stored. Needs no keychain.
    pub fn credential_source(
        &self,
        key: &CredentialKey,
    ) -> Result<Option<CredentialSource>, VaultError> {
        let stored: Option<Option<String>> = self
            .conn()
            .query_row(
                "SELECT source FROM credentials WHERE key = ?1",
                [key.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        stored.map(|s| parse_source(key.as_str(), s)).transpose()
    }

    /// Every stored credential's source, by key (one query, for a status). Needs no keychain.
    pub fn credential_sources(
        &self,
    ) -> Result<BTreeMap<CredentialKey, CredentialSource>, VaultError> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT key, source FROM credentials")?;
        let rows: Vec<(String, Option<String>)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        rows.into_iter()
            .map(|(key, source)| {
                let source = parse_source(&key, source)?;
                Ok((CredentialKey(key), source))
            })
            .collect()
    }
}

fn parse_source(key: &str, stored: Option<String>) -> Result<CredentialSource, VaultError> {
    match stored {
        None => Ok(CredentialSource::Patchbay),
        Some(id) => CredentialSource::from_id(&id).ok_or_else(|| VaultError::Corrupt {
            what: format!("the source {id:?} of credential {key}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryStore, Secret};
    use chrono::{DateTime, Utc};
    use std::sync::Arc;

    fn vault() -> (tempfile::TempDir, Vault) {
        let dir = tempfile::tempdir().unwrap();
        let v = Vault::open(
            &dir.path().join("v.db"),
            Arc::new(MemoryStore::new()),
            "test",
        )
        .unwrap();
        (dir, v)
    }

    fn t(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).unwrap()
    }

    fn row(client: &str) -> CredentialRow {
        CredentialRow {
            credential_key: CredentialKey("fx|1".into()),
            server_name: "fx".into(),
            server_url: Some("http://localhost:1/mcp".into()),
            expires_at: Some(t(2_000_000_000_000)),
            has_refresh_token: false,
            one_shot: false,
            issuer: Some("http://localhost:2/".into()),
            client_id: Some(client.into()),
            scope: None,
            updated_at: t(1_900_000_000_000),
            rotated_by: None,
            rotated_at: None,
        }
    }

    fn tokens(access: &str, refresh: Option<&str>) -> TokenSet {
        TokenSet {
            access_token: Secret::new(access),
            refresh_token: refresh.map(Secret::new),
        }
    }

    fn grant(client: &str, secret: Option<&str>) -> Grant {
        Grant {
            credential_key: CredentialKey("fx|1".into()),
            issuer: "http://localhost:2/".into(),
            token_endpoint: "http://localhost:2/token".into(),
            token_auth_method: if secret.is_some() {
                "client_secret_post".into()
            } else {
                "none".into()
            },
            client_id: client.into(),
            client_secret: secret.map(Secret::new),
            client_registered: false,
            redirect_uri: "http://localhost:3/oauth/callback".into(),
            resource: Some("http://localhost:1/mcp".into()),
            scopes: None,
        }
    }

    #[test]
    fn an_import_is_stored_with_its_grant_and_source_only_where_none_is_held() {
        let (_d, v) = vault();
        let key = CredentialKey("fx|1".into());
        assert_eq!(v.credential_source(&key).unwrap(), None);
        let g = grant("remote-client", Some("s3cret"));
        let done = v
            .put_imported_credential(
                &row("remote-client"),
                &tokens("a1", Some("r1")),
                Some(&g),
                CredentialSource::McpRemote,
            )
            .unwrap();
        assert_eq!(done, Imported::Stored);
        assert_eq!(
            v.credential_source(&key).unwrap(),
            Some(CredentialSource::McpRemote)
        );
        assert_eq!(v.grant(&key).unwrap().unwrap(), g);
        let stored = v.credential_row(&key).unwrap().unwrap();
        assert!(stored.has_refresh_token && !stored.one_shot);
        assert_eq!(stored.rotated_by, None);

        // A second import (another tool's pair) never overwrites.
        let again = v
            .put_imported_credential(
                &row("other"),
                &tokens("a9", Some("r9")),
                None,
                CredentialSource::ClaudeCode,
            )
            .unwrap();
        assert_eq!(again, Imported::AlreadyHeld);
        assert_eq!(
            v.credential_tokens(&key)
                .unwrap()
                .unwrap()
                .access_token
                .expose(),
            "a1"
        );
        assert_eq!(v.grant(&key).unwrap().unwrap().client_id, "remote-client");
    }

    #[test]
    fn the_source_survives_renewals_by_the_same_client_and_not_a_new_authorization() {
        let (_d, v) = vault();
        let key = CredentialKey("fx|1".into());
        v.put_imported_credential(
            &row("cc"),
            &tokens("a1", Some("r1")),
            None,
            CredentialSource::ClaudeCode,
        )
        .unwrap();
        assert_eq!(v.grant(&key).unwrap(), None);
        // The refresher renews with the same client: still from Claude Code.
        v.put_credential(&row("cc"), &tokens("a2", Some("r2")))
            .unwrap();
        assert_eq!(
            v.credential_sources().unwrap()[&key],
            CredentialSource::ClaudeCode
        );
        v.retire_credential(&key, t(1_950_000_000_000)).unwrap();
        assert_eq!(
            v.credential_source(&key).unwrap(),
            Some(CredentialSource::ClaudeCode)
        );
        // Authorized anew in Patchbay (its own client): Patchbay's now.
        v.put_credential(&row("patchbay-client"), &tokens("a3", Some("r3")))
            .unwrap();
        assert_eq!(
            v.credential_source(&key).unwrap(),
            Some(CredentialSource::Patchbay)
        );
    }

    #[test]
    fn an_import_without_a_grant_drops_a_stale_one() {
        let (_d, v) = vault();
        let key = CredentialKey("fx|1".into());
        v.put_grant(&grant("old", None)).unwrap();
        v.put_imported_credential(
            &row("new"),
            &tokens("a1", None),
            None,
            CredentialSource::Codex,
        )
        .unwrap();
        assert_eq!(v.grant(&key).unwrap(), None);
        assert!(v.credential_row(&key).unwrap().unwrap().one_shot);
    }

    #[test]
    fn ids_round_trip() {
        for s in [CredentialSource::Patchbay]
            .into_iter()
            .chain(CredentialSource::ADOPTED)
        {
            assert_eq!(CredentialSource::from_id(s.id()), Some(s));
        }
        assert_eq!(CredentialSource::from_id("cursor"), None);
    }
}
