// Issue 7 acceptance 3, in real Chromium with the real companion and Herdr stand-in: the
// delivery path under a reload between Send and the page's submit, and under a late
// confirmation. Uses the fixture's hooks: `holdSubmit` (Send was clicked, the page has not
// submitted yet; a reload loses the message, as on ChatGPT) and `confirmDelayMs` (the
// backend has the message, the user turn with its marker appears only later).
//
// Every "nothing more was sent" is counted after a checkpoint (the HUD counts the wake, the
// page is idle, a later settle was delivered), never after a sleep.
import { test, expect } from '../lib/test.mjs';
import { CHATS, CONVERSATION, agentCycle, continuityWorld, expectIdleAfterWakes, openAndBind, turnAutoOn } from '../lib/continuity.mjs';
import { countMessages, expectExactlyOne } from '../lib/backend.mjs';

const CHAT = CHATS.find((c) => !c.project);
const WAKES = { conversationId: CONVERSATION, marker: /^wake:/ };
/** Longer than the ledger's wait for the marker (ext-core `SUBMITTED_DEADLINE_MS`, 20 s): the
 * delivery is uncertain when its marker appears, and a late confirmation must still be one. */
const LATE_CONFIRMATION_MS = 25_000;

/** After `previous` wakes: the next agent cycle wakes the chat once more, carrying its task. */
async function nextSettleWakesOnce({ sandbox, fixture, page, hud, sessionRef }, previous, text) {
  const task = await agentCycle(sandbox, hud, sessionRef, text);
  const wake = await expectExactlyOne(fixture, WAKES, {
    previous,
    message: 'the scope is not blocked: the next settle wakes the chat once',
    checkpoint: () => expectIdleAfterWakes(page, fixture, hud, previous + 1),
  });
  expect(wake.text).toContain(task.task_id);
}

test.describe('one delivery path (issue 7)', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('a reload after Send was clicked and before the page submitted: exactly one wake arrives, and the next settle wakes again', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, CHAT);
    await turnAutoOn(context, hud, CHAT);
    const sessionRef = await hud.sessionRef();

    fixture.holdSubmit = true;
    const first = await agentCycle(sandbox, hud, sessionRef, 'First task');
    await expect.poll(() => fixture.heldSubmits, { timeout: 20_000, message: 'the extension clicked Send; the page holds the submit' }).toBe(1);
    expect(fixture.server, 'nothing reached the backend yet').toEqual([]);
    await page.reload();
    fixture.holdSubmit = false;
    expect(fixture.releaseSubmits(), 'the reload lost the held message').toBe(1);

    const wake = await expectExactlyOne(fixture, WAKES, {
      timeout: 40_000,
      message: 'the lost wake is delivered once after the reload',
      checkpoint: () => expectIdleAfterWakes(page, fixture, hud, 1, 40_000),
    });
    expect(wake.text).toContain(first.task_id);

    await nextSettleWakesOnce({ sandbox, fixture, page, hud, sessionRef }, 1, 'Second task');
    expect(fixture.server).toHaveLength(2);
  });

  test('a confirmation that arrives after the deadline: no second message', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, CHAT);
    await turnAutoOn(context, hud, CHAT);
    const sessionRef = await hud.sessionRef();

    fixture.confirmDelayMs = LATE_CONFIRMATION_MS;
    const first = await agentCycle(sandbox, hud, sessionRef, 'Slow to confirm');
    await expect.poll(() => countMessages(fixture, WAKES), { timeout: 20_000, message: 'the wake reached the backend' }).toBe(1);
    // Checkpoint: the late user turn with the marker is on the page.
    await expect(page.locator(fixture.ui.userTurn).last()).toContainText('[herdr-continuity wake:w1#', { timeout: LATE_CONFIRMATION_MS + 15_000 });
    fixture.confirmDelayMs = 0;
    const wake = await expectExactlyOne(fixture, WAKES, {
      message: 'a late confirmation is a confirmation, never a retype',
      checkpoint: () => expectIdleAfterWakes(page, fixture, hud, 1, 40_000),
    });
    expect(wake.text).toContain(first.task_id);

    // Checkpoint for "never retyped": the next settle is delivered, and only it.
    await nextSettleWakesOnce({ sandbox, fixture, page, hud, sessionRef }, 1, 'Quick to confirm');
    expect(fixture.server.map((m) => m.text.match(/wake:[^\]]+/)?.[0]), 'no wake twice').toEqual([...new Set(fixture.server.map((m) => m.text.match(/wake:[^\]]+/)?.[0]))]);
    expect(fixture.server).toHaveLength(2);
  });
});
