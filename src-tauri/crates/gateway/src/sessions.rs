//! The streamable-HTTP sessions the gateway has seen begin, so a server that lost one (it
//! restarted: 404 to the session's id) is re-initialized without the client noticing. Each session
//! keeps the client's `initialize` request and the id the server gave it; the client goes on using
//! the first id, the gateway sends the current one. In memory only: a gateway restart forgets them
//! (and the client, seeing the 404 itself, starts over as the MCP spec says).
//!
//! Bounded, so clients cannot grow the gateway: an `initialize` larger than
//! [`MAX_REPLAYABLE_INITIALIZE`] is not kept (that session is not re-begun unseen: its client
//! sees the 404 and starts over, as without the gateway), and a session unused for [`IDLE`] is
//! forgotten.

use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderName};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// More sessions than this and the table starts over (clients that never said goodbye).
const MAX_SESSIONS: usize = 10_000;

/// The largest `initialize` kept for replay: a client's is a few hundred bytes to a few KiB.
pub(crate) const MAX_REPLAYABLE_INITIALIZE: usize = 64 * 1024;

/// A session unused this long is forgotten (its client is gone, or will start over on a 404).
pub(crate) const IDLE: Duration = Duration::from_secs(24 * 60 * 60);

struct Session {
    /// The client's `initialize` request, replayed to begin the session anew.
    initialize: Bytes,
    headers: HeaderMap,
    /// The id the server knows the session by now.
    upstream: String,
    last_used: Instant,
}

#[derive(Default)]
pub(crate) struct Sessions {
    /// By (connector, the id the client uses).
    map: Mutex<HashMap<(String, String), Session>>,
}

impl Sessions {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Session>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A session the server began with `id` for the client's `initialize` (its body and headers).
    pub(crate) fn begun(&self, connector: &str, id: &str, initialize: Bytes, headers: &HeaderMap) {
        self.begun_at(connector, id, initialize, headers, Instant::now());
    }

    fn begun_at(
        &self,
        connector: &str,
        id: &str,
        initialize: Bytes,
        headers: &HeaderMap,
        now: Instant,
    ) {
        if initialize.len() > MAX_REPLAYABLE_INITIALIZE {
            tracing::debug!(
                connector,
                "an initialize of {} bytes is not kept for replay",
                initialize.len()
            );
            return;
        }
        let mut headers = headers.clone();
        // Nothing of the client's own credentials is kept.
        headers.remove(header::AUTHORIZATION);
        headers.remove(crate::clients::CLIENT_HEADER);
        headers.remove(MCP_SESSION_ID);
        let mut map = self.map();
        map.retain(|_, s| now.saturating_duration_since(s.last_used) < IDLE);
        if map.len() >= MAX_SESSIONS {
            map.clear();
        }
        map.insert(
            (connector.to_owned(), id.to_owned()),
            Session {
                // A copy of its own: the body may be a slice of a connection's read buffer, which
                // a kept slice would keep whole.
                initialize: Bytes::copy_from_slice(&initialize),
                headers,
                upstream: id.to_owned(),
                last_used: now,
            },
        );
    }

    /// The id to send upstream for the client's `id` (itself unless it was re-initialized).
    pub(crate) fn upstream_id(&self, connector: &str, id: &str) -> Option<String> {
        self.map()
            .get_mut(&(connector.to_owned(), id.to_owned()))
            .map(|s| {
                s.last_used = Instant::now();
                s.upstream.clone()
            })
    }

    /// The `initialize` to replay for the client's session `id`.
    pub(crate) fn initialize_of(&self, connector: &str, id: &str) -> Option<(Bytes, HeaderMap)> {
        self.map()
            .get(&(connector.to_owned(), id.to_owned()))
            .map(|s| (s.initialize.clone(), s.headers.clone()))
    }

    /// The server now knows the client's session `id` as `upstream`.
    pub(crate) fn moved(&self, connector: &str, id: &str, upstream: &str) {
        if let Some(s) = self.map().get_mut(&(connector.to_owned(), id.to_owned())) {
            s.upstream = upstream.to_owned();
        }
    }

    /// The client ended the session.
    pub(crate) fn ended(&self, connector: &str, id: &str) {
        self.map().remove(&(connector.to_owned(), id.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_initialize_is_not_kept_and_an_idle_session_is_forgotten() {
        let sessions = Sessions::default();
        let headers = HeaderMap::new();
        let start = Instant::now();
        let big = Bytes::from(vec![b' '; MAX_REPLAYABLE_INITIALIZE + 1]);
        sessions.begun_at("fx", "big", big, &headers, start);
        assert_eq!(sessions.initialize_of("fx", "big"), None);
        assert_eq!(sessions.upstream_id("fx", "big"), None);

        let small = Bytes::from_static(br#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#);
        sessions.begun_at("fx", "old", small.clone(), &headers, start);
        assert!(sessions.initialize_of("fx", "old").is_some());
        // A day later another session begins: the idle one goes.
        sessions.begun_at("fx", "new", small, &headers, start + IDLE);
        assert_eq!(sessions.initialize_of("fx", "old"), None);
        assert!(sessions.initialize_of("fx", "new").is_some());
        assert_eq!(sessions.map().len(), 1);
    }
}
