//! Loopback authorization servers for the month soak (`month_soak.rs`): real HTTP on 127.0.0.1,
//! a refresh token rotated on every use, and the whole token family revoked when a spent one
//! comes back, unless the server's reuse grace covers it. Token lifetimes are per family;
//! expiry runs on the soak's injected clock (epoch milliseconds in an `AtomicI64`).
//!
//! Each server keeps a ledger of every refresh token presented (who sent it, from the
//! User-Agent; when; what it did) and of how each token was spent (by whom, and whether the
//! answer carrying its successor was lost), so the soak can say why a token was presented twice
//! or a family revoked, and whether a request whose answer was lost had been processed.
//!
//! Faults: a server-wide outage while set (503, 429 with `Retry-After`, or a hang before the
//! grant runs), for every client; and a lost answer armed for the next refresh Patchbay sends
//! (a hang before processing, a hang after rotating, a reset mid-body after rotating).

#![allow(dead_code)]

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Who sent a request, from its User-Agent (Patchbay's `Http` says `Patchbay/<version>`; the
/// soak's simulated runtimes say `claude-code-sim/<n>` and `codex-sim/<n>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Who {
    Patchbay,
    ClaudeCode(u8),
    Codex(u8),
    Other,
}

impl Who {
    fn of(headers: &HeaderMap) -> Who {
        let ua = headers
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if ua.starts_with("Patchbay/") {
            Who::Patchbay
        } else if let Some(n) = ua.strip_prefix("claude-code-sim/") {
            Who::ClaudeCode(n.parse().unwrap_or(0))
        } else if let Some(n) = ua.strip_prefix("codex-sim/") {
            Who::Codex(n.parse().unwrap_or(0))
        } else {
            Who::Other
        }
    }

    pub fn label(self) -> String {
        match self {
            Who::Patchbay => "Patchbay".into(),
            Who::ClaudeCode(n) => format!("Claude Code session {n}"),
            Who::Codex(n) => format!("Codex session {n}"),
            Who::Other => "another client".into(),
        }
    }

    pub fn is_runtime(self) -> bool {
        matches!(self, Who::ClaudeCode(_) | Who::Codex(_))
    }
}

/// How a server treats a spent refresh token presented again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grace {
    /// Never forgiven: the family is revoked (OAuth 2.1's advice).
    None,
    /// Within this long of its rotation the spent token gets the pair its rotation minted again,
    /// while that pair is unused (a grace period, as Okta's).
    Window(chrono::Duration),
    /// The spent token may be presented once more, at any time, while its successor is unused
    /// (Keycloak's "refresh token max reuse" of 1).
    OnceWhileUnused,
}

impl Grace {
    pub fn describe(self) -> String {
        match self {
            Grace::None => "no reuse grace".into(),
            Grace::Window(d) => format!("{} s reuse grace", d.num_seconds()),
            Grace::OnceWhileUnused => "one reuse while the successor is unused".into(),
        }
    }
}

/// A server-wide outage, for every client, while set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outage {
    /// 503 with an HTML page; nothing processed.
    ServerError,
    /// 429 with `Retry-After`; nothing processed.
    TooManyRequests { retry_after_s: u64 },
    /// Accepted and never answered (a proxy whose upstream is down); nothing processed.
    Hang,
}

/// The answer to one request lost, armed for the next refresh Patchbay sends to this server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LostAnswer {
    /// Hangs before the grant runs: the token stays live.
    HangBeforeProcessing,
    /// Rotates, then never answers.
    HangAfterRotating,
    /// Rotates, sends half the body, then resets the connection.
    ResetAfterRotating,
}

impl LostAnswer {
    /// Whether the server ran the grant (spent the token) before the answer was lost.
    pub fn processed(self) -> bool {
        !matches!(self, LostAnswer::HangBeforeProcessing)
    }

    pub fn label(self) -> &'static str {
        match self {
            LostAnswer::HangBeforeProcessing => "hang before the server processed it",
            LostAnswer::HangAfterRotating => "hang after the server rotated",
            LostAnswer::ResetAfterRotating => "reset mid-body after the server rotated",
        }
    }
}

/// What a presented refresh token did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Rotated,
    /// A spent token the grace covered: the pair its rotation minted, again.
    Graced,
    /// A spent token outside any grace: the family is revoked now.
    Reuse,
    /// The family had been revoked before.
    Revoked,
    Unknown,
    Outage(Outage),
    /// The armed lost answer, before the grant ran.
    LostUnprocessed,
}

#[derive(Debug, Clone)]
pub struct Presentation {
    pub token: String,
    pub family: Option<String>,
    pub who: Who,
    pub at: i64,
    pub verdict: Verdict,
}

/// How a refresh token was spent.
#[derive(Debug, Clone)]
pub struct Spent {
    pub by: Who,
    pub at: i64,
    /// The answer carrying its successor was lost this way.
    pub lost: Option<LostAnswer>,
}

/// Why a family was revoked: the spent token presented again, by whom, when.
#[derive(Debug, Clone)]
pub struct Revocation {
    pub at: i64,
    pub by: Who,
    pub token: String,
}

#[derive(Debug)]
struct Family {
    current: String,
    generation: u32,
    lifetime_s: i64,
    revoked: Option<Revocation>,
    /// The last rotation: the token it spent, when, and the pair it minted.
    last: Option<(String, i64, String, String)>,
    graced_once: bool,
}

struct State {
    name: String,
    grace: Grace,
    clock: Arc<AtomicI64>,
    families: HashMap<String, Family>,
    /// refresh token -> family, for every token minted.
    owner: HashMap<String, String>,
    spent: HashMap<String, Spent>,
    /// access token -> (family, expires at in ms).
    access: HashMap<String, (String, i64)>,
    ledger: Vec<Presentation>,
    outage: Option<Outage>,
    armed: Option<LostAnswer>,
    /// Until when the last 429 asked clients to wait, and the requests that came sooner.
    retry_after_until: Option<i64>,
    early_after_429: Vec<Who>,
    /// Real delay before every token answer, after processing (to land a kill mid-flight).
    slow_answers: Option<Duration>,
    hang: Duration,
}

/// One authorization server on 127.0.0.1. Its `/token` takes refresh grants; its `/mcp` answers
/// 200 to a live access token and 401 otherwise (the resource the gateway's calls reach).
pub struct SoakAs {
    state: Arc<Mutex<State>>,
    pub base: String,
    pub name: String,
    pub grace: Grace,
}

impl SoakAs {
    pub async fn start(name: &str, grace: Grace, clock: Arc<AtomicI64>) -> SoakAs {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            name: name.to_string(),
            grace,
            clock,
            families: HashMap::new(),
            owner: HashMap::new(),
            spent: HashMap::new(),
            access: HashMap::new(),
            ledger: Vec::new(),
            outage: None,
            armed: None,
            retry_after_until: None,
            early_after_429: Vec::new(),
            slow_answers: None,
            hang: Duration::from_secs(10),
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
        SoakAs {
            state,
            base,
            name: name.to_string(),
            grace,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn token_endpoint(&self) -> String {
        format!("{}/token", self.base)
    }

    pub fn port(&self) -> u16 {
        self.base.rsplit(':').next().unwrap().parse().unwrap()
    }

    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// A new family whose tokens live `lifetime_s`, its first pair issued at `issued_at` (ms):
    /// `(access token, refresh token)`.
    pub fn seed(&self, family: &str, lifetime_s: i64, issued_at: i64) -> (String, String) {
        let mut s = self.lock();
        let access = format!("at-{family}-0");
        let refresh = format!("rt-{family}-0");
        s.owner.insert(refresh.clone(), family.to_string());
        s.access.insert(
            access.clone(),
            (family.to_string(), issued_at + lifetime_s * 1000),
        );
        s.families.insert(
            family.to_string(),
            Family {
                current: refresh.clone(),
                generation: 0,
                lifetime_s,
                revoked: None,
                last: None,
                graced_once: false,
            },
        );
        (access, refresh)
    }

    pub fn set_outage(&self, outage: Option<Outage>) {
        let mut s = self.lock();
        s.outage = outage;
    }

    pub fn outage(&self) -> Option<Outage> {
        self.lock().outage
    }

    pub fn arm(&self, lost: Option<LostAnswer>) {
        self.lock().armed = lost;
    }

    pub fn armed(&self) -> Option<LostAnswer> {
        self.lock().armed
    }

    pub fn set_slow_answers(&self, delay: Option<Duration>) {
        self.lock().slow_answers = delay;
    }

    /// The family's live refresh token (`None` when revoked).
    pub fn current(&self, family: &str) -> Option<String> {
        let s = self.lock();
        let f = s.families.get(family)?;
        f.revoked.is_none().then(|| f.current.clone())
    }

    pub fn revocation(&self, family: &str) -> Option<Revocation> {
        self.lock().families.get(family)?.revoked.clone()
    }

    pub fn spent(&self, token: &str) -> Option<Spent> {
        self.lock().spent.get(token).cloned()
    }

    pub fn ledger(&self) -> Vec<Presentation> {
        self.lock().ledger.clone()
    }

    pub fn early_after_429(&self) -> Vec<Who> {
        self.lock().early_after_429.clone()
    }
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
    match (method.as_str(), uri.path()) {
        ("POST", "/token") => token(state, form_of(&body), &headers).await,
        (_, "/mcp") => {
            let bearer = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            let s = state.lock().unwrap_or_else(|p| p.into_inner());
            let now = s.clock.load(Ordering::SeqCst);
            let live = s.access.get(bearer).is_some_and(|(family, expires)| {
                now < *expires && s.families.get(family).is_some_and(|f| f.revoked.is_none())
            });
            if live {
                json_response(200, json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
            } else {
                Response::builder()
                    .status(401)
                    .header("www-authenticate", "Bearer error=\"invalid_token\"")
                    .body(Body::empty())
                    .unwrap()
            }
        }
        _ => Response::builder().status(404).body(Body::empty()).unwrap(),
    }
}

/// What the token endpoint does after the ledger is written.
enum Plan {
    Respond(Response),
    Hang,
    Pair {
        access: String,
        refresh: String,
        expires_in: i64,
        lost: Option<LostAnswer>,
        slow: Option<Duration>,
    },
}

/// Runs the grant on `presented` at `now`: the pair to answer with, or the verdict of a refusal.
fn grant(
    s: &mut State,
    presented: &str,
    who: Who,
    now: i64,
) -> (Verdict, Option<String>, Option<(String, String, i64)>) {
    let Some(family) = s.owner.get(presented).cloned() else {
        return (Verdict::Unknown, None, None);
    };
    let grace = s.grace;
    let f = s.families.get_mut(&family).unwrap();
    if f.revoked.is_some() {
        return (Verdict::Revoked, Some(family), None);
    }
    if f.current == presented {
        f.generation += 1;
        let access = format!("at-{family}-{}", f.generation);
        let refresh = format!("rt-{family}-{}", f.generation);
        f.current = refresh.clone();
        f.last = Some((presented.to_string(), now, access.clone(), refresh.clone()));
        f.graced_once = false;
        let lifetime = f.lifetime_s;
        s.owner.insert(refresh.clone(), family.clone());
        s.access
            .insert(access.clone(), (family.clone(), now + lifetime * 1000));
        s.spent.insert(
            presented.to_string(),
            Spent {
                by: who,
                at: now,
                lost: None,
            },
        );
        return (
            Verdict::Rotated,
            Some(family),
            Some((access, refresh, lifetime)),
        );
    }
    // A spent token. The grace covers only the one just rotated, while its successor is unused.
    let graced = match (&f.last, grace) {
        (Some((spent, at, _, _)), Grace::Window(d)) => {
            spent == presented && now - at <= d.num_milliseconds()
        }
        (Some((spent, _, _, _)), Grace::OnceWhileUnused) => spent == presented && !f.graced_once,
        _ => false,
    };
    if graced {
        f.graced_once = true;
        let (_, _, access, refresh) = f.last.clone().unwrap();
        let expires = s.access.get(&access).map_or(now, |(_, e)| *e);
        let left = ((expires - now) / 1000).max(1);
        return (Verdict::Graced, Some(family), Some((access, refresh, left)));
    }
    f.revoked = Some(Revocation {
        at: now,
        by: who,
        token: presented.to_string(),
    });
    (Verdict::Reuse, Some(family), None)
}

async fn token(
    state: Arc<Mutex<State>>,
    form: HashMap<String, String>,
    headers: &HeaderMap,
) -> Response {
    let who = Who::of(headers);
    let presented = form.get("refresh_token").cloned().unwrap_or_default();
    let (plan, hang) = {
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        let now = s.clock.load(Ordering::SeqCst);
        let hang = s.hang;
        if let Some(until) = s.retry_after_until {
            if now < until {
                s.early_after_429.push(who);
            } else {
                s.retry_after_until = None;
            }
        }
        let family = s.owner.get(&presented).cloned();
        let note = |s: &mut State, verdict: Verdict, family: Option<String>| {
            s.ledger.push(Presentation {
                token: presented.clone(),
                family,
                who,
                at: now,
                verdict,
            })
        };
        let plan = if let Some(outage) = s.outage {
            note(&mut s, Verdict::Outage(outage), family);
            match outage {
                Outage::ServerError => Plan::Respond(
                    Response::builder()
                        .status(503)
                        .header("content-type", "text/html")
                        .body(Body::from("<h1>503 Service Unavailable</h1>"))
                        .unwrap(),
                ),
                Outage::TooManyRequests { retry_after_s } => {
                    s.retry_after_until = Some(now + retry_after_s as i64 * 1000);
                    Plan::Respond(
                        Response::builder()
                            .status(429)
                            .header("retry-after", retry_after_s.to_string())
                            .header("content-type", "application/json")
                            .body(Body::from(json!({"error": "slow_down"}).to_string()))
                            .unwrap(),
                    )
                }
                Outage::Hang => Plan::Hang,
            }
        } else if who == Who::Patchbay && s.armed == Some(LostAnswer::HangBeforeProcessing) {
            s.armed = None;
            note(&mut s, Verdict::LostUnprocessed, family);
            Plan::Hang
        } else {
            let (verdict, family, pair) = grant(&mut s, &presented, who, now);
            note(&mut s, verdict, family);
            match pair {
                Some((access, refresh, expires_in)) => {
                    // An armed lost answer takes the first grant Patchbay sends that rotates.
                    let lost = (who == Who::Patchbay && verdict == Verdict::Rotated)
                        .then(|| s.armed.take())
                        .flatten();
                    if let Some(lost) = lost {
                        if let Some(spent) = s.spent.get_mut(&presented) {
                            spent.lost = Some(lost);
                        }
                    }
                    Plan::Pair {
                        access,
                        refresh,
                        expires_in,
                        lost,
                        slow: s.slow_answers,
                    }
                }
                None => Plan::Respond(json_response(400, json!({"error": "invalid_grant"}))),
            }
        };
        (plan, hang)
    };
    match plan {
        Plan::Respond(response) => response,
        Plan::Hang => {
            tokio::time::sleep(hang).await;
            json_response(504, json!({"error": "temporarily_unavailable"}))
        }
        Plan::Pair {
            access,
            refresh,
            expires_in,
            lost,
            slow,
        } => {
            if let Some(delay) = slow {
                tokio::time::sleep(delay).await;
            }
            let answer = json!({
                "access_token": access,
                "refresh_token": refresh,
                "token_type": "Bearer",
                "expires_in": expires_in,
            });
            match lost {
                Some(LostAnswer::HangAfterRotating) | Some(LostAnswer::HangBeforeProcessing) => {
                    tokio::time::sleep(hang).await;
                    json_response(200, answer)
                }
                Some(LostAnswer::ResetAfterRotating) => {
                    let text = answer.to_string();
                    let half = text[..text.len() / 2].to_string();
                    Response::builder()
                        .status(200)
                        .header("content-type", "application/json")
                        .header("content-length", text.len().to_string())
                        .body(Body::from_stream(HalfThenReset {
                            first: Some(half),
                            failed: false,
                        }))
                        .unwrap()
                }
                None => json_response(200, answer),
            }
        }
    }
}

/// One chunk, then an error: hyper aborts the connection mid-body.
struct HalfThenReset {
    first: Option<String>,
    failed: bool,
}

impl futures_core::Stream for HalfThenReset {
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
