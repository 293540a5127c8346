//! Starting an authorization: the redirect URI and how the flow will complete, the client, the
//! scopes and the resource indicator, PKCE S256 and a single-use `state`, and the pending flow
//! kept in the vault until the callback arrives (or it expires and is swept).

use std::time::Duration;

use chrono::{DateTime, Utc};
use oauth2::{CsrfToken, PkceCodeChallenge};
use patchbay_catalog::{CredentialKey, OAuthConfig};
use patchbay_vault::{ClientAuthMethod, PendingFlow, Registration, Secret, Vault};
use url::Url;

use crate::cimd::ClientMetadataUrl;
use crate::client::{self, PreRegistered};
use crate::discovery::{self, Challenge, ResourceMetadata, ServerMetadata};
use crate::http::Http;
use crate::OAuthError;

/// How long a pending flow waits for its callback.
pub const FLOW_TTL: Duration = Duration::from_secs(10 * 60);
/// The receiver's default port (also what Slack's and Claude Code's pre-registered redirects use).
pub const DEFAULT_PORT: u16 = 3118;

/// Our receiver's redirect URI on `port`.
pub fn receiver_redirect_uri(port: u16) -> String {
    format!("http://127.0.0.1:{port}/callback")
}

/// How a flow finishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// The provider redirects to our loopback receiver.
    Receiver,
    /// The user pastes the redirected URL (or the code); `why` says why in a sentence.
    PasteBack { why: String },
}

/// Whether `redirect_uri` is exactly our receiver's callback on `port`: http, host 127.0.0.1,
/// `localhost` or `[::1]` (the receiver listens on both families), that port, path `/callback`,
/// nothing else. "Is it our callback", not "does it look like localhost".
pub fn is_receiver_redirect(redirect_uri: &str, port: u16) -> bool {
    let Ok(url) = Url::parse(redirect_uri) else {
        return false;
    };
    url.scheme() == "http"
        && patchbay_catalog::own_gateway::is_loopback_host(url.host())
        && url.port() == Some(port)
        && url.path() == "/callback"
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none()
}

/// Paste-back when forced by `manual` or when the redirect is not our receiver's.
pub fn completion_for(redirect_uri: &str, manual: bool, port: u16) -> Completion {
    if manual {
        Completion::PasteBack {
            why: "this connector's client is configured for manual completion (manual: true)"
                .into(),
        }
    } else if is_receiver_redirect(redirect_uri, port) {
        Completion::Receiver
    } else {
        Completion::PasteBack {
            why: format!(
                "the redirect URI {redirect_uri} is not Patchbay's receiver (http://127.0.0.1:{port}/callback)"
            ),
        }
    }
}

/// The canonical resource indicator of an MCP URL (RFC 8707, MCP): no fragment, no trailing
/// slash; scheme and host lowercased by parsing.
pub fn canonical_resource(server_url: &str) -> Result<String, OAuthError> {
    let mut url = Url::parse(server_url).map_err(|e| OAuthError::BadUrl {
        url: server_url.to_string(),
        message: e.to_string(),
    })?;
    url.set_fragment(None);
    let mut text = url.to_string();
    if url.query().is_none() {
        while text.ends_with('/') {
            text.pop();
        }
    }
    Ok(text)
}

/// The scopes to request: configured ones (catalog or pre-registered) as given; else the 401
/// challenge's `scope`; else all of the resource's `scopes_supported`; else none. Then
/// `offline_access` only when the authorization server advertises it.
pub fn choose_scopes(
    configured: &[String],
    challenge: Option<&Challenge>,
    resource: Option<&ResourceMetadata>,
    server: Option<&ServerMetadata>,
) -> Option<String> {
    let mut scopes: Vec<String> = if !configured.is_empty() {
        configured.to_vec()
    } else if let Some(scope) = challenge.and_then(|c| c.scope.as_deref()) {
        scope.split_whitespace().map(str::to_string).collect()
    } else if let Some(r) = resource {
        r.scopes_supported.clone()
    } else {
        Vec::new()
    };
    if server.is_some_and(|s| s.advertises_scope("offline_access"))
        && !scopes.iter().any(|s| s == "offline_access")
    {
        scopes.push("offline_access".into());
    }
    let mut seen = std::collections::HashSet::new();
    scopes.retain(|s| !s.is_empty() && seen.insert(s.clone()));
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// The scopes of a step-up: a re-authorization because the server answered 403
/// `insufficient_scope` (or a 401 naming a scope). The request asks for the union of what was
/// asked for before and what the challenge names (SEP-2350), never the challenge alone, so
/// access granted earlier is not dropped.
#[derive(Debug, Clone, Copy)]
pub struct StepUp<'a> {
    /// The scopes the connector's grant asked for (space-separated), if it has one.
    pub prior: Option<&'a str>,
    /// The scopes the challenge named.
    pub challenged: &'a str,
}

/// Space-separated scope lists joined, each scope once, in first-seen order.
pub fn union_scopes<'a>(lists: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    let scopes: Vec<&str> = lists
        .into_iter()
        .flat_map(str::split_whitespace)
        .filter(|s| seen.insert(*s))
        .collect();
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// What the caller knows about the connector being authorized.
pub struct FlowRequest<'a> {
    pub connector: &'a str,
    /// The catalog's URL, `${VAR}`s expanded.
    pub server_url: &'a str,
    pub credential_key: CredentialKey,
    /// The catalog entry's `oauth` block.
    pub catalog: Option<&'a OAuthConfig>,
    /// This server's entry in the user's `oauth-clients.json`.
    pub pre_registered: Option<&'a PreRegistered>,
    /// Where `oauth-clients.json` lives, for the "add a clientId" message.
    pub clients_file: &'a str,
    /// `${VAR}` resolution: vault first, then the environment.
    pub resolve: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// Patchbay's client metadata document, for servers that take one instead of registering.
    pub client_metadata: &'a ClientMetadataUrl,
    /// Set for a step-up: ask for more than before.
    pub step_up: Option<StepUp<'a>>,
    /// The receiver's port.
    pub port: u16,
    pub now: DateTime<Utc>,
    pub ttl: Duration,
}

/// A started flow. `Debug` redacts the state, in the authorize URL too (with the code it
/// finishes the flow).
#[derive(Clone)]
pub struct Begun {
    pub connector: String,
    pub authorize_url: String,
    pub redirect_uri: String,
    pub completion: Completion,
    pub state: String,
    pub issuer: String,
    pub expires_at: DateTime<Utc>,
}

impl std::fmt::Debug for Begun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::receiver::REDACTED;
        let url = match self.state.is_empty() {
            true => self.authorize_url.clone(),
            false => self.authorize_url.replace(&self.state, REDACTED),
        };
        f.debug_struct("Begun")
            .field("connector", &self.connector)
            .field("authorize_url", &url)
            .field("redirect_uri", &self.redirect_uri)
            .field("completion", &self.completion)
            .field("state", &REDACTED)
            .field("issuer", &self.issuer)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Where the client came from.
enum ClientSource {
    Catalog,
    PreRegistered,
    /// Patchbay's client metadata document: the client id is its URL, a public client.
    MetadataDocument,
    Registered,
}

/// Runs discovery (unless the pre-registered client gives the endpoints), resolves the client,
/// builds the authorization URL and stores the pending flow. Sweeps expired flows first.
pub async fn begin(http: &Http, vault: &Vault, req: &FlowRequest<'_>) -> Result<Begun, OAuthError> {
    vault.sweep_expired_flows(req.now)?;

    let catalog = req.catalog.cloned().unwrap_or_default();
    let catalog_client = catalog.client_id.as_deref().filter(|c| !c.is_empty());
    // The pre-registered client applies only when the catalog names none.
    let pre = if catalog_client.is_none() {
        req.pre_registered
    } else {
        None
    };
    let expand = |field: &str, value: &str| -> Result<String, OAuthError> {
        patchbay_catalog::expand(value, req.resolve).map_err(|names| OAuthError::MissingVariable {
            field: field.to_string(),
            name: names.into_iter().next().unwrap_or_default(),
        })
    };

    let redirect_uri = match (
        &catalog.redirect_uri,
        pre.and_then(|p| p.redirect_uri.as_ref()),
    ) {
        (Some(r), _) => expand("oauth.redirectUri", r)?,
        (None, Some(r)) => r.clone(),
        (None, None) => receiver_redirect_uri(req.port),
    };
    let manual = catalog.manual || pre.is_some_and(|p| p.manual);
    let completion = completion_for(&redirect_uri, manual, req.port);

    // Endpoints: from the pre-registered client, or discovered.
    let (challenge, resource_md, server) = match pre.and_then(PreRegistered::endpoints) {
        Some((authorization, token)) => {
            let issuer = Url::parse(authorization)
                .map(|u| u.origin().ascii_serialization())
                .unwrap_or_else(|_| authorization.to_string());
            let server = ServerMetadata {
                url: String::new(),
                issuer,
                authorization_endpoint: authorization.to_string(),
                token_endpoint: token.to_string(),
                code_challenge_methods_supported: Some(vec!["S256".into()]),
                ..ServerMetadata::default()
            };
            (None, None, server)
        }
        None => {
            let metadata_override = catalog
                .auth_server_metadata_url
                .as_deref()
                .map(|u| expand("oauth.authServerMetadataUrl", u))
                .transpose()?;
            let d = discovery::discover(http, req.server_url, metadata_override.as_deref()).await?;
            (d.challenge, d.resource, d.server)
        }
    };
    if !server.supports_s256() {
        return Err(OAuthError::NoS256 {
            issuer: server.issuer.clone(),
        });
    }

    let configured_scopes: Vec<String> = if !catalog.scopes.is_empty() {
        catalog.scopes.clone()
    } else {
        pre.map(|p| p.scopes.clone()).unwrap_or_default()
    };
    let scopes = choose_scopes(
        &configured_scopes,
        challenge.as_ref(),
        resource_md.as_ref(),
        Some(&server),
    );
    let scopes = match req.step_up {
        Some(step) => union_scopes(
            [step.prior.or(scopes.as_deref()), Some(step.challenged)]
                .into_iter()
                .flatten(),
        ),
        None => scopes,
    };

    // A client metadata document comes before any registration, a stored one included.
    let metadata_document_id = match server.client_id_metadata_document_supported {
        true if catalog_client.is_none() && pre.is_none() => {
            req.client_metadata.client_id(http, &redirect_uri).await
        }
        _ => None,
    };

    // The client, in the spec's order.
    let (client_id, client_secret, source) = if let Some(id) = catalog_client {
        let secret = catalog
            .client_secret
            .as_ref()
            .map(|s| {
                client::resolve_secret("oauth.clientSecret", &Secret::new(s.clone()), req.resolve)
            })
            .transpose()?;
        (expand("oauth.clientId", id)?, secret, ClientSource::Catalog)
    } else if let Some(p) = pre {
        let secret = p
            .client_secret
            .as_ref()
            .map(|s| {
                client::resolve_secret(
                    &format!("{}.clientSecret in {}", req.connector, req.clients_file),
                    s,
                    req.resolve,
                )
            })
            .transpose()?;
        (p.client_id.clone(), secret, ClientSource::PreRegistered)
    } else if let Some(id) = metadata_document_id {
        tracing::info!(issuer = %server.issuer, client_id = %id, "using Patchbay's client metadata document");
        (id, None, ClientSource::MetadataDocument)
    } else if let Some(reg) = vault.registration(&server.issuer, &redirect_uri)? {
        (reg.client_id, reg.client_secret, ClientSource::Registered)
    } else if let Some(endpoint) = &server.registration_endpoint {
        let registered = client::register(
            http,
            endpoint,
            &redirect_uri,
            server.token_endpoint_auth_methods_supported.as_deref(),
            scopes.as_deref(),
        )
        .await?;
        vault.put_registration(&Registration {
            issuer: server.issuer.clone(),
            redirect_uri: redirect_uri.clone(),
            client_id: registered.client_id.clone(),
            client_secret: registered.client_secret.clone(),
            token_auth_method: Some(registered.token_auth_method.clone()),
            created_at: req.now,
        })?;
        tracing::info!(issuer = %server.issuer, "registered Patchbay as a client");
        (
            registered.client_id,
            registered.client_secret,
            ClientSource::Registered,
        )
    } else {
        return Err(OAuthError::NoClient {
            server: req.connector.to_string(),
            issuer: server.issuer.clone(),
            redirect_uri: redirect_uri.clone(),
            clients_file: req.clients_file.to_string(),
        });
    };
    let token_auth_method = match (&source, &client_secret) {
        (_, None) => ClientAuthMethod::None,
        // The registration's method as stored, an `Other` one included (the token request then
        // goes out as a public client's; see `token::client_request`).
        (ClientSource::Registered, Some(_)) => vault
            .registration(&server.issuer, &redirect_uri)?
            .and_then(|r| r.token_auth_method)
            .filter(|m| *m != ClientAuthMethod::None)
            .unwrap_or_else(|| {
                client::token_auth_method(
                    true,
                    server.token_endpoint_auth_methods_supported.as_deref(),
                )
            }),
        (_, Some(_)) => client::token_auth_method(
            true,
            server.token_endpoint_auth_methods_supported.as_deref(),
        ),
    };

    let resource = match catalog
        .resource
        .clone()
        .or_else(|| pre.and_then(|p| p.resource.clone()))
    {
        Some(r) if r.is_empty() => None,
        Some(r) => Some(expand("oauth.resource", &r)?),
        None => Some(canonical_resource(req.server_url)?),
    };

    // PKCE S256 and state, from oauth2: the verifier cannot be cloned, only sealed and stored.
    let (challenge_code, verifier) = PkceCodeChallenge::new_random_sha256();
    let state = CsrfToken::new_random();

    let mut url = Url::parse(&server.authorization_endpoint).map_err(|e| OAuthError::BadUrl {
        url: server.authorization_endpoint.clone(),
        message: e.to_string(),
    })?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code");
        q.append_pair("client_id", &client_id);
        q.append_pair("redirect_uri", &redirect_uri);
        if let Some(scopes) = &scopes {
            q.append_pair("scope", scopes);
        }
        q.append_pair("state", state.secret());
        q.append_pair("code_challenge", challenge_code.as_str());
        q.append_pair("code_challenge_method", challenge_code.method().as_str());
        if let Some(resource) = &resource {
            q.append_pair("resource", resource);
        }
    }

    let ttl = chrono::Duration::from_std(req.ttl).unwrap_or(chrono::Duration::minutes(10));
    let expires_at = req.now + ttl;
    vault.put_pending_flow(&PendingFlow {
        state: state.secret().clone(),
        connector: req.connector.to_string(),
        credential_key: req.credential_key.clone(),
        server_url: req.server_url.to_string(),
        issuer: server.issuer.clone(),
        authorization_endpoint: server.authorization_endpoint.clone(),
        token_endpoint: server.token_endpoint.clone(),
        client_id,
        client_secret,
        token_auth_method,
        client_registered: matches!(source, ClientSource::Registered),
        verifier: Secret::new(verifier.into_secret()),
        redirect_uri: redirect_uri.clone(),
        resource,
        scopes,
        manual,
        iss_required: server.authorization_response_iss_parameter_supported,
        created_at: req.now,
        expires_at,
    })?;

    Ok(Begun {
        connector: req.connector.to_string(),
        authorize_url: url.to_string(),
        redirect_uri,
        completion,
        state: state.secret().clone(),
        issuer: server.issuer,
        expires_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_up_asks_for_the_union_each_scope_once() {
        assert_eq!(
            union_scopes(["mcp:basic offline_access", "mcp:write mcp:basic"]).as_deref(),
            Some("mcp:basic offline_access mcp:write")
        );
        assert_eq!(union_scopes(["", " "]), None);
    }

    #[test]
    fn debug_of_a_started_flow_and_of_a_callback_never_shows_the_state_or_the_code() {
        let state = "st4te-V4lue-0123456789abcdef";
        let begun = Begun {
            connector: "notion".into(),
            authorize_url: format!("https://as.example/authorize?client_id=c&state={state}"),
            redirect_uri: "http://127.0.0.1:3118/callback".into(),
            completion: Completion::Receiver,
            state: state.into(),
            issuer: "https://as.example".into(),
            expires_at: Utc::now(),
        };
        let shown = format!("{begun:?} {begun:#?}");
        assert!(!shown.contains(state), "{shown}");
        assert!(
            shown.contains("notion") && shown.contains("client_id=c"),
            "{shown}"
        );

        let code = "c0de-V4lue-0123456789abcdef";
        let params =
            crate::receiver::parse_query(&format!("code={code}&state={state}&iss=x")).unwrap();
        let shown = format!("{params:?} {params:#?}");
        assert!(!shown.contains(code) && !shown.contains(state), "{shown}");
        assert!(shown.contains("iss"), "{shown}");
        let pasted = crate::pasteback::parse(code).unwrap();
        let shown = format!("{pasted:?}");
        assert!(!shown.contains(code), "{shown}");
    }

    #[test]
    fn only_our_exact_callback_is_the_receiver() {
        for ok in [
            "http://127.0.0.1:3118/callback",
            "http://localhost:3118/callback",
            "http://[::1]:3118/callback",
        ] {
            assert!(is_receiver_redirect(ok, 3118), "{ok}");
        }
        for no in [
            "http://127.0.0.1:3119/callback",
            "https://127.0.0.1:3118/callback",
            "http://127.0.0.1:3118/callback/",
            "http://127.0.0.1:3118/cb",
            "http://127.0.0.1:3118/callback?x=1",
            "http://127.0.0.2:3118/callback",
            "http://example.com:3118/callback",
            "urn:ietf:wg:oauth:2.0:oob",
            "127.0.0.1:3118/callback",
        ] {
            assert!(!is_receiver_redirect(no, 3118), "{no}");
        }
    }

    #[test]
    fn manual_forces_paste_back_even_on_our_redirect() {
        // Slack: localhost:3118 with manual is paste-back; without manual we can receive it.
        let slack = "http://localhost:3118/callback";
        assert!(matches!(
            completion_for(slack, true, 3118),
            Completion::PasteBack { .. }
        ));
        assert_eq!(completion_for(slack, false, 3118), Completion::Receiver);
        let Completion::PasteBack { why } = completion_for("https://app.example/cb", false, 3118)
        else {
            panic!()
        };
        assert!(why.contains("https://app.example/cb"));
    }

    #[test]
    fn canonical_resource_drops_fragment_and_trailing_slash() {
        assert_eq!(
            canonical_resource("https://MCP.Example.com/mcp/#frag").unwrap(),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            canonical_resource("https://mcp.stripe.com").unwrap(),
            "https://mcp.stripe.com"
        );
        assert_eq!(
            canonical_resource("https://a.example/v1/mcp?x=1").unwrap(),
            "https://a.example/v1/mcp?x=1"
        );
    }

    #[test]
    fn scopes_follow_the_spec_order_and_offline_access_only_when_advertised() {
        let challenge = Challenge {
            scope: Some("a b".into()),
            ..Challenge::default()
        };
        let prm = ResourceMetadata {
            scopes_supported: vec!["x".into(), "y".into()],
            ..ResourceMetadata::default()
        };
        let with_offline = ServerMetadata {
            scopes_supported: vec!["a".into(), "offline_access".into()],
            ..ServerMetadata::default()
        };
        let without = ServerMetadata::default();
        assert_eq!(
            choose_scopes(&[], Some(&challenge), Some(&prm), Some(&without)).as_deref(),
            Some("a b")
        );
        assert_eq!(
            choose_scopes(&[], None, Some(&prm), Some(&with_offline)).as_deref(),
            Some("x y offline_access")
        );
        assert_eq!(choose_scopes(&[], None, None, Some(&without)), None);
        assert_eq!(
            choose_scopes(&[], None, None, Some(&with_offline)).as_deref(),
            Some("offline_access")
        );
        assert_eq!(
            choose_scopes(&["c".into()], Some(&challenge), Some(&prm), Some(&without)).as_deref(),
            Some("c")
        );
    }
}
