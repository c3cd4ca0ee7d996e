// Issue 9 acceptance 1 and issue 7 acceptance 3: the continuity loop on every ChatGPT DOM
// generation the fixture renders (classic / section / thread, fixtures/chatgpt.mjs) under
// both CSP variants, and on the delivery-path variants (one flipping submit button, turns
// wrapped in extra `section`s, Chinese labels, an open edit box on an earlier message).
// Real everything: Chromium with the built extension, the native host, the companion
// runtime, the Herdr stand-in; the fixture's backend (in this process) records every user
// message.
//
// Per case: bind from the side panel, Auto on; working → settle → exactly one wake reaches
// the backend, even with a read-aloud "Stop" on a finished message (not generation); a
// human draft holds the next wake (the HUD says `human_draft`) and the draft is untouched;
// clearing it lets that wake go once; a reload keeps the binding and sends nothing.
// The human's clicks and keys use the fixture's own selectors (`fixture.ui`); the
// extension reads the page with its site profiles only.
import { test, expect } from '../lib/test.mjs';
import { CHATS, CONVERSATION, WORKSPACE, agentCycle, continuityWorld, expectIdleAfterWakes, openAndBind, turnAutoOn } from '../lib/continuity.mjs';
import { countMessages, expectExactlyOne } from '../lib/backend.mjs';
import { CSP_VARIANTS, LAYOUTS } from '../fixtures/chatgpt.mjs';

const CHAT = CHATS.find((c) => !c.project); // a plain conversation: the layouts do not depend on the scope
const WAKES = { conversationId: CONVERSATION, marker: /^wake:/ };

const CASES = [
  ...LAYOUTS.flatMap((layout) => CSP_VARIANTS.map((csp) => ({ name: `${layout}, CSP ${csp}`, options: { layout, csp }, draft: true }))),
  ...LAYOUTS.flatMap((layout) => [
    { name: `${layout}, one flipping submit button`, options: { layout, submit: 'flip' } },
    { name: `${layout}, turns wrapped in extra sections`, options: { layout, wrap: true } },
    { name: `${layout}, Chinese labels`, options: { layout, lang: 'zh' } },
    { name: `${layout}, an open edit box on an earlier message`, options: { layout, editOpen: true } },
  ]),
];

test.describe('continuity loop on every ChatGPT layout', () => {
  test.use({ sandboxOptions: { autostart: false } });

  for (const { name, options, draft } of CASES) {
    test(`${name}: bind, Auto, settle → exactly one wake${draft ? ', a draft holds the next' : ''}, reload keeps the binding`, async ({ sandbox }) => {
      const { context, worker, fixture } = await continuityWorld(sandbox, options);
      const { ui } = fixture;
      const { page, hud } = await openAndBind(context, worker, CHAT);
      await turnAutoOn(context, hud, CHAT);
      const sessionRef = await hud.sessionRef();
      const editBox = page.locator('.edit-box textarea, .edit-box [contenteditable="true"]');
      const editText = options.editOpen ? await editBox.evaluate((el) => el.value ?? el.textContent) : null;

      // A read-aloud "Stop" on a finished message is not generation: it must not hold the wake.
      await page.locator(ui.readAloud).last().click();
      await expect(page.locator(`button[aria-label="${ui.labels.stopReading}"]`).last()).toBeVisible();

      const first = await agentCycle(sandbox, hud, sessionRef, 'Refactor the API client');
      const wake = await expectExactlyOne(fixture, WAKES, {
        message: 'the settle wakes the chat exactly once (A3, P8, M7)',
        checkpoint: () => expectIdleAfterWakes(page, fixture, hud, 1),
      });
      expect(wake.text, 'the wake carries the finished task (I2)').toContain(first.task_id);
      await expect(page.locator(ui.userTurn).last(), 'the wake is the newest user message on the page').toContainText('[herdr-continuity wake:w1#');
      await expect(page.locator(ui.composer), 'nothing the extension typed is left in the composer').toHaveText('');
      if (options.editOpen) {
        await expect(editBox, 'the open edit box is not the composer: untouched').toBeVisible();
        expect(await editBox.evaluate((el) => el.value ?? el.textContent)).toBe(editText);
      }

      if (draft) {
        // A human draft holds the next wake; the HUD names the reason; the draft is untouched.
        await page.locator(ui.composer).click();
        await page.keyboard.type('half-written thought about the schema');
        const second = await agentCycle(sandbox, hud, sessionRef, 'Migrate the schema');
        await hud.expect('data-withheld', 'human_draft', 'HUD: held back because of the draft (M7)');
        await expect(page.locator(ui.composer), 'the draft is untouched').toHaveText('half-written thought about the schema');
        expect(countMessages(fixture, WAKES), 'nothing more was sent while the draft is there').toBe(1);
        expect(fixture.server, 'the draft itself was never sent').toHaveLength(1);

        // The human clears the draft: the held wake goes out, once, without the draft.
        await page.locator(ui.composer).click();
        await page.keyboard.press('Control+A');
        await page.keyboard.press('Delete');
        const held = await expectExactlyOne(fixture, WAKES, {
          previous: 1,
          message: 'the held wake goes out once the draft is gone',
          checkpoint: () => expectIdleAfterWakes(page, fixture, hud, 2),
        });
        expect(held.text).toContain(second.task_id);
        expect(held.text).not.toContain('half-written');
      }

      // A reload keeps the binding and Auto, shows the thread from the backend, sends nothing.
      const wakes = draft ? 2 : 1;
      await page.reload();
      await hud.expect('data-binding', WORKSPACE.id, 'binding survives a reload (B7)');
      await hud.expect('data-auto', 'on');
      await hud.expect('data-wake-count', String(wakes));
      await expect(page.locator(ui.userTurn).last()).toContainText('[herdr-continuity wake:w1#');
      await expect(page.locator(ui.composer)).toHaveText('');
      await hud.expect('data-withheld', '');
      expect(countMessages(fixture, WAKES), 'the reload sent nothing').toBe(wakes);
      expect(fixture.server, 'only the wakes reached the backend').toHaveLength(wakes);
    });
  }
});
