//! What the gateway's in-process tests share: a core on a throwaway directory with a catalog of
//! the test's, whose connector `fx` holds an OAuth credential (access token `at-fx-0`, a refresh
//! token the core tests' rotating token endpoint knows) and its grant in a real vault (SQLite, an
//! in-memory key store); and the refresh policy the tests renew with.

#![allow(dead_code)]

#[path = "../../../core/tests/support/rotating_as.rs"]
pub mod rotating_as;

use patchbay_catalog::{CatalogItem, CatalogSource, CredentialKey};
use patchbay_core::{Patchbay, Paths, RefreshPolicy, Refresher, RetryPolicy};
use patchbay_gateway::{Clients, Gateway, GatewayOptions, Upstreams};
use patchbay_vault::{CredentialRow, Grant, MemoryStore, Secret, TokenSet};
use rotating_as::RotatingAs;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

pub struct Core {
    /// The config and data directories (and the catalog file); removed on drop.
    pub dir: tempfile::TempDir,
    pub patchbay: Arc<Patchbay>,
    /// The token endpoint `fx`'s grant renews at.
    pub ras: RotatingAs,
}

/// A core whose catalog is `catalog` (it names `fx`, at `fx_url`), `fx`'s credential valid for
/// another 30 minutes.
pub async fn core_with_fx(catalog: &Value, fx_url: &str) -> Core {
    let ras = RotatingAs::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("catalog.json");
    std::fs::write(&file, catalog.to_string()).unwrap();
    let paths = Paths {
        config_dir: dir.path().join("config"),
        data_dir: dir.path().join("data"),
        default_catalog: CatalogSource::Embedded,
        catalog_override: Some(file),
        keychain_account: "test".into(),
    };
    let patchbay = Arc::new(Patchbay::with_store(paths, Arc::new(MemoryStore::new())).unwrap());
    let key = fx_credential_key(&patchbay);
    let now = patchbay.now();
    patchbay
        .vault()
        .put_credential(
            &CredentialRow {
                credential_key: key.clone(),
                server_name: "fx".into(),
                server_url: Some(fx_url.into()),
                expires_at: Some(now + chrono::Duration::minutes(30)),
                has_refresh_token: true,
                one_shot: false,
                issuer: Some(ras.base.clone()),
                client_id: Some("cid".into()),
                scope: None,
                updated_at: now,
                rotated_by: None,
                rotated_at: None,
            },
            &TokenSet {
                access_token: Secret::new("at-fx-0"),
                refresh_token: Some(Secret::new(ras.seed("fx"))),
            },
        )
        .unwrap();
    patchbay
        .vault()
        .put_grant(&Grant {
            credential_key: key,
            issuer: ras.base.clone(),
            token_endpoint: ras.token_endpoint(),
            token_auth_method: "none".into(),
            client_id: "cid".into(),
            client_secret: None,
            client_registered: true,
            redirect_uri: "http://localhost:3118/callback".into(),
            resource: Some(fx_url.into()),
            scopes: None,
        })
        .unwrap();
    Core { dir, patchbay, ras }
}

/// `fx`'s credential key in the core's catalog.
pub fn fx_credential_key(patchbay: &Patchbay) -> CredentialKey {
    match patchbay.catalog().get("fx") {
        Some(CatalogItem::Server(e)) => e.credential_key(&|_| None).unwrap().unwrap(),
        _ => panic!("the test catalog has fx"),
    }
}

/// Renewal bounded at 5 s and never retried: a test sees each refresh it caused, once.
pub fn refresh_policy() -> RefreshPolicy {
    RefreshPolicy {
        http_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        },
        ..RefreshPolicy::default()
    }
}

/// The gateway in front of `patchbay`'s connectors on a free port, renewing through the
/// refresher of record ([`refresh_policy`]), served in the background; its base URL and a
/// gateway client's secret.
pub async fn serve_gateway(patchbay: Arc<Patchbay>, options: GatewayOptions) -> (String, Secret) {
    let refresher = Refresher::new(patchbay.clone(), None, refresh_policy());
    let (_, secret) = Clients::new(&patchbay.paths.data_dir)
        .add("test", None, patchbay.now())
        .unwrap();
    let gateway = Gateway::bind(
        Upstreams::new(patchbay, Some(refresher)),
        GatewayOptions { port: 0, ..options },
    )
    .await
    .unwrap();
    let base = format!("http://127.0.0.1:{}", gateway.port());
    tokio::spawn(gateway.serve(std::future::pending()));
    (base, secret)
}
