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
    for command in ["status", "offered", "secret", "unclaimed", "paths"] {
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
