// A small MCP resource server for the conformance peers whose authorization server is not an
// MCP server itself (tests/tests/conformance.rs): the MCP TypeScript SDK's McpServer (one `echo`
// tool) over stateless streamable HTTP at /mcp, guarded by the SDK's requireBearerAuth with the
// token check the caller gives (a JWT checked against the issuer's keys, the authorization
// server library's own bearer validation, ...), and RFC 9728 protected-resource metadata naming
// the authorization server. Bound to 127.0.0.1.
import express from 'express';
import { McpServer } from './node_modules/@modelcontextprotocol/sdk/dist/esm/server/mcp.js';
import { StreamableHTTPServerTransport } from './node_modules/@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js';
import { requireBearerAuth } from './node_modules/@modelcontextprotocol/sdk/dist/esm/server/auth/middleware/bearerAuth.js';
import { InvalidTokenError, OAuthError } from './node_modules/@modelcontextprotocol/sdk/dist/esm/server/auth/errors.js';
import * as z from 'zod/v4';

/**
 * Starts the MCP endpoint http://127.0.0.1:<port>/mcp. `verifyAccessToken(token)` resolves to the
 * SDK's AuthInfo ({ token, clientId, scopes, expiresAt }) or throws: anything but the SDK's own
 * OAuth errors becomes invalid_token, a 401.
 */
export function startMcpFront({ port, issuer, scopesSupported = [], verifyAccessToken, name }) {
  const mcpUrl = `http://127.0.0.1:${port}/mcp`;
  const metadataUrl = `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`;
  const app = express();
  app.get('/.well-known/oauth-protected-resource/mcp', (req, res) => {
    res.json({
      resource: mcpUrl,
      authorization_servers: [issuer],
      scopes_supported: scopesSupported,
      bearer_methods_supported: ['header'],
    });
  });
  const verifier = {
    async verifyAccessToken(token) {
      try {
        return await verifyAccessToken(token);
      } catch (e) {
        throw e instanceof OAuthError ? e : new InvalidTokenError(String(e?.message ?? e));
      }
    },
  };
  const auth = requireBearerAuth({ verifier, resourceMetadataUrl: metadataUrl });
  app.post('/mcp', express.json(), auth, async (req, res) => {
    const server = new McpServer({ name, version: '1.0.0' });
    server.registerTool('echo', { description: 'Returns its argument.', inputSchema: { text: z.string() } },
      async ({ text }) => ({ content: [{ type: 'text', text }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  app.all('/mcp', auth, (req, res) => res.status(405).set('Allow', 'POST').end());
  return new Promise((resolve) => {
    const listener = app.listen(port, '127.0.0.1', () => resolve({ mcpUrl, listener }));
  });
}
