// Issue 4 acceptance (SPEC §V 1–7): the continuity loop end to end, real everything —
// Chromium with the built extension, the native host, the companion runtime, the Herdr
// stand-in and the ChatGPT fixture whose fake backend (in this process) records every user
// message. Bind from the side panel (B1, B3), Auto on (M1, M2), dispatch a task (I1),
// working (P2), settle (P8) → the chat continues exactly once (A3, M7) and the task is
// acknowledged only after the wake was confirmed (I4); reload / reopen keep the binding (B7).
import { test, expect } from '../lib/test.mjs';
import {
  AGENT, CHATS, CONVERSATION, ContinuityHud, WORKSPACE, continuityWorld, dispatchTask, listTasks, openAndBind,
  paneOutput, reportAgent, turnAutoOn,
} from '../lib/continuity.mjs';

for (const chat of CHATS) {
  test.describe(`continuity loop on a ${chat.name}`, () => {
    test.use({ sandboxOptions: { autostart: false } });

    test('bind → Auto → dispatch → working → settle: the chat continues exactly once and the task is acked (§V 1–7)', async ({ sandbox }) => {
      const { context, worker, fixture } = await continuityWorld(sandbox);
      const { page, hud } = await openAndBind(context, worker, chat);
      await turnAutoOn(context, hud, chat);
      const sessionRef = await hud.sessionRef();
      expect(sessionRef, 'I1: the HUD names the ref a dispatch must carry').toBe(chat.sessionRef);

      // §V 3: dispatch as the MCP downlink would; the agent starts working.
      const task = await dispatchTask(sandbox, { sessionRef, text: 'Refactor the API client and run the tests' });
      expect(task).toMatchObject({ state: 'running', browser_session_ref: sessionRef, workspace_id: WORKSPACE.id });
      await reportAgent(sandbox, WORKSPACE.pane, 'working');

      // §V 4: the HUD shows working, and the task as running.
      await hud.expect('data-scope-state', 'working', 'HUD shows the bound workspace working (P2)');
      await hud.expect('data-tasks', '1/0', 'HUD counts one running task (I4)');

      // New output while working: the default check interval is 60 s (P3) and this
      // work is shorter, so the chat stays quiet (§V 5's progress message itself is
      // covered with a 5 s interval in continuity-progress.spec.mjs).
      await paneOutput(sandbox, WORKSPACE.pane, 'running cargo test… 41 passed');
      await hud.expect('data-scope-state', 'working');
      expect(fixture.automaticMessages(CONVERSATION), 'nothing is sent while the agent works').toEqual([]);

      // §V 6: settle → exactly one continue message with the wake marker (A3, P8, M7).
      await reportAgent(sandbox, WORKSPACE.pane, 'idle');
      await expect.poll(() => fixture.automaticMessages(CONVERSATION).length, { timeout: 20_000, message: 'one wake reaches the backend' }).toBe(1);
      const [wake] = fixture.automaticMessages(CONVERSATION);
      expect(wake.text).toMatch(/\[herdr-continuity wake:w1#\d+\/[0-9a-z]+\.\d+\.\d+ ref=([^\]\s]+)\]$/);
      expect(wake.text.match(/ ref=([^\]\s]+)\]$/)[1], 'the wake\'s marker names the chat\'s session ref').toBe(sessionRef);
      expect(wake.text, 'A3: the wake asks to re-read live state, it is no proof of success').toContain('Re-read the live Herdr and Git state');
      expect(wake.text, 'the wake carries the finished task (I2)').toContain(task.task_id);
      if (chat.project) expect(wake.path).toBe(new URL(chat.url).pathname);

      // I4: acknowledged only after the confirmed wake.
      await hud.expect('data-wake-count', '1', 'HUD counts one confirmed wake');
      await hud.expect('data-tasks', '0/0', 'HUD: nothing running, nothing unacked');
      await hud.expect('data-scope-state', /^(settled|idle)$/);
      const tasks = await listTasks(sandbox, sessionRef);
      expect(tasks).toHaveLength(1);
      expect(tasks[0]).toMatchObject({ task_id: task.task_id, state: 'completed' });
      expect(tasks[0].acked_at, 'the task is acked after the wake').not.toBeNull();
      expect(tasks[0].result).toMatchObject({ trigger: 'agent_settled', agent: AGENT });

      // The reply finishes; the page is idle again and nothing else goes out.
      await expect(page.locator('button[data-testid="send-button"]')).toBeVisible();
      await expect(hud.state).toHaveAttribute('data-withheld', '');

      // §V 7: reload, then close and reopen the tab: binding and active target stay right.
      await page.reload();
      await hud.expect('data-binding', WORKSPACE.id, 'binding survives a reload (B7)');
      if (chat.project) await hud.expect('data-active-target', CONVERSATION);
      await hud.expect('data-auto', 'on');
      await page.close();
      const reopened = await context.newPage();
      await reopened.goto(chat.url);
      const hud2 = new ContinuityHud(reopened);
      await hud2.expect('data-binding', WORKSPACE.id, 'binding survives closing and reopening the tab (B7)');
      if (chat.project) await hud2.expect('data-active-target', CONVERSATION);
      await hud2.expect('data-wake-count', '1');
      await expect(reopened.locator('[data-message-author-role="user"]').last()).toContainText('[herdr-continuity wake:w1#');
      expect(fixture.automaticMessages(CONVERSATION), 'still exactly one automatic message').toHaveLength(1);
    });
  });
}
