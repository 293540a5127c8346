#!/usr/bin/env bash
# Everything CI checks, in one go: formatting, clippy, the UI build, every Rust test (the tray app
# included, against a real Secret Service) and the UI tests. Runs under a private D-Bus session
# with an unlocked gnome-keyring and a virtual X display, with XDG dirs in a temp dir so nothing
# touches your real data or keychain. Exits non-zero when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

if [ -z "${PATCHBAY_TEST_INNER:-}" ]; then
  bash scripts/setup.sh
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/data" "$tmp/config" "$tmp/cache" "$tmp/runtime"
  chmod 700 "$tmp/runtime"
  export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" XDG_CACHE_HOME="$tmp/cache"
  export XDG_RUNTIME_DIR="$tmp/runtime"
  export PATCHBAY_TEST_INNER=1 PATCHBAY_TEST_KEYCHAIN=1
  # keyctl gives a private kernel keyring; dbus-run-session a private bus; the keyring daemon
  # needs a non-empty password to create an unlocked login keyring; xvfb-run a display.
  exec keyctl session - dbus-run-session -- sh -c \
    'printf ci | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec xvfb-run -a bash "$0"' \
    "$0"
fi

# Each step says how long the one before it took, and the last the whole run's times, so a slow
# step shows in any CI log (CI's budget is 90 minutes).
step_name= step_started=$SECONDS run_started=$SECONDS step_times=
step() {
  if [ -n "$step_name" ]; then
    local took=$((SECONDS - step_started))
    printf '   (%s: %d s)\n' "$step_name" "$took"
    step_times+=$(printf '   %5d s  %s' "$took" "$step_name")$'\n'
  fi
  step_name=$*
  step_started=$SECONDS
  printf '\n==> %s\n' "$*"
}

# CI's machine has a bounded disk, and each step below builds into its own directory (debug, the
# Windows target, the fuzz build, release): together they outgrow it (a CI run ran out of space
# in the fuzz build). With PATCHBAY_CI_PRUNE=1, which only .ci/run sets, a step's build is
# removed once nothing after it reads it, so the peak is one build at a time; a developer's
# run keeps everything.
target_dir=$(realpath -m "${CARGO_TARGET_DIR:-target}")
prune() {
  if [ -n "${PATCHBAY_CI_PRUNE:-}" ]; then
    rm -rf "$@"
  fi
  # (The target dir may not exist yet: df is asked about the checkout, on the same disk here.)
  df -h --output=avail,target . | tail -n1 | awk '{print "   disk: " $1 " free on " $2}' || true
}
prune

step "cargo fmt --check"
cargo fmt --all --check
# The tray app embeds ui/dist at compile time, so the UI is built before anything compiles it.
step "ui build"
npm --prefix ui run build
step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "cargo test"
# The month soak draws its days from a seed: CI uses one fixed seed, so a run fails for the change
# it tests, not for the day it ran (any seed replays with PATCHBAY_SOAK_SEED=N; a local run
# still draws a new one each time unless set).
PATCHBAY_SOAK_SEED=${PATCHBAY_SOAK_SEED:-20261204} cargo test --workspace --locked
step "ui tests"
npm --prefix ui test
# The official MCP conformance framework's client scenarios with Patchbay as the client, and its
# server scenarios through the gateway (it reads target/debug/patchbay, so before the prune);
# tests/conformance/expected-failures.txt lists what fails today (docs/compatibility.md).
step "conformance: the MCP framework's scenarios, 2025-11-25 and 2026-07-28"
PATCHBAY_BIN="$target_dir/debug/patchbay" bash scripts/ci/conformance.sh
# Nothing below reads the debug build: the Windows step builds its own target, the package its
# release build.
prune "$target_dir/debug"
# Windows: the CLI cross-built with mingw-w64 and run under wine; every cfg(windows) and
# cfg(target_os = "macos") branch type-checked (docs/windows-macos.md).
step "windows: the cross-built CLI under wine"
bash scripts/ci/windows.sh
step "cross-check: Windows and macOS"
bash scripts/ci/cross-check.sh
prune "$target_dir/x86_64-pc-windows-gnu" "$target_dir/x86_64-apple-darwin"
# cargo-fuzz (nightly): every parser of outside input, each target for 20 s (fuzz/README.md).
step "fuzz: every parser of outside input, 20 s each"
bash scripts/ci/fuzz.sh
# The fuzz build: fuzz/target, or under CARGO_TARGET_DIR when that is set (scripts/ci/fuzz.sh).
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
  prune "$target_dir/x86_64-unknown-linux-gnu"
else
  prune fuzz/target
fi
# The .deb: built (release), installed, launched by a patchbay:// link, purged (docs/packaging.md).
step "package: .deb built, installed, launched by a patchbay:// link, purged"
bash scripts/ci/package.sh
step "all checks passed"
printf 'step times:\n%s   %5d s  in all\n' "$step_times" "$((SECONDS - run_started))"
