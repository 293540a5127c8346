//! The refresher of record: keeps every stored credential alive without ever presenting a dead
//! or possibly-spent refresh token, and without a transient outage costing a re-authorization.
//!
//! A pass refreshes the credentials that are due ([`crate::due`]: before any bridged runtime's
//! own refresh window opens, at half a short token's life and an hour before a long one's
//! expiry; at once when expired); the schedule also wakes for the earliest. Each refresh is a
//! transaction: take the credential's cross-process lock, adopt a newer pair a runtime rotated
//! (instead of refreshing), refresh with the grant's resource and scopes, persist to the vault,
//! then write through to the runtimes.
//! It runs on its own task, so it completes even when whoever asked goes away.
//!
//! What a failure does depends on its class ([`RefreshClass`]): a refresh that never reached the
//! server is retried in-band (three times, 500 ms base, 30 % jitter); one whose answer was lost
//! presents the token once more at once (it renews where the server never ran the grant or has
//! a reuse grace period) and marks it, so a later refusal says why; 429/5xx keep it for the next
//! pass; a refusal of our own request (`invalid_scope`, `invalid_request`, `unsupported_grant_type`, a
//! client authentication the server does not take) is corrected once and never drops the token;
//! any other 4xx drops it (a still-valid access token keeps working until it lapses). Every
//! outcome but "not due" lands in the credential's history, the window's error drawer. The
//! transaction's steps are in `transaction`.

use std::collections::HashSet;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_oauth::refresh::{scrub, RevokeClient};
use patchbay_oauth::{discovery, Http, RefreshClass, RetryAfter, Revocation};
use patchbay_runtimes::claude_logs::{log_slug, ClaudeMcpLogs};
use patchbay_runtimes::reconcile::runtime_id;
use patchbay_runtimes::Runtime;
use patchbay_vault::{CredentialRow, RefreshAttempt, Secret, TokenSet};
use serde::Serialize;

use crate::{Bridges, CoreError, Patchbay};

mod transaction;

/// Sleeps between in-band retries; injected so tests decide what happens while "waiting".
pub type Sleeper = Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The in-band retry of a refresh that never reached the server.
#[derive(Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt (3).
    pub max_retries: u32,
    /// The first delay (500 ms), doubled on every retry.
    pub base: Duration,
    /// ± this fraction of each delay, at random (0.3).
    pub jitter: f64,
    pub sleep: Sleeper,
}

impl std::fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_retries", &self.max_retries)
            .field("base", &self.base)
            .field("jitter", &self.jitter)
            .finish_non_exhaustive()
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base: Duration::from_millis(500),
            jitter: 0.3,
            sleep: Arc::new(|d| Box::pin(tokio::time::sleep(d))),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `retry` (0-based); `unit` in [0, 1) picks the jitter.
    pub fn delay(&self, retry: u32, unit: f64) -> Duration {
        let base = self.base.as_secs_f64() * 2f64.powi(retry.min(16) as i32);
        let factor = 1.0 + self.jitter * (2.0 * unit.clamp(0.0, 1.0) - 1.0);
        Duration::from_secs_f64((base * factor).max(0.0))
    }
}

/// When the refresher acts.
#[derive(Debug, Clone)]
pub struct RefreshPolicy {
    /// The longest lead before expiry at which a credential is renewed (one hour); see
    /// [`crate::due`].
    pub horizon: chrono::Duration,
    /// Leave a long-lived credential alone for this long after it was stored (four hours);
    /// never applies to short-lived ones; see [`crate::due`].
    pub min_interval: chrono::Duration,
    /// How long a refresh waits for another process holding the credential's lock (10 s).
    pub lock_timeout: Duration,
    /// Every request's bound (30 s).
    pub http_timeout: Duration,
    pub retry: RetryPolicy,
}

impl Default for RefreshPolicy {
    fn default() -> Self {
        RefreshPolicy {
            horizon: chrono::Duration::hours(1),
            min_interval: chrono::Duration::hours(4),
            lock_timeout: Duration::from_secs(10),
            http_timeout: patchbay_oauth::http::DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
        }
    }
}

impl RefreshPolicy {
    /// The renewal rule with this policy's horizon and throttle ([`crate::due`]).
    pub fn renewal(&self) -> crate::due::RenewalRule {
        crate::due::RenewalRule {
            horizon: self.horizon,
            min_interval: self.min_interval,
        }
    }

    /// The pass's rule, [`crate::due::RenewalRule::is_due`]: renewable, and renewed ahead of
    /// every bridged runtime's own refresh window, or expired.
    pub fn is_due(&self, row: &CredentialRow, now: DateTime<Utc>) -> bool {
        self.renewal().is_due(row, now)
    }

    /// When the credential becomes due (`None`: never), for the schedule's timer.
    pub fn next_due(&self, row: &CredentialRow) -> Option<DateTime<Utc>> {
        self.renewal().next_due(row)
    }
}

/// What one credential's refresh did. Serialized with `outcome` as the tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RefreshOutcome {
    Refreshed {
        expires_at: Option<DateTime<Utc>>,
        retries: u32,
    },
    /// A runtime held a strictly newer pair; adopted instead of refreshing.
    Adopted {
        runtime: Runtime,
    },
    NotDue,
    /// Nothing was sent, and why (no refresh token, no grant, lock busy).
    Skipped {
        reason: String,
    },
    Failed {
        class: RefreshClass,
        http_status: Option<u16>,
        summary: String,
        retries: u32,
    },
}

/// One connector's result in a pass.
#[derive(Debug, Clone, Serialize)]
pub struct Refreshed {
    pub connector: String,
    pub credential_key: CredentialKey,
    #[serde(flatten)]
    pub outcome: RefreshOutcome,
}

/// What a pass did, with its figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PassReport {
    pub considered: usize,
    pub refreshed: usize,
    pub adopted: usize,
    pub failed: usize,
    pub skipped: usize,
    pub elapsed_ms: u64,
    /// Every credential that was not simply "not due".
    pub results: Vec<Refreshed>,
}

/// What a runtime's report of a failed refresh led to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeReportOutcome {
    /// The refresh token was rejected: the credential is retired everywhere.
    Retired,
    /// Not a refresh rejection Patchbay recognizes (it falls through to the retry path).
    NotRecognized,
}

/// A token a disconnect could not revoke.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StillValidToken {
    /// `access_token` or `refresh_token`.
    pub token: &'static str,
    /// When it expires, where Patchbay knows (an access token's `expires_in`).
    pub until: Option<chrono::DateTime<chrono::Utc>>,
}

/// What Disconnect did.
#[derive(Debug, Clone, Serialize)]
pub struct Disconnected {
    pub connector: String,
    /// Whether the server revoked the tokens (`None`: it offers no revocation endpoint or no
    /// grant is known), and why not when it failed.
    pub revoked: Option<bool>,
    pub revocation_error: Option<String>,
    /// Tokens the server said it cannot revoke (RFC 7009 `unsupported_token_type`): removed from
    /// this machine, still valid at the server until they expire.
    pub still_valid: Vec<StillValidToken>,
    /// The runtimes whose stores lost an entry.
    pub removed_from: Vec<Runtime>,
    pub registration_forgotten: bool,
}

/// The refresher over a shared [`Patchbay`]; optionally bridged to the runtimes. Cheap to clone.
#[derive(Clone)]
pub struct Refresher {
    inner: Arc<Inner>,
}

struct Inner {
    patchbay: Arc<Patchbay>,
    bridges: Option<Arc<Bridges>>,
    http: Http,
    policy: RefreshPolicy,
    /// Claude Code's MCP logs, read incrementally for refresh rejections.
    claude_logs: std::sync::Mutex<Option<ClaudeMcpLogs>>,
    /// Authorization servers that asked to wait (`Retry-After` on a 429 or 5xx), by issuer (by
    /// credential when the row names none): a pass sends nothing to them before then (an
    /// explicit refresh still does). The ask is the server's, so it holds for every credential
    /// it issued.
    not_before: std::sync::Mutex<std::collections::HashMap<String, DateTime<Utc>>>,
}

/// The longest `Retry-After` honoured: a server's mistake must not park a credential past the
/// point where its token lapses for good.
const RETRY_AFTER_CAP: chrono::Duration = chrono::Duration::hours(1);

/// Whom a `Retry-After` binds: the row's authorization server, or the credential alone.
fn wait_key(row: &CredentialRow) -> String {
    match &row.issuer {
        Some(issuer) => format!("issuer:{issuer}"),
        None => format!("credential:{}", row.credential_key.as_str()),
    }
}

impl Inner {
    /// Until when `row`'s authorization server asked to wait, if that is still ahead.
    fn waiting_until(&self, row: &CredentialRow) -> Option<DateTime<Utc>> {
        let now = self.patchbay.now();
        self.not_before
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&wait_key(row))
            .copied()
            .filter(|until| *until > now)
    }

    /// Remembers (or, with `None`, forgets) how long `row`'s authorization server asked to wait.
    fn set_not_before(&self, row: &CredentialRow, retry_after: Option<RetryAfter>) {
        let mut map = self.not_before.lock().unwrap_or_else(|p| p.into_inner());
        match retry_after {
            Some(asked) => {
                let until = asked.until(self.patchbay.now(), RETRY_AFTER_CAP);
                map.insert(wait_key(row), until);
            }
            None => {
                map.remove(&wait_key(row));
            }
        }
    }
}

impl Refresher {
    pub fn new(
        patchbay: Arc<Patchbay>,
        bridges: Option<Arc<Bridges>>,
        policy: RefreshPolicy,
    ) -> Refresher {
        Refresher {
            inner: Arc::new(Inner {
                http: Http::new(policy.http_timeout),
                patchbay,
                bridges,
                policy,
                claude_logs: std::sync::Mutex::new(None),
                not_before: std::sync::Mutex::new(std::collections::HashMap::new()),
            }),
        }
    }

    pub fn policy(&self) -> &RefreshPolicy {
        &self.inner.policy
    }

    /// One pass over every stored credential, one after another.
    pub async fn pass(&self) -> Result<PassReport, CoreError> {
        let started = Instant::now();
        // A credential Claude Code saw rejected is retired first, never presented again.
        let this = self.clone();
        let _ = tokio::task::spawn_blocking(move || this.scan_runtime_logs()).await;
        let rows = self.inner.patchbay.vault().credential_rows()?;
        let mut report = PassReport {
            considered: rows.len(),
            ..PassReport::default()
        };
        let bridged = self.bridged().await;
        let now = self.inner.patchbay.now();
        // A refresh marked in flight outside any transaction died with its process: presented
        // once more at once (the transaction checks the mark again under the lock).
        let in_flight: HashSet<CredentialKey> = self
            .inner
            .patchbay
            .vault()
            .refreshes_in_flight()
            .unwrap_or_default()
            .into_iter()
            .collect();
        for row in rows {
            // Only due credentials open a transaction (which reconciles first and checks again
            // under the lock); the runtime-store watcher adopts rotations of the others.
            let due =
                self.inner.policy.is_due(&row, now) || in_flight.contains(&row.credential_key);
            if !due || self.inner.waiting_until(&row).is_some() {
                continue;
            }
            let outcome = self
                .spawn_transaction(row.clone(), false, bridged.clone())
                .await?;
            match &outcome {
                RefreshOutcome::NotDue => continue,
                RefreshOutcome::Refreshed { .. } => report.refreshed += 1,
                RefreshOutcome::Adopted { .. } => report.adopted += 1,
                RefreshOutcome::Failed { .. } => report.failed += 1,
                RefreshOutcome::Skipped { .. } => report.skipped += 1,
            }
            report.results.push(Refreshed {
                connector: row.server_name.clone(),
                credential_key: row.credential_key.clone(),
                outcome,
            });
        }
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(report)
    }

    /// Which of `rows` wait for their authorization server's `Retry-After`, and until when: the
    /// schedule's timer does not wake for them before.
    pub fn waiting_until(&self, rows: &[CredentialRow]) -> Vec<(CredentialKey, DateTime<Utc>)> {
        let now = self.inner.patchbay.now();
        let mut map = self
            .inner
            .not_before
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        map.retain(|_, until| *until > now);
        rows.iter()
            .filter_map(|row| {
                map.get(&wait_key(row))
                    .map(|at| (row.credential_key.clone(), *at))
            })
            .collect()
    }

    /// Refresh one connector's credential now, due or not (the CLI's `patchbay refresh NAME`).
    /// The same transaction as a pass: lock, reconcile, refresh, persist, write through.
    pub async fn refresh(&self, connector: &str) -> Result<RefreshOutcome, CoreError> {
        let row = self.row_of(connector)?;
        let bridged = self.bridged().await;
        self.spawn_transaction(row, true, bridged).await
    }

    /// The bridges, read once for a pass (they re-read every catalog and runtime config).
    async fn bridged(&self) -> Arc<Vec<crate::bridges::Bridged>> {
        let Some(bridges) = self.inner.bridges.clone() else {
            return Arc::new(Vec::new());
        };
        Arc::new(
            tokio::task::spawn_blocking(move || bridges.bridged())
                .await
                .unwrap_or_default(),
        )
    }

    /// The connector's refresh history, newest first.
    pub fn history(&self, connector: &str) -> Result<Vec<RefreshAttempt>, CoreError> {
        let row = self.row_of(connector)?;
        Ok(self
            .inner
            .patchbay
            .vault()
            .refresh_attempts(&row.credential_key)?)
    }

    /// A runtime reported that its own refresh failed with `message` (Claude Code: "Token
    /// refresh failed with invalid_grant: Invalid refresh token"). A recognized rejection of the
    /// refresh token retires the credential in the vault and in every runtime store; anything
    /// else, a bare `invalid_grant` included (a server that brokers another provider's OAuth
    /// reports that provider's errors), is not recognized and changes nothing.
    pub fn runtime_reported(
        &self,
        connector: &str,
        runtime: Runtime,
        message: &str,
    ) -> Result<RuntimeReportOutcome, CoreError> {
        if !refresh_rejected(message) {
            return Ok(RuntimeReportOutcome::NotRecognized);
        }
        let row = self.row_of(connector)?;
        let inner = &self.inner;
        let vault = inner.patchbay.vault();
        let secrets = vault.credential_tokens(&row.credential_key).ok().flatten();
        match &inner.bridges {
            Some(bridges) => {
                bridges.retire(connector, &row.credential_key)?;
            }
            None => {
                vault.retire_credential(&row.credential_key, inner.patchbay.now())?;
            }
        }
        let known: Vec<&Secret> = secrets
            .iter()
            .flat_map(|t| [Some(&t.access_token), t.refresh_token.as_ref()])
            .flatten()
            .collect();
        self.record(
            &row.credential_key,
            "retired",
            None,
            format!(
                "{} reported its refresh rejected; the credential is retired, authorize again",
                runtime.display_name()
            ),
            Some(scrub(message, &known)),
            0,
        );
        Ok(RuntimeReportOutcome::Retired)
    }

    /// Retire every credential whose refresh Claude Code logged as rejected after Patchbay last
    /// stored it (its MCP logs; see `patchbay_runtimes::claude_logs`): Claude Code then holds a
    /// stripped entry, and the refresh token it was given is dead. A rejection logged before the
    /// credential's last update is history (Patchbay renewed it since). Returns the connectors
    /// retired. Reads only what the logs gained since the last call.
    pub fn scan_runtime_logs(&self) -> Vec<String> {
        let Some(bridges) = &self.inner.bridges else {
            return Vec::new();
        };
        let Some(root) = bridges.paths().map(|p| p.claude_cache.clone()) else {
            return Vec::new();
        };
        let vault = self.inner.patchbay.vault();
        let Ok(rows) = vault.credential_rows() else {
            return Vec::new();
        };
        let candidates: Vec<(crate::bridges::Bridged, CredentialRow)> = bridges
            .bridged()
            .into_iter()
            .filter(|b| b.runtime == Runtime::ClaudeCode)
            .filter_map(|b| {
                let key = b.vault_key.clone()?;
                let row = rows
                    .iter()
                    .find(|r| r.credential_key == key && r.has_refresh_token)?;
                // Claude Code's refusal of a pair issued to its own client says nothing of ours.
                let entry = bridges.runtime_entry(&b);
                let foreign = matches!(
                    (entry.and_then(|e| e.client_id), row.client_id.as_deref()),
                    (Some(theirs), Some(ours)) if theirs != ours
                );
                (!foreign).then(|| (b, row.clone()))
            })
            .collect();
        let Some(since) = candidates.iter().map(|(_, r)| r.updated_at).min() else {
            return Vec::new();
        };
        let found = {
            let mut logs = self
                .inner
                .claude_logs
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            logs.get_or_insert_with(|| ClaudeMcpLogs::new(root))
                .scan(since)
        };
        let mut retired = Vec::new();
        for rejection in found {
            for (bridge, row) in &candidates {
                if log_slug(&bridge.server_name) != rejection.server_slug
                    || rejection.at <= row.updated_at
                    || retired.contains(&bridge.connector)
                {
                    continue;
                }
                tracing::warn!(
                    connector = bridge.connector,
                    "Claude Code logged its refresh as rejected; retiring the credential"
                );
                match self.runtime_reported(
                    &bridge.connector,
                    Runtime::ClaudeCode,
                    &rejection.message,
                ) {
                    Ok(RuntimeReportOutcome::Retired) => retired.push(bridge.connector.clone()),
                    Ok(RuntimeReportOutcome::NotRecognized) => {}
                    Err(e) => tracing::warn!(connector = bridge.connector, "cannot retire: {e}"),
                }
            }
        }
        retired
    }

    /// Disconnect: revoke at the server where it offers revocation (best effort, bounded), then
    /// remove the credential from every runtime store and from the vault; forget the dynamic
    /// registration too when asked.
    pub async fn disconnect(
        &self,
        connector: &str,
        forget_registration: bool,
    ) -> Result<Disconnected, CoreError> {
        let row = self.row_of(connector)?;
        let inner = self.inner.clone();
        let connector = connector.to_string();
        // On its own task: once started, a disconnect finishes even if the caller goes away.
        tokio::spawn(async move { inner.disconnect(connector, row, forget_registration).await })
            .await
            .map_err(|e| CoreError::TaskFailed {
                task: "the disconnect task",
                message: e.to_string(),
            })?
    }

    fn row_of(&self, connector: &str) -> Result<CredentialRow, CoreError> {
        self.inner
            .patchbay
            .vault()
            .credential_rows()?
            .into_iter()
            .find(|r| r.server_name == connector)
            .ok_or_else(|| {
                // No such connector at all is said as that, not as a missing credential.
                let catalog = self.inner.patchbay.catalog();
                match catalog.get(connector) {
                    Some(_) => CoreError::NoCredential {
                        connector: connector.to_owned(),
                    },
                    None => CoreError::unknown_connector(&catalog, connector, "in the catalog"),
                }
            })
    }

    async fn spawn_transaction(
        &self,
        row: CredentialRow,
        force: bool,
        bridged: Arc<Vec<crate::bridges::Bridged>>,
    ) -> Result<RefreshOutcome, CoreError> {
        let inner = self.inner.clone();
        tokio::spawn(async move { inner.transaction(row, force, bridged).await })
            .await
            .map_err(|e| CoreError::TaskFailed {
                task: "the refresh task",
                message: e.to_string(),
            })
    }

    fn record(
        &self,
        key: &CredentialKey,
        outcome: &str,
        http_status: Option<u16>,
        summary: String,
        detail: Option<String>,
        retries: u32,
    ) {
        self.inner
            .record(key, outcome, http_status, summary, detail, retries)
    }
}

impl Inner {
    fn now(&self) -> DateTime<Utc> {
        self.patchbay.now()
    }

    fn lock_path(&self, key: &CredentialKey) -> PathBuf {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(key.as_str().as_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        self.patchbay
            .paths
            .data_dir
            .join("locks")
            .join(format!("refresh-{hex}.lock"))
    }

    fn record(
        &self,
        key: &CredentialKey,
        outcome: &str,
        http_status: Option<u16>,
        summary: String,
        detail: Option<String>,
        retries: u32,
    ) {
        let attempt = RefreshAttempt {
            credential_key: key.clone(),
            at: self.now(),
            outcome: outcome.to_string(),
            http_status,
            summary,
            detail,
            retries,
        };
        if let Err(e) = self.patchbay.vault().record_refresh_attempt(&attempt) {
            tracing::warn!(key = %key, "cannot record the refresh attempt: {e}");
        }
    }

    async fn disconnect(
        &self,
        connector: String,
        row: CredentialRow,
        forget_registration: bool,
    ) -> Result<Disconnected, CoreError> {
        let vault = self.patchbay.vault();
        let key = row.credential_key.clone();
        let grant = vault.grant(&key)?;
        let tokens = vault.credential_tokens(&key)?;
        let mut revoked = None;
        let mut revocation_error = None;
        let mut still_valid = Vec::new();
        if let (Some(grant), Some(tokens)) = (&grant, &tokens) {
            match self.revoke(grant, tokens).await {
                Ok(Some(not_revocable)) => {
                    revoked = Some(true);
                    still_valid = not_revocable
                        .into_iter()
                        .map(|token| StillValidToken {
                            token,
                            until: (token == "access_token")
                                .then_some(row.expires_at)
                                .flatten(),
                        })
                        .collect();
                }
                Ok(None) => {}
                Err(e) => {
                    revoked = Some(false);
                    revocation_error = Some(e);
                }
            }
        }
        let mut removed_from = Vec::new();
        if let Some(bridges) = &self.bridges {
            for (runtime, runtime_key, result) in bridges.remove_everywhere(&connector) {
                match result {
                    Ok(true) => removed_from.push(runtime),
                    Ok(false) => {}
                    Err(e) => tracing::warn!(
                        connector,
                        runtime = runtime_id(runtime),
                        key = %runtime_key,
                        "cannot remove the entry: {e}"
                    ),
                }
            }
        }
        vault.delete_credential(&key)?;
        let mut registration_forgotten = false;
        if forget_registration {
            if let Some(grant) = grant.as_ref().filter(|g| g.client_registered) {
                registration_forgotten =
                    vault.delete_registration(&grant.issuer, &grant.redirect_uri)?;
            }
        }
        tracing::info!(connector, "disconnected");
        Ok(Disconnected {
            connector,
            revoked,
            revocation_error,
            still_valid,
            removed_from,
            registration_forgotten,
        })
    }

    /// `Ok(None)`: the server offers no revocation endpoint. `Ok(Some(kinds))`: revocation went
    /// through, but for the kinds of token (`access_token`, `refresh_token`) it cannot revoke.
    async fn revoke(
        &self,
        grant: &patchbay_vault::Grant,
        tokens: &TokenSet,
    ) -> Result<Option<Vec<&'static str>>, String> {
        let metadata = match discovery::server_metadata(&self.http, &grant.issuer).await {
            Ok(metadata) => metadata,
            // No metadata at all (a server configured by its endpoints alone): nothing names a
            // revocation endpoint, so nothing was sent and nothing was refused.
            Err(patchbay_oauth::OAuthError::NoServerMetadata { .. }) => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let Some(endpoint) = metadata.revocation_endpoint else {
            return Ok(None);
        };
        let client = RevokeClient {
            client_id: &grant.client_id,
            client_secret: grant.client_secret.as_ref(),
            auth_method: &grant.token_auth_method,
        };
        let mut not_revocable = Vec::new();
        // The refresh token first: revoking it revokes the grant on most servers.
        if let Some(refresh) = &tokens.refresh_token {
            let done =
                patchbay_oauth::revoke(&self.http, &endpoint, client, refresh, "refresh_token")
                    .await
                    .map_err(|e| e.to_string())?;
            if done == Revocation::NotRevocable {
                not_revocable.push("refresh_token");
            }
        }
        let done = patchbay_oauth::revoke(
            &self.http,
            &endpoint,
            client,
            &tokens.access_token,
            "access_token",
        )
        .await
        .map_err(|e| e.to_string())?;
        if done == Revocation::NotRevocable {
            not_revocable.push("access_token");
        }
        Ok(Some(not_revocable))
    }
}

pub use patchbay_runtimes::claude_logs::refresh_rejected;

/// A uniform number in [0, 1) for the jitter.
fn random_unit() -> f64 {
    let mut bytes = [0u8; 4];
    if getrandom::getrandom(&mut bytes).is_err() {
        return 0.5;
    }
    f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(expires_in: i64, updated_ago: i64, refresh: bool, now: DateTime<Utc>) -> CredentialRow {
        CredentialRow {
            credential_key: CredentialKey("n|1".into()),
            server_name: "n".into(),
            server_url: None,
            expires_at: Some(now + chrono::Duration::minutes(expires_in)),
            has_refresh_token: refresh,
            one_shot: !refresh,
            issuer: None,
            client_id: None,
            scope: None,
            updated_at: now - chrono::Duration::minutes(updated_ago),
            rotated_by: None,
            rotated_at: None,
        }
    }

    #[test]
    fn due_rule_follows_horizon_throttle_and_expiry() {
        let p = RefreshPolicy::default();
        let now = Utc::now();
        // Expires in 30 min, updated 5 h ago: due.
        assert!(p.is_due(&row(30, 300, true, now), now));
        // A 1-hour token stored 10 min ago: not yet (due at half its life, 30 min).
        assert!(!p.is_due(&row(50, 10, true, now), now));
        // A 1-hour token stored 30 min ago: due, long before a runtime's own window (the old
        // 4-hour throttle held it until it had expired).
        assert!(p.is_due(&row(30, 30, true, now), now));
        // Expired, updated 10 min ago: refreshed now regardless of the throttle.
        assert!(p.is_due(&row(-1, 10, true, now), now));
        // Expires in 2 h: not yet.
        assert!(!p.is_due(&row(120, 600, true, now), now));
        // No refresh token: never.
        assert!(!p.is_due(&row(-1, 600, false, now), now));
        let mut forever = row(30, 600, true, now);
        forever.expires_at = None;
        assert!(!p.is_due(&forever, now));
    }

    #[test]
    fn backoff_doubles_within_the_jitter() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(0, 0.5), Duration::from_millis(500));
        assert_eq!(p.delay(1, 0.5), Duration::from_millis(1000));
        assert_eq!(p.delay(0, 0.0), Duration::from_millis(350));
        assert!(p.delay(0, 0.999_999) <= Duration::from_millis(650));
        for _ in 0..100 {
            let d = p.delay(2, random_unit());
            assert!(d >= Duration::from_millis(1400) && d <= Duration::from_millis(2600));
        }
    }
}
