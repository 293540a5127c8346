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
use crate::stdio::error_chain;
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

mod legacy_sse;
pub use legacy_sse::rewrite_endpoint_events;
use legacy_sse::{message_target, EndpointRewrite, EndpointRewriter};

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
