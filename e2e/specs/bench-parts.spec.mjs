// `npm run bench`'s issue 28 parts run (e2e/bench/cold-start.mjs, e2e/bench/content-cost.mjs):
// one short pass of each through the same code the bench uses, asserting that it measured
// what it says — never how long anything took (speed is the bench's to print).
import { test, expect } from '../lib/test.mjs';
import { Sandbox } from '../lib/sandbox.mjs';
import { coldStartBench } from '../bench/cold-start.mjs';
import { contentScriptCostBench, extensionCalls, extensionShare } from '../bench/content-cost.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';

const quiet = () => {};
const STEPS = ['herdr:script', 'herdr:wasm', 'herdr:state', 'herdr:started', 'herdr:connect', 'herdr:start-view', 'herdr:page-connected'];

test.describe('bench parts (issue 28)', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('the cold start part restarts the worker through the page\'s reconnect and times every step up to the first view', async ({ sandbox }) => {
    const { runs } = await coldStartBench({ Sandbox, table: quiet, say: quiet, runs: 1, sandbox });
    expect(runs).toHaveLength(1);
    const [run] = runs;
    expect(run.byConnect, 'the page port\'s connect started the worker').toBe(true);
    for (const step of STEPS) expect(Number.isFinite(run.marks[step]), `worker mark ${step}`).toBe(true);
    // The steps happen in this order in one worker life, and the page renders after the post:
    // the stored start view first (the bound chat's page is in the record), posted before
    // the wasm starts, then the core's live view.
    expect(run.marks['herdr:wasm']).toBeGreaterThanOrEqual(run.marks['herdr:script']);
    expect(run.marks['herdr:started']).toBeGreaterThanOrEqual(run.marks['herdr:state']);
    expect(run.marks['herdr:start-view']).toBeGreaterThanOrEqual(run.marks['herdr:state']);
    expect(run.marks['herdr:started']).toBeGreaterThanOrEqual(run.marks['herdr:start-view']);
    expect(run.marks['herdr:page-connected']).toBeGreaterThanOrEqual(run.marks['herdr:started']);
    expect(run.started, 'the first view was the stored start view').toBe(true);
    // After the connect that asked for it, and the live view after the core started (the
    // start view's and page-connected's marks are taken once the post returned, which the
    // page's render can precede: tokencost32 saw the live view 0.3 ms before its mark).
    expect(run.view).toBeGreaterThan(run.marks['herdr:connect']);
    expect(run.live).toBeGreaterThan(run.marks['herdr:started']);
    expect(run.companion, 'the first view carries a companion line').toMatch(/^companion[A-Z]/);
  });

  // Chrome streams the worker's wasm with a code cache. Whether V8 writes an entry during a
  // life is its own heuristic (enough optimized code, ~2 s after it): stop 37 saw an idle
  // life write none with main's module as with the start view's (with a lower caching
  // threshold, a lower tiering budget and 2 000 test-clock steps too), so no test asserts it;
  // the bench's warm mode says whether one was written and read (docs/BENCH-LOG.md). What is
  // asserted: the worker streams its module from the extension (a module built from bytes is
  // not streamed and can never be cached), and with the caches cleared before each stop no
  // start reads an entry. (Each life runs in a new renderer, which joins the trace as it
  // starts: a start the trace did not see streaming is left out.)
  const cacheRuns = async (sandbox, cache) => {
    const { runs } = await coldStartBench({ Sandbox, table: quiet, say: quiet, runs: 2, sandbox, cache, trace: true });
    for (const run of runs) expect(run.companion, 'the worker started and its first view reached the page').toMatch(/^companion[A-Z]/);
    const traced = runs.filter((run) => run.wasm.traced);
    expect(traced.length, 'starts the trace saw streaming the wasm (Chrome caches only a streamed compile)').toBeGreaterThan(0);
    return traced;
  };
  test('with the caches cleared before each stop no start reads a code cache entry, and each still shows its view', async ({ sandbox }) => {
    for (const run of await cacheRuns(sandbox, 'none')) expect(run.wasm.cacheHit, 'the start compiled the module afresh').toBe(false);
  });

  test('the per-token part traces a short and a long conversation and attributes calls to the extension', async () => {
    test.setTimeout(120_000);
    const [result] = await contentScriptCostBench({ Sandbox, table: quiet, runs: 1, layouts: ['thread'], turnCounts: [2, 6], tokens: 30 });
    expect(result.sides.map((side) => side.turns)).toEqual([2, 6]);
    for (const side of result.sides) {
      expect(side.windows).toHaveLength(1);
      expect(side.windows[0].stream.tokens).toBe(30);
      expect(side.computed, 'the content script recomputed facts during the stream').toBeGreaterThan(0);
      expect(side.calls, 'the trace holds calls of the extension\'s scripts').toBeGreaterThan(0);
      expect(Number.isFinite(side.usPerToken) && side.usPerToken > 0, 'some extension CPU time per token').toBe(true);
      expect(side.usPerToken, 'thread time within wall time').toBeLessThanOrEqual(side.wallUsPerToken);
    }
  });

  test('the extension\'s calls are its outermost FunctionCall events on a page main thread, counted in thread time', () => {
    const page = { pid: 1, tid: 10 };
    const worker = { pid: 2, tid: 20 };
    const call = (at, ts, dur, tdur, url) => ({ ...at, ph: 'X', name: 'FunctionCall', ts, dur, tdur, args: { data: { url, functionName: 'f', lineNumber: 0 } } });
    const events = [
      { ...page, ph: 'M', name: 'thread_name', args: { name: 'CrRendererMain' } },
      { ...worker, ph: 'M', name: 'thread_name', args: { name: 'ServiceWorker thread' } },
      call(page, 100, 50, 40, `${EXTENSION_ORIGIN}content.js`),
      call(page, 110, 10, 10, `${EXTENSION_ORIGIN}queue-button.js`), // inside the call above
      call(page, 200, 30, 30, 'https://chatgpt.com/app.js'), // the page's own
      call(page, 210, 5, 5, `${EXTENSION_ORIGIN}content.js`), // a listener the page's code ran: the page's time
      call(page, 300, 20, 15, `${EXTENSION_ORIGIN}page-facts.js`),
      call(worker, 100, 500, 500, `${EXTENSION_ORIGIN}worker.js`), // the service worker, not the page
      { ...page, ph: 'X', name: 'TimerFire', ts: 400, dur: 10, tdur: 10, args: { data: {} } },
    ];
    expect(extensionCalls(events)).toEqual({
      cpuMs: 0.055, wallMs: 0.07, calls: 2,
      entries: new Map([['f content.js:1', { calls: 1, cpuMs: 0.04 }], ['f page-facts.js:1', { calls: 1, cpuMs: 0.015 }]]),
    });
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
