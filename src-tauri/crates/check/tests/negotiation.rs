//! The connection check negotiates the protocol revision per server. MCP 2026-07-28 made the core
//! stateless: no `initialize`, `server/discover` instead, `_meta` and the `MCP-Protocol-Version` /
//! `Mcp-Method` headers on every request. Two small streamable-HTTP servers on 127.0.0.1, each
//! speaking one revision only and as strictly as the conformance framework's:
//!
//! - a 2026-07-28-only server answers a bare `initialize` (no `MCP-Protocol-Version` header) with
//!   400 "Missing MCP-Protocol-Version header", checks the headers against the body, and answers
//!   `server/discover` and `tools/list`;
//! - a 2025-11-25-only server (stateful, like the TypeScript SDK's) answers any request but
//!   `initialize` without a session with 400 and a JSON-RPC error, and refuses a
//!   `MCP-Protocol-Version` header of another revision.
//!
//! The same two revisions over stdio: tests/node/one-revision-stdio-server.mjs, started by the
//! check itself. Each server records the requests it got, so the tests also say in what order
//! the check asked.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use patchbay_check::{
    check, AuthKind, CheckTarget, Endpoint, HttpEndpoint, StdioLaunch, Timeouts, TransportKind,
};
use patchbay_vault::Secret;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a server saw: each request's method (`DELETE` for a session's end), and the revision
/// each `initialize` asked for.
#[derive(Default)]
struct Seen {
    methods: Vec<String>,
    initialize_versions: Vec<String>,
}

type Log = Arc<Mutex<Seen>>;

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://127.0.0.1:{port}/mcp")
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn rpc_error(status: StatusCode, id: &Value, code: i64, message: &str) -> Response {
    (
        status,
        Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})),
    )
        .into_response()
}

fn rpc_result(id: &Value, result: Value) -> Response {
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

fn tools() -> Value {
    json!({"tools": [{"name": "lookup", "description": "Looks a thing up", "inputSchema": {"type": "object"}}]})
}

/// A server that speaks 2026-07-28 and nothing older.
async fn only_2026(
    State(log): State<Log>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    log.lock().unwrap().methods.push(method.clone());
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    match header(&headers, "mcp-protocol-version") {
        None => {
            return (
                StatusCode::BAD_REQUEST,
                "Missing MCP-Protocol-Version header",
            )
                .into_response()
        }
        Some("2026-07-28") => {}
        Some(_) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32022,
                    "message": "Unsupported protocol version",
                    "data": {"supported": ["2026-07-28"]}
                }})),
            )
                .into_response()
        }
    }
    if header(&headers, "mcp-method") != Some(method.as_str()) {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            &id,
            -32020,
            "Mcp-Method does not match the body",
        );
    }
    if body.get("id").is_none() {
        return StatusCode::ACCEPTED.into_response();
    }
    let meta = &body["params"]["_meta"];
    if meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28"
        || !meta["io.modelcontextprotocol/clientCapabilities"].is_object()
    {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            &id,
            -32602,
            "request _meta is missing its protocol version or client capabilities",
        );
    }
    match method.as_str() {
        "server/discover" => rpc_result(
            &id,
            json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "ttlMs": 0,
                "cacheScope": "public",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "only-2026", "version": "2.0.0"}}
            }),
        ),
        "tools/list" => rpc_result(&id, tools()),
        _ => rpc_error(StatusCode::OK, &id, -32601, "Method not found"),
    }
}

const SESSION: &str = "session-2025";

/// A server that speaks 2025-11-25 and nothing newer, with sessions.
async fn only_2025(
    State(log): State<Log>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    log.lock().unwrap().methods.push(method.clone());
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    if method == "initialize" {
        let asked = body["params"]["protocolVersion"]
            .as_str()
            .unwrap_or_default();
        log.lock()
            .unwrap()
            .initialize_versions
            .push(asked.to_owned());
        let mut response = rpc_result(
            &id,
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "only-2025", "version": "1.2.3"}
            }),
        );
        response
            .headers_mut()
            .insert("mcp-session-id", SESSION.parse().unwrap());
        return response;
    }
    if header(&headers, "mcp-session-id") != Some(SESSION) {
        // The TypeScript SDK's answer, id and all.
        return rpc_error(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            -32000,
            "Bad Request: No valid session ID provided",
        );
    }
    if header(&headers, "mcp-protocol-version").is_some_and(|v| v != "2025-11-25") {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            -32000,
            "Bad Request: Unsupported protocol version",
        );
    }
    if body.get("id").is_none() {
        return StatusCode::ACCEPTED.into_response();
    }
    match method.as_str() {
        "tools/list" => rpc_result(&id, tools()),
        _ => rpc_error(StatusCode::OK, &id, -32601, "Method not found"),
    }
}

async fn end_session(State(log): State<Log>) -> StatusCode {
    log.lock().unwrap().methods.push("DELETE".into());
    StatusCode::OK
}

fn router<H, T>(log: &Log, handler: H) -> Router
where
    H: axum::handler::Handler<T, Log>,
    T: 'static,
{
    Router::new()
        .route(
            "/mcp",
            post(handler)
                .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
                .delete(end_session),
        )
        .with_state(log.clone())
}

fn target(connector: &str, url: String) -> CheckTarget {
    with_endpoint(
        connector,
        Endpoint::StreamableHttp(HttpEndpoint {
            url,
            headers: Vec::new(),
        }),
        AuthKind::OAuth { token_sent: false },
    )
}

fn with_endpoint(connector: &str, endpoint: Endpoint, auth: AuthKind) -> CheckTarget {
    CheckTarget {
        connector: connector.into(),
        endpoint,
        auth,
        extra_secrets: Vec::new(),
        request_timeout: None,
        retry: None,
    }
}

fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(5),
        initialize: Duration::from_secs(10),
        stdio_initialize: Duration::from_secs(10),
        list_tools: Duration::from_secs(10),
        shutdown: Duration::from_secs(2),
    }
}

#[tokio::test]
async fn a_2026_07_28_only_server_is_checked_through_server_discover() {
    let log = Log::default();
    let url = serve(router(&log, only_2026)).await;
    let outcome = check(&target("only2026", url), &timeouts()).await;

    let handshake = outcome.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(handshake.transport, TransportKind::StreamableHttp);
    assert_eq!(outcome.fell_back_to, None);
    assert_eq!(handshake.server.protocol_version, "2026-07-28");
    assert_eq!(handshake.server.name, "only-2026");
    assert_eq!(handshake.server.version, "2.0.0");
    let tools: Vec<&str> = handshake.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["only2026.lookup"]);
    assert_eq!(
        log.lock().unwrap().methods,
        ["server/discover", "tools/list"],
        "no initialize: the revision has none"
    );
}

#[tokio::test]
async fn a_2025_11_25_only_server_is_checked_through_initialize_after_discover() {
    let log = Log::default();
    let url = serve(router(&log, only_2025)).await;
    let outcome = check(&target("only2025", url), &timeouts()).await;

    let handshake = outcome.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(handshake.transport, TransportKind::StreamableHttp);
    assert_eq!(outcome.fell_back_to, None);
    assert_eq!(handshake.server.protocol_version, "2025-11-25");
    assert_eq!(handshake.server.name, "only-2025");
    let tools: Vec<&str> = handshake.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["only2025.lookup"]);
    let seen = log.lock().unwrap();
    assert_eq!(
        seen.methods,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "DELETE"
        ],
        "discover first; the legacy handshake when the server answers it as a legacy server"
    );
    assert_eq!(
        seen.initialize_versions,
        ["2025-11-25"],
        "initialize asks for the newest revision that has it"
    );
}

/// The stdio server of `revision`, logging to a file in `dir`; the log's path.
fn stdio_target(
    connector: &str,
    revision: &str,
    dir: &tempfile::TempDir,
) -> (CheckTarget, std::path::PathBuf) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/node/one-revision-stdio-server.mjs");
    let log = dir.path().join("seen.log");
    let launch = StdioLaunch {
        command: "node".into(),
        args: [
            script.display().to_string(),
            revision.into(),
            log.display().to_string(),
        ]
        .into_iter()
        .map(Secret::new)
        .collect(),
        env: Vec::new(),
        cwd: None,
    };
    (
        with_endpoint(connector, Endpoint::Stdio(launch), AuthKind::Process),
        log,
    )
}

fn seen_lines(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_2026_07_28_only_stdio_server_is_checked_through_server_discover() {
    let dir = tempfile::tempdir().unwrap();
    let (target, log) = stdio_target("stdio2026", "2026-07-28", &dir);
    let outcome = check(&target, &timeouts()).await;

    let handshake = outcome.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(handshake.transport, TransportKind::Stdio);
    assert_eq!(handshake.server.protocol_version, "2026-07-28");
    assert_eq!(handshake.server.name, "stdio-2026");
    let tools: Vec<&str> = handshake.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["stdio2026.lookup"]);
    assert_eq!(seen_lines(&log), ["server/discover", "tools/list"]);
}

#[tokio::test]
async fn a_2025_11_25_only_stdio_server_is_checked_through_initialize_after_discover() {
    let dir = tempfile::tempdir().unwrap();
    let (target, log) = stdio_target("stdio2025", "2025-11-25", &dir);
    let outcome = check(&target, &timeouts()).await;

    let handshake = outcome.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(handshake.transport, TransportKind::Stdio);
    assert_eq!(handshake.server.protocol_version, "2025-11-25");
    assert_eq!(handshake.server.name, "stdio-2025");
    let tools: Vec<&str> = handshake.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["stdio2025.lookup"]);
    assert_eq!(
        seen_lines(&log),
        [
            "server/discover",
            "initialize 2025-11-25",
            "notifications/initialized",
            "tools/list"
        ]
    );
}

/// A server whose every request wants a scope the credential lacks.
async fn wants_more(State(log): State<Log>, Json(body): Json<Value>) -> Response {
    log.lock()
        .unwrap()
        .methods
        .push(body["method"].as_str().unwrap_or_default().to_owned());
    (
        StatusCode::FORBIDDEN,
        [(
            "www-authenticate",
            r#"Bearer error="insufficient_scope", scope="files:write""#,
        )],
    )
        .into_response()
}

#[tokio::test]
async fn a_403_insufficient_scope_is_needs_more_access_with_the_scope() {
    let log = Log::default();
    let url = serve(router(&log, wants_more)).await;
    let outcome = check(&target("narrow", url), &timeouts()).await;
    let Err(error) = &outcome.result else {
        panic!("a 403 fails the check");
    };
    assert!(
        matches!(error, patchbay_check::CheckError::NeedsMoreAccess { scope, .. } if scope == "files:write"),
        "{error:?}"
    );
    assert_eq!(error.http_status(), Some(403));
    assert!(!error.is_retryable());
    assert!(error.to_string().contains("\"files:write\""), "{error}");
}
