//! The stdio bridge's recovery paths against a real HTTP server on loopback whose every answer
//! the test decides (a hand-written HTTP/1.1 server: it can cut an answer off mid-stream, which a
//! well-behaved server never does): a 401 renews once and replays, a refused renewal says to
//! authorize without hanging; a lost session (404) is started again by replaying the client's own
//! handshake, its answer swallowed; a `tools/call` cut off is never sent again while a
//! `tools/list` is; `timeout_ms` bounds a request; a refused connection is retried until the
//! server listens; the lean bridge's handed-over credentials renew through its renew command.
//! Both revisions: the 2025 servers here refuse `server/discover` as real ones do, and a
//! 2026-07-28-only server (no `initialize`, no session) refuses any request whose headers are
//! missing or differ from its `_meta`; its response stream cut short is resumed after the
//! server's `retry` with `Last-Event-ID`.
//! The credentials are the test's own ([`Credentials`]); the end-to-end test
//! (tests/tests/connect.rs) runs the real ones.

use patchbay_gateway::stdio::{self, BridgedCall, Credentials};
use patchbay_vault::Secret;
use serde_json::{json, Value};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One request the server received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: Vec<(String, String)>,
    body: Value,
    /// When its head and body had arrived.
    at: Instant,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn rpc(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
}

/// What the server does with a request.
enum Answer {
    /// An SSE answer carrying these messages, then the end of the body.
    Events(Vec<Value>, Vec<(&'static str, String)>),
    /// 202, no body.
    Accepted,
    /// This status with a JSON body.
    Status(u16, Value),
    /// This status with a `WWW-Authenticate` challenge.
    Challenge(u16, String),
    /// An SSE answer cut off before any message: the connection closes.
    CutOff,
    /// No answer at all (the connection stays open).
    Hang,
    /// An SSE answer with exactly this body (ids, `retry`), then the connection closes.
    Stream(String),
}

type Script = dyn Fn(&Seen, usize) -> Answer + Send + Sync;

/// A loopback HTTP/1.1 server answering each request by `script(request, how many requests
/// with this JSON-RPC method it saw before)`.
struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    async fn start(script: impl Fn(&Seen, usize) -> Answer + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        Server::serve(listener, Arc::new(script))
    }

    fn serve(listener: TcpListener, script: Arc<Script>) -> Server {
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(connection(stream, script.clone(), log.clone()));
            }
        });
        Server { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn count(&self, method: &str, rpc: &str) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.method == method && s.rpc() == rpc)
            .count()
    }
}

async fn connection(stream: TcpStream, script: Arc<Script>, seen: Arc<Mutex<Vec<Seen>>>) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        let method = request_line.split(' ').next().unwrap_or("").to_owned();
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).await.unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_owned(), v.trim().to_owned()));
            }
        }
        let length: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.parse().unwrap())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await.unwrap();
        let request = Seen {
            method,
            headers,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            at: Instant::now(),
        };
        let before = {
            let mut seen = seen.lock().unwrap();
            let before = seen
                .iter()
                .filter(|s| s.method == request.method && s.rpc() == request.rpc())
                .count();
            seen.push(request.clone());
            before
        };
        let head = |status: &str, extra: &[(&str, String)], length: Option<usize>| {
            let mut head = format!("HTTP/1.1 {status}\r\n");
            for (k, v) in extra {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            match length {
                Some(n) => head.push_str(&format!("content-length: {n}\r\n\r\n")),
                None => head.push_str("connection: close\r\n\r\n"),
            }
            head
        };
        match script(&request, before) {
            Answer::Events(messages, extra) => {
                let body: String = messages
                    .iter()
                    .map(|m| format!("event: message\ndata: {m}\n\n"))
                    .collect();
                let mut extra = extra;
                extra.push(("content-type", "text/event-stream".into()));
                let head = head("200 OK", &extra, Some(body.len()));
                write.write_all(head.as_bytes()).await.unwrap();
                write.write_all(body.as_bytes()).await.unwrap();
            }
            Answer::Accepted => {
                write
                    .write_all(head("202 Accepted", &[], Some(0)).as_bytes())
                    .await
                    .unwrap();
            }
            Answer::Status(code, body) => {
                let body = body.to_string();
                let extra = [("content-type", "application/json".to_owned())];
                let head = head(&format!("{code} X"), &extra, Some(body.len()));
                write.write_all(head.as_bytes()).await.unwrap();
                write.write_all(body.as_bytes()).await.unwrap();
            }
            Answer::Challenge(code, challenge) => {
                let body = json!({ "error": "insufficient_scope" }).to_string();
                let extra = [
                    ("content-type", "application/json".to_owned()),
                    ("www-authenticate", challenge),
                ];
                let head = head(&format!("{code} X"), &extra, Some(body.len()));
                write.write_all(head.as_bytes()).await.unwrap();
                write.write_all(body.as_bytes()).await.unwrap();
            }
            Answer::CutOff => {
                let extra = [("content-type", "text/event-stream".to_owned())];
                let head = head("200 OK", &extra, None);
                write.write_all(head.as_bytes()).await.unwrap();
                write.write_all(b": working\n\n").await.unwrap();
                return; // the connection closes with the answer unfinished
            }
            Answer::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            Answer::Stream(body) => {
                let extra = [("content-type", "text/event-stream".to_owned())];
                let head = head("200 OK", &extra, None);
                write.write_all(head.as_bytes()).await.unwrap();
                write.write_all(body.as_bytes()).await.unwrap();
                return; // the stream ends with the connection
            }
        }
    }
}

fn result(request: &Seen, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": request.body["id"], "result": result })
}

/// A well-behaved 2025 server's answer: `server/discover` (which 2025 does not have) is refused
/// as a request outside a session, initialize opens session `sid`, notifications are accepted,
/// the GET stream is not offered, everything else gets `{"ok": method}`.
fn normal(request: &Seen, sid: &str) -> Answer {
    match (request.method.as_str(), request.rpc()) {
        ("GET", _) => Answer::Status(405, json!({})),
        ("DELETE", _) => Answer::Accepted,
        (_, "server/discover") => Answer::Status(
            400,
            json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32000, "message": "Bad Request: Server not initialized" } }),
        ),
        (_, "initialize") => Answer::Events(
            vec![result(
                request,
                json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": { "name": "fake", "version": "1" } }),
            )],
            vec![("mcp-session-id", sid.to_owned())],
        ),
        (_, m) if m.starts_with("notifications/") => Answer::Accepted,
        (_, m) => Answer::Events(vec![result(request, json!({ "ok": m }))], vec![]),
    }
}

/// The test's credentials: a bearer that a renewal replaces, or a renewal that is refused.
struct TestCredentials {
    url: String,
    timeout: Option<Duration>,
    bearer: Mutex<String>,
    renewals: AtomicUsize,
    renewable: bool,
    /// The scopes of the step-ups asked for.
    step_ups: Mutex<Vec<String>>,
}

impl TestCredentials {
    fn new(url: String) -> TestCredentials {
        TestCredentials {
            url,
            timeout: Some(Duration::from_secs(20)),
            bearer: Mutex::new("first".into()),
            renewals: AtomicUsize::new(0),
            renewable: true,
            step_ups: Mutex::default(),
        }
    }
}

impl Credentials for TestCredentials {
    fn connector(&self) -> &str {
        "demo"
    }
    fn url(&self) -> &str {
        &self.url
    }
    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
    fn headers(&self) -> Vec<(String, Secret)> {
        vec![(
            "Authorization".into(),
            Secret::new(format!("Bearer {}", self.bearer.lock().unwrap())),
        )]
    }
    fn bearer(&self) -> Option<Secret> {
        Some(Secret::new(self.bearer.lock().unwrap().clone()))
    }
    async fn renew(&self, _rejected: Option<Secret>) -> Result<(), String> {
        self.renewals.fetch_add(1, Ordering::SeqCst);
        if !self.renewable {
            return Err("demo refused Patchbay's credential: authorize demo in Patchbay".into());
        }
        *self.bearer.lock().unwrap() = "renewed".into();
        Ok(())
    }
    async fn step_up(&self, scope: String) -> Result<(), String> {
        *self.bearer.lock().unwrap() = format!("more-{scope}");
        self.step_ups.lock().unwrap().push(scope);
        Ok(())
    }
}

/// A 2025 client's `initialize` (id 0).
fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": { "roots": {} },
            "clientInfo": { "name": "test-client", "version": "1.0" }
        }
    })
}

/// Lines the bridge writes, as they come.
struct Lines(mpsc::Sender<String>, Vec<u8>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(buf);
        while let Some(end) = self.1.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.1.drain(..=end).collect();
            let _ = self
                .0
                .send(String::from_utf8(line).unwrap().trim_end().to_owned());
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A running bridge: write client lines in, read its stdout lines out.
struct Bridge {
    input: tokio::io::DuplexStream,
    output: mpsc::Receiver<String>,
    calls: Arc<Mutex<Vec<BridgedCall>>>,
    done: tokio::task::JoinHandle<()>,
}

impl Bridge {
    fn start<C: Credentials>(credentials: Arc<C>) -> Bridge {
        let (input, bridge_input) = tokio::io::duplex(1 << 16);
        let (tx, output) = mpsc::channel();
        let calls: Arc<Mutex<Vec<BridgedCall>>> = Arc::default();
        let record = calls.clone();
        let hook: stdio::CallHook =
            Arc::new(move |c: &BridgedCall| record.lock().unwrap().push(c.clone()));
        let done = tokio::spawn(async move {
            stdio::run(credentials, Some(hook), bridge_input, Lines(tx, Vec::new()))
                .await
                .unwrap();
        });
        Bridge {
            input,
            output,
            calls,
            done,
        }
    }

    async fn send(&mut self, message: Value) {
        self.input
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The next stdout line, as JSON.
    async fn next(&mut self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.output.try_recv() {
                Ok(line) => return serde_json::from_str(&line).unwrap(),
                Err(mpsc::TryRecvError::Empty) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                Err(e) => panic!("no stdout line within 30 s ({e})"),
            }
        }
    }

    /// Sends a request and returns its answer (skipping anything else).
    async fn ask(&mut self, id: u64, method: &str) -> Value {
        self.ask_with(id, method, json!({})).await
    }

    async fn ask_with(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        loop {
            let line = self.next().await;
            if line["id"] == id {
                return line;
            }
        }
    }

    async fn handshake(&mut self) -> Value {
        self.send(initialize()).await;
        let answer = loop {
            let line = self.next().await;
            if line["id"] == 0 {
                break line;
            }
        };
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        answer
    }

    /// End of stdin; waits for the bridge to finish (the DELETE included).
    async fn finish(self) -> Vec<BridgedCall> {
        drop(self.input);
        tokio::time::timeout(Duration::from_secs(30), self.done)
            .await
            .expect("the bridge ends with its stdin")
            .unwrap();
        let calls = self.calls.lock().unwrap().clone();
        calls
    }
}

#[tokio::test]
async fn a_401_renews_once_and_replays_and_a_refused_renewal_says_authorize_at_once() {
    let server = Server::start(|request, _| {
        let bearer = request.header("authorization").unwrap_or("");
        match request.rpc() {
            "tools/list" | "tools/call" if bearer != "Bearer renewed" => {
                Answer::Status(401, json!({ "error": "invalid_token" }))
            }
            _ => normal(request, "s1"),
        }
    })
    .await;
    let credentials = Arc::new(TestCredentials::new(server.url()));
    let mut bridge = Bridge::start(credentials.clone());
    bridge.handshake().await;
    let listed = bridge.ask(1, "tools/list").await;
    assert_eq!(listed["result"]["ok"], "tools/list", "{listed}");
    assert_eq!(credentials.renewals.load(Ordering::SeqCst), 1);
    assert_eq!(
        server.count("POST", "tools/list"),
        2,
        "sent, refused, replayed once"
    );
    let calls = bridge.finish().await;
    assert!(calls.iter().all(|c| c.ok), "{calls:?}");
    assert_eq!(
        calls.iter().map(|c| c.method.as_str()).collect::<Vec<_>>(),
        ["initialize", "tools/list"]
    );

    // Renewal refused: the request is answered with the renewal's sentence, at once.
    let credentials = Arc::new(TestCredentials {
        renewable: false,
        ..TestCredentials::new(server.url())
    });
    let mut bridge = Bridge::start(credentials.clone());
    bridge.handshake().await;
    let started = Instant::now();
    let refused = bridge.ask(2, "tools/call").await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(refused["error"]["code"], stdio::BRIDGE_ERROR, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "demo refused Patchbay's credential: authorize demo in Patchbay"
    );
    assert_eq!(refused["error"]["data"]["reason"], "needs_authorization");
    assert_eq!(server.count("POST", "tools/call"), 1, "not sent again");
    let calls = bridge.finish().await;
    let failed = calls.iter().find(|c| c.method == "tools/call").unwrap();
    assert!(!failed.ok && failed.error.as_deref().unwrap().contains("authorize demo"));
}

#[tokio::test]
async fn a_lost_session_is_started_again_by_replaying_the_clients_handshake() {
    // The first tools/list meets a server that forgot session s1; initialize opens s2 then.
    let server = Server::start(|request, before| match request.rpc() {
        "initialize" if before > 0 => normal(request, "s2"),
        "tools/list" if request.header("mcp-session-id") == Some("s1") => {
            Answer::Status(404, json!({ "jsonrpc": "2.0", "error": { "code": -32001, "message": "Session not found" }, "id": null }))
        }
        _ => normal(request, "s1"),
    })
    .await;
    let mut bridge = Bridge::start(Arc::new(TestCredentials::new(server.url())));
    let initialized = bridge.handshake().await;
    assert_eq!(initialized["result"]["serverInfo"]["name"], "fake");
    let listed = bridge.ask(1, "tools/list").await;
    assert_eq!(listed["result"]["ok"], "tools/list", "{listed}");
    // The replayed initialize's answer was swallowed: the next line is the ping's answer.
    let pong = bridge.ask(2, "ping").await;
    assert_eq!(pong["result"]["ok"], "ping");
    bridge.finish().await;

    let seen = server.seen();
    let posts: Vec<(&str, Option<&str>)> = seen
        .iter()
        .filter(|s| s.method == "POST")
        .map(|s| (s.rpc(), s.header("mcp-session-id")))
        .collect();
    assert_eq!(
        posts,
        [
            ("server/discover", None),
            ("initialize", None),
            ("notifications/initialized", Some("s1")),
            ("tools/list", Some("s1")),
            ("initialize", None),
            ("notifications/initialized", Some("s2")),
            ("tools/list", Some("s2")),
            ("ping", Some("s2")),
        ]
    );
    let inits: Vec<&Seen> = seen.iter().filter(|s| s.rpc() == "initialize").collect();
    assert_eq!(
        inits[0].body, inits[1].body,
        "the client's own initialize, replayed"
    );
    // 2026-07-28 was asked first; the negotiated version goes on every request after
    // initialize, and the DELETE ends s2.
    assert_eq!(seen[0].header("mcp-protocol-version"), Some("2026-07-28"));
    assert!(seen
        .iter()
        .filter(|s| !matches!(s.rpc(), "initialize" | "server/discover"))
        .all(|s| s.header("mcp-protocol-version") == Some("2025-06-18")));
    assert!(seen
        .iter()
        .any(|s| s.method == "DELETE" && s.header("mcp-session-id") == Some("s2")));
}

#[tokio::test]
async fn a_tools_call_cut_off_is_never_sent_again_but_a_tools_list_is() {
    let server = Server::start(|request, before| match request.rpc() {
        "tools/call" | "tools/list" if before == 0 => Answer::CutOff,
        _ => normal(request, "s1"),
    })
    .await;
    let mut bridge = Bridge::start(Arc::new(TestCredentials::new(server.url())));
    bridge.handshake().await;
    let called = bridge.ask(1, "tools/call").await;
    assert_eq!(
        called["error"]["data"]["reason"], "may_have_run",
        "{called}"
    );
    assert!(called["error"]["message"]
        .as_str()
        .unwrap()
        .contains("the call may have run"));
    assert_eq!(server.count("POST", "tools/call"), 1, "never sent again");
    let listed = bridge.ask(2, "tools/list").await;
    assert_eq!(listed["result"]["ok"], "tools/list", "{listed}");
    assert_eq!(server.count("POST", "tools/list"), 2, "sent again once");
    bridge.finish().await;
}

#[tokio::test]
async fn timeout_ms_bounds_a_request() {
    let server = Server::start(|request, _| match request.rpc() {
        "tools/call" => Answer::Hang,
        _ => normal(request, "s1"),
    })
    .await;
    let credentials = Arc::new(TestCredentials {
        timeout: Some(Duration::from_millis(400)),
        ..TestCredentials::new(server.url())
    });
    let mut bridge = Bridge::start(credentials);
    bridge.handshake().await;
    let started = Instant::now();
    let timed_out = bridge.ask(1, "tools/call").await;
    let took = started.elapsed();
    assert_eq!(
        timed_out["error"]["code"],
        stdio::TIMEOUT_ERROR,
        "{timed_out}"
    );
    assert!(timed_out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("within 400 ms"));
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(3),
        "{took:?}"
    );
    bridge.finish().await;
}

#[tokio::test]
async fn a_refused_connection_is_retried_until_the_server_listens() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut bridge = Bridge::start(Arc::new(TestCredentials::new(url)));
    // Nothing listens yet: the initialize is refused, then retried with a backoff.
    bridge.send(initialize()).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let server = Server::serve(listener, Arc::new(|r: &Seen, _| normal(r, "s1")));
    let answer = bridge.next().await;
    assert_eq!(answer["result"]["serverInfo"]["name"], "fake", "{answer}");
    assert_eq!(server.count("POST", "initialize"), 1);
    bridge.finish().await;
}

/// The lean bridge's credentials: handed over, and renewed by running the renew command with the
/// refused bearer on its stdin (here a shell standing in for `patchbay connect --renew NAME`).
#[tokio::test]
async fn the_lean_bridge_renews_through_its_renew_command() {
    let server =
        Server::start(
            |request, _| match (request.rpc(), request.header("authorization")) {
                ("tools/list", Some(bearer)) if bearer != "Bearer renewed-elsewhere" => {
                    Answer::Status(401, json!({ "error": "invalid_token" }))
                }
                _ => normal(request, "s1"),
            },
        )
        .await;
    let handoff = |renew: &str| {
        serde_json::from_value::<stdio::Handoff>(json!({
            "connector": "demo",
            "url": server.url(),
            "timeout_ms": 20000,
            "headers": [["X-Team", "seven"]],
            "bearer": "handed-over",
            "renew": ["sh", "-c", renew],
            "health_file": null
        }))
        .unwrap()
    };
    // Answers with a new bearer only when given the refused one.
    let renews = handoff(
        r#"read refused; if [ "$refused" = handed-over ]; then echo '{"bearer":"renewed-elsewhere"}'; else echo '{"error":"wrong bearer"}'; fi"#,
    );
    let mut bridge = Bridge::start(Arc::new(stdio::Delegated::from(renews)));
    bridge.handshake().await;
    let listed = bridge.ask(1, "tools/list").await;
    assert_eq!(listed["result"]["ok"], "tools/list", "{listed}");
    bridge.finish().await;
    let lists: Vec<Seen> = server
        .seen()
        .into_iter()
        .filter(|s| s.rpc() == "tools/list")
        .collect();
    assert_eq!(lists.len(), 2);
    assert_eq!(lists[0].header("authorization"), Some("Bearer handed-over"));
    assert_eq!(
        lists[1].header("authorization"),
        Some("Bearer renewed-elsewhere")
    );
    assert_eq!(
        lists[1].header("x-team"),
        Some("seven"),
        "the entry's headers kept"
    );

    // A renew command that refuses: its sentence reaches the client at once.
    let refuses = handoff(
        r#"read refused; echo '{"error":"demo refused Patchbay'"'"'s credential: authorize demo in Patchbay"}'"#,
    );
    let mut bridge = Bridge::start(Arc::new(stdio::Delegated::from(refuses)));
    bridge.handshake().await;
    let refused = bridge.ask(1, "tools/list").await;
    assert_eq!(
        refused["error"]["message"],
        "demo refused Patchbay's credential: authorize demo in Patchbay",
        "{refused}"
    );
    bridge.finish().await;
}

const STATELESS: &str = "2026-07-28";

/// A JSON-RPC error in a 400, as a 2026-07-28 server refuses a request it cannot take.
fn refused(code: i64, message: &str, data: Value) -> Answer {
    Answer::Status(
        400,
        json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message, "data": data } }),
    )
}

/// Why a 2026-07-28 server refuses `request`, if it does: `MCP-Protocol-Version` missing or
/// another revision, or not equal to the request's `_meta`; `Mcp-Method` not its method;
/// `Mcp-Name` not the tool's; the client's info or capabilities missing from `_meta`.
fn stateless_refusal(request: &Seen) -> Option<Answer> {
    let Some(version) = request.header("mcp-protocol-version") else {
        return Some(refused(
            -32600,
            "Missing MCP-Protocol-Version header",
            json!(null),
        ));
    };
    if version != STATELESS {
        return Some(refused(
            -32022,
            "Unsupported protocol version",
            json!({ "supported": [STATELESS] }),
        ));
    }
    if request.method != "POST" {
        return None;
    }
    let meta = &request.body["params"]["_meta"];
    if meta["io.modelcontextprotocol/protocolVersion"] != version {
        return Some(refused(
            -32020,
            "MCP-Protocol-Version does not match _meta",
            json!(null),
        ));
    }
    if request.header("mcp-method") != Some(request.rpc()) {
        return Some(refused(
            -32020,
            "Mcp-Method does not match the body",
            json!(null),
        ));
    }
    if request.rpc() == "tools/call"
        && request.header("mcp-name") != request.body["params"]["name"].as_str()
    {
        return Some(refused(
            -32020,
            "Mcp-Name does not match the body",
            json!(null),
        ));
    }
    if !meta["io.modelcontextprotocol/clientInfo"].is_object()
        || !meta["io.modelcontextprotocol/clientCapabilities"].is_object()
    {
        return Some(refused(
            -32600,
            "_meta lacks the client's info",
            json!(null),
        ));
    }
    None
}

/// A server that speaks only 2026-07-28: no `initialize`, no session; `server/discover`, a
/// `tools/list` with one tool whose `x-mcp-header` is invalid, and an `echo` tool whose `region`
/// travels as `Mcp-Param-Region` (checked against the arguments).
fn stateless(request: &Seen) -> Answer {
    if let Some(refusal) = stateless_refusal(request) {
        return refusal;
    }
    let complete = |mut value: Value| {
        value["resultType"] = json!("complete");
        Answer::Status(200, result(request, value))
    };
    match request.rpc() {
        "server/discover" => complete(json!({
            "supportedVersions": [STATELESS],
            "capabilities": { "tools": {}, "resources": { "subscribe": true } },
            "instructions": "Ask for the weather.",
            "ttlMs": 60000,
            "cacheScope": "public",
            "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "modern", "version": "2" } }
        })),
        "tools/list" => complete(json!({
            "tools": [
                {
                    "name": "echo",
                    "inputSchema": {
                        "type": "object",
                        "properties": { "region": { "type": "string", "x-mcp-header": "Region" } }
                    }
                },
                {
                    "name": "broken",
                    "inputSchema": {
                        "type": "object",
                        "properties": { "where": { "type": "string", "x-mcp-header": "not a token" } }
                    }
                }
            ],
            "ttlMs": 30000,
            "cacheScope": "private"
        })),
        "tools/call" => {
            let region = &request.body["params"]["arguments"]["region"];
            if request.header("mcp-param-region") != region.as_str() {
                return refused(
                    -32020,
                    "Mcp-Param-Region does not match the arguments",
                    json!(null),
                );
            }
            complete(
                json!({ "content": [{ "type": "text", "text": format!("echo {}", region.as_str().unwrap_or("")) }] }),
            )
        }
        _ => refused(-32601, "Method not found", json!(null)),
    }
}

#[tokio::test]
async fn a_client_that_initializes_reaches_a_2026_07_28_only_server_with_headers_equal_to_meta() {
    let server = Server::start(|request, _| stateless(request)).await;
    let mut bridge = Bridge::start(Arc::new(TestCredentials::new(server.url())));
    // The bridge answers initialize itself, from discovery, in the client's revision.
    let initialized = bridge.handshake().await;
    assert_eq!(
        initialized["result"]["protocolVersion"], "2025-06-18",
        "{initialized}"
    );
    assert_eq!(initialized["result"]["serverInfo"]["name"], "modern");
    assert_eq!(
        initialized["result"]["instructions"],
        "Ask for the weather."
    );
    assert!(
        initialized["result"]["capabilities"]["resources"]["subscribe"].is_null(),
        "subscriptions do not translate, so they are not offered: {initialized}"
    );

    let listed = bridge.ask(1, "tools/list").await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["echo"],
        "the tool with an invalid x-mcp-header is left out"
    );
    assert_eq!(listed["result"]["ttlMs"], 30000, "{listed}");
    let called = bridge
        .ask_with(
            2,
            "tools/call",
            json!({ "name": "echo", "arguments": { "region": "eu-west" } }),
        )
        .await;
    assert_eq!(
        called["result"]["content"][0]["text"], "echo eu-west",
        "{called}"
    );
    let subscribed = bridge
        .ask_with(3, "resources/subscribe", json!({ "uri": "file:///a" }))
        .await;
    assert_eq!(
        subscribed["error"]["data"]["reason"], "untranslatable",
        "{subscribed}"
    );
    let calls = bridge.finish().await;
    assert_eq!(
        calls
            .iter()
            .map(|c| (c.method.as_str(), c.ok))
            .collect::<Vec<_>>(),
        [
            ("initialize", true),
            ("tools/list", true),
            ("tools/call", true),
            ("resources/subscribe", false)
        ]
    );

    let seen = server.seen();
    let posts: Vec<&Seen> = seen.iter().filter(|s| s.method == "POST").collect();
    assert_eq!(
        posts.iter().map(|s| s.rpc()).collect::<Vec<_>>(),
        ["server/discover", "tools/list", "tools/call"],
        "no initialize, no notifications/initialized, nothing untranslatable"
    );
    for post in &posts {
        let meta = &post.body["params"]["_meta"];
        assert_eq!(post.header("mcp-protocol-version"), Some(STATELESS));
        assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], STATELESS);
        assert_eq!(post.header("mcp-method"), Some(post.rpc()));
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "test-client"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({ "roots": {} })
        );
        assert_eq!(post.header("mcp-session-id"), None);
        assert_eq!(post.header("authorization"), Some("Bearer first"));
    }
    assert_eq!(posts[2].header("mcp-name"), Some("echo"));
    assert_eq!(posts[2].header("mcp-param-region"), Some("eu-west"));
}

#[tokio::test]
async fn a_response_stream_cut_short_is_resumed_after_retry_with_last_event_id() {
    let answer = json!({ "jsonrpc": "2.0", "id": 2, "result": { "content": [{ "type": "text", "text": "done" }], "resultType": "complete" } });
    let server = Server::start(move |request, _| {
        if let Some(refusal) = stateless_refusal(request) {
            return refusal;
        }
        match (request.method.as_str(), request.rpc()) {
            // The priming event (an id, the retry, no data), then the stream ends.
            ("POST", "tools/call") => Answer::Stream("id: e1\nretry: 500\ndata:\n\n".into()),
            ("GET", _) if request.header("last-event-id") == Some("e1") => {
                Answer::Stream(format!("id: e2\ndata: {answer}\n\n"))
            }
            ("GET", _) => Answer::Status(405, json!({})),
            _ => stateless(request),
        }
    })
    .await;
    let mut bridge = Bridge::start(Arc::new(TestCredentials::new(server.url())));
    bridge.handshake().await;
    bridge.ask(1, "tools/list").await;
    let called = bridge
        .ask_with(
            2,
            "tools/call",
            json!({ "name": "echo", "arguments": { "region": "x" } }),
        )
        .await;
    assert_eq!(called["result"]["content"][0]["text"], "done", "{called}");
    bridge.finish().await;

    let seen = server.seen();
    let call = seen.iter().find(|s| s.rpc() == "tools/call").unwrap();
    let resumed: Vec<&Seen> = seen.iter().filter(|s| s.method == "GET").collect();
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert_eq!(resumed[0].header("last-event-id"), Some("e1"));
    let waited = resumed[0].at - call.at;
    assert!(
        waited >= Duration::from_millis(500),
        "reconnected after {waited:?}, before the server's retry"
    );
    assert_eq!(
        server.count("POST", "tools/call"),
        1,
        "resumed, never sent again"
    );
}

#[tokio::test]
async fn a_server_that_refuses_2026_07_28_gets_the_clients_own_initialize() {
    // A 2025-11-25 server that knows the revision error: it names what it supports.
    let server = Server::start(|request, _| match request.rpc() {
        "server/discover" => Answer::Status(
            200,
            json!({ "jsonrpc": "2.0", "id": request.body["id"], "error": { "code": -32022, "message": "Unsupported protocol version", "data": { "supported": ["2025-11-25", "2025-06-18"] } } }),
        ),
        _ => normal(request, "s1"),
    })
    .await;
    let mut bridge = Bridge::start(Arc::new(TestCredentials::new(server.url())));
    let initialized = bridge.handshake().await;
    assert_eq!(
        initialized["result"]["serverInfo"]["name"], "fake",
        "{initialized}"
    );
    let listed = bridge.ask(1, "tools/list").await;
    assert_eq!(listed["result"]["ok"], "tools/list", "{listed}");
    bridge.finish().await;
    let seen = server.seen();
    let posts: Vec<(&str, Option<&str>)> = seen
        .iter()
        .filter(|s| s.method == "POST")
        .map(|s| (s.rpc(), s.header("mcp-session-id")))
        .collect();
    assert_eq!(
        posts,
        [
            ("server/discover", None),
            ("initialize", None),
            ("notifications/initialized", Some("s1")),
            ("tools/list", Some("s1")),
        ]
    );
    let initialize = seen.iter().find(|s| s.rpc() == "initialize").unwrap();
    assert_eq!(
        initialize.body["params"]["clientInfo"]["name"],
        "test-client"
    );
    assert!(
        initialize.body["params"].get("_meta").is_none(),
        "the client's own initialize, as it sent it: {:?}",
        initialize.body
    );
}

#[tokio::test]
async fn a_client_that_sends_its_own_meta_is_passed_through_to_a_2026_07_28_server() {
    let server = Server::start(|request, _| stateless(request)).await;
    let mut bridge = Bridge::start(Arc::new(TestCredentials::new(server.url())));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientInfo": { "name": "modern-client", "version": "3" },
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let discovered = bridge
        .ask_with(7, "server/discover", json!({ "_meta": meta }))
        .await;
    assert_eq!(
        discovered["result"]["supportedVersions"],
        json!([STATELESS]),
        "{discovered}"
    );
    let listed = bridge
        .ask_with(8, "tools/list", json!({ "_meta": meta }))
        .await;
    assert_eq!(listed["result"]["tools"][0]["name"], "echo", "{listed}");
    bridge.finish().await;
    let seen = server.seen();
    assert_eq!(
        seen.iter()
            .map(|s| (s.rpc(), s.body["id"].clone()))
            .collect::<Vec<_>>(),
        [("server/discover", json!(7)), ("tools/list", json!(8))],
        "the client's own requests, nothing of the bridge's"
    );
    assert!(seen.iter().all(
        |s| s.body["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"]
            == "modern-client"
    ));
}

/// rmcp caches tools only from answers after a transport's first request: a 2026 client that
/// opens with `tools/list` must still get `Mcp-Param-*` and lose its invalid tools.
#[tokio::test]
async fn a_client_that_opens_with_tools_list_gets_mcp_param_headers_and_loses_invalid_tools() {
    let server = Server::start(|request, _| stateless(request)).await;
    let mut bridge = Bridge::start(Arc::new(TestCredentials::new(server.url())));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientInfo": { "name": "modern-client", "version": "3" },
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let listed = bridge
        .ask_with(1, "tools/list", json!({ "_meta": meta }))
        .await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["echo"], "the invalid x-mcp-header is left out");
    let called = bridge
        .ask_with(
            2,
            "tools/call",
            json!({ "name": "echo", "arguments": { "region": "eu-west" }, "_meta": meta }),
        )
        .await;
    assert_eq!(
        called["result"]["content"][0]["text"], "echo eu-west",
        "{called}"
    );
    bridge.finish().await;
    let seen = server.seen();
    let call = seen.iter().find(|s| s.rpc() == "tools/call").unwrap();
    assert_eq!(call.header("mcp-param-region"), Some("eu-west"));
    assert_eq!(
        seen.iter()
            .map(|s| (s.rpc(), s.body["params"]["_meta"].clone()))
            .collect::<Vec<_>>(),
        [
            ("server/discover", meta.clone()),
            ("tools/list", meta.clone()),
            ("tools/call", meta)
        ],
        "the bridge's server/discover first, with the client's own _meta"
    );
}

/// The same when the answers come as SSE, for a client that initializes (translated) and for
/// one with its own `_meta` (passed through). rmcp skips its cache for an SSE answer when it sees
/// the stream's end first, a race: each mode runs several times.
#[tokio::test]
async fn mcp_param_headers_and_the_invalid_tools_exclusion_hold_for_sse_answers_in_both_modes() {
    for translated in [true, false].repeat(8) {
        let server = Server::start(|request, _| match stateless(request) {
            Answer::Status(200, body) => Answer::Events(vec![body], vec![]),
            other => other,
        })
        .await;
        let mut bridge = Bridge::start(Arc::new(TestCredentials::new(server.url())));
        let meta = if translated {
            bridge.handshake().await;
            json!(null)
        } else {
            json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientInfo": { "name": "modern-client", "version": "3" },
                "io.modelcontextprotocol/clientCapabilities": {}
            })
        };
        let params = |mut params: Value| {
            if !translated {
                params["_meta"] = meta.clone();
            }
            params
        };
        let listed = bridge.ask_with(1, "tools/list", params(json!({}))).await;
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["echo"], "translated: {translated}");
        let called = bridge
            .ask_with(
                2,
                "tools/call",
                params(json!({ "name": "echo", "arguments": { "region": "eu-west" } })),
            )
            .await;
        assert_eq!(
            called["result"]["content"][0]["text"], "echo eu-west",
            "translated: {translated}: {called}"
        );
        bridge.finish().await;
        let seen = server.seen();
        let call = seen.iter().find(|s| s.rpc() == "tools/call").unwrap();
        assert_eq!(call.header("mcp-param-region"), Some("eu-west"));
    }
}

/// A `tools/list` stream that carries more than its answer reaches the client whole, in order.
#[tokio::test]
async fn a_tools_list_stream_with_a_notification_before_its_answer_reaches_the_client_whole() {
    let server = Server::start(|request, _| match (stateless(request), request.rpc()) {
        (Answer::Status(200, body), "tools/list") => Answer::Events(
            vec![
                json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": "info", "data": "listing" } }),
                body,
            ],
            vec![],
        ),
        (answer, _) => answer,
    })
    .await;
    let mut bridge = Bridge::start(Arc::new(TestCredentials::new(server.url())));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientInfo": { "name": "modern-client", "version": "3" },
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    bridge
        .send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": meta } }))
        .await;
    let first = bridge.next().await;
    assert_eq!(first["method"], "notifications/message", "{first}");
    assert_eq!(first["params"]["data"], "listing");
    let listed = bridge.next().await;
    assert_eq!(listed["id"], 1, "{listed}");
    assert_eq!(listed["result"]["tools"][0]["name"], "echo", "{listed}");
    bridge.finish().await;
}

#[tokio::test]
async fn a_403_insufficient_scope_steps_up_once_and_replays_even_a_tools_call() {
    // Refused before acting: the call goes again with the stepped-up bearer. A server that
    // refuses that too gets no second step-up for the same request.
    let server = Server::start(|request, _| {
        let bearer = request.header("authorization").unwrap_or("");
        match request.rpc() {
            "tools/call" if bearer != "Bearer more-mcp:write" => Answer::Challenge(
                403,
                r#"Bearer error="insufficient_scope", scope="mcp:write", resource_metadata="http://x/prm""#.into(),
            ),
            "prompts/get" => Answer::Challenge(
                403,
                r#"Bearer error="insufficient_scope", scope="mcp:admin""#.into(),
            ),
            _ => normal(request, "s1"),
        }
    })
    .await;
    let credentials = Arc::new(TestCredentials::new(server.url()));
    let mut bridge = Bridge::start(credentials.clone());
    bridge.handshake().await;
    let called = bridge.ask(1, "tools/call").await;
    assert_eq!(called["result"]["ok"], "tools/call", "{called}");
    assert_eq!(*credentials.step_ups.lock().unwrap(), ["mcp:write"]);
    assert_eq!(
        server.count("POST", "tools/call"),
        2,
        "refused, then replayed once"
    );
    let refused = bridge.ask(2, "prompts/get").await;
    assert_eq!(
        refused["error"]["data"]["reason"], "needs_more_access",
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mcp:admin"),
        "{refused}"
    );
    assert_eq!(
        server.count("POST", "prompts/get"),
        2,
        "one step-up, one replay, no loop"
    );
    bridge.finish().await;
}

#[tokio::test]
async fn the_lean_bridge_steps_up_through_its_renew_command_at_most_three_times() {
    let server = Server::start(|request, _| match request.rpc() {
        "tools/call" => Answer::Challenge(
            403,
            r#"Bearer error="insufficient_scope", scope="mcp:write""#.into(),
        ),
        _ => normal(request, "s1"),
    })
    .await;
    let log = tempfile::NamedTempFile::new().unwrap();
    let handoff = serde_json::from_value::<stdio::Handoff>(json!({
        "connector": "demo",
        "url": server.url(),
        "timeout_ms": 20000,
        "headers": [],
        "bearer": "handed-over",
        // The step-up's scope arrives on the second line; each run is logged.
        "renew": ["sh", "-c", format!(
            r#"read refused; read scope; echo "$scope" >> {}; echo '{{"bearer":"more"}}'"#,
            log.path().display()
        )],
        "health_file": null
    }))
    .unwrap();
    let mut bridge = Bridge::start(Arc::new(stdio::Delegated::from(handoff)));
    bridge.handshake().await;
    for id in 1..=4 {
        let refused = bridge.ask(id, "tools/call").await;
        assert_eq!(
            refused["error"]["data"]["reason"], "needs_more_access",
            "{refused}"
        );
        if id == 4 {
            assert!(
                refused["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("after 3"),
                "{refused}"
            );
        }
    }
    bridge.finish().await;
    let runs = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(runs.lines().collect::<Vec<_>>(), ["mcp:write"; 3]);
}

/// A batch (MCP has none since 2025-06-18) is answered with an Invalid Request, not left
/// unanswered; a bridge whose transport never carried a message ends at once with its stdin
/// (rmcp's close would wait on a worker that never started).
#[tokio::test]
async fn a_batch_is_answered_invalid_and_a_bridge_that_sent_nothing_ends_at_once() {
    let server = Server::start(|request, _| normal(request, "s1")).await;
    let mut bridge = Bridge::start(Arc::new(TestCredentials::new(server.url())));
    bridge
        .send(json!([{ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }]))
        .await;
    let answer = bridge.next().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(answer["id"].is_null(), "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("batch"),
        "{answer}"
    );
    bridge.send(json!(7)).await;
    let answer = bridge.next().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // An object that is no message: nothing to answer, and no message reaches the transport.
    bridge.send(json!({ "hello": "world" })).await;
    let started = Instant::now();
    bridge.finish().await;
    // Well inside the 5 s a goodbye may take: nothing was waited for.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.count("POST", "tools/list"), 0);
}
