// A real MCP client for `patchbay connect` (tests/tests/connect.rs) and for the memory benchmark
// beside mcp-remote (tests/bench/connect-memory.sh): the MCP TypeScript SDK's Client over its
// StdioClientTransport, which spawns the bridge given after `--` as an MCP host does.
//
//   node connect-client.mjs [--timeout-ms N] -- <command> [args...]
//
// It connects (initialize + notifications/initialized), prints one JSON line
// {"event":"connected","pid":...,"server":{...}}, then obeys one JSON command per stdin line and
// answers each with one JSON line on stdout:
//   {"op":"list"}                          -> {"ok":true,"tools":["greet",...]}
//   {"op":"call","name":N,"arguments":{}}  -> {"ok":true,"result":{...}} or {"ok":false,"error":{code,message}}
//   {"op":"memory"}                        -> the bridge's process tree, summed from /proc: {"ok":true,
//                                             "pids":[...],"rss_kib":VmRSS,"hwm_kib":VmHWM (peak),"pss_kib":Pss|null}
//   {"op":"close"}                         -> closes the transport (stdin EOF to the bridge), then
//                                             {"ok":true,"exit":...,"protocol_errors":[...]} and exits.
// `protocol_errors` are the transport's errors: a bridge's stdout line that is not JSON-RPC lands
// there (the SDK's ReadBuffer rejects it), so the tests can require none.
// The bridge's stderr is inherited (the test captures it with ours).
import { createInterface } from 'node:readline';
import { readFileSync, readdirSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
if (dash < 0 || dash === argv.length - 1) {
  console.error('usage: node connect-client.mjs [--timeout-ms N] -- <command> [args...]');
  process.exit(2);
}
const options = argv.slice(0, dash);
const [command, ...args] = argv.slice(dash + 1);
const timeoutAt = options.indexOf('--timeout-ms');
// Every request is bounded: a bridge that hangs fails the test instead of stalling it.
const timeout = timeoutAt >= 0 ? Number(options[timeoutAt + 1]) : 30000;

const protocolErrors = [];
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
const client = new Client({ name: 'patchbay-connect-e2e', version: '1.0.0' });
client.onerror = (error) => protocolErrors.push(String(error?.message ?? error));
let exited = null;

const print = (value) => process.stdout.write(JSON.stringify(value) + '\n');

// VmRSS of each process in the tree under `root` (from /proc), and PSS from smaps_rollup.
function processTree(root) {
  const pids = [root];
  for (let i = 0; i < pids.length; i++) {
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${pids[i]}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        const children = readFileSync(`/proc/${pids[i]}/task/${task}/children`, 'utf8').trim();
        if (children) pids.push(...children.split(/\s+/).map(Number));
      } catch {
        // The task ended meanwhile.
      }
    }
  }
  return pids;
}

function field(text, name) {
  const match = text.match(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm'));
  return match ? Number(match[1]) : null;
}

function memory(root) {
  const pids = processTree(root);
  let rss = 0;
  let hwm = 0;
  let pss = 0;
  let pssKnown = true;
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      rss += field(status, 'VmRSS') ?? 0;
      hwm += field(status, 'VmHWM') ?? 0;
    } catch {
      continue;
    }
    try {
      const value = field(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'), 'Pss');
      if (value === null) pssKnown = false;
      else pss += value;
    } catch {
      pssKnown = false;
    }
  }
  return { pids, rss_kib: rss, hwm_kib: hwm, pss_kib: pssKnown ? pss : null };
}

function failure(error) {
  return { ok: false, error: { code: error?.code ?? null, message: String(error?.message ?? error) } };
}

try {
  await client.connect(transport, { timeout });
} catch (error) {
  print({ event: 'connect_failed', ...failure(error), protocol_errors: protocolErrors });
  await transport.close().catch(() => {});
  process.exit(1);
}
const pid = transport.pid;
transport.onclose = ((previous) => () => {
  exited = true;
  previous?.();
})(transport.onclose);
print({ event: 'connected', pid, server: client.getServerVersion() ?? null });

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  let command;
  try {
    command = JSON.parse(line);
  } catch (error) {
    print(failure(`not a JSON command: ${error}`));
    continue;
  }
  const started = Date.now();
  try {
    if (command.op === 'list') {
      const listed = await client.listTools({}, { timeout });
      print({ ok: true, tools: listed.tools.map((t) => t.name), ms: Date.now() - started });
    } else if (command.op === 'call') {
      const result = await client.callTool(
        { name: command.name, arguments: command.arguments ?? {} },
        undefined,
        { timeout },
      );
      print({ ok: true, result, ms: Date.now() - started });
    } else if (command.op === 'memory') {
      print({ ok: true, ...memory(pid) });
    } else if (command.op === 'close') {
      await client.close();
      print({ ok: true, exit: exited, protocol_errors: protocolErrors });
      process.exit(0);
    } else {
      print(failure(`unknown op ${JSON.stringify(command.op)}`));
    }
  } catch (error) {
    print({ ...failure(error), ms: Date.now() - started });
  }
}
await client.close().catch(() => {});
