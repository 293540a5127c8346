//! Seed 004's per-entry connection settings, `enabled`, `timeout_ms` and `retry`: parsed into
//! [`ServerEntry`], bounded by the schema, and an out-of-range or misspelled value makes only that
//! entry invalid with an error naming the field and the range.

use patchbay_catalog::{
    load, CatalogItem, CatalogSource, EntryError, RetryPolicy, ServerEntry, SourceKind,
    RETRY_BASE_MS_RANGE, RETRY_JITTER_RANGE, RETRY_MAX_LIMIT, SCHEMA, TIMEOUT_MS_RANGE,
};
use serde_json::Value;
use std::path::PathBuf;

/// Load a flat user catalog holding `servers` plus one good entry, which must survive.
fn load_servers(servers: &str) -> (tempfile::TempDir, PathBuf, Vec<CatalogItem>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(
        &path,
        format!(
            r#"{{ "good": {{"type": "http", "url": "https://good.example/mcp"}}, {servers} }}"#
        ),
    )
    .unwrap();
    let catalog = load(&[CatalogSource::File {
        path: path.clone(),
        kind: SourceKind::User,
        required: true,
    }]);
    assert!(catalog.errors().next().is_none(), "{:?}", catalog.sources);
    let items = catalog.items;
    assert!(matches!(
        items.iter().find(|i| i.name().as_str() == "good"),
        Some(CatalogItem::Server(_))
    ));
    (dir, path, items)
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

#[test]
fn settings_parse_with_seed_defaults_and_absent_means_not_stated() {
    let (_dir, _path, items) = load_servers(
        r#""plain": {"type": "http", "url": "https://p/mcp"},
        "off": {"type": "http", "url": "https://o/mcp", "enabled": false},
        "on": {"type": "stdio", "command": "npx", "enabled": true, "timeout_ms": 2500},
        "defaults": {"type": "sse", "url": "https://d/sse", "retry": {}},
        "custom": {"type": "http", "url": "https://c/mcp", "timeout_ms": 100,
                   "retry": {"max": 1, "base_ms": 250, "jitter": 0}},
        "floaty": {"type": "http", "url": "https://f/mcp", "timeout_ms": 5000.0,
                   "retry": {"max": 2.0, "jitter": 1}}"#,
    );
    let plain = server(&items, "plain");
    assert_eq!(
        (plain.enabled, plain.timeout_ms, plain.retry),
        (None, None, None)
    );
    assert_eq!(server(&items, "off").enabled, Some(false));
    let on = server(&items, "on");
    assert_eq!((on.enabled, on.timeout_ms), (Some(true), Some(2500)));
    assert_eq!(
        server(&items, "defaults").retry,
        Some(RetryPolicy {
            max: 3,
            base_ms: 500,
            jitter: 0.3
        }),
        "{{}} is seed 004's max=3, base=500ms, jitter=0.3"
    );
    let custom = server(&items, "custom");
    assert_eq!(custom.timeout_ms, Some(100));
    assert_eq!(
        custom.retry,
        Some(RetryPolicy {
            max: 1,
            base_ms: 250,
            jitter: 0.0
        })
    );
    // JSON Schema counts 5000.0 as an integer; it must not vanish on the way in.
    let floaty = server(&items, "floaty");
    assert_eq!(floaty.timeout_ms, Some(5000));
    assert_eq!(
        floaty.retry,
        Some(RetryPolicy {
            max: 2,
            base_ms: 500,
            jitter: 1.0
        })
    );
}

#[test]
fn bad_settings_make_the_entry_invalid_naming_the_field_and_range() {
    let cases: &[(&str, &str, &str)] = &[
        (r#""enabled": "yes""#, "/enabled", "must be a boolean"),
        (
            r#""timeout_ms": 99"#,
            "/timeout_ms",
            "must be from 100 to 600000 milliseconds (10 minutes), not 99",
        ),
        (
            r#""timeout_ms": 600001"#,
            "/timeout_ms",
            "must be from 100 to 600000 milliseconds (10 minutes), not 600001",
        ),
        (
            r#""timeout_ms": 1e12"#,
            "/timeout_ms",
            "must be from 100 to 600000 milliseconds (10 minutes), not 1000000000000.0",
        ),
        (r#""timeout_ms": 1.5"#, "/timeout_ms", "must be an integer"),
        (r#""timeout_ms": "5s""#, "/timeout_ms", "must be an integer"),
        (
            r#""retry": {"max": 4}"#,
            "/retry/max",
            "must be from 0 to 3: at most 3 retries, not 4",
        ),
        (
            r#""retry": {"max": -1}"#,
            "/retry/max",
            "must be from 0 to 3: at most 3 retries, not -1",
        ),
        (
            r#""retry": {"base_ms": 5}"#,
            "/retry/base_ms",
            "must be from 10 to 60000 milliseconds, not 5",
        ),
        (
            r#""retry": {"jitter": 1.5}"#,
            "/retry/jitter",
            "must be from 0 to 1 (a fraction of each wait), not 1.5",
        ),
        (
            r#""retry": {"jitter": "30%"}"#,
            "/retry/jitter",
            "must be a number",
        ),
        (
            r#""retry": 3"#,
            "/retry",
            r#"must be an object, e.g. {"max": 3, "base_ms": 500, "jitter": 0.3}"#,
        ),
        (
            r#""retry": {"attempts": 2}"#,
            "/retry/attempts",
            "is not a member of `retry`, which takes `max`, `base_ms` and `jitter`",
        ),
    ];
    for (member, field, message) in cases {
        let (_dir, path, items) = load_servers(&format!(
            r#""bad": {{"type": "http", "url": "https://b/mcp", {member}}}"#
        ));
        let err = invalid(&items, "bad");
        assert_eq!(
            (err.field.as_str(), err.message.as_str()),
            (*field, *message),
            "{member}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "{}: entry \"bad\", field `{field}`: {message}",
                path.display()
            )
        );
    }
}

#[test]
fn the_bounds_in_the_schema_are_the_ones_enforced() {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let props = &schema["$defs"]["ServerConfiguration"]["properties"];
    assert_eq!(props["enabled"]["type"], "boolean");
    assert_eq!(props["timeout_ms"]["minimum"], *TIMEOUT_MS_RANGE.start());
    assert_eq!(props["timeout_ms"]["maximum"], *TIMEOUT_MS_RANGE.end());
    let retry = &props["retry"]["properties"];
    assert_eq!(retry["max"]["maximum"], RETRY_MAX_LIMIT);
    assert_eq!(retry["base_ms"]["minimum"], *RETRY_BASE_MS_RANGE.start());
    assert_eq!(retry["base_ms"]["maximum"], *RETRY_BASE_MS_RANGE.end());
    assert_eq!(
        retry["jitter"]["minimum"].as_f64(),
        Some(*RETRY_JITTER_RANGE.start())
    );
    assert_eq!(
        retry["jitter"]["maximum"].as_f64(),
        Some(*RETRY_JITTER_RANGE.end())
    );
    // The edges themselves are accepted.
    let (_dir, _path, items) = load_servers(
        r#""low": {"type": "http", "url": "https://l/mcp", "timeout_ms": 100,
                 "retry": {"max": 0, "base_ms": 10, "jitter": 0}},
        "high": {"type": "http", "url": "https://h/mcp", "timeout_ms": 600000,
                 "retry": {"max": 3, "base_ms": 60000, "jitter": 1}}"#,
    );
    assert_eq!(server(&items, "low").timeout_ms, Some(100));
    assert_eq!(server(&items, "high").retry.unwrap().base_ms, 60_000);
}
