//! Finishing a flow: the callback's checks (state, code, RFC 9207 `iss`), the code exchange with
//! the PKCE verifier, redirect URI and resource, as a public or confidential client, Slack's
//! `authed_user` shape, and storing the credential under the catalog's credential key.

use chrono::{DateTime, Utc};
use oauth2::{AuthorizationCode, PkceCodeVerifier};
use patchbay_catalog::CredentialKey;
use patchbay_vault::{CredentialRow, Grant, PendingFlow, Secret, TokenSet, Vault};
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
pub async fn complete(
    http: &Http,
    vault: &Vault,
    params: CallbackParams,
    now: DateTime<Utc>,
) -> Result<Completed, OAuthError> {
    let checked = check_callback(vault, &params, now)?;
    let flow = vault
        .take_pending_flow(&checked.state, now)?
        .ok_or(OAuthError::UnknownState)?;
    let code = AuthorizationCode::new(params.code.ok_or(OAuthError::MissingCode)?);
    let tokens = match exchange(http, &flow, code).await {
        Ok(t) => t,
        Err(OAuthError::Token { error, .. })
            if error == "invalid_client" && flow.client_registered =>
        {
            vault.delete_registration(&flow.issuer, &flow.redirect_uri)?;
            return Err(OAuthError::RegistrationForgotten {
                issuer: flow.issuer.clone(),
            });
        }
        Err(e) => return Err(e),
    };
    store(vault, &flow, tokens, now)
}

/// The code exchange (RFC 6749 §4.1.3 with PKCE and RFC 8707's resource). The code and the
/// verifier are consumed.
pub async fn exchange(
    http: &Http,
    flow: &PendingFlow,
    code: AuthorizationCode,
) -> Result<TokenResponse, OAuthError> {
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
    token_request(
        http,
        &flow.token_endpoint,
        &flow.client_id,
        flow.client_secret.as_ref(),
        &flow.token_auth_method,
        form,
    )
    .await
}

async fn token_request(
    http: &Http,
    token_endpoint: &str,
    client_id: &str,
    client_secret: Option<&Secret>,
    auth_method: &str,
    form: Vec<(&str, String)>,
) -> Result<TokenResponse, OAuthError> {
    let request = client_request(
        http,
        token_endpoint,
        client_id,
        client_secret,
        auth_method,
        form,
    );
    let answer = http.send(token_endpoint, request).await?;
    if answer.status.is_server_error() {
        return Err(crate::discovery::status_error(&answer));
    }
    let body: Option<Value> = serde_json::from_slice(&answer.body).ok();
    if !answer.status.is_success() {
        return Err(match body.as_ref().and_then(|v| text(v, "error")) {
            Some(error) => OAuthError::Token {
                error,
                description: body.as_ref().and_then(|v| text(v, "error_description")),
            },
            None => OAuthError::Status {
                url: answer.url.clone(),
                status: answer.status.as_u16(),
                detail: None,
            },
        });
    }
    let body = body.ok_or_else(|| OAuthError::BadDocument {
        url: answer.url.clone(),
        message: "the token response is not JSON".into(),
    })?;
    parse_token_response(&body)
}

/// A POST to the token endpoint with the client authenticated as registered: public (client_id
/// in the form), `client_secret_basic`, or `client_secret_post`.
pub(crate) fn client_request(
    http: &Http,
    token_endpoint: &str,
    client_id: &str,
    client_secret: Option<&Secret>,
    auth_method: &str,
    mut form: Vec<(&str, String)>,
) -> reqwest::RequestBuilder {
    let mut request = http
        .client()
        .post(token_endpoint)
        .header(reqwest::header::ACCEPT, "application/json");
    match (client_secret, auth_method) {
        (Some(secret), "client_secret_basic") => {
            // RFC 6749 §2.3.1: both parts form-urlencoded before the Basic encoding.
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            request = request.basic_auth(enc(client_id), Some(enc(secret.expose())));
        }
        (Some(secret), _) => {
            form.push(("client_id", client_id.to_string()));
            form.push(("client_secret", secret.expose().to_string()));
        }
        (None, _) => form.push(("client_id", client_id.to_string())),
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
}
