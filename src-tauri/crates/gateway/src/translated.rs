//! `/mcp/NAME` for a 2025 client in front of a server that speaks only 2026-07-28.
//!
//! The proxy passes a client's `initialize` through as it is. When the server refuses it as a
//! 2026-07-28-only server does (HTTP 400 with JSON-RPC `-32022` UnsupportedProtocolVersion whose
//! `supported` revisions are all past 2025), the gateway speaks 2026-07-28 to it on the client's
//! behalf: it opens the aggregate's kind of link (the official SDK's client: `server/discover`,
//! then every request with its `_meta` and headers), answers the `initialize` from discovery
//! with a session id of its own, and hands each request of that session to the link, its answer
//! back as JSON.
//!
//! What has no 2025 counterpart is said, not guessed: the server's own stream (`GET`) is 405,
//! notifications from the client are accepted and not passed on (2026-07-28 has no
//! `notifications/initialized`; a cancellation is not carried), and an answer the client's
//! revision cannot take (`input_required`, a task) is a JSON-RPC error naming
//! `patchbay connect`. Sessions are kept in memory, bounded and forgotten when idle.

use crate::aggregate::link::Link;
use crate::aggregate::{json_response, new_session_id, Failure};
// The 2025 revisions a client may ask for, newest first: the aggregate's list.
use crate::aggregate::VERSIONS as CLIENT_REVISIONS;
use crate::server::GatewayState;
use crate::upstream::Upstream;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// UnsupportedProtocolVersion (2026-07-28, SEP-2575).
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// Translated sessions kept at most (past it, the least recently used goes).
const MAX_SESSIONS: usize = 1_000;
/// A translated session unused this long is forgotten.
const IDLE: Duration = Duration::from_secs(24 * 60 * 60);
/// How much of a refusal is read to tell whether it is a 2026-07-28-only server's.
const REFUSAL_MAX: usize = 16 * 1024;

struct Session {
    connector: String,
    link: Arc<Link>,
    last_used: Instant,
}

/// The translated sessions, by the id the gateway gave the client.
#[derive(Default)]
pub(crate) struct Translated {
    sessions: Mutex<HashMap<String, Session>>,
}

impl Translated {
    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The link of the client's session `id` on `connector`, when it is a translated one.
    pub(crate) fn link(&self, connector: &str, id: &str) -> Option<Arc<Link>> {
        let mut sessions = self.sessions();
        let session = sessions.get_mut(id).filter(|s| s.connector == connector)?;
        session.last_used = Instant::now();
        Some(session.link.clone())
    }

    /// Forgets the session `id` (its client said goodbye); `true` when it was one.
    pub(crate) fn end(&self, connector: &str, id: &str) -> bool {
        let mut sessions = self.sessions();
        if sessions.get(id).is_some_and(|s| s.connector == connector) {
            if let Some(session) = sessions.remove(id) {
                if let Ok(link) = Arc::try_unwrap(session.link) {
                    link.close();
                }
            }
            return true;
        }
        false
    }

    fn keep(&self, id: String, connector: &str, link: Arc<Link>) {
        let mut sessions = self.sessions();
        let now = Instant::now();
        sessions.retain(|_, s| now.duration_since(s.last_used) < IDLE);
        if sessions.len() >= MAX_SESSIONS {
            if let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(k, _)| k.clone())
            {
                sessions.remove(&oldest);
            }
        }
        sessions.insert(
            id,
            Session {
                connector: connector.to_owned(),
                link,
                last_used: now,
            },
        );
    }
}

/// Whether `body` (an upstream's 400 to `initialize`) is a 2026-07-28-only server's refusal:
/// `-32022` naming only revisions past 2025.
pub(crate) fn refuses_2025(body: &[u8]) -> bool {
    let Ok(answer) = serde_json::from_slice::<Value>(&body[..body.len().min(REFUSAL_MAX)]) else {
        return false;
    };
    if answer.pointer("/error/code").and_then(Value::as_i64) != Some(UNSUPPORTED_PROTOCOL_VERSION) {
        return false;
    }
    let supported: Vec<&str> = answer
        .pointer("/error/data/supported")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // Revisions are dates: they sort as text.
    !supported.is_empty() && supported.iter().all(|v| *v > "2025-12-31")
}

/// Begins a translated session for the client's `initialize` (`message`): discovery through a
/// new link, the client answered from it with the gateway's own session id.
pub(crate) async fn begin(
    state: &Arc<GatewayState>,
    upstream: &Arc<Upstream>,
    message: &Value,
) -> Result<Response, Failure> {
    let name = upstream.name().to_owned();
    let bound = upstream.timeout().unwrap_or(state.options.default_timeout);
    let link = Link::open(
        state.http.clone(),
        upstream.clone(),
        Arc::new(AtomicBool::new(false)),
        bound,
        1,
    )
    .await?;
    let revision = link.revision();
    if revision.as_str() <= "2025-12-31" {
        // It refused 2025 and then agreed to it: nothing to translate; say so plainly.
        return Err(Failure::Untranslatable(format!(
            "it refused the client's initialize, then began a {revision} session with Patchbay"
        )));
    }
    let asked = message
        .pointer("/params/protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = CLIENT_REVISIONS
        .iter()
        .find(|v| **v == asked)
        .copied()
        .unwrap_or(CLIENT_REVISIONS[0]);
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": serde_json::to_value(link.capabilities()).unwrap_or_else(|_| json!({})),
        "serverInfo": link.server_info().unwrap_or_else(|| json!({ "name": name, "version": "" })),
    });
    if let Some(instructions) = link.instructions() {
        result["instructions"] = Value::String(instructions);
    }
    let id = new_session_id()
        .map(|id| format!("patchbay-{id}"))
        .map_err(|e| Failure::Protocol(format!("no session id: {e}")))?;
    tracing::info!(
        connector = name,
        "the server speaks MCP {revision} only; translating for a client on {version}"
    );
    state.translated.keep(id.clone(), &name, Arc::new(link));
    let answer = json!({ "jsonrpc": "2.0", "id": message.get("id").cloned().unwrap_or(Value::Null), "result": result });
    Ok(json_response(StatusCode::OK, &answer, Some(&id)))
}

/// One message of a translated session: a request answered through `link`, a notification
/// accepted. With the answer, what went wrong (for the health board), if anything.
pub(crate) async fn message(
    state: &GatewayState,
    upstream: &Upstream,
    link: &Link,
    message: &Value,
) -> (Response, Option<String>) {
    let (Some(method), Some(id)) = (
        message.get("method").and_then(Value::as_str),
        message.get("id").filter(|id| !id.is_null()),
    ) else {
        return (StatusCode::ACCEPTED.into_response(), None);
    };
    let bound = upstream.timeout().unwrap_or(state.options.default_timeout);
    let params = message.get("params").cloned();
    let (answer, error) = match link.request(method, params, bound).await {
        Ok(Ok(result)) => {
            let failed = result.get("isError") == Some(&Value::Bool(true));
            (
                json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                failed.then(|| format!("{method} answered isError")),
            )
        }
        Ok(Err(error)) => {
            let said = format!(
                "{method} answered a JSON-RPC error: {}",
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error")
            );
            (
                json!({ "jsonrpc": "2.0", "id": id, "error": error }),
                Some(said),
            )
        }
        Err(failure) => {
            let said = failure.message(upstream.name(), method);
            (
                json!({ "jsonrpc": "2.0", "id": id, "error": {
                    "code": crate::aggregate::GATEWAY_ERROR, "message": said } }),
                Some(said),
            )
        }
    };
    (json_response(StatusCode::OK, &answer, None), error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_refusal_naming_revisions_past_2025_is_translated() {
        let refusal = |supported: Value| {
            json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32022,
                "message": "Unsupported protocol version", "data": { "supported": supported } } })
            .to_string()
        };
        assert!(refuses_2025(refusal(json!(["2026-07-28"])).as_bytes()));
        assert!(!refuses_2025(
            refusal(json!(["2026-07-28", "2025-11-25"])).as_bytes()
        ));
        assert!(!refuses_2025(refusal(json!([])).as_bytes()));
        assert!(!refuses_2025(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Bad Request"}}"#
        ));
        assert!(!refuses_2025(b"not json"));
    }
}
