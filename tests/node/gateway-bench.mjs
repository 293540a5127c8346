// The gateway's benchmark (run by tests/bench/gateway.sh): the MCP SDK's client calls a tool on
// the SDK's example server N times directly and N times through `patchbay gateway serve`, and
// prints the latency the gateway adds (p50/p95 of each, and their difference); then STREAMS
// clients at once, each in its own session through the one gateway, call a tool that streams
// COUNT notifications, and it counts what arrived (nothing may be dropped). Prints JSON.
//
//   GATEWAY_HEADERS='{"Authorization":"Bearer pbgw_..."}' \
//     node gateway-bench.mjs DIRECT_URL GATEWAY_URL [N] [STREAMS] [COUNT]
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [direct, gateway, n = '500', streams = '100', count = '10'] = process.argv.slice(2);
const headers = JSON.parse(process.env.GATEWAY_HEADERS || '{}');
const N = Number(n);
const STREAMS = Number(streams);
const COUNT = Number(count);
const timeout = 60000;

async function connect(url, withHeaders) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: withHeaders ? headers : {} },
  });
  const client = new Client({ name: 'patchbay-gateway-bench', version: '1.0.0' });
  await client.connect(transport, { timeout });
  return { client, transport };
}

function percentile(sorted, p) {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)];
}

async function latencies(url, withHeaders) {
  const { client, transport } = await connect(url, withHeaders);
  const call = () => client.callTool({ name: 'greet', arguments: { name: 'bench' } }, undefined, { timeout });
  for (let i = 0; i < 50; i++) await call(); // warm-up: connections, JIT
  const times = [];
  for (let i = 0; i < N; i++) {
    const start = process.hrtime.bigint();
    await call();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  await transport.terminateSession().catch(() => {});
  await client.close();
  times.sort((a, b) => a - b);
  return { p50_ms: percentile(times, 50), p95_ms: percentile(times, 95) };
}

const round = (x) => Math.round(x * 1000) / 1000;

// Interleave the two runs' order effects away: direct, gateway, direct, gateway; keep the better.
const directRuns = [];
const gatewayRuns = [];
for (let r = 0; r < 2; r++) {
  directRuns.push(await latencies(direct, false));
  gatewayRuns.push(await latencies(gateway, true));
}
const best = (runs, key) => Math.min(...runs.map((r) => r[key]));
const d50 = best(directRuns, 'p50_ms');
const d95 = best(directRuns, 'p95_ms');
const g50 = best(gatewayRuns, 'p50_ms');
const g95 = best(gatewayRuns, 'p95_ms');

// STREAMS sessions at once, each receiving COUNT notifications on its stream once it is open;
// directly, then through the gateway, so what the server or the client lose on their own is told
// apart.
async function concurrent(url, withHeaders) {
  const started = Date.now();
  const errors = [];
  const results = await Promise.all(
    Array.from({ length: STREAMS }, async () => {
      const { client, transport } = await connect(url, withHeaders);
      let closing = false;
      // Errors while the session is in use; aborting the GET stream on close is not one.
      client.onerror = (e) => {
        if (!closing) errors.push(String(e?.message ?? e).slice(0, 200));
      };
      const seen = new Set();
      // The example server sends these notifications on the session's own GET stream, and
      // drops them while that stream is not open yet (it opens after initialize, on its own).
      // So first wait until a one-notification call arrives: the stream is open.
      let opened = false;
      client.setNotificationHandler(LoggingMessageNotificationSchema, () => {
        opened = true;
      });
      const openBy = Date.now() + 30000;
      while (!opened && Date.now() < openBy) {
        await client.callTool({ name: 'start-notification-stream', arguments: { interval: 1, count: 1 } }, undefined, { timeout });
        const wait = Date.now() + 200;
        while (!opened && Date.now() < wait) await new Promise((r) => setTimeout(r, 5));
      }
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
        seen.add(String(n.params.data).match(/#(\d+)/)?.[1]);
      });
      const result = await client.callTool(
        { name: 'start-notification-stream', arguments: { interval: 20, count: COUNT } },
        undefined,
        { timeout },
      );
      // The last notification is written before the result, on the session's GET stream: let
      // that stream deliver it (bounded).
      const deadline = Date.now() + 5000;
      while (seen.size < COUNT && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      closing = true;
      await transport.terminateSession().catch(() => {});
      await client.close();
      const missing = [];
      for (let i = 1; i <= COUNT; i++) if (!seen.has(String(i))) missing.push(i);
      return { received: seen.size, ok: !result.isError, missing };
    }),
  );
  const received = results.reduce((s, r) => s + r.received, 0);
  const missingAt = {};
  for (const r of results) for (const i of r.missing) missingAt[i] = (missingAt[i] ?? 0) + 1;
  return {
    streams: STREAMS,
    notifications_expected: STREAMS * COUNT,
    notifications_received: received,
    calls_ok: results.filter((r) => r.ok).length,
    dropped: STREAMS * COUNT - received,
    dropped_by_notification_number: missingAt,
    transport_errors: errors.length,
    first_errors: [...new Set(errors)].slice(0, 5),
    elapsed_ms: Date.now() - started,
  };
}
const directStreams = await concurrent(direct, false);
const gatewayStreams = await concurrent(gateway, true);

console.log(
  JSON.stringify(
    {
      calls: N,
      direct: { p50_ms: round(d50), p95_ms: round(d95) },
      through_gateway: { p50_ms: round(g50), p95_ms: round(g95) },
      added_by_gateway: { p50_ms: round(g50 - d50), p95_ms: round(g95 - d95) },
      concurrent_streams_direct: directStreams,
      concurrent_streams_through_gateway: gatewayStreams,
    },
    null,
    2,
  ),
);
process.exit(0);
