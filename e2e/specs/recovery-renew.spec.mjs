// Issue 26, Found 1: recovery budgets per incident (SPEC S7, H6), in real Chromium with the
// extension, the companion and the Herdr stand-in, under both CSP variants. A stale view is
// reloaded; after a healthy human turn (its reply streams and finishes on the reloaded page)
// and past the reload cooldown, a second stale view is reloaded again — with the page
// reload, the first level, because the healthy turn ended the incident and renewed its
// budgets. (Before, budgets were spent once per conversation: the second stale view got the
// tab reload and a third nothing.) What the fixture's server counted is the verdict: user
// messages (never a duplicate user turn), page loads, Retry clicks.
//
// Timing is ext-core's (assistant stall 30 s, one probe per 15 s, reload cooldown 60 s), and
// it passes on the worker's test clock (e2e/lib/clock.mjs). Each wait for those timers keeps
// the deadline that covers them, in the worker's time: the clock moves ahead for all of it
// but its last PAGE_MS (stopping once the fixture's counters show the outcome), which pass
// in real time while the fixture's counters or the HUD's recovery hooks
// (`data-recovery-state`, `-reason`, `-reloads-left`) are polled. The one fixed wait, the
// reload cooldown before the second fault, moves the clock the whole way.
import { test, expect } from '../lib/test.mjs';
import { CHATS, humanSends, stuckChatWorld } from '../lib/continuity.mjs';
import { CSP_VARIANTS } from '../fixtures/chatgpt.mjs';
import { runClock } from '../lib/clock.mjs';

const PLAIN_CHAT = CHATS[1];
const PATH = new URL(PLAIN_CHAT.url).pathname;
const REPLY = 'The migration ran against staging, the counts match, and the rollback script is ready for review tomorrow.';
const STALL_MS = 30_000; // ext-core recovery::ASSISTANT_STALL_MS
const TICK_MS = 5_000; // ext-core continuity::RECOVERY_TICK_MS
const COOLDOWN_MS = 60_000; // ext-core recovery::RELOAD_COOLDOWN_MS
const AFTER_STALL = STALL_MS + TICK_MS + 10_000;
// A deadline's last part, in real time: what follows a worker timer on the page (a probe's
// fetch, a reload).
const PAGE_MS = 10_000;

for (const csp of CSP_VARIANTS) {
  test.describe(`recovery budgets per incident, CSP ${csp}`, () => {
    test.use({ sandboxOptions: { autostart: false } });
    test.setTimeout(300_000);

    test('a stale view is reloaded; after a healthy human turn and past the cooldown a second stale view is reloaded again (S7)', async ({ sandbox }) => {
      const { page, hud, fixture, worker } = await stuckChatWorld(sandbox, { csp, replyWith: () => REPLY });
      expect(PLAIN_CHAT.project, 'a plain chat').toBeFalsy();

      // Incident 1: the page froze mid-reply while the server finished it.
      fixture.fault = 'server_ahead';
      await humanSends(page, fixture, 'Run the migration on staging');
      await runClock(worker, AFTER_STALL - PAGE_MS, () => fixture.loadsOf(PATH) >= 2);
      await expect.poll(() => fixture.loadsOf(PATH), { timeout: PAGE_MS, message: 'the extension reloaded the page' }).toBe(2);
      const firstReloadAt = Date.now();
      await expect(page.locator(fixture.ui.finished).last(), 'the reload shows the whole reply').toHaveText(REPLY);
      await hud.expect('data-recovery-reason', 'reload_page', 'HUD: the first incident used the page reload');
      await hud.expect('data-recovery-reloads-left', '1', 'HUD: the tab reload is left for this incident');

      // A healthy human turn on the reloaded page: the incident is over, its budgets renew.
      const finished = await page.locator(fixture.ui.finished).count();
      await humanSends(page, fixture, 'Now compare the row counts');
      await expect.poll(() => fixture.counts.userMessages, { message: 'the server got the second message' }).toBe(2);
      await expect(page.locator(fixture.ui.finished), 'the healthy reply finished').toHaveCount(finished + 1);
      await hud.expect('data-recovery-reloads-left', '2', 'HUD: the healthy turn renewed the budgets (page and tab reload)');

      // Incident 2, past the reload cooldown (counted on the worker's clock, in real time
      // since the first reload): the same fault again.
      await runClock(worker, Math.max(0, firstReloadAt + COOLDOWN_MS - Date.now()));
      fixture.fault = 'server_ahead';
      await humanSends(page, fixture, 'Run the migration on production');
      await expect.poll(() => fixture.counts.userMessages, { message: 'the server got the third message' }).toBe(3);
      await runClock(worker, AFTER_STALL + 15_000 - PAGE_MS, () => fixture.loadsOf(PATH) >= 3);
      await expect.poll(() => fixture.loadsOf(PATH), { timeout: PAGE_MS, message: 'the extension reloaded the page again' }).toBe(3);
      await expect(page.locator(fixture.ui.finished).last(), 'the second reload shows the whole reply').toHaveText(REPLY);
      await hud.expect('data-recovery-reason', 'reload_page', 'HUD: the second incident starts at the page reload again, not the tab reload');
      await hud.expect('data-recovery-reloads-left', '1');
      expect(fixture.counts, 'no duplicate user turn, no Retry').toMatchObject({ userMessages: 3, retryClicks: 0 });
    });
  });
}
