#!/usr/bin/env bash
# The tray app's footprint, measured (issue 13, "Light all day"), with the framework's floor in the
# same run: builds the release app and tests/bench/floor (the smallest Tauri v2 tray app), then,
# under Xvfb in a private D-Bus session with an unlocked throwaway gnome-keyring and temp XDG dirs
# and HOME:
#   - idle, started with --background (tray only, no window) and settled: PSS (smaps_rollup) and
#     RSS of the process, and wakeups a second (voluntary context switches summed over its
#     threads, over IDLE seconds), for Patchbay and for the floor;
#   - the window: a plain second launch asks the running app for it (single instance); the app
#     logs "window: rows drawn N ms after it was asked for" (src-tauri/src/window.rs). Cold is the
#     first window of a fresh app (median of COLD apps). A closed window (WM_DELETE_WINDOW, as a
#     close button) is kept hidden for KEEP seconds (PATCHBAY_WINDOW_KEEP_SECS; the app's default
#     is 60): "again, kept" is a window opened again within that time (median of AGAIN), "again,
#     new" one opened after the kept one was released (median of AGAIN_NEW);
#   - after the window was released: WebKit's processes still there, and idle PSS, RSS and
#     wakeups again;
#   - a runtime's rename → adoption: `cargo bench -p patchbay-runtimes --bench adoption`.
# Prints a table (docs/benchmarks.md keeps it) and, with --json FILE, the figures as JSON.
#
#   tests/bench/footprint.sh [--no-build] [--debug] [--json FILE]
#   env: IDLE=30 (seconds of idle counted)  SETTLE=20 (seconds after start before counting)
#        AGAIN=5 (reopenings of a kept window)  AGAIN_NEW=3 (after its release)  KEEP=5
#        COLD=3 (first windows, each of a fresh app)  COLD_SETTLE=10
#        ADOPTION_SAMPLES=200  SKIP_ADOPTION=1
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"

build=1 profile=release json_out=
while [ $# -gt 0 ]; do
  case $1 in
    --no-build) build=0 ;;
    --debug) profile=debug ;;
    --json) json_out=$2; shift ;;
    *) echo "footprint: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
IDLE=${IDLE:-30} SETTLE=${SETTLE:-20} AGAIN=${AGAIN:-5} AGAIN_NEW=${AGAIN_NEW:-3} KEEP=${KEEP:-5}
COLD=${COLD:-3} COLD_SETTLE=${COLD_SETTLE:-10}
OPEN_IDLE=${OPEN_IDLE:-5}

if [ -z "${PATCHBAY_FOOTPRINT_INNER:-}" ]; then
  if [ "$build" = 1 ]; then
    npm --prefix ui run build # the app embeds ui/dist
    flag=--release; [ "$profile" = debug ] && flag=
    # tauri/custom-protocol: as the packaged app is built (scripts/package.sh), its UI served
    # from the binary.
    cargo build $flag --locked -p patchbay-app -p patchbay-tray-floor --features tauri/custom-protocol
  fi
  adoption=
  if [ -z "${SKIP_ADOPTION:-}" ]; then
    adoption=$(cargo bench --locked -p patchbay-runtimes --bench adoption 2>/dev/null | grep 'rename → adoption')
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/data" "$tmp/config" "$tmp/cache" "$tmp/runtime" "$tmp/home"
  chmod 700 "$tmp/runtime"
  export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" XDG_CACHE_HOME="$tmp/cache"
  export XDG_RUNTIME_DIR="$tmp/runtime" FOOTPRINT_TMP=$tmp FOOTPRINT_ADOPTION=$adoption
  export FOOTPRINT_PROFILE=$profile FOOTPRINT_JSON=$json_out PATCHBAY_FOOTPRINT_INNER=1
  exec keyctl session - dbus-run-session -- sh -c \
    'printf ci | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec xvfb-run -a -s "-screen 0 1280x800x24" bash "$0"' \
    "$0"
fi

tmp=$FOOTPRINT_TMP
target=${CARGO_TARGET_DIR:-$root/target}
app=$target/$FOOTPRINT_PROFILE/patchbay-app
floor=$target/$FOOTPRINT_PROFILE/patchbay-tray-floor
[ -x "$app" ] && [ -x "$floor" ] || { echo "footprint: build first (cargo build --release --locked -p patchbay-app -p patchbay-tray-floor --features tauri/custom-protocol)" >&2; exit 2; }

# Patchbay's data in the temp dir; a few connectors in use, so the window has rows.
export HOME=$tmp/home PATCHBAY_DATA_DIR=$tmp/patchbay PATCHBAY_DEFAULT_CATALOG=$root/catalog/mcp.json
mkdir -p "$PATCHBAY_DATA_DIR"
cat >"$PATCHBAY_DATA_DIR/mcp.json" <<'EOF'
{"mcpServers": {
  "files": {"type": "stdio", "command": "true"},
  "search": {"type": "stdio", "command": "true", "env": {"API_KEY": "${FOOTPRINT_SEARCH_KEY}"}},
  "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"}
}}
EOF
export LC_ALL=C.UTF-8  # GTK sets WM_NAME (what xdotool reads) only in a UTF-8 locale

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# Each of the process's threads: "tid voluntary-switches name" lines. A voluntary switch is a thread
# going to sleep, so each one ends a wakeup (preemptions, which a busy machine adds, are not).
switches() { # PID...
  local t
  for t in $(for p in "$@"; do echo /proc/"$p"/task/*; done); do
    awk -v t="${t##*/}" -v n="$(tr ' ' '_' <"$t/comm" 2>/dev/null)" \
      '/^voluntary_ctxt_switches/ {s += $2} END {print t, s + 0, n}' "$t/status" 2>/dev/null || true
  done
}
kib() { awk -v k="$2" '$1 == k":" {print $2}' "$1"; }
# The processes whose parent is $1, as "name(pid)".
children() {
  local s
  for s in /proc/[0-9]*/stat; do
    awk -v p="$1" '{ if ($4 == p) { sub(/^\(/, "", $2); sub(/\)$/, "", $2); printf "%s(%s) ", $2, $1 } }' "$s" 2>/dev/null || true
  done
}
# measure LABEL PID: one JSON object on stdout (pss/rss in KiB, wakeups a second over IDLE s).
measure() { # LABEL PID [MORE PIDS (a process tree, summed)]
  local label=$1 pid=$2 pss=0 rss=0 p
  shift
  switches "$@" >"$tmp/$label.before"
  sleep "$IDLE"
  switches "$@" >"$tmp/$label.after"
  for p in "$@"; do
    pss=$((pss + $(kib /proc/"$p"/smaps_rollup Pss)))
    rss=$((rss + $(kib /proc/"$p"/status VmRSS)))
  done
  local kids_pss=0 c
  for c in $(children "$pid" | grep -o '([0-9]*)' | tr -d '()'); do
    kids_pss=$((kids_pss + $(kib /proc/"$c"/smaps_rollup Pss 2>/dev/null || echo 0)))
  done
  # Wakeups: each thread's switches since the first reading (all of a thread started since), over
  # the threads alive at the end.
  python3 - "$label" "$pss" "$rss" "$IDLE" "$(children "$pid")" "$tmp/$label.before" "$tmp/$label.after" "$kids_pss" <<'PY'
import json, sys
label, pss, rss, idle, children, before, after, kids_pss = sys.argv[1:]
rows = lambda f: [l.split() + [""] for l in open(f) if l.strip()]
b = {r[0]: int(r[1]) for r in rows(before)}
a = {r[0]: (int(r[1]), r[2]) for r in rows(after)}
woke = {t: n - b.get(t, 0) for t, (n, _) in a.items()}
names = {t: name for t, (_, name) in a.items()}
print(json.dumps({"label": label, "pss_kib": int(pss), "rss_kib": int(rss), "threads": len(a),
                  "wakeups_per_s": round(sum(woke.values()) / float(idle), 2),
                  "busiest_threads": [f"{names[t]}:{n}" for t, n in sorted(woke.items(), key=lambda x: -x[1])[:4] if n],
                  "children": children.split(), "children_pss_kib": int(kids_pss or 0)}))
PY
}
wait_log() { # FILE PATTERN SECONDS
  local deadline=$((SECONDS + $3))
  until grep -q "$2" "$1" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || { echo "footprint: no '$2' in $1 after $3 s:" >&2; tail -20 "$1" >&2; return 1; }
    sleep 0.05
  done
}
# Its shown Connectors windows (a closed one is kept hidden for a while).
app_windows() { xdotool search --all --onlyvisible --pid "$1" --name 'Connectors$' 2>/dev/null || true; }
web_processes() { children "$1" | tr ' ' '\n' | grep -c '^WebKit' || true; }

# A desktop panel (tests/python/tray_panel.py: a StatusNotifierWatcher with a host, and a
# notification server), as on a desktop that shows tray icons: without one, the app opens its
# window at start even with --background (never invisible).
python=python3; [ -x /usr/bin/python3 ] && python=/usr/bin/python3
mkfifo "$tmp/panel.in"
"$python" "$root/tests/python/tray_panel.py" --notifications <"$tmp/panel.in" >"$tmp/panel.out" 2>"$tmp/panel.err" &
pids+=("$!")
exec 7>"$tmp/panel.in" # held open: the panel runs until this script ends
wait_log "$tmp/panel.out" '"ready"' 10

# --- the floor ---------------------------------------------------------------------------------
"$floor" >"$tmp/floor.log" 2>&1 &
floor_pid=$!; pids+=("$floor_pid")
sleep "$SETTLE"
measure floor_idle "$floor_pid" >"$tmp/rows"
kill "$floor_pid"; wait "$floor_pid" 2>/dev/null || true

# --- Patchbay, --background ----------------------------------------------------------------------
log=$tmp/app.log
RUST_LOG=info PATCHBAY_WINDOW_KEEP_SECS=$KEEP "$app" --background >"$log" 2>&1 &
app_pid=$!; pids+=("$app_pid")
sleep "$SETTLE"
[ -z "$(app_windows "$app_pid")" ] || { echo "footprint: --background opened a window" >&2; exit 1; }
measure patchbay_idle "$app_pid" >>"$tmp/rows"

# --- the window: cold, again while kept, again after its release -------------------------------
open_window() { # N: the Nth window shown; prints its rows-drawn ms
  local n=$1
  "$app" >>"$tmp/second.log" 2>&1 # a plain second launch: the running app shows its window
  local deadline=$((SECONDS + 30))
  until [ "$(grep -c 'window: rows drawn' "$log")" -ge "$n" ]; do
    [ $SECONDS -lt $deadline ] || { echo "footprint: window $n: no rows drawn" >&2; tail -20 "$log" >&2; exit 1; }
    sleep 0.05
  done
  grep 'window: rows drawn' "$log" | sed -n "${n}p" | sed 's/.*rows drawn \([0-9]*\) ms.*/\1/'
}
close_window() {
  local w deadline=$((SECONDS + 15))
  until w=$(app_windows "$app_pid") && [ -n "$w" ]; do
    [ $SECONDS -lt $deadline ] || { echo "footprint: no window to close" >&2; exit 1; }
    sleep 0.05
  done
  for id in $w; do python3 "$root/tests/bench/x11-close.py" "$id"; done
  until [ -z "$(app_windows "$app_pid")" ]; do
    [ $SECONDS -lt $deadline ] || { echo "footprint: the window did not close" >&2; exit 1; }
    sleep 0.05
  done
}
released() { # wait for the Nth release of a kept window, and for WebKit's processes to go
  local n=$1 deadline=$((SECONDS + KEEP + 15))
  until [ "$(grep -c 'releasing its web view' "$log")" -ge "$n" ]; do
    [ $SECONDS -lt $deadline ] || { echo "footprint: the kept window was not released" >&2; tail -20 "$log" >&2; exit 1; }
    sleep 0.1
  done
  deadline=$((SECONDS + 10))
  while [ "$(web_processes "$app_pid")" -gt 0 ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
}
shown=1
cold=$(open_window $shown)
IDLE=$OPEN_IDLE measure patchbay_window_open "$app_pid" >>"$tmp/rows"
close_window
again=()
for _ in $(seq 1 "$AGAIN"); do
  shown=$((shown + 1)); again+=("$(open_window $shown)")
  close_window
done
released 1
again_new=()
for i in $(seq 1 "$AGAIN_NEW"); do
  shown=$((shown + 1)); again_new+=("$(open_window $shown)")
  close_window
  released $((i + 1))
done
grep -c 'rows drawn .*(again, kept)' "$log" | grep -qx "$AGAIN" \
  || { echo "footprint: expected $AGAIN kept reopenings:" >&2; grep 'rows drawn' "$log" >&2; exit 1; }
echo "the app's window timings (src-tauri/src/window.rs):"
grep -o 'window: \(created in\|rows drawn\).*' "$log" | sed 's/^/  /'
sleep "$SETTLE"
measure patchbay_idle_after_window "$app_pid" >>"$tmp/rows"

# --- more first windows: each of a fresh app, settled for COLD_SETTLE s (one sample is noise) ---
colds=("$cold")
kill "$app_pid"; wait "$app_pid" 2>/dev/null || true
for i in $(seq 2 "$COLD"); do
  log=$tmp/app-cold$i.log
  RUST_LOG=info "$app" --background >"$log" 2>&1 &
  app_pid=$!; pids+=("$app_pid")
  sleep "$COLD_SETTLE"
  colds+=("$(open_window 1)")
  grep -o 'window: \(created in\|rows drawn\).*' "$log" | sed 's/^/  /'
  kill "$app_pid"; wait "$app_pid" 2>/dev/null || true
done

# --- mcp-remote 0.15.1, idle with one server (what users run today), when tests/node has it ---
node_dir=$root/tests/node
if [ -z "${SKIP_MCP_REMOTE:-}" ] && command -v node >/dev/null && [ -x "$node_dir/node_modules/.bin/mcp-remote" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  (cd "$node_dir" && MCP_PORT=$port exec node sdk-example-server.mjs simpleStreamableHttp.js >"$tmp/server.log" 2>&1) &
  pids+=("$!")
  for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  coproc CLIENT { cd "$node_dir" && exec node connect-client.mjs --timeout-ms 600000 -- "$node_dir/node_modules/.bin/mcp-remote" "http://localhost:$port/mcp" 2>>"$tmp/mcp-remote.stderr"; }
  pids+=("$CLIENT_PID")
  ask() {
    [ -n "${1:-}" ] && printf '%s\n' "$1" >&"${CLIENT[1]}"
    IFS= read -r -t 60 line <&"${CLIENT[0]}" || { echo "footprint: mcp-remote: no answer" >&2; cat "$tmp/mcp-remote.stderr" >&2; exit 1; }
  }
  ask ""
  ask '{"op":"list"}'
  sleep "$SETTLE"
  ask '{"op":"memory"}'
  tree=$(printf '%s' "$line" | python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["pids"])))')
  # shellcheck disable=SC2086
  measure mcp_remote_idle $tree >>"$tmp/rows"
  ask '{"op":"close"}'
fi

loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$tmp/rows" "${colds[*]}" "${again[*]}" "$FOOTPRINT_ADOPTION" "$FOOTPRINT_JSON" "$IDLE" "$loadavg" "$(nproc)" "${again_new[*]}" <<'EOF'
import json, re, statistics, sys
rows = {r["label"]: r for r in map(json.loads, open(sys.argv[1]))}
colds = [int(x) for x in sys.argv[2].split()]
cold = statistics.median(colds)
again = [int(x) for x in sys.argv[3].split()]
again_new = [int(x) for x in sys.argv[9].split()]
adoption = sys.argv[4]
m = re.search(r"median ([0-9.]+) ms, p95 ([0-9.]+) ms", adoption)
mib = lambda k: round(k / 1024, 1)
report = {
    "idle_seconds": int(sys.argv[6]),
    "patchbay_idle": rows["patchbay_idle"],
    "floor_idle": rows["floor_idle"],
    "patchbay_idle_after_window": rows["patchbay_idle_after_window"],
    "window_cold_ms": cold,
    "window_cold_all_ms": colds,
    "window_again_ms": again,
    "window_again_median_ms": statistics.median(again) if again else None,
    "window_again_new_ms": again_new,
    "window_again_new_median_ms": statistics.median(again_new) if again_new else None,
    "adoption": adoption or None,
    "adoption_p50_ms": float(m.group(1)) if m else None,
    "adoption_p95_ms": float(m.group(2)) if m else None,
}
report["load_average"] = sys.argv[7]
report["cpus"] = int(sys.argv[8])
print(f"load average at the end {sys.argv[7]} on {sys.argv[8]} CPUs; idle counted over {sys.argv[6]} s")
print(f"{'':28} {'PSS MiB':>8} {'RSS MiB':>8} {'wakeups/s':>10} {'children PSS MiB':>17}  child processes")
for label in ("patchbay_idle", "patchbay_window_open", "patchbay_idle_after_window", "floor_idle", "mcp_remote_idle"):
    r = rows.get(label)
    if not r:
        continue
    report[label] = r
    print(f"{label:28} {mib(r['pss_kib']):>8} {mib(r['rss_kib']):>8} {r['wakeups_per_s']:>10} {mib(r['children_pss_kib']):>17}  {' '.join(r['children']) or '-'}")
    if r["busiest_threads"]:
        print(f"{'':28} busiest threads (switches in the window): {' '.join(r['busiest_threads'])}")
print(f"window asked for → rows drawn: cold {cold} ms median of {colds}; again, kept {report['window_again_median_ms']} ms median of {again}; "
      f"again, new (after the kept one's release) {report['window_again_new_median_ms']} ms median of {again_new}")
if adoption:
    print(adoption)
if sys.argv[5]:
    json.dump(report, open(sys.argv[5], "w"), indent=2)
EOF
