//! A catalog entry's `timeout_ms` and `retry` in the connection check, against real servers on
//! 127.0.0.1: the MCP TypeScript SDK's streamable-HTTP example (tests/src/sdk_servers.rs), reached
//! through a small TCP front this test controls, which refuses (is not bound yet), answers an
//! HTTP status, stays silent, or forwards to the example, connection by connection.
//!
//! The waits between retries go through an injected sleeper that records them and returns at
//! once (or binds the front, for the refused-then-answering server), so nothing here sleeps for
//! real; the jitter's draw is injected too, so the waits are exact.

#[allow(dead_code)]
#[path = "../../../../tests/src/sdk_servers.rs"]
mod sdk_servers;

use patchbay_check::{
    check_paced, AuthKind, CheckError, CheckOutcome, CheckTarget, Endpoint, HttpEndpoint, Pacing,
    RetryPolicy, Stage, StdioLaunch, Timeouts, TransportKind,
};
use sdk_servers::{free_port, SdkServer};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the front does with its n-th connection (0-based).
#[derive(Clone, Copy, Debug)]
enum Answer {
    /// Reads the request, answers this status with an empty body, closes.
    Status(u16),
    /// Passes the connection through to this port on 127.0.0.1.
    Forward(u16),
    /// Reads and never answers.
    Silent,
}

type Plan = Arc<dyn Fn(usize) -> Answer + Send + Sync>;

/// A TCP front on 127.0.0.1; counts the connections it took.
struct Front {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Front {
    async fn start(plan: Plan) -> Front {
        Front::start_on(TcpListener::bind("127.0.0.1:0").await.unwrap(), plan)
    }

    fn start_on(listener: TcpListener, plan: Plan) -> Front {
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let count = connections.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let n = count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(stream, plan(n)));
            }
        });
        Front { port, connections }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

async fn serve(mut stream: TcpStream, answer: Answer) {
    match answer {
        Answer::Forward(port) => {
            if let Ok(mut upstream) = TcpStream::connect(("127.0.0.1", port)).await {
                let _ = tokio::io::copy_bidirectional(&mut stream, &mut upstream).await;
            }
        }
        Answer::Status(status) => {
            // The whole request is read first: closing on unread bytes would reset the
            // connection and the client would see no answer at all.
            read_request(&mut stream).await;
            let response =
                format!("HTTP/1.1 {status} Test\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
        Answer::Silent => {
            let mut sink = [0u8; 4096];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
        }
    }
}

/// Reads one HTTP/1.1 request: the head, then `content-length` bytes of body.
async fn read_request(stream: &mut TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut chunk).await {
            Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    }
}

fn target(url: String, timeout: Option<Duration>, retry: Option<RetryPolicy>) -> CheckTarget {
    CheckTarget {
        connector: "svc".into(),
        endpoint: Endpoint::StreamableHttp(HttpEndpoint {
            url,
            headers: vec![],
        }),
        auth: AuthKind::OAuth { token_sent: false },
        extra_secrets: vec![],
        request_timeout: timeout,
        retry,
    }
}

/// Seed 004's policy with `max` retries.
fn retry(max: u32) -> Option<RetryPolicy> {
    Some(RetryPolicy {
        max_retries: max,
        ..RetryPolicy::default()
    })
}

/// A pacing that records each wait and returns at once; the jitter draws come from `draws` in
/// turn (0.5, the nominal wait, once they run out).
fn recording(draws: Vec<f64>) -> (Pacing, Arc<Mutex<Vec<Duration>>>) {
    let waits = Arc::new(Mutex::new(Vec::new()));
    let seen = waits.clone();
    let draws = Arc::new(Mutex::new(draws.into_iter()));
    let pacing = Pacing {
        sleep: Arc::new(move |d| {
            seen.lock().unwrap().push(d);
            Box::pin(async {})
        }),
        random: Arc::new(move || draws.lock().unwrap().next().unwrap_or(0.5)),
    };
    (pacing, waits)
}

fn kinds(outcome: &CheckOutcome) -> Vec<String> {
    outcome
        .attempts
        .iter()
        .map(|a| a.error.as_ref().map_or("ok".into(), |e| e.kind.id().into()))
        .collect()
}

fn ms(values: &[u64]) -> Vec<Duration> {
    values.iter().map(|&v| Duration::from_millis(v)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_port_is_retried_and_answers_once_the_server_is_bound() {
    let sdk = SdkServer::streamable_http();
    let port = free_port();
    let waits = Arc::new(Mutex::new(Vec::new()));
    let seen = waits.clone();
    let upstream = sdk.port;
    // The first wait is when the server comes up: the refused try is over, the retry not begun.
    let pacing = Pacing {
        sleep: Arc::new(move |d| {
            let first = {
                let mut w = seen.lock().unwrap();
                w.push(d);
                w.len() == 1
            };
            Box::pin(async move {
                if first {
                    let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
                    let _front =
                        Front::start_on(listener, Arc::new(move |_| Answer::Forward(upstream)));
                }
            })
        }),
        random: Arc::new(|| 0.0),
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let outcome = check_paced(&target(url, None, retry(3)), &Timeouts::default(), &pacing).await;
    let handshake = outcome.result.as_ref().expect("answers on the retry");
    assert!(!handshake.tools.is_empty(), "{handshake:?}");
    assert_eq!(kinds(&outcome), ["unreachable", "ok"]);
    assert_eq!(outcome.retries, 1);
    assert_eq!(
        (outcome.attempts[1].retry, outcome.attempts[1].waited_ms),
        (1, 350),
        "the first retry waits 500 ms less 30 % with the lowest draw"
    );
    assert_eq!(*waits.lock().unwrap(), ms(&[350]));
    assert_eq!(
        outcome.fell_back_to, None,
        "a refused port gets no fallback"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_is_retried_with_doubling_waits_and_the_next_answer_counts() {
    let sdk = SdkServer::streamable_http();
    let upstream = sdk.port;
    let front = Front::start(Arc::new(move |n| {
        if n < 2 {
            Answer::Status(503)
        } else {
            Answer::Forward(upstream)
        }
    }))
    .await;
    let (pacing, waits) = recording(vec![0.5, 1.0]);
    let outcome = check_paced(
        &target(front.url(), None, retry(3)),
        &Timeouts::default(),
        &pacing,
    )
    .await;
    assert!(outcome.ok(), "{:?}", outcome.result);
    assert_eq!(kinds(&outcome), ["server_error", "server_error", "ok"]);
    assert_eq!(
        outcome.attempts[0].error.as_ref().unwrap().http_status,
        Some(503)
    );
    assert_eq!(outcome.retries, 2);
    // 500 ms nominal, then 1000 ms at the top of its ±30 %.
    assert_eq!(*waits.lock().unwrap(), ms(&[500, 1300]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_stop_at_max_and_the_last_failure_is_the_result() {
    let front = Front::start(Arc::new(|_| Answer::Status(502))).await;
    let (pacing, waits) = recording(vec![]);
    let outcome = check_paced(
        &target(front.url(), None, retry(2)),
        &Timeouts::default(),
        &pacing,
    )
    .await;
    assert!(
        matches!(
            outcome.result,
            Err(CheckError::ServerError { status: 502, .. })
        ),
        "{:?}",
        outcome.result
    );
    assert_eq!(kinds(&outcome), ["server_error"; 3]);
    let retries: Vec<u32> = outcome.attempts.iter().map(|a| a.retry).collect();
    assert_eq!(retries, [0, 1, 2]);
    assert_eq!(*waits.lock().unwrap(), ms(&[500, 1000]));
    assert_eq!(front.connections.load(Ordering::SeqCst), 3);

    // No `retry`: one try, as before.
    let (pacing, waits) = recording(vec![]);
    let outcome = check_paced(
        &target(front.url(), None, None),
        &Timeouts::default(),
        &pacing,
    )
    .await;
    assert_eq!(kinds(&outcome), ["server_error"]);
    assert!(waits.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_a_403_and_a_rejected_handshake_are_never_retried() {
    for (status, kind) in [(401, "needs_authorization"), (403, "server_error")] {
        let front = Front::start(Arc::new(move |_| Answer::Status(status))).await;
        let (pacing, waits) = recording(vec![]);
        let outcome = check_paced(
            &target(front.url(), None, retry(3)),
            &Timeouts::default(),
            &pacing,
        )
        .await;
        assert_eq!(kinds(&outcome), [kind], "{status}");
        assert!(waits.lock().unwrap().is_empty(), "{status} waited");
        assert_eq!(outcome.retries, 0);
    }
    // 405 both ways: one try per transport (the fallback), no retries.
    let front = Front::start(Arc::new(|_| Answer::Status(405))).await;
    let (pacing, waits) = recording(vec![]);
    let outcome = check_paced(
        &target(front.url(), None, retry(3)),
        &Timeouts::default(),
        &pacing,
    )
    .await;
    assert_eq!(kinds(&outcome), ["rejected", "rejected"]);
    let transports: Vec<TransportKind> = outcome.attempts.iter().map(|a| a.transport).collect();
    assert_eq!(
        transports,
        [TransportKind::StreamableHttp, TransportKind::Sse]
    );
    assert!(waits.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_slower_than_timeout_ms_times_out_at_that_limit_and_is_retried() {
    let front = Front::start(Arc::new(|_| Answer::Silent)).await;
    let limit = Duration::from_millis(300);
    let (pacing, waits) = recording(vec![]);
    let outcome = check_paced(
        &target(front.url(), Some(limit), retry(1)),
        &Timeouts::default(),
        &pacing,
    )
    .await;
    match &outcome.result {
        Err(CheckError::TimedOut { stage, after, .. }) => {
            assert_eq!(*stage, Stage::Initialize);
            assert_eq!(*after, limit, "timeout_ms replaces the 15 s default");
        }
        other => panic!("expected a timeout: {other:?}"),
    }
    assert_eq!(kinds(&outcome), ["timed_out", "timed_out"]);
    assert_eq!(*waits.lock().unwrap(), ms(&[500]));
    let message = outcome.result.unwrap_err().to_string();
    assert_eq!(
        message,
        "initialize took longer than 300 ms over streamable-http"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_that_never_answers_times_out_at_timeout_ms() {
    // `sleep` starts, reads nothing and writes nothing: a server that never initializes.
    let target = CheckTarget {
        connector: "slow".into(),
        endpoint: Endpoint::Stdio(StdioLaunch {
            command: "sleep".into(),
            args: vec![patchbay_vault::Secret::new("30")],
            env: vec![],
            cwd: None,
        }),
        auth: AuthKind::Process,
        extra_secrets: vec![],
        request_timeout: Some(Duration::from_millis(400)),
        retry: None,
    };
    let (pacing, _) = recording(vec![]);
    let outcome = check_paced(&target, &Timeouts::default(), &pacing).await;
    match &outcome.result {
        Err(CheckError::TimedOut { stage, after, .. }) => {
            assert_eq!(*stage, Stage::Initialize);
            assert_eq!(
                *after,
                Duration::from_millis(400),
                "timeout_ms replaces the 60 s stdio default"
            );
        }
        other => panic!("expected a timeout: {other:?}"),
    }
}

#[test]
fn timeout_ms_limits_every_request_and_the_connect_only_downwards() {
    let d = Timeouts::default();
    let short = d.limited_to(Duration::from_millis(300));
    assert_eq!(short.connect, Duration::from_millis(300));
    assert_eq!(short.initialize, Duration::from_millis(300));
    assert_eq!(short.stdio_initialize, Duration::from_millis(300));
    assert_eq!(short.list_tools, Duration::from_millis(300));
    assert_eq!(short.shutdown, d.shutdown);
    let long = d.limited_to(Duration::from_secs(120));
    assert_eq!(long.connect, d.connect);
    assert_eq!(long.initialize, Duration::from_secs(120));
    assert_eq!(long.stdio_initialize, Duration::from_secs(120));
}
