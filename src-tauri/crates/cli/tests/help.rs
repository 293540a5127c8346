//! The binary's own surface: help lists every command, bad usage exits with 2.

use std::process::Command;

#[test]
fn help_lists_every_command() {
    let out = Command::new(env!("CARGO_BIN_EXE_patchbay"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for command in [
        "status",
        "offered",
        "secret",
        "unclaimed",
        "authorize",
        "paths",
        "autostart",
    ] {
        assert!(text.contains(command), "{command} missing from:\n{text}");
    }
}

#[test]
fn an_unknown_command_exits_with_two() {
    let out = Command::new(env!("CARGO_BIN_EXE_patchbay"))
        .arg("frobnicate")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn authorize_refuses_a_server_the_catalog_does_not_have() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.json");
    std::fs::write(
        &catalog,
        r#"{"mcpServers":{"local":{"type":"stdio","command":"true"}}}"#,
    )
    .unwrap();
    for (name, expected) in [
        ("elsewhere", "only catalog servers can be authorized"),
        ("local", "local (stdio) server"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_patchbay"))
            .arg("--data-dir")
            .arg(dir.path())
            .arg("--catalog")
            .arg(&catalog)
            .args(["authorize", name, "--no-browser"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{err}");
    }
}
