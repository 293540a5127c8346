//! Loading, validating and merging catalog files, end to end through `load`.

use patchbay_catalog::{
    load, CatalogError, CatalogItem, CatalogSource, EntryError, ServerEntry, SourceKind, Transport,
    BUILT_IN_PATH, DEFAULT_CATALOG, SCHEMA,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn user(path: &Path) -> CatalogSource {
    CatalogSource::File {
        path: path.to_path_buf(),
        kind: SourceKind::User,
        required: false,
    }
}

fn server<'a>(items: &'a [CatalogItem], name: &str) -> &'a ServerEntry {
    match items.iter().find(|i| i.name().as_str() == name) {
        Some(CatalogItem::Server(s)) => s,
        other => panic!("{name}: expected a valid server, got {other:?}"),
    }
}

fn invalid<'a>(items: &'a [CatalogItem], name: &str) -> &'a EntryError {
    match items.iter().find(|i| i.name().as_str() == name) {
        Some(CatalogItem::Invalid(i)) => &i.error,
        other => panic!("{name}: expected an invalid entry, got {other:?}"),
    }
}

/// Load a user file holding `servers` (the members of `mcpServers`) plus one good entry.
fn load_servers(servers: &str) -> (tempfile::TempDir, PathBuf, Vec<CatalogItem>) {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"{{"mcpServers": {{ "good": {{"type": "streamable-http", "url": "https://good.example/mcp"}}, {servers} }}}}"#
    );
    let path = write(dir.path(), "mcp.json", &text);
    let catalog = load(&[user(&path)]);
    assert!(catalog.errors().next().is_none(), "{:?}", catalog.sources);
    // One bad entry never hides the good ones.
    server(&catalog.items, "good");
    (dir, path, catalog.items)
}

/// Assert the entry `name` in `servers` fails at `field` with `message`, and that the rendered
/// error names the file, the entry and the field.
fn assert_entry_error(servers: &str, name: &str, field: &str, message: &str) {
    let (_dir, path, items) = load_servers(servers);
    let err = invalid(&items, name);
    assert_eq!(err.field, field, "{servers}");
    assert_eq!(err.message, message, "{servers}");
    assert_eq!(err.file, path);
    assert_eq!(err.entry, name);
    let shown = err.to_string();
    assert_eq!(
        shown,
        format!(
            "{}: entry \"{name}\", field `{field}`: {message}",
            path.display()
        )
    );
}

#[test]
fn embedded_default_loads_with_no_errors() {
    let catalog = load(&[CatalogSource::Embedded]);
    assert_eq!(catalog.sources.len(), 1);
    let report = &catalog.sources[0];
    assert_eq!(report.path, PathBuf::from(BUILT_IN_PATH));
    assert_eq!(report.kind, SourceKind::Default);
    assert!(report.present);
    assert!(report.error.is_none(), "{:?}", report.error);
    assert!(report.entries >= 14, "only {} entries", report.entries);
    for item in &catalog.items {
        assert!(
            matches!(item, CatalogItem::Server(_)),
            "default entry is invalid: {item:?}"
        );
    }
    assert_eq!(catalog.servers().count(), report.entries);
    for name in [
        "slack",
        "github",
        "filesystem",
        "playwright",
        "notion",
        "linear",
    ] {
        assert!(catalog.get(name).is_some(), "default lacks {name}");
    }
    let names: Vec<&str> = catalog.items.iter().map(|i| i.name().as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    for s in catalog.servers() {
        assert!(s.title.is_some(), "{} has no title", s.name);
        assert!(s.description.is_some(), "{} has no description", s.name);
        assert_eq!(s.unavailable, None, "{} ships unavailable", s.name);
        assert_eq!(s.source, PathBuf::from(BUILT_IN_PATH));
    }
}

#[test]
fn embedded_default_validates_against_the_whole_schema() {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let doc: Value = serde_json::from_str(DEFAULT_CATALOG).unwrap();
    let validator = jsonschema::draft7::new(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    // The schema really checks entries: a broken one fails the whole-file validation too.
    let mut broken = doc.clone();
    broken["mcpServers"]["slack"]["url"] = Value::from(5);
    assert!(!validator.is_valid(&broken));
}

#[test]
fn default_entries_carry_what_the_status_rules_need() {
    let catalog = load(&[CatalogSource::Embedded]);
    let items = &catalog.items;

    let slack = server(items, "slack");
    assert_eq!(slack.transport.url(), Some("https://mcp.slack.com/mcp"));
    assert!(slack.is_oauth_capable());
    let oauth = slack.oauth.as_ref().expect("slack has oauth");
    assert_eq!(
        oauth.client_id.as_deref(),
        Some("1601185624273.8899143856786")
    );
    assert_eq!(
        oauth.redirect_uri.as_deref(),
        Some("http://localhost:3118/callback")
    );
    assert_eq!(oauth.resource.as_deref(), Some(""));
    assert!(oauth.manual);
    assert_eq!(
        oauth.scopes,
        [
            "channels:history",
            "groups:history",
            "search:read.public",
            "users:read"
        ]
    );

    let github = server(items, "github");
    assert_eq!(github.static_credential_headers(), vec!["Authorization"]);
    assert!(!github.is_oauth_capable());
    let uses = github.variable_uses();
    assert_eq!(uses.len(), 1);
    assert_eq!(uses[0].name, "GITHUB_TOKEN");
    assert_eq!(uses[0].field, "headers.Authorization");

    // The filesystem root has a default so the entry works with nothing configured.
    let fs = server(items, "filesystem");
    assert!(fs.variable_uses().iter().all(|u| u.has_default));
    match &fs.transport {
        Transport::Stdio { command, args, .. } => {
            assert_eq!(command, "npx");
            let expanded: Vec<String> = args
                .iter()
                .map(|a| patchbay_catalog::expand(a, &|_| None).unwrap())
                .collect();
            assert_eq!(expanded.last().map(String::as_str), Some("."));
        }
        other => panic!("filesystem should be stdio: {other:?}"),
    }

    let playwright = server(items, "playwright");
    assert_eq!(playwright.transport.display_name(), "stdio");
    assert_eq!(server(items, "atlassian").transport.display_name(), "sse");
    assert_eq!(
        server(items, "notion").transport.display_name(),
        "streamable-http"
    );
}

#[test]
fn missing_optional_file_is_an_empty_layer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.json");
    let catalog = load(&[CatalogSource::Embedded, user(&path)]);
    let report = &catalog.sources[1];
    assert!(!report.present);
    assert!(report.error.is_none());
    assert_eq!(report.entries, 0);
    assert_eq!(report.path, path);
    assert!(catalog.errors().next().is_none());
    assert!(catalog.servers().count() >= 14);
}

#[test]
fn missing_required_file_is_a_read_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.json");
    let catalog = load(&[CatalogSource::File {
        path: path.clone(),
        kind: SourceKind::Explicit,
        required: true,
    }]);
    assert!(catalog.items.is_empty());
    let report = &catalog.sources[0];
    assert_eq!(report.kind, SourceKind::Explicit);
    match &report.error {
        Some(e @ CatalogError::Read { path: p, .. }) => {
            assert_eq!(p, &path);
            assert!(e
                .to_string()
                .starts_with(&format!("{}: cannot read", path.display())));
        }
        other => panic!("expected a read error, got {other:?}"),
    }
}

#[test]
fn a_directory_is_a_read_error_even_when_optional() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = load(&[user(dir.path())]);
    assert!(matches!(
        catalog.sources[0].error,
        Some(CatalogError::Read { .. })
    ));
}

#[test]
fn invalid_json_reports_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcp.json",
        "{\n  \"mcpServers\": {\n    \"a\": ,\n  }\n}\n",
    );
    let catalog = load(&[CatalogSource::Embedded, user(&path)]);
    let err = catalog.errors().next().expect("a JSON error");
    match err {
        CatalogError::Json {
            path: p,
            line,
            column,
            message,
        } => {
            assert_eq!(p, &path);
            assert_eq!((*line, *column), (3, 10));
            assert!(!message.contains("line"), "{message}");
        }
        other => panic!("expected a JSON error, got {other:?}"),
    }
    assert!(err
        .to_string()
        .starts_with(&format!("{}:3:10: not valid JSON: ", path.display())));
    // The broken layer adds nothing; the default underneath still loads.
    assert!(catalog.get("slack").is_some());
    assert_eq!(catalog.sources[1].entries, 0);
}

#[test]
fn wrong_top_level_is_a_shape_error() {
    let cases = [
        ("[]", "/", "must be an object"),
        ("\"hello\"", "/", "must be an object"),
        ("{}", "/mcpServers", "is required"),
        (
            r#"{"playwright": {"type": "stdio", "command": "npx"}}"#,
            "/mcpServers",
            "is required",
        ),
        (r#"{"mcpServers": []}"#, "/mcpServers", "must be an object"),
        (
            r#"{"mcpServers": {}, "$schema": 1}"#,
            "/$schema",
            "must be a string",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (text, pointer, message) in cases {
        let path = write(dir.path(), "mcp.json", text);
        let catalog = load(&[user(&path)]);
        match catalog.errors().next() {
            Some(
                e @ CatalogError::Shape {
                    path: p,
                    pointer: ptr,
                    message: m,
                },
            ) => {
                assert_eq!(
                    (p, ptr.as_str(), m.as_str()),
                    (&path, pointer, message),
                    "{text}"
                );
                assert_eq!(
                    e.to_string(),
                    format!("{}: field `{pointer}`: {message}", path.display())
                );
            }
            other => panic!("{text}: expected a shape error, got {other:?}"),
        }
        assert!(catalog.items.is_empty());
    }
}

#[test]
fn unknown_top_level_and_entry_keys_are_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcp.json",
        r#"{"$schema": "x", "version": 2, "mcpServers": {
            "a": {"type": "stdio", "command": "a", "default_in_roots": ["zimmer"], "disabled": true,
                  "oauthless": {"x": 1}}
        }}"#,
    );
    let catalog = load(&[user(&path)]);
    assert!(catalog.errors().next().is_none());
    server(&catalog.items, "a");
    assert_eq!(catalog.sources[0].entries, 1);
}

#[test]
fn entry_errors_name_file_entry_field_and_problem() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            r#""bad": {"type": "sse", "url": 5}"#,
            "bad",
            "/url",
            "must be a string",
        ),
        (
            r#""bad": {"type": "sse"}"#,
            "bad",
            "/url",
            "is required for type \"sse\"",
        ),
        (
            r#""bad": {"type": "http"}"#,
            "bad",
            "/url",
            "is required for type \"http\"",
        ),
        (
            r#""bad": {"type": "stdio", "args": ["x"]}"#,
            "bad",
            "/command",
            "is required for type \"stdio\"",
        ),
        (
            r#""bad": {"type": "ftp", "url": "ftp://x"}"#,
            "bad",
            "/type",
            "unknown type \"ftp\": expected stdio, sse, streamable-http or http",
        ),
        (
            r#""bad": {"type": 7, "url": "https://x"}"#,
            "bad",
            "/type",
            "must be a string",
        ),
        (
            r#""bad": {"url": "https://x"}"#,
            "bad",
            "/type",
            "is required: one of stdio, sse, streamable-http or http",
        ),
        (
            r#""bad": {"type": "stdio", "command": "npx", "args": ["-y", 1]}"#,
            "bad",
            "/args/1",
            "must be a string",
        ),
        (
            r#""bad": {"type": "stdio", "command": "npx", "env": {"TOKEN": true}}"#,
            "bad",
            "/env/TOKEN",
            "must be a string",
        ),
        (
            r#""bad": {"type": "sse", "url": "https://x", "headers": {"X-Api-Key": 1}}"#,
            "bad",
            "/headers/X-Api-Key",
            "must be a string",
        ),
        (
            r#""bad": {"type": "sse", "url": "https://x", "headers": ["a"]}"#,
            "bad",
            "/headers",
            "must be an object",
        ),
        (
            r#""bad": {"type": "stdio", "command": "npx", "url": "https://x"}"#,
            "bad",
            "/url",
            "is not allowed for type \"stdio\"",
        ),
        (
            r#""bad": {"type": "streamable-http", "url": "https://x", "command": "npx"}"#,
            "bad",
            "/command",
            "is not allowed for type \"streamable-http\"",
        ),
        (r#""bad": "https://x""#, "bad", "/", "must be an object"),
        (
            r#""bad": {"type": "stdio", "command": ""}"#,
            "bad",
            "/command",
            "must not be empty",
        ),
        (
            r#""bad": {"type": "stdio", "command": "x", "title": 3}"#,
            "bad",
            "/title",
            "must be a string",
        ),
        (
            r#""bad": {"type": "sse", "url": "https://x", "oauth": {"manual": "yes"}}"#,
            "bad",
            "/oauth/manual",
            "must be a boolean",
        ),
        (
            r#""bad": {"type": "sse", "url": "https://x", "oauth": {"scopes": ["a", ""]}}"#,
            "bad",
            "/oauth/scopes/1",
            "must not be empty",
        ),
        (
            r#""bad": {"type": "sse", "url": "https://x", "oauth": "yes"}"#,
            "bad",
            "/oauth",
            "must be an object",
        ),
        (
            r#""has space": {"type": "stdio", "command": "x"}"#,
            "has space",
            "/",
            "the server name may use only letters, digits, `-`, `_`, `[`, `]` and `$`",
        ),
    ];
    for (servers, name, field, message) in cases {
        assert_entry_error(servers, name, field, message);
    }
}

#[test]
fn urls_must_be_http_or_start_with_a_placeholder() {
    let bad: &[(&str, &str)] = &[
        (
            "ftp://x/mcp",
            "must be an http:// or https:// URL, not \"ftp://x/mcp\"",
        ),
        (
            "mcp.example.com",
            "must be an http:// or https:// URL, not \"mcp.example.com\"",
        ),
        ("https://", "must name a host after the scheme"),
        ("https://x/a b", "must not contain whitespace"),
        (
            "x${HOST}",
            "must be an http:// or https:// URL, not \"x${HOST}\"",
        ),
    ];
    for (url, message) in bad {
        let servers = format!(r#""bad": {{"type": "streamable-http", "url": "{url}"}}"#);
        assert_entry_error(&servers, "bad", "/url", message);
    }
    for url in [
        "https://x/mcp",
        "HTTP://x",
        "${BASE_URL}/mcp",
        "https://${HOST:-a b}/mcp",
    ] {
        let servers = format!(r#""ok": {{"type": "sse", "url": "{url}"}}"#);
        let (_dir, _path, items) = load_servers(&servers);
        assert_eq!(server(&items, "ok").transport.url(), Some(url));
    }
    assert_entry_error(
        r#""bad": {"type": "sse", "url": "https://x", "oauth": {"redirect_uri": "localhost:3118"}}"#,
        "bad",
        "/oauth/redirect_uri",
        "must be an http:// or https:// URL, not \"localhost:3118\"",
    );
}

#[test]
fn header_names_must_be_non_empty_tokens() {
    assert_entry_error(
        r#""bad": {"type": "sse", "url": "https://x", "headers": {"": "v"}}"#,
        "bad",
        "/headers/",
        "header name must not be empty",
    );
    assert_entry_error(
        r#""bad": {"type": "sse", "url": "https://x", "headers": {"X Key": "v"}}"#,
        "bad",
        "/headers/X Key",
        "\"X Key\" is not a valid header name",
    );
}

#[test]
fn entries_parse_every_member() {
    let (_dir, path, items) = load_servers(
        r#""full": {"type": "http", "title": "Full", "description": "All of it.",
            "url": "https://full.example/mcp",
            "headers": {"Z-First": "1", "A-Second": "${TWO}"},
            "oauth": {"clientId": "cid", "clientSecret": "${SECRET}", "redirect_uri": "http://localhost:1/cb",
                      "scope": "read  write\nadmin", "authServerMetadataUrl": "https://as/.well-known/x"},
            "unavailable": "  Endpoint takes\n static tokens only.  "},
        "both": {"type": "sse", "url": "https://b", "oauth": {"scopes": ["s1"], "scope": "ignored",
            "redirectUri": "http://localhost:2/cb", "redirect_uri": "http://localhost:3/cb"},
            "unavailable": true},
        "tool": {"type": "stdio", "command": "uvx", "args": ["a", "${B}"], "env": {"Z": "1", "A": "2"},
            "unavailable": "   "}"#,
    );
    let full = server(&items, "full");
    assert_eq!(full.source, path);
    assert_eq!(full.display_title(), "Full");
    assert_eq!(full.description.as_deref(), Some("All of it."));
    match &full.transport {
        Transport::StreamableHttp { url, headers } => {
            assert_eq!(url, "https://full.example/mcp");
            let names: Vec<&str> = headers.keys().map(String::as_str).collect();
            assert_eq!(names, ["Z-First", "A-Second"], "config order is kept");
        }
        other => panic!("http should be streamable HTTP: {other:?}"),
    }
    let oauth = full.oauth.as_ref().unwrap();
    assert_eq!(oauth.client_id.as_deref(), Some("cid"));
    assert_eq!(oauth.client_secret.as_deref(), Some("${SECRET}"));
    assert_eq!(oauth.redirect_uri.as_deref(), Some("http://localhost:1/cb"));
    assert_eq!(oauth.scopes, ["read", "write", "admin"]);
    assert_eq!(oauth.resource, None);
    assert!(!oauth.manual);
    assert_eq!(
        oauth.auth_server_metadata_url.as_deref(),
        Some("https://as/.well-known/x")
    );
    assert_eq!(
        full.unavailable.as_deref(),
        Some("Endpoint takes static tokens only.")
    );

    let both = server(&items, "both");
    let oauth = both.oauth.as_ref().unwrap();
    assert_eq!(oauth.scopes, ["s1"], "`scopes` wins over `scope`");
    assert_eq!(oauth.redirect_uri.as_deref(), Some("http://localhost:2/cb"));
    assert_eq!(both.unavailable, None, "a non-string declares nothing");

    let tool = server(&items, "tool");
    assert_eq!(tool.unavailable, None, "a blank string declares nothing");
    assert_eq!(tool.display_title(), "tool");
    match &tool.transport {
        Transport::Stdio { command, args, env } => {
            assert_eq!(command, "uvx");
            assert_eq!(args, &["a", "${B}"]);
            let names: Vec<&str> = env.keys().map(String::as_str).collect();
            assert_eq!(names, ["Z", "A"]);
        }
        other => panic!("expected stdio: {other:?}"),
    }
}

#[test]
fn later_layers_replace_whole_entries_and_results_are_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "user.json",
        r#"{"mcpServers": {
            "zeta": {"type": "stdio", "command": "zeta"},
            "notion": {"type": "streamable-http", "url": "https://mcp.notion.com/v1/mcp"},
            "linear": {"type": "sse"},
            "aardvark": {"type": "sse", "url": "https://a"}
        }}"#,
    );
    let catalog = load(&[CatalogSource::Embedded, user(&path)]);
    assert!(catalog.errors().next().is_none());
    assert_eq!(catalog.sources.len(), 2);
    assert_eq!(catalog.sources[1].entries, 4);
    assert_eq!(catalog.sources[1].kind, SourceKind::User);

    // Whole-entry replacement: the user's notion has no title, so the default's does not leak in.
    let notion = server(&catalog.items, "notion");
    assert_eq!(
        notion.transport.url(),
        Some("https://mcp.notion.com/v1/mcp")
    );
    assert_eq!(notion.title, None);
    assert_eq!(notion.source, path);
    assert_eq!(
        notion.credential_key(&|_| None).unwrap().unwrap().as_str(),
        "notion|3fad03f7abd02b9c"
    );

    // A broken user override still wins, shown as invalid, rather than falling back silently.
    let err = invalid(&catalog.items, "linear");
    assert_eq!(err.file, path);
    assert_eq!(err.field, "/url");
    match catalog.get("linear") {
        Some(CatalogItem::Invalid(i)) => assert_eq!(i.source, path),
        other => panic!("{other:?}"),
    }

    // Untouched defaults stay, from the built-in layer.
    assert_eq!(
        server(&catalog.items, "slack").source,
        PathBuf::from(BUILT_IN_PATH)
    );

    let names: Vec<&str> = catalog.items.iter().map(|i| i.name().as_str()).collect();
    assert_eq!(names.first(), Some(&"aardvark"));
    assert_eq!(names.last(), Some(&"zeta"));
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let mut deduped = names.clone();
    deduped.dedup();
    assert_eq!(names, deduped, "one item per name");
}

#[test]
fn a_later_valid_entry_replaces_an_earlier_invalid_one() {
    let dir = tempfile::tempdir().unwrap();
    let first = write(
        dir.path(),
        "a.json",
        r#"{"mcpServers": {"x": {"type": "sse"}}}"#,
    );
    let second = write(
        dir.path(),
        "b.json",
        r#"{"mcpServers": {"x": {"type": "sse", "url": "https://x"}}}"#,
    );
    let catalog = load(&[user(&first), user(&second)]);
    assert_eq!(server(&catalog.items, "x").source, second);
    let catalog = load(&[user(&second), user(&first)]);
    assert_eq!(invalid(&catalog.items, "x").file, first);
}
