// panva's oidc-provider (npm `oidc-provider`), a certified OpenID Provider, as an MCP
// authorization server for tests/tests/conformance.rs: open dynamic registration (RFC 7591),
// PKCE S256, resource indicators (RFC 8707: access tokens for the MCP resource are JWTs with
// `aud` = its URL), refresh-token rotation, revocation (RFC 7009). Its defaults stand except
// where an MCP deployment must choose: the resource server's scope, JWT access tokens for it,
// refresh tokens for clients allowed the grant (without `offline_access` + `prompt=consent`,
// which MCP clients do not send), and consent.
//
// Consent goes through the provider's own interaction API (interactionDetails,
// interactionFinished, Grant), as a login/consent app built on it does, approving at once: the
// "browser" follows redirects with a cookie jar (tests/support/cookie-browser.sh), since the
// interaction is bound to the provider's cookies.
//
// In front, tests/node/mcp-front.mjs checks the JWT access tokens against the provider's JWKS
// (jose, as a resource server of this provider would). Usage: node oidc-provider-server.mjs
// AS_PORT MCP_PORT; prints "READY <mcp url>" once both listen. Events on stdout: "REFRESHED",
// "REVOKED". Loopback only.
import './loopback-only.mjs';
import Provider, { errors } from 'oidc-provider';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { startMcpFront } from './mcp-front.mjs';

const [asPort, mcpPort] = process.argv.slice(2).map(Number);
const issuer = `http://127.0.0.1:${asPort}`;
const mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
const SCOPE = 'mcp:tools';

const provider = new Provider(issuer, {
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => mcpUrl,
      useGrantedResource: () => true,
      getResourceServerInfo(ctx, resourceIndicator) {
        if (resourceIndicator !== mcpUrl) throw new errors.InvalidTarget();
        return { scope: SCOPE, audience: mcpUrl, accessTokenTTL: 3600, accessTokenFormat: 'jwt' };
      },
    },
  },
  scopes: ['openid', 'offline_access', SCOPE],
  issueRefreshToken: (ctx, client) => client.grantTypeAllowed('refresh_token'),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  // A missing account is no account: the one user of this test.
  findAccount: (ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
});

provider.on('refresh_token.consumed', () => console.log('REFRESHED'));
provider.on('revocation.success', () => console.log('REVOKED'));
provider.on('server_error', (ctx, err) => console.error('server_error', err));
provider.on('grant.error', (ctx, err) => console.error('grant.error', err.message, err.error_description ?? ''));

// The login and consent app, approving at once.
provider.use(async (ctx, next) => {
  const match = ctx.method === 'GET' && ctx.path.match(/^\/interaction\/([^/]+)$/);
  if (!match) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const { prompt, params, session } = details;
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: 'conformance-user' } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
});

await new Promise((resolve) => provider.listen(asPort, '127.0.0.1', resolve));

const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
await startMcpFront({
  port: mcpPort,
  issuer,
  scopesSupported: [SCOPE],
  name: 'conformance-oidc-provider',
  async verifyAccessToken(token) {
    const { payload } = await jwtVerify(token, jwks, { issuer, audience: mcpUrl });
    return { token, clientId: payload.client_id, scopes: (payload.scope ?? '').split(' ').filter(Boolean), expiresAt: payload.exp };
  },
});
console.log(`READY ${mcpUrl}`);
