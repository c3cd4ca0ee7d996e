// A stand-in for OpenAI's Secure MCP Tunnel on the local side (`tunnel-client run
// --mcp.command "herdr-companion mcp …"`): it spawns `herdr-companion mcp` once and writes
// the JSON-RPC requests it would receive from ChatGPT onto its stdin, one line each, with
// no session and no SDK in between; it reads the answers from stdout by id. Every process
// started here is stopped by `stop()`.
import { spawn } from 'node:child_process';
import { COMPANION_BIN } from './paths.mjs';
import { OwnedProcess } from './processes.mjs';

/** `_meta` of a 2026-07-28 request as ChatGPT sends it (its own `openai/*` keys included). */
export function meta2026(session = 'v1/e2e-conversation') {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'openai-mcp', version: '1.0.0' },
    'openai/session': session,
    'openai/subject': 'v1/e2e-user',
  };
}

export class TunnelStdio {
  constructor(sandbox) {
    const child = spawn(COMPANION_BIN, ['mcp', '--home', sandbox.home], { env: sandbox.env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    this.owned = new OwnedProcess('herdr-companion mcp (tunnel stdio)', child);
    this.answers = new Map();
    this.waiters = new Map();
    this.lines = [];
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      buffered += chunk.toString();
      let newline;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        this.lines.push(line);
        let message;
        try { message = JSON.parse(line); } catch { continue; }
        if (message.id === undefined) continue;
        const key = JSON.stringify(message.id);
        const waiter = this.waiters.get(key);
        if (waiter) { this.waiters.delete(key); waiter(message); } else this.answers.set(key, message);
      }
    });
  }

  /** Writes one JSON-RPC message line. */
  send(message) {
    this.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  /** Sends a request and resolves with its answer (the whole JSON-RPC response). */
  request(id, method, params, timeoutMs = 15_000) {
    const key = JSON.stringify(id);
    const answered = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(key);
        reject(new Error(`no answer to ${method} (id ${key}) within ${timeoutMs} ms; stdout lines: ${this.lines.join('\n')}\nstderr: ${this.owned.output}`));
      }, timeoutMs);
      const done = (message) => { clearTimeout(timer); resolve(message); };
      if (this.answers.has(key)) { const message = this.answers.get(key); this.answers.delete(key); done(message); } else this.waiters.set(key, done);
    });
    this.send({ jsonrpc: '2.0', id, method, params });
    return answered;
  }

  stop() {
    this.child.stdin.end();
    return this.owned.stop();
  }
}
