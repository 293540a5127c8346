#!/usr/bin/env bash
# The stdio bridge's memory beside mcp-remote's, in the same run, against the same loopback server
# (the MCP SDK's example streamable-HTTP server, tests/node, without OAuth): `patchbay connect
# NAME`, mcp-remote 0.15.1 run as its own binary (one node process) and as clients configure it,
# `npx mcp-remote URL` (npx's node and mcp-remote's). Each is spawned by the MCP SDK's stdio client
# (tests/node/connect-client.mjs), driven through initialize + tools/list + CALLS tools/call, then
# its process tree's memory is read from /proc while the session is open: VmRSS summed over the
# tree, VmHWM (peak) likewise, PSS from smaps_rollup. Prints one JSON document on stdout with the
# ratios (goal: patchbay connect under a tenth of mcp-remote's RSS), and, timed from this script
# around the client's answers, the start (spawn to the session being open: initialize included)
# and the median of the tools/call round trips; asserts nothing.
#
#   cargo build --release --locked -p patchbay-cli --bin patchbay
#   cargo build --profile bridge --locked -p patchbay-cli --bin patchbay-bridge
#   tests/bench/connect-memory.sh [CALLS=20]      (PATCHBAY=path/to/patchbay to pick a build;
#                                                  default: the shipped layout, shipped-build.sh,
#                                                  else target/debug)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
calls=${1:-20}
tmp=$(mktemp -d)
bin=${PATCHBAY:-}
if [ -z "$bin" ]; then
  if [ -x "${CARGO_TARGET_DIR:-$root/target}/release/patchbay" ]; then bin=$("$root/tests/bench/shipped-build.sh" "$tmp/bin"); else bin=$root/target/debug/patchbay; fi
fi
[ -x "$bin" ] || { echo "no patchbay binary: cargo build -p patchbay-cli --release --locked" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
node_dir=$root/tests/node
[ -x "$node_dir/node_modules/.bin/mcp-remote" ] || { echo "no mcp-remote in tests/node: run scripts/setup.sh" >&2; exit 2; }

server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "nothing listens on $1" >&2; return 1
}

port=$(free_port)
(cd "$node_dir" && MCP_PORT=$port exec node sdk-example-server.mjs simpleStreamableHttp.js >"$tmp/server.log" 2>&1) &
server_pid=$!
wait_port "$port"
url="http://localhost:$port/mcp"
printf '{"mcpServers":{"bench":{"type":"http","url":"%s"}}}' "$url" >"$tmp/catalog.json"
# Patchbay's data and mcp-remote's ~/.mcp-auth in the throwaway directory.
export PATCHBAY_DATA_DIR=$tmp/data HOME=$tmp/home
mkdir -p "$HOME"

# measure LABEL COMMAND...: one JSON line {"label":..., "rss_kib":..., ...} on stdout.
measure() {
  local label=$1; shift
  local start_ns
  start_ns=$(date +%s%N)
  coproc CLIENT { cd "$node_dir" && exec node connect-client.mjs --timeout-ms 60000 -- "$@" 2>>"$tmp/$label.stderr"; }
  local in=${CLIENT[1]} out=${CLIENT[0]} pid=$CLIENT_PID line
  ask() {
    [ -n "${1:-}" ] && printf '%s\n' "$1" >&"$in"
    IFS= read -r -t 60 line <&"$out" || { echo "$label: no answer to ${1:-connect}; stderr:" >&2; cat "$tmp/$label.stderr" >&2; exit 1; }
    case $line in *'"ok":false'*|*connect_failed*) echo "$label: $line" >&2; cat "$tmp/$label.stderr" >&2; exit 1;; esac
  }
  local started=$start_ns t
  ask ""
  local start_ms=$(( ($(date +%s%N) - started) / 1000000 ))
  ask '{"op":"list"}'
  local call_us=()
  for i in $(seq 1 "$calls"); do
    t=$(date +%s%N)
    ask "{\"op\":\"call\",\"name\":\"greet\",\"arguments\":{\"name\":\"bench $i\"}}"
    call_us+=($(( ($(date +%s%N) - t) / 1000 )))
  done
  ask '{"op":"memory"}'
  local memory=$line
  ask '{"op":"close"}'
  wait "$pid" || true
  printf '%s\n' "$memory" | python3 -c 'import json,sys,statistics; m=json.load(sys.stdin); calls=[int(c) for c in sys.argv[3].split()]; print(json.dumps({"label":sys.argv[1],"processes":len(m["pids"]),"rss_kib":m["rss_kib"],"hwm_kib":m["hwm_kib"],"pss_kib":m["pss_kib"],"start_ms":int(sys.argv[2]),"call_p50_ms":round(statistics.median(calls)/1000,2) if calls else None}))' "$label" "$start_ms" "${call_us[*]}"
}

echo "patchbay: $bin; mcp-remote: $(node -p 'require(process.argv[1]).version' "$node_dir/node_modules/mcp-remote/package.json"); node $(node --version); $calls calls each" >&2
{
  measure patchbay_connect "$bin" --catalog "$tmp/catalog.json" connect bench
  measure mcp_remote "$node_dir/node_modules/.bin/mcp-remote" "$url"
  measure npx_mcp_remote npx --offline mcp-remote "$url"
} >"$tmp/rows"

python3 - "$tmp/rows" "$calls" <<'EOF'
import json, sys
rows = {r["label"]: r for r in map(json.loads, open(sys.argv[1]))}
ours, theirs, npx = rows["patchbay_connect"], rows["mcp_remote"], rows["npx_mcp_remote"]
ratio = lambda a, b, k: round(a[k] / b[k], 4) if a.get(k) and b.get(k) else None
report = {
    "calls": int(sys.argv[2]),
    "rows": [ours, theirs, npx],
    "rss_ratio_vs_mcp_remote": ratio(ours, theirs, "rss_kib"),
    "pss_ratio_vs_mcp_remote": ratio(ours, theirs, "pss_kib"),
    "rss_ratio_vs_npx_mcp_remote": ratio(ours, npx, "rss_kib"),
    "start_ratio_vs_mcp_remote": ratio(ours, theirs, "start_ms"),
    "call_p50_ratio_vs_mcp_remote": ratio(ours, theirs, "call_p50_ms"),
    "goal_rss_under_a_tenth": ours["rss_kib"] * 10 < theirs["rss_kib"],
}
print(json.dumps(report, indent=2))
mib = lambda k: f"{k / 1024:.1f} MiB" if k is not None else "n/a"
for r in report["rows"]:
    print(f'{r["label"]:>17}: RSS {mib(r["rss_kib"])}  PSS {mib(r["pss_kib"])}  peak {mib(r["hwm_kib"])}  ({r["processes"]} process(es))  start {r["start_ms"]} ms  call p50 {r["call_p50_ms"]} ms', file=sys.stderr)
print(f'patchbay connect / mcp-remote RSS: {report["rss_ratio_vs_mcp_remote"]}', file=sys.stderr)
EOF
