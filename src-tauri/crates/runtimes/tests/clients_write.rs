//! "Add to CLIENT" for all seven clients and the mcp-remote switch, on copies of
//! the realistic client files in tests/fixtures/clients/home: the entry written in each client's
//! own shape, every other key (and VS Code's comments) kept, the backup made once, and the
//! reader (`clients::read_all`) reading the entry back as Patchbay's.

use patchbay_runtimes::clients::write::{
    self, backup_path, patchbay_target, Change, Conflict, PatchbayTarget, Target, WriteError,
};
use patchbay_runtimes::clients::{self, Client, ClientPaths, ClientServer, ClientTransport, Os};
use patchbay_vault::Secret;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clients/home")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A temp home holding a copy of the fixture home.
fn home() -> (tempfile::TempDir, ClientPaths) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixtures(), dir.path());
    let paths = ClientPaths::resolve(dir.path(), Os::Linux, &|_| None);
    (dir, paths)
}

fn connect(connector: &str) -> Target {
    Target::Connect {
        command: "/opt/patchbay/bin/patchbay".into(),
        global_args: Vec::new(),
        connector: connector.into(),
    }
}

fn gateway(connector: &str) -> Target {
    let headers = vec![(
        "X-Patchbay-Client".to_string(),
        Secret::new("pbc_fixture_secret_0123"),
    )];
    Target::Gateway {
        url: format!("http://127.0.0.1:3119/mcp/{connector}"),
        headers,
    }
}

fn lenient(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&clients::jsonc::blank_comments_and_trailing_commas(&text)).unwrap()
}

fn read_back(paths: &ClientPaths, client: Client, name: &str) -> ClientServer {
    let scan = clients::read_all(paths, &[]);
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    scan.servers
        .into_iter()
        .find(|s| s.client == client && s.name == name)
        .unwrap_or_else(|| panic!("{client:?} {name} not read back"))
}

/// Everything but `section[name]` is as it was.
fn assert_rest_kept(before: &Value, after: &Value, section: &str, name: &str) {
    let strip = |v: &Value| {
        let mut v = v.clone();
        v[section].as_object_mut().unwrap().shift_remove(name);
        v
    };
    assert_eq!(strip(before), strip(after));
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn cursor_gets_a_gateway_entry_and_keeps_everything_else() {
    let (_dir, paths) = home();
    let file = paths.cursor_user.clone();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let original = std::fs::read_to_string(&file).unwrap();
    let before = lenient(&file);

    let written = write::add(
        Client::Cursor,
        &file,
        "linear",
        &gateway("linear"),
        Conflict::Refuse,
    )
    .unwrap();
    assert_eq!(written.change, Change::Added);
    assert_eq!(written.backup, Some(backup_path(&file)));
    assert_eq!(
        std::fs::read_to_string(backup_path(&file)).unwrap(),
        original
    );
    #[cfg(unix)]
    {
        assert_eq!(mode(&file), 0o640, "the file's own mode is kept");
        assert_eq!(mode(&backup_path(&file)), 0o600);
    }

    let after = lenient(&file);
    assert_eq!(
        after["mcpServers"]["linear"],
        json!({"url": "http://127.0.0.1:3119/mcp/linear",
               "headers": {"X-Patchbay-Client": "pbc_fixture_secret_0123"}})
    );
    assert_rest_kept(&before, &after, "mcpServers", "linear");
    // The untouched entries are byte for byte what they were.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(&original[..original.rfind("}\n  }").unwrap()]));

    let server = read_back(&paths, Client::Cursor, "linear");
    assert_eq!(server.transport.kind(), "streamable-http");
    assert_eq!(
        patchbay_target(&server),
        Some(PatchbayTarget::Gateway("linear".into()))
    );
    // Foreign entries are not Patchbay's.
    assert_eq!(
        patchbay_target(&read_back(&paths, Client::Cursor, "github")),
        None
    );

    // Its secret is found again for the next connector; the foreign `github` header is not.
    let secrets = write::gateway_secrets(Client::Cursor, &file).unwrap();
    let secrets: Vec<&str> = secrets.iter().map(|s| s.expose()).collect();
    assert_eq!(secrets, ["pbc_fixture_secret_0123"]);

    // Again: nothing changes, no second backup is attempted.
    let again = write::add(
        Client::Cursor,
        &file,
        "linear",
        &gateway("linear"),
        Conflict::Refuse,
    )
    .unwrap();
    assert_eq!(again.change, Change::Unchanged);
    assert_eq!(again.backup, None);
}

#[test]
fn the_backup_is_made_once_and_never_overwritten() {
    let (_dir, paths) = home();
    let file = paths.windsurf.clone();
    let original = std::fs::read_to_string(&file).unwrap();
    let first = write::add(
        Client::Windsurf,
        &file,
        "a",
        &connect("a"),
        Conflict::Refuse,
    )
    .unwrap();
    assert!(first.backup.is_some());
    let second = write::add(
        Client::Windsurf,
        &file,
        "b",
        &gateway("b"),
        Conflict::Refuse,
    )
    .unwrap();
    assert_eq!(second.change, Change::Added);
    assert_eq!(second.backup, None);
    assert_eq!(
        std::fs::read_to_string(backup_path(&file)).unwrap(),
        original
    );

    let after = lenient(&file);
    assert_eq!(
        after["mcpServers"]["a"],
        json!({"command": "/opt/patchbay/bin/patchbay", "args": ["connect", "a"]})
    );
    assert_eq!(
        after["mcpServers"]["b"],
        json!({"serverUrl": "http://127.0.0.1:3119/mcp/b",
               "headers": {"X-Patchbay-Client": "pbc_fixture_secret_0123"}})
    );
    assert_eq!(after["mcpServers"]["sequential-thinking"]["disabled"], true);
    let bearer = Target::Gateway {
        url: "http://[::1]:3119/mcp/c".into(),
        headers: vec![("Authorization".into(), Secret::new("Bearer pbgw_abc"))],
    };
    write::add(Client::Windsurf, &file, "c", &bearer, Conflict::Refuse).unwrap();
    let secrets = write::gateway_secrets(Client::Windsurf, &file).unwrap();
    let secrets: Vec<&str> = secrets.iter().map(|s| s.expose()).collect();
    assert_eq!(secrets, ["pbc_fixture_secret_0123", "pbgw_abc"]);
    assert!(
        write::gateway_secrets(Client::Cursor, Path::new("/nonexistent/x.json"))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        patchbay_target(&read_back(&paths, Client::Windsurf, "a")),
        Some(PatchbayTarget::Connect("a".into()))
    );
    assert_eq!(
        patchbay_target(&read_back(&paths, Client::Windsurf, "b")),
        Some(PatchbayTarget::Gateway("b".into()))
    );
}

#[test]
fn vs_code_keeps_its_comments_trailing_commas_and_inputs() {
    let (_dir, paths) = home();
    let file = paths.vscode_user.clone();
    let before = lenient(&file);
    write::add(
        Client::VsCode,
        &file,
        "notion",
        &gateway("notion"),
        Conflict::Refuse,
    )
    .unwrap();
    write::add(
        Client::VsCode,
        &file,
        "sentry",
        &connect("sentry"),
        Conflict::Refuse,
    )
    .unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    for kept in [
        "// Added with \"MCP: Add Server...\" (Global)",
        "/* legacy SSE endpoint */",
        "\"envFile\": \"${workspaceFolder}/.env\",",
    ] {
        assert!(text.contains(kept), "{kept} lost:\n{text}");
    }
    // Tabs, like the rest of the file, and the trailing comma style kept.
    assert!(
        text.contains("\n\t\t\"sentry\": {\n\t\t\t\"type\": \"stdio\","),
        "{text}"
    );
    let after = lenient(&file);
    assert_eq!(
        after["servers"]["notion"],
        json!({"type": "http", "url": "http://127.0.0.1:3119/mcp/notion",
               "headers": {"X-Patchbay-Client": "pbc_fixture_secret_0123"}})
    );
    assert_eq!(
        after["servers"]["sentry"],
        json!({"type": "stdio", "command": "/opt/patchbay/bin/patchbay", "args": ["connect", "sentry"]})
    );
    let mut expected = before.clone();
    expected["servers"]["notion"] = after["servers"]["notion"].clone();
    expected["servers"]["sentry"] = after["servers"]["sentry"].clone();
    assert_eq!(after, expected);
    assert_eq!(
        patchbay_target(&read_back(&paths, Client::VsCode, "sentry")),
        Some(PatchbayTarget::Connect("sentry".into()))
    );
}

#[test]
fn claude_desktop_takes_stdio_only() {
    let (_dir, paths) = home();
    let file = paths.claude_desktop_config.clone();
    let before = lenient(&file);
    let err = write::add(
        Client::ClaudeDesktop,
        &file,
        "notion",
        &gateway("notion"),
        Conflict::Refuse,
    )
    .unwrap_err();
    assert!(matches!(err, WriteError::Unsupported { .. }), "{err}");
    assert!(!backup_path(&file).exists());
    assert_eq!(lenient(&file), before);

    write::add(
        Client::ClaudeDesktop,
        &file,
        "notion",
        &connect("notion"),
        Conflict::Refuse,
    )
    .unwrap();
    let after = lenient(&file);
    assert_eq!(
        after["mcpServers"]["notion"],
        json!({"command": "/opt/patchbay/bin/patchbay", "args": ["connect", "notion"]})
    );
    assert_eq!(after["globalShortcut"], "Alt+Space");
    assert_rest_kept(&before, &after, "mcpServers", "notion");
    // Claude Desktop parses strictly: the result is plain JSON.
    let text = std::fs::read_to_string(&file).unwrap();
    serde_json::from_str::<Value>(&text).unwrap();
    assert_eq!(
        patchbay_target(&read_back(&paths, Client::ClaudeDesktop, "notion")),
        Some(PatchbayTarget::Connect("notion".into()))
    );
}

#[test]
fn a_foreign_entry_of_the_same_name_is_refused_unless_replacing() {
    let (_dir, paths) = home();
    let file = paths.cursor_user.clone();
    let original = std::fs::read_to_string(&file).unwrap();
    let err = write::add(
        Client::Cursor,
        &file,
        "github",
        &connect("github"),
        Conflict::Refuse,
    )
    .unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, WriteError::Conflict { .. }), "{message}");
    assert!(
        message.contains("\"github\"") && message.contains("https://api.githubcopilot.com/mcp"),
        "{message}"
    );
    assert!(!message.contains("ghp_"), "no secret in errors: {message}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    assert!(!backup_path(&file).exists(), "nothing written, no backup");

    let replaced = write::add(
        Client::Cursor,
        &file,
        "github",
        &connect("github"),
        Conflict::Replace,
    )
    .unwrap();
    assert_eq!(replaced.change, Change::Replaced);
    // Patchbay's own entry is updated without asking (stdio -> gateway).
    let updated = write::add(
        Client::Cursor,
        &file,
        "github",
        &gateway("github"),
        Conflict::Refuse,
    )
    .unwrap();
    assert_eq!(updated.change, Change::Replaced);
    assert_eq!(
        patchbay_target(&read_back(&paths, Client::Cursor, "github")),
        Some(PatchbayTarget::Gateway("github".into()))
    );
}

#[test]
fn an_mcp_remote_entry_is_switched_in_place() {
    let (_dir, paths) = home();
    let file = paths.claude_desktop_config.clone();
    let before = lenient(&file);
    // The URL mcp-remote bridges is what finds the connector.
    assert_eq!(
        write::mcp_remote_url(Client::ClaudeDesktop, &file, "sdk-demo").unwrap(),
        "http://localhost:45591/mcp"
    );
    let written = write::switch_mcp_remote(
        Client::ClaudeDesktop,
        &file,
        "sdk-demo",
        &connect("sdk-demo"),
    )
    .unwrap();
    assert_eq!(written.change, Change::Replaced);
    let after = lenient(&file);
    assert_eq!(
        after["mcpServers"]["sdk-demo"],
        json!({"command": "/opt/patchbay/bin/patchbay", "args": ["connect", "sdk-demo"]})
    );
    assert_rest_kept(&before, &after, "mcpServers", "sdk-demo");
    // The order of the entries is kept: it is switched where it was.
    let names: Vec<&String> = after["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["filesystem", "sdk-demo", "linear"]);

    // The Cursor entry (mcp-remote with flags) to the gateway.
    let cursor = paths.cursor_user.clone();
    write::switch_mcp_remote(Client::Cursor, &cursor, "team-demo", &gateway("team-demo")).unwrap();
    let server = read_back(&paths, Client::Cursor, "team-demo");
    assert!(matches!(
        server.transport,
        ClientTransport::StreamableHttp { .. }
    ));

    // Not mcp-remote: refused, nothing written.
    let text = std::fs::read_to_string(&file).unwrap();
    let err = write::switch_mcp_remote(
        Client::ClaudeDesktop,
        &file,
        "filesystem",
        &connect("filesystem"),
    )
    .unwrap_err();
    assert!(matches!(err, WriteError::NotMcpRemote { .. }), "{err}");
    let err = write::mcp_remote_url(Client::ClaudeDesktop, &file, "nope").unwrap_err();
    assert!(matches!(err, WriteError::NoEntry { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[test]
fn a_missing_file_is_created_private_without_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    let paths = ClientPaths::resolve(dir.path(), Os::Linux, &|_| None);
    let written = write::add(
        Client::VsCode,
        &paths.vscode_user,
        "notion",
        &connect("notion"),
        Conflict::Refuse,
    )
    .unwrap();
    assert_eq!(written.change, Change::Added);
    assert_eq!(written.backup, None);
    #[cfg(unix)]
    assert_eq!(mode(&paths.vscode_user), 0o600);
    assert_eq!(
        lenient(&paths.vscode_user),
        json!({"servers": {"notion": {"type": "stdio", "command": "/opt/patchbay/bin/patchbay", "args": ["connect", "notion"]}}})
    );
    assert_eq!(
        patchbay_target(&read_back(&paths, Client::VsCode, "notion")),
        Some(PatchbayTarget::Connect("notion".into()))
    );
}

#[test]
fn a_file_the_client_could_not_read_is_not_touched() {
    let (_dir, paths) = home();
    // Claude Desktop reads strict JSON: a trailing comma makes the file unreadable to it.
    let file = paths.claude_desktop_config.clone();
    std::fs::write(&file, "{\"mcpServers\": {\"a\": {\"command\": \"x\"},},}").unwrap();
    let err = write::add(
        Client::ClaudeDesktop,
        &file,
        "n",
        &connect("n"),
        Conflict::Refuse,
    )
    .unwrap_err();
    assert!(err.to_string().contains("not valid JSON"), "{err}");
    assert!(!backup_path(&file).exists());
}

/// Claude Code, Codex and Gemini CLI through the front door: each in its own format, read back
/// as Patchbay's, the rest of the file kept (Codex's TOML comments and order too), a second add
/// changes nothing, and a foreign entry of the same name is refused naming `--replace`.
#[test]
fn claude_code_codex_and_gemini_get_entries_in_their_own_formats() {
    let (_dir, paths) = home();

    // Claude Code: top-level (user-scope) mcpServers; a project-local "sentry" is no conflict.
    let file = paths.claude_json.clone();
    let before = lenient(&file);
    let written = write::add(
        Client::ClaudeCode,
        &file,
        "sentry",
        &connect("sentry"),
        Conflict::Refuse,
    )
    .unwrap();
    assert_eq!(written.change, Change::Added);
    let after = lenient(&file);
    assert_eq!(
        after["mcpServers"]["sentry"],
        json!({ "type": "stdio", "command": "/opt/patchbay/bin/patchbay",
                "args": ["connect", "sentry"], "env": {} })
    );
    assert_rest_kept(&before, &after, "mcpServers", "sentry");
    let back = read_back(&paths, Client::ClaudeCode, "sentry");
    assert_eq!(
        patchbay_target(&back),
        Some(PatchbayTarget::Connect("sentry".into()))
    );
    let err = write::add(
        Client::ClaudeCode,
        &file,
        "memory",
        &connect("memory"),
        Conflict::Refuse,
    )
    .unwrap_err();
    assert!(matches!(err, WriteError::Conflict { .. }), "{err}");
    assert!(err.to_string().contains("--replace"), "{err}");
    // Claude Code's own lock directory is not left behind either.
    assert!(!file.with_file_name(".claude.json.lock").exists());

    // Gemini CLI: `type: http` for the gateway (0.61 calls httpUrl deprecated).
    let file = paths.gemini_user.clone();
    write::add(
        Client::GeminiCli,
        &file,
        "linear",
        &gateway("linear"),
        Conflict::Refuse,
    )
    .unwrap();
    let after = lenient(&file);
    assert_eq!(after["mcpServers"]["linear"]["type"], "http");
    assert_eq!(
        after["mcpServers"]["linear"]["url"],
        "http://127.0.0.1:3119/mcp/linear"
    );
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("// Gemini CLI reads this"));
    let back = read_back(&paths, Client::GeminiCli, "linear");
    assert_eq!(
        patchbay_target(&back),
        Some(PatchbayTarget::Gateway("linear".into()))
    );

    // Codex: a [mcp_servers.NAME] table; the session bus passed through its stripped env.
    let file = paths.codex_config.clone();
    let original = std::fs::read_to_string(&file).unwrap();
    let target = Target::Connect {
        command: "/opt/patchbay/bin/patchbay".into(),
        global_args: vec!["--data-dir".into(), "/srv/patchbay data".into()],
        connector: "notion".into(),
    };
    let written = write::add(Client::Codex, &file, "notion", &target, Conflict::Refuse).unwrap();
    assert_eq!(written.change, Change::Added);
    assert_eq!(written.backup, Some(backup_path(&file)));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(&original), "the rest moved:\n{text}");
    let table: toml::Table = text.parse().unwrap();
    let entry = &table["mcp_servers"]["notion"];
    assert_eq!(
        entry["command"].as_str(),
        Some("/opt/patchbay/bin/patchbay")
    );
    assert_eq!(
        entry["args"].as_array().unwrap().len(),
        4,
        "--data-dir DIR connect NAME: {entry}"
    );
    assert_eq!(
        entry["env_vars"].as_array().unwrap()[0].as_str(),
        Some("DBUS_SESSION_BUS_ADDRESS")
    );
    let back = read_back(&paths, Client::Codex, "notion");
    assert_eq!(
        patchbay_target(&back),
        Some(PatchbayTarget::Connect("notion".into()))
    );
    let again = write::add(Client::Codex, &file, "notion", &target, Conflict::Refuse).unwrap();
    assert_eq!(again.change, Change::Unchanged);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    let err = write::add(
        Client::Codex,
        &file,
        "linear",
        &connect("linear"),
        Conflict::Refuse,
    )
    .unwrap_err();
    assert!(matches!(err, WriteError::Conflict { .. }), "{err}");
    let replaced = write::add(
        Client::Codex,
        &file,
        "linear",
        &gateway("linear"),
        Conflict::Replace,
    )
    .unwrap();
    assert_eq!(replaced.change, Change::Replaced);
    let table: toml::Table = std::fs::read_to_string(&file).unwrap().parse().unwrap();
    assert_eq!(
        table["mcp_servers"]["linear"]["http_headers"]["X-Patchbay-Client"].as_str(),
        Some("pbc_fixture_secret_0123")
    );
    assert!(table["mcp_servers"]["linear"]
        .get("bearer_token_env_var")
        .is_none());
    // No lock file stays beside any of them.
    for dir in [
        paths.codex_config.parent().unwrap(),
        paths.gemini_user.parent().unwrap(),
    ] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!name.ends_with(".lock"), "{name} left in {}", dir.display());
        }
    }
}

#[test]
fn an_entry_with_patchbays_global_options_is_patchbays_own() {
    let stdio = |args: &[&str]| ClientServer {
        client: Client::Cursor,
        scope: clients::ClientScope::User,
        file: PathBuf::from("/x"),
        name: "n".into(),
        transport: ClientTransport::Stdio {
            command: "/usr/local/bin/patchbay".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Default::default(),
        },
        enabled: true,
    };
    for (args, want) in [
        (&["connect", "fx"][..], Some("fx")),
        (&["--data-dir", "/d", "connect", "fx"][..], Some("fx")),
        (
            &["--catalog=/c.json", "--data-dir", "/d", "connect", "fx"][..],
            Some("fx"),
        ),
        (&["connect", "fx", "--header", "X: y"][..], Some("fx")),
        (&["--verbose", "connect", "fx"][..], None),
        (&["status"][..], None),
        (&["connect"][..], None),
        (&["--data-dir"][..], None),
    ] {
        assert_eq!(
            patchbay_target(&stdio(args)),
            want.map(|n| PatchbayTarget::Connect(n.into())),
            "{args:?}"
        );
    }
}

/// A backup cut short by a kill (an older release wrote it in place) is not trusted: the next
/// write replaces it with the whole file; a whole one is never touched.
#[test]
fn a_cut_short_backup_is_replaced_and_a_whole_one_kept() {
    let (_dir, paths) = home();
    let file = paths.cursor_user.clone();
    let original = std::fs::read_to_string(&file).unwrap();
    std::fs::write(backup_path(&file), &original[..original.len() / 2]).unwrap();
    let written = write::add(Client::Cursor, &file, "a", &connect("a"), Conflict::Refuse).unwrap();
    assert_eq!(written.backup, Some(backup_path(&file)));
    assert_eq!(
        std::fs::read_to_string(backup_path(&file)).unwrap(),
        original
    );
    let written = write::add(Client::Cursor, &file, "b", &connect("b"), Conflict::Refuse).unwrap();
    assert_eq!(written.backup, None);
    assert_eq!(
        std::fs::read_to_string(backup_path(&file)).unwrap(),
        original
    );
    let leftovers: Vec<String> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n.ends_with(".lock"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_preview_shows_the_entry_before_and_after_with_no_secret_and_writes_nothing() {
    let (_dir, paths) = home();
    let cursor = paths.cursor_user.clone();
    let text = std::fs::read(&cursor).unwrap();
    let preview =
        write::preview_switch(Client::Cursor, &cursor, "team-demo", &gateway("team-demo")).unwrap();
    assert_eq!(preview.change, Change::Replaced);
    let before = preview.before.as_deref().unwrap();
    assert!(before.starts_with("\"team-demo\": {"), "{before}");
    assert!(
        before.contains("mcp-remote") && before.contains("http://localhost:35557/mcp"),
        "{before}"
    );
    // The header mcp-remote sends is a name only.
    assert!(
        before.contains("X-Team: ${TEAM_ID}") || before.contains("[redacted]"),
        "{before}"
    );
    let after = &preview.after;
    assert!(
        after.contains("http://127.0.0.1:3119/mcp/team-demo"),
        "{after}"
    );
    assert!(
        after.contains("\"X-Patchbay-Client\": \"[redacted]\""),
        "{after}"
    );
    assert!(!after.contains("pbc_fixture_secret_0123"), "{after}");
    assert_eq!(
        std::fs::read(&cursor).unwrap(),
        text,
        "a preview writes nothing"
    );

    // A literal token in an entry being replaced is not shown either.
    let preview = write::preview_add(
        Client::Cursor,
        &cursor,
        "github",
        &connect("github"),
        Conflict::Replace,
    )
    .unwrap();
    let before = preview.before.unwrap();
    assert!(!before.contains("ghp_fixture"), "{before}");
    assert!(
        before.contains("\"Authorization\": \"[redacted]\""),
        "{before}"
    );
    // And it refuses what Add refuses.
    let err = write::preview_add(
        Client::Cursor,
        &cursor,
        "github",
        &connect("github"),
        Conflict::Refuse,
    )
    .unwrap_err();
    assert!(matches!(err, WriteError::Conflict { .. }), "{err}");
    let preview = write::preview_add(
        Client::Cursor,
        &cursor,
        "linear",
        &connect("linear"),
        Conflict::Refuse,
    )
    .unwrap();
    assert_eq!((preview.change, preview.before), (Change::Added, None));

    // Codex: its own syntax.
    let codex = paths.codex_config.clone();
    let preview = write::preview_add(
        Client::Codex,
        &codex,
        "acme",
        &gateway("acme"),
        Conflict::Refuse,
    )
    .unwrap();
    assert!(
        preview.after.starts_with("[mcp_servers.acme]"),
        "{}",
        preview.after
    );
    assert!(preview.after.contains("[redacted]"), "{}", preview.after);
    assert!(!preview.after.contains("pbc_fixture"), "{}", preview.after);
}

#[test]
fn undo_puts_the_file_back_byte_for_byte_unless_it_changed_since() {
    let (_dir, paths) = home();
    let cursor = paths.cursor_user.clone();
    let original = std::fs::read(&cursor).unwrap();
    let written =
        write::switch_mcp_remote(Client::Cursor, &cursor, "team-demo", &gateway("team-demo"))
            .unwrap();
    let undo = written
        .undo
        .expect("a write that changed the file can be undone");
    assert!(!format!("{undo:?}").contains("pbc_fixture"), "{undo:?}");
    assert_ne!(std::fs::read(&cursor).unwrap(), original);
    write::undo(&undo).unwrap();
    assert_eq!(std::fs::read(&cursor).unwrap(), original);
    // Twice: the file holds the original now, not what the write left.
    assert!(matches!(
        write::undo(&undo).unwrap_err(),
        WriteError::ChangedSince { .. }
    ));

    // Changed by the client after the write: refused, the client's change kept.
    let written = write::add(
        Client::Cursor,
        &cursor,
        "linear",
        &connect("linear"),
        Conflict::Refuse,
    )
    .unwrap();
    let mut edited = std::fs::read_to_string(&cursor).unwrap();
    edited.push('\n');
    std::fs::write(&cursor, &edited).unwrap();
    let err = write::undo(written.undo.as_ref().unwrap()).unwrap_err();
    assert!(
        err.to_string()
            .contains("has changed since Patchbay wrote it"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), edited);

    // A file the write created is removed again.
    let vscode = paths.vscode_user.clone();
    let _ = std::fs::remove_file(&vscode);
    let written = write::add(
        Client::VsCode,
        &vscode,
        "linear",
        &connect("linear"),
        Conflict::Refuse,
    )
    .unwrap();
    assert!(vscode.exists());
    write::undo(written.undo.as_ref().unwrap()).unwrap();
    assert!(!vscode.exists());

    // Nothing written, nothing to undo.
    let again = write::add(
        Client::Cursor,
        &cursor,
        "linear",
        &connect("linear"),
        Conflict::Refuse,
    )
    .unwrap();
    assert_eq!(again.change, Change::Unchanged);
    assert!(again.undo.is_none());
}
