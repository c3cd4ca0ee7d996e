// Issue 26 Found 4, the user's Stop (CONTRACT26 §2), in real Chromium with the built
// extension, the real companion, the ChatGPT fixture (both CSP variants) and the judge's
// decision stand-in, which calls every reply unfinished (p = 0.92: the judge would continue
// it):
// - semantic Auto on, the user presses the page's Stop on a reply whose visible part
//   already says "Next I will run the whole integration suite…": the judge is not asked,
//   nothing is typed, the HUD says the user stopped it;
// - the human writes again and the same words end on their own: continued exactly once
//   (the options' bound is 1, so the reply to the continue is not continued again).
//
// - on every site profile (the recorded streaming DOM of each ChatGPT generation, z.ai and
//   DeepSeek, the real content scripts, the test playing the worker): a trusted press on the
//   Stop the profile resolves sends `user_stop`, and the `turn_ended` of the reply it ended
//   says `user_stopped: true` (the Stop pinned to its turn, whatever the worker heard of
//   `user_stop`); a reply that ends without a press says `false`.
//
// "Never" and "once" are counted at the fixture's backend and at the decision stand-in
// after the second reply's checkpoint (the HUD says Auto reached its bound), never after a
// sleep: a continue of the stopped reply would have been typed before the human's second
// message ended, and the judge would have been asked twice.
import { closeContexts, test, expect } from '../lib/test.mjs';
import { lastPosted, runAdapter, siteProfiles, snippetContext, SNIPPET_ORIGIN } from '../lib/adapter-harness.mjs';
import { CHATS, CONVERSATION, continuityWorld, openAndBind, turnAutoOn } from '../lib/continuity.mjs';
import { hudRoot } from '../lib/hud.mjs';
import { backendMessages, expectExactlyOne } from '../lib/backend.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';
import { withProviderStandins, writeJudgeConfig } from '../lib/provider-standins.mjs';
import { CSP_VARIANTS } from '../fixtures/chatgpt.mjs';

const CHAT = CHATS.find((c) => !c.project);
const JUDGE_CONTINUES = { conversationId: CONVERSATION, marker: /^judge:/ };
const ANNOUNCED = 'Next I will run the whole integration suite';
/** The announcement first, then enough words that a Stop half-way leaves it visible. */
const REPLY = `The parser is fixed and its unit tests pass. ${ANNOUNCED} and report every failure. ` +
  Array.from({ length: 40 }, (_, i) => `Change ${i + 1} touches the tokenizer and its fixtures.`).join(' ');
const KEY = 'sk-e2e-decision-stop-1';

const judgeLine = (page) => hudRoot(page).locator('p[data-line="judge"]');

/** Sets the options page's judge use and bound (O4). */
async function setJudgeOptions(context, { mode, max }) {
  const options = await context.newPage();
  await options.goto(`${EXTENSION_ORIGIN}options.html`);
  const select = options.locator('select#judgeMode');
  await expect(select).toBeVisible({ timeout: 15_000 });
  const note = options.locator('p.judge-note');
  await select.selectOption(mode);
  await expect(note, 'the judge use is saved').toHaveText(/Saved/, { timeout: 10_000 });
  await note.evaluate((el) => { el.textContent = ''; });
  const input = options.locator('input#maxContinues');
  await input.fill(String(max));
  await input.press('Tab');
  await expect(note, 'the bound is saved').toHaveText(/Saved/, { timeout: 10_000 });
  await options.close();
}

async function send(page, fixture, text) {
  await page.locator(fixture.ui.composer).click();
  await page.keyboard.insertText(text);
  await page.keyboard.press('Enter');
}

for (const csp of CSP_VARIANTS) {
  test.describe(`the user's Stop (issue 26, CSP ${csp})`, () => {
    test('a stopped reply that announces a next step is never continued; the same words ending on their own are continued once', async ({ sandbox }) => {
      await withProviderStandins(async (standins) => {
        standins.decision.answer(0.92);
        writeJudgeConfig(sandbox.home, { routes: [standins.decision.route('jev', { apiKey: KEY })] });
        const { context, worker, fixture } = await continuityWorld(sandbox, { csp });
        fixture.replyWith = (text) => (text.includes('[herdr-continuity judge:') ? 'The suite passed; all 212 tests are green and nothing is left to do.' : REPLY);
        const { page, hud } = await openAndBind(context, worker, CHAT);
        await turnAutoOn(context, hud, CHAT);
        await setJudgeOptions(context, { mode: 'in_auto', max: 1 });

        // The reply streams slowly; the user reads the announcement and presses Stop.
        fixture.streamMs = 8_000;
        await send(page, fixture, 'Fix the parser.');
        const stop = page.locator(fixture.ui.stop);
        await expect(stop, 'the reply streams').toBeVisible({ timeout: 10_000 });
        await expect(page.locator(fixture.ui.assistantTurn).last(), 'the visible part announces the next step').toContainText(ANNOUNCED, { timeout: 10_000 });
        await stop.click();
        await expect(stop, 'the Stop ended the reply').toHaveCount(0, { timeout: 10_000 });
        await expect(judgeLine(page), 'the HUD says the user stopped it').toContainText('You stopped this reply', { timeout: 15_000 });
        expect(await page.locator(fixture.ui.assistantTurn).last().textContent(), 'the reply was cut by the Stop').not.toContain('Change 40 ');

        // The human writes again; the same words end on their own.
        fixture.streamMs = 300;
        await send(page, fixture, 'Go on with the suite, please.');
        const continued = await expectExactlyOne(fixture, JUDGE_CONTINUES, {
          timeout: 40_000,
          message: 'one continue, of the reply that ended on its own',
          // The reply to the continue ended and was held to the bound: nothing more follows.
          checkpoint: () => expect(judgeLine(page)).toContainText('Auto stopped continuing', { timeout: 30_000 }),
        });
        expect(continued.text).toContain('The turn-end judge (jev) decided to continue');
        expect(backendMessages(fixture, JUDGE_CONTINUES).length, 'the stopped reply was never continued').toBe(1);
        expect(standins.decision.count, 'the judge was asked about the reply that ended on its own only').toBe(1);
      });
    });
  });
}

// The streaming snippet of each site profile (generation), the profile, and its Stop.
const STREAMING = [
  ['chatgpt-classic-streaming.html', 'chatgpt', 'button[data-testid="stop-button"]'],
  ['chatgpt-section-streaming.html', 'chatgpt', 'button[data-testid="stop-button"]'],
  ['chatgpt-thread-streaming.html', 'chatgpt', 'form button[aria-label="Stop"]'],
  ['zai-streaming.html', 'zai', 'form button[aria-label="停止"]'],
  ['deepseek-streaming.html', 'deepseek', '.composer .ds-button--circle'],
];

/** What a site does when its reply ends (after a Stop, or on its own): the Stop control and
 * the streaming cues go, the last reply gets its finished cues (copy action, message id). */
function endReply(stopSelector) {
  document.querySelector(stopSelector)?.remove();
  for (const el of document.querySelectorAll('.result-streaming')) el.classList.remove('result-streaming');
  for (const el of document.querySelectorAll('[aria-busy]')) el.removeAttribute('aria-busy');
  for (const el of document.querySelectorAll('.status-description, .ds-loading')) el.replaceWith('Stopped here.');
  const replies = document.querySelectorAll('[data-message-author-role="assistant"], [data-chatgpt-search-unit-key$=":assistant"], .chat-assistant, .ds-markdown');
  const last = replies[replies.length - 1];
  if (last) {
    last.insertAdjacentHTML('beforeend', '<span data-chatgpt-selection-message-id="ended-1">.</span>'
      + '<button data-testid="copy-turn-action-button" aria-label="Copy">⧉</button>');
  }
}

test.describe('the page pins the user\'s Stop to its turn (turn_ended.user_stopped), every site profile', () => {
  const profiles = siteProfiles();
  const context = snippetContext(test, closeContexts);

  for (const [file, site, stop] of STREAMING) {
    test(`${file}: a trusted Stop, then the reply ends: user_stopped true; a reply ending on its own: false`, async () => {
      for (const pressed of [true, false]) {
        const page = await context().newPage();
        await page.goto(`${SNIPPET_ORIGIN}/${file}`);
        // A site's Stop never submits its form (a snippet's button would navigate away).
        await page.evaluate(() => document.addEventListener('submit', (event) => event.preventDefault(), true));
        await runAdapter(page, profiles[site]);
        await expect.poll(async () => (await lastPosted(page, 'page_facts'))?.generating, { message: 'the reply streams' }).toBe(true);
        if (pressed) {
          await page.click(stop);
          await expect.poll(() => lastPosted(page, 'user_stop'), { message: 'the Stop is reported' }).not.toBeNull();
        }
        await page.evaluate(endReply, stop);
        await expect.poll(() => lastPosted(page, 'turn_ended'), { message: 'the reply ended' }).not.toBeNull();
        const ended = await lastPosted(page, 'turn_ended');
        expect(ended.user_stopped, `${file}, Stop pressed: ${pressed}`).toBe(pressed);
        await page.close();
      }
    });
  }
});
