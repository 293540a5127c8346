//! The gateway's listener: one loopback HTTP server on 127.0.0.1 and, when the machine has IPv6,
//! [::1], on a fixed port ([`DEFAULT_PORT`], 3119, beside the OAuth receiver's 3118). It serves
//! `/mcp/NAME` for every connector in use (see `proxy`; a legacy SSE connector's messages go to
//! `/mcp/NAME/message`) and `/mcp`, every connector in use as one server (see `aggregate`).
//!
//! Every request passes three gates before it reaches a connector, in this order:
//! - `Host` must name the gateway on loopback (`127.0.0.1:PORT`, `localhost:PORT`,
//!   `[::1]:PORT`), else 403: a DNS-rebinding page's requests carry its own host name. Two Host
//!   headers, or an absolute-form target naming another authority, are a 400 first.
//! - An `Origin`, when present, must be a loopback origin (`http(s)://127.0.0.1|localhost|[::1]`,
//!   any port), else 403 (the MCP transport spec's rule against DNS rebinding).
//! - A client secret minted by `patchbay gateway client add` (see `clients`), as
//!   `Authorization: Bearer <secret>` or `X-Patchbay-Client: <secret>`, else 401. A client
//!   limited to some connectors gets 403 for the others.
//!
//! Before those, loops: every request the gateway sends upstream carries [`HOP_HEADER`] with this
//! gateway's random id (drawn when it binds; set once, on the one HTTP client all upstream requests go through), and
//! a request that arrives carrying it is the gateway's own, come back (a connector whose URL
//! reaches the gateway): refused with 508 Loop Detected, so a loop ends after one hop instead of
//! recursing. Connectors whose URL is the gateway's own are refused before any request is sent
//! (`patchbay_catalog::own_gateway`); the header catches the forms that rule cannot see.

use crate::clients::{ClientRecord, Clients, CLIENT_HEADER};
use crate::upstream::{Upstream, UpstreamError, Upstreams};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use patchbay_check::{CallRecord, CallRecorder, HEALTH_FILE};
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The gateway's port unless told otherwise (the OAuth receiver has 3118).
pub const DEFAULT_PORT: u16 = patchbay_catalog::own_gateway::DEFAULT_GATEWAY_PORT;

/// Marks a request the gateway sent upstream; its value is that gateway's random id.
pub const HOP_HEADER: &str = "patchbay-gateway-hop";

/// What a client is told when its request is the gateway's own, come back.
const LOOP_MESSAGE: &str = "loop detected: this request came back to Patchbay's own gateway (a client config or catalog entry lists the gateway itself as a server); remove that entry";

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("cannot listen on {addr}: {source} (is another Patchbay gateway running? pick another port with --port)")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    #[error("cannot draw the gateway's random hop id: {0}")]
    Random(String),
}

/// The gateway's settings.
#[derive(Debug, Clone)]
pub struct GatewayOptions {
    /// 0: any free port (tests).
    pub port: u16,
    /// The largest request body accepted (JSON-RPC requests are small; they are buffered so a
    /// request refused with 401 can be replayed after renewal).
    pub body_limit: usize,
    /// The bound on an upstream answering (its headers) when the connector sets no `timeout_ms`.
    pub default_timeout: Duration,
    /// The bound on opening a connection upstream.
    pub connect_timeout: Duration,
    /// How long a resolved connector is used before it is resolved again (in the background).
    pub resolve_ttl: Duration,
    /// Record calls on the health board (`health.sqlite` in the data directory).
    pub record_health: bool,
    /// How long a connection may take to send a request's head: past it the connection is
    /// closed, so half-sent heads (no secret is needed to send one) cannot hold the gateway's
    /// descriptors from its clients.
    pub header_read_timeout: Duration,
    /// How many connections may wait for their first request's head at once; past it the one
    /// that waited longest is closed (see `connections`).
    pub max_unproven_connections: usize,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            port: DEFAULT_PORT,
            body_limit: 4 * 1024 * 1024,
            default_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            resolve_ttl: Duration::from_secs(5),
            record_health: true,
            header_read_timeout: Duration::from_secs(10),
            // Far below the 1,024 descriptors a process often gets, far above what the clients
            // of one desktop open at once.
            max_unproven_connections: 256,
        }
    }
}

/// The longest one read of the catalog and the connectors in use serves resolves.
const SNAPSHOT_TTL: Duration = Duration::from_secs(1);

/// What every request handler shares.
pub struct GatewayState {
    pub(crate) upstreams: Upstreams,
    pub(crate) clients: Clients,
    pub(crate) http: reqwest::Client,
    pub(crate) options: GatewayOptions,
    pub(crate) port: u16,
    resolved: Mutex<HashMap<String, Resolved>>,
    pub(crate) sessions: crate::sessions::Sessions,
    /// `/mcp/NAME` sessions of 2025 clients with 2026-07-28-only servers (`translated`).
    pub(crate) translated: crate::translated::Translated,
    health: Option<CallRecorder>,
    /// This process's id in [`HOP_HEADER`].
    hop: String,
    /// A loop was said in the log (once: a loop repeats).
    loop_said: AtomicBool,
    /// The gateway as an OAuth authorization server (`authorization`).
    pub(crate) authorization: crate::authorization::Authorization,
}

struct Resolved {
    at: Instant,
    upstream: Arc<Upstream>,
    refreshing: bool,
}

impl GatewayState {
    /// The connector's upstream: resolved once, then re-resolved in the background every
    /// `resolve_ttl` (a catalog or vault change shows up within it) while the last one serves.
    pub(crate) async fn upstream(
        self: &Arc<Self>,
        name: &str,
    ) -> Result<Arc<Upstream>, UpstreamError> {
        {
            let mut resolved = self.resolved.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(r) = resolved.get_mut(name) {
                if r.at.elapsed() > self.options.resolve_ttl && !r.refreshing {
                    r.refreshing = true;
                    let this = self.clone();
                    let name = name.to_owned();
                    tokio::spawn(async move {
                        let _ = this.resolve(&name).await;
                    });
                }
                return Ok(r.upstream.clone());
            }
        }
        self.resolve(name).await
    }

    async fn resolve(self: &Arc<Self>, name: &str) -> Result<Arc<Upstream>, UpstreamError> {
        let upstreams = self.upstreams.clone();
        let owned = name.to_owned();
        let result = tokio::task::spawn_blocking(move || {
            let upstream = upstreams.resolve(&owned)?;
            // Sending to ourselves would come back here: refused before anything is sent.
            if upstreams.patchbay().own_gateway().is_own(upstream.url()) {
                return Err(UpstreamError::Unavailable {
                    name: owned,
                    reason: "its URL is Patchbay's own gateway (it would list itself); remove it or give the server's own URL".into(),
                });
            }
            Ok(upstream)
        })
            .await
            .unwrap_or_else(|e| {
                Err(UpstreamError::Unavailable {
                    name: name.to_owned(),
                    reason: format!("resolving it crashed: {e}"),
                })
            });
        let mut resolved = self.resolved.lock().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(upstream) => {
                let upstream = Arc::new(upstream);
                resolved.insert(
                    name.to_owned(),
                    Resolved {
                        at: Instant::now(),
                        upstream: upstream.clone(),
                        refreshing: false,
                    },
                );
                Ok(upstream)
            }
            Err(e) => {
                resolved.remove(name);
                Err(e)
            }
        }
    }

    /// Hand a call to the health board's writer (off the request path).
    pub(crate) fn record(&self, call: CallRecord) {
        if let Some(recorder) = &self.health {
            recorder.record(call);
        }
    }
}

/// A bound gateway, not yet serving.
pub struct Gateway {
    state: Arc<GatewayState>,
    listeners: Vec<tokio::net::TcpListener>,
}

impl Gateway {
    /// Listen on 127.0.0.1 (required) and [::1] (when the machine has IPv6) at `options.port`.
    /// Must be called inside a Tokio runtime.
    pub async fn bind(
        upstreams: Upstreams,
        options: GatewayOptions,
    ) -> Result<Gateway, GatewayError> {
        let v4: SocketAddr = (Ipv4Addr::LOCALHOST, options.port).into();
        let first = crate::connections::listen(v4)
            .map_err(|source| GatewayError::Bind { addr: v4, source })?;
        let port = first.local_addr().map(|a| a.port()).unwrap_or(options.port);
        upstreams.patchbay().own_gateway().add_port(port);
        let mut listeners = vec![first];
        let v6: SocketAddr = (Ipv6Addr::LOCALHOST, port).into();
        match crate::connections::listen(v6) {
            Ok(l) => listeners.push(l),
            // No IPv6 on this machine (or [::1] taken): 127.0.0.1 serves alone.
            Err(e) => tracing::info!("the gateway listens on 127.0.0.1 only: [::1]:{port}: {e}"),
        }
        let hop = hop_id().map_err(|e| GatewayError::Random(e.to_string()))?;
        let mut marked = HeaderMap::new();
        marked.insert(
            HOP_HEADER,
            header::HeaderValue::from_str(&hop).map_err(|e| GatewayError::Random(e.to_string()))?,
        );
        let http = reqwest::Client::builder()
            // Every upstream request (proxy, aggregate) goes through this client: one place.
            .default_headers(marked)
            .connect_timeout(options.connect_timeout)
            // A redirect would leave the credential's origin; the client sees it instead.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| GatewayError::Client(e.to_string()))?;
        let data_dir = upstreams.patchbay().paths.data_dir.clone();
        let health = match options.record_health {
            true => health_writer(&data_dir),
            false => None,
        };
        // One read of the catalogs and clients serves every connector's resolve for a second
        // (each connector is resolved again every `resolve_ttl`).
        let upstreams = upstreams.with_snapshot_ttl(options.resolve_ttl.min(SNAPSHOT_TTL));
        let state = Arc::new(GatewayState {
            clients: Clients::new(&data_dir),
            authorization: crate::authorization::Authorization::new(&data_dir),
            upstreams,
            http,
            options,
            port,
            resolved: Mutex::default(),
            sessions: Default::default(),
            translated: Default::default(),
            health,
            hop,
            loop_said: AtomicBool::new(false),
        });
        Ok(Gateway { state, listeners })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.state.port
    }

    /// Its waiting consents, for the window; good for as long as the gateway serves.
    pub fn consent_desk(&self) -> crate::authorization::ConsentDesk {
        crate::authorization::ConsentDesk::new(Arc::clone(&self.state))
    }

    /// The addresses it listens on.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect()
    }

    /// Serve until `shutdown` resolves. Open streams are cut then (an SSE stream never ends on
    /// its own, so waiting for them would never end either).
    pub async fn serve(self, shutdown: impl std::future::Future<Output = ()> + Send) {
        let limits = crate::connections::ConnectionLimits {
            header_read_timeout: self.state.options.header_read_timeout,
            max_unproven: self.state.options.max_unproven_connections,
            ceiling: crate::connections::ceiling_for(self.state.options.max_unproven_connections),
        };
        // Patchbay's own stdio bridges ask this gateway for their connector's credential.
        #[cfg(unix)]
        let bridges = tokio::spawn(crate::bridge_socket::serve(self.state.upstreams.clone()));
        let app = router(self.state);
        let unproven = Arc::default();
        let mut servers = tokio::task::JoinSet::new();
        for listener in self.listeners {
            servers.spawn(crate::connections::accept(
                listener,
                app.clone(),
                limits,
                Arc::clone(&unproven),
            ));
        }
        shutdown.await;
        #[cfg(unix)]
        bridges.abort();
        servers.abort_all();
    }
}

/// The gateway's routes behind its gates.
fn router(state: Arc<GatewayState>) -> axum::Router {
    axum::Router::new()
        .route("/mcp/{name}", axum::routing::any(crate::proxy::proxy))
        .route(
            "/mcp/{name}/message",
            axum::routing::any(crate::proxy::proxy_message),
        )
        .route("/mcp", crate::aggregate::route())
        .merge(crate::authorization::routes())
        .layer(axum::middleware::from_fn_with_state(state.clone(), gates))
        .with_state(state)
}

/// Host, Origin and the client secret, in that order; the client found rides along. A refused
/// request's answer closes its connection: only a client with a secret keeps one open.
async fn gates(State(state): State<Arc<GatewayState>>, req: Request, next: Next) -> Response {
    match admit(&state, req) {
        Ok(req) => next.run(req).await,
        Err(mut refused) => {
            refused.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
            refused
        }
    }
}

/// The gates themselves: the request, with its client, or the answer that refuses it.
#[allow(clippy::result_large_err)]
fn admit(state: &GatewayState, mut req: Request) -> Result<Request, Response> {
    let headers = req.headers();
    if came_back(headers, &state.hop) {
        // Said once: each hop of a loop would say it again.
        if !state.loop_said.swap(true, Ordering::Relaxed) {
            tracing::warn!(path = req.uri().path(), "{LOOP_MESSAGE}");
        }
        return Err(loop_detected());
    }
    if let Some(why) = ambiguous_target(&req) {
        return Err(refuse(StatusCode::BAD_REQUEST, why));
    }
    if !host_allowed(headers, state.port) {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "the Host header does not name the Patchbay gateway on loopback",
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        if !origin_allowed(origin.to_str().unwrap_or("")) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "requests from web pages are not accepted (the Origin is not loopback)",
            ));
        }
    }
    // The authorization server's own routes are how a client without a secret gets one.
    if crate::authorization::is_open_path(req.uri().path()) {
        return Ok(req);
    }
    let metadata = crate::authorization::resource_metadata_url(headers, req.uri().path());
    let Some(secret) = presented_secret(headers) else {
        return Err(unauthorized(&metadata, false, "no Patchbay gateway client secret: sign in through your client (the gateway is an OAuth server), or send `Authorization: Bearer <secret>` from `patchbay gateway client add LABEL`"));
    };
    let client: ClientRecord = match state.clients.authenticate(&secret) {
        Ok(Some(client)) => client,
        Ok(None) => {
            return Err(unauthorized(
                &metadata,
                true,
                "unknown, lapsed or revoked Patchbay gateway client secret; sign in again through your client, or mint one with `patchbay gateway client add LABEL`",
            ))
        }
        Err(e) => {
            tracing::error!("cannot read the gateway's clients: {e}");
            return Err(refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the gateway cannot read its clients file",
            ));
        }
    };
    req.extensions_mut().insert(client);
    Ok(req)
}

/// 128 random bits, hex: the id this gateway marks its upstream requests with.
fn hop_id() -> Result<String, getrandom::Error> {
    let mut random = [0u8; 16];
    getrandom::getrandom(&mut random)?;
    Ok(random.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether the request carries this gateway's own hop id (any of its values).
fn came_back(headers: &HeaderMap, hop: &str) -> bool {
    headers
        .get_all(HOP_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim() == hop)
}

/// 508 Loop Detected with a JSON-RPC error, so an MCP client shows the message.
fn loop_detected() -> Response {
    (
        StatusCode::LOOP_DETECTED,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": -32000, "message": LOOP_MESSAGE },
        })
        .to_string(),
    )
        .into_response()
}

fn presented_secret(headers: &HeaderMap) -> Option<String> {
    if let Some(v) = headers.get(CLIENT_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(v.trim().to_owned());
    }
    let auth = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = auth.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

/// What makes a request's target ambiguous (HTTP/1.1, RFC 9112 §3.2: a request with more than
/// one Host, or whose absolute-form target names another authority than its Host, is answered
/// 400): a proxy in front or a rebinding page could mean one host and the gate check another.
fn ambiguous_target(req: &Request) -> Option<&'static str> {
    let headers = req.headers();
    let mut hosts = headers.get_all(header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Some("more than one Host header");
    }
    if let Some(authority) = req.uri().authority() {
        let same = host
            .and_then(|h| h.to_str().ok())
            .is_some_and(|h| h.eq_ignore_ascii_case(authority.as_str()));
        if !same {
            return Some("the request target names another host than the Host header");
        }
    }
    None
}

fn host_allowed(headers: &HeaderMap, port: u16) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let host = host.to_ascii_lowercase();
    let Some((name, host_port)) = host.rsplit_once(':') else {
        return false;
    };
    host_port.parse::<u16>() == Ok(port) && matches!(name, "127.0.0.1" | "localhost" | "[::1]")
}

fn origin_allowed(origin: &str) -> bool {
    let Ok(url) = url::Url::parse(origin) else {
        return false;
    };
    matches!(url.scheme(), "http" | "https")
        && patchbay_catalog::own_gateway::is_loopback_host(url.host())
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::json!({ "error": message }).to_string(),
    )
        .into_response()
}

/// 401 with our own challenge (never an upstream's): the client secret is what is missing. It
/// names the gateway's protected-resource metadata (RFC 9728), so a client that speaks MCP
/// authorization signs in with Patchbay as its authorization server; `presented`: a token came
/// and is not (or no longer) good.
fn unauthorized(metadata: &str, presented: bool, message: &str) -> Response {
    let mut response = refuse(StatusCode::UNAUTHORIZED, message);
    let error = if presented {
        ", error=\"invalid_token\""
    } else {
        ""
    };
    let challenge =
        format!("Bearer realm=\"patchbay-gateway\", resource_metadata=\"{metadata}\"{error}");
    if let Ok(value) = header::HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The health board's writer for the gateway's calls (off the request path).
fn health_writer(data_dir: &std::path::Path) -> Option<CallRecorder> {
    match CallRecorder::open(&data_dir.join(HEALTH_FILE), "the gateway's calls") {
        Ok(recorder) => Some(recorder),
        Err(e) => {
            tracing::warn!("the gateway's calls will not reach the health board: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_and_origins_pass() {
        let with_host = |h: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::HOST, h.parse().unwrap());
            m
        };
        for ok in [
            "127.0.0.1:3119",
            "localhost:3119",
            "[::1]:3119",
            "LOCALHOST:3119",
        ] {
            assert!(host_allowed(&with_host(ok), 3119), "{ok}");
        }
        for bad in [
            "127.0.0.1:3118",
            "evil.example:3119",
            "127.0.0.1",
            "localhost.evil.example:3119",
            "127.0.0.2:3119",
        ] {
            assert!(!host_allowed(&with_host(bad), 3119), "{bad}");
        }
        assert!(!host_allowed(&HeaderMap::new(), 3119));
        for ok in [
            "http://localhost:6274",
            "http://127.0.0.1",
            "https://[::1]:8443",
        ] {
            assert!(origin_allowed(ok), "{ok}");
        }
        for bad in [
            "null",
            "https://evil.example",
            "http://localhost.evil.example",
            "file://",
        ] {
            assert!(!origin_allowed(bad), "{bad}");
        }
    }
}
