//! The aggregate's link to one connector: the official SDK's client (rmcp's `RunningService`)
//! over the bridge's HTTP layer (`stdio::upstream_http`), so the gateway has one MCP client for
//! HTTP, not two.
//!
//! - The revision is negotiated per server as the connection check does it
//!   ([`patchbay_check::handshake::negotiated_lifecycle`]): `server/discover` at 2026-07-28
//!   first, `initialize` at 2025-11-25 for a server that answers it as a legacy one. rmcp then
//!   sends what that revision wants on every request (the 2025 session id, or 2026-07-28's
//!   `_meta`, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`), begins a 2025
//!   session again when the server lost it (a 404) and sends the request once more.
//! - The HTTP layer carries the connector's credentials as they are now ([`Current`]: the
//!   gateway resolves a connector again now and then, a new bearer from the vault among what
//!   changes), renews a 401 through the refresher of record and steps a 403
//!   `insufficient_scope` up, each once per request. A refused connection is not retried here:
//!   the aggregate answers at once and reconnects in the background.
//! - The lists are the aggregate's to keep (rmcp's own response cache is off); a
//!   `notifications/{tools,prompts,resources}/list_changed` from the connector, in an answer's
//!   stream or the session's own, marks its lists changed ([`Listener`]).

use super::Failure;
use crate::stdio::upstream_http::{UpstreamHttp, UpstreamHttpError};
use crate::stdio::Credentials;
use crate::upstream::Upstream;
use patchbay_vault::Secret;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientRequest, Implementation, ServerCapabilities,
};
use rmcp::service::{
    ClientServiceExt, NotificationContext, PeerRequestOptions, RoleClient, RunningService,
    ServiceError,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ClientHandler;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// One connector's link: rmcp's client session and the credentials it sends.
pub(crate) struct Link {
    service: RunningService<RoleClient, Listener>,
    current: Arc<Current>,
    /// The URL it was opened for: a connector whose URL changed gets a new link.
    url: String,
    /// Bumped per link of a connector: a failure on an older link does not end a newer one.
    pub(crate) generation: u64,
}

impl Link {
    /// Opens a link to `upstream` on the gateway's HTTP client (the handshake bounded by
    /// `bound`), hearing list changes in `changed`.
    pub(crate) async fn open(
        http: reqwest::Client,
        upstream: Arc<Upstream>,
        changed: Arc<AtomicBool>,
        bound: Duration,
        generation: u64,
    ) -> Result<Link, Failure> {
        let url = upstream.url().to_owned();
        let current = Arc::new(Current {
            name: upstream.name().to_owned(),
            url: url.clone(),
            upstream: RwLock::new(upstream),
        });
        let http = UpstreamHttp::with_client(http, current.clone(), bound).without_reconnects();
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
        // A 2025 server that answers `initialize` without a session is fine.
        config.allow_stateless = true;
        config.retry_config = crate::stdio::stream_backoff();
        let transport = StreamableHttpClientTransport::with_client(http, config);
        let listener = Listener { changed };
        let service = tokio::time::timeout(
            bound,
            listener
                .serve_with_lifecycle(transport, patchbay_check::handshake::negotiated_lifecycle()),
        )
        .await
        .map_err(|_| Failure::TimedOut(bound))?
        .map_err(|e| match transport_failure(&e) {
            Some(failure) => failure,
            None => Failure::Protocol(format!("it refused the handshake: {e}")),
        })?;
        // The aggregate keeps the lists itself, renewed on its own terms (`ttlMs`, a bounded
        // default, `list_changed`): a second cache under it would answer a renewal from memory.
        service
            .peer()
            .set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
            .await;
        Ok(Link {
            service,
            current,
            url,
            generation,
        })
    }

    /// Whether the link can carry requests to `upstream` (its session alive, the same URL);
    /// the credentials it sends become `upstream`'s.
    pub(crate) fn serves(&self, upstream: &Arc<Upstream>) -> bool {
        if self.url != upstream.url() || self.is_closed() {
            return false;
        }
        *self
            .current
            .upstream
            .write()
            .unwrap_or_else(|p| p.into_inner()) = upstream.clone();
        true
    }

    /// Whether rmcp ended the session (its transport failed for good).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// What the server said it offers.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        self.service
            .peer_info()
            .map(|info| info.capabilities.clone())
            .unwrap_or_default()
    }

    /// The server's name and version, when it gave them.
    pub(crate) fn server_info(&self) -> Option<serde_json::Value> {
        let info = self.service.peer_info()?.server_info.clone()?;
        serde_json::to_value(info).ok()
    }

    /// The server's instructions, when it gave some.
    pub(crate) fn instructions(&self) -> Option<String> {
        self.service.peer_info()?.instructions.clone()
    }

    /// The revision negotiated.
    pub(crate) fn revision(&self) -> String {
        self.service
            .peer_info()
            .map(|info| info.protocol_version.to_string())
            .unwrap_or_default()
    }

    /// One request (`method` with `params`), bounded by `bound`: `Ok(Ok(result))`,
    /// `Ok(Err(error))` for the connector's own JSON-RPC error, or why there is no answer.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        bound: Duration,
    ) -> Result<Result<Value, Value>, Failure> {
        let mut message = serde_json::json!({ "method": method });
        if let Some(params) = params.filter(|p| !p.is_null()) {
            message["params"] = params;
        }
        let request: ClientRequest = serde_json::from_value(message)
            .map_err(|e| Failure::Invalid(format!("{method}: {e}")))?;
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(bound);
        let outcome = async {
            self.service
                .peer()
                .send_request_with_option(request, options)
                .await?
                .await_response()
                .await
        };
        // rmcp's own bound ends the request (and says so upstream); this one covers the send.
        let outcome = tokio::time::timeout(bound + Duration::from_millis(100), outcome)
            .await
            .unwrap_or(Err(ServiceError::Timeout { timeout: bound }));
        match outcome {
            Ok(result) => {
                let mut value = serde_json::to_value(result)
                    .map_err(|e| Failure::Protocol(format!("its answer: {e}")))?;
                // 2026-07-28's discriminator: the aggregate says its own to its clients.
                if let Some(object) = value.as_object_mut() {
                    object.remove("resultType");
                }
                Ok(Ok(value))
            }
            Err(ServiceError::McpError(error)) => Ok(Err(serde_json::to_value(error)
                .unwrap_or_else(|_| serde_json::json!({ "code": -32603, "message": "error" })))),
            Err(ServiceError::Timeout { timeout }) => Err(Failure::TimedOut(timeout)),
            Err(ServiceError::TransportClosed) => {
                Err(Failure::Dropped("the connection to it closed".into()))
            }
            Err(ServiceError::TransportSend(e)) => {
                Err(http_failure(e.error.as_ref())
                    .unwrap_or_else(|| Failure::Dropped(e.to_string())))
            }
            Err(ServiceError::UnexpectedResponse) => Err(Failure::Protocol(
                "an answer of another kind than the request's".into(),
            )),
            Err(e) => Err(Failure::Untranslatable(e.to_string())),
        }
    }

    /// Ends the session (rmcp deletes a 2025 one), in the background.
    pub(crate) fn close(self) {
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(5), self.service.cancel()).await;
        });
    }
}

/// The HTTP layer's failure inside an rmcp handshake error, when that is what it was (for a
/// legacy server that failed both ways, the fallback's: the server's own answer to
/// `initialize` says more than its refusal of `server/discover`).
fn transport_failure(e: &rmcp::service::ClientInitializeError) -> Option<Failure> {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::TransportError { error, .. } => http_failure(error.error.as_ref()),
        E::LegacyFallbackFailed { discover, fallback } => {
            transport_failure(fallback).or_else(|| transport_failure(discover))
        }
        _ => None,
    }
}

/// `error` as a [`Failure`], when it is the HTTP layer's.
fn http_failure(error: &(dyn std::error::Error + 'static)) -> Option<Failure> {
    let http = error.downcast_ref::<StreamableHttpError<UpstreamHttpError>>()?;
    Some(match http {
        StreamableHttpError::Client(e) => match e {
            UpstreamHttpError::Unreached(why) => Failure::Unreached(why.clone()),
            UpstreamHttpError::Dropped(why) => Failure::Dropped(why.clone()),
            UpstreamHttpError::NeedsAuthorization(why) => Failure::NeedsAuthorization(why.clone()),
            UpstreamHttpError::NeedsMoreAccess(why) => Failure::NeedsMoreAccess(why.clone()),
            UpstreamHttpError::Status { status, detail } => Failure::Status {
                status: *status,
                detail: detail.clone(),
            },
        },
        StreamableHttpError::SessionExpired
        | StreamableHttpError::SessionRecoveryTimeout
        | StreamableHttpError::ReinitializationFailed(_) => Failure::SessionGone,
        other => Failure::Dropped(other.to_string()),
    })
}

/// The connector as the gateway resolved it last (its name and URL are the link's own: a
/// connector whose URL changed gets a new link).
struct Current {
    name: String,
    url: String,
    upstream: RwLock<Arc<Upstream>>,
}

impl Current {
    fn now(&self) -> Arc<Upstream> {
        self.upstream
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Credentials for Current {
    fn connector(&self) -> &str {
        &self.name
    }

    fn url(&self) -> &str {
        &self.url
    }

    fn timeout(&self) -> Option<Duration> {
        self.now().timeout()
    }

    fn headers(&self) -> Vec<(String, Secret)> {
        self.now().request_headers()
    }

    fn bearer(&self) -> Option<Secret> {
        self.now().bearer()
    }

    async fn renew(&self, rejected: Option<Secret>) -> Result<(), String> {
        let upstream = self.now();
        Credentials::renew(upstream.as_ref(), rejected).await
    }

    async fn step_up(&self, scope: String) -> Result<(), String> {
        let upstream = self.now();
        Credentials::step_up(upstream.as_ref(), scope).await
    }
}

/// Hears a connector's list changes.
struct Listener {
    changed: Arc<AtomicBool>,
}

impl Listener {
    fn heard(&self, what: &str) -> std::future::Ready<()> {
        tracing::debug!("the connector's {what} changed; listing them again");
        self.changed.store(true, Ordering::SeqCst);
        std::future::ready(())
    }
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.heard("tools")
    }

    fn on_prompt_list_changed(
        &self,
        _: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.heard("prompts")
    }

    fn on_resource_list_changed(
        &self,
        _: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.heard("resources")
    }

    fn get_info(&self) -> ClientConfig {
        let mut implementation = Implementation::new("patchbay-gateway", env!("CARGO_PKG_VERSION"));
        implementation.title = Some("Patchbay gateway (aggregate)".into());
        ClientConfig::new(ClientCapabilities::default(), implementation)
    }
}
