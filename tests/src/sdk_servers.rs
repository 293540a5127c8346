//! The MCP TypeScript SDK's example servers (npm `@modelcontextprotocol/sdk` in tests/node), run
//! as shipped through tests/node/sdk-example-server.mjs on 127.0.0.1 and a free port, for the
//! connection-check tests and benchmark: streamable HTTP (`simpleStreamableHttp.js`, also with
//! `--oauth` and its authorization server), legacy SSE (`simpleSseServer.js`), and stdio
//! (`mcpServerOutputSchema.js`, started by the check itself). Needs only std and tempfile, so the
//! check crate's benchmark includes it by path.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long an example may take to listen.
const STARTUP: Duration = Duration::from_secs(30);

/// tests/node.
pub fn node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|p| p.join("tests/node"))
        .find(|p| p.join("sdk-example-server.mjs").is_file())
        .expect("tests/node/sdk-example-server.mjs above this crate")
}

/// The SDK's example servers' directory.
pub fn examples_dir() -> PathBuf {
    let dir = node_dir().join("node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server");
    assert!(
        dir.is_dir(),
        "{} is missing: run scripts/setup.sh (it runs `npm ci` in tests/node)",
        dir.display()
    );
    dir
}

/// The stdio example as a catalog entry's command and arguments: `node <example>`.
pub fn stdio_command() -> (String, Vec<String>) {
    let example = examples_dir().join("mcpServerOutputSchema.js");
    ("node".into(), vec![example.display().to_string()])
}

/// A port nobody listens on now (the OS's pick, released at once).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A running example, killed on drop. Its output goes to files outside any data directory.
pub struct SdkServer {
    child: Child,
    logs: tempfile::TempDir,
    pub port: u16,
    /// The authorization server's port (`--oauth` only).
    pub auth_port: Option<u16>,
}

impl SdkServer {
    /// `simpleStreamableHttp.js`: streamable HTTP at `/mcp`, no authorization.
    pub fn streamable_http() -> SdkServer {
        SdkServer::start("simpleStreamableHttp.js", &[], free_port(), false)
    }

    /// `simpleStreamableHttp.js --oauth`: every `/mcp` request needs a bearer token from its
    /// authorization server (dynamic registration, PKCE, an auto-approving `/authorize`).
    pub fn streamable_http_oauth() -> SdkServer {
        SdkServer::start("simpleStreamableHttp.js", &["--oauth"], free_port(), true)
    }

    /// `simpleSseServer.js`: the deprecated HTTP+SSE transport, its stream at `GET /mcp` and
    /// its messages at `POST /messages`.
    pub fn sse() -> SdkServer {
        SdkServer::sse_on(free_port())
    }

    /// The SSE example on a given port (a port a test saw refused before).
    pub fn sse_on(port: u16) -> SdkServer {
        SdkServer::start("simpleSseServer.js", &[], port, false)
    }

    pub fn start(example: &str, args: &[&str], port: u16, auth: bool) -> SdkServer {
        assert!(
            examples_dir().join(example).is_file(),
            "no example {example}"
        );
        let logs = tempfile::tempdir().expect("tempdir");
        let auth_port = auth.then(|| loop {
            let p = free_port();
            if p != port {
                break p;
            }
        });
        let file = |name: &str| std::fs::File::create(logs.path().join(name)).expect("log file");
        let mut cmd = Command::new("node");
        cmd.current_dir(node_dir())
            .arg("--import")
            .arg(node_dir().join("record-issued.mjs"))
            .arg("sdk-example-server.mjs")
            .arg(example)
            .args(args)
            .env("MCP_PORT", port.to_string())
            .env("PATCHBAY_E2E_ISSUED", logs.path().join("issued.jsonl"))
            .stdin(Stdio::null())
            .stdout(file("stdout"))
            .stderr(file("stderr"));
        if let Some(p) = auth_port {
            cmd.env("MCP_AUTH_PORT", p.to_string());
        }
        let child = cmd
            .spawn()
            .expect("start node (is Node.js installed? scripts/setup.sh installs it)");
        let mut server = SdkServer {
            child,
            logs,
            port,
            auth_port,
        };
        server.wait_listening();
        server
    }

    fn wait_listening(&mut self) {
        let deadline = Instant::now() + STARTUP;
        let listening = |port: u16| {
            TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1))
                .is_ok()
        };
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                panic!(
                    "the SDK example exited ({status}) before listening:\n{}",
                    self.output()
                );
            }
            if listening(self.port) && self.auth_port.is_none_or(listening) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the SDK example did not listen on 127.0.0.1:{} within {STARTUP:?}:\n{}",
                self.port,
                self.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its stderr and stdout so far.
    pub fn output(&self) -> String {
        let read =
            |name: &str| std::fs::read_to_string(self.logs.path().join(name)).unwrap_or_default();
        format!("{}{}", read("stderr"), read("stdout"))
    }

    /// What it issued and was shown (tests/node/record-issued.mjs writes them down): (label,
    /// value) lines, read by tests/src/secret_scan.rs.
    pub fn issued_file(&self) -> PathBuf {
        self.logs.path().join("issued.jsonl")
    }

    /// The MCP endpoint (the SSE stream, for the SSE example) on 127.0.0.1.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The MCP endpoint as the OAuth example names it in its metadata (`resource`).
    pub fn localhost_url(&self) -> String {
        format!("http://localhost:{}/mcp", self.port)
    }
}

impl Drop for SdkServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
