// Started by tests/tests/third_party_oauth.rs as `node sdk-oauth-server.mjs --oauth` with MCP_PORT
// and MCP_AUTH_PORT set: the MCP TypeScript SDK's example OAuth-protected streamable-HTTP server,
// run as shipped, with every listen() on a bare port bound to 127.0.0.1 (loopback-only.mjs is
// evaluated first, before the example starts its servers).
import './loopback-only.mjs';
import './node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js';
