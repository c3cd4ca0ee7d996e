// Issue 10 and 23, permission cards (SPEC M5, M6): ChatGPT's tool-approval cards in real Chromium
// with the extension, the companion and the Herdr stand-in, under both CSP variants. The
// fixture shows a card in the assistant's turn while a tool call waits (SITES-2026 §1.7:
// "Allow ChatGPT to use <connector>?", Deny, Allow, a chevron menu) and counts every click
// per button and per card: that count is the verdict.
//
// No fixed waits: a click is awaited on the fixture's counter; "no click" is asserted once
// the HUD shows the worker's decision about that card (`data-card-state`, `-code`), which
// is made in the same step an acceptance would have been.
import { test, expect } from '../lib/test.mjs';
import { CHATS, continuityWorld, openAndBind, persistedContinuity, relaunchBrowser, tabIdOf, ContinuityHud } from '../lib/continuity.mjs';
import { HudProbe } from '../lib/hud.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';
import { CSP_VARIANTS, LAYOUTS } from '../fixtures/chatgpt.mjs';

const PLAIN_CHAT = CHATS[1];
const REPLY = 'The tool ran: two panes are idle and the build is green.';

/** A bound plain chat, Auto left off (M1's default), the fixture replying with REPLY. */
async function cardWorld(sandbox, options) {
  const world = await continuityWorld(sandbox, { streamMs: 300, replyWith: () => REPLY, ...options });
  const { page, hud } = await openAndBind(world.context, world.worker, PLAIN_CHAT);
  await hud.expect('data-auto', 'off', 'Auto is off (M5 is the exception to it)');
  return { ...world, page, hud };
}

/** The human sends a message whose reply will wait on a `variant` card; returns the card id. */
async function sendWithCard(page, fixture, variant, text) {
  const before = fixture.cardIds.length;
  fixture.toolCard = variant;
  await page.locator(fixture.ui.composer).click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await expect.poll(() => fixture.cardIds.length, { message: 'the server started a tool call' }).toBe(before + 1);
  const id = fixture.cardIds[before];
  // A Herdr card may be answered by the extension before this line looks at the page: the
  // card was shown if it is there now, or if one of its buttons was clicked (it is clicked
  // only after the page reported it).
  await expect.poll(async () => (await page.locator(`[data-fixture-card="${id}"]`).count()) > 0 || fixture.cardCounts(id).allow > 0,
    { message: 'the page shows the card' }).toBe(true);
  return id;
}

const hudCardLine = (hud) => hud.host.locator('p[data-line="card"]');

/** The side panel of the tab showing `page`, once its Activity timeline is read. */
async function activityPanel(context, worker, page) {
  const tabId = await tabIdOf(worker, page.url());
  const panel = await context.newPage();
  await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html?tab=${tabId}`);
  await expect(panel.locator('[data-panel-tab]')).toHaveAttribute('data-tab-id', String(tabId), { timeout: 15_000 });
  await expect(panel.locator('[data-activity-log]')).toHaveAttribute('data-activity-state', 'ok');
  return panel;
}
const cardRows = (panel, filter = '') => panel.locator(`[data-activity] [data-activity-entry][data-kind="permission_card"]${filter}`);

for (const csp of CSP_VARIANTS) {
  test.describe(`permission cards, CSP ${csp}`, () => {
    test.use({ sandboxOptions: { autostart: false } });
    test.setTimeout(120_000);

    for (const layout of LAYOUTS) {
      test(`a Herdr card with Auto off gets exactly one Allow click, no Deny (${layout}; M5)`, async ({ sandbox }) => {
        const { page, hud, fixture } = await cardWorld(sandbox, { csp, layout });
        const id = await sendWithCard(page, fixture, 'herdr', 'Ask Herdr how the build is going');
        await expect.poll(() => fixture.cardCounts(id).allow, { message: 'the extension clicked Allow' }).toBe(1);
        await expect(page.locator(fixture.ui.finished).last(), 'the tool call went on and the reply finished').toHaveText(REPLY);
        await hud.expect('data-card-state', 'accepted', 'HUD: the card was accepted');
        await expect(hudCardLine(hud), 'HUD names the connector').toContainText('Herdr');
        expect(fixture.cardCounts(id)).toEqual({ allow: 1, deny: 0, always: 0, menu: 0, menu_always: 0 });
        expect(fixture.counts).toMatchObject({ userMessages: 1, cardClicks: 1 });
      });
    }

    test('a bound chat\'s Herdr card: the HUD and the Activity timeline name the tool it allowed (M5, issue 23)', async ({ sandbox }) => {
      const { context, worker, page, hud, fixture } = await cardWorld(sandbox, { csp });
      const id = await sendWithCard(page, fixture, 'herdr', 'Ask Herdr what the agents are doing');
      await expect.poll(() => fixture.cardCounts(id).allow, { message: 'the extension clicked Allow' }).toBe(1);
      await hud.expect('data-card-state', 'accepted');
      await hud.expect('data-card-tool', 'herdr_prompt', 'HUD: the tool the card named');
      await expect(hudCardLine(hud), 'the HUD line names the tool').toContainText('Allowed Herdr tool herdr_prompt');
      const panel = await activityPanel(context, worker, page);
      const accepted = cardRows(panel, '[data-outcome="sent"][data-reason="herdr_card"]');
      await expect(accepted, 'the acceptance is in the timeline').toHaveCount(1, { timeout: 15_000 });
      await expect(accepted).toHaveAttribute('data-tool', 'herdr_prompt');
      await expect(accepted, 'the timeline names the tool').toContainText('herdr_prompt');
      await expect(cardRows(panel, '[data-outcome="confirmed"][data-reason="allow_clicked"]')).toHaveAttribute('data-tool', 'herdr_prompt', { timeout: 15_000 });
    });

    test('an unbound chat\'s Herdr card is never clicked, and the HUD says why (M5, issue 23)', async ({ sandbox }) => {
      const { context, fixture } = await continuityWorld(sandbox, { csp, streamMs: 300, replyWith: () => REPLY });
      const page = await context.newPage();
      await page.goto(PLAIN_CHAT.url);
      await new HudProbe(page).expectCompanionConnected();
      const hud = new ContinuityHud(page);
      await hud.expect('data-binding', '', 'the chat is not bound');
      const id = await sendWithCard(page, fixture, 'herdr', 'Ask Herdr how the build is going');
      await hud.expect('data-card-state', 'refused', 'HUD: the card is left to the user');
      await hud.expect('data-card-code', 'not_bound', 'HUD: because the chat is not bound');
      await hud.expand();
      await expect(hudCardLine(hud), 'the HUD line says why').toContainText('not bound');
      expect(fixture.cardCounts(id), 'no click on an unbound chat\'s card').toEqual({ allow: 0, deny: 0, always: 0, menu: 0, menu_always: 0 });
      expect(fixture.counts.cardAllowClicks, 'not one Allow clicked').toBe(0);
      // The human answers it; the reply goes on.
      await page.locator(`[data-fixture-card="${id}"]`).getByRole('button', { name: 'Allow', exact: true }).click();
      await expect(page.locator(fixture.ui.finished).last()).toHaveText(REPLY);
      expect(fixture.cardCounts(id)).toMatchObject({ allow: 1, deny: 0 });
    });

    test('another connector\'s card is never clicked, and the HUD says why (M5)', async ({ sandbox }) => {
      const { page, hud, fixture } = await cardWorld(sandbox, { csp });
      const id = await sendWithCard(page, fixture, 'other', 'Search my mail for the invoice');
      await hud.expect('data-card-state', 'refused', 'HUD: the card is left to the user');
      await hud.expect('data-card-code', 'other_connector');
      await expect(hudCardLine(hud), 'HUD names the other connector').toContainText('Gmail');
      expect(fixture.cardCounts(id), 'no click on the Gmail card').toEqual({ allow: 0, deny: 0, always: 0, menu: 0, menu_always: 0 });
      // The human answers it; the reply goes on.
      await page.locator(`[data-fixture-card="${id}"]`).getByRole('button', { name: 'Deny', exact: true }).click();
      await expect(page.locator(fixture.ui.finished).last()).toBeVisible();
      expect(fixture.cardCounts(id)).toMatchObject({ allow: 0, deny: 1 });
    });

    test('ambiguous cards get zero clicks: no connector named, Always allow only, no Deny, a disabled or a hidden Allow (M5)', async ({ sandbox }) => {
      const { page, hud, fixture } = await cardWorld(sandbox, { csp });
      const cases = [
        ['ambiguous_wording', 'no_permission_wording'],
        ['ambiguous_always', 'no_single_allow'],
        ['ambiguous_no_deny', 'no_deny'],
        ['ambiguous_disabled', 'allow_not_usable'],
        ['ambiguous_hidden', 'allow_not_usable'],
      ];
      for (const [n, [variant, code]] of cases.entries()) {
        const id = await sendWithCard(page, fixture, variant, `Run step ${n + 1}`);
        await hud.expect('data-card-code', code, `HUD: why the ${variant} card is left alone`);
        await hud.expect('data-card-state', 'refused');
        expect(fixture.cardCounts(id), `no click on the ${variant} card`).toEqual({ allow: 0, deny: 0, always: 0, menu: 0, menu_always: 0 });
        // The human answers it (Deny, or the menu's Always allow where there is no Deny).
        const card = page.locator(`[data-fixture-card="${id}"]`);
        if (variant === 'ambiguous_no_deny') {
          await card.getByRole('button', { name: 'Allow options' }).click();
          await page.getByRole('menuitem').click();
        } else {
          await card.getByRole('button', { name: 'Deny', exact: true }).click();
        }
        await expect(page.locator(fixture.ui.finished), 'the reply ended').toHaveCount(n + 2);
      }
      expect(fixture.counts.cardAllowClicks, 'not one Allow clicked by anyone').toBe(0);
    });

    test('a worker restart after the accept does not click again (M5)', async ({ sandbox }) => {
      const { page, fixture, worker } = await cardWorld(sandbox, { csp });
      // The click is counted but resolves nothing: the card is still there after the restart.
      fixture.holdCardAnswers = true;
      const id = await sendWithCard(page, fixture, 'herdr', 'Ask Herdr for the pane list');
      await expect.poll(() => fixture.cardCounts(id).allow, { message: 'the extension clicked Allow' }).toBe(1);
      const persisted = await persistedContinuity(worker);
      expect(persisted?.cards?.accepted?.length, 'the accepted key was persisted').toBe(1);

      const { context, worker: again } = await relaunchBrowser(sandbox, fixture);
      const reopened = await context.newPage();
      await reopened.goto(PLAIN_CHAT.url);
      await new HudProbe(reopened).expectCompanionConnected();
      await expect(reopened.locator(`[data-fixture-card="${id}"]`), 'the card is shown again').toBeVisible();
      const hud = new ContinuityHud(reopened);
      await hud.expect('data-cards-sent', /^[1-9]/, 'the page told the new worker about the card');
      await hud.expect('data-card-state', 'accepted_before', 'HUD: accepted before the restart, not clicked again');
      await expect(hudCardLine(hud)).toContainText('Herdr');
      // A storage read of the new worker: any card_allow waits on the snapshot write before it.
      expect((await persistedContinuity(again))?.cards?.accepted?.length).toBe(1);
      await reopened.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)));
      expect(fixture.cardCounts(id), 'still exactly one click').toEqual({ allow: 1, deny: 0, always: 0, menu: 0, menu_always: 0 });
    });
  });
}
