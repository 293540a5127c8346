#!/usr/bin/env bash
# CI step (issue 13, "Windows, tested on this machine"): cross-builds the CLI (`patchbay`,
# `patchbay-bridge`) for x86_64-pc-windows-gnu with Debian's mingw-w64, which compiles every core
# crate for Windows on the way, then runs the Windows `patchbay.exe` under Debian's wine64 in a
# throwaway prefix and checks: --version; `status` over a catalog given as a Z:\ path, each
# connector in its expected state; a vault round trip through wine's Credential Manager
# (`secret set`, the connector needing it turns Ready, the key is a Credential Manager item, the
# value is in neither the database nor the registry, `secret delete` undoes it); `paths` naming
# %APPDATA% / %LOCALAPPDATA% / %USERPROFILE% locations, the database really there, and the same
# with a HOME set elsewhere; `connect`, the stdio bridge, to the MCP SDK's example server on
# loopback (initialize and tools/list answered through it).
#
# Needs only what scripts/setup.sh installs (gcc-mingw-w64-x86-64, wine64, the Rust target, node
# and tests/node's MCP SDK). Wine needs no display, no D-Bus and no network beyond loopback here:
# console programs only. Exits non-zero on
# the first build failure or, after every check ran, when any check failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"

TARGET=x86_64-pc-windows-gnu
WINE=/usr/lib/wine/wine64 # Debian's loader; not on PATH
WINESERVER=/usr/lib/wine/wineserver
failures=0
step() { printf '\n==> %s\n' "$*"; }
ok() { printf 'ok:   %s\n' "$*"; }
fail() {
  printf 'FAIL: %s\n' "$*"
  failures=$((failures + 1))
}

for tool in x86_64-w64-mingw32-gcc "$WINE" python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "windows: $tool missing; run scripts/setup.sh" >&2; exit 1; }
done
rustup target list --installed | grep -qx "$TARGET" \
  || { echo "windows: Rust target $TARGET missing; run scripts/setup.sh" >&2; exit 1; }

step "cross-build patchbay-cli for $TARGET"
started=$(date +%s)
cargo build --target "$TARGET" -p patchbay-cli --locked
echo "built in $(($(date +%s) - started)) s"
out_dir="${CARGO_TARGET_DIR:-target}/$TARGET/debug"
for exe in patchbay patchbay-bridge; do
  printf '%s.exe: %s bytes\n' "$exe" "$(stat -c %s "$out_dir/$exe.exe")"
done

work=$(mktemp -d)
export WINEPREFIX="$work/prefix"
cleanup() {
  # Only this prefix's wineserver (and the processes it runs) is stopped.
  "$WINESERVER" -k >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# -all: wine's own diagnostics off. mscoree/mshtml disabled: a new prefix would otherwise offer
# to install Mono and Gecko, which needs a display and the network.
export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
# The platform's own directories, not a test's overrides from scripts/test.sh.
unset PATCHBAY_DATA_DIR PATCHBAY_DEFAULT_CATALOG CLAUDE_CONFIG_DIR CLAUDE_SECURESTORAGE_CONFIG_DIR \
  CODEX_HOME MCP_REMOTE_CONFIG_DIR
mkdir -p "$work/bin"
cp "$out_dir/patchbay.exe" "$out_dir/patchbay-bridge.exe" "$work/bin/"

# win ARGS...: runs patchbay.exe; sets $code, $stdout (CR dropped) and $stderr.
win_exe="$work/bin/patchbay.exe"
win() {
  local input="${WIN_STDIN:-}"
  set +e
  printf '%s' "$input" | timeout 120 "$WINE" "$win_exe" "$@" >"$work/stdout" 2>"$work/stderr"
  code=$?
  set -e
  stdout=$(tr -d '\r' <"$work/stdout")
  stderr=$(tr -d '\r' <"$work/stderr")
}
# json_get DOC EXPR: a Python expression over `d` (the parsed DOC), printed.
json_get() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }
expect_eq() { # WHAT ACTUAL EXPECTED
  if [ "$2" = "$3" ]; then ok "$1: $2"; else fail "$1: got '$2', expected '$3'"; fi
}

step "wine $("$WINE" --version 2>/dev/null), prefix $WINEPREFIX"
started=$(date +%s)
"$WINE" wineboot --init >/dev/null 2>&1 || true
"$WINESERVER" -w
echo "prefix created in $(($(date +%s) - started)) s"

step "does the exe load as built?"
win --version
if [ "$code" -eq 53 ] && [ -z "$stdout" ]; then
  # What is missing, said by wine's loader itself.
  missing=$(WINEDEBUG=err+module "$WINE" "$win_exe" --version 2>&1 | tr -d '\r' | grep -m1 -o 'Library [^ ]* (which is needed by [^)]*) not found\|ProcessPrng[^ ]*' || true)
  echo "wine $("$WINE" --version) lacks ProcessPrng in bcryptprimitives.dll, which Rust's std for Windows"
  echo "imports: the exe does not load (exit 53, no output; loader: ${missing:-see WINEDEBUG=err+all})."
  echo "Using the stand-in DLL built from tests/windows/bcryptprimitives.c (forwards to RtlGenRandom)."
  x86_64-w64-mingw32-gcc -shared -O2 -Wall -Werror -o "$work/bin/bcryptprimitives.dll" \
    tests/windows/bcryptprimitives.c -ladvapi32
elif [ "$code" -eq 0 ]; then
  echo "it loads: this wine has ProcessPrng, no stand-in needed"
else
  fail "--version exited $code: $stderr"
fi

step "patchbay --version"
started=$(date +%s%N)
win --version
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
expect_eq "--version (exit $code, $((($(date +%s%N) - started) / 1000000)) ms)" "$stdout" "patchbay $version"

step "patchbay-bridge.exe loads too"
win_exe="$work/bin/patchbay-bridge.exe" win
win_exe="$work/bin/patchbay.exe"
if [ "$code" -eq 2 ] && grep -q 'not by hand' <<<"$stderr"; then
  ok "patchbay-bridge.exe ran and refused to run by hand (exit 2)"
else
  fail "patchbay-bridge.exe: exit $code, stderr: $stderr"
fi

step "patchbay status over a catalog given as a Z:\\ path"
cat >"$work/catalog.json" <<'EOF'
{
  "mcpServers": {
    "local": { "type": "stdio", "command": "cmd", "args": ["/c", "exit"] },
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": { "Authorization": "Bearer ${PB_WINE_TOKEN}" }
    },
    "notion": { "type": "streamable-http", "url": "https://mcp.notion.com/mcp" },
    "strad": {
      "type": "streamable-http",
      "url": "https://secrets.example.com/mcp",
      "unavailable": "No OAuth discovery."
    }
  }
}
EOF
catalog="Z:$(tr / '\\' <<<"$work/catalog.json")"
states() { json_get "$stdout" '",".join(c["name"]+"="+c["state"] for c in sorted(d["connectors"], key=lambda c: c["name"]))'; }
win --catalog "$catalog" status --json
expect_eq "status exit code (attention needed)" "$code" 1
expect_eq "catalog source" "$(json_get "$stdout" 'd["catalog"]["sources"][0]["path"]')" "$catalog"
expect_eq "keychain reachable" "$(json_get "$stdout" 'd["secret_store"]["reachable"]')" True
expect_eq "states" "$(states)" \
  "github=missing_configuration,local=no_credential_required,notion=needs_authorization,strad=unavailable"
win --catalog "$catalog" status
if [ "$code" -eq 1 ] && grep -q 'Missing PB_WINE_TOKEN' <<<"$stdout" && grep -q '3 need attention' <<<"$stdout"; then
  ok "status table: 3 need attention, says what github is missing"
else
  fail "status table (exit $code): $stdout $stderr"
fi

step "vault round trip through wine's Credential Manager"
value="pb-wine-$RANDOM-$RANDOM-value"
WIN_STDIN="$value"$'\n' win secret set PB_WINE_TOKEN
expect_eq "secret set" "$stdout (exit $code)" "Stored PB_WINE_TOKEN in the vault. (exit 0)"
[ "$code" -eq 0 ] || echo "$stderr"
"$WINESERVER" -w # the registry is written back when the server goes idle
if grep -q 'Credential Manager\\\\Generic: vault-master-key.Patchbay\]' "$WINEPREFIX/user.reg"; then
  ok "the vault key is the Credential Manager item vault-master-key.Patchbay (HKCU\\Software\\Wine\\Credential Manager)"
else
  fail "no Credential Manager item vault-master-key.Patchbay in $WINEPREFIX/user.reg"
fi
if grep -rqa -- "$value" "$WINEPREFIX"; then
  fail "the secret's value is in plain text in the prefix: $(grep -rla -- "$value" "$WINEPREFIX")"
else
  ok "the value is nowhere in the prefix in plain text (database, registry)"
fi
win secret list --json
expect_eq "secret list" "$(json_get "$stdout" '",".join(s["name"] for s in d)')" PB_WINE_TOKEN
win --catalog "$catalog" status --json
expect_eq "states after secret set (a new process unseals with the key)" "$(states)" \
  "github=ready,local=no_credential_required,notion=needs_authorization,strad=unavailable"
win secret delete PB_WINE_TOKEN
expect_eq "secret delete" "$code" 0
win --catalog "$catalog" status --json
expect_eq "github after secret delete" "$(json_get "$stdout" '[c["state"] for c in d["connectors"] if c["name"]=="github"][0]')" \
  missing_configuration

step "patchbay paths: the platform's directories"
appdata=$("$WINE" cmd /c 'echo %APPDATA%' 2>/dev/null | tr -d '\r')
localappdata=$("$WINE" cmd /c 'echo %LOCALAPPDATA%' 2>/dev/null | tr -d '\r')
profile=$("$WINE" cmd /c 'echo %USERPROFILE%' 2>/dev/null | tr -d '\r')
case "$appdata" in
  'C:\users\'*'\AppData\Roaming') ok "%APPDATA%: $appdata" ;;
  *) fail "%APPDATA% is '$appdata', not C:\users\<user>\AppData\Roaming" ;;
esac
win paths --json
expect_eq "paths exit code" "$code" 0
p() { json_get "$stdout" "d$1"; }
expect_eq "data dir" "$(p '["patchbay"]["data_dir"]')" "$appdata\\patchbay\\Patchbay\\data"
expect_eq "database" "$(p '["patchbay"]["database"]')" "$appdata\\patchbay\\Patchbay\\data\\patchbay.sqlite3"
expect_eq "user catalog" "$(p '["patchbay"]["user_catalog"]')" "$appdata\\patchbay\\Patchbay\\config\\mcp.json"
expect_eq "keychain" "$(p '["patchbay"]["keychain"]["item"]')" 'generic credential "vault-master-key.Patchbay"'
expect_eq "Claude Desktop" "$(p '["clients"]["claude_desktop"]')" "$appdata\\Claude\\claude_desktop_config.json"
expect_eq "VS Code" "$(p '["clients"]["vscode"]')" "$appdata\\Code\\User\\mcp.json"
expect_eq "Cursor" "$(p '["clients"]["cursor"]')" "$profile\\.cursor\\mcp.json"
expect_eq "Claude Code" "$(p '["runtimes"]["claude_code"]["config"]')" "$profile\\.claude.json"
expect_eq "Claude Code logs" "$(p '["runtimes"]["claude_code"]["logs"]')" "$localappdata\\claude-cli-nodejs\\Cache"
expect_eq "Codex" "$(p '["runtimes"]["codex"]["config"]')" "$profile\\.codex\\config.toml"
default_catalog=$(p '["patchbay"]["default_catalog"]')
case "$default_catalog" in
  '\\?\'*) fail "default catalog shown as a verbatim path: $default_catalog" ;;
  *'\catalog\mcp.json') ok "default catalog (the source tree's, through Z:): $default_catalog" ;;
  *) fail "default catalog: $default_catalog" ;;
esac
# The database `secret set` created is the one printed (C:\ is the prefix's drive_c).
database=$(p '["patchbay"]["database"]')
unix_db="$WINEPREFIX/drive_c/$(tr '\\' / <<<"${database#C:\\}")"
if [ -f "$unix_db" ]; then ok "the database is where paths says: $unix_db"; else fail "no database at $unix_db"; fi
win paths
if grep -qF "$appdata\\patchbay\\Patchbay\\config\\mcp.json" <<<"$stdout"; then
  ok "paths table names the user catalog under %APPDATA%"
else
  fail "paths table: $stdout"
fi

# A HOME of its own (Git Bash, MSYS, a user's): the runtimes and clients still live under
# %USERPROFILE%, where Node's os.homedir() (Claude Code, the clients) looks. Wine passes no Unix
# HOME on, so cmd sets one for the exe.
set +e
"$WINE" cmd /c "set HOME=C:\\elsewhere&& Z:$(tr / '\\' <<<"$win_exe") paths --json" >"$work/stdout" 2>"$work/stderr"
code=$?
set -e
stdout=$(tr -d '\r' <"$work/stdout")
expect_eq "paths with HOME set: exit code" "$code" 0
expect_eq "Cursor, with HOME set" "$(p '["clients"]["cursor"]')" "$profile\\.cursor\\mcp.json"
expect_eq "Claude Code, with HOME set" "$(p '["runtimes"]["claude_code"]["config"]')" "$profile\\.claude.json"

step "patchbay connect: the stdio bridge to the MCP SDK's example server on loopback"
# On Windows `connect` bridges in its own process (the lean patchbay-bridge it execs into on Unix
# takes its hand-over through /dev/fd).
if [ -f tests/node/node_modules/@modelcontextprotocol/sdk/package.json ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  (cd tests/node && MCP_PORT=$port exec timeout 300 node sdk-example-server.mjs simpleStreamableHttp.js) \
    >"$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  printf '{"mcpServers": {"demo": {"type": "streamable-http", "url": "http://127.0.0.1:%s/mcp"}}}' "$port" \
    >"$work/connect.json"
  WIN_STDIN=$(printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ci","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
  WIN_STDIN=$WIN_STDIN$'\n' win connect --catalog "Z:$(tr / '\\' <<<"$work/connect.json")" demo
  kill "$server" 2>/dev/null || true
  expect_eq "connect exit code" "$code" 0
  answers=$(python3 -c '
import json, sys
by_id = {m.get("id"): m for m in map(json.loads, filter(None, sys.stdin.read().splitlines()))}
print(by_id[1]["result"]["serverInfo"]["name"], ",".join(sorted(t["name"] for t in by_id[2]["result"]["tools"])))
' <<<"$stdout" 2>&1 || true)
  case "$answers" in
    *' '*greet*) ok "initialize and tools/list answered through the bridge: $answers" ;;
    *) fail "connect answered: ${stdout:0:400} (stderr: ${stderr:0:400})" ;;
  esac
else
  fail "tests/node has no MCP SDK (run scripts/setup.sh)"
fi

step "patchbay autostart: the login item in the user's Run key"
# The CLI's login item starts patchbay-app beside it: here a copy of the CLI under that name, in
# a directory with a space, as under C:\Users\Ann Lee\. The stand-in DLL, when one was needed,
# goes along (a DLL is looked for beside the exe).
app_dir="$work/Patch bay"
mkdir -p "$app_dir"
cp "$work/bin/patchbay.exe" "$app_dir/patchbay.exe"
cp "$work/bin/patchbay.exe" "$app_dir/patchbay-app.exe"
if [ -f "$work/bin/bcryptprimitives.dll" ]; then cp "$work/bin/bcryptprimitives.dll" "$app_dir/"; fi
win_exe="$app_dir/patchbay.exe"
run_key='HKCU\Software\Microsoft\Windows\CurrentVersion\Run'
approved_key='HKCU\Software\Microsoft\Windows\CurrentVersion\Explorer\StartupApproved\Run'
# reg_value KEY: the data of the value Patchbay under KEY, empty when there is none.
reg_value() {
  "$WINE" reg query "$1" /v Patchbay 2>/dev/null | tr -d '\r' |
    sed -n 's/^ *Patchbay  *REG_[A-Z_]*  *//p' || true
}
win autostart status --json
expect_eq "off by default" "$(json_get "$stdout" 'd["enabled"]') $(json_get "$stdout" 'd["entry"]')" \
  "False HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\Patchbay"
win autostart on
expect_eq "autostart on: exit code" "$code" 0
expect_eq "the Run value: patchbay-app beside the CLI, quoted" "$(reg_value "$run_key")" \
  "\"Z:$(tr / '\\' <<<"$app_dir")\\patchbay-app.exe\" --background"
win autostart status --json
expect_eq "on" "$(json_get "$stdout" 'd["enabled"]')" True
# Task Manager's Startup tab switches an item off in StartupApproved (first byte 3).
"$WINE" reg add "$approved_key" /v Patchbay /t REG_BINARY /d 030000000000000000000000 /f >/dev/null 2>&1
win autostart status
if [ "$code" -eq 0 ] && grep -q 'off (.*is turned off where it is kept)' <<<"$stdout"; then
  ok "switched off in Task Manager reads as off: $stdout"
else
  fail "after Task Manager's switch (exit $code): $stdout $stderr"
fi
win autostart on
expect_eq "on again: approved again" "$(reg_value "$approved_key")" 020000000000000000000000
win autostart status --json
expect_eq "on again" "$(json_get "$stdout" 'd["enabled"]')" True
win autostart off
expect_eq "autostart off: exit code" "$code" 0
expect_eq "off: the Run value and its mark are gone" "[$(reg_value "$run_key")][$(reg_value "$approved_key")]" "[][]"
win autostart status --json
expect_eq "off" "$(json_get "$stdout" 'd["enabled"]')" False
win_exe="$work/bin/patchbay.exe"

step "windows: $failures failed"
[ "$failures" -eq 0 ]
