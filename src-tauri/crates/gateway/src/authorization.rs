//! The gateway as an MCP-OAuth protected resource with Patchbay as its authorization server, so
//! a client that speaks MCP authorization needs only the gateway's URL: no secret pasted.
//!
//! - A request without a usable secret is answered 401 with
//!   `WWW-Authenticate: Bearer resource_metadata="…/.well-known/oauth-protected-resource/mcp[/NAME]"`
//!   (RFC 9728); that document names the gateway itself (issuer `http://HOST/oauth`) as the
//!   authorization server, whose RFC 8414 metadata is at
//!   `/.well-known/oauth-authorization-server/oauth` (and at the root, for clients that look
//!   only there).
//! - A client whose id is an https URL is described by the Client ID Metadata Document there,
//!   fetched when its consent page opens (`metadata_document`; the metadata says
//!   `client_id_metadata_document_supported`). Others register dynamically (`/oauth/register`,
//!   RFC 7591; public clients, PKCE S256 only). Registrations are kept in
//!   `gateway-oauth-clients.json` (no secrets in it; at most [`MAX_REGISTRATIONS`]).
//! - `/oauth/authorize` is Patchbay's consent page, in the browser the client opened: which
//!   client wants which connectors, every connector in use or only some (`--only`), Allow or
//!   Deny. It is behind the gateway's Host and Origin gates, its Allow must come from the page
//!   itself (same `Origin`, `Sec-Fetch-Site` when sent), and it cannot be framed
//!   (`frame-ancestors 'none'`, `X-Frame-Options: DENY`).
//! - `/oauth/token` trades the code (once, within a minute, with its PKCE verifier) for a gateway
//!   client (`clients`: the same store as `gateway client add`, hashes only, listed and
//!   revocable alike) whose secret is an access token that lapses in an hour, renewed with a
//!   rotating refresh token. `/oauth/revoke` (RFC 7009) forgets it.
//!
//! - The same request waits in the Connectors window ([`ConsentDesk`], for the app that runs
//!   the gateway in its process): answered there, the page learns it by asking
//!   `/oauth/authorize/answer` each second and follows the answer to the client.
//!
//! Pending consents and codes are kept in memory only: a gateway restart in the middle of a
//! consent means clicking Authorize again, never a token lost.

mod desk;
mod metadata_document;
mod page;
mod registrations;

pub use desk::{ConsentDesk, ConsentDeskError, ConsentNotices, ConsentRequest};

use crate::clients::Consent;
use crate::connections::ConnectionEnds;
use crate::server::GatewayState;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use patchbay_catalog::own_gateway::{gateway_url, GatewayEndpoint, GatewayUrl};
use registrations::{Registration, Registrations};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use registrations::{MAX_REGISTRATIONS, REGISTRATIONS_FILE};

/// The issuer's path under the gateway's origin.
const ISSUER_PATH: &str = "/oauth";
/// How long a consent page stays answerable.
const CONSENT_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// How long an authorization code can be traded (RFC 6749 recommends at most 10 minutes).
const CODE_LIFETIME: Duration = Duration::from_secs(60);
/// The most consents (and codes) waiting at once; past it the oldest goes.
const MAX_WAITING: usize = 64;

/// What a consent page was opened for.
#[derive(Debug, Clone)]
struct Pending {
    at: Instant,
    client: Registration,
    redirect_uri: String,
    state: Option<String>,
    code_challenge: String,
    /// The one connector the client asked for (`resource` `/mcp/NAME`); `None`: the aggregate.
    connector: Option<String>,
    resource: Option<String>,
    issuer: String,
}

/// A code issued by an Allow, waiting for its token request.
#[derive(Debug, Clone)]
struct IssuedCode {
    at: Instant,
    consent: Consent,
    redirect_uri: String,
    code_challenge: String,
    resource: Option<String>,
}

/// A consent answered elsewhere than its page (the window): where its page sends the browser.
#[derive(Debug, Clone)]
struct Answered {
    at: Instant,
    redirect: String,
}

/// How a consent is answered: Allow, given every connector in use (`None`) or only some, or
/// Deny.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsentAnswer {
    Allow { only: Option<Vec<String>> },
    Deny,
}

/// The authorization server's state: registrations on disk, consents and codes in memory.
pub(crate) struct Authorization {
    registrations: Registrations,
    pending: Mutex<HashMap<String, Pending>>,
    codes: Mutex<HashMap<String, IssuedCode>>,
    answered: Mutex<HashMap<String, Answered>>,
    /// Bumped whenever a consent starts waiting or stops: the window's cue to look again.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Authorization {
    pub(crate) fn new(data_dir: &std::path::Path) -> Authorization {
        Authorization {
            registrations: Registrations::new(data_dir),
            pending: Mutex::default(),
            codes: Mutex::default(),
            answered: Mutex::default(),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// Whether `path` is one of the authorization routes, which need no client secret.
pub(crate) fn is_open_path(path: &str) -> bool {
    path.starts_with("/.well-known/") || path == ISSUER_PATH || path.starts_with("/oauth/")
}

/// The routes, for the gateway's router.
pub(crate) fn routes() -> axum::Router<Arc<GatewayState>> {
    axum::Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/{*path}",
            get(protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server/oauth",
            get(server_metadata),
        )
        .route("/oauth/register", post(register))
        .route("/oauth/authorize", get(consent_page).post(decide))
        .route("/oauth/authorize/answer", get(answer_for_page))
        .route("/oauth/token", post(token))
        .route("/oauth/revoke", post(revoke))
}

/// `http://HOST` as the client addressed the gateway (the Host gate has checked it is ours).
fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_ascii_lowercase();
    format!("http://{host}")
}

/// The `resource_metadata` URL for a request to `path` (`/mcp`, `/mcp/NAME…`).
pub(crate) fn resource_metadata_url(headers: &HeaderMap, path: &str) -> String {
    format!(
        "{}/.well-known/oauth-protected-resource{}",
        origin(headers),
        resource_path(path)
    )
}

/// `/mcp` or `/mcp/NAME` for a request path under them.
fn resource_path(path: &str) -> String {
    match path.strip_prefix("/mcp/") {
        Some(rest) => match rest.split('/').next() {
            Some(name) if !name.is_empty() => format!("/mcp/{name}"),
            _ => "/mcp".into(),
        },
        None => "/mcp".into(),
    }
}

async fn protected_resource(headers: HeaderMap, uri: axum::http::Uri) -> Response {
    let asked = uri
        .path()
        .strip_prefix("/.well-known/oauth-protected-resource")
        .unwrap_or("");
    if !(asked.is_empty() || asked == "/mcp" || asked.starts_with("/mcp/")) {
        return oauth_error(StatusCode::NOT_FOUND, "not_found", "no such resource here");
    }
    let origin = origin(&headers);
    no_store(axum::Json(json!({
        "resource": format!("{origin}{}", resource_path(asked)),
        "authorization_servers": [format!("{origin}{ISSUER_PATH}")],
        "bearer_methods_supported": ["header"],
        "resource_name": "Patchbay gateway",
    })))
}

async fn server_metadata(headers: HeaderMap) -> Response {
    let issuer = format!("{}{ISSUER_PATH}", origin(&headers));
    no_store(axum::Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "revocation_endpoint": format!("{issuer}/revoke"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "client_id_metadata_document_supported": true,
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true,
        "service_documentation": "https://patchbay.dev/docs/gateway",
    })))
}

async fn register(State(state): State<Arc<GatewayState>>, body: axum::body::Bytes) -> Response {
    let Ok(asked) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "the registration request is not a JSON object",
        );
    };
    match state
        .authorization
        .registrations
        .register(&asked, chrono::Utc::now())
    {
        Ok(registered) => no_store((StatusCode::CREATED, axum::Json(registered.answer()))),
        Err(why) => oauth_error(StatusCode::BAD_REQUEST, why.code(), &why.to_string()),
    }
}

/// The consent page: the request checked, then what it asks shown with Allow and Deny.
async fn consent_page(
    State(state): State<Arc<GatewayState>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let get = |k: &str| query.get(k).map(String::as_str).filter(|v| !v.is_empty());
    // Until the client and its redirect are known, errors are shown, never redirected.
    let Some(client_id) = get("client_id") else {
        return page::problem("The request names no client (client_id is missing).");
    };
    let client = match state.authorization.registrations.find(client_id) {
        Some(registered) => registered,
        // A Client ID Metadata Document: the URL is the client, described where it points.
        None if metadata_document::is_document_url(client_id) => {
            match metadata_document::fetch(client_id).await {
                Ok(described) => described,
                Err(why) => {
                    tracing::info!("a client's metadata document was refused: {why}");
                    return page::problem(&format!(
                        "The client asking cannot be used: {why}."
                    ));
                }
            }
        }
        None => {
            return page::problem(
                "The client asking is not registered with Patchbay's gateway (or was forgotten). Connect it again.",
            )
        }
    };
    let redirect_uri = match get("redirect_uri") {
        Some(uri) => uri.to_owned(),
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => return page::problem("The request names no redirect_uri."),
    };
    if !client.redirect_uris.contains(&redirect_uri) {
        return page::problem(
            "The request's redirect_uri is not one the client registered: it is not sent there.",
        );
    }
    let issuer = format!("{}{ISSUER_PATH}", origin(&headers));
    let state_param = get("state").map(str::to_owned);
    let refuse = |error: &str, description: &str| {
        redirect_with(
            &redirect_uri,
            &[
                ("error", Some(error)),
                ("error_description", Some(description)),
                ("state", state_param.as_deref()),
                ("iss", Some(&issuer)),
            ],
        )
    };
    if get("response_type") != Some("code") {
        return refuse(
            "unsupported_response_type",
            "only the authorization code flow",
        );
    }
    let (Some(challenge), Some("S256")) = (get("code_challenge"), get("code_challenge_method"))
    else {
        return refuse("invalid_request", "PKCE with S256 is required");
    };
    let resource = get("resource").map(str::to_owned);
    let connector = match resource.as_deref().map(|r| target_of(r, state.port)) {
        None => None,
        Some(Ok(connector)) => connector,
        Some(Err(())) => {
            return refuse(
                "invalid_target",
                "the resource is not this Patchbay gateway's /mcp or /mcp/NAME",
            )
        }
    };
    let pending = Pending {
        at: Instant::now(),
        client,
        redirect_uri,
        state: state_param.clone(),
        code_challenge: challenge.to_owned(),
        connector,
        resource,
        issuer: issuer.clone(),
    };
    let in_use = connectors_in_use(&state).await;
    let id = match random_token("pbreq_") {
        Ok(id) => id,
        Err(e) => return page::problem(&format!("Patchbay cannot draw a random number: {e}")),
    };
    let shown = page::consent(&id, &pending, &in_use);
    remember(&state.authorization.pending, id, pending, |p| p.at);
    state.authorization.changed();
    shown
}

/// The consent page asking whether its request was answered elsewhere: 200 with where to go,
/// 204 while it waits, 404 once it is gone (answered on the page itself, or expired).
async fn answer_for_page(
    State(state): State<Arc<GatewayState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(id) = query.get("request") else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "request is missing",
        );
    };
    let answered = lock(&state.authorization.answered).remove(id);
    if let Some(answered) = answered.filter(|a| a.at.elapsed() < CONSENT_LIFETIME) {
        return no_store(axum::Json(json!({ "redirect": answered.redirect })));
    }
    let waiting = lock(&state.authorization.pending)
        .get(id)
        .is_some_and(|p| p.at.elapsed() < CONSENT_LIFETIME);
    match waiting {
        true => no_store(StatusCode::NO_CONTENT),
        false => oauth_error(StatusCode::NOT_FOUND, "not_found", "no such request waits"),
    }
}

/// Settle `pending` with `answer`: the URL its browser goes to next (a code, or
/// `access_denied`), or why it cannot be.
fn settle(state: &GatewayState, pending: Pending, answer: ConsentAnswer) -> Result<String, String> {
    state.authorization.changed();
    let only = match answer {
        ConsentAnswer::Deny => {
            return redirect_url(
                &pending.redirect_uri,
                &[
                    ("error", Some("access_denied")),
                    ("error_description", Some("the user denied the request")),
                    ("state", pending.state.as_deref()),
                    ("iss", Some(&pending.issuer)),
                ],
            )
        }
        // A consent for one connector's URL is for that one, whatever else was said.
        ConsentAnswer::Allow { only } => match &pending.connector {
            Some(one) => Some(vec![one.clone()]),
            None => only,
        },
    };
    let code =
        random_token("pbgwc_").map_err(|e| format!("Patchbay cannot draw a random number: {e}"))?;
    let issued = IssuedCode {
        at: Instant::now(),
        consent: Consent {
            client_id: pending.client.client_id.clone(),
            client_name: pending.client.client_name.clone(),
            only,
        },
        redirect_uri: pending.redirect_uri.clone(),
        code_challenge: pending.code_challenge.clone(),
        resource: pending.resource.clone(),
    };
    remember(&state.authorization.codes, code.clone(), issued, |c| c.at);
    tracing::info!(
        client = pending.client.client_name,
        "a client was allowed through the gateway"
    );
    redirect_url(
        &pending.redirect_uri,
        &[
            ("code", Some(&code)),
            ("state", pending.state.as_deref()),
            ("iss", Some(&pending.issuer)),
        ],
    )
}

/// Allow or Deny, posted by the consent page.
async fn decide(
    State(state): State<Arc<GatewayState>>,
    ends: Option<axum::Extension<ConnectionEnds>>,
    headers: HeaderMap,
    axum::Form(form): axum::Form<Vec<(String, String)>>,
) -> Response {
    let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    // Only the page itself may answer it: a page elsewhere (even on loopback) posting a form
    // here would otherwise consent on the user's behalf.
    let own = origin(&headers);
    let same_origin = headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .is_some_and(|o| o.eq_ignore_ascii_case(&own));
    let fetch_site_ok = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v == "same-origin");
    if !same_origin || !fetch_site_ok {
        return page::refused(
            StatusCode::FORBIDDEN,
            "This answer did not come from Patchbay's own consent page.",
        );
    }
    // Any local user can reach loopback: on Linux, only this user's browser may answer.
    if let Some(stranger) = ends.and_then(|axum::Extension(ends)| foreign_uid(ends)) {
        tracing::warn!(
            uid = stranger,
            "a consent answer came from another user's program; refused"
        );
        return page::refused(
            StatusCode::FORBIDDEN,
            "This answer came from another user's program on this computer.",
        );
    }
    let Some(id) = field("request") else {
        return page::problem("The answer names no request.");
    };
    let pending = lock(&state.authorization.pending).remove(id);
    let Some(pending) = pending.filter(|p| p.at.elapsed() < CONSENT_LIFETIME) else {
        return page::problem(
            "This request was answered already or has expired. Start again from the client.",
        );
    };
    let answer = match (field("decision"), field("access")) {
        (Some("allow"), Some("some")) => ConsentAnswer::Allow {
            only: Some(
                form.iter()
                    .filter(|(n, _)| n == "connector")
                    .map(|(_, v)| v.clone())
                    .collect(),
            ),
        },
        (Some("allow"), _) => ConsentAnswer::Allow { only: None },
        _ => ConsentAnswer::Deny,
    };
    match settle(&state, pending, answer) {
        Ok(next) => see_other(next),
        Err(why) => page::problem(&why),
    }
}

async fn token(
    State(state): State<Arc<GatewayState>>,
    headers: HeaderMap,
    axum::Form(form): axum::Form<HashMap<String, String>>,
) -> Response {
    let get = |k: &str| form.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let Some(client_id) = get("client_id")
        .map(str::to_owned)
        .or_else(|| basic_user(&headers))
    else {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "client_id is missing",
        );
    };
    let now = chrono::Utc::now();
    let clients = &state.clients;
    let issued = match get("grant_type") {
        Some("authorization_code") => {
            let Some(code) = get("code") else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "code is missing",
                );
            };
            // A code is good once, whatever happens next.
            let found = lock(&state.authorization.codes).remove(code);
            let Some(found) = found.filter(|c| c.at.elapsed() < CODE_LIFETIME) else {
                return invalid_grant("the code is unknown, used or expired");
            };
            if found.consent.client_id != client_id {
                return invalid_grant("the code was issued to another client");
            }
            if get("redirect_uri").is_some_and(|r| r != found.redirect_uri) {
                return invalid_grant("redirect_uri differs from the authorization request's");
            }
            if !pkce_matches(get("code_verifier").unwrap_or(""), &found.code_challenge) {
                return invalid_grant("the code_verifier does not match the code_challenge");
            }
            if let (Some(asked), Some(granted)) = (get("resource"), &found.resource) {
                if target_of(asked, state.port) != target_of(granted, state.port) {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_target",
                        "the resource differs from the one consented to",
                    );
                }
            }
            clients.grant(&found.consent, now).map(Some)
        }
        Some("refresh_token") => {
            let Some(refresh) = get("refresh_token") else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "refresh_token is missing",
                );
            };
            clients.renew(&client_id, refresh, now)
        }
        _ => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "authorization_code or refresh_token",
            )
        }
    };
    match issued {
        Ok(Some(tokens)) => {
            let expires_in = tokens
                .record
                .oauth
                .as_ref()
                .map(|g| (g.access_expires_at - now).num_seconds())
                .unwrap_or(0);
            no_store(axum::Json(json!({
                "access_token": tokens.access_token.expose(),
                "token_type": "Bearer",
                "expires_in": expires_in,
                "refresh_token": tokens.refresh_token.expose(),
            })))
        }
        Ok(None) => invalid_grant("the refresh token is unknown, revoked or rotated out"),
        Err(e) => {
            tracing::error!("the gateway cannot record a client's tokens: {e}");
            oauth_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "the gateway cannot write its clients file",
            )
        }
    }
}

async fn revoke(
    State(state): State<Arc<GatewayState>>,
    axum::Form(form): axum::Form<HashMap<String, String>>,
) -> Response {
    let Some(token) = form.get("token").filter(|t| !t.is_empty()) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "token is missing",
        );
    };
    match state.clients.revoke_token(token) {
        // RFC 7009 §2.2: an unknown token is answered 200 too.
        Ok(_) => StatusCode::OK.into_response(),
        Err(e) => {
            tracing::error!("the gateway cannot revoke a client: {e}");
            oauth_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "the gateway cannot write its clients file",
            )
        }
    }
}

/// The uid at the other end of `ends` when it is known and not ours: a connection from another
/// local user. Where it cannot be told (not Linux) nothing is refused by it.
fn foreign_uid(ends: ConnectionEnds) -> Option<u32> {
    let theirs = patchbay_oauth::proc_net::peer_uid(ends.peer, ends.local)?;
    (Some(theirs) != patchbay_oauth::proc_net::own_uid()).then_some(theirs)
}

/// Which connector `resource` names: `Ok(None)` the aggregate, `Ok(Some(NAME))` one connector,
/// `Err` something that is not this gateway (the one rule: `own_gateway::gateway_url`).
fn target_of(resource: &str, port: u16) -> Result<Option<String>, ()> {
    match gateway_url(resource) {
        Some(GatewayUrl { port: p, endpoint }) if p == port => Ok(match endpoint {
            GatewayEndpoint::Aggregate => None,
            GatewayEndpoint::Connector(name) => Some(name),
        }),
        _ => Err(()),
    }
}

/// The connectors in use, as (name, title): the read resolving uses, not a whole status.
async fn connectors_in_use(state: &Arc<GatewayState>) -> Vec<(String, String)> {
    let patchbay = state.upstreams.patchbay().clone();
    tokio::task::spawn_blocking(move || {
        let (catalog, names) = patchbay.catalog_in_use();
        names
            .into_iter()
            .map(|name| {
                let title = catalog
                    .servers()
                    .find(|entry| entry.name.as_str() == name)
                    .map(|entry| entry.display_title().to_owned())
                    .unwrap_or_else(|| name.clone());
                (name, title)
            })
            .collect()
    })
    .await
    .unwrap_or_default()
}

/// RFC 7636: BASE64URL(SHA256(verifier)) is the challenge; the verifier is 43 to 128 chars.
fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    if !(43..=128).contains(&verifier.len()) {
        return false;
    }
    let digest = Sha256::digest(verifier.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest) == challenge
}

/// The client id of `Authorization: Basic` (a public client may send one with no secret).
fn basic_user(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let user = text.split(':').next()?;
    // RFC 6749 §2.3.1: the id is form-encoded inside Basic.
    url::form_urlencoded::parse(format!("u={user}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
}

/// Keep `value` under `key`, dropping what expired and, past [`MAX_WAITING`], the oldest.
fn remember<T>(map: &Mutex<HashMap<String, T>>, key: String, value: T, at: impl Fn(&T) -> Instant) {
    let mut map = lock(map);
    map.retain(|_, v| at(v).elapsed() < CONSENT_LIFETIME);
    while map.len() >= MAX_WAITING {
        let oldest = map
            .iter()
            .min_by_key(|(_, v)| at(v))
            .map(|(k, _)| k.clone());
        match oldest {
            Some(k) => map.remove(&k),
            None => break,
        };
    }
    map.insert(key, value);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn random_token(prefix: &str) -> Result<String, getrandom::Error> {
    let mut random = [0u8; 32];
    getrandom::getrandom(&mut random)?;
    Ok(format!("{prefix}{}", crate::clients::hex(&random)))
}

/// 303 to `uri` with `params` added to its query.
fn redirect_with(uri: &str, params: &[(&str, Option<&str>)]) -> Response {
    match redirect_url(uri, params) {
        Ok(next) => see_other(next),
        Err(why) => page::problem(&why),
    }
}

/// `uri` with `params` added to its query.
fn redirect_url(uri: &str, params: &[(&str, Option<&str>)]) -> Result<String, String> {
    let mut url =
        url::Url::parse(uri).map_err(|_| "The client's redirect_uri is not a URL.".to_owned())?;
    {
        let mut query = url.query_pairs_mut();
        for (k, v) in params {
            if let Some(v) = v {
                query.append_pair(k, v);
            }
        }
    }
    Ok(url.to_string())
}

fn see_other(next: String) -> Response {
    no_store((StatusCode::SEE_OTHER, [(header::LOCATION, next)]))
}

fn invalid_grant(why: &str) -> Response {
    oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why)
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    no_store((
        status,
        axum::Json(json!({ "error": error, "error_description": description })),
    ))
}

/// `body` with `Cache-Control: no-store` (tokens, codes and registrations are never cached).
fn no_store(body: impl IntoResponse) -> Response {
    let mut answer = body.into_response();
    answer.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_names_the_aggregate_one_connector_or_nothing_of_ours() {
        assert_eq!(target_of("http://127.0.0.1:3119/mcp", 3119), Ok(None));
        assert_eq!(target_of("http://localhost:3119/mcp/", 3119), Ok(None));
        assert_eq!(
            target_of("http://[::1]:3119/mcp/notion", 3119),
            Ok(Some("notion".into()))
        );
        for bad in [
            "http://127.0.0.1:3118/mcp",
            "https://127.0.0.1:3119/mcp",
            "http://evil.example:3119/mcp",
            "http://127.0.0.1:3119/other",
            "http://127.0.0.1:3119/mcp/a/b",
            "not a url",
        ] {
            assert_eq!(target_of(bad, 3119), Err(()), "{bad}");
        }
    }

    #[test]
    fn pkce_takes_only_the_verifier_of_its_challenge() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_matches(verifier, challenge));
        assert!(!pkce_matches(&verifier.replace('d', "e"), challenge));
        assert!(!pkce_matches("short", challenge));
    }

    #[test]
    fn the_metadata_url_names_the_resource_the_request_was_for() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "LOCALHOST:3119".parse().unwrap());
        assert_eq!(
            resource_metadata_url(&headers, "/mcp/notion/message"),
            "http://localhost:3119/.well-known/oauth-protected-resource/mcp/notion"
        );
        assert_eq!(
            resource_metadata_url(&headers, "/mcp"),
            "http://localhost:3119/.well-known/oauth-protected-resource/mcp"
        );
    }
}
