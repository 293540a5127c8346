// A real MCP client for the gateway (tests/tests/gateway.rs): the MCP TypeScript SDK's Client over
// its StreamableHTTPClientTransport, pointed at http://127.0.0.1:PORT/mcp/NAME with the gateway
// client's secret header, as Cursor or VS Code would be.
//
//   GATEWAY_HEADERS='{"Authorization":"Bearer pbgw_..."}' node gateway-client.mjs URL [--timeout-ms N] [--sse]
//
// `--sse`: the SDK's legacy SSEClientTransport instead (a connector that speaks HTTP+SSE).
// The headers come through the environment, never the command line. It connects (initialize +
// notifications/initialized), prints {"event":"connected","server":{...},"session":...}, then
// obeys one JSON command per stdin line, answering each with one JSON line on stdout:
//   {"op":"list"}                          -> {"ok":true,"tools":["greet",...]}
//   {"op":"call","name":N,"arguments":{}}  -> {"ok":true,"result":{...},"notifications":[ms,...]}
//                                             or {"ok":false,"error":"..."}; `notifications` are
//                                             the arrival times (ms since the call) of the logging
//                                             notifications received during the call.
//   {"op":"close"}                         -> terminates the session (DELETE) and exits.
// A failure to connect prints {"event":"failed","error":"..."} and exits 1.
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, ...rest] = process.argv.slice(2);
const timeoutAt = rest.indexOf('--timeout-ms');
// Every request is bounded: a gateway that hangs fails the test instead of stalling it.
const timeout = timeoutAt >= 0 ? Number(rest[timeoutAt + 1]) : 30000;
const headers = JSON.parse(process.env.GATEWAY_HEADERS || '{}');

const print = (value) => process.stdout.write(JSON.stringify(value) + '\n');
const transport = rest.includes('--sse')
  ? new SSEClientTransport(new URL(url), { requestInit: { headers } })
  : new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: 'patchbay-gateway-e2e', version: '1.0.0' });
let notified = [];
let callStarted = 0;
client.setNotificationHandler(LoggingMessageNotificationSchema, () => {
  notified.push(Date.now() - callStarted);
});

try {
  await client.connect(transport, { timeout });
} catch (error) {
  print({ event: 'failed', error: String(error?.message ?? error) });
  process.exit(1);
}
print({ event: 'connected', server: client.getServerVersion(), session: transport.sessionId ?? null });

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  try {
    if (command.op === 'list') {
      const { tools } = await client.listTools(undefined, { timeout });
      print({ ok: true, tools: tools.map((t) => t.name) });
    } else if (command.op === 'call') {
      notified = [];
      callStarted = Date.now();
      const result = await client.callTool(
        { name: command.name, arguments: command.arguments ?? {} },
        undefined,
        { timeout },
      );
      print({ ok: true, result, notifications: notified });
    } else if (command.op === 'close') {
      await transport.terminateSession?.().catch(() => {});
      await client.close();
      print({ ok: true });
      process.exit(0);
    } else {
      print({ ok: false, error: `unknown op ${command.op}` });
    }
  } catch (error) {
    print({ ok: false, error: String(error?.message ?? error) });
  }
}
