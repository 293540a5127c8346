//! `patchbay connect NAME|URL`: the stdio bridge. MCP over stdin/stdout to the client (one
//! JSON-RPC message per line, the MCP stdio transport) and MCP streamable HTTP to the connector,
//! with the vault's credential injected: a drop-in for `npx mcp-remote URL` for clients that only
//! launch commands.
//!
//! - The upstream is the official SDK's streamable-HTTP client (rmcp's
//!   `StreamableHttpClientTransport`, typed messages) over our own HTTP client
//!   (`upstream_http`), which carries the credentials: rmcp speaks both revisions, the 2025
//!   sessions (`Mcp-Session-Id`, the negotiated `MCP-Protocol-Version`, the server's own GET
//!   stream, DELETE at the end) and 2026-07-28's stateless core (`MCP-Protocol-Version` equal to
//!   the request's `_meta`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` from `x-mcp-header`, tools
//!   whose `x-mcp-header` is invalid left out of `tools/list`), and resumes a response stream
//!   that ends early after the server's `retry`, with `Last-Event-ID` (SEP-1699).
//! - Per server, newest first: a client that sends `initialize` (2025) makes the bridge ask
//!   `server/discover` (2026-07-28) first. A server that speaks 2026-07-28 gets the client's
//!   requests with the `_meta` it does not know to send, and the client an `initialize` answer
//!   made from discovery; what has no 2026-07-28 counterpart is refused with a JSON-RPC error
//!   that says so (reason `untranslatable`). Any other server gets the client's own
//!   `initialize`, and both ends speak 2025. A client that opens with anything else (a 2026
//!   client, with its own `_meta`) is passed through as it is.
//! - On the 2026-07-28 wire, a new transport whose first request would be `tools/list` opens
//!   with the bridge's own `server/discover` (its answer swallowed): rmcp hands a transport's
//!   first answer on without its tool cache, so that `tools/list` would keep its invalid tools
//!   and the `tools/call`s after it would lose their `Mcp-Param-*`.
//! - Protocol on stdout only: every line written is a serialized JSON value; diagnostics go
//!   through `tracing` (the CLI sends it to stderr).
//! - A 401 renews through [`Upstream::on_unauthorized`] (the refresher of record's locked
//!   transaction) and the request is sent again once; a credential that cannot be renewed answers
//!   the request with a JSON-RPC error saying to authorize the connector in Patchbay.
//! - An upstream that drops is reconnected: a refused connection is retried with a short backoff;
//!   a 404 for a 2025 session id (the server restarted or expired it) re-initializes by
//!   replaying the client's own `initialize` (its answer swallowed) and
//!   `notifications/initialized`, then the request goes again (rmcp's session recovery). A
//!   `tools/call` whose connection dropped after it was sent is never sent again (it may have
//!   run): it gets an error saying so; other requests are sent again once.
//! - Every request is bounded by the connector's `timeout_ms` ([`DEFAULT_REQUEST_TIMEOUT`] when
//!   it sets none), renewal and reconnection included; every request's outcome is handed to the
//!   call hook (the health board).
//!
//! Its parts: `client_io` (the client's lines in, answers out), `link` (the rmcp transport and its
//! pump), `revision` (which revision upstream, and translating between them), `upstream_http`
//! (our auth as a layer under rmcp), `handoff` (the lean bridge's start).
//!
//! A connector on the legacy HTTP+SSE transport is bridged by `sse` (its own promises there): rmcp
//! 3 has no client for that transport (0.11 dropped it), so that bridge keeps its own.

mod client_io;
mod handoff;
mod link;
mod revision;
mod sse;
pub(crate) mod upstream_http;
pub use handoff::{renewal, run_handoff, Delegated, Handoff};
// The one SSE parser, shared with the connection check's legacy SSE client.
pub use patchbay_check::sse::{SseEvent, SseEventTooLarge, SseParser, MAX_SSE_EVENT_BYTES};

use crate::upstream::{Upstream, UpstreamError, UpstreamTransport, Upstreams};
pub use client_io::stdout_handle;
use client_io::{emit_to, read_client, write_lines, BridgeIo, Out};
pub(crate) use link::stream_backoff;
use link::{is_stream_ended, lock, Link};
use patchbay_check::{CallRecord, CallRecorder, HealthError, TransportKind, HEALTH_FILE};
use patchbay_core::{Patchbay, Refresher};
use patchbay_vault::Secret;
use revision::*;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinHandle, JoinSet};
use upstream_http::{UpstreamHttp, UpstreamHttpError};

/// The bound on one request when the connector sets no `timeout_ms`.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The bound on opening a TCP connection (within the request's own bound).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The bound on the goodbye (DELETE of the session) at the end of stdin; a connector whose
/// `timeout_ms` is shorter gets that (the goodbye is a request like any other). Past it the
/// bridge ends without it: the server forgets the session on its own.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);
/// The waits before each new try when the upstream refused the connection (it never got the
/// request, so any request may go again): enough for a restarting server to listen again.
const RECONNECT_DELAYS: [Duration; 5] = [
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];
/// The longest wait between tries to reopen the server's stream.
const STREAM_BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How many times in a row a stream is reopened before it is given up.
const STREAM_RETRIES: usize = 8;
/// How much of an upstream's error body is kept for the client's error message.
const DETAIL_MAX: usize = 300;

/// The JSON-RPC error code of the bridge's own errors (the implementation-defined server range;
/// the MCP SDKs use it for a closed connection). `data.reason` says which.
pub const BRIDGE_ERROR: i64 = -32000;
/// The MCP SDKs' code for a request that timed out.
pub const TIMEOUT_ERROR: i64 = -32001;

#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    #[error("cannot read the client's messages on stdin: {0}")]
    Stdin(std::io::Error),
    #[error("cannot write to stdout: {0}")]
    Stdout(std::io::Error),
}

/// What the bridge needs of an upstream: where it is, what to send, and how to renew a refused
/// credential. [`Upstream`] is the real one; the tests use their own.
pub trait Credentials: Send + Sync + 'static {
    /// The connector's name, for errors and the health board.
    fn connector(&self) -> &str;
    fn url(&self) -> &str;
    /// The connector's `timeout_ms`.
    fn timeout(&self) -> Option<Duration>;
    /// Every header to send (the connector's own, and its bearer).
    fn headers(&self) -> Vec<(String, Secret)>;
    /// The bearer the headers carry now (compared after a 401, to renew once per burst).
    fn bearer(&self) -> Option<Secret>;
    /// The upstream refused `rejected` with a 401: renew it, or say (one sentence that tells
    /// the user what to do) why not.
    fn renew(&self, rejected: Option<Secret>) -> impl Future<Output = Result<(), String>> + Send;
    /// The upstream answered 403 `insufficient_scope` naming `scope`: authorize for more access
    /// (a step-up, bounded per session), or say why not. By default nothing can.
    fn step_up(&self, scope: String) -> impl Future<Output = Result<(), String>> + Send {
        let connector = self.connector().to_owned();
        async move {
            Err(format!(
                "{connector} needs more access (\"{scope}\"); authorize it again in Patchbay (`patchbay authorize {connector}`)"
            ))
        }
    }
}

impl Credentials for Upstream {
    fn connector(&self) -> &str {
        self.name()
    }

    fn url(&self) -> &str {
        Upstream::url(self)
    }

    fn timeout(&self) -> Option<Duration> {
        Upstream::timeout(self)
    }

    fn headers(&self) -> Vec<(String, Secret)> {
        self.request_headers()
    }

    fn bearer(&self) -> Option<Secret> {
        Upstream::bearer(self)
    }

    async fn renew(&self, rejected: Option<Secret>) -> Result<(), String> {
        self.on_unauthorized(rejected.as_ref())
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn step_up(&self, scope: String) -> Result<(), String> {
        self.on_insufficient_scope(&scope)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// One request through the bridge, for the health board.
#[derive(Debug, Clone)]
pub struct BridgedCall {
    pub connector: String,
    /// The JSON-RPC method (`tools/call`, `tools/list`, ...).
    pub method: String,
    pub ok: bool,
    /// From reading the client's line to the upstream's answer (renewal and reconnection
    /// included).
    pub latency: Duration,
    /// The upstream's HTTP status when it answered with an error.
    pub http_status: Option<u16>,
    /// What the client was told, when it failed.
    pub error: Option<String>,
}

/// Called once per request the client made (never for notifications, responses, or the
/// bridge's own replays). Runs on the bridge's task: keep it short.
pub type CallHook = Arc<dyn Fn(&BridgedCall) + Send + Sync>;

/// The call hook that records every request on the health board (`health.sqlite` in the data
/// directory), as a check is recorded: the board fills from real use.
pub fn health_hook(patchbay: &Patchbay) -> Result<CallHook, HealthError> {
    health_hook_at(&health_file(patchbay))
}

/// The health board's file in `patchbay`'s data directory.
pub fn health_file(patchbay: &Patchbay) -> std::path::PathBuf {
    patchbay.paths.data_dir.join(HEALTH_FILE)
}

/// [`health_hook`] on the health board at `file`. The calls are written by a thread of their own
/// (the bridge answers on one thread, which a commit per call held up) to the board's spool, not
/// the board itself: a bridge never loads SQLite (see `patchbay_check::spool`). The last are
/// written when the hook is dropped at the session's end.
pub fn health_hook_at(file: &std::path::Path) -> Result<CallHook, HealthError> {
    let recorder = CallRecorder::spool(file, "the bridge's calls")?;
    Ok(Arc::new(move |call: &BridgedCall| {
        recorder.record(CallRecord {
            connector: call.connector.clone(),
            at: chrono::Utc::now(),
            latency: call.latency,
            transport: TransportKind::StreamableHttp,
            http_status: call.http_status,
            error: call.error.clone(),
        });
    }))
}

/// `patchbay connect NAME|URL` on this process's stdin and stdout: the connector in use named
/// (or with the URL) `target`, its 401s renewed through `refresher`, every request recorded on
/// the health board.
pub async fn serve(
    patchbay: Arc<Patchbay>,
    refresher: Option<Refresher>,
    target: &str,
) -> Result<(), ServeError> {
    let upstream = Upstreams::new(patchbay.clone(), refresher).resolve(target)?;
    serve_upstream(&patchbay, upstream).await
}

/// [`serve`] with the upstream already resolved.
pub async fn serve_upstream(patchbay: &Patchbay, upstream: Upstream) -> Result<(), ServeError> {
    let hook = match health_hook(patchbay) {
        Ok(hook) => Some(hook),
        Err(e) => {
            tracing::warn!("the health board cannot be opened ({e}); calls are not recorded");
            None
        }
    };
    tracing::info!(
        connector = upstream.name(),
        "bridging stdio to {}",
        upstream.url()
    );
    let stdout = stdout_handle().map_err(StdioError::Stdout)?;
    let transport = upstream.transport();
    run_for(
        transport,
        Arc::new(upstream),
        hook,
        tokio::io::stdin(),
        stdout,
    )
    .await?;
    Ok(())
}

/// Why `patchbay connect` could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error(transparent)]
    Stdio(#[from] StdioError),
}

/// [`run`] for a connector on `transport`: streamable HTTP, or the legacy HTTP+SSE transport.
pub async fn run_for<C, R, W>(
    transport: UpstreamTransport,
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
    match transport {
        UpstreamTransport::StreamableHttp => run(credentials, on_call, input, output).await,
        UpstreamTransport::Sse => sse::run(credentials, on_call, input, output).await,
    }
}

/// Runs the bridge until `input` ends: reads the client's messages from `input`, writes the
/// upstream's to `output`. Returns after the upstream session (if any) is deleted.
pub async fn run<C, R, W>(
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
    let timeout = credentials.timeout().unwrap_or(DEFAULT_REQUEST_TIMEOUT);
    let http = UpstreamHttp::new(credentials.clone(), timeout)
        .map_err(|e| StdioError::Client(e.to_string()))?;
    let (out, lines_out) = mpsc::unbounded_channel();
    let writer = tokio::task::spawn_blocking(move || write_lines(output, lines_out));
    let bridge = Arc::new(Bridge {
        credentials,
        http,
        timeout,
        out,
        link: tokio::sync::Mutex::new(None),
        revision: Mutex::new(Revision::Unknown),
        initialize: Mutex::new(None),
        on_call,
        probes: AtomicU64::new(0),
    });

    let read = read_client(input, &bridge.out, |message, kind| {
        bridge.clone().forward(message, kind)
    })
    .await;
    // The client is gone (or piped its last message) and what it asked has finished: say
    // goodbye upstream.
    bridge.close().await;
    let _ = bridge.out.send(Out::End);
    let _ = writer.await;
    read
}

/// The bridge for a session Patchbay cannot bridge (the connector is not in use, the vault does
/// not answer, ...): until `input` ends, every request, `initialize` first, is answered with a
/// JSON-RPC error carrying `message` and `data.reason`. A client that launched `patchbay
/// connect` then shows why, where an exit would show only "connection closed".
pub async fn refuse_session<R, W>(
    message: &str,
    reason: &str,
    input: R,
    output: W,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin,
    W: Write + Send + 'static,
{
    let (out, lines_out) = mpsc::unbounded_channel();
    let writer = tokio::task::spawn_blocking(move || write_lines(output, lines_out));
    let error = json!({ "code": BRIDGE_ERROR, "message": message, "data": { "reason": reason } });
    let read = read_client(input, &out, |_, kind| {
        if let Kind::Request { id, .. } = kind {
            emit_to(
                &out,
                &json!({ "jsonrpc": "2.0", "id": id, "error": error.clone() }),
            );
        }
        std::future::ready(())
    })
    .await;
    let _ = out.send(Out::End);
    let _ = writer.await;
    read
}

/// Why a client's request failed, as the client is told.
#[derive(Debug)]
enum Failure {
    NeedsAuthorization(String),
    /// A 403 `insufficient_scope` that a step-up did not (or could not) mend.
    NeedsMoreAccess(String),
    Unreachable(String),
    MayHaveRun(String),
    Dropped(String),
    Status {
        status: u16,
        detail: String,
    },
    SessionLost(String),
    TimedOut(Duration),
    /// The client's message has no counterpart in the server's revision.
    Untranslatable(String),
    /// Not a message the bridge can send (not JSON-RPC as MCP defines it).
    Invalid(String),
}

impl Failure {
    fn reason(&self) -> &'static str {
        match self {
            Failure::NeedsAuthorization(_) => "needs_authorization",
            Failure::NeedsMoreAccess(_) => "needs_more_access",
            Failure::Unreachable(_) => "unreachable",
            Failure::MayHaveRun(_) => "may_have_run",
            Failure::Dropped(_) => "dropped",
            Failure::Status { .. } => "http_status",
            Failure::SessionLost(_) => "session_lost",
            Failure::TimedOut(_) => "timed_out",
            Failure::Untranslatable(_) => "untranslatable",
            Failure::Invalid(_) => "invalid_message",
        }
    }

    fn http_status(&self) -> Option<u16> {
        match self {
            Failure::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    fn code(&self) -> i64 {
        match self {
            Failure::TimedOut(_) => TIMEOUT_ERROR,
            Failure::Invalid(_) => -32600,
            _ => BRIDGE_ERROR,
        }
    }

    fn message(&self, connector: &str, method: &str) -> String {
        match self {
            // The renewal's error already names the connector and says to authorize it.
            Failure::NeedsAuthorization(why) | Failure::NeedsMoreAccess(why) => why.clone(),
            Failure::Unreachable(e) => format!("{connector} is unreachable ({e}); Patchbay tried to reconnect and will again on the next request"),
            Failure::MayHaveRun(e) => format!("the connection to {connector} dropped during {method} ({e}); the call may have run, so Patchbay did not send it again"),
            Failure::Dropped(e) => format!("the connection to {connector} dropped during {method} ({e})"),
            Failure::Status { status, detail } => format!("{connector} answered HTTP {status}: {detail}"),
            Failure::SessionLost(e) => format!("the session with {connector} ended and could not be started again: {e}"),
            Failure::TimedOut(limit) => format!("{connector} did not answer {method} within {} ms (its timeout_ms)", limit.as_millis()),
            Failure::Untranslatable(why) => format!("{connector} speaks MCP {STATELESS_REVISION} and {method} cannot be translated to it: {why}"),
            Failure::Invalid(why) => format!("Patchbay cannot send this message to {connector}: {why}"),
        }
    }
}

impl From<StreamableHttpError<UpstreamHttpError>> for Failure {
    fn from(e: StreamableHttpError<UpstreamHttpError>) -> Failure {
        match e {
            StreamableHttpError::Client(UpstreamHttpError::NeedsAuthorization(why)) => {
                Failure::NeedsAuthorization(why)
            }
            StreamableHttpError::Client(UpstreamHttpError::NeedsMoreAccess(why)) => {
                Failure::NeedsMoreAccess(why)
            }
            StreamableHttpError::Client(UpstreamHttpError::Unreached(e)) => Failure::Unreachable(e),
            StreamableHttpError::Client(UpstreamHttpError::Dropped(e)) => Failure::Dropped(e),
            StreamableHttpError::Client(UpstreamHttpError::Status { status, detail }) => {
                Failure::Status { status, detail }
            }
            e @ (StreamableHttpError::SessionExpired
            | StreamableHttpError::SessionRecoveryTimeout
            | StreamableHttpError::ReinitializationFailed(_)) => {
                Failure::SessionLost(e.to_string())
            }
            e => Failure::Dropped(e.to_string()),
        }
    }
}

struct Bridge<C> {
    credentials: Arc<C>,
    http: UpstreamHttp<C>,
    timeout: Duration,
    out: mpsc::UnboundedSender<Out>,
    /// The transport in use (a new one after it fails for good).
    link: tokio::sync::Mutex<Option<Arc<Link>>>,
    revision: Mutex<Revision>,
    /// The client's own `initialize`, replayed on a new transport to a 2025 server.
    initialize: Mutex<Option<Value>>,
    on_call: Option<CallHook>,
    /// Numbers the bridge's own `server/discover` requests.
    probes: AtomicU64,
}

impl<C: Credentials> Bridge<C> {
    fn name(&self) -> &str {
        self.credentials.connector()
    }

    fn emit(&self, message: &Value) {
        emit_to(&self.out, message);
    }

    fn revision(&self) -> Revision {
        lock(&self.revision).clone()
    }

    /// One client message to the upstream, and the answer (or an error) to the client.
    async fn forward(self: Arc<Self>, message: Value, kind: Kind) {
        let started = Instant::now();
        let delivered = tokio::time::timeout(self.timeout, self.deliver(&message, &kind))
            .await
            .unwrap_or(Err(Failure::TimedOut(self.timeout)));
        let latency = started.elapsed();
        let method = kind.method();
        match (&kind, &delivered) {
            (Kind::Request { .. }, Ok(Some(answer))) => self.emit(answer),
            (Kind::Request { id, .. }, Err(failure)) => {
                let text = failure.message(self.name(), method);
                tracing::warn!(connector = self.name(), method, "{text}");
                self.emit(&json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {
                        "code": failure.code(),
                        "message": text,
                        "data": { "connector": self.name(), "reason": failure.reason() }
                    }
                }));
            }
            (_, Err(failure)) => {
                tracing::warn!(
                    connector = self.name(),
                    method,
                    "could not deliver a {}: {}",
                    if method.is_empty() {
                        "message"
                    } else {
                        "notification"
                    },
                    failure.message(self.name(), method)
                );
            }
            _ => {}
        }
        if let (Kind::Request { .. }, Some(hook)) = (&kind, &self.on_call) {
            hook(&BridgedCall {
                connector: self.name().to_owned(),
                method: method.to_owned(),
                ok: delivered.is_ok(),
                latency,
                http_status: delivered.as_ref().err().and_then(Failure::http_status),
                error: delivered
                    .as_ref()
                    .err()
                    .map(|f| f.message(self.name(), method)),
            });
        }
    }

    /// The answer to a request (`None` for anything else), in the client's revision.
    async fn deliver(
        self: &Arc<Self>,
        message: &Value,
        kind: &Kind,
    ) -> Result<Option<Value>, Failure> {
        if kind.is_initialize() && matches!(self.revision(), Revision::Unknown) {
            return self.negotiate(message, kind).await.map(Some);
        }
        let translated = match self.revision() {
            Revision::Translated(meta) => match self.translate(message, kind, meta)? {
                Translation::Send(message) => message,
                Translation::Answer(answer) => return Ok(answer),
            },
            Revision::Unknown => {
                // A client that opens with anything but `initialize` speaks for itself.
                *lock(&self.revision) = Revision::Same;
                message.clone()
            }
            Revision::Same => message.clone(),
        };
        let Kind::Request { id, .. } = kind else {
            let link = self.link(None).await?;
            return link.send(&translated).await.map(|()| None);
        };
        let answer = self.request(&translated, id, kind).await?;
        match self.revision() {
            Revision::Translated(_) => untranslated_answer(answer, kind).map(Some),
            _ => Ok(Some(answer)),
        }
    }

    /// A request, sent again once when its connection dropped, unless it may have acted.
    async fn request(&self, message: &Value, id: &Value, kind: &Kind) -> Result<Value, Failure> {
        let mut resent = false;
        loop {
            let link = self.link(Some(message)).await?;
            let failure = match link.request(message, id).await {
                Ok(answer) if is_stream_ended(&answer) => {
                    Failure::Dropped("the server's stream ended before the response".into())
                }
                Ok(answer) => return Ok(answer),
                Err(failure @ Failure::Dropped(_)) => failure,
                Err(failure) => return Err(failure),
            };
            let Failure::Dropped(why) = failure else {
                unreachable!("only a drop is retried")
            };
            if kind.may_act() {
                return Err(Failure::MayHaveRun(why));
            }
            if resent {
                return Err(Failure::Dropped(why));
            }
            resent = true;
            tracing::info!(
                connector = self.name(),
                "the connection dropped ({why}); sending again"
            );
        }
    }

    /// The transport in use, or a new one when there is none or it failed for good. To a 2025
    /// server a new transport starts the session again with the client's own `initialize` (its
    /// answer swallowed) and `notifications/initialized`. On the 2026-07-28 wire a new
    /// transport whose `first` message is `tools/list` opens with the bridge's own
    /// `server/discover` (its answer swallowed): rmcp hands a transport's first answer on
    /// without its tool cache, which `Mcp-Param-*` and the invalid tools' exclusion need.
    async fn link(&self, first: Option<&Value>) -> Result<Arc<Link>, Failure> {
        let mut slot = tokio::time::timeout(self.timeout, self.link.lock())
            .await
            .map_err(|_| Failure::TimedOut(self.timeout))?;
        if let Some(link) = slot.as_ref().filter(|link| link.alive()) {
            return Ok(link.clone());
        }
        let link = Link::start(self.http.clone(), self.credentials.url(), self.out.clone());
        let replay = lock(&self.initialize).clone();
        if let (Revision::Same, Some(initialize)) = (self.revision(), replay) {
            let id = initialize.get("id").cloned().unwrap_or(Value::Null);
            let answer = link
                .request(&initialize, &id)
                .await
                .map_err(|f| Failure::SessionLost(f.message(self.name(), "initialize")))?;
            if let Some(error) = answer.get("error") {
                return Err(Failure::SessionLost(format!(
                    "it refused the initialize: {error}"
                )));
            }
            link.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
                .await
                .map_err(|f| {
                    Failure::SessionLost(f.message(self.name(), "notifications/initialized"))
                })?;
            tracing::info!(connector = self.name(), "the session was started again");
        } else if let Some(meta) = first
            .filter(|first| first.get("method").and_then(Value::as_str) == Some("tools/list"))
            .and_then(|first| first.pointer("/params/_meta"))
            // rmcp caches tools from 2026-07-28 on (revisions are dates: they sort as text).
            .filter(|meta| {
                meta.get(META_PROTOCOL_VERSION)
                    .and_then(Value::as_str)
                    .is_some_and(|version| version >= STATELESS_REVISION)
            })
        {
            // Whatever it answers, the transport is open; a failure to reach it is the request's.
            self.discover(&link, meta.clone()).await?;
        }
        *slot = Some(link.clone());
        Ok(link)
    }

    /// A 2025 client's `initialize`: `server/discover` first (2026-07-28, with the client's
    /// info and capabilities); a server that speaks it gets the client's requests translated
    /// and the client an `initialize` answer made from discovery. Any other server gets the
    /// client's own `initialize` on the same transport (rmcp's fallback), and its answer.
    async fn negotiate(&self, initialize: &Value, kind: &Kind) -> Result<Value, Failure> {
        *lock(&self.initialize) = Some(initialize.clone());
        let params = initialize.get("params").cloned().unwrap_or(Value::Null);
        let meta = RequestMeta {
            protocol_version: STATELESS_REVISION.into(),
            client_info: params
                .get("clientInfo")
                .cloned()
                .unwrap_or_else(|| json!({ "name": "unknown", "version": "0" })),
            client_capabilities: params.get("capabilities").cloned().unwrap_or(json!({})),
            log_level: None,
        };
        let link = self.link(None).await?;
        let discovered = self.discover(&link, Value::Object(meta.object())).await?;
        let supported: Vec<&str> = discovered
            .pointer("/result/supportedVersions")
            .or_else(|| discovered.pointer("/error/data/supported"))
            .and_then(Value::as_array)
            .map(|versions| versions.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let code = discovered.pointer("/error/code").and_then(Value::as_i64);
        match (discovered.get("result"), code) {
            (Some(result), _) if supported.contains(&STATELESS_REVISION) => {
                tracing::info!(connector = self.name(), "the server speaks MCP {STATELESS_REVISION}; translating for a client that initializes");
                *lock(&self.revision) = Revision::Translated(Box::new(meta));
                return Ok(initialize_answer(kind, &params, result, self.name()));
            }
            (_, Some(code)) if MODERN_REJECTIONS.contains(&code) => {
                let said = discovered
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                return Err(Failure::Untranslatable(format!(
                    "it refused the bridge's server/discover ({said})"
                )));
            }
            (_, Some(UNSUPPORTED_PROTOCOL_VERSION)) | (Some(_), _) => {
                tracing::info!(
                    connector = self.name(),
                    "the server offers {supported:?}; initializing"
                );
            }
            _ => tracing::debug!(
                connector = self.name(),
                "the server does not discover; initializing"
            ),
        }
        *lock(&self.revision) = Revision::Same;
        let id = kind.id().cloned().unwrap_or(Value::Null);
        link.request(initialize, &id).await
    }

    /// The bridge's own `server/discover` on `link`, with `meta`, and its answer.
    async fn discover(&self, link: &Link, meta: Value) -> Result<Value, Failure> {
        let probe_id = json!(format!(
            "patchbay-discover-{}",
            self.probes.fetch_add(1, Ordering::Relaxed)
        ));
        let probe = json!({
            "jsonrpc": "2.0",
            "id": probe_id,
            "method": "server/discover",
            "params": { "_meta": meta }
        });
        link.request(&probe, &probe_id).await
    }

    /// A 2025 client's message for a 2026-07-28 server: sent with `_meta` added, answered by
    /// the bridge, or refused with the reason.
    fn translate(
        &self,
        message: &Value,
        kind: &Kind,
        meta: Box<RequestMeta>,
    ) -> Result<Translation, Failure> {
        let answer = |result: Value| {
            Translation::Answer(
                kind.id()
                    .map(|id| json!({ "jsonrpc": "2.0", "id": id, "result": result })),
            )
        };
        Ok(match (kind, kind.method()) {
            // The bridge answered `initialize`; there is no session to confirm.
            (Kind::Notification { .. }, "notifications/initialized") => Translation::Answer(None),
            (Kind::Request { .. }, "initialize") => answer(json!({
                "protocolVersion": NEWEST_WITH_INITIALIZE, "capabilities": {}, "serverInfo": { "name": self.name(), "version": "0" }
            })),
            (Kind::Request { .. }, "logging/setLevel") => {
                if let Revision::Translated(meta) = &mut *lock(&self.revision) {
                    meta.log_level = message.pointer("/params/level").cloned();
                }
                answer(json!({}))
            }
            (Kind::Request { .. }, "resources/subscribe" | "resources/unsubscribe") => {
                return Err(Failure::Untranslatable(
                    "2026-07-28 replaced resource subscriptions with subscriptions/listen, a stream a 2025 client cannot hold through the bridge".into(),
                ));
            }
            (Kind::Request { .. }, _) => Translation::Send(meta.add_to(message)),
            _ => Translation::Send(message.clone()),
        })
    }

    /// The goodbye: the transport ends (rmcp deletes a 2025 session).
    async fn close(&self) {
        let link = match tokio::time::timeout(DELETE_TIMEOUT, self.link.lock()).await {
            Ok(mut slot) => slot.take(),
            Err(_) => None,
        };
        if let Some(link) = link {
            link.close(self.timeout.min(DELETE_TIMEOUT)).await;
        }
    }
}

/// reqwest's message and its causes ("error sending request: connection refused"), each cause
/// once.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

fn is_response(message: &Value) -> bool {
    message.get("result").is_some() || message.get("error").is_some()
}

/// An error body, short: a JSON-RPC error's message, an OAuth error's description, or the text.
async fn error_detail(response: reqwest::Response) -> String {
    detail_of(&response.text().await.unwrap_or_default())
}

/// [`error_detail`] of a body already read.
pub(crate) fn detail_of(text: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let said = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error_description"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let detail = said.unwrap_or_else(|| text.to_owned());
    let detail = detail.trim();
    if detail.is_empty() {
        return "no detail".into();
    }
    match detail.char_indices().nth(DETAIL_MAX) {
        Some((cut, _)) => format!("{}…", &detail[..cut]),
        None => detail.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_apart() {
        let request = Kind::of(&json!({"jsonrpc":"2.0","id":0,"method":"tools/call"}));
        assert!(matches!(&request, Kind::Request { id, .. } if id == &json!(0)));
        assert!(request.may_act());
        let list = Kind::of(&json!({"jsonrpc":"2.0","id":"a","method":"tools/list"}));
        assert!(!list.may_act());
        assert!(matches!(
            Kind::of(&json!({"jsonrpc":"2.0","method":"notifications/initialized"})),
            Kind::Notification { .. }
        ));
        assert!(Kind::of(&json!({"jsonrpc":"2.0","method":"initialize","id":1})).is_initialize());
        assert!(matches!(
            Kind::of(&json!({"jsonrpc":"2.0","id":3,"result":{}})),
            Kind::Other
        ));
        assert!(matches!(
            Kind::of(&json!({"jsonrpc":"2.0","id":null,"method":"x"})),
            Kind::Notification { .. }
        ));
    }
}
