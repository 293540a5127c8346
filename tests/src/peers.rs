//! The processes the end-to-end tests run beside `patchbay`, shared so each is started and waited
//! for one way: the MCP SDK's OAuth example servers (tests/node/sdk-oauth-*.mjs, an MCP endpoint
//! and its authorization server), `patchbay gateway serve`, the SDK's client scripts driven one
//! JSON command per line, `patchbay authorize` with the browser stand-in, and `claude mcp list`;
//! with the bounded waits they need (a port listening, a condition polled).

use crate::sdk_servers::{examples_dir, free_port, node_dir};
use crate::secret_scan::{read_issued_file, record_issued_module, Issuer, ISSUED_ENV};
use crate::{wait_within, Sandbox};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a server may take to listen.
pub const STARTUP: Duration = Duration::from_secs(30);
/// How long one step may take: a client's answer, `patchbay authorize`, `claude mcp list`.
pub const STEP: Duration = Duration::from_secs(60);

/// The e2e crate's directory (tests/).
pub fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Something accepts connections on 127.0.0.1:`port`.
pub fn listening(port: u16) -> bool {
    TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).is_ok()
}

/// Polls `done` until it holds or `limit` passes (then fails naming `what` with `context()`).
pub fn wait_for(
    limit: Duration,
    what: &str,
    mut done: impl FnMut() -> bool,
    context: impl Fn() -> String,
) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {limit:?}:\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Two ports nobody listens on now, held at once so they differ.
pub fn two_free_ports() -> (u16, u16) {
    let bind = || TcpListener::bind("127.0.0.1:0").expect("a free port");
    let (a, b) = (bind(), bind());
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// One of the SDK's OAuth example servers as tests/node runs it (`SCRIPT --oauth`): its MCP
/// endpoint on `mcp_port`, its authorization server on `auth_port`, its output in files outside
/// any data directory, its stdin kept (sdk-oauth-expiring-server.mjs reads "EXPIRE" there).
/// Killed on drop.
pub struct OAuthServer {
    child: Child,
    stdin: ChildStdin,
    logs: tempfile::TempDir,
    script: String,
    tokens: Option<PathBuf>,
    pub mcp_port: u16,
    pub auth_port: u16,
}

impl OAuthServer {
    /// `script` on two free ports.
    pub fn start(script: &str) -> OAuthServer {
        let (mcp_port, auth_port) = two_free_ports();
        let logs = tempfile::tempdir().expect("tempdir");
        OAuthServer::launch(script, logs, mcp_port, auth_port, None)
    }

    /// `script` on two free ports, the access tokens it issues kept in a file of its own
    /// (sdk-oauth-expiring-server.mjs's ACCESS_TOKENS_FILE), so they outlive a [`restart`].
    ///
    /// [`restart`]: OAuthServer::restart
    pub fn start_keeping_tokens(script: &str) -> OAuthServer {
        let (mcp_port, auth_port) = two_free_ports();
        let logs = tempfile::tempdir().expect("tempdir");
        let tokens = logs.path().join("access-tokens.json");
        OAuthServer::launch(script, logs, mcp_port, auth_port, Some(tokens))
    }

    fn launch(
        script: &str,
        logs: tempfile::TempDir,
        mcp_port: u16,
        auth_port: u16,
        tokens: Option<PathBuf>,
    ) -> OAuthServer {
        // The scripts run the SDK's simpleStreamableHttp.js: say what is missing when it is.
        let example = examples_dir().join("simpleStreamableHttp.js");
        assert!(example.is_file(), "{} is missing", example.display());
        let (child, stdin) =
            OAuthServer::spawn(script, logs.path(), mcp_port, auth_port, tokens.as_deref());
        let mut server = OAuthServer {
            child,
            stdin,
            logs,
            script: script.to_owned(),
            tokens,
            mcp_port,
            auth_port,
        };
        server.wait_listening();
        server
    }

    /// This run's output goes to fresh files in `logs`.
    fn spawn(
        script: &str,
        logs: &Path,
        mcp_port: u16,
        auth_port: u16,
        tokens: Option<&Path>,
    ) -> (Child, ChildStdin) {
        let file = |name: &str| std::fs::File::create(logs.join(name)).expect("log file");
        let mut child = Command::new("node")
            .current_dir(node_dir())
            .arg("--import")
            .arg(record_issued_module())
            .args([script, "--oauth"])
            .env(ISSUED_ENV, logs.join("issued.jsonl"))
            .env("MCP_PORT", mcp_port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string())
            .envs(tokens.map(|t| ("ACCESS_TOKENS_FILE", t.as_os_str())))
            .stdin(Stdio::piped())
            .stdout(file("stdout"))
            .stderr(file("stderr"))
            .spawn()
            .expect("start node (is Node.js installed? scripts/setup.sh installs it)");
        let stdin = child.stdin.take().expect("stdin");
        (child, stdin)
    }

    fn wait_listening(&mut self) {
        let deadline = Instant::now() + STARTUP;
        while !(listening(self.mcp_port) && listening(self.auth_port)) {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                panic!(
                    "the SDK server exited ({status}) before listening:\n{}",
                    self.output()
                );
            }
            assert!(
                Instant::now() < deadline,
                "the SDK server did not listen on 127.0.0.1:{} and :{} within {STARTUP:?}:\n{}",
                self.mcp_port,
                self.auth_port,
                self.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Killed and started again on the same ports: its sessions (and, unless its tokens are
    /// kept in a file, its tokens and grants) forgotten. [`output`] is the new run's.
    ///
    /// [`output`]: OAuthServer::output
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        wait_for(
            STARTUP,
            "the port to close",
            || !listening(self.mcp_port),
            || self.output(),
        );
        let (child, stdin) = OAuthServer::spawn(
            &self.script,
            self.logs.path(),
            self.mcp_port,
            self.auth_port,
            self.tokens.as_deref(),
        );
        self.child = child;
        self.stdin = stdin;
        self.wait_listening();
    }

    /// Its stderr and stdout so far.
    pub fn output(&self) -> String {
        let read =
            |name: &str| std::fs::read_to_string(self.logs.path().join(name)).unwrap_or_default();
        format!("{}{}", read("stderr"), read("stdout"))
    }

    /// How many lines of its stdout start with `prefix` (its events: "REFRESHED", ...).
    pub fn stdout_lines(&self, prefix: &str) -> usize {
        std::fs::read_to_string(self.logs.path().join("stdout"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with(prefix))
            .count()
    }

    /// Every access token issued so far lapses ("EXPIRE", sdk-oauth-expiring-server.mjs);
    /// returns once the server says so.
    pub fn expire_tokens(&mut self) {
        let before = self.stdout_lines("EXPIRED");
        writeln!(self.stdin, "EXPIRE").expect("write EXPIRE");
        wait_for(
            STEP,
            "EXPIRED",
            || self.stdout_lines("EXPIRED") > before,
            || self.output(),
        );
    }

    /// The MCP endpoint, as the SDK names it in its metadata (`resource`).
    pub fn mcp_url(&self) -> String {
        format!("http://localhost:{}/mcp", self.mcp_port)
    }

    /// The authorization server's issuer.
    pub fn issuer(&self) -> String {
        format!("http://localhost:{}/", self.auth_port)
    }

    /// [`initialize_status`] at its MCP endpoint.
    pub fn initialize_status(&self, token: &str) -> String {
        initialize_status(&self.mcp_url(), token)
    }
}

/// What it issued and was shown, across restarts (tests/node/record-issued.mjs).
impl Issuer for OAuthServer {
    fn issued(&self) -> Vec<(String, String)> {
        read_issued_file(&self.logs.path().join("issued.jsonl"))
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The HTTP status the MCP endpoint `mcp_url` answers an `initialize` carrying `token` with.
/// The header goes through curl's stdin, not its arguments.
pub fn initialize_status(mcp_url: &str, token: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"patchbay-e2e","version":"0"}}}"#;
    let mut curl = Command::new("curl")
        .args(["-sS", "--max-time", "20", "-o", "/dev/null"])
        .args(["-w", "%{http_code}", "-X", "POST", "-H", "@-"])
        .args(["-H", "Content-Type: application/json"])
        .args(["-H", "Accept: application/json, text/event-stream"])
        .args(["--data", body, mcp_url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl");
    curl.stdin
        .take()
        .unwrap()
        .write_all(format!("Authorization: Bearer {token}\n").as_bytes())
        .unwrap();
    String::from_utf8_lossy(&curl.wait_with_output().unwrap().stdout).into_owned()
}

/// `patchbay gateway serve --port PORT` (logging at info), killed on drop.
pub struct Serving {
    child: Child,
    pub port: u16,
    logs: tempfile::TempDir,
}

impl Serving {
    pub fn start(sandbox: &Sandbox, catalog: &Path) -> Serving {
        Serving::start_on(sandbox, catalog, free_port())
    }

    pub fn start_on(sandbox: &Sandbox, catalog: &Path, port: u16) -> Serving {
        Serving::spawn(sandbox, Some(catalog), port, None, None, &[])
    }

    /// As [`Serving::start`], with the variables `env` set too.
    pub fn start_with_env(sandbox: &Sandbox, catalog: &Path, env: &[(&str, &Path)]) -> Serving {
        Serving::spawn(sandbox, Some(catalog), free_port(), None, None, env)
    }

    /// As a user runs it: no `--catalog` (the sandbox's user catalog, `mcp.json`, and the
    /// shipped gallery), so the clients' configs count too, read from HOME (and XDG_CONFIG_HOME
    /// under it) at `home`.
    pub fn start_in_home(sandbox: &Sandbox, home: &Path) -> Serving {
        Serving::spawn(sandbox, None, free_port(), None, Some(home), &[])
    }

    /// As [`Serving::start`], the gateway's open-file limit (`ulimit -n`) set to `open_files`
    /// first: what a process is often given, for tests that make it run short of descriptors.
    pub fn start_with_open_files(sandbox: &Sandbox, catalog: &Path, open_files: u32) -> Serving {
        Serving::spawn(
            sandbox,
            Some(catalog),
            free_port(),
            Some(open_files),
            None,
            &[],
        )
    }

    fn spawn(
        sandbox: &Sandbox,
        catalog: Option<&Path>,
        port: u16,
        open_files: Option<u32>,
        home: Option<&Path>,
        env: &[(&str, &Path)],
    ) -> Serving {
        let logs = tempfile::tempdir().unwrap();
        let file = |name: &str| std::fs::File::create(logs.path().join(name)).unwrap();
        let mut gateway = sandbox.command();
        gateway
            .args(["gateway", "serve", "--port", &port.to_string()])
            .env("RUST_LOG", "patchbay_gateway=info")
            .stdout(file("stdout"))
            .stderr(file("stderr"));
        if let Some(catalog) = catalog {
            gateway.arg("--catalog").arg(catalog);
        }
        for (name, value) in env {
            gateway.env(name, value);
        }
        if let Some(home) = home {
            gateway
                .env("HOME", home)
                .env("XDG_CONFIG_HOME", home.join(".config"))
                .current_dir(home);
        }
        if let Some(limit) = open_files {
            // The shell sets the limit, then becomes the gateway (same environment).
            let mut limited = Command::new("sh");
            limited
                .arg("-c")
                .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
                .arg(gateway.get_program())
                .args(gateway.get_args())
                .stdin(Stdio::null())
                .stdout(file("stdout"))
                .stderr(file("stderr"));
            for (key, value) in gateway.get_envs() {
                match value {
                    Some(value) => limited.env(key, value),
                    None => limited.env_remove(key),
                };
            }
            gateway = limited;
        }
        let child = gateway.spawn().expect("spawn patchbay gateway serve");
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

    /// Its stdout and stderr so far.
    pub fn output(&self) -> String {
        let read = |n: &str| std::fs::read_to_string(self.logs.path().join(n)).unwrap_or_default();
        format!("{}{}", read("stdout"), read("stderr"))
    }

    /// The gateway's resident memory now (VmRSS), in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no VmRSS in {status}"))
    }

    /// The aggregate endpoint.
    pub fn aggregate_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The connector `name`'s endpoint.
    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/mcp/{name}", self.port)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `patchbay gateway client add LABEL --json --port PORT [extra]`: the headers it prints, after
/// checking that the URL it prints is the aggregate endpoint.
pub fn add_client(sandbox: &Sandbox, label: &str, port: u16, extra: &[&str]) -> Value {
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

/// An `initialize` request, for [`raw_http`].
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// One raw HTTP/1.1 request to 127.0.0.1:`port` with a JSON body (a `Host` of its own unless
/// `headers` has one); returns the status code and the whole answer.
pub fn raw_http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut with_types = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    with_types.extend_from_slice(headers);
    raw_request(port, method, path, &with_types, body)
}

/// A form POST (`application/x-www-form-urlencoded`), as [`raw_http`].
pub fn raw_form(port: u16, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut with_type = vec![("Content-Type", "application/x-www-form-urlencoded")];
    with_type.extend_from_slice(headers);
    raw_request(port, "POST", path, &with_type, body)
}

fn raw_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(STEP)).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
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

/// One of the SDK's client scripts in tests/node (gateway-client.mjs, aggregate-client.mjs):
/// one JSON command per line in, one JSON answer per line out. Killed on drop.
pub struct SdkClient {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl SdkClient {
    /// `node SCRIPT URL` with the gateway client's `headers`; and its first line (connected or
    /// not).
    pub fn connect(script: &str, url: &str, headers: &Value) -> (SdkClient, Value) {
        let mut client = SdkClient::spawn(&[script, url], headers);
        let first = client.next_answer();
        (client, first)
    }

    /// `node ARGS` with the gateway client's `headers`.
    pub fn spawn(args: &[&str], headers: &Value) -> SdkClient {
        let mut child = Command::new("node")
            .current_dir(node_dir())
            .args(args)
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
    }

    /// Its next line, as JSON, within [`STEP`].
    pub fn next_answer(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(STEP)
            .expect("the SDK client answered");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends `command`; its answer.
    pub fn ask(&mut self, command: Value) -> Value {
        writeln!(self.stdin, "{command}").unwrap();
        self.next_answer()
    }

    /// The names of the tools it lists (`{"op":"list"}` answered with tool objects).
    pub fn tool_names(&mut self) -> Vec<String> {
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

/// The first text content of a tool call's answer (the SDK clients' `result`).
pub fn text_of(result: &Value) -> String {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// PATH with tests/support first, where the browser stand-in `follow-browser.sh` is.
pub fn path_with_support() -> std::ffi::OsString {
    std::env::join_paths(
        std::iter::once(tests_dir().join("support")).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap()
}

/// `patchbay authorize NAME` with the browser stand-in that follows the consent's 302
/// (tests/support/follow-browser.sh), bounded by [`STEP`]; fails the test unless it succeeds.
/// Returns its stdout and stderr (for the secret scan).
pub fn authorize(sandbox: &Sandbox, catalog: &Path, name: &str) -> String {
    let out = tempfile::tempdir().unwrap();
    let file = |n: &str| std::fs::File::create(out.path().join(n)).unwrap();
    let read = |n: &str| std::fs::read_to_string(out.path().join(n)).unwrap_or_default();
    let mut child = sandbox
        .command()
        .args([
            "authorize",
            name,
            "--port",
            &free_port().to_string(),
            "--catalog",
        ])
        .arg(catalog)
        .env("BROWSER", "follow-browser.sh")
        .env("PATH", path_with_support())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("spawn patchbay authorize");
    let status = wait_within(&mut child, STEP, "patchbay authorize", || {
        read("stdout") + &read("stderr")
    });
    assert!(
        status.success(),
        "patchbay authorize {name} failed:\n{}{}",
        read("stdout"),
        read("stderr")
    );
    read("stdout") + &read("stderr")
}

/// [`claude_mcp_list_in`] a throwaway home.
pub fn claude_mcp_list(claude_config_dir: &Path) -> String {
    let home = tempfile::tempdir().unwrap();
    claude_mcp_list_in(claude_config_dir, home.path())
}

/// `claude mcp list`, the real Claude Code CLI (npm `@anthropic-ai/claude-code` in tests/node,
/// its native binary), with `claude_config_dir` as its CLAUDE_CONFIG_DIR and `home` as HOME,
/// offline but for the configured servers, bounded by [`STEP`]; fails the test unless it
/// succeeds, and returns its stdout.
pub fn claude_mcp_list_in(claude_config_dir: &Path, home: &Path) -> String {
    let bin = tests_dir().join("node/node_modules/@anthropic-ai/claude-code/bin/claude.exe");
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/setup.sh (it runs `npm ci` in tests/node)",
        bin.display()
    );
    let logs = tempfile::tempdir().unwrap();
    let file = |name: &str| std::fs::File::create(logs.path().join(name)).unwrap();
    let read = |name: &str| std::fs::read_to_string(logs.path().join(name)).unwrap_or_default();
    let mut child = Command::new(bin)
        .args(["mcp", "list"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CLAUDE_CONFIG_DIR", claude_config_dir)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("start claude");
    let status = wait_within(&mut child, STEP, "claude mcp list", || {
        format!("stdout:\n{}\nstderr:\n{}", read("stdout"), read("stderr"))
    });
    assert!(
        status.success(),
        "`claude mcp list` failed ({status}); stdout:\n{}\nstderr:\n{}",
        read("stdout"),
        read("stderr")
    );
    read("stdout")
}
