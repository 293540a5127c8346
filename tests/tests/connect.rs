//! `patchbay connect` end to end, real parts on loopback: the MCP SDK's example OAuth server
//! (tests/node/sdk-oauth-expiring-server.mjs: the rotating refresh grant, its access tokens lapse
//! on "EXPIRE", and it keeps them across a restart on the same ports), authorized through
//! `patchbay authorize` with the browser stand-in, and the MCP SDK's own stdio client
//! (tests/node/connect-client.mjs, `StdioClientTransport`) spawning `patchbay connect sdk` as an
//! MCP host does: it lists and calls tools; the access token lapses mid-session and calls keep
//! working (one refresh through the refresher of record); the server restarts mid-session and
//! the next call works (the session re-initialized); the grant is gone, and then the credential
//! is disconnected, and each time a call answers, within a bound, with an MCP error that says to
//! authorize. The SDK's client reports any stdout line
//! that is not JSON-RPC, and none may come.
//!
//! The first runs the lean bridge `patchbay connect` execs into (`patchbay-bridge`, renewing
//! through `patchbay connect --renew`); the second the bridge in `patchbay` itself.
//!
//! Without OAuth (the SDK's plain example): `patchbay connect URL` with mcp-remote's flags finds
//! the connector by its URL, every stdout line is a JSON-RPC message, a line that is not JSON is
//! answered with a parse error, and every request lands on the health board.
//!
//! As real clients launch it with a stripped environment, the session bus only at
//! `$XDG_RUNTIME_DIR/bus`: the MCP Python SDK's `stdio_client`
//! (tests/python/stdio_bridge_client.py), Codex's `app-server` (the entry `add-to codex` wrote)
//! and the MCP Inspector's `--cli` list and call tools, or, with no bus anywhere, show
//! Patchbay's own error.

use patchbay_e2e::clients::{codex_offline_model, inspector_cli, CodexAppServer};
use patchbay_e2e::peers::{authorize, wait_for, OAuthServer, Serving, STARTUP, STEP};
use patchbay_e2e::sdk_servers::{node_dir, SdkServer};
use patchbay_e2e::secret_scan::SecretScan;
use patchbay_e2e::{patchbay_bin, require_keychain, Sandbox};
use serde_json::{json, Value};
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A lapsed credential must be said at once: one refused renewal, no reconnect loop.
const LAPSE_SAID_WITHIN: Duration = Duration::from_secs(15);

/// tests/node/connect-client.mjs driving `patchbay ARGS` (in the sandbox's environment): one
/// JSON command per line in, one JSON answer per line out. The bridge's stderr, inherited,
/// lands in `stderr`.
struct McpClient {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    logs: tempfile::TempDir,
    seen: Vec<String>,
}

impl McpClient {
    fn spawn(sandbox: &Sandbox, patchbay_args: &[&str]) -> (McpClient, Value) {
        McpClient::spawn_with(sandbox, patchbay_args, &[])
    }

    /// As [`McpClient::spawn`], `env` set on top of the sandbox's environment.
    fn spawn_with(
        sandbox: &Sandbox,
        patchbay_args: &[&str],
        env: &[(&str, &str)],
    ) -> (McpClient, Value) {
        let logs = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("node");
        cmd.current_dir(node_dir())
            .args(["connect-client.mjs", "--timeout-ms", "60000", "--"])
            .arg(patchbay_bin())
            .args(patchbay_args);
        // The sandbox's environment, which the client hands on to the bridge it spawns.
        for (key, value) in sandbox.command().get_envs() {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        for (key, value) in env {
            cmd.env(key, value);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(logs.path().join("stderr")).unwrap())
            .spawn()
            .expect("start node connect-client.mjs");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = McpClient {
            child,
            stdin,
            lines,
            logs,
            seen: Vec::new(),
        };
        let connected = client.next();
        assert_eq!(
            connected["event"],
            "connected",
            "{connected}\n{}",
            client.stderr()
        );
        (client, connected)
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.logs.path().join("stderr")).unwrap_or_default()
    }

    fn next(&mut self) -> Value {
        match self.lines.recv_timeout(STEP) {
            Ok(line) => {
                self.seen.push(line.clone());
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
            }
            Err(e) => panic!(
                "the MCP client said nothing within {STEP:?} ({e}); its stderr (and the bridge's):\n{}",
                self.stderr()
            ),
        }
    }

    fn ask(&mut self, command: Value) -> Value {
        writeln!(self.stdin, "{command}").expect("write to the client");
        self.stdin.flush().unwrap();
        self.next()
    }

    fn call_greet(&mut self, name: &str) -> Value {
        self.ask(json!({ "op": "call", "name": "greet", "arguments": { "name": name } }))
    }

    /// Closes the session (stdin EOF to the bridge) and returns the client's last word.
    fn close(mut self) -> (Value, String) {
        let last = self.ask(json!({ "op": "close" }));
        let stderr_file = self.logs.path().join("stderr");
        let status = patchbay_e2e::wait_within(&mut self.child, STEP, "connect-client.mjs", || {
            std::fs::read_to_string(&stderr_file).unwrap_or_default()
        });
        assert!(status.success(), "{}", self.stderr());
        let stderr = self.stderr();
        (last, stderr)
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The text of a `tools/call` answer from the client.
fn greeting(answer: &Value, stderr: &str) -> String {
    assert_eq!(answer["ok"], true, "{answer}\nstderr:\n{stderr}");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned()
}

/// The access token the vault holds now.
fn stored_access_token(sandbox: &Sandbox, catalog: &Path) -> Option<String> {
    let core = sandbox.core(Some(catalog.to_path_buf()));
    let vault = core.vault();
    let row = vault.credential_rows().unwrap().into_iter().next()?;
    vault
        .credential_tokens(&row.credential_key)
        .unwrap()
        .map(|t| t.access_token.expose().to_owned())
}

/// The MCP SDK's example OAuth server whose tokens lapse on demand (tests/node/
/// sdk-oauth-expiring-server.mjs) as connector `sdk` of a catalog in a new sandbox.
fn expiring_sdk_connector() -> (OAuthServer, Sandbox, PathBuf) {
    let server = OAuthServer::start_keeping_tokens("sdk-oauth-expiring-server.mjs");
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": { "sdk": { "type": "http", "url": server.mcp_url() } } })
            .to_string(),
    );
    (server, sandbox, catalog)
}

#[test]
fn the_sdk_client_calls_tools_through_expiry_restart_and_a_lapsed_grant() {
    require_keychain!();
    let (mut server, sandbox, catalog) = expiring_sdk_connector();
    let authorized = authorize(&sandbox, &catalog, "sdk");
    let first_token = stored_access_token(&sandbox, &catalog).expect("authorized");

    let catalog_arg = catalog.to_str().unwrap();
    let (mut client, connected) =
        McpClient::spawn(&sandbox, &["--catalog", catalog_arg, "connect", "sdk"]);
    assert_eq!(connected["server"]["name"], "simple-streamable-http-server");
    // `patchbay connect` handed the connector over to the lean bridge in its place.
    #[cfg(target_os = "linux")]
    {
        let exe = std::fs::read_link(format!("/proc/{}/exe", connected["pid"])).unwrap();
        assert!(exe.ends_with("patchbay-bridge"), "{}", exe.display());
    }

    let listed = client.ask(json!({ "op": "list" }));
    let tools = listed["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(tools.contains(&json!("greet")), "{listed}");
    assert_eq!(
        greeting(&client.call_greet("Ada"), &client.stderr()),
        "Hello, Ada!"
    );

    // The token lapses at the server mid-session: the 401 renews through the refresher of
    // record (one refresh) and the call goes again.
    server.expire_tokens();
    assert_eq!(server.stdout_lines("REFRESHED"), 0);
    assert_eq!(
        greeting(&client.call_greet("Grace"), &client.stderr()),
        "Hello, Grace!"
    );
    assert_eq!(server.stdout_lines("REFRESHED"), 1, "{}", server.output());
    let renewed_token = stored_access_token(&sandbox, &catalog).expect("renewed");
    assert_ne!(
        renewed_token, first_token,
        "the vault holds the renewed token"
    );
    // The next call needs no renewal.
    assert_eq!(
        greeting(&client.call_greet("Edsger"), &client.stderr()),
        "Hello, Edsger!"
    );
    assert_eq!(server.stdout_lines("REFRESHED"), 1);

    // The server restarts mid-session: its sessions are gone; the bridge starts one again by
    // replaying the client's handshake, and the client notices nothing.
    server.restart();
    assert_eq!(
        greeting(&client.call_greet("Barbara"), &client.stderr()),
        "Hello, Barbara!"
    );
    let listed = client.ask(json!({ "op": "list" }));
    assert_eq!(listed["ok"], true, "{listed}");
    let initializes = server
        .output()
        .matches("Session initialized with ID")
        .count();
    assert!(
        initializes >= 1,
        "re-initialized after the restart:\n{}",
        server.output()
    );

    // The restarted authorization server forgot the grant, and the token lapses: no renewal is
    // possible. The call answers at once with an MCP error that says to authorize.
    server.expire_tokens();
    let started = Instant::now();
    let lapsed = client.call_greet("Alan");
    let took = started.elapsed();
    assert_eq!(lapsed["ok"], false, "{lapsed}");
    let message = lapsed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("authorize sdk in Patchbay") && message.contains("patchbay authorize sdk"),
        "{lapsed}"
    );
    assert!(took < LAPSE_SAID_WITHIN, "said after {took:?}");

    // The credential is dropped from Patchbay altogether: the next call says to authorize too.
    let dropped = sandbox.run(&["disconnect", "sdk", "--catalog", catalog_arg]);
    assert!(
        dropped.status.success(),
        "{}{}",
        String::from_utf8_lossy(&dropped.stdout),
        String::from_utf8_lossy(&dropped.stderr)
    );
    assert_eq!(stored_access_token(&sandbox, &catalog), None);
    let started = Instant::now();
    let gone = client.call_greet("Kurt");
    assert_eq!(gone["ok"], false, "{gone}");
    let message = gone["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Patchbay holds no credential for it")
            && message.contains("authorize sdk in Patchbay"),
        "{gone}"
    );
    assert!(started.elapsed() < LAPSE_SAID_WITHIN);

    let (last, stderr) = client.close();
    eprintln!("the lapse was said in {took:?}; the bridge's stderr:\n{stderr}");
    // What happened, as the bridge told it on stderr.
    assert!(stderr.contains("renewed after a 401 upstream"), "{stderr}");
    assert!(stderr.contains("the session was started again"), "{stderr}");
    assert_eq!(
        last["protocol_errors"],
        json!([]),
        "stdout carried something else than JSON-RPC: {last}\n{stderr}"
    );
    // No token reached the client, nor the bridge's diagnostics.
    let said = format!("{last}{stderr}");
    for token in [&first_token, &renewed_token] {
        assert!(
            !said.contains(token.as_str()),
            "a token reached the client's side"
        );
    }
    SecretScan::new(sandbox.path())
        .issued_by("the SDK server", &server)
        .text("patchbay authorize", &authorized)
        .text("the bridge's stdout as the client saw it", last.to_string())
        .text("the bridge's stderr", &stderr)
        .output("patchbay disconnect", &dropped)
        .assert_clean();
}

/// The bridge run on raw lines (no SDK in between): `patchbay connect URL` as a client's
/// `npx mcp-remote URL --header ... --transport ...` line runs it.
#[test]
fn a_url_finds_the_connector_stdout_is_json_rpc_only_and_calls_reach_the_health_board() {
    let server = SdkServer::streamable_http();
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": { "demo": { "type": "http", "url": server.url(), "timeout_ms": 20000 } } })
            .to_string(),
    );
    let messages = [
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}).to_string(),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string(),
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}).to_string(),
        "this is not JSON".to_owned(),
        json!({"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"multi-greet","arguments":{"name":"Ada"}}}).to_string(),
        json!({"jsonrpc":"2.0","id":3,"method":"ping"}).to_string(),
    ];
    let url = server.url();
    let mut child = sandbox
        .command()
        .args(["--catalog", catalog.to_str().unwrap(), "connect", &url])
        // The bridge in the `patchbay` process itself (where there is no lean bridge to exec).
        .env("PATCHBAY_CONNECT_IN_PROCESS", "1")
        .args([
            "--header",
            "Authorization: Bearer ${AUTH}",
            "--transport",
            "http-first",
            "9696",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn patchbay connect");
    // Each line in turn, the next when the previous request is answered (as a client waits for
    // initialize); the notifications of multi-greet arrive between.
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut out = Vec::new();
    for message in &messages {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        let id = serde_json::from_str::<Value>(message)
            .ok()
            .map(|m| m["id"].clone());
        let awaited = match id {
            None => Some(Value::Null), // not JSON: the parse error's id is null
            Some(Value::Null) => None, // a notification: nothing comes back
            Some(id) => Some(id),
        };
        let Some(awaited) = awaited else { continue };
        let deadline = Instant::now() + STEP;
        loop {
            let line = lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|e| panic!("no answer to {message} ({e}); so far: {out:#?}"));
            let parsed: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("a stdout line is not JSON ({e}): {line}"));
            out.push(parsed.clone());
            if parsed["id"] == awaited
                && (parsed.get("result").is_some() || parsed.get("error").is_some())
            {
                break;
            }
        }
    }
    drop(stdin);
    let status = patchbay_e2e::wait_within(&mut child, STEP, "patchbay connect", String::new);
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    for rest in lines.try_iter() {
        out.push(serde_json::from_str(&rest).unwrap_or_else(|e| panic!("not JSON ({e}): {rest}")));
    }

    // Every line is one JSON-RPC 2.0 message: a response (id + result/error) or a notification.
    for message in &out {
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        let response = message.get("id").is_some()
            && (message.get("result").is_some() || message.get("error").is_some());
        let notification = message.get("method").is_some();
        assert!(
            response || notification,
            "not a JSON-RPC message: {message}"
        );
    }
    let answer = |id: Value| {
        out.iter()
            .find(|m| m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()))
            .unwrap_or_else(|| panic!("no answer to {id} in {out:#?}"))
            .clone()
    };
    assert_eq!(
        answer(json!(0))["result"]["serverInfo"]["name"],
        "simple-streamable-http-server"
    );
    assert!(answer(json!(1))["result"]["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    assert_eq!(answer(Value::Null)["error"]["code"], -32700);
    let called = answer(json!("two"));
    assert!(
        called["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Ada")),
        "{called}"
    );
    assert!(
        out.iter().any(|m| m["method"] == "notifications/message"),
        "multi-greet's notifications were passed on: {out:#?}"
    );
    assert_eq!(answer(json!(3))["result"], json!({}));
    assert!(
        stderr.contains("ignoring mcp-remote's --header, --transport"),
        "{stderr}"
    );
    // The session was ended upstream at the end of stdin.
    wait_for(
        STARTUP,
        "the session's DELETE",
        || {
            server
                .output()
                .contains("Received session termination request")
        },
        || server.output(),
    );

    // Every request is on the health board: initialize, tools/list, tools/call, ping.
    let health =
        patchbay_check::HealthStore::open(&sandbox.path().join(patchbay_check::HEALTH_FILE))
            .expect("health.sqlite");
    let stats = health.stats("demo").unwrap();
    assert_eq!(stats.calls, 4, "{stats:?}");
    assert_eq!(stats.failures, 0, "{stats:?}");
    assert!(stats.p50_ms.is_some(), "{stats:?}");
    SecretScan::new(sandbox.path())
        .issued_by("the SDK server", &server)
        .none_issued("an open server: no authorization")
        .text("the bridge's stderr", &stderr)
        .assert_clean();
}

/// A connector that is not in use, or a URL no connector has, is refused at once with a clear
/// error on stderr and nothing on stdout.
#[test]
fn an_unknown_name_or_url_is_refused_on_stderr() {
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": { "demo": { "type": "http", "url": "http://127.0.0.1:9/mcp" } } })
            .to_string(),
    );
    for (target, says) in [
        ("nope", "no connector named \"nope\""),
        (
            "http://127.0.0.1:9/other",
            "no connector in use in Patchbay has the URL",
        ),
    ] {
        let out = sandbox.run(&["--catalog", catalog.to_str().unwrap(), "connect", target]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{stderr}");
    }
    SecretScan::new(sandbox.path())
        .none_issued("nothing is authorized: only the modes of what was created")
        .assert_clean();
}

/// A connector on the legacy HTTP+SSE transport (the SDK's `simpleSseServer.js`): the SDK's
/// stdio client lists and calls its tool through `patchbay connect`, and after the server
/// restarts on the same port the next call works (the stream opened again, the session started
/// again with the client's own handshake).
#[test]
fn a_legacy_sse_connector_is_bridged_and_survives_a_restart() {
    let server = SdkServer::sse();
    let port = server.port;
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": { "legacy": { "type": "sse", "url": server.url() } } }).to_string(),
    );
    let catalog_arg = catalog.to_str().unwrap();
    let (mut client, connected) =
        McpClient::spawn(&sandbox, &["--catalog", catalog_arg, "connect", "legacy"]);
    assert!(connected["server"]["name"].is_string(), "{connected}");
    let call = json!({ "op": "call", "name": "start-notification-stream", "arguments": { "interval": 10, "count": 2 } });

    let listed = client.ask(json!({ "op": "list" }));
    assert!(
        listed["tools"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("start-notification-stream"))),
        "{listed}"
    );
    let called = client.ask(call.clone());
    assert_eq!(called["ok"], true, "{called}\n{}", client.stderr());

    drop(server);
    let server = SdkServer::sse_on(port);
    // The bridge notices the stream drop and starts a new session; the call after it works.
    wait_for(
        STARTUP,
        "a new SSE session",
        || server.output().contains("Established SSE stream"),
        || format!("{}\n{}", server.output(), client.stderr()),
    );
    let again = client.ask(call);
    assert_eq!(again["ok"], true, "{again}\n{}", client.stderr());

    let (last, stderr) = client.close();
    assert_eq!(last["protocol_errors"], json!([]), "{last}\n{stderr}");
    assert!(stderr.contains("the session was started again"), "{stderr}");
    SecretScan::new(sandbox.path())
        .issued_by("the SSE server", &server)
        .none_issued("an open legacy SSE server: no authorization")
        .text("the bridge's stderr", &stderr)
        .assert_clean();
}

/// `patchbay connect` as Codex launches it (only `HOME LANG PATH PWD SHELL TERM`; the data dir
/// named with `--data-dir`, as `add-to` writes it): the first request is answered in JSON-RPC
/// whatever goes wrong, never by an exit the client reads as "connection closed".
fn stripped_connect(sandbox: &Sandbox, args: &[&str], extra: &[(&str, &Path)]) -> Child {
    let mut cmd = Command::new(patchbay_bin());
    cmd.env_clear()
        .env("HOME", sandbox.path().join("home"))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .env("TERM", "dumb")
        .env("SHELL", "/bin/sh")
        .env("PWD", sandbox.path())
        .env("RUST_LOG", "warn")
        .arg("--data-dir")
        .arg(sandbox.path())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in extra {
        cmd.env(name, value);
    }
    cmd.spawn().expect("spawn patchbay connect")
}

/// Sends `initialize` and returns the first stdout line (within `within`), then ends stdin and
/// returns the exit code.
fn first_answer(mut child: Child, within: Duration) -> (Value, Option<i32>) {
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        "{}",
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "codex-like", "version": "1" } } })
    )
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(within)
        .unwrap_or_else(|_| panic!("no answer to initialize within {within:?}"));
    drop(stdin);
    let status = child.wait().unwrap();
    let answer = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    (answer, status.code())
}

#[test]
fn a_stripped_environment_still_reaches_the_keychain_or_hears_why_in_json_rpc() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    std::fs::create_dir_all(sandbox.path().join("home")).unwrap();
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": { "fx": {
            "type": "http", "url": "http://127.0.0.1:9/mcp", "timeout_ms": 1500,
            "headers": { "Authorization": "Bearer ${FX_TOKEN}" } } } })
        .to_string(),
    );
    let catalog = catalog.to_str().unwrap();
    let out = sandbox.run_with_stdin(&["--catalog", catalog, "secret", "set", "FX_TOKEN"], "t0k");
    assert!(out.status.success(), "{out:?}");

    // No bus anywhere: the keychain cannot answer, and the client is told so (not "missing
    // configuration": the value is in the vault).
    if no_standard_bus() {
        let child = stripped_connect(&sandbox, &["--catalog", catalog, "connect", "fx"], &[]);
        let (answer, code) = first_answer(child, Duration::from_secs(20));
        assert_eq!(answer["id"], 0, "{answer}");
        assert_eq!(
            answer["error"]["data"]["reason"], "vault_unavailable",
            "{answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("no D-Bus session bus was found"),
            "{message}"
        );
        assert!(!message.contains("t0k"), "{message}");
        assert_eq!(code, Some(2));
    }

    // The bus where libdbus and systemd put it ($XDG_RUNTIME_DIR/bus): the credential is read
    // and the request goes upstream (nothing listens there: unreachable, not a vault error).
    if let Some(runtime) = runtime_with_bus(&sandbox) {
        let child = stripped_connect(
            &sandbox,
            &["--catalog", catalog, "connect", "fx"],
            &[("XDG_RUNTIME_DIR", &runtime)],
        );
        let (answer, _) = first_answer(child, Duration::from_secs(30));
        // Nothing listens: it is retried until timeout_ms, whichever ends first.
        let reason = answer["error"]["data"]["reason"]
            .as_str()
            .unwrap_or_default();
        assert!(["unreachable", "timed_out"].contains(&reason), "{answer}");
    }

    // A name that is no connector: the same JSON-RPC answer, then exit 2 once stdin ends.
    let child = stripped_connect(&sandbox, &["--catalog", catalog, "connect", "nope"], &[]);
    let (answer, code) = first_answer(child, Duration::from_secs(20));
    assert_eq!(answer["error"]["data"]["reason"], "not_in_use", "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no connector named \"nope\""),
        "{answer}"
    );
    assert_eq!(code, Some(2));
}

/// The SDK's plain example as connector `fx` of a catalog in `sandbox`, its bearer
/// `${FX_TOKEN}` set in the vault to `t0k`: a stdio bridge reaches it only through the keychain.
fn vault_backed_fx(sandbox: &Sandbox) -> (SdkServer, PathBuf) {
    let plain = SdkServer::streamable_http();
    std::fs::create_dir_all(sandbox.path().join("home")).unwrap();
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": { "fx": { "type": "http", "url": plain.url(),
            "headers": { "Authorization": "Bearer ${FX_TOKEN}" } } } })
        .to_string(),
    );
    let out = sandbox.run_with_stdin(
        &[
            "--catalog",
            catalog.to_str().unwrap(),
            "secret",
            "set",
            "FX_TOKEN",
        ],
        "t0k",
    );
    assert!(out.status.success(), "{out:?}");
    (plain, catalog)
}

/// `sandbox/runtime` with this test's session bus linked at `bus`, where systemd and libdbus put
/// it (`$XDG_RUNTIME_DIR/bus`); `None` (said on stderr) when the test bus is not a unix path.
fn runtime_with_bus(sandbox: &Sandbox) -> Option<PathBuf> {
    let address = std::env::var("DBUS_SESSION_BUS_ADDRESS").unwrap_or_default();
    let Some(socket) = address
        .strip_prefix("unix:path=")
        .map(|rest| rest.split(',').next().unwrap_or(rest))
    else {
        eprintln!("the test bus is not at a unix:path ({address}): not linked");
        return None;
    };
    let runtime = sandbox.path().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    std::os::unix::fs::symlink(socket, runtime.join("bus")).unwrap();
    Some(runtime)
}

/// True when no session bus sits at `/run/user/$UID/bus`, so a process given neither
/// `DBUS_SESSION_BUS_ADDRESS` nor `XDG_RUNTIME_DIR` has none (said on stderr when false).
fn no_standard_bus() -> bool {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").unwrap().uid();
    let standard = format!("/run/user/{uid}/bus");
    let absent = !Path::new(&standard).exists();
    if !absent {
        eprintln!("a session bus is at {standard}: the no-bus case is not tried");
    }
    absent
}

/// Patchbay's own error for a keychain with no bus, as a client shows it: the cause named, the
/// vault's value nowhere.
fn assert_no_bus_error(shown: &str) {
    assert!(shown.contains("no D-Bus session bus was found"), "{shown}");
    assert!(!shown.contains("t0k"), "{shown}");
}

/// tests/python/stdio_bridge_client.py: the MCP Python SDK's `stdio_client` launching
/// `patchbay --data-dir SANDBOX --catalog CATALOG connect fx` with only HOME, LOGNAME, PATH,
/// SHELL, TERM, USER and `env`, listing tools and calling `greet`; its one JSON answer.
fn python_stdio_client(sandbox: &Sandbox, catalog: &Path, env: Value) -> Value {
    let python = patchbay_e2e::peers::tests_dir().join("python/.venv/bin/python");
    assert!(
        python.is_file(),
        "{}: run scripts/setup.sh",
        python.display()
    );
    let spec = json!({
        "command": patchbay_bin(),
        "args": ["--data-dir", sandbox.path(), "--catalog", catalog, "connect", "fx"],
        "env": env, "tool": "greet", "arguments": { "name": "Ada" },
    });
    let out = Command::new(&python)
        .arg(patchbay_e2e::peers::tests_dir().join("python/stdio_bridge_client.py"))
        .arg(spec.to_string())
        .env_clear()
        .env("HOME", sandbox.path().join("home"))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("USER", "e2e")
        .env("LOGNAME", "e2e")
        .env("SHELL", "/bin/sh")
        .env("TERM", "dumb")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or(""))
        .unwrap_or_else(|_| panic!("{text}\n{}", String::from_utf8_lossy(&out.stderr)))
}

/// The MCP Python SDK 2.3.0's `stdio_client` (tests/python/stdio_bridge_client.py) judges the
/// bridge as it launches every stdio server: only HOME, LOGNAME, PATH, SHELL, TERM and USER.
/// With the session bus where systemd puts it (`$XDG_RUNTIME_DIR/bus`, named in the entry's
/// env) the vault's credential is read and tools are listed and called; with no bus anywhere
/// the client is shown Patchbay's own error, not "connection closed".
#[test]
fn the_python_sdks_stdio_client_lists_and_calls_tools_or_shows_why_not() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let (_server, catalog) = vault_backed_fx(&sandbox);
    let run = |env: Value| python_stdio_client(&sandbox, &catalog, env);

    if let Some(runtime) = runtime_with_bus(&sandbox) {
        let answer = run(json!({ "XDG_RUNTIME_DIR": runtime }));
        assert_eq!(answer["ok"], true, "{answer}");
        assert!(
            answer["tools"]
                .as_array()
                .unwrap()
                .contains(&json!("greet")),
            "{answer}"
        );
        assert!(
            answer["called"].as_str().unwrap().contains("Ada"),
            "{answer}"
        );
    }
    if no_standard_bus() {
        let answer = run(Value::Null);
        assert_eq!(answer["ok"], false, "{answer}");
        assert_no_bus_error(answer["error"].as_str().unwrap());
    }
}

/// Codex 0.171.0 as a user meets it after `patchbay add-to codex fx`: `codex app-server` starts
/// the entry it wrote (Codex passes only HOME LANG PATH PWD SHELL TERM and the entry's
/// `env_vars`), and `mcpServer/tool/call` reaches the connector through the vault's credential
/// with the bus only at `$XDG_RUNTIME_DIR/bus`; with no bus anywhere the call fails with
/// Patchbay's own text, not "connection closed".
#[test]
fn codex_app_server_calls_tools_through_what_add_to_wrote_or_shows_why_not() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let (_server, catalog) = vault_backed_fx(&sandbox);
    let home = sandbox.path().join("home");
    // Sandbox::command names CODEX_HOME (sandbox/codex): `add-to` writes there.
    let codex_home = sandbox.path().join("codex");
    let out = sandbox
        .command()
        .env("HOME", &home)
        .arg("--catalog")
        .arg(&catalog)
        .args(["add-to", "codex", "fx"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    codex_offline_model(&codex_home.join("config.toml"));
    let call = |env: &[(&str, &OsStr)]| -> (Result<Value, Value>, Value) {
        let mut codex = CodexAppServer::start(&home, &codex_home, env);
        let thread = codex.thread(&home);
        let called = codex.request(
            "mcpServer/tool/call",
            json!({ "threadId": thread, "server": "fx", "tool": "greet",
                "arguments": { "name": "Ada" } }),
        );
        let listed = codex
            .request("mcpServerStatus/list", json!({ "threadId": thread }))
            .unwrap_or_else(|e| panic!("mcpServerStatus/list: {e}\n{}", codex.stderr()));
        let fx = listed["data"]
            .as_array()
            .and_then(|servers| servers.iter().find(|s| s["name"] == "fx"))
            .unwrap_or_else(|| panic!("fx not listed: {listed}"))
            .clone();
        (called, fx)
    };

    if let Some(runtime) = runtime_with_bus(&sandbox) {
        let (called, fx) = call(&[("XDG_RUNTIME_DIR", runtime.as_os_str())]);
        let called = called.unwrap_or_else(|e| panic!("the call failed: {e}\n{fx}"));
        assert_eq!(called["content"][0]["text"], "Hello, Ada!", "{called}");
        assert_eq!(fx["runtimeStatus"], "connected", "{fx}");
        assert!(fx["tools"].to_string().contains("greet"), "{fx}");
    }
    if no_standard_bus() {
        let (called, fx) = call(&[]);
        let error = called.expect_err("no bus: the call cannot succeed");
        assert_no_bus_error(&error.to_string());
        assert_ne!(fx["runtimeStatus"], "connected", "{fx}");
    }
}

/// The MCP Inspector 2.12.0's `--cli` launches `patchbay connect fx` as it launches any stdio
/// server (the SDK's default environment: HOME LOGNAME PATH SHELL TERM USER, plus each `-e`):
/// with the bus only at `$XDG_RUNTIME_DIR/bus` it lists and calls tools; with no bus anywhere
/// it prints Patchbay's own error.
#[test]
fn the_inspectors_cli_lists_and_calls_tools_through_the_bridge_or_shows_why_not() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let (_server, catalog) = vault_backed_fx(&sandbox);
    let home = sandbox.path().join("home");
    let inspect = |env: &[OsString], method: &[&str]| -> (Option<i32>, String) {
        let mut args: Vec<OsString> = ["--method"]
            .iter()
            .chain(method)
            .map(OsString::from)
            .collect();
        for value in env {
            args.push("-e".into());
            args.push(value.clone());
        }
        // `--` ends the Inspector's own options (else it takes `--catalog` for one of them).
        args.extend(["--".into(), patchbay_bin().into(), "--data-dir".into()]);
        args.extend([
            sandbox.path().into(),
            "--catalog".into(),
            catalog.clone().into(),
        ]);
        args.extend(["connect".into(), "fx".into()]);
        let refs: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
        let out = inspector_cli(&home, &refs);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };

    if let Some(runtime) = runtime_with_bus(&sandbox) {
        let mut bus = OsString::from("XDG_RUNTIME_DIR=");
        bus.push(&runtime);
        let (code, listed) = inspect(std::slice::from_ref(&bus), &["tools/list"]);
        assert_eq!(code, Some(0), "{listed}");
        assert!(listed.contains("\"name\": \"greet\""), "{listed}");
        let call = [
            "tools/call",
            "--tool-name",
            "greet",
            "--tool-arg",
            "name=Ada",
        ];
        let (code, called) = inspect(&[bus], &call);
        assert_eq!(code, Some(0), "{called}");
        assert!(called.contains("Hello, Ada!"), "{called}");
    }
    if no_standard_bus() {
        let (code, shown) = inspect(&[], &["tools/list"]);
        assert_ne!(code, Some(0), "{shown}");
        assert_no_bus_error(&shown);
    }
}

/// With a gateway serving the same data directory (as the app's does), a bridge launched with no
/// session bus anywhere asks it for the connector (its socket, `bridge.sock` there) and never
/// opens the keychain: the Python SDK's `stdio_client` lists and calls tools through the vault's
/// credential all the same. With the gateway gone, the same launch shows Patchbay's own "no
/// D-Bus session bus was found" (the vault, the fallback, cannot answer).
#[test]
fn with_a_gateway_running_a_bridge_without_a_bus_gets_its_credential_from_it() {
    require_keychain!();
    if !no_standard_bus() {
        return;
    }
    let sandbox = Sandbox::new(true);
    let (_server, catalog) = vault_backed_fx(&sandbox);
    let gateway = Serving::start(&sandbox, &catalog);
    let socket = bridge_socket(&sandbox, &gateway);
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the owner's only: {mode:o}");
    }

    let answer = python_stdio_client(&sandbox, &catalog, Value::Null);
    assert_eq!(answer["ok"], true, "{answer}\n{}", gateway.output());
    assert!(
        answer["called"].as_str().unwrap().contains("Ada"),
        "{answer}"
    );

    drop(gateway);
    let answer = python_stdio_client(&sandbox, &catalog, Value::Null);
    assert_eq!(answer["ok"], false, "{answer}");
    assert_no_bus_error(answer["error"].as_str().unwrap());
}

/// The gateway's socket for bridges in `sandbox`, once `gateway` serves it.
fn bridge_socket(sandbox: &Sandbox, gateway: &Serving) -> PathBuf {
    let socket = sandbox.path().join("bridge.sock");
    let deadline = Instant::now() + STARTUP;
    while !socket.exists() {
        assert!(
            Instant::now() < deadline,
            "no {}:\n{}",
            socket.display(),
            gateway.output()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    socket
}

/// With a gateway serving the data directory, the lean bridge's renewal goes through it too: a
/// bridge whose keychain cannot answer (its bus leads nowhere) keeps calling tools across an
/// access token that lapses mid-session, renewed by the gateway's refresher of record (one
/// refresh at the server, said in the gateway's log), never by the bridge.
#[test]
fn with_a_gateway_running_a_bridge_renews_through_it() {
    require_keychain!();
    let (mut server, sandbox, catalog) = expiring_sdk_connector();
    authorize(&sandbox, &catalog, "sdk");
    let gateway = Serving::start(&sandbox, &catalog);
    bridge_socket(&sandbox, &gateway);
    let nowhere = format!("unix:path={}/no-such-bus", sandbox.path().display());
    let (mut client, _) = McpClient::spawn_with(
        &sandbox,
        &["--catalog", catalog.to_str().unwrap(), "connect", "sdk"],
        &[("DBUS_SESSION_BUS_ADDRESS", &nowhere)],
    );
    assert_eq!(
        greeting(&client.call_greet("Ada"), &client.stderr()),
        "Hello, Ada!"
    );
    server.expire_tokens();
    assert_eq!(
        greeting(&client.call_greet("Grace"), &client.stderr()),
        "Hello, Grace!"
    );
    assert_eq!(server.stdout_lines("REFRESHED"), 1, "{}", server.output());
    assert!(
        gateway.output().contains("renewed after a 401"),
        "renewed by the gateway:\n{}",
        gateway.output()
    );
    assert!(
        client.stderr().contains("resolved by the running gateway"),
        "{}",
        client.stderr()
    );
}
