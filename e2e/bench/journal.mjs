// Continuity Journal bench (issue 12, acceptance 4): `continuity.append` throughput and
// `continuity.search` latency p50/p99 over BENCH_JOURNAL_TURNS (default 1 000 000) journaled
// turns, through the release runtime's real socket, next to the target (search p50 ≤ 10 ms).
// Also `continuity.resume` paging: p50 per page walking a BENCH_RESUME_CHAIN_TURNS (10 000) turn chain
// back to its first turn with `before` / `next_cursor` (printed, no timed assertion).
//
// The journal is filled first by the hidden `herdr-companion journal-fill` (batched
// transactions through the append code; synthetic text, see companion/src/journal/bench.rs),
// then a real `herdr-companion runtime` serves it: appends are acknowledged one at a time
// (each its own transaction under synchronous=FULL), searches are timed from request to
// answer by this client. Run alone: BENCH_ONLY=journal node e2e/bench.mjs (after the build).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { COMPANION_BIN } from '../lib/paths.mjs';

const TURNS = Number(process.env.BENCH_JOURNAL_TURNS ?? 1_000_000);
const APPENDS = Number(process.env.BENCH_JOURNAL_APPENDS ?? 1000);
const SEARCHES = Number(process.env.BENCH_JOURNAL_SEARCHES ?? 1000);
const SEARCH_P50_TARGET_MS = 10;
// continuity.resume paging (issue 26, acceptance 4): one chain of this many turns, paged back
// from the newest to the first with `before` / `next_cursor`, PAGE_WALKS times.
const LONG_CHAIN_TURNS = Number(process.env.BENCH_RESUME_CHAIN_TURNS ?? 10_000);
const PAGE_WALKS = Number(process.env.BENCH_RESUME_WALKS ?? 3);

function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** One connection to the runtime socket; `call` sends a request and resolves with its answer. */
async function connect(socketPath) {
  const socket = net.createConnection(socketPath);
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const waiting = new Map();
  let next = 0;
  createInterface({ input: socket }).on('line', (line) => {
    const message = JSON.parse(line);
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  });
  const call = (method, params) => new Promise((resolve) => {
    const id = `j-${next++}`;
    waiting.set(id, resolve);
    socket.write(`${JSON.stringify({ id, method, params })}\n`);
  });
  return { call, close: () => socket.destroy() };
}

async function waitForSocket(socketPath, runtime) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (runtime.exitCode !== null) throw new Error(`the runtime exited (${runtime.exitCode}) before its socket came up`);
    try {
      const client = await connect(socketPath);
      client.close();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`the runtime socket ${socketPath} never came up`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Times `count` requests made by `make(i)` one after another; returns sorted ms. */
async function timed(client, count, make) {
  const times = [];
  for (let i = 0; i < count; i++) {
    const [method, params] = make(i);
    const started = performance.now();
    const answer = await client.call(method, params);
    times.push(performance.now() - started);
    if (answer.error) throw new Error(`${method} failed: ${answer.error.code}: ${answer.error.message}`);
  }
  return times.sort((a, b) => a - b);
}

export async function journalBench({ table }) {
  const home = mkdtempSync(path.join(os.tmpdir(), 'herdr-journal-bench-'));
  let runtime;
  try {
    const fill = spawnSync(COMPANION_BIN, ['journal-fill', '--home', home, '--turns', String(TURNS), '--long-chain', String(LONG_CHAIN_TURNS)], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
    if (fill.error) throw new Error(`cannot run ${COMPANION_BIN} (${fill.error.message}); build it first (npm run build)`);
    if (fill.status !== 0) throw new Error(`journal-fill failed: ${fill.stderr}`);
    const summary = JSON.parse(fill.stdout);

    runtime = spawn(COMPANION_BIN, ['runtime', '--home', home], {
      stdio: 'ignore',
      env: { ...process.env, HERDR_SOCKET_PATH: path.join(home, 'no-herdr.sock'), HERDR_SESSION: '' },
    });
    const socketPath = path.join(home, 'run', 'companion.sock');
    await waitForSocket(socketPath, runtime);
    const client = await connect(socketPath);

    // Appends: one in flight, each acknowledged only after its commit (synchronous=FULL).
    const appendTurn = (i) => ['continuity.append', {
      conversation_id: 'bench-append', message_id: `append-${i}`, role: i % 2 ? 'assistant' : 'user',
      text: `bench append ${i}: ${summary.words.slice(0, 24).join(' ')}`, observed_at: Date.now(), workspace_id: 'w-append',
    }];
    const appendStarted = performance.now();
    const appendTimes = await timed(client, APPENDS, appendTurn);
    const appendSeconds = (performance.now() - appendStarted) / 1000;

    // Searches: a mix of what planners send (C4): text only, identity only, identity + text.
    const { words, projects, workspaces, conversations } = summary;
    const pick = (list, i) => list[(i * 7919) % list.length];
    const kinds = [
      ['text: two words', (i) => ({ query: `${pick(words, i)} ${pick(words, i + 13)}` })],
      ['project_id', (i) => ({ project_id: pick(projects, i) })],
      ['workspace_id + word', (i) => ({ workspace_id: pick(workspaces, i), query: pick(words, i + 5) })],
      ['conversation_url', (i) => ({ conversation_url: `https://chatgpt.com/c/${pick(conversations, i)}` })],
    ];
    const all = [];
    const rows = [];
    for (const [kind, params] of kinds) {
      const times = await timed(client, Math.ceil(SEARCHES / kinds.length), (i) => ['continuity.search', params(i)]);
      all.push(...times);
      rows.push([kind, times.length, `${quantile(times, 0.5).toFixed(3)} ms`, `${quantile(times, 0.99).toFixed(3)} ms`]);
    }
    all.sort((a, b) => a - b);
    rows.push(['all searches', all.length, `${quantile(all, 0.5).toFixed(3)} ms`, `${quantile(all, 0.99).toFixed(3)} ms`]);

    // Resume paging: the newest page, then `before: next_cursor` until the first turn.
    const pageTimes = [];
    let pagesPerWalk = 0;
    let turnsSeen = 0;
    for (let walk = 0; walk < PAGE_WALKS; walk++) {
      let before;
      let pages = 0;
      turnsSeen = 0;
      do {
        const params = before ? { continuity_id: summary.long_chain, before } : { continuity_id: summary.long_chain };
        const started = performance.now();
        const answer = await client.call('continuity.resume', params);
        pageTimes.push(performance.now() - started);
        if (answer.error) throw new Error(`continuity.resume failed: ${answer.error.code}: ${answer.error.message}`);
        turnsSeen += answer.result.turns.length;
        before = answer.result.next_cursor;
        pages++;
      } while (before);
      pagesPerWalk = pages;
    }
    if (turnsSeen !== LONG_CHAIN_TURNS) throw new Error(`paging read ${turnsSeen} turns of a ${LONG_CHAIN_TURNS}-turn chain`);
    pageTimes.sort((a, b) => a - b);
    rows.push([`resume page of a ${LONG_CHAIN_TURNS}-turn chain (${pagesPerWalk} pages × ${PAGE_WALKS} walks)`, pageTimes.length,
      `${quantile(pageTimes, 0.5).toFixed(3)} ms`, `${quantile(pageTimes, 0.99).toFixed(3)} ms`]);
    client.close();

    table(
      `continuity journal: ${summary.turns} turns in ${summary.chains} chains${summary.long_chain ? ` + one of ${LONG_CHAIN_TURNS}` : ''} (filled in ${summary.seconds.toFixed(1)} s, ${Math.round(summary.turns / summary.seconds)} turns/s batched)`,
      ['measure', 'count', 'p50', 'p99'],
      [
        [`continuity.append over the socket, one in flight (${Math.round(APPENDS / appendSeconds)} turns/s)`, appendTimes.length,
          `${quantile(appendTimes, 0.5).toFixed(3)} ms`, `${quantile(appendTimes, 0.99).toFixed(3)} ms`],
        ...rows.map(([kind, n, p50, p99]) => [kind.startsWith('resume') ? `continuity.${kind}` : `continuity.search, ${kind}`, n, p50, p99]),
      ],
    );
    const p50 = quantile(all, 0.5);
    console.log(`journal append throughput: ${Math.round(APPENDS / appendSeconds)} turns/s (one in flight, synchronous=FULL)`);
    console.log(`journal resume paging p50: ${quantile(pageTimes, 0.5).toFixed(3)} ms per page, ${pagesPerWalk} pages back to the first of ${LONG_CHAIN_TURNS} turns`);
    console.log(`journal search p50: ${p50.toFixed(3)} ms over ${summary.turns} turns, target ≤ ${SEARCH_P50_TARGET_MS} ms: ${p50 <= SEARCH_P50_TARGET_MS ? 'PASS' : 'OVER'}`);
  } finally {
    if (runtime && runtime.exitCode === null) runtime.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    rmSync(home, { recursive: true, force: true });
  }
}
