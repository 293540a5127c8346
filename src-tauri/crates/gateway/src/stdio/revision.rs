//! Which revision the bridge speaks upstream, and what becomes of a client's message on another
//! one: the client's messages by kind, 2026-07-28's per-request metadata, the answers a 2025
//! client gets from a 2026-07-28 server.

use super::*;

/// A client message, by what it asks of the bridge.
#[derive(Debug, Clone)]
pub(super) enum Kind {
    Request {
        id: Value,
        method: String,
    },
    Notification {
        method: String,
    },
    /// The client's answer to a server's request: passed on, nothing to answer.
    Other,
}

impl Kind {
    pub(super) fn of(message: &Value) -> Kind {
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (Some(method), Some(id)) if !id.is_null() => Kind::Request {
                id: id.clone(),
                method: method.to_owned(),
            },
            (Some(method), _) => Kind::Notification {
                method: method.to_owned(),
            },
            _ => Kind::Other,
        }
    }

    pub(super) fn method(&self) -> &str {
        match self {
            Kind::Request { method, .. } | Kind::Notification { method } => method,
            Kind::Other => "",
        }
    }

    pub(super) fn id(&self) -> Option<&Value> {
        match self {
            Kind::Request { id, .. } => Some(id),
            _ => None,
        }
    }

    pub(super) fn is_initialize(&self) -> bool {
        matches!(self, Kind::Request { method, .. } if method == "initialize")
    }

    pub(super) fn is_handshake(&self) -> bool {
        matches!(self.method(), "initialize" | "notifications/initialized")
    }

    /// A request that may have acted when its connection dropped after sending.
    pub(super) fn may_act(&self) -> bool {
        self.method() == "tools/call"
    }
}

/// The revision the bridge speaks upstream, decided by the client's first message and, for a
/// client that sends `initialize`, by `server/discover`.
#[derive(Debug, Clone)]
pub(super) enum Revision {
    /// Nothing negotiated yet.
    Unknown,
    /// A 2025 client bridged to a 2026-07-28 server: the bridge answered `initialize` and adds
    /// the per-request `_meta` the client does not know to send.
    Translated(Box<RequestMeta>),
    /// Both ends speak the same revision: messages pass as they are (a 2025 client on a 2025
    /// session, or a client that sends its own `_meta`).
    Same,
}

/// The per-request metadata of 2026-07-28, from the client's `initialize`.
#[derive(Debug, Clone)]
pub(super) struct RequestMeta {
    pub(super) protocol_version: String,
    pub(super) client_info: Value,
    pub(super) client_capabilities: Value,
    /// From the client's `logging/setLevel` (2026-07-28 moved the level into `_meta`).
    pub(super) log_level: Option<Value>,
}

impl RequestMeta {
    pub(super) fn object(&self) -> serde_json::Map<String, Value> {
        let mut meta = serde_json::Map::new();
        meta.insert(META_PROTOCOL_VERSION.into(), json!(self.protocol_version));
        meta.insert(META_CLIENT_INFO.into(), self.client_info.clone());
        meta.insert(
            META_CLIENT_CAPABILITIES.into(),
            self.client_capabilities.clone(),
        );
        if let Some(level) = &self.log_level {
            meta.insert(META_LOG_LEVEL.into(), level.clone());
        }
        meta
    }

    /// `request` with this metadata in its `params._meta` (what the client put there kept).
    pub(super) fn add_to(&self, request: &Value) -> Value {
        let mut request = request.clone();
        let Some(object) = request.as_object_mut() else {
            return request;
        };
        let params = object
            .entry("params")
            .or_insert_with(|| Value::Object(Default::default()));
        if !params.is_object() {
            *params = Value::Object(Default::default());
        }
        let meta = params
            .as_object_mut()
            .expect("an object")
            .entry("_meta")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            for (key, value) in self.object() {
                meta.entry(key).or_insert(value);
            }
        }
        request
    }
}

pub(super) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(super) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub(super) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(super) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub(super) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The stateless revision the bridge speaks upstream (the only one it knows past 2025).
pub(super) const STATELESS_REVISION: &str = "2026-07-28";
/// What a 2025 client is told when it asks for a revision the bridge does not know.
pub(super) const NEWEST_WITH_INITIALIZE: &str = "2025-11-25";
/// The revisions the bridge can answer a client's `initialize` with itself.
pub(super) const TRANSLATABLE: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// 2026-07-28's "use another revision" error (its `data.supported` lists the server's).
pub(super) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// 2026-07-28's errors of a server that speaks it but refused the request as sent.
pub(super) const MODERN_REJECTIONS: [i64; 2] = [-32021, -32020];

/// What becomes of a 2025 client's message to a 2026-07-28 server.
pub(super) enum Translation {
    Send(Value),
    /// The bridge's own answer (`None`: nothing to answer).
    Answer(Option<Value>),
}

/// The `initialize` answer a 2025 client gets from the bridge for a 2026-07-28 server: the
/// revision it asked for (the bridge translates), the server's capabilities, info and
/// instructions from discovery.
pub(super) fn initialize_answer(
    kind: &Kind,
    params: &Value,
    discovered: &Value,
    connector: &str,
) -> Value {
    let asked = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .filter(|v| TRANSLATABLE.contains(v))
        .unwrap_or(NEWEST_WITH_INITIALIZE);
    let mut capabilities = discovered.get("capabilities").cloned().unwrap_or(json!({}));
    // Resource subscriptions do not translate (see `translate`): not offered.
    if let Some(resources) = capabilities
        .get_mut("resources")
        .and_then(Value::as_object_mut)
    {
        resources.remove("subscribe");
    }
    let server_info = discovered
        .pointer(&format!("/_meta/{}", META_SERVER_INFO.replace('/', "~1")))
        .cloned()
        .unwrap_or_else(|| json!({ "name": connector, "version": "0" }));
    let mut result = json!({
        "protocolVersion": asked,
        "capabilities": capabilities,
        "serverInfo": server_info,
    });
    if let Some(instructions) = discovered.get("instructions") {
        result["instructions"] = instructions.clone();
    }
    json!({ "jsonrpc": "2.0", "id": kind.id(), "result": result })
}

/// A 2026-07-28 answer for a 2025 client, or why it cannot have it: a result that asks the
/// client for input (`resultType: input_required`) needs a round trip 2025 does not have.
pub(super) fn untranslated_answer(answer: Value, kind: &Kind) -> Result<Value, Failure> {
    match answer.pointer("/result/resultType").and_then(Value::as_str) {
        Some("input_required") => Err(Failure::Untranslatable(format!(
            "the server asked for the client's input to finish {} (resultType input_required), which a 2025 client cannot give",
            kind.method()
        ))),
        _ => Ok(answer),
    }
}
