//! A first start, as a new user has it (issue 11): a clean home with the shipped catalog shows
//! nothing in use and needs no attention; a home whose clients configure servers lists each
//! once with where it was found; `gallery`, `enable` and `disable` move connectors in and out.
//! The CLI runs as a process with HOME (and every client's directory) inside the sandbox.

use patchbay_e2e::secret_scan::SecretScan;
use patchbay_e2e::{clients_fixture_home, copy_dir, Sandbox};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn run_in(sandbox: &Sandbox, home: &Path, args: &[&str]) -> Output {
    sandbox
        .command()
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("MCP_REMOTE_CONFIG_DIR")
        .current_dir(home)
        .args(args)
        .output()
        .expect("run patchbay")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_first_start_in_a_clean_home_has_nothing_in_use() {
    let sandbox = Sandbox::new(false);
    let home = sandbox.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = run_in(&sandbox, &home, &["status", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&out);
    assert_eq!(report["need_attention"], 0);
    assert_eq!(report["connectors"], Value::Array(vec![]), "{report:#}");
    assert!(report["gallery"].as_array().unwrap().len() >= 20);

    let table = run_in(&sandbox, &home, &["status"]);
    assert!(
        String::from_utf8_lossy(&table.stdout).starts_with("No connectors in use"),
        "{}",
        String::from_utf8_lossy(&table.stdout)
    );
    let gallery = run_in(&sandbox, &home, &["gallery", "notion"]);
    let text = String::from_utf8_lossy(&gallery.stdout);
    assert!(text.contains("notion  Notion"), "{text}");
    assert!(!text.contains("asana"), "{text}");
    SecretScan::new(sandbox.path())
        .none_issued("a first start authorizes nothing: the modes of what it created")
        .assert_clean();
}

#[test]
fn the_servers_the_clients_configure_are_listed_once_with_where_they_were_found() {
    let sandbox = Sandbox::new(false);
    let home = sandbox.path().join("home");
    copy_dir(&clients_fixture_home(), &home);
    let report = json(&run_in(&sandbox, &home, &["status", "--json"]));
    let rows = report["connectors"].as_array().unwrap();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {report:#}"))
    };
    let found: Vec<&str> = row("github")["found_in"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["display_name"].as_str().unwrap())
        .collect();
    assert!(
        found.contains(&"Cursor") && found.contains(&"Claude Code"),
        "{found:?}"
    );
    assert_eq!(row("python-tools")["origin"], "client");
    // Each server once, whatever the number of clients that configure it.
    let mut names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before);
    assert!(rows.iter().all(|r| r["name"] != "asana"));
    let text = String::from_utf8_lossy(&run_in(&sandbox, &home, &["status", "--json"]).stdout)
        .into_owned();
    assert!(!text.contains("ghp_fixtureLiteralToken"));

    // Add one from the gallery, then take one out of use.
    let out = run_in(&sandbox, &home, &["enable", "asana"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_in(&sandbox, &home, &["disable", "github"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&run_in(&sandbox, &home, &["status", "--json"]));
    let names: Vec<&str> = report["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"asana") && !names.contains(&"github"),
        "{names:?}"
    );
    let out = run_in(&sandbox, &home, &["enable", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no connector named \"nope\""));
    SecretScan::new(sandbox.path())
        .none_issued("a first start authorizes nothing: the modes of what it created")
        .assert_clean();
}
