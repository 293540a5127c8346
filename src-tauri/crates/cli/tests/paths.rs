//! `patchbay paths` against the real binary: with no data directory given, Patchbay's own files
//! are in the XDG directories and the other programs' under the home, spelled out here by hand;
//! and each printed file is the one the other commands really read and write.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A home and XDG directories of its own, nothing else of the caller's environment that moves a
/// file, and a D-Bus address leading nowhere (no keychain is touched).
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let home = Home {
            dir: tempfile::tempdir().unwrap(),
        };
        for sub in ["home", "config", "data", "cache"] {
            std::fs::create_dir_all(home.at(sub)).unwrap();
        }
        home
    }

    fn at(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_patchbay"));
        for var in [
            "PATCHBAY_DATA_DIR",
            "PATCHBAY_DEFAULT_CATALOG",
            "CLAUDE_CONFIG_DIR",
            "CLAUDE_SECURESTORAGE_CONFIG_DIR",
            "CODEX_HOME",
            "MCP_REMOTE_CONFIG_DIR",
        ] {
            cmd.env_remove(var);
        }
        let out = cmd
            .args(args)
            .current_dir(self.at("home"))
            .env("HOME", self.at("home"))
            .env("XDG_CONFIG_HOME", self.at("config"))
            .env("XDG_DATA_HOME", self.at("data"))
            .env("XDG_CACHE_HOME", self.at("cache"))
            .env(
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}/no-such-bus", self.dir.path().display()),
            )
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn paths(&self) -> Value {
        let (code, stdout, stderr) = self.run(&["paths", "--json"]);
        assert_eq!(code, Some(0), "{stderr}");
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }
}

fn path_of(doc: &Value, pointer: &str) -> PathBuf {
    PathBuf::from(
        doc.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{pointer} missing from {doc:#}")),
    )
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn without_a_data_dir_files_are_in_the_xdg_directories_and_the_home() {
    let h = Home::new();
    let doc = h.paths();
    let home = h.at("home");
    let expected = [
        ("/patchbay/data_dir", h.at("data/patchbay")),
        ("/patchbay/config_dir", h.at("config/patchbay")),
        ("/patchbay/database", h.at("data/patchbay/patchbay.sqlite3")),
        ("/patchbay/user_catalog", h.at("config/patchbay/mcp.json")),
        (
            "/patchbay/oauth_clients",
            h.at("config/patchbay/oauth-clients.json"),
        ),
        ("/runtimes/claude_code/config", home.join(".claude.json")),
        (
            "/runtimes/claude_code/credentials",
            home.join(".claude/.credentials.json"),
        ),
        (
            "/runtimes/claude_code/logs",
            h.at("cache/claude-cli-nodejs"),
        ),
        ("/runtimes/codex/config", home.join(".codex/config.toml")),
        (
            "/runtimes/codex/credentials",
            home.join(".codex/.credentials.json"),
        ),
        ("/mcp_remote/tokens", home.join(".mcp-auth/mcp-remote-v1")),
        (
            "/clients/claude_desktop",
            h.at("config/Claude/claude_desktop_config.json"),
        ),
        ("/clients/vscode", h.at("config/Code/User/mcp.json")),
        ("/clients/cursor", home.join(".cursor/mcp.json")),
        (
            "/clients/windsurf",
            home.join(".codeium/windsurf/mcp_config.json"),
        ),
        ("/clients/gemini_cli", home.join(".gemini/settings.json")),
    ];
    for (pointer, path) in &expected {
        assert_eq!(&path_of(&doc, pointer), path, "{pointer}");
    }
    assert_eq!(doc["patchbay"]["keychain"]["account"], "vault-master-key");
    assert_eq!(doc["patchbay"]["logs"], "stderr");

    // The table says the same.
    let (code, table, stderr) = h.run(&["paths"]);
    assert_eq!(code, Some(0), "{stderr}");
    for (_, path) in expected {
        assert!(table.contains(&path.display().to_string()), "{table}");
    }
}

#[test]
fn the_printed_files_are_the_ones_the_other_commands_read_and_write() {
    let h = Home::new();
    let doc = h.paths();
    // The database is created where it is said to be.
    let database = path_of(&doc, "/patchbay/database");
    assert!(!database.exists());
    let (code, _, stderr) = h.run(&["secret", "list"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(database.is_file(), "{} missing", database.display());

    // One server in each of three printed files; status must find each there and nowhere else.
    let user_catalog = path_of(&doc, "/patchbay/user_catalog");
    write(
        &user_catalog,
        r#"{"mcpServers":{"in-user-catalog":{"type":"stdio","command":"true"}}}"#,
    );
    let cursor = path_of(&doc, "/clients/cursor");
    write(
        &cursor,
        r#"{"mcpServers":{"in-cursor":{"url":"http://127.0.0.1:9/cursor/mcp"}}}"#,
    );
    let vscode = path_of(&doc, "/clients/vscode");
    write(
        &vscode,
        r#"{"servers":{"in-vscode":{"type":"http","url":"http://127.0.0.1:9/vscode/mcp"}}}"#,
    );
    let (_, stdout, stderr) = h.run(&["status", "--json"]);
    let status: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    let sources: Vec<PathBuf> = status["catalog"]["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| PathBuf::from(s["path"].as_str().unwrap_or_default()))
        .collect();
    assert!(sources.contains(&user_catalog), "{sources:?}");
    let connectors = status["connectors"].as_array().unwrap();
    for name in ["in-user-catalog", "in-cursor", "in-vscode"] {
        assert!(
            connectors.iter().any(|c| c["name"] == name),
            "{name} not in {status:#}"
        );
    }
    let runtimes = status["runtimes"].as_array().unwrap();
    let claude = runtimes
        .iter()
        .find(|r| r["runtime"] == "claude_code")
        .unwrap();
    assert_eq!(
        PathBuf::from(claude["config_path"].as_str().unwrap()),
        path_of(&doc, "/runtimes/claude_code/config")
    );
}
