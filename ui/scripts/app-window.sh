#!/usr/bin/env bash
# The Connectors window in the real app (WebKitGTK) under Xvfb, driven by the keyboard with
# xdotool, in throwaway homes:
#   1. a fresh install (shipped catalog, no client configured): captures docs/app-window.png;
#   2. a home whose Cursor config has a server no catalog has: the gallery's Add on Linear
#      (enable_connector), "Manage with Patchbay" on the Cursor server (manage_connector) and
#      "Remove from my connectors" on Linear (disable_connector) go through the app's real IPC,
#      checked in the user catalog file after each step;
#   3. (issue 12) a home whose Cursor reaches Linear through `npx mcp-remote` and that has VS Code:
#      "Switch Cursor to Patchbay" (switch_client_entry), "Use in another client" through the
#      gateway: Add to VS Code (add_to_client, a gateway client minted), and the Gateway clients'
#      Revoke, Confirm revoke (revoke_gateway_client), each checked in the file it writes.
# Needs a built app (cargo build -p patchbay-app --locked, after npm --prefix ui run build),
# xvfb-run, xdotool, ImageMagick's import, dbus-run-session and gnome-keyring.
# Usage: bash ui/scripts/app-window.sh [--no-capture]
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
APP=${PATCHBAY_APP:-$REPO/target/debug/patchbay-app}
CAPTURE=1
[ "${1:-}" = "--no-capture" ] && CAPTURE=0

if [ -z "${PATCHBAY_APP_WINDOW_INNER:-}" ]; then
  export PATCHBAY_APP_WINDOW_INNER=1
  exec keyctl session - dbus-run-session -- sh -c \
    'printf ci | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec xvfb-run -a -s "-screen 0 1100x800x24" bash "$0" "$@"' \
    "$0" "$@"
fi

WORK=$(mktemp -d /tmp/pbXXXX)
trap 'rm -rf "$WORK"' EXIT

fail() { echo "app-window: $*" >&2; exit 1; }

# Starts the app in home $1; sets APP_PID and WIN.
start_app() {
  local home=$1
  mkdir -p "$home/run" && chmod 700 "$home/run"
  HOME=$home XDG_CONFIG_HOME=$home/.config XDG_DATA_HOME=$home/.local/share \
    XDG_CACHE_HOME=$home/.cache XDG_RUNTIME_DIR=$home/run \
    PATCHBAY_DEFAULT_CATALOG=$REPO/catalog/mcp.json \
    "$APP" --show >"$home/app.log" 2>&1 &
  APP_PID=$!
  WIN=
  for _ in $(seq 1 120); do
    WIN=$(xdotool search --name "Connectors" 2>/dev/null | head -1 || true)
    [ -n "$WIN" ] && break
    sleep 0.5
  done
  [ -n "$WIN" ] || fail "the Connectors window did not open (log: $(tail -5 "$home/app.log"))"
  # the first status render
  sleep 3
  xdotool windowactivate --sync "$WIN" >/dev/null 2>&1 || true
}

stop_app() {
  kill "$APP_PID" 2>/dev/null || true
  wait "$APP_PID" 2>/dev/null || true
}

# Polls the JSON file $1 until the Python expression $2 over it (`c`) holds, for up to 10 s.
expect_catalog() {
  local file=$1 cond=$2 what=$3
  for _ in $(seq 1 50); do
    if [ -f "$file" ] && python3 -c "import json,sys; c=json.load(open('$file')); sys.exit(0 if ($cond) else 1)" 2>/dev/null; then
      echo "ok: $what"
      return 0
    fi
    sleep 0.2
  done
  fail "$what: $file says $(cat "$file" 2>/dev/null || echo nothing)"
}

key() { xdotool key --delay 120 "$@"; sleep 0.4; }

# 1. fresh install
start_app "$WORK/me"
if [ "$CAPTURE" = 1 ]; then
  xdotool mousemove 1090 790
  import -window "$WIN" "$REPO/docs/app-window.png"
  echo "wrote docs/app-window.png"
fi
stop_app

# 2. a Cursor server, and the gallery
mkdir -p "$WORK/found/.cursor"
echo '{"mcpServers": {"team-tracker": {"url": "https://tracker.internal.example/mcp"}}}' >"$WORK/found/.cursor/mcp.json"
CATALOG=$WORK/found/.config/patchbay/mcp.json
start_app "$WORK/found"
# Tab: the header's Add connector; Enter opens the gallery with the search in focus
key Tab Return
xdotool type --delay 60 linear
# Tab: Linear's Add; Enter: enable_connector, and Linear's Authorize has the focus
key Tab Return
expect_catalog "$CATALOG" "c['linear'].get('enabled') is True" "Add wrote \"enabled\": true for linear"
# Down: team-tracker's row; Tab Tab Tab: its "Use in another client" (Cursor is here), its
# Authorize, then Manage with Patchbay
key Down Tab Tab Tab Return
expect_catalog "$CATALOG" "c['team-tracker']['url'] == 'https://tracker.internal.example/mcp'" "Manage with Patchbay copied team-tracker"
# Up: Linear's row; Tab: its "Use in another client", its notice's close, Authorize, Add to Claude
# Code, Add to Codex, Test, Remove
key Up Tab Tab Tab Tab Tab Tab Tab Return
expect_catalog "$CATALOG" "c['linear'].get('enabled') is False" "Remove wrote \"enabled\": false for linear"
stop_app

# 3. other clients (issue 12): Cursor runs Linear through mcp-remote; VS Code is installed
H=$WORK/clients
mkdir -p "$H/.cursor" "$H/.config/Code/User"
echo '{"mcpServers": {"linear": {"command": "npx", "args": ["-y", "mcp-remote", "https://mcp.linear.app/mcp"]}}}' >"$H/.cursor/mcp.json"
start_app "$H"
# Tab Tab: Linear's row (the only one); then "Use in another client", Authorize, Add to Claude
# Code, Add to Codex, Switch Cursor to Patchbay
key Tab Tab Tab Tab Tab Tab Tab Return
expect_catalog "$H/.cursor/mcp.json" "c['mcpServers']['linear']['args'][-2:] == ['connect', 'linear'] and 'mcp-remote' not in json.dumps(c)" "Switch made Cursor's linear run patchbay connect"
[ -f "$H/.cursor/mcp.json.patchbay-backup" ] || fail "Switch kept no backup of Cursor's file"
# The row has the focus: Tab to "Use in another client", open it; Tab to "Connect through", Right:
# the gateway; Tab Tab: Add to Cursor, Add to VS Code
key Tab Return Tab Right Tab Tab Return
expect_catalog "$H/.config/Code/User/mcp.json" "c['servers']['linear']['url'] == 'http://127.0.0.1:3119/mcp/linear' and c['servers']['linear']['headers']['Authorization'].startswith('Bearer pbgw_')" "Add to VS Code through the gateway wrote its URL and secret header"
GW=$H/.local/share/patchbay/gateway-clients.json
expect_catalog "$GW" "[x['label'] for x in c['clients']] == ['vscode']" "Add minted the gateway client vscode"
# From Add to VS Code: the result's close, Authorize, Add to Claude Code, Add to Codex, Test, then
# the Gateway clients' Revoke; Return twice: Revoke, Confirm revoke
key Tab Tab Tab Tab Tab Tab Return
key Return
expect_catalog "$GW" "c['clients'] == []" "Revoke, Confirm revoke removed the gateway client vscode"
stop_app
echo "app-window: passed"
