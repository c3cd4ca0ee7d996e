// The turn-end judge's mechanical script on the labeled corpus (issue 11, SPEC J1–J3):
// every reply of companion/tests/fixtures/judge-corpus.jsonl and judge-heldout.jsonl goes
// through the release binary's `herdr-companion judge classify --script-only` (the same
// chain as the runtime's `judge.turn_end`, with no provider), and the verdicts are scored
// against the labels:
// precision and recall on "continue" and the false-continue rate on "done", overall, per
// language and for the hard half, next to the targets (precision ≥ 0.95, false continues
// ≤ 0.03) with PASS / OVER. Run alone: `node e2e/bench/judge-corpus.mjs` (after the build),
// or as part of `npm run bench` (BENCH_ONLY=judge runs only this part).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { COMPANION_BIN, REPO_ROOT } from '../lib/paths.mjs';
import { table } from './table.mjs';

const FIXTURES = path.join(REPO_ROOT, 'companion', 'tests', 'fixtures');
// The corpus (written before the script) and the held-out set (written after it, measured
// once before the script was changed again; see the README).
export const SETS = [
  ['corpus', path.join(FIXTURES, 'judge-corpus.jsonl')],
  ['held-out', path.join(FIXTURES, 'judge-heldout.jsonl')],
];
const PRECISION_TARGET = 0.95;
const FALSE_CONTINUE_TARGET = 0.03;

function score(cases) {
  const n = (gold, said) => cases.filter((c) => c.label === gold && c.verdict === said).length;
  const tp = n('continue', 'continue');
  const fp = n('done', 'continue');
  const fn = n('continue', 'done');
  const tn = n('done', 'done');
  return {
    cases: cases.length,
    precision: tp + fp === 0 ? 1 : tp / (tp + fp),
    recall: tp + fn === 0 ? 1 : tp / (tp + fn),
    falseContinue: fp + tn === 0 ? 0 : fp / (fp + tn),
    fp,
    fn,
  };
}

// Runs every case of `file` through the release binary and returns them with `verdict`.
function classify(file) {
  const cases = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
  const input = cases.map((c) => JSON.stringify({ id: c.id, text: c.text, ...(c.user_text ? { user_text: c.user_text } : {}) })).join('\n');
  const home = mkdtempSync(path.join(os.tmpdir(), 'judge-bench-'));
  let run;
  try {
    run = spawnSync(COMPANION_BIN, ['judge', 'classify', '--script-only', '--home', home], { input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  if (run.error) throw new Error(`cannot run ${COMPANION_BIN} (${run.error.message}); build it first (npm run build)`);
  if (run.status !== 0) throw new Error(`judge classify exited ${run.status}: ${run.stderr.trim()}`);
  const verdicts = new Map(run.stdout.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l)).map((o) => [o.id, o]));
  for (const c of cases) {
    const out = verdicts.get(c.id);
    if (!out || out.error) throw new Error(`judge classify gave no verdict for ${c.id}: ${JSON.stringify(out)}`);
    c.verdict = out.verdict;
  }
  return cases;
}

export async function judgeCorpusBench({ table }) {
  const pct = (x) => x.toFixed(3);
  const rows = [];
  const perLanguage = [];
  for (const [name, file] of SETS) {
    const cases = classify(file);
    const groups = [
      [`${name}: all`, cases],
      [`${name}: en`, cases.filter((c) => c.lang === 'en')],
      [`${name}: zh`, cases.filter((c) => c.lang === 'zh')],
      [`${name}: hard`, cases.filter((c) => c.hard)],
      [`${name}: easy`, cases.filter((c) => !c.hard)],
    ];
    for (const [label, set] of groups) {
      const s = score(set);
      rows.push([label, s.cases, pct(s.precision), pct(s.recall), pct(s.falseContinue), s.fp, s.fn]);
    }
    perLanguage.push(...groups.slice(0, 3).map(([label, set]) => [label, score(set)]));
  }
  table(
    'turn-end judge script (herdr-companion judge classify --script-only) on companion/tests/fixtures/judge-{corpus,heldout}.jsonl',
    ['set', 'cases', 'precision (continue)', 'recall (continue)', 'false-continue rate (done)', 'false continues', 'missed continues'],
    rows,
  );
  for (const [label, s] of perLanguage) {
    const pass = s.precision >= PRECISION_TARGET && s.falseContinue <= FALSE_CONTINUE_TARGET;
    console.log(`judge script, ${label}: precision ${pct(s.precision)} (target ≥ ${PRECISION_TARGET}), false-continue rate ${pct(s.falseContinue)} (target ≤ ${FALSE_CONTINUE_TARGET}), recall ${pct(s.recall)}: ${pass ? 'PASS' : 'OVER'}`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await judgeCorpusBench({ table }).catch((error) => {
    console.error(`bench: failed — ${error.message}`);
    process.exit(1);
  });
}
