//! mcp-remote's token store read from files a real `npx mcp-remote` run wrote
//! (tests/fixtures/clients/mcp-auth/mcp-remote-v1/), named by matching the client configs'
//! mcp-remote invocations (tests/fixtures/clients/home) against its hash rule.
//!
//! How the fixture was made (2026-12-01, mcp-remote 0.15.1, Node from scripts/setup.sh): in a
//! temp dir `npm install mcp-remote@0.15.1`; start the MCP SDK's example OAuth server as
//! tests/tests/third_party_oauth.rs does (`cd tests/node && MCP_PORT=45591 MCP_AUTH_PORT=47775
//! node sdk-oauth-refresh-server.mjs --oauth`); then
//! `sleep 40 | MCP_REMOTE_CONFIG_DIR=$OUT BROWSER=tests/support/follow-browser.sh
//!  PATH=tests/support:$PATH node_modules/.bin/mcp-remote http://localhost:45591/mcp`
//! (stdin held open so the proxy stays up; the "browser" follows the auto-approving consent
//! redirect to mcp-remote's callback). The second entry: the same against ports 35557/38225 with
//! `--header 'X-Team: ${TEAM_ID}' --resource http://localhost:1/other`. Both wrote
//! `<hash>_tokens.json` and `<hash>_client_info.json` within seconds; the token values were then
//! replaced by fake ones (`fixture-...-not-real-N`), nothing else changed. Added by hand: an entry
//! no candidate names (`0123..._tokens.json`) and an abandoned sign-in's `code_verifier` file.

use chrono::{TimeZone, Utc};
use patchbay_runtimes::clients::{self, ClientPaths, Os};
use patchbay_runtimes::mcp_remote::{self, McpRemoteOptions};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clients")
}

fn store() -> PathBuf {
    fixtures().join("mcp-auth/mcp-remote-v1")
}

/// The candidates a caller has: every mcp-remote invocation configured in a client.
fn candidates() -> Vec<McpRemoteOptions> {
    let paths = ClientPaths::resolve(&fixtures().join("home"), Os::Linux, &|_| None);
    let scan = clients::read_all(&paths, &[]);
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    scan.servers
        .iter()
        .filter_map(|s| s.mcp_remote_options())
        .collect()
}

#[test]
fn the_real_store_is_read_and_named_by_the_clients_configs() {
    let candidates = candidates();
    // Claude Desktop's two bridges and Cursor's one.
    assert_eq!(candidates.len(), 3, "{candidates:?}");
    let scan = mcp_remote::read_mcp_remote(&store(), &candidates).unwrap();
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    let hashes: Vec<&str> = scan.credentials.iter().map(|c| c.hash.as_str()).collect();
    // The abandoned sign-in (a code_verifier only) is no credential.
    assert_eq!(
        hashes,
        [
            "0123456789abcdef0123456789abcdef",
            "ac165a861bb70742d28d2a76e6a99c47",
            "d9e4a93ea7cd0f940d81c754c5d37ea2"
        ]
    );

    let unknown = &scan.credentials[0];
    assert_eq!(unknown.server_url(), None);
    assert!(unknown.client.is_none() && unknown.client_info_path.is_none());

    // Cursor's `mcp-remote URL --header 'X-Team: ${TEAM_ID}' --resource ...`: the header as
    // written (unexpanded) and the resource enter the hash.
    let with_header = &scan.credentials[1];
    assert_eq!(with_header.server_url(), Some("http://localhost:35557/mcp"));
    let matched = with_header.matched.as_ref().unwrap();
    assert_eq!(
        matched.resource.as_deref(),
        Some("http://localhost:1/other")
    );
    assert_eq!(matched.headers["X-Team"].expose(), "${TEAM_ID}");

    let plain = &scan.credentials[2];
    assert_eq!(plain.server_url(), Some("http://localhost:45591/mcp"));
    let tokens = plain.tokens.as_ref().unwrap();
    assert_eq!(
        tokens.access_token.expose(),
        "fixture-access-token-not-real-1"
    );
    assert_eq!(
        tokens.refresh_token.as_ref().unwrap().expose(),
        "fixture-refresh-token-not-real-1"
    );
    assert_eq!(
        tokens.expires_at,
        Utc.timestamp_millis_opt(1_796_141_914_904).single()
    );
    assert_eq!(tokens.scope.as_deref(), Some("mcp:tools"));
    assert_eq!(tokens.issuer.as_deref(), Some("http://localhost:47775/"));
    let client = plain.client.as_ref().unwrap();
    assert_eq!(client.client_id, "0199e1d8-88f0-41f1-ac57-d9a9f974370c");
    assert!(client.client_secret.is_none());
    assert_eq!(client.token_endpoint_auth_method.as_deref(), Some("none"));
    assert_eq!(
        client.redirect_uris,
        ["http://localhost:13299/oauth/callback"]
    );
    assert_eq!(client.grant_types, ["authorization_code", "refresh_token"]);
    assert_eq!(
        plain.tokens_path.as_deref(),
        Some(
            store()
                .join("d9e4a93ea7cd0f940d81c754c5d37ea2_tokens.json")
                .as_path()
        )
    );
    assert_eq!(plain.files.len(), 2);

    let shown = format!("{:?}", scan.credentials);
    assert!(!shown.contains("not-real"), "{shown}");
}

#[test]
fn the_directory_follows_mcp_remote_config_dir() {
    let home = Path::new("/home/ada");
    assert_eq!(
        mcp_remote::mcp_remote_dir(home, &|_| None),
        home.join(".mcp-auth/mcp-remote-v1")
    );
    let env = |name: &str| (name == "MCP_REMOTE_CONFIG_DIR").then(|| "/x".to_string());
    assert_eq!(
        mcp_remote::mcp_remote_dir(home, &env),
        Path::new("/x/mcp-remote-v1")
    );
    let empty = |name: &str| (name == "MCP_REMOTE_CONFIG_DIR").then(String::new);
    assert_eq!(
        mcp_remote::mcp_remote_dir(home, &empty),
        home.join(".mcp-auth/mcp-remote-v1")
    );
}

#[test]
fn a_missing_store_is_empty_and_a_bad_file_hides_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let scan = mcp_remote::read_mcp_remote(&dir.path().join("absent"), &[]).unwrap();
    assert!(scan.credentials.is_empty() && scan.errors.is_empty());

    for entry in std::fs::read_dir(store()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    let bad = dir
        .path()
        .join("ac165a861bb70742d28d2a76e6a99c47_tokens.json");
    std::fs::write(&bad, r#"{"token_type": "bearer", "access_token": 7}"#).unwrap();
    let scan = mcp_remote::read_mcp_remote(dir.path(), &candidates()).unwrap();
    assert_eq!(scan.credentials.len(), 2);
    assert_eq!(scan.errors.len(), 1);
    let message = scan.errors[0].to_string();
    assert!(
        message.contains("ac165a861bb70742d28d2a76e6a99c47_tokens.json"),
        "{message}"
    );
    assert!(
        message.contains("access_token: expected a string"),
        "{message}"
    );
}

/// Issue 23: a FIFO among the token files hung the import, and the good entries beside it were
/// never read. Now it is an error naming that file, at once, and the others are read.
#[cfg(unix)]
#[test]
fn a_fifo_among_the_token_files_is_named_and_the_rest_read() {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(store()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    let fifo = dir
        .path()
        .join("ac165a861bb70742d28d2a76e6a99c47_tokens.json");
    std::fs::remove_file(&fifo).unwrap();
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let (tx, rx) = std::sync::mpsc::channel();
    let path = dir.path().to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(mcp_remote::read_mcp_remote(&path, &candidates()));
    });
    let scan = rx
        .recv_timeout(std::time::Duration::from_secs(2))
        .expect("the read returns instead of waiting on the FIFO")
        .unwrap();
    assert_eq!(scan.credentials.len(), 2, "the good entries are read");
    assert_eq!(scan.errors.len(), 1);
    let message = scan.errors[0].to_string();
    assert!(
        message.contains("ac165a861bb70742d28d2a76e6a99c47_tokens.json")
            && message.contains("not a regular file"),
        "{message}"
    );
}
