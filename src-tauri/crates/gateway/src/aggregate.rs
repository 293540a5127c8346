//! `/mcp`: the aggregate endpoint. Every remote connector in use (streamable HTTP) offered as one
//! MCP server named `patchbay`, over streamable HTTP with JSON answers (never an SSE stream; a GET
//! for the server's own stream is 405, as the transport allows).
//!
//! - Tools are named `<connector>__<tool>` (`names`), their descriptions prefixed with the
//!   connector's title; prompts are named the same way; resource URIs are kept as they are, a URI
//!   two connectors offer belonging to the first listed (connectors in status order).
//! - The gateway holds one upstream MCP session per connector (`link`: the official SDK's
//!   client, the revision negotiated per server, 2026-07-28 first; the connector's credential
//!   injected, a 401 renewed once through the refresher of record, a 403 `insufficient_scope`
//!   stepped up once).
//!   A listing is served from the lists the aggregate holds (see Lists kept below); a
//!   connector never listed (or just taken into use) is asked, every such connector in
//!   parallel, each bounded by its `timeout_ms` ([`LIST_TIMEOUT`] when it sets none); the last
//!   good lists are kept, so a connector that is momentarily absent keeps its tools listed and
//!   its names resolving.
//! - Lists kept: each connector's lists are fresh for the `ttlMs` its list result carries (a
//!   2026-07-28 server), else [`LIST_TTL`], both within [[`MIN_LIST_TTL`], [`MAX_LIST_TTL`]];
//!   a `notifications/{tools,prompts,resources}/list_changed` the connector sends in any answer
//!   it streams makes the next listing ask it first. A listing that finds lists past their time
//!   answers with them and lists that connector again in the background (one such listing per
//!   connector), so the next listing has the news. A name not known is listed for again at once, as before. The
//!   aggregate answer itself (renamed, titled) is kept per set of connectors offered, until a
//!   list or the connectors in use change.
//! - A call goes to the connector's session with the tool's own name. A 401 is renewed and the
//!   call replayed once; a 404 for a 2025 session (the server restarted) begins a new session
//!   and replays (the server did not process it). Nothing else is replayed: a call whose connection
//!   dropped or timed out may have run. A connector that cannot be reached answers at once with a
//!   tool error "NAME is unavailable, retrying" and is reconnected in the background.
//! - Stdio and legacy HTTP+SSE connectors are not offered here (each has `/mcp/NAME` or
//!   `patchbay connect`). Server-to-client requests (sampling, elicitation) and notifications
//!   (progress, logging, list changes) from the connectors are not passed on (a list change
//!   only renews the lists kept).
//! - 2026-07-28 clients are served statelessly beside 2025 ones (`stateless`).
//!
//! Its parts: `lists` (listing, the lists kept, the answers rendered), `calls` (a call to its
//! connector), `link` (the upstream session on rmcp), `stateless` (2026-07-28).
//! - Every `tools/call`, `resources/read` and `prompts/get`, and every listing that failed, goes to
//!   the health board.
//!
//! The server side is this module's own handler, not rmcp's (the client side is rmcp's). rmcp
//! 3.11's streamable-HTTP server could carry it (it serves 2026-07-28 and 2025 sessions); it is
//! not moved yet (issue 19). What moving costs, measured: a handler answers with a typed result
//! that is serialized for every request, where a listing here sends the kept answer's text
//! (`cargo bench -p patchbay-gateway --bench list_answer`: +0.12 ms per warm 50-connector
//! `tools/list`, against the 0.16 ms the whole exchange takes now); a 2025 session's answers
//! become SSE streams (JSON only without sessions); rmcp's session manager keeps a worker per
//! session and answers 404 to one it does not know, where the aggregate keeps nothing per session
//! and adopts a session begun before the gateway restarted (the app restarts at login and on
//! update; a custom `SessionManager` would be needed to keep that); and rmcp's `server` feature
//! brings schemars into every build.

use crate::clients::ClientRecord;
use crate::names::{aggregate_tool_name, ToolNames};
use crate::server::GatewayState;
use crate::upstream::{Upstream, UpstreamError};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use http_body_util::BodyExt;
use link::Link;
use patchbay_check::{CallRecord, TransportKind};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The bound on listing one connector when it sets no `timeout_ms`: a listing waits for the
/// slowest connector, so it must not wait the gateway's long default.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(10);
/// The revision a 2025 client that asks for one the aggregate does not serve is offered.
const UPSTREAM_VERSION: &str = "2025-06-18";
/// The versions offered to clients (a client asking another gets [`UPSTREAM_VERSION`]).
pub(crate) const VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// How long a connector's lists serve before they are asked for again (in the background) when
/// it says nothing itself (no `ttlMs`, no `list_changed`): a minute keeps a 50-connector listing
/// off the upstreams on every `tools/list` (agents list per turn) while a tool added upstream
/// shows up within a minute even from a server that never says so.
pub const LIST_TTL: Duration = Duration::from_secs(60);
/// Bounds on a connector's own `ttlMs`: 0 (do not cache) would re-list it on every listing, and a
/// day-long one would hide a change the server forgot to announce.
pub const MIN_LIST_TTL: Duration = Duration::from_secs(1);
pub const MAX_LIST_TTL: Duration = Duration::from_secs(3600);
/// Aggregate answers kept (one per kind of list and set of connectors a client may use); past this
/// all are dropped (a new set of gateway clients is rare).
const MAX_RENDERED: usize = 64;
/// Pages followed per connector listing (a server that keeps handing out cursors stops here).
const MAX_PAGES: usize = 50;
/// Client sessions remembered; past this the oldest is forgotten (clients that never said bye).
const MAX_CLIENT_SESSIONS: usize = 10_000;
/// Waits between background reconnection attempts, doubling up to the last.
const RECONNECT_FIRST: Duration = Duration::from_millis(250);
const RECONNECT_MAX: Duration = Duration::from_secs(5);
/// How long a connector that stays away is retried in the background (the next request to it
/// starts again).
const RECONNECT_FOR: Duration = Duration::from_secs(300);
/// The gateway's own JSON-RPC errors (as `proxy`), and the MCP and JSON-RPC codes used.
pub(crate) const GATEWAY_ERROR: i64 = -32001;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INVALID_REQUEST: i64 = -32600;
const PARSE_ERROR: i64 = -32700;
const RESOURCE_NOT_FOUND: i64 = -32002;

mod calls;
pub(crate) mod link;
mod lists;
mod stateless;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// The `/mcp` route: the aggregate's state lives in the handler, one per router.
pub(crate) fn route() -> axum::routing::MethodRouter<Arc<GatewayState>> {
    let aggregate = Arc::new(Aggregate::default());
    axum::routing::any(
        move |State(state): State<Arc<GatewayState>>,
              Extension(client): Extension<ClientRecord>,
              req: Request| {
            let aggregate = aggregate.clone();
            async move { aggregate.handle(state, client, req).await }
        },
    )
}

/// A connector in use that the aggregate offers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct InUse {
    name: String,
    title: String,
}

/// Session ids ended by their client: looked up on every request that carries one (a set),
/// the oldest forgotten past [`MAX_CLIENT_SESSIONS`] (the order).
#[derive(Default)]
struct Ended {
    ids: HashSet<String>,
    order: std::collections::VecDeque<String>,
}

impl Ended {
    fn add(&mut self, id: String) {
        if self.order.len() >= MAX_CLIENT_SESSIONS {
            if let Some(oldest) = self.order.pop_front() {
                self.ids.remove(&oldest);
            }
        }
        if self.ids.insert(id.clone()) {
            self.order.push_back(id);
        }
    }

    fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }
}

/// What the aggregate keeps between requests.
#[derive(Default)]
struct Aggregate {
    connectors: Mutex<HashMap<String, Arc<Connector>>>,
    /// The connectors in use and when that was read (re-read after the gateway's resolve TTL).
    in_use: Mutex<Option<(Instant, Arc<Vec<InUse>>)>>,
    /// Client session ids issued, with when.
    sessions: Mutex<HashMap<String, Instant>>,
    /// Client session ids ended by their `DELETE`, oldest first: a request in one is 404, as
    /// the transport requires of a terminated session (at most [`MAX_CLIENT_SESSIONS`] kept).
    ended: Mutex<Ended>,
    /// Aggregate names back to connectors, over every connector's last good lists.
    names: RwLock<Names>,
    /// Bumped whenever a connector's lists are stored: the names and answers built before are
    /// out of date.
    lists_generation: AtomicU64,
    /// Aggregate answers built from the names of [`Names::generation`].
    rendered: Mutex<Vec<Rendered>>,
}

#[derive(Default)]
struct Names {
    tools: ToolNames,
    prompts: ToolNames,
    /// Resource URI → connector, the first connector listing it.
    resources: HashMap<String, String>,
    /// What these were built from: the connectors in use (in order) and the lists generation;
    /// `None` before the first build.
    built_from: Option<(Vec<String>, u64)>,
    /// Bumped by every build (answers built from older names are out of date).
    generation: u64,
}

/// One aggregate answer kept: the `result` of a list method for a set of offered connectors.
struct Rendered {
    method: &'static str,
    offered: Vec<InUse>,
    names_generation: u64,
    result: Arc<ListResult>,
}

/// A list method's `result`, and as JSON text: a lone listing is answered with the text as it
/// is (no copy of the value, no serializing it again).
struct ListResult {
    value: Value,
    text: String,
}

/// The aggregate's list methods, as the name they are kept under.
fn list_method(method: &str) -> Option<&'static str> {
    match method {
        "tools/list" => Some("tools/list"),
        "prompts/list" => Some("prompts/list"),
        "resources/list" => Some("resources/list"),
        _ => None,
    }
}

/// One connector's upstream session and last good lists.
struct Connector {
    name: String,
    /// The session with it; one handshake at a time.
    link: tokio::sync::Mutex<Option<Arc<Link>>>,
    /// Links opened so far (each link's generation).
    links: AtomicU64,
    lists: Mutex<Lists>,
    reconnecting: AtomicBool,
    /// Listed again in the background now (one such listing at a time).
    refreshing: AtomicBool,
    /// The connector said a list changed since it was last listed (set by its link).
    changed: Arc<AtomicBool>,
}

#[derive(Debug, Default, Clone)]
struct Lists {
    tools: Option<Vec<Value>>,
    prompts: Option<Vec<Value>>,
    resources: Option<Vec<Value>>,
    /// Until when these serve without asking again; `None`: never listed (or taken into use
    /// anew), a listing asks before it answers.
    fresh_until: Option<Instant>,
}

/// A connector's kept lists, at a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Freshness {
    /// They answer.
    Fresh,
    /// They answer, and are asked for again in the background (their time is up).
    Stale,
    /// Asked for before the answer: never listed, taken into use anew, or said to have changed.
    Cold,
}

/// Why an exchange with a connector failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// It cannot be resolved now (missing configuration, declared unavailable, vault).
    Resolve(UpstreamError),
    /// The credential was refused and renewing did not help: says to authorize.
    NeedsAuthorization(String),
    /// A 403 `insufficient_scope` a step-up did not (or could not) mend: says what to do.
    NeedsMoreAccess(String),
    /// The server lost the session and it could not be begun again.
    SessionGone,
    /// The client's request cannot be put to the connector as it is.
    Invalid(String),
    /// What the connector answered has no counterpart the aggregate can hand on (a 2026-07-28
    /// `input_required` or task to a request the aggregate forwards whole).
    Untranslatable(String),
    /// The request never reached the server (no connection).
    Unreached(String),
    /// The connection failed after the request was sent: it may have been acted on.
    Dropped(String),
    TimedOut(Duration),
    /// Another HTTP error status.
    Status {
        status: u16,
        detail: String,
    },
    /// An answer that is not MCP (no JSON, no response to the request).
    Protocol(String),
}

impl Failure {
    /// The connector is away: reconnect in the background, tell the client to retry.
    /// 508 (Loop Detected: the connector is the gateway itself) is not: asking again loops again.
    fn is_absent(&self) -> bool {
        match self {
            Failure::Unreached(_) => true,
            Failure::Status { status, .. } => {
                (500..=599).contains(status) && *status != LOOP_DETECTED
            }
            _ => false,
        }
    }

    /// The link it happened on is of no more use: the next request begins a new session.
    fn ends_link(&self) -> bool {
        matches!(self, Failure::SessionGone | Failure::Unreached(_))
    }

    fn http_status(&self) -> Option<u16> {
        match self {
            Failure::NeedsAuthorization(_) => Some(401),
            Failure::NeedsMoreAccess(_) => Some(403),
            Failure::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// What the client is told (never a token: errors carry no URL or header).
    pub(crate) fn message(&self, connector: &str, method: &str) -> String {
        match self {
            Failure::Resolve(e) => format!("{connector} is unavailable: {e}"),
            Failure::NeedsAuthorization(m) | Failure::NeedsMoreAccess(m) => m.clone(),
            Failure::Invalid(e) => format!("the request cannot be sent to {connector}: {e}"),
            Failure::Untranslatable(e) => format!("{connector} answered {method} in a way the aggregate cannot pass on ({e}); use /mcp/{connector} or `patchbay connect {connector}`"),
            Failure::SessionGone => format!("{connector} lost the session again right after it was begun"),
            Failure::Unreached(e) => format!("{connector} is unavailable, retrying (Patchbay reconnects in the background; try again shortly): {e}"),
            Failure::Status { status: LOOP_DETECTED, detail } => format!("{connector} is unavailable: {detail}"),
            Failure::Status { status: 500..=599, detail, .. } => format!("{connector} is unavailable, retrying (it answered an error; Patchbay reconnects in the background): {detail}"),
            Failure::Dropped(e) if method == "tools/call" => format!("the connection to {connector} dropped during the call ({e}); it may have run, so Patchbay did not send it again"),
            Failure::Dropped(e) => format!("the connection to {connector} dropped during {method} ({e})"),
            Failure::TimedOut(bound) if method == "tools/call" => format!("{connector} did not answer the call within {} ms (its timeout_ms); it may have run, so Patchbay did not send it again", bound.as_millis()),
            Failure::TimedOut(bound) => format!("{connector} did not answer {method} within {} ms (its timeout_ms)", bound.as_millis()),
            Failure::Status { status, detail } => format!("{connector} answered HTTP {status}: {detail}"),
            Failure::Protocol(e) => format!("{connector} answered {method} with something that is not MCP: {e}"),
        }
    }
}

/// The status a gateway answers a request of its own that came back to it (see `server`).
const LOOP_DETECTED: u16 = 508;

impl Connector {
    fn new(name: &str) -> Connector {
        Connector {
            name: name.to_owned(),
            link: tokio::sync::Mutex::new(None),
            links: AtomicU64::new(0),
            lists: Mutex::default(),
            reconnecting: AtomicBool::new(false),
            refreshing: AtomicBool::new(false),
            changed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether the kept lists may answer.
    fn freshness(&self, now: Instant) -> Freshness {
        let fresh_until = self
            .lists
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .fresh_until;
        match fresh_until {
            // The connector said they changed: answering with them would be answering wrong.
            Some(_) if self.changed.load(Ordering::SeqCst) => Freshness::Cold,
            Some(until) if now < until => Freshness::Fresh,
            Some(_) => Freshness::Stale,
            None => Freshness::Cold,
        }
    }

    /// Ask again before the next answer (taken into use anew).
    fn make_cold(&self) {
        self.lists
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .fresh_until = None;
    }

    fn lists(&self) -> Lists {
        self.lists.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The link to `upstream`, opened (bounded by `bound`) when there is none that serves it.
    async fn link(
        &self,
        state: &GatewayState,
        upstream: &Arc<Upstream>,
        bound: Duration,
    ) -> Result<Arc<Link>, Failure> {
        let mut slot = tokio::time::timeout(bound, self.link.lock())
            .await
            .map_err(|_| Failure::TimedOut(bound))?;
        if let Some(link) = slot.as_ref().filter(|link| link.serves(upstream)) {
            return Ok(link.clone());
        }
        let before = self.links.load(Ordering::SeqCst);
        if let Some(old) = slot.take().and_then(|old| Arc::try_unwrap(old).ok()) {
            old.close();
        }
        if before > 0 {
            tracing::info!(
                connector = self.name,
                "the aggregate's session with it ended; beginning it again"
            );
        }
        let generation = self.links.fetch_add(1, Ordering::SeqCst) + 1;
        let link = Link::open(
            state.http.clone(),
            upstream.clone(),
            self.changed.clone(),
            bound,
            generation,
        )
        .await?;
        tracing::debug!(
            connector = self.name,
            revision = link.revision(),
            "began the aggregate's session"
        );
        let link = Arc::new(link);
        *slot = Some(link.clone());
        Ok(link)
    }

    /// Forget the link of `generation` (it failed for good); a newer one stays.
    async fn forget(&self, generation: u64) {
        let mut slot = self.link.lock().await;
        if slot
            .as_ref()
            .is_some_and(|link| link.generation == generation)
        {
            *slot = None;
        }
    }
}

impl Aggregate {
    async fn handle(
        self: Arc<Self>,
        state: Arc<GatewayState>,
        client: ClientRecord,
        req: Request,
    ) -> Response {
        let (parts, body) = req.into_parts();
        let session = parts
            .headers
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        match parts.method {
            Method::POST => {}
            Method::DELETE => {
                let known = session.as_ref().is_some_and(|id| {
                    self.sessions
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(id)
                        .is_some()
                });
                if let (true, Some(id)) = (known, &session) {
                    self.ended
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .add(id.clone());
                }
                return match known {
                    true => StatusCode::OK.into_response(),
                    false => rpc_error_response(
                        StatusCode::NOT_FOUND,
                        None,
                        GATEWAY_ERROR,
                        "no such session on the aggregate endpoint",
                    ),
                };
            }
            // No server stream: every answer comes with its request (the transport allows 405).
            _ => {
                let mut response = rpc_error_response(
                    StatusCode::METHOD_NOT_ALLOWED,
                    None,
                    GATEWAY_ERROR,
                    "the aggregate endpoint offers no server stream; POST requests to it",
                );
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
                return response;
            }
        }
        let body: Bytes = match http_body_util::Limited::new(body, state.options.body_limit)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                return rpc_error_response(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    None,
                    INVALID_REQUEST,
                    &format!(
                        "the request body could not be read (at most {} bytes): {e}",
                        state.options.body_limit
                    ),
                )
            }
        };
        let message: Value = match serde_json::from_slice(&body) {
            Ok(m) => m,
            Err(e) => {
                return rpc_error_response(
                    StatusCode::BAD_REQUEST,
                    None,
                    PARSE_ERROR,
                    &format!("Parse error: {e}"),
                )
            }
        };
        let version = parts
            .headers
            .get(VERSION_HEADER)
            .and_then(|v| v.to_str().ok());
        if stateless::speaks(version, &message) {
            return self.stateless(&state, &client, version, message).await;
        }
        if message.get("method").and_then(Value::as_str) == Some("initialize") {
            return self.initialize(&message);
        }
        // A session the gateway does not know (it restarted since the client began it) is
        // served and adopted: the aggregate keeps nothing per client session, so the client
        // goes on unaware (as `/mcp/NAME` does across a restart of the gateway).
        if let Some(id) = &session {
            let ended = self
                .ended
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(id);
            if ended {
                return rpc_error_response(
                    StatusCode::NOT_FOUND,
                    message.get("id").cloned(),
                    GATEWAY_ERROR,
                    "the session was ended (DELETE); begin a new one with initialize",
                );
            }
            self.remember(id);
        }
        // A lone listing: the kept text, as it is.
        if let (Some(method), Some(id)) = (
            message
                .get("method")
                .and_then(Value::as_str)
                .and_then(list_method),
            message.get("id").filter(|id| !id.is_null()),
        ) {
            let result = self.list_answer(&state, &client, method).await;
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#, result.text);
            return (
                StatusCode::OK,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                body,
            )
                .into_response();
        }
        let answers = match message {
            Value::Array(batch) => {
                let mut answers = Vec::new();
                for one in batch {
                    if let Some(answer) = self.message(&state, &client, one).await {
                        answers.push(answer);
                    }
                }
                (!answers.is_empty()).then_some(Value::Array(answers))
            }
            one => self.message(&state, &client, one).await,
        };
        match answers {
            Some(answer) => json_response(StatusCode::OK, &answer, None),
            None => StatusCode::ACCEPTED.into_response(),
        }
    }

    /// A new client session: the aggregate's capabilities and a session id.
    fn initialize(&self, message: &Value) -> Response {
        let Some(id) = message.get("id").cloned() else {
            return rpc_error_response(
                StatusCode::BAD_REQUEST,
                None,
                INVALID_REQUEST,
                "initialize must be a request (it has no id)",
            );
        };
        let asked = message
            .pointer("/params/protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let version = match VERSIONS.contains(&asked) {
            true => asked,
            false => UPSTREAM_VERSION,
        };
        let session = match new_session_id() {
            Ok(s) => s,
            Err(e) => {
                return rpc_error_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Some(id),
                    GATEWAY_ERROR,
                    &format!("cannot mint a session id: {e}"),
                )
            }
        };
        self.remember(&session);
        let answer = json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {
                "protocolVersion": version,
                "capabilities": capabilities(),
                "serverInfo": server_info(),
                "instructions": INSTRUCTIONS,
            }
        });
        json_response(StatusCode::OK, &answer, Some(&session))
    }

    /// How long every kept list of `offered` still serves (zero when one is past its time).
    fn fresh_for(&self, offered: &[InUse]) -> Duration {
        let now = Instant::now();
        offered
            .iter()
            .map(|c| {
                let connector = self.connector(&c.name);
                match connector.freshness(now) {
                    Freshness::Fresh => connector
                        .lists
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .fresh_until
                        .map_or(Duration::ZERO, |until| until.saturating_duration_since(now)),
                    Freshness::Stale | Freshness::Cold => Duration::ZERO,
                }
            })
            .min()
            .unwrap_or(LIST_TTL)
    }

    /// A client session id, kept so its DELETE is answered (the oldest forgotten past
    /// [`MAX_CLIENT_SESSIONS`]).
    fn remember(&self, id: &str) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if sessions.contains_key(id) {
            return;
        }
        if sessions.len() >= MAX_CLIENT_SESSIONS {
            if let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(k, _)| k.clone())
            {
                sessions.remove(&oldest);
            }
        }
        sessions.insert(id.to_owned(), Instant::now());
    }

    /// One JSON-RPC message from the client; the answer when it was a request.
    async fn message(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        client: &ClientRecord,
        message: Value,
    ) -> Option<Value> {
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").filter(|id| !id.is_null()).cloned();
        let (Some(method), Some(id)) = (method, id) else {
            // A notification, or the client's answer to a request we never make: nothing to say.
            return None;
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let outcome = match method {
            "ping" | "logging/setLevel" => Ok(json!({})),
            "tools/list" | "prompts/list" | "resources/list" => {
                let method = list_method(method).unwrap_or("tools/list");
                Ok(self.list_answer(state, client, method).await.value.clone())
            }
            // Templates are not offered: a templated URI cannot be traced back to a connector.
            "resources/templates/list" => Ok(json!({ "resourceTemplates": [] })),
            "tools/call" => self.tools_call(state, client, params).await,
            "prompts/get" => self.prompts_get(state, client, params).await,
            "resources/read" => self.resources_read(state, client, params).await,
            "initialize" => Err(rpc_error(
                INVALID_REQUEST,
                "initialize is not allowed in a batch",
            )),
            other => Err(rpc_error(
                METHOD_NOT_FOUND,
                &format!("Method not found: {other}"),
            )),
        };
        Some(match outcome {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
        })
    }

    /// The remote streamable-HTTP connectors in use, in status order (read again after the
    /// gateway's resolve TTL).
    async fn in_use(&self, state: &Arc<GatewayState>) -> Arc<Vec<InUse>> {
        if let Some((at, list)) = &*self.in_use.lock().unwrap_or_else(|p| p.into_inner()) {
            if at.elapsed() < state.options.resolve_ttl {
                return list.clone();
            }
        }
        let patchbay = state.upstreams.patchbay().clone();
        let read = tokio::task::spawn_blocking(move || {
            patchbay
                .status()
                .connectors
                .into_iter()
                .filter(|c| c.transport == "streamable-http")
                .map(|c| InUse {
                    name: c.name,
                    title: c.title,
                })
                .collect::<Vec<_>>()
        })
        .await;
        let list = Arc::new(read.unwrap_or_else(|e| {
            tracing::warn!("reading the connectors in use crashed: {e}");
            Vec::new()
        }));
        let before = self
            .in_use
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace((Instant::now(), list.clone()));
        // A connector taken into use anew is asked before its lists answer again: what it held
        // when it was last in use may be long out of date.
        if let Some((_, before)) = before {
            for c in list.iter() {
                if !before.iter().any(|b| b.name == c.name) {
                    self.connector(&c.name).make_cold();
                }
            }
        }
        list
    }

    fn connector(&self, name: &str) -> Arc<Connector> {
        self.connectors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(Connector::new(name)))
            .clone()
    }

    /// The connectors in use this client may reach.
    async fn offered(&self, state: &Arc<GatewayState>, client: &ClientRecord) -> Vec<InUse> {
        self.in_use(state)
            .await
            .iter()
            .filter(|c| client.allows(&c.name))
            .cloned()
            .collect()
    }
}

/// What the aggregate serves (the same to every client and revision).
fn capabilities() -> Value {
    json!({
        "tools": { "listChanged": false },
        "resources": {},
        "prompts": {},
    })
}

fn server_info() -> Value {
    json!({ "name": "patchbay", "version": env!("CARGO_PKG_VERSION") })
}

const INSTRUCTIONS: &str = "Every connector in use in Patchbay as one server: tools and prompts are named <connector>__<name>.";

/// A tool or prompt of connector `c` as the aggregate offers it: its aggregate name (when that
/// name is its own: a hash clash keeps the first) and its description prefixed with the title.
fn renamed(names: &ToolNames, c: &InUse, item: Value) -> Option<Value> {
    let own = item.get("name").and_then(Value::as_str)?.to_owned();
    let name = aggregate_tool_name(&c.name, &own);
    if names.resolve(&name) != Some((c.name.as_str(), own.as_str())) {
        return None;
    }
    let mut item = with_title_prefix(item, &c.title);
    item["name"] = Value::String(name);
    Some(item)
}

/// `description` as "TITLE: description" (just the title when it had none), and a `title` as
/// "TITLE: title".
fn with_title_prefix(mut item: Value, title: &str) -> Value {
    let description = match item.get("description").and_then(Value::as_str) {
        Some(d) if !d.trim().is_empty() => format!("{title}: {d}"),
        _ => title.to_owned(),
    };
    let own_title = item
        .get("title")
        .and_then(Value::as_str)
        .map(|t| format!("{title}: {t}"));
    if let Some(object) = item.as_object_mut() {
        object.insert("description".into(), Value::String(description));
        // A display title too, so two connectors' "Greeting Tool"s can be told apart.
        if let Some(own_title) = own_title {
            object.insert("title".into(), Value::String(own_title));
        }
    }
    item
}

fn rpc_error(code: i64, message: &str) -> Value {
    json!({ "code": code, "message": message })
}

fn rpc_error_response(status: StatusCode, id: Option<Value>, code: i64, message: &str) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": rpc_error(code, message) });
    json_response(status, &body, None)
}

pub(crate) fn json_response(status: StatusCode, body: &Value, session: Option<&str>) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(session) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        headers.insert(SESSION_HEADER, session);
    }
    (status, headers, body.to_string()).into_response()
}

/// 128 random bits, hex: a session id a client cannot guess (it carries no authority anyway:
/// every request carries the client secret).
pub(crate) fn new_session_id() -> Result<String, getrandom::Error> {
    let mut random = [0u8; 16];
    getrandom::getrandom(&mut random)?;
    Ok(random.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_use(name: &str, title: &str) -> InUse {
        InUse {
            name: name.into(),
            title: title.into(),
        }
    }

    #[test]
    fn tools_are_renamed_and_their_descriptions_carry_the_title() {
        let names = ToolNames::new([("github", "create_issue"), ("linear", "issues.create")]);
        let github = in_use("github", "GitHub");
        let tool = renamed(
            &names,
            &github,
            json!({ "name": "create_issue", "title": "New issue", "description": "Open an issue", "inputSchema": { "type": "object" } }),
        )
        .unwrap();
        assert_eq!(tool["name"], "github__create_issue");
        assert_eq!(tool["description"], "GitHub: Open an issue");
        assert_eq!(tool["title"], "GitHub: New issue");
        assert_eq!(tool["inputSchema"]["type"], "object", "the rest is kept");
        let linear = in_use("linear", "Linear");
        let hashed = renamed(&names, &linear, json!({ "name": "issues.create" })).unwrap();
        assert_eq!(hashed["name"], "linear__issues_create_d729a645");
        assert_eq!(
            hashed["description"], "Linear",
            "no description: the title alone"
        );
        // A tool the names do not hold (not listed yet) is not offered.
        assert!(renamed(&names, &github, json!({ "name": "delete_repo" })).is_none());
    }

    #[test]
    fn failures_say_what_to_do() {
        let away = Failure::Unreached("connection refused".into());
        assert!(away.is_absent());
        assert!(away
            .message("demo", "tools/call")
            .starts_with("demo is unavailable, retrying"));
        let dropped = Failure::Dropped("reset".into());
        assert!(!dropped.is_absent());
        assert!(dropped
            .message("demo", "tools/call")
            .contains("may have run"));
    }
}
