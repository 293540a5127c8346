//! The whole OAuth flow through the Authorizer against our fault-injecting authorization server
//! on 127.0.0.1 (tests/support/fake_as.rs): the consent page is followed with reqwest (the fake
//! auto-approves with a 302) and the redirect is delivered with `complete_pasted`. The vault
//! uses an in-memory keychain.

mod support;

use patchbay_catalog::CatalogSource;
use patchbay_core::{
    Authorizer, AuthorizerOptions, Completion, CoreError, Patchbay, Paths, StartOptions,
};
use patchbay_oauth::OAuthError;
use patchbay_status::ConnectorState;
use patchbay_vault::MemoryStore;
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
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
