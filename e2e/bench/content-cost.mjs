// Content script cost on a streaming page (REFERENCE.md §2: "a full DOM scan on every
// streamed token"). The ChatGPT fixture is opened on a conversation with BENCH_TURNS
// (200) existing turns; then, in the page's main world, an assistant reply streams
// BENCH_STREAM_TOKENS tokens at one token every BENCH_TOKEN_MS ms into a turn carrying
// `data-is-streaming="true"` / `aria-busy="true"` with ChatGPT's Stop button shown, and
// finishes (attributes removed, Send button back). Two runs in one invocation:
//   (a) the extension loaded, the chat bound to a workspace (HUD + page facts active);
//   (b) baseline: a second browser without `--load-extension`, same fixture, same stream.
// Main-thread cost is CDP `Performance.getMetrics` deltas over the stream (the content
// script runs on the page's main thread, so its work is in the page's metrics). The
// content script's own counters come from the HUD host's `data-facts-computed` /
// `data-facts-sent` / `data-facts-ms` (extension/content.js). Nothing here asserts a time: it prints.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from '@playwright/test';
import { CHROMIUM_BIN } from '../lib/paths.mjs';
import { ChatGptFixture, chatgptUrl } from '../fixtures/chatgpt.mjs';
import { CONVERSATION, continuityWorld, openAndBind } from '../lib/continuity.mjs';
import { HUD_HOST } from '../lib/hud.mjs';

const TURNS = Number(process.env.BENCH_TURNS ?? 200);
const TOKENS = Number(process.env.BENCH_STREAM_TOKENS ?? 400);
const TOKEN_MS = Number(process.env.BENCH_TOKEN_MS ?? 20);
/** Tokens per paragraph of the streamed reply (a new <p> then, like markdown rendering). */
const TOKENS_PER_PARAGRAPH = 25;
const METRICS = ['ScriptDuration', 'TaskDuration', 'LayoutCount', 'RecalcStyleCount', 'LayoutDuration', 'RecalcStyleDuration'];

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

/** Runs in the page's main world: streams `tokens` tokens, resolves with what it did. */
function streamInPage({ tokens, tokenMs, tokensPerParagraph }) {
  return new Promise((resolve) => {
    const thread = document.getElementById('thread');
    const slot = document.getElementById('composer-trailing');
    const stop = document.createElement('button');
    stop.type = 'button';
    stop.setAttribute('data-testid', 'stop-button');
    stop.textContent = 'Stop streaming';
    const send = slot.firstElementChild;
    slot.replaceChildren(stop);
    const article = document.createElement('article');
    article.setAttribute('data-testid', `conversation-turn-${thread.children.length + 1}`);
    article.setAttribute('data-turn', 'assistant');
    const message = document.createElement('div');
    message.setAttribute('data-message-author-role', 'assistant');
    message.setAttribute('data-message-id', crypto.randomUUID());
    message.setAttribute('data-is-streaming', 'true');
    message.setAttribute('aria-busy', 'true');
    const body = document.createElement('div');
    body.className = 'markdown prose';
    message.append(body);
    article.append(message);
    thread.append(article);
    let paragraph = null;
    let sent = 0;
    let mutations = 4; // stop button swap, the turn
    const start = performance.now();
    const tick = () => {
      if (sent % tokensPerParagraph === 0) {
        paragraph = document.createElement('p');
        body.append(paragraph);
        mutations += 1;
      }
      paragraph.append(document.createTextNode(`${sent === 0 ? '' : ' '}tok${sent}`));
      mutations += 1;
      sent += 1;
      if (sent < tokens) {
        setTimeout(tick, Math.max(0, start + sent * tokenMs - performance.now()));
        return;
      }
      message.removeAttribute('data-is-streaming');
      message.removeAttribute('aria-busy');
      slot.replaceChildren(send);
      mutations += 3;
      resolve({ tokens: sent, mutations, ms: performance.now() - start });
    };
    setTimeout(tick, tokenMs);
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
    return { computed: Number(host.dataset.factsComputed ?? NaN), sent: Number(host.dataset.factsSent ?? NaN), ms: Number(host.dataset.factsMs ?? NaN) };
  }, HUD_HOST);
}

/** One streaming run on an open page; returns metric deltas and counters. */
async function measureStream(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
  await sleep(1_000); // let the load and the first facts settle
  const countersBefore = await hostCounters(page);
  const before = await metricsOf(cdp);
  const stream = await page.evaluate(streamInPage, { tokens: TOKENS, tokenMs: TOKEN_MS, tokensPerParagraph: TOKENS_PER_PARAGRAPH });
  await sleep(500); // the last coalesced recompute (≤ 100 ms) lands inside the window
  const after = await metricsOf(cdp);
  const countersAfter = await hostCounters(page);
  await cdp.detach();
  const delta = Object.fromEntries(METRICS.map((name) => [name, (after[name] ?? 0) - (before[name] ?? 0)]));
  const counters = countersBefore && countersAfter
    ? { computed: countersAfter.computed - countersBefore.computed, sent: countersAfter.sent - countersBefore.sent, ms: countersAfter.ms - countersBefore.ms }
    : null;
  return { stream, delta, counters };
}

function seededFixture() {
  const fixture = new ChatGptFixture({ csp: 'none' });
  fixture.conversations.set(CONVERSATION, { title: 'Long conversation', turns: longConversation(TURNS) });
  return fixture;
}

/** (a) the extension loaded and the chat bound: the HUD and page facts are live. */
async function withExtension(Sandbox) {
  const sandbox = new Sandbox({ autostart: false });
  try {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    // continuityWorld seeded a short conversation; the long one replaces it.
    fixture.conversations.set(CONVERSATION, { title: 'Long conversation', turns: longConversation(TURNS) });
    const chat = { url: chatgptUrl.conversation(CONVERSATION), project: false };
    const { page } = await openAndBind(context, worker, chat);
    const turns = await page.locator('[data-message-author-role]').count();
    return { turns, ...(await measureStream(page)) };
  } finally {
    await sandbox.dispose();
  }
}

/** (b) the same page in a browser without the extension. */
async function baseline() {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'hc-bench-'));
  let context = null;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_BIN,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic', '--disable-extensions'],
    });
    const fixture = seededFixture();
    await fixture.install(context);
    const page = await context.newPage();
    await page.goto(chatgptUrl.conversation(CONVERSATION));
    const turns = await page.locator('[data-message-author-role]').count();
    if ((await page.locator(HUD_HOST).count()) !== 0) throw new Error('the baseline browser shows the HUD: it loaded the extension');
    return { turns, ...(await measureStream(page)) };
  } finally {
    await context?.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  }
}

/** Runs both and prints the tables with `table(title, header, rows)`. */
export async function contentScriptCostBench({ Sandbox, table }) {
  const ext = await withExtension(Sandbox);
  const base = await baseline();
  const fmtMs = (seconds) => `${(seconds * 1000).toFixed(1)} ms`;
  const perToken = (seconds) => `${((seconds * 1e6) / TOKENS).toFixed(1)} µs`;
  const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(2)}x` : 'n/a');
  const row = (name, fmt, per) => [
    name, fmt(ext.delta[name]), fmt(base.delta[name]), per(ext.delta[name] - base.delta[name]), ratio(ext.delta[name], base.delta[name]),
  ];
  const count = (n) => String(Math.round(n));
  const perTokenCount = (n) => (n / TOKENS).toFixed(3);
  table(
    `content script cost on a streaming page: ${ext.stream.tokens} tokens every ${TOKEN_MS} ms (${ext.stream.ms.toFixed(0)} ms stream, ${ext.stream.mutations} DOM mutations) after ${ext.turns} existing turns; CDP Performance.getMetrics deltas`,
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
  if (!ext.counters || Number.isNaN(ext.counters.computed)) {
    throw new Error('the HUD host carries no data-facts-computed / data-facts-sent counters; rebuild the extension (bash scripts/build.sh)');
  }
  table(
    'page facts during the stream (extension/content.js counters on the HUD host)',
    ['what', 'count', 'per token'],
    [
      ['tokens streamed', ext.stream.tokens, '1.000'],
      ['DOM mutations made by the stream', ext.stream.mutations, (ext.stream.mutations / TOKENS).toFixed(3)],
      ['facts recomputes (coalesced, ≤ 1 per 100 ms)', ext.counters.computed, (ext.counters.computed / TOKENS).toFixed(3)],
      ['page_facts messages sent (changed facts only)', ext.counters.sent, (ext.counters.sent / TOKENS).toFixed(3)],
    ],
  );
  table(
    'time inside the facts recompute (content.js data-facts-ms: facts() + JSON.stringify, performance.now())',
    ['what', 'total', 'per recompute', 'per token'],
    [['facts recompute', `${ext.counters.ms.toFixed(2)} ms`, `${((ext.counters.ms * 1000) / Math.max(1, ext.counters.computed)).toFixed(1)} µs`, `${((ext.counters.ms * 1000) / TOKENS).toFixed(1)} µs`]],
  );
}
