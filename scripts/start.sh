#!/usr/bin/env bash
# Builds and starts the Patchbay tray app from the source tree (debug build).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

bash scripts/setup.sh
npm --prefix ui run build

if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ "$(uname -s)" = Linux ]; then
  echo "start: no display (neither DISPLAY nor WAYLAND_DISPLAY is set). Patchbay is a tray app and needs a"
  echo "desktop session. Building only; to try it headless: xvfb-run -a cargo run --locked -p patchbay-app"
  exec cargo build --locked -p patchbay-app
fi
exec cargo run --locked -p patchbay-app -- "$@"
