// Issue 12, automatic rollover (SPEC R2) end to end, in real Chromium with the built
// extension, the real companion over real Native Messaging and its journal, and the ChatGPT
// fixture's Project new-chat flow:
// - a journaled Project conversation whose thread is past the `auto` pressure level does not
//   roll over while Project Auto is off, nor while the user has a draft in the composer, and
//   the HUD names what holds it back;
// - once the draft is gone, the HUD's Handoff transfer starts by itself, once: one new
//   conversation of the Project gets the seed, and the Project's active target moves to it
//   only once the seed is confirmed; the source starts no second one.
//
// Every wait is a poll with a deadline on a HUD hook or the fixture's record.
import { test, expect } from '../lib/test.mjs';
import { askAndWait, CHATS, CONVERSATION, continuityWorld, openAndBind, turnAutoOn } from '../lib/continuity.mjs';
import { MARKER_LINE } from '../fixtures/chatgpt.mjs';

const PROJECT_CHAT = CHATS.find((c) => c.project);

/** The seeds the fixture's server took (first messages of new conversations). */
const seeds = (fixture) => fixture.server.filter((m) => m.conversationId !== CONVERSATION && m.text.includes('HERDR_CONTINUITY_REF'));

test.describe('Automatic rollover (R2)', () => {
  test('a full Project conversation waits for Auto and the user\'s draft, then hands over once by itself', async ({ sandbox }) => {
    test.slow();
    const { context, worker, fixture } = await continuityWorld(sandbox, { replyWith: () => 'Step done.' });
    // About 140k tokens of thread: past the auto level (80k with the reserve).
    const long = 'The refactor touches the router, the pool and the cache. '.repeat(400);
    const turns = [];
    for (let i = 0; i < 24; i++) turns.push({ role: 'user', text: `Step ${i}` }, { role: 'assistant', text: long });
    fixture.conversations.get(CONVERSATION).turns = turns;
    const { page, hud } = await openAndBind(context, worker, PROJECT_CHAT);
    await hud.expect('data-pressure-level', /^(auto|high_risk)$/, 'R1: the thread is past the auto level');
    await hud.expect('data-rollover', 'auto_off', 'R2: Project Auto off holds it back, and the HUD says so');
    await askAndWait(page, fixture, 'Next step, please');
    await hud.expect('data-journal', 'journalRecorded', 'C1: the chain exists');
    // The user starts typing, then turns Auto on: the draft holds the rollover back.
    const composer = page.locator('#prompt-textarea');
    await composer.click();
    await page.keyboard.type('a thought I have not sent');
    await turnAutoOn(context, hud, PROJECT_CHAT);
    await hud.expect('data-rollover', 'human_draft', 'R2: a human draft holds it back');
    await expect(hud.host.locator('p[data-line="rollover"]')).toHaveClass(/withheld/);
    await page.waitForTimeout(3_000);
    expect(seeds(fixture), 'nothing was sent while the draft was there').toHaveLength(0);
    expect(await hud.state.getAttribute('data-handoff-step')).toBe('idle');
    // The draft goes: the transfer starts by itself.
    const opened = context.waitForEvent('page', { timeout: 30_000 });
    await page.bringToFront();
    await composer.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    const target = await opened;
    await expect.poll(() => target.url(), { message: 'the new tab opened a Project page', timeout: 15_000 }).toMatch(/herdr_handoff=|\/c\//);
    if (target.url().includes('herdr_handoff=') && (await target.locator('#prompt-textarea').count()) === 0) {
      await target.waitForTimeout(2_000);
      if ((await target.locator('#prompt-textarea').count()) === 0) await target.goto(target.url());
    }
    await expect.poll(() => seeds(fixture).length, { message: 'the seed reached one new conversation', timeout: 40_000 }).toBe(1);
    const seed = seeds(fixture)[0];
    expect(MARKER_LINE.test(seed.text.split('\n').at(-1))).toBe(true);
    await page.bringToFront();
    await hud.expect('data-active-target', seed.conversationId, 'X6: the target moves once the seed is confirmed', 40_000);
    await hud.expect('data-binding', 'w1', 'B8: the binding stays');
    await hud.expect('data-rollover', 'started', 'the source says it rolled over');
    // The source reports again (a reply, a reload): no second rollover.
    await page.reload();
    await hud.expect('data-rollover', 'started');
    await page.waitForTimeout(3_000);
    expect(seeds(fixture), 'one rollover, one new conversation').toHaveLength(1);
    const urls = await worker.evaluate(async () => (await chrome.tabs.query({})).map((t) => t.url));
    expect(urls.filter((u) => u.includes('herdr_handoff=') || u.includes(`/c/${seed.conversationId}`)), 'one new tab').toHaveLength(1);
  });
});
