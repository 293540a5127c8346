#!/usr/bin/env bash
# Fuzzes every parser of outside input for a bounded time (fuzz/fuzz_targets/*.rs: the catalog,
# placeholders, WWW-Authenticate, OAuth metadata, registration and token responses, the callback
# query, paste-back, deep links, the runtimes' credential files, every client's config, the
# gateway's tool names, SSE parser, stdio bridge and aggregate endpoint). Installs what it needs when missing (a nightly toolchain
# through rustup, cargo-fuzz at a pinned version), builds all targets once, seeds the corpora
# (fuzz/seed.sh), then runs each target in turn. Exits non-zero when any target crashes (a
# panic or failed assertion), hangs (-timeout) or grows past the memory limit (-rss_limit_mb).
#
#   FUZZ_SECONDS   time per target (default 20)
#   FUZZ_TARGETS   space-separated subset (default: all)
#   FUZZ_TOOLCHAIN rustup toolchain (default: nightly)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"

CARGO_FUZZ_VERSION=0.13.1
toolchain=${FUZZ_TOOLCHAIN:-nightly}
seconds=${FUZZ_SECONDS:-20}
started=$(date +%s)

if ! rustup run "$toolchain" rustc --version >/dev/null 2>&1; then
  echo "fuzz: installing the $toolchain toolchain"
  rustup toolchain install "$toolchain" --profile minimal
fi
if [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  echo "fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION"
  cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi

cd fuzz
# No sanitizer: every Patchbay crate forbids unsafe code, and libFuzzer itself catches what this
# step is for (panics, hangs, memory growth); debug assertions keep overflow checks on.
build_flags=(--sanitizer none --debug-assertions --codegen-units 16)
cargo "+$toolchain" fuzz build "${build_flags[@]}"
bash seed.sh
built=$(date +%s)

targets=${FUZZ_TARGETS:-$(cargo "+$toolchain" fuzz list)}
# Where cargo put them: fuzz/target, or CARGO_TARGET_DIR when set (made absolute from the root).
bin_dir=$(cd .. && realpath -m "${CARGO_TARGET_DIR:-fuzz/target}")/x86_64-unknown-linux-gnu/release
failed=()
printf '\n%-22s %10s %8s %8s  %s\n' target runs cov ft result
for t in $targets; do
  log=$(mktemp)
  mkdir -p "artifacts/$t" "corpus/$t"
  status=0
  "$bin_dir/$t" "corpus/$t" -max_total_time="$seconds" -rss_limit_mb=512 -timeout=5 \
    -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  # (`|| true`: a crashed run prints no final stats, and a grep that finds nothing must not end
  # the script before it reports.)
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1 || true)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  if [ "$status" -eq 0 ]; then
    result=ok
  else
    what=$(grep -oE 'ERROR: libFuzzer: [a-z-]+|panicked at [^:]+:[0-9]+' "$log" | head -1 || true)
    artifact=$(grep -oE "artifacts/$t/[a-z]+-[0-9a-f]+" "$log" | head -1 || true)
    result="FAILED (${what:-exit $status}) ${artifact}"
    failed+=("$t")
    echo "---- $t output (tail) ----" >&2
    tail -40 "$log" >&2
  fi
  printf '%-22s %10s %8s %8s  %s\n' "$t" "${runs:-?}" "${cov:-?}" "${ft:-?}" "$result"
  rm -f "$log"
done
finished=$(date +%s)
echo "fuzz: build+seed $((built - started)) s, fuzzing $((finished - built)) s, ${seconds} s per target"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (reproduce: cd fuzz && cargo +$toolchain fuzz run ${build_flags[*]} TARGET artifacts/TARGET/FILE)" >&2
  exit 1
fi
echo "fuzz: all targets ran clean"
