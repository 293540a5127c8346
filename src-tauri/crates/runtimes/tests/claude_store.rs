//! Claude Code's stores through our writers, and the key canaries through our config readers.

use chrono::{DateTime, Duration, TimeZone, Utc};
use indexmap::IndexMap;
use patchbay_catalog::CredentialKey;
use patchbay_runtimes::claude::{add_server, AddServerOutcome, ClaudeFileStore, ClaudeServerSpec};
use patchbay_runtimes::config::{
    match_catalog, parse_codex_config, read_claude_servers, RuntimePaths, ServerScope,
};
use patchbay_runtimes::lock::FileLock;
use patchbay_runtimes::{RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;

fn now() -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_764_000_000_000).unwrap()
}

fn cred(key: &str, access: &str, expires: Option<DateTime<Utc>>) -> RuntimeCredential {
    patchbay_runtimes::memory::sample_credential(key, access, expires)
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

const NOTION: &str = "notion|3fad03f7abd02b9c";

#[test]
fn canary_keys_through_the_config_readers() {
    let home = tempfile::tempdir().unwrap();
    fs::write(
        home.path().join(".claude.json"),
        r#"{"numStartups": 3, "mcpServers": {
            "fx": {"type": "http", "url": "http://localhost:3100/mcp"},
            "hx": {"type": "http", "url": "http://localhost:3100/mcp",
                   "headers": {"X-Api-Key": "abc", "X-Env": "${MYVAR}"}},
            "local": {"command": "npx", "args": ["x"]}
          },
          "projects": {"/work/p": {"mcpServers": {
            "notion": {"type": "http", "url": "https://mcp.notion.com/v1/mcp"}}}}}"#,
    )
    .unwrap();
    let project = tempfile::tempdir().unwrap();
    fs::write(
        project.path().join(".mcp.json"),
        r#"{"mcpServers": {"sx": {"type": "sse", "url": "http://localhost:3100/mcp", "headers": {"A": "${NOPE}"}}}}"#,
    )
    .unwrap();
    let paths = RuntimePaths::resolve(home.path(), &|_| None);
    let myvar = |name: &str| (name == "MYVAR").then(|| "zzz".to_string());
    let servers = read_claude_servers(&paths, Some(project.path()), &myvar).unwrap();
    let keys: Vec<(&str, Option<&str>)> = servers
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.credential_key.as_ref().map(|k| k.as_str()),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            ("fx", Some("fx|528e1818a7ba21cf")),
            ("hx", Some("hx|f6b2f35d58f6f2e6")),
            ("notion", Some(NOTION)),
            ("sx", None),
        ]
    );
    assert_eq!(servers[0].scope, ServerScope::User);
    assert_eq!(servers[2].scope, ServerScope::Project("/work/p".into()));
    assert_eq!(
        servers[3].scope,
        ServerScope::McpJson(project.path().join(".mcp.json"))
    );
    assert_eq!(servers[3].unresolved, vec!["NOPE".to_string()]);
    assert_eq!(servers[3].kind, "sse");
    // The configured header values stay unexpanded in the struct.
    assert_eq!(servers[1].headers["X-Env"], "${MYVAR}");

    // Codex: same function, type http and no headers: equal to Claude's for a header-less server.
    let codex = parse_codex_config(
        "mcp_oauth_credentials_store = \"file\"\n\
         [mcp_servers.fx]\nurl = \"http://localhost:3100/mcp\"\n\
         [mcp_servers.hx]\nurl = \"http://localhost:3100/mcp\"\nhttp_headers = { X-Api-Key = \"abc\" }\n\
         [mcp_servers.local]\ncommand = \"npx\"\n",
        Path::new("config.toml"),
    )
    .unwrap();
    assert_eq!(codex.servers.len(), 2);
    assert_eq!(codex.servers[0].credential_key, servers[0].credential_key);
    assert_eq!(
        codex.servers[1].credential_key.as_ref().unwrap().as_str(),
        "hx|528e1818a7ba21cf",
        "Codex ignores headers in its key"
    );
}

#[test]
fn bad_config_files_are_named_errors() {
    let home = tempfile::tempdir().unwrap();
    let paths = RuntimePaths::resolve(home.path(), &|_| None);
    assert!(read_claude_servers(&paths, None, &|_| None)
        .unwrap()
        .is_empty());
    fs::write(&paths.claude_json, "{\"mcpServers\": [").unwrap();
    let err = read_claude_servers(&paths, None, &|_| None).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Malformed { path, .. } if path == &paths.claude_json),
        "{err}"
    );
    assert!(err.to_string().contains("not valid JSON"), "{err}");
    fs::write(&paths.claude_json, r#"{"mcpServers": []}"#).unwrap();
    let err = read_claude_servers(&paths, None, &|_| None).unwrap_err();
    assert!(
        err.to_string()
            .contains("mcpServers: expected an object, found an array"),
        "{err}"
    );

    let err = parse_codex_config(
        "mcp_oauth_credentials_store = \"vault\"",
        Path::new("/c/config.toml"),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/c/config.toml: mcp_oauth_credentials_store"),
        "{err}"
    );
    let err = parse_codex_config("[mcp_servers.x\nurl=1", Path::new("/c/config.toml")).unwrap_err();
    assert!(err.to_string().contains("not valid TOML"), "{err}");
}

#[test]
fn catalog_matching_is_by_url_forgiving_one_trailing_slash() {
    let catalog = patchbay_catalog::parse(
        r#"{"mcpServers": {
            "notion": {"type": "streamable-http", "url": "https://mcp.notion.com/v1/mcp"},
            "linear": {"type": "sse", "url": "https://mcp.linear.app/sse/"}}}"#,
        Path::new("mcp.json"),
    )
    .unwrap();
    let entries: Vec<_> = catalog
        .iter()
        .filter_map(|i| match i {
            patchbay_catalog::CatalogItem::Server(s) => Some(s),
            _ => None,
        })
        .collect();
    let home = tempfile::tempdir().unwrap();
    fs::write(
        home.path().join(".claude.json"),
        r#"{"mcpServers": {
            "my-notion": {"type": "http", "url": " https://mcp.notion.com/v1/mcp/"},
            "lin": {"type": "sse", "url": "https://mcp.linear.app/sse"},
            "other": {"type": "http", "url": "https://example.com/mcp"}}}"#,
    )
    .unwrap();
    let paths = RuntimePaths::resolve(home.path(), &|_| None);
    let servers = read_claude_servers(&paths, None, &|_| None).unwrap();
    let bridges = match_catalog(&servers, entries.iter().copied());
    let pairs: Vec<(&str, &str)> = bridges
        .iter()
        .map(|b| (b.runtime_server.name.as_str(), b.catalog_name.as_str()))
        .collect();
    assert_eq!(pairs, vec![("my-notion", "notion"), ("lin", "linear")]);
    // The key stays the runtime's own: its name and its URL exactly as configured.
    let key = bridges[0].runtime_server.credential_key.as_ref().unwrap();
    assert_eq!(
        key,
        &patchbay_catalog::credential_key(
            "my-notion",
            "http",
            " https://mcp.notion.com/v1/mcp/",
            &IndexMap::new()
        )
    );
}

#[test]
fn round_trip_preserves_everything_else() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".credentials.json");
    fs::write(
        &path,
        serde_json::to_vec(&json!({
            "claudeAiOauth": {"accessToken": "user-at", "refreshToken": "user-rt", "expiresAt": 1, "scopes": ["user:inference"]},
            "mcpOAuth": {
                NOTION: {"serverName": "notion", "accessToken": "old", "expiresAt": 1,
                         "redirectUri": "http://localhost:3118/callback",
                         "discoveryState": {"authorizationServerUrl": "https://auth.example.com/"},
                         "futureField": [1, 2]},
                "fx|528e1818a7ba21cf": {"serverName": "fx", "accessToken": "theirs"}
            },
            "mcpOAuthClientConfig": {"x": 1},
            "somethingNew": true
        }))
        .unwrap(),
    )
    .unwrap();
    let store = ClaudeFileStore::at(&path);
    let expires = now() + Duration::hours(1);
    let outcome = store
        .write(&cred(NOTION, "new-at", Some(expires)), now())
        .unwrap();
    assert_eq!(outcome, WriteOutcome::Written);

    let file = read(&path);
    assert_eq!(
        file["claudeAiOauth"],
        json!({"accessToken": "user-at", "refreshToken": "user-rt", "expiresAt": 1, "scopes": ["user:inference"]})
    );
    assert_eq!(file["mcpOAuthClientConfig"], json!({"x": 1}));
    assert_eq!(file["somethingNew"], json!(true));
    assert_eq!(
        file["mcpOAuth"]["fx|528e1818a7ba21cf"]["accessToken"],
        "theirs"
    );
    let entry = &file["mcpOAuth"][NOTION];
    assert_eq!(entry["serverName"], "notion");
    assert_eq!(entry["serverUrl"], "https://mcp.notion.com/v1/mcp");
    assert_eq!(entry["accessToken"], "new-at");
    assert_eq!(entry["refreshToken"], "new-at-refresh");
    assert_eq!(
        entry["expiresAt"],
        json!(expires.timestamp_millis()),
        "epoch milliseconds"
    );
    assert_eq!(entry["scope"], "read write");
    assert_eq!(entry["clientId"], "client-1");
    assert_eq!(entry["issuer"], "https://auth.example.com/");
    assert!(entry.get("clientSecret").is_none());
    assert_eq!(entry["redirectUri"], "http://localhost:3118/callback");
    assert_eq!(
        entry["discoveryState"]["authorizationServerUrl"],
        "https://auth.example.com/"
    );
    assert_eq!(entry["futureField"], json!([1, 2]));
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);

    let back = store.read(&CredentialKey(NOTION.into())).unwrap().unwrap();
    assert_eq!(back.access_token.expose(), "new-at");
    assert_eq!(back.expires_at, Some(expires));
    assert_eq!(back.issuer.as_deref(), Some("https://auth.example.com/"));
    assert_eq!(store.read_all().unwrap().len(), 2);

    assert!(store.remove(&CredentialKey(NOTION.into())).unwrap());
    assert!(!store.remove(&CredentialKey(NOTION.into())).unwrap());
    let file = read(&path);
    assert!(file["mcpOAuth"].get(NOTION).is_none());
    assert_eq!(file["claudeAiOauth"]["accessToken"], "user-at");
    assert_eq!(file["somethingNew"], json!(true));
    // No temp files left behind, and no lock file: it goes with the lock.
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec![".credentials.json"]);
}

#[test]
fn missing_file_is_created_with_just_mcp_oauth() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/.credentials.json");
    let store = ClaudeFileStore::at(&path);
    assert!(store.read_all().unwrap().is_empty());
    assert!(!store.remove(&CredentialKey(NOTION.into())).unwrap());
    assert!(!path.exists(), "remove never creates the file");
    store.write(&cred(NOTION, "a", None), now()).unwrap();
    let file = read(&path);
    assert_eq!(
        file.as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["mcpOAuth"]
    );
    assert!(file["mcpOAuth"][NOTION].get("expiresAt").is_none());
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn a_fresher_entry_is_kept_and_a_stale_one_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".credentials.json");
    let store = ClaudeFileStore::at(&path);
    let later = now() + Duration::hours(2);
    store
        .write(&cred(NOTION, "runtime-rotated", Some(later)), now())
        .unwrap();

    // Ours expires earlier than a still-valid stored token: kept.
    let ours = cred(NOTION, "ours", Some(now() + Duration::hours(1)));
    assert_eq!(
        store.write(&ours, now()).unwrap(),
        WriteOutcome::KeptFresher
    );
    assert_eq!(
        read(&path)["mcpOAuth"][NOTION]["accessToken"],
        "runtime-rotated"
    );

    // Ours expires later: written.
    let newer = cred(NOTION, "newer", Some(now() + Duration::hours(3)));
    assert_eq!(store.write(&newer, now()).unwrap(), WriteOutcome::Written);
    assert_eq!(read(&path)["mcpOAuth"][NOTION]["accessToken"], "newer");

    // A stored token already expired at `now` never wins, even expiring later than ours.
    let at = now() + Duration::hours(4);
    assert_eq!(
        store
            .write(
                &cred(NOTION, "older-but-valid", Some(at - Duration::hours(3))),
                at
            )
            .unwrap(),
        WriteOutcome::Written
    );
    assert_eq!(
        read(&path)["mcpOAuth"][NOTION]["accessToken"],
        "older-but-valid"
    );
}

#[test]
fn writing_clears_the_needs_auth_member() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".credentials.json");
    let cache = dir.path().join("mcp-needs-auth-cache.json");
    let store = ClaudeFileStore::at(&path);
    assert_eq!(store.needs_auth_path(), cache);
    // Absent cache: nothing to do, nothing created.
    store.clear_needs_auth("notion").unwrap();
    assert!(!cache.exists());

    fs::write(
        &cache,
        r#"{"notion": {"timestamp": 1764000000000}, "linear": {"timestamp": 1764000000001}}"#,
    )
    .unwrap();
    store
        .write(&cred(NOTION, "a", Some(now() + Duration::hours(1))), now())
        .unwrap();
    assert_eq!(
        read(&cache),
        json!({"linear": {"timestamp": 1764000000001u64}})
    );
    #[cfg(unix)]
    assert_eq!(mode(&cache), 0o600);

    // KeptFresher does not touch the cache.
    fs::write(&cache, r#"{"notion": {"timestamp": 1}}"#).unwrap();
    let stale = cred(NOTION, "b", Some(now() + Duration::minutes(1)));
    assert_eq!(
        store.write(&stale, now()).unwrap(),
        WriteOutcome::KeptFresher
    );
    assert_eq!(read(&cache), json!({"notion": {"timestamp": 1}}));
    store.clear_needs_auth("notion").unwrap();
    assert_eq!(read(&cache), json!({}));
}

#[test]
fn malformed_files_are_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".credentials.json");
    let store = ClaudeFileStore::at(&path);
    for text in [
        "{\"mcpOAuth\": {",
        "[1, 2]",
        "{\"mcpOAuth\": 3}",
        "",
        "{\"mcpOAuth\": {\"notion|3fad03f7abd02b9c\": \"x\"}}",
    ] {
        fs::write(&path, text).unwrap();
        let err = store
            .write(&cred(NOTION, "a", None), now())
            .expect_err(text);
        assert!(
            matches!(&err, RuntimeError::Malformed { path: p, .. } if p == &path),
            "{err}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), text, "nothing written");
    }
    fs::write(&path, "[1, 2]").unwrap();
    assert!(matches!(
        store.remove(&CredentialKey(NOTION.into())),
        Err(RuntimeError::Malformed { .. })
    ));
    assert!(matches!(
        store.read_all(),
        Err(RuntimeError::Malformed { .. })
    ));
    assert_eq!(fs::read_to_string(&path).unwrap(), "[1, 2]");

    fs::write(store.needs_auth_path(), "nope").unwrap();
    assert!(matches!(
        store.clear_needs_auth("notion"),
        Err(RuntimeError::Malformed { .. })
    ));
    assert_eq!(fs::read_to_string(store.needs_auth_path()).unwrap(), "nope");
}

#[test]
fn the_lock_times_out_as_busy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".credentials.json");
    let store = ClaudeFileStore::at(&path).with_lock_timeout(std::time::Duration::from_millis(200));
    let held = FileLock::acquire(&store.lock_path(), std::time::Duration::from_secs(1)).unwrap();
    let started = std::time::Instant::now();
    let err = store.write(&cred(NOTION, "a", None), now()).unwrap_err();
    assert!(matches!(err, RuntimeError::Busy { .. }), "{err}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    assert!(!path.exists());
    drop(held);
    assert_eq!(
        store.write(&cred(NOTION, "a", None), now()).unwrap(),
        WriteOutcome::Written
    );
}

#[test]
fn add_to_claude_code_writes_user_scope_like_mcp_add() {
    let home = tempfile::tempdir().unwrap();
    let paths = RuntimePaths::resolve(home.path(), &|_| None);
    fs::write(
        &paths.claude_json,
        r#"{"numStartups": 7, "projects": {"/p": {"allowedTools": []}}, "mcpServers": {"fx": {"type": "http", "url": "http://localhost:3100/mcp"}}}"#,
    )
    .unwrap();
    let spec = |name: &str, url: &str| ClaudeServerSpec {
        name: name.into(),
        kind: "http".into(),
        url: url.into(),
        headers: IndexMap::new(),
    };
    assert_eq!(
        add_server(&paths, &spec("notion", "https://mcp.notion.com/v1/mcp")).unwrap(),
        AddServerOutcome::Added
    );
    let file = read(&paths.claude_json);
    assert_eq!(
        file["mcpServers"]["notion"],
        json!({"type": "http", "url": "https://mcp.notion.com/v1/mcp"})
    );
    assert_eq!(file["numStartups"], 7);
    assert_eq!(file["projects"], json!({"/p": {"allowedTools": []}}));
    assert_eq!(
        add_server(&paths, &spec("fx", "http://localhost:3100/mcp")).unwrap(),
        AddServerOutcome::AlreadyPresent
    );
    let before = fs::read(&paths.claude_json).unwrap();
    assert!(matches!(
        add_server(&paths, &spec("fx", "http://elsewhere/mcp")).unwrap(),
        AddServerOutcome::Conflict { .. }
    ));
    assert_eq!(fs::read(&paths.claude_json).unwrap(), before);
    // And the key of what we added is the canary's.
    let servers = read_claude_servers(&paths, None, &|_| None).unwrap();
    assert_eq!(servers[1].credential_key.as_ref().unwrap().as_str(), NOTION);
}

#[test]
fn two_catalog_entries_on_one_url_never_get_each_others_bridge() {
    // Two accounts of one service: the runtime's own server name decides which is bridged, and
    // a runtime name that matches neither bridges none (rather than the first in catalog order).
    let catalog = patchbay_catalog::parse(
        r#"{"mcpServers": {
            "notion": {"type": "streamable-http", "url": "https://mcp.notion.com/mcp"},
            "notion-work": {"type": "streamable-http", "url": "https://mcp.notion.com/mcp"},
            "linear": {"type": "sse", "url": "https://mcp.linear.app/sse"}}}"#,
        Path::new("mcp.json"),
    )
    .unwrap();
    let entries: Vec<_> = catalog
        .iter()
        .filter_map(|i| match i {
            patchbay_catalog::CatalogItem::Server(s) => Some(s),
            _ => None,
        })
        .collect();
    let home = tempfile::tempdir().unwrap();
    fs::write(
        home.path().join(".claude.json"),
        r#"{"mcpServers": {
            "notion-work": {"type": "http", "url": "https://mcp.notion.com/mcp"},
            "my-notion": {"type": "http", "url": "https://mcp.notion.com/mcp"},
            "lin": {"type": "sse", "url": "https://mcp.linear.app/sse"}}}"#,
    )
    .unwrap();
    let paths = RuntimePaths::resolve(home.path(), &|_| None);
    let servers = read_claude_servers(&paths, None, &|_| None).unwrap();
    let bridges = match_catalog(&servers, entries.iter().copied());
    let pairs: Vec<(&str, &str)> = bridges
        .iter()
        .map(|b| (b.runtime_server.name.as_str(), b.catalog_name.as_str()))
        .collect();
    assert_eq!(
        pairs,
        vec![("notion-work", "notion-work"), ("lin", "linear")]
    );
}
