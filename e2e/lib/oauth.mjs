// The "own HTTPS tunnel" way to the companion's MCP server, for the end-to-end tests: a
// local reverse proxy that stands in for the tunnel (it forwards to the loopback server
// and passes the public Host through, as cloudflared and Tailscale Funnel do), the server
// started behind it with `mcp --http 127.0.0.1:0 --public-url <the proxy's origin>`, an
// in-memory OAuthClientProvider for the official TypeScript SDK's client auth, and the
// workstation's side of consent (`herdr-companion oauth …`). Every process and server
// started here is stopped by the `stop()` it returns.
import { execFile, spawn } from 'node:child_process';
import http from 'node:http';
import { COMPANION_BIN } from './paths.mjs';
import { OwnedProcess } from './processes.mjs';

/**
 * A reverse proxy on a free loopback port; `target` (a `host:port`) is set once the server
 * behind it runs. Requests keep their path and headers; `Host` is the public host.
 */
export async function startTunnelProxy() {
  const proxy = { target: null, requests: 0 };
  const server = http.createServer((req, res) => {
    proxy.requests += 1;
    if (!proxy.target) {
      res.writeHead(502).end('no origin yet');
      return;
    }
    const [hostname, port] = proxy.target.split(':');
    const headers = { ...req.headers, host: proxy.publicHost, 'x-forwarded-proto': 'https', 'x-forwarded-for': req.socket.remoteAddress };
    const upstream = http.request({ hostname, port: Number(port), method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', (error) => { if (!res.headersSent) res.writeHead(502); res.end(String(error)); });
    req.pipe(upstream);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.publicHost = `127.0.0.1:${server.address().port}`;
  proxy.origin = `http://${proxy.publicHost}`;
  proxy.stop = () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });
  return proxy;
}

/**
 * `herdr-companion mcp --http 127.0.0.1:0 --public-url <proxy origin>` behind `proxy`;
 * resolves with the public MCP URL, the loopback one and `stop()`.
 */
export async function startPublicMcp(sandbox, proxy) {
  const args = ['mcp', '--home', sandbox.home, '--http', '127.0.0.1:0', '--public-url', proxy.origin];
  const child = spawn(COMPANION_BIN, args, { env: sandbox.env, stdio: ['ignore', 'ignore', 'pipe'] });
  const owned = new OwnedProcess('herdr-companion mcp --http --public-url', child);
  const served = /serving MCP on http:\/\/(127\.0\.0\.1:\d+)\/mcp/;
  await owned.waitForOutput((output) => served.test(output) && output.includes('public URL'), 'the address it serves');
  const local = owned.output.match(served)[1];
  proxy.target = local;
  return { url: `${proxy.origin}/mcp`, localUrl: `http://${local}/mcp`, process: owned, stop: () => owned.stop() };
}

/** `herdr-companion oauth ARGS…` for this sandbox; resolves with `{ code, stdout, stderr }`. */
export function oauthCli(sandbox, args) {
  return new Promise((resolve) => {
    execFile(COMPANION_BIN, ['oauth', ...args, '--home', sandbox.home], { env: sandbox.env, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/**
 * The SDK's `OAuthClientProvider`, in memory: it registers with `redirectUrl` (a loopback
 * URL nothing listens on — the test reads the redirect instead of following it) and keeps
 * the client, the tokens and the PKCE verifier. `authorizationUrl` is where the SDK sent
 * the user.
 */
export class MemoryOAuthProvider {
  constructor(redirectUrl = 'http://127.0.0.1:9/oauth/callback') {
    this.redirect = redirectUrl;
    this.client = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.authorizationUrl = null;
  }

  get redirectUrl() { return this.redirect; }

  get clientMetadata() {
    return {
      client_name: 'herdr e2e OAuth client',
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state() { return 'e2e-state-1'; }
  clientInformation() { return this.client; }
  saveClientInformation(info) { this.client = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  redirectToAuthorization(url) { this.authorizationUrl = url; }
  saveCodeVerifier(verifier) { this.verifier = verifier; }
  codeVerifier() { return this.verifier; }
}

/** The consent page's request id and short code (`data-request`, `data-code` on its <main>). */
export function consentOf(page) {
  const request = page.match(/data-request="([^"]+)"/)?.[1];
  const code = page.match(/data-code="([^"]+)"/)?.[1];
  if (!request || !code) throw new Error(`not a consent page:\n${page}`);
  return { request, code };
}

/** Polls the page's status endpoint as its script does until it names where to go. */
export async function awaitRedirect(authorizeUrl, request, timeoutMs = 15_000) {
  const status = new URL(`status?request=${encodeURIComponent(request)}`, authorizeUrl);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const answer = await (await fetch(status)).json();
    if (answer.redirect_to) return { status: answer.status, to: new URL(answer.redirect_to) };
    if (answer.status !== 'waiting') throw new Error(`the consent request ended without a redirect: ${JSON.stringify(answer)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no decision reached the page within ${timeoutMs} ms`);
}
