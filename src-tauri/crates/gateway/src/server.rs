//! The gateway's listener: one loopback HTTP server on 127.0.0.1 and, when the machine has IPv6,
//! [::1], on a fixed port ([`DEFAULT_PORT`], 3119, beside the OAuth receiver's 3118). It serves
//! `/mcp/NAME` for every connector in use (see `proxy`; a legacy SSE connector's messages go to
//! `/mcp/NAME/message`) and `/mcp`, every connector in use as one server (see `aggregate`).
//!
//! Every request passes three gates before it reaches a connector, in this order:
//! - `Host` must name the gateway on loopback (`127.0.0.1:PORT`, `localhost:PORT`,
//!   `[::1]:PORT`), else 403: a DNS-rebinding page's requests carry its own host name.
//! - An `Origin`, when present, must be a loopback origin (`http(s)://127.0.0.1|localhost|[::1]`,
//!   any port), else 403 (the MCP transport spec's rule against DNS rebinding).
//! - A client secret minted by `patchbay gateway client add` (see `clients`), as
//!   `Authorization: Bearer <secret>` or `X-Patchbay-Client: <secret>`, else 401. A client
//!   limited to some connectors gets 403 for the others.

use crate::clients::{ClientRecord, Clients, CLIENT_HEADER};
use crate::upstream::{Upstream, UpstreamError, Upstreams};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use patchbay_check::{CallRecord, HealthStore, HEALTH_FILE};
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The gateway's port unless told otherwise (the OAuth receiver has 3118).
pub const DEFAULT_PORT: u16 = 3119;

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("cannot listen on {addr}: {source} (is another Patchbay gateway running? pick another port with --port)")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
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
        }
    }
}

/// What every request handler shares.
pub struct GatewayState {
    pub(crate) upstreams: Upstreams,
    pub(crate) clients: Clients,
    pub(crate) http: reqwest::Client,
    pub(crate) options: GatewayOptions,
    pub(crate) port: u16,
    resolved: Mutex<HashMap<String, Resolved>>,
    pub(crate) sessions: crate::sessions::Sessions,
    health: Option<tokio::sync::mpsc::UnboundedSender<CallRecord>>,
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
        let result = tokio::task::spawn_blocking(move || upstreams.resolve(&owned))
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
        if let Some(sink) = &self.health {
            let _ = sink.send(call);
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
        let first = tokio::net::TcpListener::bind(v4)
            .await
            .map_err(|source| GatewayError::Bind { addr: v4, source })?;
        let port = first.local_addr().map(|a| a.port()).unwrap_or(options.port);
        let mut listeners = vec![first];
        let v6: SocketAddr = (Ipv6Addr::LOCALHOST, port).into();
        match tokio::net::TcpListener::bind(v6).await {
            Ok(l) => listeners.push(l),
            // No IPv6 on this machine (or [::1] taken): 127.0.0.1 serves alone.
            Err(e) => tracing::info!("the gateway listens on 127.0.0.1 only: [::1]:{port}: {e}"),
        }
        let http = reqwest::Client::builder()
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
        let state = Arc::new(GatewayState {
            clients: Clients::new(&data_dir),
            upstreams,
            http,
            options,
            port,
            resolved: Mutex::default(),
            sessions: Default::default(),
            health,
        });
        Ok(Gateway { state, listeners })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.state.port
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
        use axum::serve::ListenerExt;
        let app = router(self.state);
        let mut servers = tokio::task::JoinSet::new();
        for listener in self.listeners {
            let listener = listener.tap_io(|tcp| {
                // Small JSON-RPC messages: do not wait to fill a segment.
                let _ = tcp.set_nodelay(true);
            });
            let app = app.clone();
            servers.spawn(async move {
                if let Err(e) = axum::serve(listener, app).await {
                    tracing::error!("the gateway stopped serving: {e}");
                }
            });
        }
        shutdown.await;
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
        .layer(axum::middleware::from_fn_with_state(state.clone(), gates))
        .with_state(state)
}

/// Host, Origin and the client secret, in that order; the client found rides along.
async fn gates(State(state): State<Arc<GatewayState>>, mut req: Request, next: Next) -> Response {
    let headers = req.headers();
    if !host_allowed(headers, state.port) {
        return refuse(
            StatusCode::FORBIDDEN,
            "the Host header does not name the Patchbay gateway on loopback",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        if !origin_allowed(origin.to_str().unwrap_or("")) {
            return refuse(
                StatusCode::FORBIDDEN,
                "requests from web pages are not accepted (the Origin is not loopback)",
            );
        }
    }
    let Some(secret) = presented_secret(headers) else {
        return unauthorized("no Patchbay gateway client secret: send `Authorization: Bearer <secret>` from `patchbay gateway client add LABEL`");
    };
    let client: ClientRecord = match state.clients.authenticate(&secret) {
        Ok(Some(client)) => client,
        Ok(None) => {
            return unauthorized(
                "unknown or revoked Patchbay gateway client secret; mint one with `patchbay gateway client add LABEL`",
            )
        }
        Err(e) => {
            tracing::error!("cannot read the gateway's clients: {e}");
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the gateway cannot read its clients file",
            );
        }
    };
    req.extensions_mut().insert(client);
    next.run(req).await
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
        && matches!(
            url.host(),
            Some(url::Host::Domain("localhost"))
                | Some(url::Host::Ipv4(Ipv4Addr::LOCALHOST))
                | Some(url::Host::Ipv6(Ipv6Addr::LOCALHOST))
        )
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::json!({ "error": message }).to_string(),
    )
        .into_response()
}

/// 401 with our own challenge (never an upstream's): the client secret is what is missing.
fn unauthorized(message: &str) -> Response {
    let mut response = refuse(StatusCode::UNAUTHORIZED, message);
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"patchbay-gateway\""),
    );
    response
}

/// A task that writes calls to the health board in batches, off the request path.
fn health_writer(
    data_dir: &std::path::Path,
) -> Option<tokio::sync::mpsc::UnboundedSender<CallRecord>> {
    let store = match HealthStore::open(&data_dir.join(HEALTH_FILE)) {
        Ok(store) => Arc::new(store),
        Err(e) => {
            tracing::warn!("the gateway's calls will not reach the health board: {e}");
            return None;
        }
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<CallRecord>();
    tokio::spawn(async move {
        let mut batch = Vec::new();
        while rx.recv_many(&mut batch, 256).await > 0 {
            let calls = std::mem::take(&mut batch);
            let store = store.clone();
            let written = tokio::task::spawn_blocking(move || store.record_calls(&calls)).await;
            if let Ok(Err(e)) = written {
                tracing::warn!("cannot record gateway calls on the health board: {e}");
            }
        }
    });
    Some(tx)
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
