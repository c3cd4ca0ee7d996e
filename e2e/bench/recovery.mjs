// Stuck-page recovery bench (issue 10, acceptance 3): how many conversation snapshot
// requests (and auth-session requests) a *healthy* bound ChatGPT tab with Auto on makes
// while it streams, per hour. The snapshot probe is rationed to pages that look stuck, so
// the expected figure is 0; anything above it is a probe of a healthy page.
//
// Real Chromium with the built extension, the companion and the Herdr stand-in; the ChatGPT
// fixture streams each reply for BENCH_RECOVERY_STREAM_MS (default 8 000 ms) and the bench
// sends the next message as soon as a reply has finished, for BENCH_RECOVERY_S seconds
// (default 120). The fixture's server counts the requests. Run alone:
// BENCH_ONLY=recovery node e2e/bench.mjs (after the build).
import { CHATS, continuityWorld, openAndBind, turnAutoOn } from '../lib/continuity.mjs';

const WINDOW_S = Number(process.env.BENCH_RECOVERY_S ?? 120);
const STREAM_MS = Number(process.env.BENCH_RECOVERY_STREAM_MS ?? 8_000);
const REPLY = 'Step one of the migration is done. '.repeat(12).trim();
const PLAIN_CHAT = CHATS.find((chat) => !chat.project);

async function sendAndFinish(page, fixture, text, finishedBefore) {
  await page.locator(fixture.ui.composer).click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  const finished = page.locator(fixture.ui.finished);
  await finished.nth(finishedBefore).waitFor({ timeout: STREAM_MS + 30_000 });
  return finishedBefore + 1;
}

export async function recoveryBench({ Sandbox, table }) {
  const sandbox = new Sandbox({ autostart: false });
  try {
    const { context, worker, fixture } = await continuityWorld(sandbox, { streamMs: STREAM_MS, replyWith: () => REPLY });
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await turnAutoOn(context, hud, PLAIN_CHAT);
    let finished = await page.locator(fixture.ui.finished).count();
    const before = { ...fixture.counts };
    const started = Date.now();
    let replies = 0;
    let streamingMs = 0;
    while (Date.now() - started < WINDOW_S * 1000) {
      const t0 = Date.now();
      finished = await sendAndFinish(page, fixture, `Continue with step ${replies + 2}`, finished);
      streamingMs += Date.now() - t0;
      replies += 1;
    }
    const elapsedH = (Date.now() - started) / 3_600_000;
    const snapshots = fixture.counts.snapshotRequests - before.snapshotRequests;
    const sessions = fixture.counts.sessionRequests - before.sessionRequests;
    const state = await hud.state.getAttribute('data-recovery-state');
    table(`recovery on a healthy streaming tab (${WINDOW_S} s, replies of ${STREAM_MS} ms, Auto on)`, ['measure', 'value'], [
      ['replies streamed', replies],
      ['time in a turn (sent → reply finished)', `${Math.round((100 * streamingMs) / (Date.now() - started))} %`],
      ['snapshot requests', snapshots],
      ['snapshot requests per hour', Math.round(snapshots / elapsedH)],
      ['auth-session requests per hour', Math.round(sessions / elapsedH)],
      ['page reloads / Retry clicks', `${fixture.counts.pageLoads - before.pageLoads} / ${fixture.counts.retryClicks - before.retryClicks}`],
      ['HUD recovery state at the end', state],
    ]);
    console.log(`snapshot requests per hour on a healthy streaming tab: ${Math.round(snapshots / elapsedH)}, expected 0: ${snapshots === 0 ? 'PASS' : 'OVER'}`);
  } finally {
    await sandbox.dispose();
  }
}
