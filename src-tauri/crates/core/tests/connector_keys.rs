//! A connector's keys set from the window (issue 21): only a variable the connector's entry uses
//! can be set or cleared, the value lands in the same vault `patchbay secret set` writes, the row
//! walks from Missing configuration to Ready and back, and the value is never in the report.

use patchbay_core::{Patchbay, Paths};
use patchbay_status::{ConnectorState, VariableSource};
use patchbay_vault::{MemoryStore, Secret};
use std::path::Path;
use std::sync::Arc;

fn open(dir: &Path) -> Patchbay {
    let paths = Paths::under(dir);
    std::fs::create_dir_all(&paths.config_dir).unwrap();
    std::fs::write(
        paths.config_dir.join("mcp.json"),
        r#"{"search": {"type": "stdio", "command": "npx", "args": ["-y", "search-mcp"],
            "env": {"SEARCH_API_KEY": "${SEARCH_API_KEY}", "REGION": "${SEARCH_REGION:-eu}"}}}"#,
    )
    .unwrap();
    Patchbay::with_store(paths, Arc::new(MemoryStore::new())).unwrap()
}

fn row(patchbay: &Patchbay) -> patchbay_status::ConnectorStatus {
    patchbay.status().connector("search").unwrap().clone()
}

#[test]
fn a_key_set_for_a_connector_reaches_ready_and_clearing_it_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let patchbay = open(dir.path());
    let before = row(&patchbay);
    assert_eq!(before.state, ConnectorState::MissingConfiguration);
    assert_eq!(before.variables[0].source, VariableSource::Missing);

    patchbay
        .set_connector_key("search", "SEARCH_API_KEY", &Secret::new("  sk-search-1\n"))
        .unwrap();
    let after = row(&patchbay);
    assert_eq!(after.state, ConnectorState::Ready, "{}", after.detail);
    assert_eq!(after.variables[0].source, VariableSource::Vault);
    assert_eq!(after.variables[1].source, VariableSource::Default);
    // The same vault as the CLI's, trimmed as pasted; never in the report.
    assert_eq!(
        patchbay.resolve_variable("SEARCH_API_KEY").as_deref(),
        Some("sk-search-1")
    );
    let names: Vec<String> = patchbay
        .secret_names()
        .unwrap()
        .into_iter()
        .map(|i| i.name)
        .collect();
    assert_eq!(names, ["SEARCH_API_KEY"]);
    assert!(!serde_json::to_string(&patchbay.status())
        .unwrap()
        .contains("sk-search-1"));

    // Replace, then clear.
    patchbay
        .set_connector_key("search", "SEARCH_API_KEY", &Secret::new("sk-search-2"))
        .unwrap();
    assert_eq!(
        patchbay.resolve_variable("SEARCH_API_KEY").as_deref(),
        Some("sk-search-2")
    );
    assert!(patchbay
        .clear_connector_key("search", "SEARCH_API_KEY")
        .unwrap());
    assert!(!patchbay
        .clear_connector_key("search", "SEARCH_API_KEY")
        .unwrap());
    assert_eq!(row(&patchbay).state, ConnectorState::MissingConfiguration);
}

#[test]
fn only_a_variable_the_connector_uses_is_written_and_nothing_empty() {
    let dir = tempfile::tempdir().unwrap();
    let patchbay = open(dir.path());
    let value = Secret::new("x");
    let not_its = patchbay
        .set_connector_key("search", "GITHUB_TOKEN", &value)
        .unwrap_err();
    assert_eq!(not_its.kind(), "invalid_input");
    assert!(
        not_its
            .to_string()
            .contains("uses no variable named GITHUB_TOKEN"),
        "{not_its}"
    );
    let unknown = patchbay
        .set_connector_key("serch", "SEARCH_API_KEY", &value)
        .unwrap_err();
    assert_eq!(unknown.kind(), "unknown_connector");
    assert!(
        unknown.to_string().contains("did you mean \"search\""),
        "{unknown}"
    );
    for bad in ["", "  \n", "two\nlines"] {
        let refused = patchbay
            .set_connector_key("search", "SEARCH_API_KEY", &Secret::new(bad))
            .unwrap_err();
        assert_eq!(refused.kind(), "invalid_input", "{bad:?}");
        assert!(
            !refused.to_string().contains("lines"),
            "the value is not echoed: {refused}"
        );
    }
    assert!(patchbay.clear_connector_key("search", "OTHER").is_err());
    assert!(
        patchbay.secret_names().unwrap().is_empty(),
        "nothing was written"
    );
}
