//! The aggregate as a 2026-07-28 server (SEP-2575), beside the 2025 revisions: a POST whose
//! `MCP-Protocol-Version` is not a 2025 revision, or whose request carries
//! `_meta["io.modelcontextprotocol/protocolVersion"]`, is served without `initialize` or a session.
//!
//! - Its `_meta` must say the revision (equal to the header, else `-32020` HeaderMismatch) and the
//!   client's capabilities (else `-32602`); a revision other than 2026-07-28 is
//!   `-32022` UnsupportedProtocolVersion with the revisions served; each with HTTP 400.
//! - `server/discover` answers with the revisions served, the aggregate's capabilities and
//!   instructions, its serverInfo in `_meta`.
//! - List results (and `server/discover`, `resources/read`) carry `ttlMs` (how long the lists
//!   kept still serve) and `cacheScope` `private` (what a client sees depends on the connectors
//!   its gateway client may use).
//! - `initialize`, `ping`, `logging/setLevel` and unknown methods are 404 with `-32601`. No
//!   batches (JSON-RPC batching left MCP in 2025-06-18).

use super::{
    capabilities, list_method, rpc_error, rpc_error_response, server_info, Aggregate, INSTRUCTIONS,
    INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, VERSIONS,
};
use crate::clients::ClientRecord;
use crate::server::GatewayState;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Arc;

/// The stateless revision served.
pub(super) const STATELESS_VERSION: &str = "2026-07-28";
const HEADER_MISMATCH: i64 = -32020;
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Every revision served, newest first.
fn supported() -> Vec<&'static str> {
    std::iter::once(STATELESS_VERSION)
        .chain(VERSIONS.iter().copied())
        .collect()
}

fn meta(message: &Value) -> Option<&serde_json::Map<String, Value>> {
    message.pointer("/params/_meta").and_then(Value::as_object)
}

/// Whether this POST speaks the stateless revision (or asks for one past 2025's).
pub(super) fn speaks(header: Option<&str>, message: &Value) -> bool {
    let header_past_2025 = header.is_some_and(|v| !VERSIONS.contains(&v));
    header_past_2025 || meta(message).is_some_and(|m| m.contains_key(META_VERSION))
}

/// Why a stateless request is refused before it is served.
#[derive(Debug, PartialEq)]
struct Refusal {
    code: i64,
    message: String,
    data: Option<Value>,
}

/// The request's `_meta` against its header.
fn check(header: Option<&str>, message: &Value) -> Result<(), Refusal> {
    let meta = meta(message);
    let version = meta
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str);
    let has_capabilities = meta
        .and_then(|m| m.get(META_CAPABILITIES))
        .is_some_and(Value::is_object);
    let Some(version) = version.filter(|_| has_capabilities) else {
        return Err(Refusal {
            code: INVALID_PARAMS,
            message: format!(
                "a {STATELESS_VERSION} request carries params._meta[\"{META_VERSION}\"] and [\"{META_CAPABILITIES}\"]"
            ),
            data: None,
        });
    };
    if header != Some(version) {
        return Err(Refusal {
            code: HEADER_MISMATCH,
            message: format!(
                "the MCP-Protocol-Version header ({}) is not the request's _meta protocolVersion ({version})",
                header.unwrap_or("absent")
            ),
            data: None,
        });
    }
    if version != STATELESS_VERSION {
        return Err(Refusal {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            message: format!("protocol version {version} is not supported"),
            data: Some(json!({ "supported": supported(), "requested": version })),
        });
    }
    Ok(())
}

/// `result` as a whole 2026-07-28 result: `resultType` is required there (SEP-2322), and every
/// answer the aggregate hands on is complete (an `input_required` is refused upstream of here).
fn complete(mut result: Value) -> Value {
    if let Some(object) = result.as_object_mut() {
        object.insert("resultType".into(), json!("complete"));
    }
    result
}

/// `result` with the caching hints of a 2026-07-28 cacheable result.
fn cacheable(mut result: Value, ttl_ms: u128) -> Value {
    if let Some(object) = result.as_object_mut() {
        object.insert("ttlMs".into(), json!(ttl_ms as u64));
        object.insert("cacheScope".into(), json!("private"));
    }
    result
}

fn answer(status: StatusCode, id: &Value, outcome: Result<Value, Value>) -> Response {
    let body = match outcome {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": complete(result) }),
        Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
    };
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

impl Aggregate {
    /// One stateless POST.
    pub(super) async fn stateless(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        client: &ClientRecord,
        header: Option<&str>,
        message: Value,
    ) -> Response {
        if message.is_array() {
            return rpc_error_response(
                StatusCode::BAD_REQUEST,
                None,
                INVALID_REQUEST,
                "a batch is not a 2026-07-28 request",
            );
        }
        let id = message.get("id").filter(|id| !id.is_null()).cloned();
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(id) = id else {
            // A notification (or a stray answer): nothing to say.
            return StatusCode::ACCEPTED.into_response();
        };
        if let Err(refusal) = check(header, &message) {
            let mut error = rpc_error(refusal.code, &refusal.message);
            if let Some(data) = refusal.data {
                error["data"] = data;
            }
            return answer(StatusCode::BAD_REQUEST, &id, Err(error));
        }
        let offered = || async { self.offered(state, client).await };
        let outcome = match method.as_str() {
            "server/discover" => {
                let mut result = json!({
                    "supportedVersions": supported(),
                    "capabilities": capabilities(),
                    "instructions": INSTRUCTIONS,
                });
                result["_meta"] = json!({ META_SERVER_INFO: server_info() });
                Ok(cacheable(result, 0))
            }
            // Gone in 2026-07-28 (no session to begin, keep alive or set a level on).
            "initialize" | "ping" | "logging/setLevel" => Err(rpc_error(
                METHOD_NOT_FOUND,
                &format!("Method not found: {method} (not in {STATELESS_VERSION})"),
            )),
            m if list_method(m).is_some() => {
                let method = list_method(m).unwrap_or("tools/list");
                let result = self.list_answer(state, client, method).await;
                let ttl = self.fresh_for(&offered().await).as_millis();
                Ok(cacheable(result.value.clone(), ttl))
            }
            _ => {
                let mut plain = message;
                if let Some(params) = plain.get_mut("params").and_then(Value::as_object_mut) {
                    params.remove("_meta");
                }
                let answered = self.message(state, client, plain).await.unwrap_or_default();
                match (answered.get("result"), answered.get("error")) {
                    (Some(result), _) => Ok(match method.as_str() {
                        "resources/read" | "resources/templates/list" => {
                            cacheable(result.clone(), 0)
                        }
                        _ => result.clone(),
                    }),
                    (None, Some(error)) => Err(error.clone()),
                    (None, None) => Err(rpc_error(INVALID_REQUEST, "no answer")),
                }
            }
        };
        let status = match &outcome {
            Err(error) if error.get("code") == Some(&json!(METHOD_NOT_FOUND)) => {
                StatusCode::NOT_FOUND
            }
            _ => StatusCode::OK,
        };
        answer(status, &id, outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(meta: Value) -> Value {
        json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": meta } })
    }

    #[test]
    fn a_2026_request_is_told_from_a_2025_one() {
        let plain = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
        assert!(!speaks(None, &plain));
        assert!(!speaks(Some("2025-06-18"), &plain));
        assert!(speaks(Some(STATELESS_VERSION), &plain));
        assert!(speaks(Some("v999.0.0"), &plain));
        assert!(speaks(
            None,
            &request(json!({ META_VERSION: STATELESS_VERSION }))
        ));
    }

    #[test]
    fn meta_is_checked_against_the_header_and_the_revisions_served() {
        let caps = json!({});
        let good = request(json!({ META_VERSION: STATELESS_VERSION, META_CAPABILITIES: caps }));
        assert_eq!(check(Some(STATELESS_VERSION), &good), Ok(()));
        let no_caps = request(json!({ META_VERSION: STATELESS_VERSION }));
        assert_eq!(
            check(Some(STATELESS_VERSION), &no_caps).unwrap_err().code,
            INVALID_PARAMS
        );
        let no_version = request(json!({ META_CAPABILITIES: caps }));
        assert_eq!(
            check(Some(STATELESS_VERSION), &no_version)
                .unwrap_err()
                .code,
            INVALID_PARAMS
        );
        assert_eq!(check(None, &good).unwrap_err().code, HEADER_MISMATCH);
        let other = request(json!({ META_VERSION: "v999.0.0", META_CAPABILITIES: caps }));
        assert_eq!(
            check(Some(STATELESS_VERSION), &other).unwrap_err().code,
            HEADER_MISMATCH
        );
        let refused = check(Some("v999.0.0"), &other).unwrap_err();
        assert_eq!(refused.code, UNSUPPORTED_PROTOCOL_VERSION);
        let data = refused.data.unwrap();
        assert_eq!(data["requested"], "v999.0.0");
        assert_eq!(data["supported"][0], STATELESS_VERSION);
    }
}
