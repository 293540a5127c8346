//! Which client Patchbay is at an authorization server, in the order the MCP authorization spec
//! gives: the catalog's `oauth.clientId` used verbatim; a pre-registered client from the user's
//! `oauth-clients.json` (which may also give the endpoints and skip discovery); dynamic client
//! registration (RFC 7591); otherwise a clear error saying what to configure.

use std::collections::BTreeMap;
use std::path::Path;

use patchbay_vault::{ClientAuthMethod, Secret};
use serde_json::{json, Value};

use crate::http::Http;
use crate::OAuthError;

/// The user's file of pre-registered clients, in the config directory.
pub const CLIENTS_FILE: &str = "oauth-clients.json";

/// One entry of `oauth-clients.json`. Debug redacts the secret.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreRegistered {
    pub client_id: String,
    /// Literal, or `${VAR}` resolved vault-first then environment (kept unexpanded here).
    pub client_secret: Option<Secret>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub scopes: Vec<String>,
    pub redirect_uri: Option<String>,
    pub manual: bool,
    /// `Some("")` suppresses the resource indicator.
    pub resource: Option<String>,
}

impl PreRegistered {
    /// Both endpoints given: discovery is skipped.
    pub fn endpoints(&self) -> Option<(&str, &str)> {
        Some((
            self.authorization_endpoint.as_deref()?,
            self.token_endpoint.as_deref()?,
        ))
    }
}

/// Reads `<config_dir>/oauth-clients.json`: an empty map when the file does not exist, a clear
/// error naming the file and the field when it is malformed.
pub fn load_clients_file(path: &Path) -> Result<BTreeMap<String, PreRegistered>, OAuthError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => {
            return Err(file_error(path, "(file)", format!("cannot read it: {e}")));
        }
    };
    parse_clients(&text, path)
}

fn file_error(path: &Path, field: &str, message: String) -> OAuthError {
    OAuthError::ClientsFile {
        path: path.display().to_string(),
        field: field.to_string(),
        message,
    }
}

/// Parses the text of an `oauth-clients.json`.
pub fn parse_clients(
    text: &str,
    path: &Path,
) -> Result<BTreeMap<String, PreRegistered>, OAuthError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        file_error(
            path,
            &format!("line {}, column {}", e.line(), e.column()),
            format!("not valid JSON: {e}"),
        )
    })?;
    let Value::Object(servers) = value else {
        return Err(file_error(
            path,
            "(top level)",
            "must be an object mapping server names to clients".into(),
        ));
    };
    let mut out = BTreeMap::new();
    for (name, entry) in servers {
        let Value::Object(obj) = entry else {
            return Err(file_error(path, &name, "must be an object".into()));
        };
        let field = |key: &str| format!("{name}.{key}");
        let string = |key: &str| -> Result<Option<String>, OAuthError> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(file_error(path, &field(key), "must be a string".into())),
            }
        };
        let url = |key: &str| -> Result<Option<String>, OAuthError> {
            let value = string(key)?;
            if let Some(v) = &value {
                let ok = url::Url::parse(v)
                    .map(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
                    .unwrap_or(false);
                if !ok {
                    return Err(file_error(
                        path,
                        &field(key),
                        "must be an http:// or https:// URL".into(),
                    ));
                }
            }
            Ok(value)
        };
        let known = [
            "clientId",
            "clientSecret",
            "authorizationEndpoint",
            "tokenEndpoint",
            "scopes",
            "redirectUri",
            "manual",
            "resource",
        ];
        if let Some(unknown) = obj.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(file_error(
                path,
                &field(unknown),
                format!("unknown field; expected one of {}", known.join(", ")),
            ));
        }
        let client_id = string("clientId")?
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| file_error(path, &field("clientId"), "is required".into()))?;
        let scopes = match obj.get("scopes") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|s| {
                    s.as_str().map(str::to_string).ok_or_else(|| {
                        file_error(path, &field("scopes"), "must be a list of strings".into())
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
            Some(_) => {
                return Err(file_error(
                    path,
                    &field("scopes"),
                    "must be a list of strings".into(),
                ))
            }
        };
        let manual = match obj.get("manual") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(file_error(
                    path,
                    &field("manual"),
                    "must be true or false".into(),
                ))
            }
        };
        let entry = PreRegistered {
            client_id,
            client_secret: string("clientSecret")?.map(Secret::new),
            authorization_endpoint: url("authorizationEndpoint")?,
            token_endpoint: url("tokenEndpoint")?,
            scopes,
            redirect_uri: url("redirectUri")?,
            manual,
            resource: string("resource")?,
        };
        if entry.authorization_endpoint.is_some() != entry.token_endpoint.is_some() {
            return Err(file_error(
                path,
                &field("tokenEndpoint"),
                "authorizationEndpoint and tokenEndpoint go together: give both or neither".into(),
            ));
        }
        out.insert(name, entry);
    }
    Ok(out)
}

/// Expands `${VAR}` placeholders in a client secret with `resolve` (vault first, then the
/// environment). A literal secret passes through.
pub fn resolve_secret(
    field: &str,
    value: &Secret,
    resolve: &dyn Fn(&str) -> Option<String>,
) -> Result<Secret, OAuthError> {
    patchbay_catalog::expand(value.expose(), resolve)
        .map(Secret::new)
        .map_err(|names| OAuthError::MissingVariable {
            field: field.to_string(),
            name: names.into_iter().next().unwrap_or_default(),
        })
}

/// The client-authentication method at the token endpoint: `none` without a secret; with one,
/// `client_secret_basic` unless the server lists only `client_secret_post` (RFC 6749 §2.3.1
/// makes basic the one every server supports; RFC 8414 defaults the list to it).
pub fn token_auth_method(has_secret: bool, supported: Option<&[String]>) -> ClientAuthMethod {
    if !has_secret {
        return ClientAuthMethod::None;
    }
    let listed = |wanted: ClientAuthMethod| {
        supported.is_some_and(|list| list.iter().any(|m| *m == wanted.as_str()))
    };
    match supported {
        Some(_)
            if !listed(ClientAuthMethod::ClientSecretBasic)
                && listed(ClientAuthMethod::ClientSecretPost) =>
        {
            ClientAuthMethod::ClientSecretPost
        }
        _ => ClientAuthMethod::ClientSecretBasic,
    }
}

/// A client obtained by dynamic registration. Debug redacts the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub client_id: String,
    pub client_secret: Option<Secret>,
    pub token_auth_method: ClientAuthMethod,
}

/// Dynamic client registration (RFC 7591) as a native public client (RFC 8252:
/// `token_endpoint_auth_method: "none"`, PKCE guards the code). Only when the server refuses a
/// public registration (a 4xx `invalid_client_metadata` or the like) does it register once more as
/// a confidential client with the method the server lists. Servers that list only secret-based
/// methods in their metadata often register public clients all the same (FastMCP, the MCP SDKs),
/// and a secret a native app keeps is no secret, so the list alone never decides.
pub async fn register(
    http: &Http,
    registration_endpoint: &str,
    redirect_uri: &str,
    auth_methods: Option<&[String]>,
    scope: Option<&str>,
) -> Result<Registered, OAuthError> {
    match register_as(
        http,
        registration_endpoint,
        redirect_uri,
        &ClientAuthMethod::None,
        auth_methods,
        scope,
    )
    .await
    {
        Err(RegisterFailure::Refused(public_refused)) => {
            let confidential = token_auth_method(true, auth_methods);
            tracing::info!(
                url = registration_endpoint,
                method = confidential.as_str(),
                "the server refused a public registration; registering as a confidential client"
            );
            match register_as(
                http,
                registration_endpoint,
                redirect_uri,
                &confidential,
                auth_methods,
                scope,
            )
            .await
            {
                Ok(registered) => Ok(registered),
                // Say why the public one was refused too: that is the first thing to fix.
                Err(RegisterFailure::Refused(e)) | Err(RegisterFailure::Other(e)) => {
                    Err(OAuthError::Registration {
                        url: registration_endpoint.to_string(),
                        message: format!(
                            "{}; as a public client: {}",
                            registration_message(&e),
                            registration_message(&public_refused)
                        ),
                    })
                }
            }
        }
        Err(RegisterFailure::Other(e)) => Err(e),
        Ok(registered) => Ok(registered),
    }
}

fn registration_message(e: &OAuthError) -> String {
    match e {
        OAuthError::Registration { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

enum RegisterFailure {
    /// A 4xx answer: the server read the request and refused this registration.
    Refused(OAuthError),
    Other(OAuthError),
}

async fn register_as(
    http: &Http,
    registration_endpoint: &str,
    redirect_uri: &str,
    method: &ClientAuthMethod,
    auth_methods: Option<&[String]>,
    scope: Option<&str>,
) -> Result<Registered, RegisterFailure> {
    let mut body = json!({
        "client_name": "Patchbay",
        "application_type": "native",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method.as_str(),
    });
    if let Some(scope) = scope {
        body["scope"] = json!(scope);
    }
    let request = http
        .client()
        .post(registration_endpoint)
        .header(reqwest::header::ACCEPT, "application/json")
        .json(&body);
    let answer = http
        .send(registration_endpoint, request)
        .await
        .map_err(RegisterFailure::Other)?;
    let failed = |message: String| OAuthError::Registration {
        url: registration_endpoint.to_string(),
        message,
    };
    if answer.status.is_server_error() {
        return Err(RegisterFailure::Other(crate::discovery::status_error(
            &answer,
        )));
    }
    if !answer.status.is_success() {
        let v: Option<Value> = serde_json::from_slice(&answer.body).ok();
        let error = v
            .as_ref()
            .and_then(|v| v.get("error"))
            .and_then(Value::as_str)
            .unwrap_or("error");
        let description = v
            .as_ref()
            .and_then(|v| v.get("error_description"))
            .and_then(Value::as_str)
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        let e = failed(format!(
            "HTTP {} {error}{description}",
            answer.status.as_u16()
        ));
        return Err(if answer.status.is_client_error() {
            RegisterFailure::Refused(e)
        } else {
            RegisterFailure::Other(e)
        });
    }
    let v = answer.json().map_err(RegisterFailure::Other)?;
    parse_registration(registration_endpoint, &v, auth_methods).map_err(RegisterFailure::Other)
}

/// Reads a successful registration answer (RFC 7591 §3.2.1) from `registration_endpoint`: the
/// client id (required), its secret and the token-endpoint authentication method to use with
/// it. `auth_methods`: the server metadata's `token_endpoint_auth_methods_supported`.
pub fn parse_registration(
    registration_endpoint: &str,
    v: &Value,
    auth_methods: Option<&[String]>,
) -> Result<Registered, OAuthError> {
    let failed = |message: String| OAuthError::Registration {
        url: registration_endpoint.to_string(),
        message,
    };
    let client_id = v
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| failed("the answer has no client_id".into()))?
        .to_string();
    let client_secret = v
        .get("client_secret")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(Secret::new);
    let registered_method = v
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .map(ClientAuthMethod::from);
    // The server's answer is what it will enforce; without a secret there is nothing to send.
    // A secret beside an explicit `none` (Authlib mints one for every client) is never sent:
    // the server would take it for a secret-based method the client was not registered for.
    // A method Patchbay cannot perform (`private_key_jwt`, ...) beside a secret is read as no
    // method named: the secret, sent the way the server's list says.
    let (client_secret, token_auth_method) = match (client_secret, registered_method) {
        (None, _) => (None, ClientAuthMethod::None),
        (Some(_), Some(ClientAuthMethod::None)) => (None, ClientAuthMethod::None),
        (
            Some(s),
            Some(m @ (ClientAuthMethod::ClientSecretBasic | ClientAuthMethod::ClientSecretPost)),
        ) => (Some(s), m),
        (Some(s), None | Some(ClientAuthMethod::Other(_))) => {
            (Some(s), token_auth_method(true, auth_methods))
        }
    };
    Ok(Registered {
        client_id,
        client_secret,
        token_auth_method,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("/cfg/oauth-clients.json")
    }

    #[test]
    fn clients_file_parses_every_field() {
        let map = parse_clients(
            r#"{ "slack": { "clientId": "1.2", "clientSecret": "${SLACK_SECRET}",
                 "authorizationEndpoint": "https://slack.com/oauth/v2/authorize",
                 "tokenEndpoint": "https://slack.com/api/oauth.v2.access",
                 "scopes": ["a", "b"], "redirectUri": "http://localhost:3118/callback",
                 "manual": true, "resource": "" } }"#,
            p(),
        )
        .unwrap();
        let slack = &map["slack"];
        assert_eq!(slack.client_id, "1.2");
        assert_eq!(
            slack.client_secret.as_ref().unwrap().expose(),
            "${SLACK_SECRET}"
        );
        assert_eq!(slack.scopes, vec!["a", "b"]);
        assert!(slack.manual);
        assert_eq!(slack.resource.as_deref(), Some(""));
        assert!(slack.endpoints().is_some());
        assert!(!format!("{slack:?}").contains("SLACK_SECRET"));
    }

    #[test]
    fn a_bad_file_names_file_and_field() {
        let cases = [
            (r#"{ "x": { } }"#, "x.clientId"),
            (r#"{ "x": { "clientId": 5 } }"#, "x.clientId"),
            (
                r#"{ "x": { "clientId": "c", "manual": "yes" } }"#,
                "x.manual",
            ),
            (r#"{ "x": { "clientId": "c", "scopes": [1] } }"#, "x.scopes"),
            (
                r#"{ "x": { "clientId": "c", "tokenEndpoint": "ftp://t" } }"#,
                "x.tokenEndpoint",
            ),
            (
                r#"{ "x": { "clientId": "c", "tokenEndpoint": "https://t" } }"#,
                "x.tokenEndpoint",
            ),
            (
                r#"{ "x": { "clientId": "c", "clientSecrt": "s" } }"#,
                "x.clientSecrt",
            ),
            (r#"{ "x": 1 }"#, "x"),
            (r#"[]"#, "(top level)"),
            (r#"{ "x": "#, "line 1"),
        ];
        for (text, field) in cases {
            let err = parse_clients(text, p()).unwrap_err();
            let msg = err.to_string();
            assert!(msg.starts_with("/cfg/oauth-clients.json: "), "{msg}");
            assert!(msg.contains(field), "{text}: {msg}");
        }
        assert!(
            load_clients_file(Path::new("/nonexistent/oauth-clients.json"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn auth_method_follows_the_servers_list() {
        assert_eq!(token_auth_method(false, None), "none");
        assert_eq!(token_auth_method(true, None), "client_secret_basic");
        let post = vec!["client_secret_post".to_string()];
        assert_eq!(token_auth_method(true, Some(&post)), "client_secret_post");
        let both = vec![
            "client_secret_post".to_string(),
            "client_secret_basic".to_string(),
        ];
        assert_eq!(token_auth_method(true, Some(&both)), "client_secret_basic");
    }

    #[test]
    fn secrets_expand_vault_first_placeholders() {
        let resolve = |n: &str| (n == "S").then(|| "value".to_string());
        assert_eq!(
            resolve_secret("oauth.clientSecret", &Secret::new("${S}"), &resolve)
                .unwrap()
                .expose(),
            "value"
        );
        let err = resolve_secret("oauth.clientSecret", &Secret::new("${NOPE}"), &resolve)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("NOPE") && err.contains("oauth.clientSecret"),
            "{err}"
        );
    }

    /// A registration endpoint on 127.0.0.1 that answers every request with `answer(body)`
    /// and records the `token_endpoint_auth_method` each asked for.
    async fn registration_endpoint(
        answer: fn(&Value) -> (u16, Value),
    ) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let app = axum::Router::new().route(
            "/register",
            axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
                let log = log.clone();
                async move {
                    let method = body["token_endpoint_auth_method"].as_str().unwrap_or("");
                    log.lock().unwrap().push(method.to_string());
                    let (status, v) = answer(&body);
                    (
                        axum::http::StatusCode::from_u16(status).unwrap(),
                        axum::Json(v),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/register", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (url, seen)
    }

    #[tokio::test]
    async fn registers_as_a_public_client_even_when_the_metadata_lists_only_secrets() {
        let http = Http::new(std::time::Duration::from_secs(5));
        // FastMCP's metadata lists client_secret_post and client_secret_basic only; it
        // registers a public client all the same.
        let listed = vec![
            "client_secret_post".to_string(),
            "client_secret_basic".to_string(),
        ];
        let (url, seen) = registration_endpoint(|body| {
            (
                201,
                json!({"client_id": "pub", "token_endpoint_auth_method":
                    body["token_endpoint_auth_method"]}),
            )
        })
        .await;
        let reg = register(
            &http,
            &url,
            "http://127.0.0.1:1/callback",
            Some(&listed),
            None,
        )
        .await
        .unwrap();
        assert_eq!(reg.client_id, "pub");
        assert_eq!(reg.token_auth_method, "none");
        assert!(reg.client_secret.is_none());
        assert_eq!(*seen.lock().unwrap(), ["none"]);
    }

    #[tokio::test]
    async fn a_refused_public_registration_is_redone_once_as_confidential() {
        let http = Http::new(std::time::Duration::from_secs(5));
        let listed = vec!["client_secret_post".to_string()];
        let (url, seen) = registration_endpoint(|body| {
            if body["token_endpoint_auth_method"] == "none" {
                (
                    400,
                    json!({"error": "invalid_client_metadata",
                    "error_description": "public clients are not allowed"}),
                )
            } else {
                (
                    201,
                    json!({"client_id": "conf", "client_secret": "sec",
                    "token_endpoint_auth_method": body["token_endpoint_auth_method"]}),
                )
            }
        })
        .await;
        let reg = register(
            &http,
            &url,
            "http://127.0.0.1:1/callback",
            Some(&listed),
            None,
        )
        .await
        .unwrap();
        assert_eq!(reg.token_auth_method, "client_secret_post");
        assert_eq!(reg.client_secret.unwrap().expose(), "sec");
        assert_eq!(*seen.lock().unwrap(), ["none", "client_secret_post"]);

        // Refused both ways: one error that says both reasons.
        let (url, seen) =
            registration_endpoint(|_| (400, json!({"error": "invalid_redirect_uri"}))).await;
        let err = register(&http, &url, "http://127.0.0.1:1/callback", None, None)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("as a public client"), "{err}");
        assert_eq!(*seen.lock().unwrap(), ["none", "client_secret_basic"]);
    }

    #[tokio::test]
    async fn a_secret_handed_out_anyway_is_used_the_way_the_answer_says() {
        let http = Http::new(std::time::Duration::from_secs(5));
        let (url, _) = registration_endpoint(|_| {
            (
                201,
                json!({"client_id": "c", "client_secret": "s",
                "token_endpoint_auth_method": "client_secret_basic"}),
            )
        })
        .await;
        let reg = register(&http, &url, "http://127.0.0.1:1/callback", None, None)
            .await
            .unwrap();
        assert_eq!(reg.token_auth_method, "client_secret_basic");
        assert_eq!(reg.client_secret.unwrap().expose(), "s");

        // A secret beside an explicit `none` (Authlib's answer to a public registration).
        let (url, _) = registration_endpoint(|_| {
            (
                201,
                json!({"client_id": "c", "client_secret": "s",
                "token_endpoint_auth_method": "none"}),
            )
        })
        .await;
        let reg = register(&http, &url, "http://127.0.0.1:1/callback", None, None)
            .await
            .unwrap();
        assert_eq!(reg.token_auth_method, "none");
        assert!(reg.client_secret.is_none());
    }

    #[test]
    fn a_registered_method_patchbay_cannot_perform_is_read_as_none_named() {
        let listed = vec!["client_secret_post".to_string()];
        let answer = json!({"client_id": "c", "client_secret": "s",
            "token_endpoint_auth_method": "private_key_jwt"});
        let reg = parse_registration("http://as/register", &answer, Some(&listed)).unwrap();
        assert_eq!(reg.token_auth_method, ClientAuthMethod::ClientSecretPost);
        assert_eq!(reg.client_secret.unwrap().expose(), "s");
        // Without a secret there is nothing to send: a public client.
        let answer = json!({"client_id": "c", "token_endpoint_auth_method": "private_key_jwt"});
        let reg = parse_registration("http://as/register", &answer, Some(&listed)).unwrap();
        assert_eq!(reg.token_auth_method, ClientAuthMethod::None);
    }
}
