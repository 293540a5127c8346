#!/usr/bin/env bash
# docs/tray-menu.png: the tray menu as a panel renders it. Runs the tray end-to-end test
# (tests/tests/tray_panel.rs: the real app and a stand-in StatusNotifier panel in a private D-Bus
# session) with PATCHBAY_TRAY_MENU_OUT set, then draws the dbusmenu layout and icon it read
# (tests/support/tray-menu.py, ImageMagick). Needs what scripts/test.sh needs (a built app, Xvfb,
# gnome-keyring, python3-dbus).
# Usage: bash tests/support/tray-menu-screenshot.sh [OUT.png]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$REPO/docs/tray-menu.png}

if [ -z "${PATCHBAY_TRAY_SHOT_INNER:-}" ]; then
  export PATCHBAY_TRAY_SHOT_INNER=1
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/data" "$tmp/config" "$tmp/cache" "$tmp/runtime" && chmod 700 "$tmp/runtime"
  export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" XDG_CACHE_HOME="$tmp/cache"
  export XDG_RUNTIME_DIR="$tmp/runtime" PATCHBAY_TEST_KEYCHAIN=1 PATCHBAY_TRAY_MENU_OUT="$tmp/menu"
  export PATH="$HOME/.cargo/bin:$PATH"
  keyctl session - dbus-run-session -- sh -c \
    'printf ci | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec xvfb-run -a bash "$0" "$1"' \
    "$0" "$OUT"
  exit $?
fi

cd "$REPO"
cargo test -p patchbay-e2e --locked --test tray_panel -- a_panel_sees_the_badge_and_menu
python3 tests/support/tray-menu.py "$PATCHBAY_TRAY_MENU_OUT" "$OUT"
