// Started by tests/tests/window_webdriver.rs as `node sdk-oauth-logged-server.mjs --oauth` with
// MCP_PORT and MCP_AUTH_PORT set: sdk-oauth-server.mjs (the MCP SDK's example OAuth-protected
// server, loopback only) that also prints one line per HTTP request it receives,
// "REQUEST <port> <METHOD> <path>" (the path without its query: no codes or state in the log),
// so a test can tell whether anything reached the authorization endpoint, and when.
import http from 'node:http';

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, ...args) {
  if (event === 'request') {
    const [req] = args;
    const port = this.address()?.port;
    console.log(`REQUEST ${port} ${req.method} ${String(req.url).split('?')[0]}`);
  }
  return emit.call(this, event, ...args);
};

await import('./sdk-oauth-server.mjs');
