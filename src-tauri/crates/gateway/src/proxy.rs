//! `/mcp/NAME`: a streaming reverse proxy for MCP streamable HTTP. POST, GET and DELETE pass
//! through with their headers (`Mcp-Session-Id`, `Last-Event-ID`, `MCP-Protocol-Version`,
//! `Accept`, ...) and the connector's credential in place of the client's secret; the answer
//! streams back chunk by chunk as it arrives (an SSE stream is never buffered), minus the
//! upstream's `WWW-Authenticate`: a 401 upstream is Patchbay's to answer. It renews the
//! credential once and replays the request (bodies are buffered up to a limit for this); when
//! that does not help, the client gets a JSON-RPC error that says to authorize in Patchbay.
//!
//! A legacy HTTP+SSE connector passes through too: `GET /mcp/NAME` is its stream, whose `endpoint`
//! event is rewritten to `/mcp/NAME/message?to=PATH` (PATH only on the connector's own server),
//! where the client's messages go, credential injected, to that endpoint.
//!
//! A connector's `timeout_ms` bounds each upstream exchange; its `retry` applies only to a
//! request that never reached the upstream (the connection was refused), so a `tools/call` that
//! may have run is never sent twice. Every `tools/call`, and every request that failed here,
//! goes to the health board.

use crate::clients::{ClientRecord, CLIENT_HEADER};
use crate::server::GatewayState;
use crate::sessions::MCP_SESSION_ID;
use crate::upstream::{Upstream, UpstreamError, UpstreamTransport};
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use http_body_util::BodyExt;
use patchbay_check::{CallRecord, TransportKind};
use patchbay_vault::Secret;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The JSON-RPC error code of the gateway's own errors (the implementation-defined range).
const GATEWAY_ERROR: i64 = -32001;

/// Headers that belong to one hop (RFC 9110 §7.6.1) or to the client's side of the gateway.
const NOT_FORWARDED: &[&str] = &[
    "host",
    "authorization",
    CLIENT_HEADER,
    // Ours is set on every upstream request; a client's copy must not stand in for it.
    crate::server::HOP_HEADER,
    "origin",
    "referer",
    "cookie",
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

/// Upstream answer headers that never reach the client.
const NOT_RETURNED: &[&str] = &[
    "www-authenticate",
    "set-cookie",
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The parts of a JSON-RPC message the gateway looks at.
#[derive(Default, serde::Deserialize)]
struct Peek {
    method: Option<String>,
    id: Option<serde_json::Value>,
}

/// Why an exchange with the upstream failed.
enum Failure {
    /// The upstream could not be resolved (unknown, not in use, missing configuration).
    Resolve(UpstreamError),
    /// The credential was refused and renewing did not help.
    Refused(UpstreamError),
    /// Never got an answer: refused connection, timeout, reset.
    Unreachable(String),
}

/// Which of a connector's paths a request came to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    /// `/mcp/NAME`: the streamable-HTTP endpoint, or a legacy SSE connector's stream (GET).
    Endpoint,
    /// `/mcp/NAME/message?to=PATH`: where a legacy SSE connector takes its messages (the
    /// `endpoint` event its stream sent, rewritten to come through the gateway).
    SseMessage,
}

pub(crate) async fn proxy(
    state: State<Arc<GatewayState>>,
    name: Path<String>,
    client: Extension<ClientRecord>,
    req: Request,
) -> Response {
    forward(state, name, client, req, Route::Endpoint).await
}

pub(crate) async fn proxy_message(
    state: State<Arc<GatewayState>>,
    name: Path<String>,
    client: Extension<ClientRecord>,
    req: Request,
) -> Response {
    forward(state, name, client, req, Route::SseMessage).await
}

async fn forward(
    State(state): State<Arc<GatewayState>>,
    Path(name): Path<String>,
    Extension(client): Extension<ClientRecord>,
    req: Request,
    route: Route,
) -> Response {
    if !client.allows(&name) {
        return gateway_error(
            StatusCode::FORBIDDEN,
            None,
            &format!(
                "the gateway client \"{}\" may not use the connector {name}",
                client.label
            ),
        );
    }
    let (parts, body) = req.into_parts();
    let body = match http_body_util::Limited::new(body, state.options.body_limit)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return gateway_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
                &format!(
                    "the request body could not be read (at most {} bytes): {e}",
                    state.options.body_limit
                ),
            )
        }
    };
    let peek: Peek = match parts.method {
        Method::POST => serde_json::from_slice(&body).unwrap_or_default(),
        _ => Peek::default(),
    };
    let is_call = peek.method.as_deref() == Some("tools/call");
    let started = Instant::now();
    let mut rewrite_endpoint = false;
    let outcome = match state.upstream(&name).await {
        Ok(upstream) => {
            let url = match (route, upstream.transport(), &parts.method) {
                (Route::Endpoint, UpstreamTransport::StreamableHttp, _) => {
                    with_query(upstream.url(), parts.uri.query())
                }
                (Route::Endpoint, UpstreamTransport::Sse, &Method::GET) => {
                    rewrite_endpoint = true;
                    with_query(upstream.url(), parts.uri.query())
                }
                // What a legacy SSE server answers a streamable-HTTP POST: a client that falls
                // back (the MCP SDK's does on a 4xx) opens the stream with GET next.
                (Route::Endpoint, UpstreamTransport::Sse, _) => {
                    return gateway_error(
                        StatusCode::METHOD_NOT_ALLOWED,
                        peek.id,
                        &format!("{name} speaks the legacy HTTP+SSE transport: GET /mcp/{name} opens its stream (configure the client with type sse)"),
                    )
                }
                (Route::SseMessage, UpstreamTransport::Sse, _) => {
                    match message_target(upstream.url(), parts.uri.query()) {
                        Some(url) => url,
                        None => {
                            return gateway_error(
                                StatusCode::BAD_REQUEST,
                                peek.id,
                                &format!("not a message endpoint of {name} (the `to` path must be on its server)"),
                            )
                        }
                    }
                }
                (Route::SseMessage, UpstreamTransport::StreamableHttp, _) => {
                    return gateway_error(
                        StatusCode::NOT_FOUND,
                        peek.id,
                        &format!("{name} speaks streamable HTTP: send its messages to /mcp/{name}"),
                    )
                }
            };
            if upstream.transport() == UpstreamTransport::StreamableHttp {
                if let Some(response) =
                    in_translated_session(&state, &upstream, &name, &parts, &body, &peek).await
                {
                    return response;
                }
                let initialize = peek.method.as_deref() == Some("initialize");
                match with_session(&state, &upstream, &name, &parts, &url, body.clone(), &peek)
                    .await
                {
                    Ok(answer) if initialize && answer.status() == StatusCode::BAD_REQUEST => {
                        return refused_initialize(&state, &upstream, answer, &body).await
                    }
                    other => other.map(|r| (upstream, r)),
                }
            } else {
                exchange(&state, &upstream, &parts.method, &url, &parts.headers, body)
                    .await
                    .map(|r| (upstream, r))
            }
        }
        Err(e) => Err(Failure::Resolve(e)),
    };
    let latency = started.elapsed();
    tracing::debug!(
        connector = name,
        method = %parts.method,
        rpc = peek.method.as_deref().unwrap_or("-"),
        status = outcome.as_ref().map(|(_, a)| a.status().as_u16()).unwrap_or(0),
        ms = latency.as_millis() as u64,
        "proxied"
    );
    match outcome {
        Ok((upstream, answer)) => {
            let status = answer.status();
            if is_call || status.is_server_error() {
                state.record(CallRecord {
                    connector: name.clone(),
                    at: chrono::Utc::now(),
                    latency,
                    transport: kind_of(&upstream),
                    http_status: Some(status.as_u16()),
                    error: (!status.is_success()).then(|| {
                        format!(
                            "{} answered HTTP {status}",
                            peek.method.as_deref().unwrap_or("a request")
                        )
                    }),
                });
            }
            let sse = answer
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/event-stream"));
            let rewrite = match rewrite_endpoint && status.is_success() && sse {
                true => Some(EndpointRewrite {
                    upstream: upstream.url().to_owned(),
                    connector: name,
                }),
                false => None,
            };
            respond(
                answer,
                deadline_for(&upstream, &parts.method, started),
                rewrite,
            )
        }
        Err(failure) => {
            let (status, message) = match &failure {
                Failure::Resolve(UpstreamError::NotFound(_)) => {
                    (StatusCode::NOT_FOUND, failure_text(&failure))
                }
                Failure::Resolve(_) => (StatusCode::SERVICE_UNAVAILABLE, failure_text(&failure)),
                Failure::Refused(_) => (StatusCode::BAD_GATEWAY, failure_text(&failure)),
                Failure::Unreachable(_) => (StatusCode::BAD_GATEWAY, failure_text(&failure)),
            };
            if !matches!(failure, Failure::Resolve(UpstreamError::NotFound(_))) {
                state.record(CallRecord {
                    connector: name,
                    at: chrono::Utc::now(),
                    latency,
                    transport: TransportKind::StreamableHttp,
                    http_status: matches!(failure, Failure::Refused(_)).then_some(401),
                    error: Some(message.clone()),
                });
            }
            gateway_error(status, peek.id, &message)
        }
    }
}

/// A request in a translated session (`translated`: a 2025 client, a 2026-07-28-only server),
/// answered here; `None` when the client's session is not one.
async fn in_translated_session(
    state: &GatewayState,
    upstream: &Upstream,
    name: &str,
    parts: &axum::http::request::Parts,
    body: &Bytes,
    peek: &Peek,
) -> Option<Response> {
    let id = parts.headers.get(MCP_SESSION_ID)?.to_str().ok()?;
    let link = state.translated.link(name, id)?;
    Some(match parts.method {
        Method::POST => {
            let message: serde_json::Value = match serde_json::from_slice(body) {
                Ok(m) => m,
                Err(e) => {
                    return Some(gateway_error(
                        StatusCode::BAD_REQUEST,
                        None,
                        &format!("Parse error: {e}"),
                    ))
                }
            };
            let started = Instant::now();
            let (response, error) =
                crate::translated::message(state, upstream, &link, &message).await;
            if peek.method.as_deref() == Some("tools/call") || error.is_some() {
                state.record(CallRecord {
                    connector: name.to_owned(),
                    at: chrono::Utc::now(),
                    latency: started.elapsed(),
                    transport: TransportKind::StreamableHttp,
                    http_status: Some(200),
                    error,
                });
            }
            response
        }
        Method::DELETE => {
            state.translated.end(name, id);
            StatusCode::OK.into_response()
        }
        _ => gateway_error(
            StatusCode::METHOD_NOT_ALLOWED,
            None,
            &format!("{name} speaks MCP 2026-07-28 only and Patchbay translates this session: it has no server stream"),
        ),
    })
}

/// A 400 to a client's `initialize`: when it is a 2026-07-28-only server's refusal of 2025, a
/// translated session begun in its place; otherwise the refusal, as it came.
async fn refused_initialize(
    state: &Arc<GatewayState>,
    upstream: &Arc<Upstream>,
    answer: reqwest::Response,
    request: &Bytes,
) -> Response {
    let status = answer.status();
    let content_type = answer.headers().get(header::CONTENT_TYPE).cloned();
    let bound = upstream.timeout().unwrap_or(state.options.default_timeout);
    let bytes = match tokio::time::timeout(bound, answer.bytes()).await {
        Ok(Ok(bytes)) => bytes,
        _ => Bytes::new(),
    };
    if crate::translated::refuses_2025(&bytes) {
        if let Ok(message) = serde_json::from_slice::<serde_json::Value>(request) {
            match crate::translated::begin(state, upstream, &message).await {
                Ok(response) => return response,
                Err(failure) => tracing::warn!(
                    connector = upstream.name(),
                    "cannot speak 2026-07-28 for the client: {}",
                    failure.message(upstream.name(), "server/discover")
                ),
            }
        }
    }
    let mut response = (status, bytes).into_response();
    if let Some(content_type) = content_type {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type);
    }
    response
}

/// A streamable-HTTP exchange within the client's session: the id the server knows it by now is
/// sent, a server that lost the session (404) gets the client's `initialize` again and the request
/// replayed (a 404 for the session means the request was not processed), and the client is shown
/// its own id throughout. A new session is remembered; a DELETE forgets it.
async fn with_session(
    state: &GatewayState,
    upstream: &Upstream,
    name: &str,
    parts: &axum::http::request::Parts,
    url: &str,
    body: Bytes,
    peek: &Peek,
) -> Result<reqwest::Response, Failure> {
    let client_id = parts
        .headers
        .get(MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut headers = parts.headers.clone();
    if let Some(id) = &client_id {
        if let Some(current) = state.sessions.upstream_id(name, id) {
            if let Ok(value) = HeaderValue::from_str(&current) {
                headers.insert(MCP_SESSION_ID, value);
            }
        }
    }
    let mut answer = exchange(state, upstream, &parts.method, url, &headers, body.clone()).await?;
    if let Some(id) = &client_id {
        if answer.status() == StatusCode::NOT_FOUND {
            if let Some(renewed) = reinitialize(state, upstream, name, id, url, &headers).await {
                headers.insert(MCP_SESSION_ID, renewed);
                answer = exchange(state, upstream, &parts.method, url, &headers, body).await?;
            }
        }
        if answer.headers().contains_key(MCP_SESSION_ID) {
            if let Ok(value) = HeaderValue::from_str(id) {
                answer.headers_mut().insert(MCP_SESSION_ID, value);
            }
        }
        if parts.method == Method::DELETE {
            state.sessions.ended(name, id);
        }
    } else if peek.method.as_deref() == Some("initialize") && answer.status().is_success() {
        if let Some(id) = answer
            .headers()
            .get(MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
        {
            state.sessions.begun(name, id, body, &parts.headers);
        }
    }
    Ok(answer)
}

/// Begin the client's session `id` anew on a server that lost it: its `initialize` replayed, then
/// `notifications/initialized`. Returns the server's new id.
async fn reinitialize(
    state: &GatewayState,
    upstream: &Upstream,
    name: &str,
    id: &str,
    url: &str,
    request_headers: &HeaderMap,
) -> Option<HeaderValue> {
    let (initialize, mut headers) = state.sessions.initialize_of(name, id)?;
    let bound = upstream.timeout().unwrap_or(state.options.default_timeout);
    let answer = exchange(state, upstream, &Method::POST, url, &headers, initialize)
        .await
        .ok()?;
    if !answer.status().is_success() {
        return None;
    }
    let renewed = answer.headers().get(MCP_SESSION_ID)?.clone();
    // The answer is the initialize result (JSON, or an SSE stream that ends with it).
    tokio::time::timeout(bound, answer.bytes())
        .await
        .ok()?
        .ok()?;
    headers.insert(MCP_SESSION_ID, renewed.clone());
    if let Some(version) = request_headers.get("mcp-protocol-version") {
        headers.insert("mcp-protocol-version", version.clone());
    }
    let initialized =
        Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let ack = exchange(state, upstream, &Method::POST, url, &headers, initialized)
        .await
        .ok()?;
    if !ack.status().is_success() {
        return None;
    }
    state
        .sessions
        .moved(name, id, renewed.to_str().unwrap_or_default());
    tracing::info!(
        connector = name,
        "the server lost the session; began it anew"
    );
    Some(renewed)
}

fn failure_text(failure: &Failure) -> String {
    match failure {
        Failure::Resolve(e) | Failure::Refused(e) => e.to_string(),
        Failure::Unreachable(m) => m.clone(),
    }
}

/// Send, renewing once on a 401 (stepping up once on a 403 `insufficient_scope`, where consent
/// can be asked) and replaying the (buffered) request.
async fn exchange(
    state: &GatewayState,
    upstream: &Upstream,
    method: &Method,
    url: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<reqwest::Response, Failure> {
    let mut bearer = upstream.bearer();
    let mut renewed = false;
    let mut stepped_up = false;
    loop {
        let answer = send(
            state,
            upstream,
            method,
            url,
            headers,
            bearer.as_ref(),
            body.clone(),
        )
        .await?;
        if let Some(scope) = crate::upstream::insufficient_scope(&answer)
            .filter(|_| !stepped_up && upstream.can_ask_consent())
        {
            // A step-up: refused, not acted on, so the request goes again once.
            stepped_up = true;
            match upstream.on_insufficient_scope(&scope).await {
                Ok(new) => bearer = Some(new),
                Err(e) => return Err(Failure::Refused(e)),
            }
            continue;
        }
        if answer.status() != StatusCode::UNAUTHORIZED {
            return Ok(answer);
        }
        if renewed {
            return Err(Failure::Refused(UpstreamError::NeedsAuthorization {
                name: upstream.name().to_owned(),
                detail: "it refused the renewed token too".into(),
            }));
        }
        renewed = true;
        match upstream.on_unauthorized(bearer.as_ref()).await {
            Ok(new) => bearer = Some(new),
            Err(e) => return Err(Failure::Refused(e)),
        }
    }
}

/// One request upstream, retried (per the connector's `retry`) only when the connection was
/// never made.
async fn send(
    state: &GatewayState,
    upstream: &Upstream,
    method: &Method,
    url: &str,
    headers: &HeaderMap,
    bearer: Option<&Secret>,
    body: Bytes,
) -> Result<reqwest::Response, Failure> {
    let bound = upstream.timeout().unwrap_or(state.options.default_timeout);
    let retry = upstream
        .retry()
        .copied()
        .unwrap_or(patchbay_catalog::RetryPolicy {
            max: 0,
            ..Default::default()
        });
    let mut attempt = 0u32;
    loop {
        let mut request = state.http.request(method.clone(), url);
        for (name, value) in headers {
            if !NOT_FORWARDED.contains(&name.as_str()) {
                request = request.header(name, value);
            }
        }
        let mut has_authorization = false;
        for (name, value) in upstream.headers() {
            has_authorization |= name.eq_ignore_ascii_case("authorization");
            request = request.header(name.as_str(), value.expose());
        }
        if let (Some(bearer), false) = (bearer, has_authorization) {
            request = request.header(header::AUTHORIZATION, format!("Bearer {}", bearer.expose()));
        }
        if !body.is_empty() {
            request = request.body(body.clone());
        }
        let failure = match tokio::time::timeout(bound, request.send()).await {
            Ok(Ok(answer)) => return Ok(answer),
            Ok(Err(e)) if e.is_connect() && attempt < retry.max => {
                let unit = patchbay_check::random_unit();
                let nominal = f64::from(retry.base_ms) * 2f64.powi(attempt as i32);
                let jittered = nominal * (1.0 + retry.jitter * (2.0 * unit - 1.0));
                tokio::time::sleep(Duration::from_millis(jittered.max(0.0) as u64)).await;
                attempt += 1;
                continue;
            }
            // Without the URL: an expanded `${VAR}` may sit in it.
            Ok(Err(e)) => format!(
                "{} is unreachable: {}",
                upstream.name(),
                error_chain(&e.without_url())
            ),
            Err(_) => format!(
                "{} did not answer within {} ms",
                upstream.name(),
                bound.as_millis()
            ),
        };
        return Err(Failure::Unreachable(failure));
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// A POST's answer is bounded by the connector's `timeout_ms` as a whole; a GET (the server's
/// own stream) is not: it is meant to stay open.
fn deadline_for(upstream: &Upstream, method: &Method, started: Instant) -> Option<Instant> {
    match (method, upstream.timeout()) {
        (&Method::POST, Some(t)) => Some(started + t),
        _ => None,
    }
}

/// The upstream's answer, streamed through as it arrives.
fn respond(
    answer: reqwest::Response,
    deadline: Option<Instant>,
    rewrite: Option<EndpointRewrite>,
) -> Response {
    let status = answer.status();
    let mut headers = HeaderMap::with_capacity(answer.headers().len());
    for (name, value) in answer.headers() {
        let rewritten = rewrite.is_some() && name == header::CONTENT_LENGTH;
        if !NOT_RETURNED.contains(&name.as_str()) && !rewritten {
            headers.append(name.clone(), value.clone());
        }
    }
    let stream = answer.bytes_stream();
    let body = match (deadline, rewrite) {
        (_, Some(rewrite)) => Body::from_stream(EndpointRewriter::new(stream, rewrite)),
        (None, None) => Body::from_stream(stream),
        (Some(deadline), None) => Body::from_stream(Deadline {
            inner: Box::pin(stream),
            sleep: Box::pin(tokio::time::sleep_until(deadline.into())),
        }),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// A body stream cut at a deadline (the connector's `timeout_ms`).
struct Deadline<S> {
    inner: std::pin::Pin<Box<S>>,
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl<S> futures_core::Stream for Deadline<S>
where
    S: futures_core::Stream<Item = Result<Bytes, reqwest::Error>>,
{
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::future::Future;
        use std::task::Poll;
        if let Poll::Ready(item) = self.inner.as_mut().poll_next(cx) {
            return Poll::Ready(item.map(|r| r.map_err(std::io::Error::other)));
        }
        match self.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the connector's timeout_ms passed",
            )))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The gateway's own answer with `status`: a JSON-RPC error, with the request's id when it had
/// one, so a client shows the message (an MCP SDK client: "HTTP 502: ... authorize NAME in
/// Patchbay").
pub(crate) fn gateway_error(
    status: StatusCode,
    id: Option<serde_json::Value>,
    message: &str,
) -> Response {
    let body = match id {
        Some(id) => serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": GATEWAY_ERROR, "message": message },
        }),
        None => serde_json::json!({
            "jsonrpc": "2.0",
            "error": { "code": GATEWAY_ERROR, "message": message },
        }),
    };
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn with_query(url: &str, query: Option<&str>) -> String {
    match query {
        Some(query) => format!("{url}{}{query}", if url.contains('?') { '&' } else { '?' }),
        None => url.to_owned(),
    }
}

fn kind_of(upstream: &Upstream) -> TransportKind {
    match upstream.transport() {
        UpstreamTransport::StreamableHttp => TransportKind::StreamableHttp,
        UpstreamTransport::Sse => TransportKind::Sse,
    }
}

/// The upstream URL a `/mcp/NAME/message?to=PATH` request goes to: PATH on the connector's own
/// server, nowhere else (the gateway must not become a way to send its credential elsewhere).
fn message_target(upstream: &str, query: Option<&str>) -> Option<String> {
    let to = url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == "to")
        .map(|(_, v)| v.into_owned())?;
    if !to.starts_with('/') || to.starts_with("//") {
        return None;
    }
    let base = url::Url::parse(upstream).ok()?;
    let target = base.join(&to).ok()?;
    (target.origin() == base.origin()).then(|| target.to_string())
}

/// How a legacy SSE stream's `endpoint` event is rewritten to come back through the gateway.
struct EndpointRewrite {
    upstream: String,
    connector: String,
}

impl EndpointRewrite {
    /// `data` (the endpoint, relative to the stream's URL) as `/mcp/NAME/message?to=PATH`; `None`
    /// when it points off the connector's server (then the event is dropped: the client cannot
    /// post there with Patchbay's credential, and must not post there without it).
    fn endpoint(&self, data: &str) -> Option<String> {
        let base = url::Url::parse(&self.upstream).ok()?;
        let target = base.join(data.trim()).ok()?;
        if target.origin() != base.origin() {
            return None;
        }
        let mut path = target.path().to_owned();
        if let Some(q) = target.query() {
            path.push('?');
            path.push_str(q);
        }
        let to: String = url::form_urlencoded::byte_serialize(path.as_bytes()).collect();
        Some(format!("/mcp/{}/message?to={to}", self.connector))
    }

    /// One whole event (its lines, no blank line), rewritten when it is the `endpoint` event.
    fn event(&self, event: &str) -> (String, bool) {
        let is_endpoint = event
            .lines()
            .any(|l| l.trim_end() == "event: endpoint" || l.trim_end() == "event:endpoint");
        if !is_endpoint {
            return (event.to_owned(), false);
        }
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        match self.endpoint(&data.join("\n")) {
            Some(endpoint) => (format!("event: endpoint\ndata: {endpoint}"), true),
            None => {
                tracing::warn!(
                    connector = self.connector,
                    "dropped an SSE endpoint event that points off the connector's server"
                );
                (String::new(), true)
            }
        }
    }
}

/// `upstream`'s legacy SSE stream (`stream`, as the connector `connector`'s SSE URL answered it)
/// as the gateway hands it on: the `endpoint` event rewritten to `/mcp/CONNECTOR/message?to=PATH`
/// (dropped when it points off the connector's server), everything after it as is.
pub fn rewrite_endpoint_events<S>(
    upstream: &str,
    connector: &str,
    stream: S,
) -> impl futures_core::Stream<Item = Result<Bytes, std::io::Error>> + Send
where
    S: futures_core::Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
{
    EndpointRewriter::new(
        stream,
        EndpointRewrite {
            upstream: upstream.to_owned(),
            connector: connector.to_owned(),
        },
    )
}

/// The longest unfinished event a legacy SSE stream may hold before its `endpoint` event (the
/// first event a server sends): past it the stream is no such stream (a blank line never came,
/// or its lines end in CR alone), and buffering it would grow without bound.
const MAX_BEFORE_ENDPOINT: usize = 64 * 1024;

/// How many bytes at the end of `bytes` start a UTF-8 character that is not complete yet (the
/// chunk boundary cut it).
fn incomplete_utf8_tail(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 != 0x80 {
            let needs = match b {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => 1,
            };
            return if needs > back { back } else { 0 };
        }
    }
    0
}

/// A legacy SSE stream with its `endpoint` event rewritten; everything after it passes as is.
struct EndpointRewriter {
    inner:
        std::pin::Pin<Box<dyn futures_core::Stream<Item = Result<Bytes, reqwest::Error>> + Send>>,
    rewrite: EndpointRewrite,
    /// Bytes of the events before the endpoint event that are not complete yet.
    pending: Vec<u8>,
    done: bool,
}

impl EndpointRewriter {
    fn new<S>(stream: S, rewrite: EndpointRewrite) -> EndpointRewriter
    where
        S: futures_core::Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
    {
        EndpointRewriter {
            inner: Box::pin(stream),
            rewrite,
            pending: Vec::new(),
            done: false,
        }
    }
}

/// A stream that has ended.
struct Ended<T>(std::marker::PhantomData<T>);

impl<T> futures_core::Stream for Ended<T> {
    type Item = T;
    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        std::task::Poll::Ready(None)
    }
}

impl futures_core::Stream for EndpointRewriter {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = &mut *self;
        loop {
            let ended = match this.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) if this.pending.is_empty() => return Poll::Ready(None),
                Poll::Ready(None) => {
                    // The stream ended inside an event: read what came (its last CR ends a
                    // line: the event may be whole), hand on the rest, then end.
                    this.inner = Box::pin(Ended(std::marker::PhantomData));
                    true
                }
                Poll::Ready(Some(Err(e))) => {
                    return Poll::Ready(Some(Err(std::io::Error::other(e))))
                }
                Poll::Ready(Some(Ok(chunk))) if this.done => return Poll::Ready(Some(Ok(chunk))),
                Poll::Ready(Some(Ok(chunk))) => {
                    this.pending.extend_from_slice(&chunk);
                    false
                }
            };
            // A character the chunk boundary cut, or a CR whose LF may come next, waits for
            // the next chunk (decoded or normalized now, it would read differently).
            let held = match incomplete_utf8_tail(&this.pending) {
                _ if ended => 0,
                0 if this.pending.last() == Some(&b'\r') => 1,
                n => n,
            };
            let tail = this.pending.split_off(this.pending.len() - held);
            // Line ends as `\n` from here on (SSE ends lines with `\r\n`, `\n` or `\r`).
            let text = String::from_utf8_lossy(&this.pending)
                .replace("\r\n", "\n")
                .replace('\r', "\n");
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(end) = rest.find("\n\n") {
                let (event, was_endpoint) = this.rewrite.event(&rest[..end]);
                // A dropped endpoint event (off the connector's server) ends nothing: the next
                // one is rewritten or dropped too, never passed on as it came.
                let rewritten = was_endpoint && !event.is_empty();
                if !event.is_empty() {
                    out.push_str(&event);
                    out.push_str("\n\n");
                }
                rest = &rest[end + 2..];
                if rewritten {
                    this.done = true;
                    break;
                }
            }
            let rest = rest.to_owned();
            let mut out = out.into_bytes();
            if this.done || ended {
                out.extend_from_slice(rest.as_bytes());
                out.extend_from_slice(&tail);
                this.pending.clear();
            } else {
                this.pending = rest.into_bytes();
                this.pending.extend_from_slice(&tail);
                if this.pending.len() > MAX_BEFORE_ENDPOINT {
                    this.inner = Box::pin(Ended(std::marker::PhantomData));
                    this.pending = Vec::new();
                    return Poll::Ready(Some(Err(std::io::Error::other(format!(
                        "the upstream sent an event of more than {MAX_BEFORE_ENDPOINT} bytes before its endpoint event"
                    )))));
                }
            }
            if !out.is_empty() {
                return Poll::Ready(Some(Ok(Bytes::from(out))));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewriter(chunks: Vec<&'static str>) -> EndpointRewriter {
        let items: Vec<Result<Bytes, reqwest::Error>> =
            chunks.into_iter().map(|c| Ok(Bytes::from(c))).collect();
        EndpointRewriter {
            inner: Box::pin(Iter(items.into_iter())),
            rewrite: EndpointRewrite {
                upstream: "https://mcp.example.com/sse".into(),
                connector: "legacy".into(),
            },
            pending: Vec::new(),
            done: false,
        }
    }

    struct Iter<I>(I);

    impl<I: Iterator + Unpin> futures_core::Stream for Iter<I> {
        type Item = I::Item;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<I::Item>> {
            std::task::Poll::Ready(self.0.next())
        }
    }

    fn collect(mut stream: EndpointRewriter) -> String {
        use futures_core::Stream;
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut out = String::new();
        while let std::task::Poll::Ready(Some(chunk)) =
            std::pin::Pin::new(&mut stream).poll_next(&mut cx)
        {
            out.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
        out
    }

    #[test]
    fn the_endpoint_event_is_rewritten_across_chunks_and_the_rest_passes() {
        let out = collect(rewriter(vec![
            ": hello\r\n\r\nevent: endp",
            "oint\r\ndata: /messages?sessionId=a b\r\n\r\nevent: message\ndata: {}\n\n",
            "event: endpoint\ndata: /not-rewritten\n\n",
        ]));
        assert_eq!(
            out,
            ": hello\n\nevent: endpoint\ndata: /mcp/legacy/message?to=%2Fmessages%3FsessionId%3Da%2520b\n\nevent: message\ndata: {}\n\nevent: endpoint\ndata: /not-rewritten\n\n"
        );
        let to = message_target(
            "https://mcp.example.com/sse",
            Some("to=%2Fmessages%3FsessionId%3Da%2520b"),
        );
        assert_eq!(
            to.as_deref(),
            Some("https://mcp.example.com/messages?sessionId=a%20b")
        );
    }

    /// Every item of `stream`, polled to its end.
    fn items(
        stream: impl futures_core::Stream<Item = Result<Bytes, std::io::Error>>,
    ) -> Vec<Result<Bytes, std::io::Error>> {
        let mut stream = std::pin::pin!(stream);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut out = Vec::new();
        while let std::task::Poll::Ready(Some(item)) = stream.as_mut().poll_next(&mut cx) {
            out.push(item);
        }
        out
    }

    fn chunks(parts: Vec<Vec<u8>>) -> Iter<std::vec::IntoIter<Result<Bytes, reqwest::Error>>> {
        Iter(
            parts
                .into_iter()
                .map(|p| Ok(Bytes::from(p)))
                .collect::<Vec<_>>()
                .into_iter(),
        )
    }

    /// A character cut by a chunk boundary before the endpoint event came out as U+FFFD (found
    /// writing fuzz/fuzz_targets/gateway_endpoint_rewrite.rs, which cuts streams everywhere).
    #[test]
    fn a_character_split_across_chunks_passes_intact() {
        let stream = ": h\u{e9}llo\n\nevent: endpoint\ndata: /m\n\n".as_bytes();
        let at = stream.iter().position(|b| *b == 0xC3).unwrap() + 1;
        let out: Vec<u8> = items(rewrite_endpoint_events(
            "https://mcp.example.com/sse",
            "legacy",
            chunks(vec![stream[..at].to_vec(), stream[at..].to_vec()]),
        ))
        .into_iter()
        .flat_map(|item| item.unwrap().to_vec())
        .collect();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            ": h\u{e9}llo\n\nevent: endpoint\ndata: /mcp/legacy/message?to=%2Fm\n\n"
        );
    }

    /// After an endpoint event off the connector's server was dropped, the next one passed on as
    /// it came, and the client would post there (found by
    /// fuzz/fuzz_targets/gateway_endpoint_rewrite.rs).
    #[test]
    fn every_endpoint_off_the_server_is_dropped_until_one_is_rewritten() {
        let out = collect(rewriter(vec![
            "event: endpoint\ndata: https://evil.example/a\n\n",
            "event: endpoint\ndata: https://evil.example/b\n\n",
            "event: endpoint\ndata: /m\n\nevent: endpoint\ndata: /later\n\n",
        ]));
        assert_eq!(
            out,
            "event: endpoint\ndata: /mcp/legacy/message?to=%2Fm\n\nevent: endpoint\ndata: /later\n\n"
        );
    }

    /// A stream ending in the CR that ends its endpoint event: the event is whole (an SSE client
    /// dispatches it), so it is rewritten like any other, not handed on as it came (found by
    /// fuzz/fuzz_targets/gateway_endpoint_rewrite.rs).
    #[test]
    fn an_endpoint_event_ended_by_the_streams_last_cr_is_rewritten() {
        let out = collect(rewriter(vec![
            "event: endpoint\ndata: https://evil.example/a\n\r",
        ]));
        assert_eq!(out, "");
        let out = collect(rewriter(vec!["event: endpoint\rdata: /m\r", "\r"]));
        assert_eq!(
            out,
            "event: endpoint\ndata: /mcp/legacy/message?to=%2Fm\n\n"
        );
    }

    /// Lone CRs end lines too, and how many line ends a run of CRs makes did not depend on where
    /// the chunks were cut (found by fuzz/fuzz_targets/gateway_endpoint_rewrite.rs: `\r\r\r\n`
    /// came out as `\r\r\n`, `\r\n` or `\n`, so the client saw other events).
    #[test]
    fn cr_line_ends_read_alike_however_the_stream_is_cut() {
        let stream = b": hello\r\r\r\nevent: endpoint\rdata: /m\r\r";
        // Three line ends after the comment: its event, then an empty line (dispatches nothing).
        let expected = ": hello\n\nevent: endpoint\ndata: /mcp/legacy/message?to=%2Fm\n\n";
        for cut in 1..stream.len() {
            let out: Vec<u8> = items(rewrite_endpoint_events(
                "https://mcp.example.com/sse",
                "legacy",
                chunks(vec![stream[..cut].to_vec(), stream[cut..].to_vec()]),
            ))
            .into_iter()
            .flat_map(|item| item.unwrap().to_vec())
            .collect();
            assert_eq!(String::from_utf8(out).unwrap(), expected, "cut at {cut}");
        }
    }

    /// A stream whose first event never ends (no blank line, or lines ending in CR alone) was
    /// buffered whole, without bound; past the limit it is an error.
    #[test]
    fn an_endless_first_event_is_an_error_not_unbounded_buffering() {
        let line = vec![b'x'; 16 * 1024];
        let parts = vec![line; 8];
        let out = items(rewrite_endpoint_events(
            "https://mcp.example.com/sse",
            "legacy",
            chunks(parts),
        ));
        let last = out.last().expect("an item");
        assert!(last.is_err(), "{out:?}");
        assert!(
            out.len() <= 5,
            "it stopped reading at the limit: {} items",
            out.len()
        );
    }

    #[test]
    fn an_endpoint_off_the_connectors_server_goes_nowhere() {
        let out = collect(rewriter(vec![
            "event: endpoint\ndata: https://evil.example/messages\n\n",
        ]));
        assert_eq!(out, "");
        for to in [
            "%2F%2Fevil.example%2Fx",
            "https%3A%2F%2Fevil.example%2F",
            "x",
        ] {
            assert_eq!(
                message_target("https://mcp.example.com/sse", Some(&format!("to={to}"))),
                None,
                "{to}"
            );
        }
    }
}
