// MCP clients of `herdr-companion mcp` for the end-to-end tests: the official TypeScript
// SDK's client (npm `@modelcontextprotocol/sdk`) on stdio (it starts the process) and on
// streamable HTTP (`mcp --http 127.0.0.1:0`, started here, bearer token from the sandbox's
// config.json). Every process started here is stopped by the `close()` it returns.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { COMPANION_BIN, REPO_ROOT } from './paths.mjs';
import { OwnedProcess } from './processes.mjs';

function newClient() {
  return new Client({ name: 'herdr-continuity-e2e', version: '0.1.0' });
}

/** An initialized MCP client of `herdr-companion mcp` on stdio for this sandbox's home. */
export async function connectStdio(sandbox) {
  const client = newClient();
  const transport = new StdioClientTransport({ command: COMPANION_BIN, args: ['mcp', '--home', sandbox.home], env: sandbox.env, stderr: 'pipe' });
  await client.connect(transport);
  return { client, close: () => client.close() };
}

/**
 * Starts `herdr-companion mcp --http 127.0.0.1:0` for this sandbox; resolves with its URL
 * (from the line it prints), the bearer token and `stop()`.
 */
export async function startHttpMcp(sandbox) {
  const child = spawn(COMPANION_BIN, ['mcp', '--home', sandbox.home, '--http', '127.0.0.1:0'], { env: sandbox.env, stdio: ['ignore', 'ignore', 'pipe'] });
  const owned = new OwnedProcess('herdr-companion mcp --http', child);
  const served = /serving MCP on (http:\/\/127\.0\.0\.1:\d+\/mcp)/;
  await owned.waitForOutput((output) => served.test(output), 'the address it serves');
  const url = owned.output.match(served)[1];
  const config = JSON.parse(readFileSync(path.join(sandbox.home, 'config.json'), 'utf8'));
  return { url, token: config.mcp.token, stop: () => owned.stop() };
}

/** An initialized MCP client on streamable HTTP, sending `token` as its bearer (none when null). */
export async function connectHttp(url, token) {
  const client = newClient();
  const headers = token === null ? {} : { Authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return { client, close: () => client.close() };
}

/**
 * The MCP Inspector's CLI (npm `@modelcontextprotocol/inspector`, a client written apart
 * from us) against `target`: the companion on stdio when `target` is null, else the HTTP
 * URL. Resolves with `{ ok, json }` — its JSON answer, or its error. Its own files (catalog,
 * settings) go to a HOME inside the sandbox.
 */
export function inspectorCli(sandbox, { url = null, headers = [], args = [] } = {}) {
  const home = path.join(sandbox.dir, 'inspector-home');
  mkdirSync(home, { recursive: true });
  const bin = path.join(REPO_ROOT, 'node_modules', '.bin', 'mcp-inspector');
  const target = url === null ? [COMPANION_BIN, 'mcp', '--home', sandbox.home] : [url, '--transport', 'http'];
  const argv = ['--cli', ...target, ...headers.flatMap((h) => ['--header', h]), ...args];
  return new Promise((resolve) => {
    execFile(bin, argv, { env: { ...sandbox.env, HOME: home }, timeout: 60_000, maxBuffer: 4 << 20 }, (error, stdout, stderr) => {
      let json = null;
      try { json = JSON.parse(stdout); } catch { json = null; }
      resolve({ ok: !error && json !== null && !json.error, json, output: `${stdout}${stderr}` });
    });
  });
}
