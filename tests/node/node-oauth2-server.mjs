// @node-oauth/oauth2-server (npm), the framework-agnostic OAuth 2.0 server library, as an MCP
// authorization server for tests/tests/conformance.rs. The library parses, checks and answers
// /authorize, /token (authorization code with PKCE, refresh with rotation: a new refresh token on
// every refresh and the old one revoked through the model) and guards the MCP endpoint with its
// own bearer check (`authenticate`); only the in-memory model and an approving user are ours.
// It has no metadata, no dynamic registration and no revocation endpoint: Patchbay uses a
// pre-registered confidential client from the user's oauth-clients.json with both endpoints,
// which skips discovery.
//
// Usage: node node-oauth2-server.mjs AS_PORT MCP_PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI;
// prints "READY <mcp url>" once both listen. Events on stdout: "REFRESHED". Loopback only.
import './loopback-only.mjs';
import express from 'express';
import OAuth2Server from '@node-oauth/oauth2-server';
import { startMcpFront } from './mcp-front.mjs';

const [asPortText, mcpPortText, clientId, clientSecret, redirectUri] = process.argv.slice(2);
const asPort = Number(asPortText);
const mcpPort = Number(mcpPortText);
const issuer = `http://127.0.0.1:${asPort}`;
const { Request, Response } = OAuth2Server;

const client = {
  id: clientId,
  redirectUris: [redirectUri],
  grants: ['authorization_code', 'refresh_token'],
  accessTokenLifetime: 3600,
};
const user = { id: 'conformance-user' };
const codes = new Map();
const accessTokens = new Map();
const refreshTokens = new Map();

const model = {
  async getClient(id, secret) {
    if (id !== clientId) return null;
    // The token endpoint authenticates; /authorize looks the client up without a secret.
    if (secret !== null && secret !== undefined && secret !== clientSecret) return null;
    return client;
  },
  async saveAuthorizationCode(code, c, u) {
    const saved = { ...code, client: c, user: u };
    codes.set(code.authorizationCode, saved);
    return saved;
  },
  async getAuthorizationCode(code) {
    return codes.get(code) ?? null;
  },
  async revokeAuthorizationCode(code) {
    return codes.delete(code.authorizationCode);
  },
  async saveToken(token, c, u) {
    const saved = { ...token, client: c, user: u };
    accessTokens.set(token.accessToken, saved);
    if (token.refreshToken) refreshTokens.set(token.refreshToken, saved);
    return saved;
  },
  async getAccessToken(token) {
    return accessTokens.get(token) ?? null;
  },
  async getRefreshToken(token) {
    return refreshTokens.get(token) ?? null;
  },
  async revokeToken(token) {
    // Called with the presented refresh token when the library rotates it.
    console.log('REFRESHED');
    const found = refreshTokens.get(token.refreshToken);
    if (found) accessTokens.delete(found.accessToken);
    return refreshTokens.delete(token.refreshToken);
  },
  async validateScope(u, c, scope) {
    return scope ?? [];
  },
  async verifyScope() {
    return true;
  },
};

const oauth = new OAuth2Server({ model, allowEmptyState: false });

function toLibrary(req) {
  return new Request({ method: req.method, query: req.query, headers: req.headers, body: req.body ?? {} });
}

function send(res, response) {
  res.status(response.status).set(response.headers);
  if (response.status === 302) return res.end();
  return res.json(response.body);
}

async function handle(req, res, run) {
  const response = new Response(res);
  try {
    await run(toLibrary(req), response);
    send(res, response);
  } catch (e) {
    const status = e.code ?? 500;
    if (status >= 500) console.error(e);
    res.status(status).json({ error: e.name, error_description: e.message });
  }
}

const app = express();
app.use(express.urlencoded({ extended: false }));
// A person who is signed in and clicks Approve.
app.get('/authorize', (req, res) => handle(req, res, (request, response) =>
  oauth.authorize(request, response, { authenticateHandler: { handle: () => user } })));
app.post('/token', (req, res) => handle(req, res, (request, response) => oauth.token(request, response)));
await new Promise((resolve) => app.listen(asPort, '127.0.0.1', resolve));

await startMcpFront({
  port: mcpPort,
  issuer,
  name: 'conformance-node-oauth2-server',
  async verifyAccessToken(token) {
    const request = new Request({ method: 'POST', query: {}, body: {}, headers: { authorization: `Bearer ${token}` } });
    const found = await oauth.authenticate(request, new Response({ headers: {} }));
    return {
      token,
      clientId: found.client.id,
      scopes: [].concat(found.scope ?? []),
      expiresAt: Math.floor(new Date(found.accessTokenExpiresAt).getTime() / 1000),
    };
  },
});
console.log(`READY http://127.0.0.1:${mcpPort}/mcp`);
