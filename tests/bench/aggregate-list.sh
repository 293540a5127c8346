#!/usr/bin/env bash
# The aggregate endpoint's warm `tools/list` (`/mcp`) over 1 connector and over MANY, on loopback:
# one MCP SDK example server (tests/node, no OAuth) behind MANY catalog entries (each its own
# upstream session), `patchbay gateway serve`, and a keep-alive client that lists N times after a
# warm-up. Prints, per size: the exchange a client sees (request sent to answer read, p50/p95 ms,
# not parsed), the gateway's CPU per listing
# (utime+stime from /proc, ms), and the upstream's too; then the ratio MANY/1 of the p50s. Asserts
# nothing about timing.
#
#   tests/bench/aggregate-list.sh [N=300] [MANY=50]   (PATCHBAY=path/to/patchbay to pick a build;
#                                                     default: target/release, else target/debug)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-300}
many=${2:-50}
bin=${PATCHBAY:-}
if [ -z "$bin" ]; then
  if [ -x "$root/target/release/patchbay" ]; then bin=$root/target/release/patchbay; else bin=$root/target/debug/patchbay; fi
fi
[ -x "$bin" ] || { echo "no patchbay binary: cargo build --release -p patchbay-cli" >&2; exit 2; }

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "nothing listens on $1" >&2; return 1
}

mcp_port=$(free_port)
(cd "$root/tests/node" && MCP_PORT=$mcp_port exec node sdk-example-server.mjs simpleStreamableHttp.js >"$tmp/server.log" 2>&1) &
server=$!
pids+=($server)
wait_port "$mcp_port"
upstream="http://localhost:$mcp_port/mcp"
echo "patchbay: $bin" >&2

# One gateway per size, each with its own data directory and client.
run() {
  local size=$1 dir=$tmp/$1 port
  mkdir -p "$dir"
  port=$(free_port)
  python3 - "$size" "$upstream" >"$dir/catalog.json" <<'EOF'
import json, sys
size, url = int(sys.argv[1]), sys.argv[2]
print(json.dumps({"mcpServers": {f"c{i:02d}": {"type": "http", "url": url, "headers": {"X-Api-Key": "k"}}
                                 for i in range(1, size + 1)}}))
EOF
  local headers gw
  headers=$(PATCHBAY_DATA_DIR=$dir/data "$bin" gateway client add bench --json --port "$port" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["headers"]))')
  PATCHBAY_DATA_DIR=$dir/data RUST_LOG=${RUST_LOG:-warn} "$bin" gateway serve --port "$port" --catalog "$dir/catalog.json" >"$dir/gateway.log" 2>&1 &
  gw=$!
  pids+=($gw)
  wait_port "$port"
  python3 - "$size" "$port" "$headers" "$n" "$gw" "$server" <<'EOF'
import http.client, json, os, sys, time
size, port, headers, n, gw, server = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
tick = os.sysconf("SC_CLK_TCK")
def cpu(pid):
    # utime + stime of every thread of the process, in ms.
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / tick
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
base = {"content-type": "application/json", "accept": "application/json, text/event-stream", **headers}
def exchange(method, params, session=None):
    h = dict(base)
    if session: h["mcp-session-id"] = session
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}), h)
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, (r.status, body[:300])
    return r.getheader("mcp-session-id"), body
def rpc(method, params, session=None):
    session, body = exchange(method, params, session)
    return session, json.loads(body)
session, _ = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}})
tools = 0
for _ in range(20):  # warm-up: every upstream session begun, every list taken
    _, answer = rpc("tools/list", {}, session)
    tools = len(answer["result"]["tools"])
gw0, up0 = cpu(gw), cpu(server)
times = []
size_bytes = 0
for _ in range(n):
    # The exchange only: the whole answer read, not parsed (parsing is the client's cost).
    t = time.perf_counter()
    _, body = exchange("tools/list", {}, session)
    times.append((time.perf_counter() - t) * 1000)
    size_bytes = len(body)
gw1, up1 = cpu(gw), cpu(server)
times.sort()
print(json.dumps({"connectors": size, "tools": tools, "bytes": size_bytes, "lists": n,
                  "p50_ms": round(times[n // 2], 3), "p95_ms": round(times[int(n * 0.95)], 3),
                  "gateway_cpu_ms_per_list": round((gw1 - gw0) / n, 3),
                  "upstream_cpu_ms_per_list": round((up1 - up0) / n, 3)}))
EOF
  kill "$gw" 2>/dev/null || true
}

one=$(run 1)
echo "$one"
lots=$(run "$many")
echo "$lots"
python3 -c 'import json,sys; a,b=json.loads(sys.argv[1]),json.loads(sys.argv[2]); print(json.dumps({"ratio_p50": round(b["p50_ms"]/a["p50_ms"],2)}))' "$one" "$lots"
