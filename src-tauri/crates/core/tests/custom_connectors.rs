//! "Add custom connector" (issue 21): a server the catalog lacks lands in the user catalog in
//! use, its secrets in the vault and never in the file, the row walks on from there; a taken name
//! or bad input writes nothing; the OAuth probe tells a server that wants OAuth from an open one
//! with one request, against real servers on loopback.

use patchbay_core::custom::{probe_remote, CustomConnector, CustomServer, CustomValue, RemoteAuth};
use patchbay_core::{Patchbay, Paths};
use patchbay_status::ConnectorState;
use patchbay_vault::{MemoryStore, Secret};
use std::path::Path;
use std::sync::Arc;

fn open(dir: &Path) -> Patchbay {
    let paths = Paths::under(dir);
    std::fs::create_dir_all(&paths.config_dir).unwrap();
    std::fs::write(
        paths.config_dir.join("mcp.json"),
        r#"{"search": {"type": "stdio", "command": "npx", "args": ["-y", "search-mcp"], "x-mine": 7}}"#,
    )
    .unwrap();
    Patchbay::with_store(paths, Arc::new(MemoryStore::new())).unwrap()
}

fn stdio(name: &str) -> CustomConnector {
    CustomConnector {
        name: name.into(),
        title: Some("Postgres".into()),
        server: CustomServer::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "@modelcontextprotocol/server-postgres".into()],
            env: vec![CustomValue {
                name: "DATABASE_URL".into(),
                value: Secret::new("postgres://me:pw-4417@db/app\n"),
                secret: true,
            }],
        },
    }
}

#[test]
fn a_custom_stdio_server_is_in_use_with_its_secret_in_the_vault_only() {
    let dir = tempfile::tempdir().unwrap();
    let patchbay = open(dir.path());
    let added = patchbay.add_custom_connector(&stdio("postgres")).unwrap();
    assert_eq!(added.secrets, ["POSTGRES_DATABASE_URL"]);

    let report = patchbay.status();
    let row = report.connector("postgres").expect("the new row");
    assert_eq!(row.state, ConnectorState::Ready, "{}", row.detail);
    assert_eq!(row.title, "Postgres");
    assert_eq!(
        patchbay
            .resolve_variable("POSTGRES_DATABASE_URL")
            .as_deref(),
        Some("postgres://me:pw-4417@db/app")
    );
    let file = std::fs::read_to_string(patchbay.writable_catalog()).unwrap();
    assert!(!file.contains("pw-4417"), "{file}");
    assert!(file.contains("${POSTGRES_DATABASE_URL}"), "{file}");
    // The user's other entry and its unknown key are kept.
    assert!(file.contains("\"x-mine\": 7"), "{file}");
    assert!(report.connector("search").is_some());
}

#[test]
fn a_taken_name_or_bad_input_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let patchbay = open(dir.path());
    let before = std::fs::read_to_string(patchbay.writable_catalog()).unwrap();
    let taken = patchbay.add_custom_connector(&stdio("search")).unwrap_err();
    assert!(
        taken
            .to_string()
            .contains("name: a connector named \"search\" exists"),
        "{taken}"
    );
    // A gallery name is taken too.
    assert!(patchbay.add_custom_connector(&stdio("github")).is_err());
    let bad = CustomConnector {
        name: "web".into(),
        title: None,
        server: CustomServer::Remote {
            url: "http://mcp.example.com/mcp".into(),
            headers: vec![],
        },
    };
    let err = patchbay.add_custom_connector(&bad).unwrap_err();
    assert_eq!(err.kind(), "invalid_input");
    assert_eq!(
        std::fs::read_to_string(patchbay.writable_catalog()).unwrap(),
        before
    );
    assert!(
        patchbay.secret_names().unwrap().is_empty(),
        "no secret stored"
    );
}

#[test]
fn a_custom_remote_server_without_a_key_asks_to_be_authorized() {
    let dir = tempfile::tempdir().unwrap();
    let patchbay = open(dir.path());
    patchbay
        .add_custom_connector(&CustomConnector {
            name: "acme".into(),
            title: None,
            server: CustomServer::Remote {
                url: "https://mcp.acme.test/mcp".into(),
                headers: vec![],
            },
        })
        .unwrap();
    let report = patchbay.status();
    let row = report.connector("acme").unwrap();
    assert_eq!(
        row.state,
        ConnectorState::NeedsAuthorization,
        "{}",
        row.detail
    );
}

async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn the_probe_tells_oauth_from_open_with_one_request() {
    use axum::http::{header, StatusCode};
    use axum::routing::post;
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hits.clone();
    let oauth = serve(axum::Router::new().route(
        "/mcp",
        post(move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async {
                (
                    StatusCode::UNAUTHORIZED,
                    [(
                        header::WWW_AUTHENTICATE,
                        r#"Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource""#,
                    )],
                )
            }
        }),
    ))
    .await;
    let open = serve(axum::Router::new().route(
        "/mcp",
        post(|| async {
            (
                [(header::CONTENT_TYPE, "application/json")],
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            )
        }),
    ))
    .await;
    let key =
        serve(axum::Router::new().route("/mcp", post(|| async { StatusCode::UNAUTHORIZED }))).await;

    assert_eq!(probe_remote(&oauth).await.unwrap(), RemoteAuth::OAuth);
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one request"
    );
    assert_eq!(probe_remote(&open).await.unwrap(), RemoteAuth::Open);
    match probe_remote(&key).await.unwrap() {
        RemoteAuth::Unknown { detail } => assert!(detail.contains("API key"), "{detail}"),
        other => panic!("{other:?}"),
    }
    // Nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    match probe_remote(&format!("http://127.0.0.1:{port}/mcp"))
        .await
        .unwrap()
    {
        RemoteAuth::Unknown { detail } => assert!(detail.contains("nothing answers"), "{detail}"),
        other => panic!("{other:?}"),
    }
    // A URL the form would refuse is refused here too, before any request.
    assert!(probe_remote("http://mcp.example.com/mcp").await.is_err());
}
