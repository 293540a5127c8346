//! The runtimes' credential stores as Patchbay reads and merges them: Claude Code's
//! `.credentials.json`, Codex's file and keyring item, and mcp-remote's token and client files.
//! The first byte picks the store; each is read, then written over (the merge that keeps every
//! member it does not own).
#![no_main]

use chrono::{TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use patchbay_catalog::CredentialKey;
use patchbay_runtimes::claude::ClaudeFileStore;
use patchbay_runtimes::codex::{CodexFileStore, CodexKeyringStore, KeyringBackend};
use patchbay_runtimes::mcp_remote::{read_mcp_remote, McpRemoteOptions};
use patchbay_runtimes::{RuntimeCredential, RuntimeError, RuntimeStore};
use patchbay_vault::Secret;
use std::sync::Mutex;
use std::time::Duration;

const KEY: &str = "notion|3fad03f7abd02b9c";

/// A keyring holding one item: the fuzz input (the OS keyring is what the real one talks to;
/// here the item's text is what is under test).
struct OneItem(Mutex<Option<String>>);

impl KeyringBackend for OneItem {
    fn get(&self, _account: &str) -> Result<Option<String>, RuntimeError> {
        Ok(self.0.lock().unwrap().clone())
    }
    fn set(&self, _account: &str, value: &str) -> Result<(), RuntimeError> {
        *self.0.lock().unwrap() = Some(value.to_string());
        Ok(())
    }
    fn delete(&self, _account: &str) -> Result<bool, RuntimeError> {
        Ok(self.0.lock().unwrap().take().is_some())
    }
}

fn ours() -> RuntimeCredential {
    RuntimeCredential {
        key: CredentialKey(KEY.into()),
        server_name: "notion".into(),
        server_url: "https://mcp.notion.com/mcp".into(),
        access_token: Secret::new("at-fuzz".to_string()),
        refresh_token: Some(Secret::new("rt-fuzz".to_string())),
        expires_at: Utc.timestamp_opt(1_800_000_000, 0).single(),
        scope: Some("read write".into()),
        client_id: Some("client".into()),
        client_secret: None,
        issuer: Some("https://auth.example".into()),
    }
}

fn exercise(store: &dyn RuntimeStore) {
    if let Ok(all) = store.read_all() {
        for c in &all {
            let _ = c.key.server_name();
        }
    }
    let _ = store.read(&CredentialKey(KEY.into()));
    let now = Utc.timestamp_opt(1_700_000_000, 0).single().unwrap();
    if store.write(&ours(), now).is_ok() {
        // What we wrote (or the fresher entry we kept) reads back.
        let back = store.read(&CredentialKey(KEY.into()));
        assert!(matches!(back, Ok(Some(_))), "{back:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((selector, rest)) = patchbay_fuzz::split_selector(data) else {
        return;
    };
    let timeout = Duration::from_millis(200);
    match selector % 4 {
        0 => {
            let path = patchbay_fuzz::scratch_file("claude/.credentials.json", rest);
            let _ = std::fs::remove_file(path.with_file_name("mcp-needs-auth-cache.json"));
            exercise(&ClaudeFileStore::at(path).with_lock_timeout(timeout));
        }
        1 => {
            let path = patchbay_fuzz::scratch_file("codex/.credentials.json", rest);
            exercise(&CodexFileStore::at(path).with_lock_timeout(timeout));
        }
        2 => {
            let item = OneItem(Mutex::new(Some(patchbay_fuzz::text(rest))));
            exercise(&CodexKeyringStore::new(
                Box::new(item),
                vec![CredentialKey(KEY.into())],
            ));
        }
        _ => {
            let parts: Vec<&[u8]> = rest.splitn(2, |b| *b == 0).collect();
            let hash = McpRemoteOptions::new("https://mcp.example/sse").hash();
            let dir = patchbay_fuzz::scratch_dir().join("mcp-remote");
            let _ = std::fs::remove_dir_all(&dir);
            patchbay_fuzz::scratch_file(&format!("mcp-remote/{hash}_tokens.json"), parts[0]);
            if let Some(client) = parts.get(1) {
                patchbay_fuzz::scratch_file(&format!("mcp-remote/{hash}_client_info.json"), client);
            }
            let candidates = [McpRemoteOptions::new("https://mcp.example/sse")];
            if let Ok(scan) = read_mcp_remote(&dir, &candidates) {
                for c in &scan.credentials {
                    let _ = c.server_url();
                }
            }
        }
    }
});
