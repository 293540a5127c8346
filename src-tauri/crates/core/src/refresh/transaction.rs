//! One credential's refresh as a transaction, step by step: take its cross-process lock, adopt a
//! newer pair a runtime rotated, re-read under the lock and decide whether anything is sent,
//! mark the refresh in flight, send the grant (in-band retries for a request that never left,
//! one corrected retry for a request the server refused as ours), then persist and write
//! through, or settle the failure by its class, and lift the mark. A mark found under the lock
//! is a refresh whose process died with the answer in flight: a lost answer, presented once
//! more at once.
//!
//! The client a pair belongs to travels with it: a pair whose row names a client other than the
//! grant's (adopted before adoption checked clients) is renewed as that public client, never
//! with ours, so a mismatch can not turn into `invalid_grant` and cost a live refresh token.

use std::sync::Arc;

use patchbay_catalog::CredentialKey;
use patchbay_oauth::{
    refresh_corrected, ClientAuthMethod, Correction, RefreshClass, RefreshFailure, RefreshRequest,
    Renewed,
};
use patchbay_runtimes::lock::FileLock;
use patchbay_runtimes::Runtime;
use patchbay_vault::{CredentialRow, Grant, Secret, TokenSet};

use super::{random_unit, Inner, RefreshOutcome};
use crate::bridges::Bridged;

/// What is sent: the stored pair, its grant, and the client the pair belongs to.
struct Loaded {
    row: CredentialRow,
    grant: Grant,
    refresh_token: Secret,
    /// The last refresh of this token died with its process, its answer in flight: this
    /// presentation is the lost-answer policy's one more, and is not repeated.
    interrupted: bool,
}

impl Loaded {
    /// The grant's client, unless the row says the pair was issued to another one.
    fn own_client(&self) -> bool {
        self.row
            .client_id
            .as_deref()
            .is_none_or(|id| id == self.grant.client_id)
    }

    fn request(&self) -> RefreshRequest<'_> {
        let own = self.own_client();
        RefreshRequest {
            token_endpoint: &self.grant.token_endpoint,
            client_id: if own {
                &self.grant.client_id
            } else {
                self.row.client_id.as_deref().unwrap_or_default()
            },
            client_secret: if own {
                self.grant.client_secret.as_ref()
            } else {
                None
            },
            auth_method: if own {
                &self.grant.token_auth_method
            } else {
                &ClientAuthMethod::None
            },
            refresh_token: &self.refresh_token,
            resource: self.grant.resource.as_deref(),
            // No scope: "as granted" (RFC 6749 §6). The granted one is the correction.
            scopes: None,
            own_client: own,
        }
    }

    /// Exactly what the server granted: the token response's scope kept on the row.
    fn granted_scope(&self) -> Option<&str> {
        self.row.scope.as_deref()
    }
}

impl Inner {
    /// One credential's refresh, start to finish, under its cross-process lock.
    pub(super) async fn transaction(
        &self,
        listed: CredentialRow,
        force: bool,
        bridged: Arc<Vec<Bridged>>,
    ) -> RefreshOutcome {
        let key = listed.credential_key.clone();
        let connector = listed.server_name.clone();
        // Asked to wait (Retry-After): an explicit refresh and the gateway's renew-on-401 wait
        // too, since the server would only refuse again.
        if let Some(until) = self.waiting_until(&listed) {
            return RefreshOutcome::Skipped {
                reason: format!(
                    "the authorization server asked to wait until {} (Retry-After)",
                    until.format("%H:%M:%S UTC")
                ),
            };
        }
        let _lock = match self.lock_credential(&key).await {
            Ok(lock) => lock,
            Err(outcome) => return outcome,
        };
        let _codex = match self.lock_codex(&connector, &bridged).await {
            Ok(lock) => lock,
            Err(outcome) => return outcome,
        };
        let adopted_from = self.adopt_first(&key, &connector, &bridged).await;
        let loaded = match self.load(&key, force, adopted_from) {
            Ok(loaded) => loaded,
            Err(outcome) => return outcome,
        };
        // Marked before the grant goes out and lifted once an answer settles it: should this
        // process die with the answer in flight, the next transaction knows the server may have
        // spent the token (see `load`).
        let vault = self.patchbay.vault();
        if let Err(e) = vault.mark_refresh_in_flight(&key) {
            tracing::warn!(connector, "cannot mark the refresh as in flight: {e}");
        }
        let (result, retries) = self.send(&connector, &loaded).await;
        let outcome = match result {
            Ok(renewed) => {
                self.persist(&connector, &loaded, renewed, retries, bridged)
                    .await
            }
            Err(failure) => self.settle(&connector, &loaded.row, failure, retries),
        };
        if let Err(e) = vault.clear_refresh_in_flight(&key) {
            tracing::warn!(connector, "cannot lift the in-flight mark: {e}");
        }
        outcome
    }

    /// The credential's lock file, waited for up to the policy's bound.
    async fn lock_credential(&self, key: &CredentialKey) -> Result<FileLock, RefreshOutcome> {
        let lock_path = self.lock_path(key);
        let timeout = self.policy.lock_timeout;
        let lock = tokio::task::spawn_blocking(move || {
            if let Some(dir) = lock_path.parent() {
                crate::paths::create_private_dir(dir).map_err(|e| e.to_string())?;
            }
            FileLock::acquire(&lock_path, timeout).map_err(|e| e.to_string())
        })
        .await;
        match lock {
            Ok(Ok(lock)) => Ok(lock),
            Ok(Err(why)) => Err(why),
            Err(join) => Err(join.to_string()),
        }
        .map_err(|why| RefreshOutcome::Skipped {
            reason: format!("another Patchbay process is refreshing it: {why}"),
        })
    }

    /// Codex's own refresh lock for the entry it keeps of this connector, when Codex is bridged:
    /// Codex takes it around its re-read and refresh, so while we hold it Codex never presents
    /// the refresh token we are presenting, and it re-reads (and finds ours) after.
    async fn lock_codex(
        &self,
        connector: &str,
        bridged: &Arc<Vec<Bridged>>,
    ) -> Result<Option<FileLock>, RefreshOutcome> {
        let Some(codex_home) = self
            .bridges
            .as_ref()
            .and_then(|b| b.paths())
            .map(|p| p.codex_home.clone())
        else {
            return Ok(None);
        };
        let Some(key) = bridged
            .iter()
            .find(|b| b.connector == connector && b.runtime == Runtime::Codex)
            .and_then(|b| b.credential_key.clone())
        else {
            return Ok(None);
        };
        let timeout = self.policy.lock_timeout;
        let lock = tokio::task::spawn_blocking(move || {
            patchbay_runtimes::codex::lock_codex_refresh(&codex_home, &key, timeout)
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
        match lock {
            Ok(lock) => Ok(Some(lock)),
            Err(why) => Err(RefreshOutcome::Skipped {
                reason: format!("Codex is refreshing it: {why}"),
            }),
        }
    }

    /// Reconcile first: a runtime may hold a newer pair (it refreshed by itself).
    async fn adopt_first(
        &self,
        key: &CredentialKey,
        connector: &str,
        bridged: &Arc<Vec<Bridged>>,
    ) -> Option<Runtime> {
        let bridges = self.bridges.clone()?;
        let (name, bridged) = (connector.to_string(), bridged.clone());
        let adoptions =
            tokio::task::spawn_blocking(move || bridges.reconcile_connector_in(&bridged, &name))
                .await
                .unwrap_or_default();
        let adopted = adoptions.last()?;
        self.record(
            key,
            "adopted",
            None,
            format!(
                "adopted the pair {} rotated instead of refreshing",
                adopted.runtime.display_name()
            ),
            None,
            0,
        );
        Some(adopted.runtime)
    }

    /// Re-read under the lock (another process, or the adoption, may have renewed it) and
    /// decide whether a refresh goes out. `Err` is the outcome when nothing is sent.
    fn load(
        &self,
        key: &CredentialKey,
        force: bool,
        adopted_from: Option<Runtime>,
    ) -> Result<Loaded, RefreshOutcome> {
        let skipped = |reason: String| RefreshOutcome::Skipped { reason };
        let vault = self.patchbay.vault();
        let row = vault
            .credential_row(key)
            .map_err(|e| skipped(format!("cannot read the vault: {e}")))?
            .ok_or_else(|| skipped("the credential was removed meanwhile".into()))?;
        // Under the lock no other transaction is in flight: a mark left is one whose process
        // died before the answer was kept. The server may have rotated, so the token is presented
        // once more now, while a reuse grace period may still cover it, not when next due.
        let interrupted = vault.take_interrupted_refresh(key).unwrap_or_else(|e| {
            tracing::warn!("cannot read the in-flight mark of {key}: {e}");
            false
        });
        if interrupted {
            tracing::warn!(
                connector = row.server_name,
                "the last refresh stopped with its answer in flight (Patchbay was stopped); presenting the refresh token once more now"
            );
        }
        // An explicit refresh renews even right after an adoption; a pass does not.
        if !force && !interrupted && !self.policy.is_due(&row, self.now()) {
            return Err(match adopted_from {
                Some(runtime) => RefreshOutcome::Adopted { runtime },
                None => RefreshOutcome::NotDue,
            });
        }
        let no_refresh =
            || skipped("no refresh token: nothing can renew it; authorize again".into());
        if !row.has_refresh_token {
            return Err(no_refresh());
        }
        let tokens = vault
            .credential_tokens(key)
            .map_err(|e| skipped(format!("cannot open the vault: {e}")))?
            .ok_or_else(|| skipped("the credential was removed meanwhile".into()))?;
        let grant = vault
            .grant(key)
            .map_err(|e| skipped(format!("cannot open the vault: {e}")))?
            .ok_or_else(|| skipped("Patchbay does not know how this credential was granted (it was authorized elsewhere or before Patchbay kept grants); authorize again in Patchbay to let it renew".into()))?;
        let refresh_token = tokens.refresh_token.ok_or_else(no_refresh)?;
        Ok(Loaded {
            row,
            grant,
            refresh_token,
            interrupted,
        })
    }

    /// Sends the grant: retried in-band while it never reached the server, and presented once
    /// more at once when its answer was lost; corrected once when the server refuses our
    /// request rather than the token.
    ///
    /// A lost answer (a hang after sending, a reset mid-body, an unreadable 200) leaves two
    /// cases we cannot tell apart: the server never ran the grant (the token is live), or it
    /// rotated and the new pair is in the answer we lost. Presenting the token again renews in
    /// the first case, and in the second wherever the server has a reuse grace period (it must
    /// be soon, within that period). Without one, the server refuses it: the pair it minted was
    /// only in the lost answer, so nothing renewable is left either way, and the refusal says
    /// so. Holding the token back instead would cost a re-authorization in every case.
    async fn send(
        &self,
        connector: &str,
        loaded: &Loaded,
    ) -> (Result<Renewed, RefreshFailure>, u32) {
        let request = loaded.request();
        let mut retries = 0;
        let mut presented_again = loaded.interrupted;
        if loaded.interrupted {
            // The history shows why this token goes out again, whatever the answer.
            self.record(
                &loaded.row.credential_key,
                RefreshClass::Ambiguous.id(),
                None,
                "an earlier refresh was cut off with its answer in flight (Patchbay stopped); presenting the refresh token once more".into(),
                None,
                0,
            );
        }
        loop {
            match refresh_corrected(&self.http, request, loaded.granted_scope()).await {
                Err(f)
                    if f.class == RefreshClass::Retryable
                        && retries < self.policy.retry.max_retries =>
                {
                    let delay = self.policy.retry.delay(retries, random_unit());
                    tracing::info!(connector, retry = retries + 1, "{}", f.summary);
                    (self.policy.retry.sleep)(delay).await;
                    retries += 1;
                }
                Err(f) if f.class == RefreshClass::Ambiguous && !presented_again => {
                    // Remember the loss first: if this process dies before the second answer,
                    // the next attempt still knows why a refusal would come.
                    if let Err(e) = self
                        .patchbay
                        .vault()
                        .mark_refresh_answer_lost(&loaded.row.credential_key)
                    {
                        tracing::warn!(connector, "cannot mark the lost answer: {e}");
                    }
                    tracing::warn!(
                        connector,
                        "{}; presenting the refresh token once more",
                        f.summary
                    );
                    // The lost answer is a line of the history of its own: the next line (the
                    // renewal, or the refusal) is about the token presented again.
                    self.record(
                        &loaded.row.credential_key,
                        f.class.id(),
                        f.http_status,
                        format!("{}; presenting the refresh token once more", f.summary),
                        f.detail.clone(),
                        retries,
                    );
                    let delay = self.policy.retry.delay(0, random_unit());
                    (self.policy.retry.sleep)(delay).await;
                    presented_again = true;
                    retries += 1;
                }
                other => return (other, retries),
            }
        }
    }

    /// Keeps the renewed pair (before anything uses it), records it, remembers a corrected
    /// client authentication, and writes the pair through to the runtimes.
    async fn persist(
        &self,
        connector: &str,
        loaded: &Loaded,
        renewed: Renewed,
        retries: u32,
        bridged: Arc<Vec<Bridged>>,
    ) -> RefreshOutcome {
        let vault = self.patchbay.vault();
        let key = &loaded.row.credential_key;
        let now = self.now();
        let answer = renewed.tokens;
        let expires_at = answer
            .expires_in
            .and_then(|s| i64::try_from(s).ok())
            .and_then(chrono::Duration::try_seconds)
            .map(|d| now + d);
        let request = loaded.request();
        let renewed_row = CredentialRow {
            expires_at,
            scope: answer.scope.clone().or(loaded.row.scope.clone()),
            issuer: Some(loaded.grant.issuer.clone()),
            client_id: Some(request.client_id.to_string()),
            updated_at: now,
            ..loaded.row.clone()
        };
        // Persist before anything uses the new pair: a crash after this loses nothing.
        if let Err(e) = vault.put_credential(
            &renewed_row,
            &TokenSet {
                access_token: answer.access_token,
                refresh_token: answer.refresh_token,
            },
        ) {
            // The server rotated and we could not keep the result: the old refresh token is
            // spent, exactly like a lost answer.
            let _ = vault.mark_refresh_answer_lost(key);
            let summary = format!("refreshed, but the vault could not store it: {e}");
            tracing::error!(connector, "{summary}");
            self.record(key, "ambiguous", None, summary.clone(), None, retries);
            return RefreshOutcome::Failed {
                class: RefreshClass::Ambiguous,
                http_status: None,
                summary,
                retries,
            };
        }
        let mut summary = match expires_at {
            Some(at) => format!("refreshed; valid until {}", at.format("%Y-%m-%d %H:%M UTC")),
            None => "refreshed".into(),
        };
        if let Some(correction) = &renewed.correction {
            summary.push_str(&format!(" ({})", correction.describe()));
            if let Correction::AuthMethod(method) = correction {
                if loaded.own_client() {
                    let grant = Grant {
                        token_auth_method: method.clone(),
                        ..loaded.grant.clone()
                    };
                    if let Err(e) = vault.put_grant(&grant) {
                        tracing::warn!(connector, "cannot remember the client authentication: {e}");
                    }
                }
            }
        }
        self.set_not_before(&loaded.row, None);
        self.record(key, "refreshed", Some(200), summary, None, retries);
        if let Some(bridges) = &self.bridges {
            let bridges = bridges.clone();
            let name = connector.to_string();
            let written =
                tokio::task::spawn_blocking(move || bridges.write_through_in(&bridged, &name))
                    .await;
            if let Ok(Err(e)) = written {
                tracing::warn!(connector, "cannot write the refreshed pair through: {e}");
            }
        }
        tracing::info!(connector, "refreshed");
        RefreshOutcome::Refreshed {
            expires_at,
            retries,
        }
    }

    /// What a failure does to the stored token, by its class (see the module doc of
    /// `patchbay_oauth::refresh`), recorded in the history either way.
    fn settle(
        &self,
        connector: &str,
        row: &CredentialRow,
        mut failure: RefreshFailure,
        retries: u32,
    ) -> RefreshOutcome {
        let vault = self.patchbay.vault();
        let key = &row.credential_key;
        // A 429 or 5xx that said how long to wait is waited for; any other answer forgets it.
        self.set_not_before(row, failure.retry_after);
        match failure.class {
            RefreshClass::Ambiguous => {
                if let Err(e) = vault.mark_refresh_answer_lost(key) {
                    tracing::error!(connector, "cannot mark the lost answer: {e}");
                }
                tracing::warn!(connector, "{}", failure.summary);
            }
            RefreshClass::Permanent => {
                // Refused after an answer was lost: the server had spent the token, and the
                // pair it minted was only in that answer. Said as such, not as a mystery.
                if vault.is_refresh_answer_lost(key).unwrap_or(false) {
                    failure.summary = format!(
                        "{}: an earlier refresh's answer was lost after the server had already rotated the refresh token, and it keeps no grace period for a token presented again; authorize again",
                        failure.summary
                    );
                }
                if let Err(e) = vault.drop_refresh_token(key, self.now()) {
                    tracing::error!(connector, "cannot drop the refresh token: {e}");
                }
                tracing::warn!(connector, "{}", failure.summary);
            }
            // Loud: the refresh token is fine and the server (or our request) is not; someone
            // may need to know.
            RefreshClass::Transient | RefreshClass::Rejected => {
                tracing::error!(connector, "{}", failure.summary)
            }
            RefreshClass::Retryable => tracing::warn!(connector, "{}", failure.summary),
        }
        self.record(
            key,
            failure.class.id(),
            failure.http_status,
            failure.summary.clone(),
            failure.detail.clone(),
            retries,
        );
        RefreshOutcome::Failed {
            class: failure.class,
            http_status: failure.http_status,
            summary: failure.summary,
            retries,
        }
    }
}
