// Request pacing bench (issue 26, acceptance 4): backend requests per hour of one ChatGPT
// account with one and with five bound tabs streaming, in simulated time through ext-core
// (`cargo run --release -p ext-core --example pacing_bench`: the composed machine, its
// request pacer and recovery planners, an hour of 5 s page reports). Healthy streams make
// no request; frozen ones (every tab's planner wants a probe all the time, the worst case)
// are held to one per 45 s per account: at most 80 per hour. The figures are printed, no
// timed assertion. Run alone: BENCH_ONLY=pacing node e2e/bench.mjs.
import { execFileSync } from 'node:child_process';
import { REPO_ROOT } from '../lib/paths.mjs';

const EXPECTED_MAX = 80; // 3 600 s / 45 s (ext-core request_pacer::PACE_MS)

export async function pacingBench({ table }) {
  const out = execFileSync('cargo', ['run', '--quiet', '--release', '-p', 'ext-core', '--example', 'pacing_bench'], { cwd: REPO_ROOT, encoding: 'utf8' });
  const rows = out.trim().split('\n').map((line) => {
    const [tabs, state, requests] = line.trim().split(/\s+/);
    return [`${tabs} tab${tabs === '1' ? '' : 's'}, ${state}`, requests, `≤ ${EXPECTED_MAX}`, Number(requests) <= EXPECTED_MAX ? 'PASS' : 'OVER'];
  });
  table('backend requests per hour, one ChatGPT account (simulated time through ext-core)', ['bound streaming tabs', 'requests/hour', 'expected', ''], rows);
}
