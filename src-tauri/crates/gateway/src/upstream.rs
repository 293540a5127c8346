//! A connector in use, resolved to what the front door sends upstream: its URL and transport,
//! the headers its catalog entry declares with `${VAR}`s expanded (vault first, then the
//! environment, as [`Patchbay::resolve_variable`] does), and, for an OAuth connector, the access
//! token the vault holds. A 401 from upstream renews through the refresher of record
//! ([`Refresher::refresh`], the same locked transaction as every other renewal) and hands back the
//! new bearer, or an error that says to authorize the connector in Patchbay.
//!
//! A connector is found by name, or by URL for the `npx mcp-remote URL` drop-in. Secrets stay in
//! [`Secret`]s: nothing here logs or prints a header value or a token.

use patchbay_catalog::{expand, Catalog, CatalogItem, CredentialKey, ServerEntry, Transport};
use patchbay_core::{Authorizer, CoreError, Patchbay, RefreshOutcome, Refresher};
use patchbay_vault::Secret;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// How long a renewal waits for another renewal of the same connector (which may itself wait on
/// the refresher's cross-process lock and a slow token endpoint) before giving up.
const RENEWAL_WAIT: Duration = Duration::from_secs(60);

/// The transport the upstream speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamTransport {
    /// MCP streamable HTTP (one endpoint: POST, GET for the server's stream, DELETE).
    StreamableHttp,
    /// The legacy HTTP+SSE transport (GET an event stream, POST to the endpoint it names).
    Sse,
}

impl UpstreamTransport {
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamTransport::StreamableHttp => "streamable-http",
            UpstreamTransport::Sse => "sse",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("no connector named \"{0}\" is in use in Patchbay (see `patchbay status`)")]
    NotFound(String),
    #[error("no connector in use in Patchbay has the URL {0}")]
    NoSuchUrl(String),
    #[error("the connector {0} is a local (stdio) server; only remote connectors can be reached this way")]
    NotRemote(String),
    #[error("the connector {name} is not available: {reason}")]
    Unavailable { name: String, reason: String },
    #[error("the connector {name} is missing configuration ({} has no value); store it with `patchbay secret set NAME`", missing.join(", "))]
    MissingConfiguration { name: String, missing: Vec<String> },
    /// The upstream refused the credential and renewing did not help.
    #[error("{name} refused Patchbay's credential ({detail}): authorize {name} in Patchbay (the Authorize button, or `patchbay authorize {name}`)")]
    NeedsAuthorization { name: String, detail: String },
    /// A 403 `insufficient_scope`: the credential is good but grants too little, and no step-up
    /// could be (or was allowed to be) done here.
    #[error("{name} needs more access than Patchbay's credential grants (it asks for \"{scope}\"): {detail}")]
    NeedsMoreAccess {
        name: String,
        scope: String,
        detail: String,
    },
    /// A static credential (a header from the catalog) was refused; there is nothing to renew.
    #[error("{name} refused the credential in its {header} header: update it in Patchbay (`patchbay secret set VAR`)")]
    StaticCredentialRefused { name: String, header: String },
    #[error("cannot read {name}'s credential from the vault: {detail}")]
    Vault { name: String, detail: String },
    #[error("waited {}s for another renewal of {name}'s credential", RENEWAL_WAIT.as_secs())]
    RenewalBusy { name: String },
}

impl UpstreamError {
    /// The machine-readable kind a JSON-RPC error carries in `data.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            UpstreamError::NotFound(_) | UpstreamError::NoSuchUrl(_) => "not_in_use",
            UpstreamError::NotRemote(_) | UpstreamError::Unavailable { .. } => "unavailable",
            UpstreamError::MissingConfiguration { .. } => "missing_configuration",
            UpstreamError::NeedsAuthorization { .. }
            | UpstreamError::StaticCredentialRefused { .. } => "needs_authorization",
            UpstreamError::NeedsMoreAccess { .. } => "needs_more_access",
            UpstreamError::Vault { .. } => "vault_unavailable",
            UpstreamError::RenewalBusy { .. } => "renewal_busy",
        }
    }
}

/// Resolves connectors in use to upstreams; shares one renewal gate per connector so a burst of
/// 401s renews once. Cheap to clone.
#[derive(Clone)]
pub struct Upstreams {
    patchbay: Arc<Patchbay>,
    refresher: Option<Refresher>,
    gates: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    /// Consent for a running session (a refused credential that cannot be renewed, a step-up):
    /// only where someone can answer a browser (the stdio bridge's renew command).
    authorizer: Option<Authorizer>,
    /// The catalog and the names in use, shared by every resolve for [`Upstreams::snapshot_ttl`]:
    /// the gateway resolves each connector again every few seconds, and reading the catalogs
    /// and the clients once per connector made that grow with the square of the connectors.
    snapshot: Arc<Mutex<Option<Snapshot>>>,
    snapshot_ttl: Duration,
}

/// The catalog and the names of the connectors in use, as read at `at`.
struct Snapshot {
    at: Instant,
    read: Arc<(Catalog, BTreeSet<String>)>,
}

impl Upstreams {
    /// Without a refresher, a 401 only re-reads the vault (another process may have renewed).
    pub fn new(patchbay: Arc<Patchbay>, refresher: Option<Refresher>) -> Upstreams {
        Upstreams {
            patchbay,
            refresher,
            gates: Arc::default(),
            authorizer: None,
            snapshot: Arc::default(),
            snapshot_ttl: Duration::ZERO,
        }
    }

    /// These upstreams, sharing one read of the catalog and the connectors in use for `ttl`
    /// (none by default: every resolve reads them). Credentials are read at every resolve.
    pub fn with_snapshot_ttl(mut self, ttl: Duration) -> Upstreams {
        self.snapshot_ttl = ttl;
        self
    }

    /// The catalog and the names in use: the shared read while it is younger than the TTL. A
    /// read past its time is made by one caller while the others wait for it under the lock (a
    /// listing resolves every connector at once: each reading for itself would be the cost the
    /// snapshot is there to save).
    fn catalog_in_use(&self) -> Arc<(Catalog, BTreeSet<String>)> {
        if self.snapshot_ttl.is_zero() {
            return Arc::new(self.patchbay.catalog_in_use());
        }
        let mut kept = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(kept) = kept.as_ref().filter(|k| k.at.elapsed() < self.snapshot_ttl) {
            return kept.read.clone();
        }
        let at = Instant::now();
        let read = Arc::new(self.patchbay.catalog_in_use());
        *kept = Some(Snapshot {
            at,
            read: read.clone(),
        });
        read
    }

    /// These upstreams, authorizing in the system browser what renewing cannot mend: a credential
    /// refused after renewal (the authorization server changed, the grant was revoked) and a
    /// 403 `insufficient_scope` (a step-up). The request waits for consent up to the connector's
    /// `timeout_ms` ([`crate::stdio::DEFAULT_REQUEST_TIMEOUT`] when it sets none).
    pub fn with_authorizer(mut self, authorizer: Authorizer) -> Upstreams {
        self.authorizer = Some(authorizer);
        self
    }

    pub fn patchbay(&self) -> &Arc<Patchbay> {
        &self.patchbay
    }

    /// The connector in use named `name_or_url`, or (when it looks like a URL) the first
    /// connector in use whose upstream URL is that URL (trailing `/` and case of the scheme and
    /// host ignored).
    pub fn resolve(&self, name_or_url: &str) -> Result<Upstream, UpstreamError> {
        let read = self.catalog_in_use();
        let (catalog, in_use) = (&read.0, &read.1);
        let looks_like_url =
            name_or_url.starts_with("http://") || name_or_url.starts_with("https://");
        let entry = if looks_like_url {
            let wanted = patchbay_catalog::url_key(name_or_url);
            let resolve = |n: &str| self.patchbay.resolve_variable(n);
            catalog
                .servers()
                .filter(|e| in_use.contains(e.name.as_str()))
                .find(|e| {
                    e.transport
                        .url()
                        .and_then(|u| expand(u, &resolve).ok())
                        .is_some_and(|u| patchbay_catalog::url_key(&u) == wanted)
                })
                .ok_or_else(|| UpstreamError::NoSuchUrl(name_or_url.to_owned()))?
        } else {
            match catalog.get(name_or_url) {
                Some(CatalogItem::Server(e)) if in_use.contains(name_or_url) => e,
                Some(CatalogItem::Invalid(invalid)) if in_use.contains(name_or_url) => {
                    return Err(UpstreamError::Unavailable {
                        name: name_or_url.to_owned(),
                        reason: format!("its catalog entry is invalid: {}", invalid.error),
                    })
                }
                _ => return Err(UpstreamError::NotFound(name_or_url.to_owned())),
            }
        };
        self.upstream_of(entry)
    }

    fn upstream_of(&self, entry: &ServerEntry) -> Result<Upstream, UpstreamError> {
        let name = entry.name.as_str().to_owned();
        if let Some(reason) = &entry.unavailable {
            return Err(UpstreamError::Unavailable {
                name,
                reason: format!("declared unavailable: {reason}"),
            });
        }
        let (url, headers, transport) = match &entry.transport {
            Transport::Stdio { .. } => return Err(UpstreamError::NotRemote(name)),
            Transport::StreamableHttp { url, headers } => {
                (url, headers, UpstreamTransport::StreamableHttp)
            }
            Transport::Sse { url, headers } => (url, headers, UpstreamTransport::Sse),
        };
        let resolve = |n: &str| self.patchbay.resolve_variable(n);
        let mut expansion = patchbay_core::expansion::Expansion::new(&self.patchbay);
        let url = expansion.expand(url);
        let headers: Vec<(String, Secret)> = headers
            .iter()
            .map(|(k, v)| (k.clone(), Secret::new(expansion.expand(v))))
            .collect();
        let missing = expansion.missing().to_vec();
        if !missing.is_empty() {
            // A value the vault holds but its keychain would not open is not missing: say so.
            if let Some(Err(e)) = missing.first().map(|n| self.patchbay.vault().variable(n)) {
                return Err(UpstreamError::Vault {
                    name,
                    detail: e.to_string(),
                });
            }
            return Err(UpstreamError::MissingConfiguration { name, missing });
        }
        let static_credential_headers: Vec<String> = entry
            .static_credential_headers()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let oauth = entry.is_oauth_capable();
        let credential_key = match oauth {
            true => entry.credential_key(&resolve).ok().flatten(),
            false => None,
        };
        let gate = {
            let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
            gates.entry(name.clone()).or_default().clone()
        };
        let upstream = Upstream {
            name,
            url,
            transport,
            headers,
            static_credential_headers,
            oauth,
            credential_key,
            bearer: RwLock::new(None),
            timeout: entry.timeout_ms.map(|ms| Duration::from_millis(ms.into())),
            retry: entry.retry,
            patchbay: self.patchbay.clone(),
            refresher: self.refresher.clone(),
            authorizer: self.authorizer.clone(),
            gate,
        };
        *upstream.bearer.write().unwrap_or_else(|p| p.into_inner()) = upstream.stored_bearer()?;
        Ok(upstream)
    }
}

/// One connector's upstream. Shared between requests (`Arc<Upstream>`); the bearer is swapped
/// in place when it is renewed.
pub struct Upstream {
    name: String,
    url: String,
    transport: UpstreamTransport,
    /// The catalog entry's headers, `${VAR}`s expanded (API keys among them).
    headers: Vec<(String, Secret)>,
    static_credential_headers: Vec<String>,
    oauth: bool,
    credential_key: Option<CredentialKey>,
    bearer: RwLock<Option<Secret>>,
    timeout: Option<Duration>,
    retry: Option<patchbay_catalog::RetryPolicy>,
    patchbay: Arc<Patchbay>,
    refresher: Option<Refresher>,
    authorizer: Option<Authorizer>,
    gate: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("transport", &self.transport)
            .field("oauth", &self.oauth)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    /// The connector's name in the catalog.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The upstream URL, `${VAR}`s expanded.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn transport(&self) -> UpstreamTransport {
        self.transport
    }

    /// The entry's own headers (`${VAR}`s expanded), to send on every request. An OAuth
    /// connector's bearer is not among them: see [`Upstream::bearer`].
    pub fn headers(&self) -> &[(String, Secret)] {
        &self.headers
    }

    /// Whether Patchbay holds an OAuth credential for it (or could: no static credential header).
    pub fn is_oauth(&self) -> bool {
        self.oauth
    }

    /// The entry's `timeout_ms`: the bound on one upstream request.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The entry's `retry`: only for a request that never reached the upstream.
    pub fn retry(&self) -> Option<&patchbay_catalog::RetryPolicy> {
        self.retry.as_ref()
    }

    /// The OAuth access token to present as `Authorization: Bearer`, when there is one.
    pub fn bearer(&self) -> Option<Secret> {
        self.bearer
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every header to send: the entry's, then `Authorization: Bearer` for an OAuth connector
    /// holding a token (an entry's own `Authorization` wins).
    pub fn request_headers(&self) -> Vec<(String, Secret)> {
        with_bearer(self.headers.clone(), self.bearer())
    }

    /// Whether a refusal may be answered by asking the user for consent (a step-up).
    pub fn can_ask_consent(&self) -> bool {
        self.authorizer.is_some() && self.oauth && self.credential_key.is_some()
    }

    /// How long a request waits for the user's consent: the connector's bound on a request.
    fn consent_wait(&self) -> Duration {
        self.timeout
            .unwrap_or(crate::stdio::DEFAULT_REQUEST_TIMEOUT)
    }

    /// The upstream answered 401 to a request that carried `rejected` (the bearer it was sent
    /// with, from [`Upstream::bearer`]). Renews once for a burst of 401s: when the vault already
    /// holds another token (a concurrent renewal, the app's schedule, another process), that
    /// one is returned without refreshing; else the refresher of record renews it. When that
    /// cannot help because the resource now names another authorization server (SEP-2352) and
    /// these upstreams may ask for consent ([`Upstreams::with_authorizer`]), the connector is
    /// authorized there in the browser while the request waits (a registration of its own, none
    /// of the old server's). `Err` says to authorize the connector in Patchbay (or, for a static
    /// credential, to update it).
    pub async fn on_unauthorized(
        &self,
        rejected: Option<&Secret>,
    ) -> Result<Secret, UpstreamError> {
        // A resource that moved to another authorization server (SEP-2352) is authorized there:
        // renewing at the old one would only mint another token the resource refuses. Checked
        // only where consent can be asked, and only for a connector Patchbay holds a grant of.
        if let Some(authorizer) = &self.authorizer {
            if let Some(issuer) = self.moved_to(authorizer).await {
                return self.authorize_at(authorizer, &issuer, rejected).await;
            }
        }
        // A lapsed or revoked grant at the same server is said at once (docs/connect.md).
        self.renew(rejected).await
    }

    /// The issuer the resource names now, when it is not the grant's.
    async fn moved_to(&self, authorizer: &Authorizer) -> Option<String> {
        if self.credential_key.is_none() || self.bearer().is_none() {
            return None;
        }
        match authorizer.moved_authorization_server(&self.name).await {
            Ok(moved) => moved,
            Err(e) => {
                tracing::debug!(connector = self.name, error = %e, "cannot tell whether the authorization server moved");
                None
            }
        }
    }

    /// Consent at the authorization server `issuer` the resource moved to, while the request
    /// waits; one browser page for a burst of 401s.
    async fn authorize_at(
        &self,
        authorizer: &Authorizer,
        issuer: &str,
        rejected: Option<&Secret>,
    ) -> Result<Secret, UpstreamError> {
        let _consenting = self.consent_gate().await?;
        if let Some(current) = self.reload()? {
            if Some(&current) != rejected {
                return Ok(current);
            }
        }
        tracing::info!(
            connector = self.name,
            issuer,
            "the resource moved to another authorization server; asking for consent there"
        );
        authorizer
            .authorize_for_session(&self.name, self.consent_wait())
            .await
            .map_err(|e| UpstreamError::NeedsAuthorization {
                name: self.name.clone(),
                detail: e.to_string(),
            })?;
        self.reload()?
            .ok_or_else(|| UpstreamError::NeedsAuthorization {
                name: self.name.clone(),
                detail: "the authorization stored no token".into(),
            })
    }

    /// The upstream answered 403 `insufficient_scope` naming `scope`: a step-up. Authorizes the
    /// connector again for the scopes asked for before together with `scope` and hands back the
    /// new bearer (where consent can be asked, [`Upstreams::with_authorizer`]; at most
    /// [`patchbay_core::MAX_STEP_UPS`] times a session), else says what is needed.
    pub async fn on_insufficient_scope(&self, scope: &str) -> Result<Secret, UpstreamError> {
        let more = |detail: String| UpstreamError::NeedsMoreAccess {
            name: self.name.clone(),
            scope: scope.to_owned(),
            detail,
        };
        if !self.oauth || self.credential_key.is_none() {
            return Err(more("its credential is not one Patchbay authorizes".into()));
        }
        let Some(authorizer) = &self.authorizer else {
            self.want_scope(scope);
            return Err(more(format!(
                "authorize it again in Patchbay (`patchbay authorize {}`)",
                self.name
            )));
        };
        let _consenting = self.consent_gate().await?;
        let stepped = authorizer
            .step_up(&self.name, scope, self.consent_wait())
            .await;
        if let Err(e) = stepped {
            self.want_scope(scope);
            return Err(more(e.to_string()));
        }
        self.reload()?
            .ok_or_else(|| more("the authorization stored no token".into()))
    }

    /// Notes that the server asked for `scope` and did not get it, for the status ("needs more
    /// access") and the next Authorize (which asks for it too). A vault that cannot note it
    /// costs only the note.
    fn want_scope(&self, scope: &str) {
        let Some(key) = &self.credential_key else {
            return;
        };
        if let Err(e) = self
            .patchbay
            .vault()
            .want_scope(key, scope, self.patchbay.now())
        {
            tracing::warn!(connector = self.name, "cannot note the scope it wants: {e}");
        }
    }

    /// The renewal gate, for a consent: one browser page for a burst of refusals.
    async fn consent_gate(&self) -> Result<tokio::sync::MutexGuard<'_, ()>, UpstreamError> {
        tokio::time::timeout(self.consent_wait() + RENEWAL_WAIT, self.gate.lock())
            .await
            .map_err(|_| UpstreamError::RenewalBusy {
                name: self.name.clone(),
            })
    }

    /// Renewal only: the vault's newer token, else the refresher of record.
    async fn renew(&self, rejected: Option<&Secret>) -> Result<Secret, UpstreamError> {
        if !self.oauth {
            let header = self
                .static_credential_headers
                .first()
                .cloned()
                .unwrap_or_else(|| "Authorization".to_owned());
            return Err(UpstreamError::StaticCredentialRefused {
                name: self.name.clone(),
                header,
            });
        }
        let _renewing = tokio::time::timeout(RENEWAL_WAIT, self.gate.lock())
            .await
            .map_err(|_| UpstreamError::RenewalBusy {
                name: self.name.clone(),
            })?;
        if let Some(current) = self.reload()? {
            if Some(&current) != rejected {
                return Ok(current);
            }
        }
        let needs = |detail: String| UpstreamError::NeedsAuthorization {
            name: self.name.clone(),
            detail,
        };
        let Some(refresher) = &self.refresher else {
            return Err(needs(
                "the token was rejected and nothing here can renew it".into(),
            ));
        };
        if self.credential_key.is_none() || self.bearer().is_none() {
            return Err(needs("Patchbay holds no credential for it".into()));
        }
        let outcome = refresher.refresh(&self.name).await.map_err(|e| match e {
            e @ (CoreError::NoCredential { .. } | CoreError::TaskFailed { .. }) => {
                needs(e.to_string())
            }
            other => needs(format!("the renewal failed: {other}")),
        })?;
        match outcome {
            RefreshOutcome::Refreshed { .. } | RefreshOutcome::Adopted { .. } => {
                match self.reload()? {
                    Some(renewed) if Some(&renewed) != rejected => {
                        tracing::info!(connector = self.name, "renewed after a 401 upstream");
                        Ok(renewed)
                    }
                    _ => Err(needs("the renewed token is the one refused".into())),
                }
            }
            RefreshOutcome::NotDue => Err(needs("the refresher found nothing to renew".into())),
            RefreshOutcome::Skipped { reason } => Err(needs(reason)),
            RefreshOutcome::Failed { summary, .. } => Err(needs(summary)),
        }
    }

    /// Re-read the vault's token into the cache; returns it.
    fn reload(&self) -> Result<Option<Secret>, UpstreamError> {
        let current = self.stored_bearer()?;
        *self.bearer.write().unwrap_or_else(|p| p.into_inner()) = current.clone();
        Ok(current)
    }

    fn stored_bearer(&self) -> Result<Option<Secret>, UpstreamError> {
        let Some(key) = &self.credential_key else {
            return Ok(None);
        };
        match self.patchbay.vault().credential_tokens(key) {
            Ok(tokens) => Ok(tokens.map(|t| t.access_token)),
            Err(e) => Err(UpstreamError::Vault {
                name: self.name.clone(),
                detail: e.to_string(),
            }),
        }
    }
}

/// The scope of a 403 whose Bearer challenge says `insufficient_scope` (RFC 6750 §3.1), when
/// it names one: what a step-up asks for.
pub(crate) fn insufficient_scope(response: &reqwest::Response) -> Option<String> {
    if response.status() != reqwest::StatusCode::FORBIDDEN {
        return None;
    }
    response
        .headers()
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(patchbay_oauth::discovery::parse_www_authenticate)
        .find(|c| c.error.as_deref() == Some("insufficient_scope"))
        .and_then(|c| c.scope)
        .filter(|s| !s.trim().is_empty())
}

/// `headers` (an entry's own), then `Authorization: Bearer` when there is a bearer and the entry
/// sends no `Authorization` of its own (the entry's wins).
pub(crate) fn with_bearer(
    mut headers: Vec<(String, Secret)>,
    bearer: Option<Secret>,
) -> Vec<(String, Secret)> {
    let has_authorization = headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    if let (Some(bearer), false) = (bearer, has_authorization) {
        headers.push((
            "Authorization".to_owned(),
            Secret::new(format!("Bearer {}", bearer.expose())),
        ));
    }
    headers
}

#[cfg(test)]
mod tests {
    use patchbay_catalog::url_key;

    #[test]
    fn urls_compare_without_trailing_slash_or_case_of_host() {
        assert_eq!(
            url_key("HTTPS://Mcp.Example.com/mcp/"),
            url_key("https://mcp.example.com/mcp")
        );
        assert_ne!(
            url_key("https://mcp.example.com/mcp"),
            url_key("https://mcp.example.com/sse")
        );
    }
}
