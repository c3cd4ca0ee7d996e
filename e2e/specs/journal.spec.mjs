// Issue 12, the extension's Continuity Journal writer and the context pressure (SPEC C1,
// R1), in real Chromium with the built extension, the real companion over real Native
// Messaging and its real state.db:
// - a finished reply of a bound chat and the question it answers are in the runtime's
//   journal (read back with `continuity.resume`, the planner's call), with the page's own
//   message ids, and the HUD names the chain;
// - with the runtime stopped the turns wait in the worker's persisted outbox — across a
//   restart of the browser (and its service worker) — and the HUD says so; once the runtime
//   is back they are written, each once;
// - the HUD shows the conversation's context pressure, and a long thread raises it;
// - a legacy HERDR_HANDOFF_V1 packet in a journaled reply is restored as its own chain and
//   resumes through continuity.resume by its packet id, its content fenced (X11).
//
// Every wait is a poll with a deadline on a HUD hook, the snapshot or the runtime's answer.
import { test, expect } from '../lib/test.mjs';
import { askAndWait, CHATS, CONVERSATION, continuityWorld, openAndBind, persistedContinuity, relaunchBrowser, ContinuityHud } from '../lib/continuity.mjs';
import { HudProbe } from '../lib/hud.mjs';
import { nativeRequestFromWorker } from '../lib/extension.mjs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const CHAT = CHATS.find((c) => !c.project);

/** The journal's turns of the chat, as a planner reads them (`continuity.resume`). */
async function journaled(worker) {
  const answer = await nativeRequestFromWorker(worker, 'continuity.resume', { conversation_url: CHAT.url });
  if (answer.error) return { error: answer.error.code, turns: [] };
  return answer.result;
}

/** The page's message ids of its last user turn and its last reply. */
async function lastIds(page) {
  return page.evaluate(() => {
    const last = (role) => [...document.querySelectorAll(`[data-message-author-role="${role}"][data-message-id]`)].pop()?.getAttribute('data-message-id');
    return { user: last('user'), assistant: last('assistant') };
  });
}

test.describe('Continuity Journal writer (C1) and context pressure (R1)', () => {
  test('a finished reply and its question are journaled with the page\'s ids; the HUD names the chain and the pressure', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox, { replyWith: () => 'The loader is in and its tests pass.' });
    const { page, hud } = await openAndBind(context, worker, CHAT);
    await hud.expect('data-journal', 'journalNothingYet', 'a bound chat with nothing recorded yet says so');
    await hud.expect('data-pressure-level', 'normal', 'R1: a short thread has room');
    await askAndWait(page, fixture, 'Add the config loader and its tests');
    await hud.expect('data-journal', 'journalRecorded', 'C1: the HUD says the turns are recorded');
    const ids = await lastIds(page);
    const record = await journaled(worker);
    expect(record.type).toBe('continuity_resumed');
    const turns = record.turns.map((t) => ({ id: t.message_id, role: t.role, text: t.text, conversation: t.conversation_id }));
    expect(turns).toContainEqual({ id: ids.user, role: 'user', text: 'Add the config loader and its tests', conversation: CONVERSATION });
    expect(turns).toContainEqual({ id: ids.assistant, role: 'assistant', text: 'The loader is in and its tests pass.', conversation: CONVERSATION });
    expect(record.workspace_ids).toEqual(['w1']);
    await expect(hud.host.locator('p[data-line="journal"]')).toContainText(record.continuity_id);
    await expect(hud.host.locator('p[data-line="pressure"]')).toContainText('tokens');
    expect(Number(await hud.state.getAttribute('data-pressure-messages'))).toBeGreaterThanOrEqual(4);
  });

  test('a turn whose JSON escapes double its size is journaled, cut to fit, not dropped at the port (C1)', async ({ sandbox }) => {
    // Each `"` is one byte of text and two of JSON: under 64 KiB of text each, the two
    // turns' message would be ~250 KB of JSON, over what the worker takes from a page.
    const question = `Quote check ${'"'.repeat(60_000)}`;
    const { context, worker, fixture } = await continuityWorld(sandbox, { replyWith: () => `Quoted ${'"'.repeat(65_000)} done` });
    const { page, hud } = await openAndBind(context, worker, CHAT);
    await askAndWait(page, fixture, question, { paste: true });
    await hud.expect('data-journal', 'journalRecorded', 'C1: the turns are recorded');
    // The turns as stored (`continuity.resume` shows each turn's start only).
    const stored = JSON.parse(execFileSync('python3', ['-c',
      'import json,sqlite3,sys; c=sqlite3.connect("file:"+sys.argv[1]+"?mode=ro", uri=True); print(json.dumps(dict(c.execute("SELECT role, text FROM journal_turns"))))',
      path.join(sandbox.home, 'state.db')], { encoding: 'utf8', maxBuffer: 1 << 24 }));
    expect(stored.user.startsWith('Quote check """'), 'the question, its start kept').toBe(true);
    expect(stored.assistant.startsWith('Quoted """'), 'the reply, its start kept').toBe(true);
    expect(stored.assistant.slice(-20), 'and its end').toBe(`${'"'.repeat(15)} done`);
    for (const text of [stored.user, stored.assistant]) {
      expect(text).toContain('characters left out by herdr-continuity');
      expect(Buffer.byteLength(JSON.stringify(text)) - 2, 'at most 64 KiB as JSON').toBeLessThanOrEqual(64 * 1024);
    }
  });

  test.describe('with the runtime stopped (no autostart)', () => {
  test.use({ sandboxOptions: { autostart: false } });
  test('turns wait in the persisted outbox while the runtime is down, across a worker restart, and are written once it is back', async ({ sandbox }) => {
    test.slow();
    let { context, worker, fixture } = await continuityWorld(sandbox, { replyWith: (text) => `Done: ${text}` });
    let { page, hud } = await openAndBind(context, worker, CHAT);
    await sandbox.stopRuntime();
    await askAndWait(page, fixture, 'First while the runtime is away');
    await hud.expect('data-journal', 'journalWaiting', 'C1: the HUD says the turns wait');
    await expect.poll(async () => (await persistedContinuity(worker))?.journal?.outbox?.length ?? 0,
      { message: 'both turns are in the persisted outbox', timeout: 15_000 }).toBe(2);
    const waiting = await lastIds(page);
    // The browser (and its service worker) restarts while the runtime is still down.
    ({ context, worker } = await relaunchBrowser(sandbox, fixture));
    page = await context.newPage();
    await page.goto(CHAT.url);
    hud = new ContinuityHud(page);
    await hud.expect('data-journal', 'journalWaiting', 'the outbox survived the restart');
    await sandbox.startRuntime();
    await new HudProbe(page).expectCompanionConnected();
    await hud.expect('data-journal', 'journalRecorded', 'the waiting turns are written once the runtime is back', 40_000);
    await askAndWait(page, fixture, 'Second with the runtime back');
    await hud.expect('data-journal', 'journalRecorded');
    const latest = await lastIds(page);
    await expect.poll(async () => (await journaled(worker)).turns.length, { message: 'four turns journaled', timeout: 20_000 }).toBeGreaterThanOrEqual(4);
    const turns = (await journaled(worker)).turns;
    for (const id of [waiting.user, waiting.assistant, latest.user, latest.assistant]) {
      expect(turns.filter((t) => t.message_id === id), `turn ${id} is journaled exactly once`).toHaveLength(1);
    }
    expect(turns.find((t) => t.message_id === waiting.user)?.text).toBe('First while the runtime is away');
    // The runtime commits before it answers, and the worker writes its snapshot (the outbox
    // without those turns) up to PERSIST_DEBOUNCE_MS after the answer: the runtime can show
    // the turns before the stored outbox is empty, so this waits for it (a one-shot read
    // failed once under two Playwright workers).
    await expect.poll(async () => (await persistedContinuity(worker))?.journal?.outbox ?? [],
      { message: 'the persisted outbox is empty once the turns are written', timeout: 10_000 }).toEqual([]);
  });
  });

  test('a legacy HERDR_HANDOFF_V1 packet in a journaled reply resumes through continuity.resume (X11)', async ({ sandbox }) => {
    const packet = '<<<HERDR_HANDOFF_V1 id=ht:e2e29:legacy1>>> Goal: ship the config loader. State: tests green, release notes next. <<<END_HERDR_HANDOFF_V1>>>';
    const { context, worker, fixture } = await continuityWorld(sandbox, { replyWith: () => `Your old transfer: ${packet}` });
    const { page, hud } = await openAndBind(context, worker, CHAT);
    await askAndWait(page, fixture, 'Where were we with the loader?');
    await hud.expect('data-journal', 'journalRecorded', 'C1: the turns are recorded');
    await expect.poll(async () => (await journaled(worker)).legacy_packets?.[0]?.packet_id ?? null,
      { message: 'the chat\'s chain links the restored packet', timeout: 15_000 }).toBe('ht:e2e29:legacy1');
    const answer = await nativeRequestFromWorker(worker, 'continuity.resume', { continuity_id: 'ht:e2e29:legacy1' });
    expect(answer.error).toBeUndefined();
    expect(answer.result.continuity_id).toBe((await journaled(worker)).legacy_packets[0].continuity_id);
    const [restored] = answer.result.turns;
    expect(restored.text).toContain('<<<HC_DATA kind=legacy_handoff n=');
    expect(restored.text).toContain('Goal: ship the config loader. State: tests green, release notes next.');
    expect(restored.text).not.toContain('<<<HERDR_HANDOFF_V1');
  });

  test('a long thread raises the HUD\'s context pressure (R1)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const long = 'The refactor touches the router, the pool and the cache. '.repeat(400);
    const turns = [];
    for (let i = 0; i < 24; i++) turns.push({ role: 'user', text: `Step ${i}` }, { role: 'assistant', text: long });
    fixture.conversations.get(CONVERSATION).turns = turns;
    const { hud } = await openAndBind(context, worker, CHAT);
    await hud.expect('data-pressure-level', /^(recommend|auto|high_risk)$/, 'a thread of ~140k tokens is past the recommend threshold');
    await expect(hud.host.locator('p[data-line="pressure"]')).toHaveClass(/withheld/);
    // The fixture numbers its turns conversation-turn-1 … -48; the floor counts from 0 and
    // errs high by one (R1: an estimate that errs high).
    expect(Number(await hud.state.getAttribute('data-pressure-messages'))).toBe(49);
  });
});
