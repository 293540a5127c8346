//! The bridge to a connector on the legacy HTTP+SSE transport (MCP 2024-11-05): one GET event
//! stream whose first `endpoint` event names where to POST; every server message (answers
//! included) arrives on that stream. The same promises as the streamable-HTTP bridge where this
//! transport allows them: a 401 renews once and replays (a refused renewal answers with the error
//! that says to authorize); a stream that drops is opened again, and the new session started by
//! replaying the client's handshake (its answer swallowed); each request is bounded by the
//! connector's timeout and recorded on the health board. A request in flight when the stream
//! dropped is answered with an error (its answer would have come on the lost stream).
//!
//! The stream is read with the one SSE parser (`patchbay_check::sse`). The connection check's
//! legacy SSE client (`patchbay_check::legacy_sse`) is an rmcp transport of typed messages for a
//! single handshake; this bridge passes the client's raw messages through, renews and reopens,
//! so it keeps its own session handling. Moving it onto that client is left for the bridge's port
//! to rmcp 3.

use super::{
    emit_to, read_client, BridgeIo, BridgedCall, CallHook, Credentials, Kind, Out, SseParser,
    StdioError, BRIDGE_ERROR, TIMEOUT_ERROR,
};
use patchbay_vault::Secret;
use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::io::AsyncRead;
use tokio::sync::{mpsc, oneshot, watch};

const STREAM_BACKOFF_MAX: Duration = Duration::from_secs(5);

struct Pending {
    id: Value,
    method: String,
    started: Instant,
    /// Told when the answer (or an error for it) went to the client.
    answered: oneshot::Sender<()>,
}

#[derive(Default)]
struct State {
    /// The handshake, replayed on a new stream.
    initialize: Option<Value>,
    initialized: Option<Value>,
    /// Requests sent, by id (the answer comes on the stream).
    pending: HashMap<String, Pending>,
    /// Ids of the bridge's own replays: their answers are not the client's.
    swallow: HashSet<String>,
    /// Streams opened so far.
    streams: u64,
}

struct Bridge<C> {
    credentials: Arc<C>,
    http: reqwest::Client,
    timeout: Duration,
    out: mpsc::UnboundedSender<Out>,
    state: Mutex<State>,
    /// Where to POST: set by the stream's `endpoint` event, cleared when the stream drops.
    endpoint: watch::Sender<Option<String>>,
    on_call: Option<CallHook>,
}

fn key(id: &Value) -> String {
    id.to_string()
}

pub(super) async fn run<C, R, W>(
    credentials: Arc<C>,
    on_call: Option<CallHook>,
    input: R,
    output: W,
) -> Result<(), StdioError>
where
    C: Credentials,
    R: AsyncRead + Unpin,
    W: Write + Send + 'static,
{
    let BridgeIo {
        timeout,
        http,
        out,
        writer,
    } = BridgeIo::start(credentials.as_ref(), output)?;
    // Set with send_replace: a value sent while no request waits must still be there for the
    // next one (`send` drops it when nobody listens).
    let (endpoint, _) = watch::channel(None);
    let bridge = Arc::new(Bridge {
        credentials,
        http,
        timeout,
        out,
        state: Mutex::default(),
        endpoint,
        on_call,
    });
    let stream = tokio::spawn(bridge.clone().stream());

    let read = read_client(input, &bridge.out, |message, kind| {
        bridge.clone().forward(message, kind)
    })
    .await;
    stream.abort();
    let _ = bridge.out.send(Out::End);
    let _ = writer.await;
    read
}

impl<C: Credentials> Bridge<C> {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn name(&self) -> &str {
        self.credentials.connector()
    }

    fn emit(&self, message: &Value) {
        emit_to(&self.out, message);
    }

    fn request(&self, method: Method, url: &str) -> (reqwest::RequestBuilder, Option<Secret>) {
        let bearer = self.credentials.bearer();
        let mut request = self.http.request(method, url);
        for (name, value) in self.credentials.headers() {
            if let Ok(mut v) = HeaderValue::from_str(value.expose()) {
                v.set_sensitive(true);
                request = request.header(name.as_str(), v);
            }
        }
        (request, bearer)
    }

    fn answer_error(
        &self,
        id: &Value,
        method: &str,
        code: i64,
        reason: &str,
        message: String,
        started: Instant,
    ) {
        tracing::warn!(connector = self.name(), method, "{message}");
        self.emit(&json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message, "data": { "connector": self.name(), "reason": reason } } }));
        self.record(method, false, started, Some(message));
    }

    fn record(&self, method: &str, ok: bool, started: Instant, error: Option<String>) {
        if let Some(hook) = &self.on_call {
            hook(&BridgedCall {
                connector: self.name().to_owned(),
                method: method.to_owned(),
                ok,
                latency: started.elapsed(),
                http_status: None,
                error,
            });
        }
    }

    /// One client message: POSTed to the endpoint; a request waits for its answer on the
    /// stream, bounded by the timeout.
    async fn forward(self: Arc<Self>, message: Value, kind: Kind) {
        let started = Instant::now();
        if kind.is_initialize() {
            self.state().initialize = Some(message.clone());
        } else if kind.method() == "notifications/initialized" {
            self.state().initialized = Some(message.clone());
        }
        let mut answered = None;
        if let Kind::Request { id, method } = &kind {
            let (tx, rx) = oneshot::channel();
            answered = Some(rx);
            self.state().pending.insert(
                key(id),
                Pending {
                    id: id.clone(),
                    method: method.clone(),
                    started,
                    answered: tx,
                },
            );
        }
        let posted = tokio::time::timeout(self.timeout, self.post(&message, None)).await;
        let failure = match posted {
            Ok(Ok(())) => None,
            Ok(Err((reason, text))) => Some((BRIDGE_ERROR, reason, text)),
            Err(_) => Some((
                TIMEOUT_ERROR,
                "timed_out",
                format!(
                    "{} did not take {} within {} ms (its timeout_ms)",
                    self.name(),
                    kind.method(),
                    self.timeout.as_millis()
                ),
            )),
        };
        let Kind::Request { id, method } = &kind else {
            if let Some((_, _, text)) = failure {
                tracing::warn!(
                    connector = self.name(),
                    "could not deliver a notification: {text}"
                );
            }
            return;
        };
        if let Some((code, reason, text)) = failure {
            if self.state().pending.remove(&key(id)).is_some() {
                self.answer_error(id, method, code, reason, text, started);
            }
            return;
        }
        // Delivered: the answer comes on the stream, or the bound passes.
        let left = self.timeout.saturating_sub(started.elapsed());
        if let Some(answered) = answered {
            let _ = tokio::time::timeout(left, answered).await;
        }
        if self.state().pending.remove(&key(id)).is_some() {
            let text = format!(
                "{} did not answer {method} within {} ms (its timeout_ms)",
                self.name(),
                self.timeout.as_millis()
            );
            self.answer_error(id, method, TIMEOUT_ERROR, "timed_out", text, started);
        }
    }

    /// POSTs `message` to the stream's endpoint (waiting for one), renewing once on a 401.
    /// To `fixed` (a new session's endpoint, for the replayed handshake) nothing is retried
    /// elsewhere.
    async fn post(
        &self,
        message: &Value,
        fixed: Option<&str>,
    ) -> Result<(), (&'static str, String)> {
        let mut renewed = false;
        let mut endpoint = self.endpoint.subscribe();
        loop {
            let url = match fixed {
                Some(url) => url.to_owned(),
                None => loop {
                    if let Some(url) = endpoint.borrow_and_update().clone() {
                        break url;
                    }
                    endpoint
                        .changed()
                        .await
                        .map_err(|_| ("unreachable", format!("{} is unreachable", self.name())))?;
                },
            };
            let (request, bearer) = self.request(Method::POST, &url);
            let response = request
                .header(CONTENT_TYPE, "application/json")
                .json(message)
                .send()
                .await;
            let response = match response {
                Ok(r) => r,
                Err(e) if fixed.is_some() => {
                    return Err((
                        "unreachable",
                        format!("{} is unreachable ({e})", self.name()),
                    ))
                }
                // The stream will notice too and open a new session; this message waits for it.
                Err(e) if e.is_connect() => {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    continue;
                }
                Err(e) => {
                    return Err((
                        "dropped",
                        format!("the connection to {} dropped ({e})", self.name()),
                    ))
                }
            };
            match response.status() {
                StatusCode::UNAUTHORIZED if !renewed => {
                    renewed = true;
                    self.credentials
                        .renew(bearer)
                        .await
                        .map_err(|e| ("needs_authorization", e))?;
                }
                StatusCode::UNAUTHORIZED => {
                    return Err((
                        "needs_authorization",
                        format!(
                            "{} refused the renewed credential too: authorize {} in Patchbay",
                            self.name(),
                            self.name()
                        ),
                    ))
                }
                StatusCode::NOT_FOUND if fixed.is_some() => {
                    return Err((
                        "session_lost",
                        format!("{} forgot the new session", self.name()),
                    ))
                }
                // The session behind this endpoint is gone: wait for the stream's next one.
                StatusCode::NOT_FOUND => {
                    let _ = self.endpoint.send_if_modified(|e| {
                        let stale = e.as_deref() == Some(url.as_str());
                        if stale {
                            *e = None;
                        }
                        stale
                    });
                }
                status if status.is_success() => return Ok(()),
                status => {
                    let detail = super::error_detail(response).await;
                    return Err((
                        "http_status",
                        format!("{} answered HTTP {status}: {detail}", self.name()),
                    ));
                }
            }
        }
    }

    /// The event stream: opened, read, and opened again when it drops, until aborted.
    async fn stream(self: Arc<Self>) {
        let mut backoff = Duration::from_millis(250);
        let mut renewed = false;
        loop {
            let (request, bearer) = self.request(Method::GET, self.credentials.url());
            match request.header(ACCEPT, "text/event-stream").send().await {
                Ok(response) if response.status() == StatusCode::UNAUTHORIZED && !renewed => {
                    renewed = true;
                    if let Err(e) = self.credentials.renew(bearer).await {
                        self.fail_pending("needs_authorization", &e);
                        tracing::warn!(connector = self.name(), "{e}");
                    }
                    continue;
                }
                Ok(response) if response.status().is_success() => {
                    renewed = false;
                    backoff = Duration::from_millis(250);
                    self.read(response).await;
                    self.endpoint.send_replace(None);
                    self.fail_pending(
                        "dropped",
                        &format!(
                            "the stream from {} dropped before the answer; send it again",
                            self.name()
                        ),
                    );
                    tracing::info!(
                        connector = self.name(),
                        "the event stream ended; opening it again"
                    );
                }
                Ok(response) => {
                    let status = response.status();
                    let detail = super::error_detail(response).await;
                    self.fail_pending(
                        "http_status",
                        &format!("{} answered HTTP {status}: {detail}", self.name()),
                    );
                    tracing::warn!(
                        connector = self.name(),
                        "the event stream answered HTTP {status}"
                    );
                }
                Err(e) => tracing::debug!(connector = self.name(), "the event stream: {e}"),
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(STREAM_BACKOFF_MAX);
        }
    }

    /// Answers every request waiting on the stream with an error (their answers are lost).
    fn fail_pending(&self, reason: &str, text: &str) {
        let pending: Vec<Pending> = self.state().pending.drain().map(|(_, v)| v).collect();
        for p in pending {
            self.answer_error(
                &p.id,
                &p.method,
                BRIDGE_ERROR,
                reason,
                text.to_owned(),
                p.started,
            );
            let _ = p.answered.send(());
        }
    }

    async fn read(self: &Arc<Self>, mut response: reqwest::Response) {
        let base = response.url().clone();
        let mut events = SseParser::default();
        while let Ok(Some(chunk)) = response.chunk().await {
            let completed = match events.push(&chunk) {
                Ok(completed) => completed,
                Err(e) => {
                    // As a dropped stream: opened again.
                    tracing::warn!(connector = self.name(), "dropping the event stream: {e}");
                    return;
                }
            };
            for event in completed {
                match event.kind.as_str() {
                    // (An event that only set an id or retry has no data: not the endpoint.)
                    "endpoint" if !event.data.is_empty() => match base.join(event.data.trim()) {
                        Ok(url) => self.opened(url.to_string()),
                        Err(e) => tracing::warn!(
                            connector = self.name(),
                            "the endpoint event is not a URL ({e})"
                        ),
                    },
                    "message" if !event.data.is_empty() => {
                        match serde_json::from_str::<Value>(&event.data) {
                            Ok(message) => self.received(message),
                            Err(e) => tracing::warn!(
                                connector = self.name(),
                                "skipped an SSE event that is not JSON ({e})"
                            ),
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// A new session's endpoint. After the first, the client's handshake is replayed on it
    /// (the initialize's answer swallowed) before anything else may use it.
    fn opened(self: &Arc<Self>, url: String) {
        let replay = {
            let mut state = self.state();
            state.streams += 1;
            (state.streams > 1).then(|| (state.initialize.clone(), state.initialized.clone()))
        };
        let Some((Some(initialize), initialized)) = replay else {
            self.endpoint.send_replace(Some(url));
            return;
        };
        let swallowed = initialize.get("id").map(key);
        if let Some(id) = &swallowed {
            self.state().swallow.insert(id.clone());
        }
        let this = self.clone();
        tokio::spawn(async move {
            let mut sent = this.post(&initialize, Some(&url)).await;
            // The initialize's answer first (it comes on the stream), then the notification.
            let deadline = Instant::now() + this.timeout;
            while swallowed
                .as_ref()
                .is_some_and(|id| this.state().swallow.contains(id))
                && Instant::now() < deadline
                && sent.is_ok()
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            if let (Ok(()), Some(initialized)) = (&sent, initialized) {
                sent = this.post(&initialized, Some(&url)).await;
            }
            match sent {
                Ok(()) => tracing::info!(connector = this.name(), "the session was started again"),
                Err((_, e)) => {
                    tracing::warn!(
                        connector = this.name(),
                        "cannot start the session again: {e}"
                    )
                }
            }
            // Even after a failed replay: requests then get the server's own errors, not a wait.
            this.endpoint.send_replace(Some(url));
        });
    }

    /// A server message: the answer to a request (or to a replay, swallowed), or anything else.
    fn received(&self, message: Value) {
        let is_answer = message.get("result").is_some() || message.get("error").is_some();
        if is_answer {
            if let Some(id) = message.get("id") {
                let mut state = self.state();
                if state.swallow.remove(&key(id)) {
                    return;
                }
                if let Some(p) = state.pending.remove(&key(id)) {
                    drop(state);
                    self.emit(&message);
                    // Answered: a JSON-RPC error is the server's answer, not a failed call.
                    self.record(&p.method, true, p.started, None);
                    let _ = p.answered.send(());
                    return;
                }
            }
        }
        self.emit(&message);
    }
}
