//! Tokens already on the machine, the real thing: the real `mcp-remote` 0.15.1 (npm, in
//! tests/node, run as `npx mcp-remote URL` runs it) signs in to the MCP SDK's example OAuth server
//! on loopback (tests/node/sdk-oauth-refresh-server.mjs: the example as shipped, its provider
//! taught the rotating refresh grant, which refuses a refresh token presented by any client but
//! the one it was issued to) in a throwaway HOME, so it writes `~/.mcp-auth/mcp-remote-v1/`; the
//! "browser" is tests/support/follow-browser.sh. Then, with a catalog naming that URL:
//! `patchbay import` adopts the token from mcp-remote with mcp-remote's client; `status --json`
//! shows the connector Ready with no authorize; `patchbay check` passes with the adopted token;
//! `patchbay refresh` renews it as mcp-remote's client (the server accepts, and rotates the
//! pair); the plaintext files are offered, kept until asked, then deleted.

use patchbay_e2e::peers::{path_with_support, tests_dir, OAuthServer};
use patchbay_e2e::secret_scan::SecretScan;
use patchbay_e2e::{json, require_keychain, state_of, wait_within, Sandbox};
use patchbay_runtimes::mcp_remote::McpRemoteOptions;
use patchbay_vault::CredentialSource;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long mcp-remote may take from start to its tokens on disk (measured: a few seconds).
const SIGN_IN: Duration = Duration::from_secs(90);

/// The SDK's example OAuth server with the rotating refresh grant.
const REFRESH_SERVER: &str = "sdk-oauth-refresh-server.mjs";

/// `mcp-remote URL` in `home` (as `npx mcp-remote URL` runs it), its stdin held open so the
/// proxy stays up while it signs in; returns once its tokens are on disk, then stops it.
/// Returns how long the sign-in took.
fn mcp_remote_signs_in(home: &Path, server: &OAuthServer, options: &[&str]) -> Duration {
    let bin = tests_dir().join("node/node_modules/.bin/mcp-remote");
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/setup.sh (it runs `npm ci` in tests/node)",
        bin.display()
    );
    let logs = tempfile::tempdir().expect("tempdir");
    let file = |name: &str| std::fs::File::create(logs.path().join(name)).expect("log file");
    let support = tests_dir().join("support");
    let started = Instant::now();
    let mut child = Command::new(&bin)
        .arg(server.mcp_url())
        .args(options)
        // For a `--header 'X-Team: ${TEAM_ID}'`: mcp-remote substitutes it when sending, and
        // hashes the text as given.
        .env("TEAM_ID", "team-7")
        .env("HOME", home)
        .env_remove("MCP_REMOTE_CONFIG_DIR")
        .env("BROWSER", support.join("follow-browser.sh"))
        // Without a display, xdg-open (which mcp-remote's `open` runs) goes to $BROWSER; under
        // a display (CI's Xvfb) it would try a desktop browser and never come back.
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("PATH", path_with_support())
        .stdin(Stdio::piped())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("start mcp-remote");
    let mut args = vec![server.mcp_url()];
    args.extend(options.iter().map(|o| o.to_string()));
    let hash = McpRemoteOptions::from_args(&args).unwrap().hash();
    let tokens = home.join(format!(".mcp-auth/mcp-remote-v1/{hash}_tokens.json"));
    let output = || {
        let read = |name: &str| std::fs::read_to_string(logs.path().join(name)).unwrap_or_default();
        format!(
            "{}{}\n--- server:\n{}",
            read("stderr"),
            read("stdout"),
            server.output()
        )
    };
    let deadline = Instant::now() + SIGN_IN;
    // Written via temp + rename: present means complete.
    while !tokens.is_file() {
        if let Some(status) = child.try_wait().expect("try_wait") {
            panic!(
                "mcp-remote exited ({status}) before saving tokens:\n{}",
                output()
            );
        }
        assert!(
            Instant::now() < deadline,
            "mcp-remote saved no tokens within {SIGN_IN:?}:\n{}",
            output()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = started.elapsed();
    // Close its stdin (it exits on EOF); kill it if it lingers.
    drop(child.stdin.take());
    let _ = child.kill();
    wait_within(&mut child, Duration::from_secs(20), "mcp-remote", output);
    took
}

fn run(sandbox: &Sandbox, home: &Path, args: &[&str]) -> Output {
    sandbox
        .command()
        .env("HOME", home)
        .env_remove("MCP_REMOTE_CONFIG_DIR")
        .args(args)
        .output()
        .expect("run patchbay")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_token_mcp_remote_holds_is_adopted_ready_checked_and_renewed_as_its_client() {
    require_keychain!();
    let server = OAuthServer::start(REFRESH_SERVER);
    let sandbox = Sandbox::new(true);
    let home = sandbox.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let sign_in = mcp_remote_signs_in(&home, &server, &[]);
    eprintln!("mcp-remote signed in in {} ms", sign_in.as_millis());

    let store = home.join(".mcp-auth/mcp-remote-v1");
    let hash = McpRemoteOptions::new(server.mcp_url()).hash();
    let client_info: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(store.join(format!("{hash}_client_info.json"))).unwrap(),
    )
    .unwrap();
    let remote_client = client_info["client_id"].as_str().unwrap().to_string();
    let remote_tokens: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(store.join(format!("{hash}_tokens.json"))).unwrap(),
    )
    .unwrap();
    let remote_access = remote_tokens["access_token"].as_str().unwrap().to_string();
    let remote_refresh = remote_tokens["refresh_token"].as_str().unwrap().to_string();

    let catalog = sandbox.write(
        "catalog.json",
        &serde_json::json!({ "mcpServers": { "sdk": { "type": "http", "url": server.mcp_url() } } })
            .to_string(),
    );
    let catalog = catalog.to_str().unwrap();

    // Before: nothing held, so the connector needs authorizing.
    let before = json(&run(
        &sandbox,
        &home,
        &["status", "--json", "--catalog", catalog],
    ));
    assert_eq!(
        state_of(&before, "sdk"),
        "needs_authorization",
        "{before:#}"
    );

    let started = Instant::now();
    let imported = run(&sandbox, &home, &["import", "--json", "--catalog", catalog]);
    let import_ms = started.elapsed().as_millis();
    assert!(imported.status.success(), "{}", text(&imported));
    let report = json(&imported);
    eprintln!("patchbay import (one connector, discovery included): {import_ms} ms wall, {} ms in the core", report["elapsed_ms"]);
    let adopted = &report["adopted"][0];
    assert_eq!(adopted["connector"], "sdk", "{report:#}");
    assert_eq!(adopted["source"], "mcp_remote");
    assert_eq!(adopted["client_id"], remote_client.as_str());
    assert_eq!(adopted["renewable"], true, "{report:#}");
    let offered: Vec<PathBuf> = adopted["plaintext_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| PathBuf::from(f.as_str().unwrap()))
        .collect();
    assert!(
        offered.contains(&store.join(format!("{hash}_tokens.json"))),
        "{offered:?}"
    );
    assert!(
        offered.contains(&store.join(format!("{hash}_client_info.json"))),
        "{offered:?}"
    );
    // No secret in what it prints.
    assert!(
        !text(&imported).contains(&remote_access) && !text(&imported).contains(&remote_refresh)
    );

    {
        let core = sandbox.core(Some(PathBuf::from(catalog)));
        let vault = core.vault();
        let row = vault.credential_rows().unwrap().remove(0);
        assert_eq!(row.server_name, "sdk");
        assert_eq!(row.client_id.as_deref(), Some(remote_client.as_str()));
        assert_eq!(
            vault.credential_source(&row.credential_key).unwrap(),
            Some(CredentialSource::McpRemote)
        );
        let grant = vault.grant(&row.credential_key).unwrap().unwrap();
        assert_eq!(grant.client_id, remote_client);
        assert_eq!(
            grant.token_endpoint,
            format!("http://localhost:{}/token", server.auth_port)
        );
        assert!(!grant.client_registered);
    }

    // Ready, with no authorize.
    let status = json(&run(
        &sandbox,
        &home,
        &["status", "--json", "--catalog", catalog],
    ));
    assert_eq!(state_of(&status, "sdk"), "ready", "{status:#}");
    let row = status["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "sdk")
        .unwrap();
    assert_eq!(row["credential_source"], "mcp_remote", "{row:#}");

    // The real handshake with the adopted token.
    let checked = run(
        &sandbox,
        &home,
        &["check", "sdk", "--json", "--catalog", catalog],
    );
    assert!(checked.status.success(), "{}", text(&checked));
    assert_eq!(
        server.stdout_lines("REFRESHED"),
        0,
        "the check needed no refresh"
    );

    // A second import leaves the held credential alone.
    let again = json(&run(
        &sandbox,
        &home,
        &["import", "--json", "--catalog", catalog],
    ));
    assert!(again["adopted"].as_array().unwrap().is_empty(), "{again:#}");

    // Renewed as mcp-remote's client: the server refuses any other for this pair.
    let refreshed = run(&sandbox, &home, &["refresh", "sdk", "--catalog", catalog]);
    let out = text(&refreshed);
    assert!(
        refreshed.status.success() && out.starts_with("sdk: refreshed"),
        "{out}"
    );
    assert_eq!(server.stdout_lines("REFRESHED"), 1, "{}", server.output());
    assert_eq!(server.stdout_lines("REUSE"), 0, "{}", server.output());
    let (access, refresh) = {
        let core = sandbox.core(Some(PathBuf::from(catalog)));
        let vault = core.vault();
        let row = vault.credential_rows().unwrap().remove(0);
        assert_eq!(row.client_id.as_deref(), Some(remote_client.as_str()));
        assert_eq!(
            vault.credential_source(&row.credential_key).unwrap(),
            Some(CredentialSource::McpRemote),
            "renewed by the same client: still from mcp-remote"
        );
        let t = vault
            .credential_tokens(&row.credential_key)
            .unwrap()
            .unwrap();
        (
            t.access_token.expose().to_string(),
            t.refresh_token.unwrap().expose().to_string(),
        )
    };
    assert_ne!(access, remote_access);
    assert_ne!(refresh, remote_refresh, "the server rotated the pair");
    assert_eq!(server.initialize_status(&access), "200");

    // The plaintext files stay until asked, then go; the credential stays in the vault.
    for file in &offered {
        assert!(file.exists(), "{} deleted unasked", file.display());
    }
    let deleted = run(
        &sandbox,
        &home,
        &["import", "--delete-plaintext", "sdk", "--catalog", catalog],
    );
    assert!(deleted.status.success(), "{}", text(&deleted));
    for file in &offered {
        assert!(!file.exists(), "{} was not deleted", file.display());
    }
    let status = json(&run(
        &sandbox,
        &home,
        &["status", "--json", "--catalog", catalog],
    ));
    assert_eq!(state_of(&status, "sdk"), "ready", "{status:#}");

    // Bad input: a clear error, exit 2.
    let bad = run(
        &sandbox,
        &home,
        &["import", "--delete-plaintext", "nope", "--catalog", catalog],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(
        text(&bad).contains("no OAuth connector named nope"),
        "{}",
        text(&bad)
    );
    SecretScan::new(sandbox.path())
        .issued_by("the SDK server", &server)
        .output("patchbay import nope", &bad)
        .assert_clean();
}

/// A client's mcp-remote bridge with options (`--header`, `--resource`) files its tokens under a
/// hash of those options too: only the client's config names them, so the import reads the
/// clients' configs (here Cursor's `~/.cursor/mcp.json`) for the invocations.
#[test]
fn a_bridge_with_options_in_a_clients_config_names_mcp_remotes_files() {
    require_keychain!();
    let server = OAuthServer::start(REFRESH_SERVER);
    let sandbox = Sandbox::new(true);
    let home = sandbox.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let options = ["--header", "X-Team: ${TEAM_ID}"];
    mcp_remote_signs_in(&home, &server, &options);
    let catalog = sandbox.write(
        "catalog.json",
        &serde_json::json!({ "mcpServers": { "sdk": { "type": "http", "url": server.mcp_url() } } })
            .to_string(),
    );
    let catalog = catalog.to_str().unwrap();

    // The plain URL's hash names no file.
    let none = json(&run(
        &sandbox,
        &home,
        &["import", "--json", "--catalog", catalog],
    ));
    assert!(none["adopted"].as_array().unwrap().is_empty(), "{none:#}");

    let mut args = vec!["-y".to_string(), "mcp-remote".into(), server.mcp_url()];
    args.extend(options.iter().map(|o| o.to_string()));
    let cursor = home.join(".cursor/mcp.json");
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    std::fs::write(
        &cursor,
        serde_json::json!({ "mcpServers": { "team-sdk": { "command": "npx", "args": args } } })
            .to_string(),
    )
    .unwrap();
    let imported = run(&sandbox, &home, &["import", "--json", "--catalog", catalog]);
    assert!(imported.status.success(), "{}", text(&imported));
    let report = json(&imported);
    let adopted = &report["adopted"][0];
    assert_eq!(adopted["connector"], "sdk", "{report:#}");
    assert_eq!(adopted["source"], "mcp_remote");
    assert_eq!(adopted["renewable"], true);
    let mut hashed = vec![server.mcp_url()];
    hashed.extend(options.iter().map(|o| o.to_string()));
    let hash = McpRemoteOptions::from_args(&hashed).unwrap().hash();
    let files = adopted["plaintext_files"].as_array().unwrap();
    assert!(
        files.iter().all(|f| Path::new(f.as_str().unwrap())
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(&format!("{hash}_"))),
        "{files:?}"
    );
    let status = json(&run(
        &sandbox,
        &home,
        &["status", "--json", "--catalog", catalog],
    ));
    assert_eq!(state_of(&status, "sdk"), "ready", "{status:#}");
    let refreshed = run(&sandbox, &home, &["refresh", "sdk", "--catalog", catalog]);
    assert!(refreshed.status.success(), "{}", text(&refreshed));
    assert_eq!(server.stdout_lines("REFRESHED"), 1, "{}", server.output());
    SecretScan::new(sandbox.path())
        .issued_by("the SDK server", &server)
        .output("patchbay refresh", &refreshed)
        .assert_clean();
}

/// Issue 11's "done when", in one home: every client's realistic config, plus Claude Desktop
/// running a loopback OAuth server through `npx mcp-remote URL` after the real mcp-remote signed
/// in there. Without any catalog file: each server is listed once with where it was found; the
/// mcp-remote server is a connector of its own (the remote server itself), adopted by `import`
/// with mcp-remote's client, Ready with no authorize, checked for real, renewed as that client.
#[test]
fn a_home_with_every_client_and_mcp_remotes_tokens_needs_no_authorize() {
    require_keychain!();
    let server = OAuthServer::start(REFRESH_SERVER);
    let sandbox = Sandbox::new(true);
    let home = sandbox.path().join("home");
    patchbay_e2e::copy_dir(&patchbay_e2e::clients_fixture_home(), &home);
    mcp_remote_signs_in(&home, &server, &[]);
    let desktop = home.join(".config/Claude/claude_desktop_config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&desktop).unwrap()).unwrap();
    config["mcpServers"]["loopback-sdk"] = serde_json::json!({
        "command": "npx", "args": ["-y", "mcp-remote", server.mcp_url()]
    });
    std::fs::write(&desktop, config.to_string()).unwrap();
    // Every client read from this home alone, no catalog file.
    let cli = |args: &[&str]| {
        sandbox
            .command()
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("MCP_REMOTE_CONFIG_DIR")
            .current_dir(&home)
            .args(args)
            .output()
            .expect("run patchbay")
    };

    let status = json(&cli(&["status", "--json"]));
    let rows = status["connectors"].as_array().unwrap();
    let mut names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    let listed = names.len();
    names.dedup();
    assert_eq!(names.len(), listed, "a server listed twice: {names:?}");
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {status:#}"))
    };
    let found = |name: &str| -> Vec<String> {
        row(name)["found_in"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["display_name"].as_str().unwrap().to_owned())
            .collect()
    };
    for (name, client) in [
        ("github", "Cursor"),
        ("github", "Claude Code"),
        ("github", "Gemini CLI"),
        ("linear", "Claude Desktop"),
        ("linear", "Codex"),
        ("loopback-sdk", "Claude Desktop"),
    ] {
        assert!(
            found(name).contains(&client.to_owned()),
            "{name} in {client}"
        );
    }
    let sdk = row("loopback-sdk");
    assert_eq!(sdk["origin"], "client");
    assert_eq!(sdk["transport"], "streamable-http");
    assert_eq!(sdk["url"], server.mcp_url().as_str());
    assert_eq!(sdk["state"], "needs_authorization", "{sdk:#}");

    let imported = cli(&["import", "--json"]);
    assert!(imported.status.success(), "{}", text(&imported));
    let report = json(&imported);
    let adopted = report["adopted"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["connector"] == "loopback-sdk")
        .unwrap_or_else(|| panic!("not adopted: {report:#}"));
    assert_eq!(adopted["source"], "mcp_remote");
    assert_eq!(adopted["renewable"], true, "{report:#}");

    let status = json(&cli(&["status", "--json"]));
    assert_eq!(state_of(&status, "loopback-sdk"), "ready", "{status:#}");
    let checked = cli(&["check", "loopback-sdk", "--json"]);
    assert!(checked.status.success(), "{}", text(&checked));
    let refreshed = cli(&["refresh", "loopback-sdk"]);
    assert!(refreshed.status.success(), "{}", text(&refreshed));
    assert_eq!(server.stdout_lines("REFRESHED"), 1, "{}", server.output());
    let status = cli(&["status", "--json"]);
    assert_eq!(state_of(&json(&status), "loopback-sdk"), "ready");
    SecretScan::new(sandbox.path())
        .issued_by("the SDK server", &server)
        .output("patchbay check", &checked)
        .output("patchbay refresh", &refreshed)
        .output("patchbay status", &status)
        .assert_clean();
}
