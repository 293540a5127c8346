//! The real Codex CLI (npm `@openai/codex` 0.171.0, installed in tests/node by scripts/setup.sh)
//! reads the store `patchbay bridge sync` writes. `codex mcp list --json` reads Codex's credential
//! store and prints an `auth_status` per server without contacting a server that has a credential
//! (for one without, it probes the configured URL, here on 127.0.0.1 only): `o_auth` once the
//! entry Patchbay wrote is found and its access token is unexpired. It cannot tell a good token
//! from a bad one (the reference: it never contacts the server), so this pins the store's place,
//! shape and units, not the token.
//!
//! Measured with 0.171.0, offline (`unshare -n`): an entry is found by its `server_name` and
//! `server_url` members (a wrong map key still reads `o_auth`; a wrong `server_url` does not);
//! an expired entry without a refresh token reads `not_logged_in`, so a credential without a
//! refresh token pins `expires_at` as epoch milliseconds.

use chrono::{Duration, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_e2e::{json, require_keychain, wait_within, Sandbox};
use patchbay_vault::{CredentialRow, Secret, TokenSet};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `fx`, `http://localhost:3100/mcp`: the reference's worked example (Codex's key equals Claude's).
const KEY: &str = "fx|528e1818a7ba21cf";

/// How long one `codex mcp list` may take (it answers in well under a second).
const CODEX_MCP_LIST: std::time::Duration = std::time::Duration::from_secs(60);

/// The Codex CLI's launcher: it runs the platform package's native binary.
fn codex_js() -> PathBuf {
    let js =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("node/node_modules/@openai/codex/bin/codex.js");
    assert!(
        js.is_file(),
        "{} is missing: run scripts/setup.sh (it runs `npm ci` in tests/node)",
        js.display()
    );
    js
}

/// `codex mcp list --json` on the sandbox's Codex home with `home` as HOME: server name →
/// `auth_status`.
fn codex_auth_status(sandbox: &Sandbox, home: &Path) -> Vec<(String, String)> {
    let logs = tempfile::tempdir().expect("tempdir");
    let file = |name: &str| std::fs::File::create(logs.path().join(name)).expect("log file");
    let read = |name: &str| std::fs::read_to_string(logs.path().join(name)).unwrap_or_default();
    let mut child = Command::new("node")
        .arg(codex_js())
        .args(["mcp", "list", "--json"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CODEX_HOME", sandbox.path().join("codex"))
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("start codex");
    let status = wait_within(&mut child, CODEX_MCP_LIST, "codex mcp list", || {
        format!("stderr:\n{}", read("stderr"))
    });
    let stdout = read("stdout");
    assert!(
        status.success(),
        "`codex mcp list` failed ({status}); stdout:\n{stdout}\nstderr:\n{}",
        read("stderr")
    );
    let list: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("`codex mcp list --json` printed no JSON ({e}):\n{stdout}"));
    list.as_array()
        .expect("a list")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_string(),
                s["auth_status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn status_of<'a>(list: &'a [(String, String)], name: &str) -> &'a str {
    list.iter()
        .find(|(n, _)| n == name)
        .map(|(_, s)| s.as_str())
        .unwrap_or_else(|| panic!("no {name} in `codex mcp list`: {list:?}"))
}

#[test]
fn codex_sees_the_credential_bridge_sync_writes() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.fixture("bridge.json");
    let catalog_arg = catalog.to_str().unwrap();
    let codex = sandbox.path().join("codex");
    std::fs::create_dir_all(&codex).unwrap();
    // The file store, as Codex's "auto" picks when no keyring answers (the keyring variant is not
    // pinned here).
    std::fs::write(
        codex.join("config.toml"),
        "mcp_oauth_credentials_store = \"file\"\n\
         [mcp_servers.fx]\nurl = \"http://localhost:3100/mcp\"\n",
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();

    let before = codex_auth_status(&sandbox, home.path());
    assert_ne!(status_of(&before, "fx"), "o_auth", "{before:?}");

    // A credential without a refresh token, valid for an hour: Codex reads it as logged in only
    // when `expires_at` is in milliseconds.
    let expires = Utc::now() + Duration::hours(1);
    {
        let core = sandbox.core(Some(catalog.clone()));
        core.vault()
            .put_credential(
                &CredentialRow {
                    credential_key: CredentialKey(KEY.into()),
                    server_name: "fx".into(),
                    server_url: Some("http://localhost:3100/mcp".into()),
                    expires_at: Some(expires),
                    has_refresh_token: false,
                    one_shot: false,
                    issuer: Some("http://localhost:3100/".into()),
                    client_id: Some("client-1".into()),
                    scope: Some("mcp".into()),
                    updated_at: Utc::now(),
                    rotated_by: None,
                    rotated_at: None,
                },
                &TokenSet {
                    access_token: Secret::new("at-1"),
                    refresh_token: None,
                },
            )
            .unwrap();
    }
    let out = sandbox.run(&["bridge", "sync", "--json", "--catalog", catalog_arg]);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json(&out);
    let codex_line = lines
        .as_array()
        .and_then(|l| l.iter().find(|l| l["runtime"] == "codex"))
        .unwrap_or_else(|| panic!("no codex line in {lines:#}"));
    assert_eq!(codex_line["outcome"], "written", "{lines:#}");
    assert!(codex.join(".credentials.json").is_file());

    let after = codex_auth_status(&sandbox, home.path());
    assert_eq!(status_of(&after, "fx"), "o_auth", "{after:?}");

    // The same entry expired: Codex says so (the units are right both ways).
    let path = codex.join(".credentials.json");
    let mut store: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    store[KEY]["expires_at"] =
        serde_json::json!((Utc::now() - Duration::hours(1)).timestamp_millis());
    std::fs::write(&path, serde_json::to_vec(&store).unwrap()).unwrap();
    let expired = codex_auth_status(&sandbox, home.path());
    assert_eq!(status_of(&expired, "fx"), "not_logged_in", "{expired:?}");
}
