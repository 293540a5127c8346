//! The gateway's aggregate endpoint (`/mcp`) end to end, real parts on loopback: two MCP servers
//! behind `patchbay gateway serve` — the MCP SDK's example OAuth server
//! (tests/node/sdk-oauth-expiring-server.mjs, authorized through `patchbay authorize` with the
//! browser stand-in) as `sdk`, and the SDK's plain example (tests/node/sdk-example-server.mjs) as
//! `demo` — and the MCP SDK's own client (tests/node/aggregate-client.mjs,
//! `StreamableHTTPClientTransport` with a gateway client's secret) seeing both as one server:
//! tools and prompts named `<connector>__<name>`, resources merged, calls reaching each. Then
//! `demo` stops: its tools stay listed and a call says "unavailable, retrying" within a bound;
//! it starts again on the same port and the next call works; so does the next call after the
//! gateway itself restarts mid-session. The gates hold for `/mcp` too, and
//! Claude Code pointed at `/mcp` lists it Connected.

use patchbay_e2e::sdk_servers::{free_port, node_dir, SdkServer};
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
/// How soon a call to a connector that is away must say so (a refused connection is instant
/// on loopback; the gateway must not wait out its retries or the connector's timeout).
const UNAVAILABLE_WITHIN_MS: u64 = 5_000;

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn listening(port: u16) -> bool {
    TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).is_ok()
}

/// sdk-oauth-expiring-server.mjs `--oauth` on free ports; killed on drop.
struct OAuthServer {
    child: Child,
    stdin: ChildStdin,
    logs: tempfile::TempDir,
    mcp_port: u16,
}

impl OAuthServer {
    fn start() -> OAuthServer {
        let (mcp_port, auth_port) = (free_port(), free_port());
        let logs = tempfile::tempdir().unwrap();
        let file = |name: &str| std::fs::File::create(logs.path().join(name)).unwrap();
        let mut child = Command::new("node")
            .current_dir(node_dir())
            .args(["sdk-oauth-expiring-server.mjs", "--oauth"])
            .env("MCP_PORT", mcp_port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string())
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

    fn mcp_url(&self) -> String {
        format!("http://localhost:{}/mcp", self.mcp_port)
    }

    fn stdout_lines(&self, prefix: &str) -> usize {
        std::fs::read_to_string(self.logs.path().join("stdout"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with(prefix))
            .count()
    }

    /// Every access token issued so far lapses ("EXPIRE"); returns once the server says so.
    fn expire_tokens(&mut self) {
        let before = self.stdout_lines("EXPIRED");
        writeln!(self.stdin, "EXPIRE").unwrap();
        let deadline = Instant::now() + STEP;
        while self.stdout_lines("EXPIRED") == before {
            assert!(Instant::now() < deadline, "no EXPIRED:\n{}", self.output());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
        Serving::start_on(sandbox, catalog, free_port())
    }

    fn start_on(sandbox: &Sandbox, catalog: &Path, port: u16) -> Serving {
        let logs = tempfile::tempdir().unwrap();
        let file = |name: &str| std::fs::File::create(logs.path().join(name)).unwrap();
        let child = sandbox
            .command()
            .args(["gateway", "serve", "--port", &port.to_string(), "--catalog"])
            .arg(catalog)
            .env("RUST_LOG", "patchbay_gateway=info")
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

    /// The aggregate endpoint.
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `patchbay gateway client add LABEL --json [extra]`: the headers it prints, after checking
/// that the URL it prints is the aggregate endpoint.
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

/// One raw HTTP/1.1 request to the gateway; returns the status code and the whole answer.
fn raw(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(STEP)).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
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

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// The SDK client (tests/node/aggregate-client.mjs), one JSON command per line.
struct SdkClient {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl SdkClient {
    fn connect(url: &str, headers: &Value) -> (SdkClient, Value) {
        let mut child = Command::new("node")
            .current_dir(node_dir())
            .args(["aggregate-client.mjs", url])
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

    fn tool_names(&mut self) -> Vec<String> {
        let listed = self.ask(json!({ "op": "list" }));
        assert_eq!(listed["ok"], true, "{listed}");
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
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

fn text_of(result: &Value) -> String {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn greet(tool: &str, who: &str) -> Value {
    json!({ "op": "call", "name": tool, "arguments": { "name": who } })
}

#[test]
fn the_sdk_client_sees_every_connector_as_one_server_and_an_absent_one_stays_listed() {
    require_keychain!();
    let mut oauth = OAuthServer::start();
    let demo = SdkServer::streamable_http();
    let demo_port = demo.port;
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": {
            "sdk": { "type": "http", "url": oauth.mcp_url(), "title": "SDK OAuth" },
            "demo": { "type": "http", "url": demo.url(), "title": "Demo", "headers": { "X-Api-Key": "k" } }
        } })
        .to_string(),
    );
    authorize_sdk(&sandbox, &catalog);
    let gateway = Serving::start(&sandbox, &catalog);
    let headers = add_client(&sandbox, "aggregate-e2e", gateway.port, &[]);
    let (mut client, connected) = SdkClient::connect(&gateway.url(), &headers);
    assert_eq!(
        connected["event"],
        "connected",
        "{connected}\n{}",
        gateway.output()
    );
    assert_eq!(connected["server"]["name"], "patchbay");
    assert!(connected["session"].is_string(), "{connected}");
    for capability in ["tools", "resources", "prompts"] {
        assert!(
            connected["capabilities"][capability].is_object(),
            "{connected}"
        );
    }

    // Every connector's tools, named <connector>__<tool>, described with the connector's title.
    let listed = client.ask(json!({ "op": "list" }));
    assert_eq!(listed["ok"], true, "{listed}\n{}", gateway.output());
    let tools = listed["tools"].as_array().unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed: {listed}\n{}", gateway.output()))
    };
    assert_eq!(
        tool("sdk__greet")["description"],
        "SDK OAuth: A simple greeting tool"
    );
    assert_eq!(
        tool("demo__greet")["description"],
        "Demo: A simple greeting tool"
    );
    assert_eq!(tool("demo__greet")["title"], "Demo: Greeting Tool");
    tool("sdk__multi-greet");
    assert!(
        tools.iter().all(|t| {
            let name = t["name"].as_str().unwrap();
            name.starts_with("sdk__") || name.starts_with("demo__")
        }),
        "{listed}"
    );

    // A call reaches each connector with the tool's own name.
    let called = client.ask(greet("sdk__greet", "Ada"));
    assert_eq!(called["ok"], true, "{called}\n{}", gateway.output());
    assert_eq!(text_of(&called), "Hello, Ada!", "{called}");
    let called = client.ask(greet("demo__greet", "Grace"));
    assert_eq!(called["ok"], true, "{called}");
    assert_eq!(text_of(&called), "Hello, Grace!", "{called}");

    // The access token lapses mid-session: the gateway renews it once and replays the call.
    let refreshed = oauth.stdout_lines("REFRESHED");
    oauth.expire_tokens();
    let called = client.ask(greet("sdk__greet", "Lovelace"));
    assert_eq!(
        text_of(&called),
        "Hello, Lovelace!",
        "{called}\n{}",
        gateway.output()
    );
    assert_eq!(
        oauth.stdout_lines("REFRESHED"),
        refreshed + 1,
        "renewed once through the refresher: {}",
        oauth.output()
    );

    // Prompts are named like tools; resources keep their URIs (both servers offer the same
    // ones: listed once, read from the first connector).
    let prompts = client.ask(json!({ "op": "prompts" }));
    assert_eq!(prompts["ok"], true, "{prompts}");
    let prompt_names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        prompt_names.contains(&"sdk__greeting-template")
            && prompt_names.contains(&"demo__greeting-template"),
        "{prompts}"
    );
    let prompt = client.ask(json!({ "op": "prompt", "name": "demo__greeting-template",
        "arguments": { "name": "Alan" } }));
    assert_eq!(prompt["ok"], true, "{prompt}");
    assert!(
        prompt["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Alan"),
        "{prompt}"
    );
    let resources = client.ask(json!({ "op": "resources" }));
    assert_eq!(resources["ok"], true, "{resources}");
    let uris: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    let greeting = "https://example.com/greetings/default";
    assert_eq!(
        uris.iter().filter(|u| **u == greeting).count(),
        1,
        "{resources}"
    );
    let read = client.ask(json!({ "op": "read", "uri": greeting }));
    assert_eq!(read["ok"], true, "{read}");
    assert_eq!(read["result"]["contents"][0]["text"], "Hello, world!");

    // `demo` goes away: its tools stay listed, and a call says it is unavailable at once.
    drop(demo);
    let names = client.tool_names();
    assert!(
        names.contains(&"demo__greet".to_owned()) && names.contains(&"sdk__greet".to_owned()),
        "{names:?}"
    );
    let away = client.ask(greet("demo__greet", "Nobody"));
    assert_eq!(
        away["ok"], true,
        "a tool error, not a protocol error: {away}"
    );
    assert_eq!(away["result"]["isError"], true, "{away}");
    assert!(
        text_of(&away).starts_with("demo is unavailable, retrying"),
        "{away}"
    );
    assert!(
        away["ms"].as_u64().unwrap() < UNAVAILABLE_WITHIN_MS,
        "answered within {UNAVAILABLE_WITHIN_MS} ms: {away}"
    );
    // The other connector is untouched.
    let called = client.ask(greet("sdk__greet", "still"));
    assert_eq!(text_of(&called), "Hello, still!", "{called}");

    // It comes back on the same port (its sessions forgotten): the next call works.
    let demo = SdkServer::start("simpleStreamableHttp.js", &[], demo_port, false);
    let called = client.ask(greet("demo__greet", "again"));
    assert_eq!(
        text_of(&called),
        "Hello, again!",
        "{called}\ngateway:\n{}\nserver:\n{}",
        gateway.output(),
        demo.output()
    );
    assert!(
        gateway
            .output()
            .contains("the server lost the aggregate's session; beginning it again"),
        "{}",
        gateway.output()
    );

    // The gateway itself restarts (the app was restarted): the client's session goes on, and
    // the names resolve again from fresh lists.
    let port = gateway.port;
    drop(gateway);
    let gateway = Serving::start_on(&sandbox, &catalog, port);
    let called = client.ask(greet("demo__greet", "anew"));
    assert_eq!(
        text_of(&called),
        "Hello, anew!",
        "{called}\n{}",
        gateway.output()
    );

    // Every call reached the health board, the failed one as failed.
    let health = patchbay_check::HealthStore::open(&sandbox.path().join("health.sqlite")).unwrap();
    let deadline = Instant::now() + STEP;
    loop {
        let demo_calls = health.records("demo").unwrap_or_default();
        let sdk_calls = health.records("sdk").unwrap_or_default();
        let done = demo_calls.iter().filter(|c| c.ok).count() >= 4
            && demo_calls.iter().any(|c| !c.ok)
            && sdk_calls.iter().filter(|c| c.ok).count() >= 3;
        if done {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "calls on the health board: demo {demo_calls:?} sdk {sdk_calls:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

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
fn the_aggregate_keeps_the_gates_and_a_limited_client_to_its_connectors() {
    let alpha = SdkServer::streamable_http();
    let beta = SdkServer::streamable_http();
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": {
            "alpha": { "type": "http", "url": alpha.url(), "headers": { "X-Api-Key": "k" } },
            "beta": { "type": "http", "url": beta.url(), "headers": { "X-Api-Key": "k" } }
        } })
        .to_string(),
    );
    let gateway = Serving::start(&sandbox, &catalog);
    let everything = add_client(&sandbox, "all", gateway.port, &[]);
    let limited = add_client(&sandbox, "only-alpha", gateway.port, &["--only", "alpha"]);
    let secret = |h: &Value| h["Authorization"].as_str().unwrap().to_owned();

    // No secret, an unknown one: 401 before anything is contacted. A foreign Origin: 403.
    let (status, _) = raw(gateway.port, "POST", "/mcp", &[], INITIALIZE);
    assert_eq!(status, 401);
    let (status, _) = raw(
        gateway.port,
        "POST",
        "/mcp",
        &[("Authorization", "Bearer pbgw_not-a-client")],
        INITIALIZE,
    );
    assert_eq!(status, 401);
    let (status, _) = raw(
        gateway.port,
        "POST",
        "/mcp",
        &[
            ("Authorization", &secret(&everything)),
            ("Origin", "https://evil.example"),
        ],
        INITIALIZE,
    );
    assert_eq!(status, 403);
    // With the secret: the aggregate's own initialize, a session id, JSON.
    let (status, answer) = raw(
        gateway.port,
        "POST",
        "/mcp",
        &[("Authorization", &secret(&everything))],
        INITIALIZE,
    );
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("mcp-session-id: "),
        "{answer}"
    );
    assert!(answer.contains(r#""name":"patchbay""#), "{answer}");
    // No server stream (405); a session it never issued is served (a client whose gateway
    // restarted goes on); an unknown method is -32601.
    let (status, _) = raw(
        gateway.port,
        "GET",
        "/mcp",
        &[("Authorization", &secret(&everything))],
        "",
    );
    assert_eq!(status, 405);
    let (status, answer) = raw(
        gateway.port,
        "POST",
        "/mcp",
        &[
            ("Authorization", &secret(&everything)),
            ("Mcp-Session-Id", "forgotten"),
        ],
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("alpha__greet"), "{answer}");
    let (status, answer) = raw(
        gateway.port,
        "POST",
        "/mcp",
        &[("Authorization", &secret(&everything))],
        r#"{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage"}"#,
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("-32601"), "{answer}");

    // Everything for the unlimited client; only alpha's tools for the limited one, whose call to
    // beta's tool is refused.
    let (mut all, connected) = SdkClient::connect(&gateway.url(), &everything);
    assert_eq!(connected["event"], "connected", "{connected}");
    let names = all.tool_names();
    assert!(
        names.contains(&"alpha__greet".to_owned()) && names.contains(&"beta__greet".to_owned()),
        "{names:?}\n{}",
        gateway.output()
    );
    let (mut only, connected) = SdkClient::connect(&gateway.url(), &limited);
    assert_eq!(connected["event"], "connected", "{connected}");
    let names = only.tool_names();
    assert!(names.contains(&"alpha__greet".to_owned()), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("alpha__")), "{names:?}");
    let refused = only.ask(greet("beta__greet", "Eve"));
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("may not use the connector beta"),
        "{refused}"
    );
    let called = only.ask(greet("alpha__greet", "Ada"));
    assert_eq!(text_of(&called), "Hello, Ada!", "{called}");
    let unknown = all.ask(greet("alpha__no_such_tool", "x"));
    assert_eq!(unknown["ok"], false, "{unknown}");
    assert!(
        unknown["error"].as_str().unwrap().contains("Unknown tool"),
        "{unknown}"
    );
}

#[test]
fn claude_code_lists_the_aggregate_as_connected() {
    let demo = SdkServer::streamable_http();
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": {
            "demo": { "type": "http", "url": demo.url(), "headers": { "X-Api-Key": "k" } }
        } })
        .to_string(),
    );
    let gateway = Serving::start(&sandbox, &catalog);
    let headers = add_client(&sandbox, "claude-code", gateway.port, &[]);

    // Claude Code (its own home in the sandbox) with the entry `gateway client add --json`
    // describes, as `claude mcp add --transport http patchbay URL --header ...` writes it.
    let claude = sandbox.path().join("claude-home");
    std::fs::create_dir_all(&claude).unwrap();
    let entry = json!({ "type": "http", "url": gateway.url(), "headers": headers });
    std::fs::write(
        claude.join(".claude.json"),
        json!({ "mcpServers": { "patchbay": entry } }).to_string(),
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
    let status = patchbay_e2e::wait_within(&mut child, STEP, "claude mcp list", || {
        format!("stdout:\n{}\nstderr:\n{}", read("stdout"), read("stderr"))
    });
    assert!(status.success(), "{}{}", read("stdout"), read("stderr"));
    let list = read("stdout");
    let line = list
        .lines()
        .find(|l| l.starts_with("patchbay: "))
        .unwrap_or_else(|| panic!("no patchbay in `claude mcp list`:\n{list}"));
    assert_eq!(
        line,
        format!("patchbay: {} (HTTP) - ✔ Connected", gateway.url()),
        "{list}\n{}",
        gateway.output()
    );
}
