// The worker's test clock (ARCHITECTURE.md "Test seams"): `herdrTestClock(ms)` on the
// extension worker's global moves the continuity machine's clock ahead and runs what fell
// due, so a spec skips the core's stall, pace and back-off timers instead of sleeping
// through them. Only the worker's own timers move: the page's (content.js's health samples,
// its probe timeout, the fixture's streams) and the companion link's keep real time. So the
// clock moves in steps of one recovery tick, with real time between steps for the page to
// answer what fell due, and never while a spec waits on a page timer.

/** One recovery tick (ext-core continuity::RECOVERY_TICK_MS): the step the clock moves by. */
export const CLOCK_STEP_MS = 5_000;
/** Real time between two steps: what fell due reaches the page and its answer comes back. */
const SETTLE_MS = 750;

/** Moves the worker's continuity clock `ms` ahead at once; resolves to the total offset. */
export function advanceClock(worker, ms) {
  return worker.evaluate((ms) => globalThis.herdrTestClock(ms), ms);
}

/**
 * Lets `ms` of the worker's time pass — a wait of the product's own timers — moving its
 * clock ahead in steps, each followed by a short real settle, and stopping early once
 * `until()` holds. Real time counts too: the worker's clock runs on while it waits. Each
 * step is sized in the worker, against its own clock, so no step carries the worker's time
 * past `ms` from the start (a round trip's latency cannot push it over); at the end the
 * worker's clock stands exactly `ms` ahead of where it was, and runs on at real speed.
 * Resolves to how far it moved the clock (the offset it added). The caller still asserts
 * the outcome, within the rest of its deadline.
 */
export async function runClock(worker, ms, until = null) {
  // The worker's continuity time at which the wait ends: its Date.now() plus its offset.
  const end = await worker.evaluate(async (ms) => Date.now() + (await globalThis.herdrTestClock(0)) + ms, ms);
  let moved = 0;
  for (;;) {
    if (until && (await until())) return moved;
    const { step, left } = await worker.evaluate(async ({ end, most }) => {
      const left = end - Date.now() - (await globalThis.herdrTestClock(0));
      const step = Math.max(0, Math.min(most, left));
      if (step > 0) await globalThis.herdrTestClock(step);
      return { step, left: left - step };
    }, { end, most: CLOCK_STEP_MS });
    if (step <= 0) return moved;
    moved += step;
    await new Promise((resolve) => setTimeout(resolve, Math.min(SETTLE_MS, Math.max(0, left))));
  }
}
