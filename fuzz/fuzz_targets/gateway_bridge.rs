//! MCP messages through the gateway's stdio bridge (`patchbay_gateway::stdio::run`, the
//! streamable-HTTP bridge every client config points at): the client's JSON-RPC lines on stdin,
//! and an upstream on loopback that answers every POST with the same fuzzed answer (JSON or an
//! SSE stream, with a fuzzed status). The bridge must end, and write only whole JSON lines.
//!
//! Input: a selector byte (bit 0: SSE answer; bit 1: no session id; bits 2-4: status), the
//! client's lines, a NUL, the upstream's answer body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_gateway::stdio::{self, Credentials};
use patchbay_vault::Secret;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What the upstream answers a POST that carries a request, for the current input.
#[derive(Clone, Default)]
struct Answer {
    status: u16,
    event_stream: bool,
    session: bool,
    body: Vec<u8>,
}

struct Upstream {
    runtime: tokio::runtime::Runtime,
    url: String,
    answer: Arc<Mutex<Answer>>,
}

fn upstream() -> &'static Upstream {
    static UPSTREAM: OnceLock<Upstream> = OnceLock::new();
    UPSTREAM.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let answer: Arc<Mutex<Answer>> = Arc::default();
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind loopback");
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let shared = answer.clone();
        runtime.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(connection(stream, shared.clone()));
            }
        });
        Upstream {
            runtime,
            url,
            answer,
        }
    })
}

/// One keep-alive HTTP/1.1 connection: GET has no stream to offer (405), DELETE and
/// notifications are accepted (202), a request gets the fuzzed answer.
async fn connection(stream: TcpStream, answer: Arc<Mutex<Answer>>) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        let method = request_line.split(' ').next().unwrap_or("").to_owned();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.trim().eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let is_request = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .is_some_and(|v| v.get("id").is_some_and(|id| !id.is_null()));
        let reply = match method.as_str() {
            "GET" => b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n".to_vec(),
            "POST" if is_request => {
                let a = answer.lock().unwrap().clone();
                let mut head = format!("HTTP/1.1 {} X\r\n", a.status);
                let kind = if a.event_stream {
                    "text/event-stream"
                } else {
                    "application/json"
                };
                head.push_str(&format!("content-type: {kind}\r\n"));
                if a.session {
                    head.push_str("mcp-session-id: fuzz-session\r\n");
                }
                head.push_str(&format!("content-length: {}\r\n\r\n", a.body.len()));
                let mut reply = head.into_bytes();
                reply.extend_from_slice(&a.body);
                reply
            }
            _ => b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_vec(),
        };
        if write.write_all(&reply).await.is_err() {
            return;
        }
    }
}

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
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(2))
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

const STATUSES: [u16; 8] = [200, 200, 200, 202, 400, 401, 404, 500];

fuzz_target!(|data: &[u8]| {
    let Some((selector, rest)) = patchbay_fuzz::split_selector(data) else {
        return;
    };
    let (client, body) = match rest.iter().position(|b| *b == 0) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let up = upstream();
    *up.answer.lock().unwrap() = Answer {
        status: STATUSES[usize::from(selector >> 2) % STATUSES.len()],
        event_stream: selector & 1 == 1,
        session: selector & 2 == 0,
        body: body.to_vec(),
    };
    let credentials = Arc::new(FuzzCredentials {
        url: up.url.clone(),
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
