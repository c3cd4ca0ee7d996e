// Runtime fuzz (issue 23 item 3): `cargo run --release -p companion --example fuzz` for
// BENCH_FUZZ_SECONDS (default 30) feeds seeded hostile input to the Native Messaging
// framing, the socket's line reader, the request decoder, the conversation URL reader and
// every method of a real router over real stores (companion/src/fuzz.rs), then prints
// executions, executions per second and crashes per target next to the target (0 crashes)
// with PASS / OVER. Run alone: `node e2e/bench/fuzz.mjs`, or as part of `npm run bench`
// (BENCH_ONLY=fuzz runs only this part).
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../lib/paths.mjs';
import { table } from './table.mjs';

export async function fuzzBench({ table: print = table } = {}) {
  const seconds = Number(process.env.BENCH_FUZZ_SECONDS ?? 30);
  const seed = Number(process.env.BENCH_FUZZ_SEED ?? Date.now() % 1_000_000);
  const run = spawnSync('cargo', ['run', '--quiet', '--release', '-p', 'companion', '--example', 'fuzz', '--', '--seconds', String(seconds), '--seed', String(seed)], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, PATH: `${process.env.HOME}/.cargo/bin:${process.env.PATH}` },
  });
  const line = (run.stdout ?? '').trim().split('\n').pop() ?? '';
  let report;
  try {
    report = JSON.parse(line);
  } catch {
    throw new Error(`the fuzz run printed no report (exit ${run.status}): ${run.stderr?.slice(-2000)}`);
  }
  const rows = Object.entries(report.targets).map(([name, t]) => [name, t.execs, t.execs_per_second, t.crashes]);
  rows.push(['all', report.execs, report.execs_per_second, report.crashes]);
  print(`runtime fuzz (${report.seconds} s, seed ${report.seed}; target: 0 crashes) — ${report.crashes === 0 ? 'PASS' : 'OVER'}`, ['target', 'executions', 'per second', 'crashes'], rows);
  for (const [name, t] of Object.entries(report.targets)) {
    if (t.first_crash) console.log(`fuzz: first crash in ${name}: ${t.first_crash}`);
  }
  return report;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const report = await fuzzBench();
  process.exitCode = report.crashes === 0 ? 0 : 1;
}
