//! `Upstreams::resolve` and `Upstream::on_unauthorized` against a real vault (SQLite, an
//! in-memory key store) and the core tests' rotating token endpoint on 127.0.0.1: a connector is
//! found by name and by URL, its `${VAR}` headers come from the vault, its bearer is the vault's
//! access token, a 401 renews once through the refresher of record (a burst of 401s too), and a
//! refused renewal says to authorize the connector in Patchbay.

mod support;

use patchbay_core::{Patchbay, RefreshPolicy, Refresher};
use patchbay_gateway::{UpstreamError, UpstreamTransport, Upstreams};
use patchbay_vault::Secret;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use support::rotating_as::{Fault, RotatingAs};
use support::{core_with_fx, refresh_policy, Core};

const MCP_URL: &str = "https://mcp.example.test/mcp";

struct Rig {
    _dir: tempfile::TempDir,
    patchbay: Arc<Patchbay>,
    upstreams: Upstreams,
    ras: RotatingAs,
}

async fn rig() -> Rig {
    let catalog = json!({ "mcpServers": {
        "fx": { "type": "http", "url": MCP_URL },
        "keyed": { "type": "http", "url": "https://keyed.example.test/${KEYED_PATH}",
                   "headers": { "X-Api-Key": "${KEYED_KEY}" } },
        "local": { "type": "stdio", "command": "true", "enabled": true }
    } });
    let Core { dir, patchbay, ras } = core_with_fx(&catalog, MCP_URL).await;
    patchbay
        .set_secret("KEYED_KEY", &Secret::new("key-from-the-vault"))
        .unwrap();
    patchbay
        .set_secret("KEYED_PATH", &Secret::new("mcp"))
        .unwrap();
    let policy = RefreshPolicy {
        lock_timeout: Duration::from_secs(5),
        ..refresh_policy()
    };
    let refresher = Refresher::new(patchbay.clone(), None, policy);
    let upstreams = Upstreams::new(patchbay.clone(), Some(refresher));
    Rig {
        _dir: dir,
        patchbay,
        upstreams,
        ras,
    }
}

fn header<'a>(headers: &'a [(String, Secret)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.expose())
}

#[tokio::test]
async fn resolves_by_name_and_by_url_with_the_vaults_credentials() {
    let rig = rig().await;
    let fx = rig.upstreams.resolve("fx").unwrap();
    assert_eq!(fx.url(), MCP_URL);
    assert_eq!(fx.transport(), UpstreamTransport::StreamableHttp);
    assert!(fx.is_oauth());
    assert_eq!(fx.bearer().unwrap().expose(), "at-fx-0");
    assert_eq!(
        header(&fx.request_headers(), "authorization"),
        Some("Bearer at-fx-0")
    );
    // Nothing secret in its Debug.
    assert!(!format!("{fx:?}").contains("at-fx-0"));

    // The mcp-remote drop-in: by URL, trailing slash and host case aside.
    let by_url = rig
        .upstreams
        .resolve("https://MCP.example.test/mcp/")
        .unwrap();
    assert_eq!(by_url.name(), "fx");

    let keyed = rig.upstreams.resolve("keyed").unwrap();
    assert_eq!(keyed.url(), "https://keyed.example.test/mcp");
    assert!(!keyed.is_oauth());
    assert!(keyed.bearer().is_none());
    assert_eq!(
        header(&keyed.request_headers(), "x-api-key"),
        Some("key-from-the-vault")
    );
    assert_eq!(
        rig.upstreams
            .resolve("https://keyed.example.test/mcp")
            .unwrap()
            .name(),
        "keyed"
    );

    assert!(matches!(
        rig.upstreams.resolve("nope"),
        Err(UpstreamError::NotFound(_))
    ));
    assert!(matches!(
        rig.upstreams.resolve("https://elsewhere.example.test/mcp"),
        Err(UpstreamError::NoSuchUrl(_))
    ));
    let local = rig.upstreams.resolve("local");
    assert!(
        matches!(local, Err(UpstreamError::NotRemote(_))),
        "{local:?}"
    );

    // A missing variable is named, its value never.
    rig.patchbay.delete_secret("KEYED_KEY").unwrap();
    let err = rig.upstreams.resolve("keyed").unwrap_err().to_string();
    assert!(err.contains("KEYED_KEY"), "{err}");
}

#[tokio::test]
async fn a_burst_of_401s_renews_once_through_the_refresher() {
    let rig = rig().await;
    let fx = Arc::new(rig.upstreams.resolve("fx").unwrap());
    let rejected = fx.bearer().unwrap();
    let mut burst = tokio::task::JoinSet::new();
    for _ in 0..5 {
        let fx = fx.clone();
        let rejected = rejected.clone();
        burst.spawn(async move { fx.on_unauthorized(Some(&rejected)).await });
    }
    let mut renewed = Vec::new();
    while let Some(r) = burst.join_next().await {
        renewed.push(r.unwrap().unwrap());
    }
    assert_eq!(rig.ras.refreshes(), 1, "one renewal for the burst");
    assert_ne!(renewed[0], rejected);
    assert!(renewed.iter().all(|t| *t == renewed[0]));
    assert_eq!(fx.bearer().unwrap(), renewed[0]);
    // The vault holds the renewed token: a fresh resolve presents it.
    assert_eq!(
        rig.upstreams.resolve("fx").unwrap().bearer().unwrap(),
        renewed[0]
    );
}

#[tokio::test]
async fn a_refused_renewal_says_to_authorize_in_patchbay() {
    let rig = rig().await;
    let fx = rig.upstreams.resolve("fx").unwrap();
    rig.ras.push_fault(Fault::Status(
        400,
        "application/json",
        json!({ "error": "invalid_grant" }).to_string(),
    ));
    let rejected = fx.bearer().unwrap();
    let err = fx.on_unauthorized(Some(&rejected)).await.unwrap_err();
    assert!(
        matches!(err, UpstreamError::NeedsAuthorization { .. }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains("authorize fx in Patchbay"), "{message}");
    assert!(
        !message.contains("at-fx-0") && !message.contains("rt-fx"),
        "{message}"
    );

    // A static credential has nothing to renew: it says which header to fix.
    let keyed = rig.upstreams.resolve("keyed").unwrap();
    let err = keyed.on_unauthorized(None).await.unwrap_err().to_string();
    assert!(err.contains("X-Api-Key"), "{err}");
    assert!(!err.contains("key-from-the-vault"), "{err}");
}
