#!/usr/bin/env bash
# Lays out the build the .deb ships in DIR (as scripts/package.sh does): `patchbay` from
# target/release and, beside it, the stdio bridge it execs from target/bridge (the size-built
# profile) when that was built, else from target/release. Prints DIR/patchbay. The connect
# benchmarks measure this unless PATCHBAY names a build.
#
#   cargo build --release --locked -p patchbay-cli --bin patchbay
#   cargo build --profile bridge --locked -p patchbay-cli --bin patchbay-bridge
#   tests/bench/shipped-build.sh DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
dir=${1:?usage: shipped-build.sh DIR}
[ -x "$target/release/patchbay" ] || { echo "no $target/release/patchbay: cargo build --release --locked -p patchbay-cli --bin patchbay" >&2; exit 2; }
bridge=$target/bridge/patchbay-bridge
[ -x "$bridge" ] || bridge=$target/release/patchbay-bridge
[ -x "$bridge" ] || { echo "no patchbay-bridge: cargo build --profile bridge --locked -p patchbay-cli --bin patchbay-bridge" >&2; exit 2; }
mkdir -p "$dir"
cp "$target/release/patchbay" "$bridge" "$dir/"
echo "shipped build: $target/release/patchbay with $bridge" >&2
echo "$dir/patchbay"
