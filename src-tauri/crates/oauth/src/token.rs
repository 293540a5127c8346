//! Finishing a flow: the callback's checks (state, code, RFC 9207 `iss`), the code exchange with
//! the PKCE verifier, redirect URI and resource, as a public or confidential client, Slack's
//! `authed_user` shape, and storing the credential under the catalog's credential key.

use chrono::{DateTime, Utc};
use oauth2::{AuthorizationCode, PkceCodeVerifier};
use patchbay_catalog::CredentialKey;
use patchbay_vault::{
    ClientAuthMethod, CredentialRow, Grant, PendingFlow, Secret, TokenSet, Vault,
};
use serde_json::Value;

use crate::http::Http;
use crate::receiver::CallbackParams;
use crate::OAuthError;

/// A token endpoint's successful answer. Debug redacts the tokens.
#[derive(Debug, Clone)]
pub struct TokenResponse {
    pub access_token: Secret,
    pub refresh_token: Option<Secret>,
    pub expires_in: Option<u64>,
    pub scope: Option<String>,
}

/// A flow that stored its credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    pub connector: String,
    pub credential_key: CredentialKey,
    pub expires_at: Option<DateTime<Utc>>,
    /// No refresh token survives: the credential needs authorizing again when it lapses.
    pub one_shot: bool,
}

/// Reads a token response: standard (RFC 6749 §5.1), or Slack's, which nests the user token
/// under `authed_user` and reports failures as `{"ok": false, "error": ...}` with a 200.
pub fn parse_token_response(v: &Value) -> Result<TokenResponse, OAuthError> {
    if v.get("ok").and_then(Value::as_bool) == Some(false) {
        return Err(OAuthError::Token {
            error: text(v, "error").unwrap_or_else(|| "error".into()),
            description: None,
        });
    }
    let source = match (v.get("access_token"), v.get("authed_user")) {
        (None | Some(Value::Null), Some(user)) if user.get("access_token").is_some() => user,
        _ => v,
    };
    let access_token = text(source, "access_token")
        .map(Secret::new)
        .ok_or(OAuthError::NoAccessToken)?;
    let expires_in = match source.get("expires_in") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    };
    Ok(TokenResponse {
        access_token,
        refresh_token: text(source, "refresh_token").map(Secret::new),
        expires_in,
        scope: text(source, "scope"),
    })
}

pub(crate) fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// RFC 9207: when the server advertises `iss` on its redirects, a missing one is an error and a
/// present one must equal the issuer exactly. A present `iss` is always checked.
pub fn check_iss(flow: &PendingFlow, iss: Option<&str>) -> Result<(), OAuthError> {
    match iss {
        Some(got) if got != flow.issuer => Err(OAuthError::WrongIss {
            issuer: flow.issuer.clone(),
            got: got.to_string(),
        }),
        None if flow.iss_required => Err(OAuthError::MissingIss {
            issuer: flow.issuer.clone(),
        }),
        _ => Ok(()),
    }
}

/// The callback's checks, without consuming anything: the provider's error, the state (an
/// unexpired pending flow), the code, `iss`. Returns the flow, still stored.
pub fn check_callback(
    vault: &Vault,
    params: &CallbackParams,
    now: DateTime<Utc>,
) -> Result<PendingFlow, OAuthError> {
    if let Some(error) = &params.error {
        // The provider ended this flow (access_denied and the like): forget it.
        if let Some(state) = &params.state {
            if vault.pending_flow(state, now)?.is_some() {
                vault.delete_pending_flow(state)?;
            }
        }
        return Err(OAuthError::Denied {
            error: error.clone(),
            description: params.error_description.clone(),
        });
    }
    let state = params.state.as_deref().ok_or(OAuthError::MissingState)?;
    let flow = vault
        .pending_flow(state, now)?
        .ok_or(OAuthError::UnknownState)?;
    if params.code.is_none() {
        return Err(OAuthError::MissingCode);
    }
    check_iss(&flow, params.iss.as_deref())?;
    Ok(flow)
}

/// Completes a flow from its callback: checks it, takes the pending flow (single use),
/// exchanges the code and stores the credential. A check that fails leaves the flow pending.
///
/// A client refused at the token endpoint (`invalid_client` or a 401) is a lost registration
/// only when the registration was reused from an earlier flow: one made for this very flow
/// (created when it began) cannot have been forgotten, so the refusal is about how the client
/// authenticates, and is said as that.
pub async fn complete(
    http: &Http,
    vault: &Vault,
    params: CallbackParams,
    now: DateTime<Utc>,
) -> Result<Completed, OAuthError> {
    let checked = check_callback(vault, &params, now)?;
    let mut flow = vault
        .take_pending_flow(&checked.state, now)?
        .ok_or(OAuthError::UnknownState)?;
    let code = AuthorizationCode::new(params.code.ok_or(OAuthError::MissingCode)?);
    let (tokens, method) = match exchange(http, &flow, code).await {
        Ok(done) => done,
        Err(TokenFailure::ClientRefused(e)) if flow.client_registered => {
            let registration = vault.registration(&flow.issuer, &flow.redirect_uri)?;
            let reused = registration
                .as_ref()
                .is_some_and(|r| r.client_id == flow.client_id && r.created_at < flow.created_at);
            if reused {
                vault.delete_registration(&flow.issuer, &flow.redirect_uri)?;
                return Err(OAuthError::RegistrationForgotten {
                    issuer: flow.issuer.clone(),
                });
            }
            return Err(refused_fresh_client(e, &flow.token_auth_method));
        }
        Err(TokenFailure::ClientRefused(e)) | Err(TokenFailure::Other(e)) => return Err(e),
    };
    if method != flow.token_auth_method {
        // Remembered where it matters: the grant (every refresh and the revocation) and, for a
        // registered client, the registration the next authorization reuses.
        if flow.client_registered {
            if let Some(mut reg) = vault.registration(&flow.issuer, &flow.redirect_uri)? {
                if reg.client_id == flow.client_id {
                    reg.token_auth_method = Some(method.clone());
                    vault.put_registration(&reg)?;
                }
            }
        }
        flow.token_auth_method = method;
    }
    store(vault, &flow, tokens, now)
}

/// The token endpoint refused a client registered seconds ago: not a lost registration.
fn refused_fresh_client(e: OAuthError, method: &ClientAuthMethod) -> OAuthError {
    let tried = match method.other_secret_method() {
        Some(other) => format!("{method} and {other}"),
        None => method.to_string(),
    };
    let what = format!(
        "the server refused the client it registered moments ago (client authentication tried: {tried})"
    );
    match e {
        OAuthError::Token { error, description } => OAuthError::Token {
            error,
            description: Some(match description {
                Some(d) => format!("{d}; {what}"),
                None => what,
            }),
        },
        OAuthError::Status { status, .. } => OAuthError::Token {
            error: format!("HTTP {status}"),
            description: Some(what),
        },
        other => other,
    }
}

/// Why a token request failed: the client was refused (`invalid_client`, or any 401), or
/// anything else.
#[derive(Debug)]
pub enum TokenFailure {
    ClientRefused(OAuthError),
    Other(OAuthError),
}

impl TokenFailure {
    pub fn into_error(self) -> OAuthError {
        match self {
            TokenFailure::ClientRefused(e) | TokenFailure::Other(e) => e,
        }
    }
}

/// The code exchange (RFC 6749 §4.1.3 with PKCE and RFC 8707's resource), authenticated as
/// the flow's client; see [`token_request_with_fallback`]. Returns the tokens and the client
/// authentication method that worked. The code and the verifier are consumed.
pub async fn exchange(
    http: &Http,
    flow: &PendingFlow,
    code: AuthorizationCode,
) -> Result<(TokenResponse, ClientAuthMethod), TokenFailure> {
    let verifier = PkceCodeVerifier::new(flow.verifier.expose().to_string());
    let mut form: Vec<(&str, String)> = vec![
        ("grant_type", "authorization_code".into()),
        ("code", code.into_secret()),
        ("redirect_uri", flow.redirect_uri.clone()),
        ("code_verifier", verifier.into_secret()),
    ];
    if let Some(resource) = &flow.resource {
        form.push(("resource", resource.clone()));
    }
    token_request_with_fallback(
        http,
        &flow.token_endpoint,
        &flow.client_id,
        flow.client_secret.as_ref(),
        &flow.token_auth_method,
        form,
    )
    .await
}

/// A token request as `auth_method`; when the server refuses the client that way and it has a
/// secret sent by `client_secret_basic` or `client_secret_post`, once more the other way (servers
/// differ in which one they accept, whatever their registration answer or metadata said; client
/// authentication is checked before the grant, so the code is not spent by the refusal).
/// Returns the tokens and the method that worked.
pub async fn token_request_with_fallback(
    http: &Http,
    token_endpoint: &str,
    client_id: &str,
    client_secret: Option<&Secret>,
    auth_method: &ClientAuthMethod,
    form: Vec<(&str, String)>,
) -> Result<(TokenResponse, ClientAuthMethod), TokenFailure> {
    let first = token_request(
        http,
        token_endpoint,
        client_id,
        client_secret,
        auth_method,
        form.clone(),
    )
    .await;
    let refused = match first {
        Ok(tokens) => return Ok((tokens, auth_method.clone())),
        Err(TokenFailure::ClientRefused(e)) => e,
        Err(other) => return Err(other),
    };
    let Some(other) = client_secret.and(auth_method.other_secret_method()) else {
        return Err(TokenFailure::ClientRefused(refused));
    };
    tracing::info!(
        endpoint = token_endpoint,
        refused = auth_method.as_str(),
        trying = other.as_str(),
        "the token endpoint refused the client; trying the other secret method once"
    );
    match token_request(http, token_endpoint, client_id, client_secret, &other, form).await {
        Ok(tokens) => Ok((tokens, other)),
        // Report the first refusal: it is the one the registration promised would work.
        Err(TokenFailure::ClientRefused(_)) => Err(TokenFailure::ClientRefused(refused)),
        Err(e) => Err(e),
    }
}

async fn token_request(
    http: &Http,
    token_endpoint: &str,
    client_id: &str,
    client_secret: Option<&Secret>,
    auth_method: &ClientAuthMethod,
    form: Vec<(&str, String)>,
) -> Result<TokenResponse, TokenFailure> {
    let request = client_request(
        http,
        token_endpoint,
        client_id,
        client_secret,
        auth_method,
        form,
    );
    let answer = http
        .send(token_endpoint, request)
        .await
        .map_err(TokenFailure::Other)?;
    if answer.status.is_server_error() {
        return Err(TokenFailure::Other(crate::discovery::status_error(&answer)));
    }
    let body: Option<Value> = serde_json::from_slice(&answer.body).ok();
    if !answer.status.is_success() {
        let error = body.as_ref().and_then(|v| text(v, "error"));
        let client_refused = answer.status == reqwest::StatusCode::UNAUTHORIZED
            || error.as_deref() == Some("invalid_client");
        let e = match error {
            Some(error) => OAuthError::Token {
                error,
                description: body.as_ref().and_then(|v| text(v, "error_description")),
            },
            None => OAuthError::Status {
                url: answer.url.clone(),
                status: answer.status.as_u16(),
                detail: None,
            },
        };
        return Err(if client_refused {
            TokenFailure::ClientRefused(e)
        } else {
            TokenFailure::Other(e)
        });
    }
    let body = body.ok_or_else(|| {
        TokenFailure::Other(OAuthError::BadDocument {
            url: answer.url.clone(),
            message: "the token response is not JSON".into(),
        })
    })?;
    parse_token_response(&body).map_err(TokenFailure::Other)
}

/// A POST to the token endpoint with the client authenticated as registered: public (client_id
/// in the form), `client_secret_basic`, or `client_secret_post`. With Basic the form names the
/// client too (RFC 6749 §3.2.1 lets a client identify itself with `client_id` at the token
/// endpoint): the MCP SDKs' token endpoints (FastMCP's included) look the client up by the form's
/// `client_id` before reading the header, and servers that read both require them to agree.
pub(crate) fn client_request(
    http: &Http,
    token_endpoint: &str,
    client_id: &str,
    client_secret: Option<&Secret>,
    auth_method: &ClientAuthMethod,
    mut form: Vec<(&str, String)>,
) -> reqwest::RequestBuilder {
    let mut request = http
        .client()
        .post(token_endpoint)
        .header(reqwest::header::ACCEPT, "application/json");
    match (client_secret, auth_method) {
        (Some(secret), ClientAuthMethod::ClientSecretBasic) => {
            // RFC 6749 §2.3.1: both parts form-urlencoded before the Basic encoding.
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            request = request.basic_auth(enc(client_id), Some(enc(secret.expose())));
            form.push(("client_id", client_id.to_string()));
        }
        (Some(secret), ClientAuthMethod::ClientSecretPost) => {
            form.push(("client_id", client_id.to_string()));
            form.push(("client_secret", secret.expose().to_string()));
        }
        // A public client, or a secret method with no secret to send: the id alone.
        (_, ClientAuthMethod::None)
        | (None, ClientAuthMethod::ClientSecretBasic | ClientAuthMethod::ClientSecretPost) => {
            form.push(("client_id", client_id.to_string()))
        }
        // A method Patchbay cannot perform (`private_key_jwt`, `tls_client_auth`, ...): sent as
        // a public client, the id alone and never the secret; the server's answer (usually
        // `invalid_client`) is what the caller reports, with no second method tried.
        (_, ClientAuthMethod::Other(_)) => form.push(("client_id", client_id.to_string())),
    }
    request.form(&form)
}

/// Stores the tokens under the flow's credential key. A response without a refresh token keeps
/// the stored one (the vault does this); the credential is one-shot only when none survives.
pub fn store(
    vault: &Vault,
    flow: &PendingFlow,
    tokens: TokenResponse,
    now: DateTime<Utc>,
) -> Result<Completed, OAuthError> {
    let expires_at = tokens
        .expires_in
        .and_then(|s| i64::try_from(s).ok())
        .and_then(chrono::Duration::try_seconds)
        .map(|d| now + d);
    let row = CredentialRow {
        credential_key: flow.credential_key.clone(),
        server_name: flow.connector.clone(),
        server_url: Some(flow.server_url.clone()),
        expires_at,
        has_refresh_token: false,
        one_shot: false,
        issuer: Some(flow.issuer.clone()),
        client_id: Some(flow.client_id.clone()),
        scope: tokens.scope.clone().or_else(|| flow.scopes.clone()),
        updated_at: now,
        rotated_by: None,
        rotated_at: None,
    };
    vault.put_credential(
        &row,
        &TokenSet {
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token,
        },
    )?;
    // What the refresher renews it with: the same client, endpoint, resource and scopes.
    vault.put_grant(&Grant {
        credential_key: flow.credential_key.clone(),
        issuer: flow.issuer.clone(),
        token_endpoint: flow.token_endpoint.clone(),
        token_auth_method: flow.token_auth_method.clone(),
        client_id: flow.client_id.clone(),
        client_secret: flow.client_secret.clone(),
        client_registered: flow.client_registered,
        redirect_uri: flow.redirect_uri.clone(),
        resource: flow.resource.clone(),
        scopes: flow.scopes.clone(),
    })?;
    // The authorization asked for what the server wanted (Authorize takes the union).
    vault.clear_wanted_scope(&flow.credential_key)?;
    let one_shot = vault
        .credential_rows()?
        .into_iter()
        .find(|r| r.credential_key == flow.credential_key)
        .map(|r| r.one_shot)
        .unwrap_or(true);
    Ok(Completed {
        connector: flow.connector.clone(),
        credential_key: flow.credential_key.clone(),
        expires_at,
        one_shot,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn standard_and_slack_shapes() {
        let t = parse_token_response(&json!({
            "access_token": "at", "token_type": "Bearer", "expires_in": 3600,
            "refresh_token": "rt", "scope": "a b"
        }))
        .unwrap();
        assert_eq!(t.access_token.expose(), "at");
        assert_eq!(t.refresh_token.unwrap().expose(), "rt");
        assert_eq!(t.expires_in, Some(3600));

        let slack = parse_token_response(&json!({
            "ok": true, "app_id": "A1", "team": {"id": "T1"},
            "authed_user": { "id": "U1", "scope": "search:read", "access_token": "xoxp-1",
                             "token_type": "user", "refresh_token": "xoxe-1", "expires_in": 43200 }
        }))
        .unwrap();
        assert_eq!(slack.access_token.expose(), "xoxp-1");
        assert_eq!(slack.refresh_token.unwrap().expose(), "xoxe-1");
        assert_eq!(slack.expires_in, Some(43200));
        assert_eq!(slack.scope.as_deref(), Some("search:read"));

        let err = parse_token_response(&json!({"ok": false, "error": "invalid_code"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid_code"));
        assert!(matches!(
            parse_token_response(&json!({"token_type": "Bearer"})),
            Err(OAuthError::NoAccessToken)
        ));
    }

    /// A token endpoint on 127.0.0.1 that authenticates its one client only `accepts` way
    /// (`client_secret_basic`: the header and the form's client_id; `client_secret_post`; or
    /// `none`) and answers a refusal with `refusal`. Records the method of every request.
    async fn token_endpoint(
        accepts: &'static str,
        refusal: (u16, &'static str),
    ) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        use axum::http::{HeaderMap, StatusCode};
        use std::collections::HashMap;
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let app = axum::Router::new().route(
            "/token",
            axum::routing::post(
                move |headers: HeaderMap, axum::Form(form): axum::Form<HashMap<String, String>>| {
                    let log = log.clone();
                    async move {
                        let basic = headers.get("authorization").is_some();
                        let method = match (basic, form.get("client_secret")) {
                            (true, None) => "client_secret_basic",
                            (false, Some(_)) => "client_secret_post",
                            (false, None) => "none",
                            (true, Some(_)) => "both",
                        };
                        log.lock().unwrap().push(method.to_string());
                        let known = form.get("client_id").map(String::as_str) == Some("cid");
                        if method == accepts && known {
                            (
                                StatusCode::OK,
                                serde_json::json!({"access_token": "at", "token_type": "Bearer",
                                    "refresh_token": "rt", "expires_in": 60})
                                .to_string(),
                            )
                        } else {
                            (
                                StatusCode::from_u16(refusal.0).unwrap(),
                                serde_json::json!({"error": refusal.1}).to_string(),
                            )
                        }
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (url, seen)
    }

    fn form() -> Vec<(&'static str, String)> {
        vec![
            ("grant_type", "authorization_code".into()),
            ("code", "c".into()),
        ]
    }

    #[tokio::test]
    async fn a_refused_secret_method_is_retried_once_the_other_way() {
        let http = Http::new(std::time::Duration::from_secs(5));
        let secret = Secret::new("s3cret");
        // Registered basic, accepted post only (and 401 invalid_client, as FastMCP answers).
        let (url, seen) = token_endpoint("client_secret_post", (401, "invalid_client")).await;
        let (tokens, method) = token_request_with_fallback(
            &http,
            &url,
            "cid",
            Some(&secret),
            &ClientAuthMethod::ClientSecretBasic,
            form(),
        )
        .await
        .unwrap();
        assert_eq!(tokens.access_token.expose(), "at");
        assert_eq!(method, "client_secret_post");
        assert_eq!(
            *seen.lock().unwrap(),
            ["client_secret_basic", "client_secret_post"]
        );

        // The other way round, refused as a 400 invalid_client (RFC 6749 §5.2).
        let (url, seen) = token_endpoint("client_secret_basic", (400, "invalid_client")).await;
        let (_, method) = token_request_with_fallback(
            &http,
            &url,
            "cid",
            Some(&secret),
            &ClientAuthMethod::ClientSecretPost,
            form(),
        )
        .await
        .unwrap();
        assert_eq!(method, "client_secret_basic");
        assert_eq!(
            *seen.lock().unwrap(),
            ["client_secret_post", "client_secret_basic"]
        );
    }

    #[tokio::test]
    async fn the_other_method_is_tried_only_once_and_only_for_a_refused_client() {
        let http = Http::new(std::time::Duration::from_secs(5));
        let secret = Secret::new("s3cret");
        // Neither works: two requests, and the first refusal is what is reported.
        let (url, seen) = token_endpoint("none", (401, "invalid_client")).await;
        let failure = token_request_with_fallback(
            &http,
            &url,
            "cid",
            Some(&secret),
            &ClientAuthMethod::ClientSecretBasic,
            form(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(failure, TokenFailure::ClientRefused(_)),
            "{failure:?}"
        );
        assert_eq!(seen.lock().unwrap().len(), 2);

        // A refusal of the grant, not the client: no second try.
        let (url, seen) = token_endpoint("none", (400, "invalid_grant")).await;
        let failure = token_request_with_fallback(
            &http,
            &url,
            "cid",
            Some(&secret),
            &ClientAuthMethod::ClientSecretBasic,
            form(),
        )
        .await
        .unwrap_err();
        assert!(matches!(failure, TokenFailure::Other(_)), "{failure:?}");
        assert_eq!(seen.lock().unwrap().len(), 1);

        // A public client has no other way to try.
        let (url, seen) = token_endpoint("client_secret_post", (401, "invalid_client")).await;
        let failure =
            token_request_with_fallback(&http, &url, "cid", None, &ClientAuthMethod::None, form())
                .await
                .unwrap_err();
        assert!(
            matches!(failure, TokenFailure::ClientRefused(_)),
            "{failure:?}"
        );
        assert_eq!(*seen.lock().unwrap(), ["none"]);

        // The accepted method first time: one request.
        let (url, seen) = token_endpoint("client_secret_basic", (401, "invalid_client")).await;
        let (_, method) = token_request_with_fallback(
            &http,
            &url,
            "cid",
            Some(&secret),
            &ClientAuthMethod::ClientSecretBasic,
            form(),
        )
        .await
        .unwrap();
        assert_eq!(method, "client_secret_basic");
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_method_patchbay_cannot_perform_goes_out_as_a_public_client_once() {
        let http = Http::new(std::time::Duration::from_secs(5));
        let secret = Secret::new("s3cret");
        let jwt = ClientAuthMethod::Other("private_key_jwt".into());
        // The server takes the secret either way; the request sends neither, and no other way.
        let (url, seen) = token_endpoint("client_secret_post", (401, "invalid_client")).await;
        let failure = token_request_with_fallback(&http, &url, "cid", Some(&secret), &jwt, form())
            .await
            .unwrap_err();
        assert!(
            matches!(failure, TokenFailure::ClientRefused(_)),
            "{failure:?}"
        );
        assert_eq!(*seen.lock().unwrap(), ["none"]);
        // A server that takes the id alone answers, and the method kept is the one named.
        let (url, _) = token_endpoint("none", (401, "invalid_client")).await;
        let (_, method) =
            token_request_with_fallback(&http, &url, "cid", Some(&secret), &jwt, form())
                .await
                .unwrap();
        assert_eq!(method, jwt);
    }
}
