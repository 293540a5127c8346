//! Turning what went wrong into a [`CheckError`]: the transport fallback's split between a
//! server that answered but spoke another transport (405, 400, 404, 406, 415, not an event
//! stream: try the other HTTP transport) and one that could not be reached (refused, timeout,
//! EOF: no fallback), and the meaning of a 401 (OAuth-capable: Needs authorization; a static
//! header: name the header and its variable, never Authorize).
//!
//! rmcp hands its transport errors back boxed; they are downcast here to the reqwest-based error
//! types it was built with ([`StreamableHttpError`], and our [`LegacySseError`]). rmcp 3 keeps a
//! 4xx answer's status only in its message (`HTTP 405 Method Not Allowed: ...`), read back by
//! [`status_in`]; 429 and 5xx come typed.

use crate::error::{CheckError, Stage};
use crate::legacy_sse::LegacySseError;
use crate::{AuthKind, Redactor, TransportKind};
use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpError;
use std::time::Duration;

/// What the classifier needs to know besides the error itself.
pub struct Context<'a> {
    pub transport: TransportKind,
    pub auth: &'a AuthKind,
    pub redactor: &'a Redactor,
    pub stage: Stage,
    /// The stage's time limit, reported when reqwest's own timeout fired.
    pub limit: Duration,
}

/// An HTTP status the server answered the handshake with.
pub fn from_status(status: u16, detail: &str, cx: &Context<'_>) -> CheckError {
    let message = cx.redactor.scrub(detail);
    match status {
        401 => unauthorized(cx.auth, cx.transport),
        // The handshake's method, path or media type is not this server's: the reachable-but-
        // rejected class the fallback exists for.
        400 | 404 | 405 | 406 | 415 => CheckError::Rejected {
            transport: cx.transport,
            status: Some(status),
            message,
        },
        _ => CheckError::ServerError {
            transport: cx.transport,
            status,
            message,
        },
    }
}

/// A 401. An OAuth-capable server needs authorizing (again, when a stored token was refused);
/// a server with a static credential header has a wrong value, which Authorize cannot fix.
pub fn unauthorized(auth: &AuthKind, transport: TransportKind) -> CheckError {
    match auth {
        AuthKind::OAuth { token_sent: false } => CheckError::NeedsAuthorization {
            message: format!(
                "the server answered 401 over {transport}: it needs authorization, and no credential is stored"
            ),
        },
        AuthKind::OAuth { token_sent: true } => CheckError::NeedsAuthorization {
            message: format!(
                "the server answered 401 over {transport}: it refused the stored token (expired or revoked), so it needs authorizing again"
            ),
        },
        AuthKind::StaticHeaders { headers, variables } => {
            let what = match variables.as_slice() {
                [] => format!("the {} header's value in the catalog", headers.join(", ")),
                vars => format!(
                    "the value of {} (sent in the {} header)",
                    vars.join(", "),
                    headers.join(", ")
                ),
            };
            CheckError::CredentialRejected {
                headers: headers.clone(),
                variables: variables.clone(),
                message: format!(
                    "the server answered 401 over {transport}: it refused the credential; check {what}"
                ),
            }
        }
        // No HTTP in stdio; kept total for completeness.
        AuthKind::Process => CheckError::Protocol {
            transport,
            message: "the server reported 401".into(),
        },
    }
}

/// A reqwest failure: a status, a connection that never opened, a timeout, a body cut short.
pub fn from_reqwest(e: &reqwest::Error, cx: &Context<'_>) -> CheckError {
    if let Some(status) = e.status() {
        let reason = status.canonical_reason().unwrap_or("");
        return from_status(status.as_u16(), reason, cx);
    }
    let message = cx.redactor.scrub(&root_cause(e));
    if e.is_timeout() {
        return CheckError::TimedOut {
            transport: cx.transport,
            stage: cx.stage,
            after: cx.limit,
        };
    }
    if e.is_decode() {
        return CheckError::Protocol {
            transport: cx.transport,
            message,
        };
    }
    // Connect errors, and a connection closed before or during the response (EOF).
    CheckError::Unreachable {
        transport: cx.transport,
        message,
    }
}

/// The status of a non-success answer that rmcp 3's reqwest client reports only as text:
/// `HTTP 405 Method Not Allowed: <body>`.
pub fn status_in(message: &str) -> Option<u16> {
    let rest = message.strip_prefix("HTTP ")?;
    let digits = rest.get(..3)?;
    let status: u16 = digits.parse().ok()?;
    let ends = rest[3..].chars().next().is_none_or(|c| !c.is_ascii_digit());
    ((100..600).contains(&status) && ends).then_some(status)
}

fn streamable(e: &StreamableHttpError<reqwest::Error>, cx: &Context<'_>) -> CheckError {
    match e {
        StreamableHttpError::Client(e) => from_reqwest(e, cx),
        StreamableHttpError::AuthRequired(_) => unauthorized(cx.auth, cx.transport),
        StreamableHttpError::InsufficientScope(e) => match e
            .required_scope
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(scope) => CheckError::NeedsMoreAccess {
                transport: cx.transport,
                scope: scope.to_owned(),
            },
            None => from_status(403, "insufficient scope", cx),
        },
        StreamableHttpError::HttpStatus(status) => from_status(status.status, "", cx),
        StreamableHttpError::UnexpectedServerResponse(message) => match status_in(message) {
            Some(status) => from_status(status, message, cx),
            None => CheckError::Protocol {
                transport: cx.transport,
                message: cx.redactor.scrub(&one_line(message, 500)),
            },
        },
        StreamableHttpError::ServerDoesNotSupportSse => from_status(405, "Method Not Allowed", cx),
        StreamableHttpError::UnexpectedContentType(ct) => CheckError::Rejected {
            transport: cx.transport,
            status: None,
            message: format!(
                "answered {} where JSON or an event stream was expected",
                ct.as_deref().unwrap_or("no content type")
            ),
        },
        StreamableHttpError::Io(_)
        | StreamableHttpError::UnexpectedEndOfStream
        | StreamableHttpError::TransportChannelClosed => CheckError::Unreachable {
            transport: cx.transport,
            message: cx.redactor.scrub(&e.to_string()),
        },
        other => CheckError::Protocol {
            transport: cx.transport,
            message: cx.redactor.scrub(&other.to_string()),
        },
    }
}

fn legacy_sse(e: &LegacySseError, cx: &Context<'_>) -> CheckError {
    match e {
        LegacySseError::Http(e) => from_reqwest(e, cx),
        LegacySseError::Status { status } => from_status(*status, "", cx),
        // An HTTP answer that is not an event stream, or a stream that never announced its
        // message endpoint: a server, but not a legacy SSE one.
        LegacySseError::NotAnEventStream(_) | LegacySseError::EndedBeforeEndpoint => {
            CheckError::Rejected {
                transport: cx.transport,
                status: None,
                message: e.to_string(),
            }
        }
        LegacySseError::ForeignEndpoint | LegacySseError::EventTooLarge(_) => {
            CheckError::Protocol {
                transport: cx.transport,
                message: e.to_string(),
            }
        }
    }
}

/// Any error an rmcp transport produced (boxed inside rmcp's dynamic error, or bare).
pub fn from_transport_error(
    e: &(dyn std::error::Error + Send + Sync + 'static),
    cx: &Context<'_>,
) -> CheckError {
    if let Some(e) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        return streamable(e, cx);
    }
    if let Some(e) = e.downcast_ref::<LegacySseError>() {
        return legacy_sse(e, cx);
    }
    if let Some(e) = e.downcast_ref::<reqwest::Error>() {
        return from_reqwest(e, cx);
    }
    // stdio's pipe, mostly: the child went away.
    CheckError::Unreachable {
        transport: cx.transport,
        message: cx.redactor.scrub(&e.to_string()),
    }
}

/// `initialize` failed.
pub fn from_initialize(e: &ClientInitializeError, cx: &Context<'_>) -> CheckError {
    match e {
        ClientInitializeError::TransportError { error, .. } => {
            from_transport_error(error.error.as_ref(), cx)
        }
        ClientInitializeError::ConnectionClosed(during) => CheckError::Unreachable {
            transport: cx.transport,
            message: format!("the connection closed during {during}"),
        },
        // `server/discover` said "legacy" and `initialize` then failed: that failure is the
        // server's answer to the handshake it speaks.
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            from_initialize(fallback, cx)
        }
        other => CheckError::Protocol {
            transport: cx.transport,
            message: cx.redactor.scrub(&one_line(&other.to_string(), 500)),
        },
    }
}

/// `tools/list` failed.
pub fn from_service(e: &ServiceError, cx: &Context<'_>) -> CheckError {
    match e {
        ServiceError::TransportSend(error) => from_transport_error(error.error.as_ref(), cx),
        ServiceError::TransportClosed => CheckError::Unreachable {
            transport: cx.transport,
            message: format!("the connection closed during {}", cx.stage.as_str()),
        },
        ServiceError::Timeout { .. } => CheckError::TimedOut {
            transport: cx.transport,
            stage: cx.stage,
            after: cx.limit,
        },
        ServiceError::McpError(data) => CheckError::Protocol {
            transport: cx.transport,
            message: cx.redactor.scrub(&format!(
                "{} answered error {}: {}",
                cx.stage.as_str(),
                data.code.0,
                data.message
            )),
        },
        other => CheckError::Protocol {
            transport: cx.transport,
            message: cx.redactor.scrub(&other.to_string()),
        },
    }
}

/// The innermost cause's message ("Connection refused (os error 111)"), which says more than
/// reqwest's "error sending request for url".
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// Whitespace collapsed, cut at `max` characters.
pub fn one_line(text: &str, max: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        return collapsed;
    }
    let cut: String = collapsed.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchbay_vault::Secret;

    fn cx<'a>(auth: &'a AuthKind, redactor: &'a Redactor) -> Context<'a> {
        Context {
            transport: TransportKind::StreamableHttp,
            auth,
            redactor,
            stage: Stage::Initialize,
            limit: Duration::from_secs(5),
        }
    }

    #[test]
    fn handshake_rejections_warrant_the_fallback_and_nothing_else_does() {
        let auth = AuthKind::OAuth { token_sent: false };
        let r = Redactor::default();
        for status in [400, 404, 405, 406, 415] {
            let e = from_status(status, "no", &cx(&auth, &r));
            assert!(e.warrants_fallback(), "{status}: {e:?}");
            assert!(!e.is_retryable(), "{status}");
        }
        for status in [401, 403, 429, 500, 502, 503] {
            let e = from_status(status, "no", &cx(&auth, &r));
            assert!(!e.warrants_fallback(), "{status}: {e:?}");
        }
        assert!(from_status(503, "", &cx(&auth, &r)).is_retryable());
        assert!(!from_status(403, "", &cx(&auth, &r)).is_retryable());
    }

    #[tokio::test]
    async fn a_refused_port_is_unreachable_without_fallback() {
        // Bind then drop: nobody listens there now.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let e = client
            .post(format!("http://127.0.0.1:{port}/mcp"))
            .send()
            .await
            .unwrap_err();
        let auth = AuthKind::OAuth { token_sent: false };
        let r = Redactor::default();
        let classified = from_reqwest(&e, &cx(&auth, &r));
        assert_eq!(classified.kind(), "unreachable", "{classified:?}");
        assert!(!classified.warrants_fallback());
        assert!(classified.is_retryable());
        assert!(
            classified.to_string().to_lowercase().contains("refused"),
            "{classified}"
        );
    }

    #[test]
    fn a_401_on_an_oauth_server_needs_authorization() {
        let e = unauthorized(
            &AuthKind::OAuth { token_sent: false },
            TransportKind::StreamableHttp,
        );
        assert_eq!(e.kind(), "needs_authorization");
        assert!(e.to_string().contains("no credential is stored"), "{e}");
        let e = unauthorized(&AuthKind::OAuth { token_sent: true }, TransportKind::Sse);
        assert_eq!(e.kind(), "needs_authorization");
        assert!(e.to_string().contains("refused the stored token"), "{e}");
        assert!(!e.is_retryable());
    }

    #[test]
    fn a_401_on_a_static_header_names_the_header_and_variable_never_authorize() {
        let auth = AuthKind::StaticHeaders {
            headers: vec!["X-API-Key".into()],
            variables: vec!["CONTEXT7_API_KEY".into()],
        };
        let e = unauthorized(&auth, TransportKind::StreamableHttp);
        assert_eq!(e.kind(), "credential_rejected");
        let text = e.to_string();
        assert!(text.contains("X-API-Key"), "{text}");
        assert!(text.contains("CONTEXT7_API_KEY"), "{text}");
        assert!(!text.to_lowercase().contains("authoriz"), "{text}");
        assert!(!e.is_retryable());

        let literal = AuthKind::StaticHeaders {
            headers: vec!["Authorization".into()],
            variables: vec![],
        };
        let text = unauthorized(&literal, TransportKind::Sse).to_string();
        assert!(text.contains("the Authorization header's value"), "{text}");
    }

    #[test]
    fn messages_are_scrubbed() {
        let auth = AuthKind::OAuth { token_sent: true };
        let r = Redactor::new(vec![Secret::new("Bearer tok-12345")]);
        let e = from_status(404, "no route for tok-12345", &cx(&auth, &r));
        assert!(!e.to_string().contains("tok-12345"), "{e}");
    }

    #[test]
    fn the_status_is_read_back_from_rmcps_message_and_nothing_else_is() {
        assert_eq!(status_in("HTTP 405 Method Not Allowed: "), Some(405));
        assert_eq!(status_in("HTTP 400 Bad Request: Missing header"), Some(400));
        assert_eq!(status_in("HTTP 404"), Some(404));
        assert_eq!(status_in("HTTP 4050 x"), None);
        assert_eq!(status_in("HTTP 99 x"), None);
        assert_eq!(status_in("expect initialized, accepted"), None);
        assert_eq!(status_in("the server said HTTP 400"), None);
    }

    #[test]
    fn a_4xx_rmcp_reports_as_text_warrants_the_fallback() {
        let auth = AuthKind::OAuth { token_sent: false };
        let r = Redactor::default();
        let e = streamable(
            &StreamableHttpError::UnexpectedServerResponse("HTTP 405 Method Not Allowed: ".into()),
            &cx(&auth, &r),
        );
        assert!(e.warrants_fallback(), "{e:?}");
        assert_eq!(e.http_status(), Some(405));
        let e = streamable(
            &StreamableHttpError::UnexpectedServerResponse("HTTP 401 Unauthorized: ".into()),
            &cx(&auth, &r),
        );
        assert_eq!(e.kind(), "needs_authorization", "{e:?}");
    }

    #[test]
    fn one_line_cuts() {
        assert_eq!(one_line("a\n b", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }
}
