#!/usr/bin/env bash
# CI step (issue 13): every `cfg(windows)` and `cfg(target_os = "macos")` branch keeps compiling.
# Type-checks (`cargo check`, nothing is linked) every core crate, the CLI and the Tauri app for
#   - x86_64-pc-windows-gnu: fully, C dependencies included (Debian's mingw-w64 compiles them);
#   - x86_64-apple-darwin: the Rust of every crate, ours and our dependencies'. There is no Apple
#     SDK or Apple-targeting C toolchain here, so the C that two dependencies compile in their
#     build scripts (SQLite in libsqlite3-sys, ring's C and assembly) is NOT compiled for macOS:
#     a stand-in compiler (below) hands back empty objects, which is enough for a check.
# scripts/ci/windows.sh builds and runs the Windows CLI; this script only type-checks.
# Needs what scripts/setup.sh installs (mingw-w64, the two Rust targets). Exits non-zero when a
# check fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"

CRATES=(-p patchbay-catalog -p patchbay-vault -p patchbay-status -p patchbay-runtimes
  -p patchbay-oauth -p patchbay-check -p patchbay-core -p patchbay-gateway -p patchbay-cli
  -p patchbay-app)
step() { printf '\n==> %s\n' "$*"; }

for target in x86_64-pc-windows-gnu x86_64-apple-darwin; do
  rustup target list --installed | grep -qx "$target" \
    || { echo "cross-check: Rust target $target missing; run scripts/setup.sh" >&2; exit 1; }
done
# The app embeds ui/dist when it compiles (scripts/test.sh builds the UI before any Rust).
if [ ! -f ui/dist/index.html ]; then
  echo "cross-check: ui/dist missing; build the UI first (npm --prefix ui run build)" >&2
  exit 1
fi

step "cargo check --target x86_64-pc-windows-gnu (core crates, CLI, app)"
started=$(date +%s)
cargo check --target x86_64-pc-windows-gnu --locked "${CRATES[@]}"
echo "checked in $(($(date +%s) - started)) s"

step "cargo check --target x86_64-apple-darwin (core crates, CLI, app; C parts stubbed)"
# Kept at one path under target/ so a second run reuses the build scripts' output.
stub="$PWD/target/cross-check-stub"
mkdir -p "$stub"
# The stand-in C compiler: `-c ... -o OBJ` gives an empty object (its code is never linked by a
# check); anything else (cc-rs asking what compiler this is) goes to the host's cc without the
# Apple-only flags gcc does not know.
cat >"$stub/cc" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
out="" compile=0 prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  [ "$a" = "-c" ] && compile=1
  prev=$a
done
if [ "$compile" = 1 ] && [ -n "$out" ]; then
  exec cc -c -x c /dev/null -o "$out"
fi
args=() skip=0
for a in "$@"; do
  if [ "$skip" = 1 ]; then skip=0; continue; fi
  case "$a" in
    -arch) skip=1 ;;
    -mmacosx-version-min=* | -mmacos-version-min=*) ;;
    *) args+=("$a") ;;
  esac
done
exec cc "${args[@]}"
EOF
chmod +x "$stub/cc"
started=$(date +%s)
CC_x86_64_apple_darwin="$stub/cc" CXX_x86_64_apple_darwin="$stub/cc" AR_x86_64_apple_darwin=ar \
  cargo check --target x86_64-apple-darwin --locked "${CRATES[@]}"
echo "checked in $(($(date +%s) - started)) s"

step "cross-check passed"
