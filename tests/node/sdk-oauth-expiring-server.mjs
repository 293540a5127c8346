// Started by tests/tests/connect.rs: sdk-oauth-refresh-server.mjs (the MCP SDK's example OAuth
// server, its demo provider taught the rotating refresh grant and revocation) with what a session
// that outlives its token needs:
// - A refused token is a 401. The example's introspection-backed verifier turns any token its
//   provider refuses (expired, revoked, unknown) into a 500, because the provider throws and the
//   verifier rethrows a plain Error. Here the provider reports such a token with its real expiry
//   (the epoch for one it does not know), so the SDK's own bearer middleware answers 401
//   `invalid_token` "Token has expired" with its WWW-Authenticate, as a resource server should.
// - A line "EXPIRE" on stdin lapses every access token issued so far (the token expires
//   mid-session); the server answers "EXPIRED <n>" on stdout.
// - ACCESS_TOKENS_FILE (optional): the access tokens issued live in this file too, so the server
//   started again on the same ports (a restart of the MCP server mid-session) still accepts the
//   token it issued before. Clients and refresh tokens are not kept: a restart is a new AS memory.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { DemoInMemoryAuthProvider } from './node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/demoInMemoryOAuthProvider.js';

await import('./sdk-oauth-refresh-server.mjs');

const file = process.env.ACCESS_TOKENS_FILE;
// token -> { clientId, scopes, expiresAt, resource }
const remembered = new Map();
if (file) {
  try {
    for (const [token, data] of Object.entries(JSON.parse(readFileSync(file, 'utf8')))) {
      remembered.set(token, data);
    }
  } catch {
    // No file yet: the first start.
  }
}
function save() {
  if (!file) return;
  writeFileSync(`${file}.tmp`, JSON.stringify(Object.fromEntries(remembered)));
  renameSync(`${file}.tmp`, file);
}

let provider = null;
function remember(self) {
  provider = self;
  for (const [token, data] of self.tokens) {
    const { clientId, scopes, expiresAt, resource } = data;
    remembered.set(token, { clientId, scopes, expiresAt, resource: resource?.toString() });
  }
  save();
}

const proto = DemoInMemoryAuthProvider.prototype;
for (const method of ['exchangeAuthorizationCode', 'exchangeRefreshToken']) {
  const original = proto[method];
  proto[method] = async function (...args) {
    const tokens = await original.apply(this, args);
    remember(this);
    return tokens;
  };
}
const revoke = proto.revokeToken;
proto.revokeToken = async function (client, request) {
  remembered.delete(request.token);
  save();
  return revoke.call(this, client, request);
};
proto.verifyAccessToken = async function (token) {
  const data = this.tokens.get(token) ?? remembered.get(token);
  return {
    token,
    clientId: data?.clientId,
    scopes: data?.scopes ?? [],
    // Past for a lapsed token, the epoch for one never issued or revoked: the middleware's 401.
    expiresAt: Math.floor((data?.expiresAt ?? 0) / 1000),
    resource: data?.resource ? new URL(data.resource) : undefined,
  };
};

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'EXPIRE') return;
  const past = Date.now() - 1000;
  let n = 0;
  for (const data of provider?.tokens.values() ?? []) {
    data.expiresAt = past;
    n++;
  }
  for (const data of remembered.values()) data.expiresAt = past;
  save();
  console.log(`EXPIRED ${n}`);
});
