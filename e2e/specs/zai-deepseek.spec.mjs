// z.ai and DeepSeek end to end (issue 13 acceptance 2, SPEC B6, M3, M6): real Chromium with
// the built extension, the native host, the companion runtime, the Herdr stand-in and the
// z.ai / DeepSeek fixtures (fixtures/chatsites.mjs), whose fake backend records every user
// message in this process. A conversation binds, its Auto goes on from the HUD, an agent
// task settles → exactly one wake in that chat; a reload sends nothing more. The JSON
// bridge (O2): the HUD inserts the protocol prompt; a tool call line in a reply runs once
// at the Herdr stand-in after the reply ended (not while it streams) and the HUD's Run was
// pressed (issue 23), and its result comes back once as the next user message; a reload and a worker restart re-run and re-send
// nothing.
import { test, expect } from '../lib/test.mjs';
import { ContinuityHud, WORKSPACE, chatSiteWorld, dispatchTask, herdrRequest, openSiteBoundWithAuto, relaunchBrowser, reportAgent } from '../lib/continuity.mjs';
import { HudProbe } from '../lib/hud.mjs';

const CONVERSATION = '7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';

/** Herdr, host, runtime and Chromium with the fixture of `site` holding one short thread. */
const siteWorld = (sandbox, site, fixtureOptions = {}) => chatSiteWorld(sandbox, site, CONVERSATION, fixtureOptions);

/** Opens the conversation, binds it to w1 from the side panel and turns its Auto on (M3). */
const openBoundWithAuto = (context, worker, fixture) => openSiteBoundWithAuto(context, worker, fixture, CONVERSATION);

/** How many times `token` shows in the pane's text at the Herdr stand-in. */
async function timesInPane(sandbox, token) {
  const read = await herdrRequest(sandbox.herdrSocket, 'pane.read', { pane_id: WORKSPACE.pane, source: 'recent', lines: 1000 });
  return JSON.stringify(read).split(token).length - 1;
}

/** The automatic messages the bridge sent (their marker is a `bridge:` delivery id). */
const bridgeMessages = (fixture) => fixture.automaticMessages(CONVERSATION).filter((m) => /\[herdr-continuity bridge:[0-9a-f]{16}\//.test(m.text));

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
      expect(wake.text).toMatch(/\[herdr-continuity wake:w1#\d+\/[0-9a-z]+\.\d+\.\d+ ref=([^\]\s]+)\]$/);
      expect(wake.text.match(/ ref=([^\]\s]+)\]$/)[1], 'the wake\'s marker names the chat\'s session ref').toBe(sessionRef);
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

    test('a tool call in a reply runs once after the reply ended and Run was pressed, its result comes back once, and a reload or a worker restart repeats nothing (O2)', async ({ sandbox }) => {
      const token = `bridge-ping-${site}`;
      const call = JSON.stringify({ tool: 'herdr_call', args: { method: 'pane.send_text', params: JSON.stringify({ pane_id: WORKSPACE.pane, text: token }) } });
      const { context, worker, fixture } = await siteWorld(sandbox, site, {
        streamMs: 1500,
        replyWith: (text) => (text.startsWith('HERDR_TOOL_RESULTS') ? 'The token is in the pane.' : `I will type it into the pane.\n${call}`),
      });
      const { page, hud } = await openBoundWithAuto(context, worker, fixture);

      // The HUD inserts the protocol prompt, built from the runtime's tool list.
      await hud.action('bridge_prompt').click();
      await expect(page.locator(fixture.ui.composer)).toHaveValue(/^\[herdr-continuity JSON bridge v1\]\n/);
      const prompt = await page.locator(fixture.ui.composer).inputValue();
      expect(prompt, 'the prompt names this chat for herdr_prompt').toContain(`browser_session_ref is ${await hud.sessionRef()}.`);
      for (const tool of ['herdr_prompt', 'herdr_call', 'herdr_methods', 'herdr_inspect']) expect(prompt).toContain(`- ${tool}: `);

      // The user asks; the reply streams its call line: nothing runs while it streams.
      await page.locator(fixture.ui.composer).fill('Type the token into the pane.');
      await page.locator(fixture.ui.composer).press('Enter');
      await expect(page.locator(fixture.ui.stop), 'the reply streams').toBeVisible();
      expect(await timesInPane(sandbox, token), 'an unfinished reply runs nothing').toBe(0);

      // The reply ends: the call waits for the HUD's Run (it types into a pane, issue 23);
      // pressed, it runs once at the stand-in, and its result goes back once.
      await hud.expect('data-bridge-pending', '1', 'the HUD asks before the call runs');
      expect(await timesInPane(sandbox, token), 'nothing runs before Run').toBe(0);
      await hud.expand();
      // A press counts once the card has stood still for 600 ms (click-jacking, issue 23).
      await page.waitForTimeout(700);
      await hud.action('bridge_run:1').click();
      await expect.poll(() => bridgeMessages(fixture).length, { timeout: 20_000, message: 'one results message reaches the backend' }).toBe(1);
      const [results] = bridgeMessages(fixture);
      expect(results.text).toMatch(/^HERDR_TOOL_RESULTS \(1 call\)\n[^\n]+\n<<<HC_DATA kind=tool_output n=[0-9a-f]{12}>>>\n\{"call":1,"ok":true,"result":\{"method":"pane.send_text"/);
      expect(await timesInPane(sandbox, token), 'the call ran once at Herdr').toBe(1);
      await expect(page.locator(fixture.ui.assistantTurn).last()).toHaveText('The token is in the pane.', { timeout: 20_000 });

      // A reload, then a worker restart: nothing runs or is sent again.
      await page.reload();
      await new HudProbe(page).expectCompanionConnected();
      await hud.expect('data-binding', WORKSPACE.id);
      const { context: relaunched } = await relaunchBrowser(sandbox, fixture);
      const reopened = await relaunched.newPage();
      await reopened.goto(fixture.url(CONVERSATION));
      await new HudProbe(reopened).expectCompanionConnected();
      await new ContinuityHud(reopened).expect('data-binding', WORKSPACE.id, 'the binding survives the worker restart (B7)');
      await expect(reopened.locator(fixture.ui.userTurn).last()).toContainText('HERDR_TOOL_RESULTS');
      expect(bridgeMessages(fixture), 'the results were sent once').toHaveLength(1);
      expect(await timesInPane(sandbox, token), 'the call never ran again').toBe(1);
      expect(fixture.messagesOf(CONVERSATION).map((m) => m.text.split('\n')[0]), 'the thread as the backend has it').toEqual([
        'Type the token into the pane.', 'HERDR_TOOL_RESULTS (1 call)',
      ]);
    });
  });
}
