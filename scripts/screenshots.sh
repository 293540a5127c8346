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
# Usage: scripts/screenshots.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/screenshots}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd ui && node_modules/.bin/tsc --noEmit && node_modules/.bin/vite build --outDir "$tmp/dist" --emptyOutDir --logLevel warn)
node ui/tests/screenshot-states.mjs --dist="$tmp/dist" --out="$tmp/shots"

mkdir -p "$out"
rm -f "$out"/*-light.png "$out"/*-dark.png
for shot in "$tmp"/shots/*.png; do
  convert "$shot" -strip -define png:compression-level=9 "PNG8:$out/$(basename "$shot")"
done

# The index, in the order the script shot them.
{
  echo "# The Connectors window, every state, light and dark"
  echo
  echo "Made by \`scripts/screenshots.sh\` (the built window in Chromium with the mock backend's fixtures;"
  echo "do not edit by hand: run the script again)."
  echo
  for light in $(ls -tr "$tmp"/shots/*-light.png); do
    name=$(basename "$light" -light.png)
    echo "## $name"
    echo
    echo "![$name, light]($name-light.png) ![$name, dark]($name-dark.png)"
    echo
  done
} >"$out/README.md"
echo "screenshots: $(ls "$out"/*.png | wc -l) files, $(du -ch "$out"/*.png | tail -1 | cut -f1) in $out"
