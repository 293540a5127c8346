//! What the refresher of record keeps beside each credential: the grant it was obtained with
//! (token endpoint, client, resource, scopes; a client secret sealed like a token), a mark on
//! a refresh token whose refresh answer was lost, and a short history of refresh attempts for
//! the window's error drawer.
//!
//! The history holds no secret: callers scrub the raw detail before recording it, and the vault
//! caps it at [`DETAIL_MAX`] bytes and keeps the last [`HISTORY_LEN`] attempts per credential.

use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use rusqlite::{params, OptionalExtension, TransactionBehavior};

use crate::db::{from_ms, to_ms};
use crate::seal::Kind;
use crate::{ClientAuthMethod, Secret, Vault, VaultError};

/// `credentials.refresh_suspect`, beside 0 (nothing known): the last refresh of the stored
/// refresh token lost its answer ...
const SUSPECT_ANSWER_LOST: i64 = 1;
/// ... or a refresh of it is in flight, or died in flight with its process.
const SUSPECT_IN_FLIGHT: i64 = 2;

/// Attempts kept per credential; older ones are dropped on insert.
pub const HISTORY_LEN: usize = 20;
/// The raw detail's cap, in bytes (cut on a character boundary).
pub const DETAIL_MAX: usize = 4096;

/// How a credential is renewed: what its token exchange used. Debug redacts the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub credential_key: CredentialKey,
    pub issuer: String,
    pub token_endpoint: String,
    /// How the client authenticates at the token endpoint (stored as its name).
    pub token_auth_method: ClientAuthMethod,
    pub client_id: String,
    pub client_secret: Option<Secret>,
    /// The client came from dynamic registration (Disconnect can forget it).
    pub client_registered: bool,
    pub redirect_uri: String,
    /// RFC 8707 resource, sent again on every refresh; `None` when suppressed.
    pub resource: Option<String>,
    /// The scopes asked for, space-separated.
    pub scopes: Option<String>,
}

/// One refresh attempt, as the error drawer shows it. Holds nothing secret.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RefreshAttempt {
    pub credential_key: CredentialKey,
    pub at: DateTime<Utc>,
    /// `refreshed`, `adopted`, `retryable`, `ambiguous`, `transient`, `permanent`, `retired`,
    /// `skipped`: the refresher's classes, stored as their ids.
    pub outcome: String,
    pub http_status: Option<u16>,
    pub summary: String,
    /// The raw server answer or error chain, scrubbed by the caller, at most [`DETAIL_MAX`].
    pub detail: Option<String>,
    /// In-band retries before this outcome.
    pub retries: u32,
}

impl Vault {
    // ---- grants ----

    /// Upserts the grant of `grant.credential_key`.
    pub fn put_grant(&self, grant: &Grant) -> Result<(), VaultError> {
        let name = grant.credential_key.as_str();
        let sealed = match &grant.client_secret {
            Some(secret) => Some(self.master_key()?.seal_secret(
                Kind::GrantClientSecret,
                name,
                secret,
            )),
            None => None,
        };
        write_grant(&self.conn(), grant, sealed)
    }

    /// The grant of `key`; the keychain only when it holds a client secret.
    pub fn grant(&self, key: &CredentialKey) -> Result<Option<Grant>, VaultError> {
        type RawGrant = (
            String,
            String,
            ClientAuthMethod,
            String,
            Option<Vec<u8>>,
            bool,
            String,
            Option<String>,
            Option<String>,
        );
        let raw: Option<RawGrant> = self
            .conn()
            .query_row(
                "SELECT issuer, token_endpoint, token_auth_method, client_id, client_secret_sealed,
                        client_registered, redirect_uri, resource, scopes
                 FROM grants WHERE key = ?1",
                [key.as_str()],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                    ))
                },
            )
            .optional()?;
        let Some((
            issuer,
            token_endpoint,
            method,
            client_id,
            sealed,
            registered,
            redirect,
            resource,
            scopes,
        )) = raw
        else {
            return Ok(None);
        };
        let client_secret = match sealed {
            Some(s) => Some(
                self.master_key()?
                    .open_secret(Kind::GrantClientSecret, key.as_str(), &s)
                    .map_err(|_| VaultError::Corrupt {
                        what: format!("the client secret of credential {key}"),
                    })?,
            ),
            None => None,
        };
        Ok(Some(Grant {
            credential_key: key.clone(),
            issuer,
            token_endpoint,
            token_auth_method: method,
            client_id,
            client_secret,
            client_registered: registered,
            redirect_uri: redirect,
            resource,
            scopes,
        }))
    }

    // ---- lost answers and permanent failures ----

    /// Marks the stored refresh token as one whose refresh answer was lost: the server may have
    /// spent it, or not. It stays presentable (a server that never processed the request, or
    /// one with a reuse grace period, still renews it); the mark lets a later refusal say why
    /// the token died. Storing a new refresh token (a refresh, an adoption, a re-authorization)
    /// lifts it. `false` when no such credential holds a refresh token.
    pub fn mark_refresh_answer_lost(&self, key: &CredentialKey) -> Result<bool, VaultError> {
        let n = self.conn().execute(
            "UPDATE credentials SET refresh_suspect = 1
             WHERE key = ?1 AND refresh_sealed IS NOT NULL",
            [key.as_str()],
        )?;
        Ok(n > 0)
    }

    /// Marks `key`'s refresh token as being presented, just before the refresh grant goes out
    /// (`refresh_suspect = 2`); an answer that settles the request lifts it
    /// ([`Vault::clear_refresh_in_flight`]), a lost one turns it into the lost-answer mark. A mark
    /// still there when the next transaction holds the credential's lock means the process died
    /// with the answer in flight ([`Vault::take_interrupted_refresh`]). A token already marked as
    /// lost keeps that mark. `false` when no such credential holds a refresh token.
    pub fn mark_refresh_in_flight(&self, key: &CredentialKey) -> Result<bool, VaultError> {
        let n = self.conn().execute(
            "UPDATE credentials SET refresh_suspect = 2
             WHERE key = ?1 AND refresh_sealed IS NOT NULL AND refresh_suspect = 0",
            [key.as_str()],
        )?;
        Ok(n > 0)
    }

    /// Lifts the in-flight mark once an answer settled the request (renewed, refused, or
    /// never reached the server); a lost-answer mark stays.
    pub fn clear_refresh_in_flight(&self, key: &CredentialKey) -> Result<(), VaultError> {
        self.conn().execute(
            "UPDATE credentials SET refresh_suspect = 0 WHERE key = ?1 AND refresh_suspect = 2",
            [key.as_str()],
        )?;
        Ok(())
    }

    /// A refresh of `key` that was in flight when its process died: turns its in-flight mark
    /// into the lost-answer mark and says whether there was one. Called under the credential's
    /// lock, where no other transaction can be in flight. Needs no keychain.
    pub fn take_interrupted_refresh(&self, key: &CredentialKey) -> Result<bool, VaultError> {
        let n = self.conn().execute(
            "UPDATE credentials SET refresh_suspect = 1
             WHERE key = ?1 AND refresh_suspect = 2 AND refresh_sealed IS NOT NULL",
            [key.as_str()],
        )?;
        Ok(n > 0)
    }

    /// The keys whose refresh was marked in flight and not settled: a transaction running now,
    /// or one whose process died with the answer in flight. Needs no keychain.
    pub fn refreshes_in_flight(&self) -> Result<Vec<CredentialKey>, VaultError> {
        self.keys_marked(SUSPECT_IN_FLIGHT)
    }

    /// The keys holding a refresh token with this `refresh_suspect` mark.
    fn keys_marked(&self, mark: i64) -> Result<Vec<CredentialKey>, VaultError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT key FROM credentials WHERE refresh_suspect = ?1 AND refresh_sealed IS NOT NULL
             ORDER BY key",
        )?;
        let keys = stmt
            .query_map([mark], |r| r.get::<_, String>(0))?
            .map(|k| k.map(CredentialKey))
            .collect::<Result<_, _>>()?;
        Ok(keys)
    }

    /// Whether the last refresh of `key`'s current refresh token lost its answer. Needs no
    /// keychain.
    pub fn is_refresh_answer_lost(&self, key: &CredentialKey) -> Result<bool, VaultError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT refresh_suspect = 1 AND refresh_sealed IS NOT NULL FROM credentials
                 WHERE key = ?1",
                [key.as_str()],
                |r| r.get::<_, bool>(0),
            )
            .optional()?
            .unwrap_or(false))
    }

    /// The keys whose current refresh token's last refresh lost its answer. Needs no keychain.
    pub fn refresh_answers_lost(&self) -> Result<Vec<CredentialKey>, VaultError> {
        self.keys_marked(SUSPECT_ANSWER_LOST)
    }

    /// After a permanent refusal of the refresh grant: drops the refresh token and keeps the
    /// access token with its expiry, so a still-valid one goes on working until it lapses.
    /// `false` when no such credential is stored. Needs no keychain.
    pub fn drop_refresh_token(
        &self,
        key: &CredentialKey,
        now: DateTime<Utc>,
    ) -> Result<bool, VaultError> {
        let n = self.conn().execute(
            "UPDATE credentials SET refresh_sealed = NULL, has_refresh_token = 0, one_shot = 1,
                 refresh_suspect = 0, updated_at_ms = ?2
             WHERE key = ?1",
            params![key.as_str(), to_ms(now)],
        )?;
        Ok(n > 0)
    }

    // ---- history ----

    /// Records an attempt (detail capped at [`DETAIL_MAX`]) and drops all but the last
    /// [`HISTORY_LEN`] of that credential, in one transaction. Needs no keychain.
    pub fn record_refresh_attempt(&self, attempt: &RefreshAttempt) -> Result<(), VaultError> {
        let detail = attempt.detail.as_deref().map(|d| cap(d, DETAIL_MAX));
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO refresh_attempts (key, at_ms, outcome, http_status, summary, detail, retries)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                attempt.credential_key.as_str(),
                to_ms(attempt.at),
                attempt.outcome,
                attempt.http_status,
                attempt.summary,
                detail,
                attempt.retries,
            ],
        )?;
        tx.execute(
            "DELETE FROM refresh_attempts WHERE key = ?1 AND id NOT IN
                 (SELECT id FROM refresh_attempts WHERE key = ?1 ORDER BY id DESC LIMIT ?2)",
            params![attempt.credential_key.as_str(), HISTORY_LEN as i64],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The attempts of `key`, newest first. Needs no keychain.
    pub fn refresh_attempts(&self, key: &CredentialKey) -> Result<Vec<RefreshAttempt>, VaultError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT at_ms, outcome, http_status, summary, detail, retries
             FROM refresh_attempts WHERE key = ?1 ORDER BY id DESC",
        )?;
        type RawAttempt = (i64, String, Option<u16>, String, Option<String>, u32);
        let raw: Vec<RawAttempt> = stmt
            .query_map([key.as_str()], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })?
            .collect::<Result<_, _>>()?;
        raw.into_iter()
            .map(|(at_ms, outcome, http_status, summary, detail, retries)| {
                Ok(RefreshAttempt {
                    credential_key: key.clone(),
                    at: from_ms(at_ms, &format!("refresh attempt of {key}"))?,
                    outcome,
                    http_status,
                    summary,
                    detail,
                    retries,
                })
            })
            .collect()
    }
}

/// `s` cut to at most `max` bytes on a character boundary.
/// Upserts `grant` on `conn` (a connection or an open transaction), its client secret already
/// sealed by the caller.
pub(crate) fn write_grant(
    conn: &rusqlite::Connection,
    grant: &Grant,
    client_secret_sealed: Option<Vec<u8>>,
) -> Result<(), VaultError> {
    conn.execute(
        "INSERT INTO grants (key, issuer, token_endpoint, token_auth_method, client_id,
             client_secret_sealed, client_registered, redirect_uri, resource, scopes)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT(key) DO UPDATE SET
             issuer = excluded.issuer, token_endpoint = excluded.token_endpoint,
             token_auth_method = excluded.token_auth_method, client_id = excluded.client_id,
             client_secret_sealed = excluded.client_secret_sealed,
             client_registered = excluded.client_registered,
             redirect_uri = excluded.redirect_uri, resource = excluded.resource,
             scopes = excluded.scopes",
        params![
            grant.credential_key.as_str(),
            grant.issuer,
            grant.token_endpoint,
            grant.token_auth_method,
            grant.client_id,
            client_secret_sealed,
            grant.client_registered,
            grant.redirect_uri,
            grant.resource,
            grant.scopes,
        ],
    )?;
    Ok(())
}

fn cap(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CredentialRow, MemoryStore, TokenSet};
    use std::sync::Arc;

    fn vault() -> (tempfile::TempDir, Vault) {
        let dir = tempfile::tempdir().unwrap();
        let v = Vault::open(
            &dir.path().join("v.sqlite"),
            Arc::new(MemoryStore::new()),
            "test",
        )
        .unwrap();
        (dir, v)
    }

    fn row(key: &str, now: DateTime<Utc>) -> CredentialRow {
        CredentialRow {
            credential_key: CredentialKey(key.into()),
            server_name: "notion".into(),
            server_url: Some("https://mcp.example/mcp".into()),
            expires_at: Some(now + chrono::Duration::hours(1)),
            has_refresh_token: true,
            one_shot: false,
            issuer: None,
            client_id: None,
            scope: None,
            updated_at: now,
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

    #[test]
    fn grant_round_trips_with_its_secret_sealed() {
        let (_d, v) = vault();
        let key = CredentialKey("notion|abc".into());
        let grant = Grant {
            credential_key: key.clone(),
            issuer: "https://as.example".into(),
            token_endpoint: "https://as.example/token".into(),
            token_auth_method: "client_secret_basic".into(),
            client_id: "cid".into(),
            client_secret: Some(Secret::new("grant-secret-value")),
            client_registered: true,
            redirect_uri: "http://localhost:3118/callback".into(),
            resource: Some("https://mcp.example/mcp".into()),
            scopes: Some("read write".into()),
        };
        v.put_grant(&grant).unwrap();
        assert_eq!(v.grant(&key).unwrap(), Some(grant));
        let raw: Vec<u8> = v
            .conn()
            .query_row("SELECT client_secret_sealed FROM grants", [], |r| r.get(0))
            .unwrap();
        assert!(!String::from_utf8_lossy(&raw).contains("grant-secret-value"));
        assert!(v.delete_credential(&key).is_ok());
        assert_eq!(v.grant(&key).unwrap(), None);
    }

    #[test]
    fn a_grant_keeps_its_auth_method_name_exactly() {
        let (_d, v) = vault();
        let key = CredentialKey("imported|abc".into());
        let mut grant = Grant {
            credential_key: key.clone(),
            issuer: "https://as.example".into(),
            token_endpoint: "https://as.example/token".into(),
            token_auth_method: ClientAuthMethod::Other("private_key_jwt".into()),
            client_id: "cid".into(),
            client_secret: None,
            client_registered: false,
            redirect_uri: "http://localhost:3118/callback".into(),
            resource: None,
            scopes: None,
        };
        let stored = |v: &Vault| -> String {
            v.conn()
                .query_row("SELECT token_auth_method FROM grants", [], |r| r.get(0))
                .unwrap()
        };
        v.put_grant(&grant).unwrap();
        assert_eq!(v.grant(&key).unwrap(), Some(grant.clone()));
        assert_eq!(stored(&v), "private_key_jwt");
        for (method, name) in [
            (ClientAuthMethod::None, "none"),
            (ClientAuthMethod::ClientSecretBasic, "client_secret_basic"),
            (ClientAuthMethod::ClientSecretPost, "client_secret_post"),
        ] {
            grant.token_auth_method = method;
            v.put_grant(&grant).unwrap();
            assert_eq!(stored(&v), name);
            assert_eq!(v.grant(&key).unwrap(), Some(grant.clone()));
        }
        // A row as earlier code wrote it (the name as plain text) reads back as that name.
        v.conn()
            .execute(
                "UPDATE grants SET token_auth_method = 'tls_client_auth'",
                [],
            )
            .unwrap();
        let read = v.grant(&key).unwrap().unwrap();
        assert_eq!(
            read.token_auth_method,
            ClientAuthMethod::Other("tls_client_auth".into())
        );
        assert_eq!(read.token_auth_method.as_str(), "tls_client_auth");
    }

    #[test]
    fn a_lost_answer_mark_holds_until_a_new_refresh_token_arrives() {
        let (_d, v) = vault();
        let now = Utc::now();
        let key = CredentialKey("notion|abc".into());
        v.put_credential(&row("notion|abc", now), &tokens("a1", Some("r1")))
            .unwrap();
        assert!(v.mark_refresh_answer_lost(&key).unwrap());
        assert_eq!(v.refresh_answers_lost().unwrap(), vec![key.clone()]);
        // A response without a refresh token keeps the stored one, and its mark.
        v.put_credential(&row("notion|abc", now), &tokens("a2", None))
            .unwrap();
        assert_eq!(v.refresh_answers_lost().unwrap(), vec![key.clone()]);
        v.put_credential(&row("notion|abc", now), &tokens("a3", Some("r2")))
            .unwrap();
        assert!(v.refresh_answers_lost().unwrap().is_empty());
    }

    #[test]
    fn an_in_flight_mark_is_lifted_by_an_answer_or_taken_as_a_lost_one() {
        let (_d, v) = vault();
        let now = Utc::now();
        let key = CredentialKey("notion|abc".into());
        v.put_credential(&row("notion|abc", now), &tokens("a1", Some("r1")))
            .unwrap();
        // Settled: lifted, and nothing reads as lost or interrupted.
        assert!(v.mark_refresh_in_flight(&key).unwrap());
        assert_eq!(v.refreshes_in_flight().unwrap(), vec![key.clone()]);
        assert!(
            !v.is_refresh_answer_lost(&key).unwrap(),
            "in flight is not lost"
        );
        v.clear_refresh_in_flight(&key).unwrap();
        assert!(v.refreshes_in_flight().unwrap().is_empty());
        assert!(!v.take_interrupted_refresh(&key).unwrap());
        // Renewed: a new refresh token lifts it.
        assert!(v.mark_refresh_in_flight(&key).unwrap());
        v.put_credential(&row("notion|abc", now), &tokens("a2", Some("r2")))
            .unwrap();
        assert!(v.refreshes_in_flight().unwrap().is_empty());
        // The process died: the next transaction takes it, once, as a lost answer.
        assert!(v.mark_refresh_in_flight(&key).unwrap());
        assert!(v.take_interrupted_refresh(&key).unwrap());
        assert!(!v.take_interrupted_refresh(&key).unwrap());
        assert!(v.is_refresh_answer_lost(&key).unwrap());
        // A lost-answer mark is neither replaced by an in-flight one nor lifted with it.
        assert!(!v.mark_refresh_in_flight(&key).unwrap());
        v.clear_refresh_in_flight(&key).unwrap();
        assert!(v.is_refresh_answer_lost(&key).unwrap());
    }

    #[test]
    fn dropping_the_refresh_token_keeps_the_access_token_and_expiry() {
        let (_d, v) = vault();
        // Whole milliseconds: the database keeps no finer.
        let now = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
        let key = CredentialKey("notion|abc".into());
        v.put_credential(&row("notion|abc", now), &tokens("a1", Some("r1")))
            .unwrap();
        assert!(v.drop_refresh_token(&key, now).unwrap());
        let r = &v.credential_rows().unwrap()[0];
        assert!(!r.has_refresh_token);
        assert_eq!(r.expires_at, Some(now + chrono::Duration::hours(1)));
        let t = v.credential_tokens(&key).unwrap().unwrap();
        assert_eq!(t.access_token.expose(), "a1");
        assert!(t.refresh_token.is_none());
    }

    #[test]
    fn history_keeps_the_last_attempts_newest_first_capped() {
        let (_d, v) = vault();
        let key = CredentialKey("notion|abc".into());
        let other = CredentialKey("linear|def".into());
        let at = Utc::now();
        for i in 0..(HISTORY_LEN + 5) {
            v.record_refresh_attempt(&RefreshAttempt {
                credential_key: key.clone(),
                at,
                outcome: "transient".into(),
                http_status: Some(503),
                summary: format!("attempt {i}"),
                detail: Some("é".repeat(DETAIL_MAX)),
                retries: 0,
            })
            .unwrap();
        }
        v.record_refresh_attempt(&RefreshAttempt {
            credential_key: other.clone(),
            at,
            outcome: "refreshed".into(),
            http_status: None,
            summary: "ok".into(),
            detail: None,
            retries: 1,
        })
        .unwrap();
        let got = v.refresh_attempts(&key).unwrap();
        assert_eq!(got.len(), HISTORY_LEN);
        assert_eq!(got[0].summary, format!("attempt {}", HISTORY_LEN + 4));
        assert!(got[0].detail.as_ref().unwrap().len() <= DETAIL_MAX);
        assert_eq!(v.refresh_attempts(&other).unwrap().len(), 1);
    }
}
