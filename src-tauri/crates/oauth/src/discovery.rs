//! Discovery (MCP authorization, client side): the unauthenticated probe and its 401 challenge,
//! protected-resource metadata (RFC 9728) and authorization-server metadata (RFC 8414 and OpenID
//! Connect Discovery), with the exact-issuer check.

use reqwest::StatusCode;
use serde_json::{json, Value};
use url::Url;

use crate::http::Http;
use crate::OAuthError;

/// The parameters of a `WWW-Authenticate: Bearer` challenge that discovery reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

/// Protected-resource metadata (RFC 9728), the fields we use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceMetadata {
    pub url: String,
    pub resource: Option<String>,
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Vec<String>,
}

/// Authorization-server metadata (RFC 8414 / OpenID), the fields we use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerMetadata {
    /// Where the document was read.
    pub url: String,
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub revocation_endpoint: Option<String>,
    pub scopes_supported: Vec<String>,
    /// `None` when the document does not list them (then PKCE S256 is refused).
    pub code_challenge_methods_supported: Option<Vec<String>>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub authorization_response_iss_parameter_supported: bool,
    pub client_id_metadata_document_supported: bool,
}

impl ServerMetadata {
    pub fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"))
    }

    pub fn advertises_scope(&self, scope: &str) -> bool {
        self.scopes_supported.iter().any(|s| s == scope)
    }
}

/// Everything discovery learned about one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    pub challenge: Option<Challenge>,
    pub resource: Option<ResourceMetadata>,
    pub server: ServerMetadata,
}

/// Parses a `WWW-Authenticate` value for its Bearer challenge's parameters: auth-params of
/// token or quoted-string form (RFC 9110 §11.2), commas and escaped quotes inside quotes.
/// `None` when no Bearer challenge is present.
pub fn parse_www_authenticate(header: &str) -> Option<Challenge> {
    let mut rest = header;
    // Find a "Bearer" scheme token at a challenge start.
    loop {
        let trimmed = rest.trim_start_matches([' ', '\t', ',']);
        let (scheme, after) = split_token(trimmed);
        if scheme.is_empty() {
            return None;
        }
        if scheme.eq_ignore_ascii_case("bearer") {
            rest = after;
            break;
        }
        // Skip this challenge's params up to the next scheme.
        rest = skip_params(after)?;
    }
    let mut challenge = Challenge::default();
    let mut s = rest;
    loop {
        s = s.trim_start_matches([' ', '\t', ',']);
        let (name, after) = split_token(s);
        if name.is_empty() {
            break;
        }
        let after_ws = after.trim_start_matches([' ', '\t']);
        let Some(value_part) = after_ws.strip_prefix('=') else {
            // A new scheme begins: the Bearer challenge ended.
            break;
        };
        let value_part = value_part.trim_start_matches([' ', '\t']);
        let (value, remaining) = if let Some(quoted) = value_part.strip_prefix('"') {
            read_quoted(quoted)?
        } else {
            let (v, r) = split_token(value_part);
            (v.to_string(), r)
        };
        match name.to_ascii_lowercase().as_str() {
            "resource_metadata" => challenge.resource_metadata = Some(value),
            "scope" => challenge.scope = Some(value),
            "error" => challenge.error = Some(value),
            _ => {}
        }
        s = remaining;
    }
    Some(challenge)
}

fn split_token(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| c.is_whitespace() || c == ',' || c == '=' || c == '"')
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

fn read_quoted(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?.1),
            '"' => return Some((out, &s[i + 1..])),
            c => out.push(c),
        }
    }
    None
}

/// Skips `name=value` pairs of a non-Bearer challenge; returns the text from the next scheme.
fn skip_params(mut s: &str) -> Option<&str> {
    loop {
        s = s.trim_start_matches([' ', '\t', ',']);
        let (name, after) = split_token(s);
        if name.is_empty() {
            return Some(s);
        }
        let after_ws = after.trim_start_matches([' ', '\t']);
        match after_ws.strip_prefix('=') {
            Some(v) => {
                let v = v.trim_start_matches([' ', '\t']);
                s = if let Some(q) = v.strip_prefix('"') {
                    read_quoted(q)?.1
                } else if v.starts_with('=') || v.is_empty() || v.starts_with(',') {
                    // token68 padding
                    v.trim_start_matches('=')
                } else {
                    split_token(v).1
                };
            }
            None => return Some(s),
        }
    }
}

/// The unauthenticated request: POST an MCP `initialize` (revision 2025); a server that refuses
/// it with a 400 (a revision 2026-07-28 server, which has no `initialize`) is asked once more the
/// stateless way (`tools/list` with the revision's headers and `_meta`). `Some` with the Bearer
/// challenge on 401 (an empty one when the header is absent or not Bearer), `None` on any other
/// answer.
pub async fn probe(http: &Http, mcp_url: &str) -> Result<Option<Challenge>, OAuthError> {
    let client_info = json!({ "name": "patchbay", "version": env!("CARGO_PKG_VERSION") });
    let initialize = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": client_info
        }
    });
    match probe_with(http, mcp_url, &initialize, &[]).await? {
        Probed::Challenged(c) => return Ok(Some(c)),
        Probed::Other(status) if status != StatusCode::BAD_REQUEST => return Ok(None),
        Probed::Other(_) => {}
    }
    let stateless = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": { "_meta": {
            "io.modelcontextprotocol/protocolVersion": STATELESS_REVISION,
            "io.modelcontextprotocol/clientInfo": client_info,
            "io.modelcontextprotocol/clientCapabilities": {}
        } }
    });
    let headers = [
        ("MCP-Protocol-Version", STATELESS_REVISION),
        ("Mcp-Method", "tools/list"),
    ];
    Ok(
        match probe_with(http, mcp_url, &stateless, &headers).await? {
            Probed::Challenged(c) => Some(c),
            Probed::Other(_) => None,
        },
    )
}

/// The first MCP revision without `initialize`.
const STATELESS_REVISION: &str = "2026-07-28";

enum Probed {
    Challenged(Challenge),
    Other(StatusCode),
}

async fn probe_with(
    http: &Http,
    mcp_url: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> Result<Probed, OAuthError> {
    let mut request = http
        .client()
        .post(mcp_url)
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let answer = match http.send(mcp_url, request).await {
        Ok(a) => a,
        // A streaming 200 larger than our cap still tells us no auth is needed.
        Err(OAuthError::TooLarge { .. }) => return Ok(Probed::Other(StatusCode::OK)),
        Err(e) => return Err(e),
    };
    if answer.status != StatusCode::UNAUTHORIZED {
        return Ok(Probed::Other(answer.status));
    }
    let challenge = answer
        .headers
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(parse_www_authenticate)
        .unwrap_or_default();
    Ok(Probed::Challenged(challenge))
}

fn parse_url(url: &str) -> Result<Url, OAuthError> {
    let parsed = Url::parse(url).map_err(|e| OAuthError::BadUrl {
        url: url.to_string(),
        message: e.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err(OAuthError::BadUrl {
            url: url.to_string(),
            message: "not an http(s) URL with a host".into(),
        });
    }
    Ok(parsed)
}

/// The path of a URL without its trailing slash (`""` for the root).
fn trimmed_path(url: &Url) -> String {
    url.path().trim_end_matches('/').to_string()
}

fn with_path(base: &Url, path: &str) -> String {
    let mut u = base.clone();
    u.set_path(path);
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// Where to look for protected-resource metadata when the challenge names none: with the MCP
/// URL's path inserted, then at the root.
pub fn resource_metadata_urls(mcp_url: &str) -> Result<Vec<String>, OAuthError> {
    let url = parse_url(mcp_url)?;
    let path = trimmed_path(&url);
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(with_path(
            &url,
            &format!("/.well-known/oauth-protected-resource{path}"),
        ));
    }
    urls.push(with_path(&url, "/.well-known/oauth-protected-resource"));
    Ok(urls)
}

/// Where to look for an issuer's metadata, in order (MCP authorization, RFC 8414 §3.1).
pub fn server_metadata_urls(issuer: &str) -> Result<Vec<String>, OAuthError> {
    let url = parse_url(issuer)?;
    let path = trimmed_path(&url);
    Ok(if path.is_empty() {
        vec![
            with_path(&url, "/.well-known/oauth-authorization-server"),
            with_path(&url, "/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            with_path(
                &url,
                &format!("/.well-known/oauth-authorization-server{path}"),
            ),
            with_path(&url, &format!("/.well-known/openid-configuration{path}")),
            with_path(&url, &format!("{path}/.well-known/openid-configuration")),
        ]
    })
}

async fn fetch_json(http: &Http, url: &str) -> Result<Value, OAuthError> {
    let answer = http.get(url).await?;
    if !answer.status.is_success() {
        return Err(status_error(&answer));
    }
    let value = answer.json()?;
    if !value.is_object() {
        return Err(OAuthError::BadDocument {
            url: answer.url,
            message: "not a JSON object".into(),
        });
    }
    Ok(value)
}

pub(crate) fn status_error(answer: &crate::http::Answer) -> OAuthError {
    if answer.status.is_server_error() {
        OAuthError::ServerError {
            url: answer.url.clone(),
            status: answer.status.as_u16(),
        }
    } else {
        OAuthError::Status {
            url: answer.url.clone(),
            status: answer.status.as_u16(),
            detail: None,
        }
    }
}

fn strings(v: &Value, key: &str) -> Option<Vec<String>> {
    v.get(key)?.as_array().map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    })
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Fetches protected-resource metadata: the challenge's `resource_metadata` when given (and
/// then only it), else the well-known locations in order.
pub async fn resource_metadata(
    http: &Http,
    mcp_url: &str,
    challenge: Option<&Challenge>,
) -> Result<ResourceMetadata, OAuthError> {
    let candidates = match challenge.and_then(|c| c.resource_metadata.clone()) {
        Some(url) => vec![url],
        None => resource_metadata_urls(mcp_url)?,
    };
    let mut tried = Vec::new();
    for url in candidates {
        match fetch_json(http, &url).await {
            Ok(v) => {
                let metadata = parse_resource_metadata(&url, &v);
                // Checked before anything in it is used, the authorization servers included.
                return match metadata.resource.as_deref() {
                    Some(resource) if resource_identifies(resource, mcp_url) => Ok(metadata),
                    resource => Err(OAuthError::ResourceMismatch {
                        metadata_url: url,
                        resource: resource.map(str::to_string),
                        server_url: mcp_url.to_string(),
                    }),
                };
            }
            Err(e) if e.is_retryable() || matches!(e, OAuthError::Timeout { .. }) => return Err(e),
            Err(e) => tried.push(format!("{url} ({e})")),
        }
    }
    Err(OAuthError::NoResourceMetadata {
        resource: mcp_url.to_string(),
        tried,
    })
}

/// Whether a protected-resource document's `resource` identifies the MCP server at `mcp_url`
/// (RFC 9728 §3.3, MCP authorization): the same origin (scheme, host, port), and a path that is
/// the server's own or a parent of it on a segment boundary (a document found at the root
/// well-known location names the origin). Compared as parsed URLs, so case in the scheme and
/// host, a default port and a trailing slash do not matter; a query or fragment never matches.
pub fn resource_identifies(resource: &str, mcp_url: &str) -> bool {
    let (Ok(resource), Ok(server)) = (Url::parse(resource), Url::parse(mcp_url)) else {
        return false;
    };
    if resource.origin() != server.origin()
        || !resource.username().is_empty()
        || resource.password().is_some()
        || resource.query().is_some()
        || resource.fragment().is_some()
    {
        return false;
    }
    let parent = trimmed_path(&resource);
    let path = trimmed_path(&server);
    path == parent || path.starts_with(&format!("{parent}/"))
}

/// Reads a protected-resource metadata document fetched from `url`: the fields we use, with
/// members of the wrong type taken as absent.
pub fn parse_resource_metadata(url: &str, v: &Value) -> ResourceMetadata {
    ResourceMetadata {
        resource: text(v, "resource"),
        authorization_servers: strings(v, "authorization_servers").unwrap_or_default(),
        scopes_supported: strings(v, "scopes_supported").unwrap_or_default(),
        url: url.to_string(),
    }
}

/// Reads one authorization-server metadata document. `expected_issuer`: the issuer the URL was
/// built from; a document naming another is discarded. `None` accepts the document's own
/// issuer (a pinned `authServerMetadataUrl` with nothing to compare against).
pub async fn server_metadata_at(
    http: &Http,
    url: &str,
    expected_issuer: Option<&str>,
) -> Result<ServerMetadata, OAuthError> {
    let v = fetch_json(http, url).await?;
    parse_server_metadata(url, &v, expected_issuer)
}

/// Reads an authorization-server metadata document fetched from `url` (see
/// [`server_metadata_at`] for `expected_issuer`): the issuer check, the two required endpoints
/// (absolute URLs), the optional fields we use.
pub fn parse_server_metadata(
    url: &str,
    v: &Value,
    expected_issuer: Option<&str>,
) -> Result<ServerMetadata, OAuthError> {
    let bad = |message: String| OAuthError::BadDocument {
        url: url.to_string(),
        message,
    };
    let issuer = text(v, "issuer").ok_or_else(|| bad("no issuer".into()))?;
    if let Some(expected) = expected_issuer {
        if issuer != expected {
            return Err(bad(format!(
                "its issuer {issuer:?} is not {expected:?}; discarded"
            )));
        }
    }
    let endpoint = |key: &str| -> Result<String, OAuthError> {
        let value = text(v, key).ok_or_else(|| bad(format!("no {key}")))?;
        parse_url(&value)?;
        Ok(value)
    };
    Ok(ServerMetadata {
        url: url.to_string(),
        authorization_endpoint: endpoint("authorization_endpoint")?,
        token_endpoint: endpoint("token_endpoint")?,
        registration_endpoint: text(v, "registration_endpoint"),
        revocation_endpoint: text(v, "revocation_endpoint"),
        scopes_supported: strings(v, "scopes_supported").unwrap_or_default(),
        code_challenge_methods_supported: strings(v, "code_challenge_methods_supported"),
        token_endpoint_auth_methods_supported: strings(v, "token_endpoint_auth_methods_supported"),
        authorization_response_iss_parameter_supported: v
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        client_id_metadata_document_supported: v
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        issuer,
    })
}

/// The issuer's metadata from the first well-known location that answers with a document whose
/// `issuer` is exactly `issuer`.
pub async fn server_metadata(http: &Http, issuer: &str) -> Result<ServerMetadata, OAuthError> {
    let mut tried = Vec::new();
    for url in server_metadata_urls(issuer)? {
        match server_metadata_at(http, &url, Some(issuer)).await {
            Ok(m) => return Ok(m),
            Err(e) if e.is_retryable() || matches!(e, OAuthError::Timeout { .. }) => return Err(e),
            Err(e) => tried.push(e.to_string()),
        }
    }
    Err(OAuthError::NoServerMetadata {
        issuer: issuer.to_string(),
        tried,
    })
}

/// The endpoints a revision 2025-03-26 server without any metadata implies: `/authorize`,
/// `/token` and `/register` at its origin, PKCE S256 assumed (that revision requires it of
/// every client, and there is no document that could say otherwise).
pub fn default_endpoints(mcp_url: &str) -> Result<ServerMetadata, OAuthError> {
    let url = parse_url(mcp_url)?;
    Ok(ServerMetadata {
        url: String::new(),
        issuer: url.origin().ascii_serialization(),
        authorization_endpoint: with_path(&url, "/authorize"),
        token_endpoint: with_path(&url, "/token"),
        registration_endpoint: Some(with_path(&url, "/register")),
        code_challenge_methods_supported: Some(vec!["S256".into()]),
        ..ServerMetadata::default()
    })
}

/// The authorization server of a server that publishes no protected-resource metadata (MCP
/// revision 2025-03-26): its origin's RFC 8414 metadata, else the default endpoints.
async fn legacy_server(http: &Http, mcp_url: &str) -> Result<ServerMetadata, OAuthError> {
    let origin = parse_url(mcp_url)?.origin().ascii_serialization();
    match server_metadata(http, &origin).await {
        Ok(m) => Ok(m),
        Err(OAuthError::NoServerMetadata { tried, .. }) => {
            tracing::info!(
                server = mcp_url,
                tried = tried.len(),
                "no authorization-server metadata at the origin either; using the default endpoints"
            );
            default_endpoints(mcp_url)
        }
        Err(e) => Err(e),
    }
}

/// The whole discovery for an MCP server. `metadata_override`: the catalog's
/// `authServerMetadataUrl`, read instead of the well-known locations. A server with no
/// protected-resource metadata anywhere is one of revision 2025-03-26 (see [`legacy_server`]).
/// A document for another resource is never used, pinned server or not.
pub async fn discover(
    http: &Http,
    mcp_url: &str,
    metadata_override: Option<&str>,
) -> Result<Discovery, OAuthError> {
    let challenge = probe(http, mcp_url).await?;
    let resource = match resource_metadata(http, mcp_url, challenge.as_ref()).await {
        Ok(r) => Some(r),
        Err(e @ OAuthError::ResourceMismatch { .. }) => return Err(e),
        Err(OAuthError::NoResourceMetadata { .. }) => None,
        Err(e) if metadata_override.is_some() && !e.is_retryable() => None,
        Err(e) => return Err(e),
    };
    let server = match (metadata_override, &resource) {
        (Some(url), _) => {
            // Pinned: the document must name one of the resource's servers, when it lists any.
            let m = server_metadata_at(http, url, None).await?;
            if let Some(r) = &resource {
                if !r.authorization_servers.is_empty()
                    && !r.authorization_servers.contains(&m.issuer)
                {
                    return Err(OAuthError::BadDocument {
                        url: url.to_string(),
                        message: format!(
                            "its issuer {:?} is not one of the resource's authorization servers; discarded",
                            m.issuer
                        ),
                    });
                }
            }
            m
        }
        (None, Some(r)) => {
            let issuer =
                r.authorization_servers
                    .first()
                    .ok_or_else(|| OAuthError::BadDocument {
                        url: r.url.clone(),
                        message: "it lists no authorization_servers".into(),
                    })?;
            server_metadata(http, issuer).await?
        }
        (None, None) => legacy_server(http, mcp_url).await?,
    };
    Ok(Discovery {
        challenge,
        resource,
        server,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_params_quoted_and_token() {
        let c = parse_www_authenticate(
            r#"Bearer realm="mcp", error="invalid_token", scope="read write", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp""#,
        )
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope.as_deref(), Some("read write"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
        let t = parse_www_authenticate("bearer error=insufficient_scope,scope=a").unwrap();
        assert_eq!(t.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(t.scope.as_deref(), Some("a"));
    }

    #[test]
    fn commas_and_escapes_inside_quotes() {
        let c = parse_www_authenticate(
            r#"Bearer scope="a,b c", error_description="say \"no\", please", error="x""#,
        )
        .unwrap();
        assert_eq!(c.scope.as_deref(), Some("a,b c"));
        assert_eq!(c.error.as_deref(), Some("x"));
    }

    #[test]
    fn bearer_after_another_scheme_and_none_without_bearer() {
        let c = parse_www_authenticate(r#"Basic realm="x, y", Bearer scope="s""#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("s"));
        assert_eq!(parse_www_authenticate(r#"Basic realm="x""#), None);
        assert_eq!(parse_www_authenticate(""), None);
        assert_eq!(
            parse_www_authenticate("Bearer").unwrap(),
            Challenge::default()
        );
        // Unterminated quote: no panic.
        let _ = parse_www_authenticate(r#"Bearer scope="abc"#);
    }

    #[test]
    fn a_resource_identifies_its_server_or_a_parent_path_on_the_same_origin() {
        let server = "https://mcp.example.com/v1/mcp";
        for same in [
            "https://mcp.example.com/v1/mcp",
            "https://mcp.example.com/v1/mcp/",
            "HTTPS://MCP.example.com:443/v1/mcp",
            "https://mcp.example.com/v1",
            "https://mcp.example.com/",
            "https://mcp.example.com",
        ] {
            assert!(resource_identifies(same, server), "{same}");
        }
        for other in [
            "https://evil.example.com/mcp",
            "https://mcp.example.com.evil.example/v1/mcp",
            "http://mcp.example.com/v1/mcp",
            "https://mcp.example.com:8443/v1/mcp",
            "https://mcp.example.com/v1/mcp/deeper",
            "https://mcp.example.com/v1/mc",
            "https://mcp.example.com/v",
            "https://mcp.example.com/other",
            "https://mcp.example.com/v1/mcp?tenant=b",
            "https://mcp.example.com/v1/mcp#f",
            "https://user@mcp.example.com/v1/mcp",
            "not a url",
            "",
        ] {
            assert!(!resource_identifies(other, server), "{other}");
        }
    }

    #[test]
    fn well_known_urls() {
        assert_eq!(
            resource_metadata_urls("https://mcp.example.com/v1/mcp/?q=1#f").unwrap(),
            vec![
                "https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            resource_metadata_urls("https://mcp.example.com").unwrap(),
            vec!["https://mcp.example.com/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            server_metadata_urls("https://auth.example.com/tenant1").unwrap(),
            vec![
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            server_metadata_urls("https://auth.example.com/").unwrap(),
            vec![
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }
}
