// MCP clients of `herdr-companion mcp` for the end-to-end tests: the official TypeScript
// SDK's client (npm `@modelcontextprotocol/sdk`) on stdio (it starts the process) and on
// streamable HTTP (`mcp --http 127.0.0.1:0`, started here, bearer token from the sandbox's
// config.json). Every process started here is stopped by the `close()` it returns.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { COMPANION_BIN } from './paths.mjs';
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
