//! The gateway's socket for Patchbay's stdio bridges (`bridge_socket`), served and asked for
//! real (a Unix socket in the data directory, a real vault on an in-memory key store, the core
//! tests' rotating token endpoint on 127.0.0.1): the connector resolved with its bearer, a
//! renewal through the refresher of record, a name not in use refused with its reason, another
//! catalog's bridge told to resolve by itself; the socket the owner's only; a live gateway's
//! socket never taken by a second one, a dead one's replaced.

#![cfg(unix)]

mod support;

use patchbay_core::Refresher;
use patchbay_gateway::bridge_socket::{self, Answer, Request};
use patchbay_gateway::Upstreams;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::{core_with_fx, refresh_policy, Core};

const MCP_URL: &str = "https://mcp.example.test/mcp";

async fn ask(data_dir: &Path, request: Request) -> Option<Answer> {
    let data_dir = data_dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        bridge_socket::ask(&data_dir, &request, Duration::from_secs(20))
    })
    .await
    .unwrap()
}

async fn listening(socket: &Path) {
    for _ in 0..200 {
        if std::os::unix::net::UnixStream::connect(socket).is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("nothing listens at {}", socket.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_gets_its_connector_and_its_renewal_from_the_gateway() {
    let catalog = json!({ "mcpServers": { "fx": { "type": "http", "url": MCP_URL } } });
    let Core { dir, patchbay, ras } = core_with_fx(&catalog, MCP_URL).await;
    let data_dir = patchbay.paths.data_dir.clone();
    std::fs::create_dir_all(&data_dir).unwrap();
    let own_catalog: Option<PathBuf> = patchbay.paths.catalog_override.clone();
    let refresher = Refresher::new(patchbay.clone(), None, refresh_policy());
    let upstreams = Upstreams::new(patchbay.clone(), Some(refresher));
    let served = tokio::spawn(bridge_socket::serve(upstreams.clone()));
    let socket = bridge_socket::socket_path(&data_dir);
    listening(&socket).await;
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }

    let resolve = |target: &str, catalog: Option<PathBuf>| Request::Resolve {
        target: target.into(),
        catalog,
    };
    match ask(&data_dir, resolve("fx", own_catalog.clone())).await {
        Some(Answer::Resolved(handoff)) => {
            assert_eq!(handoff.url, MCP_URL);
            assert_eq!(handoff.bearer.as_deref(), Some("at-fx-0"));
            assert_eq!(handoff.health_file, Some(data_dir.join("health.sqlite")));
        }
        other => panic!("{other:?}"),
    }
    match ask(&data_dir, resolve("nope", own_catalog.clone())).await {
        Some(Answer::Refused { reason, message }) => {
            assert_eq!(reason, "not_in_use");
            assert!(message.contains("nope"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let elsewhere = Some(dir.path().join("another-catalog.json"));
    assert!(matches!(
        ask(&data_dir, resolve("fx", elsewhere)).await,
        Some(Answer::NotMine)
    ));
    assert!(matches!(
        ask(&data_dir, resolve("fx", None)).await,
        Some(Answer::NotMine)
    ));

    // The bearer refused upstream: renewed once, at the token endpoint, by this process.
    let renew = Request::Renew {
        target: "fx".into(),
        catalog: own_catalog.clone(),
        refused: Some("at-fx-0".into()),
        scope: None,
    };
    match ask(&data_dir, renew).await {
        Some(Answer::Renewed(line)) => {
            let bearer = line["bearer"].as_str().unwrap_or_else(|| panic!("{line}"));
            assert_ne!(bearer, "at-fx-0");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ras.refreshes(), 1);

    // A second gateway on the same data directory leaves the live socket alone.
    tokio::time::timeout(
        Duration::from_secs(5),
        bridge_socket::serve(upstreams.clone()),
    )
    .await
    .expect("returns at once: the socket is another gateway's");
    assert!(ask(&data_dir, resolve("fx", own_catalog.clone()))
        .await
        .is_some());

    // The first one gone, its socket stays behind: nothing answers, and the next replaces it.
    served.abort();
    let _ = served.await;
    assert!(socket.exists());
    assert!(ask(&data_dir, resolve("fx", own_catalog.clone()))
        .await
        .is_none());
    let again = tokio::spawn(bridge_socket::serve(upstreams));
    listening(&socket).await;
    assert!(matches!(
        ask(&data_dir, resolve("fx", own_catalog)).await,
        Some(Answer::Resolved(_))
    ));
    again.abort();
}
