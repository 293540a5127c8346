//! The real MCP clients of tests/node as judges of what Patchbay hands them: Codex's
//! `app-server` (its JSON-RPC over stdio: a thread, a tool call on one of its MCP servers, their
//! status), the MCP Inspector's `--cli`, and Gemini CLI's `mcp list`. Each runs with a cleared
//! environment (HOME, PATH and only what the caller names), as in a fresh login whose variables
//! are not those of this test process, and never with the network beyond loopback.

use crate::peers::STEP;
use crate::sdk_servers::node_dir;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Instant;

/// A script of an npm package in tests/node, checked to be there.
fn script(relative: &str) -> PathBuf {
    let path = node_dir().join("node_modules").join(relative);
    assert!(
        path.is_file(),
        "{} is missing: run scripts/setup.sh (it runs `npm ci` in tests/node)",
        path.display()
    );
    path
}

/// `node SCRIPT` with only HOME, PATH and `env`, in `cwd`.
fn node_command(script: &Path, home: &Path, cwd: &Path, env: &[(&str, &OsStr)]) -> Command {
    let mut cmd = Command::new("node");
    cmd.arg(script)
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(cwd)
        .stdin(Stdio::null());
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd
}

/// Codex's config with its model provider on a port nobody listens on, written before the rest
/// of `config.toml` (top-level keys must precede the `[mcp_servers.*]` tables): a thread starts
/// without reaching the internet, its model requests fail on loopback.
pub fn codex_offline_model(config: &Path) {
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let rest = std::fs::read_to_string(config).unwrap_or_default();
    std::fs::write(
        config,
        format!(
            "model_provider = \"offline\"\nmodel = \"offline-model\"\n\n{rest}\n\
             [model_providers.offline]\nname = \"offline\"\n\
             base_url = \"http://127.0.0.1:{dead_port}/v1\"\nwire_api = \"responses\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n"
        ),
    )
    .unwrap();
}

/// `codex app-server` (npm `@openai/codex`), initialized, killed on drop.
pub struct CodexAppServer {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
    logs: tempfile::TempDir,
}

impl CodexAppServer {
    /// Started with HOME, PATH, CODEX_HOME and `env`, then `initialize`d.
    pub fn start(home: &Path, codex_home: &Path, env: &[(&str, &OsStr)]) -> CodexAppServer {
        let logs = tempfile::tempdir().unwrap();
        let mut child = node_command(&script("@openai/codex/bin/codex.js"), home, home, env)
            .arg("app-server")
            .env("CODEX_HOME", codex_home)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(logs.path().join("stderr")).unwrap())
            .spawn()
            .expect("start codex app-server");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = CodexAppServer {
            child,
            stdin,
            lines,
            next_id: 1,
            logs,
        };
        server
            .request(
                "initialize",
                json!({ "clientInfo": { "name": "patchbay-e2e", "version": "1" },
                    "capabilities": null }),
            )
            .unwrap_or_else(|e| panic!("initialize: {e}\n{}", server.stderr()));
        server.send(&json!({ "method": "initialized" }));
        server
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write to codex app-server");
    }

    /// What it wrote on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.logs.path().join("stderr")).unwrap_or_default()
    }

    /// One request; its `result`, or its `error` object. Notifications in between are skipped.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "id": id, "method": method, "params": params }));
        let deadline = Instant::now() + STEP;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "codex app-server did not answer {method} within {STEP:?}:\n{}",
                    self.stderr()
                )
            });
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] != id {
                continue;
            }
            return match message.get("error") {
                Some(error) => Err(error.clone()),
                None => Ok(message["result"].clone()),
            };
        }
    }

    /// An ephemeral thread in `cwd`: its id. Its MCP servers start with it.
    pub fn thread(&mut self, cwd: &Path) -> String {
        let started = self
            .request("thread/start", json!({ "cwd": cwd, "ephemeral": true }))
            .unwrap_or_else(|e| panic!("thread/start: {e}\n{}", self.stderr()));
        started["thread"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no thread id: {started}"))
            .to_owned()
    }
}

impl Drop for CodexAppServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `mcp-inspector --cli ARGS` (npm `@modelcontextprotocol/inspector`) with only HOME and PATH,
/// within [`STEP`]; its output.
pub fn inspector_cli(home: &Path, args: &[&OsStr]) -> Output {
    let mut cmd = node_command(
        &script("@modelcontextprotocol/inspector/clients/launcher/build/index.js"),
        home,
        home,
        &[],
    );
    cmd.arg("--cli").args(args);
    crate::output_within(&mut cmd, STEP, "mcp-inspector --cli")
}

/// `gemini mcp list` (npm `@google/gemini-cli`) in `cwd`, with HOME `home` whose
/// `~/.gemini/trustedFolders.json` trusts `cwd` (as a user answers Gemini's first prompt:
/// user-level MCP servers are suppressed in untrusted folders); stdout and stderr together.
pub fn gemini_mcp_list_in(home: &Path, cwd: &Path) -> String {
    let gemini = home.join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    let trusted = gemini.join("trustedFolders.json");
    let mut folders: Value = std::fs::read_to_string(&trusted)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| json!({}));
    folders[cwd.to_str().unwrap()] = json!("TRUST_FOLDER");
    std::fs::write(&trusted, folders.to_string()).unwrap();
    let mut cmd = node_command(
        &script("@google/gemini-cli/bundle/gemini.js"),
        home,
        cwd,
        &[],
    );
    cmd.args(["mcp", "list"]);
    let out = crate::output_within(&mut cmd, STEP, "gemini mcp list");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "`gemini mcp list` failed:\n{text}");
    text
}
