//! The gateway end to end, real parts on loopback: `patchbay gateway serve` as a process in front
//! of the MCP SDK's example OAuth server (tests/node/sdk-oauth-expiring-server.mjs: the rotating
//! refresh grant, and its access tokens lapse on "EXPIRE"), authorized through `patchbay
//! authorize` with the browser stand-in, and the MCP SDK's own client
//! (tests/node/gateway-client.mjs, `StreamableHTTPClientTransport`) listing and calling tools
//! through it with a gateway client's secret; the token lapses mid-session and calls keep working.
//! The gates: no secret or an unknown or revoked one is 401, a foreign `Host` or `Origin` 403, a
//! client limited to one connector 403 for another.

use patchbay_e2e::sdk_servers::{free_port, node_dir};
use patchbay_e2e::{require_keychain, Sandbox};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a server may take to listen, and one step of a client to answer.
const STARTUP: Duration = Duration::from_secs(30);
const STEP: Duration = Duration::from_secs(60);

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn listening(port: u16) -> bool {
    TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).is_ok()
}

/// Polls `done` until it holds or `limit` passes (then fails naming `what` with `context()`).
fn wait_for(
    limit: Duration,
    what: &str,
    mut done: impl FnMut() -> bool,
    context: impl Fn() -> String,
) {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            panic!("{what} did not happen within {limit:?}:\n{}", context());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// sdk-oauth-expiring-server.mjs `--oauth`, stdin kept for "EXPIRE"; killed on drop.
struct OAuthServer {
    child: Child,
    stdin: ChildStdin,
    logs: tempfile::TempDir,
    mcp_port: u16,
    auth_port: u16,
}

impl OAuthServer {
    fn start() -> OAuthServer {
        let (mcp_port, auth_port) = {
            let bind = || std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let (a, b) = (bind(), bind());
            (
                a.local_addr().unwrap().port(),
                b.local_addr().unwrap().port(),
            )
        };
        OAuthServer::start_on(mcp_port, auth_port, None)
    }

    /// On given ports; with `tokens`, the access tokens it issues outlive a restart.
    fn start_on(mcp_port: u16, auth_port: u16, tokens: Option<&Path>) -> OAuthServer {
        let logs = tempfile::tempdir().unwrap();
        let file = |name: &str| std::fs::File::create(logs.path().join(name)).unwrap();
        let mut child = Command::new("node")
            .current_dir(node_dir())
            .args(["sdk-oauth-expiring-server.mjs", "--oauth"])
            .env("MCP_PORT", mcp_port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string())
            .envs(tokens.map(|t| ("ACCESS_TOKENS_FILE", t.as_os_str())))
            .stdin(Stdio::piped())
            .stdout(file("stdout"))
            .stderr(file("stderr"))
            .spawn()
            .expect("start node (scripts/setup.sh installs it and tests/node)");
        let stdin = child.stdin.take().unwrap();
        let mut server = OAuthServer {
            child,
            stdin,
            logs,
            mcp_port,
            auth_port,
        };
        let deadline = Instant::now() + STARTUP;
        while !(listening(mcp_port) && listening(auth_port)) {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the SDK server exited ({status}):\n{}", server.output());
            }
            assert!(
                Instant::now() < deadline,
                "the SDK server did not listen within {STARTUP:?}:\n{}",
                server.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn output(&self) -> String {
        let read = |n: &str| std::fs::read_to_string(self.logs.path().join(n)).unwrap_or_default();
        format!("{}{}", read("stderr"), read("stdout"))
    }

    fn stdout_lines(&self, prefix: &str) -> usize {
        std::fs::read_to_string(self.logs.path().join("stdout"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with(prefix))
            .count()
    }

    /// Every access token issued so far lapses; returns once the server says so.
    fn expire_tokens(&mut self) {
        let before = self.stdout_lines("EXPIRED");
        writeln!(self.stdin, "EXPIRE").unwrap();
        wait_for(
            STEP,
            "EXPIRED",
            || self.stdout_lines("EXPIRED") > before,
            || self.output(),
        );
    }

    fn mcp_url(&self) -> String {
        format!("http://localhost:{}/mcp", self.mcp_port)
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = self.auth_port;
    }
}

/// `patchbay gateway serve --port PORT`, killed on drop.
struct Serving {
    child: Child,
    port: u16,
    logs: tempfile::TempDir,
}

impl Serving {
    fn start(sandbox: &Sandbox, catalog: &Path) -> Serving {
        let port = free_port();
        let logs = tempfile::tempdir().unwrap();
        let file = |name: &str| std::fs::File::create(logs.path().join(name)).unwrap();
        let child = sandbox
            .command()
            .args(["gateway", "serve", "--port", &port.to_string(), "--catalog"])
            .arg(catalog)
            .stdout(file("stdout"))
            .stderr(file("stderr"))
            .spawn()
            .expect("spawn patchbay gateway serve");
        let mut serving = Serving { child, port, logs };
        let deadline = Instant::now() + STARTUP;
        while !listening(port) {
            if let Ok(Some(status)) = serving.child.try_wait() {
                panic!("the gateway exited ({status}):\n{}", serving.output());
            }
            assert!(
                Instant::now() < deadline,
                "the gateway did not listen within {STARTUP:?}:\n{}",
                serving.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        serving
    }

    fn output(&self) -> String {
        let read = |n: &str| std::fs::read_to_string(self.logs.path().join(n)).unwrap_or_default();
        format!("{}{}", read("stdout"), read("stderr"))
    }

    fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/mcp/{name}", self.port)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `patchbay gateway client add LABEL --json [extra]`: the headers it prints.
fn add_client(sandbox: &Sandbox, label: &str, port: u16, extra: &[&str]) -> Value {
    let out = sandbox
        .command()
        .args([
            "gateway",
            "client",
            "add",
            label,
            "--json",
            "--port",
            &port.to_string(),
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "client add: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["url"], format!("http://127.0.0.1:{port}/mcp"));
    printed["headers"].clone()
}

/// One raw HTTP/1.1 request; returns the status code and the whole answer.
fn raw(port: u16, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(STEP)).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let mut request = format!("POST {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str(&format!(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {answer:?}"));
    (status, answer)
}

/// The SDK client (tests/node/gateway-client.mjs), one JSON command per line.
struct SdkClient {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl SdkClient {
    fn connect(url: &str, headers: &Value) -> (SdkClient, Value) {
        let mut child = Command::new("node")
            .current_dir(node_dir())
            .args(["gateway-client.mjs", url])
            .env("GATEWAY_HEADERS", headers.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node");
        let stdin = child.stdin.take().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut client = SdkClient {
            child,
            stdin,
            lines,
        };
        let first = client.next();
        (client, first)
    }

    fn next(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(STEP)
            .expect("the SDK client answered");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    fn ask(&mut self, command: Value) -> Value {
        writeln!(self.stdin, "{command}").unwrap();
        self.next()
    }
}

impl Drop for SdkClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `patchbay authorize sdk` with the browser stand-in (tests/support/follow-browser.sh).
fn authorize_sdk(sandbox: &Sandbox, catalog: &Path) {
    let path = std::env::join_paths(std::iter::once(tests_dir().join("support")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let authorized = sandbox
        .command()
        .args([
            "authorize",
            "sdk",
            "--port",
            &free_port().to_string(),
            "--catalog",
        ])
        .arg(catalog)
        .env("BROWSER", "follow-browser.sh")
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        authorized.status.success(),
        "authorize: {}{}",
        String::from_utf8_lossy(&authorized.stdout),
        String::from_utf8_lossy(&authorized.stderr)
    );
}

/// A catalog with the OAuth server as `sdk`.
fn sdk_catalog(sandbox: &Sandbox, server: &OAuthServer) -> PathBuf {
    sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": { "sdk": { "type": "http", "url": server.mcp_url() } } })
            .to_string(),
    )
}

fn text_of(result: &Value) -> String {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_sdk_client_lists_and_calls_tools_through_the_gateway_across_a_lapsed_token() {
    require_keychain!();
    let mut server = OAuthServer::start();
    let sandbox = Sandbox::new(true);
    let catalog = sdk_catalog(&sandbox, &server);
    authorize_sdk(&sandbox, &catalog);

    let gateway = Serving::start(&sandbox, &catalog);
    let headers = add_client(&sandbox, "sdk-e2e", gateway.port, &[]);
    let (mut client, connected) = SdkClient::connect(&gateway.url("sdk"), &headers);
    assert_eq!(
        connected["event"],
        "connected",
        "{connected}\n{}",
        gateway.output()
    );
    assert_eq!(connected["server"]["name"], "simple-streamable-http-server");
    assert!(
        connected["session"].is_string(),
        "Mcp-Session-Id passed through: {connected}"
    );

    let listed = client.ask(json!({ "op": "list" }));
    assert_eq!(listed["ok"], true, "{listed}");
    assert!(
        listed["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("greet")),
        "{listed}"
    );
    let called =
        client.ask(json!({ "op": "call", "name": "greet", "arguments": { "name": "Ada" } }));
    assert_eq!(called["ok"], true, "{called}");
    assert!(text_of(&called).contains("Ada"), "{called}");

    // Notifications stream through as they are sent, not all at once at the end.
    let streamed = client.ask(json!({ "op": "call", "name": "start-notification-stream",
        "arguments": { "interval": 150, "count": 4 } }));
    assert_eq!(streamed["ok"], true, "{streamed}");
    let times: Vec<u64> = streamed["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    assert_eq!(times.len(), 4, "every notification arrived: {streamed}");
    assert!(
        times[3] - times[0] >= 300,
        "three 150 ms intervals apart, so none was held back: {times:?}"
    );

    // Mid-session the access token lapses: the gateway renews it and replays the call.
    let refreshed_before = server.stdout_lines("REFRESHED");
    server.expire_tokens();
    let called =
        client.ask(json!({ "op": "call", "name": "greet", "arguments": { "name": "Grace" } }));
    assert_eq!(called["ok"], true, "{called}\n{}", gateway.output());
    assert!(text_of(&called).contains("Grace"), "{called}");
    assert_eq!(
        server.stdout_lines("REFRESHED"),
        refreshed_before + 1,
        "renewed once through the refresher: {}",
        server.output()
    );
    // And again, with the renewed token, without another renewal.
    let called =
        client.ask(json!({ "op": "call", "name": "greet", "arguments": { "name": "Alan" } }));
    assert_eq!(called["ok"], true, "{called}");
    assert_eq!(server.stdout_lines("REFRESHED"), refreshed_before + 1);

    // The calls reached the health board.
    let health = patchbay_check::HealthStore::open(&sandbox.path().join("health.sqlite")).unwrap();
    wait_for(
        STEP,
        "the calls on the health board",
        || {
            health
                .records("sdk")
                .map(|r| r.iter().filter(|c| c.ok).count() >= 4)
                .unwrap_or(false)
        },
        || format!("{:?}", health.records("sdk")),
    );

    let closed = client.ask(json!({ "op": "close" }));
    assert_eq!(closed["ok"], true, "{closed}");
    // The client never saw a token: its only credential is the gateway secret.
    assert!(
        !gateway.output().contains("Bearer "),
        "{}",
        gateway.output()
    );
}

#[test]
fn the_gates_refuse_missing_secrets_foreign_hosts_and_origins_and_other_connectors() {
    let sandbox = Sandbox::new(false);
    // Two connectors whose servers are down: the gates answer before anything is contacted, and
    // a request let through is the gateway's 502 with a JSON-RPC error.
    let down = free_port();
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": {
            "alpha": { "type": "http", "url": format!("http://127.0.0.1:{down}/mcp"), "headers": { "X-Api-Key": "k" } },
            "beta": { "type": "http", "url": format!("http://127.0.0.1:{down}/beta"), "headers": { "X-Api-Key": "k" } }
        } })
        .to_string(),
    );
    let gateway = Serving::start(&sandbox, &catalog);
    let port = gateway.port;
    let all = add_client(&sandbox, "all", port, &[]);
    let only = add_client(&sandbox, "only-alpha", port, &["--only", "alpha"]);
    let auth = |h: &Value| h["Authorization"].as_str().unwrap().to_owned();
    let (all, only) = (auth(&all), auth(&only));

    let (status, answer) = raw(port, "/mcp/alpha", &[]);
    assert_eq!(status, 401, "no secret: {answer}");
    let (status, _) = raw(port, "/mcp/alpha", &[("Authorization", "Bearer pbgw_0000")]);
    assert_eq!(status, 401, "an unknown secret");

    let (status, answer) = raw(port, "/mcp/alpha", &[("Authorization", &all)]);
    assert_eq!(status, 502, "let through, and the server is down: {answer}");
    assert!(
        answer.contains("\"id\":7") && answer.contains("alpha is unreachable"),
        "{answer}"
    );
    // The secret also works in its own header (for a client whose Authorization is taken).
    let secret = all.trim_start_matches("Bearer ");
    let (status, _) = raw(port, "/mcp/alpha", &[("X-Patchbay-Client", secret)]);
    assert_eq!(status, 502);

    // DNS rebinding: a page's own host name, or its origin.
    let (status, _) = raw(
        port,
        "/mcp/alpha",
        &[
            ("Authorization", &all),
            ("Host", &format!("evil.example:{port}")),
        ],
    );
    assert_eq!(status, 403, "a foreign Host");
    let (status, _) = raw(
        port,
        "/mcp/alpha",
        &[("Authorization", &all), ("Host", "127.0.0.1:1")],
    );
    assert_eq!(status, 403, "another port in Host");
    let (status, _) = raw(
        port,
        "/mcp/alpha",
        &[("Authorization", &all), ("Origin", "https://evil.example")],
    );
    assert_eq!(status, 403, "a foreign Origin");
    let (status, _) = raw(
        port,
        "/mcp/alpha",
        &[
            ("Authorization", &all),
            ("Host", &format!("localhost:{port}")),
            ("Origin", "http://localhost:6274"),
        ],
    );
    assert_eq!(status, 502, "a loopback Host and Origin pass");

    // A client limited to alpha.
    let (status, _) = raw(port, "/mcp/alpha", &[("Authorization", &only)]);
    assert_eq!(status, 502);
    let (status, answer) = raw(port, "/mcp/beta", &[("Authorization", &only)]);
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("only-alpha"), "{answer}");
    let (status, _) = raw(port, "/mcp/nonesuch", &[("Authorization", &all)]);
    assert_eq!(status, 404);

    // Revoked while the gateway runs: refused from the next request on.
    let revoked = sandbox.run(&["gateway", "client", "revoke", "all"]);
    assert!(revoked.status.success());
    let (status, _) = raw(port, "/mcp/alpha", &[("Authorization", &all)]);
    assert_eq!(status, 401, "a revoked secret");
    let (status, _) = raw(port, "/mcp/alpha", &[("Authorization", &only)]);
    assert_eq!(status, 502, "the other client still passes");
    // The gateway never logged a secret.
    assert!(!gateway.output().contains(secret), "{}", gateway.output());
}

/// How long one `claude mcp list` may take (it health-checks in well under a second).
const CLAUDE_MCP_LIST: Duration = Duration::from_secs(60);

#[test]
fn claude_code_lists_a_gateway_connector_as_connected() {
    require_keychain!();
    let server = OAuthServer::start();
    let sandbox = Sandbox::new(true);
    let catalog = sdk_catalog(&sandbox, &server);
    authorize_sdk(&sandbox, &catalog);
    let gateway = Serving::start(&sandbox, &catalog);
    let headers = add_client(&sandbox, "claude-code", gateway.port, &[]);

    // Claude Code (its own home in the sandbox) pointed at the gateway with the client header,
    // the way `claude mcp add --transport http gw URL --header ...` writes it. It holds no token.
    let claude = sandbox.path().join("claude-home");
    std::fs::create_dir_all(&claude).unwrap();
    let entry = json!({ "type": "http", "url": gateway.url("sdk"), "headers": headers });
    std::fs::write(
        claude.join(".claude.json"),
        json!({ "mcpServers": { "gw": entry } }).to_string(),
    )
    .unwrap();
    let bin = tests_dir().join("node/node_modules/@anthropic-ai/claude-code/bin/claude.exe");
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/setup.sh",
        bin.display()
    );
    let home = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let file = |name: &str| std::fs::File::create(logs.path().join(name)).unwrap();
    let read = |name: &str| std::fs::read_to_string(logs.path().join(name)).unwrap_or_default();
    let mut child = Command::new(bin)
        .args(["mcp", "list"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", &claude)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .current_dir(home.path())
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("start claude");
    let status = patchbay_e2e::wait_within(&mut child, CLAUDE_MCP_LIST, "claude mcp list", || {
        format!("stdout:\n{}\nstderr:\n{}", read("stdout"), read("stderr"))
    });
    assert!(status.success(), "{}{}", read("stdout"), read("stderr"));
    let list = read("stdout");
    let line = list
        .lines()
        .find(|l| l.starts_with("gw: "))
        .unwrap_or_else(|| panic!("no gw in `claude mcp list`:\n{list}"));
    assert_eq!(
        line,
        format!("gw: {} (HTTP) - ✔ Connected", gateway.url("sdk")),
        "{list}\n{}",
        gateway.output()
    );
    // Claude Code's files hold the gateway secret, never an upstream token.
    let stored = std::fs::read_to_string(claude.join(".claude.json")).unwrap();
    assert!(!stored.contains("access_token"), "{stored}");
}

#[test]
fn a_legacy_sse_connector_passes_through_with_its_endpoint_rewritten() {
    // The SDK's HTTP+SSE example as a connector; the SDK's SSE client through the gateway: the
    // stream's `endpoint` event must point back at the gateway for the client's messages to
    // reach the server (with the connector's credential), and the answers come on the stream.
    let server = patchbay_e2e::sdk_servers::SdkServer::sse();
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": { "legacy": { "type": "sse", "url": server.url(),
            "headers": { "X-Api-Key": "k" } } } })
        .to_string(),
    );
    let gateway = Serving::start(&sandbox, &catalog);
    let headers = add_client(&sandbox, "sse", gateway.port, &[]);
    let mut client = {
        let mut child = Command::new("node")
            .current_dir(node_dir())
            .args(["gateway-client.mjs", &gateway.url("legacy"), "--sse"])
            .env("GATEWAY_HEADERS", headers.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node");
        let stdin = child.stdin.take().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        SdkClient {
            child,
            stdin,
            lines,
        }
    };
    let connected = client.next();
    assert_eq!(
        connected["event"],
        "connected",
        "{connected}\n{}\n{}",
        gateway.output(),
        server.output()
    );
    let listed = client.ask(json!({ "op": "list" }));
    assert_eq!(listed["ok"], true, "{listed}");
    let tool = listed["tools"][0].as_str().unwrap().to_owned();
    assert_eq!(tool, "start-notification-stream", "{listed}");
    let called = client
        .ask(json!({ "op": "call", "name": tool, "arguments": { "interval": 10, "count": 2 } }));
    assert_eq!(called["ok"], true, "{called}");
    assert!(text_of(&called).contains("notifications"), "{called}");
    // A streamable-HTTP POST to a legacy connector is refused the way a legacy server refuses it.
    let (status, _) = raw(
        gateway.port,
        "/mcp/legacy",
        &[("Authorization", headers["Authorization"].as_str().unwrap())],
    );
    assert_eq!(status, 405);
    // The message path goes only to the connector's own server.
    let (status, _) = raw(
        gateway.port,
        "/mcp/legacy/message?to=%2F%2Fevil.example%2Fx",
        &[("Authorization", headers["Authorization"].as_str().unwrap())],
    );
    assert_eq!(status, 400);
    let closed = client.ask(json!({ "op": "close" }));
    assert_eq!(closed["ok"], true, "{closed}");
}

#[test]
fn calls_keep_working_when_the_server_restarts_mid_session() {
    require_keychain!();
    let tokens = tempfile::tempdir().unwrap();
    let tokens = tokens.path().join("tokens.json");
    let server = OAuthServer::start_on(free_port(), free_port(), Some(&tokens));
    let (mcp_port, auth_port) = (server.mcp_port, server.auth_port);
    let sandbox = Sandbox::new(true);
    let catalog = sdk_catalog(&sandbox, &server);
    authorize_sdk(&sandbox, &catalog);
    let gateway = Serving::start(&sandbox, &catalog);
    let headers = add_client(&sandbox, "restart", gateway.port, &[]);
    let (mut client, connected) = SdkClient::connect(&gateway.url("sdk"), &headers);
    assert_eq!(connected["event"], "connected", "{connected}");
    let greet = |who: &str| json!({ "op": "call", "name": "greet", "arguments": { "name": who } });
    let called = client.ask(greet("before"));
    assert_eq!(called["ok"], true, "{called}");

    // The server goes away and comes back on the same ports, its sessions forgotten (the token
    // it issued survives in its file).
    drop(server);
    let server = OAuthServer::start_on(mcp_port, auth_port, Some(&tokens));
    let called = client.ask(greet("after"));
    assert_eq!(
        called["ok"],
        true,
        "{called}\ngateway:\n{}\nserver:\n{}",
        gateway.output(),
        server.output()
    );
    assert!(text_of(&called).contains("after"), "{called}");
    assert!(
        gateway
            .output()
            .contains("the server lost the session; began it anew"),
        "{}",
        gateway.output()
    );
    let listed = client.ask(json!({ "op": "list" }));
    assert_eq!(listed["ok"], true, "{listed}");
}
