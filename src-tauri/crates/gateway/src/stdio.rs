//! `patchbay connect NAME|URL`: the stdio bridge. MCP over stdin/stdout to the client (one
//! JSON-RPC message per line, the MCP stdio transport) and MCP streamable HTTP to the connector,
//! with the vault's credential injected: a drop-in for `npx mcp-remote URL` for clients that only
//! launch commands.
//!
//! - Each client message is POSTed with `Accept: application/json, text/event-stream`; a JSON
//!   answer or each `data:` event of an SSE answer goes to stdout as one line. `Mcp-Session-Id`
//!   from `initialize` and the negotiated `MCP-Protocol-Version` go on every later request. After
//!   `notifications/initialized` the server's own stream (GET) is opened when it offers one
//!   (405: none). End of stdin deletes the session (DELETE).
//! - Protocol on stdout only: every line written is a serialized JSON value; diagnostics go
//!   through `tracing` (the CLI sends it to stderr).
//! - A 401 renews through [`Upstream::on_unauthorized`] (the refresher of record's locked
//!   transaction) and the request is sent again once; a credential that cannot be renewed answers
//!   the request with a JSON-RPC error saying to authorize the connector in Patchbay.
//! - An upstream that drops is reconnected: a refused connection is retried with a short backoff;
//!   a 404 for the session id (the server restarted or expired it) re-initializes by replaying
//!   the client's own `initialize` (its answer swallowed) and `notifications/initialized`, then the
//!   request goes again. A `tools/call` whose connection dropped after it was sent is never sent
//!   again (it may have run): it gets an error saying so.
//! - Every request is bounded by the connector's `timeout_ms` ([`DEFAULT_REQUEST_TIMEOUT`] when
//!   it sets none), renewal and reconnection included; every request's outcome is handed to the
//!   call hook (the health board).
//!
//! A connector on the legacy HTTP+SSE transport is bridged by `sse` (its own promises there).

mod handoff;
mod sse;
pub use handoff::{renew_for_bridge, run_handoff, Delegated, Handoff};

use crate::upstream::{Upstream, UpstreamError, UpstreamTransport, Upstreams};
use patchbay_check::{CallRecord, HealthError, HealthStore, TransportKind, HEALTH_FILE};
use patchbay_core::{Patchbay, Refresher};
use patchbay_vault::Secret;
use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::future::Future;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};

/// The bound on one request when the connector sets no `timeout_ms`.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The bound on opening a TCP connection (within the request's own bound).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The bound on the goodbye (DELETE of the session) at the end of stdin.
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
/// How much of an upstream's error body is kept for the client's error message.
const DETAIL_MAX: usize = 300;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";

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

/// [`health_hook`] on the health board at `file`.
pub fn health_hook_at(file: &std::path::Path) -> Result<CallHook, HealthError> {
    let store = HealthStore::open(file)?;
    Ok(Arc::new(move |call: &BridgedCall| {
        let record = CallRecord {
            connector: call.connector.clone(),
            at: chrono::Utc::now(),
            latency: call.latency,
            transport: TransportKind::StreamableHttp,
            http_status: call.http_status,
            error: call.error.clone(),
        };
        if let Err(e) = store.record_calls(&[record]) {
            tracing::warn!(
                connector = call.connector,
                "cannot record the call on the health board: {e}"
            );
        }
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
/// upstream's to `output`. Returns after the session is deleted upstream.
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
    let BridgeIo {
        timeout,
        http,
        out,
        writer,
    } = BridgeIo::start(credentials.as_ref(), output)?;
    let bridge = Arc::new(Bridge {
        credentials,
        http,
        timeout,
        out,
        session: Mutex::default(),
        reinitializing: tokio::sync::Mutex::new(()),
        on_call,
        closing: AtomicBool::new(false),
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

/// What both bridges start with: the request bound, an HTTP client whose connect timeout it
/// bounds, and the stdout writer (where lines go, and its thread).
struct BridgeIo {
    timeout: Duration,
    http: reqwest::Client,
    out: mpsc::UnboundedSender<Out>,
    writer: JoinHandle<()>,
}

impl BridgeIo {
    fn start<C: Credentials, W: Write + Send + 'static>(
        credentials: &C,
        output: W,
    ) -> Result<Self, StdioError> {
        let timeout = credentials.timeout().unwrap_or(DEFAULT_REQUEST_TIMEOUT);
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .user_agent(concat!("Patchbay/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| StdioError::Client(e.to_string()))?;
        let (out, lines_out) = mpsc::unbounded_channel();
        let writer = tokio::task::spawn_blocking(move || write_lines(output, lines_out));
        Ok(Self {
            timeout,
            http,
            out,
            writer,
        })
    }
}

/// One message to the client: serde_json writes no raw newline, so one message is one line.
fn emit_to(out: &mpsc::UnboundedSender<Out>, message: &Value) {
    let line = serde_json::to_string(message).expect("a JSON value serializes");
    let _ = out.send(Out::Line(line));
}

/// Reads the client's messages from `input` until it ends and hands each to `forward`; a line
/// that is not JSON is answered with a parse error. Returns once every forwarded request has
/// finished (each is bounded by the request timeout).
async fn read_client<R, F, Fut>(
    input: R,
    out: &mpsc::UnboundedSender<Out>,
    forward: F,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin,
    F: Fn(Value, Kind) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut lines = BufReader::new(input).lines();
    let mut in_flight = JoinSet::new();
    let read = loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break Ok(()),
            Err(e) => break Err(StdioError::Stdin(e)),
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let message: Value = match serde_json::from_str(line) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("a line on stdin is not JSON ({e}); answered with a parse error");
                emit_to(
                    out,
                    &json!({
                        "jsonrpc": "2.0",
                        "id": null,
                        "error": { "code": -32700, "message": format!("Parse error: {e}") }
                    }),
                );
                continue;
            }
        };
        let kind = Kind::of(&message);
        // The handshake goes in order: nothing else may overtake it (the session id comes from
        // the initialize's answer). Everything after runs concurrently, as the client sends it.
        if kind.is_handshake() {
            forward(message, kind).await;
        } else {
            in_flight.spawn(forward(message, kind));
        }
        while in_flight.try_join_next().is_some() {}
    };
    while in_flight.join_next().await.is_some() {}
    read
}

/// What goes to the stdout writer.
enum Out {
    Line(String),
    End,
}

/// The writer: one line per message, flushed at once. A blocking thread of its own, writing to a
/// handle of its own (see [`stdout_handle`]).
fn write_lines<W: Write>(mut output: W, mut lines: mpsc::UnboundedReceiver<Out>) {
    while let Some(Out::Line(line)) = lines.blocking_recv() {
        let written = output
            .write_all(line.as_bytes())
            .and_then(|()| output.write_all(b"\n"))
            .and_then(|()| output.flush());
        if let Err(e) = written {
            tracing::warn!("cannot write to stdout (the client went away?): {e}");
            return;
        }
    }
}

/// This process's stdout as a file handle of its own (a duplicate of the descriptor), written
/// without `std::io::Stdout`'s lock, which the CLI's `main` may hold for the whole command.
pub fn stdout_handle() -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        Ok(std::fs::File::from(
            std::io::stdout().as_fd().try_clone_to_owned()?,
        ))
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsHandle;
        Ok(std::fs::File::from(
            std::io::stdout().as_handle().try_clone_to_owned()?,
        ))
    }
}

/// A client message, by what it asks of the bridge.
#[derive(Debug, Clone)]
enum Kind {
    Request {
        id: Value,
        method: String,
    },
    Notification {
        method: String,
    },
    /// The client's answer to a server's request, or a batch: passed on, nothing to answer.
    Other,
}

impl Kind {
    fn of(message: &Value) -> Kind {
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (Some(method), Some(id)) if !id.is_null() => Kind::Request {
                id: id.clone(),
                method: method.to_owned(),
            },
            (Some(method), _) => Kind::Notification {
                method: method.to_owned(),
            },
            _ => Kind::Other,
        }
    }

    fn method(&self) -> &str {
        match self {
            Kind::Request { method, .. } | Kind::Notification { method } => method,
            Kind::Other => "",
        }
    }

    fn id(&self) -> Option<&Value> {
        match self {
            Kind::Request { id, .. } => Some(id),
            _ => None,
        }
    }

    fn is_initialize(&self) -> bool {
        matches!(self, Kind::Request { method, .. } if method == "initialize")
    }

    fn is_handshake(&self) -> bool {
        matches!(self.method(), "initialize" | "notifications/initialized")
    }

    /// A request that may have acted when its connection dropped after sending.
    fn may_act(&self) -> bool {
        self.method() == "tools/call"
    }
}

/// The upstream session as the bridge knows it.
#[derive(Default)]
struct Session {
    id: Option<String>,
    protocol_version: Option<String>,
    /// Bumped by every (re-)initialize: a request that failed on an older one needs no new one.
    generation: u64,
    /// The client's own handshake, replayed to re-initialize.
    initialize: Option<Value>,
    initialized: Option<Value>,
    /// The task reading the server's stream (GET).
    stream: Option<JoinHandle<()>>,
}

/// What a request was sent with.
#[derive(Clone)]
struct Sent {
    session_id: Option<String>,
    protocol_version: Option<String>,
    generation: u64,
}

/// Why one POST did not deliver.
#[derive(Debug)]
enum PostError {
    /// 401: carries the bearer that was refused.
    Unauthorized(Option<Secret>),
    /// 404 to a request carrying a session id: the server no longer knows the session.
    SessionGone,
    /// The request never reached the server (no connection).
    Unreached(String),
    /// The connection failed after the request was sent: it may have been acted on.
    Dropped(String),
    /// Any other error status.
    Status { status: u16, detail: String },
}

/// Why a client's request failed, as the client is told.
#[derive(Debug)]
enum Failure {
    NeedsAuthorization(String),
    Unreachable(String),
    MayHaveRun(String),
    Dropped(String),
    Status { status: u16, detail: String },
    SessionLost(String),
    TimedOut(Duration),
}

impl Failure {
    fn reason(&self) -> &'static str {
        match self {
            Failure::NeedsAuthorization(_) => "needs_authorization",
            Failure::Unreachable(_) => "unreachable",
            Failure::MayHaveRun(_) => "may_have_run",
            Failure::Dropped(_) => "dropped",
            Failure::Status { .. } => "http_status",
            Failure::SessionLost(_) => "session_lost",
            Failure::TimedOut(_) => "timed_out",
        }
    }

    fn http_status(&self) -> Option<u16> {
        match self {
            Failure::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    fn message(&self, connector: &str, method: &str) -> String {
        match self {
            // Upstream's renewal error already names the connector and says to authorize it.
            Failure::NeedsAuthorization(why) => why.clone(),
            Failure::Unreachable(e) => format!("{connector} is unreachable ({e}); Patchbay tried to reconnect and will again on the next request"),
            Failure::MayHaveRun(e) => format!("the connection to {connector} dropped during {method} ({e}); the call may have run, so Patchbay did not send it again"),
            Failure::Dropped(e) => format!("the connection to {connector} dropped during {method} ({e})"),
            Failure::Status { status, detail } => format!("{connector} answered HTTP {status}: {detail}"),
            Failure::SessionLost(e) => format!("the session with {connector} ended and could not be started again: {e}"),
            Failure::TimedOut(limit) => format!("{connector} did not answer {method} within {} ms (its timeout_ms)", limit.as_millis()),
        }
    }
}

impl From<PostError> for Failure {
    fn from(e: PostError) -> Failure {
        match e {
            PostError::Unauthorized(_) => Failure::NeedsAuthorization(
                "the upstream refused the renewed credential too".into(),
            ),
            PostError::SessionGone => Failure::SessionLost("the server forgot it again".into()),
            PostError::Unreached(e) => Failure::Unreachable(e),
            PostError::Dropped(e) => Failure::Dropped(e),
            PostError::Status { status, detail } => Failure::Status { status, detail },
        }
    }
}

/// What a delivered POST brought back.
struct Delivered {
    session_id: Option<String>,
    /// The response to the request sent, when it was one.
    answer: Option<Value>,
}

struct Bridge<C> {
    credentials: Arc<C>,
    http: reqwest::Client,
    timeout: Duration,
    out: mpsc::UnboundedSender<Out>,
    session: Mutex<Session>,
    /// One re-initialization at a time.
    reinitializing: tokio::sync::Mutex<()>,
    on_call: Option<CallHook>,
    closing: AtomicBool,
}

impl<C: Credentials> Bridge<C> {
    fn session(&self) -> MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn name(&self) -> &str {
        self.credentials.connector()
    }

    fn emit(&self, message: &Value) {
        emit_to(&self.out, message);
    }

    fn sent(&self) -> Sent {
        let session = self.session();
        Sent {
            session_id: session.id.clone(),
            protocol_version: session.protocol_version.clone(),
            generation: session.generation,
        }
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
            (Kind::Request { id, .. }, Err(failure)) => {
                let text = failure.message(self.name(), method);
                tracing::warn!(connector = self.name(), method, "{text}");
                let code = match failure {
                    Failure::TimedOut(_) => TIMEOUT_ERROR,
                    _ => BRIDGE_ERROR,
                };
                self.emit(&json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {
                        "code": code,
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

    /// POST `message` until it is delivered or cannot be: one renewal on a 401, one
    /// re-initialization on a lost session, reconnection while the connection is refused, and
    /// one resend after a drop unless it may have acted.
    async fn deliver(self: &Arc<Self>, message: &Value, kind: &Kind) -> Result<(), Failure> {
        if kind.is_initialize() {
            self.session().initialize = Some(message.clone());
        } else if kind.method() == "notifications/initialized" {
            self.session().initialized = Some(message.clone());
        }
        let mut renewed = false;
        let mut reinitialized = false;
        let mut reconnects = RECONNECT_DELAYS.iter();
        let mut resent = false;
        loop {
            // Not while the session is being started again: its id is about to change.
            drop(self.reinitializing.lock().await);
            let sent = self.sent();
            match self.post(message, kind.id(), &sent, false).await {
                Ok(delivered) => {
                    self.delivered(kind, &sent, delivered);
                    return Ok(());
                }
                Err(PostError::Unauthorized(rejected)) if !renewed => {
                    renewed = true;
                    self.credentials
                        .renew(rejected)
                        .await
                        .map_err(Failure::NeedsAuthorization)?;
                }
                Err(PostError::SessionGone) if !reinitialized => {
                    reinitialized = true;
                    tracing::info!(
                        connector = self.name(),
                        "the server no longer knows the session; starting it again"
                    );
                    self.reinitialize(sent.generation).await?;
                }
                Err(PostError::Unreached(e)) => match reconnects.next() {
                    Some(delay) => {
                        tracing::info!(
                            connector = self.name(),
                            "cannot connect ({e}); trying again"
                        );
                        tokio::time::sleep(*delay).await;
                    }
                    None => return Err(Failure::Unreachable(e)),
                },
                Err(PostError::Dropped(e)) if kind.may_act() => return Err(Failure::MayHaveRun(e)),
                Err(PostError::Dropped(e)) if !resent => {
                    resent = true;
                    tracing::info!(
                        connector = self.name(),
                        "the connection dropped ({e}); sending again"
                    );
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// After a delivered initialize: keep its session id and protocol version. After a
    /// delivered `notifications/initialized`: open the server's stream.
    fn delivered(self: &Arc<Self>, kind: &Kind, sent: &Sent, delivered: Delivered) {
        if kind.is_initialize() {
            let version = delivered
                .answer
                .as_ref()
                .and_then(|a| a.pointer("/result/protocolVersion"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let mut session = self.session();
            session.id = delivered.session_id;
            session.protocol_version = version;
            session.generation += 1;
        } else if kind.method() == "notifications/initialized" {
            self.open_stream(sent.generation);
        }
    }

    /// Start the session again: the client's initialize (its answer swallowed), then its
    /// `notifications/initialized`, then the server's stream. Does nothing when another request
    /// already did it since `failed_generation`.
    async fn reinitialize(self: &Arc<Self>, failed_generation: u64) -> Result<(), Failure> {
        let _one = self.reinitializing.lock().await;
        let (initialize, initialized) = {
            let mut session = self.session();
            if session.generation != failed_generation {
                return Ok(());
            }
            if let Some(stream) = session.stream.take() {
                stream.abort();
            }
            session.id = None;
            session.protocol_version = None;
            (session.initialize.clone(), session.initialized.clone())
        };
        let Some(initialize) = initialize else {
            return Err(Failure::SessionLost(
                "the client never initialized it".into(),
            ));
        };
        let init_id = initialize.get("id").cloned();
        let mut renewed = false;
        let mut reconnects = RECONNECT_DELAYS.iter();
        let fresh = Sent {
            session_id: None,
            protocol_version: None,
            generation: failed_generation,
        };
        let delivered = loop {
            match self.post(&initialize, init_id.as_ref(), &fresh, true).await {
                Ok(delivered) => break delivered,
                Err(PostError::Unauthorized(rejected)) if !renewed => {
                    renewed = true;
                    self.credentials
                        .renew(rejected)
                        .await
                        .map_err(Failure::NeedsAuthorization)?;
                }
                Err(PostError::Unreached(e)) => match reconnects.next() {
                    Some(delay) => tokio::time::sleep(*delay).await,
                    None => return Err(Failure::Unreachable(e)),
                },
                Err(e) => {
                    return Err(Failure::SessionLost(
                        Failure::from(e).message(self.name(), "initialize"),
                    ))
                }
            }
        };
        if let Some(error) = delivered.answer.as_ref().and_then(|a| a.get("error")) {
            return Err(Failure::SessionLost(format!(
                "it refused the initialize: {error}"
            )));
        }
        self.delivered(&Kind::of(&initialize), &fresh, delivered);
        let sent = self.sent();
        if let Some(initialized) = initialized {
            self.post(&initialized, None, &sent, true)
                .await
                .map_err(|e| {
                    Failure::SessionLost(
                        Failure::from(e).message(self.name(), "notifications/initialized"),
                    )
                })?;
            self.open_stream(sent.generation);
        }
        tracing::info!(connector = self.name(), "the session was started again");
        Ok(())
    }

    /// A request to the upstream with its headers: the connector's (bearer included), the
    /// session's.
    fn request(&self, method: Method, sent: &Sent) -> (reqwest::RequestBuilder, Option<Secret>) {
        let bearer = self.credentials.bearer();
        let mut request = self.http.request(method, self.credentials.url());
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
        if let Some(id) = &sent.session_id {
            request = request.header(SESSION_HEADER, id.as_str());
        }
        if let Some(version) = &sent.protocol_version {
            request = request.header(VERSION_HEADER, version.as_str());
        }
        (request, bearer)
    }

    /// One POST. Writes what the server sends back to stdout (unless `swallow`) and returns the
    /// response to `id` when there was one.
    async fn post(
        &self,
        message: &Value,
        id: Option<&Value>,
        sent: &Sent,
        swallow: bool,
    ) -> Result<Delivered, PostError> {
        let (request, bearer) = self.request(Method::POST, sent);
        let body = serde_json::to_vec(message).expect("a JSON value serializes");
        let response = request
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(body)
            .send()
            .await
            .map_err(|e| sending_failed(&e))?;
        let status = response.status();
        let session_id = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if status == StatusCode::UNAUTHORIZED {
            return Err(PostError::Unauthorized(bearer));
        }
        if status == StatusCode::NOT_FOUND && sent.session_id.is_some() {
            return Err(PostError::SessionGone);
        }
        if !status.is_success() {
            return Err(PostError::Status {
                status: status.as_u16(),
                detail: error_detail(response).await,
            });
        }
        let event_stream = is_event_stream(&response);
        let answer = if status == StatusCode::ACCEPTED {
            None
        } else if event_stream {
            self.read_answer_stream(response, id, swallow).await?
        } else {
            let bytes = response
                .bytes()
                .await
                .map_err(|e| PostError::Dropped(e.to_string()))?;
            if bytes.iter().all(u8::is_ascii_whitespace) {
                None
            } else {
                let value: Value =
                    serde_json::from_slice(&bytes).map_err(|e| PostError::Status {
                        status: status.as_u16(),
                        detail: format!("the answer is not JSON ({e})"),
                    })?;
                let messages = match value {
                    Value::Array(items) => items,
                    one => vec![one],
                };
                let mut answer = None;
                for m in messages {
                    if !swallow {
                        self.emit(&m);
                    }
                    if id.is_some() && m.get("id") == id && is_response(&m) {
                        answer = Some(m);
                    }
                }
                answer
            }
        };
        if id.is_some() && answer.is_none() {
            return Err(PostError::Dropped(
                "the server ended its answer without the response".into(),
            ));
        }
        Ok(Delivered { session_id, answer })
    }

    /// Reads an SSE answer until the response to `id` (or its end, for a notification).
    async fn read_answer_stream(
        &self,
        mut response: reqwest::Response,
        id: Option<&Value>,
        swallow: bool,
    ) -> Result<Option<Value>, PostError> {
        let mut events = SseParser::default();
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Ok(None),
                Err(e) => return Err(PostError::Dropped(e.to_string())),
            };
            let completed = events
                .push(&chunk)
                .map_err(|e| PostError::Dropped(e.to_string()))?;
            for event in completed {
                let Some(message) = self.event_message(&event) else {
                    continue;
                };
                if !swallow {
                    self.emit(&message);
                }
                if id.is_some() && message.get("id") == id && is_response(&message) {
                    return Ok(Some(message));
                }
            }
        }
    }

    /// An SSE event's JSON-RPC message; other events (and data that is not JSON) are skipped.
    fn event_message(&self, event: &SseEvent) -> Option<Value> {
        if event.kind != "message" || event.data.is_empty() {
            return None;
        }
        match serde_json::from_str(&event.data) {
            Ok(m) => Some(m),
            Err(e) => {
                tracing::warn!(
                    connector = self.name(),
                    "skipped an SSE event that is not JSON ({e})"
                );
                None
            }
        }
    }

    /// Opens the server's stream for the session of `generation` (once).
    fn open_stream(self: &Arc<Self>, generation: u64) {
        let mut session = self.session();
        if session.generation != generation || session.stream.is_some() || session.id.is_none() {
            return;
        }
        let this = self.clone();
        session.stream = Some(tokio::spawn(async move {
            this.server_stream(generation).await;
        }));
    }

    /// The server's stream (GET): its messages to stdout, reopened when it ends (with the last
    /// event id seen) until the session changes or the bridge closes.
    async fn server_stream(self: Arc<Self>, generation: u64) {
        let mut backoff = Duration::from_millis(250);
        let mut last_event_id: Option<String> = None;
        let mut renewed = false;
        loop {
            let sent = self.sent();
            if sent.generation != generation || self.closing.load(Ordering::Relaxed) {
                return;
            }
            let (mut request, bearer) = self.request(Method::GET, &sent);
            request = request.header(ACCEPT, "text/event-stream");
            if let Some(id) = &last_event_id {
                request = request.header(LAST_EVENT_ID, id.as_str());
            }
            match request.send().await {
                Err(e) => {
                    tracing::debug!(connector = self.name(), "the server's stream: {e}");
                }
                Ok(response) => match response.status() {
                    StatusCode::METHOD_NOT_ALLOWED => {
                        tracing::debug!(
                            connector = self.name(),
                            "the server offers no stream of its own"
                        );
                        return;
                    }
                    StatusCode::UNAUTHORIZED if !renewed => {
                        renewed = true;
                        if let Err(e) = self.credentials.renew(bearer).await {
                            tracing::warn!(connector = self.name(), "the server's stream: {e}");
                            return;
                        }
                        continue;
                    }
                    StatusCode::NOT_FOUND => {
                        // The server restarted or expired the session: start it again now, so
                        // the stream (and the next request) find one.
                        tracing::info!(
                            connector = self.name(),
                            "the server no longer knows the session; starting it again"
                        );
                        let this = self.clone();
                        tokio::spawn(async move {
                            if let Err(e) = this.reinitialize(generation).await {
                                tracing::warn!(
                                    connector = this.name(),
                                    "{}",
                                    e.message(this.name(), "initialize")
                                );
                            }
                        });
                        return;
                    }
                    status if status.is_success() && is_event_stream(&response) => {
                        renewed = false;
                        backoff = Duration::from_millis(250);
                        self.read_server_stream(response, &mut last_event_id).await;
                    }
                    // A refusal will not change by asking again (a 401 after a renewal among
                    // them): requests still work without the stream.
                    status if status.is_client_error() => {
                        tracing::warn!(
                            connector = self.name(),
                            "the server's stream answered HTTP {status}; going on without it"
                        );
                        return;
                    }
                    status => {
                        tracing::debug!(
                            connector = self.name(),
                            "the server's stream answered HTTP {status}; trying again"
                        );
                    }
                },
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(STREAM_BACKOFF_MAX);
        }
    }

    async fn read_server_stream(
        &self,
        mut response: reqwest::Response,
        last_event_id: &mut Option<String>,
    ) {
        let mut events = SseParser::default();
        while let Ok(Some(chunk)) = response.chunk().await {
            let completed = match events.push(&chunk) {
                Ok(completed) => completed,
                Err(e) => {
                    tracing::warn!("dropping the server's stream: {e}");
                    return;
                }
            };
            for event in completed {
                if let Some(id) = &event.id {
                    *last_event_id = Some(id.clone());
                }
                if let Some(message) = self.event_message(&event) {
                    self.emit(&message);
                }
            }
        }
    }

    /// The goodbye: stop the server's stream, DELETE the session.
    async fn close(&self) {
        self.closing.store(true, Ordering::Relaxed);
        let sent = {
            let mut session = self.session();
            if let Some(stream) = session.stream.take() {
                stream.abort();
            }
            Sent {
                session_id: session.id.take(),
                protocol_version: session.protocol_version.clone(),
                generation: session.generation,
            }
        };
        if sent.session_id.is_none() {
            return;
        }
        let (request, _) = self.request(Method::DELETE, &sent);
        match tokio::time::timeout(DELETE_TIMEOUT, request.send()).await {
            Ok(Ok(response)) => tracing::debug!(
                connector = self.name(),
                "ended the session: HTTP {}",
                response.status()
            ),
            Ok(Err(e)) => tracing::debug!(connector = self.name(), "cannot end the session: {e}"),
            Err(_) => tracing::debug!(connector = self.name(), "ending the session timed out"),
        }
    }
}

fn sending_failed(e: &reqwest::Error) -> PostError {
    // A refused or failed connect never carried the request; anything later may have.
    if e.is_connect() {
        PostError::Unreached(error_chain(e))
    } else {
        PostError::Dropped(error_chain(e))
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

fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

fn is_response(message: &Value) -> bool {
    message.get("result").is_some() || message.get("error").is_some()
}

/// An error body, short: a JSON-RPC error's message, an OAuth error's description, or the text.
async fn error_detail(response: reqwest::Response) -> String {
    let text = response.text().await.unwrap_or_default();
    let parsed: Option<Value> = serde_json::from_str(&text).ok();
    let said = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error_description"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let detail = said.unwrap_or(text);
    let detail = detail.trim();
    if detail.is_empty() {
        return "no detail".into();
    }
    match detail.char_indices().nth(DETAIL_MAX) {
        Some((cut, _)) => format!("{}…", &detail[..cut]),
        None => detail.to_owned(),
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// `event:`, `message` when absent.
    pub kind: String,
    /// The `data:` lines joined by newlines.
    pub data: String,
    pub id: Option<String>,
}

/// The most an event may hold (its pending line and data) before the stream is given up: far
/// above any MCP message, and a stop to a server that never ends a line or an event.
pub const MAX_SSE_EVENT_BYTES: usize = 32 * 1024 * 1024;

/// An event grew past the parser's limit; the stream is not usable any more.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the server's event stream sent an event over {limit} bytes without ending it")]
pub struct SseEventTooLarge {
    pub limit: usize,
}

/// An incremental `text/event-stream` parser (the WHATWG rules the MCP transports use: lines end
/// in CRLF, LF or CR; `:` starts a comment; a blank line dispatches), holding at most
/// [`MAX_SSE_EVENT_BYTES`] of one event.
#[derive(Debug)]
pub struct SseParser {
    limit: usize,
    buffer: Vec<u8>,
    /// The last chunk ended in CR: a LF starting the next one belongs to it.
    after_cr: bool,
    data: Option<String>,
    kind: Option<String>,
    id: Option<String>,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_limit(MAX_SSE_EVENT_BYTES)
    }
}

impl SseParser {
    /// A parser holding at most `limit` bytes of one event.
    pub fn with_limit(limit: usize) -> SseParser {
        SseParser {
            limit,
            buffer: Vec::new(),
            after_cr: false,
            data: None,
            kind: None,
            id: None,
        }
    }

    /// Feeds `chunk`; returns the events it completed, or an error once one event (its data so
    /// far and its unfinished line) holds more than the limit.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseEventTooLarge> {
        let events = self.push_unbounded(chunk);
        let pending = self.buffer.len() + self.data.as_ref().map_or(0, String::len);
        if pending > self.limit {
            return Err(SseEventTooLarge { limit: self.limit });
        }
        Ok(events)
    }

    fn push_unbounded(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut bytes = chunk;
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\n' || bytes[i] == b'\r' {
                self.buffer.extend_from_slice(&bytes[start..i]);
                let line = std::mem::take(&mut self.buffer);
                self.line(&String::from_utf8_lossy(&line), &mut events);
                if bytes[i] == b'\r' {
                    if i + 1 < bytes.len() {
                        if bytes[i + 1] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.after_cr = true;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        self.buffer.extend_from_slice(&bytes[start..]);
        events
    }

    fn line(&mut self, line: &str, events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                events.push(SseEvent {
                    kind: self.kind.take().unwrap_or_else(|| "message".into()),
                    data,
                    id: self.id.clone(),
                });
            }
            self.kind = None;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.kind = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_split_across_chunks_and_line_endings() {
        let mut parser = SseParser::default();
        let mut events = parser.push(b"event: message\r\nid: 7\r").unwrap();
        events.extend(parser.push(b"\ndata: {\"a\":").unwrap());
        events.extend(
            parser
                .push(b"1}\n\n: keep-alive\n\ndata: x\ndata: y\n")
                .unwrap(),
        );
        assert_eq!(
            events,
            vec![SseEvent {
                kind: "message".into(),
                data: "{\"a\":1}".into(),
                id: Some("7".into()),
            }]
        );
        let events = parser.push(b"\n").unwrap();
        assert_eq!(events[0].data, "x\ny");
        assert_eq!(
            events[0].id.as_deref(),
            Some("7"),
            "the last id carries over"
        );
    }

    #[test]
    fn an_event_without_data_dispatches_nothing() {
        let mut parser = SseParser::default();
        assert!(parser.push(b"event: ping\n\n").unwrap().is_empty());
        let events = parser.push(b"data:no space\r\n\r\n").unwrap();
        assert_eq!(events[0].data, "no space");
        assert_eq!(
            events[0].kind, "message",
            "the event type does not carry over"
        );
    }

    #[test]
    fn an_event_over_the_limit_is_refused_and_one_under_it_is_not() {
        // A line that never ends.
        let mut parser = SseParser::with_limit(64);
        assert!(parser.push(&[b'x'; 60]).unwrap().is_empty());
        assert_eq!(parser.push(&[b'x'; 5]), Err(SseEventTooLarge { limit: 64 }));
        // Data lines that never dispatch.
        let mut parser = SseParser::with_limit(64);
        for _ in 0..5 {
            parser.push(b"data: 0123456789\n").unwrap();
        }
        assert!(parser.push(b"data: 0123456789\n").is_err());
        // Events that end stay within it, however many.
        let mut parser = SseParser::with_limit(64);
        for _ in 0..1000 {
            let events = parser.push(b"data: 0123456789012345678901234567890123456789\n\n");
            assert_eq!(events.unwrap().len(), 1);
        }
    }

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
