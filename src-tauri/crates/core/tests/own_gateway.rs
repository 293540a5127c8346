//! Patchbay's own gateway is never a connector (issue 20): what `patchbay gateway client add
//! cursor --json` prints, pasted into Cursor's `mcp.json` (or Gemini CLI's `settings.json`, or
//! behind `npx mcp-remote`), in any loopback form, is skipped; a server on another port or path
//! is still a connector of its own. The clients' files are written into a temporary home.

use patchbay_core::setup::ClientSetup;
use patchbay_core::{Patchbay, Paths};
use patchbay_runtimes::clients::{ClientPaths, Os};
use patchbay_vault::MemoryStore;
use std::path::Path;
use std::sync::Arc;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn open(dir: &Path, home: &Path) -> Patchbay {
    let paths = Paths::under(dir);
    Patchbay::with_store(paths, Arc::new(MemoryStore::new()))
        .unwrap()
        .with_clients(ClientSetup {
            paths: ClientPaths::resolve(home, Os::Linux, &|_| None),
            projects: Vec::new(),
        })
}

fn names(patchbay: &Patchbay) -> Vec<String> {
    patchbay.in_use().into_iter().collect()
}

#[test]
fn the_gateway_pasted_into_clients_is_not_a_connector() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    // `patchbay gateway client add cursor --json`'s url and headers, as a user pastes them.
    write(
        &home.join(".cursor/mcp.json"),
        r#"{"mcpServers": {
            "patchbay": {"url": "http://127.0.0.1:3119/mcp",
                         "headers": {"Authorization": "Bearer pbg_pasted"}},
            "patchbay-local": {"url": "http://localhost:3119/mcp/"},
            "patchbay-bridged": {"command": "npx",
                                 "args": ["-y", "mcp-remote", "http://localhost:3119/mcp"]},
            "elsewhere": {"url": "http://127.0.0.1:3120/mcp"}
        }}"#,
    );
    write(
        &home.join(".gemini/settings.json"),
        r#"{"mcpServers": {
            "gateway": {"httpUrl": "http://[::1]:3119/mcp",
                        "headers": {"Authorization": "Bearer pbg_pasted"}},
            "other-path": {"httpUrl": "http://127.0.0.1:3119/api/mcp"},
            "on-4000": {"httpUrl": "http://127.0.0.1:4000/mcp"}
        }}"#,
    );
    let patchbay = open(dir.path(), &home);
    let listed = names(&patchbay);
    for own in ["patchbay", "patchbay-local", "patchbay-bridged", "gateway"] {
        assert!(!listed.iter().any(|n| n == own), "{own} listed: {listed:?}");
    }
    // Another port or path is somebody else's server.
    for other in ["elsewhere", "other-path", "on-4000"] {
        assert!(
            listed.iter().any(|n| n == other),
            "{other} missing: {listed:?}"
        );
    }
    // A gateway this process serves on another port (`gateway serve --port 4000`) is ours too.
    patchbay.own_gateway().add_port(4000);
    let listed = names(&patchbay);
    assert!(!listed.iter().any(|n| n == "on-4000"), "{listed:?}");
    assert!(listed.iter().any(|n| n == "elsewhere"), "{listed:?}");
}
