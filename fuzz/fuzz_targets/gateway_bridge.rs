//! MCP messages through the gateway's stdio bridge (`patchbay_gateway::stdio::run`, the
//! streamable-HTTP bridge every client config points at): the client's JSON-RPC lines on stdin,
//! and an upstream on loopback that answers every POST with the same fuzzed answer (JSON or an
//! SSE stream, with a fuzzed status). The bridge must end, and write only whole JSON lines.
//!
//! Input: a selector byte (bit 0: SSE answer; bit 1: no session id; bits 2-4: status), the
//! client's lines, a NUL, the upstream's answer body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_fuzz::upstream::{upstream, Answer};
use patchbay_gateway::stdio::{self, Credentials};
use patchbay_vault::Secret;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct FuzzCredentials {
    url: String,
}

impl Credentials for FuzzCredentials {
    fn connector(&self) -> &str {
        "fuzz"
    }
    fn url(&self) -> &str {
        &self.url
    }
    // Loopback answers at once; only an answer that never comes waits this long, and a fuzzed
    // answer often matches no request (each unmatched one costs a whole timeout).
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_millis(100))
    }
    fn headers(&self) -> Vec<(String, Secret)> {
        vec![(
            "Authorization".into(),
            Secret::new("Bearer fuzz".to_string()),
        )]
    }
    fn bearer(&self) -> Option<Secret> {
        Some(Secret::new("fuzz".to_string()))
    }
    async fn renew(&self, _rejected: Option<Secret>) -> Result<(), String> {
        Err("fuzz refused Patchbay's credential: authorize fuzz in Patchbay".into())
    }
}

/// The bridge's stdout.
#[derive(Clone, Default)]
struct Output(Arc<Mutex<Vec<u8>>>);

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((selector, rest)) = patchbay_fuzz::split_selector(data) else {
        return;
    };
    let (client, body) = patchbay_fuzz::split_at_nul(rest);
    let up = upstream();
    up.set(Answer::from_selector(selector, body));
    let credentials = Arc::new(FuzzCredentials {
        url: format!("{}/mcp", up.base),
    });
    let output = Output::default();
    let result = up
        .runtime
        .block_on(stdio::run(credentials, None, client, output.clone()));
    let _ = result.map_err(|e| e.to_string());
    let written = output.0.lock().unwrap().clone();
    for line in written.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let parsed = serde_json::from_slice::<serde_json::Value>(line);
        assert!(
            parsed.is_ok(),
            "a line that is not JSON: {:?}",
            String::from_utf8_lossy(line)
        );
    }
});
