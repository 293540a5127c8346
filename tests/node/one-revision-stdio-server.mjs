// A stdio MCP server that speaks one protocol revision only, for the connection check's
// negotiation tests (src-tauri/crates/check/tests/negotiation.rs). No dependencies.
//
//   node one-revision-stdio-server.mjs 2026-07-28 LOG   server/discover and per-request _meta;
//                                                       `initialize` is refused (-32022)
//   node one-revision-stdio-server.mjs 2025-11-25 LOG   `initialize` first; anything else before
//                                                       it is "Method not found" (-32601), as the
//                                                       TypeScript SDK answers server/discover
//
// Each message's method is appended to LOG, one line each ("initialize <asked revision>" for
// initialize), so a test can say in what order the client asked.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const [revision, log] = process.argv.slice(2);
if (!["2026-07-28", "2025-11-25"].includes(revision) || !log) {
  console.error("usage: one-revision-stdio-server.mjs 2026-07-28|2025-11-25 LOG");
  process.exit(2);
}

const tools = {
  tools: [{ name: "lookup", description: "Looks a thing up", inputSchema: { type: "object" } }],
};
let initialized = false;

const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
const error = (id, code, message, data) => send({ id, error: { code, message, data } });

function modern(m) {
  if (m.method === "server/discover" || m.method === "tools/list" || m.method === "initialize") {
    const asked = m.params?._meta?.["io.modelcontextprotocol/protocolVersion"];
    if (asked !== "2026-07-28") {
      return error(m.id, -32022, "Unsupported protocol version", { supported: ["2026-07-28"] });
    }
  }
  switch (m.method) {
    case "server/discover":
      return send({
        id: m.id,
        result: {
          resultType: "complete",
          supportedVersions: ["2026-07-28"],
          capabilities: { tools: {} },
          ttlMs: 0,
          cacheScope: "public",
          _meta: { "io.modelcontextprotocol/serverInfo": { name: "stdio-2026", version: "2.0.0" } },
        },
      });
    case "tools/list":
      return send({ id: m.id, result: tools });
    default:
      return error(m.id, -32601, "Method not found");
  }
}

function legacy(m) {
  if (m.method === "initialize") {
    initialized = true;
    return send({
      id: m.id,
      result: {
        protocolVersion: "2025-11-25",
        capabilities: { tools: {} },
        serverInfo: { name: "stdio-2025", version: "1.2.3" },
      },
    });
  }
  if (initialized && m.method === "tools/list") {
    return send({ id: m.id, result: tools });
  }
  return error(m.id, -32601, "Method not found");
}

createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  const m = JSON.parse(line);
  if (!m.method) return;
  const asked = m.method === "initialize" ? ` ${m.params?.protocolVersion}` : "";
  appendFileSync(log, `${m.method}${asked}\n`);
  if (m.id === undefined) return;
  (revision === "2026-07-28" ? modern : legacy)(m);
});
