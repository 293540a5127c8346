//! The MCP client configs Patchbay reads: Claude Code (`.claude.json`, `.mcp.json`), Codex
//! (`config.toml`), Claude Desktop, Cursor, VS Code (JSONC), Windsurf and Gemini CLI, and what
//! is derived from each server found (its AIR catalog form, its mcp-remote options, its
//! identity). The first byte picks the client.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_runtimes::clients::air::to_air;
use patchbay_runtimes::clients::jsonc::blank_comments_and_trailing_commas;
use patchbay_runtimes::clients::{formats, merge, Client, ClientScope, ConfigFile};
use patchbay_runtimes::config::{
    claude_project_dirs, parse_codex_config, read_claude_json, read_mcp_json,
};
use std::path::PathBuf;

fn resolve(name: &str) -> Option<String> {
    (name.len() % 2 == 0).then(|| format!("v-{name}"))
}

fuzz_target!(|data: &[u8]| {
    let Some((selector, rest)) = patchbay_fuzz::split_selector(data) else {
        return;
    };
    let text = patchbay_fuzz::text(rest);
    match selector % 9 {
        i @ 0..=6 => {
            let client = Client::ALL[i as usize];
            let file = ConfigFile {
                client,
                scope: ClientScope::User,
                path: PathBuf::from("/fuzz/config"),
            };
            if let Ok(servers) = formats::parse(&file, &text) {
                for server in &servers {
                    let air = to_air(server);
                    let _ = server.mcp_remote_options();
                    let _ = server.identity();
                    let _ = serde_json::to_string(&air.entry);
                }
                let _ = merge(servers);
            }
        }
        7 => {
            let _ = parse_codex_config(&text, &PathBuf::from("/fuzz/config.toml"));
            // JSONC blanking keeps every byte's position (errors point into the file).
            let blanked = blank_comments_and_trailing_commas(&text);
            assert_eq!(blanked.len(), text.len());
            for (a, b) in blanked.bytes().zip(text.bytes()) {
                assert_eq!(a == b'\n', b == b'\n');
            }
        }
        _ => {
            let path = patchbay_fuzz::scratch_file("claude-home/.claude.json", rest);
            let _ = read_claude_json(&path, &resolve);
            let _ = read_mcp_json(&path, &resolve);
            let _ = claude_project_dirs(&path);
        }
    }
});
