// Started by the connection-check tests and benchmark (tests/src/sdk_servers.rs) as
// `node sdk-example-server.mjs <example.js> [args...]` with MCP_PORT (and MCP_AUTH_PORT) set: one of
// the MCP TypeScript SDK's example servers, run as shipped, on 127.0.0.1 only (loopback-only.mjs)
// and on MCP_PORT even where the example hard-codes port 3000 (simpleSseServer.js does).
import net from 'node:net';
import './loopback-only.mjs';

const example = process.argv[2] ?? '';
if (!/^[A-Za-z0-9]+\.js$/.test(example)) {
  console.error(`usage: node sdk-example-server.mjs <example.js> [args...] (got ${JSON.stringify(example)})`);
  process.exit(2);
}
const port = Number(process.env.MCP_PORT);
if (port) {
  const listen = net.Server.prototype.listen;
  net.Server.prototype.listen = function (...args) {
    if (args[0] === 3000) args[0] = port;
    return listen.apply(this, args);
  };
}
// The example reads its own flags (`--oauth`) from argv, wherever they are.
await import(`./node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/${example}`);
