//! The aggregate endpoint (`/mcp`) in process against small MCP servers on 127.0.0.1 (axum) that
//! count what they run, with a real vault (SQLite, an in-memory key store) and the core tests'
//! rotating token endpoint: a 401 renews once and the call is replayed (it did not run), a call
//! whose connection dropped after it was sent or that outlived `timeout_ms` is never sent again
//! (it may have run), a server that lost the session gets a new one and the call (not processed)
//! is replayed, and a connector whose listing hangs is bounded by its `timeout_ms` while the
//! others' tools are listed (and is not waited on again while it is reconnected). Listings are
//! answered from the lists kept: a warm listing asks no connector, a `list_changed` streamed
//! with an answer makes the next listing ask, and a connector's `ttlMs` is honoured.

mod support;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use patchbay_gateway::GatewayOptions;
use patchbay_vault::Secret;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::rotating_as::RotatingAs;
use support::{core_with_fx, serve_gateway, Core};

/// What the servers saw.
#[derive(Default)]
struct Seen {
    /// Access tokens refused (lapsed).
    lapsed: HashSet<String>,
    /// Sessions known (`s-N`); `forget` empties it, as a restart does.
    sessions: HashSet<String>,
    begun: usize,
    /// `PATH tool` → how many times the call arrived (and ran).
    ran: HashMap<String, usize>,
    /// Requests refused with 401.
    refused: usize,
    /// `PATH` → how many `tools/list` arrived.
    listed: HashMap<String, usize>,
    /// `PATH` → tools added by a call to `grow`.
    grown: HashMap<String, Vec<String>>,
    /// What the 2026-07-28-only connector (`/modern`) saw, a request a line: `METHOD
    /// MCP-Protocol-Version Mcp-Method Mcp-Name _meta's-protocolVersion` (`-` when absent).
    modern: Vec<String>,
}

/// One HTTP server; each path prefix (`/fx/mcp`, `/slow/mcp`, `/stuck/mcp`) is a connector.
async fn servers() -> (String, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let s = seen.clone();
    let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
        let seen = s.clone();
        async move { answer(&seen, uri.path(), &headers, &body).await }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, seen)
}

fn json_answer(value: Value, session: Option<&str>) -> Response {
    let mut builder = Response::builder().header("content-type", "application/json");
    if let Some(s) = session {
        builder = builder.header("mcp-session-id", s);
    }
    builder.body(Body::from(value.to_string())).unwrap()
}

async fn answer(seen: &Mutex<Seen>, path: &str, headers: &HeaderMap, body: &[u8]) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_owned();
    let message: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let id = message["id"].clone();
    let method = message["method"].as_str().unwrap_or("-").to_owned();
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if path.starts_with("/modern") {
        return modern(seen, &message, headers);
    }
    {
        let mut seen = seen.lock().unwrap();
        if (token.is_empty() && headers.get("x-api-key").is_none()) || seen.lapsed.contains(&token)
        {
            seen.refused += 1;
            return Response::builder()
                .status(401)
                .header("www-authenticate", "Bearer")
                .body(Body::empty())
                .unwrap();
        }
        if method == "initialize" {
            seen.begun += 1;
            let new = format!("s-{}", seen.begun);
            seen.sessions.insert(new.clone());
            return json_answer(
                json!({ "jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": "counting", "version": "1" } } }),
                Some(&new),
            );
        }
        if !seen.sessions.contains(&session) {
            return Response::builder()
                .status(404)
                .body(Body::from(
                    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#,
                ))
                .unwrap();
        }
        if method == "notifications/initialized" {
            return Response::builder().status(202).body(Body::empty()).unwrap();
        }
    }
    match method.as_str() {
        "tools/list" => {
            if path.starts_with("/stuck") {
                tokio::time::sleep(Duration::from_secs(600)).await;
            }
            let (listed, grown) = {
                let mut seen = seen.lock().unwrap();
                let listed = seen.listed.entry(path.to_owned()).or_default();
                *listed += 1;
                let listed = *listed;
                (listed, seen.grown.get(path).cloned().unwrap_or_default())
            };
            let mut names: Vec<String> = ["act", "drop", "hang", "grow", "narrow"]
                .iter()
                .map(|n| n.to_string())
                .chain(grown)
                .collect();
            let mut result = json!({});
            // A 2026-07-28 server saying how long its list holds, and whose list shows how
            // often it was asked.
            if path.starts_with("/ttl") {
                names.push(format!("listed_{listed}"));
                result["ttlMs"] = json!(1000);
            }
            let tools: Vec<Value> = names
                .iter()
                .map(|n| json!({ "name": n, "description": format!("{n} once"), "inputSchema": { "type": "object" } }))
                .collect();
            result["tools"] = json!(tools);
            json_answer(
                json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                None,
            )
        }
        "tools/call" => {
            let tool = message["params"]["name"].as_str().unwrap_or("-").to_owned();
            *seen
                .lock()
                .unwrap()
                .ran
                .entry(format!("{path} {tool}"))
                .or_default() += 1;
            match tool.as_str() {
                // The answer starts, then the connection breaks: the call ran.
                "drop" => {
                    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
                        Ok(Bytes::from(": started\n\n")),
                        Err(std::io::Error::other("cut")),
                    ];
                    Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(Body::from_stream(Iter(chunks.into_iter())))
                        .unwrap()
                }
                "hang" => {
                    tokio::time::sleep(Duration::from_secs(600)).await;
                    Response::new(Body::empty())
                }
                // The credential is good but grants too little for this one.
                "narrow" => Response::builder()
                    .status(403)
                    .header(
                        "www-authenticate",
                        r#"Bearer error="insufficient_scope", scope="fx:write""#,
                    )
                    .body(Body::empty())
                    .unwrap(),
                // Adds a tool, and says so in the answer's stream before the result.
                "grow" => {
                    seen.lock()
                        .unwrap()
                        .grown
                        .entry(path.to_owned())
                        .or_default()
                        .push("grown".into());
                    let changed =
                        json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" });
                    let result = json!({ "jsonrpc": "2.0", "id": id, "result": {
                        "content": [{ "type": "text", "text": "grew" }] } });
                    Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(Body::from(format!(
                            "event: message\ndata: {changed}\n\nevent: message\ndata: {result}\n\n"
                        )))
                        .unwrap()
                }
                _ => json_answer(
                    json!({ "jsonrpc": "2.0", "id": id, "result": {
                        "content": [{ "type": "text", "text": format!("{tool} ran at {path}") }] } }),
                    None,
                ),
            }
        }
        _ => json_answer(
            json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "no" } }),
            None,
        ),
    }
}

/// A server of revision 2026-07-28 only: `server/discover`, no `initialize`, no session; a
/// request without the revision in its `MCP-Protocol-Version` header and `_meta` is refused as
/// such a server refuses a 2025 client (400, UnsupportedProtocolVersion).
fn modern(seen: &Mutex<Seen>, message: &Value, headers: &HeaderMap) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-")
            .to_owned()
    };
    let method = message["method"].as_str().unwrap_or("-");
    let meta_version = message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .unwrap_or("-");
    seen.lock().unwrap().modern.push(format!(
        "{method} {} {} {} {meta_version}",
        header("mcp-protocol-version"),
        header("mcp-method"),
        header("mcp-name"),
    ));
    let id = message["id"].clone();
    if headers.get("x-api-key").is_none() {
        return Response::builder().status(401).body(Body::empty()).unwrap();
    }
    if id.is_null() {
        return Response::builder().status(202).body(Body::empty()).unwrap();
    }
    if header("mcp-protocol-version") != "2026-07-28" || meta_version != "2026-07-28" {
        return Response::builder()
            .status(400)
            .header("content-type", "application/json")
            .body(Body::from(
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32022,
                    "message": "Unsupported protocol version",
                    "data": { "supported": ["2026-07-28"] } } })
                .to_string(),
            ))
            .unwrap();
    }
    let result = match method {
        "server/discover" => json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": { "tools": {} }, "ttlMs": 0, "cacheScope": "private",
            "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "modern", "version": "2" } } }),
        "tools/list" => json!({
            "resultType": "complete", "ttlMs": 60000, "cacheScope": "private",
            "tools": [{ "name": "act", "description": "act once", "inputSchema": { "type": "object" } }] }),
        "tools/call" => json!({
            "resultType": "complete",
            "content": [{ "type": "text", "text": format!("{} ran at /modern/mcp", message["params"]["name"].as_str().unwrap_or("-")) }] }),
        _ => {
            return json_answer(
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "no" } }),
                None,
            )
        }
    };
    json_answer(
        json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        None,
    )
}

/// `seen` (the 2026-07-28-only server's log) holds a discovery, a listing and a call of `act`,
/// each in 2026-07-28's form (header, `Mcp-Method`, `Mcp-Name`, `_meta`).
fn assert_discovered_listed_and_called(seen: &[String]) {
    for expected in [
        "server/discover 2026-07-28 server/discover - 2026-07-28",
        "tools/list 2026-07-28 tools/list - 2026-07-28",
        "tools/call 2026-07-28 tools/call act 2026-07-28",
    ] {
        assert!(
            seen.iter().any(|line| line == expected),
            "{expected}: {seen:#?}"
        );
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

struct Rig {
    _dir: tempfile::TempDir,
    patchbay: Arc<patchbay_core::Patchbay>,
    base: String,
    secret: Secret,
    seen: Arc<Mutex<Seen>>,
    ras: RotatingAs,
    http: reqwest::Client,
    session: String,
}

impl Rig {
    async fn rpc(&self, method: &str, params: Value) -> Value {
        let answer = self
            .http
            .post(format!("{}/mcp", self.base))
            .header("authorization", format!("Bearer {}", self.secret.expose()))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .json(&json!({ "jsonrpc": "2.0", "id": 9, "method": method, "params": params }))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        answer.json().await.unwrap()
    }

    async fn call(&self, tool: &str) -> Value {
        self.rpc("tools/call", json!({ "name": tool, "arguments": {} }))
            .await
    }

    fn listed(&self, path: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .listed
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    async fn tool_names(&self) -> Vec<String> {
        let listed = self.rpc("tools/list", json!({})).await;
        listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    fn ran(&self, path_and_tool: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .ran
            .get(path_and_tool)
            .copied()
            .unwrap_or(0)
    }
}

fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

async fn rig() -> Rig {
    let (base, seen) = servers().await;
    let url = format!("{base}/fx/mcp");
    let catalog = json!({ "mcpServers": {
            "fx": { "type": "http", "url": url, "title": "Fx" },
            "slow": { "type": "http", "url": format!("{base}/slow/mcp"), "headers": { "X-Api-Key": "k" },
                      "timeout_ms": 300, "retry": { "max": 3, "base_ms": 10, "jitter": 0.0 } },
            "stuck": { "type": "http", "url": format!("{base}/stuck/mcp"), "headers": { "X-Api-Key": "k" },
                       "timeout_ms": 2000 },
            "ttl": { "type": "http", "url": format!("{base}/ttl/mcp"), "headers": { "X-Api-Key": "k" } },
            "modern": { "type": "http", "url": format!("{base}/modern/mcp"), "headers": { "X-Api-Key": "k" } }
        } });
    let Core { dir, patchbay, ras } = core_with_fx(&catalog, &url).await;
    let (gateway_base, secret) = serve_gateway(
        patchbay.clone(),
        GatewayOptions {
            record_health: false,
            ..GatewayOptions::default()
        },
    )
    .await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let initialized = http
        .post(format!("{gateway_base}/mcp"))
        .header("authorization", format!("Bearer {}", secret.expose()))
        .json(
            &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "test", "version": "0" } } }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(initialized.status(), 200);
    let session = initialized.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    Rig {
        _dir: dir,
        patchbay,
        base: gateway_base,
        secret,
        seen,
        ras,
        http,
        session,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_listing_is_bounded_and_the_others_are_listed() {
    let rig = rig().await;
    let started = Instant::now();
    let listed = rig.rpc("tools/list", json!({})).await;
    let took = started.elapsed();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in ["fx__act", "fx__drop", "slow__act", "slow__hang"] {
        assert!(names.contains(&name), "{name}: {listed}");
    }
    assert!(!names.iter().any(|n| n.starts_with("stuck__")), "{listed}");
    // `stuck` has timeout_ms 2000: the listing waits that, not the gateway's 120 s.
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // Then it is reconnected in the background, and the next listing does not wait on it.
    let started = Instant::now();
    let again = rig.rpc("tools/list", json!({})).await;
    let took = started.elapsed();
    assert_eq!(again["result"]["tools"], listed["result"]["tools"]);
    assert!(took < Duration::from_millis(1500), "took {took:?}");
    let described = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "fx__act")
        .unwrap();
    assert_eq!(described["description"], "Fx: act once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_renews_once_and_the_call_runs_once() {
    let rig = rig().await;
    rig.rpc("tools/list", json!({})).await;
    rig.seen.lock().unwrap().lapsed.insert("at-fx-0".into());
    let called = rig.call("fx__act").await;
    assert_eq!(text_of(&called), "act ran at /fx/mcp", "{called}");
    assert_eq!(rig.ras.refreshes(), 1);
    assert_eq!(rig.ran("/fx/mcp act"), 1);
    assert_eq!(rig.seen.lock().unwrap().refused, 1);
    // The renewed token serves the next call without another renewal.
    let called = rig.call("fx__act").await;
    assert_eq!(text_of(&called), "act ran at /fx/mcp", "{called}");
    assert_eq!(rig.ras.refreshes(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_may_have_run_is_never_sent_again() {
    let rig = rig().await;
    rig.rpc("tools/list", json!({})).await;
    // `slow` has retry {max: 3}: for connections never made only.
    let dropped = rig.call("slow__drop").await;
    assert_eq!(dropped["result"]["isError"], true, "{dropped}");
    assert!(text_of(&dropped).contains("may have run"), "{dropped}");
    assert_eq!(rig.ran("/slow/mcp drop"), 1);
    let hung = rig.call("slow__hang").await;
    assert_eq!(hung["result"]["isError"], true, "{hung}");
    assert!(text_of(&hung).contains("within 300 ms"), "{hung}");
    assert!(text_of(&hung).contains("may have run"), "{hung}");
    assert_eq!(rig.ran("/slow/mcp hang"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_session_is_begun_again_and_the_call_replayed_once() {
    let rig = rig().await;
    rig.rpc("tools/list", json!({})).await;
    let begun = {
        let mut seen = rig.seen.lock().unwrap();
        seen.sessions.clear();
        seen.begun
    };
    let called = rig.call("slow__act").await;
    assert_eq!(text_of(&called), "act ran at /slow/mcp", "{called}");
    assert_eq!(rig.ran("/slow/mcp act"), 1);
    assert_eq!(rig.seen.lock().unwrap().begun, begun + 1);
    // A name no connector offers is not a call.
    let unknown = rig.call("slow__nothing").await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_listing_asks_no_connector_and_answers_the_same() {
    let rig = rig().await;
    let first = rig.rpc("tools/list", json!({})).await;
    assert_eq!(rig.listed("/fx/mcp"), 1);
    assert_eq!(rig.listed("/slow/mcp"), 1);
    // `ttl` renews its list every second (the first listing waits out `stuck`): left aside.
    let steady = |listed: &Value| -> Vec<Value> {
        listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| !t["name"].as_str().unwrap().starts_with("ttl__"))
            .cloned()
            .collect()
    };
    for _ in 0..3 {
        let again = rig.rpc("tools/list", json!({})).await;
        assert_eq!(steady(&again), steady(&first));
    }
    assert_eq!(rig.listed("/fx/mcp"), 1, "answered from the lists kept");
    assert_eq!(rig.listed("/slow/mcp"), 1, "answered from the lists kept");
    // The names kept resolve a call without listing again.
    let called = rig.call("fx__act").await;
    assert_eq!(text_of(&called), "act ran at /fx/mcp", "{called}");
    assert_eq!(rig.listed("/fx/mcp"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_streamed_with_an_answer_makes_the_next_listing_ask() {
    let rig = rig().await;
    let names = rig.tool_names().await;
    assert!(!names.contains(&"fx__grown".to_owned()), "{names:?}");
    let grew = rig.call("fx__grow").await;
    assert_eq!(text_of(&grew), "grew", "{grew}");
    let names = rig.tool_names().await;
    assert!(names.contains(&"fx__grown".to_owned()), "{names:?}");
    assert_eq!(rig.listed("/fx/mcp"), 2);
    // Only the connector that said so was asked again.
    assert_eq!(rig.listed("/slow/mcp"), 1);
    let called = rig.call("fx__grown").await;
    assert_eq!(text_of(&called), "grown ran at /fx/mcp", "{called}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connectors_ttl_ms_is_honoured_and_the_list_renewed_in_the_background() {
    let rig = rig().await;
    // The first listing waits out `stuck` (2 s), longer than `ttl`'s 1 s: begin from the
    // first renewal.
    let names = rig.tool_names().await;
    assert!(names.contains(&"ttl__listed_1".to_owned()), "{names:?}");
    for n in 2..=3 {
        tokio::time::sleep(Duration::from_millis(1100)).await;
        // Past its ttlMs: the kept list answers at once, the connector is asked in the
        // background.
        let kept = rig.tool_names().await;
        assert!(kept.contains(&format!("ttl__listed_{}", n - 1)), "{kept:?}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while rig.listed("/ttl/mcp") < n {
            assert!(Instant::now() < deadline, "listed again in the background");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The next listing has the news, and within the new ttlMs asks nothing.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let names = rig.tool_names().await;
            if names.contains(&format!("ttl__listed_{n}")) {
                assert!(
                    !names.contains(&format!("ttl__listed_{}", n - 1)),
                    "{names:?}"
                );
                break;
            }
            assert!(Instant::now() < deadline, "{names:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(rig.listed("/ttl/mcp"), n);
    }
    // The other connectors (no ttlMs: the default minute) were not asked again.
    assert_eq!(rig.listed("/fx/mcp"), 1);
}

impl Rig {
    /// A 2026-07-28 request: no session, the revision in the header and in `_meta`.
    async fn stateless(&self, method: &str, header: &str, meta_version: &str) -> (u16, Value) {
        let answer = self
            .http
            .post(format!("{}/mcp", self.base))
            .header("authorization", format!("Bearer {}", self.secret.expose()))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", header)
            .json(
                &json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": { "_meta": {
                "io.modelcontextprotocol/protocolVersion": meta_version,
                "io.modelcontextprotocol/clientInfo": { "name": "test", "version": "0" },
                "io.modelcontextprotocol/clientCapabilities": {} } } }),
            )
            .send()
            .await
            .unwrap();
        (answer.status().as_u16(), answer.json().await.unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_is_served_without_initialize_and_told_how_long_lists_hold() {
    let rig = rig().await;
    let v = "2026-07-28";
    let (status, discovered) = rig.stateless("server/discover", v, v).await;
    assert_eq!(status, 200, "{discovered}");
    let result = &discovered["result"];
    assert_eq!(result["supportedVersions"][0], v, "{discovered}");
    assert!(
        result["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2025-06-18")),
        "{discovered}"
    );
    assert!(result["capabilities"]["tools"].is_object(), "{discovered}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "patchbay"
    );
    let (status, listed) = rig.stateless("tools/list", v, v).await;
    assert_eq!(status, 200, "{listed}");
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "fx__act"), "{listed}");
    assert_eq!(listed["result"]["cacheScope"], "private", "{listed}");
    assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
    // `ttl` holds its list 1 s, the others a minute: the answer holds no longer than 1 s.
    let ttl = listed["result"]["ttlMs"].as_u64().unwrap();
    assert!(ttl <= 1000, "{listed}");
    // The same lists as a 2025 client's (the caching hints aside).
    let plain = rig.rpc("tools/list", json!({})).await;
    assert_eq!(
        plain["result"]["tools"].as_array().unwrap().len(),
        tools.len()
    );
    assert!(plain["result"].get("ttlMs").is_none(), "{plain}");
    let (status, called) = rig.stateless("tools/call", v, v).await;
    assert_eq!(status, 200, "{called}");
    assert_eq!(called["error"]["code"], -32602, "no name: {called}");
    // Gone from 2026-07-28.
    let (status, gone) = rig.stateless("initialize", v, v).await;
    assert_eq!((status, &gone["error"]["code"]), (404, &json!(-32601)));
    assert_eq!(gone["id"], 7);
    // The header and `_meta` disagree; a revision not served.
    let (status, mismatch) = rig.stateless("tools/list", v, "v999.0.0").await;
    assert_eq!((status, &mismatch["error"]["code"]), (400, &json!(-32020)));
    let (status, unsupported) = rig.stateless("tools/list", "v999.0.0", "v999.0.0").await;
    assert_eq!(
        (status, &unsupported["error"]["code"]),
        (400, &json!(-32022))
    );
    assert_eq!(unsupported["error"]["data"]["requested"], "v999.0.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_only_connector_is_listed_and_called_on_its_own_revision() {
    let rig = rig().await;
    let names = rig.tool_names().await;
    assert!(names.contains(&"modern__act".to_owned()), "{names:?}");
    let called = rig.call("modern__act").await;
    assert_eq!(text_of(&called), "act ran at /modern/mcp", "{called}");
    assert!(
        called["result"].get("resultType").is_none(),
        "a 2025 client is answered in its revision: {called}"
    );
    let seen = rig.seen.lock().unwrap().modern.clone();
    // Discovered, never initialized; every request in 2026-07-28's form.
    assert!(
        seen.iter().all(|line| !line.starts_with("initialize")),
        "{seen:#?}"
    );
    assert_discovered_listed_and_called(&seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_403_for_more_access_is_said_and_noted_for_the_row() {
    // The gateway cannot ask for consent here (no authorizer): the call says what to do, and
    // the scope the server wanted is noted, so the row says "Needs more access".
    let rig = rig().await;
    rig.rpc("tools/list", json!({})).await;
    let refused = rig.call("fx__narrow").await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        text_of(&refused).contains("needs more access") && text_of(&refused).contains("fx:write"),
        "{refused}"
    );
    assert_eq!(rig.ran("/fx/mcp narrow"), 1);
    let report = rig.patchbay.status();
    let row = report.connectors.iter().find(|c| c.name == "fx").unwrap();
    assert_eq!(row.label, "Needs more access", "{row:?}");
    assert!(row.detail.contains("fx:write"), "{}", row.detail);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_client_reaches_a_2026_only_server_through_its_own_endpoint() {
    // `/mcp/modern` for a client that initializes: the server refuses 2025, so the gateway
    // speaks 2026-07-28 to it for the client, in a session of its own.
    let rig = rig().await;
    let url = format!("{}/mcp/modern", rig.base);
    let send = |method: reqwest::Method, body: Option<Value>, session: Option<String>| {
        let mut request = rig
            .http
            .request(method, &url)
            .header("authorization", format!("Bearer {}", rig.secret.expose()))
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send()
    };
    let initialized = send(
        reqwest::Method::POST,
        Some(
            json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "old", "version": "0" } } }),
        ),
        None,
    )
    .await
    .unwrap();
    assert_eq!(initialized.status(), 200);
    let session = initialized.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let answer: Value = initialized.json().await.unwrap();
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-06-18",
        "{answer}"
    );
    assert_eq!(answer["result"]["serverInfo"]["name"], "modern", "{answer}");
    assert!(
        answer["result"]["capabilities"]["tools"].is_object(),
        "{answer}"
    );
    let acked = send(
        reqwest::Method::POST,
        Some(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })),
        Some(session.clone()),
    )
    .await
    .unwrap();
    assert_eq!(acked.status(), 202);
    let listed: Value = send(
        reqwest::Method::POST,
        Some(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" })),
        Some(session.clone()),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(listed["result"]["tools"][0]["name"], "act", "{listed}");
    let called: Value = send(
        reqwest::Method::POST,
        Some(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": { "name": "act", "arguments": {} } })),
        Some(session.clone()),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(text_of(&called), "act ran at /modern/mcp", "{called}");
    let stream = send(reqwest::Method::GET, None, Some(session.clone()))
        .await
        .unwrap();
    assert_eq!(
        stream.status(),
        405,
        "no server stream in a translated session"
    );
    let ended = send(reqwest::Method::DELETE, None, Some(session))
        .await
        .unwrap();
    assert_eq!(ended.status(), 200);
    let seen = rig.seen.lock().unwrap().modern.clone();
    assert_eq!(
        seen.iter().filter(|l| l.starts_with("initialize")).count(),
        1,
        "the client's own initialize, refused once: {seen:#?}"
    );
    assert_discovered_listed_and_called(&seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ended_by_its_client_is_404_after() {
    // The transport's rule for a terminated session; an id the aggregate never saw (the
    // gateway restarted) is still adopted.
    let rig = rig().await;
    let post = |session: &str| {
        rig.http
            .post(format!("{}/mcp", rig.base))
            .header("authorization", format!("Bearer {}", rig.secret.expose()))
            .header("mcp-session-id", session)
            .json(&json!({ "jsonrpc": "2.0", "id": 5, "method": "ping" }))
            .send()
    };
    assert_eq!(post(&rig.session).await.unwrap().status(), 200);
    let ended = rig
        .http
        .delete(format!("{}/mcp", rig.base))
        .header("authorization", format!("Bearer {}", rig.secret.expose()))
        .header("mcp-session-id", &rig.session)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 200);
    assert_eq!(post(&rig.session).await.unwrap().status(), 404);
    assert_eq!(post("never-seen").await.unwrap().status(), 200);
}
