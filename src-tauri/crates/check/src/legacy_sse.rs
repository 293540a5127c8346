//! The legacy HTTP+SSE client transport (MCP 2024-11-05) as an rmcp [`Transport`]: rmcp dropped
//! its own after 0.10, and servers on this transport are still in the catalog. One GET opens the
//! event stream; its first `endpoint` event names where to POST; every server message (answers
//! included) arrives on that stream as a `message` event. The stream is read with the one SSE
//! parser ([`crate::sse`]).
//!
//! The transport only carries messages; the handshake on it is rmcp's `initialize` (this
//! transport predates `server/discover`, and a POST it rejects would end the probe, not fall
//! back).

use crate::sse::{SseEventTooLarge, SseParser};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use std::time::Duration;
use tokio::sync::mpsc;

/// What went wrong on the legacy SSE transport. The classifier ([`crate::classify`]) sorts these
/// into reachable-but-rejected (worth the streamable-HTTP fallback) and unreachable.
#[derive(Debug, thiserror::Error)]
pub enum LegacySseError {
    /// The request never got an answer: refused, reset, timed out, cut short.
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    /// The server answered with a status other than success.
    #[error("HTTP {status}")]
    Status { status: u16 },
    /// The GET was answered, but not with an event stream.
    #[error("answered {} where an event stream was expected", .0.as_deref().unwrap_or("no content type"))]
    NotAnEventStream(Option<String>),
    /// The stream ended before its `endpoint` event: a server, but not a legacy SSE one.
    #[error("the event stream ended before announcing its message endpoint")]
    EndedBeforeEndpoint,
    /// The `endpoint` event named somewhere that is not on the server's origin; our headers
    /// (credentials among them) are never sent elsewhere.
    #[error("the server announced a message endpoint that is not on its own origin or not a URL")]
    ForeignEndpoint,
    #[error(transparent)]
    EventTooLarge(#[from] SseEventTooLarge),
}

/// An open legacy SSE session: the stream read in a task, POSTs sent to its endpoint.
pub struct LegacySseTransport {
    http: reqwest::Client,
    /// Where to POST, from the stream's `endpoint` event.
    endpoint: url::Url,
    /// The limit on each POST (the stream itself is long-lived and has none).
    post_timeout: Duration,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl LegacySseTransport {
    /// Opens the stream at `url` and waits for its `endpoint` event. Not bounded here: the
    /// caller holds the whole connect to its own limit (reqwest's connect limit is under it).
    pub async fn connect(
        http: reqwest::Client,
        url: &url::Url,
        post_timeout: Duration,
    ) -> Result<LegacySseTransport, LegacySseError> {
        let mut response = http
            .get(url.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await?;
        let status = response.status();
        if !status.is_success() {
            return Err(LegacySseError::Status {
                status: status.as_u16(),
            });
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if !content_type
            .as_deref()
            .is_some_and(|ct| ct.trim_start().starts_with("text/event-stream"))
        {
            return Err(LegacySseError::NotAnEventStream(content_type));
        }

        let mut parser = SseParser::default();
        // Messages that came in the same chunks as the endpoint event (rare, but kept).
        let mut early = Vec::new();
        let mut endpoint = None;
        while endpoint.is_none() {
            let Some(chunk) = response.chunk().await? else {
                return Err(LegacySseError::EndedBeforeEndpoint);
            };
            for event in parser.push(&chunk)? {
                match event.kind.as_str() {
                    // (An event that only set an id or retry has no data: not the endpoint.)
                    "endpoint" if endpoint.is_none() && !event.data.is_empty() => {
                        endpoint = Some(event.data)
                    }
                    "message" => early.extend(parse_message(&event.data)),
                    _ => {}
                }
            }
        }
        let endpoint = message_endpoint(url, endpoint.as_deref().unwrap_or_default())?;

        // Room for what arrives while rmcp is busy; the reader waits when it is full.
        let (tx, incoming) = mpsc::channel(64);
        let reader = tokio::spawn(async move {
            for message in early {
                if tx.send(message).await.is_err() {
                    return;
                }
            }
            // The stream ends (or fails, or sends an event too large): the session is over,
            // which rmcp sees as the channel closing.
            while let Ok(Some(chunk)) = response.chunk().await {
                let Ok(events) = parser.push(&chunk) else {
                    return;
                };
                for event in events.into_iter().filter(|e| e.kind == "message") {
                    if let Some(message) = parse_message(&event.data) {
                        if tx.send(message).await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Ok(LegacySseTransport {
            http,
            endpoint,
            post_timeout,
            incoming,
            reader,
        })
    }

    /// Where this session POSTs.
    pub fn endpoint(&self) -> &url::Url {
        &self.endpoint
    }
}

impl Drop for LegacySseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// A `message` event's JSON-RPC message; anything else on the stream is skipped, as the SDKs do.
fn parse_message(data: &str) -> Option<ServerJsonRpcMessage> {
    match serde_json::from_str(data) {
        Ok(message) => Some(message),
        Err(e) => {
            tracing::debug!("skipping an SSE message that is not JSON-RPC: {e}");
            None
        }
    }
}

/// The `endpoint` event's URL (usually a path with a session query) resolved against the
/// stream's; refused when it leaves the stream's origin.
fn message_endpoint(stream: &url::Url, announced: &str) -> Result<url::Url, LegacySseError> {
    let endpoint = stream
        .join(announced.trim())
        .map_err(|_| LegacySseError::ForeignEndpoint)?;
    if endpoint.origin() != stream.origin() {
        return Err(LegacySseError::ForeignEndpoint);
    }
    Ok(endpoint)
}

impl Transport<RoleClient> for LegacySseTransport {
    type Error = LegacySseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .http
            .post(self.endpoint.clone())
            .timeout(self.post_timeout)
            .json(&item);
        async move {
            let response = request.send().await?;
            let status = response.status();
            if !status.is_success() {
                return Err(LegacySseError::Status {
                    status: status.as_u16(),
                });
            }
            Ok(())
        }
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing the stream ends the session on the server; nothing else to say to it.
        self.reader.abort();
        self.incoming.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_resolves_against_the_stream_and_stays_on_its_origin() {
        let stream = url::Url::parse("http://127.0.0.1:9/sse").unwrap();
        assert_eq!(
            message_endpoint(&stream, "/messages?sessionId=a")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:9/messages?sessionId=a"
        );
        assert_eq!(
            message_endpoint(&stream, "http://127.0.0.1:9/m")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:9/m"
        );
        assert!(matches!(
            message_endpoint(&stream, "https://evil.example/m"),
            Err(LegacySseError::ForeignEndpoint)
        ));
        assert!(matches!(
            message_endpoint(&stream, "http://127.0.0.1:10/m"),
            Err(LegacySseError::ForeignEndpoint)
        ));
    }
}
