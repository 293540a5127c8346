//! MCP messages through the gateway's aggregate endpoint (`/mcp`, every remote connector as one
//! server): a real gateway on loopback in front of two streamable-HTTP connectors, both served by
//! the fuzzed upstream (`patchbay_fuzz::upstream`: the same fuzzed answer to every request), and
//! the client's fuzzed JSON-RPC messages POSTed to it one by one, the session id the gateway
//! hands out sent back as a client does. The gateway must answer every POST, and a 200 with a
//! JSON body that parses; a panic anywhere (a handler, a background reconnection) aborts.
//!
//! Input: a selector byte (the upstream's answer, as `Answer::from_selector`), the client's
//! messages one per line, a NUL, the upstream's answer body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_catalog::CatalogSource;
use patchbay_core::{Patchbay, Paths};
use patchbay_fuzz::upstream::{upstream, Answer};
use patchbay_gateway::{Clients, Gateway, GatewayOptions, Upstreams};
use patchbay_vault::MemoryStore;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Client messages sent per input: enough for initialize, a listing and calls.
const MAX_MESSAGES: usize = 8;

struct Front {
    url: String,
    secret: String,
    http: reqwest::Client,
    /// The session id the gateway handed out last (a client keeps sending it).
    session: Mutex<Option<String>>,
}

fn front() -> &'static Front {
    static FRONT: OnceLock<Front> = OnceLock::new();
    FRONT.get_or_init(|| {
        let up = upstream();
        let dir = patchbay_fuzz::scratch_dir().join("gateway-aggregate");
        let catalog = serde_json::json!({
            "alpha": { "type": "streamable-http", "url": format!("{}/alpha/mcp", up.base) },
            "beta": { "type": "streamable-http", "url": format!("{}/beta/mcp", up.base), "timeout_ms": 2000 },
        });
        let file = patchbay_fuzz::scratch_file("gateway-aggregate/mcp.json", catalog.to_string().as_bytes());
        let paths = Paths {
            config_dir: dir.join("config"),
            data_dir: dir.join("data"),
            default_catalog: CatalogSource::Embedded,
            catalog_override: Some(file),
            keychain_account: "fuzz".into(),
        };
        let patchbay = Arc::new(
            Patchbay::with_store(paths, Arc::new(MemoryStore::new())).expect("a Patchbay core"),
        );
        let (_, secret) = Clients::new(&patchbay.paths.data_dir)
            .add("fuzz", None, patchbay.now())
            .expect("a gateway client");
        let options = GatewayOptions {
            port: 0,
            default_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(2),
            record_health: false,
            ..GatewayOptions::default()
        };
        let gateway = up
            .runtime
            .block_on(Gateway::bind(Upstreams::new(patchbay, None), options))
            .expect("the gateway binds loopback");
        let url = format!("http://127.0.0.1:{}/mcp", gateway.port());
        up.runtime.spawn(gateway.serve(std::future::pending()));
        Front {
            url,
            secret: secret.expose().to_string(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .expect("an HTTP client"),
            session: Mutex::new(None),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((selector, rest)) = patchbay_fuzz::split_selector(data) else {
        return;
    };
    let (client, body) = patchbay_fuzz::split_at_nul(rest);
    let up = upstream();
    up.set(Answer::from_selector(selector, body));
    let front = front();
    up.runtime.block_on(async {
        for message in client
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .take(MAX_MESSAGES)
        {
            let mut request = front
                .http
                .post(&front.url)
                .bearer_auth(&front.secret)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(message.to_vec());
            if let Some(session) = front.session.lock().unwrap().clone() {
                request = request.header("mcp-session-id", session);
            }
            let response = request
                .send()
                .await
                .unwrap_or_else(|e| panic!("the gateway did not answer a POST: {e}"));
            let status = response.status();
            if let Some(session) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
            {
                *front.session.lock().unwrap() = Some(session.to_owned());
            }
            let json = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/json"));
            let answer = response
                .bytes()
                .await
                .unwrap_or_else(|e| panic!("the gateway's answer ({status}) was cut: {e}"));
            if status.as_u16() == 200 && json {
                assert!(
                    serde_json::from_slice::<serde_json::Value>(&answer).is_ok(),
                    "a 200 whose JSON does not parse: {:?}",
                    String::from_utf8_lossy(&answer)
                );
            }
            assert!(
                status.is_success()
                    || status.is_client_error()
                    || status.as_u16() == 502
                    || status.as_u16() == 504,
                "the gateway answered {status}: {:?}",
                String::from_utf8_lossy(&answer)
            );
        }
    });
});
