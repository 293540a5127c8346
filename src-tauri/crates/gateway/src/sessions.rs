//! The streamable-HTTP sessions the gateway has seen begin, so a server that lost one (it
//! restarted: 404 to the session's id) is re-initialized without the client noticing. Each session
//! keeps the client's `initialize` request and the id the server gave it; the client goes on using
//! the first id, the gateway sends the current one. In memory only: a gateway restart forgets them
//! (and the client, seeing the 404 itself, starts over as the MCP spec says).

use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderName};
use std::collections::HashMap;
use std::sync::Mutex;

pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// More sessions than this and the table starts over (clients that never said goodbye).
const MAX_SESSIONS: usize = 10_000;

struct Session {
    /// The client's `initialize` request, replayed to begin the session anew.
    initialize: Bytes,
    headers: HeaderMap,
    /// The id the server knows the session by now.
    upstream: String,
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
        let mut headers = headers.clone();
        // Nothing of the client's own credentials is kept.
        headers.remove(header::AUTHORIZATION);
        headers.remove(crate::clients::CLIENT_HEADER);
        headers.remove(MCP_SESSION_ID);
        let mut map = self.map();
        if map.len() >= MAX_SESSIONS {
            map.clear();
        }
        map.insert(
            (connector.to_owned(), id.to_owned()),
            Session {
                initialize,
                headers,
                upstream: id.to_owned(),
            },
        );
    }

    /// The id to send upstream for the client's `id` (itself unless it was re-initialized).
    pub(crate) fn upstream_id(&self, connector: &str, id: &str) -> Option<String> {
        self.map()
            .get(&(connector.to_owned(), id.to_owned()))
            .map(|s| s.upstream.clone())
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
