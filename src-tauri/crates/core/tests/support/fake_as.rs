//! A fault-injecting MCP server + OAuth authorization server on 127.0.0.1, for the flow tests.
//! One origin plays both: `POST /mcp` answers 401, the well-known documents follow the switches
//! in [`Config`], `/authorize` auto-approves with a 302 to the redirect URI, `/register` is DCR,
//! `/token` checks PKCE, redirect URI and client authentication. Every request is recorded.

#![allow(dead_code)]

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iss {
    Correct,
    Missing,
    Wrong,
}

#[derive(Debug, Clone)]
pub struct Config {
    /// The 401 names the PRM URL (served at /custom/prm).
    pub challenge_resource_metadata: bool,
    pub challenge_scope: Option<String>,
    /// PRM at /.well-known/oauth-protected-resource/mcp (true) or at the root (false).
    pub prm_at_path: bool,
    pub prm_scopes: Vec<String>,
    /// The PRM's `resource` (`None`: the MCP URL, as it should be).
    pub prm_resource: Option<String>,
    /// No protected-resource metadata anywhere (a server of revision 2025-03-26).
    pub no_prm: bool,
    /// No authorization-server metadata either: the default endpoints only.
    pub no_as_metadata: bool,
    /// `client_id_metadata_document_supported`: an https client id is taken at its word.
    pub cimd: bool,
    /// The MCP endpoint speaks revision 2026-07-28 only: a request without its
    /// `MCP-Protocol-Version` header gets 400, as the conformance framework's servers answer.
    pub stateless_only: bool,
    /// The issuer's path ("" or "/tenant").
    pub issuer_path: String,
    /// Serve the metadata as OpenID configuration only.
    pub oidc_only: bool,
    /// The metadata names another issuer.
    pub wrong_issuer: bool,
    pub s256: bool,
    pub dcr: bool,
    /// token_endpoint_auth_methods_supported (absent when None).
    pub auth_methods: Option<Vec<String>>,
    pub as_scopes: Vec<String>,
    pub iss_advertised: bool,
    pub iss_on_redirect: Iss,
    pub slack_shape: bool,
    pub refresh_token: bool,
    pub expires_in: u64,
    /// The token endpoint accepts and never answers.
    pub token_hangs: bool,
    /// Pre-registered confidential clients: id -> secret ("" for a public one).
    pub clients: HashMap<String, String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            challenge_resource_metadata: true,
            challenge_scope: None,
            prm_at_path: true,
            prm_scopes: vec!["mcp:read".into(), "mcp:write".into()],
            prm_resource: None,
            no_prm: false,
            no_as_metadata: false,
            cimd: false,
            stateless_only: false,
            issuer_path: String::new(),
            oidc_only: false,
            wrong_issuer: false,
            s256: true,
            dcr: true,
            auth_methods: None,
            as_scopes: vec![],
            iss_advertised: false,
            iss_on_redirect: Iss::Correct,
            slack_shape: false,
            refresh_token: true,
            expires_in: 3600,
            token_hangs: false,
            clients: HashMap::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: HashMap<String, String>,
    pub form: HashMap<String, String>,
    pub json: Option<Value>,
    pub authorization: Option<String>,
}

struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    resource: Option<String>,
    scope: Option<String>,
}

#[derive(Default)]
struct State {
    base: String,
    config: Config,
    requests: Vec<Recorded>,
    /// Registered clients: id -> secret (None for public).
    registered: HashMap<String, Option<String>>,
    codes: HashMap<String, Grant>,
    counter: u64,
    /// Documents served at a path (`serve_document`).
    documents: HashMap<String, Value>,
}

#[derive(Clone)]
pub struct FakeAs {
    state: Arc<Mutex<State>>,
    pub base: String,
}

impl FakeAs {
    pub async fn start(config: Config) -> FakeAs {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            base: base.clone(),
            config,
            ..State::default()
        }));
        let s = state.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let s = s.clone();
                async move { handle(s, method, uri, headers, body).await }
            },
        );
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeAs { state, base }
    }

    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn issuer(&self) -> String {
        let s = self.state.lock().unwrap();
        format!("{}{}", s.base, s.config.issuer_path)
    }

    pub fn configure(&self, f: impl FnOnce(&mut Config)) {
        f(&mut self.state.lock().unwrap().config);
    }

    /// Forget every dynamically registered client (the server lost its registrations).
    /// Serves `document` as JSON at `path` (a GET), e.g. a client metadata document.
    pub fn serve_document(&self, path: &str, document: Value) {
        self.state
            .lock()
            .unwrap()
            .documents
            .insert(path.to_string(), document);
    }

    pub fn forget_registrations(&self) {
        self.state.lock().unwrap().registered.clear();
    }

    pub fn requests(&self, path: &str) -> Vec<Recorded> {
        self.state
            .lock()
            .unwrap()
            .requests
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }

    pub fn paths(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap()
            .requests
            .iter()
            .map(|r| r.path.clone())
            .collect()
    }
}

fn parse_pairs(text: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

fn json_response(status: StatusCode, v: Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(v.to_string()))
        .unwrap()
}

fn not_found() -> Response {
    Response::builder()
        .status(StatusCode::NOT_FOUND)
        .body(Body::empty())
        .unwrap()
}

fn oauth_error(status: StatusCode, error: &str) -> Response {
    json_response(status, json!({ "error": error }))
}

async fn handle(
    state: Arc<Mutex<State>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let query = parse_pairs(uri.query().unwrap_or(""));
    let body_text = String::from_utf8_lossy(&body).to_string();
    let is_form = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let recorded = Recorded {
        method: method.to_string(),
        path: path.clone(),
        query: query.clone(),
        form: if is_form {
            parse_pairs(&body_text)
        } else {
            HashMap::new()
        },
        json: serde_json::from_str(&body_text).ok(),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    };
    let hang = {
        let mut s = state.lock().unwrap();
        s.requests.push(recorded.clone());
        path == "/token" && s.config.token_hangs
    };
    if hang {
        tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    }
    let mut s = state.lock().unwrap();
    let base = s.base.clone();
    let c = s.config.clone();
    let issuer = format!("{base}{}", c.issuer_path);
    let prm = || {
        json_response(
            StatusCode::OK,
            json!({
                "resource": c.prm_resource.clone().unwrap_or_else(|| format!("{base}/mcp")),
                "authorization_servers": [issuer],
                "scopes_supported": c.prm_scopes,
            }),
        )
    };
    let metadata = || {
        let mut m = json!({
            "issuer": if c.wrong_issuer { format!("{base}/someone-else") } else { issuer.clone() },
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "response_types_supported": ["code"],
            "scopes_supported": c.as_scopes,
        });
        if c.s256 {
            m["code_challenge_methods_supported"] = json!(["S256"]);
        }
        if c.dcr {
            m["registration_endpoint"] = json!(format!("{base}/register"));
        }
        if let Some(methods) = &c.auth_methods {
            m["token_endpoint_auth_methods_supported"] = json!(methods);
        }
        if c.iss_advertised {
            m["authorization_response_iss_parameter_supported"] = json!(true);
        }
        if c.cimd {
            m["client_id_metadata_document_supported"] = json!(true);
        }
        json_response(StatusCode::OK, m)
    };
    let ip = &c.issuer_path;
    if let Some(document) = s.documents.get(&path).filter(|_| method == Method::GET) {
        return json_response(StatusCode::OK, document.clone());
    }
    match (method.as_str(), path.as_str()) {
        ("POST", "/mcp") if c.stateless_only && !headers.contains_key("mcp-protocol-version") => {
            json_response(
                StatusCode::BAD_REQUEST,
                json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32600, "message": "Missing MCP-Protocol-Version header" } }),
            )
        }
        ("POST", "/mcp") => {
            let mut params = Vec::new();
            if c.challenge_resource_metadata && !c.no_prm {
                params.push(format!("resource_metadata=\"{base}/custom/prm\""));
            }
            if let Some(scope) = &c.challenge_scope {
                params.push(format!("scope=\"{scope}\""));
            }
            params.push("error=\"invalid_token\"".into());
            Response::builder()
                .status(StatusCode::UNAUTHORIZED)
                .header("www-authenticate", format!("Bearer {}", params.join(", ")))
                .body(Body::empty())
                .unwrap()
        }
        ("GET", p) if c.no_prm && p.starts_with("/.well-known/oauth-protected-resource") => {
            not_found()
        }
        ("GET", p) if c.no_as_metadata && p.starts_with("/.well-known/") => not_found(),
        ("GET", "/custom/prm") if c.challenge_resource_metadata => prm(),
        ("GET", "/.well-known/oauth-protected-resource/mcp") if c.prm_at_path => prm(),
        ("GET", "/.well-known/oauth-protected-resource") if !c.prm_at_path => prm(),
        ("GET", p)
            if !c.oidc_only && p == format!("/.well-known/oauth-authorization-server{ip}") =>
        {
            metadata()
        }
        ("GET", p)
            if c.oidc_only
                && ((ip.is_empty() && p == "/.well-known/openid-configuration")
                    || (!ip.is_empty()
                        && p == format!("{ip}/.well-known/openid-configuration"))) =>
        {
            metadata()
        }
        ("GET", "/authorize") => {
            let client_id = query.get("client_id").cloned().unwrap_or_default();
            let known = s.registered.contains_key(&client_id)
                || c.clients.contains_key(&client_id)
                || (c.cimd && client_id.contains("://"));
            if !known {
                return Response::builder()
                    .status(StatusCode::BAD_REQUEST)
                    .body(Body::from("unknown client"))
                    .unwrap();
            }
            let redirect = query.get("redirect_uri").cloned().unwrap_or_default();
            s.counter += 1;
            let code = format!("code-{}", s.counter);
            s.codes.insert(
                code.clone(),
                Grant {
                    client_id,
                    redirect_uri: redirect.clone(),
                    challenge: query.get("code_challenge").cloned().unwrap_or_default(),
                    resource: query.get("resource").cloned(),
                    scope: query.get("scope").cloned(),
                },
            );
            let mut location = url::Url::parse(&redirect).unwrap();
            {
                let mut q = location.query_pairs_mut();
                q.append_pair("code", &code);
                if let Some(st) = query.get("state") {
                    q.append_pair("state", st);
                }
                match c.iss_on_redirect {
                    Iss::Correct => {
                        q.append_pair("iss", &issuer);
                    }
                    Iss::Wrong => {
                        q.append_pair("iss", "https://evil.example");
                    }
                    Iss::Missing => {}
                }
            }
            Response::builder()
                .status(StatusCode::FOUND)
                .header("location", location.to_string())
                .body(Body::empty())
                .unwrap()
        }
        ("POST", "/register") if c.dcr => {
            let req = recorded.json.clone().unwrap_or(Value::Null);
            s.counter += 1;
            let id = format!("dyn-{}", s.counter);
            let method = req["token_endpoint_auth_method"]
                .as_str()
                .unwrap_or("client_secret_basic")
                .to_string();
            let secret = (method != "none").then(|| format!("dyn-secret-{}", s.counter));
            s.registered.insert(id.clone(), secret.clone());
            let mut answer = json!({
                "client_id": id,
                "redirect_uris": req["redirect_uris"],
                "token_endpoint_auth_method": method,
            });
            if let Some(secret) = secret {
                answer["client_secret"] = json!(secret);
            }
            json_response(StatusCode::CREATED, answer)
        }
        ("POST", "/token") => {
            let form = &recorded.form;
            // Client authentication: Basic, or the body.
            let (client_id, secret) = match &recorded.authorization {
                Some(h) if h.starts_with("Basic ") => {
                    let raw = base64::engine::general_purpose::STANDARD
                        .decode(&h[6..])
                        .unwrap();
                    let text = String::from_utf8(raw).unwrap();
                    let (id, secret) = text.split_once(':').unwrap();
                    let dec = |s: &str| {
                        url::form_urlencoded::parse(format!("x={s}").as_bytes())
                            .next()
                            .unwrap()
                            .1
                            .into_owned()
                    };
                    (dec(id), Some(dec(secret)))
                }
                _ => (
                    form.get("client_id").cloned().unwrap_or_default(),
                    form.get("client_secret").cloned(),
                ),
            };
            let expected = match s.registered.get(&client_id) {
                Some(secret) => secret.clone(),
                // A metadata-document client is a public one (token_endpoint_auth_method none).
                None if c.cimd && client_id.contains("://") => None,
                None => match c.clients.get(&client_id) {
                    Some(secret) if secret.is_empty() => None,
                    Some(secret) => Some(secret.clone()),
                    None => return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client"),
                },
            };
            if expected != secret {
                return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
            }
            let Some(code) = form.get("code") else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_request");
            };
            let Some(grant) = s.codes.remove(code) else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(Sha256::digest(verifier.as_bytes()));
            if grant.client_id != client_id
                || challenge != grant.challenge
                || form.get("redirect_uri") != Some(&grant.redirect_uri)
                || form.get("resource") != grant.resource.as_ref()
            {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            s.counter += 1;
            let n = s.counter;
            let mut tokens = json!({
                "access_token": format!("access-{n}"),
                "token_type": "Bearer",
                "expires_in": c.expires_in,
            });
            if c.refresh_token {
                tokens["refresh_token"] = json!(format!("refresh-{n}"));
            }
            if let Some(scope) = grant.scope {
                tokens["scope"] = json!(scope);
            }
            if c.slack_shape {
                tokens = json!({ "ok": true, "app_id": "A1", "authed_user": tokens });
            }
            json_response(StatusCode::OK, tokens)
        }
        _ => not_found(),
    }
}
