// Issue 25 acceptance 1: facts, not generations. ChatGPT's staged rollouts mix the markup of
// two layout generations on one page (fixtures/chatgpt.mjs `composer`: one generation's turn
// wrappers with another's composer, Send and Stop). Every fact the extension needs is there
// once, so the loop works as on the pure generations (layouts.spec.mjs, recovery.spec.mjs):
// bind, Auto, settle → exactly one wake, a reload sends nothing more, a stuck view is
// recovered. A page where one needed fact is missing (a composer no profile knows) or
// ambiguous (two Send buttons) types nothing — the backend records no message — and the HUD
// names the fact, in English and Chinese; once the page is readable again the held wake goes
// out once (nothing lost).
// Real everything: Chromium with the built extension, the native host, the companion
// runtime, the Herdr stand-in; the fixture's backend (in this process) records every user
// message. The human's clicks and keys use the fixture's selectors (`fixture.ui`); the
// extension reads the page with its site profile only.
import { test, expect } from '../lib/test.mjs';
import {
  CHATS, CONVERSATION, WORKSPACE, agentCycle, continuityWorld, expectIdleAfterWakes, humanSends, openAndBind, stuckChatWorld, turnAutoOn,
} from '../lib/continuity.mjs';
import { countMessages, expectExactlyOne } from '../lib/backend.mjs';
import { hudRoot } from '../lib/hud.mjs';
import { CSP_VARIANTS, LANGS } from '../fixtures/chatgpt.mjs';

const CHAT = CHATS.find((c) => !c.project);
const PATH = new URL(CHAT.url).pathname;
const WAKES = { conversationId: CONVERSATION, marker: /^wake:/ };
// The browser's UI language (the HUD's) for each page language.
const UI_LANG = { en: null, zh: 'zh-CN' };

// One generation's turns with another generation's composer and buttons.
const MIXED = [
  { name: 'thread turns with classic\'s single flipping submit button', options: { layout: 'thread', composer: 'classic', submit: 'flip' } },
  { name: 'section turns with the thread composer', options: { layout: 'section', composer: 'thread' } },
];

test.describe('mixed ChatGPT pages: facts, not generations', () => {
  test.use({ sandboxOptions: { autostart: false } });

  for (const { name, options } of MIXED) {
    for (const csp of CSP_VARIANTS) {
      for (const lang of LANGS) {
        test(`${name}, CSP ${csp}, ${lang}: bind, Auto, settle → exactly one wake; a reload sends nothing more`, async ({ sandbox }) => {
          const { context, worker, fixture } = await continuityWorld(sandbox, { ...options, csp, lang, uiLang: UI_LANG[lang] });
          const { ui } = fixture;
          const { page, hud } = await openAndBind(context, worker, CHAT);
          // No generation's detection rule holds: the label says so, and no fact is unresolved.
          await hud.expect('data-layout', 'mixed', 'HUD: the layout label of a mixed page');
          await hud.expect('data-unresolved', '', 'HUD: every needed fact resolves');
          await turnAutoOn(context, hud, CHAT);
          const sessionRef = await hud.sessionRef();

          const first = await agentCycle(sandbox, hud, sessionRef, 'Refactor the API client');
          const wake = await expectExactlyOne(fixture, WAKES, {
            message: 'the settle wakes the mixed page exactly once',
            checkpoint: () => expectIdleAfterWakes(page, fixture, hud, 1),
          });
          expect(wake.text, 'the wake carries the finished task').toContain(first.task_id);
          await expect(page.locator(ui.userTurn).last(), 'the wake is the newest user message on the page').toContainText('[herdr-continuity wake:w1#');
          await expect(page.locator(ui.composer), 'nothing the extension typed is left in the composer').toHaveText('');

          await page.reload();
          await hud.expect('data-binding', WORKSPACE.id, 'the binding survives a reload');
          await hud.expect('data-auto', 'on');
          await hud.expect('data-wake-count', '1');
          await expect(page.locator(ui.userTurn).last()).toContainText('[herdr-continuity wake:w1#');
          await hud.expect('data-withheld', '');
          expect(countMessages(fixture, WAKES), 'the reload sent nothing').toBe(1);
          expect(fixture.server, 'only the wake reached the backend').toHaveLength(1);
        });
      }
    }
  }

  // recovery.spec.mjs's stale view, on a mixed page: the page froze mid-reply while the
  // server finished it; one reload shows the whole reply, no user message is sent twice.
  for (const csp of CSP_VARIANTS) {
    test(`a stuck view on a mixed page (thread turns, classic flipping submit), CSP ${csp}: exactly one reload, no duplicate user message`, async ({ sandbox }) => {
      test.setTimeout(180_000);
      const reply = 'The migration ran against staging, the counts match, and the rollback script is ready.';
      const { page, hud, fixture } = await stuckChatWorld(sandbox, { ...MIXED[0].options, csp, replyWith: () => reply });
      await hud.expect('data-layout', 'mixed');
      fixture.fault = 'server_ahead';
      await humanSends(page, fixture, 'Run the migration on staging');
      await expect(page.locator(fixture.ui.stop), 'the page shows the reply still streaming').toBeVisible();
      await expect.poll(() => fixture.loadsOf(PATH), { timeout: 60_000, message: 'the extension reloaded the page' }).toBe(2);
      await expect(page.locator(fixture.ui.finished).last(), 'the reload shows the whole reply').toHaveText(reply);
      await hud.expect('data-recovery-state', 'acted', 'HUD: recovery acted');
      await hud.expect('data-recovery-reason', 'reload_page');
      expect(fixture.counts).toMatchObject({ userMessages: 1, retryClicks: 0, pageLoads: 2 });
    });
  }

  // One needed fact missing, one ambiguous: nothing typed, the HUD names the fact.
  const UNRESOLVED = [
    // (The page then reports no composer: the wake is withheld as `no_composer`.)
    { factFault: 'no_composer', fact: 'composer', why: 'missing', withheld: 'no_composer', words: { en: 'is missing', zh: '缺失' } },
    { factFault: 'two_sends', fact: 'send', why: 'ambiguous', withheld: 'fact_unresolved', words: { en: 'is ambiguous', zh: '不唯一' } },
  ];
  for (const { factFault, fact, why, withheld, words } of UNRESOLVED) {
    for (const lang of LANGS) {
      test(`a mixed page whose ${fact} is ${why} (${factFault}), ${lang}: nothing typed, the HUD names the fact; readable again, the held wake goes once`, async ({ sandbox }) => {
        const { context, worker, fixture } = await continuityWorld(sandbox, { ...MIXED[0].options, lang, uiLang: UI_LANG[lang] });
        const { page, hud } = await openAndBind(context, worker, CHAT);
        await turnAutoOn(context, hud, CHAT);
        const sessionRef = await hud.sessionRef();

        // The page loses the fact (a new deployment), with the chat bound and Auto on.
        fixture.factFault = factFault;
        await page.reload();
        await hud.expect('data-unresolved', `${fact}:${why}`, 'HUD: the fact that does not resolve');
        await hud.expand();
        const line = hudRoot(page).locator('p[data-line="layout"]');
        await expect(line).toHaveAttribute('data-key', 'hudFactUnresolved');
        await expect(line).toHaveAttribute('data-fact', fact);
        await expect(line, 'the HUD line names the fact in the page\'s language').toContainText(`“${fact}”`);
        await expect(line).toContainText(words[lang]);

        const held = await agentCycle(sandbox, hud, sessionRef, 'Migrate the schema');
        await hud.expect('data-withheld', withheld, 'HUD: the wake is held back for the fact');
        expect(fixture.server, 'the backend recorded no message').toHaveLength(0);
        // (`fixture.ui` is the page's without the fault: any editor in the form.)
        await expect(page.locator('form [contenteditable="true"][role="textbox"]'), 'nothing was typed into the composer').toHaveText('');

        // The page is readable again: the held wake goes out, once.
        fixture.factFault = null;
        await page.reload();
        await hud.expect('data-unresolved', '', 'HUD: every needed fact resolves again');
        const wake = await expectExactlyOne(fixture, WAKES, {
          message: 'the held wake goes out once the page is readable',
          checkpoint: () => expectIdleAfterWakes(page, fixture, hud, 1),
        });
        expect(wake.text).toContain(held.task_id);
        expect(fixture.server).toHaveLength(1);
      });
    }
  }
});
