//! Servers from a project's `.mcp.json`: every project Claude Code lists in `.claude.json` is
//! read when no project is named, and one broken file hides nothing else.

use patchbay_runtimes::config::{read_claude_servers, RuntimePaths, ServerScope};

#[test]
fn every_known_projects_mcp_json_is_read_and_a_broken_one_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let paths = RuntimePaths::resolve(&home, &|_| None);
    let good = dir.path().join("good");
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(&good).unwrap();
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::create_dir_all(paths.claude_json.parent().unwrap()).unwrap();
    std::fs::write(
        &paths.claude_json,
        serde_json::json!({
            "mcpServers": { "user-one": { "type": "http", "url": "https://u.example/mcp" } },
            "projects": {
                good.to_str().unwrap(): {},
                broken.to_str().unwrap(): {},
                dir.path().join("gone").to_str().unwrap(): {}
            }
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        good.join(".mcp.json"),
        r#"{"mcpServers":{"fx":{"type":"http","url":"http://localhost:3100/mcp"}}}"#,
    )
    .unwrap();
    std::fs::write(broken.join(".mcp.json"), "{ not json").unwrap();

    let servers = read_claude_servers(&paths, None, &|_| None).unwrap();
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["user-one", "fx"]);
    let fx = &servers[1];
    assert_eq!(fx.scope, ServerScope::McpJson(good.join(".mcp.json")));
    // The key is the same function as for any Claude Code server (the reference's example).
    assert_eq!(
        fx.credential_key.as_ref().unwrap().as_str(),
        "fx|528e1818a7ba21cf"
    );

    // Naming a project reads that one only, and its broken file is an error there.
    let err = read_claude_servers(&paths, Some(&broken), &|_| None).unwrap_err();
    assert!(err.to_string().contains(".mcp.json"), "{err}");
}
