// Content script cost on a streaming page (REFERENCE.md §2: "a full DOM scan on every
// streamed token"), per ChatGPT layout generation (BENCH_LAYOUTS, default every layout the
// fixture renders: `classic`, `section` and the newest, 2026-09 `thread`). The ChatGPT fixture
// is opened on a conversation with BENCH_TURNS (200) existing turns; a message is typed
// into the composer, then, in the page's main world, it is submitted through the fixture's
// own front end (Enter): the fixture shows Stop, appends the user turn and the assistant
// turn with that layout's own streaming cues (classic: `.result-streaming` and
// `aria-busy`; thread: no message id and no `data-chatgpt-selection-message-id` yet). The
// bench then streams BENCH_STREAM_TOKENS tokens at one token every BENCH_TOKEN_MS ms into
// the reply's body (a new <p> every few tokens, like markdown rendering; the fixture's
// own reply is told to stream for an hour so that it never overwrites them) and ends the
// reply with the fixture's Stop, which finishes the message the way a completed stream
// does (id, final marker, actions, Send back). Two browsers per layout, both open at once:
//   (a) the extension loaded, the chat bound to a workspace (HUD + page facts active);
//   (b) baseline: a second browser without `--load-extension`, same fixture, same stream.
// Each streams BENCH_RUNS (7) replies, one after the other, in windows that alternate
// between (a) and (b) (a b, b a, a b, …), so that a load change on a shared machine falls
// on both; the ratio is the median window of (a) over the median window of (b), and the
// per-window values are printed next to it.
// Main-thread cost is CDP `Performance.getMetrics` deltas over the stream (the content
// script runs on the page's main thread, so its work is in the page's metrics). The
// content script's own counters come from the HUD host's `data-facts-computed` /
// `data-facts-skipped` / `data-facts-sent` / `data-facts-ms` (extension/content.js).
// BENCH_PROFILE=1 also records a CPU profile (CDP Profiler) of each (a) window and prints
// where the content script's samples fall (it perturbs the timings it is printed beside).
// Nothing here asserts a time: it prints, and says PASS or OVER next to the target.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from '@playwright/test';
import { CHROMIUM_BIN } from '../lib/paths.mjs';
import { ChatGptFixture, LAYOUTS, chatgptUrl, layoutUi } from '../fixtures/chatgpt.mjs';
import { CONVERSATION, continuityWorld, openAndBind } from '../lib/continuity.mjs';
import { HUD_HOST } from '../lib/hud.mjs';

const TURNS = Number(process.env.BENCH_TURNS ?? 200);
const TOKENS = Number(process.env.BENCH_STREAM_TOKENS ?? 400);
const TOKEN_MS = Number(process.env.BENCH_TOKEN_MS ?? 20);
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 7));
const PROFILE = process.env.BENCH_PROFILE === '1';
const BENCH_LAYOUTS = (process.env.BENCH_LAYOUTS ?? LAYOUTS.join(',')).split(',').map((l) => l.trim()).filter(Boolean);
/** Tokens per paragraph of the streamed reply (a new <p> then, like markdown rendering). */
const TOKENS_PER_PARAGRAPH = 25;
/** issue 8 "Small and quick": the content script's ScriptDuration ≤ 1.15× the baseline. */
const SCRIPT_RATIO_TARGET = 1.15;
/** Long enough that the fixture's own reply never streams a second step during the bench. */
const FIXTURE_STREAM_MS = 3_600_000;
const PROMPT = 'What does the next step of the refactor change?';
const METRICS = ['ScriptDuration', 'TaskDuration', 'LayoutCount', 'RecalcStyleCount', 'LayoutDuration', 'RecalcStyleDuration'];
/**
 * The element the fixture streams a reply's text into, per layout (chatgpt-page.js:
 * `classicMessage`'s `.markdown` body; the thread unit's assistant-message markdown).
 */
const REPLY_BODY = {
  classic: '[data-message-author-role="assistant"] > .markdown',
  section: '[data-message-author-role="assistant"] > .markdown',
  thread: '[data-chatgpt-search-unit-key$=":assistant"] [data-markdown-text-style="assistant-message"]',
};

/** A long existing conversation: alternating user / assistant turns of a few lines. */
function longConversation(turns) {
  const out = [];
  for (let i = 0; i < turns; i++) {
    const role = i % 2 === 0 ? 'user' : 'assistant';
    const text = role === 'user'
      ? `Question ${i / 2 + 1}: what does step ${i} of the refactor change?`
      : `Step ${i} moves the handler into its own module.\n`.repeat(6);
    out.push({ role, text });
  }
  return out;
}

/**
 * Runs in the page's main world: submits the typed message through the fixture's front end
 * (Enter), waits for the fixture's streaming reply, streams `tokens` tokens into its body,
 * then ends it with the fixture's Stop. Resolves with what it did.
 */
function streamInPage({ composer, stop, body, tokens, tokenMs, tokensPerParagraph }) {
  return new Promise((resolve, reject) => {
    const bodies = () => document.querySelectorAll(body);
    const before = bodies().length;
    const start = performance.now();
    document.querySelector(composer).dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true }));
    // The fixture's reply shows its first words at once (its first streaming step); the
    // bench's tokens follow them.
    const waitForReply = () => {
      const all = bodies();
      const reply = all.length > before ? all[all.length - 1] : null;
      if (reply && reply.textContent !== '') return streamInto(reply);
      if (performance.now() - start > 10_000) return reject(new Error('the fixture showed no streaming reply within 10 s'));
      setTimeout(waitForReply, 10);
    };
    const streamInto = (reply) => {
      let paragraph = null;
      let sent = 0;
      let appended = 0;
      const streamStart = performance.now();
      const tick = () => {
        if (sent % tokensPerParagraph === 0) {
          paragraph = document.createElement('p');
          reply.append(paragraph);
          appended += 1;
        }
        paragraph.append(document.createTextNode(` tok${sent}`));
        appended += 1;
        sent += 1;
        if (sent < tokens) {
          setTimeout(tick, Math.max(0, streamStart + sent * tokenMs - performance.now()));
          return;
        }
        const stopButton = document.querySelector(stop);
        if (!stopButton) return reject(new Error(`no Stop (${stop}) while the reply streamed`));
        stopButton.click();
        resolve({ tokens: sent, appended, ms: performance.now() - streamStart, total: performance.now() - start });
      };
      setTimeout(tick, tokenMs);
    };
    waitForReply();
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function metricsOf(cdp) {
  const { metrics } = await cdp.send('Performance.getMetrics');
  return Object.fromEntries(metrics.map((m) => [m.name, m.value]));
}

async function hostCounters(page) {
  return page.evaluate((selector) => {
    const host = document.querySelector(selector);
    if (!host) return null;
    // The content script writes its quiet-path counters when asked (extension/content.js).
    host.dispatchEvent(new Event('herdr-continuity:counters'));
    const n = (value) => Number(value ?? NaN);
    const d = host.dataset;
    return {
      computed: n(d.factsComputed), skipped: n(d.factsSkipped ?? 0), sent: n(d.factsSent), ms: n(d.factsMs),
      healthSamples: n(d.healthSamples ?? 0), healthCallbacks: n(d.healthCallbacks ?? 0),
    };
  }, HUD_HOST);
}

/**
 * One streaming window on an open page: a new message, its streamed reply, Stop. Returns
 * metric deltas, counters, whether exactly one more finished reply shows, and (with
 * `profile`) the CPU profile of the window.
 */
async function measureStream(page, layout, { profile = false } = {}) {
  const ui = layoutUi(layout);
  const finishedBefore = await page.locator(ui.finished).count();
  await page.locator(ui.composer).fill(PROMPT);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
  await sleep(1_000); // let the load, the typed draft and the first facts settle
  const countersBefore = await hostCounters(page);
  if (profile) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 100 });
    await cdp.send('Profiler.start');
  }
  const before = await metricsOf(cdp);
  const stream = await page.evaluate(streamInPage, {
    composer: ui.composer, stop: ui.stop, body: REPLY_BODY[layout], tokens: TOKENS, tokenMs: TOKEN_MS, tokensPerParagraph: TOKENS_PER_PARAGRAPH,
  });
  await sleep(500); // the last coalesced recompute (≤ 100 ms) lands inside the window
  const after = await metricsOf(cdp);
  const cpuProfile = profile ? (await cdp.send('Profiler.stop')).profile : null;
  const countersAfter = await hostCounters(page);
  await cdp.detach();
  const finished = (await page.locator(ui.finished).count()) === finishedBefore + 1;
  const delta = Object.fromEntries(METRICS.map((name) => [name, (after[name] ?? 0) - (before[name] ?? 0)]));
  const counters = countersBefore && countersAfter
    ? Object.fromEntries(Object.keys(countersAfter).map((key) => [key, countersAfter[key] - countersBefore[key]]))
    : null;
  return { stream, delta, counters, finished, cpuProfile };
}

const fixtureOptions = (layout) => ({ csp: 'none', layout, streamMs: FIXTURE_STREAM_MS });

/** (a) the extension loaded and the chat bound: the HUD and page facts are live. */
async function openWithExtension(Sandbox, layout) {
  const sandbox = new Sandbox({ autostart: false });
  try {
    const { context, worker, fixture } = await continuityWorld(sandbox, fixtureOptions(layout));
    // continuityWorld seeded a short conversation; the long one replaces it.
    fixture.conversations.set(CONVERSATION, { title: 'Long conversation', turns: longConversation(TURNS) });
    const chat = { url: chatgptUrl.conversation(CONVERSATION), project: false };
    const { page } = await openAndBind(context, worker, chat);
    const generation = await page.locator(HUD_HOST).getAttribute('data-generation');
    const turns = await page.locator(layoutUi(layout).userTurn).count() * 2;
    return { page, turns, generation, close: () => sandbox.dispose() };
  } catch (error) {
    await sandbox.dispose();
    throw error;
  }
}

/** (b) the same page in a browser without the extension. */
async function openBaseline(layout) {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'hc-bench-'));
  let context = null;
  const close = async () => {
    await context?.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  };
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_BIN,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic', '--disable-extensions'],
    });
    const fixture = new ChatGptFixture(fixtureOptions(layout));
    fixture.conversations.set(CONVERSATION, { title: 'Long conversation', turns: longConversation(TURNS) });
    await fixture.install(context);
    const page = await context.newPage();
    await page.goto(chatgptUrl.conversation(CONVERSATION));
    const turns = await page.locator(layoutUi(layout).userTurn).count() * 2;
    if ((await page.locator(HUD_HOST).count()) !== 0) throw new Error('the baseline browser shows the HUD: it loaded the extension');
    return { page, turns, close };
  } catch (error) {
    await close();
    throw error;
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Per metric (and per counter), the median over the windows of one side. */
function medianWindow(windows) {
  const of = (pick) => Object.fromEntries(Object.keys(pick(windows[0]) ?? {}).map((key) => [key, median(windows.map((w) => pick(w)[key]))]));
  return {
    windows,
    stream: { ...windows[0].stream, ms: median(windows.map((w) => w.stream.ms)) },
    delta: of((w) => w.delta),
    counters: windows[0].counters ? of((w) => w.counters) : null,
    finished: windows.every((w) => w.finished),
  };
}

/**
 * Both browsers open, RUNS windows each, alternating which one streams first so that
 * neither always follows the other.
 */
async function measureLayout(Sandbox, layout) {
  const ext = await openWithExtension(Sandbox, layout);
  let base = null;
  try {
    base = await openBaseline(layout);
    const extWindows = [];
    const baseWindows = [];
    for (let run = 0; run < RUNS; run++) {
      const order = run % 2 === 0 ? ['ext', 'base'] : ['base', 'ext'];
      for (const side of order) {
        if (side === 'ext') extWindows.push(await measureStream(ext.page, layout, { profile: PROFILE }));
        else baseWindows.push(await measureStream(base.page, layout));
      }
    }
    return {
      ext: { turns: ext.turns, generation: ext.generation, ...medianWindow(extWindows) },
      base: { turns: base.turns, ...medianWindow(baseWindows) },
    };
  } finally {
    await base?.close();
    await ext.close();
  }
}

const ratioOf = (a, b) => (b > 0 ? a / b : NaN);
const fmtRatio = (r) => (Number.isFinite(r) ? `${r.toFixed(2)}x` : 'n/a');

/** The detailed tables of one layout. */
function layoutTables(table, layout, ext, base) {
  const fmtMs = (seconds) => `${(seconds * 1000).toFixed(1)} ms`;
  const perToken = (seconds) => `${((seconds * 1e6) / TOKENS).toFixed(1)} µs`;
  const row = (name, fmt, per) => [
    name, fmt(ext.delta[name]), fmt(base.delta[name]), per(ext.delta[name] - base.delta[name]), fmtRatio(ratioOf(ext.delta[name], base.delta[name])),
  ];
  const count = (n) => String(Math.round(n));
  const perTokenCount = (n) => (n / TOKENS).toFixed(3);
  table(
    `[${layout}] content script cost on a streaming page: ${ext.stream.tokens} tokens every ${TOKEN_MS} ms (${ext.stream.ms.toFixed(0)} ms stream, ${ext.stream.appended} nodes appended by the bench plus the fixture's own submit and finish) after ${ext.turns} existing turns; CDP Performance.getMetrics deltas, median of ${RUNS} windows per side`,
    ['metric', '(a) extension', '(b) baseline', '(a-b) per token', 'ratio (a)/(b)'],
    [
      row('ScriptDuration', fmtMs, perToken),
      row('TaskDuration', fmtMs, perToken),
      row('LayoutDuration', fmtMs, perToken),
      row('RecalcStyleDuration', fmtMs, perToken),
      row('LayoutCount', count, perTokenCount),
      row('RecalcStyleCount', count, perTokenCount),
    ],
  );
  table(
    `[${layout}] ScriptDuration per window, in the order they ran (a b, b a, …)`,
    ['window', '(a) extension', '(b) baseline', 'ratio (a)/(b)'],
    ext.windows.map((w, i) => [
      String(i + 1), fmtMs(w.delta.ScriptDuration), fmtMs(base.windows[i].delta.ScriptDuration),
      fmtRatio(ratioOf(w.delta.ScriptDuration, base.windows[i].delta.ScriptDuration)),
    ]),
  );
  const c = ext.counters;
  table(
    `[${layout}] page facts during the stream (extension/content.js counters on the HUD host, median window; generation ${ext.generation || 'none'})`,
    ['what', 'count', 'per token'],
    [
      ['tokens streamed', ext.stream.tokens, '1.000'],
      ['facts recomputes (coalesced, ≤ 1 per 100 ms; while the reply streams, the profile\'s rechecks)', c.computed, (c.computed / TOKENS).toFixed(3)],
      ['  of which answered by the quiet path (only reply text changed)', c.skipped, (c.skipped / TOKENS).toFixed(3)],
      ['page_facts messages sent (changed facts only)', c.sent, (c.sent / TOKENS).toFixed(3)],
    ],
  );
  // The page health meters run in the same content script (its observer's callbacks, a 1 s
  // timer, Long Tasks, the heap): their cost is inside (a)'s ScriptDuration above.
  table(
    `[${layout}] page health meters during the stream (same content script; counted in (a)'s ScriptDuration; median window)`,
    ['what', 'count', 'per token'],
    [
      ['health_sample messages sent (one per 5 s)', c.healthSamples, (c.healthSamples / TOKENS).toFixed(3)],
      ['observer callbacks counted in them', c.healthCallbacks, (c.healthCallbacks / TOKENS).toFixed(3)],
    ],
  );
  table(
    `[${layout}] time inside the facts recompute (content.js data-facts-ms: facts() + JSON.stringify, performance.now(), which a page without cross-origin isolation coarsens to 100 µs: rough per recompute)`,
    ['what', 'total', 'per recompute', 'per token'],
    [['facts recompute', `${c.ms.toFixed(2)} ms`, `${((c.ms * 1000) / Math.max(1, c.computed)).toFixed(1)} µs`, `${((c.ms * 1000) / TOKENS).toFixed(1)} µs`]],
  );
}

/**
 * BENCH_PROFILE=1: the (a) windows' CPU samples, by the outermost content.js function on
 * the stack (what the content script's own entry points cost: observer callback, timers,
 * port messages) and by the content.js function that was running.
 */
function profileTable(table, layout, profiles) {
  const entries = new Map();
  const running = new Map();
  const add = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
  let busy = 0;
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const parent = new Map();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    const where = (node) => `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.split('/').pop()}:${node.callFrame.lineNumber + 1}`;
    for (const sample of profile.samples) {
      const leaf = byId.get(sample).callFrame.functionName;
      if (leaf === '(idle)' || leaf === '(program)') continue;
      busy += 1;
      let outer = null;
      let inner = null;
      for (let id = sample; id !== undefined; id = parent.get(id)) {
        const node = byId.get(id);
        if (!/\/content(-[a-z-]+)?\.js$/.test(node.callFrame.url)) continue;
        inner ??= node;
        outer = node;
      }
      add(entries, outer ? where(outer) : '(not the content script)');
      if (inner) add(running, where(inner));
    }
  }
  const top = (map) => [...map].sort((x, y) => y[1] - x[1]).slice(0, 15);
  const share = (n) => `${((100 * n) / Math.max(1, busy)).toFixed(1)} %`;
  table(
    `[${layout}] CPU profile of the (a) windows: busy samples by the content script's entry point (outermost content.js frame)`,
    ['entry', 'samples', 'share'],
    top(entries).map(([key, n]) => [key, n, share(n)]),
  );
  table(
    `[${layout}] the same samples by the content.js function running (innermost content.js frame; native calls count for their caller)`,
    ['function', 'samples', 'share'],
    top(running).map(([key, n]) => [key, n, share(n)]),
  );
}

/** Runs both per layout and prints the tables with `table(title, header, rows)`. */
export async function contentScriptCostBench({ Sandbox, table }) {
  const unknown = BENCH_LAYOUTS.filter((layout) => !LAYOUTS.includes(layout));
  if (unknown.length) throw new Error(`BENCH_LAYOUTS names ${unknown.join(', ')}; use some of ${LAYOUTS.join(', ')}`);
  const results = [];
  for (const layout of BENCH_LAYOUTS) {
    const { ext, base } = await measureLayout(Sandbox, layout);
    if (!ext.counters || Number.isNaN(ext.counters.computed)) {
      throw new Error('the HUD host carries no data-facts-computed / data-facts-sent counters; rebuild the extension (bash scripts/build.sh)');
    }
    if (!ext.generation) throw new Error(`[${layout}] the content script recognised no layout generation on the fixture`);
    if (!ext.finished || !base.finished) throw new Error(`[${layout}] a streamed reply did not finish in the fixture`);
    layoutTables(table, layout, ext, base);
    if (PROFILE) profileTable(table, layout, ext.windows.map((w) => w.cpuProfile));
    results.push({ layout, generation: ext.generation, ext, base, ratio: ratioOf(ext.delta.ScriptDuration, base.delta.ScriptDuration) });
  }
  table(
    `content script ScriptDuration (page facts and the page health meters) against the no-extension baseline, median of ${RUNS} windows per side (target ≤ ${SCRIPT_RATIO_TARGET.toFixed(2)}x, issue 8 "Small and quick"; issue 10: the meters' cost)`,
    ['layout', 'generation', '(a) extension', '(b) baseline', 'ratio', 'target', 'verdict'],
    results.map(({ layout, generation, ext, base, ratio }) => [
      layout, generation, `${(ext.delta.ScriptDuration * 1000).toFixed(1)} ms`, `${(base.delta.ScriptDuration * 1000).toFixed(1)} ms`,
      fmtRatio(ratio), `≤ ${SCRIPT_RATIO_TARGET.toFixed(2)}x`, ratio <= SCRIPT_RATIO_TARGET ? 'PASS' : 'OVER',
    ]),
  );
}
