//! Runtime bridges end to end: the `patchbay` CLI writes a stored credential into Claude Code's
//! own credential file (under the key Claude Code computes, the user's `claudeAiOauth` block
//! untouched), and adopts the pair Claude Code rotated when another process renames a newer
//! file into place. Uses the real OS keychain (the CLI's vault key lives there).

use chrono::{Duration, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_e2e::secret_scan::SecretScan;
use patchbay_e2e::{json, require_keychain, Sandbox};
use serde_json::{json, Value};
use std::path::Path;

/// The reference's worked example: `fx`, `{"type":"http","url":"http://localhost:3100/mcp"}`.
const KEY: &str = "fx|528e1818a7ba21cf";

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Rewrite the credential file the way Claude Code does: a temp file beside it, then a rename.
fn claude_rewrites(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut root = read_json(path);
    edit(&mut root);
    let tmp = path.with_file_name(".credentials.json.tmp.deadbeef");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&root).unwrap()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn sync_writes_claude_codes_entry_and_status_adopts_its_rotation() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.fixture("bridge.json");
    let catalog_arg = catalog.to_str().unwrap();
    let claude = sandbox.path().join("claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join(".claude.json"),
        serde_json::to_vec_pretty(&json!({
            "numStartups": 3,
            "mcpServers": { "fx": { "type": "http", "url": "http://localhost:3100/mcp" } }
        }))
        .unwrap(),
    )
    .unwrap();
    let account = json!({ "accessToken": "sk-ant-user", "refreshToken": "user-refresh",
                          "expiresAt": 1_900_000_000_000_i64, "scopes": ["user:inference"] });
    let credentials = claude.join(".credentials.json");
    std::fs::write(
        &credentials,
        serde_json::to_vec_pretty(&json!({ "claudeAiOauth": account })).unwrap(),
    )
    .unwrap();

    // What `runtimes` sees.
    let out = sandbox.run(&["runtimes", "--json", "--catalog", catalog_arg]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let runtimes = json(&out);
    let cc = &runtimes[0];
    assert_eq!(cc["runtime"], "claude_code");
    assert_eq!(cc["found"], true);
    assert_eq!(cc["bridges"][0]["connector"], "fx");
    assert_eq!(cc["bridges"][0]["credential_key"], KEY);

    // A credential in the vault, as an authorization stores it.
    let expires = Utc::now() + Duration::hours(1);
    sandbox.store_fx_credential(
        &catalog,
        KEY,
        "at-1-patchbay",
        Some("rt-1-patchbay"),
        expires,
    );

    let out = sandbox.run(&["bridge", "sync", "--json", "--catalog", catalog_arg]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let lines = json(&out);
    assert_eq!(lines[0]["outcome"], "written", "{lines:#}");
    let written = read_json(&credentials);
    assert_eq!(
        written["claudeAiOauth"], account,
        "the user's block is untouched"
    );
    let entry = &written["mcpOAuth"][KEY];
    assert_eq!(entry["serverName"], "fx");
    assert_eq!(entry["serverUrl"], "http://localhost:3100/mcp");
    assert_eq!(entry["accessToken"], "at-1-patchbay");
    assert_eq!(entry["refreshToken"], "rt-1-patchbay");
    assert_eq!(entry["clientId"], "client-1");
    assert_eq!(
        entry["expiresAt"].as_i64(),
        Some(expires.timestamp_millis()),
        "expiresAt is epoch milliseconds"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&credentials)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // Claude Code refreshes by itself in another process (a thread here, no lock) and the
    // server rotates the refresh token.
    let rotated_expiry = expires + Duration::minutes(30);
    let path = credentials.clone();
    std::thread::spawn(move || {
        claude_rewrites(&path, |root| {
            let entry = &mut root["mcpOAuth"][KEY];
            entry["accessToken"] = json!("at-2-claude-code");
            entry["refreshToken"] = json!("rt-2-claude-code");
            entry["expiresAt"] = json!(rotated_expiry.timestamp_millis());
        })
    })
    .join()
    .unwrap();

    let out = sandbox.run(&["status", "--json", "--catalog", catalog_arg]);
    let report = json(&out);
    let fx = report["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "fx")
        .unwrap();
    assert_eq!(fx["state"], "ready", "{fx:#}");
    assert_eq!(fx["credential"]["last_rotated_by"], "claude_code", "{fx:#}");
    assert!(fx["credential"]["last_rotated_at"].is_string(), "{fx:#}");
    assert_eq!(
        fx["credential"]["expires_at"],
        rotated_expiry
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            .as_str()
    );
    assert_eq!(
        fx["bridges"],
        json!([{ "runtime": "claude_code", "server_name": "fx", "credential_key": KEY, "in_store": true }])
    );
    let core = sandbox.core(Some(catalog));
    let tokens = core
        .vault()
        .credential_tokens(&CredentialKey(KEY.into()))
        .unwrap()
        .unwrap();
    assert_eq!(tokens.access_token.expose(), "at-2-claude-code");
    assert_eq!(tokens.refresh_token.unwrap().expose(), "rt-2-claude-code");
    // Claude Code's file keeps its own rotation and the user's block.
    let after = read_json(&credentials);
    assert_eq!(after["mcpOAuth"][KEY]["refreshToken"], "rt-2-claude-code");
    assert_eq!(after["claudeAiOauth"], account);
    // Claude Code's .credentials.json holds them by design; nothing else may.
    SecretScan::new(sandbox.path())
        .secret("the access token Patchbay stored", "at-1-patchbay")
        .secret("the refresh token Patchbay stored", "rt-1-patchbay")
        .secret("Claude Code's rotated access token", "at-2-claude-code")
        .secret("Claude Code's rotated refresh token", "rt-2-claude-code")
        .assert_clean();
}
