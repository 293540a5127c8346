#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with seeds: the small hand-picked inputs in fuzz/seeds/<target>/
# (taken from the unit tests) and the test fixtures of the repository (catalogs, every client's
# config, mcp-remote's files), each prefixed with the selector byte its target reads first.
# Safe to run again: files are named by content and never removed (the corpus grows as it fuzzes).
set -euo pipefail
cd "$(dirname "$0")"
root=..
fixtures=$root/src-tauri/crates/runtimes/tests/fixtures/clients

# add TARGET [SELECTOR_BYTE_OCTAL] < input
add() {
  local target=$1 selector=${2:-} dir=corpus/$1 tmp
  mkdir -p "$dir"
  tmp=$(mktemp)
  { [ -n "$selector" ] && printf "\\$selector"; cat; } > "$tmp"
  mv "$tmp" "$dir/seed-$(sha1sum < "$tmp" | cut -c1-16)" 2>/dev/null || true
  [ -f "$tmp" ] && rm -f "$tmp"
  return 0
}

for dir in seeds/*/; do
  target=$(basename "$dir")
  for f in "$dir"*; do add "$target" < "$f"; done
done

for f in $root/catalog/mcp.json $root/tests/fixtures/*.json; do add catalog < "$f"; done

# client_configs: the selector is the client's index in Client::ALL (0 Claude Code, 1 Codex,
# 2 Claude Desktop, 3 Cursor, 4 VS Code, 5 Windsurf, 6 Gemini CLI); 7 Codex config.toml and
# JSONC blanking; octal 010 (8) Claude Code's .claude.json read from a file.
add client_configs 000 < "$fixtures/home/.claude.json"
add client_configs 010 < "$fixtures/home/.claude.json"
add client_configs 000 < "$fixtures/project/.mcp.json"
for f in "$fixtures"/*/.codex/config.toml; do add client_configs 001 < "$f"; add client_configs 007 < "$f"; done
add client_configs 002 < "$fixtures/home/.config/Claude/claude_desktop_config.json"
for f in "$fixtures"/*/.cursor/mcp.json; do add client_configs 003 < "$f"; done
for f in "$fixtures/home/.config/Code/User/mcp.json" "$fixtures/project/.vscode/mcp.json"; do
  add client_configs 004 < "$f"
  add client_configs 007 < "$f"
done
add client_configs 005 < "$fixtures/home/.codeium/windsurf/mcp_config.json"
for f in "$fixtures"/*/.gemini/settings.json; do add client_configs 006 < "$f"; done

# runtime_credentials, selector 3: mcp-remote's tokens file, NUL, its client_info file.
for tokens in "$fixtures"/mcp-auth/mcp-remote-v1/*_tokens.json; do
  client=${tokens%_tokens.json}_client_info.json
  { cat "$tokens"; if [ -f "$client" ]; then printf '\0'; cat "$client"; fi; } | add runtime_credentials 003
done

echo "fuzz corpus seeded: $(find corpus -type f | wc -l) files in $(ls corpus | wc -l) targets"
