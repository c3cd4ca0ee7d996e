// Issue 24 acceptance 2 (the own-tunnel way): the official TypeScript SDK's client auth goes
// through the companion's OAuth 2.1 server behind a local reverse proxy that stands in for
// an HTTPS tunnel (`mcp --http 127.0.0.1:0 --public-url <proxy origin>`): discovery from the
// 401 (RFC 9728, RFC 8414), dynamic client registration, the consent page, approval on the
// workstation with `herdr-companion oauth approve CODE`, the code (PKCE S256) and tokens;
// then it lists the tools and calls herdr_inspect. A request without a token, with a token
// revoked by `oauth revoke`, and with a token issued for another resource (a second server
// behind another public URL, same oauth.db) is refused with 401.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { test, expect } from '../lib/test.mjs';
import { WORKSPACE, startSeededHerdr } from '../lib/continuity.mjs';
import { MemoryOAuthProvider, awaitRedirect, consentOf, oauthCli, startPublicMcp, startTunnelProxy } from '../lib/oauth.mjs';

const TOOLS = ['herdr_prompt', 'herdr_call', 'herdr_methods', 'herdr_inspect'];
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'herdr-e2e-raw', version: '0.1.0' } },
});

/** A bare MCP initialize POST to `url` with `token` as the bearer (none when null). */
function initializeWith(url, token) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  return fetch(url, { method: 'POST', headers, body: INITIALIZE });
}

function newClient() {
  return new Client({ name: 'herdr-continuity-e2e-oauth', version: '0.1.0' });
}

/** Runs `work` with two tunnel proxies and a public MCP server behind each; stops them all. */
async function withTwoPublicServers(sandbox, work) {
  const stops = [];
  try {
    const proxy = await startTunnelProxy();
    stops.push(proxy.stop);
    const otherProxy = await startTunnelProxy();
    stops.push(otherProxy.stop);
    const server = await startPublicMcp(sandbox, proxy);
    stops.push(server.stop);
    const other = await startPublicMcp(sandbox, otherProxy);
    stops.push(other.stop);
    await work({ proxy, server, other });
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}

/** The SDK's first connect: 401, discovery, registration, then the redirect to the consent page. */
async function signInStarts(server) {
  const provider = new MemoryOAuthProvider();
  const transport = new StreamableHTTPClientTransport(new URL(server.url), { authProvider: provider });
  await expect(newClient().connect(transport), 'no token yet: the SDK is sent to sign in').rejects.toThrow();
  expect(provider.client?.client_id, 'dynamic client registration gave a client id').toMatch(/^hcc_/);
  const authorizeUrl = provider.authorizationUrl;
  expect(authorizeUrl, 'the SDK was sent to the authorization endpoint').toBeTruthy();
  return { provider, transport, authorizeUrl };
}

test.describe('MCP through your own HTTPS tunnel: OAuth 2.1, consent on the workstation', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('the SDK signs in after `oauth approve`, lists the tools, calls herdr_inspect; no token, a revoked one and one for another resource get 401', async ({ sandbox }) => {
    await startSeededHerdr(sandbox);
    await sandbox.startRuntime();
    await withTwoPublicServers(sandbox, async ({ proxy, server, other }) => {
      const bare = await initializeWith(server.url, null);
      expect(bare.status, 'no token: refused').toBe(401);
      expect(bare.headers.get('www-authenticate')).toContain(`resource_metadata="${proxy.origin}/.well-known/oauth-protected-resource/mcp"`);

      const { provider, transport, authorizeUrl } = await signInStarts(server);
      expect(authorizeUrl.origin + authorizeUrl.pathname).toBe(`${proxy.origin}/oauth/authorize`);
      expect(authorizeUrl.searchParams.get('code_challenge_method')).toBe('S256');
      expect(authorizeUrl.searchParams.get('resource'), 'RFC 8707: the token is asked for this MCP endpoint').toBe(server.url);

      const pageAnswer = await fetch(authorizeUrl);
      expect(pageAnswer.status).toBe(200);
      const page = await pageAnswer.text();
      const { request, code } = consentOf(page);
      expect(page).toContain('herdr e2e OAuth client');
      expect(page).toContain(`herdr-companion oauth approve ${code}`);
      const before = await (await fetch(new URL(`status?request=${request}`, authorizeUrl))).json();
      expect(before.status, 'nothing is granted from the web alone').toBe('waiting');
      expect(before.redirect_to).toBeUndefined();

      const pending = await oauthCli(sandbox, ['pending']);
      expect(pending.code, pending.stderr).toBe(0);
      expect(pending.stdout).toContain(code);
      expect(pending.stdout).toContain('herdr e2e OAuth client');
      const approved = await oauthCli(sandbox, ['approve', code]);
      expect(approved.code, approved.stderr).toBe(0);
      expect(approved.stdout).toContain(`approved ${code}`);

      const { status, to } = await awaitRedirect(authorizeUrl, request);
      expect(status).toBe('approved');
      expect(`${to.origin}${to.pathname}`).toBe(provider.redirectUrl);
      expect(to.searchParams.get('state')).toBe('e2e-state-1');
      await transport.finishAuth(to.searchParams.get('code'));
      const token = provider.saved?.access_token;
      expect(token, 'the code became tokens').toBeTruthy();
      expect(provider.saved.refresh_token).toBeTruthy();

      const client = newClient();
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { authProvider: provider }));
      try {
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name).slice(0, TOOLS.length)).toEqual(TOOLS);
        const inspect = await client.callTool({ name: 'herdr_inspect', arguments: {} });
        expect(inspect.isError ?? false, JSON.stringify(inspect.content)).toBe(false);
        expect(inspect.structuredContent.panes.map((p) => p.pane_id), 'herdr_inspect through the tunnel').toContain(WORKSPACE.pane);
      } finally {
        await client.close();
      }

      const elsewhere = await initializeWith(other.url, token);
      expect(elsewhere.status, 'a token for another resource is refused').toBe(401);
      expect(elsewhere.headers.get('www-authenticate')).toContain('error="invalid_token"');
      expect(await elsewhere.text()).toContain('another resource');
      const direct = await initializeWith(server.localUrl, token);
      expect(direct.status, 'with --public-url only the public Host is served').toBe(403);

      const clients = await oauthCli(sandbox, ['clients']);
      expect(clients.stdout).toContain(provider.client.client_id);
      expect(clients.stdout).toContain('grants: 1');
      const revoked = await oauthCli(sandbox, ['revoke', provider.client.client_id]);
      expect(revoked.code, revoked.stderr).toBe(0);
      const after = await initializeWith(server.url, token);
      expect(after.status, 'a revoked token is refused').toBe(401);
      const refreshed = await fetch(`${proxy.origin}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: provider.saved.refresh_token, client_id: provider.client.client_id }),
      });
      expect(refreshed.status, 'its refresh token is revoked too').toBe(400);
      expect((await refreshed.json()).error).toBe('invalid_grant');
    });
  });

  test('a request denied on the workstation returns access_denied; plain PKCE and unknown codes are refused', async ({ sandbox }) => {
    await withTwoPublicServers(sandbox, async ({ server }) => {
      const { authorizeUrl } = await signInStarts(server);
      const plain = new URL(authorizeUrl);
      plain.searchParams.set('code_challenge_method', 'plain');
      const refusedPlain = await fetch(plain, { redirect: 'manual' });
      expect(refusedPlain.status).toBe(302);
      expect(new URL(refusedPlain.headers.get('location')).searchParams.get('error')).toBe('invalid_request');

      const { request, code } = consentOf(await (await fetch(authorizeUrl)).text());
      const mistyped = await oauthCli(sandbox, ['approve', 'AAAA-AAAA']);
      expect(mistyped.code, 'an unknown code is refused').toBe(1);
      expect(mistyped.stderr).toContain('oauth pending');
      const denied = await oauthCli(sandbox, ['deny', code]);
      expect(denied.code, denied.stderr).toBe(0);
      const { status, to } = await awaitRedirect(authorizeUrl, request);
      expect(status).toBe('refused');
      expect(to.searchParams.get('error')).toBe('access_denied');
      expect(to.searchParams.get('code')).toBeNull();
    });
  });
});
