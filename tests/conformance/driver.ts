/**
 * The conformance framework's client, with Patchbay as the client under test.
 *
 * The framework runs `client.sh URL` (which runs this file, bundled) with the scenario in
 * MCP_CONFORMANCE_SCENARIO, the revision in MCP_CONFORMANCE_PROTOCOL_VERSION (the 0.2 runner;
 * 0.1.x sets none: 2025-11-25) and scenario data in MCP_CONFORMANCE_CONTEXT. This driver:
 *   1. writes a throwaway data dir holding a one-connector catalog for URL (and, for
 *      auth/pre-registration, the pre-registered client in its oauth-clients.json);
 *   2. spawns `patchbay connect conformance` and speaks MCP over its stdio: through the MCP
 *      TypeScript SDK's Client on the 2025-11-25 wire, as raw JSON-RPC lines carrying the
 *      per-request `_meta` on the 2026-07-28 wire (the SDK here cannot speak it);
 *   3. when Patchbay answers that the connector needs authorization, runs
 *      `patchbay authorize conformance` (BROWSER follows the framework's auto-approving 302 to
 *      the loopback receiver, as a person clicking Approve) and starts the session again.
 * It does what the framework's everything-client does per scenario, nothing more: every HTTP
 * detail (headers, OAuth, retries) is Patchbay's, which is what the checks measure.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  ElicitRequestSchema,
  McpError,
  ResultSchema,
  type JSONRPCMessage
} from '@modelcontextprotocol/sdk/types.js';

const NAME = 'conformance';
const STATELESS = ['2026-07-28'];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const version = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION ?? '2025-11-25';
const stateless = STATELESS.includes(version);
const bin = process.env.PATCHBAY_BIN ?? 'patchbay';
const port = process.env.PATCHBAY_CONFORMANCE_PORT ?? '3118';
// Bounds the browser wait of `patchbay authorize` (10 minutes of its own) within the scenario's.
const AUTHORIZE_MS = 12_000;
// A user re-authorizes when told to; a third "authorize again" is a loop, not a flow.
const MAX_AUTHORIZATIONS = 2;

function log(...args: unknown[]): void {
  console.error('[driver]', ...args);
}

function context(): Record<string, any> {
  const raw = process.env.MCP_CONFORMANCE_CONTEXT;
  return raw ? JSON.parse(raw) : {};
}

const url = process.argv[process.argv.length - 1];
const dataDir = mkdtempSync(join(tmpdir(), 'patchbay-conformance-'));
const children = new Set<ChildProcess>();
const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  PATCHBAY_DATA_DIR: dataDir
};
delete env.PATCHBAY_DEFAULT_CATALOG;
const catalog = join(dataDir, 'catalog.json');
writeFileSync(
  catalog,
  JSON.stringify({ mcpServers: { [NAME]: { type: 'http', url } } })
);
if (scenario === 'auth/pre-registration') {
  const ctx = context();
  writeFileSync(
    join(dataDir, 'oauth-clients.json'),
    JSON.stringify({
      [NAME]: { clientId: ctx.client_id, clientSecret: ctx.client_secret }
    })
  );
}

function cleanup(): void {
  for (const c of children) c.kill('SIGTERM');
  rmSync(dataDir, { recursive: true, force: true });
}
// The framework kills the client at its timeout: take Patchbay's processes along.
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.on(sig, () => {
    cleanup();
    process.exit(1);
  });
}

/** `patchbay authorize`: resolves when it succeeded, throws with its output otherwise. */
async function authorize(): Promise<void> {
  log(`patchbay authorize ${NAME} --port ${port}`);
  const child = spawn(
    bin,
    ['--catalog', catalog, 'authorize', NAME, '--port', port],
    { env, stdio: ['ignore', 'pipe', 'pipe'] }
  );
  children.add(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const timer = setTimeout(() => child.kill('SIGTERM'), AUTHORIZE_MS);
  const code = await new Promise<number | null>((resolve) =>
    child.on('close', resolve)
  );
  clearTimeout(timer);
  children.delete(child);
  log(`authorize exited ${code}:\n${output.trim()}`);
  if (code !== 0) throw new Error(`patchbay authorize failed (${code})`);
}

function transport(): StdioClientTransport {
  return new StdioClientTransport({
    command: bin,
    args: ['--catalog', catalog, 'connect', NAME],
    env,
    stderr: 'inherit'
  });
}

function needsAuthorization(e: unknown): boolean {
  const data =
    e instanceof McpError ? (e.data as any) : (e as any)?.rpcError?.data;
  return data?.reason === 'needs_authorization';
}

/** Runs one session; authorizes and starts over when Patchbay says the connector needs it. */
async function withAuthorization(session: () => Promise<void>): Promise<void> {
  for (let round = 0; ; round++) {
    try {
      return await session();
    } catch (e) {
      if (!needsAuthorization(e) || round >= MAX_AUTHORIZATIONS) throw e;
      log(`Patchbay says the connector needs authorization: ${String(e)}`);
      await authorize();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The 2025-11-25 wire: the SDK's Client over Patchbay's stdio.

async function stateful(
  body: (client: Client) => Promise<void>,
  capabilities: Record<string, unknown> = {}
): Promise<void> {
  await withAuthorization(async () => {
    const client = new Client(
      { name: 'patchbay-conformance-driver', version: '1.0.0' },
      { capabilities }
    );
    if ('elicitation' in capabilities) {
      // Empty content: the SDK fills in the schema's defaults (SEP-1034).
      client.setRequestHandler(ElicitRequestSchema, async () => ({
        action: 'accept' as const,
        content: {}
      }));
    }
    const t = transport();
    try {
      await client.connect(t);
      await body(client);
    } finally {
      await t.close();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// The 2026-07-28 wire: no initialize; every request carries `_meta` with the revision, the
// client's info and capabilities. Sent as JSON-RPC lines on Patchbay's stdin.

class RpcError extends Error {
  constructor(
    readonly method: string,
    readonly rpcError: { code: number; message: string; data?: any }
  ) {
    super(`${method}: ${rpcError.code} ${rpcError.message}`);
  }
}

class Stateless {
  private t = transport();
  private nextId = 1;
  private pending = new Map<
    number,
    { resolve: (m: any) => void; reject: (e: Error) => void }
  >();
  activeVersion = version;

  async start(): Promise<void> {
    this.t.onmessage = (m: JSONRPCMessage) => {
      const msg = m as any;
      if (msg.id !== undefined && !('method' in msg)) {
        const p = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        p?.resolve(msg);
      }
    };
    this.t.onclose = () => {
      for (const p of this.pending.values())
        p.reject(new Error('patchbay connect closed its stdout'));
      this.pending.clear();
    };
    await this.t.start();
  }

  close(): Promise<void> {
    return this.t.close();
  }

  private send(method: string, params: any, v: string): Promise<any> {
    const id = this.nextId++;
    const message = {
      jsonrpc: '2.0' as const,
      id,
      method,
      params: {
        ...params,
        _meta: {
          ...(params?._meta ?? {}),
          'io.modelcontextprotocol/protocolVersion': v,
          'io.modelcontextprotocol/clientInfo': {
            name: 'patchbay-conformance-driver',
            version: '1.0.0'
          },
          'io.modelcontextprotocol/clientCapabilities': { elicitation: {} }
        }
      }
    };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.t.send(message as JSONRPCMessage).catch(reject);
    });
  }

  /** One request; an UnsupportedProtocolVersion error (-32022) is retried once with a revision
   * the server lists, as the spec says a client does. */
  async request(method: string, params: any = {}): Promise<any> {
    let answer = await this.send(method, params, this.activeVersion);
    if (answer.error?.code === -32022) {
      const supported: string[] = answer.error.data?.supported ?? [];
      const pick = supported.find((s) => STATELESS.includes(s));
      if (pick) {
        this.activeVersion = pick;
        answer = await this.send(method, params, pick);
      }
    }
    if (answer.error) throw new RpcError(method, answer.error);
    return answer.result;
  }
}

async function statelessSession(
  body: (s: Stateless) => Promise<void>
): Promise<void> {
  await withAuthorization(async () => {
    const s = new Stateless();
    await s.start();
    try {
      await body(s);
    } finally {
      await s.close();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// One session API over both wires, for the scenarios that exist on both.

interface Session {
  listTools(): Promise<any[]>;
  callTool(name: string, args: Record<string, unknown>): Promise<any>;
  request(method: string, params?: any): Promise<any>;
}

async function session(body: (s: Session) => Promise<void>): Promise<void> {
  if (stateless) {
    await statelessSession(async (s) => {
      await body({
        listTools: async () => (await s.request('tools/list')).tools ?? [],
        callTool: (name, args) =>
          s.request('tools/call', { name, arguments: args }),
        request: (method, params) => s.request(method, params)
      });
    });
  } else {
    await stateful(async (c) => {
      await body({
        listTools: async () => (await c.listTools()).tools,
        callTool: (name, args) => c.callTool({ name, arguments: args }),
        request: (method, params) => c.request({ method, params } as any, ResultSchema)
      });
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Per scenario: what the framework's everything-client does.

type Handler = () => Promise<void>;
const handlers: Record<string, Handler> = {};

const basic: Handler = () =>
  session(async (s) => {
    const tools = await s.listTools();
    if (tools[0]) await s.callTool(tools[0].name, { a: 2, b: 3 });
  });
handlers['initialize'] = basic;
handlers['tools_call'] = basic;

handlers['json-schema-ref-no-deref'] = () =>
  session(async (s) => {
    await s.listTools();
  });

handlers['json-schema-2020-12-preservation'] = () =>
  session(async (s) => {
    const focal = (await s.listTools()).find(
      (t) => t.name === 'json_schema_2020_12_tool'
    );
    if (!focal) throw new Error('json_schema_2020_12_tool not listed');
    await s.callTool('json_schema_echo', { schema: focal.inputSchema });
  });

handlers['elicitation-sep1034-client-defaults'] = () =>
  stateful(
    async (c) => {
      await c.listTools();
      await c.callTool({ name: 'test_client_elicitation_defaults', arguments: {} });
    },
    // (The SDK reads form.applyDefaults; the everything-client's top-level flag is ignored.)
    { elicitation: { form: { applyDefaults: true } } }
  );

handlers['sse-retry'] = () =>
  session(async (s) => {
    await s.callTool('test_reconnection', {});
  });

// server/discover is optional for a client; every request still carries the header and _meta.
handlers['request-metadata'] = () =>
  statelessSession(async (s) => {
    await s.request('server/discover');
    await s.request('tools/list');
  });

handlers['http-standard-headers'] = () =>
  session(async (s) => {
    for (const tool of await s.listTools()) await s.callTool(tool.name, {});
    const resources = (await s.request('resources/list')).resources ?? [];
    if (resources[0]) await s.request('resources/read', { uri: resources[0].uri });
    const prompts = (await s.request('prompts/list')).prompts ?? [];
    if (prompts[0]) await s.request('prompts/get', { name: prompts[0].name });
  });

handlers['http-custom-headers'] = () =>
  session(async (s) => {
    await s.listTools();
    for (const call of context().toolCalls ?? [])
      await s.callTool(call.name, call.arguments);
  });

// Patchbay should drop the tools whose x-mcp-header is invalid from the list; the driver calls
// whatever it is given.
handlers['http-invalid-tool-headers'] = () =>
  session(async (s) => {
    for (const tool of await s.listTools()) await s.callTool(tool.name, {});
  });

// SEP-2322: an input_required result is answered (inputResponses) and its requestState echoed.
function fulfil(inputRequests: Record<string, any>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, req] of Object.entries(inputRequests ?? {})) {
    if (req.method === 'elicitation/create')
      out[key] = { action: 'accept', content: { confirmed: true } };
  }
  return out;
}
handlers['sep-2322-client-request-state'] = () =>
  session(async (s) => {
    await s.listTools();
    const r1 = await s.callTool('test_mrtr_echo_state', {});
    if (r1?.resultType === 'input_required') {
      // An unrelated call in between must not carry the first one's state.
      await s.callTool('test_mrtr_unrelated', {});
      await s.request('tools/call', {
        name: 'test_mrtr_echo_state',
        arguments: {},
        inputResponses: fulfil(r1.inputRequests),
        ...(r1.requestState !== undefined ? { requestState: r1.requestState } : {})
      });
    }
    const r2 = await s.callTool('test_mrtr_no_state', {});
    if (r2?.resultType === 'input_required') {
      await s.request('tools/call', {
        name: 'test_mrtr_no_state',
        arguments: {},
        inputResponses: fulfil(r2.inputRequests)
      });
    }
    await s.callTool('test_mrtr_no_result_type', {});
  });

// Authorization: the same session; Patchbay does discovery, registration, consent and tokens.
const authorized: Handler = () =>
  session(async (s) => {
    await s.listTools();
    await s.callTool('test-tool', {});
  });
handlers['auth/pre-registration'] = () =>
  session(async (s) => {
    await s.listTools();
  });

async function main(): Promise<void> {
  const handler =
    handlers[scenario] ?? (scenario.startsWith('auth/') ? authorized : undefined);
  if (!handler) throw new Error(`no behaviour for scenario ${scenario}`);
  log(`${scenario} at ${version} against ${url}, ${bin}`);
  await handler();
}

main().then(
  () => {
    cleanup();
    process.exit(0);
  },
  (e) => {
    log('failed:', e instanceof Error ? e.message : e);
    cleanup();
    process.exit(1);
  }
);
