//! The loopback receiver over real sockets, on loopback only.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use patchbay_oauth::receiver::{
    self, CallbackHandler, CallbackOutcome, CallbackParams, ReceiverError,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const V4: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const V6: IpAddr = IpAddr::V6(Ipv6Addr::LOCALHOST);

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    l.local_addr().unwrap().port()
}

fn has_ipv6_loopback() -> bool {
    std::net::TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).is_ok()
}

/// A host without ::1 skips the IPv6 checks, loudly; under scripts/test.sh
/// (PATCHBAY_TEST_INNER=1), where ::1 is expected, that is a failure instead.
fn no_ipv6_loopback() {
    assert!(
        std::env::var("PATCHBAY_TEST_INNER").as_deref() != Ok("1"),
        "no ::1 on this host, which PATCHBAY_TEST_INNER=1 expects"
    );
    eprintln!("SKIPPED: no ::1 on this host: the IPv6 checks did not run");
}

/// A handler that records what it got and answers with `outcome`.
fn recording(outcome: CallbackOutcome) -> (CallbackHandler, Arc<Mutex<Vec<CallbackParams>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let handler: CallbackHandler = Arc::new(move |params| {
        seen2.lock().unwrap().push(params);
        let outcome = outcome.clone();
        Box::pin(async move { outcome })
    });
    (handler, seen)
}

fn completed() -> CallbackOutcome {
    CallbackOutcome::Completed {
        title: "Authorized".into(),
        message: "Linear is connected.".into(),
    }
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

async fn request(ip: IpAddr, port: u16, method: &str, target: &str) -> Reply {
    let mut s = TcpStream::connect(SocketAddr::new(ip, port)).await.unwrap();
    let host = match ip {
        IpAddr::V4(_) => format!("127.0.0.1:{port}"),
        IpAddr::V6(_) => format!("[::1]:{port}"),
    };
    let req = format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .expect("response in time")
        .unwrap();
    let text = String::from_utf8(buf).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

#[tokio::test]
async fn callback_over_v4_and_v6_reaches_the_handler() {
    let port = free_port();
    let (handler, seen) = recording(completed());
    let rx = receiver::start(port, handler).await.unwrap();
    assert_eq!(rx.port(), port);
    assert_eq!(
        rx.redirect_uri(),
        format!("http://127.0.0.1:{port}/callback")
    );

    let r = request(
        V4,
        port,
        "GET",
        "/callback?code=abc123&state=s1&iss=https%3A%2F%2Fas.example",
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.body.contains("<h1>Authorized</h1>"), "{}", r.body);
    assert!(r.body.contains("Linear is connected."));
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    let csp = r.header("content-security-policy").unwrap();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert_eq!(r.header("cache-control").as_deref(), Some("no-store"));
    assert_eq!(r.header("referrer-policy").as_deref(), Some("no-referrer"));
    assert!(
        !r.body.contains("<script") && !r.body.contains("http"),
        "self-contained: {}",
        r.body
    );
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        &[CallbackParams {
            code: Some("abc123".into()),
            state: Some("s1".into()),
            iss: Some("https://as.example".into()),
            ..Default::default()
        }]
    );

    if has_ipv6_loopback() {
        let r = request(V6, port, "GET", "/callback?code=v6code&state=s2").await;
        assert_eq!(r.status, 200);
        assert!(r.body.contains("<h1>Authorized</h1>"));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].code.as_deref(), Some("v6code"));
        assert_eq!(seen[1].state.as_deref(), Some("s2"));
    } else {
        no_ipv6_loopback();
    }
    rx.shutdown().await;
}

#[tokio::test]
async fn provider_errors_reach_the_handler() {
    let port = free_port();
    let (handler, seen) = recording(CallbackOutcome::Rejected {
        title: "Access denied".into(),
        message: "The provider said: access_denied".into(),
    });
    let rx = receiver::start(port, handler).await.unwrap();
    let r = request(
        V4,
        port,
        "GET",
        "/callback?error=access_denied&error_description=User+said+no&state=s",
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.body.contains("Access denied"));
    let got = seen.lock().unwrap()[0].clone();
    assert_eq!(got.error.as_deref(), Some("access_denied"));
    assert_eq!(got.error_description.as_deref(), Some("User said no"));
    assert_eq!(got.code, None);
    rx.shutdown().await;
}

#[tokio::test]
async fn rejected_outcome_is_400_with_escaped_text() {
    let port = free_port();
    let (handler, _) = recording(CallbackOutcome::Rejected {
        title: "Unknown <b>state</b>".into(),
        message: "<script>alert('x')</script> & \"more\"".into(),
    });
    let rx = receiver::start(port, handler).await.unwrap();
    let r = request(V4, port, "GET", "/callback?code=c&state=nope").await;
    assert_eq!(r.status, 400);
    assert!(!r.body.contains("<script>"), "{}", r.body);
    assert!(!r.body.contains("<b>"));
    assert!(r
        .body
        .contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;more&quot;"));
    assert!(r.body.contains("Unknown &lt;b&gt;state&lt;/b&gt;"));
    rx.shutdown().await;
}

#[tokio::test]
async fn odd_input_is_rejected_without_reaching_the_handler() {
    let port = free_port();
    let (handler, seen) = recording(completed());
    let rx = receiver::start(port, handler).await.unwrap();
    for target in [
        "/callback",
        "/callback?",
        "/callback?state=only",
        "/callback?code=a&code=b&state=s",
        "/callback?code=%zz&state=s",
        "/callback?code=%ff%fe&state=s",
        "/callback?code=a%00b&state=s",
        "/callback?&&=&code",
    ] {
        let r = request(V4, port, "GET", target).await;
        assert_eq!(r.status, 400, "{target}");
        assert!(r.body.contains("<h1>"), "{target}: a page");
    }
    assert!(seen.lock().unwrap().is_empty());
    // Still serving after all that.
    let r = request(V4, port, "GET", "/callback?code=ok&state=s").await;
    assert_eq!(r.status, 200);
    assert_eq!(seen.lock().unwrap().len(), 1);
    rx.shutdown().await;
}

#[tokio::test]
async fn not_found_method_not_allowed_uri_too_long() {
    let port = free_port();
    let (handler, seen) = recording(completed());
    let rx = receiver::start(port, handler).await.unwrap();

    for target in ["/favicon.ico", "/", "/callback/extra", "/Callback?code=a"] {
        assert_eq!(
            request(V4, port, "GET", target).await.status,
            404,
            "{target}"
        );
    }
    let r = request(V4, port, "POST", "/callback?code=a&state=s").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow").as_deref(), Some("GET"));
    assert_eq!(request(V4, port, "PUT", "/callback").await.status, 405);

    let long = format!("/callback?code={}&state=s", "a".repeat(9000));
    assert_eq!(request(V4, port, "GET", &long).await.status, 414);
    // Just under the bound is read.
    let fits = format!("/callback?code={}&state=s", "a".repeat(8000));
    assert_eq!(request(V4, port, "GET", &fits).await.status, 200);

    assert_eq!(seen.lock().unwrap().len(), 1);
    rx.shutdown().await;
}

#[tokio::test]
async fn many_connections_keep_alive_and_concurrent() {
    let port = free_port();
    let (handler, seen) = recording(completed());
    let rx = receiver::start(port, handler).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..20 {
        tasks.push(tokio::spawn(async move {
            request(V4, port, "GET", &format!("/callback?code=c{i}&state=s"))
                .await
                .status
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 200);
    }
    assert_eq!(seen.lock().unwrap().len(), 20);

    // Two requests on one kept-alive connection, as a browser asking for the favicon does.
    let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, port))
        .await
        .unwrap();
    s.write_all(
        format!(
            "GET /callback?code=k&state=s HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n\
             GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut buf = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(buf.starts_with("HTTP/1.1 200"), "{buf}");
    assert!(buf.contains("HTTP/1.1 404"), "{buf}");
    rx.shutdown().await;
}

#[tokio::test]
async fn a_panicking_handler_fails_the_request_not_the_receiver() {
    let port = free_port();
    let calls = Arc::new(Mutex::new(0));
    let calls2 = calls.clone();
    let handler: CallbackHandler = Arc::new(move |_| {
        let n = {
            let mut c = calls2.lock().unwrap();
            *c += 1;
            *c
        };
        Box::pin(async move {
            if n == 1 {
                panic!("handler bug");
            }
            completed()
        })
    });
    let rx = receiver::start(port, handler).await.unwrap();
    assert_eq!(
        request(V4, port, "GET", "/callback?code=a").await.status,
        500
    );
    assert_eq!(
        request(V4, port, "GET", "/callback?code=b").await.status,
        200
    );
    rx.shutdown().await;
}

fn self_comm() -> String {
    std::fs::read_to_string("/proc/self/comm")
        .unwrap()
        .trim()
        .to_owned()
}

fn assert_port_taken(err: ReceiverError, port: u16) {
    match err {
        ReceiverError::PortTaken { port: p, ref by } => {
            assert_eq!(p, port);
            let msg = err.to_string();
            assert!(
                msg.starts_with(&format!("port {port} on 127.0.0.1 is in use")),
                "{msg}"
            );
            assert!(
                msg.ends_with("; finish by pasting the redirected URL instead"),
                "{msg}"
            );
            if cfg!(target_os = "linux") {
                let by = by.as_deref().expect("Linux names the holder");
                assert_eq!(by, format!("{} (pid {})", self_comm(), std::process::id()));
                assert!(msg.contains(&format!(" in use by {by};")), "{msg}");
            }
        }
        other => panic!("expected PortTaken, got {other:?}"),
    }
}

#[tokio::test]
async fn port_taken_on_v4_names_the_holder_and_never_moves() {
    let port = free_port();
    let holder = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap();
    let (handler, _) = recording(completed());
    let err = receiver::start(port, handler.clone()).await.unwrap_err();
    assert_port_taken(err, port);

    // A wildcard listener blocks loopback too.
    drop(holder);
    let holder = std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, port)).unwrap();
    let err = receiver::start(port, handler).await.unwrap_err();
    assert_port_taken(err, port);
    drop(holder);
}

#[tokio::test]
async fn port_taken_on_v6_is_port_taken_too() {
    if !has_ipv6_loopback() {
        no_ipv6_loopback();
        return;
    }
    let port = free_port();
    let holder = std::net::TcpListener::bind((Ipv6Addr::LOCALHOST, port)).unwrap();
    let (handler, _) = recording(completed());
    match receiver::start(port, handler.clone()).await.unwrap_err() {
        ReceiverError::PortTaken { port: p, by } => {
            assert_eq!(p, port);
            if cfg!(target_os = "linux") {
                assert_eq!(
                    by.as_deref(),
                    Some(format!("{} (pid {})", self_comm(), std::process::id()).as_str())
                );
            }
        }
        other => panic!("expected PortTaken, got {other:?}"),
    }
    // The v4 half was let go.
    drop(std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap());
    drop(holder);
    let rx = receiver::start(port, handler).await.unwrap();
    rx.shutdown().await;
}

#[tokio::test]
async fn shutdown_and_drop_free_the_port() {
    let port = free_port();
    let (handler, _) = recording(completed());
    let rx = receiver::start(port, handler.clone()).await.unwrap();
    assert_eq!(
        request(V4, port, "GET", "/callback?code=a").await.status,
        200
    );
    rx.shutdown().await;
    assert!(TcpStream::connect((Ipv4Addr::LOCALHOST, port))
        .await
        .is_err());
    drop(std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("v4 port free"));
    if has_ipv6_loopback() {
        drop(std::net::TcpListener::bind((Ipv6Addr::LOCALHOST, port)).expect("v6 port free"));
    }

    // Restart on the same port, then drop it.
    let rx = receiver::start(port, handler.clone()).await.unwrap();
    drop(rx);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "drop did not free the port"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn shutdown_lets_an_open_idle_connection_go() {
    let port = free_port();
    let (handler, _) = recording(completed());
    let rx = receiver::start(port, handler).await.unwrap();
    // A browser-like kept-alive connection that stays idle.
    let mut idle = TcpStream::connect((Ipv4Addr::LOCALHOST, port))
        .await
        .unwrap();
    idle.write_all(
        format!("GET /callback?code=a HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    tokio::time::timeout(Duration::from_secs(5), rx.shutdown())
        .await
        .expect("shutdown does not wait on idle connections");
}

#[tokio::test]
async fn port_zero_picks_one_port_for_both_families() {
    let (handler, _) = recording(completed());
    let rx = receiver::start(0, handler).await.unwrap();
    let port = rx.port();
    assert_ne!(port, 0);
    assert_eq!(
        request(V4, port, "GET", "/callback?code=a").await.status,
        200
    );
    if has_ipv6_loopback() {
        assert_eq!(
            request(V6, port, "GET", "/callback?code=a").await.status,
            200
        );
    }
    rx.shutdown().await;
}
