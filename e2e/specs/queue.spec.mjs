// Issue 11, the Queue (SPEC Q1–Q8, Q10), in real Chromium with the built extension, the
// real companion and the ChatGPT fixture: the user queues their next message while a reply
// streams; it is sent once, merged in order, after the turn ends; it survives a worker
// restart; a storage failure never loses or overwrites it (an unreadable record is deleted
// without a copy only from the question that says so); over-limit text is refused with a
// message; it goes before a wake that became due at the same time; the side panel shows the
// records a Clear kept aside, copies each one's text and removes one only after a confirm.
//
// "Sent once" is counted at the fixture's backend after a checkpoint (the queue is empty
// again and the reply finished), never after a sleep.
import { test, expect } from '../lib/test.mjs';
import { CHATS, CONVERSATION, agentCycle, continuityWorld, openAndBind, relaunchBrowser, tabIdOf, turnAutoOn } from '../lib/continuity.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';
import { HUD_HOST, HudProbe, coverThePage, hudRoot, queueRoot } from '../lib/hud.mjs';
import { backendMessages, countMessages, expectExactlyOne } from '../lib/backend.mjs';

const CHAT = CHATS.find((c) => !c.project);
const STORE_KEY = 'herdrContinuityQueueV1';
const BATCHES = { conversationId: CONVERSATION, marker: /^qb:/ };
/** Long enough to queue two messages while the reply streams. */
const SLOW_REPLY_MS = 9_000;

function queueHost(page) {
  return queueRoot(page);
}

function queueButton(page) {
  return queueHost(page).locator('button[data-action="queue"]');
}

async function composerText(page, fixture) {
  return page.locator(fixture.ui.composer).evaluate((el) => el.innerText.replace(/\n+$/, ''));
}

/** The human types `text` into the composer (and sends it with `send`). */
async function type(page, fixture, text, { send = false } = {}) {
  await page.locator(fixture.ui.composer).click();
  await page.keyboard.insertText(text);
  if (send) await page.keyboard.press('Enter');
}

async function openChat(context, fixture) {
  const page = await context.newPage();
  await page.goto(CHAT.url);
  await new HudProbe(page).expectCompanionConnected();
  await expect(queueButton(page), 'the Queue button sits beside the composer').toBeVisible({ timeout: 15_000 });
  return page;
}

/** The human's message whose reply streams for a while. */
async function startSlowReply(page, fixture, ms = SLOW_REPLY_MS) {
  const before = fixture.server.length;
  fixture.streamMs = ms;
  await type(page, fixture, 'Refactor the parser, please.', { send: true });
  // The backend answered the message with the slow stream (it reads `streamMs` then).
  await expect.poll(() => fixture.server.length, { message: 'the human message reached the backend' }).toBe(before + 1);
  await expect(page.locator(fixture.ui.stop), 'the reply streams').toBeVisible({ timeout: 10_000 });
  fixture.streamMs = 300;
}

/** Queues `text` and waits until the worker stored it (the composer is emptied then). */
async function queue(page, fixture, text, count) {
  await type(page, fixture, text);
  await queueButton(page).click();
  await expect(queueHost(page), `${count} queued`).toHaveAttribute('data-queue-count', String(count), { timeout: 10_000 });
  await expect.poll(() => composerText(page, fixture), { message: 'the composer is emptied once the text is stored' }).toBe('');
}

async function storedQueue(worker) {
  const stored = await worker.evaluate((key) => chrome.storage.local.get(key), STORE_KEY);
  return stored?.[STORE_KEY] ?? null;
}

function statusLine(page) {
  return hudRoot(page).locator('p.status');
}

/** Checkpoint: the queue is empty again and the reply to the batch has finished. */
async function queueDrained(page, fixture) {
  await expect(queueHost(page), 'the batch was confirmed and removed').toHaveAttribute('data-queue-count', '0', { timeout: 30_000 });
  await expect(page.locator(fixture.ui.stop), 'the reply to the batch finished').toHaveCount(0, { timeout: 20_000 });
}

test.describe('the Queue (issue 11)', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('text queued while a reply streams is sent once after the turn ends, merged in order (Q1–Q3, Q5)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const page = await openChat(context, fixture);
    await startSlowReply(page, fixture);
    await queue(page, fixture, 'Then run the tests.', 1);
    await queue(page, fixture, 'And update the changelog.', 2);
    await expect(page.locator(fixture.ui.stop), 'still streaming: nothing was interrupted').toBeVisible();
    expect(countMessages(fixture, BATCHES), 'nothing is sent while the reply streams').toBe(0);
    expect(JSON.parse(await storedQueue(worker)).conversations[`chatgpt:${CONVERSATION}`].map((i) => i.text)).toEqual(['Then run the tests.', 'And update the changelog.']);

    const batch = await expectExactlyOne(fixture, BATCHES, {
      timeout: SLOW_REPLY_MS + 20_000,
      message: 'the queued messages go out once, as one message',
      checkpoint: () => queueDrained(page, fixture),
    });
    expect(batch.text).toMatch(/^Then run the tests\.\n\nAnd update the changelog\.\n\[herdr-continuity qb:[0-9a-f]{16}\//);
    expect(JSON.parse(await storedQueue(worker)).conversations, 'deleted only once confirmed: now gone').toEqual({});
    // The human's own message and the batch: nothing else reached the backend.
    expect(fixture.server.map((m) => m.text.split('\n')[0])).toEqual(['Refactor the parser, please.', 'Then run the tests.']);
  });

  test('a queued message survives a worker restart and goes out once on the reopened page (B7, Q4)', async ({ sandbox }) => {
    const { context, fixture } = await continuityWorld(sandbox);
    const page = await openChat(context, fixture);
    await startSlowReply(page, fixture);
    await queue(page, fixture, 'Queued before the restart.', 1);
    // The browser (and with it the worker and the page) goes away mid-reply.
    const { context: next } = await relaunchBrowser(sandbox, fixture);
    const again = await openChat(next, fixture);
    const batch = await expectExactlyOne(fixture, BATCHES, {
      timeout: 30_000,
      message: 'the queue outlived the worker and was sent once',
      checkpoint: () => queueDrained(again, fixture),
    });
    expect(batch.text).toMatch(/^Queued before the restart\.\n\[herdr-continuity qb:/);
  });

  test('a batch whose send was lost to a reload stays queued and is sent once (Q4, Q5)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const page = await openChat(context, fixture);
    await startSlowReply(page, fixture);
    await queue(page, fixture, 'Survive the reload.', 1);
    // The page holds its next submit: Send is clicked, nothing reaches the backend, and a
    // reload loses the message (as on ChatGPT).
    fixture.holdSubmit = true;
    await expect.poll(() => fixture.heldSubmits, { timeout: SLOW_REPLY_MS + 20_000, message: 'the batch was typed and Send clicked' }).toBe(1);
    expect(countMessages(fixture, BATCHES)).toBe(0);
    expect(JSON.parse(await storedQueue(worker)).conversations[`chatgpt:${CONVERSATION}`], 'kept while unconfirmed').toHaveLength(1);
    await page.reload();
    fixture.holdSubmit = false;
    expect(fixture.releaseSubmits(), 'the reload lost the held message').toBe(1);
    const batch = await expectExactlyOne(fixture, BATCHES, {
      timeout: 40_000,
      message: 'the lost batch is sent again, once',
      checkpoint: () => queueDrained(page, fixture),
    });
    expect(batch.text).toMatch(/^Survive the reload\.\n\[herdr-continuity qb:/);
  });

  test('a storage read error leaves the stored queue intact and the text in the composer (Q4)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const page = await openChat(context, fixture);
    // What is stored is not readable (another version, a corrupted write): never replaced.
    await worker.evaluate((key) => chrome.storage.local.set({ [key]: '{"version":7,"conversations":{}}' }), STORE_KEY);
    await startSlowReply(page, fixture);
    await type(page, fixture, 'Do not lose me.');
    await queueButton(page).click();
    await expect(statusLine(page), 'the HUD says why and what to do').toContainText('nothing was changed', { timeout: 10_000 });
    expect(await composerText(page, fixture), 'the text stays in the composer').toBe('Do not lose me.');
    expect(await storedQueue(worker), 'the unreadable record is not overwritten').toBe('{"version":7,"conversations":{}}');
    await expect(queueHost(page)).toHaveAttribute('data-queue-state', 'unreadable');
    // The way out (review fix30 MED 3): right-click asks, Clear keeps the record aside and
    // starts an empty queue, and Queue works again.
    await queueButton(page).click({ button: 'right' });
    await expect(queueHost(page).locator('.confirm p')).toContainText('kept aside');
    await queueHost(page).locator('button[data-action="queue_clear_yes"]').click();
    await expect(queueHost(page)).toHaveAttribute('data-queue-state', 'empty', { timeout: 10_000 });
    const aside = await worker.evaluate(() => chrome.storage.local.get('herdrContinuityQueueV1Aside').then((items) => items.herdrContinuityQueueV1Aside));
    const kept = JSON.parse(aside).records.map((r) => r.record);
    expect(kept, 'the stored value, kept aside verbatim, in the list of records kept aside').toEqual(['{"version":7,"conversations":{}}']);
    await queueButton(page).click();
    await expect.poll(() => composerText(page, fixture), { message: 'queued: the composer is emptied once it is stored', timeout: 10_000 }).toBe('');
  });

  test('a failed keep-aside deletes the unreadable queue only from the question that says so (clearfix31)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const first = await openChat(context, fixture);
    const second = await openChat(context, fixture);
    const record = '{"version":7,"conversations":{}}';
    await worker.evaluate((key) => chrome.storage.local.set({ [key]: '{"version":7,"conversations":{}}' }), STORE_KEY);
    // Keeping it aside fails as a full storage does.
    await worker.evaluate((key) => {
      const local = chrome.storage.local;
      const set = local.set.bind(local);
      local.set = (items) => (Object.hasOwn(items, key) ? Promise.reject(new Error('QUOTA_BYTES quota exceeded')) : set(items));
    }, `${STORE_KEY}Aside`);
    await type(first, fixture, 'Read the queue.');
    await queueButton(first).click();
    await expect(queueHost(first)).toHaveAttribute('data-queue-state', 'unreadable', { timeout: 10_000 });
    // The second tab asks the ordinary question ("kept aside") and waits for the answer.
    await expect(queueHost(second)).toHaveAttribute('data-queue-state', 'unreadable', { timeout: 10_000 });
    await queueButton(second).click({ button: 'right' });
    await expect(queueHost(second).locator('.confirm p')).toContainText('kept aside');
    // The first tab's Clear: the keep-aside fails, nothing is overwritten, and it says so.
    await queueButton(first).click({ button: 'right' });
    await queueHost(first).locator('button[data-action="queue_clear_yes"]').click();
    await expect(queueHost(first)).toHaveAttribute('data-queue-state', 'aside_failed', { timeout: 10_000 });
    await expect(statusLine(first)).toContainText('QUOTA_BYTES quota exceeded');
    // The second tab confirms the question it showed: only a retry, never a deletion.
    await queueHost(second).locator('button[data-action="queue_clear_yes"]').click();
    await expect(statusLine(second), 'refused again, naming the error').toContainText('nothing was overwritten or deleted', { timeout: 10_000 });
    expect(await storedQueue(worker), 'the unreadable record is still there').toBe(record);
    // The question that says a second failure deletes it, confirmed: deleted without a copy.
    await queueButton(first).click({ button: 'right' });
    await expect(queueHost(first).locator('.confirm p')).toContainText('deleted without a copy');
    await queueHost(first).locator('button[data-action="queue_clear_yes"]').click();
    await expect(queueHost(first)).toHaveAttribute('data-queue-state', 'empty', { timeout: 10_000 });
    await expect(statusLine(first)).toContainText('as you confirmed');
    expect(JSON.parse(await storedQueue(worker)), 'an empty queue').toEqual({ version: 1, conversations: {} });
  });

  test('the side panel shows a record kept aside, copies its text as stored and removes it only after a confirm (issue 28)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const page = await openChat(context, fixture);
    // Not a queue, with text that must stay data: markup, a line separator, non-ASCII.
    const record = '{"version":7,"conversations":{"x":"<b data-markup>not markup</b>\u2028ünï  cødé\n"}}';
    await worker.evaluate(([key, value]) => chrome.storage.local.set({ [key]: value }), [STORE_KEY, record]);
    await type(page, fixture, 'Read the queue.');
    await queueButton(page).click();
    await expect(queueHost(page)).toHaveAttribute('data-queue-state', 'unreadable', { timeout: 10_000 });
    const panel = await context.newPage();
    await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html?tab=${await tabIdOf(worker, page.url())}`);
    await expect(panel.locator('[data-panel-tab]'), 'the panel shows the chat tab').toBeVisible({ timeout: 15_000 });
    const aside = panel.locator('[data-queue-aside]');
    await expect(aside.locator('[data-aside-line]'), 'none kept aside: nothing shown').toHaveCount(0);
    // The Clear keeps it aside; the open panel shows 1 kept.
    await queueButton(page).click({ button: 'right' });
    await queueHost(page).locator('button[data-action="queue_clear_yes"]').click();
    await expect(queueHost(page)).toHaveAttribute('data-queue-state', 'empty', { timeout: 10_000 });
    await expect(aside, 'the panel shows the record kept aside').toHaveAttribute('data-aside-count', '1', { timeout: 10_000 });
    await expect(aside.locator('[data-aside-line]')).toContainText('1 of at most 5');
    await expect(aside.locator('[data-markup]'), 'the text is data, never markup').toHaveCount(0);
    const keptAside = () => worker.evaluate((key) => chrome.storage.local.get(key).then((items) => JSON.parse(items[key]).records.map((r) => r.record)), `${STORE_KEY}Aside`);
    expect(await keptAside()).toEqual([record]);
    // Copy: byte for byte the value as stored (the clipboard seen at its entry point:
    // extension pages are opaque origins to Playwright's permission API).
    await panel.evaluate(() => { navigator.clipboard.writeText = async (text) => { window.__copied = text; }; });
    await aside.locator('[data-aside-copy]').click();
    await expect(aside.locator('[data-aside-status]')).toContainText('clipboard');
    expect(await panel.evaluate(() => window.__copied), 'the copy is the stored value').toBe(record);
    // Remove… asks first; Keep (or Escape) posts nothing.
    const remove = aside.locator('[data-aside-remove]');
    await remove.focus();
    await panel.keyboard.press('Enter');
    await expect(aside.locator('[data-aside-confirm]')).toBeVisible();
    await expect(aside.locator('[data-aside-no]'), 'the confirm opens on Keep').toBeFocused();
    await panel.keyboard.press('Enter');
    await expect(aside.locator('[data-aside-confirm]')).toBeHidden();
    await expect(remove, 'the focus goes back to Remove…').toBeFocused();
    // A removal the user did not confirm, posted on a panel port, removes nothing: the
    // port's refresh afterwards is answered only once the worker had it (in order).
    const id = await remove.getAttribute('data-aside-remove');
    const answered = await panel.evaluate((recordId) => new Promise((resolve) => {
      const port = chrome.runtime.connect({ name: 'panel' });
      port.onMessage.addListener((message) => { if (message.type === 'queue_aside') resolve(message.view.records.length); });
      port.postMessage({ type: 'queue_aside_remove', id: recordId, question: null });
      port.postMessage({ type: 'panel_refresh' });
    }), id);
    expect(answered, 'not removed without the confirm').toBe(1);
    expect(await keptAside()).toEqual([record]);
    // Confirmed from the keyboard: removed, 0 kept.
    await remove.focus();
    await panel.keyboard.press('Enter');
    await panel.keyboard.press('Shift+Tab');
    await expect(aside.locator('[data-aside-yes]')).toBeFocused();
    await panel.keyboard.press('Enter');
    await expect(aside, 'removed').toHaveAttribute('data-aside-count', '0', { timeout: 10_000 });
    await expect(aside.locator('[data-aside-notice]')).toContainText('removed');
    expect(await keptAside()).toEqual([]);
  });

  test('a queue record stored as JSON null holds no items: the queue works (review fix30 MED 3)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const page = await openChat(context, fixture);
    // Not what the extension writes (always JSON text); it holds nothing to keep.
    await worker.evaluate((key) => chrome.storage.local.set({ [key]: null }), STORE_KEY);
    const raw = () => worker.evaluate((key) => chrome.storage.local.get(key).then((items) => (Object.hasOwn(items, key) ? { value: items[key] } : 'absent')), STORE_KEY);
    expect(await raw(), 'Chrome keeps a stored null').toEqual({ value: null });
    await startSlowReply(page, fixture);
    await queue(page, fixture, 'Do not lose me either.', 1);
    expect(await storedQueue(worker), 'an empty book with the text, written over the null').toContain('Do not lose me either.');
  });

  test('over-limit text is refused with a message and nothing is stored (Q6)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const page = await openChat(context, fixture);
    await startSlowReply(page, fixture);
    await type(page, fixture, 'x'.repeat(24_001));
    await queueButton(page).click();
    await expect(statusLine(page)).toContainText('24001 characters, more than 24000', { timeout: 10_000 });
    expect((await composerText(page, fixture)).length, 'nothing was cut from the composer').toBe(24_001);
    expect(await storedQueue(worker)).toBeNull();
  });

  test('a text far over the limit is refused with its whole length, not dropped unheard (Q6)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const page = await openChat(context, fixture);
    await startSlowReply(page, fixture);
    // Past what one page message may carry; emoji are two UTF-16 units but one character.
    const long = `${'y'.repeat(30_000)}${'🙂'.repeat(12_000)}`;
    await type(page, fixture, long);
    await queueButton(page).click();
    await expect(statusLine(page)).toContainText('42000 characters, more than 24000', { timeout: 10_000 });
    expect(await composerText(page, fixture), 'the composer keeps every character').toBe(long);
    expect(await storedQueue(worker)).toBeNull();
    // A text of emoji over the limit in UTF-16 units but half of it in characters is queued
    // whole: the page's cut counts characters, as the queue does.
    await page.locator(fixture.ui.composer).evaluate((el) => { el.textContent = ''; });
    const emoji = '🙂'.repeat(13_000);
    await type(page, fixture, emoji);
    await queueButton(page).click();
    await expect.poll(() => storedQueue(worker), { timeout: 10_000 }).toContain('🙂🙂🙂');
  });

  test('a real press on the Queue button or its Clear under a page\'s cover does nothing; uncovered it works', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const page = await openChat(context, fixture);
    await startSlowReply(page, fixture, 30_000);
    await queue(page, fixture, 'Keep me.', 1);
    await type(page, fixture, 'A draft the page wants queued.');
    // A decoy the page paints over everything, which lets the pointer through to our button;
    // the page also keeps from us every pointer and focus event it can.
    await page.evaluate(() => {
      for (const type of ['pointerenter', 'pointerover', 'focusin', 'focus', 'mousedown', 'pointerdown']) {
        window.addEventListener(type, (event) => { event.stopImmediatePropagation(); if (type === 'mousedown') event.preventDefault(); }, true);
      }
    });
    await coverThePage(page);
    const status = statusLine(page);
    // The pointer rests on the button first, as a user's does before a press. Every press
    // here is one real click at the button's place (`force`: the helper's own wait for a
    // press-ready button would never end under the cover).
    const { x, y } = await queueButton(page).actionable(15_000, true);
    await page.mouse.move(x, y);
    await page.waitForTimeout(400);
    await queueButton(page).click({ force: true });
    await expect(status).toHaveAttribute('data-key', 'noticeQueuePressHidden');
    await queueButton(page).click({ button: 'right', force: true });
    const yes = queueHost(page).locator('button[data-action="queue_clear_yes"]');
    await expect(yes).toBeVisible();
    await page.waitForTimeout(400);
    await status.evaluate((el) => { el.dataset.key = ''; });
    await yes.click({ force: true });
    await expect(status).toHaveAttribute('data-key', 'noticeQueuePressHidden');
    // The round trip is the checkpoint: the worker has handled anything posted before it.
    await page.evaluate(() => document.getElementById('page-cover').remove());
    const hud = new HudProbe(page);
    await hud.expand();
    await hud.action('round_trip_test').click();
    await expect(status).toHaveAttribute('data-key', 'roundTripAnswered', { timeout: 15_000 });
    await expect(queueHost(page), 'nothing queued or cleared under the cover').toHaveAttribute('data-queue-count', '1');
    expect(await storedQueue(worker)).not.toContain('A draft');
    // Uncovered, the question still open: its Yes clears.
    await yes.click();
    await expect(queueHost(page), 'cleared').toHaveAttribute('data-queue-count', '0', { timeout: 10_000 });
    await queueButton(page).click();
    await expect(queueHost(page), 'and the Queue button queues').toHaveAttribute('data-queue-count', '1', { timeout: 10_000 });
  });

  test('the Queue button refuses a press when the page moved it (under the pointer), until it is placed again and stood still', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const page = await openChat(context, fixture);
    await startSlowReply(page, fixture, 30_000);
    await type(page, fixture, 'A draft the page wants queued.');
    await queueButton(page).actionable();
    // The page slides our host 120 px to the left, where the pointer is.
    await page.evaluate((tag) => {
      const host = document.querySelector(tag);
      host.style.right = `${parseFloat(host.style.right) + 120}px`;
    }, 'herdr-continuity-queue');
    await page.waitForTimeout(700);
    await queueButton(page).click({ force: true });
    const status = statusLine(page);
    await expect(status).toHaveAttribute('data-key', 'noticeQueuePressHidden');
    await expect(queueHost(page), 'nothing queued').toHaveAttribute('data-queue-count', '0');
    // Placed again by us (a resize), it counts once it has stood still.
    await page.setViewportSize({ width: 1200, height: 720 });
    await queueButton(page).click();
    await expect(queueHost(page), 'queued').toHaveAttribute('data-queue-count', '1', { timeout: 10_000 });
    expect(await storedQueue(worker)).toContain('A draft the page wants queued.');
  });

  test('the queued turn goes before a wake that became due while the reply streamed (Q2, M7)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, CHAT);
    await turnAutoOn(context, hud, CHAT);
    const sessionRef = await hud.sessionRef();
    await startSlowReply(page, fixture);
    await queue(page, fixture, 'First my follow-up.', 1);
    await agentCycle(sandbox, hud, sessionRef, 'Agent work');
    await expectExactlyOne(fixture, BATCHES, { timeout: SLOW_REPLY_MS + 20_000, checkpoint: () => queueDrained(page, fixture) });
    await expect.poll(() => countMessages(fixture, { conversationId: CONVERSATION, marker: /^wake:/ }), { timeout: 30_000, message: 'the wake follows' }).toBe(1);
    const order = backendMessages(fixture, { conversationId: CONVERSATION, automatic: true }).map((m) => m.text.match(/\[herdr-continuity ([a-z]+):/)?.[1]);
    expect(order, 'the user\'s queued turn first, then the wake').toEqual(['qb', 'wake']);
  });

  test('the Queue button is mounted once, outside the page\'s own DOM, works from the keyboard, and right-click asks before clearing (Q1, Q7)', async ({ sandbox }) => {
    const { context, fixture } = await continuityWorld(sandbox);
    const page = await openChat(context, fixture);
    await expect(page.locator('herdr-continuity-queue')).toHaveCount(1);
    const parent = await page.evaluate(() => document.querySelector('herdr-continuity-queue')?.parentElement?.tagName);
    expect(parent, 'a child of <html>, not of the React tree').toBe('HTML');
    // A reload mounts it again, once (the content script's guard keeps a second injection
    // from mounting a second one).
    await page.reload();
    await expect(queueButton(page)).toBeVisible({ timeout: 15_000 });
    await expect(page.locator('herdr-continuity-queue')).toHaveCount(1);
    await startSlowReply(page, fixture);
    await type(page, fixture, 'From the keyboard.');
    await queueButton(page).focus();
    await page.keyboard.press('Enter');
    await expect(queueHost(page)).toHaveAttribute('data-queue-count', '1', { timeout: 10_000 });
    // Right-click asks first; Keep changes nothing, Clear empties the queue (Q7).
    await queueButton(page).click({ button: 'right' });
    await queueHost(page).locator('button[data-action="queue_clear_no"]').click();
    await expect(queueHost(page)).toHaveAttribute('data-queue-count', '1');
    await queueButton(page).click({ button: 'right' });
    await queueHost(page).locator('button[data-action="queue_clear_yes"]').click();
    await expect(queueHost(page)).toHaveAttribute('data-queue-count', '0', { timeout: 10_000 });
    await expect(page.locator(fixture.ui.stop)).toHaveCount(0, { timeout: SLOW_REPLY_MS + 10_000 });
    expect(countMessages(fixture, BATCHES), 'a cleared queue sends nothing').toBe(0);
  });
});
