//! The loopback receiver: a tiny HTTP server on `127.0.0.1:<port>` and `[::1]:<port>` that takes the
//! authorization server's redirect on `/callback` and hands its query to the flow.
//!
//! Native-app rules (RFC 8252): it binds loopback only, on the port it is given (3118 by default),
//! and never moves to another one, since a pre-registered redirect URI would not match. When the
//! port is taken it says so, naming the process that holds it where the OS tells (Linux), and the
//! flow falls back to paste-back. Both address families are served so that a redirect to
//! `http://localhost:3118/callback` lands wherever `localhost` resolves.
//!
//! Everything that reaches it is hostile input: request targets are bounded (414 over 8 KiB),
//! anything but `GET /callback` is 404 or 405, and a query that is malformed (bad percent-encoding,
//! a repeated parameter, control characters) or carries neither `code` nor `error` gets a Rejected
//! page without reaching the handler. The handler is called once per well-formed `/callback`
//! request; checking `state` (unknown, expired, reused) is its job.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

/// The path the receiver answers on; everything else is 404.
pub const CALLBACK_PATH: &str = "/callback";

/// The longest request target (path and query) the receiver reads; longer ones get 414.
pub const MAX_TARGET_LEN: usize = 8 * 1024;

/// Room for the request head: the target plus headers (browsers send every cookie set for
/// 127.0.0.1, whatever the port, so this is generous). Over it hyper answers 431.
const MAX_HEAD_LEN: usize = 64 * 1024;

/// How long a connection may take to send its request head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long `shutdown` lets in-flight responses (the page the browser is waiting for) finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Content-Security-Policy of every page: no scripts, styles, images, frames or forms at all.
const CSP: &str = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The parameters of an authorization response (RFC 6749 §4.1.2 and §4.1.2.1, RFC 9207 `iss`),
/// from the receiver's query or from a pasted URL. An empty value counts as absent. `Debug`
/// redacts the code and the state: together they finish a flow, so neither reaches a log.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct CallbackParams {
    pub state: Option<String>,
    pub code: Option<String>,
    pub iss: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

impl std::fmt::Debug for CallbackParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |value: &Option<String>| value.as_ref().map(|_| REDACTED);
        f.debug_struct("CallbackParams")
            .field("state", &redacted(&self.state))
            .field("code", &redacted(&self.code))
            .field("iss", &self.iss)
            .field("error", &self.error)
            .field("error_description", &self.error_description)
            .finish()
    }
}

/// What `Debug` prints in place of a secret value (as `patchbay_vault::Secret` does).
pub(crate) const REDACTED: &str = "[redacted]";

/// What the handler decided; the browser gets it as a small self-contained HTML page
/// (200 for `Completed`, 400 for `Rejected`). Title and message are plain text (escaped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallbackOutcome {
    Completed { title: String, message: String },
    Rejected { title: String, message: String },
}

/// Called once per well-formed `/callback` request with its parsed query.
pub type CallbackHandler = Arc<
    dyn Fn(CallbackParams) -> Pin<Box<dyn Future<Output = CallbackOutcome> + Send>> + Send + Sync,
>;

#[derive(Debug, thiserror::Error)]
pub enum ReceiverError {
    /// Another socket listens on the port (on 127.0.0.1, or on ::1). `by` names the holder,
    /// as `comm (pid N)`, where the OS tells (Linux, same user); otherwise `None`.
    #[error(
        "port {port} on 127.0.0.1 is in use{}; finish by pasting the redirected URL instead",
        by.as_ref().map(|b| format!(" by {b}")).unwrap_or_default()
    )]
    PortTaken { port: u16, by: Option<String> },
    #[error("could not listen for the OAuth callback: {0}")]
    Io(#[from] io::Error),
}

/// A running receiver. `shutdown` stops it gracefully (letting the last page reach the browser);
/// dropping it stops listening at once.
pub struct Receiver {
    port: u16,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("port", &self.port)
            .finish()
    }
}

impl Receiver {
    /// The port it listens on (on both 127.0.0.1 and ::1 where the host has IPv6).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>/callback`.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Stops accepting, lets in-flight requests finish (up to 2 s), then closes everything. The
    /// port is free when this returns.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Starts listening on `127.0.0.1:<port>` and `[::1]:<port>` (v4 alone where the host has no
/// IPv6). Port 0 picks a free port, the same on both families. Must be called inside a Tokio
/// runtime. Never binds anything but loopback, and never moves to another port: a taken port
/// (on either address) is `ReceiverError::PortTaken`.
pub async fn start(port: u16, handler: CallbackHandler) -> Result<Receiver, ReceiverError> {
    let (v4, v6) = bind_both(port).await?;
    let port = v4.local_addr()?.port();
    let (stop_tx, stop_rx) = oneshot::channel();
    let task = tokio::spawn(serve(v4, v6, handler, stop_rx));
    tracing::debug!(port, "OAuth callback receiver listening");
    Ok(Receiver {
        port,
        stop: Some(stop_tx),
        task: Some(task),
    })
}

async fn bind_both(port: u16) -> Result<(TcpListener, Option<TcpListener>), ReceiverError> {
    // With port 0 the v4 socket picks the port; another program may hold it on ::1, so retry.
    let attempts = if port == 0 { 8 } else { 1 };
    let mut last = None;
    for _ in 0..attempts {
        let v4_addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
        let v4 = match TcpListener::bind(v4_addr).await {
            Ok(l) => l,
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                return Err(ReceiverError::PortTaken {
                    port,
                    by: port_owner(v4_addr),
                })
            }
            Err(e) => return Err(e.into()),
        };
        let actual = v4.local_addr()?.port();
        let v6_addr = SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), actual);
        match TcpListener::bind(v6_addr).await {
            Ok(v6) => return Ok((v4, Some(v6))),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                drop(v4);
                last = Some(ReceiverError::PortTaken {
                    port: actual,
                    by: port_owner(v6_addr),
                });
            }
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Err(e.into()),
            Err(e) => {
                // No IPv6 on this host (EADDRNOTAVAIL, EAFNOSUPPORT, ...): 127.0.0.1 alone.
                tracing::debug!(error = %e, "no ::1 listener for the OAuth callback; 127.0.0.1 only");
                return Ok((v4, None));
            }
        }
    }
    Err(last.expect("at least one attempt"))
}

async fn accept_opt(listener: &Option<TcpListener>) -> io::Result<(TcpStream, SocketAddr)> {
    match listener {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

async fn serve(
    v4: TcpListener,
    v6: Option<TcpListener>,
    handler: CallbackHandler,
    mut stop: oneshot::Receiver<()>,
) {
    let graceful = GracefulShutdown::new();
    let mut conns = JoinSet::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(MAX_HEAD_LEN);
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => break,
            r = v4.accept() => r,
            r = accept_opt(&v6) => r,
            Some(_) = conns.join_next(), if !conns.is_empty() => continue,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(e) => {
                // Out of file descriptors and the like: back off rather than spin.
                tracing::warn!(error = %e, "OAuth callback receiver: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let handler = handler.clone();
        let service = service_fn(move |req| {
            let handler = handler.clone();
            async move { Ok::<_, Infallible>(route(req, handler).await) }
        });
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        conns.spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "OAuth callback connection ended with an error");
            }
        });
    }
    drop(v4);
    drop(v6);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
    conns.shutdown().await;
}

async fn route(req: Request<Incoming>, handler: CallbackHandler) -> Response<Full<Bytes>> {
    let uri = req.uri();
    let target_len = uri.path_and_query().map_or(0, |pq| pq.as_str().len())
        + uri.authority().map_or(0, |a| a.as_str().len());
    if target_len > MAX_TARGET_LEN {
        return page(
            StatusCode::URI_TOO_LONG,
            "Address too long",
            "This address is longer than Patchbay accepts for a sign-in response.",
        );
    }
    if uri.path() != CALLBACK_PATH {
        return page(
            StatusCode::NOT_FOUND,
            "Not found",
            "Patchbay only answers sign-in responses here.",
        );
    }
    if req.method() != Method::GET {
        let mut resp = page(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method not allowed",
            "Sign-in responses arrive as a GET request.",
        );
        resp.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET"));
        return resp;
    }
    let params = match parse_query(uri.query().unwrap_or("")) {
        Ok(p) => p,
        Err(e) => {
            return outcome_page(&CallbackOutcome::Rejected {
                title: "Sign-in response not understood".into(),
                message: format!(
                    "Patchbay could not read this sign-in response: {e}. Nothing was changed; \
                     return to Patchbay and authorize again."
                ),
            })
        }
    };
    if params.code.is_none() && params.error.is_none() {
        return outcome_page(&CallbackOutcome::Rejected {
            title: "No authorization code".into(),
            message: "This address carries neither an authorization code nor an error, so there \
                      is nothing to finish. Nothing was changed; return to Patchbay and authorize \
                      again."
                .into(),
        });
    }
    // A panicking handler fails this request, not the receiver.
    match tokio::spawn(handler(params)).await {
        Ok(outcome) => outcome_page(&outcome),
        Err(e) => {
            tracing::error!(error = %e, "OAuth callback handler failed");
            page(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong",
                "Patchbay hit an internal error while finishing this sign-in. Return to Patchbay \
                 and authorize again.",
            )
        }
    }
}

fn outcome_page(outcome: &CallbackOutcome) -> Response<Full<Bytes>> {
    match outcome {
        CallbackOutcome::Completed { title, message } => page(StatusCode::OK, title, message),
        CallbackOutcome::Rejected { title, message } => {
            page(StatusCode::BAD_REQUEST, title, message)
        }
    }
}

fn page(status: StatusCode, title: &str, message: &str) -> Response<Full<Bytes>> {
    let html = render_html(title, message);
    let mut resp = Response::new(Full::new(Bytes::from(html)));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    resp
}

/// The whole page: no scripts, styles, images or links, every piece of text escaped.
pub(crate) fn render_html(title: &str, message: &str) -> String {
    let title = escape_html(title);
    let message = escape_html(message);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <title>{title} - Patchbay</title></head>\n\
         <body><h1>{title}</h1>\n<p>{message}</p>\n\
         <p>You can close this tab and return to Patchbay.</p></body></html>\n"
    )
}

/// `s` safe in HTML text and attribute values (also the gateway's consent page).
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Why a callback query (or a pasted URL's query) could not be read. Names only the five
/// parameters we read, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("the `{0}` parameter is not valid percent-encoded UTF-8")]
    BadEncoding(&'static str),
    #[error("the `{0}` parameter appears more than once")]
    Repeated(&'static str),
    #[error("the `{0}` parameter contains a control character")]
    ControlCharacter(&'static str),
}

const PARAMS: [&str; 5] = ["state", "code", "iss", "error", "error_description"];

/// Parses an `application/x-www-form-urlencoded` query strictly for the five parameters of an
/// authorization response (RFC 6749 §3.1: none may appear twice). Others are ignored.
pub fn parse_query(query: &str) -> Result<CallbackParams, QueryError> {
    let mut values: [Option<String>; 5] = Default::default();
    let mut seen = [false; 5];
    for pair in query.split('&') {
        if pair.is_empty() {
            continue;
        }
        let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        // A key that does not decode is none of ours.
        let Some(key) = form_decode(raw_key) else {
            continue;
        };
        let Some(i) = PARAMS.iter().position(|p| *p == key) else {
            continue;
        };
        let name = PARAMS[i];
        if seen[i] {
            return Err(QueryError::Repeated(name));
        }
        seen[i] = true;
        let value = form_decode(raw_value).ok_or(QueryError::BadEncoding(name))?;
        if value.chars().any(char::is_control) {
            return Err(QueryError::ControlCharacter(name));
        }
        if !value.is_empty() {
            values[i] = Some(value);
        }
    }
    let [state, code, iss, error, error_description] = values;
    Ok(CallbackParams {
        state,
        code,
        iss,
        error,
        error_description,
    })
}

/// Strict form decoding: `+` is a space, `%XX` needs two hex digits, the result must be UTF-8.
fn form_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hi = (hex[0] as char).to_digit(16)?;
                let lo = (hex[1] as char).to_digit(16)?;
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Names the process listening on `addr` (or on the wildcard of its family, which blocks it too)
/// as `comm (pid N)`. Linux only, and only for processes whose fds we may read.
#[cfg(target_os = "linux")]
fn port_owner(addr: SocketAddr) -> Option<String> {
    let mut inodes = Vec::new();
    if let Ok(tcp) = std::fs::read_to_string("/proc/net/tcp") {
        inodes.extend(crate::proc_net::listening_inodes(&tcp, addr));
    }
    if let Ok(tcp6) = std::fs::read_to_string("/proc/net/tcp6") {
        inodes.extend(crate::proc_net::listening_inodes(&tcp6, addr));
    }
    if inodes.is_empty() {
        return None;
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            if wanted.iter().any(|w| target.as_os_str() == w.as_str()) {
                let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
                return Some(format!("{} (pid {pid})", comm.trim()));
            }
        }
    }
    None
}

#[cfg(not(target_os = "linux"))]
fn port_owner(_addr: SocketAddr) -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parsing_is_strict() {
        let p = parse_query("code=abc%2Bd+e&state=xyz&iss=https%3A%2F%2Fas.example&x=%zz").unwrap();
        assert_eq!(p.code.as_deref(), Some("abc+d e"));
        assert_eq!(p.state.as_deref(), Some("xyz"));
        assert_eq!(p.iss.as_deref(), Some("https://as.example"));
        assert_eq!(
            parse_query("code=a&code=b"),
            Err(QueryError::Repeated("code"))
        );
        assert_eq!(
            parse_query("code=a&code="),
            Err(QueryError::Repeated("code"))
        );
        assert_eq!(
            parse_query("state=%zz"),
            Err(QueryError::BadEncoding("state"))
        );
        assert_eq!(
            parse_query("state=%e"),
            Err(QueryError::BadEncoding("state"))
        );
        assert_eq!(
            parse_query("state=%ff"),
            Err(QueryError::BadEncoding("state"))
        );
        assert_eq!(
            parse_query("code=a%0Ab"),
            Err(QueryError::ControlCharacter("code"))
        );
        assert_eq!(parse_query("").unwrap(), CallbackParams::default());
        assert_eq!(
            parse_query("code=&state").unwrap(),
            CallbackParams::default()
        );
        // An encoded key is still the key.
        assert_eq!(parse_query("co%64e=z").unwrap().code.as_deref(), Some("z"));
    }

    #[test]
    fn escapes_html() {
        assert_eq!(
            escape_html(r#"<script>alert("x&'y")</script>"#),
            "&lt;script&gt;alert(&quot;x&amp;&#39;y&quot;)&lt;/script&gt;"
        );
    }
}
