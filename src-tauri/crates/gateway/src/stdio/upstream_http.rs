//! The bridge's HTTP client under rmcp's streamable-HTTP transport: rmcp decides what to send
//! (sessions, `MCP-Protocol-Version`, `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*`, resumption with
//! `Last-Event-ID`), this client sends it with the connector's credentials, as OpenAI's Codex
//! does in its rmcp-client. Auth is a layer here, invisible to rmcp:
//!
//! - Every request carries the connector's headers (its bearer among them), marked sensitive.
//! - A 401 renews through [`Credentials::renew`] (the refresher of record) and the request goes
//!   again once; a credential that cannot be renewed fails with the renewal's own sentence.
//! - A 403 `insufficient_scope` steps up through [`Credentials::step_up`] (consent for the
//!   scopes asked before and the challenge's) and the request goes again once.
//! - A refused connection never carried the request, so it is retried with a short backoff
//!   whatever the request; a connection that fails later may have delivered it
//!   ([`UpstreamHttpError::Dropped`]), and the bridge decides whether to send again.
//! - Waiting for an answer's head is bounded by the connector's timeout; an SSE body is read by
//!   the one event parser ([`SseParser`], with its size limit) and handed to rmcp as events,
//!   but a `tools/list` answer alone on its stream goes to rmcp as JSON (see [`answer_alone`]).

use super::{
    detail_of, error_chain, Credentials, SseEvent, SseParser, CONNECT_TIMEOUT, RECONNECT_DELAYS,
};
use futures::stream::{BoxStream, StreamExt};
use http::{HeaderName, HeaderValue};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const SESSION_HEADER: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";
/// How much of an error body is read for its detail.
const ERROR_BODY_MAX: usize = 4096;

/// Why the upstream did not answer a request, by what the bridge may do about it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamHttpError {
    /// Retryable: no connection was made (after the backoff), so the request never left.
    #[error("{0}")]
    Unreached(String),
    /// The connection failed (or went silent) after the request went out: it may have acted.
    #[error("{0}")]
    Dropped(String),
    /// Terminal: the credential was refused and cannot be renewed; the sentence says what to do.
    #[error("{0}")]
    NeedsAuthorization(String),
    /// Terminal: a 403 `insufficient_scope` a step-up did not (or could not) mend.
    #[error("{0}")]
    NeedsMoreAccess(String),
    /// Terminal: an error status that carried no JSON-RPC answer.
    #[error("HTTP {status}: {detail}")]
    Status { status: u16, detail: String },
}

type HttpResult<T> = Result<T, StreamableHttpError<UpstreamHttpError>>;

fn failed(e: UpstreamHttpError) -> StreamableHttpError<UpstreamHttpError> {
    StreamableHttpError::Client(e)
}

/// The connector's HTTP client for rmcp's transport (cloned per request by rmcp: all shared).
pub(crate) struct UpstreamHttp<C> {
    http: reqwest::Client,
    credentials: Arc<C>,
    /// The connector's request bound: the longest wait for an answer's head.
    timeout: Duration,
    /// A 2025 server forgot the session (404) and rmcp has not started it again yet: the
    /// next delivered `initialize` is that (said on stderr, as the bridge's promise).
    session_lost: Arc<AtomicBool>,
    /// The waits before each new try when the connection is refused.
    reconnects: &'static [Duration],
}

impl<C> Clone for UpstreamHttp<C> {
    fn clone(&self) -> Self {
        Self {
            http: self.http.clone(),
            credentials: self.credentials.clone(),
            timeout: self.timeout,
            session_lost: self.session_lost.clone(),
            reconnects: self.reconnects,
        }
    }
}

impl<C: Credentials> UpstreamHttp<C> {
    pub(crate) fn new(credentials: Arc<C>, timeout: Duration) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .user_agent(concat!("Patchbay/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self::with_client(http, credentials, timeout))
    }

    /// On the gateway's own client (its hop id on every request, no redirects followed).
    pub(crate) fn with_client(
        http: reqwest::Client,
        credentials: Arc<C>,
        timeout: Duration,
    ) -> Self {
        Self {
            http,
            credentials,
            timeout,
            session_lost: Arc::default(),
            reconnects: &RECONNECT_DELAYS,
        }
    }

    /// A refused connection fails at once (the aggregate answers and reconnects in the
    /// background rather than hold the request).
    pub(crate) fn without_reconnects(mut self) -> Self {
        self.reconnects = &[];
        self
    }

    fn name(&self) -> &str {
        self.credentials.connector()
    }

    /// One request with the connector's headers and rmcp's, renewed once on a 401 and retried
    /// while the connection is refused. `build` adds what is particular to the request.
    async fn send(
        &self,
        method: Method,
        rmcp_headers: &HashMap<HeaderName, HeaderValue>,
        build: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> HttpResult<reqwest::Response> {
        let mut renewed = false;
        let mut stepped_up = false;
        let mut reconnects = self.reconnects.iter();
        loop {
            let bearer = self.credentials.bearer();
            let mut request = self.http.request(method.clone(), self.credentials.url());
            for (name, value) in self.credentials.headers() {
                match HeaderValue::from_str(value.expose()) {
                    Ok(mut v) => {
                        v.set_sensitive(true);
                        request = request.header(name.as_str(), v);
                    }
                    Err(_) => tracing::warn!(
                        connector = self.name(),
                        "the {name} header's value is not a valid HTTP header value; not sent"
                    ),
                }
            }
            for (name, value) in rmcp_headers {
                request = request.header(name, value);
            }
            let sent = tokio::time::timeout(self.timeout, build(request).send()).await;
            match sent {
                Err(_) => {
                    return Err(failed(UpstreamHttpError::Dropped(format!(
                        "no answer within {} ms",
                        self.timeout.as_millis()
                    ))))
                }
                Ok(Err(e)) if e.is_connect() => {
                    let why = error_chain(&e.without_url());
                    match reconnects.next() {
                        Some(delay) => {
                            tracing::info!(
                                connector = self.name(),
                                "cannot connect ({why}); trying again"
                            );
                            tokio::time::sleep(*delay).await;
                        }
                        None => return Err(failed(UpstreamHttpError::Unreached(why))),
                    }
                }
                Ok(Err(e)) => {
                    return Err(failed(UpstreamHttpError::Dropped(error_chain(
                        &e.without_url(),
                    ))))
                }
                Ok(Ok(response)) if response.status() == StatusCode::UNAUTHORIZED => {
                    if renewed {
                        return Err(failed(UpstreamHttpError::NeedsAuthorization(format!(
                            "{} refused the renewed credential too; authorize {} in Patchbay",
                            self.name(),
                            self.name()
                        ))));
                    }
                    renewed = true;
                    self.credentials
                        .renew(bearer)
                        .await
                        .map_err(|why| failed(UpstreamHttpError::NeedsAuthorization(why)))?;
                }
                Ok(Ok(response)) => match crate::upstream::insufficient_scope(&response) {
                    // Refused, not acted on: once more access is granted it goes again, a
                    // tools/call too.
                    Some(scope) if !stepped_up => {
                        stepped_up = true;
                        self.credentials
                            .step_up(scope)
                            .await
                            .map_err(|why| failed(UpstreamHttpError::NeedsMoreAccess(why)))?;
                    }
                    Some(scope) => {
                        return Err(failed(UpstreamHttpError::NeedsMoreAccess(format!(
                            "{} still wants more access (\"{scope}\") after Patchbay's authorization for more",
                            self.name()
                        ))))
                    }
                    None => return Ok(response),
                },
            }
        }
    }

    async fn post(
        &self,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        rmcp_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let body = bytes::Bytes::from(serde_json::to_vec(&message)?);
        let response = self
            .send(Method::POST, &rmcp_headers, |request| {
                let request = request
                    .header(CONTENT_TYPE, JSON)
                    .header(ACCEPT, "application/json, text/event-stream")
                    .body(body.clone());
                match &session_id {
                    Some(id) => request.header(SESSION_HEADER, id.as_ref()),
                    None => request,
                }
            })
            .await?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            tracing::info!(
                connector = self.name(),
                "the server no longer knows the session; starting it again"
            );
            self.session_lost.store(true, Ordering::SeqCst);
            return Err(StreamableHttpError::SessionExpired);
        }
        let is_initialize = matches!(&message, ClientJsonRpcMessage::Request(r)
            if matches!(r.request, ClientRequest::InitializeRequest(_)));
        if is_initialize && status.is_success() && self.session_lost.swap(false, Ordering::SeqCst) {
            tracing::info!(connector = self.name(), "the session was started again");
        }
        let new_session = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let request_id = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        if !status.is_success() {
            let text = read_limited(response, limits.max_error_response_size).await;
            // 508 Loop Detected is a Patchbay gateway refusing its own request come back, not
            // the server's answer: a failure of the way there, said with its status.
            let looped = status == StatusCode::LOOP_DETECTED;
            // A JSON-RPC error in an error status answers this POST: it belongs to this request
            // even when the server could not echo its id (a middleware's `"id": null`).
            if let (Ok(ServerJsonRpcMessage::Error(mut error)), false) =
                (serde_json::from_str(&text), looped)
            {
                if let Some(id) = &request_id {
                    error.id = Some(id.clone());
                }
                return Ok(StreamableHttpPostResponse::Json(
                    ServerJsonRpcMessage::Error(error),
                    new_session,
                ));
            }
            // A 2025 server refusing `server/discover` (no session, a 4xx) is how rmcp learns to
            // fall back to `initialize`: it needs a JSON-RPC error for that.
            let is_discover = matches!(&message, ClientJsonRpcMessage::Request(r)
                if matches!(r.request, ClientRequest::DiscoverRequest(_)));
            if is_discover && session_id.is_none() && status.is_client_error() {
                let error = ErrorData::invalid_request(
                    format!("server/discover refused with HTTP {status}"),
                    None,
                );
                return Ok(StreamableHttpPostResponse::Json(
                    ServerJsonRpcMessage::error(error, request_id),
                    None,
                ));
            }
            return Err(failed(UpstreamHttpError::Status {
                status: status.as_u16(),
                detail: detail_of(&text),
            }));
        }
        let awaits_no_response = request_id.is_none();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        if media_type_is(&content_type, EVENT_STREAM) {
            let events = event_stream(response, limits.max_sse_event_size);
            let is_tools_list = matches!(&message, ClientJsonRpcMessage::Request(r)
                if matches!(r.request, ClientRequest::ListToolsRequest(_)));
            if !is_tools_list {
                return Ok(StreamableHttpPostResponse::Sse(events, new_session));
            }
            return Ok(match answer_alone(events).await {
                Ok(answer) => StreamableHttpPostResponse::Json(answer, new_session),
                Err(events) => StreamableHttpPostResponse::Sse(events, new_session),
            });
        }
        if media_type_is(&content_type, JSON) {
            let bytes = read_json(response, limits.max_json_response_size).await?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&bytes) {
                Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, new_session)),
                // Nothing was awaited: an unusable body changes nothing.
                Err(_) if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(failed(UpstreamHttpError::Status {
                    status: status.as_u16(),
                    detail: format!("the answer is not a JSON-RPC message ({e})"),
                })),
            };
        }
        if awaits_no_response {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(Some(
            content_type,
        )))
    }

    async fn get(
        &self,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        rmcp_headers: HashMap<HeaderName, HeaderValue>,
        max_event: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let response = self
            .send(Method::GET, &rmcp_headers, |mut request| {
                request = request.header(ACCEPT, EVENT_STREAM);
                if let Some(id) = &session_id {
                    request = request.header(SESSION_HEADER, id.as_ref());
                }
                if let Some(id) = &last_event_id {
                    request = request.header(LAST_EVENT_ID, id.as_str());
                }
                request
            })
            .await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !status.is_success() {
            let text = read_limited(response, ERROR_BODY_MAX).await;
            return Err(failed(UpstreamHttpError::Status {
                status: status.as_u16(),
                detail: detail_of(&text),
            }));
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase);
        if !content_type
            .as_deref()
            .is_some_and(|ct| media_type_is(ct, EVENT_STREAM))
        {
            return Err(StreamableHttpError::UnexpectedContentType(content_type));
        }
        Ok(event_stream(response, max_event))
    }
}

impl<C: Credentials> StreamableHttpClient for UpstreamHttp<C> {
    type Error = UpstreamHttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        _uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post(message, session_id, custom_headers, limits).await
    }

    // The URI and auth header rmcp passes are ignored: the connector's URL and credentials are
    // the only ones (they can change between requests: a renewed bearer).
    async fn post_message_with_response_limits(
        &self,
        _uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post(message, session_id, custom_headers, limits).await
    }

    async fn delete_session(
        &self,
        _uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let response = self
            .send(Method::DELETE, &custom_headers, |request| {
                request.header(SESSION_HEADER, session_id.as_ref())
            })
            .await?;
        tracing::debug!(
            connector = self.name(),
            "ended the session: HTTP {}",
            response.status()
        );
        Ok(())
    }

    async fn get_stream(
        &self,
        _uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.get(
            session_id,
            last_event_id,
            custom_headers,
            super::MAX_SSE_EVENT_BYTES,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        _uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.get(
            session_id,
            last_event_id,
            custom_headers,
            max_sse_event_size,
        )
        .await
    }
}

/// `content_type` (lowercase) names `expected`, parameters aside.
fn media_type_is(content_type: &str, expected: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|essence| essence.trim() == expected)
}

/// A JSON body, refused over `limit` bytes.
async fn read_json(mut response: reqwest::Response, limit: usize) -> HttpResult<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => {
                return Err(failed(UpstreamHttpError::Dropped(error_chain(
                    &e.without_url(),
                ))))
            }
        }
    }
}

/// At most `limit` bytes of an error body, as text (what could be read).
async fn read_limited(mut response: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(limit);
    String::from_utf8_lossy(&body).into_owned()
}

/// The answer on a stream that carries nothing else (data-less priming events aside), or the
/// stream as it was. rmcp 3.11 hands an SSE answer on without its tool cache when its stream's
/// end is seen first (it drains the queue then): a `tools/list` answered that way would keep
/// its invalid tools and lose the `Mcp-Param-*` of the calls after it. As JSON it is cached.
async fn answer_alone(
    events: BoxStream<'static, Result<Sse, SseError>>,
) -> Result<ServerJsonRpcMessage, BoxStream<'static, Result<Sse, SseError>>> {
    // Fused: a stream that ended here is chained below, and polled again by rmcp.
    let mut events = events.fuse();
    let mut read = Vec::new();
    while let Some(event) = events.next().await {
        if let Ok(sse) = &event {
            let Some(data) = &sse.data else {
                read.push(event);
                continue;
            };
            let is_message = sse.event.as_deref().is_none_or(|kind| kind == "message");
            if let (true, Ok(answer)) = (is_message, serde_json::from_str(data)) {
                if matches!(
                    answer,
                    ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_)
                ) {
                    return Ok(answer);
                }
            }
        }
        // Anything else on the stream (or its failure): rmcp reads all of it, as sent.
        read.push(event);
        break;
    }
    Err(futures::stream::iter(read).chain(events).boxed())
}

/// An SSE body as rmcp's events, parsed by [`SseParser`] (its limit per event).
fn event_stream(
    response: reqwest::Response,
    limit: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    struct Reading {
        response: reqwest::Response,
        parser: SseParser,
        ready: VecDeque<SseEvent>,
        done: bool,
    }
    let reading = Reading {
        response,
        parser: SseParser::with_limit(limit),
        ready: VecDeque::new(),
        done: false,
    };
    futures::stream::unfold(reading, |mut r| async move {
        loop {
            if let Some(event) = r.ready.pop_front() {
                let sse = Sse {
                    event: Some(event.kind),
                    data: (!event.data.is_empty()).then_some(event.data),
                    id: event.id,
                    retry: event.retry,
                };
                return Some((Ok(sse), r));
            }
            if r.done {
                return None;
            }
            let error: Box<dyn std::error::Error + Send + Sync> = match r.response.chunk().await {
                Ok(Some(chunk)) => match r.parser.push(&chunk) {
                    Ok(events) => {
                        r.ready.extend(events);
                        continue;
                    }
                    Err(too_large) => Box::new(too_large),
                },
                Ok(None) => return None,
                Err(e) => Box::new(e.without_url()),
            };
            r.done = true;
            return Some((Err(SseError::Body(error)), r));
        }
    })
    .boxed()
}
