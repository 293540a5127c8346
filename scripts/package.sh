#!/usr/bin/env bash
# Builds Patchbay's Debian package with the Tauri bundler: `bash scripts/package.sh`.
#
# The package installs the tray app (/usr/bin/patchbay-app), the `patchbay` command and the lean
# stdio bridge `patchbay connect` execs (/usr/bin/patchbay-bridge, beside `patchbay`), a desktop
# entry that handles patchbay:// links, and the icons; src-tauri/tauri.conf.json's `bundle` says what goes in.
# Release builds, `--locked`. The Tauri CLI is ui/'s pinned devDependency (@tauri-apps/cli), not a
# `cargo install`. A cold run takes about 12 minutes on two cores (the app's release build).
# Prints the package's path on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

started=$(date +%s)
step() { printf '\n==> %s\n' "$*" >&2; }

if [ ! -x ui/node_modules/.bin/tauri ]; then
  step "npm ci (ui/, with the Tauri CLI)"
  npm --prefix ui ci >&2
fi
# The app embeds ui/dist at compile time.
step "ui build"
npm --prefix ui run build >&2
# The CLI and the bridge are separate binaries the bundler copies in (bundle.linux.deb.files).
step "cargo build --release -p patchbay-cli --bin patchbay"
cargo build --release --locked -p patchbay-cli --bin patchbay >&2
# The bridge runs once per client session: its own size-built profile (Cargo.toml's
# [profile.bridge]), about a third less memory per session.
step "cargo build --profile bridge -p patchbay-cli --bin patchbay-bridge"
cargo build --profile bridge --locked -p patchbay-cli --bin patchbay-bridge >&2
# Builds patchbay-app in release (tauri's production build: assets embedded), then bundles it.
# The CLI works in the app's crate (src-tauri: its Cargo.toml and tauri.conf.json); it runs
# `cargo build --bins --features tauri/custom-protocol --release --locked` there. The version is
# the workspace's (Cargo.toml).
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
release="$(realpath -m "${CARGO_TARGET_DIR:-target}")/release"
bridge="$(realpath -m "${CARGO_TARGET_DIR:-target}")/bridge"
# The CLI and its bridge are taken from where cargo put them (CARGO_TARGET_DIR too), not from
# tauri.conf.json's ../target default.
config=$(printf '{"version":"%s","bundle":{"linux":{"deb":{"files":{"/usr/bin/patchbay":"%s/patchbay","/usr/bin/patchbay-bridge":"%s/patchbay-bridge"}}}}}' "$version" "$release" "$bridge")
tauri() {
  local command=$1
  shift
  (cd src-tauri && ../ui/node_modules/.bin/tauri "$command" --config "$config" "$@") >&2
}
step "tauri build --no-bundle ($version)"
tauri build --ci --no-bundle -- --locked
# Symbols are a quarter of each binary and no use to a user (as dh_strip does for a .deb).
step "strip"
strip --strip-unneeded "$release/patchbay-app" "$release/patchbay" "$bridge/patchbay-bridge"
step "tauri bundle --bundles deb"
tauri bundle --ci --bundles deb

deb=$release/bundle/deb/Patchbay_${version}_$(dpkg --print-architecture).deb
if [ ! -f "$deb" ]; then
  echo "package.sh: the bundler made no $deb" >&2
  ls "$release/bundle/deb" >&2 || true
  exit 1
fi
step "built $deb ($(du -h "$deb" | cut -f1)) in $(( $(date +%s) - started )) s"
echo "$deb"
