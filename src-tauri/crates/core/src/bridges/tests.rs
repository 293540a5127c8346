//! The unit tests of `bridges.rs`, kept apart so the module reads as what it does.

use super::*;

#[test]
fn codex_config_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "# mine\nmodel = \"o4\"\n\n[mcp_servers.local]\ncommand = \"x\"\n",
    )
    .unwrap();
    assert_eq!(
        add_codex_server(&config, "notion", "https://mcp.notion.com/mcp").unwrap(),
        Added::Added
    );
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.starts_with("# mine\nmodel = \"o4\"\n"), "{text}");
    assert!(
        text.contains("[mcp_servers.local]\ncommand = \"x\""),
        "{text}"
    );
    assert!(
        text.contains("[mcp_servers.notion]\nurl = \"https://mcp.notion.com/mcp\""),
        "{text}"
    );
    let parsed = patchbay_runtimes::config::parse_codex_config(&text, &config).unwrap();
    assert_eq!(parsed.servers.len(), 1);
    assert_eq!(
        add_codex_server(&config, "notion", "https://mcp.notion.com/mcp").unwrap(),
        Added::AlreadyPresent
    );
    assert!(add_codex_server(&config, "notion", "https://other/mcp").is_err());
    // A missing file is created.
    let fresh = dir.path().join("new/config.toml");
    add_codex_server(&fresh, "n", "https://a/mcp").unwrap();
    assert!(std::fs::read_to_string(&fresh)
        .unwrap()
        .contains("[mcp_servers.n]"));
}

/// Keys we do not know (top-level, nested, arrays of tables, inline tables) stay as they
/// were, the file keeps its mode, and nothing is left beside it but our lock file.
#[test]
fn codex_config_write_is_atomic_and_keeps_unknown_keys_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let original = "# top\nmodel = \"o4\" # why\nfuture_key = { a = 1, b = [2, 3] }\n\n\
                    [profiles.work]\nmodel = \"x\"\n\n[[hooks.pre]]\ncmd = \"echo\"\n\n\
                    [mcp_servers.local]\ncommand = \"x\"\nunknown_server_key = true\n";
    std::fs::write(&config, original).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    add_codex_server(&config, "notion", "https://mcp.notion.com/mcp").unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.starts_with(original),
        "everything before is kept byte for byte:\n{text}"
    );
    assert!(text.ends_with("[mcp_servers.notion]\nurl = \"https://mcp.notion.com/mcp\"\n"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // No temp file, and no lock file: it goes with the lock.
    assert_eq!(names, ["config.toml"]);
}

/// A write that fails half-way leaves `config.toml` as it was, and no temp file: the edit
/// runs in a child (this test binary again) under a file-size limit (`ulimit -f`, SIGXFSZ
/// ignored), so the temp file's write fails with EFBIG after the first kilobytes. (A limit on
/// this process would hit every test running beside it; a read-only directory stops nothing
/// when the tests run as root, as CI's do.)
#[cfg(unix)]
#[test]
fn codex_config_write_failing_half_way_leaves_the_original() {
    const CHILD: &str = "PATCHBAY_TEST_CODEX_CONFIG_CHILD";
    const NAME: &str = "bridges::tests::codex_config_write_failing_half_way_leaves_the_original";
    if let Some(config) = std::env::var_os(CHILD) {
        let err = add_codex_server(
            std::path::Path::new(&config),
            "notion",
            "https://mcp.notion.com/mcp",
        )
        .expect_err("the write must fail under the file-size limit");
        println!("child error: {err}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    // Well over the limit (4 blocks: 2 KiB in dash, 4 KiB in bash).
    let original = format!(
        "# mine\n{}[mcp_servers.local]\ncommand = \"x\"\nunknown = [1, 2]\n",
        "# a line of the user's own notes, kept as it is\n".repeat(300)
    );
    std::fs::write(&config, &original).unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 4 && exec \"$0\" \"$@\"")
        .arg(std::env::current_exe().unwrap())
        .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, &config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("child error:"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("cannot write the temp file"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // No temp file, and no lock file: it goes with the lock.
    assert_eq!(names, ["config.toml"]);
}

/// A config that cannot be edited is left exactly as it was.
#[test]
fn codex_config_refused_edits_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    for original in [
        "mcp_servers = 3\n",
        "[broken\n",
        "[mcp_servers.n]\nurl = \"https://b/mcp\"\n",
    ] {
        std::fs::write(&config, original).unwrap();
        let err = add_codex_server(&config, "n", "https://a/mcp").unwrap_err();
        assert!(
            err.to_string().contains("config.toml") || err.to_string().contains("different server"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&config).unwrap(), original);
    }
}
