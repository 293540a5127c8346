#!/usr/bin/env python3
"""The stdio bridge's start and per-call latency beside mcp-remote's, in one run, with nothing
between this script and each bridge (connect-memory.sh times around the MCP SDK's node client,
whose own start is in every figure there). Against the MCP SDK's example streamable-HTTP server
(tests/node, no OAuth) on loopback: each bridge is spawned RUNS times; "start" is spawn to the
`initialize` answer on its stdout, "call" each of CALLS `tools/call` round trips. Prints the
medians and the ratios; asserts nothing.

    cargo build --release --locked -p patchbay-cli --bin patchbay
    cargo build --profile bridge --locked -p patchbay-cli --bin patchbay-bridge
    tests/bench/connect-latency.py [RUNS=5] [CALLS=20]   (PATCHBAY=path/to/patchbay to pick a build;
                                                         default: the shipped layout, shipped-build.sh)
"""
import json, os, socket, statistics, subprocess, sys, tempfile, time

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 20
tmp = tempfile.mkdtemp()
patchbay = os.environ.get("PATCHBAY")
if not patchbay and os.access(f"{os.environ.get('CARGO_TARGET_DIR', root + '/target')}/release/patchbay", os.X_OK):
    patchbay = subprocess.run([f"{root}/tests/bench/shipped-build.sh", f"{tmp}/bin"], check=True,
                              stdout=subprocess.PIPE, text=True).stdout.strip()
if not patchbay and os.access(f"{root}/target/debug/patchbay", os.X_OK):
    patchbay = f"{root}/target/debug/patchbay"
node_dir = f"{root}/tests/node"
mcp_remote = f"{node_dir}/node_modules/.bin/mcp-remote"
if not patchbay or not os.access(mcp_remote, os.X_OK):
    sys.exit("needs a patchbay build (PATCHBAY=...) and tests/node's mcp-remote (scripts/setup.sh)")

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
server = subprocess.Popen(["node", "sdk-example-server.mjs", "simpleStreamableHttp.js"], cwd=node_dir,
                          env=dict(os.environ, MCP_PORT=str(port)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            break
        except OSError:
            time.sleep(0.1)
    url = f"http://localhost:{port}/mcp"
    catalog = f"{tmp}/catalog.json"
    with open(catalog, "w") as f:
        json.dump({"mcpServers": {"bench": {"type": "http", "url": url}}}, f)
    os.makedirs(f"{tmp}/home", exist_ok=True)
    env = dict(os.environ, PATCHBAY_DATA_DIR=f"{tmp}/data", HOME=f"{tmp}/home")
    bridges = {"patchbay connect": [patchbay, "--catalog", catalog, "connect", "bench"],
               "mcp-remote": [mcp_remote, url]}
    figures = {}
    for name, command in bridges.items():
        starts, round_trips = [], []
        for _ in range(runs):
            began = time.perf_counter()
            p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=env)

            def ask(message):
                p.stdin.write((json.dumps(message) + "\n").encode())
                p.stdin.flush()
                while True:
                    line = p.stdout.readline()
                    if not line:
                        sys.exit(f"{name} ended before answering")
                    if b'"id"' in line:
                        return line

            ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
            starts.append((time.perf_counter() - began) * 1000)
            p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            p.stdin.flush()
            for i in range(calls):
                sent = time.perf_counter()
                ask({"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
                     "params": {"name": "greet", "arguments": {"name": "bench"}}})
                round_trips.append((time.perf_counter() - sent) * 1000)
            p.stdin.close()
            p.wait(timeout=30)
        figures[name] = (statistics.median(starts), statistics.median(round_trips))
        print(f"{name:>16}: start {figures[name][0]:.1f} ms, tools/call p50 {figures[name][1]:.2f} ms"
              f"  ({runs} runs, {calls} calls each)")
    ours, theirs = figures["patchbay connect"], figures["mcp-remote"]
    print(f"patchbay connect / mcp-remote: start {ours[0] / theirs[0]:.2f}, call p50 {ours[1] / theirs[1]:.2f}")
finally:
    server.terminate()
