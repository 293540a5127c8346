//! The core crates (everything under src-tauri/crates/, the CLI included) must not depend on
//! Tauri or its webview stack, so the CLI and the core build and test without a GUI toolkit.
//! Lists the crates with `cargo metadata --no-deps` and reads each one's normal and build
//! dependencies (dev-dependencies do not ship) with `cargo tree`, offline, for this host.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Any of these in a core crate's graph means the GUI stack leaked in.
const FORBIDDEN: &[&str] = &[
    "tauri",
    "tauri-build",
    "tauri-runtime",
    "tauri-runtime-wry",
    "wry",
    "tao",
    "webkit2gtk",
];

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn cargo(args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace_root())
        .args(args)
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The workspace's package names, each with whether it lives under src-tauri/crates/.
fn members() -> Vec<(String, bool)> {
    let crates_dir = workspace_root().join("src-tauri").join("crates");
    let meta: Value = serde_json::from_str(&cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ]))
    .unwrap();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let manifest = Path::new(p["manifest_path"].as_str().unwrap());
            (
                p["name"].as_str().unwrap().to_owned(),
                manifest.starts_with(&crates_dir),
            )
        })
        .collect()
}

/// The names of every package `package` depends on, transitively, for normal and build edges.
fn dependency_names(package: &str) -> Vec<String> {
    cargo(&[
        "tree",
        "--offline",
        "-p",
        package,
        "-e",
        "normal,build",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ])
    .lines()
    .filter_map(|l| l.split_whitespace().next())
    .map(str::to_owned)
    .collect()
}

#[test]
fn core_crates_do_not_depend_on_tauri() {
    let members = members();
    let core: Vec<&str> = members
        .iter()
        .filter(|(_, under_crates)| *under_crates)
        .map(|(name, _)| name.as_str())
        .collect();
    for expected in [
        "patchbay-catalog",
        "patchbay-vault",
        "patchbay-status",
        "patchbay-core",
        "patchbay-cli",
    ] {
        assert!(core.contains(&expected), "{expected} not found in {core:?}");
    }
    let mut failures = Vec::new();
    for package in core {
        let deps = dependency_names(package);
        assert!(deps.len() > 1, "cargo tree printed nothing for {package}");
        for dep in deps {
            if FORBIDDEN.contains(&dep.as_str()) {
                failures.push(format!(
                    "{package} depends on {dep} (see `cargo tree -p {package} -i {dep}`)"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_check_sees_tauri_where_it_belongs() {
    // Guards the test above against a graph it cannot read: the tray app does show tauri.
    assert!(members().iter().any(|(name, _)| name == "patchbay-app"));
    let deps = dependency_names("patchbay-app");
    assert!(deps.iter().any(|d| d == "tauri"), "{deps:?}");
}
