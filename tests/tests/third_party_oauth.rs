//! `patchbay authorize` run as a process against a third-party authorization server: the official
//! MCP TypeScript SDK's example `simpleStreamableHttp.js --oauth` (npm `@modelcontextprotocol/sdk`,
//! installed in tests/node by scripts/setup.sh), an OAuth-protected streamable-HTTP MCP server with
//! a separate authorization server (RFC 9728 and 8414 metadata, dynamic registration, PKCE S256,
//! an `/authorize` that auto-approves with a 302 to the redirect URI), run as shipped through
//! tests/node/sdk-oauth-server.mjs, which keeps both on 127.0.0.1, on free ports (MCP_PORT,
//! MCP_AUTH_PORT).
//!
//! The "browser" is tests/support/follow-browser.sh (curl following the 302 to our receiver), or
//! the test itself with `--no-browser`. Then the connector must read Ready, and its access token
//! must be in the keychain-backed vault and nowhere else: no file under the data directory, no
//! output of the CLI.
//!
//! Last, the real Claude Code CLI (npm `@anthropic-ai/claude-code`, also in tests/node, a native
//! binary) lists the same server before and after: "Needs authentication", then, with the
//! credential the authorization wrote through to its store, "Connected".

use patchbay_e2e::peers::{claude_mcp_list_in, path_with_support, OAuthServer};
use patchbay_e2e::sdk_servers::free_port;
use patchbay_e2e::secret_scan::SecretScan;
use patchbay_e2e::{json, require_keychain, state_of, Sandbox};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long one `patchbay authorize` may take to finish.
const AUTHORIZE: Duration = Duration::from_secs(60);

/// The SDK's example as shipped, and the same with its demo provider taught the rotating refresh
/// grant and revocation.
const SDK_SERVER: &str = "sdk-oauth-server.mjs";
const REFRESH_SERVER: &str = "sdk-oauth-refresh-server.mjs";

/// A running `patchbay` whose stdout is read line by line as it comes.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Running {
    fn spawn(mut cmd: Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn patchbay");
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                all.push_str(&line);
                all.push('\n');
                let _ = tx.send(line);
            }
            all
        });
        let err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
        Running {
            child,
            lines,
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    /// The consent URL the CLI prints (the first line that is an http address).
    fn authorize_url(&mut self) -> String {
        let deadline = Instant::now() + AUTHORIZE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.trim_start().starts_with("http") => {
                    return line.trim().to_string()
                }
                Ok(_) => continue,
                Err(e) => {
                    let done = self.kill();
                    panic!(
                        "no authorize URL on stdout ({e}); stdout:\n{}\nstderr:\n{}",
                        done.stdout, done.stderr
                    );
                }
            }
        }
    }

    fn paste(&mut self, text: &str) {
        let mut stdin = self.child.stdin.take().expect("stdin is piped");
        stdin.write_all(text.as_bytes()).expect("write stdin");
        stdin.write_all(b"\n").expect("write stdin");
    }

    fn collect(&mut self, status: ExitStatus) -> Finished {
        Finished {
            status,
            stdout: self.stdout.take().unwrap().join().unwrap(),
            stderr: self.stderr.take().unwrap().join().unwrap(),
        }
    }

    fn kill(&mut self) -> Finished {
        let _ = self.child.kill();
        let status = self.child.wait().expect("wait");
        self.collect(status)
    }

    /// Waits for the exit, up to [`AUTHORIZE`]; kills it and fails past that.
    fn finish(mut self) -> Finished {
        let deadline = Instant::now() + AUTHORIZE;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return self.collect(status);
            }
            if Instant::now() > deadline {
                let done = self.kill();
                panic!(
                    "`patchbay authorize` did not finish within {AUTHORIZE:?}; stdout:\n{}\nstderr:\n{}",
                    done.stdout, done.stderr
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `patchbay authorize NAME --port PORT --catalog CATALOG [extra]`.
fn authorize(sandbox: &Sandbox, catalog: &Path, name: &str, extra: &[&str]) -> Command {
    let mut cmd = sandbox.command();
    let port = free_port().to_string();
    cmd.args(["authorize", name, "--port", &port, "--catalog"])
        .arg(catalog)
        .args(extra);
    cmd
}

fn assert_succeeded(name: &str, done: &Finished) {
    assert!(
        done.status.success(),
        "`patchbay authorize {name}` failed ({}); stdout:\n{}\nstderr:\n{}",
        done.status,
        done.stdout,
        done.stderr
    );
    assert!(
        done.stdout.contains(&format!(
            "Authorized {name}: the credential is stored in the vault."
        )),
        "{}",
        done.stdout
    );
}

/// Follows a consent URL one step, as a browser would: the SDK approves at once with a 302.
/// Returns the redirect's Location.
fn consent(url: &str) -> String {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20", "-o", "/dev/null"])
        .args(["-w", "%{http_code} %{redirect_url}", url])
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (code, location) = text.split_once(' ').unwrap_or((&text, ""));
    assert_eq!(
        code,
        "302",
        "the SDK's /authorize should approve with a redirect: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    location.to_string()
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// For each authorized connector: `status --json` reads Ready with the issuer and an expiry, the
/// vault gives back an access token the MCP server accepts, and that token appears in no file
/// under the data directory and in none of `outputs`.
fn assert_stored_in_the_vault_only(
    sandbox: &Sandbox,
    catalog: &Path,
    server: &OAuthServer,
    names: &[&str],
    outputs: &[String],
) {
    let status = sandbox.run(&["status", "--json", "--catalog", catalog.to_str().unwrap()]);
    let report = json(&status);
    let status_text = String::from_utf8_lossy(&status.stdout).into_owned();
    let rows = report["connectors"].as_array().expect("connectors");

    let core = sandbox.core(Some(catalog.to_path_buf()));
    let vault = core.vault();
    let stored = vault.credential_rows().expect("credential rows");
    let files = files_under(sandbox.path());
    assert!(
        files.iter().any(|f| f.ends_with("patchbay.sqlite3")),
        "{files:?}"
    );

    for name in names {
        assert_eq!(state_of(&report, name), "ready", "{report:#}");
        let row = rows.iter().find(|r| r["name"] == *name).unwrap();
        let credential = &row["credential"];
        assert_eq!(credential["issuer"], server.issuer(), "{row:#}");
        let expires: chrono::DateTime<chrono::Utc> = credential["expires_at"]
            .as_str()
            .unwrap_or_else(|| panic!("no expiry: {row:#}"))
            .parse()
            .expect("an RFC 3339 expiry");
        let left = expires - chrono::Utc::now();
        assert!(
            left > chrono::Duration::minutes(50) && left <= chrono::Duration::minutes(61),
            "the SDK issues one-hour tokens; this one expires in {left}"
        );
        // The SDK's demo provider issues no refresh token: the credential is one-shot.
        assert_eq!(credential["has_refresh_token"], false, "{row:#}");
        assert_eq!(row["one_shot"], true, "{row:#}");

        let key = credential["key"].as_str().expect("credential key");
        let row = stored
            .iter()
            .find(|r| r.credential_key.as_str() == key)
            .unwrap_or_else(|| panic!("no vault row {key}"));
        assert_eq!(row.issuer.as_deref(), Some(server.issuer().as_str()));
        assert!(row.expires_at.is_some());
        let tokens = vault
            .credential_tokens(&row.credential_key)
            .expect("read the vault")
            .unwrap_or_else(|| panic!("no tokens for {key}"));
        let token = tokens.access_token.expose();
        assert!(!token.is_empty());
        assert!(tokens.refresh_token.is_none());
        assert_eq!(
            server.initialize_status(token),
            "200",
            "the MCP server refuses the stored token of {name}"
        );

        for file in &files {
            let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert!(
                !contains(&bytes, token),
                "the access token of {name} is in plain text in {}",
                file.display()
            );
        }
        for text in outputs.iter().chain([&status_text]) {
            assert!(
                !text.contains(token),
                "the access token of {name} reached the CLI's output"
            );
        }
    }
}

/// `patchbay authorize NAME` with the "browser" tests/support/follow-browser.sh, which follows
/// the consent page's 302 back to the receiver; waits for the exit.
fn authorize_in_browser(sandbox: &Sandbox, catalog: &Path, name: &str) -> Finished {
    let mut cmd = authorize(sandbox, catalog, name, &[]);
    cmd.env("BROWSER", "follow-browser.sh")
        .env("PATH", path_with_support());
    Running::spawn(cmd).finish()
}

/// Claude Code (its config dir in the sandbox) configured with the SDK server as `sdk`, and a
/// catalog with the same entry. Returns the Claude config dir and the catalog file.
fn claude_code_with_sdk(sandbox: &Sandbox, server: &OAuthServer) -> (PathBuf, PathBuf) {
    let claude = sandbox.path().join("claude");
    std::fs::create_dir_all(&claude).unwrap();
    let config = serde_json::json!({ "type": "http", "url": server.mcp_url() });
    std::fs::write(
        claude.join(".claude.json"),
        serde_json::json!({ "mcpServers": { "sdk": config } }).to_string(),
    )
    .unwrap();
    let catalog = write_catalog(sandbox, serde_json::json!({ "sdk": config }));
    (claude, catalog)
}

fn write_catalog(sandbox: &Sandbox, servers: serde_json::Value) -> PathBuf {
    sandbox.write(
        "catalog.json",
        &serde_json::json!({ "mcpServers": servers }).to_string(),
    )
}

#[test]
fn authorize_opens_the_browser_and_the_receiver_stores_the_sdk_servers_token() {
    require_keychain!();
    let server = OAuthServer::start(SDK_SERVER);
    let sandbox = Sandbox::new(true);
    let catalog = write_catalog(
        &sandbox,
        serde_json::json!({ "sdk": { "type": "http", "url": server.mcp_url() } }),
    );
    let before = json(&sandbox.run(&["status", "--json", "--catalog", catalog.to_str().unwrap()]));
    assert_eq!(state_of(&before, "sdk"), "needs_authorization");

    let done = authorize_in_browser(&sandbox, &catalog, "sdk");
    assert_succeeded("sdk", &done);
    assert!(
        done.stdout.contains("Waiting for the browser"),
        "{}",
        done.stdout
    );

    assert_stored_in_the_vault_only(
        &sandbox,
        &catalog,
        &server,
        &["sdk"],
        &[done.stdout.clone(), done.stderr.clone()],
    );
    SecretScan::new(sandbox.path())
        .issued_by("the SDK server", &server)
        .text("patchbay authorize (stdout)", &done.stdout)
        .text("patchbay authorize (stderr)", &done.stderr)
        .assert_clean();
}

#[test]
fn no_browser_prints_the_url_and_completes_by_receiver_or_by_paste_back() {
    require_keychain!();
    let server = OAuthServer::start(SDK_SERVER);
    let sandbox = Sandbox::new(true);
    // Nobody serves this redirect: the browser would land on an error page whose address the
    // user pastes.
    let elsewhere = format!("http://127.0.0.1:{}/oauth/done", free_port());
    let catalog = write_catalog(
        &sandbox,
        serde_json::json!({
            "sdk": { "type": "http", "url": server.mcp_url() },
            "sdk-manual": { "type": "http", "url": server.mcp_url(), "oauth": { "manual": true } },
            "sdk-elsewhere": { "type": "http", "url": server.mcp_url(), "oauth": { "redirectUri": elsewhere } }
        }),
    );
    let mut outputs = Vec::new();

    // The receiver still runs: the test is the browser, following the printed URL to it.
    let mut running = Running::spawn(authorize(&sandbox, &catalog, "sdk", &["--no-browser"]));
    let url = running.authorize_url();
    assert!(url.starts_with(&server.issuer()), "{url}");
    let followed = Command::new("curl")
        .args([
            "-sS",
            "-L",
            "--max-time",
            "20",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &url,
        ])
        .output()
        .expect("curl");
    assert_eq!(
        String::from_utf8_lossy(&followed.stdout),
        "200",
        "the receiver's page"
    );
    let done = running.finish();
    assert_succeeded("sdk", &done);
    outputs.extend([done.stdout, done.stderr]);

    // Paste-back forced by `manual`: the whole redirected address on stdin.
    let mut cmd = authorize(&sandbox, &catalog, "sdk-manual", &["--no-browser"]);
    cmd.stdin(Stdio::piped());
    let mut running = Running::spawn(cmd);
    let location = consent(&running.authorize_url());
    assert!(location.contains("/callback?code="), "{location}");
    running.paste(&location);
    let done = running.finish();
    assert_succeeded("sdk-manual", &done);
    assert!(done.stdout.contains("manual: true"), "{}", done.stdout);
    outputs.extend([done.stdout, done.stderr]);

    // Paste-back because the redirect is not the receiver's: the bare code on stdin.
    let mut cmd = authorize(&sandbox, &catalog, "sdk-elsewhere", &["--no-browser"]);
    cmd.stdin(Stdio::piped());
    let mut running = Running::spawn(cmd);
    let location = consent(&running.authorize_url());
    assert!(location.starts_with(&elsewhere), "{location}");
    let code = url_param(&location, "code");
    running.paste(&code);
    let done = running.finish();
    assert_succeeded("sdk-elsewhere", &done);
    outputs.extend([done.stdout, done.stderr]);

    assert_stored_in_the_vault_only(
        &sandbox,
        &catalog,
        &server,
        &["sdk", "sdk-manual", "sdk-elsewhere"],
        &outputs,
    );
    let mut scan = SecretScan::new(sandbox.path()).issued_by("the SDK server", &server);
    for (i, text) in outputs.iter().enumerate() {
        scan = scan.text(&format!("patchbay authorize output #{i}"), text);
    }
    scan.assert_clean();
}

/// One query parameter of a URL (the SDK's codes are UUIDs: no decoding needed).
fn url_param(url: &str, name: &str) -> String {
    let query = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} in {url}"))
        .to_string()
}

/// The line `claude mcp list` prints for the server `name`.
fn listed<'a>(list: &'a str, name: &str) -> &'a str {
    list.lines()
        .find(|line| line.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} in `claude mcp list`:\n{list}"))
}

#[test]
fn claude_code_connects_with_the_credential_authorize_writes_through() {
    require_keychain!();
    let server = OAuthServer::start(SDK_SERVER);
    let sandbox = Sandbox::new(true);
    let home = tempfile::tempdir().expect("tempdir");
    let (_, catalog) = claude_code_with_sdk(&sandbox, &server);

    // No token yet: Claude Code meets the server's 401 (and leaves its own tokenless entry and
    // needs-auth cache in its home, which the write-through must get past).
    let before = claude_mcp_list_in(&sandbox.path().join("claude"), home.path());
    assert_eq!(
        listed(&before, "sdk"),
        format!("sdk: {} (HTTP) - ! Needs authentication", server.mcp_url()),
        "{before}"
    );

    let done = authorize_in_browser(&sandbox, &catalog, "sdk");
    assert_succeeded("sdk", &done);

    // The authorization wrote through to Claude Code's store: it connects with no other step.
    let after = claude_mcp_list_in(&sandbox.path().join("claude"), home.path());
    assert_eq!(
        listed(&after, "sdk"),
        format!("sdk: {} (HTTP) - ✔ Connected", server.mcp_url()),
        "{after}\npatchbay authorize said:\n{}",
        done.stdout
    );
    SecretScan::new(sandbox.path())
        .issued_by("the SDK server", &server)
        .text("patchbay authorize (stdout)", &done.stdout)
        .text("patchbay authorize (stderr)", &done.stderr)
        .text("claude mcp list", format!("{before}{after}"))
        .assert_clean();
}

#[test]
fn the_refresher_renews_at_a_third_party_server_and_disconnect_revokes_there() {
    require_keychain!();
    let server = OAuthServer::start(REFRESH_SERVER);
    let sandbox = Sandbox::new(true);
    let catalog = write_catalog(
        &sandbox,
        serde_json::json!({ "sdk": { "type": "http", "url": server.mcp_url() } }),
    );
    assert_succeeded("sdk", &authorize_in_browser(&sandbox, &catalog, "sdk"));

    let catalog_arg = catalog.to_str().unwrap();
    let tokens = || {
        let core = sandbox.core(Some(catalog.clone()));
        let vault = core.vault();
        let row = vault.credential_rows().unwrap().remove(0);
        let t = vault
            .credential_tokens(&row.credential_key)
            .unwrap()
            .unwrap();
        (
            t.access_token.expose().to_string(),
            t.refresh_token.map(|r| r.expose().to_string()),
        )
    };
    let (access0, refresh0) = tokens();
    assert!(
        refresh0.is_some(),
        "the patched provider issues a refresh token"
    );

    // Forced: the token is an hour from expiry and was just obtained, so a pass would wait.
    let pass = sandbox.run(&["refresh", "--catalog", catalog_arg]);
    assert!(
        pass.status.success(),
        "{}",
        String::from_utf8_lossy(&pass.stderr)
    );
    assert_eq!(
        server.stdout_lines("REFRESHED"),
        0,
        "a pass must leave a fresh token alone"
    );
    let forced = sandbox.run(&["refresh", "sdk", "--catalog", catalog_arg]);
    let stdout = String::from_utf8_lossy(&forced.stdout).into_owned();
    assert!(
        forced.status.success() && stdout.starts_with("sdk: refreshed"),
        "{stdout}{}",
        String::from_utf8_lossy(&forced.stderr)
    );
    assert_eq!(server.stdout_lines("REFRESHED"), 1, "{}", server.output());
    let (access1, refresh1) = tokens();
    assert_ne!(access1, access0);
    assert_ne!(refresh1, refresh0, "the server rotated the refresh token");
    assert_eq!(server.initialize_status(&access1), "200");
    assert!(!stdout.contains(&access1) && !stdout.contains(refresh1.as_deref().unwrap()));

    let history = sandbox.run(&["history", "sdk", "--catalog", catalog_arg]);
    let history = String::from_utf8_lossy(&history.stdout).into_owned();
    assert!(history.contains("refreshed"), "{history}");

    let done = sandbox.run(&["disconnect", "sdk", "--catalog", catalog_arg]);
    let out = String::from_utf8_lossy(&done.stdout).into_owned();
    assert!(
        out.contains("The server revoked its tokens."),
        "{out}{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(
        server.stdout_lines("REVOKED refresh_token"),
        1,
        "{}",
        server.output()
    );
    assert_eq!(
        server.stdout_lines("REVOKED access_token"),
        1,
        "{}",
        server.output()
    );
    assert_eq!(server.stdout_lines("REUSE"), 0, "{}", server.output());
    // Refused (the example's introspection-backed verifier answers a revoked token with a
    // 500 rather than a 401, which is the SDK's business; what matters is that it is refused).
    assert_ne!(server.initialize_status(&access1), "200");
    let status = sandbox.run(&["status", "--json", "--catalog", catalog_arg]);
    assert_eq!(state_of(&json(&status), "sdk"), "needs_authorization");
    SecretScan::new(sandbox.path())
        .issued_by("the SDK server", &server)
        .output("patchbay refresh", &pass)
        .output("patchbay refresh sdk", &forced)
        .text("patchbay history", &history)
        .output("patchbay disconnect", &done)
        .output("patchbay status", &status)
        .assert_clean();
}

#[test]
fn a_refresh_claude_code_logs_as_rejected_retires_the_credential_everywhere() {
    require_keychain!();
    let server = OAuthServer::start(REFRESH_SERVER);
    let sandbox = Sandbox::new(true);
    let home = tempfile::tempdir().expect("tempdir");
    let (claude, catalog) = claude_code_with_sdk(&sandbox, &server);
    let catalog_arg = catalog.to_str().unwrap();
    assert_succeeded("sdk", &authorize_in_browser(&sandbox, &catalog, "sdk"));

    // The provider kills the refresh token (revoked at its endpoint), and Claude Code's copy of
    // the access token has lapsed, so Claude Code refreshes by itself and is refused.
    let (refresh_token, client_id) = {
        let core = sandbox.core(Some(catalog.clone()));
        let row = core.vault().credential_rows().unwrap().remove(0);
        let tokens = core
            .vault()
            .credential_tokens(&row.credential_key)
            .unwrap()
            .unwrap();
        (
            tokens.refresh_token.unwrap().expose().to_string(),
            row.client_id.unwrap(),
        )
    };
    let revoked = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "20",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
        ])
        .args(["--data-urlencode", &format!("token={refresh_token}")])
        .args(["--data-urlencode", &format!("client_id={client_id}")])
        .arg(format!("{}revoke", server.issuer()))
        .output()
        .expect("curl");
    assert_eq!(String::from_utf8_lossy(&revoked.stdout), "200");
    let store_path = claude.join(".credentials.json");
    let mut store: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&store_path).unwrap()).unwrap();
    let past = chrono::Utc::now().timestamp_millis() - 3_600_000;
    for entry in store["mcpOAuth"].as_object_mut().unwrap().values_mut() {
        entry["expiresAt"] = serde_json::json!(past);
    }
    std::fs::write(&store_path, store.to_string()).unwrap();

    let listed_now = claude_mcp_list_in(&sandbox.path().join("claude"), home.path());
    assert!(listed_now.contains("Needs authentication"), "{listed_now}");

    // The next refresh pass reads Claude Code's MCP log and retires the credential.
    let run = |args: &[&str]| {
        sandbox
            .command()
            .args(args)
            .env("HOME", home.path())
            .env("XDG_CACHE_HOME", home.path().join(".cache"))
            .output()
            .expect("run patchbay")
    };
    let pass = run(&["refresh", "--catalog", catalog_arg]);
    assert!(
        pass.status.success(),
        "{}{}",
        String::from_utf8_lossy(&pass.stdout),
        String::from_utf8_lossy(&pass.stderr)
    );
    let core = sandbox.core(Some(catalog.clone()));
    let row = core.vault().credential_rows().unwrap().remove(0);
    assert!(
        !row.has_refresh_token && row.is_expired(chrono::Utc::now()),
        "not retired: {row:?}\nlogs: {:?}\n{}",
        files_under(home.path()),
        files_under(home.path())
            .iter()
            .filter(|f| f.to_string_lossy().contains("mcp-logs"))
            .map(|f| std::fs::read_to_string(f).unwrap_or_default())
            .collect::<String>()
            .lines()
            .filter(|l| l.contains("efresh") || l.contains("rror"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let history =
        String::from_utf8_lossy(&run(&["history", "sdk", "--catalog", catalog_arg]).stdout)
            .into_owned();
    assert!(
        history.contains("retired") && history.contains("Token refresh failed with invalid_grant"),
        "{history}"
    );
    // Gone from Claude Code's store too, so the dead pair is never adopted back.
    let store: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&store_path).unwrap()).unwrap();
    assert!(
        store["mcpOAuth"].as_object().is_none_or(|m| m.is_empty()),
        "{store:#}"
    );
    let status = run(&["status", "--json", "--catalog", catalog_arg]);
    assert_eq!(state_of(&json(&status), "sdk"), "needs_reauth");
    // Patchbay itself never presented the dead token.
    assert_eq!(server.stdout_lines("REFRESHED"), 0);
    SecretScan::new(sandbox.path())
        .issued_by("the SDK server", &server)
        .output("patchbay refresh", &pass)
        .text("patchbay history", &history)
        .output("patchbay status", &status)
        .assert_clean();
}
