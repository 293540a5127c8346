//! The conformance matrix: Patchbay's OAuth client against independent authorization-server
//! implementations installed from the package registries (scripts/setup.sh installs them), each
//! run on 127.0.0.1 on free ports, with the `patchbay` CLI run as a process:
//!
//! | peer | what it is | where it comes from |
//! |---|---|---|
//! | `sdk` | the MCP TypeScript SDK's example server, its demo provider taught rotation | npm `@modelcontextprotocol/sdk`, tests/node/sdk-oauth-refresh-server.mjs |
//! | `fastmcp` | FastMCP's `InMemoryOAuthProvider` | PyPI `fastmcp`, tests/python/fastmcp_server.py |
//! | `oidc-provider` | panva's certified OpenID Provider, consent through its interaction API | npm `oidc-provider`, tests/node/oidc-provider-server.mjs |
//! | `authlib` | Authlib's RFC 6749/7636/7591/7009/7662 server pieces, FastMCP introspecting in front | PyPI `authlib`, tests/python/authlib_server.py |
//! | `django-oauth-toolkit` | django-oauth-toolkit's views on oauthlib, FastMCP introspecting in front | PyPI `django-oauth-toolkit`, tests/python/dot_server.py |
//! | `node-oauth2-server` | `@node-oauth/oauth2-server`, no metadata and no DCR: a pre-registered client | npm, tests/node/node-oauth2-server.mjs |
//!
//! For each: `patchbay authorize NAME` from a bare catalog entry (only the URL: discovery and
//! dynamic registration; oauth-clients.json where the server has no registration), with a
//! browser stand-in that follows redirects with a cookie jar (tests/support/cookie-browser.sh);
//! `patchbay check NAME` passes (the MCP server accepts the token); two `patchbay refresh NAME`
//! in a row, each rotating the refresh token (the second presents the rotated one: a rotating
//! server refuses a spent one); `patchbay disconnect NAME`, revoking where the server offers
//! revocation, after which the revoked refresh token is refused at the token endpoint (and the
//! access token at the MCP endpoint, where the server checks it statefully).
//!
//! Needs the real keychain (PATCHBAY_TEST_KEYCHAIN=1, as scripts/test.sh provides).

use patchbay_e2e::peers::{initialize_status, listening, tests_dir};
use patchbay_e2e::secret_scan::{
    read_issued_file, record_issued_module, Issuer, SecretScan, ISSUED_ENV,
};
use patchbay_e2e::{json, require_keychain, state_of, Sandbox};
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a peer may take to listen (FastMCP's imports take seconds on a loaded machine).
const STARTUP: Duration = Duration::from_secs(90);
/// How long one CLI command may take.
const COMMAND: Duration = Duration::from_secs(90);

/// `n` distinct free ports (all held at once while picked).
fn free_ports<const N: usize>() -> [u16; N] {
    let held: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    std::array::from_fn(|i| held[i].local_addr().unwrap().port())
}

fn python() -> PathBuf {
    let venv = tests_dir().join("python/.venv/bin/python");
    assert!(
        venv.is_file(),
        "{} is missing: run scripts/setup.sh (it creates the venv with the pinned Python peers)",
        venv.display()
    );
    venv
}

fn node_dir() -> PathBuf {
    let dir = tests_dir().join("node");
    assert!(
        dir.join("node_modules/oidc-provider").is_dir(),
        "tests/node/node_modules is incomplete: run scripts/setup.sh (it runs `npm ci` in tests/node)"
    );
    dir
}

/// How the CLI gets its client at this peer.
enum ClientSetup {
    /// Discovery and dynamic registration from the bare URL.
    Dynamic,
    /// A confidential client in the user's oauth-clients.json: for a server without
    /// registration, with both endpoints (it publishes no metadata); or a client an administrator
    /// registered, endpoints discovered. Its redirect fixes the receiver's port.
    PreRegistered {
        client_id: String,
        client_secret: String,
        /// Authorization and token endpoints, when the server has no metadata.
        endpoints: Option<(String, String)>,
        receiver_port: u16,
    },
}

/// What the peer does with Patchbay's revocation (RFC 7009) on disconnect.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Revocation {
    /// It revokes: the refresh token is refused afterwards.
    Revokes,
    /// It offers an endpoint that refuses a public client's request with this HTTP status
    /// (FastMCP 4.2.3 through the Python MCP SDK 2.3.0: its RevocationRequest model requires a
    /// `client_secret` field; python-sdk issue #3508). The token stays live at the server.
    RefusesPublicClients(&'static str),
    /// It offers no revocation endpoint (and no metadata to find one in).
    None,
}

/// A running peer, killed on drop. Its output goes to files outside the data directory.
struct Peer {
    name: &'static str,
    child: Child,
    logs: tempfile::TempDir,
    mcp_url: String,
    client: ClientSetup,
    revocation: Revocation,
    /// The client authentication the grant must end up with (the one the server accepts).
    auth_method: &'static str,
    /// It checks access tokens statefully (opaque tokens or introspection), so a revoked access
    /// token is refused at once; JWTs checked by signature stay valid until they expire.
    stateful_access_tokens: bool,
    /// A Node peer: tests/node/record-issued.mjs writes down what it issues.
    records_issued: bool,
}

impl Issuer for Peer {
    fn issued(&self) -> Vec<(String, String)> {
        read_issued_file(&self.logs.path().join("issued.jsonl"))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Peer {
    fn spawn(
        name: &'static str,
        mut cmd: Command,
        mcp_url: String,
        client: ClientSetup,
        (revocation, auth_method): (Revocation, &'static str),
        stateful_access_tokens: bool,
        ready: &[u16],
    ) -> Peer {
        let logs = tempfile::tempdir().expect("tempdir");
        let file = |n: &str| std::fs::File::create(logs.path().join(n)).expect("log file");
        // A Node peer writes down what it issues (tests/node/record-issued.mjs); the Python
        // peers' secrets come from what the test reads back from the vault.
        let records_issued = cmd.get_program() == "node";
        if records_issued {
            let mut import = std::ffi::OsString::from("--import=");
            import.push(record_issued_module());
            cmd.env("NODE_OPTIONS", import)
                .env(ISSUED_ENV, logs.path().join("issued.jsonl"));
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file("stdout"))
            .stderr(file("stderr"))
            .spawn()
            .unwrap_or_else(|e| panic!("start the {name} peer: {e}"));
        let mut peer = Peer {
            name,
            child,
            logs,
            mcp_url,
            client,
            revocation,
            auth_method,
            stateful_access_tokens,
            records_issued,
        };
        peer.wait_listening(ready);
        peer
    }

    fn wait_listening(&mut self, ports: &[u16]) {
        let deadline = Instant::now() + STARTUP;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                panic!(
                    "the {} peer exited ({status}) before listening:\n{}",
                    self.name,
                    self.output()
                );
            }
            if ports.iter().all(|p| listening(*p)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the {} peer did not listen on {ports:?} within {STARTUP:?}:\n{}",
                self.name,
                self.output()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn output(&self) -> String {
        let read = |n: &str| std::fs::read_to_string(self.logs.path().join(n)).unwrap_or_default();
        format!("{}{}", read("stderr"), read("stdout"))
    }

    /// The HTTP status the MCP endpoint answers an `initialize` carrying `token` with.
    fn initialize_status(&self, token: &str) -> String {
        initialize_status(&self.mcp_url, token)
    }
}

fn sdk() -> Peer {
    let [mcp, auth] = free_ports::<2>();
    let mut cmd = Command::new("node");
    cmd.current_dir(node_dir())
        .args(["sdk-oauth-refresh-server.mjs", "--oauth"])
        .env("MCP_PORT", mcp.to_string())
        .env("MCP_AUTH_PORT", auth.to_string());
    // The SDK names its resource with `localhost`.
    let url = format!("http://localhost:{mcp}/mcp");
    let revocation = (Revocation::Revokes, "none");
    Peer::spawn(
        "sdk",
        cmd,
        url,
        ClientSetup::Dynamic,
        revocation,
        true,
        &[mcp, auth],
    )
}

fn fastmcp() -> Peer {
    let [port] = free_ports::<1>();
    let mut cmd = Command::new(python());
    cmd.current_dir(tests_dir().join("python"))
        .arg("fastmcp_server.py")
        .arg(port.to_string());
    let url = format!("http://127.0.0.1:{port}/mcp");
    let revocation = (Revocation::RefusesPublicClients("400"), "none");
    Peer::spawn(
        "fastmcp",
        cmd,
        url,
        ClientSetup::Dynamic,
        revocation,
        true,
        &[port],
    )
}

/// FastMCP with a confidential client an administrator registered for `client_secret_post`
/// only; its metadata lists basic too, so Patchbay starts with basic, is refused (401
/// invalid_client), must try post once, and keep post for the refreshes and the revocation.
fn fastmcp_post_only_client() -> Peer {
    let [port, receiver] = free_ports::<2>();
    let client_id = "admin-registered".to_string();
    let client_secret = format!("{:032x}", rand_u128());
    let mut cmd = Command::new(python());
    cmd.current_dir(tests_dir().join("python"))
        .arg("fastmcp_server.py")
        .arg(port.to_string())
        .args([&client_id, &client_secret, "client_secret_post"])
        .arg(format!("http://127.0.0.1:{receiver}/callback"));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let client = ClientSetup::PreRegistered {
        client_id,
        client_secret,
        endpoints: None,
        receiver_port: receiver,
    };
    // With the secret in the form, FastMCP's revocation endpoint works.
    let revocation = (Revocation::Revokes, "client_secret_post");
    Peer::spawn("fastmcp-post", cmd, url, client, revocation, true, &[port])
}

fn oidc_provider() -> Peer {
    let [auth, mcp] = free_ports::<2>();
    let mut cmd = Command::new("node");
    cmd.current_dir(node_dir())
        .arg("oidc-provider-server.mjs")
        .args([auth.to_string(), mcp.to_string()]);
    let url = format!("http://127.0.0.1:{mcp}/mcp");
    // JWT access tokens, checked by signature: revocation reaches the refresh token only.
    let revocation = (Revocation::Revokes, "none");
    let client = ClientSetup::Dynamic;
    Peer::spawn(
        "oidc-provider",
        cmd,
        url,
        client,
        revocation,
        false,
        &[auth, mcp],
    )
}

fn authlib() -> Peer {
    let [auth, mcp] = free_ports::<2>();
    let mut cmd = Command::new(python());
    cmd.current_dir(tests_dir().join("python"))
        .arg("authlib_server.py")
        .args([auth.to_string(), mcp.to_string()]);
    let url = format!("http://127.0.0.1:{mcp}/mcp");
    // Authlib hands out a secret with the public registration: it must not be used.
    let revocation = (Revocation::Revokes, "none");
    Peer::spawn(
        "authlib",
        cmd,
        url,
        ClientSetup::Dynamic,
        revocation,
        true,
        &[auth, mcp],
    )
}

fn django_oauth_toolkit() -> Peer {
    let [auth, mcp] = free_ports::<2>();
    let mut cmd = Command::new(python());
    cmd.current_dir(tests_dir().join("python"))
        .arg("dot_server.py")
        .args([auth.to_string(), mcp.to_string()]);
    let url = format!("http://127.0.0.1:{mcp}/mcp");
    let revocation = (Revocation::Revokes, "none");
    let client = ClientSetup::Dynamic;
    Peer::spawn(
        "django-oauth-toolkit",
        cmd,
        url,
        client,
        revocation,
        true,
        &[auth, mcp],
    )
}

fn node_oauth2_server() -> Peer {
    let [auth, mcp, receiver] = free_ports::<3>();
    let client_id = "patchbay-conformance".to_string();
    let client_secret = format!("{:032x}", rand_u128());
    let redirect = format!("http://127.0.0.1:{receiver}/callback");
    let mut cmd = Command::new("node");
    cmd.current_dir(node_dir())
        .arg("node-oauth2-server.mjs")
        .args([auth.to_string(), mcp.to_string()])
        .args([&client_id, &client_secret, &redirect]);
    let url = format!("http://127.0.0.1:{mcp}/mcp");
    let client = ClientSetup::PreRegistered {
        client_id,
        client_secret,
        endpoints: Some((
            format!("http://127.0.0.1:{auth}/authorize"),
            format!("http://127.0.0.1:{auth}/token"),
        )),
        receiver_port: receiver,
    };
    let revocation = (Revocation::None, "client_secret_basic");
    Peer::spawn(
        "node-oauth2-server",
        cmd,
        url,
        client,
        revocation,
        true,
        &[auth, mcp],
    )
}

/// Not for cryptography: a distinct client secret per run (std's randomly keyed hasher).
fn rand_u128() -> u128 {
    use std::hash::{BuildHasher, Hasher};
    let half = || {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.finish() as u128
    };
    (half() << 64) | half()
}

/// application/x-www-form-urlencoded, for values in a form body or a Basic header (RFC 6749
/// §2.3.1).
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Runs `cmd` to its end within [`COMMAND`], killing it past that.
fn run_bounded(mut cmd: Command, what: &str) -> Output {
    patchbay_e2e::output_within(&mut cmd, COMMAND, what)
}

fn text(out: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The access and refresh tokens the vault holds for the sandbox's one credential, and its grant.
fn stored(sandbox: &Sandbox, catalog: &Path) -> (String, Option<String>, patchbay_vault::Grant) {
    let core = sandbox.core(Some(catalog.to_path_buf()));
    let vault = core.vault();
    let rows = vault.credential_rows().expect("credential rows");
    assert_eq!(rows.len(), 1, "{rows:?}");
    let key = &rows[0].credential_key;
    let tokens = vault.credential_tokens(key).unwrap().expect("tokens");
    let grant = vault.grant(key).unwrap().expect("a grant");
    (
        tokens.access_token.expose().to_string(),
        tokens.refresh_token.map(|r| r.expose().to_string()),
        grant,
    )
}

/// What the token endpoint answers a refresh grant presenting `refresh_token` as the grant's
/// client: `(HTTP status, body)`. The secrets go through curl's stdin.
fn present_refresh_token(grant: &patchbay_vault::Grant, refresh_token: &str) -> (String, String) {
    let mut config = String::new();
    let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    config.push_str(&format!(
        "data = \"grant_type=refresh_token&refresh_token={}&client_id={}\"\n",
        enc(refresh_token),
        enc(&grant.client_id)
    ));
    match (&grant.client_secret, grant.token_auth_method.as_str()) {
        (Some(secret), "client_secret_basic") => config.push_str(&format!(
            "user = \"{}:{}\"\n",
            quote(&enc(&grant.client_id)),
            quote(&enc(secret.expose()))
        )),
        (Some(secret), "client_secret_post") => config.push_str(&format!(
            "data = \"client_secret={}\"\n",
            enc(secret.expose())
        )),
        _ => {}
    }
    if let Some(resource) = &grant.resource {
        config.push_str(&format!("data = \"resource={}\"\n", enc(resource)));
    }
    let mut curl = Command::new("curl")
        .args(["-sS", "--max-time", "20", "-K", "-", "-w", "\n%{http_code}"])
        .arg(&grant.token_endpoint)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl");
    curl.stdin
        .take()
        .unwrap()
        .write_all(config.as_bytes())
        .unwrap();
    let out = String::from_utf8_lossy(&curl.wait_with_output().unwrap().stdout).into_owned();
    let (body, status) = out.rsplit_once('\n').unwrap_or(("", &out));
    (status.to_string(), body.to_string())
}

/// One row of the matrix: authorize, check, refresh twice with rotation, disconnect with
/// revocation. Says what it saw on stderr (`--nocapture` shows it).
fn conform(peer: Peer) {
    let name = peer.name;
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.write(
        "catalog.json",
        &serde_json::json!({ "mcpServers": { name: { "type": "http", "url": peer.mcp_url } } })
            .to_string(),
    );
    let catalog_arg = catalog.to_str().unwrap().to_string();
    // What this row's secret scan looks for beyond what a Node peer recorded: every token and
    // client secret the test read back, and every output of the CLI.
    let mut scan = SecretScan::new(sandbox.path());
    let receiver_port = match &peer.client {
        ClientSetup::Dynamic => free_ports::<1>()[0],
        ClientSetup::PreRegistered {
            client_id,
            client_secret,
            endpoints,
            receiver_port,
        } => {
            let mut entry = serde_json::json!({
                "clientId": client_id,
                "clientSecret": client_secret,
            });
            if let Some((authorization, token)) = endpoints {
                entry["authorizationEndpoint"] = authorization.as_str().into();
                entry["tokenEndpoint"] = token.as_str().into();
            }
            let clients = sandbox.write(
                "oauth-clients.json",
                &serde_json::json!({ name: entry }).to_string(),
            );
            scan = scan
                .secret("the pre-registered client secret", client_secret)
                .excluding(
                    clients,
                    "the user's oauth-clients.json, written by the test: the user's own file \
                 holding the secret of the client they registered",
                );
            *receiver_port
        }
    };
    let cli = |args: &[&str]| {
        let mut cmd = sandbox.command();
        cmd.args(args).args(["--catalog", &catalog_arg]);
        cmd
    };
    let fail = |what: &str, out: &Output| -> String {
        format!(
            "{name}: `{what}` did not do what it should (it exited with {})\n{}\npeer output:\n{}",
            out.status,
            text(out),
            peer.output()
        )
    };

    // Authorize from the bare entry, the browser stand-in approving.
    let support = tests_dir().join("support");
    let path = std::env::join_paths(std::iter::once(support).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let mut cmd = cli(&["authorize", name, "--port", &receiver_port.to_string()]);
    cmd.env("BROWSER", "cookie-browser.sh").env("PATH", path);
    let out = run_bounded(cmd, "patchbay authorize");
    assert!(out.status.success(), "{}", fail("authorize", &out));
    scan = scan.output("patchbay authorize", &out);
    let (access0, refresh0, grant) = stored(&sandbox, &catalog);
    let refresh0 = refresh0.unwrap_or_else(|| panic!("{name} issued no refresh token"));
    // The recorder saw what the vault holds (else the scan would look for nothing of it).
    if peer.records_issued {
        let issued = peer.issued();
        assert!(
            issued.iter().any(|(_, v)| *v == access0) && issued.iter().any(|(_, v)| *v == refresh0),
            "{name}: tests/node/record-issued.mjs did not record the tokens it issued: {:?}",
            issued.iter().map(|(l, _)| l).collect::<Vec<_>>()
        );
    }
    scan = scan
        .secret("the first access token", &access0)
        .secret("the first refresh token", &refresh0);
    if let Some(secret) = &grant.client_secret {
        scan = scan.secret("the registered client secret", secret.expose());
    }
    assert_eq!(
        grant.token_auth_method, peer.auth_method,
        "{name}: the grant keeps the client authentication the server accepts"
    );
    let granted = {
        let core = sandbox.core(Some(catalog.clone()));
        let row = core.vault().credential_rows().unwrap().remove(0);
        (row.scope, row.expires_at)
    };
    eprintln!(
        "{name}: authorized; client auth {}, scope asked {:?}, held {:?}, resource {:?}, access token {}, expires {:?}",
        grant.token_auth_method,
        grant.scopes,
        granted.0,
        grant.resource,
        if access0.split('.').count() == 3 { "a JWT" } else { "opaque" },
        granted.1.map(|t| t - chrono::Utc::now()),
    );

    // The MCP server accepts the token.
    let check = |what: &str| -> Output {
        let out = run_bounded(cli(&["check", name]), "patchbay check");
        assert!(out.status.success(), "{}", fail(what, &out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.starts_with(&format!("{name}: ok over streamable-http"))
                && stdout.contains("  tools: ")
                && !stdout.contains("tools: none"),
            "{name}: {stdout}"
        );
        out
    };
    scan = scan.output("patchbay check", &check("check"));

    // Two refreshes in a row, each rotating the refresh token.
    let mut previous = (access0.clone(), refresh0.clone());
    for round in 1..=2 {
        let out = run_bounded(cli(&["refresh", name]), "patchbay refresh");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success() && stdout.starts_with(&format!("{name}: refreshed")),
            "{}",
            fail(&format!("refresh #{round}"), &out)
        );
        scan = scan.output(&format!("patchbay refresh #{round}"), &out);
        let (access, refresh, _) = stored(&sandbox, &catalog);
        let refresh = refresh.unwrap_or_else(|| panic!("{name}: refresh #{round} lost it"));
        scan = scan
            .secret(&format!("access token #{round}"), &access)
            .secret(&format!("refresh token #{round}"), &refresh);
        assert_ne!(
            access, previous.0,
            "{name}: refresh #{round}: same access token"
        );
        assert_ne!(
            refresh, previous.1,
            "{name}: refresh #{round}: the refresh token was not rotated"
        );
        assert_eq!(
            peer.initialize_status(&access),
            "200",
            "{name}: the MCP server refuses the token of refresh #{round}:\n{}",
            peer.output()
        );
        previous = (access, refresh);
    }
    scan = scan.output("patchbay check, again", &check("check after the refreshes"));
    let (last_access, last_refresh) = previous;

    // Disconnect, revoking where the server offers it.
    let (_, _, grant) = stored(&sandbox, &catalog);
    let out = run_bounded(cli(&["disconnect", name]), "patchbay disconnect");
    assert!(out.status.success(), "{}", fail("disconnect", &out));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    match peer.revocation {
        Revocation::Revokes => {
            // oidc-provider revokes the refresh token (and with it the grant) and answers the
            // JWT access token's revocation with `400 unsupported_token_type` (RFC 7009 §2.2.1:
            // it cannot revoke that kind of token, which expires by itself): said as it is, the
            // access token named with the time it stays valid until.
            if peer.stateful_access_tokens {
                assert!(
                    said.contains("The server revoked its tokens."),
                    "{}",
                    fail("disconnect", &out)
                );
            } else {
                assert!(
                    said.contains("cannot revoke the access token (unsupported_token_type): it stays valid at the server until 20")
                        && said.contains("The refresh token was revoked")
                        && !said.contains("The server revoked its tokens."),
                    "{}",
                    fail("disconnect", &out)
                );
                // And it does: the message is the truth.
                assert_eq!(
                    peer.initialize_status(&last_access),
                    "200",
                    "{name}: the unrevocable access token was refused after all"
                );
            }
            let (status, body) = present_refresh_token(&grant, &last_refresh);
            assert!(
                status.starts_with('4') && body.contains("invalid_grant"),
                "{name}: the revoked refresh token was not refused: {status} {body}"
            );
            if peer.stateful_access_tokens {
                // Refused (the SDK's example answers a revoked token with a 500, not a 401).
                assert_ne!(
                    peer.initialize_status(&last_access),
                    "200",
                    "{name}: the revoked access token still works"
                );
            }
        }
        Revocation::RefusesPublicClients(http_status) => {
            // Said as it is, and the tokens are gone from this machine all the same.
            assert!(
                said.contains("did not confirm the revocation") && said.contains(http_status),
                "{}",
                fail("disconnect", &out)
            );
            // Still live at the server: when this fails, the peer has fixed its revocation
            // endpoint; make it Revocation::Revokes and update docs/compatibility.md.
            let (status, body) = present_refresh_token(&grant, &last_refresh);
            assert_eq!(status, "200", "{name}: {body}");
        }
        Revocation::None => {
            // Nothing was sent, so nothing was refused: no metadata means no revocation endpoint.
            assert!(
                said.contains("The server offers no revocation"),
                "{}",
                fail("disconnect", &out)
            );
        }
    }
    let status_out = sandbox.run(&["status", "--json", "--catalog", &catalog_arg]);
    let status = json(&status_out);
    assert_eq!(state_of(&status, name), "needs_authorization", "{status:#}");
    scan.issued_by(name, &peer)
        .output("patchbay disconnect", &out)
        .output("patchbay status", &status_out)
        .assert_clean();
    eprintln!("{name}: passed\n{said}");
}

#[test]
fn mcp_typescript_sdk() {
    require_keychain!();
    conform(sdk());
}

#[test]
fn fastmcp_in_memory_provider() {
    require_keychain!();
    conform(fastmcp());
}

#[test]
fn fastmcp_confidential_client_accepted_only_by_post() {
    require_keychain!();
    conform(fastmcp_post_only_client());
}

#[test]
fn panva_oidc_provider() {
    require_keychain!();
    conform(oidc_provider());
}

#[test]
fn authlib_server_pieces() {
    require_keychain!();
    conform(authlib());
}

#[test]
fn django_oauth_toolkit_on_oauthlib() {
    require_keychain!();
    conform(django_oauth_toolkit());
}

#[test]
fn node_oauth2_server_with_a_pre_registered_client() {
    require_keychain!();
    conform(node_oauth2_server());
}
