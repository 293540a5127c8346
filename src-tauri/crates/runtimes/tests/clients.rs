//! The MCP servers of every client, read from realistic files (tests/fixtures/clients/home and
//! project: one file per client in the shape each client writes, see the format notes in
//! src/clients/formats.rs), merged into one record per server, and converted to AIR catalog
//! entries the catalog crate accepts, with no literal secret left in them.

use patchbay_catalog::CatalogItem;
use patchbay_runtimes::clients::{
    self, air, Client, ClientPaths, ClientScope, ClientServer, ClientTransport, Os, ServerIdentity,
};
use patchbay_runtimes::RuntimeError;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clients")
}

fn fixture_scan() -> (ClientPaths, clients::ClientScan) {
    let paths = ClientPaths::resolve(&fixtures().join("home"), Os::Linux, &|_| None);
    let scan = clients::read_all(&paths, &[fixtures().join("project")]);
    (paths, scan)
}

fn find<'a>(servers: &'a [ClientServer], client: Client, name: &str) -> &'a ClientServer {
    servers
        .iter()
        .find(|s| s.client == client && s.name == name)
        .unwrap_or_else(|| panic!("{client:?} {name} not found in {servers:#?}"))
}

fn header(transport: &ClientTransport, name: &str) -> String {
    match transport {
        ClientTransport::Sse { headers, .. } | ClientTransport::StreamableHttp { headers, .. } => {
            headers
                .get(name)
                .map(|v| v.expose().to_string())
                .unwrap_or_default()
        }
        ClientTransport::Stdio { .. } => panic!("not remote"),
    }
}

#[test]
fn every_client_is_read_from_a_realistic_home() {
    let (_, scan) = fixture_scan();
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    let s = &scan.servers;
    let listed: Vec<(Client, &str, &str)> = s
        .iter()
        .map(|s| (s.client, s.name.as_str(), s.transport.kind()))
        .collect();
    assert_eq!(s.len(), 28, "{listed:#?}");

    // Claude Code: user scope (the IDE's internal `sse-ide` entry skipped), local scope in
    // ~/.claude.json, project scope .mcp.json.
    let memory = find(s, Client::ClaudeCode, "memory");
    assert_eq!(memory.scope, ClientScope::User);
    assert_eq!(memory.transport.kind(), "stdio");
    assert!(!s.iter().any(|x| x.name == "ide"));
    let sentry = find(s, Client::ClaudeCode, "sentry");
    assert_eq!(
        sentry.scope,
        ClientScope::Local("/home/ada/src/webapp".into())
    );
    assert_eq!(sentry.transport.kind(), "sse");
    let postgres = find(s, Client::ClaudeCode, "postgres");
    match &postgres.transport {
        ClientTransport::Stdio { env, .. } => {
            assert_eq!(env["PGPASSWORD"].expose(), "fixture-pg-password")
        }
        other => panic!("{other:?}"),
    }
    let notion = find(s, Client::ClaudeCode, "notion");
    assert_eq!(
        notion.scope,
        ClientScope::Project(fixtures().join("project"))
    );
    assert_eq!(notion.file, fixtures().join("project/.mcp.json"));
    assert_eq!(notion.transport.kind(), "streamable-http");

    // Codex: stdio with env and env_vars, remote with every header form, `enabled = false`.
    match &find(s, Client::Codex, "brave-search").transport {
        ClientTransport::Stdio { env, .. } => {
            assert_eq!(env["BRAVE_API_KEY"].expose(), "fixture-brave-key");
            assert_eq!(env["HTTPS_PROXY"].expose(), "${HTTPS_PROXY}");
        }
        other => panic!("{other:?}"),
    }
    let linear = find(s, Client::Codex, "linear");
    assert_eq!(linear.transport.kind(), "streamable-http");
    assert_eq!(
        header(&linear.transport, "Authorization"),
        "Bearer ${LINEAR_API_KEY}"
    );
    assert_eq!(header(&linear.transport, "X-Client"), "codex");
    assert_eq!(
        header(&linear.transport, "X-Workspace"),
        "${LINEAR_WORKSPACE}"
    );
    assert!(!find(s, Client::Codex, "old").enabled);
    assert_eq!(
        find(s, Client::Codex, "fetch").scope,
        ClientScope::Project(fixtures().join("project"))
    );

    // Claude Desktop: stdio only, mcp-remote bridges among them.
    let bridged = find(s, Client::ClaudeDesktop, "sdk-demo");
    assert_eq!(
        bridged.identity(),
        ServerIdentity::Url("http://localhost:45591/mcp".into())
    );

    // Cursor: `url` without `type` is streamable HTTP.
    let github = find(s, Client::Cursor, "github");
    assert_eq!(github.transport.kind(), "streamable-http");
    assert_eq!(
        github.transport.url(),
        Some("https://api.githubcopilot.com/mcp")
    );

    // VS Code: `servers`, JSONC, `${input:...}` kept unresolved.
    let vs_github = find(s, Client::VsCode, "github");
    assert_eq!(
        header(&vs_github.transport, "Authorization"),
        "Bearer ${input:github_token}"
    );
    assert_eq!(find(s, Client::VsCode, "context7").transport.kind(), "sse");
    assert_eq!(
        find(s, Client::VsCode, "playwright").transport.kind(),
        "stdio"
    );
    assert_eq!(find(s, Client::VsCode, "fetch").transport.kind(), "stdio");

    // Windsurf: `serverUrl`; `disabled: true`.
    let ws = find(s, Client::Windsurf, "linear");
    assert_eq!(ws.transport.url(), Some("https://mcp.linear.app/mcp/"));
    assert!(!find(s, Client::Windsurf, "sequential-thinking").enabled);

    // Gemini CLI: `httpUrl` = streamable HTTP, `url` = SSE, `url` + `type: http` = streamable.
    assert_eq!(
        find(s, Client::GeminiCli, "github").transport.kind(),
        "streamable-http"
    );
    assert_eq!(find(s, Client::GeminiCli, "sentry").transport.kind(), "sse");
    assert_eq!(
        find(s, Client::GeminiCli, "notion").transport.kind(),
        "streamable-http"
    );
    assert_eq!(
        find(s, Client::GeminiCli, "python-tools").transport.kind(),
        "stdio"
    );
}

#[test]
fn each_server_is_found_once_with_its_clients() {
    let (_, scan) = fixture_scan();
    let merged = clients::merge(scan.servers);
    let found = |url_or_name: &str| -> String {
        merged
            .iter()
            .find(|m| match &m.identity {
                ServerIdentity::Url(url) => url == url_or_name,
                ServerIdentity::Command { args, .. } => args.iter().any(|a| a == url_or_name),
            })
            .unwrap_or_else(|| panic!("{url_or_name} not merged: {merged:#?}"))
            .found_in()
    };
    assert_eq!(
        found("https://api.githubcopilot.com/mcp"),
        "Found in Claude Code, Cursor, VS Code, Gemini CLI"
    );
    assert_eq!(
        found("https://mcp.linear.app/mcp"),
        "Found in Codex, Claude Desktop, Windsurf"
    );
    assert_eq!(
        found("@modelcontextprotocol/server-memory"),
        "Found in Claude Code, Codex, Cursor"
    );
    assert_eq!(
        found("https://mcp.notion.com/mcp"),
        "Found in Claude Code, Cursor, Gemini CLI"
    );
    assert_eq!(
        found("https://mcp.sentry.dev/sse"),
        "Found in Claude Code, Gemini CLI"
    );
    assert_eq!(found("mcp-server-fetch"), "Found in Codex, VS Code");
    // Two filesystem servers with different arguments stay two.
    let filesystems = merged
        .iter()
        .filter(|m| matches!(&m.identity, ServerIdentity::Command { args, .. } if args.iter().any(|a| a == "@modelcontextprotocol/server-filesystem")))
        .count();
    assert_eq!(filesystems, 2);
    assert_eq!(merged.len(), 17, "{merged:#?}");

    // The summary status prints: no secret of the fixtures in its Debug or JSON.
    let summaries: Vec<_> = merged.iter().map(|m| m.summary()).collect();
    let json = serde_json::to_string(&summaries).unwrap();
    let debug = format!("{merged:?}");
    for literal in [
        "fixture-pg-password",
        "fixture-brave-key",
        "lin_api_fixture_literal",
        "ghp_fixtureLiteralToken",
    ] {
        assert!(
            !json.contains(literal) && !debug.contains(literal),
            "{literal} shown"
        );
    }
    let github = summaries.iter().find(|s| s.name == "github").unwrap();
    assert_eq!(github.kind, "streamable-http");
    assert_eq!(
        serde_json::to_value(&github.found_in).unwrap(),
        serde_json::json!(["claude_code", "cursor", "vs_code", "gemini_cli"])
    );
    assert_eq!(github.files.len(), 4);
}

#[test]
fn the_other_oses_read_their_own_places() {
    let home = tempfile::tempdir().unwrap();
    let fixture_home = fixtures().join("home");
    let copy = |from: &str, to: &Path| {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(fixture_home.join(from), to).unwrap();
    };
    let mac_support = home.path().join("Library/Application Support");
    copy(
        ".config/Claude/claude_desktop_config.json",
        &mac_support.join("Claude/claude_desktop_config.json"),
    );
    copy(
        ".config/Code/User/mcp.json",
        &mac_support.join("Code/User/mcp.json"),
    );
    let mac = ClientPaths::resolve(home.path(), Os::MacOs, &|_| None);
    let scan = clients::read_all(&mac, &[]);
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    assert_eq!(
        scan.servers
            .iter()
            .filter(|s| s.client == Client::ClaudeDesktop)
            .count(),
        3
    );
    assert_eq!(
        scan.servers
            .iter()
            .filter(|s| s.client == Client::VsCode)
            .count(),
        3
    );

    let appdata = home.path().join("AppData/Roaming");
    copy(
        ".config/Claude/claude_desktop_config.json",
        &appdata.join("Claude/claude_desktop_config.json"),
    );
    copy(".cursor/mcp.json", &home.path().join(".cursor/mcp.json"));
    let appdata_text = appdata.to_string_lossy().into_owned();
    let env = move |name: &str| (name == "APPDATA").then(|| appdata_text.clone());
    let windows = ClientPaths::resolve(home.path(), Os::Windows, &env);
    let scan = clients::read_all(&windows, &[]);
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    assert_eq!(
        scan.servers
            .iter()
            .filter(|s| s.client == Client::ClaudeDesktop)
            .count(),
        3
    );
    assert_eq!(
        scan.servers
            .iter()
            .filter(|s| s.client == Client::Cursor)
            .count(),
        3
    );
    assert_eq!(
        scan.servers
            .iter()
            .filter(|s| s.client == Client::VsCode)
            .count(),
        0
    );
}

#[test]
fn a_malformed_file_is_named_and_hides_no_other_server() {
    let home = tempfile::tempdir().unwrap();
    let fixture_home = fixtures().join("home");
    for file in [
        ".cursor/mcp.json",
        ".codex/config.toml",
        ".gemini/settings.json",
        ".codeium/windsurf/mcp_config.json",
    ] {
        let to = home.path().join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(fixture_home.join(file), &to).unwrap();
    }
    std::fs::write(
        home.path().join(".cursor/mcp.json"),
        "{\n  \"mcpServers\": {\n    \"a\": { \"url\": \"https://a.example/mcp\" \n  }\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join(".codex/config.toml"),
        "[mcp_servers.memory]\ncommand = \"npx\"\nargs = \"-y pkg\"\n",
    )
    .unwrap();
    let paths = ClientPaths::resolve(home.path(), Os::Linux, &|_| None);
    let scan = clients::read_all(&paths, &[]);
    assert_eq!(scan.errors.len(), 2, "{:?}", scan.errors);
    let messages: Vec<String> = scan.errors.iter().map(|e| e.to_string()).collect();
    let cursor = messages
        .iter()
        .find(|m| m.contains(".cursor/mcp.json"))
        .expect("cursor error");
    assert!(
        cursor.contains("not valid JSON") && cursor.contains("line 5"),
        "{cursor}"
    );
    let codex = messages
        .iter()
        .find(|m| m.contains("config.toml"))
        .expect("codex error");
    assert!(
        codex.contains("[mcp_servers.memory] args: expected an array"),
        "{codex}"
    );
    assert!(scan
        .errors
        .iter()
        .all(|e| matches!(e.error, RuntimeError::Malformed { .. })));
    // Gemini CLI and Windsurf still read.
    assert_eq!(
        scan.servers
            .iter()
            .filter(|s| s.client == Client::GeminiCli)
            .count(),
        3
    );
    assert_eq!(
        scan.servers
            .iter()
            .filter(|s| s.client == Client::Windsurf)
            .count(),
        2
    );

    // A wrong shape inside an entry names the entry and the field.
    std::fs::write(
        home.path().join(".gemini/settings.json"),
        r#"{"mcpServers": {"x": {"command": "a", "env": {"K": ["v"]}}}}"#,
    )
    .unwrap();
    let scan = clients::read_all(&paths, &[]);
    let gemini = scan
        .errors
        .iter()
        .map(|e| e.to_string())
        .find(|m| m.contains("settings.json"))
        .unwrap();
    assert!(
        gemini.contains(r#"mcpServers["x"].env["K"]: expected a string, found an array"#),
        "{gemini}"
    );
}

#[test]
fn a_clean_home_has_no_servers_and_no_errors() {
    let home = tempfile::tempdir().unwrap();
    let paths = ClientPaths::resolve(home.path(), Os::Linux, &|_| None);
    let scan = clients::read_all(&paths, &[home.path().join("nowhere")]);
    assert!(scan.servers.is_empty() && scan.errors.is_empty());
}

#[test]
fn project_dirs_come_from_claude_code_and_the_current_directory() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".claude.json"),
        r#"{"projects": {"/p/one": {}, "/p/two": {"mcpServers": {}}}}"#,
    )
    .unwrap();
    let paths = ClientPaths::resolve(home.path(), Os::Linux, &|_| None);
    let dirs = clients::default_project_dirs(&paths, Some(Path::new("/p/one")));
    assert_eq!(dirs, vec![PathBuf::from("/p/one"), PathBuf::from("/p/two")]);
    let dirs = clients::default_project_dirs(&paths, Some(Path::new("/w")));
    assert_eq!(dirs.len(), 3);
}

#[test]
fn catalog_entries_are_recognised() {
    let catalog = r#"{
      "github": { "type": "streamable-http", "url": "https://api.githubcopilot.com/mcp/",
                  "headers": { "Authorization": "Bearer ${GITHUB_TOKEN}" } },
      "memory": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"] },
      "notion": { "type": "streamable-http", "url": "${NOTION_URL:-https://mcp.notion.com/mcp}" }
    }"#;
    let items = patchbay_catalog::parse(catalog, Path::new("mcp.json")).unwrap();
    let entries: Vec<_> = items
        .into_iter()
        .map(|i| match i {
            CatalogItem::Server(s) => s,
            CatalogItem::Invalid(i) => panic!("{i:?}"),
        })
        .collect();
    let (_, scan) = fixture_scan();
    let s = &scan.servers;
    assert!(find(s, Client::Cursor, "github").is_catalog_entry(&entries[0]));
    assert!(find(s, Client::Cursor, "memory").is_catalog_entry(&entries[1]));
    assert!(find(s, Client::GeminiCli, "notion").is_catalog_entry(&entries[2]));
    assert!(!find(s, Client::Cursor, "memory").is_catalog_entry(&entries[0]));
}

/// Every fixture entry converts to an AIR entry the catalog crate validates, and no literal
/// secret of the fixtures survives in the catalog text.
#[test]
fn every_entry_converts_to_a_valid_air_entry_without_literal_secrets() {
    let (_, scan) = fixture_scan();
    let mut catalog = serde_json::Map::new();
    let mut vault = Vec::new();
    for (i, server) in scan.servers.iter().enumerate() {
        let converted = air::to_air(server);
        catalog.insert(format!("{}-{i}", converted.name), converted.entry);
        vault.extend(converted.secrets);
    }
    let text = serde_json::Value::Object(catalog).to_string();
    for literal in [
        "fixture-pg-password",
        "fixture-brave-key",
        "lin_api_fixture_literal",
        "ghp_fixtureLiteralToken",
        "fixture-gemini-key",
    ] {
        assert!(!text.contains(literal), "{literal} left in {text}");
        assert!(
            vault.iter().any(|s| s.value.expose().contains(literal)),
            "{literal} not handed to the vault"
        );
    }
    assert!(!format!("{vault:?}").contains("fixture-"));
    let items = patchbay_catalog::parse(&text, Path::new("user-mcp.json")).unwrap();
    let invalid: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            CatalogItem::Invalid(i) => Some(i),
            _ => None,
        })
        .collect();
    assert!(invalid.is_empty(), "{invalid:#?}");
    assert_eq!(items.len(), scan.servers.len());

    let github = air::to_air(find(&scan.servers, Client::Cursor, "github"));
    assert_eq!(
        github.entry["headers"]["Authorization"],
        "Bearer ${GITHUB_TOKEN}"
    );
    let vs = air::to_air(find(&scan.servers, Client::VsCode, "github"));
    assert_eq!(vs.needs[0].original, "${input:github_token}");
    assert!(vs.secrets.is_empty());
    let desktop = air::to_air(find(&scan.servers, Client::ClaudeDesktop, "linear"));
    assert_eq!(desktop.entry["env"]["LINEAR_TOKEN"], "${LINEAR_TOKEN}");
    assert_eq!(desktop.secrets[0].variable, "LINEAR_TOKEN");
}
