#!/usr/bin/env bash
# CI step for the Debian package (issue 13): builds it with scripts/package.sh, installs it on
# this machine (apt-get, which runs dpkg and brings in what it depends on), checks what it put
# where, runs the INSTALLED app (/usr/bin/patchbay-app) under Xvfb in a private D-Bus session
# with a throwaway home and XDG dirs, opens patchbay://authorize/pkgcheck with `gio open` and
# sees the link reach the running app, then purges the package and checks nothing is left.
#
# A link's signal: the app logs "a patchbay://authorize link arrived" with the link's connector,
# which only its link handler does, for a link it parsed (it then opens the window at that row and
# asks the user). First with no app running: `gio open` runs the packaged desktop entry's Exec
# with the link, and the app starts with it. Then, the app running, a second link: gio starts a
# second copy, which hands the link to the running app over D-Bus (single instance) and exits. Needs root or sudo (dpkg), and what scripts/setup.sh installs (xvfb,
# dbus, gnome-keyring, keyutils, xdg-utils, desktop-file-utils, libglib2.0-bin for gio).
# Usage: bash scripts/ci/package.sh [PATH.deb]   (given a .deb, skips the build)
# Exits non-zero, saying what failed, on any failure.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"

fail() { echo "package check: FAILED: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
now_ms() { date +%s%3N; }

if [ -z "${PATCHBAY_PACKAGE_INNER:-}" ]; then
  if [ -n "${1:-}" ]; then
    deb=$(realpath "$1")
  else
    started=$(date +%s)
    deb=$(bash "$REPO/scripts/package.sh" | tail -n 1)
    echo "package.sh took $(( $(date +%s) - started )) s"
  fi
  [ -f "$deb" ] || fail "no package at '$deb'"
  # A private session bus (the single-instance forward and the keychain live on it, so no other
  # Patchbay on the machine can answer) with an unlocked throwaway gnome-keyring, and a display.
  export PATCHBAY_PACKAGE_INNER=1
  display=()
  [ -n "${DISPLAY:-}" ] || display=(xvfb-run -a)
  exec keyctl session - dbus-run-session -- sh -c \
    'printf ci | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec "$@"' \
    sh "${display[@]}" bash "$0" "$deb"
fi

deb=$1
WORK=$(mktemp -d /tmp/pbpkgXXXX)
APP_PID=
INSTALLED=
# On any exit: stop the app, and purge a package this run installed and did not purge.
cleanup() {
  [ -n "$APP_PID" ] && kill "$APP_PID" 2>/dev/null
  if [ -n "$INSTALLED" ]; then
    echo "package check: purging $INSTALLED after the failure" >&2
    as_root dpkg --purge "$INSTALLED" >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

pkg=$(dpkg-deb -f "$deb" Package)
version=$(dpkg-deb -f "$deb" Version)
echo "package: $deb ($pkg $version, $(du -h "$deb" | cut -f1), installed size $(dpkg-deb -f "$deb" Installed-Size) KiB)"

# --- install -------------------------------------------------------------------------------
if dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
  echo "note: $pkg is already installed; purging it first"
  as_root dpkg --purge "$pkg" >/dev/null
fi
for f in /usr/bin/patchbay-app /usr/bin/patchbay /usr/bin/patchbay-bridge; do
  if [ -e "$f" ]; then
    fail "$f exists before the package is installed (owned by: $(dpkg -S "$f" 2>/dev/null || echo nothing))"
  fi
done
t0=$(now_ms)
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$deb" \
  >"$WORK/install.log" 2>&1 || fail "apt-get install $deb: $(tail -20 "$WORK/install.log")"
INSTALLED=$pkg
ok "installed in $(( $(now_ms) - t0 )) ms"
dpkg-query -L "$pkg" >"$WORK/files"

for f in /usr/bin/patchbay-app /usr/bin/patchbay /usr/bin/patchbay-bridge; do
  [ -x "$f" ] || fail "$f is not installed"
  grep -qx "$f" "$WORK/files" || fail "$f is not in $pkg's file list"
done
ok "patchbay-app, patchbay and patchbay-bridge in /usr/bin"

desktop=$(grep -E '^/usr/share/applications/[^/]+\.desktop$' "$WORK/files" || true)
[ "$(printf '%s\n' "$desktop" | grep -c .)" = 1 ] || fail "expected one desktop entry, found: ${desktop:-none}"
desktop-file-validate "$desktop" || fail "$desktop does not validate"
grep -Eq '^MimeType=(.*;)?x-scheme-handler/patchbay(;|$)' "$desktop" \
  || fail "$desktop does not declare x-scheme-handler/patchbay: $(grep '^MimeType' "$desktop" || echo no MimeType)"
exec_line=$(sed -n 's/^Exec=//p' "$desktop")
case "$exec_line" in
  *%u* | *%U*) ;;
  *) fail "$desktop's Exec ($exec_line) passes no link (%u)";;
esac
icon=$(sed -n 's/^Icon=//p' "$desktop")
grep -Eq "^/usr/share/icons/hicolor/[^/]+/apps/$icon\.png$" "$WORK/files" \
  || fail "no hicolor icon named $icon (the desktop entry's Icon) in the package"
ok "desktop entry $desktop (Exec=$exec_line, Icon=$icon; $(grep -Ec '^/usr/share/icons/.*\.png$' "$WORK/files") icons)"

# --- the installed programs, in a throwaway home -------------------------------------------
home=$WORK/home
mkdir -p "$home/run" "$home/data" "$home/config" "$home/cache" "$WORK/patchbay"
chmod 700 "$home/run"
export HOME=$home XDG_RUNTIME_DIR=$home/run XDG_DATA_HOME=$home/data XDG_CONFIG_HOME=$home/config
export XDG_CACHE_HOME=$home/cache PATCHBAY_DATA_DIR=$WORK/patchbay
export CLAUDE_CONFIG_DIR=$home/.claude CODEX_HOME=$home/.codex
export BROWSER=$WORK/browser.sh LANG=C.UTF-8 NO_AT_BRIDGE=1 GSETTINGS_BACKEND=memory RUST_LOG=info NO_COLOR=1
printf '#!/bin/sh\necho "$@" >>%s/browser-calls\n' "$WORK" >"$BROWSER"
chmod +x "$BROWSER"
cat >"$PATCHBAY_DATA_DIR/mcp.json" <<'JSON'
{ "mcpServers": {
  "pkgcheck": { "title": "Package check", "type": "streamable-http", "url": "http://127.0.0.1:9/mcp" },
  "pkgcheck2": { "title": "Package check 2", "type": "streamable-http", "url": "http://127.0.0.1:9/mcp2" }
} }
JSON

[ "$(command -v patchbay)" = /usr/bin/patchbay ] || fail "patchbay on PATH is $(command -v patchbay || echo nothing), not /usr/bin/patchbay"
cli_version=$(patchbay --version) || fail "patchbay --version failed"
[ "$cli_version" = "patchbay $version" ] || fail "patchbay --version says '$cli_version', the package is $version"
ok "patchbay --version: $cli_version"
patchbay status --json >"$WORK/status.json" || [ $? = 1 ] || fail "patchbay status failed"
python3 - "$WORK/status.json" <<'PY' || fail "patchbay status --json does not list pkgcheck as needing authorization"
import json, sys
report = json.load(open(sys.argv[1]))
rows = {c["name"]: c for c in report["connectors"]}
sys.exit(0 if rows.get("pkgcheck", {}).get("state") == "needs_authorization" else 1)
PY
ok "patchbay status reads the catalog (pkgcheck needs authorization)"
# `patchbay connect` execs the lean bridge beside it: the process becomes /usr/bin/patchbay-bridge.
mkfifo "$WORK/connect.in"
patchbay connect pkgcheck <"$WORK/connect.in" >/dev/null 2>"$WORK/connect.log" &
connect_pid=$!
exec 9>"$WORK/connect.in" # its stdin stays open: the bridge waits for messages
bridged=
for _ in $(seq 1 80); do
  if [ "$(readlink "/proc/$connect_pid/exe" 2>/dev/null)" = /usr/bin/patchbay-bridge ]; then
    bridged=$(sed -n 's/^VmRSS:[[:space:]]*//p' "/proc/$connect_pid/status" 2>/dev/null)
    break
  fi
  kill -0 "$connect_pid" 2>/dev/null || break
  sleep 0.25
done
exec 9>&-
kill "$connect_pid" 2>/dev/null || true
wait "$connect_pid" 2>/dev/null || true
[ -n "$bridged" ] || fail "patchbay connect did not exec /usr/bin/patchbay-bridge: $(tail -5 "$WORK/connect.log")"
ok "patchbay connect runs as /usr/bin/patchbay-bridge (resident before its first message: $bridged)"

handler=$(xdg-mime query default x-scheme-handler/patchbay || true)
[ "$handler" = "$(basename "$desktop")" ] || fail "xdg-mime query default x-scheme-handler/patchbay says '$handler', not $(basename "$desktop")"
ok "xdg-mime: x-scheme-handler/patchbay is $handler"

# --- the installed app, and links ---------------------------------------------------------
# The running installed apps (their /proc exe is /usr/bin/patchbay-app), one pid a line.
installed_apps() {
  for p in $(pgrep -x patchbay-app -U "$(id -u)" || true); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = /usr/bin/patchbay-app ] && echo "$p"
  done
  return 0
}
[ -z "$(installed_apps)" ] || fail "an installed patchbay-app is already running"
# Polls (60 s) the app's log for the arrival of the link to connector $1; prints how long it took.
await_link() {
  local name=$1 t0
  t0=$(now_ms)
  for _ in $(seq 1 240); do
    if grep 'a patchbay://authorize link arrived' "$WORK/app.log" 2>/dev/null | grep -Eq "connector=\"?$name\"?([^A-Za-z0-9_-]|\$)"; then
      echo "$(( $(now_ms) - t0 ))"
      return 0
    fi
    sleep 0.25
  done
  fail "the link for $name did not reach the app in 60 s (app log: $(tail -20 "$WORK/app.log" 2>/dev/null))"
}

# 1. No app running: gio runs the packaged entry's Exec with the link; the app starts with it.
#    (The app inherits gio's stderr: that is its log.)
t0=$(now_ms)
gio open 'patchbay://authorize/pkgcheck' >"$WORK/app.log" 2>&1 || fail "gio open failed: $(cat "$WORK/app.log")"
took=$(await_link pkgcheck)
APP_PID=$(installed_apps)
[ "$(printf '%s\n' "$APP_PID" | grep -c .)" = 1 ] || fail "expected one running /usr/bin/patchbay-app, found: ${APP_PID:-none}"
ok "gio open patchbay://authorize/pkgcheck started the installed app with the link ($(( $(now_ms) - t0 )) ms from gio to the app's log line)"
[ ! -e "$XDG_DATA_HOME/applications/patchbay-app-handler.desktop" ] \
  || fail "the installed app registered a link handler of its own in the user's data dir"
[ "$(xdg-mime query default x-scheme-handler/patchbay || true)" = "$(basename "$desktop")" ] \
  || fail "after the app started, patchbay:// is no longer the package's: $(xdg-mime query default x-scheme-handler/patchbay)"
ok "the app left patchbay:// to the package's entry"

# 2. The app running: a second link goes through a second copy, which hands it to the running one
#    over D-Bus and exits.
t0=$(now_ms)
gio open 'patchbay://authorize/pkgcheck2' >"$WORK/gio.log" 2>&1 || fail "gio open failed: $(cat "$WORK/gio.log")"
took=$(await_link pkgcheck2)
ok "gio open patchbay://authorize/pkgcheck2 reached the running app in $took ms"
for _ in $(seq 1 80); do
  [ "$(installed_apps)" = "$APP_PID" ] && break
  sleep 0.25
done
[ "$(installed_apps)" = "$APP_PID" ] || fail "the copy started for the second link is still running: $(installed_apps)"
grep -q 'link arrived' "$WORK/gio.log" && fail "the second copy took the link itself instead of handing it over"
ok "the copy started for the second link handed it over and exited"
kill "$APP_PID"
wait "$APP_PID" 2>/dev/null || true
for _ in $(seq 1 80); do [ -z "$(installed_apps)" ] && break; sleep 0.25; done
[ -z "$(installed_apps)" ] || fail "the app did not stop on SIGTERM"
APP_PID=

# --- purge -------------------------------------------------------------------------------
t0=$(now_ms)
as_root dpkg --purge "$pkg" >"$WORK/purge.log" 2>&1 || fail "dpkg --purge $pkg: $(cat "$WORK/purge.log")"
INSTALLED=
ok "purged in $(( $(now_ms) - t0 )) ms"
dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'installed' && fail "$pkg is still known to dpkg"
left=$(while read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "$f"; done <"$WORK/files" || true)
[ -z "$left" ] || fail "files left after purge: $left"
hash -r # bash remembers where it found them
command -v patchbay-app >/dev/null && fail "patchbay-app is still on PATH"
command -v patchbay >/dev/null && fail "patchbay is still on PATH"
handler=$(xdg-mime query default x-scheme-handler/patchbay 2>/dev/null || true)
[ -z "$handler" ] || fail "after purge, x-scheme-handler/patchbay is still handled by '$handler'"
if grep -rs 'x-scheme-handler/patchbay' /usr/share/applications/mimeinfo.cache; then
  fail "the MIME cache still maps x-scheme-handler/patchbay"
fi
ok "nothing left: no files, no handler for patchbay://"
echo "package check passed"
