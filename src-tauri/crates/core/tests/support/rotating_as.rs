//! A rotating OAuth token endpoint on 127.0.0.1 with reuse detection and fault injection, for
//! the refresher's tests. Every refresh spends the presented refresh token and mints a new pair;
//! presenting a spent one is "reuse": counted, answered 400 `invalid_grant`, and the whole family
//! revoked (as OAuth 2.1 servers do). Faults are queued per request; a `Consume*` fault rotates
//! first and then loses the answer, the exact case where a retry would be reuse.

#![allow(dead_code)]

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::json;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone)]
pub enum Fault {
    /// Answer with this status, content type and body; nothing is spent.
    Status(u16, &'static str, String),
    /// Spend the token and mint the pair, then never answer (the client times out).
    ConsumeThenHang,
    /// Spend the token, send the headers and half a body, then reset.
    ConsumeThenReset,
    /// Spend the token and answer 200 with something that is not a token response.
    ConsumeThenGarbage,
    /// Never answer and never run the grant (a server stuck before processing): nothing spent.
    HangUnprocessed,
    /// 429 with `Retry-After: <seconds>`; nothing spent.
    RateLimited(u64),
}

#[derive(Debug, Default)]
struct Family {
    current: String,
    spent: Vec<String>,
    generation: u32,
    revoked: bool,
}

#[derive(Debug, Default)]
struct State {
    base: String,
    families: HashMap<String, Family>,
    /// refresh token -> family id, for every token ever minted.
    owner: HashMap<String, String>,
    faults: VecDeque<Fault>,
    /// Every refresh token presented, in order.
    presented: Vec<String>,
    /// Every token request's form.
    forms: Vec<HashMap<String, String>>,
    reuse_detected: usize,
    refreshes: usize,
    revoked: Vec<(String, String)>,
    revocation: bool,
    expires_in: u64,
    /// Fail this fraction of refreshes with a 503 (deterministic: every n-th).
    every_nth_503: Option<usize>,
    /// The scope the server granted: a `scope` asking for more is `invalid_scope` (RFC 6749
    /// §6), as oidc-provider answers for an `offline_access` it never granted.
    granted_scope: Option<String>,
    /// A server that insists on a `scope` parameter (`invalid_request` without one).
    require_scope: bool,
    /// A confidential client that authenticates only this way (`client_secret_post` or
    /// `client_secret_basic`); the other is `401 invalid_client`.
    client_auth: Option<(String, String, &'static str)>,
    /// Families issued to a given client: presented with another `client_id`, `invalid_grant`
    /// (nothing spent, nothing revoked).
    family_client: HashMap<String, String>,
    /// A reuse grace period: the token spent last in a family, presented again, gets the pair
    /// minted from it (as Okta's and Auth0's rotation allow) instead of revoking the family.
    reuse_grace: bool,
    /// The pair each family's last rotation minted (what a grace-period reuse answers).
    last_pair: HashMap<String, (String, String)>,
}

pub struct RotatingAs {
    state: Arc<Mutex<State>>,
    pub base: String,
}

impl RotatingAs {
    pub async fn start() -> RotatingAs {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        RotatingAs::serve(listener)
    }

    /// On a given port (the "refused, then up" retry test binds it late).
    pub async fn start_on(port: u16) -> RotatingAs {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        RotatingAs::serve(listener)
    }

    fn serve(listener: tokio::net::TcpListener) -> RotatingAs {
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            base: base.clone(),
            revocation: true,
            expires_in: 3600,
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
        RotatingAs { state, base }
    }

    pub fn token_endpoint(&self) -> String {
        format!("{}/token", self.base)
    }

    /// A new token family; returns its first refresh token.
    pub fn seed(&self, family: &str) -> String {
        let mut s = self.state.lock().unwrap();
        let token = format!("rt-{family}-0");
        s.owner.insert(token.clone(), family.to_string());
        s.families.insert(
            family.to_string(),
            Family {
                current: token.clone(),
                ..Family::default()
            },
        );
        token
    }

    pub fn push_fault(&self, fault: Fault) {
        self.state.lock().unwrap().faults.push_back(fault);
    }

    pub fn set_revocation(&self, on: bool) {
        self.state.lock().unwrap().revocation = on;
    }

    pub fn set_expires_in(&self, seconds: u64) {
        self.state.lock().unwrap().expires_in = seconds;
    }

    pub fn grant_scope(&self, scope: &str) {
        self.state.lock().unwrap().granted_scope = Some(scope.to_string());
    }

    pub fn require_scope(&self) {
        self.state.lock().unwrap().require_scope = true;
    }

    /// Only `method` (`client_secret_post` or `client_secret_basic`) authenticates this client.
    pub fn confidential(&self, client_id: &str, secret: &str, method: &'static str) {
        self.state.lock().unwrap().client_auth =
            Some((client_id.to_string(), secret.to_string(), method));
    }

    /// The family's tokens were issued to `client_id`.
    pub fn issue_to(&self, family: &str, client_id: &str) {
        self.state
            .lock()
            .unwrap()
            .family_client
            .insert(family.to_string(), client_id.to_string());
    }

    /// Presenting the family's last spent token again answers the pair minted from it.
    pub fn set_reuse_grace(&self, on: bool) {
        self.state.lock().unwrap().reuse_grace = on;
    }

    pub fn fail_every_nth_with_503(&self, n: Option<usize>) {
        self.state.lock().unwrap().every_nth_503 = n;
    }

    pub fn presented(&self) -> Vec<String> {
        self.state.lock().unwrap().presented.clone()
    }

    pub fn forms(&self) -> Vec<HashMap<String, String>> {
        self.state.lock().unwrap().forms.clone()
    }

    pub fn reuse_detected(&self) -> usize {
        self.state.lock().unwrap().reuse_detected
    }

    pub fn refreshes(&self) -> usize {
        self.state.lock().unwrap().refreshes
    }

    pub fn revoked(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().revoked.clone()
    }

    /// The family's live refresh token (None when revoked).
    pub fn current(&self, family: &str) -> Option<String> {
        let s = self.state.lock().unwrap();
        let f = s.families.get(family)?;
        (!f.revoked).then(|| f.current.clone())
    }

    /// Rotate a family as another client (a runtime) would, returning the new pair.
    pub fn rotate_elsewhere(&self, family: &str) -> (String, String) {
        let mut s = self.state.lock().unwrap();
        let current = s.families[family].current.clone();
        rotate(&mut s, family, &current)
    }
}

fn rotate(s: &mut State, family: &str, presented: &str) -> (String, String) {
    let f = s.families.get_mut(family).unwrap();
    f.generation += 1;
    f.spent.push(presented.to_string());
    let access = format!("at-{family}-{}", f.generation);
    let refresh = format!("rt-{family}-{}", f.generation);
    f.current = refresh.clone();
    s.owner.insert(refresh.clone(), family.to_string());
    s.last_pair
        .insert(family.to_string(), (access.clone(), refresh.clone()));
    s.refreshes += 1;
    (access, refresh)
}

fn form_of(body: &Bytes) -> HashMap<String, String> {
    url::form_urlencoded::parse(body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn json_response(status: u16, v: serde_json::Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(v.to_string()))
        .unwrap()
}

async fn handle(
    state: Arc<Mutex<State>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = form_of(&body);
    match (method.as_str(), uri.path()) {
        ("GET", "/.well-known/oauth-authorization-server") => {
            let s = state.lock().unwrap();
            let mut doc = json!({
                "issuer": s.base,
                "authorization_endpoint": format!("{}/authorize", s.base),
                "token_endpoint": format!("{}/token", s.base),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
            });
            if s.revocation {
                doc["revocation_endpoint"] = json!(format!("{}/revoke", s.base));
            }
            json_response(200, doc)
        }
        ("POST", "/revoke") => {
            let mut s = state.lock().unwrap();
            s.revoked.push((
                form.get("token").cloned().unwrap_or_default(),
                form.get("token_type_hint").cloned().unwrap_or_default(),
            ));
            if let Some(family) = form.get("token").and_then(|t| s.owner.get(t)).cloned() {
                if let Some(f) = s.families.get_mut(&family) {
                    f.revoked = true;
                }
            }
            Response::builder().status(200).body(Body::empty()).unwrap()
        }
        ("POST", "/token") => token(state, form, &headers).await,
        _ => Response::builder().status(404).body(Body::empty()).unwrap(),
    }
}

/// How the request authenticated its client: `(client_id, method, secret)`.
fn client_of(
    form: &HashMap<String, String>,
    headers: &HeaderMap,
) -> (String, &'static str, String) {
    use base64::Engine;
    if let Some(basic) = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(basic)
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&decoded).to_string();
        let (id, secret) = text.split_once(':').unwrap_or((&text, ""));
        let dec = |s: &str| {
            url::form_urlencoded::parse(format!("x={s}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        return (dec(id), "client_secret_basic", dec(secret));
    }
    let id = form.get("client_id").cloned().unwrap_or_default();
    match form.get("client_secret") {
        Some(secret) => (id, "client_secret_post", secret.clone()),
        None => (id, "none", String::new()),
    }
}

/// The request errors this server raises before looking at the refresh token.
fn refused_request(
    s: &State,
    form: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Option<(u16, &'static str)> {
    let (client_id, method, secret) = client_of(form, headers);
    if let Some((id, want_secret, want_method)) = &s.client_auth {
        if client_id == *id && (method != *want_method || secret != *want_secret) {
            return Some((401, "invalid_client"));
        }
    }
    match (form.get("scope"), &s.granted_scope) {
        (None, _) if s.require_scope => return Some((400, "invalid_request")),
        (Some(asked), Some(granted)) => {
            let granted: Vec<&str> = granted.split_whitespace().collect();
            if asked
                .split_whitespace()
                .any(|scope| !granted.contains(&scope))
            {
                return Some((400, "invalid_scope"));
            }
        }
        _ => {}
    }
    None
}

async fn token(
    state: Arc<Mutex<State>>,
    form: HashMap<String, String>,
    headers: &HeaderMap,
) -> Response {
    let presented = form.get("refresh_token").cloned().unwrap_or_default();
    let (fault, outcome, expires_in) = {
        let mut s = state.lock().unwrap();
        s.forms.push(form.clone());
        s.presented.push(presented.clone());
        let mut fault = s.faults.pop_front();
        if fault.is_none() {
            if let Some(n) = s.every_nth_503 {
                if s.presented.len().is_multiple_of(n) {
                    fault = Some(Fault::Status(503, "text/html", "<h1>503</h1>".into()));
                }
            }
        }
        if let Some(Fault::Status(..) | Fault::HangUnprocessed | Fault::RateLimited(_)) = fault {
            (fault, None, s.expires_in)
        } else if let Some((status, error)) = refused_request(&s, &form, headers) {
            let body = json!({ "error": error }).to_string();
            let refusal = Fault::Status(status, "application/json", body);
            (Some(refusal), None, s.expires_in)
        } else if form.get("grant_type").map(String::as_str) != Some("refresh_token") {
            (fault, Some(Err("unsupported_grant_type")), s.expires_in)
        } else {
            let family = s.owner.get(&presented).cloned();
            let outcome = match family {
                None => Err("invalid_grant"),
                Some(family) => {
                    let f = &s.families[&family];
                    let issued_to = s.family_client.get(&family);
                    let client_id = client_of(&form, headers).0;
                    // Issued to another client, or revoked: refused, nothing spent.
                    if f.revoked || issued_to.is_some_and(|c| *c != client_id) {
                        Err("invalid_grant")
                    } else if s.reuse_grace && f.spent.last() == Some(&presented) {
                        Ok(s.last_pair[&family].clone())
                    } else if f.current != presented {
                        // Reuse of a spent token: revoke the whole family.
                        s.reuse_detected += 1;
                        s.families.get_mut(&family).unwrap().revoked = true;
                        Err("invalid_grant")
                    } else {
                        Ok(rotate(&mut s, &family, &presented))
                    }
                }
            };
            (fault, Some(outcome), s.expires_in)
        }
    };
    if let Some(Fault::RateLimited(seconds)) = fault {
        return Response::builder()
            .status(429)
            .header("content-type", "application/json")
            .header("retry-after", seconds.to_string())
            .body(Body::from(r#"{"error":"slow_down"}"#))
            .unwrap();
    }
    if let Some(Fault::HangUnprocessed) = fault {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return json_response(504, json!({ "error": "server_error" }));
    }
    if let Some(Fault::Status(status, content_type, body)) = fault {
        return Response::builder()
            .status(status)
            .header("content-type", content_type)
            .body(Body::from(body))
            .unwrap();
    }
    let (access, refresh) = match outcome.expect("decided above") {
        Ok(pair) => pair,
        Err(error) => return json_response(400, json!({ "error": error })),
    };
    let answer = json!({
        "access_token": access,
        "refresh_token": refresh,
        "token_type": "Bearer",
        "expires_in": expires_in,
    });
    match fault {
        Some(Fault::ConsumeThenHang) => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            json_response(200, answer)
        }
        Some(Fault::ConsumeThenReset) => {
            let text = answer.to_string();
            let half = text[..text.len() / 2].to_string();
            let stream = futures_stream(half);
            Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .header("content-length", text.len().to_string())
                .body(Body::from_stream(stream))
                .unwrap()
        }
        Some(Fault::ConsumeThenGarbage) => Response::builder()
            .status(200)
            .header("content-type", "text/html")
            .body(Body::from("<html>upstream proxy error</html>"))
            .unwrap(),
        _ => json_response(200, answer),
    }
}

/// One chunk, then an error: hyper aborts the connection mid-body.
fn futures_stream(
    first: String,
) -> impl futures_core::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    struct Two {
        first: Option<String>,
        failed: bool,
    }
    impl futures_core::Stream for Two {
        type Item = Result<Bytes, std::io::Error>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            if let Some(first) = self.first.take() {
                return std::task::Poll::Ready(Some(Ok(Bytes::from(first))));
            }
            if !self.failed {
                self.failed = true;
                return std::task::Poll::Ready(Some(Err(std::io::Error::other("reset"))));
            }
            std::task::Poll::Ready(None)
        }
    }
    Two {
        first: Some(first),
        failed: false,
    }
}
