//! A fuzzed MCP server on loopback for the gateway's targets: every POST that carries a request
//! gets the same fuzzed answer (a status, JSON or an SSE stream, with or without a session id);
//! GET has no stream to offer (405); DELETE and notifications are accepted (202). `"$id"` in the
//! answer stands for the request's own id, so an answer can match the request it answers. One
//! per process, on its own Tokio runtime, which the targets also run their side on.

use std::sync::{Arc, Mutex, OnceLock};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What the upstream answers a POST that carries a request, for the current input.
#[derive(Clone, Default)]
pub struct Answer {
    pub status: u16,
    pub event_stream: bool,
    pub session: bool,
    pub body: Vec<u8>,
}

/// The statuses a selector picks from (200 the most likely).
pub const STATUSES: [u16; 8] = [200, 200, 200, 202, 400, 401, 404, 500];

impl Answer {
    /// The answer a selector byte describes (bit 0: an SSE stream; bit 1: no session id; bits
    /// 2-4: the status), with `body`.
    pub fn from_selector(selector: u8, body: &[u8]) -> Answer {
        Answer {
            status: STATUSES[usize::from(selector >> 2) % STATUSES.len()],
            event_stream: selector & 1 == 1,
            session: selector & 2 == 0,
            body: body.to_vec(),
        }
    }
}

pub struct Upstream {
    pub runtime: tokio::runtime::Runtime,
    /// `http://127.0.0.1:PORT` (any path is served the same).
    pub base: String,
    pub answer: Arc<Mutex<Answer>>,
}

impl Upstream {
    /// Answers the next requests with `answer`.
    pub fn set(&self, answer: Answer) {
        *self.answer.lock().unwrap() = answer;
    }
}

/// The process's upstream, started on first use.
pub fn upstream() -> &'static Upstream {
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
        let base = format!("http://{}", listener.local_addr().unwrap());
        let shared = answer.clone();
        runtime.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(connection(stream, shared.clone()));
            }
        });
        Upstream {
            runtime,
            base,
            answer,
        }
    })
}

/// One keep-alive HTTP/1.1 connection.
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
        let id = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("id").cloned())
            .filter(|id| !id.is_null());
        let is_request = id.is_some();
        let reply = match method.as_str() {
            "GET" => b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n".to_vec(),
            "POST" if is_request => {
                let mut a = answer.lock().unwrap().clone();
                if let Some(id) = &id {
                    a.body = replace(&a.body, b"\"$id\"", id.to_string().as_bytes());
                }
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

/// `body` with every `from` replaced by `to`.
fn replace(body: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.windows(from.len()).position(|w| w == from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}
