//! Tokens already on the machine adopted with the client they were issued to: Claude Code's
//! `mcpOAuth` entries, Codex's file store and mcp-remote's `~/.mcp-auth` files, in a throwaway
//! home, against the rotating token endpoint with reuse detection on 127.0.0.1
//! (tests/support/rotating_as.rs), whose families are issued to one client each (`issue_to`: any
//! other client is refused). Each adopted credential then renews through `Refresher::refresh`
//! as that client; a credential Patchbay holds is never overwritten; an expired token without a
//! refresh token is not adopted; the source is recorded; mcp-remote's plaintext files are
//! offered and deleted only when asked.

mod support;

use chrono::DateTime;
use patchbay_catalog::CatalogSource;
use patchbay_core::import::{
    catalog_targets, delete_plaintext, import, plaintext_files, ImportOptions, ImportReport,
    ImportSources, ImportTarget,
};
use patchbay_core::{Patchbay, Paths, RefreshOutcome, RefreshPolicy, Refresher};
use patchbay_runtimes::mcp_remote::McpRemoteOptions;
use patchbay_vault::{CredentialRow, CredentialSource, MemoryStore, Secret, TokenSet};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::rotating_as::RotatingAs;

const T0: i64 = 1_800_000_000_000;
const HOUR_MS: i64 = 3_600_000;

/// Loopback URLs nobody answers on (port 1): the connectors' MCP endpoints are never contacted
/// when the stored issuer answers.
fn url(name: &str) -> String {
    format!("http://127.0.0.1:1/{name}/mcp")
}

struct Rig {
    _dir: tempfile::TempDir,
    home: PathBuf,
    patchbay: Arc<Patchbay>,
    ras: RotatingAs,
}

impl Rig {
    async fn new(connectors: &[&str]) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut servers = serde_json::Map::new();
        for name in connectors {
            servers.insert(
                name.to_string(),
                json!({ "type": "http", "url": url(name) }),
            );
        }
        let catalog = dir.path().join("catalog.json");
        std::fs::write(&catalog, json!({ "mcpServers": servers }).to_string()).unwrap();
        let paths = Paths {
            config_dir: dir.path().join("config"),
            data_dir: dir.path().join("data"),
            default_catalog: CatalogSource::Embedded,
            catalog_override: Some(catalog),
            keychain_account: "test".into(),
        };
        let patchbay = Arc::new(
            Patchbay::with_store(paths, Arc::new(MemoryStore::new()))
                .unwrap()
                .with_clock(Arc::new(|| DateTime::from_timestamp_millis(T0).unwrap())),
        );
        Rig {
            _dir: dir,
            home,
            patchbay,
            ras: RotatingAs::start().await,
        }
    }

    /// Replace the catalog (it is read afresh on every call).
    fn set_catalog(&self, servers: serde_json::Value) {
        let file = self._dir.path().join("catalog.json");
        std::fs::write(file, json!({ "mcpServers": servers }).to_string()).unwrap();
    }

    fn sources(&self) -> ImportSources {
        ImportSources::resolve(&self.home, &|_| None)
    }

    fn targets(&self) -> Vec<ImportTarget> {
        catalog_targets(&self.patchbay, &[])
    }

    fn target(&self, name: &str) -> ImportTarget {
        self.targets()
            .into_iter()
            .find(|t| t.connector == name)
            .unwrap()
    }

    async fn import(&self) -> ImportReport {
        self.import_with(ImportOptions {
            request_timeout: Duration::from_millis(1500),
            discovery_timeout: Duration::from_secs(5),
        })
        .await
    }

    async fn import_with(&self, options: ImportOptions) -> ImportReport {
        import(&self.patchbay, &self.targets(), &self.sources(), &options)
            .await
            .unwrap()
    }

    fn refresher(&self) -> Refresher {
        let policy = RefreshPolicy {
            http_timeout: Duration::from_secs(2),
            ..RefreshPolicy::default()
        };
        Refresher::new(self.patchbay.clone(), None, policy)
    }

    fn row(&self, name: &str) -> Option<CredentialRow> {
        self.patchbay
            .vault()
            .credential_row(&self.target(name).credential_key)
            .unwrap()
    }

    fn tokens(&self, name: &str) -> TokenSet {
        self.patchbay
            .vault()
            .credential_tokens(&self.target(name).credential_key)
            .unwrap()
            .unwrap()
    }

    fn source(&self, name: &str) -> Option<CredentialSource> {
        self.patchbay
            .vault()
            .credential_source(&self.target(name).credential_key)
            .unwrap()
    }

    /// A token family at the rotating server, issued to `client`; its first refresh token.
    fn family(&self, name: &str, client: &str) -> String {
        let refresh = self.ras.seed(name);
        self.ras.issue_to(name, client);
        refresh
    }

    fn write(&self, relative: &str, value: serde_json::Value) -> PathBuf {
        let path = self.home.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, value.to_string()).unwrap();
        path
    }

    /// Claude Code's credential file with these `mcpOAuth` entries.
    fn claude(&self, entries: serde_json::Value) {
        self.write(".claude/.credentials.json", json!({ "mcpOAuth": entries }));
    }

    /// Codex in file mode, `name` configured, and its file store with these entries.
    fn codex(&self, name: &str, entries: serde_json::Value) {
        let config = self.home.join(".codex/config.toml");
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(
            &config,
            format!(
                "mcp_oauth_credentials_store = \"file\"\n[mcp_servers.{name}]\nurl = \"{}\"\n",
                url(name)
            ),
        )
        .unwrap();
        self.write(".codex/.credentials.json", entries);
    }

    /// mcp-remote's files for a plain `mcp-remote URL` run: its tokens and, when given, its
    /// registration. Returns the files written.
    fn mcp_remote(
        &self,
        server_url: &str,
        tokens: serde_json::Value,
        client: Option<serde_json::Value>,
    ) -> Vec<PathBuf> {
        let hash = McpRemoteOptions::new(server_url).hash();
        let mut files = vec![self.write(
            &format!(".mcp-auth/mcp-remote-v1/{hash}_tokens.json"),
            tokens,
        )];
        if let Some(client) = client {
            files.push(self.write(
                &format!(".mcp-auth/mcp-remote-v1/{hash}_client_info.json"),
                client,
            ));
        }
        files.sort();
        files
    }
}

fn adopted<'a>(report: &'a ImportReport, name: &str) -> &'a patchbay_core::import::Adopted {
    report
        .adopted
        .iter()
        .find(|a| a.connector == name)
        .unwrap_or_else(|| panic!("{name} was not adopted: {report:#?}"))
}

fn not_adopted(report: &ImportReport, name: &str) -> String {
    report
        .not_adopted
        .iter()
        .find(|a| a.connector == name)
        .unwrap_or_else(|| panic!("{name} was adopted: {report:#?}"))
        .reason
        .clone()
}

/// Refresh `name` now and return the client the token endpoint saw.
async fn refresh_as(rig: &Rig, name: &str) -> String {
    let before = rig.ras.forms().len();
    let outcome = rig.refresher().refresh(name).await.unwrap();
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { .. }),
        "{name}: {outcome:?}"
    );
    let forms = rig.ras.forms();
    assert_eq!(forms.len(), before + 1, "one token request for {name}");
    forms[before]["client_id"].clone()
}

#[tokio::test]
async fn a_token_from_each_store_is_adopted_with_its_client_and_renews_as_that_client() {
    let rig = Rig::new(&["cc", "cx", "mr"]).await;
    let issuer = rig.ras.base.clone();
    rig.claude(json!({
        "cc|0000000000000000": {
            "serverName": "cc-in-claude",
            // A trailing slash is forgiven when matching.
            "serverUrl": format!("{}/", url("cc")),
            "accessToken": "at-cc-0",
            "refreshToken": rig.family("cc", "claude-client"),
            "expiresAt": T0 + HOUR_MS,
            "scope": "mcp:read",
            "clientId": "claude-client",
            "issuer": issuer,
        }
    }));
    rig.codex(
        "cx",
        json!({
            "cx|1111111111111111": {
                "server_name": "cx",
                "server_url": url("cx"),
                "client_id": "codex-client",
                "access_token": "at-cx-0",
                // Expired: the refresh token makes it usable.
                "expires_at": T0 - HOUR_MS,
                "refresh_token": rig.family("cx", "codex-client"),
                "scopes": ["mcp:read"],
                "issuer": issuer,
            }
        }),
    );
    let plaintext = rig.mcp_remote(
        &url("mr"),
        json!({
            "access_token": "at-mr-0",
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": "mcp:tools",
            "refresh_token": rig.family("mr", "mcp-remote-client"),
            "issuer": issuer,
            "expires_at": T0 + 2 * HOUR_MS,
        }),
        Some(json!({
            "client_id": "mcp-remote-client",
            "token_endpoint_auth_method": "none",
            "redirect_uris": ["http://localhost:14372/oauth/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "issuer": issuer,
        })),
    );

    let started = Instant::now();
    let report = rig.import().await;
    eprintln!(
        "import of 3 connectors from 3 stores: {} ms (measured {} ms)",
        report.elapsed_ms,
        started.elapsed().as_millis()
    );
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    for (name, source, client) in [
        ("cc", CredentialSource::ClaudeCode, "claude-client"),
        ("cx", CredentialSource::Codex, "codex-client"),
        ("mr", CredentialSource::McpRemote, "mcp-remote-client"),
    ] {
        let a = adopted(&report, name);
        assert_eq!(a.source, source);
        assert_eq!(a.client_id.as_deref(), Some(client));
        assert!(
            a.renewable && a.has_refresh_token && a.note.is_none(),
            "{a:?}"
        );
        assert_eq!(rig.source(name), Some(source));
        let row = rig.row(name).unwrap();
        assert_eq!(row.server_name, name);
        assert_eq!(row.client_id.as_deref(), Some(client));
        assert_eq!(row.issuer.as_deref(), Some(issuer.as_str()));
        let grant = rig
            .patchbay
            .vault()
            .grant(&row.credential_key)
            .unwrap()
            .unwrap();
        assert_eq!(grant.client_id, client);
        assert_eq!(grant.token_endpoint, rig.ras.token_endpoint());
        assert_eq!(grant.token_auth_method, "none");
        assert!(!grant.client_registered, "never ours to forget");
        assert_eq!(grant.resource.as_deref(), Some(url(name).as_str()));
    }
    let mr = rig.patchbay.vault().grant(&rig.target("mr").credential_key);
    assert_eq!(
        mr.unwrap().unwrap().redirect_uri,
        "http://localhost:14372/oauth/callback"
    );
    assert_eq!(adopted(&report, "mr").plaintext_files, plaintext);
    assert!(adopted(&report, "cc").plaintext_files.is_empty());
    assert_eq!(
        rig.tokens("cx").access_token.expose(),
        "at-cx-0",
        "adopted as held"
    );

    // Each renews with the client its pair was issued to (the server refuses any other).
    for (name, client) in [
        ("cc", "claude-client"),
        ("cx", "codex-client"),
        ("mr", "mcp-remote-client"),
    ] {
        let spent = rig.tokens(name).refresh_token.unwrap().expose().to_string();
        assert_eq!(refresh_as(&rig, name).await, client);
        let renewed = rig.tokens(name);
        assert_eq!(
            renewed
                .refresh_token
                .as_ref()
                .map(|t| t.expose().to_string()),
            rig.ras.current(name),
            "{name}: the rotated refresh token is kept"
        );
        assert_ne!(renewed.refresh_token.unwrap().expose(), spent);
        // Renewed by the same client: still where it came from.
        assert!(rig
            .source(name)
            .is_some_and(|s| s != CredentialSource::Patchbay));
    }
    assert_eq!(rig.ras.reuse_detected(), 0);

    // Nothing was written into the other tools' files.
    let after = std::fs::read_to_string(rig.home.join(".claude/.credentials.json")).unwrap();
    assert!(
        after.contains("at-cc-0") && !after.contains("at-cc-1"),
        "{after}"
    );
    for file in &plaintext {
        assert!(file.is_file(), "{} deleted unasked", file.display());
    }
}

#[tokio::test]
async fn a_credential_patchbay_holds_is_never_overwritten() {
    let rig = Rig::new(&["held"]).await;
    let key = rig.target("held").credential_key;
    let mine = CredentialRow {
        credential_key: key.clone(),
        server_name: "held".into(),
        server_url: Some(url("held")),
        // Lapsed and without a refresh token: still Patchbay's, still not overwritten.
        expires_at: Some(DateTime::from_timestamp_millis(T0 - HOUR_MS).unwrap()),
        has_refresh_token: false,
        one_shot: true,
        issuer: None,
        client_id: Some("patchbay-client".into()),
        scope: None,
        updated_at: DateTime::from_timestamp_millis(T0 - 2 * HOUR_MS).unwrap(),
        rotated_by: None,
        rotated_at: None,
    };
    rig.patchbay
        .vault()
        .put_credential(
            &mine,
            &TokenSet {
                access_token: Secret::new("mine"),
                refresh_token: None,
            },
        )
        .unwrap();
    rig.claude(json!({
        "held|0": {
            "serverUrl": url("held"),
            "accessToken": "theirs",
            "refreshToken": "theirs-r",
            "expiresAt": T0 + HOUR_MS,
            "clientId": "claude-client",
            "issuer": rig.ras.base,
        }
    }));
    let report = rig.import().await;
    assert!(report.adopted.is_empty(), "{report:#?}");
    assert!(not_adopted(&report, "held").contains("already holds"));
    assert_eq!(rig.tokens("held").access_token.expose(), "mine");
    assert_eq!(
        rig.row("held").unwrap().client_id.as_deref(),
        Some("patchbay-client")
    );
    assert_eq!(rig.source("held"), Some(CredentialSource::Patchbay));
}

#[tokio::test]
async fn a_connector_turned_off_is_left_alone() {
    let rig = Rig::new(&[]).await;
    rig.set_catalog(json!({
        "off": { "type": "http", "url": url("off"), "enabled": false },
        "on": { "type": "http", "url": url("on") },
    }));
    let names: Vec<String> = rig.targets().into_iter().map(|t| t.connector).collect();
    assert_eq!(names, ["on"]);
}

#[tokio::test]
async fn an_expired_token_without_a_refresh_token_is_not_adopted_and_the_freshest_wins() {
    let rig = Rig::new(&["stale", "both"]).await;
    let issuer = rig.ras.base.clone();
    rig.mcp_remote(
        &url("stale"),
        json!({ "access_token": "old", "expires_at": T0 - 1, "issuer": issuer }),
        Some(json!({ "client_id": "mcp-remote-client" })),
    );
    // The same server in Claude Code (valid one hour) and mcp-remote (valid two): mcp-remote's.
    rig.claude(json!({
        "both|0": {
            "serverUrl": url("both"),
            "accessToken": "claude-at",
            "refreshToken": "claude-rt",
            "expiresAt": T0 + HOUR_MS,
            "clientId": "claude-client",
            "issuer": issuer,
        }
    }));
    rig.mcp_remote(
        &url("both"),
        json!({ "access_token": "remote-at", "refresh_token": "remote-rt",
                "expires_at": T0 + 2 * HOUR_MS, "issuer": issuer }),
        Some(json!({ "client_id": "mcp-remote-client", "token_endpoint_auth_method": "none" })),
    );
    let report = rig.import().await;
    assert!(not_adopted(&report, "stale").contains("no usable token"));
    assert!(rig.row("stale").is_none());
    assert_eq!(adopted(&report, "both").source, CredentialSource::McpRemote);
    assert_eq!(rig.tokens("both").access_token.expose(), "remote-at");
    assert_eq!(rig.source("both"), Some(CredentialSource::McpRemote));
}

#[tokio::test]
async fn without_its_token_endpoint_the_credential_is_kept_and_says_refresh_needs_authorizing() {
    let rig = Rig::new(&["lost"]).await;
    // The issuer is a port nobody listens on, and so is the server (discovery's fallback).
    let dead = format!("http://127.0.0.1:{}", free_port());
    rig.claude(json!({
        "lost|0": {
            "serverUrl": url("lost"),
            "accessToken": "at",
            "refreshToken": "rt",
            "expiresAt": T0 + HOUR_MS,
            "clientId": "claude-client",
            "issuer": dead,
        }
    }));
    let report = rig.import().await;
    let a = adopted(&report, "lost");
    assert!(!a.renewable);
    assert!(
        a.note
            .as_deref()
            .is_some_and(|n| n.contains("refresh needs authorizing in Patchbay")),
        "{a:?}"
    );
    let key = rig.target("lost").credential_key;
    assert_eq!(rig.patchbay.vault().grant(&key).unwrap(), None);
    let outcome = rig.refresher().refresh("lost").await.unwrap();
    assert!(
        matches!(&outcome, RefreshOutcome::Skipped { reason } if reason.contains("authorize again in Patchbay")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn issuers_that_never_answer_cost_one_discovery_bound_in_all() {
    let rig = Rig::new(&["slow1", "slow2", "slow3"]).await;
    // Accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", silent.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let mut entries = serde_json::Map::new();
    for name in ["slow1", "slow2", "slow3"] {
        entries.insert(
            format!("{name}|0"),
            json!({ "serverUrl": url(name), "accessToken": "at", "refreshToken": "rt",
                    "expiresAt": T0 + HOUR_MS, "clientId": "c", "issuer": issuer }),
        );
    }
    rig.claude(serde_json::Value::Object(entries));
    let bound = Duration::from_millis(800);
    let started = Instant::now();
    let report = rig
        .import_with(ImportOptions {
            request_timeout: Duration::from_secs(30),
            discovery_timeout: bound,
        })
        .await;
    let took = started.elapsed();
    eprintln!("3 silent issuers, {bound:?} bound: import took {took:?}");
    assert!(took >= bound && took < bound * 2, "{took:?}");
    for name in ["slow1", "slow2", "slow3"] {
        let a = adopted(&report, name);
        assert!(!a.renewable);
        let note = a.note.as_deref().unwrap_or_default();
        assert!(note.contains("no answer within 800 ms"), "{note}");
    }
}

#[tokio::test]
async fn mcp_remotes_plaintext_files_are_deleted_only_when_asked_and_only_its_own() {
    let rig = Rig::new(&["mr", "other"]).await;
    let files = rig.mcp_remote(
        &url("mr"),
        json!({ "access_token": "at", "refresh_token": "rt", "expires_at": T0 + HOUR_MS,
                "issuer": rig.ras.base }),
        Some(json!({ "client_id": "mcp-remote-client" })),
    );
    // A transient file of the same entry goes with it; another server's entry stays.
    let hash = McpRemoteOptions::new(url("mr")).hash();
    let lease = rig.write(
        &format!(".mcp-auth/mcp-remote-v1/{hash}_refresh_in_progress.json"),
        json!({}),
    );
    let others = rig.mcp_remote(
        "http://127.0.0.1:1/unrelated/mcp",
        json!({ "access_token": "x" }),
        None,
    );
    let target = rig.target("mr");
    // Before the import the files are the only copy: kept.
    let refused = delete_plaintext(&rig.patchbay, &target, &rig.sources()).unwrap_err();
    assert!(
        refused.to_string().contains("holds no credential"),
        "{refused}"
    );

    let report = rig.import().await;
    let mut offered = files.clone();
    offered.push(lease.clone());
    offered.sort();
    assert_eq!(adopted(&report, "mr").plaintext_files, offered);
    assert_eq!(plaintext_files(&target, &rig.sources()).unwrap(), offered);
    let deleted = delete_plaintext(&rig.patchbay, &target, &rig.sources()).unwrap();
    assert_eq!(deleted, offered);
    for file in &offered {
        assert!(!file.exists(), "{}", file.display());
    }
    for file in &others {
        assert!(file.exists(), "{} is another server's", file.display());
    }
    assert!(delete_plaintext(&rig.patchbay, &target, &rig.sources())
        .unwrap()
        .is_empty());
    // The credential lives on in the vault.
    assert_eq!(rig.tokens("mr").access_token.expose(), "at");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Codex in keyring mode (the real Secret Service, so gated like every keychain test): its item
/// holds no issuer, so the token endpoint is discovered from the server, here through the
/// catalog's `authServerMetadataUrl` (the rotating server serves no resource metadata).
#[tokio::test]
async fn a_token_in_codexs_keyring_is_adopted_and_renews_as_codexs_client() {
    if std::env::var("PATCHBAY_TEST_KEYCHAIN").as_deref() != Ok("1") {
        // Under scripts/test.sh (PATCHBAY_TEST_INNER=1) the keychain is provided: not a skip.
        assert!(
            std::env::var("PATCHBAY_TEST_INNER").as_deref() != Ok("1"),
            "needs the real keychain, which PATCHBAY_TEST_INNER=1 promises"
        );
        eprintln!("SKIPPED: needs the real keychain (PATCHBAY_TEST_KEYCHAIN=1 in a D-Bus session with gnome-keyring)");
        return;
    }
    use patchbay_runtimes::codex::{CodexKeyringStore, OsKeyring, CODEX_KEYRING_SERVICE};
    use patchbay_runtimes::{RuntimeCredential, RuntimeStore};

    let rig = Rig::new(&[]).await;
    let server_url = format!("{}/mcp", rig.ras.base);
    rig.set_catalog(json!({ "kr": {
        "type": "http",
        "url": server_url,
        "oauth": { "authServerMetadataUrl":
            format!("{}/.well-known/oauth-authorization-server", rig.ras.base) },
    } }));
    let config = rig.home.join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        format!(
            "mcp_oauth_credentials_store = \"keyring\"\n[mcp_servers.kr]\nurl = \"{server_url}\"\n"
        ),
    )
    .unwrap();
    let codex_key =
        patchbay_catalog::credential_key("kr", "http", &server_url, &Default::default());
    let keyring = CodexKeyringStore::new(
        Box::new(OsKeyring::new(CODEX_KEYRING_SERVICE)),
        vec![codex_key.clone()],
    );
    let now = DateTime::from_timestamp_millis(T0).unwrap();
    keyring
        .write(
            &RuntimeCredential {
                key: codex_key.clone(),
                server_name: "kr".into(),
                server_url: server_url.clone(),
                access_token: Secret::new("at-kr-0"),
                refresh_token: Some(Secret::new(rig.family("kr", "codex-keyring-client"))),
                expires_at: Some(now + chrono::Duration::hours(1)),
                scope: None,
                client_id: Some("codex-keyring-client".into()),
                client_secret: None,
                issuer: None,
            },
            now,
        )
        .unwrap();

    let report = rig.import().await;
    let _ = keyring.remove(&codex_key);
    let a = adopted(&report, "kr");
    assert_eq!(a.source, CredentialSource::Codex);
    assert!(a.renewable, "{a:?}");
    assert_eq!(
        rig.row("kr").unwrap().issuer.as_deref(),
        Some(rig.ras.base.as_str())
    );
    assert_eq!(refresh_as(&rig, "kr").await, "codex-keyring-client");
}
