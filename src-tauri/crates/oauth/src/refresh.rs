//! The refresh grant (RFC 6749 §6) and what its failures mean. One request per call: the
//! in-band retry of a refresh that never reached the server belongs to the caller, which owns
//! the clock and the backoff.
//!
//! The classes follow from one question, "could the server have consumed the refresh token?":
//! - [`RefreshClass::Retryable`]: the connection was never established (refused, DNS, TLS), so
//!   the server never saw the request. Safe to send again at once.
//! - [`RefreshClass::Ambiguous`]: the request went out and the answer was lost (a timeout after
//!   sending, a reset mid-response, a 2xx we cannot read). A rotating server may have spent the
//!   token, or may never have run the grant. The caller presents it once more at once (see
//!   `patchbay_core::refresh`): that renews unless the server spent it and keeps no reuse grace
//!   period, in which case the lost answer held the only live pair anyway.
//! - [`RefreshClass::Transient`]: 429 or 5xx (HTML error pages included). The refresh token is
//!   not implicated; try again on the next pass.
//! - [`RefreshClass::Rejected`]: the server refused our *request*, not the token
//!   (`invalid_scope`, `invalid_request`, `unsupported_grant_type`, `invalid_target`, and
//!   `invalid_client` or a bare 401 to a client that authenticates: a secret method, or one
//!   Patchbay cannot perform; or to another client whose pair we renew as a public client). An error we caused is never a reason to drop a refresh token:
//!   [`refresh_corrected`] corrects the request once, and a refusal that survives the
//!   correction keeps the token and says what went wrong.
//! - [`RefreshClass::Permanent`]: any other 4xx, whatever the body (some servers answer a bare
//!   HTML 400): `invalid_grant`, `unauthorized_client`, `invalid_client` to our own public client
//!   (the server forgot its registration). The refresh token is dead.
//!
//! Scope: a refresh sends no `scope` (RFC 6749 §6: omitted means "as granted"), so a scope we
//! asked for and were not granted (`offline_access` at oidc-provider) can never fail it; the one
//! correction of an `invalid_scope`/`invalid_request` is to send exactly the granted scope.

use patchbay_vault::{ClientAuthMethod, Secret};
use serde_json::Value;

use crate::http::Http;
use crate::token::{client_request, parse_token_response, text, TokenResponse};
use crate::OAuthError;

/// What renewing one credential needs. Debug redacts the secrets.
#[derive(Debug, Clone, Copy)]
pub struct RefreshRequest<'a> {
    pub token_endpoint: &'a str,
    pub client_id: &'a str,
    pub client_secret: Option<&'a Secret>,
    /// How the client authenticates; `token::client_request` says what an `Other` one sends.
    pub auth_method: &'a ClientAuthMethod,
    pub refresh_token: &'a Secret,
    /// Sent as before (RFC 8707), so the new token keeps its audience.
    pub resource: Option<&'a str>,
    /// The `scope` parameter to send: `None` (the default: "as granted"), or exactly the
    /// granted scope, never more (RFC 6749 §6).
    pub scopes: Option<&'a str>,
    /// The client is the grant's own registration, so its authentication is known. `false` for
    /// a pair issued to another client, renewed as a public client on a guess: a refusal of
    /// that client's authentication is then the guess, not the token.
    pub own_client: bool,
}

/// Whether the refresh token may have been spent; see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefreshClass {
    Retryable,
    Ambiguous,
    Transient,
    /// The server refused our request (see the module doc); the refresh token is kept.
    Rejected,
    Permanent,
}

impl RefreshClass {
    /// The stable id the history stores (`retryable`, `ambiguous`, `transient`, `permanent`).
    pub fn id(self) -> &'static str {
        match self {
            RefreshClass::Retryable => "retryable",
            RefreshClass::Ambiguous => "ambiguous",
            RefreshClass::Transient => "transient",
            RefreshClass::Rejected => "rejected",
            RefreshClass::Permanent => "permanent",
        }
    }
}

/// A failed refresh: its class, the HTTP status when there was one, a one-line summary and the
/// raw detail (the server's body or the error chain) with every secret scrubbed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{summary}")]
pub struct RefreshFailure {
    pub class: RefreshClass,
    pub http_status: Option<u16>,
    /// The OAuth error code of the answer (`invalid_grant`, ...), when it had one.
    pub oauth_error: Option<String>,
    pub summary: String,
    pub detail: Option<String>,
    /// How long a 429 or 5xx asked us to wait (`Retry-After`, RFC 9110 §10.2.3).
    pub retry_after: Option<RetryAfter>,
}

/// A `Retry-After` value: seconds from the answer, or a date. The caller owns the clock, so a
/// date is resolved there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    Seconds(u64),
    At(chrono::DateTime<chrono::Utc>),
}

impl RetryAfter {
    /// `delay-seconds` or an HTTP-date (IMF-fixdate, which RFC 2822 parsing takes); anything
    /// else is no hint at all.
    pub fn parse(value: &str) -> Option<RetryAfter> {
        let value = value.trim();
        if let Ok(seconds) = value.parse::<u64>() {
            return Some(RetryAfter::Seconds(seconds));
        }
        chrono::DateTime::parse_from_rfc2822(value)
            .ok()
            .map(|at| RetryAfter::At(at.with_timezone(&chrono::Utc)))
    }

    /// The moment it names, from `now`, never more than `cap` away (a server's mistake must
    /// not park a credential for a year).
    pub fn until(
        self,
        now: chrono::DateTime<chrono::Utc>,
        cap: chrono::Duration,
    ) -> chrono::DateTime<chrono::Utc> {
        let asked = match self {
            RetryAfter::Seconds(s) => {
                // Compared in seconds first: a huge value must not overflow the Duration.
                let cap_s = cap.num_seconds().max(0) as u64;
                now + chrono::Duration::seconds(s.min(cap_s) as i64)
            }
            RetryAfter::At(at) => at,
        };
        asked.min(now + cap)
    }
}

/// OAuth error codes that blame the request we built, not the refresh token.
const REQUEST_ERRORS: [&str; 4] = [
    "invalid_scope",
    "invalid_request",
    "unsupported_grant_type",
    // RFC 8707: the resource indicator we sent.
    "invalid_target",
];

/// How [`refresh_corrected`] changed the request for its one retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Correction {
    /// The scope we sent was refused: sent none.
    DroppedScope,
    /// The server wanted the scope named: sent exactly the granted one.
    SentGrantedScope,
    /// The resource indicator we sent was refused (`invalid_target`): sent none.
    DroppedResource,
    /// The server did not accept the client authentication: used this one instead.
    AuthMethod(ClientAuthMethod),
}

impl Correction {
    /// One line for the refresh history.
    pub fn describe(&self) -> String {
        match self {
            Correction::DroppedScope => {
                "sent no scope after the server refused the one sent".into()
            }
            Correction::SentGrantedScope => {
                "sent exactly the granted scope after the server asked for one".into()
            }
            Correction::DroppedResource => {
                "sent no resource indicator after the server refused the one sent".into()
            }
            Correction::AuthMethod(m) => format!("authenticated the client with {m} instead"),
        }
    }
}

/// A refresh that succeeded, and the correction it took, if any.
#[derive(Debug, Clone)]
pub struct Renewed {
    pub tokens: TokenResponse,
    /// Remember this one: a changed client authentication goes into the grant.
    pub correction: Option<Correction>,
}

/// One refresh grant, and when the server refuses our request (not the token), one corrected
/// retry: a refused scope dropped (or, when none was sent, exactly `granted_scope` sent), or the
/// other of `client_secret_basic`/`client_secret_post`. The retry's failure is the answer; a
/// request error that survives it stays [`RefreshClass::Rejected`] and keeps the token.
pub async fn refresh_corrected(
    http: &Http,
    req: RefreshRequest<'_>,
    granted_scope: Option<&str>,
) -> Result<Renewed, RefreshFailure> {
    let failure = match refresh_once(http, req).await {
        Ok(tokens) => {
            return Ok(Renewed {
                tokens,
                correction: None,
            })
        }
        Err(f) => f,
    };
    let Some(correction) = correction_for(&failure, &req, granted_scope) else {
        return Err(failure);
    };
    let mut corrected = req;
    match &correction {
        Correction::DroppedScope => corrected.scopes = None,
        Correction::SentGrantedScope => corrected.scopes = granted_scope,
        Correction::DroppedResource => corrected.resource = None,
        Correction::AuthMethod(m) => corrected.auth_method = m,
    }
    match refresh_once(http, corrected).await {
        Ok(tokens) => Ok(Renewed {
            tokens,
            correction: Some(correction),
        }),
        Err(mut again) => {
            again.summary = format!(
                "{} (after one correction: {})",
                again.summary,
                correction.describe()
            );
            Err(again)
        }
    }
}

/// The one correction worth trying after `failure`, if it blames our request.
pub fn correction_for(
    failure: &RefreshFailure,
    req: &RefreshRequest<'_>,
    granted_scope: Option<&str>,
) -> Option<Correction> {
    // A bare 401 is a refused client authentication (see `refresh_once`).
    let error = failure
        .oauth_error
        .as_deref()
        .or((failure.http_status == Some(401)).then_some("invalid_client"))?;
    let sent_scope = req.scopes.is_some_and(|s| !s.trim().is_empty());
    let granted = granted_scope.is_some_and(|s| !s.trim().is_empty());
    match error {
        "invalid_scope" | "invalid_request" if sent_scope => Some(Correction::DroppedScope),
        "invalid_scope" | "invalid_request" if granted => Some(Correction::SentGrantedScope),
        "invalid_target" if req.resource.is_some() => Some(Correction::DroppedResource),
        // Only between the two secret methods: `none` and a method Patchbay cannot perform
        // have no other to try.
        "invalid_client" if req.client_secret.is_some() => req
            .auth_method
            .other_secret_method()
            .map(Correction::AuthMethod),
        _ => None,
    }
}

/// Sends one refresh grant and classifies the outcome. Never retries.
pub async fn refresh_once(
    http: &Http,
    req: RefreshRequest<'_>,
) -> Result<TokenResponse, RefreshFailure> {
    let mut form: Vec<(&str, String)> = vec![
        ("grant_type", "refresh_token".into()),
        ("refresh_token", req.refresh_token.expose().to_string()),
    ];
    if let Some(resource) = req.resource {
        form.push(("resource", resource.to_string()));
    }
    if let Some(scopes) = req.scopes.filter(|s| !s.trim().is_empty()) {
        form.push(("scope", scopes.to_string()));
    }
    let secrets: Vec<&Secret> = [Some(req.refresh_token), req.client_secret]
        .into_iter()
        .flatten()
        .collect();
    let request = client_request(
        http,
        req.token_endpoint,
        req.client_id,
        req.client_secret,
        req.auth_method,
        form,
    );
    let answer = match http.send(req.token_endpoint, request).await {
        Ok(answer) => answer,
        Err(error) => return Err(transport_failure(&error, &secrets)),
    };
    let status = answer.status.as_u16();
    let raw = String::from_utf8_lossy(&answer.body);
    let detail = (!raw.trim().is_empty()).then(|| scrub(&raw, &secrets));
    let body: Option<Value> = serde_json::from_slice(&answer.body).ok();
    let oauth_error = body.as_ref().and_then(|v| text(v, "error"));
    let described = |what: &str| match &oauth_error {
        Some(e) => format!("{what} ({status} {e})"),
        None => format!("{what} ({status})"),
    };
    if status == 429 || answer.status.is_server_error() {
        return Err(RefreshFailure {
            class: RefreshClass::Transient,
            retry_after: answer
                .headers
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(RetryAfter::parse),
            http_status: Some(status),
            oauth_error: oauth_error.clone(),
            summary: described(if status == 429 {
                "the token endpoint is rate limiting; the refresh token is kept, next pass retries"
            } else {
                "the token endpoint failed on its side; the refresh token is kept, next pass retries"
            }),
            detail,
        });
    }
    if answer.status.is_client_error() {
        let ours = oauth_error
            .as_deref()
            .is_some_and(|e| REQUEST_ERRORS.contains(&e));
        // invalid_client, or a bare 401 (no error code), refuses the client's authentication:
        // ours whenever the client authenticates at all (a secret method, which the caller's
        // correction may still fix or which survived both; a method Patchbay cannot perform; a
        // secret method whose secret we lack), or when its authentication was a guess (another
        // client's pair). None of those says the token is dead. Only our own public client's
        // refused id is: the server forgot the registration the token was issued to.
        let client_refused = oauth_error.as_deref() == Some("invalid_client")
            || (status == 401 && oauth_error.is_none());
        let auth = client_refused
            && (!req.own_client || !matches!(req.auth_method, ClientAuthMethod::None));
        let oauth_error = oauth_error.clone();
        return Err(if ours || auth {
            RefreshFailure {
                class: RefreshClass::Rejected,
                retry_after: None,
                http_status: Some(status),
                summary: described(
                    "the token endpoint refused Patchbay's request, not the refresh token; the refresh token is kept",
                ),
                oauth_error,
                detail,
            }
        } else {
            RefreshFailure {
                class: RefreshClass::Permanent,
                retry_after: None,
                http_status: Some(status),
                summary: described("the token endpoint refused the refresh token; authorize again"),
                oauth_error,
                detail,
            }
        });
    }
    if !answer.status.is_success() {
        // A 1xx or an unfollowed 3xx: no grant was processed, the token is not implicated.
        return Err(RefreshFailure {
            class: RefreshClass::Transient,
            retry_after: None,
            http_status: Some(status),
            oauth_error: None,
            summary: format!("the token endpoint answered {status}, not a token response"),
            detail,
        });
    }
    // 2xx: the server processed the grant. If we cannot read the pair it sent, the old refresh
    // token may already be spent.
    let parsed = match body {
        Some(v) => parse_token_response(&v).map_err(|e| e.to_string()),
        None => Err("the answer is not JSON".to_string()),
    };
    parsed.map_err(|why| RefreshFailure {
        class: RefreshClass::Ambiguous,
        retry_after: None,
        http_status: Some(status),
        oauth_error: None,
        summary: format!("the token endpoint answered {status} but its answer is unusable: {why}"),
        detail,
    })
}

/// What a revocation request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revocation {
    /// The server revoked the token (or no longer knew it: RFC 7009 answers 200 for both).
    Revoked,
    /// `400 unsupported_token_type` (RFC 7009 §2.2.1): the server cannot revoke this kind of
    /// token (oidc-provider's self-contained JWT access tokens); it stays valid until it expires.
    NotRevocable,
}

/// Revokes one token at the server (RFC 7009), authenticated as the client that holds it.
pub async fn revoke(
    http: &Http,
    revocation_endpoint: &str,
    client: RevokeClient<'_>,
    token: &Secret,
    token_type_hint: &str,
) -> Result<Revocation, OAuthError> {
    let form: Vec<(&str, String)> = vec![
        ("token", token.expose().to_string()),
        ("token_type_hint", token_type_hint.to_string()),
    ];
    let request = client_request(
        http,
        revocation_endpoint,
        client.client_id,
        client.client_secret,
        client.auth_method,
        form,
    );
    let answer = http.send(revocation_endpoint, request).await?;
    // RFC 7009 §2.2.1: `unsupported_token_type` says this kind of token cannot be revoked there
    // (oidc-provider's self-contained JWT access tokens): it lapses by itself, and nothing more
    // can be done; the refresh token, revoked first, is what ends the grant.
    let unsupported = answer.status.as_u16() == 400
        && serde_json::from_slice::<Value>(&answer.body)
            .ok()
            .and_then(|v| text(&v, "error"))
            .is_some_and(|e| e == "unsupported_token_type");
    if answer.status.is_success() {
        Ok(Revocation::Revoked)
    } else if unsupported {
        Ok(Revocation::NotRevocable)
    } else {
        Err(crate::discovery::status_error(&answer))
    }
}

/// The client a revocation authenticates as.
#[derive(Debug, Clone, Copy)]
pub struct RevokeClient<'a> {
    pub client_id: &'a str,
    pub client_secret: Option<&'a Secret>,
    pub auth_method: &'a ClientAuthMethod,
}

/// Classifies a request that produced no HTTP answer.
fn transport_failure(error: &OAuthError, secrets: &[&Secret]) -> RefreshFailure {
    let message = scrub(&error.to_string(), secrets);
    match error {
        OAuthError::Connect { .. } => RefreshFailure {
            class: RefreshClass::Retryable,
            retry_after: None,
            http_status: None,
            oauth_error: None,
            summary: format!("the token endpoint could not be reached: {message}"),
            detail: None,
        },
        OAuthError::CrossOriginRedirect { .. } => RefreshFailure {
            class: RefreshClass::Transient,
            retry_after: None,
            http_status: None,
            oauth_error: None,
            summary: message,
            detail: None,
        },
        // Timeout after sending, a reset or truncated answer, an oversized one: the request
        // went out, so the server may have acted on it.
        _ => RefreshFailure {
            class: RefreshClass::Ambiguous,
            retry_after: None,
            http_status: None,
            oauth_error: None,
            summary: format!("the refresh went out and its answer was lost: {message}"),
            detail: None,
        },
    }
}

/// Keys whose string values are never recorded, in JSON bodies.
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["token", "secret", "password", "code", "assertion"]
        .iter()
        .any(|word| key.contains(word))
}

/// Removes every secret from text bound for the history: the known values anywhere, and in a
/// JSON body the value of every token-, secret- or code-named key.
pub fn scrub(text: &str, secrets: &[&Secret]) -> String {
    let replace_known = |mut out: String| {
        for secret in secrets {
            let value = secret.expose();
            // Very short values would scrub innocent text and protect nothing.
            if value.len() >= 4 {
                out = out.replace(value, "[redacted]");
            }
        }
        out
    };
    let out = replace_known(text.to_string());
    if let Ok(mut v) = serde_json::from_str::<Value>(&out) {
        redact_json(&mut v);
        // Printed again, the JSON loses the escapes (`\/`, `\u0074`) that hid a known value
        // from the first pass.
        return replace_known(v.to_string());
    }
    out
}

fn redact_json(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if is_secret_key(k) && val.is_string() {
                    *val = Value::String("[redacted]".into());
                } else {
                    redact_json(val);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_json),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzz/fuzz_targets/oauth_responses.rs: a server that escapes `/` in JSON (PHP's
    /// `json_encode` does by default) echoed a refresh token in its error description, and the
    /// token came out whole once the body was parsed and printed again.
    #[test]
    fn scrub_removes_known_values_hidden_by_json_escapes() {
        let token = Secret::new("rt/3fA+9x_Q");
        for body in [
            r#"{"error":"invalid_grant","error_description":"Refresh token rt\/3fA+9x_Q was revoked"}"#,
            r#"{"error":"invalid_grant","error_description":"rt\u002f3fA+9x_Q"}"#,
        ] {
            let out = scrub(body, &[&token]);
            assert!(!out.contains("rt/3fA+9x_Q"), "{out}");
            assert!(out.contains("[redacted]"), "{out}");
        }
    }

    #[test]
    fn scrub_removes_known_values_and_token_fields() {
        let rt = Secret::new("rt-very-secret");
        let body = r#"{"error":"invalid_grant","error_description":"token rt-very-secret reused","access_token":"leak","nested":{"refresh_token":"x2"}}"#;
        let out = scrub(body, &[&rt]);
        assert!(!out.contains("rt-very-secret"));
        assert!(!out.contains("leak"));
        assert!(!out.contains("x2"));
        assert!(out.contains("invalid_grant"));
        // Not JSON: known values still go.
        let html = "<html>400 Bad Request rt-very-secret</html>";
        assert_eq!(
            scrub(html, &[&rt]),
            "<html>400 Bad Request [redacted]</html>"
        );
        // Error codes are not secrets; the key `error` is kept even though values may say "token".
        assert!(scrub(r#"{"error":"invalid_token"}"#, &[]).contains("invalid_token"));
    }

    #[test]
    fn retry_after_is_seconds_or_a_date_and_capped() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let cap = chrono::Duration::hours(6);
        assert_eq!(RetryAfter::parse(" 600 "), Some(RetryAfter::Seconds(600)));
        assert_eq!(
            RetryAfter::parse("600").unwrap().until(now, cap),
            now + chrono::Duration::seconds(600)
        );
        let date = RetryAfter::parse("Tue, 01 Dec 2026 10:20:00 GMT").unwrap();
        assert_eq!(date.until(now, cap), now + chrono::Duration::minutes(20));
        assert_eq!(
            RetryAfter::parse("18446744073709551615")
                .unwrap()
                .until(now, cap),
            now + cap
        );
        assert_eq!(RetryAfter::parse("soon"), None);
        assert_eq!(RetryAfter::parse("-5"), None);
    }

    fn refused(error: &str) -> RefreshFailure {
        RefreshFailure {
            class: RefreshClass::Rejected,
            retry_after: None,
            http_status: Some(400),
            oauth_error: Some(error.into()),
            summary: String::new(),
            detail: None,
        }
    }

    #[test]
    fn a_method_patchbay_cannot_perform_gets_no_other_method() {
        let rt = Secret::new("rt");
        let secret = Secret::new("cs");
        let jwt = ClientAuthMethod::Other("private_key_jwt".into());
        let req = RefreshRequest {
            token_endpoint: "http://127.0.0.1:9/token",
            client_id: "c",
            client_secret: Some(&secret),
            auth_method: &jwt,
            refresh_token: &rt,
            resource: None,
            scopes: None,
            own_client: true,
        };
        assert_eq!(correction_for(&refused("invalid_client"), &req, None), None);
    }

    #[test]
    fn one_correction_per_kind_of_request_error() {
        let rt = Secret::new("rt");
        let secret = Secret::new("cs");
        let base = RefreshRequest {
            token_endpoint: "http://127.0.0.1:9/token",
            client_id: "c",
            client_secret: None,
            auth_method: &ClientAuthMethod::None,
            refresh_token: &rt,
            resource: None,
            scopes: None,
            own_client: true,
        };
        // No scope sent: the correction is exactly the granted one, if known.
        assert_eq!(
            correction_for(&refused("invalid_scope"), &base, Some("a b")),
            Some(Correction::SentGrantedScope)
        );
        assert_eq!(correction_for(&refused("invalid_scope"), &base, None), None);
        // A refused resource indicator: sent without it, once.
        let with_resource = RefreshRequest {
            resource: Some("https://mcp.example/mcp"),
            ..base
        };
        assert_eq!(
            correction_for(&refused("invalid_target"), &with_resource, None),
            Some(Correction::DroppedResource)
        );
        assert_eq!(
            correction_for(&refused("invalid_target"), &base, None),
            None
        );
        // A scope sent: the correction is none.
        let scoped = RefreshRequest {
            scopes: Some("a offline_access"),
            ..base
        };
        assert_eq!(
            correction_for(&refused("invalid_request"), &scoped, Some("a")),
            Some(Correction::DroppedScope)
        );
        // Client authentication: the other of basic and post; a public client has no other.
        let basic = RefreshRequest {
            client_secret: Some(&secret),
            auth_method: &ClientAuthMethod::ClientSecretBasic,
            ..base
        };
        assert_eq!(
            correction_for(&refused("invalid_client"), &basic, None),
            Some(Correction::AuthMethod(ClientAuthMethod::ClientSecretPost))
        );
        let post = RefreshRequest {
            auth_method: &ClientAuthMethod::ClientSecretPost,
            ..basic
        };
        assert_eq!(
            correction_for(&refused("invalid_client"), &post, None),
            Some(Correction::AuthMethod(ClientAuthMethod::ClientSecretBasic))
        );
        assert_eq!(
            correction_for(&refused("invalid_client"), &base, None),
            None
        );
        // A 401 without an error code is the same refusal of the client authentication.
        let bare_401 = RefreshFailure {
            http_status: Some(401),
            oauth_error: None,
            ..refused("invalid_client")
        };
        assert_eq!(
            correction_for(&bare_401, &basic, None),
            Some(Correction::AuthMethod(ClientAuthMethod::ClientSecretPost))
        );
        assert_eq!(correction_for(&bare_401, &base, None), None);
        // Nothing to correct: the token itself, or a grant type the server does not do.
        assert_eq!(
            correction_for(&refused("invalid_grant"), &scoped, Some("a")),
            None
        );
        assert_eq!(
            correction_for(&refused("unsupported_grant_type"), &base, Some("a")),
            None
        );
    }

    #[test]
    fn transport_failures_are_split_by_whether_the_request_went_out() {
        let never = OAuthError::Connect {
            url: "http://127.0.0.1:9/token".into(),
            message: "Connection refused".into(),
        };
        assert_eq!(
            transport_failure(&never, &[]).class,
            RefreshClass::Retryable
        );
        let lost = OAuthError::Timeout {
            url: "http://127.0.0.1:9/token".into(),
            after: std::time::Duration::from_secs(30),
        };
        assert_eq!(transport_failure(&lost, &[]).class, RefreshClass::Ambiguous);
        let reset = OAuthError::Http {
            url: "http://127.0.0.1:9/token".into(),
            message: "connection reset".into(),
        };
        assert_eq!(
            transport_failure(&reset, &[]).class,
            RefreshClass::Ambiguous
        );
    }
}
