//! `Bridges::status()`, the one status every surface shows (the CLI's `status`, the tray, the
//! window): it adopts what a runtime rotated, then annotates the bridges and the runtimes found.
//! A second call must not write the vault again, or the vault watcher that the first adoption
//! wakes would loop.

use chrono::{DateTime, Duration, TimeZone, Utc};
use patchbay_catalog::{CatalogSource, CredentialKey, SourceKind};
use patchbay_core::{Bridges, CoreError, Patchbay, Paths};
use patchbay_runtimes::claude::ClaudeFileStore;
use patchbay_runtimes::config::RuntimePaths;
use patchbay_runtimes::{RuntimeCredential, RuntimeStore};
use patchbay_vault::{CredentialRow, MemoryStore, Secret, TokenSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

const CATALOG: &str = r#"{"mcpServers":{
  "notion": {"title": "Notion", "type": "streamable-http", "url": "https://mcp.notion.com/mcp"},
  "linear": {"title": "Linear", "type": "streamable-http", "url": "https://mcp.linear.app/mcp"}
}}"#;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).unwrap()
}

struct Rig {
    _dir: tempfile::TempDir,
    patchbay: Arc<Patchbay>,
    bridges: Bridges,
    runtime_paths: RuntimePaths,
}

/// A catalog with notion and linear, Claude Code configured with notion only, Codex absent; a
/// clock that moves one second per reading, so that any second write would show in `updated_at`.
fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let default = root.join("default.json");
    std::fs::write(&default, CATALOG).unwrap();
    let paths = Paths {
        config_dir: root.join("config"),
        data_dir: root.join("data"),
        // The user's own catalog: both connectors are in use (the shipped one is a gallery).
        default_catalog: CatalogSource::File {
            path: default,
            kind: SourceKind::User,
            required: true,
        },
        catalog_override: None,
        keychain_account: "test".into(),
    };
    let home = root.join("home");
    let runtime_paths = RuntimePaths::resolve(&home, &|_| None);
    std::fs::create_dir_all(&runtime_paths.claude_config_dir).unwrap();
    std::fs::write(
        &runtime_paths.claude_json,
        r#"{"mcpServers":{"notion":{"type":"http","url":"https://mcp.notion.com/mcp"}}}"#,
    )
    .unwrap();
    let ticks = Arc::new(AtomicI64::new(0));
    let clock = move || t0() + Duration::seconds(ticks.fetch_add(1, Ordering::SeqCst));
    let patchbay = Arc::new(
        Patchbay::with_store(paths, Arc::new(MemoryStore::new()))
            .unwrap()
            .with_clock(Arc::new(clock)),
    );
    let bridges = Bridges::with_paths(patchbay.clone(), Some(runtime_paths.clone()));
    Rig {
        _dir: dir,
        patchbay,
        bridges,
        runtime_paths,
    }
}

fn notion_row(rig: &Rig) -> Option<CredentialRow> {
    let key = rig
        .bridges
        .bridged()
        .into_iter()
        .find(|b| b.connector == "notion")
        .and_then(|b| b.vault_key)
        .unwrap();
    rig.patchbay
        .vault()
        .credential_rows()
        .unwrap()
        .into_iter()
        .find(|r| r.credential_key == key)
}

#[test]
fn status_adopts_a_rotation_once_and_a_second_status_writes_nothing() {
    let rig = rig();
    let bridge = rig
        .bridges
        .bridged()
        .into_iter()
        .find(|b| b.connector == "notion")
        .expect("notion is bridged to Claude Code");
    let vault_key: CredentialKey = bridge.vault_key.clone().unwrap();
    let runtime_key: CredentialKey = bridge.credential_key.clone().unwrap();

    // Ours: expires at 09:10.
    rig.patchbay
        .vault()
        .put_credential(
            &CredentialRow {
                credential_key: vault_key.clone(),
                server_name: "notion".into(),
                server_url: Some("https://mcp.notion.com/mcp".into()),
                expires_at: Some(t0() + Duration::minutes(10)),
                has_refresh_token: true,
                one_shot: false,
                issuer: None,
                client_id: Some("client".into()),
                scope: None,
                updated_at: t0() - Duration::hours(1),
                rotated_by: None,
                rotated_at: None,
            },
            &TokenSet {
                access_token: Secret::new("ours-access"),
                refresh_token: Some(Secret::new("ours-refresh")),
            },
        )
        .unwrap();
    // Claude Code refreshed by itself: a pair expiring at 10:00.
    ClaudeFileStore::new(&rig.runtime_paths)
        .write(
            &RuntimeCredential {
                key: runtime_key,
                server_name: "notion".into(),
                server_url: "https://mcp.notion.com/mcp".into(),
                access_token: Secret::new("rotated-access"),
                refresh_token: Some(Secret::new("rotated-refresh")),
                expires_at: Some(t0() + Duration::hours(1)),
                scope: None,
                client_id: Some("client".into()),
                client_secret: None,
                issuer: None,
            },
            t0(),
        )
        .unwrap();

    let first = rig.bridges.status();
    let notion = first.connector("notion").unwrap();
    let credential = notion.credential.as_ref().unwrap();
    assert_eq!(credential.last_rotated_by.as_deref(), Some("claude_code"));
    assert_eq!(credential.expires_at, Some(t0() + Duration::hours(1)));
    assert_eq!(notion.bridges.len(), 1);
    assert_eq!(notion.bridges[0].runtime, "claude_code");
    assert!(notion.bridges[0].in_store);
    let after_first = notion_row(&rig).unwrap();
    let tokens = rig
        .patchbay
        .vault()
        .credential_tokens(&vault_key)
        .unwrap()
        .unwrap();
    assert_eq!(tokens.access_token.expose(), "rotated-access");

    // The second pass (the vault watcher woken by the first adoption, or the 30 s tick).
    let second = rig.bridges.status();
    let after_second = notion_row(&rig).unwrap();
    assert_eq!(after_second.updated_at, after_first.updated_at);
    assert_eq!(after_second.rotated_at, after_first.rotated_at);
    assert!(rig.bridges.adopt_all().is_empty());
    assert_eq!(notion_row(&rig).unwrap().updated_at, after_first.updated_at);
    assert_eq!(
        second.connector("notion").unwrap().credential,
        first.connector("notion").unwrap().credential
    );
}

#[test]
fn the_report_says_which_runtimes_were_found() {
    let rig = rig();
    let report = rig.bridges.status();
    let ids: Vec<(&str, bool)> = report
        .runtimes
        .iter()
        .map(|r| (r.runtime.as_str(), r.found))
        .collect();
    assert_eq!(ids, vec![("claude_code", true), ("codex", false)]);
    assert!(report.runtimes[0].config_path.ends_with(".claude.json"));
    assert!(report.connector("linear").unwrap().bridges.is_empty());
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["runtimes"][0]["runtime"], "claude_code");
    assert_eq!(json["runtimes"][1]["found"], false);
}

#[test]
fn add_to_runtime_bridges_the_connector_and_answers_the_new_report() {
    let rig = rig();
    let report = rig.bridges.add_to_runtime("linear", "claude_code").unwrap();
    let linear = report.connector("linear").unwrap();
    assert_eq!(linear.bridges.len(), 1);
    assert_eq!(linear.bridges[0].server_name, "linear");
    assert!(!linear.bridges[0].in_store, "nothing stored to write yet");
    let text = std::fs::read_to_string(&rig.runtime_paths.claude_json).unwrap();
    assert!(text.contains("https://mcp.linear.app/mcp"), "{text}");

    let unknown = rig.bridges.add_to_runtime("linear", "cursor").unwrap_err();
    assert!(matches!(unknown, CoreError::InvalidInput(_)), "{unknown}");
    assert_eq!(unknown.kind(), "invalid_input");
    let missing = rig.bridges.add_to_runtime("nope", "codex").unwrap_err();
    assert_eq!(missing.kind(), "unknown_connector");
}

#[test]
fn the_watch_rewrites_an_entry_a_runtime_dropped_under_the_runtimes_own_key() {
    let rig = rig();
    // Claude Code calls the server by its own name: that name decides the key it looks up.
    std::fs::write(
        &rig.runtime_paths.claude_json,
        r#"{"mcpServers":{"my-notion":{"type":"http","url":"https://mcp.notion.com/mcp"}}}"#,
    )
    .unwrap();
    let bridge = rig
        .bridges
        .bridged()
        .into_iter()
        .find(|b| b.connector == "notion")
        .expect("notion is bridged under Claude Code's name");
    let vault_key = bridge.vault_key.clone().unwrap();
    let runtime_key = bridge.credential_key.clone().unwrap();
    assert!(runtime_key.as_str().starts_with("my-notion|"));
    rig.patchbay
        .vault()
        .put_credential(
            &CredentialRow {
                credential_key: vault_key.clone(),
                server_name: "notion".into(),
                server_url: Some("https://mcp.notion.com/mcp".into()),
                expires_at: Some(t0() + Duration::hours(2)),
                has_refresh_token: true,
                one_shot: false,
                issuer: None,
                client_id: Some("client".into()),
                scope: None,
                updated_at: t0(),
                rotated_by: None,
                rotated_at: None,
            },
            &TokenSet {
                access_token: Secret::new("at-ours"),
                refresh_token: Some(Secret::new("rt-ours")),
            },
        )
        .unwrap();

    let bridges = Arc::new(Bridges::with_paths(
        rig.patchbay.clone(),
        Some(rig.runtime_paths.clone()),
    ));
    let _watch = bridges.watch(|_| {}).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));

    // Claude Code rewrites its file (temp + rename) without our entry.
    let file = &rig.runtime_paths.claude_credentials;
    let tmp = file.with_extension("json.tmp.1a2b3c4d");
    std::fs::write(
        &tmp,
        r#"{"claudeAiOauth":{"accessToken":"user"},"mcpOAuth":{}}"#,
    )
    .unwrap();
    std::fs::rename(&tmp, file).unwrap();

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if let Some(entry) = json["mcpOAuth"].get(runtime_key.as_str()) {
            assert_eq!(entry["accessToken"], "at-ours");
            assert_eq!(json["claudeAiOauth"]["accessToken"], "user");
            assert!(
                json["mcpOAuth"].get(vault_key.as_str()).is_none(),
                "written under our name instead of the runtime's"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the dropped entry was not re-written: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn can_add_to_names_the_found_runtimes_a_connector_is_not_bridged_to_yet() {
    let rig = rig();
    let report = rig.bridges.status();
    // Claude Code is found and already has notion; Codex is not found.
    assert!(report.connector("notion").unwrap().can_add_to.is_empty());
    assert_eq!(
        report.connector("linear").unwrap().can_add_to,
        vec!["claude_code".to_owned()]
    );

    // Codex found too: offered for both, since both are header-less streamable HTTP servers.
    std::fs::create_dir_all(&rig.runtime_paths.codex_home).unwrap();
    std::fs::write(rig.runtime_paths.codex_config(), "").unwrap();
    let report = rig.bridges.status();
    assert_eq!(
        report.connector("notion").unwrap().can_add_to,
        vec!["codex".to_owned()]
    );
    assert_eq!(
        report.connector("linear").unwrap().can_add_to,
        vec!["claude_code".to_owned(), "codex".to_owned()]
    );
}
