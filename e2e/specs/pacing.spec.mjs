// Issue 26 Found 3: one request pacer per ChatGPT account, in real Chromium with the
// extension, the companion and the Herdr stand-in, under both CSP variants. During a 429
// cooldown nothing is typed and no backend request of ours goes out; the HUD says until when.
//
// Timing is ext-core's (assistant stall 30 s, one backend read per 45 s per account, a
// 429's cooldown its `Retry-After`, else 30 s), and it passes on the worker's test clock
// (e2e/lib/clock.mjs). Each wait for those timers keeps the deadline that covers them, in
// the worker's time: the clock moves ahead for all of it but its last PAGE_MS (stopping
// once the outcome shows), which pass in real time while the fixture's counters or the
// HUD's hooks (`data-cooldown-until`, `data-recovery-*`) are polled — what follows a worker
// timer on the page runs in real time. The fixed waits that show nothing goes out move the
// clock the whole way, then check the worker's side (the HUD's hooks) and the fixture's.
import { test, expect } from '../lib/test.mjs';
import {
  CHATS, CONVERSATION, WORKSPACE, continuityWorld, dispatchTask, humanSends, openAndBind, reportAgent, stuckChatWorld, turnAutoOn,
} from '../lib/continuity.mjs';
import { BACKEND_ME, CSP_VARIANTS } from '../fixtures/chatgpt.mjs';
import { advanceClock, runClock } from '../lib/clock.mjs';

const REPLY = 'The index is rebuilt and the search tests pass against the staging data.';
const STALL_MS = 30_000; // ext-core recovery::ASSISTANT_STALL_MS
const TICK_MS = 5_000; // ext-core continuity::RECOVERY_TICK_MS
const PACE_MS = 45_000; // ext-core request_pacer::PACE_MS
const AFTER_STALL = STALL_MS + TICK_MS + 10_000;
const RETRY_AFTER_S = 600;
// A deadline's last part, in real time: what follows a worker timer on the page (a probe's
// fetch, a typed wake).
const PAGE_MS = 10_000;
const PATH = new URL(CHATS.find((c) => !c.project).url).pathname;

/** The HUD's cooldown line (inside the closed root), once shown. */
const cooldownLine = (hud) => hud.host.locator('p[data-line="cooldown"]');

for (const csp of CSP_VARIANTS) {
  test.describe(`request pacing per account, CSP ${csp}`, () => {
    test.use({ sandboxOptions: { autostart: false } });
    test.setTimeout(240_000);

    test('a snapshot read answered 429 with Retry-After: no backend request, reload or message until it ends; the HUD says until when', async ({ sandbox }) => {
      const { page, hud, fixture, worker } = await stuckChatWorld(sandbox, { csp, replyWith: () => REPLY });
      fixture.fault = 'server_ahead';
      fixture.snapshotFault = '429';
      // RFC 9110 delay-seconds; some servers send a fraction, which must not read as a date.
      fixture.snapshotRetryAfter = csp === 'strict' ? `${RETRY_AFTER_S}.5` : RETRY_AFTER_S;
      await humanSends(page, fixture, 'Rebuild the search index');
      await runClock(worker, AFTER_STALL - PAGE_MS, () => fixture.counts.snapshotRequests >= 1);
      await expect.poll(() => fixture.counts.snapshotRequests, { timeout: PAGE_MS, message: 'the first probe reached the server' }).toBe(1);
      const answeredAt = Date.now();
      // The HUD: the account's cooldown, until Retry-After from now, in local HH:MM.
      await expect.poll(async () => Number(await hud.state.getAttribute('data-cooldown-until')), { message: 'HUD: cooldown_until' })
        .toBeGreaterThan(answeredAt + (RETRY_AFTER_S - 30) * 1000);
      await expect(cooldownLine(hud)).toHaveAttribute('data-key', 'hudCooldownUntil');
      await expect(cooldownLine(hud)).toContainText(/\d{1,2}:\d{2}/);
      const before = { ...fixture.counts, session: fixture.counts.sessionRequests };
      const probes = await hud.state.getAttribute('data-recovery-probes');
      // Longer than two pacing intervals: without the cooldown a probe would have gone.
      await runClock(worker, 2 * PACE_MS + TICK_MS);
      // The worker's side first (a probe is counted when asked), then what the page did.
      await hud.expect('data-recovery-probes', probes, 'HUD: no probe asked during the cooldown');
      await hud.expect('data-recovery-state', 'cooling', 'HUD: recovery waits too');
      await page.waitForTimeout(2_000);
      expect(fixture.counts.snapshotRequests, 'no backend read during the cooldown').toBe(before.snapshotRequests);
      expect(fixture.counts.sessionRequests, 'no session read either').toBe(before.session);
      expect(fixture.counts, 'nothing typed, nothing reloaded or retried').toMatchObject({ userMessages: 1, retryClicks: 0 });
      expect(fixture.loadsOf(PATH)).toBe(1);
    });

    test('a 429 of the page\'s own request, seen in Resource Timing, starts the cooldown and the HUD shows it', async ({ sandbox }) => {
      const { page, hud, fixture, worker } = await stuckChatWorld(sandbox, { csp, replyWith: () => REPLY });
      await hud.expect('data-cooldown-until', '', 'HUD: no cooldown yet');
      fixture.rateLimited = true;
      // ChatGPT's own app meets the 429 (a fetch of the page's main world, not ours).
      const status = await page.evaluate((path) => fetch(path).then((r) => r.status), BACKEND_ME);
      expect(status).toBe(429);
      const seenAt = Date.now();
      await expect.poll(async () => Number(await hud.state.getAttribute('data-cooldown-until') || 0), { message: 'HUD: cooldown_until after the Resource Timing 429' })
        .toBeGreaterThan(seenAt);
      await expect(cooldownLine(hud)).toHaveAttribute('data-key', 'hudCooldownUntil');
      // No Retry-After: the first back-off step, 30 s, not the second (60 s, ext-core
      // rate_limit::COOLDOWNS_MS); then the line goes. 45 s of the worker's time in all.
      await runClock(worker, 45_000 - PAGE_MS, async () => (await hud.state.getAttribute('data-cooldown-until')) === '');
      await hud.expect('data-cooldown-until', '', 'HUD: the cooldown ended', PAGE_MS);
      await expect(cooldownLine(hud)).toHaveCount(0);
      expect(fixture.counts).toMatchObject({ snapshotRequests: 0, userMessages: 0 });
    });

    test('a settle during the cooldown: its wake is not typed until the cooldown ends, then once', async ({ sandbox }) => {
      const chat = CHATS.find((c) => c.url.endsWith(CONVERSATION));
      const { context, worker, fixture } = await continuityWorld(sandbox);
      const { page, hud } = await openAndBind(context, worker, chat);
      await turnAutoOn(context, hud, chat);
      const sessionRef = await hud.sessionRef();
      await dispatchTask(sandbox, { sessionRef, text: 'Run the integration suite' });
      await reportAgent(sandbox, WORKSPACE.pane, 'working');
      await hud.expect('data-scope-state', 'working');
      fixture.rateLimited = true;
      expect(await page.evaluate((path) => fetch(path).then((r) => r.status), BACKEND_ME)).toBe(429);
      await expect.poll(async () => Number(await hud.state.getAttribute('data-cooldown-until') || 0), { message: 'HUD: cooldown_until' }).toBeGreaterThan(0);
      const until = Number(await hud.state.getAttribute('data-cooldown-until'));
      await reportAgent(sandbox, WORKSPACE.pane, 'idle');
      await hud.expect('data-withheld', 'rate_limited', 'HUD: the wake waits for the cooldown');
      // Nothing typed while it runs (the fixed wait: until 5 s before its end on the worker's
      // clock, which has run in real time until now). The worker still withholds the wake —
      // its side, which no page latency hides — and the page typed nothing.
      await runClock(worker, Math.max(0, until - Date.now() - 5_000));
      await page.waitForTimeout(1_000);
      await hud.expect('data-withheld', 'rate_limited', 'HUD: the wake is still withheld near the cooldown\'s end');
      expect(fixture.automaticMessages(CONVERSATION), 'nothing typed during the cooldown').toEqual([]);
      // Past its end in one step, then the wake is typed in real time (the clock is no
      // longer moved ahead: it runs at real speed while the delivery is under way).
      await advanceClock(worker, 5_000 + TICK_MS);
      await expect.poll(() => fixture.automaticMessages(CONVERSATION).length, { timeout: 30_000, message: 'the wake goes after the cooldown' }).toBe(1);
      expect(fixture.automaticMessages(CONVERSATION)[0].text, 'the settle\'s wake').toMatch(/\[herdr-continuity wake:w1#/);
    });
  });
}
