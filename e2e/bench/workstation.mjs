// Workstation read tools bench (issue 27, acceptance 4): p50 / p99 of `herdr_fs_read`,
// `herdr_fs_list`, `herdr_fs_grep` over a generated 10 000-file tree, and `herdr_git` status
// and diff on a generated repository with 5 000 commits, through the release runtime's
// socket (`tools.call`, the registry every planner front end uses), printed next to the
// reference product's published p50s (herdr-mcp: fs_read 2.9 ms, fs_list 5.9 ms, fs_grep
// 25 ms, git status 40 ms). No timed assertion: the figures are for reading.
//
// The tree is written by this script; the repository by `git fast-import` (one stream of
// 5 000 commits over 500 files, seconds), then checked out, with a few files changed so
// status and diff have work. Both are registered with `herdr-companion roots add`.
// Run alone: BENCH_ONLY=workstation node e2e/bench.mjs (after the build).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { COMPANION_BIN } from '../lib/paths.mjs';

const FILES = Number(process.env.BENCH_WS_FILES ?? 10_000);
const COMMITS = Number(process.env.BENCH_WS_COMMITS ?? 5_000);
const RUNS = Number(process.env.BENCH_WS_RUNS ?? 200);
const GIT_RUNS = Number(process.env.BENCH_WS_GIT_RUNS ?? 50);
const REFERENCE = { fs_read: 2.9, fs_list: 5.9, fs_grep: 25, git_status: 40 };

function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

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
    const id = `w-${next++}`;
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

/** 10 000 files: 100 directories of 100 source-like files (40 lines each); 5 hold `needle_zx`. */
function writeTree(root) {
  const perDir = 100;
  for (let i = 0; i < FILES; i++) {
    const dir = path.join(root, `pkg${String(Math.floor(i / perDir)).padStart(3, '0')}`);
    if (i % perDir === 0) mkdirSync(dir, { recursive: true });
    const lines = [];
    for (let l = 0; l < 40; l++) lines.push(`fn item_${i}_${l}(x: u32) -> u32 { x.wrapping_mul(${l + 1}) } // file ${i} line ${l}`);
    if (i % (FILES / 5) === 7) lines.push('// needle_zx marks this file');
    writeFileSync(path.join(dir, `m${String(i % perDir).padStart(3, '0')}.rs`), `${lines.join('\n')}\n`);
  }
  writeFileSync(path.join(root, '.gitignore'), 'target/\n');
}

/** A repository of COMMITS commits over 500 files through one `git fast-import` stream. */
function writeRepository(repo) {
  const git = (args, input) => {
    const run = spawnSync('git', ['-C', repo, ...args], { input, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    if (run.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${run.stderr}`);
    return run.stdout;
  };
  mkdirSync(repo, { recursive: true });
  git(['init', '-q', '-b', 'main']);
  const parts = [];
  const files = 500;
  const body = (f, c) => `// file ${f}, version ${c}\n${Array.from({ length: 30 }, (_, l) => `const V${l}: u32 = ${(f * 31 + l * 7 + c) % 1000};`).join('\n')}\n`;
  for (let c = 1; c <= COMMITS; c++) {
    const when = 1_700_000_000 + c * 60;
    const message = `commit ${c}\n`;
    parts.push(`commit refs/heads/main\nmark :${c}\ncommitter Bench <bench@example.com> ${when} +0000\ndata ${Buffer.byteLength(message)}\n${message}`);
    if (c > 1) parts.push(`from :${c - 1}\n`);
    // The first commit writes every file; each later one changes three of them.
    const touched = c === 1 ? Array.from({ length: files }, (_, f) => f) : [c % files, (c * 7) % files, (c * 13) % files];
    for (const f of touched) {
      const content = body(f, c);
      parts.push(`M 100644 inline src/f${String(f).padStart(3, '0')}.rs\ndata ${Buffer.byteLength(content)}\n${content}`);
    }
    parts.push('\n');
  }
  git(['fast-import', '--quiet'], parts.join(''));
  git(['checkout', '-q', '-f', 'main']);
  // Work in progress for status and diff: ten files changed.
  for (let f = 0; f < 10; f++) writeFileSync(path.join(repo, 'src', `f${String(f * 40).padStart(3, '0')}.rs`), body(f * 40, COMMITS + 1));
}

async function timed(client, count, tool, args) {
  const times = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const answer = await client.call('tools.call', { tool, arguments: args(i) });
    times.push(performance.now() - started);
    if (answer.error) throw new Error(`${tool} failed: ${answer.error.code}: ${answer.error.message}`);
  }
  return times.sort((a, b) => a - b);
}

export async function workstationBench({ table }) {
  const base = mkdtempSync(path.join(os.tmpdir(), 'herdr-ws-bench-'));
  // The companion home beside the tree, not around it: no tool reads inside the home.
  const home = path.join(base, 'home');
  let runtime;
  try {
    mkdirSync(home, { mode: 0o700 });
    const tree = path.join(base, 'tree');
    const repo = path.join(base, 'repo');
    let started = performance.now();
    writeTree(tree);
    const treeSeconds = (performance.now() - started) / 1000;
    started = performance.now();
    writeRepository(repo);
    const repoSeconds = (performance.now() - started) / 1000;
    for (const root of [tree, repo]) {
      const added = spawnSync(COMPANION_BIN, ['roots', 'add', root, '--home', home], { encoding: 'utf8' });
      if (added.error) throw new Error(`cannot run ${COMPANION_BIN} (${added.error.message}); build it first (npm run build)`);
      if (added.status !== 0) throw new Error(`roots add failed: ${added.stderr}`);
    }
    runtime = spawn(COMPANION_BIN, ['runtime', '--home', home], {
      stdio: 'ignore',
      env: { ...process.env, HERDR_SOCKET_PATH: path.join(home, 'no-herdr.sock'), HERDR_SESSION: '' },
    });
    const socketPath = path.join(home, 'run', 'companion.sock');
    await waitForSocket(socketPath, runtime);
    const client = await connect(socketPath);

    const dirs = Math.max(1, Math.floor(FILES / 100));
    const dir = (i) => path.join(tree, `pkg${String(i % dirs).padStart(3, '0')}`);
    const file = (i) => path.join(dir(i), `m${String((i * 7) % 100).padStart(3, '0')}.rs`);
    const rows = [];
    const measure = async (label, key, count, tool, args) => {
      await timed(client, Math.min(10, count), tool, args); // warm-up
      const times = await timed(client, count, tool, args);
      const reference = key ? `${REFERENCE[key]} ms` : '—';
      rows.push([label, times.length, `${quantile(times, 0.5).toFixed(2)} ms`, `${quantile(times, 0.99).toFixed(2)} ms`, reference]);
    };
    await measure('fs_read, 40 lines of a file', 'fs_read', RUNS, 'herdr_fs_read', (i) => ({ path: file(i) }));
    await measure('fs_list, a directory of 100 files', 'fs_list', RUNS, 'herdr_fs_list', (i) => ({ path: dir(i) }));
    await measure('fs_list, recursive, first 2000 entries', null, Math.ceil(RUNS / 4), 'herdr_fs_list', () => ({ path: tree, recursive: true, max_entries: 2000 }));
    await measure(`fs_grep, literal over ${FILES} files (5 hits)`, 'fs_grep', Math.ceil(RUNS / 4), 'herdr_fs_grep', () => ({ root: tree, pattern: 'needle_zx' }));
    await measure(`fs_grep, regex over ${FILES} files (5 hits)`, null, Math.ceil(RUNS / 4), 'herdr_fs_grep', () => ({ root: tree, pattern: 'needle_[a-z]{2}', regex: true }));
    await measure(`git status, ${COMMITS} commits, 10 changed files`, 'git_status', GIT_RUNS, 'herdr_git', () => ({ root: repo, action: 'status' }));
    await measure('git diff, work tree', null, GIT_RUNS, 'herdr_git', () => ({ root: repo, action: 'diff' }));
    await measure('git diff, HEAD~100..HEAD', null, GIT_RUNS, 'herdr_git', () => ({ root: repo, action: 'diff', from: 'HEAD~100', to: 'HEAD' }));
    await measure('git log, 20 commits', null, GIT_RUNS, 'herdr_git', () => ({ root: repo, action: 'log' }));
    client.close();

    table(
      `workstation read tools through tools.call (tree: ${FILES} files written in ${treeSeconds.toFixed(1)} s; repository: ${COMMITS} commits by git fast-import in ${repoSeconds.toFixed(1)} s)`,
      ['measure', 'calls', 'p50', 'p99', 'herdr-mcp p50'],
      rows,
    );
  } finally {
    if (runtime && runtime.exitCode === null) runtime.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    rmSync(base, { recursive: true, force: true });
  }
}
