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

/// Load a flat user file holding `servers` (comma-separated members) plus one good entry.
fn load_servers(servers: &str) -> (tempfile::TempDir, PathBuf, Vec<CatalogItem>) {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"{{ "good": {{"type": "streamable-http", "url": "https://good.example/mcp"}}, {servers} }}"#
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
    broken["slack"]["url"] = Value::from(5);
    assert!(!validator.is_valid(&broken));
    // The shipped catalog is in the canonical flat form.
    assert!(doc.get("mcpServers").is_none());
    assert_eq!(doc["$schema"], "./mcp.schema.json");

    // The wrapper form validates too, and its entries are checked the same way.
    let servers: serde_json::Map<String, Value> = doc
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.as_str() != "$schema")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut wrapped = serde_json::json!({ "$schema": "x", "other": 1, "mcpServers": servers });
    assert!(validator.is_valid(&wrapped));
    wrapped["mcpServers"]["slack"]["url"] = Value::from(5);
    assert!(!validator.is_valid(&wrapped));
    // In the flat form a bad name or a non-entry value is caught; `$schema` is not an entry.
    assert!(
        !validator.is_valid(&serde_json::json!({"has space": {"type": "stdio", "command": "x"}}))
    );
    assert!(!validator.is_valid(&serde_json::json!({"version": 2})));
    assert!(validator.is_valid(&serde_json::json!({"$schema": "x"})));
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
fn missing_required_file_is_reported_as_missing() {
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
        Some(e @ CatalogError::Missing { path: p }) => {
            assert_eq!(p, &path);
            assert_eq!(e.to_string(), format!("{}: no such file", path.display()));
        }
        other => panic!("expected a missing-file error, got {other:?}"),
    }
}

#[test]
fn a_directory_is_refused_even_when_optional() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = load(&[user(dir.path())]);
    match &catalog.sources[0].error {
        Some(e @ CatalogError::NotAFile { kind, .. }) => {
            assert_eq!(kind, "a directory");
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
        other => panic!("expected a not-a-file error, got {other:?}"),
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_at_once_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("catalog.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Reading a FIFO with no writer blocks forever, so the load runs on a thread with a bound.
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || {
        let catalog = load(&[CatalogSource::File {
            path,
            kind: SourceKind::Explicit,
            required: true,
        }]);
        let _ = tx.send(catalog);
    });
    let catalog = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("loading a FIFO as a catalog did not return within 10 s");
    match &catalog.sources[0].error {
        Some(e @ CatalogError::NotAFile { path, kind }) => {
            assert_eq!(path, &fifo);
            assert_eq!(kind, "a FIFO (named pipe)");
            assert_eq!(
                e.to_string(),
                format!(
                    "{}: is a FIFO (named pipe), not a regular file; a catalog must be a JSON file",
                    fifo.display()
                )
            );
        }
        other => panic!("expected a not-a-file error, got {other:?}"),
    }
    assert!(catalog.items.is_empty());
}

#[cfg(unix)]
#[test]
fn a_character_device_is_refused() {
    let catalog = load(&[CatalogSource::File {
        path: PathBuf::from("/dev/zero"),
        kind: SourceKind::Explicit,
        required: true,
    }]);
    match &catalog.sources[0].error {
        Some(CatalogError::NotAFile { kind, .. }) => assert_eq!(kind, "a character device"),
        other => panic!("expected a not-a-file error, got {other:?}"),
    }
}

#[cfg(unix)]
#[test]
fn a_socket_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let catalog = load(&[user(&path)]);
    match &catalog.sources[0].error {
        Some(CatalogError::NotAFile { kind, .. }) => assert_eq!(kind, "a socket"),
        other => panic!("expected a not-a-file error, got {other:?}"),
    }
}

#[test]
fn a_file_that_cannot_be_decoded_is_a_read_error_not_missing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, b"{\"a\": \"\xff\"}").unwrap();
    let catalog = load(&[user(&path)]);
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
        (r#"{"mcpServers": []}"#, "/mcpServers", "must be an object"),
        (
            r#"{"mcpServers": {}, "$schema": 1}"#,
            "/$schema",
            "must be a string",
        ),
        (r#"{"$schema": ["x"]}"#, "/$schema", "must be a string"),
        (
            r#"{"mcpServers": {"type": "stdio", "command": "x"}}"#,
            "/mcpServers",
            "holds the server map of the wrapper form, so it cannot be a server's name",
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
fn the_flat_form_is_read_with_schema_beside_the_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcp.json",
        r#"{"$schema": "https://pulsemcp.github.io/air/schemas/mcp.schema.json",
            "zed": {"type": "stdio", "command": "zed"},
            "alpha": {"type": "streamable-http", "url": "https://a.example/mcp"},
            "broken": {"type": "sse"}}"#,
    );
    let catalog = load(&[user(&path)]);
    assert!(catalog.errors().next().is_none(), "{:?}", catalog.sources);
    assert_eq!(catalog.sources[0].entries, 3, "$schema is not a server");
    assert!(catalog.get("$schema").is_none());
    assert_eq!(server(&catalog.items, "zed").source, path);
    assert_eq!(
        server(&catalog.items, "alpha").transport.url(),
        Some("https://a.example/mcp")
    );
    assert_eq!(invalid(&catalog.items, "broken").field, "/url");
}

#[test]
fn both_forms_give_the_same_catalog() {
    let entries = r#""a": {"type": "stdio", "command": "a", "args": ["${X:-1}"]},
        "b": {"type": "sse", "url": "https://b", "headers": {"X-Api-Key": "${K}"}}"#;
    let dir = tempfile::tempdir().unwrap();
    let flat = write(dir.path(), "flat.json", &format!("{{{entries}}}"));
    let wrapped = write(
        dir.path(),
        "wrapped.json",
        &format!(
            r#"{{"numStartups": 3, "projects": {{"/x": {{}}}}, "mcpServers": {{{entries}}}}}"#
        ),
    );
    let a = load(&[user(&flat)]);
    let b = load(&[user(&wrapped)]);
    assert!(a.errors().next().is_none() && b.errors().next().is_none());
    let strip = |c: &patchbay_catalog::Catalog| -> Vec<(String, Transport)> {
        c.servers()
            .map(|s| (s.name.0.clone(), s.transport.clone()))
            .collect()
    };
    assert_eq!(strip(&a), strip(&b));
    assert_eq!(strip(&a).len(), 2);
}

#[test]
fn an_empty_object_is_an_empty_flat_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "mcp.json", "{}");
    let catalog = load(&[user(&path)]);
    assert!(catalog.errors().next().is_none());
    assert!(catalog.sources[0].present);
    assert_eq!(catalog.sources[0].entries, 0);
}

#[test]
fn a_wrapper_with_servers_beside_it_is_an_error_naming_the_file_and_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcp.json",
        r#"{"$schema": "x", "settings": {"theme": "dark"},
            "mcpServers": {"a": {"type": "stdio", "command": "a"}},
            "b": {"type": "sse", "url": "https://b"},
            "c": {"command": "c"}}"#,
    );
    let catalog = load(&[CatalogSource::Embedded, user(&path)]);
    match catalog.errors().next() {
        Some(e @ CatalogError::BothForms { path: p, names }) => {
            assert_eq!(p, &path);
            assert_eq!(names, &["b", "c"], "only entries that look like servers");
            let shown = e.to_string();
            assert!(
                shown.starts_with(&format!(
                    "{}: has both the `mcpServers` wrapper",
                    path.display()
                )),
                "{shown}"
            );
            assert!(shown.contains("(b, c)"), "{shown}");
        }
        other => panic!("expected a both-forms error, got {other:?}"),
    }
    // Neither half is used; the default underneath still loads.
    assert!(catalog.get("a").is_none() && catalog.get("b").is_none());
    assert!(catalog.get("slack").is_some());
}

#[test]
fn a_utf8_bom_is_accepted_in_either_form() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        (
            "flat.json",
            "\u{feff}{\"a\": {\"type\": \"stdio\", \"command\": \"a\"}}",
        ),
        (
            "wrapped.json",
            "\u{feff}{\"mcpServers\": {\"a\": {\"type\": \"stdio\", \"command\": \"a\"}}}",
        ),
    ] {
        let path = write(dir.path(), name, text);
        let catalog = load(&[user(&path)]);
        assert!(
            catalog.errors().next().is_none(),
            "{name}: {:?}",
            catalog.sources
        );
        server(&catalog.items, "a");
    }
    // A BOM anywhere else is still a JSON error.
    let path = write(dir.path(), "late.json", "{\"a\": \u{feff}1}");
    assert!(matches!(
        load(&[user(&path)]).errors().next(),
        Some(CatalogError::Json { .. })
    ));
}

#[test]
fn a_duplicate_server_name_is_an_error_naming_both_places() {
    let dir = tempfile::tempdir().unwrap();
    let flat = write(
        dir.path(),
        "flat.json",
        "{\n  \"github\": {\"type\": \"stdio\", \"command\": \"one\"},\n  \"other\": {\"type\": \"stdio\", \"command\": \"x\"},\n    \"github\": {\"type\": \"stdio\", \"command\": \"two\"}\n}\n",
    );
    let wrapped = write(
        dir.path(),
        "wrapped.json",
        "{\"mcpServers\": {\n\"github\": {\"type\": \"stdio\", \"command\": \"one\"},\n\"github\": {\"type\": \"stdio\", \"command\": \"two\"}}}",
    );
    for (path, first, second) in [(&flat, (2, 3), (4, 5)), (&wrapped, (2, 1), (3, 1))] {
        let catalog = load(&[CatalogSource::Embedded, user(path)]);
        let err = catalog.errors().next().expect("a duplicate error");
        match err {
            CatalogError::Duplicate {
                path: p,
                key,
                server_name,
                first_line,
                first_column,
                line,
                column,
                ..
            } => {
                assert_eq!(p, path);
                assert_eq!(key, "github");
                assert!(server_name);
                assert_eq!((*first_line, *first_column), first);
                assert_eq!((*line, *column), second);
            }
            other => panic!("expected a duplicate error, got {other:?}"),
        }
        assert_eq!(
            err.to_string(),
            format!(
                "{}:{}:{}: server name \"github\" appears twice (first at {}:{}); remove or rename one",
                path.display(),
                second.0,
                second.1,
                first.0,
                first.1
            )
        );
        // The default's github stays; neither duplicate silently wins.
        assert_eq!(
            server(&catalog.items, "github").source,
            PathBuf::from(BUILT_IN_PATH)
        );
    }
}

#[test]
fn a_duplicate_key_inside_an_entry_names_the_object() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcp.json",
        r#"{"s": {"type": "sse", "url": "https://s", "headers": {"Authorization": "a", "Authorization": "b"}}}"#,
    );
    let err = load(&[user(&path)]).errors().next().cloned().unwrap();
    let shown = err.to_string();
    assert!(
        shown.ends_with(
            ":1:77: key \"Authorization\" appears twice in `/s/headers` (first at 1:55); remove or rename one"
        ),
        "{shown}"
    );
}

#[test]
fn overriding_a_default_by_name_is_not_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcp.json",
        r#"{"github": {"type": "stdio", "command": "gh-mcp"}}"#,
    );
    let catalog = load(&[CatalogSource::Embedded, user(&path)]);
    assert!(catalog.errors().next().is_none());
    assert_eq!(server(&catalog.items, "github").source, path);
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

#[test]
fn a_malformed_placeholder_makes_the_entry_invalid_naming_the_field() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#""bad": {"type": "sse", "url": "https://x", "headers": {"Authorization": "Bearer ${TOKEN"}}"#,
            "/headers/Authorization",
            "malformed placeholder `${TOKEN`: it is not closed with `}`; write ${NAME} or ${NAME:-default}",
        ),
        (
            r#""bad": {"type": "streamable-http", "url": "https://${}/mcp"}"#,
            "/url",
            "malformed placeholder `${}`: it names no variable; write ${NAME} or ${NAME:-default}",
        ),
        (
            r#""bad": {"type": "stdio", "command": "npx", "env": {"KEY": "${1BAD}"}}"#,
            "/env/KEY",
            "malformed placeholder `${1BAD}`: a variable name cannot start with a digit; write ${NAME} or ${NAME:-default}",
        ),
        (
            r#""bad": {"type": "stdio", "command": "npx", "args": ["-y", "${ROOT:-${HOME}}"]}"#,
            "/args/1",
            "malformed placeholder `${ROOT:-${HOME}`: a default cannot hold another placeholder (no nesting); write ${NAME} or ${NAME:-default}",
        ),
        (
            r#""bad": {"type": "stdio", "command": "${BIN"}"#,
            "/command",
            "malformed placeholder `${BIN`: it is not closed with `}`; write ${NAME} or ${NAME:-default}",
        ),
        (
            r#""bad": {"type": "sse", "url": "https://x", "oauth": {"clientSecret": "${SECRET"}}"#,
            "/oauth/clientSecret",
            "malformed placeholder `${SECRET`: it is not closed with `}`; write ${NAME} or ${NAME:-default}",
        ),
    ];
    for (servers, field, message) in cases {
        assert_entry_error(servers, "bad", field, message);
    }
    for key in [
        "clientId",
        "redirectUri",
        "redirect_uri",
        "authServerMetadataUrl",
        "resource",
    ] {
        let servers = format!(
            r#""bad": {{"type": "sse", "url": "https://x", "oauth": {{"{key}": "http://localhost/${{A B}}"}}}}"#
        );
        let (_dir, _path, items) = load_servers(&servers);
        assert_eq!(invalid(&items, "bad").field, format!("/oauth/{key}"));
    }
    // Well-formed ones, an empty default and a lone `$` stay valid.
    let (_dir, _path, items) = load_servers(
        r#""ok": {"type": "stdio", "command": "${BIN:-npx}", "args": ["${A:-}", "$5", "a$"],
                  "env": {"P": "pa$$word"}}"#,
    );
    server(&items, "ok");
}

#[test]
fn credentials_in_a_url_are_refused_without_echoing_them() {
    let message = "must not carry credentials (user:password@): credentials in the URL are not allowed; send them in a header with a ${VAR}, e.g. \"Authorization\": \"Bearer ${TOKEN}\"";
    for url in [
        "https://alice:hunter2@mcp.example.com/mcp",
        "http://alice@mcp.example.com",
        "https://${USER}:${PASS}@mcp.example.com/mcp",
        "ftp://alice:hunter2@x/mcp",
        "alice:hunter2@mcp.example.com/mcp",
    ] {
        let servers = format!(r#""bad": {{"type": "streamable-http", "url": "{url}"}}"#);
        assert_entry_error(&servers, "bad", "/url", message);
    }
    assert_entry_error(
        r#""bad": {"type": "sse", "url": "https://x", "oauth": {"authServerMetadataUrl": "https://u:hunter2@as.example/.well-known/x"}}"#,
        "bad",
        "/oauth/authServerMetadataUrl",
        message,
    );
    // An `@` in the path or query is not userinfo.
    for url in [
        "https://mcp.example.com/@scope/pkg",
        "https://mcp.example.com/mcp?user=a@b",
    ] {
        let servers = format!(r#""ok": {{"type": "sse", "url": "{url}"}}"#);
        let (_dir, _path, items) = load_servers(&servers);
        server(&items, "ok");
    }
}

#[test]
fn a_name_with_control_characters_is_invalid_and_shown_escaped() {
    let (_dir, path, items) =
        load_servers(r#""evil\u001b[2J\u009b": {"type": "stdio", "command": "x"}"#);
    let shown_name = "evil\\u{1b}[2J\\u{9b}";
    let err = invalid(&items, shown_name);
    assert_eq!(err.entry, shown_name);
    assert_eq!(
        err.message,
        "the server name contains control characters (shown escaped); the server name may use only letters, digits, `-`, `_`, `[`, `]` and `$`"
    );
    let rendered = err.to_string();
    assert!(!rendered.chars().any(char::is_control), "{rendered:?}");
    assert!(rendered.starts_with(&format!("{}: entry \"{shown_name}\"", path.display())));
    for item in &items {
        assert!(!item.name().as_str().chars().any(char::is_control));
    }
}

#[test]
fn control_characters_in_keys_and_values_never_reach_an_error_raw() {
    let (_dir, _path, items) = load_servers(
        r#""h": {"type": "sse", "url": "https://x", "headers": {"X-\u001b]0;pwn\u0007": "v"}},
           "u": {"type": "sse", "url": "gopher://\u001b[31mred"}"#,
    );
    for name in ["h", "u"] {
        let err = invalid(&items, name);
        let rendered = err.to_string();
        assert!(!rendered.chars().any(char::is_control), "{rendered:?}");
        assert!(rendered.contains("\\u{1b}"), "{rendered:?}");
    }
}

#[test]
fn titles_and_descriptions_are_made_terminal_safe() {
    let (_dir, _path, items) = load_servers(
        r#""s": {"type": "stdio", "command": "x", "title": "Nice\u001b[8m hidden",
                 "description": "Line one\nline two\u009b\u202e.txt"}"#,
    );
    let s = server(&items, "s");
    assert_eq!(s.title.as_deref(), Some("Nice\\u{1b}[8m hidden"));
    assert_eq!(
        s.description.as_deref(),
        Some("Line one line two\\u{9b}\\u{202e}.txt")
    );
}
