// Issue 4: what must NOT happen in the continuity loop, in real Chromium with the real
// companion and Herdr stand-in. Auto off sends nothing automatically (M1); a human draft is
// never overwritten or sent (M7, the HUD says why); another chat's tasks never wake this
// chat (I3); a wake that could not be delivered stays unacked and goes out once the page
// is idle (I4, M7); a worker restart between settle and delivery neither loses nor
// duplicates the wake (P6, P9, B7).
//
// "Nothing was sent" is always asserted after a checkpoint the HUD or the inbox proves was
// reached (settle seen, reason shown, task terminal), never after a sleep.
import { test, expect } from '../lib/test.mjs';
import {
  agentCycle, boundChatWithDraft, CHATS, CONVERSATION, ContinuityHud, OTHER_WORKSPACE, WORKSPACE, continuityWorld, dispatchTask, listTasks,
  openAndBind, persistedContinuity, relaunchBrowser, reportAgent, turnAutoOn,
} from '../lib/continuity.mjs';
import { chatgptUrl } from '../fixtures/chatgpt.mjs';

const [PROJECT_CHAT, PLAIN_CHAT] = CHATS;
const OTHER_CONVERSATION = '7c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e7f';

const runTask = agentCycle;

async function expectUnacked(sandbox, sessionRef, taskId) {
  await expect
    .poll(async () => (await listTasks(sandbox, sessionRef)).find((t) => t.task_id === taskId), { timeout: 15_000 })
    .toMatchObject({ state: 'completed', acked_at: null });
}

async function expectAcked(sandbox, sessionRef, taskId) {
  await expect
    .poll(async () => (await listTasks(sandbox, sessionRef)).find((t) => t.task_id === taskId)?.acked_at ?? null, { timeout: 15_000 })
    .not.toBeNull();
}

test.describe('continuity guards', () => {
  test.use({ sandboxOptions: { autostart: false } });

  for (const chat of CHATS) {
    test(`Auto off across two whole cycles: settles are seen, nothing is sent automatically (M1) — ${chat.name}`, async ({ sandbox }) => {
      const { context, worker, fixture } = await continuityWorld(sandbox);
      const { hud } = await openAndBind(context, worker, chat);
      await hud.expect('data-auto', 'off');
      const sessionRef = await hud.sessionRef();
      for (let cycle = 1; cycle <= 2; cycle++) {
        const task = await runTask(sandbox, hud, sessionRef, `cycle ${cycle}`);
        // Checkpoint: the settle reached the extension and the HUD says why nothing went.
        await hud.expect('data-scope-state', 'settled', 'HUD shows the settle');
        await hud.expect('data-withheld', 'auto_off', 'HUD: not sent because Auto is off');
        await hud.expect('data-tasks', `0/${cycle}`, 'the finished tasks wait unacked');
        await expectUnacked(sandbox, sessionRef, task.task_id);
      }
      expect(fixture.server, 'no message at all reached the backend').toEqual([]);
      await hud.expect('data-wake-count', '0');
    });
  }

  test('a human draft is never sent; the HUD says why; clearing it lets the wake go once (M7)', async ({ sandbox }) => {
    const { fixture, page, hud, sessionRef, composer } = await boundChatWithDraft(sandbox, PLAIN_CHAT, 'half-written thought about the schema');

    const task = await runTask(sandbox, hud, sessionRef, 'migrate the schema');
    await hud.expect('data-withheld', 'human_draft', 'HUD: held back because of the draft');
    await expectUnacked(sandbox, sessionRef, task.task_id);
    await expect(composer, 'the draft is untouched').toHaveText('half-written thought about the schema');
    expect(fixture.server, 'nothing was submitted').toEqual([]);

    // The human clears the draft: the held wake goes out, once, without the draft.
    await composer.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await expect.poll(() => fixture.automaticMessages(CONVERSATION).length, { timeout: 20_000 }).toBe(1);
    await hud.expect('data-wake-count', '1');
    await expectAcked(sandbox, sessionRef, task.task_id);
    expect(fixture.server).toHaveLength(1);
    expect(fixture.server[0].text).not.toContain('half-written');
    expect(fixture.server[0].text).toContain(task.task_id);
    await expect(page.locator('button[data-testid="send-button"]')).toBeVisible();
    await hud.expect('data-withheld', '');
    expect(fixture.automaticMessages(CONVERSATION)).toHaveLength(1);
  });

  test("another chat's task never wakes this chat, and this chat's wake never acks it (I3)", async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await turnAutoOn(context, hud, PLAIN_CHAT);
    const sessionRef = await hud.sessionRef();
    const otherRef = `chatgpt:conv:${OTHER_CONVERSATION}`;

    // Another chat dispatches into w2 (not bound here): it works and settles.
    const foreign = await dispatchTask(sandbox, { sessionRef: otherRef, workspace: OTHER_WORKSPACE.id, pane: OTHER_WORKSPACE.pane, text: 'other chat work' });
    await reportAgent(sandbox, OTHER_WORKSPACE.pane, 'working');
    await reportAgent(sandbox, OTHER_WORKSPACE.pane, 'idle');
    await expectUnacked(sandbox, otherRef, foreign.task_id);
    await hud.expect('data-tasks', '0/0', "this chat's counters do not include the other chat's task");

    // Checkpoint: this chat's own cycle wakes it exactly once, carrying only its own task.
    const own = await runTask(sandbox, hud, sessionRef, 'own work');
    await expect.poll(() => fixture.automaticMessages(CONVERSATION).length, { timeout: 20_000 }).toBe(1);
    const [wake] = fixture.automaticMessages(CONVERSATION);
    expect(wake.text).toContain(own.task_id);
    expect(wake.text).not.toContain(foreign.task_id);
    await expectAcked(sandbox, sessionRef, own.task_id);
    await expectUnacked(sandbox, otherRef, foreign.task_id);
    expect(fixture.server.filter((m) => m.conversationId === OTHER_CONVERSATION)).toEqual([]);
    expect(fixture.server).toHaveLength(1);
  });

  test('a wake that cannot be delivered while the page generates stays unacked, then goes out once (I4, M7)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PROJECT_CHAT);
    await turnAutoOn(context, hud, PROJECT_CHAT);
    const sessionRef = await hud.sessionRef();

    // The human sends a message whose reply streams for a long while.
    fixture.streamMs = 6_000;
    await page.locator('#prompt-textarea').click();
    await page.keyboard.type('Explain the retry policy');
    await page.locator('button[data-testid="send-button"]').click(); // the HUD never covers it
    await expect(page.locator('button[data-testid="stop-button"]')).toBeVisible();
    fixture.streamMs = 300;

    const task = await runTask(sandbox, hud, sessionRef, 'tune retries');
    await hud.expect('data-withheld', 'page_generating', 'HUD: waiting for the reply to finish');
    await expectUnacked(sandbox, sessionRef, task.task_id);
    expect(fixture.automaticMessages(CONVERSATION)).toEqual([]);

    // The reply ends: the wake goes out once and only then is the task acked.
    await expect.poll(() => fixture.automaticMessages(CONVERSATION).length, { timeout: 25_000 }).toBe(1);
    await expectAcked(sandbox, sessionRef, task.task_id);
    await hud.expect('data-wake-count', '1');
    await expect(page.locator('button[data-testid="send-button"]')).toBeVisible();
    await hud.expect('data-withheld', '');
    expect(fixture.automaticMessages(CONVERSATION)).toHaveLength(1);
    expect(fixture.server.map((m) => m.text)[0]).toBe('Explain the retry policy');
  });

  test('a worker restart between settle and delivery neither loses nor duplicates the wake (P6, P9, B7)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await turnAutoOn(context, hud, PLAIN_CHAT);
    const sessionRef = await hud.sessionRef();

    // Hold the wake back with a streaming reply, settle, and make sure the held wake is saved.
    fixture.streamMs = 60_000;
    await page.locator('#prompt-textarea').click();
    await page.keyboard.type('Summarise the open PRs');
    await page.locator('button[data-testid="send-button"]').click(); // the HUD never covers it
    await expect(page.locator('button[data-testid="stop-button"]')).toBeVisible();
    fixture.streamMs = 300;
    const task = await runTask(sandbox, hud, sessionRef, 'review PRs');
    await hud.expect('data-withheld', 'page_generating');
    await expect
      .poll(async () => JSON.stringify(await persistedContinuity(worker)), { timeout: 10_000, message: 'the held wake is persisted' })
      .toContain(task.task_id);

    // Restart: close the browser (worker gone) and launch the same profile again.
    const relaunched = await relaunchBrowser(sandbox, fixture);
    const reopened = await relaunched.context.newPage();
    await reopened.goto(PLAIN_CHAT.url);
    const hud2 = new ContinuityHud(reopened);
    await hud2.expect('data-binding', WORKSPACE.id);
    await hud2.expect('data-auto', 'on');
    await expect.poll(() => fixture.automaticMessages(CONVERSATION).length, { timeout: 25_000 }).toBe(1);
    expect(fixture.automaticMessages(CONVERSATION)[0].text).toContain(task.task_id);
    await expectAcked(sandbox, sessionRef, task.task_id);
    await hud2.expect('data-wake-count', '1');
    await expect(reopened.locator('button[data-testid="send-button"]')).toBeVisible();
    await hud2.expect('data-withheld', '');
    // A second reload replays nothing.
    await reopened.reload();
    await hud2.expect('data-binding', WORKSPACE.id);
    await hud2.expect('data-wake-count', '1');
    expect(fixture.automaticMessages(CONVERSATION)).toHaveLength(1);
    expect(fixture.server.filter((m) => m.conversationId === CONVERSATION)).toHaveLength(2);
  });
});

// The root page can't receive wakes (B4/B5): no Continue there; kept small, uses chatgptUrl.
test.describe('root page', () => {
  test.use({ sandboxOptions: { autostart: false } });
  test('shows no Continue / Check Herdr / LLM judge buttons on the root page (B5)', async ({ sandbox }) => {
    const { context } = await continuityWorld(sandbox);
    const page = await context.newPage();
    await page.goto(chatgptUrl.home());
    const hud = new ContinuityHud(page);
    await hud.expect('data-companion', 'companionConnected');
    for (const action of ['continue', 'check_herdr', 'llm_judge']) await expect(hud.action(action)).toHaveCount(0);
  });
});
