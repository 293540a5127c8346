#!/usr/bin/env bash
# Installs what building and testing Patchbay needs on Debian 12 / Ubuntu, and nothing that is
# already there: apt packages (skipped entirely when dpkg has them all), Node and npm, the Rust
# components rustfmt and clippy, ui/node_modules, tests/node/node_modules (the MCP SDK's example
# OAuth server and the other npm peers the end-to-end tests run on loopback), and tests/python/.venv
# (the PyPI peers of the conformance matrix, pinned in tests/python/requirements.txt). Safe to run
# again and again.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_PACKAGES=(build-essential pkg-config curl file libwebkit2gtk-4.1-dev libayatana-appindicator3-dev
  librsvg2-dev libxdo-dev libssl-dev)
TEST_PACKAGES=(xvfb xauth x11-utils xdotool imagemagick dbus dbus-x11 gnome-keyring libsecret-tools keyutils
  webkit2gtk-driver xdg-utils desktop-file-utils at-spi2-core fonts-dejavu-core chromium
  python3-dbus python3-gi)
NODE_PACKAGES=()
command -v node >/dev/null 2>&1 || NODE_PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || NODE_PACKAGES+=(npm)

missing=()
for p in "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}" "${NODE_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: missing ${missing[*]}, and this is not a Debian/Ubuntu system; install them yourself." >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  # Ubuntu names the browser chromium-browser (a snap shim); fall back when chromium has no candidate.
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    rest=()
    for p in "${missing[@]}"; do [ "$p" = chromium ] || rest+=("$p"); done
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${rest[@]}"
    echo "setup: chromium unavailable; the ui/ browser tests will be skipped or fail." >&2
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: installing Rust with rustup (https://rustup.rs)"
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c rustfmt,clippy
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if command -v rustup >/dev/null 2>&1; then
  installed=$(rustup component list --installed 2>/dev/null || true)
  for c in rustfmt clippy; do
    grep -q "^$c" <<<"$installed" || rustup component add "$c"
  done
fi

# Also when package-lock.json changed since the last install (npm's own copy of it is older).
if [ ! -d ui/node_modules ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
  echo "setup: npm ci in ui/"
  npm --prefix ui ci --no-audit --no-fund
fi
# Also when package-lock.json changed since the last install (npm's own copy of it is older).
if [ ! -d tests/node/node_modules ] \
  || [ tests/node/package-lock.json -nt tests/node/node_modules/.package-lock.json ]; then
  echo "setup: npm ci in tests/node/"
  npm --prefix tests/node ci --no-audit --no-fund
fi
# The Python peers: a venv with exactly tests/python/requirements.txt, redone when that file is
# newer than the venv's stamp (so a changed pin reinstalls, and an interrupted install retries).
venv=tests/python/.venv
if [ ! -f "$venv/.installed" ] || [ tests/python/requirements.txt -nt "$venv/.installed" ]; then
  echo "setup: Python peers in $venv"
  # Debian's python3 makes venvs only with python3-venv (a pyenv or upstream build needs none).
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || { echo "setup: need python3 with venv" >&2; exit 1; }
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3 python3-venv
  fi
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -r tests/python/requirements.txt
  touch "$venv/.installed"
fi

# --- tauri-driver (tests/tests/window_webdriver.rs: the real window driven through WebDriver) ---
# The WebDriver server in front of Debian's WebKitWebDriver (webkit2gtk-driver, above). Pinned to
# 2.1.0 (crates.io's newest tauri-driver is a 3.0 alpha); about a minute on 2 cores; skipped when
# a 2.x is already installed.
if ! cargo install --list 2>/dev/null | grep -q '^tauri-driver v2\.'; then
  echo "setup: cargo install tauri-driver 2.1.0"
  cargo install tauri-driver --version 2.1.0 --locked
fi

# --- Windows cross build + wine (scripts/ci/windows.sh), macOS type-check (scripts/ci/cross-check.sh) ---
# Debian's mingw-w64 links the x86_64-pc-windows-gnu CLI; wine64 (8.0 on Debian 12) runs it.
# Skipped when both packages and the Rust targets are already there.
WINDOWS_PACKAGES=(gcc-mingw-w64-x86-64 wine64)
win_missing=()
for p in "${WINDOWS_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || win_missing+=("$p")
done
if [ "${#win_missing[@]}" -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing ${win_missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${win_missing[@]}"
fi
# x86_64-apple-darwin: only type-checked (scripts/ci/cross-check.sh), never linked.
if command -v rustup >/dev/null 2>&1; then
  for target in x86_64-pc-windows-gnu x86_64-apple-darwin; do
    rustup target list --installed | grep -qx "$target" || rustup target add "$target"
  done
fi

# --- The Debian package's CI step (scripts/ci/package.sh) ---
# gio opens a patchbay:// link as a desktop does; pgrep finds the installed app. The Tauri CLI
# that builds the package is ui/'s pinned devDependency (npm ci above).
PACKAGE_CHECK_PACKAGES=(libglib2.0-bin procps)
pkg_missing=()
for p in "${PACKAGE_CHECK_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || pkg_missing+=("$p")
done
if [ "${#pkg_missing[@]}" -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing ${pkg_missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${pkg_missing[@]}"
fi
