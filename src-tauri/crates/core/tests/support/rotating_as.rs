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
    _headers: HeaderMap,
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
        ("POST", "/token") => token(state, form).await,
        _ => Response::builder().status(404).body(Body::empty()).unwrap(),
    }
}

async fn token(state: Arc<Mutex<State>>, form: HashMap<String, String>) -> Response {
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
        if let Some(Fault::Status(..)) = fault {
            (fault, None, s.expires_in)
        } else if form.get("grant_type").map(String::as_str) != Some("refresh_token") {
            (fault, Some(Err("unsupported_grant_type")), s.expires_in)
        } else {
            let family = s.owner.get(&presented).cloned();
            let outcome = match family {
                None => Err("invalid_grant"),
                Some(family) => {
                    let f = &s.families[&family];
                    if f.revoked {
                        Err("invalid_grant")
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
