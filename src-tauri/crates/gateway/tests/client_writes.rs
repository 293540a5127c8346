//! The window's confirmation and Undo around "Switch CLIENT to Patchbay": the preview shows the
//! entry before and after and writes, manages and mints nothing; the switch's Undo puts the
//! client's file back byte for byte and revokes the gateway client the switch minted.

use patchbay_core::client_config::Client;
use patchbay_core::setup::ClientSetup;
use patchbay_core::{Patchbay, Paths};
use patchbay_gateway::client_entries::{self, EntryError, UndoLog, Via};
use patchbay_gateway::Clients;
use patchbay_runtimes::clients::{ClientPaths, Os};
use patchbay_vault::MemoryStore;
use std::path::Path;
use std::sync::Arc;

const CURSOR: &str = r#"{
  "mcpServers": {
    "team-docs": {
      "command": "npx",
      "args": ["-y", "mcp-remote", "https://docs.example.com/mcp", "--header", "Authorization: Bearer tok_literal_123"]
    }
  }
}
"#;

fn open(dir: &Path, home: &Path) -> Patchbay {
    Patchbay::with_store(Paths::under(dir), Arc::new(MemoryStore::new()))
        .unwrap()
        .with_clients(ClientSetup {
            paths: ClientPaths::resolve(home, Os::Linux, &|_| None),
            projects: Vec::new(),
        })
}

/// A temp home whose Cursor config holds [`CURSOR`], and Patchbay on a data dir beside it.
fn cursor_home() -> (tempfile::TempDir, std::path::PathBuf, Patchbay) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let file = home.join(".cursor/mcp.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, CURSOR).unwrap();
    let patchbay = open(&dir.path().join("data"), &home);
    (dir, file, patchbay)
}

#[test]
fn a_switch_is_previewed_then_undone_byte_for_byte() {
    let (_dir, file, patchbay) = cursor_home();
    let clients = Clients::new(&patchbay.paths.data_dir);

    let preview = client_entries::preview_switch_client_entry(
        &patchbay,
        Client::Cursor,
        "team-docs",
        Via::Gateway,
        3119,
    )
    .unwrap();
    assert_eq!(
        (preview.client, preview.change, preview.connector.as_str()),
        ("cursor", "replaced", "team-docs")
    );
    let before = preview.before.as_deref().unwrap();
    assert!(before.contains("https://docs.example.com/mcp"), "{before}");
    assert!(!before.contains("tok_literal_123"), "{before}");
    assert!(
        preview
            .after
            .contains("http://127.0.0.1:3119/mcp/team-docs"),
        "{}",
        preview.after
    );
    assert!(!serde_json::to_string(&preview)
        .unwrap()
        .contains("its own secret"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), CURSOR);
    assert!(
        clients.list().unwrap().is_empty(),
        "a preview mints nothing"
    );

    let log = UndoLog::default();
    let written = log.keep(
        client_entries::switch_client_entry(
            &patchbay,
            Client::Cursor,
            "team-docs",
            Via::Gateway,
            3119,
        )
        .unwrap(),
    );
    let id = written.undo_id.expect("the switch can be undone");
    assert!(written.undo.is_none(), "the texts stay in the log");
    assert!(!serde_json::to_string(&written)
        .unwrap()
        .contains("tok_literal"));
    assert_eq!(written.gateway_client.as_deref(), Some("cursor"));
    assert_ne!(std::fs::read_to_string(&file).unwrap(), CURSOR);

    let undone = log.undo(&patchbay, id).unwrap();
    assert_eq!(undone.revoked.as_deref(), Some("cursor"));
    assert_eq!(std::fs::read(&file).unwrap(), CURSOR.as_bytes());
    assert!(
        clients.list().unwrap().is_empty(),
        "the minted client is revoked"
    );
    let again = log.undo(&patchbay, id).unwrap_err();
    assert!(matches!(again, EntryError::NoUndo(_)), "{again}");
}

#[test]
fn an_undo_after_the_client_rewrote_its_file_is_refused_and_keeps_the_file() {
    let (_dir, file, patchbay) = cursor_home();
    let log = UndoLog::default();
    let written = log.keep(
        client_entries::switch_client_entry(
            &patchbay,
            Client::Cursor,
            "team-docs",
            Via::Stdio,
            3119,
        )
        .unwrap(),
    );
    let rewritten = std::fs::read_to_string(&file)
        .unwrap()
        .replace("  ", "    ");
    std::fs::write(&file, &rewritten).unwrap();
    let error = log.undo(&patchbay, written.undo_id.unwrap()).unwrap_err();
    assert!(error.to_string().contains("has changed since"), "{error}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), rewritten);
}

#[test]
fn the_preview_says_when_the_connector_is_not_ready_in_patchbay() {
    let (_dir, file, patchbay) = cursor_home();
    // A second mcp-remote entry, holding no credential of its own.
    let text = CURSOR.replace(
        "    \"team-docs\": {",
        "    \"wiki\": { \"command\": \"npx\", \"args\": [\"-y\", \"mcp-remote\", \"https://wiki.example.com/mcp\"] },\n    \"team-docs\": {",
    );
    std::fs::write(&file, text).unwrap();
    let report = patchbay.status();
    let warning = |entry: &str| {
        client_entries::preview_switch_client_entry(
            &patchbay,
            Client::Cursor,
            entry,
            Via::Gateway,
            3119,
        )
        .unwrap()
        .warning
    };
    let wiki = report.connector("wiki").unwrap();
    assert!(wiki.blocks_start, "{wiki:?}");
    assert_eq!(
        warning("wiki").as_deref(),
        Some(format!(
            "{} is not ready in Patchbay yet ({}): Cursor will see it fail until it is.",
            wiki.title,
            wiki.label.to_lowercase()
        ))
        .as_deref()
    );
    let docs = report.connector("team-docs").unwrap();
    assert_eq!(
        warning("team-docs").is_some(),
        docs.blocks_start,
        "{docs:?}"
    );
}
