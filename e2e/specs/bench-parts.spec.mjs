// `npm run bench`'s issue 28 parts run (e2e/bench/cold-start.mjs, e2e/bench/content-cost.mjs):
// one short pass of each through the same code the bench uses, asserting that it measured
// what it says — never how long anything took (speed is the bench's to print).
import { test, expect } from '../lib/test.mjs';
import { Sandbox } from '../lib/sandbox.mjs';
import { coldStartBench } from '../bench/cold-start.mjs';
import { contentScriptCostBench, extensionShare } from '../bench/content-cost.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';

const quiet = () => {};
const STEPS = ['herdr:script', 'herdr:wasm', 'herdr:state', 'herdr:started', 'herdr:connect', 'herdr:page-connected'];

test.describe('bench parts (issue 28)', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('the cold start part restarts the worker through the page\'s reconnect and times every step up to the first view', async ({ sandbox }) => {
    const { runs } = await coldStartBench({ Sandbox, table: quiet, say: quiet, runs: 1, sandbox });
    expect(runs).toHaveLength(1);
    const [run] = runs;
    expect(run.byConnect, 'the page port\'s connect started the worker').toBe(true);
    for (const step of STEPS) expect(Number.isFinite(run.marks[step]), `worker mark ${step}`).toBe(true);
    // The steps happen in this order in one worker life, and the page renders after the post.
    expect(run.marks['herdr:wasm']).toBeGreaterThanOrEqual(run.marks['herdr:script']);
    expect(run.marks['herdr:started']).toBeGreaterThanOrEqual(run.marks['herdr:state']);
    expect(run.marks['herdr:page-connected']).toBeGreaterThanOrEqual(run.marks['herdr:started']);
    expect(run.view).toBeGreaterThan(run.marks['herdr:page-connected']);
    expect(run.companion, 'the first view carries a companion line').toMatch(/^companion[A-Z]/);
  });

  test('the per-token part profiles a short and a long conversation and attributes samples to the extension', async () => {
    test.setTimeout(120_000);
    const [result] = await contentScriptCostBench({ Sandbox, table: quiet, runs: 1, layouts: ['thread'], turnCounts: [2, 6], tokens: 30 });
    expect(result.sides.map((side) => side.turns)).toEqual([2, 6]);
    for (const side of result.sides) {
      expect(side.windows).toHaveLength(1);
      expect(side.windows[0].stream.tokens).toBe(30);
      expect(side.computed, 'the content script recomputed facts during the stream').toBeGreaterThan(0);
      expect(Number.isFinite(side.usPerToken) && side.usPerToken > 0, 'some extension time per token').toBe(true);
      expect(side.selfUsPerToken).toBeLessThanOrEqual(side.usPerToken);
    }
  });

  test('samples count for the extension by any frame of its origin on the stack, each for its time to the next sample', () => {
    const frame = (functionName, url) => ({ functionName, url, lineNumber: 0 });
    const profile = {
      nodes: [
        { id: 1, callFrame: frame('(root)', ''), children: [2, 3, 5] },
        { id: 2, callFrame: frame('onRecords', `${EXTENSION_ORIGIN}page-facts.js`), children: [4] },
        { id: 3, callFrame: frame('pageCode', 'https://chatgpt.com/app.js'), children: [] },
        { id: 4, callFrame: frame('stringify', ''), children: [] },
        { id: 5, callFrame: frame('(idle)', ''), children: [] },
      ],
      samples: [2, 4, 3, 5, 2],
      timeDeltas: [0, 100, 200, 400, 800],
    };
    const share = extensionShare(profile);
    // Sample i lasts timeDeltas[i + 1]: 2 → 100 µs (own frame), 4 → 200 µs (a built-in the
    // extension called), 3 → 400 µs (the page's), 5 → idle, the last has no next sample.
    expect(share.totalMs).toBeCloseTo(0.3, 6);
    expect(share.selfMs).toBeCloseTo(0.1, 6);
    expect([...share.entries.keys()]).toEqual(['onRecords page-facts.js:1']);
  });
});
