//! Loops through the gateway (issue 20): a connector whose URL comes back to the gateway itself.
//! Every request the gateway sends upstream carries its hop id, and a request arriving with it
//! is refused at once with 508 Loop Detected and a JSON-RPC error; a connector whose URL is the
//! gateway's own by the rule is refused before anything is sent. Either way the aggregate's
//! `tools/list` still answers, quickly, with the other connectors' tools. Real servers on
//! 127.0.0.1: the gateway, and a small MCP server (`fx`) that keeps the hop ids it was sent.

mod support;

use axum::body::{Body, Bytes};
use axum::http::HeaderMap;
use axum::response::Response;
use patchbay_check::{HealthStore, HEALTH_FILE};
use patchbay_gateway::{GatewayOptions, HOP_HEADER};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{core_with_fx, serve_gateway};

/// A minimal MCP server with one tool; the hop ids it was sent go into `hops`.
async fn fx_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let hops = Arc::new(Mutex::new(Vec::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = hops.clone();
    let app = axum::Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
        let seen = seen.clone();
        async move {
            if let Some(hop) = headers.get(HOP_HEADER).and_then(|v| v.to_str().ok()) {
                seen.lock().unwrap().push(hop.to_owned());
            }
            let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let id = message["id"].clone();
            let result = match message["method"].as_str() {
                Some("initialize") => json!({ "protocolVersion": "2025-06-18",
                    "capabilities": { "tools": {} }, "serverInfo": { "name": "fx", "version": "1" } }),
                Some("tools/list") => json!({ "tools": [{ "name": "whoami",
                    "inputSchema": { "type": "object" } }] }),
                // A notification is accepted; a request it does not know (2026-07-28's
                // `server/discover`) is answered as a 2025 server answers it.
                _ if id.is_null() => {
                    return Response::builder().status(202).body(Body::empty()).unwrap()
                }
                _ => {
                    return Response::builder()
                        .header("content-type", "application/json")
                        .body(Body::from(
                            json!({ "jsonrpc": "2.0", "id": id,
                                "error": { "code": -32601, "message": "Method not found" } })
                            .to_string(),
                        ))
                        .unwrap()
                }
            };
            Response::builder()
                .header("content-type", "application/json")
                .header("mcp-session-id", "s-1")
                .body(Body::from(
                    json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string(),
                ))
                .unwrap()
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, hops)
}

fn initialize() -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "test", "version": "0" } } })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_comes_back_to_the_gateway_is_refused_and_the_others_still_list() {
    let (fx_url, hops) = fx_server().await;
    let catalog = |extra: Value| {
        let mut servers = json!({ "fx": { "type": "http", "url": fx_url, "title": "Fx" } });
        servers
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({ "mcpServers": servers })
    };
    let core = core_with_fx(&catalog(json!({})), &fx_url).await;
    let data_dir = core.patchbay.paths.data_dir.clone();
    let (base, secret) = serve_gateway(core.patchbay.clone(), GatewayOptions::default()).await;
    // Two connectors that are the gateway itself, now that its port is known: `self` is its
    // `/mcp` (the rule refuses it before sending), `back` reaches it on a path the rule does
    // not know (`/mcp/NAME/message`), so only the hop id tells.
    std::fs::write(
        core.dir.path().join("catalog.json"),
        catalog(json!({
            "self": { "type": "http", "url": format!("{base}/mcp"), "headers": { "X-Api-Key": "k" } },
            "back": { "type": "http", "url": format!("{base}/mcp/fx/message"),
                      "headers": { "Authorization": format!("Bearer {}", secret.expose()) } },
        }))
        .to_string(),
    )
    .unwrap();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let bearer = format!("Bearer {}", secret.expose());

    // Through `/mcp/back`: the gateway's own request comes back, and is refused with 508.
    let started = Instant::now();
    let refused = http
        .post(format!("{base}/mcp/back"))
        .header("authorization", &bearer)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 508);
    let body: Value = refused.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("came back to Patchbay's own gateway"),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));

    // The aggregate lists fx's tools, quickly, whatever became of `self` and `back`.
    let initialized = http
        .post(format!("{base}/mcp"))
        .header("authorization", &bearer)
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(initialized.status(), 200);
    let session = initialized.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let started = Instant::now();
    let listed: Value = http
        .post(format!("{base}/mcp"))
        .header("authorization", &bearer)
        .header("mcp-session-id", &session)
        .json(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {} }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let took = started.elapsed();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["fx__whoami"], "{listed}");
    assert!(took < Duration::from_secs(2), "took {took:?}");

    // Why `back` was left out, on the health board: the loop, refused with 508.
    let board = HealthStore::open(&data_dir.join(HEALTH_FILE)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let records = board.records("back").unwrap();
        if records.iter().any(|r| {
            r.http_status == Some(508)
                && r.error
                    .as_deref()
                    // Not retried in the background: asking again would loop again.
                    .is_some_and(|e| {
                        e.contains("came back to Patchbay's own gateway") && !e.contains("retrying")
                    })
        }) {
            break;
        }
        assert!(Instant::now() < deadline, "{records:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // `self` was never sent: the rule refused it. (Its record is written in the background
    // too: waited for, as `back`'s.)
    let deadline = Instant::now() + Duration::from_secs(5);
    let records = loop {
        let records = board.records("self").unwrap();
        if !records.is_empty() || Instant::now() >= deadline {
            break records;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        !records.is_empty()
            && records.iter().all(|r| r
                .error
                .as_deref()
                .is_some_and(|e| e.contains("its URL is Patchbay's own gateway"))),
        "{records:?}"
    );

    // The id fx was sent, presented to the gateway, is refused before anything else.
    let hop = hops
        .lock()
        .unwrap()
        .first()
        .cloned()
        .expect("fx saw a hop id");
    let echoed = http
        .post(format!("{base}/mcp"))
        .header(HOP_HEADER, &hop)
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.status(), 508);
    // Another id (another Patchbay's) is not this gateway's loop.
    let other = http
        .post(format!("{base}/mcp"))
        .header("authorization", &bearer)
        .header(HOP_HEADER, "0123456789abcdef0123456789abcdef")
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 200);
}
