#!/usr/bin/env bash
# Regenerates icons/ from the same drawing code as the tray badge (patchbay_core::badge, tinted
# with badge::BRAND, no count). Needs ImageMagick's `convert` and python3. The outputs are committed;
# run this only after changing the glyph.
#   ./scripts/make-icons.sh                  draw with cargo, then convert
#   ICON_SOURCES=dir ./scripts/make-icons.sh  convert raw icon-<size>.rgba files already drawn
set -euo pipefail
cd "$(dirname "$0")/.."

out=icons
src=${ICON_SOURCES:-}
if [ -z "$src" ]; then
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  PATCHBAY_ICON_OUT="$src" cargo test -q --locked -p patchbay-core --lib \
    badge::tests::write_app_icon_sources -- --ignored --exact >/dev/null
fi

png() { # size file
  convert -size "$1x$1" -depth 8 "rgba:$src/icon-$1.rgba" -strip "PNG32:$2"
}

mkdir -p "$out"
png 32 "$out/32x32.png"
png 128 "$out/128x128.png"
png 256 "$out/128x128@2x.png"
png 512 "$out/icon.png"

tmp=$(mktemp -d)
for s in 16 24 32 48 64 128 256 512 1024; do png "$s" "$tmp/$s.png"; done
convert "$tmp/16.png" "$tmp/24.png" "$tmp/32.png" "$tmp/48.png" "$tmp/64.png" "$tmp/256.png" "$out/icon.ico"

# ICNS: a header and PNG-carrying entries (icp4 16, icp5 32, icp6 64, ic07 128, ic08 256,
# ic09 512, ic10 1024); ImageMagick 6 cannot write this format.
python3 - "$tmp" "$out/icon.icns" <<'PY'
import struct, sys
tmp, dest = sys.argv[1], sys.argv[2]
entries = b""
for kind, size in [(b"icp4", 16), (b"icp5", 32), (b"icp6", 64), (b"ic07", 128), (b"ic08", 256), (b"ic09", 512), (b"ic10", 1024)]:
    data = open(f"{tmp}/{size}.png", "rb").read()
    entries += kind + struct.pack(">I", len(data) + 8) + data
open(dest, "wb").write(b"icns" + struct.pack(">I", len(entries) + 8) + entries)
PY
rm -rf "$tmp"
ls -l "$out"
