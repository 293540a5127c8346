// A real MCP client for the gateway's aggregate endpoint (tests/tests/gateway_aggregate.rs): the MCP
// TypeScript SDK's Client over its StreamableHTTPClientTransport, pointed at
// http://127.0.0.1:PORT/mcp with the gateway client's secret header, as Cursor or VS Code would be.
//
//   GATEWAY_HEADERS='{"Authorization":"Bearer pbgw_..."}' node aggregate-client.mjs URL [--timeout-ms N]
//
// The headers come through the environment, never the command line. It connects (initialize +
// notifications/initialized), prints {"event":"connected","server":{...},"capabilities":{...},
// "session":...}, then obeys one JSON command per stdin line, answering each with one JSON line:
//   {"op":"list"}                            -> {"ok":true,"tools":[{"name","title","description"},...]}
//   {"op":"call","name":N,"arguments":{}}    -> {"ok":true,"result":{...},"ms":N} or {"ok":false,"error":"...","ms":N}
//   {"op":"prompts"}                         -> {"ok":true,"prompts":[{"name","description"},...]}
//   {"op":"prompt","name":N,"arguments":{}}  -> {"ok":true,"result":{...}}
//   {"op":"resources"}                       -> {"ok":true,"resources":[{"uri","name","description"},...]}
//   {"op":"read","uri":U}                    -> {"ok":true,"result":{...}}
//   {"op":"ping"}                            -> {"ok":true}
//   {"op":"close"}                           -> terminates the session (DELETE) and exits.
// Any failure of an op prints {"ok":false,"error":"..."}; a failure to connect prints
// {"event":"failed","error":"..."} and exits 1.
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, ...rest] = process.argv.slice(2);
const timeoutAt = rest.indexOf('--timeout-ms');
// Every request is bounded: a gateway that hangs fails the test instead of stalling it.
const timeout = timeoutAt >= 0 ? Number(rest[timeoutAt + 1]) : 30000;
const headers = JSON.parse(process.env.GATEWAY_HEADERS || '{}');

const print = (value) => process.stdout.write(JSON.stringify(value) + '\n');
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: 'patchbay-aggregate-e2e', version: '1.0.0' });

try {
  await client.connect(transport, { timeout });
} catch (error) {
  print({ event: 'failed', error: String(error?.message ?? error) });
  process.exit(1);
}
print({
  event: 'connected',
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  session: transport.sessionId ?? null,
});

const options = { timeout };
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  const started = Date.now();
  try {
    if (command.op === 'list') {
      const { tools } = await client.listTools(undefined, options);
      print({
        ok: true,
        tools: tools.map((t) => ({ name: t.name, title: t.title ?? null, description: t.description ?? null })),
      });
    } else if (command.op === 'call') {
      const result = await client.callTool(
        { name: command.name, arguments: command.arguments ?? {} },
        undefined,
        options,
      );
      print({ ok: true, result, ms: Date.now() - started });
    } else if (command.op === 'prompts') {
      const { prompts } = await client.listPrompts(undefined, options);
      print({ ok: true, prompts: prompts.map((p) => ({ name: p.name, description: p.description ?? null })) });
    } else if (command.op === 'prompt') {
      const result = await client.getPrompt({ name: command.name, arguments: command.arguments ?? {} }, options);
      print({ ok: true, result });
    } else if (command.op === 'resources') {
      const { resources } = await client.listResources(undefined, options);
      print({
        ok: true,
        resources: resources.map((r) => ({ uri: r.uri, name: r.name, description: r.description ?? null })),
      });
    } else if (command.op === 'read') {
      const result = await client.readResource({ uri: command.uri }, options);
      print({ ok: true, result });
    } else if (command.op === 'ping') {
      await client.ping(options);
      print({ ok: true });
    } else if (command.op === 'close') {
      await transport.terminateSession?.().catch(() => {});
      await client.close();
      print({ ok: true });
      process.exit(0);
    } else {
      print({ ok: false, error: `unknown op ${command.op}` });
    }
  } catch (error) {
    print({ ok: false, error: String(error?.message ?? error), ms: Date.now() - started });
  }
}
