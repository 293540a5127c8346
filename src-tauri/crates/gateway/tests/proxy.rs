//! The gateway in process against a small streamable-HTTP upstream on 127.0.0.1 (axum) and the
//! core tests' rotating token endpoint, with a real vault (SQLite, an in-memory key store): the
//! credential replaces the client's secret, MCP headers pass both ways, an SSE answer arrives
//! event by event while the upstream is still writing it (the upstream waits for the test before
//! each next event: no timing), a 401 renews once and replays, a refused renewal is a JSON-RPC
//! error saying to authorize in Patchbay with no upstream `WWW-Authenticate`, a `tools/call`
//! that reached a failing upstream is not sent twice, and `timeout_ms` bounds an upstream that
//! never answers.

mod support;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use patchbay_gateway::GatewayOptions;
use patchbay_vault::Secret;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::rotating_as::{Fault, RotatingAs};
use support::{core_with_fx, serve_gateway, Core};

/// What the upstream saw and decides.
#[derive(Default)]
struct Seen {
    /// Every request: its Authorization and the headers the test looks for.
    requests: Vec<HeaderMap>,
    /// Access tokens the upstream refuses (lapsed).
    lapsed: HashSet<String>,
    /// The sessions it knows (ids `s-N`); a restart forgets them.
    sessions: HashSet<String>,
    /// Sessions begun so far.
    begun: usize,
    /// The methods of the messages it received, in order.
    methods: Vec<String>,
}

struct Upstream {
    base: String,
    seen: Arc<Mutex<Seen>>,
    /// Each send lets the SSE answer write its next event.
    next_event: tokio::sync::mpsc::UnboundedSender<()>,
}

async fn upstream() -> Upstream {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (next_event, gate) = tokio::sync::mpsc::unbounded_channel::<()>();
    let gate = Arc::new(tokio::sync::Mutex::new(gate));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let s = seen.clone();
    let app = axum::Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
        let seen = s.clone();
        let gate = gate.clone();
        async move {
            let token = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or_default()
                .to_owned();
            let refused = {
                let mut seen = seen.lock().unwrap();
                seen.requests.push(headers.clone());
                (token.is_empty() && headers.get("x-api-key").is_none())
                    || seen.lapsed.contains(&token)
            };
            if refused {
                return Response::builder()
                    .status(401)
                    .header(
                        "www-authenticate",
                        "Bearer resource_metadata=\"http://upstream.example/.well-known/oauth-protected-resource\"",
                    )
                    .body(Body::from("{\"error\":\"invalid_token\"}"))
                    .unwrap();
            }
            let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let id = message["id"].clone();
            let session = headers
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            {
                let mut seen = seen.lock().unwrap();
                seen.methods
                    .push(message["method"].as_str().unwrap_or("-").to_owned());
                if message["method"] == "initialize" {
                    seen.begun += 1;
                    let new = format!("s-{}", seen.begun);
                    seen.sessions.insert(new.clone());
                    return Response::builder()
                        .header("content-type", "application/json")
                        .header("mcp-session-id", new)
                        .body(Body::from(
                            json!({ "jsonrpc": "2.0", "id": id, "result": { "protocolVersion": "2025-06-18" } })
                                .to_string(),
                        ))
                        .unwrap();
                }
                if session.starts_with("s-") && !seen.sessions.contains(&session) {
                    return Response::builder()
                        .status(404)
                        .body(Body::from("{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32001,\"message\":\"Session not found\"}}"))
                        .unwrap();
                }
                if message["method"] == "notifications/initialized" {
                    return Response::builder().status(202).body(Body::empty()).unwrap();
                }
            }
            match message["method"].as_str() {
                Some("stream") => {
                    // Three events, each only when the test says so.
                    let stream = async_stream(gate, id);
                    Response::builder()
                        .header("content-type", "text/event-stream")
                        .header("mcp-session-id", "session-1")
                        .body(Body::from_stream(stream))
                        .unwrap()
                }
                Some("hang") => {
                    tokio::time::sleep(Duration::from_secs(600)).await;
                    Response::new(Body::empty())
                }
                Some("crash") => Response::builder()
                    .status(500)
                    .body(Body::from("upstream failed"))
                    .unwrap(),
                _ => Response::builder()
                    .header("content-type", "application/json")
                    .header("mcp-session-id", "session-1")
                    .header("set-cookie", "sticky=1")
                    .body(Body::from(
                        json!({ "jsonrpc": "2.0", "id": id, "result": { "token_seen": token.len() } })
                            .to_string(),
                    ))
                    .unwrap(),
            }
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Upstream {
        base,
        seen,
        next_event,
    }
}

/// An SSE body: one event per permission from the test.
fn async_stream(
    gate: Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<()>>>,
    id: Value,
) -> impl futures_core::Stream<Item = Result<Bytes, std::io::Error>> {
    struct State {
        gate: Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<()>>>,
        id: Value,
        sent: u32,
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
    let mut state = State { gate, id, sent: 0 };
    tokio::spawn(async move {
        while state.sent < 3 {
            if state.gate.lock().await.recv().await.is_none() {
                return;
            }
            state.sent += 1;
            let event = if state.sent < 3 {
                json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progress": state.sent } })
            } else {
                json!({ "jsonrpc": "2.0", "id": state.id, "result": {} })
            };
            let chunk = format!("id: {}\ndata: {event}\n\n", state.sent);
            if tx.send(Ok(Bytes::from(chunk))).await.is_err() {
                return;
            }
        }
    });
    ReceiverStream(rx)
}

struct ReceiverStream<T>(tokio::sync::mpsc::Receiver<T>);

impl<T> futures_core::Stream for ReceiverStream<T> {
    type Item = T;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        self.0.poll_recv(cx)
    }
}

/// A server that reads a request and hangs up without answering; counts connections.
async fn dropper() -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            drop(socket);
        }
    });
    (addr, accepted)
}

struct Rig {
    _dir: tempfile::TempDir,
    /// Where nothing listens until a test starts something there.
    late_port: u16,
    dropped: Arc<std::sync::atomic::AtomicUsize>,
    base: String,
    secret: Secret,
    upstream: Upstream,
    ras: RotatingAs,
    http: reqwest::Client,
}

impl Rig {
    fn post(&self, name: &str, body: Value) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}/mcp/{name}", self.base))
            .header("authorization", format!("Bearer {}", self.secret.expose()))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string())
    }
}

async fn rig() -> Rig {
    let upstream = upstream().await;
    let dropper = dropper().await;
    let late_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("{}/mcp", upstream.base);
    let catalog = json!({ "mcpServers": {
            "fx": { "type": "http", "url": url },
            "slow": { "type": "http", "url": url, "headers": { "X-Api-Key": "k" }, "timeout_ms": 300 },
            "flaky": { "type": "http", "url": url, "headers": { "X-Api-Key": "k" },
                       "retry": { "max": 3, "base_ms": 10, "jitter": 0.0 } },
            "late": { "type": "http", "url": format!("http://127.0.0.1:{late_port}/mcp"), "headers": { "X-Api-Key": "k" },
                       "retry": { "max": 3, "base_ms": 200, "jitter": 0.0 } },
            "late-no-retry": { "type": "http", "url": format!("http://127.0.0.1:{late_port}/mcp"), "headers": { "X-Api-Key": "k" } },
            "dropper": { "type": "http", "url": format!("http://{}/mcp", dropper.0), "headers": { "X-Api-Key": "k" },
                         "retry": { "max": 3, "base_ms": 10, "jitter": 0.0 } }
        } });
    let Core { dir, patchbay, ras } = core_with_fx(&catalog, &url).await;
    let (base, secret) = serve_gateway(patchbay, GatewayOptions::default()).await;
    Rig {
        _dir: dir,
        late_port,
        dropped: dropper.1,
        base,
        secret,
        upstream,
        ras,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_credential_replaces_the_secret_and_mcp_headers_pass_both_ways() {
    let rig = rig().await;
    let answer = rig
        .post(
            "fx",
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
        )
        .header("mcp-session-id", "session-1")
        .header("mcp-protocol-version", "2025-06-18")
        .header("last-event-id", "41")
        .header("origin", "http://localhost:6274")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.headers()["mcp-session-id"], "session-1");
    assert!(answer.headers().get("set-cookie").is_none());
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["id"], 1);
    let seen = rig.upstream.seen.lock().unwrap();
    let sent = seen.requests.last().unwrap();
    assert_eq!(sent["authorization"], "Bearer at-fx-0");
    assert_eq!(sent["mcp-session-id"], "session-1");
    assert_eq!(sent["mcp-protocol-version"], "2025-06-18");
    assert_eq!(sent["last-event-id"], "41");
    assert!(sent.get("origin").is_none() && sent.get("x-patchbay-client").is_none());
    assert_eq!(
        sent["host"],
        rig.upstream.base.trim_start_matches("http://")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_answer_arrives_event_by_event() {
    let rig = rig().await;
    let mut answer = rig
        .post(
            "fx",
            json!({ "jsonrpc": "2.0", "id": 5, "method": "stream" }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.headers()["content-type"], "text/event-stream");
    let mut received = String::new();
    for n in 1..=3 {
        // The upstream writes event n only now; the gateway must hand it on before n + 1 exists.
        rig.upstream.next_event.send(()).unwrap();
        while !received.contains(&format!("id: {n}\n")) {
            let chunk = tokio::time::timeout(Duration::from_secs(20), answer.chunk())
                .await
                .unwrap_or_else(|_| panic!("event {n} held back; so far: {received}"))
                .unwrap()
                .expect("the stream goes on");
            received.push_str(std::str::from_utf8(&chunk).unwrap());
        }
        assert!(!received.contains(&format!("id: {}\n", n + 1)));
    }
    assert!(received.contains("\"id\":5"), "{received}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_renews_once_and_replays_the_request() {
    let rig = rig().await;
    rig.upstream
        .seen
        .lock()
        .unwrap()
        .lapsed
        .insert("at-fx-0".into());
    let answer = rig
        .post(
            "fx",
            json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "x" } }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert!(answer.headers().get("www-authenticate").is_none());
    assert_eq!(rig.ras.refreshes(), 1);
    let seen = rig.upstream.seen.lock().unwrap();
    let tokens: Vec<String> = seen
        .requests
        .iter()
        .map(|h| h["authorization"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(tokens.len(), 2, "the refused request, then its replay");
    assert_eq!(tokens[0], "Bearer at-fx-0");
    assert_ne!(tokens[1], tokens[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_renewal_is_a_json_rpc_error_without_the_upstreams_challenge() {
    let rig = rig().await;
    rig.upstream
        .seen
        .lock()
        .unwrap()
        .lapsed
        .insert("at-fx-0".into());
    rig.ras.push_fault(Fault::Status(
        400,
        "application/json",
        json!({ "error": "invalid_grant" }).to_string(),
    ));
    let answer = rig
        .post(
            "fx",
            json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "x" } }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::BAD_GATEWAY);
    assert!(answer.headers().get("www-authenticate").is_none());
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["id"], 3);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("authorize fx in Patchbay"), "{message}");
    assert!(!message.contains("at-fx-0"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_reached_a_failing_upstream_is_not_sent_again() {
    let rig = rig().await;
    // `flaky` has retry {max: 3}: only for a connection never made. This one was made.
    let answer = rig
        .post(
            "flaky",
            json!({ "jsonrpc": "2.0", "id": 4, "method": "crash" }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(rig.upstream.seen.lock().unwrap().requests.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_ms_bounds_an_upstream_that_never_answers() {
    let rig = rig().await;
    let answer = rig
        .post(
            "slow",
            json!({ "jsonrpc": "2.0", "id": 6, "method": "hang" }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::BAD_GATEWAY);
    let body: Value = answer.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("within 300 ms"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_connection_dropped_after_sending_is_not_retried() {
    let rig = rig().await;
    // `dropper` has retry {max: 3}; the request reached it, so it may have run: no retry.
    let answer = rig
        .post(
            "dropper",
            json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": { "name": "x" } }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::BAD_GATEWAY);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["id"], 8);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("dropper is unreachable"));
    assert_eq!(rig.dropped.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_lost_the_session_gets_it_begun_anew_unseen_by_the_client() {
    let rig = rig().await;
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } });
    let answer = rig.post("fx", init).send().await.unwrap();
    let session = answer.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(session, "s-1");
    let call =
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "x" } });
    let answer = rig
        .post("fx", call.clone())
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);

    // The server restarts: it knows no session any more.
    rig.upstream.seen.lock().unwrap().sessions.clear();
    let answer = rig
        .post("fx", call.clone())
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(
        answer.status(),
        StatusCode::OK,
        "replayed in the new session"
    );
    assert_eq!(
        answer.headers()["mcp-session-id"],
        session.as_str(),
        "the client's id stays"
    );
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["id"], 2);
    {
        let seen = rig.upstream.seen.lock().unwrap();
        assert_eq!(seen.begun, 2);
        let sent = seen.requests.last().unwrap();
        assert_eq!(
            sent["mcp-session-id"], "s-2",
            "the server's new id goes upstream"
        );
        assert_eq!(
            seen.methods[seen.methods.len() - 4..],
            [
                "tools/call",
                "initialize",
                "notifications/initialized",
                "tools/call"
            ]
        );
    }
    // Later requests go to the new session directly.
    let answer = rig
        .post("fx", call)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(rig.upstream.seen.lock().unwrap().begun, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_retried_per_the_connectors_retry() {
    let rig = rig().await;
    let call =
        json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": { "name": "x" } });
    // Without `retry`, a refused connection is the answer.
    let answer = rig
        .post("late-no-retry", call.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::BAD_GATEWAY);
    // With it (200 ms, doubling), a server that comes up meanwhile gets the call, once.
    let port = rig.late_port;
    let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = served.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let app = axum::Router::new().fallback(move || {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { axum::Json(json!({ "jsonrpc": "2.0", "id": 9, "result": {} })) }
        });
        axum::serve(listener, app).await.unwrap();
    });
    let answer = rig.post("late", call).send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// One raw HTTP/1.1 exchange with the gateway: the status line of its answer.
async fn raw_status(base: &str, request: String) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 512];
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut answer))
        .await
        .expect("an answer within 10 s")
        .unwrap();
    let text = String::from_utf8_lossy(&answer[..read]).into_owned();
    text.lines().next().unwrap_or_default().to_owned()
}

/// RFC 9112 §3.2: two Host headers, or an absolute-form target naming another host, get 400,
/// with the secret or without; an absolute-form target naming the gateway itself is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_or_an_absolute_target_for_another_host_are_a_400() {
    let rig = rig().await;
    let host = rig.base.trim_start_matches("http://").to_owned();
    let secret = rig.secret.expose();
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }).to_string();
    let request = |target: &str, hosts: &[&str]| {
        let mut head = format!("POST {target} HTTP/1.1\r\n");
        for h in hosts {
            head.push_str(&format!("Host: {h}\r\n"));
        }
        format!(
            "{head}Authorization: Bearer {secret}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let two_hosts = raw_status(&rig.base, request("/mcp/fx", &[&host, "evil.example"])).await;
    assert!(two_hosts.contains(" 400 "), "{two_hosts}");
    let reversed = raw_status(&rig.base, request("/mcp/fx", &["evil.example", &host])).await;
    assert!(reversed.contains(" 400 "), "{reversed}");
    let elsewhere = raw_status(&rig.base, request("http://evil.example/mcp/fx", &[&host])).await;
    assert!(elsewhere.contains(" 400 "), "{elsewhere}");
    let itself = raw_status(
        &rig.base,
        request(&format!("http://{host}/mcp/fx"), &[&host]),
    )
    .await;
    assert!(
        !itself.contains(" 400 ") && !itself.contains(" 403 "),
        "{itself}"
    );
    let plain = raw_status(&rig.base, request("/mcp/fx", &[&host])).await;
    assert!(plain.contains(" 200 "), "{plain}");
}

/// A connection that never finishes its request's head is closed once `header_read_timeout`
/// passes (no secret is needed to open one, so they must not pile up); a whole request on
/// another connection meanwhile is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_head_is_closed_after_the_header_read_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let upstream = upstream().await;
    let url = format!("{}/mcp", upstream.base);
    let catalog = json!({ "mcpServers": { "fx": { "type": "http", "url": url } } });
    let Core {
        dir: _dir,
        patchbay,
        ras: _ras,
    } = core_with_fx(&catalog, &url).await;
    let (base, secret) = serve_gateway(
        patchbay,
        GatewayOptions {
            header_read_timeout: Duration::from_millis(300),
            record_health: false,
            ..GatewayOptions::default()
        },
    )
    .await;
    let address = base.trim_start_matches("http://").to_owned();
    let mut half = tokio::net::TcpStream::connect(&address).await.unwrap();
    half.write_all(format!("POST /mcp/fx HTTP/1.1\r\nHost: {address}\r\nX-Slow: ").as_bytes())
        .await
        .unwrap();
    // Served meanwhile.
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }).to_string();
    let request = format!(
        "POST /mcp/fx HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        secret.expose(),
        body.len()
    );
    let status = raw_status(&base, request).await;
    assert!(status.contains(" 200 "), "{status}");
    // The half-sent one: closed by the gateway (EOF, or a 408 first), long before our 10 s.
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), half.read_to_end(&mut rest)).await;
    let text = String::from_utf8_lossy(&rest);
    assert!(
        matches!(read, Ok(Ok(_))),
        "the half-sent head was still held after 10 s: {read:?} {text}"
    );
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
}

/// A request the gates refuse closes its connection (`Connection: close`, then EOF): without a
/// secret a client cannot keep connections open; with one, keep-alive holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_closes_its_connection_and_a_served_one_keeps_it() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rig = rig().await;
    let address = rig.base.trim_start_matches("http://").to_owned();
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }).to_string();
    let ask = |auth: &str| {
        format!(
            "POST /mcp/fx HTTP/1.1\r\nHost: {address}\r\n{auth}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    // What the connection says within 2 s: the text read, and whether it ended.
    async fn read_for(tcp: &mut tokio::net::TcpStream) -> (String, bool) {
        let mut text = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match tokio::time::timeout(Duration::from_secs(2), tcp.read(&mut buf)).await {
                Ok(Ok(0)) => return (String::from_utf8_lossy(&text).into_owned(), true),
                Ok(Ok(n)) => text.extend_from_slice(&buf[..n]),
                Ok(Err(_)) => return (String::from_utf8_lossy(&text).into_owned(), true),
                Err(_) => return (String::from_utf8_lossy(&text).into_owned(), false),
            }
        }
    }
    let mut refused = tokio::net::TcpStream::connect(&address).await.unwrap();
    refused.write_all(ask("").as_bytes()).await.unwrap();
    let (text, ended) = read_for(&mut refused).await;
    assert!(text.starts_with("HTTP/1.1 401"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
    assert!(ended, "the refused connection was closed");

    let secret = format!("Authorization: Bearer {}\r\n", rig.secret.expose());
    let mut served = tokio::net::TcpStream::connect(&address).await.unwrap();
    served.write_all(ask(&secret).as_bytes()).await.unwrap();
    let (text, ended) = read_for(&mut served).await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        !ended,
        "a served connection stays open for the next request"
    );
}
