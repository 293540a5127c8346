//! What the OAuth flow keeps in the vault besides credentials: dynamic client registrations per
//! authorization server (issuer + redirect URI), and pending flows waiting for their callback.
//! Client secrets and PKCE verifiers are sealed under the master key like tokens; a pending flow
//! is single use (`take_pending_flow` deletes it in the same transaction that reads it) and
//! `sweep_expired_flows` drops abandoned ones with everything they held.

use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use rusqlite::{params, OptionalExtension, Row, TransactionBehavior};

use crate::db::{from_ms, to_ms};
use crate::seal::{Kind, MasterKey};
use crate::{ClientAuthMethod, Secret, Vault, VaultError};

/// A client registered with an authorization server (RFC 7591). Debug redacts the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub issuer: String,
    pub redirect_uri: String,
    pub client_id: String,
    pub client_secret: Option<Secret>,
    /// The `token_endpoint_auth_method` the server registered, when it said.
    pub token_auth_method: Option<ClientAuthMethod>,
    pub created_at: DateTime<Utc>,
}

/// An authorization request waiting for its callback. Debug redacts the verifier and secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingFlow {
    /// The single-use `state`; the primary key.
    pub state: String,
    pub connector: String,
    pub credential_key: CredentialKey,
    pub server_url: String,
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub client_id: String,
    pub client_secret: Option<Secret>,
    /// How the client authenticates at the token endpoint (stored as its name).
    pub token_auth_method: ClientAuthMethod,
    /// The client came from dynamic registration (so `invalid_client` means it was forgotten).
    pub client_registered: bool,
    pub verifier: Secret,
    pub redirect_uri: String,
    /// RFC 8707 resource; `None` when suppressed.
    pub resource: Option<String>,
    /// Space-separated, as sent; `None` when omitted.
    pub scopes: Option<String>,
    pub manual: bool,
    /// The server advertised `authorization_response_iss_parameter_supported` (RFC 9207).
    pub iss_required: bool,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// A pending flow without its secrets, for listings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PendingFlowInfo {
    pub connector: String,
    pub redirect_uri: String,
    pub manual: bool,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

fn registration_name(issuer: &str, redirect_uri: &str) -> String {
    format!("{issuer}\n{redirect_uri}")
}

const FLOW_COLUMNS: &str = "state, connector, credential_key, server_url, issuer,
    authorization_endpoint, token_endpoint, client_id, client_secret_sealed, token_auth_method,
    client_registered, verifier_sealed, redirect_uri, resource, scopes, manual, iss_required,
    created_at_ms, expires_at_ms";

struct RawFlow {
    state: String,
    connector: String,
    credential_key: String,
    server_url: String,
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    client_id: String,
    client_secret_sealed: Option<Vec<u8>>,
    token_auth_method: ClientAuthMethod,
    client_registered: bool,
    verifier_sealed: Vec<u8>,
    redirect_uri: String,
    resource: Option<String>,
    scopes: Option<String>,
    manual: bool,
    iss_required: bool,
    created_at_ms: i64,
    expires_at_ms: i64,
}

impl RawFlow {
    fn from_row(r: &Row<'_>) -> rusqlite::Result<RawFlow> {
        Ok(RawFlow {
            state: r.get(0)?,
            connector: r.get(1)?,
            credential_key: r.get(2)?,
            server_url: r.get(3)?,
            issuer: r.get(4)?,
            authorization_endpoint: r.get(5)?,
            token_endpoint: r.get(6)?,
            client_id: r.get(7)?,
            client_secret_sealed: r.get(8)?,
            token_auth_method: r.get(9)?,
            client_registered: r.get(10)?,
            verifier_sealed: r.get(11)?,
            redirect_uri: r.get(12)?,
            resource: r.get(13)?,
            scopes: r.get(14)?,
            manual: r.get(15)?,
            iss_required: r.get(16)?,
            created_at_ms: r.get(17)?,
            expires_at_ms: r.get(18)?,
        })
    }

    fn open(self, key: &MasterKey) -> Result<PendingFlow, VaultError> {
        let what = format!("pending flow of {}", self.connector);
        let corrupt = |part: &str| VaultError::Corrupt {
            what: format!("the {part} of the {what}"),
        };
        let verifier = key
            .open_secret(Kind::FlowVerifier, &self.state, &self.verifier_sealed)
            .map_err(|_| corrupt("PKCE verifier"))?;
        let client_secret = self
            .client_secret_sealed
            .map(|s| {
                key.open_secret(Kind::FlowClientSecret, &self.state, &s)
                    .map_err(|_| corrupt("client secret"))
            })
            .transpose()?;
        Ok(PendingFlow {
            created_at: from_ms(self.created_at_ms, &what)?,
            expires_at: from_ms(self.expires_at_ms, &what)?,
            state: self.state,
            connector: self.connector,
            credential_key: CredentialKey(self.credential_key),
            server_url: self.server_url,
            issuer: self.issuer,
            authorization_endpoint: self.authorization_endpoint,
            token_endpoint: self.token_endpoint,
            client_id: self.client_id,
            client_secret,
            token_auth_method: self.token_auth_method,
            client_registered: self.client_registered,
            verifier,
            redirect_uri: self.redirect_uri,
            resource: self.resource,
            scopes: self.scopes,
            manual: self.manual,
            iss_required: self.iss_required,
        })
    }
}

/// The pending flow with this state that has not expired at `now`, still sealed. `Transaction`
/// derefs to `Connection`, so reads inside and outside a transaction share it.
fn select_unexpired_flow(
    conn: &rusqlite::Connection,
    state: &str,
    now: DateTime<Utc>,
) -> Result<Option<RawFlow>, VaultError> {
    Ok(conn
        .query_row(
            &format!(
                "SELECT {FLOW_COLUMNS} FROM pending_flows WHERE state = ?1 AND expires_at_ms > ?2"
            ),
            params![state, to_ms(now)],
            RawFlow::from_row,
        )
        .optional()?)
}

impl Vault {
    // ---- registrations ----

    /// Upserts the registration for (issuer, redirect URI).
    pub fn put_registration(&self, reg: &Registration) -> Result<(), VaultError> {
        let name = registration_name(&reg.issuer, &reg.redirect_uri);
        let sealed = match &reg.client_secret {
            Some(secret) => Some(self.master_key()?.seal_secret(
                Kind::RegistrationSecret,
                &name,
                secret,
            )),
            None => None,
        };
        self.conn().execute(
            "INSERT INTO registrations (issuer, redirect_uri, client_id, client_secret_sealed,
                 token_auth_method, created_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(issuer, redirect_uri) DO UPDATE SET
                 client_id = excluded.client_id,
                 client_secret_sealed = excluded.client_secret_sealed,
                 token_auth_method = excluded.token_auth_method,
                 created_at_ms = excluded.created_at_ms",
            params![
                reg.issuer,
                reg.redirect_uri,
                reg.client_id,
                sealed,
                reg.token_auth_method,
                to_ms(reg.created_at)
            ],
        )?;
        Ok(())
    }

    /// The stored registration for (issuer, redirect URI); the keychain only when it has a secret.
    pub fn registration(
        &self,
        issuer: &str,
        redirect_uri: &str,
    ) -> Result<Option<Registration>, VaultError> {
        type RawReg = (String, Option<Vec<u8>>, Option<ClientAuthMethod>, i64);
        let raw: Option<RawReg> = self
            .conn()
            .query_row(
                "SELECT client_id, client_secret_sealed, token_auth_method, created_at_ms
                 FROM registrations WHERE issuer = ?1 AND redirect_uri = ?2",
                params![issuer, redirect_uri],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let Some((client_id, sealed, token_auth_method, created_ms)) = raw else {
            return Ok(None);
        };
        let name = registration_name(issuer, redirect_uri);
        let client_secret = match sealed {
            Some(s) => Some(
                self.master_key()?
                    .open_secret(Kind::RegistrationSecret, &name, &s)
                    .map_err(|_| VaultError::Corrupt {
                        what: format!("the client secret registered with {issuer}"),
                    })?,
            ),
            None => None,
        };
        Ok(Some(Registration {
            issuer: issuer.to_string(),
            redirect_uri: redirect_uri.to_string(),
            client_id,
            client_secret,
            token_auth_method,
            created_at: from_ms(created_ms, &format!("registration with {issuer}"))?,
        }))
    }

    /// Drops a registration the server no longer knows. `false` when there was none.
    pub fn delete_registration(
        &self,
        issuer: &str,
        redirect_uri: &str,
    ) -> Result<bool, VaultError> {
        let n = self.conn().execute(
            "DELETE FROM registrations WHERE issuer = ?1 AND redirect_uri = ?2",
            params![issuer, redirect_uri],
        )?;
        Ok(n > 0)
    }

    // ---- pending flows ----

    /// Stores a new pending flow; its `state` must be new.
    pub fn put_pending_flow(&self, flow: &PendingFlow) -> Result<(), VaultError> {
        let key = self.master_key()?;
        let verifier = key.seal_secret(Kind::FlowVerifier, &flow.state, &flow.verifier);
        let secret = flow
            .client_secret
            .as_ref()
            .map(|s| key.seal_secret(Kind::FlowClientSecret, &flow.state, s));
        self.conn().execute(
            &format!(
                "INSERT INTO pending_flows ({FLOW_COLUMNS}) VALUES
                 (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
            ),
            params![
                flow.state,
                flow.connector,
                flow.credential_key.as_str(),
                flow.server_url,
                flow.issuer,
                flow.authorization_endpoint,
                flow.token_endpoint,
                flow.client_id,
                secret,
                flow.token_auth_method,
                flow.client_registered,
                verifier,
                flow.redirect_uri,
                flow.resource,
                flow.scopes,
                flow.manual,
                flow.iss_required,
                to_ms(flow.created_at),
                to_ms(flow.expires_at),
            ],
        )?;
        Ok(())
    }

    /// The unexpired pending flow with this state, left in place (for checks before use).
    pub fn pending_flow(
        &self,
        state: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<PendingFlow>, VaultError> {
        let raw = select_unexpired_flow(&self.conn(), state, now)?;
        match raw {
            Some(raw) => Ok(Some(raw.open(&self.master_key()?)?)),
            None => Ok(None),
        }
    }

    /// Removes and returns the unexpired pending flow with this state, in one transaction, so
    /// two callbacks with the same state cannot both use it.
    pub fn take_pending_flow(
        &self,
        state: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<PendingFlow>, VaultError> {
        let key = self.master_key()?;
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let raw = select_unexpired_flow(&tx, state, now)?;
        if raw.is_some() {
            tx.execute("DELETE FROM pending_flows WHERE state = ?1", [state])?;
        }
        tx.commit()?;
        raw.map(|r| r.open(&key)).transpose()
    }

    /// The states of a connector's unexpired pending flows, newest first.
    pub fn pending_states_for(
        &self,
        connector: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, VaultError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT state FROM pending_flows WHERE connector = ?1 AND expires_at_ms > ?2
             ORDER BY created_at_ms DESC",
        )?;
        let states = stmt
            .query_map(params![connector, to_ms(now)], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(states)
    }

    /// Every unexpired pending flow, without secrets; never touches the keychain.
    pub fn pending_flows(&self, now: DateTime<Utc>) -> Result<Vec<PendingFlowInfo>, VaultError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT connector, redirect_uri, manual, created_at_ms, expires_at_ms
             FROM pending_flows WHERE expires_at_ms > ?1 ORDER BY created_at_ms",
        )?;
        let raw: Vec<(String, String, bool, i64, i64)> = stmt
            .query_map([to_ms(now)], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect::<Result<_, _>>()?;
        raw.into_iter()
            .map(|(connector, redirect_uri, manual, c, e)| {
                let what = format!("pending flow of {connector}");
                Ok(PendingFlowInfo {
                    created_at: from_ms(c, &what)?,
                    expires_at: from_ms(e, &what)?,
                    connector,
                    redirect_uri,
                    manual,
                })
            })
            .collect()
    }

    /// Deletes one pending flow (an abandoned or failed one). `false` when there was none.
    pub fn delete_pending_flow(&self, state: &str) -> Result<bool, VaultError> {
        let n = self
            .conn()
            .execute("DELETE FROM pending_flows WHERE state = ?1", [state])?;
        Ok(n > 0)
    }

    /// Deletes every pending flow that expired at or before `now`, with its sealed verifier and
    /// client secret. Returns how many went. Needs no keychain.
    pub fn sweep_expired_flows(&self, now: DateTime<Utc>) -> Result<usize, VaultError> {
        Ok(self.conn().execute(
            "DELETE FROM pending_flows WHERE expires_at_ms <= ?1",
            [to_ms(now)],
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;
    use chrono::TimeZone;
    use std::sync::Arc;

    fn t(ms: i64) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(ms).unwrap()
    }

    fn vault() -> (tempfile::TempDir, Vault) {
        let dir = tempfile::tempdir().unwrap();
        let v = Vault::open(&dir.path().join("v.db"), Arc::new(MemoryStore::new()), "a").unwrap();
        (dir, v)
    }

    fn flow(state: &str, connector: &str, created: i64, expires: i64) -> PendingFlow {
        PendingFlow {
            state: state.into(),
            connector: connector.into(),
            credential_key: CredentialKey(format!("{connector}|0123")),
            server_url: "https://mcp.example.com/mcp".into(),
            issuer: "https://auth.example.com".into(),
            authorization_endpoint: "https://auth.example.com/authorize".into(),
            token_endpoint: "https://auth.example.com/token".into(),
            client_id: "cid".into(),
            client_secret: Some(Secret::new("client-secret-value")),
            token_auth_method: "client_secret_basic".into(),
            client_registered: false,
            verifier: Secret::new("verifier-value"),
            redirect_uri: "http://127.0.0.1:3118/callback".into(),
            resource: Some("https://mcp.example.com/mcp".into()),
            scopes: Some("read".into()),
            manual: false,
            iss_required: true,
            created_at: t(created),
            expires_at: t(expires),
        }
    }

    #[test]
    fn registrations_roundtrip_seal_their_secret_and_delete() {
        let (_d, v) = vault();
        assert_eq!(v.registration("https://as", "http://r").unwrap(), None);
        let reg = Registration {
            issuer: "https://as".into(),
            redirect_uri: "http://r".into(),
            client_id: "c1".into(),
            client_secret: Some(Secret::new("s3cret")),
            token_auth_method: Some("client_secret_post".into()),
            created_at: t(1000),
        };
        v.put_registration(&reg).unwrap();
        assert_eq!(v.registration("https://as", "http://r").unwrap(), Some(reg));
        assert_eq!(v.registration("https://as", "http://other").unwrap(), None);
        let raw: Vec<u8> = v
            .conn()
            .query_row("SELECT client_secret_sealed FROM registrations", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(!String::from_utf8_lossy(&raw).contains("s3cret"));
        assert!(v.delete_registration("https://as", "http://r").unwrap());
        assert!(!v.delete_registration("https://as", "http://r").unwrap());
    }

    #[test]
    fn pending_flows_are_single_use_and_expire() {
        let (_d, v) = vault();
        v.put_pending_flow(&flow("s1", "notion", 1000, 5000))
            .unwrap();
        v.put_pending_flow(&flow("s2", "notion", 2000, 9000))
            .unwrap();
        v.put_pending_flow(&flow("s3", "slack", 1000, 3000))
            .unwrap();
        assert_eq!(
            v.pending_states_for("notion", t(1500)).unwrap(),
            vec!["s2".to_string(), "s1".to_string()]
        );
        let peeked = v.pending_flow("s1", t(1500)).unwrap().unwrap();
        assert_eq!(peeked.verifier.expose(), "verifier-value");
        assert_eq!(
            peeked.client_secret.as_ref().unwrap().expose(),
            "client-secret-value"
        );
        assert!(!format!("{peeked:?}").contains("verifier-value"));
        assert_eq!(peeked, flow("s1", "notion", 1000, 5000));

        // Expired: invisible, and not takeable.
        assert!(v.pending_flow("s3", t(3000)).unwrap().is_none());
        assert!(v.take_pending_flow("s3", t(3000)).unwrap().is_none());

        assert!(v.take_pending_flow("s1", t(1500)).unwrap().is_some());
        assert!(
            v.take_pending_flow("s1", t(1500)).unwrap().is_none(),
            "reused"
        );
        assert_eq!(v.pending_flows(t(1500)).unwrap().len(), 2);

        // The sweep removes expired rows and with them every sealed verifier and secret.
        assert_eq!(v.sweep_expired_flows(t(5000)).unwrap(), 1);
        let left: i64 = v
            .conn()
            .query_row("SELECT COUNT(*) FROM pending_flows", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 1);
        assert!(v.delete_pending_flow("s2").unwrap());
    }
}
