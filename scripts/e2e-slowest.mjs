// Prints the slowest end-to-end tests from a Playwright JSON report (scripts/test.sh runs
// the e2e suite with `--reporter=list,json` and calls this at the end), so the suite's time
// stays visible: `node scripts/e2e-slowest.mjs REPORT.json [N]` (N defaults to 10).
import { readFileSync } from 'node:fs';

const [file, count = '10'] = process.argv.slice(2);
if (!file) {
  console.error('e2e-slowest: give the Playwright JSON report: node scripts/e2e-slowest.mjs REPORT.json [N]');
  process.exit(2);
}
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (error) {
  console.error(`e2e-slowest: cannot read the report ${file} (${error.message}); did the e2e suite run?`);
  process.exit(1);
}

const rows = [];
const walk = (suite, titles) => {
  const here = suite.title && !suite.title.endsWith('.spec.mjs') ? [...titles, suite.title] : titles;
  for (const spec of suite.specs ?? []) {
    for (const run of spec.tests ?? []) {
      const ms = (run.results ?? []).reduce((sum, result) => sum + (result.duration ?? 0), 0);
      rows.push({ ms, file: spec.file ?? suite.file ?? '', title: [...here, spec.title].join(' › '), status: run.status ?? '' });
    }
  }
  for (const child of suite.suites ?? []) walk(child, here);
};
for (const suite of report.suites ?? []) walk(suite, []);

const byFile = new Map();
for (const row of rows) byFile.set(row.file, (byFile.get(row.file) ?? 0) + row.ms);
const fmt = (ms) => `${(ms / 1000).toFixed(1).padStart(7)} s`;
const n = Math.max(1, Number.parseInt(count, 10) || 10);
console.log(`slowest ${Math.min(n, rows.length)} of ${rows.length} e2e tests:`);
for (const row of rows.sort((a, b) => b.ms - a.ms).slice(0, n)) {
  console.log(`${fmt(row.ms)}  ${row.file}  ${row.title}${row.status && row.status !== 'expected' ? `  (${row.status})` : ''}`);
}
console.log(`slowest ${Math.min(n, byFile.size)} e2e files:`);
for (const [name, ms] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${fmt(ms)}  ${name}`);
