//! The core crates (everything under src-tauri/crates/, the CLI included) must not depend on
//! Tauri or its webview stack, so the CLI and the core build and test without a GUI toolkit.
//! Reads the resolved dependency graph from `cargo metadata` and walks each crate's normal and
//! build dependencies (dev-dependencies do not ship).

use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

/// Any of these in a core crate's graph means the GUI stack leaked in.
const FORBIDDEN: &[&str] = &["tauri", "tauri-build", "tauri-runtime", "wry", "tao", "webkit2gtk"];

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["metadata", "--format-version", "1", "--offline"])
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata JSON")
}

/// The package names under src-tauri/crates/.
fn core_crates(meta: &Value) -> Vec<(String, String)> {
    let crates_dir = workspace_root().join("src-tauri").join("crates");
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut found: Vec<(String, String)> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| members.contains(p["id"].as_str().unwrap()))
        .filter(|p| Path::new(p["manifest_path"].as_str().unwrap()).starts_with(&crates_dir))
        .map(|p| {
            (
                p["id"].as_str().unwrap().to_owned(),
                p["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    found.sort_by(|a, b| a.1.cmp(&b.1));
    found
}

#[test]
fn core_crates_do_not_depend_on_tauri() {
    let meta = metadata();
    let resolve = &meta["resolve"]["nodes"];
    let names: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let edges: HashMap<&str, Vec<&str>> = resolve
        .as_array()
        .expect("resolve nodes")
        .iter()
        .map(|node| {
            let deps = node["deps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|k| k["kind"].as_str() != Some("dev"))
                })
                .map(|d| d["pkg"].as_str().unwrap())
                .collect();
            (node["id"].as_str().unwrap(), deps)
        })
        .collect();

    let crates = core_crates(&meta);
    let crate_names: Vec<&str> = crates.iter().map(|(_, n)| n.as_str()).collect();
    for expected in ["patchbay-catalog", "patchbay-vault", "patchbay-status", "patchbay-core"] {
        assert!(crate_names.contains(&expected), "{expected} not found in {crate_names:?}");
    }

    let mut failures = Vec::new();
    for (id, name) in &crates {
        let mut seen = BTreeSet::new();
        let mut stack = vec![(id.as_str(), vec![name.as_str()])];
        while let Some((at, path)) = stack.pop() {
            for dep in edges.get(at).into_iter().flatten() {
                if !seen.insert(*dep) {
                    continue;
                }
                let dep_name = names[dep];
                let mut next = path.clone();
                next.push(dep_name);
                if FORBIDDEN.contains(&dep_name) {
                    failures.push(next.join(" -> "));
                } else {
                    stack.push((dep, next));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "core crates depend on Tauri:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_tray_app_does_depend_on_tauri() {
    // Guards the test above against a graph it cannot read: the app crate must show up with tauri.
    let meta = metadata();
    let app = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "patchbay-app")
        .expect("patchbay-app is a workspace member");
    let deps: Vec<&str> = app["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert!(deps.contains(&"tauri"), "{deps:?}");
}
