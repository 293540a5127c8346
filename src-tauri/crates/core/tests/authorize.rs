//! The whole OAuth flow through the Authorizer against our fault-injecting authorization server
//! on 127.0.0.1 (tests/support/fake_as.rs): the consent page is followed with reqwest (the fake
//! auto-approves with a 302) and the redirect is delivered with `complete_pasted`. The vault
//! uses an in-memory keychain.

mod support;

use patchbay_catalog::CatalogSource;
use patchbay_core::{
    authorize::MAX_STEP_UPS, Authorizer, AuthorizerOptions, Completion, CoreError, Patchbay, Paths,
    StartOptions,
};
use patchbay_oauth::{ClientMetadataUrl, OAuthError};
use patchbay_status::ConnectorState;
use patchbay_vault::{MemoryStore, Secret};
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::fake_as::{Config, FakeAs, Iss};

struct Rig {
    _dir: tempfile::TempDir,
    auth: Authorizer,
    fake: FakeAs,
    /// The injected clock, in milliseconds since the epoch.
    clock: Arc<AtomicI64>,
}

const T0: i64 = 1_800_000_000_000;

fn paths(dir: &Path, catalog: &serde_json::Value) -> Paths {
    let file = dir.join("catalog.json");
    std::fs::write(&file, catalog.to_string()).unwrap();
    Paths {
        config_dir: dir.join("config"),
        data_dir: dir.join("data"),
        default_catalog: CatalogSource::Embedded,
        catalog_override: Some(file),
        keychain_account: "test".into(),
    }
}

async fn rig_with(
    config: Config,
    oauth: Option<serde_json::Value>,
    clients: Option<serde_json::Value>,
) -> Rig {
    // No traffic beyond loopback: the published document is never looked up here.
    rig_full(config, oauth, clients, ClientMetadataUrl::Off).await
}

async fn rig_full(
    config: Config,
    oauth: Option<serde_json::Value>,
    clients: Option<serde_json::Value>,
    client_metadata: ClientMetadataUrl,
) -> Rig {
    let fake = FakeAs::start(config).await;
    let dir = tempfile::tempdir().unwrap();
    let mut entry = json!({ "type": "http", "url": fake.mcp_url() });
    if let Some(oauth) = oauth {
        entry["oauth"] = oauth;
    }
    let catalog = json!({ "mcpServers": {
        "fx": entry,
        "keyed": { "type": "http", "url": fake.mcp_url(), "headers": { "X-API-Key": "k" } },
        "local": { "type": "stdio", "command": "true" }
    }});
    let paths = paths(dir.path(), &catalog);
    if let Some(clients) = clients {
        std::fs::create_dir_all(&paths.config_dir).unwrap();
        std::fs::write(paths.oauth_clients_file(), clients.to_string()).unwrap();
    }
    let clock = Arc::new(AtomicI64::new(T0));
    let c = clock.clone();
    let patchbay = Patchbay::with_store(paths, Arc::new(MemoryStore::new()))
        .unwrap()
        .with_clock(Arc::new(move || {
            chrono::DateTime::from_timestamp_millis(c.load(Ordering::SeqCst)).unwrap()
        }));
    let auth = Authorizer::new(
        Arc::new(patchbay),
        AuthorizerOptions {
            port: 3118,
            http_timeout: Duration::from_secs(2),
            use_receiver: false,
            client_metadata,
            ..AuthorizerOptions::default()
        },
    );
    Rig {
        _dir: dir,
        auth,
        fake,
        clock,
    }
}

async fn rig(config: Config) -> Rig {
    rig_with(config, None, None).await
}

/// Follows the authorize URL as a browser would, up to the AS's redirect; returns its Location.
async fn consent(url: &str) -> String {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = client.get(url).send().await.unwrap();
    assert_eq!(answer.status(), 302, "the fake AS approves with a redirect");
    answer.headers()["location"].to_str().unwrap().to_string()
}

impl Rig {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.auth.patchbay().now()
    }

    fn advance(&self, d: chrono::Duration) {
        self.clock.fetch_add(d.num_milliseconds(), Ordering::SeqCst);
    }

    async fn authorize(&self) -> Result<(), CoreError> {
        let started = self.auth.start("fx", StartOptions::default()).await?;
        let location = consent(&started.authorize_url).await;
        self.auth.complete_pasted("fx", &location).await
    }

    /// The authorizations pending in the vault now.
    fn pending(&self) -> Vec<patchbay_vault::PendingFlowInfo> {
        self.auth
            .patchbay()
            .vault()
            .pending_flows(self.now())
            .unwrap()
    }

    fn state(&self) -> ConnectorState {
        let report = self.auth.patchbay().status();
        report
            .connectors
            .iter()
            .find(|c| c.name == "fx")
            .unwrap()
            .state
    }

    fn row(&self) -> patchbay_vault::CredentialRow {
        self.auth
            .patchbay()
            .vault()
            .credential_rows()
            .unwrap()
            .remove(0)
    }

    fn tokens(&self) -> patchbay_vault::TokenSet {
        let row = self.row();
        self.auth
            .patchbay()
            .vault()
            .credential_tokens(&row.credential_key)
            .unwrap()
            .unwrap()
    }
}

fn oauth_err(e: CoreError) -> OAuthError {
    match e {
        CoreError::OAuth(e) => e,
        other => panic!("expected an OAuth error, got {other:?}"),
    }
}

#[tokio::test]
async fn full_flow_with_dcr_stores_a_credential_and_status_reads_ready() {
    let r = rig(Config::default()).await;
    assert_eq!(r.state(), ConnectorState::NeedsAuthorization);
    r.authorize().await.unwrap();
    assert_eq!(r.state(), ConnectorState::Ready);
    let row = r.row();
    assert_eq!(row.issuer.as_deref(), Some(r.fake.issuer().as_str()));
    assert_eq!(row.client_id.as_deref(), Some("dyn-1"));
    assert!(row.has_refresh_token && !row.one_shot);
    assert_eq!(
        row.expires_at,
        Some(r.now() + chrono::Duration::seconds(3600)),
        "expires_in from the injected clock"
    );
    // The resource indicator and PKCE S256 on the authorization request, the resource on the
    // token request; a public client sends its id in the body.
    let authz = &r.fake.requests("/authorize")[0].query;
    assert_eq!(authz["resource"], r.fake.mcp_url());
    assert_eq!(authz["code_challenge_method"], "S256");
    assert_eq!(authz["scope"], "mcp:read mcp:write", "PRM scopes_supported");
    assert!(!authz["scope"].contains("offline_access"), "not advertised");
    let token = &r.fake.requests("/token")[0];
    assert_eq!(token.form["resource"], r.fake.mcp_url());
    assert_eq!(token.form["client_id"], "dyn-1");
    assert!(token.authorization.is_none());
    // DCR as a native public client asking for the refresh grant.
    let reg = r.fake.requests("/register")[0].json.clone().unwrap();
    assert_eq!(reg["application_type"], "native");
    assert_eq!(
        reg["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(reg["token_endpoint_auth_method"], "none");
    assert_eq!(
        reg["redirect_uris"],
        json!(["http://127.0.0.1:3118/callback"])
    );
    // The pending flow is gone: reusing the redirect fails as unknown state.
    assert!(r
        .auth
        .patchbay()
        .vault()
        .pending_flows(r.auth.patchbay().now())
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn the_registration_is_reused_per_issuer() {
    let r = rig(Config::default()).await;
    r.authorize().await.unwrap();
    r.authorize().await.unwrap();
    assert_eq!(r.fake.requests("/register").len(), 1);
}

#[tokio::test]
async fn a_forgotten_registration_is_dropped_and_redone_once() {
    let r = rig(Config::default()).await;
    r.authorize().await.unwrap();
    // The registration is reused by a later flow (only such a one can have been forgotten).
    r.advance(chrono::Duration::minutes(5));
    // The fake answers invalid_client at the token endpoint for a client it no longer knows;
    // its authorize page still approves (it is keyed on the old list), so forget after consent.
    let started = r.auth.start("fx", StartOptions::default()).await.unwrap();
    let location = consent(&started.authorize_url).await;
    r.fake.forget_registrations();
    let err = oauth_err(r.auth.complete_pasted("fx", &location).await.unwrap_err());
    assert!(
        matches!(err, OAuthError::RegistrationForgotten { .. }),
        "{err}"
    );
    r.authorize().await.unwrap();
    assert_eq!(r.fake.requests("/register").len(), 2);
    assert_ne!(r.row().client_id.as_deref(), Some("dyn-1"));
}

#[tokio::test]
async fn a_client_refused_right_after_registering_is_not_called_forgotten() {
    // FastMCP's way: a registration made for this very flow, then invalid_client at the token
    // endpoint. That is about how the client authenticates, never a lost registration.
    let r = rig(Config::default()).await;
    let started = r.auth.start("fx", StartOptions::default()).await.unwrap();
    let location = consent(&started.authorize_url).await;
    r.fake.forget_registrations();
    let err = oauth_err(r.auth.complete_pasted("fx", &location).await.unwrap_err());
    assert!(
        matches!(&err, OAuthError::Token { error, .. } if error == "invalid_client"),
        "{err}"
    );
    assert!(err.to_string().contains("registered moments ago"), "{err}");
    assert_eq!(r.fake.requests("/register").len(), 1);
}

#[tokio::test]
async fn prm_at_the_root_without_resource_metadata_in_the_challenge() {
    let r = rig(Config {
        challenge_resource_metadata: false,
        prm_at_path: false,
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
    let paths = r.fake.paths();
    let at_path = paths
        .iter()
        .position(|p| p == "/.well-known/oauth-protected-resource/mcp")
        .unwrap();
    let at_root = paths
        .iter()
        .position(|p| p == "/.well-known/oauth-protected-resource")
        .unwrap();
    assert!(
        at_path < at_root,
        "path insertion first, then the root: {paths:?}"
    );
    assert!(!paths.contains(&"/custom/prm".to_string()));
}

#[tokio::test]
async fn resource_metadata_from_the_challenge_is_used() {
    let r = rig(Config::default()).await;
    r.authorize().await.unwrap();
    let paths = r.fake.paths();
    assert!(paths.contains(&"/custom/prm".to_string()));
    assert!(!paths
        .iter()
        .any(|p| p.starts_with("/.well-known/oauth-protected-resource")));
}

#[tokio::test]
async fn openid_metadata_for_an_issuer_with_a_path() {
    let r = rig(Config {
        issuer_path: "/tenant".into(),
        oidc_only: true,
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
    let paths = r.fake.paths();
    let tried: Vec<&String> = paths
        .iter()
        .filter(|p| p.contains("well-known/o") && !p.contains("protected"))
        .collect();
    assert_eq!(
        tried,
        vec![
            "/.well-known/oauth-authorization-server/tenant",
            "/.well-known/openid-configuration/tenant",
            "/tenant/.well-known/openid-configuration",
        ]
    );
    assert_eq!(r.row().issuer.as_deref(), Some(r.fake.issuer().as_str()));
}

#[tokio::test]
async fn oauth_metadata_for_an_issuer_with_a_path() {
    let r = rig(Config {
        issuer_path: "/tenant".into(),
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
    assert!(r
        .fake
        .paths()
        .contains(&"/.well-known/oauth-authorization-server/tenant".to_string()));
}

#[tokio::test]
async fn openid_metadata_at_the_root_after_oauth_fails() {
    let r = rig(Config {
        oidc_only: true,
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
}

#[tokio::test]
async fn a_wrong_issuer_discards_the_metadata() {
    let r = rig(Config {
        wrong_issuer: true,
        ..Config::default()
    })
    .await;
    let err = oauth_err(
        r.auth
            .start("fx", StartOptions::default())
            .await
            .unwrap_err(),
    );
    assert!(matches!(err, OAuthError::NoServerMetadata { .. }), "{err}");
    assert!(err.to_string().contains("discarded"), "{err}");
    assert!(r.fake.requests("/authorize").is_empty());
}

#[tokio::test]
async fn the_catalog_metadata_override_is_read_instead() {
    let r = rig_with(Config::default(), Some(json!({})), None).await;
    // Override pointing at the fake's own metadata document.
    let catalog_path = r.auth.patchbay().paths.catalog_override.clone().unwrap();
    let url = format!("{}/.well-known/oauth-authorization-server", r.fake.base);
    let catalog = json!({ "mcpServers": { "fx": {
        "type": "http", "url": r.fake.mcp_url(),
        "oauth": { "authServerMetadataUrl": url }
    }}});
    std::fs::write(&catalog_path, catalog.to_string()).unwrap();
    r.authorize().await.unwrap();
    assert_eq!(
        r.fake
            .requests("/.well-known/oauth-authorization-server")
            .len(),
        1
    );
}

#[tokio::test]
async fn no_s256_is_refused() {
    let r = rig(Config {
        s256: false,
        ..Config::default()
    })
    .await;
    let err = oauth_err(
        r.auth
            .start("fx", StartOptions::default())
            .await
            .unwrap_err(),
    );
    assert!(matches!(err, OAuthError::NoS256 { .. }), "{err}");
    assert!(r.fake.requests("/register").is_empty());
}

#[tokio::test]
async fn without_dcr_or_client_id_the_error_says_what_to_configure() {
    let r = rig(Config {
        dcr: false,
        ..Config::default()
    })
    .await;
    let err = r
        .auth
        .start("fx", StartOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("clientId") && err.contains("oauth-clients.json"),
        "{err}"
    );
}

#[tokio::test]
async fn the_catalog_client_id_is_used_verbatim_with_a_secret_from_the_vault() {
    let mut config = Config {
        dcr: true,
        auth_methods: Some(vec!["client_secret_post".into()]),
        ..Config::default()
    };
    config
        .clients
        .insert("cat-client".into(), "cat-secret".into());
    let r = rig_with(
        config,
        Some(json!({ "clientId": "cat-client", "clientSecret": "${FX_SECRET}" })),
        None,
    )
    .await;
    r.auth
        .patchbay()
        .set_secret("FX_SECRET", &patchbay_vault::Secret::new("cat-secret"))
        .unwrap();
    r.authorize().await.unwrap();
    assert!(r.fake.requests("/register").is_empty(), "DCR skipped");
    let token = &r.fake.requests("/token")[0];
    assert_eq!(token.form["client_id"], "cat-client");
    assert_eq!(
        token.form["client_secret"], "cat-secret",
        "client_secret_post as listed"
    );
    assert!(token.authorization.is_none());
}

#[tokio::test]
async fn confidential_basic_by_default() {
    let mut config = Config::default();
    config.clients.insert("pre client".into(), "s&cret".into());
    let r = rig_with(
        config,
        None,
        Some(json!({ "fx": { "clientId": "pre client", "clientSecret": "s&cret" } })),
    )
    .await;
    r.authorize().await.unwrap();
    let token = &r.fake.requests("/token")[0];
    assert!(token
        .authorization
        .as_deref()
        .unwrap()
        .starts_with("Basic "));
    assert!(!token.form.contains_key("client_secret"));
    assert!(r.fake.requests("/register").is_empty());
}

#[tokio::test]
async fn a_pre_registered_client_with_endpoints_skips_discovery_and_can_suppress_resource() {
    let mut config = Config::default();
    config.clients.insert("pre".into(), String::new());
    let r = rig_with(config, None, None).await;
    let clients = json!({ "fx": {
        "clientId": "pre",
        "authorizationEndpoint": format!("{}/authorize", r.fake.base),
        "tokenEndpoint": format!("{}/token", r.fake.base),
        "scopes": ["one", "two"],
        "resource": ""
    }});
    let file = r.auth.patchbay().paths.oauth_clients_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, clients.to_string()).unwrap();
    r.authorize().await.unwrap();
    let paths = r.fake.paths();
    assert!(
        !paths
            .iter()
            .any(|p| p.contains("well-known") || p == "/mcp"),
        "{paths:?}"
    );
    let authz = &r.fake.requests("/authorize")[0].query;
    assert!(!authz.contains_key("resource"));
    assert_eq!(authz["scope"], "one two");
    assert!(!r.fake.requests("/token")[0].form.contains_key("resource"));
}

#[tokio::test]
async fn a_bad_clients_file_names_file_and_field() {
    let r = rig_with(
        Config::default(),
        None,
        Some(json!({ "fx": { "clientId": 3 } })),
    )
    .await;
    let err = r
        .auth
        .start("fx", StartOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("oauth-clients.json") && err.contains("fx.clientId"),
        "{err}"
    );
}

#[tokio::test]
async fn iss_advertised_and_missing_is_refused_and_the_flow_stays_pending() {
    let r = rig(Config {
        iss_advertised: true,
        iss_on_redirect: Iss::Missing,
        ..Config::default()
    })
    .await;
    let err = oauth_err(r.authorize().await.unwrap_err());
    assert!(matches!(err, OAuthError::MissingIss { .. }), "{err}");
    assert_eq!(
        r.auth
            .patchbay()
            .vault()
            .pending_flows(r.auth.patchbay().now())
            .unwrap()
            .len(),
        1
    );
    assert!(r.fake.requests("/token").is_empty());
}

#[tokio::test]
async fn a_wrong_iss_is_refused() {
    let r = rig(Config {
        iss_on_redirect: Iss::Wrong,
        ..Config::default()
    })
    .await;
    let err = oauth_err(r.authorize().await.unwrap_err());
    assert!(matches!(err, OAuthError::WrongIss { .. }), "{err}");
}

#[tokio::test]
async fn iss_advertised_and_correct_completes() {
    let r = rig(Config {
        iss_advertised: true,
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
}

#[tokio::test]
async fn slack_authed_user_is_unwrapped() {
    let r = rig(Config {
        slack_shape: true,
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
    let tokens = r.tokens();
    assert!(tokens.access_token.expose().starts_with("access-"));
    assert!(tokens
        .refresh_token
        .unwrap()
        .expose()
        .starts_with("refresh-"));
    assert!(r.row().expires_at.is_some());
}

#[tokio::test]
async fn no_refresh_token_is_one_shot_and_reauth_keeps_a_stored_one() {
    // First a server that issues refresh tokens, then one that omits it on re-auth.
    let r = rig(Config::default()).await;
    r.authorize().await.unwrap();
    let first_refresh = r.tokens().refresh_token.unwrap().expose().to_string();
    r.fake.configure(|c| c.refresh_token = false);
    r.authorize().await.unwrap();
    let row = r.row();
    assert!(row.has_refresh_token && !row.one_shot);
    assert_eq!(r.tokens().refresh_token.unwrap().expose(), first_refresh);
    assert_ne!(r.tokens().access_token.expose(), "access-1");

    let one = rig(Config {
        refresh_token: false,
        ..Config::default()
    })
    .await;
    one.authorize().await.unwrap();
    let row = one.row();
    assert!(row.one_shot && !row.has_refresh_token);
    let report = one.auth.patchbay().status();
    let fx = report.connectors.iter().find(|c| c.name == "fx").unwrap();
    assert!(fx.one_shot);
}

#[tokio::test]
async fn a_token_endpoint_that_never_answers_fails_within_the_timeout() {
    let r = rig(Config {
        token_hangs: true,
        ..Config::default()
    })
    .await;
    let started = std::time::Instant::now();
    let err = oauth_err(r.authorize().await.unwrap_err());
    assert!(matches!(err, OAuthError::Timeout { .. }), "{err}");
    assert!(!err.is_retryable());
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(r.state(), ConnectorState::NeedsAuthorization);
}

#[tokio::test]
async fn offline_access_only_when_advertised_and_the_challenge_scope_comes_first() {
    let r = rig(Config {
        as_scopes: vec!["mcp:read".into(), "offline_access".into()],
        challenge_scope: Some("mcp:read".into()),
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
    assert_eq!(
        r.fake.requests("/authorize")[0].query["scope"],
        "mcp:read offline_access"
    );
}

#[tokio::test]
async fn state_is_checked_on_paste_back() {
    let r = rig(Config::default()).await;
    let started = r.auth.start("fx", StartOptions::default()).await.unwrap();
    assert!(matches!(started.completion, Completion::PasteBack { .. }));
    let location = consent(&started.authorize_url).await;
    let mut forged = url::Url::parse(&location).unwrap();
    let pairs: Vec<(String, String)> = forged
        .query_pairs()
        .map(|(k, v)| {
            if k == "state" {
                (k.into_owned(), "forged".into())
            } else {
                (k.into_owned(), v.into_owned())
            }
        })
        .collect();
    forged.query_pairs_mut().clear().extend_pairs(pairs);
    let err = oauth_err(
        r.auth
            .complete_pasted("fx", forged.as_str())
            .await
            .unwrap_err(),
    );
    assert!(matches!(err, OAuthError::UnknownState), "{err}");
    // The real one still completes; then it is used up.
    r.auth.complete_pasted("fx", &location).await.unwrap();
    let err = oauth_err(r.auth.complete_pasted("fx", &location).await.unwrap_err());
    assert!(matches!(err, OAuthError::UnknownState), "{err}");
}

#[tokio::test]
async fn a_bare_code_matches_the_single_pending_flow() {
    let r = rig(Config::default()).await;
    let started = r.auth.start("fx", StartOptions::default()).await.unwrap();
    let location = consent(&started.authorize_url).await;
    let code = url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    r.auth.complete_pasted("fx", &code).await.unwrap();
    assert_eq!(r.state(), ConnectorState::Ready);

    // Two pending flows: a bare code is ambiguous.
    r.auth.start("fx", StartOptions::default()).await.unwrap();
    r.auth.start("fx", StartOptions::default()).await.unwrap();
    let err = r
        .auth
        .complete_pasted("fx", "some-code")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("2 authorizations"), "{err}");
}

#[tokio::test]
async fn access_denied_is_reported_as_such() {
    let r = rig(Config::default()).await;
    let started = r.auth.start("fx", StartOptions::default()).await.unwrap();
    let state = url::Url::parse(&started.authorize_url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();
    let pasted = format!("http://127.0.0.1:3118/callback?error=access_denied&error_description=User+said+no&state={state}");
    let err = oauth_err(r.auth.complete_pasted("fx", &pasted).await.unwrap_err());
    assert!(matches!(err, OAuthError::Denied { .. }), "{err}");
    assert!(err.to_string().contains("access_denied") && err.to_string().contains("User said no"));
}

#[tokio::test]
async fn only_oauth_capable_catalog_servers_can_be_authorized() {
    let r = rig(Config::default()).await;
    for name in ["nope", "keyed", "local"] {
        let err = r
            .auth
            .start(name, StartOptions::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(name), "{err}");
    }
    assert!(r.fake.paths().is_empty(), "nothing was contacted");
}

#[tokio::test]
async fn manual_and_foreign_redirects_complete_by_paste_back() {
    let mut config = Config::default();
    config.clients.insert("slack-like".into(), String::new());
    let r = rig_with(
        config,
        Some(json!({ "clientId": "slack-like", "redirectUri": "http://localhost:3118/callback", "manual": true, "resource": "" })),
        None,
    )
    .await;
    let started = r.auth.start("fx", StartOptions::default()).await.unwrap();
    let Completion::PasteBack { redirect_uri, why } = &started.completion else {
        panic!("{:?}", started.completion)
    };
    assert_eq!(redirect_uri, "http://localhost:3118/callback");
    assert!(why.contains("manual"), "{why}");
    let location = consent(&started.authorize_url).await;
    assert!(location.starts_with("http://localhost:3118/callback?"));
    r.auth.complete_pasted("fx", &location).await.unwrap();
    assert!(!r.fake.requests("/authorize")[0]
        .query
        .contains_key("resource"));
}

#[tokio::test]
async fn starting_a_flow_sweeps_expired_ones() {
    let r = rig(Config::default()).await;
    let first = r.auth.start("fx", StartOptions::default()).await.unwrap();
    let t0 = r.now();
    assert_eq!(first.expires_at, t0 + chrono::Duration::minutes(10));
    let location = consent(&first.authorize_url).await;
    // Eleven minutes later the first flow has expired: its redirect is refused, and starting
    // a new flow deletes it with its sealed verifier (still visible at t0, so really gone).
    r.advance(chrono::Duration::minutes(11));
    let err = oauth_err(r.auth.complete_pasted("fx", &location).await.unwrap_err());
    assert!(matches!(err, OAuthError::UnknownState), "{err}");
    let vault = r.auth.patchbay().vault();
    assert_eq!(vault.pending_flows(t0).unwrap().len(), 1);
    r.auth.start("fx", StartOptions::default()).await.unwrap();
    assert_eq!(
        vault.pending_flows(t0).unwrap().len(),
        1,
        "only the new one"
    );
    assert_eq!(vault.sweep_expired_flows(r.now()).unwrap(), 0);
}

#[tokio::test]
async fn a_new_authorizer_sweeps_flows_abandoned_by_an_earlier_run() {
    let r = rig(Config::default()).await;
    r.auth.start("fx", StartOptions::default()).await.unwrap();
    let t0 = r.now();
    let patchbay = r.auth.patchbay().clone();
    assert_eq!(patchbay.vault().pending_flows(t0).unwrap().len(), 1);
    // Still pending: a new Authorizer (the app restarting) keeps it.
    let _same_run = Authorizer::new(patchbay.clone(), AuthorizerOptions::default());
    assert_eq!(patchbay.vault().pending_flows(t0).unwrap().len(), 1);
    r.advance(chrono::Duration::minutes(11));
    let _next_run = Authorizer::new(patchbay.clone(), AuthorizerOptions::default());
    assert_eq!(
        patchbay.vault().pending_flows(t0).unwrap().len(),
        0,
        "the expired flow and its sealed verifier are gone"
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn with_receiver(r: &Rig, port: u16) -> Authorizer {
    Authorizer::new(
        r.auth.patchbay().clone(),
        AuthorizerOptions {
            port,
            http_timeout: Duration::from_secs(2),
            use_receiver: true,
            ..AuthorizerOptions::default()
        },
    )
}

#[tokio::test]
async fn the_receiver_completes_the_flow_and_stops_when_nothing_is_pending() {
    let r = rig(Config::default()).await;
    let port = free_port();
    let auth = with_receiver(&r, port);
    let started = auth.start("fx", StartOptions::default()).await.unwrap();
    assert_eq!(
        started.completion,
        Completion::Receiver {
            redirect_uri: format!("http://127.0.0.1:{port}/callback")
        }
    );
    assert!(started.notice.is_none());
    assert!(auth.receiver_running().await);

    // A callback with a state nobody issued gets a clear page and leaves the real flow alone.
    let stray = reqwest::get(format!(
        "http://127.0.0.1:{port}/callback?code=x&state=forged"
    ))
    .await
    .unwrap();
    assert_eq!(stray.status(), 400);

    // The browser: follow the consent redirect all the way to our receiver.
    let page = reqwest::get(&started.authorize_url).await.unwrap();
    assert_eq!(page.status(), 200, "the receiver's success page");
    auth.wait_for("fx", Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        auth.patchbay().status().connector("fx").unwrap().state,
        ConnectorState::Ready
    );
    // Nothing pending any more: the port is released.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while auth.receiver_running().await {
        assert!(
            std::time::Instant::now() < deadline,
            "the receiver kept listening"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::net::TcpListener::bind(("127.0.0.1", port)).expect("the port is free again");
}

#[tokio::test]
async fn a_taken_port_falls_back_to_paste_back_and_never_moves() {
    let r = rig(Config::default()).await;
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = squatter.local_addr().unwrap().port();
    let auth = with_receiver(&r, port);
    let started = auth.start("fx", StartOptions::default()).await.unwrap();
    let notice = started.notice.clone().expect("a notice about the port");
    assert!(notice.contains(&port.to_string()), "{notice}");
    assert!(notice.contains("in use"), "{notice}");
    match &started.completion {
        // Same redirect (the one registered), completed by pasting instead.
        Completion::PasteBack { redirect_uri, .. } => {
            assert_eq!(redirect_uri, &format!("http://127.0.0.1:{port}/callback"))
        }
        other => panic!("expected paste-back, got {other:?}"),
    }
    assert!(!auth.receiver_running().await);
    let location = consent(&started.authorize_url).await;
    assert!(location.starts_with(&format!("http://127.0.0.1:{port}/callback?")));
    auth.complete_pasted("fx", &location).await.unwrap();
    assert_eq!(
        auth.patchbay().status().connector("fx").unwrap().state,
        ConnectorState::Ready
    );
    drop(squatter);
}

#[tokio::test]
async fn resource_metadata_for_another_resource_is_never_used() {
    // RFC 9728 §3.3 / the conformance suite's auth/resource-mismatch: a hostile server's
    // document names another resource; nothing in it may be used, not even with a pinned
    // authorization server.
    for pinned in [false, true] {
        let r = rig(Config {
            prm_resource: Some("https://evil.example.com/mcp".into()),
            ..Config::default()
        })
        .await;
        if pinned {
            let catalog_path = r.auth.patchbay().paths.catalog_override.clone().unwrap();
            let url = format!("{}/.well-known/oauth-authorization-server", r.fake.base);
            let catalog = json!({ "mcpServers": { "fx": {
                "type": "http", "url": r.fake.mcp_url(),
                "oauth": { "authServerMetadataUrl": url }
            }}});
            std::fs::write(&catalog_path, catalog.to_string()).unwrap();
        }
        let err = oauth_err(
            r.auth
                .start("fx", StartOptions::default())
                .await
                .unwrap_err(),
        );
        assert!(
            matches!(&err, OAuthError::ResourceMismatch { resource: Some(res), .. } if res == "https://evil.example.com/mcp"),
            "{err}"
        );
        assert!(err.to_string().contains("evil.example.com"), "{err}");
        assert!(r.fake.requests("/authorize").is_empty());
        assert!(r.fake.requests("/register").is_empty());
        assert!(
            r.fake
                .requests("/.well-known/oauth-authorization-server")
                .is_empty(),
            "the resource's authorization servers are not even looked up (pinned: {pinned})"
        );
        assert!(r.pending().is_empty());
    }
}

#[tokio::test]
async fn resource_metadata_naming_the_origin_is_the_servers_own() {
    let r = rig(Config {
        challenge_resource_metadata: false,
        prm_at_path: false,
        ..Config::default()
    })
    .await;
    let origin = r.fake.base.clone();
    r.fake.configure(|c| c.prm_resource = Some(origin));
    r.authorize().await.unwrap();
    assert_eq!(r.state(), ConnectorState::Ready);
}

#[tokio::test]
async fn a_2025_03_26_server_without_resource_metadata_is_authorized_by_its_origins_metadata() {
    let r = rig(Config {
        no_prm: true,
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
    assert_eq!(r.state(), ConnectorState::Ready);
    let paths = r.fake.paths();
    assert!(
        paths.contains(&"/.well-known/oauth-authorization-server".to_string()),
        "{paths:?}"
    );
    assert_eq!(r.row().issuer.as_deref(), Some(r.fake.base.as_str()));
    let authz = &r.fake.requests("/authorize")[0].query;
    assert_eq!(authz["code_challenge_method"], "S256");
    assert!(!authz.contains_key("scope"), "nothing says which scopes");
}

#[tokio::test]
async fn a_2025_03_26_server_without_any_metadata_uses_the_default_endpoints() {
    let r = rig(Config {
        no_prm: true,
        no_as_metadata: true,
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
    assert_eq!(r.state(), ConnectorState::Ready);
    assert_eq!(r.fake.requests("/register").len(), 1);
    assert_eq!(r.fake.requests("/authorize").len(), 1);
    assert_eq!(r.fake.requests("/token").len(), 1);
    assert_eq!(r.row().client_id.as_deref(), Some("dyn-1"));
}

#[tokio::test]
async fn a_server_taking_metadata_documents_gets_patchbays_instead_of_a_registration() {
    let url = "https://patchbay.example/oauth/client.json";
    let r = rig_full(
        Config {
            cimd: true,
            ..Config::default()
        },
        None,
        None,
        ClientMetadataUrl::Configured(url.into()),
    )
    .await;
    // A registration stored from before the server took documents is not used either.
    r.authorize().await.unwrap();
    assert_eq!(r.state(), ConnectorState::Ready);
    assert!(r.fake.requests("/register").is_empty());
    assert_eq!(r.fake.requests("/authorize")[0].query["client_id"], url);
    let token = &r.fake.requests("/token")[0];
    assert_eq!(token.form["client_id"], url);
    assert!(token.authorization.is_none(), "a public client");
    assert_eq!(r.row().client_id.as_deref(), Some(url));
}

#[tokio::test]
async fn the_published_document_is_used_only_once_read_back_and_matching() {
    // A stand-in for the published URL on loopback: first a document that does not list the
    // flow's redirect (registration instead), then the real one (used).
    let r = rig_full(
        Config {
            cimd: true,
            ..Config::default()
        },
        None,
        None,
        ClientMetadataUrl::Off,
    )
    .await;
    let doc_url = format!("{}/client-metadata.json", r.fake.base);
    let auth = Authorizer::new(
        r.auth.patchbay().clone(),
        AuthorizerOptions {
            port: 3118,
            http_timeout: Duration::from_secs(2),
            use_receiver: false,
            client_metadata: ClientMetadataUrl::Published(doc_url.clone()),
            ..AuthorizerOptions::default()
        },
    );
    // The fake serves no such document: 404, so DCR.
    let started = auth.start("fx", StartOptions::default()).await.unwrap();
    assert!(
        started.authorize_url.contains("client_id=dyn-1"),
        "{}",
        started.authorize_url
    );
    r.fake.serve_document(
        "/client-metadata.json",
        json!({ "client_id": doc_url, "redirect_uris": ["http://127.0.0.1:3118/callback"] }),
    );
    let started = auth.start("fx", StartOptions::default()).await.unwrap();
    let location = consent(&started.authorize_url).await;
    auth.complete_pasted("fx", &location).await.unwrap();
    assert_eq!(r.row().client_id.as_deref(), Some(doc_url.as_str()));
    // One naming another client id is not used.
    r.fake.serve_document(
        "/client-metadata.json",
        json!({ "client_id": "https://other.example/c.json", "redirect_uris": ["http://127.0.0.1:3118/callback"] }),
    );
    let started = auth.start("fx", StartOptions::default()).await.unwrap();
    assert!(
        started.authorize_url.contains("client_id=dyn-1"),
        "{}",
        started.authorize_url
    );
}

#[tokio::test]
async fn a_step_up_asks_for_the_union_and_stops_after_three() {
    // SEP-2350: the re-authorization asks for what was asked before and what the 403 named,
    // never the challenge alone; a server that keeps refusing gets no fourth consent page.
    let r = rig(Config {
        challenge_scope: Some("mcp:basic".into()),
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
    assert_eq!(
        r.fake.requests("/authorize")[0].query["scope"],
        "mcp:basic",
        "the 401's scope first"
    );
    for attempt in 1..=MAX_STEP_UPS {
        let started = r
            .auth
            .start_step_up("fx", "mcp:write", false)
            .await
            .unwrap();
        let location = consent(&started.authorize_url).await;
        r.auth.complete_pasted("fx", &location).await.unwrap();
        let asked = &r.fake.requests("/authorize")[attempt as usize].query["scope"];
        assert_eq!(asked, "mcp:basic mcp:write", "attempt {attempt}");
    }
    let err = r
        .auth
        .start_step_up("fx", "mcp:write", false)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CoreError::Refused { why, .. } if why.contains("after 3")),
        "{err}"
    );
    assert_eq!(
        r.fake.requests("/authorize").len(),
        1 + MAX_STEP_UPS as usize
    );
    assert_eq!(r.state(), ConnectorState::Ready, "the credential is kept");
}

#[tokio::test]
async fn more_access_a_server_wanted_is_said_on_the_row_and_asked_for_by_the_next_authorize() {
    // A 403 `insufficient_scope` no step-up could mend leaves the scope noted: the row says
    // "Needs more access" with it, and the next Authorize (whoever starts it) asks for the
    // union of what was granted and what is wanted; once granted, the row is Ready again.
    let r = rig(Config {
        challenge_scope: Some("mcp:basic".into()),
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
    let patchbay = r.auth.patchbay();
    let key = r.row().credential_key;
    patchbay
        .vault()
        .want_scope(&key, "mcp:write", patchbay.now())
        .unwrap();
    let report = patchbay.status();
    let row = report.connectors.iter().find(|c| c.name == "fx").unwrap();
    assert_eq!(row.state, ConnectorState::NeedsReauth);
    assert_eq!(row.label, "Needs more access");
    assert!(row.detail.contains("\"mcp:write\""), "{}", row.detail);
    assert!(row.needs_attention);
    r.authorize().await.unwrap();
    assert_eq!(
        r.fake.requests("/authorize")[1].query["scope"],
        "mcp:basic mcp:write",
        "the union, from a plain Authorize"
    );
    assert_eq!(patchbay.vault().wanted_scope(&key).unwrap(), None);
    assert_eq!(r.state(), ConnectorState::Ready);
}

#[tokio::test]
async fn a_resource_moved_to_another_authorization_server_is_seen_and_registered_there_anew() {
    // SEP-2352: the PRM names a new issuer; the old server's client is not reused there.
    let r = rig(Config::default()).await;
    r.authorize().await.unwrap();
    assert_eq!(r.auth.moved_authorization_server("fx").await.unwrap(), None);
    r.fake.configure(|c| c.issuer_path = "/tenant2".into());
    let moved = r.auth.moved_authorization_server("fx").await.unwrap();
    assert_eq!(moved, Some(format!("{}/tenant2", r.fake.base)));
    r.authorize().await.unwrap();
    assert_eq!(
        r.fake.requests("/register").len(),
        2,
        "registered with the new server"
    );
    assert_eq!(
        r.row().issuer.as_deref(),
        Some(format!("{}/tenant2", r.fake.base).as_str())
    );
    assert_eq!(r.auth.moved_authorization_server("fx").await.unwrap(), None);
}

#[tokio::test]
async fn cancel_ends_the_flow_and_frees_the_receiver() {
    let r = rig(Config::default()).await;
    let port = free_port();
    let auth = with_receiver(&r, port);
    let started = auth.start("fx", StartOptions::default()).await.unwrap();
    assert!(auth.receiver_running().await);
    let waiting = {
        let auth = auth.clone();
        tokio::spawn(async move { auth.wait_for("fx", Duration::from_secs(30)).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;

    assert_eq!(auth.cancel("fx").await.unwrap(), 1);
    assert!(!auth.receiver_running().await, "nothing else waits on it");
    assert!(
        std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
        "the port is free again"
    );
    let ended = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the wait ends at once")
        .unwrap();
    assert!(
        matches!(&ended, Err(CoreError::AuthorizationFailed { message, .. }) if message.contains("cancelled")),
        "{ended:?}"
    );
    // Nothing is pending: the consent's code cannot finish it, the page cannot be reopened.
    assert!(r.pending().is_empty());
    let state = state_of(&started.authorize_url);
    assert!(auth
        .complete_pasted(
            "fx",
            &format!("http://127.0.0.1:{port}/callback?code=c&state={state}")
        )
        .await
        .is_err());
    assert_eq!(auth.reopen("fx").unwrap_err().kind(), "not_pending");
    assert_eq!(
        auth.cancel("fx").await.unwrap(),
        0,
        "a second cancel finds nothing"
    );
    assert_eq!(r.state(), ConnectorState::NeedsAuthorization);
}

#[tokio::test]
async fn a_redirect_the_receiver_refuses_ends_the_wait_with_the_reason() {
    // The conformance suite's iss scenarios: the one browser redirect carries a wrong `iss`.
    // Refused, and `authorize` says so at once instead of waiting out the flow.
    let r = rig(Config {
        iss_advertised: true,
        iss_on_redirect: Iss::Wrong,
        ..Config::default()
    })
    .await;
    let port = free_port();
    let auth = with_receiver(&r, port);
    let started = auth.start("fx", StartOptions::default()).await.unwrap();
    let page = reqwest::get(&started.authorize_url).await.unwrap();
    assert_eq!(page.status(), 400, "the receiver's refusal page");
    let waited = Instant::now();
    let err = auth
        .wait_for("fx", Duration::from_secs(30))
        .await
        .unwrap_err();
    assert!(waited.elapsed() < Duration::from_secs(5));
    assert!(
        matches!(&err, CoreError::AuthorizationFailed { message, .. } if message.contains("iss")),
        "{err}"
    );
    assert_eq!(r.state(), ConnectorState::NeedsAuthorization);
    // The flow is still pending: a pasted address with the right iss could finish it.
    assert_eq!(r.pending().len(), 1);
}

#[tokio::test]
async fn where_nothing_registers_patchbay_a_client_the_user_entered_is_kept_and_used() {
    // No metadata documents, no DCR, nothing configured: the error names the issuer and the
    // redirect to register, and a client entered for them is used from the vault.
    let r = rig(Config {
        dcr: false,
        clients: [("hand-made".to_string(), String::new())].into(),
        ..Config::default()
    })
    .await;
    let err = oauth_err(
        r.auth
            .start("fx", StartOptions::default())
            .await
            .unwrap_err(),
    );
    let OAuthError::NoClient {
        issuer,
        redirect_uri,
        ..
    } = err
    else {
        panic!("expected NoClient, got {err}");
    };
    assert_eq!(issuer, r.fake.issuer());
    assert_eq!(redirect_uri, "http://127.0.0.1:3118/callback");
    // Only the connector is named: the client goes to the issuer its start found.
    assert!(
        r.auth.enter_client("other", "hand-made", None).is_err(),
        "no client was asked for other"
    );
    assert!(r.auth.enter_client("fx", " \n", None).is_err());
    r.auth
        .enter_client("fx", "hand-made\n", Some(Secret::new("")))
        .unwrap();
    assert!(
        r.auth.enter_client("fx", "again", None).is_err(),
        "the need is met once"
    );
    r.authorize().await.unwrap();
    assert_eq!(r.row().client_id.as_deref(), Some("hand-made"));
    let token = &r.fake.requests("/token")[0];
    assert_eq!(token.form["client_id"], "hand-made");
    assert!(
        token.authorization.is_none(),
        "an empty secret is a public client"
    );
}

#[tokio::test]
async fn a_2026_07_28_server_is_probed_the_stateless_way_for_its_challenge() {
    // It refuses `initialize` (400): the second probe, with the revision's header, gets the 401
    // whose scope is the one to ask for.
    let r = rig(Config {
        stateless_only: true,
        challenge_scope: Some("mcp:basic".into()),
        ..Config::default()
    })
    .await;
    r.authorize().await.unwrap();
    let probes = r.fake.requests("/mcp");
    assert_eq!(probes.len(), 2, "initialize, then the stateless probe");
    assert_eq!(probes[1].json.as_ref().unwrap()["method"], "tools/list");
    assert_eq!(r.fake.requests("/authorize")[0].query["scope"], "mcp:basic");
}

/// The `state` parameter of an authorize URL or a redirect.
fn state_of(url: &str) -> String {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned()
}

/// Two Patchbay processes over one vault, each with its receiver: `a` on one port, `b` (with a
/// flow of its own, so its receiver listens) on another.
async fn two_receivers(r: &Rig) -> (Authorizer, patchbay_core::Started, Authorizer, u16) {
    let a = with_receiver(r, free_port());
    let started = a.start("fx", StartOptions::default()).await.unwrap();
    let port_b = free_port();
    let b = with_receiver(r, port_b);
    b.start("fx", StartOptions::default()).await.unwrap();
    assert!(a.receiver_running().await && b.receiver_running().await);
    (a, started, b, port_b)
}

#[tokio::test]
async fn a_flow_whose_state_another_receiver_spent_ends_the_wait_with_the_reason() {
    // Issue 23: a forged code sent to the other port spends this flow's state there; the wait
    // here ended only when killed, even after this browser finished consent.
    let r = rig(Config::default()).await;
    let (a, started, _b, port_b) = two_receivers(&r).await;
    let forged = reqwest::get(format!(
        "http://127.0.0.1:{port_b}/callback?code=forged&state={}",
        state_of(&started.authorize_url)
    ))
    .await
    .unwrap();
    assert_eq!(forged.status(), 400, "the forged code is refused there");
    let waited = Instant::now();
    let err = a.wait_for("fx", Duration::from_secs(30)).await.unwrap_err();
    assert!(
        waited.elapsed() < Duration::from_secs(5),
        "{:?}",
        waited.elapsed()
    );
    assert!(
        matches!(&err, CoreError::AuthorizationFailed { message, .. } if message.contains("another Patchbay")),
        "{err}"
    );
    assert_eq!(r.state(), ConnectorState::NeedsAuthorization);
}

#[tokio::test]
async fn a_flow_whose_browser_finished_at_another_port_ends_the_wait_done() {
    let r = rig(Config::default()).await;
    let (a, started, _b, port_b) = two_receivers(&r).await;
    let location = consent(&started.authorize_url).await;
    let mut elsewhere = url::Url::parse(&location).unwrap();
    elsewhere.set_port(Some(port_b)).unwrap();
    let page = reqwest::get(elsewhere.as_str()).await.unwrap();
    assert_eq!(page.status(), 200, "the other receiver finishes it");
    let waited = Instant::now();
    a.wait_for("fx", Duration::from_secs(30)).await.unwrap();
    assert!(
        waited.elapsed() < Duration::from_secs(5),
        "{:?}",
        waited.elapsed()
    );
    assert_eq!(r.state(), ConnectorState::Ready);
}

#[tokio::test]
async fn a_flow_that_expired_is_not_said_to_be_spent_elsewhere() {
    let r = rig(Config::default()).await;
    let a = with_receiver(&r, free_port());
    a.start("fx", StartOptions::default()).await.unwrap();
    // Gone from the vault by expiring: the wait ends on its own bound, as a wait.
    r.advance(chrono::Duration::minutes(11));
    let err = a
        .wait_for("fx", Duration::from_millis(800))
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::WaitTimedOut { .. }), "{err}");
}
