// Started by tests/tests/third_party_oauth.rs like sdk-oauth-server.mjs: the MCP TypeScript SDK's
// example OAuth-protected server, run as shipped, except that its demo provider (which issues no
// refresh token) is taught the refresh grant as OAuth 2.1 servers do it: every refresh spends the
// presented refresh token and mints a new pair; presenting a spent one is reuse, which revokes the
// whole family; and it revokes tokens (RFC 7009). The SDK's own router serves /token and /revoke
// (client authentication, validation, error shapes); only the provider's decisions are ours.
// Each event is one line on stdout ("REFRESHED", "REUSE", "REVOKED <hint>") for the test to count.
import './loopback-only.mjs';
import { randomUUID } from 'node:crypto';
import { DemoInMemoryAuthProvider } from './node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/demoInMemoryOAuthProvider.js';
import { InvalidGrantError } from './node_modules/@modelcontextprotocol/sdk/dist/esm/server/auth/errors.js';

const proto = DemoInMemoryAuthProvider.prototype;
const exchangeCode = proto.exchangeAuthorizationCode;
// refresh token -> { clientId, scopes, resource, family, spent }
const refreshTokens = new Map();
const revokedFamilies = new Set();

function mintRefresh(self, clientId, scopes, resource, family) {
  const token = randomUUID();
  refreshTokens.set(token, { clientId, scopes, resource, family, spent: false });
  return token;
}

proto.exchangeAuthorizationCode = async function (client, code, verifier) {
  const codeData = this.codes.get(code);
  const tokens = await exchangeCode.call(this, client, code, verifier);
  const scopes = codeData?.params.scopes || [];
  tokens.refresh_token = mintRefresh(this, client.client_id, scopes, codeData?.params.resource, randomUUID());
  return tokens;
};

proto.exchangeRefreshToken = async function (client, refreshToken, scopes, resource) {
  const data = refreshTokens.get(refreshToken);
  if (!data || data.clientId !== client.client_id) throw new InvalidGrantError('Invalid refresh token');
  if (revokedFamilies.has(data.family)) throw new InvalidGrantError('Invalid refresh token');
  if (data.spent) {
    revokedFamilies.add(data.family);
    console.log('REUSE');
    throw new InvalidGrantError('Invalid refresh token');
  }
  data.spent = true;
  // A slow token endpoint, for a test that needs a refresh in flight (REFRESH_DELAY_MS).
  const delay = Number(process.env.REFRESH_DELAY_MS || 0);
  if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
  const access = randomUUID();
  const granted = scopes && scopes.length ? scopes : data.scopes;
  this.tokens.set(access, {
    token: access,
    clientId: client.client_id,
    scopes: granted,
    expiresAt: Date.now() + 3600000,
    resource: resource || data.resource,
    type: 'access',
  });
  console.log('REFRESHED');
  return {
    access_token: access,
    token_type: 'bearer',
    expires_in: 3600,
    scope: granted.join(' '),
    refresh_token: mintRefresh(this, client.client_id, granted, data.resource, data.family),
  };
};

proto.revokeToken = async function (client, request) {
  const data = refreshTokens.get(request.token);
  if (data) revokedFamilies.add(data.family);
  this.tokens.delete(request.token);
  console.log(`REVOKED ${request.token_type_hint || 'unknown'}`);
};

await import('./node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js');
