// z.ai and DeepSeek end to end (issue 13 acceptance 2, SPEC B6, M3, M6): real Chromium with
// the built extension, the native host, the companion runtime, the Herdr stand-in and the
// z.ai / DeepSeek fixtures (fixtures/chatsites.mjs), whose fake backend records every user
// message in this process. A conversation binds, its Auto goes on from the HUD, an agent
// task settles → exactly one wake in that chat; a reload sends nothing more.
import { test, expect } from '../lib/test.mjs';
import { ContinuityHud, WORKSPACE, bindFromPanel, dispatchTask, reportAgent, startSeededHerdr } from '../lib/continuity.mjs';
import { HudProbe } from '../lib/hud.mjs';
import { ChatSiteFixture } from '../fixtures/chatsites.mjs';

const CONVERSATION = '7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';

/** Herdr, host, runtime and Chromium with the fixture of `site` holding one short thread. */
async function siteWorld(sandbox, site, fixtureOptions = {}) {
  await startSeededHerdr(sandbox);
  await sandbox.installHost();
  await sandbox.startRuntime();
  const { context, worker } = await sandbox.launchBrowser();
  const fixture = new ChatSiteFixture({ site, ...fixtureOptions });
  fixture.conversations.set(CONVERSATION, [
    { role: 'user', text: 'Plan the API refactor and hand it to the agents.', id: 'u0' },
    { role: 'assistant', text: 'Dispatching to workspace api.', id: 'a0' },
  ]);
  await fixture.install(context);
  return { context, worker, fixture };
}

/** Opens the conversation, binds it to w1 from the side panel and turns its Auto on (M3). */
async function openBoundWithAuto(context, worker, fixture) {
  const page = await context.newPage();
  await page.goto(fixture.url(CONVERSATION));
  await new HudProbe(page).expectCompanionConnected();
  const hud = new ContinuityHud(page);
  const { panel } = await bindFromPanel(context, worker, page, WORKSPACE.id);
  await hud.expect('data-binding', WORKSPACE.id, 'HUD shows the conversation bound (B6)');
  await panel.close();
  await hud.turnAutoOn();
  return { page, hud };
}

for (const site of ['zai', 'deepseek']) {
  test.describe(`continuity on ${site}`, () => {
    test.use({ sandboxOptions: { autostart: false } });

    test('bind → Auto → settle: exactly one wake in the conversation; a reload sends nothing more (B6, M3, M6)', async ({ sandbox }) => {
      const { context, worker, fixture } = await siteWorld(sandbox, site);
      const { page, hud } = await openBoundWithAuto(context, worker, fixture);
      const sessionRef = await hud.sessionRef();
      expect(sessionRef, 'the ref names the site and the conversation').toContain(CONVERSATION);

      const task = await dispatchTask(sandbox, { sessionRef, text: 'Refactor the API client and run the tests' });
      await reportAgent(sandbox, WORKSPACE.pane, 'working');
      await hud.expect('data-scope-state', 'working', 'HUD shows the bound workspace working');
      expect(fixture.automaticMessages(CONVERSATION), 'nothing is sent while the agent works').toEqual([]);

      await reportAgent(sandbox, WORKSPACE.pane, 'idle');
      await expect.poll(() => fixture.automaticMessages(CONVERSATION).length, { timeout: 20_000, message: 'one wake reaches the backend' }).toBe(1);
      const [wake] = fixture.automaticMessages(CONVERSATION);
      expect(wake.text).toMatch(/\[herdr-continuity wake:w1#\d+\/[0-9a-z]+\.\d+\.\d+\]$/);
      expect(wake.text, 'the wake carries the finished task (I2)').toContain(task.task_id);
      await hud.expect('data-wake-count', '1', 'HUD counts one confirmed wake');
      await hud.expect('data-tasks', '0/0', 'the task is acknowledged after the confirmed wake (I4)');

      await page.reload();
      await hud.expect('data-binding', WORKSPACE.id, 'the binding survives a reload (B7)');
      await hud.expect('data-auto', 'on');
      await expect(page.locator(fixture.ui.userTurn).last()).toContainText('[herdr-continuity wake:w1#');
      await hud.expect('data-withheld', '');
      expect(fixture.automaticMessages(CONVERSATION), 'still exactly one automatic message').toHaveLength(1);
    });
  });
}
