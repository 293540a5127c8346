//! Your setup, not the whole catalog (issue 11): a fresh install shows no connector in use and
//! the shipped catalog as a gallery; the servers the clients on the machine configure are in use
//! ("Found in Cursor, Claude Code"), the ones no catalog has become connectors of their own, and
//! enable / disable / manage move connectors in and out of use through the user catalog.
//! The clients' files are the realistic fixtures of the runtimes crate.

use patchbay_core::setup::ClientSetup;
use patchbay_core::{Patchbay, Paths};
use patchbay_runtimes::clients::{ClientPaths, Os};
use patchbay_status::{InUseReason, Origin, StatusReport};
use patchbay_vault::MemoryStore;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtimes/tests/fixtures/clients")
}

fn open(dir: &Path, clients: bool) -> Patchbay {
    let paths = Paths::under(dir);
    let patchbay = Patchbay::with_store(paths, Arc::new(MemoryStore::new())).unwrap();
    if !clients {
        return patchbay;
    }
    patchbay.with_clients(ClientSetup {
        paths: ClientPaths::resolve(&fixtures().join("home"), Os::Linux, &|_| None),
        projects: vec![fixtures().join("project")],
    })
}

fn names(report: &StatusReport) -> Vec<&str> {
    report.connectors.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn a_fresh_install_has_nothing_in_use_and_the_catalog_as_a_gallery() {
    let dir = tempfile::tempdir().unwrap();
    let report = open(dir.path(), false).status();
    assert!(report.connectors.is_empty(), "{:?}", names(&report));
    assert_eq!(report.need_attention, 0);
    assert_eq!(report.worst, None);
    assert_eq!(report.headline(), "No connectors in use");
    let shipped = patchbay_catalog::parse(patchbay_catalog::DEFAULT_CATALOG, Path::new("x"))
        .unwrap()
        .len();
    assert_eq!(report.gallery.len(), shipped);
    let github = report.gallery.iter().find(|g| g.name == "github").unwrap();
    assert_eq!(github.needs, patchbay_status::Needs::Secret);
    assert!(github.variables.contains(&"GITHUB_TOKEN".to_string()));
    let notion = report.gallery.iter().find(|g| g.name == "notion").unwrap();
    assert_eq!(notion.needs, patchbay_status::Needs::Oauth);
}

#[test]
fn what_the_clients_configure_is_in_use_once_with_where_it_was_found() {
    let dir = tempfile::tempdir().unwrap();
    let report = open(dir.path(), true).status();
    let row = |name: &str| {
        report
            .connector(name)
            .unwrap_or_else(|| panic!("{name} not in use: {:?}", names(&report)))
    };
    // A catalog entry several clients configure: one row, every client named.
    let github = row("github");
    let clients: Vec<&str> = github
        .found_in
        .iter()
        .map(|f| f.display_name.as_str())
        .collect();
    for client in ["Claude Code", "Cursor", "Gemini CLI"] {
        assert!(clients.contains(&client), "{clients:?}");
    }
    assert_eq!(github.in_use_because, vec![InUseReason::Client]);
    assert_eq!(github.origin, Origin::Catalog);
    // Through mcp-remote in Claude Desktop, directly in Codex: the same server.
    let linear = row("linear");
    let clients: Vec<&str> = linear.found_in.iter().map(|f| f.client.as_str()).collect();
    assert!(
        clients.contains(&"claude_desktop") && clients.contains(&"codex"),
        "{clients:?}"
    );
    // A server no catalog has: a connector of its own, named and typed from the client.
    let tools = row("python-tools");
    assert_eq!(tools.origin, Origin::Client);
    assert_eq!(tools.transport, "stdio");
    assert_eq!(tools.found_in[0].display_name, "Gemini CLI");
    // Its literal API key counts as set (the client holds it), so it is not missing.
    assert!(
        !tools
            .missing_variables
            .iter()
            .any(|m| m.name.contains("API_KEY")),
        "{:?}",
        tools.missing_variables
    );
    // An `npx mcp-remote URL` entry is the remote server it bridges: Patchbay is its OAuth
    // client directly.
    let demo = row("sdk-demo");
    assert_eq!(demo.transport, "streamable-http");
    assert_eq!(demo.url.as_deref(), Some("http://localhost:45591/mcp"));
    assert_eq!(demo.found_in[0].display_name, "Claude Desktop");
    // The shipped catalog's own `filesystem` is a different server: the client's gets its own
    // name rather than taking the catalog's.
    assert!(
        report.connector("filesystem-claude-desktop").is_some(),
        "{:?}",
        names(&report)
    );
    // Nothing the user never chose.
    for gallery_only in ["asana", "canva", "paypal"] {
        assert!(report.connector(gallery_only).is_none(), "{gallery_only}");
        assert!(report.gallery.iter().any(|g| g.name == gallery_only));
    }
    // No literal secret from a client's file reaches the report.
    let json = serde_json::to_string(&report).unwrap();
    for literal in [
        "ghp_fixtureLiteralToken",
        "lin_api_fixture_literal",
        "fixture-gemini-key",
        "fixture-brave-key",
    ] {
        assert!(!json.contains(literal), "{literal} leaked into the status");
    }
}

#[test]
fn enable_disable_and_manage_go_through_the_user_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let patchbay = open(dir.path(), true);
    let user_catalog = dir.path().join("config").join("mcp.json");

    patchbay.enable("asana").unwrap();
    let report = patchbay.status();
    let asana = report.connector("asana").expect("asana in use");
    assert!(asana.in_use_because.contains(&InUseReason::Enabled));
    assert!(!report.gallery.iter().any(|g| g.name == "asana"));
    let text = std::fs::read_to_string(&user_catalog).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["asana"]["enabled"], true, "{text}");
    assert_eq!(doc["asana"]["url"], "https://mcp.asana.com/sse");

    // `enabled: false` hides it even though three clients configure it.
    patchbay.disable("github").unwrap();
    let report = patchbay.status();
    assert!(report.connector("github").is_none());
    let hidden = report.gallery.iter().find(|g| g.name == "github").unwrap();
    assert!(hidden.disabled);
    patchbay.enable("github").unwrap();
    assert!(patchbay.status().connector("github").is_some());

    // Manage with Patchbay: the client's server is copied in AIR form, its literal key moves to
    // the vault and the catalog holds only the placeholder.
    patchbay.manage("python-tools").unwrap();
    let text = std::fs::read_to_string(&user_catalog).unwrap();
    assert!(!text.contains("fixture-gemini-key"), "{text}");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let entry = &doc["python-tools"];
    assert_eq!(entry["type"], "stdio");
    let placeholder = entry["env"]["API_KEY"].as_str().unwrap();
    let variable = placeholder.trim_start_matches("${").trim_end_matches('}');
    assert_eq!(
        patchbay
            .vault()
            .variable(variable)
            .unwrap()
            .unwrap()
            .expose(),
        "fixture-gemini-key"
    );
    let report = patchbay.status();
    let managed = report.connector("python-tools").unwrap();
    assert_eq!(managed.origin, Origin::Catalog);
    assert!(managed.in_use_because.contains(&InUseReason::UserCatalog));
    assert!(managed.in_use_because.contains(&InUseReason::Client));

    // Bad names are said as such.
    let err = patchbay.enable("no-such-thing").unwrap_err().to_string();
    assert!(
        err.contains("no connector named \"no-such-thing\""),
        "{err}"
    );
    let err = patchbay.manage("asana").unwrap_err().to_string();
    assert!(err.contains("already in a catalog"), "{err}");
}
