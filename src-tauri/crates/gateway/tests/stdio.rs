//! The stdio bridge's recovery paths against a real HTTP server on loopback whose every answer
//! the test decides (a hand-written HTTP/1.1 server: it can cut an answer off mid-stream, which a
//! well-behaved server never does): a 401 renews once and replays, a refused renewal says to
//! authorize without hanging; a lost session (404) is started again by replaying the client's own
//! handshake, its answer swallowed; a `tools/call` cut off is never sent again while a
//! `tools/list` is; `timeout_ms` bounds a request; a refused connection is retried until the
//! server listens; the lean bridge's handed-over credentials renew through its renew command.
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
    /// An SSE answer cut off before any message: the connection closes.
    CutOff,
    /// No answer at all (the connection stays open).
    Hang,
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
        }
    }
}

fn result(request: &Seen, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": request.body["id"], "result": result })
}

/// A well-behaved answer: initialize opens session `sid`, notifications are accepted, the GET
/// stream is not offered, everything else gets `{"ok": method}`.
fn normal(request: &Seen, sid: &str) -> Answer {
    match (request.method.as_str(), request.rpc()) {
        ("GET", _) => Answer::Status(405, json!({})),
        ("DELETE", _) => Answer::Accepted,
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
}

impl TestCredentials {
    fn new(url: String) -> TestCredentials {
        TestCredentials {
            url,
            timeout: Some(Duration::from_secs(20)),
            bearer: Mutex::new("first".into()),
            renewals: AtomicUsize::new(0),
            renewable: true,
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
    fn start(credentials: Arc<TestCredentials>) -> Bridge {
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
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": {} }))
            .await;
        loop {
            let line = self.next().await;
            if line["id"] == id {
                return line;
            }
        }
    }

    async fn handshake(&mut self) -> Value {
        let answer = self.ask(0, "initialize").await;
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
    // The negotiated version goes on every request after initialize, and the DELETE ends s2.
    assert!(seen
        .iter()
        .filter(|s| s.rpc() != "initialize")
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
    bridge
        .send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {} }))
        .await;
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
    let (input, bridge_input) = tokio::io::duplex(1 << 16);
    let (tx, output) = mpsc::channel();
    let credentials = Arc::new(stdio::Delegated::from(renews));
    let done = tokio::spawn(stdio::run(
        credentials,
        None,
        bridge_input,
        Lines(tx, Vec::new()),
    ));
    let mut bridge = Bridge {
        input,
        output,
        calls: Arc::default(),
        done: tokio::spawn(async move {
            done.await.unwrap().unwrap();
        }),
    };
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
    let (input, bridge_input) = tokio::io::duplex(1 << 16);
    let (tx, output) = mpsc::channel();
    let done = tokio::spawn(stdio::run(
        Arc::new(stdio::Delegated::from(refuses)),
        None,
        bridge_input,
        Lines(tx, Vec::new()),
    ));
    let mut bridge = Bridge {
        input,
        output,
        calls: Arc::default(),
        done: tokio::spawn(async move {
            done.await.unwrap().unwrap();
        }),
    };
    bridge.handshake().await;
    let refused = bridge.ask(1, "tools/list").await;
    assert_eq!(
        refused["error"]["message"],
        "demo refused Patchbay's credential: authorize demo in Patchbay",
        "{refused}"
    );
    bridge.finish().await;
}
