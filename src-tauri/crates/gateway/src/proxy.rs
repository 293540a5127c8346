//! `/mcp/NAME`: a streaming reverse proxy for MCP streamable HTTP. POST, GET and DELETE pass
//! through with their headers (`Mcp-Session-Id`, `Last-Event-ID`, `MCP-Protocol-Version`,
//! `Accept`, ...) and the connector's credential in place of the client's secret; the answer
//! streams back chunk by chunk as it arrives (an SSE stream is never buffered), minus the
//! upstream's `WWW-Authenticate`: a 401 upstream is Patchbay's to answer. It renews the
//! credential once and replays the request (bodies are buffered up to a limit for this); when
//! that does not help, the client gets a JSON-RPC error that says to authorize in Patchbay.
//!
//! A connector's `timeout_ms` bounds each upstream exchange; its `retry` applies only to a
//! request that never reached the upstream (the connection was refused), so a `tools/call` that
//! may have run is never sent twice. Every `tools/call`, and every request that failed here,
//! goes to the health board.

use crate::clients::{ClientRecord, CLIENT_HEADER};
use crate::server::GatewayState;
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

pub(crate) async fn proxy(
    State(state): State<Arc<GatewayState>>,
    Path(name): Path<String>,
    Extension(client): Extension<ClientRecord>,
    req: Request,
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
    let outcome = match state.upstream(&name).await {
        Ok(upstream) if upstream.transport() == UpstreamTransport::Sse => {
            return gateway_error(
                StatusCode::NOT_IMPLEMENTED,
                peek.id,
                &format!("{name} speaks the legacy HTTP+SSE transport, which the gateway does not proxy yet; use `patchbay connect {name}`"),
            );
        }
        Ok(upstream) => exchange(
            &state,
            &upstream,
            &parts.method,
            &parts.uri,
            &parts.headers,
            body,
        )
        .await
        .map(|r| (upstream, r)),
        Err(e) => Err(Failure::Resolve(e)),
    };
    let latency = started.elapsed();
    tracing::debug!(
        connector = name,
        method = %parts.method,
        rpc = peek.method.as_deref().unwrap_or("-"),
        status = outcome.as_ref().map(|(_, a)| a.status().as_u16()).unwrap_or(0),
        session = parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).unwrap_or("-"),
        ms = latency.as_millis() as u64,
        "proxied"
    );
    match outcome {
        Ok((upstream, answer)) => {
            let status = answer.status();
            if is_call || status.is_server_error() {
                state.record(CallRecord {
                    connector: name,
                    at: chrono::Utc::now(),
                    latency,
                    transport: TransportKind::StreamableHttp,
                    http_status: Some(status.as_u16()),
                    error: (!status.is_success()).then(|| {
                        format!(
                            "{} answered HTTP {status}",
                            peek.method.as_deref().unwrap_or("a request")
                        )
                    }),
                });
            }
            respond(answer, deadline_for(&upstream, &parts.method, started))
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

fn failure_text(failure: &Failure) -> String {
    match failure {
        Failure::Resolve(e) | Failure::Refused(e) => e.to_string(),
        Failure::Unreachable(m) => m.clone(),
    }
}

/// Send, renewing once on a 401 and replaying the (buffered) request.
async fn exchange(
    state: &GatewayState,
    upstream: &Upstream,
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<reqwest::Response, Failure> {
    let mut url = upstream.url().to_owned();
    if let Some(query) = uri.query() {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(query);
    }
    let mut bearer = upstream.bearer();
    let mut renewed = false;
    loop {
        let answer = send(
            state,
            upstream,
            method,
            &url,
            headers,
            bearer.as_ref(),
            body.clone(),
        )
        .await?;
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
fn respond(answer: reqwest::Response, deadline: Option<Instant>) -> Response {
    let status = answer.status();
    let mut headers = HeaderMap::with_capacity(answer.headers().len());
    for (name, value) in answer.headers() {
        if !NOT_RETURNED.contains(&name.as_str()) {
            headers.append(name.clone(), value.clone());
        }
    }
    let stream = answer.bytes_stream();
    let body = match deadline {
        None => Body::from_stream(stream),
        Some(deadline) => Body::from_stream(Deadline {
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
