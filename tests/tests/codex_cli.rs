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
//!
//! Every store mode Codex has on Linux (`mcp_oauth_credentials_store` = `file`, `keyring`, `auto`)
//! is run the same way ([`store_mode_round_trip`]): `patchbay bridge add` writes the credential
//! where that mode makes Codex look, Codex reads it as logged in, and not logged in once the entry
//! has lapsed without a refresh token; then a pair written there as Codex 0.171.0 writes its own
//! (its keyring item put with `secret-tool` under the attributes Codex's keyring crate uses, so
//! not through our own keyring code) is adopted back into the vault by `patchbay status`. The
//! keyring runs are the gnome-keyring of scripts/test.sh (PATCHBAY_TEST_KEYCHAIN=1); `codex mcp
//! list` is handed the same D-Bus session.
//!
//! And a real Codex refresh, in file and keyring mode ([`codex_refresh_round_trip`]): Patchbay
//! authorizes at the MCP SDK's example server taught the rotating refresh grant
//! (tests/node/sdk-oauth-refresh-server.mjs), `bridge add` hands the pair to Codex, the entry is
//! made due (Codex refreshes 30 s before `expires_at`), and `codex exec` (its model provider a
//! loopback port nobody answers, so no model is ever reached) connects to the MCP server at
//! startup, refreshes, and writes the rotated pair back in its own shape. `patchbay status`
//! adopts it, and Patchbay's next refresh presents Codex's refresh token: the server sees two
//! refreshes and no reuse.
//!
//! Codex's two locks, measured with flock(1) and pinned here: `codex mcp list` waits for
//! `mcp-oauth-locks/file-store.lock` (our file writer takes it), and a due `codex exec` waits for
//! the credential's refresh lock, then uses the pair Patchbay refreshed under it instead of
//! refreshing again.

use chrono::{Duration, Utc};
use patchbay_e2e::clients::codex_offline_model;
use patchbay_e2e::secret_scan::{
    read_issued_file, record_issued_module, Issuer, SecretScan, ISSUED_ENV,
};
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
        // The test session's Secret Service (keyring mode), when there is one.
        .envs(
            ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"]
                .into_iter()
                .filter_map(|k| Some((k, std::env::var_os(k)?))),
        )
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
    sandbox.store_fx_credential(&catalog, KEY, "at-1", None, expires);
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

/// Codex's keyring service; its items are the keyring crate's: `service`, `username` (the key),
/// `target` = `default`, `application` = `rust-keyring`.
const CODEX_SERVICE: &str = "Codex MCP Credentials";

/// `secret-tool` (libsecret-tools, installed by scripts/setup.sh) with a bounded wait.
fn secret_tool(args: &[&str], stdin: Option<&str>) -> (bool, String) {
    use std::io::Write;
    let mut child = Command::new("secret-tool")
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("secret-tool (scripts/setup.sh installs libsecret-tools)");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut out).ok();
        out
    });
    let status = wait_within(&mut child, CODEX_MCP_LIST, "secret-tool", String::new);
    (status.success(), reader.join().unwrap())
}

/// Codex's keyring item for `key`, parsed.
fn keyring_item(key: &str) -> Option<Value> {
    let (found, text) = secret_tool(&["lookup", "service", CODEX_SERVICE, "username", key], None);
    found.then(|| {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("item is not JSON ({e}): {text}"))
    })
}

/// Puts `item` as Codex 0.171.0's keyring crate does (its attributes and label, measured).
fn put_keyring_item_as_codex(key: &str, item: &Value) {
    let label = format!("{key}@{CODEX_SERVICE}:default (keyring v3.6.3)");
    let (ok, _) = secret_tool(
        &[
            "store",
            &format!("--label={label}"),
            "application",
            "rust-keyring",
            "service",
            CODEX_SERVICE,
            "target",
            "default",
            "username",
            key,
        ],
        Some(&item.to_string()),
    );
    assert!(ok, "secret-tool store failed");
}

fn clear_keyring_item(key: &str) {
    secret_tool(&["clear", "service", CODEX_SERVICE, "username", key], None);
}

/// The entry Codex reads under `mode` (the keyring item, or the file's entry in file mode),
/// replaced by `change` and written back as Codex writes it.
fn rewrite_codex_entry(codex: &Path, mode: &str, key: &str, change: impl FnOnce(&mut Value)) {
    if mode == "file" {
        let path = codex.join(".credentials.json");
        let mut store: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        change(&mut store[key]);
        std::fs::write(&path, serde_json::to_vec(&store).unwrap()).unwrap();
    } else {
        let mut item = keyring_item(key).expect("the keyring item");
        change(&mut item);
        put_keyring_item_as_codex(key, &item);
    }
}

/// One store mode, end to end with the real Codex CLI (see the module docs).
fn store_mode_round_trip(mode: &str, name: &str, port: u16) {
    let url = format!("http://localhost:{port}/mcp");
    let key = patchbay_catalog::credential_key(name, "http", &url, &Default::default());
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.write(
        "catalog.json",
        &serde_json::json!({"mcpServers": {name: {"type": "http", "url": url}}}).to_string(),
    );
    let catalog_arg = catalog.to_str().unwrap();
    let codex = sandbox.path().join("codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(
        codex.join("config.toml"),
        format!("# mine\nmcp_oauth_credentials_store = \"{mode}\"\n"),
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    clear_keyring_item(key.as_str());

    // A credential without a refresh token, valid for an hour.
    let expires = Utc::now() + Duration::hours(1);
    {
        let core = sandbox.core(Some(catalog.clone()));
        core.vault()
            .put_credential(
                &CredentialRow {
                    credential_key: key.clone(),
                    server_name: name.into(),
                    server_url: Some(url.clone()),
                    expires_at: Some(expires),
                    has_refresh_token: false,
                    one_shot: false,
                    issuer: Some("http://localhost:3101/".into()),
                    client_id: Some("client-1".into()),
                    scope: Some("mcp:tools mcp:read".into()),
                    updated_at: Utc::now(),
                    rotated_by: None,
                    rotated_at: None,
                },
                &TokenSet {
                    access_token: Secret::new("at-1-bridged"),
                    refresh_token: None,
                },
            )
            .unwrap();
    }
    let out = sandbox.run(&[
        "bridge",
        "add",
        name,
        "--runtime",
        "codex",
        "--catalog",
        catalog_arg,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains("Wrote its stored credential there."),
        "{mode}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config = std::fs::read_to_string(codex.join("config.toml")).unwrap();
    assert!(config.starts_with("# mine\n"), "{config}");

    // Where the mode makes Codex look, in the shape Codex reads there.
    let file = codex.join(".credentials.json");
    if mode == "file" {
        let store: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(
            store[key.as_str()]["access_token"],
            "at-1-bridged",
            "{store:#}"
        );
        assert!(keyring_item(key.as_str()).is_none());
    } else {
        assert!(!file.exists(), "{mode}: the keyring answers, so no file");
        let item = keyring_item(key.as_str()).expect("a keyring item");
        assert_eq!(
            item["token_response"]["access_token"], "at-1-bridged",
            "{item:#}"
        );
        assert_eq!(item["token_response"]["token_type"], "Bearer", "{item:#}");
        assert_eq!(item["url"], url.as_str(), "{item:#}");
    }
    let listed = codex_auth_status(&sandbox, home.path());
    assert_eq!(status_of(&listed, name), "o_auth", "{mode}: {listed:?}");

    // Lapsed, no refresh token: not logged in (the units and the pair are read right).
    rewrite_codex_entry(&codex, mode, key.as_str(), |entry| {
        entry["expires_at"] =
            serde_json::json!((Utc::now() - Duration::hours(1)).timestamp_millis());
    });
    let lapsed = codex_auth_status(&sandbox, home.path());
    assert_eq!(
        status_of(&lapsed, name),
        "not_logged_in",
        "{mode}: {lapsed:?}"
    );

    // A pair Codex rotated, written as Codex writes it (later expiry, a refresh token, its own
    // `bearer`), is what Codex reads, and `patchbay status` adopts it into the vault.
    let rotated_expiry = Utc::now() + Duration::hours(2);
    rewrite_codex_entry(&codex, mode, key.as_str(), |entry| {
        *entry = if mode == "file" {
            serde_json::json!({
                "server_name": name, "server_url": url, "client_id": "client-1",
                "access_token": "at-codex", "expires_at": rotated_expiry.timestamp_millis(),
                "refresh_token": "rt-codex", "scopes": ["mcp:tools", "mcp:read"]
            })
        } else {
            serde_json::json!({
                "server_name": name, "url": url, "issuer": "http://localhost:3101/",
                "client_id": "client-1",
                "token_response": {"access_token": "at-codex", "token_type": "bearer",
                                   "expires_in": 7200, "refresh_token": "rt-codex",
                                   "scope": "mcp:tools mcp:read"},
                "expires_at": rotated_expiry.timestamp_millis()
            })
        };
    });
    let rotated = codex_auth_status(&sandbox, home.path());
    assert_eq!(status_of(&rotated, name), "o_auth", "{mode}: {rotated:?}");
    let status = sandbox.run(&["status", "--json", "--catalog", catalog_arg]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let core = sandbox.core(Some(catalog.clone()));
    let tokens = core.vault().credential_tokens(&key).unwrap().unwrap();
    assert_eq!(
        tokens.access_token.expose(),
        "at-codex",
        "{mode}: not adopted"
    );
    assert_eq!(
        tokens.refresh_token.as_ref().map(Secret::expose),
        Some("rt-codex"),
        "{mode}"
    );
    let row = core
        .vault()
        .credential_rows()
        .unwrap()
        .into_iter()
        .find(|r| r.credential_key == key)
        .unwrap();
    assert_eq!(
        row.expires_at.map(|t| t.timestamp_millis()),
        Some(rotated_expiry.timestamp_millis())
    );
    assert_eq!(row.rotated_by.as_deref(), Some("codex"), "{mode}");
    clear_keyring_item(key.as_str());
    SecretScan::new(sandbox.path())
        .secret("the access token Patchbay wrote for Codex", "at-1-bridged")
        .secret("Codex's rotated access token", "at-codex")
        .secret("Codex's rotated refresh token", "rt-codex")
        .assert_clean();
}

#[test]
fn codex_file_mode_reads_what_bridge_add_writes_and_its_rotation_is_adopted() {
    require_keychain!();
    store_mode_round_trip("file", "fxfile", 3111);
}

#[test]
fn codex_keyring_mode_reads_what_bridge_add_writes_and_its_rotation_is_adopted() {
    require_keychain!();
    store_mode_round_trip("keyring", "fxkeyring", 3112);
}

#[test]
fn codex_auto_mode_with_a_keyring_reads_the_keyring_item() {
    require_keychain!();
    store_mode_round_trip("auto", "fxauto", 3113);
}

/// The SDK's example OAuth server with the rotating refresh grant (tests/node), killed on drop.
struct RefreshServer {
    child: std::process::Child,
    logs: tempfile::TempDir,
    mcp_port: u16,
}

impl Issuer for RefreshServer {
    fn issued(&self) -> Vec<(String, String)> {
        read_issued_file(&self.logs.path().join("issued.jsonl"))
    }
}

impl RefreshServer {
    fn start() -> RefreshServer {
        RefreshServer::start_with_refresh_delay(0)
    }

    /// With every refresh answered `delay_ms` late (a refresh in flight a test can act during).
    fn start_with_refresh_delay(delay_ms: u64) -> RefreshServer {
        let node = Path::new(env!("CARGO_MANIFEST_DIR")).join("node");
        let (mcp_port, auth_port) = {
            // Both held at once, so they differ.
            let bind = || std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            let (a, b) = (bind(), bind());
            (
                a.local_addr().unwrap().port(),
                b.local_addr().unwrap().port(),
            )
        };
        let logs = tempfile::tempdir().unwrap();
        let file = |name: &str| std::fs::File::create(logs.path().join(name)).unwrap();
        let child = Command::new("node")
            .current_dir(&node)
            .arg("--import")
            .arg(record_issued_module())
            .args(["sdk-oauth-refresh-server.mjs", "--oauth"])
            .env(ISSUED_ENV, logs.path().join("issued.jsonl"))
            .env("MCP_PORT", mcp_port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string())
            .env("REFRESH_DELAY_MS", delay_ms.to_string())
            .stdin(Stdio::null())
            .stdout(file("stdout"))
            .stderr(file("stderr"))
            .spawn()
            .expect("start node (scripts/setup.sh installs it)");
        let server = RefreshServer {
            child,
            logs,
            mcp_port,
        };
        let deadline = std::time::Instant::now() + CODEX_MCP_LIST;
        let listening = |port: u16| {
            std::net::TcpStream::connect_timeout(
                &([127, 0, 0, 1], port).into(),
                std::time::Duration::from_secs(1),
            )
            .is_ok()
        };
        while !(listening(mcp_port) && listening(auth_port)) {
            assert!(
                std::time::Instant::now() < deadline,
                "the SDK server did not listen: {}",
                server.output()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        server
    }

    fn output(&self) -> String {
        let read =
            |name: &str| std::fs::read_to_string(self.logs.path().join(name)).unwrap_or_default();
        format!("{}{}", read("stderr"), read("stdout"))
    }

    /// How many lines of its stdout are exactly `event` (`REFRESHED`, `REUSE`).
    fn events(&self, event: &str) -> usize {
        self.output().lines().filter(|l| l.trim() == event).count()
    }

    fn url(&self) -> String {
        format!("http://localhost:{}/mcp", self.mcp_port)
    }
}

impl Drop for RefreshServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `patchbay ARGS` in the sandbox with the non-interactive browser of tests/support,
/// bounded; asserts success and returns stdout.
fn patchbay_with_browser(sandbox: &Sandbox, args: &[&str]) -> String {
    let support = Path::new(env!("CARGO_MANIFEST_DIR")).join("support");
    let path = std::env::join_paths(std::iter::once(support).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let logs = tempfile::tempdir().unwrap();
    let file = |name: &str| std::fs::File::create(logs.path().join(name)).unwrap();
    let read = |name: &str| std::fs::read_to_string(logs.path().join(name)).unwrap_or_default();
    let mut child = sandbox
        .command()
        .args(args)
        .env("BROWSER", "follow-browser.sh")
        .env("PATH", path)
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("patchbay");
    let status = wait_within(&mut child, CODEX_MCP_LIST, "patchbay", || read("stderr"));
    assert!(
        status.success(),
        "patchbay {args:?} failed ({status}): {}{}",
        read("stdout"),
        read("stderr")
    );
    read("stdout")
}

/// The access and refresh tokens of the entry Codex reads under `mode`.
fn codex_pair(codex: &Path, mode: &str, key: &str) -> Option<(String, Option<String>)> {
    let text = |v: &Value| v.as_str().map(str::to_string);
    if mode == "file" {
        let store: Value =
            serde_json::from_slice(&std::fs::read(codex.join(".credentials.json")).ok()?).ok()?;
        let entry = store.get(key)?;
        Some((text(&entry["access_token"])?, text(&entry["refresh_token"])))
    } else {
        let item = keyring_item(key)?;
        let response = &item["token_response"];
        Some((
            text(&response["access_token"])?,
            text(&response["refresh_token"]),
        ))
    }
}

/// Stops a `node codex.js ...` launched Codex: SIGTERM, which the launcher forwards to the native
/// binary it runs (a SIGKILL would kill the launcher only and leave Codex running), then waits,
/// bounded; SIGKILL past the bound.
fn stop_codex(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().ok().flatten().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A real refresh by Codex of the pair Patchbay wrote, adopted back (see the module docs).
fn codex_refresh_round_trip(mode: &str) {
    let server = RefreshServer::start();
    let url = server.url();
    let name = format!("sdk{mode}");
    let key = patchbay_catalog::credential_key(&name, "http", &url, &Default::default());
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.write(
        "catalog.json",
        &serde_json::json!({"mcpServers": {&name: {"type": "http", "url": url}}}).to_string(),
    );
    let catalog_arg = catalog.to_str().unwrap();
    let codex = sandbox.path().join("codex");
    std::fs::create_dir_all(&codex).unwrap();
    // The model provider is a port nobody listens on: `codex exec` starts its MCP servers, and
    // its model requests fail on loopback.
    let config = codex.join("config.toml");
    std::fs::write(
        &config,
        format!("mcp_oauth_credentials_store = \"{mode}\"\n"),
    )
    .unwrap();
    codex_offline_model(&config);
    let home = tempfile::tempdir().unwrap();
    clear_keyring_item(key.as_str());

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    patchbay_with_browser(
        &sandbox,
        &[
            "authorize",
            &name,
            "--port",
            &port,
            "--catalog",
            catalog_arg,
        ],
    );
    // Due (Codex refreshes 30 s before expiry), as an hour later: the pair nearly lapsed, so
    // Codex's rotated one is later by far (a pair refreshed within a second of its issue may
    // carry the same expiry, which orders nothing).
    {
        let core = sandbox.core(Some(catalog.clone()));
        let vault = core.vault();
        let mut row = vault
            .credential_rows()
            .unwrap()
            .into_iter()
            .find(|r| r.credential_key == key)
            .expect("authorized");
        let tokens = vault.credential_tokens(&key).unwrap().unwrap();
        row.expires_at = Some(Utc::now() + Duration::seconds(10));
        vault.put_credential(&row, &tokens).unwrap();
    }
    let out = patchbay_with_browser(
        &sandbox,
        &[
            "bridge",
            "add",
            &name,
            "--runtime",
            "codex",
            "--catalog",
            catalog_arg,
        ],
    );
    assert!(out.contains("Wrote its stored credential there."), "{out}");
    let (ours_access, ours_refresh) = codex_pair(&codex, mode, key.as_str()).expect("written");
    assert!(ours_refresh.is_some(), "the pair has a refresh token");

    let logs = tempfile::tempdir().unwrap();
    let file = |name: &str| std::fs::File::create(logs.path().join(name)).unwrap();
    let read = |name: &str| std::fs::read_to_string(logs.path().join(name)).unwrap_or_default();
    let mut exec = Command::new("node")
        .arg(codex_js())
        .args(["exec", "--skip-git-repo-check", "say hi"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(
            ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"]
                .into_iter()
                .filter_map(|k| Some((k, std::env::var_os(k)?))),
        )
        .env("HOME", home.path())
        .env("CODEX_HOME", &codex)
        .current_dir(home.path())
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("start codex exec");
    // Until Codex has written a rotated pair (bounded); then it has done its part.
    let deadline = std::time::Instant::now() + CODEX_MCP_LIST;
    let rotated = loop {
        match codex_pair(&codex, mode, key.as_str()) {
            Some(pair) if pair.0 != ours_access => break pair,
            _ => {}
        }
        if std::time::Instant::now() > deadline {
            stop_codex(&mut exec);
            panic!(
                "{mode}: Codex did not refresh within {CODEX_MCP_LIST:?}; codex:\n{}{}\nserver:\n{}",
                read("stdout"),
                read("stderr"),
                server.output()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    stop_codex(&mut exec);
    assert_eq!(server.events("REFRESHED"), 1, "{}", server.output());
    assert_ne!(
        rotated.1, ours_refresh,
        "{mode}: the server rotated the refresh token"
    );

    // Adopted back: the vault holds Codex's pair.
    let status = sandbox.run(&["status", "--json", "--catalog", catalog_arg]);
    assert!(status.status.success());
    {
        let core = sandbox.core(Some(catalog.clone()));
        let tokens = core.vault().credential_tokens(&key).unwrap().unwrap();
        assert_eq!(
            tokens.access_token.expose(),
            rotated.0,
            "{mode}: not adopted"
        );
        assert_eq!(
            tokens
                .refresh_token
                .as_ref()
                .map(|t| t.expose().to_string()),
            rotated.1,
            "{mode}"
        );
    }
    // Our next refresh presents Codex's refresh token, the live head of the chain.
    let refreshed = sandbox.run(&["refresh", &name, "--catalog", catalog_arg]);
    assert!(
        refreshed.status.success(),
        "{}{}",
        String::from_utf8_lossy(&refreshed.stdout),
        String::from_utf8_lossy(&refreshed.stderr)
    );
    assert_eq!(server.events("REFRESHED"), 2, "{}", server.output());
    assert_eq!(server.events("REUSE"), 0, "{}", server.output());
    clear_keyring_item(key.as_str());
    SecretScan::new(sandbox.path())
        .issued_by("the SDK server", &server)
        .output("patchbay refresh", &refreshed)
        .assert_clean();
}

#[test]
fn codex_file_mode_refresh_is_adopted_and_continues_the_chain() {
    require_keychain!();
    codex_refresh_round_trip("file");
}

#[test]
fn codex_keyring_mode_refresh_is_adopted_and_continues_the_chain() {
    require_keychain!();
    codex_refresh_round_trip("keyring");
}

/// Canary for the lock our Codex file-store writer takes (patchbay_runtimes::codex): Codex
/// 0.171.0 itself waits for an exclusive `flock` on `$CODEX_HOME/mcp-oauth-locks/file-store.lock`
/// before it reads its file store (held here by util-linux's `flock(1)`), and goes on once it is
/// released. Should a Codex release stop taking it, this fails, and our lock protects nothing.
#[test]
fn codex_waits_for_its_file_store_lock() {
    let sandbox = Sandbox::new(false);
    let codex = sandbox.path().join("codex");
    std::fs::create_dir_all(codex.join("mcp-oauth-locks")).unwrap();
    std::fs::write(
        codex.join("config.toml"),
        "mcp_oauth_credentials_store = \"file\"\n[mcp_servers.fx]\nurl = \"http://localhost:3100/mcp\"\n",
    )
    .unwrap();
    let release = sandbox.path().join("release");
    let mut holder = Command::new("flock")
        .arg("-x")
        .arg(codex.join("mcp-oauth-locks/file-store.lock"))
        .args([
            "sh",
            "-c",
            &format!(
                "touch '{held}'; while [ ! -e '{release}' ]; do sleep 0.02; done",
                held = sandbox.path().join("held").display(),
                release = release.display()
            ),
        ])
        .spawn()
        .expect("flock(1) (util-linux)");
    let deadline = std::time::Instant::now() + CODEX_MCP_LIST;
    while !sandbox.path().join("held").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "flock(1) never held the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let home = tempfile::tempdir().unwrap();
    let lister = {
        let codex = codex.clone();
        let home = home.path().to_path_buf();
        std::thread::spawn(move || {
            Command::new("node")
                .arg(codex_js())
                .args(["mcp", "list", "--json"])
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", &home)
                .env("CODEX_HOME", &codex)
                .current_dir(&home)
                .stdin(Stdio::null())
                .output()
                .expect("codex")
        })
    };
    // Codex answers in well under a second when nothing holds the lock: watched for 2 s.
    let watch_until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while std::time::Instant::now() < watch_until {
        assert!(
            !lister.is_finished(),
            "`codex mcp list` did not wait for its file-store lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::write(&release, "").unwrap();
    assert!(holder.wait().unwrap().success());
    let out = lister.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The protocol that keeps Codex from presenting a refresh token Patchbay is presenting: while a
/// refresher holds Codex's per-credential refresh lock (`patchbay_runtimes::codex::
/// lock_codex_refresh`), a `codex exec` whose entry is due waits; Patchbay refreshes and writes
/// the new pair through; once the lock is let go, Codex re-reads its store, finds the pair fresh,
/// and connects with it without refreshing. The server sees one refresh, and no reuse.
#[test]
fn codex_waits_for_its_refresh_lock_and_then_uses_patchbays_refresh() {
    require_keychain!();
    // Patchbay's refresh holds Codex's lock for as long as the token endpoint takes: 4 s here.
    let server = RefreshServer::start_with_refresh_delay(4_000);
    let url = server.url();
    let name = "sdklock";
    let key = patchbay_catalog::credential_key(name, "http", &url, &Default::default());
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.write(
        "catalog.json",
        &serde_json::json!({"mcpServers": {name: {"type": "http", "url": url}}}).to_string(),
    );
    let catalog_arg = catalog.to_str().unwrap();
    let codex = sandbox.path().join("codex");
    std::fs::create_dir_all(&codex).unwrap();
    let config = codex.join("config.toml");
    std::fs::write(&config, "mcp_oauth_credentials_store = \"file\"\n").unwrap();
    codex_offline_model(&config);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    patchbay_with_browser(
        &sandbox,
        &["authorize", name, "--port", &port, "--catalog", catalog_arg],
    );
    // Due for Codex (see codex_refresh_round_trip), then handed to it.
    {
        let core = sandbox.core(Some(catalog.clone()));
        let vault = core.vault();
        let mut row = vault
            .credential_rows()
            .unwrap()
            .into_iter()
            .find(|r| r.credential_key == key)
            .expect("authorized");
        let tokens = vault.credential_tokens(&key).unwrap().unwrap();
        row.expires_at = Some(Utc::now() + Duration::seconds(10));
        vault.put_credential(&row, &tokens).unwrap();
    }
    patchbay_with_browser(
        &sandbox,
        &[
            "bridge",
            "add",
            name,
            "--runtime",
            "codex",
            "--catalog",
            catalog_arg,
        ],
    );

    // Patchbay renews under Codex's own refresh lock: start the refresh, and once the lock is
    // taken (a try from here fails), start Codex, which is due and waits for that lock.
    let mut refresh = sandbox
        .command()
        .args(["refresh", name, "--catalog", catalog_arg])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("patchbay refresh");
    let held_by_patchbay = || {
        patchbay_runtimes::codex::lock_codex_refresh(
            &codex,
            &key,
            std::time::Duration::from_millis(1),
        )
        .is_err()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !held_by_patchbay() {
        assert!(
            std::time::Instant::now() < deadline,
            "patchbay refresh never took Codex's refresh lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let home = tempfile::tempdir().unwrap();
    let mut exec = Command::new("node")
        .arg(codex_js())
        .args(["exec", "--skip-git-repo-check", "say hi"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CODEX_HOME", &codex)
        .current_dir(home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start codex exec");
    // Patchbay's refresh finishes (its answer comes 4 s late); Codex, waiting on the lock,
    // presented nothing meanwhile.
    let finished = wait_within(
        &mut refresh,
        CODEX_MCP_LIST,
        "patchbay refresh",
        String::new,
    );
    let mut said = String::new();
    use std::io::Read;
    refresh
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut said)
        .unwrap();
    assert!(finished.success(), "{said}");
    assert!(said.starts_with(&format!("{name}: refreshed")), "{said}");
    assert_eq!(server.events("REFRESHED"), 1, "{}", server.output());
    let (ours, _) = codex_pair(&codex, "file", key.as_str()).expect("written through");
    let used_by = |token: &str| server.output().contains(&format!("token: '{token}'"));

    // Codex goes on with the pair Patchbay wrote: the server sees it authenticate with it.
    let deadline = std::time::Instant::now() + CODEX_MCP_LIST;
    while !used_by(&ours) {
        if std::time::Instant::now() > deadline {
            stop_codex(&mut exec);
            panic!(
                "Codex never connected with Patchbay's pair:\n{}",
                server.output()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    stop_codex(&mut exec);
    assert_eq!(server.events("REFRESHED"), 1, "{}", server.output());
    assert_eq!(server.events("REUSE"), 0, "{}", server.output());
    SecretScan::new(sandbox.path())
        .issued_by("the SDK server", &server)
        .assert_clean();
}
