#!/usr/bin/env bash
# Light and dark screenshots of every state the Connectors window shows, into docs/screenshots/
# (or the directory given): each of the nine connector states (one row each), the overview, the
# first run, the gallery, rows found in clients, "Use in another client", the gateway's clients,
# a connection check with the health drawer, the refresh history, the paste-back flow and a
# catalog error. Named <state>-light.png / <state>-dark.png, listed in docs/screenshots/README.md.
#
# The window is built into a temp dir (ui/dist is what the tray app embeds; another build may be
# writing it), served with its CSP header, rendered by Debian's chromium with the mock backend and
# its fixtures (ui/src/mock.ts), prefers-color-scheme emulated (ui/tests/screenshot-states.mjs);
# each PNG is then reduced to 256 colours with ImageMagick. Needs ui/node_modules, chromium and
# imagemagick (scripts/setup.sh). About a minute.
#
# --real also shoots the real app's window (WebKitGTK, GTK's Adwaita and Adwaita:dark) before and
# after authorizing a connector through its button against a loopback OAuth server, through
# WebDriver: the real_window_screenshots case of tests/tests/window_webdriver.rs (builds the app;
# needs tauri-driver, WebKitWebDriver, dbus and gnome-keyring; under xvfb-run when there is no
# display). About a minute more once built.
# Usage: scripts/screenshots.sh [--real] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
real=0
if [ "${1:-}" = "--real" ]; then
  real=1
  shift
fi
out=${1:-docs/screenshots}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd ui && node_modules/.bin/tsc --noEmit && node_modules/.bin/vite build --outDir "$tmp/dist" --emptyOutDir --logLevel warn)
node ui/tests/screenshot-states.mjs --dist="$tmp/dist" --out="$tmp/shots"
if [ "$real" = 1 ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
  # The app embeds ui/dist when it is built.
  npm --prefix ui run build --silent
  display=()
  [ -n "${DISPLAY:-}" ] || display=(xvfb-run -a)
  PATCHBAY_WINDOW_SCREENSHOTS="$tmp/shots" "${display[@]}" cargo test -p patchbay-e2e --locked \
    --test window_webdriver -- --exact real_window_screenshots
fi

mkdir -p "$out"
# Real-window shots are kept unless shot again.
if [ "$real" = 1 ]; then
  rm -f "$out"/*-light.png "$out"/*-dark.png
else
  find "$out" -name '*-light.png' ! -name 'real-window-*' -delete
  find "$out" -name '*-dark.png' ! -name 'real-window-*' -delete
fi
for shot in "$tmp"/shots/*.png; do
  convert "$shot" -strip -define png:compression-level=9 "PNG8:$out/$(basename "$shot")"
done

# The index, in the order the script shot them; real-window shots kept from a --real run stay in
# their order there.
kept=""
if [ "$real" = 0 ] && [ -f "$out/README.md" ]; then
  kept=$(sed -n 's/^## \(real-window-.*\)$/\1/p' "$out/README.md")
fi
{
  echo "# The Connectors window, every state, light and dark"
  echo
  echo "Made by \`scripts/screenshots.sh\`: the built window in Chromium with the mock backend's fixtures;"
  echo "real-window-*: the real app (WebKitGTK) through WebDriver, \`scripts/screenshots.sh --real\`."
  echo "Do not edit by hand: run the script again."
  echo
  for name in $(ls -tr "$tmp"/shots/*-light.png | xargs -n1 basename | sed 's/-light\.png$//') $kept; do
    echo "## $name"
    echo
    echo "![$name, light]($name-light.png) ![$name, dark]($name-dark.png)"
    echo
  done
} >"$out/README.md"
echo "screenshots: $(ls "$out"/*.png | wc -l) files, $(du -ch "$out"/*.png | tail -1 | cut -f1) in $out"
