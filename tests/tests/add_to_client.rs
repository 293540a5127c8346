//! "Add to CLIENT" and "Switch to Patchbay" through the CLI,
//! run as a process with HOME (and every client's directory) in a temp dir holding copies of the
//! realistic client files (src-tauri/crates/runtimes/tests/fixtures/clients/home): the entries
//! written, the rest of each file kept, the backup, a foreign entry refused, the mcp-remote
//! switch, and `status` counting Patchbay's own entries for their connector (never as new ones).
//! Claude Code and Codex judge what `add-to` writes for them: `claude mcp list` launches the entry
//! (with the environment it strips) and reports it Connected; `codex mcp list` reads it back;
//! `gemini mcp list` launches and reaches both kinds of entry and reports them Connected.

use patchbay_e2e::clients::gemini_mcp_list_in;
use patchbay_e2e::peers::{claude_mcp_list_in, Serving};
use patchbay_e2e::sdk_servers::SdkServer;
use patchbay_e2e::secret_scan::SecretScan;
use patchbay_e2e::{patchbay_bin, Sandbox};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Output;

fn run_in(sandbox: &Sandbox, home: &Path, path_var: &Path, args: &[&str]) -> Output {
    sandbox
        .command()
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("PATH", path_var)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("MCP_REMOTE_CONFIG_DIR")
        .current_dir(home)
        .args(args)
        .output()
        .expect("run patchbay")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn failed(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn lenient(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let cleaned = patchbay_runtimes::clients::jsonc::blank_comments_and_trailing_commas(&text);
    serde_json::from_str(&cleaned).unwrap()
}

fn backup(path: &Path) -> PathBuf {
    patchbay_runtimes::clients::write::backup_path(path)
}

struct Home {
    sandbox: Sandbox,
    home: PathBuf,
    /// A PATH without patchbay on it.
    empty_path: PathBuf,
    /// What every `run` printed, for the secret scan.
    outputs: RefCell<Vec<Output>>,
}

impl Home {
    fn new() -> Home {
        let sandbox = Sandbox::new(false);
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../src-tauri/crates/runtimes/tests/fixtures/clients/home");
        let home = sandbox.path().join("home");
        copy_dir(&fixtures, &home);
        let empty_path = sandbox.path().join("empty-bin");
        std::fs::create_dir_all(&empty_path).unwrap();
        Home {
            sandbox,
            home,
            empty_path,
            outputs: RefCell::new(Vec::new()),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = run_in(&self.sandbox, &self.home, &self.empty_path, args);
        self.outputs.borrow_mut().push(out.clone());
        out
    }

    /// The secret scan of the sandbox (the home with the clients' configs is inside it) and of
    /// everything `run` printed.
    fn scan(&self) -> SecretScan {
        self.outputs
            .borrow()
            .iter()
            .enumerate()
            .fold(SecretScan::new(self.sandbox.path()), |scan, (i, out)| {
                scan.output(&format!("patchbay run #{i}"), out)
            })
    }

    /// Patchbay's data directory (the sandbox's, through PATCHBAY_DATA_DIR), as entries name it.
    fn data_dir(&self) -> &str {
        self.sandbox.path().to_str().unwrap()
    }

    /// An entry's `args`: Patchbay runs on a data directory of its own, so `add-to` names it.
    fn connect_args(&self, name: &str) -> Value {
        json!(["--data-dir", self.data_dir(), "connect", name])
    }

    fn status(&self) -> Value {
        let out = self.run(&["status", "--json"]);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        })
    }
}

fn names(report: &Value) -> Vec<String> {
    report["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

fn found_in(report: &Value, name: &str) -> Vec<(String, String)> {
    let row = report["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("{name} missing: {report:#}"));
    row["found_in"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["client"].as_str().unwrap().to_owned(),
                f["server_name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn add_to_each_client_keeps_the_rest_and_is_counted_for_its_connector() {
    let h = Home::new();
    let cursor = h.home.join(".cursor/mcp.json");
    let vscode = h.home.join(".config/Code/User/mcp.json");
    let desktop = h.home.join(".config/Claude/claude_desktop_config.json");
    let windsurf = h.home.join(".codeium/windsurf/mcp_config.json");
    let before = h.status();
    let rows_before = names(&before);
    assert!(
        rows_before.contains(&"linear".to_string()),
        "{rows_before:?}"
    );
    let original_cursor = std::fs::read_to_string(&cursor).unwrap();

    let text = ok(&h.run(&["add-to", "cursor", "linear"]));
    assert!(text.contains("Added linear to Cursor"), "{text}");
    assert!(text.contains(".patchbay-backup"), "{text}");
    // Not on PATH: the absolute path of the running binary.
    let absolute = patchbay_bin()
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let entry = json!({"command": absolute, "args": h.connect_args("linear")});
    let after = lenient(&cursor);
    assert_eq!(after["mcpServers"]["linear"], entry);
    let mut expected = serde_json::from_str::<Value>(&original_cursor).unwrap();
    expected["mcpServers"]["linear"] = entry.clone();
    assert_eq!(after, expected);
    assert_eq!(
        std::fs::read_to_string(backup(&cursor)).unwrap(),
        original_cursor
    );

    // VS Code: its comments survive; Claude Desktop and Windsurf get their own shapes.
    ok(&h.run(&["add-to", "vscode", "linear"]));
    let vs_text = std::fs::read_to_string(&vscode).unwrap();
    assert!(
        vs_text.contains("/* legacy SSE endpoint */") && vs_text.contains("// Added with"),
        "{vs_text}"
    );
    assert_eq!(
        lenient(&vscode)["servers"]["linear"],
        json!({"type": "stdio", "command": absolute, "args": h.connect_args("linear")})
    );
    ok(&h.run(&["add-to", "windsurf", "github"]));
    assert_eq!(
        lenient(&windsurf)["mcpServers"]["github"],
        json!({"command": absolute, "args": h.connect_args("github")})
    );
    // Claude Desktop already bridges linear with mcp-remote under that name: not Patchbay's.
    let desktop_text = std::fs::read_to_string(&desktop).unwrap();
    let err = failed(&h.run(&["add-to", "claude-desktop", "linear"]));
    assert!(
        err.contains("already has a server named \"linear\" that is not Patchbay's"),
        "{err}"
    );
    assert!(!err.contains("lin_api_fixture_literal"), "{err}");
    assert_eq!(std::fs::read_to_string(&desktop).unwrap(), desktop_text);
    assert!(!backup(&desktop).exists());
    let err = failed(&h.run(&["add-to", "claude-desktop", "github", "--via", "gateway"]));
    assert!(err.contains("gateway"), "{err}");
    assert_eq!(std::fs::read_to_string(&desktop).unwrap(), desktop_text);

    // Patchbay's entries count for their connector; none becomes a connector of its own.
    let report = h.status();
    assert_eq!(names(&report), rows_before, "{report:#}");
    let linear = found_in(&report, "linear");
    for client in ["cursor", "vs_code"] {
        assert!(
            linear.contains(&(client.to_string(), "linear".to_string())),
            "{linear:?}"
        );
    }
    assert!(found_in(&report, "github").contains(&("windsurf".into(), "github".into())));

    // Again: nothing to do.
    let text = ok(&h.run(&["add-to", "cursor", "linear"]));
    assert!(text.contains("already has linear"), "{text}");
    // Without the tests' PATCHBAY_CONNECT_COMMAND, the rule itself: this build's binary sits in
    // the build tree (target/), so it is never written, even with its directory on PATH: bare
    // `patchbay`, and the write says what to install (issue 21).
    let build_dir = patchbay_bin().parent().unwrap().to_path_buf();
    let run_bin = |bin: &Path, path_var: &Path| -> Output {
        h.sandbox
            .command_for(bin)
            .env_remove(patchbay_e2e::CONNECT_COMMAND_ENV)
            .env("HOME", &h.home)
            .env("XDG_CONFIG_HOME", h.home.join(".config"))
            .env("PATH", path_var)
            .current_dir(&h.home)
            .args(["add-to", "cursor", "linear"])
            .output()
            .expect("run patchbay")
    };
    let text = ok(&run_bin(&patchbay_bin(), &build_dir));
    assert!(
        text.contains("Warning: Patchbay's command-line tool is not installed"),
        "{text}"
    );
    assert_eq!(
        lenient(&cursor)["mcpServers"]["linear"]["command"],
        "patchbay"
    );
    // An installed copy (outside any build tree) is written by its absolute path, and by its
    // PATH entry when that links to it.
    let installed = h.sandbox.path().join("opt/patchbay/bin/patchbay");
    std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
    std::fs::copy(patchbay_bin(), &installed).unwrap();
    let text = ok(&run_bin(&installed, &h.empty_path));
    assert!(!text.contains("Warning"), "{text}");
    assert_eq!(
        lenient(&cursor)["mcpServers"]["linear"],
        json!({"command": installed, "args": h.connect_args("linear")})
    );
    let bin_dir = h.sandbox.path().join("local-bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::os::unix::fs::symlink(&installed, bin_dir.join("patchbay")).unwrap();
    ok(&run_bin(&installed, &bin_dir));
    assert_eq!(
        lenient(&cursor)["mcpServers"]["linear"],
        json!({"command": bin_dir.join("patchbay"), "args": h.connect_args("linear")})
    );
    assert_eq!(
        std::fs::read_to_string(backup(&cursor)).unwrap(),
        original_cursor,
        "the backup is never overwritten"
    );
    h.scan()
        .none_issued("no authorization: entries that run `patchbay connect` hold no secret")
        .assert_clean();
}

#[test]
fn a_foreign_entry_is_refused_unless_replaced_and_bad_input_is_named() {
    let h = Home::new();
    let cursor = h.home.join(".cursor/mcp.json");
    let original = std::fs::read_to_string(&cursor).unwrap();
    let err = failed(&h.run(&["add-to", "cursor", "github"]));
    assert!(
        err.contains("not Patchbay's") && err.contains("Cursor"),
        "{err}"
    );
    assert!(!err.contains("ghp_"), "{err}");
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), original);
    // --dry-run: the entry now and after, its literal token hidden, nothing written.
    let text = ok(&h.run(&["add-to", "cursor", "github", "--replace", "--dry-run"]));
    assert!(text.contains("would replace one entry in Cursor"), "{text}");
    assert!(text.contains("Now:\n\"github\": {"), "{text}");
    assert!(text.contains("\"connect\",\n    \"github\""), "{text}");
    assert!(!text.contains("ghp_"), "{text}");
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), original);
    let text = ok(&h.run(&["add-to", "cursor", "github", "--replace"]));
    assert!(text.contains("now goes through Patchbay"), "{text}");
    assert_eq!(
        lenient(&cursor)["mcpServers"]["github"]["args"],
        h.connect_args("github")
    );

    let err = failed(&h.run(&["add-to", "emacs", "github"]));
    assert!(err.contains("unknown client"), "{err}");
    let err = failed(&h.run(&["add-to", "cursor", "no-such-connector"]));
    assert!(
        err.contains("no connector named \"no-such-connector\" in use"),
        "{err}"
    );
    // A local (stdio) connector cannot be fronted.
    let err = failed(&h.run(&["add-to", "cursor", "memory"]));
    assert!(err.contains("local (stdio)"), "{err}");
    h.scan()
        .none_issued("no authorization: refused writes hold no secret")
        .assert_clean();
}

#[test]
fn an_mcp_remote_entry_is_switched_and_its_connector_kept() {
    let h = Home::new();
    let desktop = h.home.join(".config/Claude/claude_desktop_config.json");
    let before = lenient(&desktop);
    // sdk-demo is only known from this mcp-remote entry: switching manages it first.
    let report = h.status();
    let row = report["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["url"] == "http://localhost:45591/mcp")
        .unwrap_or_else(|| panic!("{report:#}"))
        .clone();
    assert_eq!(row["origin"], "client");
    let connector = row["name"].as_str().unwrap().to_owned();

    let list = |h: &Home| -> Vec<(String, String, Value)> {
        let out = ok(&h.run(&["switch", "--list", "--json"]));
        serde_json::from_str::<Value>(&out)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["client"].as_str().unwrap().to_owned(),
                    c["entry"].as_str().unwrap().to_owned(),
                    c["connector"].clone(),
                )
            })
            .collect()
    };
    let candidates = list(&h);
    assert!(
        candidates.contains(&("claude-desktop".into(), "sdk-demo".into(), json!(connector))),
        "{candidates:?}"
    );
    assert!(
        candidates
            .iter()
            .any(|(c, e, _)| c == "cursor" && e == "team-demo"),
        "{candidates:?}"
    );
    assert!(candidates.iter().all(|(_, e, _)| e != "filesystem"));

    let text = ok(&h.run(&["switch", "claude-desktop", "sdk-demo"]));
    assert!(
        !list(&h).iter().any(|(_, e, _)| e == "sdk-demo"),
        "switched: no longer offered"
    );
    assert!(text.contains("now managed by Patchbay"), "{text}");
    let after = lenient(&desktop);
    assert_eq!(
        after["mcpServers"]["sdk-demo"]["args"],
        h.connect_args(&connector)
    );
    let mut expected = before.clone();
    expected["mcpServers"]["sdk-demo"] = after["mcpServers"]["sdk-demo"].clone();
    assert_eq!(after, expected);
    assert!(backup(&desktop).exists());

    // The connector outlives the entry that named its URL, now as Patchbay's own.
    let report = h.status();
    let found = found_in(&report, &connector);
    assert!(
        found.contains(&("claude_desktop".into(), "sdk-demo".into())),
        "{found:?}"
    );
    let row = report["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == connector.as_str())
        .unwrap();
    assert_eq!(row["origin"], "catalog", "{row:#}");

    // Not an mcp-remote entry: refused, nothing written.
    let text = std::fs::read_to_string(&desktop).unwrap();
    let err = failed(&h.run(&["switch", "claude-desktop", "filesystem"]));
    assert!(err.contains("does not run mcp-remote"), "{err}");
    let err = failed(&h.run(&["switch", "claude-desktop", "nope"]));
    assert!(err.contains("no server named \"nope\""), "{err}");
    assert_eq!(std::fs::read_to_string(&desktop).unwrap(), text);

    // Cursor's mcp-remote entry with flags, to the catalog connector with that URL.
    let cursor = h.home.join(".cursor/mcp.json");
    ok(&h.run(&["switch", "cursor", "team-demo"]));
    let entry = &lenient(&cursor)["mcpServers"]["team-demo"];
    // `--data-dir D` first: Patchbay runs on the sandbox's directory.
    assert_eq!(entry["args"][2], "connect", "{entry}");
    h.scan()
        .none_issued("no authorization: a switched entry runs `patchbay connect`")
        .assert_clean();
}

/// A raw HTTP/1.1 POST on loopback; the status code, or `None` while nothing answers.
fn post_status(port: u16, path: &str, authorization: Option<&str>) -> Option<u16> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

#[test]
fn via_the_gateway_the_client_gets_one_secret_the_gateway_accepts() {
    let h = Home::new();
    let cursor = h.home.join(".cursor/mcp.json");
    let report = h.status();
    // A remote connector on loopback with nothing listening: the gateway's answer to an
    // accepted request is then its own 502, told apart from the 401 of a refused one.
    let connector = report["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["url"] == "http://localhost:45591/mcp")
        .and_then(|r| r["name"].as_str())
        .unwrap_or_else(|| panic!("{report:#}"))
        .to_owned();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let port_arg = port.to_string();

    let text = ok(&h.run(&[
        "add-to", "cursor", &connector, "--via", "gateway", "--port", &port_arg,
    ]));
    assert!(text.contains("Gateway client \"cursor\" created"), "{text}");
    let entry = lenient(&cursor)["mcpServers"][connector.as_str()].clone();
    assert_eq!(
        entry["url"],
        format!("http://127.0.0.1:{port}/mcp/{connector}")
    );
    let bearer = entry["headers"]["Authorization"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(bearer.starts_with("Bearer pbgw_"), "{entry}");
    assert_eq!(
        entry.as_object().unwrap().len(),
        2,
        "url and headers: {entry}"
    );

    // A second connector reuses the client's secret: one gateway client for Cursor.
    ok(&h.run(&[
        "add-to",
        "cursor",
        "github",
        "--via",
        "gateway",
        "--replace",
        "--port",
        &port_arg,
    ]));
    let github = lenient(&cursor)["mcpServers"]["github"].clone();
    assert_eq!(github["headers"]["Authorization"], bearer.as_str());
    // Refused writes leave no secret registered behind them.
    failed(&h.run(&["add-to", "claude-desktop", "github", "--via", "gateway"]));
    failed(&h.run(&["add-to", "windsurf", "no-such", "--via", "gateway"]));
    let list = ok(&h.run(&["gateway", "client", "list", "--json"]));
    let labels: Vec<String> = serde_json::from_str::<Value>(&list)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(labels, ["cursor"]);
    // Patchbay's gateway entries count for their connectors too.
    let report = h.status();
    assert!(found_in(&report, &connector).contains(&("cursor".into(), connector.clone())));

    // The running gateway accepts the secret written into Cursor's config, and only it.
    let mut gateway = h
        .sandbox
        .command()
        .env("HOME", &h.home)
        .env("XDG_CONFIG_HOME", h.home.join(".config"))
        .env("PATH", &h.empty_path)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .current_dir(&h.home)
        .args(["gateway", "serve", "--port", &port_arg])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the gateway");
    let path = format!("/mcp/{connector}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let refused = loop {
        if let Some(status) = post_status(port, &path, None) {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the gateway did not listen on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let wrong = post_status(port, &path, Some("Bearer pbgw_0000")).unwrap();
    let accepted = post_status(port, &path, Some(&bearer)).unwrap();
    let _ = gateway.kill();
    let _ = gateway.wait();
    assert_eq!(refused, 401);
    assert_eq!(wrong, 401);
    assert_eq!(accepted, 502, "accepted, and the upstream is unreachable");
    h.scan()
        .gateway_client("cursor", &json!({ "Authorization": bearer }))
        .excluding(
            &cursor,
            "Cursor's config: `add-to --via gateway` writes the gateway client's secret there, \
             which is the point",
        )
        .assert_clean();
}

/// Run `command args` as the client would (HOME in the sandbox), speak newline-delimited
/// JSON-RPC to it: initialize, then tools/list. The tools listed, or a panic saying what came.
fn list_tools_over_stdio(h: &Home, command: &str, args: &[String]) -> Vec<String> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = std::process::Command::new(command)
        .args(args)
        .env("HOME", &h.home)
        .env("XDG_CONFIG_HOME", h.home.join(".config"))
        .env("PATCHBAY_DATA_DIR", h.sandbox.path())
        .env("PATH", &h.empty_path)
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            format!("unix:path={}/no-such-bus", h.sandbox.path().display()),
        )
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .current_dir(&h.home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{command}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if lines.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    let answer = |stdin: &mut std::process::ChildStdin, request: Value| -> Value {
        writeln!(stdin, "{request}").unwrap();
        let id = request["id"].clone();
        loop {
            let line = received
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("no answer to {request}: {e}"));
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON-RPC on stdout ({e}): {line}"));
            if message["id"] == id {
                return message;
            }
        }
    };
    let init = answer(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "add-to-test", "version": "1"}}}),
    );
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    let tools = answer(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    tools["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{tools}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_switched_entry_runs_as_the_client_launches_it() {
    // A real MCP server on loopback (the SDK's example), bridged by mcp-remote in Cursor's
    // config, is switched; the entry is then run exactly as Cursor would run it.
    let server = patchbay_e2e::sdk_servers::SdkServer::streamable_http();
    let h = Home::new();
    let cursor = h.home.join(".cursor/mcp.json");
    let mut config = lenient(&cursor);
    config["mcpServers"]["sdk-example"] =
        json!({"command": "npx", "args": ["-y", "mcp-remote", server.url()]});
    std::fs::write(&cursor, serde_json::to_string_pretty(&config).unwrap()).unwrap();

    ok(&h.run(&["switch", "cursor", "sdk-example"]));
    let entry = lenient(&cursor)["mcpServers"]["sdk-example"].clone();
    let command = entry["command"].as_str().unwrap().to_owned();
    let args: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        args[..3],
        ["--data-dir", h.data_dir(), "connect"],
        "{entry}"
    );
    let tools = list_tools_over_stdio(&h, &command, &args);
    assert!(tools.iter().any(|t| t == "greet"), "{tools:?}");

    // The same connector added to VS Code through the gateway: the entry's URL and header, as
    // VS Code would send them, get the server's initialize answer through a running gateway.
    let connector = args[3].clone();
    let port = patchbay_e2e::sdk_servers::free_port();
    let port_arg = port.to_string();
    ok(&h.run(&[
        "add-to", "vscode", &connector, "--via", "gateway", "--port", &port_arg,
    ]));
    let entry =
        lenient(&h.home.join(".config/Code/User/mcp.json"))["servers"][connector.as_str()].clone();
    assert_eq!(entry["type"], "http", "{entry}");
    let url = entry["url"].as_str().unwrap();
    let path = url
        .strip_prefix(&format!("http://127.0.0.1:{port}"))
        .unwrap_or_else(|| panic!("{url}"))
        .to_owned();
    let authorization = entry["headers"]["Authorization"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut gateway = h
        .sandbox
        .command()
        .env("HOME", &h.home)
        .env("XDG_CONFIG_HOME", h.home.join(".config"))
        .env("PATH", &h.empty_path)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .current_dir(&h.home)
        .args(["gateway", "serve", "--port", &port_arg])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the gateway");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = post_status(port, &path, Some(&authorization)) {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the gateway did not listen on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let _ = gateway.kill();
    let _ = gateway.wait();
    assert_eq!(status, 200, "initialize through the gateway");
    h.scan()
        .issued_by("the open SDK server", &server)
        .gateway_client("vscode", &json!({ "Authorization": authorization }))
        .excluding(
            h.home.join(".config/Code/User/mcp.json"),
            "VS Code's config: `add-to --via gateway` writes the gateway client's secret there, \
             which is the point",
        )
        .assert_clean();
}

/// A home with no client's files yet, and a PATH without patchbay on it, in `sandbox`.
fn fresh_home(sandbox: &Sandbox) -> (PathBuf, PathBuf) {
    let home = sandbox.path().join("fresh-home");
    let empty_path = sandbox.path().join("empty-bin");
    for dir in [&home, &empty_path] {
        std::fs::create_dir_all(dir).unwrap();
    }
    (home, empty_path)
}

/// `add-to claude-code` and `add-to codex` on a Patchbay running on a data directory of its own
/// and one catalog (both written into the entry), in a home with neither client's files yet:
/// the real Claude Code launches the entry and reaches the connector; Codex reads the entry
/// as written; a second add changes nothing; a foreign entry is refused naming `--replace`.
#[test]
fn claude_code_and_codex_run_what_add_to_writes_for_them() {
    let server = SdkServer::streamable_http();
    let sandbox = Sandbox::new(false);
    let (home, empty_path) = fresh_home(&sandbox);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": { "demo": { "type": "http", "url": server.url() } } }).to_string(),
    );
    let catalog = catalog.to_str().unwrap();
    let run = |args: &[&str]| run_in(&sandbox, &home, &empty_path, args);

    let said = ok(&run(&[
        "--catalog",
        catalog,
        "add-to",
        "claude-code",
        "demo",
    ]));
    assert!(said.contains("Added demo to Claude Code"), "{said}");
    let said = ok(&run(&["--catalog", catalog, "add-to", "claude", "demo"]));
    assert!(said.contains("already has demo"), "{said}");
    let entry = &lenient(&home.join(".claude.json"))["mcpServers"]["demo"];
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(args[0], "--data-dir", "{entry}");
    assert_eq!(
        args[2..],
        ["--catalog", catalog, "connect", "demo"],
        "{entry}"
    );
    // Claude Code runs `patchbay` with only PATH, HOME and its own variables: the data dir and
    // catalog come from the entry.
    let listed = claude_mcp_list_in(&home, &home);
    let line = listed
        .lines()
        .find(|l| l.starts_with("demo:"))
        .unwrap_or_else(|| panic!("demo not listed:\n{listed}"));
    assert!(line.contains("Connected"), "{listed}");

    let said = ok(&run(&["--catalog", catalog, "add-to", "codex", "demo"]));
    assert!(said.contains("Added demo to Codex"), "{said}");
    let codex_home = home.join(".codex");
    let out = std::process::Command::new("node")
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("node/node_modules/@openai/codex/bin/codex.js"),
        )
        .args(["mcp", "list", "--json"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("CODEX_HOME", &codex_home)
        .current_dir(&home)
        .output()
        .expect("run codex");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let demo = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "demo")
        .unwrap_or_else(|| panic!("{list:#}"));
    assert_eq!(demo["enabled"], true, "{demo}");
    assert_eq!(demo["transport"]["type"], "stdio", "{demo}");
    assert_eq!(
        demo["transport"]["command"].as_str(),
        Some(patchbay_bin().to_str().unwrap())
    );
    assert!(
        demo["transport"]["env_vars"]
            .as_array()
            .unwrap()
            .contains(&json!("DBUS_SESSION_BUS_ADDRESS")),
        "{demo}"
    );

    // A foreign entry of the same name: refused, the way out named.
    std::fs::write(
        codex_home.join("config.toml"),
        "[mcp_servers.demo]\nurl = \"https://elsewhere.example/mcp\"\n",
    )
    .unwrap();
    let err = failed(&run(&["--catalog", catalog, "add-to", "codex", "demo"]));
    assert!(err.contains("--replace"), "{err}");
    ok(&run(&[
        "--catalog",
        catalog,
        "add-to",
        "codex",
        "demo",
        "--replace",
    ]));
    // No lock file left beside either client's config.
    for dir in [home.clone(), codex_home] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!name.ends_with(".lock"), "{name} left in {}", dir.display());
        }
    }
}

/// `add-to gemini` judged by Gemini CLI 0.61.0 in a fresh home, in a folder the user trusted:
/// `gemini mcp list` launches the stdio entry (`patchbay connect`, with the data dir and catalog
/// written into it) and reaches the gateway entry with the client's secret, and shows both
/// Connected.
#[test]
fn gemini_cli_shows_both_entries_add_to_writes_connected() {
    let direct = SdkServer::streamable_http();
    let relayed = SdkServer::streamable_http();
    let sandbox = Sandbox::new(false);
    let (home, empty_path) = fresh_home(&sandbox);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": {
            "demo": { "type": "http", "url": direct.url() },
            "relay": { "type": "http", "url": relayed.url() } } })
        .to_string(),
    );
    let catalog_arg = catalog.to_str().unwrap();
    let port = patchbay_e2e::sdk_servers::free_port().to_string();
    let run = |args: &[&str]| run_in(&sandbox, &home, &empty_path, args);
    let said = ok(&run(&[
        "--catalog",
        catalog_arg,
        "add-to",
        "gemini",
        "demo",
    ]));
    assert!(said.contains("Added demo to Gemini"), "{said}");
    ok(&run(&[
        "--catalog",
        catalog_arg,
        "add-to",
        "gemini",
        "relay",
        "--via",
        "gateway",
        "--port",
        &port,
    ]));
    let gateway = Serving::start_on(&sandbox, &catalog, port.parse().unwrap());

    let listed = gemini_mcp_list_in(&home, &home);
    for name in ["demo", "relay"] {
        let line = listed
            .lines()
            .find(|l| l.contains(&format!("{name}:")))
            .unwrap_or_else(|| panic!("{name} not listed:\n{listed}"));
        assert!(
            line.contains("Connected") && !line.contains("Disconnected"),
            "{listed}\n{}",
            gateway.output()
        );
    }
}

/// A client config that is a FIFO (a read would block for ever), `/dev/zero` behind a link, or
/// not JSON: `status` answers at once, names each problem per client in `client_errors` and in
/// its text, and lists the other clients' servers.
#[cfg(unix)]
#[test]
fn unreadable_client_configs_are_named_and_the_rest_still_listed() {
    let h = Home::new();
    let before = names(&h.status());
    let cursor = h.home.join(".cursor/mcp.json");
    std::fs::remove_file(&cursor).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&cursor)
        .status()
        .unwrap();
    assert!(made.success());
    let windsurf = h.home.join(".codeium/windsurf/mcp_config.json");
    std::fs::remove_file(&windsurf).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &windsurf).unwrap();
    std::fs::write(
        h.home.join(".config/Claude/claude_desktop_config.json"),
        "{ not json",
    )
    .unwrap();

    let report = h.status();
    let errors: Vec<&str> = report["client_errors"]
        .as_array()
        .unwrap_or_else(|| panic!("{report:#}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(errors.len(), 3, "{errors:#?}");
    for (client, says) in [
        ("Cursor", "not a regular file"),
        ("Windsurf", "not a regular file"),
        ("Claude Desktop", "not valid JSON"),
    ] {
        assert!(
            errors.iter().any(
                |e| e.starts_with(&format!("{client}'s config could not be read"))
                    && e.contains(says)
            ),
            "{client}: {errors:#?}"
        );
    }
    // VS Code's, Gemini's, Codex's and Claude Code's servers are still there.
    let after = names(&report);
    assert!(!after.is_empty());
    assert!(
        after.iter().all(|n| before.contains(n)),
        "{after:?} vs {before:?}"
    );
    // (It exits 1: rows need attention; what it says is what counts.)
    let text = String::from_utf8_lossy(&h.run(&["status"]).stdout).into_owned();
    assert!(
        text.contains("client config: Cursor's config could not be read"),
        "{text}"
    );
}

/// Issue 23's matrix: each way a config can be unreadable (a FIFO, `/dev/zero` behind a link,
/// 50 MB, nesting 10,000 deep, mode 000) for each client whose config Patchbay reads most
/// (Cursor, VS Code, Gemini CLI, Codex, Claude Code): `status` answers within 2 s, names that
/// client's problem in `client_errors`, and still lists every other client's servers. Mode 000
/// stops nobody running as root, so there `status` runs as `nobody` (setpriv).
#[cfg(unix)]
#[test]
fn every_unreadable_config_of_every_client_is_named_within_two_seconds() {
    use std::os::unix::fs::PermissionsExt;
    let h = Home::new();
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let clients = [
        ("Cursor", ".cursor/mcp.json"),
        ("VS Code", ".config/Code/User/mcp.json"),
        ("Gemini CLI", ".gemini/settings.json"),
        ("Codex", ".codex/config.toml"),
        ("Claude Code", ".claude.json"),
    ];
    let whole = h.status();
    // Every (client, server name) the report lists.
    let listings = |report: &Value| -> std::collections::BTreeSet<(String, String)> {
        names(report)
            .iter()
            .flat_map(|name| found_in(report, name))
            .collect()
    };
    // How `found_in` names a client.
    let client_id = |name: &str| {
        match name {
            "Cursor" => "cursor",
            "VS Code" => "vs_code",
            "Gemini CLI" => "gemini_cli",
            "Codex" => "codex",
            _ => "claude_code",
        }
        .to_owned()
    };
    type Break = fn(&Path);
    let variants: [(&str, Break); 5] = [
        ("a FIFO", |p| {
            assert!(std::process::Command::new("mkfifo")
                .arg(p)
                .status()
                .unwrap()
                .success())
        }),
        ("/dev/zero", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
        ("50 MB", |p| {
            std::fs::write(p, vec![b'x'; 50 * 1024 * 1024]).unwrap()
        }),
        ("10,000 deep", |p| {
            let toml = p.extension().is_some_and(|e| e == "toml");
            let deep = if toml {
                format!("a = {}{}", "[".repeat(10_000), "]".repeat(10_000))
            } else {
                format!("{}{}", "[".repeat(10_000), "]".repeat(10_000))
            };
            std::fs::write(p, deep).unwrap()
        }),
        ("mode 000", |p| {
            std::fs::write(p, "{}").unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o000)).unwrap();
        }),
    ];
    if root {
        // `nobody` reads the home and writes a data directory of its own.
        std::fs::set_permissions(h.sandbox.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&h.home)
            .status()
            .unwrap()
            .success());
    }
    let mut slowest = std::time::Duration::ZERO;
    for (variant, break_it) in variants {
        for (client, file) in clients {
            let path = h.home.join(file);
            let kept = h.sandbox.path().join("kept-config");
            std::fs::rename(&path, &kept).unwrap();
            break_it(&path);
            let unprivileged = root && variant == "mode 000";
            let mut command = if unprivileged {
                // Found on this process's PATH: the child's PATH is empty.
                let setpriv = std::env::split_paths(&std::env::var_os("PATH").unwrap())
                    .map(|dir| dir.join("setpriv"))
                    .find(|p| p.is_file())
                    .expect("setpriv (util-linux) runs `status` as nobody");
                let mut c = std::process::Command::new(setpriv);
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                    .arg(patchbay_bin());
                c
            } else {
                std::process::Command::new(patchbay_bin())
            };
            let data = h.home.join(".patchbay-data");
            command
                .env_clear()
                .env("PATH", &h.empty_path)
                .env("HOME", &h.home)
                .env("XDG_CONFIG_HOME", h.home.join(".config"))
                .env("PATCHBAY_DATA_DIR", &data)
                .env(
                    patchbay_e2e::CONNECT_COMMAND_ENV,
                    patchbay_e2e::connect_command(),
                )
                .env(
                    "DBUS_SESSION_BUS_ADDRESS",
                    format!("unix:path={}/no-such-bus", h.home.display()),
                )
                .current_dir(&h.home)
                .args(["status", "--json"])
                .stdin(std::process::Stdio::null());
            if root {
                std::fs::create_dir_all(&data).unwrap();
                std::process::Command::new("chown")
                    .args(["-R", "65534:65534"])
                    .arg(&data)
                    .status()
                    .unwrap();
            }
            let started = std::time::Instant::now();
            let out = command.output().unwrap();
            let took = started.elapsed();
            slowest = slowest.max(took);
            let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!(
                    "{variant} as {client}'s config: {e}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
            let errors: Vec<&str> = report["client_errors"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            assert!(
                errors
                    .iter()
                    .any(|e| e.starts_with(&format!("{client}'s config could not be read"))),
                "{variant} as {client}'s config is not named: {errors:#?}"
            );
            assert!(
                took < std::time::Duration::from_secs(2),
                "{variant} as {client}'s config: {took:?}"
            );
            // Every server another client lists is still listed (under whatever name).
            let listed = listings(&report);
            for (by, server) in listings(&whole) {
                assert!(
                    by == client_id(client) || listed.contains(&(by.clone(), server.clone())),
                    "{variant} as {client}'s config: {by}'s {server} is gone ({listed:?})"
                );
            }
            std::fs::remove_file(&path).unwrap();
            std::fs::rename(&kept, &path).unwrap();
        }
    }
    println!("25 unreadable configs, each named; the slowest status took {slowest:?}");
}
