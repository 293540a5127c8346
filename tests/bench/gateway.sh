#!/usr/bin/env bash
# The gateway's benchmark on loopback: the latency `patchbay gateway serve` adds to a tools/call
# (p50/p95 over N calls, the MCP SDK's client, direct vs through the gateway) and STREAMS
# concurrent streaming sessions through one gateway with nothing dropped. Prints JSON; asserts
# nothing about timing. The upstream is the SDK's example server (tests/node), without OAuth.
#
#   tests/bench/gateway.sh [N=500] [STREAMS=100]     (PATCHBAY=path/to/patchbay to pick a build;
#                                                      default: target/release, else target/debug)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-500}
streams=${2:-100}
bin=${PATCHBAY:-}
if [ -z "$bin" ]; then
  if [ -x "$root/target/release/patchbay" ]; then bin=$root/target/release/patchbay; else bin=$root/target/debug/patchbay; fi
fi
[ -x "$bin" ] || { echo "no patchbay binary: cargo build -p patchbay-cli" >&2; exit 2; }

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
[ -n "${KEEP_LOG:-}" ] && trap "cp \"\$tmp/gateway.log\" \"$KEEP_LOG\"; cleanup" EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "nothing listens on $1" >&2; return 1
}

mcp_port=$(free_port)
gw_port=$(free_port)
(cd "$root/tests/node" && MCP_PORT=$mcp_port exec node sdk-example-server.mjs simpleStreamableHttp.js >"$tmp/server.log" 2>&1) &
pids+=($!)
wait_port "$mcp_port"

direct="http://localhost:$mcp_port/mcp"
printf '{"mcpServers":{"bench":{"type":"http","url":"%s"}}}' "$direct" >"$tmp/catalog.json"
export PATCHBAY_DATA_DIR=$tmp/data
headers=$("$bin" gateway client add bench --json --port "$gw_port" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["headers"]))')
RUST_LOG=${RUST_LOG:-warn} "$bin" gateway serve --port "$gw_port" --catalog "$tmp/catalog.json" >"$tmp/gateway.log" 2>&1 &
pids+=($!)
wait_port "$gw_port"

echo "patchbay: $bin" >&2
cd "$root/tests/node"
GATEWAY_HEADERS=$headers node gateway-bench.mjs "$direct" "http://127.0.0.1:$gw_port/mcp/bench" "$n" "$streams" 10
